"""The label-free bandwidth search of the grid NW smoother
(``_surrogates/nw/_search.py``): the plug-in bandwidth, the cell sums of a training set
on every grid, and the search's objective and choice against a reference computed
point by point.
"""

import numpy as np
import pytest
from _nw_cases import CASES, _data
from numpy.testing import assert_allclose

from skcalbound._surrogates import _cells
from skcalbound._surrogates.nw import _kernel, _search


def test_plugin_bandwidth_solves_appendix_e_equation():
    for m, h in [(1000, 2**-4), (10**5, 2**-6), (8 * 10**6, 2**-6)]:
        b1 = np.tanh(1 / h) / (2 * h)
        b2 = 1.5 * np.tanh(1 / h) ** 2 / h**2
        hp = _search.plugin_bandwidth(m, b1, b2)
        t = np.sqrt(hp)
        a, b, c = 3 * b1 / 8, b2 / 10, 1.15 / (2 * np.sqrt(2 * m))
        assert abs(2 * b * t**5 + a * t**3 - c / 2) < 1e-12 * c
    assert _search.plugin_bandwidth(10, 0.0, 0.0) == 0.25
    assert _search.plugin_bandwidth(10**9, 1e3, 1e7) == 1e-4


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
