"""Molecular patches: entropy groups, BRICS fragments, and their mean-pooled node features.

Entropy patching (the official ``entropy_process.group_ids_by_entropy``): with the per-atom
entropies ``e_k`` (bits) and the molecule's own threshold ``tau = quantile(e, q)`` (q = 0.75),
walk the atoms in SMILES order; atom ``k`` is *high* when ``e_k > tau``; a rising edge
(high after not-high) closes the current group, the rising atom being its last member. So
the group id of atom ``k`` is the number of rising edges strictly before ``k``::

    high_k   = e_k > tau
    rise_k   = high_k and not high_{k-1}          (high_{-1} = False)
    gid_k    = sum_{j < k} rise_j                 (an exclusive cumulative sum)

Peak patching (the paper's text, Sec. 3 "entropy-guided subgraph patching"; not in the
official code): split at the *local maxima* of the per-atom signal, after non-maximum
suppression with a minimum gap ``Delta`` between kept peaks and a prominence threshold
``gamma``. Peaks, gap and prominence follow ``scipy.signal.find_peaks(e, distance=Delta,
prominence=gamma)`` (the oracle in `edt_former.reference`): a peak is strictly above both
neighbours (the first and last atom never are); NMS keeps peaks from the highest down and
drops any within ``Delta - 1`` atoms of a kept one; the prominence of a kept peak is its
height above the higher of its two bases. Each kept peak ends its patch, as a rising edge
does above, so a curve without peaks (flat, monotone) is one patch::

    gid_k = #{kept peaks p : p < k}

BRICS fragments (the official ``utils/patching_preprocess.bond_break``): cut every bond
RDKit's ``FindBRICSBonds`` returns; each connected piece is a fragment, numbered in the
order of its first atom.

Pooling (``EDTFormerEncoder.pool_by_patch``): the mean of the encoder's node features over
each group, BRICS fragments first, then entropy groups.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from edt_former.atoms import parse_smiles


def entropy_group_ids(
    entropy: torch.Tensor, mask: torch.Tensor | None = None, q: float = 0.75
) -> torch.Tensor:
    """Entropy-patch id of every atom, batched.

    Args:
        entropy: ``(batch, atoms)`` per-atom entropies (any unit), padded on the right.
        mask: ``(batch, atoms)`` bool, True on real atoms (default: all real).
        q: the quantile of the molecule's own entropies used as threshold, in ``[0, 1]``.

    Returns:
        ``(batch, atoms)`` int64 group ids (0, 1, ...; -1 on padding).
    """
    _check_signal(entropy)
    if not (isinstance(q, (int, float)) and 0.0 <= q <= 1.0):
        raise ValueError(f"q: expected a quantile in [0, 1], got {q!r}")
    mask = _checked_mask(entropy, mask)
    e = entropy.masked_fill(~mask, float("nan"))
    tau = torch.nanquantile(e.double(), q, dim=1, keepdim=True).to(entropy.dtype)  # (batch, 1)
    high = (entropy > tau) & mask
    prev = torch.cat([torch.zeros_like(high[:, :1]), high[:, :-1]], dim=1)
    rise = (high & ~prev).long()
    gid = torch.cumsum(rise, dim=1) - rise
    return gid.masked_fill(~mask, -1)


def _check_signal(entropy: torch.Tensor) -> None:
    if not isinstance(entropy, torch.Tensor) or not entropy.is_floating_point():
        raise TypeError(
            f"entropy: expected a floating-point torch.Tensor, got {type(entropy).__name__}"
        )
    if entropy.ndim != 2:
        raise ValueError(f"entropy: expected shape (batch, atoms), got {tuple(entropy.shape)}")


def _checked_mask(entropy: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """`mask` (default: all real) after checking it and the entropies on real atoms."""
    if mask is None:
        mask = torch.ones_like(entropy, dtype=torch.bool)
    if mask.shape != entropy.shape or mask.dtype != torch.bool:
        raise ValueError(
            f"mask: expected a bool tensor of shape {tuple(entropy.shape)}, got "
            f"{mask.dtype} {tuple(mask.shape)}"
        )
    if bool((mask.sum(1) == 0).any()):
        raise ValueError("mask: every molecule needs at least one atom (a row is all False)")
    if bool(((mask[:, 1:].int() - mask[:, :-1].int()) > 0).any()):
        raise ValueError("mask: padding must be on the right (a False before a True)")
    if not bool(torch.isfinite(entropy[mask]).all()):
        raise ValueError("entropy: contains NaN or infinite values on real atoms")
    return mask


PEAK_DELTA = 3
"""Delta, the peak rule's NMS gap (atoms): neither the note nor the code states one; the
README's sweep takes 3 (the smallest gap that suppresses anything: a carbonyl/amide unit)."""
PEAK_GAMMA = 0.02
"""gamma, the peak rule's prominence (bits of the tiny entropy model): the README's sweep,
about as many patches as the code's percentile rule (3.21 vs 3.03 on ZINC)."""


def peak_group_ids(
    entropy: torch.Tensor,
    mask: torch.Tensor | None = None,
    delta: int = PEAK_DELTA,
    gamma: float = PEAK_GAMMA,
) -> torch.Tensor:
    """Patch id of every atom under the paper's peak rule (local maxima, NMS, prominence).

    Args:
        entropy: ``(batch, atoms)`` per-atom signal ``e_t``, padded on the right.
        mask: ``(batch, atoms)`` bool, True on real atoms (default: all real).
        delta: ``Delta``, the minimum gap in atoms between two kept peaks (>= 1; 1 = no NMS).
        gamma: ``gamma``, the minimum prominence of a kept peak, in the unit of `entropy`.

    Returns:
        ``(batch, atoms)`` int64 patch ids (0, 1, ...; -1 on padding).
    """
    _check_signal(entropy)
    if isinstance(delta, bool) or not isinstance(delta, int) or delta < 1:
        raise ValueError(f"delta: expected an int >= 1 (atoms between peaks), got {delta!r}")
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not gamma >= 0.0:
        raise ValueError(f"gamma: expected a prominence >= 0, got {gamma!r}")
    mask = _checked_mask(entropy, mask)
    peaks = entropy_peaks(entropy, mask, delta, float(gamma)).long()
    gid = torch.cumsum(peaks, dim=1) - peaks
    return gid.masked_fill(~mask, -1)


def entropy_peaks(
    entropy: torch.Tensor, mask: torch.Tensor, delta: int, gamma: float
) -> torch.Tensor:
    """``(batch, atoms)`` bool: the kept peaks (local maxima -> NMS gap `delta` -> prominence)."""
    batch, n = entropy.shape
    idx = torch.arange(n, device=entropy.device)
    length = mask.sum(1, keepdim=True)  # (batch, 1)
    x = entropy.masked_fill(~mask, float("-inf"))
    left = torch.cat([x[:, :1], x[:, :-1]], dim=1)
    right = torch.cat([x[:, 1:], x[:, -1:]], dim=1)
    interior = (idx >= 1) & (idx < length - 1)  # scipy: the ends are never peaks
    alive = (x > left) & (x > right) & interior
    # NMS: visit candidates from the highest down; a surviving one suppresses its neighbours
    order = torch.argsort(x.masked_fill(~alive, float("-inf")), dim=1, descending=True, stable=True)
    rows = torch.arange(batch, device=entropy.device)
    for r in range(int(alive.sum(1).max().item()) if n else 0):
        k = order[:, r]  # (batch,)
        kept = alive[rows, k]
        near = ((idx[None, :] - k[:, None]).abs() < delta) & (idx[None, :] != k[:, None])
        alive &= ~(near & kept[:, None])
    # prominence: height above the higher base; a base is the minimum between the peak and
    # the nearest strictly higher atom on that side (or the molecule's end)
    xk, xj = x[:, :, None], x[:, None, :]  # peak k on dim 1, atom j on dim 2
    jj, kk = idx[None, None, :], idx[None, :, None]
    higher = xj > xk
    left_wall = torch.where(higher & (jj < kk), jj, -1).amax(2, keepdim=True)  # (batch, n, 1)
    right_wall = torch.where(higher & (jj > kk), jj, n).amin(2, keepdim=True)
    window = (jj > left_wall) & (jj < right_wall) & mask[:, None, :]
    inf = torch.tensor(float("inf"), dtype=x.dtype, device=x.device)
    left_base = torch.where(window & (jj <= kk), xj, inf).amin(2)
    right_base = torch.where(window & (jj >= kk), xj, inf).amin(2)
    prominence = entropy - torch.maximum(left_base, right_base)
    return alive & (prominence >= gamma)


def brics_group_ids(smiles: str) -> np.ndarray:
    """BRICS fragment id of every heavy atom of `smiles` (RDKit atom order), first-seen order."""
    from rdkit import Chem
    from rdkit.Chem.BRICS import FindBRICSBonds

    mol = parse_smiles(smiles)
    bonds = sorted(FindBRICSBonds(mol))
    if bonds:
        rw = Chem.RWMol(mol)
        for (i, j), _ in bonds:
            rw.RemoveBond(i, j)
        mol = rw.GetMol()
    frags: list[int] = []
    Chem.GetMolFrags(mol, asMols=True, sanitizeFrags=False, frags=frags)  # fills frags
    return _first_seen(np.asarray(frags, dtype=np.int64))


def _first_seen(labels: np.ndarray) -> np.ndarray:
    """Relabel so that ids appear as 0, 1, 2, ... in order of first occurrence."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inverse].astype(np.int64)


def pool_groups(
    nodes: torch.Tensor, group_ids: torch.Tensor, num_groups: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean of node features per group, batched.

    Args:
        nodes: ``(batch, atoms, dim)`` node features (padding rows are ignored).
        group_ids: ``(batch, atoms)`` int64 ids ``0..G_b-1`` per molecule, -1 on padding.
        num_groups: width of the output (default: the largest group count in the batch).

    Returns:
        ``pooled (batch, num_groups, dim)`` (zeros where a molecule has fewer groups) and
        ``mask (batch, num_groups)`` bool, True on real groups.
    """
    if nodes.ndim != 3:
        raise ValueError(f"nodes: expected shape (batch, atoms, dim), got {tuple(nodes.shape)}")
    if group_ids.shape != nodes.shape[:2]:
        raise ValueError(
            f"group_ids: expected shape (batch, atoms) = {tuple(nodes.shape[:2])}, got "
            f"{tuple(group_ids.shape)}"
        )
    if not nodes.is_floating_point():
        raise TypeError(f"nodes: expected a floating-point tensor, got {nodes.dtype}")
    if not bool(torch.isfinite(nodes).all()):
        raise ValueError("nodes: contains NaN or infinite values")
    if group_ids.is_floating_point() or group_ids.is_complex() or group_ids.dtype == torch.bool:
        raise TypeError(f"group_ids: expected an integer tensor, got {group_ids.dtype}")
    if group_ids.numel() and int(group_ids.min()) < -1:
        raise ValueError(
            f"group_ids: expected ids >= 0 (-1 on padding), got {int(group_ids.min())}"
        )
    g_max = int(group_ids.max().item()) + 1 if group_ids.numel() else 0
    width = g_max if num_groups is None else num_groups
    if width < g_max:
        raise ValueError(f"num_groups: {num_groups} is smaller than the {g_max} groups present")
    one_hot = (group_ids.unsqueeze(1) == torch.arange(width, device=nodes.device)[:, None]).to(
        nodes.dtype
    )  # (batch, groups, atoms)
    counts = one_hot.sum(-1)  # (batch, groups)
    pooled = one_hot @ nodes / counts.clamp_min(1.0).unsqueeze(-1)
    return pooled, counts > 0


def compact(
    tokens: torch.Tensor, mask: torch.Tensor, budget: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Move the real tokens of each row to the front (order kept) and keep at most `budget`.

    Truncation keeps the leftmost tokens, as the official ``local_q_budget`` does: BRICS
    fragments come first, so a tight budget drops entropy groups before fragments.
    """
    if budget < 0:
        raise ValueError(f"budget: expected >= 0, got {budget}")
    order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)
    tokens = torch.gather(tokens, 1, order.unsqueeze(-1).expand_as(tokens))
    mask = torch.gather(mask, 1, order)
    return tokens[:, :budget], mask[:, :budget]


def local_tokens(
    nodes: torch.Tensor,
    brics_ids: torch.Tensor | None,
    entropy_ids: torch.Tensor | None,
    budget: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The pooled local-query inputs: ``[BRICS fragments ; entropy groups]``, capped at `budget`.

    Returns ``(batch, budget, dim)`` features and a ``(batch, budget)`` bool mask; the number
    of real tokens of molecule ``b`` is ``min(budget, #fragments_b + #groups_b)``.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget: expected an int >= 0, got {budget!r}")
    parts: list[tuple[torch.Tensor, torch.Tensor]] = []
    for ids in (brics_ids, entropy_ids):
        if ids is not None:
            parts.append(pool_groups(nodes, ids))
    batch, _, dim = nodes.shape
    if not parts or budget == 0:
        empty = nodes.new_zeros((batch, budget, dim))
        return empty, torch.zeros((batch, budget), dtype=torch.bool, device=nodes.device)
    tokens = torch.cat([p for p, _ in parts], dim=1)
    mask = torch.cat([m for _, m in parts], dim=1)
    tokens, mask = compact(tokens, mask, budget)
    if tokens.shape[1] < budget:  # pad to a fixed width so batches line up
        pad = budget - tokens.shape[1]
        tokens = torch.cat([tokens, tokens.new_zeros((batch, pad, dim))], dim=1)
        mask = torch.cat([mask, mask.new_zeros((batch, pad))], dim=1)
    return tokens, mask


def pad_ids(ids: list[Any], width: int | None = None) -> torch.Tensor:
    """Right-pad per-molecule id vectors with -1 into a ``(batch, width)`` int64 tensor."""
    width = width if width is not None else max(len(x) for x in ids)
    out = torch.full((len(ids), width), -1, dtype=torch.long)
    for b, x in enumerate(ids):
        out[b, : len(x)] = torch.as_tensor(np.asarray(x), dtype=torch.long)
    return out
