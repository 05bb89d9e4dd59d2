"""Problems with a smooth calibration function and exact derivative bounds."""

import math
from dataclasses import dataclass

import numpy as np

from ._problems import CalibrationProblem


@dataclass(frozen=True)
class SmoothSine(CalibrationProblem):
    """``s ~ U(0, 1)``, ``eta(s) = s + A sin(2 pi c s)``: smooth and over-confident.

    ``c`` (``cycles``) is a positive integer and ``0 < A <= 1 / (2 pi c)``, so
    ``eta' = 1 + 2 pi c A cos(2 pi c s) >= 0``: ``eta`` increases from 0 to 1 and stays
    in [0, 1]. With ``c = 1``, ``eta(s) > s`` below 1/2 and ``eta(s) < s`` above: the
    scores are more extreme than the truth (over-confident).

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
            raise ValueError(f"cycles must be a positive integer; got {self.cycles}")
        if not 0 < self.amplitude <= 1.0 / (2.0 * math.pi * self.cycles):
            raise ValueError(
                "need 0 < amplitude <= 1 / (2 pi cycles) for a monotone eta; "
                f"got amplitude={self.amplitude}"
            )

    V = 1.0

    @property
    def b1(self):
        return 1.0 + 2.0 * math.pi * self.cycles * self.amplitude

    @property
    def b2(self):
        return 4.0 * math.pi**2 * self.cycles**2 * self.amplitude

    @property
    def _resolution(self):
        return 0.25 / self.cycles

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
    2 pi c s``) changes sign at ``theta_0 = arccos(-1/k)``; over one period
    ``int |1 + k cos| = 4 theta_0 - 2 pi + 4 sqrt(k^2 - 1)``. With ``c (high - low)``
    periods, ``V = (high - low) (4 arccos(-1/k) - 2 pi + 4 sqrt(k^2 - 1)) / (2 pi)``
    (``14.405`` by default). For ``k <= 1`` ``eta`` is nondecreasing and
    ``V = high - low``. The float is rounded up by a relative ``1e-12``, far above the
    rounding error of the formula.
    """

    amplitude: float = 0.15
    cycles: int = 40
    low: float = 0.2
    high: float = 0.8
    name: str = "oscillating"

    def __post_init__(self):
        if int(self.cycles) != self.cycles or self.cycles < 1:
            raise ValueError(f"cycles must be a positive integer; got {self.cycles}")
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ValueError(f"need 0 <= low < high <= 1; got {self.low}, {self.high}")
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
        per_period = (
            4.0 * math.acos(-1.0 / k) - 2.0 * math.pi + 4.0 * math.sqrt(k * k - 1.0)
        )
        return width * per_period / (2.0 * math.pi) * (1.0 + 1e-12)

    @property
    def assumptions(self):
        """Every constant that holds: ``V``, ``b1``, ``b2`` and ``L = b1``."""
        return {"V": float(self.V), "b1": self.b1, "b2": self.b2, "L": self.b1}

    @property
    def true_ce(self):
        return 2.0 * self.amplitude / math.pi

    def population_binned_ece(self, n_bins=15):
        """Limit of ``binned_ece(y, s, n_bins=n_bins)`` (uniform bins) as ``n -> inf``.

        Per bin ``[a, b]`` (cut to the support) with probability
        ``(b - a) / (high - low)``,
        ``E[eta(s) - s | bin] = A (cos(2 pi c a) - cos(2 pi c b)) / (2 pi c (b - a))``;
        the limit is ``sum_bins P(bin) |E[eta(s) - s | bin]|``.
        """
        omega = 2.0 * math.pi * self.cycles
        edges = np.linspace(0.0, 1.0, n_bins + 1)
        total = 0.0
        for a, b in zip(edges[:-1], edges[1:]):
            a, b = max(a, self.low), min(b, self.high)
            if b > a:
                mean_sine = (math.cos(omega * a) - math.cos(omega * b)) / (
                    omega * (b - a)
                )
                total += (
                    (b - a) / (self.high - self.low) * abs(self.amplitude * mean_sine)
                )
        return total

    def sample_scores(self, n, rng):
        return rng.uniform(self.low, self.high, size=n)

    def eta(self, s):
        s = np.clip(np.asarray(s, dtype=float), self.low, self.high)
        return s + self.amplitude * np.sin(2.0 * math.pi * self.cycles * s)

    @property
    def _resolution(self):
        return 0.25 / self.cycles

    def _continuous_pdf(self, s):
        s = np.asarray(s, dtype=float)
        inside = (s >= self.low) & (s <= self.high)
        return np.where(inside, 1.0 / (self.high - self.low), 0.0)

    def _breakpoints(self):
        return np.array([0.0, self.low, self.high, 1.0])


@dataclass(frozen=True)
class Parabola(CalibrationProblem):
    """``s ~ U(0, 1)``, ``eta(s) = bottom + 4 (top - bottom) (s - 1/2)^2``: a parabola.

    ``eta`` falls from ``top`` at 0 to ``bottom`` at 1/2 and rises back to ``top`` at 1
    (the shape of the paper's Figure 5). Both must lie in [0, 1].

    CE: ``f(s) = s - eta(s)`` is a quadratic; ``int_0^1 |f|`` is the sum over the pieces
    between its real roots in (0, 1) of ``|F(v) - F(u)|`` with ``F`` the exact
    antiderivative (``0.355144`` for the defaults 0.1, 0.9: one root, at ``0.26970``).
    Constants: ``eta' = 8 (top - bottom) (s - 1/2)``, so ``b1 = L = 4 |top - bottom|``
    (at the ends), ``b2 = 8 |top - bottom|``; ``eta`` is monotone on each half, so
    ``V = 2 |top - bottom|``. All are attained, hence exact.
    """

    bottom: float = 0.1
    top: float = 0.9
    name: str = "parabola"

    def __post_init__(self):
        if not (0.0 <= self.bottom <= 1.0 and 0.0 <= self.top <= 1.0):
            raise ValueError(
                f"bottom and top must lie in [0, 1]; got {self.bottom}, {self.top}"
            )

    @property
    def _coefficients(self):
        """``f(s) = s - eta(s) = c2 s^2 + c1 s + c0``."""
        a = 4.0 * (self.top - self.bottom)
        # eta = a s^2 - a s + a/4 + bottom
        return -a, 1.0 + a, -(a / 4.0 + self.bottom)

    @property
    def true_ce(self):
        c2, c1, c0 = self._coefficients
        roots = np.roots([c2, c1, c0]) if c2 != 0 else np.roots([c1, c0])
        inner = sorted(
            float(r.real)
            for r in np.atleast_1d(roots)
            if abs(r.imag) == 0 and 0.0 < r.real < 1.0
        )
        points = [0.0, *inner, 1.0]

        def antiderivative(s):
            return c2 * s**3 / 3.0 + c1 * s**2 / 2.0 + c0 * s

        return math.fsum(
            abs(antiderivative(v) - antiderivative(u))
            for u, v in zip(points[:-1], points[1:])
        )

    @property
    def b1(self):
        return 4.0 * abs(self.top - self.bottom)

    @property
    def b2(self):
        return 8.0 * abs(self.top - self.bottom)

    @property
    def V(self):
        return 2.0 * abs(self.top - self.bottom)

    @property
    def assumptions(self):
        """Every constant that holds: ``V``, ``b1``, ``b2`` and ``L = b1``."""
        return {"V": self.V, "b1": self.b1, "b2": self.b2, "L": self.b1}

    def sample_scores(self, n, rng):
        return rng.uniform(size=n)

    def eta(self, s):
        s = np.asarray(s, dtype=float)
        return self.bottom + 4.0 * (self.top - self.bottom) * (s - 0.5) ** 2
