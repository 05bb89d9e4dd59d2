"""The hand-written SPEC 13 reference (tests/_adaptive_reference.py) checked piece by
piece on tiny folds, for the properties SPEC 13 states, and by Monte Carlo."""

import math

import numpy as np
import pytest
from _adaptive_reference import (
    BB,
    SHARES,
    F,
    adaptive_fold,
    continuous_weights,
    default_pilot,
    lemma2_ucb,
    lemma4_AB,
    psi,
    tempered_epanechnikov,
    uniform_grid,
    var_ucb,
)

from skcalbound._terms import bernstein_term, maurer_transfer_term
from skcalbound.datasets import make_calibration_problem

TOL = dict(rel=1e-13, abs=1e-15)


def sech_b1_b2(h):
    """SPEC 12: ``b1 = tanh(1/h)/(2h)``, ``b2 = tanh(1/h)**2/(2h**2)``."""
    t = math.tanh(1.0 / h)
    return t / (2.0 * h), t * t / (2.0 * h * h)


def table_weights(table):
    return lambda s: np.array(table[s])


def test_F_and_BB_are_the_package_s():
    for a, n, delta in [(0.0, 10, 0.05), (0.3, 1000, 0.0017), (1.7, 7, 0.9)]:
        assert F(a, n, delta) - a == pytest.approx(
            maurer_transfer_term(a, n, delta), rel=1e-12
        )
    for n, delta, var in [(10, 0.05, 0.0), (1000, 0.0017, 0.2), (3, 0.9, 0.25)]:
        assert BB(n, delta, var) == pytest.approx(
            bernstein_term(n, delta, var), rel=1e-15
        )


def test_shares_sum_to_one():
    assert len(SHARES) == 11
    assert sum(SHARES.values()) == pytest.approx(1.0, abs=1e-15)


def test_psi():
    assert psi(0.0) == 0.5
    assert psi(1e-3) == pytest.approx(
        0.5 + 1e-3 / 6 + 1e-6 / 24 + 1e-9 / 120, rel=1e-15
    )
    for x in (0.5, 0.9, 3.0):
        assert psi(x) == pytest.approx((math.exp(x) - 1 - x) / x**2, rel=1e-14)
    assert psi(1 - 1e-15) == pytest.approx(psi(1.0), rel=1e-14)
    assert psi(800.0) == math.inf


# Three training points, two queries, weights given by hand.
TS, TY = [0.2, 0.4, 0.7], [0, 1, 1]
VS, VY = [0.3, 0.6], [0, 1]
W = {0.3: [0.5, 0.5, 0.0], 0.6: [0.0, 0.25, 0.75]}
PILOT = [0.2, 0.5, 0.7]


def test_hand_fold_absolute_bias():
    delta = 0.1
    out = adaptive_fold(
        TS, TY, VS, VY, table_weights(W), b1=1.0, b2=2.0, delta_fold=delta, pilot=PILOT
    )
    ell = {k: math.log(1.0 / (s * delta)) for k, s in SHARES.items()}
    # Per query.
    eta_hat = [0.5 * 0 + 0.5 * 1, 0.25 * 1 + 0.75 * 1]
    r = [abs(0.3 - eta_hat[0]), abs(0.6 - eta_hat[1])]
    m1 = [
        0.5 * (0.2 - 0.3) + 0.5 * (0.4 - 0.3),
        0.25 * (0.4 - 0.6) + 0.75 * (0.7 - 0.6),
    ]
    M2 = [0.5 * 0.1**2 + 0.5 * 0.1**2, 0.25 * 0.2**2 + 0.75 * 0.1**2]
    W2 = [0.5**2 + 0.5**2, 0.25**2 + 0.75**2]
    Babs = [min(1, 1.0 * abs(m1[v]) + 0.5 * 2.0 * M2[v]) for v in range(2)]
    for key, want in [
        ("eta_hat", eta_hat),
        ("r", r),
        ("m1", m1),
        ("M2", M2),
        ("W2", W2),
        ("d", [0.1, 0.2]),
        ("Babs", Babs),
        ("b", Babs),
    ]:
        assert out[key] == pytest.approx(want, **TOL), key
    assert out["branch"] == [0, 0] and out["f"] == [1.0, 1.0]
    assert out["R"] == [None, None] and out["fallback"] == [False, False]
    # Per training point.
    c = [0.5 / 2, (0.5 + 0.25) / 2, 0.75 / 2]
    e = [0.5**2 / 2, (0.5**2 + 0.25**2) / 2, 0.75**2 / 2]
    assert out["c"] == pytest.approx(c, **TOL)
    assert out["c_prime"] == pytest.approx(c, **TOL)
    assert out["e"] == pytest.approx(e, **TOL)
    # VarUCB of c'^2 at the pilot: gamma = (0.0375, 0, -0.05625), S = 0.
    a = [x * x for x in c]
    gamma = [a[0] * (1 - 2 * 0.2), 0.0, a[2] * (1 - 2 * 0.7)]
    assert out["gamma_dU"] == pytest.approx(gamma, **TOL)
    g = -gamma[2]
    tangent = (
        a[0] * 0.04 + a[1] * 0.25 + a[2] * 0.49 - g + 4 * (g * ell["dU"] / 2)
    )  # (sqrt(gl/2) + sqrt(gl/2 + 0))^2 = 4 gl/2
    S2 = min(sum(a) / 4, tangent)
    assert out["S2_tangent"] == pytest.approx(tangent, **TOL)
    assert out["S2"] == pytest.approx(S2, **TOL)
    # Jensen route.
    D_U = math.sqrt(2 * ell["bU"] * S2) + 0.375 * ell["bU"] / 3
    a_U = (r[0] + r[1]) / 2 + (Babs[0] + Babs[1]) / 2 + D_U
    Q = ((r[0] + Babs[0]) ** 2 + (r[1] + Babs[1]) ** 2) / 2
    sigma2 = sum(e) / 4
    d_star = math.sqrt(e[2])
    dev = math.sqrt(Q) + math.sqrt(2 * ell["gU"] * sigma2) + d_star * ell["gU"] / 3
    V_U = F(dev**2 + sigma2, 2, 0.025 * delta)
    U_J = min(F(a_U, 2, 0.17 * delta), a_U + math.sqrt(2 * ell["cU"] * V_U / 2))
    for key, want in [
        ("D_U", D_U),
        ("a_U", a_U),
        ("Q", Q),
        ("sigma2", sigma2),
        ("d_star", d_star),
        ("V_U", V_U),
        ("U_J", U_J),
    ]:
        assert out[key] == pytest.approx(want, **TOL), key
    # Lower bound and triangle route.
    C2 = sum(x * x for x in c)
    Psi_wc = (
        (
            min(1, Babs[0] + 0.5 * math.sqrt(W2[0]))
            + min(1, Babs[1] + 0.5 * W2[1] ** 0.5)
        )
        / 2
        + math.sqrt(ell["bL"] * C2 / 2)
        + 0.375 * ell["bL"] / 3
    )
    eta_t0 = [0.5 * 0.2 + 0.5 * 0.5, 0.25 * 0.5 + 0.75 * 0.7]
    N0 = [
        math.sqrt(0.25 * 0.2 * 0.8 + 0.25 * 0.5 * 0.5),
        math.sqrt(0.0625 * 0.5 * 0.5 + 0.5625 * 0.7 * 0.3),
    ]
    Psi_NB = (min(1, Babs[0] + N0[0]) + min(1, Babs[1] + N0[1])) / 2
    gamma_NB = [
        0.25 * (1 - 0.4) / (2 * N0[0]) / 2,
        (0.25 * 0.0 / (2 * N0[0]) + 0.0625 * 0.0 / (2 * N0[1])) / 2,
        0.5625 * (1 - 1.4) / (2 * N0[1]) / 2,
    ]
    assert out["eta_tilde0"] == pytest.approx(eta_t0, **TOL)
    assert out["N0"] == pytest.approx(N0, **TOL)
    assert out["gamma_NB"] == pytest.approx(gamma_NB, **TOL)
    # Lemma 2 for gamma_NB and labels (0, 1, 1): S = 0, sum gamma^- = -gamma_NB[2].
    gn = max(abs(gamma_NB[0]), abs(gamma_NB[2]))
    ucb = gamma_NB[2] + 4 * gn * ell["dL"] / 2
    assert lemma2_ucb(gamma_NB, TY, ell["dL"]) == pytest.approx(ucb, **TOL)
    Psi_tan = (
        Psi_NB
        - (gamma_NB[0] * 0.2 + gamma_NB[1] * 0.5 + gamma_NB[2] * 0.7)
        + ucb
        + math.sqrt(2 * ell["bL"] * min(S2, C2 / 4))
        + 0.375 * ell["bL"] / 3
    )
    a_L = min(Psi_wc, Psi_tan)
    rms = math.sqrt((Babs[0] ** 2 + Babs[1] ** 2) / 2)
    devL = (
        math.sqrt(sigma2)
        + math.sqrt(2 * ell["gL"] * sigma2)
        + d_star * ell["gL"] / 3
        + rms
    )
    V_A = F(min(1, devL**2), 2, 0.025 * delta)
    E_A = min(F(a_L, 2, 0.17 * delta), a_L + math.sqrt(2 * ell["cL"] * V_A / 2))
    var_r = ((r[0] - 0.3) ** 2 + (r[1] - 0.3) ** 2) / 2
    bb = (
        math.sqrt(2 * var_r * math.log(3 / (0.17 * delta)) / 2)
        + 3 * math.log(3 / (0.17 * delta)) / 2
    )
    for key, want in [
        ("Psi_wc", Psi_wc),
        ("Psi_NB_eta0", Psi_NB),
        ("Psi_tan", Psi_tan),
        ("a_L", a_L),
        ("V_A", V_A),
        ("E_A", E_A),
        ("bernstein_residual", bb),
        ("U_tri", 0.3 + bb + E_A),
        ("L", 0.3 - bb - E_A),
        ("U", min(U_J, 0.3 + bb + E_A)),
    ]:
        assert out[key] == pytest.approx(want, **TOL), key
    upper, lower = out["upper_terms"], out["lower_terms"]
    assert list(upper) == [
        "validation_mean",
        "bias_mean",
        "label_concentration",
        "population_transfer",
    ]
    assert list(lower) == [
        "validation_mean",
        "bernstein_residual",
        "smoothing_bound",
        "smoothing_transfer",
    ]
    assert sum(upper.values()) == pytest.approx(U_J, **TOL)
    assert lower["validation_mean"] - sum(list(lower.values())[1:]) == pytest.approx(
        out["L"], **TOL
    )


# h-mode: the first query sits near 0, where the relative branch wins.
HTS = [0.0, 0.1, 0.7]
HW = {0.05: [0.5, 0.5, 0.0], 0.6: [0.0, 0.25, 0.75]}


def test_hand_fold_h_mode():
    h = 0.25
    b1, b2 = sech_b1_b2(h)
    out = adaptive_fold(
        HTS,
        TY,
        [0.05, 0.6],
        VY,
        table_weights(HW),
        b1=b1,
        b2=b2,
        h=h,
        delta_fold=0.1,
        pilot=[0.01, 0.02, 0.7],
    )
    s, d, m1, M2 = 0.05, 0.05, 0.0, 0.5 * 0.05**2 + 0.5 * 0.05**2
    A, B = math.tanh(s / h) / h, math.tanh((1 - s) / h) / h
    A_hi, B_lo = math.tanh((s + d) / h) / h, math.tanh(1.0 / h) / h  # B(0)
    Kbar = A_hi + B_lo
    kappabar = 2 * (max(A_hi, B_lo) + 0.5 * min(A_hi, B_lo)) ** 2
    x = Kbar * d
    ps = (math.exp(x) - 1 - x) / x**2
    rho = (A + B) * abs(m1) + kappabar * ps * M2
    R = rho / (1 - rho)
    b1_v = min(b1, (A + B) / 4)
    Babs = min(1, b1_v * abs(m1) + 0.5 * b2 * M2)
    for key, want in [
        ("A", A),
        ("B", B),
        ("kappa1", A + B),
        ("b1_v", b1_v),
        ("Kbar", Kbar),
        ("kappabar", kappabar),
        ("psi", ps),
        ("rho", rho),
        ("R", R),
        ("Babs", Babs),
    ]:
        assert out[key][0] == pytest.approx(want, **TOL), key
    assert rho < 0.5 and R * s < Babs and R * s < R * (1 - s)
    eta_hat = 0.5
    assert out["branch"][0] == 1
    assert out["f"][0] == pytest.approx(1 + R, **TOL)
    assert out["b"][0] == pytest.approx(R * eta_hat, **TOL)
    assert out["Bhat"][0] == pytest.approx(min(Babs, R * 0.5), **TOL)
    f1 = out["f"][1]
    c_prime = [(1 + R) * 0.5 / 2, ((1 + R) * 0.5 + f1 * 0.25) / 2, f1 * 0.75 / 2]
    e = [(1 + R) ** 2 * 0.25 / 2, ((1 + R) ** 2 * 0.25 + f1**2 * 0.0625) / 2]
    assert out["c_prime"] == pytest.approx(c_prime, **TOL)
    assert out["e"][:2] == pytest.approx(e, **TOL)
    # Psi at the pilot (0.01, 0.02, 0.7): eta_tilde0 = 0.015 at the first query, where
    # the relative piece is the active minimum; training point 0 has weight only there.
    et0 = 0.5 * 0.01 + 0.5 * 0.02
    N0 = math.sqrt(0.25 * 0.01 * 0.99 + 0.25 * 0.02 * 0.98)
    assert out["eta_tilde0"][0] == pytest.approx(et0, **TOL)
    assert out["N0"][0] == pytest.approx(N0, **TOL)
    assert R * et0 < Babs and out["relative_active"][0]
    assert out["B0"][0] == pytest.approx(R * et0, **TOL) and R * et0 + N0 < 1
    noise = 0.25 * (1 - 2 * 0.01) / (2 * N0) / 2
    bias = R * 0.5 * 1 / 2  # sign(1/2 - 0.015) = 1
    assert out["gamma_NB"][0] == pytest.approx(noise + bias, **TOL)
    assert out["U"] >= out["L"]


def test_fallback_query_has_no_relative_branch():
    h = 0.25
    b1, b2 = sech_b1_b2(h)
    kw = dict(b1=b1, b2=b2, h=h, delta_fold=0.1, pilot=PILOT)
    plain = adaptive_fold(HTS, TY, [0.05, 0.6], VY, table_weights(HW), **kw)
    fb = adaptive_fold(
        HTS,
        TY,
        [0.05, 0.6],
        VY,
        table_weights(HW),
        is_fallback=lambda s: s == 0.05,
        **kw,
    )
    assert plain["R"][0] is not None and fb["R"][0] is None and fb["branch"][0] == 0


def test_var_ucb():
    rng = np.random.default_rng(0)
    for _ in range(50):
        m = int(rng.integers(1, 20))
        a = list(rng.uniform(0, 1, m) ** 3)
        eta0 = list(rng.uniform(1e-4, 1 - 1e-4, m))
        y = list(rng.integers(0, 2, m))
        ell = float(rng.uniform(0.1, 10))
        out = var_ucb(a, eta0, y, ell)
        assert out["value"] <= sum(a) / 4
        gamma = [ai * (1 - 2 * e) for ai, e in zip(a, eta0)]
        tangent = sum(ai * e * e for ai, e in zip(a, eta0)) + lemma2_ucb(gamma, y, ell)
        assert out["tangent"] == tangent
        assert out["value"] == min(sum(a) / 4, tangent)
    # A rare-label case where the tangent form is the smaller one.
    m = 200
    out = var_ucb([1.0 / m] * m, [0.01] * m, [0] * (m - 2) + [1, 1], 3.0)
    assert out["tangent"] < out["quarter"] and out["value"] == out["tangent"]


def test_lemma4_at_known_points():
    h = 0.25
    A0, B0 = lemma4_AB(0.0, h)
    A1, B1 = lemma4_AB(1.0, h)
    assert A0 == 0.0 and B1 == 0.0 and B0 == A1 == math.tanh(4.0) / h
    A, B = lemma4_AB(0.5, h)
    assert A == B == math.tanh(2.0) / h
    b1, _ = sech_b1_b2(h)
    # kappa1/4 at 1/2 is the exact sup of |eta'|, tanh(1/(2h))/(2h) <= b1.
    assert (A + B) / 4 == pytest.approx(math.tanh(0.5 / h) / (2 * h), rel=1e-15)
    assert (A + B) / 4 <= b1


def random_fold(seed, n=60, h=0.25, problem="overconfident"):
    data = make_calibration_problem(problem, 2 * n, h=h, random_state=seed)
    s, y = data.scores, data.labels
    weights, is_fallback = continuous_weights(s[:n], 0.15)
    b1, b2 = sech_b1_b2(h) if h else (data.assumptions["b1"], data.assumptions["b2"])
    cell_of, cell_centre = uniform_grid(16)
    kw = dict(
        b1=b1,
        b2=b2,
        h=h,
        is_fallback=is_fallback,
        bandwidth=0.15,
        cell_of=cell_of,
        cell_centre=cell_centre,
    )
    return s[:n], y[:n], s[n:], y[n:], weights, kw


def test_branch_depends_on_no_label():
    ts, ty, vs, vy, weights, kw = random_fold(1)
    one = adaptive_fold(ts, ty, vs, vy, weights, delta_fold=0.1, **kw)
    flipped = adaptive_fold(ts, 1 - ty, vs, 1 - vy, weights, delta_fold=0.1, **kw)
    assert one["branch"] == flipped["branch"] and one["R"] == flipped["R"]
    assert one["eta0"] != flipped["eta0"] and one["eta_hat"] != flipped["eta_hat"]
    assert 1 in one["branch"] and 2 in one["branch"]


def test_monotone_in_delta_and_U_above_L():
    ts, ty, vs, vy, weights, kw = random_fold(2)
    previous = None
    for delta in (0.001, 0.01, 0.05, 0.2, 0.5, 0.9):
        out = adaptive_fold(ts, ty, vs, vy, weights, delta_fold=delta, **kw)
        assert out["U"] >= out["L"]
        if previous is not None:
            for key in ("U", "U_J", "U_tri", "a_L", "E_A", "S2", "V_U", "V_A"):
                assert out[key] <= previous[key], key
            assert out["L"] >= previous["L"]
        previous = out


def test_default_pilot_by_hand():
    cell_of, cell_centre = uniform_grid(4)  # centres 1/8, 3/8, 5/8, 7/8
    vs, vy = [0.1, 0.3, 0.9], [1, 0, 1]
    eta0 = default_pilot(
        [0.2, 0.05, 0.7],
        vs,
        vy,
        bandwidth=0.2,
        cell_of=cell_of,
        cell_centre=cell_centre,
    )
    k = tempered_epanechnikov
    h2 = 0.4  # min(2 * 0.2, 1/2)
    # Training 0.2 and 0.05 share cell 0 (centre 1/8).
    k0 = [k(0 / h2), k(0.25 / h2), k(0.75 / h2)]
    want0 = (0.125 + k0[0] * 1 + k0[2] * 1) / (1 + sum(k0))
    k2 = [k(-0.5 / h2), k(-0.25 / h2), k(0.25 / h2)]
    want2 = (0.625 + k2[0] + k2[2]) / (1 + sum(k2))
    assert eta0 == pytest.approx([want0, want0, want2], **TOL)
    # Clipped to [1e-4, 1 - 1e-4].
    low = default_pilot([0.0], [0.0] * 10**5, [0] * 10**5, bandwidth=0.1)
    assert low == [1e-4]


def monte_carlo(repeats, n, h, seed):
    """Failures of ``L <= CE <= U`` at delta_fold = 0.5 over ``repeats`` folds of ``n``
    training and ``n`` validation points (continuous weights, bandwidth 0.15)."""
    problem = "overconfident"
    data = make_calibration_problem(problem, 2 * n * repeats, h=h, random_state=seed)
    ce = data.true_ce
    b1, b2 = sech_b1_b2(h) if h else (data.assumptions["b1"], data.assumptions["b2"])
    cell_of, cell_centre = uniform_grid(32)
    failures = 0
    for k in range(repeats):
        s = data.scores[2 * n * k : 2 * n * (k + 1)]
        y = data.labels[2 * n * k : 2 * n * (k + 1)]
        weights, is_fallback = continuous_weights(s[:n], 0.15)
        out = adaptive_fold(
            s[:n],
            y[:n],
            s[n:],
            y[n:],
            weights,
            b1=b1,
            b2=b2,
            h=h,
            delta_fold=0.5,
            is_fallback=is_fallback,
            bandwidth=0.15,
            cell_of=cell_of,
            cell_centre=cell_centre,
        )
        failures += not (out["L"] <= ce <= out["U"])
    return failures


def test_monte_carlo_coverage_small():
    assert monte_carlo(100, 150, None, 0) < 50


@pytest.mark.slow
@pytest.mark.parametrize("h", [None, 2**-3])
def test_monte_carlo_coverage(h):
    assert monte_carlo(500, 500, h, 1) < 250


def test_continuous_weights_and_fallback():
    weights, is_fallback = continuous_weights([0.125, 0.125, 0.625], 0.125)
    assert not is_fallback(0.15)
    assert weights(0.15) == pytest.approx([0.5, 0.5, 0.0], **TOL)
    assert weights(0.12) == pytest.approx([0.5, 0.5, 0.0], **TOL)
    assert weights(0.6) == pytest.approx([0.0, 0.0, 1.0], **TOL)
    assert is_fallback(0.375) and is_fallback(0.9)
    assert list(weights(0.375)) == [1 / 3, 1 / 3, 1 / 3]  # both sides, equidistant
    assert list(weights(0.9)) == [0.0, 0.0, 1.0]
    out = adaptive_fold(
        [0.125, 0.125, 0.625],
        [0, 1, 1],
        [0.375, 0.15],
        [0, 0],
        weights,
        b1=1.0,
        b2=1.0,
        h=0.5,
        delta_fold=0.1,
        is_fallback=is_fallback,
        pilot=[0.5] * 3,
    )
    assert out["fallback"] == [True, False] and out["R"][0] is None
    assert out["d"][0] == 0.25 and out["branch"][0] == 0
