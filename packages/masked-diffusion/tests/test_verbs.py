"""The verbs on a user's files: train / sample / evaluate through ``main``, the checkpoint's
round trip, and one clear error per bad input (issue 65)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from masked_diffusion.cli import main
from masked_diffusion.pretrained import MDLM
from masked_diffusion.verbs import mdlm_method

from shared_core.testing import assert_usage_error

DATA = Path(__file__).parent / "data"
TINY = ["--set", "steps=6", "--set", "d_model=16", "--set", "n_heads=2", "--set", "n_layers=1",
        "--set", "warmup=2", "--set", "checkpoint_every=3"]  # fmt: skip


def _train(tmp: Path, *extra: str, name: str = "ck") -> Path:
    out = tmp / name
    argv = ["train", "--out", str(out), "--runs", str(tmp / "runs"), *TINY, *extra]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def text_ck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("text")
    return _train(tmp, "--data", str(DATA / "corpus.txt"), "--seq-len", "16")


@pytest.fixture(scope="module")
def image_ck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("image")
    return _train(tmp, "--data", str(DATA / "digits.npz"), "--bits", "2")


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    return assert_usage_error(main, argv, capsys, "masked-diffusion")


def test_train_writes_a_checkpoint_with_the_char_vocabulary(text_ck: Path) -> None:
    config = json.loads((text_ck / "config.json").read_text())
    corpus = (DATA / "corpus.txt").read_text()
    assert config["data"] == {"kind": "text", "alphabet": "".join(sorted(set(corpus))),
                              "height": 0, "width": 0, "bits": 0}  # fmt: skip
    assert config["backbone"]["seq_len"] == 16
    assert (text_ck / "train_state.pt").is_file()
    model = MDLM.from_pretrained(text_ck)
    assert model.config.data.vocab_size == len(set(corpus))


def test_save_load_round_trip_gives_identical_samples(text_ck: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    MDLM.from_pretrained(text_ck).save_pretrained(copy)
    for ck, out in ((text_ck, "a.txt"), (copy, "b.txt")):
        argv = ["sample", "--checkpoint", str(ck), "-n", "3", "--steps", "5", "--seed", "7",
                "--out", str(tmp_path / out)]  # fmt: skip
        assert main(argv) == 0
    a, b = (tmp_path / "a.txt").read_text(), (tmp_path / "b.txt").read_text()
    assert a == b and a.count("--- sample") == 3
    argv[-1] = str(tmp_path / "c.txt")
    argv[argv.index("--seed") + 1] = "8"
    assert main(argv) == 0
    assert (tmp_path / "c.txt").read_text() != a  # the seed matters


def test_sample_keeps_the_prompt_and_both_samplers_run(text_ck: Path, tmp_path: Path) -> None:
    for sampler in ("ancestral", "confidence"):
        out = tmp_path / f"{sampler}.txt"
        argv = ["sample", "--checkpoint", str(text_ck), "-n", "2", "--steps", "4",
                "--sampler", sampler, "--prompt", "the ", "--out", str(out)]  # fmt: skip
        assert main(argv) == 0
        rows = out.read_text().split("--- sample ")[1:]
        assert len(rows) == 2
        assert all(r.split("---\n", 1)[1].startswith("the ") for r in rows)


def test_evaluate_reports_nelbo_and_bits_per_char(text_ck: Path, tmp_path: Path) -> None:
    out = tmp_path / "metrics.json"
    argv = ["evaluate", "--checkpoint", str(text_ck), "--data", str(DATA / "valid.txt"),
            "--samples", "2", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    entry = json.loads(out.read_text())[str(DATA / "valid.txt")]
    assert entry["rows"] == len((DATA / "valid.txt").read_text()) // 16
    assert entry["bits_per_char"] == pytest.approx(entry["nelbo_nats_per_token"] / np.log(2))
    # an untrained model predicts the uniform distribution: NELBO ~ log(V) with the exact weight
    assert 0 < entry["nelbo_nats_per_token"] < 2 * np.log(32)


def test_image_checkpoint_samples_a_png_and_an_npz(image_ck: Path, tmp_path: Path) -> None:
    config = json.loads((image_ck / "config.json").read_text())
    assert config["data"]["kind"] == "image" and config["data"]["bits"] == 2
    assert config["backbone"]["grid"] == [8, 8]
    png, npz = tmp_path / "grid.png", tmp_path / "rows.npz"
    for out in (png, npz):
        argv = [
            "sample",
            "--checkpoint",
            str(image_ck),
            "-n",
            "4",
            "--steps",
            "3",
            "--out",
            str(out),
        ]
        assert main(argv) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with np.load(npz) as f:
        assert f["images"].shape == (4, 8, 8) and f["tokens"].max() < 4
        assert set(np.unique(f["images"])) <= {0, 85, 170, 255}
    out = tmp_path / "m.json"
    argv = ["evaluate", "--checkpoint", str(image_ck), "--data", str(DATA / "digits_valid.npz"),
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert json.loads(out.read_text())[str(DATA / "digits_valid.npz")]["bits_per_dim"] > 0


def test_image_folder_with_size_trains(tmp_path: Path) -> None:
    from PIL import Image

    for i, size in enumerate([(6, 6), (8, 7), (6, 6)]):
        (tmp_path / "imgs" / "a").mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full(size[::-1], 40 * i, dtype=np.uint8)).save(
            tmp_path / "imgs" / "a" / f"{i}.png"
        )
    ck = _train(tmp_path, "--data", str(tmp_path / "imgs"), "--size", "4x4")
    assert json.loads((ck / "config.json").read_text())["data"]["height"] == 4


def test_resume_continues_from_the_train_state(tmp_path: Path) -> None:
    ck = _train(tmp_path, "--data", str(DATA / "corpus.txt"), "--seq-len", "16")
    from shared_core.checkpoint import load_checkpoint

    step = lambda: load_checkpoint(ck / "train_state.pt", model=MDLM.from_pretrained(ck))["step"]  # noqa: E731
    assert step() == 6
    argv = ["train", "--out", str(ck), "--runs", str(tmp_path / "runs"), *TINY, "--set",
            "steps=9", "--data", str(DATA / "corpus.txt"), "--seq-len", "16", "--resume"]  # fmt: skip
    assert main(argv) == 0
    assert step() == 9
    assert json.loads((ck / "provenance.json").read_text())["metrics"]["steps"] == 9


def test_tokenizer_folder_reuses_the_vocabulary(text_ck: Path, tmp_path: Path) -> None:
    ck = _train(
        tmp_path, "--data", str(DATA / "valid.txt"), "--seq-len", "16", "--tokenizer", str(text_ck)
    )
    read = lambda p: json.loads((p / "config.json").read_text())["data"]["alphabet"]  # noqa: E731
    assert read(ck) == read(text_ck)


# ---------------------------------------------------------------------------------------------
# bad input: one clear error each, nothing half-written


def test_empty_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.txt").write_text("")
    line = _error(
        capsys,
        [
            "train",
            "--data",
            str(tmp_path / "empty.txt"),
            "--out",
            str(tmp_path / "ck"),
            "--runs",
            str(tmp_path / "runs"),
        ],
    )
    assert "empty.txt" in line and "empty" in line
    assert not (tmp_path / "ck").exists()


def test_corpus_shorter_than_a_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "short.txt").write_text("abc")
    line = _error(
        capsys,
        [
            "train",
            "--data",
            str(tmp_path / "short.txt"),
            "--seq-len",
            "16",
            "--out",
            str(tmp_path / "ck"),
        ],
    )
    assert "--seq-len 16" in line


def test_character_outside_the_vocabulary(
    text_ck: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "v.txt").write_text(
        "the text\nhas a Capital letter in line two, and more text here\n"
    )
    line = _error(
        capsys, ["evaluate", "--checkpoint", str(text_ck), "--data", str(tmp_path / "v.txt")]
    )
    assert "line 2" in line and "'C'" in line and "vocabulary" in line
    line = _error(
        capsys,
        [
            "sample",
            "--checkpoint",
            str(text_ck),
            "--prompt",
            "Zebra",
            "--out",
            str(tmp_path / "s.txt"),
        ],
    )
    assert "--prompt" in line and "'Z'" in line
    assert not (tmp_path / "s.txt").exists()


def test_images_of_mixed_sizes_without_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from PIL import Image

    (tmp_path / "imgs" / "a").mkdir(parents=True)
    Image.fromarray(np.zeros((6, 6), dtype=np.uint8)).save(tmp_path / "imgs" / "a" / "0.png")
    Image.fromarray(np.zeros((7, 8), dtype=np.uint8)).save(tmp_path / "imgs" / "a" / "1.png")
    line = _error(
        capsys, ["train", "--data", str(tmp_path / "imgs"), "--out", str(tmp_path / "ck")]
    )
    assert "1.png" in line and "size" in line


def test_array_of_the_wrong_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "flat.npy", np.zeros((5, 64), dtype=np.uint8))
    line = _error(
        capsys, ["train", "--data", str(tmp_path / "flat.npy"), "--out", str(tmp_path / "ck")]
    )
    assert "rank 3" in line and "(5, 64)" in line


def test_steps_zero(text_ck: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _error(
        capsys,
        ["sample", "--checkpoint", str(text_ck), "--steps", "0", "--out", str(tmp_path / "s.txt")],
    )
    assert "--steps" in line and "0" in line
    line = _error(
        capsys,
        [
            "train",
            "--data",
            str(DATA / "corpus.txt"),
            "--set",
            "steps=0",
            "--out",
            str(tmp_path / "ck"),
        ],
    )
    assert "steps" in line


def test_checkpoint_of_another_package(
    text_ck: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    shutil.copytree(text_ck, other)
    prov = json.loads((other / "provenance.json").read_text())
    prov["package"], prov["class"] = "pgm-diffusion", "pgm.pretrained.PGM"
    (other / "provenance.json").write_text(json.dumps(prov))
    line = _error(capsys, ["sample", "--checkpoint", str(other), "--out", str(tmp_path / "s.txt")])
    assert "--checkpoint" in line and "pgm-diffusion" in line


def test_output_kind_must_match_the_data(
    text_ck: Path, image_ck: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ".txt" in _error(
        capsys, ["sample", "--checkpoint", str(text_ck), "--out", str(tmp_path / "g.png")]
    )
    assert ".png" in _error(
        capsys, ["sample", "--checkpoint", str(image_ck), "--out", str(tmp_path / "g.txt")]
    )
    assert "image" in _error(
        capsys, ["evaluate", "--checkpoint", str(image_ck), "--data", str(DATA / "valid.txt")]
    )


def test_method_is_the_papers_default() -> None:
    m = mdlm_method()
    assert next(iter(m.samplers)) == "ancestral" and m.model_class is MDLM


def test_train_from_a_checkpoint_keeps_its_vocabulary_and_sizes(
    text_ck: Path, tmp_path: Path
) -> None:
    ck = _train(tmp_path, "--data", str(DATA / "valid.txt"), "--checkpoint", str(text_ck))
    before, after = (json.loads((p / "config.json").read_text()) for p in (text_ck, ck))
    assert after == before
    w0 = MDLM.from_pretrained(text_ck).head.weight
    assert not bool((MDLM.from_pretrained(ck).head.weight == w0).all())  # it trained on
