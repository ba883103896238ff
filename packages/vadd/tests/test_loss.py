from __future__ import annotations

import math

import pytest
import torch
import vadd
from conftest import L, V, randomise, small_config
from masked_diffusion import LogLinearSchedule, mdlm_loss
from vadd.reference import delbo_loop

from shared_core.testing import assert_close


def _x0(n=16, seed=0):
    return torch.randint(0, V, (n, L), generator=torch.Generator().manual_seed(seed))


def test_latent_off_equals_mdm_loss():
    """z dimension 0: the VADD loss is the MDM loss of the same network on the same batch."""
    m = randomise(vadd.VADD(small_config(latent_dim=0)))
    x0 = _x0()
    for objective_seed in range(3):
        a = vadd.vadd_loss(m, x0, generator=torch.Generator().manual_seed(objective_seed))
        b = mdlm_loss(
            m.decoder,
            x0,
            LogLinearSchedule(),
            V,
            generator=torch.Generator().manual_seed(objective_seed),
        )
        assert abs(float(a.loss) - float(b.loss)) < 1e-6
        assert torch.equal(a.x_t, b.x_t)


def test_latent_at_prior_equals_mdm_loss():
    """Recognition at the prior (KL = 0) and a decoder that ignores z: the MDM loss again."""
    m = vadd.VADD(small_config(latent_dim=3))
    torch.nn.init.normal_(m.decoder.head.weight, std=0.5)  # non-trivial MDM part
    x0 = _x0()
    a = vadd.vadd_loss(m, x0, generator=torch.Generator().manual_seed(1))
    b = mdlm_loss(m.decoder, x0, LogLinearSchedule(), V, generator=torch.Generator().manual_seed(1))
    assert float(a.kl.abs().max()) == 0.0
    assert abs(float(a.loss) - float(b.loss)) < 1e-6


def test_delbo_matches_reference_loop():
    m = randomise(vadd.VADD(small_config(latent_dim=3)), seed=2)
    x0 = _x0(8)
    t = torch.linspace(0.05, 1.0, 8)
    g = torch.Generator().manual_seed(5)
    out = vadd.vadd_loss(m, x0, generator=g, t=t, kl_weight=0.3)
    g2 = torch.Generator().manual_seed(5)
    torch.rand(x0.shape, generator=g2)  # the mask draw of q_xt
    eps = torch.randn((8, 3), generator=g2)
    ref = delbo_loop(m, x0, out.x_t, t, eps, kl_weight=0.3)
    got = out.rec + 0.3 * out.kl_term
    assert_close("delbo vs loop", ref, got, 1e-5)
    assert math.isclose(float(out.loss), float(ref.sum()) / x0.numel(), rel_tol=1e-5)


def test_sampled_kl_is_unbiased_for_analytic_kl():
    m = randomise(vadd.VADD(small_config(latent_dim=2)), seed=3)
    x0 = _x0(1).repeat(20000, 1)
    t = torch.full((20000,), 0.5)
    a = vadd.vadd_loss(m, x0, generator=torch.Generator().manual_seed(0), t=t)
    b = vadd.vadd_loss(m, x0, generator=torch.Generator().manual_seed(0), t=t, analytic_kl=False)
    torch.testing.assert_close(a.rec, b.rec)
    se = float(b.kl.std()) / math.sqrt(20000)
    assert abs(float(b.kl.mean()) - float(a.kl.mean())) < 4 * se


def test_gaussian_kl_against_closed_form_1d():
    m, ls = torch.tensor([[0.7]]), torch.tensor([[-0.4]])
    s2 = math.exp(-0.8)
    want = 0.5 * (0.49 + s2 - 1 - math.log(s2))
    assert math.isclose(float(vadd.gaussian_kl(m, ls)), want, rel_tol=1e-6)
    assert float(vadd.gaussian_kl(torch.zeros(1, 4), torch.zeros(1, 4))) == 0.0


def test_valid_objective_latent_off_is_discrete_mdm_elbo():
    """d = 0: E[valid loss] equals the exact T-step ELBO computed by `valid_bound`."""
    m = randomise(vadd.VADD(small_config(latent_dim=0)), seed=4)
    x0 = _x0(1).repeat(40000, 1)
    out = vadd.vadd_loss(
        m, x0, objective="valid", steps=3, generator=torch.Generator().manual_seed(0)
    )
    per_seq = out.rec.double()
    bound = vadd.valid_bound(m, x0[:1], 3, n_samples=4000)
    se = float(per_seq.std()) / math.sqrt(len(per_seq))
    assert abs(float(per_seq.mean()) - float(bound)) < 4 * se + 1e-3


def test_gradients_reach_both_networks():
    m = randomise(vadd.VADD(small_config(latent_dim=2)), seed=6).train()
    loss = m(_x0(), generator=torch.Generator().manual_seed(0))
    loss.backward()
    assert m.recognition.net.head.weight.grad.abs().sum() > 0
    assert m.latent_mlp[0].weight.grad.abs().sum() > 0
    assert m.decoder.head.weight.grad.abs().sum() > 0


def test_loss_deterministic_under_seed():
    m = randomise(vadd.VADD(small_config()))
    a = vadd.vadd_loss(m, _x0(), generator=torch.Generator().manual_seed(9)).loss
    b = vadd.vadd_loss(m, _x0(), generator=torch.Generator().manual_seed(9)).loss
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"objective": "elbo"}, "objective"),
        ({"objective": "valid"}, "steps"),
        ({"kl_weight": -1.0}, "kl_weight"),
        ({"kl_weight": float("nan")}, "kl_weight"),
    ],
)
def test_bad_arguments(kw, match):
    m = vadd.VADD(small_config())
    with pytest.raises(ValueError, match=match):
        vadd.vadd_loss(m, _x0(), **kw)


def test_bad_x0():
    m = vadd.VADD(small_config())
    with pytest.raises(ValueError, match="x0"):
        vadd.vadd_loss(m, torch.full((2, L), V))  # the mask id is not data
    with pytest.raises(ValueError, match="x0"):
        vadd.vadd_loss(m, torch.zeros((2, L + 1), dtype=torch.long))
    with pytest.raises(TypeError, match="x0"):
        vadd.vadd_loss(m, torch.zeros((2, L)))


def test_kl_weight_schedule():
    assert vadd.kl_weight(0, 10) == 0.0
    assert vadd.kl_weight(5, 10) == 0.5
    assert vadd.kl_weight(50, 10) == 1.0
    assert vadd.kl_weight(0, 0) == 1.0
    with pytest.raises(ValueError, match="anneal_steps"):
        vadd.kl_weight(0, -1)
