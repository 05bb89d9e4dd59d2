"""The KL–Chernoff limits of SPEC 14 step 3 written out by hand, for the brute-force
references of the band, its grid form and TV's cell bound: the divergence by its
formula and the roots by bracketing (scipy's brentq), not the package's Newton."""

import math

from scipy.optimize import brentq


def bernoulli_kl(p, q):
    """``kl(p || q)`` of two Bernoulli laws, ``0 ln 0 = 0``."""
    out = 0.0
    if p > 0.0:
        out += p * math.log(p / q)
    if p < 1.0:
        out += (1.0 - p) * math.log((1.0 - p) / (1.0 - q))
    return out


def kl_limits(S, ell, c):
    """``(lo, hi)``: the roots of ``ell kl(S/ell || q) = c`` below and above
    ``S/ell`` (0 at ``S = 0``, 1 at ``S = ell``). The package's limits lie outside
    them by about 1e-12 (its margin)."""
    p = S / ell

    def f(q):
        return ell * bernoulli_kl(p, q) - c

    hi = 1.0 if S == ell else brentq(f, p, 1.0 - 1e-16, xtol=1e-15)
    lo = 0.0 if S == 0 else brentq(f, 1e-300, p, xtol=1e-15)
    return lo, hi
