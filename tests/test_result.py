"""The per-fold results and their aggregate (``skcalbound._result``)."""

import math

import pytest

from skcalbound._result import FoldResult, aggregate_folds


def test_a_non_finite_term_is_an_error():
    good = FoldResult(
        terms={"validation_mean": 0.1, "bernstein_residual": 0.05},
        info={},
        estimate=0.1,
    )
    bad = FoldResult(
        terms={"validation_mean": 0.1, "bernstein_residual": math.nan},
        info={},
        estimate=0.1,
    )
    assert aggregate_folds([good, good], "mean", 0.95).bound == pytest.approx(0.15)
    with pytest.raises(
        FloatingPointError,
        match=r"Fold 1 produced a non-finite "
        r"bernstein_residual, lower bound",
    ):
        aggregate_folds([good, bad], "mean", 0.95)
