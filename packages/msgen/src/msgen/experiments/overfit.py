"""The over-fit diagnostic: can the guided network read its guide at all?

Issue 34's oracle gate (`msgen.experiments.oracle`) is not met at the budgets we can
afford. This experiment asks the cheaper question first: trained to convergence on a
handful of conformers (over-fitting on purpose), does the guided stage reproduce the
conformer its guide was cut from, and better than the unguided network?

Two training sets, each run with three arms on the same steps (the guided network with
the public conditioning augmentation, the guided network with clean guides, the unguided
network):

- ``qm9``: `--molecules` QM9 molecules, one conformer each. The unguided network can
  memorise these too (one conformer per graph), so this set tests capacity and the
  sampler more than the guide.
- ``flex``: ONE flexible molecule (`--smiles`, default hexan-1-ol) with
  `--conformers` ETKDG conformers (at least 0.3 Å apart). Its graph is the same for every conformer, so
  only the guide tells which conformer is wanted: an unguided network can at best return
  some training conformer, a network that reads its guide returns the guide's.

Measured per arm: the heavy-atom RMSD of each sample to the conformer whose heavy atoms
were the guide ("own"), the RMSD to the nearest training conformer ("nearest"), the
low-noise field R^2 (`msgen.experiments.oracle.field_r2`) with the true guide and with the
guide of another conformer, and the guide probe (`guide_probe`): the derivative of each
heavy-heavy edge's score with respect to its own guide length and its own length, times
sigma. With a clean guide the exact score of a heavy-heavy edge is ``(g_e - d_e) /
sigma``, so a network that reads the guide has ``sigma ds_e/dg_e`` near 1; a network
that ignores it has 0.

    python -m msgen.experiments.overfit --steps 3000 --out overfit.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from msgen.data import ELEMENTS, heavy_atoms, molecule, qm9_conformers, with_positions
from msgen.diffusion import DiffusionConfig, DiffusionGenerator
from msgen.epsnet import GUIDE_INPUTS, DualEncoderEpsNet, EpsNetConfig, local_mask
from msgen.evaluation import etkdg, rmsd_matrix
from msgen.experiments.conformers import train_config
from msgen.experiments.oracle import field_r2
from msgen.model import pack, pair_template
from msgen.multiscale import hierarchy, upsample_guide
from shared_core.cli import nonneg_int, positive_int
from shared_core.data import MolGraph

PROBE_SIGMAS = (0.05, 0.1, 0.3, 1.0)  # Å
MIN_SPREAD = 0.3  # Å, heavy-atom RMSD between any two flex conformers


@dataclass(frozen=True)
class OverfitConfig:
    """One over-fit run (defaults: the README's)."""

    molecules: int = 4  # the qm9 set
    smiles: str = "CCCCCCO"  # the flex set's molecule
    conformers: int = 8  # the flex set's ETKDG conformers
    samples: int = 2  # per training conformer
    epsnet: EpsNetConfig = field(
        default_factory=lambda: EpsNetConfig(hidden=64, num_convs=3, num_convs_local=3)
    )
    steps: int = 3000
    batch_size: int = 16
    lr: float = 1e-3
    tau: float = 3.0
    ld_steps: int = 250
    sets: tuple[str, ...] = ("qm9", "flex")
    arms: tuple[str, ...] = ("guided", "guided, clean guide", "unguided")


def oracle_guides(graphs: list[MolGraph], k: int, tau: float, seed: int) -> list[np.ndarray]:
    """``(k, n, 3)`` per graph: its own heavy atoms, hydrogens upsampled (the oracle guide)."""
    out = []
    for i, g in enumerate(graphs):
        h = hierarchy(g, ("heavy",))
        parent = np.repeat(h.level_graph(0).positions[None], k, axis=0)  # type: ignore[index]
        out.append(upsample_guide(h, 1, parent, tau=tau, seed=seed * 7919 + i))
    return out


def guide_probe(
    net: DualEncoderEpsNet, graph: MolGraph, guide: np.ndarray, sigma: float, seed: int
) -> dict[str, float]:
    """Medians over heavy-heavy edges of ``sigma ds_e/dg_e`` (ideal 1) and ``sigma ds_e/dd_e``.

    The conformer of `graph` is perturbed at noise `sigma` (Å); s_e is the edge's score
    (global or local, whichever is defined), g_e and d_e its guide and current length
    (both directions of the pair moved together, as moving atoms would). Ideal with a
    clean guide: ``s_e = (g_e - d_e) / sigma``, so 1 and -1.
    """
    gb = pack([pair_template(graph)])
    x0 = torch.from_numpy(graph.positions - graph.positions.mean(0)).float()  # type: ignore[operator, union-attr]
    gen = torch.Generator().manual_seed(seed)
    x = x0 + sigma * torch.randn(x0.shape, generator=gen)
    g = torch.from_numpy(guide).float()
    i, j = gb.pairs
    d = (x[i] - x[j]).norm(dim=-1)
    dg = (g[i] - g[j]).norm(dim=-1)
    sig = torch.full((gb.num_atoms,), sigma)
    net.eval()

    def scores(dd: torch.Tensor, gg: torch.Tensor) -> torch.Tensor:
        s_glob, s_loc = net.edge_scores(dd, gg, gb, sig)
        return s_glob + s_loc  # disjoint supports

    jd, jg = torch.autograd.functional.jacobian(scores, (d, dg))
    index = {(a, b): e for e, (a, b) in enumerate(gb.pairs.T.tolist())}
    rev = torch.tensor([index[(b, a)] for a, b in gb.pairs.T.tolist()])
    e = torch.arange(d.numel())
    h = ELEMENTS.index(1)
    heavy = (gb.z[i] != h) & (gb.z[j] != h) & ((d <= net.config.cutoff) | local_mask(gb))
    dsg = (jg[e, e] + jg[e, rev])[heavy] * sigma
    dsd = (jd[e, e] + jd[e, rev])[heavy] * sigma
    return {"dS/dg": float(dsg.median()), "dS/dd": float(dsd.median())}


def training_set(cfg: OverfitConfig, name: str, seed: int) -> tuple[list[MolGraph], dict[str, Any]]:
    """The conformers of set `name` and a description (for flex: the conformers' spread)."""
    if name == "qm9":
        train, _ = qm9_conformers(cfg.molecules, 1, pool=4000, seed=seed)
        return train, {
            "molecules": len(train),
            "heavy_atoms": [int(heavy_atoms(g).size) for g in train],
        }
    base = molecule(cfg.smiles)
    # RDKit randomSeed = seed + 1 (etkdg's mapping since 0.4.0; 0.3.2 passed seed + 1 here
    # by hand): the conformers of 0.3.2's runs
    pool = etkdg(base, 6 * cfg.conformers, seed=seed)
    every = rmsd_matrix(with_positions(base, pool[0]), pool, pool)
    keep = [0]  # greedy: conformers at least MIN_SPREAD Å apart (heavy-atom RMSD)
    for c in range(1, len(pool)):
        if len(keep) < cfg.conformers and every[keep, c].min() >= MIN_SPREAD:
            keep.append(c)
    pos = pool[keep]
    graphs = [with_positions(base, p - p.mean(0)) for p in pos]
    spread = every[np.ix_(keep, keep)]
    off = spread[~np.eye(len(pos), dtype=bool)]
    return graphs, {
        "smiles": cfg.smiles, "conformers": len(graphs),
        "pairwise_rmsd_mean": float(off.mean()), "pairwise_rmsd_min": float(off.min()),
    }  # fmt: skip


def _generator(cfg: OverfitConfig, arm: str) -> DiffusionGenerator:
    guided = arm != "unguided"
    return DiffusionGenerator(
        DiffusionConfig(
            epsnet=dataclasses.replace(cfg.epsnet, guided=guided),
            batch_size=cfg.batch_size, train=train_config(cfg.steps, cfg.lr),
            guide_augmentation=arm == "guided",
            langevin=dataclasses.replace(DiffusionConfig().langevin, steps=cfg.ld_steps),
        )
    )  # fmt: skip


def run_set(cfg: OverfitConfig, name: str, seed: int) -> dict[str, Any]:
    """All arms on one training set."""
    graphs, about = training_set(cfg, name, seed)
    train_guides = [a[0] for a in oracle_guides(graphs, 1, cfg.tau, seed)]
    test_guides = oracle_guides(graphs, cfg.samples, cfg.tau, seed + 1)
    refs = np.stack([g.positions for g in graphs]) if name == "flex" else None  # type: ignore[misc]
    out: dict[str, Any] = {"set": about, "arms": {}}
    for arm in cfg.arms:
        gen = _generator(cfg, arm)
        guided = gen.guided
        t0 = time.process_time()
        hist = gen.fit(graphs, train_guides if guided else None, seed=seed)
        train_s = time.process_time() - t0
        t0 = time.process_time()
        own, nearest = [], []
        for c, g in enumerate(graphs):
            x = gen.sample([g], cfg.samples, [test_guides[c]] if guided else None, seed=seed + c)[0]
            if not np.isfinite(x).all():
                own.append(float("nan"))
                nearest.append(float("nan"))
                continue
            own.append(float(rmsd_matrix(g, x).min()))
            nearest.append(float(rmsd_matrix(g, x, refs).min()) if refs is not None else own[-1])
        res: dict[str, Any] = {
            "rmsd_own": float(np.mean(own)), "rmsd_nearest": float(np.mean(nearest)),
            "rmsd_own_each": own, "final_loss": float(np.mean(hist.losses[-100:])),
            "cpu_train_s": train_s, "cpu_sample_s": time.process_time() - t0,
        }  # fmt: skip
        if guided:
            res["field_r2_true_guide"] = field_r2(gen, graphs, test_guides, seed)
            shifted = test_guides[1:] + test_guides[:1]
            if name == "flex":  # the guide of another conformer of the same molecule
                res["field_r2_other_guide"] = field_r2(gen, graphs, shifted, seed)
            res["probe"] = {
                f"{s:g}": {
                    k: float(np.mean([guide_probe(gen.net, g, test_guides[c][0], s, seed + c)[k]  # type: ignore[arg-type]
                                      for c, g in enumerate(graphs)]))
                    for k in ("dS/dg", "dS/dd")
                }
                for s in PROBE_SIGMAS
            }  # fmt: skip
        else:
            res["field_r2"] = field_r2(gen, graphs, None, seed)
        out["arms"][arm] = res
        print(
            json.dumps(
                {"set": name, "arm": arm, **{k: v for k, v in res.items() if k != "rmsd_own_each"}}
            ),
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=nonneg_int, default=0)
    p.add_argument("--steps", type=positive_int, default=OverfitConfig.steps)
    p.add_argument("--hidden", type=positive_int, default=OverfitConfig().epsnet.hidden)
    p.add_argument("--molecules", type=positive_int, default=OverfitConfig.molecules)
    p.add_argument("--conformers", type=positive_int, default=OverfitConfig.conformers)
    p.add_argument("--smiles", default=OverfitConfig.smiles)
    p.add_argument("--sets", nargs="+", choices=("qm9", "flex"), default=list(OverfitConfig.sets))
    p.add_argument(
        "--arms", nargs="+", choices=OverfitConfig.arms, default=list(OverfitConfig.arms)
    )
    p.add_argument("--guide-input", choices=GUIDE_INPUTS, default="length",
                   help="what the guide encoders read (public: length)")  # fmt: skip
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    cfg = OverfitConfig(
        molecules=a.molecules, smiles=a.smiles, conformers=a.conformers, steps=a.steps,
        sets=tuple(a.sets), arms=tuple(a.arms),
        epsnet=dataclasses.replace(
            OverfitConfig().epsnet, hidden=a.hidden, guide_input=a.guide_input
        ),
    )  # fmt: skip
    torch.manual_seed(a.seed)
    t0 = time.process_time()
    result = {"config": dataclasses.asdict(cfg), "seed": a.seed,
              "sets": {s: run_set(cfg, s, a.seed) for s in cfg.sets}}  # fmt: skip
    result["cpu_s"] = time.process_time() - t0
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
