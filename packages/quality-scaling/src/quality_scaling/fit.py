"""Chinchilla-style fitting of a scaling law, vectorised over the grid of initialisations.

The objective is Hoffmann et al.'s (2022, Approach 3) as Epoch AI re-ran it (Besiroglu et al.
2024): ``sum_i Huber_delta(log L_hat_i - log L_i)`` with ``delta = 1e-3``, minimised from every
point of a grid of initialisations, keeping the best. `reference.fit_law_reference` does exactly
that with one ``scipy.optimize.minimize(method="L-BFGS-B")`` call per start. Here all starts move
at once: a batched Levenberg-Marquardt on the iteratively reweighted (IRLS) Huber majoriser, in
numpy, ``(starts, rows, params)`` at a time; the best few distinct solutions are then polished
with scipy L-BFGS-B on the exact objective and the best is kept.

Why IRLS: ``Huber_delta(r) <= Huber_delta(r0) + psi(r0)(r - r0) + w0 (r - r0)^2 / 2`` with
``w0 = min(1, delta/|r0|)``, so a Gauss-Newton step on the weighted squares is a step on a
majoriser; ``J^T W r`` is the exact gradient. Each step is accepted only if the exact objective
decreases (per start), so every start descends monotonically, as L-BFGS does.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from quality_scaling.laws import CHINCHILLA, ScalingData, ScalingLaw, get_law, huber, huber_grad

__all__ = [
    "DELTA",
    "FitResult",
    "bootstrap",
    "fit_chinchilla",
    "fit_law",
    "holdout_error",
    "init_grid",
    "objective",
    "objective_and_grad",
    "solve_batched",
]

DELTA = 1e-3
"""Huber delta on log-loss residuals (Hoffmann et al. 2022; Besiroglu et al. 2024)."""

# Epoch AI's grid: alpha, beta in {0, .5, ..., 2}, e in {-1, -.5, ..., 1}, a, b in {0, 5, ..., 25}.
GRID_A = tuple(np.arange(0, 30, 5.0))
GRID_B = tuple(np.arange(0, 30, 5.0))
GRID_E = tuple(np.arange(-1, 1.5, 0.5))
GRID_ALPHA = tuple(np.arange(0, 2.5, 0.5))
GRID_BETA = tuple(np.arange(0, 2.5, 0.5))
GRID_GAMMA = tuple(np.arange(0, 2.5, 0.5))


def init_grid(
    law: str | ScalingLaw,
    a: Sequence[float] = GRID_A,
    b: Sequence[float] = GRID_B,
    e: Sequence[float] = GRID_E,
    alpha: Sequence[float] = GRID_ALPHA,
    beta: Sequence[float] = GRID_BETA,
    gamma: Sequence[float] = GRID_GAMMA,
) -> np.ndarray:
    """The Cartesian grid of starting ``theta``, ``(starts, p)``: 4,500 (Chinchilla), 22,500
    (quality) or 750 (quality_fixed_n: b, e, beta, gamma); the axes a law lacks are unused."""
    law = get_law(law)
    by_name = {"a": a, "b": b, "e": e, "alpha": alpha, "beta": beta, "gamma": gamma}
    axes = [by_name[k] for k in law.theta_names]
    for name, ax in zip(law.theta_names, axes, strict=True):
        values = np.asarray(ax, dtype=float) if _numeric(ax) else None
        if values is None or values.ndim != 1 or values.size == 0:
            raise ValueError(f"{name}: expected a non-empty sequence of numbers, got {ax!r:.80}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name}: expected finite grid values, got {ax!r:.80}")
    return np.array(list(itertools.product(*axes)), dtype=float)


def _numeric(x: object) -> bool:
    a = np.asarray(x)
    return a.dtype.kind in "iuf"


def _check_grid(grid: ArrayLike, law: ScalingLaw, name: str = "grid") -> np.ndarray:
    """A ``(starts, p)`` float array of finite starting points, or a ValueError naming `name`."""
    if not _numeric(grid):
        raise TypeError(
            f"{name}: expected a numeric (starts, {law.n_params}) array, got {grid!r:.80}"
        )
    g = np.asarray(grid, dtype=float)
    if g.ndim != 2 or g.shape[1] != law.n_params or g.shape[0] == 0:
        raise ValueError(
            f"{name}: expected shape (starts >= 1, {law.n_params}) for the {law.name} law, "
            f"got {g.shape}"
        )
    if not np.all(np.isfinite(g)):
        raise ValueError(f"{name}: expected finite starting points, got NaN or inf")
    return g


def _check_int(value: object, name: str, low: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}: expected an int >= {low}, got {value!r}")
    return int(value)


def _check_data(data: object) -> ScalingData:
    if not isinstance(data, ScalingData):
        raise TypeError(
            f"data: expected a ScalingData (ScalingData(N, D, loss, Q)), got {type(data).__name__}"
        )
    return data


def _weights(data: ScalingData, weights: ArrayLike | None) -> np.ndarray:
    if weights is None:
        return np.ones(len(data))
    if not _numeric(weights):
        raise TypeError(f"weights: expected numbers, got {weights!r:.80}")
    w = np.asarray(weights, dtype=float)
    if (
        w.ndim not in (1, 2)
        or w.shape[-1] != len(data)
        or not np.all(np.isfinite(w))
        or np.any(w < 0)
    ):
        raise ValueError(f"weights: expected non-negative finite (..., {len(data)}), got {w.shape}")
    return w


def objective(
    theta: ArrayLike,
    law: str | ScalingLaw,
    data: ScalingData,
    delta: float = DELTA,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """``sum_i w_i Huber_delta(log L_hat_i - log L_i)`` for ``theta`` ``(..., p)`` -> ``(...)``."""
    law = get_law(law)
    data = _check_data(data)
    r = law.log_predict(theta, data) - data.log_loss
    return (_weights(data, weights) * huber(r, delta)).sum(axis=-1)


def objective_and_grad(
    theta: np.ndarray,
    law: ScalingLaw,
    data: ScalingData,
    delta: float = DELTA,
    weights: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """The objective of one ``theta`` ``(p,)`` and its exact gradient (for scipy)."""
    f, jac = law.log_predict_and_jacobian(theta, data)  # (n,), (n, p)
    r = f - data.log_loss
    w = _weights(data, weights)
    return float((w * huber(r, delta)).sum()), jac.T @ (w * huber_grad(r, delta))


def solve_batched(
    theta0: np.ndarray,
    law: str | ScalingLaw,
    data: ScalingData,
    delta: float = DELTA,
    weights: np.ndarray | None = None,
    max_iter: int = 100,
    ftol: float = 1e-7,
    chunk: int | None = None,
    screen_iter: int = 20,
    screen_ratio: float = 2.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimise the Huber objective from every row of ``theta0`` ``(S, p)`` at once.

    `weights` is ``(n,)`` (shared) or ``(S, n)`` (one row weighting per start: bootstrap
    counts). Returns ``(theta (S, p), objective (S,))``. Starts stop individually once a step
    lowers their objective by less than ``ftol`` (relative) or the damping saturates.
    Memory is ``chunk * n * p`` floats; `chunk` defaults to about 2**24 / (n p) starts.
    """
    law = get_law(law)
    data = _check_data(data)
    theta0 = _check_grid(theta0, law, "theta0")
    if not (isinstance(delta, (int, float)) and delta > 0 and math.isfinite(delta)):
        raise ValueError(f"delta: expected a finite number > 0, got {delta!r}")
    _check_int(max_iter, "max_iter", 1)
    _check_int(screen_iter, "screen_iter", 0)
    if chunk is not None:
        _check_int(chunk, "chunk", 1)
    if not ftol >= 0:
        raise ValueError(f"ftol: expected >= 0, got {ftol!r}")
    if not screen_ratio >= 1:
        raise ValueError(
            f"screen_ratio: expected >= 1 (inf disables screening), got {screen_ratio!r}"
        )
    w_all = _weights(data, weights)
    if w_all.ndim == 2 and w_all.shape[0] != theta0.shape[0]:
        raise ValueError(
            f"weights: expected (n,) or ({theta0.shape[0]}, {len(data)}) (one row per start), "
            f"got {w_all.shape}"
        )
    s_total, n, p = theta0.shape[0], len(data), law.n_params
    chunk = chunk or max(1, int(2**24 // (n * p)))
    out_theta = np.empty_like(theta0)
    out_f = np.empty(s_total)
    # The GEMMs are thin ((S, n) @ (n, <= 9)): BLAS threads only spin, so run single-threaded.
    with threadpool_limits(limits=1, user_api="blas"):
        for lo in range(0, s_total, chunk):
            hi = min(lo + chunk, s_total)
            w = w_all if w_all.ndim == 1 else w_all[lo:hi]
            out_theta[lo:hi], out_f[lo:hi] = _lm_irls(
                theta0[lo:hi].copy(), law, data, delta, w, max_iter, ftol, screen_iter, screen_ratio
            )
    return out_theta, out_f


class _NormalEquations:
    """``J^T C J`` and ``J^T u`` for a batch of starts, as a few GEMMs against fixed feature products.

    Column p of J is ``w_{k(p)} F[:, p]`` (`ScalingLaw.log_predict_and_softmax`), so
    ``(J^T C J)_{pq} = sum_i c_i w_k w_k' F_ip F_iq``: one ``(s, n) @ (n, m)`` product per pair of
    terms ``(k, k')`` instead of an ``(s, n, p)`` Jacobian.
    """

    def __init__(self, law: ScalingLaw, data: ScalingData) -> None:
        self.p = law.n_params
        self.f = law.features(data)
        g = np.array(law.groups)
        self.n_terms = law.n_terms
        self.cols = [np.flatnonzero(g == k) for k in range(law.n_terms)]
        self.pairs = []
        for k in range(law.n_terms):
            for k2 in range(k, law.n_terms):
                ck, ck2 = self.cols[k], self.cols[k2]
                prod = (self.f[:, ck, None] * self.f[:, None, ck2]).reshape(len(self.f), -1)
                self.pairs.append((k, k2, ck, ck2, prod))

    def __call__(
        self, c: np.ndarray, u: np.ndarray, w: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        s = c.shape[0]
        h = np.empty((s, self.p, self.p))
        g = np.empty((s, self.p))
        for k in range(self.n_terms):
            g[:, self.cols[k]] = (u * w[k]) @ self.f[:, self.cols[k]]
        for k, k2, ck, ck2, prod in self.pairs:
            block = ((c * w[k] * w[k2]) @ prod).reshape(s, len(ck), len(ck2))
            h[:, ck[:, None], ck2[None, :]] = block
            h[:, ck2[:, None], ck[None, :]] = block.transpose(0, 2, 1)
        return h, g


def _lm_irls(
    theta: np.ndarray,
    law: ScalingLaw,
    data: ScalingData,
    delta: float,
    w: np.ndarray,
    max_iter: int,
    ftol: float,
    screen_iter: int,
    screen_ratio: float,
) -> tuple[np.ndarray, np.ndarray]:
    s, p = theta.shape
    y = data.log_loss
    normal = _NormalEquations(law, data)
    lam = np.full(s, 1e-3)
    active = np.arange(s)
    pred, soft = law.log_predict_and_softmax(theta, data)  # (s, n), (n_terms, s, n)
    f_cur = (w * huber(pred - y, delta)).sum(axis=-1)
    eye = np.eye(p)
    for it in range(max_iter):
        if active.size == 0:
            break
        wa = w if w.ndim == 1 else w[active]
        r = pred - y
        c = wa * np.minimum(1.0, delta / np.maximum(np.abs(r), 1e-300))  # IRLS weights
        h, g = normal(c, c * r, soft)  # c r = w psi(r), so g is the exact gradient
        diag = np.einsum("sii->si", h)
        la = lam[active]
        ridge = la[:, None] * diag + 1e-14 * (diag.max(axis=1, keepdims=True) + 1.0)
        damped = h + ridge[..., None] * eye
        try:
            step = -np.linalg.solve(damped, g[..., None])[..., 0]
        except np.linalg.LinAlgError:  # an exactly singular start: fall back to the pseudo-inverse
            step = -np.matmul(np.linalg.pinv(damped), g[..., None])[..., 0]
        cand = theta[active] + step
        pred_new, soft_new = law.log_predict_and_softmax(cand, data)
        f_new = (wa * huber(pred_new - y, delta)).sum(axis=-1)
        f_old = f_cur[active]
        ok = np.isfinite(f_new) & (f_new < f_old)
        theta[active[ok]] = cand[ok]
        f_cur[active[ok]] = f_new[ok]
        pred[ok] = pred_new[ok]
        soft[:, ok] = soft_new[:, ok]
        lam[active] = np.where(ok, np.maximum(la / 3.0, 1e-9), la * 4.0)
        gain = np.where(ok, (f_old - f_new) / np.maximum(np.abs(f_old), 1e-300), np.inf)
        keep = ~((ok & (gain < ftol)) | (lam[active] > 1e10))
        active, pred, soft = active[keep], pred[keep], soft[:, keep]
        if it + 1 == screen_iter and active.size:  # successive halving: drop hopeless starts
            alive = f_cur[active] <= screen_ratio * f_cur.min()
            active, pred, soft = active[alive], pred[alive], soft[:, alive]
    return theta, f_cur


def _polish(
    theta: np.ndarray,
    law: ScalingLaw,
    data: ScalingData,
    delta: float,
    weights: np.ndarray | None,
) -> tuple[np.ndarray, float]:
    # The summed Huber objective is small (~delta * sum|r|); scipy's relative ftol test divides by
    # max(|f|, 1), so without tight tolerances L-BFGS stops early (Besiroglu et al. 2024, Sec. 2).
    res = minimize(
        objective_and_grad,
        theta,
        args=(law, data, delta, weights),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-12},
    )
    return np.asarray(res.x), float(res.fun)


@dataclass
class FitResult:
    """A fitted law: ``theta`` (log space), `params` (natural), objective and bootstrap draws.

    ``samples`` is ``(n_bootstrap, p)`` log-space draws (empty without a bootstrap); `ci`
    gives percentile intervals of the natural parameters at `level`.
    """

    law: ScalingLaw
    theta: np.ndarray
    objective: float
    n_rows: int
    delta: float = DELTA
    samples: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    level: float = 0.95

    @property
    def params(self) -> dict[str, float]:
        """``{"A", "B", "E", "alpha", "beta"[, "gamma"]}``."""
        return self.law.natural(self.theta)

    def derived(self, theta: np.ndarray | None = None) -> dict[str, float]:
        """Natural parameters plus ``gamma_over_beta`` (D_eff = D Q^(gamma/beta)) when Q is used."""
        d = self.law.natural(self.theta if theta is None else theta)
        if self.law.uses_quality:
            d["gamma_over_beta"] = d["gamma"] / d["beta"] if d["beta"] != 0 else float("nan")
        return d

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        """Percentile bootstrap interval of every natural (and derived) parameter."""
        if self.samples.size == 0:
            raise ValueError("ci: this fit has no bootstrap samples; call fit_law(n_bootstrap=...)")
        draws = [self.derived(t) for t in self.samples]
        q = [(1 - self.level) / 2, (1 + self.level) / 2]
        out = {}
        for k in draws[0]:
            lo, hi = np.nanquantile([d[k] for d in draws], q)
            out[k] = (float(lo), float(hi))
        return out

    def predict(self, data: ScalingData) -> np.ndarray:
        """Predicted loss ``(n,)`` of every row of `data`."""
        return self.law.predict(self.theta, _check_data(data))


def bootstrap(
    theta: np.ndarray,
    law: str | ScalingLaw,
    data: ScalingData,
    n_bootstrap: int,
    seed: int = 0,
    delta: float = DELTA,
) -> np.ndarray:
    """Nonparametric bootstrap: refit on ``n_bootstrap`` row resamples (with replacement).

    Each resample is a row-count weighting, started from the full-data optimum `theta`
    (Epoch AI's shortcut); all resamples are solved as one batch. Returns ``(n_bootstrap, p)``.
    """
    law = get_law(law)
    data = _check_data(data)
    n_bootstrap = _check_int(n_bootstrap, "n_bootstrap", 1)
    seed = _check_int(seed, "seed", 0)
    theta = _check_grid(
        np.asarray(theta, dtype=float).reshape(1, -1) if _numeric(theta) else theta, law, "theta"
    )[0]
    rng = np.random.default_rng(seed)
    n = len(data)
    idx = rng.integers(0, n, size=(n_bootstrap, n))
    counts = np.zeros((n_bootstrap, n))
    np.add.at(counts, (np.arange(n_bootstrap)[:, None], idx), 1.0)
    theta0 = np.repeat(np.asarray(theta, dtype=float)[None], n_bootstrap, axis=0)
    # each resample has its own objective, so no screening across them
    samples, _ = solve_batched(
        theta0, law, data, delta, weights=counts, max_iter=500, ftol=1e-10, screen_ratio=np.inf
    )
    return samples


SCREEN_ROWS = 512
"""Above this many rows, `fit_law` screens the starts on a subsample of this size first."""


def _screen_on_subsample(
    grid: np.ndarray, law: ScalingLaw, data: ScalingData, delta: float, rows: int
) -> np.ndarray:
    """The starts worth running on all rows: 20 steps on `rows` random rows, keep those within
    2x of the best objective there, from where they got to.

    Why: the cost of a step is (starts x rows); which starts lead to the basin of the global
    minimum is clear after ~20 steps (the same rule `solve_batched` applies on all rows), and a
    few hundred rows rank the starts as well as thousands do.
    """
    pick = np.sort(np.random.default_rng(0).choice(len(data), size=rows, replace=False))
    theta, f = solve_batched(grid, law, data.subset(pick), delta, max_iter=20, screen_ratio=np.inf)
    finite = np.isfinite(f)
    keep = finite & (f <= 2.0 * f[finite].min())
    return theta[keep]


def fit_law(
    data: ScalingData,
    law: str | ScalingLaw = "quality",
    grid: np.ndarray | None = None,
    delta: float = DELTA,
    n_bootstrap: int = 0,
    level: float = 0.95,
    seed: int = 0,
    polish: int = 5,
    screen_rows: int | None = SCREEN_ROWS,
) -> FitResult:
    """Fit `law` to `data` the Chinchilla way; deterministic given `seed`.

    `law` is ``"quality"`` (the default: ``E + A/N^alpha + B/(D^beta Q^gamma)``, which needs
    two or more distinct Q), ``"quality_fixed_n"`` (``E + B/(D^beta Q^gamma)``, one model
    size: the paper's fit) or ``"chinchilla"`` (Q ignored; also `fit_chinchilla`). Every law
    needs two or more distinct D. `delta` is the Huber threshold on log-loss residuals (a
    value above every residual, e.g. 1, gives least squares).

    1. every start of `grid` (default `init_grid(law)`) is minimised at once (`solve_batched`);
       with more than `screen_rows` rows, the starts first take 20 steps on a fixed random
       subsample of that many rows, and only those within 2x of the best subsample objective
       go on to the full data (None: never subsample);
    2. the `polish` best distinct solutions are refined by scipy L-BFGS-B; the best is kept;
    3. with ``n_bootstrap > 0`` the fit is repeated on row resamples (`bootstrap`) for CIs.
    """
    law = get_law(law)
    data = _check_data(data)
    if len(data) <= law.n_params:
        raise ValueError(
            f"data: the {law.name} law has {law.n_params} parameters; expected more rows than "
            f"that, got {len(data)}"
        )
    if not (isinstance(delta, (int, float)) and math.isfinite(delta) and delta > 0):
        raise ValueError(f"delta: expected a finite number > 0, got {delta!r}")
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise ValueError(f"level: expected a value in (0, 1), got {level!r}")
    _check_int(n_bootstrap, "n_bootstrap", 0)
    _check_int(polish, "polish", 1)
    _check_int(seed, "seed", 0)
    if law.uses_quality and np.ptp(data.log_q) == 0:
        raise ValueError(
            f"data: the quality law needs rows with at least two distinct Q values, got Q = "
            f"{data.Q[0]:g} in every row; to fit Chinchilla (no Q) use fit_chinchilla(data) "
            "or fit_law(data, law='chinchilla')"
        )
    if np.ptp(data.log_d) == 0:
        raise ValueError(
            f"data: the {law.name} law needs rows with at least two distinct D (beta is not "
            f"identifiable from one), got D = {data.D[0]:g} in every row"
        )
    if "alpha" not in law.theta_names and np.ptp(data.log_n) != 0:
        raise ValueError(
            f"data: the {law.name} law is for one model size, got {len(np.unique(data.N))} "
            "distinct N; fit law='quality' across sizes"
        )
    grid = init_grid(law) if grid is None else _check_grid(grid, law)
    if screen_rows is not None and len(data) > _check_int(
        screen_rows, "screen_rows", law.n_params + 1
    ):
        grid = _screen_on_subsample(grid, law, data, delta, screen_rows)
    theta, f = solve_batched(grid, law, data, delta)
    order = np.argsort(np.where(np.isfinite(f), f, np.inf), kind="stable")
    picked: list[np.ndarray] = []
    for i in order:
        if len(picked) == polish:
            break
        if all(np.max(np.abs(theta[i] - t)) > 1e-6 for t in picked):
            picked.append(theta[i])
    polished = [_polish(t, law, data, delta, None) for t in picked]
    best_theta, best_f = min(polished, key=lambda tf: tf[1])
    samples = (
        bootstrap(best_theta, law, data, n_bootstrap, seed, delta)
        if n_bootstrap
        else np.empty((0, law.n_params))
    )
    return FitResult(law, best_theta, best_f, len(data), delta, samples, level)


def fit_chinchilla(
    data: ScalingData,
    grid: np.ndarray | None = None,
    delta: float = DELTA,
    n_bootstrap: int = 0,
    level: float = 0.95,
    seed: int = 0,
    polish: int = 5,
) -> FitResult:
    """Fit Chinchilla's ``L = E + A/N^alpha + B/D^beta`` (Q ignored): `fit_law` with
    ``law="chinchilla"`` and Epoch AI's 4,500-start grid by default.

    Epoch AI's refit of Chinchilla Fig. 4: ``fit_chinchilla(read_epoch_chinchilla(path))``.
    """
    return fit_law(data, CHINCHILLA, grid, delta, n_bootstrap, level, seed, polish)


def holdout_error(fit: FitResult, data: ScalingData) -> dict[str, float]:
    """Out-of-sample error on held-out rows: RMSE of log-loss, mean |relative error| of loss."""
    if not isinstance(fit, FitResult):
        raise TypeError(f"fit: expected a FitResult (from fit_law), got {type(fit).__name__}")
    data = _check_data(data)
    pred = fit.predict(data)
    log_err = np.log(pred) - data.log_loss
    return {
        "rmse_log": float(np.sqrt(np.mean(log_err**2))),
        "mape": float(np.mean(np.abs(pred - data.loss) / data.loss)),
        "max_abs_rel": float(np.max(np.abs(pred - data.loss) / data.loss)),
    }
