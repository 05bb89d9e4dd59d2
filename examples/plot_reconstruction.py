"""
=========================================================
Reconstructing the calibration function (paper Figure 5)
=========================================================

Each certified bound is built on a *surrogate* of the calibration function
:math:`\\eta(s) = E[y \\mid s]`: a kernel smoother for the NW bound, a total-variation
denoiser for the TV bound. ``predict`` returns the surrogate refit on all the data,
the estimate of :math:`\\eta` the bound is built on; the TV surrogate is not a
recalibration map (the denoising flattens its ends). Here the truth is a parabola,
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
print(
    {
        name: round(value, 3)
        for name, value in data.assumptions.items()
    }
)

# %%
# Surrogates for three sample sizes
# ---------------------------------
# For each size we draw a fresh sample, fit ``NWCalibrationBound(b1=3.2, b2=6.4)``
# and ``TVCalibrationBound(V=1.6, method="denoise")`` (the paper's) on it, and plot
# ``predict`` on a grid next to the true :math:`\eta` (black); the panel titles give
# the certified intervals, to compare with the true CE above. At 1,000 samples the
# intervals say little, and each fit warns so (``VacuousBoundWarning``).
import matplotlib.pyplot as plt
import numpy as np

from skcalbound import NWCalibrationBound, TVCalibrationBound

b1, b2, V = (data.assumptions[name] for name in ("b1", "b2", "V"))
grid = np.linspace(0.0, 1.0, 801)
sizes = [1_000, 10_000, 100_000]
fig, axes = plt.subplots(
    1,
    len(sizes),
    figsize=(12, 3.4),
    sharey=True,
    constrained_layout=True,
)
for ax, n in zip(axes, sizes):
    sample = make_parabola(n, random_state=n)
    bounds = {
        "NW": NWCalibrationBound(b1=b1, b2=b2, random_state=0),
        "TV": TVCalibrationBound(
            V=V, method="denoise", random_state=0
        ),
    }
    labels = ["NW surrogate", "TV-denoised surrogate"]
    titles = []
    for (name, bound), color, label in zip(
        bounds.items(), ["C0", "C3"], labels
    ):
        bound.fit(sample.scores, sample.labels)
        ax.plot(
            grid,
            bound.predict(grid),
            color=color,
            lw=1.4,
            label=label,
        )
        titles.append(
            f"{name} [{bound.lower_bound_:.3f}, {bound.bound_:.3f}]"
        )
    print(
        f"n = {n:>7,}: CE = {data.true_ce:.4f} in "
        + ", ".join(titles)
    )
    ax.plot(
        grid, data.problem.eta(grid), "k", lw=1.2, label="true eta"
    )
    ax.plot(grid, grid, ":", color="0.5", lw=0.8)
    ax.set(
        xlabel="score s",
        title=f"n = {n:,}\nCE in " + ", ".join(titles),
    )
axes[0].set_ylabel("E[y | s]")
axes[0].legend(fontsize="small")
plt.show()

# %%
# The same study on all problems, sizes up to :math:`10^7` and 64 repeats is
# ``make reproduce`` (``python -m skcalbound.experiments``); see
# :ref:`reproduce`.
