"""Slow, obviously-correct versions of MELD's loss terms and of the state-clashing statistics.

They are the oracles of the tests: loops over single elements and single states, float64,
with the element-wise NELBO weight taken from its definition ``-alpha_i'(t) / (1 - alpha_i(t))``
(chain rule on ``alpha_i(t) = alpha(t^{w_i})``) rather than from the simplified form
``w(u) w u / t`` the fast code uses.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch
from masked_diffusion import Schedule

from meld_diffusion.clashing import ClashCurves, MaskProbs
from meld_diffusion.data import MASK_ID, seq_len


def element_weight(base: Schedule, t: float, w: float) -> float:
    """``-d/dt alpha(t^w) / (1 - alpha(t^w))`` by the chain rule, in float64."""
    u = torch.tensor([t**w], dtype=torch.float64)
    dalpha_dt = float(base.dalpha(u)[0]) * w * t ** (w - 1.0)
    return -dalpha_dt / (1.0 - float(base.alpha(u)[0]))


def meld_terms_loop(
    logits: torch.Tensor,
    x0: torch.Tensor,
    x_t: torch.Tensor,
    t: torch.Tensor,
    w: torch.Tensor,
    n_atoms: torch.Tensor,
    max_atoms: int,
    base: Schedule,
) -> torch.Tensor:
    """Per-element NELBO terms (batch, L) by a Python loop over graphs, atoms and atom pairs."""
    b, L = logits.shape[:2]
    assert seq_len(max_atoms) == L
    out = torch.zeros(b, L, dtype=torch.float64)
    for r in range(b):
        n = int(n_atoms[r])
        positions = list(range(n))  # atoms, then the pairs (i < j) of existing atoms
        k = max_atoms
        for i in range(max_atoms):
            for j in range(i + 1, max_atoms):
                if j < n:
                    positions.append(k)
                k += 1
        for p in positions:
            if int(x_t[r, p]) != MASK_ID:
                continue
            row = [float(z) for z in logits[r, p]]
            m = max(row)
            log_z = m + math.log(sum(math.exp(z - m) for z in row))
            nll = log_z - row[int(x0[r, p])]
            out[r, p] = element_weight(base, float(t[r]), float(w[r, p])) * nll
    return out


def clashing_loop(
    sources: np.ndarray, mask_probs: MaskProbs, t: float
) -> tuple[float, float, float]:
    """(clash probability, Bayes entropy in nats, masked fraction) at one t, state by state.

    Builds the dictionary ``state -> {source: q(state | source)}`` by visiting every source and
    every subset of masked positions.
    """
    sources = np.asarray(sources, dtype=np.int64)
    k, L = sources.shape
    p = np.asarray(mask_probs(t, sources), dtype=np.float64)
    states: dict[tuple[int, ...], dict[int, float]] = {}
    for src in range(k):
        for subset in itertools.product((False, True), repeat=L):
            q = 1.0
            for i in range(L):
                q *= p[src, i] if subset[i] else 1.0 - p[src, i]
            if q == 0.0:
                continue
            z = tuple(MASK_ID if subset[i] else int(sources[src, i]) for i in range(L))
            states.setdefault(z, {})[src] = states.get(z, {}).get(src, 0.0) + q / k
    clash = entropy = 0.0
    for members in states.values():
        total = sum(members.values())
        if len(members) > 1:
            clash += total
        for joint in members.values():
            entropy -= joint * math.log(joint / total)
    return clash, entropy, float(p.mean())


def clashing_curves_loop(sources: np.ndarray, mask_probs: MaskProbs, ts: np.ndarray) -> ClashCurves:
    """`clashing_loop` at every t, as a `ClashCurves`."""
    rows = [clashing_loop(sources, mask_probs, float(t)) for t in ts]
    c, h, m = (np.array(col) for col in zip(*rows, strict=True))
    return ClashCurves(np.asarray(ts, dtype=np.float64), c, h, m)


def reverse_step_law(
    probs: np.ndarray, x_t: np.ndarray, keep_t: np.ndarray, keep_s: np.ndarray
) -> dict[tuple[int, ...], float]:
    """The law of one reverse step ``p(g_s | g_t) = sum_{g_0} p_theta(g_0 | g_t) q(g_s | g_t, g_0)``
    of ONE graph row, by enumerating every clean completion ``g_0`` and every reveal pattern.

    Args:
        probs: (L, V) the denoiser's factorised ``p_theta(g_0^i = k | g_t)``.
        x_t: (L,) tokens, ``MASK_ID`` where masked.
        keep_t, keep_s: (L, V) ``gamma_i(t)`` and ``gamma_i(s)`` of element i if its clean value
            were k (equal columns for value-independent schedules), s < t.

    Returns:
        ``{g_s as a tuple: probability}`` (the probabilities sum to 1).
    """
    L, V = probs.shape
    masked = [i for i in range(L) if int(x_t[i]) == MASK_ID]
    law: dict[tuple[int, ...], float] = {}
    for values in itertools.product(range(V), repeat=len(masked)):
        p0 = math.prod(float(probs[i, k]) for i, k in zip(masked, values, strict=True))
        for reveal in itertools.product((False, True), repeat=len(masked)):
            q, z = 1.0, [int(v) for v in x_t]
            for i, k, r in zip(masked, values, reveal, strict=True):
                up = (keep_s[i, k] - keep_t[i, k]) / (1.0 - keep_t[i, k])
                q *= up if r else 1.0 - up
                if r:
                    z[i] = k
            law[tuple(z)] = law.get(tuple(z), 0.0) + p0 * q
    return law


def nspdk_mmd_pairwise(generated: list[str], reference: list[str]) -> float:
    """NSPDK MMD^2 from its definition: the three averages of the pairwise kernel matrices."""
    from meld_diffusion.graph_metrics import _Interner, nspdk_features

    intern = _Interner()
    fx = [nspdk_features(s, intern) for s in generated]
    fy = [nspdk_features(s, intern) for s in reference]

    def k(a: dict, b: dict) -> float:
        total = 0.0
        for block in a.keys() & b.keys():
            for key in a[block].keys() & b[block].keys():
                total += float(a[block][key]) * float(b[block][key])
        return total

    def mean(xs: list, ys: list) -> float:
        return sum(k(x, y) for x in xs for y in ys) / (len(xs) * len(ys))

    return mean(fx, fx) + mean(fy, fy) - 2.0 * mean(fx, fy)
