"""binned_ece against a direct computation from calibration_curve's bins."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.calibration import calibration_curve

from skcalbound import binned_ece


def _ece_from_calibration_curve(y, s, n_bins, strategy):
    prob_true, prob_pred = calibration_curve(y, s, n_bins=n_bins, strategy=strategy)
    # calibration_curve drops empty bins; recover each bin's count from its edges.
    if strategy == "uniform":
        edges = np.linspace(0, 1, n_bins + 1)
    else:
        edges = np.percentile(s, np.linspace(0, 100, n_bins + 1))
    counts = np.bincount(np.searchsorted(edges[1:-1], s), minlength=n_bins)
    counts = counts[counts > 0]
    return float(np.sum(counts / s.size * np.abs(prob_pred - prob_true)))


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [1, 5, 15, 40])
@pytest.mark.parametrize("seed", [0, 1])
def test_binned_ece_matches_calibration_curve(strategy, n_bins, seed):
    rng = np.random.default_rng(seed)
    s = rng.beta(0.5, 2.0, size=3000)
    s[:20] = 0.0
    s[20:40] = 1.0
    y = rng.uniform(size=3000) < np.sqrt(s)
    assert_allclose(
        binned_ece(y, s, n_bins=n_bins, strategy=strategy),
        _ece_from_calibration_curve(y, s, n_bins, strategy),
        rtol=1e-12,
    )


def test_binned_ece_hand_value():
    # Two uniform bins: [0, .5) holds s = .1, .2 with labels 0, 1 -> |0.15 - 0.5|;
    # [.5, 1] holds s = .6, .9 with labels 1, 1 -> |0.75 - 1|.
    s = np.array([0.1, 0.2, 0.6, 0.9])
    y = np.array([0, 1, 1, 1])
    assert_allclose(binned_ece(y, s, n_bins=2), 0.5 * 0.35 + 0.5 * 0.25, rtol=1e-15)


def test_binned_ece_accepts_predict_proba_and_labels_of_any_type():
    s = np.array([0.1, 0.2, 0.6, 0.9])
    proba = np.column_stack([1 - s, s])
    y = np.array(["no", "yes", "yes", "yes"])
    assert binned_ece(y, proba, n_bins=2) == binned_ece(np.array([0, 1, 1, 1]), s, n_bins=2)


@pytest.mark.parametrize(
    "y, s, match",
    [
        ([0, 1, 1], [0.1, 0.5, 1.2], r"probabilities in \[0, 1\]"),
        ([0, 1, 1], [0.1, np.nan, 0.3], "NaN"),
        ([0, 1, 2], [0.1, 0.5, 0.3], "exactly two classes"),
        ([0, 1], [0.1, 0.5, 0.3], "inconsistent numbers of samples"),
    ],
)
def test_binned_ece_bad_input(y, s, match):
    y_before, s_before = list(y), list(s)
    with pytest.raises(ValueError, match=match):
        binned_ece(y, s)
    assert y == y_before and np.array_equal(s, s_before, equal_nan=True)


def test_binned_ece_misses_oscillating_miscalibration():
    # eta(s) = s + 0.15 sin(80 pi s): 15 equal-width bins average the oscillation out,
    # so ECE stays near 0 while the true CE is 0.15 * 2 / pi ~ 0.095.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=400_000)
    eta = np.clip(s + 0.15 * np.sin(80 * np.pi * s), 0, 1)
    y = rng.uniform(size=s.size) < eta
    true_ce = np.mean(np.abs(s - eta))
    assert true_ce > 0.08
    assert binned_ece(y, s) < 0.03
