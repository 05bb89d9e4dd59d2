"""Validation of scores and labels: the door every public entry point goes through.

Everything downstream of this module trusts its inputs: scores are a float64 vector in
``[0, 1]`` and labels a float64 vector of zeros and ones of the same length.
"""

import numpy as np
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    column_or_1d,
    validate_data,
)

from ._warnings import warn_if_below_chance

# Tolerance on ``|row sum - 1|`` for a two-column ``predict_proba`` output.
_ROW_SUM_ATOL = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 1e-5}

_SHAPES = (
    "(n_samples,), (n_samples, 1) or a predict_proba output of shape (n_samples, 2)"
)


def _scores_from_array(X, name="X", column=1):
    """Positive-class scores from a validated 1-D or 2-D float array.

    Never a view we write to. ``name`` is what the caller called the array (``X`` or
    ``y_prob``), for messages; ``column`` is the positive class's column of a
    two-column ``predict_proba`` output (its index among the sorted classes).
    """
    if X.ndim == 1:
        scores = X
    elif X.shape[1] == 1:
        scores = X[:, 0]
    elif X.shape[1] == 2:
        if not np.all(np.isfinite(X)):
            raise ValueError(_nonfinite_message(X))
        row_sums = X.sum(axis=1)
        bad = np.flatnonzero(np.abs(row_sums - 1.0) > _ROW_SUM_ATOL[X.dtype])
        if bad.size:
            raise ValueError(
                f"{name} has 2 columns, so it is read as a predict_proba output whose "
                f"rows sum to one, but {bad.size} row(s) do not (row {bad[0]} sums to "
                f"{_num(row_sums[bad[0]])}). Pass the positive-class column alone as "
                "scores of shape (n_samples,) instead."
            )
        scores = X[:, column]
    else:
        raise ValueError(
            f"{name} must hold scores of shape {_SHAPES}; got an array of shape "
            f"{X.shape}."
        )
    return np.asarray(scores, dtype=np.float64)


def _num(x):
    """A number as users type it (``0.5``, not ``np.float64(0.5)``)."""
    return repr(float(x))


def _nonfinite_message(scores):
    n_nan = int(np.isnan(scores).sum())
    n_inf = int(np.isinf(scores).sum())
    what = " and ".join(
        f"{k} {part}" for part, k in (("NaN", n_nan), ("infinite value(s)", n_inf)) if k
    )
    return f"Scores contain {what}; expected finite probabilities in [0, 1]."


def _check_range(scores):
    lo, hi = scores.min(), scores.max()
    # NaN propagates to the minimum, an infinity is the minimum or the maximum: no
    # separate pass over the scores for them.
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(_nonfinite_message(scores))
    if lo < 0.0 or hi > 1.0:
        raise ValueError(
            "Scores must be probabilities in [0, 1]; got values in "
            f"[{_num(lo)}, {_num(hi)}]. Pass predict_proba outputs, not "
            "decision_function values or logits."
        )


def _validate(estimator, X, y, reset):
    kwargs = dict(
        ensure_2d=False,
        allow_nd=True,  # so that 3-D input gets the message below
        dtype=(np.float64, np.float32),
        ensure_all_finite=False,
        ensure_min_features=1,
    )
    if y is None:
        X = validate_data(estimator, X, reset=reset, **kwargs)
    else:
        X, y = validate_data(estimator, X, y, reset=reset, y_numeric=False, **kwargs)
    if X.ndim > 2:
        raise ValueError(
            f"X must hold scores of shape {_SHAPES}; got an array of shape {X.shape}."
        )
    if reset:
        estimator.n_features_in_ = 1 if X.ndim == 1 else X.shape[1]
    _check_range(_scores_from_array(X))  # the scores' errors before the labels'
    return X, y


def _label_classes(y):
    """The sorted class labels of ``y``, checking there are one or two."""
    if y.dtype.kind in "biuf":
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("Labels y contain NaN or infinite values.")
        lo, hi = y.min(), y.max()
        # Two comparisons instead of np.unique: a sort of 10**7 labels is not needed;
        # integers (and booleans) between two consecutive values need neither.
        if (
            lo == hi
            or (y.dtype.kind in "biu" and int(hi) - int(lo) == 1)
            or np.all((y == lo) | (y == hi))
        ):
            classes = np.unique([lo, hi])
        else:
            classes = np.unique(y)
    else:
        try:
            classes = np.unique(y)
        except TypeError as exc:  # e.g. None among the labels, or str mixed with int
            kinds = sorted({type(v).__name__ for v in y.ravel().tolist()})
            raise TypeError(
                "y must hold binary labels of one comparable type (numbers, strings "
                f"or booleans); got labels of types {kinds}."
            ) from exc
    if classes.size not in (1, 2):
        shown = classes[:10].tolist()
        more = ", ..." if classes.size > 10 else ""
        raise ValueError(
            "y must contain exactly two classes (binary labels); got "
            f"{classes.size} classes: {shown}{more}. Multiclass targets are not "
            "supported."
        )
    return classes


def _binary_classes(y):
    """The two sorted class labels of ``y``, checking there are exactly two."""
    classes = _label_classes(y)
    if classes.size == 1:
        raise ValueError(
            f"y contains a single class ({classes.tolist()[0]!r}); calibration bounds "
            "need binary labels with both classes present."
        )
    return classes


def _pos_label_needed(classes):
    """scikit-learn's error for labels that do not say which class is positive."""
    classes_repr = ", ".join(repr(c) for c in classes.tolist())
    return ValueError(
        f"y_true takes value in {{{classes_repr}}} and pos_label is not "
        "specified: either make y_true take value in {0, 1} or {-1, 1} or "
        "pass pos_label explicitly."
    )


def _same_kind(label, pos_label):
    """Whether ``pos_label`` can be the class ``label``: a string is never a number."""
    return type(label) is type(pos_label) or not (
        isinstance(label, str) or isinstance(pos_label, str)
    )


def _positive_index(classes, pos_label):
    """Index of the positive class in the two sorted ``classes``.

    scikit-learn's rule (``calibration_curve``, ``brier_score_loss``): without
    ``pos_label``, labels must be {0, 1}, {-1, 1} or booleans and 1 is positive; any
    other labels need ``pos_label``, with scikit-learn's message. Guessing (say, the
    label that sorts last) would silently score a model of P("churn") against "stay".
    """
    if pos_label is None:
        if classes.dtype.kind in "OUS" or not (
            np.array_equal(classes, [0, 1]) or np.array_equal(classes, [-1, 1])
        ):
            raise _pos_label_needed(classes)
        return 1
    for index, label in enumerate(classes.tolist()):
        if _same_kind(label, pos_label) and label == pos_label:
            return index
    raise ValueError(
        f"pos_label={pos_label!r} is not a valid label. It should be one of "
        f"{classes.tolist()}."
    )


def _swapped_message(y, scores, call):
    """The message for labels that look like scores next to scores that look like
    labels, or None. Only called once ``y`` has failed as binary labels."""
    if y.dtype.kind != "f" or scores.shape[0] == 0:
        return None
    if not np.all((scores == 0.0) | (scores == 1.0)):
        return None
    if not (np.all(np.isfinite(y)) and y.min() >= 0.0 and y.max() <= 1.0):
        return None
    n_values = np.unique(y).size
    return (
        f"The labels hold {n_values} distinct values in [0, 1] and the scores only 0 "
        f"and 1: the arguments look swapped. {call}"
    )


def _single_class_positive(classes, pos_label):
    """For labels that are all the one class in ``classes``: ``(whether it is the
    positive class, the positive class's column in a two-column predict_proba)``.

    scikit-learn's rule for one class (``_check_pos_label_consistency``, used by
    ``calibration_curve`` and ``brier_score_loss``): without ``pos_label`` the class
    must be 0, -1 or 1 (booleans too) and 1 is positive, so the absent class sorts
    first and the column is 1. With ``pos_label`` the labels equal to it are
    positive, so labels of another class are all negative (a fold with no positives)
    and the column is ``pos_label``'s place among the two; labels all equal to
    ``pos_label`` do not say which class is absent, nor the column (None).
    """
    (label,) = classes.tolist()
    if pos_label is None:
        if classes.dtype.kind in "OUS" or label not in (0, 1, -1):
            raise _pos_label_needed(classes)
        return label == 1, 1
    if not _same_kind(label, pos_label):
        raise ValueError(
            f"pos_label={pos_label!r} is not a valid label: y holds the single class "
            f"{label!r}, and a string and a number are never the same class."
        )
    if label == pos_label:
        return True, None
    return False, int(pos_label > label)


def _labels_01(y, scores, pos_label, call, single_class=False):
    """``(labels as uint8 in {0, 1}, sorted classes, column of the positive class)``.

    The column is the positive class's index among the two sorted classes; with
    ``single_class``, labels of one class are accepted (``classes`` has one element)
    and the column is None when they cannot tell it (see
    :func:`_single_class_positive`).
    """
    try:
        classes = _label_classes(y) if single_class else _binary_classes(y)
    except ValueError as exc:
        message = _swapped_message(y, scores, call)
        if message is None:
            raise
        raise ValueError(message) from exc
    if classes.size == 1:
        positive, column = _single_class_positive(classes, pos_label)
        return np.full(y.shape[0], positive, dtype=np.uint8), classes, column
    index = _positive_index(classes, pos_label)
    return (y == classes[index]).view(np.uint8), classes, index


def check_scores_labels(estimator, X, y, pos_label=None):
    """Validate ``(X, y)`` in ``fit``: set ``n_features_in_`` and return the arrays
    (see :func:`scores_labels`), warning when the scores rank the positive class below
    chance."""
    scores, labels, classes, column = scores_labels(estimator, X, y, pos_label)
    warn_if_below_chance(scores, labels, classes, column)
    return scores, labels, classes


def scores_labels(estimator, X, y, pos_label=None):
    """Validate ``(X, y)`` in ``fit``: set ``n_features_in_`` and return the arrays.

    Parameters
    ----------
    estimator : estimator instance
        The estimator being fitted; ``n_features_in_`` (and ``feature_names_in_`` for
        data frames) are set on it.
    X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
        Scores, or a ``predict_proba`` output (columns in sorted class order).
    y : array-like of shape (n_samples,)
        Binary labels.
    pos_label : int, float, bool, str or None
        The positive class (see :func:`_positive_index`).

    Returns
    -------
    scores : ndarray of shape (n_samples,), float64 in [0, 1]
    labels : ndarray of shape (n_samples,), uint8 in {0, 1}
    classes : ndarray of shape (2,)
    column : int or None
        The column of the positive class when ``X`` has two, else None.
    """
    if y is None:
        # scikit-learn's wording, which its common checks look for.
        raise ValueError(
            f"This {type(estimator).__name__} estimator requires y to be passed, but "
            "the target y is None."
        )
    X, y = _validate(estimator, X, y, reset=True)
    name = type(estimator).__name__
    call = f"fit takes the scores first: {name}(...).fit(y_prob, y_true)."
    scores = _scores_from_array(X)
    labels, classes, index = _labels_01(y, scores, pos_label, call)
    if index != 1:
        scores = _scores_from_array(X, column=index)
        _check_range(scores)
    column = index if X.ndim == 2 and X.shape[1] == 2 else None
    return scores, labels, classes, column


def check_scores(estimator, X):
    """Validate ``X`` after ``fit`` and return float64 scores in ``[0, 1]`` (from a
    two-column ``X``, the column of the positive class fixed in ``fit``)."""
    X, _ = _validate(estimator, X, None, reset=False)
    column = _positive_index(estimator.classes_, getattr(estimator, "pos_label", None))
    scores = _scores_from_array(X, column=column)
    _check_range(scores)
    return scores


def _probabilities_array(y_prob, name):
    X = check_array(
        y_prob,
        input_name=name,
        ensure_2d=False,
        allow_nd=True,
        dtype=(np.float64, np.float32),
        ensure_all_finite=False,
    )
    if X.ndim > 2:
        raise ValueError(
            f"{name} must hold scores of shape {_SHAPES}; "
            f"got an array of shape {X.shape}."
        )
    return X


def check_probabilities(y_prob, name="scores"):
    """Validate the scores of a function without labels; float64 scores in [0, 1]."""
    scores = _scores_from_array(_probabilities_array(y_prob, name), name)
    _check_range(scores)
    return scores


def check_prob_labels(
    y_true, y_prob, pos_label=None, caller="this function", *, single_class=False
):
    """Validate the ``(y_true, y_prob)`` of a metric-style function (no estimator).

    ``caller`` is the function's name, for the message when the arguments look
    swapped. ``single_class=True`` accepts labels that are all one class, as
    scikit-learn's ``calibration_curve`` and ``brier_score_loss`` do (the metrics,
    well defined on a segment or a fold without positives); the bounds leave it
    False and refuse them.

    Returns
    -------
    labels : ndarray of shape (n_samples,), float64 in {0, 1}
    scores : ndarray of shape (n_samples,), float64 in [0, 1]
    """
    X = _probabilities_array(y_prob, "y_prob")
    y = column_or_1d(y_true)
    check_consistent_length(y, X)
    scores = _scores_from_array(X, "y_prob")
    _check_range(scores)
    call = f"{caller} takes the labels first: {caller}(y_true, y_prob)."
    labels, _, column = _labels_01(y, scores, pos_label, call, single_class)
    if X.ndim == 2 and X.shape[1] == 2 and column != 1:
        if column is None:
            raise ValueError(
                f"Every label of y_true is pos_label={pos_label!r}, so the labels do "
                "not say which column of the two-column y_prob is its probability. "
                "Pass that column alone, of shape (n_samples,)."
            )
        scores = _scores_from_array(X, "y_prob", column=column)
        _check_range(scores)
    return labels.astype(np.float64), scores


def classifier_labels_01(classes, y, pos_label, name="y"):
    """``(labels as float64 0/1, column of pos_label in predict_proba)`` for a fitted
    binary classifier with ``classes`` (its ``classes_``): ``pos_label`` defaults to
    ``classes[1]``, as in scikit-learn's scorers and ``CalibrationDisplay``; labels
    the classifier does not know are an error. ``name`` is the caller's name for
    ``y``, for messages."""
    if pos_label is None:
        pos_label = classes[1]
    elif pos_label not in classes.tolist():
        raise ValueError(
            f"pos_label={pos_label!r} is not a valid label: it should be one of the "
            f"estimator's classes_ {classes.tolist()}."
        )
    y = column_or_1d(y)
    unknown = ~np.isin(y, classes)
    if unknown.any():
        raise ValueError(
            f"{name} has labels the estimator does not know: "
            f"{np.unique(y[unknown]).tolist()[:5]}; its classes_ are "
            f"{classes.tolist()}."
        )
    column = int(np.flatnonzero(classes == pos_label)[0])
    return (y == pos_label).astype(np.float64), column


def check_held_out_labels(estimator, y, n_samples):
    """Validate the labels passed to ``score``: classes seen in ``fit``, one per score;
    returns them as float 0/1 (1: the positive class).

    Most bounds depend on the held-out scores only (NW's default reads the labels
    too), but labels that cannot be the held-out data's (unknown classes, NaN, wrong
    length) signal a mix-up.
    """
    y = column_or_1d(y)
    if y.shape[0] != n_samples:
        raise ValueError(
            "Found input variables with inconsistent numbers of samples: "
            f"[{n_samples}, {y.shape[0]}]."
        )
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("Labels y contain NaN or infinite values.")
    unknown = np.setdiff1d(np.unique(y), estimator.classes_)
    if unknown.size:
        raise ValueError(
            f"y contains labels {unknown[:10].tolist()} that were not seen in fit; "
            f"the classes are {estimator.classes_.tolist()}."
        )
    classes = estimator.classes_
    positive = classes[_positive_index(classes, getattr(estimator, "pos_label", None))]
    return (y == positive).astype(np.float64)
