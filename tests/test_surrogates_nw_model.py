"""The grid NW smoother's two passes (``_surrogates/nw/_model.py``, ``_sums.py``)
against a slow, obviously correct loop over every training point.

``NWGrid`` run through ``_passes.run`` is checked against weights built one query at
a time (the tempered Epanechnikov kernel at the offset between the query's cell and
each training point's cell, nearest-neighbour fallback when none is positive): the
statistics of a fold (``r``, ``min(g, 1)`` with Lemma 6 expanded at the query or as
published, ``C2 = sum_i c_i**2`` with ``c_i`` the mean weight of training point ``i``
over the queries, the fallback count). In the published form the distances to the
training points of the query's own cell (one weight ``w_0``) are bounded by
Cauchy-Schwarz, ``w_0 sqrt(N_c sum d**2)``, as the module does to stay mergeable.
"""

import itertools

import numpy as np
import pytest
from _nw_cases import CASES, _data
from _synthetic import slow_except
from numpy.testing import assert_allclose

from skcalbound._chunks import ArraySource
from skcalbound._passes import run
from skcalbound._splitting import GroupDesign
from skcalbound._surrogates.nw import NWGrid, _kernel, _sums


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
        for value, want, rtol in [
            (got.residual_moments, [mean_r, var_r], 1e-12),
            (got.smoothing_moments, [mean_g, var_g], 1e-9),
        ]:
            assert_allclose(value, want, rtol=rtol, atol=1e-15, err_msg=label)
        # The published form's own-cell sum of squares, N e**2 - 2 e s1 + s2, is a
        # difference of cell sums: where the cell's points coincide with the query
        # (ties) it keeps ~1e-16 of its terms, ~1e-8 of the own-cell term after the
        # square root, ~1e-11 of g.
        rtol = 1e-10 if paper else 1e-12
        assert_allclose(got.smoothing_mean, mean_g, rtol=rtol, err_msg=label)
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


def test_grid_rules():
    # The model's rules: one candidate but with "auto", the fine grid from the
    # bandwidth of all rows, the validation cap of the paper, a clear error for an
    # unknown form of Lemma 6.
    grid = NWGrid(1.0, 2.0, 10**4, bandwidth="auto")
    candidates = grid.candidates(8000)
    assert len(candidates) == 13 and grid.plugin(8000) in candidates
    assert NWGrid(1.0, 2.0, 10**4, bandwidth="plugin").candidates(8000) == (
        grid.plugin(8000),
    )
    assert NWGrid(1.0, 2.0, 10**4, bandwidth=0.05).fine_bins == _kernel.grid_size(0.05)
    assert grid.fine_bins >= _kernel.grid_size(grid.plugin(10**4))
    capped = NWGrid(1.0, 2.0, 10**4, max_validation="auto")
    assert [capped.validation_cap(n) for n in (None, 10**4, 2 * 10**5, 10**7)] == [
        15000,
        5000,
        10000,
        15000,
    ]
    assert grid.validation_cap(10**4) is None
    assert grid.refit_only(0.03).refit_rule(10**4, []) == 0.03
    with pytest.raises(ValueError, match="lemma6 must be 'expanded' or 'published'"):
        NWGrid(1.0, 2.0, 10**4, lemma6="paper")
