"""``LipschitzBucketBound``: the paper's Lipschitz bucketing baseline (sec. 5, 7)."""

from numbers import Integral, Real

import numpy as np

from ._assumptions import check_perturbation_h, check_smoothness_constants
from ._base import _BaseCalibrationBound
from ._chunks import is_dask_collection
from ._compat import Interval, StrOptions, validate_params
from ._curve import DisplayCurve, curve_grid, smoothing_band_note, surrogate_style
from ._lipschitz_method import DEFAULT_N_BUCKETS, _LipschitzMethod
from ._sech import sech_derivative_bounds
from ._validation import check_prob_labels

_LIPSCHITZ_PARAMETERS = {
    "L": [Interval(Real, 0, None, closed="left"), None],
    "h": [Interval(Real, 0, None, closed="neither"), None],
    "n_buckets": [Interval(Integral, 1, None, closed="left"), "array-like", None],
    "n_shifts": [Interval(Integral, 1, None, closed="left")],
    "noise": [StrOptions({"worst_case", "adaptive"})],
}


def _lipschitz_constant(L, h):
    """``L`` as given or from ``h`` (Corollary 3); exactly one way."""
    check_perturbation_h(h, "L")
    if h is not None:
        if L is not None:
            raise ValueError(
                "Give either L (the Lipschitz constant of the calibration function) or "
                f"h (the perturbation bandwidth, from which L follows), not both; got "
                f"L={L!r}, h={h!r}."
            )
        L = float(sech_derivative_bounds(h)[0])
        check_smoothness_constants(("L",), (L,), h)
        return L
    if L is None:
        raise ValueError(
            "The Lipschitz bucketing bound needs the Lipschitz constant of the "
            "calibration function: give L (bound on |eta(s1) - eta(s2)| / |s1 - s2|) "
            "or h (the bandwidth of the sech perturbation the scores went through); "
            "got L=None, h=None."
        )
    check_smoothness_constants(("L",), (float(L),))
    return float(L)


def _bucket_counts(n_buckets):
    """The candidate bucket counts as a sorted tuple of distinct positive ints."""
    if n_buckets is None:
        return DEFAULT_N_BUCKETS
    if isinstance(n_buckets, Integral) and not isinstance(n_buckets, bool):
        return (int(n_buckets),)
    values = np.asarray(n_buckets)
    if (
        values.ndim != 1
        or values.size == 0
        or values.dtype.kind not in "iu"
        or np.any(values < 1)
    ):
        raise ValueError(
            "n_buckets must be None (the grid 2, 4, ..., 4096), a positive int or a "
            f"non-empty 1-D sequence of positive ints; got {n_buckets!r}."
        )
    return tuple(sorted({int(b) for b in values}))


class LipschitzBucketBound(_BaseCalibrationBound):
    """Certified upper bound on the L1 calibration error by Lipschitz bucketing.

    Assumes the calibration function :math:`\\eta(s) = E[y \\mid s]` is
    ``L``-Lipschitz, which holds for scores perturbed with the sech kernel of bandwidth
    ``h`` (:func:`~skcalbound.perturb_scores`) with ``L = tanh(1/h) / (2h)``. On each
    cross-fitting split, the training scores are cut into equal buckets, the surrogate
    is the mean label of a validation score's bucket, and the Lipschitz form of Lemma 6
    bounds its error; Proposition 2 then bounds :math:`CE = E|s - \\eta(s)|`. Every
    candidate bucketing (bucket count and shift) is evaluated at an equal share of the
    fold's ``1 - confidence_level`` and the smallest bound is kept, so the choice is
    certified by the union bound. This is the paper's baseline: it needs only a first
    derivative bound, and it is looser than :class:`NWCalibrationBound`. With
    ``noise='adaptive'`` the label noise is paid by its variance, as
    :class:`NWCalibrationBound` does by default, with bucket weights.

    Read more in the :ref:`User Guide <lipschitz_bound>`.

    Parameters
    ----------
    L : float, default=None
        Lipschitz constant of the calibration function. Give either ``L`` or ``h``.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    h : float, default=None
        Bandwidth of the sech perturbation the scores went through; implies
        ``L = tanh(1/h) / (2h)``. ``h`` below ``2**-41`` (``L`` above ``2**40``) is
        rejected: the smoothing term would rest on rounding, and the bound is 1 there
        anyway.
        Perturbed scores are continuous, so with ``h`` many exactly tied scores
        are an error (they were not perturbed); ``h`` above 0.5 is rejected.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    n_buckets : int, sequence of int or None, default=None
        Candidate bucket counts. ``None`` is the paper's grid 2, 4, ..., 4096.

    n_shifts : int, default=4
        Shifts per bucket count: bucket edges at ``(j + r / n_shifts) / B`` for
        ``r = 0, ..., n_shifts - 1``.

    noise : {'worst_case', 'adaptive'}, default='worst_case'
        How ``guarantee='high_probability'`` pays for the label noise.
        ``'worst_case'``: at :math:`\\eta(1 - \\eta) = 1/4`, every candidate
        evaluated. ``'adaptive'``: by its variance
        :math:`\\eta(1 - \\eta)` in each bucket, certified through a pilot estimate
        from the validation labels, with a bias relative to
        :math:`\\min(\\eta, 1 - \\eta)` when ``h`` is given (NW's default certificate
        with bucket weights: 2 to 5 times narrower, most on rare events; see the
        :ref:`User Guide <lipschitz_bound>`). It ranks the candidates after the
        first pass over the data and evaluates the first two for each bound, each
        still paid for at the fold's share divided by the number of candidates; it
        costs 2 to 4 times the worst-case form's time. ``'paper'`` computes the
        published form whatever ``noise`` is.

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans; any other
        labels (``"churn"``/``"stay"``, {1, 2}) need it. For a two-column
        ``predict_proba`` input, the column of ``pos_label`` among the sorted labels
        is used (column 1 by default), as scikit-learn orders ``classes_``.

    confidence_level : float, default=0.95
        Probability with which the bound holds, in (0, 1); the paper's
        ``delta`` is ``1 - confidence_level``.

    guarantee : {'high_probability', 'paper'}, default='high_probability'
        What the certificate promises. ``'high_probability'``: :attr:`bound_` and
        :attr:`lower_bound_` hold together with probability at least
        ``confidence_level`` over the data, training labels included (the terms
        of the user guide's "What exactly is certified"). ``'paper'``: Proposition 2
        as published, whose last step holds only in expectation over the training
        labels (it can miss more often than ``1 - confidence_level``); kept to compare
        with the paper's figures.

    cv : int, cross-validation generator or iterable, default=5
        Cross-fitting splits. An int ``k`` draws the folds row by row from one seed
        drawn from ``random_state``: every block of ``k`` consecutive rows gets a
        random permutation of the ``k`` fold ids, as balanced as ``KFold`` and the
        same in memory, for :meth:`fit_chunks` and for Dask input (see
        :ref:`large_data`). Any scikit-learn splitter that looks at neither
        labels nor scores, or iterable of ``(train, validation)`` index pairs chosen
        without them, is accepted (``StratifiedKFold`` and group splitters are
        rejected: the certificate needs splits independent of the data). Each split is
        bounded at ``(1 - confidence_level) / n_splits``, so the aggregate is
        certified.

    aggregate : {'mean', 'min'}, default='mean'
        How fold bounds are combined: their mean (most stable) or their minimum
        (tighter). Both are certified by the union bound over the folds.

    random_state : int, RandomState instance or None, default=None
        Controls the randomness of the fit: the folds when ``cv`` is an int, the
        order of tied scores, the two random halves of the rows behind
        ``estimate_``, and NW's subsample of validation points (``max_validation``).
        Pass an int for reproducible output across calls.

    n_jobs : int, default=None
        Parallel work with joblib: the folds, in processes, or on mergeable
        statistics, blocks of rows, in threads (the blocks and their merge order do
        not depend on ``n_jobs``, so neither does the result). ``None`` means 1 unless
        in a :obj:`joblib.parallel_backend` context; ``-1`` means all processors.

    Attributes
    ----------
    bound_ : float
        Certified upper bound on the calibration error: ``min(aggregate of the fold
        bounds, 1)``.

    lower_bound_ : float
        Certified lower bound on the calibration error, ``max(aggregate of the fold
        lower bounds, 0)`` (mean for ``aggregate='mean'``, maximum for ``'min'``); per
        fold, with ``noise='adaptive'`` the largest lower bound of the evaluated
        candidates (each by its triangle route), else ``validation_mean`` minus every
        other term. It holds together with :attr:`bound_`: both at once with
        probability at least ``confidence_level``, at no extra cost.

    estimate_ : float
        Point estimate of the calibration error, not certified: the same for
        every bound on the same rows and ``random_state`` (a cross-fitted binned
        estimate whose bins are pooled where ``s - eta`` keeps its sign, see the
        :ref:`User Guide <estimate>`). In a rare sample it lies outside
        ``[lower_bound_, bound_]``.

    terms_ : dict of str to float
        Named additive components of the aggregated bound before clipping. With
        ``noise='adaptive'``: the Jensen route,
        ``validation_mean``, ``bias_mean``, ``label_concentration`` and
        ``population_transfer`` (which absorbs the triangle route where that one was
        smaller). With ``noise='worst_case'``: ``validation_mean`` (mean of
        :math:`|\\hat\\eta - s|`), ``bernstein_residual``, ``smoothing_mean`` (mean of
        :math:`\\tilde g`), ``label_concentration`` and ``population_transfer``; with
        ``'paper'``: ``validation_mean``, ``smoothing_mean``, ``bernstein_residual``
        and ``bernstein_smoothing``. With ``aggregate='min'`` they are the terms of the
        smallest fold bound.

    lower_terms_ : dict of str to float
        Only with ``noise='adaptive'``: the table of :attr:`lower_bound_`, aggregated
        over the folds as it is (their mean, or the fold with the largest lower bound
        with ``aggregate='min'``): ``validation_mean``, ``bernstein_residual``,
        ``smoothing_bound`` and ``smoothing_transfer``, so that the unclipped lower
        bound is ``2 * validation_mean`` minus their sum.

    fold_results_ : pandas.DataFrame
        One row per fold: ``n_train``, ``n_validation``, ``delta``, the chosen
        candidate (``n_buckets``, ``shift``), ``n_candidates``, ``n_fallback``
        (validation points whose bucket had no training score), ``sum_c_squared``
        (:math:`C_2` of the chosen candidate, high-probability mode), ``estimate``,
        the terms, the unclipped fold ``bound`` and ``lower_bound`` (with
        ``noise='worst_case'`` the largest candidate lower bound, which need not be
        the chosen candidate's). With ``noise='adaptive'`` also the candidate of the
        lower bound (``lower_n_buckets``, ``lower_shift``), ``n_evaluated``
        (candidates evaluated), ``n_relative`` (validation points on the relative
        branch), the ``route`` that gave the fold's upper bound (``'jensen'`` or
        ``'triangle'``) and the triangle route's ``bernstein_residual``,
        ``smoothing_bound`` and ``smoothing_transfer``.

    candidates_ : pandas.DataFrame
        One row per candidate: ``n_buckets``, ``shift``, its unclipped bound on each
        fold (each at the fold's share of ``1 - confidence_level`` divided by the
        number of candidates; ``inf`` where ``noise='adaptive'`` did not evaluate
        it) and their ``mean_bound``. The refit surrogate (:meth:`predict`) uses
        the candidate evaluated on the most folds with the smallest mean bound there.

    result_ : object
        The same numbers as a frozen dataclass with fields ``bound``,
        ``lower_bound``, ``estimate``, ``terms``, ``folds``, ``aggregate``,
        ``confidence_level``, ``guarantee`` and ``in_expectation_only`` (true with
        ``guarantee='paper'``: the bound then holds in expectation only).

    n_splits_ : int
        Number of cross-fitting splits.

    L_ : float
        Lipschitz constant used (from ``h`` or as given).

    n_buckets_ : int
        Bucket count of the candidate with the smallest ``mean_bound``, used by
        :meth:`predict`.

    shift_ : int
        Its shift.

    surrogate_ : object
        Every candidate bucketing of all data; :meth:`predict` uses
        ``(n_buckets_, shift_)`` and :meth:`score` takes the best candidate on the
        held-out data, at an equal share of ``1 - confidence_level`` each.

    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.

    certificate_ : dict
        The audit record of the fit, JSON-serialisable: method, guarantee,
        assumption and its constants, level, sample size, folds and seed, the interval
        and its terms, and a SHA-256 fingerprint of the scores and labels used
        (``skcalbound verify`` recomputes it; see :ref:`cli`).

    n_features_in_ : int
        Number of columns of ``X`` seen in :meth:`fit` (1 for a vector of scores).

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of ``X``, defined only when ``X`` is a data frame with string
        column names.

    See Also
    --------
    lipschitz_bucket_bound : The same bound as a function of arrays.
    NWCalibrationBound : Tighter bound from first and second derivative bounds.

    Notes
    -----
    For a query :math:`s'` in a bucket :math:`b` with :math:`n_b \\ge 1` training
    points the weights are :math:`1/n_b` on them, :math:`\\hat\\eta(s')` is their mean
    label and

    .. math:: \\tilde g(s') =
              \\min\\Big(\\frac{L}{n_b} \\Big(\\sum_{i \\in b \\setminus c}
              |s' - s_i| + \\sqrt{N_c \\sum_{i \\in c} (s' - s_i)^2}\\Big)
              + \\frac{1}{2\\sqrt{n_b}},\\ 1\\Big),

    where :math:`c` is the query's cell of a grid that tiles every candidate bucketing
    (:math:`2^{14}` cells for the default candidates) and :math:`N_c` the number of
    training points in it: distances to the cell's own points are bounded by
    Cauchy-Schwarz, which needs only per-cell sums, so that the bound runs on chunks
    and Dask without a sort (:ref:`large_data`); it is at least Lemma 6's
    :math:`L \\, \\mathrm{mean}_{i \\in b} |s' - s_i|`, so the certificate holds, and
    larger by a few parts in a million in practice. A query whose bucket has no training
    score uses the bucket of the nearest training score (at the midpoint, the lower
    one), with its actual distances. The fold bound
    has the five terms of :class:`NWCalibrationBound` (its Notes), with :math:`C_2 =
    \\sum_b (n'_b / n)^2 / n_b` (:math:`n'_b` the evaluated validation points that
    bucket :math:`b` serves) and the candidate's share of the fold's
    :math:`\\delta` split in three; the lower bound is the largest candidate lower
    bound. Every sum is exact for these weights and this :math:`\\tilde g`.

    With ``guarantee='paper'`` the fold bound is Proposition 2 as published, whose
    last step holds in expectation over the training labels only.

    References
    ----------
    .. [1] Ciosek et al., "Measuring Uncertainty Calibration", ICLR 2026,
       arXiv:2512.13872, sections 5 and 7 and Appendix E.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import LipschitzBucketBound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < s ** 2  # miscalibrated: CE = 1/6
    >>> est = LipschitzBucketBound(L=2.0, random_state=0).fit(s, y)
    >>> print(f"CE = {1 / 6:.3f} in [{est.lower_bound_:.3f}, {est.bound_:.3f}]")
    CE = 0.167 in [0.074, 0.259]
    """

    name = "lipschitz"
    label = "Lipschitz bucketing"
    smoothness_params = ("h", "L")
    assumption_params = ("L", "h")
    assumption_text = "E[y|s] is L-Lipschitz, L = {L_:.6g}"
    paper_in_expectation = True

    _parameter_constraints = {
        **_BaseCalibrationBound._parameter_constraints,
        **_LIPSCHITZ_PARAMETERS,
    }

    def __init__(
        self,
        *,
        L=None,
        h=None,
        n_buckets=None,
        n_shifts=4,
        noise="worst_case",
        pos_label=None,
        confidence_level=0.95,
        guarantee="high_probability",
        cv=5,
        aggregate="mean",
        random_state=None,
        n_jobs=None,
    ):
        self.L = L
        self.h = h
        self.n_buckets = n_buckets
        self.n_shifts = n_shifts
        self.noise = noise
        self.pos_label = pos_label
        self.confidence_level = confidence_level
        self.guarantee = guarantee
        self.cv = cv
        self.aggregate = aggregate
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _vacuous_advice(self):
        return (
            f"{super()._vacuous_advice()} On perturbed scores, NWCalibrationBound "
            "with the same h is tighter than bucketing: it also uses the second "
            "derivative."
        )

    def _method(self):
        return _LipschitzMethod(
            L=_lipschitz_constant(self.L, self.h),
            n_buckets=_bucket_counts(self.n_buckets),
            n_shifts=int(self.n_shifts),
            guarantee=self.guarantee,
            noise=self.noise,
            h=None if self.h is None else float(self.h),
        )

    def _display_curve(self, low, high, n_grid=None):
        """What the display draws: ``predict`` and ``min(g, 1)``, ``g = L mean_b |s_i
        - s| + 1 / (2 sqrt(n_b))`` over the score's bucket (both modes)."""
        grid = curve_grid(low, high, n_grid)
        _, g, _ = self.surrogate_.residuals_and_smoothing(self.L_, grid)
        return DisplayCurve(grid, self.predict(grid), band=np.minimum(g, 1.0))

    @classmethod
    def _display_style(cls, guarantee, estimator=None):
        note = smoothing_band_note("bucket average's", "the Lipschitz constant")
        return surrogate_style(cls.label, note)


@validate_params(
    {
        "y_true": ["array-like"],
        "y_prob": ["array-like"],
        **LipschitzBucketBound._parameter_constraints,
    },
    prefer_skip_nested_validation=True,
)
def lipschitz_bucket_bound(
    y_true,
    y_prob,
    *,
    L=None,
    h=None,
    n_buckets=None,
    n_shifts=4,
    noise="worst_case",
    pos_label=None,
    confidence_level=0.95,
    guarantee="high_probability",
    cv=5,
    aggregate="mean",
    random_state=None,
    n_jobs=None,
):
    """Certified upper bound on the L1 calibration error by Lipschitz bucketing.

    The functional form of :class:`LipschitzBucketBound`: returns the same number as
    ``LipschitzBucketBound(...).fit(y_prob, y_true).bound_``.

    Read more in the :ref:`User Guide <lipschitz_bound>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        Predicted probabilities of the positive class, or a ``predict_proba`` output.

    L : float, default=None
        Lipschitz constant of the calibration function. Give either ``L`` or ``h``.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    h : float, default=None
        Bandwidth of the sech perturbation the scores went through; implies
        ``L = tanh(1/h) / (2h)``. ``h`` below ``2**-41`` (``L`` above ``2**40``) is
        rejected: the smoothing term would rest on rounding, and the bound is 1 there
        anyway.
        Perturbed scores are continuous, so with ``h`` many exactly tied scores
        are an error (they were not perturbed); ``h`` above 0.5 is rejected.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    n_buckets : int, sequence of int or None, default=None
        Candidate bucket counts. ``None`` is the paper's grid 2, 4, ..., 4096.

    n_shifts : int, default=4
        Shifts per bucket count: bucket edges at ``(j + r / n_shifts) / B`` for
        ``r = 0, ..., n_shifts - 1``.

    noise : {'worst_case', 'adaptive'}, default='worst_case'
        ``'worst_case'``: the label noise at its worst; ``'adaptive'``: by its
        variance, with bucket weights (narrower, slower; see
        :class:`LipschitzBucketBound`).

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans; any other
        labels (``"churn"``/``"stay"``, {1, 2}) need it. For a two-column
        ``predict_proba`` input, the column of ``pos_label`` among the sorted labels
        is used (column 1 by default), as scikit-learn orders ``classes_``.

    confidence_level : float, default=0.95
        Probability with which the bound holds, in (0, 1); the paper's
        ``delta`` is ``1 - confidence_level``.

    guarantee : {'high_probability', 'paper'}, default='high_probability'
        What the certificate promises. ``'high_probability'``: :attr:`bound_` and
        :attr:`lower_bound_` hold together with probability at least
        ``confidence_level`` over the data, training labels included (the terms
        of the user guide's "What exactly is certified"). ``'paper'``: Proposition 2
        as published, whose last step holds only in expectation over the training
        labels (it can miss more often than ``1 - confidence_level``); kept to compare
        with the paper's figures.

    cv : int, cross-validation generator or iterable, default=5
        Cross-fitting splits. An int ``k`` draws the folds row by row from one seed
        drawn from ``random_state``: every block of ``k`` consecutive rows gets a
        random permutation of the ``k`` fold ids, as balanced as ``KFold`` and the
        same in memory, for :meth:`fit_chunks` and for Dask input (see
        :ref:`large_data`). Any scikit-learn splitter that looks at neither
        labels nor scores, or iterable of ``(train, validation)`` index pairs chosen
        without them, is accepted (``StratifiedKFold`` and group splitters are
        rejected: the certificate needs splits independent of the data). Each split is
        bounded at ``(1 - confidence_level) / n_splits``, so the aggregate is
        certified.

    aggregate : {'mean', 'min'}, default='mean'
        How fold bounds are combined: their mean (most stable) or their minimum
        (tighter). Both are certified by the union bound over the folds.

    random_state : int, RandomState instance or None, default=None
        Controls the randomness of the fit: the folds when ``cv`` is an int, the
        order of tied scores, the two random halves of the rows behind
        ``estimate_``, and NW's subsample of validation points (``max_validation``).
        Pass an int for reproducible output across calls.

    n_jobs : int, default=None
        Parallel work with joblib: the folds, in processes, or on mergeable
        statistics, blocks of rows, in threads (the blocks and their merge order do
        not depend on ``n_jobs``, so neither does the result). ``None`` means 1 unless
        in a :obj:`joblib.parallel_backend` context; ``-1`` means all processors.

    Returns
    -------
    bound : float
        Upper bound on the calibration error that holds with probability at least
        ``confidence_level``.

    See Also
    --------
    LipschitzBucketBound : The estimator, with the terms, the chosen buckets and
        every candidate's bound.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import lipschitz_bucket_bound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < s  # perfectly calibrated: CE = 0
    >>> print(round(lipschitz_bucket_bound(y, s, L=1.0, random_state=0), 3))
    0.092
    """
    _lipschitz_constant(L, h)  # hyperparameters before the data
    _bucket_counts(n_buckets)
    dask = is_dask_collection(y_true) or is_dask_collection(y_prob)
    if dask:
        labels, scores = y_true, y_prob  # validated block by block, with pos_label
    else:
        labels, scores = check_prob_labels(
            y_true, y_prob, pos_label, "lipschitz_bucket_bound"
        )
    estimator = LipschitzBucketBound(
        L=L,
        h=h,
        pos_label=pos_label if dask else None,
        n_buckets=n_buckets,
        n_shifts=n_shifts,
        noise=noise,
        confidence_level=confidence_level,
        guarantee=guarantee,
        cv=cv,
        aggregate=aggregate,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    return estimator.fit(scores, labels).bound_
