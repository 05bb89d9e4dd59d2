"""``MonotoneCalibrationBound``: a certified interval for raw scores from a calibration
band, under a monotone calibration function (SPEC section 14)."""

import dataclasses
import warnings

from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import _BaseCalibrationBound, _EstimateTap
from ._chunks import (
    ArraySource,
    IterableSource,
    check_random_seed,
    is_dask_collection,
)
from ._compat import StrOptions, validate_params
from ._curve import CurveStyle, DisplayCurve, curve_grid
from ._monotone_method import (
    _INFO_TERMS,
    _BandMethod,
    fit_all_rows,
    fit_on_grid,
    no_statistics,
)
from ._result import aggregate_folds
from ._validation import check_prob_labels, check_scores
from ._warnings import MonotonicityWarning, _user_stacklevel, warn_if_vacuous


class MonotoneCalibrationBound(_BaseCalibrationBound):
    """Certified interval for the L1 calibration error of a monotone calibration.

    From a simultaneous calibration band. Assumes the calibration function
    :math:`\\eta(s) = E[y \\mid s]` is non-decreasing (a model whose higher scores
    never mean a lower chance of the positive class; flip the scores of a decreasing
    one). No perturbation, no smoothness constant, no folds. The scores are sorted
    once; the mean label of each of about ``0.43 n`` windows of consecutive sorted
    scores gets a KL–Chernoff confidence interval, and monotonicity turns them into
    a band ``L(s) <= eta(s) <= U(s)`` that holds for all scores at once; the largest and
    smallest ``|s - eta(s)|`` the band allows, carried to the population by the DKW
    inequality on the quantile scale, give :attr:`bound_` and :attr:`lower_bound_`.
    Both hold together with probability at least ``confidence_level``, for every
    sample size and every score distribution (ties and atoms included), if the
    calibration function is monotone.

    Chunked and Dask input (:meth:`fit_chunks`, ``cv=None``) take the cells of a fixed
    score grid as the atoms of the sort (one pass of per-cell counts; within about
    0.5% of the sorted band on continuous scores, see :ref:`large_data`).

    A band that crosses (``L(s) > U(s)`` somewhere) rejects monotonicity:
    :attr:`monotonicity_rejected_` is set and a :class:`MonotonicityWarning` is
    issued. The test catches only some non-monotone calibration functions.

    Read more in the :ref:`User Guide <monotone_bound>`.

    Parameters
    ----------
    confidence_level : float, default=0.95
        Probability with which the bound holds, in (0, 1); the paper's
        ``delta`` is ``1 - confidence_level``.

    window_bound : {'kl'}, default='kl'
        Confidence limits of the window means: ``'kl'``, the KL–Chernoff limits
        (Hoeffding 1963, Theorem 1), valid for independent labels with unequal means.

    cv : int, cross-validation generator, iterable or None, default=None
        ``None``: one band on all rows (SPEC 14, the default and the narrowest at
        large ``n``). Otherwise the cross-fitted variant (SPEC 14.2), for per-fold
        results: per split a band on the training part at
        ``(1 - confidence_level) / (2 K)`` and Maurer–Pontil bounds on the validation
        part at ``(1 - confidence_level) / (4 K)`` per side. An int ``k`` draws the
        folds row by row from one seed drawn from ``random_state``; any scikit-learn
        splitter that looks at neither labels nor scores, or iterable of
        ``(train, validation)`` index pairs chosen without them, is accepted.

    aggregate : {'mean', 'min'}, default='mean'
        How fold bounds are combined: their mean (most stable) or their minimum
        (tighter). Both are certified by the union bound over the folds.

    random_state : int, RandomState instance or None, default=None
        Controls the randomness of the fit: the folds when ``cv`` is an int, the
        order of tied scores, the two random halves of the rows behind
        ``estimate_``, and NW's subsample of validation points (``max_validation``).
        Pass an int for reproducible output across calls.

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans; any other
        labels (``"churn"``/``"stay"``, {1, 2}) need it. For a two-column
        ``predict_proba`` input, the column of ``pos_label`` among the sorted labels
        is used (column 1 by default), as scikit-learn orders ``classes_``.

    Attributes
    ----------
    bound_ : float
        Certified upper bound on the calibration error, at most 1.

    lower_bound_ : float
        Certified lower bound on the calibration error, at least 0. It holds
        together with :attr:`bound_`: both at once with probability at least
        ``confidence_level``.

    estimate_ : float
        Point estimate of the calibration error, not certified: the same for
        every bound on the same rows and ``random_state`` (a cross-fitted binned
        estimate whose bins are pooled where ``s - eta`` keeps its sign, see the
        :ref:`User Guide <estimate>`). In a rare sample it lies outside
        ``[lower_bound_, bound_]``.

    terms_ : dict of str to float
        With ``cv=None``: ``band_upper`` (the mean over the rows of the largest
        ``|s - eta(s)|`` the band allows at ``s``) plus ``transfer_upper`` (the cost
        of carrying it to the population) is the upper bound before clipping;
        ``band_lower`` plus ``transfer_lower`` (negative) the lower bound;
        ``mean_band_width`` (the mean of ``U(s) - L(s)`` over the rows) and
        ``n_windows`` (on chunks and Dask also ``n_cells``, each row taken anywhere
        in its cell). With ``cv``: ``validation_mean`` (the mean of
        ``max(s - L(s), U(s) - s)`` over the validation rows) and ``maurer_pontil``,
        aggregated over folds.

    band_ : Band
        The band fitted on all rows at ``(1 - confidence_level) / 2``, a frozen
        dataclass of arrays: ``scores`` (the distinct sorted scores; on chunks and
        Dask, the smallest and largest score of every non-empty cell), ``lower`` and
        ``upper`` (``L`` and ``U`` there); ``band_.lower_at(s)`` and
        ``band_.upper_at(s)`` evaluate it anywhere (as :meth:`predict_interval`).

    monotonicity_rejected_ : bool
        Whether the band crosses, which rejects a monotone calibration function at
        level ``(1 - confidence_level) / 2``.

    fold_results_ : pandas.DataFrame
        One row per fold (one row with ``cv=None``): sizes, ``delta``, the estimate,
        the additive terms, the unclipped ``bound`` and ``lower_bound``, and (with
        ``cv=None``) the other terms.

    result_ : object
        The same numbers as a frozen dataclass with fields ``bound``,
        ``lower_bound``, ``estimate``, ``terms``, ``folds``, ``aggregate``,
        ``confidence_level``, ``guarantee`` and ``in_expectation_only`` (false).

    n_splits_ : int
        Number of cross-fitting splits (1 with ``cv=None``).

    surrogate_ : MonotoneFit
        The band on all rows and the isotonic regression inside it, used by
        :meth:`predict` and :meth:`score`.

    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.

    certificate_ : dict
        The audit record of the fit, JSON-serialisable: method, level, sample size,
        seed, the interval and its terms, and a SHA-256 fingerprint of the scores
        and labels used.

    n_features_in_ : int
        Number of columns of ``X`` seen in :meth:`fit` (1 for a vector of scores).

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of ``X``, defined only when ``X`` is a data frame with string
        column names.

    See Also
    --------
    monotone_bound : The same bound as a function of arrays.
    TVCalibrationBound : A bound under bounded variation, without monotonicity.

    Notes
    -----
    With :math:`\\delta_1 = \\delta_2 = \\delta / 2`, sorted scores
    :math:`x_1 \\le \\dots \\le x_n` (:math:`x_0 = 0`, :math:`x_{n+1} = 1`), windows
    of lengths :math:`\\lceil 32 \\cdot 2^{k/2} \\rceil < n` and :math:`n`, starts
    every quarter length, and per window the KL–Chernoff limits at
    :math:`c = \\ln(2 J N_\\ell / \\delta_1)`,
    :math:`U(x) = \\min\\{hi : x_{a+1} \\ge x\\}`,
    :math:`L(x) = \\max\\{lo : x_{a+\\ell} \\le x\\}`. On gap :math:`i`,
    :math:`G^+_i = \\max(x_{i+1} - L(x_i), U(x_{i+1}) - x_i)` and
    :math:`G^-_i = \\max(0, x_i - U(x_{i+1}), L(x_i) - x_{i+1})`; with
    :math:`K = \\lceil n \\varepsilon \\rceil`,
    :math:`\\varepsilon = \\sqrt{\\ln(2/\\delta_2) / (2n)}`,

    .. math:: U = \\frac{1}{n} \\sum_{j=1}^n \\max_{j-K \\le i \\le j+K-1} G^+_i,
              \\qquad
              L = \\frac{1}{n} \\sum_{j=1}^n \\min_{j-K \\le i \\le j+K-1} G^-_i.

    :math:`G^+_i` is also taken at least 0 (as :math:`|x - \\eta(x)|` is), which
    changes nothing unless the band crosses, and :math:`K` is rounded up from
    :math:`n \\varepsilon (1 + 10^{-12})`, so that rounding never makes it smaller
    than :math:`n \\varepsilon`.

    ``window_bound='exact'`` (Clopper–Pearson limits through Hoeffding 1956) is not
    offered: its theorem has not been checked against the source here.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import MonotoneCalibrationBound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < s ** 2  # miscalibrated: CE = 1/6
    >>> est = MonotoneCalibrationBound(random_state=0).fit(s, y)
    >>> print(f"CE = {1 / 6:.3f} in [{est.lower_bound_:.3f}, {est.bound_:.3f}]")
    CE = 0.167 in [0.082, 0.248]
    """

    name = "monotone"
    label = "Monotone band"
    assumption_params = ()
    assumption_text = "E[y|s] non-decreasing in s"

    _parameter_constraints = {
        "confidence_level": _BaseCalibrationBound._parameter_constraints[
            "confidence_level"
        ],
        "window_bound": [StrOptions({"kl"})],
        "cv": [None, "cv_object"],
        "aggregate": _BaseCalibrationBound._parameter_constraints["aggregate"],
        "random_state": ["random_state"],
        "pos_label": _BaseCalibrationBound._parameter_constraints["pos_label"],
    }

    def __init__(
        self,
        *,
        confidence_level=0.95,
        window_bound="kl",
        cv=None,
        aggregate="mean",
        random_state=None,
        pos_label=None,
    ):
        self.confidence_level = confidence_level
        self.window_bound = window_bound
        self.cv = cv
        self.aggregate = aggregate
        self.random_state = random_state
        self.pos_label = pos_label

    def _method(self):
        return _BandMethod(
            window_bound=self.window_bound, cross_fitted=self.cv is not None
        )

    def _vacuous_advice(self):
        return (
            "More labelled samples shrink it (see the user guide's table of widths "
            "by sample size)."
        )

    def _fit_arrays(self, method, scores, labels, column=None):
        """Fit on validated float64 scores in [0, 1] and 0/1 labels (``column``: of a
        two-column input, the positive class's)."""
        if self.cv is not None:  # SPEC 14.2: the shared fold loop
            source = ArraySource(scores, labels)
            return self._fit_source(
                method, source, "arrays", arrays=(scores, labels), column=column
            )
        delta = 1.0 - self.confidence_level
        seed = check_random_seed(check_random_state(self.random_state))
        fold, fit = fit_all_rows(scores, labels, delta, seed)
        # estimate_: the estimate every bound reports (_estimate), from the same seed.
        estimate = self._estimate_of(
            _EstimateTap(ArraySource(scores, labels), seed), column
        )
        self._set_result(method, [fold], fit, scores.shape[0], seed, estimate)
        self._keep_data_summary((scores, labels), None, None)
        return self

    def _fit_source(self, method, source, what, arrays=None, column=None):
        if arrays is None and self.cv is None:  # chunks or Dask: SPEC 14.6
            return self._fit_grid(method, source)
        return super()._fit_source(method, source, what, arrays, column)

    def _fit_grid(self, method, source):
        """SPEC 14.6 on rows that are not in memory (``fit_on_grid``): no
        randomness beyond the shared estimate's."""
        key_seed = check_random_seed(check_random_state(self.random_state))
        tap = _EstimateTap(source, key_seed)
        fold, fit, n_positive = fit_on_grid(tap, 1.0 - self.confidence_level)
        self.classes_, self.n_features_in_ = tap.classes, 1
        estimate = self._estimate_of(tap)
        self._set_result(method, [fold], fit, source.n_samples, key_seed, estimate)
        if isinstance(source, IterableSource):  # the labels' half of the fingerprint
            source.map_reduce(no_statistics)
        self._keep_data_summary(None, source, n_positive)
        return self

    def _set_result(self, method, results, surrogate, n_samples, key_seed, estimate):
        result = aggregate_folds(
            results, self.aggregate, self.confidence_level, warn=False
        )
        # The estimate every bound reports (_estimate), whatever the folds.
        self.result_ = dataclasses.replace(result, estimate=estimate)
        self.bound_ = self.result_.bound
        self.lower_bound_ = self.result_.lower_bound
        self.estimate_ = self.result_.estimate
        if len(results) == 1 and "band_lower" in results[0].info:
            info = results[0].info
            extra = tuple(k for k in ("n_cells",) if k in info)  # SPEC 14.6
            self.terms_ = {
                **results[0].terms,
                **{k: info[k] for k in (*_INFO_TERMS, *extra)},
            }
        else:
            self.terms_ = dict(self.result_.terms)
        self.fold_results_ = self.result_.fold_frame()
        self.n_splits_ = len(results)
        self.surrogate_ = surrogate
        self.band_ = surrogate.band
        self.monotonicity_rejected_ = surrogate.band.crossed
        name = type(self).__name__
        if self.monotonicity_rejected_:
            warnings.warn(
                f"The calibration band of {name} crosses (L(s) > U(s) at some "
                "score): the data reject a non-decreasing calibration function at "
                f"level {(1.0 - self.confidence_level) / 2:g}, and the interval "
                f"[{self.lower_bound_:.4g}, {self.bound_:.4g}] assumes one. Use "
                "TVCalibrationBound instead: it assumes bounded variation, not "
                "monotonicity, and its default cell bound is certified there.",
                MonotonicityWarning,
                stacklevel=_user_stacklevel(),
            )
        warn_if_vacuous(self.bound_, n_samples, name, self._vacuous_advice())

    def predict(self, X):
        """The isotonic regression of the labels on the scores, clipped into the band.

        A recalibration map: the increasing step-and-ramp function
        :class:`~sklearn.isotonic.IsotonicRegression` (``increasing=True``,
        ``out_of_bounds='clip'``) fits on all rows, moved into the certified band
        ``[L(s), U(s)]`` where it leaves it (to ``U`` where the band crosses).

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Scores in [0, 1], or a ``predict_proba`` output.

        Returns
        -------
        ndarray of shape (n_samples,)
            Recalibrated probabilities.
        """
        return super().predict(X)

    def predict_interval(self, X):
        """The certified band at the scores: ``(L(s), U(s))``.

        With probability at least ``1 - (1 - confidence_level) / 2``,
        ``L(s) <= E[y | s] <= U(s)`` for every score ``s`` at once, if the
        calibration function is monotone.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Scores in [0, 1], or a ``predict_proba`` output.

        Returns
        -------
        lower : ndarray of shape (n_samples,)
            ``L(s)``.
        upper : ndarray of shape (n_samples,)
            ``U(s)``.
        """
        check_is_fitted(self)
        scores = check_scores(self, X)
        return self.band_.lower_at(scores), self.band_.upper_at(scores)

    def score(self, X, y):
        """Negated fixed-split certified bound on held-out data (greater is better).

        The band fitted on all rows plays the training part and ``(X, y)`` the
        validation part, through the cross-fitted variant's per-fold formula (SPEC
        14.2) with one fold at the full level: the mean of
        ``max(s - L(s), U(s) - s)`` over the held-out scores plus a Maurer–Pontil
        term at ``(1 - confidence_level) / 4``. Choosing among several bounds by
        their value on the same held-out data needs fresh data or a union bound.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Held-out scores (at least 2), independent of the data passed to ``fit``.
        y : array-like of shape (n_samples,)
            Held-out labels, from the classes seen in ``fit``; checked for
            consistency only (the bound depends on the scores).

        Returns
        -------
        float
            ``-min(U, 1)`` where ``U`` is the certified bound on the held-out data.
        """
        return super().score(X, y)

    def _display_curve(self, low, high, n_grid=None):
        """What the display draws: ``predict`` inside the certified band ``band_``."""
        grid = curve_grid(low, high, n_grid)
        band = self.band_
        certified = (band.scores, band.lower, band.upper)
        return DisplayCurve(grid, self.predict(grid), certified_band=certified)

    @classmethod
    def _display_style(cls, guarantee, estimator=None):
        legend = "isotonic fit $\\hat\\eta$ (predict: a recalibration map);\n"
        return CurveStyle(legend)


@validate_params(
    {
        "y_true": ["array-like"],
        "y_prob": ["array-like"],
        **MonotoneCalibrationBound._parameter_constraints,
    },
    prefer_skip_nested_validation=True,
)
def monotone_bound(
    y_true,
    y_prob,
    *,
    confidence_level=0.95,
    window_bound="kl",
    cv=None,
    aggregate="mean",
    random_state=None,
    pos_label=None,
):
    """Certified upper bound on the L1 calibration error of a monotone calibration.

    The functional form of :class:`MonotoneCalibrationBound`: returns the same number
    as ``MonotoneCalibrationBound(...).fit(y_prob, y_true).bound_``.

    Read more in the :ref:`User Guide <monotone_bound>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        Predicted probabilities of the positive class, or a ``predict_proba`` output.

    confidence_level : float, default=0.95
        Probability with which the bound holds, in (0, 1); the paper's
        ``delta`` is ``1 - confidence_level``.

    window_bound : {'kl'}, default='kl'
        Confidence limits of the window means: ``'kl'``, the KL–Chernoff limits
        (Hoeffding 1963, Theorem 1), valid for independent labels with unequal means.

    cv : int, cross-validation generator, iterable or None, default=None
        ``None``: one band on all rows. Otherwise the cross-fitted variant, as in
        :class:`MonotoneCalibrationBound`.

    aggregate : {'mean', 'min'}, default='mean'
        How fold bounds are combined: their mean (most stable) or their minimum
        (tighter). Both are certified by the union bound over the folds.

    random_state : int, RandomState instance or None, default=None
        Controls the randomness of the fit: the folds when ``cv`` is an int, the
        order of tied scores, the two random halves of the rows behind
        ``estimate_``, and NW's subsample of validation points (``max_validation``).
        Pass an int for reproducible output across calls.

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans; any other
        labels (``"churn"``/``"stay"``, {1, 2}) need it. For a two-column
        ``predict_proba`` input, the column of ``pos_label`` among the sorted labels
        is used (column 1 by default), as scikit-learn orders ``classes_``.

    Returns
    -------
    bound : float
        Upper bound on the calibration error that holds with probability at least
        ``confidence_level`` if ``E[y | s]`` is non-decreasing.

    See Also
    --------
    MonotoneCalibrationBound : The estimator, with the band, the lower bound and the
        terms.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import monotone_bound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < s  # perfectly calibrated: CE = 0
    >>> print(round(monotone_bound(y, s, random_state=0), 3))
    0.101
    """
    estimator = MonotoneCalibrationBound(
        confidence_level=confidence_level,
        window_bound=window_bound,
        cv=cv,
        aggregate=aggregate,
        random_state=random_state,
    )
    if is_dask_collection(y_true) or is_dask_collection(y_prob):
        # SPEC 14.6 with cv=None; with cv, fit says why it needs arrays.
        return estimator.set_params(pos_label=pos_label).fit(y_prob, y_true).bound_
    labels, scores = check_prob_labels(y_true, y_prob, pos_label, "monotone_bound")
    return estimator.fit(scores, labels).bound_
