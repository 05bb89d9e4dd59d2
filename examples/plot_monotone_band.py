"""
================================================
A monotone calibration function is an assumption
================================================

:class:`~skcalbound.MonotoneCalibrationBound` certifies a band
:math:`L(s) \\le E[y \\mid s] \\le U(s)` for all scores at once, and from
it an interval for the calibration error, on the raw scores of the model
you ship. It assumes that :math:`E[y \\mid s]` is non-decreasing in the
score. When that holds it is narrower than the bounds that assume only
bounded variation (:class:`~skcalbound.TVCalibrationBound`); when it
fails, its interval can miss the true calibration error, and the band's
crossing test catches only some such cases. This example shows both.
"""

# %%
# A logistic-regression-like model
# --------------------------------
# Scores :math:`s \sim \mathrm{Beta}(2, 5)` and
# :math:`E[y \mid s] = \mathrm{expit}(1.3\,\mathrm{logit}(s) + 0.2)`:
# monotone, slightly over-confident. Its true calibration error comes from
# numerical integration.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from scipy import integrate, stats
from scipy.special import expit, logit

from skcalbound import MonotoneCalibrationBound, TVCalibrationBound


def eta(s):
    return expit(1.3 * logit(s) + 0.2)


true_ce = integrate.quad(
    lambda s: abs(s - eta(s)) * stats.beta(2, 5).pdf(s), 0, 1
)[0]
rng = np.random.default_rng(0)
n = 100_000
s = rng.beta(2, 5, n)
y = rng.uniform(size=n) < eta(s)

# %%
# The band beside TV's two methods
# --------------------------------
# TV's default is the cell bound (``method="cells"``); the paper's bound is
# ``method="denoise"``. Both assume only that :math:`E[y \mid s]` has
# total variation at most ``V = 1``, which every monotone function meets.
band = MonotoneCalibrationBound(random_state=0).fit(s, y)
cells = TVCalibrationBound(random_state=0).fit(s, y)
denoise = TVCalibrationBound(method="denoise", random_state=0)
denoise.fit(s, y)
print(f"true CE {true_ce:.4f}")
for name, est in [
    ("band", band),
    ("TV cells", cells),
    ("TV denoise", denoise),
]:
    lo, up = est.lower_bound_, est.bound_
    print(f"{name:10s} [{lo:.3f}, {up:.3f}]  width {up - lo:.3f}")

# %%
# The band is drawn from :meth:`~skcalbound.MonotoneCalibrationBound.
# predict_interval`; the TV curves are their ``predict``, the step
# functions each bound is computed from (block means for cells, the
# denoised labels for denoise), not confidence bands.
grid = np.linspace(s.min(), 0.95, 600)
low, high = band.predict_interval(grid)
fig, ax = plt.subplots(figsize=(6.4, 5.6), layout="constrained")
ax.fill_between(
    grid,
    low,
    high,
    color="C0",
    alpha=0.3,
    linewidth=0,
    label=(
        f"band (95%, all scores at once): CE in "
        f"[{band.lower_bound_:.3f}, {band.bound_:.3f}]"
    ),
)
for est, name, color in [
    (cells, "TV cells", "C1"),
    (denoise, "TV denoise", "C2"),
]:
    ax.step(
        grid,
        est.predict(grid),
        where="post",
        color=color,
        label=(
            f"{name}: CE in "
            f"[{est.lower_bound_:.3f}, {est.bound_:.3f}]"
        ),
    )
ax.plot(
    grid,
    eta(grid),
    color="black",
    label=f"true E[y|s] (CE = {true_ce:.4f})",
)
ax.plot([0, 1], [0, 1], ":", color="grey", label="calibrated")
ax.set(xlim=(0, 0.95), ylim=(0, 1), xlabel="score s")
ax.set(ylabel="E[y | s]")
ax.legend(loc="upper left", fontsize="small")
plt.show()

# %%
# An oscillating calibration function
# -----------------------------------
# :func:`~skcalbound.datasets.make_oscillating`:
# :math:`E[y \mid s] = s + 0.15 \sin(80 \pi s)` on
# :math:`s \sim U(0.2, 0.8)`, true CE 0.0955. It is not monotone, so the
# band's guarantee does not apply. With :math:`10^4` rows (this sample)
# the band does not cross, no warning is issued, and the interval misses
# the true CE all the same: a band that does not cross is no evidence of
# monotonicity.
from skcalbound.datasets import make_oscillating


def fit_band(data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = MonotoneCalibrationBound(random_state=0)
        est.fit(data.scores, data.labels)
    return est, [str(w.message) for w in caught]


small = make_oscillating(10_000, random_state=2)
est_small, messages = fit_band(small)
lo, up = est_small.lower_bound_, est_small.bound_
print(
    f"n = 10^4: CE {small.true_ce:.4f}, band interval "
    f"[{lo:.3f}, {up:.3f}], "
    f"crosses: {est_small.monotonicity_rejected_}, "
    f"warnings: {len(messages)}"
)

# %%
# With :math:`10^5` rows the band crosses (:math:`L > U` somewhere), which
# rejects monotonicity: ``monotonicity_rejected_`` is set and a
# :class:`~skcalbound.MonotonicityWarning` says so. The interval itself is
# meaningless here (its upper end is below its lower end and far below
# the true CE).
large = make_oscillating(100_000, random_state=0)
est_large, messages = fit_band(large)
lo, up = est_large.lower_bound_, est_large.bound_
print(
    f"n = 10^5: CE {large.true_ce:.4f}, band interval "
    f"[{lo:.3f}, {up:.3f}], "
    f"crosses: {est_large.monotonicity_rejected_}"
)
print("warning:", *messages)

# %%
# The interval to report when monotonicity is in doubt is TV's, with the
# total variation ``V`` you are willing to assume (here the true one,
# about 14.4, which a user would not know), reported whatever the band
# does: choosing between the two intervals by the crossing flag is not
# certified when :math:`E[y \mid s]` may not be monotone.
V = large.assumptions["V"]
tv = TVCalibrationBound(V=V, random_state=0)
tv.fit(large.scores, large.labels)
print(
    f"TV cells, V = {V:.1f}: "
    f"[{tv.lower_bound_:.3f}, {tv.bound_:.3f}]"
)

# %%
# Left, the band of :math:`10^4` rows: it does not cross, and it cannot
# follow the oscillation, which it averages out. Right, :math:`10^5` rows:
# the band crosses almost everywhere (red).
grid = np.linspace(0.2, 0.8, 2000)
truth = grid + 0.15 * np.sin(80 * np.pi * grid)
fig, axes = plt.subplots(
    1, 2, figsize=(9, 4.2), sharey=True, layout="constrained"
)
for ax, est, title in [
    (axes[0], est_small, "n = 10^4: no crossing"),
    (axes[1], est_large, "n = 10^5: the band crosses"),
]:
    low, high = est.predict_interval(grid)
    ax.fill_between(
        grid,
        low,
        high,
        where=low <= high,
        color="C0",
        alpha=0.4,
        linewidth=0,
        label="band, where L <= U",
    )
    ax.fill_between(
        grid,
        high,
        low,
        where=low > high,
        color="C3",
        alpha=0.6,
        linewidth=0,
        label="band crosses (L > U)",
    )
    ax.plot(
        grid,
        truth,
        color="black",
        linewidth=0.5,
        label="true E[y|s], not monotone",
    )
    ax.set(title=title, xlabel="score s", xlim=(0.2, 0.8))
axes[0].set(ylabel="E[y | s]")
axes[1].legend(loc="upper left", fontsize="small")
plt.show()
