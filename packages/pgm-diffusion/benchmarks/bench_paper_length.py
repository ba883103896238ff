"""PGM vs MDLM sampling throughput at the paper's sequence length (L = 1024) and its step counts
(powers of 2 from 32 to 1024), on shared_core.bench: interleaved repeats, paired ratios.

One ratio direction: speed-up = MDLM time / PGM time at equal steps (> 1: PGM is faster).
MDLM: `masked_diffusion.ancestral_sample` (every step runs all blocks on all L positions).
PGM: `pgm.pgm_ordered_sample` with a random order and linear counts, the authors'
``efficient-uniform`` text sampler (the encoder runs on the clean tokens only, the decoder on
this step's L/S queries only). Both have random weights and the same width; PGM splits MDLM's
depth in half (encoder + decoder = MDLM's blocks), as the paper's 6 + 6 vs 12.

Two sizes (``--size``):

- ``cpu`` (default; one thread, CPU time): the package's default model size (`TrainSettings`
  of ``pgm-diffusion train``: d = 64, 4 heads, MDLM 2 blocks vs PGM 1 + 1), V = 65 (the char
  vocabulary), batch 1. Sized for about 5 CPU-minutes in all; the paper's 170 M-parameter models
  at batch 32 are GPU work.
- ``paper`` (for ``--device cuda``): the paper's OWT shapes, MDLM 12 blocks vs PGM 6 + 6,
  d = 768, 12 heads, V = 50257 (GPT-2), batch 32; wall time with ``torch.cuda.synchronize``.

    python benchmarks/bench_paper_length.py --json results/bench-paper-length.json
    python benchmarks/bench_paper_length.py --device cuda --size paper --repeats 3 \\
        --json results/bench-paper-length-cuda.json
"""

from __future__ import annotations

import json
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from masked_diffusion import (
    BackboneConfig,
    MaskedDiffusionTransformer,
    ancestral_sample,
    random_order,
)
from pgm import PartitionTransformer, PGMConfig, pgm_ordered_sample

from shared_core.atomic import atomic_write_text
from shared_core.bench import BenchTable, bench_parser, measure

PAPER_STEPS = (32, 64, 128, 256, 512, 1024)  # "power-of-2 step counts with 32 to 1024 steps"
# The paper's OWT table (L = 1024, batch 32, GPU): MDLM 1043.2 tokens/s, PGM 8/8 5585.6 (5.35x),
# PGM 6/6 d = 1024 5518.1 (5.29x); "at least 5x" over its step counts (Figure 1).
PAPER = {
    "mdlm_tokens_per_s": 1043.2,
    "pgm_8_8_tokens_per_s": 5585.6,
    "pgm_6_6_d1024_tokens_per_s": 5518.1,
    "speedup_pgm_8_8": 5585.6 / 1043.2,
    "speedup_claim": "at least 5x at equal steps (32 to 1024), L = 1024, OpenWebText",
}


@dataclass(frozen=True)
class Size:
    """The models and batch of one benchmark size."""

    vocab_size: int
    d_model: int
    n_heads: int
    mdlm_blocks: int
    batch: int


SIZES = {
    "cpu": Size(vocab_size=65, d_model=64, n_heads=4, mdlm_blocks=2, batch=1),
    "paper": Size(vocab_size=50257, d_model=768, n_heads=12, mdlm_blocks=12, batch=32),
}


def build(size: Size, length: int, device: str) -> tuple[torch.nn.Module, PartitionTransformer]:
    """MDLM and PGM with random weights (non-zero heads), eval mode, on `device`."""
    torch.manual_seed(0)
    v, d, h, n_blocks = size.vocab_size, size.d_model, size.n_heads, size.mdlm_blocks
    mdlm = MaskedDiffusionTransformer(BackboneConfig(v, length, d, h, n_blocks))
    pgm = PartitionTransformer(PGMConfig(v, length, d, h, n_blocks // 2, n_blocks - n_blocks // 2))
    for m in (mdlm, pgm):
        torch.nn.init.normal_(m.head.weight, std=0.1)
        m.eval().to(device)
    return mdlm, pgm


def bench(
    size: Size, length: int, steps: tuple[int, ...], repeats: int, threads: int, device: str
) -> BenchTable:
    """One row per step count: PGM's packed sampler against MDLM's ancestral sampler."""
    mdlm, pgm = build(size, length, device)
    v, b = size.vocab_size, size.batch
    cuda = device.startswith("cuda")
    table = BenchTable(
        f"sampling at L={length}, PGM packed vs MDLM ancestral (speed-up = MDLM / PGM)",
        "PGM",
        clock="wall" if cuda else "cpu",
    )

    def gen() -> torch.Generator:
        return torch.Generator(device=device).manual_seed(0)

    def denoiser(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return mdlm(x, t)

    order = random_order(b, length, gen(), device=device)
    for s in steps:
        res = measure(
            {
                "PGM": lambda s=s: pgm_ordered_sample(
                    pgm, order, steps=s, generator=gen(), device=device
                ),
                "MDLM": lambda s=s: ancestral_sample(
                    denoiser, vocab_size=v, steps=s, batch_size=b,
                    seq_len=length, generator=gen(), device=device,
                ),
            },
            repeats=repeats, warmup=0, min_time=0.0, threads=threads,
            sync=torch.cuda.synchronize if cuda else None,
        )  # fmt: skip
        row = table.add(f"L={length} steps={s}", res)
        row["steps"] = s
        row["tokens_per_s"] = {n: b * length / (ms / 1e3) for n, ms in row["times_ms"].items()}
        print(f"steps={s}: speed-up {row['speedup']['MDLM']['median']:.2f}x", flush=True)
    return table


def main() -> None:
    p = bench_parser(__doc__ or "")
    p.set_defaults(repeats=3)
    p.add_argument("--size", choices=sorted(SIZES), default="cpu", help="model sizes (above)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--length", type=int, default=1024, help="sequence length L")
    p.add_argument(
        "--steps", type=int, nargs="+", default=list(PAPER_STEPS), help="sampling step counts"
    )
    a = p.parse_args()
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("error: --device cuda: no CUDA device is available")
    steps = tuple(a.steps[:1]) if a.quick else tuple(a.steps)
    size = SIZES[a.size]
    c0, t0 = time.process_time(), time.perf_counter()
    table = bench(size, a.length, steps, 1 if a.quick else a.repeats, a.threads, a.device)
    table.print()
    if a.json is not None:
        payload = {
            "command": "python benchmarks/bench_paper_length.py " + " ".join(sys.argv[1:]),
            "cpu_s": time.process_time() - c0,
            "wall_s": time.perf_counter() - t0,
            "device": torch.cuda.get_device_name(a.device) if a.device != "cpu" else "cpu",
            "machine": platform.processor() or platform.machine(),
            "threads": a.threads,
            "size": asdict(size),
            "length": a.length,
            "paper": PAPER,
            "tables": [{"title": table.title, "candidate": "PGM", "clock": table.clock,
                        "rows": table.rows}],
        }  # fmt: skip
        atomic_write_text(Path(a.json), json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
