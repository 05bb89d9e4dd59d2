"""Validation of scores and labels: the door every public entry point goes through.

Everything downstream of this module trusts its inputs: scores are a float64 vector in
``[0, 1]`` and labels a float64 vector of zeros and ones of the same length.
"""

import os
import sys
import warnings

import numpy as np
import pandas as pd
import sklearn
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    column_or_1d,
    validate_data,
)

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


def _binary_classes(y):
    """The two sorted class labels of ``y``, checking there are exactly two."""
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
    if classes.size != 2:
        shown = classes[:10].tolist()
        more = ", ..." if classes.size > 10 else ""
        if classes.size == 1:
            raise ValueError(
                f"y contains a single class ({shown[0]!r}); calibration bounds need "
                "binary labels with both classes present."
            )
        raise ValueError(
            "y must contain exactly two classes (binary labels); got "
            f"{classes.size} classes: {shown}{more}. Multiclass targets are not "
            "supported."
        )
    return classes


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
            classes_repr = ", ".join(repr(c) for c in classes.tolist())
            raise ValueError(
                f"y_true takes value in {{{classes_repr}}} and pos_label is not "
                "specified: either make y_true take value in {0, 1} or {-1, 1} or "
                "pass pos_label explicitly."
            )
        return 1
    for index, label in enumerate(classes.tolist()):
        if type(label) is type(pos_label) or not (
            isinstance(label, str) or isinstance(pos_label, str)
        ):
            if label == pos_label:
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


def _labels_01(y, scores, pos_label, call):
    """``(labels as uint8 in {0, 1}, sorted classes, index of the positive class)``."""
    try:
        classes = _binary_classes(y)
    except ValueError as exc:
        message = _swapped_message(y, scores, call)
        if message is None:
            raise
        raise ValueError(message) from exc
    index = _positive_index(classes, pos_label)
    return (y == classes[index]).view(np.uint8), classes, index


def check_scores_labels(estimator, X, y, pos_label=None):
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
    warn_if_below_chance(scores, labels, classes, column)
    return scores, labels, classes


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


def check_prob_labels(y_true, y_prob, pos_label=None, caller="this function"):
    """Validate the ``(y_true, y_prob)`` of a metric-style function (no estimator).

    ``caller`` is the function's name, for the message when the arguments look
    swapped.

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
    labels, _, index = _labels_01(y, scores, pos_label, call)
    if index != 1:
        scores = _scores_from_array(X, "y_prob", column=index)
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
    limits = {
        "b1": MAX_FIRST_DERIVATIVE,
        "L": MAX_FIRST_DERIVATIVE,
        "b2": MAX_SECOND_DERIVATIVE,
    }
    for name, value in zip(names, values):
        limit = limits[name]
        if value > limit:
            origin = f" (from h={h!r})" if h is not None else ""
            fix = "h >= 2**-41" if h is not None else f"{name} <= {limit:.4g}"
            raise ValueError(
                f"{name}={value:.4g}{origin} is too large: above {limit:.4g} the "
                "smoothing-error term exceeds 1 at every score not tied with a "
                "training score, and the distances that could keep it below 1 are "
                "smaller than double precision resolves, so the bound would rest on "
                "rounding. Use "
                f"{fix}; the bound is 1 (uninformative) in that regime anyway."
            )


# The sech perturbation's bandwidth is a scale in probability units; above 1/2 the
# perturbation spreads a score over all of [0, 1] and no user means that (the values
# seen in practice were 1/h or the exponent of 2**-k).
MAX_PERTURBATION_H = 0.5


def check_perturbation_h(h, constants=None):
    """Raise a ValueError, saying what ``h`` is, if ``h`` exceeds 1/2.

    ``constants`` names the parameters that state a bound's assumption directly
    (``"b1 and b2"`` or ``"L"``), for a user who really means a weak one; ``None``
    for the doors that perturb (``perturb_scores``, ``SechPerturbedClassifier``, the
    perturbed losses and scorers), where ``h`` is the noise itself.
    """
    if h is None or h <= MAX_PERTURBATION_H:
        return
    guesses = []
    if h >= 2:
        guesses.append(f"h=1/{h:g}={1 / h:.6g}")
    if float(h).is_integer() and h <= 41:
        guesses.append(f"h=2**-{int(h)}={2.0**-h:.6g}")
    meant = f" Did you mean {' or '.join(guesses)}?" if guesses else ""
    if constants is None:
        raise ValueError(
            f"h={h!r} is above 0.5. h is the bandwidth, in probability units, of the "
            "sech perturbation (perturb_scores(y_prob, h) or "
            "SechPerturbedClassifier(h=h)), typically 2**-6 = 0.015625: above 0.5 "
            "it spreads each score over most of [0, 1], the perturbed scores rank "
            f"little better than chance, and the bounds refuse it.{meant}"
        )
    raise ValueError(
        f"h={h!r} is above 0.5. h is the bandwidth, in probability units, of the sech "
        "perturbation the scores went through (perturb_scores(y_prob, h) or "
        "SechPerturbedClassifier(h=h)), typically 2**-6 = 0.015625: an assumption "
        f"about how the scores were produced, not a knob to tune.{meant} To assume a "
        f"weak smoothness on purpose, give {constants} directly."
    )


_TIE_CELLS = 2**16


def check_untied_scores(sorted_scores, h, *, is_sorted=True):
    """Raise a ValueError if the scores cannot have come through the perturbation.

    Scores perturbed with the sech kernel have a continuous law, so ties among them
    come from rounding only. Rounding ties are not rare: stored as float32, 17% of
    10**7 perturbed scores are tied, in blocks of at most 8 (measured: a Beta(2, 5)
    score law perturbed with ``h = 2**-6``), so an error on any tie would reject
    honest data. The test is the largest block of equal scores instead: at least
    ``max(10, n / 1000)`` equal scores means a value holding a thousandth of the data
    (an unperturbed tree model, rounded or discrete scores). The perturbation does not
    produce that in float64 for any accepted ``h >= 2**-41`` (10**7 copies of 0.9
    perturbed with ``h = 2**-41``: largest block 857, measured), only when ``h`` is
    below the precision the scores were stored in.
    """
    n = sorted_scores.shape[0]
    limit = max(10, -(-n // 1000))
    if not is_sorted:
        # Sort-free: a block of ``limit`` equal scores puts ``limit`` points in one
        # cell of any grid, so only the points of such heavy cells need sorting.
        cells = np.minimum((sorted_scores * _TIE_CELLS).astype(np.intp), _TIE_CELLS - 1)
        heavy = np.bincount(cells, minlength=_TIE_CELLS) >= limit
        if not heavy.any():
            return
        everything = sorted_scores
        sorted_scores = np.sort(sorted_scores[heavy[cells]])
    equal = sorted_scores[1:] == sorted_scores[:-1]
    if np.count_nonzero(equal) < limit - 1:
        return  # no block can reach the limit
    starts = np.flatnonzero(np.concatenate(([True], ~equal)))
    sizes = np.diff(np.append(starts, sorted_scores.shape[0]))
    largest = int(sizes.argmax())
    if sizes[largest] < limit:
        return
    n_distinct = starts.shape[0] if is_sorted else pd.unique(everything).shape[0]
    raise ValueError(
        f"h={h!r} states that the scores were perturbed with the sech kernel, whose "
        f"output is continuous, but {int(sizes[largest])} of the {n} scores equal "
        f"{_num(sorted_scores[starts[largest]])} ({n_distinct} distinct values in "
        "all): these scores were not perturbed, so the NW and Lipschitz assumptions "
        "derived from h do not hold for them. Perturb them first (perturb_scores("
        "y_prob, h) or SechPerturbedClassifier(model, h=h)) and bound the perturbed "
        "scores, or, if the calibration function is smooth for another reason, state "
        "its smoothness directly (b1 and b2, or L), or use TVCalibrationBound."
    )


# Frames in these packages are skipped when a warning names the caller's line (Python
# 3.12's ``skip_file_prefixes`` does this; we support 3.10).
_LIBRARY_DIRS = tuple(
    os.path.dirname(path) + os.sep for path in (sklearn.__file__, __file__)
)


def _user_stacklevel():
    """The ``stacklevel`` of ``warnings.warn`` called from the frame above this one
    that points at the first frame outside skcalbound and scikit-learn."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    return level


class VacuousBoundWarning(UserWarning):
    """Warning that an upper bound is too large to be informative.

    Issued by ``fit`` when the upper bound is above 0.5 (or clipped at 1): the
    calibration error is at most 1 anyway. The message says what shrinks the bound
    that raised it: more labelled samples for all (the slack shrinks like
    ``n**(-1/4)`` for TV and ``n**(-1/3)`` for NW); for TV and Lipschitz bucketing,
    NW on perturbed scores; for NW, a larger ``h`` (or smaller ``b1``, ``b2``). It
    calls the bound certified only when it is: with ``guarantee='paper'`` the NW and
    Lipschitz bounds hold in expectation over the training labels only. Silence it
    with :func:`warnings.filterwarnings` (``category=VacuousBoundWarning``).

    See Also
    --------
    NWCalibrationBound : The tightest bound, for perturbed scores.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skcalbound import TVCalibrationBound, VacuousBoundWarning
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=300)
    >>> y = rng.uniform(size=300) < s
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     bound = TVCalibrationBound(random_state=0).fit(s, y).bound_
    >>> round(bound, 3), caught[0].category.__name__
    (0.658, 'VacuousBoundWarning')
    """


class MonotonicityWarning(UserWarning):
    """Warning that the data reject a monotone calibration function.

    Issued by :class:`MonotoneCalibrationBound` when its calibration band crosses
    (``L(x) > U(x)`` at some score ``x``). Under the bound's assumption, a
    non-decreasing ``E[y | s]``, this happens with probability at most
    ``(1 - confidence_level) / 2``, so a crossing is a level-``(1 - confidence_level)
    / 2`` test that rejects monotonicity: the interval should not be trusted. The
    test catches only some non-monotone calibration functions, not all (see the user
    guide). :class:`TVCalibrationBound` assumes bounded variation instead of
    monotonicity. Silence it with :func:`warnings.filterwarnings`
    (``category=MonotonicityWarning``).

    See Also
    --------
    MonotoneCalibrationBound : The bound that issues it.
    TVCalibrationBound : A bound that does not assume monotonicity.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skcalbound import MonotoneCalibrationBound, MonotonicityWarning
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> eta = np.where((s > 0.3) & (s < 0.7), 1 - s, s)  # falls on (0.3, 0.7)
    >>> y = rng.uniform(size=20_000) < eta
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     est = MonotoneCalibrationBound(random_state=0).fit(s, y)
    >>> est.monotonicity_rejected_, caught[0].category.__name__
    (True, 'MonotonicityWarning')
    """


def warn_if_vacuous(bound, n_samples, name, advice, *, in_expectation_only=False):
    """Warn when the upper bound is clipped at 1 or above 1/2, saying what helps
    (``advice``, the bound's own) and what kind of bound it is."""
    if not bound > 0.5:
        return
    what = "clipped at 1" if bound >= 1.0 else f"{bound:.3f}, above 0.5"
    if in_expectation_only:
        which = (
            f"The upper bound of {name} (guarantee='paper': it holds in expectation "
            "over the training labels only, not with probability confidence_level)"
        )
    else:
        which = f"The certified upper bound of {name}"
    warnings.warn(
        f"{which} is {what} with {n_samples} samples: it says little about the "
        f"calibration error. {advice}",
        VacuousBoundWarning,
        stacklevel=_user_stacklevel(),
    )


def warn_if_low_confidence(confidence_level):
    """Warn when ``confidence_level`` looks like the error probability delta."""
    if confidence_level < 0.5:
        warnings.warn(
            f"confidence_level={confidence_level!r} is the probability that the bound "
            "holds, not the probability delta that it fails: with this value it holds "
            f"only {confidence_level:.0%} of the time. Did you mean "
            f"confidence_level={1 - confidence_level:g}?",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )


class BelowChanceWarning(UserWarning):
    """Warning that the scores rank the positive class below chance.

    Issued by ``fit`` (and the functions that call it) when the AUROC of the scores
    against the labels is below 1/2 by more than three times the largest standard
    error it can have: the scores point away from the positive class. A certified
    interval on such scores is valid for them as given, but the usual cause is a
    mix-up: a wrong ``pos_label``, or the columns of a ``predict_proba`` output in
    another order than the sorted classes. A calibrated model ranks at least at
    chance, so an uninformative model does not raise it (beyond a rate of about
    ``1e-3`` in the worst case).

    See Also
    --------
    VacuousBoundWarning : The warning for a bound too large to inform.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skcalbound import BelowChanceWarning, TVCalibrationBound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < s
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = TVCalibrationBound(random_state=0).fit(1 - s, y)  # P(y = 0), not 1
    >>> below = [w for w in caught if w.category is BelowChanceWarning]
    >>> print(str(below[0].message)[:79])
    The scores rank the positive class below chance: their AUROC against the labels
    """


# The AUROC is counted on a grid of this many cells of [0, 1] (no sort), in chunks of
# this many scores (no temporary of the size of the data).
_AUROC_CELLS = 2**16
_AUROC_CHUNK = 2**18
# Standard errors below 1/2 that the AUROC must be to warn.
_BELOW_CHANCE_Z = 3.0


def _binned_auroc(scores, labels):
    """``(auroc, tied)``: the AUROC of the scores rounded down to the grid, and the
    fraction of (positive, negative) pairs in one cell.

    Pairs in one cell count 1/2 here, and between 0 and 1 in the AUROC of the scores
    themselves, so that AUROC is at most ``auroc + tied / 2``.
    """
    # One bincount of ``2 * cell + label`` per chunk: the even slots count the
    # negatives of each cell, the odd ones its positives. ``floor(2 K s)`` rounded
    # down to even is ``2 floor(K s)`` (K a power of two: the product is exact).
    counts = np.zeros(2 * _AUROC_CELLS, dtype=np.intp)
    scaled = np.empty(min(_AUROC_CHUNK, scores.shape[0]))
    keys = np.empty(scaled.shape[0], dtype=np.intp)
    for start in range(0, scores.shape[0], _AUROC_CHUNK):
        part = scores[start : start + _AUROC_CHUNK]
        key = keys[: part.shape[0]]
        np.copyto(
            key,
            np.multiply(part, 2 * _AUROC_CELLS, out=scaled[: part.shape[0]]),
            casting="unsafe",
        )
        key &= ~1
        np.minimum(key, 2 * _AUROC_CELLS - 2, out=key)  # s = 1 in the last cell
        key |= labels[start : start + _AUROC_CHUNK]
        counts += np.bincount(key, minlength=2 * _AUROC_CELLS)
    negative = counts[0::2].astype(np.float64)
    positive = counts[1::2].astype(np.float64)
    pairs = positive.sum() * negative.sum()
    below = np.cumsum(negative) - negative  # negatives in lower cells
    return (
        float(positive @ (below + 0.5 * negative) / pairs),
        float(positive @ negative / pairs),
    )


def warn_if_below_chance(scores, labels, classes=None, column=None):
    """Warn when the scores' AUROC against the labels is clearly below 1/2.

    ``labels`` are 0/1, with both classes present. ``classes`` (the sorted labels)
    and ``column`` (the index of the positive one) are given when the scores were
    read from that column of a two-column ``predict_proba`` input, for the message.

    The test: ``auroc + tied / 2`` (an upper bound on the AUROC, from
    :func:`_binned_auroc`) below ``1/2 - z se`` with ``z = 3`` and
    ``se = sqrt((n1 + n0 - 1) / (n1 n0)) / 2``. That ``se`` is the largest standard
    error the AUROC (a two-sample U-statistic with a kernel in [0, 1]) can have at any
    population value ``A``: each of the three variance components of the
    U-statistic is the variance of a quantity in [0, 1] with mean ``A``, at most
    ``A (1 - A) <= 1/4``. The null value ``sqrt((n1 + n0 + 1) / (12 n1 n0))``, for
    scores independent of the labels, is smaller by up to ``sqrt(3)`` than the
    standard error at ``A = 1/2`` of scores that do depend on the labels (positives
    at both ends of the negatives), so it would warn too often there.
    """
    n1 = int(np.count_nonzero(labels))
    n0 = labels.shape[0] - n1
    if n1 == 0 or n0 == 0:
        return  # no pair to rank (a class absent: the caller decides whether to refuse)
    se = 0.5 * np.sqrt((n1 + n0 - 1) / (n1 * n0))
    threshold = 0.5 - _BELOW_CHANCE_Z * se
    if threshold <= 0.0:
        return  # too few samples of a class to ever tell
    auroc, tied = _binned_auroc(scores, labels)
    if not auroc + 0.5 * tied < threshold:
        return
    if column is None:
        check = (
            "pos_label (the class whose probability the scores are) and, if the "
            "scores are a column of a predict_proba output, that it is that class's "
            "column (predict_proba's columns follow the sorted classes, classes_)"
        )
    else:
        shown = [c.item() if isinstance(c, np.generic) else c for c in classes]
        check = (
            f"pos_label (here {shown[column]!r}) and the column order: the scores "
            f"were read from column {column} of the two-column input, the column of "
            f"{shown[column]!r} among the sorted classes {shown}"
        )
    warnings.warn(
        f"The scores rank the positive class below chance: their AUROC against the "
        f"labels is {auroc:.3f} ({n1} positive and {n0} negative samples), more than "
        f"{_BELOW_CHANCE_Z:g} standard errors below 0.5. A bound holds for these "
        "scores as given, but scores that point away from the labels usually mean a "
        f"mix-up: check {check}.",
        BelowChanceWarning,
        stacklevel=_user_stacklevel(),
    )
