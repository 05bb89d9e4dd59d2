"""``NWCalibrationBound``: certified bound under bounded derivatives (paper, sec. 5)."""

from dataclasses import dataclass, replace
from numbers import Integral, Real

import numpy as np

from ._assumptions import check_perturbation_h, check_smoothness_constants
from ._base import FoldTerms, Passes, _BaseCalibrationBound, _BoundMethod
from ._chunks import is_dask_collection
from ._compat import Interval, StrOptions, validate_params
from ._curve import DisplayCurve, curve_grid, smoothing_band_note, surrogate_style
from ._guarantee import guarantee_of
from ._passes import run
from ._sech import sech_derivative_bounds
from ._splitting import SUBSAMPLE_STREAM, GroupDesign, row_keys
from ._surrogates.nw import AdaptiveStatistics, NWGrid
from ._terms import adaptive_terms, high_probability_terms, nw_bound_terms
from ._validation import check_prob_labels

# SPEC 13's triangle route after validation_mean: columns of fold_results_.
_TRIANGLE = ("bernstein_residual", "smoothing_bound", "smoothing_transfer")


@dataclass(frozen=True)
class _NWMethod(_BoundMethod):
    """The grid NW smoother (``grid``) with the certificate of SPEC sections 10-12
    (``grid.noise="adaptive"``: section 13), or, with the published Lemma 6,
    Proposition 2 as published (``delta`` split into two)."""

    grid: NWGrid
    random_state: object  # of the validation subsample, when there is one
    min_train = NWGrid.min_train
    # Both certificates run on mergeable statistics: no sort, chunks and Dask with
    # the in-memory numbers.
    mergeable = True

    def fold_terms(self, statistics, delta):
        """The fold's terms from its ``statistics`` (``SplitStatistics``) at any
        ``delta`` (nothing else depends on ``delta``: this is what makes the p-value
        a bisection)."""
        s = statistics
        if isinstance(s, AdaptiveStatistics):
            out = adaptive_terms(s, delta)
            triangle = {k: v for k, v in out["lower_terms"].items() if k in _TRIANGLE}
            return FoldTerms(
                out["upper_terms"],
                info={"route": out["route"], **triangle},
                lower=out["lower"],
                extra={"lower_terms": out["lower_terms"]},
                upper=out["upper"],
            )
        if self.grid.published:
            terms = nw_bound_terms(s.n, s.residual_moments, s.smoothing_moments, delta)
        else:
            terms = high_probability_terms(
                s.n, s.residual_moments, s.smoothing_mean, s.sum_c_squared, delta
            )
        return FoldTerms(terms)

    @staticmethod
    def _split(smoother, statistics):
        """``(statistics, info)`` of one split."""
        info = {
            "n_train": int(smoother.n_train),
            "n_validation": statistics.n,
            "bandwidth": smoother.bandwidth,
            "n_bins": smoother.n_bins,
            "n_fallback": statistics.n_fallback,
        }
        if isinstance(statistics, AdaptiveStatistics):
            info["n_relative"] = int(statistics.n_relative)
        if statistics.sum_c_squared is not None:
            info["sum_c_squared"] = float(statistics.sum_c_squared)
        return statistics, info

    def passes(self, source, design, *, delta, key_seed, check=None, check_counts=None):
        grid = replace(self.grid, n_samples=source.n_samples)
        fit = run(
            grid,
            source,
            design,
            key_seed=key_seed,
            check=check,
            check_counts=check_counts,
        )
        splits = tuple(map(self._split, fit.smoothers, fit.statistics))
        return Passes(splits, fit.n_positive, fit.refit)

    def surrogate(self, passes, folds, source, delta):
        """The smoother on all rows: ridden on the passes of a single design; after
        several explicit splits, one more design with every row."""
        if len(passes) == 1:
            return passes[0].refit
        n = source.n_samples
        grid = replace(self.grid, n_samples=n)
        h = grid.refit_rule(
            n, [(f.info["bandwidth"], f.info["n_train"]) for f in folds]
        )
        everyone = GroupDesign(1, (), ids=np.zeros(n, dtype=np.intp))
        return run(grid.refit_only(h), source, everyone).refit

    def fitted_attributes(self, surrogate, folds, key_seed):
        attributes = {
            "b1_": self.grid.b1,
            "b2_": self.grid.b2,
            "bandwidth_": surrogate.bandwidth,
        }
        if self.grid.max_validation is not None:
            # score() subsamples its held-out points with row keys from this seed (the
            # fit's one draw from random_state), so that scoring is reproducible.
            attributes["_score_seed"] = int(key_seed)
        return attributes

    def held_out(self, surrogate, scores, labels=None):
        """The fixed-split statistics of the refit smoother on held-out ``scores``:
        pass 2 alone, every row in the one validation group (SPEC 13: the pilot
        from their ``labels``)."""
        n = scores.shape[0]
        keys = None
        if self.grid.validation_cap(n) is not None:
            keys = row_keys(self.random_state, 0, n, SUBSAMPLE_STREAM)
        statistics = self.grid.held_out(surrogate, scores, keys, labels)
        return self._split(surrogate, statistics)


_NW_PARAMETERS = {
    "h": [Interval(Real, 0, None, closed="neither"), None],
    "b1": [Interval(Real, 0, None, closed="left"), None],
    "b2": [Interval(Real, 0, None, closed="left"), None],
    "bandwidth": [
        StrOptions({"auto", "plugin"}),
        Interval(Real, 0, None, closed="neither"),
    ],
    "tempering": [Interval(Real, 0, None, closed="left")],
    "noise": [StrOptions({"worst_case", "adaptive"})],
    "max_validation": [
        StrOptions({"auto"}),
        Interval(Integral, 1, None, closed="left"),
        None,
    ],
}


def _derivative_bounds(h, b1, b2, guarantee="high_probability"):
    """``(b1, b2)`` from ``h`` or as given; exactly one way. From ``h``, ``b2`` is the
    sharp ``tanh(1/h)**2 / (2 h**2)`` (SPEC section 12), or Corollary 4's three times
    larger value with ``guarantee="paper"``."""
    check_perturbation_h(h, "b1 and b2")
    if h is not None:
        if b1 is not None or b2 is not None:
            raise ValueError(
                "Give either h (the perturbation bandwidth, from which b1 and b2 "
                f"follow) or both b1 and b2, not both; got h={h!r}, "
                f"b1={b1!r}, b2={b2!r}."
            )
        b1, b2 = (float(b) for b in sech_derivative_bounds(h, guarantee=guarantee))
        check_smoothness_constants(("b1", "b2"), (b1, b2), h)
        return b1, b2
    if b1 is None or b2 is None:
        raise ValueError(
            "The NW bound needs the derivative bounds of the calibration "
            "function: give h (the bandwidth of the sech perturbation the scores went "
            "through) or both b1 (bound on |eta'|) and b2 (bound on |eta''|); got "
            f"h=None, b1={b1!r}, b2={b2!r}."
        )
    check_smoothness_constants(("b1", "b2"), (float(b1), float(b2)))
    return float(b1), float(b2)


class NWCalibrationBound(_BaseCalibrationBound):
    """Certified upper bound on the L1 calibration error under bounded derivatives.

    Assumes the calibration function :math:`\\eta(s) = E[y \\mid s]` has
    :math:`|\\eta'| \\le b_1` and :math:`|\\eta''| \\le b_2`. This holds, whatever the
    classifier, for scores perturbed with the sech kernel of bandwidth ``h``
    (:func:`~skcalbound.perturb_scores`, ``SechPerturbedClassifier``): pass ``h`` and
    the bounds follow. On each cross-fitting split a Nadaraya–Watson smoother of the
    training labels estimates :math:`\\eta`, Lemma 6 of the paper bounds its error
    at every validation score, and Proposition 2 bounds :math:`CE = E|s -
    \\eta(s)|`; the fold bounds are combined by the union bound. This is the paper's
    tightest bound.

    Read more in the :ref:`User Guide <nw_bound>`.

    Parameters
    ----------
    h : float, default=None
        Bandwidth of the sech perturbation the scores went through. Implies
        ``b1 = tanh(1/h) / (2h)`` and ``b2 = tanh(1/h)**2 / (2 h**2)``
        (``1.5 tanh(1/h)**2 / h**2``, Corollary 4, with ``guarantee='paper'``).
        Give either ``h`` or both ``b1`` and ``b2``. ``h`` below ``2**-41`` (``b1``
        above ``2**40`` or ``b2`` above ``1.5 * 2**82``) is rejected: the smoothing
        term would rest on rounding, and the bound is 1 there anyway.
        Perturbed scores are continuous, so with ``h`` many exactly tied scores
        are an error (they were not perturbed); ``h`` above 0.5 is rejected.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    b1 : float, default=None
        Bound on the first derivative of the calibration function.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    b2 : float, default=None
        Bound on the second derivative of the calibration function.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    bandwidth : "auto", "plugin" or float, default="auto"
        Bandwidth of the smoother's kernel, per fold. ``"auto"``: with
        ``guarantee='high_probability'``, the candidate among ``h_plugin *
        2**(k/2)``, ``k = -4, ..., 8``, with the smallest mean smoothing-error bound
        over the fold's training scores (it looks at no label and no validation
        score, so the certificate stays valid); with ``'paper'``, the plug-in rule.
        ``"plugin"`` is the paper's plug-in rule (Appendix E), computed from ``b1``,
        ``b2`` and each fold's training size. May be tuned by :meth:`score` on fresh
        data (with ``tempering`` and ``cv``: these shape the estimate, not the
        assumption).

    tempering : float, default=1.2
        Exponent of the Epanechnikov kernel, :math:`(1 - u^2)^{tempering}`; the
        paper's default is 1.2.

    max_validation : None, "auto" or int, default=None
        Validation points evaluated per fold. ``None`` uses all of them (tightest).
        ``"auto"`` is the paper's rule, a uniform subsample of
        ``min(15000, max(5000, ceil(0.05 n)))`` points; an int caps the number. A
        subsample keeps the guarantee and only widens the Bernstein terms.

    noise : {'adaptive', 'worst_case'}, default='adaptive'
        How ``guarantee='high_probability'`` pays for the label noise.
        ``'adaptive'``: by its variance :math:`\\eta(1 - \\eta)`, certified through a
        pilot estimate from the validation labels, with a bias relative to
        :math:`\\min(\\eta, 1 - \\eta)` when ``h`` is given (much tighter for rare
        events; see the :ref:`User Guide <nw_terms>`). ``'worst_case'``: at
        :math:`\\eta(1 - \\eta) = 1/4`, the form before it, kept for comparison.
        Used only with ``guarantee='high_probability'``: ``'paper'`` computes the
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
        ``confidence_level`` over the data, training labels included (the user
        guide's "What exactly is certified"), with Lemma 6 expanded at the query and
        ``b2 = tanh(1/h)**2 / (2 h**2)`` from ``h``. ``'paper'``:
        Proposition 2 as published, whose last step holds only in expectation over
        the training labels (it can miss more often than ``1 - confidence_level``);
        kept to compare with the paper's figures.

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
        fold, ``validation_mean`` minus every other term (of the triangle route with
        ``noise='adaptive'``). It holds together with
        :attr:`bound_`: both at once with probability at least ``confidence_level``,
        at no extra cost.

    estimate_ : float
        Point estimate of the calibration error, not certified: the same for
        every bound on the same rows and ``random_state`` (a cross-fitted binned
        estimate whose bins are pooled where ``s - eta`` keeps its sign, see the
        :ref:`User Guide <estimate>`). In a rare sample it lies outside
        ``[lower_bound_, bound_]``.

    terms_ : dict of str to float
        Named additive components of the aggregated bound before clipping. With
        ``noise='adaptive'`` (the default): its Jensen route,
        ``validation_mean``, ``bias_mean``, ``label_concentration`` and
        ``population_transfer``; a fold whose ``route`` in :attr:`fold_results_` is
        ``"triangle"`` has a smaller bound than their sum. With
        ``noise='worst_case'``: ``validation_mean`` (mean of
        :math:`|\\hat\\eta - s|`), ``bernstein_residual``, ``smoothing_mean`` (mean of
        the smoothing-error bound :math:`\\tilde g`), ``label_concentration``
        (deviation of the smoothing error over the training labels) and
        ``population_transfer`` (from the validation points to the score law). With
        ``'paper'``: ``validation_mean``, ``smoothing_mean``, ``bernstein_residual``
        and ``bernstein_smoothing``. With ``aggregate='min'`` they are the terms of the
        smallest fold bound.

    lower_terms_ : dict of str to float
        Only with ``noise='adaptive'`` (the default) and
        ``guarantee='high_probability'``: the table of :attr:`lower_bound_`, aggregated
        over the folds as it is (their mean, or the fold with the largest lower bound
        with ``aggregate='min'``): ``validation_mean``, ``bernstein_residual``,
        ``smoothing_bound`` and ``smoothing_transfer``, so that the unclipped lower
        bound is ``2 * validation_mean`` minus their sum.

    fold_results_ : pandas.DataFrame
        One row per fold: ``n_train``, ``n_validation`` (points evaluated),
        ``delta``, ``bandwidth``, ``n_bins`` (grid size), ``n_fallback`` (validation
        points with no training score within the kernel, which used the nearest
        training scores), ``sum_c_squared`` (:math:`C_2`, high-probability mode),
        ``estimate``, the terms, the unclipped fold ``bound`` and ``lower_bound``.
        With ``noise='adaptive'`` also ``n_relative`` (validation points on the
        relative bias branch), ``route`` (``"jensen"`` or ``"triangle"``: which gave
        ``bound``) and the triangle route's ``bernstein_residual``,
        ``smoothing_bound`` and ``smoothing_transfer``.

    result_ : object
        The same numbers as a frozen dataclass with fields ``bound``,
        ``lower_bound``, ``estimate``, ``terms``, ``folds``, ``aggregate``,
        ``confidence_level``, ``guarantee`` and ``in_expectation_only`` (true with
        ``guarantee='paper'``: the bound then holds in expectation only).

    n_splits_ : int
        Number of cross-fitting splits.

    b1_ : float
        Bound on :math:`|\\eta'|` used (from ``h`` or as given).

    b2_ : float
        Bound on :math:`|\\eta''|` used.

    bandwidth_ : float
        Kernel bandwidth of :attr:`surrogate_` (the folds' bandwidths are in
        :attr:`fold_results_`).

    surrogate_ : object
        Nadaraya–Watson smoother on all data (bandwidth for the full sample), used by
        :meth:`predict` and :meth:`score`.

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
    nw_bound : The same bound as a function of arrays.
    TVCalibrationBound : Bound that needs only bounded variation.

    Notes
    -----
    The terms of both certificates, their formulas and the events they pay for are in
    the :ref:`User Guide <nw_terms>`; the proof sketch in :ref:`what_is_certified`.

    References
    ----------
    .. [1] Ciosek et al., "Measuring Uncertainty Calibration", ICLR 2026,
       arXiv:2512.13872, section 5 and Appendices C to E.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import NWCalibrationBound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < s ** 2  # miscalibrated: CE = 1/6
    >>> est = NWCalibrationBound(b1=2.0, b2=2.0, random_state=0).fit(s, y)
    >>> print(f"CE = {1 / 6:.3f} in [{est.lower_bound_:.3f}, {est.bound_:.3f}]")
    CE = 0.167 in [0.125, 0.198]
    """

    name = "nw"
    label = "NW"
    smoothness_params = ("h", "b1", "b2")
    assumption_params = ("h", "b1", "b2")
    assumption_text = "|eta'| <= b1 = {b1_:.6g}, |eta''| <= b2 = {b2_:.6g}"
    paper_in_expectation = True
    # Records made before noise existed: its worst-case form (skcalbound verify).
    _params_of_older_records = {"noise": "worst_case"}

    _parameter_constraints = {
        **_BaseCalibrationBound._parameter_constraints,
        **_NW_PARAMETERS,
    }

    def __init__(
        self,
        h=None,
        *,
        b1=None,
        b2=None,
        bandwidth="auto",
        tempering=1.2,
        max_validation=None,
        noise="adaptive",
        pos_label=None,
        confidence_level=0.95,
        guarantee="high_probability",
        cv=5,
        aggregate="mean",
        random_state=None,
        n_jobs=None,
    ):
        self.noise = noise
        self.h = h
        self.b1 = b1
        self.b2 = b2
        self.bandwidth = bandwidth
        self.tempering = tempering
        self.max_validation = max_validation
        self.pos_label = pos_label
        self.confidence_level = confidence_level
        self.guarantee = guarantee
        self.cv = cv
        self.aggregate = aggregate
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _score_method(self):
        method = self._method()
        if self.max_validation is None:
            return method
        return replace(method, random_state=self._score_seed)

    def _vacuous_advice(self):
        if self.h is not None:
            what = (
                f"A larger h (now {self.h:.6g}: a stronger perturbation, smaller b1 "
                "and b2) also shrinks it, for a noisier classifier: see the user "
                "guide's 'Choosing h'."
            )
        else:
            what = (
                "Smaller b1 and b2 also shrink it, if the calibration function is "
                "that smooth; perturbed scores give them from h."
            )
        return f"{super()._vacuous_advice()} {what}"

    def _method(self):
        b1, b2 = _derivative_bounds(self.h, self.b1, self.b2, self.guarantee)
        mode = guarantee_of(self.guarantee)
        bandwidth = self.bandwidth
        if mode.published and bandwidth == "auto":
            bandwidth = "plugin"  # the label-free search is not the paper's
        grid = NWGrid(
            b1=b1,
            b2=b2,
            n_samples=None,  # set from each source
            bandwidth=bandwidth,
            tempering=float(self.tempering),
            max_validation=self.max_validation,
            lemma6=mode.lemma6,
            noise="worst_case" if mode.published else self.noise,
            h=None if self.h is None else float(self.h),
        )
        return _NWMethod(grid, self.random_state)

    def _display_curve(self, low, high, n_grid=None):
        """What the display draws: ``predict`` (by default at one point per kernel
        support) and Lemma 6's ``min(g, 1)`` in this ``guarantee``'s form."""
        grid = curve_grid(low, high, n_grid, support=2.0 * self.bandwidth_)
        _, g, _ = self.surrogate_.residuals_and_smoothing(self.b1_, self.b2_, grid)
        return DisplayCurve(grid, self.predict(grid), band=np.minimum(g, 1.0))

    @classmethod
    def _display_style(cls, guarantee, estimator=None):
        form = " (the paper's looser form)" if guarantee_of(guarantee).published else ""
        note = smoothing_band_note(
            "kernel smoother's", "the assumed derivative bounds", form
        )
        return surrogate_style(cls.label, note)


@validate_params(
    {
        "y_true": ["array-like"],
        "y_prob": ["array-like"],
        **NWCalibrationBound._parameter_constraints,
    },
    prefer_skip_nested_validation=True,
)
def nw_bound(
    y_true,
    y_prob,
    *,
    h=None,
    b1=None,
    b2=None,
    bandwidth="auto",
    tempering=1.2,
    max_validation=None,
    noise="adaptive",
    pos_label=None,
    confidence_level=0.95,
    guarantee="high_probability",
    cv=5,
    aggregate="mean",
    random_state=None,
    n_jobs=None,
):
    """Certified upper bound on the L1 calibration error under bounded derivatives.

    The functional form of :class:`NWCalibrationBound`: returns the same number as
    ``NWCalibrationBound(...).fit(y_prob, y_true).bound_``.

    Read more in the :ref:`User Guide <nw_bound>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        Predicted probabilities of the positive class, or a ``predict_proba`` output.

    h : float, default=None
        Bandwidth of the sech perturbation the scores went through. Implies
        ``b1 = tanh(1/h) / (2h)`` and ``b2 = tanh(1/h)**2 / (2 h**2)``
        (``1.5 tanh(1/h)**2 / h**2``, Corollary 4, with ``guarantee='paper'``).
        Give either ``h`` or both ``b1`` and ``b2``. ``h`` below ``2**-41`` (``b1``
        above ``2**40`` or ``b2`` above ``1.5 * 2**82``) is rejected: the smoothing
        term would rest on rounding, and the bound is 1 there anyway.
        Perturbed scores are continuous, so with ``h`` many exactly tied scores
        are an error (they were not perturbed); ``h`` above 0.5 is rejected.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    b1 : float, default=None
        Bound on the first derivative of the calibration function.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    b2 : float, default=None
        Bound on the second derivative of the calibration function.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

    bandwidth : "auto", "plugin" or float, default="auto"
        Bandwidth of the smoother's kernel, per fold. ``"auto"``: with
        ``guarantee='high_probability'``, the candidate among ``h_plugin *
        2**(k/2)``, ``k = -4, ..., 8``, with the smallest mean smoothing-error bound
        over the fold's training scores (it looks at no label and no validation
        score, so the certificate stays valid); with ``'paper'``, the plug-in rule.
        ``"plugin"`` is the paper's plug-in rule (Appendix E), computed from ``b1``,
        ``b2`` and each fold's training size. May be tuned by :meth:`score` on fresh
        data (with ``tempering`` and ``cv``: these shape the estimate, not the
        assumption).

    tempering : float, default=1.2
        Exponent of the Epanechnikov kernel, :math:`(1 - u^2)^{tempering}`; the
        paper's default is 1.2.

    max_validation : None, "auto" or int, default=None
        Validation points evaluated per fold. ``None`` uses all of them (tightest).
        ``"auto"`` is the paper's rule, a uniform subsample of
        ``min(15000, max(5000, ceil(0.05 n)))`` points; an int caps the number. A
        subsample keeps the guarantee and only widens the Bernstein terms.

    noise : {'adaptive', 'worst_case'}, default='adaptive'
        ``'adaptive'``: the variance-adaptive certificate; ``'worst_case'``: the
        worst-case one. Used only with
        ``guarantee='high_probability'`` (see :class:`NWCalibrationBound`).

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
        ``confidence_level`` over the data, training labels included (the user
        guide's "What exactly is certified"), with Lemma 6 expanded at the query and
        ``b2 = tanh(1/h)**2 / (2 h**2)`` from ``h``. ``'paper'``:
        Proposition 2 as published, whose last step holds only in expectation over
        the training labels (it can miss more often than ``1 - confidence_level``);
        kept to compare with the paper's figures.

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
    NWCalibrationBound : The estimator, with the terms and per-fold results.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import nw_bound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < s  # perfectly calibrated: CE = 0
    >>> print(round(nw_bound(y, s, b1=1.0, b2=0.0, random_state=0), 3))
    0.03
    """
    _derivative_bounds(h, b1, b2, guarantee)  # hyperparameters before the data
    dask = is_dask_collection(y_true) or is_dask_collection(y_prob)
    if dask:
        labels, scores = y_true, y_prob  # validated block by block, with pos_label
    else:
        labels, scores = check_prob_labels(y_true, y_prob, pos_label, "nw_bound")
    estimator = NWCalibrationBound(
        h=h,
        pos_label=pos_label if dask else None,
        b1=b1,
        b2=b2,
        bandwidth=bandwidth,
        tempering=tempering,
        max_validation=max_validation,
        noise=noise,
        confidence_level=confidence_level,
        guarantee=guarantee,
        cv=cv,
        aggregate=aggregate,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    return estimator.fit(scores, labels).bound_
