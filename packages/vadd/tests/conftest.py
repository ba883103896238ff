from __future__ import annotations

import pytest
import torch
import vadd
from masked_diffusion import mdlm_train_config, row_batches

from shared_core.train import fit

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]

V, L = 4, 2


def diagonal_table(vocab: int = V, noise: float = 0.1) -> torch.Tensor:
    """X^1 = X^2 uniform on `vocab` categories, mixed with `noise` uniform mass."""
    P = (1 - noise) * torch.eye(vocab) / vocab + noise / vocab**2
    return P.float()


def randomise(model: torch.nn.Module, seed: int = 0, std: float = 0.4) -> torch.nn.Module:
    """Give every parameter (including the zero-initialised heads) random values."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return model.eval()


def small_config(latent_dim: int = 2, vocab: int = V, seq_len: int = L) -> vadd.VADDConfig:
    return vadd.VADDConfig(
        vocab, seq_len, latent_dim=latent_dim, d_model=16, n_heads=2, n_layers=1, latent_hidden=16
    )


@pytest.fixture(scope="session")
def toy_table() -> torch.Tensor:
    return diagonal_table()


@pytest.fixture(scope="session")
def trained(toy_table):
    """An MDM (latent off) and a VADD (d = 2) trained with the same settings on `toy_table`."""
    data = vadd.sample_table(toy_table, 20000, torch.Generator().manual_seed(0))
    out = {}
    for name, d in (("mdm", 0), ("vadd", 2)):
        torch.manual_seed(0)
        m = vadd.VADD(
            vadd.VADDConfig(V, L, latent_dim=d, d_model=32, n_heads=2, n_layers=2, latent_hidden=32)
        )
        fit(
            m, vadd.vadd_loss_fn(vadd.ObjectiveConfig(anneal_steps=100)),
            row_batches(data, 256, seed=0), mdlm_train_config(400, lr=3e-3, warmup=20),
            show_progress=False, device="cpu",
        )  # fmt: skip
        out[name] = m.eval()
    out["data"] = data
    return out
