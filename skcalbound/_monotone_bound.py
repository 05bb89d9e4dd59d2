"""``MonotoneCalibrationBound``: a certified interval for raw scores from a calibration
band, under a monotone calibration function (SPEC section 14)."""

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.isotonic import isotonic_regression
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import (
    FoldTerms,
    Passes,
    _BaseCalibrationBound,
    _BoundMethod,
    _EstimateTap,
    fold_result,
)
from ._chunks import (
    ArraySource,
    IterableSource,
    check_random_seed,
    is_dask_collection,
)
from ._compat import StrOptions, validate_params
from ._result import FoldResult, aggregate_folds
from ._splitting import stable_argsort
from ._surrogates._band import Band, band_interval, fit_band, maurer_pontil_term
from ._surrogates._band_grid import cell_stats_chunk, grid_interval, grid_size
from ._surrogates._step import tie_block_starts
from ._validation import (
    MonotonicityWarning,
    _user_stacklevel,
    check_prob_labels,
    check_scores,
    warn_if_vacuous,
)

# SPEC 14's terms that are not summands of the upper bound: in fold_results_'s info.
_INFO_TERMS = ("band_lower", "transfer_lower", "mean_band_width", "n_windows")


@dataclass(frozen=True)
class _SortedRows:
    """All rows in score order, each tie block in a uniformly random order: float64
    ``scores``, 0/1 ``labels`` and ``order`` (data positions)."""

    order: np.ndarray
    scores: np.ndarray
    labels: np.ndarray


def _sorted_rows(scores, labels, seed):
    """SPEC 14 step 1: the rows sorted by score, each tie block in a uniformly random
    order drawn from ``seed`` (never from the data), so that the order inside a tie
    block does not depend on the labels given the scores.

    A stable sort in data order, then :func:`_shuffle_tie_blocks`: the same law as
    SPEC's full permutation followed by a stable sort (see there), without
    permuting all ``n`` rows; with no tied scores nothing is drawn.
    """
    order, sorted_scores = stable_argsort(scores)
    order = _shuffle_tie_blocks(order, sorted_scores, seed)
    return _SortedRows(order, sorted_scores, labels.take(order))


def _shuffle_tie_blocks(order, sorted_scores, seed):
    """``order`` (a sort by score) with the rows of every tie block in a uniformly
    random order: ranks from one uniform permutation of the ``m`` tied positions,
    drawn from ``seed``, then a sort of the tied positions by (block, rank).

    Why this is SPEC 14 step 1 (a uniform permutation ``pi`` of all rows, then a
    stable sort). The proof (Theorem 1) needs only that, given the scores, the order
    inside each tie block is uniformly random and independent of the labels; the
    order between blocks is fixed by the scores. After ``pi`` and a stable sort, the
    rows of a block stand in the relative order ``pi`` gives them: uniform over the
    block's orderings, independently across blocks (``pi`` restricted to disjoint
    sets of rows), and independent of the data. Here the ranks are a uniform
    permutation of the tied positions, independent of the data, so the same holds
    for the relative order of the ranks inside each block: given the data, the
    sequence of (score, label, row) in sorted order has exactly the same law, only
    the numbers drawn for a given seed differ. The ranks are distinct integers, so
    no tie between two random keys ever falls back on the data order (as float keys
    could). Modifies ``order`` in place and returns it.
    """
    tied = sorted_scores[1:] == sorted_scores[:-1]
    if not tied.any():
        return order
    in_block = np.zeros(sorted_scores.shape[0], dtype=bool)
    in_block[1:] = tied
    in_block[:-1] |= tied
    positions = np.flatnonzero(in_block)
    m = positions.shape[0]
    # Block number of each tied position (a block starts at a tied position that
    # does not tie with the one before it); key = block * m + rank is distinct.
    first_in_block = np.ones(m, dtype=bool)
    first_in_block[1:] = ~tied[positions[1:] - 1]
    key = np.cumsum(first_in_block, dtype=np.int64)
    key *= m
    key += np.random.default_rng(seed).permutation(m)
    order[positions] = order[positions[np.argsort(key)]]
    return order


@dataclass(frozen=True)
class _LevelData:
    """What a fit keeps to recompute its interval at another level without the data
    (SPEC 14.1): the sorted ``scores`` and 0/1 ``labels`` (tie blocks in the fit's
    random order) and, for the cross-fitted variant, ``designs``: per design of
    splits the sorted rows' group ids and its ``(validation, train)`` splits."""

    scores: np.ndarray
    labels: np.ndarray
    designs: tuple = None


@dataclass(frozen=True)
class MonotoneFit:
    """The band fitted on all rows and the isotonic regression inside it: ``band``
    (:class:`Band`), ``isotonic_scores`` and ``isotonic_values`` (the isotonic fit at
    the distinct scores, interpolated linearly between them and held constant
    beyond, as :class:`~sklearn.isotonic.IsotonicRegression` with
    ``out_of_bounds='clip'`` predicts), ``n_train`` and ``estimate`` (the isotonic
    plug-in ``mean |s - iso(s)|`` over the rows). Calling it gives the isotonic fit
    clipped into the band. ``level_data`` (private) is what the interval at another
    level is recomputed from (``calibration_test``'s p-values)."""

    band: Band
    isotonic_scores: np.ndarray
    isotonic_values: np.ndarray
    n_train: int
    estimate: float
    level_data: _LevelData = field(default=None, repr=False, compare=False)

    def __call__(self, scores):
        fitted = np.interp(scores, self.isotonic_scores, self.isotonic_values)
        lower, upper = self.band.lower_at(scores), self.band.upper_at(scores)
        return np.minimum(np.maximum(fitted, lower), upper)


def _isotonic(rows):
    """The isotonic regression of the labels on the scores (increasing), at the
    distinct scores: the weighted regression of the tie blocks' label means, which is
    what :class:`~sklearn.isotonic.IsotonicRegression` fits on all rows. Returns the
    distinct scores, the fitted values there and the rows per score (None: one
    each)."""
    n = rows.scores.shape[0]
    if not np.any(rows.scores[1:] == rows.scores[:-1]):  # no ties: one block a row
        return rows.scores, _pooled_isotonic(rows.labels, None), None
    first = tie_block_starts(rows.scores)
    counts = np.diff(first, append=n)
    positives = np.add.reduceat(rows.labels, first, dtype=np.int64)
    return rows.scores[first], _pooled_isotonic(positives / counts, counts), counts


def _pooled_isotonic(values, counts):
    """The increasing isotonic regression of ``values`` with weights ``counts``
    (None: 1 each), clipped to [0, 1], at every input.

    Runs of equal consecutive values are pooled first (a run of 0/1 labels is one
    point): an isotonic regression is constant on such a run (if ``f_i < f_{i+1}``
    with ``y_i = y_{i+1} = c``, moving both to ``c``, or the far one to the near one,
    lowers the squared loss and keeps the order), so the fit is the same on far
    fewer points, without ``n``-long weight and copy arrays.
    """
    m = values.shape[0]
    first = np.flatnonzero(values[1:] != values[:-1])
    first += 1
    first = np.concatenate([[0], first])
    lengths = np.diff(first, append=m)
    weights = lengths if counts is None else np.add.reduceat(counts, first)
    fitted = isotonic_regression(
        values[first].astype(float),
        sample_weight=weights.astype(float),
        increasing=True,
    )
    return np.repeat(np.clip(fitted, 0.0, 1.0, out=fitted), lengths)


def _monotone_fit(rows, band, level_data):
    """:class:`MonotoneFit` of sorted rows with their ``band``."""
    scores, values, counts = _isotonic(rows)
    residuals = np.subtract(scores, values)
    np.abs(residuals, out=residuals)
    total = residuals.sum() if counts is None else np.dot(counts, residuals)
    estimate = float(total / rows.scores.shape[0])
    n = int(rows.scores.shape[0])
    return MonotoneFit(band, scores, values, n, estimate, level_data)


def _full_sample_fold(interval, delta, estimate):
    """The one :class:`FoldResult` of SPEC 14 on all rows (``cv=None``) from its
    :class:`BandInterval` at ``delta``."""
    terms = interval.terms
    return FoldResult(
        terms={k: terms[k] for k in ("band_upper", "transfer_upper")},
        info={
            "n_train": int(interval.fit.lower.shape[0]),
            "n_validation": 0,
            "delta": float(delta),
            **{k: terms[k] for k in _INFO_TERMS},
        },
        estimate=estimate,
        lower=interval.lower,
    )


def _no_statistics(chunk):
    """A pass that gathers nothing (it completes a chunked source's fingerprint)."""
    return np.zeros(1)


def _grid_fit(interval):
    """:class:`MonotoneFit` of the grid variant (SPEC 14.6): its band, and the
    isotonic regression of the cells' label means (weighted by their rows) placed at
    the middle of each cell's extent."""
    a, b = interval.extents
    middles = 0.5 * (a + b)
    counts = interval.counts
    values = _pooled_isotonic(interval.positives / counts, counts)
    n = int(counts.sum())
    estimate = float(np.dot(counts, np.abs(middles - values)) / n)
    return MonotoneFit(interval.band, middles, values, n, estimate)


def _held_out(band, scores):
    """``(statistics, info)`` of a band on held-out scores (SPEC 14.2):
    ``h+ = max(x - L, U - x)`` and ``h- = dist(x, [L, U])``, their means and unbiased
    variances."""
    lower, upper = band.lower_at(scores), band.upper_at(scores)
    h_plus = np.maximum(scores - lower, upper - scores)
    h_minus = np.maximum(np.maximum(scores - upper, lower - scores), 0.0)
    m = int(scores.shape[0])
    ddof = 1 if m > 1 else 0
    statistics = (
        m,
        float(np.mean(h_plus)),
        float(np.var(h_plus, ddof=ddof)),
        float(np.mean(h_minus)),
        float(np.var(h_minus, ddof=ddof)),
    )
    return statistics, {"n_validation": m}


def _split_statistics(scores, labels, groups, splits, delta):
    """``(statistics, info)`` of each split of one design (SPEC 14.2) on sorted rows
    with group ids ``groups``: the band on the training rows at ``delta / 2``, its
    held-out statistics on the validation rows."""
    out = []
    for k, (validation, train) in enumerate(splits):
        in_train = np.isin(groups, train)
        in_validation = groups == validation
        n_validation = int(np.count_nonzero(in_validation))
        if n_validation < 2:
            raise ValueError(
                f"Split {k} has {n_validation} validation point(s); the "
                "cross-fitted MonotoneCalibrationBound needs at least 2 (its "
                "Maurer-Pontil term uses the unbiased variance)."
            )
        band = fit_band(scores[in_train], labels[in_train], delta / 2.0)
        statistics, info = _held_out(band.band, scores[in_validation])
        out.append((statistics, {"n_train": band.lower.shape[0], **info}))
    return out


@dataclass(frozen=True)
class _BandMethod(_BoundMethod):
    """SPEC 14.2 in the cross-fitting framework: per split the band on the training
    rows at ``delta / 2`` and Maurer–Pontil terms at ``delta / 4`` per side on the
    validation rows; ``delta`` is the split's share (``score``: the full level)."""

    window_bound: str = "kl"
    cross_fitted: bool = False
    min_train = 2
    level_free = False  # the band's window budgets depend on delta
    unmergeable_reason = (
        " with cv set needs all the rows in memory: each fold's band sorts its "
        "training rows"
    )
    unmergeable_alternative = (
        "use cv=None (chunks and Dask then get the band on the cells of a fixed "
        "score grid) or load the scores and labels as arrays (10**7 rows take "
        "about 0.1 GB)."
    )

    @property
    def nested_levels(self):
        # SPEC 14.1: with one band, the window sums and the gap positions do not
        # depend on delta and every budget shrinks as it grows, so the interval only
        # widens as delta decreases. The cross-fitted variant's Maurer-Pontil terms
        # use the variance of h+ and h- under a band fitted at delta, which need not
        # be monotone in delta: no p-value is claimed for it.
        return not self.cross_fitted

    def passes(self, source, design, *, delta, key_seed, check=None, check_counts=None):
        rows = _sorted_rows(source.scores, source.labels, key_seed)
        groups = design.groups(0, source.n_samples)[rows.order]
        groups = groups.astype(np.min_scalar_type(-max(design.n_groups, 1)))
        splits = _split_statistics(
            rows.scores, rows.labels, groups, design.splits, delta
        )
        refit = (rows, (groups, design.splits))
        return Passes(tuple(splits), int(np.count_nonzero(source.labels)), refit)

    def fold_terms(self, statistics, delta):
        m, mean_plus, var_plus, mean_minus, var_minus = statistics
        terms = {
            "validation_mean": mean_plus,
            "maurer_pontil": maurer_pontil_term(var_plus, m, delta / 4.0),
        }
        lower = mean_minus - maurer_pontil_term(var_minus, m, delta / 4.0)
        return FoldTerms(terms, {"validation_lower_mean": mean_minus}, lower)

    def surrogate(self, passes, folds, source, delta):
        rows = passes[0].refit[0]
        designs = tuple(run.refit[1] for run in passes)
        level_data = _LevelData(rows.scores, rows.labels, designs)
        band = fit_band(rows.scores, rows.labels, delta / 2).band
        return _monotone_fit(rows, band, level_data)

    def held_out(self, surrogate, scores):
        return _held_out(surrogate.band, scores)

    def interval_at(self, estimator, alpha):
        """``(lower, upper)`` of a fitted :class:`MonotoneCalibrationBound` at
        ``confidence_level = 1 - alpha``, recomputed from its sorted rows (the same
        numbers as a fit at that level with the same ``random_state``)."""
        data = estimator.surrogate_.level_data
        # calibration_test reaches alpha = 1e-300, where the KL limits' Newton slope
        # divides by expm1(u) = inf for limits that are 1 in floating point: the
        # slope's limit, and no warning to the user.
        with np.errstate(over="ignore"):
            if data.designs is None:
                interval = band_interval(data.scores, data.labels, alpha)
                folds = [_full_sample_fold(interval, alpha, math.nan)]
            else:
                delta = alpha / sum(len(splits) for _, splits in data.designs)
                folds = [
                    fold_result(self, statistics, delta, info)
                    for groups, splits in data.designs
                    for statistics, info in _split_statistics(
                        data.scores, data.labels, groups, splits, delta
                    )
                ]
        result = aggregate_folds(folds, estimator.aggregate, 1.0 - alpha, warn=False)
        return result.lower_bound, result.bound


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
        order of tied scores, and the subsample of validation points if there is one.
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

    def _fit_arrays(self, method, scores, labels):
        """Fit on validated float64 scores in [0, 1] and 0/1 labels."""
        if self.cv is not None:  # SPEC 14.2: the shared fold loop
            source = ArraySource(scores, labels)
            return self._fit_source(method, source, "arrays", arrays=(scores, labels))
        delta = 1.0 - self.confidence_level
        seed = check_random_seed(check_random_state(self.random_state))
        # The data order is not needed any more (it is with cv: fold ids).
        rows = dataclasses.replace(_sorted_rows(scores, labels, seed), order=None)
        interval = band_interval(rows.scores, rows.labels, delta)
        level_data = _LevelData(rows.scores, rows.labels)
        fit = _monotone_fit(rows, interval.fit.band, level_data)
        fold = _full_sample_fold(interval, delta, fit.estimate)
        # estimate_: the estimate every bound reports (_estimate), from the same seed.
        estimate = _EstimateTap(ArraySource(scores, labels), seed).estimate()
        self._set_result(method, [fold], fit, rows.scores.shape[0], seed, estimate)
        self._keep_data_summary((scores, labels), None, None)
        return self

    def _fit_source(self, method, source, what, arrays=None):
        if arrays is None and self.cv is None:  # chunks or Dask: SPEC 14.6
            return self._fit_grid(method, source)
        return super()._fit_source(method, source, what, arrays)

    def _fit_grid(self, method, source):
        """SPEC 14.6 on rows that are not in memory: one pass gathers per-cell
        counts, positives and score extents on a grid of ``grid_size(n)`` cells
        (merged by addition, so any chunking gives the same numbers), then the band
        with the cells as atoms. No randomness beyond the shared estimate's."""
        delta = 1.0 - self.confidence_level
        key_seed = check_random_seed(check_random_state(self.random_state))
        n = source.n_samples
        tap = _EstimateTap(source, key_seed)
        stats = tap.map_reduce(functools.partial(cell_stats_chunk, grid_size(n)))
        self.classes_, self.n_features_in_ = tap.classes, 1
        interval = grid_interval(stats, delta)
        fit = _grid_fit(interval)
        terms = interval.terms
        fold = FoldResult(
            terms={k: terms[k] for k in ("band_upper", "transfer_upper")},
            info={
                "n_train": n,
                "n_validation": 0,
                "delta": float(delta),
                **{k: terms[k] for k in (*_INFO_TERMS, "n_cells")},
            },
            estimate=fit.estimate,
            lower=interval.lower,
        )
        self._set_result(method, [fold], fit, n, key_seed, tap.estimate())
        if isinstance(source, IterableSource):  # the labels' half of the fingerprint
            source.map_reduce(_no_statistics)
        self._keep_data_summary(None, source, int(stats.positives.sum()))
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
        order of tied scores, and the subsample of validation points if there is one.
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
