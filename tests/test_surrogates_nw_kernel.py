"""The kernel sums of the grid NW smoother (``_surrogates/nw/_kernel.py``) against
every tap of every output summed directly: the grid size rule, sums by pairs of
nonempty cells and by direct convolution (in two halves on mid-size kernels).
"""

import numpy as np
import pytest

from skcalbound._surrogates import _cells
from skcalbound._surrogates.nw import _kernel


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
