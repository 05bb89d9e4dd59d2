"""The cell-based TV bound (SPEC section 14.5, Theorem 4 of the band proofs).

Pure functions on a sorted sample; inputs are assumed validated. Under TV's own
assumption (``TV(eta) <= V``) alone: blocks of whole tie blocks of about ``n/B``
points (the cells), KL–Chernoff limits of each block's mean label, the envelopes of
``|x - eta(x)|`` these allow on every gap between sorted scores, DKW on the quantile
scale to reach the population (the monotone band's transfer, :mod:`._dkw`), and an
oscillation term ``V * p*`` for the gap between ``eta`` and its block means.
"""

import math
from dataclasses import dataclass

import numpy as np

from ._chernoff import kl_lower_limit, kl_upper_limit
from ._dkw import dkw_epsilon, dkw_positions, quantile_transfer


def _objective(B, V, delta1, n):
    return V / B + np.sqrt(np.log(2.0 * B / delta1) * B / (2.0 * n))


def choose_blocks(n, V, delta1):
    """The integer ``B >= 1`` (the smallest, if several) minimising ``V / B +
    sqrt(ln(2 B / delta1) B / (2 n))`` over ``1 .. n``: a function of ``n``, ``V`` and
    ``delta1`` only, never of the data."""
    top = 1
    while True:
        top = min(n, 2 * top)
        B = np.arange(1, top + 1, dtype=float)
        f = _objective(B, V, delta1, n)
        best = int(np.argmin(f))
        # Beyond ``top`` the square root alone (increasing in B) already exceeds the
        # best value, so nothing larger can win.
        tail = math.sqrt(math.log(2.0 * top / delta1) * top / (2.0 * n))
        if top == n or tail >= f[best]:
            return best + 1


def block_boundaries(x, B):
    """Start positions (0-based, ascending, beginning with 0) of the blocks of sorted
    ``x``: whole tie blocks; a block ends after the tie block where the running count
    reaches or passes a multiple of ``n / B``, and before and after every tie block of
    at least ``n / B`` points (which is a block of its own). Scores only.

    The running count reaches ``m n / B`` inside the tie block holding position
    ``ceil(m n / B) - 1``; consecutive such positions (with 0) are at most
    ``ceil(n / B)`` apart, so every tie of at least ``n / B`` points holds one of
    them. ``O(B log n)``: no pass over the rows.
    """
    n = x.shape[0]
    m = np.arange(1, B + 1, dtype=np.int64)
    probes = np.concatenate([[0], -((-m * n) // B) - 1])  # ceil(m n / B) - 1
    values = x[probes]
    left = np.searchsorted(x, values, side="left")
    right = np.searchsorted(x, values, side="right")
    heavy = (right - left) * B >= n
    cuts = np.concatenate([right[1:], left[heavy], right[heavy]])
    cuts = np.unique(cuts)
    return np.concatenate([[0], cuts[(cuts > 0) & (cuts < n)]]).astype(np.intp)


@dataclass(frozen=True)
class CellsResult:
    """Every number of the cell bound (SPEC section 14.5), unclipped."""

    upper: float
    lower: float
    estimate: float
    cells_upper: float
    cells_lower: float
    transfer_upper: float
    transfer_lower: float
    oscillation: float
    n_blocks: int
    largest_block_mass: float
    n_cells_blocks: int
    epsilon: float
    K: int
    edges: np.ndarray  # first score of blocks 1 .. (cell edges)
    means: np.ndarray  # S_b / k_b
    lo: np.ndarray
    hi: np.ndarray


def cells_bound(x, y, V, delta):
    """The cell bound of SPEC section 14.5 on a sorted sample.

    Parameters
    ----------
    x : ndarray of shape (n,)
        Scores in [0, 1], sorted ascending.
    y : ndarray of shape (n,)
        0/1 labels in the same order (their order inside a tie block does not
        matter: every block holds whole tie blocks).
    V : float
        The assumed total variation of ``eta``.
    delta : float
        ``1 - confidence_level``; ``delta1 = delta2 = delta / 2``.

    Returns
    -------
    CellsResult
    """
    n = x.shape[0]
    delta1 = delta2 = 0.5 * delta
    B = choose_blocks(n, V, delta1)
    first = block_boundaries(x, B)
    stop = np.append(first[1:], n)
    n_blocks = first.shape[0]
    k = stop - first
    S = np.add.reduceat(y, first, dtype=np.int64)
    c = math.log(2.0 * n_blocks / delta1)
    lo = kl_lower_limit(S, k, c)
    hi = kl_upper_limit(S, k, c)
    multi = x[stop - 1] > x[first]
    largest = float(k[multi].max()) / n if multi.any() else 0.0
    means = S / k

    # Gap i = 0 .. n is [x_i, x_{i+1}] (1-based scores, x_0 = 0, x_{n+1} = 1): the
    # block of x_i on [x_i, x_{i+1}) (block 0 for i = 0), the block of x_{i+1} at
    # x_{i+1} (the last block for i = n). In 0-based arrays gap i has x[i - 1] on
    # its left and x[i] on its right.
    g_plus, g_minus = np.empty(n + 1), np.empty(n + 1)
    cells_upper = cells_lower = estimate = 0.0
    for b in range(n_blocks):
        a, e, L, H = int(first[b]), int(stop[b]), float(lo[b]), float(hi[b])
        xb = x[a:e]
        # Gaps a + 1 .. e - 1 lie inside the block: sup of max(x - L, H - x) at the
        # ends, inf of dist(x, [L, H]) the distance between the intervals (the
        # value at the right end, with the same block, is no smaller).
        left, right = xb[:-1], xb[1:]
        np.maximum(right - L, H - left, out=g_plus[a + 1 : e])
        inside = g_minus[a + 1 : e]
        np.maximum(left - H, L - right, out=inside)
        np.maximum(inside, 0.0, out=inside)
        cells_upper += float(np.maximum(xb - L, H - xb).sum())
        cells_lower += float(np.maximum(np.maximum(xb - H, L - xb), 0.0).sum())
        estimate += float(np.abs(xb - means[b]).sum())
    # The gaps between blocks, and gaps 0 and n: the left end's block on the gap,
    # the right end's block at the right end.
    edge = np.concatenate([first, [n]])
    bl = np.concatenate([[0], np.arange(n_blocks)])
    br = np.append(np.arange(n_blocks), n_blocks - 1)
    xl = np.where(edge > 0, x[np.maximum(edge - 1, 0)], 0.0)
    xr = np.where(edge < n, x[np.minimum(edge, n - 1)], 1.0)
    lo_l, hi_l, lo_r, hi_r = lo[bl], hi[bl], lo[br], hi[br]
    g_plus[edge] = np.maximum(
        np.maximum(xr - lo_l, hi_l - xl), np.maximum(xr - lo_r, hi_r - xr)
    )
    inside = np.maximum(np.maximum(xl - hi_l, lo_l - xr), 0.0)
    at_right = np.maximum(np.maximum(xr - hi_r, lo_r - xr), 0.0)
    g_minus[edge] = np.minimum(inside, at_right)

    eps = dkw_epsilon(n, delta2)
    K = dkw_positions(n, eps)
    i_plus, i_minus = quantile_transfer(g_plus, g_minus, K)
    cells_upper, cells_lower = cells_upper / n, cells_lower / n
    oscillation = V * (largest + 2.0 * eps)
    return CellsResult(
        upper=i_plus + oscillation,
        lower=i_minus - oscillation,
        estimate=estimate / n,
        cells_upper=cells_upper,
        cells_lower=cells_lower,
        transfer_upper=i_plus - cells_upper,
        transfer_lower=i_minus - cells_lower,
        oscillation=oscillation,
        n_blocks=int(n_blocks),
        largest_block_mass=largest,
        n_cells_blocks=int(B),
        epsilon=eps,
        K=K,
        edges=x[first[1:]].copy(),
        means=means,
        lo=lo,
        hi=hi,
    )


@dataclass(frozen=True)
class CellMeans:
    """The block means as a right-continuous step function: block ``b``'s mean label
    on the cell it owns, ``[x_first(b), x_first(b + 1))`` (the first from 0, the last
    to 1). Histogram binning with equal-count bins that never split a tie."""

    edges: np.ndarray
    values: np.ndarray
    n_train: int

    def __call__(self, scores):
        scores = np.asarray(scores, dtype=float)
        return self.values[np.searchsorted(self.edges, scores, side="right")]
