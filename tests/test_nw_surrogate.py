"""NW window sums against a slow, obviously correct loop over every training point."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skcalbound._surrogates._nw import window_sums_direct
from skcalbound._terms import nw_bound_terms, nw_plugin_bandwidth, nw_smoothing_error


def _reference(scores, labels, query, bandwidth, tempering):
    """One query, one training point at a time."""
    weights = []
    for s in scores:
        u = (query - s) / bandwidth
        weights.append(max(1.0 - u * u, 0.0) ** tempering if abs(u) < 1 else 0.0)
    weights = np.array(weights)
    if weights.sum() == 0:
        dist = np.abs(scores - query)
        weights = (dist == dist.min()).astype(float)
    w = weights / weights.sum()
    d = query - scores
    return (w @ labels, w @ np.abs(d), w @ (d * d), w @ w)


CASES = {
    "random": lambda rng: rng.uniform(size=300),
    "ties": lambda rng: rng.choice([0.1, 0.2, 0.2005, 0.5, 0.9], size=300),
    "clusters": lambda rng: np.concatenate(
        [np.full(100, 0.3), 0.3 + rng.normal(0, 1e-4, 100), rng.uniform(size=100)]
    ),
    "edges": lambda rng: np.concatenate([np.zeros(50), np.ones(50), rng.uniform(size=200)]),
    "gaps": lambda rng: np.concatenate(
        [rng.uniform(0, 0.1, 150), rng.uniform(0.6, 0.61, 150)]
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("tempering", [1.0, 1.2])
@pytest.mark.parametrize("bandwidth", [0.003, 0.05])
def test_direct_window_sums_match_reference(case, tempering, bandwidth):
    rng = np.random.default_rng(0)
    scores = np.sort(np.clip(CASES[case](rng), 0, 1))
    labels = (rng.uniform(size=scores.size) < 0.4).astype(float)
    queries = np.concatenate(
        [rng.uniform(size=60), [0.0, 1.0, 0.3, 0.35, 0.2, 0.2 + bandwidth, 0.8]]
    )
    got = window_sums_direct(scores, labels, queries, bandwidth, tempering, chunk=500)
    for j, query in enumerate(queries):
        expected = _reference(scores, labels, query, bandwidth, tempering)
        actual = (got.eta_hat[j], got.sum_abs[j], got.sum_squares[j], got.sum_w2[j])
        assert_allclose(actual, expected, rtol=1e-12, atol=1e-300, err_msg=f"q={query}")


def test_nearest_neighbour_fallback_uses_both_equidistant_blocks():
    # Dyadic scores, so that "equidistant" holds in floating point.
    scores = np.array([0.125, 0.125, 0.125, 0.5, 0.875, 0.875])
    labels = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0])
    queries = np.array([0.3125, 0.6875, 0.0, 0.25])
    got = window_sums_direct(scores, labels, queries, 0.01, 1.0)
    assert got.fallback.tolist() == [True, True, True, True]
    # 0.3125 is equidistant from 0.125 (three points) and 0.5 (one): four points.
    assert_allclose(got.eta_hat, [2 / 4, 1 / 3, 2 / 3, 2 / 3], rtol=1e-15)
    assert_allclose(got.sum_abs, [0.1875, 0.1875, 0.125, 0.125], rtol=1e-15)
    assert_allclose(got.sum_squares, [0.1875**2, 0.1875**2, 0.125**2, 0.125**2])
    assert_allclose(got.sum_w2, [1 / 4, 1 / 3, 1 / 3, 1 / 3], rtol=1e-15)


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


def test_smoothing_error_and_terms_by_hand():
    g = nw_smoothing_error(np.array([0.01, 0.5]), np.array([1e-4, 0.3]),
                           np.array([0.04, 0.5]), b1=2.0, b2=10.0)
    assert_allclose(g, [2 * 0.01 + 5 * 1e-4 + 0.5 * 0.2, 1.0])
    r = np.array([0.1, 0.2, 0.3, 0.0])
    gt = np.array([0.05, 0.05, 0.15, 0.05])
    terms = nw_bound_terms(r, gt, delta=0.06)
    L = np.log(3 / 0.03)
    assert_allclose(terms["validation_mean"], 0.15, rtol=1e-15)
    assert_allclose(terms["smoothing_mean"], 0.075, rtol=1e-15)
    assert_allclose(terms["bernstein_residual"],
                    np.sqrt(2 * r.var() * L / 4) + 3 * L / 4, rtol=1e-14)
    assert_allclose(terms["bernstein_smoothing"],
                    np.sqrt(2 * gt.var() * L / 4) + 3 * L / 4, rtol=1e-14)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("bandwidth", [0.003, 0.05])
def test_fast_window_sums_match_direct(case, bandwidth):
    from skcalbound._surrogates._nw import window_sums_fast

    rng = np.random.default_rng(1)
    scores = np.sort(np.clip(CASES[case](rng), 0, 1))
    labels = (rng.uniform(size=scores.size) < 0.4).astype(float)
    queries = np.concatenate([rng.uniform(size=500), scores[::7], [0.0, 1.0]])
    fast = window_sums_fast(scores, labels, queries, bandwidth)
    direct = window_sums_direct(scores, labels, queries, bandwidth, 1.0)
    for name in ("eta_hat", "sum_abs", "sum_squares", "sum_w2"):
        assert_allclose(getattr(fast, name), getattr(direct, name), rtol=1e-9, atol=1e-15,
                        err_msg=name)
    assert np.array_equal(fast.fallback, direct.fallback)
