"""The (candidate, cell) pairs whose sums do not follow from the cell's moments.

On a cell whose ``s - eta_hat`` keeps one sign and whose ``g`` stays below 1 with
small terms (or at least 1 everywhere), the sums of a split follow from per-cell
query moments; the other pairs are *flagged* and summed point by point in pass 2.
A bucket of width ``1 / B`` has ``g <= L / B + 1 / (2 sqrt(n_b))`` everywhere: below
that margin only the cells holding its ``eta_hat`` are flagged.
"""

import numpy as np

from ._table import candidate_blocks

# A cell's sums of g and g**2 come from its moments only while the terms of g stay
# below this; 64 keeps ~12 digits in the sum of g**2.
EXPANDED_SCALE = 64.0
# A bucket whose bound on g stays below this keeps g below 1 with room for rounding.
_BELOW_ONE = 0.999


def clipped_mask(b, c, n_cells):
    """``g >= 1`` on the whole cell: ``c - |b| / (2K) >= 1``."""
    return c - np.abs(b) * (0.5 / n_cells) >= 1.0


def flag_mask(prep, pos, eta, a, b, c):
    """Per pair at the evaluated cells ``pos``: ``eta_hat`` inside the cell, or ``g``
    neither clipped on the whole cell nor below 1 with terms small enough to
    expand."""
    half = 0.5 / prep.n_cells
    crossing = np.abs(prep.centre[pos] - eta) < half
    b_half = b * half
    g_max = np.maximum(a * prep.d_lo[pos] - b_half, a * prep.d_hi[pos] + b_half) + c
    scale = np.maximum(a * prep.d_max[pos], np.maximum(np.abs(c), np.abs(b) * half))
    expanded = (g_max <= 1.0) & (scale <= EXPANDED_SCALE)
    expanded |= clipped_mask(b, c, prep.n_cells)
    return crossing | ~expanded


def _crossings(table):
    """``(candidate, position)`` of the evaluated cells holding their bucket's
    ``eta_hat`` (within half a cell of the centre): near ``eta_hat``'s cell."""
    prep = table.prep
    K = prep.n_cells
    held = np.flatnonzero(table.runs > 0)
    eta = table.values(held)[5]
    near = np.minimum((eta * K).astype(np.intp), K - 1)
    owners, positions = [], []
    for c in (near - 1, near, near + 1):
        at = np.flatnonzero((c >= table.start[held]) & (c < table.end[held]))
        pos = prep.index[c[at]]
        at, pos = at[pos >= 0], pos[pos >= 0]
        keep = np.abs(prep.centre[pos] - eta[at]) < 0.5 / K
        owners.append(table.owner[held[at[keep]]])
        positions.append(pos[keep])
    return np.concatenate(owners), np.concatenate(positions)


def _reaching(table):
    """The candidates with a bucket (holding evaluated cells) where ``g`` may reach 1:
    ``L / B + 1 / (2 sqrt(n_b)) > 0.999``."""
    with np.errstate(divide="ignore"):
        bound = table.L / table.B[table.owner] + 0.5 / np.sqrt(table.n_b(slice(None)))
    return np.unique(table.owner[(bound > _BELOW_ONE) & (table.runs > 0)])


def flagged_pairs(table):
    """The flagged ``(candidate, position)`` pairs of ``table`` (positions among its
    evaluated cells), sorted by both: the cells holding ``eta_hat``, and every cell
    of the candidates where ``g`` may reach 1 tested one by one."""
    prep = table.prep
    m = max(prep.cells.shape[0], 1)
    owner, pos = _crossings(table)
    keys = [owner * m + pos]
    reaching = _reaching(table)
    for rows in candidate_blocks(reaching.shape[0], prep.cells.shape[0]):
        candidates = reaching[rows]
        _, eta, a, b, c, _ = table.terms(candidates)
        with np.errstate(over="ignore", invalid="ignore"):
            row, pos = np.nonzero(flag_mask(prep, slice(None), eta, a, b, c))
        keys.append(candidates[row] * m + pos)
    key = np.unique(np.concatenate(keys))
    return key // m, key % m
