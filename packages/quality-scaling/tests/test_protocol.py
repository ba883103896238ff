"""The paper's protocol: the one-model-size law, sample-level corruption, Q = exp(-Delta), the
known noisy floor, the Delta L diagnostic and the acceptance test (planted recovery by Huber)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import TRUE, synthetic
from hypothesis import given, settings
from hypothesis import strategies as st
from quality_scaling.data import MarkovSource, corrupt
from quality_scaling.experiments.protocol import (
    LEAST_SQUARES_DELTA,
    delta_loss,
    floor_corrected,
    protocol_fits,
)
from quality_scaling.experiments.scales import PAPER_ETAS, SCALES, Protocol
from quality_scaling.fit import fit_law, init_grid, objective
from quality_scaling.laws import QUALITY, QUALITY_FIXED_N, ScalingData
from quality_scaling.quality import (
    deficiency_q,
    markov_deficiency,
    markov_noisy_floor,
    ngram_pairs,
)
from quality_scaling.reference import (
    fit_law_reference,
    log_predict_reference,
    objective_reference,
)

from shared_core.testing import assert_close

PLANTED = {"B": 1441.51, "beta": 0.396, "gamma": 0.401, "E": 3.439}  # the paper's CLM Huber fit
SRC = MarkovSource(vocab_size=32, concentration=0.3, seed=0)


def _protocol_data(params: dict, seed: int, outliers: int = 0, n_seeds: int = 3) -> ScalingData:
    """3 D x 7 Q x `n_seeds` rows from the fixed-N law; Huber-type noise on log-loss (Gaussian
    core, Laplace tails) plus `outliers` rows pushed up by 6-10%."""
    rng = np.random.default_rng(seed)
    D = np.tile(np.repeat([1e8, 1e9, 1e10], len(PAPER_ETAS)), n_seeds)
    Q = np.tile(1 - np.array(PAPER_ETAS), 3 * n_seeds)
    n = len(D)
    clean = QUALITY_FIXED_N.predict(
        QUALITY_FIXED_N.theta(params), ScalingData(np.full(n, 1e8), D, np.ones(n), Q)
    )
    tails = rng.random(n) < 0.15
    noise = np.where(tails, rng.laplace(0, 0.006, n), rng.normal(0, 0.002, n))
    hit = rng.choice(n, size=outliers, replace=False)
    noise[hit] += rng.uniform(0.06, 0.10, outliers)
    return ScalingData(np.full(n, 1e8), D, clean * np.exp(noise), Q)


def test_acceptance_huber_recovers_planted_within_bootstrap_interval() -> None:
    """Acceptance (issue 36): Huber noise with outliers; every planted parameter lies in the
    Huber fit's 95% bootstrap interval, and the fit is closer to gamma than least squares."""
    data = _protocol_data(PLANTED, seed=0, outliers=4)
    huber = fit_law(data, QUALITY_FIXED_N, n_bootstrap=200, seed=0)
    ci = huber.ci
    for k, v in PLANTED.items():
        assert ci[k][0] <= v <= ci[k][1], (k, v, ci[k])
    assert huber.params["gamma"] == pytest.approx(PLANTED["gamma"], abs=0.05)
    ls = fit_law(data, QUALITY_FIXED_N, delta=LEAST_SQUARES_DELTA)
    assert abs(huber.params["gamma"] - PLANTED["gamma"]) < abs(
        ls.params["gamma"] - PLANTED["gamma"]
    )


def test_fixed_n_law_is_the_quality_law_with_the_n_term_in_e() -> None:
    """At one N, E + A/N^alpha + B/(D^beta Q^gamma) = E' + B/(D^beta Q^gamma), E' = E + A/N^alpha."""
    rows = synthetic(n=40, seed=4)
    one_n = ScalingData(np.full(40, 3e7), rows.D, rows.loss, rows.Q)
    e_prime = TRUE["E"] + TRUE["A"] / 3e7 ** TRUE["alpha"]
    fixed = {"B": TRUE["B"], "E": e_prime, "beta": TRUE["beta"], "gamma": TRUE["gamma"]}
    assert_close(
        "log_predict",
        QUALITY.log_predict(QUALITY.theta(TRUE), one_n),
        QUALITY_FIXED_N.log_predict(QUALITY_FIXED_N.theta(fixed), one_n),
        1e-13,
    )
    assert QUALITY_FIXED_N.natural_names == ("B", "E", "beta", "gamma")
    assert init_grid(QUALITY_FIXED_N).shape == (750, 4)


def test_fixed_n_objective_and_fit_match_the_reference() -> None:
    data = _protocol_data(PLANTED, seed=1)
    t = QUALITY_FIXED_N.theta(PLANTED) + np.random.default_rng(0).normal(0, 0.05, (6, 4))
    assert_close(
        "log_predict",
        np.array([log_predict_reference(x, QUALITY_FIXED_N, data) for x in t]),
        QUALITY_FIXED_N.log_predict(t, data),
        1e-12,
    )
    ref = [objective_reference(x, QUALITY_FIXED_N, data) for x in t]
    assert_close("objective", ref, objective(t, QUALITY_FIXED_N, data), 1e-12)
    grid = init_grid(QUALITY_FIXED_N, b=(0, 10), e=(-1, 1), beta=(0, 1), gamma=(0, 1))
    fast = fit_law(data, QUALITY_FIXED_N, grid=grid)
    slow = fit_law_reference(data, QUALITY_FIXED_N, grid=grid)
    assert fast.objective <= slow.objective * (1 + 1e-6)
    assert_close("theta", slow.theta, fast.theta, 1e-3)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=4, max_size=4))
def test_fixed_n_jacobian_matches_finite_differences(theta: list[float]) -> None:
    data = _protocol_data(PLANTED, seed=2, n_seeds=1)
    t = np.array(theta)
    _, jac = QUALITY_FIXED_N.log_predict_and_jacobian(t, data)
    eps = 1e-6
    for p in range(4):
        e = np.zeros(4)
        e[p] = eps
        fd = (
            QUALITY_FIXED_N.log_predict(t + e, data) - QUALITY_FIXED_N.log_predict(t - e, data)
        ) / (2 * eps)
        np.testing.assert_allclose(jac[:, p], fd, rtol=1e-5, atol=1e-7)


def test_least_squares_delta_gives_squared_residuals() -> None:
    data = _protocol_data(PLANTED, seed=3)
    t = QUALITY_FIXED_N.theta(PLANTED)
    r = QUALITY_FIXED_N.log_predict(t, data) - data.log_loss
    assert np.abs(r).max() < LEAST_SQUARES_DELTA
    assert objective(t, QUALITY_FIXED_N, data, delta=LEAST_SQUARES_DELTA) == pytest.approx(
        0.5 * float(r @ r), rel=1e-12
    )


def test_sample_corruption_hits_eta_of_the_rows_and_half_their_tokens() -> None:
    seqs = np.full((400, 17), 31, dtype=np.int64)
    out = corrupt(seqs, "samples", 0.25, 31, np.random.default_rng(0))  # replacements never 31
    changed = (out != seqs).sum(axis=1)
    assert (changed > 0).sum() == 100
    assert set(changed[changed > 0]) == {round(0.5 * 17)}
    same = corrupt(seqs, "samples", 0.25, 31, np.random.default_rng(0))
    np.testing.assert_array_equal(out, same)
    mask = np.arange(17) >= 9
    only = corrupt(seqs, "samples", 0.5, 31, np.random.default_rng(1), positions=mask)
    assert not (only[:, ~mask] != 31).any()
    assert set((only != seqs).sum(axis=1)) == {0, 4}  # round(0.5 * 8)
    np.testing.assert_array_equal(corrupt(seqs, "samples", 0.0, 31, np.random.default_rng(0)), seqs)


def test_noisy_floor_closed_forms() -> None:
    h = SRC.entropy_rate
    assert markov_noisy_floor(SRC, 0.0, "samples") == pytest.approx(h, abs=1e-12)
    assert markov_noisy_floor(SRC, 0.0) == pytest.approx(h, abs=1e-12)
    p, v = 0.2, SRC.vocab_size
    joint = SRC.pi[:, None] * SRC.P
    k = (1 - p) * np.eye(v) + p / v
    noisy = k @ joint @ k.T
    want = -float((joint * np.log(noisy / noisy.sum(1, keepdims=True))).sum())
    assert markov_noisy_floor(SRC, p) == pytest.approx(want, rel=1e-12)
    floors = [markov_noisy_floor(SRC, e, "samples") for e in PAPER_ETAS]
    assert np.all(np.diff(floors) > 0)
    for eta, f in zip(PAPER_ETAS, floors, strict=True):
        assert markov_deficiency(SRC, eta, corruption="samples") == pytest.approx(
            math.exp(-(f - h)), rel=1e-12
        )
        assert markov_deficiency(SRC, eta, "ratio", "samples") == pytest.approx(
            (math.log(v) - f) / (math.log(v) - h), rel=1e-12
        )


def test_plugin_deficiency_matches_exact_under_sample_corruption() -> None:
    rng = np.random.default_rng(0)
    clean = SRC.sample(20000, 16, rng)
    held = ngram_pairs(SRC.sample(8000, 16, rng))
    for eta in (0.2, 0.5):
        noisy = corrupt(clean, "samples", eta, 32, np.random.default_rng(1))
        for definition in ("paper", "ratio"):
            q = deficiency_q(
                ngram_pairs(noisy), ngram_pairs(clean), held, 32, definition=definition
            )
            exact = markov_deficiency(SRC, eta, definition, "samples")
            assert q == pytest.approx(exact, abs=0.01), (eta, definition)


def _rows(params: dict, noise: float = 0.0, seed: int = 0) -> list[dict]:
    """Grid-like rows of the protocol drawn from the fixed-N law (floor_noisy: a known shift)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(2):
        for eta in PAPER_ETAS:
            for d in (8192.0, 32768.0, 131072.0):
                q = 1 - eta
                loss = params["E"] + params["B"] / (d ** params["beta"] * q ** params["gamma"])
                out.append(
                    {
                        "key": f"{s}|{eta}|{d}",
                        "seed": s,
                        "rate": eta,
                        "tokens": d,
                        "N": 14304.0,
                        "D": d,
                        "q_proxy": q,
                        "q_deficiency": q,
                        "q_exact": q,
                        "floor": 2.0,
                        "floor_noisy": 2.0 + 0.3 * eta,
                        "loss": loss * math.exp(noise * rng.standard_normal()) + 0.3 * eta,
                    }
                )
    return out


def test_delta_loss_is_a_line_through_the_origin_for_every_d() -> None:
    """Without noise Delta L = B D^-beta (Q^-gamma - 1) exactly (the paper's diagnostic)."""
    p = {"B": 40.0, "beta": 0.3, "gamma": 0.4, "E": 2.5}
    rows = [{**r, "loss": r["loss"] - 0.3 * r["rate"]} for r in _rows(p)]
    pts = delta_loss(rows, p["gamma"])
    assert len(pts) == 3 * (len(PAPER_ETAS) - 1)
    for r in pts:
        assert r["delta_L"] == pytest.approx(p["B"] * r["D"] ** -p["beta"] * r["x"], rel=1e-9)


def test_protocol_fits_and_the_known_floor_fix() -> None:
    """Rows whose loss carries a known Q-dependent floor shift: the plain fit inflates gamma,
    the floor-corrected fit recovers the planted one."""
    p = {"B": 10.0, "beta": 0.3, "gamma": 0.4, "E": 2.5}
    fits = protocol_fits(_rows(p, noise=0.001), n_bootstrap=20, seed=0)
    fixed = fits.fits["Huber, Q = 1 - eta, known floor shift removed (ours)"]
    assert fixed.params["gamma"] == pytest.approx(p["gamma"], abs=0.05)
    assert fits.huber.params["gamma"] > fixed.params["gamma"] + 0.05
    table = fits.tables["paper's protocol: fitted B, beta, gamma, E (95% bootstrap CI)"]
    assert {r["fit"] for r in table} == set(fits.fits)
    lines = fits.tables["paper's protocol: Delta L vs Q^-gamma - 1 per D"]
    assert len(lines) == 3 and all(r["r2"] > 0.9 for r in lines)
    corrected = floor_corrected(_rows(p))
    assert corrected[-1]["loss"] == pytest.approx(
        p["E"] + p["B"] / (131072.0 ** p["beta"] * 0.5 ** p["gamma"]), rel=1e-12
    )


def test_scales_follow_the_paper_grid() -> None:
    small = SCALES["small"].protocol
    assert small.etas == PAPER_ETAS and len(set(small.tokens)) == 3 and small.n_seeds == 3
    assert len(small.cells(0)) == 63
    assert {c.corruption for c in small.cells(0)} == {"samples"}
    assert len({c.d_model for c in small.cells(0)}) == 1


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: corrupt(
                np.zeros((4, 5), np.int64), "samples", 1.0, 8, np.random.default_rng(0)
            ),
            "rate: expected 0 <= rate < 1",
        ),
        (
            lambda: corrupt(
                np.zeros((4, 5), np.int64), "samples", -0.1, 8, np.random.default_rng(0)
            ),
            "rate: expected 0 <= rate < 1",
        ),
        (
            lambda: corrupt(
                np.zeros((4, 5), np.int64),
                "samples",
                0.2,
                8,
                np.random.default_rng(0),
                token_fraction=0.0,
            ),
            "token_fraction: expected .* in \\(0, 1\\], got 0.0",
        ),
        (
            lambda: corrupt(
                np.zeros((4, 5), np.int64),
                "samples",
                0.2,
                8,
                np.random.default_rng(0),
                token_fraction=1.5,
            ),
            "token_fraction: expected .* got 1.5",
        ),
        (
            lambda: Protocol(32, (1024, 1024)),
            "tokens: expected at least two distinct token budgets",
        ),
        (
            lambda: Protocol(32, (1024, 2048), etas=(0.0, 1.0)),
            "etas: expected fractions of corrupted samples in \\[0, 1\\), got 1.0",
        ),
        (lambda: Protocol(32, (1024, 2048), etas=(0.1, 0.2)), "etas: expected 0"),
        (lambda: Protocol(32, (1024, 2048), n_seeds=0), "n_seeds: expected a positive int"),
        (lambda: markov_noisy_floor(SRC, 0.1, "samples", token_fraction=2.0), "token_fraction"),
        (lambda: markov_noisy_floor(SRC, 0.1, "shuffle"), "corruption: expected"),
        (lambda: markov_deficiency(SRC, 0.1, definition="log"), "definition: expected one of"),
        (
            lambda: protocol_fits([r for r in _rows(PLANTED) if r["D"] == 8192.0], 0),
            "at least two distinct token budgets D",
        ),
        (lambda: protocol_fits([], 0), "rows: expected the protocol's grid rows"),
        (
            lambda: fit_law(
                ScalingData([1e6] * 7, [1e9] * 7, np.linspace(2, 3, 7), np.linspace(0.5, 1, 7)),
                QUALITY_FIXED_N,
            ),
            "at least two distinct D",
        ),
        (lambda: fit_law(synthetic(n=20), QUALITY_FIXED_N), "for one model size"),
    ],
)
def test_bad_protocol_input(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_fit_command_fits_the_fixed_n_law(tmp_path, capsys) -> None:
    import json

    from quality_scaling.cli import main

    d = _protocol_data(PLANTED, seed=5)
    path = tmp_path / "runs.csv"
    lines = ["N,D,q_proxy,loss"] + [
        f"{a},{b},{c},{e}" for a, b, c, e in zip(d.N, d.D, d.Q, d.loss, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    out_path = tmp_path / "fit.json"
    args = ["fit", "--data", str(path), "--law", "quality_fixed_n", "--delta", "1"]
    assert main([*args, "--out", str(out_path)]) == 0
    assert "L(D, Q) = " in capsys.readouterr().out
    out = json.loads(out_path.read_text())
    assert out["params"]["gamma"] == pytest.approx(PLANTED["gamma"], abs=0.05)
    assert set(out["params"]) == {"B", "E", "beta", "gamma", "gamma_over_beta"}
