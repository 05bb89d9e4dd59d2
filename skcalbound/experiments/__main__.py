"""``python -m skcalbound.experiments``: the paper's synthetic study from the CLI."""

import argparse
import sys
from pathlib import Path

import pandas as pd

from .. import _guarantee
from ._reproduce import FULL, QUICK, methods_for, report, reproduce
from ._study import BOUNDS, PAPER_SUFFIX

GUARANTEES = tuple(_guarantee.GUARANTEES)


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m skcalbound.experiments",
        description="Gap bound - CE of the NW, TV and Lipschitz-bucketing bounds (in "
        "both guarantee modes) and |ECE - CE| on synthetic problems with exact truth "
        "(paper section 7), with the coverage of the upper and of the lower bounds.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="5 sizes 1e3..1e4, 8 repeats: about a minute on 2 cores",
    )
    parser.add_argument(
        "--problems",
        nargs="+",
        metavar="PROBLEM",
        help="names (calibrated overconfident parabola oscillating discrete "
        "atoms), each optionally perturbed as NAME:h=2^-6 "
        f"(default: {' '.join(FULL.problems)})",
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        type=float,
        metavar="N",
        help="sample sizes (default: 9 log-spaced from 1e3 to 1e7)",
    )
    parser.add_argument(
        "--repeats", type=int, metavar="R", help="repeats per size (default 64)"
    )
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        help="parallel repeats, and bandwidths of the AUROC study (joblib)",
    )
    parser.add_argument(
        "--random-state", type=int, default=0, help="root seed (default 0)"
    )
    parser.add_argument("--confidence-level", type=float, default=0.95)
    parser.add_argument(
        "--guarantees",
        nargs="+",
        choices=GUARANTEES,
        default=list(GUARANTEES),
        metavar="MODE",
        help="guarantee modes of the bounds: high_probability (labels "
        f"{', '.join(BOUNDS)}), paper (labels "
        f"{BOUNDS[0]}{PAPER_SUFFIX}, ...); default: both",
    )
    parser.add_argument("--output-dir", default="reproduce_output")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--from-results",
        metavar="DIR",
        help="no fitting: redraw the tables and figures of a finished run "
        "from DIR/results.csv.gz and DIR/timing.csv into --output-dir",
    )
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.from_results:
        source = Path(args.from_results)
        missing = [
            f for f in ("results.csv.gz", "timing.csv") if not (source / f).exists()
        ]
        if missing:
            raise SystemExit(
                f"error: {source} has no {' or '.join(missing)}; run the study first"
            )
        results = pd.read_csv(source / "results.csv.gz")
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        report(
            results,
            pd.read_csv(source / "timing.csv"),
            output_dir=args.output_dir,
            confidence_level=args.confidence_level,
            problems=tuple(args.problems or dict.fromkeys(results["problem"])),
            reconstruction_sizes=settings.reconstruction_sizes,
            random_state=args.random_state,
            plots=not args.no_plots,
            auroc_samples=settings.auroc_samples,
            n_jobs=args.n_jobs,
        )
        return 0
    sizes = settings.sizes if args.sizes is None else tuple(int(n) for n in args.sizes)
    if min(sizes) < 10:
        raise SystemExit(
            f"error: sizes must be at least 10 (5 folds); got {min(sizes)}"
        )
    repeats = settings.n_repeats if args.repeats is None else args.repeats
    if repeats < 1:
        raise SystemExit(f"error: --repeats must be a positive integer; got {repeats}")
    if not 0 < args.confidence_level < 1:
        raise SystemExit("error: --confidence-level must lie in (0, 1)")
    try:
        reproduce(
            tuple(args.problems or settings.problems),
            sizes,
            repeats,
            output_dir=args.output_dir,
            confidence_level=args.confidence_level,
            random_state=args.random_state,
            n_jobs=args.n_jobs,
            reconstruction_sizes=settings.reconstruction_sizes,
            plots=not args.no_plots,
            auroc_samples=settings.auroc_samples,
            progress=not args.no_progress,
            methods=methods_for(args.guarantees),
        )
    except ValueError as error:
        raise SystemExit(f"error: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
