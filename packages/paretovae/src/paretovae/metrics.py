"""The paper's evaluation numbers: tail MMD and sliced Wasserstein, head/tail word-set
overlap and Jaccard, PSNR/SSIM.

Tail region (t3VAE style): the points whose Euclidean norm exceeds the `quantile` of the
held-out data's norms; the generated points beyond the same radius are compared with the
held-out tail points.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from paretovae._checks import check_unit_images

__all__ = [
    "frequency_rank_scores",
    "mmd_rbf",
    "psnr_ssim",
    "sliced_wasserstein",
    "tail_metrics",
    "word_set_scores",
]


def _check_points(name: str, x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        raise ValueError(f"{name}: expected a (num, dim) tensor, got {getattr(x, 'shape', x)!r}")


def mmd_rbf(a: torch.Tensor, b: torch.Tensor, bandwidth: float | None = None) -> float:
    """Squared MMD (biased V-statistic) with a Gaussian kernel; median-heuristic bandwidth."""
    _check_points("a", a)
    _check_points("b", b)
    if len(a) == 0 or len(b) == 0:
        return math.nan
    a, b = a.double(), b.double()
    pooled = torch.cat([a, b])
    d2 = torch.cdist(pooled, pooled).pow(2)
    h = (
        float(d2[d2 > 0].median())
        if bandwidth is None and bool((d2 > 0).any())
        else (bandwidth or 1.0)
    )
    k = torch.exp(-d2 / h)
    na = len(a)
    return float(k[:na, :na].mean() + k[na:, na:].mean() - 2 * k[:na, na:].mean())


def sliced_wasserstein(
    a: torch.Tensor, b: torch.Tensor, projections: int = 64, seed: int = 0
) -> float:
    """Mean over random unit directions of the 1-D Wasserstein-1 distance (quantile matching)."""
    _check_points("a", a)
    _check_points("b", b)
    if len(a) == 0 or len(b) == 0:
        return math.nan
    g = torch.Generator().manual_seed(seed)
    dirs = torch.randn(a.shape[1], projections, generator=g, dtype=torch.float64)
    dirs = dirs / dirs.norm(dim=0, keepdim=True)
    pa, pb = (a.double() @ dirs), (b.double() @ dirs)
    levels = torch.linspace(0.0, 1.0, 201, dtype=torch.float64)
    qa = torch.quantile(pa, levels, dim=0)
    qb = torch.quantile(pb, levels, dim=0)
    return float((qa - qb).abs().mean())


def tail_metrics(
    test: torch.Tensor, generated: torch.Tensor, quantile: float = 0.95, max_points: int = 1000
) -> dict[str, float]:
    """MMD and sliced Wasserstein between the tails, and the generated/held-out tail mass ratio.

    Also the whole-distribution MMD, for reference.
    """
    _check_points("test", test)
    _check_points("generated", generated)
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile: expected a value in (0, 1), got {quantile!r}")
    radius = float(torch.quantile(test.double().norm(dim=1), quantile))
    t_tail = test[test.norm(dim=1) > radius][:max_points]
    g_tail = generated[generated.norm(dim=1) > radius][:max_points]
    frac_gen = float((generated.norm(dim=1) > radius).double().mean())
    return {
        "tail_mmd": mmd_rbf(t_tail, g_tail),
        "tail_sw": sliced_wasserstein(t_tail, g_tail),
        "tail_mass_ratio": frac_gen / (1.0 - quantile),
        "mmd": mmd_rbf(test[:max_points], generated[:max_points]),
    }


def word_set_scores(
    counts: torch.Tensor,
    recon: torch.Tensor,
    head: np.ndarray,
    tail: np.ndarray,
    present: float = 0.5,
) -> dict[str, float]:
    """Per-document word sets, averaged over documents.

    For each document, the words of `head` (resp. `tail`) columns that occur (count > 0) are
    compared with those the reconstruction predicts (``recon >= present``): Jaccard
    ``|A & B| / |A | B|`` and overlap (recall) ``|A & B| / |A|``; documents with an empty
    union (or empty A, for the overlap) are skipped.
    """
    if counts.shape != recon.shape:
        raise ValueError(
            f"recon: expected the shape of counts {tuple(counts.shape)}, got {tuple(recon.shape)}"
        )
    out: dict[str, float] = {}
    for name, cols in (("head", head), ("tail", tail)):
        a = counts[:, cols] > 0
        b = recon[:, cols] >= present
        inter = (a & b).sum(1).double()
        union = (a | b).sum(1).double()
        size_a = a.sum(1).double()
        out[f"{name}_jaccard"] = float((inter[union > 0] / union[union > 0]).mean())
        out[f"{name}_overlap"] = float((inter[size_a > 0] / size_a[size_a > 0]).mean())
    return out


def frequency_rank_scores(
    counts: torch.Tensor, recon: torch.Tensor, head: int, tail: int
) -> dict[str, float]:
    """Corpus level (the paper's word-frequency metric): the `head` most and `tail` least
    frequent words of the summed counts (A) vs of the summed reconstructions, clamped at 0 (B).

    ``corpus_*_overlap = |A & B| / |A|`` and ``corpus_*_jaccard = |A & B| / |A | B|``; with
    ``|A| = |B| = k`` the Jaccard is ``o / (2 - o)`` of the overlap o, as in the paper's table
    (tail: 0.717 -> 0.560; the note's WikiText-2 row uses k = 2,241 of 19,962 words for both).

    Ties in the true frequencies are broken by column index (the training-frequency order).
    """
    if counts.shape != recon.shape:
        raise ValueError(
            f"recon: expected the shape of counts {tuple(counts.shape)}, got {tuple(recon.shape)}"
        )
    v = counts.shape[1]
    if not (0 < head <= v and 0 < tail <= v):
        raise ValueError(f"head, tail: expected 1..{v} words each, got {head}, {tail}")
    order = torch.arange(v, dtype=torch.float64) * 1e-9  # stable tie-break
    true_f = counts.double().sum(0) - order
    rec_f = recon.double().clamp_min(0).sum(0) - order
    out = {}
    for name, k, largest in (("head", head, True), ("tail", tail, False)):
        a = set(torch.topk(true_f, k, largest=largest).indices.tolist())
        b = set(torch.topk(rec_f, k, largest=largest).indices.tolist())
        out[f"corpus_{name}_overlap"] = len(a & b) / k
        out[f"corpus_{name}_jaccard"] = len(a & b) / len(a | b)
    return out


def psnr_ssim(clean: torch.Tensor, restored: torch.Tensor, side: int = 8) -> dict[str, float]:
    """Mean PSNR (dB) and SSIM (data range 1) over images ``(num, side*side)``.

    `clean` must lie in [0, 1]; `restored` (a model's output) is clipped to it. Both are
    `shared_core.metrics`' (``ssim`` with a ``min(7, side)`` window and the sample covariance,
    scikit-image's ``structural_similarity`` default, which 0.2.3 called).
    """
    from shared_core.metrics import psnr, ssim

    check_unit_images("clean", clean)
    if clean.shape != restored.shape:
        raise ValueError(
            f"restored: expected the shape of clean {tuple(clean.shape)}, got {tuple(restored.shape)}"
        )
    c = clean.double().numpy().reshape(-1, side, side)
    r = restored.double().clamp(0, 1).numpy().reshape(-1, side, side)
    return {
        "psnr": float(np.mean(psnr(c, r))),
        "ssim": float(np.mean(ssim(c, r, window=min(7, side), sample_covariance=True))),
    }


def reconstruction_metrics(
    test: torch.Tensor, recon: torch.Tensor, top: float = 0.1, max_points: int = 1000
) -> dict[str, float]:
    """The paper's degree-reconstruction metrics (note, "Graph Degree Reconstruction").

    Sliced Wasserstein between the held-out points and their reconstructions as point sets
    (`sw`), and between their tails (`tail_sw`, `tail_mmd`): each set's own `top` fraction by
    l2 norm (the paper's top 10%). `tail_mass_ratio`: the reconstructions' fraction beyond the
    held-out ``1 - top`` norm quantile over `top` (1 is right, < 1: tails shrunk).
    """
    _check_points("test", test)
    _check_points("recon", recon)
    if not 0.0 < top < 1.0:
        raise ValueError(f"top: expected a fraction in (0, 1), got {top!r}")

    def tail(x: torch.Tensor) -> torch.Tensor:
        norms = x.double().norm(dim=1)
        return x[norms >= torch.quantile(norms, 1.0 - top)][:max_points]

    radius = float(torch.quantile(test.double().norm(dim=1), 1.0 - top))
    return {
        "sw": sliced_wasserstein(test, recon),
        "tail_sw": sliced_wasserstein(tail(test), tail(recon)),
        "tail_mmd": mmd_rbf(tail(test), tail(recon)),
        "tail_mass_ratio": float((recon.double().norm(dim=1) > radius).double().mean()) / top,
    }
