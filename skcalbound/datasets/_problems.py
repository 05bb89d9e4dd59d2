"""The problem interface and the problems whose truth is an exact sum or closed form.

A *problem* fixes the law of the score ``s`` on [0, 1] (atoms plus a continuous part)
and the calibration function ``eta(s) = E[y | s]``; labels are drawn as
``rng.uniform(size=n) < eta(s)``. Every problem knows ``true_ce`` (``E|s - eta(s)|``),
``ce_integration_error`` (0 for closed forms and finite sums) and ``assumptions`` (the
constants ``V``, ``L``, ``b1``, ``b2`` that hold for it, keyed by the estimator
parameter they feed). Derivations are in the docstrings.
"""

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy import special, stats

from ._exact import abs_linear_integral, total_variation_up


class CalibrationProblem:
    """A score law on [0, 1] and a calibration function with exactly known CE.

    Subclasses define ``name``, ``true_ce``, ``eta(s)`` (vectorised, defined on all of
    [0, 1]) and ``sample_scores(n, rng)``, and describe the score law for
    :class:`~skcalbound.datasets.SechPerturbed` through ``_atoms()``,
    ``continuous_weight``, ``_continuous_pdf(s)``, ``_breakpoints()`` (where ``eta`` or
    the density is not smooth) and ``_resolution`` (the finest feature of ``eta``).
    """

    name = "problem"
    ce_integration_error = 0.0
    continuous_weight = 1.0
    _resolution = math.inf

    @property
    def assumptions(self):
        """Estimator keyword arguments for the assumptions that hold (``{"V": V}``)."""
        return {"V": float(self.V)}

    def assumption_kwargs(self, *names):
        """The entries ``names`` of :attr:`assumptions`, e.g. ``("b1", "b2")`` for NW.

        A missing name is a ``KeyError`` naming the problem and what it has.
        """
        available = self.assumptions
        missing = [name for name in names if name not in available]
        if missing:
            raise KeyError(
                f"{self}: no assumption {missing}; it has {sorted(available)}"
            )
        return {name: available[name] for name in names}

    def sample_scores(self, n, rng):
        raise NotImplementedError

    def eta(self, s):
        raise NotImplementedError

    def sample(self, n, rng):
        """``(scores, labels)``: ``n`` i.i.d. scores, labels ``u < eta(s)`` as 0/1."""
        scores = np.asarray(self.sample_scores(n, rng), dtype=float)
        labels = (rng.uniform(size=n) < self.eta(scores)).astype(np.int64)
        return scores, labels

    # -- the score law, for the perturbation ---------------------------------------
    def _atoms(self):
        """``(locations, probabilities, eta values)`` of the atoms, as float arrays."""
        empty = np.empty(0)
        return empty, empty, empty

    def _continuous_pdf(self, s):
        """Density of the continuous part (normalised to one on [0, 1])."""
        return np.ones_like(np.asarray(s, dtype=float))

    def _breakpoints(self):
        return np.array([0.0, 1.0])

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
            raise ValueError(f"k >= 1 keeps s - s**k >= 0 on [0, 1]; got k={self.k}")

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
    Constants: the identity is increasing from 0 to 1 on [0, 1], so ``V = 1``;
    ``eta' = 1`` and ``eta'' = 0``: ``b1 = L = 1``, ``b2 = 0`` (exact).
    ``assumption_names`` picks which of them :attr:`assumptions` reports (only ``V`` by
    default, so that ``TVCalibrationBound(**problem.assumptions)`` works).
    """

    a: float = 2.0
    b: float = 5.0
    name: str = "calibrated"
    assumption_names: tuple = ("V",)

    def __post_init__(self):
        if not (self.a >= 1 and self.b >= 1):
            raise ValueError(
                f"need a >= 1 and b >= 1 (bounded density); got {self.a}, {self.b}"
            )
        unknown = set(self.assumption_names) - {"V", "b1", "b2", "L"}
        if unknown:
            raise ValueError(
                f"unknown assumption names {sorted(unknown)}; use V, b1, b2, L"
            )

    V = 1.0
    true_ce = 0.0

    @property
    def assumptions(self):
        """The constants of ``assumption_names`` among ``V = b1 = L = 1, b2 = 0``."""
        constants = {"V": 1.0, "b1": 1.0, "b2": 0.0, "L": 1.0}
        return {name: constants[name] for name in self.assumption_names}

    def sample_scores(self, n, rng):
        return rng.beta(self.a, self.b, size=n)

    def eta(self, s):
        return np.asarray(s, dtype=float).copy()

    def _continuous_pdf(self, s):
        return stats.beta.pdf(np.asarray(s, dtype=float), self.a, self.b)


@dataclass(frozen=True)
class RareEvent(CalibrationProblem):
    """``s ~ Beta(a, b)``, ``eta(s) = min(1, slope s)``: a rare positive class.

    With ``a < 1`` the density is unbounded at 0 (most scores are tiny); the defaults
    ``Beta(0.5, 20)``, ``slope = 1.2`` have base rate 0.0293. With ``c = min(1,
    1/slope)``, ``E[s; s < c] = a/(a+b) I_c(a+1, b)`` and ``E[1 - s; s >= c] =
    b/(a+b) (1 - I_c(a, b+1))`` (regularised incomplete Beta ``I``), so
    CE: ``|slope - 1| E[s; s < c] + E[1 - s; s >= c]`` (``eta - s`` keeps the sign
    of ``slope - 1``) and base rate ``E[eta] = slope E[s; s < c] + P(s >= c)``.
    Constants: ``eta`` rises from 0 to ``min(1, slope)``, so ``V = min(1, slope)``;
    ``L = slope``. ``b1 = slope`` and ``b2 = 0`` only for ``slope <= 1`` (``eta``
    linear): above, ``eta'`` jumps at ``1/slope`` and no ``b2`` holds.
    """

    a: float = 0.5
    b: float = 20.0
    slope: float = 1.2
    name: str = "rare_event"

    def __post_init__(self):
        for what in ("a", "b", "slope"):
            value = getattr(self, what)
            if not (isinstance(value, Real) and 0 < value < math.inf):
                raise ValueError(
                    f"{what} must be a positive finite number; got {value!r}"
                )

    @property
    def _kink(self):
        return min(1.0, 1.0 / self.slope)

    @property
    def _mean_below_kink(self):
        """``E[s; s < c]``."""
        a, b = self.a, self.b
        return a / (a + b) * special.betainc(a + 1.0, b, self._kink)

    @property
    def true_ce(self):
        a, b = self.a, self.b
        above = b / (a + b) * special.betaincc(a, b + 1.0, self._kink)
        return float(abs(self.slope - 1.0) * self._mean_below_kink + above)

    @property
    def base_rate(self):
        """``P(y = 1) = E[eta(s)]`` (the same through the perturbation)."""
        above = special.betaincc(self.a, self.b, self._kink)
        return float(self.slope * self._mean_below_kink + above)

    @property
    def assumptions(self):
        """``V`` and ``L``; also ``b1``, ``b2`` when ``eta`` is linear."""
        constants = {"V": min(1.0, float(self.slope)), "L": float(self.slope)}
        if self.slope <= 1:
            constants.update(b1=float(self.slope), b2=0.0)
        return constants

    def sample_scores(self, n, rng):
        return rng.beta(self.a, self.b, size=n)

    def eta(self, s):
        return np.minimum(1.0, self.slope * np.asarray(s, dtype=float))

    def _continuous_pdf(self, s):
        return stats.beta.pdf(np.asarray(s, dtype=float), self.a, self.b)

    def _breakpoints(self):
        return np.unique([0.0, self._kink, 1.0])


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

    continuous_weight = 0.0

    def __post_init__(self):
        if not (len(self.support) == len(self.probs) == len(self.eta_values)):
            raise ValueError("support, probs and eta_values must have equal length")
        if list(self.support) != sorted(set(self.support)):
            raise ValueError("support must be strictly increasing")
        if min(self.support) < 0 or max(self.support) > 1:
            raise ValueError("support must lie in [0, 1]")
        if min(self.eta_values) < 0 or max(self.eta_values) > 1:
            raise ValueError("eta_values must lie in [0, 1]")
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

    def _atoms(self):
        return (
            np.asarray(self.support, dtype=float),
            np.asarray(self.probs, dtype=float),
            np.asarray(self.eta_values, dtype=float),
        )


@dataclass(frozen=True)
class PiecewiseLinear(CalibrationProblem):
    """Scores: atoms at some knots plus a uniform part; ``eta`` piecewise linear.

    ``knots`` ``0 = x_0 < ... < x_K = 1`` cut [0, 1] into pieces; on the open piece
    ``(x_j, x_{j+1})`` ``eta`` is linear from ``left[j]`` (limit at ``x_j+``) to
    ``right[j]`` (limit at ``x_{j+1}-``), so jumps at knots are allowed. ``atoms`` is a
    tuple of ``(location, probability, eta value)`` with each location a knot. The score
    is the atom location with its probability, and ``U(0, 1)`` with the remaining weight
    ``w = 1 - sum(probabilities)``. At a knot without an atom ``eta`` takes the
    right-hand value ``left[j]`` (at ``1``: ``right[-1]``); this has probability 0.

    CE: ``sum_atoms p |x - e| + w sum_j int_{x_j}^{x_{j+1}} |s - eta(s)| ds``; on each
    piece ``s - eta(s)`` is linear, so each integral is exact (``abs_linear_integral``).
    V: ``eta`` is monotone on each open piece, so its TV is the total variation of the
    ordered list of values it passes through: for each knot, (the limit from the left,)
    the atom value if there is one, then the limit from the right.
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
        if len(set(locations)) != len(locations) or not set(locations) <= set(
            self.knots
        ):
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
        knots = np.asarray(self.knots, dtype=float)
        left, right = (
            np.asarray(self.left, dtype=float),
            np.asarray(self.right, dtype=float),
        )
        # Piece j = the number of inner knots <= s (piece 0 below 0, the last above 1):
        # a few comparisons are cheaper than a search. Then, with the per-piece tables
        # gathered by j, ``left + (s - x_j) / (x_{j+1} - x_j) * (right - left)``, the
        # same floating-point operations in the same order as element by element.
        j = np.zeros(s.shape, dtype=np.intp)
        for knot in knots[1:-1]:
            j += s >= knot
        out = np.subtract(s, knots[:-1].take(j), out=np.empty(s.shape))
        out /= (knots[1:] - knots[:-1]).take(j)
        out *= (right - left).take(j)
        out += left.take(j)
        for x, _, e in self.atoms:
            np.putmask(out, s == x, e)
        return out

    def _atoms(self):
        return tuple(
            np.array([a[i] for a in self.atoms], dtype=float) for i in range(3)
        )

    def _breakpoints(self):
        return np.asarray(self.knots, dtype=float)


def atoms_and_linear():
    """Atoms at exactly 0.0 and 1.0 plus ``U(0, 1)``; monotone ``eta``.

    ``P(s = 0) = 0.2`` with ``eta(0) = 0.05``; ``P(s = 1) = 0.15`` with
    ``eta(1) = 0.9``; weight ``0.65`` on ``U(0, 1)`` with ``eta(s) = 0.1 + 0.7 s``.

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

    ``eta = 0.7, 0.1, 0.8, 0.2, 0.9`` on
    ``[0, .2), [.2, .4), [.4, .6), [.6, .8), [.8, 1]``.

    CE: on ``[u, v]`` with constant ``c``, ``int |s - c| ds`` is
    ``(v-u) |(u+v)/2 - c|`` if ``c`` is outside ``[u, v]`` and
    ``((c-u)^2 + (v-c)^2) / 2`` inside. Pieces: ``0.2*0.6 = 0.12``, ``0.2*0.2 = 0.04``,
    ``0.2*0.3 = 0.06``, ``0.2*0.5 = 0.10``, ``(0.01 + 0.01)/2 = 0.01``; ``CE = 0.33``.
    V: jumps ``0.6 + 0.7 + 0.6 + 0.7 = 2.6``, constant in between.
    """
    values = (0.7, 0.1, 0.8, 0.2, 0.9)
    return PiecewiseLinear(
        knots=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0), left=values, right=values, name="zigzag"
    )


def zigzag_base():
    """Unperturbed scores with atoms at 0, 1/2 and 1; non-smooth, non-monotone ``eta``.

    ``P(so = 0) = 0.15`` (``eta = 0.1``), ``P(so = 0.5) = 0.2`` (``eta = 0.6``),
    ``P(so = 1) = 0.1`` (``eta = 0.95``), weight ``0.55`` on ``U(0, 1)`` with ``eta``
    ``0.3`` on ``[0, .2)``, ``0.05`` on ``[.2, .35)``, linear ``.2 -> .7`` on
    ``[.35, .5)``, a kink at ``.5`` (linear ``.7 -> .4`` on ``[.5, .65)``), ``0.9`` on
    ``[.65, .8)`` and ``0.6`` on ``[.8, 1]``: four jumps, up and down.
    """
    return PiecewiseLinear(
        knots=(0.0, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0),
        left=(0.3, 0.05, 0.2, 0.7, 0.9, 0.6),
        right=(0.3, 0.05, 0.7, 0.4, 0.9, 0.6),
        atoms=((0.0, 0.15, 0.1), (0.5, 0.2, 0.6), (1.0, 0.1, 0.95)),
        name="zigzag_atoms",
    )
