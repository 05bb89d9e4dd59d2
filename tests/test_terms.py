"""Hand-computed values, limits and monotonicity of the bound terms."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skcalbound._terms import (
    bernstein_term,
    high_probability_terms,
    label_concentration_term,
    maurer_transfer_term,
    population_variance,
    tv_bound_terms,
    tv_denoising_term,
    tv_population_transfer_term,
    tv_t1,
    tv_t2,
)


def test_bernstein_term_hand_value():
    # m = 100, delta = 0.03 -> ln(3/delta) = ln(100); variance 0.04.
    log_term = math.log(100.0)
    expected = math.sqrt(2 * 0.04 * log_term / 100) + 3 * log_term / 100
    assert_allclose(bernstein_term(100, 0.03, 0.04), expected, rtol=1e-15)
    assert_allclose(bernstein_term(100, 0.03, 0.04), 0.1988522, atol=1e-7)


def test_bernstein_term_limits_and_monotonicity():
    # Zero variance leaves only the 3 ln(3/delta) / m part.
    assert_allclose(bernstein_term(50, 0.3, 0.0), 3 * math.log(10.0) / 50, rtol=1e-15)
    values = [bernstein_term(m, 0.05, 0.1) for m in (10, 100, 1000, 10_000)]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert bernstein_term(100, 0.01, 0.1) > bernstein_term(100, 0.1, 0.1)
    assert bernstein_term(100, 0.05, 0.2) > bernstein_term(100, 0.05, 0.1)


def test_population_variance_divides_by_m():
    x = np.array([0.0, 0.0, 1.0, 1.0])
    variance, mean = population_variance(x)
    assert mean == 0.5
    assert variance == 0.25  # np.var with ddof=1 would give 1/3


def test_tv_t1_t2_hand_values():
    assert_allclose(tv_t1(0.01), math.sqrt(0.5 * math.log(400.0)), rtol=1e-15)
    # m = 1001, delta1 = 0.004:
    # t2 = sqrt(1001 / 8 * ln(4 * 1000 / 0.004)) = sqrt(1001/8 * ln 1e6)
    assert_allclose(
        tv_t2(1001, 0.004), math.sqrt(1001 / 8 * 6 * math.log(10.0)), rtol=1e-14
    )


def test_tv_denoising_term_hand_value():
    m, delta1, V = 400, 0.0125, 1.0
    t1 = math.sqrt(0.5 * math.log(4 / delta1))
    t2 = math.sqrt(m / 8 * math.log(4 * (m - 1) / delta1))
    expected = math.sqrt(
        (2 * t1**2 + 2 * t1 * math.sqrt(t1**2 + 4 * t2 * V) + 4 * t2 * V) / m
    )
    assert_allclose(tv_denoising_term(m, delta1, V), expected, rtol=1e-14)
    assert_allclose(tv_denoising_term(m, delta1, V), 0.5845835, atol=1e-7)


@pytest.mark.parametrize("V", [0.5, 1.0, 3.0])
def test_tv_denoising_term_rate(V):
    # TVB ~ (t2 V / m)^(1/2) ~ m^(-1/4) up to logs: decreasing in m, increasing in V.
    values = [tv_denoising_term(m, 0.01, V) for m in (10**3, 10**4, 10**5, 10**6)]
    assert all(a > b for a, b in zip(values, values[1:]))
    ratio = values[-1] / values[-2]
    assert 10 ** (-0.25) < ratio < 10 ** (-0.2)
    assert tv_denoising_term(1000, 0.01, V * 2) > tv_denoising_term(1000, 0.01, V)


def test_tv_population_transfer_term_hand_value():
    m, d2, d3, V, V_hat = 250, 0.01, 0.02, 1.0, 0.4
    expected = 1.4 * math.sqrt(math.log(200.0) / 500) + math.sqrt(math.log(100.0) / 500)
    assert_allclose(
        tv_population_transfer_term(m, d2, V, V_hat, delta3=d3), expected, rtol=1e-15
    )
    # Without any variation only the Hoeffding part remains.
    assert_allclose(
        tv_population_transfer_term(m, d2, 0.0, 0.0, delta3=d3),
        math.sqrt(math.log(100.0) / 500),
        rtol=1e-15,
    )
    # The high-probability form has no Hoeffding part (SPEC section 3, step 5).
    assert_allclose(
        tv_population_transfer_term(m, d2, V, V_hat),
        1.4 * math.sqrt(math.log(200.0) / 500),
        rtol=1e-15,
    )
    assert tv_population_transfer_term(m, d2, 0.0, 0.0) == 0.0


def test_tv_bound_terms_split_delta_in_three_or_four():
    r = np.array([0.1, 0.3, 0.2, 0.4])
    m, delta, V, V_hat = 1000, 0.012, 1.0, 0.5
    moments = (r.size, float(r.mean()), float(np.var(r)))
    hp = tv_bound_terms(moments, m, delta, V, V_hat)
    paper = tv_bound_terms(moments, m, delta, V, V_hat, guarantee="paper")
    d3, d4 = delta / 3, delta / 4
    var = float(np.var(r))
    assert_allclose(hp["bernstein_residual"], bernstein_term(4, d3, var), rtol=1e-15)
    assert_allclose(hp["tv_denoising"], tv_denoising_term(m, d3, V), rtol=1e-15)
    assert_allclose(
        hp["population_transfer"],
        1.5 * math.sqrt(math.log(2 / d3) / (2 * m)),
        rtol=1e-15,
    )
    assert_allclose(paper["bernstein_residual"], bernstein_term(4, d4, var), rtol=1e-15)
    assert_allclose(paper["tv_denoising"], tv_denoising_term(m, d4, V), rtol=1e-15)
    assert_allclose(
        paper["population_transfer"],
        1.5 * math.sqrt(math.log(2 / d4) / (2 * m))
        + math.sqrt(math.log(2 / d4) / (2 * m)),
        rtol=1e-15,
    )
    assert hp["validation_mean"] == paper["validation_mean"] == 0.25
    assert sum(hp.values()) < sum(paper.values())


def test_maurer_transfer_term_hand_value():
    # u = ln(1/delta) / (2n); F(a) = (sqrt(u) + sqrt(u + a))**2.
    a, n, delta = 0.03, 2000, 0.004
    u = math.log(250.0) / 4000
    F = (math.sqrt(u) + math.sqrt(u + a)) ** 2
    assert_allclose(maurer_transfer_term(a, n, delta), F - a, rtol=1e-14)
    assert_allclose(maurer_transfer_term(a, n, delta), 0.01592, atol=5e-6)
    # a = 0: F = 4u.
    assert_allclose(maurer_transfer_term(0.0, n, delta), 4 * u, rtol=1e-15)


def test_maurer_transfer_term_solves_the_tail_inequality():
    # mu = a + term is the largest mu with mu - a <= sqrt(2 mu ln(1/delta) / n).
    a, n, delta = 0.2, 500, 0.01
    mu = a + maurer_transfer_term(a, n, delta)
    assert_allclose(mu - a, math.sqrt(2 * mu * math.log(1 / delta) / n), rtol=1e-12)
    # Increasing in a, decreasing in n and in delta.
    assert maurer_transfer_term(0.3, n, delta) > maurer_transfer_term(0.2, n, delta)
    assert maurer_transfer_term(a, 1000, delta) < maurer_transfer_term(a, n, delta)
    assert maurer_transfer_term(a, n, 0.1) < maurer_transfer_term(a, n, delta)


def test_label_concentration_term_hand_value():
    # c_i = 1/m for m training points: C2 = 1/m, Hoeffding's deviation of a mean.
    m, delta = 400, 0.01
    assert_allclose(
        label_concentration_term(1.0 / m, delta),
        math.sqrt(math.log(100.0) / (2 * m)),
        rtol=1e-15,
    )


def test_high_probability_terms_add_up():
    n, moments, g, c2, delta = 1000, (0.12, 0.01), 0.05, 2e-3, 0.03
    terms = high_probability_terms(n, moments, g, c2, delta)
    d = delta / 3
    lc = math.sqrt(math.log(1 / d) * c2 / 2)
    u = math.log(1 / d) / (2 * n)
    expected = {
        "validation_mean": 0.12,
        "bernstein_residual": bernstein_term(n, d, 0.01),
        "smoothing_mean": 0.05,
        "label_concentration": lc,
        "population_transfer": (math.sqrt(u) + math.sqrt(u + g + lc)) ** 2 - (g + lc),
    }
    assert list(terms) == list(expected)
    for name, value in expected.items():
        assert_allclose(terms[name], value, rtol=1e-13, err_msg=name)
