"""Chunkwise Mesa, GLA and DeltaNet ops against flash-linear-attention's pure-PyTorch references.

The peer a user would otherwise run on a CPU is flash-linear-attention (fla): its Triton
kernels do not run on a CPU, so its pure-PyTorch references are what runs there:
``naive_mesa_net_CG`` (fla/ops/mesa_net/naive.py), ``naive_chunk_simple_gla``
(fla/ops/simple_gla/naive.py) and ``delta_rule_chunkwise`` (fla/ops/delta_rule/naive.py).
They are loaded from their files (``spec_from_file_location``), so neither ``fla`` nor
Triton is imported. Before timing, every pair is checked to give the same outputs (and, for
forward+backward, the same input gradients) with `shared_core.testing.assert_close`.

Times are CPU time per call, one thread, interleaved repeats (`shared_core.bench.measure`);
speed-up = fla time / our time in the same repeat (> 1: ours is faster). Everything runs
at chunk 64 except our Mesa op, which runs at its default chunk 32 (one CG step costs
``(2C + K) K`` per token); its tables also time fla's reference at chunk 32 and ours at
chunk 64, so the gain from the chunk length and the gain at equal chunks are both shown.
On a GPU, ``gpu_check.py`` times ours against fla's Triton kernels.

    python benchmarks/bench_layer.py            # T = 512, 2048, 8192
    python benchmarks/bench_layer.py --quick    # T = 512, 3 repeats
    python benchmarks/bench_layer.py --lengths 512 2048 --repeats 5
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from mesa_layer.torch import delta_rule, gated_linear_attention, mesa_chunk

from shared_core.bench import BenchTable, bench_parser, finish, measure
from shared_core.device import limit_threads
from shared_core.testing import assert_close

B, HEADS, DIM, CHUNK, CG_STEPS = 1, 4, 32, 64, 30
MESA_CHUNK = 32  # our default chunk length (mesa_chunk's chunk_size); fla's default is 64


def fla_naive(op: str) -> ModuleType:
    """``fla/ops/<op>/naive.py`` as a module, without importing the ``fla`` package."""
    from mesa_layer.torch.fla_path import fla_naive as load

    try:
        module: ModuleType = load(op)
    except ModuleNotFoundError as err:
        raise SystemExit(str(err)) from None
    return module


def inputs(T: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """The layer's conventions, ``(B, T, H, D)``: L2-normalised q, k; log gate g; beta; Lambda."""
    gen = torch.Generator().manual_seed(seed)

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen)

    return {
        "q": F.normalize(rnd(B, T, HEADS, DIM), dim=-1),
        "k": F.normalize(rnd(B, T, HEADS, DIM), dim=-1),
        "v": rnd(B, T, HEADS, DIM),
        "g": F.logsigmoid(rnd(B, T, HEADS) + 3.0),  # gamma ~ 0.95
        "beta": torch.sigmoid(rnd(B, T, HEADS)),
        "Lambda": torch.rand(HEADS, DIM, generator=gen) + 0.25,
    }


Op = Callable[[dict[str, torch.Tensor]], torch.Tensor]


def pairs() -> dict[str, tuple[Op, dict[str, Op], list[str]]]:
    """``name: (ours, {peer: fla op}, differentiable inputs)``; all map the same inputs to
    ``(B, T, H, D)``. The first peer is fla's reference at its defaults; Mesa adds fla's
    reference at our chunk length and ours at fla's, to show what the chunk length buys."""
    mesa = fla_naive("mesa_net")
    gla = fla_naive("simple_gla")
    delta = fla_naive("delta_rule")

    def mesa_ours_at(chunk: int) -> Op:
        def run(x: dict[str, torch.Tensor]) -> torch.Tensor:
            args = (x["q"], x["k"], x["v"], x["g"], x["beta"], x["Lambda"])
            return mesa_chunk(*args, chunk_size=chunk, max_cg_steps=CG_STEPS, backend="torch")[0]

        return run

    def mesa_fla_at(chunk: int) -> Op:
        def run(x: dict[str, torch.Tensor]) -> torch.Tensor:
            # fla: (q, k, v, g, lamb, beta); same log gate, input gate and Lambda (H, D)
            args = (x["q"], x["k"], x["v"], x["g"], x["Lambda"], x["beta"])
            return mesa.naive_mesa_net_CG(*args, chunk_size=chunk, max_CG_iteration=CG_STEPS)[0]

        return run

    def gla_ours(x: dict[str, torch.Tensor]) -> torch.Tensor:
        ones = torch.ones_like(x["g"])  # simple GLA has no input gate: beta = 1
        return gated_linear_attention(x["q"], x["k"], x["v"], x["g"], ones, CHUNK)

    def gla_fla(x: dict[str, torch.Tensor]) -> torch.Tensor:
        # scale=1: our GLA does not rescale q (the layer L2-normalises it)
        args = (x["q"], x["k"], x["v"], x["g"])
        return gla.naive_chunk_simple_gla(*args, chunk_size=CHUNK, scale=1.0)[0]

    def delta_ours(x: dict[str, torch.Tensor]) -> torch.Tensor:
        return delta_rule(x["q"], x["k"], x["v"], x["beta"], CHUNK)

    def delta_fla(x: dict[str, torch.Tensor]) -> torch.Tensor:
        # fla: (B, H, T, D) layout and q scaled by D^-1/2 inside; undo both
        q, k, v = (t.transpose(1, 2) for t in (x["q"] * DIM**0.5, x["k"], x["v"]))
        o, _ = delta.delta_rule_chunkwise(q, k, v, x["beta"].transpose(1, 2), chunk_size=CHUNK)
        return o.transpose(1, 2)

    mesa_peers = {
        "fla naive": mesa_fla_at(CHUNK),
        f"fla naive C={MESA_CHUNK}": mesa_fla_at(MESA_CHUNK),
        f"ours C={CHUNK}": mesa_ours_at(CHUNK),
    }
    return {
        "Mesa": (mesa_ours_at(MESA_CHUNK), mesa_peers, ["q", "k", "v", "g", "beta", "Lambda"]),
        "GLA": (gla_ours, {"fla naive": gla_fla}, ["q", "k", "v", "g"]),
        "DeltaNet": (delta_ours, {"fla naive": delta_fla}, ["q", "k", "v", "beta"]),
    }


def forward(op: Op, x: dict[str, torch.Tensor]) -> Callable[[], Any]:
    def run() -> Any:
        with torch.no_grad():
            return op(x)

    return run


def forward_backward(op: Op, x: dict[str, torch.Tensor], diff: list[str]) -> Callable[[], Any]:
    leaves = {n: t.clone().requires_grad_(n in diff) for n, t in x.items()}
    w = torch.randn(B, x["q"].shape[1], HEADS, DIM, generator=torch.Generator().manual_seed(1))

    def run() -> list[torch.Tensor]:
        out = op(leaves)
        return list(torch.autograd.grad((out * w).sum(), [leaves[n] for n in diff]))

    return run


def check_agreement(name: str, ours: Op, peer: Op, diff: list[str], T: int) -> None:
    """Outputs (and input gradients) of ours and fla agree before anything is timed."""
    x = inputs(T, seed=123)
    # fla's CG adds 1e-5 to every denominator; 30 steps converge either way
    assert_close(f"{name} output T={T}", forward(peer, x)(), forward(ours, x)(), ratio=1e-3)
    g_peer = forward_backward(peer, x, diff)()
    g_ours = forward_backward(ours, x, diff)()
    # ours is the gradient of the exact solve, fla's that of 30 truncated CG steps (each with
    # the 1e-5 bias): they differ most in dLambda, which sums over every token (~1e-2)
    for n, a, b in zip(diff, g_peer, g_ours, strict=True):
        assert_close(f"{name} d{n} T={T}", a, b, ratio=3e-2)


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0] if __doc__ else "bench")
    p.add_argument("--lengths", type=int, nargs="+", help="sequence lengths T (512 2048 8192)")
    a = p.parse_args()
    lengths = a.lengths or ([512] if a.quick else [512, 2048, 8192])
    repeats = 3 if a.quick else a.repeats
    print(
        "fla's Triton kernels do not run on a CPU; the peers are its pure-PyTorch references "
        f"(fla/ops/*/naive.py). B={B}, {HEADS} heads x {DIM}, chunk {CHUNK} (ours for Mesa: "
        f"{MESA_CHUNK}, its default), {CG_STEPS} CG steps, {a.threads} thread(s), "
        f"{repeats} interleaved repeats.\n",
        flush=True,
    )
    ops = pairs()
    tables = {
        (name, mode): BenchTable(f"{name} {mode} vs fla naive", candidate="ours")
        for name in ops
        for mode in ("forward", "forward+backward")
    }
    with limit_threads(a.threads):
        for name, (ours, peers, diff) in ops.items():
            for peer in peers.values():
                check_agreement(name, ours, peer, diff, T=256)
    for T in lengths:
        x = inputs(T)
        for name, (ours, peers, diff) in ops.items():
            fns = {"ours": forward(ours, x)} | {n: forward(p, x) for n, p in peers.items()}
            tables[(name, "forward")].add(
                f"T={T}", measure(fns, repeats=repeats, threads=a.threads)
            )
            fns = {"ours": forward_backward(ours, x, diff)} | {
                n: forward_backward(p, x, diff) for n, p in peers.items()
            }
            res = measure(fns, repeats=repeats, threads=a.threads)
            tables[(name, "forward+backward")].add(f"T={T}", res)
            print(f"done {name} T={T}", flush=True)
    finish(list(tables.values()), a.json)


if __name__ == "__main__":
    main()
