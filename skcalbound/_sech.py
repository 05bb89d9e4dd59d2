r"""The hyperbolic secant perturbation kernel on [0, 1], as pure functions.

A perturbed score is drawn from the density
:math:`k(s \mid s_o) = \operatorname{sech}((s - s_o)/h) / Z(s_o, h)` on [0, 1]
(paper section 5, equation (8); Appendix D, Lemma 7; SPEC section 6), written with
the Gudermannian in the overflow-free form :math:`2 \arctan(\tanh(x/2))`, finite
and exact for every :math:`h > 0`. No randomness, no state: the caller draws the
uniforms that :func:`sech_inverse_cdf` maps to scores. Inputs are assumed validated
(``h > 0``, ``s_orig`` in [0, 1]); all functions broadcast their array arguments.
"""

import numpy as np

from ._guarantee import guarantee_of

_HALF_PI = 0.5 * np.pi


def _result(out):
    """A 0-d array as a numpy scalar, anything else unchanged."""
    return out[()] if out.ndim == 0 else out


def gd(x):
    r"""Gudermannian function :math:`\operatorname{gd}(x) = \arctan(\sinh x)`.

    Parameters
    ----------
    x : float or array-like
        Real arguments; infinities are allowed.

    Returns
    -------
    float or ndarray
        Values in :math:`[-\pi/2, \pi/2]`, finite for every ``x`` (no overflow).

    Notes
    -----
    .. math:: \operatorname{gd}(x) = \arctan(\sinh x) = 2 \arctan(\tanh(x/2)),
              \qquad \operatorname{gd}'(x) = \operatorname{sech} x.

    It is the antiderivative of :math:`\operatorname{sech}` used in the closed form of
    the normaliser (Lemma 7, Appendix D). The ``tanh`` form avoids the overflow of
    ``sinh`` for :math:`|x| > 710` and is odd to the last bit.
    """
    return _result(_gd_inplace(np.array(x, dtype=float)))


def _gd_inplace(x):
    """:func:`gd` of the float array ``x``, written into ``x`` and returned.

    The operations of ``2 arctan(tanh(x / 2))`` in the same order, so bit for bit the
    values of :func:`gd`, without its temporaries.
    """
    x *= 0.5
    np.tanh(x, out=x)
    np.arctan(x, out=x)
    x *= 2.0
    return x


def gd_inverse(theta):
    r"""Inverse Gudermannian function.

    :math:`\operatorname{gd}^{-1}(\theta) = \operatorname{arcsinh}(\tan\theta)`.

    Parameters
    ----------
    theta : float or array-like
        Angles in :math:`[-\pi/2, \pi/2]`.

    Returns
    -------
    float or ndarray
        Finite on the open interval :math:`(-\pi/2, \pi/2)` (in floating point
        :math:`|\theta| \le` ``numpy.pi / 2`` maps to :math:`|x| \le 37.4`). An angle
        at :math:`\pm\pi/2` up to rounding (within ``1e-12``) maps to :math:`\pm\infty`;
        farther outside the domain the result is ``nan``.

    Notes
    -----
    .. math:: \operatorname{gd}^{-1}(\theta) = \operatorname{arcsinh}(\tan\theta)
              = 2 \operatorname{artanh}(\tan(\theta/2)).

    The half-angle form never evaluates :math:`\tan` near its pole, so it is accurate
    for small angles and as accurate as the angle itself near :math:`\pm\pi/2`, where
    the inverse is ill-conditioned
    (:math:`d\,\operatorname{gd}^{-1}/d\theta = \cosh x`). Used by the inverse-CDF
    sampler of SPEC section 6.
    """
    theta = np.asarray(theta, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 2.0 * np.arctanh(np.clip(np.tan(0.5 * theta), -1.0, 1.0))
    out = np.where(np.abs(theta) <= _HALF_PI + 1e-12, out, np.nan)
    return _result(out)


def sech(x):
    r"""Hyperbolic secant :math:`1/\cosh x`, without overflow.

    Parameters
    ----------
    x : float or array-like
        Real arguments; infinities are allowed.

    Returns
    -------
    float or ndarray
        Values in :math:`[0, 1]`.

    Notes
    -----
    .. math:: \operatorname{sech} x = \frac{2 e^{-|x|}}{1 + e^{-2|x|}},

    the kernel of equation (8) of the paper; ``cosh`` itself overflows for
    :math:`|x| > 710`, while :math:`e^{-|x|}` only underflows to zero.
    """
    return _result(_sech_inplace(np.array(x, dtype=float)))


def _sech_inplace(x, work=None):
    """:func:`sech` of the float array ``x``, written into ``x`` and returned.

    ``e = exp(-|x|)``, then ``2 e / (1 + e e)``: the operations of :func:`sech` in the
    same order, so bit for bit its values, without its temporaries. ``work``, if
    given, is a float buffer of the shape of ``x`` for ``1 + e e``.
    """
    np.abs(x, out=x)
    np.negative(x, out=x)
    np.exp(x, out=x)
    work = np.multiply(x, x, out=work)
    work += 1.0
    x *= 2.0
    x /= work
    return x


def sech_normalizer(s_orig, h):
    r"""Normaliser :math:`Z(s_o, h) = \int_0^1 \operatorname{sech}((s - s_o)/h)\,ds`.

    Parameters
    ----------
    s_orig : float or array-like
        Unperturbed scores in [0, 1].
    h : float or array-like
        Perturbation bandwidths, ``h > 0``.

    Returns
    -------
    float or ndarray
        :math:`Z > 0`, with :math:`h\pi/2 < Z \le h\pi` for :math:`s_o \in [0, 1]`.

    Notes
    -----
    Lemma 7 (Appendix D, equation (24)):

    .. math:: Z(s_o, h) = h \left[\operatorname{gd}\!\left(\frac{1 - s_o}{h}\right)
              + \operatorname{gd}\!\left(\frac{s_o}{h}\right)\right],
              \qquad \operatorname{gd}(x) = \arctan(\sinh x).
    """
    s_orig = np.asarray(s_orig, dtype=float)
    h = np.asarray(h, dtype=float)
    return _result(np.asarray(h * (gd((1.0 - s_orig) / h) + gd(s_orig / h))))


def sech_pdf(s, s_orig, h):
    r"""Density :math:`k(s \mid s_o)` of a perturbed score.

    Parameters
    ----------
    s : float or array-like
        Points at which to evaluate the density.
    s_orig : float or array-like
        Unperturbed scores in [0, 1].
    h : float or array-like
        Perturbation bandwidths, ``h > 0``.

    Returns
    -------
    float or ndarray
        The density on [0, 1], zero outside; finite for every ``h > 0``.

    Notes
    -----
    Equation (8) of the paper, normalised by Lemma 7 (Appendix D, equation (23)):

    .. math:: k(s \mid s_o) = \frac{\operatorname{sech}((s - s_o)/h)}{Z(s_o, h)}
              \,\mathbf{1}\{0 \le s \le 1\}.
    """
    s = np.asarray(s, dtype=float)
    s_orig = np.asarray(s_orig, dtype=float)
    h = np.asarray(h, dtype=float)
    out = np.asarray(sech((s - s_orig) / h) / sech_normalizer(s_orig, h))
    return _result(np.where((s >= 0.0) & (s <= 1.0), out, 0.0))


def sech_cdf(s, s_orig, h):
    r"""Distribution function :math:`K(s \mid s_o) = \int_0^s k(t \mid s_o)\,dt`.

    Parameters
    ----------
    s : float or array-like
        Points at which to evaluate; values outside [0, 1] give 0 or 1.
    s_orig : float or array-like
        Unperturbed scores in [0, 1].
    h : float or array-like
        Perturbation bandwidths, ``h > 0``.

    Returns
    -------
    float or ndarray
        Values in [0, 1].

    Notes
    -----
    With :math:`a = -s_o/h` and :math:`b = (1 - s_o)/h` (SPEC section 6, from the
    antiderivative of Lemma 7):

    .. math:: K(s \mid s_o) =
              \frac{\operatorname{gd}((s - s_o)/h) - \operatorname{gd}(a)}
              {\operatorname{gd}(b) - \operatorname{gd}(a)},

    clipped to [0, 1].
    """
    s = np.asarray(s, dtype=float)
    s_orig = np.asarray(s_orig, dtype=float)
    h = np.asarray(h, dtype=float)
    lower = gd(-s_orig / h)
    upper = gd((1.0 - s_orig) / h)
    out = (gd((s - s_orig) / h) - lower) / (upper - lower)
    return _result(np.clip(np.asarray(out), 0.0, 1.0))


def sech_inverse_cdf(u, s_orig, h):
    r"""Perturbed scores from uniforms, by exact inverse-CDF sampling.

    Parameters
    ----------
    u : float or array-like
        Uniforms in [0, 1), drawn by the caller (e.g. ``rng.uniform(size=n)``).
    s_orig : float or array-like
        Unperturbed scores in [0, 1].
    h : float or array-like
        Perturbation bandwidths, ``h > 0``.

    Returns
    -------
    float or ndarray
        Scores in [0, 1], finite for every ``h > 0`` and every ``s_orig`` in [0, 1]
        (including exactly 0 and 1); distributed as :math:`k(\cdot \mid s_o)` when ``u``
        is uniform. Nondecreasing in ``u``.

    Notes
    -----
    SPEC section 6: with :math:`a = -s_o/h`, :math:`b = (1 - s_o)/h` and
    :math:`\operatorname{gd}(x) = \arctan(\sinh x)`,

    .. math:: \theta =
              \operatorname{gd}(a) + u\,(\operatorname{gd}(b) - \operatorname{gd}(a)),
              \qquad s = s_o + h \operatorname{gd}^{-1}(\theta)
              = s_o + h \operatorname{arcsinh}(\tan\theta),

    clipped to [0, 1]. :math:`\theta` is uniform on :math:`(\operatorname{gd}(a),
    \operatorname{gd}(b))` and :math:`\operatorname{gd}` is the antiderivative of
    :math:`\operatorname{sech}` (Lemma 7, Appendix D), so :math:`s` has the CDF
    :func:`sech_cdf`. The angle is clipped to :math:`[\operatorname{gd}(a),
    \operatorname{gd}(b)]` against rounding; the resolution of :math:`\theta` limits the
    reach of the tails to :math:`|s - s_o| \lesssim 37 h`, a region of probability
    below :math:`10^{-15}`.
    """
    u = np.asarray(u, dtype=float)
    s_orig = np.asarray(s_orig, dtype=float)
    h = np.asarray(h, dtype=float)
    lower = gd(-s_orig / h)
    upper = gd((1.0 - s_orig) / h)
    theta = np.clip(lower + u * (upper - lower), lower, upper)
    out = s_orig + h * gd_inverse(theta)
    return _result(np.clip(np.asarray(out), 0.0, 1.0))


def sech_derivative_bounds(h, *, guarantee="high_probability"):
    r"""Derivative bounds :math:`(b_1, b_2)` of the perturbed calibration function.

    Parameters
    ----------
    h : float or array-like
        Perturbation bandwidths, ``h > 0``.
    guarantee : {'high_probability', 'paper'}, default='high_probability'
        Which bound on :math:`|\eta''|` to return: the sharp
        :math:`\tanh^2(1/h) / (2h^2)` (SPEC section 12) or the published
        :math:`\tfrac32 \tanh^2(1/h) / h^2` of Corollary 4, three times larger.
        :math:`b_1` is the same in both.

    Returns
    -------
    b1 : float or ndarray
        :math:`\tanh(1/h) / (2h)`, at most :math:`1/(2h)`.
    b2 : float or ndarray
        :math:`\tanh^2(1/h) / (2h^2)` (at most :math:`1/(2h^2)`) with
        ``guarantee="high_probability"``; :math:`\tfrac32 \tanh^2(1/h) / h^2` (at most
        :math:`\tfrac32 / h^2`) with ``guarantee="paper"``. ``inf`` where it exceeds
        the largest double (:math:`h \lesssim 10^{-154}`).

    Raises
    ------
    ValueError
        If ``guarantee`` is neither ``'high_probability'`` nor ``'paper'``.

    See Also
    --------
    sech_second_derivative_bound_at : The pointwise bound on :math:`|\eta''(s)|`.

    Notes
    -----
    For every unperturbed calibration function :math:`\eta_o` and score law, the
    calibration function :math:`\eta` of the perturbed classifier (equation (7))
    satisfies (Corollary 3, Appendix D; SPEC sections 4 and 12)

    .. math:: \sup_s |\eta'(s)| \le \frac{\tanh(1/h)}{2h}, \qquad
              \sup_s |\eta''(s)| \le \frac{\tanh^2(1/h)}{2h^2},

    three times below the published Corollary 4 (Appendix D),
    :math:`\sup_s |\eta''(s)| \le \tfrac32 \tanh^2(1/h)/h^2`, which
    ``guarantee="paper"`` returns, bit for bit as before.

    *Proof sketch of the constant 1/2.* Given the perturbed score :math:`s`, the
    unperturbed one has the posterior :math:`q(u) \propto k(s \mid u)\,dP(u)`, and
    :math:`\eta(s) = E_q f`, :math:`f = \eta_o(u)`. As :math:`Z(u, h)` does not depend
    on :math:`s`, :math:`t = \partial_s \log k(s \mid u) = \tanh((u - s)/h)/h
    \in [-A, B]` with :math:`A = \tanh(s/h)/h`, :math:`B = \tanh((1 - s)/h)/h`, and
    :math:`\partial_s t = t^2 - 1/h^2`; so :math:`\eta' = \operatorname{Cov}_q(f, t)`
    and :math:`\eta'' = 2 \operatorname{Cov}_q(f, t^2 - m t)`, :math:`m = E_q t`.
    This is affine in :math:`f`: take :math:`f \in \{0, 1\}`, with
    :math:`\pi = E_q f` and, on the parts :math:`f = 1` and :math:`f = 0`, means
    :math:`m_1 = c + d`, :math:`m_0 = c - d` and variances :math:`V_1, V_0` of
    :math:`t`. Then :math:`\eta'' = 2\pi(1 - \pi)[(m_1 - m_0)((1 - \pi) m_1 + \pi m_0)
    + V_1 - V_0]`. Bhatia--Davis gives :math:`V_1 \le (B - m_1)(m_1 + A) \le M^2 -
    m_1^2`, :math:`M = \max(A, B)`, so the bracket is at most :math:`M^2 - c^2 -
    (4\pi - 1) d^2`: at most :math:`M^2` if :math:`\pi \ge 1/4` (then
    :math:`\eta'' \le M^2/2`), at most :math:`(2 - 4\pi) M^2` otherwise (then
    :math:`\eta'' \le 0.385 M^2`). The same for :math:`1 - f` bounds :math:`-\eta''`:
    :math:`|\eta''(s)| \le M^2/2` (:func:`sech_second_derivative_bound_at`)
    :math:`\le \tanh^2(1/h)/(2h^2)`.

    No smaller uniform constant than :math:`\tfrac12` holds: at :math:`s = 1/2`, atoms
    at 0 and 1 with :math:`f = 1` and posterior weight :math:`1/4` each, and one at
    :math:`1/2` with :math:`f = 0` and weight :math:`1/2`, give
    :math:`\eta''(1/2) = \tanh^2(1/(2h))/(2h^2) \to 1/(2h^2)` as :math:`h \to 0`.
    """
    constant = guarantee_of(guarantee).b2_constant
    h = np.asarray(h, dtype=float)
    tau = np.tanh(1.0 / h)
    # Below h ~ 1e-154, b2 exceeds the largest double: inf is the honest value.
    with np.errstate(over="ignore", divide="ignore"):
        b2 = constant * tau * tau / (h * h)
    return _result(tau / (2.0 * h)), _result(b2)


def sech_second_derivative_bound_at(s, h):
    r"""Pointwise bound on :math:`|\eta''(s)|` for the sech-perturbed classifier.

    Parameters
    ----------
    s : float or array-like
        Perturbed scores in [0, 1].
    h : float or array-like
        Perturbation bandwidths, ``h > 0``.

    Returns
    -------
    float or ndarray
        :math:`\max(\tanh(s/h), \tanh((1 - s)/h))^2 / (2h^2)`, at most ``b2`` of
        :func:`sech_derivative_bounds` (``guarantee="high_probability"``), with equality
        at :math:`s = 0` and :math:`s = 1`; ``inf`` where it exceeds the largest double.

    See Also
    --------
    sech_derivative_bounds : The uniform bounds and the proof sketch.

    Notes
    -----
    For every score law and unperturbed calibration function (SPEC section 12),

    .. math:: |\eta''(s)| \le \frac{\max\big(\tanh(s/h), \tanh((1 - s)/h)\big)^2}{2h^2},

    attained at :math:`s = 1/2` by a three-atom law (see
    :func:`sech_derivative_bounds`).
    """
    s = np.asarray(s, dtype=float)
    h = np.asarray(h, dtype=float)
    tau = np.maximum(np.tanh(s / h), np.tanh((1.0 - s) / h))
    with np.errstate(over="ignore", divide="ignore"):
        out = 0.5 * tau * tau / (h * h)
    return _result(np.asarray(out))


def sech_lipschitz(h):
    r"""Lipschitz constant of the perturbed calibration function.

    :math:`L = \tanh(1/h)/(2h)`.

    Parameters
    ----------
    h : float or array-like
        Perturbation bandwidths, ``h > 0``.

    Returns
    -------
    float or ndarray
        :math:`b_1` of :func:`sech_derivative_bounds`.

    Notes
    -----
    Corollary 3 (Appendix D): :math:`|\eta(s_1) - \eta(s_2)| \le
    \frac{\tanh(1/h)}{2h} |s_1 - s_2|` (SPEC section 5).
    """
    return sech_derivative_bounds(h)[0]


def _cdf_rule(n_nodes):
    """Nodes in (0, 1) and weights for integrals over the CDF variable ``u``.

    Gauss-Legendre in ``t`` after ``u = t**3 (10 - 15 t + 6 t**2)``: the quantile
    function has logarithmic singularities at ``u = 0`` and ``u = 1`` (``log s`` at an
    end of [0, 1], and ``arcsinh(tan theta)`` near the tails); the substitution, flat to
    second order at both ends, turns them into ``t**3 log t``, which Gauss-Legendre
    integrates to ~1e-10 with 64 nodes (against ~1e-4 without it).
    """
    t, w = np.polynomial.legendre.leggauss(n_nodes)
    t = 0.5 * (t + 1.0)
    u = t**3 * (10.0 - 15.0 * t + 6.0 * t * t)
    return u, 0.5 * w * 30.0 * t * t * (1.0 - t) ** 2


def sech_expectations(s_orig, h, funcs, n_nodes=64, chunk=4096):
    r"""Expectations of functions of the perturbed score, by quadrature.

    Parameters
    ----------
    s_orig : ndarray of shape (n,)
        Unperturbed scores in [0, 1].
    h : float
        Perturbation bandwidth, ``h > 0``.
    funcs : sequence of callables
        Each is called as ``func(s, one_minus_s, rows)`` with the perturbed scores and
        their distances to 1, both of shape ``(m, n_nodes)``, and the row indices
        ``rows`` (shape ``(m,)``, into ``s_orig``), and returns an array of that shape.
    n_nodes : int, default=64
        Quadrature nodes per score.

    Returns
    -------
    list of ndarray of shape (n,)
        :math:`E[f(s) \mid s_o]` for each function.

    Notes
    -----
    With :math:`Q(u \mid s_o)` the quantile function of :math:`k(\cdot \mid s_o)`
    (:func:`sech_inverse_cdf`),
    :math:`E[f(s)] = \int_0^1 f(Q(u \mid s_o))\,du`: the integral in the CDF variable
    that SPEC section 6 asks for (the paper's Appendix F computes :math:`E \log s` by
    Gauss-Legendre quadrature). The angle :math:`\theta` of the sampler is affine in
    :math:`u`, so this is the same as integrating in :math:`\theta`.

    ``s = s_o + h x`` and ``1 - s = (1 - s_o) - h x`` are formed separately from the
    offset ``x = gd^{-1}(theta)``: near 1, ``1 - s`` keeps the digits that a rounded
    ``s`` would lose (a score within 1e-16 of 1 rounds to exactly 1, where
    ``log(1 - s)`` is infinite though its expectation is finite). Both are kept at
    least the smallest normal double against rounding at the outermost nodes, whose
    weights are ~1e-10.
    """
    u, w = _cdf_rule(n_nodes)
    tiny = np.finfo(np.float64).tiny
    out = [np.empty(s_orig.shape[0]) for _ in funcs]
    for start in range(0, s_orig.shape[0], chunk):
        rows = np.arange(start, min(start + chunk, s_orig.shape[0]))
        so = s_orig[rows, None]
        lower = gd(-so / h)
        upper = gd((1.0 - so) / h)
        theta = np.clip(lower + u[None, :] * (upper - lower), lower, upper)
        hx = h * gd_inverse(theta)
        s = np.clip(so + hx, tiny, 1.0)
        one_minus_s = np.clip((1.0 - so) - hx, tiny, 1.0)
        for k, func in enumerate(funcs):
            out[k][rows] = func(s, one_minus_s, rows) @ w
    return out
