"""scikit-learn's common estimator checks, and the estimators inside sklearn's tools.

The bound estimators take *scores*: X of shape ``(n_samples,)``, ``(n_samples, 1)`` or a
``predict_proba`` output of shape ``(n_samples, 2)`` with values in [0, 1]. Many common
checks fit on feature matrices (several columns, or values far outside [0, 1]); our
estimators reject those with a clear ValueError, so those checks are listed as expected
failures below (STYLE.md section 8), and ``tests/test_base.py`` re-tests
what they cover on valid scores. ``two_d_array=False`` is never set: it would silently
skip every check.

The checks run once, through ``parametrize_with_checks`` (expected failures reported by
``tests/_estimator_checks.py``, without formatting scikit-learn's tracebacks); the
tests of the table below list the checks without running them, and re-run only the
expected failures of the bound estimators (which stop at the first ``fit``) to read
why they fail.
"""

from unittest import SkipTest

import numpy as np
import pytest
from _bounds import scores_labels
from _estimator_checks import check_name, run_check
from _synthetic import slow_except
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import (
    check_param_validation,
    estimator_checks_generator,
    parametrize_with_checks,
)

from skcalbound import (
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    NWCalibrationBound,
    SechPerturbedClassifier,
    TVCalibrationBound,
    lipschitz_bucket_bound,
    nw_bound,
    tv_bound,
)

# NWCalibrationBound has no default for the derivative bounds of the calibration
# function: it is built with h (from which b1 and b2 follow), which the common checks
# keep (they clone the instance) and change only when testing parameter validation.
# LipschitzBucketBound likewise has no default Lipschitz constant: it is built with L.
BOUND_ESTIMATORS = [
    TVCalibrationBound(),
    NWCalibrationBound(h=2**-4),
    LipschitzBucketBound(L=2.0),
]
# The meta-estimator, around a linear model, a naive Bayes model and a pipeline.
PERTURBED_ESTIMATORS = [
    SechPerturbedClassifier(LogisticRegression()),
    SechPerturbedClassifier(GaussianNB()),
    SechPerturbedClassifier(make_pipeline(StandardScaler(), LogisticRegression())),
]
# The monotone band: no assumption constant, no guarantee parameter, no folds by
# default (SPEC section 14); its X is checked as the other bounds' is.
MONOTONE_ESTIMATORS = [MonotoneCalibrationBound()]
ESTIMATORS = BOUND_ESTIMATORS + MONOTONE_ESTIMATORS + PERTURBED_ESTIMATORS

# --------------------------------------------------------------------------------------
# The single table of expected failures, keyed by class name. Every entry of a bound
# estimator is a check that feeds X with several columns and/or values outside [0, 1];
# the reason names that input and where the behaviour is re-tested on valid scores.
# --------------------------------------------------------------------------------------
_SHAPES = "scores must be (n,), (n, 1) or a (n, 2) predict_proba output"
_RANGE = "scores must lie in [0, 1]"
_RETEST = "re-tested on scores in tests/test_base.py"

_BOUND_ESTIMATOR_XFAILS = {
    "check_fit_score_takes_y": (
        f"fits on uniform X with 3 columns; {_SHAPES}. fit/score with y: {_RETEST}"
    ),
    "check_estimators_overwrite_params": (
        f"fits on make_blobs X, 2 columns whose rows do not sum to one; {_SHAPES}. "
        f"Parameters unchanged by fit: {_RETEST}"
    ),
    "check_dont_overwrite_parameters": (
        f"fits on 3 * uniform X with 3 columns; {_SHAPES}. No public attribute "
        f"added besides fitted ones: {_RETEST}"
    ),
    "check_estimators_fit_returns_self": (
        f"fits on make_blobs X, 2 columns whose rows do not sum to one; {_SHAPES}. "
        f"fit returns self: {_RETEST}"
    ),
    "check_readonly_memmap_input": (
        f"fits on make_blobs X, 2 columns whose rows do not sum to one; {_SHAPES}. "
        f"Read-only input: {_RETEST}"
    ),
    "check_n_features_in_after_fitting": (
        f"fits on normal X with 4 columns; {_SHAPES}. n_features_in_: {_RETEST}"
    ),
    "check_positive_only_tag_during_fit": (
        f"fits on centred iris X, 4 columns with negative values; {_SHAPES} and "
        f"{_RANGE}"
    ),
    "check_estimators_dtypes": (
        f"fits on 3 * uniform X with 5 columns; {_SHAPES}. float32/int input: {_RETEST}"
    ),
    "check_dtype_object": (
        f"fits on object X with 10 columns; {_SHAPES}. Object/str labels: {_RETEST}"
    ),
    "check_pipeline_consistency": (
        f"fits on make_blobs X with 3 columns; {_SHAPES}. Deterministic refit: "
        f"{_RETEST}"
    ),
    "check_estimators_nan_inf": (
        f"feeds NaN/inf in X with 3 columns, which is rejected for its shape first, "
        f"and then fits on 3 finite columns; {_SHAPES}. NaN/inf scores: "
        "tests/test_validation.py"
    ),
    "check_estimators_pickle": (
        f"fits on make_blobs X with 3 columns; {_SHAPES}. Pickle round trip: {_RETEST}"
    ),
    "check_f_contiguous_array_estimator": (
        f"fits on 3 * uniform X with 3 columns; {_SHAPES}. Fortran-ordered (n, 2) "
        f"input: {_RETEST}"
    ),
    "check_methods_sample_order_invariance": (
        f"fits on 3 * uniform X with 3 columns; {_SHAPES}. predict is pointwise: "
        f"{_RETEST}"
    ),
    "check_methods_subset_invariance": (
        f"fits on 3 * uniform X with 3 columns; {_SHAPES}. predict is pointwise: "
        f"{_RETEST}"
    ),
    "check_fit2d_1sample": (
        f"fits on one sample with 10 columns, rejected for its shape before its "
        f"size; {_SHAPES}"
    ),
    "check_fit2d_1feature": (
        f"fits on one column of 3 * uniform values, rejected for its range; {_RANGE}"
    ),
    "check_dict_unchanged": (
        f"fits on 3 * uniform X with 3 columns; {_SHAPES}. predict does not change "
        f"the estimator: {_RETEST}"
    ),
    "check_fit_idempotent": (
        f"fits on normal(loc=100) X, 2 columns whose rows do not sum to one; {_SHAPES} "
        f"and {_RANGE}. Idempotent fit: {_RETEST}"
    ),
    "check_fit_check_is_fitted": (
        f"fits on normal(loc=100) X, 2 columns whose rows do not sum to one; {_SHAPES} "
        f"and {_RANGE}"
    ),
    "check_n_features_in": (
        f"fits on normal(loc=100) X, 2 columns whose rows do not sum to one; {_SHAPES} "
        f"and {_RANGE}. n_features_in_: {_RETEST}"
    ),
    "check_fit2d_predict1d": (
        f"fits on 3 * uniform X with 3 columns; {_SHAPES}. 1-D input is accepted "
        f"by design: {_RETEST}"
    ),
}

EXPECTED_FAILED_CHECKS = {
    "TVCalibrationBound": _BOUND_ESTIMATOR_XFAILS,
    "NWCalibrationBound": _BOUND_ESTIMATOR_XFAILS,
    "LipschitzBucketBound": _BOUND_ESTIMATOR_XFAILS,
    "MonotoneCalibrationBound": _BOUND_ESTIMATOR_XFAILS,
    # Only the checks that assume deterministic predictions (STYLE.md section 5). The
    # estimator sets the non_deterministic tag, so scikit-learn itself skips
    # check_pipeline_consistency, check_methods_subset_invariance and
    # check_methods_sample_order_invariance; the one below does not look at the tag.
    "SechPerturbedClassifier": {
        "check_classifiers_train": (
            "compares predict(X) with the argmax of a separate predict_proba(X) call; "
            "each call draws fresh perturbation noise, as the guarantee requires "
            "(noise derived from X would break it for discrete inputs), so a score "
            "near 1/2 can land on either side in the two calls. predict == argmax of "
            "the same draw is tested in tests/test_sech_perturbed.py"
        ),
    },
}

# These must pass for every estimator (STYLE.md section 8).
MUST_PASS = [
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_estimators_unfitted",
    "check_mixin_order",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_requires_y_none",
    "check_estimators_empty_data_messages",
    "check_estimator_sparse_tag",
    "check_valid_tag_types",
]

# Messages of our own input validation that reject feature matrices (skcalbound
# _validation): an expected failure must come from one of them, the one its reason
# states: a 2-column X whose rows do not sum to one, one column outside [0, 1], or any
# other shape.
_X_REJECTED = {
    "shape": "X must hold scores of shape",
    "rows": "X has 2 columns, so it is read as a predict_proba output",
    "range": "Scores must be probabilities in [0, 1]",
}


def _stated_rejection(reason):
    if "rows do not sum to one" in reason:
        return _X_REJECTED["rows"]
    if "rejected for its range" in reason:
        return _X_REJECTED["range"]
    assert _SHAPES in reason, reason
    return _X_REJECTED["shape"]


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


def _ids(estimators):
    return [type(est).__name__ for est in estimators]


@parametrize_with_checks(
    ESTIMATORS, expected_failed_checks=_expected_failed_checks, xfail_strict=True
)
def test_sklearn_compatible_estimator(estimator, check):
    # A must-pass check has to run and pass: a skip is a failure here.
    run_check(estimator, check, _expected_failed_checks(estimator), must_pass=MUST_PASS)


# The bounds in their published form (guarantee="paper"): the same parameters and
# constraints; the common checks themselves do not depend on the mode.
PAPER_ESTIMATORS = [
    clone(est).set_params(guarantee="paper") for est in BOUND_ESTIMATORS
]


@pytest.mark.parametrize(
    "estimator",
    ESTIMATORS + PAPER_ESTIMATORS,
    ids=_ids(ESTIMATORS) + [f"{name}-paper" for name in _ids(PAPER_ESTIMATORS)],
)
def test_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


def test_expected_failure_table_lists_only_known_classes():
    assert set(EXPECTED_FAILED_CHECKS) <= {type(est).__name__ for est in ESTIMATORS}
    for name, table in EXPECTED_FAILED_CHECKS.items():
        assert not set(table) & set(MUST_PASS), name
        for entry, reason in table.items():
            assert isinstance(reason, str) and len(reason) > 20, (name, entry)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids(ESTIMATORS))
def test_expected_failures_and_must_pass_checks_are_real_checks(estimator):
    # parametrize_with_checks silently ignores a table entry whose name matches no
    # check: every entry, and every must-pass check, must be one of the checks
    # test_sklearn_compatible_estimator runs (there, each entry must fail, as the
    # xfails are strict, and each must-pass check must run and pass).
    table = _expected_failed_checks(estimator)
    names = {check_name(check) for _, check in estimator_checks_generator(estimator)}
    assert set(table) <= names, sorted(set(table) - names)
    assert set(MUST_PASS) <= names, sorted(set(MUST_PASS) - names)


@pytest.mark.parametrize(
    "estimator",
    BOUND_ESTIMATORS + MONOTONE_ESTIMATORS,
    ids=_ids(BOUND_ESTIMATORS + MONOTONE_ESTIMATORS),
)
def test_expected_failures_fail_on_our_input_validation(estimator):
    # Every expected failure of a bound estimator must come from our own rejection of
    # X, for the reason its table entry states (rows not summing to one, range, or
    # shape). Only these checks run here; each stops at the first fit.
    table = _expected_failed_checks(estimator)
    assert table is _BOUND_ESTIMATOR_XFAILS
    seen = set()
    for est, check in estimator_checks_generator(estimator):
        name = check_name(check)
        if name not in table:
            continue
        seen.add(name)
        with pytest.raises(Exception) as excinfo:
            check(est)
        assert not isinstance(excinfo.value, SkipTest), (name, str(excinfo.value))
        exc, messages = excinfo.value, []
        while exc is not None:
            messages.append(str(exc))
            exc = exc.__cause__ or exc.__context__
        expected = _stated_rejection(table[name])
        assert any(expected in msg for msg in messages), (name, expected, messages)
    assert seen == set(table)


# --------------------------------------------------------------------------------------
# The estimator inside sklearn's model-selection tools.
# --------------------------------------------------------------------------------------


def _hand_scores(estimator, X, y, cv):
    """``clone(estimator).fit(train).score(test)`` for every split of ``cv``."""
    return np.array(
        [
            clone(estimator).fit(X[train], y[train]).score(X[test], y[test])
            for train, test in cv.split(X)
        ]
    )


# Every bound estimator, with fixed folds.
# Seeded copies for the tools' tests below; the Lipschitz bound on 6 candidate
# bucketings instead of the default 48 (a fit costs per candidate; what these tests
# compare, scores and bounds against a hand loop, does not depend on the grid).
SEEDED = [
    clone(est).set_params(
        random_state=0,
        **(
            {"n_buckets": [2, 16, 128], "n_shifts": 2}
            if isinstance(est, LipschitzBucketBound)
            else {}
        ),
    )
    for est in BOUND_ESTIMATORS
]

# (estimator, parameter, grid in order of increasing bound). The surrogate does not
# depend on the parameter: TV's V enters only the bound; NW's b1 enters only the
# smoothing-error bound g_T once the kernel bandwidth is fixed (the plug-in bandwidth
# would depend on b1); Lipschitz's L enters only the smoothing-error bound g_T once a
# single candidate bucketing is fixed (with several, L changes which one predict uses).
# TV's denoising bound: its cell bound's blocks (and so predict) depend on V.
GRID_CASES = [
    (TVCalibrationBound(method="denoise", random_state=0), "V", [0.25, 0.5, 1.0]),
    (
        NWCalibrationBound(b2=2.0, bandwidth=0.1, random_state=0),
        "b1",
        [0.5, 1.0, 2.0],
    ),
    (
        LipschitzBucketBound(n_buckets=16, n_shifts=1, random_state=0),
        "L",
        [0.5, 1.0, 2.0],
    ),
]


# TV and NW by default; Lipschitz (the same GridSearchCV and scorer path, ~0.7 s)
# under slow.
@pytest.mark.parametrize(
    "estimator, param, grid",
    [
        pytest.param(
            *case,
            id=type(case[0]).__name__,
            marks=pytest.mark.slow if isinstance(case[0], LipschitzBucketBound) else (),
        )
        for case in GRID_CASES
    ],
)
def test_grid_search_prefers_the_smallest_assumption_constant(estimator, param, grid):
    X, y = scores_labels(3000)
    outer = KFold(n_splits=3, shuffle=True, random_state=0)
    search = GridSearchCV(estimator, {param: grid}, cv=outer).fit(X, y)

    # The bound grows with the constant while the surrogate does not depend on it.
    assert search.best_params_ == {param: grid[0]}
    mean = search.cv_results_["mean_test_score"]
    assert np.all(np.diff(mean) < 0)
    assert np.all((mean >= -1.0) & (mean < 0.0))
    for i, value in enumerate(grid):
        candidate = clone(estimator).set_params(**{param: value})
        expected = _hand_scores(candidate, X, y, outer)
        assert np.all(expected > -1.0)  # not clipped: the comparison is informative
        assert_allclose(
            search.cv_results_["split0_test_score"][i], expected[0], rtol=1e-12
        )
        assert_allclose(mean[i], expected.mean(), rtol=1e-12)
    # The surrogate indeed does not depend on the constant.
    fits = [clone(estimator).set_params(**{param: value}).fit(X, y) for value in grid]
    for fit in fits[1:]:
        assert_array_equal(fit.predict(X), fits[0].predict(X), strict=True)
        assert fit.bound_ > fits[0].bound_
    # The refit estimator is the best one fitted on all data.
    assert search.best_estimator_.get_params()[param] == grid[0]
    assert_allclose(search.best_estimator_.bound_, fits[0].bound_, rtol=1e-12)


# What every bound inherits from ``_base`` (the fit and score protocol): the TV bound,
# the cheapest to fit, stands for all three in the default suite.
SEEDED_BY_NAME = {type(est).__name__: est for est in SEEDED}
INHERITED = slow_except([SEEDED_BY_NAME], default="TVCalibrationBound")


@pytest.mark.parametrize("estimator", INHERITED)
def test_grid_search_over_cv_scores_do_not_depend_on_cv(estimator):
    # score is the fixed-split bound of the surrogate refit on all training data; the
    # inner cross-fitting (cv) changes bound_ but not score, so all candidates tie
    # and GridSearchCV keeps the first. TV: its cross-fitted denoising bound (the
    # default cell bound has no folds, so cv changes nothing there).
    if isinstance(estimator, TVCalibrationBound):
        estimator = clone(estimator).set_params(method="denoise")
    X, y = scores_labels(3000)
    outer = KFold(n_splits=3, shuffle=True, random_state=1)
    search = GridSearchCV(estimator, {"cv": [3, 5, 10]}, cv=outer).fit(X, y)
    assert search.best_params_ == {"cv": 3}
    mean = search.cv_results_["mean_test_score"]
    assert_allclose(mean, mean[0], rtol=0, atol=0)
    expected = _hand_scores(clone(estimator).set_params(cv=5), X, y, outer)
    assert_allclose(search.cv_results_["split0_test_score"][1], expected[0], rtol=1e-12)
    assert_allclose(mean[1], expected.mean(), rtol=1e-12)
    assert -1.0 < mean[0] < 0.0
    # ... while the certified bound itself does depend on cv.
    bounds = [clone(estimator).set_params(cv=k).fit(X, y).bound_ for k in (3, 10)]
    assert bounds[0] != bounds[1]


@pytest.mark.parametrize("est", INHERITED)
def test_cross_validate_uses_the_estimator_score(est):
    X, y = scores_labels(2400, seed=3)
    cv = KFold(n_splits=4, shuffle=True, random_state=0)
    result = cross_validate(est, X, y, cv=cv, return_estimator=True)
    expected = _hand_scores(est, X, y, cv)
    assert_allclose(result["test_score"], expected, rtol=1e-12)
    assert np.all((result["test_score"] >= -1.0) & (result["test_score"] <= 0.0))
    for fitted, (train, _) in zip(result["estimator"], cv.split(X)):
        assert_allclose(
            fitted.bound_, clone(est).fit(X[train], y[train]).bound_, rtol=1e-12
        )


def _tv_bound(y_true, y_prob):
    return tv_bound(y_true, y_prob, random_state=0)


def _nw_bound(y_true, y_prob):
    # The logistic model below is well specified, so eta(s) is close to s: b1 = b2 = 2
    # are given directly (the scores are not perturbed, so there is no h).
    return nw_bound(y_true, y_prob, b1=2.0, b2=2.0, random_state=0)


def _lipschitz_bucket_bound(y_true, y_prob):
    # As for NW: eta(s) is close to s, so L = 2 is given directly (no h).
    return lipschitz_bucket_bound(y_true, y_prob, L=2.0, random_state=0)


@pytest.mark.parametrize(
    "bound",
    [_tv_bound, _nw_bound, _lipschitz_bucket_bound],
    ids=["tv_bound", "nw_bound", "lipschitz_bucket_bound"],
)
def test_make_scorer_around_a_bound_function_in_cross_validate(bound):
    rng = np.random.default_rng(0)
    n = 6000
    features = rng.normal(size=(n, 3))
    logits = features @ np.array([1.5, -1.0, 0.5])
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-logits))).astype(int)
    scorer = make_scorer(
        bound, response_method="predict_proba", greater_is_better=False
    )
    cv = KFold(n_splits=3, shuffle=True, random_state=0)
    result = cross_validate(LogisticRegression(), features, y, cv=cv, scoring=scorer)

    expected = []
    for train, test in cv.split(features):
        clf = LogisticRegression().fit(features[train], y[train])
        expected.append(-bound(y[test], clf.predict_proba(features[test])[:, 1]))
    assert_allclose(result["test_score"], expected, rtol=1e-12)
    # A well-specified logistic model is nearly calibrated: the bound is informative.
    assert np.all((result["test_score"] > -1.0) & (result["test_score"] < 0.0))
