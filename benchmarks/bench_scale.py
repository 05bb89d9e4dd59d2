"""A certified calibration bound on 10**9 scores, generated block by block with Dask.

Run with ``python benchmarks/bench_scale.py [--rows 1e9] [--block 1e7] [--workers 2]
[--scheduler threads]``.

Data: the synthetic perturbed classifier of ``benchmarks/bench_bounds.py``
(``zigzag_base()`` seen through the sech perturbation with ``h = 2**-6``), whose true
calibration error is known by numerical integration. Block ``k`` of the dask arrays is
drawn from ``default_rng([seed, k])``, so the data never exist in one place and every
pass over them regenerates the same rows.

Two timed runs, both on the same dask arrays with Dask's ``--scheduler`` (``threads``
by default, or ``processes``) and ``--workers`` workers (each includes the generation
of every block it reads):

* ``binning``: the 15-bin reliability curve ``calibration_curve`` computes (per-bin
  counts, sums of scores and of labels), as a dask reduction - one pass;
* ``NWCalibrationBound(h=2**-6).fit``: the certified interval - two passes (per-cell
  sums; per-point terms).

It prints the wall times, their ratio, the time of one pass that only generates the
blocks (every block once, summing the scores), and the certified interval against
the true CE.
"""

import argparse
import time

import numpy as np


def _problem(h):
    from skcalbound.datasets._perturbed import SechPerturbed
    from skcalbound.datasets._problems import zigzag_base

    return SechPerturbed(base=zigzag_base(), h=h, name="perturbed")


def _arrays(problem, n, block, seed):
    """``(y_prob, y_true)`` dask arrays of ``n`` rows, block ``k`` from
    ``default_rng([seed, k])``."""
    import dask
    import dask.array as da

    def draw(k, size):
        s, y = problem.sample(size, np.random.default_rng([seed, k]))
        return np.stack([s, y.astype(np.float64)], axis=1)

    sizes = [block] * (n // block) + ([n % block] if n % block else [])
    blocks = [
        da.from_delayed(dask.delayed(draw)(k, size), shape=(size, 2), dtype=np.float64)
        for k, size in enumerate(sizes)
    ]
    both = da.concatenate(blocks, axis=0)
    return both[:, 0], both[:, 1]


def _binning(y_prob, y_true, n_bins=15):
    """Per-bin count, sum of scores and sum of labels: what ``calibration_curve``
    reduces the data to (uniform bins, as its default strategy)."""
    import dask

    def per_block(s, y):
        b = np.minimum((s * n_bins).astype(np.intp), n_bins - 1)
        return np.stack(
            [
                np.bincount(b, minlength=n_bins),
                np.bincount(b, weights=s, minlength=n_bins),
                np.bincount(b, weights=y, minlength=n_bins),
            ]
        )

    parts = [
        dask.delayed(per_block)(s, y)
        for s, y in zip(
            y_prob.to_delayed(optimize_graph=False).ravel(),
            y_true.to_delayed(optimize_graph=False).ravel(),
        )
    ]
    total = dask.delayed(sum)(parts)
    count, sum_s, sum_y = dask.compute(total)[0]
    return sum_y / np.maximum(count, 1), sum_s / np.maximum(count, 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e9)
    parser.add_argument("--block", type=float, default=1e7)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--scheduler", choices=("threads", "processes"), default="threads"
    )
    args = parser.parse_args(argv)
    import dask

    from skcalbound import NWCalibrationBound

    n, block = int(args.rows), int(args.block)
    h = 2.0**-6
    problem = _problem(h)
    ce = problem.true_ce
    y_prob, y_true = _arrays(problem, n, block, args.seed)
    with dask.config.set(scheduler=args.scheduler, num_workers=args.workers):
        start = time.perf_counter()
        dask.compute(y_prob.sum())  # every block once: the generation cost alone
        t_generation = time.perf_counter() - start
        start = time.perf_counter()
        _binning(y_prob, y_true)
        t_binning = time.perf_counter() - start
        start = time.perf_counter()
        est = NWCalibrationBound(h=h, random_state=args.seed).fit(y_prob, y_true)
        t_nw = time.perf_counter() - start
    n_blocks = -(-n // block)
    print(
        f"rows {n:.0e} in {n_blocks} blocks of {block:.0e}, "
        f"{args.workers} {args.scheduler}"
    )
    print(f"generation alone (1 pass over every block): {t_generation:.1f} s")
    print(f"binning (calibration_curve's sums, 1 pass): {t_binning:.1f} s")
    print(
        f"NWCalibrationBound(h=2**-6).fit (2 passes): {t_nw:.1f} s "
        f"= {t_nw / t_binning:.2f} x binning"
    )
    print(
        f"true CE {ce:.5f}; certified [{est.lower_bound_:.5f}, {est.bound_:.5f}]; "
        f"gap {est.bound_ - ce:.5f} above, {ce - est.lower_bound_:.5f} below"
    )
    print(
        f"folds: bandwidth {est.fold_results_['bandwidth'].iloc[0]:.2e}, grid "
        f"{int(est.fold_results_['n_bins'].iloc[0])} cells; "
        f"total wall time {t_generation + t_binning + t_nw:.0f} s (target: under 600 s)"
    )


if __name__ == "__main__":
    main()
