"""Per-cell sums of the rows, merged by addition: what every grid bound reads.

Scores are binned on ``G`` equal cells of [0, 1] (``G`` a power of two, so that
``s * G``, every cell edge and the offsets ``t = s - c`` from the cell centres are
exact). :class:`CellSums` holds, per (group of rows, cell), the count, the positives
and the sums of ``t`` and ``t**2``; a group is a cross-fitting fold or one side of an
explicit split (``_splitting.GroupDesign``).
"""

from dataclasses import dataclass

import numpy as np

_BLOCK = 2**13


def bin_of(scores, n_bins):
    """Bin ids ``min(floor(s * G), G - 1)`` (exact: ``G`` is a power of two)."""
    b = np.multiply(scores, n_bins).astype(np.intp)
    return np.minimum(b, n_bins - 1, out=b)


def cell_offsets(scores, cells, n_bins, out=None):
    """Offsets ``s - c_b`` from the cell centres, exactly: with ``G`` a power of two,
    ``u = s G`` is exact, ``u - b`` is exact (Sterbenz: ``b <= u <= b + 1``) and so are
    ``- 1/2`` and ``/ G``."""
    t = np.multiply(scores, n_bins, out=out)
    t -= cells
    t -= 0.5
    t *= 1.0 / n_bins
    return t


@dataclass(frozen=True)
class BinStats:
    """Per-bin count, positives, sums of ``t`` and ``t**2`` (offsets from centres)."""

    count: np.ndarray
    positives: np.ndarray
    s1: np.ndarray
    s2: np.ndarray

    def __sub__(self, other):
        return BinStats(
            self.count - other.count,
            self.positives - other.positives,
            self.s1 - other.s1,
            self.s2 - other.s2,
        )


@dataclass
class CellSums:
    """Per (group, fine cell): count, positives, sums of ``t`` and ``t**2``; shape
    ``(n_groups, n_bins)``. Merged by addition. Only when asked (``cell_sums(...,
    extremes=True)``): the smallest (``low``, inf if empty) and largest (``high``,
    -inf if empty) score, merged by min / max."""

    count: np.ndarray
    positives: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    low: np.ndarray = None
    high: np.ndarray = None

    def __add__(self, other):
        sums = (a + b for a, b in zip(self._arrays(), other._arrays()))
        return CellSums(*sums, *self._extremes(other))

    def __iadd__(self, other):
        # In place: the merge of in-memory blocks adds MBs of grids per block.
        for a, b in zip(self._arrays(), other._arrays()):
            a += b
        if self.low is not None:
            np.minimum(self.low, other.low, out=self.low)
            np.maximum(self.high, other.high, out=self.high)
        return self

    def _extremes(self, other):
        if self.low is None:
            return None, None
        return np.minimum(self.low, other.low), np.maximum(self.high, other.high)

    def score_range(self, groups, factor=1):
        """The smallest and largest score over ``groups`` per cell of the grid
        ``factor`` times coarser (inf / -inf where there is none)."""
        groups = list(groups)
        low = self.low[groups].min(axis=0).reshape(-1, factor).min(axis=1)
        high = self.high[groups].max(axis=0).reshape(-1, factor).max(axis=1)
        return low, high

    def _arrays(self):
        return (self.count, self.positives, self.s1, self.s2)

    def group(self, k):
        return BinStats(*(a[k] for a in self._arrays()))

    def total(self):
        return BinStats(*(a.sum(axis=0) for a in self._arrays()))

    def training(self, train_groups, total=None):
        """Sums over ``train_groups``: the total minus the one left-out group when
        that is all it leaves out (the in-memory code's rounding), else their sum."""
        k = self.count.shape[0]
        left_out = sorted(set(range(k)) - set(train_groups))
        if total is not None and len(left_out) == 1:
            return total - self.group(left_out[0])
        return BinStats(*(a[list(train_groups)].sum(axis=0) for a in self._arrays()))


def cell_sums(scores, labels, groups, n_groups, n_bins, extremes=False):
    """Pass 1 on one chunk: its :class:`CellSums` (rows with group < 0 skipped);
    ``extremes``: with each cell's smallest and largest score."""
    G = n_bins
    keep = groups >= 0
    if not keep.all():
        scores, labels, groups = scores[keep], labels[keep], groups[keep]
    n = scores.shape[0]
    key = np.empty(n, dtype=np.intp)
    t = np.empty(n)
    # Cell ids and offsets in blocks that stay in cache, then one reduction each.
    for a in range(0, n, _BLOCK):
        b = slice(a, a + _BLOCK)
        cells = bin_of(scores[b], G)
        cell_offsets(scores[b], cells, G, out=t[b])
        cells += np.multiply(groups[b], G, dtype=np.intp)
        key[b] = cells
    size = n_groups * G
    sums = [
        np.bincount(key, minlength=size).astype(np.float64),
        np.bincount(key, weights=labels, minlength=size),
        np.bincount(key, weights=t, minlength=size),
        np.bincount(key, weights=np.square(t, out=t), minlength=size),
    ]
    if extremes:
        low, high = np.full(size, np.inf), np.full(size, -np.inf)
        np.minimum.at(low, key, scores)
        np.maximum.at(high, key, scores)
        sums += [low, high]
    return CellSums(*(a.reshape(n_groups, G) for a in sums))


def occupied_neighbours(count):
    """For every cell, the nearest cell at or below / at or above it with a nonzero
    ``count`` (-1 / ``len(count)`` if there is none)."""
    G = count.shape[0]
    idx = np.arange(G)
    below = np.maximum.accumulate(np.where(count > 0, idx, -1))
    above = np.minimum.accumulate(np.where(count > 0, idx, G)[::-1])[::-1]
    return below, above


def merge_extremes(a, b):
    """Merge two extremes records (same shape): max / min, counts of the winners."""
    out = {}
    for side, better in (("hi", np.maximum), ("lo", np.minimum)):
        x, y = a[side], b[side]
        best = better(x, y)
        out[side] = best
        for what in ("count", "pos"):
            out[f"{side}_{what}"] = np.where(
                x == best, a[f"{side}_{what}"], 0.0
            ) + np.where(y == best, b[f"{side}_{what}"], 0.0)
    return out
