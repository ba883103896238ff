"""``nextquill train-reference`` / ``train`` / ``evaluate`` on JSONL files, through `main`."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")
import torch  # noqa: E402
from nextquill.cli import main  # noqa: E402
from nextquill.verbs import read_examples, rouge_scores  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from shared_core.testing import assert_killed_train_resumes  # noqa: E402

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny Llama over the words of the test files, saved as a model folder."""
    from shared_core.models import tiny_lm

    words = sorted({w for f in DATA.glob("*.jsonl") for r in f.read_text().splitlines()
                    for k, v in json.loads(r).items() if k != "user" for w in v.split()})  # fmt: skip
    model, tok = tiny_lm(words, hidden_size=16, num_layers=1, num_heads=2)
    folder = tmp_path_factory.mktemp("tiny") / "model"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def reference(model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "theta_d"
    argv = ["train-reference", "--model", str(model_dir), "--data", str(DATA / "all_users.jsonl"),
            "--out", str(out), "--max-steps", "2", "--lr", "1e-2", "--batch-size", "8",
            "--runs", str(out.parent / "runs")]  # fmt: skip
    assert main(argv) == 0
    return out


def _train(model_dir, out, *argv, data=DATA / "user.jsonl"):
    return main(["train", "--model", str(model_dir), "--data", str(data), "--out", str(out),
                 "--batch-size", "2", "--lr", "1e-2", "--runs", str(out.parent / "runs"),
                 *argv])  # fmt: skip


def _weights(folder):
    return load_file(Path(folder) / "model.safetensors")


def test_reference_then_user_model_load_with_the_auto_class(tmp_path, model_dir, reference):
    settings = json.loads((reference / "training_config.json").read_text())
    assert settings["method"].startswith("nextquill theta_D")
    assert json.loads((reference / "provenance.json").read_text())["package"] == "nextquill"
    out = tmp_path / "user"
    argv = (
        "--reference",
        str(reference),
        "--max-steps",
        "2",
        "--eval",
        str(DATA / "heldout.jsonl"),
    )
    assert _train(model_dir, out, *argv) == 0
    settings = json.loads((out / "training_config.json").read_text())
    assert settings["reference"] == str(reference) and settings["nextquill"]["alpha"] == 0.1
    log = [e for e in json.loads((out / "training_log.json").read_text()) if "loss" in e]
    assert len(log) == 2 and all(math.isfinite(e["loss"]) for e in log)
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["class"].endswith("NextQuillTrainer") and "eval_loss" in provenance["metrics"]
    loaded = transformers.AutoModelForCausalLM.from_pretrained(out)
    trained, start = _weights(out), _weights(model_dir)
    for n, p in loaded.state_dict().items():
        torch.testing.assert_close(p, trained[n], rtol=0, atol=0)
    assert any(not torch.equal(p, start[n]) for n, p in trained.items())
    assert not (out / "checkpoints").exists()


def test_the_data_side_effect_comes_from_theta_d(tmp_path, model_dir, reference, monkeypatch):
    """With --reference the DCE passes run theta_D (its saved weights); with --self-weights the
    model being trained."""
    import nextquill.hf

    seen = []
    original = nextquill.hf.batch_dce

    def spy(model, batch):
        seen.append({n: p.detach().clone() for n, p in model.state_dict().items()})
        return original(model, batch)

    monkeypatch.setattr(nextquill.hf, "batch_dce", spy)
    assert (
        _train(model_dir, tmp_path / "ref", "--reference", str(reference), "--max-steps", "2") == 0
    )
    theta_d = _weights(reference)
    assert len(seen) == 2 and all(
        torch.equal(s[n], theta_d[n]) for s in seen for n in theta_d
    )  # frozen: the same weights at both steps
    seen.clear()
    assert _train(model_dir, tmp_path / "self", "--self-weights", "--max-steps", "2") == 0
    start = _weights(model_dir)
    assert all(torch.equal(seen[0][n], start[n]) for n in start)  # step 1: the initial model
    assert any(not torch.equal(seen[1][n], start[n]) for n in start)  # step 2: trained once


def test_resume_after_a_kill_ends_at_the_uninterrupted_weights(tmp_path, model_dir, monkeypatch):
    from nextquill.hf import NextQuillTrainer

    assert_killed_train_resumes(
        lambda out, *a: _train(model_dir, out, *a), NextQuillTrainer, tmp_path, monkeypatch,
        ("--self-weights", "--max-steps", "3", "--save-steps", "1", "--batch-size", "1",
         "--grad-accum", "2"),
        kill_after=3, checkpoints=["checkpoint-1"],  # 2 micro-batches a step: killed in step 2
    )  # fmt: skip


def _error(capsys):
    err = [x for x in capsys.readouterr().err.splitlines() if "error" in x]
    assert len(err) == 1 and err[0].startswith("nextquill: error: "), err
    return err[0]


GOOD = '{"history": "history : x ; ", "prompt": "review :", "completion": " hamlet is superb"}'


@pytest.mark.parametrize(
    "lines, match",
    [
        ([GOOD, "{not json"], r"bad.jsonl, line 2: not valid JSON"),
        ([GOOD, '{"history": "", "prompt": "review :"}'], r"bad.jsonl, line 2"),
        ([GOOD, '{"prompt": "review :", "completion": " a"}'], r"bad.jsonl, line 2: no history field"),
        (['{"messages": [{"role": "user", "content": "x"}]}'], r"bad.jsonl holds conversational"),
        ([""], r"bad.jsonl is empty"),
    ],
)  # fmt: skip
def test_bad_data_is_one_error_naming_file_and_line(tmp_path, model_dir, capsys, lines, match):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines))
    assert _train(model_dir, tmp_path / "out", "--self-weights", "--max-steps", "1", data=bad) == 2
    assert re.search(match, _error(capsys))
    assert not (tmp_path / "out").exists()


def test_bad_model_reference_and_flags(tmp_path, model_dir, capsys):
    from transformers import BertConfig, BertModel

    bert = tmp_path / "bert"
    BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=8, vocab_size=20)).save_pretrained(bert)  # fmt: skip
    assert _train(bert, tmp_path / "o", "--self-weights") == 2
    assert "is not a causal LM" in _error(capsys)
    assert _train(model_dir, tmp_path / "o", "--reference", str(bert)) == 2
    assert "is not a causal LM" in _error(capsys)
    assert _train(model_dir, tmp_path / "o") == 2
    assert "--reference: give theta_D's folder" in _error(capsys)
    with pytest.raises(SystemExit) as e:
        _train(model_dir, tmp_path / "o", "--self-weights", "--grad-accum", "0")
    assert e.value.code == 2 and "--grad-accum" in capsys.readouterr().err


def test_evaluate_reports_rouge(tmp_path, model_dir, capsys):
    out = tmp_path / "scores.json"
    argv = ["evaluate", "--model", str(model_dir), "--data", str(DATA / "heldout.jsonl"),
            "--out", str(out), "--max-new-tokens", "4", "--runs", str(tmp_path / "runs")]  # fmt: skip
    assert main(argv) == 0
    got = json.loads(out.read_text())
    assert got["scores"]["examples"] == 6 == len(got["reviews"])
    assert 0.0 <= got["scores"]["rouge1"] <= 1.0


def test_rouge_scores_and_examples():
    assert rouge_scores(["a b c d"], ["a b c d"]) == {"rouge1": 1.0, "rougeL": 1.0}
    s = rouge_scores(["a b", "x y"], ["a b c d", "z"])
    assert s["rouge1"] == pytest.approx((2 * 1.0 * 0.5 / 1.5) / 2)
    examples, metrics = read_examples(DATA / "user.jsonl")
    assert len(examples) == metrics["read"] == 4
    assert examples[0].suffix == "review :" and examples[0].history.startswith("history :")
    with pytest.raises(ValueError, match="generated"):
        rouge_scores([], [])


def test_two_processes_train_like_one_with_the_same_global_batch(tmp_path, model_dir, reference):
    """``torchrun --nproc_per_node 2 -m nextquill train`` (gloo, 2 x 1 rows a step) and one
    process (2 rows a step) log the same loss and gradient norm at every step (1e-5 relative),
    and their SGD updates are equal."""
    import os
    import socket
    import subprocess
    import sys

    from shared_core.testing import assert_close

    argv = ["--model", str(model_dir), "--data", str(DATA / "user.jsonl"), "--max-steps", "2",
            "--reference", str(reference), "--optim", "sgd", "--lr", "0.5"]  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--master_port", str(port), "-m", "nextquill", "train", *argv, "--batch-size", "1",
           "--out", str(tmp_path / "two"), "--runs", str(tmp_path / "runs")]  # fmt: skip
    done = subprocess.run(cmd, env=os.environ | {"OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert main(["train", *argv, "--batch-size", "2", "--out", str(tmp_path / "one"),
                 "--runs", str(tmp_path / "runs")]) == 0  # fmt: skip
    logs = {}
    for name in ("one", "two"):
        log = json.loads((tmp_path / name / "training_log.json").read_text())
        logs[name] = [e for e in log if "loss" in e]
    assert [e["step"] for e in logs["two"]] == [1, 2]
    for key in ("loss", "grad_norm"):
        one, two = (torch.tensor([e[key] for e in logs[n]]) for n in ("one", "two"))
        assert_close(key, one, two, 1e-5)
    start = _weights(model_dir)
    one, two = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    for name, w0 in start.items():
        # the weights are float32: w1 - w0 carries up to half an ulp of |w| of rounding
        ulp = torch.finfo(torch.float32).eps * float(w0.abs().max())
        assert_close(f"update of {name}", one[name] - w0, two[name] - w0, 1e-5, atol=ulp)
