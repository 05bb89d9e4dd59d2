"""The package's warnings (vacuous bound, rejected monotonicity, scores below chance)
and the helpers that issue them at the caller's line."""

import os
import sys
import warnings

import numpy as np
import sklearn

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

    Issued by ``fit`` and ``fit_chunks`` (on arrays, chunks and Dask input alike, and
    by the functions that call them) when the AUROC of the scores against the labels
    is below 1/2 by more than three times the largest standard
    error it can have: the scores point away from the positive class. A certified
    interval on such scores is valid for them as given, but the usual cause is a
    mix-up: a wrong ``pos_label``, or the columns of a ``predict_proba`` output in
    another order than the sorted classes. A calibrated model ranks at least at
    chance, so an uninformative model does not raise it (beyond a rate of about
    ``1e-3`` in the worst case).

    On reductions the user did not build, the message names what to check there:
    :class:`MulticlassCalibrationBound` says it once for its reduction (the
    top-label confidences, or the columns that rank their class below chance) and
    points at the column order of ``X``; :func:`bounds_by_group` says it once, about
    ``pos_label`` when all rows together rank below chance, else naming the
    segments that do.

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
# this many scores (no temporary of the size of the data). ``fit`` counts them with
# the estimate's sums (``_estimate.ESTIMATE_CELLS``, the same grid).
AUROC_CELLS = 2**16
_AUROC_CHUNK = 2**18
# Standard errors below 1/2 that the AUROC must be to warn.
_BELOW_CHANCE_Z = 3.0


def _cell_counts(scores, labels):
    """``(negative, positive)``: per cell of the grid, the negatives and positives."""
    # One bincount of ``2 * cell + label`` per chunk: the even slots count the
    # negatives of each cell, the odd ones its positives. ``floor(2 K s)`` rounded
    # down to even is ``2 floor(K s)`` (K a power of two: the product is exact).
    counts = np.zeros(2 * AUROC_CELLS, dtype=np.intp)
    scaled = np.empty(min(_AUROC_CHUNK, scores.shape[0]))
    keys = np.empty(scaled.shape[0], dtype=np.intp)
    for start in range(0, scores.shape[0], _AUROC_CHUNK):
        part = scores[start : start + _AUROC_CHUNK]
        key = keys[: part.shape[0]]
        np.copyto(
            key,
            np.multiply(part, 2 * AUROC_CELLS, out=scaled[: part.shape[0]]),
            casting="unsafe",
        )
        key &= ~1
        np.minimum(key, 2 * AUROC_CELLS - 2, out=key)  # s = 1 in the last cell
        key |= labels[start : start + _AUROC_CHUNK]
        counts += np.bincount(key, minlength=2 * AUROC_CELLS)
    return counts[0::2], counts[1::2]


def _binned_auroc(negative, positive):
    """``(auroc, tied)`` from the negatives and positives per cell (in score order):
    the AUROC of the scores rounded down to the cells, and the fraction of
    (positive, negative) pairs in one cell.

    Pairs in one cell count 1/2 here, and between 0 and 1 in the AUROC of the scores
    themselves, so that AUROC is at most ``auroc + tied / 2``.
    """
    # The cells with scores only, which spares passes over the grid for a few
    # hundred scores. Every sum below is of whole or half counts, exact in any order
    # while the pairs number below 2**52 (up to about 10**8 scores): skipping the
    # empty cells (zero terms) changes no digit.
    cells = np.flatnonzero(negative + positive)
    negative = negative[cells].astype(np.float64)
    positive = positive[cells].astype(np.float64)
    pairs = positive.sum() * negative.sum()
    below = np.cumsum(negative) - negative  # negatives in lower cells
    return (
        float(positive @ (below + 0.5 * negative) / pairs),
        float(positive @ negative / pairs),
    )


def below_chance(scores, labels):
    """``(auroc, n1, n0)`` when the scores' AUROC against the labels (0/1) is clearly
    below 1/2, else None (also when a class is absent, or too small to ever tell).

    The test: ``auroc + tied / 2`` (an upper bound on the AUROC, from the counts of
    each class on a grid of ``AUROC_CELLS`` cells of [0, 1]) below ``1/2 - z se`` with
    ``z = 3`` and ``se = sqrt((n1 + n0 - 1) / (n1 n0)) / 2``. That ``se`` is the
    largest standard error the AUROC (a two-sample U-statistic with a kernel in [0,
    1]) can have at any population value ``A``: each of the three variance components
    of the U-statistic is the variance of a quantity in [0, 1] with mean ``A``, at
    most ``A (1 - A) <= 1/4``. The null value ``sqrt((n1 + n0 + 1) / (12 n1 n0))``,
    for scores independent of the labels, is smaller by up to ``sqrt(3)`` than the
    standard error at ``A = 1/2`` of scores that do depend on the labels (positives
    at both ends of the negatives), so it would warn too often there.
    """
    n1 = int(np.count_nonzero(labels))
    if _threshold(n1, labels.shape[0] - n1) is None:
        return None  # (spares the counts)
    return below_chance_of_cells(*_cell_counts(scores, labels))


def _threshold(n1, n0):
    """``1/2 - z se``, or None when no AUROC can be that low (or no pair exists)."""
    if n1 == 0 or n0 == 0:
        return None  # no pair to rank (the caller decides whether to refuse)
    threshold = 0.5 - _BELOW_CHANCE_Z * 0.5 * np.sqrt((n1 + n0 - 1) / (n1 * n0))
    return threshold if threshold > 0.0 else None


def below_chance_of_cells(negative, positive):
    """:func:`below_chance` from the negatives and positives per cell of the grid of
    ``AUROC_CELLS`` cells (as ``_estimate.EstimateCells`` has them)."""
    n1, n0 = int(round(positive.sum())), int(round(negative.sum()))
    threshold = _threshold(n1, n0)
    if threshold is None:
        return None
    auroc, tied = _binned_auroc(negative, positive)
    if not auroc + 0.5 * tied < threshold:
        return None
    return auroc, n1, n0


def below_chance_message(subject, auroc, check):
    """The :class:`BelowChanceWarning` message: ``subject`` ranks the positives below
    chance, ``auroc`` says by how much (from :func:`below_chance`), ``check`` is what
    to check."""
    return (
        f"{subject} below chance: {auroc}, more than {_BELOW_CHANCE_Z:g} standard "
        "errors below 0.5. A bound holds for these scores as given, but scores that "
        f"point away from the labels usually mean a mix-up: check {check}."
    )


def warn_if_below_chance(scores, labels, classes=None, column=None):
    """Warn when the scores' AUROC against the labels is clearly below 1/2
    (:func:`below_chance`).

    ``labels`` are 0/1. ``classes`` (the sorted labels) and ``column`` (the index of
    the positive one) are given when the scores were read from that column of a
    two-column ``predict_proba`` input, for the message. Returns what
    :func:`below_chance` found (None: no warning).
    """
    return _warn_below_chance(below_chance(scores, labels), classes, column)


def warn_if_cells_below_chance(negative, positive, classes=None, column=None):
    """:func:`warn_if_below_chance` from the negatives and positives per cell of the
    grid of ``AUROC_CELLS`` cells."""
    found = below_chance_of_cells(negative, positive)
    return _warn_below_chance(found, classes, column)


def _warn_below_chance(found, classes, column):
    if found is None:
        return None
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
    auroc, n1, n0 = found
    warnings.warn(
        below_chance_message(
            "The scores rank the positive class",
            f"their AUROC against the labels is {auroc:.3f} ({n1} positive and {n0} "
            "negative samples)",
            check,
        ),
        BelowChanceWarning,
        stacklevel=_user_stacklevel(),
    )
    return found
