"""Score samples shared by the tests of the grid NW smoother (``_surrogates/nw/``):
random, tied, on grid edges, clustered, at 0 and 1, and with gaps (fallback)."""

import numpy as np

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
