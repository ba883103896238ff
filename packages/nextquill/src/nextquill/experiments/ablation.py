"""``reproduce --ablate``: why NextQuill does not beat L_n only in the planted run.

The paper's ablation (Sec. 5) has the full objective L_n + alpha L_p beat data-side weighting
alone (L_n only; Books ROUGE-1 0.2318 vs 0.1958). The planted run does not show it, so each
suspect is changed on its own, paper form (theta_D weights, weighted L_p), same seeds, worlds
and batches as the scale's arms: alpha (L_p's weight), delta (the DCE threshold that picks the
preference tokens) and theta_D's quality (trained twice as long on D). Each variant reports
L_n only, NextQuill and their per-seed difference with a Student-t 95 % interval.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from nextquill.experiments.costs import ABLATE_ESTIMATE_S
from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan


@dataclass(frozen=True)
class Variant:
    """One change to the scale's config: `loss` fields of `NextQuillConfig`, and theta_D
    trained for `reference_factor` times the scale's ``reference_steps``."""

    label: str
    loss: dict[str, Any] = field(default_factory=dict)
    reference_factor: int = 1


VARIANTS = (
    Variant("paper's constants (α 0.1, δ 0.05), θ_D as the scale"),
    Variant("α = 0.5", {"alpha": 0.5}),
    Variant("δ = 0.2", {"delta": 0.2}),
    Variant("θ_D trained 2× longer", reference_factor=2),
)
KEYS = ("slot_acc", "rouge1")


def reproduce(args: ReproduceArgs) -> dict[str, dict[str, list[dict[str, float]]]]:
    """Train θ_D (1× and 2×) and L_n only / NextQuill per variant and seed; report the table."""
    from nextquill.experiments.planted import Config, _train, evaluate, t_interval
    from nextquill.model import word_tokenizer
    from nextquill.world import make_world
    from shared_core.report import Run

    config: Config = args.config
    seeds = [f"seed {args.seed + s}" for s in range(config.seeds)]
    plan([*seeds, "report"], ABLATE_ESTIMATE_S.get(args.scale))
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        v.label: {"ln": [], "nextquill": []} for v in VARIANTS
    }
    theta: dict[int, list[dict[str, float]]] = {}
    with Run("nextquill", config, out=args.out) as run:
        for s in range(config.seeds):
            seed = args.seed + s
            phase(f"seed {seed}")
            world = make_world(config.world, seed=seed)
            tok = word_tokenizer(world.vocabulary)
            test = world.test[: config.eval_examples]
            refs: dict[int, Any] = {}
            for factor in sorted({v.reference_factor for v in VARIANTS}):
                t0 = time.process_time()
                ref_config = replace(config, steps=config.reference_steps * factor)
                refs[factor] = _train("sft", world, tok, seed, ref_config, args.device, None)[0]
                refs[factor].requires_grad_(False)
                metrics = evaluate(refs[factor], tok, test, config.loss)
                theta.setdefault(factor, []).append(metrics | {"cpu_s": time.process_time() - t0})
            done: dict[Any, dict[str, float]] = {}  # L_n only ignores alpha: train it once
            for v in VARIANTS:
                loss = replace(config.loss, **v.loss)
                for arm in ("ln", "nextquill"):
                    key = (
                        arm,
                        replace(loss, alpha=0.0) if arm == "ln" else loss,
                        v.reference_factor,
                    )
                    if key not in done:
                        t0 = time.process_time()
                        cfg = replace(config, loss=loss)
                        model = _train(
                            arm, world, tok, seed, cfg, args.device, refs[v.reference_factor]
                        )[0]
                        done[key] = evaluate(model, tok, test, loss) | {
                            "cpu_s": time.process_time() - t0
                        }
                    results[v.label][arm].append(done[key])
        phase("report")
        for factor, per_seed in theta.items():
            run.add_row(
                "theta_d",
                steps=config.reference_steps * factor,
                **{k: round(float(np.mean([r[k] for r in per_seed])), 3) for k in per_seed[0]},
            )
        for label, arms in results.items():
            row: dict[str, Any] = {"variant": label}
            for arm, per_seed in arms.items():
                for k in KEYS:
                    row[f"{arm}_{k}"] = round(float(np.mean([r[k] for r in per_seed])), 3)
            for k in KEYS:
                d = [a[k] - b[k] for a, b in zip(arms["nextquill"], arms["ln"], strict=True)]
                m, lo, hi = t_interval(d)
                row[f"diff_{k}"] = f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            run.add_row("ablation", **row)
        run.log(ablation=results, theta_d={str(f): r for f, r in theta.items()})
        run.finish(
            "NextQuill − L_n only (paper form) under one change each",
            notes=f"{config.seeds} seed(s); {config.steps} steps of batch {config.batch} per arm; "
            f"θ_D = ContextSFT of the same seed trained {config.reference_steps} steps (2× for "
            "its variant); diff = NextQuill − L_n only, mean over seeds [Student-t 95 % "
            "interval]; means of slot-token accuracy and ROUGE-1 F on held-out users.",
        )
    return results
