"""KL–Chernoff limits (skcalbound._surrogates._chernoff): closed forms, the safe side
of the root, and agreement with an independent root finder."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import brentq

from skcalbound._surrogates._chernoff import (
    bernoulli_kl,
    kl_lower_limit,
    kl_upper_limit,
)


def test_closed_forms_at_the_ends():
    # S = 0: kl(0 || q) = -ln(1 - q), so the upper limit is 1 - exp(-c / ell);
    # S = ell: kl(1 || q) = -ln q, so the lower limit is exp(-c / ell).
    ell = np.array([1, 7, 32, 1000])
    c = np.array([0.5, 3.0, 12.0, 40.0])
    assert_allclose(kl_upper_limit(0, ell, c), -np.expm1(-c / ell), rtol=1e-11)
    assert_allclose(kl_lower_limit(ell, ell, c), np.exp(-c / ell), rtol=1e-11)
    assert np.all(kl_upper_limit(ell, ell, c) == 1.0)
    assert np.all(kl_lower_limit(0, ell, c) == 0.0)


def test_hand_checked_value():
    # S = 5 of ell = 10, c = ln(20): kl(1/2 || q) = ln(20) / 10 has the root
    # q = 0.8357 (0.5 ln(0.5/0.8357) + 0.5 ln(0.5/0.1643) = 0.2996 = ln(20) / 10).
    def f(q):
        return 0.5 * np.log(0.5 / q) + 0.5 * np.log(0.5 / (1 - q)) - np.log(20) / 10

    root = brentq(f, 0.5, 1 - 1e-12, xtol=1e-15)
    assert root == pytest.approx(0.8357, abs=1e-4)
    assert_allclose(kl_upper_limit(5, 10, np.log(20)), root, rtol=1e-11)
    assert_allclose(kl_lower_limit(5, 10, np.log(20)), 1 - root, rtol=1e-11)


def test_limits_are_on_the_safe_side_and_match_a_root_finder():
    rng = np.random.default_rng(0)
    n = 400
    ell = rng.integers(1, 5000, size=n)
    S = rng.binomial(ell, rng.uniform(size=n) ** 3)
    c = rng.uniform(0.01, 40, size=n)
    S[:20], S[20:40] = 0, ell[20:40]
    hi, lo = kl_upper_limit(S, ell, c), kl_lower_limit(S, ell, c)
    p = S / ell
    assert np.all((lo <= p) & (p <= hi) & (lo >= 0) & (hi <= 1))
    # Outside the confidence set (or at its end 0 / 1), as evaluated in floats.
    assert np.all((ell * bernoulli_kl(p, hi) >= c) | (hi == 1.0))
    assert np.all((ell * bernoulli_kl(p, lo) >= c) | (lo == 0.0))
    top = np.nextafter(1.0, 0.0)
    for i in range(n):

        def f(q, i=i):
            return ell[i] * bernoulli_kl(p[i], q) - c[i]

        if p[i] < 1.0 and f(top) > 0:
            assert hi[i] == pytest.approx(brentq(f, p[i], top, rtol=1e-15), rel=1e-11)
        if p[i] > 0.0 and f(1e-300) > 0:
            root = brentq(f, 1e-300, p[i], xtol=1e-300, rtol=1e-15)
            assert lo[i] == pytest.approx(root, rel=1e-11, abs=1e-15)


def test_limits_are_monotone_in_the_count_and_the_budget():
    ell = 64
    S = np.arange(ell + 1)
    for c in (1.0, 10.0):
        assert np.all(np.diff(kl_upper_limit(S, ell, c)) >= 0)
        assert np.all(np.diff(kl_lower_limit(S, ell, c)) >= 0)
    assert np.all(kl_upper_limit(S, ell, 10.0) >= kl_upper_limit(S, ell, 1.0))
    assert np.all(kl_lower_limit(S, ell, 10.0) <= kl_lower_limit(S, ell, 1.0))


def test_broadcasting_and_no_mutation():
    S = np.array([[0, 3], [5, 8]])
    before = S.copy()
    out = kl_upper_limit(S, 8, 2.0)
    assert out.shape == (2, 2)
    np.testing.assert_array_equal(S, before)
