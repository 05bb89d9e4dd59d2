"""Reproduce the paper's synthetic experiments (section 7, Figures 3 and 5, Table 1).

Run ``python -m skcalbound.experiments`` (``--quick`` for a one-minute version,
``--help`` for the options) or call :func:`reproduce`: on problems of
:mod:`skcalbound.datasets` with an exactly known calibration error, the NW, TV and
Lipschitz-bucketing bounds in both guarantee modes (labelled ``NW``, ..., and ``NW
(paper)``, ...) and binned ECE give the gaps to the truth, the coverage of the upper
and lower bounds and the time, in a tidy CSV with the paper's figures and tables
and the AUROC cost of the perturbation (``--guarantees`` restricts to one mode).
"""

from ._reproduce import reproduce

__all__ = ["reproduce"]
