"""Nadaraya–Watson surrogate and its smoothing-error sums on a fine grid (SPEC section 4).

Inputs are assumed validated; scores are sorted.

Why a grid: the five window sums of every validation point (``sum w``, ``sum w y``,
``sum w |d|``, ``sum w d**2``, ``sum w**2``) by a loop over each window cost
``O(n h')`` per point, far too slow at 10**7 scores, and the textbook prefix-sum trick
(the untempered kernel is a polynomial in the scores) loses its digits to cancellation
and cannot serve the paper's tempering ``1.2``. No library computes exact
kernel-smoother *error sums* for arbitrary weights, so this module does it.

The weights. Scores are binned on ``G`` equal bins of [0, 1] (``G`` a power of two,
so that ``s * G`` and every bin edge are exact). A training point in bin ``b`` gets,
from a query in bin ``q``, the weight ``ker(q - b) / A0(q)`` with
``ker(k) = (1 - (k / (G h'))**2) ** tempering`` for ``|k| < G h'`` and zero beyond:
the tempered Epanechnikov kernel at bin offsets, with any tempering served exactly. If
no training point receives weight, the query falls back to equal weights on the
nearest training score(s). These weights depend on training *scores* only, which is
all Lemma 6 asks; the sums below are exact for them.

The sums. Per-bin moments (count, positives, and the sums of offsets ``t = s - c_b``
and ``t**2`` from bin centres ``c_b``) turn every per-query-bin sum into a short
convolution over bins: for a bin ``b != q`` all its points lie on one side of the
query, so ``sum |s' - s_i|`` is linear in the bin's count and offset sum, and squared
distances are a quadratic in the same sums. Only the query's own bin needs the
split at the query: the sum over the training points of that bin at or below the
query, from a prefix sum of offsets from the *bin mean*. Those offsets sum to zero
over every bin, so the prefix never drifts far from zero and a difference of two
prefixes keeps its digits (the classic failure of prefix sums over 10**7 values).
"""

import math
from dataclasses import dataclass

import numpy as np


# The kernel is sampled at >= this many bin offsets on each side of zero (unless the
# bandwidth is below 16 bins of the finest grid): enough that the binned kernel behaves
# like the continuous one (on the perturbed h = 2^-6 problem at n = 10^6 the bound
# moves by 3e-5 between 8 and 64 bins per bandwidth), few enough that the
# convolutions stay cheap.
_BINS_PER_BANDWIDTH = 16
_MAX_BINS = 2**20
# Rows of the global pass at a time: keeps the temporaries in cache.
_CHUNK = 2**18
# Queries per chunk of the per-query arithmetic (a few arrays of 128 kB, in L2).
_QUERY_CHUNK = 2**14


def n_bins_for(bandwidth):
    """Grid size: the power of two with at least 16 bins per bandwidth, in [16, 2**20]."""
    target = _BINS_PER_BANDWIDTH / bandwidth
    exponent = math.ceil(math.log2(target)) if target > 16 else 4
    return 1 << min(exponent, 20)


def bin_of(scores, n_bins):
    """Bin ids ``min(floor(s * G), G - 1)`` (exact: ``G`` is a power of two)."""
    b = np.multiply(scores, n_bins).astype(np.intp)
    return np.minimum(b, n_bins - 1, out=b)


def bin_centres(n_bins):
    return (np.arange(n_bins) + 0.5) / n_bins


def _kernel(n_bins, bandwidth, tempering):
    """Offsets ``k / G`` and kernel values for ``k = -K..K`` (zero where ``|u| >= 1``)."""
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


@dataclass(frozen=True)
class BinStats:
    """Per-bin count, positives, and sums of ``t`` and ``t**2`` (offsets from centres)."""

    count: np.ndarray
    positives: np.ndarray
    s1: np.ndarray
    s2: np.ndarray

    def __sub__(self, other):
        return BinStats(
            self.count - other.count,
            self.positives - other.positives,
            self.s1 - other.s1,
            self.s2 - other.s2,
        )


@dataclass(frozen=True)
class KernelTables:
    """Per-query-bin sums for one training set, one bandwidth and one tempering.

    For a query ``s' = c_q + e`` in bin ``q``, with ``left`` the sum of ``s' - s_i``
    over the training points of bin ``q`` at or below ``s'``:
    ``sum w = 1``, ``sum w y = eta[q]``,
    ``sum w |d| = (D1[q] + e * E1[q] + 2 * left) / A0[q]``,
    ``sum w d**2 = (Q0[q] + e * Q1[q]) / A0[q] + e**2``, ``sum w**2 = W2[q]``
    (``tests/test_nw_surrogate.py`` checks each against a loop over the window).
    ``A0[q] == 0`` (no training point within the kernel) means nearest-neighbour
    fallback.
    """

    n_bins: int
    bandwidth: float
    tempering: float
    A0: np.ndarray
    eta: np.ndarray
    D1: np.ndarray
    E1: np.ndarray
    Q0: np.ndarray
    Q1: np.ndarray
    W2: np.ndarray

    @classmethod
    def from_stats(cls, stats, bandwidth, tempering):
        G = stats.count.shape[0]
        offset, ker = _kernel(G, bandwidth, tempering)
        sign = np.sign(offset)

        # Direct convolution, not FFT: its rounding error is relative to each output,
        # where an FFT's is relative to the largest bin and would swamp sparse bins.
        def conv(x, v):
            # The centred part of the full convolution: ``mode="same"`` would return
            # the longer of the two when the kernel is wider than the grid.
            return np.convolve(x, v)[(v.shape[0] - 1) // 2 :][:G]

        n, s1 = stats.count, stats.s1
        A0 = conv(n, ker)
        # Bins b = q - k, k != 0 (the kernel index is the offset k = q - b): all their
        # points are on one side, sum |s' - s_i| = n_b |k|/G + sign(k) (n_b e - S1_b).
        # The own bin's part, sum over it of |e - t_i| = 2 left - (n_q e - S1_q), is
        # folded in through ``+ s1`` and ``- n`` (the kernel is 1 at offset 0).
        D1 = conv(n, ker * np.abs(offset)) - conv(s1, ker * sign) + s1
        E1 = conv(n, ker * sign) - n
        # Every bin: sum (k/G - t_i + e)**2 expanded in e (the e**2 part is A0 e**2).
        Q0 = conv(n, ker * offset**2) - 2.0 * conv(s1, ker * offset) + conv(stats.s2, ker)
        Q1 = 2.0 * conv(n, ker * offset) - 2.0 * conv(s1, ker)
        with np.errstate(divide="ignore", invalid="ignore"):
            eta = conv(stats.positives, ker) / A0
            W2 = conv(n, ker * ker) / (A0 * A0)
        return cls(G, bandwidth, tempering, A0, eta, D1, E1, Q0, Q1, W2)

    def smoothing_coefficients(self, b1, b2):
        """Per-bin ``(alpha, beta, gamma)`` with ``g = alpha + e (beta + b2 e / 2) + gamma left``.

        ``g = b1 sum w |d| + b2/2 sum w d**2 + sqrt(sum w**2) / 2`` (Lemma 6), with the
        window sums above grouped by what depends on the query bin only.
        """
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / self.A0
            alpha = (b1 * self.D1 + 0.5 * b2 * self.Q0) * inv + 0.5 * np.sqrt(self.W2)
            beta = (b1 * self.E1 + 0.5 * b2 * self.Q1) * inv
            gamma = 2.0 * b1 * inv
        return alpha, beta, gamma


class _Buffers:
    """Named scratch arrays, allocated once at the largest size and reused.

    A fresh 16 MB temporary costs a trip through the kernel's page-fault handler,
    which on a virtual machine is several times the arithmetic it holds; each fold
    of a 10**7-score fit would pay it some forty times.
    """

    def __init__(self):
        self._arrays = {}

    def __call__(self, name, size, dtype=np.float64):
        a = self._arrays.get(name)
        if a is None or a.shape[0] < size or a.dtype != dtype:
            a = self._arrays[name] = np.empty(size, dtype=dtype)
            if name == "arange":
                a[...] = np.arange(size)
        return a[:size]


def _take(table, index, out):
    # mode="clip" (the indices are valid): with the default "raise", numpy buffers
    # ``out`` and the gather costs several times more.
    return np.take(table, index, out=out, mode="clip")


def _smoothing_values(coef, b2, bins, e, left, out, tmp):
    """``g_T`` at the queries (meaningless where ``A0 == 0``), written into ``out``.

    ``coef`` is :meth:`KernelTables.smoothing_coefficients`; ``left`` is overwritten.
    """
    alpha, beta, gamma = coef
    with np.errstate(invalid="ignore"):  # fallback queries: inf * 0, replaced later
        np.multiply(e, 0.5 * b2, out=out)
        out += _take(beta, bins, tmp)
        out *= e
        out += _take(alpha, bins, tmp)
        left *= _take(gamma, bins, tmp)
        out += left
    return out


def _block_sums(values, lo, hi):
    """``values[lo[i]:hi[i]].sum()`` as int64, for blocks that are equal or disjoint.

    Each distinct block is summed once, so the work is the total size of the distinct
    blocks (an atom of a million tied scores next to many fallback queries costs one
    pass over the atom, not one per query).
    """
    out = np.zeros(lo.shape[0], dtype=np.int64)
    nonempty = np.flatnonzero(hi > lo)
    if nonempty.size:
        first, where, inverse = np.unique(lo[nonempty], return_index=True, return_inverse=True)
        sizes = hi[nonempty][where] - first
        offsets = np.cumsum(sizes) - sizes
        positions = np.repeat(first - offsets, sizes) + np.arange(sizes.sum())
        sums = np.add.reduceat(values[positions], offsets, dtype=np.int64)
        out[nonempty] = sums[inverse.reshape(-1)]
    return out


def _nearest_neighbour(sample, queries, below, b1, b2, validation=None, val_labels=None,
                       train_before=None, *, return_blocks=False):
    """``eta`` and ``g_T`` for equal weights on the training points at the nearest
    training score(s), both sides when equidistant (the fallback of SPEC section 4).

    ``g_T = b1 d + b2 d**2 / 2 + 1 / (2 sqrt(count))`` with ``d`` the distance: Lemma 6
    in either form (``|sum w (s_i - s')| <= d``). With ``return_blocks``, also the
    blocks that received weight, as ``(score, training count, weight per point)``
    arrays with one entry per (query, side used).

    The training set is ``sample`` without the sorted positions ``validation``
    (``val_labels`` their labels, ``train_before = validation - arange``); ``below``
    is, per query, the number of training scores smaller than it. Work is O(log n)
    per query plus the size of the nearest tie blocks: no training array is built.
    """
    scores = sample.scores
    m = scores.shape[0] - (0 if validation is None else validation.shape[0])

    def position(k):
        k = np.clip(k, 0, max(m - 1, 0))
        if validation is None:
            return k
        # The k-th training point (0-based) sits at k + #{i : validation[i] - i <= k}.
        return k + np.searchsorted(train_before, k, side="right")

    def block(value):
        """Training count and positives among the points scoring exactly ``value``."""
        lo = np.searchsorted(scores, value, side="left")
        hi = np.searchsorted(scores, value, side="right")
        count = hi - lo
        positives = _block_sums(sample.labels, lo, hi)
        if validation is not None:
            vlo = np.searchsorted(validation, lo, side="left")
            vhi = np.searchsorted(validation, hi, side="left")
            count = count - (vhi - vlo)
            positives = positives - _block_sums(val_labels, vlo, vhi)
        return count, positives

    s_below = scores[position(below - 1)]
    s_above = scores[position(below)]
    d_below = np.where(below > 0, queries - s_below, np.inf)
    d_above = np.where(below < m, s_above - queries, np.inf)
    d = np.minimum(d_below, d_above)
    count = np.zeros(queries.shape[0], dtype=np.int64)
    positives = np.zeros(queries.shape[0], dtype=np.int64)
    sides = []
    for use, side in ((d_below <= d_above, s_below), (d_above <= d_below, s_above)):
        c, p = block(side)
        count += np.where(use, c, 0)
        positives += np.where(use, p, 0)
        sides.append((use, side, c))
    eta = positives / count
    g = b1 * d + 0.5 * b2 * d * d + 0.5 / np.sqrt(count)
    if not return_blocks:
        return eta, g
    parts = [(side[use], c[use], 1.0 / count[use]) for use, side, c in sides]
    blocks = tuple(np.concatenate([part[k] for part in parts]) for k in range(3))
    return eta, g, blocks


@dataclass(frozen=True)
class BinnedSample:
    """Sorted scores and labels with their grid moments and within-bin prefix sums.

    ``starts[b]`` is the sorted position of bin ``b``'s first point; ``mean[b]`` the
    bin's mean score (its centre if empty); ``prefix[i]`` the sum over positions
    ``< i`` of ``s - mean[bin(s)]``. Those offsets sum to zero over every bin, so the
    prefix returns to about zero at every bin end and the difference of two prefixes
    within a bin keeps its digits.
    """

    scores: np.ndarray
    labels: np.ndarray
    n_bins: int
    starts: np.ndarray
    stats: BinStats
    mean: np.ndarray
    prefix: np.ndarray

    @classmethod
    def from_sorted(cls, scores, labels, n_bins):
        """Build from sorted scores and their 0/1 labels (any numeric dtype)."""
        n = scores.shape[0]
        G = n_bins
        starts = np.append(np.searchsorted(scores, np.arange(G) / G, side="left"), n)
        count = np.diff(starts)
        centres = bin_centres(G)
        positives, s1, s2 = np.zeros(G), np.zeros(G), np.zeros(G)
        mean = centres.copy()
        prefix = np.empty(n + 1)
        prefix[0] = 0.0
        # One pass, in chunks of whole bins (a chunk ends at the first bin edge after
        # _CHUNK points), so every bin's mean is known before its prefix is summed.
        first = 0  # first bin of the chunk
        while first < G:
            a = starts[first]
            last = min(int(np.searchsorted(starts, a + _CHUNK, side="left")), G)
            last = max(last, first + 1)  # one bin may hold more than _CHUNK points
            z = starts[last]
            s = scores[a:z]
            local = np.repeat(np.arange(last - first), count[first:last])
            t = s - centres[first:last][local]
            k = slice(first, last)
            positives[k] = np.bincount(local, weights=labels[a:z], minlength=last - first)
            s1[k] = np.bincount(local, weights=t, minlength=last - first)
            nonempty = count[k] > 0
            mean[k][nonempty] += s1[k][nonempty] / count[k][nonempty]
            s2[k] = np.bincount(local, weights=t * t, minlength=last - first)
            np.subtract(s, mean[k][local], out=t)
            part = prefix[a + 1 : z + 1]
            np.cumsum(t, out=part)
            part += prefix[a]
            first = last
        stats = BinStats(count.astype(float), positives, s1, s2)
        return cls(scores, labels, G, starts, stats, mean, prefix)

    @property
    def n_samples(self):
        return self.scores.shape[0]

    def tables(self, bandwidth, tempering):
        """Kernel tables with this whole sample as the training set."""
        return KernelTables.from_stats(self.stats, bandwidth, tempering)

    def _query_bins(self, queries):
        b = bin_of(queries, self.n_bins)
        return b, queries - bin_centres(self.n_bins)[b]

    def eta(self, tables, queries):
        """The surrogate ``sum w y`` at arbitrary queries (this sample as training set)."""
        b, _ = self._query_bins(queries)
        eta = tables.eta[b]
        f = np.flatnonzero(~(tables.A0[b] > 0.0))
        if f.size:
            below = np.searchsorted(self.scores, queries[f], side="left")
            eta[f] = _nearest_neighbour(self, queries[f], below, 0.0, 0.0)[0]
        return eta

    def residuals_and_smoothing(self, tables, b1, b2, queries):
        """``|eta_hat(s) - s|`` and unclipped ``g_T(s)`` at arbitrary queries, this
        sample being the training set, and the number of fallback queries."""
        b, e = self._query_bins(queries)
        rank = np.searchsorted(self.scores, queries, side="right")
        first = self.starts[b]
        # left: sum over the training points of the query's bin at or below it of
        # (s' - s_i), in offsets from the bin mean.
        left = (rank - first) * (queries - self.mean[b])
        left -= self.prefix[rank] - self.prefix[first]
        coef = tables.smoothing_coefficients(b1, b2)
        g = _smoothing_values(coef, b2, b, e, left, np.empty_like(e), np.empty_like(e))
        eta = tables.eta[b]
        f = np.flatnonzero(~(tables.A0[b] > 0.0))
        if f.size:
            below = np.searchsorted(self.scores, queries[f], side="left")
            eta[f], g[f] = _nearest_neighbour(self, queries[f], below, b1, b2)
        return np.abs(eta - queries), g, f.size

    def complement_fold(
        self, validation, bandwidth, tempering, b1, b2, sink, *, evaluate=None, buffers=None
    ):
        """Residuals and ``g_T`` at validation points, the training set being the
        rest of this sample, passed chunk by chunk to ``sink``.

        Parameters
        ----------
        validation : ndarray of intp
            Sorted positions of the validation points.
        bandwidth, tempering : float
            Of the kernel (see :class:`KernelTables`).
        b1, b2 : float
        sink : callable
            ``sink(residuals, smoothing)`` receives ``|eta_hat - s|`` and unclipped
            ``g_T`` for consecutive chunks of the evaluated points (in order); it may
            modify them, and must not keep them (they are scratch space).
        evaluate : ndarray of intp, optional
            Sorted indices into ``validation`` of the points to evaluate; all if None.
        buffers : _Buffers, optional
            Scratch space reused from fold to fold.

        Returns
        -------
        tables : KernelTables
        n_fallback : int
            Evaluated points that used the nearest-neighbour fallback.
        """
        buf = _Buffers() if buffers is None else buffers
        G, nv = self.n_bins, validation.shape[0]
        s = _take(self.scores, validation, buf("s", nv))
        y = _take(self.labels, validation, buf("y", nv, self.labels.dtype))
        # The validation scores are sorted, so each bin's points are contiguous: the
        # bins' first indices come from a search of the G edges (exact, G a power of
        # two), bin ids from a repeat, label sums from one pass over the raw labels.
        first_of_bin = np.searchsorted(s, np.arange(G) / G, side="left")
        count = np.diff(first_of_bin, append=nv)
        b = np.repeat(np.arange(G), count)
        occupied = np.flatnonzero(count)
        count = count.astype(float)
        positives = np.zeros(G)
        if occupied.size:
            positives[occupied] = np.add.reduceat(y, first_of_bin[occupied], dtype=float)
        e = _take(bin_centres(G), b, buf("e", nv))
        np.subtract(s, e, out=e)
        centred = buf("centred", nv)
        s1 = np.bincount(b, weights=e, minlength=G)
        s2 = np.bincount(b, weights=np.square(e, out=centred), minlength=G)
        training = self.stats - BinStats(count, positives, s1, s2)
        tables = KernelTables.from_stats(training, bandwidth, tempering)
        coef = tables.smoothing_coefficients(b1, b2)
        # Some folds have validation points in bins with no training point within the
        # kernel (the fallback); the per-bin counts tell which bins, in O(G).
        fallback_bins = np.flatnonzero(~(tables.A0 > 0.0) & (count > 0))

        # Own-bin split. For the j-th validation point, at sorted position p in bin q,
        # the training points before it number n_left = (p - j) - (starts[q] -
        # val_starts[q]), and with P, V the prefix sums of s - mean over all points
        # and over validation points,
        #   left = n_left (s' - mean_q) - [(P[p] - V[j]) - (P[starts_q] - V[val_starts_q])].
        _take(self.mean, b, centred)
        np.subtract(s, centred, out=centred)
        val_prefix = buf("val_prefix", nv + 1)
        val_prefix[0] = 0.0
        np.cumsum(centred, out=val_prefix[1:])
        val_starts = np.append(0, first_of_bin[1:])
        bin_left_count = self.starts[:G] - val_starts
        bin_left_sum = self.prefix[self.starts[:G]] - val_prefix[val_starts]

        # Per query, in cache-sized chunks: twenty-odd array operations per point
        # run about 1.5x faster on chunks that stay in cache than on whole folds.
        n_eval = nv if evaluate is None else evaluate.shape[0]
        n_fallback, all_before = 0, None
        for start in range(0, n_eval, _QUERY_CHUNK):
            stop = min(start + _QUERY_CHUNK, n_eval)
            k = stop - start
            if evaluate is None:
                idx, j = slice(start, stop), np.arange(start, stop)
            else:
                idx = j = evaluate[start:stop]
            sj, bj, pj = s[idx], b[idx], validation[idx]
            tmp, left, g = buf("chunk_tmp", k), buf("chunk_left", k), buf("chunk_g", k)
            # Training points before each query: p - j.
            train_before = np.subtract(pj, j, out=buf("chunk_before", k, np.intp))
            n_left = _take(bin_left_count, bj, buf("chunk_n_left", k, np.intp))
            np.subtract(train_before, n_left, out=n_left)
            np.multiply(n_left, centred[idx], out=left)
            left -= _take(self.prefix, pj, tmp)
            left += val_prefix[idx]
            left += _take(bin_left_sum, bj, tmp)
            _smoothing_values(coef, b2, bj, e[idx], left, g, tmp)
            residual = _take(tables.eta, bj, buf("chunk_residual", k))
            residual -= sj
            np.abs(residual, out=residual)
            lo, hi = np.searchsorted(fallback_bins, (bj[0], bj[-1] + 1))
            if hi > lo:  # the chunk's bin range (sorted) holds a fallback bin
                f = np.flatnonzero(~(tables.A0[bj] > 0.0))
                if f.size:
                    n_fallback += f.size
                    if all_before is None:
                        all_before = validation - np.arange(nv)
                    eta_f, g[f] = _nearest_neighbour(
                        self, sj[f], train_before[f], b1, b2, validation, y, all_before
                    )
                    residual[f] = np.abs(eta_f - sj[f])
            sink(residual, g)
        return tables, n_fallback




class NWSurrogate:
    """The Nadaraya–Watson surrogate fitted on sorted scores and labels.

    The grid tables are built on first use, so a fit that never calls ``predict`` or
    ``score`` does not pay for them.

    Parameters
    ----------
    scores : ndarray of shape (m,)
        Sorted training scores.
    labels : ndarray of shape (m,)
        Their 0/1 labels.
    bandwidth, tempering : float
    n_bins : int
        Grid size (a power of two).
    """

    def __init__(self, scores, labels, bandwidth, tempering, n_bins):
        self.scores = scores
        self.labels = labels
        self.bandwidth = float(bandwidth)
        self.tempering = float(tempering)
        self.n_bins = int(n_bins)
        self._cache = None

    def __getstate__(self):
        # The tables are a function of the rest; pickles stay the size of the data.
        return {**self.__dict__, "_cache": None}

    @property
    def n_train(self):
        return self.scores.shape[0]

    def _binned(self):
        if self._cache is None:
            sample = BinnedSample.from_sorted(self.scores, self.labels, self.n_bins)
            self._cache = sample, sample.tables(self.bandwidth, self.tempering)
        return self._cache

    def __call__(self, x):
        """The surrogate ``eta_hat`` at scores ``x``."""
        sample, tables = self._binned()
        return sample.eta(tables, x)

    def residuals_and_smoothing(self, b1, b2, x):
        """``|eta_hat(x) - x|``, unclipped ``g_T(x)`` and the number of fallbacks."""
        sample, tables = self._binned()
        return sample.residuals_and_smoothing(tables, b1, b2, x)
