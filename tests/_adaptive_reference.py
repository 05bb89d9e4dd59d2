"""SPEC 13 (the variance-adaptive NW certificate) for one fold, written out by hand.

Plain loops over queries and training points and nothing of skcalbound's NW code: the
reference that the grid implementation's ``terms_`` is checked against (issue 39).
Entry point :func:`adaptive_fold`; :func:`continuous_weights`, :func:`uniform_grid` and
:func:`tempered_epanechnikov` are plug-ins for self-tests.
"""

import math

import numpy as np

# SPEC 13, "Shares" (11 events): five main events at 0.17, six variance events at 0.025.
SHARES = {
    "cU": 0.17,
    "bU": 0.17,
    "aL": 0.17,
    "bL": 0.17,
    "cL": 0.17,
    "dU": 0.025,
    "fU": 0.025,
    "gU": 0.025,
    "dL": 0.025,
    "fL": 0.025,
    "gL": 0.025,
}
PILOT_CLIP = 1e-4  # the pilot lies in [PILOT_CLIP, 1 - PILOT_CLIP]
TEMPERING = 1.2  # the package's default tempering of the Epanechnikov kernel


# -- SPEC 2, 10, 11: F and BB -------------------------------------------------------
def F(a, n, delta):
    """SPEC 10: ``(sqrt(l/(2n)) + sqrt(l/(2n) + a))**2``, ``l = ln(1/delta)``."""
    u = math.log(1.0 / delta) / (2.0 * n)
    return (math.sqrt(u) + math.sqrt(u + a)) ** 2


def BB(n, delta, variance):
    """SPEC 2 / 11: ``sqrt(2 var ln(3/delta) / n) + 3 ln(3/delta) / n``."""
    ell = math.log(3.0 / delta)
    return math.sqrt(2.0 * variance * ell / n) + 3.0 * ell / n


def mean(values):
    return sum(values) / len(values)


def population_variance(values):
    """Divisor ``n``, two passes."""
    mu = mean(values)
    return sum((x - mu) ** 2 for x in values) / len(values)


# -- Lemma 4 and Corollary 4 -------------------------------------------------------
def lemma4_AB(s, h):
    """``A(s) = tanh(s/h)/h`` and ``B(s) = tanh((1-s)/h)/h``."""
    return math.tanh(s / h) / h, math.tanh((1.0 - s) / h) / h


def psi(x):
    """``(e^x - 1 - x)/x**2 = sum_k x**k/(k+2)!`` for ``x >= 0``: the series below 1
    (no cancellation), ``inf`` past 700."""
    if x < 1.0:
        total, term, k = 0.0, 0.5, 0
        while term > 1e-18 * total or k == 0:
            total += term
            k += 1
            term *= x / (k + 2)
        return total
    if x > 700.0:
        return math.inf
    return (math.expm1(x) - x) / (x * x)


# -- Lemma 2 and VarUCB -----------------------------------------------------------
def lemma2_ucb(gamma, y, ell):
    """Lemma 2's bound on ``<gamma, eta>``: ``-sum gamma^- + (sqrt(g l/2) +
    sqrt(g l/2 + S))**2``, ``S = sum(gamma^+ y + gamma^- (1 - y))``,
    ``g = max|gamma|``."""
    S = 0.0
    negative = 0.0
    g = 0.0
    for gi, yi in zip(gamma, y):
        plus, minus = max(gi, 0.0), max(-gi, 0.0)
        S += plus * yi + minus * (1 - yi)
        negative += minus
        g = max(g, abs(gi))
    return -negative + (math.sqrt(g * ell / 2.0) + math.sqrt(g * ell / 2.0 + S)) ** 2


def var_ucb(a, eta0, y, ell):
    """``VarUCB(a)`` of SPEC 13 as a dict: ``value = min(quarter, tangent)``, with
    ``quarter = sum a / 4`` and ``tangent = sum a eta0**2 + lemma2_ucb(gamma)``,
    ``gamma = a (1 - 2 eta0)``."""
    gamma = [ai * (1.0 - 2.0 * e0) for ai, e0 in zip(a, eta0)]
    quarter = sum(a) / 4.0
    tangent = sum(ai * e0 * e0 for ai, e0 in zip(a, eta0)) + lemma2_ucb(gamma, y, ell)
    return {
        "value": min(quarter, tangent),
        "quarter": quarter,
        "tangent": tangent,
        "gamma": gamma,
    }


# -- plug-ins for self-tests ---------------------------------------------------------
def tempered_epanechnikov(u, tempering=TEMPERING):
    """``(1 - u**2)**tempering`` for ``|u| < 1``, else 0 (the package's kernel shape,
    ``K(0) = 1``)."""
    return (1.0 - u * u) ** tempering if abs(u) < 1.0 else 0.0


def continuous_weights(train_scores, bandwidth, tempering=TEMPERING):
    """``(weights, is_fallback)`` for the continuous tempered Epanechnikov smoother:
    ``w_i(s) ∝ K((s_i - s)/bandwidth)``; where every kernel value is 0, equal weights
    on the training points at the smallest distance (both sides when equidistant).
    A plug-in for self-tests (numpy, for speed), not part of the reference."""
    t = np.asarray(train_scores, dtype=float)

    def raw(s):
        u = (t - s) / bandwidth
        return np.where(np.abs(u) < 1.0, np.maximum(1.0 - u * u, 0.0), 0.0) ** tempering

    def is_fallback(s):
        return not raw(s).any()

    def weights(s):
        k = raw(s)
        if k.any():
            return k / k.sum()
        dist = np.abs(t - s)
        nearest = dist == dist.min()
        return nearest / nearest.sum()

    return weights, is_fallback


def uniform_grid(n_cells):
    """``(cell_of, cell_centre)`` of ``n_cells`` equal cells on [0, 1] (score 1 in the
    last cell)."""

    def cell_of(s):
        return min(int(math.floor(s * n_cells)), n_cells - 1)

    def cell_centre(c):
        return (c + 0.5) / n_cells

    return cell_of, cell_centre


def cell_supremum_bias(n_cells, b1, b2, h=None):
    """A ``bias`` plug-in for a smoother whose weights are the same for every query
    of a cell of ``n_cells`` equal cells (the package's grid): ``Babs`` and ``R`` at
    their suprema over the query's cell ``[l, r]``, by Corollary 4's monotonicity:
    ``|m1|`` and ``M2`` at the worse cell edge, ``d`` from the cell's far edge to
    the far edge of the outermost training point's cell, ``kappa1`` at the point of
    the cell nearest 1/2, ``A(. + d)`` at ``r`` and ``B(. - d)`` at ``l``. A
    fallback query keeps its own (``None``)."""
    cell_of, _ = uniform_grid(n_cells)
    width = 1.0 / n_cells

    def bias(s, points, fallback):
        if fallback:
            return None
        left = cell_of(s) * width
        right = left + width
        m1 = max(abs(sum(w * (x - e) for x, w in points)) for e in (left, right))
        M2 = max(sum(w * (x - e) ** 2 for x, w in points) for e in (left, right))
        low = min(cell_of(x) for x, _ in points) * width
        high = (max(cell_of(x) for x, _ in points) + 1) * width
        d = max(right - low, high - left)
        b1_v, R = b1, None
        if h is not None:
            A, B = lemma4_AB(min(max(0.5, left), right), h)
            b1_v = min(b1, (A + B) / 4.0)
            A_hi = lemma4_AB(min(right + d, 1.0), h)[0]
            B_lo = lemma4_AB(max(left - d, 0.0), h)[1]
            kappabar = 2.0 * (max(A_hi, B_lo) + 0.5 * min(A_hi, B_lo)) ** 2
            rho = (A + B) * m1 + kappabar * psi((A_hi + B_lo) * d) * M2
            if rho < 0.5:
                R = rho / (1.0 - rho)
        return min(1.0, b1_v * m1 + 0.5 * b2 * M2), R

    return bias


def cell_centre_proxy(n_cells):
    """A ``branch_at`` plug-in: the centre of the query's cell of ``n_cells`` equal
    cells (the package's grid chooses one branch per cell)."""
    cell_of, cell_centre = uniform_grid(n_cells)
    return lambda s: cell_centre(cell_of(s))


def default_pilot(
    train_scores,
    val_scores,
    val_labels,
    *,
    bandwidth,
    kernel=tempered_epanechnikov,
    cell_of=None,
    cell_centre=None,
):
    """SPEC 13's default pilot, per training point. Reading chosen (SPEC 13 leaves it
    open): training point ``i`` gets the value of its cell ``c = cell_of(s_i)``, centre
    ``x = cell_centre(c)``; every validation point counts at its own cell's centre,
    with weight ``kernel((cell_centre(cell_of(s_v)) - x) / h2)``, ``h2 = min(2
    bandwidth, 1/2)``; the pseudo-observation has weight 1 (= ``kernel(0)``) and label
    ``x``: ``eta0 = clip((x + sum_v k_v y_v) / (1 + sum_v k_v), 1e-4, 1 - 1e-4)``.
    Default cells (``cell_of=None``): every score is its own cell, centre itself."""
    if cell_of is None:

        def cell_of(s):
            return s

        def cell_centre(c):
            return c

    h2 = min(2.0 * bandwidth, 0.5)
    val_centres = [cell_centre(cell_of(float(s))) for s in val_scores]
    labels = [int(y) for y in val_labels]
    by_cell = {}
    out = []
    for s in train_scores:
        c = cell_of(float(s))
        if c not in by_cell:
            x = cell_centre(c)
            num, den = x, 1.0
            for xv, yv in zip(val_centres, labels):
                k = kernel((xv - x) / h2)
                num += k * yv
                den += k
            by_cell[c] = min(max(num / den, PILOT_CLIP), 1.0 - PILOT_CLIP)
        out.append(by_cell[c])
    return out


# -- one fold ---------------------------------------------------------------------
def adaptive_fold(
    train_scores,
    train_labels,
    val_scores,
    val_labels,
    weights,
    *,
    b1,
    b2,
    h=None,
    delta_fold,
    is_fallback=None,
    pilot=None,
    bandwidth=None,
    kernel=tempered_epanechnikov,
    cell_of=None,
    cell_centre=None,
    bias=None,
    branch_at=None,
):
    """Every quantity of SPEC 13 for one fold, by plain loops.

    Parameters
    ----------
    train_scores, train_labels : sequences of length m (labels 0/1)
    val_scores, val_labels : sequences of length n, the *evaluated* validation
        points (``val_labels`` is read by the default pilot only).
    weights : callable, ``weights(s) -> m weights >= 0 summing to 1`` (the weights
        actually used, fallback included).
    b1, b2 : float, Lemma 6's derivative bounds (in h-mode those derived from ``h``,
        e.g. ``skcalbound.sech_derivative_bounds(h)``).
    h : float or None, the perturbation bandwidth: h-mode (pointwise ``b1_v`` and the
        relative branch) when given.
    delta_fold : float, the fold's failure probability, split by :data:`SHARES`.
    is_fallback : callable ``s -> bool`` or None (no fallback query): a fallback query
        gets no relative branch.
    pilot : m values in [1e-4, 1 - 1e-4], or None for :func:`default_pilot` with
        ``bandwidth``, ``kernel``, ``cell_of`` and ``cell_centre``.
    bias : callable ``bias(s, points, fallback) -> (Babs, R)`` or None (Lemma 6 and
        Corollary 4 as above): replaces ``Babs`` and ``R`` (None where undefined) for a
        smoother with another bias bound (``points``: the ``(s_i, w_i)`` with
        ``w_i > 0``; Lipschitz buckets, SPEC 5; :func:`cell_supremum_bias`), or
        returns None to keep them; the other entries stay as computed.
    branch_at : callable ``branch_at(s) -> x`` or None (``x = s``): the proxy at
        which the branch is chosen (a function of the query's score only).

    Returns
    -------
    dict, keys named as in SPEC 13. Per query (lists of n): ``eta_hat, r, m1, M2, W2,
    d, fallback, b1_v, Babs, A, B, kappa1, Kbar, kappabar, psi, rho, R`` (Lemma 4's
    entries None unless h-mode; ``R`` None where undefined), ``branch`` (k), ``f``,
    ``b`` (``b_v(eta_hat_v)``), ``Bhat``, ``eta_tilde0, N0, B0, relative_active``.
    Per training point (lists of m): ``c, c_prime, e, eta0, gamma_dU`` (VarUCB's
    ``gamma`` for ``c'**2``), ``gamma_NB``. Events: ``shares, deltas, ell``.
    Scalars: ``C2, S2`` (with ``S2_quarter, S2_tangent``), ``Q, sigma2, d_star, V_U,
    D_U, a_U, U_J, Psi_wc, Psi_NB_eta0, Psi_tan, a_L, V_A, E_A, bernstein_residual,
    U_tri, U, L, route`` ("jensen" or "triangle"). Tables: ``upper_terms``
    (``validation_mean, bias_mean, label_concentration, population_transfer``; sum
    ``U_J``) and ``lower_terms`` (``validation_mean, bernstein_residual,
    smoothing_bound, smoothing_transfer``; ``L = validation_mean - the others``).
    """
    ts = [float(x) for x in train_scores]
    ty = [int(y) for y in train_labels]
    vs = [float(x) for x in val_scores]
    m, n = len(ts), len(vs)
    if any(y not in (0, 1) for y in ty):
        raise ValueError("training labels must be 0 or 1")
    deltas = {k: share * delta_fold for k, share in SHARES.items()}
    ell = {k: math.log(1.0 / d) for k, d in deltas.items()}

    if pilot is None:
        if bandwidth is None:
            raise ValueError("the default pilot needs the fold's bandwidth")
        eta0 = default_pilot(
            ts,
            vs,
            val_labels,
            bandwidth=bandwidth,
            kernel=kernel,
            cell_of=cell_of,
            cell_centre=cell_centre,
        )
    else:
        eta0 = [float(x) for x in pilot]
    if len(eta0) != m or not all(PILOT_CLIP <= e <= 1.0 - PILOT_CLIP for e in eta0):
        raise ValueError("the pilot needs m values in [1e-4, 1 - 1e-4]")

    keys = (
        "eta_hat r m1 M2 W2 d fallback b1_v Babs A B kappa1 Kbar kappabar psi rho R "
        "branch f b Bhat eta_tilde0 N0 B0 relative_active"
    ).split()
    q = {k: [] for k in keys}
    support = []  # per query: [(i, w_i)] with w_i > 0
    c = [0.0] * m
    c_prime = [0.0] * m
    e = [0.0] * m

    # Pass over the queries: moments, bias, branch, c, c', e.
    for s in vs:
        w = np.asarray(weights(s), dtype=float).tolist()
        if len(w) != m or min(w) < 0.0 or abs(sum(w) - 1.0) > 1e-9:
            raise ValueError("weights(s) must be m weights >= 0 summing to 1")
        sup = [(i, wi) for i, wi in enumerate(w) if wi > 0.0]
        support.append(sup)
        eta_hat = sum(wi * ty[i] for i, wi in sup)
        m1 = sum(wi * (ts[i] - s) for i, wi in sup)
        M2 = sum(wi * (ts[i] - s) ** 2 for i, wi in sup)
        W2 = sum(wi * wi for i, wi in sup)
        d = max(abs(ts[i] - s) for i, wi in sup)
        fb = bool(is_fallback(s)) if is_fallback is not None else False
        A = B = kappa1 = Kbar = kappabar = ps = rho = R = None
        b1_v = b1
        if h is not None:
            A, B = lemma4_AB(s, h)
            kappa1 = A + B
            b1_v = min(b1, kappa1 / 4.0)
            # Window ends clipped to [0, 1] (SPEC: "arguments clipped to [0,1]"; read
            # as applying to both Kbar and kappabar).
            A_hi = lemma4_AB(min(s + d, 1.0), h)[0]
            B_lo = lemma4_AB(max(s - d, 0.0), h)[1]
            Kbar = A_hi + B_lo
            kappabar = 2.0 * (max(A_hi, B_lo) + 0.5 * min(A_hi, B_lo)) ** 2
            ps = psi(Kbar * d)
            second = 0.0 if M2 == 0.0 else kappabar * ps * M2
            rho = kappa1 * abs(m1) + second
            if rho < 0.5 and not fb:
                R = rho / (1.0 - rho)
        Babs = min(1.0, b1_v * abs(m1) + 0.5 * b2 * M2)
        if bias is not None:
            given = bias(s, [(ts[i], wi) for i, wi in sup], fb)
            if given is not None:
                Babs, R = given
        x = s if branch_at is None else branch_at(s)
        candidates = [Babs] if R is None else [Babs, R * x, R * (1.0 - x)]
        k = min(range(len(candidates)), key=lambda j: candidates[j])  # first on ties
        if k == 0:
            b = Babs
        elif k == 1:
            b = R * eta_hat
        else:
            b = R * (1.0 - eta_hat)
        f = 1.0 + R if k > 0 else 1.0
        Bhat = Babs if k == 0 else min(Babs, R * min(eta_hat, 1.0 - eta_hat))
        for i, wi in sup:
            c[i] += wi / n
            c_prime[i] += f * wi / n
            e[i] += f * f * wi * wi / n
        row = {
            "eta_hat": eta_hat,
            "r": abs(s - eta_hat),
            "m1": m1,
            "M2": M2,
            "W2": W2,
            "d": d,
            "fallback": fb,
            "b1_v": b1_v,
            "Babs": Babs,
            "A": A,
            "B": B,
            "kappa1": kappa1,
            "Kbar": Kbar,
            "kappabar": kappabar,
            "psi": ps,
            "rho": rho,
            "R": R,
            "branch": k,
            "f": f,
            "b": b,
            "Bhat": Bhat,
        }
        for key, value in row.items():
            q[key].append(value)

    # Pass over the queries at the pilot: Psi_NB(eta0) and its supergradient.
    gamma_NB = [0.0] * m
    for v in range(n):
        sup = support[v]
        et0 = sum(wi * eta0[i] for i, wi in sup)
        N0 = math.sqrt(sum(wi * wi * eta0[i] * (1.0 - eta0[i]) for i, wi in sup))
        Babs, R = q["Babs"][v], q["R"][v]
        relative = R is not None and R * min(et0, 1.0 - et0) < Babs
        B0 = R * min(et0, 1.0 - et0) if relative else Babs
        if B0 + N0 < 1.0:
            sign = (et0 < 0.5) - (et0 > 0.5)  # sign(1/2 - eta_tilde0)
            for i, wi in sup:
                gamma_NB[i] += wi * wi * (1.0 - 2.0 * eta0[i]) / (2.0 * N0) / n
                if relative:
                    gamma_NB[i] += R * wi * sign / n
        q["eta_tilde0"].append(et0)
        q["N0"].append(N0)
        q["B0"].append(B0)
        q["relative_active"].append(relative)

    out = dict(q)
    out.update(c=c, c_prime=c_prime, e=e, eta0=eta0, gamma_NB=gamma_NB)
    out.update(shares=dict(SHARES), deltas=deltas, ell=ell)

    # Upper bound, Jensen route.
    r, b = q["r"], q["b"]
    validation_mean = mean(r)
    bias_mean = mean(b)
    S2 = var_ucb([x * x for x in c_prime], eta0, ty, ell["dU"])
    D_U = math.sqrt(2.0 * ell["bU"] * S2["value"]) + max(c_prime) * ell["bU"] / 3.0
    a_U = validation_mean + bias_mean + D_U
    Q = mean([(rv + bv) ** 2 for rv, bv in zip(r, b)])
    sigma2 = sum(e) / 4.0
    d_star = math.sqrt(max(e))
    dev_U = math.sqrt(Q) + math.sqrt(2.0 * ell["gU"] * sigma2) + d_star * ell["gU"] / 3
    V_U = F(dev_U**2 + sigma2, n, deltas["fU"])
    U_J = min(F(a_U, n, deltas["cU"]), a_U + math.sqrt(2.0 * ell["cU"] * V_U / n))

    # Lower bound and triangle route.
    C2 = sum(x * x for x in c)
    c_max = max(c)
    Psi_wc = (
        mean([min(1.0, Ba + 0.5 * math.sqrt(W)) for Ba, W in zip(q["Babs"], q["W2"])])
        + math.sqrt(ell["bL"] * C2 / 2.0)
        + c_max * ell["bL"] / 3.0
    )
    Psi_NB_eta0 = mean([min(1.0, B0 + N0) for B0, N0 in zip(q["B0"], q["N0"])])
    Psi_tan = (
        Psi_NB_eta0
        - sum(g * x for g, x in zip(gamma_NB, eta0))
        + lemma2_ucb(gamma_NB, ty, ell["dL"])
        + math.sqrt(2.0 * ell["bL"] * min(S2["value"], C2 / 4.0))
        + c_max * ell["bL"] / 3.0
    )
    a_L = min(Psi_wc, Psi_tan)
    bhat_rms = math.sqrt(mean([x * x for x in q["Bhat"]]))
    dev_L = (
        math.sqrt(sigma2)
        + math.sqrt(2.0 * ell["gL"] * sigma2)
        + d_star * ell["gL"] / 3.0
        + bhat_rms
    )
    V_A = F(min(1.0, dev_L**2), n, deltas["fL"])
    E_A = min(F(a_L, n, deltas["cL"]), a_L + math.sqrt(2.0 * ell["cL"] * V_A / n))
    residual = BB(n, deltas["aL"], population_variance(r))
    U_tri = validation_mean + residual + E_A
    L = validation_mean - residual - E_A

    out.update(
        gamma_dU=S2["gamma"],
        C2=C2,
        S2=S2["value"],
        S2_quarter=S2["quarter"],
        S2_tangent=S2["tangent"],
        Q=Q,
        sigma2=sigma2,
        d_star=d_star,
        V_U=V_U,
        D_U=D_U,
        a_U=a_U,
        U_J=U_J,
        Psi_wc=Psi_wc,
        Psi_NB_eta0=Psi_NB_eta0,
        Psi_tan=Psi_tan,
        a_L=a_L,
        V_A=V_A,
        E_A=E_A,
        bernstein_residual=residual,
        U_tri=U_tri,
        U=min(U_J, U_tri),
        L=L,
        route="jensen" if U_J <= U_tri else "triangle",
        upper_terms={
            "validation_mean": validation_mean,
            "bias_mean": bias_mean,
            "label_concentration": D_U,
            "population_transfer": U_J - a_U,
        },
        lower_terms={
            "validation_mean": validation_mean,
            "bernstein_residual": residual,
            "smoothing_bound": a_L,
            "smoothing_transfer": E_A - a_L,
        },
    )
    return out
