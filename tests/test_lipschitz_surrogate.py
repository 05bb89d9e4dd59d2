"""The mergeable bucketing of ``_surrogates/buckets/`` against a per-point loop.

The reference takes one query at a time: its bucket by the SPEC formula
``clip(floor(B s - r/R), -1, B - 1)``; if no training score shares it, the bucket of the
nearest training score (at or below the midpoint ``0.5 * (lo + hi)`` of the two training
scores around the query, the lower one); then ``eta_hat`` = the mean label of that
bucket and ``g = L * S / n_b + 0.5 / sqrt(n_b)``, where ``S`` is the distance sum to
the bucket's training points: exact (``math.fsum``) for the points outside the query's
cell of the grid, and Cauchy-Schwarz's ``sqrt(N_c * sum (q - s_i)**2)`` for the ``N_c``
points inside it (the module docstring says why). The two passes (cell statistics,
per-cell moments, point by point only in flagged cells and empty ones) must give the
same ``eta_hat`` and fallback count exactly, and the same sums of ``r = |eta_hat - s|``,
``r**2``, ``min(g, 1)`` and ``min(g, 1)**2`` to 1e-12 relative, and the same ``C2 =
sum_i c_i**2`` of the high-probability certificate (``c_i`` the weight ``1 / n_b`` of
training point ``i`` averaged over the queries, fallback included; SPEC section 10).
"""

import bisect
import functools
import math

import numpy as np
import pytest
from _synthetic import slow_except
from numpy.testing import assert_allclose, assert_array_equal

from skcalbound._chunks import ArraySource
from skcalbound._passes import run
from skcalbound._splitting import GroupDesign
from skcalbound._surrogates._cells import bin_of as cell_of
from skcalbound._surrogates.buckets._candidates import candidate_grids
from skcalbound._surrogates.buckets._flags import flagged_pairs
from skcalbound._surrogates.buckets._model import BucketGrid
from skcalbound._surrogates.buckets._surrogate import BucketSurrogate
from skcalbound._surrogates.buckets._table import BucketTable, Prepared, cell_stats

SUM_NAMES = ["sum_r", "sum_r2", "sum_g", "sum_g2"]
L_VALUES = [0.0, 0.3, 30.0, 3000.0]


# ----------------------------------------------------------------------------------
# A slow, obviously correct reference
# ----------------------------------------------------------------------------------
def _bucket(s, B, r, R):
    """SPEC section 5: ``clip(floor(B s - r/R), -1, B - 1)``."""
    return min(max(math.floor(B * s - r / R), -1), B - 1)


def _distance_sum(q, points, K):
    """Exact distances outside the query's cell of ``K``, Cauchy-Schwarz inside.

    ``points`` is an array; each distance and square is one IEEE operation on two
    doubles, and ``math.fsum`` adds them exactly (numpy only saves the Python loop).
    """
    in_cell = np.minimum(np.floor(K * points), K - 1) == min(math.floor(K * q), K - 1)
    own, other = points[in_cell], points[~in_cell]
    inside = math.sqrt(own.size * math.fsum((q - own) ** 2)) if own.size else 0.0
    return math.fsum(np.abs(q - other)) + inside


def _reference(train_s, train_y, queries, B, r, R, K):
    """Per query ``(eta_hat, mean distance, n_b, fallback, bucket used)`` on the grid
    of ``K`` cells.

    ``train_s`` is sorted. ``g = L * mean distance + 0.5 / sqrt(n_b)`` for any ``L``.
    """
    train_s = [float(s) for s in train_s]
    members = {}
    for i, s in enumerate(train_s):
        members.setdefault(_bucket(s, B, r, R), []).append(i)
    # Per bucket: its scores, and the mean of its labels (the same for every query).
    points = {b: np.array([train_s[i] for i in idx]) for b, idx in members.items()}
    means = {
        b: sum(int(train_y[i]) for i in idx) / len(idx) for b, idx in members.items()
    }
    rows = []
    for q in map(float, queries):
        b = _bucket(q, B, r, R)
        fallback = b not in members
        if fallback:
            # The query's bucket is empty, so no training score equals q.
            k = bisect.bisect_left(train_s, q)
            lo = train_s[k - 1] if k > 0 else None
            hi = train_s[k] if k < len(train_s) else None
            if hi is None or (lo is not None and q <= 0.5 * (lo + hi)):
                b = _bucket(lo, B, r, R)
            else:
                b = _bucket(hi, B, r, R)
        idx = members[b]
        n_b = len(idx)
        eta = means[b]
        distance = _distance_sum(q, points[b], K) / n_b
        rows.append((eta, distance, n_b, fallback, b))
    return rows


def _g(row, L):
    return L * row[1] + 0.5 / math.sqrt(row[2])


def _reference_c2(rows):
    """``C2 = sum_i c_i**2``: each of the ``n_b`` training points of bucket ``b`` gets
    ``1 / n_b`` from each query that uses ``b``, so ``c_i = (n'_b / n) / n_b`` and
    ``C2 = sum_b n_b c_i**2 = sum_b (n'_b / n)**2 / n_b``."""
    served, size = {}, {}
    for row in rows:
        served[row[4]] = served.get(row[4], 0) + 1
        size[row[4]] = row[2]
    n = len(rows)
    return math.fsum(size[b] * (served[b] / n / size[b]) ** 2 for b in served)


def _reference_sums(rows, queries, L):
    r = [abs(row[0] - float(q)) for row, q in zip(rows, queries)]
    g = [min(_g(row, L), 1.0) for row in rows]
    return (
        len(rows),
        math.fsum(r),
        math.fsum(x * x for x in r),
        math.fsum(g),
        math.fsum(x * x for x in g),
        sum(row[3] for row in rows),
        _reference_c2(rows),
    )


def fit_design(
    source, design, *, n_buckets, n_shifts, L, refit=True, squares=True, c2=True
):
    """Both passes of ``design`` over ``source`` for ``BucketGrid(...)``."""
    grid = BucketGrid(tuple(n_buckets), n_shifts, L, squares, c2, refit=refit)
    return run(grid, source, design)


# ``guarantee`` of the bound: which sums its certificate reads.
READS = {None: {}, "paper": {"c2": False}, "high_probability": {"squares": False}}


def _fast(train_s, train_y, queries, n_buckets, R, L):
    """``{(B, r): (sums, eta_hat, K)}``: the two passes with the training rows as group
    0 and the queries as group 1 (validated by a surrogate trained on group 0), and
    ``eta_hat`` from the surrogate of the training rows alone."""
    return _fast_many(train_s, train_y, queries, n_buckets, R, [L])[L]


def _fast_many(train_s, train_y, queries, n_buckets, R, L_values, guarantee=None):
    """``{L: _fast(..., L)}`` for each ``L`` of ``L_values`` (the sums ``guarantee``
    reads, see ``Plan``). The surrogate of the training rows alone, whose ``eta_hat``
    does not depend on ``L`` (the bucket's mean label), is fitted once (at the first
    ``L``) and serves every ``L``."""
    candidates, grids = candidate_grids(n_buckets, R)
    scores = np.concatenate([train_s, queries])
    labels = np.concatenate([train_y, np.zeros(queries.size)]).astype(np.float64)
    ids = np.repeat([0, 1], [train_s.size, queries.size])
    design = GroupDesign(2, ((1, (0,)),), ids=ids)
    alone = fit_design(
        ArraySource(np.asarray(train_s, dtype=float), train_y.astype(np.float64)),
        GroupDesign(1, ((0, (0,)),), ids=np.zeros(train_s.size, dtype=np.intp)),
        n_buckets=n_buckets,
        n_shifts=R,
        L=L_values[0],
    )
    eta = {
        j: BucketSurrogate(alone.totals, n_buckets, R, j, train_s.size)(queries)
        for _, members in grids
        for j in members
    }
    out = {}
    for L in L_values:
        fit = fit_design(
            ArraySource(scores, labels),
            design,
            n_buckets=n_buckets,
            n_shifts=R,
            L=L,
            refit=False,
            **READS[guarantee],
        )
        out[L] = {
            candidates[j]: (fit.sums[0][j], eta[j], K)
            for K, members in grids
            for j in members
        }
    return out


def _check(sums, eta, rows, queries, L, label):
    expected = _reference_sums(rows, queries, L)
    assert sums[0] == expected[0] == len(queries), label
    assert sums[5] == expected[5], label
    assert_array_equal(eta, [row[0] for row in rows], err_msg=label)
    for name, got, want in zip(SUM_NAMES, sums[1:5], expected[1:5]):
        if got is not None:  # None: a sum the guarantee does not read
            assert_allclose(got, want, rtol=1e-12, atol=0, err_msg=f"{label} {name}")
    assert_allclose(sums[6], expected[6], rtol=1e-12, atol=0, err_msg=f"{label} C2")


# ----------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------
def _dyadic(rng):
    # Multiples of 1/8 and 1/16: ties, and scores exactly on the edges of every
    # power-of-two bucketing with 1, 2 or 4 shifts (0, 1/2 and 1 also for B = 10).
    train = np.concatenate([rng.integers(0, 9, 120) / 8, rng.integers(0, 17, 120) / 16])
    queries = np.concatenate(
        [rng.integers(0, 17, 150) / 16, rng.integers(0, 9, 40) / 8, [0.0, 0.5, 1.0]]
    )
    return train, queries


def _clusters(rng):
    train = np.concatenate(
        [
            np.full(80, 0.3),
            np.full(40, 0.3 + 2.0**-20),
            np.full(30, 0.71),
            rng.uniform(size=50),
        ]
    )
    queries = np.concatenate(
        [
            np.full(20, 0.3),
            rng.uniform(0.29, 0.31, 60),
            np.full(10, 0.71),
            np.full(5, 0.3 + 2.0**-20),
            rng.uniform(size=50),
        ]
    )
    return train, queries


def _ends(rng):
    train = np.concatenate([np.zeros(30), np.ones(30), rng.uniform(size=40)])
    queries = np.concatenate(
        [np.zeros(10), np.ones(10), rng.uniform(size=60), [2.0**-30, 1 - 2.0**-30]]
    )
    return train, queries


def _gaps(rng):
    # Training scores in [0.2, 0.22] and [0.6, 0.61] only: queries below, between and
    # above fall back, to both sides of the gap and at both ends of [0, 1].
    train = np.concatenate([rng.uniform(0.2, 0.22, 40), rng.uniform(0.6, 0.61, 40)])
    queries = np.concatenate([rng.uniform(size=200), [0.0, 1.0, 0.41, 0.405]])
    return train, queries


def _single(rng):
    return np.array([0.37]), np.concatenate([rng.uniform(size=100), [0.0, 1.0, 0.37]])


def _midpoints(rng):
    # Dyadic, so the midpoints 0.25 (of 0.125 and 0.375) and 0.625 (of 0.375 and
    # 0.875) are exact; queries on them and one ulp to either side.
    train = np.array([0.125, 0.125, 0.375, 0.875])
    queries = np.array(
        [
            0.25,
            np.nextafter(0.25, 1),
            np.nextafter(0.25, 0),
            0.625,
            np.nextafter(0.625, 1),
            np.nextafter(0.625, 0),
            0.0,
            1.0,
            0.5,
        ]
    )
    return train, queries


CASES = {
    "random": lambda rng: (rng.uniform(size=300), rng.uniform(size=400)),
    "dyadic": _dyadic,
    "clusters": _clusters,
    "ends": _ends,
    "gaps": _gaps,
    "single": _single,
    "midpoints": _midpoints,
}

# (n_buckets, n_shifts): power-of-two grids, a non-power-of-two grid (K a multiple of
# 90), one bucket, and a fine grid where most buckets are empty.
CONFIGS = [
    ([2, 4, 8, 16], 4),
    ([3, 5, 10], 3),
    ([1, 64, 4096], 2),
    ([1], 1),
]


def _data(case, seed=0):
    rng = np.random.default_rng(seed)
    train, queries = CASES[case](rng)
    train = np.sort(train)
    labels = (rng.uniform(size=train.size) < 0.4).astype(np.uint8)
    return train, labels, np.sort(queries)


# ----------------------------------------------------------------------------------
# Explicit training data against the reference
# ----------------------------------------------------------------------------------
def _rotated_cells():
    """Every (case, config) cell; by default each case runs the one-bucket config and
    one of the other three in turn (each config on two or three cases), the rest
    under slow."""
    cells = []
    for i, case in enumerate(CASES):
        for j, (n_buckets, n_shifts) in enumerate(CONFIGS):
            default = j == len(CONFIGS) - 1 or j == i % (len(CONFIGS) - 1)
            marks = () if default else (pytest.mark.slow,)
            cells.append(
                pytest.param(case, n_buckets, n_shifts, marks=marks, id=f"{case}-{j}")
            )
    return cells


def _with_references(case, n_buckets, n_shifts):
    """``_data(case)``, the candidates and ``{(B, r): _reference(...)}`` of each."""
    train, labels, queries = _data(case)
    candidates, grids = candidate_grids(n_buckets, n_shifts)
    refs = {
        candidates[j]: _reference(train, labels, queries, *candidates[j], n_shifts, K)
        for K, members in grids
        for j in members
    }
    return train, labels, queries, candidates, refs


@pytest.mark.parametrize("case, n_buckets, n_shifts", _rotated_cells())
def test_fast_path_matches_the_reference(case, n_buckets, n_shifts):
    train, labels, queries, candidates, refs = _with_references(
        case, n_buckets, n_shifts
    )
    for L, fast in _fast_many(
        train, labels, queries, n_buckets, n_shifts, L_VALUES
    ).items():
        assert sorted(fast) == sorted(candidates)
        for (B, r), (sums, eta, K) in fast.items():
            assert K % (B * n_shifts) == 0
            _check(sums, eta, refs[(B, r)], queries, L, f"{case} B={B} r={r} L={L}")
    if case == "gaps" and n_buckets == [1, 64, 4096]:
        # Fallback below, between and above the two clusters, to both sides.
        rows = refs[(64, 1)]
        used = [
            (q, row[4], _bucket(q, 64, 1, 2)) for q, row in zip(queries, rows) if row[3]
        ]
        assert any(q < 0.2 for q, _, _ in used) and any(q > 0.61 for q, _, _ in used)
        between = [(b_used, b_own) for q, b_used, b_own in used if 0.22 < q < 0.6]
        assert any(b_used < b_own for b_used, b_own in between)
        assert any(b_used > b_own for b_used, b_own in between)
    if case == "midpoints" and n_buckets == [1, 64, 4096]:
        # 0.25 and one ulp below use 0.125's bucket, one ulp above 0.375's.
        rows = refs[(64, 0)]
        by_query = {float(q): row for q, row in zip(queries, rows)}
        assert by_query[0.25][4] == by_query[np.nextafter(0.25, 0)][4] == 8
        assert by_query[np.nextafter(0.25, 1)][4] == 24
        assert by_query[0.625][4] == 24 and by_query[np.nextafter(0.625, 1)][4] == 56
        assert all(row[3] for row in rows)
    if case == "single":
        for (B, r), rows in refs.items():  # everything uses the single training point
            assert all(row[2] == 1 for row in rows)
            if B >= 64:  # and most queries fall back to it
                assert sum(row[3] for row in rows) >= len(queries) - 10


@pytest.mark.parametrize(
    "case, config",
    slow_except(
        [list(CASES), {str(j): c for j, c in enumerate(CONFIGS)}],
        ["random-0", "clusters-2", "gaps-1", "ends-0", "dyadic-1"],
    ),
)
def test_high_probability_sums_match_the_reference(case, config):
    # The high-probability fit computes its own sums (not those of min(g, 1)**2):
    # against the same per-point reference.
    n_buckets, n_shifts = config
    train, labels, queries, candidates, refs = _with_references(
        case, n_buckets, n_shifts
    )
    fits = _fast_many(
        train, labels, queries, n_buckets, n_shifts, L_VALUES, "high_probability"
    )
    for L, fast in fits.items():
        for (B, r), (sums, eta, K) in fast.items():
            assert sums[4] is None
            _check(sums, eta, refs[(B, r)], queries, L, f"{case} B={B} r={r} L={L}")


def test_fallback_count_and_values_by_hand():
    # One bucketing (B = 4, one shift): buckets [0, 1/4), [1/4, 1/2), [1/2, 3/4),
    # [3/4, 1]. Training in buckets 0 and 3 only.
    train = np.array([0.0625, 0.125, 0.875])
    labels = np.array([1, 0, 1], dtype=np.uint8)
    # 0.5 is exactly the midpoint of 0.125 and 0.875: the lower bucket.
    queries = np.array([0.1, 0.3, 0.5, 0.51, 0.9])
    ((sums, eta, _),) = _fast(train, labels, queries, [4], 1, 2.0).values()
    assert_array_equal(eta, [0.5, 0.5, 0.5, 1.0, 1.0])
    assert sums[5] == 3
    g = [
        2.0 * (0.0375 + 0.025) / 2 + 0.5 / math.sqrt(2),
        2.0 * (0.2375 + 0.175) / 2 + 0.5 / math.sqrt(2),
        2.0 * (0.4375 + 0.375) / 2 + 0.5 / math.sqrt(2),  # 1.17: clipped
        2.0 * 0.365 + 0.5,  # 1.23: clipped
        2.0 * 0.025 + 0.5,
    ]
    g = np.minimum(g, 1.0)
    r = np.abs(np.array([0.5, 0.5, 0.5, 1.0, 1.0]) - queries)
    assert_allclose(
        sums[1:5], [r.sum(), (r * r).sum(), g.sum(), (g * g).sum()], rtol=1e-14
    )
    assert np.count_nonzero(g == 1.0) == 2
    # C2: the bucket of {0.0625, 0.125} serves 3 of the 5 queries, that of {0.875} 2:
    # c = (3/5) / 2 for each of the two points, (2/5) / 1 for the third.
    assert_allclose(sums[6], 2 * (0.3**2) + 0.4**2, rtol=1e-14)


def _groups(rows, queries, K, key):
    """Per (cell, bucket used) of the reference: the list of ``key(row, query)``."""
    groups = {}
    for row, q in zip(rows, queries):
        cell = min(math.floor(K * q), K - 1)
        groups.setdefault((cell, row[4]), []).append(key(row, q))
    return groups


# The general grid (K a multiple of 3 * 5 * 10 * 3) by default; the dyadic one, whose
# cells every other reference comparison uses too, under slow.
@pytest.mark.parametrize(
    "n_buckets, n_shifts",
    [pytest.param([2, 8, 64], 4, marks=pytest.mark.slow), ([3, 5, 10], 3)],
)
def test_runs_that_cross_the_clip_and_eta_hat(n_buckets, n_shifts):
    """Runs (queries sharing a cell and a bucket) on which ``g`` crosses 1, and runs
    that contain ``eta_hat``: the two places where the fast path leaves its affine
    forms. Training: 400 scores at exactly 0.3 (label mean 0.3), 200 uniform; queries
    dense around 0.3, where ``g ~ L |s - 0.3|`` reaches 1 within a cell."""
    rng = np.random.default_rng(7)
    train = np.sort(np.concatenate([np.full(400, 0.3), rng.uniform(size=200)]))
    labels = (rng.uniform(size=600) < 0.3).astype(np.uint8)
    queries = np.sort(
        np.concatenate([rng.uniform(0.29, 0.31, 800), rng.uniform(size=200)])
    )
    candidates, grids = candidate_grids(n_buckets, n_shifts)
    refs = {  # the reference rows do not depend on L
        candidates[j]: _reference(train, labels, queries, *candidates[j], n_shifts, K)
        for K, members in grids
        for j in members
    }
    crossing_clip = crossing_eta = 0
    for L, fast in _fast_many(
        train, labels, queries, n_buckets, n_shifts, [300.0, 1000.0]
    ).items():
        for (B, r), (sums, eta, K) in fast.items():
            rows = refs[(B, r)]
            _check(sums, eta, rows, queries, L, f"B={B} r={r} L={L}")
            clip = _groups(rows, queries, K, lambda row, q: _g(row, L) > 1.0)
            crossing_clip += sum(len(set(v)) == 2 for v in clip.values())
            side = _groups(rows, queries, K, lambda row, q: float(q) > row[0])
            crossing_eta += sum(len(set(v)) == 2 for v in side.values())
    assert crossing_clip > 0  # some runs hold clipped and unclipped queries
    assert crossing_eta > 0  # some runs hold queries on both sides of eta_hat


def test_non_power_of_two_bucket_ids_match_the_spec_formula_off_the_edges():
    """With ``B * R`` not a power of two the cells give the SPEC partition; only a score
    within rounding of an edge may be assigned differently (module docstring)."""
    candidates, grids = candidate_grids([3, 5, 10], 3)
    ((K, members),) = grids
    rng = np.random.default_rng(3)
    s = np.sort(np.concatenate([rng.uniform(size=20_000), [0.0, 0.5, 1.0]]))
    cells = cell_of(s, K)
    for j in members:
        B, r = candidates[j]
        w, o = K // B, r * (K // (B * 3))
        by_cells = np.maximum((cells - o) // w, -1)
        by_spec = np.clip(np.floor(B * s - r / 3), -1, B - 1)
        assert_array_equal(by_cells, by_spec, err_msg=f"B={B} r={r}")


# ----------------------------------------------------------------------------------
# A partition's splits (training = the other groups) against one design per split
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "case",
    [
        "random",
        *(
            pytest.param(c, marks=pytest.mark.slow)
            for c in ("clusters", "dyadic", "ends", "gaps")
        ),
    ],
)
def test_partition_equals_one_design_per_split(case):
    rng = np.random.default_rng(11)
    train, queries = CASES[case](rng)
    scores = np.concatenate([train, queries])
    n = scores.size
    labels = (rng.uniform(size=n) < 0.5).astype(np.float64)
    ids = rng.integers(0, 3, n)
    if case == "gaps":  # every score in (0.15, 0.65) in group 0: empty buckets
        ids[(scores > 0.15) & (scores < 0.65)] = 0
    for n_buckets, R in [([2, 16, 256], 4), ([3, 5, 10], 3)]:
        candidates, grids = candidate_grids(n_buckets, R)
        for L in [0.0, 2.0, 500.0]:
            kw = dict(n_buckets=n_buckets, n_shifts=R, L=L)
            together = fit_design(
                ArraySource(scores, labels), GroupDesign.partition(3, ids=ids), **kw
            )
            for k in range(3):
                alone = fit_design(
                    ArraySource(scores, labels),
                    GroupDesign(2, ((1, (0,)),), ids=(ids == k).astype(np.intp)),
                    **kw,
                )
                assert together.n_train[k] == alone.n_train[0] == np.sum(ids != k)
                for j, (B, r) in enumerate(candidates):
                    label = f"split {k} B={B} r={r} L={L}"
                    got, want = together.sums[k][j], alone.sums[0][j]
                    assert got[0] == want[0] == np.sum(ids == k), label
                    assert got[5] == want[5], label
                    assert_allclose(
                        got[1:5], want[1:5], rtol=1e-12, atol=0, err_msg=label
                    )
                    assert_allclose(got[6], want[6], rtol=1e-12, atol=0, err_msg=label)
                    if L == 2.0 and k == 1:  # and against the reference
                        K = next(K for K, m in grids if j in m)
                        tr = np.sort(scores[ids != k])
                        order = np.argsort(scores[ids != k], kind="stable")
                        rows = _reference(
                            tr,
                            labels[ids != k][order].astype(np.uint8),
                            scores[ids == k],
                            B,
                            r,
                            R,
                            K,
                        )
                        expected = _reference_sums(rows, scores[ids == k], L)
                        assert got[5] == expected[5], label
                        assert_allclose(
                            got[1:5], expected[1:5], rtol=1e-12, err_msg=label
                        )
                        assert_allclose(got[6], expected[6], rtol=1e-12, err_msg=label)


@pytest.mark.parametrize("L", [0.0, 30.0, 3000.0])
@pytest.mark.parametrize("case", ["random", "clusters", "gaps"])
def test_each_guarantee_computes_its_own_sums(case, L):
    # The paper's certificate reads the sums of min(g, 1)**2 and not C2, the
    # high-probability one C2 and not those: each fit computes its own (None for the
    # other). The paper's are identical to those of the fit that computes both; the
    # high-probability fit sums r, r**2 and min(g, 1) of the candidates with few
    # buckets bucket by bucket (the others cell by cell, as the fit of both): equal
    # to 1e-13, and the counts and C2 identical.
    rng = np.random.default_rng(5)
    train, queries = CASES[case](rng)
    scores = np.concatenate([train, queries])
    labels = (rng.uniform(size=scores.size) < 0.5).astype(np.float64)
    ids = rng.integers(0, 3, scores.size)
    kw = dict(n_buckets=[2, 16, 256], n_shifts=4, L=L)
    design = GroupDesign.partition(3, ids=ids)
    both = fit_design(ArraySource(scores, labels), design, **kw)
    surrogate = BucketSurrogate(both.totals, [2, 16, 256], 4, 0, scores.size)
    held = rng.uniform(size=300)
    for guarantee, unread in [("paper", 6), ("high_probability", 4)]:
        reads = READS[guarantee]
        one = fit_design(ArraySource(scores, labels), design, **reads, **kw)
        pairs = [(one.sums[k], both.sums[k]) for k in range(3)]
        pairs.append(
            (surrogate.all_sums(held, L, **reads), surrogate.all_sums(held, L))
        )
        for got, want in pairs:
            assert len(got) == len(want) == 12  # every candidate
            for g, w in zip(got, want):
                assert g[unread] is None and w[unread] is not None, guarantee
                if guarantee == "paper":
                    assert g[:unread] == w[:unread] and g[unread + 1 :] == w[7:]
                else:
                    assert (g[0], g[5], g[6]) == (w[0], w[5], w[6])
                    assert_allclose(g[1:4], w[1:4], rtol=1e-13, atol=0)


# ----------------------------------------------------------------------------------
# Grids
# ----------------------------------------------------------------------------------
def test_default_candidates_share_one_grid():
    counts = [2**k for k in range(1, 13)]
    candidates, grids = candidate_grids(counts, 4)
    assert candidates == [(B, r) for B in counts for r in range(4)]
    assert len(candidates) == 48
    assert grids == [(16384, list(range(48)))]


@pytest.mark.parametrize(
    "n_buckets, n_shifts",
    [
        ([3, 5, 10], 3),
        ([10, 3, 5, 3], 3),  # unsorted, repeated
        ([1], 1),
        ([2, 4096], 1),
        ([1000, 1001, 1003, 4096], 4),  # lcm beyond 2**20: several grids
        ([7, 11, 13, 17, 19, 23], 5),
        ([300_000], 4),  # one candidate above 2**20 cells
    ],
)
def test_every_grid_serves_its_candidates(n_buckets, n_shifts):
    candidates, grids = candidate_grids(n_buckets, n_shifts)
    counts = sorted(set(n_buckets))
    assert candidates == [(B, r) for B in counts for r in range(n_shifts)]
    served = sorted(j for _, members in grids for j in members)
    assert served == list(range(len(candidates)))  # each candidate exactly once
    for K, members in grids:
        assert K >= 16384
        for j in members:
            B, _ = candidates[j]
            assert K % (B * n_shifts) == 0, (K, B)
        if len(members) > n_shifts:  # a shared grid stays at most 2**20 cells
            assert K <= 2**20
    if n_buckets == [1000, 1001, 1003, 4096]:
        assert len(grids) > 1


def test_cell_of():
    K = 4096
    s = np.array([0.0, 2.0**-13, 2.0**-12, 0.5, np.nextafter(1.0, 0), 1.0])
    assert_array_equal(cell_of(s, K), [0, 0, 1, 2048, 4095, 4095])
    assert cell_of(s, K).dtype == np.int64


# ----------------------------------------------------------------------------------
# Numerical safety at scale
# ----------------------------------------------------------------------------------
# The tighter cluster (one cell) by default; 1e-4 (two cells) under slow.
@pytest.mark.parametrize("spread", [pytest.param(1e-4, marks=pytest.mark.slow), 1e-8])
def test_large_cluster_sums_keep_their_digits(spread):
    """5e4 training scores within ``spread`` of 0.7, all in one or two cells: the
    per-cell sums and centred squares over the whole cluster, and each query's own-cell
    term from them. Queries sit next to training scores (distances ~ ``spread /
    1000``, so ``g`` is dominated by them when ``L`` is large), plus two far ones
    (fallback)."""
    rng = np.random.default_rng(5)
    m = 50_000
    train = np.sort(0.7 + spread * rng.uniform(-1, 1, m))
    labels = (rng.uniform(size=m) < 0.7).astype(np.uint8)
    near = train[rng.choice(m, 20)] + spread * 1e-3 * rng.uniform(-1, 1, 20)
    queries = np.sort(np.concatenate([near, [0.7, 0.1, 0.9]]))
    n_buckets, R = [2, 64, 4096, 2**16], 4
    candidates, grids = candidate_grids(n_buckets, R)
    distance = {}
    fast = _fast_many(train, labels, queries, n_buckets, R, [0.0, 32.0, 1e6])
    for K, members in grids:
        train_cells = cell_of(train, K)
        for j in members:
            B, r = candidates[j]
            # Reference: bucket ids by the SPEC formula (the same IEEE operations as
            # _bucket, vectorised), each bucket a contiguous range of sorted scores.
            ids = np.clip(np.floor(B * train - r / R), -1, B - 1)
            rows = []
            for q in queries:
                b = _bucket(q, B, r, R)
                lo, hi = np.searchsorted(ids, [b, b + 1])
                fallback = lo == hi
                if fallback:
                    k = np.searchsorted(train, q)
                    if k == m or (k > 0 and q <= 0.5 * (train[k - 1] + train[k])):
                        b = ids[k - 1]
                    else:
                        b = ids[k]
                    lo, hi = np.searchsorted(ids, [b, b + 1])
                n_b = int(hi - lo)
                eta = int(labels[lo:hi].sum()) / n_b
                if (q, lo, hi, K) not in distance:  # most candidates share the cluster
                    points = train[lo:hi]
                    own = train_cells[lo:hi] == cell_of(np.array([q]), K)[0]
                    inside = math.sqrt(own.sum() * math.fsum((q - points[own]) ** 2))
                    distance[(q, lo, hi, K)] = (
                        math.fsum(np.abs(q - points[~own])) + inside
                    ) / n_b
                rows.append((eta, distance[(q, lo, hi, K)], n_b, fallback, int(b)))
            if B >= 64:  # 0.1 and 0.9 fall back to the cluster
                assert sum(row[3] for row in rows) == 2
            for L, out in fast.items():
                sums, eta, _ = out[(B, r)]
                _check(sums, eta, rows, queries, L, f"B={B} r={r} L={L}")


def test_large_L_squared_smoothing_sum_keeps_its_digits():
    # 2000 training scores within 1e-9 of the cell edge x0 = 2867/4096 of the 16384-cell
    # grid: every query's bucket [1/2, 1] has training points on both sides of the
    # edge, and g = L mean|s - s_i| + 1 / (2 sqrt(n_b)) ~ 0.08 < 1 everywhere.
    rng = np.random.default_rng(0)
    x0 = 2867 / 4096
    train = np.sort(x0 + 1e-9 * rng.uniform(-1, 1, 2000))
    labels = (rng.uniform(size=2000) < 0.5).astype(np.uint8)
    queries = np.sort(x0 + 1e-9 * rng.uniform(-1, 1, 500))
    L = 1e8
    ((sums, eta, K),) = _fast(train, labels, queries, [2], 1, L).values()
    assert K == 16384
    rows = _reference(train, labels, queries, 2, 0, 1, K)
    assert max(_g(row, L) for row in rows) < 1.0  # nothing clipped
    expected = _reference_sums(rows, queries, L)
    assert_array_equal(eta, [row[0] for row in rows])
    # g itself is evaluated from terms of ~1e4: a few digits fewer, still fine.
    assert_allclose(sums[3], expected[3], rtol=1e-10)
    assert_allclose(sums[4], expected[4], rtol=1e-10)


def test_huge_L_with_zero_distances_gives_finite_sums():
    train = np.full(10, 0.25)
    labels = np.array([0, 1] * 5, dtype=np.uint8)
    queries = np.full(4, 0.25)
    for L in [1.0, 1e200]:
        ((sums, eta, _),) = _fast(train, labels, queries, [4], 1, L).values()
        g = 0.5 / math.sqrt(10)
        assert_array_equal(eta, [0.5] * 4)
        assert_allclose(
            sums[1:5], [1.0, 0.25, 4 * g, 4 * g * g], rtol=1e-15, err_msg=f"L={L}"
        )


# ----------------------------------------------------------------------------------
# Flags
# ----------------------------------------------------------------------------------
@functools.cache
def _flag_problem():
    """Training scores with a tie block, the candidates, and the reference's rows at
    both ends and the centre of every (candidate, cell): they do not depend on L."""
    rng = np.random.default_rng(5)
    train = np.sort(np.concatenate([rng.beta(2, 5, 400), np.full(50, 0.8125)]))
    labels = (rng.uniform(size=train.size) < train).astype(np.float64)
    n_buckets, R = [2, 8, 64], 2
    candidates, ((K, _),) = candidate_grids(n_buckets, R)
    stats = cell_stats(train, labels, np.zeros(train.size, dtype=np.intp), 1, K)
    training = stats.merged([0])
    cells = np.flatnonzero(training.count > 0)
    rows = {
        (i, p): _reference(
            train,
            labels,
            [c / K, (c + 0.5) / K, np.nextafter((c + 1) / K, 0)],
            B,
            r,
            R,
            K,
        )
        for i, (B, r) in enumerate(candidates)
        for p, c in enumerate(cells.tolist())
    }
    return training, cells, candidates, R, K, rows


@pytest.mark.parametrize("L", [4.0, 32.0, 300.0])
def test_unflagged_cells_keep_eta_hat_outside_and_g_on_one_side_of_one(L):
    """A (candidate, cell) pair that is not flagged has ``eta_hat`` outside the cell
    and ``g`` (the reference's, at both ends and the centre of the cell) at most 1 or
    at least 1 on all of it; the cells holding ``eta_hat`` are flagged."""
    training, cells, candidates, R, K, reference = _flag_problem()
    table = BucketTable(Prepared(training, cells), candidates, R, L)
    owner, pos = flagged_pairs(table)
    flagged = set(zip(owner.tolist(), pos.tolist()))
    assert table.prep.cells.tolist() == cells.tolist()
    n_crossing = 0
    for (i, p), rows in reference.items():
        c = int(cells[p])
        B, r = candidates[i]
        eta = rows[0][0]
        crossing = abs((c + 0.5) / K - eta) < 0.5 / K
        n_crossing += crossing
        if (i, p) in flagged:
            continue
        assert not crossing, (B, r, c)
        g = [_g(row, L) for row in rows]
        assert max(g) <= 1.0 or min(g) >= 1.0, (B, r, c, g)
    assert n_crossing > 0 and len(flagged) >= n_crossing
