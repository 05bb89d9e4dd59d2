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
    ``(n_groups, n_bins)``. Merged by addition (with another :class:`CellSums`, or
    with a chunk's :class:`CellRows`)."""

    count: np.ndarray
    positives: np.ndarray
    s1: np.ndarray
    s2: np.ndarray

    @classmethod
    def zeros(cls, n_groups, n_bins):
        """The sums of no row, every array a view of one block (one allocation,
        which the allocator maps and unmaps as a whole: a dozen arrays of a few tens
        of MB each, made and freed per chunk, are otherwise kept in every thread's
        arena -- seen: 300 MB above the live arrays on Dask input at 2e7 rows)."""
        block = np.zeros((4, n_groups * n_bins))
        return cls(*(a.reshape(n_groups, n_bins) for a in block))

    def __add__(self, other):
        if isinstance(other, CellRows):
            out = CellSums(*(a.copy() for a in self._arrays()))
            out += other
            return out
        return CellSums(*(a + b for a, b in zip(self._arrays(), other._arrays())))

    def __iadd__(self, other):
        if isinstance(other, CellRows):
            other.add_to(self)
            return self
        # In place: the merge of in-memory blocks adds MBs of grids per block.
        for a, b in zip(self._arrays(), other._arrays()):
            a += b
        return self

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


@dataclass(frozen=True)
class CellRows:
    """A chunk's rows as pass 1 reads them, not yet summed: per row its key ``group *
    n_bins + cell``, label and offset ``t``.

    Added into a :class:`CellSums` row by row in order (``np.add.at``, the order of
    ``np.bincount``): a chunk waiting to be merged holds a few bytes a row instead
    of ``n_groups * n_bins`` cells of every sum (fine grids are larger than chunks:
    at 2e7 rows, 126 MB against 32 MB for 10**6 rows), and a running total that
    receives every chunk this way has summed every row in row order, however the
    rows were cut."""

    key: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray
    n_groups: int
    n_bins: int

    def add_to(self, sums):
        """Add the rows into ``sums`` (C-contiguous arrays, in place)."""
        arrays = sums._arrays()
        if not all(a.flags.c_contiguous for a in arrays):
            raise ValueError("CellSums arrays must be C-contiguous to add rows into.")
        count, positives, s1, s2 = (a.reshape(-1) for a in arrays)
        # Counts and positives are integers, exact in any order: np.bincount, twice
        # as fast as np.add.at (which casts a non-float64 dtype element by element).
        size = count.shape[0]
        count += np.bincount(self.key, minlength=size)
        positives += np.bincount(self.key, weights=self.labels, minlength=size)
        np.add.at(s1, self.key, self.offsets)
        np.add.at(s2, self.key, np.square(self.offsets))

    def summed(self):
        out = CellSums.zeros(self.n_groups, self.n_bins)
        out += self
        return out

    def __add__(self, other):
        out = self.summed()
        out += other
        return out

    __iadd__ = __add__


def cell_sums(scores, labels, groups, n_groups, n_bins, summed=True):
    """Pass 1 on one chunk: its :class:`CellSums` (rows with group < 0 skipped), or
    with ``summed=False`` its :class:`CellRows`."""
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
    rows = CellRows(key, labels, t, n_groups, G)
    return rows.summed() if summed else rows


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
