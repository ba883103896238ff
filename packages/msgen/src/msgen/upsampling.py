"""Molecular (chemical) upsampling: a coarse conformer -> a rough fine-scale guide.

MSGEN's bridge between scales (public code ``utils/datasets.py::Chemical_upsampling``):

1. Fine atoms bonded to a coarse atom come first; then breadth-first over fine atoms
   bonded to already-ordered atoms; then any left (not connected to the coarse part).
2. In that order each new atom i is put at
   ``x_i = mean_{j in N(i), j placed} x_j + tau * u_i``,  ``u_i`` uniform on the unit sphere;
   with no placed bonded neighbour, the anchor is the centroid of the coarse atoms.

Coarse atoms keep their coordinates bit-exactly. ``tau = 3.0`` Å is the public default
(large next to 1.0-1.5 Å bonds: the guide is deliberately rough and stage 2 refines it).

Option ``anchor="centroid"``: every new atom at the coarse centroid plus ``tau * u_i``.
This is what the public code computes as it is called: both its callers
(``ConditionalConformationDataset`` and ``test.py``) pass the index lists as torch tensors,
so its set look-ups (``j in known``, ``adj[i]``) never match (0-d tensors hash by
identity) and every new atom falls back to the centroid (checked by running the public
function on ethanol: all hydrogens exactly ``tau`` from the heavy-atom centroid). The
default ``"bonded"`` is the algorithm as written and as the paper describes it.

Here the order is computed once per graph and the placement is vectorised over `k`
conformers at a time; `msgen.reference.upsample_reference` is the public algorithm
transcribed one conformer at a time, the oracle of the tests. Unlike the public code,
ties are broken by atom index (the public code iterates Python sets), so a seed fixes
the result.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import torch

TAU = 3.0
"""Public default distance (Å) of a new atom from its anchor."""
ANCHORS = ("bonded", "centroid")


@dataclass(frozen=True)
class UpsamplingPlan:
    """Where each new atom goes, fixed by the graph alone.

    order ``(m,)``: the new atoms in placement order; anchors[k]: the atoms whose mean is
    the anchor of ``order[k]`` (bonded and placed before it), empty for a fallback atom.
    """

    num_atoms: int
    coarse: np.ndarray
    order: np.ndarray
    anchors: tuple[tuple[int, ...], ...]

    @property
    def fallback(self) -> np.ndarray:
        """``(m,)`` bool: placed at the coarse centroid (no placed bonded neighbour)."""
        return np.asarray([len(a) == 0 for a in self.anchors], dtype=bool)


def _adjacency(edge_index: np.ndarray, num_atoms: int) -> list[list[int]]:
    adj: list[set[int]] = [set() for _ in range(num_atoms)]
    for i, j in np.asarray(edge_index).T.tolist():
        adj[i].add(j)
        adj[j].add(i)
    return [sorted(a) for a in adj]


def upsampling_plan(edge_index: np.ndarray, coarse: np.ndarray, num_atoms: int) -> UpsamplingPlan:
    """The placement order and anchors of the fine atoms not in `coarse`.

    edge_index ``(2, E)`` bonds of the fine graph (either or both directions);
    coarse ``(c,)`` distinct indices of the atoms whose positions are known.
    """
    ei = np.asarray(edge_index, dtype=np.int64)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index: expected shape (2, E), got {ei.shape}")
    c = np.asarray(coarse, dtype=np.int64)
    if c.ndim != 1 or c.size == 0 or len(set(c.tolist())) != c.size:
        raise ValueError(f"coarse: expected distinct atom indices, got {c.tolist()}")
    if c.min() < 0 or c.max() >= num_atoms or (ei.size and (ei.min() < 0 or ei.max() >= num_atoms)):
        raise ValueError(f"coarse/edge_index: atom indices must lie in [0, {num_atoms})")
    adj = _adjacency(ei, num_atoms)
    in_coarse = np.zeros(num_atoms, dtype=bool)
    in_coarse[c] = True
    # 1. fine atoms bonded to the coarse part, then breadth-first from them
    first = [i for i in range(num_atoms) if not in_coarse[i] and any(in_coarse[adj[i]])]
    ordered, seen, queue = list(first), set(first), deque(first)
    while queue:
        for nb in adj[queue.popleft()]:
            if nb not in seen and not in_coarse[nb]:
                seen.add(nb)
                ordered.append(nb)
                queue.append(nb)
    ordered += [i for i in range(num_atoms) if not in_coarse[i] and i not in seen]
    placed = in_coarse.copy()
    anchors = []
    for i in ordered:
        anchors.append(tuple(j for j in adj[i] if placed[j]))
        placed[i] = True
    return UpsamplingPlan(num_atoms, c, np.asarray(ordered, dtype=np.int64), tuple(anchors))


def unit_directions(
    k: int, m: int, generator: torch.Generator | None, dtype: torch.dtype
) -> torch.Tensor:
    """``(k, m, 3)`` directions uniform on the unit sphere (normalised Gaussians)."""
    u = torch.randn(k, m, 3, generator=generator, dtype=torch.float64)
    return (u / u.norm(dim=-1, keepdim=True)).to(dtype)


def upsample(
    plan: UpsamplingPlan,
    coarse_pos: torch.Tensor,
    tau: float = TAU,
    generator: torch.Generator | None = None,
    directions: torch.Tensor | None = None,
    anchor: str = "bonded",
) -> torch.Tensor:
    """Fine positions ``(k, n, 3)`` from coarse positions ``(k, c, 3)`` (rows of `plan.coarse`).

    `directions` ``(k, m, 3)`` unit vectors override the random ones drawn from `generator`
    (one row per new atom, in `plan.order`). `anchor`: ``"bonded"`` (the algorithm) or
    ``"centroid"`` (the public code as it runs; see the module docstring).
    """
    if anchor not in ANCHORS:
        raise ValueError(f"anchor: expected one of {ANCHORS}, got {anchor!r}")
    if not isinstance(coarse_pos, torch.Tensor) or coarse_pos.ndim != 3:
        raise ValueError(
            f"coarse_pos: expected a (k, c, 3) tensor, got {getattr(coarse_pos, 'shape', type(coarse_pos))}"
        )
    k, c, _ = coarse_pos.shape
    if c != plan.coarse.size or coarse_pos.shape[2] != 3:
        raise ValueError(
            f"coarse_pos: expected shape (k, {plan.coarse.size}, 3) to match the plan's coarse "
            f"atoms, got {tuple(coarse_pos.shape)}"
        )
    if not (isinstance(tau, (int, float)) and np.isfinite(tau) and tau >= 0):
        raise ValueError(f"tau: expected a finite distance >= 0 in Å, got {tau!r}")
    m = plan.order.size
    if directions is None:
        directions = unit_directions(k, m, generator, coarse_pos.dtype)
    elif directions.shape != (k, m, 3):
        raise ValueError(f"directions: expected shape ({k}, {m}, 3), got {tuple(directions.shape)}")
    fine = coarse_pos.new_zeros(k, plan.num_atoms, 3)
    fine[:, torch.as_tensor(plan.coarse)] = coarse_pos
    centroid = coarse_pos.mean(dim=1)  # (k, 3)
    for r, (i, nbrs) in enumerate(zip(plan.order.tolist(), plan.anchors, strict=True)):
        bonded = nbrs and anchor == "bonded"
        base = fine[:, list(nbrs)].mean(dim=1) if bonded else centroid
        fine[:, i] = base + tau * directions[:, r].to(coarse_pos.dtype)
    return fine
