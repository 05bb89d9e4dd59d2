"""Lipschitz bucketing from mergeable statistics: every candidate, no sort, any chunks.

SPEC sections 5 and 10. Inputs are assumed validated.

Buckets. Candidate ``(B, r)`` with ``R`` shifts has edges ``(j + r/R) / B`` and bucket
id ``floor(B s - r/R)`` clipped to ``[-1, B - 1]``. It is evaluated through a grid of
``K`` equal cells, ``K`` a multiple of every ``B R`` it serves (a power of two for the
default candidates): with ``c = min(floor(K s), K - 1)`` the bucket id is exactly
``floor((c - o) / w)``, ``w = K / B`` cells per bucket and ``o = r K / (B R)``, so every
bucket is a run of whole cells and one grid of cell statistics serves every candidate.
(For ``B R`` a power of two this is the SPEC's formula to the last bit; in general it
is the same partition, with a score that lies on an edge up to rounding assigned by
``floor(K s)``.)

The distance sum. For a query ``s' = (c + 1/2) / K + e`` in cell ``c`` of a bucket
``b`` with training points,

    sum_{i in b} |s' - s_i| <= D + (N_lo - N_hi) e
                               + (c N_lo - M_lo + M_hi - c N_hi) / K - T_lo + T_hi,

where ``N``, ``M = sum N c'`` and ``T`` (sum of offsets from the cell centres) run over
the cells of ``b`` below and above ``c`` (those distances have a known sign: exact),
and ``D`` bounds the distances to the ``N_c`` training points of the query's own cell
by Cauchy-Schwarz, ``sum_{i in c} |s' - s_i| <= sqrt(N_c sum_{i in c} (s' - s_i)**2)
= sqrt(N_c (N_c (e - tbar_c)**2 + S_c))`` (``tbar_c`` the mean offset and ``S_c`` the
centred sum of squares of the cell's training offsets). So ``g = L/n_b (D + a e + k)
+ 1/(2 sqrt(n_b))`` stays a bound on Lemma 6's Lipschitz form (the certificate holds
for any ``g`` above it), and every quantity is a sum over rows of something that
depends on the row and on per-cell arrays: count, positives, offset sum and the
centred sum of squares of every cell merge across chunks (the last by Chan et al.'s
rule). What it costs against the exact own-cell sum: nothing when ``N_c <= 1`` and at
most a few percent of the own cell's share of ``L mean|s' - s_i|`` otherwise, i.e.
``O(L / (K n_b))`` per query, below ``1e-4`` for the default grid of ``2**14`` cells
(``benchmarks/bench_bounds.py`` prints the bound against the exact-sort form of the
previous release in the same run).

Two passes over the rows, in any chunking:

pass 1 (:func:`cell_stats`)
    per (group, cell): count, positives, offset sum and centred sum of squares
    (:class:`CellStats`). Each split's training statistics are the merge of its
    training groups'; from them, per candidate, every cell's ``eta_hat`` and the
    affine coefficients of ``g`` in ``(D, e)``.
pass 2 (:func:`evaluation_sums`)
    per validation query in a cell with training points, ``e`` and ``D``, reduced to
    per (split, cell) moments ``(count, sum e, e**2, D, D**2, D e)``: on a cell where
    ``s - eta_hat`` keeps one sign and ``g`` stays below 1 (or above it), the sums of
    ``r = |s - eta_hat|``, ``r**2``, ``min(g, 1)`` and its square are exact functions
    of those moments (``g`` is convex in ``e``, so its largest value on a cell is at
    an end). The few (split, candidate, cell) triples where they are not are
    *flagged* before the pass and summed point by point. Queries in cells without
    training points (empty buckets fall back to the bucket of the nearest training
    score, which needs that score) are kept, with the largest and smallest training
    score of the occupied cells next to empty ones, and finished at the end.

Every sum is exact for these weights up to the order of the additions, so chunked, Dask
and in-memory input give the same numbers to rounding.

Cost. Finishing a split sums, per candidate, over the prepared cells (cells with
training points and queries). In the high-probability fit (which does not read the sums
of ``min(g, 1)**2``), a candidate with a few times fewer buckets holding such cells than
there are cells is summed bucket by bucket (:func:`_bucket_totals`): on a cell from its
moments every sum it reads is linear in per-cell quantities that do not depend on the
candidate, so a bucket's sums are differences of prefix sums over the cells, taken once
per split, with the integer parts (counts, ``c``, ``c**2``, the distance sums' ``c N``
and ``M``) exact in int64 about the bucket's first cell; the undecided runs of its
undecided buckets (below) get ``min(g, 1)`` cell by cell, from the per-cell coefficients
:func:`_all_flags` already computed. The other candidates, and every candidate of a fit
that reads the sums of ``min(g, 1)**2`` (whose cross terms would cancel between prefix
sums of order ``n**2``), are element-wise work per (candidate, cell), by blocks of
candidates (:func:`_moment_totals`; a bucket's values are repeated over its run of
cells, :meth:`BucketTable.gather`). For a candidate whose ``g`` may exceed 1, the flag
test per cell is skipped in the buckets proven, from exact integer sums of their
training cells, to have ``g >= 1`` on every cell or ``g < 1`` with small terms on every
cell (:meth:`BucketTable._status`), and in the other buckets in the runs of ``_SUB_RUN``
prepared cells proven so (:class:`SubRuns`: ``g`` crosses 1 near a bucket's ends, so
most runs are decided); a candidate clipped on every cell has the query counts as its
sums of ``min(g, 1)`` and its square. Fresh memory costs page faults, so the fit keeps
few large arrays alive (pass 2 sums its moments at the (split, cell) pairs with training
points only) and works by blocks. The bucket-by-bucket sums took 9 to 15 % off the
high-probability fit at 10**5 and 10**6 scores and 2 % at 10**7 (48 default candidates,
5 folds; the two versions interleaved in one process, 2026-11-27). Deciding undecided
buckets by runs left 2,013 of their 58,859 (candidate, cell) pairs to the test cell by
cell at 10**5 (of 438,480 pairs in all), and with every bucket's values computed once
per table the high-probability fit at 10**5 took 10 % less CPU in the median and 15 % in
the minimum (four alternating processes of 40 fits each, 2026-11-27); the rest of its
cost is spread over pass 2, the bucket-by-bucket sums and the per-cell sums of the
candidates with 2048 and 4096 buckets, none above a fifth of it.

Why hand-written: no library evaluates box-kernel smoothing bounds for many bucketings
from one set of cell sums (the reductions are ``np.bincount``).
"""

import functools
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ._cells import cell_offsets, merge_extremes, occupied_neighbours

# Cells of one grid at most (a finer one serves more candidates per pass, but every
# candidate costs O(cells)).
_MAX_CELLS = 2**20
# A grid has at least this many cells when the candidates allow it: the own-cell term
# of the distance sum and the flagged cells are then small.
_MIN_CELLS = 2**14
# A cell's sums of g and g**2 come from its moments only while the terms of g stay
# below this; 64 keeps ~12 digits in the sum of g**2.
_EXPANDED_SCALE = 64.0
# count, e, e**2, D, and for the sums of g**2 (the paper's certificate) D**2, D e.
_MOMENTS = 6
# A bucket whose bound on g stays below this has no clipped or large cells (Buckets);
# the room covers the rounding of the computed g.
_BOUNDED = 0.999
# A bucket whose lower bound on g stays above this has every cell clipped, and one
# whose upper bound stays below 2 - _CLIPPED none (BucketTable._status); the room
# covers the rounding of the computed g.
_CLIPPED = 1.0 + 1e-6
_UNDECIDED, _EXPANDED, _CLIPPED_ALL = 0, 1, 2
# (candidate, cell) pairs per block of candidates finished at once (in cache).
_BLOCK = 2**15
# Prepared cells per run of an undecided bucket decided on its own (SubRuns): at 10**5
# and 10**6 scores, runs of 16 leave 2 to 4 % of the undecided buckets' cells to the
# flag test cell by cell (runs of 4: 1 %, of 64: 10 %; measured 2026-11-27).
_SUB_RUN = 16
# Undecided (candidate, cell) pairs whose coefficients _all_flags keeps for
# finish_split at most (about 40 bytes each; beyond, finish_split computes them again).
_KEPT_CELLS = 2**20
# Buckets per block of _bucket_totals.
_BUCKET_BLOCK = 2**14
# A candidate is summed bucket by bucket when its buckets holding prepared cells
# times this stay below the prepared cells (a bucket costs about as much as this
# many cells; measured at 10**5 scores, 2026-11-27).
_CELLS_PER_BUCKET = 8
# Segments longer than this are summed pairwise (np.sum), shorter ones in order.
_LONG_SEGMENT = 1024


def candidate_grids(n_buckets, n_shifts):
    """The candidates and the grids that serve them.

    Returns
    -------
    candidates : list of (int, int)
        ``(B, r)`` for every bucket count (ascending, unique) and shift
        ``r < n_shifts``.
    grids : list of (int, list of int)
        ``(K, indices into candidates)``; ``K`` is a multiple of ``B * n_shifts`` for
        every candidate it serves.
    """
    counts = sorted({int(b) for b in n_buckets})
    groups = []
    for B in counts:
        unit = B * n_shifts
        if groups and math.lcm(groups[-1][0], unit) <= _MAX_CELLS:
            groups[-1][0] = math.lcm(groups[-1][0], unit)
            groups[-1][1].append(B)
        else:
            groups.append([unit, [B]])
    candidates = [(B, r) for B in counts for r in range(n_shifts)]
    index = {c: k for k, c in enumerate(candidates)}
    grids = []
    for K, bs in groups:
        if K < _MIN_CELLS:
            K *= -(-_MIN_CELLS // K)
        grids.append((K, [index[(B, r)] for B in bs for r in range(n_shifts)]))
    return candidates, grids


def cell_of(scores, n_cells):
    """Cell ids ``min(floor(K s), K - 1)`` as intp."""
    c = np.multiply(scores, n_cells).astype(np.intp)
    np.minimum(c, n_cells - 1, out=c)
    return c


def cells_and_offsets(scores, n_cells):
    """:func:`cell_of` and ``cell_offsets`` of ``scores`` from one product ``K s``
    (the same operations)."""
    u = np.multiply(scores, n_cells)
    c = u.astype(np.intp)
    np.minimum(c, n_cells - 1, out=c)
    # cell_offsets' steps after its product K s.
    u -= c
    u -= 0.5
    u *= 1.0 / n_cells
    return c, u


class Stack(tuple):
    """A tuple of mergeable results (one per grid), merged element by element."""

    def __add__(self, other):
        return Stack(a + b for a, b in zip(self, other))


# ---------------------------------------------------------------------------- pass 1


def _chan(count_a, sum_a, m2_a, count_b, sum_b, m2_b):
    """Count, sum and centred sum of squares of the union of two sets (Chan et al.)."""
    count = count_a + count_b
    both = (count_a > 0) & (count_b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(both, sum_b / count_b - sum_a / count_a, 0.0)
        extra = np.where(both, delta * delta * (count_a * count_b) / count, 0.0)
    return count, sum_a + sum_b, m2_a + m2_b + extra


@dataclass
class CellStats:
    """Per (group, cell): count, positives, sum of the offsets ``t = s - c_centre`` and
    their centred sum of squares; shape ``(n_groups, n_cells)``. Merged by
    :meth:`__add__` (sums, and Chan et al.'s rule for the squares)."""

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
        """The statistics of the union of ``groups`` (rows of the arrays), 1-D."""
        return self.merged_many([groups])[0]

    def merged_many(self, unions):
        """:meth:`merged` of every list of groups in ``unions``: the rows added in
        order (as ``sum(axis=0)`` adds them), each group's mean offset computed
        once."""
        with np.errstate(divide="ignore", invalid="ignore"):
            part = {}
            out = []
            for groups in unions:
                groups = list(groups)
                if not groups:
                    zero = np.zeros(self.count.shape[1])
                    out.append(Training(zero, zero.copy(), zero.copy(), zero.copy()))
                    continue
                count, tsum, positives = (
                    _add_rows(x, groups)
                    for x in (self.count, self.tsum, self.positives)
                )
                mean = np.where(count > 0, tsum / count, 0.0)
                m2 = None
                for g in groups:
                    if g not in part:
                        c = self.count[g]
                        part[g] = np.where(c > 0, self.tsum[g] / c, 0.0)
                    spread = part[g] - mean
                    np.square(spread, out=spread)
                    spread *= self.count[g]
                    spread = np.add(self.m2[g], spread, out=spread)
                    if m2 is None:
                        m2 = spread
                    else:
                        m2 += spread
                out.append(Training(count, positives, tsum, m2))
        return out


def _add_rows(x, rows):
    """``x[rows].sum(axis=0)``: the rows added one after another, in order."""
    out = x[rows[0]].copy()
    for g in rows[1:]:
        out += x[g]
    return out


def cell_stats(scores, labels, groups, n_groups, n_cells):
    """Pass 1 on one chunk: its :class:`CellStats` (rows with group < 0 skipped)."""
    K = n_cells
    keep = groups >= 0
    if not keep.all():
        scores, labels, groups = scores[keep], labels[keep], groups[keep]
    key, t = cells_and_offsets(scores, K)
    key += np.multiply(groups, K, dtype=np.intp)
    size = n_groups * K
    count = np.bincount(key, minlength=size).astype(np.float64)
    tsum = np.bincount(key, weights=t, minlength=size)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(count > 0, tsum / count, 0.0)
    t -= np.take(mean, key)
    m2 = np.bincount(key, weights=np.square(t, out=t), minlength=size)
    positives = np.bincount(key, weights=labels, minlength=size)
    shape = (n_groups, K)
    return CellStats(
        count.reshape(shape),
        positives.reshape(shape),
        tsum.reshape(shape),
        m2.reshape(shape),
    )


@dataclass
class Training:
    """One training set on a grid: per cell count, positives, offset sum and centred
    sum of squares; ``extremes`` (largest / smallest training score of the occupied
    cells next to empty ones, set after pass 2) serve the fallback."""

    count: np.ndarray
    positives: np.ndarray
    tsum: np.ndarray
    m2: np.ndarray
    extremes: dict = field(default=None, repr=False)

    @property
    def n_cells(self):
        return self.count.shape[0]

    @property
    def n_train(self):
        return int(round(float(self.count.sum())))

    def mean_offset(self):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.count > 0, self.tsum / self.count, 0.0)

    def needed_mask(self):
        """Occupied cells next to an empty one (the nearest occupied cells below and
        above every empty cell): their extremes give the midpoints between the
        training scores around every empty cell."""
        occupied = self.count > 0
        out = np.zeros_like(occupied)
        out[:-1] = ~occupied[1:]
        out[1:] |= ~occupied[:-1]
        out &= occupied
        return out

    def needed_cells(self):
        """:meth:`needed_mask`'s cells, ascending."""
        return np.flatnonzero(self.needed_mask())

    def midpoints_at(self, cells, neighbours):
        """:meth:`midpoints` at ``cells`` only (``neighbours``: the occupied cells at
        or below / above every cell), with the same operations."""
        below, above = (x[cells] for x in neighbours)
        e = self.extremes
        K = self.n_cells
        s_below = np.full(cells.shape, np.nan)
        s_above = np.full(cells.shape, np.nan)
        if e is not None and e["cells"].size:
            for near, side, out in ((below, "hi", s_below), (above, "lo", s_above)):
                at = np.minimum(np.searchsorted(e["cells"], near), e["cells"].size - 1)
                hit = e["cells"][at] == near
                out[hit] = e[side][at[hit]]
        s_below = np.where(below >= 0, s_below, -np.inf)
        s_above = np.where(above < K, s_above, np.inf)
        mid = 0.5 * (s_below + s_above)
        mid[below < 0] = -np.inf
        mid[above >= K] = np.inf
        return mid

    def midpoints(self):
        """Per cell, the midpoint (as a double) of the training scores around it:
        ``-inf`` with none below, ``+inf`` with none above (meaningful in empty
        cells)."""
        below, above = occupied_neighbours(self.count)
        e = self.extremes
        K = self.n_cells
        hi = np.full(K, np.nan)
        lo = np.full(K, np.nan)
        if e is not None and e["cells"].size:
            hi[e["cells"]] = e["hi"]
            lo[e["cells"]] = e["lo"]
        s_below = np.where(below >= 0, hi[np.maximum(below, 0)], -np.inf)
        s_above = np.where(above < K, lo[np.minimum(above, K - 1)], np.inf)
        mid = 0.5 * (s_below + s_above)
        mid[below < 0] = -np.inf
        mid[above >= K] = np.inf
        return mid


# ------------------------------------------------------------- one candidate's tables


def _exclusive_cumsum(x):
    out = np.empty(x.shape[0] + 1)
    out[0] = 0.0
    np.cumsum(x, out=out[1:])
    return out


def own_cell_distance(count, e, mean, m2):
    """``sqrt(N (N (e - tbar)**2 + S))``: Cauchy-Schwarz's bound on the distance sum
    from a query at offset ``e`` to the ``N`` training points of its cell."""
    d = e - mean
    d *= d
    d *= count
    d += m2
    np.maximum(d, 0.0, out=d)
    d *= count
    return np.sqrt(d, out=d)


class Prepared:
    """What every candidate reads of one :class:`Training`, computed once: exclusive
    prefix sums over all cells of ``N``, positives, ``M = N c`` and ``T``, and at the
    evaluated ``cells`` (occupied, ascending; by default all occupied cells) their
    sums at ``c`` and ``c + 1`` (a cell's ``lo - hi`` differences inside a bucket are
    these minus the bucket's ends), the centres and the own-cell distance at both
    ends. Every candidate costs ``O(B + len(cells))``, not ``O(K)``. Transient: never
    stored on a fitted object."""

    def __init__(self, training, cells=None):
        K = training.n_cells
        N = training.count
        if cells is None:
            cells = np.flatnonzero(N > 0)
        self.training = training
        self.n_cells = K
        self.cells = cells
        self.cells_f = cells.astype(np.float64)  # exact: cells < 2**53
        self.centre = (cells + 0.5) / K
        self.cN = _exclusive_cumsum(N)
        self.cP = _exclusive_cumsum(training.positives)
        self.cM = _exclusive_cumsum(N * np.arange(K))
        self.cT = _exclusive_cumsum(training.tsum)
        self.s2 = [x[cells] + x[cells + 1] for x in (self.cN, self.cM, self.cT)]
        count, m2 = N[cells], training.m2[cells]
        mean = training.tsum[cells] / count
        half = 0.5 / K
        self.d_lo = own_cell_distance(count, np.full(cells.shape, -half), mean, m2)
        self.d_hi = own_cell_distance(count, np.full(cells.shape, half), mean, m2)
        self.d_max = np.maximum(self.d_lo, self.d_hi)
        # Position of every cell among the prepared ones (-1 for none), shifted by one
        # (cells -1 .. K), and how many prepared cells lie below every cell boundary.
        self.index = np.full(K + 2, -1, dtype=np.intp)
        self.index[cells + 1] = np.arange(cells.shape[0])
        self.below = np.zeros(K + 1, dtype=np.intp)
        np.cumsum(self.index[1 : K + 1] >= 0, out=self.below[1:])

    @cached_property
    def neighbours(self):
        """The occupied cells at or below / at or above every cell (the fallback)."""
        return occupied_neighbours(self.training.count)


@dataclass(frozen=True)
class Buckets:
    """Candidate ``(B, r)`` on one training set, per bucket (id + 1 in ``0..B``): its
    cells ``[start, end)``, training count ``n_b``, ``eta_hat``, ``alpha = L / n_b``,
    ``1 / (2 sqrt(n_b))``, the prefix sums of ``N``, ``M`` and ``T`` at both ends added
    (``ends``), and how many of the prepared cells it holds (``runs``: the cells are
    ascending, so every bucket is a run of them). ``bounded``: every bucket holding
    prepared cells has ``L w / K + 1 / (2 sqrt(n_b)) <= 0.999`` (``w`` cells per
    bucket), an upper bound on ``g`` anywhere in it (``D <= N_c / K`` and every other
    distance is at most the bucket width), so ``g`` stays below 1 with room for
    rounding and every term of ``g`` is at most 1: no cell is clipped or too large to
    expand, only the cells holding ``eta_hat`` are flagged."""

    B: int
    r: int
    width: int
    offset: int
    start: np.ndarray
    end: np.ndarray
    n_b: np.ndarray
    eta: np.ndarray
    alpha: np.ndarray
    root: np.ndarray
    ends: tuple  # (N, M, T)
    runs: np.ndarray
    bounded: bool

    @classmethod
    def every(cls, prep, candidates, R, L):
        """Buckets of every candidate ``(B, r)`` (``R`` shifts), computed at once."""
        return BucketTable(prep, candidates, R, L).buckets()

    def bucket_of(self, cells):
        """Bucket id + 1 of ``cells``, ``floor((c - o) / w) + 1``."""
        return (cells - self.offset) // self.width + 1


@functools.lru_cache(maxsize=8)
def _bucket_edges(candidates, R, K):
    """What the buckets of ``candidates`` on a grid of ``K`` cells are, whatever the
    data (read-only, shared): per candidate ``B``, ``w``, ``o`` and ``bounds``; per
    bucket its cells ``[start, end)``, ``w`` and its candidate."""
    B = np.array([b for b, _ in candidates], dtype=np.intp)
    w = K // B
    o = np.array([r for _, r in candidates], dtype=np.intp) * (K // (B * R))
    bounds = np.concatenate(([0], np.cumsum(B + 1))).astype(np.intp)
    first = np.repeat(bounds[:-1], B + 1)
    j = np.arange(bounds[-1]) - first  # bucket id + 1
    w_j, o_j = np.repeat(w, B + 1), np.repeat(o, B + 1)
    start = np.clip((j - 1) * w_j + o_j, 0, K)
    end = np.clip(j * w_j + o_j, 0, K)
    owner = np.repeat(np.arange(B.shape[0]), B + 1)
    out = (B, w, o, bounds, start, end, w_j, owner)
    for x in out:
        x.flags.writeable = False
    return out


def _spread(prep, start, end, c):
    """``H(c) = sum_i |c - c_i|`` over the training points (cells ``c_i``) of the
    buckets of cells ``[start, end)``, at cells ``c`` inside them: exact, from the
    prefix sums of counts and ``N c`` (integers below ``2**53``)."""
    cN, cM = prep.cN, prep.cM
    below = c * (cN[c] - cN[start]) - (cM[c] - cM[start])
    return below + (cM[end] - cM[c + 1]) - c * (cN[end] - cN[c + 1])


def _run_status(prep, L, start, end, lo, hi):
    """Per run of cells ``[lo, hi]`` (first and last of prepared cells) of a bucket of
    cells ``[start, end)`` holding training points: ``_EXPANDED``, ``_CLIPPED_ALL`` or
    ``_UNDECIDED``, proven as :meth:`BucketTable._status` proves a bucket's, on the
    run's cells only.

    With ``H(c) = sum_i |c - c_i|`` over the bucket's training points (cells ``c_i``),
    an exact integer sum that is convex in ``c``: above, ``g <= L (2.25 + H(c) / n_b)
    / K + root`` on cell ``c`` (as for the bucket), at most its value at ``lo`` or
    ``hi``; below, ``k_c - |a_c| / (2K) >= sum_i |x_c - s_i| - n_b / (2K)`` (the
    bucket's argument, ``x_c`` the centre of ``c``) and ``|x_c - s_i| >= (|c - c_i| -
    1/2) / K`` for a point of another cell, so ``g >= L (H(c) / n_b - 1) / K + root``,
    at least its value at the cell of ``[lo, hi]`` nearest a median cell of the
    bucket's training points (where ``H`` is smallest)."""
    status = np.full(lo.shape[0], _UNDECIDED, dtype=np.int8)
    if not (lo.size and math.isfinite(L)):
        return status
    K = prep.n_cells
    n_start = prep.cN[start]
    n = prep.cN[end] - n_start
    root = 0.5 / np.sqrt(n)
    spread = np.maximum(_spread(prep, start, end, lo), _spread(prep, start, end, hi))
    g_high = L * (2.25 + spread / n) / K + root
    status[g_high <= 2.0 - _CLIPPED] = _EXPANDED
    median = np.searchsorted(prep.cN, n_start + np.floor(0.5 * n), side="right") - 1
    middle = _spread(prep, start, end, np.clip(median, lo, hi))
    g_low = L * (middle / n - 1.0) / K + root
    status[g_low >= _CLIPPED] = _CLIPPED_ALL
    return status


@dataclass(frozen=True)
class SubRuns:
    """The prepared cells of a table's undecided buckets in runs of at most
    ``_SUB_RUN``, each run decided on its own (:func:`_run_status`): only the cells
    of runs still undecided get the flag test cell by cell. Per run its bucket (an
    index into the table), its positions ``[first, stop)`` among the prepared cells
    and its status; per bucket of the table the number of its first run (``index``,
    -1 for a decided bucket)."""

    bucket: np.ndarray
    first: np.ndarray
    stop: np.ndarray
    status: np.ndarray
    index: np.ndarray

    @classmethod
    def of(cls, prep, table, L, J):
        """The runs of the buckets ``J`` (undecided, holding prepared cells)."""
        runs, first = table.runs[J], table.first_pos[J]
        count = -(-runs // _SUB_RUN)
        bucket = np.repeat(J, count)
        offset = np.cumsum(count) - count
        k = np.arange(bucket.shape[0]) - np.repeat(offset, count)
        lo = np.repeat(first, count) + k * _SUB_RUN
        hi = np.minimum(lo + _SUB_RUN, np.repeat(first + runs, count))
        index = np.full(table.status.shape[0], -1, dtype=np.intp)
        index[J] = offset
        start, end = table.start[bucket], table.end[bucket]
        status = _run_status(prep, L, start, end, prep.cells[lo], prep.cells[hi - 1])
        return cls(bucket, lo, hi, status, index)

    def undecided(self, table, which=None):
        """``(bucket, first, length)`` of the undecided runs (of the candidates of
        the mask ``which``, if given), as :func:`_undecided_cells` takes them."""
        keep = self.status == _UNDECIDED
        if which is not None:
            keep &= which[table.owner[self.bucket]]
        u = np.flatnonzero(keep)
        return self.bucket[u], self.first[u], self.stop[u] - self.first[u]

    def status_at(self, table, bucket, pos):
        """The status of the prepared cells at positions ``pos`` in the buckets
        ``bucket``: their run's in an undecided bucket, else the bucket's."""
        status = table.status[bucket]
        r = self.index[bucket]
        inside = np.flatnonzero(r >= 0)
        b = bucket[inside]
        status[inside] = self.status[
            r[inside] + (pos[inside] - table.first_pos[b]) // _SUB_RUN
        ]
        return status


class BucketTable:
    """The buckets of every candidate ``(B, r)`` (``R`` shifts) on one
    :class:`Prepared`, concatenated (candidate ``i`` owns ``bounds[i]:bounds[i + 1]``;
    the fields of :class:`Buckets`): every bucket's cells ``[start, end)`` and the run
    of prepared cells it holds (``first_pos``, ``runs``), its other fields computed
    where needed (:meth:`values`), the same operations at every bucket."""

    def __init__(self, prep, candidates, R, L):
        K = prep.n_cells
        self.candidates = list(candidates)
        self.prep, self.L = prep, L
        B, w, o, bounds, start, end, w_j, self.owner = _bucket_edges(
            tuple(tuple(int(v) for v in c) for c in candidates), int(R), K
        )
        self.B, self.w, self.o, self.bounds = B, w, o, bounds
        self.undecided = None  # set by _all_flags
        self.start, self.end = start, end
        # The prepared cells in [start, end): their count below end minus below
        # start, the first of them at position below[start].
        self.first_pos = prep.below[start]
        self.runs = prep.below[end] - self.first_pos
        nc = B.shape[0]
        # bounded: every bucket holding prepared cells has L w / K + root <= 0.999.
        held = np.flatnonzero(self.runs > 0)
        owner = self.owner[held]
        root = self._values[4][held]  # 1 / (2 sqrt(n_b))
        bounded = np.ones(nc, dtype=bool)
        bounded[owner[~(L * w_j[held] / K + root <= _BOUNDED)]] = False
        self.bounded = bounded
        # Per candidate: 0 if no cell is clipped (bounded, or every bucket expanded),
        # 2 if every cell is, 1 otherwise.
        self.status = np.full(bounds[-1], _EXPANDED, dtype=np.int8)
        self.kind = np.zeros(nc, dtype=np.intp)
        loose = ~bounded[owner]
        if loose.any():
            at, owner, root = held[loose], owner[loose], root[loose]
            status = self._status(prep, L, at, root)
            self.status[at] = status
            mixed = np.zeros(nc, dtype=bool)
            mixed[owner[status != _EXPANDED]] = True
            clipped = np.zeros(nc, dtype=bool)
            clipped[owner] = True
            clipped[owner[status != _CLIPPED_ALL]] = False
            self.kind[mixed] = 1
            self.kind[clipped] = 2
        undecided = np.flatnonzero(self.status == _UNDECIDED)
        self.sub = SubRuns.of(prep, self, L, undecided) if undecided.size else None

    def n_b(self, J):
        """The training counts of the buckets ``J`` (indices or a slice)."""
        return self._values[6][J]

    def eta(self, J):
        """``eta_hat`` of the buckets ``J`` (as in :meth:`values`)."""
        return self._values[5][J]

    def values(self, J):
        """``(E_N, E_M, E_T, alpha, root, eta, n_b)`` of the buckets ``J`` (indices,
        any shape: new arrays; or a slice: read-only views): the prefix sums of
        ``N``, ``M = N c`` and ``T`` at both ends added, ``L / n_b``, ``1 / (2
        sqrt(n_b))``, ``eta_hat`` and the training count."""
        return tuple(x[J] for x in self._values)

    @cached_property
    def _values(self):
        """:meth:`values` of every bucket, computed once per table (most buckets are
        read by several steps of a fit; read-only)."""
        prep = self.prep
        s, e = self.start, self.end
        N_s, N_e = prep.cN[s], prep.cN[e]
        n_b = N_e - N_s
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = self.L / n_b
            eta = (prep.cP[e] - prep.cP[s]) / n_b
            root = 0.5 / np.sqrt(n_b)
        N_s += N_e
        E_M = prep.cM[s] + prep.cM[e]
        E_T = prep.cT[s] + prep.cT[e]
        out = (N_s, E_M, E_T, alpha, root, eta, n_b)
        for x in out:
            x.flags.writeable = False
        return out

    def _status(self, prep, L, at, root):
        """Per bucket ``at`` (of unbounded candidates, holding prepared cells; ``root``
        there): ``_EXPANDED`` if ``g < 1`` on all of it and the terms of ``g`` are
        small (as in every bucket of a bounded candidate), ``_CLIPPED_ALL`` if ``g >=
        1`` on every cell, ``_UNDECIDED`` otherwise: proven from the bucket's training
        cells, with room for the rounding of the computed ``g``; every cell of a
        decided bucket passes :func:`_flag_mask`'s tests of expansion or clipping, so
        only its crossing cells are flagged.

        With ``a_c = N_lo - N_hi`` and ``k_c`` the distance sum from the centre of cell
        ``c`` to the bucket's training points outside it, ``g`` on the cell lies
        between ``alpha (k_c - |a_c| / (2K)) + root`` and ``alpha (D_max + k_c + |a_c| /
        (2K)) + root``, ``D_max <= 1.25 N_c / K``. Above: ``k_c + |a_c| / (2K) <=
        sum_i (|c - c_i| + 1) / K``, an integer sum that is convex in ``c``, so at most
        its value at the bucket's first or last prepared cell (``g`` and its terms are
        then at most 1: small). Below: ``k_c - |a_c| / (2K) >= sum_i |x_c - s_i| - n_b /
        (2K) >= MAD_b - n_b / (2K)``, ``MAD_b = min_x sum_i |x - s_i|`` the sum of the
        upper half of the bucket's training scores less that of the lower half,
        bounded below from their cells (the upper half at its cells' lower edges, the
        lower half at their upper edges) in exact integer sums."""
        status = np.full(at.shape[0], _UNDECIDED, dtype=np.int8)
        if not (at.size and math.isfinite(L)):
            return status
        K = prep.n_cells
        cN, cM = prep.cN, prep.cM
        s, e = self.start[at], self.end[at]
        n = cN[e] - cN[s]
        # Above: sum_i |c - c_i| at the first and last prepared cells of the bucket.
        first = self.first_pos[at]
        ends = prep.cells[np.stack((first, first + self.runs[at] - 1))]
        spread = _spread(prep, s, e, ends).max(axis=0)
        g_high = L * (2.25 + spread / n) / K + root
        status[g_high <= 2.0 - _CLIPPED] = _EXPANDED
        # Below, with two training scores at least (MAD_b = 0 with one).
        i = np.flatnonzero(n >= 2)
        n, s, e = n[i], s[i], e[i]
        h = np.floor(0.5 * n)
        base = cN[s]
        # The last score of the lower half and the first of the upper half, by rank.
        r_lo = base + h - 1.0
        r_hi = base + n - h
        c_lo = np.searchsorted(cN, r_lo, side="right") - 1
        c_hi = np.searchsorted(cN, r_hi, side="right") - 1
        lower = cM[c_lo] - cM[s] + (cN[c_lo] - base)
        lower += (r_lo - cN[c_lo] + 1.0) * (c_lo + 1)
        upper = cM[e] - cM[c_hi + 1] + (cN[c_hi + 1] - r_hi) * c_hi
        g_low = L * ((upper - lower) / K / n - 0.5 / K) + root[i]
        status[i[g_low >= _CLIPPED]] = _CLIPPED_ALL
        return status

    def buckets(self):
        """One :class:`Buckets` per candidate."""
        return [self.bucket(i) for i in range(len(self.candidates))]

    def blocks(self, n_cells, kind=None):
        """Runs of consecutive candidates (of the same ``kind``, if given), as
        slices, of about ``_BLOCK`` (candidate, cell) pairs for ``n_cells`` cells (at
        least one candidate): arrays that stay in cache, few numpy calls."""
        n = self.B.shape[0]
        step = max(1, _BLOCK // max(int(n_cells), 1))
        if kind is None:
            return [slice(i, min(i + step, n)) for i in range(0, n, step)]
        cuts = np.flatnonzero(np.diff(kind)) + 1
        out = []
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), n]):
            out.extend(slice(i, min(i + step, b)) for i in range(a, b, step))
        return out

    def bucket(self, i):
        """The :class:`Buckets` of candidate ``i``."""
        J = slice(self.bounds[i], self.bounds[i + 1])
        E_N, E_M, E_T, alpha, root, eta, n_b = self.values(J)
        return Buckets(
            int(self.B[i]),
            self.candidates[i][1],
            int(self.w[i]),
            int(self.o[i]),
            self.start[J],
            self.end[J],
            n_b,
            eta,
            alpha,
            root,
            (E_N, E_M, E_T),
            self.runs[J],
            bool(self.bounded[i]),
        )

    def bucket_index(self, owner, cells):
        """Index into the concatenated tables of the bucket of ``cells`` for the
        candidates ``owner`` (broadcast), ``bounds[i] + floor((c - o) / w) + 1``."""
        G = cells - self.o[owner]
        G //= self.w[owner]
        G += self.bounds[owner] + 1
        return G

    def gather(self, prep, rows, which=slice(0, 6), out=None):
        """``values(...)[which]`` at every prepared cell for the candidates ``rows``
        (a slice), ``(n_which, n_rows, n_cells)`` (into ``out`` if given): every
        bucket is a run of ``runs`` consecutive prepared cells, its values taken by
        bucket (the index repeated over the runs) or, with fewer cells than buckets,
        computed at every cell's bucket."""
        lo, hi = self.bounds[rows.start], self.bounds[rows.stop]
        shape = (rows.stop - rows.start, prep.cells.shape[0])
        if shape[0] * shape[1] * 4 <= hi - lo:  # fewer cells than buckets
            owner = np.arange(rows.start, rows.stop)[:, None]
            values = self.values(self.bucket_index(owner, prep.cells))[which]
            if out is None:
                return np.stack(values)
            for x, o in zip(values, out):
                o[...] = x
            return out
        index = np.repeat(np.arange(hi - lo), self.runs[lo:hi]).reshape(shape)
        values = self.values(slice(lo, hi))[which]
        if out is None:
            out = np.empty((len(values), *shape))
        for x, o in zip(values, out):
            np.take(x, index, out=o, mode="clip")  # in range: unbuffered
        return out

    def terms(self, prep, rows, tmp=None, out=None):
        """:func:`_affine` at every prepared cell for the candidates ``rows`` (a
        slice), as ``(n_rows, n_cells)`` arrays ``(eta_hat, alpha, beta, gamma)``:
        the same operations on the same operands, element by element (``tmp``: a
        scratch array of that shape; ``out``: six, for :meth:`gather`)."""
        E_N, E_M, E_T, alpha, root, eta = self.gather(prep, rows, out=out)
        s2 = prep.s2
        a = np.subtract(s2[0], E_N, out=E_N)  # N_lo - N_hi
        k = np.subtract(s2[1], E_M, out=E_M)  # M_lo - M_hi
        k -= np.multiply(prep.cells_f, a, out=tmp)
        k *= -1.0 / prep.n_cells
        k -= np.subtract(s2[2], E_T, out=E_T)  # T_lo - T_hi
        beta = np.multiply(alpha, a, out=a)
        gamma = np.multiply(alpha, k, out=k)
        gamma += root
        return eta, alpha, beta, gamma

    def terms_at(self, prep, owner, cells, s2):
        """``(bucket, eta_hat, alpha, beta, gamma, n_b)`` at ``cells`` (any, with
        their ``s2`` sums) for the candidates ``owner`` (broadcast against ``cells``),
        ``bucket`` indexing the concatenated tables: :func:`_affine`'s operations on
        the same operands, element by element."""
        G = self.bucket_index(owner, cells)
        E_N, E_M, E_T, alpha, root, eta, n_b = self.values(G)
        a = np.subtract(s2[0], E_N, out=E_N)  # N_lo - N_hi
        k = np.subtract(s2[1], E_M, out=E_M)  # M_lo - M_hi
        k -= cells * a
        k *= -1.0 / prep.n_cells
        k -= np.subtract(s2[2], E_T, out=E_T)  # T_lo - T_hi
        beta = np.multiply(alpha, a, out=a)
        gamma = np.multiply(alpha, k, out=k)
        gamma += root
        return G, eta, alpha, beta, gamma, n_b

    def fall_back(self, prep, L, owner, cells, scores, midpoints):
        """:func:`_fall_back` for the queries at ``scores`` in ``cells`` (with the
        ``midpoints`` there) whose bucket for candidate ``owner`` (same shape) is
        empty, every pair at once: ``(bucket, eta_hat, alpha, beta, gamma)``, element
        by element the same operations."""
        K = prep.n_cells
        below, above = prep.neighbours
        up = scores > midpoints
        neighbour = np.where(up, above[cells], below[cells])
        sign = np.where(up, -1.0, 1.0)
        jj = self.bucket_index(owner, neighbour)  # a training score exists there
        end, start = self.end[jj], self.start[jj]
        M_b = prep.cM[end] - prep.cM[start]
        T_b = prep.cT[end] - prep.cT[start]
        _, _, _, _, _, eta, nj = self.values(jj)
        aj = L / nj
        gj = aj * (sign * ((cells * nj - M_b) / K - T_b)) + 0.5 / np.sqrt(nj)
        return jj, eta, aj, sign * L, gj


def _affine(prep, bk, cells, s2, j):
    """``(eta_hat, alpha, beta, gamma)`` at ``cells`` (with their ``s2`` sums) whose
    buckets ``j`` hold training points: ``g = alpha D + beta e + gamma``."""
    E_N, E_M, E_T = (x[j] for x in bk.ends)
    a = s2[0] - E_N  # N_lo - N_hi
    k = s2[1] - E_M  # M_lo - M_hi
    k -= cells * a
    k *= -1.0 / prep.n_cells
    k -= s2[2] - E_T  # T_lo - T_hi
    alpha = bk.alpha[j]
    beta = alpha * a
    gamma = alpha * k
    gamma += bk.root[j]
    return bk.eta[j], alpha, beta, gamma


def coefficients_at(prep, bk, L, cells, scores, midpoints, s2=None):
    """``(bucket, eta_hat, alpha, beta, gamma, fallback)`` for queries at ``scores``
    in ``cells`` (any cells). A query in an empty bucket (``fallback``) uses the
    bucket of the nearest training score below (all of it below the query: distances
    ``n_j s' - sum s_i``) or, above ``midpoints`` (the midpoint of the training scores
    around its cell), above."""
    j = bk.bucket_of(cells)
    if s2 is None:
        s2 = [x[cells] + x[cells + 1] for x in (prep.cN, prep.cM, prep.cT)]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = [j, *_affine(prep, bk, cells, s2, j)]
    fallback = bk.n_b[j] <= 0
    _fall_back(prep, bk, L, cells, scores, midpoints, out, np.flatnonzero(fallback))
    return (*out, fallback)


def _fall_back(prep, bk, L, cells, scores, midpoints, out, f):
    """:func:`coefficients_at` at the queries ``f`` (positions) in empty buckets:
    ``out`` (bucket, eta_hat, alpha, beta, gamma) set there, in place."""
    K = prep.n_cells
    if f.size:
        c = cells[f]
        M_b = prep.cM[bk.end] - prep.cM[bk.start]
        T_b = prep.cT[bk.end] - prep.cT[bk.start]
        below, above = prep.neighbours
        up = scores[f] > midpoints[c]
        for neighbour, sign, side in ((below, 1.0, ~up), (above, -1.0, up)):
            cell = neighbour[c[side]]
            jj = bk.bucket_of(cell)  # a training score exists on the side used
            nj = bk.n_b[jj]
            aj = L / nj
            gj = aj * (sign * ((c[side] * nj - M_b[jj]) / K - T_b[jj])) + 0.5 / np.sqrt(
                nj
            )
            at = f[side]
            for array, value in zip(out, (jj, bk.eta[jj], aj, sign * L, gj)):
                array[at] = value


def _flag_mask(prep, eta, a, b, c, at=slice(None)):
    """The flag test of unbounded candidates, element by element at the prepared
    cells ``at``: ``eta_hat`` inside the cell, ``g`` crossing 1, or terms too large
    to expand; and the clip test ``c - |b| / (2K) >= 1`` (``g >= 1`` on the cell).
    (Overwrites ``eta``.)"""
    half = 0.5 / prep.n_cells
    t = np.subtract(prep.centre[at], eta, out=eta)
    crossing = np.abs(t, out=t) < half
    bh = np.abs(b)
    bh *= half
    b_half = b * half
    # g_max = max(a d_lo - b half, a d_hi + b half) + c
    g_max = np.multiply(a, prep.d_lo[at])
    g_max -= b_half
    u = np.multiply(a, prep.d_hi[at], out=t)
    u += b_half
    np.maximum(g_max, u, out=g_max)
    g_max += c
    # scale = max(a d_max, max(|c|, bh))
    scale = np.abs(c, out=b_half)
    np.maximum(scale, bh, out=scale)
    np.maximum(np.multiply(a, prep.d_max[at], out=u), scale, out=scale)
    expanded = g_max <= 1.0
    expanded &= scale <= _EXPANDED_SCALE
    clipped = np.subtract(c, bh, out=bh) >= 1.0
    expanded |= clipped
    return np.logical_or(crossing, ~expanded, out=crossing), clipped


def _all_crossings(prep, table, which):
    """The crossing cells of the buckets ``which`` (a mask) of ``table``: per bucket
    holding prepared cells, the cell of its ``eta_hat`` and that cell's neighbours
    (rounding), if they are prepared cells of that bucket with ``|c_centre - eta_hat|
    < 1 / (2K)``. Returns ``(candidate, position)`` pairs sorted by both."""
    K = prep.n_cells
    m = max(prep.cells.shape[0], 1)
    j = np.flatnonzero((table.runs > 0) & which)
    eta = table.eta(j)
    cell = np.minimum(np.multiply(eta, K).astype(np.intp), K - 1)
    start, end = table.start[j], table.end[j]
    keys = []
    for near in (cell - 1, cell, cell + 1):
        # Inside the bucket (so inside [0, K)) and a prepared cell.
        at = np.flatnonzero((near >= start) & (near < end))
        pos = prep.index[near[at] + 1]
        held = pos >= 0
        at, pos = at[held], pos[held]
        keep = np.abs(prep.centre[pos] - eta[at]) < 0.5 / K
        at, pos = at[keep], pos[keep]
        keys.append(table.owner[j[at]] * m + pos)
    # A cell lies in one bucket of a candidate: no pair twice.
    key = np.sort(np.concatenate(keys))
    return key // m, key % m


def _undecided_cells(prep, table, J, first, runs):
    """The prepared cells of the runs ``[first, first + runs)`` of positions (in
    order) of the buckets ``J``, each bucket's values repeated over its run, and
    :func:`_affine`'s operations there: per group of runs of about ``_BLOCK / 4``
    cells (small temporaries), the positions, candidates, ``alpha``, ``beta``,
    ``gamma`` and :func:`_flag_mask`'s flag and clip tests."""
    size = _BLOCK // 4
    edges = np.searchsorted(np.cumsum(runs), np.arange(size, runs.sum(), size))
    for group in np.split(np.arange(J.shape[0]), np.unique(edges + 1)):
        if not group.size:
            continue
        jg, rg = J[group], runs[group]
        at = np.arange(rg.sum()) + np.repeat(first[group] - np.cumsum(rg) + rg, rg)
        values = table.values(jg)[:6]
        E_N, E_M, E_T, alpha, root, eta = (np.repeat(x, rg) for x in values)
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.subtract(prep.s2[0][at], E_N, out=E_N)  # N_lo - N_hi
            k = np.subtract(prep.s2[1][at], E_M, out=E_M)  # M_lo - M_hi
            k -= prep.cells_f[at] * a
            k *= -1.0 / prep.n_cells
            k -= np.subtract(prep.s2[2][at], E_T, out=E_T)  # T_lo - T_hi
            beta = np.multiply(alpha, a, out=a)
            gamma = np.multiply(alpha, k, out=k)
            gamma += root
            flag, clipped = _flag_mask(prep, eta, alpha, beta, gamma, at)
        yield at, np.repeat(table.owner[jg], rg), alpha, beta, gamma, flag, clipped


def _all_flags(prep, table, keep=True):
    """Prepared cells whose sums do not follow from the moments, for every candidate
    of ``table``: the crossing cells of the buckets, and of the runs of undecided
    buckets (:class:`SubRuns`), where :attr:`BucketTable.status` decides every
    cell's expansion or clipping (every bucket of a bounded candidate), and where
    :func:`_flag_mask` holds on the cells of the undecided runs (all at once).
    Returns ``(candidate, position)`` pairs sorted by both; with ``keep`` (and at most
    ``_KEPT_CELLS`` such pairs), sets ``table.undecided`` (the groups
    :func:`_undecided_cells` yields for the undecided runs, as a list; None if there
    are none)."""
    owner, pos = _all_crossings(prep, table, table.runs > 0)
    table.undecided = None
    sub = table.sub
    if sub is None:
        return owner, pos
    if owner.size:
        # The crossing cells of undecided runs are flagged by the test below.
        bucket = table.bucket_index(owner, prep.cells[pos])
        decided = sub.status_at(table, bucket, pos) != _UNDECIDED
        owner, pos = owner[decided], pos[decided]
    J, first, runs = sub.undecided(table)
    if not J.size:
        return owner, pos
    m = max(prep.cells.shape[0], 1)
    keys = [owner * m + pos]
    keep = keep and int(runs.sum()) <= _KEPT_CELLS
    parts = []
    for part in _undecided_cells(prep, table, J, first, runs):
        at, cand, flag = part[0], part[1], part[5]
        hit = np.flatnonzero(flag)
        keys.append(cand[hit] * m + at[hit])
        if keep:
            parts.append(part)
    # Kept for finish_split (the sums of min(g, 1) on these cells, bucket by bucket
    # only), which reuses the table when its cells agree: group by group, as it would
    # compute them again (the same sums to the bit either way).
    if keep:
        table.undecided = parts
    key = np.sort(np.concatenate(keys))
    return key // m, key % m


# ------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class Plan:
    """What pass 2 needs, the same for every chunk, for one grid: per split its
    training tables (stacked, ``(n_splits * K,)``), the flagged (split, cell,
    candidate) triples with their coefficients (sorted by ``split * K + cell``, with
    the range of each key), and the cells whose extremes to gather. Flags are only
    looked for in ``cells`` (per split: the occupied cells that hold queries, known
    from pass 1; no other cell's sums come from its moments). ``guarantee`` says which
    sums to compute: the paper's certificate reads the sums of ``min(g, 1)**2`` and
    not ``C2``, the high-probability one ``C2`` and not those (``None``: both)."""

    n_cells: int
    candidates: tuple  # (B, r) per candidate of this grid
    n_shifts: int
    L: float
    trainings: tuple
    split_of_group: np.ndarray
    n_groups: int
    needed: np.ndarray
    cells: tuple  # per split: the cells where flags matter
    guarantee: str = None
    count: np.ndarray = field(init=False)
    mean: np.ndarray = field(init=False)
    m2: np.ndarray = field(init=False)
    served_offsets: np.ndarray = field(init=False)
    triples: dict = field(init=False)
    served_keys: np.ndarray = field(init=False)
    # The (split, cell) pairs with training points, numbered in order (the others,
    # whose queries are kept, all at the last number): pass 2 sums moments there.
    slot: np.ndarray = field(init=False)
    slot_base: np.ndarray = field(init=False)  # per split, its first number
    first: np.ndarray = field(init=False)
    n_flags: np.ndarray = field(init=False)
    has_flags: np.ndarray = field(init=False)
    # per split: (candidate, cell) of every flagged pair, sorted by both
    flagged: tuple = field(init=False)

    def __post_init__(self):
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        K = self.n_cells
        stack = lambda arrays: np.concatenate([*arrays, np.empty(0)])  # noqa: E731
        set_("count", stack(t.count for t in self.trainings))
        set_("mean", stack(t.mean_offset() for t in self.trainings))
        set_("m2", stack(t.m2 for t in self.trainings))
        sizes = [B + 1 for B, _ in self.candidates] * len(self.trainings)
        set_("served_offsets", np.concatenate(([0], np.cumsum(sizes))).astype(np.intp))
        occupied = self.count > 0
        slot = np.cumsum(occupied) - 1
        slot[~occupied] = slot[-1] + 1 if slot.size else 0
        set_("slot", slot.astype(np.intp, copy=False))
        per_split = occupied.reshape(len(self.trainings), K).sum(axis=1)
        set_("slot_base", np.concatenate(([0], np.cumsum(per_split))).astype(np.intp))
        parts, flagged, tables = [], [], []
        nc = len(self.candidates)
        for s, (training, cells) in enumerate(zip(self.trainings, self.cells)):
            prep = Prepared(training, cells)
            table = BucketTable(prep, self.candidates, self.n_shifts, self.L)
            tables.append((prep, table))
            owner, pos = _all_flags(prep, table, keep=not self.squares)
            flagged.append((owner, prep.cells[pos]))
            if pos.size:
                cells = prep.cells[pos]
                bucket, eta, alpha, beta, gamma, _ = table.terms_at(
                    prep, owner, cells, [x[pos] for x in prep.s2]
                )
                parts.append(
                    {
                        "key": s * K + cells,
                        "slot": s * nc + owner,
                        "served": self.served_offsets[s * nc] + bucket,
                        "eta": eta,
                        "alpha": alpha,
                        "beta": beta,
                        "gamma": gamma,
                    }
                )
        names = ("key", "slot", "served", "eta", "alpha", "beta", "gamma")
        if parts:
            triples = {n: np.concatenate([p[n] for p in parts]) for n in names}
            order = np.argsort(triples["key"], kind="stable")
            triples = {n: v[order] for n, v in triples.items()}
        else:
            triples = {
                n: np.empty(0, dtype=np.intp if n in names[:3] else float)
                for n in names
            }
        # The served buckets of the flagged triples, numbered compactly (pass 2 counts
        # its served queries there only).
        keys, compact = np.unique(triples["served"], return_inverse=True)
        triples["served"] = compact.reshape(-1).astype(np.intp)
        set_("served_keys", keys.astype(np.intp))
        set_("triples", triples)
        # Transient (not pickled): finish_split reuses them when its cells agree.
        set_("_tables", tuple(tables))
        set_("flagged", tuple(flagged))
        size = len(self.trainings) * K
        n_flags = np.bincount(triples["key"], minlength=size).astype(np.intp)
        set_("n_flags", n_flags)
        set_("has_flags", n_flags > 0)
        set_("first", np.concatenate(([0], np.cumsum(n_flags)[:-1])).astype(np.intp))

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_tables", None)
        return state

    @property
    def n_splits(self):
        return len(self.trainings)

    @property
    def squares(self):
        """Whether the sums of ``min(g, 1)**2`` are computed."""
        return self.guarantee != "high_probability"

    @property
    def with_c2(self):
        """Whether ``C2`` (and the served counts it needs) is computed."""
        return self.guarantee != "paper"

    @property
    def n_moments(self):
        return _MOMENTS if self.squares else 4

    def empty(self):
        S, nc = self.n_splits, len(self.candidates)
        size = self.n_groups * self.needed.shape[0]
        return EvaluationSums(
            tuple(np.zeros(self.slot_base[-1] + 1) for _ in range(self.n_moments)),
            np.zeros((5, S * nc)),
            np.zeros(self.served_keys.shape[0]),
            (np.empty(0), np.empty(0, dtype=np.intp)),
            {"hi": np.full(size, -np.inf), "lo": np.full(size, np.inf)},
        )


@dataclass
class EvaluationSums:
    """Pass 2's mergeable result for one grid: per (split, cell) query moments (one
    array per moment), per (split, candidate) the point-by-point sums of the flagged
    cells (count, ``r``, ``r**2``, ``min(g, 1)``, its square) and their served-bucket
    counts (at the plan's ``served_keys``), the kept queries of empty cells, and the
    extremes of the needed cells per group."""

    moments: tuple
    pointwise: np.ndarray
    served: np.ndarray
    kept: tuple  # (scores, split)
    extremes: dict

    def __add__(self, other):
        return EvaluationSums(
            tuple(a + b for a, b in zip(self.moments, other.moments)),
            self.pointwise + other.pointwise,
            self.served + other.served,
            tuple(np.concatenate((a, b)) for a, b in zip(self.kept, other.kept)),
            {
                "hi": np.maximum(self.extremes["hi"], other.extremes["hi"]),
                "lo": np.minimum(self.extremes["lo"], other.extremes["lo"]),
            },
        )


def evaluation_sums(plan, scores, groups):
    """Pass 2 on one chunk (``groups``: the group of every row, -1 for none)."""
    out = plan.empty()
    K = plan.n_cells
    cells, offsets = cells_and_offsets(scores, K)
    if plan.needed.shape[0]:
        lookup = np.full(K, -1, dtype=np.intp)
        lookup[plan.needed] = np.arange(plan.needed.shape[0])
        at = np.flatnonzero(np.take(lookup >= 0, cells) & (groups >= 0))
        if at.size:
            slot = np.take(lookup, cells[at])
            key = groups[at].astype(np.intp) * plan.needed.shape[0] + slot
            np.maximum.at(out.extremes["hi"], key, scores[at])
            np.minimum.at(out.extremes["lo"], key, scores[at])
    if not plan.n_splits or not groups.shape[0]:
        return out
    if groups.min() >= 0:  # no row without a group: no -1 to mask
        split = np.take(plan.split_of_group, groups)
    else:
        split = plan.split_of_group[np.maximum(groups, 0)]
        split[groups < 0] = -1
    if split.min() < 0:  # rows validated by no split
        rows = np.flatnonzero(split >= 0)
        if not rows.size:
            return out
        if rows.size < scores.shape[0]:
            scores, split = scores[rows], split[rows]
            cells, offsets = cells[rows], offsets[rows]
    kept = _evaluate_rows(plan, scores, split, out, cells, offsets)
    if kept is not None:
        out.kept = kept
    return out


def _evaluate_rows(plan, s, split, out, c, e):
    K = plan.n_cells
    kept = None
    key = c
    key += np.multiply(split, K, out=split)  # split is ours (no longer needed)
    del split
    N = np.take(plan.count, key)
    empty = N <= 0
    if empty.any():
        kept = (s[empty], key[empty] // K)  # the split of each kept row
    # Every row's moments, those of the kept rows too: they fall in cells without
    # training points, where N = mean = m2 = 0 (so D = 0), all summed at the last
    # slot, which nothing reads (the other cells' sums are those of their rows, in
    # the same order).
    # own_cell_distance(N, e, mean, m2), its operations in place on the gathers.
    D = np.take(plan.mean, key)
    np.subtract(e, D, out=D)
    D *= D
    D *= N
    w = np.take(plan.m2, key)
    D += w
    np.maximum(D, 0.0, out=D)
    D *= N
    del N
    np.sqrt(D, out=D)
    size = out.moments[0].shape[0]
    flagged = np.flatnonzero(np.take(plan.has_flags, key))
    flagged_key = key[flagged]
    slot = np.take(plan.slot, key, out=key)  # key is no longer needed
    # Fresh sums (out is new: 0 + x == x), as doubles (np.bincount gives integers
    # without weights, or with no rows); the products in one buffer.
    moments = [np.bincount(slot, minlength=size)]
    products = ((e, None), (e, e), (D, None), (D, D), (D, e))
    for x, y in products[: plan.n_moments - 1]:
        weights = x if y is None else np.multiply(x, y, out=w)
        moments.append(np.bincount(slot, weights=weights, minlength=size))
    del slot
    out.moments = tuple(x.astype(np.float64, copy=False) for x in moments)
    if flagged.size:
        rows = flagged
        counts = np.take(plan.n_flags, flagged_key)
        point = np.repeat(rows, counts)
        within = np.arange(point.shape[0]) - np.repeat(
            np.cumsum(counts) - counts, counts
        )
        t = plan.first[np.repeat(flagged_key, counts)] + within
        tr = plan.triples
        r, g = _pointwise(
            s[point],
            e[point],
            D[point],
            tr["eta"][t],
            tr["alpha"][t],
            tr["beta"][t],
            tr["gamma"][t],
        )
        _add_pointwise(plan, out, tr["slot"][t], tr["served"][t], r, g)
    return kept


def _pointwise(s, e, D, eta, alpha, beta, gamma):
    """``r = |s - eta_hat|`` and ``min(g, 1)`` point by point."""
    r = np.abs(s - eta)
    g = alpha * D
    g += beta * e
    g += gamma
    np.minimum(g, 1.0, out=g)
    return r, g


def _add_pointwise(plan, out, slot, served, r, g):
    n = out.pointwise.shape[1]
    weights = (None, r, r * r, g, g * g) if plan.squares else (None, r, r * r, g)
    for k, w in enumerate(weights):
        out.pointwise[k] += np.bincount(slot, weights=w, minlength=n)
    if plan.with_c2:
        out.served += np.bincount(served, minlength=out.served.shape[0])  # compact


def training_extremes(plan, extremes, train_groups):
    """The extremes of a training set (the union of ``train_groups``) in the needed
    cells, from the per-group ones."""
    m = plan.needed.shape[0]
    merged = None
    for g in train_groups:
        part = {name: value[g * m : (g + 1) * m] for name, value in extremes.items()}
        merged = (
            part
            if merged is None
            else {
                "hi": np.maximum(merged["hi"], part["hi"]),
                "lo": np.minimum(merged["lo"], part["lo"]),
            }
        )
    return {"cells": plan.needed, **merged}


# ------------------------------------------------------------------------ finishing


def _segment_sums(values, bounds):
    """``values[bounds[i]:bounds[i + 1]].sum()`` for every ``i`` (no empty segment):
    ``np.add.reduceat``, and ``np.sum`` (pairwise) for long segments."""
    out = np.add.reduceat(values, bounds[:-1]) if values.size else np.zeros(0)
    for i in np.flatnonzero(np.diff(bounds) > _LONG_SEGMENT):
        out[i] = np.sum(values[bounds[i] : bounds[i + 1]])
    return out


# numpy's int64 sums wrap modulo 2**64 without a check: a bucket's integer sums in
# _bucket_totals are exact whenever their true values fit, which this bound on them
# ensures.
_EXACT_INTEGERS = 2.0**62


def _bucket_sums_fit(prep, n_queries):
    """Whether :func:`_bucket_totals` is exact for one split of ``n_queries`` queries:
    each of its integer sums is at most ``n_queries K max(K, n_train)``."""
    K = prep.n_cells
    return n_queries * K * max(K, float(prep.cN[-1])) < _EXACT_INTEGERS


def _bucket_totals(prep, table, x, f_owner, f_pos, which):
    """The first three columns of :func:`_moment_totals` (the sums of ``|x_e + x_n
    d|``, ``x_e2 + 2 d x_e + x_n d**2`` and ``min(g, 1)`` over the prepared cells not
    flagged for each candidate) for the candidates ``which`` (a mask; the other rows
    zero), bucket by bucket instead of cell by cell: a candidate costs ``O(B)``, not
    ``O(cells)``.

    Each of these sums over a run of cells is linear in per-cell quantities that do
    not depend on the candidate (given the bucket's values), so it is a difference
    of prefix sums over the prepared cells, taken once per split: over the whole
    bucket, and for ``|x_e + x_n d|`` the cells below ``eta_hat`` (``d < 0``) taken
    off twice. A flagged cell's share is computed the same way and taken off (in a
    decided bucket or run such a cell is a crossing one, whose terms are small). An
    undecided bucket (:attr:`BucketTable.status`) gets its sum of ``min(g, 1)`` run
    by run (:class:`SubRuns`): from the prefix sums on its decided runs, cell by cell
    on the others (:func:`_undecided_sums`).

    Digits: the sums of counts, ``c``, ``c**2`` and the integer part of the distance
    sums are exact int64 sums about the bucket's first cell (they wrap modulo
    ``2**64`` on the way, and fit at the end: :func:`_bucket_sums_fit`, required).
    What cancels is in floats: the offsets from the cell centres (terms of order ``1
    / K``) and the offset sums ``T``, which the per-cell form also takes as
    differences of prefix sums (``test_lipschitz_surrogate.py`` holds both to a
    per-point reference at 1e-12)."""
    K = prep.n_cells
    m = prep.cells.shape[0]
    nc = table.B.shape[0]
    totals = np.zeros((nc, 3))
    J = np.flatnonzero((table.runs > 0) & which[table.owner])
    if not J.size:
        return totals
    x_n, x_e, x_e2, x_D = x[:4]
    xn = x_n.astype(np.int64)  # exact: counts
    cells = prep.cells.astype(np.int64)
    xc = xn * cells
    s2N, s2M, s2T = prep.s2
    # Exclusive prefix sums over the prepared cells, a row at a time (temporaries of
    # one row).
    ints = np.zeros((5, m + 1), dtype=np.int64)
    np.cumsum(xn, out=ints[0, 1:])
    np.cumsum(xc, out=ints[1, 1:])
    np.cumsum(xc * cells, out=ints[2, 1:])
    np.cumsum(xc * s2N.astype(np.int64), out=ints[3, 1:])
    np.cumsum(xn * s2M.astype(np.int64), out=ints[4, 1:])
    floats = np.zeros((6, m + 1))
    np.cumsum(x_e, out=floats[0, 1:])
    np.cumsum(x_e * prep.cells_f, out=floats[1, 1:])
    np.cumsum(x_e * s2N, out=floats[2, 1:])
    np.cumsum(x_e2, out=floats[3, 1:])
    np.cumsum(x_D, out=floats[4, 1:])
    np.cumsum(x_n * s2T, out=floats[5, 1:])
    # By blocks of buckets: arrays of a few pages (a fresh large array costs page
    # faults in every operation).
    for lo in range(0, J.shape[0], _BUCKET_BLOCK):
        v = _bucket_values(prep, table, J[lo : lo + _BUCKET_BLOCK])
        linear, t1, g = _run_sums(ints, floats, K, v, v["first"], v["last"])
        below = _run_sums(ints, floats, K, v, v["first"], v["split"], linear_only=True)
        below *= -2.0
        for k, part in enumerate((np.add(linear, below, out=linear), t1, g)):
            totals[:, k] += np.bincount(v["owner"], weights=part, minlength=nc)
    sub = table.sub
    if sub is not None:
        # An undecided bucket's sum of min(g, 1) (0 above): its decided runs from
        # the prefix sums, its undecided ones cell by cell (_undecided_sums).
        d = np.flatnonzero((sub.status != _UNDECIDED) & which[table.owner[sub.bucket]])
        if d.size:
            v = _bucket_values(prep, table, sub.bucket[d])
            v["status"] = sub.status[d]
            g = _run_g(ints, floats, K, v, sub.first[d], sub.stop[d])
            totals[:, 2] += np.bincount(v["owner"], weights=g, minlength=nc)
    f = np.flatnonzero(which[f_owner])
    if f.size:
        f_owner, f_pos = f_owner[f], f_pos[f]
        bucket = table.bucket_index(f_owner, prep.cells[f_pos])
        v = _bucket_values(prep, table, bucket)
        if sub is not None:
            v["status"] = sub.status_at(table, bucket, f_pos)
        linear, t1, g = _run_sums(ints, floats, K, v, f_pos, f_pos + 1)
        linear = np.where(f_pos < v["split"], -linear, linear)
        for k, part in enumerate((linear, t1, g)):
            totals[:, k] -= np.bincount(f_owner, weights=part, minlength=nc)
    if sub is not None:
        totals[:, 2] += _undecided_sums(prep, table, x, f_owner, f_pos, which)
    return totals


def _bucket_values(prep, table, J):
    """What :func:`_run_sums` reads of the buckets ``J`` (holding prepared cells):
    their values (:meth:`BucketTable.values`), first cell, run of prepared cells
    ``[first, last)``, where the cells at and above ``eta_hat`` start (``split``),
    status and candidate."""
    K = prep.n_cells
    E_N, E_M, E_T, alpha, root, eta, _ = table.values(J)
    first = table.first_pos[J]
    # The prepared cells below eta_hat come first in every bucket: those of the
    # cells below eta_hat's, and that cell if its centre is below eta_hat (a
    # rounded floor(K eta) one cell off only moves a cell whose centre is on the
    # side counted; np.searchsorted costs more, its queries are not sorted).
    at = np.minimum((eta * K).astype(np.intp), K - 1)
    pos = prep.index[at + 1]
    split = prep.below[at] + ((pos >= 0) & (prep.centre[pos] < eta))
    last = first + table.runs[J]
    np.clip(split, first, last, out=split)
    return {
        "E_N": E_N,
        "E_T": E_T,
        "E_Ni": E_N.astype(np.int64),  # exact: counts
        "E_Mi": E_M.astype(np.int64),
        "alpha": alpha,
        "root": root,
        "eta": eta,
        "c0": table.start[J].astype(np.int64),
        "first": first,
        "last": last,
        "split": split,
        "status": table.status[J],
        "owner": table.owner[J],
    }


def _run_sums(ints, floats, K, v, lo, hi, linear_only=False):
    """:func:`_bucket_totals`' sums over the prepared cells ``[lo, hi)`` of the
    buckets ``v`` (:func:`_bucket_values`) from the prefix sums ``ints`` and
    ``floats``: of ``x_e + x_n d``, and unless ``linear_only`` of ``x_e2 + 2 d x_e +
    x_n d**2`` and ``min(g, 1)`` (its status decides)."""
    n = ints[0, hi] - ints[0, lo]
    P1 = ints[1, hi] - ints[1, lo]
    b = v["c0"]
    S1 = P1 - b * n  # sum x_n (c - b)
    # Row by row: a fancy index on the second axis of the 2-D array is slower.
    e0 = floats[0, hi] - floats[0, lo]
    z = (b + 0.5) / K - v["eta"]  # d = (c - b) / K + z
    nf, S1f = n.astype(np.float64), S1.astype(np.float64)
    linear = S1f / K
    linear += nf * z
    linear += e0
    if linear_only:
        return linear
    S2 = ints[2, hi] - ints[2, lo] - 2 * b * P1 + b * b * n  # sum x_n (c - b)**2
    e1, r2 = (floats[k, hi] - floats[k, lo] for k in (1, 3))
    e1 -= b * e0  # sum x_e (c - b)
    t1 = (S2.astype(np.float64) / K + 2.0 * z * S1f) / K
    t1 += z * z * nf
    t1 += 2.0 * (e1 / K + z * e0)
    t1 += r2
    return linear, t1, _run_g(ints, floats, K, v, lo, hi, n, P1, e0, nf)


def _run_g(ints, floats, K, v, lo, hi, n=None, P1=None, e0=None, nf=None):
    """:func:`_run_sums`' sum of ``min(g, 1)`` alone (its status decides); ``n``,
    ``P1``, ``e0`` and ``nf`` as :func:`_run_sums` computes them, if it has."""
    if n is None:
        n = ints[0, hi] - ints[0, lo]
        P1 = ints[1, hi] - ints[1, lo]
        e0 = floats[0, hi] - floats[0, lo]
        nf = n.astype(np.float64)
    # sum x_n I, I = c a - (M_lo - M_hi) = K (k + T_lo - T_hi)
    I = ints[3, hi] - ints[3, lo] - v["E_Ni"] * P1
    I -= ints[4, hi] - ints[4, lo]
    I += v["E_Mi"] * n
    eA, sD, sT = (floats[k, hi] - floats[k, lo] for k in (2, 4, 5))
    with np.errstate(over="ignore", invalid="ignore"):
        g = (
            sD
            + (eA - v["E_N"] * e0)
            + (I.astype(np.float64) / K - (sT - v["E_T"] * nf))
        )
        g *= v["alpha"]
        g += v["root"] * nf
        status = v["status"]
        return np.where(
            status == _EXPANDED, g, np.where(status == _CLIPPED_ALL, nf, 0.0)
        )


def _kept_for(kept, which):
    """The groups ``kept`` by :func:`_all_flags` (``table.undecided``), each cut to
    the candidates of the mask ``which``, one at a time."""
    for part in kept:
        keep = which[part[1]]
        yield part if keep.all() else tuple(x[keep] for x in part)


def _undecided_sums(prep, table, x, f_owner, f_pos, which):
    """Per candidate of ``which`` (a mask), the sum of ``min(g, 1)`` from the
    moments over the cells of the undecided runs of its buckets (:class:`SubRuns`;
    cell by cell, as in :func:`_moment_totals`) not flagged for it (``f_owner``,
    ``f_pos``); from ``table.undecided`` if set (:func:`_all_flags` on the same
    cells: every undecided run)."""
    m, nc = prep.cells.shape[0], table.B.shape[0]
    x_n, x_e, _, x_D = x[:4]
    kept = table.undecided
    if kept is not None:
        parts = _kept_for(kept, which)
    else:
        parts = _undecided_cells(prep, table, *table.sub.undecided(table, which))
    flagged = f_owner * m + f_pos  # sorted
    out = np.zeros(nc)
    for at, owner, alpha, beta, gamma, flag, clipped in parts:
        count = x_n[at]
        g = np.multiply(alpha, x_D[at])
        g += beta * x_e[at]
        g += gamma * count
        np.copyto(g, count, where=clipped)
        if kept is None:  # the flags of the plan (the same where cells agree)
            key = owner * m + at
            i = np.minimum(np.searchsorted(flagged, key), max(flagged.shape[0] - 1, 0))
            flag = flagged[i] == key if flagged.size else np.zeros(key.shape, bool)
        g[flag] = 0.0
        out += np.bincount(owner, weights=g, minlength=nc)
    return out


def _moment_totals(prep, table, x, f_owner, f_pos, f_edges, n_moments, which=None):
    """Per candidate, the sums over the prepared cells not flagged for it of
    ``|x_e + x_n d|``, ``x_e2 + 2 d x_e + x_n d**2`` (``d = c_centre - eta_hat``) and
    the sums of ``min(g, 1)`` and its square from the cell moments ``x``;
    ``(n_candidates, 4)``. Without the moments of ``D**2`` and ``D e`` (four rows in
    ``x``), the sums of ``min(g, 1)**2`` are not computed (NaN).

    Candidates with the same B at once, as (candidates, cells) arrays: element by
    element the operations of one candidate, and every row summed as a contiguous
    row (np.sum along the last axis adds a row exactly as it adds a 1-D array; a row
    with flagged cells is summed again without them). On a cell from the moments (not
    flagged) ``s - eta_hat`` keeps its sign and ``g <= 1`` on all of it (its sums
    expand) or ``g >= 1`` (clipped: every query counts 1). The terms are computed at
    every prepared cell, then the flagged ones (whose terms may overflow) are left
    out. A candidate clipped on every cell (:attr:`BucketTable.kind` 2) has the
    counts ``n_moments`` as its sums of ``min(g, 1)`` and its square (a sum of
    integers, exact in any order), and its terms of ``g`` are not computed.

    ``which`` (a mask, default all): the candidates summed (the other rows NaN, for
    :func:`_bucket_totals`)."""
    K = prep.n_cells
    m = prep.cells.shape[0]
    nc = table.B.shape[0]
    squares = x.shape[0] == _MOMENTS
    x_n, x_e, x_e2, x_D = x[:4]
    # Doubled once (exact): 2 x y == x (2 y) and 2 (x + y) == 2 x + 2 y to the bit.
    x_e_2 = 2.0 * x_e
    if squares:
        x_D2, x_De = x[4:]
        x_D_2, x_De_2 = 2.0 * x_D, 2.0 * x_De
    half = 0.5 / K
    totals = np.full((nc, 4), np.nan)
    # 0: no cell clipped, 1: some, 2: every one (BucketTable.kind).
    kind = table.kind
    if which is None:
        which = np.ones(nc, dtype=bool)
    if nc * m <= _BLOCK and which.all():
        # One block (few numpy calls): a candidate of kind 0 or 2 computed as kind 1
        # gives the same sums (its clip test is false, or true, on every cell).
        blocks = [slice(0, nc)]
        kind = np.full(nc, kind[0] if (kind == kind[0]).all() else 1)
    else:
        # Blocks of one kind, all summed or all not.
        blocks = table.blocks(m, np.where(which, kind, kind + 3))
        blocks = [rows for rows in blocks if which[rows.start]]
    size = max((rows.stop - rows.start for rows in blocks), default=0) * m
    work = np.empty((12, size))  # six for the terms, six for the gathered values
    for rows in blocks:
        nb = rows.stop - rows.start
        k = int(kind[rows.start])
        buffers = work[:6, : nb * m].reshape(6, nb, m)
        gathered = work[6:, : nb * m].reshape(6, nb, m)
        terms = buffers[:4].transpose(1, 0, 2)  # (nb, 4, m) views
        t0, t1, g1, g2 = buffers[:4]
        tmp, u = buffers[4], buffers[5]
        with np.errstate(over="ignore", invalid="ignore"):
            if k == 2:
                (eta,) = table.gather(prep, rows, slice(5, 6), gathered[5:])
            else:
                eta, a, b, c = table.terms(prep, rows, tmp, gathered)
            d = np.subtract(prep.centre, eta, out=eta)
            # |x_e + x_n d|
            np.multiply(x_n, d, out=u)
            np.add(x_e, u, out=t0)
            np.abs(t0, out=t0)
            # x_e2 + d x_e_2 + x_n d d
            np.multiply(d, x_e_2, out=t1)
            t1 += x_e2
            u *= d
            t1 += u
            if k != 2:
                # a x_D + b x_e + c x_n
                np.multiply(a, x_D, out=g1)
                np.multiply(b, x_e, out=tmp)
                g1 += tmp
                np.multiply(c, x_n, out=tmp)
                g1 += tmp
            if k != 2 and squares:
                # a (a x_D2) + b (b x_e2) + c c x_n
                #   + (a (b x_De_2) + a (c x_D_2) + b (c x_e_2));
                # a * (a * x), not a**2 * x: alpha can be huge where every D is 0.
                np.multiply(a, x_D2, out=g2)
                g2 *= a
                np.multiply(b, x_e2, out=tmp)
                tmp *= b
                g2 += tmp
                np.multiply(c, c, out=tmp)
                tmp *= x_n
                g2 += tmp
                cross = np.multiply(b, x_De_2, out=d)  # d is no longer needed
                cross *= a
                np.multiply(c, x_D_2, out=tmp)
                tmp *= a
                cross += tmp
                np.multiply(c, x_e_2, out=tmp)
                tmp *= b
                cross += tmp
                g2 += cross
            if k == 1:
                clipped = np.abs(b, out=tmp)
                clipped *= half
                clipped = np.subtract(c, clipped, out=clipped) >= 1.0
                np.copyto(g1, x_n, where=clipped)
                if squares:
                    np.copyto(g2, x_n, where=clipped)
        # The sums of t0, t1 and, unless every cell is clipped, g1 (and g2).
        used = 2 if k == 2 else 4 if squares else 3
        terms[:, :used].sum(axis=2, out=totals[rows, :used])
        if k == 2:
            totals[rows, 2] = n_moments[rows]
            if squares:
                totals[rows, 3] = n_moments[rows]
        for i in range(rows.start, rows.stop):
            if f_edges[i + 1] > f_edges[i]:
                pos = f_pos[f_edges[i] : f_edges[i + 1]]
                row = terms[i - rows.start, :used]
                # C-contiguous rows without the flagged cells (terms[i][:, use] is
                # F-ordered, whose sum along axis 1 would not be pairwise): the runs
                # between them joined (few), or compressed.
                if pos.shape[0] <= 16:
                    starts, stops = [0, *(pos + 1).tolist()], [*pos.tolist(), m]
                    kept = np.concatenate(
                        [row[:, a:b] for a, b in zip(starts, stops)], axis=1
                    )
                else:
                    use = np.ones(m, dtype=bool)
                    use[pos] = False
                    kept = np.compress(use, row, axis=1)
                kept.sum(axis=1, out=totals[i, :used])
    return totals


def finish_split(plan, s, sums, training):
    """Per candidate of the grid, ``(n, sum r, sum r**2, sum g~, sum g~**2,
    n_fallback, C2)`` of split ``s`` (``training`` with its extremes set); the sum of
    ``g~**2`` or ``C2`` is None where ``plan.guarantee`` does not read it."""
    K = plan.n_cells
    nc = len(plan.candidates)
    # The split's moments, at its cells with training points (in order).
    occupied = np.flatnonzero(training.count > 0)
    base = plan.slot_base[s]
    moments = [x[base : base + occupied.shape[0]] for x in sums.moments]
    kept_s = sums.kept[0][sums.kept[1] == s]
    # The cells whose sums come from the moments: queries there and training points
    # too (the others' queries were kept), unless flagged for a candidate.
    at = np.flatnonzero(moments[0] > 0)
    cells = occupied[at]
    cached = getattr(plan, "_tables", None)
    if (
        cached is not None
        and cached[s][0].training is training
        and np.array_equal(cached[s][0].cells, cells)
    ):
        prep, table = cached[s]  # the plan's, on the same cells (no extremes read)
    else:
        prep = Prepared(training, cells)
        table = BucketTable(prep, plan.candidates, plan.n_shifts, plan.L)
    m = prep.cells.shape[0]
    # The moments at the prepared cells, each one contiguous (an advanced index on
    # the second axis of a 2-D array would give strided rows, slower in every op).
    x = np.empty((len(moments), m))  # prep.cells is cells: at gives their moments
    for moment, row in zip(moments, x):
        np.take(moment, at, out=row, mode="clip")  # in range: unbuffered
    x_n = x[0]
    bounds = table.bounds
    first = s * nc
    # The flagged (candidate, position) pairs, sorted by both.
    f_owner, f_cells = plan.flagged[s]
    f_pos = prep.index[f_cells + 1]
    f_owner, f_pos = f_owner[f_pos >= 0], f_pos[f_pos >= 0]
    f_edges = np.searchsorted(f_owner, np.arange(nc + 1))
    # Every candidate's served counts of this split, concatenated like the table:
    # counts, added exactly in any order. The moments' share: per bucket the queries
    # of its run of prepared cells, less those of its flagged cells.
    cx = _exclusive_cumsum(x_n)
    f_n = x_n[f_pos]
    if plan.with_c2:
        start = table.first_pos
        served = cx[start + table.runs] - cx[start]
        lo, hi = np.searchsorted(
            plan.served_keys, plan.served_offsets[[first, first + nc]]
        )
        served[plan.served_keys[lo:hi] - plan.served_offsets[first]] += sums.served[
            lo:hi
        ]
        served -= np.bincount(
            table.bucket_index(f_owner, prep.cells[f_pos]),
            weights=f_n,
            minlength=bounds[-1],
        )
    n_moments = cx[m] - np.bincount(f_owner, weights=f_n, minlength=nc)
    # Bucket by bucket (_bucket_totals) where a candidate has a few times fewer
    # buckets than prepared cells, its integer sums are exact and the sums of
    # min(g, 1)**2 are not read (they are cell by cell: _moment_totals).
    cells = np.ones(nc, dtype=bool)
    if not plan.squares and _bucket_sums_fit(prep, cx[m]):
        held = np.add.reduceat((table.runs > 0).astype(np.intp), bounds[:-1])
        cells = held * _CELLS_PER_BUCKET >= m
    totals = _moment_totals(prep, table, x, f_owner, f_pos, f_edges, n_moments, cells)
    if not cells.all():
        by_bucket = _bucket_totals(prep, table, x, f_owner, f_pos, ~cells)
        totals[~cells, :3] = by_bucket[~cells]
    nk = kept_s.shape[0]
    k_sums = np.zeros((4, nc))
    n_fallback = np.zeros(nc, dtype=np.intp)
    if nk:
        kept_c = cell_of(kept_s, K)
        kept_e = cell_offsets(kept_s, kept_c, K)
        kept_s2 = [x[kept_c] + x[kept_c + 1] for x in (prep.cN, prep.cM, prep.cT)]
        mid = None
        for rows in table.blocks(nk):
            owner = np.arange(rows.start, rows.stop)[:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                kG, k_eta, k_alpha, k_beta, k_gamma, k_n = table.terms_at(
                    prep, owner, kept_c, kept_s2
                )
            fallback = k_n <= 0
            f_row, f_query = np.nonzero(fallback)
            if f_row.size:
                if mid is None:
                    mid = training.midpoints_at(kept_c, prep.neighbours)
                values = table.fall_back(
                    prep,
                    plan.L,
                    f_row + rows.start,
                    kept_c[f_query],
                    kept_s[f_query],
                    mid[f_query],
                )
                for array, value in zip((kG, k_eta, k_alpha, k_beta, k_gamma), values):
                    array[f_row, f_query] = value
            # _pointwise at D = 0, every candidate of the block at once.
            rr = np.subtract(kept_s, k_eta, out=k_eta)
            np.abs(rr, out=rr)
            gg = np.multiply(k_alpha, 0.0, out=k_alpha)
            k_beta *= kept_e
            gg += k_beta
            gg += k_gamma
            np.minimum(gg, 1.0, out=gg)
            k_sums[0, rows] = rr.sum(axis=1)
            k_sums[2, rows] = gg.sum(axis=1)
            for i in range(rows.stop - rows.start):
                k_sums[1, rows.start + i] = np.dot(rr[i], rr[i])
                if plan.squares:
                    k_sums[3, rows.start + i] = np.dot(gg[i], gg[i])
            if plan.with_c2:
                lo, hi = bounds[rows.start], bounds[rows.stop]
                kG -= lo
                served[lo:hi] += np.bincount(kG.ravel(), minlength=hi - lo)
            n_fallback[rows] = np.count_nonzero(fallback, axis=1)
    pointwise = sums.pointwise[:, first : first + nc]
    n = pointwise[0] + n_moments
    n += nk
    sum_r = pointwise[1] + totals[:, 0]
    sum_r2 = pointwise[2] + totals[:, 1]
    sum_g = pointwise[3] + totals[:, 2]
    sum_g2 = pointwise[4] + totals[:, 3]
    if nk:
        sum_r += k_sums[0]
        sum_r2 += k_sums[1]
        sum_g += k_sums[2]
        sum_g2 += k_sums[3]
    # None for the sum the guarantee does not read (not computed).
    sum_g2 = sum_g2.tolist() if plan.squares else [None] * nc
    c2 = [None] * nc
    if plan.with_c2:
        # served**2 / max(n_b, 1) where served (a zero elsewhere, as 0 / size).
        held = np.flatnonzero(served)
        size = table.n_b(held)
        part = served[held]
        part *= part
        part /= np.where(size > 0, size, 1.0)
        served[:] = 0.0
        served[held] = part
        with np.errstate(divide="ignore", invalid="ignore"):
            c2 = np.where(n > 0, _segment_sums(served, bounds) / (n * n), 0.0).tolist()
    return [
        tuple(map(float, row[:4])) + row[4:5] + (int(row[5]),) + row[6:]
        for row in zip(n, sum_r, sum_r2, sum_g, sum_g2, n_fallback, c2)
    ]


# ---------------------------------------------------------------------- the two passes


def first_pass(chunk, design, grids, check=None):
    """Pass 1 on a :class:`~skcalbound._chunks.Chunk`: a :class:`Stack` of
    :class:`CellStats`, one per grid, and the fine-grid counts of every row (for the
    tie check)."""
    if check is not None:
        check(chunk.scores)
    groups = design.groups(chunk.start, chunk.n)
    return Stack(
        cell_stats(chunk.scores, chunk.labels, groups, design.n_groups, K)
        for K, _ in grids
    )


def second_pass(chunk, plans, design):
    groups = design.groups(chunk.start, chunk.n)
    return Stack(evaluation_sums(plan, chunk.scores, groups) for plan in plans)


@dataclass(frozen=True)
class BucketFit:
    """What the two passes give: per split the per-candidate sums (in the order of
    ``candidates``), the training set sizes, and the statistics of all rows per grid
    (for the refit surrogate)."""

    sums: tuple  # per split: list of per-candidate tuples
    n_train: tuple
    totals: tuple  # per grid: Training of all rows, extremes set
    n_samples: int
    n_positive: int


def fit_design(
    source,
    design,
    *,
    n_buckets,
    n_shifts,
    L,
    min_train=1,
    check=None,
    check_counts=None,
    refit=True,
    guarantee=None,
):
    """Run both passes of ``design`` over ``source`` (``_chunks``); ``guarantee``:
    the certificate whose sums to compute (``None``: every one, see :class:`Plan`)."""
    candidates, grids = candidate_grids(n_buckets, n_shifts)
    p1 = source.map_reduce(lambda c: first_pass(c, design, grids, check))
    first = p1[0]
    group_sizes = first.count.sum(axis=1)
    n_samples = int(round(float(group_sizes.sum())))
    if check_counts is not None:
        check_counts(first.count.sum(axis=0))
    everyone = tuple(range(design.n_groups))
    n_train = design.training_sizes(group_sizes, min_train)
    plans, trainings, totals = [], [], []
    for (K, members), stats in zip(grids, p1):
        unions = [train for _, train in design.splits]
        merged = stats.merged_many(unions + [everyone] if refit else unions)
        split_trainings = merged[: len(unions)]
        total = merged[-1] if refit else None
        needed = np.zeros(K, dtype=bool)
        for t in merged:
            needed |= t.needed_mask()
        # Flags matter where a split has training points and queries.
        cells = tuple(
            np.flatnonzero((t.count > 0) & (stats.count[validation] > 0))
            for t, (validation, _) in zip(split_trainings, design.splits)
        )
        plans.append(
            Plan(
                K,
                tuple(candidates[j] for j in members),
                n_shifts,
                L,
                tuple(split_trainings),
                design.split_of_group,
                design.n_groups,
                np.flatnonzero(needed),
                cells,
                guarantee,
            )
        )
        trainings.append(split_trainings)
        totals.append(total)
    p2 = source.map_reduce(lambda c: second_pass(c, plans, design))
    if p2 is None:
        p2 = Stack(plan.empty() for plan in plans)
    per_split = [[None] * len(candidates) for _ in design.splits]
    for (K, members), plan, sums, split_trainings, total in zip(
        grids, plans, p2, trainings, totals
    ):
        for s, (training, (_, train)) in enumerate(zip(split_trainings, design.splits)):
            training.extremes = training_extremes(plan, sums.extremes, train)
            for j, value in zip(members, finish_split(plan, s, sums, training)):
                per_split[s][j] = value
        if total is not None:
            total.extremes = training_extremes(plan, sums.extremes, everyone)
    n_positive = int(round(float(first.positives.sum())))
    return BucketFit(
        tuple(per_split), tuple(n_train), tuple(totals), n_samples, n_positive
    )


class BucketSurrogate:
    """Every candidate bucketing of one training set (all rows of the fit), from its
    per-grid cell statistics; ``candidate`` (an index into ``candidates``, chosen
    from the cross-fitted bounds before the surrogate is built) is the one
    :meth:`__call__` uses. Holds arrays only (pickles as such)."""

    def __init__(self, totals, n_buckets, n_shifts, candidate, n_train):
        self.totals = tuple(totals)
        self.n_shifts = int(n_shifts)
        self.candidates, self.grids = candidate_grids(n_buckets, n_shifts)
        self.candidate = int(candidate)
        self.n_train = int(n_train)

    def _chosen(self, L, x):
        """The chosen candidate at scores ``x``: the training statistics of its grid,
        the cells of ``x`` and :func:`coefficients_at` there."""
        for (K, members), training in zip(self.grids, self.totals):
            if self.candidate in members:
                B, r = self.candidates[self.candidate]
                prep = Prepared(training, np.empty(0, dtype=np.intp))
                (bk,) = Buckets.every(prep, [(B, r)], self.n_shifts, L)
                c = cell_of(x, K)
                return (
                    training,
                    c,
                    coefficients_at(prep, bk, L, c, x, training.midpoints()),
                )
        raise IndexError(self.candidate)  # pragma: no cover

    def __call__(self, x):
        """The chosen candidate's ``eta_hat`` at scores ``x`` (any order)."""
        x = np.asarray(x, dtype=np.float64)
        return self._chosen(0.0, x)[2][1]

    def residuals_and_smoothing(self, lipschitz, x):
        """``|eta_hat(x) - x|``, unclipped ``g(x)`` of the chosen candidate at scores
        ``x`` (any order), and the number of queries that used a fallback bucket."""
        x = np.asarray(x, dtype=np.float64)
        training, c, (_, eta, alpha, beta, gamma, fallback) = self._chosen(lipschitz, x)
        e = cell_offsets(x, c, training.n_cells)
        D = own_cell_distance(
            training.count[c], e, training.mean_offset()[c], training.m2[c]
        )
        g = alpha * D + beta * e + gamma
        return np.abs(x - eta), g, int(np.count_nonzero(fallback))

    def all_sums(self, x, lipschitz, guarantee=None):
        """Per candidate, the sums of :func:`finish_split` at held-out scores ``x``
        (any order): pass 2 alone, every row validated by the one split (those of
        ``guarantee``'s certificate, see :class:`Plan`)."""
        sums = [None] * len(self.candidates)
        groups = np.zeros(x.shape[0], dtype=np.intp)
        for (K, members), training in zip(self.grids, self.totals):
            queries = np.bincount(cell_of(x, K), minlength=K) > 0
            plan = Plan(
                K,
                tuple(self.candidates[j] for j in members),
                self.n_shifts,
                lipschitz,
                (training,),
                np.zeros(1, dtype=np.intp),
                1,
                np.empty(0, dtype=np.intp),
                (np.flatnonzero(queries & (training.count > 0)),),
                guarantee,
            )
            result = evaluation_sums(plan, x, groups)
            for j, value in zip(members, finish_split(plan, 0, result, training)):
                sums[j] = value
        return sums


__all__ = [
    "BucketSurrogate",
    "Buckets",
    "CellStats",
    "candidate_grids",
    "cell_of",
    "fit_design",
    "merge_extremes",
]
