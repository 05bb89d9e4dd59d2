"""SPEC 13 (variance-adaptive NW certificate): one fold's statistics.

:class:`AdaptiveStatistics` is what ``_terms.adaptive_terms`` reads at any level;
:func:`dense_statistics` computes it from an explicit weight matrix (small folds, and
the definition the grid computation must reproduce). The plan of the grid computation
is in ``docs/internals/nw.rst`` ("Variance-adaptive certificate").
"""

import math
from dataclasses import dataclass

import numpy as np


def dot(a, b):
    """``sum(a * b)`` of two vectors without BLAS: on a busy machine a BLAS dot of a
    few thousand numbers can wait on its thread pool (seen: 24 ms instead of 20 us)."""
    return np.einsum("i,i->", a, b)


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
            observed=float(dot(plus, labels) + dot(minus, 1.0 - labels)),
            largest=float(np.abs(gamma).max(initial=0.0)),
            cap=float(cap),
        )

    @classmethod
    def variance(cls, a, pilot, labels):
        r"""``VarUCB(a)``: the majorant of :math:`\sum_i a_i \eta_i(1 - \eta_i)`
        (``a >= 0``) by the tangent :math:`\eta(1-\eta) \le {\eta^0}^2 + (1 -
        2\eta^0)\eta`, capped at :math:`\tfrac14 \sum_i a_i`."""
        a = np.asarray(a, dtype=np.float64)
        constant = dot(a, pilot * pilot)
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
    n_fallback : int
        Validation points with no training score within the kernel (the nearest
        training score(s) weigh them).
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
    n_fallback: int = 0


def _psi(x):
    """``(e**x - 1 - x) / x**2``, 1/2 at 0; inf where ``e**x`` overflows (tiny
    ``h``: then no relative branch)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = (np.expm1(x) - x) / (x * x)
    small = np.abs(x) < 1e-4
    if small.any():
        np.copyto(out, 0.5 + x / 6.0, where=small)
    return out


def relative_factor(s, m1, M2, d, h, fallback=None, edges=None, k_bar=False):
    r"""SPEC 13's :math:`R_v` (h-mode) at queries ``s`` in [0, 1]; NaN where
    undefined (:math:`\rho_v \ge 1/2`, or where ``fallback``, a fallback query).
    ``edges``: ``tanh(s / h)`` and ``tanh((1 - s) / h)`` when already computed.
    ``k_bar``: also return :math:`\bar K_v = A(s_v + d_v) + B(s_v - d_v)`."""
    low, high = edges if edges is not None else (np.tanh(s / h), np.tanh((1 - s) / h))
    kappa1 = low / h + high / h  # A(s) + B(s), A(x) = tanh(clip(x, 0, 1) / h) / h
    # A(s + d) and B(s - d): with s in [0, 1] and d >= 0, clip(s + d, 0, 1) =
    # min(s + d, 1) and clip(s - d, 0, 1) = max(s - d, 0).
    a = np.tanh(np.minimum(s + d, 1.0) / h) / h
    b = np.tanh((1.0 - np.maximum(s - d, 0.0)) / h) / h
    window = a + b  # K-bar
    kappa_bar = 2.0 * (np.maximum(a, b) + 0.5 * np.minimum(a, b)) ** 2
    rho = kappa1 * np.abs(m1) + kappa_bar * _psi(window * d) * M2
    with np.errstate(divide="ignore", invalid="ignore"):
        R = rho / (1.0 - rho)
    undefined = ~(rho < 0.5)
    if fallback is not None:
        undefined |= fallback
    R[undefined] = np.nan
    return (R, window) if k_bar else R


def _taylor_bias(s, m1, M2, d, b1, b2, h, fallback):
    """SPEC 13's ``Babs_v`` and, in h-mode, ``R_v`` (NaN where undefined) of
    weights with first moment ``m1``, second ``M2`` and reach ``d`` at ``s``."""
    b1_v, R = float(b1), np.full(s.shape[0], np.nan)
    if h is not None:
        edges = np.tanh(s / h), np.tanh((1 - s) / h)
        b1_v = np.minimum(b1, (edges[0] + edges[1]) / h / 4)
        if fallback is None or not fallback.all():
            R = relative_factor(s, m1, M2, d, h, fallback, edges)
    return np.minimum(1.0, b1_v * np.abs(m1) + 0.5 * b2 * M2), R


# How many sums :func:`_rows` returns (in the order :func:`_means` reads them).
_N_TOTALS = 9


def branches(proxy, babs, R, eta_hat, eta0, noise0):
    """Per entry (a query, or a cell of queries): the bias branch chosen at ``proxy``
    and what follows from it. The branch ``k = argmin(Babs, R x, R (1 - x))`` at
    ``x = proxy``, first on ties, NaN as inf: ``R`` is NaN or finite, so ``k > 0``
    iff ``min(R x, R (1 - x)) < Babs``, then ``k = 1`` iff ``R x <= R (1 - x)``.
    Returns ``relative`` (``k > 0``), ``bias`` (``b(eta_hat)``), ``f``, ``bhat``
    (in ``V_A``), ``bias0`` (``B + N`` at the pilot), ``inside`` (``bias0 < 1``) and
    ``active`` (the relative piece is the minimum at the pilot, inside)."""
    Rx, R1x = R * proxy, R * (1.0 - proxy)
    relative = np.minimum(Rx, R1x) < babs
    bias = np.where(relative, R * np.where(Rx <= R1x, eta_hat, 1.0 - eta_hat), babs)
    rel = R * np.minimum(eta0, 1.0 - eta0)  # NaN where R is
    bias0 = np.fmin(babs, rel)
    bias0 += noise0
    inside = bias0 < 1.0
    return {
        "relative": relative,
        "bias": bias,
        "f": 1.0 + np.where(relative, R, 0.0),
        "bhat": np.where(
            relative, np.minimum(babs, R * np.minimum(eta_hat, 1 - eta_hat)), babs
        ),
        "bias0": bias0,
        "inside": inside,
        "active": inside & (rel < babs),
    }


def _rows(
    s,
    m1,
    M2,
    root_W2,
    d,
    eta_hat,
    eta0,
    noise0,
    b1,
    b2,
    h,
    fallback=None,
    bias=None,
    proxy=None,
):
    """Per evaluated validation point ``s`` (with its ``m1``, ``M2``, ``sqrt(W2)``,
    ``d``, ``eta_hat``, and the pilot's smoother ``eta0`` and noise ``noise0``
    there; ``fallback``: which are fallback queries, None for none): the arrays the
    per-training-point sums need (``f``, ``R``, ``inside``, ``active``), and the
    sums over the points that :func:`_means` reads. ``bias``: ``(Babs, R)`` of
    weights whose bias is bounded otherwise (then ``m1``, ``M2``, ``d``, ``b1``,
    ``b2`` and ``h`` are not read); ``proxy``: where the branch is chosen (None:
    at ``s``)."""
    n = s.shape[0]
    if bias is None:
        bias = _taylor_bias(s, m1, M2, d, b1, b2, h, fallback)
    babs, R = bias
    b = branches(s if proxy is None else proxy, babs, R, eta_hat, eta0, noise0)
    arrays = {name: b[name] for name in ("f", "inside", "active")}
    arrays["R"] = R
    r = np.abs(s - eta_hat)
    rb = r + b["bias"]
    totals = np.array(
        [
            n,
            r.sum(),
            dot(r, r),
            b["bias"].sum(),
            dot(rb, rb),
            np.minimum(1.0, babs + 0.5 * root_W2).sum(),
            dot(b["bhat"], b["bhat"]),
            np.count_nonzero(b["relative"]),
            np.minimum(1.0, b["bias0"]).sum(),
        ],
        dtype=np.float64,
    )
    return arrays, totals


def _means(totals):
    """The fields of :class:`AdaptiveStatistics` that are means over the evaluated
    points, and the mean of ``Psi_NB`` at the pilot, from the sums of :func:`_rows`
    (merged by addition)."""
    n, r, r2, bias, rb2, wc, bhat2, relative, psi = (float(x) for x in totals)
    mean_r = r / n
    means = {
        "n": int(n),
        "residual_moments": (mean_r, max(r2 / n - mean_r * mean_r, 0.0)),
        "bias_mean": bias / n,
        "residual_bias_square": rb2 / n,
        "worst_case_smoothing": wc / n,
        "bias_square_mean": bhat2 / n,
        "n_relative": int(relative),
    }
    return means, psi / n


def _dense_rows(W, s_train, y_train, s_val, pilot):
    """Per row of explicit weights ``W``: ``m1``, ``M2``, ``sqrt(W2)``, ``d``,
    ``eta_hat``, the pilot's smoother and its noise (the inputs of :func:`_rows`)."""
    diff = s_train[None, :] - s_val[:, None]
    return (
        np.einsum("vi,vi->v", W, diff),
        np.einsum("vi,vi->v", W, diff * diff),
        np.sqrt(np.einsum("vi,vi->v", W, W)),
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


def _statistics(means, psi_nb, c, c_prime, e, gamma, pilot, labels, n_fallback):
    """:class:`AdaptiveStatistics` from the row means and the per-training-point
    arrays (``labels``: the training labels)."""
    return AdaptiveStatistics(
        n_fallback=int(n_fallback),
        **means,
        c_prime=Majorant.variance(c_prime**2, pilot, labels),
        max_c_prime=float(c_prime.max(initial=0.0)),
        noise_variance=float(e.sum() / 4.0),
        max_e=float(e.max(initial=0.0)),
        sum_c_squared=float(dot(c, c)),
        max_c=float(c.max(initial=0.0)),
        noise_bias=Majorant.of(gamma, labels, psi_nb - dot(gamma, pilot)),
    )


def dense_statistics(
    W,
    s_train,
    y_train,
    s_val,
    pilot,
    b1,
    b2,
    h=None,
    fallback=None,
    bias=None,
    proxy=None,
):
    """:class:`AdaptiveStatistics` of a fold from its weights ``W`` (evaluated
    validation point by training point, rows summing to one), the training scores
    and labels, the validation scores, the ``pilot`` at the training points, the
    derivative bounds and, in h-mode, ``h`` (``fallback``: which rows are fallback
    queries; ``bias`` and ``proxy`` as :func:`_rows`)."""
    W = np.asarray(W, dtype=np.float64)
    n = W.shape[0]
    if fallback is None:
        fallback = np.zeros(n, dtype=bool)
    values = _dense_rows(W, s_train, y_train, s_val, pilot)
    eta0, noise0 = values[5], values[6]
    rows, totals = _rows(s_val, *values, b1, b2, h, fallback, bias, proxy)
    means, psi_nb = _means(totals)
    sums = _dense_sums(W, rows, pilot, eta0, noise0, n)
    return _statistics(means, psi_nb, *sums, pilot, y_train, fallback.sum())


def nearest_weights(s_train, queries):
    """The fallback's weights at ``queries``: equal on the training points at the
    nearest training score(s), both sides when equidistant."""
    gap = np.abs(s_train[None, :] - queries[:, None])
    W = (gap == gap.min(axis=1, keepdims=True)).astype(np.float64)
    return W / W.sum(axis=1, keepdims=True)
