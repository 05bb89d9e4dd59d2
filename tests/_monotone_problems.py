"""Monotone calibration problems with exact truth, shared by the band's coverage tests
(the sorted band in test_monotone_bound.py, the grid band in test_band_grid.py)."""

import numpy as np
from scipy import stats
from scipy.special import expit, logit

from skcalbound.datasets import CustomProblem


def _logistic(s):
    with np.errstate(divide="ignore"):
        return expit(1.3 * logit(s) + 0.2)


MONOTONE_PROBLEMS = {
    "calibrated": CustomProblem(lambda s: s, stats.beta(2, 5)),
    "logistic-like": CustomProblem(_logistic, stats.beta(2, 5)),
    "step": CustomProblem(
        lambda s: 0.1 + 0.2 * np.minimum(np.floor(4 * s), 3),
        breakpoints=(0.25, 0.5, 0.75),
    ),
    "jump": CustomProblem(
        lambda s: np.where(s < 0.5, 0.6 * s, 0.4 + 0.6 * s),
        stats.beta(2, 2),
        breakpoints=(0.5,),
    ),
    "atoms with ties": CustomProblem(
        lambda s: s,
        atoms=[
            (0.05, 0.2, 0.02),
            (0.2, 0.3, 0.25),
            (0.4, 0.2, 0.3),
            (0.7, 0.2, 0.75),
            (0.95, 0.1, 0.97),
        ],
    ),
    "point mass": CustomProblem(lambda s: s, atoms=[(0.9, 1.0, 0.5)]),
    "0.5% base rate": CustomProblem(lambda s: 0.5 * s, stats.beta(1, 99)),
}
