"""``context-denoising train`` / ``score`` / ``evaluate`` on JSONL files, through `main`."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from context_denoising.cli import main  # noqa: E402
from context_denoising.documents import NAMES, needle_documents  # noqa: E402
from context_denoising.verbs import cdt_config, retrieval_scores  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from shared_core.testing import assert_killed_train_resumes  # noqa: E402

DATA = Path(__file__).parent / "data"
FILLER = [
    *[
        "the",
        "king",
        "rode",
        "north",
        "at",
        "dawn",
        "while",
        "rain",
        "fell",
        "on",
        "old",
        "stone",
        "bridge",
        "and",
        "river",
        "ran",
    ],
    *["cold", "under", "grey", "skies", "near", "a", "quiet", "town"],
]
WORDS = [*FILLER, *NAMES, *"0123456789", "The", "secret", "number", "of", "is", ".", "?", ":",
         "Question", "what", "Answer", "user", "assistant"]  # fmt: skip
SPLIT = r"\d|\w+|[^\w\s]"
CHAT = (
    "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant :{% endif %}"
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny Llama over the test documents' words (no chat template), saved as a folder."""
    from shared_core.models import tiny_lm

    model, tok = tiny_lm(WORDS, split=SPLIT, hidden_size=16, num_layers=1, num_heads=2)
    folder = tmp_path_factory.mktemp("tiny") / "model"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def chat_dir(tmp_path_factory, model_dir):
    """The same model with a chat template on its tokenizer."""
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    tok.chat_template = CHAT
    folder = tmp_path_factory.mktemp("chat") / "model"
    transformers.AutoModelForCausalLM.from_pretrained(model_dir).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _train(model_dir, out, *argv, data=DATA / "needles.jsonl"):
    return main(["train", "--model", str(model_dir), "--data", str(data), "--out", str(out),
                 "--batch-size", "4", "--max-length", "96", "--lr", "1e-2",
                 "--runs", str(out.parent / "runs"), *argv])  # fmt: skip


def _weights(folder):
    return load_file(Path(folder) / "model.safetensors")


def _losses(folder):
    log = json.loads((Path(folder) / "training_log.json").read_text())
    return [e["loss"] for e in log if "loss" in e]


def _error(capsys):
    err = [x for x in capsys.readouterr().err.splitlines() if "error" in x]
    assert len(err) == 1 and err[0].startswith("context-denoising: error: "), err
    return err[0]


def test_train_writes_a_folder_the_auto_class_loads(tmp_path, model_dir):
    out = tmp_path / "out"
    assert (
        _train(model_dir, out, "--max-steps", "3", "--eval", str(DATA / "needles_eval.jsonl")) == 0
    )
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "provenance.json", "README.md",
            "training_config.json", "training_log.json", "tokenizer.json"} <= names  # fmt: skip
    assert "checkpoints" not in names and not list(tmp_path.glob(".out.*"))
    settings = json.loads((out / "training_config.json").read_text())
    assert settings["method"] == "cdt" and settings["preset"] == "paper"
    assert settings["cdt"]["beta"] == 5.0 and settings["cdt"]["region"] == "row"
    assert settings["flags"]["max_steps"] == 3
    losses = _losses(out)
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["package"] == "context-denoising" and "eval_loss" in provenance["metrics"]
    assert provenance["class"].endswith("CDTTrainer")
    loaded = transformers.AutoModelForCausalLM.from_pretrained(out)
    before = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    trained = _weights(out)
    assert set(trained) == set(loaded.state_dict())
    assert any(not torch.equal(p, before.state_dict()[n]) for n, p in trained.items())
    for n, p in loaded.state_dict().items():
        torch.testing.assert_close(p, trained[n], rtol=0, atol=0)


def test_sft_and_beta_zero_take_the_same_step_and_the_paper_step_differs(tmp_path, model_dir):
    """--sft (a plain Trainer) and CDT at beta = 0 end at the same weights; beta = 5 does not."""
    # SGD: an update linear in the gradient (Adam's g / sqrt(v) turns float rounding of a
    # near-zero gradient into a visible step)
    argv = ("--max-steps", "2", "--lr", "0.5", "--optim", "sgd")
    assert _train(model_dir, tmp_path / "sft", *argv, "--sft") == 0
    assert _train(model_dir, tmp_path / "zero", *argv, "--set", "beta=0") == 0
    assert _train(model_dir, tmp_path / "cdt", *argv, "--set", "beta=1000") == 0
    sft, zero, cdt = (_weights(tmp_path / n) for n in ("sft", "zero", "cdt"))
    for name, p in sft.items():
        torch.testing.assert_close(zero[name], p, rtol=1e-5, atol=1e-6)
    assert any(not torch.allclose(cdt[n], p, rtol=1e-5, atol=1e-6) for n, p in sft.items())
    assert json.loads((tmp_path / "sft" / "training_config.json").read_text())["method"] == "sft"


def test_presets_and_overrides():
    from context_denoising.cdt import PRESETS, CDTConfig

    assert cdt_config("paper", CDTConfig()) == CDTConfig()
    assert cdt_config("openrlhf", CDTConfig()) == PRESETS["openrlhf"]
    assert cdt_config("v0.1", CDTConfig(beta=2.0)) == CDTConfig(
        beta=2.0, signs="openrlhf", region="context"
    )


def test_resume_after_a_kill_ends_at_the_uninterrupted_weights(tmp_path, model_dir, monkeypatch):
    from context_denoising.trainer import CDTTrainer

    whole, cut = assert_killed_train_resumes(
        lambda out, *a: _train(model_dir, out, *a), CDTTrainer, tmp_path, monkeypatch,
        ("--max-steps", "4", "--save-steps", "2", "--grad-accum", "2"),
        kill_after=4, checkpoints=["checkpoint-2"],  # 2 micro-batches a step: killed in step 3
    )  # fmt: skip
    log = json.loads((cut / "training_log.json").read_text())
    assert [e["step"] for e in log if "loss" in e] == [1, 2, 3, 4]
    torch.testing.assert_close(_losses(cut), _losses(whole))
    torch.testing.assert_close(_losses(tmp_path / "cut"), _losses(tmp_path / "whole"))


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


def test_messages_train_through_the_chat_template(tmp_path, chat_dir):
    out = tmp_path / "chat"
    assert _train(chat_dir, out, "--max-steps", "1", data=DATA / "needles_chat.jsonl") == 0
    assert len(_losses(out)) == 1


@pytest.mark.parametrize(
    "lines, match",
    [
        (['{"prompt": "a", "completion": " 1"}', "{not json"], r"--data: .*bad.jsonl, line 2: not valid JSON"),
        (['{"prompt": "a", "completion": " 1"}', '{"prompt": "b"}'], r"--data: .*bad.jsonl, line 2: .*'completion'"),
        (['{"messages": [{"role": "user", "content": "the king"}]}'], r"bad.jsonl.*no chat template"),
        ([""], r"--data: .*bad.jsonl is empty"),
    ],
)  # fmt: skip
def test_bad_data_is_one_error_naming_file_and_line(tmp_path, model_dir, capsys, lines, match):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines))
    assert _train(model_dir, tmp_path / "out", "--max-steps", "1", data=bad) == 2
    assert re.search(match, _error(capsys))
    assert not (tmp_path / "out").exists()


def test_an_answer_cut_off_by_max_length_and_v01_on_text_name_the_line(tmp_path, model_dir, capsys):
    assert _train(model_dir, tmp_path / "out", "--max-steps", "1", "--max-length", "8") == 2
    assert re.search(
        r"needles.jsonl: line 1: no answer token within --max-length 8", _error(capsys)
    )
    text = tmp_path / "text.jsonl"
    text.write_text('{"text": "the king rode north"}\n')
    assert (
        _train(model_dir, tmp_path / "out", "--max-steps", "1", "--preset", "v0.1", data=text) == 2
    )
    assert "text.jsonl: line 1: no prompt tokens to score" in _error(capsys)
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
    assert _train(model_dir, tmp_path / "out", "--set", "variant=sideways") == 2
    assert "variant" in _error(capsys)


def _score(model, out, *argv, data=DATA / "needles_eval.jsonl"):
    return main(["score", "--model", str(model), "--data", str(data), "--out", str(out),
                 "--runs", str(Path(out).parent / "runs"), *argv])  # fmt: skip


def test_score_writes_jsonl_and_html_heatmap(tmp_path, model_dir):
    from context_denoising import noise_mask, noise_score

    out = tmp_path / "scores.html"
    assert _score(model_dir, out, "--ig") == 0
    docs = [json.loads(x) for x in (tmp_path / "scores.jsonl").read_text().splitlines()]
    records = [json.loads(x) for x in (DATA / "needles_eval.jsonl").read_text().splitlines()]
    assert [d["line"] for d in docs] == list(range(1, 7))
    # the first document scored directly: the same scores and CDT's row mask
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    head = tok(records[0]["prompt"])["input_ids"]
    tail = tok(records[0]["completion"], add_special_tokens=False)["input_ids"]
    labels = [-100] * len(head) + tail
    batch = {"input_ids": torch.tensor([head + tail]), "labels": torch.tensor([labels])}
    context = torch.tensor([[x == -100 for x in labels]])
    ctx_scores = noise_score(model, batch)
    got = torch.tensor([docs[0]["score"]])
    torch.testing.assert_close(got[context], ctx_scores[context], rtol=1e-5, atol=1e-8)
    noise = noise_mask(got, torch.ones_like(context))
    assert docs[0]["noise"] == noise[0].tolist()
    assert docs[0]["role"] == ["context" if c else "answer" for c in context[0]]
    assert docs[0]["tokens"] == [tok.decode([i]) for i in head + tail]
    assert len(docs[0]["ig"]) == len(docs[0]["score"])
    page = out.read_text()
    assert page.count("<div class='doc'>") == 6
    assert page.count("class='tok noise") == sum(sum(d["noise"]) for d in docs)
    assert "Banquo" in page


def test_score_png_and_region(tmp_path, model_dir):
    out = tmp_path / "scores.png"
    assert _score(model_dir, out, "--region", "context", "--norm", "l1") == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    docs = [json.loads(x) for x in (tmp_path / "scores.jsonl").read_text().splitlines()]
    for d in docs:
        answer = [n for n, r in zip(d["noise"], d["role"], strict=True) if r == "answer"]
        assert not any(answer)  # region=context: the answer is never noise


def test_score_bad_input(tmp_path, model_dir, chat_dir, capsys):
    assert _score(model_dir, tmp_path / "s.csv") == 2
    assert "--out: expected a .html or .png file" in _error(capsys)
    text = tmp_path / "text.jsonl"
    text.write_text('{"text": "the king"}\n')
    assert _score(model_dir, tmp_path / "s.html", data=text) == 2
    assert re.search(r"text.jsonl: line 1: expected prompt/completion", _error(capsys))
    chat = DATA / "needles_chat.jsonl"
    assert _score(model_dir, tmp_path / "s.html", data=chat) == 2
    assert "line 1: holds messages but the tokenizer has no chat template" in _error(capsys)
    assert not (tmp_path / "s.html").exists()
    assert _score(chat_dir, tmp_path / "c.html", data=chat) == 0


def test_evaluate_scores_retrieval(tmp_path, model_dir):
    out = tmp_path / "eval.json"
    argv = ["evaluate", "--model", str(model_dir), "--data", str(DATA / "needles_eval.jsonl"),
            "--out", str(out), "--max-new-tokens", "3", "--runs", str(tmp_path / "runs")]  # fmt: skip
    assert main(argv) == 0
    got = json.loads(out.read_text())
    assert got["scores"]["examples"] == 6 == len(got["answers"])
    assert (
        got["answers"][0]["answer"]
        == json.loads((DATA / "needles_eval.jsonl").read_text().splitlines()[0])["completion"]
    )
    for row in got["answers"]:
        assert row["contains"] == (row["answer"].strip().lower() in row["generated"].lower())
    assert got["scores"]["answer_logprob"] < 0


def test_retrieval_scores():
    rows = [
        {"contains": True, "exact_match": False, "answer_logprob": -1.0},
        {"contains": False, "exact_match": False, "answer_logprob": -3.0},
    ]
    assert retrieval_scores(rows) == {
        "examples": 2, "accuracy": 0.5, "exact_match": 0.0, "answer_logprob": -2.0,
    }  # fmt: skip
    with pytest.raises(ValueError, match="rows"):
        retrieval_scores([])


def test_needle_documents_are_a_pure_function_of_the_seed():
    words = FILLER * 10
    a = needle_documents(words, 3, seed=4, context_words=30)
    assert a == needle_documents(words, 3, seed=4, context_words=30)
    assert a != needle_documents(words, 3, seed=5, context_words=30)
    for r in a:
        name = re.search(r"secret number of (\w+)\? Answer:$", r["prompt"]).group(1)
        assert f"The secret number of {name} is{r['completion']}." in r["prompt"]
        assert r["prompt"].count("The secret number of") == 4
    with pytest.raises(ValueError, match="words"):
        needle_documents(words[:10], 1, seed=0, context_words=30)
    with pytest.raises(ValueError, match="names"):
        needle_documents(words, 1, seed=0, context_words=30, n_distractors=20)


def test_two_processes_train_like_one_with_the_same_global_batch(tmp_path, model_dir):
    """``torchrun --nproc_per_node 2 -m context_denoising train`` (gloo, 2 x 2 documents a step)
    and one process (4 a step) log the same loss and gradient norm at every step (1e-5
    relative), and their SGD updates are equal."""
    import os
    import socket
    import subprocess
    import sys

    from shared_core.testing import assert_close

    argv = ["--model", str(model_dir), "--data", str(DATA / "needles.jsonl"), "--max-steps", "3",
            "--max-length", "96", "--optim", "sgd", "--lr", "0.5"]  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--master_port", str(port), "-m", "context_denoising", "train", *argv,
           "--batch-size", "2", "--out", str(tmp_path / "two"),
           "--runs", str(tmp_path / "runs")]  # fmt: skip
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
        ulp = torch.finfo(torch.float32).eps * float(w0.abs().max())
        assert_close(f"update of {name}", one[name] - w0, two[name] - w0, 1e-5, atol=ulp)
