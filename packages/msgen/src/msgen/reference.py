"""Slow, exact, readable oracles for the tests.

- `upsample_reference`: the public ``Chemical_upsampling`` (MSGEN-Full ``utils/datasets.py``)
  transcribed one conformer at a time with Python sets and a deque; the random unit
  directions are passed in so that it can be compared with `msgen.upsampling.upsample`.
- `denoiser_reference`: the EGNN eps-network of `msgen.model` written as loops over atoms
  and pairs, with the SAME weights, in float64.
- `epsnet_reference`: GeoDiff's dual-encoder edge scores (`msgen.epsnet`) as loops over
  atoms and edges with the SAME weights in float64, topological distances by breadth-first
  search, and `eq_transform_reference` (GeoDiff's ``eq_transform``) edge by edge.
- `ExactEdgeScore`: GeoDiff's per-edge training target for known clean positions, served
  through the network's ``field`` interface: the score a perfectly trained network would
  give, to test the samplers without training (`msgen.experiments.oracle --exact-score`).
- `best_rmsd_bruteforce`: heavy-atom RMSD minimised over every symmetry-equivalent atom map
  (graph automorphisms) with the Kabsch superposition; the oracle of RDKit's ``GetBestRMS``.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from typing import Any

import numpy as np
import torch

from msgen.epsnet import DualEncoderEpsNet, EpsNetConfig, eq_transform, local_mask
from msgen.model import EGNNDenoiser, GraphBatch, rbf, time_features
from shared_core.data import MolGraph


def upsample_reference(
    edge_index: np.ndarray,
    coarse: list[int],
    coarse_pos: np.ndarray,
    num_atoms: int,
    tau: float,
    directions: np.ndarray,
) -> np.ndarray:
    """Fine positions ``(num_atoms, 3)``; `directions` ``(m, 3)`` unit rows, one per new atom in order."""
    adj: dict[int, set[int]] = defaultdict(set)
    for i, j in np.asarray(edge_index).T.tolist():
        adj[i].add(j)
        adj[j].add(i)
    fine = np.zeros((num_atoms, 3))
    fine[coarse] = coarse_pos
    known = set(coarse)
    connected = sorted(
        i for i in range(num_atoms) if i not in coarse and any(j in coarse for j in adj[i])
    )
    queue, visited, ordered = deque(connected), set(connected), list(connected)
    while queue:
        curr = queue.popleft()
        for nb in sorted(adj[curr]):
            if nb not in visited and nb not in coarse:
                queue.append(nb)
                visited.add(nb)
                ordered.append(nb)
    ordered += [i for i in range(num_atoms) if i not in ordered and i not in coarse]
    for r, i in enumerate(ordered):
        placed = [j for j in sorted(adj[i]) if j in known]
        anchor = fine[placed].mean(axis=0) if placed else np.asarray(coarse_pos).mean(axis=0)
        fine[i] = anchor + tau * directions[r]
        known.add(i)
    return fine


def _apply(mlp: torch.nn.Module, v: torch.Tensor) -> torch.Tensor:
    return mlp(v[None])[0]


@torch.no_grad()
def denoiser_reference(
    net: EGNNDenoiser,
    x: torch.Tensor,
    t: torch.Tensor,
    graph: GraphBatch,
    guide: torch.Tensor | None = None,
) -> torch.Tensor:
    """eps_hat ``(N, 3)`` by explicit loops over atoms and pairs (float64, same weights)."""
    net = net.double()
    x = x.double()
    cfg = net.config
    n = graph.num_atoms
    pair_list = graph.pairs.T.tolist()
    e: dict[tuple[int, int], torch.Tensor] = {}
    for p, (i, j) in enumerate(pair_list):
        d = torch.linalg.vector_norm(x[i] - x[j])
        temb = time_features(t[graph.batch[i]].double().reshape(1))[0]
        feat = torch.cat([rbf(d.reshape(1), cfg.rbf, cfg.rbf_max)[0], temb])
        v = _apply(net.dist_encoder, feat) + net.bond_embed.weight[graph.bond[p]]
        v = v + net.hop_embed.weight[graph.hops[p]]
        if net.guide_encoder is not None:
            assert guide is not None
            dg = torch.linalg.vector_norm(guide[i].double() - guide[j].double())
            v = v + _apply(net.guide_encoder, rbf(dg.reshape(1), cfg.rbf, cfg.rbf_max)[0])
        e[(i, j)] = v
    h = [net.embed.weight[graph.z[a]] for a in range(n)]
    m: dict[tuple[int, int], torch.Tensor] = {}
    for edge_mlp, node_mlp in zip(net.edge_layers, net.node_layers, strict=True):
        m = {(i, j): _apply(edge_mlp, torch.cat([h[i], h[j], e[(i, j)]])) for i, j in pair_list}
        agg = [torch.zeros(cfg.hidden, dtype=torch.float64) for _ in range(n)]
        for (i, _j), mij in m.items():
            agg[i] = agg[i] + mij
        h = [h[a] + _apply(node_mlp, torch.cat([h[a], agg[a]])) for a in range(n)]
    eps = torch.zeros(n, 3, dtype=torch.float64)
    for i, j in pair_list:
        diff = x[i] - x[j]
        eps[i] += (
            diff * _apply(net.coord_head, m[(i, j)])[0] / (torch.linalg.vector_norm(diff) + 1.0)
        )
    for g in range(graph.num_graphs):
        atoms = [a for a in range(n) if int(graph.batch[a]) == g]
        eps[atoms] -= eps[atoms].mean(dim=0)
    return eps


def _bond_hops(graph: GraphBatch) -> dict[tuple[int, int], int]:
    """Topological distance of every pair joined by a path (breadth-first search over bonds)."""
    adj: dict[int, list[int]] = defaultdict(list)
    for p, (i, j) in enumerate(graph.pairs.T.tolist()):
        if int(graph.bond[p]) > 0:
            adj[i].append(j)
    hops: dict[tuple[int, int], int] = {}
    for src in range(graph.num_atoms):
        dist = {src: 0}
        queue = deque([src])
        while queue:
            a = queue.popleft()
            for b in adj[a]:
                if b not in dist:
                    dist[b] = dist[a] + 1
                    queue.append(b)
        for dst, k in dist.items():
            hops[(src, dst)] = k
    return hops


@torch.no_grad()
def epsnet_reference(
    net: DualEncoderEpsNet, x: torch.Tensor, graph: GraphBatch, guide: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(s_global, s_local)`` ``(P,)`` edge by edge and atom by atom (float64, same weights)."""
    net = net.double()
    x = x.double()
    cfg = net.config
    n = graph.num_atoms
    pairs = [tuple(p) for p in graph.pairs.T.tolist()]
    hops = _bond_hops(graph)
    bond = {pr: int(graph.bond[p]) for p, pr in enumerate(pairs)}

    def etype(pr: tuple[int, int]) -> int:
        k = hops.get(pr, 99)
        return bond[pr] if k == 1 else {2: 5, 3: 6}.get(k, 0)

    def encode(enc: Any, d: torch.Tensor, t: int) -> torch.Tensor:
        w1, w2 = enc.mlp[0], enc.mlp[2]
        hid = torch.relu(w1.weight[:, 0] * d + w1.bias)
        return (w2.weight @ hid + w2.bias) * enc.bond_emb.weight[t]

    def attr(pr: tuple[int, int], local: bool) -> torch.Tensor:
        i, j = pr
        enc = net.edge_encoder_local if local else net.edge_encoder_global
        a = encode(enc, torch.linalg.vector_norm(x[i] - x[j]), etype(pr))
        cond = net.edge_condition_local if local else net.edge_condition_global
        if cond is not None:
            assert guide is not None
            dg = torch.linalg.vector_norm(guide[i].double() - guide[j].double())
            a = torch.cat([a, encode(cond, dg, etype(pr))])
        return a

    def renorm(row: torch.Tensor, max_norm: float | None) -> torch.Tensor:
        norm = float(torch.linalg.vector_norm(row))
        return row * (max_norm / (norm + 1e-7)) if max_norm and norm > max_norm else row

    ssp = lambda v: torch.nn.functional.softplus(v) - math.log(2.0)  # noqa: E731
    # global: SchNet over the edges within the cutoff
    glob = [
        pr for pr in pairs if float(torch.linalg.vector_norm(x[pr[0]] - x[pr[1]])) <= cfg.cutoff
    ]
    a_g = {pr: attr(pr, False) for pr in pairs}
    emb = net.embedding_global
    h = [renorm(emb.weight[int(graph.z[a])], emb.max_norm) for a in range(n)]
    blk: Any
    for blk in net.interactions:
        v = [blk.lin1.weight @ h[a] for a in range(n)]
        agg = [torch.zeros(cfg.hidden, dtype=torch.float64) for _ in range(n)]
        for i, j in glob:
            agg[i] = agg[i] + v[j] * _apply(blk.filter, a_g[(i, j)])
        h = [h[a] + _apply(blk.lin, ssp(_apply(blk.lin2, agg[a]))) for a in range(n)]
    s_glob = torch.zeros(len(pairs), dtype=torch.float64)
    for p, (i, j) in enumerate(pairs):
        if (i, j) in set(glob) and hops.get((i, j), 99) > 3:
            s_glob[p] = _apply(net.grad_global_dist_mlp, torch.cat([h[i] * h[j], a_g[(i, j)]]))[0]
    # local: GIN over the bond graph extended to order 3
    local = [pr for pr in pairs if hops.get(pr, 99) <= 3]
    a_l = {pr: attr(pr, True) for pr in local}
    e = {
        pr: a if net.edge_transform is None else _apply(net.edge_transform, a)
        for pr, a in a_l.items()
    }
    hl = [net.embedding_local.weight[int(graph.z[a])] for a in range(n)]
    conv: Any
    for k, conv in enumerate(net.convs):
        agg = [hl[a].clone() for a in range(n)]
        for i, j in local:
            agg[i] = agg[i] + torch.relu(hl[j] + e[(i, j)])
        out = [_apply(conv.nn, agg[a]) for a in range(n)]
        if k < len(net.convs) - 1:
            out = [torch.relu(o) for o in out]
        hl = [o + hh for o, hh in zip(out, hl, strict=True)]
    s_loc = torch.zeros(len(pairs), dtype=torch.float64)
    for p, (i, j) in enumerate(pairs):
        if (i, j) in a_l:
            s_loc[p] = _apply(net.grad_local_dist_mlp, torch.cat([hl[i] * hl[j], a_l[(i, j)]]))[0]
    return s_glob, s_loc


def eq_transform_reference(
    score: torch.Tensor, x: torch.Tensor, pairs: torch.Tensor
) -> torch.Tensor:
    """GeoDiff's ``eq_transform`` edge by edge: ``(N, 3)``."""
    out = torch.zeros(x.shape, dtype=torch.float64)
    for p, (i, j) in enumerate(pairs.T.tolist()):
        u = (x[i] - x[j]).double() / torch.linalg.vector_norm((x[i] - x[j]).double())
        out[i] += u * score[p]
        out[j] -= u * score[p]
    return out


class ExactEdgeScore(torch.nn.Module):
    """``field(x, ...)`` from the exact edge score ``(d_0 - d) / sigma`` of clean positions x0.

    Local edges always, global edges (non-local, within the 10 Å cutoff) when
    ``use_global``, both through ``eq_transform``, as `DualEncoderEpsNet.field` does with
    learned scores.
    """

    def __init__(self, x0: torch.Tensor, cutoff: float = 10.0) -> None:
        super().__init__()
        self.config = EpsNetConfig(hidden=2, cutoff=cutoff)
        self.x0 = x0
        self.dummy = torch.nn.Parameter(torch.zeros(1))  # the samplers read the dtype

    def field(
        self,
        x: torch.Tensor,
        graph: GraphBatch,
        guide: torch.Tensor | None = None,
        *,
        sigma: torch.Tensor | None = None,
        use_global: bool = True,
        w_global: float = 1.0,
        **_: Any,
    ) -> torch.Tensor:
        assert sigma is not None
        i, j = graph.pairs
        d = (x[i] - x[j]).norm(dim=-1)
        t = ((self.x0[i] - self.x0[j]).norm(dim=-1) - d) / sigma[i]
        loc = local_mask(graph)
        zero = torch.zeros_like(t)
        out = eq_transform(torch.where(loc, t, zero), x, graph.pairs)
        if use_global:
            glob = torch.where(~loc & (d <= self.config.cutoff), t, zero)
            out = out + w_global * eq_transform(glob, x, graph.pairs)
        return out


def kabsch_rmsd(p: np.ndarray, q: np.ndarray) -> float:
    """RMSD of `p` ``(n, 3)`` onto `q` after the optimal rotation and translation (no reflection)."""
    p0, q0 = p - p.mean(0), q - q.mean(0)
    u, _, vt = np.linalg.svd(p0.T @ q0)
    sign = np.sign(np.linalg.det(u @ vt))
    rot = u @ np.diag([1.0, 1.0, sign]) @ vt
    return float(np.sqrt(np.mean(np.sum((p0 @ rot - q0) ** 2, axis=1))))


def best_rmsd_bruteforce(graph: MolGraph, reference: np.ndarray, generated: np.ndarray) -> float:
    """min over automorphisms pi of the heavy-atom Kabsch RMSD of ``generated[pi]`` onto `reference`."""
    from msgen.data import heavy_atoms, heavy_mol

    mol, heavy = heavy_mol(graph), heavy_atoms(graph)
    ref = np.asarray(reference)[heavy]
    gen = np.asarray(generated)[heavy]
    maps = mol.GetSubstructMatches(mol, uniquify=False, useChirality=False, maxMatches=100_000)
    return min(kabsch_rmsd(gen[list(pi)], ref) for pi in maps)
