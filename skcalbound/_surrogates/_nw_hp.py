"""The NW smoother of the high-probability certificate (SPEC sections 10 and 12).

Inputs are assumed validated; scores are sorted unless said otherwise.

Lemma 6 expanded at the query needs, per query ``s'``, only ``sum w``, ``sum w y``,
the signed first moment ``sum w (s_i - s')``, the second moment ``sum w (s_i - s')**2``
and ``sum w**2``; with weights that depend on grid cells (the tempered Epanechnikov
kernel at cell offsets, as in :mod:`._nw`) every one of them is exact from per-cell
count, positives and offset sums of the training points, so no sorted training array,
prefix sum or within-cell split is needed. The certificate also needs the weight each
training point receives on average over the evaluated validation points, ``c_i``, and
``C2 = sum_i c_i**2``: a point in cell ``b`` receives ``ker(q - b) / A0(q)`` from
every query in cell ``q``, so ``c`` is one more convolution of per-cell query counts.

Grids. Because the weights depend on cells, the weighted mean of the training scores
sits near the query's cell centre, not at the query: ``|sum w (s_i - s')|`` picks up
the query's offset from its cell centre (about a quarter cell on average). The final
grid therefore has at least 64 cells per bandwidth. The bandwidth search, which only
ranks candidate bandwidths by a label-free objective, uses 4 cells per bandwidth and
measures the first moment from each cell's mean training score, so that it ranks the
bandwidths as the fine grid will see them. All grids are coarsenings of one fine grid
(powers of two), whose per-cell sums merge exactly by addition.
"""

import math
from dataclasses import dataclass

import numpy as np

from ._nw import BinStats, _kernel, _nearest_neighbour, bin_centres, bin_of

_FINAL_BINS_PER_BANDWIDTH = 64
_SEARCH_BINS_PER_BANDWIDTH = 4
_MAX_BINS = 2**20
# Queries per chunk of the per-point arithmetic (arrays that stay in cache).
_QUERY_CHUNK = 2**15
# The label-free bandwidth grid: h_plugin * 2**(k / 2), k = -4 .. 8 (SPEC section 12).
SEARCH_EXPONENTS = tuple(k / 2.0 for k in range(-4, 9))
BANDWIDTH_LIMITS = (1e-4, 0.5)


def grid_size(bandwidth, bins_per_bandwidth=_FINAL_BINS_PER_BANDWIDTH):
    """The power of two with at least ``bins_per_bandwidth`` cells per bandwidth, in
    ``[16, 2**20]``."""
    target = bins_per_bandwidth / bandwidth
    exponent = max(4, math.ceil(math.log2(target)))
    return 1 << min(exponent, 20)


def grid_stats(scores, labels, n_bins):
    """Per-cell count, positives and sums of offsets ``t = s - c_b`` and ``t**2``.

    ``scores`` sorted, so each cell's points are contiguous and sums are ``reduceat``
    over runs. The offsets are exact: with ``G`` a power of two, ``u = s G`` is exact,
    ``u - b`` is exact (Sterbenz: ``b <= u <= b + 1``) and so are ``- 1/2`` and ``/ G``.
    """
    G = n_bins
    u = np.multiply(scores, G)
    cells = u.astype(np.intp)
    np.minimum(cells, G - 1, out=cells)
    count = np.bincount(cells, minlength=G)
    u -= cells
    u -= 0.5
    u *= 1.0 / G  # t, exactly
    stats = [np.zeros(G) for _ in range(3)]
    occupied = np.flatnonzero(count)
    if occupied.size:
        at = (np.cumsum(count) - count)[occupied]
        stats[0][occupied] = np.add.reduceat(labels, at, dtype=np.float64)
        stats[1][occupied] = np.add.reduceat(u, at)
        np.square(u, out=u)
        stats[2][occupied] = np.add.reduceat(u, at)
    return BinStats(count.astype(np.float64), *stats)


def coarsen(stats, factor):
    """The same points' sums on a grid ``factor`` (a power of two) times coarser."""
    while factor > 1:
        G = stats.count.shape[0]
        # Child cells 2P and 2P + 1 have centres c_P -/+ 1 / (2 G): t_P = t -/+ d.
        d = 0.5 / G
        n0, n1 = stats.count[0::2], stats.count[1::2]
        a0, a1 = stats.s1[0::2], stats.s1[1::2]
        s1 = (a0 + a1) + d * (n1 - n0)
        s2 = (stats.s2[0::2] + stats.s2[1::2]) + 2.0 * d * (a1 - a0) + d * d * (n0 + n1)
        stats = BinStats(n0 + n1, stats.positives[0::2] + stats.positives[1::2], s1, s2)
        factor //= 2
    return stats


class Pyramid:
    """Cell sums of one point set on the fine grid and every coarser power of two,
    each computed once (by halving the next finer one)."""

    def __init__(self, stats):
        self._levels = {stats.count.shape[0]: stats}
        self.fine_bins = stats.count.shape[0]

    def at(self, n_bins):
        n_bins = min(n_bins, self.fine_bins)
        G = n_bins
        while G not in self._levels:
            G *= 2
        while G > n_bins:
            self._levels[G // 2] = coarsen(self._levels[G], 2)
            G //= 2
        return self._levels[n_bins]


def _conv(x, v):
    # Direct convolution (see KernelTables.from_stats in _nw): rounding relative to
    # each output, not to the largest cell.
    G = x.shape[0]
    return np.convolve(x, v)[(v.shape[0] - 1) // 2 :][:G]


@dataclass(frozen=True)
class HPTables:
    """Per-cell moments of the normalised kernel weights, for one training set.

    For a query ``s' = c_q + e``: ``sum w y = eta[q]``, ``sum w (s_i - s') = m1[q] -
    e``, ``sum w (s_i - s')**2 = var[q] + (m1[q] - e)**2``, ``sum w**2 = W2[q]``.
    ``A0[q] == 0`` means no training point within the kernel: nearest-neighbour
    fallback.
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

    @classmethod
    def from_stats(cls, stats, bandwidth, tempering, *, with_eta=True):
        G = stats.count.shape[0]
        offset, ker = _kernel(G, bandwidth, tempering)
        n, s1 = stats.count, stats.s1
        A0 = _conv(n, ker)
        # Training point i in cell b = q - k: s_i - c_q = t_i - k / G.
        P1 = _conv(s1, ker) - _conv(n, ker * offset)
        P2 = _conv(stats.s2, ker) - 2.0 * _conv(s1, ker * offset) + _conv(n, ker * offset**2)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / A0
            m1 = P1 * inv
            # Variance of s_i under the weights, >= 0 up to rounding.
            var = np.maximum(P2 * inv - m1 * m1, 0.0)
            W2 = _conv(n, ker * ker) * inv * inv
            eta = _conv(stats.positives, ker) * inv if with_eta else None
        return cls(G, float(bandwidth), float(tempering), ker, n, A0, eta, m1, var, W2)

    def constant(self, b2):
        """The part of ``g`` that depends on the cell only: ``b2/2 var + sqrt(W2)/2``."""
        with np.errstate(invalid="ignore"):
            return 0.5 * b2 * self.var + 0.5 * np.sqrt(self.W2)


def search_objective(pyramid, bandwidth, tempering, b1, b2):
    """Mean of ``min(g, 1)`` over the training points, from their cell sums only.

    Label-free (SPEC section 12): ``g`` at a cell's training points uses the cell's
    mean training score as the query for the first moment (see the module docstring),
    and the exact mean of the second moment over the cell's points.
    """
    stats = pyramid.at(grid_size(bandwidth, _SEARCH_BINS_PER_BANDWIDTH))
    tables = HPTables.from_stats(stats, bandwidth, tempering, with_eta=False)
    occupied = np.flatnonzero(stats.count)
    n = stats.count[occupied]
    mean_t = stats.s1[occupied] / n
    d = tables.m1[occupied] - mean_t
    spread = np.maximum(stats.s2[occupied] / n - mean_t * mean_t, 0.0)
    g = (
        b1 * np.abs(d)
        + 0.5 * b2 * (tables.var[occupied] + d * d + spread)
        + 0.5 * np.sqrt(tables.W2[occupied])
    )
    return float(np.dot(n, np.minimum(g, 1.0)) / n.sum())


def choose_bandwidth(pyramid, candidates, tempering, b1, b2):
    """The candidate (sorted, a geometric grid) with the smallest
    :func:`search_objective`, found coarse to fine: every other candidate first, then
    the two between the best of those and its neighbours (the objective is a bias that
    grows with the bandwidth plus a noise term that shrinks with it, so this finds the
    grid's minimiser; ties go to the smaller bandwidth). The smallest candidates cost
    the most (the finest grids), and this skips most of them."""
    if len(candidates) == 1:
        return float(candidates[0])
    values = {}

    def objective(i):
        if i not in values:
            values[i] = search_objective(pyramid, candidates[i], tempering, b1, b2)
        return values[i]

    coarse = range(0, len(candidates), 2)
    best = min(coarse, key=objective)
    neighbours = [i for i in (best - 1, best + 1) if 0 <= i < len(candidates)]
    best = min([best, *neighbours], key=lambda i: (objective(i), i))
    return float(candidates[best])


class _Sums:
    """Sums over the evaluated queries: count, ``r - shift``, its square, ``min(g, 1)``,
    and the query count per grid cell of the non-fallback queries."""

    def __init__(self, n_bins):
        self.n = 0
        self.shift = None
        self.r = 0.0
        self.r2 = 0.0
        self.g = 0.0
        self.per_cell = np.zeros(n_bins)

    def add(self, r, g):
        if self.shift is None:
            self.shift = float(np.mean(r))
        np.minimum(g, 1.0, out=g)
        self.g += float(np.sum(g))
        r -= self.shift
        self.r += float(np.sum(r))
        self.r2 += float(np.dot(r, r))
        self.n += r.shape[0]

    def residual_moments(self):
        mean = self.r / self.n
        return self.shift + mean, max(self.r2 / self.n - mean * mean, 0.0)


@dataclass(frozen=True)
class Fallback:
    """What the nearest-neighbour fallback needs: the training points as the sorted
    ``sample`` minus the sorted positions ``validation`` (``None``: all of it), and,
    per query, the number of training scores below it (``below``, a callable of the
    query positions in the evaluated set)."""

    sample: object
    validation: np.ndarray = None

    def __call__(self, queries, below, b1, b2):
        if self.validation is None:
            return _nearest_neighbour(self.sample, queries, below, b1, b2, return_blocks=True)
        v = self.validation
        return _nearest_neighbour(
            self.sample, queries, below, b1, b2, v, self.sample.labels[v],
            v - np.arange(v.shape[0]), return_blocks=True,
        )


def evaluate(tables, b1, b2, queries, fallback, below):
    """The statistics of the certificate at sorted ``queries``.

    Parameters
    ----------
    tables : HPTables
        Of the training set, on its final grid.
    b1, b2 : float
    queries : ndarray
        Evaluated validation scores, sorted (the statistics are sums, so any caller
        can sort them).
    fallback : Fallback
        The training set, for queries with no training point within the kernel.
    below : callable
        ``below(idx)``: number of training scores below ``queries[idx]`` (only called
        for fallback queries).

    Returns
    -------
    dict
        ``n``, ``residual_moments`` (mean and population variance of
        ``|eta_hat - s|``), ``smoothing_mean`` (mean of ``min(g, 1)``, Lemma 6 at the
        query), ``sum_c_squared`` (``C2``) and ``n_fallback``.
    """
    G = tables.n_bins
    kernel_cell = tables.A0 > 0.0  # else every query of the cell falls back
    with np.errstate(invalid="ignore"):
        # Per cell: the weighted mean training score (s' - it = offset - m1 - ...),
        # and the part of g that does not depend on the query's position.
        mean_score = tables.m1 + bin_centres(G)
        const = tables.constant(b2)
    sums = _Sums(G)
    fallback_idx = []
    fallback_blocks = []
    # Twenty-odd array operations per point: in chunks that stay in cache.
    for start in range(0, queries.shape[0], _QUERY_CHUNK):
        s = queries[start : start + _QUERY_CHUNK]
        b = bin_of(s, G)
        d = mean_score.take(b)
        d -= s  # sum_i w_i (s_i - s')
        g = np.abs(d)
        g *= b1
        d *= d
        d *= 0.5 * b2
        g += d
        g += const.take(b)
        r = tables.eta.take(b)
        r -= s
        np.abs(r, out=r)
        if not kernel_cell[b[0] : b[-1] + 1].all():  # sorted: the chunk's cells
            f = np.flatnonzero(~kernel_cell.take(b))
            eta_f, g[f], blocks = fallback(s[f], below(start + f), b1, b2)
            r[f] = np.abs(eta_f - s[f])
            fallback_idx.append(start + f)
            fallback_blocks.append(blocks)
        sums.add(r, g)
    # Queries per cell served by the kernel (cells are all-kernel or all-fallback).
    edges = np.searchsorted(queries, np.arange(1, G) / G, side="left")
    per_cell = np.diff(edges, prepend=0, append=queries.shape[0])
    sums.per_cell = np.where(kernel_cell, per_cell, 0).astype(np.float64)
    n = sums.n
    # c_i of a training point in cell b from the kernel queries: (1/n) sum_q
    # count_q ker(q - b) / A0(q) (the kernel is symmetric).
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.where(sums.per_cell > 0, sums.per_cell / tables.A0, 0.0)
    c_cell = _conv(load, tables.ker) / n
    c2 = float(np.dot(tables.count, c_cell * c_cell))
    n_fallback = 0
    if fallback_blocks:
        values, sizes, weights = (
            np.concatenate([blk[k] for blk in fallback_blocks]) for k in range(3)
        )
        n_fallback = sum(idx.shape[0] for idx in fallback_idx)
        # Every point of a used tie block receives weight/n more: group by block.
        unique, inverse = np.unique(values, return_inverse=True)
        extra = np.bincount(inverse.reshape(-1), weights=weights) / n
        size = np.zeros(unique.shape[0])
        size[inverse.reshape(-1)] = sizes
        base = c_cell[bin_of(unique, G)]
        c2 += float(np.dot(size, extra * (2.0 * base + extra)))
    return {
        "n": n,
        "residual_moments": sums.residual_moments(),
        "smoothing_mean": sums.g / n,
        "sum_c_squared": c2,
        "n_fallback": n_fallback,
    }

