"""GeoDiff's dual-encoder eps-network with MSGEN's guide on every edge (the default base network).

Public code: ``models/epsnet/dualenc.py`` of Taserita/MSGEN-Full (a GeoDiff fork):
``DualEncoderEpsNetwork`` (stage 1) and ``ConditionalDualEncoderEpsNetwork`` (stages >= 2),
with ``models/encoder/{edge,schnet,gin}.py`` and ``models/common.py``; sizes from
``configs/qm9_2.yml`` (hidden 128, 6 SchNet interactions, 4 GIN layers, cutoff 10 Å,
``edge_order`` 3, MLP edge encoder, ReLU, ``smooth_conv: false``).

Edges (``GraphBatch.pairs``, every ordered pair of a molecule): an edge is LOCAL when its
atoms are at most 3 bonds apart (GeoDiff's bond graph extended to order 3); its type is the
bond type for bonds, 5 / 6 for 2 / 3 bonds apart (GeoDiff's ``len(BOND_TYPES) + order - 1``
with our 4 bond types) and 0 otherwise (radius edges). The global encoder runs on every
edge within the cutoff (``radius_graph`` U local edges: a hard cutoff that zeroes a
filter is the same as leaving the edge out), the local encoder on local edges only.

For an edge e = (i, j) with length d_e and (guided) guide length g_e = ||g_i - g_j||:

    a_e   = MLP_d(d_e) * Emb(type_e)                       (``MLPEdgeEncoder``, width H)
    a_e  <- [a_e, MLP'_d(g_e) * Emb'(type_e)]              (guided: ``edge_condition_*``, 2H)
    h     = SchNet(z, a) over global edges,  h' = GIN(z, a) over local edges
    s_e   = MLP_glob([h_i * h_j, a_e]),  s'_e = MLP_loc([h'_i * h'_j, a'_e])  (scalar per edge)

and the per-edge distance scores become a position field by ``eq_transform``:

    F_i = sum_{e=(i,j)} s_e (x_i - x_j) / d_e  -  sum_{e=(j,i)} s_e (x_j - x_i) / d_e .

The network has no time input (GeoDiff's diffusion model reads the noise level from the
distances; ``sigma_edge = 1``). Two options of ours (off by default, for the oracle-guide
ablations): ``time_input`` adds ``MLP_t(log sigma)`` to every edge's features ``a_e`` (the
public code's commented-out ``edge_attr += temb_edge`` in ``dualenc.py``), and
``guide_edges="heavy"`` keeps the guide features only on edges between two heavy atoms (the
coarse atoms of the heavy -> all-atoms stage), zero elsewhere; ``guide_input="difference"``
feeds the guide encoders ``g_e - d_e`` instead of ``g_e`` (the same information, but "move
this edge towards its guide length" becomes a function of one input); ``guide_input="scaled"``
feeds ``(g_e - d_e) / sigma`` (the exact score of a heavy-heavy edge with a clean guide).

``guide_input="calibrated"`` (ours, 0.4.0) is for guides with ERRORS of a known size: a
guide drawn as the true coarse conformer plus isotropic noise of level ``sigma_g`` per atom
(`DiffusionConfig.guide_noise` in training; at sampling ``sigma_g`` is told, e.g. stage 1's
measured error, `msgen.multiscale.MSGEN.calibrate`). With positions ``x = x_0 + sigma n``
and guide ``g = x_0 + sigma_g n_g``, an edge's best estimate of its clean length from the
guide alone is ``(sigma_g^2 d_e + sigma^2 g_e) / (sigma^2 + sigma_g^2)``, so its score
``(d_0 - d) / sigma`` is estimated by

    u_e = sigma (g_e - d_e) / (sigma^2 + sigma_g^2),   r_e = sigma_g / sqrt(sigma^2 + sigma_g^2),

and the guide encoders read both (``MLP([u_e, r_e]) * Emb(type_e)``): ``u_e`` is the
guide's vote (``scaled``'s input when ``sigma_g = 0``), ``r_e`` in [0, 1] how little it is
to be trusted against the network's own knowledge. This replaces the public conditioning
augmentation (``get_loss_diffusion`` in ``models/epsnet/dualenc.py``: a level drawn over
all 5,000 steps and not told to the network), which leaves the guide unread
(`msgen.experiments.overfit`). Everything the network reads is a distance, a type, an
element or a noise level, so F rotates, reflects and permutes with the atoms and ignores
translations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from msgen.data import ELEMENTS
from msgen.model import GraphBatch

EDGE_TYPES = 7  # 0 radius, 1-4 bond types, 5 / 6 = two / three bonds apart
LOCAL_HOPS = 3  # GeoDiff's ``edge_order``: local edges join atoms at most 3 bonds apart
GUIDE_EDGES = ("all", "heavy")
GUIDE_INPUTS = ("length", "difference", "scaled", "calibrated")
HYDROGEN = ELEMENTS.index(1)


@dataclass(frozen=True)
class EpsNetConfig:
    """Sizes of the dual encoder (defaults: the public ``configs/qm9_2.yml``)."""

    hidden: int = 128  # ``hidden_dim``
    num_convs: int = 6  # SchNet interactions (global encoder)
    num_convs_local: int = 4  # GIN layers (local encoder)
    cutoff: float = 10.0  # Å, global edges
    guided: bool = False  # stage >= 2: ``ConditionalDualEncoderEpsNetwork``
    guide_edges: str = "all"  # "all" (public: every edge) or "heavy" (ours: heavy-heavy only)
    time_input: bool = False  # ours: log sigma through an MLP added to the edge features
    guide_input: str = "length"  # "length" (public: g_e); ours: "difference" (g_e - d_e)
    # or "scaled" ((g_e - d_e) / sigma: the exact heavy-heavy score itself, needs sigma)
    # or "calibrated" (u_e, r_e of the guide's told error sigma_g: needs sigma and sigma_g)

    def __post_init__(self) -> None:
        if self.guide_edges not in GUIDE_EDGES:
            raise ValueError(
                f"guide_edges: expected one of {GUIDE_EDGES}, got {self.guide_edges!r}"
            )
        if self.guide_input not in GUIDE_INPUTS:
            raise ValueError(
                f"guide_input: expected one of {GUIDE_INPUTS}, got {self.guide_input!r}"
            )
        if not isinstance(self.time_input, bool):
            raise TypeError(f"time_input: expected a bool, got {type(self.time_input).__name__}")
        for name in ("hidden", "num_convs", "num_convs_local"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if self.hidden < 2:
            raise ValueError(
                f"hidden: expected at least 2 (the heads use hidden // 2), got {self.hidden}"
            )
        if not (isinstance(self.cutoff, (int, float)) and self.cutoff > 0):
            raise ValueError(f"cutoff: expected a positive distance in Å, got {self.cutoff!r}")


def mlp(dims: list[int]) -> nn.Sequential:
    """GeoDiff's ``MultiLayerPerceptron``: Linear layers with ReLU between, none after the last."""
    layers: list[nn.Module] = []
    for k in range(len(dims) - 1):
        layers.append(nn.Linear(dims[k], dims[k + 1]))
        if k < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def edge_types(graph: GraphBatch) -> torch.Tensor:
    """``(P,)`` GeoDiff edge type of every pair (see the module docstring)."""
    t = torch.zeros_like(graph.bond)
    t = torch.where(graph.hops == 0, graph.bond, t)
    t = torch.where(graph.hops == 1, torch.full_like(t, 5), t)
    return torch.where(graph.hops == 2, torch.full_like(t, 6), t)


def local_mask(graph: GraphBatch) -> torch.Tensor:
    """``(P,)`` True for pairs at most `LOCAL_HOPS` bonds apart."""
    return graph.hops < LOCAL_HOPS


def eq_transform(score: torch.Tensor, x: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """GeoDiff's ``eq_transform``: ``(E,)`` edge scores -> ``(N, 3)`` field on positions x."""
    i, j = pairs
    diff = x[i] - x[j]
    dd_dr = diff / diff.norm(dim=-1, keepdim=True) * score[:, None]
    return torch.zeros_like(x).index_add_(0, i, dd_dr).index_add_(0, j, -dd_dr)


class ShiftedSoftplus(nn.Module):
    """``softplus(x) - log 2`` (SchNet)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x) - math.log(2.0)


class EdgeEncoder(nn.Module):
    """GeoDiff's ``MLPEdgeEncoder``: ``MLP(d) * Emb(type)``, ``(E,)`` -> ``(E, H)``.

    inputs: features per edge (1: a length, GeoDiff; 2: ``calibrated``'s ``(u_e, r_e)``,
    given as ``(E, 2)``).
    """

    def __init__(self, hidden: int, inputs: int = 1) -> None:
        super().__init__()
        self.bond_emb = nn.Embedding(EDGE_TYPES, hidden)
        self.mlp = mlp([inputs, hidden, hidden])

    def forward(self, length: torch.Tensor, etype: torch.Tensor) -> torch.Tensor:
        feats = length[:, None] if length.dim() == 1 else length
        return self.mlp(feats) * self.bond_emb(etype)


class Interaction(nn.Module):
    """SchNet's ``InteractionBlock`` with GeoDiff's ``CFConv`` (filter from edge features)."""

    def __init__(self, hidden: int, edge_channels: int) -> None:
        super().__init__()
        self.filter = nn.Sequential(
            nn.Linear(edge_channels, hidden), ShiftedSoftplus(), nn.Linear(hidden, hidden)
        )
        self.lin1 = nn.Linear(hidden, hidden, bias=False)
        self.lin2 = nn.Linear(hidden, hidden)
        self.act = ShiftedSoftplus()
        self.lin = nn.Linear(hidden, hidden)
        nn.init.xavier_uniform_(self.lin1.weight)
        nn.init.xavier_uniform_(self.lin2.weight)
        nn.init.zeros_(self.lin2.bias)

    def forward(
        self, h: torch.Tensor, pairs: torch.Tensor, keep: torch.Tensor, attr: torch.Tensor
    ) -> torch.Tensor:
        """``h (N, H)``; keep ``(E,)`` the hard cutoff C; returns the update ``(N, H)``."""
        i, j = pairs
        w = self.filter(attr) * keep[:, None].to(attr.dtype)
        v = self.lin1(h)
        agg = torch.zeros_like(v).index_add_(0, i, v[j] * w)
        return self.lin(self.act(self.lin2(agg)))


class GINLayer(nn.Module):
    """GeoDiff's ``GINEConv`` (eps = 0): ``MLP(h_i + sum_j relu(h_j + e_ij))``."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.nn = mlp([hidden, hidden, hidden])

    def forward(self, h: torch.Tensor, pairs: torch.Tensor, attr: torch.Tensor) -> torch.Tensor:
        i, j = pairs
        agg = torch.zeros_like(h).index_add_(0, i, F.relu(h[j] + attr))
        return self.nn(agg + h)


class DualEncoderEpsNet(nn.Module):
    """Per-edge distance scores ``(x, graph[, guide]) -> (s_global, s_local)``, each ``(P,)``.

    ``s_global`` is zero on local edges and beyond the cutoff; ``s_local`` is zero off the
    local edges. `field` turns them into ``(N, 3)`` position fields.
    """

    def __init__(self, config: EpsNetConfig) -> None:
        super().__init__()
        if not isinstance(config, EpsNetConfig):
            raise TypeError(f"config: expected an EpsNetConfig, got {type(config).__name__}")
        self.config = config
        h = config.hidden
        width = 2 * h if config.guided else h
        self.edge_encoder_global = EdgeEncoder(h)
        self.edge_encoder_local = EdgeEncoder(h)
        k = 2 if config.guide_input == "calibrated" else 1
        self.edge_condition_global = EdgeEncoder(h, k) if config.guided else None
        self.edge_condition_local = EdgeEncoder(h, k) if config.guided else None
        # SchNetEncoder
        self.embedding_global = nn.Embedding(len(ELEMENTS), h, max_norm=10.0)
        self.interactions = nn.ModuleList(Interaction(h, width) for _ in range(config.num_convs))
        # (Conditional)GINEncoder; the conditional one first maps the 2H edge features to H
        self.embedding_local = nn.Embedding(len(ELEMENTS), h)
        self.edge_transform = mlp([2 * h, h, h]) if config.guided else None
        self.convs = nn.ModuleList(GINLayer(h) for _ in range(config.num_convs_local))
        head = [3 * h, 2 * h, h, h // 2, 1] if config.guided else [2 * h, h, h // 2, 1]
        self.grad_global_dist_mlp = mlp(head)
        self.grad_local_dist_mlp = mlp(head)
        self.time_mlp = mlp([1, h, h]) if config.time_input else None

    def edge_attr(
        self,
        d: torch.Tensor,
        etype: torch.Tensor,
        dg: torch.Tensor | None,
        local: bool,
        temb: torch.Tensor | None = None,
        gmask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``(E, H)`` or, guided, ``(E, 2H)`` edge features of lengths d and guide lengths dg.

        temb ``(E, H)``: time features added to the length features (``time_input``);
        gmask ``(E,)``: edges that keep their guide features (``guide_edges="heavy"``).
        """
        enc = self.edge_encoder_local if local else self.edge_encoder_global
        cond = self.edge_condition_local if local else self.edge_condition_global
        a = enc(d, etype)
        if temb is not None:
            a = a + temb
        if cond is None:
            return a
        assert dg is not None
        ag = cond(dg, etype)
        if gmask is not None:
            ag = ag * gmask[:, None].to(ag.dtype)
        return torch.cat([a, ag], dim=-1)

    def forward(
        self,
        x: torch.Tensor,
        graph: GraphBatch,
        guide: torch.Tensor | None = None,
        sigma: torch.Tensor | None = None,
        guide_sigma: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Edge scores for positions x ``(N, 3)`` (Å); guide ``(N, 3)`` for guided networks.

        sigma ``(N,)``: each atom's noise level, read with ``time_input`` and the
        ``scaled`` / ``calibrated`` guide inputs; guide_sigma ``(N,)``: the told error level
        of each atom's guide (Å), read (and required) only by ``calibrated``.
        """
        n = graph.num_atoms
        if x.shape != (n, 3):
            raise ValueError(f"x: expected shape ({n}, 3) for {n} atoms, got {tuple(x.shape)}")
        if self.config.guided:
            if guide is None:
                raise ValueError("guide: this network is guided (stage >= 2); pass guide positions")
            if guide.shape != (n, 3):
                raise ValueError(f"guide: expected shape ({n}, 3), got {tuple(guide.shape)}")
        elif guide is not None:
            raise ValueError("guide: this network is not guided (stage 1); pass guide=None")
        i, j = graph.pairs
        d = (x[i] - x[j]).norm(dim=-1)
        dg = None if guide is None else (guide[i] - guide[j]).norm(dim=-1)
        return self.edge_scores(d, dg, graph, sigma, guide_sigma)

    def edge_scores(
        self,
        d: torch.Tensor,
        dg: torch.Tensor | None,
        graph: GraphBatch,
        sigma: torch.Tensor | None = None,
        guide_sigma: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`forward` from the edge lengths d ``(P,)`` and guide lengths dg ``(P,)`` on.

        Everything the network reads of the positions is in d and dg, so derivatives of the
        scores with respect to single edge lengths (the guide probe of
        `msgen.experiments.overfit`) can be taken here.
        """
        n = graph.num_atoms
        pairs = graph.pairs
        i, j = pairs
        if (dg is None) == self.config.guided:
            raise ValueError("dg: expected guide lengths exactly when the network is guided")
        if dg is not None and self.config.guide_input == "difference":
            dg = dg - d
        if dg is not None and self.config.guide_input == "scaled":
            if sigma is None or sigma.shape != (n,):
                raise ValueError(
                    f"sigma: a guide_input='scaled' network needs the noise level of each atom, "
                    f"shape ({n},), got {None if sigma is None else tuple(sigma.shape)}"
                )
            dg = (dg - d) / sigma.to(d.dtype)[i]
        calibrated = self.config.guided and self.config.guide_input == "calibrated"
        if guide_sigma is not None and not calibrated:
            raise ValueError(
                "guide_sigma: only a guided guide_input='calibrated' network reads the guide's "
                f"error level; this one has guided={self.config.guided}, "
                f"guide_input={self.config.guide_input!r}"
            )
        if dg is not None and calibrated:
            for name, v in (("sigma", sigma), ("guide_sigma", guide_sigma)):
                if v is None or v.shape != (n,):
                    raise ValueError(
                        f"{name}: a guide_input='calibrated' network needs it per atom, shape "
                        f"({n},), got {None if v is None else tuple(v.shape)}"
                    )
            assert sigma is not None and guide_sigma is not None
            s, sg = sigma.to(d.dtype)[i], guide_sigma.to(d.dtype)[i]
            var = s**2 + sg**2
            dg = torch.stack([s * (dg - d) / var, sg / var.sqrt()], dim=-1)
        etype = edge_types(graph)
        loc = local_mask(graph)
        z = graph.z
        temb = None
        if self.time_mlp is not None:
            if sigma is None or sigma.shape != (n,):
                raise ValueError(
                    f"sigma: a time_input network needs the noise level of each atom, shape "
                    f"({n},), got {None if sigma is None else tuple(sigma.shape)}"
                )
            temb = self.time_mlp(sigma.to(d.dtype).log()[i, None])
        gmask = None
        if self.config.guided and self.config.guide_edges == "heavy":
            gmask = (z[i] != HYDROGEN) & (z[j] != HYDROGEN)

        # global: SchNet over every edge within the cutoff
        a = self.edge_attr(d, etype, dg, local=False, temb=temb, gmask=gmask)
        keep = d <= self.config.cutoff
        h = self.embedding_global(z).to(d.dtype)
        for block in self.interactions:
            h = h + block(h, pairs, keep, a)
        s_glob = self.grad_global_dist_mlp(torch.cat([h[i] * h[j], a], dim=-1))[:, 0]
        s_glob = torch.where(keep & ~loc, s_glob, torch.zeros_like(s_glob))

        # local: GIN over the order-3 bond graph
        lp = pairs[:, loc]
        al = self.edge_attr(
            d[loc], etype[loc], None if dg is None else dg[loc], local=True,
            temb=None if temb is None else temb[loc], gmask=None if gmask is None else gmask[loc],
        )  # fmt: skip
        e = al if self.edge_transform is None else self.edge_transform(al)
        hl = self.embedding_local(z).to(d.dtype)
        for k, conv in enumerate(self.convs):
            out = conv(hl, lp, e)
            if k < len(self.convs) - 1:
                out = F.relu(out)
            hl = out + hl
        s_loc_l = self.grad_local_dist_mlp(torch.cat([hl[lp[0]] * hl[lp[1]], al], dim=-1))[:, 0]
        s_loc = torch.zeros_like(d).masked_scatter(loc, s_loc_l)
        return s_glob, s_loc

    def field(
        self,
        x: torch.Tensor,
        graph: GraphBatch,
        guide: torch.Tensor | None = None,
        *,
        sigma: torch.Tensor | None = None,
        guide_sigma: torch.Tensor | None = None,
        use_global: bool = True,
        w_global: float = 1.0,
        clip: float | None = None,
        clip_local: float | None = None,
    ) -> torch.Tensor:
        """``(N, 3)`` = eq(s_local) [clipped] + w_global eq(s_global) [clipped] (public sampler)."""
        s_glob, s_loc = self(x, graph, guide, sigma, guide_sigma)
        out = eq_transform(s_loc, x, graph.pairs)
        if clip_local is not None:
            out = clip_norm(out, clip_local)
        if use_global:
            g = eq_transform(s_glob, x, graph.pairs)
            if clip is not None:
                g = clip_norm(g, clip)
            out = out + w_global * g
        return out


def clip_norm(v: torch.Tensor, limit: float) -> torch.Tensor:
    """Rows of `v` ``(N, 3)`` with norm above `limit` scaled down to it (public ``clip_norm``)."""
    norm = v.norm(dim=-1, keepdim=True)
    return v * torch.where(norm > limit, limit / norm, torch.ones_like(norm))
