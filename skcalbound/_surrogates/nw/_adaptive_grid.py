"""SPEC 13 on the grid: one fold's :class:`~._adaptive.AdaptiveStatistics` from sums
that merge by addition.

:class:`FoldContext` holds what is known before pass 2 (per query cell: the pilot's
smoother and noise, the training scores that bound ``d``); :func:`row_sums` is pass 2
on one chunk of evaluated validation scores; :func:`finish` convolves its per-cell
sums back onto the training cells. See ``docs/internals/nw.rst``.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._cells import _BLOCK, bin_of, cell_offsets, occupied_neighbours
from ._adaptive import _N_TOTALS, AdaptiveStatistics, Majorant, _means, _rows, dot
from ._kernel import _conv, bin_centres, kernel


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
    """What pass 2 needs of one fold, per cell of its table grid: the smoother's
    ``tables``, the training ``train`` sums, the ``pilot`` per training cell, its
    smoother ``eta0`` and noise ``noise0`` per query cell, the smallest (``low``) and
    largest (``high``) training score with positive weight per query cell, and the
    derivative bounds (``h``: h-mode)."""

    tables: object
    train: object
    pilot: np.ndarray
    eta0: np.ndarray
    noise0: np.ndarray
    low: np.ndarray
    high: np.ndarray
    b1: float
    b2: float
    h: float = None

    def cells(self):
        """Per cell, what :func:`row_sums` reads of it: of the tables ``m1``, ``var``,
        ``sqrt(W2)`` and ``eta``, of the pilot ``eta0`` and ``noise0``, and ``low``,
        ``high``."""
        t = self.tables
        with np.errstate(invalid="ignore"):
            root = np.sqrt(t.W2)
        return {
            "m1": t.m1,
            "var": t.var,
            "root_W2": root,
            "eta": t.eta,
            "eta0": self.eta0,
            "noise0": self.noise0,
            "low": self.low,
            "high": self.high,
        }

    @classmethod
    def of(cls, tables, train, lo, hi, pilot, b1, b2, h=None):
        """From the tables, the training sums, the smallest and largest training
        score per cell (``lo``, ``hi``) and the pilot per training cell."""
        G, ker = tables.n_bins, tables.ker
        inv = _inverse(tables.A0)
        count = train.count
        eta0 = _conv(count * pilot, ker) * inv
        noise0 = np.sqrt(_conv(count * pilot * (1.0 - pilot), ker * ker)) * inv
        # The first and last occupied training cells within the kernel's reach.
        reach = int(np.flatnonzero(ker).max()) - (ker.shape[0] - 1) // 2
        below, above = occupied_neighbours(count)
        idx = np.arange(G)
        first = np.minimum(above[np.maximum(idx - reach, 0)], G - 1)
        last = np.maximum(below[np.minimum(idx + reach, G - 1)], 0)
        return cls(tables, train, pilot, eta0, noise0, lo[first], hi[last], b1, b2, h)


@dataclass
class AdaptiveSums:
    """Pass 2's mergeable result for one fold: the sums over the evaluated points
    (``totals``, as ``_adaptive._rows``), per query cell the count, ``sum f``,
    ``sum f**2``, the count inside ``min(1, .)`` and ``sum sign(1/2 - eta0) R`` over
    the points where the relative piece is active (``per_cell``, shape ``(5, G)``),
    and the fallback queries' scores (finished at the end)."""

    totals: np.ndarray
    per_cell: np.ndarray
    fallback: np.ndarray

    def __add__(self, other):
        return AdaptiveSums(
            self.totals + other.totals,
            self.per_cell + other.per_cell,
            np.concatenate((self.fallback, other.fallback)),
        )


def row_sums(context, s):
    """Pass 2 on one chunk of evaluated validation scores ``s`` of one fold."""
    t = context.tables
    G = t.n_bins
    q = bin_of(s, G)
    kept = t.A0[q] > 0.0
    fallback = s[~kept]
    if fallback.size:
        s, q = s[kept], q[kept]
    n = s.shape[0]
    cells = context.cells()
    # Per point, what it reads of its cell, gathered one table at a time for all
    # points (the table stays in cache), and what the per-cell sums add up; the
    # arithmetic in blocks that stay in cache. One allocation: numpy backs arrays
    # of 4 MB and more by huge pages, where a dozen arrays of a few MB each would
    # fault in 4 KB pages.
    buffer = np.empty((len(cells) + 5, n))
    at = dict(zip(cells, buffer))
    for name, table in cells.items():
        table.take(q, out=at[name])
    offsets, f, f2, inside, active = buffer[len(cells) :]
    m1 = np.subtract(at["m1"], cell_offsets(s, q, G, out=offsets), out=at["m1"])
    totals = np.zeros(_N_TOTALS)
    for a in range(0, n, _BLOCK):
        b = slice(a, a + _BLOCK)
        rows, block_totals = _rows(
            s[b],
            m1[b],
            at["var"][b] + m1[b] * m1[b],
            at["root_W2"][b],
            np.maximum(s[b] - at["low"][b], at["high"][b] - s[b]),
            at["eta"][b],
            at["eta0"][b],
            at["noise0"][b],
            context.b1,
            context.b2,
            context.h,
        )
        totals += block_totals
        f[b], inside[b] = rows["f"], rows["inside"]
        np.multiply(f[b], f[b], out=f2[b])
        np.copyto(active[b], np.where(rows["active"], rows["R"], 0.0))
    per_cell = np.empty((5, G))
    for j, w in enumerate((None, f, f2, inside, active)):
        per_cell[j] = np.bincount(q, weights=w, minlength=G)
    per_cell[4] *= np.sign(0.5 - context.eta0)
    return AdaptiveSums(totals, per_cell, fallback)


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


def finish(context, sums, nearest=None):
    """The fold's :class:`AdaptiveStatistics` from its merged :class:`AdaptiveSums`;
    ``nearest`` (``Smoother.nearest`` of the fold's smoother, with its training
    extremes) is called only when some query fell back to the nearest training
    score(s)."""
    t, train, pilot = context.tables, context.train, context.pilot
    G, ker = t.n_bins, t.ker
    ker2 = ker * ker
    inv = _inverse(t.A0)
    totals = sums.totals.copy()
    fb = sums.fallback
    n = totals[0] + fb.shape[0]
    count, f1, f2, inside, signed = sums.per_cell
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


def grid_statistics(tables, train, lo, hi, pilot, s_val, b1, b2, h=None, nearest=None):
    """:class:`AdaptiveStatistics` of a fold in memory (one chunk): see
    :meth:`FoldContext.of`, :func:`row_sums` and :func:`finish`."""
    context = FoldContext.of(tables, train, lo, hi, pilot, b1, b2, h)
    return finish(context, row_sums(context, s_val), nearest)
