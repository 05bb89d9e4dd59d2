"""SPEC 13 with bucket weights (``w_i = 1/n_b`` in the query's bucket): one
candidate bucketing on one split, from per-cell sums that merge by addition.

:func:`proxy_bounds` ranks the candidates from pass 1's sums (any choice is valid:
every candidate is paid for by the union bound); :class:`BucketContext` is one chosen
candidate before pass 2, :func:`row_sums` pass 2 on a chunk of its validation scores,
:func:`finish` its :class:`~.._surrogates.nw._adaptive.AdaptiveStatistics`. See
``docs/internals/buckets.rst``.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._cells import bin_of, cell_offsets
from ..nw._adaptive import _N_TOTALS, _rows
from ..nw._adaptive import relative_factor as _relative_factor
from ..nw._adaptive_grid import cell_statistics
from ._table import BucketTable, Prepared, own_cell_distance

_CLIP = 1e-4


def bucket_pilot(validation, B, K):
    """SPEC 13's pilot with bucket weights, per training cell of the grid of ``K``
    cells: the validation labels (``validation``: per cell count and positives, each
    counted at its cell's centre) in the cells whose centres lie within
    ``min(1/B, 1/2)`` of the cell's, plus one pseudo-observation equal to its centre,
    clipped to ``[1e-4, 1 - 1e-4]``. A function of validation data only."""
    reach = max(int(math.ceil(min(1.0 / B, 0.5) * K)) - 1, 0)  # cells each side
    window = lambda x: _window_sums(x, reach)  # noqa: E731
    centre = (np.arange(K) + 0.5) / K
    pilot = (window(validation[1]) + centre) / (window(validation[0]) + 1.0)
    return np.clip(pilot, _CLIP, 1.0 - _CLIP)


def _window_sums(x, reach):
    """``sum x[c - reach : c + reach + 1]`` for every cell ``c`` (exact for counts)."""
    cum = np.concatenate(([0.0], np.cumsum(x)))
    idx = np.arange(x.shape[0])
    hi = np.minimum(idx + reach + 1, x.shape[0])
    lo = np.maximum(idx - reach, 0)
    return cum[hi] - cum[lo]


def _bucket_bias(s, mean_d, m1, M2, d, L, h, fallback):
    """Per query: ``Babs = min(1, L_v mean_b |s_i - s|)``, ``L_v = L`` or, in h-mode,
    ``min(L, Kbar_v / 4)`` (``|eta'| <= kappa1 / 4 <= Kbar_v / 4`` on the window
    ``[s - d, s + d]`` holding the bucket), and SPEC 13's ``R_v`` (Corollary 4 with
    the bucket's ``m1``, ``M2``, ``d``; NaN where undefined, at fallback queries and
    without ``h``)."""
    if h is None:
        return np.minimum(1.0, L * mean_d), np.full(s.shape[0], np.nan)
    R, k_bar = _relative_factor(s, m1, M2, d, h, fallback, k_bar=True)
    return np.minimum(1.0, np.minimum(L, k_bar / 4.0) * mean_d), R


def proxy_bounds(training, validation, candidates, n_shifts, L, h, delta):
    """Per candidate, quick stand-ins for its SPEC 13 upper and lower bounds from
    pass 1's sums of one split (``validation``: per cell count, positives and offset
    sum), each query at its cell's mean validation score: the mean of ``|s -
    eta_hat|``, plus the mean bias bound (``L`` times the distance to the bucket, or
    in h-mode the smaller of that and the relative branch), plus the noise
    ``sqrt(2 ln(1/delta) sum_b (n'_b/n)**2 eta_b (1 - eta_b) / n_b)``; the lower
    minus both, the bias with each query's noise ``sqrt(eta_b (1 - eta_b) / n_b)``.
    Only ranks the candidates (which ones pass 2 evaluates)."""
    count_v, _, tsum_v = validation
    n = float(count_v.sum())
    cells = np.flatnonzero((training.count > 0) & (count_v > 0))
    if not cells.shape[0]:
        return np.zeros(len(candidates)), np.zeros(len(candidates))
    prep = Prepared(training, cells)
    table = BucketTable(prep, candidates, n_shifts, 1.0)
    nv = count_v[cells]
    e = tsum_v[cells] / nv  # the mean validation offset of the cell
    s = prep.centre + e
    D = own_cell_distance(
        training.count[cells], e, training.mean_offset()[cells], training.m2[cells]
    )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        G, eta, alpha, beta, gamma, n_b = table.terms(slice(None))
        mean_d = alpha * D + beta * e + gamma - 0.5 / np.sqrt(n_b)
        bias = np.minimum(1.0, L * mean_d)
        if h is not None:
            mean_b, var_b, (low, high) = _bucket_shape(prep, table)
            m1 = mean_b[G] - s
            M2 = var_b[G] + m1 * m1
            d = np.maximum(s - low[G], high[G] - s)
            R, k_bar = _relative_factor(
                np.broadcast_to(s, G.shape), m1, M2, d, h, k_bar=True
            )
            bias = np.fmin(np.minimum(bias, k_bar / 4.0 * mean_d), R * eta)
            bias = np.fmin(bias, R * (1.0 - eta))
        residual = _per_candidate(np.abs(s - eta), nv)
        # The lower bound pays each query's own noise (SPEC 13's Psi).
        smoothing = np.minimum(1.0, bias + np.sqrt(eta * (1 - eta) / n_b))
        smoothing = _per_candidate(smoothing, nv)
        weights = np.broadcast_to(nv, G.shape).ravel()
        served = np.bincount(G.ravel(), weights, minlength=table.bounds[-1])
        eta_b = (prep.cP[table.end] - prep.cP[table.start]) / table.n_b(slice(None))
        var = np.where(served > 0, served**2 * eta_b * (1 - eta_b), 0.0)
        var = var / np.maximum(table.n_b(slice(None)), 1.0)
    noise = np.sqrt(np.add.reduceat(var, table.bounds[:-1]) * 2 * math.log(1 / delta))
    bias = _per_candidate(bias, nv)
    return (residual + bias + noise) / n, (residual - smoothing - noise) / n


def _per_candidate(x, nv):
    """``x @ nv`` without BLAS (see ``nw._adaptive.dot``)."""
    return np.einsum("ij,j->i", x, nv)


def _bucket_shape(prep, table):
    """Per bucket of every candidate of ``table``: the mean and variance of its
    training scores and the edges ``(low, high)`` of its first and last occupied
    cells (from per-cell sums: a stand-in, for ranking only)."""
    training, K = prep.training, prep.n_cells
    start, end = table.start, table.end
    n_b = np.maximum(prep.cN[end] - prep.cN[start], 1.0)
    mean_cell = (np.arange(K) + 0.5) / K + training.mean_offset()
    square = training.m2 + training.count * mean_cell * mean_cell
    mean_b = _bucket_sums(training.count * mean_cell, start, end) / n_b
    var_b = np.maximum(_bucket_sums(square, start, end) / n_b - mean_b**2, 0.0)
    below, above = prep.neighbours
    low = above[np.minimum(start, K - 1)] / K
    high = (below[np.maximum(end - 1, 0)] + 1.0) / K
    return mean_b, var_b, (low, high)


@dataclass(frozen=True)
class BucketContext:
    """One candidate ``(B, r)`` on one split before pass 2: its ``table`` (one
    candidate) on the split's ``training`` statistics, the ``pilot`` per training
    cell, and per bucket (``per_bucket``) and per cell (``per_cell``) what
    :func:`row_sums` reads. ``L``: the Lipschitz constant; ``h``: h-mode."""

    table: BucketTable
    training: object
    pilot: np.ndarray
    per_bucket: dict
    per_cell: dict
    L: float
    h: float = None

    @property
    def n_buckets(self):
        return int(self.table.bounds[-1])

    @classmethod
    def of(cls, training, validation, candidate, n_shifts, L, h=None):
        """The context of ``candidate`` on ``training`` (``validation``: per cell the
        count and positives of the split's validation rows, for the pilot)."""
        K = training.n_cells
        N = training.count
        occupied = np.flatnonzero(N > 0)
        prep = Prepared(training, occupied)
        table = BucketTable(prep, [candidate], n_shifts, 1.0)
        pilot = bucket_pilot(validation, candidate[0], K)
        cells = np.arange(K)
        bucket = table.bucket_index(0, cells)
        start, end = table.start, table.end
        n_b = prep.cN[end] - prep.cN[start]
        has = n_b > 0
        safe = np.where(has, n_b, 1.0)
        positions = cells + 0.5
        # Per bucket: eta_hat, the mean and (population) variance of its training
        # scores, its reach (the edges of its first and last occupied cells: d_v
        # from them bounds the distance to its farthest training score), the pilot's
        # mean and noise.
        tsum_b = _bucket_sums(training.tsum, start, end, prep.cT)
        M_b = prep.cM[end] - prep.cM[start]
        mean_b = ((M_b + 0.5 * n_b) / K + tsum_b) / safe
        mean_cell = positions / K + training.mean_offset()
        spread = np.where(N > 0, mean_cell - mean_b[bucket], 0.0)
        within = training.m2 + N * spread * spread
        var_b = _bucket_sums(within, start, end) / safe
        below, above = prep.neighbours
        first = above[np.minimum(start, K - 1)]
        last = below[np.maximum(end - 1, 0)]
        low_b = np.where(has, first / K, 0.0)
        high_b = np.where(has, (last + 1.0) / K, 1.0)
        eta_b = (prep.cP[end] - prep.cP[start]) / safe
        eta0_b = _bucket_sums(N * pilot, start, end) / safe
        noise0_b = np.sqrt(_bucket_sums(N * pilot * (1 - pilot), start, end)) / safe
        per_bucket = {
            "n": n_b,
            "mean": mean_b,
            "var": var_b,
            "low": low_b,
            "high": high_b,
            "eta": eta_b,
            "eta0": eta0_b,
            "noise0": noise0_b,
        }
        # Per cell: the bucket's distance sum outside the cell at offset 0 and its
        # slope (``n_b mean_d = D + a e + k``), the own cell's training moments.
        s2 = [x[cells] + x[cells + 1] for x in (prep.cN, prep.cM, prep.cT)]
        _, a, k, _ = table.distance_terms(0, cells, s2)
        alpha = 1.0 / safe[bucket]
        # Per cell, what a query there reads: its bucket's values, and for the
        # distance sum (``n_b mean_d = D + a e + k``, the own cell ``D`` by
        # Cauchy-Schwarz) ``1 / n_b``, ``a / n_b``, ``k / n_b`` and the own cell's
        # training moments; one array, gathered in one take.
        values = {
            **{name: per_bucket[name][bucket] for name in _BUCKET_FIELDS},
            "alpha": np.where(has[bucket], alpha, 0.0),
            "beta": np.where(has[bucket], a * alpha, 0.0),
            "gamma": np.where(has[bucket], k * alpha, 0.0),
            "count": N,
            "mean_offset": training.mean_offset(),
            "m2": training.m2,
        }
        per_cell = {
            "bucket": bucket,
            "empty": ~has[bucket],
            "table": np.stack([values[name] for name in _CELL_FIELDS]),
        }
        return cls(table, training, pilot, per_bucket, per_cell, float(L), h)

    def rows(self, s, e, v, fallback):
        """:func:`_rows` at scores ``s`` (offsets ``e`` in their cells) with the
        values ``v`` of their buckets (``fallback``: queries whose own bucket is
        empty, weighted by another one: their distance sum is ``|s - mean_b|``, every
        training point of that bucket on one side)."""
        m1 = v["mean"] - s
        if fallback.all():
            mean_d = np.abs(m1)
        else:
            D = own_cell_distance(v["count"], e, v["mean_offset"], v["m2"])
            # A sum of distances: at least 0 (rounding can cross it when it is 0).
            mean_d = np.maximum(v["alpha"] * D + v["beta"] * e + v["gamma"], 0.0)
        M2 = v["var"] + m1 * m1
        d = np.maximum(s - v["low"], v["high"] - s)
        bias = _bucket_bias(s, mean_d, m1, M2, d, self.L, self.h, fallback)
        return _rows(
            s,
            m1,
            M2,
            1.0 / np.sqrt(v["n"]),
            d,
            v["eta"],
            v["eta0"],
            v["noise0"],
            0.0,
            0.0,
            self.h,
            fallback,
            bias,
        )


_BUCKET_FIELDS = ("n", "mean", "var", "low", "high", "eta", "eta0", "noise0")
_CELL_FIELDS = (*_BUCKET_FIELDS, "alpha", "beta", "gamma", "count", "mean_offset", "m2")
# Rows per block of pass 2: large enough that the per-bucket sums (one bincount of
# every bucket per block) cost little next to the rows.
_ROWS = 2**16


def _bucket_sums(x, start, end, cum=None):
    """Per bucket ``[start, end)`` of cells, the sum of ``x`` over its cells."""
    if cum is None:
        cum = np.concatenate(([0.0], np.cumsum(x)))
    return cum[end] - cum[start]


@dataclass
class BucketSums:
    """Pass 2's mergeable result for one candidate on one split: the sums of
    :func:`_rows` (``totals``), per bucket the count, ``sum f``, ``sum f**2``, the
    count inside ``min(1, .)`` and ``sum R`` where the relative piece is active
    (``per_bucket``, shape ``(5, n_buckets)``), and the scores of the queries in
    empty buckets (``kept``, finished with the training extremes)."""

    totals: np.ndarray
    per_bucket: np.ndarray
    kept: np.ndarray

    def __add__(self, other):
        return BucketSums(
            self.totals + other.totals,
            self.per_bucket + other.per_bucket,
            np.concatenate((self.kept, other.kept)),
        )


def _accumulate(out, bucket, rows):
    inside, active = rows["inside"], rows["active"]
    f = rows["f"]
    for j, w in enumerate((None, f, f * f, inside, np.where(active, rows["R"], 0.0))):
        out[j] += np.bincount(bucket, weights=w, minlength=out.shape[1])


def row_sums(context, s):
    """Pass 2 on one chunk of the split's validation scores ``s``."""
    K = context.training.n_cells
    q = bin_of(s, K)
    empty = context.per_cell["empty"][q]
    kept = s[empty]
    s, q = s[~empty], q[~empty]
    totals = np.zeros(_N_TOTALS)
    per_bucket = np.zeros((5, context.n_buckets))
    for a in range(0, s.shape[0], _ROWS):
        sb, qb = s[a : a + _ROWS], q[a : a + _ROWS]
        bucket = context.per_cell["bucket"][qb]
        values = dict(zip(_CELL_FIELDS, np.take(context.per_cell["table"], qb, axis=1)))
        no = np.zeros(sb.shape[0], dtype=bool)
        rows, block = context.rows(sb, cell_offsets(sb, qb, K), values, no)
        totals += block
        _accumulate(per_bucket, bucket, rows)
    return BucketSums(totals, per_bucket, kept)


def empty_sums(context):
    zeros = np.zeros((5, context.n_buckets))
    return BucketSums(np.zeros(_N_TOTALS), zeros, np.empty(0))


def finish(context, sums, training):
    """The :class:`AdaptiveStatistics` of the candidate on the split from its merged
    :class:`BucketSums` (``training``: the split's training statistics with their
    extremes, for the queries in empty buckets)."""
    table, pilot = context.table, context.pilot
    K = training.n_cells
    totals = sums.totals.copy()
    per_bucket = sums.per_bucket.copy()
    kept = sums.kept
    if kept.shape[0]:
        c = bin_of(kept, K)
        # The bucket of the nearest training score (SPEC 5's fallback; the extremes
        # of the training scores around the empty cells decide the side).
        bucket = table.fall_back(0, c, kept, training.midpoints(c))[0]
        values = {name: context.per_bucket[name][bucket] for name in _BUCKET_FIELDS}
        everyone = np.ones(kept.shape[0], dtype=bool)
        rows, block = context.rows(kept, None, values, everyone)
        totals += block
        _accumulate(per_bucket, bucket, rows)
    n = totals[0]
    count, f1, f2, inside, active = per_bucket
    b = context.per_bucket
    n_b = np.maximum(b["n"], 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        noise_part = np.where(inside > 0, inside / (2.0 * b["noise0"] * n_b**2), 0.0)
    bias_part = active * np.sign(0.5 - b["eta0"]) / n_b
    bucket = context.per_cell["bucket"]
    values = (
        (count / n_b / n)[bucket],
        (f1 / n_b / n)[bucket],
        (f2 / n_b**2 / n)[bucket],
        (noise_part / n)[bucket] * (1.0 - 2.0 * pilot) + (bias_part / n)[bucket],
    )
    return cell_statistics(
        totals, values, pilot, training.count, training.positives, kept.shape[0]
    )
