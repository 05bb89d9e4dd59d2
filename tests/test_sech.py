"""The sech perturbation kernel: closed forms against quadrature, the sampler against
its exact CDF (Kolmogorov-Smirnov), and the extreme bandwidths and scores where the
textbook formulas overflow."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate, stats

from skcalbound._sech import (
    gd,
    gd_inverse,
    sech,
    sech_cdf,
    sech_derivative_bounds,
    sech_inverse_cdf,
    sech_lipschitz,
    sech_normalizer,
    sech_pdf,
)

KS_BANDWIDTHS = [2.0**-2, 2.0**-6, 2.0**-12, 2.0**-20]
KS_CENTRES = [0.0, 1e-12, 0.3, 1.0]
EXTREME_BANDWIDTHS = [2.0**-30, 2.0**-20, 2.0**-6, 1.0, 1e3]
EXTREME_CENTRES = [0.0, 5e-324, 1e-12, 0.3, 0.5, 1.0 - 2.0**-53, 1.0]
QUAD_CELLS = [(0.3, 2.0**-2), (0.02, 2.0**-6), (1.0, 2.0**-4), (0.0, 2.0**-3),
              (0.5, 2.0**-12), (0.7, 1.0)]


def quad_checked(func, a, b, points=(), tol=1e-10):
    """``quad`` on [a, b] with breakpoints; asserts its own error estimate."""
    inner = sorted({p for p in points if a < p < b})
    value, error = integrate.quad(func, a, b, points=inner or None, limit=500,
                                  epsabs=tol / 10, epsrel=1e-13)
    assert error < tol, (value, error)
    return value


def kernel_points(s_orig, h):
    """Breakpoints where the kernel changes on the scale ``h``."""
    offsets = np.array([-40, -10, -3, -1, 0, 1, 3, 10, 40], dtype=float)
    return np.clip(s_orig + h * offsets, 0.0, 1.0)


def moments_by_quadrature(s_orig, h):
    """Mean of ``s - s_orig`` and central moments 2 and 4 of ``k(. | s_orig)``."""
    points = kernel_points(s_orig, h)
    mean = quad_checked(lambda s: (s - s_orig) * sech_pdf(s, s_orig, h), 0, 1,
                        points, tol=1e-11 * h)
    var = quad_checked(lambda s: (s - s_orig - mean) ** 2 * sech_pdf(s, s_orig, h),
                       0, 1, points, tol=1e-11 * h * h)
    m4 = quad_checked(lambda s: (s - s_orig - mean) ** 4 * sech_pdf(s, s_orig, h),
                      0, 1, points, tol=1e-10 * h**4)
    return mean, var, m4


# ----------------------------------------------------------------------------------
# Gudermannian
# ----------------------------------------------------------------------------------
def test_gd_matches_arctan_sinh_where_that_does_not_overflow():
    x = np.concatenate([np.linspace(-700, 700, 20_001), np.geomspace(1e-300, 1, 50)])
    with np.errstate(over="raise"):
        reference = np.arctan(np.sinh(x))
    assert_allclose(gd(x), reference, rtol=4e-16, atol=0)
    assert_allclose(gd(0.8), np.arctan(np.sinh(0.8)), rtol=4e-16)


def test_gd_is_finite_odd_and_saturates():
    x = np.array([1e3, 1e300, np.inf])
    assert np.all(np.isfinite(gd(x)))
    assert_allclose(gd(x), np.pi / 2, rtol=1e-16)
    x = np.linspace(-50, 50, 1001)
    assert np.array_equal(gd(-x), -gd(x))
    assert np.all(np.diff(gd(x)) >= 0)


def test_gd_inverse_round_trips():
    x = np.linspace(-30, 30, 6001)
    # d gd^{-1} / d theta = cosh(x): the angle's rounding (<= 2.3e-16) is amplified.
    error = np.abs(gd_inverse(gd(x)) - x)
    assert np.all(error <= 1e-14 * np.abs(x) + 4e-16 * np.cosh(x) + 1e-300)
    theta = np.linspace(-np.pi / 2, np.pi / 2, 10_001)[1:-1]
    assert_allclose(gd(gd_inverse(theta)), theta, rtol=0, atol=4.5e-16)
    assert_allclose(gd_inverse(1.2), np.arcsinh(np.tan(1.2)), rtol=1e-15)


def test_gd_inverse_at_the_ends_of_its_domain():
    half_pi = np.pi / 2  # just below the true pi/2: finite
    assert np.isfinite(gd_inverse(half_pi)) and gd_inverse(half_pi) > 37
    assert gd_inverse(-half_pi) == -gd_inverse(half_pi)
    assert gd_inverse(np.nextafter(half_pi, 2)) == np.inf
    assert gd_inverse(-np.nextafter(half_pi, 2)) == -np.inf
    assert np.all(np.isnan(gd_inverse([1.6, -2.0, np.inf, np.nan])))


def test_sech_has_no_overflow():
    x = np.array([0.0, 1.0, -3.0, 710.0, -1e4, 1e300, np.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = sech(x)
    assert_allclose(values, [1.0, 1 / np.cosh(1.0), 1 / np.cosh(3.0), 2 * np.exp(-710.0),
                             0.0, 0.0, 0.0], rtol=1e-15, atol=0)


# ----------------------------------------------------------------------------------
# Normaliser, density, distribution function
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("s_orig, h", QUAD_CELLS)
def test_normalizer_is_the_integral_of_the_unnormalised_kernel(s_orig, h):
    with np.errstate(over="ignore"):  # 1 / cosh(x) = 1 / inf = 0 far away
        z = quad_checked(lambda s: 1.0 / np.cosh((s - s_orig) / h), 0, 1,
                         kernel_points(s_orig, h), tol=1e-13)
    assert_allclose(sech_normalizer(s_orig, h), z, rtol=1e-11)


def test_normalizer_closed_form_and_lemma_7_extremes():
    h = 0.5
    assert_allclose(sech_normalizer(0.3, h),
                    h * (np.arctan(np.sinh(0.7 / h)) + np.arctan(np.sinh(0.3 / h))),
                    rtol=1e-15)
    s_orig = np.linspace(0, 1, 101)
    for h in [2.0**-30, 2.0**-6, 0.25, 1.0, 10.0]:
        z = sech_normalizer(s_orig, h)
        # Symmetric about 1/2, maximal there, minimal at the ends (Lemma 7).
        assert_allclose(z, z[::-1], rtol=1e-14)
        assert z[50] == z.max() and np.all(z[1:] >= z[0])
        assert z.min() == z[0] == z[-1]
        assert_allclose(z[0], h * np.arctan(np.sinh(min(1 / h, 700))), rtol=1e-14)
        assert np.all(z <= h * np.pi) and z[0] > 0


@pytest.mark.parametrize("s_orig, h", QUAD_CELLS)
def test_pdf_integrates_to_one(s_orig, h):
    total = quad_checked(lambda s: sech_pdf(s, s_orig, h), 0, 1,
                         kernel_points(s_orig, h), tol=1e-11)
    assert_allclose(total, 1.0, atol=1e-10)


@pytest.mark.parametrize("s_orig, h", QUAD_CELLS)
def test_cdf_is_the_integral_of_the_pdf(s_orig, h):
    points = kernel_points(s_orig, h)
    for s in np.unique(np.concatenate([points, [0.0, 0.1, 0.55, 1.0]])):
        inner = points[points < s]
        value = quad_checked(lambda t: sech_pdf(t, s_orig, h), 0, s, inner, tol=1e-11) \
            if s > 0 else 0.0
        assert_allclose(sech_cdf(s, s_orig, h), value, atol=1e-10)
    assert sech_cdf(-0.5, s_orig, h) == 0.0
    assert sech_cdf(1.5, s_orig, h) == 1.0


def test_pdf_hand_values_and_support():
    h = 0.25
    z = h * (np.arctan(np.sinh(0.6 / h)) + np.arctan(np.sinh(0.4 / h)))
    assert_allclose(sech_pdf(0.7, 0.4, h), 1 / np.cosh(0.3 / h) / z, rtol=1e-14)
    assert_allclose(sech_pdf([-1e-9, 1 + 1e-9], 0.4, h), [0.0, 0.0])
    # Peak 1/Z ~ 1/(pi h) for an interior centre and ~ 2/(pi h) at an end.
    assert_allclose(sech_pdf(0.5, 0.5, 2.0**-30) * np.pi * 2.0**-30, 1.0, rtol=1e-14)
    assert_allclose(sech_pdf(0.0, 0.0, 2.0**-30) * np.pi * 2.0**-30, 2.0, rtol=1e-14)


def test_cdf_and_pdf_are_reflection_symmetric():
    s = np.linspace(0, 1, 201)
    for s_orig, h in [(0.2, 0.1), (0.0, 2.0**-6), (1e-12, 2.0**-20)]:
        assert_allclose(sech_pdf(s, s_orig, h), sech_pdf(1 - s, 1 - s_orig, h),
                        rtol=1e-9, atol=1e-300)
        assert_allclose(sech_cdf(s, s_orig, h), 1 - sech_cdf(1 - s, 1 - s_orig, h),
                        atol=1e-12)


@pytest.mark.parametrize("h", EXTREME_BANDWIDTHS)
@pytest.mark.parametrize("s_orig", EXTREME_CENTRES)
def test_density_and_cdf_are_finite_without_warnings(s_orig, h):
    s = np.concatenate([np.linspace(0, 1, 101), s_orig + h * np.array([-1, 0, 1])])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            pdf = sech_pdf(s, s_orig, h)
            cdf = sech_cdf(s, s_orig, h)
            z = sech_normalizer(s_orig, h)
    assert np.all(np.isfinite(pdf)) and np.all(pdf >= 0)
    assert np.all((cdf >= 0) & (cdf <= 1))
    assert np.isfinite(z) and z > 0


# ----------------------------------------------------------------------------------
# Sampler
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("h", KS_BANDWIDTHS, ids=lambda h: f"h=2^{int(np.log2(h))}")
@pytest.mark.parametrize("s_orig", KS_CENTRES)
def test_sampler_kolmogorov_smirnov(s_orig, h):
    seed = KS_CENTRES.index(s_orig) * 100 + KS_BANDWIDTHS.index(h)
    u = np.random.default_rng(1234 + seed).uniform(size=20_000)
    samples = sech_inverse_cdf(u, s_orig, h)
    assert np.all(np.isfinite(samples)) and np.all((samples >= 0) & (samples <= 1))
    result = stats.kstest(samples, lambda x: sech_cdf(x, s_orig, h))
    assert result.pvalue > 1e-3, result


@pytest.mark.parametrize("s_orig, h", QUAD_CELLS[:5])
def test_sampler_mean_and_variance_match_quadrature(s_orig, h):
    n = 10**6
    rng = np.random.default_rng(int(1e6 * s_orig) + int(1 / h))
    centred = sech_inverse_cdf(rng.uniform(size=n), s_orig, h) - s_orig
    mean, var, m4 = moments_by_quadrature(s_orig, h)
    assert abs(centred.mean() - mean) < 5 * np.sqrt(var / n)
    sample_var = centred.var()
    assert abs(sample_var - var) < 5 * np.sqrt((m4 - var**2) / n)


def test_sampler_moments_far_from_the_ends_are_the_untruncated_ones():
    # sech(x)/pi is the hyperbolic secant law scaled by pi/2: variance pi^2/4 (units h^2).
    h = 2.0**-12
    mean, var, _ = moments_by_quadrature(0.5, h)
    assert abs(mean) < 1e-12 * h
    assert_allclose(var, (np.pi * h / 2) ** 2, rtol=1e-10)


@pytest.mark.parametrize("h", EXTREME_BANDWIDTHS)
@pytest.mark.parametrize("s_orig", EXTREME_CENTRES)
def test_sampler_is_finite_inside_the_unit_interval_at_the_extremes(s_orig, h):
    u = np.array([0.0, 1e-300, 2.0**-53, 0.25, 0.5, 0.75, 1 - 2.0**-53])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            samples = sech_inverse_cdf(u, s_orig, h)
    assert samples.shape == u.shape
    assert np.all(np.isfinite(samples)) and np.all((samples >= 0) & (samples <= 1))
    assert np.all(np.diff(samples) >= 0)
    # The extreme uniforms land in the extreme tails, close to the ends of the support.
    assert sech_cdf(samples[0], s_orig, h) < 1e-15
    assert sech_cdf(samples[-1], s_orig, h) > 1 - 1e-15


def test_sampler_broadcasts():
    u = np.linspace(0, 0.99, 12).reshape(3, 4)
    s_orig = np.array([0.0, 0.3, 0.6, 1.0])
    h = np.array([[0.1], [0.01], [1e-6]])
    out = sech_inverse_cdf(u, s_orig, h)
    assert out.shape == (3, 4)
    for i in range(3):
        for j in range(4):
            assert out[i, j] == sech_inverse_cdf(u[i, j], s_orig[j], h[i, 0])
    assert np.ndim(sech_inverse_cdf(0.5, 0.5, 0.1)) == 0


@pytest.mark.parametrize("h", [2.0**-2, 2.0**-6, 2.0**-12, 2.0**-20, 2.0**-30])
@pytest.mark.parametrize("s_orig", KS_CENTRES + [0.5])
def test_cdf_inverts_the_sampler(s_orig, h):
    u = np.concatenate([[0.0, 2.0**-53, 1e-12], np.linspace(0, 1, 2001)[1:-1],
                        [1 - 1e-12, 1 - 2.0**-53]])
    s = sech_inverse_cdf(u, s_orig, h)
    # Rounding s to a float moves the CDF by up to pdf(s) * spacing(s) / 2; that is
    # below 1e-9 for h >= 2^-20, but ~1e-8 at an interior s_orig for h = 2^-30.
    rounding = sech_pdf(s, s_orig, h) * np.spacing(np.maximum(s, s_orig))
    atol = 1e-9 if h >= 2.0**-20 else 1e-9 + rounding
    assert np.all(np.abs(sech_cdf(s, s_orig, h) - u) <= atol)


def test_sorted_uniforms_give_the_sorted_sample():
    # Inverse-CDF sampling is monotone: quantiles of the sample are images of the
    # uniforms' order statistics.
    u = np.random.default_rng(5).uniform(size=50_000)
    for s_orig, h in [(0.3, 2.0**-6), (1.0, 2.0**-20), (0.0, 2.0**-2)]:
        samples = sech_inverse_cdf(u, s_orig, h)
        assert np.array_equal(np.sort(samples), sech_inverse_cdf(np.sort(u), s_orig, h))
        probs = np.array([0.01, 0.1, 0.5, 0.9, 0.99])
        quantiles = np.quantile(samples, probs)
        n = u.shape[0]
        assert_allclose(sech_cdf(quantiles, s_orig, h), probs,
                        atol=5 * np.sqrt(0.25 / n))


def test_sampler_is_reflection_symmetric():
    u = np.linspace(0, 1, 1001)[1:-1]
    for s_orig, h in [(0.2, 0.1), (0.0, 2.0**-6)]:
        assert_allclose(sech_inverse_cdf(u, s_orig, h),
                        1 - sech_inverse_cdf(1 - u, 1 - s_orig, h), atol=1e-12)


# ----------------------------------------------------------------------------------
# Derivative bounds (Corollaries 3 and 4)
# ----------------------------------------------------------------------------------
def test_derivative_bounds_hand_values():
    b1, b2 = sech_derivative_bounds(0.5)
    assert_allclose(b1, np.tanh(2.0) / 1.0, rtol=1e-15)
    assert_allclose(b2, 1.5 * np.tanh(2.0) ** 2 * 4, rtol=1e-15)
    assert_allclose([b1, b2], [0.9640275800758169, 5.576095050881014], rtol=1e-14)
    b1, b2 = sech_derivative_bounds(1.0)
    assert_allclose([b1, b2], [np.tanh(1.0) / 2, 1.5 * np.tanh(1.0) ** 2], rtol=1e-15)
    assert sech_lipschitz(0.5) == sech_derivative_bounds(0.5)[0]


def test_derivative_bounds_limits_and_vectorisation():
    h = np.array([2.0**-30, 2.0**-10, 2.0**-6])
    b1, b2 = sech_derivative_bounds(h)
    # tanh(1/h) = 1 in floating point for small h: b1 = 1/(2h), b2 = 3/(2 h^2).
    assert_allclose(b1, 1 / (2 * h), rtol=1e-15)
    assert_allclose(b2, 1.5 / h**2, rtol=1e-15)
    assert_allclose(sech_lipschitz(h), b1, rtol=0)
    wide = np.geomspace(0.01, 100, 50)
    b1, b2 = sech_derivative_bounds(wide)
    assert np.all(np.diff(b1) < 0) and np.all(np.diff(b2) < 0)
    assert np.all(b1 <= 1 / (2 * wide)) and np.all(b2 <= 1.5 / wide**2)
    # Large h: tanh(1/h) ~ 1/h, so b1 ~ 1/(2 h^2).
    assert_allclose(sech_derivative_bounds(1e4)[0], 0.5e-8, rtol=1e-8)
