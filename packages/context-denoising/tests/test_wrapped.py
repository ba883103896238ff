"""Scoring goes through the wrapper a trainer hands over (FSDP / ZeRO-3 shard the weights and
gather them only inside the wrapper's forward), never around it."""

from __future__ import annotations

import pytest
import torch
from context_denoising import CDTConfig, attention_ig, cdt_loss, noise_score
from context_denoising.model import tiny_gpt2, tiny_llama
from torch.func import functional_call

from shared_core.testing import assert_close

VOCAB = 40


class Gathered(torch.nn.Module):
    """ZeRO-3 / FSDP in miniature: the inner model's own weights are NaN (a shard's
    placeholder); the real ones live on the wrapper and exist for the inner model only inside
    ``forward`` (`torch.func.functional_call`)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.module = model
        names = [n for n, _ in model.named_parameters()]
        self.full = torch.nn.ParameterList(
            [torch.nn.Parameter(p.detach().clone()) for p in model.parameters()]
        )
        self._names = names
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float("nan"))

    def forward(self, *args, **kwargs):
        params = dict(zip(self._names, self.full, strict=True))
        return functional_call(self.module, params, args, kwargs, tie_weights=True)


def _batch() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(6, VOCAB, (2, 16), generator=g)
    labels = torch.full_like(ids, -100)
    labels[:, -3:] = ids[:, -3:]
    attn = torch.ones_like(ids)
    attn[1, :4], ids[1, :4], labels[1, :4] = 0, 0, -100  # left-padded
    return {"input_ids": ids, "labels": labels, "attention_mask": attn}


@pytest.fixture(params=[tiny_llama, tiny_gpt2], ids=["llama", "gpt2"])
def pair(request):
    def make():
        return request.param(VOCAB, hidden_size=32, num_heads=4, seed=0, dtype=torch.float64).eval()

    return make(), Gathered(make())


def test_noise_score_goes_through_the_wrapper(pair):
    plain, wrapped = pair
    got = noise_score(wrapped, _batch())
    assert bool(torch.isfinite(got).all())
    assert_close("noise score", noise_score(plain, _batch()), got, 1e-12)


def test_cdt_loss_goes_through_the_wrapper(pair):
    plain, wrapped = pair
    cfg = CDTConfig(eps=0.5)
    expected, parts = cdt_loss(plain, _batch(), cfg)
    got, got_parts = cdt_loss(wrapped, _batch(), cfg)
    assert_close("cdt loss", expected.detach(), got.detach(), 1e-12)
    assert got_parts == pytest.approx(parts, rel=1e-10)
    got.backward()
    assert all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in wrapped.full)


@pytest.mark.parametrize("form", ["note", "code"])
def test_attention_ig_goes_through_the_wrapper(pair, form):
    plain, wrapped = pair
    expected, got = (
        attention_ig(plain, _batch(), form=form),
        attention_ig(wrapped, _batch(), form=form),
    )
    assert_close("ig", expected.ig, got.ig, 1e-12)
    assert_close("attention", expected.attention, got.attention, 1e-12)
