"""Pass 2 of the grid NW certificate: evaluation sums of every split at once.

Inputs are assumed validated. Per split, sums of ``r = |s - eta_hat|`` and of
``min(g, 1)`` (and their squares) over the evaluated validation rows, query counts
per table cell (for ``C2``), the fallback queries and the training extremes next to
fallback regions; :func:`finish_split` turns them into :class:`SplitStatistics`.
"""

from dataclasses import dataclass, field

import numpy as np

from .._cells import _BLOCK, bin_of, merge_extremes
from ._kernel import KernelSums, bin_centres
from ._smoother import PaperTables, query_tables

# Rows per block when pass 2 only looks for the rows of marked cells (few numpy calls
# a block: larger blocks than the arithmetic's).
_MARK_BLOCK = 2**16


def residual_shift(tables):
    """A shift close to the mean of ``|s - eta_hat|`` over the queries, from the
    training tables alone (their counts and ``eta`` at the cell centres): sums of
    ``r - shift`` and its square then keep their digits, and, the shift being the same
    for every chunk, merge by addition."""
    with np.errstate(invalid="ignore"):
        r = np.abs(tables.eta - bin_centres(tables.n_bins))
    used = (tables.A0 > 0.0) & (tables.count > 0)
    if not used.any():
        return 0.0
    return float(np.dot(tables.count[used], r[used]) / tables.count[used].sum())


@dataclass
class EvaluationSums:
    """Pass 2's mergeable result for every split at once.

    Attributes
    ----------
    residuals : ndarray of shape (n_splits, 2)
        Per split, the sums of ``r - shift`` and of its square.
    smoothing : ndarray of shape (n_splits, 2)
        Per split, the sums of ``min(g, 1)`` and of its square.
    per_cell : ndarray
        Kernel queries per table cell (every split's tables, stacked).
    fallback : tuple of ndarray
        ``(scores, split)`` of the fallback queries, finished at the end.
    extremes : dict
        Per (group, needed cell): ``hi``, ``hi_count``, ``hi_pos``, ``lo``,
        ``lo_count``, ``lo_pos`` (``_cells.merge_extremes``).
    """

    residuals: np.ndarray
    smoothing: np.ndarray
    per_cell: np.ndarray
    fallback: tuple
    extremes: dict

    def __add__(self, other):
        return EvaluationSums(
            self.residuals + other.residuals,
            self.smoothing + other.smoothing,
            self.per_cell + other.per_cell,
            tuple(
                np.concatenate((a, b)) for a, b in zip(self.fallback, other.fallback)
            ),
            merge_extremes(self.extremes, other.extremes),
        )


def _extremes(scores, labels, key, size):
    hi = np.full(size, -np.inf)
    lo = np.full(size, np.inf)
    np.maximum.at(hi, key, scores)
    np.minimum.at(lo, key, scores)
    out = {"hi": hi, "lo": lo}
    for side, values in (("hi", hi), ("lo", lo)):
        at = scores == values[key]
        out[f"{side}_count"] = np.bincount(key[at], minlength=size).astype(np.float64)
        out[f"{side}_pos"] = np.bincount(key[at], weights=labels[at], minlength=size)
    return out


@dataclass(frozen=True)
class Plan:
    """What pass 2 needs from pass 1, the same for every chunk: the splits' smoothers
    (stacked tables), which group each split validates (``split_of_group``), the
    subsample thresholds, and the fine cells whose extremes to gather."""

    smoothers: tuple
    split_of_group: np.ndarray
    n_groups: int
    b1: float
    b2: float
    fine_bins: int
    # Per split: evaluate the rows whose key is at most it (None: every row).
    thresholds: np.ndarray = None
    needed: np.ndarray = None  # sorted fine cells
    # Kernel queries per table cell (stacked like ``eta``) when every row of a split's
    # validation group is evaluated: pass 1's counts, so pass 2 need not count them.
    # Then the residuals ``|s - eta|`` are summed by cell from pass 1's sums too
    # (:func:`cell_residual_sums`), and pass 2 sums only the rows of the few cells
    # whose ``eta`` lies inside the cell (``crossing``).
    query_counts: np.ndarray = None
    offsets: np.ndarray = field(init=False)
    shifts: np.ndarray = field(init=False)
    eta: np.ndarray = field(init=False)
    mean_score: np.ndarray = field(init=False)
    const: np.ndarray = field(init=False)
    kernel: np.ndarray = field(init=False)
    records: np.ndarray = field(init=False)
    # Per table cell: a fallback cell, or (with ``query_counts``) a crossing one: the
    # cells whose rows pass 2 reads one by one (SPEC 13 reads these alone).
    marked: np.ndarray = field(init=False)
    shift: np.ndarray = field(init=False)
    # Per table cell, :meth:`PaperTables.records` of the smoothers (None: Lemma 6
    # expanded at the query).
    paper: np.ndarray = field(init=False)
    # Facts about the plan that every block of pass 2 asks (computed once: the
    # kernel flag alone has one entry per table cell).
    no_fallback: bool = field(init=False)
    same_grid: bool = field(init=False)
    identity_splits: bool = field(init=False)

    @property
    def cell_residuals(self):
        return self.query_counts is not None

    def __post_init__(self):
        sizes = [s.tables.n_bins for s in self.smoothers] or [0]
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        set_("offsets", np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp))
        set_("shifts", np.array([s.shift for s in self.smoothers], dtype=np.intp))
        tables = [s.tables for s in self.smoothers]
        parts = [query_tables(t, self.b2) for t in tables]
        stack = lambda arrays: np.concatenate([*arrays, np.empty(0)])  # noqa: E731
        set_("eta", stack(t.eta for t in tables))
        set_("mean_score", stack(p[0] for p in parts))
        set_("const", stack(p[1] for p in parts))
        set_("kernel", stack(t.A0 for t in tables) > 0.0)
        # What a query reads of its cell, side by side (16 bytes, one cache line,
        # instead of one line per table: the tables are MBs at 10**7 rows and the
        # rows' cells are random): the mean score, and the constant part of g (> 0
        # inside the kernel, since sum w**2 > 0), whose sign and NaN carry the cell's
        # kind: NaN outside the kernel (fallback), negated where ``eta`` crosses the
        # cell (residuals summed per row; only with ``query_counts``). ``eta`` itself
        # is read for those rows only.
        const = np.where(self.kernel, self.const, np.nan)
        if self.cell_residuals:
            const[stack(crossing(t) for t in tables).astype(bool)] *= -1.0
        set_("records", np.stack([self.mean_score, const], axis=1))
        set_("marked", ~(const > 0.0))
        set_("shift", np.array([residual_shift(t) for t in tables] or [0.0]))
        paper = None
        if self.smoothers and self.smoothers[0].paper is not None:
            # Written in place: a stack per smoother and their concatenation are
            # MBs of fresh memory (page faults) on small fits with fine grids.
            paper = np.empty((self.offsets[-1] + sizes[-1], 8))
            for s, start in zip(self.smoothers, self.offsets):
                s.paper.records(bin_centres(s.n_bins), out=paper[start:][: s.n_bins])
        set_("paper", paper)
        if self.needed is None:
            set_("needed", np.empty(0, dtype=np.intp))
        # Every table cell has training points within the kernel.
        set_("no_fallback", bool(self.kernel.all()))
        set_(
            "same_grid",
            bool(self.n_splits) and bool(np.all(self.shifts == self.shifts[0])),
        )
        # Group ``g`` is split ``g``'s validation part (a partition: rows of group -1
        # do not occur).
        set_(
            "identity_splits",
            self.n_groups == self.n_splits
            and np.array_equal(self.split_of_group, np.arange(self.n_groups)),
        )

    @property
    def n_splits(self):
        return len(self.smoothers)

    def empty(self):
        k = self.n_splits
        size = self.n_groups * self.needed.shape[0]
        inf = np.full(size, np.inf)
        zeros = np.zeros(size)
        return EvaluationSums(
            np.zeros((k, 2)),
            np.zeros((k, 2)),
            np.zeros(self.eta.shape[0]),
            (np.empty(0), np.empty(0, dtype=np.intp)),
            {
                "hi": -inf,
                "lo": inf.copy(),
                "hi_count": zeros,
                "hi_pos": zeros.copy(),
                "lo_count": zeros.copy(),
                "lo_pos": zeros.copy(),
            },
        )


def needed_extremes(plan, scores, labels, groups, out):
    """The extremes per (group, needed cell) of one chunk (``out``: those of no
    row, :meth:`Plan.empty`'s)."""
    if not plan.needed.shape[0]:
        return out
    fine = bin_of(scores, plan.fine_bins)
    lookup = np.full(plan.fine_bins, -1, dtype=np.intp)
    lookup[plan.needed] = np.arange(plan.needed.shape[0])
    slot = lookup[fine]
    at = np.flatnonzero((slot >= 0) & (groups >= 0))
    if not at.size:
        return out
    key = groups[at].astype(np.intp) * plan.needed.shape[0] + slot[at]
    return _extremes(scores[at], labels[at], key, out["hi"].size)


def evaluation_sums(plan, scores, labels, groups, keys=None):
    """Pass 2 on one chunk. ``keys`` (uint64 per row) select the evaluated subsample
    when ``plan.thresholds`` is set."""
    out = plan.empty()
    out.extremes = needed_extremes(plan, scores, labels, groups, out.extremes)
    if plan.n_splits == 0:
        return out
    # The per-row arithmetic in blocks that stay in cache.
    parts = []
    for a in range(0, scores.shape[0], _BLOCK):
        b = slice(a, a + _BLOCK)
        k = None if keys is None else keys[b]
        parts.append(_evaluate_block(plan, scores[b], groups[b], k))
    residuals = [p[0] for p in parts if p is not None]
    if residuals:
        out.residuals = sum(residuals)
        out.smoothing = sum(p[1] for p in parts if p is not None)
        if plan.query_counts is None:
            # One count per table cell for the whole chunk (a count per block would
            # cost the size of the tables per block).
            cells = np.concatenate([p[2] for p in parts if p is not None])
            out.per_cell = np.bincount(cells, minlength=plan.eta.shape[0]).astype(
                np.float64
            )
        fallback = [p[3] for p in parts if p is not None and p[3] is not None]
        if fallback:
            out.fallback = tuple(
                np.concatenate([f[j] for f in fallback]) for j in range(2)
            )
    return out


def crossing(tables):
    """Per table cell: ``eta`` inside the cell's score range ``[q / G, (q + 1) / G]``
    (then ``s - eta`` changes sign within the cell); False where ``eta`` is NaN."""
    G = tables.n_bins
    edges = np.arange(G + 1) / G
    with np.errstate(invalid="ignore"):
        return (tables.eta >= edges[:-1]) & (tables.eta <= edges[1:])


def cell_residual_sums(tables, stats, shift):
    """Sums of ``r - shift`` and of its square, ``r = |s - eta_hat|``, over the points
    of ``stats`` (their cell sums on the tables' grid) in kernel cells that are not
    :func:`crossing`. There ``eta - s`` has the sign ``sigma`` of ``eta - c_q`` for
    every point of the cell, so ``r - shift = a - sigma t`` with ``a = |eta - c_q| -
    shift``: ``N a - sigma s1`` and ``N a**2 - 2 a sigma s1 + s2`` per cell."""
    use = (tables.A0 > 0.0) & (stats.count > 0) & ~crossing(tables)
    diff = tables.eta[use] - bin_centres(tables.n_bins)[use]
    sign = np.sign(diff)
    a = np.abs(diff) - shift
    n, s1 = stats.count[use], sign * stats.s1[use]
    first = n * a - s1
    second = (n * a - 2.0 * s1) * a + stats.s2[use]
    return np.array([first.sum(), second.sum()])


def _shifted_sums(r, split, shift, k):
    """Per split, the sums of ``r - shift`` and of its square, ``(k, 2)``."""
    r -= shift[split]
    out = np.empty((k, 2))
    out[:, 0] = np.bincount(split, weights=r, minlength=k)
    out[:, 1] = np.bincount(split, weights=np.square(r, out=r), minlength=k)
    return out


def evaluated_split(plan, groups, keys):
    """Per row, the split it is evaluated in (-1: none)."""
    if plan.identity_splits:
        split = np.asarray(groups, dtype=np.intp)
    else:
        split = plan.split_of_group[np.maximum(groups, 0)]
        split[groups < 0] = -1
    if plan.thresholds is not None:
        evaluated = keys <= plan.thresholds[np.maximum(split, 0)]
        split = np.where(evaluated, split, -1)
    return split


def evaluated_rows(plan, s, groups, keys):
    """The evaluated rows of a block, ``(scores, split)``, or None if there is none."""
    sp = evaluated_split(plan, groups, keys)
    if not plan.identity_splits or plan.thresholds is not None:
        rows = np.flatnonzero(sp >= 0)
        if not rows.size:
            return None
        s, sp = s[rows], sp[rows]
    return s, sp


def table_cells(plan, s, sp):
    """Per evaluated row (score ``s``, split ``sp``), its cell in the splits' stacked
    tables."""
    if plan.same_grid:  # every split's table has G cells: no per-row gathers
        G = plan.eta.shape[0] // plan.n_splits
        idx = bin_of(s, G)
        idx += np.multiply(sp, G, dtype=np.intp)
    else:
        idx = bin_of(s, plan.fine_bins)
        idx >>= plan.shifts[sp]
        idx += plan.offsets[sp]
    return idx


def marked_rows(plan, scores, groups, keys=None):
    """The evaluated rows of a chunk in marked cells (:attr:`Plan.marked`), as
    ``(scores, split)``, found in blocks that stay in cache."""
    parts = []
    for a in range(0, scores.shape[0], _MARK_BLOCK):
        b = slice(a, a + _MARK_BLOCK)
        rows = evaluated_rows(
            plan, scores[b], groups[b], None if keys is None else keys[b]
        )
        if rows is not None:
            s, sp = rows
            at = np.flatnonzero(plan.marked.take(table_cells(plan, s, sp)))
            parts.append((s[at], sp[at]))
    if not parts:
        return np.empty(0), np.empty(0, dtype=np.intp)
    return tuple(np.concatenate(part) for part in zip(*parts))


def _evaluate_block(plan, s, groups, keys):
    """``(sums of r - shift and its square per split, sum of min(g, 1), table cells of
    the kernel queries, fallback)`` of a block."""
    k = plan.n_splits
    rows = evaluated_rows(plan, s, groups, keys)
    if rows is None:
        return None
    s, sp = rows
    idx = table_cells(plan, s, sp)
    fallback = None
    record = np.take(plan.records, idx, axis=0)  # mean score, signed constant
    if not plan.no_fallback:
        kernel = ~np.isnan(record[:, 1])
        if not kernel.all():
            f = ~kernel
            fallback = (s[f], sp[f])
            s, sp, idx, record = s[kernel], sp[kernel], idx[kernel], record[kernel]
    if plan.cell_residuals:
        # Only the rows of crossing cells, where the smoother crosses the diagonal
        # (few rows, so one test per block first): the others are summed by cell.
        residuals = np.zeros((k, 2))
        const = record[:, 1]
        if const.size and const.min() < 0.0:
            cross = np.flatnonzero(const < 0.0)
            r = np.abs(plan.eta.take(idx[cross]) - s[cross])
            residuals = _shifted_sums(r, sp[cross], plan.shift, k)
    else:
        r = np.subtract(plan.eta.take(idx), s)
        np.abs(r, out=r)
        residuals = _shifted_sums(r, sp, plan.shift, k)
    d = np.subtract(record[:, 0], s)
    if plan.paper is None:
        g = np.abs(d)
    else:
        g = PaperTables.first_moment(np.take(plan.paper, idx, axis=0), s)
    g *= plan.b1
    d *= d
    d *= 0.5 * plan.b2
    g += d
    g += np.abs(record[:, 1], out=d)
    np.minimum(g, 1.0, out=g)
    smoothing = np.empty((k, 2))
    smoothing[:, 0] = np.bincount(sp, weights=g, minlength=k)
    smoothing[:, 1] = np.bincount(sp, weights=np.square(g, out=g), minlength=k)
    return (
        residuals,
        smoothing,
        idx,
        fallback,
    )


def training_extremes(plan, extremes, train_groups):
    """The extremes of a training set (the union of ``train_groups``) in the needed
    cells, from the per-group ones."""
    m = plan.needed.shape[0]
    parts = [
        {name: value[g * m : (g + 1) * m] for name, value in extremes.items()}
        for g in train_groups
    ]
    merged = parts[0]
    if m:  # (no cell next to a fallback region: nothing to merge)
        for part in parts[1:]:
            merged = merge_extremes(merged, part)
    return {"cells": plan.needed, **merged}


def _sum_c_squared(tables, per_cell, n, blocks):
    """``C2 = sum_i c_i**2`` of a split from its query counts per table cell
    ``per_cell``, ``n`` queries in all, and the fallback's weighted ``blocks``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.where(per_cell > 0, per_cell / tables.A0, 0.0)
    # c is read at the training points' cells only.
    trained = tables.count != 0.0
    sums = KernelSums([load], [tables.ker], [(0, 0)], trained, full_ok=True)
    kernel_load = sums(0)
    if sums.full:
        c_cell = kernel_load / n
    else:
        c_cell = np.zeros(tables.n_bins)
        c_cell[trained] = kernel_load / n
    c2 = float(np.dot(tables.count, c_cell * c_cell))
    if blocks is not None:
        values, sizes, weights = blocks
        unique, inverse = np.unique(values, return_inverse=True)
        extra = np.bincount(inverse.reshape(-1), weights=weights) / n
        size = np.zeros(unique.shape[0])
        size[inverse.reshape(-1)] = sizes
        base = c_cell[bin_of(unique, tables.n_bins)]
        c2 += float(np.dot(size, extra * (2.0 * base + extra)))
    return c2


@dataclass(frozen=True)
class SplitStatistics:
    """What one split's certificate reads, a function of the rows only (not of the
    level ``delta``).

    Attributes
    ----------
    n : int
        Evaluated validation points.
    residual_moments : tuple of float
        Mean and population variance of ``|eta_hat(s) - s|`` over them.
    smoothing_moments : tuple of float
        Mean and population variance of ``min(g(s), 1)`` over them.
    sum_c_squared : float or None
        ``C2 = sum_i c_i**2`` (the label-concentration term); None with the published
        Lemma 6, whose certificate has no such term.
    n_fallback : int
        Validation points with no training score within the kernel.
    """

    n: int
    residual_moments: tuple
    smoothing_moments: tuple
    sum_c_squared: float
    n_fallback: int

    @property
    def smoothing_mean(self):
        return self.smoothing_moments[0]


def finish_split(plan, k, sums, smoother):
    """The :class:`SplitStatistics` of split ``k`` (``smoother``: its smoother, with
    the extremes of its training set)."""
    residuals = sums.residuals[k].copy()
    g_sum, g2_sum = (float(x) for x in sums.smoothing[k])
    tables = smoother.tables
    start = plan.offsets[k]
    counts = sums.per_cell if plan.query_counts is None else plan.query_counts
    per_cell = counts[start : start + tables.n_bins]
    n = float(per_cell.sum())
    fb_scores = sums.fallback[0][sums.fallback[1] == k]
    blocks = None
    if fb_scores.size:
        eta_f, g_f, blocks = smoother.fallback(fb_scores, plan.b1, plan.b2)
        x = np.abs(eta_f - fb_scores) - plan.shift[k]
        residuals += (float(np.sum(x)), float(np.dot(x, x)))
        g_f = np.minimum(g_f, 1.0)
        g_sum += float(np.sum(g_f))
        g2_sum += float(np.dot(g_f, g_f))
        n += fb_scores.size
    mean = residuals[0] / n
    # C2 is read by the high-probability certificate only (the published Lemma 6
    # has no label-concentration term).
    c2 = None if plan.paper is not None else _sum_c_squared(tables, per_cell, n, blocks)
    return SplitStatistics(
        n=int(n),
        residual_moments=(
            float(plan.shift[k] + mean),
            max(float(residuals[1] / n - mean * mean), 0.0),
        ),
        smoothing_moments=(g_sum / n, max(g2_sum / n - (g_sum / n) ** 2, 0.0)),
        sum_c_squared=c2,
        n_fallback=int(fb_scores.size),
    )
