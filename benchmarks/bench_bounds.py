"""Fit time and tightness of the certified bounds, against references timed in the same run.

Run with ``make bench`` or ``python benchmarks/bench_bounds.py [--sizes 1e5 1e6 1e7]``.

Data: the synthetic perturbed classifier of the test suite (``zigzag_base()`` of
``skcalbound.datasets``, as in ``tests/_synthetic.py``): scores with atoms and a
non-monotone, jumpy calibration function, seen through the sech perturbation with
``h = 2**-6``; its true calibration
error is known by numerical integration, so every gap ``bound - CE`` is exact up to
~1e-16. For each size ``n`` the same scores and labels are used for every row:

* ``np.argsort(s)`` - the one sort any exact method needs;
* ``calibration_curve(y, s, n_bins=15)`` - the binned reliability curve a user would
  otherwise compute (scikit-learn);
* ``TVCalibrationBound(cv=5)``, ``NWCalibrationBound(h=2**-6, cv=5)`` and
  ``LipschitzBucketBound(h=2**-6, cv=5)`` (its 48 default candidates), defaults,
  ``n_jobs=None``.

Times are medians over ``--repeats`` runs; ratios divide by the reference's median in
the same run, because shared machines are noisy. A second table compares NW
configurations (tempering, validation set) by their gap, and the last line fits the
log-log slope of each bound's gap against ``n`` (the paper's Table 1 reports slopes
between -0.41 and -0.21 for NW, -0.42 and -0.16 for TV, -0.57 and -0.35 for Lipschitz
bucketing).
"""

import argparse
import time

import numpy as np
import pandas as pd
from sklearn.calibration import calibration_curve

from skcalbound import LipschitzBucketBound, NWCalibrationBound, TVCalibrationBound

from skcalbound.datasets._perturbed import SechPerturbed
from skcalbound.datasets._problems import zigzag_base

H = 2.0**-6
CONFIGURATIONS = {
    "tempering=1.2, all validation points (default)": {},
    "tempering=1.2, max_validation='auto' (paper)": {"max_validation": "auto"},
    "tempering=1.0, all validation points": {"tempering": 1.0},
    "tempering=1.0, max_validation='auto'": {"tempering": 1.0, "max_validation": "auto"},
}


def _median_time(func, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _problem():
    return SechPerturbed(base=zigzag_base(), h=H, name="perturbed_h=2^-6")


def _slope(sizes, gaps):
    return float(np.polyfit(np.log10(sizes), np.log10(gaps), 1)[0])


def run(sizes, repeats, seed=0):
    problem = _problem()
    ce = problem.true_ce
    rows, config_rows = [], []
    for n in sizes:
        s, y = problem.sample(n, np.random.default_rng(seed))
        t_sort = _median_time(lambda: np.argsort(s), repeats)
        t_curve = _median_time(lambda: calibration_curve(y, s, n_bins=15), repeats)
        tv = TVCalibrationBound(cv=5, random_state=seed)
        t_tv = _median_time(lambda: tv.fit(s, y), repeats)
        nw = NWCalibrationBound(h=H, cv=5, random_state=seed)
        t_nw = _median_time(lambda: nw.fit(s, y), repeats)
        lip = LipschitzBucketBound(h=H, cv=5, random_state=seed)
        t_lip = _median_time(lambda: lip.fit(s, y), repeats)
        rows.append(
            {
                "n": n,
                "argsort [s]": t_sort,
                "calibration_curve [s]": t_curve,
                "TV fit [s]": t_tv,
                "NW fit [s]": t_nw,
                "Lip fit [s]": t_lip,
                "TV / cal. curve": t_tv / t_curve,
                "NW / cal. curve": t_nw / t_curve,
                "Lip / cal. curve": t_lip / t_curve,
                "TV gap": tv.bound_ - ce,
                "NW gap": nw.bound_ - ce,
                "Lip gap": lip.bound_ - ce,
            }
        )
        for name, params in CONFIGURATIONS.items():
            est = NWCalibrationBound(h=H, cv=5, random_state=seed, **params)
            if params:
                t = _median_time(lambda: est.fit(s, y), 1)
            else:
                est, t = nw, t_nw
            config_rows.append({"n": n, "configuration": name, "NW gap": est.bound_ - ce,
                                "fit [s]": t})
    table = pd.DataFrame(rows).set_index("n")
    configs = pd.DataFrame(config_rows).pivot(index="configuration", columns="n",
                                              values="NW gap")
    return table, configs, ce


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes]
    table, configs, ce = run(sizes, args.repeats)
    options = ("display.width", 250, "display.max_columns", 30,
               "display.float_format", "{:.4f}".format)
    with pd.option_context(*options):
        print(f"perturbed problem h=2^-6, true CE = {ce:.6f}; cv=5, n_jobs=None; "
              f"median over {args.repeats} runs")
        print(table.rename(index=lambda n: f"{n:.0e}"))
        print("\nNW gap (bound - CE) by configuration")
        print(configs.rename(columns=lambda n: f"{n:.0e}").to_string(
            float_format="{:.6f}".format))
    if len(sizes) > 1:
        print(
            f"\nlog-log slope of the gap: NW {_slope(sizes, table['NW gap']):.3f} "
            f"(paper -0.41 ... -0.21), TV {_slope(sizes, table['TV gap']):.3f} "
            f"(paper -0.42 ... -0.16), Lip {_slope(sizes, table['Lip gap']):.3f} "
            "(paper -0.57 ... -0.35)"
        )
        looser = bool(np.all(table["Lip gap"] > table["NW gap"]))
        print(f"Lipschitz bucketing looser than NW at every size: {looser}")


if __name__ == "__main__":
    main()
