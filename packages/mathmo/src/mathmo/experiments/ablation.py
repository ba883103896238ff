"""Finding: the full bi-level search finds better Pareto fronts than its ablations.

The paper (Table 2) runs MATHMO and three ablations on TSP, job-shop scheduling, ecology and
epidemiology for 20 rounds and reports the hypervolume of each method's front: RAN (random
framework instead of Pareto-UCB), FLAT (no upper level) and NAIVE (no surrogate / hypervolume
guidance). Here the operators are the programmatic library (`ProgrammaticOperators`), every
candidate runs in the sandbox, and each (task, variant, seed) is one search.

Metric: relative hypervolume, ``HV(front of one run) / HV(all points any run found on that
task)`` in the task's normalised space (reference point 0), so 1 means the run found the best
front known; mean over seeds with a bootstrap 95 % interval, and the paired (same seed)
difference MATHMO - ablation with its interval.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mathmo.costs import ESTIMATE_S
from mathmo.operators import Evaluation, ProgrammaticOperators
from mathmo.pareto import hypervolume, non_dominated
from mathmo.search import VARIANTS, Evaluator, SearchConfig, SearchResult, run_search
from mathmo.tasks.base import Task
from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan

TASKS = ("tsp", "jobshop", "ecology", "epidemiology")
LABELS = {
    "mathmo": "MATHMO",
    "ran": "RAN (random framework)",
    "flat": "FLAT (no upper level)",
    "naive": "NAIVE (no surrogate)",
}
# The paper's Table 2 hypervolumes, for the report.
PAPER = {
    "tsp": {"mathmo": 0.998, "ran": 0.972, "flat": 0.987, "naive": 0.977},
    "jobshop": {"mathmo": 0.994, "ran": 0.948, "flat": 0.945, "naive": 0.973},
    "ecology": {"mathmo": 0.992, "ran": 0.992, "flat": 1.000, "naive": 0.894},
    "epidemiology": {"mathmo": 0.967, "ran": 0.939, "flat": 0.792, "naive": 0.713},
}


@dataclass(frozen=True)
class Config:
    """One scale of the ablation; every variant gets the same task instances, rounds and seeds."""

    tasks: tuple[str, ...] = TASKS
    variants: tuple[str, ...] = VARIANTS
    seeds: int = 10
    search: SearchConfig = field(default_factory=lambda: SearchConfig(rounds=20, time_limit=60.0))
    tsp_cities: int = 12  # Held-Karp ground truth needs n <= 12
    jobshop_size: tuple[int, int] = (8, 6)  # jobs x machines
    ortools: bool = True  # OR-Tools frameworks in TSP and job-shop (extra `tasks`)
    gplearn: bool = True  # symbolic regression framework in ecology (extra `tasks`)
    judge: str = "parsimony"  # MOSE judge: "parsimony" (programmatic) or "smollm2" (extra `llm`)
    operators: str = "programmatic"  # or "openai": $MATHMO_BASE_URL, $MATHMO_MODEL, $OPENAI_API_KEY


SCALES: dict[str, Config] = {
    "micro": Config(
        tasks=("tsp", "ecology"),
        seeds=2,
        search=SearchConfig(rounds=6, time_limit=30.0),
        tsp_cities=8,
        ortools=False,
        gplearn=False,
    ),
    "tiny": Config(),
    # 3 seeds: with 10 the SmolLM2 judge alone (~2.9 CPU-s per distinct model, 606 models)
    # would take ~30 CPU-min, over the small-scale budget
    "small": Config(tasks=("ecology", "epidemiology"), seeds=3, judge="smollm2"),
    "paper": Config(operators="openai", search=SearchConfig(rounds=20, time_limit=300.0)),
}


def make_task(name: str, config: Config, seed: int = 0) -> Task:
    """The task instance of a reproduction (the instance seed is fixed across methods)."""
    from shared_core.data import require_extra

    if config.ortools and name in ("tsp", "jobshop"):
        require_extra("mathmo", "tasks", "ortools", f"the {name} task's OR-Tools solvers")
    if config.gplearn and name == "ecology":
        require_extra("mathmo", "tasks", "gplearn", "the ecology task's symbolic regression")
    if name == "tsp":
        from mathmo.tasks.tsp import TSPTask

        return TSPTask(config.tsp_cities, seed, ortools=config.ortools)
    if name == "jobshop":
        from mathmo.tasks.jobshop import JobShopTask

        return JobShopTask(*config.jobshop_size, seed=seed, ortools=config.ortools)
    if name == "ecology":
        from mathmo.tasks.ecology import EcologyTask

        return EcologyTask(seed, symbolic=config.gplearn)
    if name == "epidemiology":
        from mathmo.tasks.epidemiology import EpidemiologyTask

        return EpidemiologyTask(seed)
    raise ValueError(f"task: expected one of {TASKS}, got {name!r}")


def relative_hypervolumes(
    results: dict[str, list[SearchResult]],
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per variant, each seed's HV divided by the HV of everything found (and that pooled front)."""
    pooled = np.vstack([r.points() for rs in results.values() for r in rs if len(r.points())])
    best = hypervolume(pooled)
    rel = {v: np.array([r.hypervolume() / best for r in rs]) for v, rs in results.items()}
    return rel, pooled[non_dominated(pooled)]


def mose_diagnostics(task: Task, evaluations: Iterable[Evaluation]) -> dict[str, Any]:
    """How the MOSE judge's interpretability scores relate to model size, over the distinct
    models a task executed: Spearman's rho with ``n_params`` (the paper reports MOSE scores
    correlating negatively with parameter count, Spearman up to -0.68; paper note, Key
    Findings) and the spread of the scores. Empty for tasks without a subjective objective."""
    if not task.subjective or "interpretability" not in task.objectives:
        return {}
    j = task.objectives.index("interpretability")
    ok = [e for e in evaluations if not e.failed]
    scores = np.array([float(e.y[j]) for e in ok])
    sizes = np.array([dict(e.raw)["n_params"] for e in ok], dtype=np.float64)
    out: dict[str, Any] = {"mose_models": len(ok)}
    if len(ok):
        out["mose_min"], out["mose_max"] = float(scores.min()), float(scores.max())
    if len(ok) >= 3 and np.ptp(scores) > 0 and np.ptp(sizes) > 0:
        from scipy.stats import spearmanr

        out["mose_spearman_n_params"] = float(spearmanr(sizes, scores).statistic)
    return out


def _ci(x: np.ndarray) -> tuple[float, float, float]:
    from shared_core.metrics import bootstrap_ci

    return bootstrap_ci(np.mean, x, n_resamples=2000)


def reproduce(args: ReproduceArgs) -> dict[str, Any]:
    from shared_core.report import Run

    config: Config = args.config
    if config.judge not in ("parsimony", "smollm2"):
        raise ValueError(f"judge: expected 'parsimony' or 'smollm2', got {config.judge!r}")
    ops: Any
    if config.judge == "smollm2":
        from mathmo.judge import SmolLMJudge

        ops = ProgrammaticOperators(judge=SmolLMJudge())
    else:
        ops = ProgrammaticOperators()
    if config.operators == "openai":
        import os

        from mathmo.llm import OpenAIOperators
        from shared_core.cli import UsageError

        url, model = os.environ.get("MATHMO_BASE_URL", ""), os.environ.get("MATHMO_MODEL", "")
        if not url or not model:
            raise UsageError(
                "--scale paper uses an OpenAI-compatible endpoint: set MATHMO_BASE_URL (e.g. "
                "http://127.0.0.1:8000/v1), MATHMO_MODEL and, if needed, OPENAI_API_KEY"
            )
        ops = OpenAIOperators(url, model, os.environ.get("OPENAI_API_KEY"), fallback=ops)
    searches = {
        n: f"{n}: {len(config.variants)} methods x {config.seeds} seeds" for n in config.tasks
    }
    plan([*searches.values(), "plots and report"], ESTIMATE_S.get(args.scale))
    summary: dict[str, Any] = {}
    all_results: dict[str, dict[str, list[SearchResult]]] = {}
    with Run("mathmo", config, out=args.out) as run:
        for name in config.tasks:
            phase(searches[name])
            task = make_task(name, config, seed=args.seed)
            evaluator = Evaluator(
                task, ops.judge_pair, config.search.sandbox, config.search.time_limit
            )
            start, cpu0 = time.perf_counter(), time.process_time()
            results = {
                v: [
                    run_search(
                        task,
                        replace(config.search, variant=v),
                        ops,
                        seed=args.seed * 1000 + s,
                        evaluator=evaluator,
                    )
                    for s in range(config.seeds)
                ]
                for v in config.variants
            }
            wall = time.perf_counter() - start
            all_results[name] = results
            rel, _ = relative_hypervolumes(results)
            failed = sum(1 for e in evaluator.cache.values() if e.failed)
            evaluations = [e for rs in results.values() for r in rs for e in r.evaluations]
            summary[name] = {
                "wall_s": wall,
                "search_cpu_s": time.process_time() - cpu0,
                "executed": len(evaluator.cache),
                "failed": failed,
                "rounds_repaired": sum(1 for e in evaluations if e.repaired),
                "rounds_failed_after_retries": sum(1 for e in evaluations if e.failed),
                "rounds": len(evaluations),
                **mose_diagnostics(task, evaluator.cache.values()),
            }
            for v in config.variants:
                mean, lo, hi = _ci(rel[v])
                row: dict[str, Any] = {
                    "task": task.name,
                    "method": LABELS[v],
                    "rel. HV (mean)": round(mean, 3),
                    "95% CI": f"[{lo:.3f}, {hi:.3f}]",
                    "paper HV": f"{PAPER[name][v]:.3f}",
                }
                if v != "mathmo" and "mathmo" in rel:
                    diff = rel["mathmo"] - rel[v]
                    d, dlo, dhi = _ci(diff)
                    row["MATHMO - this (paired)"] = f"{d:+.3f} [{dlo:+.3f}, {dhi:+.3f}]"
                    summary[name][f"mathmo_minus_{v}"] = d
                    summary[name][f"mathmo_beats_{v}"] = bool(d > 0)
                    summary[name][f"paper_mathmo_beats_{v}"] = (
                        PAPER[name]["mathmo"] > PAPER[name][v]
                    )
                run.add_row(**row)
                summary[name][f"{v}_rel_hv"] = mean
                summary[name][f"{v}_rel_hv_ci"] = [lo, hi]
            for cand, e in evaluator.cache.items():
                if e.failed:
                    run.add_row(
                        "failed candidates (recorded, search went on)",
                        task=task.name,
                        candidate=cand.label(),
                        error=e.error,
                    )
            print(
                f"{task.name}: {len(evaluator.cache)} distinct candidates executed ({failed} "
                f"failed; {summary[name]['rounds_repaired']} of {len(evaluations)} rounds repaired, "
                f"{summary[name]['rounds_failed_after_retries']} still failed), {wall:.1f} s",
                flush=True,
            )
            if "mose_spearman_n_params" in summary[name]:
                m = summary[name]
                print(
                    f"{task.name}: MOSE scores of {m['mose_models']} models in [{m['mose_min']:.3f}, "
                    f"{m['mose_max']:.3f}], Spearman with n_params {m['mose_spearman_n_params']:+.3f}",
                    flush=True,
                )
        phase("plots and report")
        import resource

        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        # sandboxed candidates run in child processes: their CPU time is not in the run's cpu_s
        run.log(tasks=summary, sandbox_children_cpu_s=children.ru_utime + children.ru_stime)
        _plot(run, all_results, config)
        run.finish(
            title="MATHMO vs its ablations (programmatic operators)",
            notes=(
                f"{config.seeds} seeds x {config.search.rounds} rounds per task and method; relative hypervolume "
                "= HV(run's front) / HV(all points found on the task), normalised objectives, reference 0."
            ),
        )
    return summary


def _plot(run: Any, results: dict[str, dict[str, list[SearchResult]]], config: Config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(
        2, len(names), figsize=(4.2 * len(names) + 2.5, 7.5), dpi=110, squeeze=False
    )
    for col, name in enumerate(names):
        res = results[name]
        _rel, pooled = relative_hypervolumes(res)
        best = hypervolume(pooled)
        ax = axes[0, col]
        for v, rs in res.items():
            front = rs[0].points()
            front = front[non_dominated(front)] if len(front) else front
            order = np.argsort(front[:, 0]) if len(front) else np.zeros(0, dtype=np.int64)
            ax.step(
                front[order, 0], front[order, 1], where="post", marker="o", ms=4, label=LABELS[v]
            )
        p = pooled[np.argsort(pooled[:, 0])]
        ax.scatter(
            p[:, 0], p[:, 1], marker="x", c="k", s=20, label="best front found (all runs)", zorder=5
        )
        objs = {"tsp": ("quality", "speed"), "jobshop": ("quality", "speed")}.get(
            name, ("accuracy", "interpretability (MOSE)")
        )
        ax.set_xlabel(f"{objs[0]} (normalised, higher better)")
        ax.set_ylabel(f"{objs[1]} (normalised)")
        ax.set_title(f"{name}: fronts of seed 0")
        ax.grid(alpha=0.3)
        ax = axes[1, col]
        for v, rs in res.items():
            tr = np.mean([np.array(r.trace()) / best for r in rs], axis=0)
            ax.plot(np.arange(1, len(tr) + 1), tr, marker=".", label=LABELS[v])
        ax.axhline(1.0, color="k", ls=":", lw=1, label="best front found (all runs)")
        ax.set_xlabel("round (executed candidates)")
        ax.set_ylabel("relative hypervolume (mean over seeds)")
        ax.set_title(f"{name}: hypervolume vs round")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    handles, labels = axes[1, 0].get_legend_handles_labels()
    h0, l0 = axes[0, 0].get_legend_handles_labels()
    extra = [(h, lab) for h, lab in zip(h0, l0, strict=True) if lab not in labels]
    fig.legend(
        handles + [h for h, _ in extra],
        labels + [lab for _, lab in extra],
        loc="center right",
        fontsize=8,
    )
    fig.suptitle("MATHMO vs ablations: Pareto fronts and hypervolume per round")
    fig.tight_layout(rect=(0, 0, 1 - 2.3 / (4.2 * len(names) + 2.5), 0.96))
    run.save_figure("fronts_and_hypervolume", fig)
