import json
from dataclasses import replace

import pytest
from pgm.cli import main
from pgm.experiments import common


def test_bad_scale_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2
    assert "scale" in capsys.readouterr().err


def test_reproduce_end_to_end_at_micro_scale(tmp_path, monkeypatch):
    micro = replace(
        common.SCALES["tiny"],
        seq_len=16,
        plays=1,
        d_model=16,
        steps=3,
        scorer_steps=3,
        digit_steps=3,
        eval_rows=8,
        eval_samples=1,
        n_generate=4,
        sample_steps=(2, 4),
        digit_sample_steps=(2,),
        n_digit_samples=8,
    )
    monkeypatch.setitem(common.SCALES, "tiny", micro)
    assert main(["reproduce", "--device", "cpu", "--out", str(tmp_path)]) == 0
    (run_dir,) = (tmp_path / "pgm").iterdir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    text = metrics["tables"]["text"]
    assert [r["model"] for r in text] == ["MDLM", "PGM", "MDLM", "PGM", "data (validation windows)"]
    assert all(r["gen_ppl"] > 1 for r in text)
    assert len(metrics["tables"]["digits"]) == 5
    for name in ("text_quality_vs_throughput", "digits_quality_vs_throughput", "report"):
        assert any(p.name.startswith(name) for p in run_dir.iterdir())
