"""Tiny discrete distributions with exactly known probabilities (the 2-D toys of the paper).

A distribution is a probability table ``P`` of shape ``(V,) * L``; `sample_table` draws token
sequences from it. `checkerboard` and `gaussian_mixture` discretise the paper's 2-D toys on a
``bins x bins`` grid (each coordinate is one token of `bins` categories).
"""

from __future__ import annotations

import math

import torch


def _check_bins(bins: int, minimum: int = 2) -> None:
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < minimum:
        raise ValueError(f"bins: expected an int >= {minimum}, got {bins!r}")


def checkerboard(bins: int = 32, cells: int = 4) -> torch.Tensor:
    """A ``cells x cells`` checkerboard on ``bins x bins``: uniform on the cells with (i+j) even.

    Entropy ``log(bins^2 / 2)``; the two coordinates share ``log 2`` nats of information.
    """
    _check_bins(bins)
    if not isinstance(cells, int) or cells < 2 or bins % cells:
        raise ValueError(f"cells: expected an int >= 2 dividing bins={bins}, got {cells!r}")
    c = torch.arange(bins) // (bins // cells)
    P = ((c[:, None] + c[None, :]) % 2 == 0).double()
    return (P / P.sum()).float()


def gaussian_mixture(bins: int = 32, modes: int = 8, radius: float = 0.7, std: float = 0.07):
    """`modes` isotropic Gaussians on a circle in ``[-1, 1]^2``, binned on ``bins x bins``."""
    _check_bins(bins)
    if not isinstance(modes, int) or modes < 1:
        raise ValueError(f"modes: expected a positive int, got {modes!r}")
    if not 0 < std < math.inf:
        raise ValueError(f"std: expected a finite float > 0, got {std!r}")
    if (
        isinstance(radius, bool)
        or not isinstance(radius, (int, float))
        or not math.isfinite(radius)
    ):
        raise ValueError(f"radius: expected a finite float, got {radius!r}")
    centres = torch.linspace(-1 + 1 / bins, 1 - 1 / bins, bins, dtype=torch.float64)
    ang = torch.arange(modes, dtype=torch.float64) * 2 * math.pi / modes
    mx, my = radius * torch.cos(ang), radius * torch.sin(ang)
    dx = (centres[None, :] - mx[:, None]) ** 2  # (modes, bins)
    dy = (centres[None, :] - my[:, None]) ** 2
    P = torch.exp(-(dx[:, :, None] + dy[:, None, :]) / (2 * std**2)).sum(0)
    return (P / P.sum()).float()


def sample_table(P: torch.Tensor, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw `n` sequences (n, L) of token ids from a probability table P of shape ``(V,) * L``."""
    if not isinstance(P, torch.Tensor) or P.ndim < 1 or len(set(P.shape)) != 1:
        raise ValueError("P: expected a (V,) * L probability table")
    if (P < 0).any() or not math.isclose(float(P.sum()), 1.0, abs_tol=1e-4):
        raise ValueError("P: expected non-negative entries summing to 1")
    if not isinstance(n, int) or n <= 0:
        raise ValueError(f"n: expected a positive int, got {n!r}")
    V, L = P.shape[0], P.ndim
    flat = torch.multinomial(P.flatten().double(), n, replacement=True, generator=generator)
    out = torch.empty((n, L), dtype=torch.long)
    for i in reversed(range(L)):
        out[:, i] = flat % V
        flat = flat // V
    return out


def empirical_table(x: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Histogram (V,) * L of sequences x (n, L), normalised."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        raise ValueError(f"vocab_size: expected a positive int, got {vocab_size!r}")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype.is_floating_point or x.dtype == torch.bool:
        raise TypeError(f"x: expected integer token ids, got dtype {x.dtype}")
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"x: expected a non-empty (n, L) tensor, got shape {tuple(x.shape)}")
    if int(x.min()) < 0 or int(x.max()) >= vocab_size:
        raise ValueError(
            f"x: expected token ids in [0, {vocab_size}), got range [{int(x.min())}, {int(x.max())}]"
        )
    n, L = x.shape
    flat = torch.zeros(n, dtype=torch.long)
    for i in range(L):
        flat = flat * vocab_size + x[:, i].long()
    counts = torch.bincount(flat, minlength=vocab_size**L).double()
    return (counts / n).view((vocab_size,) * L).float()
