"""Estimator invariants re-tested on valid scores.

Most of sklearn's common checks feed feature matrices, which the bound estimators
reject (see the expected-failure table in ``tests/test_common.py``). This file re-tests
what those checks cover on scores in [0, 1]: fit returns self, idempotent fit, clone and
pickle round trips, unmutated and read-only input, memory layout, dtypes, pandas and
lists, the three accepted shapes, label types, the aggregates, the terms, the per-fold
table and user-supplied splitters.
"""

import copy
import dataclasses
import functools
import math
import pickle
import re

import numpy as np
import pandas as pd
import pytest
from _synthetic import slow_except
from joblib import parallel_config
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import brentq
from sklearn.base import clone
from sklearn.model_selection import KFold, RepeatedKFold, ShuffleSplit

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    lipschitz_bucket_bound,
    nw_bound,
    tv_bound,
)
from skcalbound._splitting import row_folds

# Bound estimators to run every invariant on.
BOUND_ESTIMATORS = [TVCalibrationBound, NWCalibrationBound, LipschitzBucketBound]

# Constructor arguments an estimator needs besides its defaults: NW has no default for
# the derivative bounds of the calibration function. h = 1/16 implies b1 = 8 and
# b2 = 128 (384 with guarantee="paper"), which the data below (eta(s) = s**2)
# satisfy. Lipschitz has no default Lipschitz constant: eta(s) = s**2 is 2-Lipschitz.
# Its fits here use 6 candidate bucketings instead of the default 48 (a fit's cost is
# per candidate; no invariant below depends on the grid): the default grid is checked
# in test_fold_results_has_one_row_per_fold_with_the_documented_columns.
LIPSCHITZ_SMALL_GRID = {"n_buckets": [2, 16, 128], "n_shifts": 2}
REQUIRED_PARAMS = {
    "NWCalibrationBound": {"h": 2**-4},
    "LipschitzBucketBound": {"L": 2.0, **LIPSCHITZ_SMALL_GRID},
}
# The functional one-liner of each estimator.
FUNCTIONS = {
    "TVCalibrationBound": tv_bound,
    "NWCalibrationBound": nw_bound,
    "LipschitzBucketBound": lipschitz_bucket_bound,
}
# Fitted attributes of each estimator besides the common ones.
EXTRA_FITTED_ATTRIBUTES = {
    "TVCalibrationBound": ["method_"],
    "NWCalibrationBound": ["b1_", "b2_", "bandwidth_"],
    "LipschitzBucketBound": ["L_", "candidates_", "n_buckets_", "shift_"],
}


def _make(Est, **params):
    """``Est(**params)`` with the arguments the estimator cannot do without."""
    return Est(**{**REQUIRED_PARAMS.get(Est.__name__, {}), **params})


def _folded(Est, **params):
    """``_make`` for tests of the cross-fitted folds, the held-out ``score`` and
    the surrogate: TV's denoising bound (its default cell bound has no folds)."""
    if Est is TVCalibrationBound:
        params = {"method": "denoise", **params}
    return _make(Est, **params)


GUARANTEES = ["high_probability", "paper"]
# The terms_ keys of each estimator and guarantee, in the order they add up.
_SMOOTHING_TERMS = {
    "high_probability": [
        "validation_mean",
        "bernstein_residual",
        "smoothing_mean",
        "label_concentration",
        "population_transfer",
    ],
    "paper": [
        "validation_mean",
        "smoothing_mean",
        "bernstein_residual",
        "bernstein_smoothing",
    ],
}
_TV_TERMS = [
    "validation_mean",
    "bernstein_residual",
    "tv_denoising",
    "population_transfer",
]
TERM_NAMES = {
    ("TVCalibrationBound", "high_probability"): _TV_TERMS,
    ("TVCalibrationBound", "paper"): _TV_TERMS,
    **{
        (name, guarantee): _SMOOTHING_TERMS[guarantee]
        for name in ("NWCalibrationBound", "LipschitzBucketBound")
        for guarantee in GUARANTEES
    },
}
# Columns of fold_results_ as documented in each estimator's docstring; ``C2`` of the
# high-probability certificate only in that mode.
_METHOD_COLUMNS = {
    "TVCalibrationBound": ["V_hat", "n_pieces"],
    "NWCalibrationBound": ["bandwidth", "n_bins", "n_fallback"],
    "LipschitzBucketBound": ["n_buckets", "shift", "n_candidates", "n_fallback"],
}
FOLD_COLUMNS = {
    (name, guarantee): [
        "n_train",
        "n_validation",
        "delta",
        *_METHOD_COLUMNS[name],
        *(
            ["sum_c_squared"]
            if guarantee == "high_probability" and name != "TVCalibrationBound"
            else []
        ),
        "estimate",
        *TERM_NAMES[name, guarantee],
        "bound",
        "lower_bound",
    ]
    for name, guarantee in TERM_NAMES
}


def _scores_labels(n=2000, seed=0):
    """Uniform scores with y ~ Bernoulli(s**2): true calibration error 1/6.

    With n=2000 the default bounds are about 0.8, so they are not clipped at 1 and
    comparisons between them are informative.
    """
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n)
    labels = (rng.uniform(size=n) < scores**2).astype(np.int64)
    return scores, labels


@pytest.fixture
def data():
    return _scores_labels()


@functools.cache
def _fitted_reference(Est):
    return _make(Est, random_state=0).fit(*_scores_labels())


def _reference(Est):
    """``_make(Est, random_state=0).fit(*data)``: fitted once per estimator (a Lipschitz
    fit costs ~0.3 s whatever n), a fresh copy for every test."""
    return copy.deepcopy(_fitted_reference(Est))


def _fitted_attributes(est):
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


def _assert_same_fit(a, b):
    fa, fb = _fitted_attributes(a), _fitted_attributes(b)
    assert set(fa) == set(fb)
    for name in fa:
        if name == "certificate_":
            for key in _CERTIFIED:
                assert fa[name][key] == fb[name][key], key
            continue
        _assert_same(fa[name], fb[name], name)


# --------------------------------------------------------------------------------------
# fit, refit, clone, pickle
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("guarantee", GUARANTEES)
@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_fit_returns_self_and_sets_documented_attributes(Est, guarantee, data):
    X, y = data
    est = _make(Est, random_state=0, guarantee=guarantee)
    assert est.fit(X, y) is est
    expected = [
        "bound_",
        "lower_bound_",
        "estimate_",
        "terms_",
        "result_",
        "fold_results_",
        "n_splits_",
        "surrogate_",
        "classes_",
        "n_features_in_",
        "certificate_",
        *EXTRA_FITTED_ATTRIBUTES[Est.__name__],
    ]
    # Exactly the documented fitted attributes (feature_names_in_ only for frames).
    assert set(_fitted_attributes(est)) == set(expected)
    for name in expected:
        assert f"\n    {name} :" in Est.__doc__, name
    assert 0.0 <= est.lower_bound_ <= est.bound_ <= 1.0
    assert 0.0 <= est.estimate_ <= est.bound_
    assert est.n_features_in_ == 1
    assert not hasattr(est, "feature_names_in_")
    assert_array_equal(est.classes_, [0, 1])
    # fit does not change the hyperparameters.
    assert (
        est.get_params() == _make(Est, random_state=0, guarantee=guarantee).get_params()
    )
    assert est.get_params()["guarantee"] == guarantee


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_fit_is_idempotent(Est, data):
    X, y = data
    X2, y2 = _scores_labels(700, seed=5)
    est = _make(Est, random_state=0).fit(X, y)
    first = pickle.loads(pickle.dumps(est))
    est.fit(X2, y2)  # fitting other data in between leaves nothing behind
    est.fit(X, y)
    _assert_same_fit(first, est)
    _assert_same_fit(est, _make(Est, random_state=0).fit(X, y))
    assert_array_equal(first.predict(X), est.predict(X), strict=True)
    assert first.score(X2, y2) == est.score(X2, y2)


@pytest.mark.parametrize(
    "Est",
    [
        # TV runs its folds in processes (joblib's default backend): starting the
        # pool costs two interpreter start-ups, so by default the process path is
        # checked once, in test_tv_bound.py, and threads below; here under slow.
        pytest.param(TVCalibrationBound, marks=pytest.mark.slow),
        NWCalibrationBound,
        LipschitzBucketBound,
    ],
)
def test_n_jobs_does_not_change_the_result(Est, data):
    X, y = data
    _assert_same_fit(
        _make(Est, random_state=0).fit(X, y),
        _make(Est, random_state=0, n_jobs=2).fit(X, y),
    )


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_n_jobs_with_threads_does_not_change_the_result(Est, data):
    # Under a threading backend the parallel tasks share the process: no task may
    # write into scratch arrays another one uses (TV's fold buffers did).
    X, y = data
    expected = _make(Est, random_state=0).fit(X, y)
    with parallel_config(backend="threading"):
        for _ in range(3):
            _assert_same_fit(expected, _make(Est, random_state=0, n_jobs=2).fit(X, y))


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_random_state_controls_the_folds(Est, data):
    X, y = data
    # Lipschitz: one candidate bucketing, since the refit uses the candidate with the
    # smallest mean fold bound, which may depend on the folds.
    params = {"n_buckets": 16, "n_shifts": 1} if Est is LipschitzBucketBound else {}
    a = _folded(Est, random_state=0, **params).fit(X, y)
    b = _folded(Est, random_state=1, **params).fit(X, y)
    assert a.bound_ != b.bound_
    assert a.lower_bound_ != b.lower_bound_ or a.lower_bound_ == 0.0
    # The refit does not.
    assert_array_equal(a.predict(X), b.predict(X), strict=True)


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_a_random_state_instance_draws_the_folds_of_its_seed(Est, data):
    X, y = data
    a = _make(Est, random_state=0).fit(X, y)
    c = _make(Est, random_state=np.random.RandomState(0)).fit(X, y)
    assert c.bound_ == a.bound_  # a fresh RandomState(0) draws the same folds


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_clone_is_unfitted_and_refits_identically(Est, data):
    X, y = data
    est = _make(Est, random_state=0, cv=4, aggregate="min").fit(X, y)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    assert not _fitted_attributes(twin)
    _assert_same_fit(twin.fit(X, y), est)


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_pickle_round_trip(Est, data):
    X, y = data
    X_new, y_new = _scores_labels(500, seed=9)
    est = _make(Est, random_state=0).fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    _assert_same_fit(back, est)
    assert back.bound_ == est.bound_
    assert_array_equal(back.predict(X_new), est.predict(X_new), strict=True)
    assert back.score(X_new, y_new) == est.score(X_new, y_new)


# --------------------------------------------------------------------------------------
# Input containers, layouts, dtypes and shapes
# --------------------------------------------------------------------------------------


def _as_container(kind, scores):
    if kind == "numpy":
        return scores.copy()
    if kind == "numpy_2d":
        return np.column_stack([1.0 - scores, scores])
    if kind == "list":
        return scores.tolist()
    if kind == "series":
        return pd.Series(scores, name="p")
    if kind == "frame_1":
        return pd.DataFrame({"p": scores})
    if kind == "frame_2":
        return pd.DataFrame({"p0": 1.0 - scores, "p1": scores})
    raise AssertionError(kind)


def _snapshot(obj):
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return obj.copy(deep=True)
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return list(obj)


def _assert_unchanged(before, after):
    if isinstance(before, pd.DataFrame):
        pd.testing.assert_frame_equal(before, after, check_exact=True)
    elif isinstance(before, pd.Series):
        pd.testing.assert_series_equal(before, after, check_exact=True)
    elif isinstance(before, np.ndarray):
        assert_array_equal(before, after, strict=True)
    else:
        assert before == after


BOUNDS = {Est.__name__: Est for Est in BOUND_ESTIMATORS}


def _inherited(cases, others):
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


CONTAINERS = ["numpy", "numpy_2d", "list", "series", "frame_1", "frame_2"]


@pytest.mark.parametrize(
    "Est, kind",
    slow_except(
        [BOUNDS, CONTAINERS], default=_inherited(CONTAINERS, ("numpy_2d", "frame_2"))
    ),
)
def test_containers_give_the_numpy_result_and_are_not_mutated(Est, kind, data):
    scores, labels = data
    reference = _reference(Est)
    X = _as_container(kind, scores)
    y = (
        labels.tolist()
        if kind == "list"
        else (
            pd.Series(labels)
            if kind in ("series", "frame_1", "frame_2")
            else labels.copy()
        )
    )
    X_before, y_before = _snapshot(X), _snapshot(y)

    est = _make(Est, random_state=0).fit(X, y)
    prediction = est.predict(X)
    score = est.score(X, y)
    value = FUNCTIONS[Est.__name__](
        y, X, random_state=0, **REQUIRED_PARAMS.get(Est.__name__, {})
    )

    _assert_unchanged(X_before, X)
    _assert_unchanged(y_before, y)
    assert_allclose(est.bound_, reference.bound_, rtol=1e-12)
    pd.testing.assert_frame_equal(
        est.fold_results_, reference.fold_results_, rtol=1e-12
    )
    assert_allclose(prediction, reference.predict(scores), rtol=1e-12)
    assert score == pytest.approx(reference.score(scores, labels), rel=1e-12)
    assert value == pytest.approx(reference.bound_, rel=1e-12)
    assert est.n_features_in_ == (2 if kind in ("numpy_2d", "frame_2") else 1)
    if kind.startswith("frame"):
        assert_array_equal(est.feature_names_in_, np.asarray(X.columns, dtype=object))
    else:
        assert not hasattr(est, "feature_names_in_")


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_one_d_column_and_predict_proba_shapes_agree(Est, data):
    scores, labels = data
    shapes = {
        "1d": scores,
        "column": scores[:, None],
        "proba": np.column_stack([1.0 - scores, scores]),
    }
    fits = {k: _make(Est, random_state=0).fit(X, labels) for k, X in shapes.items()}
    query = _scores_labels(300, seed=4)[0]
    query_shapes = [query, query[:, None], np.column_stack([1.0 - query, query])]
    reference = fits["1d"].predict(query)
    for name, est in fits.items():
        assert_allclose(est.bound_, fits["1d"].bound_, rtol=1e-12)
        pd.testing.assert_frame_equal(est.fold_results_, fits["1d"].fold_results_)
        # predict accepts every shape, whatever shape fit saw.
        for Xq in query_shapes:
            assert_allclose(est.predict(Xq), reference, rtol=1e-12)


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_read_only_input(Est, data):
    scores, labels = data
    X = scores.copy()
    y = labels.copy()
    X2 = np.column_stack([1.0 - scores, scores])
    for arr in (X, y, X2):
        arr.setflags(write=False)
    est = _make(Est, random_state=0).fit(X, y)
    reference = _reference(Est)
    assert est.bound_ == reference.bound_
    assert_allclose(est.predict(X2), est.predict(scores), rtol=1e-12)
    assert est.score(X, y) == reference.score(scores, labels)
    assert _make(Est, random_state=0).fit(X2, y).bound_ == est.bound_


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_fortran_ordered_predict_proba_input(Est, data):
    scores, labels = data
    X = np.asfortranarray(np.column_stack([1.0 - scores, scores]))
    assert X.flags.f_contiguous and not X.flags.c_contiguous
    before = X.copy(order="F")
    est = _make(Est, random_state=0).fit(X, labels)
    assert est.bound_ == _reference(Est).bound_
    assert_allclose(est.predict(X), est.predict(scores), rtol=1e-12)
    assert_array_equal(X, before, strict=True)


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_float32_scores(Est, data):
    scores, labels = data
    s32 = scores.astype(np.float32)

    def bound(X):
        return _make(Est, random_state=0).fit(X, labels).bound_

    est32 = _make(Est, random_state=0).fit(s32, labels)
    # Exactly the float64 bound of the rounded scores ...
    assert est32.bound_ == bound(s32.astype(np.float64))
    # ... and, up to that rounding, the float64 bound.
    assert_allclose(est32.bound_, bound(scores), rtol=1e-5)
    assert est32.predict(s32).dtype == np.float64
    # A float32 predict_proba output passes the row-sum check.
    proba32 = np.column_stack([1.0 - scores, scores]).astype(np.float32)
    assert_allclose(bound(proba32), est32.bound_, rtol=1e-5)


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_predict_returns_the_surrogate_calibration_function(Est, data):
    scores, labels = data
    est = _folded(Est, random_state=0).fit(scores, labels)
    query = np.concatenate([[0.0, 1.0], _scores_labels(400, seed=2)[0]])
    pred = est.predict(query)
    assert pred.shape == (query.shape[0],)
    assert pred.dtype == np.float64
    assert np.all((pred >= 0.0) & (pred <= 1.0))
    # Pointwise: the order and the subset of the queries do not matter
    # (check_methods_sample_order_invariance / subset_invariance on scores).
    perm = np.random.default_rng(0).permutation(query.shape[0])
    assert_array_equal(est.predict(query[perm]), pred[perm], strict=True)
    assert_array_equal(est.predict(query[:7]), pred[:7], strict=True)
    # y ~ Bernoulli(s**2): the surrogate tracks E[y|s] = s**2, not s.
    grid = np.linspace(0.05, 0.95, 19)
    assert np.mean(np.abs(est.predict(grid) - grid**2)) < np.mean(
        np.abs(grid - grid**2)
    )
    # predict leaves the fitted estimator unchanged (check_dict_unchanged on scores).
    before = pickle.loads(pickle.dumps(est))
    est.predict(query)
    est.score(query, np.zeros_like(query))
    _assert_same_fit(before, est)


# --------------------------------------------------------------------------------------
# score: the fixed-split bound of SPEC section 3, negated
# --------------------------------------------------------------------------------------


def _fixed_split_tv_bound(estimator, n_train, train_scores, test_scores):
    """SPEC section 3 by hand: refit surrogate as T, test scores as V, full delta
    (split in three, or in four with Corollary 2's redundant term for ``"paper"``)."""
    V = estimator.V
    delta = 1.0 - estimator.confidence_level
    paper = estimator.guarantee == "paper"
    d = delta / (4.0 if paper else 3.0)
    m = n_train
    r = np.abs(test_scores - estimator.predict(test_scores))
    k = r.shape[0]
    # The surrogate is a step function with its knots at training scores: evaluating
    # it at every sorted training score sees every jump.
    V_hat = np.abs(np.diff(estimator.predict(np.sort(train_scores)))).sum()
    t1 = math.sqrt(0.5 * math.log(4.0 / d))
    t2 = math.sqrt(m / 8.0 * math.log(4.0 * (m - 1) / d))
    tvb = math.sqrt(
        (2 * t1**2 + 2 * t1 * math.sqrt(t1**2 + 4 * t2 * V) + 4 * t2 * V) / m
    )
    ptb = (V + V_hat) * math.sqrt(math.log(2.0 / d) / (2 * m))
    if paper:
        ptb += math.sqrt(math.log(2.0 / d) / (2 * m))
    bb = math.sqrt(2 * r.var() * math.log(3.0 / d) / k) + 3 * math.log(3.0 / d) / k
    return r.mean() + bb + tvb + ptb


@pytest.mark.parametrize("V", [0.5, 1.0])
@pytest.mark.parametrize("confidence_level", [0.9, 0.95])
@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_score_is_the_negated_fixed_split_bound(guarantee, V, confidence_level, data):
    X, y = data
    X_test, y_test = _scores_labels(1500, seed=11)
    est = TVCalibrationBound(
        method="denoise",
        V=V,
        confidence_level=confidence_level,
        guarantee=guarantee,
        random_state=0,
    )
    est.fit(X, y)
    expected = _fixed_split_tv_bound(est, X.shape[0], X, X_test)
    assert expected < 1.0  # unclipped, so the comparison is informative
    score = est.score(X_test, y_test)
    assert_allclose(score, -expected, rtol=1e-10)
    assert -1.0 <= score <= 0.0
    # Only the number of labels enters the validation part of the bound.
    assert est.score(X_test, 1 - y_test) == score


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_score_is_a_held_out_bound_above_the_plug_in_estimate(Est, data):
    X, y = data
    X_test, y_test = _scores_labels(1500, seed=11)
    est = _folded(Est, random_state=0).fit(X, y)
    score = est.score(X_test, y_test)
    plug_in = np.mean(np.abs(est.predict(X_test) - X_test))
    assert -1.0 < score < -plug_in  # unclipped, and above the plug-in estimate
    # Only the scores enter (the labels are checked, not used) ...
    assert est.score(X_test, 1 - y_test) == score
    # ... and the refit surrogate: neither the folds, cv nor aggregate.
    other = _folded(Est, random_state=1, cv=3, aggregate="min").fit(X, y)
    assert other.score(X_test, y_test) == score
    # A lower confidence level, a smaller bound (TV's surrogate depends on it too).
    looser = _folded(Est, random_state=0, confidence_level=0.8).fit(X, y)
    looser_plug_in = np.mean(np.abs(looser.predict(X_test) - X_test))
    assert score < looser.score(X_test, y_test) < -looser_plug_in


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_score_is_clipped_at_minus_one(Est, data):
    X, y = data
    est = _make(Est, random_state=0).fit(X[:60], y[:60])
    assert est.score(X[:5], y[:5]) == -1.0


# --------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------


DEFAULT_LABELS = {
    "False-True": (False, True),
    "-1-1": (-1, 1),
    "0.0-1.0": (0.0, 1.0),
    "0-1": (0, 1),
}


@pytest.mark.parametrize(
    "Est, classes",
    slow_except(
        [BOUNDS, DEFAULT_LABELS], default=_inherited(DEFAULT_LABELS, ("-1-1",))
    ),
)
def test_default_positive_class_is_one(Est, classes, data):
    negative, positive = classes
    scores, labels = data
    y = np.where(labels == 1, positive, negative)
    est = _make(Est, random_state=0).fit(scores, y)
    assert est.classes_.tolist() == [negative, positive]
    assert est.bound_ == _reference(Est).bound_
    # The other class as the positive one is a different problem.
    flipped = _make(Est, random_state=0, pos_label=negative).fit(scores, y)
    assert flipped.bound_ == _make(Est, random_state=0).fit(scores, 1 - labels).bound_
    assert flipped.bound_ != est.bound_


@pytest.mark.parametrize(
    "negative, positive, shown",
    [
        ("stay", "churn", "'churn', 'stay'"),
        (1, 2, "1, 2"),
        ("a", "b", "'a', 'b'"),
        (0, 2, "0, 2"),
    ],
)
@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_other_labels_need_pos_label(Est, negative, positive, shown, data):
    # The trap: a model of P(churn) scored against "stay" because "stay" sorts last.
    scores, labels = data
    y = np.where(labels == 1, positive, negative)
    if isinstance(positive, str):
        y = y.astype(object)  # object labels as pandas gives them
    message = (
        f"y_true takes value in {{{shown}}} and pos_label is not specified: either "
        "make y_true take value in {0, 1} or {-1, 1} or pass pos_label explicitly."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        _make(Est, random_state=0).fit(scores, y)
    est = _make(Est, random_state=0, pos_label=positive).fit(scores, y)
    reference = _reference(Est)
    assert est.bound_ == reference.bound_
    assert est.lower_bound_ == reference.lower_bound_
    assert_allclose(est.predict(scores), reference.predict(scores))
    assert est.score(scores, y) == reference.score(scores, labels)
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"pos_label='x' is not a valid label. It should be one of "
            f"{sorted([negative, positive])}."
        ),
    ):
        _make(Est, pos_label="x").fit(scores, y)


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_pos_label_picks_the_predict_proba_column(Est, data):
    # predict_proba orders its columns by sorted class: "churn" < "stay", so the
    # probability of churn is column 0.
    scores, labels = data
    y = np.where(labels == 1, "churn", "stay").astype(object)
    proba = np.column_stack([scores, 1 - scores])
    est = _make(Est, random_state=0, pos_label="churn").fit(proba, y)
    reference = _reference(Est)
    assert est.bound_ == reference.bound_
    assert_allclose(est.predict(proba), reference.predict(scores))
    assert est.score(proba, y) == reference.score(scores, labels)


# --------------------------------------------------------------------------------------
# Aggregation, terms and the per-fold table
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
@pytest.mark.parametrize("n", [2000, 150])  # unclipped and clipped at 1
def test_min_aggregate_is_at_most_mean_on_the_same_folds(Est, n):
    X, y = _scores_labels(n, seed=1)
    mean = _make(Est, random_state=0, aggregate="mean").fit(X, y)
    low = _make(Est, random_state=0, aggregate="min").fit(X, y)
    pd.testing.assert_frame_equal(mean.fold_results_, low.fold_results_)
    assert low.bound_ <= mean.bound_
    folds = mean.fold_results_["bound"]
    assert_allclose(low.bound_, min(folds.min(), 1.0), rtol=1e-12)
    assert_allclose(mean.bound_, min(folds.mean(), 1.0), rtol=1e-12)
    assert mean.estimate_ == low.estimate_


@pytest.mark.parametrize("guarantee", GUARANTEES)
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("n", [2000, 150])
@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_terms_add_up_to_the_unclipped_aggregate(Est, aggregate, n, guarantee):
    X, y = _scores_labels(n, seed=2)
    est = _folded(Est, random_state=0, aggregate=aggregate, guarantee=guarantee).fit(
        X, y
    )
    names = TERM_NAMES[Est.__name__, guarantee]
    assert list(est.terms_) == names
    for name in names:  # every key is documented
        assert f"``{name}``" in Est.__doc__, name
    assert all(v >= 0.0 for v in est.terms_.values())
    total = sum(est.terms_.values())
    folds = est.fold_results_["bound"]
    raw = folds.mean() if aggregate == "mean" else folds.min()
    assert_allclose(total, raw, rtol=1e-12)
    assert_allclose(est.bound_, min(total, 1.0), rtol=1e-12)
    assert est.bound_ <= 1.0
    if n == 150:
        assert total > 1.0 and est.bound_ == 1.0  # the clipped case is exercised
    else:
        assert est.bound_ < 1.0
    # Terms of the aggregate are the mean (or the argmin row) of the fold terms.
    terms = est.fold_results_[names]
    expected = terms.mean() if aggregate == "mean" else terms.loc[folds.idxmin()]
    assert_allclose(
        [est.terms_[k] for k in terms.columns], expected.to_numpy(), rtol=1e-12
    )
    # The lower bound: the mean (or the largest) fold lower bound, clipped at 0.
    lowers = est.fold_results_["lower_bound"]
    lower = lowers.mean() if aggregate == "mean" else lowers.max()
    assert_allclose(est.lower_bound_, max(lower, 0.0), rtol=1e-12)
    assert 0.0 <= est.lower_bound_ <= est.bound_
    # result_ carries the same numbers.
    assert est.result_.bound == est.bound_
    assert est.result_.lower_bound == est.lower_bound_
    assert est.result_.aggregate == aggregate
    assert est.result_.confidence_level == est.confidence_level


@pytest.mark.parametrize("guarantee", GUARANTEES)
@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_fold_results_has_one_row_per_fold_with_the_documented_columns(
    Est, guarantee, data
):
    X, y = data
    # The Lipschitz bound on its default candidates (2, 4, ..., 4096 buckets, 4 shifts).
    default_grid = (
        {"n_buckets": None, "n_shifts": 4} if Est is LipschitzBucketBound else {}
    )
    est = _folded(
        Est,
        random_state=0,
        cv=4,
        confidence_level=0.9,
        guarantee=guarantee,
        **default_grid,
    )
    est.fit(X, y)
    columns = FOLD_COLUMNS[Est.__name__, guarantee]
    names = TERM_NAMES[Est.__name__, guarantee]
    frame = est.fold_results_
    assert isinstance(frame, pd.DataFrame)
    assert est.n_splits_ == 4
    assert frame.shape[0] == 4
    assert frame.index.tolist() == [0, 1, 2, 3]
    assert frame.columns.tolist() == columns
    assert_array_equal(frame["n_train"] + frame["n_validation"], X.shape[0])
    assert frame["n_validation"].sum() == X.shape[0]  # KFold: every point once
    assert_allclose(frame["delta"], 0.1 / 4, rtol=1e-12)  # union bound over folds
    terms = frame[names].sum(axis=1)
    assert_allclose(frame["bound"], terms, rtol=1e-12)
    assert (frame["lower_bound"] <= frame["bound"]).all()
    # A fold's "estimate" is its plug-in mean |s - eta_hat| (validation_mean);
    # estimate_ is the estimator's own (``_estimate``), not their mean.
    assert_allclose(frame["estimate"], frame["validation_mean"], rtol=0)
    assert est.estimate_ == est.result_.estimate
    # Every documented column is named in the docstring.
    for column in columns:
        assert f"``{column}``" in Est.__doc__, column
    for column in ["n_train", "n_validation"]:
        assert pd.api.types.is_integer_dtype(frame[column]), column
    FOLD_COLUMN_CHECKS[Est.__name__](est, frame)


def _check_tv_columns(est, frame):
    assert (frame["V_hat"] >= 0.0).all()
    assert pd.api.types.is_integer_dtype(frame["n_pieces"])
    assert ((frame["n_pieces"] >= 1) & (frame["n_pieces"] <= frame["n_train"])).all()


def _plugin_bandwidth(m, b1, b2):
    """SPEC section 4: h' = t**2, 2 b t**5 + a t**3 = c / 2, clipped to [1e-4, 1/4]."""
    a, b, c = 3.0 * b1 / 8.0, b2 / 10.0, 1.15 / (2.0 * math.sqrt(2.0 * m))
    t = brentq(lambda t: 2.0 * b * t**5 + a * t**3 - c / 2.0, 0.0, 10.0, xtol=1e-15)
    return min(max(t * t, 1e-4), 0.25)


def _is_power_of_two(n):
    return n > 0 and n & (n - 1) == 0


def _check_nw_columns(est, frame):
    assert pd.api.types.is_integer_dtype(frame["n_bins"])
    if est.guarantee == "paper":
        # Each fold's plug-in bandwidth is computed from its own training size (all
        # equal here: KFold(4) of 2000), the refit's from all n points: smaller.
        expected = [_plugin_bandwidth(m, est.b1_, est.b2_) for m in frame["n_train"]]
        assert_allclose(frame["bandwidth"], expected, rtol=1e-9)
        assert est.bandwidth_ < frame["bandwidth"].min()
        assert_allclose(
            est.bandwidth_,
            _plugin_bandwidth(frame["n_validation"].sum(), est.b1_, est.b2_),
            rtol=1e-9,
        )
        # One grid for every fold, a power of two fine enough for the smallest
        # bandwidth.
        n_bins = frame["n_bins"].iloc[0]
        assert (frame["n_bins"] == n_bins).all()
        assert _is_power_of_two(n_bins) and n_bins * est.bandwidth_ >= 16
    else:
        # bandwidth="auto": per fold one of plugin * 2**(k/2), k = -4..8 (SPEC section
        # 12), on its own grid: at least 64 cells per bandwidth (SPEC section 12), at
        # least 16 for a candidate below the full sample's plug-in bandwidth.
        n = frame["n_validation"].sum()
        for m, h in [*zip(frame["n_train"], frame["bandwidth"]), (n, est.bandwidth_)]:
            k = 2 * math.log2(h / _plugin_bandwidth(m, est.b1_, est.b2_))
            assert abs(k - round(k)) < 1e-6 and -4 <= round(k) <= 8, (m, h)
        for n_bins, h in zip(frame["n_bins"], frame["bandwidth"]):
            cells = 64 if h >= _plugin_bandwidth(n, est.b1_, est.b2_) else 16
            assert _is_power_of_two(n_bins) and cells <= n_bins * h, (n_bins, h)
        # C2 = sum_i c_i**2 with sum_i c_i = 1 over m training points: at least 1/m
        # (Cauchy-Schwarz), and close to it for a smoother of uniform scores.
        m = frame["n_train"]
        assert (frame["sum_c_squared"] >= 1 / m).all()
        assert (frame["sum_c_squared"] < 2 / m).all()
    # Uniform scores leave no validation point without a training score in its kernel.
    assert pd.api.types.is_integer_dtype(frame["n_fallback"])
    assert (frame["n_fallback"] == 0).all()


def _check_lipschitz_columns(est, frame):
    # The default candidates: bucket counts 2, 4, ..., 4096, each with 4 shifts.
    counts = [2**k for k in range(1, 13)]
    n_candidates = len(counts) * est.n_shifts
    for column in ["n_buckets", "shift", "n_candidates", "n_fallback"]:
        assert pd.api.types.is_integer_dtype(frame[column]), column
    assert (frame["n_candidates"] == n_candidates).all()
    assert frame["n_buckets"].isin(counts).all()
    assert ((frame["shift"] >= 0) & (frame["shift"] < est.n_shifts)).all()
    assert (
        (frame["n_fallback"] >= 0) & (frame["n_fallback"] <= frame["n_validation"])
    ).all()
    # candidates_: every candidate's bound on every fold; each fold keeps its smallest
    # (ties: the fewest buckets, then the smallest shift, the first row).
    table = est.candidates_
    assert table.columns.tolist() == [
        "n_buckets",
        "shift",
        *(f"fold{k}_bound" for k in range(len(frame))),
        "mean_bound",
    ]
    assert table.shape[0] == n_candidates
    assert table[["n_buckets", "shift"]].values.tolist() == [
        [b, r] for b in counts for r in range(est.n_shifts)
    ]
    for k in range(len(frame)):
        column = table[f"fold{k}_bound"]
        assert_allclose(frame["bound"].iloc[k], column.min(), rtol=1e-12)
        best = table.loc[column.idxmin()]
        assert (frame["n_buckets"].iloc[k], frame["shift"].iloc[k]) == (
            best["n_buckets"],
            best["shift"],
        )
    fold_bounds = table[[f"fold{k}_bound" for k in range(len(frame))]]
    assert_allclose(table["mean_bound"], fold_bounds.mean(axis=1), rtol=1e-12)
    if est.guarantee == "high_probability":
        # C2 = sum_b (n'_b / n)**2 / n_b of the chosen bucketing: at least 1/m.
        assert (frame["sum_c_squared"] >= 1 / frame["n_train"]).all()
    # predict uses the candidate with the smallest mean bound.
    best = table.loc[table["mean_bound"].idxmin()]
    assert (est.n_buckets_, est.shift_) == (best["n_buckets"], best["shift"])
    assert type(est.n_buckets_) is int and type(est.shift_) is int


FOLD_COLUMN_CHECKS = {
    "TVCalibrationBound": _check_tv_columns,
    "NWCalibrationBound": _check_nw_columns,
    "LipschitzBucketBound": _check_lipschitz_columns,
}


# --------------------------------------------------------------------------------------
# Splitters
# --------------------------------------------------------------------------------------


def _explicit_splits(n):
    idx = np.random.default_rng(0).permutation(n)
    half = n // 2
    return [(idx[:half], idx[half:]), (idx[half:], idx[:half])]


# (make_cv, n_splits) by id.
SPLITTERS = {
    "KFold": (lambda n: KFold(3), 3),
    "KFold-shuffled": (lambda n: KFold(4, shuffle=True, random_state=2), 4),
    "ShuffleSplit": (
        lambda n: ShuffleSplit(n_splits=6, test_size=0.25, random_state=0),
        6,
    ),
    "list": (_explicit_splits, 2),
    "generator": (lambda n: iter(_explicit_splits(n)), 2),  # a one-shot generator
    # Not a partition: every sample is validated twice. (Stratified splitters are
    # rejected: tests/test_splitting.py.)
    "RepeatedKFold": (
        lambda n: RepeatedKFold(n_splits=2, n_repeats=2, random_state=0),
        4,
    ),
}


# The splits that are not a partition (samples validated never or twice) for every
# bound by default, the others for the TV bound.
@pytest.mark.parametrize(
    "Est, splitter",
    slow_except(
        [BOUNDS, SPLITTERS],
        default=_inherited(SPLITTERS, ("ShuffleSplit", "RepeatedKFold")),
    ),
)
def test_any_sklearn_splitter(Est, splitter, data):
    make_cv, n_splits = splitter
    X, y = data
    cv = make_cv(X.shape[0])
    est = _folded(Est, cv=cv).fit(X, y)
    assert est.n_splits_ == n_splits
    assert est.fold_results_.shape[0] == n_splits
    assert_allclose(est.fold_results_["delta"], 0.05 / n_splits, rtol=1e-12)
    assert 0.0 < est.bound_ <= 1.0
    # The same splits given as an explicit list give the same bound.
    splits = (
        list(make_cv(X.shape[0]).split(X, y))
        if hasattr(cv, "split")
        else list(make_cv(X.shape[0]))
    )
    assert _folded(Est, cv=splits).fit(X, y).bound_ == est.bound_
    assert_array_equal(
        est.fold_results_["n_validation"], [len(val) for _, val in splits]
    )


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_int_cv_draws_row_folds(Est, data):
    # Every bound: folds drawn row by row from one seed drawn from random_state (the
    # rule of fit_chunks and Dask input), not KFold's.
    X, y = data
    est = _folded(Est, cv=3, random_state=7).fit(X, y)
    seed = np.random.RandomState(7).randint(np.iinfo(np.int32).max)
    ids = row_folds(seed, 0, y.shape[0], 3)
    splits = [(np.flatnonzero(ids != k), np.flatnonzero(ids == k)) for k in range(3)]
    kfold = list(KFold(3, shuffle=True, random_state=7).split(X))
    assert _folded(Est, cv=kfold).fit(X, y).bound_ != est.bound_
    assert _folded(Est, cv=splits).fit(X, y).bound_ == est.bound_


@pytest.mark.parametrize(
    "splits, match",
    [
        (
            [(np.arange(0, 120), np.arange(100, 200))],
            "Split 0: training and validation parts overlap",
        ),
        (
            [
                (np.arange(100, 200), np.arange(100)),
                (np.arange(0, 100), np.arange(90, 200)),
            ],
            "Split 1: training and validation parts overlap",
        ),
        (
            [(np.r_[np.arange(100), 5], np.arange(100, 200))],
            "Split 0 repeats indices",
        ),
        (
            [(np.arange(100), np.r_[np.arange(100, 200), 150])],
            "Split 0 repeats indices",
        ),
        (
            [(np.arange(100), np.arange(100, 250))],
            r"Split 0: validation indices must lie in \[0, 199\]",
        ),
        ([(np.arange(200), np.array([], dtype=int))], "Split 0 has 200 training and 0"),
        ([], "The cross-validation splitter yielded no splits"),
    ],
)
@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_invalid_explicit_splits_raise(Est, splits, match):
    X, y = _scores_labels(200)
    X_before, y_before = X.copy(), y.copy()
    with pytest.raises(ValueError, match=match):
        _folded(Est, cv=splits).fit(X, y)
    assert_array_equal(X, X_before)
    assert_array_equal(y, y_before)


# Fewest training points a fold may have: TV's transfer term needs two (its
# log(4 (m - 1) / delta)); the NW smoother is defined from one (nearest-neighbour
# fallback), and so is the bucket mean (the nearest training score's bucket).
MIN_TRAIN = {
    "TVCalibrationBound": 2,
    "NWCalibrationBound": 1,
    "LipschitzBucketBound": 1,
}


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_smallest_training_part(Est):
    X, y = _scores_labels(200)
    k = MIN_TRAIN[Est.__name__]
    est = _folded(Est, cv=[(np.arange(k), np.arange(k, 200))]).fit(X, y)
    assert est.fold_results_["n_train"].tolist() == [k]
    assert est.bound_ == 1.0  # certified, if uninformative
    with pytest.raises(
        ValueError,
        match=rf"Split 0 has {k - 1} training and {200 - k + 1} validation points; "
        rf"{Est.__name__} needs at least {k} and 1\.",
    ):
        _folded(Est, cv=[(np.arange(k - 1), np.arange(k - 1, 200))]).fit(X, y)


# --------------------------------------------------------------------------------------
# NWCalibrationBound: the derivative bounds and the validation subsample
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_nw_h_is_a_way_to_give_b1_and_b2(guarantee, data):
    X, y = data
    h = 2**-4
    from_h = NWCalibrationBound(h=h, guarantee=guarantee, random_state=0).fit(X, y)
    # The docstring's b1 = tanh(1/h) / (2h), and b2 = tanh(1/h)**2 / (2 h**2)
    # (SPEC section 12), or Corollary 4's 1.5 tanh(1/h)**2 / h**2 in paper mode.
    assert_allclose(from_h.b1_, math.tanh(1 / h) / (2 * h), rtol=1e-12)
    factor = 1.5 if guarantee == "paper" else 0.5
    assert_allclose(from_h.b2_, factor * math.tanh(1 / h) ** 2 / h**2, rtol=1e-12)
    given = NWCalibrationBound(
        b1=from_h.b1_, b2=from_h.b2_, guarantee=guarantee, random_state=0
    ).fit(X, y)
    _assert_same_fit(given, from_h)
    # Given bounds are used as they are (as floats).
    est = NWCalibrationBound(b1=2, b2=2, guarantee=guarantee, random_state=0).fit(X, y)
    assert type(est.b1_) is float and type(est.b2_) is float
    assert (est.b1_, est.b2_) == (2.0, 2.0)
    assert type(est.bandwidth_) is float
    plugin = _plugin_bandwidth(X.shape[0], 2.0, 2.0)
    if guarantee == "paper":  # "auto" is the plug-in rule
        assert_allclose(est.bandwidth_, plugin, rtol=1e-9)
    else:  # one of plugin * 2**(k/2), k = -4..8
        k = 2 * math.log2(est.bandwidth_ / plugin)
        assert abs(k - round(k)) < 1e-6 and -4 <= round(k) <= 8
    # Smaller derivative bounds, a smaller smoothing term (eta(s) = s**2: b1 = b2 = 2
    # hold, and are far below h = 1/16's b1 = 8, b2 = 128 or 384).
    assert est.terms_["smoothing_mean"] < from_h.terms_["smoothing_mean"]


@pytest.mark.parametrize(
    "random_state",
    [0, None, "RandomState(0)"],
    ids=["int", "None", "RandomState"],
)
def test_nw_score_of_a_fitted_estimator_is_reproducible(random_state, data):
    X, y = data
    if random_state == "RandomState(0)":
        random_state = np.random.RandomState(0)
    X_test, y_test = _scores_labels(1500, seed=11)
    est = NWCalibrationBound(h=2**-4, max_validation=100, random_state=random_state)
    est.fit(X, y)
    assert est.fold_results_["n_validation"].tolist() == [100] * 5
    first = est.score(X_test, y_test)
    assert est.score(X_test, y_test) == first


# --------------------------------------------------------------------------------------
# LipschitzBucketBound: the Lipschitz constant
# --------------------------------------------------------------------------------------


def test_lipschitz_h_is_a_way_to_give_L(data):
    X, y = data
    h = 2**-2
    grid = LIPSCHITZ_SMALL_GRID
    from_h = LipschitzBucketBound(h=h, random_state=0, **grid).fit(X, y)
    # The docstring's L = tanh(1/h) / (2h).
    assert_allclose(from_h.L_, math.tanh(1 / h) / (2 * h), rtol=1e-12)
    given = LipschitzBucketBound(L=from_h.L_, random_state=0, **grid).fit(X, y)
    _assert_same_fit(given, from_h)
    assert lipschitz_bucket_bound(y, X, h=h, random_state=0, **grid) == from_h.bound_
    # A given constant is used as it is (as a float).
    est = LipschitzBucketBound(L=1, random_state=0, **grid).fit(X, y)
    assert type(est.L_) is float and est.L_ == 1.0
    again = LipschitzBucketBound(L=1.0, random_state=0, **grid).fit(X, y)
    assert est.bound_ == again.bound_
    # A larger constant, a larger bound (eta(s) = s**2 is 2-Lipschitz, not 1-Lipschitz:
    # L = 1 only shows that the bound grows with L).
    bounds = [
        LipschitzBucketBound(L=L, random_state=0, **grid).fit(X, y).bound_
        for L in (1.0, 2.0, 8.0)
    ]
    assert bounds[0] < bounds[1] < bounds[2] < 1.0
