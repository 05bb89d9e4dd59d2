"""``bounds_by_group``: one certified interval per segment, all holding together
(a union bound over the certificates issued)."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
import pandas as pd

from ._base import BAND_CROSSES
from ._binned_ece import binned_ece
from ._compat import Interval, StrOptions, validate_params
from ._guarantee import guarantee_of
from ._registry import BY_NAME as _ESTIMATORS
from ._registry import bound_and_params
from ._validation import check_prob_labels
from ._warnings import (
    BelowChanceWarning,
    MonotonicityWarning,
    VacuousBoundWarning,
    _user_stacklevel,
    below_chance,
    below_chance_message,
    warn_if_below_chance,
)

#: Group label of the whole-population row added by ``include_overall=True``.
OVERALL = "(all)"
#: Fewest training points every fold must have for every bound (the TV surrogate's
#: requirement, the strictest); a segment's eligibility uses it for all methods, so
#: that it depends on the segment's size only.
_MIN_TRAIN = 2
COLUMNS = [
    "group",
    "n",
    "n_positive",
    "lower_bound",
    "upper_bound",
    "estimate",
    "binned_ece",
    "confidence_level",
    "status",
    "vacuous",
]


def _group_codes(groups, n_samples):
    """``(codes, uniques)`` of the groups, in sorted order when the values sort."""
    if np.ndim(groups) != 1:
        raise ValueError(
            "groups must be one-dimensional (one group per sample); got an array of "
            f"shape {np.shape(groups)}."
        )
    if len(groups) != n_samples:
        raise ValueError(
            f"groups has {len(groups)} entries but y_true and y_prob have "
            f"{n_samples}; pass one group per sample."
        )
    if isinstance(groups, pd.Series):
        groups = groups.array  # by position, whatever the index
    elif not isinstance(
        groups, (np.ndarray, pd.Index, pd.api.extensions.ExtensionArray)
    ):
        groups = pd.Series(list(groups)).array  # a list: dtype inferred as pandas does
    try:
        codes, uniques = pd.factorize(groups, sort=True)
    except TypeError:  # values of several types that do not sort together
        codes, uniques = pd.factorize(groups, sort=False)
    missing = codes < 0
    if missing.any():
        raise ValueError(
            f"groups contains {int(missing.sum())} missing value(s) (NaN or None), the "
            f"first at position {int(np.flatnonzero(missing)[0])}. Give them a segment "
            "of their own on purpose (e.g. groups.fillna('missing')) or drop those "
            "samples."
        )
    return codes, list(uniques)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _first_ten(items):
    """``'a, b, c'``: the first ten items, then ``', ...'`` if there are more."""
    items = [str(x) for x in items]
    return ", ".join(items[:10]) + (", ..." if len(items) > 10 else "")


def _warn_below_chance(scores, labels, below):
    """One :class:`BelowChanceWarning` for the segments that rank the positive class
    below chance (``below``: group, AUROC): about ``pos_label`` when every row
    together does, else naming the segments, where ``pos_label`` is not the cause."""
    if warn_if_below_chance(scores, labels) is not None or not below:
        return
    one = len(below) == 1
    warnings.warn(
        below_chance_message(
            f"The scores of segment{'' if one else 's'} "
            f"{_first_ten(g for g, _ in below)} rank the positive class",
            f"{'its AUROC' if one else 'their AUROCs'} against the labels "
            f"{'is' if one else 'are'} {_first_ten(f'{a:.3f}' for _, a in below)}",
            f"how the scores and labels of {'that' if one else 'those'} "
            f"segment{'' if one else 's'} were produced or joined: all rows together "
            "rank above chance, so pos_label is not the cause, but a mix-up confined "
            f"to {'it' if one else 'them'} would be (the other class's scores, labels "
            "encoded differently, rows joined to the wrong scores)",
        ),
        BelowChanceWarning,
        stacklevel=_user_stacklevel(),
    )


def _n_splits(cv):
    if cv is None:  # one fit on all rows (MonotoneCalibrationBound's default)
        return None
    if isinstance(cv, Integral):
        return int(cv)
    if hasattr(cv, "split") and hasattr(cv, "get_n_splits"):
        return int(cv.get_n_splits())
    raise ValueError(
        "bounds_by_group needs cv to be an int or a scikit-learn splitter (applied to "
        "each segment); explicit (train, validation) index pairs refer to the whole "
        f"sample and cannot be used per segment. Got {type(cv).__name__}."
    )


def _too_small(n, n_splits):
    """Why a segment of ``n`` samples cannot be split, or None. Depends on ``n`` only.

    K-fold training parts have ``n - ceil(n / K)`` points at least. Without folds
    (``n_splits`` None) a segment needs two samples (one of each class).
    """
    if n_splits is None:
        return f"too few samples: {n}" if n < 2 else None
    if n < max(n_splits, _MIN_TRAIN + 1) or n - math.ceil(n / n_splits) < _MIN_TRAIN:
        return f"too few samples for cv={n_splits}: {n}"
    return None


#: The status of a segment whose calibration band crosses (``method='monotone'``).
REJECTED = "assumption rejected (the band crosses)"
#: The status of a segment whose interval is empty (lower bound above upper bound).
EMPTY = "assumption rejected (empty interval)"


def _is_empty_interval_warning(w):
    """The fit's own warning of an empty interval (:func:`bounds_by_group` says it
    once, naming the segments)."""
    return issubclass(w.category, UserWarning) and "interval is empty" in str(w.message)


def _certify(cls, params, level, scores, labels):
    """One segment's row fields from a fit at ``level``; vacuity, ranking below
    chance and a crossing band caught, not shown (:func:`bounds_by_group` says each
    once)."""
    summarised = (VacuousBoundWarning, BelowChanceWarning, MonotonicityWarning)
    with warnings.catch_warnings(record=True) as caught:
        for category in summarised:
            warnings.simplefilter("always", category)
        estimator = cls(**params, confidence_level=level).fit(scores, labels)
    for w in caught:  # anything else is the user's to see
        if not (issubclass(w.category, summarised) or _is_empty_interval_warning(w)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    status = "certified"
    why = estimator._rejection()
    if why is not None:  # the data reject the assumption the interval rests on
        status = REJECTED if why == BAND_CROSSES else EMPTY
    elif estimator.result_.in_expectation_only:
        status = "in expectation only"  # the paper's NW and Lipschitz forms
    return {
        "lower_bound": float(estimator.lower_bound_),
        "upper_bound": float(estimator.bound_),
        "estimate": float(estimator.estimate_),
        "status": status,
        "vacuous": bool(estimator.bound_ > 0.5),
    }


@validate_params(
    {
        "y_true": ["array-like"],
        "y_prob": ["array-like"],
        "groups": ["array-like"],
        "method": [StrOptions(set(_ESTIMATORS)), *_ESTIMATORS.values()],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "include_overall": ["boolean"],
        "pos_label": [Real, str, "boolean", None],
        "n_bins": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def bounds_by_group(
    y_true,
    y_prob,
    groups,
    *,
    method="nw",
    confidence_level=0.95,
    include_overall=False,
    pos_label=None,
    n_bins=15,
    **params,
):
    """Certified calibration-error intervals per segment, holding simultaneously.

    Fits the certified bound ``method`` on each segment (the samples sharing a value
    of ``groups``) and returns one interval ``[lower_bound, upper_bound]`` per
    segment. Each interval is computed at the level ``1 - (1 - confidence_level) / G``,
    where ``G`` is the number of certificates issued; by the union bound, **all**
    intervals contain their segment's calibration error at once with probability at
    least ``confidence_level``, so the worst segment can be read off the table without
    losing the guarantee.

    Read more in the :ref:`User Guide <multiclass_and_segments>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        Predicted probabilities of the positive class, or a ``predict_proba`` output.

    groups : array-like of shape (n_samples,)
        The segment of each sample (a list, array, :class:`pandas.Series` or
        :class:`pandas.Categorical` of strings, numbers, ...), by position. Missing
        values (NaN, None) are an error: give them a segment of their own on purpose
        (``groups.fillna("missing")``) or drop those samples.

    method : {'nw', 'tv', 'lipschitz', 'monotone'} or bound estimator, default='nw'
        The certified bound: :class:`NWCalibrationBound`, :class:`TVCalibrationBound`,
        :class:`LipschitzBucketBound` or :class:`MonotoneCalibrationBound`, by name,
        or an unfitted instance whose
        parameters (all but ``confidence_level`` and ``pos_label``) are used, updated
        by ``**params``; the instance itself is never fitted. An instance is how to
        give :class:`TVCalibrationBound` its own ``method`` parameter
        (``method=TVCalibrationBound(method="cells")``).

    confidence_level : float, default=0.95
        Probability, at least, that all the intervals hold together. Each interval is
        computed at ``1 - (1 - confidence_level) / G``.

    include_overall : bool, default=False
        Whether to add a row for the whole population, with group ``'(all)'``, placed
        last. It is one more certificate, counted in ``G``.

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans; any other
        labels (``"churn"``/``"stay"``, {1, 2}) need it. For a two-column
        ``predict_proba`` input, the column of ``pos_label`` among the sorted labels
        is used (column 1 by default), as scikit-learn orders ``classes_``.

    n_bins : int, default=15
        Bins of the binned ECE shown next to each interval (a heuristic, not a bound).

    **params : dict
        Parameters of the bound estimator, used for every segment (its assumption,
        such as ``h``, ``b1`` and ``b2``, ``L`` or ``V``, and ``guarantee``, ``cv``,
        ``aggregate``, ``random_state``, ...). ``cv`` must be an int or a splitter
        (or ``None`` for ``'monotone'``, its default: one band per segment).

    Returns
    -------
    table : pandas.DataFrame
        One row per segment, worst first (segments whose calibration band crosses,
        then by ``upper_bound``, descending; rows without a bound after those with
        one, the ``'(all)'`` row last), with columns
        ``group``, ``n``, ``n_positive``, ``lower_bound``, ``upper_bound``,
        ``estimate`` (the bound's ``estimate_``, not certified), ``binned_ece``,
        ``confidence_level`` (the per-certificate level), ``status``
        (``'certified'``; ``'in expectation only'`` for the NW and Lipschitz bounds
        with ``guarantee='paper'``, which hold in expectation over the training
        labels only; ``'assumption rejected (the band crosses)'`` for a calibration
        band that crosses, whose interval assumes the monotone calibration function
        the data reject; ``'assumption rejected (empty interval)'`` for an interval
        whose lower bound is above its upper bound, which the assumption makes a
        rare event; or why there is no bound) and ``vacuous`` (the upper bound is
        above 0.5). ``table.attrs`` holds ``note`` (the simultaneity statement),
        ``n_certificates`` (``G``), ``confidence_level`` (simultaneous),
        ``per_certificate_level``, ``method``, ``guarantee`` and
        ``in_expectation_only``.

    See Also
    --------
    calibration_test : A test of calibration at a tolerance, for one population.
    NWCalibrationBound : The bound behind ``method='nw'``.

    Notes
    -----
    **Which segments get a certificate.** A segment too small to be split into the
    folds of ``cv`` (fewer than ``cv`` samples, or fewer than 2 training points in a
    fold) gets a row with NaN bounds and the status ``'too few samples for cv=K: n'``;
    it is not counted in ``G``. A bound without folds (TV's cell bound, the monotone
    band with ``cv=None``) needs 2 samples (``'too few samples: n'``). This decision
    depends on the segment sizes only, never on the labels, so the union bound holds
    conditionally on the segments. A segment
    whose labels are all of one class has no bound (the estimators need both
    classes): its row says ``'single class'``, but it *is* counted in ``G``, because
    whether it has one class depends on the labels, and dropping it from ``G`` would
    let the labels choose the level of the others. Counting it is the safe choice; it
    costs little, as ``G`` enters the level only through ``log G``.

    **Vacuous bounds.** The :class:`VacuousBoundWarning` each fit emits when its upper
    bound is above 0.5 is collected into the ``vacuous`` column (and a single warning
    naming those segments) rather than raised once per segment; so are a crossing
    band's :class:`MonotonicityWarning` and an empty interval's warning (the
    ``status`` column says each) and the
    :class:`BelowChanceWarning` (one warning: about ``pos_label`` when all rows
    together rank the positive class below chance, else naming the segments that do).

    Every interval holds under the bound's assumption, within its segment. Picking
    the worst segment from this table is covered by the union bound; comparing
    several tables (methods, groupings) computed on the same data is not.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import perturb_scores
    >>> from skcalbound import bounds_by_group
    >>> rng = np.random.default_rng(0)
    >>> n = 40_000
    >>> region = rng.choice(["north", "south"], size=n)
    >>> s = perturb_scores(rng.uniform(0.2, 0.8, size=n), 2**-4, random_state=0)
    >>> eta = np.where(region == "north", s, 0.5)  # south: miscalibrated
    >>> y = rng.uniform(size=n) < eta
    >>> table = bounds_by_group(y, s, region, h=2**-4, random_state=0)
    >>> print(table[["group", "n", "lower_bound", "upper_bound"]].round(3))
       group      n  lower_bound  upper_bound
    0  south  19969        0.099        0.213
    1  north  20031        0.000        0.047
    >>> table.attrs["n_certificates"], round(table.attrs["per_certificate_level"], 3)
    (2, 0.975)
    """
    method, cls, params = bound_and_params(method, params, "bounds_by_group")
    labels, scores = check_prob_labels(y_true, y_prob, pos_label, "bounds_by_group")
    codes, uniques = _group_codes(groups, scores.shape[0])
    if include_overall and OVERALL in uniques:
        raise ValueError(
            f"groups contains the value {OVERALL!r}, which names the whole-population "
            "row of include_overall=True; rename that segment."
        )
    estimator = cls(**params)
    n_splits = _n_splits(estimator.cv)  # also refuses a cv that cannot be per segment
    if not estimator._has_folds():
        n_splits = None

    segments = [(_plain(g), np.flatnonzero(codes == k)) for k, g in enumerate(uniques)]
    if include_overall:
        segments.append((OVERALL, np.arange(scores.shape[0])))
    # Label-free: which segments get a certificate depends on their sizes only.
    reasons = [_too_small(index.size, n_splits) for _, index in segments]
    n_certificates = sum(reason is None for reason in reasons)
    level = 1.0 - (1.0 - confidence_level) / max(n_certificates, 1)

    rows, below = [], []
    ranked = labels.astype(np.uint8)  # the AUROC check's labels
    for (group, index), reason in zip(segments, reasons):
        seg_scores, seg_labels = scores[index], labels[index]
        n_positive = int(seg_labels.sum())
        single = n_positive in (0, index.size)
        row = {
            "group": group,
            "n": int(index.size),
            "n_positive": n_positive,
            "lower_bound": np.nan,
            "upper_bound": np.nan,
            "estimate": np.nan,
            "binned_ece": np.nan,
            "confidence_level": np.nan if reason else level,
            "status": reason,
            "vacuous": False,
        }
        # Defined for one class too (then the mean of |s - y| by bin).
        row["binned_ece"] = binned_ece(seg_labels, seg_scores, n_bins=n_bins)
        if not single:
            found = below_chance(seg_scores, ranked[index])
            if found is not None and group is not OVERALL:
                below.append((group, found[0]))
        if reason is None:
            if single:
                row["status"] = f"single class (all labels {int(n_positive > 0)})"
            else:
                row.update(_certify(cls, params, level, seg_scores, seg_labels))
        rows.append(row)

    body = [r for r in rows if r["group"] != OVERALL or not include_overall]
    # Stable sort: segments whose band crosses or whose interval is empty first
    # (their upper bound rests on a rejected assumption), then worst upper bound
    # first, rows without a bound after, in group order.
    body.sort(
        key=lambda r: (
            r["status"] not in (REJECTED, EMPTY),
            math.inf if math.isnan(r["upper_bound"]) else -r["upper_bound"],
        )
    )
    table = pd.DataFrame(body + rows[len(body) :], columns=COLUMNS)
    # MonotoneCalibrationBound has no guarantee parameter: it is certified.
    guarantee = params.get(
        "guarantee", cls().get_params().get("guarantee", "high_probability")
    )
    expectation = guarantee_of(guarantee).in_expectation_only(cls)
    _warn_below_chance(scores, ranked, below)
    # One warning per kind of rejected assumption, naming the segments.
    for status, category, why in (
        (
            REJECTED,
            MonotonicityWarning,
            "The calibration band crosses (L(s) > U(s) at some score) for {}: the "
            "data reject a non-decreasing calibration function there, and their "
            "intervals assume one (status 'assumption rejected'). Use method='tv' "
            "instead: it assumes bounded variation, not monotonicity.",
        ),
        (
            EMPTY,
            UserWarning,
            "The interval is empty (lower bound above upper bound) for {}: both hold "
            "together with probability at least their confidence level under the "
            "assumption, so either a rare event occurred or the assumption on the "
            "calibration function (V, h, b1, b2 or L) does not hold there (status "
            "'assumption rejected (empty interval)'). A larger constant, or a bound "
            "with another assumption, is needed.",
        ),
    ):
        found = table.loc[table["status"] == status, "group"].tolist()
        if found:
            segments = f"{len(found)} segment(s) ({_first_ten(found)})"
            warnings.warn(why.format(segments), category, stacklevel=_user_stacklevel())
    vacuous = table.loc[table["vacuous"], "group"].tolist()
    if vacuous:
        which = (
            "upper bound (in expectation only)"
            if expectation
            else "certified upper bound"
        )
        warnings.warn(
            f"The {which} is above 0.5 for {len(vacuous)} segment(s) "
            f"({_first_ten(vacuous)})"
            ": it says little about their calibration error; more labelled samples per "
            "segment shrink it.",
            VacuousBoundWarning,
            stacklevel=_user_stacklevel(),
        )
    per = f"{level:.6g}"
    caveat = (
        " guarantee='paper': each interval holds in expectation over the training "
        "labels only, not with that probability."
        if expectation
        else ""
    )
    table.attrs.update(
        method=method,
        guarantee=guarantee,
        in_expectation_only=expectation,
        confidence_level=float(confidence_level),
        n_certificates=int(n_certificates),
        per_certificate_level=float(level),
        note=(
            f"All {n_certificates} intervals hold simultaneously with probability at "
            f"least {confidence_level:g}: each is computed at level {per} = 1 - (1 - "
            f"{confidence_level:g})/{n_certificates} (union bound over the "
            f"{n_certificates} certificates issued; segments too small for cv get no "
            "certificate, single-class segments are counted but have no bound)."
            + caveat
        ),
    )
    return table
