"""NW window sums on a fine grid of training-score bins (work in progress, private).

The smoother's weights depend on the query's bin ``q`` and the training point's bin
``b`` only: ``w_i = ker(q - b_i) / A0(q)`` with ``ker(k) = max(1 - (k / (G h))**2,
0) ** tempering`` at bin-centre offsets, so any tempering is served exactly. Lemma 6
holds for any weights that depend on training scores only; the distance sums below
use the *actual* scores, exactly: for a bin other than the query's, all its points
lie on one side of the query, so ``sum |s' - s_i|`` is linear in the bin's count and
sum of offsets; squared distances are a quadratic in the same per-bin sums; only the
query's own bin is split at the query's rank. Every per-bin-of-queries quantity is a
short convolution over ``G`` bins. Inputs are assumed validated; scores are sorted.
"""

import numpy as np

from ._nw import WindowSums, _nearest_neighbour_sums


def _kernel(n_bins, bandwidth, tempering):
    """Kernel values at integer bin offsets ``k = -K..K`` (zero outside ``|u| < 1``)."""
    half = int(np.floor(bandwidth * n_bins))
    k = np.arange(-half, half + 1, dtype=float)
    u = k / (n_bins * bandwidth)
    ker = np.maximum(1.0 - u * u, 0.0)
    if tempering != 1.0:
        ker = ker**tempering
    ker[np.abs(u) >= 1.0] = 0.0
    return k / n_bins, ker


def window_sums_grid(scores, labels, queries, bandwidth, tempering, n_bins):
    """Window sums for grid-binned weights, in O(G K + m + q) for K kernel offsets.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        Sorted training scores in [0, 1].
    labels : ndarray of shape (m,)
        Training labels in {0, 1}, float64.
    queries : ndarray of shape (q,)
        Scores in [0, 1] at which to evaluate.
    bandwidth, tempering : float
    n_bins : int
        Number of grid bins ``G`` on [0, 1].

    Returns
    -------
    WindowSums
    """
    G = n_bins
    width = 1.0 / G
    b = np.minimum((scores * G).astype(np.int64), G - 1)
    t = scores - (b + 0.5) * width  # offset from the bin centre, in [-width/2, width/2]
    count = np.bincount(b, minlength=G).astype(float)
    pos = np.bincount(b, weights=labels, minlength=G)
    s1 = np.bincount(b, weights=t, minlength=G)
    s2 = np.bincount(b, weights=t * t, minlength=G)
    offset, ker = _kernel(G, bandwidth, tempering)
    sign = np.sign(offset)
    ker_off = ker.copy()
    ker_off[offset == 0] = 0.0

    def conv(x, v):
        return np.convolve(x, v, mode="same")

    A0 = conv(count, ker)
    AY = conv(pos, ker)
    AW2 = conv(count, ker * ker)
    D1 = conv(count, ker_off * np.abs(offset)) - conv(s1, ker_off * sign)
    E1 = conv(count, ker_off * sign)
    Q0 = conv(count, ker * offset**2) - 2.0 * conv(s1, ker * offset) + conv(s2, ker)
    Q1 = 2.0 * conv(count, ker * offset) - 2.0 * conv(s1, ker)

    q = np.minimum((queries * G).astype(np.int64), G - 1)
    e = queries - (q + 0.5) * width
    a0 = A0[q]
    # The query's own bin, split at the query: points <= s' on the left.
    start = np.concatenate(([0], np.cumsum(count.astype(np.int64))))
    rank = np.searchsorted(scores, queries, side="right")
    # Offsets from bin centres are small and of both signs, so their running sum
    # stays small; extended precision keeps the within-bin differences exact enough.
    prefix_t = np.concatenate(([0.0], np.cumsum(t, dtype=np.longdouble)))
    n_left = (rank - start[q]).astype(float)
    t_left = (prefix_t[rank] - prefix_t[start[q]]).astype(float)
    n_right = count[q] - n_left
    t_right = s1[q] - t_left
    own_abs = (n_left * e - t_left) + (t_right - n_right * e)

    with np.errstate(divide="ignore", invalid="ignore"):
        eta = AY[q] / a0
        sum_abs = (D1[q] + e * E1[q] + own_abs) / a0
        sum_sq = (Q0[q] + e * Q1[q] + e * e * a0) / a0
        sum_w2 = AW2[q] / (a0 * a0)
    fallback = ~(a0 > 0)
    if fallback.any():
        f = np.flatnonzero(fallback)
        eta[f], sum_abs[f], sum_sq[f], sum_w2[f] = _nearest_neighbour_sums(
            scores, labels, queries[f], np.searchsorted(scores, queries[f], side="left")
        )
    return WindowSums(eta, sum_abs, sum_sq, sum_w2, fallback)
