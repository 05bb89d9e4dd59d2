"""Nadaraya–Watson surrogate with tempered Epanechnikov weights (SPEC section 4).

Inputs are assumed validated; training scores are sorted. The weights of a query
``s'`` are ``(1 - u_i**2) ** tempering`` with ``u_i = (s' - s_i) / bandwidth`` for the
training scores strictly within ``bandwidth`` of ``s'``, normalised to sum to one; if
there is none, equal weights on the training points at the nearest training score(s)
(both sides when equidistant). Lemma 6 holds for any such weights as long as every
sum below is computed for the weights actually used.
"""

from dataclasses import dataclass

import numpy as np

@dataclass(frozen=True)
class WindowSums:
    """Per-query sums: ``eta_hat = sum w y``, ``sum_abs = sum w |d|``,
    ``sum_squares = sum w d**2``, ``sum_w2 = sum w**2`` (``d = s' - s_i``), and
    ``fallback`` marking the queries that used the nearest-neighbour weights."""

    eta_hat: np.ndarray
    sum_abs: np.ndarray
    sum_squares: np.ndarray
    sum_w2: np.ndarray
    fallback: np.ndarray


def _nearest_neighbour_sums(scores, labels, queries, lo):
    """Equal weights on the training points at the nearest training score(s).

    ``lo`` is ``searchsorted(scores, queries, side="left")``; the queries have no
    training score strictly within the bandwidth.
    """
    m = scores.shape[0]
    prefix = np.concatenate(([0.0], np.cumsum(labels)))
    below = np.clip(lo - 1, 0, m - 1)
    above = np.clip(lo, 0, m - 1)
    d_below = np.where(lo > 0, queries - scores[below], np.inf)
    d_above = np.where(lo < m, scores[above] - queries, np.inf)
    d = np.minimum(d_below, d_above)
    use_below = d_below <= d_above
    use_above = d_above <= d_below
    # Tie blocks of the nearest scores: [start_below, lo) and [lo, end_above).
    start_below = np.searchsorted(scores, scores[below], side="left")
    end_above = np.searchsorted(scores, scores[above], side="right")
    count = np.where(use_below, lo - start_below, 0) + np.where(use_above, end_above - lo, 0)
    positives = np.where(use_below, prefix[lo] - prefix[start_below], 0.0) + np.where(
        use_above, prefix[end_above] - prefix[lo], 0.0
    )
    return positives / count, d, d * d, 1.0 / count


def window_sums_direct(scores, labels, queries, bandwidth, tempering, chunk=2**22):
    """Exact window sums by direct summation over each query's window.

    Cost is the total number of (query, training point) pairs within the bandwidth;
    memory is bounded by ``chunk`` pairs at a time. Works for any ``tempering``.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        Sorted training scores.
    labels : ndarray of shape (m,)
        Training labels in {0, 1}, float64.
    queries : ndarray of shape (q,)
        Scores at which to evaluate.
    bandwidth : float
    tempering : float

    Returns
    -------
    WindowSums
    """
    q = queries.shape[0]
    # Window: the training scores strictly within ``bandwidth``. A point that the
    # search puts inside but whose rounded ``|u|`` reaches 1 gets weight 0.
    lo_strict = np.searchsorted(scores, queries - bandwidth, side="right")
    hi = np.searchsorted(scores, queries + bandwidth, side="left")
    size = hi - lo_strict
    eta = np.empty(q)
    sum_abs = np.empty(q)
    sum_sq = np.empty(q)
    sum_w2 = np.empty(q)
    fallback = size <= 0
    start = 0
    order = np.flatnonzero(~fallback)
    while start < order.size:
        # As many queries as fit in ``chunk`` pairs (at least one).
        cum = np.cumsum(size[order[start:]])
        stop = start + max(1, int(np.searchsorted(cum, chunk, side="right")))
        idx = order[start:stop]
        counts = size[idx]
        owner = np.repeat(np.arange(idx.size), counts)
        first = np.repeat(lo_strict[idx] - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
        members = first + np.arange(owner.size)
        d = queries[idx][owner] - scores[members]
        u = d / bandwidth
        k = np.maximum(1.0 - u * u, 0.0)
        if tempering != 1.0:
            k = k**tempering
        bounds = np.concatenate(([0], np.cumsum(counts)[:-1]))
        total = np.add.reduceat(k, bounds)
        empty = total <= 0.0
        if empty.any():  # every point of the window on its edge: no weight at all
            fallback[idx[empty]] = True
            total[empty] = 1.0
        eta[idx] = np.add.reduceat(k * labels[members], bounds) / total
        sum_abs[idx] = np.add.reduceat(k * np.abs(d), bounds) / total
        sum_sq[idx] = np.add.reduceat(k * d * d, bounds) / total
        sum_w2[idx] = np.add.reduceat(k * k, bounds) / (total * total)
        start = stop
    if fallback.any():
        f = np.flatnonzero(fallback)
        eta[f], sum_abs[f], sum_sq[f], sum_w2[f] = _nearest_neighbour_sums(
            scores, labels, queries[f], np.searchsorted(scores, queries[f], side="left")
        )
    return WindowSums(eta, sum_abs, sum_sq, sum_w2, fallback)


# Columns of the block-local moment table: t**0 .. t**4 and y * t**0 .. y * t**2.
_N_MOMENTS = 8


@dataclass(frozen=True)
class BlockMoments:
    """Block-local prefix moments of sorted training scores, for the fast path.

    Blocks are the cells ``[b W, (b + 1) W)`` of width ``W = 2 * bandwidth``; within a
    block, ``t = s - b W`` is small and nonnegative and prefix sums restart at every
    block, so a window sum is a difference of two prefix sums of one short block
    (few cancelled digits), shifted to the query by the binomial formula.
    """

    width: float
    block: np.ndarray  # block id of every training point
    block_end: np.ndarray  # per point: index one past the last point of its block
    exclusive: np.ndarray  # (m, 8) prefix sums within the block, excluding the point
    totals: np.ndarray  # (m, 8) the block's total, repeated for each of its points

    @classmethod
    def from_sorted(cls, scores, labels, bandwidth):
        width = 2.0 * bandwidth
        block = np.floor(scores / width).astype(np.int64)
        t = scores - block * width
        values = np.empty((scores.shape[0], _N_MOMENTS))
        values[:, 0] = 1.0
        for k in range(1, 5):
            values[:, k] = values[:, k - 1] * t
        values[:, 5:8] = values[:, 0:3] * labels[:, None]
        starts = np.flatnonzero(np.diff(block)) + 1
        bounds = np.concatenate(([0], starts, [scores.shape[0]]))
        exclusive = np.empty_like(values)
        totals = np.empty_like(values)
        block_end = np.empty(scores.shape[0], dtype=np.intp)
        # One cumulative sum per block: restarting keeps prefix sums as small as the
        # block (numpy has no segmented cumsum; the blocks number at most 1 / width).
        for a, b in zip(bounds[:-1], bounds[1:]):
            csum = np.cumsum(values[a:b], axis=0)
            exclusive[a] = 0.0
            exclusive[a + 1 : b] = csum[:-1]
            totals[a:b] = csum[-1]
            block_end[a:b] = b
        return cls(width, block, block_end, exclusive, totals)

    def segment(self, i0, i1, origin):
        """Moments of ``x = s - origin`` over positions ``[i0, i1)`` (length <= width/2).

        Returns an (q, 8) array: sums of x**0..x**4 and y * x**0..x**2.
        """
        out = np.zeros((i0.shape[0], _N_MOMENTS))
        nonempty = i1 > i0
        idx = np.flatnonzero(nonempty)
        a, b = i0[idx], i1[idx]
        end_a = self.block_end[a]
        mid = np.minimum(b, end_a)
        for lo, hi in ((a, mid), (mid, b)):
            has = hi > lo
            j = np.flatnonzero(has)
            lo_j, hi_j = lo[j], hi[j]
            blk_end = self.block_end[lo_j]
            top = np.where(
                (hi_j == blk_end)[:, None], self.totals[lo_j], self.exclusive[np.minimum(hi_j, self.block.shape[0] - 1)]
            )
            raw = top - self.exclusive[lo_j]
            delta = self.block[lo_j] * self.width - origin[idx[j]]
            out[idx[j]] += _shift(raw, delta)
        return out


_BINOMIAL = [[1], [1, 1], [1, 2, 1], [1, 3, 3, 1], [1, 4, 6, 4, 1]]


def _shift(raw, delta):
    """Moments of ``t + delta`` from moments of ``t`` (binomial formula)."""
    powers = [np.ones_like(delta)]
    for _ in range(4):
        powers.append(powers[-1] * delta)
    out = np.empty_like(raw)
    for k in range(5):
        out[:, k] = sum(_BINOMIAL[k][j] * powers[k - j] * raw[:, j] for j in range(k + 1))
    for k in range(3):
        out[:, 5 + k] = sum(
            _BINOMIAL[k][j] * powers[k - j] * raw[:, 5 + j] for j in range(k + 1)
        )
    return out


def window_sums_fast(scores, labels, queries, bandwidth, moments=None):
    """Window sums for the untempered Epanechnikov weights in O(log m) per query.

    The weights ``1 - u**2`` are a polynomial in ``s_i``, so every window sum is a
    combination of power sums over the left part (``s_i <= s'``) and the right part
    of the window. Queries whose sums would lose digits (a window much smaller than
    the blocks it reads from, or weights concentrated at the window's edges) and
    fallback queries are recomputed by :func:`window_sums_direct`, whose cost is
    their (small) window size.
    """
    if moments is None:
        moments = BlockMoments.from_sorted(scores, labels, bandwidth)
    h2 = bandwidth * bandwidth
    lo = np.searchsorted(scores, queries - bandwidth, side="right")
    mid = np.searchsorted(scores, queries, side="right")
    hi = np.searchsorted(scores, queries + bandwidth, side="left")
    left = moments.segment(lo, mid, queries)
    right = moments.segment(mid, hi, queries)
    M = left + right
    total = M[:, 0] - M[:, 2] / h2
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = (M[:, 5] - M[:, 7] / h2) / total
        sum_abs = (-(left[:, 1] - left[:, 3] / h2) + (right[:, 1] - right[:, 3] / h2)) / total
        sum_sq = (M[:, 2] - M[:, 4] / h2) / total
        sum_w2 = (M[:, 0] - 2.0 * M[:, 2] / h2 + M[:, 4] / (h2 * h2)) / (total * total)
    count = (hi - lo).astype(float)
    block_points = moments.block_end[np.minimum(lo, scores.shape[0] - 1)] - lo
    redo = (count <= 0) | (total < 0.05 * count) | (block_points > 64 * np.maximum(count, 1))
    fallback = np.zeros(queries.shape[0], dtype=bool)
    if redo.any():
        r = np.flatnonzero(redo)
        direct = window_sums_direct(scores, labels, queries[r], bandwidth, 1.0)
        eta[r], sum_abs[r] = direct.eta_hat, direct.sum_abs
        sum_sq[r], sum_w2[r] = direct.sum_squares, direct.sum_w2
        fallback[r] = direct.fallback
    return WindowSums(eta, sum_abs, sum_sq, sum_w2, fallback)
