"""Exact and checked numerical integration helpers for the synthetic problems.

Nothing here draws random numbers: these functions compute the truth that the
samplers of :mod:`skcalbound.datasets` are checked against.
"""

import math
from fractions import Fraction

import numpy as np
from scipy import integrate


def abs_linear_integral(u, v, fu, fv):
    """Exact ``int_u^v |f|`` for ``f`` linear on ``[u, v]`` with ``f(u)=fu, f(v)=fv``.

    If ``f`` keeps its sign the integral is the trapezoid ``(v-u)(|fu|+|fv|)/2``. If it
    changes sign, the root splits ``[u, v]`` in the ratio ``|fu| : |fv|`` and each side
    is a triangle: ``(v-u)(fu^2 + fv^2) / (2(|fu| + |fv|))``.
    """
    if v < u:
        raise ValueError(f"need u <= v, got u={u}, v={v}")
    if fu * fv >= 0:
        return (v - u) * (abs(fu) + abs(fv)) / 2.0
    return (v - u) * (fu * fu + fv * fv) / (2.0 * (abs(fu) + abs(fv)))


def total_variation_up(values):
    """Exact total variation of a sequence of floats, rounded up to a float.

    The sum runs in exact rational arithmetic, so an assumed ``V`` is never
    understated by rounding.
    """
    exact = sum(
        (abs(Fraction(b) - Fraction(a)) for a, b in zip(values, values[1:])),
        Fraction(0),
    )
    out = float(exact)
    return out if Fraction(out) >= exact else math.nextafter(out, math.inf)


def checked_quad(func, a, b, *, points=None, tol=1e-10):
    """``scipy.integrate.quad`` that refuses an error estimate of ``tol`` or more."""
    value, error = integrate.quad(
        func, a, b, points=points, epsabs=tol / 10, epsrel=0.0, limit=500
    )
    if not error < tol:
        raise ArithmeticError(f"quad error estimate {error:.3g} >= {tol:.3g}")
    return float(value)


def gauss_legendre_panels(edges, order):
    """Nodes and weights of composite Gauss-Legendre with ``order`` nodes per panel."""
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.asarray(edges, dtype=float)
    lo, hi = edges[:-1, None], edges[1:, None]
    return (0.5 * (lo + hi) + 0.5 * (hi - lo) * x).ravel(), (
        0.5 * (hi - lo) * w
    ).ravel()


def panel_edges(breakpoints, width):
    """Sorted edges over [0, 1]: every breakpoint, no panel wider than ``width``."""
    points = np.unique(np.concatenate([[0.0, 1.0], np.clip(breakpoints, 0.0, 1.0)]))
    edges = [points[:1]]
    for a, b in zip(points[:-1], points[1:]):
        edges.append(np.linspace(a, b, max(1, math.ceil((b - a) / width)) + 1)[1:])
    return np.concatenate(edges)
