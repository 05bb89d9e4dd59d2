"""The bound estimators the shared-behaviour tests run on, with the arguments they need,
and the data they are fitted to (tests/test_base.py, tests/test_splitting.py); exact
comparison of two fits, SPEC's plug-in bandwidth, and one fold's high-probability
certificate from its definitions (tests/test_base.py and the per-bound test modules)."""

import dataclasses
import functools
import math

import numpy as np
import pandas as pd
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import brentq

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


def fitted_attributes(est):
    """What ``fit`` set, and what is built on first access from it (a property such
    as ``certificate_``), by name."""
    found = {
        k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")
    }
    for cls in type(est).__mro__:
        for k, v in vars(cls).items():
            lazy = isinstance(v, (property, functools.cached_property))
            if lazy and k.endswith("_") and not k.startswith("_") and hasattr(est, k):
                found.setdefault(k, getattr(est, k))
    return found


def _assert_same(a, b, path="attr"):
    """Exact, recursive equality of fitted attributes (arrays, frames, dataclasses,
    and other objects by their pickled state)."""
    assert type(a) is type(b), path
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    elif isinstance(a, np.ndarray):
        assert_array_equal(a, b, err_msg=path, strict=True)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _assert_same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{i}]")
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        # The state an object pickles: what it is, without caches it rebuilds.
        _assert_same(a.__getstate__(), b.__getstate__(), path)
    else:
        assert a == b, path


# What a certificate_ certifies; the rest of the record (the parameters as given,
# the time of the fit) may differ between equivalent fits.
_CERTIFIED = (
    "bound",
    "lower_bound",
    "estimate",
    "terms",
    "fingerprint",
    "n_samples",
    "n_positive",
    "confidence_level",
    "guarantee",
    "n_splits",
)


def assert_same_fit(a, b):
    fa, fb = fitted_attributes(a), fitted_attributes(b)
    assert set(fa) == set(fb)
    for name in fa:
        if name == "certificate_":
            for key in _CERTIFIED:
                assert fa[name][key] == fb[name][key], key
            continue
        _assert_same(fa[name], fb[name], name)


# --------------------------------------------------------------------------------------
# fit, refit, clone, pickle


def spec_plugin_bandwidth(m, b1, b2):
    """SPEC section 4: h' = t**2, 2 b t**5 + a t**3 = c / 2, clipped to [1e-4, 1/4]."""
    a, b, c = 3.0 * b1 / 8.0, b2 / 10.0, 1.15 / (2.0 * math.sqrt(2.0 * m))
    t = brentq(lambda t: 2.0 * b * t**5 + a * t**3 - c / 2.0, 0.0, 10.0, xtol=1e-15)
    return min(max(t * t, 1e-4), 0.25)


# --------------------------------------------------------------------------------------
# The high-probability certificate (SPEC section 10) of one fold, from its
# definitions, on a problem built for the corner cases
# (tests/test_nw_bound.py, tests/test_lipschitz_bound.py)
# --------------------------------------------------------------------------------------


def five_terms(r, g, W, delta):
    """The five terms and the lower bound from per-query ``r`` and unclipped ``g`` and
    the weight matrix ``W`` (one row per evaluated validation point, one column per
    training point), with ``delta`` split in three."""
    n = len(r)
    d = delta / 3
    mean_r = sum(r) / n
    var_r = sum((x - mean_r) ** 2 for x in r) / n  # population variance
    log3 = math.log(3 / d)
    bernstein = math.sqrt(2 * var_r * log3 / n) + 3 * log3 / n
    smoothing = sum(min(x, 1.0) for x in g) / n
    c = [sum(W[v][i] for v in range(n)) / n for i in range(len(W[0]))]
    assert_allclose(sum(c), 1.0, rtol=1e-12)  # every query's weights sum to one
    C2 = sum(x * x for x in c)
    ell = math.log(1 / d)
    concentration = math.sqrt(ell * C2 / 2)
    a = smoothing + concentration
    F = (math.sqrt(ell / (2 * n)) + math.sqrt(ell / (2 * n) + a)) ** 2
    terms = {
        "validation_mean": mean_r,
        "bernstein_residual": bernstein,
        "smoothing_mean": smoothing,
        "label_concentration": concentration,
        "population_transfer": F - a,
    }
    upper = sum(terms.values())
    lower = mean_r - (bernstein + smoothing + concentration + (F - a))
    return terms, upper, lower, C2


def exactness_problem():
    """About 300 training points in two clusters with a gap, 120 validation points.

    Training scores are multiples of 1/1024 in [0.1, 0.375] and [0.625, 0.9] (ties),
    with a block of two at 0.375 and one point at 0.625. Validation: 100 uniform scores
    (those in [0, 0.07), the gap and (0.93, 1] have no training score within a narrow
    kernel: nearest-neighbour fallback), 0.5 (equidistant from 0.375 and 0.625: both
    blocks), 0.45 and 0.55 (one side), 0.375 (tied with the training block that 0.45
    falls back to, so the block count must leave the validation point out) and both
    ends of [0, 1]. Twenty more points are neither training nor validation in the
    ``"subset"`` split. Data order shuffled.
    """
    rng = np.random.default_rng(2)
    left = rng.integers(103, 384, 150) / 1024
    right = rng.integers(641, 922, 150) / 1024
    train_s = np.concatenate([left, right, [0.375, 0.375, 0.625]])
    val_s = np.concatenate(
        [rng.uniform(size=100), [0.5, 0.45, 0.55, 0.375, 0.0, 1.0, 0.96, 0.03]]
    )
    extra_s = rng.uniform(size=20)
    scores = np.concatenate([train_s, val_s, extra_s])
    labels = (rng.uniform(size=scores.size) < scores).astype(int)
    return shuffled_parts(rng, scores, labels, train_s.size, val_s.size)


def exactness_split(path):
    X, y, train, val, extra = exactness_problem()
    if path == "partition":  # training = the complement of the validation part
        train = np.sort(np.concatenate([train, extra]))
    return X, y, train, val


def shuffled_parts(rng, scores, labels, n_train, n_val):
    """``(scores, labels, train, val, extra)``: the rows in a random data order (so
    that data order differs from score order) and the sorted data positions of the
    first ``n_train`` rows given, the next ``n_val`` and the rest."""
    perm = rng.permutation(scores.size)
    inverse = np.argsort(perm)
    train = np.sort(inverse[:n_train])
    val = np.sort(inverse[n_train : n_train + n_val])
    extra = np.sort(inverse[n_train + n_val :])
    return scores[perm], labels[perm], train, val, extra


# The terms_ keys of NW and Lipschitz bucketing by guarantee, in the order they add up.
SMOOTHING_TERMS = {
    "paper": [
        "validation_mean",
        "smoothing_mean",
        "bernstein_residual",
        "bernstein_smoothing",
    ],
    "high_probability": [
        "validation_mean",
        "bernstein_residual",
        "smoothing_mean",
        "label_concentration",
        "population_transfer",
    ],
}
