"""MSGEN: coarse-to-fine conformer generation on top of any base generator.

For scales ``(s_1, ..., s_{L-1})`` (coarse to fine; the finest scale, all atoms, is implicit)
a molecule is a chain of atom sets ``A_1 ⊂ A_2 ⊂ ... ⊂ A_L = all atoms``:

- QM9 (two stages): ``scales = ("heavy",)``: heavy atoms, then all atoms;
- GEOM-Drugs (three stages): ``scales = ("scaffold", "heavy")``.

Stage 1 is an unguided generator on the induced graph of ``A_1``. Stage l >= 2 is a guided
generator on ``A_l``: its guide is stage l-1's conformer, upsampled onto ``A_l``
(`msgen.upsampling`). In training the guide is the TRUE coarser conformer upsampled (once
per molecule, as the public code does when it builds its dataset) and the stage-l generator
perturbs it (conditioning augmentation); in sampling it is the generated one, used clean.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from msgen.data import SCALES, check_molecule, coarse_atoms, subgraph
from msgen.diffusion import ConformerGenerator
from msgen.upsampling import ANCHORS, TAU, upsample, upsampling_plan
from shared_core.data import MolGraph


@dataclass(frozen=True)
class Hierarchy:
    """The atom sets of one molecule, coarse to fine (``levels[-1]`` = all atoms)."""

    graph: MolGraph
    levels: tuple[np.ndarray, ...]

    def level_graph(self, level: int) -> MolGraph:
        """The induced graph of ``levels[level]`` (positions kept when `graph` has them)."""
        return subgraph(self.graph, self.levels[level])

    def parent_in_child(self, level: int) -> np.ndarray:
        """Positions of ``levels[level - 1]``'s atoms inside ``levels[level]``'s numbering."""
        return np.searchsorted(self.levels[level], self.levels[level - 1])


def hierarchy(graph: MolGraph, scales: Sequence[str]) -> Hierarchy:
    """Decompose `graph` into nested atom sets along `scales` (coarse to fine)."""
    if not isinstance(graph, MolGraph):
        raise TypeError(f"graph: expected a shared_core MolGraph, got {type(graph).__name__}")
    levels = [coarse_atoms(graph, s) for s in scales] + [np.arange(graph.num_atoms)]
    for a, b in itertools.pairwise(levels):
        if not set(a.tolist()) <= set(b.tolist()):
            raise ValueError(f"scales: {tuple(scales)} are not nested for this molecule")
    return Hierarchy(graph, tuple(levels))


def upsample_guide(
    h: Hierarchy,
    level: int,
    parent_pos: np.ndarray,
    *,
    tau: float = TAU,
    seed: int = 0,
    anchor: str = "bonded",
) -> np.ndarray:
    """Upsample ``(k, |A_{level-1}|, 3)`` parent conformers onto ``A_level``: ``(k, |A_level|, 3)``.

    The guide of stage `level` (public ``Chemical_upsampling``, tau in Å); needs no generator.
    anchor: ``"bonded"`` or ``"centroid"`` (`msgen.upsampling.upsample`).
    """
    if not isinstance(h, Hierarchy):
        raise TypeError(
            f"h: expected a Hierarchy (msgen.hierarchy(graph, scales)), got {type(h).__name__}"
        )
    if not isinstance(level, int) or isinstance(level, bool) or not 1 <= level < len(h.levels):
        raise ValueError(f"level: expected an int in [1, {len(h.levels) - 1}], got {level!r}")
    if not (isinstance(tau, (int, float)) and np.isfinite(tau) and tau >= 0):
        raise ValueError(f"tau: expected a finite distance >= 0 in Å, got {tau!r}")
    pos = np.asarray(parent_pos, dtype=np.float64)
    want = h.levels[level - 1].size
    if pos.ndim != 3 or pos.shape[1:] != (want, 3) or not np.all(np.isfinite(pos)):
        raise ValueError(
            f"parent_pos: expected finite (k, {want}, 3) coordinates, got shape {pos.shape}"
        )
    return _upsample(h, level, pos, float(tau), seed, anchor)


def _upsample(
    h: Hierarchy, level: int, pos: np.ndarray, tau: float, seed: int, anchor: str = "bonded"
) -> np.ndarray:
    child = h.level_graph(level)
    plan = upsampling_plan(child.edge_index, h.parent_in_child(level), child.num_atoms)
    gen = torch.Generator().manual_seed(seed)
    x = torch.tensor(np.asarray(pos, dtype=np.float64))
    return upsample(plan, x, tau, gen, anchor=anchor).numpy()


class MSGEN:
    """Hierarchical multi-scale generation with one `ConformerGenerator` per stage.

    stages: ``len(scales) + 1`` generators; ``stages[0]`` unguided, the others guided.
    tau: upsampling distance in Å (public default 3.0).
    anchor: ``"bonded"`` (the upsampling algorithm) or ``"centroid"`` (the public code as it
    runs; `msgen.upsampling`).
    """

    def __init__(
        self,
        stages: Sequence[ConformerGenerator],
        scales: Sequence[str] = ("heavy",),
        tau: float = TAU,
        anchor: str = "bonded",
    ) -> None:
        scales = tuple(scales)
        if (
            len(scales) == 0
            or any(s not in SCALES for s in scales)
            or len(set(scales)) != len(scales)
        ):
            raise ValueError(
                f"scales: expected distinct entries of {SCALES}, coarse first, got {scales}"
            )
        if len(stages) != len(scales) + 1:
            raise ValueError(
                f"stages: expected len(scales) + 1 = {len(scales) + 1} generators, got {len(stages)}"
            )
        for i, st in enumerate(stages):
            if not isinstance(st, ConformerGenerator):
                raise TypeError(
                    f"stages[{i}]: expected a ConformerGenerator, got {type(st).__name__}"
                )
            if st.guided != (i > 0):
                want = "guided" if i > 0 else "unguided"
                raise ValueError(f"stages[{i}]: expected an {want} generator")
        if not (isinstance(tau, (int, float)) and np.isfinite(tau) and tau >= 0):
            raise ValueError(f"tau: expected a finite distance >= 0 in Å, got {tau!r}")
        self.stages = list(stages)
        self.scales = scales
        if anchor not in ANCHORS:
            raise ValueError(f"anchor: expected one of {ANCHORS}, got {anchor!r}")
        self.tau = float(tau)
        self.anchor = anchor

    def guide(self, h: Hierarchy, level: int, parent_pos: np.ndarray, seed: int) -> np.ndarray:
        """`upsample_guide` with this model's tau (a diverged, non-finite parent passes through)."""
        return _upsample(h, level, parent_pos, self.tau, seed, self.anchor)

    def fit(self, graphs: Sequence[MolGraph], *, seed: int = 0) -> list[Any]:
        """Train every stage on conformers `graphs` (true coarse scale -> upsampled guides)."""
        if len(graphs) == 0:
            raise ValueError("graphs: expected at least one training conformer")
        hs = [
            hierarchy(check_molecule(g, f"graphs[{i}]", conformer=True), self.scales)
            for i, g in enumerate(graphs)
        ]
        results = [self.stages[0].fit([h.level_graph(0) for h in hs], seed=seed)]
        for level in range(1, len(self.stages)):
            subs = [h.level_graph(level) for h in hs]
            guides = [
                self.guide(h, level, h.level_graph(level - 1).positions[None], seed * 7919 + i)[0]  # type: ignore[index]
                for i, h in enumerate(hs)
            ]
            results.append(self.stages[level].fit(subs, guides, seed=seed + level))
        return results

    def sample(
        self,
        graphs: Sequence[MolGraph],
        num_samples: int,
        *,
        seed: int = 0,
        coarse: Sequence[np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """`num_samples` conformers ``(num_samples, n, 3)`` per graph, coarse to fine.

        A molecule whose sampling diverged (NaN even after the sampler's retry) comes back
        as NaN.

        coarse: the oracle mode: per graph the ``(|A_1|, 3)`` coordinates of the coarsest
        scale (e.g. the true heavy atoms), which then replace stage 1.
        """
        if len(graphs) == 0:
            raise ValueError("graphs: expected at least one molecular graph")
        hs = [
            hierarchy(check_molecule(g, f"graphs[{i}]"), self.scales) for i, g in enumerate(graphs)
        ]
        if coarse is None:
            pos = self.stages[0].sample([h.level_graph(0) for h in hs], num_samples, seed=seed)
        else:
            if len(coarse) != len(graphs):
                raise ValueError(
                    f"coarse: expected one array per graph ({len(graphs)}), got {len(coarse)}"
                )
            pos = []
            for i, (c, h) in enumerate(zip(coarse, hs, strict=True)):
                a = np.asarray(c, dtype=np.float64)
                if a.shape != (h.levels[0].size, 3) or not np.all(np.isfinite(a)):
                    raise ValueError(
                        f"coarse: entry {i} must be finite with shape ({h.levels[0].size}, 3), "
                        f"got shape {a.shape}"
                    )
                pos.append(np.repeat(a[None], num_samples, axis=0))
        for level in range(1, len(self.stages)):
            guides = [
                self.guide(h, level, p, seed * 7919 + 104729 * level + i)
                for i, (h, p) in enumerate(zip(hs, pos, strict=True))
            ]
            # a molecule whose coarser stage diverged (NaN) stays NaN; the others go on
            ok = [i for i, g in enumerate(guides) if np.all(np.isfinite(g))]
            nxt = [np.full((num_samples, h.levels[level].size, 3), np.nan) for h in hs]
            if ok:
                done = self.stages[level].sample(
                    [hs[i].level_graph(level) for i in ok], num_samples,
                    [guides[i] for i in ok], seed=seed + level,
                )  # fmt: skip
                for i, arr in zip(ok, done, strict=True):
                    nxt[i] = arr
            pos = nxt
        return pos
