"""Issue 49's ablation: CROME's effect by kind of augmentation, with and without knowledge of
the spurious attributes.

The paper makes its augmentations "without any knowledge of spurious factors". Crome up to
0.2.1 made its causally aligned neutrals by re-drawing exactly the world's planted spurious
features; since 0.3.0 they come from a generic restyle (`crome.rewrite`). Every arm starts
from the same MiniLM weights, sees the same original pairs and takes the same steps as
``crome reproduce`` at the same scale and seed (3 passes over the default CROME data); only
the kinds of filtered augmentation mixed in change:

- ``standard``: no augmentation (the filter's baseline; = the reproduce's standard RM);
- ``causal_only``: + causal augmentations (upgrade / degrade along the rubric);
- ``causal_iqn``: + irrelevant-query neutral ties;
- ``causal_iqn_generic``: + causally aligned neutrals from the generic rewrite (the default
  CROME RM of ``crome reproduce``);
- ``causal_iqn_targeted``: the causally aligned neutrals re-draw exactly the planted spurious
  features instead (``ProgrammaticOracle(neutral="oracle-knows-spurious")``: the 0.2.1 arm,
  which the paper's premise rules out).

    python -m crome.experiments.tie_kinds --scale micro-long --seed 1 --out kinds_s1.json
    python -m crome.experiments.tie_kinds --summarize kinds_s0.json kinds_s1.json kinds_s2.json
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
    causally_aligned_neutrals,
    filter_augmentations,
    world_irrelevant,
    world_verifier,
)
from crome.data import PairRow
from crome.experiments.ablation import METRICS, evaluate, t_interval
from crome.experiments.config import SCALES, ExperimentConfig
from crome.experiments.controlled_world import budget, new_reward_model
from crome.oracle import ProgrammaticOracle
from crome.train import train_reward_model
from crome.world import WorldConfig
from shared_core.atomic import atomic_write_json
from shared_core.device import seed_everything

CAUSAL = ("causal-degrade", "causal-upgrade")
TARGETED = "neutral-oracle-knows-spurious"
KINDS: dict[str, tuple[str, ...]] = {
    "causal_only": CAUSAL,
    "causal_iqn": (*CAUSAL, "neutral-iqn"),
    "causal_iqn_generic": (*CAUSAL, "neutral-iqn", "neutral-causal-aligned"),
    "causal_iqn_targeted": (*CAUSAL, "neutral-iqn", TARGETED),
}
ARMS = ("standard", *KINDS)
PRESETS: dict[str, ExperimentConfig] = {
    **SCALES,
    # micro's random 2-layer BERT (hidden 32), a 64-pair world and 10 passes over the CROME
    # data: a few CPU seconds per arm, where tiny's MiniLM arms cost ~110 s each
    "micro-long": replace(
        SCALES["micro"],
        scale="micro-long",
        world=WorldConfig(n_facts=10, n_train=64, n_test=64),
        epochs=10.0,
    ),
}
PREMISE = ("standard", "causal_only", "causal_iqn", "causal_iqn_generic")
"""The arms that respect the paper's premise (no knowledge of the spurious attributes)."""


def arm_rows(arm: str, train: list[PairRow], kept: list[PairRow]) -> list[PairRow]:
    """The original pairs followed by the kept augmentations of `arm`'s kinds (`KINDS`)."""
    if arm == "standard":
        return list(train)
    if arm not in KINDS:
        raise ValueError(f"arms: unknown arm {arm!r}; expected some of {ARMS}")
    return list(train) + [r for r in kept if r.provenance in KINDS[arm]]


def decoration_changes(rows: list[PairRow]) -> dict[str, float]:
    """Evaluation-side diagnostic: the share of neutral pairs whose two answers differ in each
    planted spurious attribute (read with `world.parse_answer`, which the rewrite never sees)."""
    if not rows:
        return {}
    pairs = [(W.parse_answer(r.chosen), W.parse_answer(r.rejected)) for r in rows]
    n = len(pairs)
    return {
        "preamble": sum(a.preamble != b.preamble for a, b in pairs) / n,
        "bullets": sum(a.bullets != b.bullets for a, b in pairs) / n,
        "filler": sum(a.filler != b.filler for a, b in pairs) / n,
        "any": sum(a.decoration != b.decoration for a, b in pairs) / n,
    }


def run_kinds(
    arms: list[str],
    cfg: ExperimentConfig = SCALES["tiny"],
    seed: int = 0,
    out: Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Train every arm of `arms` at `cfg`'s scale with world and training seed `seed`.

    Returns (and writes to `out` after each arm) per arm the metrics of
    `crome.experiments.ablation.evaluate`, the rows, steps, seed and CPU seconds, plus
    ``"augmentations"``: counts generated / kept per provenance and `decoration_changes` of
    the kept generic and targeted neutrals.
    """
    for a in arms:
        arm_rows(a, [], [])  # fail on an unknown arm before any training
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected an int >= 0, got {seed!r}")
    cfg = replace(cfg, world=replace(cfg.world, seed=seed), train=replace(cfg.train, seed=seed))
    seed_everything(seed)
    w = W.make_world(cfg.world)
    aug, _ = augment(
        w.train,
        ProgrammaticOracle(seed),
        AugmentConfig(seed=seed),
        verify=world_verifier,
        irrelevant=world_irrelevant,
    )
    targeted = [
        replace(r, provenance=TARGETED)
        for r in causally_aligned_neutrals(
            w.train,
            ProgrammaticOracle(seed, neutral="oracle-knows-spurious"),
            {r.prompt: [W.RUBRIC] for r in w.train},
            verify=world_verifier,
        )
    ]
    tc = budget(cfg, len(w.train) + len(aug))  # the reproduce's steps, for every arm
    base = new_reward_model(cfg)
    init = copy.deepcopy(base.state_dict())
    t0 = time.process_time()
    train_reward_model(base, w.train, tc, desc="standard RM train")
    std_cpu = time.process_time() - t0
    every = aug + targeted
    margins = base.margins(
        [r.prompt for r in every], [r.chosen for r in every], [r.rejected for r in every]
    ).numpy()
    kept = filter_augmentations(every, margins, tau=cfg.tau, delta=cfg.delta)
    count = {
        "generated": {p: sum(r.provenance == p for r in every) for p in KINDS["causal_iqn"]},
        "kept": {p: sum(r.provenance == p for r in kept) for p in KINDS["causal_iqn"]},
    }
    for p in ("neutral-causal-aligned", TARGETED):
        count["generated"][p] = sum(r.provenance == p for r in every)
        count["kept"][p] = sum(r.provenance == p for r in kept)
    results: dict[str, dict[str, Any]] = {
        "augmentations": {
            **count,
            "decoration_changes": {
                p: decoration_changes([r for r in kept if r.provenance == p])
                for p in ("neutral-causal-aligned", TARGETED)
            },
        }
    }

    def record(arm: str, model: Any, rows: int, cpu: float) -> None:
        m = evaluate(model, w, cfg.n_best_of, seed)
        results[arm] = {**m, "seed": seed, "rows": rows, "steps": tc.steps, "cpu_s": cpu}
        if out is not None:
            atomic_write_json(out, results)

    if "standard" in arms:
        record("standard", base, len(w.train), std_cpu)
    for a in arms:
        if a == "standard":
            continue
        rows = arm_rows(a, w.train, kept)
        model = new_reward_model(cfg)
        model.load_state_dict(init)
        t0 = time.process_time()
        train_reward_model(model, rows, tc, desc=f"{a} train")
        record(a, model, len(rows), time.process_time() - t0)
    return results


PAIRS = (
    ("causal_iqn_generic", "standard"),
    ("causal_iqn", "causal_only"),
    ("causal_iqn_generic", "causal_iqn"),
    ("causal_iqn_targeted", "causal_iqn_generic"),
)
"""The paired comparisons of `summarize_kinds` (first arm minus second, same seeds)."""


def summarize_kinds(runs: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per arm over the runs (one per seed): seeds, rows, and every metric of `METRICS` as
    ``(mean, low, high)`` (`t_interval`, 95 %); under ``"paired"``, for each of `PAIRS` seen on
    at least 2 common seeds, the same for the per-seed difference of every metric."""
    by_arm: dict[str, dict[int, dict[str, Any]]] = {}
    for run in runs:
        for arm, m in run.items():
            if arm in ARMS:
                by_arm.setdefault(arm, {})[m["seed"]] = m
    out: dict[str, dict[str, Any]] = {}
    for arm in ARMS:
        ms = by_arm.get(arm, {})
        if len(ms) < 2:
            continue
        out[arm] = {"seeds": sorted(ms), "rows": [ms[s]["rows"] for s in sorted(ms)]}
        out[arm].update({k: t_interval([m[k] for m in ms.values()]) for k in METRICS})
    paired: dict[str, Any] = {}
    for a, b in PAIRS:
        common = sorted(set(by_arm.get(a, {})) & set(by_arm.get(b, {})))
        if len(common) >= 2:
            paired[f"{a} - {b}"] = {
                k: t_interval([by_arm[a][s][k] - by_arm[b][s][k] for s in common]) for k in METRICS
            }
    if paired:
        out["paired"] = paired
    return out


def format_kinds(summary: dict[str, dict[str, Any]]) -> str:
    """`summarize_kinds`'s result as a Markdown table (mean [95 % interval])."""

    def cell(v: tuple[float, float, float]) -> str:
        return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"

    lines = [
        "| arm | premise | rows | seeds | " + " | ".join(METRICS) + " |",
        "| --- " * (4 + len(METRICS)) + "|",
    ]
    for arm, m in summary.items():
        if arm == "paired":
            continue
        ok = "yes" if arm in PREMISE else "no (knows the spurious features)"
        rows = "/".join(map(str, m["rows"]))
        seeds = ",".join(map(str, m["seeds"]))
        lines.append(
            f"| {arm} | {ok} | {rows} | {seeds} | " + " | ".join(cell(m[k]) for k in METRICS) + " |"
        )
    if "paired" in summary:
        lines += ["", "| paired difference (same seeds) | " + " | ".join(METRICS) + " |"]
        lines.append("| --- " * (1 + len(METRICS)) + "|")
        for name, d in summary["paired"].items():
            lines.append(f"| {name} | " + " | ".join(cell(d[k]) for k in METRICS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from shared_core.device import limit_threads

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, among {ARMS}")
    p.add_argument("--scale", default="tiny", choices=sorted(PRESETS))
    p.add_argument("--seed", type=int, default=0, help="world and training seed")
    p.add_argument("--out", type=Path, default=None, help="write the results here as JSON")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--summarize", type=Path, nargs="+", default=None, help="pool these --out JSON files"
    )
    p.add_argument("--json", type=Path, default=None, help="with --summarize: write the summary")
    ns = p.parse_args(argv)
    if ns.summarize is not None:
        summary = summarize_kinds([json.loads(f.read_text()) for f in ns.summarize])
        print(format_kinds(summary))
        if ns.json is not None:
            atomic_write_json(
                ns.json, {"summary": summary, "files": [str(f) for f in ns.summarize]}
            )
        return
    with limit_threads(ns.threads):
        res = run_kinds(ns.arms.split(","), PRESETS[ns.scale], ns.seed, ns.out)
    for name, m in res.items():
        print(name, {k: round(v, 3) if isinstance(v, float) else v for k, v in m.items()})


if __name__ == "__main__":
    main()
