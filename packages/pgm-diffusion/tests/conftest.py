from __future__ import annotations

import pytest
import torch
from pgm import PartitionTransformer, PGMConfig

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]


def make_model(
    pre_query: str = "learn+freqs",
    v: int = 7,
    n: int = 12,
    seed: int = 0,
    grid: bool = False,
    residual: bool = False,
):
    """A small PGM; ``grid=True``: 2-D RoPE over a 3 x 4 grid plus learned positions;
    ``residual=True``: the GroupSwap query residual."""
    torch.manual_seed(seed)
    extra: dict = {"grid": (3, 4), "learned_positions": True} if grid else {}
    extra["query_residual"] = residual
    m = PartitionTransformer(PGMConfig(v, n, 32, 2, 2, 2, pre_query=pre_query, **extra))
    # a non-zero head so that the outputs are not trivially constant
    torch.nn.init.normal_(m.head.weight, std=0.5)
    if m.pos_embed is not None:  # large enough to matter in the comparisons
        torch.nn.init.normal_(m.pos_embed, std=0.5)
    return m.eval()


@pytest.fixture
def model() -> PartitionTransformer:
    return make_model()
