"""``pgm-diffusion reproduce``: PGM vs MDLM on char Shakespeare (text.py) and 8x8 digits (digits.py)."""

from __future__ import annotations

import time
from dataclasses import asdict

from pgm.experiments.common import ReproduceConfig
from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan

# CPU seconds per scale, one thread: the heartbeat's ETA and the costs `pgm-diffusion reproduce
# --help` prints; `cpu_s` of the committed results/tiny.json and results/small.json (a test
# checks both).
ESTIMATE_S = {"micro": 20.0, "tiny": 211.0, "small": 492.0}


def run(args: ReproduceArgs) -> int:
    """Both findings on one budget: text (quality vs throughput) then digits; one report."""
    from masked_diffusion import require_shakespeare

    from pgm.experiments.digits import run_digits
    from pgm.experiments.text import run_text
    from shared_core.device import seed_everything
    from shared_core.distributed import init_distributed
    from shared_core.report import Run

    cfg: ReproduceConfig = args.config
    require_shakespeare("pgm-diffusion")  # a missing extra is one line, before the plan's
    plan(["char Shakespeare", "8x8 digits", "plots and report"], ESTIMATE_S.get(args.scale))
    seed_everything(args.seed)
    info = init_distributed(args.device)
    run = Run(
        "pgm-diffusion",
        asdict(cfg),
        out=args.out,
        enabled=info.is_main,
    )
    phase("char Shakespeare")
    t0 = time.time()
    text = run_text(cfg, args.seed, info, run)
    phase("8x8 digits")
    t1 = time.time()
    digits = run_digits(cfg, args.seed, info, run)
    phase("plots and report")
    run.log(text_seconds=t1 - t0, digits_seconds=time.time() - t1)
    run.plot(
        "text_quality_vs_throughput",
        text,
        xlabel="sampling throughput (tokens/s)",
        ylabel="generative perplexity (char GPT)",
        logx=True,
        title="char Shakespeare: quality vs throughput (points: sampling steps)",
    )
    run.plot(
        "digits_quality_vs_throughput",
        digits,
        xlabel="sampling throughput (tokens/s)",
        ylabel="Frechet distance (classifier features)",
        logx=True,
        title="8x8 digits: quality vs throughput (points: sampling steps)",
    )
    run.finish(
        title="pgm reproduce: Partition Generative Models vs MDLM",
        notes=(
            "Same width, same optimiser, steps and batches for every model; every PGM arm has "
            "n_encoder + n_decoder == MDLM's blocks (matched depth; parameters match up to the "
            "GroupSwap layer). Text: MDLM on its ancestral sampler and on PGM's random-order "
            "sampler (same order and counts, full length), PGM on its packed random-order "
            "sampler, at equal steps and batch; gen_ppl is the perplexity of the samples under a "
            "char-level GPT trained here on the same split (lower is better; the data row is "
            "the validation windows). val NELBO is MDLM's estimator (PGM: group-1 tokens only; "
            "see masked_diffusion.nelbo for how it bounds the NLL). Digits: both models with "
            "2-D RoPE over the grid plus learned absolute positions; Halton and "
            "MaskGIT-confidence samplers; Frechet distance in features of a digit classifier "
            "trained here, to the test images (the data row: train vs test)."
        ),
    )
    return 0
