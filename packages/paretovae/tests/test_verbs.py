"""`fit`, `encode` and `decode` on a user's matrix: the saved folder, a save/load round trip that
gives identical codes and reconstructions, the denoising preset, one clear error per bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from paretovae.cli import main
from paretovae.model import HeavyTailVAE

COUNTS = Path(__file__).parent / "data" / "counts.csv"  # 300 documents x 8 word counts
FAST = ["--set", "steps=30"]


def _read(path: Path) -> tuple[list[str], np.ndarray]:
    rows = list(csv.reader(path.open()))
    return rows[0], np.array(rows[1:], dtype=float)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pvae") / "model"
    assert main(["fit", "--data", str(COUNTS), "--out", str(out), *FAST]) == 0
    return out


def test_fit_saves_model_latents_and_reconstructions(model_dir: Path) -> None:
    for name in ("config.json", "model.safetensors", "provenance.json", "README.md"):
        assert (model_dir / name).is_file(), name
    header, z = _read(model_dir / "latents.csv")
    assert header == ["z0", "z1"] and z.shape == (300, 2)
    header, x_hat = _read(model_dir / "reconstructions.csv")
    assert header == [f"w{j}" for j in range(8)] and x_hat.shape == (300, 8)


def test_round_trip_encode_decode_is_identical(model_dir: Path, tmp_path: Path) -> None:
    z_path, x_path = tmp_path / "z.csv", tmp_path / "x.csv"
    assert (
        main(
            ["encode", "--checkpoint", str(model_dir), "--data", str(COUNTS), "--out", str(z_path)]
        )
        == 0
    )
    assert (
        main(
            ["decode", "--checkpoint", str(model_dir), "--data", str(z_path), "--out", str(x_path)]
        )
        == 0
    )
    _, z = _read(z_path)
    _, z_fit = _read(model_dir / "latents.csv")
    np.testing.assert_array_equal(z, z_fit)  # the loaded model encodes as the trained one did
    _, x = _read(x_path)
    _, x_fit = _read(model_dir / "reconstructions.csv")
    np.testing.assert_allclose(x, x_fit, rtol=1e-4, atol=1e-5)  # through 6-digit CSV codes
    model = HeavyTailVAE.from_pretrained(model_dir)
    assert model.config.family == "pareto-t" and model.config.n == 8


def test_denoising_preset_sets_beta_to_zero(tmp_path: Path, capsys) -> None:
    out = tmp_path / "m"
    assert main(["fit", "--data", str(COUNTS), "--out", str(out), *FAST,
                 "--set", "preset=denoising", "--set", "decoder=sympareto"]) == 0  # fmt: skip
    assert "pareto-sympareto" in capsys.readouterr().out
    model = HeavyTailVAE.from_pretrained(out)
    assert model.config.beta == 0.0 and model.config.l1_weight == 0.0


def _file(tmp_path: Path, body: str, name: str = "x.csv") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


BAD = {
    "negative count": ("a,b\n1,2\n3,-1\n", [], "x.csv, line 3, column 'b': a counts matrix has entries >= 0"),
    "text cell": ("a,b\n1,2\n3,many\n", [], "column 'b' is not numeric"),
    "empty cell": ("a,b\n1,2\n3,\n", [], "line 3: column 'b' is empty"),
    "one row": ("a,b\n1,2\n", [], "expected at least 2 rows"),
    "unknown preset": ("a,b\n1,2\n3,4\n", ["--set", "preset=fast"], "preset: expected one of ['denoising']"),
    "unknown decoder": ("a,b\n1,2\n3,4\n", ["--set", "decoder=gauss"], "decoder: expected 't' or 'sympareto'"),
    "unknown transform": ("a,b\n1,2\n3,4\n", ["--set", "transform=sqrt"], "transform: expected one of ['none', 'log1p']"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_error_line(case: str, tmp_path: Path, capsys) -> None:
    body, flags, message = BAD[case]
    path = _file(tmp_path, body)
    assert main(["fit", "--data", str(path), "--out", str(tmp_path / "m"), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0] and message in err[0], err


def test_real_flag_accepts_negative_entries_and_npy(tmp_path: Path) -> None:
    x = np.random.default_rng(0).standard_t(3, size=(64, 2))
    path = tmp_path / "x.npy"
    np.save(path, x)
    assert main(["fit", "--data", str(path), "--out", str(tmp_path / "m"), *FAST]) == 2
    assert main(["fit", "--data", str(path), "--out", str(tmp_path / "m"), "--real", *FAST]) == 0
    _, z = _read(tmp_path / "m" / "latents.csv")
    model = HeavyTailVAE.from_pretrained(tmp_path / "m")
    with torch.no_grad():
        mu, _ = model.encode(torch.as_tensor(x, dtype=torch.float32))
    np.testing.assert_allclose(z, mu.numpy(), rtol=1e-5, atol=1e-6)


def _large_counts(tmp_path: Path) -> tuple[Path, np.ndarray]:
    # 200 documents x 6 counts with Pareto-tailed sizes up to tens of thousands
    rng = np.random.default_rng(0)
    x = np.floor(rng.pareto(1.5, size=(200, 6)) * 2000.0)
    path = tmp_path / "big.csv"
    body = "a,b,c,d,e,f\n" + "".join(",".join(f"{v:.0f}" for v in row) + "\n" for row in x)
    path.write_text(body)
    return path, x


def test_raw_counts_in_the_thousands_stop_with_one_error_naming_log1p(
    tmp_path: Path, capsys
) -> None:
    path, x = _large_counts(tmp_path)
    assert x.max() > 10_000
    assert main(["fit", "--data", str(path), "--out", str(tmp_path / "m"), *FAST]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # the progress lines, then the error
    errors = [line for line in err if "error:" in line]
    assert len(errors) == 1 and errors[0] == err[-1], err
    assert "error: big.csv: x: the loss is not finite" in err[-1], err
    assert "transform=log1p" in err[-1]
    assert not (tmp_path / "m" / "model.safetensors").exists()


def test_log1p_transform_trains_on_large_counts_and_round_trips(tmp_path: Path) -> None:
    path, x = _large_counts(tmp_path)
    out = tmp_path / "m"
    assert (
        main(["fit", "--data", str(path), "--out", str(out), *FAST, "--set", "transform=log1p"])
        == 0
    )
    assert json.loads((out / "preprocessing.json").read_text()) == {"transform": "log1p"}
    _, x_hat = _read(out / "reconstructions.csv")
    assert np.isfinite(x_hat).all() and x_hat.shape == x.shape
    model = HeavyTailVAE.from_pretrained(out)
    with torch.no_grad():  # the model reads log(1 + x); reconstructions come back as counts
        mu, _ = model.encode(torch.as_tensor(np.log1p(x), dtype=torch.float32))
        y = model.decode(mu).numpy()
    np.testing.assert_allclose(x_hat, np.expm1(y), rtol=1e-4, atol=1e-4)
    z_path, x_path = tmp_path / "z.csv", tmp_path / "x.csv"
    assert (
        main(["encode", "--checkpoint", str(out), "--data", str(path), "--out", str(z_path)]) == 0
    )
    assert (
        main(["decode", "--checkpoint", str(out), "--data", str(z_path), "--out", str(x_path)]) == 0
    )
    _, z = _read(z_path)
    np.testing.assert_allclose(z, mu.numpy(), rtol=1e-5, atol=1e-6)
    _, x_dec = _read(x_path)
    np.testing.assert_allclose(x_dec, x_hat, rtol=1e-3, atol=1e-3)  # through 6-digit CSV codes
