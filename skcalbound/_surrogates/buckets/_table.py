"""Per-cell training statistics and the per-bucket table of every candidate.

:class:`CellStats` (pass 1) merges by addition, its centred squares by Chan et al.'s
rule; :class:`Training` is one training set on a grid; :class:`BucketTable` gives,
per candidate and cell, ``eta_hat`` and the affine coefficients of ``g``.
"""

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._cells import bin_of, cell_offsets, occupied_neighbours
from ._candidates import bucket_edges


def _chan(count_a, sum_a, m2_a, count_b, sum_b, m2_b):
    """Count, sum and centred sum of squares of the union of two sets (Chan et al.)."""
    count = count_a + count_b
    both = (count_a > 0) & (count_b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(both, sum_b / count_b - sum_a / count_a, 0.0)
        extra = np.where(both, delta * delta * (count_a * count_b) / count, 0.0)
    return count, sum_a + sum_b, m2_a + m2_b + extra


def _mean(count, total):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, total / count, 0.0)


@dataclass(frozen=True)
class CellStats:
    """Per (group, cell): ``count``, ``positives``, ``tsum`` (the sum of the offsets
    ``t = s - c_centre``) and ``m2`` (their centred sum of squares); shape
    ``(n_groups, n_cells)``. Merged by ``+``."""

    count: np.ndarray
    positives: np.ndarray
    tsum: np.ndarray
    m2: np.ndarray

    def __add__(self, other):
        count, tsum, m2 = _chan(
            self.count, self.tsum, self.m2, other.count, other.tsum, other.m2
        )
        return CellStats(count, self.positives + other.positives, tsum, m2)

    def merged(self, groups):
        """The :class:`Training` of the union of ``groups`` (rows, added in order)."""
        groups = list(groups)
        if not groups:
            zero = np.zeros(self.count.shape[1])
            return Training(zero, zero, zero, zero)
        count, positives, tsum = (
            np.sum(x[groups], axis=0) for x in (self.count, self.positives, self.tsum)
        )
        mean = _mean(count, tsum)
        m2 = np.zeros_like(mean)
        for g in groups:
            spread = _mean(self.count[g], self.tsum[g]) - mean
            m2 += self.m2[g] + self.count[g] * spread * spread
        return Training(count, positives, tsum, m2)


def cell_stats(scores, labels, groups, n_groups, n_cells):
    """Pass 1 on one chunk: its :class:`CellStats` (rows with group < 0 skipped)."""
    keep = groups >= 0
    scores, labels, groups = scores[keep], labels[keep], groups[keep]
    cells = bin_of(scores, n_cells)
    t = cell_offsets(scores, cells, n_cells)
    key = cells + groups.astype(np.intp) * n_cells
    size = n_groups * n_cells
    count = np.bincount(key, minlength=size).astype(np.float64)
    tsum = np.bincount(key, weights=t, minlength=size)
    centred = t - _mean(count, tsum)[key]
    m2 = np.bincount(key, weights=centred * centred, minlength=size)
    positives = np.bincount(key, weights=labels, minlength=size)
    shape = (n_groups, n_cells)
    return CellStats(*(x.reshape(shape) for x in (count, positives, tsum, m2)))


def own_cell_distance(count, e, mean, m2):
    """``sqrt(N (N (e - tbar)**2 + S))``: Cauchy-Schwarz's bound on the distance sum
    from a query at offset ``e`` to the ``N`` training points of its cell."""
    d = e - mean
    return np.sqrt(np.maximum(count * (d * d) + m2, 0.0) * count)


@dataclass(frozen=True)
class Training:
    """One training set on a grid: per cell ``count``, ``positives``, ``tsum`` and
    ``m2`` (as :class:`CellStats`); ``extremes`` (largest / smallest training score
    of the occupied cells next to empty ones, known after pass 2: ``with_extremes``)
    serve the fallback of queries in empty buckets."""

    count: np.ndarray
    positives: np.ndarray
    tsum: np.ndarray
    m2: np.ndarray
    extremes: dict = dataclasses.field(default=None, repr=False)

    @property
    def n_cells(self):
        return self.count.shape[0]

    def with_extremes(self, extremes):
        return dataclasses.replace(self, extremes=extremes)

    def mean_offset(self):
        return _mean(self.count, self.tsum)

    def needed_mask(self):
        """Occupied cells next to an empty one: their extremes give the midpoints
        between the training scores around every empty cell."""
        occupied = self.count > 0
        out = np.zeros_like(occupied)
        out[:-1] = ~occupied[1:]
        out[1:] |= ~occupied[:-1]
        return out & occupied

    def midpoints(self, cells):
        """At ``cells``, the midpoint (as a double) of the training scores around
        them: ``-inf`` with none below, ``+inf`` with none above (meaningful in empty
        cells)."""
        K = self.n_cells
        below, above = (x[cells] for x in occupied_neighbours(self.count))
        hi = np.full(K, np.nan)
        lo = np.full(K, np.nan)
        e = self.extremes
        if e is not None:
            hi[e["cells"]] = e["hi"]
            lo[e["cells"]] = e["lo"]
        mid = 0.5 * (hi[np.maximum(below, 0)] + lo[np.minimum(above, K - 1)])
        mid[below < 0] = -np.inf
        mid[above >= K] = np.inf
        return mid


def _exclusive_cumsum(x):
    return np.concatenate(([0.0], np.cumsum(x)))


class Prepared:
    """What every candidate reads of one :class:`Training` at the evaluated ``cells``
    (occupied, ascending): exclusive prefix sums over all cells of ``N``, positives,
    ``M = N c`` and ``T``; at ``cells`` their sums at ``c`` and ``c + 1`` (``s2``),
    the centres and the own-cell distance at both ends. Transient."""

    def __init__(self, training, cells):
        K = training.n_cells
        N = training.count
        self.training = training
        self.n_cells = K
        self.cells = cells
        self.centre = (cells + 0.5) / K
        self.cN = _exclusive_cumsum(N)
        self.cP = _exclusive_cumsum(training.positives)
        self.cM = _exclusive_cumsum(N * np.arange(K))
        self.cT = _exclusive_cumsum(training.tsum)
        self.s2 = [x[cells] + x[cells + 1] for x in (self.cN, self.cM, self.cT)]
        count, m2 = N[cells], training.m2[cells]
        mean = training.tsum[cells] / count
        half = 0.5 / K
        self.d_lo = own_cell_distance(count, -half, mean, m2)
        self.d_hi = own_cell_distance(count, half, mean, m2)
        self.d_max = np.maximum(self.d_lo, self.d_hi)
        # Position of every cell among the evaluated ones (-1 for none).
        self.index = np.full(K, -1, dtype=np.intp)
        self.index[cells] = np.arange(cells.shape[0])

    @cached_property
    def neighbours(self):
        """The occupied cells at or below / at or above every cell (the fallback)."""
        return occupied_neighbours(self.training.count)


class BucketTable:
    """The buckets of every candidate ``(B, r)`` (``R`` shifts) on one
    :class:`Prepared`, concatenated (candidate ``i`` owns ``bounds[i]:bounds[i +
    1]``): per bucket its cells ``[start, end)`` and :meth:`values`."""

    def __init__(self, prep, candidates, R, L):
        self.prep, self.L = prep, L
        key = tuple((int(B), int(r)) for B, r in candidates)
        self.B, self.w, self.o, self.bounds, self.start, self.end, self.owner = (
            bucket_edges(key, int(R), prep.n_cells)
        )

    @property
    def n_candidates(self):
        return self.B.shape[0]

    @cached_property
    def _values(self):
        prep = self.prep
        s, e = self.start, self.end
        n_b = prep.cN[e] - prep.cN[s]
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = self.L / n_b
            eta = (prep.cP[e] - prep.cP[s]) / n_b
            root = 0.5 / np.sqrt(n_b)
        E_N = prep.cN[s] + prep.cN[e]
        E_M = prep.cM[s] + prep.cM[e]
        E_T = prep.cT[s] + prep.cT[e]
        # One (7, n_buckets) array: a bucket's values are gathered in one take.
        return np.stack((E_N, E_M, E_T, alpha, root, eta, n_b))

    def values(self, J):
        """``(E_N, E_M, E_T, alpha, root, eta, n_b)`` of the buckets ``J``: the
        prefix sums of ``N``, ``M = N c`` and ``T`` at both ends added, ``L / n_b``,
        ``1 / (2 sqrt(n_b))``, ``eta_hat`` and the training count."""
        return tuple(np.take(self._values, J, axis=1))

    @cached_property
    def runs(self):
        """Per bucket, how many evaluated cells it holds (a run of them: the cells
        are ascending)."""
        cells = self.prep.cells
        return np.searchsorted(cells, self.end) - np.searchsorted(cells, self.start)

    def n_b(self, J):
        return self._values[6][J]

    def bucket_index(self, owner, cells):
        """Index of the bucket of ``cells`` for the candidates ``owner`` (broadcast),
        ``bounds[i] + floor((c - o) / w) + 1``."""
        return (cells - self.o[owner]) // self.w[owner] + self.bounds[owner] + 1

    def terms_at(self, owner, cells, s2):
        """``(bucket, eta_hat, alpha, beta, gamma, n_b)`` at ``cells`` (with their
        ``s2`` sums) for the candidates ``owner`` (broadcast against ``cells``), where
        ``g = alpha D + beta e + gamma`` with ``a = N_lo - N_hi`` and ``k`` the exact
        distance sum to the bucket's points outside the cell."""
        G, a, k, values = self.distance_terms(owner, cells, s2)
        _, _, _, alpha, root, eta, n_b = values
        beta = alpha * a
        gamma = alpha * k
        gamma += root
        return G, eta, alpha, beta, gamma, n_b

    def distance_terms(self, owner, cells, s2):
        """``(bucket, a, k, values)`` at ``cells`` for the candidates ``owner``: the
        distance sum to the bucket's training points outside the cell is ``a e + k``
        at offset ``e`` (``a = N_lo - N_hi``), and :meth:`values` of the bucket."""
        G = self.bucket_index(owner, cells)
        values = self.values(G)
        E_N, E_M, E_T = values[:3]
        a = s2[0] - E_N  # N_lo - N_hi
        k = s2[1] - E_M  # M_lo - M_hi
        k -= cells * a
        k *= -1.0 / self.prep.n_cells
        k -= s2[2] - E_T  # T_lo - T_hi
        return G, a, k, values

    def terms(self, rows):
        """:meth:`terms_at` at every evaluated cell for the candidates ``rows`` (a
        slice or indices), as ``(n_rows, n_cells)`` arrays."""
        prep = self.prep
        owner = np.arange(self.n_candidates)[rows][:, None]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self.terms_at(owner, prep.cells, prep.s2)

    def fall_back(self, owner, cells, scores, midpoints):
        """For queries at ``scores`` in ``cells`` whose bucket for candidate
        ``owner`` is empty: ``(bucket, eta_hat, alpha, beta, gamma)`` of the bucket
        of the nearest training score below (all of it below the query) or, above
        the ``midpoints`` of the training scores around the cells, above."""
        K = self.prep.n_cells
        prep = self.prep
        below, above = prep.neighbours
        up = scores > midpoints
        neighbour = np.where(up, above[cells], below[cells])
        sign = np.where(up, -1.0, 1.0)
        jj = self.bucket_index(owner, neighbour)  # a training score exists there
        end, start = self.end[jj], self.start[jj]
        M_b = prep.cM[end] - prep.cM[start]
        T_b = prep.cT[end] - prep.cT[start]
        _, _, _, _, _, eta, nj = self.values(jj)
        aj = self.L / nj
        gj = aj * (sign * ((cells * nj - M_b) / K - T_b)) + 0.5 / np.sqrt(nj)
        return jj, eta, aj, sign * self.L, gj


def candidate_blocks(n_candidates, n_cells, size=2**16):
    """Slices of consecutive candidates of about ``size`` (candidate, cell) pairs (at
    least one candidate): the temporaries of a block stay a few MB."""
    step = max(1, size // max(int(n_cells), 1))
    return [slice(i, min(i + step, n_candidates)) for i in range(0, n_candidates, step)]
