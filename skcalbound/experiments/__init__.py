"""Reproduce the paper's synthetic experiments (section 7, Figures 3 and 5, Table 1).

Run ``python -m skcalbound.experiments`` (``--quick`` for a one-minute version,
``--help`` for the options) or call :func:`reproduce`. For every problem and size,
``n_repeats`` samples are drawn from a problem of :mod:`skcalbound.datasets` with an
exactly known calibration error, and the NW, TV and Lipschitz-bucketing bounds (both
guarantee modes) and binned ECE are computed on each; bounds, gaps, coverages and
times go to a tidy CSV, with the paper's figures and a table of fitted rates beside
its Table 1. The full list: ``docs/internals/core.rst``.
"""

from ._reproduce import reproduce

__all__ = ["reproduce"]
