"""``msgen reproduce``: the QM9 conformer comparison at one scale, one report."""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from msgen.costs import ESTIMATE_S
from msgen.epsnet import EpsNetConfig
from msgen.experiments.conformers import THRESHOLDS, ConformerConfig
from shared_core.cli import ReproduceArgs
from shared_core.progress import phase, plan

SCALES: dict[str, ConformerConfig] = {
    # every code path in seconds (CI): toy network, a few steps, 4 test molecules
    "micro": ConformerConfig(
        n_train=24,
        n_test=4,
        pool=400,
        epsnet=EpsNetConfig(hidden=8, num_convs=1, num_convs_local=1),
        ld_steps=10,
        diffusion_steps=10,
        batch_size=4,
        stage1_steps=3,
        stage2_steps=3,
        guide_taus=(1.0, 3.0),
        param_matched_single=True,
    ),
    # ~1 CPU-minute with one thread: 2,000 train / 50 test QM9 molecules, 400 + 400 steps
    # of a 32-wide dual encoder (3 SchNet + 3 GIN layers), Langevin over 250 noise levels
    "tiny": ConformerConfig(),
    # <= 30 CPU-minutes with one thread (0.3.1): 5,000 train / 100 test QM9 molecules,
    # 10x tiny's steps (4,000 + 4,000; single-scale 8,000) of a 64-wide dual encoder
    "small": ConformerConfig(
        n_train=5000,
        n_test=100,
        pool=10_000,
        epsnet=EpsNetConfig(hidden=64, num_convs=3, num_convs_local=3),
        stage1_steps=4000,
        stage2_steps=4000,
    ),
    # the paper trains for 2M + 3M iterations of a 128-wide GeoDiff network on GEOM-QM9 40k;
    # a GPU-sized starting point with the public network and sampler (all 5,000 Langevin
    # levels): the full QM9 geometries, or
    # the user's GEOM-QM9 pickles when $MSGEN_GEOM_DIR holds train_data_40k.pkl and
    # test_data_1k.pkl (GeoDiff's files; the first 200 test molecules)
    "paper": ConformerConfig(
        n_train=100_000,
        n_test=1000,
        pool=130_831,
        epsnet=EpsNetConfig(),
        ld_steps=5000,
        diffusion_steps=1000,
        batch_size=64,
        stage1_steps=200_000,
        stage2_steps=300_000,
        lr=1e-4,
        param_matched_single=True,
    ),
}


def _plot_coverage(run: Any, metrics: dict[str, dict[str, float]]) -> None:
    """COV-R vs delta, one line per arm, the 0.5 Å QM9 threshold marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=120)
    for name, m in metrics.items():
        style = "--" if name.startswith(("ETKDG", "random")) else "-"
        ax.plot(THRESHOLDS, [m[f"COV-R@{d:g}"] for d in THRESHOLDS], style, marker="o",
                markersize=3, label=name)  # fmt: skip
    ax.axvline(0.5, color="gray", linestyle=":", label="δ = 0.5 Å (QM9)")
    ax.set_xlabel("RMSD threshold δ (Å, heavy atoms)")
    ax.set_ylabel("COV-R (share of molecules)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("QM9 test molecules: coverage of the DFT geometry vs δ")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    run.save_figure("coverage_vs_delta", fig)


LOSS_LABELS = {
    # GeoDiff's get_loss_diffusion: 2 x global + 5 x local squared error of the equivariant
    # field per atom, its target divided by the noise level (so thousands early in training)
    "geodiff": ("GeoDiff loss per atom (2 global + 5 local field errors)", True),
    # the EGNN's eps-MSE summed over x, y, z: 3.0 when it predicts zero
    "egnn": ("eps-MSE per atom (3.0 = predicting zero)", False),
}


def loss_plot_labels(network: str) -> tuple[str, str, bool]:
    """(y label, title, log y) of the training-loss plot of a `network` ("geodiff"/"egnn")."""
    if network not in LOSS_LABELS:
        raise ValueError(f"network: expected one of {tuple(LOSS_LABELS)}, got {network!r}")
    label, logy = LOSS_LABELS[network]
    return f"{label}, moving average", f"Denoiser training loss ({network})", logy


def _plot_losses(run: Any, losses: dict[str, list[float]], network: str) -> None:
    """Training loss (moving average over 50 steps) per network, labelled for `network`'s
    loss (the GeoDiff loss on a log axis; 0.4.2 and before titled it with the EGNN's scale)."""
    import numpy as np

    series = {}
    for name, ls in losses.items():
        a = np.asarray(ls)
        w = max(1, min(50, a.size // 5))
        smooth = np.convolve(a, np.ones(w) / w, mode="valid")
        series[name] = (list(range(w, a.size + 1)), smooth.tolist())
    ylabel, title, logy = loss_plot_labels(network)
    run.plot("training_loss", series, xlabel="training step", ylabel=ylabel, title=title,
             logy=logy)  # fmt: skip


def reproduce(args: ReproduceArgs) -> int:
    """Run the conformer experiment of ``args.config`` and write one report."""
    from msgen.experiments import conformers
    from shared_core.data import require_extra
    from shared_core.device import seed_everything
    from shared_core.report import Run

    cfg: ConformerConfig = args.config
    geom = os.environ.get("MSGEN_GEOM_DIR", "")
    if args.scale == "paper" and geom:  # the user's GEOM-QM9 pickles in GeoDiff's layout
        cfg = dataclasses.replace(
            cfg, geom_train=os.path.join(geom, "train_data_40k.pkl"),
            geom_test=os.path.join(geom, "test_data_1k.pkl"), n_test=200,
        )  # fmt: skip
    require_extra("msgen", "data", "rdkit", "msgen reproduce")
    require_extra("msgen", "data", "qm9pack", "msgen reproduce (QM9 geometries)")
    if cfg.geom_train:
        require_extra("msgen", "geom", "torch_geometric", "msgen reproduce on GEOM pickles")
    if args.device not in ("auto", "cpu"):
        print(f"note: --device {args.device} ignored: this experiment runs on the CPU")
    samplers = ["other samplers"] if cfg.other_samplers else []
    plan(
        ["load QM9", "baselines (ETKDG, random)", "train + sample MSGEN",
         "train + sample single-scale", *samplers, "evaluate", "report"],
        ESTIMATE_S.get(args.scale),
    )  # fmt: skip
    seed_everything(args.seed)
    run = Run(
        "msgen", {"scale": args.scale, "seed": args.seed, **dataclasses.asdict(cfg)}, out=args.out
    )
    t0 = time.time()
    out = conformers.run(cfg, seed=args.seed)
    phase("report")
    title = (
        f"QM9 ({out['n_test']} test molecules, {out['mean_heavy_test']:.1f} heavy / "
        f"{out['mean_atoms_test']:.1f} atoms on average; {cfg.samples_per_ref} conformers per DFT geometry)"
    )
    for name, m in out["metrics"].items():
        c = out["cost"].get(name, {})
        run.add_row(
            title,
            method=name,
            **{"COV-R@0.5": m["COV-R@0.5"], "COV-P@0.5": m["COV-P@0.5"]},
            **{"MAT-R (Å)": m["MAT-R"], "MAT-P (Å)": m["MAT-P"]},
            **{
                "COV-R@1.0": m["COV-R@1"],
                "bond MAE (Å)": m.get("bond_mae", "-"),
                "all bonds ok": m.get("bonds_ok", "-"),
            },
            **{"X-H ok": m.get("xh_ok", "-"), "heavy ok": m.get("heavy_ok", "-")},
            params=out["params"].get(name, "-"),
            train_cpu_s=c.get("train_cpu_s", "-"),
            sample_cpu_s=c.get("sample_cpu_s", "-"),
        )
    for row in out["guide"]:
        run.add_row("Upsampled TRUE heavy atoms (the guide alone) vs tau", **row)
    _plot_coverage(run, out["metrics"])
    _plot_losses(run, out["losses"], cfg.network)
    run.log(experiment_wall_s=time.time() - t0, **out)
    run.finish(
        title="msgen reproduce: hierarchical (MSGEN) vs single-scale conformer generation on QM9",
        notes=(
            "RMSD = RDKit GetBestRMS after RemoveHs against the single B3LYP geometry of each "
            "molecule (qm9pack), so COV/MAT are best-of-k statistics. all bonds ok = share of "
            "conformers with every bond within 0.75-1.25x its UFF rest length; X-H ok / heavy ok = "
            "share of X-H / heavy-heavy bonds within that range."
        ),
    )
    return 0
