"""A problem from the user's own calibration function and score distribution."""

import math
from functools import cached_property

import numpy as np
from scipy import integrate, stats

from ._exact import checked_truth
from ._problems import CalibrationProblem

_CONSTANTS = ("V", "b1", "b2", "L")


class CustomProblem(CalibrationProblem):
    """A synthetic problem from your own calibration function and score distribution.

    The score is ``atoms[i][0]`` with probability ``atoms[i][1]`` and otherwise a draw
    from ``scores`` (a frozen continuous :mod:`scipy.stats` distribution on [0, 1], for
    example ``scipy.stats.beta(2, 5)``; default uniform). The label is
    ``Bernoulli(eta(s))`` for continuous scores and ``Bernoulli(atoms[i][2])`` at atom
    ``i``. The true calibration error
    ``sum_i p_i |x_i - e_i| + w int_0^1 |s - eta(s)| f(s) ds`` is computed with
    :func:`scipy.integrate.quad` (splitting at ``breakpoints``), and its error estimate
    is :attr:`ce_integration_error`; :attr:`true_ce` raises ``ArithmeticError`` rather
    than return a value whose error estimate is not below ``1e-5``. A density
    unbounded at an end (a Beta law with ``a < 1`` or ``b < 1``) is integrated as
    such: ``quad``'s extrapolation here, and a mesh graded towards that end through
    the perturbation (:class:`SechPerturbed`).

    Parameters
    ----------
    eta : callable
        Vectorised calibration function of the continuous part: maps an array of scores
        in [0, 1] to an array of the same shape with values in [0, 1].
    scores : frozen scipy.stats distribution, default=None
        Law of the continuous part of the score, with support inside [0, 1]. ``None``
        means ``scipy.stats.uniform(0, 1)``.
    atoms : sequence of (location, probability, eta value), default=()
        Point masses of the score law; probabilities sum to at most one, the rest is the
        weight of ``scores``.
    breakpoints : sequence of float, default=()
        Points in (0, 1) where ``eta`` or the density of ``scores`` is not smooth
        (jumps, kinks); they make the integration accurate and are used by
        :class:`~skcalbound.datasets.SechPerturbed`.
    resolution : float, default=inf
        Width of the finest feature of ``eta`` (e.g. a quarter period of an
        oscillation), for the quadrature of the perturbed problem.
    V, b1, b2, L : float, default=None
        Assumption constants that you know to hold (total variation, bounds on
        ``|eta'|`` and ``|eta''|``, Lipschitz constant); reported in
        :attr:`assumptions` and passed on to the bounds by the experiments.
    name : str, default="custom"
        Label in tables and plots.

    Attributes
    ----------
    true_ce : float
        The calibration error ``E|s - eta(s)|`` (``ArithmeticError`` if it is not
        known to ``1e-5``).
    ce_integration_error : float
        The error estimate of the quadrature behind :attr:`true_ce`.
    assumptions : dict
        The constants given among ``V``, ``b1``, ``b2``, ``L``.

    See Also
    --------
    make_calibration_problem : Sample from it, optionally through the perturbation.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> from skcalbound.datasets import CustomProblem
    >>> problem = CustomProblem(np.sqrt, stats.beta(2, 2), V=1.0)
    >>> round(problem.true_ce, 4)
    0.1857
    """

    def __init__(
        self,
        eta,
        scores=None,
        *,
        atoms=(),
        breakpoints=(),
        resolution=math.inf,
        V=None,
        b1=None,
        b2=None,
        L=None,
        name="custom",
    ):
        if not callable(eta):
            raise TypeError(
                f"eta must be a callable mapping scores to [0, 1]; got {eta!r}"
            )
        self._eta = eta
        self.scores = stats.uniform(0.0, 1.0) if scores is None else scores
        if not (
            hasattr(self.scores, "pdf")
            and hasattr(self.scores, "rvs")
            and hasattr(self.scores, "support")
        ):
            raise TypeError(
                "scores must be a frozen continuous scipy.stats distribution, "
                f"e.g. scipy.stats.beta(2, 5); got {scores!r}"
            )
        low, high = self.scores.support()
        if not (low >= 0.0 and high <= 1.0):
            raise ValueError(
                f"scores must have support inside [0, 1]; got [{low}, {high}]"
            )
        self.atoms = tuple((float(x), float(p), float(e)) for x, p, e in atoms)
        for x, p, e in self.atoms:
            if not (0.0 <= x <= 1.0 and 0.0 <= e <= 1.0 and p > 0.0):
                raise ValueError(
                    f"atom {(x, p, e)}: need location and eta value in [0, 1] "
                    "and a positive probability"
                )
        if self.continuous_weight < -1e-12:
            raise ValueError("atom probabilities sum to more than one")
        self.breakpoints = tuple(float(b) for b in breakpoints)
        if not all(0.0 <= b <= 1.0 for b in self.breakpoints):
            raise ValueError(f"breakpoints must lie in [0, 1]; got {self.breakpoints}")
        if not resolution > 0:
            raise ValueError(f"resolution must be positive; got {resolution}")
        self._resolution = float(resolution)
        self._constants = {}
        for key, value in zip(_CONSTANTS, (V, b1, b2, L)):
            if value is not None:
                if not (np.isfinite(value) and value >= 0):
                    raise ValueError(
                        f"{key} must be a finite nonnegative float; got {value}"
                    )
                self._constants[key] = float(value)
        self.name = name
        grid = np.linspace(max(low, 0.0), min(high, 1.0), 1001)
        values = np.asarray(eta(grid), dtype=float)
        if values.shape != grid.shape or not np.all((values >= 0.0) & (values <= 1.0)):
            raise ValueError(
                "eta must be vectorised and map [0, 1] into [0, 1]; on a grid of "
                "1001 scores it returned values outside [0, 1] or the wrong shape"
            )

    @property
    def continuous_weight(self):
        return 1.0 - math.fsum(p for _, p, _ in self.atoms)

    @property
    def assumptions(self):
        """The constants given at construction, keyed ``V``, ``b1``, ``b2``, ``L``."""
        return dict(self._constants)

    @cached_property
    def _ce_quadrature(self):
        atoms = math.fsum(p * abs(x - e) for x, p, e in self.atoms)
        weight = max(self.continuous_weight, 0.0)
        if weight == 0.0:
            return atoms, 0.0
        low, high = self.scores.support()
        points = [b for b in self.breakpoints if low < b < high] or None
        value, error = integrate.quad(
            lambda s: abs(s - float(self._eta(np.array([s]))[0])) * self.scores.pdf(s),
            low,
            high,
            points=points,
            epsabs=1e-11,
            epsrel=1e-11,
            limit=2000,
        )
        return atoms + weight * value, weight * error

    @property
    def true_ce(self):
        """The calibration error; ``ArithmeticError`` if :attr:`ce_integration_error`
        is not below ``1e-5`` (``MAX_INTEGRATION_ERROR``)."""
        return checked_truth(*self._ce_quadrature, self.name)

    @property
    def ce_integration_error(self):
        """Error estimate of :func:`scipy.integrate.quad` for :attr:`true_ce`."""
        return self._ce_quadrature[1]

    def sample_scores(self, n, rng):
        x, p, _ = self._atoms()
        weights = np.append(p, max(self.continuous_weight, 0.0))
        component = rng.choice(x.shape[0] + 1, size=n, p=weights / weights.sum())
        scores = np.empty(n)
        atom = component < x.shape[0]
        scores[atom] = x[component[atom]]
        scores[~atom] = np.clip(
            self.scores.rvs(size=int((~atom).sum()), random_state=rng), 0.0, 1.0
        )
        return scores

    def eta(self, s):
        """Calibration function: the atom's value at an atom, ``eta(s)`` elsewhere."""
        s = np.asarray(s, dtype=float)
        out = np.asarray(self._eta(s), dtype=float)
        for x, _, e in self.atoms:
            out = np.where(s == x, e, out)
        return out

    def _atoms(self):
        return tuple(
            np.array([a[i] for a in self.atoms], dtype=float) for i in range(3)
        )

    def _continuous_pdf(self, s):
        return self.scores.pdf(np.asarray(s, dtype=float))

    def _breakpoints(self):
        low, high = self.scores.support()
        return np.unique(
            np.array([0.0, 1.0, max(low, 0.0), min(high, 1.0), *self.breakpoints])
        )

    def __repr__(self):
        return f"CustomProblem(name={self.name!r}, atoms={self.atoms})"
