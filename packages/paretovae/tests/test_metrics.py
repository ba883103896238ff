"""Evaluation numbers on cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from paretovae.metrics import (
    frequency_rank_scores,
    mmd_rbf,
    psnr_ssim,
    reconstruction_metrics,
    sliced_wasserstein,
    tail_metrics,
    word_set_scores,
)


def test_mmd_and_sliced_wasserstein() -> None:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(400, 2, generator=g)
    b = torch.randn(400, 2, generator=g)
    assert mmd_rbf(a, a) == pytest.approx(0.0, abs=1e-12)
    assert mmd_rbf(a, b) < mmd_rbf(a, b + 2.0)
    # a shift by (3, 0): every 1-D projection moves by 3 cos(theta); mean |cos| = 2/pi in 2-D
    sw = sliced_wasserstein(a, a + torch.tensor([3.0, 0.0]), projections=2000)
    assert sw == pytest.approx(3.0 * 2 / math.pi, rel=0.05)
    assert math.isnan(mmd_rbf(a[:0], b))


def test_tail_metrics_mass_ratio() -> None:
    g = torch.Generator().manual_seed(1)
    test = torch.randn(8000, 2, generator=g)
    same = tail_metrics(test, torch.randn(8000, 2, generator=g), max_points=300)
    wide = tail_metrics(test, 2.0 * torch.randn(8000, 2, generator=g), max_points=300)
    assert same["tail_mass_ratio"] == pytest.approx(1.0, abs=0.1)
    assert wide["tail_mass_ratio"] > 3.0 and wide["tail_sw"] > same["tail_sw"]
    with pytest.raises(ValueError, match="quantile"):
        tail_metrics(test, test, quantile=1.0)


def test_word_set_scores_by_hand() -> None:
    counts = torch.tensor([[3.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0]])
    recon = torch.tensor([[2.0, 0.0, 0.6, 0.7], [0.1, 0.0, 0.0, 0.4]])
    s = word_set_scores(counts, recon, head=np.array([0, 1]), tail=np.array([2, 3]))
    # head: doc0 {0} vs {0} -> 1; doc1 {1} vs {} -> 0
    assert s["head_jaccard"] == pytest.approx(0.5) and s["head_overlap"] == pytest.approx(0.5)
    # tail: doc0 {2} vs {2, 3} -> 1/2, overlap 1; doc1 {3} vs {} -> 0
    assert s["tail_jaccard"] == pytest.approx(0.25) and s["tail_overlap"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="recon: expected the shape"):
        word_set_scores(counts, recon[:1], np.array([0]), np.array([1]))


def test_psnr_ssim() -> None:
    clean = torch.full((2, 64), 0.5)
    out = psnr_ssim(clean, clean + 0.1)
    assert out["psnr"] == pytest.approx(20.0, abs=1e-4)  # 10 log10(1 / 0.01); float32 input
    assert psnr_ssim(clean, clean + 1e-4)["ssim"] == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match=r"clean: expected pixel values in \[0, 1\]"):
        psnr_ssim(clean - 1.0, clean)


def test_frequency_rank_scores_by_hand() -> None:
    counts = torch.tensor([[5.0, 3.0, 1.0, 0.0], [4.0, 2.0, 0.0, 1.0]])  # totals 9, 5, 1, 1
    perfect = frequency_rank_scores(counts, counts, head=1, tail=2)
    assert perfect == {
        "corpus_head_jaccard": 1.0,
        "corpus_tail_jaccard": 1.0,
        "corpus_head_overlap": 1.0,
        "corpus_tail_overlap": 1.0,
    }
    flat = torch.tensor([[0.1, 3.0, 2.0, -5.0], [0.1, 3.0, 2.0, 0.0]])  # totals 0.2, 6, 4, 0
    s = frequency_rank_scores(counts, flat, head=1, tail=2)
    # head {0} vs {1} -> 0; tail {2, 3} vs {0, 3} -> 1/3
    assert s["corpus_head_jaccard"] == 0.0 and s["corpus_tail_jaccard"] == pytest.approx(1 / 3)
    assert s["corpus_head_overlap"] == 0.0 and s["corpus_tail_overlap"] == 0.5
    o = s["corpus_tail_overlap"]
    assert s["corpus_tail_jaccard"] == pytest.approx(o / (2 - o))  # equal set sizes
    with pytest.raises(ValueError, match="head, tail"):
        frequency_rank_scores(counts, counts, head=0, tail=1)


def test_reconstruction_metrics() -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2000, 2, generator=g) * torch.rand(2000, 1, generator=g).pow(-0.5)
    same = reconstruction_metrics(x, x.clone())
    assert same["sw"] < 1e-12 and same["tail_sw"] < 1e-12
    assert same["tail_mass_ratio"] == pytest.approx(1.0, abs=1e-3)
    shrunk = reconstruction_metrics(x, 0.5 * x)  # tails pulled in: mass ratio < 1, tail SW > SW
    assert shrunk["tail_mass_ratio"] < 0.6 and shrunk["tail_sw"] > shrunk["sw"] > 0
    with pytest.raises(ValueError, match="top: expected a fraction"):
        reconstruction_metrics(x, x, top=1.0)
