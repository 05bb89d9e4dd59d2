"""Pass 1's per-cell sums (``_surrogates/_cells.py``) and what the two-pass driver
(``_passes.py``) holds of them.

A chunk's :class:`CellRows` (its rows, unsummed) added into a running
:class:`CellSums` gives the digits of summing every row in row order, however the
rows were cut: checked bit for bit against a plain loop over the rows. The driver
drops pass 1's sums (the largest arrays of a fit) before pass 2.
"""

import gc
import weakref
from dataclasses import dataclass
from functools import reduce

import numpy as np
import pytest

from skcalbound._chunks import ArraySource
from skcalbound._passes import run
from skcalbound._splitting import GroupDesign
from skcalbound._surrogates._cells import CellRows, CellSums, cell_sums
from skcalbound._surrogates.nw import NWGrid

G = 64


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.beta(0.5, 3.0, n)
    s[:40] = 0.25  # an atom: many rows in one cell
    y = (rng.random(n) < s).astype(np.uint8)
    groups = rng.integers(-1, 3, n).astype(np.intp)  # -1: in no group
    return s, y, groups


def _loop(s, y, groups, n_groups):
    """The sums by a plain loop over the rows, in row order."""
    out = {k: np.zeros((n_groups, G)) for k in ("count", "positives", "s1", "s2")}
    for score, label, g in zip(s, y, groups):
        if g < 0:
            continue
        c = min(int(score * G), G - 1)
        t = (score * G - c - 0.5) / G
        out["count"][g, c] += 1.0
        out["positives"][g, c] += float(label)
        out["s1"][g, c] += t
        out["s2"][g, c] += t * t
    return out


def _assert_identical(got, want):
    for name, value in want.items():
        assert np.array_equal(getattr(got, name), value), name


@pytest.mark.parametrize("cuts", [(0, 3000), (0, 1, 700, 701, 2999, 3000)])
def test_rows_summed_into_a_running_total_have_the_digits_of_one_loop(cuts):
    s, y, groups = _data()
    s_before, y_before = s.copy(), y.copy()
    want = _loop(s, y, groups, 3)
    chunks = [slice(a, b) for a, b in zip(cuts[:-1], cuts[1:])]

    def part(c, summed):
        return cell_sums(s[c], y[c], groups[c], 3, G, summed=summed)

    first, *rest = chunks
    # In place, as every source merges: the chunk at row 0 summed, the others rows.
    total = part(first, True)
    for c in rest:
        total += part(c, False)
    _assert_identical(total, want)
    # Not in place, and rows first (a merge that does not start at row 0).
    added = reduce(lambda a, b: a + b, [part(c, False) for c in chunks])
    if isinstance(added, CellRows):
        added = added.summed()
    _assert_identical(added, want)
    if rest:
        copy = part(first, True)
        before = copy.count.copy()
        _assert_identical(reduce(lambda a, b: a + part(b, False), rest, copy), want)
        assert np.array_equal(copy.count, before)  # `+` left its operand alone
    assert np.array_equal(s, s_before) and np.array_equal(y, y_before)


def test_rows_with_float_labels():
    s, y, groups = _data(seed=1)
    want = _loop(s, y, groups, 3)
    total = cell_sums(s[:1000], y[:1000].astype(float), groups[:1000], 3, G)
    total += cell_sums(
        s[1000:], y[1000:].astype(float), groups[1000:], 3, G, summed=False
    )
    for name, value in want.items():
        assert np.array_equal(getattr(total, name), value), name


def test_rows_are_not_added_into_arrays_they_cannot_write_through():
    s, y, groups = _data(n=200)
    rows = cell_sums(s, y, groups, 3, G, summed=False)
    zeros = CellSums.zeros(3, G)
    strided = CellSums(*(np.zeros((3, 2 * G))[:, ::2] for _ in range(4)))
    with pytest.raises(ValueError, match="C-contiguous"):
        rows.add_to(strided)
    assert not strided.count.any()
    zeros += rows
    assert zeros.count.sum() == np.count_nonzero(groups >= 0)


@dataclass(frozen=True)
class _Watched:
    """An ``NWGrid`` that records, in ``seen``, whether pass 1's sums were still
    alive when pass 2 began."""

    grid: NWGrid
    seen: list

    def __getattr__(self, name):
        return getattr(self.grid, name)

    def plan(self, sums, design, thresholds):
        self.seen.append(weakref.ref(sums))
        return self.grid.plan(sums, design, thresholds)

    def second_pass(self, plan, *args):
        gc.collect()
        self.seen.append(self.seen[0]() is None)
        return self.grid.second_pass(plan, *args)


@pytest.mark.parametrize("noise", ["worst_case", "adaptive"])
def test_the_driver_drops_pass_one_sums_before_pass_two(noise):
    rng = np.random.default_rng(2)
    s = rng.random(4000)
    y = (rng.random(4000) < s).astype(float)
    grid = NWGrid(b1=2.0, b2=4.0, n_samples=4000, noise=noise, h=0.05)
    seen = []
    fit = run(_Watched(grid, seen), ArraySource(s, y), GroupDesign.partition(3, seed=0))
    assert seen[1:] == [True]  # one chunk, and its sums were gone
    assert fit.n_samples == 4000 and fit.n_positive == int(y.sum())
