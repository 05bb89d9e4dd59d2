"""Where a guarantee does not reach: how often a bound misses, and whether it says so.

Run with ``python benchmarks/bench_misses.py [--n 1e6] [--samples 20]`` (about ten
seconds); ``docs/user_guide.rst`` quotes both sections.

1. The published NW bound holds on average over the training labels only. Every
   score at 0.9 and ``eta = 1/2`` (``CE = 0.4``; any ``b1, b2`` holds for a constant
   ``eta``, here ``b1 = b2 = 1``): sample ``k`` (seed ``k``) is ``n`` labels drawn with
   probability 1/2. ``NWCalibrationBound(b1=1, b2=1, aggregate="min")`` in the paper's
   form (``guarantee="paper"``, Proposition 2) and in the default form,
   ``random_state=k``, both at ``confidence_level=0.95``. A miss is ``bound_ < CE``: a
   valid 95% bound misses in about 1 sample of 20.
2. The monotone band on a calibration function that is not monotone:
   ``make_oscillating(n, random_state=k)`` (``eta(s) = s + 0.15 sin(80 pi s)``),
   ``MonotoneCalibrationBound(confidence_level=0.9, random_state=0)``, 10 samples at
   ``n = 10**4`` and ``10**5``: how often ``bound_ < CE`` and how often the band crosses
   (``monotonicity_rejected_``, the warning).
"""

import argparse
import warnings

import numpy as np

from skcalbound import MonotoneCalibrationBound, NWCalibrationBound
from skcalbound.datasets import make_oscillating

CE = 0.4


def misses(n, samples):
    """``{guarantee: (misses, median bound_)}`` over ``samples`` samples."""
    bounds = {"paper": [], "high_probability": []}
    for seed in range(samples):
        rng = np.random.default_rng(seed)
        s = np.full(n, 0.9)
        y = (rng.uniform(size=n) < 0.5).astype(np.int64)
        for guarantee, found in bounds.items():
            est = NWCalibrationBound(
                b1=1.0, b2=1.0, aggregate="min", guarantee=guarantee, random_state=seed
            )
            with warnings.catch_warnings():
                warnings.simplefilter(
                    "ignore"
                )  # the paper form says it is not certified
                est.fit(s, y)
            found.append(est.bound_)
    return {
        guarantee: (int(np.sum(np.asarray(found) < CE)), float(np.median(found)))
        for guarantee, found in bounds.items()
    }


def band_misses(n, samples):
    """``(bound_ < CE, crossed)`` counts of the band on the oscillating problem."""
    below = crossed = 0
    for seed in range(samples):
        data = make_oscillating(n, random_state=seed)
        est = MonotoneCalibrationBound(confidence_level=0.9, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the crossing warning, counted below
            est.fit(data.scores, data.labels)
        below += est.bound_ < data.true_ce
        crossed += est.monotonicity_rejected_
    return below, crossed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e6)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args(argv)
    n = int(args.n)
    print(
        f"every score at 0.9, eta = 1/2 (CE = {CE}), n = {n:.0e}, {args.samples} "
        'samples; NWCalibrationBound(b1=1, b2=1, aggregate="min"), 95%'
    )
    for guarantee, (count, median) in misses(n, args.samples).items():
        print(
            f"  guarantee={guarantee!r:<19} bound_ < CE in {count} of {args.samples} "
            f"samples (median bound_ {median:.6f})"
        )
    print(
        "make_oscillating (eta = s + 0.15 sin(80 pi s), CE 0.0955), 10 samples; "
        "MonotoneCalibrationBound(confidence_level=0.9)"
    )
    for n_band in (10**4, 10**5):
        below, crossed = band_misses(n_band, 10)
        print(
            f"  n = {n_band:.0e}: bound_ < CE in {below} of 10 samples, the band "
            f"crossed in {crossed} of 10"
        )


if __name__ == "__main__":
    main()
