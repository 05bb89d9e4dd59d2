"""``skcalbound FILE ...``: check the options, read the file, fit, report.

The file is read whole, or in chunks when ``--chunksize`` is given or when every
bound asked for runs on chunks (``_read.ChunkedFile``); each bound is fitted with
its warnings recorded for the report; ``--max-ce`` gates on the upper bounds.
"""

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

from ._bounds import estimators, mergeable
from ._by import report_by
from ._errors import CLIError, fail
from ._parser import CHUNK_ROWS
from ._read import ChunkedFile, read_table, scores_and_labels
from ._report import ece_row, gate, print_json, print_table, result_row, write_plot


@dataclass(frozen=True)
class Run:
    """What one run computed.

    results : list of dict
        One row per bound (``_report.result_row``), then the binned ECE's.
    estimators : dict
        The fitted bound estimators, by bound name.
    n_samples : int
        The rows of the file.
    positive : object
        The positive label, as read from the file.
    """

    results: list
    estimators: dict
    n_samples: int
    positive: object


def certify(args):
    """Run ``skcalbound FILE ...`` with the parsed ``args``; returns the exit status."""
    try:
        _check_options(args)
        if args.chunksize is None and not _streams(args):
            columns = [args.scores, args.labels] + [args.by] * (args.by is not None)
            frame = read_table(args.file, args.format, columns=columns)
            scores, labels, positive = scores_and_labels(
                frame, args.scores, args.labels, args.file, args.pos_label
            )
            if args.by is not None:
                return report_by(args, frame, scores, labels, positive)
            run = compute(args, scores, labels, positive)
            if args.plot is not None:
                title = (
                    f"{args.file}: {run.n_samples} scores, positive class {positive!r}"
                )
                write_plot(args.plot, run.estimators, scores, title)
        else:
            if args.chunksize is None:
                args.chunksize = CHUNK_ROWS
            run = compute_chunks(args)
    except CLIError as exc:
        return fail(exc)
    verdict = None if args.max_ce is None else gate(run.results, args.max_ce)
    (print_json if args.json else print_table)(args, run, verdict)
    return 1 if verdict is not None and not verdict["passed"] else 0


def _check_options(args):
    """The options' ranges, checked before the file is read."""
    if not (0.0 < args.confidence_level < 1.0) or math.isnan(args.confidence_level):
        raise CLIError(
            f"--confidence-level must be in (0, 1); got {args.confidence_level}"
        )
    if args.max_ce is not None and not (0.0 < args.max_ce <= 1.0):
        raise CLIError(
            f"--max-ce must be in (0, 1] (a calibration error); got {args.max_ce}"
        )
    _check_h(args.h)
    if args.plot is not None:
        _check_plot_path(Path(args.plot))
    if args.chunksize is not None and args.chunksize < 1:
        raise CLIError(
            f"--chunksize must be a positive number of rows; got {args.chunksize}"
        )


def _check_plot_path(path):
    """``--plot PATH``: matplotlib installed, the directory there, and a suffix
    naming a format matplotlib writes (without one, it would add ``.png`` to a name
    the report does not show)."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError as exc:
        raise CLIError(
            f"--plot needs matplotlib: pip install 'skcalbound[cli]' ({exc})"
        ) from exc
    if not path.resolve().parent.is_dir():
        raise CLIError(f"{path}: the directory {path.parent} does not exist")
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in formats:
        got = f"'{path.suffix}'" if path.suffix else "none"
        raise CLIError(
            f"{path}: --plot needs a file name whose extension is the image format, "
            f"such as .png, .pdf or .svg (one of {', '.join(sorted(formats))}); "
            f"got {got}"
        )


def _check_h(h):
    """``--h`` in (0, 0.5], with a guess at what a value above meant."""
    if h is None or 0.0 < h <= 0.5:
        return
    if h <= 0.0:
        raise CLIError(f"--h must be positive; got {h:g}")
    guess = ""
    if float(h).is_integer() and h <= 41:
        guess = f" Did you mean --h 2**-{int(h)}?"
    elif h >= 2:
        guess = f" Did you mean --h 1/{h:g} = {1 / h:.6g}?"
    raise CLIError(
        f"--h {h:g} is above 0.5. h is the bandwidth of the sech perturbation the "
        "scores went through (perturb_scores or SechPerturbedClassifier with that h, "
        "typically 2**-6): an assumption about how the scores were produced, not a "
        f"knob to tune.{guess} To assume a weak smoothness of E[y|s] on purpose, give "
        "it directly: --b1 and --b2 (nw) or --L (lipschitz)."
    )


def _streams(args):
    """Whether the file is read in chunks without ``--chunksize``: every bound asked
    for runs on chunks, and neither ``--by`` nor ``--plot`` needs the rows in
    memory."""
    if args.by is not None or args.plot is not None:
        return False
    return all(map(mergeable, estimators(args).values()))


def _fit_all(fitted, fit):
    """The result rows of the bounds ``fitted`` by ``fit(estimator)``, whose
    warnings (e.g. VacuousBoundWarning) go into the report, not to stderr."""
    rows = []
    for name, est in fitted.items():
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fit(est)
        except (ValueError, TypeError) as exc:  # the options of this bound
            raise CLIError(f"{name}: {exc}") from exc
        rows.append(result_row(name, est, caught))
    return rows


def compute(args, scores, labels, positive):
    """The ``Run`` of the bounds on the whole file's arrays."""
    from .._binned_ece import binned_ece

    fitted = estimators(args)
    results = _fit_all(fitted, lambda est: est.fit(scores, labels))
    try:
        ece = binned_ece(labels, scores, n_bins=args.n_bins)
    except ValueError as exc:
        raise CLIError(f"--n-bins: {exc}") from exc
    results.append(ece_row(args.n_bins, ece))
    return Run(results, fitted, scores.shape[0], positive)


def compute_chunks(args):
    """The ``Run`` of the bounds on the file read ``args.chunksize`` rows at a time
    (``fit_chunks``: every pass reads the file again)."""
    for option, value, why in (
        ("--by", args.by, "it groups the rows of the whole file by segment"),
        ("--plot", args.plot, "it draws every score"),
    ):
        if value is not None:
            raise CLIError(
                f"{option} cannot be used with --chunksize: {why}, which needs the "
                "file in memory; run without --chunksize for it"
            )
    if args.n_bins < 1:
        raise CLIError(f"--n-bins: must be at least 1; got {args.n_bins}")
    fitted = estimators(args)
    if args.bound is None:  # the default bound sorts every score: leave it out
        fitted = {name: est for name, est in fitted.items() if mergeable(est)}
        if not fitted:
            raise CLIError(
                "--chunksize certifies with nw, which needs its assumption: pass --h "
                "(or --b1 and --b2); the default monotone band (and tv) needs the "
                "whole sorted sample (--bound monotone --chunksize certifies it on "
                "the cells of a fixed score grid)"
            )
    reader = ChunkedFile(args)
    results = _fit_all(
        fitted, lambda est: est.fit_chunks(reader, n_samples=reader.n_samples)
    )
    reader.read_through()  # if no bound read the file through
    results.append(ece_row(args.n_bins, reader.binned_ece()))
    return Run(results, fitted, reader.n_samples, reader.positive)
