"""Bad input to the public API, in one table (issue 46's probe categories: NaN/inf, empty,
shapes, dtypes, ids/sizes/names, types): each case raises a ValueError/TypeError naming the
argument."""

from __future__ import annotations

import pytest
import torch
from vadd import (
    VADD,
    ObjectiveConfig,
    VADDConfig,
    check_distribution,
    checkerboard,
    empirical_table,
    entropy,
    exact_sample_distribution,
    gauss_hermite,
    gaussian_mixture,
    iw_log_likelihood,
    kl_divergence,
    kl_weight,
    latent_quadrature,
    sample,
    sample_table,
    sobol_normal,
)
from vadd.loss import vadd_loss

from shared_core.testing import assert_bad_input

torch.manual_seed(0)
V, L = 4, 2
_M = VADD(VADDConfig(V, L, latent_dim=2, d_model=16, n_heads=2, n_layers=1, latent_hidden=8))
_X = torch.randint(0, V, (3, L))
_BIG_X = _X.clone()
_BIG_X[0, 0] = V
_P = torch.full((V**L,), 1.0 / V**L)
_NAN_P = _P.clone()
_NAN_P[0] = float("nan")

CASES = {
    # configs
    "zero vocabulary": (lambda: VADDConfig(0, L), ValueError, "vocab_size", "0"),
    "negative latent": (lambda: VADDConfig(V, L, latent_dim=-1), ValueError, "latent_dim"),
    "heads not dividing d_model": (
        lambda: VADDConfig(V, L, d_model=16, n_heads=3),
        ValueError,
        "n_heads",
    ),
    "unknown objective": (lambda: ObjectiveConfig(objective="zzz"), ValueError, "objective", "zzz"),
    "negative anneal": (lambda: ObjectiveConfig(anneal_steps=-1), ValueError, "anneal_steps"),
    "model from a dict": (lambda: VADD({"vocab_size": V}), TypeError, "cfg"),
    # the model and the loss
    "loss on ids past the vocabulary": (lambda: vadd_loss(_M, _BIG_X), ValueError, "x0"),
    "loss on float tokens": (lambda: vadd_loss(_M, _X.float()), TypeError, "x0"),
    "loss on the wrong length": (lambda: vadd_loss(_M, _X[:, :1]), ValueError, "x0"),
    "loss on an empty batch": (lambda: vadd_loss(_M, _X[:0]), ValueError, "x0"),
    "loss unknown objective": (lambda: vadd_loss(_M, _X, objective="zzz"), ValueError, "objective"),
    "loss NaN KL weight": (
        lambda: vadd_loss(_M, _X, kl_weight=float("nan")),
        ValueError,
        "kl_weight",
    ),
    "loss on NaN times": (
        lambda: vadd_loss(_M, _X, t=torch.tensor([0.5, float("nan"), 0.5])),
        ValueError,
        "t",
    ),
    "logits with z of the wrong width": (
        lambda: _M.logits(_X, torch.full((3,), 0.5), torch.zeros(3, 5)),
        ValueError,
        "z",
    ),
    "logits with NaN z": (
        lambda: _M.logits(_X, torch.full((3,), 0.5), torch.full((3, 2), float("nan"))),
        ValueError,
        "z",
    ),
    "kl_weight negative step": (lambda: kl_weight(-1, 10), ValueError, "step"),
    # sampling and likelihoods
    "sample zero steps": (lambda: sample(_M, steps=0), ValueError, "steps", "0"),
    "sample unknown latent": (
        lambda: sample(_M, steps=2, latent="zzz"),
        ValueError,
        "latent",
        "zzz",
    ),
    "sample NaN temperature": (
        lambda: sample(_M, steps=2, temperature=float("nan")),
        ValueError,
        "temperature",
    ),
    "iw likelihood zero importance samples": (
        lambda: iw_log_likelihood(_M, _X, 2, n_importance=0),
        ValueError,
        "n_importance",
    ),
    "iw likelihood unknown proposal": (
        lambda: iw_log_likelihood(_M, _X, 2, proposal="zzz"),
        ValueError,
        "proposal",
    ),
    "iw likelihood on ids past the vocabulary": (
        lambda: iw_log_likelihood(_M, _BIG_X, 2),
        ValueError,
        "x0",
    ),
    "exact distribution unknown quadrature": (
        lambda: exact_sample_distribution(_M, 2, quadrature="zzz"),
        ValueError,
        "quadrature",
    ),
    "exact distribution NaN latents": (
        lambda: exact_sample_distribution(
            _M, 2, latents=torch.full((4, 2), float("nan")), weights=torch.full((4,), 0.25)
        ),
        ValueError,
        "latents",
    ),
    "sobol zero points": (lambda: sobol_normal(2, 0), ValueError, "n"),
    "gauss-hermite zero nodes": (lambda: gauss_hermite(2, 0), ValueError, "n_nodes"),
    "latent quadrature zero dims": (lambda: latent_quadrature(0), ValueError, "latent_dim"),
    # distributions and data
    "distribution with NaN": (lambda: check_distribution("p", _NAN_P), ValueError, "p"),
    "distribution not summing to 1": (lambda: check_distribution("p", 2 * _P), ValueError, "p"),
    "distribution negative": (lambda: check_distribution("p", _P - 0.5), ValueError, "p"),
    "KL of different sizes": (lambda: kl_divergence(_P, _P[:-1]), ValueError, "q"),
    "entropy of NaN": (lambda: entropy(_NAN_P), ValueError, "p"),
    "sample_table zero draws": (
        lambda: sample_table(torch.full((4, 4), 1 / 16), 0),
        ValueError,
        "n",
    ),
    "sample_table NaN table": (
        lambda: sample_table(torch.full((4, 4), float("nan")), 5),
        ValueError,
        "P",
    ),
    "empirical_table ids past the vocabulary": (
        lambda: empirical_table(_BIG_X, V),
        ValueError,
        "x",
    ),
    "empirical_table float tokens": (lambda: empirical_table(_X.float(), V), TypeError, "x"),
    "empirical_table empty": (lambda: empirical_table(_X[:0], V), ValueError, "x"),
    "gaussian_mixture inf std": (lambda: gaussian_mixture(std=float("inf")), ValueError, "std"),
    "checkerboard zero bins": (lambda: checkerboard(0), ValueError, "bins"),
    "gaussian_mixture NaN radius": (
        lambda: gaussian_mixture(radius=float("nan")),
        ValueError,
        "radius",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str) -> None:
    assert_bad_input(*CASES[case])
