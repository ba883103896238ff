"""The verbs on a user's own data: ``fit`` (honest cross-validation, then the saved model),
``predict`` and ``tokens`` (the Topo-Scan sequences as .npz).

Input: a CSV/TSV with a SMILES column and a target column (or a .smi file for `predict` and
`tokens`), read by `shared_core.data.read_smiles`, or a folder in the TU layout
(`shared_core.data.read_tu`). SMILES become molecular graphs (`shared_core.data.mol_graph`;
node labels = atomic numbers) and follow the authors' molecular setting (Ollivier-Ricci and
atomic-weight tokens min-max scaled per molecule, plus the ECFP branch); TU graphs follow the
graph-classification setting (Ollivier-Ricci and HKS tokens).

The default evaluation is the honest protocol (`topoformer.protocol`): k folds; in each, the
Topo-Scan thresholds are fitted on the training fold only, a stratified validation split of it
chooses the epoch, and the test fold's score at that epoch is reported. The saved model is then
trained on all the data minus a validation split, keeping the weights of its best validation
epoch.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs
from topoformer.model import TopoFormerConfig

__all__ = ["Dataset", "FitSettings", "fit", "predict", "read_dataset", "tokens"]

PACKAGE = "topoformer"
PAPER_FILTRATIONS = {"smiles": ("ricci", "atomic_weight"), "tu": ("ricci", "hks")}


@dataclass(frozen=True)
class FitSettings:
    """`fit`'s settings (``--set key=value``). `filtrations` empty: the paper's for the input
    (SMILES: ricci + atomic_weight with ECFP; TU: ricci + hks). The rest are the authors'
    molecular script's (hidden 32, 50 epochs, batch 32, Adam 1e-3) and a 10-fold CV."""

    filtrations: tuple[str, ...] = ()
    n_intervals: int = 20
    m: int = 2
    ecfp_bits: int = 1024  # SMILES only; 0 drops the fingerprint branch
    model: TopoFormerConfig = field(default_factory=lambda: TopoFormerConfig(d_model=32))
    epochs: int = 50
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    folds: int = 10
    val_fraction: float = 0.1

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "n_intervals", "m"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if isinstance(self.folds, bool) or not isinstance(self.folds, int) or self.folds < 2:
            raise ValueError(f"folds: expected an int >= 2, got {self.folds!r}")
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"val_fraction: expected a number in (0, 1), got {self.val_fraction}")


@dataclass
class Dataset:
    """Graphs read from a user's file, their SMILES ("" for TU graphs) and raw targets."""

    input: str  # "smiles" or "tu"
    graphs: list[Any]
    smiles: list[str]
    names: list[str]
    targets: np.ndarray | None
    skipped: list[tuple[int, str]]
    files: list[Path]


def read_dataset(path: Path, target: str | None, smiles_column: str, skip_invalid: bool) -> Dataset:
    """A TU folder, or a SMILES file (`target` names the CSV column of the targets)."""
    from topoformer.graph import as_graph

    if path.is_dir():
        from shared_core.data import read_tu

        try:
            raw, labels = read_tu(path)
        except ValueError as e:
            raise UsageError(f"--data: {e}") from None
        files = sorted(p for p in path.iterdir() if p.is_file())
        names = [str(i) for i in range(len(raw))]
        return Dataset("tu", [as_graph(g) for g in raw], [""] * len(raw), names,
                       labels.astype(np.float64), [], files)  # fmt: skip
    from shared_core.data import mol_graph, read_smiles

    result = read_smiles(
        path, smiles_column=smiles_column, target_columns=(target,) if target else (),
        name_column=_name_column(path), skip_invalid=skip_invalid,
    )  # fmt: skip
    graphs = [as_graph(mol_graph(r.smiles)) for r in result.records]
    y = np.array([r.targets[target] for r in result.records]) if target else None
    names = [r.name for r in result.records]
    smiles = [r.smiles for r in result.records]
    return Dataset("smiles", graphs, smiles, names, y, list(result.skipped), [path])


def _name_column(path: Path) -> str | None:
    """``"name"`` when the CSV/TSV header has such a column (it names the predictions)."""
    if path.suffix.lower() not in (".csv", ".tsv"):
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        header = f.readline().strip().split("\t" if path.suffix.lower() == ".tsv" else ",")
    return "name" if "name" in [h.strip() for h in header] else None


def _task(y: np.ndarray, task: str, kind: str) -> str:
    if task != "auto":
        return task
    if kind == "tu":
        return "classification"
    integer = bool(np.all(y == np.round(y)))
    return "classification" if integer and len(np.unique(y)) <= 10 else "regression"


def fit(args: VerbArgs) -> int:
    """``topoformer fit --data FILE --target COL --out DIR``: CV scores, then the saved model."""
    from shared_core.device import resolve_device, seed_everything
    from shared_core.report import Run
    from shared_core.verbs import record_checkpoint
    from topoformer.experiments.common import FoldSplit, Task, TrainSettings, topoformer_fold
    from topoformer.protocol import inner_split, kfold
    from topoformer.topo_scan import TopoScan, filter_graphs

    ex = args.extra
    settings: FitSettings = args.config
    assert args.out is not None
    plan(["read", "filtrations", "cross-validation", "final model", "save"])
    phase("read")
    data = read_dataset(args.data_path, ex["target"], ex["smiles_column"], args.skip_invalid)
    if data.input == "smiles" and not ex["target"]:
        raise UsageError("--target: name the CSV column that holds the targets")
    assert data.targets is not None
    task_name = _task(data.targets, ex["task"], data.input)
    n = len(data.graphs)
    if n < 2 * settings.folds:
        raise UsageError(
            f"--data: {n} molecules is too few for {settings.folds}-fold cross-validation; "
            f"expected at least {2 * settings.folds} (or --set folds=...)"
        )
    classes: tuple[str, ...] = ()
    if task_name == "classification":
        values, y = np.unique(data.targets, return_inverse=True)
        if len(values) < 2:
            raise UsageError(f"--target: expected at least 2 classes, got {values.tolist()}")
        classes = tuple(f"{v:g}" for v in values)
        task = Task(y.astype(np.int64), classification=True)
    else:
        task = Task(data.targets.astype(np.float64), classification=False)
    filtrations = settings.filtrations or PAPER_FILTRATIONS[data.input]
    ecfp_bits = settings.ecfp_bits if data.input == "smiles" else 0
    device = str(resolve_device(args.device))
    train = TrainSettings(settings.epochs, settings.batch_size, settings.lr, settings.weight_decay)
    phase("filtrations")
    cpu0 = time.process_time()
    filtered = filter_graphs(data.graphs, filtrations)
    labels = task.targets if task.classification else None

    def inputs(fit_idx: np.ndarray) -> tuple[TopoScan, list[np.ndarray], np.ndarray | None]:
        from topoformer.checkpoint import featurise

        scan = TopoScan(filtrations, settings.n_intervals, settings.m)
        try:
            scan.fit([filtered[i] for i in fit_idx])
        except ValueError as e:
            raise UsageError(f"--data: {e}") from None
        xs, extra = featurise(scan, filtered, data.input, data.smiles, ecfp_bits)
        return scan, xs, extra

    def scale(idx: np.ndarray) -> tuple[float, float]:
        if task.classification:
            return (0.0, 1.0)
        y = task.targets[idx]
        return float(y.mean()), float(y.std() + 1e-8)

    phase("cross-validation")
    run = Run(PACKAGE, {"command": "fit", "data": str(args.data_path), "task": task_name,
                        "filtrations": list(filtrations), **asdict(settings)}, out=args.runs)  # fmt: skip
    metric = "accuracy" if task.classification else "rmse"
    honest, optimistic = [], []
    for k, (train_idx, test_idx) in enumerate(kfold(n, settings.folds, args.seed)):
        phase(f"cross-validation: fold {k + 1}/{settings.folds}")
        fit_idx, val_idx = inner_split(train_idx, labels, settings.val_fraction, args.seed + k)
        _, xs, extra = inputs(fit_idx)
        split = FoldSplit(fit_idx, val_idx, test_idx, seed=args.seed + k, scale=scale(fit_idx))
        sel, _ = topoformer_fold(xs, task, split, train, settings.model, device, extra)
        honest.append(sel.honest)
        optimistic.append(sel.optimistic)
        run.add_row("cross-validation (test folds)", fold=k, epoch=sel.epoch,
                    **{f"{metric} (honest)": sel.honest, f"{metric} (max over epochs)": sel.optimistic})  # fmt: skip
    h, o = np.asarray(honest), np.asarray(optimistic)
    summary = (
        f"{settings.folds}-fold CV {metric} (honest protocol: thresholds on the training fold, "
        f"epoch chosen on validation): {h.mean():.4f} ± {h.std():.4f}"
    )
    print(summary)
    print(f"  (choosing the epoch on the test fold, as the authors' script does: {o.mean():.4f})")

    phase("final model")
    from topoformer.checkpoint import CheckpointConfig, TrainedTopoFormer

    fit_idx, val_idx = inner_split(np.arange(n), labels, settings.val_fraction, args.seed)
    scan, xs, extra = inputs(fit_idx)
    mu, sd = scale(fit_idx)
    cfg = CheckpointConfig(
        input=data.input, filtrations=tuple(filtrations), n_intervals=settings.n_intervals,
        m=settings.m, thresholds=tuple(tuple(map(float, scan.thresholds_[f])) for f in filtrations),
        ecfp_bits=ecfp_bits, task=task_name, classes=classes, target=ex["target"] or "label",
        target_mean=mu, target_std=sd, model=settings.model,
    )  # fmt: skip
    seed_everything(args.seed)
    model = TrainedTopoFormer(cfg)
    best_epoch, best_val = _train_final(
        model, xs, extra, task, fit_idx, val_idx, (mu, sd), train, device, args.seed
    )
    phase("save")
    metrics = {
        f"cv_{metric}_honest_mean": float(h.mean()), f"cv_{metric}_honest_std": float(h.std()),
        f"cv_{metric}_max_over_epochs_mean": float(o.mean()), "folds": settings.folds,
        "molecules": n, f"final_val_{metric}": best_val, "final_epoch": best_epoch,
    }  # fmt: skip
    model.cpu().save_pretrained(args.out, metrics=metrics, data=data.files)
    run.log(**metrics, skipped=len(data.skipped), cpu_s=time.process_time() - cpu0)
    record_checkpoint(run, args.out)
    run.finish(title=f"topoformer fit on {args.data_path}", notes=summary, print_tables=False)
    print(f"saved the model (epoch {best_epoch}, validation {metric} {best_val:.4f}) to {args.out}")
    return 0


def _train_final(
    model: Any, xs: list[np.ndarray], extra: np.ndarray | None, task: Any, fit_idx: np.ndarray,
    val_idx: np.ndarray, scale: tuple[float, float], train: Any, device: str, seed: int,
) -> tuple[int, float]:  # fmt: skip
    """Train on `fit_idx`, keep the weights of the best validation epoch; ``(epoch, score)``."""
    import copy

    import torch

    from topoformer.experiments.common import FoldSplit, _loss, _score, _targets
    from topoformer.training import train_epochs

    split = FoldSplit(fit_idx, val_idx, val_idx, seed=seed, scale=scale)
    y = _targets(task, split)
    loss = _loss(task)
    xt = [torch.as_tensor(x, dtype=torch.float32) for x in xs]
    et = None if extra is None else torch.as_tensor(extra, dtype=torch.float32)
    sign = 1.0 if task.classification else -1.0
    best: dict[str, Any] = {"score": -np.inf, "epoch": -1, "state": None}

    def forward(m: Any, idx: np.ndarray) -> torch.Tensor:
        dev = next(m.parameters()).device
        return m([x[idx].to(dev) for x in xt], None if et is None else et[idx].to(dev))  # type: ignore[no-any-return]

    def loss_fn(m: Any, idx: np.ndarray) -> torch.Tensor:
        out = forward(m, idx)
        return loss(out, y[idx].to(out.device))

    def evaluate(m: Any) -> dict[str, float]:
        score = _score(task, forward(m, val_idx), val_idx, scale)
        if sign * score > best["score"]:
            best.update(score=sign * score, epoch=best.get("n", 0),
                        state=copy.deepcopy(m.state_dict()))  # fmt: skip
        best["n"] = best.get("n", 0) + 1
        return {"val": score}

    train_epochs(
        model, loss_fn, lambda idx: idx, fit_idx, train.epochs, train.batch_size, evaluate,
        seed=seed, lr=train.lr, weight_decay=train.weight_decay, device=device,
        desc="final model",
    )  # fmt: skip
    model.load_state_dict(best["state"])
    return int(best["epoch"]), float(sign * best["score"])


def load_model(checkpoint: Path) -> Any:
    """`TrainedTopoFormer.from_pretrained`, its errors as one `--checkpoint` line."""
    from topoformer.checkpoint import TrainedTopoFormer

    try:
        return TrainedTopoFormer.from_pretrained(checkpoint)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(f"--checkpoint: {e}") from None


def predict(args: VerbArgs) -> int:
    """``topoformer predict --checkpoint DIR --data FILE [--out predictions.csv]``."""
    from topoformer.checkpoint import featurise

    model = load_model(args.checkpoint)  # type: ignore[arg-type]
    cfg = model.config
    plan(["read", "tokens", "predict"])
    phase("read")
    data = read_dataset(args.data_path, None, args.extra["smiles_column"], args.skip_invalid)
    if data.input != cfg.input:
        raise UsageError(
            f"--data: the model was trained on {cfg.input} input, got a {data.input} "
            f"{'folder' if data.input == 'tu' else 'file'}"
        )
    phase("tokens")
    xs, extra = featurise(model.scanner(), data.graphs, data.input, data.smiles, cfg.ecfp_bits)
    phase("predict")
    out = model.predict_inputs(xs, extra)
    columns: dict[str, Any] = {"smiles": data.smiles} if data.input == "smiles" else {}
    columns["name"] = data.names
    if cfg.task == "classification":
        columns[cfg.target] = [cfg.classes[i] for i in out.argmax(1)]
        for j, c in enumerate(cfg.classes):
            columns[f"p_{c}"] = out[:, j]
    else:
        columns[cfg.target] = out[:, 0]
    text = _csv(columns)
    if args.out is None:
        print(text, end="")
    else:
        from shared_core.atomic import atomic_write_text

        atomic_write_text(args.out, text)
        print(f"wrote {len(data.graphs)} predictions to {args.out}")
    for number, why in data.skipped:
        print(f"  skipped line {number}: {why}")
    return 0


def _csv(columns: dict[str, Any]) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(columns))
    for row in zip(*columns.values(), strict=True):
        w.writerow([f"{v:.6g}" if isinstance(v, float | np.floating) else v for v in row])
    return buf.getvalue()


def tokens(args: VerbArgs) -> int:
    """``topoformer tokens --data FILE --out tokens.npz [--checkpoint DIR]``: the Topo-Scan
    sequences ``(N, T_f, 4)`` per filtration (thresholds from the checkpoint, or fitted on the
    file with the paper's filtrations for its input)."""
    from shared_core.data import write_arrays
    from topoformer.topo_scan import TopoScan

    assert args.out is not None
    if args.out.suffix.lower() != ".npz":
        raise UsageError(f"--out: expected a .npz file, got {args.out.name!r}")
    plan(["read", "tokens"])
    phase("read")
    data = read_dataset(args.data_path, None, args.extra["smiles_column"], args.skip_invalid)
    phase("tokens")
    if args.checkpoint is not None:
        scan = load_model(args.checkpoint).scanner()
    else:
        scan = TopoScan(PAPER_FILTRATIONS[data.input])
        try:
            scan.fit(data.graphs)
        except ValueError as e:
            raise UsageError(f"--data: {e}") from None
    seqs = scan.transform(data.graphs)
    arrays: dict[str, Any] = dict(seqs)
    arrays.update({f"thresholds_{k}": v for k, v in scan.thresholds_.items()})
    arrays["names"] = np.asarray(data.names, dtype=str)
    if data.input == "smiles":
        arrays["smiles"] = np.asarray(data.smiles, dtype=str)
    write_arrays(args.out, arrays)
    shapes = ", ".join(f"{k} {v.shape}" for k, v in seqs.items())
    print(f"wrote the Topo-Scan tokens of {len(data.graphs)} graphs to {args.out}: {shapes}")
    return 0
