"""PGM vs MDLM (masked-diffusion) on shared_core.bench: sampling and one training step at
L = 128, 512, 1024. One ratio direction throughout: speed-up = MDLM time / PGM time (> 1: PGM
is faster).

    python benchmarks/bench_throughput.py --repeats 5 --json results/bench-throughput.json

MDLM: `masked_diffusion.ancestral_sample` (every step runs all 4 blocks on all L positions).
PGM: `pgm.pgm_ordered_sample` with a random order (2 encoder blocks on the clean tokens only,
GroupSwap + 2 decoder blocks on this step's L/S queries only). Same width (d = 128, 4 heads),
batch 4, 32 steps, V = 65, random weights. Training step: loss + backward + AdamW step.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
from masked_diffusion import (
    BackboneConfig,
    LogLinearSchedule,
    MaskedDiffusionTransformer,
    ancestral_sample,
    mdlm_loss,
    random_order,
)
from pgm import PartitionTransformer, PGMConfig, pgm_loss, pgm_ordered_sample

from shared_core.atomic import atomic_write_text
from shared_core.bench import BenchTable, bench_parser, finish, measure, train_step

V, D, BATCH, STEPS = 65, 128, 4, 32


def bench_length(
    n: int, repeats: int, threads: int, sampling: BenchTable, training: BenchTable
) -> None:
    """Add the rows of sequence length `n` to both tables."""
    schedule = LogLinearSchedule()
    torch.manual_seed(0)
    mdlm = MaskedDiffusionTransformer(BackboneConfig(V, n, D, 4, 4))
    pgm = PartitionTransformer(PGMConfig(V, n, D, 4, 2, 2))
    for m in (mdlm, pgm):
        torch.nn.init.normal_(m.head.weight, std=0.1)
        m.eval()
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    order = random_order(BATCH, n, g())
    res = measure(
        {
            "PGM": lambda: pgm_ordered_sample(pgm, order, steps=STEPS, generator=g()),
            "MDLM": lambda: ancestral_sample(
                lambda x, t: mdlm(x, t), vocab_size=V, steps=STEPS, batch_size=BATCH,
                seq_len=n, generator=g(),
            ),
        },
        repeats=repeats, threads=threads,
    )  # fmt: skip
    sampling.add(f"L={n}", res)
    x0 = torch.randint(0, V, (BATCH, n), generator=g())
    mdlm.train()
    pgm.train()
    res = measure(
        {
            "PGM": train_step(pgm, lambda m: pgm_loss(m, x0, schedule, V, generator=g()).loss),
            "MDLM": train_step(
                mdlm,
                lambda m: mdlm_loss(lambda z, t: m(z, t), x0, schedule, V, generator=g()).loss,
            ),
        },
        repeats=repeats, threads=threads,
    )  # fmt: skip
    training.add(f"L={n}", res)
    print(f"L={n} done", flush=True)


def main() -> None:
    a = bench_parser(__doc__ or "").parse_args()
    lengths = (128,) if a.quick else (128, 512, 1024)
    repeats = 3 if a.quick else a.repeats
    sampling = BenchTable("sampling, PGM packed vs MDLM ancestral (speed-up = MDLM / PGM)", "PGM")
    training = BenchTable("one training step, PGM vs MDLM (speed-up = MDLM / PGM)", "PGM")
    c0, t0 = time.process_time(), time.perf_counter()
    for n in lengths:
        bench_length(n, repeats, a.threads, sampling, training)
    finish([sampling, training], None)
    if a.json is not None:  # the tables plus the command and its cost (the README cites both)
        payload = {
            "command": "python benchmarks/bench_throughput.py " + " ".join(sys.argv[1:]),
            "cpu_s": time.process_time() - c0,
            "wall_s": time.perf_counter() - t0,
            "threads": a.threads,
            "repeats": repeats,
            "tables": [
                {"title": t.title, "candidate": t.candidate, "clock": t.clock, "rows": t.rows}
                for t in (sampling, training)
            ],
        }
        atomic_write_text(Path(a.json), json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
