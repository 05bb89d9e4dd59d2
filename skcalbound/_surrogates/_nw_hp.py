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
from dataclasses import dataclass, field

import numpy as np

from ._cells import BinStats
from ._nw import _kernel

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


_SPLIT_TAPS = (12, 21)  # kernels summed as two halves of at most 11 taps
_SPLIT_MIN_BINS = 512  # below, the second call costs more than it saves


def _conv(x, v, reversed_v=None):
    """The kernel sums ``sum_b x[b] v[q - b + K]`` at every cell ``q`` (``reversed_v``:
    ``v[::-1]`` as a contiguous array, when the caller has it)."""
    # Direct convolution, not an FFT: rounding relative to each output, not to the
    # largest cell (a cell next to 10**7 points must keep the digits of a cell next
    # to ten).
    G, taps = x.shape[0], v.shape[0]
    half = (taps - 1) // 2
    if _SPLIT_TAPS[0] <= taps <= _SPLIT_TAPS[1] and G >= _SPLIT_MIN_BINS:
        # numpy sums up to 11 taps in an inline loop and calls a dot product per
        # output from 12 on (~15 ns an output): the two halves of the kernel in the
        # loop, each output the sum of its two half sums, are 2-5x faster.
        out = np.convolve(x, v[: half + 1])[half : half + G]
        out[1:] += np.convolve(x, v[half + 1 :])[: G - 1]
        return out
    if taps <= G:
        # The middle G outputs of the full convolution, each from the same dot
        # product call: numpy's "same" mode only skips the outer ones, and
        # np.convolve(x, v) is np.correlate(x, v[::-1]) after argument checks that
        # cost as much as the sums on a coarse grid (and a copy of the reversed v).
        if reversed_v is None:
            reversed_v = v[::-1]
        return np.correlate(x, reversed_v, "same")
    return np.convolve(x, v)[half:][:G]


# Kernel sums by pairs of cells. With few points on a fine grid almost every cell is
# empty, and the direct convolution spends its time adding zeros: then the sums run
# over the pairs (output cell, nonempty input cell) within the kernel's reach only,
# and at the output cells that are read only. Each output is still its own sum of the
# same products (only their order changes), so it keeps the property above.
#
# Which of the two is cheaper comes from costs in nanoseconds fitted to timings of
# both inside fits (3,446 sums in fits of 100 to 30,000 points; within ~25% at the
# median; the halved kernels of _conv from their own timings): the direct convolution
# pays a numpy call and, per output, a dot product call (an inline loop up to 11
# taps); the pair sums pay numpy calls, a few passes over the pairs to build them, a
# product per pair and sum, and a reduction per output and sum.
#
# Pairs per block: a block's dozen temporaries (8 bytes a pair) stay small enough
# for glibc to reuse rather than hand back to the system and fault in again (in a
# fit at 10**3 points: 8,192 pairs a block, ~800 page faults; 4,096, ~200; 2,048,
# none, but more numpy calls: about even).
_PAIR_BLOCK = 2**12


def _dense_cost(n_bins, taps, n_sums):
    if taps <= 11:
        per_output = 0.5 * taps
    elif taps <= _SPLIT_TAPS[1] and n_bins >= _SPLIT_MIN_BINS:
        per_output = 2.0 + 0.5 * taps
    else:
        per_output = 19.0 + 0.13 * taps
    return n_sums * (4500.0 + n_bins * per_output)


def _pair_cost(n_pairs, n_outputs, n_sums, n_bins=0):
    """``n_bins``: the grid's size when the sums are wanted over every cell."""
    blocks = -(-n_pairs // _PAIR_BLOCK)
    return (
        43000.0
        + n_pairs * (12.0 + 2.3 * n_sums)
        + n_sums * (22.5 * n_outputs + 2800.0 * blocks + 1.0 * n_bins)
    )


def _nonzero(arrays):
    mask = arrays[0] != 0.0
    for a in arrays[1:]:
        mask |= a != 0.0
    return mask


def _dilate(mask, half):
    """``mask`` widened by ``half`` cells on both sides (exact: integer counts)."""
    G = mask.shape[0]
    ends = np.concatenate(([0], np.cumsum(mask, dtype=np.intp)))
    idx = np.arange(G)
    return ends[np.minimum(idx + half + 1, G)] > ends[np.maximum(idx - half, 0)]


class KernelSums:
    """Kernel sums ``sum_b x[b] v[q - b + K]`` of cell arrays ``x`` (the ``inputs``,
    one grid) with kernels ``v`` of ``2 K + 1`` taps, for the ``products`` ``(input,
    kernel)`` (indices), at the output cells of the boolean mask ``cells`` (None: every
    cell).

    By direct convolution (:func:`_conv`) or by pairs of cells, whichever the cost
    model says is cheaper: pairs (output cell ``q`` in ``cells``, input cell ``b``
    nonzero in some input, ``|q - b| <= K``), summed per output in the order of ``b``.
    Either way every output is its own sum of the same products ``x[b] * v[k]``.
    Called with ``p``, the sums of product ``p``: over every cell when :attr:`full`,
    else over ``cells`` (in the order of the cells); with ``full_ok``, a direct
    convolution's sums are given over every cell rather than at ``cells``. Direct
    convolutions are formed when asked for (a caller then holds few grids at once, as
    glibc likes), pairs all at once.
    """

    def __init__(self, inputs, kernels, products, cells=None, full_ok=False):
        self.inputs, self.kernels, self.products = inputs, kernels, products
        G = inputs[0].shape[0]
        taps = kernels[0].shape[0]
        self.half = (taps - 1) // 2
        self.full = cells is None or full_ok
        self.cells = cells
        self.sources = None  # the nonzero input cells, when summing by pairs
        self.results = None
        n_sums = len(products)
        dense = _dense_cost(G, taps, n_sums)
        # A first guess from the first input's nonzero cells (as if spread evenly at
        # given cells: about the fewest pairs when the outputs include the inputs),
        # so that a dense grid costs two counts.
        m = np.count_nonzero(inputs[0])
        if cells is None:
            n_out, all_cells, guess = min(G, m * taps), G, m * taps
        else:
            n_out, all_cells = np.count_nonzero(cells), 0
            guess = m * min(n_out * taps / G, taps)
        if n_out == 0 or _pair_cost(int(guess), n_out, n_sums, all_cells) >= dense:
            return
        nonzero = _nonzero(inputs)
        sources = np.flatnonzero(nonzero)
        if cells is None:  # the cells within reach of an input
            cells = _dilate(nonzero, self.half)
        out = np.flatnonzero(cells)
        lo = np.searchsorted(sources, out - self.half)
        hi = np.searchsorted(sources, out + self.half, side="right")
        counts = hi - lo
        n_pairs = int(counts.sum())
        # Pairs only when clearly cheaper: the direct convolution is the sturdier
        # of the two on a loaded machine (its memory traffic is sequential).
        if _pair_cost(n_pairs, out.shape[0], n_sums, all_cells) >= 0.8 * dense:
            return
        self.full = self.cells is None
        self.sources, self.out, self.lo, self.counts = sources, out, lo, counts
        self.n_pairs = n_pairs

    def __call__(self, p):
        if self.sources is None:
            i, k = self.products[p]
            out = _conv(self.inputs[i], self.kernels[k])
            return out if self.full else out[self.cells]
        if self.results is None:
            self.results = self._pair_sums()
        return self.results[p]

    def _pair_sums(self):
        n_out = self.out.shape[0]
        results = [np.zeros(n_out) for _ in self.products]
        x = {i: self.inputs[i][self.sources] for i, _ in self.products}
        edges = [0, n_out]
        if self.n_pairs > _PAIR_BLOCK:  # blocks of whole rows, ~_PAIR_BLOCK pairs each
            ends = np.cumsum(self.counts)
            cuts = np.arange(_PAIR_BLOCK, self.n_pairs, _PAIR_BLOCK)
            edges = np.unique(np.minimum(np.searchsorted(ends, cuts) + 1, n_out))
            edges = [0, *edges[edges < n_out].tolist(), n_out]
        for r0, r1 in zip(edges[:-1], edges[1:]):
            counts = self.counts[r0:r1]
            starts = np.cumsum(counts)
            n_pairs = int(starts[-1])
            if n_pairs == 0:
                continue
            starts -= counts
            # Input b (index into the nonzero cells) and tap k of every pair, row by
            # row.
            b = np.arange(n_pairs) - np.repeat(starts - self.lo[r0:r1], counts)
            k = np.repeat(self.out[r0:r1] + self.half, counts) - self.sources[b]
            rows = slice(r0, r1)
            if not counts.all():
                rows = r0 + np.flatnonzero(counts)
                starts = starts[rows - r0]
            xb, vk = {}, {}
            terms = np.empty(n_pairs)
            for result, (i, j) in zip(results, self.products):
                if i not in xb:
                    xb[i] = x[i].take(b)
                if j not in vk:
                    vk[j] = self.kernels[j].take(k)
                np.multiply(xb[i], vk[j], out=terms)
                result[rows] = np.add.reduceat(terms, starts)
        if self.full:
            full = []
            for result in results:
                a = np.zeros(self.inputs[0].shape[0])
                a[self.out] = result
                full.append(a)
            return full
        return results


# The kernel sums of the moments: (input, kernel) with inputs count, s1, s2 (and
# positives) and kernels ker, ker * offset, ker * offset**2, ker * ker.
_MOMENT_PRODUCTS = ((0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2), (0, 3))
_ETA_PRODUCT = (3, 0)


def _moment_kernels(offset, ker):
    return [ker, ker * offset, ker * offset**2, ker * ker]


def _moments(stats, offset, ker, cells=None, with_eta=True, full_ok=False):
    """``A0``, ``eta``, ``m1``, ``var`` and ``W2`` of :class:`HPTables` at the cells
    of the mask ``cells`` (None: every cell), as ``(moments, full)``: ``full`` when the
    arrays cover every cell (see :class:`KernelSums`)."""
    inputs = [stats.count, stats.s1, stats.s2]
    products = list(_MOMENT_PRODUCTS)
    if with_eta:
        inputs.append(stats.positives)
        products.append(_ETA_PRODUCT)
    kernels = _moment_kernels(offset, ker)
    sums = KernelSums(inputs, kernels, products, cells, full_ok)
    return _moments_of_sums(sums, with_eta), sums.full


def _moments_of_sums(sums, with_eta):
    """The moments from ``sums(p)``, the kernel sums of product ``p`` (element-wise:
    the same numbers for one grid or for grids stacked as rows)."""
    # Training point i in cell b = q - k: s_i - c_q = t_i - k / G.
    A0 = sums(0)
    P1 = sums(1) - sums(2)
    P2 = sums(3) - 2.0 * sums(4) + sums(5)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / A0
        m1 = P1 * inv
        # Variance of s_i under the weights, >= 0 up to rounding.
        var = np.maximum(P2 * inv - m1 * m1, 0.0)
        W2 = sums(6) * inv * inv
        eta = sums(7) * inv if with_eta else None
    return {"A0": A0, "eta": eta, "m1": m1, "var": var, "W2": W2}


@dataclass(frozen=True)
class HPTables:
    """Per-cell moments of the normalised kernel weights, for one training set.

    For a query ``s' = c_q + e``: ``sum w y = eta[q]``, ``sum w (s_i - s') = m1[q] -
    e``, ``sum w (s_i - s')**2 = var[q] + (m1[q] - e)**2``, ``sum w**2 = W2[q]``.
    ``A0[q] == 0`` means no training point within the kernel: nearest-neighbour
    fallback.

    Tables built for some cells only (``from_stats(..., cells=)``) hold NaN at the
    others, except ``A0 == 0`` at every fallback cell, until :meth:`complete` computes
    them (``computed``: which cells are; None when all are).
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
    # Of tables built for some cells only: the training sums, to complete them.
    stats: BinStats = field(default=None, repr=False, compare=False)
    computed: np.ndarray = field(default=None, repr=False, compare=False)

    @classmethod
    def from_stats(cls, stats, bandwidth, tempering, *, with_eta=True, cells=None):
        """The tables of the points of ``stats``; with ``cells`` (a mask), computed at
        those cells at least (at every cell if that is cheaper)."""
        G = stats.count.shape[0]
        offset, ker = _kernel(G, bandwidth, tempering)
        moments, full = _moments(stats, offset, ker, cells, with_eta, full_ok=True)
        computed = None
        if not full:
            computed = cells.copy()
            for name, values in moments.items():
                if values is not None:
                    table = np.full(G, np.nan)
                    table[cells] = values
                    moments[name] = table
            # A0 is exact wherever it is 0 (no training point within the kernel's
            # positive reach), computed or not.
            reach = (np.count_nonzero(ker) - 1) // 2
            moments["A0"][~_dilate(stats.count != 0.0, reach)] = 0.0
        return cls(
            G,
            float(bandwidth),
            float(tempering),
            ker,
            stats.count,
            **moments,
            stats=None if computed is None else stats,
            computed=computed,
        )

    def complete(self, cells):
        """Compute the entries at ``cells`` (table cells) not computed yet."""
        if self.computed is None:
            return
        missing = np.zeros(self.n_bins, dtype=bool)
        missing[cells] = True
        missing &= ~self.computed
        if not missing.any():
            return
        offset, ker = _kernel(self.n_bins, self.bandwidth, self.tempering)
        moments, _ = _moments(self.stats, offset, ker, missing, self.eta is not None)
        for name, values in moments.items():
            if values is not None:
                getattr(self, name)[missing] = values
        self.computed[missing] = True

    def constant(self, b2):
        """The part of ``g`` depending on the cell only: ``b2/2 var + sqrt(W2)/2``."""
        with np.errstate(invalid="ignore"):
            return 0.5 * b2 * self.var + 0.5 * np.sqrt(self.W2)


def search_objective(pyramid, bandwidth, tempering, b1, b2):
    """Mean of ``min(g, 1)`` over the training points, from their cell sums only.

    Label-free (SPEC section 12): ``g`` at a cell's training points uses the cell's
    mean training score as the query for the first moment (see the module docstring),
    and the exact mean of the second moment over the cell's points. The kernel sums
    are needed at those cells only.
    """
    stats = pyramid.at(grid_size(bandwidth, _SEARCH_BINS_PER_BANDWIDTH))
    offset, ker = _kernel(stats.count.shape[0], bandwidth, tempering)
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
    offset, ker = _kernel(G, bandwidth, tempering)
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
