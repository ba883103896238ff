"""What a user would otherwise fit, all with ``fit(X, y)`` and ``log_density(X, y)``:

- `GaussianMixtureBaseline`: scikit-learn's ``GaussianMixture`` on y alone (no rules, no x),
  its size chosen by BIC.
- `TreeGaussian`: scikit-learn's ``DecisionTreeRegressor`` with a full-covariance Gaussian per
  leaf (the CDTree idea with a CART tree), at a given number of leaves.
- `MixtureDensityNetwork`: an MLP that outputs a Gaussian mixture (Bishop 1994), trained through
  `shared_core.train.fit`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from explainable_mixtures._checks import as_matrix, check_positive_int, check_same_rows


def _xy(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    x, t = as_matrix("X", X), as_matrix("y", y)
    check_same_rows(x, t)
    return x, t


def _gaussian_log_pdf(t: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Row-wise ``log N(t_n; mean, cov)`` for ``(n, d)`` rows."""
    L = np.linalg.cholesky(cov)
    white = np.linalg.solve(L, (t - mean).T).T
    d = t.shape[1]
    return -0.5 * (white**2).sum(1) - np.log(np.diag(L)).sum() - 0.5 * d * math.log(2 * math.pi)


class GaussianMixtureBaseline:
    """``GaussianMixture`` on y, with 1..max_components components chosen by BIC."""

    def __init__(self, max_components: int = 8, seed: int = 0) -> None:
        self.max_components = check_positive_int("max_components", max_components)
        self.seed = seed

    def fit(self, X: Any, y: Any) -> GaussianMixtureBaseline:
        from sklearn.mixture import GaussianMixture

        _, t = _xy(X, y)
        fits = [
            GaussianMixture(k, covariance_type="full", random_state=self.seed, reg_covar=1e-6).fit(
                t
            )
            for k in range(1, self.max_components + 1)
        ]
        self.model_ = min(fits, key=lambda g: g.bic(t))
        self.n_components_ = int(self.model_.n_components)
        return self

    def log_density(self, X: Any, y: Any) -> np.ndarray:
        _, t = _xy(X, y)
        return np.asarray(self.model_.score_samples(t))


class TreeGaussian:
    """A CART regression tree on ``(x, y)`` with a Gaussian fitted to each leaf's targets."""

    def __init__(self, max_leaves: int, min_leaf: int = 20, seed: int = 0) -> None:
        self.max_leaves = check_positive_int("max_leaves", max_leaves)
        self.min_leaf = check_positive_int("min_leaf", min_leaf)
        self.seed = seed

    def fit(self, X: Any, y: Any) -> TreeGaussian:
        from sklearn.tree import DecisionTreeRegressor

        x, t = _xy(X, y)
        self.tree_ = DecisionTreeRegressor(
            max_leaf_nodes=max(2, self.max_leaves),
            min_samples_leaf=self.min_leaf,
            random_state=self.seed,
        ).fit(x, t)
        leaves = self.tree_.apply(x)
        self.leaves_: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        floor = 1e-6 * np.atleast_2d(np.cov(t.T)) + 1e-12 * np.eye(t.shape[1])
        for leaf in np.unique(leaves):
            rows = t[leaves == leaf]
            cov = np.atleast_2d(np.cov(rows.T, bias=True)) + floor
            self.leaves_[int(leaf)] = (rows.mean(0), cov)
        return self

    def log_density(self, X: Any, y: Any) -> np.ndarray:
        x, t = _xy(X, y)
        leaves = self.tree_.apply(x)
        out = np.empty(len(t))
        for leaf, (mean, cov) in self.leaves_.items():
            rows = leaves == leaf
            if rows.any():
                out[rows] = _gaussian_log_pdf(t[rows], mean, cov)
        return out


class MixtureDensityNetwork:
    """MLP ``x -> (pi, mu, sigma)`` of a diagonal Gaussian mixture with `k` components.

    Features and targets are standardised; trained by AdamW through `shared_core.train.fit`,
    with early stopping: a `valid` share of the training rows is held out and the weights with
    the best held-out NLL (checked every `eval_every` steps) are kept, as a user would.
    """

    def __init__(
        self,
        k: int = 5,
        hidden: int = 64,
        steps: int = 1500,
        lr: float = 3e-3,
        batch_size: int = 512,
        valid: float = 0.2,
        eval_every: int = 50,
        seed: int = 0,
        device: str = "cpu",
    ) -> None:
        if not 0.0 <= valid < 1.0:
            raise ValueError(f"valid: expected a held-out share in [0, 1), got {valid!r}")
        self.valid = valid
        self.eval_every = check_positive_int("eval_every", eval_every)
        self.k = check_positive_int("k", k)
        self.hidden = check_positive_int("hidden", hidden)
        self.steps = check_positive_int("steps", steps)
        self.lr = lr
        self.batch_size = check_positive_int("batch_size", batch_size)
        self.seed = seed
        self.device = device

    def fit(self, X: Any, y: Any) -> MixtureDensityNetwork:
        import torch
        from torch import nn

        from shared_core.device import seed_everything
        from shared_core.train import TrainConfig, fit, step_generator

        x, t = _xy(X, y)
        self.x_loc_, self.x_scale_ = x.mean(0), x.std(0) + 1e-12
        self.y_loc_, self.y_scale_ = t.mean(0), t.std(0) + 1e-12
        seed_everything(self.seed)
        d, dy = x.shape[1], t.shape[1]
        self.net_ = nn.Sequential(
            nn.Linear(d, self.hidden),
            nn.Tanh(),
            nn.Linear(self.hidden, self.hidden),
            nn.Tanh(),
            nn.Linear(self.hidden, self.k * (1 + 2 * dy)),
        )
        xs = torch.as_tensor((x - self.x_loc_) / self.x_scale_, dtype=torch.float32)
        ys = torch.as_tensor((t - self.y_loc_) / self.y_scale_, dtype=torch.float32)
        order = torch.randperm(len(xs), generator=torch.Generator().manual_seed(self.seed))
        cut = len(xs) - int(self.valid * len(xs))
        xv, yv = xs[order[cut:]], ys[order[cut:]]
        xs, ys = xs[order[:cut]], ys[order[:cut]]
        n = len(xs)
        best: dict[str, Any] = {"nll": math.inf, "state": None}

        def keep_best(step: int, record: dict[str, float]) -> None:
            if len(xv) == 0 or (step % self.eval_every and step != self.steps):  # 1-based
                return
            with torch.no_grad():
                dev = next(self.net_.parameters()).device
                nll = -float(self._log_density_std(self.net_, xv.to(dev), yv.to(dev)).mean())
            if nll < best["nll"]:
                best["nll"] = nll
                best["state"] = {
                    k: v.detach().cpu().clone() for k, v in self.net_.state_dict().items()
                }

        def batch_fn(step: int) -> dict[str, Any]:
            if n <= self.batch_size:
                return {"x": xs, "y": ys}
            idx = torch.randint(n, (self.batch_size,), generator=step_generator(self.seed, step))
            return {"x": xs[idx], "y": ys[idx]}

        def loss_fn(net: Any, batch: dict[str, Any]) -> Any:
            return -self._log_density_std(net, batch["x"], batch["y"]).mean()

        fit(
            self.net_,
            loss_fn,
            batch_fn,
            TrainConfig(steps=self.steps, lr=self.lr, warmup=50, weight_decay=0.0),
            callback=keep_best,
            desc="mdn train",
            show_progress=False,
            device=self.device,
        )
        self.net_.to("cpu")
        if best["state"] is not None:
            self.net_.load_state_dict(best["state"])
        return self

    def _log_density_std(self, net: Any, x: Any, y: Any) -> Any:
        import torch

        out = net(x)
        k, dy = self.k, y.shape[1]
        logits = out[:, :k]
        mu = out[:, k : k + k * dy].reshape(-1, k, dy)
        log_sigma = (
            out[:, k + k * dy :].reshape(-1, k, dy).clamp(-3.0, 5.0)
        )  # sigma >= 0.05 target std
        z = (y[:, None, :] - mu) / torch.exp(log_sigma)
        log_n = (-0.5 * z**2 - log_sigma - 0.5 * math.log(2 * math.pi)).sum(-1)
        return torch.logsumexp(torch.log_softmax(logits, -1) + log_n, -1)

    def log_density(self, X: Any, y: Any) -> np.ndarray:
        import torch

        x, t = _xy(X, y)
        xs = torch.as_tensor((x - self.x_loc_) / self.x_scale_, dtype=torch.float32)
        ys = torch.as_tensor((t - self.y_loc_) / self.y_scale_, dtype=torch.float32)
        with torch.no_grad():
            ll = self._log_density_std(self.net_, xs, ys).double().numpy()
        return ll - np.log(self.y_scale_).sum()
