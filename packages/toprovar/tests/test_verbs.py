"""The verbs on a user's image folder: train, calibrate, generate, through `main([...])`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from PIL import Image
from toprovar.cli import main

from shared_core.testing import assert_usage_error

TEXTURES = Path(__file__).parent / "data" / "textures"  # brick/grass/gravel, 4 16x16 PNGs each
TINY = ["--set", "vq_steps=6", "--set", "var_steps=6", "--set", "batch=8", "--set", "dim=32",
        "--set", "depth=2", "--set", "heads=2", "--set", "hidden=8"]  # fmt: skip


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ckpt")
    out = root / "model"
    argv = ["train", "--data", str(TEXTURES), "--out", str(out), "--runs", str(root / "runs")]
    assert main([*argv, *TINY]) == 0
    assert main(["calibrate", "--checkpoint", str(out), "--set", "calib_images=6"]) == 0
    return out


def test_train_saves_both_models_with_the_class_names(checkpoint: Path) -> None:
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["classes"] == ["brick", "grass", "gravel"] and config["side"] == 16
    assert (checkpoint / "calibration.safetensors").is_file()
    (run,) = (checkpoint.parent / "runs" / "toprovar").iterdir()
    metrics = json.loads((run / "metrics.json").read_text())["metrics"]
    assert metrics["images"] == 12 and metrics["checkpoint"] == str(checkpoint)


def test_calibration_round_trips(checkpoint: Path) -> None:
    from toprovar.calibration_file import load_calibration, save_calibration

    cal = load_calibration(checkpoint)
    assert cal.n_scales == 4 and cal.source[0].shape[0] == 6
    save_calibration(cal, checkpoint)
    again = load_calibration(checkpoint)
    assert torch.equal(again.rho, cal.rho) and again.tau == cal.tau and again.depth == cal.depth
    assert torch.allclose(again.score, cal.score, equal_nan=True)


def test_save_load_round_trip_gives_identical_samples(checkpoint: Path, tmp_path: Path) -> None:
    from toprovar.generation import generate
    from toprovar.generator import VARGenerator

    model = VARGenerator.from_pretrained(checkpoint)
    labels = torch.arange(4) % 3
    with torch.no_grad():
        first = generate(model.var, model.vq, labels, None, seed=3).images
        model.save_pretrained(tmp_path / "again")
        other = VARGenerator.from_pretrained(tmp_path / "again")
        second = generate(other.var, other.vq, labels, None, seed=3).images
    assert torch.equal(first, second)


@pytest.mark.parametrize("policy", ["toprovar", "topk", "fastvar", "skipvar", "none"])
def test_generate_prints_macs_cpu_and_speedup(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str
) -> None:
    out = tmp_path / "grid.png"
    argv = ["generate", "--checkpoint", str(checkpoint), "--policy", policy, "-n", "5"]
    assert main([*argv, "--out", str(out), "--set", "macs_images=1"]) == 0
    line = capsys.readouterr().out
    assert f"{policy}: 5 images in" in line and "M MACs per image" in line and "speed-up" in line
    with Image.open(out) as grid:
        assert grid.size[0] > grid.size[1]  # five images in one row
    if policy == "skipvar":  # one scale fewer: strictly fewer MACs than unpruned
        macs = [float(t.split(" M MACs")[0].split()[-1]) for t in line.split(";")[:2]]
        assert macs[0] < macs[1]


def test_generate_one_class_and_merge_results(checkpoint: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    for policy in ("none", "skipvar"):
        argv = ["generate", "--checkpoint", str(checkpoint), "--policy", policy, "-n", "2"]
        argv += ["--label", "grass", "--out", str(tmp_path / "g.png"), "--results", str(results)]
        assert main(argv) == 0
    policies = json.loads(results.read_text())["policies"]
    assert set(policies) == {"none", "skipvar"} and policies["none"]["speedup"] > 0
    assert policies["skipvar"]["mac_reduction"] > 1 == policies["none"]["mac_reduction"]


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    return assert_usage_error(main, argv, capsys, "toprovar")


def test_bad_inputs_are_one_clear_error(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mixed = tmp_path / "mixed"
    shutil.copytree(TEXTURES, mixed)
    Image.new("L", (20, 20)).save(mixed / "grass" / "big.png")
    empty = tmp_path / "empty"
    (empty / "a").mkdir(parents=True)
    oblong = tmp_path / "oblong" / "a"
    oblong.mkdir(parents=True)
    Image.new("L", (16, 8)).save(oblong / "x.png")
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text("{}")
    (other / "provenance.json").write_text(
        json.dumps({"format": "shared-core-checkpoint/1", "package": "convt3", "class": "convt3.torch.forecaster.Forecaster",
                    "version": "0.4.0"})
    )  # fmt: skip
    train = ["train", "--out", str(tmp_path / "new"), "--runs", str(tmp_path / "runs")]
    assert "pass --size" in _error(capsys, [*train, "--data", str(mixed)])
    assert main([*train, "--data", str(mixed), "--size", "16", *TINY]) == 0  # --size resizes
    shutil.rmtree(tmp_path / "new")
    assert "holds no record" in _error(capsys, [*train, "--data", str(empty)])
    assert "square" in _error(capsys, [*train, "--data", str(oblong.parent)])
    assert "--size: expected an even side" in _error(
        capsys, [*train, "--data", str(TEXTURES), "--size", "7"]
    )
    assert not (tmp_path / "new").exists()
    gen = ["generate", "--out", str(tmp_path / "g.png")]
    assert "convt3" in _error(capsys, [*gen, "--checkpoint", str(other)])
    assert "-n: expected an int >= 1, got 0" in _error(
        capsys, [*gen, "--checkpoint", str(checkpoint), "-n", "0"]
    )
    assert "--label" in _error(capsys, [*gen, "--checkpoint", str(checkpoint), "--label", "cat"])
    assert not (tmp_path / "g.png").exists()
    uncalibrated = tmp_path / "uncalibrated"
    shutil.copytree(checkpoint, uncalibrated)
    (uncalibrated / "calibration.safetensors").unlink()
    assert "toprovar calibrate" in _error(capsys, [*gen, "--checkpoint", str(uncalibrated)])
    retrained = tmp_path / "retrained"
    shutil.copytree(checkpoint, retrained)
    runs = ["--runs", str(tmp_path / "runs")]
    assert (
        main(["train", "--data", str(TEXTURES), "--out", str(retrained), "--resume", *runs, *TINY])
        == 0
    )
    # training replaces the whole folder: the old statistics are gone, not silently reused
    assert "toprovar calibrate" in _error(capsys, [*gen, "--checkpoint", str(retrained)])
    shutil.copy(checkpoint / "calibration.safetensors", retrained)  # another model's statistics
    assert "trained again" in _error(capsys, [*gen, "--checkpoint", str(retrained)])
    assert "calib_images" in _error(
        capsys, ["calibrate", "--checkpoint", str(checkpoint), "--set", "calib_images=0"]
    )
