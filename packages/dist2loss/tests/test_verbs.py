"""``dist2loss train`` / ``evaluate`` on JSONL files, through the console script's `main`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from dist2loss.cli import main  # noqa: E402
from dist2loss.verbs import first_number, numeric_scores  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from shared_core.testing import assert_killed_train_resumes  # noqa: E402

DATA = Path(__file__).parent / "data"
WORDS = [*"0123456789", "+", "=", "user", "assistant"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny Llama whose tokenizer reads each digit as one token, saved as a model folder."""
    from shared_core.models import tiny_lm

    model, tok = tiny_lm(WORDS, split=r"\d|[^\s\d]+", hidden_size=16, num_layers=1, num_heads=2)
    folder = tmp_path_factory.mktemp("tiny") / "model"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _train(model_dir, out, *argv, data=DATA / "sums.jsonl", runs=None):
    runs = runs or out.parent / "runs"
    return main(["train", "--model", str(model_dir), "--data", str(data), "--out", str(out),
                 "--batch-size", "4", "--max-length", "16", "--lr", "1e-2",
                 "--runs", str(runs), *argv])  # fmt: skip


def _weights(folder):
    return load_file(Path(folder) / "model.safetensors")


def test_train_writes_a_folder_the_auto_class_loads(tmp_path, model_dir):
    out = tmp_path / "out"
    assert _train(model_dir, out, "--max-steps", "3", "--eval", str(DATA / "sums_eval.jsonl")) == 0
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "provenance.json", "README.md",
            "training_config.json", "training_log.json", "tokenizer.json"} <= names  # fmt: skip
    assert "checkpoints" not in names and not list(tmp_path.glob(".out.*"))
    settings = json.loads((out / "training_config.json").read_text())
    assert settings["dist2loss"]["alpha"] == 0.1 and settings["metric_tokens"] == 10
    assert settings["flags"]["max_steps"] == 3
    losses = [e["loss"] for e in json.loads((out / "training_log.json").read_text()) if "loss" in e]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["package"] == "dist2loss" and "eval_loss" in provenance["metrics"]
    loaded = transformers.AutoModelForCausalLM.from_pretrained(out)
    before = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    trained = _weights(out)
    assert set(trained) == set(loaded.state_dict())
    assert any(not torch.equal(p, before.state_dict()[n]) for n, p in trained.items())
    for n, p in loaded.state_dict().items():
        torch.testing.assert_close(p, trained[n], rtol=0, atol=0)
    assert transformers.AutoTokenizer.from_pretrained(out).convert_tokens_to_ids("7") == 11


def test_alpha_zero_trains_the_plain_cross_entropy_baseline(tmp_path, model_dir):
    assert _train(model_dir, tmp_path / "sft", "--max-steps", "1", "--set", "alpha=0") == 0
    assert _train(model_dir, tmp_path / "d2", "--max-steps", "1") == 0
    sft, d2 = (json.loads((tmp_path / n / "training_log.json").read_text())[0]["loss"]
               for n in ("sft", "d2"))  # fmt: skip
    assert d2 > sft  # same first batch and weights: the KL term adds a positive amount


def test_resume_after_a_kill_ends_at_the_uninterrupted_weights(tmp_path, model_dir, monkeypatch):
    from dist2loss.hf import Dist2Trainer

    _, cut = assert_killed_train_resumes(
        lambda out, *a: _train(model_dir, out, *a), Dist2Trainer, tmp_path, monkeypatch,
        ("--max-steps", "4", "--save-steps", "2", "--grad-accum", "2"),
        kill_after=4, checkpoints=["checkpoint-2"],  # 2 micro-batches a step: killed in step 3
    )  # fmt: skip
    log = json.loads((cut / "training_log.json").read_text())
    assert [e["step"] for e in log if "loss" in e] == [1, 2, 3, 4]
    assert [e["step"] for e in log if "loss" in e] == [1, 2, 3, 4]


def test_lora_saves_an_adapter_or_merged_weights(tmp_path, model_dir):
    merged, adapter = tmp_path / "merged", tmp_path / "adapter"
    assert _train(model_dir, merged, "--max-steps", "2", "--lora", "4,8", "--merge") == 0
    assert _train(model_dir, adapter, "--max-steps", "2", "--lora", "4,8") == 0
    assert (adapter / "adapter_model.safetensors").is_file()
    assert not (merged / "adapter_config.json").exists()
    batch = {"input_ids": torch.tensor([[4, 5, 14, 6]])}
    with torch.no_grad():
        a = transformers.AutoModelForCausalLM.from_pretrained(merged)(**batch).logits
        b = transformers.AutoModelForCausalLM.from_pretrained(adapter)(**batch).logits
        base = transformers.AutoModelForCausalLM.from_pretrained(model_dir)(**batch).logits
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(a, base)
    from shared_core.finetune import load_causal_lm

    with torch.no_grad():
        torch.testing.assert_close(load_causal_lm(adapter)[0](**batch).logits, b)


def test_a_user_table_of_points(tmp_path, model_dir):
    out = tmp_path / "grid"
    table = str(DATA / "digit_grid.json")
    assert _train(model_dir, out, "--max-steps", "1", "--table", table) == 0
    assert json.loads((out / "training_config.json").read_text())["metric_tokens"] == 10
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"7": 1.0, "seven": 2.0}))
    assert _train(model_dir, tmp_path / "x", "--max-steps", "1", "--table", str(bad)) == 2


def _error(capsys):
    err = [x for x in capsys.readouterr().err.splitlines() if "error" in x]
    assert len(err) == 1 and err[0].startswith("dist2loss: error: "), err
    return err[0]


@pytest.mark.parametrize(
    "lines, match",
    [
        (['{"prompt": "1 + 2 =", "completion": " 3"}', "{not json"], r"bad.jsonl, line 2: not valid JSON"),
        (['{"prompt": "1 + 2 =", "completion": " 3"}', '{"prompt": "2 + 2 ="}'], r"bad.jsonl, line 2"),
        (['{"messages": [{"role": "user", "content": "1 + 2 ="}]}'], r"bad.jsonl.*no chat template"),
        ([""], r"bad.jsonl"),
    ],
)  # fmt: skip
def test_bad_data_is_one_error_naming_file_and_line(tmp_path, model_dir, capsys, lines, match):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines))
    assert _train(model_dir, tmp_path / "out", "--max-steps", "1", data=bad) == 2
    import re

    assert re.search(match, _error(capsys))
    assert not (tmp_path / "out").exists()


def test_bad_model_and_flags(tmp_path, model_dir, capsys):
    from transformers import BertConfig, BertModel

    bert = tmp_path / "bert"
    BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=8, vocab_size=20)).save_pretrained(bert)  # fmt: skip
    assert _train(bert, tmp_path / "out", "--max-steps", "1") == 2
    assert "is not a causal LM" in _error(capsys)
    with pytest.raises(SystemExit) as e:
        _train(model_dir, tmp_path / "out", "--grad-accum", "0")
    assert e.value.code == 2 and "--grad-accum" in capsys.readouterr().err
    assert _train(model_dir, tmp_path / "out", "--merge") == 2
    assert "--merge: only with --lora" in _error(capsys)


def test_evaluate_scores_generated_numbers(tmp_path, model_dir, capsys):
    out = tmp_path / "scores.json"
    argv = ["evaluate", "--model", str(model_dir), "--data", str(DATA / "sums_eval.jsonl"),
            "--out", str(out), "--max-new-tokens", "3", "--runs", str(tmp_path / "runs")]  # fmt: skip
    assert main(argv) == 0
    got = json.loads(out.read_text())
    assert got["scores"]["examples"] == 8 == len(got["answers"])
    assert got["answers"][0]["gold"] == first_number(
        json.loads((DATA / "sums_eval.jsonl").read_text().splitlines()[0])["completion"]
    )
    bad = tmp_path / "words.jsonl"
    bad.write_text('{"prompt": "1 + 2 =", "completion": "three"}\n')
    assert main(["evaluate", "--model", str(model_dir), "--data", str(bad)]) == 2
    assert "line 1: the answer 'three' holds no number" in _error(capsys)


def test_numeric_scores():
    assert first_number(" 1,234.5 apples") == 1234.5 and first_number("-3 ") == -3.0
    assert first_number("none") is None
    s = numeric_scores([3.0, 5.0, None, 10.0], [3.0, 4.0, 1.0, 7.0])
    assert s == {"examples": 4, "exact_match": 0.25, "mean_abs_error": 4 / 3, "no_number": 1}
    with pytest.raises(ValueError, match="predicted"):
        numeric_scores([1.0], [1.0, 2.0])


def test_two_processes_train_like_one_with_the_same_global_batch(tmp_path, model_dir):
    """``torchrun --nproc_per_node 2 -m dist2loss train`` (gloo, 2 x 2 examples a step) and one
    process (4 a step) log the same loss and gradient norm at every step (1e-5 relative), and
    their SGD updates (the sum of the clipped gradients times the learning rates) are equal."""
    import os
    import socket
    import subprocess
    import sys

    from shared_core.testing import assert_close

    argv = ["--model", str(model_dir), "--data", str(DATA / "sums.jsonl"), "--max-steps", "3",
            "--max-length", "16", "--optim", "sgd", "--lr", "0.5"]  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--master_port", str(port), "-m", "dist2loss", "train", *argv, "--batch-size", "2",
           "--out", str(tmp_path / "two"), "--runs", str(tmp_path / "runs")]  # fmt: skip
    done = subprocess.run(cmd, env=os.environ | {"OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert main(["train", *argv, "--batch-size", "4", "--out", str(tmp_path / "one"),
                 "--runs", str(tmp_path / "runs")]) == 0  # fmt: skip
    logs = {}
    for name in ("one", "two"):
        log = json.loads((tmp_path / name / "training_log.json").read_text())
        logs[name] = [e for e in log if "loss" in e]
    assert [e["step"] for e in logs["two"]] == [1, 2, 3]
    for key in ("loss", "grad_norm"):
        one, two = (torch.tensor([e[key] for e in logs[n]]) for n in ("one", "two"))
        assert_close(key, one, two, 1e-5)
    start = _weights(model_dir)
    one, two = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    for name, w0 in start.items():
        # the weights are float32: w1 - w0 carries up to half an ulp of |w| of rounding
        ulp = torch.finfo(torch.float32).eps * float(w0.abs().max())
        assert_close(f"update of {name}", one[name] - w0, two[name] - w0, 1e-5, atol=ulp)
