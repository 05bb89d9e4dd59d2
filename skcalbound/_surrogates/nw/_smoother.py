"""The grid NW smoother of one training set: its tables and Lemma 6 in both forms.

Inputs are assumed validated. :class:`HPTables` hold per cell the moments of the
normalised kernel weights (Lemma 6 expanded at the query); :class:`PaperTables` what
the published Lemma 6 adds; :class:`Smoother` is ``eta_hat`` with its
nearest-neighbour fallback. See ``docs/internals/nw.rst``.
"""

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .._cells import BinStats, bin_of, occupied_neighbours
from ._kernel import KernelSums, _dilate, _moments, bin_centres, grid_size, kernel


def _missing(computed, cells):
    """The mask of ``cells`` not ``computed`` yet (None: none is missing)."""
    if computed is None:
        return None
    missing = np.zeros(computed.shape[0], dtype=bool)
    missing[cells] = True
    missing &= ~computed
    return missing if missing.any() else None


def _filled(tables, values, missing):
    """Copies of the arrays of ``tables`` named in ``values``, with ``values`` (at the
    cells of ``missing``) written in."""
    out = {}
    for name, value in values.items():
        if value is not None:
            out[name] = getattr(tables, name).copy()
            out[name][missing] = value
    return out


@dataclass(frozen=True)
class HPTables:
    """Per-cell moments of the normalised kernel weights, for one training set.

    For a query ``s' = c_q + e``: ``sum w y = eta[q]``, ``sum w (s_i - s') = m1[q] -
    e``, ``sum w (s_i - s')**2 = var[q] + (m1[q] - e)**2``, ``sum w**2 = W2[q]``.
    ``A0[q] == 0`` means no training point within the kernel: nearest-neighbour
    fallback.

    Tables built for some cells only (``from_stats(..., cells=)``) hold NaN at the
    others, except ``A0 == 0`` at every fallback cell, until :meth:`complete` computes
    them (``computed``: which cells are; None when all are).
    """

    n_bins: int
    bandwidth: float
    tempering: float
    ker: np.ndarray
    count: np.ndarray
    A0: np.ndarray
    eta: np.ndarray
    m1: np.ndarray
    var: np.ndarray
    W2: np.ndarray
    # Of tables built for some cells only: the training sums, to complete them.
    stats: BinStats = field(default=None, repr=False, compare=False)
    computed: np.ndarray = field(default=None, repr=False, compare=False)

    @classmethod
    def from_stats(cls, stats, bandwidth, tempering, *, with_eta=True, cells=None):
        """The tables of the points of ``stats``; with ``cells`` (a mask), computed at
        those cells at least (at every cell if that is cheaper)."""
        G = stats.count.shape[0]
        offset, ker = kernel(G, bandwidth, tempering)
        moments, full = _moments(stats, offset, ker, cells, with_eta, full_ok=True)
        computed = None
        if not full:
            computed = cells.copy()
            for name, values in moments.items():
                if values is not None:
                    table = np.full(G, np.nan)
                    table[cells] = values
                    moments[name] = table
            # A0 is exact wherever it is 0 (no training point within the kernel's
            # positive reach), computed or not.
            reach = (np.count_nonzero(ker) - 1) // 2
            moments["A0"][~_dilate(stats.count != 0.0, reach)] = 0.0
        return cls(
            G,
            float(bandwidth),
            float(tempering),
            ker,
            stats.count,
            **moments,
            stats=None if computed is None else stats,
            computed=computed,
        )

    def completed(self, cells):
        """These tables computed at ``cells`` (table cells) too: a new object, or
        ``self`` when nothing is missing there."""
        missing = _missing(self.computed, cells)
        if missing is None:
            return self
        offset, ker = kernel(self.n_bins, self.bandwidth, self.tempering)
        moments, _ = _moments(self.stats, offset, ker, missing, self.eta is not None)
        return replace(
            self,
            **_filled(self, moments, missing),
            computed=self.computed | missing,
        )

    def constant(self, b2):
        """The part of ``g`` depending on the cell only: ``b2/2 var + sqrt(W2)/2``."""
        with np.errstate(invalid="ignore"):
            return 0.5 * b2 * self.var + 0.5 * np.sqrt(self.W2)


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
        offset, ker = kernel(tables.n_bins, tables.bandwidth, tables.tempering)
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

    def completed(self, cells, tables):
        """These tables computed at ``cells`` too (``tables``: computed there): a new
        object, or ``self`` when nothing is missing there."""
        missing = _missing(self.computed, cells)
        if missing is None:
            return self
        out, full = self._sides(self.count, self.s1, tables, missing)
        if full:
            out = {name: values[missing] for name, values in out.items()}
        return replace(
            self, **_filled(self, out, missing), computed=self.computed | missing
        )

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


@dataclass(frozen=True)
class Smoother:
    """One training set's NW smoother on its final grid (``tables``), located on the
    fine grid of ``fine_bins`` cells (``shift``: fine cell ``c`` is table cell
    ``c >> shift``), with what its fallback needs: the occupied fine cells below and
    above every fine cell, and the extremes of the training scores in the cells next
    to a fallback region (``extremes``, from pass 2); ``below`` and ``above`` are
    None when no table cell falls back."""

    tables: HPTables
    fine_bins: int
    n_train: int
    below: np.ndarray
    above: np.ndarray
    extremes: dict = field(default=None, repr=False)
    paper: PaperTables = field(default=None, repr=False)  # the published Lemma 6
    # The training sums on the table grid (a ``BinStats``): SPEC 13's contexts.
    training: object = field(default=None, repr=False)

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

    def nearest(self, queries):
        """The nearest training score(s) of ``queries`` (in cells with ``A0 == 0``):
        their distance ``d`` and, below and above, ``(use, score, count, positives)``
        (``use``: that side is at distance ``d``; both when equidistant)."""
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
        sides = (
            (d_below <= d_above, s_below, e["hi_count"][pos_b], e["hi_pos"][pos_b]),
            (d_above <= d_below, s_above, e["lo_count"][pos_a], e["lo_pos"][pos_a]),
        )
        return d, sides

    def fallback(self, queries, b1, b2):
        """``eta``, ``g`` and the weighted blocks (score, size, weight per point) of
        the nearest-neighbour fallback at ``queries`` (in cells with ``A0 == 0``):
        equal weights on the training points at the nearest training score(s), both
        sides when equidistant, as ``_nw._nearest_neighbour``."""
        d, nearest = self.nearest(queries)
        count = np.zeros(queries.shape[0])
        positives = np.zeros(queries.shape[0])
        sides = []
        for use, value, c, p in nearest:
            count += np.where(use, c, 0.0)
            positives += np.where(use, p, 0.0)
            sides.append((use, value, c))
        eta = positives / count
        g = b1 * d + 0.5 * b2 * d * d + 0.5 / np.sqrt(count)
        parts = [(value[use], c[use], 1.0 / count[use]) for use, value, c in sides]
        blocks = tuple(np.concatenate([part[k] for part in parts]) for k in range(3))
        return eta, g, blocks

    def completed(self, queries):
        """This smoother with its tables computed at the cells of ``queries`` too: a
        new object, or ``self`` when they are (always for a smoother on all rows)."""
        q = bin_of(queries, self.tables.n_bins)
        tables = self.tables.completed(q)
        if tables is self.tables:
            return self
        paper = None if self.paper is None else self.paper.completed(q, tables)
        return replace(self, tables=tables, paper=paper)

    def __call__(self, x):
        """The surrogate ``eta_hat`` at ``x`` (any order)."""
        x = np.asarray(x, dtype=np.float64)
        tables = self.completed(x).tables
        q = bin_of(x, tables.n_bins)
        eta = tables.eta[q]
        f = np.flatnonzero(tables.A0[q] <= 0.0)
        if f.size:
            eta[f] = self.fallback(x[f], 0.0, 0.0)[0]
        return eta

    def residuals_and_smoothing(self, b1, b2, x):
        """``|s - eta_hat|``, ``g`` (Lemma 6 expanded at the query, or as published
        with its own-cell bound when the smoother has ``paper`` tables) and the number
        of fallback queries at ``x``."""
        x = np.asarray(x, dtype=np.float64)
        done = self.completed(x)
        tables = done.tables
        q = bin_of(x, tables.n_bins)
        mean_score, const = query_tables(tables, b2)
        d = mean_score[q] - x
        with np.errstate(invalid="ignore"):
            if done.paper is None:
                first = np.abs(d)
            else:
                records = done.paper.records(bin_centres(self.n_bins))
                first = PaperTables.first_moment(np.take(records, q, axis=0), x)
            g = b1 * first + 0.5 * b2 * d * d + const[q]
        r = np.abs(tables.eta[q] - x)
        f = np.flatnonzero(tables.A0[q] <= 0.0)
        if f.size:
            eta_f, g[f], _ = self.fallback(x[f], b1, b2)
            r[f] = np.abs(eta_f - x[f])
        return r, g, int(f.size)


def query_tables(tables, b2):
    with np.errstate(invalid="ignore"):
        return tables.m1 + bin_centres(tables.n_bins), tables.constant(b2)


def smoother_at(
    pyramid, bandwidth, fine_bins, m, tempering, published=False, queries=None
):
    """The smoother with a given bandwidth on its grid (``grid_size``); with
    ``published``, the tables of the published Lemma 6 too. With ``queries`` (the
    fine cell counts of the rows that will query it), the tables are computed at the
    cells of those rows only (:meth:`Smoother.completed` computes others)."""
    G = min(grid_size(bandwidth), fine_bins)
    stats = pyramid.at(G)
    cells = None if queries is None else queries.reshape(G, -1).any(axis=1)
    tables = HPTables.from_stats(stats, bandwidth, tempering, cells=cells)
    # Read by the fallback only (A0 == 0 is exact at every cell, computed or not).
    below = above = None
    if (tables.A0 <= 0.0).any():
        below, above = occupied_neighbours(pyramid.at(fine_bins).count)
    extra = PaperTables.from_stats(stats, tables) if published else None
    return Smoother(
        tables, fine_bins, int(m), below, above, paper=extra, training=stats
    )
