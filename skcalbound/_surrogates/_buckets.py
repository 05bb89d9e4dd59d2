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
# A run's sums of g and g**2 come from its moments only while the terms of g stay
# below this (see candidate_sums); 64 keeps ~12 digits in the sum of g**2.
_EXPANDED_SCALE = 64.0


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
    """Training scores on a grid of ``n_cells`` cells: per cell its range of training
    ranks ``[start, stop)``, positives, sum of offsets from the centre and the prefix
    sum of offsets before it (what a query needs for its distances inside its own
    cell). Cells may hold no training point (a fold's complement keeps the whole
    sample's cells).

    ``rank_scores`` maps training ranks to scores; ``offset_prefix`` (explicit
    training data only) is the prefix sum of offsets over training ranks.
    """

    n_cells: int
    n_train: int
    cells: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    positives: np.ndarray
    offset_sum: np.ndarray
    prefix_start: np.ndarray
    scores: np.ndarray = None
    offset_prefix: np.ndarray = None
    _complement: tuple = None  # (whole sorted scores, validation ranks)

    @classmethod
    def build(cls, scores, labels, n_cells, cells=None, offsets=None):
        """From sorted training scores and their 0/1 labels."""
        if cells is None:
            cells = cell_of(scores, n_cells)
        if offsets is None:
            offsets = cell_offsets(scores, cells, n_cells)
        start, stop = _runs(cells)
        prefix = _prefix(offsets)
        return cls(
            n_cells=int(n_cells),
            n_train=scores.shape[0],
            cells=cells[start],
            start=start,
            stop=stop,
            positives=np.add.reduceat(labels, start, dtype=np.int64),
            offset_sum=prefix[stop] - prefix[start],
            prefix_start=prefix[start],
            scores=scores,
            offset_prefix=prefix,
        )

    def rank_scores(self, ranks):
        """The training scores of the given training ranks."""
        if self._complement is None:
            return self.scores[ranks]
        whole, validation_ranks = self._complement
        # Validation point i precedes the training point of rank r iff its own rank
        # (training points before it) is at most r.
        return whole[ranks + np.searchsorted(validation_ranks, ranks, side="right")]


@dataclass(frozen=True)
class WholeGrid:
    """The whole sorted sample on a grid, from which every KFold fold's training grid
    is the whole minus the fold's validation part: no training arrays are gathered.

    Offsets are from cell centres, so the prefix sums over 10**7 points stay of the
    order of ``n / (2 K)`` and their differences keep their digits.
    """

    n_cells: int
    scores: np.ndarray
    labels: np.ndarray
    point_cells: np.ndarray
    offsets: np.ndarray
    prefix: np.ndarray
    cells: np.ndarray
    start: np.ndarray
    count: np.ndarray
    positives: np.ndarray
    offset_sum: np.ndarray

    @classmethod
    def build(cls, scores, labels, n_cells):
        point_cells = cell_of(scores, n_cells)
        offsets = cell_offsets(scores, point_cells, n_cells)
        prefix = _prefix(offsets)
        start, stop = _runs(point_cells)
        return cls(
            n_cells=int(n_cells),
            scores=scores,
            labels=labels,
            point_cells=point_cells,
            offsets=offsets,
            prefix=prefix,
            cells=point_cells[start],
            start=start,
            count=stop - start,
            positives=np.add.reduceat(labels, start, dtype=np.int64),
            offset_sum=prefix[stop] - prefix[start],
        )

    def complement(self, validation):
        """``(training, queries)`` for the fold whose validation part is at sorted
        positions ``validation`` (increasing) and whose training part is the rest."""
        v_cells = self.point_cells.take(validation)
        v_offsets = self.offsets.take(validation)
        v_scores = self.scores.take(validation)
        v_prefix = _prefix(v_offsets)
        vs, ve = _runs(v_cells)
        where = np.searchsorted(self.cells, v_cells[vs])
        v_count = np.zeros_like(self.count)
        v_count[where] = ve - vs
        v_pos = np.zeros_like(self.positives)
        if vs.shape[0]:
            v_pos[where] = np.add.reduceat(self.labels.take(validation), vs, dtype=np.int64)
        v_osum = np.zeros_like(self.offset_sum)
        v_osum[where] = v_prefix[ve] - v_prefix[vs]
        v_before = np.searchsorted(v_cells, self.cells, side="left")
        count = self.count - v_count
        start = self.start - v_before
        ranks = validation - np.arange(validation.shape[0])
        training = GridTraining(
            n_cells=self.n_cells,
            n_train=self.scores.shape[0] - validation.shape[0],
            cells=self.cells,
            start=start,
            stop=start + count,
            positives=self.positives - v_pos,
            offset_sum=self.offset_sum - v_osum,
            prefix_start=self.prefix[self.start] - v_prefix[v_before],
            _complement=(self.scores, ranks),
        )
        # The training offsets before a validation point: all offsets before it
        # minus the validation ones.
        rank_prefix = self.prefix[validation] - v_prefix[:-1]
        queries = GridQueries.build(
            training, v_scores, v_cells, v_offsets, ranks=ranks,
            rank_prefix=rank_prefix, e_prefix=v_prefix,
        )
        return training, queries


@dataclass(frozen=True)
class GridQueries:
    """Sorted query scores against one ``GridTraining``.

    On the union of occupied cells: both sides' statistics, and per cell the sums of
    ``e, e**2, D, D**2, D e`` over its queries and the values at its first and last
    query, where ``D`` is a query's distance sum to the training points of its own
    cell and ``e`` its offset from the cell centre. Prefix sums of ``e`` and ``e**2``
    serve runs that split a cell.
    """

    scores: np.ndarray
    cells: np.ndarray  # union of occupied cells, sorted
    n_train: np.ndarray  # training points per union cell
    positives: np.ndarray
    offset_sum: np.ndarray
    train_start: np.ndarray  # training points below the cell
    q_start: np.ndarray  # query position range of each union cell
    q_stop: np.ndarray
    sums: np.ndarray  # shape (5, n_cells): e, e**2, D, D**2, D e
    ends: np.ndarray  # shape (4, n_cells): e and D at the first and last query
    e: np.ndarray
    D: np.ndarray
    e_prefix: np.ndarray  # shape (2, n_queries + 1): e, e**2

    @classmethod
    def build(cls, training, scores, cells=None, offsets=None, ranks=None,
              rank_prefix=None, e_prefix=None):
        """``ranks``, if given, is the number of training scores before each query in
        a stable order of all scores (any count between the number strictly below and
        the number at or below is exact here), and ``rank_prefix`` the sum of training
        offsets before it; else both come from the explicit training data.
        ``e_prefix`` is the prefix sum of ``offsets`` if already computed."""
        K = training.n_cells
        if cells is None:
            cells = cell_of(scores, K)
        if offsets is None:
            offsets = cell_offsets(scores, cells, K)
        q_start, q_stop = _runs(cells)
        q_cells = cells[q_start]
        union = np.union1d(training.cells, q_cells)
        n_union = union.shape[0]
        m = training.n_train
        n_cells_t = training.cells.shape[0]
        # Training side on the union.
        it = np.searchsorted(training.cells, union)
        itc = np.minimum(it, n_cells_t - 1)
        present = (it < n_cells_t) & (training.cells[itc] == union)
        train_start = np.where(it < n_cells_t, training.start[itc], m)
        n_train = np.where(present, training.stop[itc] - training.start[itc], 0)
        positives = np.where(present, training.positives[itc], 0)
        offset_sum = np.where(present, training.offset_sum[itc], 0.0)
        # Query side on the union; cells without queries get an empty range at the
        # position where their queries would be.
        iq = np.searchsorted(union, q_cells)
        after = np.searchsorted(q_cells, union)
        qs = np.append(q_start, scores.shape[0])[after]
        qe = qs.copy()
        qe[iq] = q_stop
        # Own-cell distance sums: the query splits its cell's training points at its
        # rank p; offsets are from the cell centre, so every prefix difference is a
        # sum of numbers no larger than half a cell.
        if ranks is None:
            ranks = np.searchsorted(training.scores, scores, side="left")
            rank_prefix = training.offset_prefix[ranks]
        per_query = np.repeat(iq, q_stop - q_start)
        st = train_start[per_query]
        en = st + n_train[per_query]
        prefix_start = np.where(present, training.prefix_start[itc], 0.0)[per_query]
        D = (2 * ranks - st - en) * offsets
        D -= 2.0 * (rank_prefix - prefix_start)
        D += offset_sum[per_query]
        D[en == st] = 0.0  # no training point in the cell
        # Rounding can leave -1e-17 for a query on top of the cell's only point.
        np.maximum(D, 0.0, out=D)
        sums = np.zeros((5, n_union))
        ends = np.zeros((4, n_union))
        if q_start.shape[0]:
            e2 = offsets * offsets
            for k, x in enumerate((offsets, e2, D, D * D, D * offsets)):
                sums[k, iq] = np.add.reduceat(x, q_start)
            last = q_stop - 1
            ends[:, iq] = (offsets[q_start], offsets[last], D[q_start], D[last])
        else:
            e2 = offsets
        prefix_e = np.empty((2, scores.shape[0] + 1))
        if e_prefix is None:
            prefix_e[0] = _prefix(offsets)
        else:
            prefix_e[0] = e_prefix
        prefix_e[1, 0] = 0.0
        np.cumsum(e2, out=prefix_e[1, 1:])
        return cls(
            scores=scores,
            cells=union,
            n_train=n_train,
            positives=positives,
            offset_sum=offset_sum,
            train_start=train_start,
            q_start=qs,
            q_stop=qe,
            sums=sums,
            ends=ends,
            e=offsets,
            D=D,
            e_prefix=prefix_e,
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
    use: query range ``[q0, q1)``; that bucket's count ``n`` and positives ``y``; the
    coefficients of ``sum_{i in bucket} |s' - s_i| = D + a e + k`` on the run; the
    run's cell centre; the sums of ``e, e**2, D, D**2, D e`` over it (``sums``) and
    ``e, e, D, D`` at its first and last query (``ends``); ``bucket``, an id of the
    bucket shared by the runs that use it. Only nonempty runs."""

    q0: np.ndarray
    q1: np.ndarray
    n: np.ndarray
    y: np.ndarray
    a: np.ndarray
    k: np.ndarray
    centre: np.ndarray
    sums: np.ndarray
    ends: np.ndarray
    bucket: np.ndarray
    n_fallback: int

    @property
    def count(self):
        return (self.q1 - self.q0).astype(np.float64)


def _split_run_moments(queries, q0, q1):
    """``sums`` and ``ends`` of runs inside cells without training points (``D = 0``)."""
    P = queries.e_prefix
    sums = np.zeros((5, q0.shape[0]))
    sums[0] = P[0, q1] - P[0, q0]
    sums[1] = P[1, q1] - P[1, q0]
    ends = np.zeros((4, q0.shape[0]))
    if q0.shape[0]:
        ends[0] = queries.e[q0]
        ends[1] = queries.e[q1 - 1]
    return sums, ends


def candidate_runs(queries, training, n_buckets, shift, n_shifts):
    """The :class:`Runs` of candidate ``(n_buckets, shift)`` on a grid."""
    K = training.n_cells
    w = K // n_buckets
    o = shift * (K // (n_buckets * n_shifts))
    cells = queries.cells
    bucket = (cells - o) // w
    seg_start, seg_stop = _runs(bucket)
    seg_id = np.repeat(np.arange(seg_start.shape[0]), seg_stop - seg_start)
    N = queries.n_train
    n_lo, n_b = _segment_prefix(N, seg_id, seg_start)
    NM = N * cells
    m_lo, m_b = _segment_prefix(NM, seg_id, seg_start)
    t_lo, t_b = _segment_prefix(queries.offset_sum, seg_id, seg_start)
    y_b = np.add.reduceat(queries.positives, seg_start)
    has_queries = queries.q_stop > queries.q_start
    own = (n_b[seg_id] > 0) & has_queries
    fb = np.flatnonzero((n_b[seg_id] == 0) & has_queries)
    # Cells of nonempty buckets: one run each, the other cells of the bucket below
    # and above the query's cell.
    c, sid = cells[own], seg_id[own]
    nb_own = n_b[sid]
    nl, ml, tl = n_lo[own], m_lo[own], t_lo[own]
    nh = nb_own - nl - N[own]
    mh = m_b[sid] - ml - NM[own]
    th = t_b[sid] - tl - queries.offset_sum[own]
    parts = [
        dict(
            q0=queries.q_start[own],
            q1=queries.q_stop[own],
            n=nb_own,
            y=y_b[sid],
            a=(nl - nh).astype(np.float64),
            k=(c * nl - ml + mh - c * nh) / K - tl + th,
            centre=(c + 0.5) / K,
            sums=queries.sums[:, own],
            ends=queries.ends[:, own],
            bucket=sid,
        )
    ]
    n_fallback = 0
    if fb.size:
        # Cells of empty buckets: the bucket of the nearest training score, below or
        # above; queries at or below the midpoint of the two use the lower one.
        nonempty = n_b > 0
        prev = _fill_previous(nonempty)[seg_id[fb]]
        nxt = _fill_next(nonempty)[seg_id[fb]]
        n_seg = seg_start.shape[0]
        has_lo, has_hi = prev >= 0, nxt < n_seg
        lo, hi = np.maximum(prev, 0), np.minimum(nxt, n_seg - 1)
        m = training.n_train
        ts = queries.train_start[fb]
        q_start, q_stop = queries.q_start[fb], queries.q_stop[fb]
        around = training.rank_scores(np.concatenate((np.maximum(ts - 1, 0), np.minimum(ts, m - 1))))
        midpoint = 0.5 * (around[: fb.size] + around[fb.size :])
        split = np.searchsorted(queries.scores, midpoint, side="right")
        split = np.where(has_lo, np.where(has_hi, split, q_stop), q_start)
        split = np.clip(split, q_start, q_stop)
        c = cells[fb]
        for q0, q1, j, sign in ((q_start, split, lo, 1), (split, q_stop, hi, -1)):
            keep = q1 > q0
            q0, q1, j, cc = q0[keep], q1[keep], j[keep], c[keep]
            sums, ends = _split_run_moments(queries, q0, q1)
            nj = n_b[j]
            # All of bucket j lies below (sign 1) or above (sign -1) the queries.
            k = sign * ((cc * nj - m_b[j]) / K - t_b[j])
            parts.append(
                dict(q0=q0, q1=q1, n=nj, y=y_b[j], a=sign * nj.astype(np.float64), k=k,
                     centre=(cc + 0.5) / K, sums=sums, ends=ends, bucket=j)
            )
            n_fallback += int(np.sum(q1 - q0))
    fields = {
        name: np.concatenate([part[name] for part in parts], axis=-1)
        for name in parts[0]
    }
    return Runs(**fields, n_fallback=n_fallback)


def sum_c_squared(runs):
    """``C2 = sum_i c_i**2 = sum_b (n'_b / n)**2 / n_b`` (SPEC section 10): a training
    point of bucket ``b`` receives ``1 / n_b`` from each of the ``n'_b`` queries that
    bucket serves, fallback included."""
    served = np.bincount(runs.bucket, weights=runs.count)
    size = np.ones(served.shape[0])
    size[runs.bucket] = runs.n
    n = served.sum()
    return float(np.sum(served * served / size) / (n * n))


def candidate_sums(queries, runs, lipschitz):
    """Sums over the queries of ``r = |eta_hat - s|``, ``r**2``, ``g~ = min(g, 1)``,
    ``g~**2``, the number of queries that used a fallback bucket, and ``C2``."""
    q0, q1, n_b = runs.q0, runs.q1, runs.n
    eta = runs.y / n_b
    d = runs.centre - eta  # s - eta_hat = e + d
    count = runs.count
    se, se2, sD, sD2, sDe = runs.sums
    e_first, e_last, D_first, D_last = runs.ends
    # Residuals: one sign on a run unless eta_hat falls inside it.
    sum_r = np.abs(se + count * d)
    cross = np.flatnonzero((e_first + d < 0) & (e_last + d > 0))
    if cross.size:
        P = queries.e_prefix[0]
        a, b, dc = q0[cross], q1[cross], d[cross]
        k = np.clip(np.searchsorted(queries.scores, eta[cross], side="left"), a, b)
        above = (P[b] - P[k]) + (b - k) * dc
        below = (P[k] - P[a]) + (k - a) * dc
        sum_r[cross] = above - below
    sum_r2 = se2 + 2.0 * d * se + count * d * d
    # Smoothing error g = alpha D + beta e + gamma on each run: convex along the run
    # (D is a sum of |s' - s_i|), so its maximum is at an end.
    alpha = lipschitz / n_b
    beta = alpha * runs.a
    gamma = alpha * runs.k + 0.5 / np.sqrt(n_b)
    g_first = alpha * D_first + beta * e_first
    g_last = alpha * D_last + beta * e_last
    g_max = np.maximum(g_first, g_last) + gamma
    g_low = gamma + np.minimum(beta * e_first, beta * e_last)  # D >= 0
    # The sums of g and g**2 from the run's moments expand g**2 into terms as large as
    # (the largest of |alpha D|, |beta e|, |gamma|)**2, which cancel when that scale is
    # far above g <= 1 (only for L * cell width >> 1, never for L from a usable h):
    # such runs, and those that cross g = 1, are summed point by point instead, where
    # g loses at most eps * scale and alpha**2 is never formed.
    scale = np.maximum(
        alpha * np.maximum(D_first, D_last),
        np.maximum(np.abs(gamma), np.abs(beta) * np.maximum(np.abs(e_first), np.abs(e_last))),
    )
    expanded = np.flatnonzero((g_max <= 1.0) & (scale <= _EXPANDED_SCALE))
    sum_g = count.copy()  # runs wholly at g >= 1
    sum_g2 = count.copy()
    if expanded.size:
        a, b, c = alpha[expanded], beta[expanded], gamma[expanded]
        n_e, x_D, x_e = count[expanded], sD[expanded], se[expanded]
        sum_g[expanded] = a * x_D + b * x_e + c * n_e
        sum_g2[expanded] = (
            # a * (a * x), not a**2 * x: alpha can be huge where every D is 0.
            a * (a * sD2[expanded]) + b * (b * se2[expanded]) + c * c * n_e
            + 2.0 * (a * (b * sDe[expanded]) + a * (c * x_D) + b * (c * x_e))
        )
    pointwise = np.ones(count.shape[0], dtype=bool)
    pointwise[expanded] = False
    pointwise = np.flatnonzero(pointwise & (g_low < 1.0))
    if pointwise.size:
        lengths = (q1 - q0)[pointwise]
        idx = np.repeat(q0[pointwise] - np.cumsum(lengths) + lengths, lengths)
        idx += np.arange(idx.shape[0])
        run_of = np.repeat(np.arange(pointwise.size), lengths)
        g = alpha[pointwise][run_of] * queries.D[idx]
        g += beta[pointwise][run_of] * queries.e[idx]
        g += gamma[pointwise][run_of]
        np.minimum(g, 1.0, out=g)
        sum_g[pointwise] = np.bincount(run_of, weights=g, minlength=pointwise.size)
        sum_g2[pointwise] = np.bincount(run_of, weights=g * g, minlength=pointwise.size)
    return (
        float(count.sum()),
        float(sum_r.sum()),
        float(sum_r2.sum()),
        float(sum_g.sum()),
        float(sum_g2.sum()),
        runs.n_fallback,
        sum_c_squared(runs),
    )


def candidate_eta(queries, runs):
    """``eta_hat`` at every (sorted) query."""
    out = np.empty(queries.scores.shape[0])
    lengths = runs.q1 - runs.q0
    idx = np.repeat(runs.q0 - np.cumsum(lengths) + lengths, lengths)
    idx += np.arange(idx.shape[0])
    out[idx] = np.repeat(runs.y / runs.n, lengths)
    return out


def candidate_smoothing(queries, runs, lipschitz):
    """Unclipped ``g = L mean_{i in b} |s' - s_i| + 1/(2 sqrt(n_b))`` at every (sorted)
    query, from the same affine form per run as :func:`candidate_sums`."""
    out = np.empty(queries.scores.shape[0])
    lengths = runs.q1 - runs.q0
    idx = np.repeat(runs.q0 - np.cumsum(lengths) + lengths, lengths)
    idx += np.arange(idx.shape[0])
    run_of = np.repeat(np.arange(lengths.shape[0]), lengths)
    alpha = lipschitz / runs.n
    g = alpha[run_of] * queries.D[idx]
    g += (alpha * runs.a)[run_of] * queries.e[idx]
    g += (alpha * runs.k + 0.5 / np.sqrt(runs.n))[run_of]
    out[idx] = g
    return out


class BucketSurrogate:
    """Every candidate bucketing of sorted training scores and labels.

    ``candidate`` (an index into ``candidates``) is the one :meth:`__call__` uses,
    chosen by the estimator from the cross-fitted bounds before it builds the
    surrogate. Grid tables are built on first use
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

    def residuals_and_smoothing(self, lipschitz, x):
        """``|eta_hat(x) - x|``, unclipped ``g(x)`` of the chosen candidate at scores
        ``x`` (any order), and the number of queries that used a fallback bucket."""
        B, r = self.candidates[self.candidate]
        training = self.training(self.grid_of(self.candidate))
        order = np.argsort(x, kind="stable")
        queries = GridQueries.build(training, x[order])
        runs = candidate_runs(queries, training, B, r, self.n_shifts)
        eta, g = np.empty(x.shape[0]), np.empty(x.shape[0])
        eta[order] = candidate_eta(queries, runs)
        g[order] = candidate_smoothing(queries, runs, lipschitz)
        return np.abs(eta - x), g, runs.n_fallback

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
