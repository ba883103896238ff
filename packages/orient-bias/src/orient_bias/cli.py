"""The ``orient-bias`` console script: ``audit PATH`` and ``reproduce [--scale tiny|small|full]``."""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.cli import Command, ReproduceArgs, make_main, progress, reproduce_command
from shared_core.report import Run

__version__ = "0.1.0"
PACKAGE = "orient-bias"


@dataclass(frozen=True)
class ReproduceConfig:
    """Molecule counts per finding; ``tiny`` fits in a few minutes on 2 CPU cores."""

    scale: str = "tiny"
    n_classify: int = 4000
    n_regress: int = 16000
    n_similarity: int = 4000
    net_epochs: int = 20
    regress_epochs: int = 30
    seed: int = 0
    device: str = "cpu"


SCALES = {
    "tiny": {},
    "small": {"n_classify": 20000, "n_regress": 50000, "n_similarity": 10000},
    "full": {
        "n_classify": 130831,
        "n_regress": 130831,
        "n_similarity": 30000,
        "regress_epochs": 50,
    },
}


def _fig(run: Run, name: str, fig: Any) -> None:
    run.save_figure(name, fig)


def reproduce(args: ReproduceArgs) -> int:
    from orient_bias.data import load_qm9
    from orient_bias.experiments import classify, regress, similarity
    from orient_bias.plots import angle_histogram, mollweide_axes
    from shared_core.device import resolve_device, seed_everything

    seed_everything(args.seed)
    device = str(resolve_device(args.device))
    if device == "cpu":
        import torch

        # the models are tiny: on a shared CPU, thread synchronisation costs more than it saves
        torch.set_num_threads(1)
    cfg = ReproduceConfig(scale=args.scale, seed=args.seed, device=device, **SCALES[args.scale])
    run = Run(PACKAGE, cfg, out=args.out)
    t0 = time.time()
    steps = progress(range(3), desc="findings")
    for step in steps:
        if step == 0:
            data = load_qm9(cfg.n_classify, seed=cfg.seed)
            rows = classify.run(
                data.poses,
                classify.ClassifyConfig(net_epochs=cfg.net_epochs, seed=cfg.seed, device=device),
            )
            for r in rows:
                run.add_row("finding 1: published vs randomly rotated (test set)", **r)
        elif step == 1:
            data = load_qm9(cfg.n_regress, seed=cfg.seed)
            rc = regress.RegressConfig(epochs=cfg.regress_epochs, seed=cfg.seed, device=device)
            Y = np.stack([data.target(t) for t in rc.targets], 1)
            for r in regress.run(data.poses, Y, rc):
                run.add_row("finding 2: properties from orientation alone (test set)", **r)
        else:
            data = load_qm9(cfg.n_similarity, seed=cfg.seed)
            out = similarity.run(
                data.poses, data.smiles, similarity.SimilarityConfig(seed=cfg.seed)
            )
            for r in out["rows"]:
                run.add_row("finding 3: orientation agreement of Tanimoto nearest neighbours", **r)
            for r in out["uniformity"]:
                run.add_row("uniformity of principal-axes frames", **r)
            run.log(median_nn_tanimoto=out["median_nn_tanimoto"])
            _fig(run, "mollweide_axes", mollweide_axes(
                {"QM9 as published": out["axes_published"], "randomly rotated": out["axes_rotated"]}
            ))  # fmt: skip
            _fig(run, "mollweide_pc1_rings", mollweide_axes(
                {"PC1, QM9 as published": out["axes_published"]}, colour=out["rings"], colour_label="rings"
            ))  # fmt: skip
            _fig(run, "angles_to_mode", angle_histogram(out["angles_to_mode"]))
    run.log(wall_s=time.time() - t0)
    run.finish(
        title="orient-bias reproduce: Take Note: Your Molecular Dataset Is Probably Aligned",
        notes=f"QM9 from qm9pack 1.0.3, scale {args.scale}: {cfg.n_classify} / {cfg.n_regress} / "
        f"{cfg.n_similarity} molecules for findings 1 / 2 / 3, sampled over all three CSV parts.",
    )
    return 0


def _configure_audit(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path", nargs="?", help="XYZ/SDF/qm9pack CSV/.npz/.aselmdb/.db file, folder or archive"
    )
    p.add_argument(
        "--dataset", choices=["qm9"], help="audit a bundled dataset instead of PATH (qm9: qm9pack)"
    )
    p.add_argument("--max-molecules", type=int, default=20000, help="subsample larger datasets")
    p.add_argument(
        "--weighting", choices=["none", "mass"], default="none", help="PCA or inertia frame"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs"), help="root folder for the report")
    p.add_argument(
        "--fail-on-bias", action="store_true", help="exit with status 1 when poses are biased"
    )


def audit_command(ns: argparse.Namespace) -> int:
    from orient_bias.audit import AuditConfig, audit_molecules, audit_poses
    from orient_bias.io import load_path
    from orient_bias.plots import angle_histogram, mollweide_axes

    cfg = AuditConfig(max_molecules=ns.max_molecules, weighting=ns.weighting, seed=ns.seed)
    if (ns.path is None) == (ns.dataset is None):
        raise ValueError("path: give exactly one of PATH or --dataset")
    source = ns.path or f"dataset {ns.dataset}"
    if ns.dataset == "qm9":
        from orient_bias.data import load_qm9

        result, extra = audit_poses(load_qm9().poses, cfg)
    else:
        loaded = load_path(ns.path)
        result, extra = audit_molecules(loaded.molecules, cfg, loaded.skipped)
    print(result.summary())
    for where, why in result.skipped[:20]:
        print(f"  skipped {where}: {why}")
    if len(result.skipped) > 20:
        print(f"  ... and {len(result.skipped) - 20} more (see metrics.json)")
    run = Run(PACKAGE, {"command": "audit", "source": source, **asdict(cfg)}, out=ns.out)
    d = result.to_dict()
    run.log(**{k: v for k, v in d.items() if k not in ("kinds", "uniformity", "skipped")})
    run.log(kinds=d["kinds"], uniformity=d["uniformity"], skipped=d["skipped"])
    run.add_row("audit", auc=result.auc, ci_low=result.ci_low, ci_high=result.ci_high,
                p_value=result.p_value, accuracy=result.accuracy, biased=result.biased,
                used=result.n_used, skipped=len(result.skipped))  # fmt: skip
    run.save_figure("mollweide_axes", mollweide_axes(
        {"as given": extra["frames_original"].axes, "randomly rotated": extra["frames_rotated"].axes}
    ))  # fmt: skip
    if "angles_published" in extra:
        run.save_figure("angles_to_mode", angle_histogram(
            {"as given": extra["angles_published"], "randomly rotated": extra["angles_rotated"]}
        ))  # fmt: skip
    run.finish(title=f"orient-bias audit of {source}", notes=result.summary(), print_tables=False)
    return 1 if (ns.fail_on_bias and result.biased) else 0


main = make_main(
    PACKAGE,
    __version__,
    [
        reproduce_command(reproduce, scales=("tiny", "small", "full")),
        Command(
            "audit",
            "test whether a dataset's poses are randomly oriented",
            audit_command,
            _configure_audit,
        ),
    ],
    description="Orientation bias in molecular datasets (ICLR 2026).",
)
