"""Issue 39's table: NW's section-10 form against the adaptive default (SPEC 13).

Run with ``python benchmarks/bench_adaptive.py [--samples 5]``. For each row of the
issue's table (``confidence_level=0.95``, ``cv=5``), ``--samples`` samples (seeds 0,
1, ...) are drawn and ``NWCalibrationBound`` is fitted with ``noise="worst_case"``
(section 10) and ``noise="adaptive"`` (section 13, the default); the table prints the
medians of the lower and upper bounds, the median upper gap ``bound_ - CE`` over the
samples, the issue's gap (one sample of an independent implementation) and their ratio.
The issue asks for each adaptive gap to be at most 1.10 times the issue's, or narrower.

Problems. The imbalanced one is the issue's (``make_rare_event(n, h=2**-6)``); the 0.5%
base rate one is the same family with ``b = 119.5`` (base rate ``1.2 * 0.5 / 120 =
0.005``; its exact CE, 0.01525, is the issue's 0.0153). The issue does not define its
balanced problems; they are stood in for by ``make_overconfident`` (CE 0.0637): seen
through ``h = 2**-6`` for "balanced perturbed", whose section-10 gaps (0.041 at 10**5,
0.014 at 10**6) are the issue's, and raw with its exact ``b1``, ``b2`` for "balanced
smooth". The gaps are compared, not the intervals.
"""

import argparse

import numpy as np
import pandas as pd

from skcalbound import NWCalibrationBound
from skcalbound.datasets import make_overconfident, make_rare_event

H = 2.0**-6


def _rare(b):
    def draw(n, seed):
        data = make_rare_event(n, b=b, h=H, random_state=seed)
        return data, {"h": H}

    return draw


def _smooth(n, seed):
    data = make_overconfident(n, random_state=seed)
    return data, {"b1": data.problem.b1, "b2": data.problem.b2}


def _perturbed(n, seed):
    return make_overconfident(n, h=H, random_state=seed), {"h": H}


# (row label, sampler, n, the issue's section-13 interval and CE)
ROWS = [
    ("imbalanced, base rate 0.029", _rare(20.0), 10**5, (0.0, 0.0148), 0.0074),
    ("imbalanced, base rate 0.029", _rare(20.0), 10**6, (0.0040, 0.0091), 0.0074),
    ("base rate 0.005", _rare(119.5), 10**5, (0.0067, 0.0194), 0.0153),
    (
        "balanced perturbed (overconfident, h)",
        _perturbed,
        10**5,
        (0.1175, 0.1764),
        0.1553,
    ),
    (
        "balanced perturbed (overconfident, h)",
        _perturbed,
        10**6,
        (0.1427, 0.1623),
        0.1553,
    ),
    (
        "balanced smooth (overconfident, b1/b2)",
        _smooth,
        10**6,
        (0.1363, 0.1465),
        0.1421,
    ),
]


def run(samples):
    """One row per line of the issue's table: medians over ``samples`` samples."""
    rows = []
    for label, draw, n, (_, issue_upper), issue_ce in ROWS:
        fits = {"worst_case": [], "adaptive": []}
        for seed in range(samples):
            data, params = draw(n, seed)
            for noise, bounds in fits.items():
                est = NWCalibrationBound(noise=noise, random_state=seed, **params)
                est.fit(data.scores, data.labels)
                bounds.append((est.lower_bound_, est.bound_))
        row = {"problem": label, "n": n, "CE": data.true_ce}
        for noise, bounds in fits.items():
            bounds = np.array(bounds)
            row[f"{noise} lower"], row[f"{noise} upper"] = np.median(bounds, axis=0)
            row[f"{noise} gap"] = float(np.median(bounds[:, 1] - data.true_ce))
        row["issue gap"] = issue_upper - issue_ce
        row["ratio"] = row["adaptive gap"] / row["issue gap"]
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5, help="samples per row")
    args = parser.parse_args(argv)
    table = run(args.samples)
    print(
        f"NW, confidence_level=0.95, cv=5; medians over {args.samples} samples: "
        "[lower, upper] and upper gap bound - CE for noise='worst_case' (section 10) "
        "and noise='adaptive' (section 13); the issue's section-13 gap and the ratio "
        "(target <= 1.10)"
    )
    for _, row in table.iterrows():
        parts = [f"{row['problem']}, n={row['n']:.0e}, CE {row['CE']:.4f}"]
        for noise in ("worst_case", "adaptive"):
            parts.append(
                f"{noise} [{row[f'{noise} lower']:.4f}, {row[f'{noise} upper']:.4f}] "
                f"gap {row[f'{noise} gap']:.4f}"
            )
        verdict = "ok" if row["ratio"] <= 1.10 else "ABOVE TARGET"
        parts.append(
            f"issue gap {row['issue gap']:.4f}, ratio {row['ratio']:.2f} {verdict}"
        )
        print(" | ".join(parts))


if __name__ == "__main__":
    main()
