"""The (candidate, cell) pairs whose sums do not follow from the cell's moments.

On a cell whose ``s - eta_hat`` keeps one sign and whose ``g`` stays below 1 with
small terms (or at least 1 everywhere), the sums of a split follow from per-cell
query moments; the other pairs are *flagged* and summed point by point in pass 2.
"""

import numpy as np

from ._table import candidate_blocks

# A cell's sums of g and g**2 come from its moments only while the terms of g stay
# below this; 64 keeps ~12 digits in the sum of g**2.
EXPANDED_SCALE = 64.0


def clipped_mask(b, c, n_cells):
    """``g >= 1`` on the whole cell: ``c - |b| / (2K) >= 1``."""
    return c - np.abs(b) * (0.5 / n_cells) >= 1.0


def flag_mask(prep, eta, a, b, c):
    """Per (candidate, evaluated cell) (arrays of shape ``(n_rows, n_cells)``):
    ``eta_hat`` inside the cell, or ``g`` neither clipped on the whole cell nor below
    1 with terms small enough to expand."""
    half = 0.5 / prep.n_cells
    crossing = np.abs(prep.centre - eta) < half
    b_half = b * half
    g_max = np.maximum(a * prep.d_lo - b_half, a * prep.d_hi + b_half) + c
    scale = np.maximum(a * prep.d_max, np.maximum(np.abs(c), np.abs(b) * half))
    expanded = (g_max <= 1.0) & (scale <= EXPANDED_SCALE)
    expanded |= clipped_mask(b, c, prep.n_cells)
    return crossing | ~expanded


def flagged_pairs(table):
    """The flagged ``(candidate, position)`` pairs of ``table`` (positions among its
    evaluated cells), sorted by both."""
    prep = table.prep
    owners, positions = [], []
    for rows in candidate_blocks(table.n_candidates, prep.cells.shape[0]):
        _, eta, a, b, c, _ = table.terms(rows)
        with np.errstate(over="ignore", invalid="ignore"):
            row, pos = np.nonzero(flag_mask(prep, eta, a, b, c))
        owners.append(row + rows.start)
        positions.append(pos)
    empty = np.empty(0, dtype=np.intp)
    return np.concatenate([empty, *owners]), np.concatenate([empty, *positions])
