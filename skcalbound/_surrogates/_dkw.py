"""The population transfer of SPEC section 14 step 6, shared by the monotone band and
the cell-based TV bound (14.5): DKW on the quantile scale.

Pure functions; inputs are assumed validated. From gap envelopes ``G+_i`` and
``G-_i`` on the gaps ``i = 0 .. n`` between sorted scores (``x_0 = 0``,
``x_{n+1} = 1``): ``(1/n) sum_j max{G+_i : i in I_j}`` and the same with the
minimum of ``G-``, over ``j = 1 .. n``, with ``I_j = [j - K, j + K - 1] ∩ [0, n]``
and ``K = ceil(n eps)``: on ``sup |F - F_n| <= eps`` the population quantile of
every ``t in ((j - 1)/n, j/n]`` lies in those gaps.
"""

import math

import numpy as np
from scipy.ndimage import maximum_filter1d, minimum_filter1d

# K = ceil(n eps) must not round below n eps (the proof needs K >= n eps): a relative
# margin far below any statistical meaning guards against n * eps landing a rounding
# error below an integer.
_ROUND_OUT = 1e-12


def dkw_epsilon(n, delta):
    """Massart's DKW radius ``sqrt(ln(2 / delta) / (2 n))``: ``sup |F_n - F| <= eps``
    with probability at least ``1 - delta``, for every law (atoms included)."""
    return math.sqrt(math.log(2.0 / delta) / (2.0 * n))


def dkw_positions(n, eps):
    """``K = ceil(n eps)`` (at least 1), rounded outwards from ``n eps (1 + 1e-12)``
    so that a rounding error in ``n * eps`` never makes it smaller than ``n eps``:
    the sorted positions on either side that the DKW quantile sandwich may move a
    point."""
    return max(1, math.ceil(n * eps * (1.0 + _ROUND_OUT)))


def window_extremum(values, K, kind, output=None):
    """``out[j] = max`` (or ``min``) of ``values[j - K : j + K]``, the part inside
    the array, for every ``j``: a sliding window of ``2 K`` positions (O(n)).
    ``output``: an array of the same shape to write into (default: a new one)."""
    # Output j covers inputs j - K .. j + K - 1 (an even size 2K, origin 0);
    # "nearest" pads with the end values, which are inside every clipped window, so
    # the extrema are those over the part inside the array.
    size = min(2 * K, 2 * values.shape[0])
    extremum = maximum_filter1d if kind == "max" else minimum_filter1d
    return extremum(values, size, output=output, mode="nearest")


def transfer_side(g, K, kind, output=None):
    """``(1/n) sum_j ext{G_i : i in [j - K, j + K - 1] and [0, n]}`` over
    ``j = 1 .. n`` for the envelope ``g`` on the gaps ``0 .. n``, ``ext`` the
    maximum or the minimum (``kind``); ``output``: a buffer for the extrema."""
    return float(np.mean(window_extremum(g, K, kind, output)[1:]))


def quantile_transfer(g_plus, g_minus, K):
    """``(I_plus, I_minus)`` of SPEC section 14 step 6 from the gap envelopes.

    ``g_plus`` and ``g_minus`` hold ``G_i`` for the gaps ``i = 0 .. n``; ``I_plus =
    (1/n) sum_j max{G+_i : i in [j - K, j + K - 1] and [0, n]}`` over ``j = 1 .. n``,
    and ``I_minus`` the same with the minimum of ``G-`` (unclipped).
    """
    out = np.empty_like(g_plus)
    return transfer_side(g_plus, K, "max", out), transfer_side(g_minus, K, "min", out)
