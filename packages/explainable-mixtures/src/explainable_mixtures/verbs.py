"""The verbs on a user's own table: ``fit``, ``predict`` and ``explain``.

``fit --data table.csv --target y --out DIR`` fits `ExplainableMixture`, prints the rules (as
`ExplainableMixture.describe`), and writes into DIR: ``model.joblib`` (the fitted estimator,
joblib's pickle: load only folders you trust), ``model.json`` (the columns it reads, the
settings, the package version), ``rules.json`` and one plot per rule. ``predict`` writes a CSV
of the predictive mean and standard deviation, the rule weights and the assigned rule per row;
``explain --row R`` prints the rule that covers row R and its density.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.cli import UsageError
from shared_core.verbs import VerbArgs

__all__ = ["FitSettings", "explain", "fit", "load_model", "predict", "predictive_std"]

MODEL_FILE, META_FILE, RULES_FILE = "model.joblib", "model.json", "rules.json"


@dataclass
class FitSettings:
    """`ExplainableMixture`'s settings that ``--set key=value`` overrides (its defaults: the
    paper's method); ``--n-rules`` gives `n_rules`, ``--seed`` the seed."""

    steps: int = 800  # gradient steps in all
    lam: float = 0.1  # overlap weight (README: the lambda ablation)
    gamma: float = 0.0  # our coverage penalty (0: the paper's objective)
    tau_start: float = 0.2  # initial temperature, standard deviations of each feature
    tau_end: float = 0.02  # final temperature
    lr: float = 0.03
    prune_rounds: int = 3
    min_share: float = 0.02  # a rule below this share of the rows is pruned
    bic_select: bool = True
    bic_count: str = "rules"  # the paper's |Theta|: the rule thresholds
    components: str = "induced"  # the paper's components


def _read(args: VerbArgs, **kwargs: Any) -> Any:
    from explainable_mixtures.tables import read_table

    try:
        return read_table(args.data_path, **kwargs)
    except ValueError as e:
        raise UsageError(str(e)) from None


def fit(args: VerbArgs) -> int:
    """``fit``: the rules printed, the model and its files written to ``--out``."""
    from explainable_mixtures import ExplainableMixture
    from shared_core.atomic import atomic_write_json
    from shared_core.progress import phase, plan

    x = args.extra
    features = [c.strip() for c in x["features"].split(",")] if x["features"] else None
    targets = [c.strip() for c in x["target"].split(",")]
    table = _read(args, target=targets, features=features, dropna=x["dropna"],
                  one_hot=x["one_hot"])  # fmt: skip
    settings: FitSettings = args.config
    est = ExplainableMixture(x["n_rules"], seed=args.seed, **asdict(settings))
    plan(["fit", "write"], estimate_s=0.02 * settings.steps * max(1.0, len(table.X) / 1000))
    phase("fit")
    try:
        est.fit(table.X, table.y, feature_names=table.feature_names,
                target_names=table.target_names)  # fmt: skip
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from None
    if table.dropped:
        print(f"dropped {table.dropped} rows with an empty or NaN cell (--dropna)")
    print(est.describe())
    out = args.out
    assert out is not None  # the verb requires --out
    phase("write")
    import joblib

    from shared_core.atomic import atomic_path

    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / MODEL_FILE) as tmp:
        joblib.dump(est, tmp)
    meta = {
        "package": "explainable-mixtures",
        "version": version("explainable-mixtures"),
        "data": str(args.data_path),
        "rows": len(table.X),
        "features": list(table.feature_names),
        "targets": list(table.target_names),
        "categories": table.categories,
        "n_rules": x["n_rules"],
        "seed": args.seed,
        "settings": asdict(settings),
    }
    atomic_write_json(out / META_FILE, meta)
    atomic_write_json(out / RULES_FILE, rules_json(est))
    for i in range(len(est.rules_)):
        plot_rule(est, i, table.X, table.y, out / f"rule_{i + 1}.png")
    print(f"wrote {out}/: {MODEL_FILE}, {META_FILE}, {RULES_FILE}, rule_1..{len(est.rules_)}.png")
    return 0


def rules_json(est: Any) -> list[dict[str, Any]]:
    """The rules as JSON: conditions (``low``/``high``, null for an open side), share, the
    component's mean and standard deviation per target."""
    return [
        {
            "rule": i + 1,
            "text": str(r),
            "conditions": [asdict(c) for c in r.conditions],
            "share": r.share,
            "mean": dict(zip(r.target_names, r.mean, strict=True)),
            "std": dict(zip(r.target_names, r.std, strict=True)),
        }
        for i, r in enumerate(est.rules_)
    ]


def plot_rule(est: Any, i: int, X: np.ndarray, y: np.ndarray, path: Path) -> None:
    """Rule ``i``: the first target of the rows assigned to it (histogram) against its
    component's Gaussian, with the rule's text as the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from shared_core.atomic import atomic_path

    rule = est.rules_[i]
    mine = est.assign(X) == i
    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=110)
    values = y[mine, 0]
    if len(values):
        ax.hist(values, bins=30, density=True, alpha=0.5, label=f"rows assigned ({mine.sum()})")
    m, s = rule.mean[0], rule.std[0]
    grid = np.linspace(m - 4 * s, m + 4 * s, 200)
    ax.plot(grid, np.exp(-0.5 * ((grid - m) / s) ** 2) / (s * math.sqrt(2 * math.pi)),
            "k-", label=f"component N({m:.3g}, {s:.3g}²)")  # fmt: skip
    ax.set_xlabel(f"{rule.target_names[0]} (target)")
    ax.set_ylabel("density")
    body = " AND ".join(str(c) for c in rule.conditions) or "always"
    ax.set_title(f"rule {i + 1}: IF {body}  ({100 * rule.share:.1f} % of rows)", fontsize=8)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)


def load_model(folder: Path) -> tuple[Any, dict[str, Any]]:
    """The estimator and metadata `fit` wrote to `folder` (joblib: trusted folders only)."""
    import joblib

    model, meta = folder / MODEL_FILE, folder / META_FILE
    for f in (model, meta):
        if not f.is_file():
            raise UsageError(f"--checkpoint: {folder} has no {f.name}; is it a folder `fit` wrote?")
    return joblib.load(model), json.loads(meta.read_text())


def predictive_std(est: Any, weights: np.ndarray) -> np.ndarray:
    """Standard deviation of the mixture ``sum_i w_i N(mu_i, s_i^2)`` per row and target,
    ``(n, d_y)``, from `weights` ``(n, k)`` and the rules' moments."""
    mu = np.array([r.mean for r in est.rules_])  # (k, d_y)
    var = np.array([r.std for r in est.rules_]) ** 2
    mean = weights @ mu
    return np.sqrt(np.maximum(weights @ (var + mu**2) - mean**2, 0.0))  # type: ignore[no-any-return]


def predict(args: VerbArgs) -> int:
    """``predict``: mean, std, rule weights and the assigned rule per row, as CSV."""
    from shared_core.atomic import atomic_write_text

    assert args.checkpoint is not None
    est, meta = load_model(args.checkpoint)
    table = _read(args, target=None, features=_source_features(meta),
                  dropna=args.extra["dropna"], categories=meta["categories"])  # fmt: skip
    w = est.weights(table.X)
    mean = w @ np.array([r.mean for r in est.rules_])
    std = predictive_std(est, w)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    k = w.shape[1]
    writer.writerow(["row", *(f"{t}_mean" for t in meta["targets"]),
                     *(f"{t}_std" for t in meta["targets"]),
                     *(f"w_rule{i + 1}" for i in range(k)), "rule"])  # fmt: skip
    for r in range(len(w)):
        writer.writerow([int(table.lines[r]) - 2, *(f"{v:.6g}" for v in mean[r]),
                         *(f"{v:.6g}" for v in std[r]), *(f"{v:.4f}" for v in w[r]),
                         int(w[r].argmax()) + 1])  # fmt: skip
    if args.out is None:
        print(buf.getvalue(), end="")
    else:
        atomic_write_text(args.out, buf.getvalue())
        print(f"wrote {len(w)} predictions to {args.out}")
    return 0


def _source_features(meta: dict[str, Any]) -> list[str]:
    """The columns of the user's file the model reads (one-hot columns by their source)."""
    out: list[str] = []
    for name in meta["features"]:
        column = name.split("=", 1)[0] if meta["categories"] and "=" in name else name
        if column not in out:
            out.append(column)
    return out


def explain(args: VerbArgs) -> int:
    """``explain --row R``: row R's features, the rule it is assigned to (and whether the row
    lies inside that rule's printed box), its weights and its density under the model."""
    assert args.checkpoint is not None
    est, meta = load_model(args.checkpoint)
    features = _source_features(meta)
    targets = [t for t in meta["targets"] if _has_column(args.data_path, t)]
    table = _read(args, target=targets or None, features=features, dropna=args.extra["dropna"],
                  categories=meta["categories"])  # fmt: skip
    row = args.extra["row"]
    if row >= len(table.X):
        raise UsageError(f"--row: expected a data row in [0, {len(table.X)}), got {row}")
    x = table.X[row : row + 1]
    w = est.weights(x)[0]
    i = int(w.argmax())
    rule = est.rules_[i]
    bounds = est._x_range  # the training range closes the printed boxes' open sides
    box = rule.box(est.feature_names_, bounds)
    inside = bool(np.all((x[0] >= box[:, 0]) & (x[0] <= box[:, 1])))
    values = ", ".join(f"{n} = {v:.4g}" for n, v in zip(est.feature_names_, x[0], strict=True))
    print(f"row {row} (line {int(table.lines[row])}): {values}")
    print(f"rule {i + 1} (weight {w[i]:.3f}; the row is {'inside' if inside else 'outside'} "
          f"its box): {rule}")  # fmt: skip
    print("weights: " + ", ".join(f"rule {j + 1} {v:.3f}" for j, v in enumerate(w)))
    if table.y is not None and len(targets) == len(meta["targets"]):
        log_p = float(est.log_density(x, table.y[row : row + 1])[0])
        observed = ", ".join(f"{t} = {v:.4g}" for t, v in zip(targets, table.y[row], strict=True))
        print(
            f"observed {observed}: log p(y | x) = {log_p:.3f} nats (density {math.exp(log_p):.4g})"
        )
    return 0


def _has_column(path: Path, name: str) -> bool:
    with open(path, newline="") as f:
        header = next(csv.reader(f), [])
    return name in [h.strip() for h in header]
