"""The grid NW smoother against a slow, obviously correct loop over every training point.

The reference computes, one query at a time, the weights the fast path uses (the
tempered Epanechnikov kernel at the offset between the query's bin and each training
point's bin, nearest-neighbour fallback when none is positive) and then every sum of
Lemma 6 from the actual scores. The fast path must agree to 1e-9 relative on each of
``eta_hat``, ``sum w |d|``, ``sum w d**2`` and ``sum w**2`` (isolated through the
choice of ``b1, b2`` in ``g_T``), in both of its forms: arbitrary queries against a
training sample (``predict``/``score``) and the complement of a validation fold
(cross-fitting).

The grid of the high-probability certificate (``_surrogates/_nw_hp.py``, SPEC sections
10 and 12) is checked the same way: its cell sums against a direct computation, and the
statistics of a fold (``r``, ``min(g, 1)`` with Lemma 6 expanded at the query, ``C2 =
sum_i c_i**2`` with ``c_i`` the mean weight of training point ``i`` over the queries,
the fallback count) against the weights built one query at a time.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import skcalbound._surrogates._nw as nw_module
import skcalbound._surrogates._nw_hp as nw_hp
from skcalbound._splitting import SortedSample
from skcalbound._surrogates._nw import BinnedSample
from skcalbound._terms import nw_bound_terms, nw_plugin_bandwidth


def _reference(scores, labels, query, bandwidth, tempering, G):
    """``(eta, sum w|d|, sum w d**2, sum w**2)`` for one query, one point at a time."""
    qb = min(int(query * G), G - 1)
    weights = []
    for s in scores:
        u = (qb - min(int(s * G), G - 1)) / (G * bandwidth)
        weights.append(max(1.0 - u * u, 0.0) ** tempering if abs(u) < 1 else 0.0)
    w = np.array(weights)
    if w.sum() == 0:
        dist = np.abs(scores - query)
        w = (dist == dist.min()).astype(float)
    w = w / w.sum()
    d = query - scores
    return w @ labels, w @ np.abs(d), w @ (d * d), w @ w


# (b1, b2) -> g_T isolates one sum (plus the sqrt(sum w**2) / 2 part).
PROBES = [(0.0, 0.0), (1.0, 0.0), (0.0, 2.0), (32.0, 6144.0)]


def _g(ref, b1, b2):
    return b1 * ref[1] + 0.5 * b2 * ref[2] + 0.5 * np.sqrt(ref[3])


CASES = {
    "random": lambda rng: rng.uniform(size=400),
    "ties": lambda rng: rng.choice([0.1, 0.2, 0.2005, 0.5, 0.9], size=400),
    "grid_aligned": lambda rng: rng.integers(0, 257, size=400) / 256,
    "clusters": lambda rng: np.concatenate(
        [np.full(150, 0.3), 0.3 + rng.normal(0, 1e-4, 100), rng.uniform(size=150)]
    ),
    "edges": lambda rng: np.concatenate([np.zeros(60), np.ones(60), rng.uniform(size=280)]),
    "gaps": lambda rng: np.concatenate([rng.uniform(0, 0.1, 200), rng.uniform(0.6, 0.61, 200)]),
}


def _data(case, seed=0):
    rng = np.random.default_rng(seed)
    scores = np.sort(np.clip(CASES[case](rng), 0, 1))
    labels = (rng.uniform(size=scores.size) < 0.4).astype(np.uint8)
    return rng, scores, labels


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("tempering", [1.0, 1.2])
@pytest.mark.parametrize("bandwidth, G", [(0.01, 2**10), (0.05, 2**8), (0.003, 2**12)])
@pytest.mark.parametrize("chunk", [None, 5])
def test_queries_against_a_training_sample_match_the_reference(
    case, tempering, bandwidth, G, chunk, monkeypatch
):
    if chunk is not None:  # the sample is built in chunks of whole bins; atoms > chunk
        monkeypatch.setattr(nw_module, "_CHUNK", chunk)
    rng, scores, labels = _data(case)
    sample = BinnedSample.from_sorted(scores, labels, G)
    tables = sample.tables(bandwidth, tempering)
    queries = np.concatenate([rng.uniform(size=60), scores[::9], [0.0, 1.0, 0.3]])
    refs = [_reference(scores, labels.astype(float), q, bandwidth, tempering, G)
            for q in queries]
    eta = sample.eta(tables, queries)
    assert_allclose(eta, [r[0] for r in refs], rtol=1e-9, atol=1e-300)
    for b1, b2 in PROBES:
        residual, g, _ = sample.residuals_and_smoothing(tables, b1, b2, queries)
        assert_allclose(residual, np.abs(eta - queries), rtol=1e-15, atol=0)
        assert_allclose(g, [_g(r, b1, b2) for r in refs], rtol=1e-9, atol=0,
                        err_msg=f"b1={b1}, b2={b2}")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("tempering", [1.0, 1.2])
@pytest.mark.parametrize("bandwidth, G", [(0.01, 2**10), (0.003, 2**12)])
@pytest.mark.parametrize("subsample", [False, True])
@pytest.mark.parametrize("chunk", [None, 7])
def test_complement_fold_matches_the_reference(
    case, tempering, bandwidth, G, subsample, chunk, monkeypatch
):
    if chunk is not None:  # queries are processed in chunks: check the seams
        monkeypatch.setattr(nw_module, "_QUERY_CHUNK", chunk)
    rng, scores, labels = _data(case, seed=1)
    sample = BinnedSample.from_sorted(scores, labels, G)
    validation = np.sort(rng.choice(scores.size, scores.size // 4, replace=False))
    train = np.setdiff1d(np.arange(scores.size), validation)
    evaluate = np.sort(rng.choice(validation.size, 37, replace=False)) if subsample else None
    queries = scores[validation] if evaluate is None else scores[validation[evaluate]]
    refs = [_reference(scores[train], labels[train].astype(float), q, bandwidth, tempering, G)
            for q in queries]
    for b1, b2 in PROBES:
        chunks = []

        def sink(residual, g):
            chunks.append((residual.copy(), g.copy()))

        tables, _ = sample.complement_fold(
            validation, bandwidth, tempering, b1, b2, sink, evaluate=evaluate
        )
        assert tables.bandwidth == bandwidth
        residual, g = (np.concatenate(part) for part in zip(*chunks))
        assert_allclose(residual, [abs(r[0] - q) for r, q in zip(refs, queries)],
                        rtol=1e-9, atol=1e-15)
        assert_allclose(g, [_g(r, b1, b2) for r in refs], rtol=1e-9, atol=0,
                        err_msg=f"b1={b1}, b2={b2}")


def test_nearest_neighbour_fallback_uses_both_equidistant_blocks():
    # Dyadic scores, so that "equidistant" holds in floating point; the kernel reaches
    # one bin only (bandwidth 1/G), so every query below falls back.
    scores = np.array([0.125, 0.125, 0.125, 0.5, 0.875, 0.875])
    labels = np.array([0, 1, 1, 0, 1, 0], dtype=np.uint8)
    G = 1024
    sample = BinnedSample.from_sorted(scores, labels, G)
    tables = sample.tables(1.0 / G, 1.0)
    queries = np.array([0.3125, 0.6875, 0.0, 0.25])
    residual, g, n_fallback = sample.residuals_and_smoothing(tables, 1.0, 0.0, queries)
    assert n_fallback == 4
    # 0.3125 is equidistant from 0.125 (three points) and 0.5 (one): four points.
    eta = np.array([2 / 4, 1 / 3, 2 / 3, 2 / 3])
    d = np.array([0.1875, 0.1875, 0.125, 0.125])
    assert_allclose(residual, np.abs(eta - queries), rtol=1e-15)
    assert_allclose(g, d + 0.5 * np.sqrt([1 / 4, 1 / 3, 1 / 3, 1 / 3]), rtol=1e-15)
    assert_allclose(sample.eta(tables, queries), eta, rtol=1e-15)


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
    assert_allclose(terms["bernstein_residual"],
                    np.sqrt(2 * r.var() * L / 4) + 3 * L / 4, rtol=1e-14)
    assert_allclose(terms["bernstein_smoothing"],
                    np.sqrt(2 * gt.var() * L / 4) + 3 * L / 4, rtol=1e-14)
    # g in [0, R]: R * BB(n, d, var(g / R)).
    R = 0.5
    halved = nw_bound_terms(4, (r.mean(), r.var()), (gt.mean(), gt.var()), 0.06, R=R)
    assert_allclose(halved["bernstein_smoothing"],
                    np.sqrt(2 * gt.var() * L / 4) + 3 * R * L / 4, rtol=1e-14)


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_chunked_evaluation_gives_the_same_bound(guarantee, monkeypatch):
    # Means and variances are accumulated chunk by chunk around a shift; with many
    # chunks they must equal the one-chunk (two-pass) values. Each mode has its own
    # evaluation loop.
    from skcalbound import NWCalibrationBound

    module = nw_hp if guarantee == "high_probability" else nw_module
    rng = np.random.default_rng(3)
    s = rng.uniform(size=3000)
    y = rng.uniform(size=3000) < s**2
    params = dict(b1=2.0, b2=2.0, guarantee=guarantee, random_state=0)
    one = NWCalibrationBound(**params).fit(s, y)
    monkeypatch.setattr(module, "_QUERY_CHUNK", 37)
    many = NWCalibrationBound(**params).fit(s, y)
    for name, value in one.terms_.items():
        assert_allclose(many.terms_[name], value, rtol=1e-12, err_msg=name)
    # Not only the constant part of the Bernstein term (delta_fold = 0.01, split in
    # two or three).
    d = 0.01 / (3 if guarantee == "high_probability" else 2)
    assert one.terms_["bernstein_residual"] > 3 * np.log(3 / d) / 600


# ----------------------------------------------------------------------------------
# The grid of the high-probability certificate
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bandwidth, G, G16",
    # The power of two with at least 64 (16) cells per bandwidth, in [16, 2**20].
    [(0.05, 2048, 512), (0.03, 4096, 1024), (1 / 32, 2048, 512), (0.25, 256, 64),
     (1.0, 64, 16), (4.0, 16, 16), (1e-4, 2**20, 2**18), (1e-7, 2**20, 2**20)],
)
def test_hp_grid_size(bandwidth, G, G16):
    assert nw_hp.grid_size(bandwidth) == G
    assert nw_hp.grid_size(bandwidth, bins_per_bandwidth=16) == G16


@pytest.mark.parametrize("case", list(CASES))
def test_hp_cell_sums_and_their_coarsenings(case):
    _, scores, labels = _data(case, seed=2)
    fine = nw_hp.grid_stats(scores, labels, 2**12)
    pyramid = nw_hp.Pyramid(fine)
    for G in (2**12, 2**9, 2**4):
        cells = np.minimum(np.floor(scores * G).astype(int), G - 1)
        t = scores - (cells + 0.5) / G
        direct = [np.bincount(cells, weights=w, minlength=G)
                  for w in (np.ones_like(scores), labels.astype(float), t, t * t)]
        for stats in (nw_hp.grid_stats(scores, labels, G), pyramid.at(G)):
            got = [stats.count, stats.positives, stats.s1, stats.s2]
            for name, a, b in zip(["count", "positives", "s1", "s2"], got, direct):
                assert_allclose(a, b, rtol=1e-13, atol=1e-15, err_msg=f"G={G} {name}")


def _hp_reference(scores, labels, queries, bandwidth, tempering, G, b1, b2):
    """Mean and population variance of ``r``, mean of ``min(g, 1)``, ``C2`` and the
    fallback count, from the weight of every training point at every query."""
    cells = np.minimum(np.floor(scores * G), G - 1)
    W, r, g, n_fallback = [], [], [], 0
    for q in queries:
        u = (min(np.floor(q * G), G - 1) - cells) / (G * bandwidth)
        w = np.where(np.abs(u) < 1, np.maximum(1 - u * u, 0.0) ** tempering, 0.0)
        offsets = scores - q
        fallback = w.sum() == 0
        if fallback:  # equal weights on the nearest training score(s)
            w = (np.abs(offsets) == np.abs(offsets).min()).astype(float)
            n_fallback += 1
        w /= w.sum()
        # Lemma 6 expanded at the query; at a fallback query the library keeps b1 d.
        first = w @ np.abs(offsets) if fallback else abs(w @ offsets)
        g.append(b1 * first + 0.5 * b2 * (w @ offsets**2) + 0.5 * np.sqrt(w @ w))
        r.append(abs(w @ labels - q))
        W.append(w)
    r = np.array(r)
    c = np.mean(W, axis=0)
    return r.mean(), r.var(), np.minimum(g, 1.0).mean(), np.sum(c * c), n_fallback


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("tempering", [1.0, 1.2])
@pytest.mark.parametrize("bandwidth", [0.01, 0.05, 0.003])
@pytest.mark.parametrize("chunk", [None, 7])
def test_hp_fold_statistics_match_the_reference(case, tempering, bandwidth, chunk,
                                                monkeypatch):
    if chunk is not None:  # queries are processed in chunks: check the seams
        monkeypatch.setattr(nw_hp, "_QUERY_CHUNK", chunk)
    rng, scores, labels = _data(case, seed=3)
    G = nw_hp.grid_size(bandwidth)
    queries = np.sort(np.concatenate([rng.uniform(size=60), scores[::9], [0.0, 1.0, 0.3]]))
    tables = nw_hp.HPTables.from_stats(
        nw_hp.grid_stats(scores, labels, G), bandwidth, tempering
    )
    fallback = nw_hp.Fallback(SortedSample(order=None, scores=scores, labels=labels))

    def below(idx):
        return np.searchsorted(scores, queries[idx], side="left")

    for b1, b2 in [(1.0, 2.0), (32.0, 6144.0)]:
        got = nw_hp.evaluate(tables, b1, b2, queries, fallback, below)
        mean_r, var_r, mean_g, C2, n_fallback = _hp_reference(
            scores, labels.astype(float), queries, bandwidth, tempering, G, b1, b2
        )
        label = f"b1={b1}, b2={b2}"
        assert got["n"] == queries.size and got["n_fallback"] == n_fallback, label
        assert_allclose(got["residual_moments"], [mean_r, var_r], rtol=1e-12, atol=1e-15,
                        err_msg=label)
        assert_allclose(got["smoothing_mean"], mean_g, rtol=1e-12, err_msg=label)
        assert_allclose(got["sum_c_squared"], C2, rtol=1e-12, err_msg=label)
    if case == "gaps":
        assert n_fallback > 10  # the fallback, and its weights in C2, are exercised
