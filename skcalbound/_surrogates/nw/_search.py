"""The label-free bandwidth search of the NW smoother (SPEC section 12).

Inputs are assumed validated. Each training set's cell sums on the fine grid and
every coarser power of two (:class:`Pyramid`); the plug-in bandwidth (Appendix E);
the candidate with the smallest mean ``min(g, 1)`` over the training points, on 4
cells per bandwidth. See ``docs/internals/nw.rst``.
"""

import math

import numpy as np

from .._cells import BinStats
from ._kernel import (
    _MOMENT_PRODUCTS,
    KernelSums,
    _conv,
    _moment_kernels,
    _moments_of_sums,
    grid_size,
    kernel,
)

_SEARCH_BINS_PER_BANDWIDTH = 4
# The label-free bandwidth grid: h_plugin * 2**(k / 2), k = -4 .. 8 (SPEC section 12).
SEARCH_EXPONENTS = tuple(k / 2.0 for k in range(-4, 9))
BANDWIDTH_LIMITS = (1e-4, 0.5)


def _own_root(coefficient, target, power, cap=2.0**20):
    """``(target / coefficient) ** (1 / power)`` (where ``coefficient * t**power``
    alone reaches ``target``), at most ``cap``; 0 when ``coefficient`` is 0."""
    if coefficient <= 0.0:
        return 0.0
    if coefficient * cap**power <= target:
        return cap
    return (target / coefficient) ** (1.0 / power)


def plugin_bandwidth(m, b1, b2):
    r"""Plug-in bandwidth of the smoother (paper Appendix E), clipped to [1e-4, 1/4].

    Parameters
    ----------
    m : int
        Training size.
    b1, b2 : float
        Bounds on :math:`|\eta'|` and :math:`|\eta''|`.

    Returns
    -------
    float
        :math:`h' = t^2` where :math:`t > 0` solves :math:`2 b t^5 + a t^3 - c/2 = 0`.

    Notes
    -----
    .. math:: a = \tfrac38 b_1, \quad b = \tfrac1{10} b_2, \quad
              c = \frac{1.15}{2\sqrt{2m}}.

    The left side is increasing and convex in :math:`t > 0`, so Newton's method
    started to the right of the root (where either term alone reaches :math:`c/2`)
    decreases monotonically to it. The result is clipped to :math:`[10^{-4}, 1/4]`,
    i.e. :math:`t \le 1/2`: when the left side is not positive at :math:`t = 1/2`
    (the root is beyond it, or there is none, :math:`b_1 = b_2 = 0`) the upper clip
    :math:`1/4` is returned at once. The start is at most :math:`2^{20}`: tiny
    :math:`b_1` or :math:`b_2` put a term's own root near :math:`10^{100}`, where
    :math:`t^5` overflows.
    """
    a, b, c = 3.0 * b1 / 8.0, b2 / 10.0, 1.15 / (2.0 * math.sqrt(2.0 * m))
    if 2.0 * b * 0.5**5 + a * 0.5**3 <= 0.5 * c:
        return 0.25
    t = max(_own_root(2.0 * a, c, 3), _own_root(4.0 * b, c, 5))
    for _ in range(100):
        f = 2.0 * b * t**5 + a * t**3 - 0.5 * c
        step = f / (10.0 * b * t**4 + 3.0 * a * t**2)
        t -= step
        if step <= 4.0 * np.finfo(float).eps * t:
            break
    return float(min(max(t * t, 1e-4), 0.25))


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


def search_objective(pyramid, bandwidth, tempering, b1, b2):
    """Mean of ``min(g, 1)`` over the training points, from their cell sums only.

    Label-free (SPEC section 12): ``g`` at a cell's training points uses the cell's
    mean training score as the query for the first moment (see the module docstring),
    and the exact mean of the second moment over the cell's points. The kernel sums
    are needed at those cells only.
    """
    stats = pyramid.at(grid_size(bandwidth, _SEARCH_BINS_PER_BANDWIDTH))
    offset, ker = kernel(stats.count.shape[0], bandwidth, tempering)
    return _objective(stats, offset, ker, b1, b2)


def _objective(stats, offset, ker, b1, b2):
    used = stats.count != 0.0
    sums = _search_sums(stats, _moment_kernels(offset, ker), used)
    return _objective_of_sums(stats, used, sums, b1, b2)


def _search_sums(stats, kernels, used):
    """The search's kernel sums, needed at the occupied cells ``used`` only."""
    inputs = [stats.count, stats.s1, stats.s2]
    return KernelSums(inputs, kernels, _MOMENT_PRODUCTS, used, full_ok=True)


def _objective_of_sums(stats, used, sums, b1, b2):
    tables = _moments_of_sums(sums, with_eta=False)
    m1, var, W2 = tables["m1"], tables["var"], tables["W2"]
    occupied = np.flatnonzero(used)
    if sums.full:
        m1, var, W2 = m1[occupied], var[occupied], W2[occupied]
    n = stats.count[occupied]
    g = _clipped_smoothing(
        n, stats.s1[occupied], stats.s2[occupied], m1, var, W2, b1, b2
    )
    return float(np.dot(n, g) / n.sum())


def _clipped_smoothing(n, s1, s2, m1, var, W2, b1, b2):
    """The objective's ``min(g, 1)`` at occupied cells (element-wise)."""
    mean_t = s1 / n
    d = m1 - mean_t
    spread = np.maximum(s2 / n - mean_t * mean_t, 0.0)
    g = b1 * np.abs(d) + 0.5 * b2 * (var + d * d + spread) + 0.5 * np.sqrt(W2)
    return np.minimum(g, 1.0)


# Grids up to which the search shares the arithmetic of several training sets: there
# numpy's fixed cost per call is most of it; on finer grids the stacked temporaries
# outgrow the caches and each set is cheaper alone.
_SHARED_MAX_BINS = 1024


def search_objectives(pyramids, bandwidth, tempering, b1, b2):
    """:func:`search_objective` of several training sets (``pyramids``) at one
    bandwidth: a list of floats.

    Equal to one call per set, to the bit. Each set is still convolved on its own and
    its mean taken on its own; on coarse grids the sets share everything else: the
    kernel, and the element-wise arithmetic, done once on the occupied cells of every
    set, one after the other. The sets whose kernel sums go by pairs of cells (few
    points on a fine grid, :class:`KernelSums`) take the one-set path.
    """
    levels = [p.at(grid_size(bandwidth, _SEARCH_BINS_PER_BANDWIDTH)) for p in pyramids]
    G = levels[0].count.shape[0]
    offset, ker = kernel(G, bandwidth, tempering)
    kernels = _moment_kernels(offset, ker)
    values = [None] * len(levels)
    shared = []
    for j, stats in enumerate(levels):
        used = stats.count != 0.0
        sums = _search_sums(stats, kernels, used)
        if sums.sources is None and G <= _SHARED_MAX_BINS:  # by direct convolution
            shared.append(j)
        else:
            values[j] = _objective_of_sums(stats, used, sums, b1, b2)
    if shared:
        count, s1, s2 = (
            np.stack([getattr(levels[j], name) for j in shared])
            for name in ("count", "s1", "s2")
        )
        sums = np.empty((len(_MOMENT_PRODUCTS), len(shared), G))
        reversed_kernels = [np.ascontiguousarray(v[::-1]) for v in kernels]
        for row in range(len(shared)):
            inputs = (count[row], s1[row], s2[row])
            for p, (i, k) in enumerate(_MOMENT_PRODUCTS):
                sums[p, row] = _conv(inputs[i], kernels[k], reversed_kernels[k])
        used = count != 0.0
        moments = _moments_of_sums(sums[:, used].__getitem__, with_eta=False)
        n = count[used]
        g = _clipped_smoothing(
            n, s1[used], s2[used], moments["m1"], moments["var"], moments["W2"], b1, b2
        )
        ends = np.cumsum(np.count_nonzero(used, axis=1)).tolist()
        for j, start, end in zip(shared, [0, *ends], ends):
            # Each set's operands as fresh arrays, as in the one-set path (a BLAS
            # dot product may sum differently at another memory alignment).
            n_set, g_set = n[start:end].copy(), g[start:end].copy()
            values[j] = float(np.dot(n_set, g_set) / n_set.sum())
    return values


def choose_bandwidths(pyramids, candidate_sets, tempering, b1, b2):
    """Per training set ``r`` (``pyramids[r]``: its :class:`Pyramid`), the candidate
    among ``candidate_sets[r]`` (sorted, a geometric grid) with the smallest
    :func:`search_objective`, found coarse to fine: every other candidate first, then
    the two between the best of those and its neighbours (the objective is a bias that
    grows with the bandwidth plus a noise term that shrinks with it, so this finds the
    grid's minimiser; ties go to the smaller bandwidth). The smallest candidates cost
    the most (the finest grids), and this skips most of them.

    The training sets with the same candidates (the folds of one design, but for a
    row of difference in size) are searched in lockstep, each candidate's objective
    of several sets in one call of :func:`search_objectives`.
    """
    chosen = [None] * len(candidate_sets)
    groups = {}
    for r, candidates in enumerate(candidate_sets):
        if len(candidates) == 1:
            chosen[r] = float(candidates[0])
        else:
            groups.setdefault(tuple(candidates), []).append(r)
    for candidates, rows in groups.items():
        values = {}

        def evaluate(i, rows):
            todo = [r for r in rows if (i, r) not in values]
            if todo:
                found = search_objectives(
                    [pyramids[r] for r in todo], candidates[i], tempering, b1, b2
                )
                values.update(zip(((i, r) for r in todo), found))

        coarse = range(0, len(candidates), 2)
        for i in coarse:
            evaluate(i, rows)
        finalists = {}
        for r in rows:
            best = min(coarse, key=lambda i: values[i, r])
            neighbours = [j for j in (best - 1, best + 1) if 0 <= j < len(candidates)]
            finalists[r] = [best, *neighbours]
        for i in range(len(candidates)):
            evaluate(i, [r for r in rows if i in finalists[r]])
        for r in rows:
            best = min(finalists[r], key=lambda i: (values[i, r], i))
            chosen[r] = float(candidates[best])
    return chosen
