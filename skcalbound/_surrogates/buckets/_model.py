"""``BucketGrid``: Lipschitz bucketing as a model of the two-pass driver.

Pass 1: per (group, cell) :class:`~._table.CellStats` on every grid; the plan: per
split its training table and flagged pairs; pass 2: :mod:`._sums`; finish: every
candidate's :class:`~._finish.CandidateSums` per split (``_passes.run``'s protocol).
"""

from dataclasses import dataclass

import numpy as np

from .._cells import bin_of
from . import _adaptive
from ._candidates import Stack, candidate_grids
from ._finish import finish_split
from ._flags import flagged_pairs
from ._sums import _extremes, empty_sums, evaluation_sums, training_extremes
from ._table import BucketTable, Prepared, cell_stats

# The share at which the candidates' stand-in noise is ranked (a ranking only).
_PROXY_DELTA = 1e-4
_TRIPLE_FIELDS = ("key", "slot", "served", "eta", "alpha", "beta", "gamma")


@dataclass(frozen=True)
class Plan:
    """What pass 2 needs on one grid, the same for every chunk.

    Per split its :class:`~._table.Training` (``trainings``) and, stacked over the
    splits (``split * K + cell``), the cells' ``count``, ``mean`` offset and ``m2``;
    ``slot`` numbers the (split, cell) pairs with training points (the others all
    at the last number, ``slot_base[-1]``), ``slot_base`` the first of each split.
    ``flagged``: per split the flagged ``(candidate, cell)`` pairs; ``triples``
    their coefficients sorted by ``key = split * K + cell`` (``n_flags`` and
    ``first`` per key), ``served`` numbering the buckets they serve
    (``served_keys``: ``split * n_buckets + bucket``). ``needed``: the cells whose
    extremes pass 2 gathers. ``squares`` / ``c2``: whether the sums of
    ``min(g, 1)**2`` / ``C2`` are computed.
    """

    n_cells: int
    candidates: tuple
    n_shifts: int
    L: float
    squares: bool
    c2: bool
    trainings: tuple
    split_of_group: np.ndarray
    n_groups: int
    needed: np.ndarray
    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    slot: np.ndarray
    slot_base: np.ndarray
    flagged: tuple
    triples: dict
    served_keys: np.ndarray
    n_flags: np.ndarray
    first: np.ndarray
    has_flags: np.ndarray

    @property
    def n_splits(self):
        return len(self.trainings)

    @classmethod
    def build(cls, grid, K, candidates, trainings, cells, split_of_group, needed):
        """The plan of ``grid`` (a :class:`BucketGrid`) on ``K`` cells for
        ``candidates``, per split its ``trainings`` and the ``cells`` where its
        flags matter (training points and queries)."""
        stack = lambda arrays: np.concatenate([*arrays, np.empty(0)])  # noqa: E731
        count = stack(t.count for t in trainings)
        occupied = count > 0
        slot = np.cumsum(occupied) - 1
        slot[~occupied] = np.count_nonzero(occupied)
        per_split = occupied.reshape(len(trainings), K).sum(axis=1)
        slot_base = np.concatenate(([0], np.cumsum(per_split))).astype(np.intp)
        nc = len(candidates)
        parts, flagged = [], []
        for s, (training, at) in enumerate(zip(trainings, cells)):
            table = BucketTable(
                Prepared(training, at), candidates, grid.n_shifts, grid.L
            )
            owner, pos = flagged_pairs(table)
            c = at[pos]
            flagged.append((owner, c))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                bucket, *coefficients, _ = table.terms_at(
                    owner, c, [x[pos] for x in table.prep.s2]
                )
            keys = (s * K + c, s * nc + owner, s * table.bounds[-1] + bucket)
            parts.append((*keys, *coefficients))
        triples = {
            name: np.concatenate(
                [np.empty(0, dtype=np.intp if k < 3 else float)] + [p[k] for p in parts]
            )
            for k, name in enumerate(_TRIPLE_FIELDS)
        }
        order = np.argsort(triples["key"], kind="stable")
        triples = {name: value[order] for name, value in triples.items()}
        served_keys, served = np.unique(triples["served"], return_inverse=True)
        triples["served"] = served.reshape(-1).astype(np.intp)
        n_flags = np.bincount(triples["key"], minlength=len(trainings) * K)
        first = np.concatenate(([0], np.cumsum(n_flags)[:-1])).astype(np.intp)
        return cls(
            n_cells=K,
            candidates=tuple(candidates),
            n_shifts=grid.n_shifts,
            L=grid.L,
            squares=grid.squares,
            c2=grid.c2,
            trainings=tuple(trainings),
            split_of_group=split_of_group,
            n_groups=len(split_of_group),
            needed=needed,
            count=count,
            mean=stack(t.mean_offset() for t in trainings),
            m2=stack(t.m2 for t in trainings),
            slot=slot.astype(np.intp, copy=False),
            slot_base=slot_base,
            flagged=tuple(flagged),
            triples=triples,
            served_keys=served_keys.astype(np.intp),
            n_flags=n_flags.astype(np.intp),
            first=first,
            has_flags=n_flags > 0,
        )


@dataclass(frozen=True)
class ExtremesPlan:
    """What pass 2 gathers on one grid in SPEC 13 mode: per (group, ``needed`` cell)
    the largest and smallest score (the fallback of queries in empty buckets and the
    refit surrogate), with each split's training statistics."""

    n_cells: int
    n_groups: int
    needed: np.ndarray
    trainings: tuple


@dataclass(frozen=True)
class Extremes:
    """Per (group, needed cell) the largest (``hi``) and smallest (``lo``) score;
    merged by max / min."""

    hi: np.ndarray
    lo: np.ndarray

    def __add__(self, other):
        return Extremes(np.maximum(self.hi, other.hi), np.minimum(self.lo, other.lo))

    @classmethod
    def of(cls, plan, scores, groups):
        out = _extremes(plan, scores, bin_of(scores, plan.n_cells), groups)
        return cls(out["hi"], out["lo"])

    def as_dict(self):
        return {"hi": self.hi, "lo": self.lo}


@dataclass(frozen=True)
class Chosen:
    """One split's SPEC 13 statistics: the indices (into the candidates) of the
    evaluated ones, their :class:`~.._surrogates.nw._adaptive.AdaptiveStatistics`,
    and how many candidates the union bound pays for."""

    indices: tuple
    statistics: tuple
    n_candidates: int

    @property
    def n(self):
        return self.statistics[0].n


@dataclass(frozen=True)
class BucketPlan:
    """The plan of a whole fit: one :class:`Plan` per grid, the training sizes of
    the splits, per grid the statistics of all rows (``None`` without refit), and
    the number of rows and of positive labels."""

    grids: tuple
    n_train: tuple
    totals: tuple
    n_samples: int
    n_positive: int
    contexts: tuple = None
    split_of_group: np.ndarray = None


def _rows_and_positives(sums):
    """The number of rows and of positive labels in pass 1's ``sums`` (its first
    grid's)."""
    first = sums[0]
    return tuple(int(round(float(a.sum()))) for a in (first.count, first.positives))


@dataclass(frozen=True)
class BucketFit:
    """What the two passes give: per split the :class:`~._finish.CandidateSums` of
    every candidate (in the order of ``candidates``), the training set sizes, per
    grid the statistics of all rows with their extremes (the refit surrogate), the
    number of rows and of positive labels."""

    sums: tuple
    n_train: tuple
    totals: tuple
    n_samples: int
    n_positive: int

    @classmethod
    def of(cls, per_split, plan, totals):
        """From the per-split results, the plan and the refit statistics."""
        return cls(
            tuple(per_split),
            plan.n_train,
            tuple(totals),
            plan.n_samples,
            plan.n_positive,
        )


@dataclass(frozen=True)
class BucketGrid:
    """Lipschitz bucketing of every candidate ``(B, r)``, ``B`` in ``n_buckets`` and
    ``r < n_shifts``, for Lipschitz constant ``L``: the model of ``_passes.run``.

    ``squares``: compute the sums of ``min(g, 1)**2`` (Proposition 2 as published
    reads them); ``c2``: compute ``C2`` (the high-probability certificate reads it).
    ``refit``: also keep the statistics of all rows (for the refit surrogate).
    ``noise="adaptive"``: SPEC 13's certificate with bucket weights, evaluated for
    the ``n_chosen`` candidates of each split that :func:`~._adaptive.proxy_bounds`
    ranks first for the upper bound and those it ranks first for the lower bound
    (``h``: h-mode, the relative branch and the pointwise ``L_v``).
    """

    n_buckets: tuple
    n_shifts: int
    L: float
    squares: bool = True
    c2: bool = True
    min_train: int = 1
    refit: bool = True
    noise: str = "worst_case"
    h: float = None
    n_chosen: int = 2

    @property
    def grids(self):
        """``(candidates, grids)`` of :func:`~._candidates.candidate_grids`."""
        return candidate_grids(self.n_buckets, self.n_shifts)

    def validation_cap(self, n_samples):
        return None  # every validation row is evaluated

    def first_pass(self, scores, labels, groups, n_groups, summed=True):
        # Bucket grids are small: always summed.
        return Stack(
            cell_stats(scores, labels, groups, n_groups, K) for K, _ in self.grids[1]
        )

    def counts(self, sums):
        return sums[0].count

    def plan(self, sums, design, thresholds):
        if self.noise == "adaptive":
            return self._adaptive_plan(sums, design)
        candidates, grids = self.grids
        n_train = design.training_sizes(sums[0].count.sum(axis=1), self.min_train)
        plans, totals = [], []
        for (K, members), stats in zip(grids, sums):
            trainings, total, needed = self._trainings(stats, design)
            # Flags matter where a split has training points and queries.
            cells = [
                np.flatnonzero((t.count > 0) & (stats.count[validation] > 0))
                for t, (validation, _) in zip(trainings, design.splits)
            ]
            chosen = [candidates[j] for j in members]
            plans.append(
                Plan.build(
                    self,
                    K,
                    chosen,
                    trainings,
                    cells,
                    design.split_of_group,
                    needed,
                )
            )
            totals.append(total)
        return BucketPlan(
            tuple(plans), tuple(n_train), tuple(totals), *_rows_and_positives(sums)
        )

    def _trainings(self, stats, design):
        """On one grid: each split's :class:`~._table.Training`, that of all rows
        (``None`` without refit) and the cells whose extremes pass 2 gathers."""
        trainings = [stats.merged(train) for _, train in design.splits]
        total = stats.merged(range(design.n_groups)) if self.refit else None
        needed = np.zeros(stats.count.shape[1], dtype=bool)
        for t in [*trainings, total] if self.refit else trainings:
            needed |= t.needed_mask()
        return trainings, total, np.flatnonzero(needed)

    def _adaptive_plan(self, sums, design):
        """Per grid its :class:`ExtremesPlan`; per split the contexts of the
        candidates that :func:`~._adaptive.proxy_bounds` ranks first."""
        _, grids = self.grids
        n_train = design.training_sizes(sums[0].count.sum(axis=1), self.min_train)
        plans, totals = [], []
        for (K, _), stats in zip(grids, sums):
            trainings, total, needed = self._trainings(stats, design)
            plans.append(ExtremesPlan(K, design.n_groups, needed, trainings))
            totals.append(total)
        contexts = tuple(
            self._choose(
                [p.trainings[s] for p in plans],
                [(x.count[v], x.positives[v], x.tsum[v]) for x in sums],
            )
            for s, (v, _) in enumerate(design.splits)
        )
        return BucketPlan(
            tuple(plans),
            tuple(n_train),
            tuple(totals),
            *_rows_and_positives(sums),
            contexts=tuple(contexts),
            split_of_group=design.split_of_group,
        )

    def _choose(self, trainings, validations):
        """The contexts ``(index, grid, BucketContext)`` of the ``n_chosen``
        candidates that :func:`~._adaptive.proxy_bounds` ranks first for each bound
        on one split
        (``trainings`` / ``validations``: per grid, its training statistics and its
        validation rows' count, positives and offset sum per cell)."""
        candidates, grids = self.grids
        upper = np.full(len(candidates), np.inf)
        lower = np.full(len(candidates), -np.inf)
        for (_, members), training, validation in zip(grids, trainings, validations):
            upper[members], lower[members] = _adaptive.proxy_bounds(
                training,
                validation,
                [candidates[j] for j in members],
                self.n_shifts,
                self.L,
                self.h,
                _PROXY_DELTA,
            )
        first = np.argsort(upper, kind="stable")[: self.n_chosen]
        first_lower = np.argsort(-lower, kind="stable")[: self.n_chosen]
        chosen = []
        for j in sorted(set(first.tolist()) | set(first_lower.tolist())):
            g = next(k for k, (_, members) in enumerate(grids) if j in members)
            context = _adaptive.BucketContext.of(
                trainings[g],
                validations[g][:2],
                candidates[j],
                self.n_shifts,
                self.L,
                self.h,
            )
            chosen.append((j, g, context))
        return tuple(chosen)

    def held_out(self, totals, scores, labels):
        """:class:`Chosen` of held-out ``scores`` and ``labels`` (the pilot) against
        the training statistics ``totals`` of every grid (with their extremes): the
        same choice and sums as a split of the fit, in one piece."""
        groups = np.zeros(scores.shape[0], dtype=np.intp)
        stats = [cell_stats(scores, labels, groups, 1, K) for K, _ in self.grids[1]]
        chosen = self._choose(
            list(totals), [(x.count[0], x.positives[0], x.tsum[0]) for x in stats]
        )
        statistics = tuple(
            _adaptive.finish(c, _adaptive.row_sums(c, scores), totals[g])
            for _, g, c in chosen
        )
        indices = tuple(j for j, _, _ in chosen)
        return Chosen(indices, statistics, len(self.grids[0]))

    def second_pass(self, plan, scores, labels, groups, keys):
        if self.noise != "adaptive":
            return Stack(evaluation_sums(p, scores, groups) for p in plan.grids)
        extremes = Stack(Extremes.of(p, scores, groups) for p in plan.grids)
        split = np.where(groups >= 0, plan.split_of_group[np.maximum(groups, 0)], -1)
        rows = []
        for s, chosen in enumerate(plan.contexts):
            x = scores[split == s]
            rows.append(Stack(_adaptive.row_sums(c, x) for _, _, c in chosen))
        return Stack((extremes, Stack(rows)))

    def _adaptive_finish(self, plan, second, design):
        candidates, _ = self.grids
        if second is None:
            none = np.empty(0, dtype=np.intp)
            extremes = Stack(Extremes.of(p, np.empty(0), none) for p in plan.grids)
            rows = [[_adaptive.empty_sums(c) for _, _, c in ch] for ch in plan.contexts]
        else:
            extremes, rows = second
        per_split = []
        for s, (chosen, (_, train)) in enumerate(zip(plan.contexts, design.splits)):
            statistics = []
            for (j, g, context), result in zip(chosen, rows[s]):
                p = plan.grids[g]
                training = p.trainings[s].with_extremes(
                    training_extremes(p, extremes[g].as_dict(), train)
                )
                statistics.append(_adaptive.finish(context, result, training))
            indices = tuple(j for j, _, _ in chosen)
            per_split.append(Chosen(indices, tuple(statistics), len(candidates)))
        totals = []
        for p, total, ext in zip(plan.grids, plan.totals, extremes):
            if total is not None:
                total = total.with_extremes(
                    training_extremes(p, ext.as_dict(), range(design.n_groups))
                )
            totals.append(total)
        return BucketFit.of(per_split, plan, totals)

    def finish(self, plan, second, design):
        if self.noise == "adaptive":
            return self._adaptive_finish(plan, second, design)
        candidates, grids = self.grids
        if second is None:
            second = Stack(empty_sums(p) for p in plan.grids)
        per_split = [[None] * len(candidates) for _ in design.splits]
        totals = []
        for (K, members), p, result, total in zip(
            grids, plan.grids, second, plan.totals
        ):
            for s, (training, (_, train)) in enumerate(zip(p.trainings, design.splits)):
                training = training.with_extremes(
                    training_extremes(p, result.extremes, train)
                )
                for j, value in zip(members, finish_split(p, s, result, training)):
                    per_split[s][j] = value
            if total is not None:
                everyone = range(design.n_groups)
                total = total.with_extremes(
                    training_extremes(p, result.extremes, everyone)
                )
            totals.append(total)
        return BucketFit.of(per_split, plan, totals)
