"""The two passes over the rows that every grid bound makes, written once.

Pass 1 reads every chunk into the model's per-cell sums of each group of rows
(mergeable by addition), keeping the ``cap`` smallest subsample keys of each group
when the model evaluates a subsample of each validation group; the model plans from
the sums; pass 2 reads every chunk into the plan's per-split sums; the model
finishes every split. Group ids and subsample keys are drawn here from
``(key_seed, row index)``, so that the surrogates never see the splitting code.
"""

import functools
from dataclasses import dataclass

import numpy as np

from ._splitting import SUBSAMPLE_STREAM, row_keys

_NO_THRESHOLD = np.iinfo(np.uint64).max


def _smallest(keys, cap):
    """The ``cap`` smallest of ``keys`` (all of them if there are fewer)."""
    if keys.shape[0] > cap:
        keys = np.partition(keys, cap - 1)[:cap]
    return keys


@dataclass
class _FirstPass:
    """Pass 1's mergeable result: the model's sums and, with a subsample, the ``cap``
    smallest row keys of every group."""

    sums: object
    keys: list = None
    cap: int = None

    def _merged_keys(self, other):
        if self.keys is None:
            return None
        return [
            _smallest(np.concatenate((a, b)), self.cap)
            for a, b in zip(self.keys, other.keys)
        ]

    def __add__(self, other):
        return _FirstPass(self.sums + other.sums, self._merged_keys(other), self.cap)

    def __iadd__(self, other):
        self.keys = self._merged_keys(other)
        self.sums += other.sums
        return self


def _first_pass(model, design, key_seed, cap, check, chunk):
    if check is not None:
        check(chunk.scores)
    groups = design.groups(chunk.start, chunk.n)
    # The chunk at row 0 starts the running total (every source merges in row
    # order); the others may wait unsummed, to be summed into it.
    sums = model.first_pass(
        chunk.scores, chunk.labels, groups, design.n_groups, summed=chunk.start == 0
    )
    keys = None
    if cap is not None:
        k = row_keys(key_seed, chunk.start, chunk.n, SUBSAMPLE_STREAM)
        keys = [_smallest(k[groups == g], cap) for g in range(design.n_groups)]
    return _FirstPass(sums, keys, cap)


def _second_pass(model, plan, design, key_seed, chunk):
    groups = design.groups(chunk.start, chunk.n)
    keys = None
    if key_seed is not None:
        keys = row_keys(key_seed, chunk.start, chunk.n, SUBSAMPLE_STREAM)
    return model.second_pass(plan, chunk.scores, chunk.labels, groups, keys)


def _thresholds(keys, design, group_sizes, cap):
    """Per split, the largest subsample key evaluated (``None``: no group is over the
    cap, every row is evaluated)."""
    if keys is None:
        return None
    out = np.full(len(design.splits), _NO_THRESHOLD, dtype=np.uint64)
    for k, (validation, _) in enumerate(design.splits):
        if group_sizes[validation] > cap:
            out[k] = np.partition(keys[validation], cap - 1)[cap - 1]
    return out if (out < _NO_THRESHOLD).any() else None


def run(model, source, design, *, key_seed=None, check=None, check_counts=None):
    """Both passes of ``design`` (``_splitting.GroupDesign``) over ``source``
    (``_chunks``) for ``model`` (a grid surrogate's frozen model, e.g.
    ``NWGrid``); returns ``model.finish(...)``.

    The model states ``validation_cap(n_samples)`` (evaluated validation rows per
    split, ``None`` for all; ``n_samples=None``: the largest it can be), and has
    ``first_pass(scores, labels, groups, n_groups, summed)`` (mergeable sums;
    ``summed=False``: or a form summed when added into a running total),
    ``counts(sums)`` (rows per group and cell), ``plan(sums, design, thresholds)``
    (which keeps what ``finish`` reads of the sums),
    ``second_pass(plan, scores, labels, groups, keys)`` (mergeable, or ``None``
    for no rows) and ``finish(plan, second, design)``. ``check`` is called on
    every chunk's scores in pass 1 and ``check_counts`` on the cell counts of all
    rows after it (the tie check of ``h``).
    """
    cap = model.validation_cap(None)
    first = source.map_reduce(
        functools.partial(_first_pass, model, design, key_seed, cap, check)
    )
    counts = model.counts(first.sums)
    if check_counts is not None:
        check_counts(counts.sum(axis=0))
    group_sizes = counts.sum(axis=1)
    n_samples = int(round(float(group_sizes.sum())))
    thresholds = None
    if cap is not None:
        thresholds = _thresholds(
            first.keys, design, group_sizes, model.validation_cap(n_samples)
        )
    plan = model.plan(first.sums, design, thresholds)
    # Pass 1's sums, per group and fine cell, are the largest arrays of a fit and
    # are not read after the plan: not held while pass 2 holds its own.
    del first, counts
    second = source.map_reduce(
        functools.partial(
            _second_pass,
            model,
            plan,
            design,
            None if thresholds is None else key_seed,
        )
    )
    return model.finish(plan, second, design)
