"""The base generator: a DDPM on Cartesian coordinates with the EGNN eps-network.

Forward process (Ho et al. 2020, variance preserving, zero centre of mass as in
Hoogeboom et al. 2022): ``x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps``, eps ~ N(0, I)
projected to zero mean per molecule. Loss: ``|| eps_hat(x_t, t[, guide]) - eps ||^2``
averaged over atoms. Sampling: ancestral DDPM, ``x_{t-1} = (x_t - beta_t / sqrt(1 - abar_t)
eps_hat) / sqrt(alpha_t) + sqrt(beta_t) z`` (GeoDiff's ``ddpm_noisy`` variance), re-centred
after every step.

Noise schedule: GeoDiff's / MSGEN's ``sigmoid`` betas from 1e-7 to 2e-3 over 5,000 steps,
RESPACED to `steps` (Nichol & Dhariwal 2021): the respaced chain visits the same
``abar`` values at every 5000/steps-th step, so a short chain spans the same noise range.

MSGEN's conditioning augmentation (public ``get_loss_diffusion``): in training the guide is
perturbed as ``g + n * sqrt((1 - abar_s) / abar_s)`` at a level s drawn uniformly over the
schedule (up to ~12 Å); in sampling the guide is used clean.

`ConformerGenerator` is the protocol a base model meets to plug into `msgen.MSGEN`:
fit on (graph, coordinates[, guide]) and sample given graphs [and guides].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from msgen.data import check_conformer
from msgen.model import (
    DenoiserConfig,
    EGNNDenoiser,
    GraphBatch,
    PairTemplate,
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


@dataclass(frozen=True)
class DiffusionConfig:
    """A base generator: its network, chain length, training budget (defaults: tiny)."""

    denoiser: DenoiserConfig = field(default_factory=DenoiserConfig)
    steps: int = 100  # diffusion steps (respaced from GeoDiff's 5,000)
    batch_size: int = 32  # molecules per training step
    guide_augmentation: bool = True  # perturb the guide in training (MSGEN); clean in sampling
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            steps=1000, lr=1e-3, warmup=50, weight_decay=0.0, betas=(0.95, 0.999), grad_clip=10.0
        )
    )  # GeoDiff: Adam betas (0.95, 0.999), no weight decay; lr raised for the short budget

    def __post_init__(self) -> None:
        if not isinstance(self.denoiser, DenoiserConfig):
            raise TypeError(
                f"denoiser: expected a DenoiserConfig, got {type(self.denoiser).__name__}"
            )
        if not isinstance(self.train, TrainConfig):
            raise TypeError(f"train: expected a TrainConfig, got {type(self.train).__name__}")
        for name in ("steps", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")


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
    """The EGNN DDPM as a `ConformerGenerator` (trained through `shared_core.train.fit`)."""

    def __init__(self, config: DiffusionConfig | None = None, *, device: str = "cpu") -> None:
        self.config = config or DiffusionConfig()
        if not isinstance(self.config, DiffusionConfig):
            raise TypeError(f"config: expected a DiffusionConfig, got {type(config).__name__}")
        self.device = torch.device(device)
        self.net = EGNNDenoiser(self.config.denoiser).to(self.device)
        betas = torch.from_numpy(respaced_betas(self.config.steps))
        self.betas = betas  # float64, CPU: the sampler's arithmetic
        self.abar = torch.cumprod(1.0 - betas, dim=0)
        self.history: FitResult | None = None

    @property
    def guided(self) -> bool:
        return self.config.denoiser.guided

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
        graphs = [check_conformer(g, f"graphs[{i}]") for i, g in enumerate(graphs)]
        guide_list = _check_guides(guides, graphs, self.guided, ())
        templates = [pair_template(g) for g in graphs]
        x0 = [torch.from_numpy(g.positions - g.positions.mean(0)).float() for g in graphs]  # type: ignore[operator, union-attr]
        gd = None if guide_list is None else [torch.from_numpy(a).float() for a in guide_list]
        cfg = self.config
        abar = self.abar.float()
        T = cfg.steps

        def batch_fn(step: int) -> dict[str, Any]:
            gen = step_generator(seed, step)
            idx = torch.randint(len(graphs), (cfg.batch_size,), generator=gen).tolist()
            graph = pack([templates[k] for k in idx])
            half = torch.randint(T, (cfg.batch_size // 2 + 1,), generator=gen)
            t = torch.cat([half, T - 1 - half])[: cfg.batch_size]  # GeoDiff's antithetic pairs
            x = torch.cat([x0[k] for k in idx])
            eps = torch.randn(x.shape, generator=gen)
            eps = eps - molecule_mean(eps, graph)
            a = abar[t][graph.batch][:, None]
            out = _graph_dict(graph)
            out.update(x_t=a.sqrt() * x + (1 - a).sqrt() * eps, eps=eps, t=(t + 1).float() / T)
            if gd is not None:
                g = torch.cat([gd[k] for k in idx])
                if cfg.guide_augmentation:
                    s = torch.randint(T, (cfg.batch_size,), generator=gen)
                    a_s = abar[s][graph.batch][:, None]
                    g = g + torch.randn(g.shape, generator=gen) * ((1 - a_s) / a_s).sqrt()
                out["guide"] = g
            return out

        def loss_fn(model: torch.nn.Module, b: dict[str, Any]) -> torch.Tensor:
            eps_hat = model(b["x_t"], b["t"], _graph_from_dict(b), b.get("guide"))
            return ((eps_hat - b["eps"]) ** 2).sum(-1).mean()

        stage = "guided" if self.guided else "unguided"
        self.history = fit(
            self.net, loss_fn, batch_fn, cfg.train, desc=f"msgen {stage} denoiser",
            show_progress=False, device=str(self.device),
        )  # fmt: skip
        return self.history

    @torch.no_grad()
    def sample(
        self,
        graphs: Sequence[MolGraph],
        num_samples: int,
        guides: Sequence[np.ndarray] | None = None,
        *,
        seed: int = 0,
    ) -> list[np.ndarray]:
        """`num_samples` conformers per graph by ancestral sampling (guides used clean)."""
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 1:
            raise ValueError(f"num_samples: expected a positive int, got {num_samples!r}")
        if len(graphs) == 0:
            raise ValueError("graphs: expected at least one molecular graph")
        for i, g in enumerate(graphs):
            if not isinstance(g, MolGraph):
                raise TypeError(f"graphs[{i}]: expected a MolGraph, got {type(g).__name__}")
        guide_list = _check_guides(guides, graphs, self.guided, (num_samples,))
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
        x = self._ancestral(graph, guide, torch.Generator().manual_seed(seed))
        out, start = [], 0
        for g in graphs:
            n = g.num_atoms
            block = x[start : start + n * num_samples].reshape(num_samples, n, 3)
            out.append(block.double().cpu().numpy())
            start += n * num_samples
        return out

    def _ancestral(
        self, graph: GraphBatch, guide: torch.Tensor | None, gen: torch.Generator
    ) -> torch.Tensor:
        from msgen.model import graph_batch_to

        self.net.eval()
        g = graph_batch_to(graph, self.device)

        def eps_fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return self.net(x.to(self.device), t.to(self.device), g, guide).cpu()

        return ancestral_sample(eps_fn, self.betas, graph, gen)


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
