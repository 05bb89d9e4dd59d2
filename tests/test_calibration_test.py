"""Tests of :func:`skcalbound.calibration_test`."""

import re

import pytest
from _synthetic import calibrated_scores
from sklearn.utils._param_validation import InvalidParameterError

from skcalbound import (
    calibration_test,
)


@pytest.mark.parametrize("tolerance", [5, 1.5, -0.1])
def test_calibration_test_tolerance_outside_0_1_is_refused(tolerance):
    # The trap: tolerance=5 with alternative="less" "certified" calibration within
    # 5 with p = 1e-300, though the calibration error is at most 1.
    s, y = calibrated_scores()
    with pytest.raises(
        InvalidParameterError,
        match=re.escape(
            "The 'tolerance' parameter of calibration_test must be a float in the "
            f"range [0.0, 1.0]. Got {tolerance!r} instead."
        ),
    ):
        calibration_test(y, s, h=2**-4, tolerance=tolerance, alternative="less")


def test_calibration_test_tolerance_at_the_ends_is_accepted():
    s, y = calibrated_scores()
    zero = calibration_test(y, s, h=2**-4, tolerance=0.0, random_state=0)
    one = calibration_test(
        y, s, h=2**-4, tolerance=1, alternative="less", random_state=0
    )
    assert not zero.reject and zero.pvalue == 1.0  # calibrated: CE > 0 not shown
    assert one.reject and one.upper_bound < 1.0 and one.tolerance == 1.0


@pytest.mark.parametrize(
    "alternative, tolerance",
    # On this sample (CE = 0.0762) the default's interval is [0.0113, 0.1126] at
    # level 0.01 and [0.0164, 0.1086] at 0.05: p between them.
    [("greater", 0.014), ("less", 0.11), ("two-sided", 0.014)],
)
def test_nw_default_pvalue_is_the_level_where_its_interval_meets_the_tolerance(
    alternative, tolerance
):
    # NW's default (SPEC 13): the interval at any level from the fold statistics
    # (every term monotone in delta), so the p-value is the level at which the
    # interval reaches the tolerance: just rejects at p (1 + 1e-6), not at
    # p (1 - 1e-6).
    import math

    import numpy as np
    from _synthetic import perturbed_problems

    from skcalbound._base import interval_at
    from skcalbound._calibration_test import _rejects
    from skcalbound._terms import adaptive_terms

    problem = perturbed_problems()[0]
    s, y = problem.sample(20_000, np.random.default_rng(5))
    kw = {"h": problem.h, "random_state": 3, "alternative": alternative}
    result = calibration_test(y, s, tolerance=tolerance, **kw)
    est, p = result.estimator, result.pvalue
    assert est.noise == "adaptive" and "route" in est.fold_results_
    assert 1e-6 < p < 0.5 and result.reject == (p <= 0.05)
    for factor, rejects in [(1 + 1e-6, True), (1 - 1e-6, False)]:
        interval = interval_at(est, p * factor)
        assert _rejects(interval, tolerance, alternative) == rejects, factor
    # interval_at reads SPEC 13's terms: the mean over the folds at p / 5.
    folds = [adaptive_terms(f.extra["statistics"], p / 5) for f in est.result_.folds]
    lower, upper = interval_at(est, p)
    assert math.isclose(upper, np.mean([f["upper"] for f in folds]), rel_tol=1e-12)
    assert math.isclose(
        lower, max(np.mean([f["lower"] for f in folds]), 0.0), rel_tol=1e-12
    )
    # Tighter than the worst-case form's test on the same data.
    worst = calibration_test(y, s, tolerance=tolerance, noise="worst_case", **kw)
    assert "route" not in worst.estimator.fold_results_
    assert p < worst.pvalue
