"""The oracle-guide test: can a guided stage use its guide at all?

Stage 2 (guided, all atoms) is fed the TRUE heavy atoms of each test molecule, upsampled
(tau 3 Å, public default), and compared with the same network trained unguided on all atoms
(single-scale), at EQUAL training steps, per seed (the seed also draws the data split).
If the heavy-atom RMSD of the oracle arm is not clearly below single-scale, no generated
guide can help either. Both samplers (the paper's Langevin ``ld`` and our ``ddpm``) are
evaluated on the same trained networks.

    python -m msgen.experiments.oracle --seeds 0 1 2 --out oracle.json

Ablation switches (defaults: the public code): ``--tau`` (upsampling distance), ``--anchor
centroid`` (the public upsampling as it runs), ``--guide-edges heavy`` (guide features only
on heavy-heavy edges), ``--guide-input difference`` (the guide encoders read g_e - d_e),
``--time-input`` (both arms read log sigma), ``--guide-input calibrated --guide-noise LO HI
[--guide-clean-fraction P]`` (ours: told-level guide noise, a share P of exact guides told
0; the oracle is told 0), ``--ld-steps`` (Langevin
levels) and ``--max-step-scale`` (cap of the step's stride multiplier; ``inf`` = 0.2.0's
sampler): several values are all evaluated on the same trained networks.
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

from msgen.data import ELEMENTS, qm9_conformers
from msgen.diffusion import (
    DiffusionConfig,
    DiffusionGenerator,
    LangevinConfig,
    ancestral_sample,
    langevin_sample,
    respaced_betas,
    sigmoid_betas,
)
from msgen.epsnet import GUIDE_EDGES, GUIDE_INPUTS, EpsNetConfig, eq_transform, local_mask
from msgen.evaluation import evaluate, random_conformers
from msgen.experiments.conformers import add_guide_noise_args, guide_noise_args, train_config
from msgen.experiments.gate import summary
from msgen.model import pack, pair_template
from msgen.multiscale import hierarchy, upsample_guide
from msgen.reference import ExactEdgeScore
from msgen.upsampling import ANCHORS
from shared_core.atomic import atomic_write_json
from shared_core.cli import nonneg_int, positive_int


@dataclass(frozen=True)
class OracleConfig:
    """One oracle-guide run (defaults: tiny)."""

    n_train: int = 2000
    n_test: int = 100
    pool: int = 4000
    samples: int = 2  # generated conformers per molecule
    epsnet: EpsNetConfig = field(
        default_factory=lambda: EpsNetConfig(hidden=32, num_convs=3, num_convs_local=3)
    )
    steps: int = 800  # training steps of EACH arm
    batch_size: int = 16
    lr: float = 1e-3
    tau: float = 3.0
    samplers: tuple[str, ...] = ("ld", "ddpm")
    guide_augmentation: bool = True  # the public conditioning augmentation of the guide
    guide_noise: tuple[float, float] | None = None  # ours: told noise (guide_input "calibrated")
    guide_clean_fraction: float = 0.0  # ours (0.4.1): share of exact guides, told 0
    single_scale: bool = True  # also train the unguided arm
    anchor: str = "bonded"  # upsampling anchors (msgen.upsampling.upsample)
    ld_steps: tuple[int, ...] = (250,)  # Langevin levels, each evaluated
    step_scales: tuple[float, ...] = (5.0,)  # LangevinConfig.max_step_scale, each evaluated


def _generator(cfg: OracleConfig, guided: bool) -> DiffusionGenerator:
    epsnet = dataclasses.replace(
        cfg.epsnet, guided=guided, guide_edges=cfg.epsnet.guide_edges if guided else "all"
    )
    return DiffusionGenerator(
        DiffusionConfig(
            epsnet=epsnet, batch_size=cfg.batch_size,
            train=train_config(cfg.steps, cfg.lr), guide_augmentation=cfg.guide_augmentation,
            guide_noise=cfg.guide_noise if guided else None,
            guide_clean_fraction=cfg.guide_clean_fraction if guided else 0.0,
        )
    )  # fmt: skip


FIELD_SIGMAS = (0.1, 0.3, 1.0, 3.0)  # Å, noise levels of the field check


@torch.no_grad()
def field_r2(
    gen: DiffusionGenerator, graphs: list[Any], guides: list[np.ndarray] | None, seed: int
) -> dict[str, float]:
    """R^2 of the network's local field on the HEAVY atoms against GeoDiff's target field.

    Test conformers perturbed at each of `FIELD_SIGMAS`: ``1 - |eq(s_loc) - eq(t_loc)|^2 /
    |eq(t_loc)|^2`` summed over heavy atoms, where ``t = (d_0 - d) / sigma`` on the local
    edges. The guide fixes every heavy-heavy distance, so a network that uses it should
    reach a clearly higher R^2 than the unguided one.
    """
    net = gen.net
    net.eval()
    graph = pack([pair_template(g) for g in graphs])
    x0 = torch.cat([torch.from_numpy(g.positions - g.positions.mean(0)).float() for g in graphs])
    guide = None if guides is None else torch.cat([torch.from_numpy(a[0]).float() for a in guides])
    heavy = graph.z != ELEMENTS.index(1)
    i, j = graph.pairs
    loc = local_mask(graph)
    gen_ = torch.Generator().manual_seed(seed)
    out = {}
    for sigma in FIELD_SIGMAS:
        x = x0 + sigma * torch.randn(x0.shape, generator=gen_)
        told = (torch.zeros(graph.num_atoms),) if gen.reads_guide_sigma else ()  # exact guide
        _, s_loc = net(x, graph, guide, torch.full((graph.num_atoms,), sigma), *told)
        d = (x[i] - x[j]).norm(dim=-1)
        t = ((x0[i] - x0[j]).norm(dim=-1) - d) / sigma
        want = eq_transform(torch.where(loc, t, torch.zeros_like(t)), x, graph.pairs)[heavy]
        got = eq_transform(s_loc, x, graph.pairs)[heavy]
        out[f"{sigma:g}"] = float(1 - ((got - want) ** 2).sum() / (want**2).sum())
    return out


EXACT_SAMPLERS = ((250, float("inf")), (500, float("inf")), (1000, 5.0), (5000, 5.0),
                  (250, 5.0), (250, 1.0))  # fmt: skip
"""(levels, max_step_scale) of the exact-score check: 0.2.0's, stride 10, 5, the public
run, 0.3.0's default, the public per-level step."""


def exact_score_check(n_test: int, seed: int) -> dict[str, Any]:
    """The Langevin sampler fed the EXACT edge score of each test molecule (no network).

    One sample per molecule; MAT-R over the molecules that stayed finite (and within
    1,000 Å). Also our DDPM sampler on 100 / 500 respaced steps.
    """
    _, test = qm9_conformers(10, n_test, pool=4000, seed=seed)
    graph = pack([pair_template(g) for g in test])
    x0 = torch.cat([torch.from_numpy(g.positions - g.positions.mean(0)).float() for g in test])  # type: ignore[union-attr]
    abar = torch.cumprod(1 - torch.from_numpy(sigmoid_betas()), 0)
    sigmas = ((1 - abar) / abar).sqrt()
    net = ExactEdgeScore(x0)
    runs: list[tuple[str, torch.Tensor]] = []
    for levels, scale in EXACT_SAMPLERS:
        lcfg = LangevinConfig(steps=levels, max_step_scale=scale)
        x = langevin_sample(net, graph, None, sigmas, lcfg, seed, nan_ok=True)  # type: ignore[arg-type]
        runs.append((f"{levels} levels, scale {scale:g}", x))
    for steps in (100, 500):  # our DDPM sampler, eps = -F at x_t / sqrt(abar_t)
        betas = torch.from_numpy(respaced_betas(steps))
        ab = torch.cumprod(1 - betas, 0)

        def eps_fn(x: torch.Tensor, t: torch.Tensor, ab: torch.Tensor = ab, n: int = steps):
            a = float(ab[round(float(t[0]) * n) - 1])
            sig = ((1 - a) / a) ** 0.5
            f = net.field(x / a**0.5, graph, sigma=torch.full((graph.num_atoms,), sig))
            return -f

        x = ancestral_sample(eps_fn, betas, graph, torch.Generator().manual_seed(seed))
        runs.append((f"ddpm {steps} steps", x))
    out: dict[str, Any] = {}
    for name, x in runs:
        conf, start = [], 0
        for g in test:
            conf.append(x[start : start + g.num_atoms].double().numpy()[None])
            start += g.num_atoms
        ok = [i for i, c in enumerate(conf) if np.isfinite(c).all() and np.abs(c).max() < 1e3]
        m = evaluate([test[i] for i in ok], [conf[i] for i in ok], bonds=False) if ok else {}
        out[name] = {
            "finite": len(ok), "of": len(test), "MAT-R": m.get("MAT-R", float("nan")),
        }  # fmt: skip
    return out


def run(cfg: OracleConfig, seed: int) -> dict[str, Any]:
    """Train both arms on one seed; COV/MAT of each arm under each sampler, and CPU times."""
    torch.manual_seed(seed)
    train, test = qm9_conformers(cfg.n_train, cfg.n_test, pool=cfg.pool, seed=seed)

    def guides(graphs: list[Any], k: int, s: int) -> list[np.ndarray]:
        out = []
        for i, g in enumerate(graphs):
            h = hierarchy(g, ("heavy",))
            parent = np.repeat(h.level_graph(0).positions[None], k, axis=0)  # type: ignore[index]
            out.append(
                upsample_guide(h, 1, parent, tau=cfg.tau, seed=s * 7919 + i, anchor=cfg.anchor)
            )
        return out

    result: dict[str, Any] = {"seed": seed, "metrics": {}, "cpu_s": {}, "final_loss": {}}
    arms: dict[str, tuple[DiffusionGenerator, Any, Any]] = {}
    if cfg.single_scale:
        arms["single-scale"] = (_generator(cfg, False), None, None)
    arms["oracle heavy + stage 2"] = (
        _generator(cfg, True),
        [a[0] for a in guides(train, 1, seed)],
        guides(test, cfg.samples, seed + 1),
    )
    for name, (gen, train_guides, test_guides) in arms.items():
        t0 = time.process_time()
        hist = gen.fit(train, train_guides, seed=seed)
        result["cpu_s"][f"{name} train"] = time.process_time() - t0
        result["final_loss"][name] = float(np.mean(hist.losses[-50:]))
        result.setdefault("field_r2", {})[name] = field_r2(
            gen, test, None if test_guides is None else list(test_guides), seed
        )
        ld, seen = [], set()
        for n in cfg.ld_steps:
            for c in cfg.step_scales:  # skip a cap that does not bind: the same sampler
                if (n, min(5000 / n, c)) not in seen:
                    seen.add((n, min(5000 / n, c)))
                    ld.append((n, c))
        runs = [(smp, v) for smp in cfg.samplers for v in (ld if smp == "ld" else [(0, 0.0)])]
        for sampler, (levels, scale) in runs:
            gen.config = dataclasses.replace(gen.config, sampler=sampler)
            if levels:
                lcfg = dataclasses.replace(gen.config.langevin, steps=levels, max_step_scale=scale)
                gen.config = dataclasses.replace(gen.config, langevin=lcfg)
                if levels != OracleConfig.ld_steps[0]:
                    sampler = f"ld{levels}"
                if scale != OracleConfig.step_scales[0]:
                    sampler += f" scale {scale:g}"
            t0 = time.process_time()
            samples = gen.sample(test, cfg.samples, test_guides, seed=seed)
            result["cpu_s"][f"{name} sample {sampler}"] = time.process_time() - t0
            bad = [i for i, a in enumerate(samples) if not np.isfinite(a).all()]
            for i in bad:  # a diverged chain counts as a failure: a draw from the prior
                samples[i] = random_conformers(test[i], cfg.samples, seed=seed + i)
            m = evaluate(test, samples)
            m["molecules_nonfinite"] = len(bad)
            best = [float(r.min()) for r in m.pop("rmsd")]  # per molecule (one reference each)
            m["MAT-R median"] = float(np.median(best))
            m["best_rmsd"] = best
            result["metrics"][f"{name} [{sampler}]"] = m
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=nonneg_int, nargs="+", default=[0, 1, 2])
    p.add_argument("--steps", type=positive_int, default=OracleConfig.steps)
    p.add_argument("--n-train", type=positive_int, default=OracleConfig.n_train)
    p.add_argument("--n-test", type=positive_int, default=OracleConfig.n_test)
    p.add_argument(
        "--samplers", nargs="+", choices=("ld", "ddpm"), default=list(OracleConfig.samplers)
    )
    add_guide_noise_args(p, "clean guides in training")  # the oracle is told 0
    p.add_argument("--oracle-only", action="store_true", help="skip the single-scale arm")
    p.add_argument("--tau", type=float, default=OracleConfig.tau, help="upsampling distance, Å")
    p.add_argument("--anchor", choices=ANCHORS, default=OracleConfig.anchor)
    p.add_argument("--guide-edges", choices=GUIDE_EDGES, default="all")
    p.add_argument("--time-input", action="store_true", help="both arms read log sigma")
    p.add_argument("--guide-input", choices=GUIDE_INPUTS, default="length")
    p.add_argument("--ld-steps", type=positive_int, nargs="+", default=list(OracleConfig.ld_steps))
    p.add_argument(
        "--max-step-scale", type=float, nargs="+", default=list(OracleConfig.step_scales),
        help="cap(s) of the Langevin step's stride multiplier (inf: 0.2.0's sampler)",
    )  # fmt: skip
    p.add_argument(
        "--exact-score", action="store_true",
        help="only the sampler check with the exact edge score (no training; --n-test molecules)",
    )  # fmt: skip
    p.add_argument("--hidden", type=positive_int, default=OracleConfig().epsnet.hidden,
                   help="network width of both arms (public: 128)")  # fmt: skip
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    guide = guide_noise_args(p, a)
    torch.set_num_threads(1)
    if a.exact_score:
        for s in a.seeds:
            print(json.dumps({"seed": s, "exact_score": exact_score_check(a.n_test, s)}))
        return 0
    cfg = OracleConfig(
        steps=a.steps,
        n_train=a.n_train,
        n_test=a.n_test,
        samplers=tuple(a.samplers),
        **guide,
        single_scale=not a.oracle_only,
        tau=a.tau,
        anchor=a.anchor,
        ld_steps=tuple(a.ld_steps),
        step_scales=tuple(a.max_step_scale),
        epsnet=dataclasses.replace(
            OracleConfig().epsnet,
            hidden=a.hidden,
            guide_edges=a.guide_edges,
            time_input=a.time_input,
            guide_input=a.guide_input,
        ),
    )
    results = []
    for s in a.seeds:
        results.append(run(cfg, s))
        print(json.dumps(results[-1]), flush=True)
    if a.out:  # 0.4.1: with the per-arm mean and spread over the seeds (gate.summary)
        out = {"config": dataclasses.asdict(cfg), "summary": summary(results), "runs": results}
        atomic_write_json(a.out, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
