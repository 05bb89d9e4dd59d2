"""Finishing one split: every candidate's sums from the cell moments, the flagged
pairs' point-by-point sums and the kept queries of empty cells."""

from typing import NamedTuple

import numpy as np

from .._cells import bin_of, cell_offsets
from ._flags import clipped_mask
from ._table import BucketTable, Prepared, candidate_blocks


class CandidateSums(NamedTuple):
    """One candidate's statistics on one split's validation rows."""

    n: float  #: evaluated validation rows
    sum_r: float  #: sum of ``r = |s - eta_hat(s)|``
    sum_r2: float  #: sum of ``r**2``
    sum_g: float  #: sum of ``min(g, 1)``
    sum_g2: object  #: sum of ``min(g, 1)**2`` (None if not computed)
    n_fallback: int  #: queries whose bucket had no training score
    c2: object  #: ``C2 = sum_b (n'_b / n)**2 / n_b`` (None if not computed)


def _moment_totals(table, x, flagged, squares):
    """Per candidate, the sums over the evaluated cells not ``flagged`` (a mask of
    shape ``(n_candidates, n_cells)``) of ``|x_e + x_n d|``, ``x_e2 + 2 d x_e + x_n
    d**2`` (``d = c_centre - eta_hat``), ``min(g, 1)`` and (with ``squares``) its
    square from the cell moments ``x``: on such a cell ``s - eta_hat`` keeps its sign
    and ``g <= 1`` (its sums expand) or ``g >= 1`` (every query counts 1)."""
    prep = table.prep
    x_n, x_e, x_e2, x_D = x[:4]
    totals = np.full((table.n_candidates, 4), np.nan)
    for rows in candidate_blocks(table.n_candidates, prep.cells.shape[0]):
        _, eta, a, b, c, _ = table.terms(rows)
        with np.errstate(over="ignore", invalid="ignore"):
            d = prep.centre - eta
            parts = [
                np.abs(x_e + x_n * d),
                x_e2 + d * (2.0 * x_e) + (x_n * d) * d,
                a * x_D + b * x_e + c * x_n,
            ]
            if squares:
                x_D2, x_De = x[4:]
                # a * (a * x), not a**2 * x: alpha can be huge where every D is 0.
                parts.append(
                    a * (a * x_D2)
                    + b * (b * x_e2)
                    + (c * c) * x_n
                    + (
                        a * (b * (2.0 * x_De))
                        + a * (c * (2.0 * x_D))
                        + b * (c * (2.0 * x_e))
                    )
                )
            clipped = clipped_mask(b, c, prep.n_cells)
        for part in parts[2:]:
            np.copyto(part, np.broadcast_to(x_n, part.shape), where=clipped)
        for k, part in enumerate(parts):
            part[flagged[rows]] = 0.0  # summed point by point (may overflow here)
            totals[rows, k] = part.sum(axis=1)
    return totals


def _served(table, x_n, flagged):
    """Per bucket of the table, the queries of the evaluated cells not flagged."""
    prep = table.prep
    out = np.zeros(table.bounds[-1])
    for rows in candidate_blocks(table.n_candidates, prep.cells.shape[0]):
        owner = np.arange(rows.start, rows.stop)[:, None]
        bucket = table.bucket_index(owner, prep.cells)
        weights = np.where(flagged[rows], 0.0, x_n)
        out += np.bincount(bucket.ravel(), weights.ravel(), minlength=out.shape[0])
    return out


def _kept_sums(table, training, kept, squares, served):
    """Per candidate ``(sum r, sum r**2, sum min(g, 1), its square, n_fallback)`` of
    the queries ``kept`` in cells without training points (``D = 0``), falling back
    to the nearest training score's bucket; ``served`` (or None) counts them."""
    prep = table.prep
    K, nc = prep.n_cells, table.n_candidates
    out = np.zeros((5, nc))
    if not kept.shape[0]:
        return out
    c = bin_of(kept, K)
    e = cell_offsets(kept, c, K)
    s2 = [x[c] + x[c + 1] for x in (prep.cN, prep.cM, prep.cT)]
    mid = training.midpoints(c)
    for rows in candidate_blocks(nc, kept.shape[0]):
        owner = np.arange(rows.start, rows.stop)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            G, eta, _, beta, gamma, n_b = table.terms_at(owner, c, s2)
        row, query = np.nonzero(n_b <= 0)
        if row.size:
            values = table.fall_back(
                row + rows.start, c[query], kept[query], mid[query]
            )
            bucket, eta_f, _, beta_f, gamma_f = values
            for array, value in zip(
                (G, eta, beta, gamma), (bucket, eta_f, beta_f, gamma_f)
            ):
                array[row, query] = value
        r = np.abs(kept - eta)
        g = np.minimum(beta * e + gamma, 1.0)
        out[0, rows] = r.sum(axis=1)
        out[1, rows] = (r * r).sum(axis=1)
        out[2, rows] = g.sum(axis=1)
        if squares:
            out[3, rows] = (g * g).sum(axis=1)
        out[4, rows] = np.count_nonzero(n_b <= 0, axis=1)
        if served is not None:
            served += np.bincount(G.ravel(), minlength=served.shape[0])
    return out


def finish_split(plan, s, sums, training):
    """Per candidate of the grid, the :class:`CandidateSums` of split ``s``
    (``training`` with its extremes)."""
    nc = len(plan.candidates)
    occupied = np.flatnonzero(training.count > 0)
    base = plan.slot_base[s]
    moments = np.stack([m[base : base + occupied.shape[0]] for m in sums.moments])
    # Cells with queries and training points: their sums come from the moments,
    # except at the flagged pairs.
    at = np.flatnonzero(moments[0] > 0)
    prep = Prepared(training, occupied[at])
    table = BucketTable(prep, plan.candidates, plan.n_shifts, plan.L)
    x = moments[:, at]
    f_owner, f_cells = plan.flagged[s]
    f_pos = prep.index[f_cells]
    keep = f_pos >= 0
    flagged = np.zeros((nc, at.shape[0]), dtype=bool)
    flagged[f_owner[keep], f_pos[keep]] = True
    totals = _moment_totals(table, x, flagged, plan.squares)
    n_moments = np.where(flagged, 0.0, x[0]).sum(axis=1)
    served = None
    if plan.c2:
        served = _served(table, x[0], flagged)
        size = table.bounds[-1]
        lo, hi = np.searchsorted(plan.served_keys, [s * size, (s + 1) * size])
        keys = plan.served_keys[lo:hi] - s * size
        served[keys] += sums.served[lo:hi]
    kept = sums.kept[0][sums.kept[1] == s]
    k_sums = _kept_sums(table, training, kept, plan.squares, served)
    pointwise = sums.pointwise[:, s * nc : (s + 1) * nc]
    n = pointwise[0] + n_moments + kept.shape[0]
    sum_r, sum_r2, sum_g, sum_g2 = (
        pointwise[k + 1] + totals[:, k] + k_sums[k] for k in range(4)
    )
    c2 = [None] * nc
    if plan.c2:
        with np.errstate(divide="ignore", invalid="ignore"):
            part = np.where(served > 0, served * served / table.n_b(slice(None)), 0.0)
            c2 = np.where(
                n > 0, np.add.reduceat(part, table.bounds[:-1]) / (n * n), 0.0
            )
        c2 = c2.tolist()
    sum_g2 = sum_g2.tolist() if plan.squares else [None] * nc
    return [
        CandidateSums(float(a), float(b), float(c), float(d), e, int(f), g)
        for a, b, c, d, e, f, g in zip(n, sum_r, sum_r2, sum_g, sum_g2, k_sums[4], c2)
    ]
