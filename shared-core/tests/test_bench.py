import json
import time

import pytest

from shared_core.bench import BenchTable, Measurement, measure, paired_ratio


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_measure_interleaves_and_ratio_sees_a_planted_2x():
    calls = []
    results = measure(
        {
            "fast": lambda: (calls.append("fast"), _spin(0.002)),
            "slow": lambda: (calls.append("slow"), _spin(0.004)),
        },
        repeats=5,
        warmup=1,
        min_time=0.0,
    )
    ratio = paired_ratio(results["fast"], results["slow"])
    assert 1.5 < ratio.median < 2.6
    assert ratio.min <= ratio.median <= ratio.max
    # rotated order: both functions lead some repeats
    timed = calls[-10:]
    assert timed[0::2].count("fast") in (2, 3) and len(set(timed)) == 2


def test_table_markdown_and_json(tmp_path):
    m = {
        "ours": Measurement("ours", (1.0, 1.0, 1.0), (1.0, 1.0, 1.0), 1),
        "peer": Measurement("peer", (2.0, 3.0, 4.0), (2.0, 3.0, 4.0), 1),
    }
    table = BenchTable("demo", candidate="ours")
    row = table.add("n=1", m)
    assert row["speedup"]["peer"] == {"median": 3.0, "min": 2.0, "max": 4.0}
    text = table.markdown()
    assert "| n=1 | 1e+03 | 3e+03 | 3.00x [2.00-4.00] |" in text
    assert "> 1: ours is faster" in text
    data = json.loads(table.write_json(tmp_path / "b.json").read_text())
    assert data["rows"][0]["times_ms"]["peer"] == 3000.0


def test_bad_input():
    with pytest.raises(ValueError, match="fns"):
        measure({})
    with pytest.raises(ValueError, match="repeats"):
        measure({"a": lambda: None}, repeats=0)
    with pytest.raises(ValueError, match="candidate"):
        BenchTable("t", candidate="ours").add("s", {})
    with pytest.raises(ValueError, match="clock"):
        BenchTable("t", candidate="ours", clock="gpu")


def test_train_step_takes_an_optimiser_step():
    import torch

    from shared_core.bench import train_step

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    x = torch.randn(16, 3)
    before = model.weight.detach().clone()
    step = train_step(model, lambda m: (m(x) ** 2).mean(), lr=1e-2)
    losses = []
    for _ in range(5):
        step()
        losses.append(float((model(x) ** 2).mean()))
    assert not torch.equal(before, model.weight) and losses[-1] < losses[0]
