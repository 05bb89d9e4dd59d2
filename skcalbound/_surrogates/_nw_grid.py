"""The NW certificate from mergeable statistics: no sort, any number of chunks.

SPEC sections 10-12. Every quantity of the high-probability NW fold bound is a sum
over data points of something that depends on the point and on per-cell arrays only,
so the computation is two map-reduce passes over the rows in any chunking:

pass 1 (:func:`cell_sums`)
    per (group, cell of the fine grid): count, positives and the sums of the offsets
    ``t = s - c_b`` and ``t**2`` (``CellSums``, merged by addition). A *group* is a
    cross-fitting fold (a partition: fold ``k`` trains on every group but ``k``) or, for
    an explicit split, its training or validation rows. From the training groups'
    sums alone come each fold's bandwidth (the label-free search of ``_nw_hp``), its
    kernel tables on its final grid, and which cells have no training point within
    the kernel (nearest-neighbour fallback).
pass 2 (:func:`evaluation_sums`)
    per validation point, ``r = |s - eta_hat|`` and ``min(g, 1)`` from the tables of
    its fold, reduced to sums of ``r - shift`` and its square and of ``min(g, 1)`` and
    its square, and the query count per table cell (for ``C2``). When every
    validation row is evaluated, ``r`` is summed by cell from pass 1's sums instead
    (``eta_hat - s`` has one sign over a cell that ``eta_hat`` does not cross), and
    only the rows of crossing cells row by row. And, for the few cells next to a
    fallback region, the largest and smallest training score with its count and
    positives (merged by max / min). Fallback queries are kept (they are points with
    no training score within a bandwidth, so few) and finished once the extremes are
    known.

Every number equals the in-memory one up to the order of the additions.

Lemma 6 in the published form (``guarantee="paper"``) needs ``sum_i w_i |s' - s_i|``.
Over the cells below and above the query's own cell the sign is known, so those parts
are one-sided convolutions of the cell sums (:class:`PaperTables`); over the query's
own cell, whose training points share one weight ``w_0``, Cauchy-Schwarz bounds the sum,
``w_0 sum_{i in c} |s' - s_i| <= w_0 sqrt(N_c sum_{i in c} (s' - s_i)**2)``, from the
cell's count and offset sums. That keeps ``g`` a bound on the published Lemma 6 (so the
published certificate keeps its meaning) without the cell's sorted scores.

Why hand-written: no library reduces kernel-smoother error sums by cell (the
convolutions are ``numpy``; the reductions are ``np.bincount``).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ._cells import (
    _BLOCK,
    CellSums,
    bin_of,
    cell_sums,
    merge_extremes,
    occupied_neighbours,
)
from ._nw import _kernel, bin_centres
from ._nw_hp import (
    HPTables,
    KernelSums,
    Pyramid,
    choose_bandwidths,
    coarsen,
    grid_size,
)

# Rows per block of the per-row arithmetic: its temporaries (and pass 2's gathered
# records, 16 bytes a row) stay in the core's cache.
# Fine grids up to which the splits' bandwidth searches run in lockstep, holding
# every split's training sums at once (1 MB an array).
_LOCKSTEP_MAX_BINS = 2**15


@dataclass(frozen=True)
class PaperTables:
    """Per cell ``q`` of a smoother's grid, what the published Lemma 6 adds: the
    normalised weight below and above the cell (``w_lo``, ``w_hi``), the weighted sums
    of ``s_i - c_q`` there (``p_lo``, ``p_hi``), the weight of one point of the cell
    itself (``w_own``) and the cell's count and offset sums. For a query at offset
    ``e`` from ``c_q``: ``sum_i w_i |s' - s_i| <= (e w_lo - p_lo) + (p_hi - e w_hi) +
    w_own sqrt(N (N e**2 - 2 e s1 + s2))``.

    Built at the computed cells of its :class:`HPTables`, NaN elsewhere until
    :meth:`complete` (``computed``: None when every cell is)."""

    w_lo: np.ndarray
    p_lo: np.ndarray
    w_hi: np.ndarray
    p_hi: np.ndarray
    w_own: np.ndarray
    count: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    computed: np.ndarray = field(default=None, repr=False, compare=False)

    @staticmethod
    def _sides(count, s1, tables, cells=None):
        """``w_lo``, ``p_lo``, ``w_hi``, ``p_hi`` and ``w_own`` at the cells of the
        mask ``cells`` (None: every cell), and whether they cover every cell."""
        offset, ker = _kernel(tables.n_bins, tables.bandwidth, tables.tempering)
        # Training cell b = q - k: offset k / G > 0 below the query's cell.
        below = np.where(offset > 0, ker, 0.0)
        above = np.where(offset < 0, ker, 0.0)
        kernels = [below, below * offset, above, above * offset]
        products = [(0, 0), (1, 0), (0, 1), (0, 2), (1, 2), (0, 3)]
        sums = KernelSums([count, s1], kernels, products, cells, full_ok=True)
        A0 = tables.A0 if sums.full else tables.A0[cells]
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / A0
            out = {
                "w_lo": sums(0) * inv,
                "p_lo": (sums(1) - sums(2)) * inv,
                "w_hi": sums(3) * inv,
                "p_hi": (sums(4) - sums(5)) * inv,
                "w_own": ker[(ker.shape[0] - 1) // 2] * inv,
            }
        return out, sums.full

    @classmethod
    def from_stats(cls, stats, tables):
        G = stats.count.shape[0]
        n, s1 = stats.count, stats.s1
        computed = tables.computed
        out, full = cls._sides(n, s1, tables, computed)
        if not full:
            for name, values in out.items():
                out[name] = np.full(G, np.nan)
                out[name][computed] = values
        if computed is not None:
            computed = computed.copy()
        return cls(**out, count=n, s1=s1, s2=stats.s2, computed=computed)

    def complete(self, cells, tables):
        """Compute the entries at ``cells`` not computed yet (``tables``: computed
        there)."""
        if self.computed is None:
            return
        missing = np.zeros(self.computed.shape[0], dtype=bool)
        missing[cells] = True
        missing &= ~self.computed
        if not missing.any():
            return
        out, full = self._sides(self.count, self.s1, tables, missing)
        for name, values in out.items():
            getattr(self, name)[missing] = values[missing] if full else values
        self.computed[missing] = True

    def records(self, centre, out=None):
        """Per cell, what a query reads, side by side (one cache line a row): count,
        ``s1``, ``s2``, ``w_own``, ``w_lo - w_hi``, ``p_hi - p_lo`` and the cell
        centre ``centre`` (padded to eight columns); written into ``out`` if given."""
        columns = [
            self.count,
            self.s1,
            self.s2,
            self.w_own,
            self.w_lo - self.w_hi,
            self.p_hi - self.p_lo,
            centre,
            np.zeros_like(centre),
        ]
        if out is None:
            return np.stack(columns, axis=1)
        for j, column in enumerate(columns):
            out[:, j] = column
        return out

    @staticmethod
    def first_moment(record, s):
        """Bound on ``sum_i w_i |s' - s_i|`` at queries ``s`` whose cells' rows of
        :meth:`records` are ``record``."""
        e = s - record[:, 6]
        n = record[:, 0]
        own = n * e
        own *= e
        own -= 2.0 * e * record[:, 1]
        own += record[:, 2]
        np.maximum(own, 0.0, out=own)
        own *= n
        np.sqrt(own, out=own)
        own *= record[:, 3]
        own += e * record[:, 4]
        own += record[:, 5]
        return own


@dataclass
class Smoother:
    """One training set's NW smoother on its final grid (``tables``), located on the
    fine grid of ``fine_bins`` cells (``shift``: fine cell ``c`` is table cell
    ``c >> shift``), with what its fallback needs: the occupied fine cells below and
    above every fine cell, and the extremes of the training scores in the cells next
    to a fallback region (``extremes``, set after pass 2); ``below`` and ``above`` are
    None when no table cell falls back."""

    tables: HPTables
    fine_bins: int
    n_train: int
    below: np.ndarray
    above: np.ndarray
    extremes: dict = field(default=None, repr=False)
    paper: PaperTables = field(default=None, repr=False)  # the published Lemma 6

    @property
    def shift(self):
        return int(math.log2(self.fine_bins // self.tables.n_bins))

    @property
    def bandwidth(self):
        return self.tables.bandwidth

    @property
    def n_bins(self):
        return self.tables.n_bins

    def needed_cells(self):
        """Fine cells whose extremes the fallback may read: the occupied cells next to
        every table cell with no training point within the kernel."""
        fallback = np.flatnonzero(self.tables.A0 <= 0.0)
        if not fallback.size:
            return np.empty(0, dtype=np.intp)
        first = fallback << self.shift
        last = ((fallback + 1) << self.shift) - 1
        cells = np.concatenate((self.below[first], self.above[last]))
        return np.unique(cells[(cells >= 0) & (cells < self.fine_bins)])

    def fallback(self, queries, b1, b2):
        """``eta``, ``g`` and the weighted blocks (score, size, weight per point) of
        the nearest-neighbour fallback at ``queries`` (in cells with ``A0 == 0``):
        equal weights on the training points at the nearest training score(s), both
        sides when equidistant, as ``_nw._nearest_neighbour``."""
        e = self.extremes
        fine = bin_of(queries, self.fine_bins)
        cb, ca = self.below[fine], self.above[fine]
        has_b, has_a = cb >= 0, ca < self.fine_bins
        pos_b = np.searchsorted(e["cells"], np.where(has_b, cb, e["cells"][0]))
        pos_a = np.searchsorted(e["cells"], np.where(has_a, ca, e["cells"][0]))
        s_below, s_above = e["hi"][pos_b], e["lo"][pos_a]
        d_below = np.where(has_b, queries - s_below, np.inf)
        d_above = np.where(has_a, s_above - queries, np.inf)
        d = np.minimum(d_below, d_above)
        count = np.zeros(queries.shape[0])
        positives = np.zeros(queries.shape[0])
        sides = []
        for use, value, c, p in (
            (d_below <= d_above, s_below, e["hi_count"][pos_b], e["hi_pos"][pos_b]),
            (d_above <= d_below, s_above, e["lo_count"][pos_a], e["lo_pos"][pos_a]),
        ):
            count += np.where(use, c, 0.0)
            positives += np.where(use, p, 0.0)
            sides.append((use, value, c))
        eta = positives / count
        g = b1 * d + 0.5 * b2 * d * d + 0.5 / np.sqrt(count)
        parts = [(value[use], c[use], 1.0 / count[use]) for use, value, c in sides]
        blocks = tuple(np.concatenate([part[k] for part in parts]) for k in range(3))
        return eta, g, blocks

    def table_cells(self, queries):
        """The table cells of ``queries``, the tables computed there."""
        q = bin_of(queries, self.tables.n_bins)
        if self.tables.computed is not None:
            self.tables.complete(q)
            if self.paper is not None:
                self.paper.complete(q, self.tables)
        return q

    def __call__(self, x):
        """The surrogate ``eta_hat`` at ``x`` (any order)."""
        x = np.asarray(x, dtype=np.float64)
        q = self.table_cells(x)
        eta = self.tables.eta[q]
        f = np.flatnonzero(self.tables.A0[q] <= 0.0)
        if f.size:
            eta[f] = self.fallback(x[f], 0.0, 0.0)[0]
        return eta

    def residuals_and_smoothing(self, b1, b2, x):
        """``|s - eta_hat|``, ``g`` (Lemma 6 expanded at the query, or as published
        with its own-cell bound when the smoother has ``paper`` tables) and the number
        of fallback queries at ``x``."""
        x = np.asarray(x, dtype=np.float64)
        q = self.table_cells(x)
        mean_score, const = _query_tables(self.tables, b2)
        d = mean_score[q] - x
        with np.errstate(invalid="ignore"):
            if self.paper is None:
                first = np.abs(d)
            else:
                records = self.paper.records(bin_centres(self.n_bins))
                first = PaperTables.first_moment(np.take(records, q, axis=0), x)
            g = b1 * first + 0.5 * b2 * d * d + const[q]
        r = np.abs(self.tables.eta[q] - x)
        f = np.flatnonzero(self.tables.A0[q] <= 0.0)
        if f.size:
            eta_f, g[f], _ = self.fallback(x[f], b1, b2)
            r[f] = np.abs(eta_f - x[f])
        return r, g, int(f.size)


def _query_tables(tables, b2):
    with np.errstate(invalid="ignore"):
        return tables.m1 + bin_centres(tables.n_bins), tables.constant(b2)


def smoother_at(
    pyramid,
    bandwidth,
    fine_bins,
    m,
    tempering,
    n_bins=None,
    paper=False,
    queries=None,
):
    """The smoother with a given bandwidth (grid: ``grid_size`` unless given); with
    ``paper``, the tables of the published Lemma 6 too. With ``queries`` (the fine
    cell counts of the rows that will query it), the tables are computed at the
    cells of those rows first, and at other cells when they are queried."""
    G = min(n_bins or grid_size(bandwidth), fine_bins)
    stats = pyramid.at(G)
    cells = None if queries is None else queries.reshape(G, -1).any(axis=1)
    tables = HPTables.from_stats(stats, bandwidth, tempering, cells=cells)
    # Read by the fallback only (A0 == 0 is exact at every cell, computed or not).
    below = above = None
    if (tables.A0 <= 0.0).any():
        below, above = occupied_neighbours(pyramid.at(fine_bins).count)
    extra = PaperTables.from_stats(stats, tables) if paper else None
    return Smoother(tables, fine_bins, int(m), below, above, paper=extra)


# ---------------------------------------------------------------------------- pass 2


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
    """Pass 2's mergeable result for every split at once."""

    residuals: np.ndarray  # per split: sums of r - shift and of its square, (k, 2)
    smoothing: np.ndarray  # per split: sums of min(g, 1) and of its square, (k, 2)
    per_cell: np.ndarray  # kernel queries per table cell (all splits' tables, stacked)
    fallback: tuple  # (scores, split) of the fallback queries, kept for the end
    extremes: (
        dict  # per (group, needed cell): hi, hi_count, hi_pos, lo, lo_count, lo_pos
    )

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
    thresholds: np.ndarray = (
        None  # per split: evaluate rows whose key <= it (None: all)
    )
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
        parts = [_query_tables(t, self.b2) for t in tables]
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
        set_("shift", np.array([residual_shift(t) for t in tables] or [0.0]))
        paper = None
        if self.smoothers and self.smoothers[0].paper is not None:
            # Written in place: a stack per smoother and their concatenation were
            # half the page faults of a fit at 10**3 rows with h = 2**-6 (MBs of
            # fresh memory a fit, ~1,800 faults of 3,400).
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


def evaluation_sums(plan, scores, labels, groups, keys=None):
    """Pass 2 on one chunk. ``keys`` (uint64 per row) select the evaluated subsample
    when ``plan.thresholds`` is set."""
    out = plan.empty()
    if plan.needed.shape[0]:
        fine = bin_of(scores, plan.fine_bins)
        lookup = np.full(plan.fine_bins, -1, dtype=np.intp)
        lookup[plan.needed] = np.arange(plan.needed.shape[0])
        slot = lookup[fine]
        at = np.flatnonzero((slot >= 0) & (groups >= 0))
        if at.size:
            key = groups[at].astype(np.intp) * plan.needed.shape[0] + slot[at]
            out.extremes = _extremes(
                scores[at], labels[at], key, out.extremes["hi"].size
            )
    if plan.n_splits == 0:
        return out
    # The per-row arithmetic in blocks that stay in cache (2-3x faster at 10**7 rows).
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


def _evaluate_block(plan, s, groups, keys):
    """``(sums of r - shift and its square per split, sum of min(g, 1), table cells of
    the kernel queries, fallback)`` of a block."""
    k = plan.n_splits
    if plan.identity_splits:
        sp = np.asarray(groups, dtype=np.intp)
    else:
        sp = plan.split_of_group[np.maximum(groups, 0)]
        sp[groups < 0] = -1
    evaluated = None
    if not plan.identity_splits:
        evaluated = sp >= 0
    if plan.thresholds is not None:
        inside = keys <= plan.thresholds[np.maximum(sp, 0)]
        evaluated = inside if evaluated is None else evaluated & inside
    if evaluated is not None:
        rows = np.flatnonzero(evaluated)
        if not rows.size:
            return None
        s, sp = s[rows], sp[rows]
    if plan.same_grid:  # every split's table has G cells: no per-row gathers
        G = plan.eta.shape[0] // k
        idx = bin_of(s, G)
        idx += np.multiply(sp, G, dtype=np.intp)
    else:
        idx = bin_of(s, plan.fine_bins)
        idx >>= plan.shifts[sp]
        idx += plan.offsets[sp]
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
        # (53 of 10**7 rows in the benchmark, so one test per block first): the
        # others are summed by cell.
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


def finish_split(plan, k, sums, smoother):
    """The statistics of split ``k``'s certificate: ``n``, residual moments,
    ``smoothing_mean``, ``sum_c_squared`` (None with the published Lemma 6) and
    ``n_fallback``."""
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
    return {
        "n": int(n),
        "residual_moments": (
            float(plan.shift[k] + mean),
            max(float(residuals[1] / n - mean * mean), 0.0),
        ),
        "smoothing_mean": g_sum / n,
        "smoothing_moments": (g_sum / n, max(g2_sum / n - (g_sum / n) ** 2, 0.0)),
        "sum_c_squared": c2,
        "n_fallback": int(fb_scores.size),
    }


# ---------------------------------------------------------------------- the two passes


def _smallest(keys, cap):
    if keys.shape[0] > cap:
        keys = np.partition(keys, cap - 1)[:cap]
    return keys


@dataclass
class FirstPass:
    """Pass 1's mergeable result: the cell sums and, with a validation subsample, the
    ``cap`` smallest row keys of every group."""

    sums: CellSums
    keys: list = None
    cap: int = None

    def _merged_keys(self, other):
        if self.keys is None:
            return None
        return [
            _smallest(np.concatenate((a, b)), self.cap)
            for a, b in zip(self.keys, other.keys)
        ]

    def __add__(self, other):
        return FirstPass(self.sums + other.sums, self._merged_keys(other), self.cap)

    def __iadd__(self, other):
        self.keys = self._merged_keys(other)
        self.sums += other.sums
        return self


def first_pass(chunk, design, fine_bins, cap=None, key_seed=None, check=None):
    """Pass 1 on a :class:`~skcalbound._chunks.Chunk` (``check``: called on its
    scores first, e.g. the tie check of chunked input)."""
    from .._splitting import SUBSAMPLE_STREAM, row_keys

    if check is not None:
        check(chunk.scores)
    groups = design.groups(chunk.start, chunk.n)
    sums = cell_sums(chunk.scores, chunk.labels, groups, design.n_groups, fine_bins)
    keys = None
    if cap is not None:
        k = row_keys(key_seed, chunk.start, chunk.n, SUBSAMPLE_STREAM)
        keys = [_smallest(k[groups == g], cap) for g in range(design.n_groups)]
    return FirstPass(sums, keys, cap)


def second_pass(chunk, plan, design, key_seed=None):
    from .._splitting import SUBSAMPLE_STREAM, row_keys

    groups = design.groups(chunk.start, chunk.n)
    keys = None
    if plan.thresholds is not None:
        keys = row_keys(key_seed, chunk.start, chunk.n, SUBSAMPLE_STREAM)
    return evaluation_sums(plan, chunk.scores, chunk.labels, groups, keys)


@dataclass(frozen=True)
class GridFit:
    """What the two passes give: per split its smoother and certificate statistics,
    the refit smoother (or None), and the fine grid's per-cell training sums."""

    splits: tuple  # of (Smoother, statistics dict)
    refit: object
    n_samples: int
    n_positive: int


def fit_design(
    source,
    design,
    *,
    fine_bins,
    candidates,
    tempering,
    b1,
    b2,
    min_train=1,
    cap_of=None,
    key_seed=None,
    refit_bandwidth=None,
    check=None,
    check_counts=None,
    paper=False,
):
    """Run both passes of ``design`` over ``source``.

    Parameters
    ----------
    candidates : callable
        ``candidates(m)``: the bandwidths the label-free search chooses from for a
        training set of ``m`` points.
    cap_of : callable or None
        ``cap_of(n_samples)``: evaluated validation points per split (None: all).
    refit_bandwidth : callable or None
        ``refit_bandwidth(n_samples, [(bandwidth, m) per split])``: the bandwidth of the
        smoother on all rows, fitted in the same passes (None: no refit).
    check, check_counts : callable or None
        Called on every chunk's scores in pass 1, and on the fine grid's counts of
        all rows after it (the tie check of ``h``).
    paper : bool
        Lemma 6 as published (with its own-cell bound, :class:`PaperTables`) instead
        of expanded at the query.
    """
    cap = None if cap_of is None else cap_of(getattr(source, "n_samples", None))
    p1 = source.map_reduce(
        lambda c: first_pass(c, design, fine_bins, cap, key_seed, check)
    )
    sums = p1.sums
    n_samples = int(round(float(sums.count.sum())))
    group_sizes = sums.count.sum(axis=1)
    total = sums.total()
    if check_counts is not None:
        check_counts(total.count)
    sizes = design.training_sizes(group_sizes, min_train)
    # Each split's bandwidth by the label-free search among its candidates, then its
    # tables, read in pass 2 at the cells of its validation rows only (a fifth of the
    # occupied cells with five folds: on a fine grid with few rows, kernel sums by
    # pairs at those cells instead of a convolution over every cell). The searches of
    # every split run in lockstep on small fine grids (where numpy's fixed costs
    # dominate); on larger ones one split at a time, holding one split's training
    # sums at a time.
    all_rows = Pyramid(total)
    step = max(len(sizes), 1) if fine_bins <= _LOCKSTEP_MAX_BINS else 1
    smoothers = []
    for first in range(0, len(sizes), step):
        splits = range(first, min(first + step, len(sizes)))
        pyramids = [Pyramid(sums.training(design.splits[k][1], total)) for k in splits]
        bandwidths = choose_bandwidths(
            pyramids, [candidates(sizes[k]) for k in splits], tempering, b1, b2
        )
        smoothers.extend(
            smoother_at(
                pyramid,
                h,
                fine_bins,
                sizes[k],
                tempering,
                paper=paper,
                queries=sums.count[design.splits[k][0]] != 0.0,
            )
            for k, pyramid, h in zip(splits, pyramids, bandwidths)
        )
        del pyramids  # before the next split's are built
    refit = None
    if refit_bandwidth is not None:
        h = refit_bandwidth(n_samples, [(s.bandwidth, s.n_train) for s in smoothers])
        refit = smoother_at(
            all_rows,
            h,
            fine_bins,
            sum(group_sizes),
            tempering,
            n_bins=grid_size(h),
            paper=paper,
        )
        refit.n_train = n_samples
    thresholds = None
    if p1.keys is not None:
        final_cap = cap_of(n_samples)
        thresholds = np.full(
            len(design.splits), np.iinfo(np.uint64).max, dtype=np.uint64
        )
        for k, (validation, _) in enumerate(design.splits):
            keys = p1.keys[validation]
            if group_sizes[validation] > final_cap:
                thresholds[k] = np.partition(keys, final_cap - 1)[final_cap - 1]
        if not (thresholds < np.iinfo(np.uint64).max).any():
            # No group is over the cap: every row is evaluated, so pass 2 takes the
            # uncapped path (the same sums, added in the same order, as cap None).
            thresholds = None
    needed = [s.needed_cells() for s in smoothers]
    if refit is not None:
        needed.append(refit.needed_cells())
    query_counts = None
    if thresholds is None:
        # Every row of a validation group is a query: its table cell's count is the
        # group's fine-cell counts summed over the cell (fallback cells excluded).
        query_counts = np.concatenate(
            [np.empty(0)]
            + [
                sums.count[validation].reshape(s.tables.n_bins, -1).sum(axis=1)
                * (s.tables.A0 > 0.0)
                for s, (validation, _) in zip(smoothers, design.splits)
            ]
        )
    plan = Plan(
        tuple(smoothers),
        design.split_of_group,
        design.n_groups,
        b1,
        b2,
        fine_bins,
        thresholds=thresholds,
        needed=np.unique(np.concatenate(needed)).astype(np.intp),
        query_counts=query_counts,
    )
    p2 = source.map_reduce(lambda c: second_pass(c, plan, design, key_seed))
    if p2 is None:
        p2 = plan.empty()
    if plan.cell_residuals:
        for k, (smoother, (validation, _)) in enumerate(zip(smoothers, design.splits)):
            queries = coarsen(sums.group(validation), fine_bins // smoother.n_bins)
            p2.residuals[k] += cell_residual_sums(
                smoother.tables, queries, plan.shift[k]
            )
    everyone = tuple(range(design.n_groups))
    results = []
    for k, (smoother, (_, train)) in enumerate(zip(smoothers, design.splits)):
        smoother.extremes = training_extremes(plan, p2.extremes, train)
        results.append((smoother, finish_split(plan, k, p2, smoother)))
    if refit is not None:
        refit.extremes = training_extremes(plan, p2.extremes, everyone)
    n_positive = int(round(float(sums.positives.sum())))
    return GridFit(tuple(results), refit, n_samples, n_positive)
