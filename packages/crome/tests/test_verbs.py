"""The verbs on a user's files through `crome.cli.main`: augment -> train -> score/evaluate,
the oracle cache across runs, and one clear error for each kind of bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from crome.cli import main
from crome.model import RewardModel

DATA = Path(__file__).parent / "data"


@pytest.fixture
def saved_rm(tiny_rm, tmp_path) -> Path:
    return tiny_rm.save_pretrained(tmp_path / "rm")


def _json_out(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_augment_train_score_evaluate_on_files(tiny_rm, tmp_path, capsys):
    aug = tmp_path / "aug.jsonl"
    assert main(["augment", "--data", str(DATA / "prefs.jsonl"), "--oracle", "world",
                 "--out", str(aug)]) == 0  # fmt: skip
    summary = _json_out(capsys)
    rows = [json.loads(line) for line in aug.read_text().splitlines()]
    assert summary["original"] == 6 and len(rows) == 30
    kinds = {r["provenance"] for r in rows}
    assert kinds == {"original", "causal-degrade", "causal-upgrade", "neutral-iqn",
                     "neutral-causal-aligned"}  # fmt: skip
    assert {r["label"] for r in rows if r["provenance"].startswith("neutral")} == {"tie"}

    enc = tmp_path / "encoder"  # a local transformers encoder folder for --model
    tiny_rm.backbone.save_pretrained(enc)
    tiny_rm.tokenizer.save_pretrained(enc)
    out = tmp_path / "ckpt"
    assert main(["train", "--data", str(aug), "--model", str(enc), "--out", str(out),
                 "--set", "steps=3", "--set", "batch_size=8", "--max-length", "48"]) == 0  # fmt: skip
    assert _json_out(capsys)["steps"] == 3
    assert not (tmp_path / "ckpt.partial").exists()
    model = RewardModel.from_pretrained(out)
    assert main(["train", "--data", str(aug), "--model", str(enc), "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err

    scores = tmp_path / "scores.csv"
    assert main(["score", "--checkpoint", str(out), "--data", str(DATA / "pairs.jsonl"),
                 "--out", str(scores)]) == 0  # fmt: skip
    table = list(csv.DictReader(scores.open()))
    pairs = [json.loads(line) for line in (DATA / "pairs.jsonl").read_text().splitlines()]
    expected = model.margins([p["prompt"] for p in pairs], [p["chosen"] for p in pairs],
                             [p["rejected"] for p in pairs])  # fmt: skip
    got = torch.tensor([float(r["margin"]) for r in table])
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)

    capsys.readouterr()
    res = tmp_path / "eval.json"
    assert main(["evaluate", "--checkpoint", str(out), "--data", str(aug),
                 "--out", str(res)]) == 0  # fmt: skip
    metrics = json.loads(res.read_text())[str(aug)]
    assert metrics["pairs"] == 30
    for key in ("accuracy", "accuracy/original", "accuracy/causal-degrade",
                "accuracy/causal-upgrade", "tie_accuracy", "tie_accuracy/neutral-iqn",
                "tie_accuracy/neutral-causal-aligned"):  # fmt: skip
        assert 0.0 <= metrics[key] <= 1.0, key


def test_evaluate_accuracy_matches_the_margins(saved_rm, tiny_rm, capsys):
    assert main(["evaluate", "--checkpoint", str(saved_rm), "--data",
                 str(DATA / "pairs.jsonl")]) == 0  # fmt: skip
    metrics = json.loads(capsys.readouterr().out.split("\n[", 1)[0])[str(DATA / "pairs.jsonl")]
    pairs = [json.loads(line) for line in (DATA / "pairs.jsonl").read_text().splitlines()]
    m = tiny_rm.margins([p["prompt"] for p in pairs], [p["chosen"] for p in pairs],
                        [p["rejected"] for p in pairs])  # fmt: skip
    assert metrics["accuracy"] == pytest.approx(float((m > 0).float().mean()))


def test_augment_reuses_every_cached_oracle_call(tiny_llama_backend, tmp_path, capsys):
    folder = tmp_path / "oracle"
    tiny_llama_backend.model.save_pretrained(folder)
    tiny_llama_backend.tokenizer.save_pretrained(folder)
    args = ["augment", "--data", str(DATA / "prefs.jsonl"), "--oracle", str(folder),
            "--max-rubrics", "1", "--out"]  # fmt: skip
    assert main([*args, str(tmp_path / "a.jsonl")]) == 0
    first = _json_out(capsys)
    assert first["oracle_calls"] > 0
    cache = tmp_path / "a.jsonl.oracle_cache"
    # a second run on the same cache (as after a kill) asks the oracle nothing
    assert main([*args, str(tmp_path / "b.jsonl"), "--cache", str(cache)]) == 0
    second = _json_out(capsys)
    assert second["oracle_calls"] == 0 and second["cache_hits"] == first["oracle_calls"]
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()


@pytest.mark.parametrize(
    ("name", "needle"),
    [("not_json.jsonl", "line 2"), ("no_chosen.jsonl", "chosen"), ("empty.jsonl", "no rows")],
)
@pytest.mark.parametrize("verb", ["score", "evaluate", "train", "augment"])
def test_bad_data_is_one_error_line(verb, name, needle, saved_rm, tmp_path, capsys):
    out = tmp_path / ("out.jsonl" if verb == "augment" else "out")
    argv = [verb, "--data", str(DATA / name), "--out", str(out)]
    if verb in ("score", "evaluate", "train"):
        argv += ["--checkpoint", str(saved_rm)]
    if verb == "augment":
        argv += ["--oracle", "world"]
    assert main(argv) == 2
    # the heartbeat's lines start with "[verb]"; the error is one line
    err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("[")]
    assert len(err) == 1 and err[0].startswith("crome: error:"), err
    assert needle in err[0].lower() and name in err[0]
    assert not out.exists()


def test_another_packages_checkpoint_is_refused(tmp_path, capsys):
    from shared_core.hub import save_folder
    from shared_core.report import Run

    other = save_folder(tmp_path / "other", lambda tmp, prov: None, owner=Run, config={"a": 1})
    assert main(["score", "--checkpoint", str(other), "--data", str(DATA / "pairs.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--checkpoint" in err and "crome" in err


def test_bad_oracle_is_one_error_line(tmp_path, capsys):
    argv = ["augment", "--data", str(DATA / "prefs.jsonl"), "--out", str(tmp_path / "a.jsonl")]
    assert main([*argv, "--oracle", "nonsense"]) == 2
    assert "--oracle" in capsys.readouterr().err
    assert main([*argv, "--oracle", "http://localhost:1"]) == 2
    assert "--oracle-model" in capsys.readouterr().err


def test_skip_invalid_scores_the_good_lines(saved_rm, capsys):
    argv = ["score", "--checkpoint", str(saved_rm), "--data", str(DATA / "no_chosen.jsonl")]
    assert main([*argv, "--skip-invalid"]) == 0
    out, err = capsys.readouterr()
    assert len(out.strip().splitlines()) == 2  # header + the one valid row
    assert "skipped 1 invalid line" in err


class _Killed(Exception):
    pass


def test_killed_train_resumes_to_the_same_weights(saved_rm, tmp_path, monkeypatch, capsys):
    import crome.train as T

    aug = DATA / "prefs.jsonl"
    argv = ["train", "--data", str(aug), "--checkpoint", str(saved_rm),
            "--set", "steps=4", "--set", "checkpoint_every=2", "--set", "batch_size=4"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "full")]) == 0
    real, calls = T.pair_loss, []

    def dies_at_step_3(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise _Killed
        return real(*a, **k)

    monkeypatch.setattr(T, "pair_loss", dies_at_step_3)
    with pytest.raises(_Killed):
        main([*argv, "--out", str(tmp_path / "cut")])
    assert (tmp_path / "cut.partial" / "resume.pt").is_file()
    monkeypatch.setattr(T, "pair_loss", real)
    assert main([*argv, "--out", str(tmp_path / "cut"), "--resume"]) == 0
    a = RewardModel.from_pretrained(tmp_path / "full").state_dict()
    b = RewardModel.from_pretrained(tmp_path / "cut").state_dict()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0)


@pytest.fixture
def saved_rm_without_dropout(tiny_rm, tmp_path) -> Path:
    """The tiny BERT RM saved with dropout 0, so that two ways of computing one step agree."""
    tiny_rm.backbone.config.hidden_dropout_prob = 0.0
    tiny_rm.backbone.config.attention_probs_dropout_prob = 0.0
    return tiny_rm.save_pretrained(tmp_path / "rm-no-dropout")


def _trained(out: Path) -> tuple[list[dict], dict, dict]:
    """A train folder's per-step log, its TrainConfig (training_config.json) and weights."""
    log = json.loads((out / "training_log.json").read_text())
    cfg = json.loads((out / "training_config.json").read_text())["train"]
    return log, cfg, RewardModel.from_pretrained(out).state_dict()


@pytest.mark.parametrize("accum", ["2", "4"])  # 6 rows a batch: 3 + 3, and 2 + 2 + 1 + 1
def test_grad_accum_takes_the_same_steps(accum, saved_rm_without_dropout, tmp_path):
    argv = ["train", "--data", str(DATA / "prefs.jsonl"), "--checkpoint",
            str(saved_rm_without_dropout), "--set", "batch_size=6", "--max-steps", "3"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "one")]) == 0
    assert main([*argv, "--grad-accum", accum, "--out", str(tmp_path / "acc")]) == 0
    (log1, _, w1), (log2, cfg2, w2) = _trained(tmp_path / "one"), _trained(tmp_path / "acc")
    assert cfg2["grad_accum"] == int(accum) and len(log1) == len(log2) == 3
    for key in ("loss", "grad_norm"):
        one, acc = (torch.tensor([r[key] for r in log]) for log in (log1, log2))
        torch.testing.assert_close(acc, one, rtol=1e-5, atol=1e-6, msg=key)
    assert log1[-1]["loss"] != log1[0]["loss"]  # it trained
    # a reward offset cancels in r_chosen - r_rejected: the head bias and the last LayerNorm
    # bias have gradient 0 up to rounding, which AdamW turns into lr-sized steps either way
    offsets = {"head.bias", "backbone.encoder.layer.1.output.LayerNorm.bias"}
    for k in w1.keys() - offsets:
        torch.testing.assert_close(w2[k], w1[k], rtol=1e-5, atol=1e-6, msg=k)


def test_schedule_flags_map_onto_the_train_config(saved_rm, tmp_path):
    argv = ["train", "--data", str(DATA / "prefs.jsonl"), "--checkpoint", str(saved_rm),
            "--set", "batch_size=4", "--lr", "1e-3", "--bf16"]  # fmt: skip
    assert main([*argv, "--epochs", "2", "--out", str(tmp_path / "e")]) == 0
    log, cfg, weights = _trained(tmp_path / "e")
    assert len(log) == cfg["steps"] == 3  # ceil(2 passes * 6 rows / batch 4)
    assert (cfg["lr_encoder"], cfg["lr_head"], cfg["bf16"]) == (1e-3, 2e-3, True)
    assert all(w.dtype == torch.float32 for w in weights.values())  # bf16 autocast, fp32 weights
    assert main([*argv, "--epochs", "9", "--max-steps", "2", "--out", str(tmp_path / "m")]) == 0
    assert len(_trained(tmp_path / "m")[0]) == 2  # --max-steps overrides --epochs


@pytest.mark.parametrize(
    ("flags", "needle"),
    [(["--grad-accum", "0"], "--grad-accum"), (["--grad-accum", "7"], "--grad-accum"),
     (["--epochs", "0"], "--epochs"), (["--max-steps", "0"], "--max-steps"),
     (["--lr", "-1"], "--lr")],
)  # fmt: skip
def test_bad_schedule_flag_is_one_error_line(flags, needle, saved_rm, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["train", "--data", str(DATA / "prefs.jsonl"), "--checkpoint", str(saved_rm),
            "--set", "batch_size=6", "--out", str(out), *flags]  # fmt: skip
    try:
        code = main(argv)
    except SystemExit as e:  # argparse refuses --grad-accum 0 itself
        code = e.code
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert code == 2 and len(errors) == 1 and needle in errors[0], errors
    assert not out.exists()
