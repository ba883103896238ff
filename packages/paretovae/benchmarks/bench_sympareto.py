"""SymPareto against torch's own heavy-tailed families, and ParetoVAE's training-step cost.

1. ``log_prob`` and ``rsample`` of `SymPareto` against `torch.distributions.StudentT` and
   `torch.distributions.Laplace` (the families a user would otherwise pick; product form,
   summed over the 16 coordinates for log_prob) at batch 1e6 x 16 (``--quick``: 1e5 x 16),
   float32, one thread. log_prob values are checked against the float64 formula first.
2. The loss's forward + backward (the part of a training step that differs; the optimiser
   update is the same for every family, same parameters) of
   ParetoVAE (t and symPareto decoders) against the Gaussian VAE, LaplaceVAE and t3VAE on the
   same MLP: the digits setting (n = 64, m = 8, hidden 64, batch 128).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from paretovae import HeavyTailVAE, SymPareto, VAEConfig

from shared_core.bench import BenchTable, bench_parser, finish, measure


def _distribution_table(rows: int, repeats: int, threads: int) -> list[BenchTable]:
    g = torch.Generator().manual_seed(0)
    loc = torch.randn(rows, 16, generator=g)
    scale = torch.rand(rows, 16, generator=g) + 0.5
    x = torch.randn(rows, 16, generator=g) * 3
    nu = 3.0
    sp = SymPareto(loc, scale, nu, validate_args=False)
    st = torch.distributions.StudentT(nu, loc, scale, validate_args=False)
    la = torch.distributions.Laplace(loc, scale, validate_args=False)
    ref = SymPareto(loc[:1000].double(), scale[:1000].double(), nu).log_prob(x[:1000].double())
    err = float((sp.log_prob(x)[:1000].double() - ref).abs().max())
    print(f"SymPareto float32 log_prob vs float64: max abs difference {err:.2e}")
    lp = BenchTable(f"log_prob, batch {rows:.0e} x 16, float32", candidate="SymPareto")
    lp.add(
        "log_prob",
        measure(
            {
                "SymPareto": lambda: sp.log_prob(x),
                "StudentT": lambda: st.log_prob(x).sum(-1),
                "Laplace": lambda: la.log_prob(x).sum(-1),
            },
            repeats=repeats,
            threads=threads,
        ),
    )
    rs = BenchTable(f"rsample, batch {rows:.0e} x 16, float32", candidate="SymPareto")
    rs.add(
        "rsample",
        measure(
            {
                "SymPareto": lambda: sp.rsample(),
                "StudentT": lambda: st.rsample(),
                "Laplace": lambda: la.rsample(),
            },
            repeats=repeats,
            threads=threads,
        ),
    )
    return [lp, rs]


def _step(family: str) -> Callable[[], None]:
    torch.manual_seed(0)
    model = HeavyTailVAE(VAEConfig(family=family, n=64, m=8, hidden=64, recon_sigma=0.1))
    x = torch.rand(128, 64)

    def run() -> None:
        model.zero_grad(set_to_none=True)
        loss, _ = model.loss(x)
        loss.backward()

    return run


def main() -> None:
    ns = bench_parser(__doc__.splitlines()[0]).parse_args()
    rows = 100_000 if ns.quick else 1_000_000
    repeats = 3 if ns.quick else ns.repeats
    tables = _distribution_table(rows, repeats, ns.threads)
    step = BenchTable(
        "loss forward + backward (n=64, m=8, hidden 64, batch 128)", candidate="ParetoVAE-t"
    )
    fams = {
        "ParetoVAE-t": "pareto-t",
        "ParetoVAE-symPareto": "pareto-sympareto",
        "VAE": "vae",
        "LaplaceVAE": "laplace",
        "t3VAE": "t3vae",
    }
    step.add(
        "fwd+bwd",
        measure({k: _step(v) for k, v in fams.items()}, repeats=repeats, threads=ns.threads),
    )
    tables.append(step)
    finish(tables, ns.json)


if __name__ == "__main__":
    main()
