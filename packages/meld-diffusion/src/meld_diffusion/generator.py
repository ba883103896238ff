"""`MELDGenerator`: one trained arm with its vocabulary and atom-count distribution, saved and
loaded as a `shared_core.hub` checkpoint folder (``save_pretrained`` / ``from_pretrained``).

What the verbs train and sample. Its config (`GeneratorConfig`) holds everything a sample
needs besides the weights: the arm ("meld", the paper's method and the default; "vanilla"
masked diffusion with the power law; "class", the class-level GenMD4 schedule), the atom types
read from the training file (element and formal charge, e.g. ``("C", "N", "O", "N+", "O-")``),
``max_atoms`` N, the denoiser and schedule-network sizes, the number of sampling steps and the
training set's atom-count distribution (``count_probs[n]``: the share of training molecules
with n heavy atoms), from which `MELDGenerator.sample` draws each graph's size, as the paper
does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn

from meld_diffusion.data import ATOM_TYPES, check_atom_types, decode
from meld_diffusion.meld import GraphMDM, class_sample, meld_sample, vanilla_sample
from meld_diffusion.model import GraphTransformer, GraphTransformerConfig
from meld_diffusion.rates import ClassRates, ElementRates, MELDConfig
from meld_diffusion.schedule import ElementwiseSchedule
from shared_core.hub import Pretrained

GENERATOR_ARMS = ("meld", "vanilla", "class")


@dataclass(frozen=True)
class GeneratorConfig:
    """A trained generator's settings (module docstring); `denoiser.max_atoms` is N."""

    arm: str = "meld"
    atom_types: tuple[str, ...] = ATOM_TYPES
    denoiser: GraphTransformerConfig = field(
        default_factory=lambda: GraphTransformerConfig(d_pos=MELDConfig().dim)
    )
    meld: MELDConfig = field(default_factory=MELDConfig)
    sample_steps: int = 50
    count_probs: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.arm not in GENERATOR_ARMS:
            raise ValueError(f"arm: expected one of {GENERATOR_ARMS}, got {self.arm!r}")
        types = check_atom_types(self.atom_types)
        if self.denoiser.atom_types != len(types):
            raise ValueError(
                f"denoiser.atom_types: expected {len(types)} (the atom types {types}), got "
                f"{self.denoiser.atom_types}"
            )
        n = self.denoiser.max_atoms
        d_pos = self.meld.dim if self.arm == "meld" else 0
        if self.denoiser.d_pos != d_pos:
            raise ValueError(
                f"denoiser.d_pos: expected {d_pos} (arm {self.arm!r}"
                f"{', meld.dim' if d_pos else ' takes no embeddings'}), got {self.denoiser.d_pos}"
            )
        if self.arm == "meld" and self.meld.n_columns < n:
            raise ValueError(
                f"meld.n_columns: expected >= max_atoms={n}, got {self.meld.n_columns}"
            )
        steps = self.sample_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"sample_steps: expected a positive int, got {steps!r}")
        if self.count_probs:
            p = np.asarray(self.count_probs, dtype=float)
            if p.shape != (n + 1,) or (p < 0).any() or p[0] != 0 or not np.isclose(p.sum(), 1):
                raise ValueError(
                    f"count_probs: expected {n + 1} probabilities (atom counts 0..{n}) summing "
                    f"to 1 with none for 0 atoms, got {self.count_probs}"
                )

    @property
    def max_atoms(self) -> int:
        return self.denoiser.max_atoms


def generator_config(
    arm: str,
    atom_types: Sequence[str],
    counts: np.ndarray,
    *,
    max_atoms: int,
    denoiser: GraphTransformerConfig,
    meld: MELDConfig,
    sample_steps: int,
) -> GeneratorConfig:
    """The config of a generator for molecules of `atom_types` with atom counts `counts` (n,)."""
    probs = np.bincount(np.asarray(counts), minlength=max_atoms + 1) / len(counts)
    return GeneratorConfig(
        arm=arm,
        atom_types=tuple(atom_types),
        denoiser=replace(
            denoiser,
            max_atoms=max_atoms,
            atom_types=len(atom_types),
            d_pos=meld.dim if arm == "meld" else 0,
        ),
        meld=replace(meld, n_columns=max(meld.n_columns, max_atoms)),
        sample_steps=sample_steps,
        count_probs=tuple(float(p) for p in probs),
    )


class MELDGenerator(nn.Module, Pretrained):
    """``GraphMDM`` of one arm (``.mdm``) built from a `GeneratorConfig` (the one argument)."""

    def __init__(self, config: GeneratorConfig) -> None:
        super().__init__()
        self.config = config
        denoiser = GraphTransformer(config.denoiser)
        rates: ElementRates | ClassRates | None = None
        if config.arm == "meld":
            rates = ElementRates(config.meld)
        elif config.arm == "class":
            rates = ClassRates(vocab=config.denoiser.vocab_size)
        self.mdm = GraphMDM(denoiser, rates)

    def schedule(self) -> ElementwiseSchedule:
        """The element-wise log-linear schedule of every arm: ``config.meld.schedule()`` (the
        one source of eps, the paper's 1e-4 by default)."""
        return self.config.meld.schedule()

    def sample_counts(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """Atom counts (n,) drawn from the training distribution ``config.count_probs``."""
        if not self.config.count_probs:
            raise ValueError("config.count_probs: empty; train the generator on molecules first")
        probs = torch.as_tensor(self.config.count_probs, dtype=torch.float64)
        return torch.multinomial(probs, n, replacement=True, generator=generator)

    @torch.no_grad()
    def sample_rows(
        self, n: int, *, seed: int = 0, batch: int = 250
    ) -> tuple[np.ndarray, np.ndarray]:
        """`n` graphs as rows (n, L) and atom counts (n,), from the arm's exact sampler, seeded."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n: expected a positive int, got {n!r}")
        self.eval()
        device = next(self.parameters()).device
        g = torch.Generator().manual_seed(seed)
        counts = self.sample_counts(n, g)
        gd = torch.Generator(device=device).manual_seed(seed + 1)
        schedule, N, steps = self.schedule(), self.config.max_atoms, self.config.sample_steps
        out = []
        for start in range(0, n, batch):
            c = counts[start : start + batch].to(device)
            kw = {"max_atoms": N, "steps": steps, "generator": gd}
            if self.config.arm == "meld":
                x = meld_sample(self.mdm, c, schedule=schedule, **kw)  # type: ignore[arg-type]
            elif self.config.arm == "class":
                x = class_sample(self.mdm, c, schedule=schedule, **kw)  # type: ignore[arg-type]
            else:
                x = vanilla_sample(self.mdm, c, schedule=schedule.base, **kw)  # type: ignore[arg-type]
            out.append(x.cpu().numpy())
        return np.concatenate(out), counts.numpy()

    def sample_smiles(self, n: int, *, seed: int = 0) -> list[str | None]:
        """`n` canonical SMILES (None where the graph is not a valid molecule: no correction)."""
        from shared_core import mol_metrics as mm

        rows, counts = self.sample_rows(n, seed=seed)
        return mm.canonical_smiles(
            decode(rows, counts, self.config.max_atoms, self.config.atom_types)
        )
