import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn import metrics as sk

from shared_core import metrics as m


@given(st.integers(0, 1000))
@settings(max_examples=25, deadline=None)
def test_roc_auc_matches_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 60)
    y[:2] = [0, 1]
    s = rng.integers(0, 5, 60).astype(float)  # many ties
    assert m.roc_auc(y, s) == pytest.approx(sk.roc_auc_score(y, s), abs=1e-12)


def test_roc_auc_extremes_and_errors():
    assert m.roc_auc([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0
    assert m.roc_auc([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1]) == 0.0
    with pytest.raises(ValueError, match="both classes"):
        m.roc_auc([1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="NaN"):
        m.roc_auc([0, 1], [0.1, float("nan")])


def test_regression_metrics_match_sklearn():
    rng = np.random.default_rng(0)
    t, p = rng.normal(size=100), rng.normal(size=100)
    assert m.mae(t, p) == pytest.approx(sk.mean_absolute_error(t, p))
    assert m.rmse(t, p) == pytest.approx(math.sqrt(sk.mean_squared_error(t, p)))
    assert m.r2_score(t, p) == pytest.approx(sk.r2_score(t, p))
    assert m.r2_score(t, np.full(100, t.mean())) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="shape"):
        m.mae(t, p[:5])


def test_accuracy_labels_and_scores():
    assert m.accuracy([0, 1, 2], [0, 1, 1]) == pytest.approx(2 / 3)
    assert m.accuracy([0, 1], [[0.9, 0.1], [0.2, 0.8]]) == 1.0


def test_nll_units_and_perplexity():
    lp = np.log([0.5, 0.25])
    nats = m.nll(lp)
    assert nats == pytest.approx(-np.mean(lp))
    assert m.nll(lp, base=2) == pytest.approx(1.5)
    assert m.bits_per_dim(nats) == pytest.approx(1.5)
    assert m.perplexity(math.log(7.0)) == pytest.approx(7.0)
    assert m.nll(lp) == pytest.approx(sk.log_loss([0, 1], [[0.5, 0.5], [0.75, 0.25]]))
    with pytest.raises(ValueError, match="<= 0"):
        m.nll([0.3])


def test_bootstrap_ci_covers_estimate_and_matches_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 1.0, 400)
    est, lo, hi = m.bootstrap_ci(lambda a: float(np.mean(a)), x, n_resamples=2000, seed=0)
    assert lo < est < hi
    ref = stats.bootstrap((x,), np.mean, n_resamples=2000, method="percentile", random_state=0)
    assert lo == pytest.approx(ref.confidence_interval.low, abs=0.03)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=0.03)


def test_unigram_entropy_and_cross_entropy():
    x = np.arange(8).repeat(3)
    assert m.unigram_entropy(x, 8) == pytest.approx(3.0)
    assert m.unigram_entropy(np.zeros(5, dtype=int), 8) == 0.0
    assert m.unigram_entropy(x, 8, base=math.e) == pytest.approx(math.log(8))
    # add-one smoothing over a uniform sample is uniform: log2(V) bits
    assert m.unigram_cross_entropy(x, x, 8) == pytest.approx(3.0)
    assert m.unigram_cross_entropy(np.zeros(10, dtype=int), [0], 2) == pytest.approx(
        -math.log2(11 / 12)
    )
    with pytest.raises(ValueError, match="token ids"):
        m.unigram_entropy([0, 9], 8)
    with pytest.raises(ValueError, match="integer"):
        m.unigram_entropy([0.5], 8)


def test_frechet_distance_limits():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4000, 3))
    assert m.frechet_distance(a, a) == pytest.approx(0.0, abs=1e-8)
    shift = np.array([1.0, -2.0, 0.5])
    # same covariance, shifted mean: the distance is |shift|^2
    assert m.frechet_distance(a, a + shift) == pytest.approx(float(shift @ shift), rel=1e-6)
    # N(0, I) vs N(0, 4 I) in d = 3: tr(I + 4I - 2 * 2I) = 3
    b = rng.normal(size=(200_000, 3))
    assert m.frechet_distance(b, 2 * rng.normal(size=(200_000, 3))) == pytest.approx(3.0, rel=0.02)
    # one feature: (mu_a - mu_b)^2 + (s_a - s_b)^2
    x, y = rng.normal(size=(100_000, 1)), 1.0 + 3.0 * rng.normal(size=(100_000, 1))
    assert m.frechet_distance(x, y) == pytest.approx(1.0 + 4.0, rel=0.02)
    with pytest.raises(ValueError, match=r"a, b: .* got shapes \(4000, 3\) and \(4000, 2\)"):
        m.frechet_distance(a, a[:, :2])


def test_median_centred_bootstrap_keeps_a_biased_estimate_inside():
    from shared_core.metrics import bootstrap_ci, frechet_distance

    rng = np.random.default_rng(0)
    real = rng.normal(size=(400, 6))
    gen = rng.normal(size=(60, 6)) + 0.1
    fd = lambda g: frechet_distance(g, real)  # noqa: E731
    est, lo, hi = bootstrap_ci(fd, gen, n_resamples=100, seed=1)
    assert lo > est  # resampling inflates FD: the plain interval misses the estimate
    est_m, lo_m, hi_m = bootstrap_ci(fd, gen, n_resamples=100, seed=1, centre="median")
    assert est_m == est and lo_m <= est <= hi_m
    assert hi_m - lo_m == pytest.approx(hi - lo)  # the same width, shifted
    with pytest.raises(ValueError, match="centre"):
        bootstrap_ci(fd, gen, centre="bca")


def test_ssim_and_psnr_closed_forms():
    rng = np.random.default_rng(0)
    a = rng.random((3, 16, 16))
    np.testing.assert_allclose(m.ssim(a, a), 1.0)
    assert (m.ssim(a, rng.random((3, 16, 16))) < 0.5).all()
    # one window covering a constant image pair: SSIM = (2 x y + C1) / (x^2 + y^2 + C1)
    x, y, c1 = 0.3, 0.5, 1e-4
    got = m.ssim(np.full((7, 7), x), np.full((7, 7), y))
    assert float(got) == pytest.approx((2 * x * y + c1) / (x * x + y * y + c1), rel=1e-12)
    assert m.ssim(a, a + 0.1).shape == (3,)
    np.testing.assert_allclose(m.psnr(a, a + 0.1), 20.0)  # 10 log10(1 / 0.01)
    assert np.isinf(m.psnr(a, a)).all()
    with pytest.raises(ValueError, match="window: expected at most the image side 16"):
        m.ssim(a, a, window=17)
    with pytest.raises(ValueError, match="a, b: expected two arrays of one shape"):
        m.ssim(a, a[:, :8])
    with pytest.raises(ValueError, match="data_range: expected a finite number > 0"):
        m.psnr(a, a, data_range=0.0)


def test_ssim_with_the_sample_covariance_is_scikit_images_default():
    skm = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(1)
    for side in (8, 16):
        a = rng.random((4, side, side))
        b = np.clip(a + 0.2 * rng.standard_normal(a.shape), 0, 1)
        ours = m.ssim(a, b, sample_covariance=True)
        theirs = [
            skm.structural_similarity(p, q, data_range=1.0, win_size=7)
            for p, q in zip(a, b, strict=True)
        ]
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
        np.testing.assert_allclose(
            m.psnr(a, b),
            [skm.peak_signal_noise_ratio(p, q, data_range=1.0) for p, q in zip(a, b, strict=True)],
        )
