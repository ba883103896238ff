"""One source for eps: `MELDConfig.eps` (the paper's 1e-4) builds the schedule a model uses."""

import pytest
import torch
from masked_diffusion import LogLinearSchedule
from meld_diffusion import (
    ElementRates,
    ElementwiseSchedule,
    GraphMDM,
    GraphTransformer,
    GraphTransformerConfig,
    MELDConfig,
    meld_loss,
    meld_sample,
)
from meld_diffusion.data import seq_len

PAPER_EPS = 1e-4  # paper note, Key design 2: gamma = 1 - (1 - eps) t^w with eps = 1e-4


def _default_model() -> GraphMDM:
    torch.manual_seed(0)
    cfg = MELDConfig()
    denoiser = GraphTransformer(
        GraphTransformerConfig(d_node=8, d_edge=4, n_layers=1, d_pos=cfg.dim)
    )
    return GraphMDM(denoiser, ElementRates(cfg))


def test_default_meld_model_keeps_every_element_with_the_papers_eps_at_t1():
    model = _default_model()
    schedule = model.rates.cfg.schedule()
    columns = model.rates.columns(4, 9, torch.Generator().manual_seed(0))
    w = model.rates(columns).double()
    gamma_1 = schedule.alpha(torch.ones(4, dtype=torch.float64), w)
    torch.testing.assert_close(gamma_1, torch.full_like(gamma_1, PAPER_EPS), rtol=0, atol=1e-15)


def test_default_elementwise_schedule_is_the_papers():
    w = torch.full((2, 5), 1.7, dtype=torch.float64)
    gamma_1 = ElementwiseSchedule().alpha(torch.ones(2, dtype=torch.float64), w)
    torch.testing.assert_close(gamma_1, torch.full_like(gamma_1, PAPER_EPS), rtol=0, atol=1e-15)


def test_a_schedule_with_another_eps_is_refused():
    model = _default_model()
    x0 = torch.zeros(2, seq_len(9), dtype=torch.long)
    n_atoms = torch.tensor([3, 4])
    other = ElementwiseSchedule(LogLinearSchedule(eps=1e-3))
    with pytest.raises(ValueError, match=r"schedule.*0\.001.*MELDConfig\.eps.*0\.0001"):
        meld_loss(model, x0, n_atoms, other, max_atoms=9)
    with pytest.raises(ValueError, match=r"schedule.*0\.001.*MELDConfig\.eps.*0\.0001"):
        meld_sample(model, n_atoms, max_atoms=9, steps=2, schedule=other)
