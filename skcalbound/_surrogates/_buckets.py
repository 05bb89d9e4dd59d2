"""Lipschitz bucketing: box-weight smoothers for every (bucket count, shift) candidate,
all evaluated from one grid of cell statistics (SPEC section 5).

Inputs are assumed validated; training and query scores are sorted.

Buckets. Candidate ``(B, r)`` with ``R`` shifts has edges ``(j + r/R) / B`` and bucket
id ``floor(B s - r/R)`` clipped to ``[-1, B - 1]``. We evaluate it through a grid of
``K`` equal cells, ``K`` a multiple of every ``B R`` it serves (a power of two for the
default candidates): with ``c = min(floor(K s), K - 1)`` the bucket id is exactly
``floor((c - o) / w)``, ``w = K / B`` cells per bucket and ``o = r K / (B R)``, so
every bucket is a run of whole cells and one pass of cell statistics serves every
candidate. (For ``B R`` a power of two this is the SPEC's formula to the last bit; in
general it is the same partition, with a score that lies on an edge up to rounding
assigned by ``floor(K s)``.)

Why not a loop over candidates on the raw scores: 48 default candidates times 2e6
validation points per fold at n = 10**7 is 10**8 point-candidate pairs, each needing
its bucket, a gather and a distance sum; that is 10x the time budget. Here the per-point
work (the query's distance to the training points of its own cell, ``D``, and its
offset ``e`` from the cell centre) is done once per fold, and a candidate only touches
the occupied cells: for a query in cell ``c`` of bucket ``b``,

    sum_{i in b} |s' - s_i| = D + (N_lo - N_hi) e
                              + (c N_lo - M_lo + M_hi - c N_hi) / K - T_lo + T_hi,

where ``N``, ``M = sum N c'`` and ``T`` (sum of offsets from cell centres) run over the
other cells of ``b`` below and above ``c``. ``N`` and ``M`` are integers (exact); ``T``
and ``D`` are sums of offsets bounded by a cell width, so nothing cancels. The bound's
``g = L mean_b |s' - s_i| + 1/(2 sqrt(n_b))`` is then affine in ``(D, e)`` on each run
of queries sharing a cell and a bucket, and its sums (and those of ``g**2``) follow
from per-run moments of ``D`` and ``e``. ``min(g, 1)`` is affine where a run lies
wholly below or above 1 (``g`` is convex along a run, so its maximum is at an end);
the few runs that cross 1 are evaluated point by point.

Empty buckets fall back to the bucket of the nearest training score: within a run of
empty buckets, queries at or below the midpoint (as a double) of the two training
scores around them use the lower bucket, the others the upper one; their distances to
it are all on one side, so the same affine form holds.
"""

import math
from dataclasses import dataclass

import numpy as np

# Cells of one grid at most (a finer one serves more candidates per pass, but every
# candidate costs O(occupied cells)).
_MAX_CELLS = 2**20
# A grid has at least this many cells when the candidates allow it: the runs that
# cross g = 1 are then short.
_MIN_CELLS = 2**12


def candidate_grids(n_buckets, n_shifts):
    """The candidates and the grids that serve them.

    Returns
    -------
    candidates : list of (int, int)
        ``(B, r)`` for every bucket count (ascending, unique) and shift ``r < n_shifts``.
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
    """Cell ids ``min(floor(K s), K - 1)`` as int64."""
    c = np.multiply(scores, n_cells).astype(np.int64)
    np.minimum(c, n_cells - 1, out=c)
    return c


def cell_offsets(scores, cells, n_cells):
    """``s - (c + 1/2) / K``: offsets from cell centres, at most half a cell."""
    return scores - (cells + 0.5) / n_cells


def _runs(sorted_ids):
    """Starts and stops of the runs of equal values in a sorted integer array."""
    n = sorted_ids.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    breaks = np.flatnonzero(sorted_ids[1:] != sorted_ids[:-1]) + 1
    return np.concatenate(([0], breaks)), np.concatenate((breaks, [n]))


def _prefix(x):
    out = np.empty(x.shape[0] + 1)
    out[0] = 0.0
    np.cumsum(x, out=out[1:])
    return out


@dataclass(frozen=True)
class GridTraining:
    """Training scores on a grid of ``n_cells`` cells: per occupied cell its position
    range in the sorted scores, count, positives and sum of offsets, and the prefix
    sum of offsets (for a query's distances inside its own cell)."""

    n_cells: int
    scores: np.ndarray
    cells: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    positives: np.ndarray
    offset_sum: np.ndarray
    offset_prefix: np.ndarray

    @classmethod
    def build(cls, scores, labels, n_cells, cells=None, offsets=None):
        if cells is None:
            cells = cell_of(scores, n_cells)
        if offsets is None:
            offsets = cell_offsets(scores, cells, n_cells)
        start, stop = _runs(cells)
        prefix = _prefix(offsets)
        return cls(
            n_cells=int(n_cells),
            scores=scores,
            cells=cells[start],
            start=start,
            stop=stop,
            positives=np.add.reduceat(labels, start, dtype=np.int64),
            offset_sum=prefix[stop] - prefix[start],
            offset_prefix=prefix,
        )

    @property
    def n_train(self):
        return self.scores.shape[0]


@dataclass(frozen=True)
class GridQueries:
    """Sorted query scores against one ``GridTraining``: the union of occupied cells
    with both sides' statistics, and the per-query ``D`` (distance sum to the training
    points of the own cell) and ``e`` (offset from the cell centre), as prefix sums
    of ``1, e, e**2, D, D**2, D e`` so that any run's moments are differences."""

    scores: np.ndarray
    cells: np.ndarray  # union of occupied cells, sorted
    n_train: np.ndarray  # training points per union cell
    positives: np.ndarray
    offset_sum: np.ndarray
    train_start: np.ndarray  # training points below the cell
    q_start: np.ndarray  # query position range of each union cell
    q_stop: np.ndarray
    e: np.ndarray
    D: np.ndarray
    prefix: np.ndarray  # shape (5, n_queries + 1): e, e**2, D, D**2, D e

    @classmethod
    def build(cls, training, scores, cells=None, offsets=None):
        K = training.n_cells
        if cells is None:
            cells = cell_of(scores, K)
        if offsets is None:
            offsets = cell_offsets(scores, cells, K)
        q_start, q_stop = _runs(cells)
        q_cells = cells[q_start]
        union = np.union1d(training.cells, q_cells)
        # Training side on the union.
        it = np.searchsorted(training.cells, union)
        present = np.zeros(union.shape[0], dtype=bool)
        inside = it < training.cells.shape[0]
        present[inside] = training.cells[it[inside]] == union[inside]
        itc = np.minimum(it, training.cells.shape[0] - 1)
        m = training.n_train
        train_start = np.where(it < training.cells.shape[0], training.start[itc], m)
        n_train = np.where(present, training.stop[itc] - training.start[itc], 0)
        positives = np.where(present, training.positives[itc], 0)
        offset_sum = np.where(present, training.offset_sum[itc], 0.0)
        # Query side on the union.
        iq = np.searchsorted(union, q_cells)
        qs = np.zeros(union.shape[0], dtype=np.int64)
        qe = np.zeros(union.shape[0], dtype=np.int64)
        qs[iq], qe[iq] = q_start, q_stop
        if q_start.shape[0]:
            # Cells without queries: an empty range at the right place.
            filler = np.searchsorted(q_cells, union)
            pos = np.where(filler < q_start.shape[0], q_start[np.minimum(filler, q_start.shape[0] - 1)], scores.shape[0])
            empty = np.ones(union.shape[0], dtype=bool)
            empty[iq] = False
            qs[empty] = pos[empty]
            qe[empty] = pos[empty]
        # Own-cell distance sums: the query splits its cell's training points at its
        # rank p; offsets are from the cell centre, so every prefix difference is a
        # sum of numbers no larger than half a cell.
        p = np.searchsorted(training.scores, scores, side="left")
        per_query = np.repeat(iq, q_stop - q_start)
        st = train_start[per_query]
        en = st + n_train[per_query]
        P = training.offset_prefix
        below = P[p] - P[st]
        D = (2 * p - st - en) * offsets - 2.0 * below + (P[en] - P[st])
        # Rounding can leave -1e-17 for a query on top of the cell's only point.
        np.maximum(D, 0.0, out=D)
        prefix = np.empty((5, scores.shape[0] + 1))
        prefix[:, 0] = 0.0
        for k, x in enumerate((offsets, offsets * offsets, D, D * D, D * offsets)):
            np.cumsum(x, out=prefix[k, 1:])
        return cls(
            scores=scores,
            cells=union,
            n_train=n_train,
            positives=positives,
            offset_sum=offset_sum,
            train_start=train_start,
            q_start=qs,
            q_stop=qe,
            e=offsets,
            D=D,
            prefix=prefix,
        )


def _segment_prefix(values, seg_id, seg_start):
    """Exclusive prefix sums of ``values`` within each segment, and segment totals."""
    total = np.cumsum(values)
    exclusive = total - values
    base = exclusive[seg_start]
    totals = np.add.reduceat(values, seg_start) if values.shape[0] else values[:0]
    return exclusive - base[seg_id], totals


def _fill_previous(mask):
    """Index of the last True at or before each position (-1 if none)."""
    idx = np.where(mask, np.arange(mask.shape[0]), -1)
    return np.maximum.accumulate(idx) if idx.shape[0] else idx


def _fill_next(mask):
    """Index of the first True at or after each position (len if none)."""
    n = mask.shape[0]
    idx = np.where(mask, np.arange(n), n)
    return np.minimum.accumulate(idx[::-1])[::-1] if n else idx


@dataclass(frozen=True)
class Runs:
    """Runs of sorted queries sharing a cell and the bucket whose training points they
    use: query range ``[q0, q1)``, that bucket's count ``n`` and positives ``y``, and
    the coefficients of ``sum_{i in bucket} |s' - s_i| = D + a e + k`` on the run."""

    q0: np.ndarray
    q1: np.ndarray
    n: np.ndarray
    y: np.ndarray
    a: np.ndarray
    k: np.ndarray
    centre: np.ndarray
    fallback: np.ndarray  # bool: the run's own bucket has no training point


def candidate_runs(queries, training, n_buckets, shift, n_shifts):
    """The :class:`Runs` of candidate ``(n_buckets, shift)`` on a grid."""
    K = training.n_cells
    w = K // n_buckets
    o = shift * (K // (n_buckets * n_shifts))
    cells = queries.cells
    bucket = (cells - o) // w
    seg_start, _ = _runs(bucket)
    seg_id = np.repeat(np.arange(seg_start.shape[0]), np.diff(np.append(seg_start, cells.shape[0])))
    N = queries.n_train
    n_lo, n_b = _segment_prefix(N, seg_id, seg_start)
    NM = N * cells
    m_lo, m_b = _segment_prefix(NM, seg_id, seg_start)
    t_lo, t_b = _segment_prefix(queries.offset_sum, seg_id, seg_start)
    y_b = np.add.reduceat(queries.positives, seg_start)
    n_hi = n_b[seg_id] - n_lo - N
    m_hi = m_b[seg_id] - m_lo - NM
    t_hi = t_b[seg_id] - t_lo - queries.offset_sum
    own = n_b[seg_id] > 0
    # Own bucket: other cells of the bucket below and above the query's cell.
    k_own = (cells * n_lo - m_lo + m_hi - cells * n_hi) / K - t_lo + t_hi
    a_own = (n_lo - n_hi).astype(np.float64)
    # Empty buckets: the nearest nonempty bucket below and above.
    nonempty = n_b > 0
    prev = _fill_previous(nonempty)[seg_id]
    nxt = _fill_next(nonempty)[seg_id]
    n_seg = seg_start.shape[0]
    has_lo, has_hi = prev >= 0, nxt < n_seg
    lo, hi = np.maximum(prev, 0), np.minimum(nxt, n_seg - 1)
    m = training.n_train
    ts = queries.train_start
    t_low = training.scores[np.maximum(ts - 1, 0)]
    t_high = training.scores[np.minimum(ts, m - 1)]
    midpoint = 0.5 * (t_low + t_high)
    split = np.searchsorted(queries.scores, midpoint, side="right")
    split = np.where(has_lo, np.where(has_hi, split, queries.q_stop), queries.q_start)
    split = np.clip(split, queries.q_start, queries.q_stop)
    split = np.where(own, queries.q_stop, split)
    # Run A: [q_start, split) with the own bucket or the lower one; run B: the rest,
    # with the upper one (empty for cells of nonempty buckets).
    n_A = np.where(own, n_b[seg_id], n_b[lo])
    y_A = np.where(own, y_b[seg_id], y_b[lo])
    a_A = np.where(own, a_own, n_b[lo].astype(np.float64))
    k_A = np.where(own, k_own, (cells * n_b[lo] - m_b[lo]) / K - t_b[lo])
    n_B = n_b[hi]
    y_B = y_b[hi]
    a_B = -n_b[hi].astype(np.float64)
    k_B = (m_b[hi] - cells * n_b[hi]) / K + t_b[hi]
    centre = (cells + 0.5) / K
    fallback = ~own
    return Runs(
        q0=np.concatenate((queries.q_start, split)),
        q1=np.concatenate((split, queries.q_stop)),
        n=np.concatenate((n_A, n_B)),
        y=np.concatenate((y_A, y_B)),
        a=np.concatenate((a_A, a_B)),
        k=np.concatenate((k_A, k_B)),
        centre=np.concatenate((centre, centre)),
        fallback=np.concatenate((fallback, fallback)),
    )


def candidate_sums(queries, runs, lipschitz):
    """Sums over the queries of ``r = |eta_hat - s|``, ``r**2``, ``g~ = min(g, 1)``,
    ``g~**2``, and the number of queries that used a fallback bucket."""
    keep = runs.q1 > runs.q0
    q0, q1 = runs.q0[keep], runs.q1[keep]
    n_b = runs.n[keep]
    eta = runs.y[keep] / n_b
    d = runs.centre[keep] - eta  # s - eta_hat = e + d
    count = (q1 - q0).astype(np.float64)
    P = queries.prefix
    S = P[:, q1] - P[:, q0]  # sums of e, e^2, D, D^2, D e over each run
    se, se2, sD, sD2, sDe = S
    e, D = queries.e, queries.D
    last = q1 - 1
    # Residuals: one sign on a run unless eta_hat falls inside it.
    first_r, last_r = e[q0] + d, e[last] + d
    sum_r = np.abs(se + count * d)
    cross = (first_r < 0) & (last_r > 0)
    if np.any(cross):
        k = np.clip(np.searchsorted(queries.scores, eta[cross], side="left"), q0[cross], q1[cross])
        above = (P[0, q1[cross]] - P[0, k]) + (q1[cross] - k) * d[cross]
        below = (P[0, k] - P[0, q0[cross]]) + (k - q0[cross]) * d[cross]
        sum_r[cross] = above - below
    sum_r2 = se2 + 2.0 * d * se + count * d * d
    # Smoothing error g = alpha D + beta e + gamma on each run.
    alpha = lipschitz / n_b
    beta = alpha * runs.a[keep]
    gamma = alpha * runs.k[keep] + 0.5 / np.sqrt(n_b)
    g_first = alpha * D[q0] + beta * e[q0] + gamma
    g_last = alpha * D[last] + beta * e[last] + gamma
    g_low = gamma + np.minimum(beta * e[q0], beta * e[last])  # D >= 0
    below_one = np.maximum(g_first, g_last) <= 1.0
    above_one = g_low >= 1.0
    sum_g = np.where(
        below_one, alpha * sD + beta * se + gamma * count, count
    )
    sum_g2 = np.where(
        below_one,
        alpha * alpha * sD2 + beta * beta * se2 + gamma * gamma * count
        + 2.0 * (alpha * beta * sDe + alpha * gamma * sD + beta * gamma * se),
        count,
    )
    mixed = np.flatnonzero(~below_one & ~above_one)
    if mixed.size:
        lengths = (q1 - q0)[mixed]
        idx = np.repeat(q0[mixed] - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        run_of = np.repeat(np.arange(mixed.size), lengths)
        g = alpha[mixed][run_of] * D[idx] + beta[mixed][run_of] * e[idx] + gamma[mixed][run_of]
        np.minimum(g, 1.0, out=g)
        sum_g[mixed] = np.bincount(run_of, weights=g, minlength=mixed.size)
        sum_g2[mixed] = np.bincount(run_of, weights=g * g, minlength=mixed.size)
    n_fallback = int(count[runs.fallback[keep]].sum())
    return (
        float(count.sum()),
        float(sum_r.sum()),
        float(sum_r2.sum()),
        float(sum_g.sum()),
        float(sum_g2.sum()),
        n_fallback,
    )


def candidate_eta(queries, runs):
    """``eta_hat`` at every (sorted) query."""
    keep = runs.q1 > runs.q0
    eta = runs.y[keep] / runs.n[keep]
    out = np.empty(queries.scores.shape[0])
    # Runs tile the queries but are not in query order (A runs, then B runs).
    order = np.argsort(runs.q0[keep], kind="stable")
    out[:] = np.repeat(eta[order], (runs.q1[keep] - runs.q0[keep])[order])
    return out


class BucketSurrogate:
    """Every candidate bucketing of sorted training scores and labels.

    ``candidate`` (an index into ``candidates``) is the one :meth:`__call__` uses;
    the estimator sets it after cross-fitting. Grid tables are built on first use
    and not pickled.
    """

    def __init__(self, scores, labels, n_buckets, n_shifts, candidate=None):
        self.scores = scores
        self.labels = labels
        self.n_shifts = int(n_shifts)
        self.candidates, self.grids = candidate_grids(n_buckets, n_shifts)
        self.candidate = candidate
        self._cache = {}

    def __getstate__(self):
        return {**self.__dict__, "_cache": {}}

    @property
    def n_train(self):
        return self.scores.shape[0]

    def training(self, n_cells):
        if n_cells not in self._cache:
            self._cache[n_cells] = GridTraining.build(self.scores, self.labels, n_cells)
        return self._cache[n_cells]

    def grid_of(self, index):
        for K, members in self.grids:
            if index in members:
                return K
        raise IndexError(index)  # pragma: no cover

    def __call__(self, x):
        """The chosen candidate's ``eta_hat`` at scores ``x`` (any order)."""
        B, r = self.candidates[self.candidate]
        training = self.training(self.grid_of(self.candidate))
        order = np.argsort(x, kind="stable")
        queries = GridQueries.build(training, x[order])
        out = np.empty(x.shape[0])
        out[order] = candidate_eta(queries, candidate_runs(queries, training, B, r, self.n_shifts))
        return out

    def all_sums(self, x_sorted, lipschitz):
        """:func:`candidate_sums` of every candidate at sorted held-out scores."""
        sums = [None] * len(self.candidates)
        for K, members in self.grids:
            training = self.training(K)
            queries = GridQueries.build(training, x_sorted)
            for j in members:
                B, r = self.candidates[j]
                runs = candidate_runs(queries, training, B, r, self.n_shifts)
                sums[j] = candidate_sums(queries, runs, lipschitz)
        return sums
