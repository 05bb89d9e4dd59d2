"""Bad input gets a clear error and the caller's input is unchanged (SPEC section 8).

Every case runs through every public entry point: the estimators' ``fit`` and the
functional one-liners (whose argument order is labels first: ``tv_bound(y_true,
y_prob)``, ``nw_bound(y_true, y_prob, h=...)``, ``lipschitz_bucket_bound(y_true, y_prob,
L=...)``, ``binned_ece(y_true, y_prob)``). Each
test asserts the exception type, its message, and that neither the scores nor the
labels were modified. Then the natural mistakes (the positive class, ``h`` taken for a
knob, swapped arguments, a level read as delta, a vacuous bound) and the error or
warning that names each.
"""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import KFold

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    VacuousBoundWarning,
    binned_ece,
    calibration_test,
    lipschitz_bucket_bound,
    nw_bound,
    perturb_scores,
    perturbed_brier_score_loss,
    perturbed_log_loss,
    tv_bound,
)

N = 50


def _scores_labels(n=N, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.uniform(0.05, 0.95, size=n)
    labels = (rng.uniform(size=n) < scores).astype(np.int64)
    labels[:2] = [0, 1]  # both classes present whatever the seed
    return scores, labels


# Constructor arguments a bound needs besides the data: NW has no default for the
# derivative bounds of the calibration function (h, or b1 and b2), Lipschitz none for
# its Lipschitz constant (L, or h).
REQUIRED_PARAMS = {
    "NWCalibrationBound": {"h": 2**-4},
    "LipschitzBucketBound": {"L": 2.0},
}


def _fit(Est):
    required = REQUIRED_PARAMS.get(Est.__name__, {})
    return lambda X, y, **p: Est(**{"random_state": 0, **required, **p}).fit(X, y)


def _bound_function(function, Est):
    required = REQUIRED_PARAMS.get(Est.__name__, {})
    return lambda X, y, **p: function(y, X, **{"random_state": 0, **required, **p})


# Entry points: (id, owner name in parameter-validation messages, call(X, y, **params)).
ENTRY_POINTS = [
    ("TVCalibrationBound.fit", "TVCalibrationBound", _fit(TVCalibrationBound)),
    ("tv_bound", "tv_bound", _bound_function(tv_bound, TVCalibrationBound)),
    ("NWCalibrationBound.fit", "NWCalibrationBound", _fit(NWCalibrationBound)),
    ("nw_bound", "nw_bound", _bound_function(nw_bound, NWCalibrationBound)),
    ("LipschitzBucketBound.fit", "LipschitzBucketBound", _fit(LipschitzBucketBound)),
    (
        "lipschitz_bucket_bound",
        "lipschitz_bucket_bound",
        _bound_function(lipschitz_bucket_bound, LipschitzBucketBound),
    ),
    ("binned_ece", "binned_ece", lambda X, y, **p: binned_ece(y, X, **p)),
]
# Where an entry point words an error differently, or a case does not apply to it
# (None: binned_ece has no cross-fitting and no cv).
_FUNCTIONAL_MESSAGES = {
    # Functions validate (y_true, y_prob) themselves and name y_prob in messages.
    "nan_labels": (ValueError, r"Labels y contain NaN or infinite"),
    "inf_labels": (ValueError, r"Labels y contain NaN or infinite"),
    # check_consistent_length(y_true, y_prob): the numbers come in argument order.
    "fewer_labels": (ValueError, r"inconsistent numbers of samples: \[49, 50\]"),
    "more_labels": (ValueError, r"inconsistent numbers of samples: \[50, 49\]"),
    "three_dimensional": (
        ValueError,
        r"y_prob must hold scores of shape "
        r".*got an array of shape \(50, 1, 1\)",
    ),
    "two_columns_not_summing_to_one": (
        ValueError,
        r"y_prob has 2 columns, so it is read as a predict_proba output",
    ),
    "one_row_not_summing_to_one": (
        ValueError,
        r"y_prob has 2 columns.* but 1 row\(s\) do not \(row 7 sums to",
    ),
    "three_columns": (
        ValueError,
        r"y_prob must hold scores of shape "
        r".*got an array of shape \(50, 3\)",
    ),
    "ten_columns": (
        ValueError,
        r"y_prob must hold scores of shape "
        r".*got an array of shape \(50, 10\)",
    ),
}
OVERRIDES = {
    **{
        (f, case): v
        for f in ("binned_ece", "tv_bound", "nw_bound", "lipschitz_bucket_bound")
        for case, v in _FUNCTIONAL_MESSAGES.items()
    },
    ("binned_ece", "too_few_samples_for_cv"): None,
    ("binned_ece", "too_few_samples_for_kfold"): None,
    # A metric takes labels of one class when the positive class is known, as
    # calibration_curve does (tests/test_binned_ece.py); the bounds refuse them.
    ("binned_ece", "one_class"): None,
    ("binned_ece", "one_string_class"): (
        ValueError,
        r"y_true takes value in \{'pos'\} and pos_label is not specified",
    ),
    # TV's default cell bound has no folds (cv unused); its denoising bound's fold
    # sizes: test_tv_bound.py::test_too_few_samples_for_uneven_folds_is_a_clear_error.
    **{
        (f, case): None
        for f in ("TVCalibrationBound.fit", "tv_bound")
        for case in ("too_few_samples_for_cv", "too_few_samples_for_kfold")
    },
}
# Entry points with the common hyperparameters (confidence_level, cv, ...).
BOUND_ENTRY_POINTS = [e for e in ENTRY_POINTS if e[0] != "binned_ece"]
ENTRY_IDS = [e[0] for e in ENTRY_POINTS]
FITTED_ESTIMATORS = [TVCalibrationBound, NWCalibrationBound, LipschitzBucketBound]


def _with(values, index, value):
    out = values.astype(np.float64).copy()
    out[index] = value
    return out


def _snapshot(obj):
    if obj is None:
        return None
    if sp.issparse(obj):
        return obj.copy()
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return list(obj)


def _assert_unchanged(before, after):
    if before is None:
        assert after is None
    elif sp.issparse(before):
        assert type(after) is type(before)
        assert_array_equal(after.toarray(), before.toarray())
        assert_array_equal(after.indices, before.indices)
    elif isinstance(before, np.ndarray):
        assert_array_equal(after, before, strict=True)
    else:
        assert after == before


S, Y = _scores_labels()
PROBA = np.column_stack([1.0 - S, S])

_SHAPES = re.escape(
    "X must hold scores of shape (n_samples,), (n_samples, 1) or a predict_proba "
    "output of shape (n_samples, 2); got an array of shape "
)

# (id, X, y, exception, message regex, extra params). ``X``/``y`` are built once; each
# test works on copies and checks the copies are untouched.
BAD_DATA = [
    (
        "nan_scores",
        _with(S, 3, np.nan),
        Y,
        ValueError,
        r"Scores contain 1 NaN; expected finite probabilities in \[0, 1\]",
        {},
    ),
    (
        "nan_scores_2col",
        np.column_stack([1 - S, _with(S, [3, 9], np.nan)]),
        Y,
        ValueError,
        r"Scores contain 2 NaN; expected finite probabilities in \[0, 1\]",
        {},
    ),
    (
        "inf_scores",
        _with(S, 3, np.inf),
        Y,
        ValueError,
        r"Scores contain 1 infinite value\(s\); expected finite probabilities",
        {},
    ),
    (
        "minus_inf_scores",
        _with(S, 0, -np.inf),
        Y,
        ValueError,
        r"Scores contain 1 infinite value\(s\)",
        {},
    ),
    (
        "nan_and_inf_scores",
        _with(_with(S, 1, np.nan), 2, np.inf),
        Y,
        ValueError,
        r"Scores contain 1 NaN and 1 infinite value\(s\)",
        {},
    ),
    (
        "negative_scores",
        _with(S, 4, -0.25),
        Y,
        ValueError,
        r"Scores must be probabilities in \[0, 1\]; "
        r"got values in \[-0\.25, 0\.9\d*\]\. "
        r"Pass predict_proba outputs, not decision_function values or logits\.",
        {},
    ),
    (
        "scores_above_one",
        _with(S, 4, 1.5),
        Y,
        ValueError,
        r"Scores must be probabilities in \[0, 1\]; got values in \[0\.0\d*, 1\.5\]",
        {},
    ),
    (
        "logits",
        np.log(S / (1 - S)),
        Y,
        ValueError,
        r"Scores must be probabilities in \[0, 1\]; got values in \[-2\.\d+, 2\.\d+\]",
        {},
    ),
    (
        "two_columns_not_summing_to_one",
        np.column_stack([S, S]),
        Y,
        ValueError,
        r"X has 2 columns, so it is read as a predict_proba output whose rows sum to "
        r"one, but 50 row\(s\) do not \(row 0 sums to [\d.]+\)\. "
        r"Pass the positive-class "
        r"column alone",
        {},
    ),
    (
        "one_row_not_summing_to_one",
        _with(PROBA, (7, 0), 0.9),
        Y,
        ValueError,
        r"but 1 row\(s\) do not \(row 7 sums to 1\.[\d]+\)",
        {},
    ),
    (
        "three_columns",
        np.column_stack([S, S, S]) / 3,
        Y,
        ValueError,
        _SHAPES + re.escape("(50, 3)."),
        {},
    ),
    (
        "ten_columns",
        np.full((N, 10), 0.1),
        Y,
        ValueError,
        _SHAPES + re.escape("(50, 10)."),
        {},
    ),
    (
        "three_dimensional",
        S.reshape(N, 1, 1),
        Y,
        ValueError,
        _SHAPES + re.escape("(50, 1, 1)."),
        {},
    ),
    (
        "zero_columns",
        np.empty((N, 0)),
        Y,
        ValueError,
        r"0 feature\(s\) \(shape=\(50, 0\)\) while a minimum of 1 is required",
        {},
    ),
    (
        "three_classes",
        S,
        np.arange(N) % 3,
        ValueError,
        r"y must contain exactly two classes \(binary labels\); got 3 classes: "
        r"\[0, 1, 2\]\. Multiclass targets are not supported\.",
        {},
    ),
    (
        "twelve_classes",
        S,
        np.arange(N) % 12,
        ValueError,
        r"got 12 classes: \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\], \.\.\.",
        {},
    ),
    (
        "three_string_classes",
        S,
        np.array(["a", "b", "c"] * 17)[:N],
        ValueError,
        r"got 3 classes: \['a', 'b', 'c'\]",
        {},
    ),
    (
        "one_class",
        S,
        np.ones(N, dtype=np.int64),
        ValueError,
        r"y contains a single class \(1\); calibration bounds need binary labels with "
        r"both classes present",
        {},
    ),
    (
        "one_string_class",
        S,
        np.array(["pos"] * N),
        ValueError,
        r"y contains a single class \('pos'\)",
        {},
    ),
    ("nan_labels", S, _with(Y, 5, np.nan), ValueError, r"Input y contains NaN", {}),
    (
        "inf_labels",
        S,
        _with(Y, 5, np.inf),
        ValueError,
        r"Input y contains infinity",
        {},
    ),
    (
        "none_among_labels",
        S,
        np.array([None, "a"] * 25, dtype=object),
        TypeError,
        r"y must hold binary labels of one comparable type \(numbers, strings or "
        r"booleans\); got labels of types \['NoneType', 'str'\]",
        {},
    ),
    (
        "int_and_str_labels",
        S,
        np.array([0, "a"] * 25, dtype=object),
        TypeError,
        r"got labels of types \['int', 'str'\]",
        {},
    ),
    (
        "two_dimensional_labels",
        S,
        np.column_stack([Y, Y]),
        ValueError,
        r"y should be a 1d array, got an array of shape \(50, 2\) instead",
        {},
    ),
    (
        "fewer_labels",
        S,
        Y[:-1],
        ValueError,
        r"Found input variables with inconsistent numbers of samples: \[50, 49\]",
        {},
    ),
    (
        "more_labels",
        S[:-1],
        Y,
        ValueError,
        r"Found input variables with inconsistent numbers of samples: \[49, 50\]",
        {},
    ),
    (
        "too_few_samples_for_cv",
        S[:3],
        np.array([0, 1, 0]),
        ValueError,
        r"with cv=5 needs at least \d+ samples .*got n_samples=3",
        {},
    ),
    (
        "too_few_samples_for_kfold",
        S[:3],
        np.array([0, 1, 0]),
        ValueError,
        r"3 samples .*5|n_splits=5 greater than the number of samples: n_samples=3",
        {"cv": KFold(5)},
    ),
    (
        "empty",
        np.array([]),
        np.array([]),
        ValueError,
        r"Found array with 0 sample\(s\) \(shape=\(0,\)\) while a minimum of 1 is "
        r"required",
        {},
    ),
    (
        "empty_2d",
        np.empty((0, 2)),
        np.array([]),
        ValueError,
        r"Found array with 0 sample\(s\) \(shape=\(0, 2\)\)",
        {},
    ),
    (
        "complex_scores",
        S.astype(complex),
        Y,
        ValueError,
        r"Complex data not supported",
        {},
    ),
]

# Sparse scores: the estimator says dense data is required; the function's parameter
# validation says array-like is required. InvalidParameterError is also a TypeError.
SPARSE = [
    ("csr_matrix", sp.csr_matrix(S.reshape(-1, 1))),
    ("csr_array", sp.csr_array(S.reshape(-1, 1))),
    ("csc_two_columns", sp.csc_matrix(PROBA)),
]
SPARSE_MESSAGES = {
    "TVCalibrationBound.fit": r"Sparse data was passed for X, but dense data is "
    r"required",
    "tv_bound": r"The 'y_prob' parameter of tv_bound must be an array-like",
    "NWCalibrationBound.fit": r"Sparse data was passed for X, but dense data is "
    r"required",
    "nw_bound": r"The 'y_prob' parameter of nw_bound must be an array-like",
    "LipschitzBucketBound.fit": r"Sparse data was passed for X, but dense data is "
    r"required",
    "lipschitz_bucket_bound": r"The 'y_prob' parameter of lipschitz_bucket_bound must "
    r"be an array-like",
    "binned_ece": r"The 'y_prob' parameter of binned_ece must be an array-like",
}


def _bad_data_params():
    params = []
    for entry in ENTRY_POINTS:
        for case, X, y, exc, match, extra in BAD_DATA:
            key = (entry[0], case)
            if key in OVERRIDES:
                if OVERRIDES[key] is None:
                    continue  # does not apply
                exc, match = OVERRIDES[key]
            params.append(
                pytest.param(entry[2], X, y, exc, match, extra, id=f"{entry[0]}-{case}")
            )
    return params


@pytest.mark.parametrize("call, X, y, exc, match, params", _bad_data_params())
def test_bad_data_raises_and_does_not_mutate(call, X, y, exc, match, params):
    X, y = X.copy(), y.copy()
    X_before, y_before = _snapshot(X), _snapshot(y)
    with pytest.raises(exc, match=match):
        call(X, y, **params)
    _assert_unchanged(X_before, X)
    _assert_unchanged(y_before, y)


@pytest.mark.parametrize("X", [case[1] for case in SPARSE], ids=[c[0] for c in SPARSE])
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_IDS)
def test_sparse_scores_are_rejected(entry, X):
    name, _, call = entry
    X = X.copy()
    X_before, y_before = _snapshot(X), Y.copy()
    y = Y.copy()
    with pytest.raises(TypeError, match=SPARSE_MESSAGES[name]):
        call(X, y)
    _assert_unchanged(X_before, X)
    _assert_unchanged(y_before, y)


def test_missing_labels_are_reported():
    X = S.copy()
    for Est in FITTED_ESTIMATORS:
        with pytest.raises(
            ValueError,
            match=rf"This {Est.__name__} estimator requires y to be passed, but the "
            r"target y is None",
        ):
            Est(**REQUIRED_PARAMS.get(Est.__name__, {})).fit(X, None)
    for function in (tv_bound, nw_bound, lipschitz_bucket_bound, binned_ece):
        with pytest.raises(
            ValueError,
            match=(
                rf"The 'y_true' parameter of {function.__name__} "
                r"must be an array-like"
            ),
        ):
            function(None, X)
    assert_array_equal(X, S, strict=True)


def test_lists_are_not_mutated_on_error():
    X = S.tolist()
    X[3] = float("nan")
    y = Y.tolist()
    X_before, y_before = list(X), list(y)
    for _, _, call in ENTRY_POINTS:
        with pytest.raises(ValueError, match=r"Scores contain 1 NaN"):
            call(X, y)
    assert X[:3] == X_before[:3] and X[4:] == X_before[4:] and np.isnan(X[3])
    assert y == y_before


# --------------------------------------------------------------------------------------
# Hyperparameters: validated before any data is looked at.
# --------------------------------------------------------------------------------------

# Parameters every bound has.
BAD_PARAMS = [
    (
        {"confidence_level": 0},
        r"The 'confidence_level' parameter of {owner} must be a "
        r"float in the range \(0\.0, 1\.0\)\. Got 0 instead",
    ),
    (
        {"confidence_level": 1},
        r"'confidence_level' parameter of {owner} .*Got 1 instead",
    ),
    (
        {"confidence_level": 1.5},
        r"'confidence_level' parameter of {owner} .*Got 1\.5 instead",
    ),
    (
        {"confidence_level": -0.1},
        r"'confidence_level' parameter of {owner} .*Got -0\.1 instead",
    ),
    (
        {"confidence_level": np.nan},
        r"'confidence_level' parameter of {owner} .*Got nan instead",
    ),
    (
        {"confidence_level": "0.95"},
        r"'confidence_level' parameter of {owner} .*Got '0\.95'",
    ),
    (
        {"aggregate": "median"},
        r"The 'aggregate' parameter of {owner} must be a str among "
        r"\{('mean', 'min'|'min', 'mean')\}\. Got 'median' instead",
    ),
    (
        {"guarantee": "exact"},
        r"The 'guarantee' parameter of {owner} must be a str among "
        r"\{('high_probability', 'paper'|'paper', 'high_probability')\}\. Got 'exact' "
        r"instead",
    ),
    ({"guarantee": None}, r"The 'guarantee' parameter of {owner} .*Got None instead"),
    (
        {"cv": 1},
        r"The 'cv' parameter of {owner} must be an int in the range \[2, inf\)",
    ),
    ({"cv": "five"}, r"The 'cv' parameter of {owner} .*Got 'five' instead"),
    ({"n_jobs": 1.5}, r"The 'n_jobs' parameter of {owner} .*Got 1\.5 instead"),
    ({"random_state": "seed"}, r"The 'random_state' parameter of {owner} .*Got 'seed'"),
]

_NW_DERIVATIVES_TOO_MANY = (
    r"Give either h \(the perturbation bandwidth, from which b1 and b2 follow\) or "
    r"both b1 and b2, not both; got h=0\.1, b1=1\.0, b2={b2}\."
)
_NW_DERIVATIVES_MISSING = (
    r"The NW bound needs the derivative bounds of the calibration function: "
    r"give h .* or both b1 \(bound on \|eta'\|\) and b2 \(bound on \|eta''\|\); got "
    r"h=None, b1={b1}, b2={b2}\."
)
_LIPSCHITZ_CONSTANT_TOO_MANY = (
    r"Give either L \(the Lipschitz constant of the calibration function\) or h \(the "
    r"perturbation bandwidth, from which L follows\), not both; got L={L}, h=0\.1\."
)
_LIPSCHITZ_CONSTANT_MISSING = (
    r"The Lipschitz bucketing bound needs the Lipschitz constant of the calibration "
    r"function: give L .* or h .*; got L=None, h=None\."
)
_N_BUCKETS = (
    r"n_buckets must be None \(the grid 2, 4, \.\.\., 4096\), a positive int or a "
    r"non-empty 1-D sequence of positive ints; got {got}\."
)
# Parameters of one bound, keyed by its estimator (the function shares them). Cases in
# NW_CHECKED_AFTER_DATA are the derivative-bound combinations NWCalibrationBound checks
# at the start of ``fit`` (before the data) rather than by parameter validation;
# LIPSCHITZ_CHECKED_AFTER_DATA likewise for L and h, and the n_buckets sequences.
METHOD_BAD_PARAMS = {
    "TVCalibrationBound": [
        (
            {"V": 0},
            r"The 'V' parameter of {owner} must be a float in the range "
            r"\(0\.0, inf\)\. Got 0 instead",
        ),
        ({"V": -1.0}, r"The 'V' parameter of {owner} .*Got -1\.0 instead"),
        ({"V": np.inf}, r"The 'V' parameter of {owner} .*Got inf instead"),
    ],
    "NWCalibrationBound": [
        (
            {"h": 0},
            r"The 'h' parameter of {owner} must be a float in the range "
            r"\(0\.0, inf\) or None\. Got 0 instead",
        ),
        ({"h": -0.5}, r"The 'h' parameter of {owner} .*Got -0\.5 instead"),
        ({"h": np.inf}, r"The 'h' parameter of {owner} .*Got inf instead"),
        ({"h": "0.1"}, r"The 'h' parameter of {owner} .*Got '0\.1' instead"),
        (
            {"h": None, "b1": -1.0, "b2": 1.0},
            r"The 'b1' parameter of {owner} must be a "
            r"float in the range \[0\.0, inf\) or None\. Got -1\.0 instead",
        ),
        (
            {"h": None, "b1": 1.0, "b2": -0.5},
            r"The 'b2' parameter of {owner} must be a "
            r"float in the range \[0\.0, inf\) or None\. Got -0\.5 instead",
        ),
        (
            {"h": None, "b1": np.nan, "b2": 1.0},
            r"The 'b1' parameter of {owner} .*Got nan",
        ),
        (
            {"bandwidth": 0},
            r"The 'bandwidth' parameter of {owner} must be a str among "
            r"\{('auto', 'plugin'|'plugin', 'auto')\} "
            r"or a float in the range \(0\.0, inf\)\. "
            r"Got 0 instead",
        ),
        (
            {"bandwidth": -0.1},
            r"The 'bandwidth' parameter of {owner} .*Got -0\.1 instead",
        ),
        (
            {"bandwidth": "silverman"},
            r"The 'bandwidth' parameter of {owner} .*Got "
            r"'silverman' instead",
        ),
        (
            {"tempering": -1},
            r"The 'tempering' parameter of {owner} must be a float in the "
            r"range \[0\.0, inf\)\. Got -1 instead",
        ),
        (
            {"max_validation": 0},
            r"The 'max_validation' parameter of {owner} must be a str "
            r"among \{'auto'\}, an int in the range \[1, inf\) or None\. Got 0 instead",
        ),
        (
            {"max_validation": 1.5},
            r"The 'max_validation' parameter of {owner} .*Got 1\.5",
        ),
        (
            {"max_validation": "all"},
            r"'max_validation' parameter of {owner} .*Got 'all'",
        ),
        ({"h": 0.1, "b1": 1.0, "b2": 1.0}, _NW_DERIVATIVES_TOO_MANY.format(b2=r"1\.0")),
        ({"h": 0.1, "b1": 1.0}, _NW_DERIVATIVES_TOO_MANY.format(b2="None")),
        ({"h": None}, _NW_DERIVATIVES_MISSING.format(b1="None", b2="None")),
        ({"h": None, "b1": 1.0}, _NW_DERIVATIVES_MISSING.format(b1=r"1\.0", b2="None")),
        ({"h": None, "b2": 1.0}, _NW_DERIVATIVES_MISSING.format(b1="None", b2=r"1\.0")),
    ],
    "LipschitzBucketBound": [
        (
            {"L": -1.0},
            r"The 'L' parameter of {owner} must be a float in the range "
            r"\[0\.0, inf\) or None\. Got -1\.0 instead",
        ),
        ({"L": np.inf}, r"The 'L' parameter of {owner} .*Got inf instead"),
        ({"L": np.nan}, r"The 'L' parameter of {owner} .*Got nan instead"),
        ({"L": "2"}, r"The 'L' parameter of {owner} .*Got '2' instead"),
        (
            {"L": None, "h": 0},
            r"The 'h' parameter of {owner} must be a float in the "
            r"range \(0\.0, inf\) or None\. Got 0 instead",
        ),
        ({"L": None, "h": -0.5}, r"The 'h' parameter of {owner} .*Got -0\.5 instead"),
        ({"L": None, "h": np.inf}, r"The 'h' parameter of {owner} .*Got inf instead"),
        (
            {"n_buckets": 0},
            r"The 'n_buckets' parameter of {owner} must be an int in the "
            r"range \[1, inf\), an array-like or None\. Got 0 instead",
        ),
        ({"n_buckets": -4}, r"The 'n_buckets' parameter of {owner} .*Got -4 instead"),
        (
            {"n_buckets": 2.5},
            r"The 'n_buckets' parameter of {owner} .*Got 2\.5 instead",
        ),
        (
            {"n_buckets": "16"},
            r"The 'n_buckets' parameter of {owner} .*Got '16' instead",
        ),
        (
            {"n_shifts": 0},
            r"The 'n_shifts' parameter of {owner} must be an int in the "
            r"range \[1, inf\)\. Got 0 instead",
        ),
        ({"n_shifts": 1.5}, r"The 'n_shifts' parameter of {owner} .*Got 1\.5 instead"),
        ({"n_shifts": None}, r"The 'n_shifts' parameter of {owner} .*Got None instead"),
        ({"L": 1.0, "h": 0.1}, _LIPSCHITZ_CONSTANT_TOO_MANY.format(L=r"1\.0")),
        ({"L": 0, "h": 0.1}, _LIPSCHITZ_CONSTANT_TOO_MANY.format(L="0")),
        ({"L": None}, _LIPSCHITZ_CONSTANT_MISSING),
        ({"n_buckets": []}, _N_BUCKETS.format(got=r"\[\]")),
        ({"n_buckets": [2, 0]}, _N_BUCKETS.format(got=r"\[2, 0\]")),
        ({"n_buckets": [2.5]}, _N_BUCKETS.format(got=r"\[2\.5\]")),
        ({"n_buckets": [[2, 4]]}, _N_BUCKETS.format(got=r"\[\[2, 4\]\]")),
    ],
}
NW_CHECKED_AFTER_DATA = [
    case
    for case in METHOD_BAD_PARAMS["NWCalibrationBound"]
    if case[1].startswith(("Give either", "The NW bound needs"))
]
LIPSCHITZ_CHECKED_AFTER_DATA = [
    case
    for case in METHOD_BAD_PARAMS["LipschitzBucketBound"]
    if case[1].startswith(("Give either", "The Lipschitz bucketing", "n_buckets must"))
]
# The estimator whose hyperparameters each bound entry point takes.
ESTIMATOR_OF = {
    "TVCalibrationBound.fit": "TVCalibrationBound",
    "tv_bound": "TVCalibrationBound",
    "NWCalibrationBound.fit": "NWCalibrationBound",
    "nw_bound": "NWCalibrationBound",
    "LipschitzBucketBound.fit": "LipschitzBucketBound",
    "lipschitz_bucket_bound": "LipschitzBucketBound",
}


def _params_id(params):
    return ",".join(f"{k}={v}" for k, v in params.items())


def _bad_params():
    out = []
    for entry in BOUND_ENTRY_POINTS:
        for params, match in BAD_PARAMS + METHOD_BAD_PARAMS[ESTIMATOR_OF[entry[0]]]:
            out.append(
                pytest.param(
                    entry, params, match, id=f"{entry[0]}-{_params_id(params)}"
                )
            )
    return out


@pytest.mark.parametrize("entry, params, match", _bad_params())
def test_bad_hyperparameters_raise_before_data_is_inspected(entry, params, match):
    _, owner, call = entry
    # The data is bad too: the parameter error must come first.
    X, y = _with(S, 0, np.nan), np.arange(N) % 3
    X_before, y_before = X.copy(), y.copy()
    with pytest.raises(ValueError, match=match.replace("{owner}", owner)):
        call(X, y, **params)
    _assert_unchanged(X_before, X)
    _assert_unchanged(y_before, y)


@pytest.mark.parametrize(
    "params, match",
    NW_CHECKED_AFTER_DATA,
    ids=[_params_id(p) for p, _ in NW_CHECKED_AFTER_DATA],
)
@pytest.mark.parametrize(
    "entry",
    [e for e in BOUND_ENTRY_POINTS if ESTIMATOR_OF[e[0]] == "NWCalibrationBound"],
    ids=lambda e: e[0],
)
def test_derivative_bounds_are_given_one_way(entry, params, match):
    # On valid data: exactly one of h and (b1, b2) must be given.
    X, y = S.copy(), Y.copy()
    with pytest.raises(ValueError, match=match):
        entry[2](X, y, **params)
    assert_array_equal(X, S, strict=True)
    assert_array_equal(y, Y, strict=True)


@pytest.mark.parametrize(
    "params, match",
    LIPSCHITZ_CHECKED_AFTER_DATA,
    ids=[_params_id(p) for p, _ in LIPSCHITZ_CHECKED_AFTER_DATA],
)
@pytest.mark.parametrize(
    "entry",
    [e for e in BOUND_ENTRY_POINTS if ESTIMATOR_OF[e[0]] == "LipschitzBucketBound"],
    ids=lambda e: e[0],
)
def test_lipschitz_constant_is_given_one_way(entry, params, match):
    # On valid data: exactly one of L and h must be given, and n_buckets must be a
    # non-empty sequence of positive ints.
    X, y = S.copy(), Y.copy()
    with pytest.raises(ValueError, match=match):
        entry[2](X, y, **params)
    assert_array_equal(X, S, strict=True)
    assert_array_equal(y, Y, strict=True)


@pytest.mark.parametrize(
    "entry",
    [e for e in BOUND_ENTRY_POINTS if ESTIMATOR_OF[e[0]] == "LipschitzBucketBound"],
    ids=lambda e: e[0],
)
def test_lipschitz_n_buckets_sequence_is_not_mutated(entry):
    # A valid list of bucket counts is read, not sorted or deduplicated in place.
    n_buckets = [8, 2, 8]
    entry[2](S.copy(), Y.copy(), n_buckets=n_buckets)
    assert n_buckets == [8, 2, 8]


# --------------------------------------------------------------------------------------
# predict and score
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("Est", FITTED_ESTIMATORS)
@pytest.mark.parametrize("method", ["predict", "score"])
def test_methods_before_fit_raise_not_fitted(Est, method):
    args = (S,) if method == "predict" else (S, Y)
    with pytest.raises(
        NotFittedError, match=rf"This {Est.__name__} instance is not fitted yet"
    ):
        getattr(Est(), method)(*args)


PREDICT_BAD = [
    case
    for case in BAD_DATA
    if case[0]
    in {
        "nan_scores",
        "nan_scores_2col",
        "inf_scores",
        "negative_scores",
        "scores_above_one",
        "logits",
        "two_columns_not_summing_to_one",
        "one_row_not_summing_to_one",
        "three_columns",
        "three_dimensional",
        "empty",
        "complex_scores",
    }
]


@pytest.fixture(scope="module")
def fitted():
    X, y = _scores_labels(400, seed=1)
    return {
        Est.__name__: Est(random_state=0, **REQUIRED_PARAMS.get(Est.__name__, {})).fit(
            X, y
        )
        for Est in FITTED_ESTIMATORS
    }


@pytest.mark.parametrize(
    "X, match", [(c[1], c[4]) for c in PREDICT_BAD], ids=[c[0] for c in PREDICT_BAD]
)
@pytest.mark.parametrize("Est", FITTED_ESTIMATORS)
@pytest.mark.parametrize("method", ["predict", "score"])
def test_predict_and_score_reject_bad_scores(fitted, Est, method, X, match):
    est = fitted[Est.__name__]
    X = X.copy()
    X_before = X.copy()
    y = np.zeros(X.shape[0], dtype=np.int64)
    before = est.bound_, est.predict(S).copy()
    with pytest.raises(ValueError, match=match):
        if method == "predict":
            est.predict(X)
        else:
            est.score(X, y)
    _assert_unchanged(X_before, X)
    # The fitted estimator is unchanged by the failed call.
    assert est.bound_ == before[0]
    assert_array_equal(est.predict(S), before[1])


@pytest.mark.parametrize("Est", FITTED_ESTIMATORS)
def test_predict_rejects_sparse_scores(fitted, Est):
    with pytest.raises(TypeError, match=r"Sparse data was passed for X, but dense"):
        fitted[Est.__name__].predict(sp.csr_matrix(S.reshape(-1, 1)))


@pytest.mark.parametrize("Est", FITTED_ESTIMATORS)
@pytest.mark.parametrize(
    "y, match",
    [
        (
            Y[:-1],
            r"Found input variables with inconsistent numbers of samples: \[50, 49\]",
        ),
        (
            np.column_stack([Y, Y]),
            r"y should be a 1d array, got an array of shape \(50, 2\)",
        ),
    ],
    ids=["fewer_labels", "two_dimensional_labels"],
)
def test_score_rejects_bad_labels(fitted, Est, y, match):
    X = S.copy()
    y_before = y.copy()
    with pytest.raises(ValueError, match=match):
        fitted[Est.__name__].score(X, y)
    assert_array_equal(X, S, strict=True)
    assert_array_equal(y, y_before, strict=True)


# ======================================================================================
# Bad input at the door (skcalbound._validation, run by every bound's fit): natural
# mistakes that used to give silently wrong certificates (the positive class, ``h``
# taken for a knob, swapped arguments, a level read as delta, a vacuous bound), each
# with the error or warning that now names it.
# ======================================================================================
H = 2.0**-6


@pytest.fixture(scope="module")
def churn():
    """A well-calibrated model of P(churn): scores, 0/1 labels, "churn"/"stay"
    labels."""
    rng = np.random.default_rng(0)
    s = perturb_scores(rng.beta(2, 5, size=5000), H, random_state=1)
    churned = rng.uniform(size=s.shape[0]) < s
    return s, churned.astype(int), np.where(churned, "churn", "stay").astype(object)


ONE_LINERS = {
    "tv_bound": lambda y, s, **kw: tv_bound(y, s, random_state=0, **kw),
    "nw_bound": lambda y, s, **kw: nw_bound(y, s, h=H, random_state=0, **kw),
    "lipschitz_bucket_bound": lambda y, s, **kw: lipschitz_bucket_bound(
        y, s, h=H, n_buckets=32, random_state=0, **kw
    ),
    "binned_ece": lambda y, s, **kw: binned_ece(y, s, **kw),
    "calibration_test": lambda y, s, **kw: (
        calibration_test(y, s, h=H, random_state=0, **kw).upper_bound
    ),
    "perturbed_log_loss": lambda y, s, **kw: perturbed_log_loss(y, s, h=H, **kw),
    "perturbed_brier_score_loss": lambda y, s, **kw: perturbed_brier_score_loss(
        y, s, h=H, **kw
    ),
}
NO_POS_LABEL = re.escape(
    "y_true takes value in {'churn', 'stay'} and pos_label is not specified: either "
    "make y_true take value in {0, 1} or {-1, 1} or pass pos_label explicitly."
)


# --------------------------------------------------------------------------------------
# 1. The positive class
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ONE_LINERS)
def test_string_labels_need_pos_label(name, churn):
    # The trap: "stay" sorts last, so it used to be the positive class, and a model of
    # P(churn) was scored against "stay" (binned ECE 0.002 became 0.47), silently.
    # The first 1,000 rows: the positive class does not depend on the size (the
    # bounds at 5,000 rows cost ~0.1 s a call).
    s, labels, words = (a[:1000] for a in churn)
    call = ONE_LINERS[name]
    with pytest.raises(ValueError, match=NO_POS_LABEL):
        call(words, s)
    assert call(words, s, pos_label="churn") == call(labels, s)
    # The other class is a different question, with its own number.
    assert_allclose(call(words, 1 - s, pos_label="stay"), call(1 - labels, 1 - s))


def test_wrong_positive_class_is_far_off(churn):
    # What the trap cost: the same scores against the other class.
    s, labels, words = churn
    right = binned_ece(words, s, pos_label="churn")
    wrong = binned_ece(words, s, pos_label="stay")
    assert right < 0.02 < 0.3 < wrong


@pytest.mark.parametrize("name", ["tv_bound", "nw_bound", "binned_ece"])
def test_pos_label_not_among_labels(name, churn):
    s, _, words = churn
    with pytest.raises(
        ValueError,
        match=re.escape(
            "pos_label='Churn' is not a valid label. "
            "It should be one of ['churn', 'stay']."
        ),
    ):
        ONE_LINERS[name](words, s, pos_label="Churn")


def test_pos_label_selects_the_predict_proba_column(churn):
    # predict_proba of a model trained on "churn"/"stay" has P(churn) in column 0.
    s, labels, words = churn
    proba = np.column_stack([s, 1 - s])
    assert tv_bound(words, proba, pos_label="churn", random_state=0) == tv_bound(
        labels, s, random_state=0
    )
    assert binned_ece(words, proba, pos_label="stay") == binned_ece(1 - labels, 1 - s)


# --------------------------------------------------------------------------------------
# 2. h is an assumption, not a knob
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "Est, h, meant, direct",
    [
        (NWCalibrationBound, 64, "Did you mean h=1/64=0.015625?", "b1 and b2"),
        (
            NWCalibrationBound,
            6,
            "Did you mean h=1/6=0.166667 or h=2**-6=0.015625?",
            "b1 and b2",
        ),
        (LipschitzBucketBound, 0.75, "", "L"),
    ],
)
def test_h_above_one_half_is_rejected(Est, h, meant, direct, churn):
    # The trap: h=64 (1/h) or h=6 (the exponent) gave a "certificate" of 0.017 where
    # the true CE was 0.475.
    s, labels, _ = churn
    message = (
        f"h={h!r} is above 0.5. h is the bandwidth, in probability units, of the sech "
        "perturbation the scores went through (perturb_scores(y_prob, h) or "
        "SechPerturbedClassifier(h=h)), typically 2**-6 = 0.015625: an assumption "
        "about how the scores were produced, not a knob to tune."
    )
    with pytest.raises(ValueError) as info:
        Est(h=h).fit(s, labels)
    text = str(info.value)
    assert text.startswith(message)
    assert meant in text
    assert text.endswith(
        f"To assume a weak smoothness on purpose, give {direct} directly."
    )
    # h = 1/2 itself is accepted, and b1/b2 or L state a weak assumption on purpose.
    assert 0 < Est(h=0.5, random_state=0).fit(s, labels).bound_ <= 1


@pytest.mark.parametrize(
    "fit",
    [
        lambda s, y: NWCalibrationBound(h=H).fit(s, y),
        lambda s, y: LipschitzBucketBound(h=H).fit(s, y),
        lambda s, y: nw_bound(y, s, h=H),
        lambda s, y: calibration_test(y, s, h=H),
    ],
)
def test_unperturbed_discrete_scores_with_h_are_rejected(fit):
    # The trap: forgetting to perturb. A tree model's scores take a few values; no
    # perturbation produces that, so h cannot describe them.
    rng = np.random.default_rng(0)
    leaves = np.array([0.05, 0.2, 0.35, 0.6, 0.9])
    s = leaves[rng.integers(0, 5, size=3000)]
    y = (rng.uniform(size=3000) < s).astype(int)
    values, counts = np.unique(s, return_counts=True)
    largest = counts.argmax()
    with pytest.raises(
        ValueError,
        match=re.escape(
            "h=0.015625 states that the scores were perturbed with the sech kernel, "
            f"whose output is continuous, but {counts[largest]} of the 3000 scores "
            f"equal {float(values[largest])!r} (5 distinct values in all): "
            "these scores were not perturbed"
        ),
    ):
        fit(s, y)


def test_ties_from_float32_storage_are_accepted():
    # Stored as float32, perturbed scores tie by rounding (about 2% at 10**6); that is
    # not the trap, and the bound is the same kind of number as in float64.
    rng = np.random.default_rng(0)
    s = perturb_scores(rng.beta(2, 5, size=10**6), H, random_state=0)
    s32 = s.astype(np.float32)
    assert np.unique(s32).size < 0.99 * s.size  # many ties
    y = (rng.uniform(size=s.size) < s).astype(np.int8)
    est = NWCalibrationBound(h=H, random_state=0).fit(s32, y)
    assert est.bound_ < 0.05


def test_ties_are_allowed_when_smoothness_is_stated_directly():
    # b1/b2 (or L) say the calibration function is smooth for some other reason;
    # nothing is claimed about how the scores were produced.
    rng = np.random.default_rng(0)
    s = np.round(rng.uniform(size=3000), 2)
    y = (rng.uniform(size=3000) < s).astype(int)
    assert 0 < NWCalibrationBound(b1=1.0, b2=1.0, random_state=0).fit(s, y).bound_ < 1
    assert 0 < LipschitzBucketBound(L=1.0, random_state=0).fit(s, y).bound_ < 1


def test_held_out_scores_are_checked_too(churn):
    s, labels, _ = churn
    est = NWCalibrationBound(h=H, random_state=0).fit(s, labels)
    with pytest.raises(ValueError, match=r"of the 5000 scores equal 0\.5 \(1 distinct"):
        est.score(np.full(5000, 0.5), labels)


@pytest.mark.parametrize("Est", [TVCalibrationBound, NWCalibrationBound])
def test_low_confidence_level_warns(Est, churn):
    s, labels, _ = churn
    params = {"h": H} if Est is NWCalibrationBound else {}
    with pytest.warns(
        UserWarning,
        match=re.escape(
            "confidence_level=0.05 is the probability that the bound holds, not the "
            "probability delta that it fails: with this value it holds only 5% of the "
            "time. Did you mean confidence_level=0.95?"
        ),
    ):
        Est(confidence_level=0.05, random_state=0, **params).fit(s, labels)


# --------------------------------------------------------------------------------------
# 3. Swapped arguments
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, call, order",
    [
        (
            "tv_bound",
            lambda s, y: tv_bound(s, y),
            "tv_bound takes the labels first: tv_bound(y_true, y_prob).",
        ),
        (
            "binned_ece",
            lambda s, y: binned_ece(s, y),
            "binned_ece takes the labels first: binned_ece(y_true, y_prob).",
        ),
        (
            "calibration_test",
            lambda s, y: calibration_test(s, y, method="tv"),
            "calibration_test takes the labels first: "
            "calibration_test(y_true, y_prob).",
        ),
        (
            "fit",
            lambda s, y: TVCalibrationBound().fit(y, s),
            "fit takes the scores first: TVCalibrationBound(...).fit(y_prob, y_true).",
        ),
    ],
)
def test_swapped_arguments_are_named(name, call, order, churn):
    # The trap: tv_bound(scores, labels) failed with "got 5000 classes: [0.00019...]".
    s, labels, _ = churn
    n_distinct = np.unique(s).size
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"The labels hold {n_distinct} distinct values in [0, 1] and the scores "
            f"only 0 and 1: the arguments look swapped. {order}"
        ),
    ):
        call(s, labels)


def test_three_integer_classes_are_not_called_swapped():
    s = np.linspace(0, 1, 30)
    with pytest.raises(ValueError, match=r"got 3 classes: \[0, 1, 2\]\. Multiclass"):
        tv_bound(np.arange(30) % 3, s)


# --------------------------------------------------------------------------------------
# 5. Vacuous bounds
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, what", [(100, "clipped at 1"), (285, "above 0.5")])
def test_vacuous_bound_warns_with_advice(n, what):
    # The trap: on 285 or 899 held-out rows every bound was near 1, with no word.
    # TV's default cell bound is 1 at 100 rows here and 0.670 at 285 (its denoising
    # bound was 1 at 285 and above 0.5 at 899).
    rng = np.random.default_rng(0)
    s = rng.uniform(size=n)
    y = rng.uniform(size=n) < s
    with pytest.warns(VacuousBoundWarning) as record:
        bound = tv_bound(y, s, random_state=0)
    (warning,) = [w for w in record if w.category is VacuousBoundWarning]
    text = str(warning.message)
    assert (bound >= 1.0) == (what == "clipped at 1")
    assert bound > 0.5
    shown = "clipped at 1" if bound >= 1 else f"{bound:.3f}, above 0.5"
    assert text.startswith(
        f"The certified upper bound of TVCalibrationBound is {shown} with {n} samples"
    )
    assert "More labelled samples shrink the slack" in text
    assert "SechPerturbedClassifier" in text
    assert warning.filename == __file__  # points at the caller's line


def test_informative_bound_does_not_warn(churn):
    s, labels, _ = churn
    with warnings.catch_warnings():
        warnings.simplefilter("error", VacuousBoundWarning)
        assert NWCalibrationBound(h=H, random_state=0).fit(s, labels).bound_ < 0.5
