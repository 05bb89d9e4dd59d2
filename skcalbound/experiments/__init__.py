"""Reproduce the paper's synthetic experiments (section 7, Figures 3 and 5, Table 1).

Run ``python -m skcalbound.experiments`` (``--quick`` for a one-minute version,
``--help`` for the options) or call :func:`reproduce`. For every problem and size,
``n_repeats`` independent samples are drawn from a problem of :mod:`skcalbound.datasets`
with an exactly known calibration error; the NW, TV and Lipschitz-bucketing bounds, each
in both guarantee modes (``"high_probability"``, labelled ``NW``, ``TV``, ``Lip+Bkt``,
and the paper's published form, labelled ``NW (paper)`` and so on), and binned ECE are
computed on each; the upper and lower bounds, the gap ``bound - CE``,
``|ECE - CE|``, the coverage of the upper bound (fraction of repeats with
``bound >= CE``), of the lower bound (``lower_bound <= CE``) and of both, and the
time are written to a tidy CSV, with log-log plots of the mean gap against ``n``
(Figure 3), a table of fitted rates next to the paper's Table 1, a reconstruction
figure (Figure 5), and the AUROC cost of the perturbation against ``h`` (a synthetic
counterpart of Figure 2). ``--guarantees`` restricts the run to one mode.
"""

from ._reproduce import reproduce

__all__ = ["reproduce"]
