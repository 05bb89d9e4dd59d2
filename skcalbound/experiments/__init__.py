"""Reproduce the paper's synthetic experiments (section 7, Figures 3 and 5, Table 1).

Run ``python -m skcalbound.experiments`` (``--quick`` for a one-minute version, ``--help``
for the options) or call :func:`reproduce`. For every problem and size, ``n_repeats``
independent samples are drawn from a problem of :mod:`skcalbound.datasets` with an
exactly known calibration error; the NW, TV and Lipschitz-bucketing bounds, each in
both guarantee modes (``"high_probability"``, labelled ``NW``, ``TV``, ``Lip+Bkt``, and
the paper's published form, labelled ``NW (paper)`` and so on), and binned ECE are
computed on each; the upper and lower bounds, the gap ``bound - CE``,
``|ECE - CE|``, the coverage of the upper bound (fraction of repeats with
``bound >= CE``), of the lower bound (``lower_bound <= CE``) and of both, and the
time are written to a tidy CSV, with log-log plots of the mean gap against ``n``
(Figure 3), a table of fitted rates next to the paper's Table 1, a reconstruction
figure (Figure 5), and the AUROC cost of the perturbation against ``h`` (a synthetic
counterpart of Figure 2). ``--guarantees`` restricts the run to one mode.
"""

from ._auroc import BANDWIDTHS, auroc_vs_h, plot_auroc
from ._reproduce import (
    FULL,
    QUICK,
    coverage_table,
    methods_for,
    parse_problem,
    report,
    reproduce,
)
from ._report import (
    PAPER_RATES,
    complete_results,
    fit_slopes,
    plot_gaps,
    plot_reconstruction,
    rate_table,
    summarise,
)
from ._study import CERTIFIED, METHODS, make_estimator, run_study, run_task, split_method

__all__ = [
    "BANDWIDTHS",
    "CERTIFIED",
    "FULL",
    "METHODS",
    "PAPER_RATES",
    "QUICK",
    "auroc_vs_h",
    "complete_results",
    "coverage_table",
    "fit_slopes",
    "make_estimator",
    "methods_for",
    "parse_problem",
    "plot_auroc",
    "plot_gaps",
    "plot_reconstruction",
    "rate_table",
    "report",
    "reproduce",
    "run_study",
    "run_task",
    "split_method",
    "summarise",
]
