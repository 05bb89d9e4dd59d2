"""The cell-based TV bound (SPEC section 14.5, Theorem 4 of the band proofs).

Pure functions on a sorted sample; inputs are assumed validated. Under TV's own
assumption (``TV(eta) <= V``) alone: blocks of whole tie blocks of about ``n/B``
points (the cells), KL–Chernoff limits of each block's mean label, the envelopes of
``|x - eta(x)|`` these allow on every gap between sorted scores, DKW on the quantile
scale to reach the population, and an oscillation term ``V * p*`` for the gap between
``eta`` and its block means.

The gap-envelope transfer (:func:`dkw_epsilon`, :func:`dkw_positions`,
:func:`sliding_extremum`, :func:`quantile_transfer`) is SPEC section 14 steps 5–6,
shared with the monotone band.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._chernoff import kl_lower_limit, kl_upper_limit


def dkw_epsilon(n, delta):
    """Massart's DKW radius ``sqrt(ln(2 / delta) / (2 n))``: ``sup |F_n - F| <= eps``
    with probability at least ``1 - delta``, for every law (atoms included)."""
    return math.sqrt(math.log(2.0 / delta) / (2.0 * n))


def dkw_positions(n, eps):
    """``K = ceil(n eps)`` (at least 1), rounded outwards: the sorted positions on
    either side that the DKW quantile sandwich may move a point."""
    K = math.ceil(n * eps)
    # n * eps rounded down to an integer it exceeds would lose a position.
    if K < n * eps:  # pragma: no cover - ceil of a float is never below it
        K += 1
    return max(1, int(K))


def sliding_extremum(values, width, kind):
    """``out[s] = max`` (or ``min``) ``values[s : s + width]`` for ``s = 0 ..
    len(values) - width``: the van Herk / Gil–Werman scheme, O(n) in numpy."""
    values = np.asarray(values, dtype=float)
    m = values.shape[0]
    if width > m:
        raise ValueError(f"width {width} exceeds the {m} values")
    ufunc = np.maximum if kind == "max" else np.minimum
    fill = -np.inf if kind == "max" else np.inf
    blocks = -(-m // width)
    padded = np.full(blocks * width, fill)
    padded[:m] = values
    grid = padded.reshape(blocks, width)
    prefix = ufunc.accumulate(grid, axis=1).ravel()
    suffix = ufunc.accumulate(grid[:, ::-1], axis=1)[:, ::-1].ravel()
    starts = np.arange(m - width + 1)
    return ufunc(suffix[starts], prefix[starts + width - 1])


def quantile_transfer(g_plus, g_minus, K):
    """``(I_plus, I_minus)`` of SPEC section 14 step 6 from the gap envelopes.

    ``g_plus`` and ``g_minus`` hold ``G_i`` for the gaps ``i = 0 .. n``; ``I_plus =
    (1/n) sum_j max{G+_i : i in [j - K, j + K - 1] and [0, n]}`` over ``j = 1 .. n``,
    and ``I_minus`` the same with the minimum of ``G-`` (unclipped).
    """
    n = g_plus.shape[0] - 1
    pad_hi, pad_lo = np.full(K, -np.inf), np.full(K, np.inf)
    upper = sliding_extremum(np.concatenate([pad_hi, g_plus, pad_hi]), 2 * K, "max")
    lower = sliding_extremum(np.concatenate([pad_lo, g_minus, pad_lo]), 2 * K, "min")
    # Padded position j holds gap j - K; the window of j = 1 .. n starts there.
    return float(np.mean(upper[1 : n + 1])), float(np.mean(lower[1 : n + 1]))


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


def tie_blocks(x):
    """``(starts, counts)`` of the runs of equal values of sorted ``x``."""
    n = x.shape[0]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(x[1:], x[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, n))
    return starts, counts


def block_boundaries(x, B):
    """Start positions (0-based, ascending, beginning with 0) of the blocks of sorted
    ``x``: whole tie blocks; a block ends after the tie block where the running count
    reaches or passes a multiple of ``n / B``, and before and after every tie block of
    at least ``n / B`` points (which is a block of its own). Scores only."""
    n = x.shape[0]
    starts, counts = tie_blocks(x)
    ends = starts + counts  # running count after each tie block
    # Integer arithmetic: the multiple of n / B crossed is floor(count * B / n).
    level = (ends * B) // n
    before = np.concatenate([[0], level[:-1]])
    cut_after = level > before  # a multiple reached inside or at the end of it
    heavy = counts * B >= n
    cut_after |= heavy
    cut_before = heavy.copy()
    cut_before[0] = False
    cut_after[:-1] |= cut_before[1:]
    return np.concatenate([[0], ends[:-1][cut_after[:-1]]]).astype(np.intp)


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
    n_blocks = first.shape[0]
    k = np.diff(np.append(first, n))
    csum = np.concatenate([[0], np.cumsum(y, dtype=np.int64)])
    S = csum[np.append(first[1:], n)] - csum[first]
    c = math.log(2.0 * n_blocks / delta1)
    lo = kl_lower_limit(S, k, c)
    hi = kl_upper_limit(S, k, c)
    last = np.append(first[1:], n) - 1
    multi = x[last] > x[first]
    largest = float(k[multi].max()) / n if multi.any() else 0.0

    block = np.repeat(np.arange(n_blocks), k)  # block of each sorted position
    # Gap i = 0 .. n is [x_i, x_{i+1}] with x_0 = 0, x_{n+1} = 1; block of x_i on
    # [x_i, x_{i+1}) (block 0 for i = 0), block of x_{i+1} at x_{i+1} (the last for
    # i = n).
    xl = np.concatenate([[0.0], x])
    xr = np.concatenate([x, [1.0]])
    bl = np.concatenate([[0], block])
    br = np.concatenate([block, [n_blocks - 1]])
    lo_l, hi_l, lo_r, hi_r = lo[bl], hi[bl], lo[br], hi[br]
    g_plus = np.maximum(
        np.maximum(xr - lo_l, hi_l - xl), np.maximum(xr - lo_r, hi_r - xr)
    )
    inside = np.maximum(np.maximum(xl - hi_l, lo_l - xr), 0.0)
    at_right = np.maximum(np.maximum(xr - hi_r, lo_r - xr), 0.0)
    g_minus = np.minimum(inside, at_right)

    eps = dkw_epsilon(n, delta2)
    K = dkw_positions(n, eps)
    i_plus, i_minus = quantile_transfer(g_plus, g_minus, K)
    lo_x, hi_x = lo[block], hi[block]
    cells_upper = float(np.mean(np.maximum(x - lo_x, hi_x - x)))
    cells_lower = float(np.mean(np.maximum(np.maximum(x - hi_x, lo_x - x), 0.0)))
    means = S / k
    oscillation = V * (largest + 2.0 * eps)
    return CellsResult(
        upper=i_plus + oscillation,
        lower=i_minus - oscillation,
        estimate=float(np.mean(np.abs(x - means[block]))),
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
