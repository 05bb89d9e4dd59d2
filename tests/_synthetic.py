"""Synthetic calibration problems for the tests, and the coverage harness.

The problems themselves live in the package (:mod:`skcalbound.datasets`, private
modules ``_problems``, ``_smooth``, ``_perturbed``, ``_exact``), with their derivations
in the docstrings; this module re-exports them under the names the tests use and
keeps the test-only pieces: the problem collections the guarantee tests run on and
the Monte Carlo coverage harness.

A *problem* fixes the law of the score ``s`` on [0, 1] and ``eta(s) = E[y | s]``;
``true_ce`` is exact (closed form, finite sum, or for :class:`SechPerturbed`
quadrature with ``ce_integration_error``), and ``assumptions`` holds the constants
keyed by the estimator parameter they feed. Only :func:`default_problems` (all
``{"V": ...}``) feed the TV coverage tests.

``coverage`` is the Monte Carlo harness of ``test_guarantees.py``: it repeats
``fit`` on independent samples and independent fold seeds and counts how often a
certified quantity falls below the truth. It takes an estimator *factory*, so any
bound with a ``bound_`` attribute plugs in.
"""

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin

from skcalbound.datasets._exact import (
    abs_linear_integral,
    gauss_legendre_panels,
    panel_edges,
    total_variation_up,
)
from skcalbound.datasets._exact import checked_quad as _checked_quad
from skcalbound.datasets._perturbed import PERTURBED_RULES, SechPerturbed
from skcalbound.datasets._problems import (
    CalibratedBeta,
    CalibrationProblem,
    DiscreteTies,
    PiecewiseLinear,
    PowerMiscalibrated,
    atoms_and_linear,
    zigzag_base,
    zigzag_steps,
)
from skcalbound.datasets._smooth import Oscillating, Parabola, SmoothSine

__all__ = [
    "CalibratedBeta",
    "CalibrationProblem",
    "CoverageResult",
    "DiscreteTies",
    "Oscillating",
    "PERTURBED_RULES",
    "Parabola",
    "PiecewiseLinear",
    "PowerMiscalibrated",
    "SechPerturbed",
    "SmoothSine",
    "abs_linear_integral",
    "atoms_and_linear",
    "binomial_tolerance",
    "calibrated_scores",
    "checked_quad",
    "coverage",
    "default_problems",
    "fitted_bound",
    "gauss_legendre_panels",
    "panel_edges",
    "perturbed_problems",
    "smooth_problems",
    "study_split",
    "total_variation_up",
    "zigzag_base",
    "zigzag_steps",
]


def checked_quad(func, a, b, *, points=None, tol=1e-10):
    """``scipy.integrate.quad`` that asserts its own error estimate is below ``tol``."""
    try:
        return _checked_quad(func, a, b, points=points, tol=tol)
    except ArithmeticError as error:
        raise AssertionError(str(error)) from error


def default_problems():
    """The problems the TV guarantee tests run on (all satisfy TV(eta) <= V)."""
    return (
        PowerMiscalibrated(k=2.0, name="square"),
        CalibratedBeta(),
        DiscreteTies(),
        atoms_and_linear(),
        zigzag_steps(),
    )


def perturbed_problems(bandwidths=(2.0**-4, 2.0**-6)):
    """:func:`zigzag_base` perturbed with each bandwidth (for NW / Lipschitz tests).

    One object per bandwidth and process, shared by every caller: the problems are
    frozen, and the truth, integrated on first use (~0.5 s at ``h = 2^-6``), is then
    cached on the object instead of being integrated again by each test.
    """
    return tuple(_perturbed_zigzag(float(h)) for h in bandwidths)


@functools.cache
def _perturbed_zigzag(h):
    return SechPerturbed(
        base=zigzag_base(), h=h, name=f"perturbed_h=2^{math.log2(h):g}"
    )


def smooth_problems():
    """Smooth problems with exact ``b1``, ``b2`` (for NW / Lipschitz tests)."""
    return (SmoothSine(),)


# ----------------------------------------------------------------------------------
# Coverage harness
# ----------------------------------------------------------------------------------
def calibrated_scores(n=4000, seed=0):
    """``n`` sech-perturbed uniform scores (``h = 2**-4``) and labels drawn from them:
    calibrated, ``CE = 0``."""
    from skcalbound import perturb_scores

    rng = np.random.default_rng(seed)
    s = perturb_scores(rng.uniform(size=n), 2**-4, random_state=seed)
    return s, (rng.uniform(size=n) < s).astype(int)


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
    """Outcome of :func:`coverage`: ``values[r]`` is the quantity on repetition
    ``r``."""

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
            f"{self.failures}/{self.repetitions} failures "
            f"(tolerance {self.tolerance}), "
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


def _cell_id(value):
    return getattr(value, "name", None) or str(value)


def slow_except(axes, default):
    """``pytest.param`` for every cell of the grid ``axes``, all marked ``slow`` but
    the cells ``default`` (one id or a list of ids): the default suite keeps a small
    cell and ``pytest -m slow`` runs the whole grid (STYLE.md section 7).

    ``axes`` is a sequence of axes in argument order; an axis is a list of values
    (id: the value's ``name`` or ``str``) or a dict ``{id: value}``. A cell's id
    joins the ids of its values with ``-``, as stacked ``parametrize`` decorators do.
    """
    axes = [
        axis if isinstance(axis, dict) else {_cell_id(v): v for v in axis}
        for axis in axes
    ]
    defaults = {default} if isinstance(default, str) else set(default)
    params = []
    for cell in itertools.product(*(axis.items() for axis in axes)):
        cell_id = "-".join(key for key, _ in cell)
        marks = () if cell_id in defaults else (pytest.mark.slow,)
        params.append(
            pytest.param(*(value for _, value in cell), marks=marks, id=cell_id)
        )
    missing = defaults - {param.id for param in params}
    assert not missing, f"default cells not in the grid: {sorted(missing)}"
    return params


def study_split(cells, slow):
    """Each cell ``(*values, repetitions)`` of a slow Monte Carlo test twice: with
    ``slow`` repetitions (``make test-slow``), and with its full ``repetitions`` under
    the ``study`` marker as well (``make test-study``). A cell may be a bare
    repetition count.

    The tolerance follows the repetitions (:func:`binomial_tolerance`, ``alpha=1e-3``):
    a valid bound fails a cell with probability at most ``1e-3`` at either size, and
    the smaller size still rejects a failure rate of about twice the nominal one
    (at ``R = 100``: more than 13 misses at level 0.95, 33 at level 0.8).
    """
    params = []
    for cell in cells:
        *values, full = cell if isinstance(cell, tuple) else (cell,)
        head = "".join(f"{v}-" for v in values)
        params.append(pytest.param(*values, slow, id=f"{head}R={slow}"))
        params.append(
            pytest.param(*values, full, marks=pytest.mark.study, id=f"{head}R={full}")
        )
    return params


class ScoreAsProba(ClassifierMixin, BaseEstimator):
    """A 'classifier' whose positive-class probability is the first column of X: the
    unperturbed model of a problem, to wrap in ``SechPerturbedClassifier``."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        s = np.asarray(X, dtype=float)[:, 0]
        return np.column_stack((1.0 - s, s))
