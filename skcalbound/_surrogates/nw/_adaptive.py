"""SPEC 13 (variance-adaptive NW certificate): one fold's statistics.

:class:`AdaptiveStatistics` is what ``_terms.adaptive_terms`` reads at any level;
:func:`dense_statistics` computes it from an explicit weight matrix (small folds, and
the definition the grid computation must reproduce). The plan of the grid computation
is in ``docs/internals/nw.rst`` ("Variance-adaptive certificate").
"""

import math
from dataclasses import dataclass

import numpy as np

from .._cells import bin_of, occupied_neighbours
from ._kernel import _conv, bin_centres, kernel


@dataclass(frozen=True)
class Majorant:
    r"""An affine majorant at the pilot :math:`\eta^0` of a concave function
    :math:`\Phi` of the training points' rates, as Lemma 2 of
    ``math/adaptive_proofs.md`` reads it (``_terms.majorant_bound``).

    Attributes
    ----------
    constant : float
        :math:`\Phi(\eta^0) - \langle\gamma, \eta^0\rangle`.
    negative : float
        :math:`\sum_i \max(-\gamma_i, 0)`.
    observed : float
        :math:`S = \sum_i \max(\gamma_i, 0) y_i + \max(-\gamma_i, 0)(1 - y_i)`.
    largest : float
        :math:`\max_i |\gamma_i|` (0 without training points).
    cap : float
        A bound that holds surely (``VarUCB``: :math:`\tfrac14 \sum_i a_i`), or inf.
    """

    constant: float
    negative: float
    observed: float
    largest: float
    cap: float = math.inf

    @classmethod
    def of(cls, gamma, labels, constant, cap=math.inf):
        """The majorant with supergradient ``gamma`` (per training point) and the
        training ``labels``."""
        gamma = np.asarray(gamma, dtype=np.float64)
        plus, minus = np.maximum(gamma, 0.0), np.maximum(-gamma, 0.0)
        return cls(
            constant=float(constant),
            negative=float(minus.sum()),
            observed=float(np.dot(plus, labels) + np.dot(minus, 1.0 - labels)),
            largest=float(np.abs(gamma).max(initial=0.0)),
            cap=float(cap),
        )

    @classmethod
    def variance(cls, a, pilot, labels):
        r"""``VarUCB(a)``: the majorant of :math:`\sum_i a_i \eta_i(1 - \eta_i)`
        (``a >= 0``) by the tangent :math:`\eta(1-\eta) \le {\eta^0}^2 + (1 -
        2\eta^0)\eta`, capped at :math:`\tfrac14 \sum_i a_i`."""
        a = np.asarray(a, dtype=np.float64)
        constant = np.dot(a, pilot * pilot)
        return cls.of(a * (1.0 - 2.0 * pilot), labels, constant, a.sum() / 4.0)


@dataclass(frozen=True)
class AdaptiveStatistics:
    r"""One fold's SPEC 13 statistics: sums over its evaluated validation points
    ``v`` and training points ``i``, none depending on the level.

    Attributes
    ----------
    n : int
        Evaluated validation points.
    residual_moments : tuple of float
        Mean and population variance of :math:`r_v = |s_v - \hat\eta_v|`.
    bias_mean : float
        :math:`\mathrm{mean}_v\, b_v(\hat\eta_v)`.
    residual_bias_square : float
        :math:`Q = \mathrm{mean}_v (r_v + b_v(\hat\eta_v))^2`.
    c_prime : Majorant
        ``VarUCB`` of :math:`a = c'^2`, :math:`c'_i = \frac1n \sum_v f_v w_i(s_v)`.
    max_c_prime : float
        :math:`\max_i c'_i`.
    noise_variance : float
        :math:`\sigma^2 = \tfrac14 \sum_i e_i`, :math:`e_i = \frac1n \sum_v f_v^2
        w_i(s_v)^2`.
    max_e : float
        :math:`\max_i e_i` (:math:`d^* = \sqrt{\max_i e_i}`).
    worst_case_smoothing : float
        :math:`\mathrm{mean}_v \min(1, B^{abs}_v + \tfrac12 \sqrt{W2_v})` (in
        :math:`\Psi_{wc}`).
    sum_c_squared : float
        :math:`C_2 = \sum_i c_i^2`.
    max_c : float
        :math:`\max_i c_i`.
    noise_bias : Majorant
        Of :math:`\Psi_{NB}` at the pilot, with its supergradient :math:`\gamma_{NB}`.
    bias_square_mean : float
        :math:`\mathrm{mean}_v \hat B_v^2` (in :math:`V_A`).
    n_relative : int
        Validation points on a relative branch (:math:`k_v > 0`).
    """

    n: int
    residual_moments: tuple
    bias_mean: float
    residual_bias_square: float
    c_prime: Majorant
    max_c_prime: float
    noise_variance: float
    max_e: float
    worst_case_smoothing: float
    sum_c_squared: float
    max_c: float
    noise_bias: Majorant
    bias_square_mean: float
    n_relative: int = 0


def _psi(x):
    """``(e**x - 1 - x) / x**2``, 1/2 at 0."""
    x = np.asarray(x, dtype=np.float64)
    small = np.abs(x) < 1e-4
    safe = np.where(small, 1.0, x)
    return np.where(small, 0.5 + x / 6.0, np.expm1(safe) - safe) / np.where(
        small, 1.0, safe * safe
    )


def relative_factor(s, m1, M2, d, h, fallback):
    r"""SPEC 13's :math:`R_v` (h-mode) at queries ``s``; NaN where undefined
    (:math:`\rho_v \ge 1/2`, or a fallback query)."""
    A = lambda x: np.tanh(np.clip(x, 0.0, 1.0) / h) / h  # noqa: E731
    B = lambda x: np.tanh((1.0 - np.clip(x, 0.0, 1.0)) / h) / h  # noqa: E731
    kappa1 = A(s) + B(s)
    a, b = A(s + d), B(s - d)
    k_bar = a + b
    kappa_bar = 2.0 * (np.maximum(a, b) + 0.5 * np.minimum(a, b)) ** 2
    rho = kappa1 * np.abs(m1) + kappa_bar * _psi(k_bar * d) * M2
    ok = (rho < 0.5) & ~fallback
    return np.where(ok, rho / np.where(ok, 1.0 - rho, 1.0), np.nan)


def _rows(s, m1, M2, W2, d, eta_hat, eta0, noise0, b1, b2, h, fallback):
    """Per evaluated validation point ``s`` (with its ``m1``, ``M2``, ``W2``, ``d``,
    ``eta_hat``, and the pilot's smoother ``eta0`` and noise ``noise0`` there): the
    arrays the per-training-point sums need (``f``, ``R``, ``inside``, ``active``),
    and the fields of :class:`AdaptiveStatistics` that are means over the points."""
    n = s.shape[0]
    r = np.abs(s - eta_hat)
    b1_v = np.full(n, float(b1))
    R = np.full(n, np.nan)
    if h is not None:
        b1_v = np.minimum(b1, (np.tanh(s / h) + np.tanh((1 - s) / h)) / h / 4)
        R = relative_factor(s, m1, M2, d, h, fallback)
    babs = np.minimum(1.0, b1_v * np.abs(m1) + 0.5 * b2 * M2)
    choices = np.stack([babs, R * s, R * (1.0 - s)])
    k = np.argmin(np.where(np.isnan(choices), np.inf, choices), axis=0)
    bias = np.where(k == 0, babs, np.where(k == 1, R * eta_hat, R * (1.0 - eta_hat)))
    rel = np.where(np.isnan(R), np.inf, R * np.minimum(eta0, 1.0 - eta0))
    bias0 = np.minimum(babs, rel)
    inside = bias0 + noise0 < 1.0
    bhat = np.minimum(babs, R * np.minimum(eta_hat, 1 - eta_hat))
    bhat = np.where(k == 0, babs, bhat)
    mean_r = float(r.mean())
    arrays = {
        "f": 1.0 + np.where(k > 0, R, 0.0),
        "R": R,
        "inside": inside,
        "active": inside & (rel < babs),
    }
    means = {
        "n": n,
        "residual_moments": (mean_r, float(np.mean((r - mean_r) ** 2))),
        "bias_mean": float(bias.mean()),
        "residual_bias_square": float(np.mean((r + bias) ** 2)),
        "worst_case_smoothing": float(np.minimum(1.0, babs + 0.5 * np.sqrt(W2)).mean()),
        "bias_square_mean": float(np.mean(bhat**2)),
        "n_relative": int(np.count_nonzero(k > 0)),
    }
    return arrays, means, float(np.minimum(1.0, bias0 + noise0).mean())


def _dense_rows(W, s_train, y_train, s_val, pilot):
    """Per row of explicit weights ``W``: ``m1``, ``M2``, ``W2``, ``d``, ``eta_hat``,
    the pilot's smoother and its noise (the inputs of :func:`_rows`)."""
    diff = s_train[None, :] - s_val[:, None]
    return (
        np.einsum("vi,vi->v", W, diff),
        np.einsum("vi,vi->v", W, diff * diff),
        np.einsum("vi,vi->v", W, W),
        np.where(W > 0, np.abs(diff), 0.0).max(axis=1, initial=0.0),
        W @ y_train,
        W @ pilot,
        np.sqrt((W * W) @ (pilot * (1.0 - pilot))),
    )


def _dense_sums(W, rows, pilot, eta0, noise0, n):
    """Per training point, the sums over the rows of ``W`` (``rows``: their
    :func:`_rows` arrays) that make ``c``, ``c'``, ``e`` and ``gamma`` (divided by
    ``n``, the evaluated points of the fold)."""
    f = rows["f"]
    # The supergradient of Psi_NB at the pilot, over the points inside min(1, .).
    grad = (W * W) * ((1.0 - 2.0 * pilot) / 2.0)[None, :] / noise0[:, None]
    signed = np.where(rows["active"], rows["R"] * np.sign(0.5 - eta0), 0.0)
    grad += signed[:, None] * W
    return (
        W.sum(axis=0) / n,
        (f[:, None] * W).sum(axis=0) / n,
        (f[:, None] ** 2 * W * W).sum(axis=0) / n,
        grad[rows["inside"]].sum(axis=0) / n,
    )


def _statistics(means, psi_nb, c, c_prime, e, gamma, pilot, labels):
    """:class:`AdaptiveStatistics` from the row means and the per-training-point
    arrays (``labels``: the training labels)."""
    return AdaptiveStatistics(
        **means,
        c_prime=Majorant.variance(c_prime**2, pilot, labels),
        max_c_prime=float(c_prime.max(initial=0.0)),
        noise_variance=float(e.sum() / 4.0),
        max_e=float(e.max(initial=0.0)),
        sum_c_squared=float(np.dot(c, c)),
        max_c=float(c.max(initial=0.0)),
        noise_bias=Majorant.of(gamma, labels, psi_nb - np.dot(gamma, pilot)),
    )


def dense_statistics(W, s_train, y_train, s_val, pilot, b1, b2, h=None, fallback=None):
    """:class:`AdaptiveStatistics` of a fold from its weights ``W`` (evaluated
    validation point by training point, rows summing to one), the training scores
    and labels, the validation scores, the ``pilot`` at the training points, the
    derivative bounds and, in h-mode, ``h`` (``fallback``: which rows are fallback
    queries)."""
    W = np.asarray(W, dtype=np.float64)
    n = W.shape[0]
    if fallback is None:
        fallback = np.zeros(n, dtype=bool)
    values = _dense_rows(W, s_train, y_train, s_val, pilot)
    eta0, noise0 = values[5], values[6]
    rows, means, psi_nb = _rows(s_val, *values, b1, b2, h, fallback)
    sums = _dense_sums(W, rows, pilot, eta0, noise0, n)
    return _statistics(means, psi_nb, *sums, pilot, y_train)


def nearest_weights(s_train, queries):
    """The fallback's weights at ``queries``: equal on the training points at the
    nearest training score(s), both sides when equidistant."""
    gap = np.abs(s_train[None, :] - queries[:, None])
    W = (gap == gap.min(axis=1, keepdims=True)).astype(np.float64)
    return W / W.sum(axis=1, keepdims=True)


def default_pilot(validation, n_bins, bandwidth, tempering):
    """SPEC 13's default pilot per training cell: the kernel average of the fold's
    validation labels (``validation``: their count and positives per cell of the
    ``n_bins`` grid) at twice ``bandwidth`` (capped at 1/2), plus one pseudo-observation
    at the cell centre, clipped to ``[1e-4, 1 - 1e-4]``."""
    _, ker = kernel(n_bins, min(2.0 * bandwidth, 0.5), tempering)
    positives = _conv(validation.positives, ker)
    count = _conv(validation.count, ker)
    pilot = (positives + bin_centres(n_bins)) / (count + 1.0)
    return np.clip(pilot, 1e-4, 1.0 - 1e-4)


def _cell_majorant(gamma, count, positives, constant, cap=math.inf):
    """:meth:`Majorant.of` for a supergradient constant over each training cell
    (``count`` points, ``positives`` of them labelled 1)."""
    plus, minus = np.maximum(gamma, 0.0), np.maximum(-gamma, 0.0)
    used = count > 0
    return Majorant(
        constant=float(constant),
        negative=float(np.dot(count, minus)),
        observed=float(np.dot(plus, positives) + np.dot(minus, count - positives)),
        largest=float(np.abs(gamma[used]).max(initial=0.0)),
        cap=float(cap),
    )


def grid_statistics(tables, train, lo, hi, pilot, s_val, b1, b2, h=None, points=None):
    """:class:`AdaptiveStatistics` of a fold on the grid, in memory: ``tables``
    (:class:`~._smoother.HPTables` at every cell), ``train`` (the training
    :class:`~.._cells.BinStats` on the tables' grid), ``lo`` / ``hi`` (the smallest
    and largest training score per cell), the ``pilot`` per cell, the evaluated
    validation scores ``s_val``; ``points`` (the training scores and labels) is read
    only when some query falls back to the nearest training score(s)."""
    G = tables.n_bins
    ker, A0 = tables.ker, tables.A0
    ker2 = ker * ker
    reach = int(np.flatnonzero(ker).max()) - (ker.shape[0] - 1) // 2
    n = s_val.shape[0]
    q = bin_of(s_val, G)
    kept = A0[q] > 0.0
    s_fb = s_val[~kept]
    s_val, q = s_val[kept], q[kept]
    count, positives = train.count, train.positives
    # Per query cell: the pilot's smoother and noise, and the first and last
    # occupied training cells with positive weight (for d).
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(A0 > 0.0, 1.0 / A0, 0.0)
    eta0 = _conv(count * pilot, ker) * inv
    noise0 = np.sqrt(_conv(count * pilot * (1.0 - pilot), ker2)) * inv
    below, above = occupied_neighbours(count)
    idx = np.arange(G)
    first = above[np.maximum(idx - reach, 0)][q]
    last = below[np.minimum(idx + reach, G - 1)][q]
    # Per query row; the fallback's rows from their explicit weights.
    m1 = tables.m1[q] - (s_val - bin_centres(G)[q])
    d = np.maximum(s_val - lo[first], hi[last] - s_val)
    values = [m1, tables.var[q] + m1 * m1, tables.W2[q], d, tables.eta[q]]
    values += [eta0[q], noise0[q]]
    if s_fb.size:
        s_train, y_train = points
        cell = bin_of(s_train, G)
        W_fb = nearest_weights(s_train, s_fb)
        extra = _dense_rows(W_fb, s_train, y_train, s_fb, pilot[cell])
        values = [np.concatenate(pair) for pair in zip(values, extra)]
    fallback = np.arange(n) >= s_val.shape[0]
    s_all = np.concatenate((s_val, s_fb))
    rows, means, psi_nb = _rows(s_all, *values, b1, b2, h, fallback)
    # Per query cell sums, then back onto the training cells (the kernel is
    # symmetric: the same convolution).
    grid_rows = {key: value[~fallback] for key, value in rows.items()}
    f = grid_rows["f"]
    per_cell = lambda w=None: np.bincount(q, weights=w, minlength=G)  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = per_cell(grid_rows["inside"].astype(float)) * inv * inv / noise0
    inside[~np.isfinite(inside)] = 0.0
    signed = np.sign(0.5 - eta0[q]) * np.where(grid_rows["active"], grid_rows["R"], 0.0)
    gamma = (1.0 - 2.0 * pilot) / (2.0 * n) * _conv(inside, ker2)
    gamma += _conv(per_cell(signed) * inv, ker) / n
    sums = (
        _conv(per_cell() * inv, ker) / n,
        _conv(per_cell(f) * inv, ker) / n,
        _conv(per_cell(f * f) * inv * inv, ker2) / n,
        gamma,
    )
    if s_fb.size:
        # Per training point: the cells' values plus the fallback's.
        fb_rows = {key: value[fallback] for key, value in rows.items()}
        extra = _dense_sums(
            W_fb, fb_rows, pilot[cell], values[5][fallback], values[6][fallback], n
        )
        sums = [s[cell] + x for s, x in zip(sums, extra)]
        return _statistics(means, psi_nb, *sums, pilot[cell], y_train)
    c, c_prime, e_cell, gamma = sums
    used = count > 0
    a = c_prime * c_prime
    return AdaptiveStatistics(
        **means,
        c_prime=_cell_majorant(
            a * (1.0 - 2.0 * pilot),
            count,
            positives,
            np.dot(count, a * pilot * pilot),
            np.dot(count, a) / 4.0,
        ),
        max_c_prime=float(c_prime[used].max(initial=0.0)),
        noise_variance=float(np.dot(count, e_cell) / 4.0),
        max_e=float(e_cell[used].max(initial=0.0)),
        sum_c_squared=float(np.dot(count, c * c)),
        max_c=float(c[used].max(initial=0.0)),
        noise_bias=_cell_majorant(
            gamma, count, positives, psi_nb - np.dot(count, gamma * pilot)
        ),
    )
