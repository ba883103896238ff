"""Using a fitted law: compute-optimal (N, D) at a quality Q, and what cleaner data is worth.

All functions take the natural parameters ``{"A", "B", "E", "alpha", "beta", "gamma"}`` (a
`FitResult.params`); a Chinchilla fit (no gamma) is read as gamma = 0. Compute is ``C = 6 N D``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real

__all__ = [
    "compute_equivalent",
    "compute_optimal",
    "data_equivalent",
    "effective_data",
    "loss",
    "required_model_size",
]


def _p(params: Mapping[str, float]) -> tuple[float, float, float, float, float, float]:
    if not isinstance(params, Mapping):
        raise TypeError(f"params: expected a mapping such as FitResult.params, got {params!r:.60}")
    need = ("A", "B", "E", "alpha", "beta")
    missing = [k for k in need if k not in params]
    if missing:
        raise ValueError(f"params: missing {missing} (expected A, B, E, alpha, beta[, gamma])")
    values = {k: params[k] for k in (*need, "gamma") if k in params}
    for k, v in values.items():
        if not isinstance(v, Real) or isinstance(v, bool):
            raise TypeError(f"params[{k!r}]: expected a number, got {v!r}")
        if not math.isfinite(v):
            raise ValueError(f"params[{k!r}]: expected a finite number, got {v!r}")
    A, B, E, a, b = (float(params[k]) for k in need)
    g = float(params.get("gamma", 0.0))
    if A <= 0 or B <= 0 or a <= 0 or b <= 0 or E < 0:
        raise ValueError(
            f"params: expected A, B, alpha, beta > 0 and E >= 0, got {dict(params)} "
            "(the planning formulas need a decreasing law)"
        )
    return A, B, E, a, b, g


def _num(x: object, name: str) -> float:
    if not isinstance(x, Real) or isinstance(x, bool):
        raise TypeError(f"{name}: expected a number, got {x!r}")
    return float(x)


def _q(Q: float, name: str = "Q") -> float:
    if not (math.isfinite(_num(Q, name)) and 0 < Q <= 1):
        raise ValueError(f"{name}: expected a quality in (0, 1] (1 = clean), got {Q!r}")
    return float(Q)


def _pos(x: float, name: str) -> float:
    if not (math.isfinite(_num(x, name)) and x > 0):
        raise ValueError(f"{name}: expected a finite value > 0, got {x!r}")
    return float(x)


def loss(params: Mapping[str, float], N: float, D: float, Q: float = 1.0) -> float:
    """``L(N, D, Q) = E + A/N^alpha + B/(D^beta Q^gamma)``."""
    A, B, E, a, b, g = _p(params)
    return E + A / _pos(N, "N") ** a + B / (_pos(D, "D") ** b * _q(Q) ** g)


def effective_data(params: Mapping[str, float], D: float, Q: float) -> float:
    """``D_eff = D Q^(gamma/beta)``: clean tokens worth D tokens of quality Q."""
    *_, b, g = _p(params)
    return _pos(D, "D") * _q(Q) ** (g / b)


def data_equivalent(params: Mapping[str, float], D: float, q_from: float, q_to: float) -> float:
    """Tokens at quality `q_to` that reach the loss of `D` tokens at `q_from` (same N):
    ``D (q_from / q_to)^(gamma/beta)``."""
    *_, b, g = _p(params)
    return _pos(D, "D") * (_q(q_from, "q_from") / _q(q_to, "q_to")) ** (g / b)


def compute_optimal(params: Mapping[str, float], C: float, Q: float = 1.0) -> dict[str, float]:
    """Minimise L(N, D, Q) subject to ``6 N D = C``.

    With ``B_Q = B Q^-gamma`` it is Chinchilla's closed form (Hoffmann et al. 2022, Eq. 4):
    ``N* = G (C/6)^(beta/(alpha+beta))``, ``D* = (C/6) / N*``, ``G = (alpha A / (beta B_Q))^(1/(alpha+beta))``.
    """
    A, B, E, a, b, g = _p(params)
    c6 = _pos(C, "C") / 6.0
    b_q = B * _q(Q) ** -g
    G = (a * A / (b * b_q)) ** (1.0 / (a + b))
    n = G * c6 ** (b / (a + b))
    d = c6 / n
    return {"N": n, "D": d, "loss": E + A / n**a + b_q / d**b, "tokens_per_param": d / n}


def compute_equivalent(params: Mapping[str, float], C: float, q_from: float, q_to: float) -> float:
    """Compute at quality `q_to` whose compute-optimal loss equals that of `C` at `q_from`.

    The optimal excess loss scales as ``B_Q^(alpha/(alpha+beta)) C^(-alpha beta/(alpha+beta))``,
    so the answer is ``C (q_from / q_to)^(gamma/beta)``: the same factor as for data.
    """
    *_, b, g = _p(params)
    return _pos(C, "C") * (_q(q_from, "q_from") / _q(q_to, "q_to")) ** (g / b)


def required_model_size(
    params: Mapping[str, float], target_loss: float, D: float, Q: float = 1.0
) -> float:
    """Smallest N reaching `target_loss` with D tokens of quality Q (inf if unreachable)."""
    A, B, E, a, b, g = _p(params)
    if not math.isfinite(_num(target_loss, "target_loss")):
        raise ValueError(f"target_loss: expected a finite number, got {target_loss!r}")
    room = target_loss - E - B / (_pos(D, "D") ** b * _q(Q) ** g)
    return math.inf if room <= 0 else (A / room) ** (1.0 / a)
