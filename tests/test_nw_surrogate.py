"""The grid NW smoother against a slow, obviously correct loop over every training
point.

The grid of both certificates (``_surrogates/nw/``, SPEC
sections 4, 10 and 12) is checked against weights built one query at a time (the
tempered Epanechnikov kernel at the offset between the query's cell and each training
point's cell, nearest-neighbour fallback when none is positive): its cell sums against
a direct computation, and the statistics of a fold (``r``, ``min(g, 1)`` with Lemma 6
expanded at the query or as published, ``C2 = sum_i c_i**2`` with ``c_i`` the mean
weight of training point ``i`` over the queries, the fallback count) from the two
passes over the rows. In the published form the distances to the training points of
the query's own cell (one weight ``w_0``) are bounded by Cauchy-Schwarz, ``w_0
sqrt(N_c sum d**2)``, as the module does to stay mergeable.
"""

import itertools

import numpy as np
import pytest
from _synthetic import slow_except
from numpy.testing import assert_allclose

from skcalbound._chunks import ArraySource
from skcalbound._passes import run
from skcalbound._splitting import GroupDesign
from skcalbound._surrogates import _cells
from skcalbound._surrogates.nw import NWGrid, _kernel, _search, _smoother, _sums
from skcalbound._surrogates.nw._search import plugin_bandwidth as nw_plugin_bandwidth
from skcalbound._terms import nw_bound_terms

CASES = {
    "random": lambda rng: rng.uniform(size=400),
    "ties": lambda rng: rng.choice([0.1, 0.2, 0.2005, 0.5, 0.9], size=400),
    "grid_aligned": lambda rng: rng.integers(0, 257, size=400) / 256,
    "clusters": lambda rng: np.concatenate(
        [np.full(150, 0.3), 0.3 + rng.normal(0, 1e-4, 100), rng.uniform(size=150)]
    ),
    "edges": lambda rng: np.concatenate(
        [np.zeros(60), np.ones(60), rng.uniform(size=280)]
    ),
    "gaps": lambda rng: np.concatenate(
        [rng.uniform(0, 0.1, 200), rng.uniform(0.6, 0.61, 200)]
    ),
}


def _data(case, seed=0):
    rng = np.random.default_rng(seed)
    scores = np.sort(np.clip(CASES[case](rng), 0, 1))
    labels = (rng.uniform(size=scores.size) < 0.4).astype(np.uint8)
    return rng, scores, labels


def test_plugin_bandwidth_solves_appendix_e_equation():
    for m, h in [(1000, 2**-4), (10**5, 2**-6), (8 * 10**6, 2**-6)]:
        b1 = np.tanh(1 / h) / (2 * h)
        b2 = 1.5 * np.tanh(1 / h) ** 2 / h**2
        hp = nw_plugin_bandwidth(m, b1, b2)
        t = np.sqrt(hp)
        a, b, c = 3 * b1 / 8, b2 / 10, 1.15 / (2 * np.sqrt(2 * m))
        assert abs(2 * b * t**5 + a * t**3 - c / 2) < 1e-12 * c
    assert nw_plugin_bandwidth(10, 0.0, 0.0) == 0.25
    assert nw_plugin_bandwidth(10**9, 1e3, 1e7) == 1e-4


def test_bound_terms_by_hand():
    r = np.array([0.1, 0.2, 0.3, 0.0])
    gt = np.array([0.05, 0.05, 0.15, 0.05])
    terms = nw_bound_terms(4, (r.mean(), r.var()), (gt.mean(), gt.var()), delta=0.06)
    L = np.log(3 / 0.03)
    assert_allclose(terms["validation_mean"], 0.15, rtol=1e-15)
    assert_allclose(terms["smoothing_mean"], 0.075, rtol=1e-15)
    assert_allclose(
        terms["bernstein_residual"],
        np.sqrt(2 * r.var() * L / 4) + 3 * L / 4,
        rtol=1e-14,
    )
    assert_allclose(
        terms["bernstein_smoothing"],
        np.sqrt(2 * gt.var() * L / 4) + 3 * L / 4,
        rtol=1e-14,
    )
    # g in [0, R]: R * BB(n, d, var(g / R)).
    R = 0.5
    halved = nw_bound_terms(4, (r.mean(), r.var()), (gt.mean(), gt.var()), 0.06, R=R)
    assert_allclose(
        halved["bernstein_smoothing"],
        np.sqrt(2 * gt.var() * L / 4) + 3 * R * L / 4,
        rtol=1e-14,
    )


# ----------------------------------------------------------------------------------
# The grid of the high-probability certificate
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bandwidth, G, G16",
    # The power of two with at least 64 (16) cells per bandwidth, in [16, 2**20].
    [
        (0.05, 2048, 512),
        (0.03, 4096, 1024),
        (1 / 32, 2048, 512),
        (0.25, 256, 64),
        (1.0, 64, 16),
        (4.0, 16, 16),
        (1e-4, 2**20, 2**18),
        (1e-7, 2**20, 2**20),
    ],
)
def test_hp_grid_size(bandwidth, G, G16):
    assert _kernel.grid_size(bandwidth) == G
    assert _kernel.grid_size(bandwidth, bins_per_bandwidth=16) == G16


@pytest.mark.parametrize("case", list(CASES))
def test_hp_cell_sums_and_their_coarsenings(case):
    _, scores, labels = _data(case, seed=2)

    def cell_sums(G):
        groups = np.zeros(scores.size, dtype=np.intp)
        return _cells.cell_sums(scores, labels.astype(float), groups, 1, G).group(0)

    pyramid = _search.Pyramid(cell_sums(2**12))
    for G in (2**12, 2**9, 2**4):
        cells = np.minimum(np.floor(scores * G).astype(int), G - 1)
        t = scores - (cells + 0.5) / G
        direct = [
            np.bincount(cells, weights=w, minlength=G)
            for w in (np.ones_like(scores), labels.astype(float), t, t * t)
        ]
        for stats in (cell_sums(G), pyramid.at(G)):
            got = [stats.count, stats.positives, stats.s1, stats.s2]
            for name, a, b in zip(["count", "positives", "s1", "s2"], got, direct):
                assert_allclose(a, b, rtol=1e-13, atol=1e-15, err_msg=f"G={G} {name}")


def _hp_reference(
    scores, labels, queries, bandwidth, tempering, G, b1, b2, paper=False
):
    """Mean and population variance of ``r``, mean and population variance of ``min(g,
    1)``, ``C2`` and the fallback count, from the weight of every training point at
    every query."""
    cells = np.minimum(np.floor(scores * G), G - 1)
    W, r, g, n_fallback = [], [], [], 0
    for q in queries:
        q_cell = min(np.floor(q * G), G - 1)
        u = (q_cell - cells) / (G * bandwidth)
        w = np.where(np.abs(u) < 1, np.maximum(1 - u * u, 0.0) ** tempering, 0.0)
        offsets = scores - q
        fallback = w.sum() == 0
        if fallback:  # equal weights on the nearest training score(s)
            w = (np.abs(offsets) == np.abs(offsets).min()).astype(float)
            n_fallback += 1
        w /= w.sum()
        # Lemma 6 expanded at the query, or as published with the own cell by
        # Cauchy-Schwarz; at a fallback query the library keeps b1 d.
        if fallback:
            first = w @ np.abs(offsets)
        elif paper:
            own = cells == q_cell
            first = w[~own] @ np.abs(offsets[~own])
            if own.any():
                first += w[own][0] * np.sqrt(own.sum() * (offsets[own] @ offsets[own]))
        else:
            first = abs(w @ offsets)
        g.append(b1 * first + 0.5 * b2 * (w @ offsets**2) + 0.5 * np.sqrt(w @ w))
        r.append(abs(w @ labels - q))
        W.append(w)
    r = np.array(r)
    g = np.minimum(g, 1.0)
    c = np.mean(W, axis=0)
    return r.mean(), r.var(), g.mean(), g.var(), np.sum(c * c), n_fallback


#: The configurations of the reference comparison, (form, bandwidth, tempering).
FOLD_AXES = [{"expanded": False, "published": True}, [0.01, 0.05, 0.003], [1.0, 1.2]]
FOLD_CONFIGS = list(itertools.product(*(list(map(str, axis)) for axis in FOLD_AXES)))
# By default case ``i`` runs configurations ``i`` and ``i + 6`` (the same bandwidth and
# tempering in the expanded and the published form), so that every configuration runs
# on one case and every case in both forms; the rest under slow.
assert len(FOLD_CONFIGS) == 2 * len(CASES)
FOLD_DEFAULTS = [
    "-".join((*config, case))
    for j, config in enumerate(FOLD_CONFIGS)
    for i, case in enumerate(CASES)
    if j % len(CASES) == i
]


@pytest.mark.parametrize(
    "paper, bandwidth, tempering, case",
    slow_except([*FOLD_AXES, list(CASES)], default=FOLD_DEFAULTS),
)
def test_fold_statistics_match_the_reference(case, tempering, bandwidth, paper):
    rng, scores, labels = _data(case, seed=3)
    G = _kernel.grid_size(bandwidth)
    queries = np.concatenate([rng.uniform(size=60), scores[::9], [0.0, 1.0, 0.3]])
    # The two passes over training rows (group 0) and queries (group 1), in blocks.
    rows = np.concatenate([scores, queries])
    ids = np.repeat([0, 1], [scores.size, queries.size])
    y = np.concatenate([labels, np.zeros(queries.size)]).astype(float)
    for b1, b2 in [(1.0, 2.0), (32.0, 6144.0)]:
        grid = NWGrid(
            b1,
            b2,
            rows.size,
            bandwidth=bandwidth,
            tempering=tempering,
            lemma6="published" if paper else "expanded",
        )
        assert grid.fine_bins == G
        fit = run(grid, ArraySource(rows, y), GroupDesign(2, ((1, (0,)),), ids=ids))
        ((smoother,), (got,)) = fit.smoothers, fit.statistics
        assert smoother.n_bins == G and smoother.bandwidth == bandwidth
        mean_r, var_r, mean_g, var_g, C2, n_fallback = _hp_reference(
            scores,
            labels.astype(float),
            queries,
            bandwidth,
            tempering,
            G,
            b1,
            b2,
            paper,
        )
        label = f"b1={b1}, b2={b2}"
        assert got.n == queries.size and got.n_fallback == n_fallback, label
        assert_allclose(
            got.residual_moments,
            [mean_r, var_r],
            rtol=1e-12,
            atol=1e-15,
            err_msg=label,
        )
        # The published form's own-cell sum of squares, N e**2 - 2 e s1 + s2, is a
        # difference of cell sums: where the cell's points coincide with the query
        # (ties) it keeps ~1e-16 of its terms, ~1e-8 of the own-cell term after the
        # square root, ~1e-11 of g.
        rtol = 1e-10 if paper else 1e-12
        assert_allclose(got.smoothing_mean, mean_g, rtol=rtol, err_msg=label)
        assert_allclose(
            got.smoothing_moments,
            [mean_g, var_g],
            rtol=1e-9,
            atol=1e-15,
            err_msg=label,
        )
        if paper:  # no label-concentration term in the published form
            assert got.sum_c_squared is None
        else:
            assert_allclose(got.sum_c_squared, C2, rtol=1e-12, err_msg=label)
    if case == "gaps":
        assert n_fallback > 10  # the fallback, and its weights in C2, are exercised


class _FinerGrid(NWGrid):
    """An :class:`NWGrid` whose fine grid has four times the rule's cells."""

    @property
    def fine_bins(self):
        return 4 * super().fine_bins


def test_residuals_summed_by_cell_match_the_rows_in_crossing_cells():
    # Pass 2 sums r = |s - eta_hat| by cell from pass 1's sums wherever eta_hat is
    # outside the query's cell (sign known), and row by row in the cells it crosses.
    # Queries on both sides of eta_hat inside every crossing cell, and at its edges.
    rng = np.random.default_rng(7)
    train = rng.uniform(size=3000)
    labels = (rng.uniform(size=train.size) < train).astype(float)
    bandwidth = 0.02
    G = _kernel.grid_size(bandwidth)

    def fit(queries):
        rows = np.concatenate([train, queries])
        ids = np.repeat([0, 1], [train.size, queries.size])
        y = np.concatenate([labels, np.zeros(queries.size)])
        # A fine grid four times finer than the tables' (the rule gives G).
        grid = _FinerGrid(1.0, 2.0, rows.size, bandwidth=bandwidth)
        assert grid.fine_bins == 4 * G
        fit = run(grid, ArraySource(rows, y), GroupDesign(2, ((1, (0,)),), ids=ids))
        ((smoother,), (got,)) = fit.smoothers, fit.statistics
        return smoother, got

    smoother, _ = fit(rng.uniform(size=50))
    # The tables are computed at the queries' cells; here at the training rows' too.
    smoother = smoother.completed(train)
    tables = smoother.tables
    cells = np.flatnonzero(_sums.crossing(tables))
    assert cells.size >= 5  # eta_hat follows the diagonal: it crosses cells
    eta = tables.eta[cells]
    width = 1.0 / tables.n_bins
    inside = np.concatenate(
        [
            eta,
            np.nextafter(eta, 0.0),
            eta + 0.3 * (cells * width - eta),  # between the lower edge and eta
            eta + 0.3 * ((cells + 1) * width - eta),  # between eta and the upper edge
            cells * width,
        ]
    )
    queries = np.concatenate([inside, rng.uniform(size=400), [0.0, 1.0]])
    smoother_again, got = fit(queries)
    # The same training rows: the same eta_hat wherever both fits computed it (each
    # at its own queries' cells; sums by pairs or by convolution round differently),
    # and the crossing cells are crossing cells of the second fit too.
    eta_again = smoother_again.tables.eta
    both = ~np.isnan(eta_again) & ~np.isnan(tables.eta)
    assert both[cells].all()
    assert_allclose(eta_again[both], tables.eta[both], rtol=1e-13, atol=0)
    assert _sums.crossing(smoother_again.tables)[cells].all()
    q = np.minimum(np.floor(queries * tables.n_bins), tables.n_bins - 1).astype(int)
    assert np.isin(q, cells).sum() >= 5 * cells.size
    r = np.abs(smoother(queries) - queries)
    assert got.n == queries.size and got.n_fallback == 0
    assert_allclose(got.residual_moments, [r.mean(), r.var()], rtol=1e-12)


# ----------------------------------------------------------------------------------
# Kernel sums by pairs of nonempty cells (few points on a fine grid)
# ----------------------------------------------------------------------------------
def _sparse_cells(G, rng):
    """Cell arrays like a small sample's on a fine grid: ~1% of the cells nonempty,
    alone and in a run, at both edges, with signed offset sums; and, alone in an empty
    stretch, a cell with an offset sum left over by a subtraction but no point (its
    terms must still be summed)."""
    cells = np.concatenate(
        [rng.choice(G, G // 100, replace=False), np.arange(G // 3, G // 3 + 12)]
    )
    cells = np.unique(np.concatenate([cells, [0, 1, G - 1]]))
    cells = cells[np.abs(cells - G // 2) > G // 20]
    count = np.zeros(G)
    count[cells] = rng.integers(1, 50, cells.size)
    s1 = np.zeros(G)
    s1[cells] = rng.normal(0.0, 0.3 / G, cells.size) * count[cells]
    s2 = np.zeros(G)
    s2[cells] = count[cells] * rng.uniform(0.0, 0.25 / G**2, cells.size)
    positives = np.floor(count * rng.uniform(size=G))
    s1[G // 2] = 1e-19
    return _cells.BinStats(count, positives, s1, s2)


def _direct_sums(x, v, cells):
    """``sum_b x[b] v[q - b + K]`` at ``cells``, and the sums of the absolute terms,
    from every tap of every output."""
    K = (v.shape[0] - 1) // 2
    padded = np.concatenate([np.zeros(K), x, np.zeros(K)])
    taps = np.arange(-K, K + 1)
    sums, scale = [], []
    for part in np.array_split(cells, max(1, cells.size // 512)):
        terms = padded[part[:, None] + K - taps] * v[taps + K]
        sums.append(terms.sum(axis=1))
        scale.append(np.abs(terms).sum(axis=1))
    return np.concatenate(sums), np.concatenate(scale)


@pytest.mark.parametrize("bandwidth, tempering", [(2**-7, 1.0), (0.003, 1.7)])
@pytest.mark.parametrize("block", [None, 64])
def test_kernel_sums_by_pairs_match_the_direct_sums(
    bandwidth, tempering, block, monkeypatch
):
    # By pairs (forced, and chosen by the cost model on this grid) and by direct
    # convolution (forced), against every tap of every output summed here: within
    # 1e-13 of the sum of the output's absolute terms, at some cells and at every
    # cell (exact zeros out of every nonempty cell's reach); in blocks of 64 pairs too.
    rng = np.random.default_rng(11)
    G = 2**13
    stats = _sparse_cells(G, rng)
    offset, ker = _kernel.kernel(G, bandwidth, tempering)
    inputs = [stats.count, stats.s1, stats.s2, stats.positives]
    kernels = [ker, ker * offset, ker * offset**2, ker * ker]
    products = [(0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2), (0, 3), (3, 0)]
    cells = stats.count != 0.0
    cells[rng.choice(G, 200, replace=False)] = True  # and some empty cells
    cells[G // 2 - 1 : G // 2 + 2] = True  # next to the leftover offset sum
    if block is not None:
        monkeypatch.setattr(_kernel, "_PAIR_BLOCK", block)
    chosen = _kernel.KernelSums(inputs, kernels, products, cells)
    assert chosen.sources is not None  # the cost model picks pairs here
    assert chosen.n_pairs < 0.05 * cells.sum() * ker.size
    real_cost = _kernel._pair_cost
    for mask in (cells, None):
        out = np.arange(G) if mask is None else np.flatnonzero(mask)
        got = {}
        for path, cost in (("pairs", 0.0), ("direct", np.inf)):
            monkeypatch.setattr(_kernel, "_pair_cost", lambda *a, c=cost: c)
            sums = _kernel.KernelSums(inputs, kernels, products, mask)
            assert (sums.sources is not None) == (path == "pairs")
            got[path] = [sums(p) for p in range(len(products))]
        monkeypatch.setattr(_kernel, "_pair_cost", real_cost)
        for p, (i, k) in enumerate(products):
            want, scale = _direct_sums(inputs[i], kernels[k], out)
            if i == 1:  # the leftover offset sum is reached
                assert (scale[out == G // 2 + 1] > 0).all()
            for path, values in got.items():
                assert values[p].shape == want.shape, path
                err = np.abs(values[p] - want)
                assert np.all(err <= 1e-13 * scale), (path, p, err.max())
                assert np.all(values[p][scale == 0.0] == 0.0), (path, p)


def test_tables_at_some_cells_then_completed_match_the_whole_tables(monkeypatch):
    # HPTables (and the published form's tables) computed at the cells of the rows
    # first: equal to the whole tables there, NaN elsewhere except A0 == 0 at every
    # fallback cell; completed on demand (a smoother queried anywhere) to the whole
    # tables. And the search's objective by pairs equals the direct one.
    rng = np.random.default_rng(12)
    scores = np.concatenate([rng.uniform(0.1, 0.3, 150), rng.uniform(0.6, 0.9, 150)])
    labels = (rng.uniform(size=scores.size) < scores).astype(float)
    bandwidth, G = 0.004, 2**14
    stats = _cells.cell_sums(
        scores, labels, np.zeros(scores.size, dtype=np.intp), 1, G
    ).group(0)
    rows = np.zeros(G, dtype=bool)
    rows[_cells.bin_of(np.concatenate([scores, rng.uniform(size=50)]), G)] = True
    whole = _smoother.HPTables.from_stats(stats, bandwidth, 1.3)
    some = _smoother.HPTables.from_stats(stats, bandwidth, 1.3, cells=rows)
    assert whole.computed is None and np.array_equal(some.computed, rows)
    fallback = whole.A0 <= 0.0
    assert 0 < fallback.sum() < G - rows.sum()
    assert np.array_equal(some.A0 <= 0.0, fallback)  # exact, computed or not
    names = ("A0", "eta", "m1", "var", "W2")
    for name in names:
        a, b = getattr(whole, name), getattr(some, name)
        assert_allclose(b[rows & ~fallback], a[rows & ~fallback], rtol=1e-12)
        assert np.isnan(b[~rows & ~fallback]).all()
    paper_whole = _smoother.PaperTables.from_stats(stats, whole)
    paper_some = _smoother.PaperTables.from_stats(stats, some)
    below, above = _cells.occupied_neighbours(stats.count)
    smoother = _smoother.Smoother(some, G, scores.size, below, above, paper=paper_some)
    done = smoother.completed(np.arange(G) / G)  # every cell queried
    assert done.tables.computed.all() and done.paper.computed.all()
    assert np.array_equal(some.computed, rows)  # a new smoother: this one unchanged
    assert np.isnan(some.eta[~rows & ~fallback]).all()
    some, paper_some = done.tables, done.paper
    for name in names:
        a, b = getattr(whole, name), getattr(some, name)
        assert_allclose(b[~fallback], a[~fallback], rtol=1e-12)
    for name in ("w_lo", "p_lo", "w_hi", "p_hi", "w_own"):
        a, b = getattr(paper_whole, name), getattr(paper_some, name)
        assert_allclose(b[~fallback], a[~fallback], rtol=1e-12, atol=1e-300)
    pyramid = _search.Pyramid(stats)
    values = []
    for cost in (0.0, np.inf):
        monkeypatch.setattr(_kernel, "_pair_cost", lambda *a, c=cost: c)
        values.append(_search.search_objective(pyramid, 0.002, 1.0, 3.0, 40.0))
    assert_allclose(values[0], values[1], rtol=1e-12)


@pytest.mark.parametrize("taps", [11, 13, 15, 21, 23])
@pytest.mark.parametrize("G", [8, 256, 512, 4096])
def test_direct_convolution_in_two_halves_matches_the_direct_sums(taps, G):
    # From 12 to 21 taps (the search's kernels) on 512 cells or more, the direct
    # convolution sums the two halves of the kernel separately: every output within
    # 1e-14 of the sum of its absolute terms, the first and last ones included.
    rng = np.random.default_rng(taps * G)
    x = rng.normal(size=G) * (rng.uniform(size=G) < 0.7)
    v = rng.uniform(size=taps)
    got = _kernel._conv(x, v)
    want, scale = _direct_sums(x, v, np.arange(G))
    assert got.shape == (G,)
    assert np.all(np.abs(got - want) <= 1e-14 * scale)
    # With the kernel given reversed too; outside the halved range, numpy's full
    # convolution's own middle outputs, to the bit (the same dot products).
    assert np.array_equal(_kernel._conv(x, v, v[::-1].copy()), got)
    if not (12 <= taps <= 21 and G >= 512) and taps <= 2 * G - 1:
        K = (taps - 1) // 2
        assert np.array_equal(got, np.convolve(x, v)[K : K + G])


# ----------------------------------------------------------------------------------
# The label-free bandwidth search, several training sets at once
# ----------------------------------------------------------------------------------
def _search_reference(scores, bandwidth, tempering, b1, b2):
    """The search's objective from the training scores, at every occupied cell: the
    kernel weights of every training point at the cell, the first moment at the mean
    score of the cell's points, the second moment averaged over them."""
    G = _kernel.grid_size(bandwidth, bins_per_bandwidth=4)
    cells = np.minimum(np.floor(scores * G).astype(int), G - 1)
    half = min(int(np.floor(bandwidth * G)), G - 1)
    q, n = np.unique(cells, return_counts=True)
    k = q[:, None] - cells[None, :]  # (occupied cell, training point)
    u = k / (G * bandwidth)
    w = np.where((np.abs(k) <= half) & (np.abs(u) < 1), 1 - u * u, 0.0) ** tempering
    w /= w.sum(axis=1, keepdims=True)
    offsets = scores[None, :] - (q[:, None] + 0.5) / G
    m1 = np.sum(w * offsets, axis=1)
    var = np.sum(w * offsets**2, axis=1) - m1**2
    own = cells[None, :] == q[:, None]
    mean_t = np.sum(offsets * own, axis=1) / n
    d = m1 - mean_t
    spread = np.sum(offsets**2 * own, axis=1) / n - mean_t**2
    g = b1 * np.abs(d) + 0.5 * b2 * (var + d * d + spread)
    g += 0.5 * np.sqrt(np.sum(w * w, axis=1))
    return np.sum(n * np.minimum(g, 1.0)) / scores.size


def test_search_of_several_training_sets_matches_the_reference(monkeypatch):
    # The objectives of several training sets at one bandwidth in one call (on coarse
    # grids, the sets that go by direct convolution share their arithmetic), and the
    # coarse-to-fine choice of every set, against the objective computed point by
    # point: sets of 1,000, 300 and 12 points (by pairs of cells on the finer grids),
    # one of them tied, two with the same candidates and one with its own; by the
    # paths the cost model chooses, and all by pairs or all by direct convolution.
    rng = np.random.default_rng(13)
    sets = [
        rng.uniform(size=1000),
        np.concatenate([rng.beta(0.5, 2.0, 200), np.full(100, 0.25)]),
        rng.uniform(0.3, 0.7, size=12),
    ]
    fine = 2**13  # the finest search grid
    pyramids = [
        _search.Pyramid(
            _cells.cell_sums(
                s, np.zeros(s.size), np.zeros(s.size, dtype=np.intp), 1, fine
            ).group(0)
        )
        for s in sets
    ]
    tempering, b1, b2 = 1.2, 2.0, 500.0  # the first set's best is an odd candidate
    candidates = [0.001 * 2 ** (k / 2) for k in range(13)]
    candidate_sets = [candidates, candidates[1:10], candidates]
    reference = {
        (r, h): _search_reference(s, h, tempering, b1, b2)
        for r, s in enumerate(sets)
        for h in candidates
    }
    by_pairs = _search._objective_of_sums
    costs = {
        "chosen": None,
        "pairs": lambda *a: 0.0,
        "direct": lambda *a: np.inf,
        "the 12 by pairs": lambda n_pairs, *a: 0.0 if n_pairs < 120 else np.inf,
    }
    for path, cost in costs.items():
        one_row = []  # the objectives by pairs of cells, one row at a time
        with monkeypatch.context() as patch:
            if cost is not None:
                patch.setattr(_kernel, "_pair_cost", cost)
            patch.setattr(
                _search,
                "_objective_of_sums",
                lambda *a: one_row.append(1) or by_pairs(*a),
            )
            searched = 0
            for h in candidates:
                before = len(one_row)
                got = _search.search_objectives(
                    [pyramids[r] for r in (2, 0, 1)], h, tempering, b1, b2
                )
                searched += len(one_row) - before
                for r, value in zip([2, 0, 1], got):
                    assert_allclose(value, reference[r, h], rtol=1e-12, err_msg=path)
                    one = _search.search_objective(pyramids[r], h, tempering, b1, b2)
                    assert value == one  # to the bit: the rows' numbers do not mix
            chosen = _search.choose_bandwidths(
                pyramids, candidate_sets, tempering, b1, b2
            )
        # One set at a time: by pairs, and on the fine grids.
        fine_grids = 3 * sum(
            _kernel.grid_size(h, 4) > _search._SHARED_MAX_BINS for h in candidates
        )
        assert (
            searched
            == {
                "chosen": max(searched, fine_grids),
                "pairs": 39,
                "direct": fine_grids,
                "the 12 by pairs": fine_grids + (39 - fine_grids) // 3,
            }[path]
        )
        for r, cands in enumerate(candidate_sets):
            value = lambda i: reference[r, cands[i]]  # noqa: E731
            coarse = range(0, len(cands), 2)
            best = min(coarse, key=value)
            near = [i for i in (best - 1, best, best + 1) if 0 <= i < len(cands)]
            assert chosen[r] == cands[min(near, key=lambda i: (value(i), i))], path
        assert len(set(chosen)) > 1
