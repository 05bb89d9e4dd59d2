"""``estimate_``: the cross-fitted sign-pooled binned estimate (``_estimate``)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    binned_ece,
)
from skcalbound._estimate import (
    calibration_estimate,
    equal_count_bins,
    estimate_cells,
    n_estimate_bins,
)
from skcalbound.datasets import make_calibrated, make_discrete, make_overconfident


def test_formula_by_hand_on_twelve_rows():
    # Two cells (s = 0.2, s = 0.8), six rows each, three per half; B =
    # round(2/3 * 12**(1/3)) = 2 bins, one per cell.
    scores = np.repeat([0.2, 0.8], 6)
    labels = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0], dtype=float)
    halves = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1])
    cells = estimate_cells(scores, labels, halves)
    assert cells.count.sum() == 12
    assert_allclose(cells.sum_y.sum(axis=1), [3, 3])
    # Signs from half 0: bin means +0.8 and -0.8 with no label variance, so the TV
    # weight is 0, the signs differ, and both bins (beside the change) stay single.
    # Measured on half 1: |1 - 0.6| + |2 - 2.4| = 0.8 over 6 rows.
    # Signs from half 1: means +2/15 and -2/15, variances (1/3)(2/3)/3 = 2/27 each,
    # weight sqrt(2/27 * 2) = 0.385 >= (2/15 + 2/15) / 2, so the fit is flat: one
    # run. Measured on half 0: |(3 - 0.6) + (0 - 2.4)| / 6 = 0.
    assert calibration_estimate(cells) == pytest.approx((0.8 / 6 + 0.0) / 2, abs=1e-12)
    # The plain 2-bin ECE on the same rows is far above: both bins 0.4667 off.
    assert binned_ece(labels, scores, n_bins=2) == pytest.approx(7 / 15)


def test_bins_are_equal_count_and_never_split_a_cell():
    sizes = (1, 12, 27, 1000, 10**4, 10**5)
    assert [n_estimate_bins(n) for n in sizes] == [1, 2, 2, 7, 14, 31]
    count = np.array([3.0, 0.0, 1.0, 4.0, 1.0, 1.0])
    # Rows before each cell: 0, 3, 3, 4, 8, 9 of 10; two bins of about 5 rows.
    assert equal_count_bins(count, 2).tolist() == [0, 0, 0, 0, 1, 1]


def test_no_rows_gives_nan():
    cells = estimate_cells(np.array([]), np.array([]), np.array([], dtype=int))
    assert np.isnan(calibration_estimate(cells))


def test_calibrated_estimate_is_near_zero_and_far_below_the_old_plug_in():
    # Issue 36: the plug-in mean |s - eta_hat(s)| (the old estimate_) sits well above
    # the truth 0 on calibrated scores, above the 15-bin ECE too.
    new, old, ece = [], [], []
    for seed in range(4):
        data = make_calibrated(5000, random_state=seed)
        est = TVCalibrationBound(method="denoise", random_state=seed).fit(
            data.scores, data.labels
        )
        new.append(est.estimate_)
        old.append(est.terms_["validation_mean"])
        ece.append(binned_ece(data.labels, data.scores))
    assert np.mean(old) > 0.03
    assert np.mean(new) < 0.3 * np.mean(old)
    assert np.mean(new) < np.mean(ece)
    assert np.mean(new) < 0.01
    assert est.result_.estimate == est.estimate_


def test_overconfident_estimate_is_near_the_truth():
    errors = []
    for seed in range(3):
        data = make_overconfident(10**4, h=2**-6, random_state=seed)
        est = NWCalibrationBound(h=2**-6, random_state=seed).fit(
            data.scores, data.labels
        )
        errors.append(est.estimate_ - data.true_ce)
    assert np.max(np.abs(errors)) < 0.012
    assert abs(np.mean(errors)) < 0.006


def test_same_estimate_for_every_bound_in_memory_chunks_and_dask():
    data = make_overconfident(6000, h=2**-6, random_state=5)
    s, y = data.scores, data.labels
    nw = NWCalibrationBound(h=2**-6, random_state=1).fit(s, y)
    lip = LipschitzBucketBound(h=2**-6, random_state=1).fit(s, y)
    tv = TVCalibrationBound(random_state=1).fit(s, y)
    assert nw.estimate_ == lip.estimate_ == tv.estimate_
    chunks = [(y[i : i + 777], s[i : i + 777]) for i in range(0, s.shape[0], 777)]
    chunked = NWCalibrationBound(h=2**-6, random_state=1).fit_chunks(chunks)
    assert_allclose(chunked.estimate_, nw.estimate_, rtol=1e-12)
    da = pytest.importorskip("dask.array")
    lazy = NWCalibrationBound(h=2**-6, random_state=1).fit(
        da.from_array(s, chunks=1500), da.from_array(y, chunks=1500)
    )
    assert_allclose(lazy.estimate_, nw.estimate_, rtol=1e-12)
    # The halves come from random_state, like the folds.
    other = TVCalibrationBound(random_state=2).fit(s, y)
    assert other.estimate_ != tv.estimate_
    assert abs(other.estimate_ - tv.estimate_) < 0.01


def test_estimate_does_not_touch_the_interval():
    data = make_calibrated(3000, random_state=0)
    est = TVCalibrationBound(method="denoise", random_state=0).fit(
        data.scores, data.labels
    )
    frame = est.fold_results_
    # validation_mean is still the fold mean of |s - eta_hat|: a term of the bound.
    assert_allclose(frame["estimate"], frame["validation_mean"], rtol=0)
    assert_allclose(
        est.terms_["validation_mean"], frame["validation_mean"].mean(), rtol=1e-12
    )
    assert est.bound_ == pytest.approx(sum(est.terms_.values()))
    assert est.estimate_ != est.terms_["validation_mean"]


def test_tied_scores_with_empty_bins_are_estimated():
    # Five atoms fill 5 of the 14 bins; the empty bins must not widen the TV weight
    # (they did, flattening the signs into one run: 0.02 instead of 0.07).
    data = make_discrete(10**4, random_state=0)
    est = TVCalibrationBound(random_state=0).fit(data.scores, data.labels)
    assert data.true_ce == pytest.approx(0.07)
    assert abs(est.estimate_ - data.true_ce) < 0.012
