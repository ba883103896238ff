"""The float64 oracle against closed forms, computed here without it."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from dist2loss import number_table
from dist2loss.reference import reference_dist2_loss, reference_terms

V = 9


@pytest.fixture
def table():
    return number_table({2 + i: float(i) for i in range(5)}, V)  # V_d = ids 2..6 for 0..4


def test_ce_is_cross_entropy_and_non_metric_positions_have_no_kl(table):
    logits = torch.randn(4, V, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    labels = torch.tensor([0, 3, -100, 8])
    terms = reference_terms(logits, labels, table, 1.0)
    ce = F.cross_entropy(logits, labels, reduction="none", ignore_index=-100)
    assert terms[2] is None
    for i in (0, 1, 3):
        assert terms[i].ce == pytest.approx(float(ce[i]), rel=1e-12)
    assert terms[0].kl is None and terms[3].kl is None and terms[1].kl is not None


def test_kl_is_zero_at_the_target_and_log_k_minus_entropy_at_large_tau(table):
    g = 4  # the number 2: distances (g - v)^2 over V_d
    p_d = torch.softmax(-torch.tensor([(2.0 - i) ** 2 for i in range(5)]) / 1.5, 0)
    z = torch.full((1, V), -30.0, dtype=torch.float64)
    z[0, 2:7] = torch.log(p_d)
    (at,) = reference_terms(z, torch.tensor([g]), table, 1.5, restrict=True)
    assert at.kl == pytest.approx(0.0, abs=1e-12)
    q = torch.softmax(torch.randn(V, generator=torch.Generator().manual_seed(1)).double(), 0)
    (flat,) = reference_terms(torch.log(q)[None], torch.tensor([g]), table, 1e9)
    expected = -math.log(5) - float(torch.log(q[2:7]).mean())  # KL(uniform on V_d || q)
    assert flat.kl == pytest.approx(expected, rel=1e-9)


def test_loss_is_the_per_token_average(table):
    logits = torch.randn(3, V, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    labels = torch.tensor([3, 7, -100])
    t0, t1, _ = reference_terms(logits, labels, table, 2.0, negatives=2)
    loss = reference_dist2_loss(
        logits, labels, table, tau=2.0, alpha=0.3, beta=0.5, negatives=2,
        weights=torch.tensor([2.0, 1.0, 1.0]),
    )  # fmt: skip
    assert loss == pytest.approx((t0.ce + 2.0 * (0.3 * t0.kl + 0.5 * t0.nn) + t1.ce) / 2, rel=1e-12)
    nearest = [3, 2, 4]  # gold 1 (id 3), then ids 2 and 4 at distance 1 (table order)
    nn = float(torch.logsumexp(logits[0, nearest], 0) - logits[0, 3])
    assert t0.nn == pytest.approx(nn, rel=1e-12)
