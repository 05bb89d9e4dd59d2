"""The monotone calibration band and its certified interval for CE (SPEC section 14).

Pure functions of sorted scores and labels: the window family (step 2), the band from
KL–Chernoff limits of window means (steps 3–4), the gap envelopes (step 5), the
population transfer by DKW on the quantile scale (step 6, :mod:`._dkw`), and the
cross-fitted variant's per-fold terms (14.2). Inputs are assumed validated: scores
sorted (non-decreasing) in [0, 1], labels 0/1 in the same order, ``0 < delta < 1``.
"""

import math
from dataclasses import dataclass

import numpy as np

from ._chernoff import kl_lower_limit, kl_upper_limit
from ._dkw import dkw_epsilon, dkw_positions, transfer_side
from ._step import tie_block_starts


def window_lengths(n):
    """The window lengths of SPEC 14 step 2 for ``n`` points.

    ``ell_k = isqrt(1024 * 2**k - 1) + 1`` (that is ``ceil(32 * 2**(k / 2))`` in exact
    integer arithmetic: 32, 46, 64, 91, 128, 182, ...) while ``ell_k < n``, then ``n``.
    """
    lengths, k = [], 0
    while True:
        ell = math.isqrt(1024 * 2**k - 1) + 1
        if ell >= n:
            break
        lengths.append(ell)
        k += 1
    lengths.append(n)
    return lengths


def window_starts(n, ell):
    """Starts ``a = 0, D, 2D, ... <= n - ell`` with ``D = max(1, ell // 4)``, plus
    ``n - ell``: window ``(a, ell)`` holds the sorted positions ``a + 1 .. a + ell``
    (``a`` is also the 0-based index of its first point)."""
    starts = np.arange(0, n - ell + 1, max(1, ell // 4))
    if starts[-1] != n - ell:
        starts = np.append(starts, n - ell)
    return starts


def n_windows(n, ell):
    """The number of starts :func:`window_starts` gives, without building them."""
    step = max(1, ell // 4)
    return (n - ell) // step + 1 + ((n - ell) % step != 0)


def window_limit_tables(csum, n, lengths, delta1):
    """KL–Chernoff limits of the windows of each length ``ell`` in ``lengths`` at the
    budget ``c = ln(2 J N_ell / delta1)`` they share (SPEC 14 step 3; ``csum``: the
    label sums before each position), as ``(lo, hi, by_sum)`` per length.

    The limits depend on ``(ell, S)`` only: with more windows than ``ell + 1``
    (``by_sum``) the ``ell + 1`` possible limits are tabulated and indexed by the
    window's label sum ``S``, else listed window by window. Every table goes through
    one call per side (each limit is its own Newton iteration: the same digits as one
    call per length, without a dozen calls' overhead on a small sample)."""
    successes, trials, budgets, by_sum = [], [], [], []
    for ell in lengths:
        count = n_windows(n, ell)
        many = count > ell + 1
        if many:
            queries = np.arange(ell + 1)
        else:
            starts = window_starts(n, ell)
            queries = csum[starts + ell] - csum[starts]
        successes.append(queries)
        trials.append(np.full(queries.shape[0], ell))
        c = math.log(2.0 * len(lengths) * count / delta1)
        budgets.append(np.full(queries.shape[0], c))
        by_sum.append(many)
    ends = np.cumsum([q.shape[0] for q in successes])[:-1]
    limits = [np.concatenate(a) for a in (successes, trials, budgets)]
    lower = np.split(kl_lower_limit(*limits), ends)
    upper = np.split(kl_upper_limit(*limits), ends)
    return list(zip(lower, upper, by_sum))


@dataclass(frozen=True)
class Band:
    """A calibration band ``L <= eta <= U`` as two step functions on [0, 1].

    ``scores`` are the distinct sorted scores ``u_1 < ... < u_m`` the band was fitted
    on, ``lower[k] = L(u_k)`` and ``upper[k] = U(u_k)``. Between and beyond them
    ``L(x) = lower[k]`` for ``u_k <= x < u_{k+1}`` (0 below ``u_1``) and
    ``U(x) = upper[k]`` for ``u_{k-1} < x <= u_k`` (1 above ``u_m``): ``L`` is
    right-continuous and ``U`` left-continuous, both non-decreasing (SPEC 14 step 4).
    """

    scores: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    def lower_at(self, x):
        """``L(x)`` for scores ``x`` in [0, 1]."""
        k = np.searchsorted(self.scores, x, side="right")
        return np.where(k > 0, self.lower[np.maximum(k - 1, 0)], 0.0)

    def upper_at(self, x):
        """``U(x)`` for scores ``x`` in [0, 1]."""
        k = np.searchsorted(self.scores, x, side="left")
        m = self.scores.shape[0]
        return np.where(k < m, self.upper[np.minimum(k, m - 1)], 1.0)

    @property
    def crossed(self):
        """Whether ``L(x) > U(x)`` somewhere: on the gap ``(u_k, u_{k+1})`` the band is
        ``[lower[k], upper[k + 1]]`` with ``upper[k + 1] >= upper[k]``, and outside
        the fitted range one side is trivial, so checking the scores suffices."""
        return bool(np.any(self.lower > self.upper))


@dataclass(frozen=True)
class BandFit:
    """The band of one sorted sample and its values at the sample's positions.

    ``band`` (:class:`Band`), ``lower`` and ``upper`` (``L(x_j)``, ``U(x_j)`` at every
    sorted position ``j``), ``n_windows`` (the size of the window family).
    """

    band: Band
    lower: np.ndarray
    upper: np.ndarray
    n_windows: int


def fit_band(sorted_scores, sorted_labels, delta1):
    """The simultaneous band of SPEC 14 steps 2–4 at level ``delta1``.

    Every window ``(a, ell)`` gets ``lo <= mean eta over it <= hi`` (KL–Chernoff at
    ``c = ln(2 J N_ell / delta1)``). ``U(x)`` is the smallest ``hi`` of a window whose
    first score is ``>= x``: a per-start minimum, then a suffix minimum over starts;
    ``L(x)`` the largest ``lo`` of a window whose last score is ``<= x``: a per-end
    maximum, then a prefix maximum. Linear in ``n`` once sorted.

    Parameters
    ----------
    sorted_scores : ndarray of shape (n,)
        Non-decreasing scores in [0, 1].
    sorted_labels : ndarray of shape (n,)
        0/1 labels in the same order (inside a tie block in an order that does not
        depend on the labels).
    delta1 : float
        Failure probability of the band.

    Returns
    -------
    BandFit
        Its band may hold ``sorted_scores`` itself (not a copy).
    """
    n = sorted_scores.shape[0]
    lengths = window_lengths(n)
    csum = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sorted_labels, out=csum[1:])
    upper_at_start = np.ones(n)  # min hi over the windows starting at index a
    lower_at_end = np.zeros(n + 1)  # max lo over the windows ending at position e
    n_windows = 0
    tables = window_limit_tables(csum, n, lengths, delta1)
    for ell, (lo, hi, by_sum) in zip(lengths, tables):
        starts = window_starts(n, ell)
        if by_sum:
            sums = csum[starts + ell] - csum[starts]
            lo, hi = lo[sums], hi[sums]
        # The regular starts 0, D, 2D, ... as strided views (faster than a gather),
        # then the flush start n - ell if there is one.
        regular = slice(0, n - ell + 1, max(1, ell // 4))
        m = len(range(*regular.indices(n + 1)))
        view = upper_at_start[regular]
        np.minimum(view, hi[:m], out=view)
        view = lower_at_end[ell:][regular]
        np.maximum(view, lo[:m], out=view)
        if starts.shape[0] > m:
            upper_at_start[n - ell] = min(upper_at_start[n - ell], hi[m])
            lower_at_end[n] = max(lower_at_end[n], lo[m])
        n_windows += starts.shape[0]
    # upper_first[a]: U at any x with x_a < x <= x_{a+1} (1-based): min, starts >= a.
    upper_first = upper_at_start
    np.minimum.accumulate(upper_first[::-1], out=upper_first[::-1])
    # lower_last[e]: L at any x with x_e <= x < x_{e+1}: max over ends <= e.
    lower_last = lower_at_end
    np.maximum.accumulate(lower_last, out=lower_last)
    if not np.any(sorted_scores[1:] == sorted_scores[:-1]):  # no ties: one per row
        band = Band(sorted_scores, lower_last[1:], upper_first)
        return BandFit(band, band.lower, band.upper, n_windows)
    first = tie_block_starts(sorted_scores)
    last = np.append(first[1:], n)  # one past the end of each tie block
    band = Band(
        scores=sorted_scores[first].copy(),
        lower=lower_last[last],
        upper=upper_first[first],
    )
    counts = np.diff(last, prepend=0)
    return BandFit(
        band=band,
        lower=np.repeat(band.lower, counts),
        upper=np.repeat(band.upper, counts),
        n_windows=n_windows,
    )


def gap_envelope(sorted_scores, fit, side, out=None):
    """``G_plus`` (``side='plus'``) or ``G_minus`` (``'minus'``) on the gaps
    ``[x_i, x_{i+1}]``, ``i = 0..n`` (SPEC 14 step 5; ``x_0 = 0``, ``x_{n+1} = 1``),
    written into ``out`` (``n + 1`` floats) if given: the largest and the smallest
    ``|x - eta(x)|`` the band allows there,
    ``G+ = max(x_{i+1} - L(x_i), U(x_{i+1}) - x_i)`` and
    ``G- = max(0, x_i - U(x_{i+1}), L(x_i) - x_{i+1})``. ``G+`` is also taken at
    least 0 (as ``|x - eta(x)|`` is): that changes nothing unless the band crosses,
    where ``G+`` could otherwise be negative."""
    band, n, x = fit.band, sorted_scores.shape[0], sorted_scores
    L, U = fit.lower, fit.upper
    L0, U1 = float(band.lower_at(0.0)), float(band.upper_at(1.0))
    g = np.empty(n + 1) if out is None else out
    # Gap i = 1 .. n-1 is [x[i-1], x[i]] in 0-based positions: in pieces through a
    # small scratch buffer (no second n-long array). Gaps 0 and n by hand.
    step = 1 << 16
    scratch = np.empty(min(step, max(n - 1, 0)))
    for a in range(1, n, step):
        b = min(a + step, n)
        left, right, tmp = x[a - 1 : b - 1], x[a:b], scratch[: b - a]
        piece = g[a:b]
        if side == "plus":
            np.subtract(right, L[a - 1 : b - 1], out=piece)
            np.maximum(piece, np.subtract(U[a:b], left, out=tmp), out=piece)
        else:
            np.subtract(left, U[a:b], out=piece)
            np.maximum(piece, np.subtract(L[a - 1 : b - 1], right, out=tmp), out=piece)
    if side == "plus":
        g[0] = max(x[0] - L0, U[0])
        g[n] = max(1.0 - L[-1], U1 - x[-1])
    else:
        g[0] = max(-U[0], L0 - x[0])
        g[n] = max(x[-1] - U1, L[-1] - 1.0)
    return np.maximum(g, 0.0, out=g)


def maurer_pontil_term(mean_square_deviation, m, delta):
    r"""One-sided Maurer–Pontil deviation for the mean of ``m`` i.i.d. variables in
    [0, 1] (SPEC 14.2): with the unbiased variance :math:`\hat V`,

    .. math:: MP = \sqrt{\frac{2 \hat V \ln(2/\delta)}{m}}
              + \frac{7 \ln(2/\delta)}{3 (m - 1)},

    ``mean_square_deviation`` being :math:`\sum (z - \bar z)^2` divided by ``m - 1``.
    """
    log_term = math.log(2.0 / delta)
    return math.sqrt(2.0 * mean_square_deviation * log_term / m) + 7.0 * log_term / (
        3.0 * (m - 1)
    )


@dataclass(frozen=True)
class BandInterval:
    """SPEC 14 on one sorted sample: ``fit`` (:class:`BandFit`), the unclipped
    ``upper`` and ``lower`` bounds on CE, and ``terms`` (SPEC 14's ``terms_``, the
    transfers relative to the unclipped bounds)."""

    fit: BandFit
    upper: float
    lower: float
    terms: dict


def band_interval(sorted_scores, sorted_labels, delta):
    """The interval of SPEC 14 steps 2–6 at ``delta`` (``delta1 = delta2 =
    delta / 2``) from scores sorted with tie blocks in a label-independent order."""
    fit = fit_band(sorted_scores, sorted_labels, delta / 2.0)
    n = sorted_scores.shape[0]
    K = dkw_positions(n, dkw_epsilon(n, delta / 2.0))
    # One side at a time through two n + 1 buffers (the envelope, the extrema).
    g = gap_envelope(sorted_scores, fit, "plus")
    extrema = np.empty_like(g)
    upper = transfer_side(g, K, "max", extrema)
    lower = transfer_side(
        gap_envelope(sorted_scores, fit, "minus", g), K, "min", extrema
    )
    # The band's terms at the rows, in the same two buffers.
    x, L, U = sorted_scores, fit.lower, fit.upper
    a, b = g[:-1], extrema[:-1]
    np.subtract(x, L, out=a)
    np.subtract(U, x, out=b)
    band_upper = float(np.mean(np.maximum(a, b, out=a)))
    np.subtract(x, U, out=a)
    np.subtract(L, x, out=b)
    np.maximum(a, b, out=a)
    band_lower = float(np.mean(np.maximum(a, 0.0, out=a)))
    mean_band_width = float(np.mean(np.subtract(U, L, out=a)))
    terms = {
        "band_upper": band_upper,
        "transfer_upper": upper - band_upper,
        "band_lower": band_lower,
        "transfer_lower": lower - band_lower,
        "mean_band_width": mean_band_width,
        "n_windows": int(fit.n_windows),
    }
    return BandInterval(fit, upper, lower, terms)
