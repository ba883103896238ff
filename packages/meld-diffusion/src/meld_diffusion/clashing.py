"""State-clashing, computed exactly on a set of graphs small enough to enumerate.

For source graphs ``G_1..G_K`` (flat rows of one size, uniform prior ``pi_k = 1/K``) and a
masking schedule with per-element mask probabilities ``P_k(t) (K, L)``, every forward state is
``z = (G_k with the elements of S masked)`` for a subset S of the L positions, reached with

    q(z | G_k) = prod_{i in S} P_ki(t) prod_{i not in S} (1 - P_ki(t)).

Two sources *clash* on z when both reach it (they agree on every unmasked element). For each t
this module returns, summing over all ``2^L`` subsets and all sources:

- ``clash``: P(z is reachable from two or more sources) under ``z ~ sum_k pi_k q(. | G_k)``;
- ``entropy``: ``H(G_0 | z_t)`` in nats, the Bayes-optimal denoiser's expected entropy over
  whole source graphs (0 when every state identifies its source);
- ``masked``: the expected fraction of masked elements (the noise level, to compare schedules
  that mask at different speeds).

With an element-agnostic schedule ``P_ki = p(t)`` the posterior over the sources compatible
with z is uniform; an element-wise schedule makes ``q(z | G_k)`` differ between compatible
sources, so the mask pattern itself carries information and the posterior sharpens.

The denoiser is permutation-equivariant, so it cannot tell node orderings apart:
`permutation_closure` adds every relabelling of each molecule as its own source graph.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from meld_diffusion.data import MASK_ID, check_max_atoms, pair_index, seq_len

MaskProbs = Callable[[float, np.ndarray], np.ndarray]
"""``mask_probs(t, sources (K, L)) -> P (K, L)`` in [0, 1]."""

MAX_ELEMENTS = 16  # 2^16 subsets: the enumeration's practical limit


def permute_rows(rows: np.ndarray, perm: np.ndarray, n_atoms: int) -> np.ndarray:
    """Rows of `n_atoms`-atom graphs with atom ``k`` renamed ``perm[k]``."""
    n = check_max_atoms(n_atoms)
    rows = np.asarray(rows)
    perm = np.asarray(perm)
    pi, pj = pair_index(n)
    out = np.empty_like(rows)
    out[:, perm] = rows[:, :n]
    a, b = perm[pi], perm[pj]
    where = {(int(x), int(y)): n + k for k, (x, y) in enumerate(zip(pi, pj, strict=True))}
    cols = [where[(min(x, y), max(x, y))] for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    out[:, cols] = rows[:, n:]
    return out


def permutation_closure(rows: np.ndarray, n_atoms: int) -> np.ndarray:
    """Every distinct relabelling of every row (sorted, deduplicated): (K', L)."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.ndim != 2 or rows.shape[1] != seq_len(n_atoms):
        raise ValueError(
            f"rows: expected shape (K, {seq_len(n_atoms)}) for n_atoms={n_atoms}, got {rows.shape}"
        )
    perms = [
        permute_rows(rows, np.array(p), n_atoms) for p in itertools.permutations(range(n_atoms))
    ]
    return np.unique(np.concatenate(perms), axis=0)


@dataclass(frozen=True)
class ClashCurves:
    """Exact state-clashing statistics at times `t` (all arrays (T,))."""

    t: np.ndarray
    clash: np.ndarray
    entropy: np.ndarray
    masked: np.ndarray

    def area(self, name: str = "entropy") -> float:
        """Trapezoid area of `name` against the masked fraction (0..1): a noise-level-fair summary."""
        y = getattr(self, name)
        order = np.argsort(self.masked)
        x, y = self.masked[order], y[order]
        return float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(x)))


def _groups(sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subsets (2^L, L) bool; global state id of each (subset, source) (2^L, K); clash flag."""
    L = sources.shape[1]
    subsets = np.array(list(itertools.product((False, True), repeat=L)), dtype=bool)
    z = np.where(subsets[:, None, :], MASK_ID, sources[None])  # (2^L, K, L)
    code = z @ (MASK_ID + 1) ** np.arange(L, dtype=np.int64)  # the state as a base-5 number
    key = np.arange(len(subsets), dtype=np.int64)[:, None] * (MASK_ID + 1) ** L + code
    _, ids, counts = np.unique(key.reshape(-1), return_inverse=True, return_counts=True)
    ids = ids.reshape(key.shape)
    return subsets, ids, counts[ids] > 1


def clashing_curves(sources: np.ndarray, mask_probs: MaskProbs, ts: np.ndarray) -> ClashCurves:
    """Exact clash probability, Bayes entropy and masked fraction at each t (see module doc).

    Args:
        sources: (K, L) distinct source rows of one graph size (L <= 16 elements).
        mask_probs: ``(t, sources) -> P (K, L)``.
        ts: times, (T,).
    """
    sources = np.asarray(sources, dtype=np.int64)
    if sources.ndim != 2 or len(sources) == 0:
        raise ValueError(f"sources: expected a non-empty (K, L) array, got shape {sources.shape}")
    if sources.shape[1] > MAX_ELEMENTS:
        raise ValueError(
            f"sources: {sources.shape[1]} elements means 2^{sources.shape[1]} states; expected "
            f"at most {MAX_ELEMENTS}"
        )
    if len(np.unique(sources, axis=0)) != len(sources):
        raise ValueError("sources: rows must be distinct (deduplicate, e.g. permutation_closure)")
    k = sources.shape[0]
    subsets, ids, shared = _groups(sources)
    sm = subsets.astype(np.float64)
    prior = np.full(k, 1.0 / k)
    clash, entropy, masked = [], [], []
    for t in np.asarray(ts, dtype=np.float64).tolist():
        p = np.asarray(mask_probs(t, sources), dtype=np.float64)
        if p.shape != sources.shape or not np.all((p >= 0) & (p <= 1)):
            raise ValueError(f"mask_probs: expected (K, L) probabilities in [0, 1] at t={t}")
        with np.errstate(divide="ignore"):
            lp, lq = np.log(p), np.log1p(-p)
        # log q(S | G_k) = sum_i S_i log p_ki + (1 - S_i) log(1 - p_ki); 0 * (-inf) := 0
        logq = _masked_dot(sm, lp) + _masked_dot(1.0 - sm, lq)
        joint = prior[None] * np.exp(logq)  # (2^L, K)
        pz = np.bincount(ids.reshape(-1), weights=joint.reshape(-1))[ids]  # p(z) per entry
        pos = joint > 0
        entropy.append(float(-np.sum(joint[pos] * np.log(joint[pos] / pz[pos]))))
        clash.append(float(joint[shared].sum()))
        masked.append(float(prior @ p.mean(axis=1)))
    return ClashCurves(
        np.asarray(ts, dtype=np.float64), np.array(clash), np.array(entropy), np.array(masked)
    )


def _masked_dot(a: np.ndarray, log_p: np.ndarray) -> np.ndarray:
    """``a @ log_p.T`` with ``0 * -inf = 0`` (an element that is surely clean contributes nothing)."""
    finite = np.where(np.isfinite(log_p), log_p, 0.0)
    out = a @ finite.T
    bad = (a @ (~np.isfinite(log_p)).astype(np.float64).T) > 0
    return np.where(bad, -np.inf, out)


def combine(curves: dict[int, ClashCurves], weights: dict[int, float]) -> ClashCurves:
    """Mix per-size curves (the atom count is known to the sampler) with weights summing to 1."""
    if not curves or set(curves) != set(weights):
        raise ValueError(
            f"curves, weights: expected the same non-empty keys, got {sorted(curves)} and {sorted(weights)}"
        )
    total = sum(weights.values())
    first = next(iter(curves.values()))
    out = {name: np.zeros_like(first.t) for name in ("clash", "entropy", "masked")}
    for n, c in curves.items():
        for name in out:
            out[name] += weights[n] / total * getattr(c, name)
    return ClashCurves(first.t, out["clash"], out["entropy"], out["masked"])


def constant_rates(
    rates_by_value: tuple[float, ...], n_atoms: int, base_eps: float = 0.0
) -> MaskProbs:
    """Mask probabilities of a hand-made element-wise schedule: ``P = (1 - eps) t^{w}`` with
    ``w = rates_by_value[value]`` for atoms and ``rates_by_value[4 + value]`` for bonds."""
    n = check_max_atoms(n_atoms)
    rv = np.asarray(rates_by_value, dtype=np.float64)
    if rv.shape != (8,) or not np.all(rv > 0):
        raise ValueError(
            f"rates_by_value: expected 8 positive rates (4 atom, 4 bond types), got {rates_by_value!r}"
        )

    def mask_probs(t: float, sources: np.ndarray) -> np.ndarray:
        w = rv[sources + np.where(np.arange(sources.shape[1]) < n, 0, 4)[None]]
        return (1.0 - base_eps) * t**w

    return mask_probs


def uniform_rates(base_eps: float = 0.0) -> MaskProbs:
    """The element-agnostic (vanilla, log-linear) schedule: ``P = (1 - eps) t`` everywhere."""

    def mask_probs(t: float, sources: np.ndarray) -> np.ndarray:
        return np.full(sources.shape, (1.0 - base_eps) * t)

    return mask_probs


def position_rates(w: np.ndarray, base_eps: float = 0.0) -> MaskProbs:
    """Mask probabilities of a content-independent element-wise schedule (MELD for one pi):
    ``P_ki = (1 - eps) t^{w_i}`` for every source k, ``w`` (L,) the positions' rates."""
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 1 or not np.all(w > 0):
        raise ValueError(f"w: expected (L,) positive rates, got shape {w.shape}")

    def mask_probs(t: float, sources: np.ndarray) -> np.ndarray:
        if sources.shape[1] != w.shape[0]:
            raise ValueError(f"sources: expected {w.shape[0]} elements, got {sources.shape[1]}")
        return np.broadcast_to((1.0 - base_eps) * t**w, sources.shape).copy()

    return mask_probs


def pair_clash(a: np.ndarray, b: np.ndarray, p_a: np.ndarray) -> float:
    """P(a state drawn from q(. | a) is also reachable from b) = prod over the elements where the
    rows differ of a's mask probability there (all of them must be masked). a, b, p_a: (L,)."""
    a, b, p_a = (np.asarray(v) for v in (a, b, p_a))
    if not (a.shape == b.shape == p_a.shape) or a.ndim != 1:
        raise ValueError(
            f"a, b, p_a: expected equal (L,) shapes, got {a.shape}, {b.shape}, {p_a.shape}"
        )
    return float(np.prod(p_a[a != b]))
