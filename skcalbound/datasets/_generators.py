"""Public ``make_*`` generators: a sample, its exact calibration error and constants."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state

from .._assumptions import check_perturbation_h
from .._compat import HasMethods, Interval, StrOptions, validate_params
from ._exact import checked_truth
from ._perturbed import SechPerturbed, perturbed_name
from ._problems import (
    CalibratedBeta,
    CalibrationProblem,
    DiscreteTies,
    RareEvent,
    atoms_and_linear,
)
from ._smooth import Oscillating, Parabola, SmoothSine

PROBLEM_NAMES = (
    "calibrated",
    "overconfident",
    "parabola",
    "oscillating",
    "discrete",
    "atoms",
    "rare_event",
)


def get_problem(name, h=None):
    """The problem object behind ``make_<name>`` with its default parameters."""
    problems = {
        "calibrated": lambda: CalibratedBeta(assumption_names=("V", "b1", "b2", "L")),
        "overconfident": lambda: SmoothSine(name="overconfident"),
        "parabola": Parabola,
        "oscillating": Oscillating,
        "discrete": DiscreteTies,
        "atoms": atoms_and_linear,
        "rare_event": RareEvent,
    }
    if name not in problems:
        raise ValueError(
            f"unknown problem {name!r}; expected one of {list(PROBLEM_NAMES)}"
        )
    return problems[name]() if h is None else perturb_problem(problems[name](), h)


def perturb_problem(problem, h):
    """``problem`` seen through the sech perturbation of bandwidth ``h``."""
    check_perturbation_h(h)  # h > 1/2 refused, with the hint, as everywhere
    return SechPerturbed(
        base=problem,
        h=float(h),
        name=perturbed_name(problem, h),
        assumption_names=("V", "b1", "b2", "L", "h"),
    )


def _sample(problem, n_samples, random_state):
    """The ``Bunch`` every generator returns; checks the integration error first."""
    error = float(problem.ce_integration_error)
    true_ce = float(checked_truth(problem.true_ce, error, str(problem)))
    rng = check_random_state(random_state)
    # One numpy Generator seeded from the RandomState: fast vectorised samplers.
    generator = np.random.default_rng(rng.randint(np.iinfo(np.int32).max, size=4))
    scores, labels = problem.sample(int(n_samples), generator)
    return Bunch(
        scores=scores,
        labels=labels,
        true_ce=true_ce,
        ce_integration_error=error,
        assumptions=dict(problem.assumptions),
        problem=problem,
    )


def generate(problem, n_samples, h, random_state):
    """What a ``make_*`` generator returns: ``problem`` (through the perturbation if
    ``h`` is given) sampled by :func:`_sample`."""
    if h is not None:
        problem = perturb_problem(problem, h)
    return _sample(problem, n_samples, random_state)


#: Docstring sections the ``make_*`` generators share, each written where its
#: placeholder line stands (``{returns}``, indented as a section): the parameters
#: ``h`` and ``random_state``, the returned ``Bunch``, and the named generators'
#: parameters ``h``, ``random_state`` to their "See Also" (``{h_to_see_also}``).
DOC_SECTIONS = {
    "{h_and_random_state}": """h : float, default=None
        If given, the scores go through the sech perturbation with bandwidth ``h``
        (as :func:`skcalbound.perturb_scores` does) and the truth is that of the
        perturbed classifier (paper eq. (7), by numerical integration).
    random_state : int, RandomState instance or None, default=None
        Seed of the sample.""",
    "{returns}": """Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes

        scores : ndarray of shape (n_samples,)
            Scores in [0, 1] (perturbed if ``h`` is given).
        labels : ndarray of shape (n_samples,)
            Labels in {0, 1}, ``P(y = 1 | s) = eta(s)``.
        true_ce : float
            The calibration error ``E|s - eta(s)|`` of the score law (exact; for
            ``h`` by numerical integration of the paper's eq. (7)).
        ce_integration_error : float
            Estimated absolute error of ``true_ce`` (0 for closed forms, always below
            ``1e-5``).
        assumptions : dict
            The constants that hold for the problem, keyed by the parameter of the
            bound they feed (``V``, ``b1``, ``b2``, ``L``; with ``h`` also ``h``).
        problem : object
            The problem: ``eta(s)``, ``sample(n, rng)``, ``true_ce``.""",
}
DOC_SECTIONS["{h_to_see_also}"] = f"""{DOC_SECTIONS["{h_and_random_state}"]}

    {DOC_SECTIONS["{returns}"]}

    See Also
    --------
    make_calibration_problem : Any named problem, or your own."""


def generator_docstring(func):
    """``func`` with the :data:`DOC_SECTIONS` placeholders of its docstring filled in
    (under ``python -OO``, where there is no docstring, ``func`` unchanged)."""
    if func.__doc__:
        for placeholder, text in DOC_SECTIONS.items():
            func.__doc__ = func.__doc__.replace(placeholder, text)
    return func


_COMMON = {
    "n_samples": [Interval(Integral, 1, None, closed="left")],
    "h": [Interval(Real, 0, None, closed="neither"), None],
    "random_state": ["random_state"],
}


@validate_params(
    {
        "problem": [StrOptions(set(PROBLEM_NAMES)), HasMethods(["sample", "eta"])],
        **_COMMON,
    },
    prefer_skip_nested_validation=True,
)
@generator_docstring
def make_calibration_problem(
    problem="overconfident", n_samples=1000, *, h=None, random_state=None
):
    """Generate scores and labels from a named or custom problem with known CE.

    The named problems are those of :func:`make_calibrated`,
    :func:`make_overconfident`, :func:`make_parabola`, :func:`make_oscillating`,
    :func:`make_discrete`, :func:`make_atoms` and :func:`make_rare_event` with their
    default parameters; a
    :class:`CustomProblem` brings your own calibration function and score law.

    Parameters
    ----------
    problem : {'calibrated', 'overconfident', 'parabola', 'oscillating', \
'discrete', 'atoms', 'rare_event'} or CustomProblem, \
default='overconfident'
        Which problem to sample from.
    n_samples : int, default=1000
        Number of scores.
    h : float, default=None
        If given, the scores go through the sech perturbation with bandwidth ``h``
        (as :func:`skcalbound.perturb_scores` does) and the truth is that of the
        perturbed classifier.
    random_state : int, RandomState instance or None, default=None
        Seed of the sample.

    {returns}

    See Also
    --------
    CustomProblem : Your own calibration function and score distribution.

    Examples
    --------
    >>> from skcalbound.datasets import make_calibration_problem
    >>> data = make_calibration_problem("parabola", 5, random_state=0)
    >>> data.scores.shape, round(data.true_ce, 4), data.assumptions["V"]
    ((5,), 0.3551, 1.6)
    """
    if isinstance(problem, str):
        problem = get_problem(problem)
    elif not isinstance(problem, CalibrationProblem):
        raise TypeError(f"problem must be a name or a CustomProblem; got {problem!r}")
    return generate(problem, n_samples, h, random_state)
