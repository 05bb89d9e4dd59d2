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

import numpy as np
from scipy import integrate, stats

__all__ = [
    "CalibratedBeta",
    "CalibrationProblem",
    "CoverageResult",
    "DiscreteTies",
    "PiecewiseLinear",
    "PowerMiscalibrated",
    "abs_linear_integral",
    "atoms_and_linear",
    "binomial_tolerance",
    "checked_quad",
    "coverage",
    "default_problems",
    "fitted_bound",
    "total_variation_up",
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
