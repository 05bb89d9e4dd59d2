"""
=========================================================
Reconstructing the calibration function (paper Figure 5)
=========================================================

Each certified bound is built on a *surrogate* of the calibration function
:math:`\\eta(s) = E[y \\mid s]`: a kernel smoother for the NW bound, a total-variation
denoiser for the TV bound. ``predict`` returns the surrogate refit on all the data
(recalibrated probabilities). Here the truth is a parabola,
:math:`\\eta(s) = 0.1 + 3.2 (s - 1/2)^2` on uniform scores
(:func:`skcalbound.datasets.make_parabola`), and we watch both surrogates approach it
as the sample grows, as in Appendix H of the paper. The TV denoiser is pulled towards
a constant, so it is least faithful at the ends and at the bottom of the parabola.
"""

# %%
# The problem and its constants
# -----------------------------
# The generator returns the sample, the exact calibration error and the constants
# that hold for the parabola: total variation ``V``, derivative bounds ``b1``, ``b2``.
from skcalbound.datasets import make_parabola

data = make_parabola(1_000, random_state=0)
print(f"true CE = {data.true_ce:.4f}")
print({name: round(value, 3) for name, value in data.assumptions.items()})

# %%
# Surrogates for three sample sizes
# ---------------------------------
# :func:`skcalbound.experiments.plot_reconstruction` draws one sample per size, fits
# ``NWCalibrationBound(b1=3.2, b2=6.4)`` and ``TVCalibrationBound(V=1.6)`` on it, and
# plots ``predict`` on a grid next to the true :math:`\eta` (black); the panel
# titles give the certified bounds, to compare with the true CE above.
import matplotlib.pyplot as plt

from skcalbound.experiments import plot_reconstruction

axes = plot_reconstruction(data.problem, [1_000, 10_000, 100_000], random_state=0)
plt.show()

# %%
# The same study on all problems, sizes up to :math:`10^7` and 64 repeats is
# ``make reproduce`` (``python -m skcalbound.experiments``); see
# :ref:`reproduce`.
