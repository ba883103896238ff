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

Ours (0.4.0): a stage whose network is told its guide's error level
(``DiffusionGenerator.reads_guide_sigma``, ``guide_input="calibrated"``) gets, in
`MSGEN.sample`, the level that `MSGEN.calibrate` measured for the stage before it on
held-out conformers (0 for the oracle's exact coarse atoms).
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
        # told guide error per stage (`calibrate`); None: the stage's own default
        self.guide_sigma: list[float | None] = [None] * len(self.stages)

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

    def calibrate(
        self, graphs: Sequence[MolGraph], *, seed: int = 0, num_samples: int = 1
    ) -> list[dict[str, Any]]:
        """Measure each stage's error on held-out conformers `graphs`; set `guide_sigma`.

        Runs the pipeline as `sample` does; after stage l (l < L) it compares the generated
        level-l conformers with the true ones pair by pair (`guide_error`) and sets
        ``guide_sigma[l + 1] = sqrt(mean e^2 / 2)``: the per-atom noise level whose
        per-edge length error has that RMS (an isotropic error of sigma per coordinate on
        both atoms gives a length error of variance ``2 sigma^2``). Returns one dict per
        measured stage (`guide_error`'s keys and ``"sigma_g"``). Ours, not in the paper.
        """
        if len(graphs) == 0:
            raise ValueError("graphs: expected at least one held-out conformer")
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 1:
            raise ValueError(f"num_samples: expected a positive int, got {num_samples!r}")
        hs = [
            hierarchy(check_molecule(g, f"graphs[{i}]", conformer=True), self.scales)
            for i, g in enumerate(graphs)
        ]
        out: list[dict[str, Any]] = []

        def measure(level: int, pos: list[np.ndarray]) -> None:
            stats = guide_error([h.level_graph(level) for h in hs], pos)
            stats["sigma_g"] = float(stats["edge_rms"] / np.sqrt(2.0))
            self.guide_sigma[level + 1] = stats["sigma_g"]
            out.append(stats)

        self._run(hs, num_samples, seed, None, measure, stop=len(self.stages) - 1)
        return out

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
        return self._run(hs, num_samples, seed, coarse, None, stop=len(self.stages))

    def _run(
        self,
        hs: list[Hierarchy],
        num_samples: int,
        seed: int,
        coarse: Sequence[np.ndarray] | None,
        measure: Any,
        *,
        stop: int,
    ) -> list[np.ndarray]:
        """Stages ``0 .. stop - 1``; ``measure(level, positions)`` after each but the last."""
        if coarse is None:
            pos = self.stages[0].sample([h.level_graph(0) for h in hs], num_samples, seed=seed)
        else:
            if len(coarse) != len(hs):
                raise ValueError(
                    f"coarse: expected one array per graph ({len(hs)}), got {len(coarse)}"
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
        for level in range(1, stop):
            if measure is not None:
                measure(level - 1, pos)
            guides = [
                self.guide(h, level, p, seed * 7919 + 104729 * level + i)
                for i, (h, p) in enumerate(zip(hs, pos, strict=True))
            ]
            stage = self.stages[level]
            told: dict[str, float] = {}
            if getattr(stage, "reads_guide_sigma", False):
                exact = level == 1 and coarse is not None  # the oracle's true coarse atoms
                level_sigma = 0.0 if exact else self.guide_sigma[level]
                if level_sigma is not None:
                    told["guide_sigma"] = level_sigma
            # a molecule whose coarser stage diverged (NaN) stays NaN; the others go on
            ok = [i for i, g in enumerate(guides) if np.all(np.isfinite(g))]
            nxt = [np.full((num_samples, h.levels[level].size, 3), np.nan) for h in hs]
            if ok:
                done = stage.sample(
                    [hs[i].level_graph(level) for i in ok], num_samples,
                    [guides[i] for i in ok], seed=seed + level, **told,
                )  # fmt: skip
                for i, arr in zip(ok, done, strict=True):
                    nxt[i] = arr
            pos = nxt
        if measure is not None and stop < len(self.stages):
            measure(stop - 1, pos)
        return pos


def guide_error(graphs: Sequence[MolGraph], generated: Sequence[np.ndarray]) -> dict[str, Any]:
    """Pair-length errors of generated conformers against the true ones (ours).

    graphs: molecules with their true positions ``(n, 3)``; generated: ``(k, n, 3)`` per
    molecule (non-finite ones are skipped). ``e = |x_a - x_b| - |x0_a - x0_b|`` over every
    unordered pair of atoms and every sample. Returns ``edge_rms`` (RMS of e over all pairs),
    ``edge_rms_by_bonds`` (by topological distance: "1", "2", "3", ">3" bonds apart),
    ``molecule_rms_quantiles`` (10 / 50 / 90 % of the per-molecule RMS), ``molecules``
    (finite ones used).
    """
    from msgen.model import pair_template

    if len(graphs) != len(generated):
        raise ValueError(
            f"generated: expected one array per graph ({len(graphs)}), got {len(generated)}"
        )
    sq: list[np.ndarray] = []
    cls: list[np.ndarray] = []
    per_mol = []
    for gi, (g, a) in enumerate(zip(graphs, generated, strict=True)):
        if g.positions is None:
            raise ValueError(f"graphs: entry {gi} has no positions (the true conformer)")
        arr = np.asarray(a, dtype=np.float64)
        if arr.ndim != 3 or arr.shape[1:] != (g.num_atoms, 3):
            raise ValueError(
                f"generated: entry {gi} expected shape (k, {g.num_atoms}, 3), got {arr.shape}"
            )
        if not np.all(np.isfinite(arr)) or g.num_atoms < 2:
            continue
        tpl = pair_template(g)
        i, j = tpl.pairs
        keep = i < j
        i, j, hops = i[keep], j[keep], tpl.hops[keep]
        d0 = np.linalg.norm(g.positions[i] - g.positions[j], axis=-1)
        d = np.linalg.norm(arr[:, i] - arr[:, j], axis=-1)  # (k, pairs)
        e2 = (d - d0) ** 2
        sq.append(e2.ravel())
        cls.append(np.broadcast_to(hops, e2.shape).ravel())
        per_mol.append(float(np.sqrt(e2.mean())))
    if not sq:
        raise ValueError("generated: no finite conformer with at least two atoms to measure")
    e2a, ca = np.concatenate(sq), np.concatenate(cls)
    by = {}
    for name, m in (("1", ca == 0), ("2", ca == 1), ("3", ca == 2), (">3", ca >= 3)):
        if m.any():
            by[name] = float(np.sqrt(e2a[m].mean()))
    return {
        "edge_rms": float(np.sqrt(e2a.mean())),
        "edge_rms_by_bonds": by,
        "molecule_rms_quantiles": [float(q) for q in np.quantile(per_mol, [0.1, 0.5, 0.9])],
        "molecules": len(per_mol),
    }
