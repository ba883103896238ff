from __future__ import annotations

import math

import pytest
import torch
import vadd
from conftest import randomise, small_config
from masked_diffusion import ancestral_sample


class OracleLatent:
    """A planted per-step-latent denoiser for X^1 = X^2 uniform on V (no training).

    At the all-mask state the sign pattern of z picks the category (quantiles of N(0, 1)),
    and both tokens predict it; once one token is revealed the other copies it. With
    ``use_z=False`` it predicts the exact marginals/conditionals: the ideal MDM.
    """

    def __init__(self, vocab: int, use_z: bool) -> None:
        self.vocab_size, self.latent_dim = vocab, 1 if use_z else 0
        self.cfg = type("C", (), {"seq_len": 2})()

    def parameters(self):
        return iter([torch.zeros(1)])

    def logits(self, x_t, t, z=None):
        V = self.vocab_size
        b = x_t.shape[0]
        out = torch.zeros((b, 2, V))
        if z is not None:
            u = 0.5 * (1 + torch.erf(z[:, 0] / math.sqrt(2)))
            k = (u * V).long().clamp(max=V - 1)
            out += 40.0 * torch.nn.functional.one_hot(k, V)[:, None, :]
        for i in (0, 1):
            j = 1 - i
            known = x_t[:, j] < V
            hot = 40.0 * torch.nn.functional.one_hot(x_t[:, j].clamp(max=V - 1), V)
            out[:, i] = torch.where(known[:, None], hot, out[:, i])
        return out


def test_planted_latent_fixes_one_step_sampling():
    V = 4
    truth = torch.eye(V) / V
    latent = vadd.exact_sample_distribution(OracleLatent(V, True), 1, n_latent=20000)
    mdm = vadd.exact_sample_distribution(OracleLatent(V, False), 1)
    assert vadd.total_variation(truth, mdm) > 0.74  # product of marginals: TV = 1 - 1/V
    assert vadd.total_variation(truth, latent) < 0.03
    # with many steps the ideal MDM reveals one token at a time and converges too
    assert (
        vadd.total_variation(truth, vadd.exact_sample_distribution(OracleLatent(V, False), 64))
        < 0.05
    )


def test_trained_vadd_beats_mdm_at_few_steps(trained, toy_table):
    tv = {}
    for name in ("mdm", "vadd"):
        for steps in (1, 2, 32):
            P = vadd.exact_sample_distribution(trained[name], steps, n_latent=1024)
            tv[name, steps] = vadd.total_variation(toy_table, P)
    for steps in (1, 2):
        assert tv["vadd", steps] < 0.6 * tv["mdm", steps], tv
    assert tv["mdm", 1] > 0.5  # the product-of-marginals failure
    for name in ("mdm", "vadd"):
        assert tv[name, 32] < 0.12, tv
        assert tv[name, 32] < tv[name, 1]


def test_latent_off_sampler_is_mdm_sampler():
    m = randomise(vadd.VADD(small_config(0, 4, 2)))
    a = vadd.sample(m, steps=3, batch_size=64, generator=torch.Generator().manual_seed(0))
    b = ancestral_sample(
        m.decoder,
        vocab_size=4,
        steps=3,
        batch_size=64,
        seq_len=2,
        generator=torch.Generator().manual_seed(0),
    )
    assert torch.equal(a, b)


@pytest.mark.parametrize("latent", ["step", "sample"])
def test_sampler_determinism_and_shape(latent):
    m = randomise(vadd.VADD(small_config(2, 4, 2)))
    a = vadd.sample(
        m, steps=4, batch_size=32, latent=latent, generator=torch.Generator().manual_seed(3)
    )
    b = vadd.sample(
        m, steps=4, batch_size=32, latent=latent, generator=torch.Generator().manual_seed(3)
    )
    assert torch.equal(a, b) and a.shape == (32, 2) and a.dtype == torch.long
    assert int(a.min()) >= 0 and int(a.max()) < 4


def test_per_step_latent_is_fresh_per_call():
    m = randomise(vadd.VADD(small_config(2, 4, 2)))
    seen = []
    real = m.logits

    def spy(x, t, z=None):
        seen.append(z.clone())
        return real(x, t, z)

    m.logits = spy
    f = m.prior_denoiser(torch.Generator().manual_seed(0), latent="step")
    x = torch.full((3, 2), 4)
    f(x, torch.ones(3)), f(x, torch.ones(3))
    assert not torch.equal(seen[0], seen[1])
    g = m.prior_denoiser(torch.Generator().manual_seed(0), latent="sample")
    g(x, torch.ones(3)), g(x, torch.ones(3))
    assert torch.equal(seen[2], seen[3])


def test_bad_sampler_arguments():
    m = vadd.VADD(small_config(2, 4, 2))
    with pytest.raises(ValueError, match="latent"):
        vadd.sample(m, steps=2, latent="chain")
    with pytest.raises(ValueError, match="steps"):
        vadd.sample(m, steps=0)
