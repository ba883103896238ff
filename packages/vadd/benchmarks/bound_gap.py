"""The valid T-step bound against the exact NLL on the tests' trained toy (README, "Only steps
that reveal a token pay a KL"): 0.2.0's bound (a KL at every step) and 0.2.1's (a KL only with
the probability that the step reveals a token), both with every expectation done by enumeration
(`vadd.reference.valid_bound_enumerated`, Gauss-Hermite over r's noise), beside the exact NLL
of the T-step sampler (`vadd.exact_sample_distribution`, 16384 scrambled-Sobol points per step).

The toy is the `trained` fixture of tests/conftest.py: V = 4, L = 2, X^1 = X^2 uniform mixed
with 10% uniform mass, 20000 rows, VADD with latent d = 2 (2 layers, width 32), 400 steps.
Nats per sequence, averaged over the data distribution. Writes results/bound-gap.json.

    python benchmarks/bound_gap.py            # from packages/vadd, about 2 CPU-minutes
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
import vadd
from masked_diffusion import mdlm_train_config, row_batches
from vadd.reference import valid_bound_enumerated

from shared_core.atomic import atomic_write_text
from shared_core.device import limit_threads
from shared_core.train import fit

HERE = Path(__file__).resolve().parent.parent
V, L, STEPS, N_LATENT, N_NODES = 4, 2, (1, 2, 4, 8), 16384, 16


def toy_table(noise: float = 0.1) -> torch.Tensor:
    """X^1 = X^2 uniform on V categories, mixed with `noise` uniform mass (the tests' table)."""
    return ((1 - noise) * torch.eye(V) / V + noise / V**2).float()


def train(table: torch.Tensor) -> vadd.VADD:
    """The tests' trained VADD (d = 2), seeded as there."""
    data = vadd.sample_table(table, 20000, torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = vadd.VADD(
        vadd.VADDConfig(V, L, latent_dim=2, d_model=32, n_heads=2, n_layers=2, latent_hidden=32)
    )
    fit(
        model, vadd.vadd_loss_fn(vadd.ObjectiveConfig(anneal_steps=100)),
        row_batches(data, 256, seed=0), mdlm_train_config(400, lr=3e-3, warmup=20),
        show_progress=False, device="cpu",
    )  # fmt: skip
    return model.eval()


def main() -> None:
    c0 = time.process_time()
    with limit_threads(1):
        table = toy_table()
        model = train(table)
        x0 = torch.cartesian_prod(torch.arange(V), torch.arange(V))
        p_data = table[x0[:, 0], x0[:, 1]].double()
        rows = []
        for steps in STEPS:
            law = vadd.exact_sample_distribution(model, steps, n_latent=N_LATENT)
            nll = -law[tuple(x0.T)].double().log()
            tight = valid_bound_enumerated(model, x0, steps, n_nodes=N_NODES)
            old = valid_bound_enumerated(model, x0, steps, kl="every_step", n_nodes=N_NODES)
            row = {
                "T": steps,
                "exact_nll": float((p_data * nll).sum()),
                "bound_every_step_0_2_0": float((p_data * old).sum()),
                "bound_revealed_0_2_1": float((p_data * tight).sum()),
            }
            row["gap_0_2_0"] = row["bound_every_step_0_2_0"] - row["exact_nll"]
            row["gap_0_2_1"] = row["bound_revealed_0_2_1"] - row["exact_nll"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    payload = {
        "command": "python benchmarks/bound_gap.py",
        "cpu_s": time.process_time() - c0,
        "n_latent": N_LATENT,
        "n_nodes": N_NODES,
        "rows": rows,
    }
    out = HERE / "results" / "bound-gap.json"
    atomic_write_text(out, json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out.relative_to(HERE)}", file=sys.stderr)


if __name__ == "__main__":
    main()
