"""The verbs on a user's files: train / sample / evaluate through ``main``, the checkpoint's
round trip, and one clear error per bad input (issue 65)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from masked_diffusion.cli import main as mdlm_main
from vadd.cli import main
from vadd.likelihood import iw_log_likelihood, valid_bound
from vadd.pretrained import VADDModel

from shared_core.testing import assert_usage_error

DATA = Path(__file__).parent / "data"
TINY = ["--set", "steps=6", "--set", "d_model=16", "--set", "n_heads=2", "--set", "n_layers=1",
        "--set", "latent_hidden=16", "--set", "warmup=2"]  # fmt: skip


def _train(tmp: Path, *extra: str, name: str = "ck") -> Path:
    out = tmp / name
    assert main(["train", "--out", str(out), "--runs", str(tmp / "runs"), *TINY, *extra]) == 0
    return out


@pytest.fixture(scope="module")
def text_ck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("text")
    return _train(tmp, "--data", str(DATA / "corpus.txt"), "--seq-len", "16")


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    return assert_usage_error(main, argv, capsys, "vadd")


def test_checkpoint_holds_the_latent_model_and_vocabulary(text_ck: Path) -> None:
    config = json.loads((text_ck / "config.json").read_text())
    assert config["data"]["alphabet"] == "".join(sorted(set((DATA / "corpus.txt").read_text())))
    assert config["model"]["latent_dim"] == 4
    model = VADDModel.from_pretrained(text_ck)
    assert model.recognition is not None


@pytest.mark.parametrize("sampler", ["latent", "latent-per-sample"])
def test_save_load_round_trip_gives_identical_samples(
    text_ck: Path, tmp_path: Path, sampler: str
) -> None:
    copy = tmp_path / "copy"
    VADDModel.from_pretrained(text_ck).save_pretrained(copy)
    texts = []
    for ck in (text_ck, copy):
        out = tmp_path / f"{ck.name}.txt"
        argv = ["sample", "--checkpoint", str(ck), "-n", "3", "--steps", "4", "--seed", "5",
                "--sampler", sampler, "--prompt", "the", "--out", str(out)]  # fmt: skip
        assert main(argv) == 0
        texts.append(out.read_text())
    assert texts[0] == texts[1] and texts[0].count("--- sample 2 ---\nthe") == 1


def test_evaluate_reports_the_valid_bound_and_the_iw_estimate(
    text_ck: Path, tmp_path: Path
) -> None:
    out = tmp_path / "m.json"
    argv = ["evaluate", "--checkpoint", str(text_ck), "--data", str(DATA / "valid.txt"),
            "--steps", "4", "--samples", "2", "--importance", "3", "--seed", "2", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    entry = json.loads(out.read_text())[str(DATA / "valid.txt")]
    model = VADDModel.from_pretrained(text_ck)
    text = (DATA / "valid.txt").read_text()
    alphabet = model.config.data.alphabet
    ids = torch.tensor([alphabet.index(c) for c in text[: len(text) // 16 * 16]]).view(-1, 16)
    bound = valid_bound(model, ids, 4, n_samples=2, seed=2).double().mean() / 16
    iw = -iw_log_likelihood(model, ids, 4, n_importance=3, seed=2).double().mean() / 16
    assert entry["nelbo_nats_per_token"] == pytest.approx(float(bound), rel=1e-6)
    assert entry["iw3_nll_nats_per_token"] == pytest.approx(float(iw), rel=1e-6)
    assert entry["bits_per_char"] == pytest.approx(float(bound) / math.log(2), rel=1e-6)
    assert entry["sampler_steps"] == 4


def test_latent_dim_zero_is_the_plain_masked_diffusion_model(tmp_path: Path) -> None:
    ck = _train(tmp_path, "--data", str(DATA / "digits.npz"), "--set", "latent_dim=0")
    model = VADDModel.from_pretrained(ck)
    assert model.recognition is None and model.cfg.grid == (8, 8)
    argv = [
        "sample",
        "--checkpoint",
        str(ck),
        "-n",
        "4",
        "--steps",
        "3",
        "--out",
        str(tmp_path / "g.png"),
    ]
    assert main(argv) == 0
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


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
    line = _error(
        capsys,
        ["sample", "--checkpoint", str(text_ck), "--prompt", "Q", "--out", str(tmp_path / "s.txt")],
    )
    assert "'Q'" in line
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
    assert "--steps" in _error(
        capsys,
        [
            "evaluate",
            "--checkpoint",
            str(text_ck),
            "--steps",
            "0",
            "--data",
            str(DATA / "valid.txt"),
        ],
    )
    assert "--importance" in _error(
        capsys,
        [
            "evaluate",
            "--checkpoint",
            str(text_ck),
            "--importance",
            "-1",
            "--data",
            str(DATA / "valid.txt"),
        ],
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
    assert "masked-diffusion" in line and "expected a vadd VADDModel checkpoint" in line
    shutil.rmtree(mdlm)
