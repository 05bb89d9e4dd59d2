"""Gap study tables and figures: summary by size, fitted rates, Figures 3 and 5."""

import warnings

import numpy as np
import pandas as pd

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    VacuousBoundWarning,
)

from .._guarantee import GUARANTEES, PAPER
from ._study import (
    BOUNDS,
    CERTIFIED,
    PAPER_LABELS,
    PAPER_SUFFIX,
    make_estimator,
    split_method,
)

#: Paper, Table 1, per bound: empirical rates (slopes of log gap against log n),
#: the theoretical rate and the assumption it rests on.
PAPER_RATES = {
    NWCalibrationBound: (-0.406, -0.213, -1 / 3, "bounded derivatives"),
    TVCalibrationBound: (-0.423, -0.164, -1 / 4, "bounded variation"),
    LipschitzBucketBound: (-0.574, -0.346, -1 / 3, "Lipschitz"),
}
#: Line colour of each bound in the figures (both guarantee modes).
COLOURS = {
    NWCalibrationBound: "C0",
    TVCalibrationBound: "C3",
    LipschitzBucketBound: "C2",
}


def complete_results(results):
    """``results`` of any run in the current layout (a copy if it changes).

    Runs made before the two guarantee modes (such as a ``results.csv.gz`` written
    then) have no ``guarantee`` or ``lower_bound`` columns; their bounds were the
    paper's published forms, so their certified methods are relabelled
    ``"... (paper)"``, with ``guarantee="paper"`` and no lower bound (NaN; their
    ``covered_both`` is ``covered``).
    """
    if "guarantee" in results.columns:
        return results
    results = results.copy()
    certified = results["method"].isin(BOUNDS)
    results.loc[certified, "method"] = results.loc[certified, "method"] + PAPER_SUFFIX
    results["guarantee"] = pd.Series(
        np.where(certified, PAPER.name, None), index=results.index, dtype=object
    )
    results["lower_bound"] = np.nan
    results["lower_gap"] = np.nan
    results["covered_lower"] = np.nan
    results["covered_both"] = results["covered"]
    return results


def _mean_of_flags(values):
    """Fraction of true values among the non-missing ones (NaN if none)."""
    values = values.dropna()
    return float(values.astype(bool).mean()) if values.size else np.nan


def summarise(results, confidence_level):
    """Per problem, method and size: means over the repeats and the coverage.

    ``mean_gap`` is the mean of ``value - CE`` (for ECE: ``mean_abs_error`` is the one
    to read), ``coverage`` the fraction of repeats with ``value >= CE`` (the upper
    bound covers), ``coverage_lower`` the fraction with ``lower_bound <= CE`` (the
    lower bound covers), ``coverage_joint`` the fraction with both (what a certified
    interval promises: at least ``confidence_level``), ``mean_lower_bound`` and
    ``mean_lower_gap`` (``CE - lower_bound``) the lower bound's counterparts of
    ``mean_value`` and ``mean_gap``; coverages for certified methods only.
    ``coverage_ok`` says whether ``coverage_joint`` reaches ``confidence_level``, and
    ``n_clipped`` is the number of repeats whose upper bound is 1 (the trivial bound).
    """
    results = results.assign(
        covered=results["covered"].astype(float),
        covered_lower=results["covered_lower"].astype(float),
        covered_both=results["covered_both"].astype(float),
    )
    grouped = results.groupby(["problem", "method", "n"], sort=True)
    summary = grouped.agg(
        guarantee=("guarantee", "first"),
        repeats=("value", "size"),
        true_ce=("true_ce", "first"),
        mean_value=("value", "mean"),
        mean_gap=("gap", "mean"),
        sem_gap=("gap", "sem"),
        mean_abs_error=("abs_error", "mean"),
        coverage=("covered", _mean_of_flags),
        mean_lower_bound=("lower_bound", "mean"),
        mean_lower_gap=("lower_gap", "mean"),
        coverage_lower=("covered_lower", _mean_of_flags),
        coverage_joint=("covered_both", _mean_of_flags),
        n_clipped=("value", lambda v: int(np.sum(v >= 1.0))),
        mean_seconds=("seconds", "mean"),
    ).reset_index()
    certified = summary["method"].isin(CERTIFIED)
    summary["coverage_ok"] = np.where(
        certified, summary["coverage_joint"] >= confidence_level, True
    )
    summary.loc[~certified, ["coverage", "coverage_lower", "coverage_joint"]] = np.nan
    return summary


def _slope(group, column, min_n):
    use = group[(group["n_clipped"] == 0) & (group[column] > 0) & (group["n"] >= min_n)]
    if use.shape[0] < 3:
        return np.nan, use
    return float(np.polyfit(np.log10(use["n"]), np.log10(use[column]), 1)[0]), use


def fit_slopes(summary, large_n=100_000):
    """Least-squares slope of ``log mean gap`` against ``log n`` per problem and method.

    ``slope`` uses every size; ``slope_large_n`` only sizes ``n >= large_n``, where the
    gap is dominated by its slowest term (the asymptotic rate; at small ``n`` terms of
    order ``n^-1/2`` still weigh, and the curve is steeper). Sizes where some repeat's
    bound is clipped at 1 are left out (the curve is flat there by construction, not
    by rate); a fit needs at least three sizes. For ECE the slope is that of
    ``log mean |ECE - CE|``.
    """
    rows = []
    for (problem, method), group in summary.groupby(["problem", "method"], sort=False):
        column = "mean_gap" if method in CERTIFIED else "mean_abs_error"
        slope, use = _slope(group, column, 0)
        slope_large, _ = _slope(group, column, large_n)
        rows.append(
            {
                "problem": problem,
                "method": method,
                "slope": slope,
                "slope_large_n": slope_large,
                "sizes_used": int(use.shape[0]),
                "n_min": int(use["n"].min()) if use.shape[0] else np.nan,
                "n_max": int(use["n"].max()) if use.shape[0] else np.nan,
            }
        )
    return pd.DataFrame(rows)


def rate_table(slopes):
    """Our fitted slopes per method next to the paper's Table 1 range and the theory.

    One row per certified method in ``slopes`` (each bound in each guarantee mode;
    the paper's figures are those of its published forms, ``"... (paper)"``).
    ``ours_low``/``ours_high`` span the problems' slopes over all sizes,
    ``large_n_low``/``large_n_high`` those over ``n >= 10^5``; one column per problem
    gives each slope as ``all sizes / large n``.
    """
    rows = []
    for method in CERTIFIED:
        ours = slopes[slopes["method"] == method]
        if ours.empty:
            continue
        low, high, theory, assumption = PAPER_RATES[split_method(method)[0]]
        row = {
            "method": method,
            "assumption": assumption,
            "paper_low": low,
            "paper_high": high,
            "theory": theory,
            "ours_low": ours["slope"].min(),
            "ours_high": ours["slope"].max(),
            "large_n_low": ours["slope_large_n"].min(),
            "large_n_high": ours["slope_large_n"].max(),
        }
        for problem, slope, large in zip(
            ours["problem"], ours["slope"], ours["slope_large_n"]
        ):
            row[problem] = f"{slope:.2f} / {large:.2f}"
        rows.append(row)
    return pd.DataFrame(rows)


def plot_gaps(summary, *, problems=None, axes=None):
    """The paper's Figure 3: mean gap ``bound - CE`` (and ``|ECE - CE|``) against ``n``.

    One log-log panel per problem (in the order of ``problems``, default that of
    ``summary``); the shaded band is two standard errors of the mean over the repeats.
    Each bound in the default ``"high_probability"`` mode is a solid line, in the
    paper's published form (``"... (paper)"``) a dash-dotted line of the same colour;
    ECE is dashed black.
    """
    import matplotlib.pyplot as plt

    if problems is None:
        problems = list(dict.fromkeys(summary["problem"]))
    if axes is None:
        _, axes = plt.subplots(
            1,
            len(problems),
            figsize=(4.2 * len(problems), 3.8),
            squeeze=False,
            constrained_layout=True,
        )
        axes = axes[0]
    styles = {}
    for method in CERTIFIED:
        cls, guarantee = split_method(method)
        line = "-." if GUARANTEES[guarantee].published else "-"
        styles[method] = (COLOURS[cls], line)
    styles["ECE"] = ("k", "--")
    for ax, problem in zip(axes, problems):
        part = summary[summary["problem"] == problem]
        for method, (color, line) in styles.items():
            group = part[part["method"] == method].sort_values("n")
            if group.empty:
                continue
            column = "mean_gap" if method in CERTIFIED else "mean_abs_error"
            y = group[column].to_numpy()
            label = method if method in CERTIFIED else "|ECE - CE|"
            ax.plot(group["n"], y, line, color=color, marker="o", ms=3, label=label)
            if method in CERTIFIED:
                band = 2 * group["sem_gap"].fillna(0.0).to_numpy()
                ax.fill_between(
                    group["n"],
                    np.maximum(y - band, 1e-6),
                    y + band,
                    color=color,
                    alpha=0.2,
                    lw=0,
                )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="n",
            title=f"{problem} (CE = {part['true_ce'].iloc[0]:.4f})",
        )
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("bound - CE  (ECE: |ECE - CE|)")
    axes[0].legend(fontsize="small")
    return axes


def plot_reconstruction(
    problem, sizes, *, random_state=0, confidence_level=0.95, axes=None
):
    """The paper's Figure 5: true ``eta`` against NW and TV surrogates for several n.

    For each size, one sample is drawn and the surrogate refit on all of it
    (``predict``) is drawn next to the truth, with the certified interval
    ``[lower_bound_, bound_]`` in the panel title (default guarantee).
    """
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(
            1,
            len(sizes),
            figsize=(4.0 * len(sizes), 3.4),
            sharey=True,
            squeeze=False,
            constrained_layout=True,
        )
        axes = axes[0]
    grid = np.linspace(0.0, 1.0, 801)
    rng = np.random.default_rng(random_state)
    for ax, n in zip(axes, sizes):
        scores, labels = problem.sample(int(n), rng)
        titles = []
        for cls in (NWCalibrationBound, TVCalibrationBound):
            method, color = PAPER_LABELS[cls], COLOURS[cls]
            estimator = make_estimator(
                method,
                problem.assumptions,
                confidence_level=confidence_level,
                random_state=random_state,
            )
            if estimator is None:
                continue
            with warnings.catch_warnings():
                # A wide interval at a small n is what the panel shows (its title),
                # not something to warn the reader of the report about.
                warnings.simplefilter("ignore", VacuousBoundWarning)
                estimator.fit(scores, labels)
            ax.plot(grid, estimator.predict(grid), color=color, lw=1.4, label=method)
            titles.append(
                f"{method} [{estimator.lower_bound_:.3f}, {estimator.bound_:.3f}]"
            )
        ax.plot(grid, problem.eta(grid), "k", lw=1.2, label="true eta")
        ax.plot(grid, grid, ":", color="0.5", lw=0.8)
        ax.set(xlabel="score s", title=f"n = {int(n):,}\nCE in " + ", ".join(titles))
    axes[0].set_ylabel("E[y | s]")
    axes[0].legend(fontsize="small")
    return axes
