"""The graph transformer (DiGress-style edge features): the denoiser p_theta of every arm.

Input: flat graph rows (`meld_diffusion.data`) as tokens ``(batch, L)`` (ids ``0..4``, 4 = mask)
or as a soft one-hot ``(batch, L, 5)`` (how MELD passes straight-through masks so the
schedule network gets gradients), atom counts ``(batch,)``, times ``(batch,)`` and, for MELD,
the element embeddings ``pos (batch, N, D)`` (H's columns of the atoms): they are added to the
atom features through a linear map, and ``h_i + h_j`` to the bond features through another, so
the denoiser models ``p(g | pi)`` and knows every element's schedule.
Inside, nodes ``h (batch, N, d_node)`` and symmetric edges ``e (batch, N, N, d_edge)``; a
layer (Vignac et al. 2023, DiGress, Sec. 4 / App. B.1, simplified):

    Y_ij = (Q_i * K_j) / sqrt(d_head) * (1 + E1(e_ij)) + E2(e_ij)       (per feature)
    e_ij <- e_ij + MLP(Y_ij)                                              (edge update)
    h_i  <- h_i + O(sum_j softmax_j(sum_head Y_ij) V_j) + MLP(h_i)        (node update)

Without `pos` the network is permutation-equivariant: permuting the atoms permutes its atom and
bond outputs (with `pos`, permuting atoms and embeddings together does). Padding atoms are
masked out of the attention. The output heads are zero-initialised: an untrained denoiser
predicts uniform distributions. The paper's denoiser is a DiT-style graph transformer; this
one conditions on t additively (no adaLN), see the README's differences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from masked_diffusion import timestep_embedding
from torch import nn

from meld_diffusion.data import BOND_TYPES, check_max_atoms, pair_index, seq_len, vocab_size


@dataclass(frozen=True)
class GraphTransformerConfig:
    """Sizes of `GraphTransformer`; the defaults are the tiny-scale denoiser.

    d_pos: width D of the element embeddings it is given (`pos`); 0 takes none.
    atom_types: K, the number of atom types (QM9: 4); rows hold ``vocab_size = max(K, 4)``
        tokens and the logits of values an element cannot take (atom tokens >= K, bond
        tokens >= 4) are ``NEG``.
    """

    max_atoms: int = 9  # N: QM9 has at most 9 heavy atoms
    d_node: int = 64
    d_edge: int = 32
    n_layers: int = 3
    n_heads: int = 4
    d_pos: int = 0
    atom_types: int = 4

    @property
    def vocab_size(self) -> int:
        """Clean tokens of a row, ``max(atom_types, 4)``; the mask id equals it."""
        return vocab_size(self.atom_types)

    def __post_init__(self) -> None:
        check_max_atoms(self.max_atoms)
        vocab_size(self.atom_types)
        if isinstance(self.d_pos, bool) or not isinstance(self.d_pos, int) or self.d_pos < 0:
            raise ValueError(f"d_pos: expected an int >= 0, got {self.d_pos!r}")
        for name in ("d_node", "d_edge", "n_layers", "n_heads"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if self.d_node % self.n_heads:
            raise ValueError(f"n_heads: must divide d_node={self.d_node}, got {self.n_heads}")


NEG = -1e4  # the logit of a value an element cannot take (softmax probability exactly 0)


class GraphLayer(nn.Module):
    """One node/edge update (see the module docstring)."""

    def __init__(self, cfg: GraphTransformerConfig) -> None:
        super().__init__()
        dn, de = cfg.d_node, cfg.d_edge
        self.n_heads = cfg.n_heads
        self.norm_h = nn.LayerNorm(dn)
        self.norm_e = nn.LayerNorm(de)
        self.qkv = nn.Linear(dn, 3 * dn)
        self.e_film = nn.Linear(de, 2 * dn)
        self.e_out = nn.Sequential(nn.Linear(dn, de), nn.SiLU(), nn.Linear(de, de))
        self.h_out = nn.Linear(dn, dn)
        self.h_mlp = nn.Sequential(
            nn.LayerNorm(dn), nn.Linear(dn, 2 * dn), nn.SiLU(), nn.Linear(2 * dn, dn)
        )

    def forward(
        self, h: torch.Tensor, e: torch.Tensor, node_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, d = h.shape
        q, k, v = self.qkv(self.norm_h(h)).chunk(3, dim=-1)
        mul, add = self.e_film(self.norm_e(e)).chunk(2, dim=-1)
        dh = d // self.n_heads
        y = q[:, :, None, :] * k[:, None, :, :] / math.sqrt(dh)  # (b, n, n, d)
        y = y * (1.0 + mul) + add
        e = e + self.e_out(y)
        scores = y.view(b, n, n, self.n_heads, dh).sum(-1)  # (b, n, n, heads)
        scores = scores.masked_fill(~node_mask[:, None, :, None], -math.inf)
        attn = torch.softmax(scores, dim=2)
        out = torch.einsum("bijh,bjhd->bihd", attn, v.view(b, n, self.n_heads, dh))
        h = h + self.h_out(out.reshape(b, n, d))
        h = h + self.h_mlp(h)
        return h, e


class GraphTransformer(nn.Module):
    """``f(x, n_atoms, t, pos=None) -> (batch, L, V)``: logits per atom and per bond
    (``V = cfg.vocab_size``)."""

    def __init__(self, cfg: GraphTransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        n, dn, de = cfg.max_atoms, cfg.d_node, cfg.d_edge
        V = cfg.vocab_size
        self.atom_embed = nn.Linear(V + 1, dn, bias=False)
        self.bond_embed = nn.Linear(V + 1, de, bias=False)
        self.self_edge = nn.Parameter(torch.zeros(de))
        self.time_mlp = nn.Sequential(nn.Linear(dn, dn), nn.SiLU(), nn.Linear(dn, dn + de))
        self.layers = nn.ModuleList(GraphLayer(cfg) for _ in range(cfg.n_layers))
        self.atom_head = nn.Sequential(nn.LayerNorm(dn), nn.Linear(dn, V))
        self.bond_head = nn.Sequential(nn.LayerNorm(de), nn.Linear(de, V))
        for head in (self.atom_head, self.bond_head):
            last = head[1]
            assert isinstance(last, nn.Linear)
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)
        # created last, so the other weights are the same draws with and without embeddings
        self.pos_node = nn.Linear(cfg.d_pos, dn, bias=False) if cfg.d_pos else None
        self.pos_edge = nn.Linear(cfg.d_pos, de, bias=False) if cfg.d_pos else None
        i, j = (torch.as_tensor(a) for a in pair_index(n))
        self.pair_i: torch.Tensor
        self.pair_j: torch.Tensor
        self.register_buffer("pair_i", i, persistent=False)
        self.register_buffer("pair_j", j, persistent=False)

    def forward(
        self,
        x: torch.Tensor,
        n_atoms: torch.Tensor,
        t: torch.Tensor,
        pos: torch.Tensor | None = None,
    ) -> torch.Tensor:
        cfg = self.cfg
        n, L, V = cfg.max_atoms, seq_len(cfg.max_atoms), cfg.vocab_size
        if x.ndim == 2:
            if x.shape[1] != L:
                raise ValueError(f"x: expected (batch, {L}) tokens, got {tuple(x.shape)}")
            x = F.one_hot(x.long(), V + 1).to(self.atom_embed.weight.dtype)
        elif x.ndim != 3 or x.shape[1:] != (L, V + 1):
            raise ValueError(
                f"x: expected (batch, {L}) tokens or a (batch, {L}, {V + 1}) one-hot, "
                f"got {tuple(x.shape)}"
            )
        b = x.shape[0]
        if n_atoms.shape != (b,):
            raise ValueError(f"n_atoms: expected shape ({b},), got {tuple(n_atoms.shape)}")
        if not isinstance(t, torch.Tensor) or t.shape != (b,):
            raise ValueError(f"t: expected a ({b},) tensor of times, got {t!r:.60}")
        if (pos is None) != (self.pos_node is None) or (
            pos is not None and pos.shape != (b, n, cfg.d_pos)
        ):
            raise ValueError(
                f"pos: expected {'None' if self.pos_node is None else (b, n, cfg.d_pos)} "
                f"(d_pos={cfg.d_pos}), got {None if pos is None else tuple(pos.shape)}"
            )
        h = self.atom_embed(x[:, :n])  # (b, n, dn)
        pair = self.bond_embed(x[:, n:])  # (b, P, de)
        e = self.self_edge.expand(b, n, n, -1).clone()
        e[:, self.pair_i, self.pair_j] = pair
        e[:, self.pair_j, self.pair_i] = pair
        c = self.time_mlp(timestep_embedding(t, cfg.d_node).to(h.dtype))
        h = h + c[:, None, : cfg.d_node]
        e = e + c[:, None, None, cfg.d_node :]
        if pos is not None and self.pos_node is not None and self.pos_edge is not None:
            pos = pos.to(h.dtype)
            h = h + self.pos_node(pos)
            e = e + self.pos_edge(pos[:, :, None] + pos[:, None, :])
        node_mask = torch.arange(n, device=x.device)[None] < n_atoms[:, None]
        for layer in self.layers:
            h, e = layer(h, e, node_mask)
        e = 0.5 * (e + e.transpose(1, 2))  # bond (i, j) and (j, i) are one element
        atoms = self.atom_head(h)
        bonds = self.bond_head(e[:, self.pair_i, self.pair_j])
        if cfg.atom_types < V:
            atoms = atoms.masked_fill(torch.arange(V, device=x.device) >= cfg.atom_types, NEG)
        if len(BOND_TYPES) < V:
            bonds = bonds.masked_fill(torch.arange(V, device=x.device) >= len(BOND_TYPES), NEG)
        return torch.cat([atoms, bonds], dim=1)
