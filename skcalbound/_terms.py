"""The terms of the certified bounds, as pure functions of numbers and arrays.

No scikit-learn, no randomness, no state: every formula here cites the equation of
Ciosek et al., "Measuring Uncertainty Calibration" (ICLR 2026, arXiv:2512.13872) it
implements, and the project's SPEC.md section that fixes its reading. Inputs are assumed
validated.
"""

import math

import numpy as np

from ._guarantee import guarantee_of


def population_variance(x):
    """Empirical variance with divisor ``m`` (the form the Bernstein bound uses), and
    the mean. Two passes (mean, then squared deviations), so no cancellation."""
    mean = float(np.mean(x))
    deviation = x - mean
    return float(np.dot(deviation, deviation)) / x.shape[0], mean


def bernstein_term(m, delta, variance):
    r"""Empirical Bernstein deviation for the mean of ``m`` i.i.d. variables in [0, 1].

    Parameters
    ----------
    m : int
        Number of variables.
    delta : float
        Failure probability, in (0, 1).
    variance : float
        Empirical variance with divisor ``m``.

    Returns
    -------
    float
        :math:`BB` such that :math:`P(\mu \le \bar X + BB) \ge 1 - \delta`.

    Notes
    -----
    .. math:: BB(m, \delta, \hat\sigma^2) =
              \sqrt{\frac{2 \hat\sigma^2 \ln(3/\delta)}{m}}
              + \frac{3 \ln(3/\delta)}{m}

    (Mnih et al., 2008; paper section 2; SPEC section 2.) For variables in
    :math:`[0, R]` use :math:`R \cdot BB(m, \delta, \hat\sigma^2(X/R))`.
    """
    log_term = math.log(3.0 / delta)
    return math.sqrt(2.0 * variance * log_term / m) + 3.0 * log_term / m


def tv_t1(delta1):
    r"""Mean-direction noise level :math:`t_1 = \sqrt{\tfrac12 \ln(4/\delta_1)}`.

    Notes
    -----
    Lemma 3 and Lemma 4 of the paper (Appendix B), with :math:`\delta' = \delta'' =
    \delta_1 / 2`.
    """
    return math.sqrt(0.5 * math.log(4.0 / delta1))


def tv_t2(m, delta1):
    r"""TV regularisation level :math:`t_2`.

    :math:`t_2 = \sqrt{\tfrac{m}{8} \ln\tfrac{4(m-1)}{\delta_1}}`.

    The prox weight of ``prox_tv.tv1_1d`` is :math:`t_2`, i.e. :math:`\lambda = t_2 / m`
    in problem (2).

    Notes
    -----
    Lemma 4 of the paper (Appendix B). Requires ``m >= 2``.
    """
    return math.sqrt(m / 8.0 * math.log(4.0 * (m - 1) / delta1))


def tv_denoising_term(m, delta1, V):
    r"""Training-set reconstruction error bound :math:`TVB(\delta_1)`.

    Notes
    -----
    Corollary 1 of the paper (Appendix B.4):

    .. math:: TVB(\delta_1) = \sqrt{\frac{2 t_1^2 + 2 t_1 \sqrt{t_1^2 + 4 t_2 V}
              + 4 t_2 V}{m}}

    When :math:`4 t_2 V` overflows (``V`` near the largest double), the same value
    is computed with :math:`V` factored out.
    """
    t1 = tv_t1(delta1)
    t2 = tv_t2(m, delta1)
    if math.isfinite(4.0 * t2 * V):
        return math.sqrt(
            (2.0 * t1**2 + 2.0 * t1 * math.sqrt(t1**2 + 4.0 * t2 * V) + 4.0 * t2 * V)
            / m
        )
    scaled = 2.0 * t1**2 / V + 2.0 * t1 * math.sqrt((t1 / V) ** 2 + 4.0 * t2 / V)
    return math.sqrt(V) * math.sqrt((scaled + 4.0 * t2) / m)


def tv_population_transfer_term(m, delta2, V, V_hat, delta3=None):
    r"""Population transfer bound :math:`PTB`.

    Parameters
    ----------
    m : int
        Training size.
    delta2 : float
        Failure probability of the DKW inequality.
    V, V_hat : float
        Assumed total variation of :math:`\eta` and that of the surrogate.
    delta3 : float, default=None
        Failure probability of Corollary 2's Hoeffding term at :math:`s = 0`; ``None``
        leaves the term out.

    Notes
    -----
    Corollary 2 of the paper (Appendix B.5), with the training size :math:`m` in the
    last term (SPEC section 9):

    .. math:: PTB = (V + \hat V) \sqrt{\frac{\ln(2/\delta_2)}{2m}}
              + \sqrt{\frac{\ln(2/\delta_3)}{2m}}

    The first part is DKW (Massart's constant) times the total variation of
    :math:`|\eta - \hat\eta|`; the second is Hoeffding at one point, Lemma 5's
    boundary term. That term is redundant (SPEC section 3, step 5): for every
    :math:`g` of bounded variation on [0, 1] and every law, atoms included,
    :math:`|\int g \, d(F - F_m)| \le V_g \|F - F_m\|_\infty` (integrate by parts
    from :math:`0^-`, where :math:`F - F_m` vanishes, so no boundary term remains), and
    DKW bounds the supremum alone. ``guarantee="paper"`` keeps it to reproduce the
    published numbers.
    """
    transfer = (V + V_hat) * math.sqrt(math.log(2.0 / delta2) / (2.0 * m))
    if delta3 is not None:
        transfer += math.sqrt(math.log(2.0 / delta3) / (2.0 * m))
    return transfer


def tv_delta_share(delta, guarantee):
    """The equal share of a TV fold's ``delta``: a third (``"high_probability"``: TVB,
    PTB and the Bernstein term) or a quarter (``"paper"``: also Corollary 2's redundant
    Hoeffding term)."""
    return delta / (4.0 if guarantee_of(guarantee).corollary2_hoeffding else 3.0)


def tv_bound_terms(residual_moments, m, delta, V, V_hat, guarantee="high_probability"):
    r"""All terms of the TV fold bound (Proposition 1), in the order they add up.

    Parameters
    ----------
    residual_moments : tuple of (int, float, float)
        Count, mean and population variance (divisor ``n``) of the residuals
        :math:`r_i = |s_i - \hat\eta(s_i)|` on the validation part, in [0, 1].
    m : int
        Training size.
    delta : float
        The fold's failure probability, split equally into three (four in
        ``"paper"`` mode).
    V, V_hat : float
        Assumed total variation of :math:`\eta` and total variation of the surrogate.
    guarantee : {"high_probability", "paper"}, default="high_probability"
        ``"paper"`` keeps Corollary 2's redundant Hoeffding term and its share of
        ``delta``.

    Returns
    -------
    dict
        ``validation_mean``, ``bernstein_residual``, ``tv_denoising``,
        ``population_transfer``; their sum is the fold bound, and
        ``validation_mean`` minus the other three the fold's lower bound.

    Notes
    -----
    .. math:: U = \frac{1}{|V|}\sum_{i \in V} r_i + BB(|V|, \delta_4, \hat\sigma^2(r))
              + TVB(\delta_1) + PTB(\delta_2),
              \quad \delta_1 = \delta_2 = \delta_4 = \delta / 3

    (SPEC section 3; the paper's form adds the :math:`\delta_3` term and uses
    :math:`\delta / 4`).
    """
    d = tv_delta_share(delta, guarantee)
    n, mean, variance = residual_moments
    return {
        "validation_mean": float(mean),
        "bernstein_residual": bernstein_term(n, d, variance),
        "tv_denoising": tv_denoising_term(m, d, V),
        "population_transfer": tv_population_transfer_term(
            m, d, V, V_hat, d if guarantee_of(guarantee).corollary2_hoeffding else None
        ),
    }


def nw_bound_terms(n, residual_moments, smoothing_moments, delta, R=1.0):
    r"""All terms of the NW fold bound (Proposition 2), in the order they add up.

    Parameters
    ----------
    n : int
        Number of evaluated validation points :math:`|V'|`.
    residual_moments : tuple of float
        Mean and population variance of :math:`|\hat\eta(s_i) - s_i| \in [0, 1]`
        over them.
    smoothing_moments : tuple of float
        Mean and population variance of :math:`\tilde g(s_i) \in [0, R]`.
    delta : float
        The fold's failure probability, split equally into two.
    R : float, default=1.0
        A bound on :math:`\tilde g` over [0, 1] computed from training data only.

    Returns
    -------
    dict
        ``validation_mean``, ``smoothing_mean``, ``bernstein_residual``,
        ``bernstein_smoothing``; their sum is the fold bound.

    Notes
    -----
    .. math:: U = \overline{|\hat\eta - s|} + \overline{\tilde g}
              + BB(|V'|, \delta_1, \hat\sigma^2(|\hat\eta - s|))
              + R \cdot BB(|V'|, \delta_2, \hat\sigma^2(\tilde g / R)),
              \quad \delta_1 = \delta_2 = \delta / 2.

    As published, the last step of Proposition 2 holds in expectation over the
    training labels (SPEC section 9).
    """
    d = delta / 2.0
    mean_r, var_r = residual_moments
    mean_g, var_g = smoothing_moments
    return {
        "validation_mean": float(mean_r),
        "smoothing_mean": float(mean_g),
        "bernstein_residual": bernstein_term(n, d, var_r),
        "bernstein_smoothing": R * bernstein_term(n, d, var_g / (R * R)),
    }


def maurer_transfer_term(a, n, delta):
    r"""From the mean of ``n`` i.i.d. variables in [0, 1] to their expectation.

    Parameters
    ----------
    a : float
        An upper bound on the sample mean, :math:`a \ge 0`.
    n : int
        Number of variables.
    delta : float
        Failure probability.

    Returns
    -------
    float
        :math:`F(a, n, \delta) - a`, so that :math:`\mu \le a + ` this term with
        probability at least :math:`1 - \delta`.

    Notes
    -----
    Maurer's lower-tail bound for non-negative variables, :math:`P(\mu - \bar A \ge
    t) \le \exp(-n t^2 / (2 E A^2))`, with :math:`E A^2 \le E A = \mu` on [0, 1],
    solved for :math:`\mu` (SPEC section 10, step ii): with :math:`\ell = \ln(1/\delta)`
    and :math:`u = \ell / (2n)`,

    .. math:: F(a, n, \delta) = \left(\sqrt{u} + \sqrt{u + a}\right)^2,
              \qquad F - a = 2u + 2\sqrt{u (u + a)}.

    :math:`F` increases with :math:`a`, so any upper bound on the sample mean may be
    used. The difference is computed without forming :math:`F`, so no digits cancel.
    """
    u = math.log(1.0 / delta) / (2.0 * n)
    return 2.0 * u + 2.0 * math.sqrt(u * (u + a))


def label_concentration_term(sum_c_squared, delta):
    r"""McDiarmid's deviation of the smoothing error over the training labels.

    Notes
    -----
    .. math:: \sqrt{\ln(1/\delta) \, C_2 / 2}, \qquad C_2 = \sum_i c_i^2,
              \quad c_i = \frac1n \sum_{v \in V'} w_i(s_v),

    since flipping the training label :math:`y_i` moves the mean over the evaluated
    validation points of :math:`\min(1, |\beta_v| + |\xi_v|)` by at most
    :math:`c_i` (SPEC section 10, step iii).
    """
    return math.sqrt(math.log(1.0 / delta) * sum_c_squared / 2.0)


def high_probability_terms(n, residual_moments, smoothing_mean, sum_c_squared, delta):
    r"""The five terms of the high-probability NW and Lipschitz fold bound.

    Parameters
    ----------
    n : int
        Number of evaluated validation points.
    residual_moments : tuple of float
        Mean and population variance of :math:`r = |s - \hat\eta(s)|` over them.
    smoothing_mean : float
        Mean of :math:`\tilde g = \min(1, g)` over them, :math:`g` the method's
        smoothing-error bound (Lemma 6).
    sum_c_squared : float
        :math:`C_2 = \sum_i c_i^2` over the training points.
    delta : float
        The fold's (or candidate's) failure probability, split equally into three.

    Returns
    -------
    dict
        ``validation_mean``, ``bernstein_residual``, ``smoothing_mean``,
        ``label_concentration``, ``population_transfer``: their sum is the fold's
        upper bound, and ``validation_mean`` minus the other four its lower bound.

    Notes
    -----
    SPEC sections 10 and 11, with :math:`\delta_a = \delta_b = \delta_c = \delta/3`:

    .. math:: U = \bar r + BB(n, \delta_a, \hat\sigma^2(r)) + \bar{\tilde g}
              + \sqrt{\ln(1/\delta_b) C_2 / 2}
              + \left[F(\bar{\tilde g} + \sqrt{\ln(1/\delta_b) C_2 / 2}, n, \delta_c)
              - (\bar{\tilde g} + \sqrt{\ln(1/\delta_b) C_2 / 2})\right].

    Unlike Proposition 2's last step (which holds in expectation over the training
    labels), this holds with probability :math:`1 - \delta` over all the data.
    """
    d = delta / 3.0
    mean_r, var_r = residual_moments
    concentration = label_concentration_term(sum_c_squared, d)
    a = float(smoothing_mean) + concentration
    return {
        "validation_mean": float(mean_r),
        "bernstein_residual": bernstein_term(n, d, var_r),
        "smoothing_mean": float(smoothing_mean),
        "label_concentration": concentration,
        "population_transfer": maurer_transfer_term(a, n, d),
    }


# SPEC 13: the variance-adaptive NW certificate. The shares of ``delta_fold`` of its
# eleven events (five at 0.17, six at 0.025: they sum to one).
ADAPTIVE_SHARES = {
    **dict.fromkeys(("cU", "bU", "aL", "bL", "cL"), 0.17),
    **dict.fromkeys(("dU", "fU", "gU", "dL", "fL", "gL"), 0.025),
}


def majorant_bound(majorant, delta):
    r"""Lemma 2 of ``math/adaptive_proofs.md``: the certified bound, at failure
    probability ``delta``, on a concave function of the training labels' rates
    through its affine majorant at the pilot (``majorant``: a
    ``_surrogates.nw._adaptive.Majorant``). Non-increasing in ``delta``.

    .. math:: \min\Big(\mathrm{cap},\ \mathrm{constant} - \sum_i \gamma^-_i
              + \big(\sqrt{g\ell/2} + \sqrt{g\ell/2 + S}\big)^2\Big),
              \qquad \ell = \ln(1/\delta).
    """
    m = majorant
    half = m.largest * math.log(1.0 / delta) / 2.0
    tail = (math.sqrt(half) + math.sqrt(half + m.observed)) ** 2
    return min(m.cap, m.constant - m.negative + tail)


def _maurer(a, n, delta):
    """``F(a, n, delta)`` of SPEC 10."""
    return a + maurer_transfer_term(a, n, delta)


def _freedman(variance, largest, ell):
    """Lemma 3's deviation ``sqrt(2 ell v) + c ell / 3`` (Bernstein-Freedman)."""
    return math.sqrt(2.0 * ell * variance) + largest * ell / 3.0


def adaptive_terms(statistics, delta):
    r"""The two routes of SPEC 13's fold certificate at the fold's ``delta``.

    Parameters
    ----------
    statistics : AdaptiveStatistics
        The fold's per-fold sums (``skcalbound/_surrogates/nw/_adaptive.py``), which
        do not depend on ``delta``.
    delta : float
        The fold's failure probability, shared among the eleven events as
        :data:`ADAPTIVE_SHARES`.

    Returns
    -------
    dict
        ``upper_terms`` (the Jensen route: ``validation_mean``, ``bias_mean``,
        ``label_concentration``, ``population_transfer``), ``lower_terms``
        (``validation_mean``, ``bernstein_residual``, ``smoothing_bound``,
        ``smoothing_transfer``), ``upper = min(U_J, U_tri)``, ``lower`` and ``route``
        (``"jensen"`` or ``"triangle"``, whichever gave ``upper``; Jensen on ties).

    Notes
    -----
    SPEC 13's two tables, term by term; every term is non-increasing in every share
    of ``delta`` (so non-increasing in ``delta``), as section 11's p-value asks.
    """
    s = statistics
    n = s.n
    d = {key: share * delta for key, share in ADAPTIVE_SHARES.items()}
    ell = {key: math.log(1.0 / value) for key, value in d.items()}
    mean_r, var_r = s.residual_moments
    d_star = math.sqrt(s.max_e)
    sigma2 = s.noise_variance

    # Jensen route.
    s2 = majorant_bound(s.c_prime, d["dU"])  # VarUCB_{dU}(c'^2)
    concentration = _freedman(s2, s.max_c_prime, ell["bU"])
    a_u = float(mean_r) + s.bias_mean + concentration
    root = math.sqrt(s.residual_bias_square) + _freedman(sigma2, d_star, ell["gU"])
    v_u = _maurer(root * root + sigma2, n, d["fU"])
    u_j = min(_maurer(a_u, n, d["cU"]), a_u + math.sqrt(2.0 * ell["cU"] * v_u / n))
    upper_terms = {
        "validation_mean": float(mean_r),
        "bias_mean": float(s.bias_mean),
        "label_concentration": concentration,
        "population_transfer": u_j - a_u,
    }

    # Triangle route and lower bound.
    step = s.max_c * ell["bL"] / 3.0
    psi_wc = s.worst_case_smoothing + math.sqrt(ell["bL"] * s.sum_c_squared / 2.0)
    psi_tan = majorant_bound(s.noise_bias, d["dL"]) + math.sqrt(
        2.0 * ell["bL"] * min(s2, s.sum_c_squared / 4.0)
    )
    a_l = min(psi_wc, psi_tan) + step
    root = math.sqrt(sigma2) + _freedman(sigma2, d_star, ell["gL"])
    root += math.sqrt(s.bias_square_mean)
    v_a = _maurer(min(1.0, root * root), n, d["fL"])
    e_a = min(_maurer(a_l, n, d["cL"]), a_l + math.sqrt(2.0 * ell["cL"] * v_a / n))
    residual = bernstein_term(n, d["aL"], var_r)
    lower_terms = {
        "validation_mean": float(mean_r),
        "bernstein_residual": residual,
        "smoothing_bound": a_l,
        "smoothing_transfer": e_a - a_l,
    }
    u_tri = float(mean_r) + residual + e_a
    return {
        "upper_terms": upper_terms,
        "lower_terms": lower_terms,
        "upper": min(u_j, u_tri),
        "lower": float(mean_r) - residual - e_a,
        "route": "jensen" if u_j <= u_tri else "triangle",
    }
