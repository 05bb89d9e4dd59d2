"""The bound estimators the shared-behaviour tests run on, with the arguments they need,
and the data they are fitted to (tests/test_base.py, tests/test_splitting.py)."""

import numpy as np

from skcalbound import LipschitzBucketBound, NWCalibrationBound, TVCalibrationBound

# Bound estimators to run every invariant on.
BOUND_ESTIMATORS = [TVCalibrationBound, NWCalibrationBound, LipschitzBucketBound]

# Constructor arguments an estimator needs besides its defaults: NW has no default for
# the derivative bounds of the calibration function. h = 1/16 implies b1 = 8 and
# b2 = 128 (384 with guarantee="paper"), which scores_labels's data (eta(s) = s**2)
# satisfy. Lipschitz has no default Lipschitz constant: eta(s) = s**2 is 2-Lipschitz.
# Its fits here use 6 candidate bucketings instead of the default 48 (a fit's cost is
# per candidate; no invariant depends on the grid): the default grid is checked by
# test_fold_results_has_one_row_per_fold_with_the_documented_columns (test_base.py).
LIPSCHITZ_SMALL_GRID = {"n_buckets": [2, 16, 128], "n_shifts": 2}
REQUIRED_PARAMS = {
    "NWCalibrationBound": {"h": 2**-4},
    "LipschitzBucketBound": {"L": 2.0, **LIPSCHITZ_SMALL_GRID},
}


def make_bound(Est, **params):
    """``Est(**params)`` with the arguments the estimator cannot do without."""
    return Est(**{**REQUIRED_PARAMS.get(Est.__name__, {}), **params})


def folded_bound(Est, **params):
    """``make_bound`` for tests of the cross-fitted folds, the held-out ``score`` and
    the surrogate: TV's denoising bound (its default cell bound has no folds)."""
    if Est is TVCalibrationBound:
        params = {"method": "denoise", **params}
    return make_bound(Est, **params)


def scores_labels(n=2000, seed=0):
    """Uniform scores with y ~ Bernoulli(s**2): true calibration error 1/6.

    With n=2000 the default bounds are about 0.8, so they are not clipped at 1 and
    comparisons between them are informative.
    """
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n)
    labels = (rng.uniform(size=n) < scores**2).astype(np.int64)
    return scores, labels


BOUNDS = {Est.__name__: Est for Est in BOUND_ESTIMATORS}


def inherited_cells(cases, others):
    """The default cells of a ``(bound, case)`` grid of behaviour every bound inherits
    from ``_base`` and ``_validation`` (input containers, labels, splitters): every
    case on the TV bound, the cheapest to fit, and the cases ``others`` on the NW and
    Lipschitz bounds (the rest under slow)."""
    return [
        f"{name}-{case}"
        for name in BOUNDS
        for case in cases
        if name == "TVCalibrationBound" or case in others
    ]
