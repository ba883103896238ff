"""The verbs on a user's own files: `audit` (the paper's finding 1 on their poses, as a report
with a one-line verdict) and `augment` (every molecule under a uniformly random rotation).

`audit` reads any file `orient_bias.io.load_path` reads, runs the gradient-boosting audit
(`orient_bias.audit`), the paper's MPNN on the same molecule split (`orient_bias.detect`,
unless ``--no-mpnn``) and the k-NN KL of the principal frames to the Haar measure
(`orient_bias.uniformity`), and writes report.md, metrics.json and the frame plots.
`augment` rotates each molecule about its centroid by an independent Haar rotation and writes
SDF (through `shared_core.data.write_sdf`, bonds and SD tags kept) or XYZ.
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.cli import UsageError
from shared_core.progress import phase, plan
from shared_core.verbs import VerbArgs

__all__ = ["audit", "augment", "extrapolate_cpu"]

PACKAGE = "orient-bias"
SDF_SUFFIXES = (".sdf", ".mol")
REFERENCE_N = 20000


def extrapolate_cpu(cpu_s: dict[str, float], n: int, target: int = REFERENCE_N) -> float:
    """CPU seconds of the timed phases at `target` molecules: reading, frames, the classifier
    and bond perception scaled linearly from `n` (the KL caps its subsample at 4,000, so this
    over-estimates a little); the MPNN's training (a fixed number of steps) as measured."""
    if n < 1:
        raise ValueError(f"n: expected a positive number of molecules, got {n}")
    linear = sum(v for k, v in cpu_s.items() if k != "mpnn")
    return float(linear * target / n + cpu_s.get("mpnn", 0.0))


def _source(args: VerbArgs) -> tuple[str | None, str | None]:
    """``(path, dataset)``: exactly one of --data / PATH / --dataset."""
    path = args.extra.get("path")
    dataset = args.extra.get("dataset")
    given = [x for x in (args.data[0] if args.data else None, path, dataset) if x is not None]
    if len(given) != 1:
        raise UsageError("--data: give exactly one of --data PATH (or PATH) or --dataset")
    if dataset is not None:
        return None, str(dataset)
    return str(args.data[0] if args.data else path), None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _mpnn_ready() -> None:
    missing = [m for m in ("torch", "rdkit") if not _installed(m)]
    if missing:
        raise UsageError(
            f"--no-mpnn: the paper's MPNN needs {' and '.join(missing)} "
            "(pip install 'orient-bias[torch,chem]'); pass --no-mpnn to audit without it"
        )


def _check_out(out: Path | None) -> None:
    if out is not None and (out.is_file() or (out.is_dir() and any(out.iterdir()))):
        raise UsageError(f"--out: {out} exists and is not empty; name a new folder")


def _copy_report(src: Path, out: Path) -> None:
    """The run folder's files into `out`, all at once (a temporary sibling renamed)."""
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.copytree(src, tmp)
    if out.is_dir():
        out.rmdir()  # empty: `_check_out` refused anything else
    tmp.rename(out)


def audit(args: VerbArgs) -> int:
    """``orient-bias audit``: report.md + metrics + frame plots; exit 1 on bias with
    ``--fail-on-bias``."""
    from orient_bias.audit import AuditConfig, audit_molecules, audit_poses

    ex = args.extra
    path, dataset = _source(args)
    use_mpnn = not ex["no_mpnn"]
    if use_mpnn:
        _mpnn_ready()
    _check_out(args.out)
    cfg: AuditConfig = args.config
    changes: dict[str, Any] = {"seed": args.seed}
    for key in ("max_molecules", "weighting"):
        if ex.get(key) is not None:
            changes[key] = ex[key]
    try:
        cfg = replace(cfg, **changes)
    except ValueError as e:
        raise UsageError(f"--set: {e}") from None
    plan(["read", "frames + classifier", *(["bonds", "mpnn"] if use_mpnn else []), "report"])
    cpu: dict[str, float] = {}
    clock = time.process_time()

    def tick(name: str) -> None:
        nonlocal clock
        now = time.process_time()
        cpu[name] = cpu.get(name, 0.0) + now - clock
        clock = now

    phase("read")
    if dataset == "qm9":
        from orient_bias.data import load_qm9

        poses_all = load_qm9().poses
        tick("read")
        phase("frames + classifier")
        result, extra = audit_poses(poses_all, cfg)
    else:
        assert path is not None
        result, extra = _audit_path(Path(path), cfg, args.skip_invalid, audit_molecules, tick)
    tick("frames + classifier")
    if use_mpnn:
        from orient_bias.bonds import bond_matrix
        from orient_bias.detect import DetectConfig, detect_bias
        from shared_core.device import resolve_device

        phase("bonds")
        poses = extra["poses"]
        bonds, fallback = bond_matrix(poses)
        tick("bonds")
        phase("mpnn")
        elements = tuple(int(z) for z in np.unique(poses.numbers[poses.numbers > 0]))
        per_epoch = math.ceil(len(extra["train"]) / 128)  # DetectConfig's batch size
        detect = DetectConfig(
            epochs=max(1, math.ceil(ex["mpnn_steps"] / per_epoch)), seed=cfg.seed, device=str(resolve_device(args.device)),
            elements=elements,
        )  # fmt: skip
        row = detect_bias(
            poses, bonds, extra["train"], extra["test"], detect, cfg.n_bootstrap,
            cfg.n_permutations,
        )  # fmt: skip
        row["bonds_connectivity_only"] = float(fallback)
        row["steps"] = float(detect.epochs * per_epoch)
        result.add_mpnn(row, cfg.alpha)
        tick("mpnn")
    phase("report")
    source = path or f"dataset {dataset}"
    estimate = extrapolate_cpu(cpu, result.n_used)
    print(result.summary())
    _print_skipped(result.skipped)
    print(f"  cost: {_cost(cpu, result.n_used, estimate)}")
    run = _report(result, extra, cfg, source, args, cpu, estimate)
    if args.out is not None:
        _copy_report(run, args.out)
        print(f"report: {args.out / 'report.md'}")
    return 1 if (ex["fail_on_bias"] and result.biased) else 0


def _audit_path(
    path: Path, cfg: Any, skip_invalid: bool, audit_molecules: Any, tick: Any
) -> tuple[Any, dict[str, Any]]:
    from orient_bias.audit import usable
    from orient_bias.io import load_path

    try:
        loaded = load_path(path, on_error="skip" if skip_invalid else "raise")
    except ValueError as e:
        raise UsageError(f"--data: {e}; pass --skip-invalid to skip and count it") from None
    if not skip_invalid:
        _, bad = usable(loaded.molecules)
        for where, why in bad:
            if "coincide" in why:  # a record without coordinates is malformed, not just unusable
                raise UsageError(
                    f"--data: {where}: {why} (no coordinates); expected a 3-D pose; pass "
                    "--skip-invalid to skip and count it"
                )
    tick("read")
    phase("frames + classifier")
    try:
        return audit_molecules(loaded.molecules, cfg, loaded.skipped)  # type: ignore[no-any-return]
    except ValueError as e:  # too few usable molecules in the user's files
        raise UsageError(f"--data: {path}: {e}") from None


def _cost(cpu: dict[str, float], n: int, estimate: float) -> str:
    """The measured CPU time, and its linear extrapolation to 20,000 molecules when `n` is
    large enough (>= 1,000) for the fixed costs not to dominate."""
    text = f"{sum(cpu.values()):.1f} CPU-s for {n} molecules"
    if n >= 1000:
        return f"{text}; extrapolated, ~{estimate:.0f} CPU-s for {REFERENCE_N:,}"
    return f"{text} (too few to extrapolate; `orient-bias audit --help` gives 20,000's cost)"


def _print_skipped(skipped: list[tuple[str, str]]) -> None:
    for where, why in skipped[:20]:
        print(f"  skipped {where}: {why}")
    if len(skipped) > 20:
        print(f"  ... and {len(skipped) - 20} more (see metrics.json)")


def _report(
    result: Any,
    extra: dict[str, Any],
    cfg: Any,
    source: str,
    args: VerbArgs,
    cpu: dict[str, float],
    estimate: float,
) -> Path:
    from orient_bias.plots import angle_histogram, mollweide_axes
    from shared_core.report import Run

    config = {"command": "audit", "source": source, **asdict(cfg)}
    config["mpnn_steps"] = None if args.extra["no_mpnn"] else args.extra["mpnn_steps"]
    run = Run(PACKAGE, config, out=args.runs)
    d = result.to_dict()
    run.log(**{k: v for k, v in d.items() if k not in ("kinds", "uniformity", "skipped", "mpnn")})
    run.log(kinds=d["kinds"], uniformity=d["uniformity"], skipped=d["skipped"], mpnn=d["mpnn"])
    run.log(verdict=result.verdict(), cpu_s_by_phase=cpu, cpu_s_20000_extrapolated=estimate)
    table = "published vs randomly rotated (test molecules)"
    run.add_row(table, model="gradient boosting on orientation features", auc=result.auc,
                ci_low=result.ci_low, ci_high=result.ci_high, p_value=result.p_value,
                accuracy=result.accuracy)  # fmt: skip
    if result.mpnn:
        m = result.mpnn
        run.add_row(table, model=f"the paper's MPNN ({int(m['steps'])} steps)", auc=m["auc"],
                    ci_low=m["ci_low"], ci_high=m["ci_high"], p_value=m["p_value"],
                    accuracy=m["accuracy"])  # fmt: skip
    if result.uniformity:
        u = result.uniformity
        run.add_row("KL of the principal frames to the Haar measure (k-NN, k = 5)",
                    poses="as given", n=int(u["n"]), kl_nats=u["kl_to_haar_published"],
                    ks_pvalue=u["ks_pvalue_published"])  # fmt: skip
        run.add_row("KL of the principal frames to the Haar measure (k-NN, k = 5)",
                    poses="randomly rotated (control)", n=int(u["n"]),
                    kl_nats=u["kl_to_haar_rotated"], ks_pvalue=u["ks_pvalue_rotated"])  # fmt: skip
    run.save_figure("mollweide_axes", mollweide_axes(
        {"as given": extra["frames_original"].axes, "randomly rotated": extra["frames_rotated"].axes}
    ))  # fmt: skip
    if "angles_published" in extra:
        run.save_figure("angles_to_mode", angle_histogram(
            {"as given": extra["angles_published"], "randomly rotated": extra["angles_rotated"]}
        ))  # fmt: skip
    notes = (
        f"**Verdict:** {result.verdict()}\n\n```\n{result.summary()}\n```\n\n"
        f"Cost: {_cost(cpu, result.n_used, estimate)} (by phase, CPU-s: "
        f"{', '.join(f'{k} {v:.1f}' for k, v in cpu.items())})."
    )
    run.finish(title=f"orient-bias audit of {source}", notes=notes, print_tables=False)
    return run.dir


def augment(args: VerbArgs) -> int:
    """``orient-bias augment --data IN --out OUT``: each molecule (each SDF record, each XYZ
    frame) rotated about its centroid by its own Haar-uniform rotation."""
    from orient_bias.rotations import random_rotations

    src, out = args.data_path, args.out
    assert out is not None  # the slot is required
    in_sdf = src.suffix.lower() in SDF_SUFFIXES
    if out.suffix.lower() not in (".sdf", ".xyz"):
        raise UsageError(f"--out: expected a .sdf or .xyz file, got {out.name!r}")
    out_sdf = out.suffix.lower() == ".sdf"
    if out_sdf and not in_sdf:
        raise UsageError(
            f"--out: an SDF needs bonds, and {src.name} has none; write a .xyz file instead"
        )
    rng = np.random.default_rng(args.seed)
    if in_sdf:
        mols, skipped = _sdf_poses(src, args.skip_invalid)
        R = random_rotations(len(mols), rng)
        for mol, r in zip(mols, R, strict=True):
            conf = mol.GetConformer()
            x = conf.GetPositions()
            c = x.mean(0)
            for i, p in enumerate((x - c) @ r.T + c):
                conf.SetAtomPosition(i, p.tolist())
        if out_sdf:
            from shared_core.data import write_sdf

            write_sdf(out, mols)
        else:
            from orient_bias.io import write_xyz
            from shared_core.data import Molecule

            write_xyz(out, [
                Molecule(np.array([a.GetAtomicNum() for a in m.GetAtoms()]),
                         m.GetConformer().GetPositions(),
                         name=m.GetProp("_Name") if m.HasProp("_Name") else "")
                for m in mols
            ])  # fmt: skip
        n = len(mols)
    else:
        from orient_bias.io import load_path, write_xyz
        from shared_core.data import Molecule

        try:
            loaded = load_path(src, on_error="skip" if args.skip_invalid else "raise")
        except ValueError as e:
            raise UsageError(f"--data: {e}; pass --skip-invalid to skip and count it") from None
        R = random_rotations(len(loaded.molecules), rng)
        rotated = []
        for m, r in zip(loaded.molecules, R, strict=True):
            c = m.positions.mean(0)
            x = (m.positions - c) @ r.T + c
            rotated.append(Molecule(m.numbers, x, name=m.name, properties=m.properties))
        write_xyz(out, rotated)
        n, skipped = len(rotated), [f"{w}: {why}" for w, why in loaded.skipped]
    print(f"wrote {n} randomly rotated molecules to {out} (seed {args.seed})")
    for line in skipped:
        print(f"  skipped {line}")
    return 0


def _sdf_poses(src: Path, skip_invalid: bool) -> tuple[list[Any], list[str]]:
    """The records of an SDF file (one RDKit Mol each) that carry 3-D coordinates."""
    from shared_core.data import read_sdf

    result = read_sdf(src, group_by="none", skip_invalid=skip_invalid)
    skipped = [f"{src} record {number}: {why}" for number, why in result.skipped]
    keep = []
    for mol in result.records:
        conf = mol.GetConformer()
        x = conf.GetPositions()
        why = ""
        if len(x) > 1 and np.abs(x).max() == 0:
            why = "has no coordinates (every atom at the origin)"
        elif not conf.Is3D():
            why = "has 2-D coordinates only"
        if not why:
            keep.append(mol)
            continue
        name = mol.GetProp("_Name") if mol.HasProp("_Name") else ""
        why = f"{src}: molecule {name!r} {why}; expected a 3-D conformer"
        if not skip_invalid:
            raise UsageError(f"--data: {why}; pass --skip-invalid to skip and count it")
        skipped.append(why)
    if not keep:
        raise UsageError(f"--data: {src} holds no molecule with 3-D coordinates")
    return keep, skipped
