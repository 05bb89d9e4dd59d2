"""The whole study in one call: run, summarise, plot, write files, report wall times."""

import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from skcalbound.datasets._generators import PROBLEM_NAMES, get_problem

from ._auroc import auroc_vs_h, plot_auroc
from ._report import (
    complete_results,
    fit_slopes,
    plot_gaps,
    plot_reconstruction,
    rate_table,
    summarise,
)
from ._study import CERTIFIED, METHODS, run_study, split_method


@dataclass(frozen=True)
class Settings:
    """Problems, sizes and repeats of a run."""

    problems: tuple
    sizes: tuple
    n_repeats: int
    reconstruction_sizes: tuple
    auroc_samples: int


#: The full study: 4 problems, 9 log-spaced sizes from 10^3 to 10^7, 64 repeats.
FULL = Settings(
    problems=("calibrated", "overconfident", "parabola", "oscillating"),
    sizes=tuple(int(n) for n in np.round(np.logspace(3, 7, 9))),
    n_repeats=64,
    reconstruction_sizes=(1_000, 10_000, 100_000, 1_000_000),
    auroc_samples=1_000_000,
)
#: About a minute on 2 cores: the same problems, 5 sizes from 10^3 to 10^4, 8 repeats.
QUICK = Settings(
    problems=FULL.problems,
    sizes=tuple(int(n) for n in np.round(np.logspace(3, 4, 5))),
    n_repeats=8,
    reconstruction_sizes=(1_000, 10_000, 100_000),
    auroc_samples=100_000,
)


def parse_problem(spec):
    """``"parabola"``, or ``"discrete:h=2^-6"`` / ``"atoms:h=0.01"`` (perturbed)."""
    name, _, option = spec.partition(":")
    if name not in PROBLEM_NAMES:
        raise ValueError(
            f"unknown problem {name!r} in {spec!r}; expected one of "
            f"{list(PROBLEM_NAMES)}, optionally followed by ':h=<bandwidth>'"
        )
    if not option:
        return get_problem(name)
    key, _, value = option.partition("=")
    if key != "h" or not value:
        raise ValueError(
            f"bad option {option!r} in {spec!r}; expected 'h=<bandwidth>', "
            "e.g. 'h=2^-6' or 'h=0.015625'"
        )
    try:
        h = 2.0 ** float(value[2:]) if value.startswith("2^") else float(value)
    except ValueError:
        raise ValueError(
            f"bad bandwidth {value!r} in {spec!r}; expected e.g. 2^-6 or 0.015625"
        )
    if not h > 0:
        raise ValueError(f"bandwidth must be positive; got {value!r} in {spec!r}")
    return get_problem(name, h=h)


def methods_for(guarantees):
    """The method labels of :data:`METHODS` whose guarantee mode is in
    ``guarantees`` (a sequence of ``"high_probability"`` and ``"paper"``), and ECE."""
    return tuple(m for m in METHODS if m == "ECE" or split_method(m)[1] in guarantees)


def coverage_table(summary):
    """Per problem and certified method, the smallest coverage over the sizes: of the
    upper bound (``coverage``), of the lower bound (``coverage_lower``) and of both
    at once (``coverage_joint``), in the order of :data:`CERTIFIED`."""
    certified = summary[summary["method"].isin(CERTIFIED)]
    table = (
        certified.groupby(["problem", "method"], sort=False)[
            ["coverage", "coverage_lower", "coverage_joint"]
        ]
        .min()
        .reset_index()
    )
    order = {method: k for k, method in enumerate(CERTIFIED)}
    problems = {problem: k for k, problem in enumerate(dict.fromkeys(table["problem"]))}
    key = table["problem"].map(problems) * len(order) + table["method"].map(order)
    return table.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)


def doc_tables(summary, rates, timing):
    """Small rounded tables for the documentation page (``docs/reproduce.rst``)."""
    coverage = coverage_table(summary)
    table = rates.copy()
    numeric = table.select_dtypes("number").columns
    table[numeric] = table[numeric].round(3)
    oscillating = summary[summary["problem"] == "oscillating"]
    ece = oscillating.pivot(index="n", columns="method", values="mean_gap")
    if not ece.empty:
        gaps = [method for method in CERTIFIED if method in ece.columns]
        ece = ece[gaps].rename(columns={method: f"{method} gap" for method in gaps})
        ece["ECE error abs(ECE - CE)"] = oscillating[
            oscillating["method"] == "ECE"
        ].set_index("n")["mean_abs_error"]
        ece = ece.round(4).reset_index()
        ece.columns.name = None
    wall = timing[["problem", "wall_seconds"]].copy()
    wall["wall_minutes"] = (wall["wall_seconds"] / 60).round(1)
    wall["wall_seconds"] = wall["wall_seconds"].round(0)
    for column in ("load_1min_start", "load_1min_end"):
        if column in timing:
            wall[column] = timing[column].round(2)
    return {
        "doc_coverage": coverage,
        "doc_rates": table,
        "doc_oscillating": ece,
        "doc_timing": wall,
    }


def _timing_line(row):
    """A line of the report: one problem's row (a dict) of a run's ``timing``."""
    line = f"{row['problem']}: {row['wall_seconds']:.1f} s wall time"
    start = row.get("load_1min_start", np.nan)
    end = row.get("load_1min_end", np.nan)
    if np.isfinite(start) and np.isfinite(end):
        line += f" (load average {start:.2f} -> {end:.2f})"
    return line


def _load():
    return os.getloadavg() if hasattr(os, "getloadavg") else (np.nan,) * 3


def reproduce(
    problems=FULL.problems,
    sizes=FULL.sizes,
    n_repeats=FULL.n_repeats,
    *,
    output_dir="reproduce_output",
    confidence_level=0.95,
    random_state=0,
    n_jobs=None,
    reconstruction_sizes=FULL.reconstruction_sizes,
    plots=True,
    auroc_samples=1_000_000,
    progress=True,
    methods=METHODS,
    log=print,
):
    """Run the paper's synthetic study, write its files and return its tables.

    For every problem, size and repeat a fresh sample is drawn from a problem whose
    calibration error (CE) is known exactly; the NW, TV and Lipschitz-bucketing
    bounds, each in both guarantee modes, and binned ECE (15 bins) are computed on
    it. The gap ``bound - CE``, ``|ECE - CE|`` and the coverage of the certified
    intervals are summarised by size, the slopes of the mean gap against ``n`` are
    set next to the paper's Table 1, and the figures are drawn. The defaults are the
    full study of the paper's section 7, which ``python -m skcalbound.experiments``
    (``make reproduce``) runs.

    Read more in the :ref:`User Guide <reproduce>`.

    Parameters
    ----------
    problems : sequence of str or problem objects, \
            default=("calibrated", "overconfident", "parabola", "oscillating")
        Problems of :mod:`skcalbound.datasets` by name, a name optionally followed by
        ``":h=<bandwidth>"`` for the problem seen through the sech perturbation
        (``"atoms:h=2^-6"``), or problem objects such as a
        :class:`~skcalbound.datasets.CustomProblem`. Names must be unique.
    sizes : sequence of int, default=(1_000, 3_162, 10_000, ..., 10_000_000)
        Sample sizes, each at least 10; by default nine sizes log-spaced from
        ``10**3`` to ``10**7``.
    n_repeats : int, default=64
        Independent samples per problem and size.
    output_dir : str or path-like, default="reproduce_output"
        Directory (created if needed) that receives ``results.csv.gz`` (one row per
        problem, size, repeat and method), ``summary.csv``, ``slopes.csv``,
        ``rates.csv``, ``timing.csv``, the small ``doc_*.csv`` tables shown in
        the documentation, ``report.txt`` (the printed report) and, with
        ``plots=True``, ``figure3_gaps.png``, ``figure5_reconstruction.png``,
        ``auroc.csv`` and ``figure2_auroc.png``.
    confidence_level : float, default=0.95
        Confidence level of every certified bound.
    random_state : int, default=0
        Root seed. Each repeat draws its sample and its folds from a
        :class:`numpy.random.SeedSequence` keyed by this seed, the problem's name,
        the size and the repeat, so every number is reproduced whatever ``n_jobs``
        and whichever problems run.
    n_jobs : int, default=None
        Number of repeats run in parallel (joblib), and of parts of the
        AUROC-against-``h`` study; the bounds themselves run single-threaded.
    reconstruction_sizes : sequence of int, \
            default=(1_000, 10_000, 100_000, 1_000_000)
        Sizes of the panels of the reconstruction figure (Figure 5), drawn on the
        parabola problem if it is in the run, else on the first problem.
    plots : bool, default=True
        Whether to draw the figures and run the AUROC-against-``h`` study (needs
        matplotlib).
    auroc_samples : int, default=1_000_000
        Sample size of the AUROC-against-``h`` study of each unperturbed problem.
    progress : bool, default=True
        Whether to show a progress bar per problem (needs tqdm).
    methods : sequence of str, \
            default=("NW", "TV", "Lip+Bkt", "NW (paper)", "TV (paper)", \
"Lip+Bkt (paper)", "ECE")
        Methods to run: a bound's label (``"NW"``, ``"TV"``, ``"Lip+Bkt"``) for
        ``guarantee="high_probability"``, the label followed by ``" (paper)"`` for
        ``guarantee="paper"``, and ``"ECE"``. A bound runs on a problem only if the
        problem states the constants it needs.
    log : callable, default=print
        Called with each line of the printed report (wall times, coverage, slopes
        and rates).

    Returns
    -------
    tables : dict of DataFrame
        ``"results"`` (one row per problem, size, repeat and method: the upper bound
        or ECE in ``value``, ``lower_bound``, ``true_ce``, ``gap``, ``covered``,
        ``covered_lower``, ``covered_both``, ``seconds``, ...), ``"summary"`` (means
        and coverages per problem, method and size), ``"slopes"`` (fitted slopes of
        the log mean gap against ``log n``), ``"rates"`` (the slopes next to the
        paper's Table 1) and ``"timing"`` (wall time per problem).

    See Also
    --------
    skcalbound.datasets.make_calibration_problem : A named problem and its exact CE.
    skcalbound.datasets.CustomProblem : A problem from your own calibration function.

    Notes
    -----
    The full study (4 problems, 9 sizes, 64 repeats, every bound in both guarantee
    modes) took 38 minutes on 2 cores (the run in the User Guide). The results are
    written after every problem, so a run that stops keeps what it did; ``python -m
    skcalbound.experiments --from-results DIR`` redraws the tables and figures of a
    finished run without refitting.

    Examples
    --------
    >>> import tempfile
    >>> from skcalbound.experiments import reproduce
    >>> with tempfile.TemporaryDirectory() as output_dir:
    ...     tables = reproduce(["parabola"], sizes=[10_000], n_repeats=2,
    ...                        output_dir=output_dir, plots=False, progress=False,
    ...                        methods=["NW", "TV", "Lip+Bkt", "ECE"],
    ...                        log=lambda line: None)
    >>> certified = tables["summary"].query("guarantee == 'high_probability'")
    >>> for row in certified.itertuples():
    ...     print(f"{row.method}: CE = {row.true_ce:.3f}, mean interval "
    ...           f"[{row.mean_lower_bound:.3f}, {row.mean_value:.3f}]")
    Lip+Bkt: CE = 0.355, mean interval [0.201, 0.510]
    NW: CE = 0.355, mean interval [0.274, 0.421]
    TV: CE = 0.355, mean interval [0.000, 0.734]
    """
    objects = [parse_problem(p) if isinstance(p, str) else p for p in problems]
    names = [p.name for p in objects]
    if len(set(names)) != len(names):
        raise ValueError(f"problem names must be unique; got {names}")
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    frames, timing = [], []
    total_start = time.perf_counter()
    for problem in objects:
        load_start = _load()
        start = time.perf_counter()
        frames.append(
            run_study(
                problem,
                sizes,
                n_repeats,
                methods=methods,
                confidence_level=confidence_level,
                random_state=random_state,
                n_jobs=n_jobs,
                progress=progress,
            )
        )
        wall = time.perf_counter() - start
        # Written after every problem, so a long run that stops keeps what it did.
        pd.concat(frames, ignore_index=True).to_csv(
            output / "results.csv.gz", index=False
        )
        timing.append(
            {
                "problem": problem.name,
                "wall_seconds": wall,
                "n_repeats": n_repeats,
                "sizes": " ".join(str(int(n)) for n in sizes),
                "n_jobs": n_jobs,
                "cpu_count": os.cpu_count(),
                "load_1min_start": load_start[0],
                "load_1min_end": _load()[0],
                "machine": platform.machine(),
            }
        )
        log(_timing_line(timing[-1]))
    timing.append(
        {
            "problem": "TOTAL",
            "wall_seconds": time.perf_counter() - total_start,
            "n_repeats": n_repeats,
            "n_jobs": n_jobs,
            "cpu_count": os.cpu_count(),
        }
    )
    results = pd.concat(frames, ignore_index=True)
    timing = pd.DataFrame(timing)
    timing.to_csv(output / "timing.csv", index=False)
    tables = report(
        results,
        timing,
        output_dir=output,
        confidence_level=confidence_level,
        problems=objects,
        reconstruction_sizes=reconstruction_sizes,
        random_state=random_state,
        plots=plots,
        auroc_samples=auroc_samples,
        log=log,
        n_jobs=n_jobs,
    )
    return tables


def report(
    results,
    timing,
    *,
    output_dir,
    confidence_level=0.95,
    problems=(),
    reconstruction_sizes=FULL.reconstruction_sizes,
    random_state=0,
    plots=True,
    auroc_samples=1_000_000,
    log=print,
    n_jobs=None,
):
    """Tables, figures and the printed report from the tidy ``results`` of a run.

    Also what ``python -m skcalbound.experiments --from-results DIR`` runs: it redraws
    everything from a saved ``results.csv.gz`` and ``timing.csv`` without refitting.
    ``n_jobs`` runs the AUROC study in parallel (the same numbers). The report is
    passed to ``log`` line by line and written to ``report.txt``, after the wall time
    of each problem (from ``timing``).
    """
    output = Path(output_dir)
    objects = [parse_problem(p) if isinstance(p, str) else p for p in problems]
    results = complete_results(results)
    summary = summarise(results, confidence_level)
    slopes = fit_slopes(summary)
    rates = rate_table(slopes)
    results.to_csv(output / "results.csv.gz", index=False)
    summary.to_csv(output / "summary.csv", index=False)
    timing.to_csv(output / "timing.csv", index=False)
    for name, table in doc_tables(summary, rates, timing).items():
        table.to_csv(output / f"{name}.csv", index=False)
    slopes.to_csv(output / "slopes.csv", index=False)
    rates.to_csv(output / "rates.csv", index=False)
    if plots:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        axes = plot_gaps(summary, problems=[p.name for p in objects] or None)
        axes[0].figure.savefig(output / "figure3_gaps.png", dpi=110)
        plt.close(axes[0].figure)
        parabola = [p for p in objects if p.name == "parabola"]
        target = (
            parabola[0]
            if parabola
            else (objects[0] if objects else get_problem("parabola"))
        )
        axes = plot_reconstruction(
            target,
            reconstruction_sizes,
            random_state=random_state,
            confidence_level=confidence_level,
        )
        axes[0].figure.savefig(output / "figure5_reconstruction.png", dpi=110)
        plt.close(axes[0].figure)
        unperturbed = [p for p in objects if not hasattr(p, "h")] or [
            get_problem("parabola")
        ]
        auroc = auroc_vs_h(
            unperturbed,
            n_samples=auroc_samples,
            random_state=random_state,
            n_jobs=n_jobs,
        )
        auroc.to_csv(output / "auroc.csv", index=False)
        ax = plot_auroc(auroc)
        ax.figure.savefig(output / "figure2_auroc.png", dpi=110)
        plt.close(ax.figure)
    lines = [
        _timing_line(row)
        for row in timing.to_dict("records")
        if row["problem"] != "TOTAL"
    ]

    def emit(text):
        lines.append(text)
        log(text)

    with pd.option_context(
        "display.width",
        160,
        "display.max_columns",
        20,
        "display.float_format",
        "{:.4g}".format,
    ):
        emit(
            "\nCoverage, worst size per method: of the upper bound (fraction of "
            "repeats with bound >= CE), of the lower bound (lower_bound <= CE), "
            "of both:"
        )
        emit(coverage_table(summary).to_string(index=False))
        emit(
            "\nFitted slopes of log(mean gap) against log(n) "
            "(ECE: log mean |ECE - CE|), all sizes / n >= 1e5:"
        )
        emit(slopes.to_string(index=False))
        emit("\nRates next to the paper's Table 1:")
        emit(rates.to_string(index=False))
        emit(f"\nWall time: {timing['wall_seconds'].iloc[-1]:.1f} s in total.")
    (output / "report.txt").write_text("\n".join(lines) + "\n")
    log(f"Files in {output.resolve()}")
    return {
        "results": results,
        "summary": summary,
        "slopes": slopes,
        "rates": rates,
        "timing": timing,
    }
