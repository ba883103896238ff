"""Training-step time of ConvT3's parallel scan against ConvS5 and a sequential 3x3-conv recurrence.

Forward + backward of one SSM layer (``sum(y).backward()``) at sequence lengths 64, 256, 1024
(``--quick``: 64) on a 32x32 grid, batch 1, 4 features, state_size 8 (P = 4 complex
channels), float32, one thread:

- ``convt3``: `convt3.torch.ConvT3SSM` (3x3 state kernel, ZOH; sine transform + log-depth scan);
- ``convs5``: the same layer with a 1x1 state kernel (ConvS5: no transform, same scan);
- ``sequential 3x3``: the peer a user would otherwise write: the state updated step by step by
  an explicit depthwise 3x3 ``conv2d`` (the ``"direct"`` discretisation, same parameters;
  outputs are compared first);
- ``convt3 (jax)``: `convt3.flax.ConvT3SSM` under ``jax.jit(jax.grad(...))``
  (``jax.lax.associative_scan``), when JAX is installed.

The scans do O(T) (JAX) or O(T log T) (torch) work in O(log T) dependent steps; the sequential
form does O(T) dependent steps, so the ratio grows with T where parallel hardware is available.
On one CPU thread the work, not the depth, sets the time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from convt3.torch import ConvT3SSM

from shared_core.bench import BenchTable, bench_parser, finish, measure
from shared_core.testing import relative_rms_error

GRID, FEATURES, STATE = 32, 4, 8


def sequential_conv_recurrence(layer: ConvT3SSM, u: torch.Tensor) -> torch.Tensor:
    """``x_k = A_bar (x) x_{k-1} + gain B (x) u_k`` with A_bar an explicit 3x3 depthwise conv."""
    assert layer.corner_logits is not None
    N, T, _, H, W = u.shape
    Lambda = layer.continuous_lambda()
    step = torch.exp(layer.log_step)
    lam_bar = torch.exp(Lambda * step)
    corners = 4 * torch.softmax(layer.corner_logits, -1)
    corners = corners / corners.max(-1, keepdim=True).values
    pp, pm, mp, mm = corners.unbind(-1)
    a, b = (pp + pm + mp + mm) / 4, (pp + pm - mp - mm) / 4
    c, d = (pp - pm + mp - mm) / 4, (pp - pm - mp + mm) / 4
    K = torch.stack(
        [torch.stack([d / 4, b / 2, d / 4], -1), torch.stack([c / 2, a, c / 2], -1),
         torch.stack([d / 4, b / 2, d / 4], -1)], -2,
    )  # fmt: skip  # (P, 3, 3), alpha = 1
    Kc = lam_bar[:, None, None] * K  # complex (P, 3, 3)
    gain = (lam_bar - 1) / Lambda
    Bw = torch.complex(layer.B[..., 0], layer.B[..., 1])
    Cw = torch.complex(layer.C[..., 0], layer.C[..., 1])
    x_re = u.new_zeros(N, layer.P, H, W)
    x_im = u.new_zeros(N, layer.P, H, W)
    wr, wi = Kc.real[:, None], Kc.imag[:, None]
    ys = []
    for k in range(T):
        bu_re = F.conv2d(u[:, k], Bw.real, padding=1)
        bu_im = F.conv2d(u[:, k], Bw.imag, padding=1)
        ar = F.conv2d(x_re, wr, padding=1, groups=layer.P) - F.conv2d(
            x_im, wi, padding=1, groups=layer.P
        )
        ai = F.conv2d(x_re, wi, padding=1, groups=layer.P) + F.conv2d(
            x_im, wr, padding=1, groups=layer.P
        )
        g = gain[None, :, None, None]
        x_re = ar + g.real * bu_re - g.imag * bu_im
        x_im = ai + g.real * bu_im + g.imag * bu_re
        ys.append(2 * (F.conv2d(x_re, Cw.real, padding=1) - F.conv2d(x_im, Cw.imag, padding=1)))
    return torch.stack(ys, 1)


def _torch_step(
    fn: Callable[[torch.Tensor], torch.Tensor], u: torch.Tensor, layer: ConvT3SSM
) -> Callable[[], None]:
    def run() -> None:
        layer.zero_grad(set_to_none=True)
        fn(u).sum().backward()

    return run


def _jax_step(T: int, u: np.ndarray) -> Callable[[], None] | None:
    try:
        import jax
        from convt3.flax import ConvT3SSM as FlaxSSM
        from flax import nnx
    except ModuleNotFoundError:
        return None
    layer = FlaxSSM(FEATURES, STATE, rngs=nnx.Rngs(0))
    graph, params = nnx.split(layer)
    x = jax.numpy.asarray(u)

    @jax.jit
    def grad(p: object, x: jax.Array) -> object:
        return jax.grad(lambda p: nnx.merge(graph, p)(x)[0].sum())(p)

    def run() -> None:
        jax.block_until_ready(grad(params, x))

    return run


def main() -> None:
    ns = bench_parser(__doc__.splitlines()[0]).parse_args()
    lengths = (64,) if ns.quick else (64, 256, 1024)
    repeats = 3 if ns.quick else ns.repeats
    table = BenchTable(
        f"SSM layer forward + backward, {GRID}x{GRID} grid, P = {STATE // 2}", "convt3"
    )
    torch.manual_seed(0)
    t3 = ConvT3SSM(FEATURES, STATE, seed=0)
    s5 = ConvT3SSM(FEATURES, STATE, state_kernel="1x1", lambda_param="clip", seed=0)
    direct = ConvT3SSM(FEATURES, STATE, discretization="direct", seed=0)
    with torch.no_grad():
        for layer in (t3, direct):
            assert layer.corner_logits is not None
            layer.corner_logits.copy_(torch.randn(layer.corner_logits.shape))
        direct.load_state_dict(t3.state_dict())
    for T in lengths:
        u = torch.randn(1, T, FEATURES, GRID, GRID)
        with torch.no_grad():
            err, scale = relative_rms_error(
                direct(u)[0].numpy(), sequential_conv_recurrence(direct, u).numpy()
            )
        print(f"T={T}: sequential 3x3 recurrence vs scan (direct), relative RMS {err / scale:.2e}")
        fns = {
            "convt3": _torch_step(lambda x: t3(x)[0], u, t3),
            "convs5": _torch_step(lambda x: s5(x)[0], u, s5),
            "sequential 3x3": _torch_step(
                lambda x: sequential_conv_recurrence(direct, x), u, direct
            ),
        }
        jax_fn = _jax_step(T, u.numpy())
        if jax_fn is not None:
            fns["convt3 (jax)"] = jax_fn
        table.add(f"T = {T}", measure(fns, repeats=repeats, threads=ns.threads))
    finish([table], ns.json)


if __name__ == "__main__":
    main()
