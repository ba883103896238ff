"""A `Calibration` saved beside the checkpoint it describes: ``<checkpoint>/calibration.safetensors``.

Tensors (``rho``, ``varrho``, ``score``, ``rho_images``, ``source.<k>``) are safetensors; the
scalars and the SHA-256 of the checkpoint's weights are its metadata, so statistics of an
older model in the same folder (trained again since) are refused rather than used.
"""

from __future__ import annotations

import os
from pathlib import Path

from shared_core.atomic import atomic_write_bytes
from shared_core.hub import WEIGHTS, file_sha256
from toprovar.pruning import Calibration

CALIBRATION = "calibration.safetensors"
_SCALARS = ("depth", "beta", "tau", "dense_layers", "min_depth")


def save_calibration(calibration: Calibration, checkpoint: str | os.PathLike[str]) -> Path:
    """Write `calibration` into the folder `checkpoint` (atomically); returns the file."""
    from safetensors.torch import save

    folder = Path(checkpoint)
    tensors = {
        "rho": calibration.rho,
        "varrho": calibration.varrho,
        "score": calibration.score,
        **{f"source.{k}": s for k, s in enumerate(calibration.source)},
    }
    if calibration.rho_images is not None:
        tensors["rho_images"] = calibration.rho_images
    metadata = {name: repr(getattr(calibration, name)) for name in _SCALARS}
    metadata["weights_sha256"] = file_sha256(folder / WEIGHTS)
    blob = save({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, metadata)
    return atomic_write_bytes(folder / CALIBRATION, blob)


def load_calibration(checkpoint: str | os.PathLike[str]) -> Calibration:
    """The `Calibration` saved in `checkpoint` (FileNotFoundError if none; ValueError if stale)."""
    from safetensors import SafetensorError, safe_open

    folder = Path(checkpoint)
    path = folder / CALIBRATION
    if not path.is_file():
        raise FileNotFoundError(
            f"checkpoint: {folder} has no {CALIBRATION}; run `toprovar calibrate --checkpoint "
            f"{folder}` first"
        )
    try:
        with safe_open(str(path), "pt") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (not a dict)
    except (SafetensorError, OSError) as e:
        raise ValueError(f"checkpoint: {path} is not a readable calibration file ({e})") from None
    if meta.get("weights_sha256") != file_sha256(folder / WEIGHTS):
        raise ValueError(
            f"checkpoint: {path} describes other weights than {folder / WEIGHTS} (the model was "
            f"trained again since); run `toprovar calibrate --checkpoint {folder}` again"
        )
    n_sources = sum(k.startswith("source.") for k in tensors)
    return Calibration(
        rho=tensors["rho"],
        depth=int(meta["depth"]),
        varrho=tensors["varrho"],
        score=tensors["score"],
        beta=float(meta["beta"]),
        tau=float(meta["tau"]),
        dense_layers=int(meta["dense_layers"]),
        source=[tensors[f"source.{k}"] for k in range(n_sources)],
        min_depth=int(meta["min_depth"]),
        rho_images=tensors.get("rho_images"),
    )
