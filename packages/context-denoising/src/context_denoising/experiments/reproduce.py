"""``context-denoising reproduce``: the retrieval experiment, its table, plot and report."""

from __future__ import annotations

import time
from typing import Any

from context_denoising.experiments import ESTIMATE_S
from context_denoising.experiments.retrieval import Config, run, summarise


def reproduce(args: Any) -> int:
    """Run the scale's experiment and write ``runs/context-denoising/<ts>/``."""
    from shared_core.device import resolve_device
    from shared_core.progress import phase, plan
    from shared_core.report import Run

    cfg: Config = args.config
    plan([f"train + evaluate {arm}" for arm in cfg.arms] + ["report"], ESTIMATE_S.get(args.scale))
    device = str(resolve_device(args.device))
    with Run("context-denoising", cfg, out=args.out) as rep:
        t0 = time.process_time()
        results = run(cfg, seed=args.seed, device=device)
        for row in summarise(results):
            rep.add_row("SFT vs CDT (mean ± std over seeds)", **row)
        for r in results["runs"]:
            rep.add_row(
                "per seed",
                **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()},
            )
        phase("report")
        rep.log(train_eval_cpu_s=time.process_time() - t0, runs=results["runs"])
        held = [r for r in results["runs"] if r["test"] == "held-out"]
        rep.plot(
            "score_by_kind",
            {
                arm: (
                    [0, 1, 2, 3],
                    [
                        sum(r[f"score {k}"] for r in held if r["arm"] == arm)
                        / max(1, sum(1 for r in held if r["arm"] == arm))
                        for k in ("needle", "distractor", "haystack", "rare")
                    ],
                )
                for arm in cfg.arms
            },
            xlabel="token kind (0 needle, 1 distractor, 2 haystack, 3 low-frequency)",
            ylabel="||g||_2 / mean over context",
            title="Noise score by planted token kind after training (held-out)",
        )
        rep.finish(
            title="context-denoising: SFT vs CDT on key-value retrieval",
            notes=(
                f"Scale {args.scale}: 2-layer d={cfg.hidden_size} Llama, arms {', '.join(cfg.arms)}; "
                f"{cfg.steps} steps (equal-FLOPs SFT: {round(cfg.steps * cfg.flops_ratio)}), "
                f"batch {cfg.batch_size}, CDT: beta {cfg.cdt.beta:g} (the paper's), CDT large step: beta {cfg.cdt_large.beta:g}, "
                f"{cfg.seeds} seed(s), {cfg.n_test} test examples per set. Scores are "
                "normalised so the mean over a sequence's context is 1."
            ),
        )
    return 0
