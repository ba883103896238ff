"""`crome train --model <causal LM>`: the `SequenceRewardModel` folder loads with
transformers' Auto class, ``--lora`` / ``--merge`` through peft, and two processes under
``torchrun`` train like one on the same global batch."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from crome import world as W  # noqa: E402
from crome.cli import main  # noqa: E402
from crome.sequence_model import SequenceRewardModel  # noqa: E402
from crome.verbs import load_reward_model, read_rows  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402

DATA = Path(__file__).parent / "data"
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory) -> Path:
    """A tiny random Llama (1 layer) with a word-level tokenizer, saved as a model folder."""
    from shared_core.models import tiny_lm

    texts = [W.PREAMBLE, *W.FILLERS, "The answer is", "Answer:", "What is", "Let me think"]
    words = {w.lower() for t in texts for w in re.findall(r"\w+|[^\w\s]", t)}
    words |= {str(i) for i in range(30)} | set("+-?.!:,") | {"great", "question", "let"}
    model, tok = tiny_lm(sorted(words), specials={"unk": "<unk>", "eos": "<eos>"},
                         split=r"\w+|[^\w\s]+", hidden_size=16, intermediate_size=32,
                         num_layers=2, num_heads=2, max_positions=128)  # fmt: skip
    folder = tmp_path_factory.mktemp("lm") / "model"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def augmented(tmp_path_factory) -> Path:
    """prefs.jsonl with its world-oracle augmentations (30 rows: preferences and ties)."""
    out = tmp_path_factory.mktemp("aug") / "aug.jsonl"
    assert main(["augment", "--data", str(DATA / "prefs.jsonl"), "--oracle", "world",
                 "--out", str(out)]) == 0  # fmt: skip
    return out


def _train(lm_dir: Path, data: Path, out: Path, *argv: str) -> int:
    return main(["train", "--model", str(lm_dir), "--data", str(data), "--out", str(out),
                 "--max-length", "32", "--set", "steps=3", "--set", "batch_size=8",
                 "--set", "trainable_layers=-1", "--set", "lr_encoder=1e-2",
                 "--runs", str(out.parent / "runs"), *argv])  # fmt: skip


def _auto_rewards(folder: Path, model: SequenceRewardModel, rows) -> torch.Tensor:
    """Rewards of every (prompt, answer) of `rows` from AutoModelForSequenceClassification."""
    auto = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    prompts = [r.prompt for r in rows] * 2
    answers = [r.chosen for r in rows] + [r.rejected for r in rows]
    with torch.no_grad():
        return auto(**model.encode(prompts, answers)).logits.squeeze(-1)


def _crome_rewards(model: SequenceRewardModel, rows) -> torch.Tensor:
    prompts = [r.prompt for r in rows] * 2
    return model.score(prompts, [r.chosen for r in rows] + [r.rejected for r in rows])


def test_the_saved_folder_loads_with_the_auto_class_and_gives_the_same_rewards(
    tmp_path, lm_dir, augmented
):
    out = tmp_path / "rm"
    assert _train(lm_dir, augmented, out) == 0
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "reward_config.json", "provenance.json",
            "README.md", "training_log.json", "training_config.json"} <= names  # fmt: skip
    log = json.loads((out / "training_log.json").read_text())
    assert [e["step"] for e in log] == [1, 2, 3] and all(e["grad_norm"] > 0 for e in log)
    assert json.loads((out / "training_config.json").read_text())["train"]["steps"] == 3
    model = load_reward_model(out)
    assert isinstance(model, SequenceRewardModel)
    rows = read_rows(DATA / "pairs.jsonl")
    ours = _crome_rewards(model, rows)
    assert ours.abs().max() > 0  # trained: the zero head has moved
    assert_close("rewards", ours, _auto_rewards(out, model, rows), 1e-5)
    fresh = SequenceRewardModel.from_causal_lm(lm_dir, 32)
    assert float(_crome_rewards(fresh, rows).abs().max()) == 0.0
    report = tmp_path / "eval.json"
    assert main(["evaluate", "--checkpoint", str(out), "--data", str(augmented),
                 "--out", str(report)]) == 0  # fmt: skip
    metrics = json.loads(report.read_text())[str(augmented)]
    assert metrics["pairs"] == 30 and 0 <= metrics["tie_accuracy"] <= 1


def test_lora_saves_the_adapter_and_merge_the_weights_with_the_same_rewards(
    tmp_path, lm_dir, augmented
):
    adapter, merged = tmp_path / "adapter", tmp_path / "merged"
    assert _train(lm_dir, augmented, adapter, "--lora", "2,4") == 0
    assert _train(lm_dir, augmented, merged, "--lora", "2,4", "--merge") == 0
    names = {p.name for p in adapter.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= names
    assert "config.json" not in names
    from safetensors.torch import load_file

    saved = load_file(adapter / "adapter_model.safetensors")
    assert any("lora_A" in k for k in saved) and any("score" in k for k in saved)
    assert not any("lora" in k for k in load_file(merged / "model.safetensors"))
    rows = read_rows(DATA / "pairs.jsonl")
    from_adapter = load_reward_model(adapter)
    assert isinstance(from_adapter, SequenceRewardModel) and from_adapter.lora == (2, 4)
    expected = _crome_rewards(from_adapter, rows)
    assert expected.abs().max() > 0
    from_merged = load_reward_model(merged)
    assert isinstance(from_merged, SequenceRewardModel) and from_merged.lora is None
    assert_close("merged rewards", expected, _crome_rewards(from_merged, rows), 1e-5)
    assert_close("Auto-class rewards", expected, _auto_rewards(merged, from_merged, rows), 1e-5)


def test_lora_trains_only_the_adapters_and_the_head(lm_dir):
    model = SequenceRewardModel.from_causal_lm(lm_dir, 32)
    model.add_lora(2, 4)
    model.freeze(1)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or "modules_to_save" in n for n in trainable)
    assert all(".layers.1." in n for n in trainable if "lora_" in n)
    with pytest.raises(ValueError, match="already holds a LoRA adapter"):
        model.add_lora(2, 4)


def test_bad_lora_flags_are_one_error(tmp_path, lm_dir, augmented, capsys, tiny_rm):
    encoder = tmp_path / "encoder"
    tiny_rm.backbone.save_pretrained(encoder)
    tiny_rm.tokenizer.save_pretrained(encoder)
    assert _train(encoder, augmented, tmp_path / "e", "--lora", "2,4") == 2
    assert "--lora: only on a causal LM" in capsys.readouterr().err
    assert _train(lm_dir, augmented, tmp_path / "a", "--merge") == 2
    assert "--merge: only with --lora" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        _train(lm_dir, augmented, tmp_path / "b", "--lora", "0,4")
    assert exit_.value.code == 2 and "expected r,alpha >= 1" in capsys.readouterr().err
    assert _train(lm_dir, augmented, tmp_path / "c", "--lora", "2,4", "--checkpoint",
                  str(tmp_path)) == 2  # fmt: skip
    assert "--lora: starts from --model" in capsys.readouterr().err


def test_two_processes_train_like_one_with_the_same_global_batch(tmp_path, lm_dir, augmented):
    """``crome train`` under ``torchrun --nproc_per_node 2`` (gloo, 4 + 4 rows a step, each
    process's 4 in two micro-batches: ``--grad-accum 2``) and in one process (8 rows at once)
    log the same loss and gradient norm at each of 3 steps (1e-5 relative), and the gradient of
    every parameter after one step is the same (1e-5)."""
    flags = ["--max-length", "32", "--set", "steps=3", "--set", "batch_size=8",
             "--set", "trainable_layers=-1", "--set", "lr_encoder=1e-2",
             "--runs", str(tmp_path / "runs")]  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--master_port", str(port), str(HERE / "_ddp_worker.py"), str(tmp_path / "two"),
           str(tmp_path / "g.pt"), str(lm_dir), str(augmented), *flags,
           "--grad-accum", "2"]  # fmt: skip
    done = subprocess.run(cmd, env=os.environ | {"OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert main(["train", "--model", str(lm_dir), "--data", str(augmented),
                 "--out", str(tmp_path / "one"), *flags]) == 0  # fmt: skip
    logs = {n: json.loads((tmp_path / n / "training_log.json").read_text()) for n in ("one", "two")}
    assert [e["step"] for e in logs["two"]] == [1, 2, 3]
    for key in ("loss", "grad_norm"):
        one, two = (torch.tensor([e[key] for e in logs[n]]) for n in ("one", "two"))
        assert_close(key, one, two, 1e-5)

    from tests._ddp_worker import one_step_gradients

    two_grads = torch.load(tmp_path / "g.pt")
    one_grads = one_step_gradients(lm_dir, augmented)
    assert set(two_grads) == set(one_grads) and len(one_grads) > 10
    for name, g in one_grads.items():
        assert_close(f"gradient of {name}", g, two_grads[name], 1e-5)


def test_python_dash_m_crome_is_the_console_script():
    done = subprocess.run([sys.executable, "-m", "crome", "--version"], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("crome ")
