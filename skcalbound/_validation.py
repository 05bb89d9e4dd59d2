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

# Tolerance on ``|row sum - 1|`` for a two-column ``predict_proba`` output.
_ROW_SUM_ATOL = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 1e-5}

_SHAPES = "(n_samples,), (n_samples, 1) or a predict_proba output of shape (n_samples, 2)"


def _scores_from_array(X, name="X"):
    """Positive-class scores from a validated 1-D or 2-D float array.

    Never a view we write to. ``name`` is what the caller called the array (``X`` or
    ``y_prob``), for messages.
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
        scores = X[:, 1]
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
    if not np.all(np.isfinite(scores)):
        raise ValueError(_nonfinite_message(scores))
    lo, hi = scores.min(), scores.max()
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
    scores = _scores_from_array(X)
    _check_range(scores)
    return scores, y


def _binary_classes(y):
    """The two sorted class labels of ``y``, checking there are exactly two."""
    if y.dtype.kind in "biuf":
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("Labels y contain NaN or infinite values.")
        lo, hi = y.min(), y.max()
        # Two comparisons instead of np.unique: a sort of 10**7 labels is not needed.
        if lo == hi or np.all((y == lo) | (y == hi)):
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
    if classes.size != 2:
        shown = classes[:10].tolist()
        more = ", ..." if classes.size > 10 else ""
        if classes.size == 1:
            raise ValueError(
                f"y contains a single class ({shown[0]!r}); calibration bounds need "
                "binary labels with both classes present."
            )
        raise ValueError(
            "y must contain exactly two classes (binary labels; the positive class is "
            f"the larger one); got {classes.size} classes: {shown}{more}. "
            "Multiclass targets are not supported."
        )
    return classes


def check_scores_labels(estimator, X, y):
    """Validate ``(X, y)`` in ``fit``: set ``n_features_in_`` and return the arrays.

    Parameters
    ----------
    estimator : estimator instance
        The estimator being fitted; ``n_features_in_`` (and ``feature_names_in_`` for
        data frames) are set on it.
    X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
        Scores, or a ``predict_proba`` output whose column 1 is the positive class.
    y : array-like of shape (n_samples,)
        Binary labels; the positive class is the larger label.

    Returns
    -------
    scores : ndarray of shape (n_samples,), float64 in [0, 1]
    labels : ndarray of shape (n_samples,), uint8 in {0, 1}
    classes : ndarray of shape (2,)
    """
    if y is None:
        # scikit-learn's wording, which its common checks look for.
        raise ValueError(
            f"This {type(estimator).__name__} estimator requires y to be passed, but "
            "the target y is None."
        )
    scores, y = _validate(estimator, X, y, reset=True)
    classes = _binary_classes(y)
    labels = (y == classes[1]).view(np.uint8)
    return scores, labels, classes


def check_scores(estimator, X):
    """Validate ``X`` after ``fit`` and return float64 scores in ``[0, 1]``."""
    scores, _ = _validate(estimator, X, None, reset=False)
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
            f"{name} must hold scores of shape {_SHAPES}; got an array of shape {X.shape}."
        )
    return X


def check_probabilities(y_prob, name="scores"):
    """Validate the scores of a function without labels; float64 scores in [0, 1]."""
    scores = _scores_from_array(_probabilities_array(y_prob, name), name)
    _check_range(scores)
    return scores


def check_prob_labels(y_true, y_prob):
    """Validate the ``(y_true, y_prob)`` of a metric-style function (no estimator).

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
    classes = _binary_classes(y)
    return (y == classes[1]).astype(np.float64), scores


def check_held_out_labels(estimator, y, n_samples):
    """Validate the labels passed to ``score``: classes seen in ``fit``, one per score.

    The bound itself depends on the held-out scores only, but labels that cannot be
    the held-out data's (unknown classes, NaN, wrong length) signal a mix-up.
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


# Above these, a smoothing-error term g = b1 * (distance) + ... is far above 1 at every
# score not tied with training scores, and the distances that could keep it below 1
# are below what double precision resolves after the grid sums (absolute error about
# eps * bin width per unit of b1): the number would rest on rounding.
MAX_FIRST_DERIVATIVE = 2.0**40
MAX_SECOND_DERIVATIVE = 1.5 * 2.0**82  # b2(h) for h = 2**-41, as b1 <= 2**40


def check_smoothness_constants(names, values, h=None):
    """Raise a ValueError if a derivative bound is too large to evaluate reliably.

    ``names``/``values`` pair the constants (``"b1"``, ``"b2"`` or ``"L"``) with their
    values; ``h`` is the bandwidth they were derived from, if any.
    """
    limits = {"b1": MAX_FIRST_DERIVATIVE, "L": MAX_FIRST_DERIVATIVE,
              "b2": MAX_SECOND_DERIVATIVE}
    for name, value in zip(names, values):
        limit = limits[name]
        if value > limit:
            origin = f" (from h={h!r})" if h is not None else ""
            fix = "h >= 2**-41" if h is not None else f"{name} <= {limit:.4g}"
            raise ValueError(
                f"{name}={value:.4g}{origin} is too large: above {limit:.4g} the "
                "smoothing-error term exceeds 1 at every score not tied with a training "
                "score, and the distances that could keep it below 1 are smaller than "
                "double precision resolves, so the bound would rest on rounding. Use "
                f"{fix}; the bound is 1 (uninformative) in that regime anyway."
            )
