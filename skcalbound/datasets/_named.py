"""The named problems: one ``make_*`` generator each, with its parameters."""

from numbers import Integral, Real

import numpy as np

from .._compat import Interval, validate_params
from ._generators import _COMMON, generate, generator_docstring
from ._problems import CalibratedBeta, DiscreteTies, RareEvent, atoms_and_linear
from ._smooth import Oscillating, Parabola, SmoothSine


@validate_params(
    {
        **_COMMON,
        "a": [Interval(Real, 1, None, closed="left")],
        "b": [Interval(Real, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
@generator_docstring
def make_calibrated(n_samples=1000, *, a=2.0, b=5.0, h=None, random_state=None):
    """Generate perfectly calibrated scores: ``s ~ Beta(a, b)``, ``eta(s) = s``.

    The true calibration error is 0 and every bound's value is its gap. Constants:
    ``V = b1 = L = 1``, ``b2 = 0``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of scores.
    a : float, default=2.0
        First shape parameter of the Beta law of the scores (``>= 1``).
    b : float, default=5.0
        Second shape parameter (``>= 1``).
    {h_to_see_also}

    Examples
    --------
    >>> from skcalbound.datasets import make_calibrated
    >>> data = make_calibrated(1000, random_state=0)
    >>> round(data.true_ce, 4), round(data.assumptions["V"], 3)
    (0.0, 1.0)
    """
    problem = CalibratedBeta(a=a, b=b, assumption_names=("V", "b1", "b2", "L"))
    return generate(problem, n_samples, h, random_state)


@validate_params(
    {
        **_COMMON,
        "amplitude": [Interval(Real, 0, 1 / (2 * np.pi), closed="right")],
    },
    prefer_skip_nested_validation=True,
)
@generator_docstring
def make_overconfident(n_samples=1000, *, amplitude=0.1, h=None, random_state=None):
    """Generate smooth over-confident scores: ``eta(s) = s + A sin(2 pi s)``.

    Scores ``s ~ U(0, 1)``. Below 1/2 the truth is above the score, above 1/2 below
    it: the scores are too extreme. ``CE = 2 A / pi``; ``V = 1``,
    ``b1 = L = 1 + 2 pi A``, ``b2 = 4 pi^2 A``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of scores.
    amplitude : float, default=0.1
        ``A``, in ``(0, 1 / (2 pi)]`` so that ``eta`` stays monotone.
    {h_to_see_also}

    Examples
    --------
    >>> from skcalbound.datasets import make_overconfident
    >>> data = make_overconfident(1000, random_state=0)
    >>> round(data.true_ce, 4), round(data.assumptions["V"], 3)
    (0.0637, 1.0)
    """
    problem = SmoothSine(amplitude=amplitude, name="overconfident")
    return generate(problem, n_samples, h, random_state)


@validate_params(
    {
        **_COMMON,
        "bottom": [Interval(Real, 0, 1, closed="both")],
        "top": [Interval(Real, 0, 1, closed="both")],
    },
    prefer_skip_nested_validation=True,
)
@generator_docstring
def make_parabola(n_samples=1000, *, bottom=0.1, top=0.9, h=None, random_state=None):
    """Generate scores with a parabola-shaped calibration function.

    ``eta(s) = bottom + 4 (top - bottom) (s - 1/2)^2`` on scores ``s ~ U(0, 1)``, the
    shape of the paper's Figure 5 (Appendix H). ``CE`` is
    exact (antiderivative between the roots of ``s - eta(s)``);
    ``V = 2 |top - bottom|``, ``b1 = L = 4 |top - bottom|``, ``b2 = 8 |top - bottom|``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of scores.
    bottom : float, default=0.1
        ``eta(1/2)``, in [0, 1].
    top : float, default=0.9
        ``eta(0) = eta(1)``, in [0, 1].
    {h_to_see_also}

    Examples
    --------
    >>> from skcalbound.datasets import make_parabola
    >>> data = make_parabola(1000, random_state=0)
    >>> round(data.true_ce, 4), round(data.assumptions["V"], 3)
    (0.3551, 1.6)
    """
    problem = Parabola(bottom=bottom, top=top)
    return generate(problem, n_samples, h, random_state)


@validate_params(
    {
        **_COMMON,
        "amplitude": [Interval(Real, 0, 0.2, closed="right")],
        "cycles": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
@generator_docstring
def make_oscillating(
    n_samples=1000, *, amplitude=0.15, cycles=40, h=None, random_state=None
):
    """Generate scores with a fast-oscillating calibration function (binned ECE fails).

    Scores ``s ~ U(0.2, 0.8)``, ``eta(s) = s + A sin(2 pi c s)`` (``c * 0.2`` and
    ``c * 0.8`` integers). Bins wider than a period average the oscillation out, so the
    binned ECE converges to a wrong value while ``CE = 2 A / pi``. Constants are exact:
    ``b1 = L = 1 + 2 pi c A``, ``b2 = (2 pi c)^2 A``, ``V`` in closed form.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of scores.
    amplitude : float, default=0.15
        ``A``, in ``(0, 0.2]``.
    cycles : int, default=40
        ``c``, a multiple of 5.
    {h_to_see_also}

    Examples
    --------
    >>> from skcalbound.datasets import make_oscillating
    >>> data = make_oscillating(1000, random_state=0)
    >>> round(data.true_ce, 4), round(data.assumptions["V"], 3)
    (0.0955, 14.405)
    """
    problem = Oscillating(amplitude=amplitude, cycles=cycles)
    return generate(problem, n_samples, h, random_state)


@validate_params(
    {
        **_COMMON,
    },
    prefer_skip_nested_validation=True,
)
@generator_docstring
def make_discrete(n_samples=1000, *, h=None, random_state=None):
    """Generate discrete scores with massive ties: five values, tabulated ``eta``.

    ``P(s = 0.1, 0.3, 0.5, 0.7, 0.9) = 0.1, 0.2, 0.4, 0.2, 0.1`` with ``eta = 0.05, 0.2,
    0.55, 0.8, 0.95``; ``CE = 0.07`` is a finite sum and ``V = 0.9``. ``eta`` is a step
    function, so only the TV bound applies to the raw scores (use ``h`` for the others).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of scores.
    {h_to_see_also}

    Examples
    --------
    >>> from skcalbound.datasets import make_discrete
    >>> data = make_discrete(1000, random_state=0)
    >>> round(data.true_ce, 4), round(data.assumptions["V"], 3)
    (0.07, 0.9)
    """
    problem = DiscreteTies()
    return generate(problem, n_samples, h, random_state)


@validate_params(
    {
        **_COMMON,
    },
    prefer_skip_nested_validation=True,
)
@generator_docstring
def make_atoms(n_samples=1000, *, h=None, random_state=None):
    """Generate scores with atoms at exactly 0 and 1 plus a uniform part.

    ``P(s = 0) = 0.2`` (``eta = 0.05``), ``P(s = 1) = 0.15`` (``eta = 0.9``), and
    ``U(0, 1)`` otherwise with ``eta(s) = 0.1 + 0.7 s``: ``CE = 0.025 + 0.65 / 12``
    exactly, ``V = 0.85``. ``eta`` jumps at the atoms, so only the TV bound applies to
    the raw scores (use ``h`` for the others).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of scores.
    {h_to_see_also}

    Examples
    --------
    >>> from skcalbound.datasets import make_atoms
    >>> data = make_atoms(1000, random_state=0)
    >>> round(data.true_ce, 4), round(data.assumptions["V"], 3)
    (0.0792, 0.85)
    """
    problem = atoms_and_linear()
    return generate(problem, n_samples, h, random_state)


@validate_params(
    {
        **_COMMON,
        "a": [Interval(Real, 0, None, closed="neither")],
        "b": [Interval(Real, 0, None, closed="neither")],
        "slope": [Interval(Real, 0, None, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
@generator_docstring
def make_rare_event(
    n_samples=1000, *, a=0.5, b=20.0, slope=1.2, h=None, random_state=None
):
    """Generate a rare positive class: ``s ~ Beta(a, b)``, ``eta(s) = min(1, slope s)``.

    Most scores are close to 0 (the density is unbounded there for ``a < 1``), as for
    click-through, fraud or churn. The defaults have base rate ``P(y = 1) = 1.2 / 41 =
    0.0293`` and ``CE = 0.00488`` (incomplete Beta functions, exact); with
    ``h=2**-6`` the base rate is the same and ``CE = 0.00736`` (numerical integration,
    the mesh graded towards 0). Constants: ``V = min(1, slope)``, ``L = slope``, and
    ``b1 = slope``, ``b2 = 0`` only for ``slope <= 1`` (above, ``eta`` has a kink at
    ``1 / slope`` and no ``b2`` holds: use ``h`` for NW). ``eta`` is non-decreasing,
    so :class:`~skcalbound.MonotoneCalibrationBound` applies to the raw scores. The
    base rate is ``data.problem.base_rate`` (``data.problem.base.base_rate`` with
    ``h``).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of scores.
    a : float, default=0.5
        First shape parameter of the Beta law of the scores (``> 0``).
    b : float, default=20.0
        Second shape parameter (``> 0``); the mean score is ``a / (a + b)``.
    slope : float, default=1.2
        Slope of ``eta`` below its cap at 1 (``> 0``); above 1 the scores understate
        the probability of the positive class.
    {h_to_see_also}

    Examples
    --------
    >>> from skcalbound.datasets import make_rare_event
    >>> data = make_rare_event(1000, h=2**-6, random_state=0)
    >>> round(data.true_ce, 5), round(data.problem.base.base_rate, 4)
    (0.00736, 0.0293)
    """
    problem = RareEvent(a=a, b=b, slope=slope)
    return generate(problem, n_samples, h, random_state)
