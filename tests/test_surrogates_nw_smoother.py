"""The tables of one training set's grid NW smoother
(``_surrogates/nw/_smoother.py``): computed at some cells, then completed, equal to the
whole tables, in both forms of Lemma 6.
"""

import numpy as np
from numpy.testing import assert_allclose

from skcalbound._surrogates import _cells
from skcalbound._surrogates.nw import _kernel, _search, _smoother


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
