"""The candidate bucketings ``(B, r)`` and the grids of cells that serve them.

Candidate ``(B, r)`` of ``R`` shifts has edges ``(j + r/R) / B``; on a grid of ``K``
cells, ``K`` a multiple of ``B R``, each of its buckets is a run of whole cells.
"""

import functools
import math

import numpy as np

# Cells of one grid at most (a finer one serves more candidates, but every candidate
# costs O(cells)).
MAX_CELLS = 2**20
# A grid has at least this many cells: the own-cell term of the distance sum and the
# flagged cells are then small.
MIN_CELLS = 2**14


def candidate_grids(n_buckets, n_shifts):
    """The candidates and the grids that serve them.

    Returns
    -------
    candidates : list of (int, int)
        ``(B, r)`` for every bucket count (ascending, unique) and shift
        ``r < n_shifts``.
    grids : list of (int, list of int)
        ``(K, indices into candidates)``; ``K`` is a multiple of ``B * n_shifts`` for
        every candidate it serves.
    """
    counts = sorted({int(b) for b in n_buckets})
    groups = []
    for B in counts:
        unit = B * n_shifts
        if groups and math.lcm(groups[-1][0], unit) <= MAX_CELLS:
            groups[-1][0] = math.lcm(groups[-1][0], unit)
            groups[-1][1].append(B)
        else:
            groups.append([unit, [B]])
    candidates = [(B, r) for B in counts for r in range(n_shifts)]
    index = {c: k for k, c in enumerate(candidates)}
    grids = []
    for K, bs in groups:
        if K < MIN_CELLS:
            K *= -(-MIN_CELLS // K)
        grids.append((K, [index[(B, r)] for B in bs for r in range(n_shifts)]))
    return candidates, grids


@functools.lru_cache(maxsize=8)
def bucket_edges(candidates, R, K):
    """The buckets of ``candidates`` (a tuple of ``(B, r)``) on ``K`` cells, whatever
    the data (read-only arrays, shared): per candidate ``B``, the cells per bucket
    ``w``, the offset ``o`` and ``bounds`` (candidate ``i`` owns the buckets
    ``bounds[i]:bounds[i + 1]``, ids + 1 in ``0..B``); per bucket its cells
    ``[start, end)`` and its candidate ``owner``."""
    B = np.array([b for b, _ in candidates], dtype=np.intp)
    w = K // B
    o = np.array([r for _, r in candidates], dtype=np.intp) * (K // (B * R))
    bounds = np.concatenate(([0], np.cumsum(B + 1))).astype(np.intp)
    first = np.repeat(bounds[:-1], B + 1)
    j = np.arange(bounds[-1]) - first  # bucket id + 1
    w_j, o_j = np.repeat(w, B + 1), np.repeat(o, B + 1)
    start = np.clip((j - 1) * w_j + o_j, 0, K)
    end = np.clip(j * w_j + o_j, 0, K)
    owner = np.repeat(np.arange(B.shape[0]), B + 1)
    out = (B, w, o, bounds, start, end, owner)
    for x in out:
        x.flags.writeable = False
    return out


class Stack(tuple):
    """A tuple of mergeable results (one per grid), merged element by element."""

    def __add__(self, other):
        return Stack(a + b for a, b in zip(self, other))
