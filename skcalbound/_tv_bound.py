"""``TVCalibrationBound``: certified bound under bounded variation (paper section 4)."""

import warnings
from numbers import Integral, Real

from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ._base import _BaseCalibrationBound, _EstimateTap, cross_fit
from ._chunks import check_random_seed, is_dask_collection
from ._compat import Interval, StrOptions, validate_params
from ._curve import CurveStyle, DisplayCurve, curve_grid
from ._guarantee import guarantee_of
from ._splitting import GroupDesign, resolve_cv
from ._tv_method import _TVCellsMethod, _TVMethod
from ._validation import check_held_out_labels, check_prob_labels, check_scores
from ._warnings import _user_stacklevel


def _warn_unused_folds(estimator):
    """The cell bound has no folds: a ``cv`` or ``aggregate`` set by the user (not
    the default; ``cv=None`` means the default) is not used, which the user should
    hear (a ``StratifiedKFold`` is refused as the cross-fitted bound refuses it)."""
    cv, aggregate = estimator.cv, estimator.aggregate
    if not isinstance(cv, Integral) and cv is not None:
        resolve_cv(cv, None)  # the error for splitters that read the labels
    defaults = type(estimator)().get_params()
    unused = []
    if not (cv is None or isinstance(cv, Integral) and cv == defaults["cv"]):
        unused.append(f"cv={cv!r}")
    if aggregate != defaults["aggregate"]:
        unused.append(f"aggregate={aggregate!r}")
    if unused:
        warnings.warn(
            f"TVCalibrationBound's cell bound (method='cells', the default) has no "
            f"folds: {' and '.join(unused)} {'is' if len(unused) == 1 else 'are'} not "
            "used. It is computed once on all rows at the whole level; for the "
            "cross-fitted bound, pass method='denoise'.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )


class TVCalibrationBound(_BaseCalibrationBound):
    """Certified upper bound on the L1 calibration error under bounded variation.

    Assumes the calibration function :math:`\\eta(s) = E[y \\mid s]` has total
    variation at most ``V`` on [0, 1] (``V = 1`` holds for every monotone
    :math:`\\eta`). Two methods bound :math:`CE = E|s - \\eta(s)|` under this
    assumption; the default (``method='auto'``) is the cell bound
    (``method='cells'``, narrower at every size measured from 10**4 rows on; see
    ``method``), and the paper's denoising bound with ``guarantee='paper'``.

    ``method='denoise'`` (the paper's): on each cross-fitting split a total-variation
    denoising surrogate of
    :math:`\\eta` is fitted on the training part, and Proposition 1 of the paper bounds
    :math:`CE = E|s - \\eta(s)|` from the validation part; the fold bounds are combined
    by the union bound, so :attr:`bound_` is at least the true calibration error with
    probability at least ``confidence_level``, for every sample size and every score
    distribution (continuous, discrete or mixed).

    :meth:`predict` returns the TV-denoised surrogate the bound is built on, not a
    recalibration map: the denoising pulls the step function towards a constant, so
    it is flat below its first jump and above its last, even for calibrated scores.

    ``method='cells'`` (the default with ``guarantee='high_probability'``) computes
    the bound on all rows at once from blocks of sorted scores instead (see
    ``method``; no folds), and :meth:`predict` returns the blocks' mean labels.

    Read more in the :ref:`User Guide <tv_bound>`.

    Parameters
    ----------
    V : float, default=1.0
        Assumed upper bound on the total variation of the calibration function on
        [0, 1]. Any monotone calibration function has total variation at most 1.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

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
        Which form of Proposition 1. Both hold with probability at least
        ``confidence_level``. ``'high_probability'`` drops Corollary 2's Hoeffding term,
        which is redundant (the DKW term already covers it), and splits each fold's
        ``1 - confidence_level`` in three; ``'paper'`` is the published form (four
        shares and the extra term), to reproduce the paper's numbers. ``'paper'``
        needs ``method='denoise'`` (``'auto'`` resolves to it).

    method : {'auto', 'cells', 'denoise'}, default='auto'
        How the bound is computed under the same assumption. ``'auto'`` is
        ``'cells'`` with ``guarantee='high_probability'`` and ``'denoise'`` with
        ``guarantee='paper'`` (so the paper's numbers stay as published); the method
        used is :attr:`method_`. ``'denoise'`` is the
        paper's (above; its slack shrinks like ``n**(-1/4)``). ``'cells'`` needs no
        folds: the sorted sample is cut into blocks of about
        ``n / B`` points that never split a tie (a tie of at least ``n / B`` points is
        a block of its own), with ``B`` minimising ``V / B + sqrt(ln(2 B / delta1) B
        / (2 n))`` (a function of ``n``, ``V`` and the level only); KL–Chernoff limits
        of each block's mean label give the largest and smallest ``|s - eta(s)|`` on
        each block's cell, DKW on the quantile scale carries them to the population,
        and ``V * p*`` (``p*``: the largest mass of a block with several scores plus
        twice the DKW radius) pays for ``eta`` varying inside a cell. Its slack shrinks
        like ``n**(-1/3)``. It uses all rows once: ``cv`` and ``aggregate`` play no
        part (a warning says so when either is set to another value than its
        default), ``n_splits_`` is 1 and :attr:`fold_results_` has one row; the numbers
        do not depend on ``random_state`` (a block holds whole ties). It needs the
        rows in memory (as ``'denoise'`` does), has no :meth:`score`, and is not
        the paper's bound: ``guarantee='paper'`` with it is an error. Its interval
        was 0.09 to 0.91 times the width of ``'denoise'``'s on every problem of the
        study at ``n >= 10**4`` (see the :ref:`User Guide <tv_bound>`); choose
        ``'denoise'`` for :meth:`score` (model selection on held-out data) or the
        paper's numbers.

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
        fold, ``validation_mean - bernstein_residual - tv_denoising -
        population_transfer``. It holds together with :attr:`bound_`: both at once
        with probability at least ``confidence_level``, at no extra cost.

    estimate_ : float
        Point estimate of the calibration error, not certified: the same for
        every bound on the same rows and ``random_state`` (a cross-fitted binned
        estimate whose bins are pooled where ``s - eta`` keeps its sign, see the
        :ref:`User Guide <estimate>`). In a rare sample it lies outside
        ``[lower_bound_, bound_]``.

    terms_ : dict of str to float
        Named additive components of the aggregated bound before clipping:
        ``validation_mean``, ``bernstein_residual``, ``tv_denoising`` (TVB) and
        ``population_transfer`` (PTB). With ``aggregate='min'`` they are the terms of
        the smallest fold bound.
        With ``method='cells'``: ``cells_upper`` and ``cells_lower`` (the sample
        means of the largest and smallest ``|s - eta(s)|`` the block limits allow at
        each score), ``transfer_upper`` and ``transfer_lower`` (the DKW transfer to
        the population: ``bound_ = min(1, cells_upper + transfer_upper +
        oscillation)``, ``lower_bound_ = max(0, cells_lower + transfer_lower -
        oscillation)``), ``oscillation`` (``V * p*``), ``n_blocks`` and
        ``largest_block_mass``.

    fold_results_ : pandas.DataFrame
        One row per fold: ``n_train``, ``n_validation``, ``delta``, ``V_hat`` (total
        variation of the fold's surrogate), ``n_pieces``, ``estimate``, the terms, the
        unclipped fold ``bound`` and ``lower_bound``.

    result_ : object
        The same numbers as a frozen dataclass with fields ``bound``,
        ``lower_bound``, ``estimate``, ``terms``, ``folds``, ``aggregate``,
        ``confidence_level``, ``guarantee`` and ``in_expectation_only`` (always
        false: both of TV's forms hold with probability ``confidence_level``).

    n_splits_ : int
        Number of cross-fitting splits.

    method_ : {'cells', 'denoise'}
        The method used: ``method``, with ``'auto'`` resolved (``'cells'``, or
        ``'denoise'`` with ``guarantee='paper'``).

    surrogate_ : object
        Step-function surrogate refitted on all data (at the full
        ``1 - confidence_level``), used by :meth:`predict` and :meth:`score`: the
        TV-denoised labels, not a recalibration map (see :meth:`predict`).

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
    tv_bound : The same bound as a function of arrays.

    Notes
    -----
    Per fold, with :math:`m` training points and :math:`\\delta_1 = \\delta_2 =
    \\delta_4 = \\delta_{fold} / 3`, the bound of Proposition 1 is

    .. math:: U = \\frac{1}{|V|}\\sum_{i \\in V}|s_i - \\hat\\eta(s_i)|
              + BB(|V|, \\delta_4, \\hat\\sigma^2) + TVB(\\delta_1)
              + PTB(\\delta_2),

    and the lower bound replaces every term after the first by its negative
    (``guarantee='paper'``: :math:`\\delta_{fold} / 4` and Corollary 2's extra
    :math:`\\delta_3` term in PTB). Tied training scores are put in a random order
    drawn from ``random_state`` before the prox: their data order may depend on the
    labels, which the proof does not allow.

    where :math:`\\hat\\eta` is the 1-D TV prox of the labels in score order with
    :math:`\\lambda = t_2 / m` (``prox_tv.tv1_1d``), averaged over tied scores and
    extended as a right-continuous step function.

    References
    ----------
    .. [1] Ciosek et al., "Measuring Uncertainty Calibration", ICLR 2026,
       arXiv:2512.13872, section 4 and Appendix B.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import TVCalibrationBound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < s ** 2  # miscalibrated: CE = 1/6
    >>> est = TVCalibrationBound(random_state=0).fit(s, y)
    >>> print(f"CE = {1 / 6:.3f} in [{est.lower_bound_:.3f}, {est.bound_:.3f}]")
    CE = 0.167 in [0.043, 0.287]
    >>> est.method_
    'cells'
    >>> paper = TVCalibrationBound(method="denoise", random_state=0).fit(s, y)
    >>> print(f"[{paper.lower_bound_:.3f}, {paper.bound_:.3f}]")
    [0.000, 0.433]
    """

    name = "tv"
    label = "TV"
    smoothness_params = ()
    assumption_params = ("V",)
    assumption_text = "total variation of E[y|s] <= V = {V:g}"

    # Records made before TV had ``method`` (skcalbound verify): the denoising bound,
    # the only one there was.
    _params_of_older_records = {"method": "denoise"}

    _parameter_constraints = {
        **_BaseCalibrationBound._parameter_constraints,
        "V": [Interval(Real, 0, None, closed="neither")],
        "method": [StrOptions({"auto", "denoise", "cells"})],
    }

    def __init__(
        self,
        V=1.0,
        *,
        pos_label=None,
        confidence_level=0.95,
        guarantee="high_probability",
        method="auto",
        cv=5,
        aggregate="mean",
        random_state=None,
        n_jobs=None,
    ):
        self.V = V
        self.pos_label = pos_label
        self.confidence_level = confidence_level
        self.guarantee = guarantee
        self.method = method
        self.cv = cv
        self.aggregate = aggregate
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _resolved_method(self):
        """``'cells'`` or ``'denoise'``: ``method``, with ``'auto'`` resolved by
        ``guarantee`` (the paper's bound for ``'paper'``)."""
        if self.method == "auto":
            return guarantee_of(self.guarantee).tv_method
        return self.method

    def _has_folds(self):
        return self._resolved_method() == "denoise"

    def _method(self):
        if self._resolved_method() == "cells":
            if guarantee_of(self.guarantee).published:
                raise ValueError(
                    "guarantee='paper' is the published bound, TV denoising "
                    "(method='denoise'); method='cells' is not in the "
                    "paper. Use method='denoise' with guarantee='paper', or "
                    "method='cells' with guarantee='high_probability'."
                )
            return _TVCellsMethod(V=float(self.V))
        return _TVMethod(V=float(self.V), guarantee=self.guarantee)

    def _fit_source(self, method, source, what, arrays=None, column=None):
        if not isinstance(method, _TVCellsMethod):
            return super()._fit_source(method, source, what, arrays, column)
        # One cell bound on all rows at the whole level: no folds, so ``cv`` and
        # ``aggregate`` play no part (a single "split" holding every row).
        _warn_unused_folds(self)
        if arrays is None:
            raise ValueError(
                f"{type(self).__name__} {method.unmergeable_reason.strip()} (got "
                f"{what}); {method.unmergeable_alternative}"
            )
        key_seed = check_random_seed(check_random_state(self.random_state))
        design = GroupDesign(1, ((0, ()),))
        delta = 1.0 - self.confidence_level
        source = _EstimateTap(source, key_seed)
        results, surrogate, n_positive = cross_fit(
            method, source, [design], delta, key_seed
        )
        n = source.n_samples
        estimate = self._estimate_of(source, column)
        self._set_result(method, results, surrogate, n, key_seed, estimate)
        self._keep_data_summary(arrays, source, n_positive)
        return self

    def _set_result(self, method, results, surrogate, n_samples, key_seed, estimate):
        super()._set_result(method, results, surrogate, n_samples, key_seed, estimate)
        self.method_ = "cells" if isinstance(method, _TVCellsMethod) else "denoise"
        if isinstance(method, _TVCellsMethod):
            info = results[0].info
            terms = results[0].terms
            self.terms_ = {
                "cells_upper": terms["validation_mean"] + terms["block_limits"],
                "transfer_upper": terms["transfer_upper"],
                "oscillation": terms["oscillation"],
                "cells_lower": info["cells_lower"],
                "transfer_lower": info["transfer_lower"],
                "n_blocks": info["n_blocks"],
                "largest_block_mass": info["largest_block_mass"],
            }

    def score(self, X, y):
        """Negated fixed-split certified bound on held-out data (greater is better).

        The denoising surrogate refit on all fitted data plays the training part and
        ``(X, y)`` the validation part, at the full ``1 - confidence_level``.

        The cell bound (``method='cells'``, and ``'auto'`` with
        ``guarantee='high_probability'``: the default) has no such bound, since its
        cells and their limits come from the rows they bound. Its score is the
        cell bound of ``(X, y)`` alone, with the same ``V`` and level: a certified
        bound on the held-out data that uses its labels and not the fitted rows
        (the fit only supplies ``classes_``).

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Held-out scores, independent of the data passed to ``fit``.
        y : array-like of shape (n_samples,)
            Held-out labels, from the classes seen in ``fit``.

        Returns
        -------
        float
            ``-min(U, 1)`` where ``U`` is the certified bound on the held-out data.
        """
        if self._resolved_method() != "cells":
            return super().score(X, y)
        check_is_fitted(self)
        scores = check_scores(self, X)
        check_held_out_labels(self, y, scores.shape[0])
        positive = self.classes_[1] if self.pos_label is None else self.pos_label
        labels = column_or_1d(y) == positive
        held_out = type(self)(**{**self.get_params(), "pos_label": None})
        return -min(held_out.fit(scores, labels).bound_, 1.0)

    def predict(self, X):
        """The TV-denoised surrogate used by the bound, not a recalibration map.

        The step function :attr:`surrogate_`, refit on all fitted data: the 1-D
        total-variation denoising of the labels in score order, from which the
        bound's terms are computed. The denoising pulls the function towards a
        constant, so it is flat below its first jump and above its last. For 10**5
        perfectly calibrated scores, uniform on [0, 1], it is about 0.1 for every
        score below 0.1 and 0.9 above 0.9 (0.16 and 0.83 at 10**4): the denoising's
        flattening, not the model's over-confidence, and a worse fit than the scores
        themselves (15-bin ECE of ``predict`` on new data 0.012 against 0.0012 for
        the scores). Do not use it to recalibrate; fit a recalibrator (for example
        :class:`~sklearn.isotonic.IsotonicRegression`) on other data instead.

        With ``method='cells'``: the mean label of each block on the cell the block
        owns (``[first score of the block, first score of the next)``; the first
        from 0, the last to 1), a step function fitted on the same rows as the
        bound: histogram binning with equal-count bins that never split a tie. Not
        monotone, and not certified; the bound does not use it.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Scores in [0, 1], or a ``predict_proba`` output.

        Returns
        -------
        ndarray of shape (n_samples,)
            The denoised surrogate (or the block means) at the scores.
        """
        return super().predict(X)

    def _vacuous_advice(self):
        cells = self._resolved_method() == "cells"
        rate = "n**(-1/3)" if cells else "n**(-1/4)"
        return (
            f"{super()._vacuous_advice()} TV's shrinks slowly (like {rate}): "
            "NWCalibrationBound on scores perturbed with SechPerturbedClassifier (or "
            "perturb_scores), the tightest of the bounds, needs far fewer labels."
        )

    def _display_curve(self, low, high, n_grid=None):
        """What the display draws: the step function ``predict``, no band."""
        grid = curve_grid(low, high, n_grid)
        return DisplayCurve(grid, self.predict(grid))

    @classmethod
    def _display_style(cls, guarantee, estimator=None):
        """The blocks' mean labels for a fitted cell bound, else the denoised steps
        with their flat ends hatched (the denoising flattens both ends)."""
        if getattr(estimator, "method_", None) == "cells":
            return CurveStyle(_CELLS_LEGEND, drawstyle="steps-post")
        return CurveStyle(
            _DENOISE_LEGEND, drawstyle="steps-post", flat_ends_note=_FLAT_NOTE
        )


# The display's legend of TV's curves (SPEC section 8): neither is a recalibration map.
_DENOISE_LEGEND = (
    "TV-denoised surrogate $\\hat\\eta$ (used by the bound, not a recalibration map);\n"
)
_CELLS_LEGEND = (
    "TV cells: block mean labels (used by the bound, not a recalibration map);\n"
)
_FLAT_NOTE = (
    "hatched: flat ends of the TV-denoised surrogate (below its first jump, above "
    "its\nlast): the denoising's flattening, not the model's"
)


@validate_params(
    {
        "y_true": ["array-like"],
        "y_prob": ["array-like"],
        **TVCalibrationBound._parameter_constraints,
    },
    prefer_skip_nested_validation=True,
)
def tv_bound(
    y_true,
    y_prob,
    *,
    V=1.0,
    pos_label=None,
    confidence_level=0.95,
    guarantee="high_probability",
    method="auto",
    cv=5,
    aggregate="mean",
    random_state=None,
    n_jobs=None,
):
    """Certified upper bound on the L1 calibration error under bounded variation.

    The functional form of :class:`TVCalibrationBound`: returns the same number as
    ``TVCalibrationBound(...).fit(y_prob, y_true).bound_``.

    Read more in the :ref:`User Guide <tv_bound>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        Predicted probabilities of the positive class, or a ``predict_proba`` output.

    V : float, default=1.0
        Assumed upper bound on the total variation of the calibration function on
        [0, 1]. Any monotone calibration function has total variation at most 1.
        **An assumption about how the scores were produced, not a tuning knob:
        never choose it from the data** (a bound tuned this way certifies
        nothing).

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
        Which form of Proposition 1. Both hold with probability at least
        ``confidence_level``. ``'high_probability'`` drops Corollary 2's Hoeffding term,
        which is redundant (the DKW term already covers it), and splits each fold's
        ``1 - confidence_level`` in three; ``'paper'`` is the published form (four
        shares and the extra term), to reproduce the paper's numbers. ``'paper'``
        needs ``method='denoise'`` (``'auto'`` resolves to it).

    method : {'auto', 'cells', 'denoise'}, default='auto'
        ``'denoise'``: the paper's TV denoising bound; ``'cells'``: the cell bound
        on all rows (no folds; ``cv`` and ``aggregate`` unused); ``'auto'``:
        ``'cells'``, or ``'denoise'`` with ``guarantee='paper'``.
        See :class:`TVCalibrationBound`.

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
    TVCalibrationBound : The estimator, with the terms and per-fold results.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import tv_bound
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20_000)
    >>> y = rng.uniform(size=20_000) < s  # perfectly calibrated: CE = 0
    >>> print(round(tv_bound(y, s, random_state=0), 3))
    0.14
    """
    if is_dask_collection(y_true) or is_dask_collection(y_prob):
        # The estimator says why this bound needs the rows in memory.
        Est = TVCalibrationBound
        Est(**{k: v for k, v in locals().items() if k in Est().get_params()}).fit(
            y_prob, y_true
        )
    labels, scores = check_prob_labels(y_true, y_prob, pos_label, "tv_bound")
    estimator = TVCalibrationBound(
        V=V,
        confidence_level=confidence_level,
        guarantee=guarantee,
        method=method,
        cv=cv,
        aggregate=aggregate,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    return estimator.fit(scores, labels).bound_
