"""FEM's cost over its base read, per prior, and our GLA prior against flash-linear-attention's.

1. Forward + backward of the FEM read (`free_energy_read`: clip, exp, ONE prior call over
   ``2 d_v`` channels, log) against the base read of the same prior, at T = 512, 2048, 8192
   (``--quick``: 512). The FEM layer's budget (E = D/2) makes its prior read ``2 * E/H = D/H``
   channels, as many as standard attention's base read of width D ("base, d_v = D/H"); "base,
   same d_v" reads FEM's value width E/H. The paper's claim is the same asymptotic cost: the
   speed-up column (base time / FEM time, > 1: FEM faster) is the constant factor.
2. The GLA prior's chunkwise read against flash-linear-attention's pure-PyTorch
   ``naive_chunk_simple_gla`` (the reference a CPU user would run; its Triton kernels need a
   GPU), fed the same featurised queries and keys and ``[v, 1]`` so that it computes the same
   normalised read. Loaded from its file (``spec_from_file_location``): importing ``fla``
   itself would import all of it. Outputs are compared first.

Both at batch 1, 4 heads, d_k = 32, d_v = 16 (E/H of a D = 128 layer), float32, one thread.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
from free_energy_mixer import chunk_normalized_read, feature_map, free_energy_read
from free_energy_mixer.priors import gla_prior, linear_prior, softmax_prior

from shared_core.bench import BenchTable, bench_parser, finish, measure
from shared_core.testing import relative_rms_error

H, DK, DV = 4, 32, 16


def fla_naive(op: str) -> ModuleType | None:
    """``fla/ops/<op>/naive.py`` as a module without importing ``fla``; None if absent."""
    spec = importlib.util.find_spec("fla")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "ops" / op / "naive.py"
    s = importlib.util.spec_from_file_location(f"fla_naive_{op}", path)
    assert s is not None and s.loader is not None
    module = importlib.util.module_from_spec(s)
    s.loader.exec_module(module)
    return module


def _fwd_bwd(fn: Callable[..., torch.Tensor], *args: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        for a in args:
            a.grad = None
        fn(*args).sum().backward()

    return run


def main() -> None:
    p = bench_parser(__doc__.splitlines()[0])
    ns = p.parse_args()
    lengths = (512,) if ns.quick else (512, 2048, 8192)
    repeats = 3 if ns.quick else ns.repeats
    tables = []
    for name in ("softmax", "linear", "gla"):
        table = BenchTable(f"FEM read over the base read, {name} prior, fwd+bwd", candidate="FEM")
        for T in lengths:
            g = torch.Generator().manual_seed(0)
            q = torch.randn(1, H, T, DK, generator=g).requires_grad_(True)
            k = torch.randn(1, H, T, DK, generator=g).requires_grad_(True)
            v = torch.randn(1, H, T, DV, generator=g).requires_grad_(True)
            v2 = torch.randn(1, H, T, 2 * DV, generator=g).requires_grad_(True)
            a = (-torch.rand(1, H, T, generator=g) * 0.1).requires_grad_(True)
            beta = torch.full((H, DV), 1.953).requires_grad_(True)
            if name == "softmax":
                prior: Callable[..., torch.Tensor] = lambda q, k, v, a: softmax_prior(q, k, v)  # noqa: E731
            elif name == "linear":
                prior = lambda q, k, v, a: linear_prior(q, k, v)  # noqa: E731
            else:
                prior = lambda q, k, v, a: gla_prior(a)(q, k, v)  # noqa: E731

            def fem(q, k, v, a, beta, prior=prior):  # type: ignore[no-untyped-def]
                mu, F = free_energy_read(lambda q_, k_, x: prior(q_, k_, x, a), q, k, v, beta)
                return mu + F

            fns = {
                "FEM": _fwd_bwd(fem, q, k, v, a, beta),
                "base, d_v = D/H": _fwd_bwd(prior, q, k, v2, a),
                "base, same d_v": _fwd_bwd(prior, q, k, v, a),
            }
            table.add(f"T={T}", measure(fns, repeats=repeats, threads=ns.threads))
        tables.append(table)

    naive = fla_naive("simple_gla")
    if naive is None:
        print("flash-linear-attention (fla-core) is not installed: GLA peer skipped")
    else:
        table = BenchTable("GLA prior: ours (chunkwise) vs fla naive_chunk_simple_gla, fwd+bwd",
                           candidate="ours")  # fmt: skip
        for T in lengths:
            g = torch.Generator().manual_seed(1)
            q = torch.randn(1, H, T, DK, generator=g).requires_grad_(True)
            k = torch.randn(1, H, T, DK, generator=g).requires_grad_(True)
            v = torch.randn(1, H, T, DV, generator=g).requires_grad_(True)
            a = (-torch.rand(1, H, T, generator=g) * 0.1).requires_grad_(True)

            def ours(q, k, v, a):  # type: ignore[no-untyped-def]
                return chunk_normalized_read(feature_map(q), feature_map(k), v, a)[0]

            def fla(q, k, v, a):  # type: ignore[no-untyped-def]
                v1 = torch.cat([v, torch.ones_like(v[..., :1])], -1)
                tr = lambda x: x.transpose(1, 2)  # noqa: E731  fla takes (B, T, H, d)
                o, _ = naive.naive_chunk_simple_gla(
                    tr(feature_map(q)), tr(feature_map(k)), tr(v1), tr(a), scale=1.0
                )
                o = o.transpose(1, 2)
                return o[..., :-1] / o[..., -1:]

            with torch.no_grad():
                err, ref = relative_rms_error(fla(q, k, v, a), ours(q, k, v, a))
            print(f"T={T}: ours vs fla outputs, relative RMS difference {err / ref:.2e}")
            fns = {"ours": _fwd_bwd(ours, q, k, v, a), "fla naive": _fwd_bwd(fla, q, k, v, a)}
            table.add(f"T={T}", measure(fns, repeats=repeats, threads=ns.threads))
        tables.append(table)
    finish(tables, ns.json)


if __name__ == "__main__":
    main()
