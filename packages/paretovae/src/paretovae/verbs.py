"""The verbs on a user's own matrix: ``fit``, ``encode`` and ``decode``.

``fit --data X.csv|X.npy|X.npz --out DIR`` trains ParetoVAE on the rows of the matrix (a CSV's
numeric columns, or a 2-D array), saves it with `shared_core.hub` (config.json,
model.safetensors, provenance.json, a model card), writes the latent means ``latents.csv``
and the reconstructions ``reconstructions.csv`` into DIR, and prints the tail diagnostics the
README reports (`metrics.reconstruction_metrics`: sliced Wasserstein of all points and of the
top 10 %, tail MMD, tail mass ratio). ``encode`` writes latent means of a matrix, ``decode``
the decoder's means of latent codes.

The data are counts by default (the paper's word-frequency and degree tasks): a negative
entry is an error unless ``--real`` says the matrix is real-valued. The model reads the data as
given (the paper states no preprocessing); the encoder has no clamp, so raw counts in the
thousands overflow it and ``fit`` stops with an error saying so. ``--set transform=log1p``
trains on ``log(1 + x)`` instead (as ``reproduce``'s degree task): the folder records it in
``preprocessing.json``, ``encode`` applies it, and ``decode`` and ``reconstructions.csv`` map
back with ``exp(y) - 1``.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.atomic import atomic_write_text
from shared_core.cli import UsageError
from shared_core.verbs import VerbArgs

__all__ = ["PRESETS", "TRANSFORMS", "FitSettings", "decode", "encode", "fit", "read_matrix"]

PRESETS: dict[str, dict[str, Any]] = {
    # The l1 term on the latent means (beta, Theorem 2.1's constant by default) sparsifies the
    # codes but, on salt-and-pepper denoising at small scale, drops PSNR from 12.16 dB
    # (beta = 0) to 9.41 dB (README, "The denoising reversal at small"): for denoising, or
    # whenever reconstruction matters more than sparse codes, train without it.
    "denoising": {"beta": 0.0},
}
# what the model is trained on: the data as given (default; the paper states no preprocessing)
# or log(1 + x), for counts in the thousands that overflow the unclamped encoder
TRANSFORMS = ("none", "log1p")
PREPROCESSING = "preprocessing.json"  # {"transform": ...} beside the saved model


@dataclass
class FitSettings:
    """What ``--set key=value`` overrides; the defaults are the paper's ParetoVAE."""

    decoder: str = "t"  # "t" (pareto-t) or "sympareto" (pareto-sympareto)
    latent: int = 2  # latent dimension m
    hidden: int = 64  # width of the two hidden layers
    nu: float = 5.0  # prior tail index
    beta: float | None = None  # l1 weight on mu; None: Theorem 2.1's constant (the paper's)
    recon_sigma: float = 1.0  # decoder scale s
    steps: int = 500
    lr: float = 2e-3
    batch_size: int = 128
    preset: str = ""  # "" or a name in PRESETS ("denoising": beta = 0)
    transform: str = "none"  # "none" (the data as given) or "log1p" (train on log(1 + x))


def read_matrix(path: Path, counts: bool) -> tuple[np.ndarray, list[str]]:
    """``(rows, columns)`` float matrix and its column names from a CSV (every column, which
    must be numeric) or a 2-D ``.npy``/``.npz`` array; with `counts`, every entry must be >= 0."""
    from shared_core.data.arrays import read_array
    from shared_core.data.tables import read_frame, read_table

    if path.suffix.lower() in (".npy", ".npz"):
        x = read_array(path, ndim=2).astype(np.float64)
        names = [f"x{j}" for j in range(x.shape[1])]
        where = lambda i, j: f"{path.name}[{i}, {j}]"  # noqa: E731
    else:
        names = [str(c) for c in read_frame(path).columns]
        table = read_table(path, features=names)
        x = table.features
        where = lambda i, j: f"{path.name}, line {table.records[i]}, column {names[j]!r}"  # noqa: E731
    bad = np.argwhere(~np.isfinite(x))
    if len(bad):
        i, j = bad[0]
        raise UsageError(f"{where(i, j)}: expected a finite number, got {x[i, j]}")
    if counts:
        negative = np.argwhere(x < 0)
        if len(negative):
            i, j = negative[0]
            raise UsageError(
                f"{where(i, j)}: a counts matrix has entries >= 0, got {x[i, j]:g} "
                f"({len(negative)} negative entries); pass --real for real-valued data"
            )
    if len(x) < 2:
        raise UsageError(f"data: expected at least 2 rows to train on, got {len(x)}")
    return x, names


def _config(settings: FitSettings, n: int) -> Any:
    from paretovae.model import VAEConfig

    if settings.preset and settings.preset not in PRESETS:
        raise UsageError(
            f"preset: expected one of {sorted(PRESETS)} or '', got {settings.preset!r}"
        )
    if settings.decoder not in ("t", "sympareto"):
        raise UsageError(f"decoder: expected 't' or 'sympareto', got {settings.decoder!r}")
    s = replace(settings, **PRESETS.get(settings.preset, {}))
    try:
        return VAEConfig(
            family=f"pareto-{s.decoder}", n=n, m=s.latent, hidden=s.hidden, nu=s.nu,
            beta=s.beta, recon_sigma=s.recon_sigma,
        )  # fmt: skip
    except ValueError as e:
        raise UsageError(str(e)) from None


def _write_csv(path: Path, header: list[str], rows: np.ndarray) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[f"{v:.6g}" for v in row] for row in rows])
    atomic_write_text(path, buf.getvalue())


def fit(args: VerbArgs) -> int:
    """``fit``: train, save, write latents and reconstructions, print the tail diagnostics."""
    import torch

    from paretovae.experiments.common import Budget, train_config, train_family
    from paretovae.metrics import reconstruction_metrics
    from paretovae.model import InputScaleError
    from shared_core.progress import phase, plan

    settings: FitSettings = args.config
    x, names = read_matrix(args.data_path, counts=not args.extra["real"])
    config = _config(settings, x.shape[1])
    _check_transform(settings.transform, x, args.data_path)
    if settings.steps < 1 or settings.batch_size < 1:
        raise UsageError(
            f"steps, batch_size: expected >= 1, got {settings.steps}, {settings.batch_size}"
        )
    plan(["train", "write"], estimate_s=0.01 * settings.steps + 2)
    phase("train")
    budget = Budget(families=(config.family,), seeds=1, batch_size=settings.batch_size,
                    train=train_config(settings.steps, lr=settings.lr))  # fmt: skip
    data = torch.as_tensor(_forward(settings.transform, x), dtype=torch.float32)
    try:
        model = train_family(config.family, config, data, budget, args.seed, device=args.device)
    except InputScaleError as e:
        raise UsageError(f"{args.data_path.name}: {e}") from None
    model.eval()
    with torch.no_grad():
        mu, _ = model.encode(data)
        recon = _inverse(settings.transform, model.reconstruct(data).numpy())
    # on the data as the user gave them (counts, after log1p's inverse)
    metrics = reconstruction_metrics(
        torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(recon, dtype=torch.float32)
    )
    phase("write")
    out = args.out
    assert out is not None  # `train`-like verb: --out is required
    model.save_pretrained(out, metrics=metrics, data=[args.data_path])
    atomic_write_text(out / PREPROCESSING, json.dumps({"transform": settings.transform}) + "\n")
    _write_csv(out / "latents.csv", [f"z{j}" for j in range(config.m)], mu.numpy())
    _write_csv(out / "reconstructions.csv", names, recon)
    beta = config.l1_weight
    on = "" if settings.transform == "none" else f" ({settings.transform} of the data)"
    print(f"{config.family} on {len(x)} rows x {x.shape[1]} columns{on}, latent {config.m}, "
          f"beta {beta:.3g}{' (preset ' + settings.preset + ')' if settings.preset else ''}, "
          f"{settings.steps} steps")  # fmt: skip
    for key, value in metrics.items():
        print(f"  {key:<16}{value:.4g}")
    print(
        f"wrote {out}/: model (config.json, model.safetensors, {PREPROCESSING}), latents.csv, "
        "reconstructions.csv"
    )
    return 0


def _check_transform(transform: str, x: np.ndarray, path: Path) -> None:
    if transform not in TRANSFORMS:
        raise UsageError(f"transform: expected one of {list(TRANSFORMS)}, got {transform!r}")
    if transform == "log1p" and (x < 0).any():
        i, j = np.argwhere(x < 0)[0]
        raise UsageError(
            f"{path.name}: transform=log1p expects entries >= 0, got {x[i, j]:g} at row {i}, "
            f"column {j}"
        )


def _forward(transform: str, x: np.ndarray) -> np.ndarray:
    """What the model reads: `x` as given, or ``log(1 + x)``."""
    return np.log1p(x) if transform == "log1p" else x


def _inverse(transform: str, y: np.ndarray) -> np.ndarray:
    """Back to the data's scale: ``exp(y) - 1`` after log1p."""
    return np.expm1(y) if transform == "log1p" else y


def _load(args: VerbArgs) -> tuple[Any, str]:
    """The saved model and the transform it was trained with ("none" for a folder without
    preprocessing.json, as paretovae 0.3.0 wrote them)."""
    from paretovae.model import HeavyTailVAE

    assert args.checkpoint is not None
    model = HeavyTailVAE.from_pretrained(args.checkpoint)
    path = args.checkpoint / PREPROCESSING
    transform = json.loads(path.read_text())["transform"] if path.is_file() else "none"
    if transform not in TRANSFORMS:
        raise UsageError(
            f"{path}: transform: expected one of {list(TRANSFORMS)}, got {transform!r}"
        )
    return model, transform


def encode(args: VerbArgs) -> int:
    """``encode``: the latent means ``mu_phi(x)`` of each row, as CSV."""
    import torch

    model, transform = _load(args)
    x, _ = read_matrix(args.data_path, counts=not args.extra["real"])
    if x.shape[1] != model.config.n:
        raise UsageError(
            f"data: the model reads {model.config.n} columns, {args.data_path.name} has {x.shape[1]}"
        )
    _check_transform(transform, x, args.data_path)
    with torch.no_grad():
        mu, _ = model.encode(torch.as_tensor(_forward(transform, x), dtype=torch.float32))
    return _emit(args, [f"z{j}" for j in range(model.config.m)], mu.numpy())


def decode(args: VerbArgs) -> int:
    """``decode``: the decoder's mean ``mu_theta(z)`` of each latent code (a CSV with
    `m` columns, as `encode` writes), as CSV."""
    import torch

    model, transform = _load(args)
    z, _ = read_matrix(args.data_path, counts=False)
    if z.shape[1] != model.config.m:
        raise UsageError(
            f"data: the model's latent has {model.config.m} columns, {args.data_path.name} has {z.shape[1]}"
        )
    with torch.no_grad():
        x = model.decode(torch.as_tensor(z, dtype=torch.float32))
    return _emit(args, [f"x{j}" for j in range(model.config.n)], _inverse(transform, x.numpy()))


def _emit(args: VerbArgs, header: list[str], rows: np.ndarray) -> int:
    if args.out is None:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(header)
        w.writerows([[f"{v:.6g}" for v in row] for row in rows])
    else:
        _write_csv(args.out, header, rows)
        print(f"wrote {len(rows)} rows to {args.out}")
    return 0
