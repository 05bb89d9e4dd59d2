"""The monotone band's method object (``_base._BoundMethod``) and the fit it keeps:
rows sorted with tie blocks shuffled, the isotonic regression inside the band, and
the per-split statistics of the cross-fitted variant (SPEC 14.2)."""

import dataclasses
import functools
import math
from dataclasses import dataclass, field

import numpy as np
from sklearn.isotonic import isotonic_regression

from ._base import FoldTerms, Passes, _BoundMethod, fold_result
from ._result import FoldResult, aggregate_folds
from ._splitting import stable_argsort
from ._surrogates._band import Band, band_interval, fit_band, maurer_pontil_term
from ._surrogates._band_grid import cell_stats_chunk, grid_interval, grid_size
from ._surrogates._step import tie_block_starts

# SPEC 14's terms that are not summands of the upper bound: in fold_results_'s info.
_INFO_TERMS = ("band_lower", "transfer_lower", "mean_band_width", "n_windows")


@dataclass(frozen=True)
class _SortedRows:
    """All rows in score order, each tie block in a uniformly random order: float64
    ``scores``, 0/1 ``labels`` and ``order`` (data positions)."""

    order: np.ndarray
    scores: np.ndarray
    labels: np.ndarray


def sorted_rows(scores, labels, seed):
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
class _GroupedSplits:
    """One design of splits over the sorted rows: the group id of every sorted row
    (``groups``) and the design's ``(validation, train)`` ``splits``."""

    groups: np.ndarray
    splits: tuple


@dataclass(frozen=True)
class _BandRefit:
    """What a cross-fitted pass hands to the refit: the sorted ``rows``
    (:class:`_SortedRows`) and its ``design`` (:class:`_GroupedSplits`)."""

    rows: _SortedRows
    design: _GroupedSplits


@dataclass(frozen=True)
class _LevelData:
    """What a fit keeps to recompute its interval at another level without the data
    (SPEC 14.1): the sorted ``scores`` and 0/1 ``labels`` (tie blocks in the fit's
    random order) and, for the cross-fitted variant, ``designs``: one
    :class:`_GroupedSplits` per design of splits."""

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


def _full_sample_fold(interval, delta, estimate, n_train=None, extra=()):
    """The one :class:`FoldResult` of SPEC 14 on all rows (``cv=None``) from its
    :class:`BandInterval` at ``delta`` (on a grid, SPEC 14.6: a ``GridInterval`` of
    ``n_train`` rows, with the info terms ``extra``)."""
    terms = interval.terms
    if n_train is None:
        n_train = int(interval.fit.lower.shape[0])
    return FoldResult(
        terms={k: terms[k] for k in ("band_upper", "transfer_upper")},
        info={
            "n_train": n_train,
            "n_validation": 0,
            "delta": float(delta),
            **{k: terms[k] for k in (*_INFO_TERMS, *extra)},
        },
        estimate=estimate,
        lower=interval.lower,
    )


def fit_all_rows(scores, labels, delta, seed):
    """SPEC 14 on validated rows in memory (``cv=None``): ``(FoldResult,
    MonotoneFit)`` of the band on all rows at ``delta``, tie blocks in an order
    drawn from ``seed``."""
    # The data order is not needed any more (it is with cv: fold ids).
    rows = dataclasses.replace(sorted_rows(scores, labels, seed), order=None)
    interval = band_interval(rows.scores, rows.labels, delta)
    level_data = _LevelData(rows.scores, rows.labels)
    fit = _monotone_fit(rows, interval.fit.band, level_data)
    return _full_sample_fold(interval, delta, fit.estimate), fit


def fit_on_grid(source, delta):
    """SPEC 14.6 on rows that are not in memory: one pass gathers per-cell
    counts, positives and score extents on a grid of ``grid_size(n)`` cells
    (merged by addition, so any chunking gives the same numbers), then the band
    with the cells as atoms. Returns ``(FoldResult, MonotoneFit, n_positive)``."""
    n = source.n_samples
    stats = source.map_reduce(functools.partial(cell_stats_chunk, grid_size(n)))
    interval = grid_interval(stats, delta)
    fit = _grid_fit(interval)
    fold = _full_sample_fold(interval, delta, fit.estimate, n, extra=("n_cells",))
    return fold, fit, int(stats.positives.sum())


def no_statistics(chunk):
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


@dataclass(frozen=True)
class BandSplitStatistics:
    """A band on held-out rows (SPEC 14.2): ``n_validation`` rows, the mean and
    unbiased variance of ``h+ = max(x - L, U - x)`` (``mean_plus``, ``var_plus``)
    and of ``h- = dist(x, [L, U])`` (``mean_minus``, ``var_minus``)."""

    n_validation: int
    mean_plus: float
    var_plus: float
    mean_minus: float
    var_minus: float


def _held_out(band, scores):
    """``(BandSplitStatistics, info)`` of a band on held-out scores (SPEC 14.2)."""
    lower, upper = band.lower_at(scores), band.upper_at(scores)
    h_plus = np.maximum(scores - lower, upper - scores)
    h_minus = np.maximum(np.maximum(scores - upper, lower - scores), 0.0)
    m = int(scores.shape[0])
    ddof = 1 if m > 1 else 0
    statistics = BandSplitStatistics(
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
        rows = sorted_rows(source.scores, source.labels, key_seed)
        groups = design.groups(0, source.n_samples)[rows.order]
        groups = groups.astype(np.min_scalar_type(-max(design.n_groups, 1)))
        splits = _split_statistics(
            rows.scores, rows.labels, groups, design.splits, delta
        )
        refit = _BandRefit(rows, _GroupedSplits(groups, design.splits))
        return Passes(tuple(splits), int(np.count_nonzero(source.labels)), refit)

    def fold_terms(self, statistics, delta):
        st, m = statistics, statistics.n_validation
        terms = {
            "validation_mean": st.mean_plus,
            "maurer_pontil": maurer_pontil_term(st.var_plus, m, delta / 4.0),
        }
        lower = st.mean_minus - maurer_pontil_term(st.var_minus, m, delta / 4.0)
        return FoldTerms(terms, {"validation_lower_mean": st.mean_minus}, lower)

    def surrogate(self, passes, folds, source, delta):
        rows = passes[0].refit.rows
        designs = tuple(run.refit.design for run in passes)
        level_data = _LevelData(rows.scores, rows.labels, designs)
        band = fit_band(rows.scores, rows.labels, delta / 2).band
        return _monotone_fit(rows, band, level_data)

    def held_out(self, surrogate, scores, labels=None):
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
                delta = alpha / sum(len(d.splits) for d in data.designs)
                folds = [
                    fold_result(self, statistics, delta, info)
                    for design in data.designs
                    for statistics, info in _split_statistics(
                        data.scores, data.labels, design.groups, design.splits, delta
                    )
                ]
        result = aggregate_folds(folds, estimator.aggregate, 1.0 - alpha, warn=False)
        return result.lower_bound, result.bound
