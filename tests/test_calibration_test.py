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
