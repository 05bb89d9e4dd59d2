"""Pass 2: per (split, cell) query moments and the point-by-point sums of flags.

For every validation query in a cell with training points: its offset ``e`` and
own-cell distance ``D``, reduced to per-cell moments (count, ``e``, ``e**2``, ``D``
and, for the sums of ``min(g, 1)**2``, ``D**2``, ``D e``); at flagged cells, ``r``
and ``min(g, 1)`` point by point; queries in empty cells are kept.
"""

from dataclasses import dataclass

import numpy as np

from .._cells import bin_of, cell_offsets


@dataclass(frozen=True)
class EvaluationSums:
    """Pass 2's mergeable result for one grid.

    Attributes
    ----------
    moments : tuple of ndarray
        Per moment, per numbered (split, cell) with training points (``Plan.slot``).
    pointwise : ndarray of shape (5, n_splits * n_candidates)
        Sums over the flagged pairs: count, ``r``, ``r**2``, ``min(g, 1)``, its square.
    served : ndarray
        Queries of flagged pairs per served bucket (at ``Plan.served_keys``).
    kept : tuple
        ``(scores, split)`` of the queries in cells without training points.
    extremes : dict
        ``hi`` / ``lo``: per (group, needed cell) the largest / smallest score.
    """

    moments: tuple
    pointwise: np.ndarray
    served: np.ndarray
    kept: tuple
    extremes: dict

    def __add__(self, other):
        return EvaluationSums(
            tuple(a + b for a, b in zip(self.moments, other.moments)),
            self.pointwise + other.pointwise,
            self.served + other.served,
            tuple(np.concatenate((a, b)) for a, b in zip(self.kept, other.kept)),
            {
                "hi": np.maximum(self.extremes["hi"], other.extremes["hi"]),
                "lo": np.minimum(self.extremes["lo"], other.extremes["lo"]),
            },
        )


def n_moments(plan):
    """count, e, e**2, D, and for the sums of ``min(g, 1)**2`` also D**2, D e."""
    return 6 if plan.squares else 4


def _extremes(plan, scores, cells, groups):
    """Per (group, needed cell) the largest and smallest score of the chunk."""
    size = plan.n_groups * plan.needed.shape[0]
    out = {"hi": np.full(size, -np.inf), "lo": np.full(size, np.inf)}
    lookup = np.full(plan.n_cells, -1, dtype=np.intp)
    lookup[plan.needed] = np.arange(plan.needed.shape[0])
    at = np.flatnonzero((lookup[cells] >= 0) & (groups >= 0))
    key = groups[at].astype(np.intp) * plan.needed.shape[0] + lookup[cells[at]]
    np.maximum.at(out["hi"], key, scores[at])
    np.minimum.at(out["lo"], key, scores[at])
    return out


def evaluation_sums(plan, scores, groups):
    """Pass 2 on one chunk (``groups``: the group of every row, -1 for none)."""
    K = plan.n_cells
    cells = bin_of(scores, K)
    extremes = _extremes(plan, scores, cells, groups)
    split = np.where(groups >= 0, plan.split_of_group[np.maximum(groups, 0)], -1)
    rows = np.flatnonzero(split >= 0)
    s, c = scores[rows], cells[rows]
    e = cell_offsets(s, c, K)
    key = c + split[rows] * K
    N = plan.count[key]
    empty = N <= 0
    kept = (s[empty], key[empty] // K)
    # Rows in cells without training points have N = mean = m2 = 0 (so D = 0) and
    # are summed at the last slot, which nothing reads.
    d = e - plan.mean[key]
    D = np.sqrt(np.maximum(N * (d * d) + plan.m2[key], 0.0) * N)
    slot = plan.slot[key]
    size = plan.slot_base[-1] + 1
    weights = (None, e, e * e, D, D * D, D * e)[: n_moments(plan)]
    moments = tuple(
        np.bincount(slot, weights=w, minlength=size).astype(np.float64) for w in weights
    )
    pointwise, served = _pointwise_sums(plan, s, e, D, key)
    return EvaluationSums(moments, pointwise, served, kept, extremes)


def _pointwise_sums(plan, s, e, D, key):
    """The sums over the rows of flagged (split, cell, candidate) triples."""
    n_pairs = plan.n_splits * len(plan.candidates)
    pointwise = np.zeros((5, n_pairs))
    served = np.zeros(plan.served_keys.shape[0])
    flagged = np.flatnonzero(plan.has_flags[key])
    if not flagged.size:
        return pointwise, served
    counts = plan.n_flags[key[flagged]]
    point = np.repeat(flagged, counts)
    within = np.arange(point.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    t = plan.first[key[point]] + within
    tr = plan.triples
    r = np.abs(s[point] - tr["eta"][t])
    g = tr["alpha"][t] * D[point] + tr["beta"][t] * e[point] + tr["gamma"][t]
    g = np.minimum(g, 1.0)
    weights = (None, r, r * r, g, g * g) if plan.squares else (None, r, r * r, g)
    for k, w in enumerate(weights):
        pointwise[k] = np.bincount(tr["slot"][t], weights=w, minlength=n_pairs)
    if plan.c2:
        served += np.bincount(tr["served"][t], minlength=served.shape[0])
    return pointwise, served


def empty_sums(plan):
    """The :class:`EvaluationSums` of no rows."""
    return evaluation_sums(plan, np.empty(0), np.empty(0, dtype=np.intp))


def training_extremes(plan, extremes, train_groups):
    """The extremes of the union of ``train_groups`` in the needed cells."""
    m = plan.needed.shape[0]
    groups = list(train_groups)
    hi = np.max([extremes["hi"][g * m : (g + 1) * m] for g in groups], axis=0)
    lo = np.min([extremes["lo"][g * m : (g + 1) * m] for g in groups], axis=0)
    return {"cells": plan.needed, "hi": hi, "lo": lo}
