"""The base generator: a diffusion model on Cartesian coordinates, two networks, two samplers.

Default (the paper's, public ``models/epsnet/dualenc.py``): GeoDiff's dual-encoder network
(`msgen.epsnet`) predicting per-EDGE distance scores, trained with GeoDiff's loss
(``get_loss_diffusion``): positions perturbed as ``x~ = x_0 + sigma_t n`` with
``sigma_t = sqrt((1 - abar_t) / abar_t)`` at a step t drawn (antithetic pairs) over the
5,000-step sigmoid schedule (betas 1e-7 -> 2e-3), per-edge targets
``(d_0 - d~) / sigma_t``, and the loss ``2 |eq(s_glob) - eq(target_glob)|^2 +
5 |eq(s_loc) - eq(target_loc)|^2`` per atom (global targets only on non-local edges
within the cutoff). ``eq(s)`` estimates ``-n``, so ``eps_hat = -eq(s)``.

Option ``network="egnn"`` (this package's 0.1.0 network, `msgen.model`): an EGNN predicting
Cartesian eps from all pairs, trained with ``|| eps_hat(x_t, t) - eps ||^2`` on the
respaced variance-preserving chain.

Samplers:

- ``"ld"`` (the paper's, public ``langevin_dynamics_sample_diffusion`` with
  ``sampling_type='ld'``, as ``test.py`` calls it): ``x = sigma_T n``, then for each noise
  level ``sigma`` from high to low ``x <- x + a F / sigma + sqrt(2 a) z`` with
  ``a = step_lr (sigma / 0.01)^2``, ``F = eq(s_loc) + w_global eq(s_glob)`` (the global
  term only below ``global_start_sigma``, clipped at ``clip``), re-centred; a NaN restarts
  once with the local term clipped at 20. The public run visits all 5,000 levels; here
  ``steps`` evenly spaced levels with ``step_lr`` multiplied by ``min(stride,
  max_step_scale)`` (ours; 5 by default). Scaling by the full stride (0.2.0: 20 at 250
  levels, the public Langevin time per unit of schedule) makes the discretisation
  unstable: the update contracts a displacement ``u`` as ``(I - 0.01 s L) u`` with ``L``
  the edges' rigidity Laplacian and ``s`` the scale, and with the EXACT edge score
  (``(d_0 - d) / sigma``, `msgen.reference.ExactEdgeScore`) 50 of 50 QM9 molecules diverge
  at ``s`` = 20, 46 of 50 at ``s`` = 10 and none at ``s`` = 5 (``python -m
  msgen.experiments.oracle --exact-score``; ``tests/test_epsnet.py``). So the better a
  network learns the score, the worse a full-stride sampler does with it.
- ``"ddpm"`` (ours): ancestral DDPM on the respaced chain (`ancestral_sample`), the network
  fed ``x_t / sqrt(abar_t)``. On ``network="geodiff"`` it diverges with an accurate score
  (GeoDiff's field estimates ``L n``, not ``n``), so that combination warns
  (`GeoDiffDDPMWarning`); it stays allowed for the reported ``[ddpm]`` comparison rows.

MSGEN's conditioning augmentation (public ``get_loss_diffusion``): in training the guide is
perturbed as ``g + n sqrt((1 - abar_s) / abar_s)`` at a level s drawn (antithetic pairs)
over the 5,000-step schedule (up to ~12 Å); in sampling the guide is used clean.
Option of ours (0.4.0), replacing it: ``guide_noise=(lo, hi)`` perturbs the guide as
``g + sigma_g n`` with ``sigma_g`` uniform on [lo, hi] Å per molecule and TELLS the network
``sigma_g`` (``EpsNetConfig(guide_input="calibrated")``); at sampling the told level is
``guide_sigma`` (e.g. stage 1's measured error, `msgen.multiscale.MSGEN.calibrate`).
Option of ours (0.4.1) on top: ``guide_clean_fraction=p`` gives a share p of the training
molecules an EXACT guide, told ``sigma_g = 0`` (`draw_guide_sigma`): U[0, 1] Å puts only 5 % of
the draws below 0.05 Å, and the told-level stage 2 lost the oracle gate that the clean-trained
``scaled`` one met (README, "A stage 2 told its guide's error").

`ConformerGenerator` is the protocol a base model meets to plug into `msgen.MSGEN`:
fit on (graph, coordinates[, guide]) and sample given graphs [and guides].
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from msgen.data import check_molecule
from msgen.epsnet import DualEncoderEpsNet, EpsNetConfig, eq_transform, local_mask
from msgen.model import (
    DenoiserConfig,
    EGNNDenoiser,
    GraphBatch,
    PairTemplate,
    graph_batch_to,
    molecule_mean,
    pack,
    pair_template,
)
from shared_core.data import MolGraph
from shared_core.train import FitResult, TrainConfig, fit, step_generator

PAPER_STEPS = 5000  # GeoDiff / MSGEN ``num_diffusion_timesteps``


def sigmoid_betas(
    steps: int = PAPER_STEPS, beta_start: float = 1e-7, beta_end: float = 2e-3
) -> np.ndarray:
    """GeoDiff's ``sigmoid`` schedule: ``sigmoid(linspace(-6, 6)) * (end - start) + start``."""
    x = np.linspace(-6.0, 6.0, steps)
    return 1.0 / (1.0 + np.exp(-x)) * (beta_end - beta_start) + beta_start


def respaced_betas(steps: int, base: np.ndarray | None = None) -> np.ndarray:
    """Betas of a `steps`-step chain that visits `base`'s abar at evenly spaced steps."""
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps: expected a positive int, got {steps!r}")
    base = sigmoid_betas() if base is None else np.asarray(base, dtype=np.float64)
    if steps > base.size:
        raise ValueError(f"steps: expected at most {base.size} (the base chain), got {steps}")
    abar = np.cumprod(1.0 - base)
    keep = np.round(np.linspace(0, base.size - 1, steps + 1)[1:]).astype(np.int64)
    abar_k = abar[keep]
    prev = np.concatenate([[1.0], abar_k[:-1]])
    return 1.0 - abar_k / prev


NETWORKS = ("geodiff", "egnn")
SAMPLERS = ("ld", "ddpm")


class GeoDiffDDPMWarning(UserWarning):
    """``sampler="ddpm"`` on ``network="geodiff"``: the chain diverges with an accurate score."""


@dataclass(frozen=True)
class LangevinConfig:
    """The public sampler's settings (``test.py`` defaults) and our step count.

    steps: noise levels visited, evenly spaced over the 5,000 (the public run: all 5,000);
    ``step_lr`` is multiplied by ``min(5000 / steps, max_step_scale)`` (ours: the full
    stride is unstable, see the module docstring; ``float("inf")`` gives 0.2.0's sampler).
    """

    steps: int = 250
    step_lr: float = 1e-6
    clip: float = 1000.0  # global field, per atom
    clip_local_retry: float = 20.0  # local field clip of the retry after a NaN
    w_global: float = 1.0
    global_start_sigma: float = 0.5  # the global field is used below this noise level
    max_step_scale: float = 5.0  # ours: cap of the stride multiplier of step_lr

    def __post_init__(self) -> None:
        if (
            not isinstance(self.steps, int)
            or isinstance(self.steps, bool)
            or not 1 <= self.steps <= PAPER_STEPS
        ):
            raise ValueError(f"steps: expected an int in [1, {PAPER_STEPS}], got {self.steps!r}")
        for name in ("step_lr", "clip", "clip_local_retry", "global_start_sigma", "max_step_scale"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v > 0):
                raise ValueError(f"{name}: expected a positive number, got {v!r}")
        if not (isinstance(self.w_global, (int, float)) and self.w_global >= 0):
            raise ValueError(f"w_global: expected a number >= 0, got {self.w_global!r}")


@dataclass(frozen=True)
class DiffusionConfig:
    """A base generator: network, sampler, chain length, training budget.

    Defaults: the public network sizes (`EpsNetConfig`) and sampler settings, a short
    Langevin run (250 levels) and a CPU training budget.

    network: ``"geodiff"`` (the paper's dual encoder, `epsnet`) or ``"egnn"`` (ours,
    `denoiser`); guided or not is the chosen network config's ``guided``.
    sampler: ``"ld"`` (the paper's Langevin dynamics, `langevin`) or ``"ddpm"`` (ours,
    ancestral on a `steps`-step respaced chain).
    """

    network: str = "geodiff"
    epsnet: EpsNetConfig = field(default_factory=EpsNetConfig)
    denoiser: DenoiserConfig = field(default_factory=DenoiserConfig)
    sampler: str = "ld"
    langevin: LangevinConfig = field(default_factory=LangevinConfig)
    steps: int = 100  # ddpm sampler (and egnn training) chain, respaced from GeoDiff's 5,000
    batch_size: int = 32  # molecules per training step
    guide_augmentation: bool = True  # perturb the guide in training (MSGEN); clean in sampling
    # ours (0.4.0): guide noise of a level sigma_g ~ U[lo, hi] Å told to a "calibrated"
    # network, instead of the public augmentation (needs guide_augmentation=False)
    guide_noise: tuple[float, float] | None = None
    # ours (0.4.1): the share of training molecules whose guide is exact, told sigma_g = 0
    # (the rest U[lo, hi]); 0 draws exactly as 0.4.0 (`draw_guide_sigma`)
    guide_clean_fraction: float = 0.0
    guide_sigma: float = 0.0  # the level told to a "calibrated" network at sampling, Å
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            steps=1000, lr=1e-3, warmup=50, weight_decay=0.0, betas=(0.95, 0.999), grad_clip=10.0
        )
    )  # GeoDiff: Adam betas (0.95, 0.999), no weight decay; lr raised for the short budget

    def __post_init__(self) -> None:
        if self.network not in NETWORKS:
            raise ValueError(f"network: expected one of {NETWORKS}, got {self.network!r}")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler: expected one of {SAMPLERS}, got {self.sampler!r}")
        if self.network == "egnn" and self.sampler == "ld":
            raise ValueError("sampler: 'ld' needs network='geodiff' (edge scores); use 'ddpm'")
        if self.network == "geodiff" and self.sampler == "ddpm":
            # a warning, not an error: the reported [ddpm] rows (README) are this combination,
            # kept for comparison with what a half-trained network gives
            warnings.warn(
                "sampler='ddpm' with network='geodiff' diverges with an accurate score (fed the "
                "exact edge score, 1 of 50 QM9 molecules stays within 1,000 Å at 100 steps): "
                "GeoDiff's field estimates L n (L the rigidity Laplacian), not the noise n the "
                "ancestral step needs. Use sampler='ld' (the paper's) or network='egnn'",
                GeoDiffDDPMWarning,
                stacklevel=3,
            )
        for name, cls in (("epsnet", EpsNetConfig), ("denoiser", DenoiserConfig),
                          ("langevin", LangevinConfig), ("train", TrainConfig)):  # fmt: skip
            v = getattr(self, name)
            if not isinstance(v, cls):
                raise TypeError(f"{name}: expected a {cls.__name__}, got {type(v).__name__}")
        for name in ("steps", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        calibrated = self.reads_guide_sigma
        if self.guide_noise is not None:
            gn = self.guide_noise
            if not (
                isinstance(gn, tuple)
                and len(gn) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in gn)
                and all(math.isfinite(v) for v in gn)
                and 0 <= gn[0] <= gn[1]
                and gn[1] > 0
            ):
                raise ValueError(
                    f"guide_noise: expected (lo, hi) Å with 0 <= lo <= hi, hi > 0, got {gn!r}"
                )
            if not calibrated:
                raise ValueError(
                    'guide_noise: needs a guided network="geodiff" with '
                    "EpsNetConfig(guide_input='calibrated'), which is told the level"
                )
            if self.guide_augmentation:
                raise ValueError(
                    "guide_augmentation: guide_noise replaces the public augmentation; "
                    "set guide_augmentation=False"
                )
        elif calibrated:
            raise ValueError(
                "guide_noise: a guide_input='calibrated' network trains on guides with a told "
                "error level; give guide_noise=(lo, hi) in Å"
            )
        p = self.guide_clean_fraction
        if not (
            isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p)
            and 0 <= p <= 1
        ):  # fmt: skip
            raise ValueError(f"guide_clean_fraction: expected a share in [0, 1], got {p!r}")
        if p > 0 and self.guide_noise is None:
            raise ValueError(
                f"guide_clean_fraction: {p!r} needs guide_noise=(lo, hi) (a told-level "
                "'calibrated' stage 2); the clean share is of its noisy guides"
            )
        if not (
            isinstance(self.guide_sigma, (int, float))
            and not isinstance(self.guide_sigma, bool)
            and math.isfinite(self.guide_sigma)
            and self.guide_sigma >= 0
        ):
            raise ValueError(
                f"guide_sigma: expected a finite level >= 0 in Å, got {self.guide_sigma!r}"
            )

    @property
    def reads_guide_sigma(self) -> bool:
        """Whether the network is told its guide's error level (``guide_input="calibrated"``)."""
        return (
            self.network == "geodiff"
            and self.epsnet.guided
            and self.epsnet.guide_input == "calibrated"
        )

    @property
    def guided(self) -> bool:
        """Whether the chosen network takes a guide (stage >= 2)."""
        return self.epsnet.guided if self.network == "geodiff" else self.denoiser.guided


def draw_guide_sigma(
    n: int, guide_noise: tuple[float, float], clean_fraction: float, gen: torch.Generator
) -> torch.Tensor:
    """The told guide-noise levels (Å) of `n` training molecules (ours, not in the paper).

    ``sigma_g ~ U[lo, hi]`` per molecule (0.4.0); with ``clean_fraction = p > 0`` (0.4.1) a
    second draw ``u ~ U[0, 1)`` per molecule sets ``sigma_g = 0`` (an exact guide, told 0)
    where ``u < p``. Why: trained on U[0, 1] Å the told-level stage 2 saw few exact guides
    (5 % below 0.05 Å) and no longer beat single-scale with the TRUE heavy atoms (oracle
    gate 0.488 vs 0.430 Å), where the clean-trained ``scaled`` stage 2 did (0.352); a stage 2
    should reproduce an exact guide and discount a bad one. With p = 0 nothing more is drawn,
    so the random stream is 0.4.0's.
    """
    lo, hi = guide_noise
    sg = lo + (hi - lo) * torch.rand(n, generator=gen)
    if clean_fraction > 0:
        sg = torch.where(torch.rand(n, generator=gen) < clean_fraction, 0.0, sg)
    return sg


@runtime_checkable
class ConformerGenerator(Protocol):
    """What MSGEN needs of a base generator (one per stage)."""

    @property
    def guided(self) -> bool:
        """Whether it takes a guide conformer (stage >= 2)."""
        ...

    def fit(
        self,
        graphs: Sequence[MolGraph],
        guides: Sequence[np.ndarray] | None = None,
        *,
        seed: int = 0,
    ) -> Any:
        """Train on conformers `graphs` (with positions) and, if guided, their guides ``(n, 3)``."""
        ...

    def sample(
        self,
        graphs: Sequence[MolGraph],
        num_samples: int,
        guides: Sequence[np.ndarray] | None = None,
        *,
        seed: int = 0,
    ) -> list[np.ndarray]:
        """``num_samples`` conformers per graph: one ``(num_samples, n, 3)`` array each.

        guides: one ``(num_samples, n, 3)`` array per graph (guided generators only).
        """
        ...


def _check_guides(
    guides: Sequence[np.ndarray] | None,
    graphs: Sequence[MolGraph],
    guided: bool,
    lead: tuple[int, ...],
) -> list[np.ndarray] | None:
    if not guided:
        if guides is not None:
            raise ValueError("guides: this generator is not guided (stage 1); pass guides=None")
        return None
    if guides is None or len(guides) != len(graphs):
        raise ValueError(
            f"guides: a guided generator needs one guide per graph ({len(graphs)}), "
            f"got {None if guides is None else len(guides)}"
        )
    out = []
    for i, (g, graph) in enumerate(zip(guides, graphs, strict=True)):
        a = np.asarray(g, dtype=np.float64)
        want = (*lead, graph.num_atoms, 3)
        if a.shape != want or not np.all(np.isfinite(a)):
            raise ValueError(f"guides: entry {i} must be finite with shape {want}, got {a.shape}")
        out.append(a)
    return out


class DiffusionGenerator:
    """The diffusion base generator as a `ConformerGenerator` (trained through `shared_core.train.fit`)."""

    def __init__(self, config: DiffusionConfig | None = None, *, device: str = "cpu") -> None:
        self.config = config or DiffusionConfig()
        if not isinstance(self.config, DiffusionConfig):
            raise TypeError(f"config: expected a DiffusionConfig, got {type(config).__name__}")
        self.device = torch.device(device)
        self.net: torch.nn.Module = (
            DualEncoderEpsNet(self.config.epsnet)
            if self.config.network == "geodiff"
            else EGNNDenoiser(self.config.denoiser)
        ).to(self.device)
        betas = torch.from_numpy(respaced_betas(self.config.steps))
        self.betas = betas  # float64, CPU: the DDPM sampler's arithmetic
        self.abar = torch.cumprod(1.0 - betas, dim=0)
        self.abar_paper = torch.cumprod(1.0 - torch.from_numpy(sigmoid_betas()), dim=0)
        self.history: FitResult | None = None
        self.fitted = False  # set by `fit`; set it by hand after loading weights into `net`

    @property
    def guided(self) -> bool:
        return self.config.guided

    @property
    def reads_guide_sigma(self) -> bool:
        """Whether `sample` takes ``guide_sigma`` (the network is told its guide's error)."""
        return self.config.reads_guide_sigma

    def fit(
        self,
        graphs: Sequence[MolGraph],
        guides: Sequence[np.ndarray] | None = None,
        *,
        seed: int = 0,
    ) -> FitResult:
        """Train on `graphs` (conformers); `guides` ``(n, 3)`` each when guided."""
        if len(graphs) == 0:
            raise ValueError("graphs: expected at least one training conformer")
        graphs = [check_molecule(g, f"graphs[{i}]", conformer=True) for i, g in enumerate(graphs)]
        guide_list = _check_guides(guides, graphs, self.guided, ())
        templates = [pair_template(g) for g in graphs]
        x0 = [torch.from_numpy(g.positions - g.positions.mean(0)).float() for g in graphs]  # type: ignore[operator, union-attr]
        gd = None if guide_list is None else [torch.from_numpy(a).float() for a in guide_list]
        cfg = self.config
        geodiff = cfg.network == "geodiff"
        # GeoDiff draws t over the 5,000-step schedule (no time input); the EGNN over its chain
        abar = (self.abar_paper if geodiff else self.abar).float()
        abar_aug = self.abar_paper.float() if geodiff else abar
        T = abar.numel()

        def batch_fn(step: int) -> dict[str, Any]:
            gen = step_generator(seed, step)
            idx = torch.randint(len(graphs), (cfg.batch_size,), generator=gen).tolist()
            graph = pack([templates[k] for k in idx])
            half = torch.randint(T, (cfg.batch_size // 2 + 1,), generator=gen)
            t = torch.cat([half, T - 1 - half])[: cfg.batch_size]  # GeoDiff's antithetic pairs
            x = torch.cat([x0[k] for k in idx])
            eps = torch.randn(x.shape, generator=gen)
            if not geodiff:
                eps = eps - molecule_mean(eps, graph)
            out = _graph_dict(graph)
            out.update(x0=x, eps=eps, abar=abar[t], t=(t + 1).float() / T)
            if gd is not None:
                g = torch.cat([gd[k] for k in idx])
                if cfg.guide_augmentation:
                    Ta = abar_aug.numel()
                    half = torch.randint(Ta, (cfg.batch_size // 2 + 1,), generator=gen)
                    s = torch.cat([half, Ta - 1 - half])[: cfg.batch_size]
                    a_s = abar_aug[s][graph.batch][:, None]
                    g = g + torch.randn(g.shape, generator=gen) * ((1 - a_s) / a_s).sqrt()
                if cfg.guide_noise is not None:  # ours: a told level per molecule
                    sg = draw_guide_sigma(
                        cfg.batch_size, cfg.guide_noise, cfg.guide_clean_fraction, gen
                    )[graph.batch]
                    g = g + torch.randn(g.shape, generator=gen) * sg[:, None]
                    out["guide_sigma"] = sg
                out["guide"] = g
            return out

        def loss_fn(model: torch.nn.Module, b: dict[str, Any]) -> torch.Tensor:
            graph = _graph_from_dict(b)
            a = b["abar"][graph.batch][:, None]
            if geodiff:
                return geodiff_loss(
                    model, b["x0"], b["eps"], a, graph, b.get("guide"), b.get("guide_sigma"),  # type: ignore[arg-type]
                )  # fmt: skip
            x_t = a.sqrt() * b["x0"] + (1 - a).sqrt() * b["eps"]
            eps_hat = model(x_t, b["t"], graph, b.get("guide"))
            return ((eps_hat - b["eps"]) ** 2).sum(-1).mean()

        stage = "guided" if self.guided else "unguided"
        self.history = fit(
            self.net, loss_fn, batch_fn, cfg.train, desc=f"msgen {stage} {cfg.network}",
            show_progress=False, device=str(self.device),
        )  # fmt: skip
        self.fitted = True
        return self.history

    @torch.no_grad()
    def sample(
        self,
        graphs: Sequence[MolGraph],
        num_samples: int,
        guides: Sequence[np.ndarray] | None = None,
        *,
        seed: int = 0,
        guide_sigma: float | None = None,
    ) -> list[np.ndarray]:
        """`num_samples` conformers per graph with the configured sampler (guides used clean).

        guide_sigma: the error level (Å) told to a ``calibrated`` network about these guides
        (default ``config.guide_sigma``); other networks do not take it.
        Raises RuntimeError before `fit` (an untrained network samples noise), after the
        arguments are checked.
        """
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 1:
            raise ValueError(f"num_samples: expected a positive int, got {num_samples!r}")
        if len(graphs) == 0:
            raise ValueError("graphs: expected at least one molecular graph")
        graphs = [check_molecule(g, f"graphs[{i}]") for i, g in enumerate(graphs)]
        guide_list = _check_guides(guides, graphs, self.guided, (num_samples,))
        if guide_sigma is not None and not self.reads_guide_sigma:
            raise ValueError(
                "guide_sigma: only a guided network with guide_input='calibrated' is told its "
                f"guide's error level; got guide_sigma={guide_sigma!r} for this one"
            )
        level = self.config.guide_sigma if guide_sigma is None else guide_sigma
        if not (
            isinstance(level, (int, float))
            and not isinstance(level, bool)
            and math.isfinite(level)
            and level >= 0
        ):
            raise ValueError(f"guide_sigma: expected a finite level >= 0 in Å, got {level!r}")
        if not self.fitted:
            raise RuntimeError(
                "sample: this DiffusionGenerator is not trained; call fit(graphs) first "
                "(or, after loading weights into .net, set .fitted = True)"
            )
        templates: list[PairTemplate] = []
        guide_rows: list[torch.Tensor] = []
        for gi, g in enumerate(graphs):
            tpl = pair_template(g)
            for s in range(num_samples):
                templates.append(tpl)
                if guide_list is not None:
                    guide_rows.append(torch.from_numpy(guide_list[gi][s]).float())
        graph = pack(templates)
        guide = torch.cat(guide_rows).to(self.device) if guide_rows else None
        told = (
            torch.full((graph.num_atoms,), float(level), device=self.device)
            if self.reads_guide_sigma
            else None
        )
        self.net.eval()
        if self.config.network == "egnn":
            x = ancestral_sample(
                self._eps_fn(graph, guide, None),
                self.betas,
                graph,
                torch.Generator().manual_seed(seed),
            )
        else:  # the public retry: after a NaN, once more with the local field clipped
            try:
                x = self._geodiff_sample(graph, guide, seed, None, guide_sigma=told)
            except FloatingPointError:
                x = self._geodiff_sample(
                    graph, guide, seed, self.config.langevin.clip_local_retry, nan_ok=True,
                    guide_sigma=told,
                )  # fmt: skip
                bad = int(torch.isnan(x).any(-1).sum())
                if bad:
                    warnings.warn(
                        f"sample: {bad} atoms diverged (NaN) even with the local field clipped "
                        "at the retry; their conformers are returned as NaN",
                        RuntimeWarning,
                        stacklevel=2,
                    )
        out, start = [], 0
        for g in graphs:
            n = g.num_atoms
            block = x[start : start + n * num_samples].reshape(num_samples, n, 3)
            out.append(block.double().cpu().numpy())
            start += n * num_samples
        return out

    def _geodiff_sample(
        self,
        graph: GraphBatch,
        guide: torch.Tensor | None,
        seed: int,
        clip_local: float | None,
        *,
        nan_ok: bool = False,
        guide_sigma: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """One run of the configured sampler; FloatingPointError on a NaN unless `nan_ok`."""
        if self.config.sampler == "ld":
            sigmas = ((1 - self.abar_paper) / self.abar_paper).sqrt()
            g = graph_batch_to(graph, self.device)
            return langevin_sample(
                self.net, g, guide, sigmas, self.config.langevin, seed, clip_local=clip_local,  # type: ignore[arg-type]
                nan_ok=nan_ok, guide_sigma=guide_sigma,
            )  # fmt: skip
        gen = torch.Generator().manual_seed(seed)
        eps_fn = self._eps_fn(graph, guide, clip_local, guide_sigma)
        x = ancestral_sample(eps_fn, self.betas, graph, gen)
        if torch.isnan(x).any() and not nan_ok:
            raise FloatingPointError("ancestral_sample: NaN in the positions")
        return x

    def _eps_fn(
        self,
        graph: GraphBatch,
        guide: torch.Tensor | None,
        clip_local: float | None,
        guide_sigma: torch.Tensor | None = None,
    ) -> EpsFn:
        """eps_hat of the VP chain: the EGNN directly, GeoDiff's ``-F`` at ``x_t / sqrt(abar_t)``."""
        g = graph_batch_to(graph, self.device)
        if self.config.network == "egnn":
            return lambda x, t: self.net(x.to(self.device), t.to(self.device), g, guide).cpu()
        lcfg, T = self.config.langevin, self.config.steps

        def eps_fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            k = round(float(t[0]) * T) - 1
            abar = float(self.abar[k])
            sigma = ((1 - abar) / abar) ** 0.5
            pos = (x / abar**0.5).to(self.device)
            f = self.net.field(  # type: ignore[operator]
                pos, g, guide, sigma=torch.full((g.num_atoms,), sigma, device=self.device),
                guide_sigma=guide_sigma,
                use_global=sigma < lcfg.global_start_sigma,
                w_global=lcfg.w_global, clip=lcfg.clip, clip_local=clip_local,
            )  # fmt: skip
            return -f.cpu()

        return eps_fn


def geodiff_loss(
    net: DualEncoderEpsNet,
    x0: torch.Tensor,
    noise: torch.Tensor,
    abar: torch.Tensor,
    graph: GraphBatch,
    guide: torch.Tensor | None,
    guide_sigma: torch.Tensor | None = None,
) -> torch.Tensor:
    """GeoDiff's ``get_loss_diffusion`` (mean over atoms) for x0, noise ``(N, 3)``, abar ``(N, 1)``.

    guide_sigma ``(N,)``: the guide's told error level (``calibrated`` networks only).
    """
    sigma = ((1 - abar) / abar).sqrt()
    x = x0 + noise * sigma
    told = () if guide_sigma is None else (guide_sigma,)  # 0.3.2's call without a told level
    s_glob, s_loc = net(x, graph, guide, sigma[:, 0], *told)
    i, j = graph.pairs
    d = (x[i] - x[j]).norm(dim=-1)
    target = ((x0[i] - x0[j]).norm(dim=-1) - d) / sigma[i, 0]
    loc = local_mask(graph)
    glob = (d <= net.config.cutoff) & ~loc
    zero = torch.zeros_like(target)
    lg = eq_transform(s_glob, x, graph.pairs) - eq_transform(
        torch.where(glob, target, zero), x, graph.pairs
    )
    ll = eq_transform(s_loc, x, graph.pairs) - eq_transform(
        torch.where(loc, target, zero), x, graph.pairs
    )
    return (2 * (lg**2).sum(-1) + 5 * (ll**2).sum(-1)).mean()


@torch.no_grad()
def langevin_sample(
    net: DualEncoderEpsNet,
    graph: GraphBatch,
    guide: torch.Tensor | None,
    sigmas: torch.Tensor,
    cfg: LangevinConfig,
    seed: int,
    *,
    clip_local: float | None = None,
    nan_ok: bool = False,
    guide_sigma: torch.Tensor | None = None,
) -> torch.Tensor:
    """Annealed Langevin dynamics ``(N, 3)`` over `cfg.steps` of the ``(5000,)`` `sigmas`.

    guide_sigma ``(N,)``: the guide's told error level (``calibrated`` networks only).

    Raises FloatingPointError on a NaN, as the public sampler does (its caller retries),
    unless `nan_ok` (then a diverged molecule's rows stay NaN; molecules do not interact).
    """
    gen = torch.Generator().manual_seed(seed)
    T = sigmas.numel()
    stride = T / cfg.steps
    levels = np.unique(np.round(np.linspace(T - 1, 0, cfg.steps)).astype(np.int64))[::-1]
    step_lr = cfg.step_lr * min(stride, cfg.max_step_scale)
    dtype = next(net.parameters()).dtype
    dev = graph.z.device
    x = (torch.randn(graph.num_atoms, 3, generator=gen, dtype=torch.float64) * sigmas[-1]).to(dtype)
    told = {} if guide_sigma is None else {"guide_sigma": guide_sigma}  # networks of 0.3.2 too
    for k in levels.tolist():
        sigma = float(sigmas[k])
        f = net.field(
            x.to(dev), graph, guide, sigma=torch.full((graph.num_atoms,), sigma, device=dev),
            **told, use_global=sigma < cfg.global_start_sigma,
            w_global=cfg.w_global, clip=cfg.clip, clip_local=clip_local,
        ).cpu()  # fmt: skip
        a = step_lr * (sigma / 0.01) ** 2
        z = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(dtype)
        x = x + a * f / sigma + (2 * a) ** 0.5 * z
        if not nan_ok and torch.isnan(x).any():
            raise FloatingPointError("langevin_sample: NaN in the positions")
        x = x - molecule_mean(x, graph)
    return x


EpsFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``eps_fn(x_t (N, 3) float32, t (G,) fractions (t + 1) / T) -> eps_hat (N, 3)``."""


def ancestral_sample(
    eps_fn: EpsFn, betas: torch.Tensor, graph: GraphBatch, generator: torch.Generator
) -> torch.Tensor:
    """Ancestral DDPM sampling ``x_T ~ N(0, I) -> x_0`` ``(N, 3)``, centred per molecule.

    ``x_{t-1} = (x_t - beta_t / sqrt(1 - abar_t) eps_hat) / sqrt(1 - beta_t) + sqrt(beta_t) z``
    (z = 0 at the last step); the arithmetic is float64, the network sees float32.
    """
    betas = betas.double()
    abar = torch.cumprod(1.0 - betas, dim=0)
    T = betas.numel()
    x = torch.randn(graph.num_atoms, 3, generator=generator, dtype=torch.float64)
    x = x - molecule_mean(x, graph)
    for t in range(T - 1, -1, -1):
        tt = torch.full((graph.num_graphs,), (t + 1) / T)
        eps = eps_fn(x.float(), tt).double()
        beta = betas[t]
        mean = (x - beta / (1 - abar[t]).sqrt() * eps) / (1 - beta).sqrt()
        if t > 0:
            z = torch.randn(x.shape, generator=generator, dtype=torch.float64)
            mean = mean + beta.sqrt() * (z - molecule_mean(z, graph))
        x = mean - molecule_mean(mean, graph)
    return x.float()


def _graph_dict(graph: GraphBatch) -> dict[str, Any]:
    return {
        "z": graph.z, "batch": graph.batch, "pairs": graph.pairs, "bond": graph.bond,
        "hops": graph.hops, "num_graphs": torch.tensor(graph.num_graphs),
    }  # fmt: skip


def _graph_from_dict(b: dict[str, Any]) -> GraphBatch:
    return GraphBatch(b["z"], b["batch"], b["pairs"], b["bond"], b["hops"], int(b["num_graphs"]))
