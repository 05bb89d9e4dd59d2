"""Synthetic calibration problems with an exactly known calibration error.

Like :mod:`sklearn.datasets`, the ``make_*`` functions return a sample; here it comes
with the true L1 calibration error ``CE = E|s - E[y | s]|`` of its law and the
assumption constants that hold for it (``V``, ``b1``, ``b2``, ``L``), so that a bound
can be compared with the truth. Every problem can be seen through the sech
perturbation (``h=``), with the truth of the perturbed classifier computed by
numerical integration of the paper's eq. (7) (error reported, below ``1e-5``), and
:class:`CustomProblem` brings your own calibration function and score law.
"""

from ._custom import CustomProblem
from ._generators import make_calibration_problem
from ._multiclass import make_multiclass
from ._named import (
    make_atoms,
    make_calibrated,
    make_discrete,
    make_oscillating,
    make_overconfident,
    make_parabola,
    make_rare_event,
)

__all__ = [
    "CustomProblem",
    "make_atoms",
    "make_calibrated",
    "make_calibration_problem",
    "make_discrete",
    "make_multiclass",
    "make_oscillating",
    "make_overconfident",
    "make_parabola",
    "make_rare_event",
]
