import json
import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest

from shared_core.cli import make_main
from shared_core.verbs import (
    VerbArgs,
    evaluate_command,
    predict_command,
    record_checkpoint,
    sample_command,
    train_command,
)


@dataclass(frozen=True)
class ToyConfig:
    steps: int = 200
    lr: float = 0.1


def _xy(path):
    rows = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return rows[:, :-1], rows[:, -1]


def toy_train(args: VerbArgs):
    """Least squares by gradient descent through shared_core.train.fit; weights as JSON."""
    import torch

    from shared_core.report import Run
    from shared_core.train import TrainConfig, fit

    x, y = (torch.tensor(a, dtype=torch.float64) for a in _xy(args.data_path))
    model = torch.nn.Linear(x.shape[1], 1).double()
    cfg = TrainConfig(steps=args.config.steps, lr=args.config.lr, weight_decay=0.0,
                      schedule="constant")  # fmt: skip
    loss = lambda m, b: ((m(b[0]).squeeze(-1) - b[1]) ** 2).mean()  # noqa: E731
    fit(model, loss, lambda step: (x, y), cfg, show_progress=False, device="cpu")
    args.out.mkdir(parents=True)
    weights = {"w": model.weight.detach().tolist()[0], "b": model.bias.item()}
    (args.out / "weights.json").write_text(json.dumps(weights))
    run = Run("toy", args.config, out=args.runs)
    record_checkpoint(run, args.out)
    run.finish()


def toy_predict(args: VerbArgs):
    weights = json.loads((args.checkpoint / "weights.json").read_text())
    x, _ = _xy(args.data_path)
    np.savetxt(args.out, x @ np.array(weights["w"]) + weights["b"], delimiter=",")


@pytest.fixture
def toy(monkeypatch):
    module = types.ModuleType("toy_verbs")
    module.train, module.predict, module.ToyConfig = toy_train, toy_predict, ToyConfig
    monkeypatch.setitem(sys.modules, "toy_verbs", module)
    return make_main("toy", [
        train_command("toy_verbs:train", "fit the toy", config="toy_verbs:ToyConfig"),
        predict_command("toy_verbs:predict", "predict with the toy"),
    ], version="0")  # fmt: skip


def test_train_then_predict_through_make_main(toy, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 2))
    data = tmp_path / "train.csv"
    np.savetxt(data, np.c_[x, x @ [2.0, -1.0] + 0.5], delimiter=",", header="a,b,y", comments="")
    ckpt, runs = tmp_path / "model", tmp_path / "runs"
    argv = ["train", "--data", str(data), "--out", str(ckpt), "--runs", str(runs),
            "--set", "steps=300", "--threads", "1"]  # fmt: skip
    assert toy(argv) == 0
    (report,) = (runs / "toy").iterdir()
    assert report.name.endswith("-train")
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["metrics"]["checkpoint"] == str(ckpt.resolve())
    assert metrics["config"]["steps"] == 300
    pred = tmp_path / "pred.csv"
    assert toy(["predict", "--checkpoint", str(ckpt), "--data", str(data), "--out", str(pred)]) == 0
    np.testing.assert_allclose(np.loadtxt(pred, delimiter=","), x @ [2.0, -1.0] + 0.5, atol=0.02)
    # a second train into the same folder is refused unless it resumes
    assert toy(argv) == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--data", "{tmp}/none.csv", "--out", "{tmp}/m"], "--data: no file or folder"),
        (["predict", "--checkpoint", "{tmp}/none", "--data", "{tmp}/d.csv"], "--checkpoint: no folder"),
        (["train", "--data", "{tmp}/d.csv", "--out", "{tmp}/m", "--set", "steps=x"],
         "--set steps: expected int, got 'x'"),
        (["train", "--data", "{tmp}/d.csv", "--out", "{tmp}/m", "--set", "lr"],
         "--set: expected key=value"),
    ],
)  # fmt: skip
def test_bad_verb_input_is_one_error_line(toy, tmp_path, capsys, argv, message):
    (tmp_path / "d.csv").write_text("a,y\n1,2\n")
    assert toy([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("toy: error: ") and message in err[-1]


def test_each_verb_takes_the_flags_its_slots_ask_for(tmp_path):
    seen = []
    main = make_main("demo", [
        train_command(seen.append, "t", many=True),
        sample_command(seen.append, "s", name="generate"),
        predict_command(seen.append, "p", name="score"),
        evaluate_command(seen.append, "e", options=lambda p: p.add_argument("--k", type=int)),
    ], version="0")  # fmt: skip
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("x")
    b.write_text("y")
    assert main(["train", "--data", str(a), "--data", str(b), "--out", str(tmp_path / "m"),
                 "--seed", "3", "--name", "first"]) == 0  # fmt: skip
    assert seen[-1] == VerbArgs("train", (a, b), None, tmp_path / "m", seed=3, name="first")
    assert main(["generate", "--checkpoint", str(tmp_path), "--out", str(b)]) == 0
    assert (seen[-1].command, seen[-1].data, seen[-1].checkpoint) == ("generate", (), tmp_path)
    assert main(["score", "--checkpoint", str(tmp_path), "--data", str(a), "--skip-invalid"]) == 0
    assert seen[-1].skip_invalid and seen[-1].data_path == a
    assert main(["evaluate", "--data", str(a), "--data", str(b), "--k", "4"]) == 0
    assert seen[-1].extra == {"k": 4}
    for argv in (["generate", "--out", str(b)], ["score", "--checkpoint", str(tmp_path)],
                 ["generate", "--checkpoint", str(tmp_path), "--out", str(b), "--resume"]):  # fmt: skip
        with pytest.raises(SystemExit):
            main(argv)


def test_help_names_the_common_flags(capsys):
    main = make_main("demo", [train_command(lambda a: None, "t", config=ToyConfig)], version="0")
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    for flag in ("--data", "--out", "--checkpoint", "--config", "--set", "--resume", "--device",
                 "--threads", "--seed", "--name", "--runs", "--skip-invalid"):  # fmt: skip
        assert flag in text


def test_any_verb_with_resume_refuses_a_non_empty_out(tmp_path, capsys):
    """A package's own training verb (nextquill's train-reference) guards --out like train."""
    from shared_core.verbs import Slots, verb_command

    calls = []
    slots = Slots(data="required", out="required", resume=True)
    main = make_main("toy", [verb_command("train-reference", calls.append, "h", slots)],
                     version="0")  # fmt: skip
    data, out = tmp_path / "d.csv", tmp_path / "m"
    data.write_text("x\n1\n")
    out.mkdir()
    (out / "weights").write_text("w")
    argv = ["train-reference", "--data", str(data), "--out", str(out)]
    assert main(argv) == 2 and "pass --resume" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0 and calls[0].resume
