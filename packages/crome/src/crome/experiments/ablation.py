"""Issue 14's ablation: why the CROME RM of the tiny reproduce does not learn the causal attribute.

Every arm starts from the same MiniLM weights and the same world as ``crome reproduce --scale
tiny`` and changes ONE thing: which augmented rows are mixed in (all, causal only, no original
pairs), the tie weight lambda, the number of steps, or the learning rate. Reported per arm:
i.i.d. and counterfactual accuracy, causal accuracy (correct > wrong at equal decoration),
the share of decoration probes where the decorated answer wins, spurious and causal
sensitivity, and the spread of rewards (a collapsed RM has spread ~0).

    python -m crome.experiments.ablation --arms crome,crome_4x_steps --out ablation.json

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
from crome.augment import (
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
        "standard": {**ev(base), "cpu_s": time.process_time() - t0}
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
            out.write_text(json.dumps(results, indent=1) + "\n")
    return results


def main(argv: list[str] | None = None) -> None:
    from shared_core.device import limit_threads

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--arms", default="crome", help=f"comma-separated, among {', '.join(ARMS)}")
    p.add_argument("--out", type=Path, default=None, help="write the results here as JSON")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=None, help="world and training seed (default 0)")
    ns = p.parse_args(argv)
    with limit_threads(ns.threads):
        res = run_ablation(ns.arms.split(","), out=ns.out, seed=ns.seed)
    for name, m in res.items():
        print(name, {k: round(v, 3) if isinstance(v, float) else v for k, v in m.items()})


if __name__ == "__main__":
    main()
