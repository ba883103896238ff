"""``orient-bias reproduce``: the paper's three findings on QM9, one after the other.

1. `classify`: published poses are told apart from randomly rotated ones (the paper's
   MPNN and our feature/point-cloud classifiers), and `robustness`: the MPNN under
   coordinate noise and pre-rotations;
2. `regress`: chemical properties are regressed from the orientation alone;
3. `similarity`: chemically similar molecules share poses (and the orientations are far
   from Haar-uniform), and `kl`: the k-NN KL to Haar at the paper's n, with our sign rule
   and the official one.

Each finding draws its own seeded subset of QM9 (uniform over the three qm9pack parts) and
writes its rows, plots and metrics into one `shared_core.report.Run`. The finding modules
are imported inside their functions: this module (and `SCALES`) loads without torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orient_bias.costs import ESTIMATE_S
from orient_bias.data import QM9Subset, load_qm9
from orient_bias.plots import angle_histogram, mollweide_axes
from shared_core.progress import phase, plan
from shared_core.report import Run

PACKAGE = "orient-bias"


@dataclass(frozen=True)
class ReproduceConfig:
    """Molecule counts and epochs per finding (``tiny``: the defaults)."""

    n_classify: int = 4000  # finding 1: molecules (each published + rotated)
    n_regress: int = 16000  # finding 2
    n_similarity: int = 4000  # finding 3 (the Tanimoto matrix is N²)
    mpnn_epochs: int = 25  # the paper's MPNN, finding 1
    robust_epochs: int = 10  # the MPNN per robustness setting (finding 1's molecules)
    kl_sizes: tuple[int | None, ...] = (4000, 50000, None)  # KL at these n (None: all QM9)
    net_epochs: int = 20  # point-cloud classifier
    regress_epochs: int = 30  # orientation-only MLP
    rows_per_part: int | None = None  # read only the first rows of each qm9pack part (micro)


SCALES: dict[str, ReproduceConfig] = {
    # ~20 s: 900 molecules read from the heads of the three parts, a few epochs; checks the
    # pipeline end to end, not the effect sizes
    "micro": ReproduceConfig(
        300,
        600,
        300,
        mpnn_epochs=1,
        robust_epochs=1,
        kl_sizes=(None,),
        net_epochs=2,
        regress_epochs=3,
        rows_per_part=300,
    ),
    "tiny": ReproduceConfig(),
    "small": ReproduceConfig(
        n_classify=20000, n_regress=50000, n_similarity=10000, mpnn_epochs=20, robust_epochs=12
    ),
    "paper": ReproduceConfig(
        n_classify=130831,
        n_regress=130831,
        n_similarity=30000,
        mpnn_epochs=100,
        robust_epochs=100,
        regress_epochs=50,
    ),
}


def _load(n: int, cfg: ReproduceConfig, seed: int) -> QM9Subset:
    return load_qm9(n, seed=seed, rows_per_part=cfg.rows_per_part)


def finding1(run: Run, cfg: ReproduceConfig, seed: int, device: str) -> None:
    """Published vs randomly rotated poses: the paper's MPNN and our three classifiers, the
    pre-rotated control, and the MPNN's robustness sweep."""
    from orient_bias.bonds import bond_matrix
    from orient_bias.experiments import classify, robustness

    data = _load(cfg.n_classify, cfg, seed)
    bonds, fallback = bond_matrix(data.poses)
    run.log(bonds_connectivity_only=fallback, bonds_molecules=len(data))
    config = classify.ClassifyConfig(
        mpnn_epochs=cfg.mpnn_epochs, net_epochs=cfg.net_epochs, seed=seed, device=device
    )
    for row in classify.run(data.poses, config, bonds):
        run.add_row("finding 1: published vs randomly rotated (test set)", **row)
    rcfg = robustness.RobustnessConfig(epochs=cfg.robust_epochs, seed=seed, device=device)
    for row in robustness.run(data.poses, bonds, rcfg):
        run.add_row("finding 1: MPNN under noise and pre-rotation (test set)", **row)


def finding2(run: Run, cfg: ReproduceConfig, seed: int, device: str) -> None:
    """Properties from the 6D orientation alone, and the randomly rotated control."""
    from orient_bias.experiments import regress

    data = _load(cfg.n_regress, cfg, seed)
    config = regress.RegressConfig(epochs=cfg.regress_epochs, seed=seed, device=device)
    Y = np.stack([data.target(t) for t in config.targets], 1)
    for row in regress.run(data.poses, Y, config):
        run.add_row("finding 2: properties from orientation alone (test set)", **row)


def finding3(run: Run, cfg: ReproduceConfig, seed: int) -> None:
    """Orientation agreement of Tanimoto nearest neighbours; uniformity; Mollweide maps; the
    KL to Haar at the paper's n and the sign-rule check."""
    from orient_bias.experiments import kl, similarity

    data = _load(cfg.n_similarity, cfg, seed)
    out = similarity.run(data.poses, data.smiles, similarity.SimilarityConfig(seed=seed))
    for row in out["rows"]:
        run.add_row("finding 3: orientation agreement of Tanimoto nearest neighbours", **row)
    for row in out["uniformity"]:
        run.add_row("uniformity of principal-axes frames", **row)
    run.log(median_nn_tanimoto=out["median_nn_tanimoto"])
    axes = {"QM9 as published": out["axes_published"], "randomly rotated": out["axes_rotated"]}
    run.save_figure("mollweide_axes", mollweide_axes(axes))
    run.save_figure("mollweide_pc1_rings", mollweide_axes(
        {"PC1, QM9 as published": out["axes_published"]}, colour=out["rings"], colour_label="rings"
    ))  # fmt: skip
    run.save_figure("angles_to_mode", angle_histogram(out["angles_to_mode"]))
    everything = load_qm9(None, seed=seed, rows_per_part=cfg.rows_per_part).poses
    rows, check = kl.run(everything, kl.KLConfig(sizes=cfg.kl_sizes, seed=seed))
    for row in rows:
        run.add_row("KL to Haar (k = 5) at the paper's n", **row)
    run.add_row("sign rule: our frames vs the official code's", **check)


def reproduce(
    cfg: ReproduceConfig, *, scale: str = "tiny", seed: int = 0, device: str = "cpu",
    out: Path = Path("runs"),
) -> Path:  # fmt: skip
    """Run the three findings into one report folder and return it."""
    phases = ["finding 1: classifiers", "finding 2: properties", "finding 3: neighbours", "report"]
    plan(phases, ESTIMATE_S.get(scale))
    run = Run(PACKAGE, cfg, out=out)
    phase("finding 1: classifiers")
    finding1(run, cfg, seed, device)
    phase("finding 2: properties")
    finding2(run, cfg, seed, device)
    phase("finding 3: neighbours")
    finding3(run, cfg, seed)
    phase("report")
    return run.finish(
        title="orient-bias reproduce: Take Note: Your Molecular Dataset Is Probably Aligned",
        notes=f"QM9 from qm9pack 1.0.3, scale {scale}: {cfg.n_classify} / {cfg.n_regress} / "
        f"{cfg.n_similarity} molecules for findings 1 / 2 / 3, sampled over all three CSV parts"
        + (f" (first {cfg.rows_per_part} rows of each)." if cfg.rows_per_part else "."),
    )
