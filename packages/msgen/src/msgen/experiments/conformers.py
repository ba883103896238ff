"""QM9 conformer generation: MSGEN (two stages) vs the same base generator alone vs RDKit.

Arms, all with ``samples_per_ref`` x as many generated as reference conformers (one DFT
geometry per molecule, so 2 per molecule by default):

- ``ETKDG`` and ``ETKDG + MMFF`` (RDKit ETKDGv3, seeded): what a user would run;
- ``random``: the diffusion prior N(0, I), a floor;
- ``single-scale``: the base generator (GeoDiff's edge-score network by default) on all
  atoms, trained for the SUM of
  MSGEN's two stages' steps (equal optimisation steps; per-network size equal);
- ``single-scale (param-matched)`` (optional): a wider network with about as many
  parameters as MSGEN's two networks together, same total steps;
- ``MSGEN``: stage 1 on heavy atoms, upsampling (tau), stage 2 guided on all atoms;
- ``oracle heavy + stage 2``: the TRUE heavy atoms upsampled, then stage 2 (isolates stage 2);
- ``stage 1 alone (heavy atoms)``: stage 1's samples (the same ones MSGEN upsamples),
  scored on the heavy atoms: what stage 2 starts from;
- with ``other_samplers``: MSGEN and single-scale again with those samplers (same networks).

Also the guide alone versus tau (bond quality of the upsampled true heavy atoms).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from msgen.data import qm9_conformers, read_geodiff_pickle, with_positions
from msgen.diffusion import DiffusionConfig, DiffusionGenerator, LangevinConfig
from msgen.epsnet import DualEncoderEpsNet, EpsNetConfig
from msgen.evaluation import bond_quality, etkdg, evaluate, random_conformers
from msgen.model import DenoiserConfig, EGNNDenoiser, num_parameters
from msgen.multiscale import MSGEN, hierarchy, upsample_guide
from shared_core.data import MolGraph
from shared_core.progress import phase
from shared_core.train import TrainConfig

THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 21))  # Å, for the COV-vs-delta plot


def train_config(steps: int, lr: float = 1e-3, warmup: int = 50) -> TrainConfig:
    """GeoDiff's optimiser settings (Adam betas (0.95, 0.999), no weight decay), cosine decay."""
    return TrainConfig(
        steps=steps, lr=lr, warmup=min(warmup, steps - 1), weight_decay=0.0,
        betas=(0.95, 0.999), grad_clip=10.0,
    )  # fmt: skip


@dataclass(frozen=True)
class ConformerConfig:
    """One QM9 conformer experiment (defaults: tiny)."""

    n_train: int = 2000
    n_test: int = 50
    pool: int = 4000  # first QM9 molecules drawn from (QM9 is sorted by size)
    samples_per_ref: int = 2  # generated / reference conformers (GeoDiff: 2)
    network: str = "geodiff"  # the paper's edge-score network; "egnn" = 0.1.0's
    epsnet: EpsNetConfig = field(
        default_factory=lambda: EpsNetConfig(hidden=32, num_convs=3, num_convs_local=3)
    )  # CPU-sized (public: 128 wide, 6 SchNet + 4 GIN layers)
    denoiser: DenoiserConfig = field(default_factory=DenoiserConfig)  # network="egnn"
    sampler: str = "ld"  # the paper's Langevin dynamics; "ddpm" = ours
    ld_steps: int = 250  # Langevin noise levels (public: all 5,000)
    other_samplers: tuple[str, ...] = ("ddpm",)  # also evaluated on the same networks
    diffusion_steps: int = 100  # ddpm chain, respaced from GeoDiff's 5,000
    batch_size: int = 16
    stage1_steps: int = 400
    stage2_steps: int = 400
    lr: float = 1e-3
    tau: float = 3.0  # Å, the public default
    guide_augmentation: bool = True  # public: perturb stage 2's guide in training; False: clean
    # ours (0.4.0): guide noise of a told level U[lo, hi] Å (EpsNetConfig guide_input
    # "calibrated", guide_augmentation False) and the number of held-out QM9 molecules
    # (after the test ones) on which MSGEN.calibrate measures stage 1's error
    guide_noise: tuple[float, float] | None = None
    guide_clean_fraction: float = 0.0  # ours (0.4.1): share of exact training guides, told 0
    calibrate: int = 0
    told_factors: tuple[float, ...] = ()  # also MSGEN with the told level x these (ours)
    guide_taus: tuple[float, ...] = (0.5, 1.0, 1.5, 3.0)  # the guide-alone table
    param_matched_single: bool = False  # also train the wider single-scale network
    etkdg: bool = True
    scales: tuple[str, ...] = ("heavy",)  # coarse scales; ("scaffold", "heavy") for GEOM-Drugs
    geom_train: str = ""  # GeoDiff-format GEOM pickles instead of QM9 (paper scale, user files)
    geom_test: str = ""

    def __post_init__(self) -> None:
        for name in ("n_train", "n_test", "pool", "samples_per_ref", "diffusion_steps",
                     "batch_size", "stage1_steps", "stage2_steps"):  # fmt: skip
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        for name in (self.sampler, *self.other_samplers):
            if name not in ("ld", "ddpm"):
                raise ValueError(f"sampler: expected 'ld' or 'ddpm', got {name!r}")
        if (
            not isinstance(self.calibrate, int)
            or isinstance(self.calibrate, bool)
            or self.calibrate < 0
        ):
            raise ValueError(f"calibrate: expected an int >= 0, got {self.calibrate!r}")
        if self.told_factors and not self.calibrate:
            raise ValueError("told_factors: needs calibrate > 0 (a measured level to scale)")
        if any(not (isinstance(f, (int, float)) and f >= 0) for f in self.told_factors):
            raise ValueError(f"told_factors: expected numbers >= 0, got {self.told_factors!r}")
        if self.calibrate and self.epsnet.guide_input != "calibrated":
            raise ValueError(
                "calibrate: only a guide_input='calibrated' stage 2 is told stage 1's error; "
                f"got guide_input={self.epsnet.guide_input!r}"
            )


def add_guide_noise_args(p: argparse.ArgumentParser, no_augmentation_help: str) -> None:
    """The experiment CLIs' guide-noise switches: ``--no-augmentation`` and ours,
    ``--guide-noise LO HI`` (told noise, with ``--guide-input calibrated``; replaces the
    public augmentation) and ``--guide-clean-fraction P`` (0.4.1); read by `guide_noise_args`."""
    p.add_argument("--no-augmentation", action="store_true", help=no_augmentation_help)
    p.add_argument("--guide-noise", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                   help="ours: told guide noise U[LO, HI] Å (with --guide-input calibrated; "
                   "replaces the augmentation)")  # fmt: skip
    p.add_argument("--guide-clean-fraction", type=float, default=0.0, metavar="P",
                   help="ours: share of training guides left exact, told 0 (with --guide-noise)")  # fmt: skip


def guide_noise_args(p: argparse.ArgumentParser, a: argparse.Namespace) -> dict[str, Any]:
    """``guide_augmentation``, ``guide_noise`` and ``guide_clean_fraction`` from the switches
    of `add_guide_noise_args` (a usage error, before any training, for a share without noise)."""
    if a.guide_clean_fraction and a.guide_noise is None:
        p.error(f"--guide-clean-fraction {a.guide_clean_fraction}: needs --guide-noise LO HI")
    return {
        "guide_augmentation": not (a.no_augmentation or a.guide_noise is not None),
        "guide_noise": None if a.guide_noise is None else (a.guide_noise[0], a.guide_noise[1]),
        "guide_clean_fraction": a.guide_clean_fraction,
    }


def _generator(
    cfg: ConformerConfig, steps: int, guided: bool, hidden: int | None = None
) -> DiffusionGenerator:
    den = dataclasses.replace(cfg.denoiser, guided=guided, hidden=hidden or cfg.denoiser.hidden)
    eps = dataclasses.replace(cfg.epsnet, guided=guided, hidden=hidden or cfg.epsnet.hidden)
    return DiffusionGenerator(
        DiffusionConfig(
            network=cfg.network, epsnet=eps, denoiser=den, sampler=cfg.sampler,
            langevin=LangevinConfig(steps=cfg.ld_steps), steps=cfg.diffusion_steps,
            batch_size=cfg.batch_size, train=train_config(steps, cfg.lr),
            guide_augmentation=cfg.guide_augmentation,
            guide_noise=cfg.guide_noise if guided else None,
            guide_clean_fraction=cfg.guide_clean_fraction if guided else 0.0,
        )
    )  # fmt: skip


def matched_hidden(cfg: ConformerConfig, target: int) -> int:
    """The unguided width whose parameter count is closest to `target`."""

    def count(h: int) -> int:
        if cfg.network == "geodiff":
            return num_parameters(
                DualEncoderEpsNet(dataclasses.replace(cfg.epsnet, hidden=h, guided=False))
            )
        return num_parameters(
            EGNNDenoiser(dataclasses.replace(cfg.denoiser, hidden=h, guided=False))
        )

    base = cfg.epsnet.hidden if cfg.network == "geodiff" else cfg.denoiser.hidden
    return min(range(base, 4 * base + 1, 2), key=lambda h: abs(count(h) - target))


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def _load(
    cfg: ConformerConfig, seed: int
) -> tuple[list[MolGraph], list[MolGraph], list[np.ndarray], list[MolGraph]]:
    """Train conformers, test graphs, each test molecule's reference conformers, and
    `cfg.calibrate` held-out conformers (drawn after the test ones: train and test stay
    the molecules they are without calibration)."""
    if cfg.geom_train or cfg.geom_test:
        if cfg.calibrate:
            raise ValueError("calibrate: held-out QM9 molecules only (not with GEOM pickles)")
        if not (cfg.geom_train and cfg.geom_test):
            raise ValueError("geom_train/geom_test: give both GeoDiff-format pickles or neither")
        train_sets = read_geodiff_pickle(cfg.geom_train)
        test_sets = read_geodiff_pickle(cfg.geom_test)[: cfg.n_test]
        train = [with_positions(s.graph, c) for s in train_sets for c in s.conformers]
        rng = np.random.default_rng(seed)
        train = [train[i] for i in rng.permutation(len(train))[: cfg.n_train]]
        return train, [s.graph for s in test_sets], [s.conformers for s in test_sets], []
    train, rest = qm9_conformers(cfg.n_train, cfg.n_test + cfg.calibrate, pool=cfg.pool, seed=seed)
    test, held = rest[: cfg.n_test], rest[cfg.n_test :]
    return train, test, [g.positions[None] for g in test], held  # type: ignore[index]


def _grouped(
    fn: Callable[[list[MolGraph], int], list[np.ndarray]], graphs: list[MolGraph], ks: list[int]
) -> list[np.ndarray]:
    """``fn(graphs, k)`` called once per distinct k (molecules with c references get k = 2c)."""
    out: list[np.ndarray | None] = [None] * len(graphs)
    for k in sorted(set(ks)):
        idx = [i for i, ki in enumerate(ks) if ki == k]
        for i, arr in zip(idx, fn([graphs[i] for i in idx], k), strict=True):
            out[i] = arr
    return [a for a in out if a is not None]


def etkdg_arms(
    test: list[MolGraph], ks: list[int], seed: int
) -> tuple[dict[str, list[np.ndarray]], dict[str, dict[str, float]]]:
    """The RDKit arms: ``k`` ETKDGv3 conformers of test molecule i with seed ``seed + i``
    (± MMFF), and their CPU costs."""
    samples, cost = {}, {}
    for name, mmff in (("ETKDG", False), ("ETKDG + MMFF", True)):
        samples[name], t = _timed(
            lambda mmff=mmff: [  # type: ignore[misc]
                etkdg(g, k, seed=seed + i, mmff=mmff)
                for i, (g, k) in enumerate(zip(test, ks, strict=True))
            ]
        )
        cost[name] = {"train_cpu_s": 0.0, "sample_cpu_s": t}
    return samples, cost


def run_etkdg(cfg: ConformerConfig, *, seed: int = 0) -> dict[str, Any]:
    """Only the RDKit arms of `run` (same split, seeds and evaluation): ``{"metrics",
    "cost", "n_test"}``."""
    _, test, refs, _ = _load(cfg, seed)
    ks = [cfg.samples_per_ref * r.shape[0] for r in refs]
    samples, cost = etkdg_arms(test, ks, seed)
    metrics = {name: evaluate(test, s, THRESHOLDS, refs) for name, s in samples.items()}
    return {
        "metrics": {n: {k2: v for k2, v in m.items() if k2 != "rmsd"} for n, m in metrics.items()},
        "cost": cost,
        "n_test": len(test),
    }


def run(cfg: ConformerConfig, *, seed: int = 0) -> dict[str, Any]:
    """Train, sample and evaluate every arm; return metrics, costs and curves."""
    torch.manual_seed(seed)
    phase("load QM9")
    train, test, refs, held = _load(cfg, seed)
    ks = [cfg.samples_per_ref * r.shape[0] for r in refs]
    samples: dict[str, list[np.ndarray]] = {}
    cost: dict[str, dict[str, float]] = {}
    params: dict[str, int] = {}
    losses: dict[str, list[float]] = {}
    nonfinite: dict[str, int] = {}

    phase("baselines (ETKDG, random)")
    if cfg.etkdg:
        rd_samples, rd_cost = etkdg_arms(test, ks, seed)
        samples.update(rd_samples)
        cost.update(rd_cost)
    samples["random"] = [
        random_conformers(g, k, seed=seed + i)
        for i, (g, k) in enumerate(zip(test, ks, strict=True))
    ]

    # MSGEN: one unguided stage on the coarsest scale, then guided stages
    phase("train + sample MSGEN")
    stages = [_generator(cfg, cfg.stage1_steps, False)]
    stages += [_generator(cfg, cfg.stage2_steps, True) for _ in cfg.scales]
    ms = MSGEN(stages, scales=cfg.scales, tau=cfg.tau)
    fits, t_fit = _timed(lambda: ms.fit(train, seed=seed))
    calibration: list[dict[str, Any]] = []
    if held:  # ours: stage 1's error on held-out molecules, told to stage 2 at sampling
        calibration, t_cal = _timed(lambda: ms.calibrate(held, seed=seed + 1))
        t_fit += t_cal
    samples["MSGEN"], t_s = _timed(
        lambda: _grouped(lambda g, k: ms.sample(g, k, seed=seed), test, ks)
    )
    cost["MSGEN"] = {"train_cpu_s": t_fit, "sample_cpu_s": t_s}
    measured = list(ms.guide_sigma)
    for f in cfg.told_factors:  # the told level's sensitivity, same networks and seeds
        ms.guide_sigma = [None if v is None else f * v for v in measured]
        name = f"MSGEN [told x{f:g}]"
        samples[name], t_f = _timed(
            lambda: _grouped(lambda g, k: ms.sample(g, k, seed=seed), test, ks)
        )
        cost[name] = {"train_cpu_s": t_fit, "sample_cpu_s": t_f}
    ms.guide_sigma = measured
    params["MSGEN"] = sum(num_parameters(st.net) for st in stages)
    names = [*cfg.scales, "all atoms"]
    for level, fit in enumerate(fits):
        losses[f"MSGEN stage {level + 1} ({names[level]}{', guided' if level else ''})"] = (
            fit.losses
        )
    coarse = {id(g): hierarchy(g, ms.scales).level_graph(0).positions for g in test}
    later = "stage 2" if len(stages) == 2 else f"stages 2-{len(stages)}"
    oracle = f"oracle {cfg.scales[0]} + {later}"
    samples[oracle], t_o = _timed(
        lambda: _grouped(
            lambda g, k: ms.sample(g, k, seed=seed, coarse=[coarse[id(x)] for x in g]),  # type: ignore[misc]
            test, ks,
        )
    )  # fmt: skip
    cost[oracle] = {"train_cpu_s": t_fit, "sample_cpu_s": t_o}
    params[oracle] = sum(num_parameters(st.net) for st in stages[1:])
    # stage 1's own samples (the ones MSGEN upsamples: same seed), scored on its scale
    coarse_graphs = [hierarchy(g, ms.scales).level_graph(0) for g in test]
    first = f"stage 1 alone ({cfg.scales[0]} atoms)"
    if cfg.scales == ("heavy",):  # RemoveHs leaves exactly stage 1's atoms to score
        stage1_samples, t_1 = _timed(
            lambda: _grouped(lambda g, k: stages[0].sample(g, k, seed=seed), coarse_graphs, ks)
        )
        cost[first] = {"train_cpu_s": t_fit, "sample_cpu_s": t_1}
        params[first] = num_parameters(stages[0].net)

    # the base generator alone, on the same total number of optimisation steps
    phase("train + sample single-scale")
    single_arms: list[tuple[str, int | None]] = [("single-scale", None)]
    if cfg.param_matched_single:
        single_arms.append(("single-scale (param-matched)", matched_hidden(cfg, params["MSGEN"])))
    for name, hidden in single_arms:
        gen = _generator(cfg, cfg.stage1_steps + cfg.stage2_steps, False, hidden)
        fit, t_fit = _timed(lambda gen=gen: gen.fit(train, seed=seed + 100))  # type: ignore[misc]
        samples[name], t_s = _timed(
            lambda gen=gen: _grouped(lambda g, k: gen.sample(g, k, seed=seed + 100), test, ks)  # type: ignore[misc]
        )
        cost[name] = {"train_cpu_s": t_fit, "sample_cpu_s": t_s}
        params[name] = num_parameters(gen.net)
        losses[name] = fit.losses
        if name == "single-scale":
            single = gen

    # the same networks under the other samplers
    for sampler in cfg.other_samplers:
        phase("other samplers")
        for st in [*stages, single]:
            st.config = dataclasses.replace(st.config, sampler=sampler)
        samples[f"MSGEN [{sampler}]"], t_s = _timed(
            lambda: _grouped(lambda g, k: ms.sample(g, k, seed=seed), test, ks)
        )
        cost[f"MSGEN [{sampler}]"] = {
            "train_cpu_s": cost["MSGEN"]["train_cpu_s"],
            "sample_cpu_s": t_s,
        }
        samples[f"single-scale [{sampler}]"], t_s = _timed(
            lambda: _grouped(lambda g, k: single.sample(g, k, seed=seed + 100), test, ks)
        )
        cost[f"single-scale [{sampler}]"] = {
            "train_cpu_s": cost["single-scale"]["train_cpu_s"], "sample_cpu_s": t_s,
        }  # fmt: skip
    for name, arm in samples.items():  # a diverged chain counts as a failure (a prior draw)
        for i, a in enumerate(arm):
            if not np.all(np.isfinite(a)):
                arm[i] = random_conformers(test[i], a.shape[0], seed=seed + i)
                nonfinite[name] = nonfinite.get(name, 0) + 1

    phase("evaluate")
    metrics = {name: evaluate(test, s, THRESHOLDS, refs) for name, s in samples.items()}
    if cfg.scales == ("heavy",):
        bad1 = [i for i, a in enumerate(stage1_samples) if not np.all(np.isfinite(a))]
        for i in bad1:
            stage1_samples[i] = random_conformers(coarse_graphs[i], ks[i], seed=seed + i)
        if bad1:
            nonfinite[first] = len(bad1)
        upsampled = [  # hydrogens placed as in the guide; the RMSD ignores them
            ms.guide(hierarchy(g, ms.scales), 1, a, seed=seed + i)
            for i, (g, a) in enumerate(zip(test, stage1_samples, strict=True))
        ]
        metrics[first] = evaluate(test, upsampled, THRESHOLDS, refs, bonds=False)
    guide_rows = []
    for tau in cfg.guide_taus:
        q = []
        for i, g in enumerate(test):
            h = hierarchy(g, ms.scales)
            parent = h.level_graph(len(ms.scales) - 1).positions
            assert parent is not None  # test graphs carry their reference positions
            guide = upsample_guide(h, len(ms.scales), parent[None], tau=tau, seed=seed + i)
            q.append(bond_quality(g, guide))
        guide_rows.append({
            "tau_A": tau,
            "bond_mae_A": float(np.mean([x["bond_mae"] for x in q])),
            "bonds_ok": float(np.mean([x["bonds_ok"] for x in q])),
        })  # fmt: skip
    return {
        "metrics": {n: {k2: v for k2, v in m.items() if k2 != "rmsd"} for n, m in metrics.items()},
        "best_rmsd": {n: [float(r.min()) for r in m["rmsd"]] for n, m in metrics.items()},
        "cost": cost,
        "params": params,
        "losses": losses,
        "guide": guide_rows,
        "calibration": calibration,
        "guide_sigma": ms.guide_sigma[1:],
        "nonfinite_molecules": nonfinite,
        "n_train": len(train),
        "n_test": len(test),
        "mean_atoms_test": float(np.mean([g.num_atoms for g in test])),
        "mean_heavy_test": float(np.mean([(g.atomic_numbers > 1).sum() for g in test])),
    }
