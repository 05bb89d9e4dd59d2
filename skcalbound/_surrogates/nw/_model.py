"""``NWGrid``: the grid NW smoother's model for the two-pass driver (``_passes``).

A frozen dataclass with the smoother's constants and its rules: the fine grid, the
bandwidth candidates of each split, the refit bandwidth and the validation cap. It
implements the driver's protocol (``validation_cap``, ``first_pass``, ``counts``,
``plan``, ``second_pass``, ``finish``) and scores held-out rows with pass 2 alone.
"""

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from .._cells import cell_sums
from ._adaptive_grid import FoldContext, default_pilot, row_sums
from ._adaptive_grid import finish as adaptive_finish
from ._kernel import grid_size
from ._search import (
    BANDWIDTH_LIMITS,
    SEARCH_EXPONENTS,
    Pyramid,
    choose_bandwidths,
    coarsen,
    plugin_bandwidth,
)
from ._smoother import smoother_at
from ._sums import (
    Plan,
    cell_residual_sums,
    evaluated_rows,
    evaluation_sums,
    finish_split,
    marked_rows,
    merge_extremes,
    needed_extremes,
    training_extremes,
)

# The paper's evaluation-set rule (section 7): min(15000, max(5000, ceil(0.05 n))).
_AUTO_MIN, _AUTO_MAX, _AUTO_FRACTION = 5000, 15000, 0.05

# Fine grids up to which the splits' bandwidth searches run in lockstep, holding
# every split's training sums at once (1 MB an array).
_LOCKSTEP_MAX_BINS = 2**15

# The plug-in bandwidth (a Newton solve) is asked for the same few training sizes a
# dozen times per fit (candidates, grid, refit rule): solved once per (m, b1, b2).
_plugin = functools.lru_cache(maxsize=256)(plugin_bandwidth)


@dataclass(frozen=True)
class GridPlan:
    """What pass 2 reads (``evaluation``, a :class:`~._sums.Plan`), the smoother
    on all rows fitted in the same passes (``refit``), and what ``finish`` reads of
    pass 1: the rows and positive labels, and per split the sums of ``r - shift``
    and its square over the rows summed by cell (``residuals``, shape ``(n_splits,
    2)``; ``None`` when pass 2 sums every row)."""

    evaluation: Plan
    refit: object
    n_samples: int
    n_positive: int
    residuals: np.ndarray = None
    contexts: tuple = None  # SPEC 13: per split its ``_adaptive_grid.FoldContext``
    # SPEC 13 when every validation row is evaluated: per split the count and
    # offset sums of its validation rows on its table grid (a ``BinStats``), from
    # pass 1.
    counted: tuple = None


@dataclass
class AdaptivePass:
    """Pass 2's mergeable result with ``noise="adaptive"``: the training extremes
    next to fallback regions (for the smoothers' fallback, as section 10's
    ``EvaluationSums.extremes``) and per split its ``AdaptiveSums``."""

    extremes: dict
    folds: tuple

    def __add__(self, other):
        return AdaptivePass(
            merge_extremes(self.extremes, other.extremes),
            tuple(a + b for a, b in zip(self.folds, other.folds)),
        )


@dataclass(frozen=True)
class GridFit:
    """What the two passes give: per split its smoother (with its training extremes)
    and :class:`~._sums.SplitStatistics` (``noise="adaptive"``:
    :class:`~._adaptive.AdaptiveStatistics`), the smoother on all rows, and the row and
    positive counts."""

    smoothers: tuple
    statistics: tuple
    refit: object
    n_samples: int
    n_positive: int


@dataclass(frozen=True)
class NWGrid:
    """The grid NW smoother of a fit.

    Parameters
    ----------
    b1, b2 : float
        Bounds on ``|eta'|`` and ``|eta''|``.
    n_samples : int
        Rows of the data: the fine grid has 64 cells per bandwidth of ``n_samples``.
    bandwidth : "auto", "plugin" or float
        ``"auto"``: per split, the label-free search among the plug-in bandwidth
        times ``2**(k/2)``, ``k = -4..8``; ``"plugin"``: the plug-in bandwidth of
        the split's training size; a float: that bandwidth.
    tempering : float
        Exponent of the Epanechnikov kernel.
    max_validation : None, "auto" or int
        Evaluated validation rows per split (None: all; "auto": the paper's rule).
    lemma6 : {"expanded", "published"}
        Lemma 6 expanded at the query, or as published (with its own-cell bound).
    refit_bandwidth : float or None
        The bandwidth of the smoother on all rows (None: by :meth:`refit_rule` from
        the splits' bandwidths).
    noise : {"worst_case", "adaptive"}
        The splits' statistics of SPEC section 10, or of section 13 (variance-adaptive;
        Lemma 6 expanded only).
    h : float or None
        The sech perturbation's width when ``b1``, ``b2`` come from it: SPEC 13's
        relative branch (``noise="adaptive"`` only).
    """

    b1: float
    b2: float
    n_samples: int
    bandwidth: object = "auto"
    tempering: float = 1.2
    max_validation: object = None
    lemma6: str = "expanded"
    refit_bandwidth: float = None
    noise: str = "worst_case"
    h: float = None
    min_train = 1

    def __post_init__(self):
        if self.lemma6 not in ("expanded", "published"):
            raise ValueError(
                f"lemma6 must be 'expanded' or 'published'; got {self.lemma6!r}."
            )
        if self.noise not in ("worst_case", "adaptive"):
            raise ValueError(
                f"noise must be 'worst_case' or 'adaptive'; got {self.noise!r}."
            )
        if self.adaptive and self.published:
            raise ValueError("noise='adaptive' needs lemma6='expanded'.")

    @property
    def adaptive(self):
        """SPEC 13's statistics (variance-adaptive) instead of section 10's."""
        return self.noise == "adaptive"

    @property
    def published(self):
        """Lemma 6 as published (with its own-cell bound)."""
        return self.lemma6 == "published"

    # ------------------------------------------------------------- the rules

    def plugin(self, m):
        """The plug-in bandwidth (paper Appendix E) for ``m`` training scores."""
        return _plugin(m, self.b1, self.b2)

    def candidates(self, m):
        """The bandwidths the label-free search chooses from, for ``m`` training
        scores: the plug-in value times ``2**(k/2)``, ``k = -4..8`` (SPEC section 12)
        for ``"auto"``, else the one bandwidth."""
        if self.bandwidth == "plugin":
            return (self.plugin(m),)
        if self.bandwidth != "auto":
            return (float(self.bandwidth),)
        h = self.plugin(m)
        lo, hi = BANDWIDTH_LIMITS
        return tuple(sorted({min(max(h * 2.0**k, lo), hi) for k in SEARCH_EXPONENTS}))

    @property
    def fine_bins(self):
        # The plug-in bandwidth shrinks as the training size grows, so the one for n
        # points is below every fold's: 64 cells per bandwidth for it and every larger
        # candidate; the few smaller candidates get at least 16 (validity does not
        # depend on the grid, only tightness, and they are rarely chosen).
        candidates = self.candidates(self.n_samples)
        h = self.plugin(self.n_samples) if len(candidates) > 1 else candidates[0]
        return max(grid_size(h), grid_size(min(candidates), bins_per_bandwidth=16))

    def refit_rule(self, n, splits):
        """The bandwidth of the smoother on all ``n`` rows from the splits'
        ``(bandwidth, m)``: with ``"auto"``, the median over splits of ``k`` in ``h =
        h_plugin(m) * 2**(k/2)`` applied to ``h_plugin(n)`` (label-free like the
        search, whose objective the splits' training sets already evaluated)."""
        if self.refit_bandwidth is not None:
            return self.refit_bandwidth
        if self.bandwidth != "auto":
            return self.candidates(n)[0]
        steps = [2.0 * math.log2(h / self.plugin(m)) for h, m in splits]
        k = round(float(np.median(steps)))
        h = self.plugin(n) * 2.0 ** (k / 2.0)
        lo, hi = BANDWIDTH_LIMITS
        return min(max(h, lo), hi)

    def validation_cap(self, n):
        """Evaluated validation points per split (``None``: all); ``n=None`` (not yet
        known) gives the largest the rule can give."""
        if self.max_validation is None:
            return None
        if self.max_validation == "auto":
            if n is None:
                return _AUTO_MAX
            return min(_AUTO_MAX, max(_AUTO_MIN, math.ceil(_AUTO_FRACTION * n)))
        return int(self.max_validation)

    def refit_only(self, bandwidth):
        """This model for a design without splits, fitting the smoother on all rows
        at ``bandwidth``."""
        return replace(self, refit_bandwidth=bandwidth, max_validation=None)

    # ------------------------------------------------- the driver's protocol

    def first_pass(self, scores, labels, groups, n_groups, summed=True):
        return cell_sums(
            scores,
            labels,
            groups,
            n_groups,
            self.fine_bins,
            summed=summed,
        )

    def counts(self, sums):
        return sums.count

    def _smoothers(self, sums, design, total):
        """Each split's smoother: its bandwidth by the label-free search among its
        candidates, its tables read in pass 2 at the cells of its validation rows only
        (a fifth of the occupied cells with five folds). The searches of every split
        run in lockstep on small fine grids (where numpy's fixed costs dominate); on
        larger ones one split at a time, holding one split's training sums at a time."""
        fine_bins = self.fine_bins
        sizes = design.training_sizes(sums.count.sum(axis=1), self.min_train)
        step = max(len(sizes), 1) if fine_bins <= _LOCKSTEP_MAX_BINS else 1
        smoothers = []
        for first in range(0, len(sizes), step):
            splits = range(first, min(first + step, len(sizes)))
            pyramids = [
                Pyramid(sums.training(design.splits[k][1], total)) for k in splits
            ]
            bandwidths = choose_bandwidths(
                pyramids,
                [self.candidates(sizes[k]) for k in splits],
                self.tempering,
                self.b1,
                self.b2,
            )
            smoothers.extend(
                smoother_at(
                    pyramid,
                    h,
                    fine_bins,
                    sizes[k],
                    self.tempering,
                    published=self.published,
                    queries=sums.count[design.splits[k][0]] != 0.0,
                )
                for k, pyramid, h in zip(splits, pyramids, bandwidths)
            )
            del pyramids  # before the next split's are built
        return smoothers

    def plan(self, sums, design, thresholds):
        fine_bins = self.fine_bins
        total = sums.total()
        n_samples = int(round(float(sums.count.sum())))
        smoothers = self._smoothers(sums, design, total)
        h = self.refit_rule(n_samples, [(s.bandwidth, s.n_train) for s in smoothers])
        refit = smoother_at(
            Pyramid(total),
            h,
            fine_bins,
            n_samples,
            self.tempering,
            published=self.published,
        )
        needed = [s.needed_cells() for s in (*smoothers, refit)]
        query_counts = None
        if thresholds is None:
            # Every row of a validation group is a query: its table cell's count is
            # the group's fine-cell counts summed over the cell (fallback cells
            # excluded).
            query_counts = np.concatenate(
                [np.empty(0)]
                + [
                    sums.count[validation].reshape(s.tables.n_bins, -1).sum(axis=1)
                    * (s.tables.A0 > 0.0)
                    for s, (validation, _) in zip(smoothers, design.splits)
                ]
            )
        evaluation = Plan(
            tuple(smoothers),
            design.split_of_group,
            design.n_groups,
            self.b1,
            self.b2,
            fine_bins,
            thresholds=thresholds,
            needed=np.unique(np.concatenate(needed)).astype(np.intp),
            query_counts=query_counts,
        )
        contexts = residuals = counted = None
        if self.adaptive:
            pairs = [
                self._context(sums, smoother, validation)
                for smoother, (validation, _) in zip(smoothers, design.splits)
            ]
            contexts = tuple(context for context, _ in pairs)
            if evaluation.cell_residuals:
                counted = tuple(queries for _, queries in pairs)
        elif evaluation.cell_residuals:
            residuals = np.empty((len(smoothers), 2))
            for k, (smoother, (validation, _)) in enumerate(
                zip(smoothers, design.splits)
            ):
                queries = coarsen(sums.group(validation), fine_bins // smoother.n_bins)
                residuals[k] = cell_residual_sums(
                    smoother.tables, queries, evaluation.shift[k]
                )
        return GridPlan(
            evaluation,
            refit,
            n_samples,
            int(round(float(sums.positives.sum()))),
            residuals,
            contexts,
            counted,
        )

    def _context(self, sums, smoother, validation):
        """SPEC 13's :class:`~._adaptive_grid.FoldContext` of a split (the pilot from
        its ``validation`` group's sums), and those sums on the split's table grid."""
        tables = smoother.tables
        queries = coarsen(sums.group(validation), self.fine_bins // tables.n_bins)
        pilot = default_pilot(queries, tables.n_bins, tables.bandwidth, self.tempering)
        context = FoldContext.of(
            tables, smoother.training, pilot, self.b1, self.b2, self.h
        )
        return context, queries

    def second_pass(self, plan, scores, labels, groups, keys):
        evaluation = plan.evaluation
        if plan.contexts is None:
            return evaluation_sums(evaluation, scores, labels, groups, keys)
        # SPEC 13 reads of section 10's pass 2 only the fallback's extremes.
        extremes = needed_extremes(
            evaluation, scores, labels, groups, evaluation.empty().extremes
        )
        counted = plan.counted is not None
        if counted:
            # Only rows in crossing and fallback cells add to pass 1's cell sums:
            # found for every split at once.
            scores, split = marked_rows(evaluation, scores, groups, keys)
        else:
            rows = evaluated_rows(evaluation, scores, groups, keys)
            scores, split = (
                (np.empty(0), np.empty(0, dtype=np.intp)) if rows is None else rows
            )
        folds = tuple(
            row_sums(context, scores[split == k], counted)
            for k, context in enumerate(plan.contexts)
        )
        return AdaptivePass(extremes, folds)

    def finish(self, plan, second, design):
        evaluation = plan.evaluation
        smoothers = evaluation.smoothers
        folds = None
        if plan.contexts is not None:
            if second is None:
                empty = tuple(row_sums(c, np.empty(0)) for c in plan.contexts)
                second = AdaptivePass(evaluation.empty().extremes, empty)
            folds = second.folds
        elif second is None:
            second = evaluation.empty()
        if plan.residuals is not None:
            second.residuals += plan.residuals
        fitted, statistics = [], []
        for k, (smoother, (_, train)) in enumerate(zip(smoothers, design.splits)):
            extremes = training_extremes(evaluation, second.extremes, train)
            # (Its training sums are the contexts' only: not kept in the fit.)
            smoother = replace(smoother, extremes=extremes, training=None)
            fitted.append(smoother)
            if folds is None:
                statistics.append(finish_split(evaluation, k, second, smoother))
            else:
                statistics.append(
                    adaptive_finish(
                        plan.contexts[k],
                        folds[k],
                        smoother.nearest,
                        None if plan.counted is None else plan.counted[k],
                    )
                )
        everyone = tuple(range(design.n_groups))
        refit = replace(
            plan.refit,
            extremes=training_extremes(evaluation, second.extremes, everyone),
        )
        return GridFit(
            tuple(fitted),
            tuple(statistics),
            refit,
            plan.n_samples,
            plan.n_positive,
        )

    # ------------------------------------------------------- held-out rows

    def held_out(self, smoother, scores, keys=None, labels=None):
        """The statistics of ``smoother`` on held-out ``scores``: pass 2 alone, every
        row in one validation group; ``keys`` (one uint64 per row) choose the
        subsample when :meth:`validation_cap` is below the number of rows. Section
        10's :class:`~._sums.SplitStatistics`, or with ``noise="adaptive"`` SPEC 13's
        :class:`~._adaptive.AdaptiveStatistics`, whose pilot reads the held-out
        ``labels`` (0/1) and whose training sums are the smoother's ``training``."""
        n = scores.shape[0]
        thresholds = None
        cap = self.validation_cap(n)
        if cap is not None and cap < n:
            thresholds = np.array(
                [np.partition(keys, cap - 1)[cap - 1]], dtype=np.uint64
            )
        else:
            keys = None
        if self.adaptive:
            tables = smoother.tables
            G = tables.n_bins
            rows = cell_sums(scores, labels, np.zeros(n, dtype=np.intp), 1, G).group(0)
            pilot = default_pilot(rows, G, tables.bandwidth, self.tempering)
            context = FoldContext.of(
                tables, smoother.training, pilot, self.b1, self.b2, self.h
            )
            if keys is None:  # every row evaluated: the pilot's sums count them
                sums = row_sums(context, scores, counted=True)
                return adaptive_finish(context, sums, smoother.nearest, rows)
            evaluated = scores[keys <= thresholds[0]]
            return adaptive_finish(
                context, row_sums(context, evaluated), smoother.nearest
            )
        plan = Plan(
            (smoother,),
            np.zeros(1, dtype=np.intp),
            1,
            self.b1,
            self.b2,
            smoother.fine_bins,
            thresholds=thresholds,
        )
        sums = evaluation_sums(
            plan, scores, np.zeros(n), np.zeros(n, dtype=np.intp), keys
        )
        return finish_split(plan, 0, sums, smoother)
