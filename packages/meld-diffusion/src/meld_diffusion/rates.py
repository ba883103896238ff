"""Noise-schedule networks: MELD's element embeddings (the paper's phi) and a class-level baseline.

MELD (paper note "Learning Flexible Forward Trajectories for Masked Molecular Diffusion",
Method, Key designs 1, 2 and 4). phi never sees the graph. It is a learned embedding matrix
``H in R^{D x N}`` and ONE linear layer ``f_phi: R^D -> R``:

    node i:       h_i = H[:, pi(i)]                     w_i  = softplus(f_phi(h_i))
    bond {i, j}:  h_ij = h_i + h_j                      w_ij = softplus(f_phi(h_ij))
    keep prob.:   gamma_i(t) = 1 - (1 - eps) t^{w_i},   eps = 1e-4

with ``pi`` a random assignment of the graph's atoms to H's columns, drawn anew for every
training graph (the permutation-marginal ELBO ``log p(g) >= E_pi log p(g | pi) + const``) and
for every generated graph. ``gamma_i(t)`` is the probability that element i is still clean
(1 at t = 0, eps at t = 1): the `ElementwiseSchedule` of masked_diffusion's log-linear
schedule with ``eps = 1e-4``. Because the rates depend on the positions' columns only, the
forward marginal ``q(g_t | g_0, pi)`` stays closed-form and the reverse process knows every
element's rate before anything is generated. The ablations of the paper's Table (nodes only,
edges only) keep the other kind of element at ``w = 1`` (the fixed power law).

The class-level baseline (GenMD4, Shi et al. 2024, as the paper's ablation row "GenMD4
(class-level)") gives one learned rate to each atom type and each bond type:
``w_i = softplus(a_{type(x_0^i)})``: a schedule keyed to the clean value, so its reverse step
needs the posterior over values (`meld_diffusion.meld.class_sample`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from meld_diffusion.data import VOCAB_SIZE, check_max_atoms, pair_index, seq_len
from meld_diffusion.schedule import PAPER_EPS, ElementwiseSchedule

ELEMENTS = ("nodes+edges", "nodes", "edges")
SOFTPLUS_ONE = math.log(math.e - 1.0)  # softplus(SOFTPLUS_ONE) = 1: the rate of the power law


@dataclass(frozen=True)
class MELDConfig:
    """The schedule network of MELD; defaults are the paper's where it states them.

    n_columns: N, H's column count = the largest graph it can schedule (QM9: 9 heavy atoms).
    dim: D, the embedding width (not stated; the paper's "+0.01 M parameters" is one D x N
        matrix with D around 256 for ZINC's N = 38).
    elements: which elements get learned rates ("nodes+edges", the paper's MELD; "nodes" or
        "edges", its ablations; the others keep w = 1).
    eps: gamma_i(1) = eps (paper: 1e-4): the one source of eps; `schedule()` builds the
        schedule from it, and `meld_loss` / `meld_sample` refuse a schedule with another eps.
    permute: draw a random column assignment per graph (paper); False uses column i for atom i
        (an ablation: the model then never marginalises over orderings).
    normalise: OUR option, not the paper's: divide every rate by the geometric mean of the
        rates of all columns and column pairs, removing the common time warp (all rates
        scaled together), to which the continuous-time NELBO is indifferent.
    """

    n_columns: int = 9
    dim: int = 64
    elements: str = "nodes+edges"
    eps: float = PAPER_EPS
    permute: bool = True
    normalise: bool = False

    def __post_init__(self) -> None:
        check_max_atoms(self.n_columns)
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 1:
            raise ValueError(f"dim: expected a positive int, got {self.dim!r}")
        if self.elements not in ELEMENTS:
            raise ValueError(f"elements: expected one of {ELEMENTS}, got {self.elements!r}")
        if not (isinstance(self.eps, (int, float)) and 0.0 <= self.eps < 1.0):
            raise ValueError(f"eps: expected a number in [0, 1), got {self.eps!r}")

    def schedule(self) -> ElementwiseSchedule:
        """The element-wise log-linear schedule ``gamma_i(t) = 1 - (1 - eps) t^{w_i}``."""
        from masked_diffusion import LogLinearSchedule

        return ElementwiseSchedule(LogLinearSchedule(eps=float(self.eps)))


def check_columns(max_atoms: int, n_columns: int) -> None:
    """ValueError unless graphs of `max_atoms` atoms fit H's `n_columns` columns."""
    if max_atoms > n_columns:
        raise ValueError(
            f"max_atoms: graphs with N = {max_atoms} atoms need {max_atoms} columns of H, but H "
            f"has {n_columns} (the maximum N is {n_columns}); build MELDConfig(n_columns>="
            f"{max_atoms})"
        )


class ElementRates(nn.Module):
    """MELD's phi: ``w (batch, L) = softplus(f_phi(h))`` from H's columns (module docstring).

    ``forward(columns)`` takes ``columns (batch, max_atoms)`` long, the column of H given to
    each atom position (distinct within a row), and returns the rates of the graph row layout
    (`meld_diffusion.data`): max_atoms atom rates, then one per atom pair ``i < j``.
    f_phi starts at weight 0 and bias ``softplus^{-1}(1)``: every rate starts at 1 (vanilla).
    """

    def __init__(self, cfg: MELDConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.H = nn.Parameter(torch.randn(cfg.dim, cfg.n_columns) / math.sqrt(cfg.dim))
        self.f_phi = nn.Linear(cfg.dim, 1)
        nn.init.zeros_(self.f_phi.weight)
        nn.init.constant_(self.f_phi.bias, SOFTPLUS_ONE)

    def embeddings(self, columns: torch.Tensor) -> torch.Tensor:
        """``h_i = H[:, columns[b, i]]``: (batch, max_atoms, D)."""
        if not isinstance(columns, torch.Tensor) or columns.ndim != 2 or columns.numel() == 0:
            raise ValueError(
                f"columns: expected a non-empty (batch, max_atoms) tensor, got {columns!r:.60}"
            )
        check_columns(columns.shape[1], self.cfg.n_columns)
        if columns.dtype != torch.long or int(columns.min()) < 0:
            raise ValueError("columns: expected long column indices >= 0")
        if int(columns.max()) >= self.cfg.n_columns:
            raise ValueError(
                f"columns: expected indices < n_columns={self.cfg.n_columns}, got "
                f"{int(columns.max())}"
            )
        return self.H.t()[columns]

    def _rates(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Node and bond rates (..., N) and (..., N(N-1)/2) of embeddings h (..., N, D)."""
        pi, pj = (torch.as_tensor(a, device=h.device) for a in pair_index(h.shape[-2]))
        w_node = F.softplus(self.f_phi(h).squeeze(-1))
        w_edge = F.softplus(self.f_phi(h[..., pi, :] + h[..., pj, :]).squeeze(-1))
        return w_node, w_edge

    def forward(self, columns: torch.Tensor) -> torch.Tensor:
        w_node, w_edge = self._rates(self.embeddings(columns))  # (b, N), (b, P)
        if self.cfg.normalise:
            every = torch.cat(self._rates(self.H.t()))  # all columns and column pairs
            scale = torch.exp(torch.log(every).mean())
            w_node, w_edge = w_node / scale, w_edge / scale
        if self.cfg.elements == "edges":
            w_node = torch.ones_like(w_node)
        if self.cfg.elements == "nodes":
            w_edge = torch.ones_like(w_edge)
        return torch.cat([w_node, w_edge], dim=1)

    def columns(
        self,
        batch: int,
        max_atoms: int,
        generator: torch.Generator | None = None,
        device: torch.device | str = "cpu",
    ) -> torch.Tensor:
        """``pi``: (batch, max_atoms) distinct columns per row, uniformly random (``permute``) or
        ``0..max_atoms-1``. Draws ``rand(batch, n_columns)`` from `generator` when permuting."""
        check_columns(max_atoms, self.cfg.n_columns)
        if not self.cfg.permute:
            return torch.arange(max_atoms, device=device).expand(batch, -1).clone()
        u = torch.rand((batch, self.cfg.n_columns), generator=generator, device=device)
        return u.argsort(dim=1)[:, :max_atoms]


class ClassRates(nn.Module):
    """The class-level (GenMD4) baseline: one learned rate per atom type and per bond type.

    ``forward(max_atoms)`` returns the rates by position kind and clean value,
    ``(L, vocab)``: row i holds ``softplus(a_{atom, k})`` for atom positions and
    ``softplus(a_{bond, k})`` for bond positions, k = 0..vocab-1 (`vocab`: the rows' token
    count, 4 for QM9). They start at 1.

    ``normalise=True`` is OUR option (as `MELDConfig.normalise`): the eight rates are divided
    by their geometric mean, so the class-level schedule has no common time warp either.
    """

    def __init__(self, normalise: bool = False, vocab: int = VOCAB_SIZE) -> None:
        super().__init__()
        if not isinstance(normalise, bool):
            raise TypeError(f"normalise: expected a bool, got {normalise!r}")
        if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < VOCAB_SIZE:
            raise ValueError(f"vocab: expected an int >= {VOCAB_SIZE}, got {vocab!r}")
        self.normalise = normalise
        self.a = nn.Parameter(torch.full((2, vocab), SOFTPLUS_ONE))

    def table(self) -> torch.Tensor:
        """The rates by kind (atom, bond) and value: (2, vocab)."""
        w = F.softplus(self.a)
        if self.normalise:
            w = w / torch.exp(torch.log(w).mean())
        return w

    def forward(self, max_atoms: int) -> torch.Tensor:
        n = check_max_atoms(max_atoms)
        kind = (torch.arange(seq_len(n), device=self.a.device) >= n).long()
        return self.table()[kind]

    def rates(self, atom_types: tuple[str, ...] | None = None) -> dict[str, float]:
        """The learned rates by name, e.g. ``{"atom C": 1.3, ..., "bond triple": 0.8}``
        (`atom_types`: the names of the atom tokens, QM9's by default)."""
        from meld_diffusion.data import ATOM_TYPES, BOND_TYPES

        w = self.table().detach().tolist()
        names = ATOM_TYPES if atom_types is None else atom_types
        out = {f"atom {name}": w[0][k] for k, name in enumerate(names)}
        return out | {f"bond {name}": w[1][k] for k, name in enumerate(BOND_TYPES)}
