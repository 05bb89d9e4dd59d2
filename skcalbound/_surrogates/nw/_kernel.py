"""Kernel weights of the grid NW smoother and their sums over cells (SPEC 4, 12).

Inputs are assumed validated. A training point in cell ``b`` gets, from a query in
cell ``q``, the weight ``ker(q - b) / A0(q)`` (the tempered Epanechnikov kernel at
cell offsets); :class:`KernelSums` sums cell arrays against such kernels, by direct
convolution or by pairs of nonempty cells. See ``docs/internals/nw.rst``.
"""

import math

import numpy as np

_FINAL_BINS_PER_BANDWIDTH = 64
_MAX_BINS = 2**20


def bin_centres(n_bins):
    return (np.arange(n_bins) + 0.5) / n_bins


def kernel(n_bins, bandwidth, tempering):
    """Offsets ``k / G`` and kernel values for ``k = -K..K`` (0 where ``|u| >= 1``)."""
    half = min(int(math.floor(bandwidth * n_bins)), n_bins - 1)
    k = np.arange(-half, half + 1, dtype=float)
    u = k / (n_bins * bandwidth)
    ker = np.maximum(1.0 - u * u, 0.0)
    if tempering != 1.0:
        ker = ker**tempering
    ker[np.abs(u) >= 1.0] = 0.0
    # Values below 1e-100 (only with an extreme tempering) count as zero: any weights
    # of the training scores are allowed, and then every nonzero A0 is >= 1e-100, so
    # A0**2 and the squared weights stay normal doubles and sum w**2 is never 0/0.
    ker[ker < 1e-100] = 0.0
    return k / n_bins, ker


def grid_size(bandwidth, bins_per_bandwidth=_FINAL_BINS_PER_BANDWIDTH):
    """The power of two with at least ``bins_per_bandwidth`` cells per bandwidth, in
    ``[16, 2**20]``."""
    target = bins_per_bandwidth / bandwidth
    exponent = max(4, math.ceil(math.log2(target)))
    return 1 << min(exponent, 20)


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
        # output from 12 on: the two halves of the kernel in the loop, each output
        # the sum of its two half sums, are faster.
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
# both inside fits of 100 to 30,000 points (the halved kernels of _conv from their
# own timings): the direct convolution
# pays a numpy call and, per output, a dot product call (an inline loop up to 11
# taps); the pair sums pay numpy calls, a few passes over the pairs to build them, a
# product per pair and sum, and a reduction per output and sum.
#
# Pairs per block: a block's dozen temporaries (8 bytes a pair) stay small enough
# for glibc to reuse rather than hand back to the system and fault in again (larger
# blocks page-fault, smaller ones pay more numpy calls).
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
