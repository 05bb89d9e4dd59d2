"""What ``make reproduce`` costs, from one repeat of every problem and size.

Run with ``python benchmarks/bench_study.py [--repeats 1] [--cores 2]``.

The full study (``skcalbound.experiments``, ``FULL``: 4 problems, 9 sizes from 10^3 to
10^7, 64 repeats, the three bounds in both guarantee modes and binned ECE) runs one
task per (problem, size, repeat): it draws a sample and fits every method on it. This
script runs ``--repeats`` repeats of every task of that study in this process (one
thread: ``OMP_NUM_THREADS=1`` is advised, as the study's workers run the bounds
single-threaded), with the study's own seeds, and prints

* the CPU seconds of each method (and of drawing the sample) at each size, summed over
  the problems, with ``calibration_curve(y, s, n_bins=15)`` of the same samples as a
  reference measured in the same run (machines are shared and noisy);
* the projection of the full study: CPU seconds times ``64 / --repeats``, and the wall
  time on ``--cores`` cores if the tasks were spread perfectly;
* the budget a ten-minute study leaves per fit, in nanoseconds per score and as a
  multiple of ``calibration_curve``.
"""

import argparse
import os
import time

import numpy as np
import pandas as pd
from sklearn.calibration import calibration_curve

from skcalbound.datasets._generators import get_problem
from skcalbound.experiments._reproduce import FULL
from skcalbound.experiments._study import METHODS, run_task


def _reference_seconds(problem, n, repeat):
    """``calibration_curve`` on the task's own sample (the study's seeds)."""
    from skcalbound.experiments._study import task_seed

    data_seed, _ = task_seed(0, problem.name, n, repeat).spawn(2)
    scores, labels = problem.sample(int(n), np.random.default_rng(data_seed))
    start = time.perf_counter()
    calibration_curve(labels, scores, n_bins=15)
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--budget-minutes", type=float, default=10.0)
    args = parser.parse_args(argv)

    rows = []
    for name in FULL.problems:
        problem = get_problem(name)
        true_ce = float(problem.true_ce)  # once per problem, as run_study does
        for n in FULL.sizes:
            for repeat in range(args.repeats):
                task = run_task(
                    problem,
                    n,
                    repeat,
                    methods=METHODS,
                    confidence_level=0.95,
                    random_state=0,
                    true_ce=true_ce,
                )
                for row in task:
                    rows.append((name, n, repeat, row["method"], row["seconds"]))
                rows.append((name, n, repeat, "sample", task[0]["sample_seconds"]))
                rows.append(
                    (
                        name,
                        n,
                        repeat,
                        "calibration_curve",
                        _reference_seconds(problem, n, repeat),
                    )
                )
    frame = pd.DataFrame(rows, columns=["problem", "n", "repeat", "method", "seconds"])
    per_size = (
        frame.groupby(["n", "method"])["seconds"].sum().unstack("method") / args.repeats
    )
    reference = per_size.pop("calibration_curve")
    per_size = per_size[[*METHODS, "sample"]]
    per_size["task total"] = per_size.sum(axis=1)
    per_size.loc["all sizes"] = per_size.sum()
    reference.loc["all sizes"] = reference.sum()

    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    print(
        f"One repeat of every size, summed over the {len(FULL.problems)} problems "
        f"({', '.join(FULL.problems)}); CPU seconds per repeat "
        f"(mean of {args.repeats}):"
    )
    print(per_size.round(3).to_string())
    print()
    print("The same, as a multiple of calibration_curve on the same samples:")
    print(per_size.div(reference, axis=0).round(2).to_string())

    cpu = float(per_size.loc["all sizes", "task total"]) * FULL.n_repeats
    budget = args.budget_minutes * 60 * args.cores
    scores = sum(FULL.sizes) * FULL.n_repeats * len(FULL.problems)
    fits = sum(1 for method in METHODS if method != "ECE")
    fixed = float(per_size.loc["all sizes", ["ECE", "sample"]].sum()) * FULL.n_repeats
    per_fit = (budget - fixed) / (fits * scores)
    reference_per_score = float(reference.loc["all sizes"]) * FULL.n_repeats / scores
    print()
    print(
        f"Full study ({FULL.n_repeats} repeats): {cpu:,.0f} CPU s, "
        f"{cpu / args.cores / 60:.1f} min on {args.cores} cores if spread perfectly."
    )
    print(
        f"A {args.budget_minutes:g}-minute study on {args.cores} cores has "
        f"{budget:,.0f} CPU s; the full study needs {cpu / budget:.2f} times that. "
        f"After drawing the samples and binned ECE ({fixed:,.0f} CPU s), each of the "
        f"{fits} certified fits may spend {per_fit * 1e9:.0f} ns per score "
        f"({per_fit / reference_per_score:.2f}x calibration_curve, which spends "
        f"{reference_per_score * 1e9:.0f} ns per score here)."
    )


if __name__ == "__main__":
    main()
