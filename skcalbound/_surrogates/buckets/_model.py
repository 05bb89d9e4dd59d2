"""``BucketGrid``: Lipschitz bucketing as a model of the two-pass driver.

Pass 1: per (group, cell) :class:`~._table.CellStats` on every grid; the plan: per
split its training table and flagged pairs; pass 2: :mod:`._sums`; finish: every
candidate's :class:`~._finish.CandidateSums` per split (``_passes.run``'s protocol).
"""

from dataclasses import dataclass

import numpy as np

from ._candidates import Stack, candidate_grids
from ._finish import finish_split
from ._flags import flagged_pairs
from ._sums import empty_sums, evaluation_sums, training_extremes
from ._table import BucketTable, Prepared, cell_stats

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
class BucketPlan:
    """The plan of a whole fit: one :class:`Plan` per grid, the training sizes of
    the splits and, per grid, the statistics of all rows (``None`` without refit)."""

    grids: tuple
    n_train: tuple
    totals: tuple


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


@dataclass(frozen=True)
class BucketGrid:
    """Lipschitz bucketing of every candidate ``(B, r)``, ``B`` in ``n_buckets`` and
    ``r < n_shifts``, for Lipschitz constant ``L``: the model of ``_passes.run``.

    ``squares``: compute the sums of ``min(g, 1)**2`` (Proposition 2 as published
    reads them); ``c2``: compute ``C2`` (the high-probability certificate reads it).
    ``refit``: also keep the statistics of all rows (for the refit surrogate).
    """

    n_buckets: tuple
    n_shifts: int
    L: float
    squares: bool = True
    c2: bool = True
    min_train: int = 1
    refit: bool = True

    @property
    def grids(self):
        """``(candidates, grids)`` of :func:`~._candidates.candidate_grids`."""
        return candidate_grids(self.n_buckets, self.n_shifts)

    def validation_cap(self, n_samples):
        return None  # every validation row is evaluated

    def first_pass(self, scores, labels, groups, n_groups):
        return Stack(
            cell_stats(scores, labels, groups, n_groups, K) for K, _ in self.grids[1]
        )

    def counts(self, sums):
        return sums[0].count

    def plan(self, sums, design, thresholds):
        candidates, grids = self.grids
        n_train = design.training_sizes(sums[0].count.sum(axis=1), self.min_train)
        everyone = range(design.n_groups)
        plans, totals = [], []
        for (K, members), stats in zip(grids, sums):
            trainings = [stats.merged(train) for _, train in design.splits]
            total = stats.merged(everyone) if self.refit else None
            needed = np.zeros(K, dtype=bool)
            for t in [*trainings, total] if self.refit else trainings:
                needed |= t.needed_mask()
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
                    np.flatnonzero(needed),
                )
            )
            totals.append(total)
        return BucketPlan(tuple(plans), tuple(n_train), tuple(totals))

    def second_pass(self, plan, scores, labels, groups, keys):
        return Stack(evaluation_sums(p, scores, groups) for p in plan.grids)

    def finish(self, plan, sums, second, design):
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
        first = sums[0]
        return BucketFit(
            tuple(per_split),
            plan.n_train,
            tuple(totals),
            int(round(float(first.count.sum()))),
            int(round(float(first.positives.sum()))),
        )
