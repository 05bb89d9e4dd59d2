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


#: Largest error estimate accepted for a returned true calibration error: every
#: integrated truth (``true_ce``) refuses to return when its estimate is not below it.
MAX_INTEGRATION_ERROR = 1e-5


def checked_truth(value, error, what):
    """``value`` if its error estimate ``error`` keeps the promise, else an error.

    The promise is an error below :data:`MAX_INTEGRATION_ERROR`; a truth that cannot
    keep it raises ``ArithmeticError`` naming ``what`` rather than being returned.
    """
    if not error < MAX_INTEGRATION_ERROR:
        raise ArithmeticError(
            f"{what}: the true calibration error is known only to {error:.2g} "
            f"(integration error estimate), above {MAX_INTEGRATION_ERROR:g}, so it is "
            "not returned; use a smaller resolution, a larger h, or a score law whose "
            "density is less singular"
        )
    return value


# Distances from a point at which a density is probed for a singularity there, and
# the growth between them that marks one: a density f(x) ~ |x - b|^(a - 1) grows by
# (10^4)^(1 - a), at least 1.001 for a < 0.9999; a smooth one by 1 + O(1e-9 f'/f).
_PROBES = (1e-13, 1e-9)
_GROWTH = 1.001


def unbounded_points(pdf, points):
    """``(point, side)`` pairs where the density ``pdf`` is unbounded.

    ``points`` are sorted edges in [0, 1] (the breakpoints of a score law, ends
    included); ``side`` is ``-1`` (from the left) or ``+1`` (from the right). A side is
    unbounded when the density is not finite next to the point or grows by more than
    ``_GROWTH`` from ``1e-9`` to ``1e-13`` away from it, as ``|s - b|^(a - 1)`` does
    for ``a < 1`` (a Beta law's end with ``a < 1`` or ``b < 1``).
    """
    points = np.asarray(points, dtype=float)
    found = []
    for i, x in enumerate(points):
        for side in (-1, 1):
            j = i + side
            if not 0 <= j < points.size:
                continue
            gap = abs(points[j] - x)
            if gap <= 4 * _PROBES[1]:
                continue
            with np.errstate(all="ignore"):
                near, far = np.asarray(
                    pdf(np.array([x + side * _PROBES[0], x + side * _PROBES[1]])),
                    dtype=float,
                )
            if not np.isfinite(near) or (near > 0 and near > _GROWTH * far):
                found.append((float(x), side))
    return found


# Grading stops this close to the singular point: 1024 ulps (so that the last
# piece's nodes are distinct from it, where the density may be infinite), and never
# below 1e-290 (densities are not evaluated among subnormal numbers).
_ULPS = 1024
_SMALLEST = 1e-290


def graded_edges(edges, singular, pdf, *, ratio=0.125, order=16, tail=1e-16):
    """``edges`` with the panels next to ``singular`` points graded geometrically.

    For an integrable singularity of the density at an end ``b`` of a panel of width
    ``w`` (``singular``: ``(b, side)`` pairs of :func:`unbounded_points`), the panel
    is cut at ``b + side w ratio^j``, ``j = 1, 2, ...``: on each piece the density
    varies by a bounded factor, so Gauss-Legendre converges fast on every piece (the
    classical geometric mesh for algebraic end singularities). Pieces are added while
    the mass left next to ``b``, estimated from the last two pieces' masses (a
    geometric tail, as for ``|s - b|^(a - 1)``), is not below ``tail``, and while the
    pieces stay 1024 ulps (and ``1e-290``) away from ``b``; what is left is the last
    piece, and any mass its rule misses shows in the check that the density
    integrates to one.
    """
    edges = np.asarray(edges, dtype=float)
    if not singular:
        return edges
    cuts = [edges]
    for b, side in singular:
        i = np.searchsorted(edges, b)
        if side > 0:
            if i + 1 >= edges.size:
                continue
            width = edges[i + 1] - b
        else:
            if i == 0:
                continue
            width = b - edges[i - 1]
        previous = None
        level = 1
        while True:
            inner = width * ratio**level
            outer = width * ratio ** (level - 1)
            if not inner > max(_ULPS * np.spacing(b), _SMALLEST):
                break
            lo, hi = sorted((b + side * inner, b + side * outer))
            nodes, weights = gauss_legendre_panels([lo, hi], order)
            with np.errstate(all="ignore"):
                mass = float(weights @ np.asarray(pdf(nodes), dtype=float))
            cuts.append(np.array([b + side * inner]))
            if previous is not None and np.isfinite(mass):
                q = mass / previous if previous > 0 else 0.0
                if q < 1 and mass * q / (1 - q) < tail:
                    break
            previous = mass
            level += 1
    return np.unique(np.concatenate(cuts))
