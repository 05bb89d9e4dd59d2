"""Coverage of ``LipschitzBucketBound(noise="adaptive")`` (SPEC 13 with bucket
weights), both sides, on the problems of ``test_nw_adaptive_coverage`` (``L = b1``
where a problem gives ``b1, b2``; a constant ``eta`` is 1-Lipschitz). Default suite:
the raw point mass at 0.9 with sabotaged bounds that must fail, and the rare event at
a small size. Slow: R = 500 per cell, every problem at
n = 200 and 2000, the raw atoms and the smooth problem at 2e4, both levels.
"""

from dataclasses import replace

import pytest
from test_nw_adaptive_coverage import (
    CHEAP,
    LEVELS,
    PROBLEMS,
    _plug_in,
    _without_label_terms,
    check_two_sided,
)

from skcalbound import LipschitzBucketBound


def _check(case, n, repetitions, level, **kwargs):
    return check_two_sided(
        case, n, repetitions, level, bound=LipschitzBucketBound, **kwargs
    )


def test_point_mass_two_sided_and_sabotage():
    """Raw point mass at 0.9 (eta 1/2, CE 0.4), n = 2e4: both sides are informative,
    and on the same fits the upper bound without its label terms, and the plug-in as
    a lower bound, miss about half the time, which the same check rejects."""
    sabotage = {"upper": _without_label_terms, "lower": _plug_in}
    upper, lower, recorded = _check("point_0.9", 20_000, 40, 0.9, extra=sabotage)
    assert upper.values.max() < 0.45 and -lower.values.min() > 0.35  # informative
    for broken in (
        replace(upper, values=recorded["upper"]),
        replace(lower, values=-recorded["lower"]),
    ):
        assert not broken.passed, broken.summary()
        assert broken.failure_rate > 0.3, broken.summary()


def test_h_mode_two_sided_small():
    """The imbalanced problem, n = 2000 (the balanced perturbed one, and both at every
    size and level with 500 repeats, under ``slow``: this bound's fits are the
    slowest of the suite)."""
    upper, _, _ = _check("rare_0.029", 2000, 40, 0.9)
    assert upper.values.max() < 0.5  # informative: not clipped


SLOW_CELLS = [(c, n, level) for c in PROBLEMS for n in (200, 2000) for level in LEVELS]
# Where the lower bound is informative (raw atoms, smooth): n = 2e4.
SLOW_CELLS += [(c, 20_000, level) for c in CHEAP for level in LEVELS]


@pytest.mark.slow
@pytest.mark.parametrize(
    "case, n, confidence_level",
    SLOW_CELLS,
    ids=["-".join(map(str, cell)) for cell in SLOW_CELLS],
)
def test_adaptive_coverage(case, n, confidence_level):
    _check(case, n, 500, confidence_level)
