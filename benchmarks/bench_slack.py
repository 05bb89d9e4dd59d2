"""Typical slack of the TV and NW bounds for a calibrated classifier, against n.

Run with ``python benchmarks/bench_slack.py`` (about a minute on two cores);
``--output docs/tables/slack.txt`` also writes what it prints to that file, which
``docs/user_guide.rst`` ("How many labels") includes and ``tests/test_docs.py``
compares the README's quoted numbers with.

How many labels does a bound need before it says something? For a *calibrated*
classifier the true calibration error is (close to) zero, so the upper bound is all
slack: it is the smallest calibration error the bound could certify from that many
labels, and ``bound_ - lower_bound_`` is the width of the certified interval.

* TV: ``make_calibrated(n)`` (scores ``Beta(2, 5)``, ``E[y|s] = s``, true CE 0),
  ``TVCalibrationBound(V=1)`` (its default ``method="auto"``: the cell bound);
* NW: the same classifier through the sech perturbation,
  ``make_calibrated(n, h=2**-6)`` (true CE of the perturbed classifier 0.0027, by
  numerical integration), ``NWCalibrationBound(h=2**-6)``;
* rare NW: a rare positive class through the same perturbation,
  ``make_rare_event(n, h=2**-6)`` (scores ``Beta(0.5, 20)``, ``E[y|s] = min(1, 1.2 s)``
  before the perturbation, base rate 0.0293, true CE 0.0074),
  ``NWCalibrationBound(h=2**-6)``.

Both with the defaults: ``guarantee="high_probability"``, ``confidence_level=0.95``,
``cv=5``. Slack is ``bound_ - CE`` with ``bound_`` as reported (clipped at 1); medians
over ``--repeats`` samples (seeds 0, 1, ...) up to 10^6 and ``--repeats-large`` above.
"""

import argparse
import datetime
import platform
import sys
import time
import warnings

import numpy as np
import pandas as pd

from skcalbound import NWCalibrationBound, TVCalibrationBound, VacuousBoundWarning
from skcalbound.datasets import make_calibrated, make_rare_event

H = 2.0**-6


def _fit(bound, data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", VacuousBoundWarning)
        bound.fit(data.scores, data.labels)
    vacuous = any(issubclass(w.category, VacuousBoundWarning) for w in caught)
    return {
        "slack": bound.bound_ - data.true_ce,
        "width": bound.bound_ - bound.lower_bound_,
        "vacuous": vacuous,
    }


def run(sizes, repeats, repeats_large):
    rows = []
    for n in sizes:
        n_runs = repeats if n <= 1_000_000 else repeats_large
        for seed in range(n_runs):
            raw = make_calibrated(n, random_state=seed)
            perturbed = make_calibrated(n, h=H, random_state=seed)
            tv = _fit(TVCalibrationBound(V=1.0, random_state=seed), raw)
            nw = _fit(NWCalibrationBound(h=H, random_state=seed), perturbed)
            rare_event = make_rare_event(n, h=H, random_state=seed)
            rare = _fit(NWCalibrationBound(h=H, random_state=seed), rare_event)
            rows.append(
                {
                    "n": n,
                    "seed": seed,
                    "true CE (NW)": perturbed.true_ce,
                    **{f"TV {k}": v for k, v in tv.items()},
                    **{f"NW {k}": v for k, v in nw.items()},
                    "true CE (rare)": rare_event.true_ce,
                    **{f"rare NW {k}": v for k, v in rare.items()},
                }
            )
    return pd.DataFrame(rows)


def table(results):
    grouped = results.groupby("n")
    out = pd.DataFrame(
        {
            "runs": grouped.size(),
            "TV slack": grouped["TV slack"].median(),
            "TV width": grouped["TV width"].median(),
            "NW slack": grouped["NW slack"].median(),
            "NW width": grouped["NW width"].median(),
            "rare NW slack": grouped["rare NW slack"].median(),
            "rare NW width": grouped["rare NW width"].median(),
            "vacuous (TV, NW, rare)": [
                ", ".join(
                    str(int(g[f"{key} vacuous"].sum()))
                    for key in ("TV", "NW", "rare NW")
                )
                for _, g in grouped
            ],
        }
    )
    out.index = [f"1e{int(round(np.log10(n)))}" for n in out.index]
    out.index.name = "n"
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=float, nargs="+", default=[1e3, 1e4, 1e5, 1e6, 1e7]
    )
    parser.add_argument(
        "--repeats", type=int, default=9, help="samples per size up to 1e6"
    )
    parser.add_argument(
        "--repeats-large", type=int, default=3, help="samples per size above 1e6"
    )
    parser.add_argument("--output", help="also write the printed report to this file")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes]

    start = time.perf_counter()
    results = run(sizes, args.repeats, args.repeats_large)
    elapsed = time.perf_counter() - start

    command = " ".join(["python benchmarks/bench_slack.py", *sys.argv[1:]])
    with pd.option_context("display.float_format", "{:.4f}".format):
        report = "\n".join(
            [
                f"$ {command}",
                f"{datetime.date.today().isoformat()}, "
                f"Python {platform.python_version()}, {elapsed:.0f} s",
                "A calibrated classifier: TV (its default, the cell bound) on its "
                "scores",
                "(true CE 0), NW on its sech perturbation with h = 2^-6 (true CE "
                f"{results['true CE (NW)'].iloc[0]:.4f});",
                "rare NW: NW on a rare event through the same perturbation",
                "(make_rare_event(n, h=2**-6): base rate 0.0293, true CE "
                f"{results['true CE (rare)'].iloc[0]:.4f}).",
                "Defaults: guarantee='high_probability', confidence_level=0.95, "
                "cv=5 (NW).",
                "slack = bound_ - true CE, width = bound_ - lower_bound_, medians over",
                "the runs; vacuous = runs whose bound was above 0.5 "
                "(VacuousBoundWarning).",
                "",
                table(results).to_string(),
            ]
        )
    print(report)
    if args.output:
        with open(args.output, "w") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
