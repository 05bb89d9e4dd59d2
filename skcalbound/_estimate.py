"""The point estimate of the calibration error (``estimate_``): not certified.

A cross-fitted, sign-pooled binned estimate of ``CE = E|s - eta(s)|`` from mergeable
per-cell sums (:class:`EstimateCells`), the same number in memory, in chunks and on
Dask, whichever bound is fitted: bins of about ``n / B`` rows with
``B = round((2/3) n ** (1/3))``; on one random half of the rows the TV-denoised bin
means cut the bins into runs of one sign, on the other half the runs' ``|sum(y - s)|``
are added, and the halves swap. It can fall outside the certified interval. The
derivation: ``docs/internals/core.rst``.
"""

from dataclasses import dataclass

import numpy as np

from ._surrogates._tv import _tv1_1d
from ._warnings import AUROC_CELLS

# Cells of the fixed grid of the per-cell sums: a power of two, so that
# ``floor(s * G)`` is exact. 3 MB of sums per chunk. The grid of the below-chance
# check, which ``fit`` reads from these sums.
ESTIMATE_CELLS = AUROC_CELLS
# The TV weight in units of the noise walk, and the bins in units of n ** (1/3).
_TV_SCALE = 1.0
_BINS_SCALE = 2.0 / 3.0


@dataclass
class EstimateCells:
    """Per (half, cell): ``count``, ``sum_s`` (scores), ``sum_y`` (labels 0/1); each of
    shape ``(2, ESTIMATE_CELLS)``. Merged by addition."""

    count: np.ndarray
    sum_s: np.ndarray
    sum_y: np.ndarray

    def __add__(self, other):
        return EstimateCells(
            self.count + other.count,
            self.sum_s + other.sum_s,
            self.sum_y + other.sum_y,
        )

    def __iadd__(self, other):
        self.count += other.count
        self.sum_s += other.sum_s
        self.sum_y += other.sum_y
        return self

    def by_label(self):
        """``(negatives, positives)`` per cell, both halves."""
        positive = self.sum_y.sum(axis=0)
        return self.count.sum(axis=0) - positive, positive


def estimate_cells(scores, labels, halves):
    """The :class:`EstimateCells` of validated ``scores`` in [0, 1], 0/1 ``labels``
    and ``halves`` in {0, 1} (inputs are assumed validated)."""
    G = ESTIMATE_CELLS
    key = np.minimum((scores * G).astype(np.intp), G - 1)
    key += G * np.asarray(halves, dtype=np.intp)

    def per_cell(weights):
        return np.bincount(key, weights=weights, minlength=2 * G).reshape(2, G)

    return EstimateCells(
        per_cell(None).astype(np.float64), per_cell(scores), per_cell(labels)
    )


def n_estimate_bins(n):
    """The number of bins for ``n`` rows: ``round((2/3) n ** (1/3))``, at least 1."""
    return max(1, int(round(_BINS_SCALE * n ** (1.0 / 3.0))))


def equal_count_bins(count, n_bins):
    """Bin of each cell: consecutive cells, about ``sum(count) / n_bins`` rows a bin
    (cell ``c`` goes to bin ``floor(rows before c * n_bins / n)``)."""
    n = count.sum()
    before = np.cumsum(count) - count
    return np.minimum((before * n_bins / n).astype(np.intp), n_bins - 1)


def _runs(n, s, y):
    """Run of each bin from one half's bin sums ``(n, s, y)``: signs of the TV fit of
    the bin means, the bins beside a sign change kept single. A bin without rows in
    this half takes the sign of the filled bin before it (after it, at the start)."""
    filled = np.flatnonzero(n > 0)
    if filled.shape[0] == 0:
        return np.zeros(n.shape[0], dtype=np.intp)
    count = n[filled]
    mean = (y[filled] - s[filled]) / count
    ybar = y[filled] / count
    # lambda: the root mean square standard error of the filled bins times
    # sqrt(their number), the size of a pure-noise walk over them.
    var = ybar * (1.0 - ybar) / count
    lam = _TV_SCALE * np.sqrt(np.mean(var) * filled.shape[0])
    # The exact 1-D TV prox (prox-tv's taut string, as the TV bound uses).
    fit = _tv1_1d(np.ascontiguousarray(mean), float(lam), None)
    owner = np.searchsorted(filled, np.arange(n.shape[0]), side="right") - 1
    sign = np.sign(fit)[np.maximum(owner, 0)]
    change = sign[1:] != sign[:-1]
    cut = change.copy()
    cut[:-1] |= change[1:]
    cut[1:] |= change[:-1]
    return np.concatenate(([0], np.cumsum(cut)))


def calibration_estimate(cells):
    """The cross-fitted sign-pooled binned estimate of ``CE`` from
    :class:`EstimateCells` (see the module docstring), or ``nan`` without rows."""
    total = cells.count.sum(axis=0)
    n = total.sum()
    if n == 0:
        return float("nan")
    n_bins = n_estimate_bins(n)
    # The cells with rows only: the same sums (an empty cell adds zeros), without
    # passes over the whole grid for a few hundred rows.
    occupied = np.flatnonzero(total)
    bins = equal_count_bins(total[occupied], n_bins)

    def per_bin(a, half):
        return np.bincount(bins, weights=a[half, occupied], minlength=n_bins)

    sums = [
        tuple(per_bin(a, h) for a in (cells.count, cells.sum_s, cells.sum_y))
        for h in (0, 1)
    ]
    parts = []
    for signs_from, measured in ((0, 1), (1, 0)):
        runs = _runs(*sums[signs_from])
        count, s, y = (
            np.bincount(runs, weights=a, minlength=runs[-1] + 1) for a in sums[measured]
        )
        if count.sum() > 0:
            parts.append(np.abs(y - s).sum() / count.sum())
    return float(np.mean(parts))
