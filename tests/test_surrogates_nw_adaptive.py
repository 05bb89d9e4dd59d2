"""SPEC 13's fold statistics from explicit weights, and its closed-form terms."""

import math
from dataclasses import asdict, replace

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skcalbound._surrogates.nw._adaptive import (
    Majorant,
    dense_statistics,
    nearest_weights,
)
from skcalbound._surrogates.nw._adaptive_grid import (
    FoldContext,
    default_pilot,
    finish,
    grid_statistics,
    row_sums,
)
from skcalbound._terms import (
    ADAPTIVE_SHARES,
    adaptive_terms,
    bernstein_term,
    majorant_bound,
)

H = 2.0**-6
B1 = math.tanh(1 / H) / (2 * H)
B2 = math.tanh(1 / H) ** 2 / (2 * H * H)


def _fold(seed=0, m=400, n=300, bandwidth=0.01, rate=1.0):
    """Perturbed-looking imbalanced scores, Epanechnikov weights."""
    rng = np.random.default_rng(seed)
    s = rng.beta(0.5, 20, m + n)
    y = (rng.random(m + n) < np.minimum(1.0, rate * 1.2 * s)).astype(float)
    st, yt, sv = s[:m], y[:m], s[m:]
    K = np.maximum(0.0, 1.0 - ((sv[:, None] - st[None, :]) / bandwidth) ** 2)
    # Queries with no training score within the kernel: the nearest one instead.
    far = K.sum(axis=1) == 0
    K[far, np.argmin(np.abs(st[None, :] - sv[far, None]), axis=1)] = 1.0
    return K / K.sum(axis=1, keepdims=True), st, yt, sv


def test_shares_sum_to_one_over_eleven_events():
    assert len(ADAPTIVE_SHARES) == 11
    assert_allclose(sum(ADAPTIVE_SHARES.values()), 1.0, rtol=1e-15)


def test_majorant_bound_hand_value():
    # gamma = (0.5, -0.25), labels (1, 0): S = 0.5 + 0.25, g = 0.5, sum gamma- = 0.25.
    m = Majorant.of(np.array([0.5, -0.25]), np.array([1.0, 0.0]), constant=0.1)
    assert (m.negative, m.observed, m.largest) == (0.25, 0.75, 0.5)
    ell = math.log(20.0)
    expected = 0.1 - 0.25 + (math.sqrt(ell / 4) + math.sqrt(ell / 4 + 0.75)) ** 2
    assert_allclose(majorant_bound(m, 0.05), expected, rtol=1e-15)


def test_variance_majorant_is_capped_and_covers_by_monte_carlo():
    # VarUCB(a) >= sum a eta (1 - eta) in at least 1 - delta of label draws.
    rng = np.random.default_rng(1)
    m, delta = 60, 0.2
    eta = rng.uniform(0.0, 0.2, m)
    a = rng.uniform(0.0, 1.0, m)
    pilot = np.clip(eta + rng.normal(0, 0.05, m), 1e-4, 1 - 1e-4)
    truth = float(np.dot(a, eta * (1 - eta)))
    misses = 0
    for _ in range(2000):
        y = (rng.random(m) < eta).astype(float)
        bound = majorant_bound(Majorant.variance(a, pilot, y), delta)
        assert bound <= a.sum() / 4 + 1e-15
        misses += bound < truth
    assert misses / 2000 < delta
    # Far below the worst case a quarter of sum a: the point of the lemma.
    assert majorant_bound(Majorant.variance(a, pilot, eta > 1), delta) < a.sum() / 8


@pytest.mark.parametrize("h", [None, H])
def test_terms_monotone_in_delta_and_routes(h):
    S = dense_statistics(*_fold(), pilot=np.full(400, 0.03), b1=B1, b2=B2, h=h)
    previous = None
    for delta in (0.5, 0.2, 0.05, 0.01, 1e-4):
        t = adaptive_terms(S, delta)
        u_j = sum(t["upper_terms"].values())
        lt = t["lower_terms"]
        u_tri = lt["validation_mean"] + lt["bernstein_residual"]
        u_tri += lt["smoothing_bound"] + lt["smoothing_transfer"]
        assert_allclose(t["upper"], min(u_j, u_tri), rtol=1e-15)
        assert t["route"] == ("jensen" if u_j <= u_tri else "triangle")
        assert_allclose(t["lower"], 2 * lt["validation_mean"] - u_tri, atol=1e-15)
        assert_allclose(
            lt["bernstein_residual"],
            bernstein_term(S.n, 0.17 * delta, S.residual_moments[1]),
            rtol=1e-15,
        )
        if previous is not None:
            for table in ("upper_terms", "lower_terms"):
                for key, value in t[table].items():
                    assert value >= previous[table][key] - 1e-15, (table, key)
            assert t["upper"] >= previous["upper"]
            assert t["lower"] <= previous["lower"]
        previous = t


def test_pilot_one_half_gives_the_worst_case_noise():
    # At eta0 = 1/2 (no relative branch), N_v = sqrt(W2)/2 and the noise supergradient
    # vanishes: Psi_NB's majorant is the worst-case mean, with nothing random in it.
    W, st, yt, sv = _fold()
    S = dense_statistics(W, st, yt, sv, np.full(st.shape[0], 0.5), B1, B2)
    assert S.n_relative == 0
    nb = S.noise_bias
    assert (nb.negative, nb.largest) == (0.0, 0.0)
    assert_allclose(nb.constant, S.worst_case_smoothing, rtol=1e-14)
    # Without the relative branch f = 1, so c' = c: VarUCB's cap is C2 / 4.
    assert_allclose(S.c_prime.cap, S.sum_c_squared / 4, rtol=1e-14)


def test_relative_branch_in_h_mode_lowers_the_bias():
    W, st, yt, sv = _fold(bandwidth=0.004)
    pilot = np.clip(1.2 * st, 1e-4, 1 - 1e-4)
    absolute = dense_statistics(W, st, yt, sv, pilot, B1, B2)
    relative = dense_statistics(W, st, yt, sv, pilot, B1, B2, h=H)
    assert relative.n_relative > 0
    assert relative.bias_mean < absolute.bias_mean


def _grid_fold(seed, m=3000, n=1500, G=1024, bandwidth=2.0**-5, tail=0.2):
    from skcalbound._surrogates._cells import bin_of, cell_sums
    from skcalbound._surrogates.nw._smoother import HPTables

    rng = np.random.default_rng(seed)
    s = rng.beta(0.5, 20, m + n)
    s = s[s < tail]  # tail < 1: (almost) no fallback query
    y = (rng.random(s.shape[0]) < np.minimum(1.0, 1.2 * s)).astype(float)
    m = s.shape[0] * 2 // 3
    groups = (np.arange(s.shape[0]) >= m).astype(np.intp)
    sums = cell_sums(s, y, groups, 2, G)
    train, val = sums.group(0), sums.group(1)
    tables = HPTables.from_stats(train, bandwidth, 1.0)
    st, yt, sv = s[:m], y[:m], s[m:]
    bt, bv = bin_of(st, G), bin_of(sv, G)
    half = (tables.ker.shape[0] - 1) // 2
    lag = bv[:, None] - bt[None, :]
    inside = np.abs(lag) <= half
    W = np.where(inside, tables.ker[np.clip(lag + half, 0, 2 * half)], 0.0)
    fallback = tables.A0[bv] <= 0
    W[fallback] = nearest_weights(st, sv[fallback])
    W /= W.sum(axis=1, keepdims=True)
    return tables, train, val, W, st, yt, sv, bt, fallback, y[m:]


def _nearest(s_train, y_train):
    """``Smoother.nearest`` from the training points themselves."""

    def nearest(queries):
        sides = []
        gaps = []
        for below in (True, False):
            mask = (s_train[None, :] <= queries[:, None]) == below
            side = np.where(mask, s_train[None, :], -np.inf if below else np.inf)
            value = side.max(axis=1) if below else side.min(axis=1)
            at = s_train[None, :] == value[:, None]
            gaps.append(queries - value if below else value - queries)
            sides.append([value, at.sum(axis=1) * 1.0, (at * y_train).sum(axis=1)])
        d = np.minimum(*gaps)
        uses = (gaps[0] <= gaps[1], gaps[1] <= gaps[0])
        return d, tuple((use, *side) for use, side in zip(uses, sides))

    return nearest


def _reference_on_grid(points, W, fallback, G, bandwidth, tempering, b1, b2, h, delta):
    """The plain-loop reference (tests/_adaptive_reference.py, from branch i39-ref)
    on a fold's ``points`` (training scores and labels, evaluated validation scores
    and labels), given the grid's weights ``W`` (fallback rows included), computing
    the default pilot itself on the ``G`` cells, and the bias bound of each query's
    cell at its supremum over the cell, its branch at the cell centre."""
    from _adaptive_reference import (
        adaptive_fold,
        cell_centre_proxy,
        cell_supremum_bias,
        tempered_epanechnikov,
        uniform_grid,
    )

    st, yt, sv, vy = points
    rows = {float(v): w for v, w in zip(sv, W)}
    falls = {float(v) for v in sv[fallback]}
    cell_of, cell_centre = uniform_grid(G)
    return adaptive_fold(
        st,
        yt,
        sv,
        vy,
        lambda v: rows[float(v)],
        b1=b1,
        b2=b2,
        h=h,
        delta_fold=delta,
        is_fallback=lambda v: float(v) in falls,
        bandwidth=bandwidth,
        kernel=lambda u: tempered_epanechnikov(u, tempering),
        cell_of=cell_of,
        cell_centre=cell_centre,
        bias=cell_supremum_bias(G, b1, b2, h),
        branch_at=cell_centre_proxy(G),
    )


def _assert_same(got, expected):
    """Every field of two :class:`AdaptiveStatistics` (majorants field by field)
    equal to 1e-12."""
    got = asdict(got)
    for key, value in asdict(expected).items():
        if isinstance(value, dict):
            for part, number in value.items():
                assert_allclose(
                    got[key][part], number, rtol=1e-12, atol=1e-15, err_msg=key
                )
        else:
            assert_allclose(got[key], value, rtol=1e-12, atol=1e-15, err_msg=key)


@pytest.mark.parametrize(
    "h, bandwidth, tail", [(None, 2.0**-5, 0.2), (H, 2.0**-9, 0.2), (H, 2.0**-9, 1.0)]
)
def test_grid_statistics_match_the_weights_they_use(h, bandwidth, tail):
    fold = _grid_fold(3, bandwidth=bandwidth, tail=tail)
    tables, train, val, W, st, yt, sv, bt, fallback, _ = fold
    assert fallback.any() or tail < 1.0  # the fallback rows are tested
    # The grid's per-cell sums against the per-point definition with the same bias
    # bounds: each query's cell's (its own at a fallback query), its branch chosen at
    # its cell's centre.
    from skcalbound._surrogates.nw._adaptive import _dense_rows, _taylor_bias
    from skcalbound._surrogates.nw._kernel import bin_centres

    G = tables.n_bins
    pilot = default_pilot(val, G, tables.bandwidth, 1.0)
    context = FoldContext.of(tables, train, pilot, B1, B2, h)
    grid = grid_statistics(tables, train, pilot, sv, B1, B2, h, _nearest(st, yt))
    m1, M2, _, d, *_ = _dense_rows(W, st, yt, sv, pilot[bt])
    own = _taylor_bias(sv, m1, M2, d, B1, B2, h, fallback)
    bv = np.minimum((sv * G).astype(int), G - 1)
    bias = tuple(
        np.where(fallback, mine, cell[bv])
        for mine, cell in zip(own, (context.babs, context.R))
    )
    proxy = np.where(fallback, sv, bin_centres(G)[bv])
    dense = dense_statistics(
        W, st, yt, sv, pilot[bt], B1, B2, h, fallback, bias=bias, proxy=proxy
    )
    assert grid.n_relative == dense.n_relative
    if h is not None:
        assert grid.n_relative > 0
    _assert_same(grid, dense)


@pytest.mark.parametrize(
    "h, bandwidth, seed", [(None, 2.0**-5, 4), (H, 2.0**-8, 5), (H, 2.0**-9, 6)]
)
@pytest.mark.parametrize("n_chunks", [1, 3])
def test_grid_terms_match_the_plain_loop_reference(h, bandwidth, seed, n_chunks):
    # The reference (tests/_adaptive_reference.py, from branch i39-ref) is given the
    # grid's weights (fallback included) and computes the default pilot itself.

    fold = _grid_fold(seed, m=300, n=150, bandwidth=bandwidth, tail=1.0)
    tables, train, val, W, st, yt, sv, bt, fallback, vy = fold
    G = tables.n_bins
    delta = 0.05 / 5
    tempering = 1.0
    ref = _reference_on_grid(
        (st, yt, sv, vy), W, fallback, G, bandwidth, tempering, B1, B2, h, delta
    )
    pilot = default_pilot(val, G, tables.bandwidth, tempering)
    context = FoldContext.of(tables, train, pilot, B1, B2, h)
    chunks = np.array_split(np.arange(sv.shape[0]), n_chunks)
    merged = row_sums(context, sv[chunks[0]])
    for chunk in chunks[1:]:
        merged = merged + row_sums(context, sv[chunk])
    S = finish(context, merged, _nearest(st, yt))
    got = adaptive_terms(S, delta)
    assert got["route"] == ref["route"]
    for table in ("upper_terms", "lower_terms"):
        assert list(got[table]) == list(ref[table])
        for key, value in ref[table].items():
            assert_allclose(got[table][key], value, rtol=1e-12, err_msg=key)
    assert_allclose(got["upper"], ref["U"], rtol=1e-12)
    assert_allclose(got["lower"], ref["L"], rtol=1e-12)
    # The pilot's pieces, whether or not a cap or Psi_wc wins in the terms.
    d = ref["deltas"]
    uncapped = replace(S.c_prime, cap=math.inf)
    assert_allclose(majorant_bound(uncapped, d["dU"]), ref["S2_tangent"], rtol=1e-12)
    tangent = sum(g * x for g, x in zip(ref["gamma_NB"], ref["eta0"]))
    from _adaptive_reference import lemma2_ucb

    expected = (
        ref["Psi_NB_eta0"] - tangent + lemma2_ucb(ref["gamma_NB"], yt, ref["ell"]["dL"])
    )
    assert_allclose(majorant_bound(S.noise_bias, d["dL"]), expected, rtol=1e-12)
    for mine, theirs in [
        (S.residual_bias_square, "Q"),
        (S.noise_variance, "sigma2"),
        (S.sum_c_squared, "C2"),
        (math.sqrt(S.max_e), "d_star"),
    ]:
        assert_allclose(mine, ref[theirs], rtol=1e-12, err_msg=theirs)
    if h is not None:
        assert S.n_relative > 0


@pytest.mark.parametrize("h, bandwidth", [(None, 2.0**-5), (H, 2.0**-9)])
def test_grid_statistics_in_chunks_equal_in_memory(h, bandwidth):
    fold = _grid_fold(7, bandwidth=bandwidth, tail=1.0)
    tables, train, val, W, st, yt, sv, bt, fallback, _ = fold
    assert fallback.any() == (h is not None)  # both paths of finish
    pilot = default_pilot(val, tables.n_bins, tables.bandwidth, 1.0)
    whole = grid_statistics(tables, train, pilot, sv, B1, B2, h, _nearest(st, yt))
    context = FoldContext.of(tables, train, pilot, B1, B2, h)
    order = np.random.default_rng(0).permutation(sv.shape[0])
    parts = [row_sums(context, sv[chunk]) for chunk in np.array_split(order, 3)]
    chunked = finish(context, parts[0] + parts[1] + parts[2], _nearest(st, yt))
    _assert_same(chunked, whole)
    delta = 0.01
    assert_allclose(
        adaptive_terms(chunked, delta)["upper"],
        adaptive_terms(whole, delta)["upper"],
        rtol=1e-12,
    )


def test_finish_reads_the_fallback_of_the_passes_smoother():
    # A smoother from the two passes (with its training extremes): its nearest
    # training scores give the statistics that the training points give.
    from skcalbound._chunks import ArraySource
    from skcalbound._passes import run
    from skcalbound._splitting import GroupDesign
    from skcalbound._surrogates._cells import bin_of, cell_sums
    from skcalbound._surrogates.nw import NWGrid

    rng = np.random.default_rng(11)
    s = rng.beta(0.5, 20, 3000)
    y = (rng.random(s.shape[0]) < np.minimum(1.0, 1.2 * s)).astype(float)
    ids = (np.arange(s.shape[0]) >= 2000).astype(np.intp)
    grid = NWGrid(B1, B2, s.shape[0], bandwidth=2.0**-9, tempering=1.2)
    fit = run(grid, ArraySource(s, y), GroupDesign(2, ((1, (0,)),), ids=ids))
    st, yt, sv = s[:2000], y[:2000], s[2000:]
    smoother = fit.smoothers[0].completed(sv)
    tables = smoother.tables
    G = tables.n_bins
    sums = cell_sums(s, y, ids, 2, G)
    train, val = sums.group(0), sums.group(1)
    assert (tables.A0[bin_of(sv, G)] <= 0).sum() > 0  # fallback queries
    pilot = default_pilot(val, G, tables.bandwidth, 1.2)
    args = (tables, train, pilot, sv, B1, B2, H)
    got = grid_statistics(*args, smoother.nearest)
    _assert_same(got, grid_statistics(*args, _nearest(st, yt)))


@pytest.mark.parametrize("h, n_chunks", [(H, 1), (H, 4), (None, 4)])
@pytest.mark.parametrize("partition", [False, True])
def test_nw_grid_adaptive_through_the_passes_equals_grid_statistics(
    h, n_chunks, partition
):
    # NWGrid(noise="adaptive") through the two-pass driver, in memory or in chunks,
    # gives per split the statistics of grid_statistics on that split's own points.
    from skcalbound._chunks import ArraySource, IterableSource
    from skcalbound._passes import run
    from skcalbound._splitting import GroupDesign
    from skcalbound._surrogates._cells import bin_of, cell_sums
    from skcalbound._surrogates.nw import NWGrid

    rng = np.random.default_rng(12)
    s = rng.beta(0.5, 20, 3000)
    y = (rng.random(s.shape[0]) < np.minimum(1.0, 1.2 * s)).astype(float)
    if partition:
        design = GroupDesign.partition(3, ids=rng.integers(0, 3, s.shape[0]))
    else:
        ids = (np.arange(s.shape[0]) >= 2000).astype(np.intp)
        design = GroupDesign(2, ((1, (0,)),), ids=ids)
    grid = NWGrid(B1, B2, s.shape[0], bandwidth=2.0**-9, noise="adaptive", h=h)
    if n_chunks == 1:
        source = ArraySource(s, y)
    else:
        parts = np.array_split(np.arange(s.shape[0]), n_chunks)
        source = IterableSource([(y[p].astype(int), s[p]) for p in parts])
    fit = run(grid, source, design)
    fallback = 0
    for k, (validation, train) in enumerate(design.splits):
        smoother = fit.smoothers[k]
        tables = smoother.tables
        G = tables.n_bins
        in_train = np.isin(design.ids, train)
        st, yt = s[in_train], y[in_train]
        sv, yv = s[design.ids == validation], y[design.ids == validation]
        falls = int((tables.A0[bin_of(sv, G)] <= 0).sum())
        assert fit.statistics[k].n_fallback == falls
        fallback += falls
        zeros = lambda x: np.zeros(x.shape[0], dtype=np.intp)  # noqa: E731
        train_sums = cell_sums(st, yt, zeros(st), 1, G).group(0)
        val_sums = cell_sums(sv, yv, zeros(sv), 1, G).group(0)
        pilot = default_pilot(val_sums, G, tables.bandwidth, grid.tempering)
        expected = grid_statistics(
            tables, train_sums, pilot, sv, B1, B2, h, _nearest(st, yt)
        )
        _assert_same(fit.statistics[k], expected)
    assert fallback > 0


def test_nw_grid_adaptive_needs_the_expanded_lemma6():
    from skcalbound._surrogates.nw import NWGrid

    with pytest.raises(ValueError, match="lemma6='expanded'"):
        NWGrid(B1, B2, 100, noise="adaptive", lemma6="published")
    with pytest.raises(ValueError, match="noise must be"):
        NWGrid(B1, B2, 100, noise="bernstein")


def _estimator_case(h):
    rng = np.random.default_rng(21)
    if h is None:  # miscalibrated, user b1 and b2: no relative branch
        s = rng.uniform(size=600)
        y = (rng.random(600) < s**2).astype(float)
        return s, y, {"b1": 2.0, "b2": 2.0}
    s = rng.beta(0.5, 20, 600)
    y = (rng.random(600) < np.minimum(1.0, 1.2 * s)).astype(float)
    return s, y, {"h": h}


@pytest.mark.parametrize("h, bandwidth", [(H, "auto"), (H, 2.0**-9), (None, "auto")])
def test_estimator_adaptive_equals_the_plain_loop_reference(h, bandwidth):
    # NWCalibrationBound(noise="adaptive") on one explicit split: bound_ and
    # lower_bound_ are the reference's U and L on the grid's weights.

    from skcalbound import NWCalibrationBound
    from skcalbound._surrogates._cells import bin_of
    from skcalbound._surrogates.nw._kernel import kernel

    s, y, assumption = _estimator_case(h)
    train, val = np.arange(400), np.arange(400, 600)
    est = NWCalibrationBound(
        **assumption,
        bandwidth=bandwidth,
        noise="adaptive",
        cv=[(train, val)],
        random_state=0,
    ).fit(s, y)
    fold = est.fold_results_.iloc[0]
    G, width = int(fold["n_bins"]), float(fold["bandwidth"])
    st, yt, sv, vy = s[train], y[train], s[val], y[val]
    _, ker = kernel(G, width, 1.2)
    half = (ker.shape[0] - 1) // 2
    lag = bin_of(sv, G)[:, None] - bin_of(st, G)[None, :]
    W = np.where(np.abs(lag) <= half, ker[np.clip(lag + half, 0, 2 * half)], 0.0)
    fallback = W.sum(axis=1) <= 0
    W[fallback] = nearest_weights(st, sv[fallback])
    W /= W.sum(axis=1, keepdims=True)
    ref = _reference_on_grid(
        (st, yt, sv, vy), W, fallback, G, width, 1.2, est.b1_, est.b2_, h, 0.05
    )
    assert 0.0 < ref["U"] < 1.0
    assert_allclose(est.bound_, ref["U"], rtol=1e-12)
    assert_allclose(est.lower_bound_, max(ref["L"], 0.0), rtol=1e-12, atol=1e-15)
    assert list(est.terms_) == list(ref["upper_terms"])
    for key, value in ref["upper_terms"].items():
        assert_allclose(est.terms_[key], value, rtol=1e-12, err_msg=key)
    assert fold["route"] == ref["route"]
    assert_allclose(fold["bound"], ref["U"], rtol=1e-12)
    assert_allclose(fold["lower_bound"], ref["L"], rtol=1e-12)
    assert fallback.any() or bandwidth == "auto"
    assert fold["n_fallback"] == fallback.sum()


@pytest.mark.parametrize("h", [H, None])
def test_estimator_adaptive_fit_chunks_equals_fit(h):
    from skcalbound import NWCalibrationBound

    s, y, assumption = _estimator_case(h)
    est = NWCalibrationBound(**assumption, noise="adaptive", cv=3, random_state=0)
    memory = est.fit(s, y)
    bound, lower, terms = memory.bound_, memory.lower_bound_, dict(memory.terms_)
    parts = np.array_split(np.arange(s.shape[0]), 4)
    chunks = est.fit_chunks([(y[p].astype(int), s[p]) for p in parts])
    assert_allclose(chunks.bound_, bound, rtol=1e-12)
    assert_allclose(chunks.lower_bound_, lower, rtol=1e-12, atol=1e-15)
    for key, value in terms.items():
        assert_allclose(chunks.terms_[key], value, rtol=1e-12, err_msg=key)
    worst = NWCalibrationBound(**assumption, cv=3, random_state=0, noise="worst_case")
    worst.fit(s, y)
    assert "route" in memory.fold_results_ and "route" not in worst.fold_results_


@pytest.mark.parametrize("h", [H, None])
def test_estimator_paper_guarantee_ignores_noise(h):
    # noise is used with guarantee="high_probability" only: "paper" is the published
    # form whatever noise is (as scikit-learn's l1_ratio outside elasticnet).
    from skcalbound import NWCalibrationBound

    s, y, assumption = _estimator_case(h)
    fits = [
        NWCalibrationBound(
            **assumption, noise=noise, guarantee="paper", cv=2, random_state=0
        ).fit(s, y)
        for noise in ("adaptive", "worst_case")
    ]
    assert fits[0].bound_ == fits[1].bound_
    assert fits[0].lower_bound_ == fits[1].lower_bound_
    assert fits[0].terms_ == fits[1].terms_
    assert "bernstein_smoothing" in fits[0].terms_
    assert "route" not in fits[0].fold_results_


def test_estimator_adaptive_evaluates_the_subsample_of_section_10():
    # max_validation: pass 2 evaluates the same rows in both modes, in chunks too.
    from skcalbound import NWCalibrationBound

    rng = np.random.default_rng(3)
    s = rng.beta(0.5, 20, 3000)
    y = (rng.random(3000) < np.minimum(1.0, 1.2 * s)).astype(int)
    kwargs = {"h": H, "max_validation": 300, "cv": 3, "random_state": 0}
    adaptive = NWCalibrationBound(**kwargs, noise="adaptive").fit(s, y)
    worst = NWCalibrationBound(**kwargs, noise="worst_case").fit(s, y)
    assert list(adaptive.fold_results_["n_validation"]) == [300] * 3
    assert_allclose(
        adaptive.fold_results_["validation_mean"],
        worst.fold_results_["validation_mean"],
        rtol=1e-12,
    )
    parts = np.array_split(np.arange(3000), 5)
    chunks = NWCalibrationBound(**kwargs, noise="adaptive").fit_chunks(
        [(y[p], s[p]) for p in parts]
    )
    assert_allclose(chunks.bound_, adaptive.bound_, rtol=1e-12)
    assert_allclose(chunks.lower_bound_, adaptive.lower_bound_, rtol=1e-12, atol=1e-15)


def _grid_weights(st, sv, G, width, tempering=1.2):
    """The grid's normalised weights of queries ``sv`` on training scores ``st``
    (fallback rows: the nearest training score(s)) and the fallback mask."""
    from skcalbound._surrogates._cells import bin_of
    from skcalbound._surrogates.nw._kernel import kernel

    _, ker = kernel(G, width, tempering)
    half = (ker.shape[0] - 1) // 2
    lag = bin_of(sv, G)[:, None] - bin_of(st, G)[None, :]
    W = np.where(np.abs(lag) <= half, ker[np.clip(lag + half, 0, 2 * half)], 0.0)
    fallback = W.sum(axis=1) <= 0
    W[fallback] = nearest_weights(st, sv[fallback])
    return W / W.sum(axis=1, keepdims=True), fallback


@pytest.mark.parametrize("h, bandwidth", [(H, 2.0**-9), (H, "auto"), (None, "auto")])
def test_score_on_held_out_rows_equals_the_plain_loop_reference(h, bandwidth):
    # score() in adaptive mode: SPEC 13 for the smoother refit on every fitted row
    # (its training sums and extremes), the held-out rows as validation points (the
    # pilot from their labels), at the full delta.
    from skcalbound import NWCalibrationBound

    s, y, assumption = _estimator_case(h)
    rng = np.random.default_rng(22)
    if h is None:
        sv = rng.uniform(size=300)
        vy = (rng.random(300) < sv**2).astype(int)
    else:
        sv = rng.beta(0.5, 20, 300)
        vy = (rng.random(300) < np.minimum(1.0, 1.2 * sv)).astype(int)
    est = NWCalibrationBound(
        **assumption, bandwidth=bandwidth, cv=3, confidence_level=0.9, random_state=0
    ).fit(s, y)
    G, width = est.surrogate_.n_bins, est.bandwidth_
    W, fallback = _grid_weights(s, sv, G, width)
    ref = _reference_on_grid(
        (s, y, sv, vy), W, fallback, G, width, 1.2, est.b1_, est.b2_, h, 0.1
    )
    statistics, info = est._score_method().held_out(est.surrogate_, sv, vy * 1.0)
    got = adaptive_terms(statistics, 0.1)
    assert got["route"] == ref["route"]
    for table in ("upper_terms", "lower_terms"):
        for key, value in ref[table].items():
            assert_allclose(got[table][key], value, rtol=1e-12, err_msg=key)
    assert 0.0 < ref["U"] < 1.0
    assert_allclose(est.score(sv, vy), -ref["U"], rtol=1e-12)
    assert info["n_fallback"] == fallback.sum()
    assert (info["n_relative"] > 0) == (h is not None)
    if bandwidth != "auto":
        assert fallback.any()
    # The labels matter (the pilot), unlike section 10's held-out bound.
    flipped, _ = est._score_method().held_out(est.surrogate_, sv, 1.0 - vy)
    assert flipped.c_prime != statistics.c_prime
    worst = NWCalibrationBound(**assumption, bandwidth=bandwidth, noise="worst_case")
    worst.set_params(cv=3, confidence_level=0.9, random_state=0).fit(s, y)
    assert worst.score(sv, vy) == worst.score(sv, 1 - vy)


def test_psi_overflows_to_inf_without_a_warning():
    # Tiny h: K d is huge, e**x overflows; psi is then inf (rho too: no relative
    # branch), not an overflow warning.
    import warnings

    from skcalbound._surrogates.nw._adaptive import _psi, relative_factor

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isinf(_psi(np.array([1e4]))).all()
        assert_allclose(_psi(np.array([0.0, 1.0])), [0.5, math.e - 2.0], rtol=1e-15)
        one = np.ones(1)
        R = relative_factor(
            0.5 * one, 0.0 * one, 1e-6 * one, 0.01 * one, 2.0**-41, one < 0
        )
        assert np.isnan(R).all()


@pytest.mark.parametrize("h, bandwidth", [(H, 2.0**-9), (H, 2.0**-7), (None, 2.0**-7)])
def test_cell_bias_bounds_the_bias_of_every_query_in_the_cell(h, bandwidth):
    # The grid bounds the bias of a cell's queries by one Babs and one R, at their
    # suprema over the cell: at scores across every kernel cell (edges included),
    # the per-query Babs and R (Lemma 6 and Corollary 4 at that score, with the
    # cell's weights on the training scores themselves) are never above them, and
    # the suprema are attained within a few percent.
    from skcalbound._surrogates.nw._adaptive import _taylor_bias
    from skcalbound._surrogates.nw._adaptive_grid import cell_bias

    tables, train, _, _, st, _, _, bt, _, _ = _grid_fold(
        9, bandwidth=bandwidth, tail=1.0
    )
    G = tables.n_bins
    babs, R = cell_bias(tables, train.count, B1, B2, h)
    half = (tables.ker.shape[0] - 1) // 2
    checked = relative = 0
    worst = []
    for q in np.flatnonzero(tables.A0 > 0.0)[::7]:
        inside = np.abs(bt - q) <= half
        w = np.where(inside, tables.ker[np.clip(bt - q + half, 0, 2 * half)], 0.0)
        use = w > 0
        w, x = w[use] / w[use].sum(), st[use]
        s = (q + np.linspace(0.0, 1.0, 9)) / G
        diff = x[None, :] - s[:, None]
        m1, M2 = diff @ w, (diff * diff) @ w
        d = np.abs(diff).max(axis=1)
        point_babs, point_R = _taylor_bias(s, m1, M2, d, B1, B2, h, None)
        assert (point_babs <= babs[q] * (1 + 1e-12)).all()
        worst.append(point_babs.max() / babs[q])
        if np.isfinite(R[q]):
            assert np.isfinite(point_R).all()
            assert (point_R <= R[q] * (1 + 1e-12)).all()
            relative += 1
        checked += 1
    assert checked > 20 and (relative > 0) == (h is not None)
    assert min(worst) > 0.9
