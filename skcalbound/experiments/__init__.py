"""Reproduce the paper's synthetic experiments (section 7, Figures 3 and 5, Table 1).

Run ``python -m skcalbound.experiments`` (``--quick`` for a one-minute version, ``--help``
for the options) or call :func:`reproduce`. For every problem and size, ``n_repeats``
independent samples are drawn from a problem of :mod:`skcalbound.datasets` with an
exactly known calibration error; the NW, TV and Lipschitz-bucketing bounds and binned
ECE are computed on each; the gap ``bound - CE``, ``|ECE - CE|``, the coverage
(fraction of repeats with ``bound >= CE``) and the time are written to a tidy CSV,
with log-log plots of the mean gap against ``n`` (Figure 3), a table of fitted rates
next to the paper's Table 1, a reconstruction figure (Figure 5), and the AUROC cost
of the perturbation against ``h`` (a synthetic counterpart of Figure 2).
"""

from ._auroc import BANDWIDTHS, auroc_vs_h, plot_auroc
from ._reproduce import FULL, QUICK, parse_problem, report, reproduce
from ._report import (
    PAPER_RATES,
    fit_slopes,
    plot_gaps,
    plot_reconstruction,
    rate_table,
    summarise,
)
from ._study import METHODS, make_estimator, run_study, run_task

__all__ = [
    "BANDWIDTHS",
    "FULL",
    "METHODS",
    "PAPER_RATES",
    "auroc_vs_h",
    "QUICK",
    "fit_slopes",
    "make_estimator",
    "parse_problem",
    "plot_auroc",
    "plot_gaps",
    "plot_reconstruction",
    "rate_table",
    "report",
    "reproduce",
    "run_study",
    "run_task",
    "summarise",
]
