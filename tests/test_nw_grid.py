"""Grid-binned NW window sums against a per-point loop with the same weights."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

#


def _reference(scores, labels, query, bandwidth, tempering, G):
    """The binned weights, one training point at a time, exact distances."""
    qb = min(int(query * G), G - 1)
    bins = np.minimum((scores * G).astype(int), G - 1)
    u = (qb - bins) / (G * bandwidth)
    w = np.where(np.abs(u) < 1, np.maximum(1 - u * u, 0) ** tempering, 0.0)
    if w.sum() == 0:
        dist = np.abs(scores - query)
        w = (dist == dist.min()).astype(float)
    w = w / w.sum()
    d = query - scores
    return w @ labels, w @ np.abs(d), w @ (d * d), w @ w


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


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("tempering", [1.0, 1.2])
@pytest.mark.parametrize("bandwidth, G", [(0.01, 2**10), (0.05, 2**8), (0.003, 2**12)])
def test_grid_window_sums_match_reference(case, tempering, bandwidth, G):
    rng = np.random.default_rng(0)
    scores = np.sort(np.clip(CASES[case](rng), 0, 1))
    labels = (rng.uniform(size=scores.size) < 0.4).astype(float)
    queries = np.concatenate([rng.uniform(size=80), scores[::9], [0.0, 1.0, 0.3]])
    got = window_sums_grid(scores, labels, queries, bandwidth, tempering, G)
    for j, query in enumerate(queries):
        expected = _reference(scores, labels, query, bandwidth, tempering, G)
        actual = (got.eta_hat[j], got.sum_abs[j], got.sum_squares[j], got.sum_w2[j])
        assert_allclose(actual, expected, rtol=1e-9, atol=1e-14, err_msg=f"q={query}")
