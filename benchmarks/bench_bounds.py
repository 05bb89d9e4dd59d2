"""Fit time of the certified bounds against references timed in the same run.

Run with ``make bench`` or ``python benchmarks/bench_bounds.py [--sizes 1e5 1e6 1e7]``.

For each size ``n`` the same scores and labels are used for every row:

* ``np.argsort(s)`` - the one sort any exact method needs;
* ``calibration_curve(y, s, n_bins=15)`` - the binned reliability curve a user would
  otherwise compute (scikit-learn);
* ``TVCalibrationBound(cv=5, n_jobs=None).fit(s, y)``.

Times are medians over ``--repeats`` runs; ratios divide by the reference's median in
the same run, because shared machines are noisy.
"""

import argparse
import time

import numpy as np
import pandas as pd
from sklearn.calibration import calibration_curve

from skcalbound import TVCalibrationBound


def _median_time(func, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _problem(n, seed=0):
    """Over-confident scores: eta(s) = s**2 on Beta(2, 5) scores (continuous, no ties)."""
    rng = np.random.default_rng(seed)
    s = rng.beta(2.0, 5.0, size=n)
    y = (rng.uniform(size=n) < s**2).astype(np.int64)
    return s, y


def run(sizes, repeats):
    rows = []
    for n in sizes:
        s, y = _problem(n)
        t_sort = _median_time(lambda: np.argsort(s), repeats)
        t_curve = _median_time(lambda: calibration_curve(y, s, n_bins=15), repeats)
        est = TVCalibrationBound(cv=5, random_state=0)
        t_tv = _median_time(lambda: est.fit(s, y), repeats)
        rows.append(
            {
                "n": f"{n:.0e}",
                "argsort [s]": t_sort,
                "calibration_curve [s]": t_curve,
                "TV fit [s]": t_tv,
                "TV / argsort": t_tv / t_sort,
                "TV / calibration_curve": t_tv / t_curve,
                "TV bound": est.bound_,
            }
        )
    return pd.DataFrame(rows).set_index("n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    table = run([int(n) for n in args.sizes], args.repeats)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(f"median over {args.repeats} runs; TVCalibrationBound(cv=5, n_jobs=None)")
        print(table)


if __name__ == "__main__":
    main()
