"""`mesa-layer train` / `sample` on a text file (shared_core.textlm through the package CLI)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mesa_layer.cli import main  # noqa: E402

TEXT = "to be or not to be, that is the question. " * 30
TINY = [
    "--set", "model.hidden_size=16", "--set", "model.num_heads=2",
    "--set", "model.intermediate_size=32", "--set", "model.chunk_size=8",
    "--set", "train.steps=3", "--set", "train.batch_size=2", "--set", "train.seq_len=16",
]  # fmt: skip


def test_train_then_sample_and_from_pretrained(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "model"
    assert main(["train", "--data", str(corpus), "--out", str(out), *TINY]) == 0
    assert "3 steps, train loss" in capsys.readouterr().out
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["model_type"] == "mesa_layer_mesanet" and summary["model"]["hidden_size"] == 16

    from mesa_layer.hf import MesaNetForCausalLM
    from transformers import AutoModelForCausalLM

    assert isinstance(AutoModelForCausalLM.from_pretrained(out), MesaNetForCausalLM)
    assert (
        main(["sample", "--checkpoint", str(out), "--prompt", "to be", "--max-new-tokens", "7"])
        == 0
    )
    printed = capsys.readouterr().out.rstrip("\n")
    assert printed.startswith("to be") and len(printed) == 5 + 7
    # a second train into the same folder is refused without --resume (one error line)
    assert main(["train", "--data", str(corpus), "--out", str(out), *TINY]) == 2
    assert "pass --resume" in capsys.readouterr().err


def test_bad_settings_are_one_error_line(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = str(tmp_path / "m")
    assert main(["train", "--data", str(corpus), "--out", out, "--set", "model.num_heads=3"]) == 2
    err = capsys.readouterr().err
    assert "num_heads: expected a divisor of hidden_size=64" in err and "Traceback" not in err
    assert main(["train", "--data", str(corpus), "--out", out, "--set", "model.heads=3"]) == 2
    assert "has no setting 'heads'" in capsys.readouterr().err
    assert main(["sample", "--checkpoint", str(tmp_path), "--prompt", "x"]) == 2
    assert "checkpoint: expected a folder written by `train`" in capsys.readouterr().err
