"""Headline experiment at small scale: standard RM vs CROME RM in the controlled world.

Both reward models start from the same MiniLM encoder, see the same original preference
pairs (the same human-label budget) and take the same number of optimiser steps; CROME's
extra rows are the filtered causal and neutral augmentations of those pairs, produced by
the exact programmatic oracle. Reported: i.i.d. accuracy, counterfactual accuracy (the
spurious correlation flipped), the reward change caused by decoration alone (spurious
sensitivity) versus by correctness alone (causal sensitivity), and Best-of-N gold reward.
An optional second run drives the same pipeline with the SmolLM2-135M-Instruct oracle and
reports its augmentation acceptance rate.
"""

from __future__ import annotations

import copy
import math
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from crome import world as W
from crome.augmentation import (
    AugmentConfig,
    augment,
    basic_verifier,
    filter_augmentations,
    world_irrelevant,
    world_verifier,
)
from crome.cache import OracleCache
from crome.data import write_pairs
from crome.evaluate import (
    WORLD_MAPPING,
    best_of_n,
    load_rewardbench,
    rewardbench_scores,
    sensitivity,
    signed_preference,
)
from crome.experiments.config import SCALES, ExperimentConfig
from crome.model import RewardModel, minilm_path, random_bert
from crome.oracle import LLMOracle, ProgrammaticOracle, TransformersBackend
from crome.train import TrainConfig, train_reward_model
from shared_core.cli import ReproduceArgs
from shared_core.device import seed_everything
from shared_core.distributed import is_main
from shared_core.progress import phase
from shared_core.report import Run


def config_for(args: ReproduceArgs, llm_oracle: bool | None = None) -> ExperimentConfig:
    """The scale's config (``args.config``, else ``SCALES[args.scale]``) with the run's seed
    and device, and the ``--llm-oracle`` choice when one was made."""
    cfg = args.config if args.config is not None else SCALES[args.scale]
    if not isinstance(cfg, ExperimentConfig):
        raise TypeError(f"args.config: expected an ExperimentConfig, got {type(cfg).__name__}")
    cfg = replace(
        cfg,
        world=replace(cfg.world, seed=args.seed),
        train=replace(cfg.train, seed=args.seed, device=args.device),
    )
    if llm_oracle is not None:
        cfg = replace(cfg, llm_oracle=llm_oracle)
    return cfg


def new_reward_model(cfg: ExperimentConfig) -> RewardModel:
    """The experiment's starting reward model: MiniLM-L6 + a zero head, or (micro) a random
    2-layer BERT on the world's vocabulary."""
    if cfg.backbone == "random-bert":
        return random_bert(W.vocabulary(), max_length=cfg.max_length, seed=cfg.world.seed)
    return RewardModel.from_backbone(minilm_path(), max_length=cfg.max_length)


def best_of_n_trap(model: RewardModel, w: W.World, n_best_of: int, seed: int) -> dict[str, float]:
    """Best-of-`n_best_of` gold reward on half the world's causal prompts, each with one correct
    plain answer among decorated wrong ones (the spurious trap); `crome.best_of_n`'s result."""
    rng = random.Random(seed)
    prompts, cands = [], []
    for q, _, _ in w.causal[: max(1, len(w.causal) // 2)]:
        a, b = W.parse_prompt(q)
        # one correct plain answer among decorated wrong ones: the spurious trap of Best-of-N
        c = [W.Answer(a + b).render()] + [
            W.Answer(
                W.wrong_value(a + b, rng), preamble=True, bullets=True, filler=rng.randint(2, 3)
            ).render()
            for _ in range(n_best_of - 1)
        ]
        rng.shuffle(c)
        prompts.append(q)
        cands.append(c)
    return best_of_n(model, prompts, cands, W.gold_reward, seed=seed)


def _evaluate(
    model: RewardModel, w: W.World, bench_file: Path, n_best_of: int, seed: int
) -> dict[str, float]:
    scores = rewardbench_scores(model, load_rewardbench(bench_file), mapping=WORLD_MAPPING)
    spur = sensitivity(model, w.spurious)
    caus = sensitivity(model, w.causal)
    bon = best_of_n_trap(model, w, n_best_of, seed)
    return {
        "iid_acc": scores["I.I.D."],
        "cf_acc": scores["Counterfactual"],
        "spurious_sens": spur,
        "causal_sens": caus,
        "causal_acc": signed_preference(model, w.causal),
        "spurious_to_causal": spur / max(caus, 1e-12),
        "prefers_decorated": signed_preference(model, w.spurious),
        "bon_gold": bon["rm"],
        "bon_random": bon["random"],
    }


def llm_oracle_run(
    cfg: ExperimentConfig, w: W.World, cache_root: Path, device: str
) -> dict[str, Any]:
    """Augment a few world pairs with the SmolLM2 oracle; acceptance as checked exactly."""
    t0 = time.time()
    backend = TransformersBackend.smollm2(device=device)
    load_s = time.time() - t0
    oracle = LLMOracle(
        backend, cache=OracleCache(cache_root), max_rubrics=1, max_tokens=cfg.llm_max_tokens
    )
    rows = w.train[: cfg.llm_prompts]
    aug_cfg = AugmentConfig(iqn=False, max_rubrics=1)
    t1 = time.time()
    strict, stats_strict = augment(
        rows, oracle, aug_cfg, verify=world_verifier, show_progress=is_main()
    )
    gen_s = time.time() - t1
    # the same replies again, from the cache, judged only by the generic verifier
    _, stats_basic = augment(rows, oracle, aug_cfg, verify=basic_verifier)
    example = {}
    if rows:
        r = rows[0]
        example = {
            "prompt": r.prompt,
            "rubrics": oracle.rubrics(r.prompt),
            "chosen": r.chosen,
            "degraded": oracle.rewrite(r.prompt, r.chosen, oracle.rubrics(r.prompt)[0], "degrade"),
        }
    return {
        "prompts": len(rows),
        "requests": sum(stats_strict.attempted.values()),
        "acceptance_exact": stats_strict.acceptance_rate,
        "acceptance_basic": stats_basic.acceptance_rate,
        "acceptance_by_kind": stats_strict.rates(),
        "accepted_pairs": len(strict),
        "oracle_calls": oracle.calls,
        "cache_hits": oracle.cache.hits if oracle.cache else 0,
        "load_s": load_s,
        "generate_s": gen_s,
        "example": example,
    }


def budget(cfg: ExperimentConfig, n_rows: int) -> TrainConfig:
    """The training settings of BOTH reward models: ``cfg.train``, with ``steps`` sized to
    ``cfg.epochs`` passes over the CROME data (original + augmented rows) when `epochs` is set.

    Both RMs take the same steps (same compute); sizing them by the larger data set is what
    lets the CROME RM see each causal pair several times (issue 14: with the standard RM's
    budget it saw its data 0.7 times and never learned the causal attribute).
    """
    if cfg.epochs is None:
        return cfg.train
    steps = max(1, math.ceil(cfg.epochs * n_rows / cfg.train.batch_size))
    return replace(cfg.train, steps=steps)


def run(args: ReproduceArgs, llm_oracle: bool | None = None) -> Path:
    """The experiment of ``crome reproduce`` (its caller announces the plan and the ``load``
    phase first: the imports and the encoder take seconds)."""
    cfg = config_for(args, llm_oracle)
    seed_everything(args.seed)
    report = Run("crome", cfg, out=args.out, enabled=is_main())
    w = W.make_world(cfg.world)
    bench = report.dir / "world_rewardbench.jsonl"
    write_pairs(bench, w.test_iid + w.test_cf)

    base = new_reward_model(cfg)  # first: a missing extra stops the run before any work
    phase("augment")
    init_state = copy.deepcopy(base.state_dict())
    oracle = ProgrammaticOracle(seed=args.seed)
    aug, stats = augment(
        w.train,
        oracle,
        AugmentConfig(seed=args.seed),
        verify=world_verifier,
        irrelevant=world_irrelevant,
    )
    train_cfg = budget(cfg, len(w.train) + len(aug))
    phase("train standard RM")
    t0 = time.time()
    hist_std = train_reward_model(
        base, w.train, train_cfg, show_progress=is_main(), desc="standard RM train"
    )
    std_s = time.time() - t0

    phase("train CROME RM")
    margins = base.margins(
        [r.prompt for r in aug], [r.chosen for r in aug], [r.rejected for r in aug]
    ).numpy()
    kept = filter_augmentations(aug, margins, tau=cfg.tau, delta=cfg.delta)
    write_pairs(report.dir / "augmentations.jsonl", kept)

    crome_model = new_reward_model(cfg)
    crome_model.load_state_dict(init_state)
    t0 = time.time()
    hist_crome = train_reward_model(
        crome_model, list(w.train) + kept, train_cfg, show_progress=is_main(), desc="CROME RM train"
    )
    crome_s = time.time() - t0

    phase("evaluate")
    results = {
        "standard RM": _evaluate(base, w, bench, cfg.n_best_of, args.seed),
        "CROME RM": _evaluate(crome_model, w, bench, cfg.n_best_of, args.seed),
    }
    for name, m in results.items():
        report.add_row(
            "standard vs CROME (controlled world)",
            method=name,
            iid_acc=m["iid_acc"],
            cf_acc=m["cf_acc"],
            causal_acc=m["causal_acc"],
            spurious_sens=m["spurious_sens"],
            causal_sens=m["causal_sens"],
            spur_over_causal=m["spurious_to_causal"],
            prefers_decorated=m["prefers_decorated"],
            bon_gold=m["bon_gold"],
        )
    by_prov: dict[str, int] = {}
    for r in kept:
        by_prov[r.provenance] = by_prov.get(r.provenance, 0) + 1
    report.log(
        results=results,
        augmented=len(aug),
        kept_after_filter=len(kept),
        kept_by_provenance=by_prov,
        programmatic_acceptance=stats.acceptance_rate,
        steps=train_cfg.steps,
        train_s_standard=std_s,
        train_s_crome=crome_s,
    )
    _plots(report, results, hist_std, hist_crome)

    if cfg.llm_oracle:
        phase("SmolLM2 oracle")
        llm = llm_oracle_run(cfg, w, report.dir / "oracle_cache", device=_dev(args.device))
        report.add_row(
            "SmolLM2-135M-Instruct oracle (augmentation acceptance)",
            prompts=llm["prompts"],
            requests=llm["requests"],
            accepted_exact=llm["acceptance_exact"],
            accepted_basic=llm["acceptance_basic"],
            oracle_calls=llm["oracle_calls"],
            generate_s=llm["generate_s"],
        )
        report.log(llm_oracle=llm)
    phase("report")
    notes = (
        "Controlled world: sums 'What is a + b?'; causal attribute = correctness of the value; "
        "spurious = polite preamble, bullets, filler length (on the preferred answer with p="
        f"{cfg.world.p_spurious} in train, flipped in the counterfactual test). Same original "
        f"pairs ({cfg.world.n_train}) and steps ({train_cfg.steps}) for both RMs; CROME adds "
        f"{len(kept)} filtered augmentations of {len(aug)}."
    )
    if not cfg.llm_oracle:
        notes += " SmolLM2 oracle run skipped (pass --llm-oracle, or use --scale small)."
    return report.finish(title="crome reproduce: standard RM vs CROME RM", notes=notes)


def _dev(spec: str) -> str:
    from shared_core.device import resolve_device

    return str(resolve_device(spec))


def _plots(
    report: Run,
    results: dict[str, dict[str, float]],
    hist_std: list[dict[str, float]],
    hist_crome: list[dict[str, float]],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 4.0), dpi=120)
    panels = (
        (("iid_acc", "cf_acc"), ["i.i.d.", "counterfactual"], "pairwise accuracy"),
        (
            ("spurious_sens", "causal_sens"),
            ["spurious edit", "causal edit"],
            "mean |reward change|",
        ),
    )
    width = 0.38
    for ax, (keys, ticks, ylabel) in zip(axes, panels, strict=True):
        top = max([results[n][k] for n in results for k in keys] + [1e-9])
        for i, n in enumerate(results):
            vals = [results[n][k] for k in keys]
            bars = ax.bar(np.arange(2) + width * i, vals, width=width, label=n, color=f"C{i}")
            # every bar carries its value, so a zero-height bar is still visible (issue 46)
            ax.bar_label(bars, labels=[f"{v:.2f}" for v in vals], fontsize=8, padding=2)
        ax.set_xticks(np.arange(2) + width / 2, ticks)
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1.15 * top if keys[0] != "iid_acc" else 1.15)
        ax.grid(alpha=0.3, axis="y")
    axes[0].axhline(0.5, color="grey", lw=0.8, ls="--")
    handles, labels = axes[0].get_legend_handles_labels()
    # one legend above the panels, clear of every bar (issue 46)
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.93))  # fmt: skip
    fig.suptitle("Standard RM vs CROME RM")
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    report.save_figure("accuracy_and_sensitivity", fig)
    report.plot(
        "training_loss",
        {
            "standard RM": ([h["step"] for h in hist_std], [h["loss"] for h in hist_std]),
            "CROME RM": ([h["step"] for h in hist_crome], [h["loss"] for h in hist_crome]),
        },
        xlabel="step",
        ylabel="loss (BT + lambda * tie)",
    )


__all__ = [
    "SCALES",
    "ExperimentConfig",
    "best_of_n_trap",
    "config_for",
    "llm_oracle_run",
    "new_reward_model",
    "run",
]
