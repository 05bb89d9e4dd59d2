"""Synthetic calibration problems with an exactly known calibration error.

A *problem* fixes the law of the score ``s`` on [0, 1] and the calibration function
``eta(s) = E[y | s]``; labels are drawn as ``rng.uniform(size=n) < eta(s)``. Every
problem knows

- ``true_ce``: the L1 calibration error ``CE = E|s - eta(s)|``, in closed form or as an
  exact finite sum (never by Monte Carlo);
- ``assumptions``: the constants of the assumptions that hold for it, keyed by the
  estimator parameter they feed (``{"V": ...}`` here; problems for the NW and
  Lipschitz bounds add e.g. ``"L"``, ``"b1"``, ``"b2"``). ``V`` is always an upper bound
  on the total variation of ``eta`` on [0, 1], and is exact for the problems below.
  A problem with several constants is used through ``assumption_kwargs(*names)``;
  only :func:`default_problems` (all ``{"V": ...}``) feed the TV coverage tests.

:class:`SmoothSine` (exact ``b1``, ``b2``) and :class:`SechPerturbed` (a classifier
perturbed as in SPEC section 6, with atoms and a non-smooth ``eta_orig`` underneath; its
CE, paper eq. (7), by quadrature with a reported error estimate) serve the NW and
Lipschitz bounds; see :func:`smooth_problems` and :func:`perturbed_problems`.
:class:`Oscillating` (``eta(s) = s + 0.15 sin(80 pi s)`` on ``s ~ U(0.2, 0.8)``, exact
``CE``, ``L``, ``b2``, ``V``) is the case where binned ECE stays wrong as ``n`` grows.

``coverage`` is the Monte Carlo harness of ``test_guarantees.py``: it repeats
``fit`` on independent samples and independent fold seeds and counts how often a
certified quantity falls below the truth. It takes an estimator *factory*, so any
bound with a ``bound_`` attribute plugs in.

Derivations are in the comments next to each problem. Where a later problem needs a
numerical integral, use :func:`checked_quad`, which refuses an error estimate above
``1e-10``.
"""

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np
from scipy import integrate, optimize, stats

from skcalbound._sech import (
    gd,
    sech,
    sech_derivative_bounds,
    sech_inverse_cdf,
    sech_normalizer,
)

__all__ = [
    "CalibratedBeta",
    "CalibrationProblem",
    "CoverageResult",
    "DiscreteTies",
    "Oscillating",
    "PiecewiseLinear",
    "PERTURBED_RULES",
    "PowerMiscalibrated",
    "SechPerturbed",
    "SmoothSine",
    "abs_linear_integral",
    "atoms_and_linear",
    "binomial_tolerance",
    "checked_quad",
    "coverage",
    "default_problems",
    "fitted_bound",
    "gauss_legendre_panels",
    "panel_edges",
    "perturbed_problems",
    "smooth_problems",
    "total_variation_up",
    "zigzag_base",
    "zigzag_steps",
]


# ----------------------------------------------------------------------------------
# Exact integration helpers
# ----------------------------------------------------------------------------------
def abs_linear_integral(u, v, fu, fv):
    """Exact ``int_u^v |f(s)| ds`` for ``f`` linear on ``[u, v]`` with ``f(u)=fu, f(v)=fv``.

    If ``f`` keeps its sign the integral is the trapezoid ``(v-u)(|fu|+|fv|)/2``. If it
    changes sign, the root splits ``[u, v]`` in the ratio ``|fu| : |fv|`` and each side
    is a triangle: ``(v-u)(fu^2 + fv^2) / (2(|fu| + |fv|))``.
    """
    if v < u:
        raise ValueError("need u <= v")
    if fu * fv >= 0:
        return (v - u) * (abs(fu) + abs(fv)) / 2.0
    return (v - u) * (fu * fu + fv * fv) / (2.0 * (abs(fu) + abs(fv)))


def total_variation_up(values):
    """Exact total variation of a sequence of floats, rounded up to a float.

    The sum runs in exact rational arithmetic, so an assumed ``V`` is never
    understated by rounding.
    """
    exact = sum(
        (abs(Fraction(b) - Fraction(a)) for a, b in zip(values, values[1:])), Fraction(0)
    )
    out = float(exact)
    return out if Fraction(out) >= exact else math.nextafter(out, math.inf)


def checked_quad(func, a, b, *, points=None, tol=1e-10):
    """``scipy.integrate.quad`` that asserts its own error estimate is below ``tol``."""
    value, error = integrate.quad(
        func, a, b, points=points, epsabs=tol / 10, epsrel=0.0, limit=500
    )
    assert error < tol, f"quad error estimate {error:.3g} >= {tol:.3g}"
    return float(value)


# ----------------------------------------------------------------------------------
# Problems
# ----------------------------------------------------------------------------------
class CalibrationProblem:
    """Interface of a synthetic problem (subclasses are frozen dataclasses).

    Subclasses define ``name``, ``V``, ``true_ce``, ``sample_scores(n, rng)`` and
    ``eta(s)`` (vectorised, defined on all of [0, 1]).
    """

    name = "problem"

    @property
    def assumptions(self):
        """Estimator keyword arguments for the assumptions that hold (``{"V": V}``)."""
        return {"V": float(self.V)}

    def assumption_kwargs(self, *names):
        """The entries ``names`` of :attr:`assumptions`, e.g. ``("b1", "b2")`` for NW.

        Problems may hold constants for several bounds (``SechPerturbed``: ``h``, ``b1``,
        ``b2``, ``L``) while each estimator takes only some of them, and NW takes ``h``
        *or* ``(b1, b2)``; a missing name is a ``KeyError`` naming the problem.
        """
        available = self.assumptions
        missing = [name for name in names if name not in available]
        if missing:
            raise KeyError(f"{self}: no assumption {missing}; it has {sorted(available)}")
        return {name: available[name] for name in names}

    def sample_scores(self, n, rng):
        raise NotImplementedError

    def eta(self, s):
        raise NotImplementedError

    def sample(self, n, rng):
        """Draw ``(scores, labels)``: ``n`` i.i.d. scores, labels ``u < eta(s)`` as 0/1."""
        scores = np.asarray(self.sample_scores(n, rng), dtype=float)
        labels = (rng.uniform(size=n) < self.eta(scores)).astype(np.int64)
        return scores, labels

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class PowerMiscalibrated(CalibrationProblem):
    """``s ~ U(0, 1)``, ``eta(s) = s**k`` with ``k >= 1``: monotone, over-confident.

    CE: ``s - s**k >= 0`` on [0, 1], so ``CE = int_0^1 (s - s**k) ds = 1/2 - 1/(k+1)``;
    ``k = 2`` gives ``1/6``.
    V: ``s**k`` is increasing from 0 to 1, so ``TV = 1``.
    """

    k: float = 2.0
    name: str = "power"

    def __post_init__(self):
        if self.k < 1:
            raise ValueError("k >= 1 keeps s - s**k >= 0 on [0, 1]")

    V = 1.0

    @property
    def true_ce(self):
        return 0.5 - 1.0 / (self.k + 1.0)

    def sample_scores(self, n, rng):
        return rng.uniform(size=n)

    def eta(self, s):
        return np.asarray(s, dtype=float) ** self.k


@dataclass(frozen=True)
class CalibratedBeta(CalibrationProblem):
    """``s ~ Beta(a, b)``, ``eta(s) = s``: perfectly calibrated.

    CE: ``|s - eta(s)| = 0`` for every ``s``, so ``CE = 0``.
    V: the identity is increasing from 0 to 1 on [0, 1], so ``TV = 1``.
    """

    a: float = 2.0
    b: float = 5.0
    name: str = "calibrated"

    V = 1.0
    true_ce = 0.0

    def sample_scores(self, n, rng):
        return rng.beta(self.a, self.b, size=n)

    def eta(self, s):
        return np.asarray(s, dtype=float).copy()


@dataclass(frozen=True)
class DiscreteTies(CalibrationProblem):
    """Scores on a few values only (massive ties), with a table of ``eta`` values.

    ``P(s = support[i]) = probs[i]`` and ``eta(support[i]) = eta_values[i]``; between
    support points ``eta`` is extended as the right-continuous step function (the value
    at the largest support point ``<= s``, the first value below the first point).

    CE: ``s`` is discrete, so ``CE = sum_i probs[i] |support[i] - eta_values[i]|``, a
    finite sum (``math.fsum``). Defaults: ``0.1*0.05 + 0.2*0.1 + 0.4*0.05 + 0.2*0.1 +
    0.1*0.05 = 0.07``.
    V: the step extension changes value only at the support points, so its TV is
    ``sum_i |eta_values[i+1] - eta_values[i]|`` (``0.9`` for the increasing default
    table, i.e. ``max - min``); no extension of the table has a smaller TV.
    """

    support: tuple = (0.1, 0.3, 0.5, 0.7, 0.9)
    probs: tuple = (0.1, 0.2, 0.4, 0.2, 0.1)
    eta_values: tuple = (0.05, 0.2, 0.55, 0.8, 0.95)
    name: str = "discrete"

    def __post_init__(self):
        if not (len(self.support) == len(self.probs) == len(self.eta_values)):
            raise ValueError("support, probs and eta_values must have equal length")
        if list(self.support) != sorted(set(self.support)):
            raise ValueError("support must be strictly increasing")
        if abs(math.fsum(self.probs) - 1.0) > 1e-12 or min(self.probs) <= 0:
            raise ValueError("probs must be positive and sum to one")

    @property
    def V(self):
        return total_variation_up(self.eta_values)

    @property
    def true_ce(self):
        return math.fsum(
            p * abs(s - e) for s, p, e in zip(self.support, self.probs, self.eta_values)
        )

    def sample_scores(self, n, rng):
        return rng.choice(np.asarray(self.support), size=n, p=np.asarray(self.probs))

    def eta(self, s):
        s = np.asarray(s, dtype=float)
        idx = np.searchsorted(np.asarray(self.support), s, side="right") - 1
        return np.asarray(self.eta_values)[np.clip(idx, 0, len(self.support) - 1)]


@dataclass(frozen=True)
class PiecewiseLinear(CalibrationProblem):
    """Scores: atoms at some knots plus a uniform continuous part; ``eta`` piecewise linear.

    ``knots`` ``0 = x_0 < ... < x_K = 1`` cut [0, 1] into pieces; on the open piece
    ``(x_j, x_{j+1})`` ``eta`` is linear from ``left[j]`` (limit at ``x_j+``) to
    ``right[j]`` (limit at ``x_{j+1}-``), so jumps at knots are allowed. ``atoms`` is a
    tuple of ``(location, probability, eta value)`` with each location a knot. The score
    is the atom location with its probability, and ``U(0, 1)`` with the remaining weight
    ``w = 1 - sum(probabilities)``. At a knot without an atom ``eta`` takes the
    right-hand value ``left[j]`` (at ``1``: ``right[-1]``); this has probability 0.

    CE: ``sum_atoms p |x - e| + w sum_j int_{x_j}^{x_{j+1}} |s - eta(s)| ds``; on each piece
    ``s - eta(s)`` is linear, so each integral is exact (:func:`abs_linear_integral`).
    V: ``eta`` is monotone on each open piece, so its TV is the total variation of the
    ordered list of values it passes through: for each knot, (the limit from the left,)
    the atom value if there is one, then the limit from the right. Consecutive absolute
    differences of that list sum to TV exactly.
    """

    knots: tuple = (0.0, 1.0)
    left: tuple = (0.0,)
    right: tuple = (1.0,)
    atoms: tuple = ()
    name: str = "piecewise_linear"

    def __post_init__(self):
        k = len(self.knots) - 1
        if k < 1 or len(self.left) != k or len(self.right) != k:
            raise ValueError("need len(left) == len(right) == len(knots) - 1 >= 1")
        if self.knots[0] != 0.0 or self.knots[-1] != 1.0:
            raise ValueError("knots must start at 0 and end at 1")
        if any(b <= a for a, b in zip(self.knots, self.knots[1:])):
            raise ValueError("knots must be strictly increasing")
        values = list(self.left) + list(self.right) + [a[2] for a in self.atoms]
        if min(values) < 0 or max(values) > 1:
            raise ValueError("eta values must lie in [0, 1]")
        locations = [a[0] for a in self.atoms]
        if len(set(locations)) != len(locations) or not set(locations) <= set(self.knots):
            raise ValueError("atoms must sit at distinct knots")
        if self.continuous_weight < 0:
            raise ValueError("atom probabilities exceed one")

    @property
    def continuous_weight(self):
        return 1.0 - math.fsum(a[1] for a in self.atoms)

    @property
    def V(self):
        atom_at = {a[0]: a[2] for a in self.atoms}
        path = []
        for j, x in enumerate(self.knots):
            if j > 0:
                path.append(self.right[j - 1])
            if x in atom_at:
                path.append(atom_at[x])
            if j < len(self.left):
                path.append(self.left[j])
        return total_variation_up(path)

    @property
    def true_ce(self):
        atoms = math.fsum(p * abs(x - e) for x, p, e in self.atoms)
        pieces = math.fsum(
            abs_linear_integral(u, v, u - lo, v - hi)
            for u, v, lo, hi in zip(self.knots, self.knots[1:], self.left, self.right)
        )
        return atoms + self.continuous_weight * pieces

    def sample_scores(self, n, rng):
        locations = np.array([a[0] for a in self.atoms] + [np.nan])
        probs = np.array([a[1] for a in self.atoms] + [self.continuous_weight])
        component = rng.choice(locations.shape[0], size=n, p=probs / probs.sum())
        scores = locations[component]
        continuous = component == locations.shape[0] - 1
        # U(0, 1) on the open interval: rng.uniform can return exactly 0.0, where an
        # atom's eta value would be read instead of the continuous one.
        u = rng.uniform(size=int(continuous.sum()))
        scores[continuous] = np.where(u > 0.0, u, 0.5)
        return scores

    def eta(self, s):
        s = np.asarray(s, dtype=float)
        knots = np.asarray(self.knots)
        j = np.clip(np.searchsorted(knots, s, side="right") - 1, 0, len(self.left) - 1)
        lo, hi = np.asarray(self.left)[j], np.asarray(self.right)[j]
        t = (s - knots[j]) / (knots[j + 1] - knots[j])
        out = lo + t * (hi - lo)
        for x, _, e in self.atoms:
            out = np.where(s == x, e, out)
        return out


def atoms_and_linear():
    """Atoms at exactly 0.0 and 1.0 plus ``U(0, 1)``; monotone ``eta``.

    ``P(s = 0) = 0.2`` with ``eta(0) = 0.05``; ``P(s = 1) = 0.15`` with ``eta(1) = 0.9``;
    weight ``0.65`` on ``U(0, 1)`` with ``eta(s) = 0.1 + 0.7 s``.

    CE: atoms give ``0.2 * 0.05 + 0.15 * 0.1 = 0.025``. On (0, 1),
    ``s - eta(s) = 0.3 s - 0.1`` vanishes at ``1/3``:
    ``int_0^{1/3} (0.1 - 0.3 s) ds = 1/60`` and ``int_{1/3}^1 (0.3 s - 0.1) ds = 1/15``,
    total ``1/12``. ``CE = 0.025 + 0.65 / 12 = 0.0791666...``.
    V: ``eta`` runs ``0.05 -> 0.1 -> 0.8 -> 0.9`` monotonically, ``TV = 0.85``.
    """
    return PiecewiseLinear(
        knots=(0.0, 1.0),
        left=(0.1,),
        right=(0.8,),
        atoms=((0.0, 0.2, 0.05), (1.0, 0.15, 0.9)),
        name="atoms",
    )


def zigzag_steps():
    """``s ~ U(0, 1)``, ``eta`` piecewise constant with alternating jumps: ``V = 2.6``.

    ``eta = 0.7, 0.1, 0.8, 0.2, 0.9`` on ``[0, .2), [.2, .4), [.4, .6), [.6, .8), [.8, 1]``.

    CE: on ``[u, v]`` with constant ``c``, ``int |s - c| ds`` is
    ``(v-u) |(u+v)/2 - c|`` if ``c`` is outside ``[u, v]`` and
    ``((c-u)^2 + (v-c)^2) / 2`` inside. Pieces: ``0.2*0.6 = 0.12``, ``0.2*0.2 = 0.04``,
    ``0.2*0.3 = 0.06``, ``0.2*0.5 = 0.10``, ``(0.01 + 0.01)/2 = 0.01``; ``CE = 0.33``.
    V: jumps ``0.6 + 0.7 + 0.6 + 0.7 = 2.6``, constant in between.
    """
    values = (0.7, 0.1, 0.8, 0.2, 0.9)
    return PiecewiseLinear(
        knots=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
        left=values,
        right=values,
        name="zigzag",
    )


def default_problems():
    """The problems the TV guarantee tests run on (all satisfy TV(eta) <= V)."""
    return (
        PowerMiscalibrated(k=2.0, name="square"),
        CalibratedBeta(),
        DiscreteTies(),
        atoms_and_linear(),
        zigzag_steps(),
    )


# ----------------------------------------------------------------------------------
# Problems for the derivative-based bounds (NW, Lipschitz bucketing)
# ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SmoothSine(CalibrationProblem):
    """``s ~ U(0, 1)``, ``eta(s) = s + A sin(2 pi c s)``: smooth, known derivative bounds.

    ``c`` (``cycles``) is a positive integer and ``0 < A <= 1 / (2 pi c)``, so
    ``eta' = 1 + 2 pi c A cos(2 pi c s) >= 0``: ``eta`` increases from 0 to 1 and stays
    in [0, 1].

    CE: ``|s - eta(s)| = A |sin(2 pi c s)|``; over a whole number of periods
    ``int_0^1 |sin(2 pi c s)| ds = 2 / pi``, so ``CE = 2 A / pi`` (``0.2 / pi =
    0.0636619...`` for the default ``A = 0.1``, ``c = 1``).
    Derivatives: ``b1 = sup |eta'| = 1 + 2 pi c A`` (at ``s = 0``), ``b2 = sup |eta''| =
    4 pi^2 c^2 A`` (at ``s = 1/(4c)``); both suprema are attained, so the constants are
    exact. ``L = b1``. ``V = 1`` (monotone from 0 to 1).
    """

    amplitude: float = 0.1
    cycles: int = 1
    name: str = "smooth_sine"

    def __post_init__(self):
        if int(self.cycles) != self.cycles or self.cycles < 1:
            raise ValueError("cycles must be a positive integer")
        if not 0 < self.amplitude <= 1.0 / (2.0 * math.pi * self.cycles):
            raise ValueError("need 0 < amplitude <= 1 / (2 pi cycles) for a monotone eta")

    V = 1.0

    @property
    def b1(self):
        return 1.0 + 2.0 * math.pi * self.cycles * self.amplitude

    @property
    def b2(self):
        return 4.0 * math.pi**2 * self.cycles**2 * self.amplitude

    @property
    def assumptions(self):
        """Every constant that holds: ``V``, ``b1``, ``b2`` and ``L = b1``."""
        return {"V": float(self.V), "b1": self.b1, "b2": self.b2, "L": self.b1}

    @property
    def true_ce(self):
        return 2.0 * self.amplitude / math.pi

    def sample_scores(self, n, rng):
        return rng.uniform(size=n)

    def eta(self, s):
        s = np.asarray(s, dtype=float)
        return s + self.amplitude * np.sin(2.0 * math.pi * self.cycles * s)


@dataclass(frozen=True)
class Oscillating(CalibrationProblem):
    """``s ~ U(low, high)``, ``eta(s) = s + A sin(2 pi c s)``: fast, large oscillations.

    The defaults ``A = 0.15``, ``c = 40`` are ``eta(s) = s + 0.15 sin(80 pi s)`` on
    ``[0.2, 0.8]``, 24 whole periods. ``c low`` and ``c high`` must be integers (whole
    periods) and ``low - A >= 0``, ``high + A <= 1``, so ``eta`` stays in [0, 1]; unlike
    :class:`SmoothSine` it is far from monotone (``eta' = 1 + k cos(2 pi c s)`` with
    ``k = 2 pi c A = 12 pi ~ 37.7``). Binning with bins wider than a period averages the
    oscillation out, so the binned ECE converges to a small wrong value
    (:meth:`population_binned_ece`) while the true CE is ``0.3 / pi``.

    CE: ``|s - eta(s)| = A |sin(2 pi c s)|`` and ``s`` is uniform over a whole number of
    periods, on each of which ``|sin|`` averages ``2 / pi``: ``CE = 2 A / pi``
    (``0.3 / pi = 0.0954930`` by default).

    ``eta`` outside ``[low, high]`` (probability 0) is held constant,
    ``eta(s) = low`` below and ``high`` above (the formula's values at the ends, where
    the sine vanishes). This version of the calibration function is continuous, and
    its total variation and Lipschitz constant on [0, 1] are those on the support.

    Derivatives on the support: ``eta' = 1 + k cos(2 pi c s)``, so
    ``b1 = L = sup |eta'| = 1 + 2 pi c A`` (``1 + 12 pi = 38.699``), attained at
    ``s = low`` (``c low`` is an integer); the constant extension has slope 0, so ``L``
    is the Lipschitz constant on all of [0, 1]. ``eta'' = -(2 pi c)^2 A sin(2 pi c s)``,
    so ``b2 = (2 pi c)^2 A`` (``0.15 (80 pi)^2 = 9474.8``), attained at
    ``s = low + 1 / (4c)``. ``b2`` holds on ``[low, high]``, not across the kinks at its
    ends; the NW bound applies Lemma 6 only between scores in the support, so that is
    all it needs.

    V (exact): for ``k > 1`` the integrand ``|eta'| = |1 + k cos theta|`` (``theta =
    2 pi c s``, ``ds = d theta / (2 pi c)``) changes sign at ``cos theta = -1/k``, i.e.
    ``theta_0 = arccos(-1/k)``. Over one period ``[-pi, pi]``,
    ``int |1 + k cos| = 2 int_0^{theta_0} (1 + k cos) - 2 int_{theta_0}^pi (1 + k cos)
    = 2 (theta_0 + k sin theta_0) - 2 (pi - theta_0 - k sin theta_0)
    = 4 theta_0 - 2 pi + 4 sqrt(k^2 - 1)``. With ``c (high - low)`` periods,
    ``V = (high - low) (4 arccos(-1/k) - 2 pi + 4 sqrt(k^2 - 1)) / (2 pi)``
    (``14.405`` by default: each period rises and falls by about ``2 A`` each, and
    ``24 * 4 * 0.15 = 14.4``). For ``k <= 1`` ``eta`` is nondecreasing and
    ``V = eta(high) - eta(low) = high - low``. The float is rounded up by a relative
    ``1e-12``, far above the rounding error of the formula.
    """

    amplitude: float = 0.15
    cycles: int = 40
    low: float = 0.2
    high: float = 0.8
    name: str = "oscillating"

    def __post_init__(self):
        if int(self.cycles) != self.cycles or self.cycles < 1:
            raise ValueError("cycles must be a positive integer")
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ValueError("need 0 <= low < high <= 1")
        for end in (self.low, self.high):
            if abs(self.cycles * end - round(self.cycles * end)) > 1e-9:
                raise ValueError("cycles * low and cycles * high must be integers")
        if not 0.0 < self.amplitude <= min(self.low, 1.0 - self.high):
            raise ValueError("need 0 < amplitude <= min(low, 1 - high): eta in [0, 1]")

    @property
    def k(self):
        """``2 pi c A``: the amplitude of the oscillation of ``eta'`` around 1."""
        return 2.0 * math.pi * self.cycles * self.amplitude

    @property
    def b1(self):
        return 1.0 + self.k

    @property
    def b2(self):
        return (2.0 * math.pi * self.cycles) ** 2 * self.amplitude

    @property
    def V(self):
        k, width = self.k, self.high - self.low
        if k <= 1.0:
            return width
        per_period = 4.0 * math.acos(-1.0 / k) - 2.0 * math.pi + 4.0 * math.sqrt(k * k - 1.0)
        return width * per_period / (2.0 * math.pi) * (1.0 + 1e-12)

    @property
    def assumptions(self):
        """Every constant that holds: ``V``, ``b1``, ``b2`` and ``L = b1``."""
        return {"V": float(self.V), "b1": self.b1, "b2": self.b2, "L": self.b1}

    @property
    def true_ce(self):
        return 2.0 * self.amplitude / math.pi

    def population_binned_ece(self, n_bins=15):
        """The limit of ``binned_ece(y, s, n_bins=n_bins)`` (uniform bins) as ``n -> inf``.

        Per bin ``[a, b]`` (cut to the support) with probability ``(b - a) / (high - low)``,
        ``E[eta(s) - s | bin] = A (cos(2 pi c a) - cos(2 pi c b)) / (2 pi c (b - a))``; the
        limit is ``sum_bins P(bin) |E[eta(s) - s | bin]|`` (the bin edges, where
        ``calibration_curve`` puts a tied score, have probability 0).
        """
        omega = 2.0 * math.pi * self.cycles
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        total = 0.0
        for a, b in zip(edges[:-1], edges[1:]):
            a, b = max(a, self.low), min(b, self.high)
            if b > a:
                mean_sine = (math.cos(omega * a) - math.cos(omega * b)) / (omega * (b - a))
                total += (b - a) / (self.high - self.low) * abs(self.amplitude * mean_sine)
        return total

    def sample_scores(self, n, rng):
        return rng.uniform(self.low, self.high, size=n)

    def eta(self, s):
        s = np.clip(np.asarray(s, dtype=float), self.low, self.high)
        return s + self.amplitude * np.sin(2.0 * math.pi * self.cycles * s)


def gauss_legendre_panels(edges, order):
    """Nodes and weights of composite Gauss-Legendre with ``order`` nodes per panel."""
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.asarray(edges, dtype=float)
    lo, hi = edges[:-1, None], edges[1:, None]
    return (0.5 * (lo + hi) + 0.5 * (hi - lo) * x).ravel(), (0.5 * (hi - lo) * w).ravel()


def panel_edges(breakpoints, width):
    """Sorted edges covering [0, 1]: every breakpoint, and no panel wider than ``width``."""
    points = np.unique(np.concatenate([[0.0, 1.0], np.clip(breakpoints, 0.0, 1.0)]))
    edges = [points[:1]]
    for a, b in zip(points[:-1], points[1:]):
        edges.append(np.linspace(a, b, max(1, math.ceil((b - a) / width)) + 1)[1:])
    return np.concatenate(edges)


# Inner and outer rules of the two refinements of SechPerturbed.true_ce:
# (panel width in units of h, Gauss-Legendre nodes per panel).
PERTURBED_RULES = ((1.0, 16), (0.5, 24))


@dataclass(frozen=True)
class SechPerturbed(CalibrationProblem):
    """A classifier whose scores went through the sech perturbation (SPEC section 6).

    The unperturbed score ``s_orig`` and its calibration function ``eta_orig`` are those
    of ``base`` (a :class:`PiecewiseLinear`: atoms at knots, a uniform continuous part,
    ``eta_orig`` piecewise linear with jumps). A sample draws ``s_orig`` from ``base``,
    the label ``y ~ Bernoulli(eta_orig(s_orig))`` from the *unperturbed* score, and the
    perturbed score ``s = sech_inverse_cdf(u, s_orig, h)`` with fresh ``u ~ U(0, 1)``,
    exactly the generative process of Appendix D. The problem is about ``(s, y)``.

    Truth (paper eq. (7) / (21)): with ``k(s | so) = sech((s - so)/h) / Z(so, h)``,
    ``p(s) = int k(s|so) dP(so)`` (the density of ``s``) and
    ``q(s) = int eta_orig(so) k(s|so) dP(so)`` (the density of ``s`` with ``y = 1``),
    ``eta(s) = q(s) / p(s)`` and ``CE = int_0^1 |s p(s) - q(s)| ds``.

    - Atoms enter ``p`` and ``q`` as exact finite sums.
    - The continuous part (``so`` in the open pieces) is integrated by composite
      Gauss-Legendre with panel edges at every knot of ``eta_orig`` (its jumps and kinks)
      and panels no wider than ``h``: the integrand is analytic on each panel, with
      singularities of ``sech`` and ``1 / Z`` at distance ``pi h / 2`` from the real
      axis, so on a panel of width ``<= h`` an ``n``-node rule errs by ``~ 6.4^(-2n)``.
    - The outer integral uses the same kind of rule over ``s``, with extra edges at the
      sign changes of ``s p(s) - q(s)`` (found on the nodes and refined by ``brentq``),
      where ``|.|`` has a kink.

    ``true_ce`` is the finer of two refinements (:data:`PERTURBED_RULES`);
    ``ce_integration_error`` is ``max(|CE_coarse - CE_fine|, |int p - 1|)`` over both, an
    estimate of the integration error (the tests also compare against ``quad``).

    Assumptions (Corollaries 3 and 4, whatever ``base`` is): ``b1 = tanh(1/h) / (2h)``,
    ``b2 = 1.5 tanh(1/h)^2 / h^2``, ``L = b1``, and ``h`` itself. No ``V`` is exposed, so
    the TV coverage harness must not be pointed at these problems.
    """

    base: PiecewiseLinear = field(default_factory=PiecewiseLinear)
    h: float = 2.0**-6
    name: str = "sech_perturbed"

    def __post_init__(self):
        if not self.h > 0:
            raise ValueError("h must be positive")

    # -- assumptions ---------------------------------------------------------------
    @property
    def assumptions(self):
        """``{"h", "b1", "b2", "L"}``; pick with :meth:`assumption_kwargs`."""
        b1, b2 = sech_derivative_bounds(self.h)
        return {"h": float(self.h), "b1": float(b1), "b2": float(b2), "L": float(b1)}

    # -- sampling ------------------------------------------------------------------
    def sample_with_original(self, n, rng):
        """``(s, y, s_orig)``: perturbed scores, labels drawn from ``s_orig``, and ``s_orig``."""
        s_orig = np.asarray(self.base.sample_scores(n, rng), dtype=float)
        labels = (rng.uniform(size=n) < self.base.eta(s_orig)).astype(np.int64)
        scores = sech_inverse_cdf(rng.uniform(size=n), s_orig, self.h)
        return scores, labels, s_orig

    def sample(self, n, rng):
        """Draw ``(scores, labels)``; labels depend on the unperturbed score."""
        scores, labels, _ = self.sample_with_original(n, rng)
        return scores, labels

    def sample_scores(self, n, rng):
        return self.sample(n, rng)[0]

    # -- densities -----------------------------------------------------------------
    @cached_property
    def _inner_rules(self):
        """Per rule: nodes ``so``, weights ``w(so) / Z(so, h)``, ``eta_orig(so)`` (continuous part)."""
        rules = []
        for width, order in PERTURBED_RULES:
            nodes, weights = gauss_legendre_panels(
                panel_edges(np.asarray(self.base.knots), width * self.h), order
            )
            weights = self.base.continuous_weight * weights / sech_normalizer(nodes, self.h)
            # Nodes are interior to the pieces, never at a knot, so never at an atom.
            rules.append((nodes, weights, self.base.eta(nodes)))
        return tuple(rules)

    def _atoms(self):
        x = np.array([a[0] for a in self.base.atoms], dtype=float)
        p = np.array([a[1] for a in self.base.atoms], dtype=float)
        e = np.array([a[2] for a in self.base.atoms], dtype=float)
        return x, p / sech_normalizer(x, self.h), e

    def _p_q(self, s, rule=0, *, cumulative=False, chunk=2048):
        """``(p(s), q(s))``; with ``cumulative=True`` their integrals over ``[0, s]``."""
        s = np.atleast_1d(np.asarray(s, dtype=float))
        nodes, weights, eta_nodes = self._inner_rules[rule]
        x, weight_atoms, eta_atoms = self._atoms()
        h = self.h

        def unnormalised(block, centres):
            # sech((s - so)/h), or its integral over [0, s]: h (gd((s-so)/h) - gd(-so/h)).
            if cumulative:
                return h * (gd((block - centres) / h) - gd(-centres / h))
            return sech((block - centres) / h)

        p, q = np.empty_like(s), np.empty_like(s)
        for start in range(0, s.shape[0], chunk):
            block = s[start:start + chunk, None]
            k_c, k_a = unnormalised(block, nodes), unnormalised(block, x)
            p[start:start + chunk] = k_c @ weights + k_a @ weight_atoms
            q[start:start + chunk] = k_c @ (weights * eta_nodes) + k_a @ (
                weight_atoms * eta_atoms
            )
        return p, q

    def density(self, s):
        """``p(s)``, the density of the perturbed score on [0, 1]."""
        return self._p_q(s)[0]

    def positive_density(self, s):
        """``q(s) = p(s) eta(s)``, the density of the perturbed score jointly with ``y = 1``."""
        return self._p_q(s)[1]

    def cdf(self, s):
        """``P(perturbed score <= s)``, from the exact kernel CDF (Lemma 7's antiderivative)."""
        return np.clip(self._p_q(np.clip(s, 0.0, 1.0), cumulative=True)[0], 0.0, 1.0)

    def eta(self, s):
        """Calibration function of the perturbed classifier, eq. (7): ``q(s) / p(s)``."""
        p, q = self._p_q(s)
        return q / p

    def gap(self, s, rule=0):
        """``s p(s) - q(s)``, whose integral of the absolute value is the CE."""
        s = np.atleast_1d(np.asarray(s, dtype=float))
        p, q = self._p_q(s, rule)
        return s * p - q

    # -- the calibration error -----------------------------------------------------
    def sign_changes(self, rule=0):
        """Roots of ``s p(s) - q(s)`` in (0, 1): the kinks of the CE integrand."""
        width, order = PERTURBED_RULES[rule]
        edges = panel_edges(np.asarray(self.base.knots), width * self.h)
        grid = np.unique(np.concatenate([edges, gauss_legendre_panels(edges, order)[0]]))
        values = self.gap(grid, rule)
        roots = list(grid[1:-1][values[1:-1] == 0.0])
        for i in np.flatnonzero(values[:-1] * values[1:] < 0):
            roots.append(optimize.brentq(
                lambda t: self.gap(t, rule)[0], grid[i], grid[i + 1], xtol=1e-15, rtol=1e-15
            ))
        return np.sort(np.asarray(roots, dtype=float))

    def _ce_by_rule(self, rule):
        width, order = PERTURBED_RULES[rule]
        roots = self.sign_changes(rule)
        breakpoints = np.concatenate([np.asarray(self.base.knots), roots])
        nodes, weights = gauss_legendre_panels(panel_edges(breakpoints, width * self.h), order)
        p, q = self._p_q(nodes, rule)
        return float(weights @ np.abs(nodes * p - q)), float(weights @ p)

    @cached_property
    def _ce_quadrature(self):
        (ce_coarse, mass_coarse), (ce_fine, mass_fine) = (
            self._ce_by_rule(rule) for rule in range(len(PERTURBED_RULES))
        )
        error = max(abs(ce_coarse - ce_fine), abs(mass_coarse - 1.0), abs(mass_fine - 1.0))
        return ce_fine, error

    @property
    def true_ce(self):
        return self._ce_quadrature[0]

    @property
    def ce_integration_error(self):
        """Estimated absolute error of :attr:`true_ce` (two refinements, and ``int p = 1``)."""
        return self._ce_quadrature[1]


def zigzag_base():
    """Unperturbed scores with atoms at 0, 1/2 and 1; non-smooth, non-monotone ``eta``.

    ``P(so = 0) = 0.15`` (``eta = 0.1``), ``P(so = 0.5) = 0.2`` (``eta = 0.6``),
    ``P(so = 1) = 0.1`` (``eta = 0.95``), weight ``0.55`` on ``U(0, 1)`` with ``eta``
    ``0.3`` on ``[0, .2)``, ``0.05`` on ``[.2, .35)``, linear ``.2 -> .7`` on ``[.35, .5)``,
    a kink at ``.5`` (linear ``.7 -> .4`` on ``[.5, .65)``), ``0.9`` on ``[.65, .8)`` and
    ``0.6`` on ``[.8, 1]``: four jumps, up and down.
    """
    return PiecewiseLinear(
        knots=(0.0, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0),
        left=(0.3, 0.05, 0.2, 0.7, 0.9, 0.6),
        right=(0.3, 0.05, 0.7, 0.4, 0.9, 0.6),
        atoms=((0.0, 0.15, 0.1), (0.5, 0.2, 0.6), (1.0, 0.1, 0.95)),
        name="zigzag_atoms",
    )


def perturbed_problems(bandwidths=(2.0**-4, 2.0**-6)):
    """:func:`zigzag_base` perturbed with each bandwidth (for NW / Lipschitz tests)."""
    return tuple(
        SechPerturbed(base=zigzag_base(), h=h, name=f"perturbed_h=2^{math.log2(h):g}")
        for h in bandwidths
    )


def smooth_problems():
    """Smooth problems with exact ``b1``, ``b2`` (for NW / Lipschitz tests)."""
    return (SmoothSine(),)


# ----------------------------------------------------------------------------------
# Coverage harness
# ----------------------------------------------------------------------------------
def binomial_tolerance(repetitions, confidence_level, *, alpha=1e-3):
    """Largest failure count a valid bound reaches with probability ``>= 1 - alpha``.

    A certified bound fails with probability ``<= 1 - confidence_level``, so its failure
    count over ``repetitions`` independent runs is stochastically below
    ``Binomial(repetitions, 1 - confidence_level)``.
    """
    return int(stats.binom.ppf(1.0 - alpha, repetitions, 1.0 - confidence_level))


def fitted_bound(estimator):
    """The default certified quantity of a fitted estimator: ``bound_``."""
    return estimator.bound_


@dataclass(frozen=True)
class CoverageResult:
    """Outcome of :func:`coverage`: ``values[r]`` is the quantity on repetition ``r``."""

    problem: str
    n: int
    confidence_level: float
    true_ce: float
    values: np.ndarray = field(repr=False)
    tolerance: int

    @property
    def repetitions(self):
        return int(self.values.shape[0])

    @property
    def failures(self):
        return int(np.count_nonzero(self.values < self.true_ce))

    @property
    def failure_rate(self):
        return self.failures / self.repetitions

    @property
    def passed(self):
        return self.failures <= self.tolerance

    def summary(self):
        return (
            f"{self.problem} n={self.n} level={self.confidence_level}: "
            f"{self.failures}/{self.repetitions} failures (tolerance {self.tolerance}), "
            f"true CE {self.true_ce:.4f}, min value {self.values.min():.4f}, "
            f"median value {np.median(self.values):.4f}"
        )


def coverage(
    make_estimator,
    problem,
    n,
    repetitions,
    *,
    confidence_level,
    seed,
    quantity=fitted_bound,
    alpha=1e-3,
):
    """Fit ``repetitions`` times on independent data with independent fold seeds.

    Parameters
    ----------
    make_estimator : callable
        ``make_estimator(problem, confidence_level, random_state)`` returns an unfitted
        estimator; it should pass ``**problem.assumptions`` and ``random_state`` on.
    problem : CalibrationProblem
    n, repetitions : int
    confidence_level : float
    seed : int
        Root of a ``numpy.random.SeedSequence``; repetition ``r`` draws its data and its
        fold seed from the ``r``-th spawned child, so repetitions are independent.
    quantity : callable, default=fitted_bound
        Maps the fitted estimator to the number compared with ``problem.true_ce``.
    alpha : float, default=1e-3
        False-alarm probability of the binomial tolerance.
    """
    values = np.empty(repetitions)
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(repetitions)):
        data_seed, fold_seed = child.spawn(2)
        scores, labels = problem.sample(n, np.random.default_rng(data_seed))
        random_state = int(fold_seed.generate_state(1)[0])
        estimator = make_estimator(problem, confidence_level, random_state)
        values[r] = quantity(estimator.fit(scores, labels))
    return CoverageResult(
        problem=str(problem),
        n=int(n),
        confidence_level=float(confidence_level),
        true_ce=float(problem.true_ce),
        values=values,
        tolerance=binomial_tolerance(repetitions, confidence_level, alpha=alpha),
    )
