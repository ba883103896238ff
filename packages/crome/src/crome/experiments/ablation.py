"""Issue 14's ablation: why the CROME RM of the tiny reproduce does not learn the causal attribute.

Every arm starts from the same MiniLM weights and the same world as ``crome reproduce --scale
tiny`` and changes ONE thing: which augmented rows are mixed in (all, causal only, no original
pairs), the tie weight lambda, the number of steps, or the learning rate. Reported per arm:
i.i.d. and counterfactual accuracy, causal accuracy (correct > wrong at equal decoration),
the share of decoration probes where the decorated answer wins, spurious and causal
sensitivity, and the spread of rewards (a collapsed RM has spread ~0).

    python -m crome.experiments.ablation --arms crome,crome_4x_steps --seed 1 --out s1.json
    python -m crome.experiments.ablation --summarize s0.json s1.json s2.json --out summary.json

Each 36-step arm costs about 40 s of CPU (one thread); the 4x arms four times that.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from crome import world as W
from crome.augmentation import (
    AugmentConfig,
    augment,
    filter_augmentations,
    world_irrelevant,
    world_verifier,
)
from crome.data import PairRow
from crome.evaluate import pairwise_accuracy, sensitivity, signed_preference
from crome.experiments.config import SCALES, ExperimentConfig
from crome.experiments.controlled_world import best_of_n_trap, new_reward_model
from crome.model import RewardModel
from crome.oracle import ProgrammaticOracle
from crome.train import TrainConfig, train_reward_model
from shared_core.atomic import atomic_write_json
from shared_core.device import seed_everything

ARMS = (
    "crome",
    "crome_causal_only",
    "causal_aug_only",
    "crome_lam0.25",
    "crome_4x_steps",
    "standard_4x_steps",
    "crome_4x_lr",
)


def evaluate(model: RewardModel, w: W.World, n_best_of: int = 4, seed: int = 0) -> dict[str, float]:
    """The arm's metrics on the world's test splits and probes, and the Best-of-`n_best_of`
    gold reward of `crome reproduce` (`best_of_n_trap`)."""
    q = [p for p, _, _ in w.causal] * 2
    a = [x for _, x, _ in w.causal] + [y for _, _, y in w.causal]
    return {
        "iid_acc": pairwise_accuracy(model, w.test_iid)["world-iid"],
        "cf_acc": pairwise_accuracy(model, w.test_cf)["world-counterfactual"],
        "causal_acc": signed_preference(model, w.causal),
        "prefers_decorated": signed_preference(model, w.spurious),
        "spurious_sens": sensitivity(model, w.spurious),
        "causal_sens": sensitivity(model, w.causal),
        "reward_std": float(model.score(q, a).std()),
        "bon_gold": best_of_n_trap(model, w, n_best_of, seed)["rm"],
    }


def arm_data(
    name: str, train: list[PairRow], kept: list[PairRow], cfg: TrainConfig
) -> tuple[list[PairRow], TrainConfig]:
    """The rows and settings of one arm (`ARMS`)."""
    causal = [r for r in kept if r.label == "preference"]
    arms = {
        "crome": (train + kept, cfg),
        "crome_causal_only": (train + causal, cfg),
        "causal_aug_only": (causal, cfg),
        "crome_lam0.25": (train + kept, replace(cfg, lam=0.25)),
        "crome_4x_steps": (train + kept, replace(cfg, steps=4 * cfg.steps)),
        "standard_4x_steps": (train, replace(cfg, steps=4 * cfg.steps)),
        "crome_4x_lr": (train + kept, replace(cfg, lr_encoder=4 * cfg.lr_encoder)),
    }
    if name not in arms:
        raise ValueError(f"arms: unknown arm {name!r}; expected some of {ARMS}")
    return arms[name]


def run_ablation(
    arms: list[str],
    cfg: ExperimentConfig = SCALES["tiny"],
    out: Path | None = None,
    seed: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Train the standard RM (the filter's baseline) and every arm; write JSON after each.

    `seed`, when given, replaces the world's and the training's seed (as ``crome reproduce
    --seed`` does); else `cfg`'s seeds are used.
    """
    for a in arms:
        arm_data(a, [], [], cfg.train)  # fail on an unknown arm before any training
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed: expected an int >= 0 or None, got {seed!r}")
        cfg = replace(cfg, world=replace(cfg.world, seed=seed), train=replace(cfg.train, seed=seed))
    seed_everything(cfg.train.seed)
    w = W.make_world(cfg.world)
    base = new_reward_model(cfg)
    init = copy.deepcopy(base.state_dict())
    t0 = time.process_time()
    train_reward_model(base, w.train, cfg.train, desc="standard RM train")

    def ev(m: RewardModel) -> dict[str, float]:
        return evaluate(m, w, cfg.n_best_of, cfg.world.seed)

    results: dict[str, dict[str, Any]] = {
        "standard": {
            **ev(base),
            "seed": cfg.world.seed,
            "steps": cfg.train.steps,
            "cpu_s": time.process_time() - t0,
        }
    }
    aug, _ = augment(
        w.train,
        ProgrammaticOracle(cfg.world.seed),
        AugmentConfig(seed=cfg.world.seed),
        verify=world_verifier,
        irrelevant=world_irrelevant,
    )
    margins = base.margins(
        [r.prompt for r in aug], [r.chosen for r in aug], [r.rejected for r in aug]
    ).numpy()
    kept = filter_augmentations(aug, margins, tau=cfg.tau, delta=cfg.delta)
    for a in arms:
        rows, tc = arm_data(a, list(w.train), kept, cfg.train)
        model = new_reward_model(cfg)
        model.load_state_dict(init)
        t0 = time.process_time()
        train_reward_model(model, rows, tc, desc=f"{a} train")
        results[a] = {
            **ev(model),
            "seed": cfg.world.seed,
            "rows": len(rows),
            "steps": tc.steps,
            "cpu_s": time.process_time() - t0,
        }
        if out is not None:
            atomic_write_json(out, results)
    return results


METRICS = (
    "iid_acc",
    "cf_acc",
    "causal_acc",
    "prefers_decorated",
    "spurious_sens",
    "causal_sens",
    "bon_gold",
)
# two-sided 95 % Student-t quantiles by degrees of freedom (1..30; 30's value beyond)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t_interval(values: list[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of `values` (over seeds) and its 95 % Student-t interval."""
    if len(values) < 2:
        raise ValueError(f"values: expected at least 2 (one per seed), got {len(values)}")
    n = len(values)
    mean = sum(values) / n
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    half = _T975[min(n - 1, len(_T975)) - 1] * sd / n**0.5
    return mean, mean - half, mean + half


def summarize(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Pool `run_ablation` results of several seeds (one dict per run, e.g. per JSON file).

    Per arm: the seeds, and every metric of `METRICS` as ``(mean, low, high)`` (`t_interval`).
    An arm seen twice with the same seed (the 36-step ``standard`` RM of every run) counts once.
    ``bars``: issue 14's comparisons of ``crome_4x_steps`` with ``standard_4x_steps``, paired by
    seed, as the interval of the difference (CROME minus standard; for ``causal_acc >=
    iid_acc`` CROME's causal accuracy minus the standard RM's i.i.d. accuracy).
    """
    by_arm: dict[str, dict[int, dict[str, Any]]] = {}
    for run in runs:
        seeds = {m["seed"] for m in run.values() if "seed" in m}
        if len(seeds) != 1:
            raise ValueError(f"runs: expected one seed per run, got {sorted(seeds)}")
        (seed,) = seeds
        for arm, m in run.items():
            by_arm.setdefault(arm, {})[seed] = m
    out: dict[str, dict[str, Any]] = {}
    for arm, ms in by_arm.items():
        if len(ms) < 2:
            continue
        steps = sorted({m["steps"] for m in ms.values() if "steps" in m})
        out[arm] = {"seeds": sorted(ms), "steps": ",".join(map(str, steps)) or "?"}
        out[arm].update({k: t_interval([m[k] for m in ms.values()]) for k in METRICS})
    c, s = by_arm.get("crome_4x_steps", {}), by_arm.get("standard_4x_steps", {})
    paired = sorted(set(c) & set(s))
    if len(paired) >= 2:
        diff = {
            "causal_acc >= standard iid_acc": ("causal_acc", "iid_acc"),
            "cf_acc above standard": ("cf_acc", "cf_acc"),
            "spurious_sens below standard": ("spurious_sens", "spurious_sens"),
            "bon_gold above standard": ("bon_gold", "bon_gold"),
        }
        out["bars"] = {"seeds": paired}
        for bar, (kc, ks) in diff.items():
            out["bars"][bar] = t_interval([c[i][kc] - s[i][ks] for i in paired])
    return out


def format_summary(summary: dict[str, dict[str, Any]]) -> str:
    """`summarize`'s result as Markdown tables (mean [95 % interval])."""

    def cell(v: tuple[float, float, float]) -> str:
        return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"

    lines = [
        "| arm | steps | seeds | " + " | ".join(METRICS) + " |",
        "| --- " * (3 + len(METRICS)) + "|",
    ]
    for arm, m in summary.items():
        if arm == "bars":
            continue
        seeds = ",".join(map(str, m["seeds"]))
        vals = " | ".join(cell(m[k]) for k in METRICS)
        lines.append(f"| {arm} | {m['steps']} | {seeds} | {vals} |")
    if "bars" in summary:
        b = summary["bars"]
        lines += ["", "| issue 14 bar (crome_4x_steps - standard_4x_steps, paired) | difference |"]
        lines.append("| --- | --- |")
        lines += [f"| {k} | {cell(v)} |" for k, v in b.items() if k != "seeds"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from shared_core.device import limit_threads

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--arms", default="crome", help=f"comma-separated, among {', '.join(ARMS)}")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the results here as JSON (with --summarize: the summary, and the files pooled)",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=None, help="world and training seed (default 0)")
    p.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        default=None,
        help="instead of training: pool these --out JSON files (several seeds) into means with "
        "95%% intervals and issue 14's paired comparisons",
    )
    ns = p.parse_args(argv)
    if ns.summarize is not None:
        summary = summarize([json.loads(f.read_text()) for f in ns.summarize])
        print(format_summary(summary))
        if ns.out is not None:
            atomic_write_json(ns.out, {"summary": summary, "files": [str(f) for f in ns.summarize]})
        return
    with limit_threads(ns.threads):
        res = run_ablation(ns.arms.split(","), out=ns.out, seed=ns.seed)
    for name, m in res.items():
        print(name, {k: round(v, 3) if isinstance(v, float) else v for k, v in m.items()})


if __name__ == "__main__":
    main()
