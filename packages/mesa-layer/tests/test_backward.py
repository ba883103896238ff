"""The solve-backward (a second CG solve) against autograd through the exact solve."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import DTYPES, RATIOS, cast, make_inputs  # noqa: E402
from mesa_layer.reference import mesa_exact  # noqa: E402
from mesa_layer.torch import mesa_chunk  # noqa: E402

from shared_core.testing import assert_close  # noqa: E402


@DTYPES
def test_solve_backward_equals_float64_reference_gradients(device, dtype):
    ref = make_inputs(B=2, T=48, H=2, K=8, V=6)
    w = torch.randn(2, 48, 2, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64)

    def grads(fn, ins, weight):
        leaves = [x.detach().clone().requires_grad_(True) for x in ins]
        o, _ = fn(*leaves)
        return torch.autograd.grad((o.to(weight.dtype) * weight).sum(), leaves)

    expected = grads(mesa_exact, ref, w)
    got = grads(
        lambda *a: mesa_chunk(*a, chunk_size=16, max_cg_steps=12),
        cast(ref, dtype, device),
        w.to(device=device, dtype=torch.float64 if dtype == torch.float64 else torch.float32),
    )
    for name, a, b in zip(["q", "k", "v", "g", "beta", "Lambda"], expected, got, strict=True):
        assert_close(f"d{name} {dtype}", a, b, RATIOS[dtype])


def _grads(fn, ins, state, weight):
    ins = [x.clone().requires_grad_(True) for x in ins]
    st = tuple(s.clone().requires_grad_(True) for s in state)
    o, (H, G) = fn(*ins, st)
    loss = (o * weight).sum() + (H**2).sum() * 0.1 + (G * 0.3).sum()
    return torch.autograd.grad(loss, [*ins, *st])


def test_custom_backward_matches_autograd_through_exact_solve():
    ins = make_inputs(B=2, T=21, H=2, K=6, V=5)
    gen = torch.Generator().manual_seed(1)
    A = torch.randn(2, 2, 6, 6, generator=gen, dtype=torch.float64)
    state = (
        A @ A.transpose(-1, -2) * 0.1,
        torch.randn(2, 2, 5, 6, generator=gen, dtype=torch.float64),
    )
    w = torch.randn(2, 21, 2, 5, generator=gen, dtype=torch.float64)
    ref = _grads(lambda *a: mesa_exact(*a[:6], initial_state=a[6]), ins, state, w)
    fast = _grads(
        lambda *a: mesa_chunk(*a[:6], initial_state=a[6], chunk_size=8, max_cg_steps=6),
        ins,
        state,
        w,
    )
    names = ["q", "k", "v", "g", "beta", "Lambda", "H0", "G0"]
    for name, a, b in zip(names, fast, ref, strict=True):
        assert_close(f"gradient of {name}", b, a, 1e-8)


def test_custom_backward_matches_autograd_through_cg():
    ins = [x.float() for x in make_inputs(T=40)]
    w = torch.randn(2, 40, 2, 6)
    outs = []
    for custom in (True, False):
        leaves = [x.clone().requires_grad_(True) for x in ins]
        o, _ = mesa_chunk(*leaves, max_cg_steps=12, custom_backward=custom)
        outs.append(torch.autograd.grad((o * w).sum(), leaves))
    for name, a, b in zip(["q", "k", "v", "g", "beta", "Lambda"], *outs, strict=True):
        assert_close(f"d{name} solve-backward vs autograd through CG", b, a, 1e-4)


def test_gradcheck_float64():
    q, k, v, g, beta, Lambda = make_inputs(B=1, T=7, H=1, K=3, V=2)
    leaves = tuple(x.clone().requires_grad_(True) for x in (q, k, v, g, beta, Lambda))

    def fn(*a):
        return mesa_chunk(*a, chunk_size=4, max_cg_steps=6)[0]

    assert torch.autograd.gradcheck(fn, leaves, eps=1e-6, atol=1e-6)
