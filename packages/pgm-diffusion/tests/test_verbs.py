"""The verbs on a user's files: train / sample / evaluate through ``main``, the checkpoint's
round trip, and one clear error per bad input (issue 65)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from masked_diffusion import get_schedule, nelbo
from masked_diffusion.cli import main as mdlm_main
from pgm.cli import main
from pgm.loss import as_denoiser
from pgm.pretrained import PGM

from shared_core.testing import assert_usage_error

DATA = Path(__file__).parent / "data"
TINY = ["--set", "steps=6", "--set", "d_model=16", "--set", "n_heads=2", "--set", "warmup=2"]


def _train(tmp: Path, *extra: str, name: str = "ck") -> Path:
    out = tmp / name
    assert main(["train", "--out", str(out), "--runs", str(tmp / "runs"), *TINY, *extra]) == 0
    return out


@pytest.fixture(scope="module")
def text_ck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("text")
    return _train(tmp, "--data", str(DATA / "corpus.txt"), "--seq-len", "16")


@pytest.fixture(scope="module")
def image_ck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("image")
    return _train(tmp, "--data", str(DATA / "digits.npz"), "--bits", "1")


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    return assert_usage_error(main, argv, capsys, "pgm-diffusion")


def test_checkpoint_holds_the_partition_model_and_vocabulary(text_ck: Path) -> None:
    config = json.loads((text_ck / "config.json").read_text())
    assert config["data"]["alphabet"] == "".join(sorted(set((DATA / "corpus.txt").read_text())))
    assert config["model"]["n_encoder"] == 1 and config["model"]["seq_len"] == 16
    assert isinstance(PGM.from_pretrained(text_ck), PGM)


@pytest.mark.parametrize("sampler", ["partition", "partition-confidence", "ancestral"])
def test_save_load_round_trip_gives_identical_samples(
    text_ck: Path, tmp_path: Path, sampler: str
) -> None:
    copy = tmp_path / "copy"
    PGM.from_pretrained(text_ck).save_pretrained(copy)
    texts = []
    for ck in (text_ck, copy):
        out = tmp_path / f"{ck.name}.txt"
        argv = ["sample", "--checkpoint", str(ck), "-n", "3", "--steps", "4", "--seed", "3",
                "--sampler", sampler, "--out", str(out)]  # fmt: skip
        assert main(argv) == 0
        texts.append(out.read_text())
    assert texts[0] == texts[1] and texts[0].count("--- sample") == 3


def test_evaluate_is_mdlms_estimator_on_the_full_length_mode(text_ck: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    argv = ["evaluate", "--checkpoint", str(text_ck), "--data", str(DATA / "valid.txt"),
            "--samples", "2", "--seed", "1", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    entry = json.loads(out.read_text())[str(DATA / "valid.txt")]
    model = PGM.from_pretrained(text_ck)
    text = (DATA / "valid.txt").read_text()
    alphabet = model.config.data.alphabet
    ids = torch.tensor([alphabet.index(c) for c in text[: len(text) // 16 * 16]]).view(-1, 16)
    want = nelbo(as_denoiser(model, len(alphabet)), ids, get_schedule("loglinear"),
                 len(alphabet), n_samples=2, seed=1)  # fmt: skip
    assert entry["nelbo_nats_per_token"] == pytest.approx(float(want), rel=1e-6)
    assert entry["bits_per_char"] == pytest.approx(float(want) / np.log(2), rel=1e-6)


def test_image_checkpoint_samples_a_grid_with_the_halton_order(
    image_ck: Path, tmp_path: Path
) -> None:
    assert json.loads((image_ck / "config.json").read_text())["model"]["grid"] == [8, 8]
    for out in (tmp_path / "grid.png", tmp_path / "rows.npz"):
        argv = [
            "sample",
            "--checkpoint",
            str(image_ck),
            "-n",
            "4",
            "--steps",
            "4",
            "--out",
            str(out),
        ]
        assert main(argv) == 0
    with np.load(tmp_path / "rows.npz") as f:
        assert f["images"].shape == (4, 8, 8) and set(np.unique(f["images"])) <= {0, 255}


# ---------------------------------------------------------------------------------------------
# bad input: one clear error each


def test_bad_inputs(text_ck: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    (tmp_path / "empty.txt").write_text("")
    assert "empty" in _error(
        capsys, ["train", "--data", str(tmp_path / "empty.txt"), "--out", str(tmp_path / "a")]
    )
    (tmp_path / "v.txt").write_text("plain text\nwith an X in it and some more words to fill it\n")
    line = _error(
        capsys, ["evaluate", "--checkpoint", str(text_ck), "--data", str(tmp_path / "v.txt")]
    )
    assert "line 2" in line and "'X'" in line
    line = _error(capsys, ["sample", "--checkpoint", str(text_ck), "--sampler", "ancestral",
                           "--prompt", "Q", "--out", str(tmp_path / "s.txt")])  # fmt: skip
    assert "'Q'" in line
    line = _error(
        capsys,
        [
            "sample",
            "--checkpoint",
            str(text_ck),
            "--prompt",
            "the",
            "--out",
            str(tmp_path / "s.txt"),
        ],
    )
    assert "--sampler ancestral" in line
    (tmp_path / "imgs" / "a").mkdir(parents=True)
    Image.fromarray(np.zeros((6, 6), dtype=np.uint8)).save(tmp_path / "imgs" / "a" / "0.png")
    Image.fromarray(np.zeros((7, 8), dtype=np.uint8)).save(tmp_path / "imgs" / "a" / "1.png")
    assert "size" in _error(
        capsys, ["train", "--data", str(tmp_path / "imgs"), "--out", str(tmp_path / "b")]
    )
    np.save(tmp_path / "flat.npy", np.zeros((5, 64), dtype=np.uint8))
    assert "rank 3" in _error(
        capsys, ["train", "--data", str(tmp_path / "flat.npy"), "--out", str(tmp_path / "c")]
    )
    assert "--steps" in _error(
        capsys,
        ["sample", "--checkpoint", str(text_ck), "--steps", "0", "--out", str(tmp_path / "s.txt")],
    )
    assert not (tmp_path / "s.txt").exists()
    assert not any((tmp_path / d).exists() for d in "abc")


def test_checkpoint_of_another_package(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mdlm = tmp_path / "mdlm"
    argv = ["train", "--data", str(DATA / "corpus.txt"), "--seq-len", "16", "--out", str(mdlm),
            "--runs", str(tmp_path / "runs"), "--set", "steps=2", "--set", "d_model=16",
            "--set", "n_heads=2", "--set", "n_layers=1"]  # fmt: skip
    assert mdlm_main(argv) == 0
    line = _error(capsys, ["sample", "--checkpoint", str(mdlm), "--out", str(tmp_path / "s.txt")])
    assert "masked-diffusion" in line and "expected a pgm-diffusion PGM checkpoint" in line
    shutil.rmtree(mdlm)
