from __future__ import annotations

import pytest
import torch
import vadd
from conftest import randomise, small_config


def test_shapes():
    m = randomise(vadd.VADD(small_config(3, 5, 4)))
    x0 = torch.randint(0, 5, (6, 4))
    x_t = x0.clone()
    x_t[:, :2] = 5
    mu, ls = m.posterior(x0, x_t, torch.rand(6))
    assert mu.shape == ls.shape == (6, 3)
    assert float(ls.min()) >= -7 and float(ls.max()) <= 3
    assert m.logits(x_t, torch.rand(6), torch.randn(6, 3)).shape == (6, 4, 5)


def test_latent_off_has_no_extra_parameters():
    m0 = vadd.VADD(small_config(0))
    assert m0.recognition is None and m0.latent_mlp is None
    from masked_diffusion import MaskedDiffusionTransformer

    plain = MaskedDiffusionTransformer(small_config(0).backbone())
    assert sum(p.numel() for p in m0.parameters()) == sum(p.numel() for p in plain.parameters())


def test_recognition_starts_at_prior_and_sees_the_mask():
    m = vadd.VADD(small_config(2, 4, 2))
    x0 = torch.tensor([[1, 2]])
    mu, ls = m.posterior(x0, torch.tensor([[4, 2]]), torch.ones(1))
    assert float(mu.abs().max()) == 0.0 and float(ls.abs().max()) == 0.0
    randomise(m)
    a = m.posterior(x0, torch.tensor([[4, 2]]), torch.ones(1))[0]
    b = m.posterior(x0, torch.tensor([[1, 4]]), torch.ones(1))[0]
    assert not torch.allclose(a, b)


def test_config_checks_the_decoder_sizes_at_once():
    with pytest.raises(ValueError, match="n_heads"):
        vadd.VADDConfig(4, 2, d_model=32, n_heads=3)


def test_bad_inputs():
    m = vadd.VADD(small_config(2, 4, 2))
    x = torch.full((2, 2), 4)
    with pytest.raises(ValueError, match="z"):
        m.logits(x, torch.ones(2), torch.randn(2, 3))
    with pytest.raises(ValueError, match="z"):
        vadd.VADD(small_config(0, 4, 2)).logits(x, torch.ones(2), torch.randn(2, 2))
    with pytest.raises(ValueError, match="latent_dim"):
        vadd.VADD(small_config(0, 4, 2)).posterior(x, x, torch.ones(2))
    with pytest.raises(ValueError, match="latent_dim"):
        vadd.VADDConfig(4, 2, latent_dim=-1)
    with pytest.raises(ValueError, match="cond"):
        m.decoder(x, None, cond=torch.full((2, m.cfg.latent_hidden), float("nan")))
