"""MulticlassCalibrationBound: the reductions, validation, common checks and coverage.

The Monte Carlo coverage tests sample from ``make_multiclass``, whose top-label and
class-wise calibration errors are exact (the derivation is in its docstring and is
re-checked by simulation in ``tests/test_datasets.py``). A small version runs by
default (K = 3); the ``slow`` ones run it for K = 10 too and repeat it 500 times.
"""

import json
import warnings

import numpy as np
import pytest
from _estimator_checks import run_check
from _synthetic import binomial_tolerance, study_split
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import (
    check_param_validation,
    parametrize_with_checks,
)

from skcalbound import (
    BelowChanceWarning,
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    MonotonicityWarning,
    NWCalibrationBound,
    TVCalibrationBound,
    perturb_scores,
)
from skcalbound._multiclass import MulticlassCalibrationBound
from skcalbound.datasets import make_multiclass
from skcalbound.datasets._perturbed import SechPerturbed

# --------------------------------------------------------------------------------------
# scikit-learn's common checks. Many fit on feature matrices (several columns that are
# not probability rows, values far outside [0, 1]); the estimator rejects those with a
# ValueError, so they are expected failures. What they cover is re-tested below on
# valid predict_proba rows.
# --------------------------------------------------------------------------------------
COMMON = [
    MulticlassCalibrationBound(TVCalibrationBound(random_state=0)),
    MulticlassCalibrationBound(
        NWCalibrationBound(b1=2.0, b2=2.0, random_state=0), strategy="classwise"
    ),
]
# LipschitzBucketBound inside the meta-estimator is checked by hand below.

_ROWS = "X must be predict_proba rows in [0, 1] summing to one"
_RANGE_X = f"feeds X with values outside [0, 1]; {_ROWS}"
_SUM_X = f"feeds X whose rows do not sum to one; {_ROWS}"
_RETEST = "re-tested on probability rows in tests/test_multiclass.py"

EXPECTED_FAILED_CHECKS = {
    "check_fit_score_takes_y": f"{_SUM_X}. fit with y: {_RETEST}",
    "check_estimators_overwrite_params": (
        f"{_RANGE_X} (make_blobs). Parameters unchanged by fit: {_RETEST}"
    ),
    "check_dont_overwrite_parameters": f"{_RANGE_X} (3 * uniform). {_RETEST}",
    "check_estimators_fit_returns_self": (
        f"{_RANGE_X} (make_blobs). fit returns self: {_RETEST}"
    ),
    "check_readonly_memmap_input": (
        f"{_RANGE_X} (make_blobs). Read-only input: {_RETEST}"
    ),
    "check_n_features_in_after_fitting": (
        f"{_RANGE_X} (normal). n_features_in_: {_RETEST}"
    ),
    "check_positive_only_tag_during_fit": f"{_RANGE_X} (centred iris)",
    "check_estimators_dtypes": f"{_RANGE_X} (3 * uniform). float32 input: {_RETEST}",
    "check_dtype_object": f"{_SUM_X} (object X with 10 columns)",
    "check_pipeline_consistency": f"{_RANGE_X}. Deterministic refit: {_RETEST}",
    "check_estimators_nan_inf": (
        f"{_SUM_X} (3 finite columns after the NaN/inf cases). NaN/inf: {_RETEST}"
    ),
    "check_estimators_pickle": f"{_RANGE_X}. Pickle round trip: {_RETEST}",
    "check_f_contiguous_array_estimator": f"{_RANGE_X} (3 * uniform)",
    "check_methods_sample_order_invariance": f"{_RANGE_X} (3 * uniform)",
    "check_methods_subset_invariance": f"{_RANGE_X} (3 * uniform)",
    "check_fit2d_1sample": (
        f"{_RANGE_X}: one sample with 10 columns, rejected for its range before its "
        "size"
    ),
    "check_fit2d_1feature": (
        "feeds one column; a predict_proba output has at least 2 columns (K = 1 is "
        f"rejected with its own message: {_RETEST})"
    ),
    "check_dict_unchanged": f"{_RANGE_X} (3 * uniform)",
    "check_fit_idempotent": f"{_RANGE_X} (normal(loc=100)). Idempotent fit: {_RETEST}",
    "check_fit_check_is_fitted": f"{_RANGE_X} (normal(loc=100))",
    "check_n_features_in": f"{_RANGE_X} (normal(loc=100)). {_RETEST}",
    "check_fit2d_predict1d": f"{_RANGE_X} (3 * uniform)",
}


@parametrize_with_checks(
    COMMON, expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS, xfail_strict=True
)
def test_sklearn_compatible(estimator, check):
    run_check(estimator, check, EXPECTED_FAILED_CHECKS)


@pytest.mark.parametrize("estimator", COMMON, ids=["tv", "nw-classwise"])
def test_param_validation(estimator):
    check_param_validation("MulticlassCalibrationBound", estimator)


# --------------------------------------------------------------------------------------
# The reductions, by hand.
# --------------------------------------------------------------------------------------


def _data(n=3000, K=3, seed=0):
    data = make_multiclass(n, K, random_state=seed)
    return data.proba, data.labels


def _same_fit(a, b):
    assert a.bound_ == b.bound_
    assert a.lower_bound_ == b.lower_bound_
    assert a.estimate_ == b.estimate_


@pytest.mark.parametrize(
    "inner",
    [
        TVCalibrationBound(random_state=3, confidence_level=0.9),
        LipschitzBucketBound(L=2.0, random_state=3, confidence_level=0.9),
    ],
    ids=["tv", "lipschitz"],
)
def test_top_label_is_one_inner_fit_on_confidence_and_correctness(inner):
    P, y = _data()
    est = MulticlassCalibrationBound(inner).fit(P, y)
    hand = clone(inner).fit(P.max(axis=1), (P.argmax(axis=1) == y).astype(int))
    _same_fit(est.estimator_, hand)
    assert (est.bound_, est.lower_bound_, est.estimate_) == (
        hand.bound_,
        hand.lower_bound_,
        hand.estimate_,
    )
    assert est.estimator_.confidence_level == 0.9
    assert est.estimator_.random_state == 3
    assert not hasattr(inner, "bound_")  # the user's object is never fitted
    assert_array_equal(est.classes_, [0, 1, 2])
    assert est.n_features_in_ == 3
    assert not hasattr(est, "estimators_") and not hasattr(est, "per_class_")


@pytest.mark.parametrize("K", [2, 4])
def test_classwise_is_one_fit_per_class_at_the_union_bound_level(K):
    P, y = _data(K=K, seed=1)
    inner = NWCalibrationBound(b1=2.0, b2=2.0 * K, random_state=0, confidence_level=0.9)
    est = MulticlassCalibrationBound(inner, strategy="classwise").fit(P, y)
    level = 1.0 - 0.1 / K
    assert len(est.estimators_) == K
    for k, fitted in enumerate(est.estimators_):
        assert fitted.confidence_level == pytest.approx(level, abs=1e-15)
        hand = clone(inner).set_params(confidence_level=level).fit(P[:, k], y == k)
        _same_fit(fitted, hand)
    frame = est.per_class_
    assert list(frame.columns) == [
        "class",
        "n_positive",
        "lower_bound",
        "bound",
        "estimate",
    ]
    assert_array_equal(frame["class"], np.arange(K))
    assert_array_equal(frame["n_positive"], np.bincount(y, minlength=K))
    bounds = np.array([e.bound_ for e in est.estimators_])
    lowers = np.array([e.lower_bound_ for e in est.estimators_])
    estimates = np.array([e.estimate_ for e in est.estimators_])
    assert_allclose(frame["bound"], bounds, rtol=0)
    assert_allclose(est.bound_, bounds.mean(), rtol=1e-15)
    assert_allclose(est.lower_bound_, lowers.mean(), rtol=1e-15)
    assert_allclose(est.estimate_, estimates.mean(), rtol=1e-15)
    assert est.worst_bound_ == bounds.max()
    assert est.worst_lower_bound_ == lowers.max()
    assert not hasattr(est, "estimator_")


@pytest.mark.parametrize("cv", [None, 3])
def test_monotone_inner_equals_its_fits_on_the_reductions(cv):
    # make_multiclass's top-label and class-wise calibration functions are monotone.
    P, y = _data(K=3, seed=2)
    inner = MonotoneCalibrationBound(cv=cv, random_state=5, confidence_level=0.9)
    top = MulticlassCalibrationBound(inner).fit(P, y)
    hand = clone(inner).fit(P.max(axis=1), (P.argmax(axis=1) == y).astype(int))
    _same_fit(top.estimator_, hand)
    assert (top.bound_, top.lower_bound_) == (hand.bound_, hand.lower_bound_)
    assert top.certificate_["inner"] == [top.estimator_.certificate_]
    cw = MulticlassCalibrationBound(inner, strategy="classwise").fit(P, y)
    level = 1.0 - 0.1 / 3
    bounds, lowers = [], []
    for k, fitted in enumerate(cw.estimators_):
        one = clone(inner).set_params(confidence_level=level).fit(P[:, k], y == k)
        _same_fit(fitted, one)
        bounds.append(one.bound_)
        lowers.append(one.lower_bound_)
    assert_allclose(cw.bound_, np.mean(bounds), rtol=1e-15)
    assert_allclose(cw.lower_bound_, np.mean(lowers), rtol=1e-15)
    assert (cw.worst_bound_, cw.worst_lower_bound_) == (max(bounds), max(lowers))
    assert not hasattr(inner, "bound_")


def test_monotone_classwise_fits_an_absent_class_on_all_negative_labels(monkeypatch):
    from skcalbound import _validation

    P, y = _without_class_2()
    inner = MonotoneCalibrationBound(random_state=0, confidence_level=0.9)
    est = MulticlassCalibrationBound(inner, strategy="classwise", classes=[0, 1, 2])
    absent = est.fit(P, y).estimators_[2]
    assert absent.certificate_["n_positive"] == 0
    binary_classes = _validation._binary_classes

    def both_classes(labels):
        return np.array([0, 1]) if np.all(labels == 0) else binary_classes(labels)

    monkeypatch.setattr(_validation, "_binary_classes", both_classes)
    hand = clone(inner).set_params(confidence_level=1.0 - 0.1 / 3)
    _same_fit(absent, hand.fit(P[:, 2], np.zeros(y.size, dtype=int)))
    # No positive: eta = 0 in the band's eyes, CE = mean of the column, inside.
    assert absent.lower_bound_ <= P[:, 2].mean() <= absent.bound_


def test_string_labels_follow_sorted_columns_and_pos_label_is_ignored():
    P, y = _data(seed=2)
    names = np.array(["ant", "bee", "cat"])
    inner = TVCalibrationBound(random_state=0, pos_label="bee")  # ignored
    est = MulticlassCalibrationBound(inner).fit(P, names[y])
    ref = MulticlassCalibrationBound(TVCalibrationBound(random_state=0)).fit(P, y)
    assert_array_equal(est.classes_, names)
    assert est.bound_ == ref.bound_
    est = MulticlassCalibrationBound(inner, strategy="classwise").fit(P, names[y])
    assert est.estimators_[0].pos_label is None
    assert_array_equal(est.per_class_["class"], names)


# The tied half is right 90% of the time at confidence 0.4, the other half about a
# third of the time at higher confidences: below chance by construction.
@pytest.mark.filterwarnings("ignore::skcalbound.BelowChanceWarning")
def test_argmax_ties_go_to_the_first_maximal_column():
    rng = np.random.default_rng(0)
    n = 400
    P = np.tile([0.4, 0.4, 0.2], (n, 1))  # the second half ties classes 0 and 1
    P[: n // 2] = rng.dirichlet([1, 1, 1], size=n // 2)
    y = rng.integers(3, size=n)
    y[n // 2 :] = np.where(rng.uniform(size=n - n // 2) < 0.9, 0, 1)
    est = MulticlassCalibrationBound(TVCalibrationBound(random_state=0)).fit(P, y)
    head = P[: n // 2].argmax(axis=1) == y[: n // 2]
    first = np.concatenate([head, y[n // 2 :] == 0]).astype(int)  # numpy's rule
    last = np.concatenate([head, y[n // 2 :] == 1]).astype(int)  # the other one
    hand = TVCalibrationBound(random_state=0).fit(P.max(axis=1), first)
    other = TVCalibrationBound(random_state=0).fit(P.max(axis=1), last)
    _same_fit(est.estimator_, hand)
    assert abs(other.estimate_ - hand.estimate_) > 0.02  # the rule is visible


def _below_chance_messages(P, y, **params):
    """The fit and the messages of the BelowChanceWarnings it issues, each pointing
    at this file (the caller's line)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = MulticlassCalibrationBound(
            TVCalibrationBound(random_state=0), **params
        ).fit(P, y)
    below = [w for w in caught if issubclass(w.category, BelowChanceWarning)]
    assert all(w.filename == __file__ for w in below)
    return est, [str(w.message) for w in below]


@pytest.mark.parametrize("strategy", ["top_label", "classwise"])
def test_columns_in_order_raise_no_below_chance_warning(strategy):
    P, y = _data()
    _, messages = _below_chance_messages(P, y, strategy=strategy)
    assert messages == []


def test_a_wrong_column_order_is_named_in_one_warning_about_the_columns():
    """The reductions are built here: the binary advice (pos_label, a two-column
    input) cannot be acted on, the columns of X can. One warning, not one per
    inner fit; the numbers are the inner fit's on the reduction as given."""
    P, y = _data()
    labels = np.array(["a", "b", "c"])[y]
    shifted = P[:, [2, 0, 1]]  # column k holds the probability of class k - 1
    est, top = _below_chance_messages(shifted, labels)
    assert len(top) == 1
    assert top[0].startswith(
        "The top-label confidences max_k P_k rank the right predictions below "
        "chance: their AUROC against the correctness of the argmax is 0.3"
    )
    assert top[0].endswith(
        "check that column k of X is the probability of classes_[k], with classes_ = "
        "['a', 'b', 'c'] (the sorted labels of y unless classes= names the columns)."
    )
    assert "pos_label" not in top[0]
    correct = (np.array(["a", "b", "c"])[shifted.argmax(axis=1)] == labels).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BelowChanceWarning)
        hand = TVCalibrationBound(random_state=0).fit(shifted.max(axis=1), correct)
    _same_fit(est.estimator_, hand)

    _, classwise = _below_chance_messages(shifted, labels, strategy="classwise")
    assert len(classwise) == 1
    assert classwise[0].startswith(
        "The scores of columns 0, 1 and 2 of X rank their classes below chance: "
        "their AUROCs against y == classes_[k] are 0.3"
    )
    assert "pos_label" not in classwise[0]
    # Two columns swapped, the third in place: only the two are named.
    _, swapped = _below_chance_messages(P[:, [0, 2, 1]], y, strategy="classwise")
    assert len(swapped) == 1
    assert swapped[0].startswith("The scores of columns 1 and 2 of X rank their")
    # One column below chance: named with its class.
    one = P.copy()
    one[:, 1] = (1 - P[:, 1]) ** 2  # column 1 points away from class "b"
    one /= one.sum(axis=1, keepdims=True)
    _, single = _below_chance_messages(one, labels, strategy="classwise")
    assert single[0].startswith(
        "The scores of column 1 of X rank class 'b' below chance: its AUROC against "
        "y == 'b' is 0."
    ), single
    # classes= names the columns (here wrongly): the message shows them.
    _, named = _below_chance_messages(P, labels, classes=["c", "a", "b"])
    assert len(named) == 1 and "with classes_ = ['c', 'a', 'b'] (" in named[0]


@pytest.mark.parametrize("strategy", ["top_label", "classwise"])
def test_a_crossing_band_is_flagged_and_named_once(strategy):
    """With MonotoneCalibrationBound inside: column 1 points away from class 'b', so
    its one-vs-rest band crosses (and the top-label one too). The wrapper says so
    (monotonicity_rejected_, per_class_'s column) and one MonotonicityWarning names
    the reduction; columns in order: no crossing, no warning."""
    P, y = _data(n=20_000)
    labels = np.array(["a", "b", "c"])[y]
    bent = P.copy()
    bent[:, 1] = (1 - P[:, 1]) ** 2
    bent /= bent.sum(axis=1, keepdims=True)
    inner = MonotoneCalibrationBound(random_state=0)
    for X, crossed in ((P, False), (bent, True)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = MulticlassCalibrationBound(inner, strategy=strategy).fit(X, labels)
        said = [w for w in caught if issubclass(w.category, MonotonicityWarning)]
        assert est.monotonicity_rejected_ is crossed
        assert len(said) == int(crossed)
        if strategy == "classwise":
            flags = est.per_class_["monotonicity_rejected"].tolist()
            assert flags == [False, crossed, False]
            assert [e.monotonicity_rejected_ for e in est.estimators_] == flags
    assert said[0].filename == __file__
    which = "the top-label confidences" if strategy == "top_label" else "class 'b'"
    level = 0.025 if strategy == "top_label" else 0.05 / 3 / 2
    assert str(said[0].message).startswith(
        f"The calibration band crosses (L(s) > U(s) at some score) for {which}"
    )
    assert f"at level {level:g}, and the interval assumes one" in str(said[0].message)


def test_fit_twice_is_identical_and_input_is_not_modified():
    P, y = _data(seed=4)
    P32 = P.astype(np.float32)
    P_copy, y_copy = P32.copy(), y.copy()
    est = MulticlassCalibrationBound(
        TVCalibrationBound(random_state=0), strategy="classwise"
    )
    first = est.fit(P32, y).per_class_.copy()
    assert_array_equal(P32, P_copy)
    assert_array_equal(y, y_copy)
    assert est.fit(P32, y).per_class_.equals(first)


def test_pickle_round_trip():
    import pickle

    P, y = _data(seed=5)
    est = MulticlassCalibrationBound(
        NWCalibrationBound(b1=2.0, b2=6.0, random_state=0), strategy="classwise"
    ).fit(P, y)
    back = pickle.loads(pickle.dumps(est))
    assert back.bound_ == est.bound_
    assert back.per_class_.equals(est.per_class_)


# --------------------------------------------------------------------------------------
# classes: the labels of the columns, for a class absent from y.
# --------------------------------------------------------------------------------------


def _without_class_2(seed=7):
    """Rows of a K = 3 model's output whose label is not 2: column 2 stays."""
    P, y = _data(n=3000, seed=seed)
    keep = y != 2
    return P[keep], y[keep]


def test_classes_top_label_with_a_class_absent_from_y():
    P, y = _without_class_2()
    inner = TVCalibrationBound(random_state=0, confidence_level=0.9)
    with pytest.raises(ValueError, match="or pass classes="):
        MulticlassCalibrationBound(inner).fit(P, y)
    est = MulticlassCalibrationBound(inner, classes=[0, 1, 2]).fit(P, y)
    assert_array_equal(est.classes_, [0, 1, 2])
    # Predictions of class 2 are wrong, as they are.
    assert (P.argmax(axis=1) == 2).sum() > 100
    hand = clone(inner).fit(P.max(axis=1), (P.argmax(axis=1) == y).astype(int))
    _same_fit(est.estimator_, hand)
    assert est.certificate_["classes"] == [0, 1, 2]


def test_classes_classwise_fits_an_absent_class_on_all_negative_labels(monkeypatch):
    from skcalbound import _validation

    P, y = _without_class_2()
    inner = TVCalibrationBound(random_state=0, confidence_level=0.9)
    est = MulticlassCalibrationBound(inner, strategy="classwise", classes=[0, 1, 2])
    est.fit(P, y)
    level = 1.0 - 0.1 / 3
    assert_array_equal(est.classes_, [0, 1, 2])
    assert_array_equal(
        est.per_class_["n_positive"], [(y == 0).sum(), (y == 1).sum(), 0]
    )
    for k in (0, 1):
        hand = clone(inner).set_params(confidence_level=level).fit(P[:, k], y == k)
        _same_fit(est.estimators_[k], hand)
    absent = est.estimators_[2]
    assert absent.confidence_level == pytest.approx(level, abs=1e-15)
    assert absent.certificate_["n_positive"] == 0
    # The binary estimator's own fit on (P[:, 2], all 0), once its refusal of a
    # single class (meant for a user's wrong label column) is lifted: the same bound.
    with pytest.raises(ValueError, match="single class"):
        clone(inner).fit(P[:, 2], np.zeros(y.size, dtype=int))
    binary_classes = _validation._binary_classes

    def both_classes(labels):
        return np.array([0, 1]) if np.all(labels == 0) else binary_classes(labels)

    monkeypatch.setattr(_validation, "_binary_classes", both_classes)
    hand = clone(inner).set_params(confidence_level=level)
    _same_fit(absent, hand.fit(P[:, 2], np.zeros(y.size, dtype=int)))
    # No positive: the TV surrogate is 0, the estimate the mean of the column (as a
    # mean of the folds' means: within 1e-4), and the certified interval contains it.
    assert_allclose(absent.estimate_, P[:, 2].mean(), rtol=1e-4)
    assert absent.lower_bound_ <= absent.estimate_ < absent.bound_ <= 1.0
    bounds = est.per_class_["bound"].to_numpy()
    assert_allclose(est.bound_, bounds.mean(), rtol=1e-15)
    assert est.worst_bound_ == bounds.max()


def test_classes_give_the_column_order():
    # Columns permuted together with their labels: the same certificates.
    P, y = _data(n=2000, seed=8)
    names = np.array(["ant", "bee", "cat"])
    order = [2, 0, 1]
    inner = TVCalibrationBound(random_state=0)
    for strategy in ("top_label", "classwise"):
        ref = MulticlassCalibrationBound(inner, strategy=strategy).fit(P, names[y])
        est = MulticlassCalibrationBound(
            inner, strategy=strategy, classes=names[order]
        ).fit(P[:, order], names[y])
        assert_array_equal(est.classes_, names[order])
        assert est.bound_ == ref.bound_ and est.lower_bound_ == ref.lower_bound_
    assert_array_equal(est.per_class_["class"], names[order])
    assert_array_equal(
        est.per_class_["bound"], ref.per_class_["bound"].to_numpy()[order]
    )


@pytest.mark.parametrize("strategy", ["top_label", "classwise"])
@pytest.mark.parametrize(
    "classes, y_change, match",
    [
        ([0, 1], None, r"one label per column of X \(3\); got 2 label\(s\)"),
        ([[0, 1, 2]], None, r"1-D list .* of shape \(1, 3\)"),
        ([0, 1, 1], None, r"classes must be distinct; got \[0, 1, 1\]"),
        ([0, 1, 3], None, r"y contains label\(s\) \[2\] not in classes=\[0, 1, 3\]"),
        (["a", "b", "c"], None, r"label\(s\) \[0, 1, 2\] not in classes"),
        ([0, 1, 2], 7, r"y contains label\(s\) \[7\] not in classes=\[0, 1, 2\]"),
    ],
    ids=["too-few", "2-D", "repeated", "missing-label", "other-type", "unknown-y"],
)
def test_inconsistent_classes_are_clear_errors(classes, y_change, match, strategy):
    P, y = _data(n=200, seed=9)
    if y_change is not None:
        y = np.where(np.arange(y.size) == 0, y_change, y)
    P_copy, y_copy = P.copy(), y.copy()
    est = MulticlassCalibrationBound(
        TVCalibrationBound(), strategy=strategy, classes=classes
    )
    with pytest.raises(ValueError, match=match):
        est.fit(P, y)
    assert_array_equal(P, P_copy)
    assert_array_equal(y, y_copy)
    assert not hasattr(est, "bound_") and not hasattr(est, "classes_")


def test_classes_with_a_single_label_in_y_is_a_clear_error():
    P, _ = _data(n=200, seed=10)
    est = MulticlassCalibrationBound(
        TVCalibrationBound(), strategy="classwise", classes=[0, 1, 2]
    )
    with pytest.raises(ValueError, match="Every label of y is 1: the class-wise"):
        est.fit(P, np.ones(200, dtype=int))
    with pytest.raises(InvalidParameterError, match="'classes' parameter"):
        MulticlassCalibrationBound(TVCalibrationBound(), classes=3).fit(P, _)


# --------------------------------------------------------------------------------------
# Bad input: a ValueError naming the problem; the arrays are never modified.
# --------------------------------------------------------------------------------------


def _bad_inputs():
    P, y = _data(n=60, seed=6)
    nan = P.copy()
    nan[3, 1] = np.nan
    inf = P.copy()
    inf[4, 0] = np.inf
    outside = P.copy()
    outside[5] = [1.2, -0.2, 0.0]
    rows = P.copy()
    rows[7] = [0.5, 0.3, 0.1]
    return [
        (
            "1-D",
            P[:, 0].copy(),
            y,
            r"shape \(n_samples, n_classes\) with n_classes >= 2; "
            r"got an array of shape \(60,\)",
        ),
        ("K=1", P[:, :1].copy(), y, r"n_classes >= 2; got an array of shape \(60, 1\)"),
        ("3-D", P[:, :, None].copy(), y, r"got an array of shape \(60, 3, 1\)"),
        ("nan", nan, y, r"X contains 1 NaN; expected finite probabilities in \[0, 1\]"),
        ("inf", inf, y, r"X contains 1 infinite value\(s\); expected finite"),
        (
            "range",
            outside,
            y,
            r"probabilities in \[0, 1\]; got values in \[-0.2, 1.2\]",
        ),
        (
            "rows",
            rows,
            y,
            r"rows sum to one, but 1 row\(s\) do not \(row 7 sums to 0.9",
        ),
        (
            "too few labels",
            P,
            np.minimum(y, 1),
            r"y has 2 distinct label\(s\) \[0, 1\] but X has 3 columns"
            r".*exactly 3 classes",
        ),
        (
            "too many labels",
            P,
            np.where(np.arange(60) == 0, 7, y),
            r"y has 4 distinct label\(s\) \[0, 1, 2, 7\] but X has 3 columns",
        ),
    ]


@pytest.mark.parametrize("strategy", ["top_label", "classwise"])
@pytest.mark.parametrize(
    "X, y, match",
    [case[1:] for case in _bad_inputs()],
    ids=[c[0] for c in _bad_inputs()],
)
def test_bad_input_is_rejected_without_modification(X, y, match, strategy):
    X_copy, y_copy = X.copy(), y.copy()
    est = MulticlassCalibrationBound(TVCalibrationBound(), strategy=strategy)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert_array_equal(X, X_copy)
    assert_array_equal(y, y_copy)
    assert not hasattr(est, "bound_")


def test_all_predictions_right_is_a_clear_error():
    P = np.tile([0.1, 0.2, 0.7], (30, 1))
    P[:10] = [0.7, 0.2, 0.1]
    P[10:20] = [0.2, 0.7, 0.1]
    y = P.argmax(axis=1)
    with pytest.raises(ValueError, match="Every top-label prediction is right"):
        MulticlassCalibrationBound(TVCalibrationBound()).fit(P, y)


def test_estimator_must_be_a_bound_and_strategy_an_option():
    P, y = _data(n=100)
    with pytest.raises(TypeError, match="must be a calibration bound estimator"):
        MulticlassCalibrationBound(LogisticRegression()).fit(P, y)
    with pytest.raises(InvalidParameterError, match="strategy"):
        MulticlassCalibrationBound(TVCalibrationBound(), strategy="ovr").fit(P, y)


# --------------------------------------------------------------------------------------
# certificate_: only when the inner estimators provide one.
# --------------------------------------------------------------------------------------


class _CertifiedTV(TVCalibrationBound):
    def fit(self, X, y):
        super().fit(X, y)
        self.certificate_ = {"method": "TV", "bound": self.bound_}
        return self


@pytest.mark.parametrize("strategy", ["top_label", "classwise"])
def test_certificate_wraps_inner_certificates(strategy):
    P, y = _data(seed=7)
    names = np.array(["a", "b", "c"])[y]
    plain = MulticlassCalibrationBound(
        TVCalibrationBound(random_state=0), strategy=strategy
    )
    if getattr(TVCalibrationBound(), "certificate_", None) is None:
        inner_has = hasattr(
            clone(plain.estimator).fit(P.max(axis=1), y == 0), "certificate_"
        )
        assert hasattr(plain.fit(P, names), "certificate_") == inner_has
    est = MulticlassCalibrationBound(_CertifiedTV(random_state=0), strategy=strategy)
    est.fit(P, names)
    cert = est.certificate_
    json.dumps(cert)
    assert cert["method"] == "MulticlassCalibrationBound"
    assert cert["strategy"] == strategy
    assert cert["n_classes"] == 3 and cert["classes"] == ["a", "b", "c"]
    assert (cert["bound"], cert["lower_bound"]) == (est.bound_, est.lower_bound_)
    assert len(cert["inner"]) == (1 if strategy == "top_label" else 3)


# --------------------------------------------------------------------------------------
# Monte Carlo coverage.
# --------------------------------------------------------------------------------------

LEVEL = 0.9


def _estimators(K, data):
    top, cw = data.top_label_assumptions, data.classwise_assumptions
    return {
        "tv": (TVCalibrationBound(V=1.0, confidence_level=LEVEL),) * 2,
        # Both reductions' calibration functions are monotone (make_multiclass).
        "monotone": (MonotoneCalibrationBound(confidence_level=LEVEL),) * 2,
        "nw": (
            NWCalibrationBound(b1=top["b1"], b2=top["b2"], confidence_level=LEVEL),
            NWCalibrationBound(b1=cw["b1"], b2=cw["b2"], confidence_level=LEVEL),
        ),
    }


def _coverage(method, K, repeats, n, seed=0):
    """Failure counts over ``repeats`` independent samples: top-label (either side of
    the interval), and class-wise (any class's interval misses CE_k; the mean
    interval misses the mean CE; worst_bound_ < max CE; worst_lower_bound_ > max CE)."""
    failures = dict.fromkeys(
        ["top", "any_class", "mean", "worst_upper", "worst_lower"], 0
    )
    for r in range(repeats):
        data = make_multiclass(n, K, random_state=seed + r)
        top_inner, cw_inner = _estimators(K, data)[method]
        top = MulticlassCalibrationBound(clone(top_inner).set_params(random_state=r))
        top.fit(data.proba, data.labels)
        ce = data.true_top_label_ce
        failures["top"] += bool(top.bound_ < ce or top.lower_bound_ > ce)
        cw = MulticlassCalibrationBound(
            clone(cw_inner).set_params(random_state=r), strategy="classwise"
        ).fit(data.proba, data.labels)
        ce_k = data.true_classwise_ce  # the same for every class, so also mean and max
        frame = cw.per_class_
        failures["any_class"] += bool(
            np.any((frame["bound"] < ce_k) | (frame["lower_bound"] > ce_k))
        )
        failures["mean"] += bool(cw.bound_ < ce_k or cw.lower_bound_ > ce_k)
        failures["worst_upper"] += bool(cw.worst_bound_ < ce_k)
        failures["worst_lower"] += bool(cw.worst_lower_bound_ > ce_k)
    return failures


def _assert_coverage(failures, repeats):
    tolerance = binomial_tolerance(repeats, LEVEL)
    assert max(failures.values()) <= tolerance, (failures, tolerance)
    assert failures["any_class"] >= max(
        failures["mean"], failures["worst_upper"], failures["worst_lower"]
    )


# The default suite runs K = 3 with TV (20 repeats) and the band (8); NW at K = 3 (12
# repeats, whose four fits a repeat cost ~4x more: ~1.4 s), K = 10 (30 repeats) and
# the 500-repeat cells are slow. NW's class-wise coverage stays in the default suite
# through test_nw_h_classwise_recipe_on_perturbed_columns_is_covered.
@pytest.mark.parametrize(
    "method, K, repeats",
    [
        ("tv", 3, 20),
        ("monotone", 3, 8),
        pytest.param("monotone", 10, 30, marks=pytest.mark.slow),
        pytest.param("nw", 3, 12, marks=pytest.mark.slow),
        pytest.param("tv", 10, 30, marks=pytest.mark.slow),
        pytest.param("nw", 10, 30, marks=pytest.mark.slow),
    ],
)
def test_coverage_small(method, K, repeats):
    failures = _coverage(method, K, repeats=repeats, n=2000)
    print(f"coverage {method} K={K}: {failures} of {repeats}")
    _assert_coverage(failures, repeats)


def _nw_h_recipe_failures(K, h, repeats, n, seed=0):
    """The certified recipe with h: perturb the reduced (top-label) confidence."""
    data = make_multiclass(10, K, random_state=0)
    truth = SechPerturbed(base=data.top_label_problem, h=h).true_ce
    failures, bounds = 0, []
    for r in range(repeats):
        data = make_multiclass(n, K, random_state=seed + r)
        P, y = data.proba, data.labels
        s = perturb_scores(P.max(axis=1), h, random_state=r)
        correct = (P.argmax(axis=1) == y).astype(int)
        est = NWCalibrationBound(h=h, confidence_level=LEVEL, random_state=r).fit(
            s, correct
        )
        failures += bool(est.bound_ < truth or est.lower_bound_ > truth)
        bounds.append(est.bound_)
    return failures, truth, np.array(bounds)


@pytest.mark.parametrize(
    "K, repeats", [(3, 20), pytest.param(10, 30, marks=pytest.mark.slow)]
)
def test_nw_h_recipe_on_the_perturbed_confidence_is_covered(K, repeats):
    h = 2.0**-3
    failures, truth, bounds = _nw_h_recipe_failures(K, h, repeats=repeats, n=2000)
    print(
        f"h recipe K={K}: {failures} of {repeats}, truth {truth:.4f}, "
        f"mean bound {bounds.mean():.3f}"
    )
    assert failures <= binomial_tolerance(repeats, LEVEL), (failures, truth)
    assert np.all(bounds < 1.0)  # informative, so the check is not vacuous


def test_h_without_perturbation_is_rejected_on_tied_confidences():
    # Unperturbed reduced scores can tie (here a model with few distinct outputs):
    # NW with h refuses them instead of certifying the wrong thing.
    rng = np.random.default_rng(0)
    rows = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]])
    P = rows[rng.integers(3, size=2000)]
    y = rng.integers(3, size=2000)
    with pytest.raises(ValueError, match="these scores were not perturbed"):
        MulticlassCalibrationBound(NWCalibrationBound(h=2.0**-3)).fit(P, y)


# The slow multiclass cells: R = 100 under ``make test-slow``, the full R = 500 under
# ``make test-study`` (tests/_synthetic.py::study_split).
SLOW_CELLS = study_split([(3, 500), (10, 500)], slow=100)


@pytest.mark.slow
@pytest.mark.parametrize("K, repeats", SLOW_CELLS)
@pytest.mark.parametrize("method", ["tv", "nw"])
def test_coverage_slow(method, K, repeats):
    failures = _coverage(method, K, repeats=repeats, n=5000, seed=10_000)
    print(f"coverage {method} K={K}: {failures} of {repeats}")
    _assert_coverage(failures, repeats)


@pytest.mark.slow
@pytest.mark.parametrize("K, repeats", SLOW_CELLS)
def test_nw_h_recipe_coverage_slow(K, repeats):
    failures, truth, _ = _nw_h_recipe_failures(
        K, 2.0**-3, repeats=repeats, n=5000, seed=10_000
    )
    print(f"h recipe K={K}: {failures} of {repeats}, truth {truth:.4f}")
    assert failures <= binomial_tolerance(repeats, LEVEL), (failures, truth)


# --------------------------------------------------------------------------------------
# The class-wise recipe with h: perturb every column, one NW fit per class.
# --------------------------------------------------------------------------------------


def _nw_h_classwise_failures(K, h, repeats, n, seed=0):
    """Any class's interval (level 1 - (1 - LEVEL)/K) misses the exact perturbed CE."""
    data = make_multiclass(10, K, random_state=0)
    truth = SechPerturbed(base=data.classwise_problem, h=h).true_ce
    level = 1.0 - (1.0 - LEVEL) / K
    failures, bounds = 0, []
    for r in range(repeats):
        data = make_multiclass(n, K, random_state=seed + r)
        P, y = data.proba, data.labels
        missed = False
        for k in range(K):
            s = perturb_scores(P[:, k], h, random_state=(seed + r) * K + k)
            est = NWCalibrationBound(
                h=h, confidence_level=level, random_state=r * K + k
            )
            est.fit(s, (y == k).astype(int))
            missed |= bool(est.bound_ < truth or est.lower_bound_ > truth)
            bounds.append(est.bound_)
        failures += missed
    return failures, truth, np.array(bounds)


@pytest.mark.parametrize(
    "K, repeats", [(3, 12), pytest.param(10, 20, marks=pytest.mark.slow)]
)
def test_nw_h_classwise_recipe_on_perturbed_columns_is_covered(K, repeats):
    h = 2.0**-3
    failures, truth, bounds = _nw_h_classwise_failures(K, h, repeats=repeats, n=2000)
    print(
        f"h classwise K={K}: {failures} of {repeats}, truth {truth:.4f}, "
        f"mean bound {bounds.mean():.3f}"
    )
    assert failures <= binomial_tolerance(repeats, LEVEL), (failures, truth)
    assert np.all(bounds < 1.0)  # informative, so the check is not vacuous


@pytest.mark.slow
@pytest.mark.parametrize("K, repeats", SLOW_CELLS)
def test_nw_h_classwise_recipe_coverage_slow(K, repeats):
    failures, truth, bounds = _nw_h_classwise_failures(
        K, 2.0**-3, repeats=repeats, n=5000, seed=10_000
    )
    print(
        f"h classwise K={K}: {failures} of {repeats}, truth {truth:.4f}, "
        f"mean bound {bounds.mean():.3f}"
    )
    assert failures <= binomial_tolerance(repeats, LEVEL), (failures, truth)
