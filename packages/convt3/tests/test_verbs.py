"""The verbs on a user's own sequences: train, rollout, evaluate, through `main([...])`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("PIL")

from convt3.cli import main

from shared_core.testing import assert_usage_error

DATA = Path(__file__).parent / "data"
SEQUENCES = DATA / "advection8.npz"  # (4, 10, 1, 8, 8): advection-diffusion, unforced
START = DATA / "start8.npz"  # (2, 4, 1, 8, 8): the first 4 frames of two of them


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ckpt") / "model"
    runs = out.parent / "runs"
    argv = ["train", "--data", str(SEQUENCES), "--out", str(out), "--runs", str(runs)]
    assert main([*argv, "--set", "steps=8"]) == 0
    return out


def test_train_writes_a_checkpoint_and_a_run(checkpoint: Path) -> None:
    assert {"config.json", "model.safetensors", "provenance.json", "README.md"} <= {
        p.name for p in checkpoint.iterdir()
    }
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["grid"] == [8, 8] and config["predictor"]["model"] == "convt3"
    (run,) = (checkpoint.parent / "runs" / "convt3").iterdir()
    assert json.loads((run / "metrics.json").read_text())["metrics"]["checkpoint"] == str(
        checkpoint
    )


def test_save_load_round_trip_gives_identical_rollouts(checkpoint: Path, tmp_path: Path) -> None:
    import torch
    from convt3.torch.forecaster import Forecaster

    model = Forecaster.from_pretrained(checkpoint)
    context = torch.from_numpy(np.load(START)["sequences"])
    first = model.rollout(context, 6)
    model.save_pretrained(tmp_path / "again")
    again = Forecaster.from_pretrained(tmp_path / "again").rollout(context, 6)
    assert torch.equal(first, again)
    assert main(["rollout", "--checkpoint", str(checkpoint), "--data", str(START),
                 "--steps", "6", "--out", str(tmp_path / "a.npz")]) == 0  # fmt: skip
    assert np.array_equal(np.load(tmp_path / "a.npz")["rollout"], first.numpy())


def test_rollout_writes_frames_a_gif_and_a_strip(checkpoint: Path, tmp_path: Path) -> None:
    from PIL import Image

    out = tmp_path / "roll.npz"
    argv = ["rollout", "--checkpoint", str(checkpoint), "--data", str(START), "--steps", "5"]
    assert main([*argv, "--out", str(out)]) == 0
    pred = np.load(out)["rollout"]
    assert pred.shape == (2, 5, 1, 8, 8) and np.all(np.isfinite(pred))
    with Image.open(out.with_suffix(".gif")) as gif:
        assert gif.n_frames == 4 + 5
    with Image.open(out.with_suffix(".png")) as png:
        assert png.size[0] > 9 * png.size[1]  # nine frames side by side


def test_rollout_runs_on_another_grid(checkpoint: Path, tmp_path: Path) -> None:
    start = tmp_path / "start12.npz"
    np.savez(start, x=np.random.default_rng(0).normal(size=(1, 3, 1, 12, 5)).astype(np.float32))
    out = tmp_path / "r.npz"
    argv = ["rollout", "--checkpoint", str(checkpoint), "--data", str(start), "--steps", "2"]
    assert main([*argv, "--out", str(out)]) == 0
    assert np.load(out)["rollout"].shape == (1, 2, 1, 12, 5)


def test_evaluate_scores_per_step_beside_persistence(checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    argv = ["evaluate", "--checkpoint", str(checkpoint), "--data", str(SEQUENCES)]
    assert main([*argv, "--context", "4", "--baseline", str(checkpoint), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["steps"] == 6 and result["context"] == 4
    rows = result["models"]
    assert set(rows) == {"model: convt3", "baseline: convt3", "persistence"}
    assert rows["model: convt3"] == rows["baseline: convt3"]
    assert all(len(r["mse"]) == 6 for r in rows.values())
    # persistence's first step is the mean squared change of one frame, computed here directly
    x = np.load(SEQUENCES)["sequences"]
    assert rows["persistence"]["mse"][0] == pytest.approx(float(((x[:, 4] - x[:, 3]) ** 2).mean()))


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    return assert_usage_error(main, argv, capsys, "convt3")


def test_bad_inputs_are_one_clear_error(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rank4 = tmp_path / "rank4.npz"
    np.savez(rank4, x=np.zeros((2, 5, 8, 8), np.float32))
    empty = tmp_path / "empty.npz"
    np.savez(empty, x=np.zeros((0, 5, 1, 8, 8), np.float32))
    one_frame = tmp_path / "one.npy"
    np.save(one_frame, np.zeros((2, 1, 1, 8, 8), np.float32))
    two_channels = tmp_path / "two.npy"
    np.save(two_channels, np.zeros((2, 3, 2, 8, 8), np.float32))
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text("{}")
    (other / "provenance.json").write_text(
        json.dumps(
            {
                "format": "shared-core-checkpoint/1",
                "package": "toprovar",
                "class": "toprovar.model.VAR",
                "version": "0.3.1",
            }
        )
    )
    train = ["train", "--out", str(tmp_path / "new"), "--runs", str(tmp_path / "runs")]
    roll = ["rollout", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "r.npz")]
    assert "rank 5" in _error(capsys, [*train, "--data", str(rank4)])
    assert "empty" in _error(capsys, [*train, "--data", str(empty)])
    assert "at least 2" in _error(capsys, [*train, "--data", str(one_frame)])
    assert "--set: model" in _error(capsys, [*train, "--data", str(SEQUENCES), "--set", "model=x"])
    assert not (tmp_path / "new").exists()
    assert "--steps: expected an int >= 1, got 0" in _error(
        capsys, [*roll, "--data", str(START), "--steps", "0"]
    )
    assert "2 channels" in _error(capsys, [*roll, "--data", str(two_channels), "--steps", "2"])
    assert "toprovar" in _error(
        capsys,
        ["rollout", "--checkpoint", str(other), "--data", str(START), "--steps", "2",
         "--out", str(tmp_path / "r.npz")],
    )  # fmt: skip
    assert not (tmp_path / "r.npz").exists()
    evaluate = ["evaluate", "--checkpoint", str(checkpoint), "--data", str(SEQUENCES)]
    assert "at least 11" in _error(capsys, [*evaluate, "--context", "10"])
    assert "need 14 frames" in _error(capsys, [*evaluate, "--context", "4", "--steps", "10"])


def test_resume_continues_the_model_in_out(checkpoint: Path, tmp_path: Path) -> None:
    import shutil

    import torch
    from convt3.torch.forecaster import Forecaster

    again = tmp_path / "again"
    shutil.copytree(checkpoint, again)
    argv = ["train", "--data", str(SEQUENCES), "--out", str(again), "--resume"]
    assert main([*argv, "--runs", str(tmp_path / "runs"), "--set", "steps=2"]) == 0
    before, after = Forecaster.from_pretrained(checkpoint), Forecaster.from_pretrained(again)
    assert before.config == after.config  # the same model (normalisation kept), trained on
    assert any(
        not torch.equal(a, b)
        for a, b in zip(before.state_dict().values(), after.state_dict().values(), strict=True)
    )
