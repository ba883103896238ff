"""Shared random inputs for the Mesa op tests, and one torch thread for the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]

torch = pytest.importorskip("torch")

# fast path dtype -> allowed relative RMS error against the float64 reference
RATIOS = {torch.float64: 1e-10, torch.float32: 1e-5, torch.bfloat16: 1e-2}
DTYPES = pytest.mark.parametrize("dtype", list(RATIOS), ids=lambda d: str(d).split(".")[-1])


def make_inputs(B=2, T=37, H=2, K=8, V=6, dtype=torch.float64, seed=0, gate_bias=2.0):
    """L2-normalised q, k; random v; log gate g <= 0; beta in (0, 1); Lambda >= 0.25."""
    gen = torch.Generator().manual_seed(seed)
    F = torch.nn.functional

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q = F.normalize(rnd(B, T, H, K), dim=-1)
    k = F.normalize(rnd(B, T, H, K), dim=-1)
    v = rnd(B, T, H, V)
    g = F.logsigmoid(rnd(B, T, H) + gate_bias)
    beta = torch.sigmoid(rnd(B, T, H))
    Lambda = torch.rand(H, K, generator=gen, dtype=torch.float64) + 0.25
    return tuple(x.to(dtype) for x in (q, k, v, g, beta, Lambda))


def cast(xs, dtype, device):
    """The fast path's inputs: activations (q, k, v) in `dtype`, gates and Lambda at least float32."""
    gate_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    return tuple(
        x.to(device=device, dtype=dtype if i < 3 else gate_dtype) for i, x in enumerate(xs)
    )


@pytest.fixture
def inputs64():
    return make_inputs()


@pytest.fixture(autouse=True)
def _torch_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    # the op tests test our torch path; the fla path is chosen explicitly (test_fla_path.py)
    monkeypatch.setenv("MESA_LAYER_BACKEND", "torch")


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> Iterator[None]:
    # the tests run many tiny ops; intra-op threads cost more than they give on a shared CPU
    from shared_core.device import limit_threads

    with limit_threads(1):
        yield
