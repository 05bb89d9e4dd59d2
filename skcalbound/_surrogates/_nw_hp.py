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

from ._nw import BinStats, _kernel

_FINAL_BINS_PER_BANDWIDTH = 64
_SEARCH_BINS_PER_BANDWIDTH = 4
_MAX_BINS = 2**20
# The label-free bandwidth grid: h_plugin * 2**(k / 2), k = -4 .. 8 (SPEC section 12).
SEARCH_EXPONENTS = tuple(k / 2.0 for k in range(-4, 9))
BANDWIDTH_LIMITS = (1e-4, 0.5)


def grid_size(bandwidth, bins_per_bandwidth=_FINAL_BINS_PER_BANDWIDTH):
    """The power of two with at least ``bins_per_bandwidth`` cells per bandwidth, in
    ``[16, 2**20]``."""
    target = bins_per_bandwidth / bandwidth
    exponent = max(4, math.ceil(math.log2(target)))
    return 1 << min(exponent, 20)


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
    # Direct convolution, not an FFT: rounding relative to each output, not to the
    # largest cell (a cell next to 10**7 points must keep the digits of a cell next
    # to ten).
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
        P2 = (
            _conv(stats.s2, ker)
            - 2.0 * _conv(s1, ker * offset)
            + _conv(n, ker * offset**2)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / A0
            m1 = P1 * inv
            # Variance of s_i under the weights, >= 0 up to rounding.
            var = np.maximum(P2 * inv - m1 * m1, 0.0)
            W2 = _conv(n, ker * ker) * inv * inv
            eta = _conv(stats.positives, ker) * inv if with_eta else None
        return cls(G, float(bandwidth), float(tempering), ker, n, A0, eta, m1, var, W2)

    def constant(self, b2):
        """The part of ``g`` depending on the cell only: ``b2/2 var + sqrt(W2)/2``."""
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
