"""TV's two bounds on raw scores: the cell bound against the denoising bound, by width.

Run with ``python benchmarks/bench_tv_cells.py`` (about ten seconds);
``--output docs/tables/tv_cells.txt`` also writes what it prints to that file, which
``docs/user_guide.rst`` (TV's cell bound) includes.

On each problem of ``skcalbound.datasets`` (the names ``make_calibration_problem``
takes, raw scores, no perturbation) with the total variation ``V`` of its calibration
function,
``TVCalibrationBound(V=V, method="denoise")`` (the paper's) and
``TVCalibrationBound(V=V, method="cells")`` (the default with
``guarantee="high_probability"``), both at ``confidence_level=0.95`` with the other
defaults. The width is ``bound_ - lower_bound_``; medians over ``--samples`` samples
(seeds 0, 1, ...; the estimator's ``random_state`` is the sample's seed).
"""

import argparse
import datetime
import sys
import warnings

import numpy as np

from skcalbound import TVCalibrationBound
from skcalbound.datasets import make_calibration_problem
from skcalbound.datasets._generators import PROBLEM_NAMES as PROBLEMS

METHODS = ("denoise", "cells")


def widths(problem, n, samples):
    """``({method: median width}, V)`` of ``problem`` at ``n`` rows."""
    found = {method: [] for method in METHODS}
    for seed in range(samples):
        data = make_calibration_problem(problem, n, random_state=seed)
        V = data.assumptions["V"]
        for method in METHODS:
            est = TVCalibrationBound(V=V, method=method, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # vacuous bounds at 10**4 are expected
                est.fit(data.scores, data.labels)
            found[method].append(est.bound_ - est.lower_bound_)
    return {method: float(np.median(w)) for method, w in found.items()}, V


def report(sizes, samples):
    lines = [
        f"Median interval width (bound_ - lower_bound_) over {samples} samples, "
        "confidence 0.95, raw scores;",
        "each cell: denoise / cells (TVCalibrationBound(V=V, method=...))",
        "",
    ]
    header = f"{'problem (V)':<22}" + "".join(f"{f'n = {n:.0e}':>18}" for n in sizes)
    lines.append(header)
    ratios = []
    for problem in PROBLEMS:
        cells = []
        for n in sizes:
            width, V = widths(problem, n, samples)
            ratios.append(width["cells"] / width["denoise"])
            cells.append(f"{width['denoise']:.3f} / {width['cells']:.3f}")
        lines.append(
            f"{f'{problem} ({V:.4g})':<22}" + "".join(f"{c:>18}" for c in cells)
        )
    lines += [
        "",
        f"cells width / denoise width: from {min(ratios):.2f} to {max(ratios):.2f} "
        f"(narrower on {sum(r < 1 for r in ratios)} of {len(ratios)} cells)",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--output", default=None, help="also write the table here")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes]
    command = " ".join(["python benchmarks/bench_tv_cells.py", *(argv or sys.argv[1:])])
    text = f"$ {command}   # {datetime.date.today().isoformat()}\n" + report(
        sizes, args.samples
    )
    print(text)
    if args.output is not None:
        with open(args.output, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
