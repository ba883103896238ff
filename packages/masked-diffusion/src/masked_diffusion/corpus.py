"""A user's data as token rows: a text corpus over a character vocabulary, or grey images quantised.

`TokenSpec` says what the ids mean; it is saved in every checkpoint's config.json (so the
character vocabulary travels with the weights), and the verbs of masked-diffusion, pgm-diffusion
and vadd read and write their files through this module:

- text: the corpus (``shared_core.data.read_text``) is encoded over ``alphabet`` (id = position;
  ``--tokenizer char`` takes the sorted characters of the training text) and cut into
  non-overlapping windows of ``seq_len`` characters (the tail shorter than a window is dropped);
- images: an ``.npy``/``.npz`` array ``(n, height, width)`` (uint8 0..255, or floats in [0, 1])
  or an image folder (``shared_core.data.read_image_folder``, grey) becomes ``height * width``
  tokens per image, pixel ``v`` in [0, 256) at level ``floor(v * 2**bits / 256)`` (``bits = 1``:
  binarised at 128).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from shared_core.errors import InputError

KINDS = ("text", "image")


@dataclass(frozen=True)
class TokenSpec:
    """What token ids mean. kind ``"text"``: id i is ``alphabet[i]``; kind ``"image"``: a grey
    ``height x width`` image, id k the k-th of ``2**bits`` intensity levels."""

    kind: str
    alphabet: str = ""
    height: int = 0
    width: int = 0
    bits: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")
        if self.kind == "text" and (
            not self.alphabet or len(set(self.alphabet)) != len(self.alphabet)
        ):
            raise ValueError(f"alphabet: expected distinct characters, got {self.alphabet!r:.80}")
        if self.kind == "image":
            for name in ("height", "width"):
                if getattr(self, name) <= 0:
                    raise ValueError(f"{name}: expected a positive int, got {getattr(self, name)}")
            if not 1 <= self.bits <= 8:
                raise ValueError(f"bits: expected an int in [1, 8], got {self.bits!r}")

    @property
    def vocab_size(self) -> int:
        return len(self.alphabet) if self.kind == "text" else 2**self.bits

    @property
    def unit(self) -> str:
        """What one token is, for reports: ``"char"`` or ``"dim"`` (a pixel)."""
        return "char" if self.kind == "text" else "dim"


def alphabet_of(text: str) -> str:
    """The ``--tokenizer char`` vocabulary: the sorted distinct characters of `text`."""
    return "".join(sorted(set(text)))


def tokenizer_from_folder(folder: Path) -> str:
    """The character vocabulary saved in a checkpoint folder (``config.json``'s ``data``)."""
    config = folder / "config.json"
    if not config.is_file():
        raise InputError(
            f"--tokenizer: {folder} has no config.json; expected 'char' or a checkpoint folder "
            "written by `train` on text"
        )
    data = json.loads(config.read_text()).get("data")
    if not isinstance(data, dict) or data.get("kind") != "text" or not data.get("alphabet"):
        raise InputError(
            f"--tokenizer: {folder}/config.json holds no character vocabulary (a text "
            "checkpoint's data.alphabet); expected 'char' or a text checkpoint folder"
        )
    return str(data["alphabet"])


def encode_text(text: str, alphabet: str, source: str) -> np.ndarray:
    """Ids (n,) of `text` over `alphabet`; a character outside it is one InputError naming the
    character, its line in `source` and the vocabulary."""
    lut = {c: i for i, c in enumerate(alphabet)}
    ids = np.fromiter((lut.get(c, -1) for c in text), dtype=np.int64, count=len(text))
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        i = int(bad[0])
        line = text.count("\n", 0, i) + 1
        raise InputError(
            f"{source}, line {line}: character {text[i]!r} is not in the tokenizer's "
            f"{len(alphabet)}-character vocabulary {alphabet!r:.120}; the char tokenizer has no "
            "unknown token (train on a corpus that contains it)"
        )
    return ids


def text_windows(ids: np.ndarray, seq_len: int, source: str) -> np.ndarray:
    """Non-overlapping windows (n, seq_len) of `ids`; the tail shorter than a window is dropped."""
    n = len(ids) // seq_len
    if n == 0:
        raise InputError(
            f"{source}: {len(ids)} characters make no window of --seq-len {seq_len}; expected "
            f"at least {seq_len} characters (or a smaller --seq-len)"
        )
    return ids[: n * seq_len].reshape(n, seq_len)


def read_pixels(
    path: Path, size: tuple[int, int] | None = None, skip_invalid: bool = False
) -> np.ndarray:
    """Grey images (n, height, width) in [0, 256) as float64, from an array file or a folder.

    An array must have rank 3 (``(n, height, width)``), hold finite values and be uint8
    (0..255) or floats in [0, 1]. `size` ``(width, height)`` resizes a folder's images (without
    it they must share one size).
    """
    from shared_core.data import read_array, read_image_folder

    if path.is_dir():
        folder = read_image_folder(path, size=size, mode="L", skip_invalid=skip_invalid)
        return folder.images.astype(np.float64)
    array = read_array(path, ndim=3)
    if size is not None and array.shape[1:] != (size[1], size[0]):
        raise InputError(
            f"{path.name}: images are {array.shape[2]}x{array.shape[1]}, expected "
            f"{size[0]}x{size[1]} (arrays are not resized)"
        )
    if array.dtype == np.uint8:
        return array.astype(np.float64)
    if not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
        raise InputError(
            f"{path.name}: expected uint8 pixels or finite floats in [0, 1], got dtype "
            f"{array.dtype}" + ("" if np.isfinite(array).all() else " with NaN/inf")
        )
    if array.min() < 0 or array.max() > 1:
        raise InputError(
            f"{path.name}: float pixels must lie in [0, 1], got [{array.min():g}, {array.max():g}]"
        )
    return np.minimum(array.astype(np.float64) * 256.0, 255.0)


def quantise(pixels: np.ndarray, bits: int) -> np.ndarray:
    """Levels ``floor(v * 2**bits / 256)`` (n, height * width) of pixels (n, height, width)."""
    levels = np.floor(pixels * (2**bits) / 256.0).astype(np.int64)
    return levels.reshape(len(pixels), -1)


def rows_for(spec: TokenSpec, path: Path, seq_len: int, skip_invalid: bool = False) -> np.ndarray:
    """Token rows (n, seq_len) of a file for an existing `spec` (evaluation, fine-tuning)."""
    from shared_core.data import read_text

    if spec.kind == "text":
        if path.is_dir():
            raise InputError(f"--data: {path} is a folder; this checkpoint expects a text file")
        ids = encode_text(read_text(path), spec.alphabet, str(path))
        return text_windows(ids, seq_len, str(path))
    if not path.is_dir() and path.suffix.lower() not in (".npy", ".npz"):
        raise InputError(
            f"--data: {path.name} is not an image folder or .npy/.npz; this checkpoint models "
            f"{spec.width}x{spec.height} images"
        )
    pixels = read_pixels(path, (spec.width, spec.height), skip_invalid)
    return quantise(pixels, spec.bits)


def spec_from_text(path: Path, tokenizer: str) -> tuple[TokenSpec, str]:
    """(spec, text) of a training corpus; `tokenizer` is ``"char"`` or a checkpoint folder."""
    from shared_core.data import read_text

    text = read_text(path)
    if tokenizer == "char":
        alphabet = alphabet_of(text)
    else:
        folder = Path(tokenizer)
        if not folder.is_dir():
            raise InputError(
                f"--tokenizer: expected 'char' or a checkpoint folder, got {tokenizer!r}"
            )
        alphabet = tokenizer_from_folder(folder)
    return TokenSpec("text", alphabet=alphabet), text


def decode_text(spec: TokenSpec, row: np.ndarray) -> str:
    """The characters of one row of ids."""
    return "".join(spec.alphabet[int(i)] for i in row)


def to_pixels(spec: TokenSpec, rows: np.ndarray) -> np.ndarray:
    """uint8 images (n, height, width) of level rows: level k of K shown as ``k * 255 / (K - 1)``
    (binary: 0 and 255)."""
    levels = 2**spec.bits
    values = rows.reshape(-1, spec.height, spec.width).astype(np.float64)
    return np.round(values * 255.0 / (levels - 1)).astype(np.uint8)
