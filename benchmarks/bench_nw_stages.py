"""Where the time of an NW fit goes, stage by stage, against calibration_curve.

Run with ``python benchmarks/bench_nw_stages.py [--n 1e7] [--repeats 5]``.

The data of ``bench_bounds.py`` (the perturbed zigzag problem, ``h = 2**-6``);
``NWCalibrationBound(h=2**-6, cv=5)`` with ``noise="adaptive"`` (the default) and
``noise="worst_case"``, and ``calibration_curve(y, s, n_bins=15)`` as the reference,
timed in interleaved rounds (each round times the reference and both fits; a ratio is
the median over rounds of a time over the reference's in the same round).

The stages are the two-pass driver's (``_passes.run``), timed by wrapping the
model's methods for the run: ``pass 1`` (``NWGrid.first_pass`` on every chunk),
``pass 1 merge`` (chunks added into the running total), ``plan``, ``pass 2``
(``NWGrid.second_pass``), ``finish``, ``estimate`` (the cell sums of ``estimate_``,
gathered in pass 1), and ``rest`` (the fit's time less those: validation, folds,
the terms, the audit fingerprint, the warnings). This answers how much of the
default's cost is its own (the plan's pilot and per-cell bias bounds, the finish's
convolutions) and how much any form pays. The last line gives the share of the rows
that the default's pass 2 reads one by one (those in the cells that the smoother
crosses, and fallback cells): the others are pass 1's cell sums.
"""

import argparse
import contextlib
import time
from collections import defaultdict

import numpy as np
import pandas as pd
from sklearn.calibration import calibration_curve

from skcalbound import NWCalibrationBound, _base
from skcalbound._surrogates import _cells
from skcalbound._surrogates.nw import NWGrid, _model
from skcalbound.datasets._perturbed import SechPerturbed
from skcalbound.datasets._problems import zigzag_base

H = 2.0**-6
STAGES = {
    "pass 1": (NWGrid, "first_pass"),
    "pass 1 merge": (_cells.CellSums, "__iadd__"),
    "plan": (NWGrid, "plan"),
    "pass 2": (NWGrid, "second_pass"),
    "finish": (NWGrid, "finish"),
    "estimate": (_base, "_estimate_chunk"),
}


@contextlib.contextmanager
def counted_rows(seen):
    """Add into ``seen`` the rows that SPEC 13's pass 2 reads one by one."""
    original = _model.row_sums

    def counting(context, s, counted=False):
        seen.append(s.shape[0])
        return original(context, s, counted)

    _model.row_sums = counting
    try:
        yield
    finally:
        _model.row_sums = original


@contextlib.contextmanager
def timed_stages(spent):
    """Add each stage's time into ``spent`` while the block runs."""
    originals = {name: getattr(owner, attr) for name, (owner, attr) in STAGES.items()}

    def wrap(name, function):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start

        return timed

    try:
        for name, (owner, attr) in STAGES.items():
            setattr(owner, attr, wrap(name, originals[name]))
        yield
    finally:
        for name, (owner, attr) in STAGES.items():
            setattr(owner, attr, originals[name])


def run(n, repeats, seed=0):
    problem = SechPerturbed(base=zigzag_base(), h=H, name="perturbed_h=2^-6")
    s, y = problem.sample(n, np.random.default_rng(seed))
    forms = ("adaptive", "worst_case")
    rows = []
    for k in range(repeats):
        order = ["reference", *forms]
        order = order[k % 3 :] + order[: k % 3]
        times = {}
        for name in order:
            spent = defaultdict(float)
            start = time.perf_counter()
            if name == "reference":
                calibration_curve(y, s, n_bins=15)
            else:
                est = NWCalibrationBound(h=H, cv=5, random_state=seed, noise=name)
                with timed_stages(spent):
                    est.fit(s, y)
            total = time.perf_counter() - start
            spent["rest"] = total - sum(spent.values())
            times[name] = (total, dict(spent))
        reference = times["reference"][0]
        for form in forms:
            total, spent = times[form]
            rows += [
                {"noise": form, "stage": stage, "round": k, "s": value}
                for stage, value in {"fit": total, **spent}.items()
            ]
            rows.append(
                {"noise": form, "stage": "fit / calibration_curve", "round": k}
                | {"s": total / reference}
            )
        rows.append(
            {"noise": "", "stage": "calibration_curve", "round": k, "s": reference}
        )
    read = []
    with counted_rows(read):  # (untimed)
        NWCalibrationBound(h=H, cv=5, random_state=seed).fit(s, y)
    one_by_one = sum(read)
    table = pd.DataFrame(rows).groupby(["stage", "noise"])["s"].median()
    order = ["fit", *STAGES, "rest", "fit / calibration_curve"]
    reference = float(table.loc[("calibration_curve", "")])
    return table.unstack("noise").reindex(order)[list(forms)], reference, one_by_one


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    table, reference, one_by_one = run(int(args.n), args.repeats)
    print(
        f"n={args.n:.0e}, cv=5, h=2^-6; NWCalibrationBound(noise=...) by stage, "
        f"seconds but the last row; medians over {args.repeats} interleaved rounds; "
        f"calibration_curve {reference:.3f} s"
    )
    print(table.to_string(float_format="{:.3f}".format))
    print(
        f"adaptive: pass 2 reads {one_by_one:,} of the {int(args.n):,} rows one by one "
        "(in cells the smoother crosses, or fallback cells); the rest are pass 1's "
        "cell sums"
    )


if __name__ == "__main__":
    main()
