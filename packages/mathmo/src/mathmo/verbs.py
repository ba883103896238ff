"""``mathmo solve``: the bi-level search on a user's task file, its front written to a folder.

Writes into ``--out`` (a folder): ``front.csv`` (the non-dominated models: framework, settings,
normalised objectives, raw measurements), ``evaluations.csv`` (every executed candidate, failed
ones with their error), ``front.png`` (objectives 1 and 2 of every model, the front joined),
``best_models.py`` (the front's models as code that re-runs them on ``task.py``, a copy of the
task file) and ``summary.json`` (hypervolume, rounds per framework, failures, LLM fallbacks).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from mathmo.operators import Evaluation, Operators, ProgrammaticOperators
from mathmo.search import SearchConfig, SearchResult, run_search
from mathmo.tasks.from_file import FileTask, load_task_file
from shared_core.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs


def solve_options(p: Any) -> None:
    """``--base-url`` / ``--model``: an OpenAI-compatible chat endpoint (a local server such as
    llama.cpp's or vLLM's) for the LLM operators; without them the programmatic operators."""
    p.add_argument(
        "--base-url",
        default=os.environ.get("MATHMO_BASE_URL"),
        metavar="URL",
        help="OpenAI-compatible endpoint ending in /v1 for the LLM operators (default: "
        "$MATHMO_BASE_URL; none: the programmatic operators); key from $OPENAI_API_KEY",
    )
    p.add_argument(
        "--model",
        default=os.environ.get("MATHMO_MODEL"),
        metavar="NAME",
        help="the chat model's name at --base-url (default: $MATHMO_MODEL)",
    )


def _operators(base_url: str | None, model: str | None) -> Operators:
    if base_url is None and model is None:
        return ProgrammaticOperators()
    if not base_url or not model:
        raise UsageError(
            f"--base-url and --model: give both for the LLM operators, got base_url={base_url!r}, "
            f"model={model!r}"
        )
    from mathmo.llm import OpenAIOperators

    return OpenAIOperators(base_url, model, api_key=os.environ.get("OPENAI_API_KEY"))


def solve(args: VerbArgs) -> dict[str, Any]:
    """Run the search configured by ``args.config`` (a `SearchConfig`) on the ``--data`` task."""
    assert args.out is not None and isinstance(args.config, SearchConfig)
    out = args.out
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: expected a folder, got the file {out}")
    plan(["load task", "search", "write results"])
    phase("load task")
    task = load_task_file(args.data_path)
    ops = _operators(args.extra.get("base_url"), args.extra.get("model"))
    phase("search")
    result = run_search(task, args.config, ops, seed=args.seed)
    phase("write results")
    front = result.front()
    if not front:
        raise UsageError(
            f"--data: every one of the {len(result.evaluations)} candidates of {task.name} failed; "
            f"first error: {result.evaluations[0].error}"
        )
    out.mkdir(parents=True, exist_ok=True)
    summary = _summary(task, result, ops)
    _write_results(out, task, result, front, args.data_path)
    atomic_write_json(out / "summary.json", summary)
    _print_front(task, front, summary)
    return summary


def _summary(task: FileTask, result: SearchResult, ops: Operators) -> dict[str, Any]:
    evaluations = result.evaluations
    return {
        "task": task.name,
        "objectives": list(task.objectives),
        "rounds": len(evaluations),
        "failed": sum(e.failed for e in evaluations),
        "front_size": len(result.front()),
        "hypervolume": result.hypervolume(),
        "rounds_per_framework": result.framework_counts(),
        "operators": type(ops).__name__,
        "llm_fallbacks": getattr(ops, "fallbacks", 0),
    }


def _rows(task: FileTask, evaluations: list[Evaluation], on_front: set[Any]) -> str:
    raw_keys = sorted({k for e in evaluations for k, _ in e.raw})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["round", "framework", "model", *task.objectives, *raw_keys, "on_front", "error"])
    for e in evaluations:
        raw = dict(e.raw)
        w.writerow(
            [e.round, e.candidate.framework, e.candidate.label()]
            + [f"{v:.6g}" for v in e.y]
            + [f"{raw[k]:.6g}" if k in raw else "" for k in raw_keys]
            + [int(e.candidate in on_front and not e.failed), _last_line(e.error)]
        )
    return buf.getvalue()


def _last_line(error: str) -> str:
    """A failure's last line (a traceback's exception), for one CSV cell."""
    lines = error.strip().splitlines()
    return lines[-1] if lines else ""


def _write_results(
    out: Path, task: FileTask, result: SearchResult, front: list[Evaluation], data: Path
) -> None:
    on_front = {e.candidate for e in front}
    atomic_write_text(out / "front.csv", _rows(task, front, on_front))
    atomic_write_text(out / "evaluations.csv", _rows(task, result.evaluations, on_front))
    atomic_write_bytes(out / "front.png", _plot(task, result, front))
    if data.resolve() != (out / "task.py").resolve():
        shutil.copyfile(data, out / "task.py.tmp")
        (out / "task.py.tmp").replace(out / "task.py")
    atomic_write_text(out / "best_models.py", _code(task, front))


def _code(task: FileTask, front: list[Evaluation]) -> str:
    """The front's models as a script that re-runs each on the task file beside it."""
    lines = [
        f'"""The non-dominated models `mathmo solve` found for {task.name}',
        f"(objectives {', '.join(task.objectives)}, all maximised). Run: python best_models.py",
        '"""',
        "",
        "import importlib.util",
        "from pathlib import Path",
        "",
        "from mathmo import Candidate",
        "",
        "MODELS = [",
    ]
    for e in front:
        params = ", ".join(f"{k}={v!r}" for k, v in e.candidate.params)
        sep = ", " if params else ""
        y = ", ".join(f"{o}={v:.4f}" for o, v in zip(task.objectives, e.y, strict=True))
        lines.append(f"    Candidate.of({e.candidate.framework!r}{sep}{params}),  # {y}")
    lines += [
        "]",
        "",
        "",
        "def load_task():",
        '    path = Path(__file__).with_name("task.py")',
        '    spec = importlib.util.spec_from_file_location("task", path)',
        "    module = importlib.util.module_from_spec(spec)",
        "    spec.loader.exec_module(module)",
        "    return module",
        "",
        "",
        'if __name__ == "__main__":',
        "    task = load_task()",
        "    for model in MODELS:",
        "        raw = task.evaluate(model)",
        "        print(model.label(), raw, task.normalise(raw))",
        "",
    ]
    return "\n".join(lines)


def _plot(task: FileTask, result: SearchResult, front: list[Evaluation]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = len(task.objectives)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    pts = result.points()
    if k == 1:
        ax.hist(pts[:, 0], bins=20, color="0.7")
        ax.axvline(front[0].y[0], color="C3", label="best")
        ax.set_xlabel(task.objectives[0])
    else:
        ax.scatter(pts[:, 0], pts[:, 1], s=12, color="0.75", label="evaluated")
        fy = np.stack([e.y for e in front])
        order = np.argsort(fy[:, 0])
        ax.plot(fy[order, 0], fy[order, 1], "-", color="0.3", lw=0.8)
        for i, name in enumerate(dict.fromkeys(e.candidate.framework for e in front)):
            sel = [j for j, e in enumerate(front) if e.candidate.framework == name]
            ax.scatter(fy[sel, 0], fy[sel, 1], s=30, color=f"C{i}", label=name, zorder=3)
        ax.set_xlabel(task.objectives[0])
        ax.set_ylabel(task.objectives[1])
    more = f" (objectives 1-2 of {k})" if k > 2 else ""
    ax.set_title(f"{task.name}: Pareto front, HV {result.hypervolume():.3f}{more}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _print_front(task: FileTask, front: list[Evaluation], summary: dict[str, Any]) -> None:
    print(
        f"{task.name}: {summary['rounds']} rounds ({summary['failed']} failed), "
        f"{len(front)} models on the front, hypervolume {summary['hypervolume']:.4f}"
    )
    print("  ".join(task.objectives) + "  model")
    for e in sorted(front, key=lambda e: -e.y[0]):
        print("  ".join(f"{v:.4f}".rjust(len(o)) for o, v in zip(task.objectives, e.y, strict=True))
              + f"  {e.candidate.label()}")  # fmt: skip
