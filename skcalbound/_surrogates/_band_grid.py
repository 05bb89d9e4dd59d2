"""The monotone band on data beyond memory: cells of a fixed score grid as the atoms
of the order (SPEC section 14.6).

One pass keeps, per cell of ``M = grid_size(n)`` equal cells of [0, 1], the rows,
the positive labels and the smallest and largest score (:class:`CellStats`, merged
exactly whatever the chunking); the band's windows are runs of whole cells and each
gap's envelope spans its end cells' extents, so nothing is drawn. Pure functions;
inputs are assumed validated. The derivation (SPEC 14's Theorems 1 and 2 with rows
known only up to their cell): ``docs/internals/core.rst``.
"""

import math
from dataclasses import dataclass

import numpy as np

from ._band import Band, window_lengths
from ._cells import bin_of
from ._chernoff import kl_lower_limit, kl_upper_limit
from ._dkw import dkw_epsilon, dkw_positions


def grid_size(n):
    """Cells of the grid for ``n`` rows: ``2**b``, ``b = ceil(log2 n) - 6`` clipped to
    ``[10, 16]`` (about 64 rows a cell on average up to 2**22 rows; at most 65,536
    cells, 2 MB of statistics). A function of ``n`` only."""
    bits = math.ceil(math.log2(max(n, 2))) - 6
    return 2 ** min(16, max(10, bits))


@dataclass
class CellStats:
    """Per-cell ``counts``, ``positives`` (int64), smallest (``lo``) and largest
    (``hi``) score of a grid of ``M`` cells; ``+`` merges two by addition and
    min/max.

    Not ``_cells.CellSums``: those are per (group, cell) sums of offsets that the
    band does not use, and merge by addition only; the band's extents merge by
    minimum and maximum."""

    counts: np.ndarray
    positives: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of_rows(cls, scores, labels, M):
        """The statistics of rows with scores in [0, 1] and 0/1 labels."""
        cell = bin_of(scores, M)
        counts = np.bincount(cell, minlength=M)
        positives = np.bincount(cell, weights=labels, minlength=M)
        lo = np.full(M, np.inf)
        hi = np.full(M, -np.inf)
        np.minimum.at(lo, cell, scores)
        np.maximum.at(hi, cell, scores)
        return cls(counts, np.rint(positives).astype(np.int64), lo, hi)

    def __add__(self, other):
        return CellStats(
            self.counts + other.counts,
            self.positives + other.positives,
            np.minimum(self.lo, other.lo),
            np.maximum(self.hi, other.hi),
        )

    def __iadd__(self, other):
        self.counts += other.counts
        self.positives += other.positives
        np.minimum(self.lo, other.lo, out=self.lo)
        np.maximum(self.hi, other.hi, out=self.hi)
        return self


def cell_stats_chunk(M, chunk):
    """:class:`CellStats` of one chunk (``_chunks.Chunk``) on ``M`` cells."""
    return CellStats.of_rows(chunk.scores, chunk.labels, M)


def cell_runs(C, n, ell):
    """The distinct runs of cells ``(f, g)`` (0-based, inclusive) of the windows of
    length ``ell``: the cells of positions ``a + 1`` and ``a + ell`` for every start
    ``a`` of :func:`window_starts`. ``C`` holds the cumulative counts ``C_1 .. C_m``.

    Only the starts where a cell boundary is crossed are visited: ``f`` changes where
    ``a = C_k`` and ``g`` where ``a = C_k - ell + 1``; every start shares its run with
    the largest visited start at or below it (the first multiple of ``D`` at or after
    each crossing, with ``0`` and ``n - ell``)."""
    D = max(1, ell // 4)
    crossings = np.concatenate([C[:-1], C[:-1] - ell + 1])
    starts = -(-crossings // D) * D  # the first multiple of D at or after
    starts = starts[(starts >= 0) & (starts <= n - ell)]
    starts = np.unique(np.concatenate([[0, n - ell], starts]))
    f = np.searchsorted(C, starts + 1)
    g = np.searchsorted(C, starts + ell)
    pairs = np.unique(np.stack([f, g], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def _step_functions(a, b, upper_first, lower_last):
    """``U(x)`` and ``L(x)`` of the cell band (derivation step 2) as functions:
    ``upper_first`` is the suffix minimum of ``hi`` over runs starting at cell ``k``
    or later, ``lower_last`` the prefix maximum of ``lo`` over runs ending at ``k``
    or earlier."""
    m = a.shape[0]

    def U(x):
        k = np.searchsorted(a, x, side="left")  # first cell with a_k >= x
        return np.where(k < m, upper_first[np.minimum(k, m - 1)], 1.0)

    def L(x):
        k = np.searchsorted(b, x, side="right") - 1  # last cell with b_k <= x
        return np.where(k >= 0, lower_last[np.maximum(k, 0)], 0.0)

    return U, L


def run_transfer(values, lengths, K, kind):
    """``sum_j ext{v_i : i in [j - K, j + K - 1] and [0, n]}`` over ``j = 1 .. n``,
    ``ext`` the maximum or the minimum, for the sequence ``v_0 .. v_n`` given as runs
    (``values[r]`` repeated ``lengths[r]`` times). Exact: the extremum is constant
    between the ``j`` where an end of the window crosses a run boundary; each such
    piece is read from a sparse table of the runs."""
    fold = np.maximum if kind == "max" else np.minimum
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # first gap of each run
    n = int(np.sum(lengths)) - 1
    breaks = np.concatenate([[1], first + K, first - K + 1])
    breaks = np.unique(breaks[(breaks >= 1) & (breaks <= n)])
    size = np.diff(np.append(breaks, n + 1))
    left = np.searchsorted(first, np.maximum(breaks - K, 0), side="right") - 1
    right = np.searchsorted(first, np.minimum(breaks + K - 1, n), side="right") - 1
    # Sparse table: table[p][r] = ext of values[r .. r + 2**p - 1].
    table = [np.asarray(values, dtype=float)]
    while 2 ** len(table) <= values.shape[0]:
        prev, half = table[-1], 2 ** (len(table) - 1)
        table.append(fold(prev[:-half], prev[half:]))
    span = right - left + 1
    level = np.floor(np.log2(span)).astype(np.int64)
    out = np.empty(breaks.shape[0])
    for p in np.unique(level):
        sel = level == p
        row = table[p]
        out[sel] = fold(row[left[sel]], row[right[sel] - 2**p + 1])
    return float(np.dot(size, out))


@dataclass(frozen=True)
class GridInterval:
    """SPEC 14.6 on cell statistics: the ``band`` (:class:`Band` on the cell
    extents), the unclipped ``upper`` and ``lower`` bounds, ``terms`` as SPEC 14's
    (each row taken anywhere in its cell), and the non-empty cells' ``extents``
    (``a``, ``b``), ``counts`` and ``positives``."""

    band: Band
    upper: float
    lower: float
    terms: dict
    extents: tuple
    counts: np.ndarray
    positives: np.ndarray


def grid_interval(stats, delta):
    """The interval of SPEC 14.6 at ``delta`` (``delta1 = delta2 = delta / 2``) from
    the :class:`CellStats` of all rows (at least one)."""
    cells = np.flatnonzero(stats.counts)
    counts, positives = stats.counts[cells], stats.positives[cells]
    a, b = stats.lo[cells], stats.hi[cells]
    m = cells.shape[0]
    C = np.cumsum(counts)
    n = int(C[-1])
    C0, P0 = np.concatenate([[0], C]), np.concatenate([[0], np.cumsum(positives)])
    delta1 = delta2 = delta / 2.0

    # Steps 1-2: runs of whole cells, per-first-cell minimum of hi, per-last-cell
    # maximum of lo, then a suffix minimum and a prefix maximum.
    lengths = window_lengths(n)
    upper_first, lower_last = np.ones(m), np.zeros(m)
    n_windows = 0
    for ell in lengths:
        f, g = cell_runs(C, n, ell)
        budget = math.log(2.0 * len(lengths) * f.shape[0] / delta1)
        rows, S = C0[g + 1] - C0[f], P0[g + 1] - P0[f]
        np.minimum.at(upper_first, f, kl_upper_limit(S, rows, budget))
        np.maximum.at(lower_last, g, kl_lower_limit(S, rows, budget))
        n_windows += f.shape[0]
    np.minimum.accumulate(upper_first[::-1], out=upper_first[::-1])
    np.maximum.accumulate(lower_last, out=lower_last)
    U, L = _step_functions(a, b, upper_first, lower_last)

    # Step 3: the gaps as runs: gap 0 in [0, b_1]; per cell k, its c_k - 1 inner
    # gaps in [a_k, b_k], then the gap after it in [a_k, b_{k+1}] (b_{m+1} = 1).
    A = np.concatenate([[0.0], np.repeat(a, 2)])
    B = np.concatenate([[b[0]], np.stack([b, np.append(b[1:], 1.0)], axis=1).ravel()])
    runs = np.concatenate([[1], np.stack([counts - 1, np.ones(m, int)], 1).ravel()])
    keep = runs > 0
    A, B, runs = A[keep], B[keep], runs[keep]
    LA, UB = L(A), U(B)
    g_plus = np.maximum(np.maximum(B - LA, UB - A), 0.0)
    g_minus = np.maximum(np.maximum(A - UB, LA - B), 0.0)

    # Step 4: DKW on the quantile scale, run by run.
    K = dkw_positions(n, dkw_epsilon(n, delta2))
    upper = run_transfer(g_plus, runs, K, "max") / n
    lower = run_transfer(g_minus, runs, K, "min") / n

    # Terms: each row anywhere in its cell.
    La, Ub = L(a), U(b)
    band_upper = float(np.dot(counts, np.maximum(b - La, Ub - a))) / n
    band_lower = float(np.dot(counts, np.maximum(np.maximum(a - Ub, La - b), 0.0))) / n
    terms = {
        "band_upper": band_upper,
        "transfer_upper": upper - band_upper,
        "band_lower": band_lower,
        "transfer_lower": lower - band_lower,
        "mean_band_width": float(np.dot(counts, Ub - La)) / n,
        "n_windows": int(n_windows),
        "n_cells": int(m),
    }
    knots = np.unique(np.concatenate([a, b]))
    band = Band(knots, L(knots), U(knots))
    return GridInterval(band, upper, lower, terms, (a, b), counts, positives)
