"""SPEC 13 on the grid: one fold's :class:`~._adaptive.AdaptiveStatistics` from sums
that merge by addition.

:class:`FoldContext` holds what is known before pass 2, per query cell: the pilot's
smoother and noise, and the bias bounds at their suprema over the cell
(:func:`cell_bias`). Every query of a cell then shares its bias branch, so the
statistics need only per-cell sums of the queries, and ``|s - eta_hat|`` row by row in
the few cells that ``eta_hat`` crosses (:func:`row_sums`); :func:`finish` convolves
the per-cell sums back onto the training cells. See ``docs/internals/nw.rst``.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._cells import bin_of, cell_offsets, occupied_neighbours
from ._adaptive import (
    AdaptiveStatistics,
    Majorant,
    _means,
    _psi,
    _rows,
    branches,
    dot,
)
from ._kernel import _conv, bin_centres, kernel
from ._sums import crossing


def default_pilot(validation, n_bins, bandwidth, tempering):
    """SPEC 13's default pilot per training cell: the kernel average of the fold's
    validation labels (``validation``: their count and positives per cell of the
    ``n_bins`` grid, each counted at its cell's centre) at twice ``bandwidth`` (capped
    at 1/2), plus one pseudo-observation of weight ``ker(0) = 1`` at the cell centre,
    clipped to ``[1e-4, 1 - 1e-4]``."""
    _, ker = kernel(n_bins, min(2.0 * bandwidth, 0.5), tempering)
    positives = _conv(validation.positives, ker)
    count = _conv(validation.count, ker)
    pilot = (positives + bin_centres(n_bins)) / (count + 1.0)
    return np.clip(pilot, 1e-4, 1.0 - 1e-4)


def cell_bias(tables, count, b1, b2, h=None):
    """SPEC 13's ``Babs`` and, in h-mode, ``R`` (NaN where undefined) of every query
    cell of ``tables``, each at its supremum over the queries ``s`` of the cell
    (``count``: training points per cell).

    An upper bound on a query's bias bound is a bias bound (Corollary 4 holds for
    any ``rho`` above the one it defines), and as a function of the query's cell it
    is a function of its score: the bias of a cell's queries is bounded by one
    ``Babs`` and one ``R``. Per cell ``[l, l + w]``: ``|m1(s)| = |m1_c - (s - c)|``
    is at most ``|m1_c| + w / 2`` and ``M2 = var + m1**2`` at most ``var + (|m1_c|
    + w / 2)**2``; ``d(s)`` at most the distance from the cell's far edge to the far
    edge of the farthest occupied training cell within the kernel; ``kappa1 = A +
    B`` (concave, symmetric about 1/2) at its value at the point of the cell nearest
    1/2; ``A(s + d)`` at ``s = l + w`` and ``B(s - d)`` at ``s = l`` (``A`` rises,
    ``B`` falls); ``kappa_bar`` and ``psi`` rise with them."""
    G = tables.n_bins
    width = 1.0 / G
    left = np.arange(G) * width
    right = left + width
    with np.errstate(invalid="ignore"):
        m1 = np.abs(tables.m1) + 0.5 * width
        M2 = tables.var + m1 * m1
    # The first and last occupied training cells within the kernel's reach (where
    # there is none, the cell falls back to the nearest training scores and reads
    # none of this).
    reach = int(np.flatnonzero(tables.ker).max()) - (tables.ker.shape[0] - 1) // 2
    below, above = occupied_neighbours(count)
    idx = np.arange(G)
    first = above[np.maximum(idx - reach, 0)]
    last = below[np.minimum(idx + reach, G - 1)]
    d = np.maximum(right - first * width, (last + 1) * width - left)
    b1_v = b1
    R = np.full(G, np.nan)
    if h is not None:

        def A(x):  # A(x) = tanh(x / h) / h, B(x) = A(1 - x)
            return np.tanh(x / h) / h

        peak = np.clip(0.5, left, right)
        kappa1 = A(peak) + A(1.0 - peak)
        b1_v = np.minimum(b1, kappa1 / 4.0)
        a = A(np.minimum(right + d, 1.0))
        b = A(1.0 - np.maximum(left - d, 0.0))
        kappa_bar = 2.0 * (np.maximum(a, b) + 0.5 * np.minimum(a, b)) ** 2
        with np.errstate(invalid="ignore", over="ignore"):
            rho = kappa1 * m1 + kappa_bar * _psi((a + b) * d) * M2
            R = rho / (1.0 - rho)
        R[~(rho < 0.5)] = np.nan
    with np.errstate(invalid="ignore"):
        babs = np.minimum(1.0, b1_v * m1 + 0.5 * b2 * M2)
    return babs, R


def _cell_majorant(gamma, count, positives, constant, cap=math.inf):
    """:meth:`Majorant.of` for a supergradient constant over each training cell
    (``count`` points, ``positives`` of them labelled 1)."""
    plus, minus = np.maximum(gamma, 0.0), np.maximum(-gamma, 0.0)
    return Majorant(
        constant=float(constant),
        negative=float(dot(count, minus)),
        observed=float(dot(plus, positives) + dot(minus, count - positives)),
        largest=float(np.abs(gamma[count > 0]).max(initial=0.0)),
        cap=float(cap),
    )


def _inverse(A0):
    """``1 / A0``, 0 at the fallback cells (``A0 == 0``)."""
    return np.where(A0 > 0.0, 1.0 / np.where(A0 > 0.0, A0, 1.0), 0.0)


@dataclass(frozen=True)
class FoldContext:
    """What pass 2 and :func:`finish` need of one fold, per cell of its table grid:
    the smoother's ``tables``, the training ``train`` sums, the ``pilot`` per
    training cell, its smoother ``eta0`` and noise ``noise0`` per query cell, the
    bias bounds ``babs`` and ``R`` per query cell (:func:`cell_bias`), which cells
    ``eta_hat`` crosses (``crossing``), and the derivative bounds (``h``: h-mode)."""

    tables: object
    train: object
    pilot: np.ndarray
    eta0: np.ndarray
    noise0: np.ndarray
    babs: np.ndarray
    R: np.ndarray
    crossing: np.ndarray
    b1: float
    b2: float
    h: float = None

    @classmethod
    def of(cls, tables, train, pilot, b1, b2, h=None):
        """From the tables, the training sums and the pilot per training cell."""
        ker = tables.ker
        inv = _inverse(tables.A0)
        count = train.count
        eta0 = _conv(count * pilot, ker) * inv
        noise0 = np.sqrt(_conv(count * pilot * (1.0 - pilot), ker * ker)) * inv
        babs, R = cell_bias(tables, count, b1, b2, h)
        crosses = crossing(tables) & (tables.A0 > 0.0)
        return cls(tables, train, pilot, eta0, noise0, babs, R, crosses, b1, b2, h)


@dataclass
class AdaptiveSums:
    """Pass 2's mergeable result for one fold, per query cell (``cells``, shape ``(4,
    G)``): the count of the evaluated kernel queries and the sums of their offsets
    ``t = s - c`` from the cell centre and of ``t**2`` (zero when pass 1 counted
    them: :func:`finish`'s ``counted``), and the sum of ``|s - eta_hat|`` over the
    queries in crossing cells; and the fallback queries' scores (finished at the
    end)."""

    cells: np.ndarray
    fallback: np.ndarray

    def __add__(self, other):
        return AdaptiveSums(
            self.cells + other.cells, np.concatenate((self.fallback, other.fallback))
        )


def row_sums(context, s, counted=False):
    """Pass 2 on one chunk of evaluated validation scores ``s`` of one fold
    (``counted``: their counts and offset sums are pass 1's, not summed here)."""
    t = context.tables
    G = t.n_bins
    q = bin_of(s, G)
    kept = t.A0[q] > 0.0
    fallback = s[~kept]
    if fallback.size:
        s, q = s[kept], q[kept]
    cells = np.zeros((4, G))
    if not counted:
        offsets = cell_offsets(s, q, G)
        cells[0] = np.bincount(q, minlength=G)
        cells[1] = np.bincount(q, weights=offsets, minlength=G)
        cells[2] = np.bincount(q, weights=np.square(offsets, out=offsets), minlength=G)
    cross = np.flatnonzero(context.crossing[q])
    if cross.size:
        q = q[cross]
        r = np.abs(s[cross] - t.eta[q])
        cells[3] = np.bincount(q, weights=r, minlength=G)
    return AdaptiveSums(cells, fallback)


def cell_rows(context, cells):
    """The sums of :func:`~._adaptive._rows` over the kernel queries of a fold and
    its per-cell sums ``(count, sum f, sum f**2, count inside min(1, .), sum
    sign(1/2 - eta0) R over the active relative pieces)``, from ``cells`` (the
    kernel queries' count, sums of ``t`` and ``t**2``, and of ``|s - eta_hat|`` in
    the crossing cells). Per cell, ``r = |t - D|`` with ``D = eta_hat - c``:
    ``sum r**2 = sum t**2 - 2 D sum t + N D**2``, and outside a crossing cell
    ``t - D`` keeps the sign of ``-D``, so ``sum r = N |D| - sign(D) sum t``."""
    t = context.tables
    G = t.n_bins
    count, s1, s2, r_crossing = cells
    used = np.flatnonzero(count > 0)
    n, t1, t2 = count[used], s1[used], s2[used]
    centre = bin_centres(G)[used]
    eta = t.eta[used]
    D = eta - centre
    r2 = t2 - 2.0 * D * t1 + n * D * D
    r1 = np.where(
        context.crossing[used], r_crossing[used], n * np.abs(D) - np.sign(D) * t1
    )
    babs, R, eta0 = context.babs[used], context.R[used], context.eta0[used]
    b = branches(centre, babs, R, eta, eta0, context.noise0[used])
    bias = b["bias"]
    totals = np.array(
        [
            n.sum(),
            r1.sum(),
            r2.sum(),
            dot(n, bias),
            (r2 + bias * (2.0 * r1 + n * bias)).sum(),
            dot(n, np.minimum(1.0, babs + 0.5 * np.sqrt(t.W2[used]))),
            dot(n, b["bhat"] * b["bhat"]),
            dot(n, b["relative"].astype(np.float64)),
            dot(n, np.minimum(1.0, b["bias0"])),
        ],
        dtype=np.float64,
    )
    per_cell = np.zeros((5, G))
    per_cell[:, used] = [
        n,
        n * b["f"],
        n * b["f"] * b["f"],
        n * b["inside"],
        n * np.where(b["active"], R, 0.0) * np.sign(0.5 - eta0),
    ]
    return totals, per_cell


def _fallback(context, nearest, fb, n):
    """The fallback queries ``fb`` (``nearest``: ``Smoother.nearest``): their
    :func:`_rows` arrays and sums, and per training score they weigh (``blocks``: its
    score, count and positives) the extra ``c``, ``e`` and ``gamma`` they give each of
    its points (``c' = c`` there: no relative branch at a fallback query)."""
    G, pilot = context.tables.n_bins, context.pilot
    d, sides = nearest(fb)
    used = [
        (use, np.where(use, v, 0.5), np.where(use, c, 0.0), p) for use, v, c, p in sides
    ]
    C = sum(c for _, _, c, _ in used)
    pilots = [pilot[bin_of(v, G)] for _, v, _, _ in used]
    noise = np.sqrt(sum(c * x * (1 - x) for (_, _, c, _), x in zip(used, pilots))) / C
    rows, totals = _rows(
        fb,
        sum(c * (v - fb) for _, v, c, _ in used) / C,
        sum(c * (v - fb) ** 2 for _, v, c, _ in used) / C,
        np.sqrt(1.0 / C),
        d,
        sum(np.where(use, p, 0.0) for use, _, _, p in used) / C,
        sum(c * x for (_, _, c, _), x in zip(used, pilots)) / C,
        noise,
        context.b1,
        context.b2,
        context.h,
        np.ones(fb.shape[0], dtype=bool),
    )
    inside = rows["inside"]
    parts = [
        (
            v[use],
            count[use],
            p[use],
            np.stack(
                [
                    1.0 / (n * C[use]),
                    1.0 / (n * C[use] ** 2),
                    np.where(inside, (1 - 2 * x) / (2 * n * C**2 * noise), 0.0)[use],
                ]
            ),
        )
        for (use, v, count, p), x in zip(used, pilots)
    ]
    values = np.concatenate([part[0] for part in parts])
    unique, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    extra = np.stack(
        [
            np.bincount(inverse.reshape(-1), weights=w, minlength=unique.size)
            for w in np.concatenate([part[3] for part in parts], axis=1)
        ]
    )
    blocks = (
        unique,
        np.concatenate([part[1] for part in parts])[first],
        np.concatenate([part[2] for part in parts])[first],
    )
    return totals, blocks, extra


def finish(context, sums, nearest=None, counted=None):
    """The fold's :class:`AdaptiveStatistics` from its merged :class:`AdaptiveSums`;
    ``counted`` (a ``BinStats`` on the table grid, or None): the count and offset
    sums of every evaluated query, from pass 1 (fallback cells included: they are
    left out here). ``nearest`` (``Smoother.nearest`` of the fold's smoother, with
    its training extremes) is called only when some query fell back to the nearest
    training score(s)."""
    t, train, pilot = context.tables, context.train, context.pilot
    G, ker = t.n_bins, t.ker
    ker2 = ker * ker
    inv = _inverse(t.A0)
    cells = sums.cells
    if counted is not None:
        kernel = t.A0 > 0.0
        cells = cells.copy()
        for j, part in enumerate((counted.count, counted.s1, counted.s2)):
            cells[j] += np.where(kernel, part, 0.0)
    totals, per_cell = cell_rows(context, cells)
    fb = sums.fallback
    n = totals[0] + fb.shape[0]
    count, f1, f2, inside, signed = per_cell
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = np.where(inside > 0, inside * inv * inv / context.noise0, 0.0)
    gamma = (1.0 - 2.0 * pilot) / (2.0 * n) * _conv(inside, ker2)
    gamma += _conv(signed * inv, ker) / n
    c = _conv(count * inv, ker) / n
    values = np.stack(
        [c, _conv(f1 * inv, ker) / n, _conv(f2 * inv * inv, ker2) / n, gamma]
    )
    # Entries of equal values: per cell its points, less those of the fallback's
    # blocks, which follow with their extras.
    size, positives = train.count.copy(), train.positives.copy()
    cell_pilot = pilot
    if fb.size:
        fb_totals, (score, b_count, b_pos), extra = _fallback(context, nearest, fb, n)
        totals += fb_totals
        cell = bin_of(score, G)
        np.subtract.at(size, cell, b_count)
        np.subtract.at(positives, cell, b_pos)
        block = values[:, cell]
        block[[0, 1, 2, 3]] += extra[[0, 0, 1, 2]]
        values = np.concatenate((values, block), axis=1)
        size = np.concatenate((size, b_count))
        positives = np.concatenate((positives, b_pos))
        cell_pilot = np.concatenate((pilot, pilot[cell]))
    return cell_statistics(totals, values, cell_pilot, size, positives, fb.size)


def cell_statistics(totals, values, pilot, size, positives, n_fallback):
    """:class:`AdaptiveStatistics` from the sums of ``_rows`` (``totals``) and, per
    entry of equal training points (``size`` of them, ``positives`` labelled 1, at
    ``pilot``), ``values = (c, c', e, gamma)``."""
    means, psi_nb = _means(totals)
    c, c_prime, e, gamma = values
    used = size > 0
    a = c_prime * c_prime
    return AdaptiveStatistics(
        **means,
        n_fallback=int(n_fallback),
        c_prime=_cell_majorant(
            a * (1.0 - 2.0 * pilot),
            size,
            positives,
            dot(size, a * pilot * pilot),
            dot(size, a) / 4.0,
        ),
        max_c_prime=float(c_prime[used].max(initial=0.0)),
        noise_variance=float(dot(size, e) / 4.0),
        max_e=float(e[used].max(initial=0.0)),
        sum_c_squared=float(dot(size, c * c)),
        max_c=float(c[used].max(initial=0.0)),
        noise_bias=_cell_majorant(
            gamma, size, positives, psi_nb - dot(size, gamma * pilot)
        ),
    )


def grid_statistics(tables, train, pilot, s_val, b1, b2, h=None, nearest=None):
    """:class:`AdaptiveStatistics` of a fold in memory (one chunk): see
    :meth:`FoldContext.of`, :func:`row_sums` and :func:`finish`."""
    context = FoldContext.of(tables, train, pilot, b1, b2, h)
    return finish(context, row_sums(context, s_val), nearest)
