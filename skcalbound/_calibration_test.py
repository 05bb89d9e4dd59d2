"""``calibration_test``: a test of calibration at a tolerance, from the certified
interval (SPEC section 11)."""

import math
import warnings
from dataclasses import dataclass, field
from numbers import Real

from ._base import interval_at
from ._compat import Interval, StrOptions, validate_params
from ._registry import BY_NAME as _ESTIMATORS
from ._registry import bound_and_params
from ._validation import check_prob_labels
from ._warnings import _user_stacklevel

# Smallest level the p-value search reaches; below it the p-value is reported as this.
_SMALLEST_LEVEL = 1e-300


@dataclass(frozen=True)
class CalibrationTestResult:
    """Result of :func:`calibration_test`.

    Attributes
    ----------
    pvalue : float
        The smallest level at which the test rejects (``nan`` for ``method='tv'``
        and for ``method='monotone'`` with ``cv``).
        Not a valid p-value when ``in_expectation_only``.
    reject : bool
        Whether the test rejects at level ``1 - confidence_level`` (a level that is
        not guaranteed when ``in_expectation_only``).
    lower_bound : float
        Certified lower bound on the calibration error at ``confidence_level``.
    upper_bound : float
        Certified upper bound, holding jointly with ``lower_bound``.
    tolerance : float
        The tolerance :math:`\\tau` of the hypotheses.
    alternative : str
        ``'greater'``, ``'less'`` or ``'two-sided'``.
    confidence_level : float
        ``1 -`` the level of the test.
    method : str
        ``'nw'``, ``'tv'``, ``'lipschitz'`` or ``'monotone'``.
    estimator : object
        The fitted bound estimator (its terms and per-fold results).
    guarantee : str
        The bound's ``guarantee``: ``'high_probability'`` or ``'paper'``.
    in_expectation_only : bool
        True for ``method='nw'`` or ``'lipschitz'`` with ``guarantee='paper'``: the
        published bound holds in expectation over the training labels only, so
        neither the level of the test nor the p-value is guaranteed.
    assumption_rejected : bool
        True when the data reject the assumption the interval rests on: the
        calibration band crosses at ``confidence_level`` (``method='monotone'``), or
        the interval is empty (its lower bound above its upper bound, any method).
        The test then decides nothing (``reject`` False, ``pvalue`` nan) whatever
        the interval says.
    """

    pvalue: float
    reject: bool
    lower_bound: float
    upper_bound: float
    tolerance: float
    alternative: str
    confidence_level: float
    method: str
    estimator: object = field(repr=False, compare=False)
    guarantee: str = "high_probability"
    in_expectation_only: bool = False
    assumption_rejected: bool = False


def _rejects(interval, tolerance, alternative):
    lower, upper = interval
    if alternative == "greater":
        return lower > tolerance
    if alternative == "less":
        return upper < tolerance
    return lower > tolerance or upper < tolerance


def _pvalue(estimator, tolerance, alternative):
    """``inf{alpha : reject at alpha}`` by bisection on ``log(alpha)``.

    The interval at level ``alpha`` only widens as ``alpha`` decreases (every term is
    monotone in ``delta``), so rejection is monotone in ``alpha`` and the set of
    rejecting levels is an interval ``[p, 1)``; the returned value is a rejecting
    level within a relative ``1e-12`` of ``p`` (conservative: never below it).
    """

    def rejects(log_alpha):
        return _rejects(
            interval_at(estimator, math.exp(log_alpha)), tolerance, alternative
        )

    lo, hi = math.log(_SMALLEST_LEVEL), math.log1p(-1e-12)  # alpha in [1e-300, 1)
    if not rejects(hi):
        return 1.0
    if rejects(lo):
        return _SMALLEST_LEVEL
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if rejects(mid):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


@validate_params(
    {
        "y_true": ["array-like"],
        "y_prob": ["array-like"],
        "method": [StrOptions(set(_ESTIMATORS)), *_ESTIMATORS.values()],
        "tolerance": [Interval(Real, 0, 1, closed="both")],
        "alternative": [StrOptions({"greater", "less", "two-sided"})],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "pos_label": [Real, str, "boolean", None],
    },
    prefer_skip_nested_validation=True,
)
def calibration_test(
    y_true,
    y_prob,
    *,
    method="nw",
    tolerance=0.0,
    alternative="greater",
    pos_label=None,
    confidence_level=0.95,
    **params,
):
    """Test the L1 calibration error against a tolerance, with a finite-sample level.

    Fits the certified bound ``method`` and decides from its interval
    ``[lower_bound, upper_bound]``, which contains the calibration error with
    probability at least ``confidence_level`` under the bound's assumption:

    * ``alternative='greater'`` (H1: ``CE > tolerance``, *detect* miscalibration)
      rejects when ``lower_bound > tolerance``;
    * ``alternative='less'`` (H1: ``CE < tolerance``, *certify* calibration within
      ``tolerance``) rejects when ``upper_bound < tolerance``;
    * ``alternative='two-sided'`` (H1: ``CE != tolerance``) rejects when either does.

    The probability of a false rejection is at most ``1 - confidence_level``, for every
    sample size. With ``tolerance=0`` and ``'greater'`` this is a test of perfect
    calibration.

    Read more in the :ref:`User Guide <what_is_certified>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        Predicted probabilities of the positive class, or a ``predict_proba`` output.

    method : {'nw', 'tv', 'lipschitz', 'monotone'} or bound estimator, default='nw'
        The certified bound: :class:`NWCalibrationBound`, :class:`TVCalibrationBound`,
        :class:`LipschitzBucketBound` or :class:`MonotoneCalibrationBound`, by name,
        or an unfitted instance whose parameters (all but ``confidence_level`` and
        ``pos_label``) are used, updated by ``**params``; the instance itself is
        never fitted (``method=TVCalibrationBound(method="denoise")`` gives TV its
        own ``method`` parameter, as in :func:`bounds_by_group`).

    tolerance : float, default=0.0
        The tolerance :math:`\\tau \\in [0, 1]` of the hypotheses, in probability
        units, as the calibration error (which is at most 1: a larger tolerance would
        let ``alternative='less'`` certify any model).

    alternative : {'greater', 'less', 'two-sided'}, default='greater'
        The alternative hypothesis, as in :mod:`scipy.stats`.

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans; any other
        labels (``"churn"``/``"stay"``, {1, 2}) need it. For a two-column
        ``predict_proba`` input, the column of ``pos_label`` among the sorted labels
        is used (column 1 by default), as scikit-learn orders ``classes_``.

    confidence_level : float, default=0.95
        ``1 -`` the level of the test: the probability, at least, that the interval
        holds.

    **params : dict
        Parameters of the bound estimator (its assumption, such as ``h``, ``b1`` and
        ``b2``, ``L`` or ``V``, and ``guarantee``, ``cv``, ``aggregate``,
        ``random_state``, ...).

    Returns
    -------
    result : CalibrationTestResult
        With ``pvalue``, ``reject``, ``lower_bound``, ``upper_bound``, ``tolerance``,
        ``alternative``, ``confidence_level``, ``method``, the fitted ``estimator``,
        ``guarantee`` and ``in_expectation_only`` (see Notes).

    See Also
    --------
    NWCalibrationBound : The bound behind ``method='nw'``.

    Notes
    -----
    For NW and Lipschitz bucketing nothing the surrogate uses depends on the level
    (bandwidth, bucket candidates and weights are fixed; NW's default pilot too), and
    every term of the bound is monotone in it (for NW's default, of both its routes,
    so their minimum is too); so the interval only narrows as the level grows, the
    rejection regions are nested, and the p-value ``inf{alpha : reject at alpha}`` is
    valid. It
    is computed by bisection on the closed-form terms, without refitting. Both TV
    bounds depend on the level beyond their terms (the denoising's
    :math:`\\lambda = t_2 / m`; the cell bound's number of blocks, its default), so
    their intervals at different levels need not be nested: ``method='tv'`` gives
    the decision at ``confidence_level`` and ``pvalue=nan``. For ``method='monotone'``
    the window sums and the gaps between sorted scores do not depend on the level,
    and every budget (the windows' :math:`c`, the DKW :math:`\\varepsilon`) shrinks
    as it grows, so its interval only narrows too: a valid p-value, by bisection on
    the band recomputed from the sorted rows the fit kept. Its cross-fitted variant
    (``cv`` given) takes Maurer–Pontil terms from the variance under a band fitted
    at the level, which need not be monotone in it: ``pvalue=nan`` there. A band
    that crosses at ``confidence_level`` rejects the monotone calibration function
    its interval assumes (its ends can then be far from the truth in either
    direction, the lower above the upper), and so does an empty interval of any
    bound (lower bound above upper bound, e.g. ``L`` or ``V`` too small: the two
    hold together with probability ``confidence_level`` under the assumption): the
    test then does not decide (``reject=False``, ``pvalue=nan``,
    ``assumption_rejected=True``). Under the assumption either is itself a failure
    of the bound's event, so the level of the test is kept.

    With ``guarantee='paper'`` NW and Lipschitz use the published Proposition 2, which
    holds in expectation over the training labels only; the level is then not
    guaranteed (a true null hypothesis can be rejected more often than ``1 -
    confidence_level``), and the p-value is not a valid one: the result says so
    (``in_expectation_only=True``) and a ``UserWarning`` is issued. TV's published
    form holds with probability ``confidence_level``: no caveat.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import calibration_test, perturb_scores
    >>> rng = np.random.default_rng(0)
    >>> s = perturb_scores(rng.uniform(0.2, 0.8, size=50_000), 2**-4, random_state=0)
    >>> y = rng.uniform(size=50_000) < 0.5  # eta = 1/2: CE = E|s - 1/2| is large
    >>> res = calibration_test(y, s, h=2**-4, tolerance=0.05, random_state=0)
    >>> print(res.reject, res.pvalue < 1e-6, round(res.lower_bound, 3))
    True True 0.123
    """
    method, cls, params = bound_and_params(method, params, "calibration_test")
    labels, scores = check_prob_labels(y_true, y_prob, pos_label, "calibration_test")
    estimator = cls(**params, confidence_level=confidence_level).fit(scores, labels)
    expectation = estimator.result_.in_expectation_only
    if expectation:
        warnings.warn(
            f"calibration_test(method={method!r}, guarantee='paper'): the published "
            "bound holds in expectation over the training labels only, not with "
            f"probability {confidence_level:g}, so the test's level is not guaranteed "
            "(a true null hypothesis can be rejected more often than "
            f"{1 - confidence_level:g}) and the p-value is not a valid one. Use "
            "guarantee='high_probability' (the default) for a test with a "
            "finite-sample level.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    interval = (estimator.lower_bound_, estimator.bound_)
    # A crossing band or an empty interval (the fit warned) rests on an assumption
    # the data reject: no decision.
    rejected = estimator._rejection() is not None
    reject = not rejected and _rejects(interval, tolerance, alternative)
    nested = estimator._method().nested_levels
    if rejected or not nested or interval_at(estimator, 1.0 - confidence_level) is None:
        pvalue = math.nan
    else:
        pvalue = _pvalue(estimator, tolerance, alternative)
        if reject:
            # Rejection at 1 - confidence_level means the infimum is at most it.
            pvalue = min(pvalue, 1.0 - confidence_level)
    return CalibrationTestResult(
        pvalue=float(pvalue),
        reject=bool(reject),
        lower_bound=float(interval[0]),
        upper_bound=float(interval[1]),
        tolerance=float(tolerance),
        alternative=alternative,
        confidence_level=float(confidence_level),
        method=method,
        estimator=estimator,
        guarantee=estimator.result_.guarantee,
        in_expectation_only=expectation,
        assumption_rejected=rejected,
    )
