"""NumPy arrays (``.npy``/``.npz``) and folders of images (Pillow), class sub-folders as labels."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.atomic import atomic_write
from shared_core.data.read_result import ReadResult, nonempty_file
from shared_core.data.registry import require_extra
from shared_core.errors import InputError

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")
_IMAGE_MODES = ("L", "RGB")


def read_array(
    path: str | os.PathLike[str], key: str | None = None, *, ndim: int | None = None
) -> np.ndarray:
    """The array of a ``.npy`` file, or array `key` of a ``.npz`` (the only one when `key` is
    None). `ndim`: the rank expected (ValueError naming the file, the key and the shape if it
    differs). Pickled object arrays are refused."""
    p = nonempty_file(path, "a NumPy array")
    suffix = p.suffix.lower()
    if suffix not in (".npy", ".npz"):
        raise InputError(f"path: expected a .npy or .npz file, got {p.name!r}")
    if suffix == ".npy" and key is not None:
        raise InputError(f"key: a .npy file holds one array; got key={key!r}")
    array, names = _load(p, key)
    if array is None:
        if key is None:
            raise InputError(f"key: {p} holds the arrays {names}; expected key= to name one")
        raise InputError(f"key: {p} has no array {key!r}; it holds {names}")
    label = p.name if suffix == ".npy" else f"{p.name}[{key or names[0]!r}]"
    if ndim is not None and array.ndim != ndim:
        raise InputError(
            f"{label}: expected an array of rank {ndim}, got shape {array.shape} (rank {array.ndim})"
        )
    return np.asarray(array)


def _load(p: Path, key: str | None) -> tuple[np.ndarray | None, list[str]]:
    """(the array, or None when `key` picks none; the .npz's array names)."""
    try:
        if p.suffix.lower() == ".npy":
            return np.load(p, allow_pickle=False), []
        with np.load(p, allow_pickle=False) as archive:
            names = list(archive.files)
            if key is None and len(names) == 1:
                key = names[0]
            return (archive[key] if key in names else None), names
    except (OSError, EOFError, ValueError) as e:
        raise InputError(f"path: {p} is not a readable {p.suffix} file ({e})") from None


def write_arrays(path: str | os.PathLike[str], arrays: np.ndarray | Mapping[str, Any]) -> Path:
    """Write one array as ``.npy``, or named arrays as ``.npz`` (compressed), atomically."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".npy":
        if isinstance(arrays, Mapping):
            raise TypeError("arrays: a .npy file holds one array; got a mapping (use .npz)")
        return atomic_write(p, lambda f: np.save(f, np.asarray(arrays), allow_pickle=False))
    if suffix == ".npz":
        if not isinstance(arrays, Mapping) or not arrays:
            raise TypeError("arrays: a .npz file needs a non-empty mapping of name -> array")
        named = {str(k): np.asarray(v) for k, v in arrays.items()}
        return atomic_write(p, lambda f: np.savez_compressed(f, allow_pickle=False, **named))
    raise InputError(f"path: expected a .npy or .npz file name, got {p.name!r}")


@dataclass
class ImageFolder(ReadResult[Path]):
    """Images ``(n, height, width)`` (mode ``"L"``) or ``(n, height, width, 3)`` (``"RGB"``),
    uint8; `labels` ``(n,)`` index `classes` (the sub-folder names, sorted); `records` are the
    images' files, in the order of the arrays; `skipped` numbers count files in sorted order."""

    images: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0), dtype=np.uint8))
    labels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    classes: list[str] = field(default_factory=list)


def read_image_folder(
    path: str | os.PathLike[str],
    *,
    size: tuple[int, int] | None = None,
    mode: str = "RGB",
    skip_invalid: bool = False,
) -> ImageFolder:
    """Every image under ``path/<class>/`` (one sub-folder per class, sorted names = labels).

    size: ``(width, height)`` to resize every image to (bilinear); without it all images must
    have one size (a ValueError names the first that differs). mode: ``"L"`` or ``"RGB"``
    (images are converted). A file Pillow cannot read is a malformed record: one ValueError
    naming it, or skipped and counted with ``skip_invalid=True``. Requires Pillow (the
    ``images`` extra).
    """
    if mode not in _IMAGE_MODES:
        raise InputError(f"mode: expected one of {_IMAGE_MODES}, got {mode!r}")
    if size is not None and (len(size) != 2 or not all(isinstance(s, int) and s > 0 for s in size)):
        raise InputError(f"size: expected (width, height) of positive ints, got {size!r}")
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"path: no such folder {root}")
    classes = sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not classes:
        raise InputError(f"path: {root} has no class sub-folder; expected {root}/<class>/<image>")
    require_extra("shared-core", "images", "PIL", "reading image folders", in_root=False)
    from PIL import Image, UnidentifiedImageError

    files = [
        (f, label)
        for label, c in enumerate(classes)
        for f in sorted((root / c).iterdir())
        if f.is_file() and f.suffix.lower() in _IMAGE_SUFFIXES
    ]
    result = ImageFolder(root, unit="record", classes=classes)
    images: list[np.ndarray] = []
    labels: list[int] = []
    for number, (f, label) in enumerate(files, start=1):
        try:
            with Image.open(f) as opened:
                image = opened.convert(mode)
            if size is not None:
                image = image.resize(size, Image.Resampling.BILINEAR)
            array = np.asarray(image, dtype=np.uint8)
        except (UnidentifiedImageError, OSError) as e:
            reason = f"{f}: Pillow could not read it ({e}); expected an image"
            result.reject(number, reason, skip_invalid)
            continue
        if images and array.shape != images[0].shape:
            raise InputError(
                f"path: {f} is {array.shape[1]}x{array.shape[0]} but {result.records[0]} is "
                f"{images[0].shape[1]}x{images[0].shape[0]}; expected one size (or pass size=)"
            )
        images.append(array)
        labels.append(label)
        result.records.append(f)
    result.finish(f"images ({', '.join(_IMAGE_SUFFIXES)}) in the class folders {classes}")
    result.images = np.stack(images)
    result.labels = np.asarray(labels, dtype=np.int64)
    return result
