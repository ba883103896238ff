"""The two distribution metrics of the paper's tables that no installable package provides.

NSPDK MMD (lower is better; the GDSS / GruM / MELD protocol). The neighbourhood subgraph
pairwise distance kernel (Costa & De Grave, ICML 2010) of molecular graphs (atoms labelled by
element, bonds by Kekulé order): for every radius ``r = 0..R`` and distance ``d = 0..D`` the
feature ``(r, d, {H(N_r(u)), H(N_r(v))})`` counts the pairs of atoms u, v at shortest-path
distance d whose radius-r rooted neighbourhood subgraphs have the (unordered) pair of
canonical labels. Each (r, d) block is scaled to unit Euclidean norm and then the whole vector
(EDeN's ``inner_normalization`` and ``normalization``); the kernel is the dot product and

    MMD^2 = mean_{x, x'} k(x, x') + mean_{y, y'} k(y, y') - 2 mean_{x, y} k(x, y)
          = || mean_x phi(x) - mean_y phi(y) ||^2

(the biased estimate, diagonal included, as GDSS's ``compute_nspdk_mmd``). ``R = D = 4`` is
GDSS's ``vectorize(complexity=4)``. The rooted subgraph's label here is exact up to
Weisfeiler-Lehman refinement (labels start as (element, distance to the root), r rounds over
the bonds inside the neighbourhood), not EDeN's hashed approximation, so values are comparable
in scale with the papers' but not digit for digit (README, differences).

Scaffold similarity (higher is better; MOSES's "Scaf", as GruM and MELD report it): the
cosine similarity of the count vectors of Bemis-Murcko scaffolds (RDKit
``MurckoScaffold.GetScaffoldForMol``) of the generated and reference molecules; scaffolds with
fewer than ``min_rings = 2`` rings are dropped (MOSES ``compute_scaffold``); NaN when either
side has no scaffold left.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Sequence

Features = dict[tuple[int, int], Counter[tuple[int, int]]]
"""One graph's NSPDK features: block ``(r, d)`` -> counts of label pairs."""


def _mol(smiles: str) -> object:
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"smiles: {smiles!r} is not a valid molecule")
    Chem.Kekulize(mol, clearAromaticFlags=True)
    return mol


def _graph(smiles: str) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """Element labels and adjacency lists ``[(neighbour, bond order), ...]`` of a molecule."""
    mol = _mol(smiles)
    labels = [a.GetSymbol() for a in mol.GetAtoms()]  # type: ignore[attr-defined]
    adj: list[list[tuple[int, int]]] = [[] for _ in labels]
    for b in mol.GetBonds():  # type: ignore[attr-defined]
        i, j, o = b.GetBeginAtomIdx(), b.GetEndAtomIdx(), int(b.GetBondTypeAsDouble())
        adj[i].append((j, o))
        adj[j].append((i, o))
    return labels, adj


def _distances(adj: list[list[tuple[int, int]]], root: int) -> dict[int, int]:
    dist, todo = {root: 0}, deque([root])
    while todo:
        u = todo.popleft()
        for v, _ in adj[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                todo.append(v)
    return dist


class _Interner:
    """Gives every distinct nested label a small int (shared by all graphs of one comparison)."""

    def __init__(self) -> None:
        self.ids: dict[object, int] = {}

    def __call__(self, key: object) -> int:
        return self.ids.setdefault(key, len(self.ids))


def _rooted_label(
    labels: list[str],
    adj: list[list[tuple[int, int]]],
    dist: dict[int, int],
    r: int,
    intern: _Interner,
) -> int:
    """Canonical label (up to WL refinement) of the radius-r neighbourhood rooted at dist's root."""
    inside = [u for u, d in dist.items() if d <= r]
    lab = {u: intern(("atom", labels[u], dist[u])) for u in inside}
    for _ in range(r):
        lab = {
            u: intern(
                (lab[u], tuple(sorted((o, lab[v]) for v, o in adj[u] if dist.get(v, r + 1) <= r)))
            )
            for u in inside
        }
    return intern(("root", r, tuple(sorted(lab.values()))))


def nspdk_features(smiles: str, intern: _Interner, r_max: int = 4, d_max: int = 4) -> Features:
    """The normalised NSPDK feature blocks of one molecule (module docstring)."""
    labels, adj = _graph(smiles)
    n = len(labels)
    dists = [_distances(adj, u) for u in range(n)]
    roots = [
        [_rooted_label(labels, adj, dists[u], r, intern) for r in range(r_max + 1)]
        for u in range(n)
    ]
    out: Features = {}
    for u in range(n):
        for v, d in dists[u].items():
            if v < u or d > d_max:
                continue
            for r in range(r_max + 1):
                a, b = roots[u][r], roots[v][r]
                out.setdefault((r, d), Counter())[(min(a, b), max(a, b))] += 1
    total = 0.0
    for block in out.values():  # unit norm per (r, d) block, then overall
        norm = math.sqrt(sum(c * c for c in block.values()))
        for k in block:
            block[k] /= norm  # type: ignore[assignment]
        total += 1.0
    scale = 1.0 / math.sqrt(total) if total else 0.0
    for block in out.values():
        for k in block:
            block[k] *= scale  # type: ignore[assignment]
    return out


def _mean_features(feats: Sequence[Features]) -> dict[tuple[int, int, int, int], float]:
    mean: dict[tuple[int, int, int, int], float] = {}
    for f in feats:
        for (r, d), block in f.items():
            for (a, b), v in block.items():
                key = (r, d, a, b)
                mean[key] = mean.get(key, 0.0) + float(v) / len(feats)
    return mean


def nspdk_mmd(
    generated: Sequence[str], reference: Sequence[str], r_max: int = 4, d_max: int = 4
) -> float:
    """NSPDK MMD^2 between two sets of valid SMILES (module docstring); NaN if one is empty."""
    if len(generated) == 0 or len(reference) == 0:
        return float("nan")
    intern = _Interner()
    mx = _mean_features([nspdk_features(s, intern, r_max, d_max) for s in generated])
    my = _mean_features([nspdk_features(s, intern, r_max, d_max) for s in reference])
    keys = set(mx) | set(my)
    return float(sum((mx.get(k, 0.0) - my.get(k, 0.0)) ** 2 for k in keys))


def murcko_scaffold(smiles: str, min_rings: int = 2) -> str | None:
    """The Bemis-Murcko scaffold SMILES, or None below `min_rings` rings (MOSES)."""
    from rdkit import Chem
    from rdkit.Chem.Scaffolds import MurckoScaffold

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"smiles: {smiles!r} is not a valid molecule")
    scaffold = MurckoScaffold.GetScaffoldForMol(mol)
    out = Chem.MolToSmiles(scaffold)
    if out == "" or scaffold.GetRingInfo().NumRings() < min_rings:
        return None
    return out


def scaffold_similarity(
    generated: Sequence[str], reference: Sequence[str], min_rings: int = 2
) -> float:
    """Cosine similarity of the scaffold count vectors (MOSES "Scaf"); NaN without scaffolds."""
    a = Counter(s for s in (murcko_scaffold(x, min_rings) for x in generated) if s is not None)
    b = Counter(s for s in (murcko_scaffold(x, min_rings) for x in reference) if s is not None)
    if not a or not b:
        return float("nan")
    dot = sum(a[k] * b[k] for k in a.keys() & b.keys())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb)
