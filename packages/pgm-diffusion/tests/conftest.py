from __future__ import annotations

import pytest
import torch
from pgm import PartitionTransformer, PGMConfig


def make_model(pre_query: str = "learn+freqs", v: int = 7, n: int = 12, seed: int = 0):
    torch.manual_seed(seed)
    m = PartitionTransformer(PGMConfig(v, n, 32, 2, 2, 2, pre_query=pre_query))
    # a non-zero head so that the outputs are not trivially constant
    torch.nn.init.normal_(m.head.weight, std=0.5)
    return m.eval()


@pytest.fixture
def model() -> PartitionTransformer:
    return make_model()
