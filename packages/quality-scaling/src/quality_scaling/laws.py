"""The two scaling-law forms, written in the log-sum-exp parameterisation they are fitted in.

Chinchilla (Hoffmann et al. 2022, Approach 3):

    L(N, D) = E + A / N^alpha + B / D^beta

Quality-aware law (Subramanyam, Chen, Grossman, arXiv:2510.03313, the law of the paper):

    L(N, D, Q) = E + A / N^alpha + B / (D^beta Q^gamma)

and its one-model-size form, the law the paper actually fits (paper note, "Loss & Training":
"Law parameters B, beta, gamma, E are estimated"; one model size per task, so A / N^alpha is a
constant that E absorbs):

    L(D, Q) = E + B / (D^beta Q^gamma)      (`QUALITY_FIXED_N`, theta = [b, e, beta, gamma])

Both are fitted in log space as ``log L = LSE(a - alpha log N, b - beta log D - gamma log Q, e)``
with ``A = exp(a)``, ``B = exp(b)``, ``E = exp(e)``: the parameter vector ``theta`` is
``[a, b, e, alpha, beta]`` (Chinchilla, Epoch AI's order) or ``[a, b, e, alpha, beta, gamma]``.
A law is defined by the names of its parameters: each belongs to one log-term (`TERM_OF`) and
multiplies one feature (`FEATURE_OF`); the terms a law has are those its names touch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "CHINCHILLA",
    "LAWS",
    "QUALITY",
    "QUALITY_FIXED_N",
    "ScalingData",
    "ScalingLaw",
    "get_law",
    "huber",
    "huber_grad",
]


_FLOOR = -300.0
"""Terms below ``e^-300`` of the largest are held there: exact to 1e-130 relative, and it keeps
far-off starts from computing in subnormal floats (slow on x86)."""


TERM_OF = {"a": "N", "alpha": "N", "b": "D", "beta": "D", "gamma": "D", "e": "E"}
"""The log-term each parameter enters: ``A/N^alpha``, ``B/(D^beta Q^gamma)`` or ``E``."""
FEATURE_OF = {"a": None, "b": None, "e": None, "alpha": "log_n", "beta": "log_d", "gamma": "log_q"}
"""The feature a parameter multiplies in its log-term: ``-log N`` ... (None: the constant 1)."""
_SCALES = {"a": "A", "b": "B", "e": "E"}  # log-space coefficients and their natural names


@dataclass(frozen=True)
class ScalingLaw:
    """A parametric law: its name, the log-space parameter names and whether it reads Q."""

    name: str
    theta_names: tuple[str, ...]
    uses_quality: bool

    @property
    def n_params(self) -> int:
        return len(self.theta_names)

    @property
    def natural_names(self) -> tuple[str, ...]:
        """The natural parameter names, in ``theta`` order: ``("A", "B", "E", "alpha", ...)``."""
        return tuple(_SCALES.get(k, k) for k in self.theta_names)

    def natural(self, theta: ArrayLike) -> dict[str, float]:
        """``theta`` -> ``{"A", "B", "E", "alpha", "beta"[, "gamma"]}`` (A, B, E exponentiated)."""
        t = _theta_array(theta)
        if t.shape != (self.n_params,):
            raise ValueError(f"theta: expected shape ({self.n_params},), got {t.shape}")
        return {
            nat: math.exp(v) if k in _SCALES else float(v)
            for k, nat, v in zip(self.theta_names, self.natural_names, t, strict=True)
        }

    def theta(self, params: Mapping[str, float]) -> np.ndarray:
        """Inverse of `natural`: ``{"A", "B", "E", "alpha", ...}`` -> log-space ``theta``."""
        if not isinstance(params, Mapping):
            raise TypeError(
                f"params: expected a mapping such as FitResult.params, got {params!r:.60}"
            )
        need = list(self.natural_names)
        missing = [k for k in need if k not in params]
        if missing:
            raise ValueError(f"params: missing {missing} for the {self.name} law")
        for k in need:
            v = params[k]
            if not isinstance(v, (int, float, np.number)) or isinstance(v, bool):
                raise TypeError(f"params[{k!r}]: expected a number, got {v!r}")
            if not math.isfinite(v):
                raise ValueError(f"params[{k!r}]: expected a finite number, got {v!r}")
        for k in _SCALES.values():
            if k in need and not params[k] > 0:
                raise ValueError(f"params[{k!r}]: expected > 0, got {params[k]!r}")
        return np.array(
            [
                math.log(params[nat]) if k in _SCALES else float(params[nat])
                for k, nat in zip(self.theta_names, self.natural_names, strict=True)
            ]
        )

    @property
    def term_names(self) -> tuple[str, ...]:
        """The log-terms of the law, in ``("N", "D", "E")`` order, those its parameters enter."""
        used = {TERM_OF[k] for k in self.theta_names}
        return tuple(t for t in ("N", "D", "E") if t in used)

    @property
    def n_terms(self) -> int:
        return len(self.term_names)

    @property
    def groups(self) -> tuple[int, ...]:
        """Which log-term (an index into `term_names`) each parameter of ``theta`` enters."""
        return tuple(self.term_names.index(TERM_OF[k]) for k in self.theta_names)

    def features(self, data: ScalingData) -> np.ndarray:
        """``(n, p)``: term ``k`` is ``sum_{p in group k} theta_p F[:, p]`` (1 for a, b, e;
        -log N, -log D, -log Q for alpha, beta, gamma)."""
        one = np.ones(len(data))
        cols = [
            one if FEATURE_OF[k] is None else -getattr(data, str(FEATURE_OF[k]))
            for k in self.theta_names
        ]
        return np.stack(cols, axis=1)

    def terms(self, theta: ArrayLike, data: ScalingData) -> np.ndarray:
        """The log-terms ``(n_terms, ..., n)`` for ``theta`` of shape ``(..., p)``."""
        t = _theta_array(theta)
        if t.ndim == 0 or t.shape[-1] != self.n_params:
            raise ValueError(f"theta: expected last axis {self.n_params}, got shape {t.shape}")
        if not isinstance(data, ScalingData):
            raise TypeError(f"data: expected a ScalingData, got {type(data).__name__}")
        f = self.features(data)
        g = np.array(self.groups)
        return np.stack([t[..., g == k] @ f[:, g == k].T for k in range(self.n_terms)])

    def log_predict(self, theta: ArrayLike, data: ScalingData) -> np.ndarray:
        """``log L_hat`` of shape ``(..., n)``: log-sum-exp of the three terms."""
        z = self.terms(theta, data)
        m = z.max(axis=0)
        return m + np.log(np.exp(np.maximum(z - m, _FLOOR)).sum(axis=0))

    def predict(self, theta: ArrayLike, data: ScalingData) -> np.ndarray:
        """``L_hat = E + A/N^alpha + B/(D^beta Q^gamma)`` of shape ``(..., n)``."""
        return np.exp(self.log_predict(theta, data))

    def log_predict_and_softmax(
        self, theta: ArrayLike, data: ScalingData
    ) -> tuple[np.ndarray, np.ndarray]:
        """``log L_hat`` ``(..., n)`` and the softmax weights ``w_k`` of the terms ``(n_terms, ..., n)``.

        The Jacobian is ``d log L_hat / d theta_p = w_{group(p)} F[:, p]`` (see `features`):
        d/da = w_N, d/dalpha = -w_N log N, d/db = w_D, d/dbeta = -w_D log D,
        d/dgamma = -w_D log Q, d/de = w_E.
        """
        z = self.terms(theta, data)
        m = z.max(axis=0)
        ez = np.exp(np.maximum(z - m, _FLOOR))
        s = ez.sum(axis=0)
        return m + np.log(s), ez / s

    def log_predict_and_jacobian(
        self, theta: ArrayLike, data: ScalingData
    ) -> tuple[np.ndarray, np.ndarray]:
        """``log L_hat`` ``(..., n)`` and its Jacobian in ``theta``, ``(..., n, p)``."""
        f, w = self.log_predict_and_softmax(theta, data)
        feats = self.features(data)
        jac = np.stack([w[k] * feats[:, p] for p, k in enumerate(self.groups)], axis=-1)
        return f, jac


CHINCHILLA = ScalingLaw("chinchilla", ("a", "b", "e", "alpha", "beta"), uses_quality=False)
QUALITY = ScalingLaw("quality", ("a", "b", "e", "alpha", "beta", "gamma"), uses_quality=True)
QUALITY_FIXED_N = ScalingLaw("quality_fixed_n", ("b", "e", "beta", "gamma"), uses_quality=True)
"""``L(D, Q) = E + B / (D^beta Q^gamma)`` at one model size: the four parameters the paper fits."""
LAWS = {law.name: law for law in (CHINCHILLA, QUALITY, QUALITY_FIXED_N)}


def get_law(law: str | ScalingLaw) -> ScalingLaw:
    """``"chinchilla"`` / ``"quality"`` / ``"quality_fixed_n"`` (or a `ScalingLaw`) -> the law."""
    if isinstance(law, ScalingLaw):
        return law
    if not isinstance(law, str) or law not in LAWS:
        raise ValueError(f"law: expected one of {sorted(LAWS)}, got {law!r}")
    return LAWS[law]


def _theta_array(theta: ArrayLike) -> np.ndarray:
    raw = np.asarray(theta)
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"theta: expected an array of numbers, got dtype {raw.dtype}")
    t = raw.astype(float)
    if not np.all(np.isfinite(t)):
        raise ValueError("theta: expected finite values, got NaN or inf")
    return t


def huber(r: np.ndarray, delta: float) -> np.ndarray:
    """Huber_delta(r) = r^2/2 for |r| <= delta, else delta (|r| - delta/2) (scipy.special.huber)."""
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def huber_grad(r: np.ndarray, delta: float) -> np.ndarray:
    """psi(r) = d Huber_delta / dr = clip(r, -delta, delta)."""
    return np.clip(r, -delta, delta)


def _positive_column(x: ArrayLike, name: str, upper: float = math.inf) -> np.ndarray:
    raw = np.asarray(x)
    if raw.dtype.kind not in "iuf":  # strings would be parsed silently by astype(float)
        raise TypeError(
            f"{name}: expected a 1-D array of numbers, got dtype {raw.dtype} ({x!r:.60})"
        )
    a = raw.astype(float)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array (one entry per run), got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name}: expected at least one row, got an empty array")
    if not np.all(np.isfinite(a)):
        i = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValueError(f"{name}: expected finite values, got {a[i]} at row {i}")
    if not np.all(a > 0):
        i = int(np.argmin(a))
        raise ValueError(f"{name}: expected values > 0, got {a[i]!r} at row {i}")
    if np.any(a > upper):
        i = int(np.argmax(a))
        raise ValueError(
            f"{name}: expected values in (0, {upper:g}] (1 = clean data), got {a[i]!r} at row {i}"
        )
    return a


class ScalingData:
    """Rows ``(N, D, Q, loss)`` of training runs, validated: every column 1-D, non-empty,
    numeric, positive and finite, Q at most 1.

    `N` parameters, `D` training tokens, `Q` data quality (1 = clean; defaults to all ones),
    `loss` the evaluation loss in nats. The logs are precomputed once (``log_n`` ...).
    """

    def __init__(
        self, N: ArrayLike, D: ArrayLike, loss: ArrayLike, Q: ArrayLike | None = None
    ) -> None:
        self.N = _positive_column(N, "N")
        self.D = _positive_column(D, "D")
        self.loss = _positive_column(loss, "loss")
        self.Q = np.ones_like(self.N) if Q is None else _positive_column(Q, "Q", upper=1.0)
        lengths = {"N": len(self.N), "D": len(self.D), "loss": len(self.loss), "Q": len(self.Q)}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"N, D, loss, Q: expected equal lengths, got {lengths}")
        self.log_n = np.log(self.N)
        self.log_d = np.log(self.D)
        self.log_q = np.log(self.Q)
        self.log_loss = np.log(self.loss)

    def __len__(self) -> int:
        return len(self.N)

    def __repr__(self) -> str:
        return f"ScalingData(rows={len(self)})"

    def subset(self, index: ArrayLike) -> ScalingData:
        """The rows at `index` (integer or boolean array)."""
        i = np.asarray(index)
        if i.dtype.kind not in "iub":
            raise TypeError(f"index: expected integer or boolean indices, got dtype {i.dtype}")
        if i.dtype.kind == "b" and i.shape != (len(self),):
            raise ValueError(
                f"index: expected a boolean mask of shape ({len(self)},), got {i.shape}"
            )
        if i.dtype.kind != "b" and i.size and (i.max() >= len(self) or i.min() < -len(self)):
            raise ValueError(
                f"index: expected row numbers in [0, {len(self)}), got {i.min()}..{i.max()}"
            )
        return ScalingData(self.N[i], self.D[i], self.loss[i], self.Q[i])
