"""The refit surrogate: every candidate bucketing of all rows, one of them chosen."""

import numpy as np

from .._cells import bin_of, cell_offsets
from ._candidates import candidate_grids
from ._finish import finish_split
from ._model import BucketGrid, Plan
from ._sums import evaluation_sums
from ._table import BucketTable, Prepared, own_cell_distance


class BucketSurrogate:
    """Every candidate bucketing of one training set (all rows of the fit), from its
    per-grid statistics ``totals`` (:class:`~._table.Training` with extremes);
    ``candidate`` (an index into ``candidates``, chosen from the cross-fitted bounds)
    is the one :meth:`__call__` uses. Holds arrays only (pickles as such)."""

    def __init__(self, totals, n_buckets, n_shifts, candidate, n_train):
        self.totals = tuple(totals)
        self.n_buckets = tuple(n_buckets)
        self.n_shifts = int(n_shifts)
        self.candidates, self.grids = candidate_grids(n_buckets, n_shifts)
        self.candidate = int(candidate)
        self.n_train = int(n_train)

    def _chosen(self, L, x):
        """The chosen candidate at scores ``x``: the training statistics of its grid,
        the cells of ``x``, and ``(eta_hat, alpha, beta, gamma, fallback)`` there."""
        for (K, members), training in zip(self.grids, self.totals):
            if self.candidate in members:
                break
        prep = Prepared(training, np.empty(0, dtype=np.intp))
        table = BucketTable(prep, [self.candidates[self.candidate]], self.n_shifts, L)
        c = bin_of(x, K)
        s2 = [v[c] + v[c + 1] for v in (prep.cN, prep.cM, prep.cT)]
        with np.errstate(divide="ignore", invalid="ignore"):
            _, eta, alpha, beta, gamma, n_b = table.terms_at(0, c, s2)
        fallback = n_b <= 0
        f = np.flatnonzero(fallback)
        if f.size:
            mid = training.midpoints(c[f])
            values = table.fall_back(0, c[f], x[f], mid)[1:]
            for array, value in zip((eta, alpha, beta, gamma), values):
                array[f] = value
        return training, c, (eta, alpha, beta, gamma, fallback)

    def __call__(self, x):
        """The chosen candidate's ``eta_hat`` at scores ``x`` (any order)."""
        x = np.asarray(x, dtype=np.float64)
        return self._chosen(0.0, x)[2][0]

    def residuals_and_smoothing(self, lipschitz, x):
        """``|eta_hat(x) - x|``, unclipped ``g(x)`` of the chosen candidate at scores
        ``x`` (any order), and the number of queries that used a fallback bucket."""
        x = np.asarray(x, dtype=np.float64)
        training, c, (eta, alpha, beta, gamma, fallback) = self._chosen(lipschitz, x)
        e = cell_offsets(x, c, training.n_cells)
        D = own_cell_distance(
            training.count[c], e, training.mean_offset()[c], training.m2[c]
        )
        g = alpha * D + beta * e + gamma
        return np.abs(x - eta), g, int(np.count_nonzero(fallback))

    def all_sums(self, x, lipschitz, *, squares=True, c2=True):
        """Per candidate, the :class:`~._finish.CandidateSums` at held-out scores
        ``x`` (any order): pass 2 alone, every row validated by the one split."""
        grid = BucketGrid(self.n_buckets, self.n_shifts, lipschitz, squares, c2)
        sums = [None] * len(self.candidates)
        groups = np.zeros(x.shape[0], dtype=np.intp)
        for (K, members), training in zip(self.grids, self.totals):
            queries = np.bincount(bin_of(x, K), minlength=K) > 0
            plan = Plan.build(
                grid,
                K,
                [self.candidates[j] for j in members],
                [training],
                [np.flatnonzero(queries & (training.count > 0))],
                np.zeros(1, dtype=np.intp),
                np.empty(0, dtype=np.intp),
            )
            result = evaluation_sums(plan, x, groups)
            for j, value in zip(members, finish_split(plan, 0, result, training)):
                sums[j] = value
        return sums
