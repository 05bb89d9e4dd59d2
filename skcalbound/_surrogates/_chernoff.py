"""KL–Chernoff confidence limits for the mean of independent Bernoulli labels.

For ``ell`` independent labels with mean of means ``p`` and ``p_hat = S / ell``, the
Chernoff bound ``P(S / ell >= x) <= exp(-ell kl(x || p))`` (Hoeffding 1963, Theorem
1; unequal means only help), inverted at a budget ``c = ln(1 / delta)`` per side:
``upper = max{q >= p_hat : ell kl(p_hat || q) <= c}`` is at least ``p`` except with
probability at most ``delta``, and ``lower`` likewise from below. Pure functions on
arrays; inputs are assumed validated.
"""

import numpy as np

# Newton iterations: from the Pinsker start the iterates converge quadratically
# once near the root; 60 is far more than any case needs (tests check the
# residual), and the loop stops as soon as every limit has converged.
_MAX_NEWTON = 60
_MARGIN = 1e-12


def bernoulli_kl(p, q):
    r"""``kl(p || q)`` of Bernoulli laws, with ``0 ln 0 = 0``.

    .. math:: \mathrm{kl}(p \| q) = p \ln\frac{p}{q} + (1 - p)\ln\frac{1 - p}{1 - q}
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0.0, p * np.log(p / q), 0.0)
        b = np.where(p < 1.0, (1.0 - p) * np.log((1.0 - p) / (1.0 - q)), 0.0)
    return a + b


def _kl_in_u(p, p_log_p, u):
    """``kl(p || q)`` at ``q = 1 - exp(-u)``, computed from ``u`` (no rounding of
    ``q`` to 1 for large ``u``)."""
    with np.errstate(divide="ignore"):
        log_q = np.log(-np.expm1(-u))
    return p_log_p - np.where(p > 0.0, p * log_q, 0.0) + (1.0 - p) * (np.log1p(-p) + u)


def _upper(p, budget):
    """``max{q >= p : kl(p || q) <= budget}`` for 1-d arrays ``p`` and ``budget``
    (``budget = c / ell``), never below the root: Newton in ``u = -ln(1 - q)``,
    where ``kl(p || q(u))`` is convex and increasing for ``q >= p``, from a start
    where the divergence is at least the budget, so that every iterate stays at or
    above the root."""
    out = np.ones(p.shape)
    todo = p < 1.0
    # A relative margin of 1e-12 on the budget (far below any statistical meaning)
    # keeps the limit outside the set however the divergence is rounded when
    # checked (ell * kl >= c or kl >= c / ell).
    p, b = p[todo], budget[todo] * (1.0 + _MARGIN)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_log_p = np.where(p > 0.0, p * np.log(p), 0.0)
        # Starts outside the set: kl >= (1 - p) (ln(1 - p) + u) + p ln p (from
        # -p ln q >= 0) everywhere, and Pinsker (kl >= 2 (q - p)**2) below 1.
        u_linear = (b - p_log_p) / (1.0 - p) - np.log1p(-p)
        q_pinsker = p + np.sqrt(0.5 * b)
        u_pinsker = np.where(q_pinsker < 1.0, -np.log1p(-q_pinsker), np.inf)
    u = np.minimum(u_linear, u_pinsker)
    active = np.flatnonzero(np.ones(u.shape, dtype=bool))
    for _ in range(_MAX_NEWTON):
        if not active.size:
            break
        ua, pa = u[active], p[active]
        g = _kl_in_u(pa, p_log_p[active], ua) - b[active]
        slope = (1.0 - pa) - pa / np.expm1(ua)  # d kl / du > 0 above p
        # From outside (g >= 0), Newton on a convex increasing function moves
        # inwards and never past the root.
        step = np.maximum(g / slope, 0.0)
        u[active] = ua - step
        active = active[step > 1e-15 * np.maximum(ua, 1.0)]
    q = -np.expm1(-u)
    # Rounding u to q can leave q a hair inside the root: step outwards until the
    # divergence is at least the budget (q = 1 is always outside).
    inside = (q < 1.0) & (bernoulli_kl(p, q) < b)
    while inside.any():
        q[inside] = np.minimum(np.nextafter(q[inside], 2.0), 1.0)
        inside &= (q < 1.0) & (bernoulli_kl(p, q) < b)
    out[todo] = q
    return out


def kl_upper_limit(successes, trials, budget):
    """Upper KL–Chernoff limits ``max{q >= S/ell : ell kl(S/ell || q) <= c}``.

    Parameters
    ----------
    successes, trials : array-like
        ``S`` and ``ell`` (``0 <= S <= ell``, ``ell >= 1``), broadcast together.
    budget : float or array-like
        ``c = ln(1 / delta)`` per limit.

    Returns
    -------
    ndarray
        Limits in ``[S/ell, 1]``, each at or above the exact root (never inside the
        confidence set's boundary).
    """
    s, n, c = np.broadcast_arrays(
        *(np.asarray(a, dtype=float) for a in (successes, trials, budget))
    )
    return _upper((s / n).ravel(), (c / n).ravel()).reshape(s.shape)


def kl_lower_limit(successes, trials, budget):
    """Lower KL–Chernoff limits ``min{q <= S/ell : ell kl(S/ell || q) <= c}``: the
    mirror of :func:`kl_upper_limit` (``kl(p || q) = kl(1 - p || 1 - q)``), each at
    or below the exact root."""
    s, n, c = np.broadcast_arrays(
        *(np.asarray(a, dtype=float) for a in (successes, trials, budget))
    )
    p, budget = (s / n).ravel(), (c / n).ravel()
    lower = 1.0 - _upper((n - s).ravel() / n.ravel(), budget)
    # 1 - q rounds to nearest below q = 1/2: step down until outside again.
    budget = budget * (1.0 + _MARGIN)
    inside = (lower > 0.0) & (bernoulli_kl(p, lower) < budget)
    while inside.any():
        lower[inside] = np.maximum(np.nextafter(lower[inside], -1.0) - 1e-16, 0.0)
        inside &= (lower > 0.0) & (bernoulli_kl(p, lower) < budget)
    return lower.reshape(s.shape)
