from __future__ import annotations

import pytest
import torch
from masked_diffusion import BackboneConfig, MaskedDiffusionTransformer

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]


class TableDenoiser(torch.nn.Module):
    """A tiny fixed denoiser: logits depend on the right neighbour's token and the position."""

    def __init__(self, vocab_size: int, seq_len: int, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.vocab_size = vocab_size
        self.table = torch.randn(vocab_size + 1, vocab_size, generator=g)
        self.pos = torch.randn(seq_len, vocab_size, generator=g)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        right = torch.roll(x, -1, dims=1)
        return self.table[right] + self.pos[None]


@pytest.fixture
def table_denoiser() -> TableDenoiser:
    return TableDenoiser(5, 3)


@pytest.fixture
def small_model() -> MaskedDiffusionTransformer:
    torch.manual_seed(0)
    m = MaskedDiffusionTransformer(
        BackboneConfig(vocab_size=7, seq_len=12, d_model=32, n_heads=2, n_layers=2, d_cond=5)
    )
    # give the head non-zero weights so outputs are not trivially constant
    torch.nn.init.normal_(m.head.weight, std=0.5)
    return m.eval()
