"""The ``skcalbound`` command: certified calibration bounds for scores in a file.

Reads one column of scores and one of labels from a CSV or Parquet file, fits the
requested bound estimators (the same numbers as in Python with the same seed), and
prints each certified interval ``[lower_bound_, bound_]`` in a table or JSON;
optionally writes the reliability plot. ``--max-ce TAU`` turns the command into a
gate: exit status 1 unless every computed upper bound is below ``TAU``. Errors in the
file or the options are reported on one line, with exit status 2.
"""

import argparse
import json
import math
import os
import re
import sys
import textwrap
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pandas as pd

# The estimators load in the functions that use them (``skcalbound`` loads its public
# names lazily), so that ``--version`` and ``--help`` import no scikit-learn.
from . import __version__

PROG = "skcalbound"

DESCRIPTION = """\
Certified interval [lower, upper] for the calibration error CE = E|s - E[y|s]| of a
binary classifier, from a file with one row per example: the classifier's predicted
probability of the positive class (column --scores) and the true label (column
--labels; two distinct values: 0/1, -1/1 or booleans, where 1 or True is the positive
class, or any two labels with --pos-label naming the positive one).

Each bound's interval holds (both ends at once) with probability at least
--confidence-level under its assumption on the calibration function E[y|s]:
  bound      assumption on E[y|s]                 for
  monotone   non-decreasing in s                  raw scores (the default)
  tv         total variation <= V (--V, 1)        raw scores, E[y|s] not monotone
  nw         bounded derivatives (--h, or --b1    perturbed scores (the tightest)
             and --b2)
  lipschitz  Lipschitz (--h or --L)               perturbed scores (the paper's
                                                  baseline)
Default: monotone, plus nw with --h (or --b1/--b2) and lipschitz with --L (tv
instead of monotone with --guarantee paper). monotone is a certified band
L(s) <= E[y|s] <= U(s) for all scores at once (no folds, no constant to choose). A
monotone E[y|s] is an assumption about the model: when the band crosses (L > U
somewhere) the data reject it and the row warns, but not every non-monotone E[y|s]
makes it cross; if E[y|s] may not be monotone, choose tv before looking at the
data. nw's bounded derivatives hold by construction when the scores were perturbed
with the sech kernel of bandwidth h (skcalbound.perturb_scores or
SechPerturbedClassifier): pass that --h (e.g. --h 2^-6). h states how the scores
were produced; it is not a knob to tune.
The 15-bin ECE is printed next to them for comparison; it is a heuristic, not a bound.
Each interval holds on its own: reporting the smallest of several intervals computed
on the same file is not certified at --confidence-level (compute each at
1 - (1 - P)/k for k bounds to choose among them; the table says so).
--guarantee paper computes the paper's published forms instead (to compare with its
numbers); the nw and lipschitz ones then hold in expectation over the training
labels only, not with probability --confidence-level.

Gate for pipelines: with --max-ce TAU, the command checks that every computed bound
(each method of --bound) has its upper bound strictly below TAU; if so, CE < TAU
holds with probability at least --confidence-level (under each bound's assumption),
and the exit status is 0; otherwise it is 1. A one-line verdict starting with PASS or
FAIL is printed last (on stderr with --json, where the JSON also has a "gate" entry).
To gate on one bound only, compute only that one (--bound nw). The binned ECE is
never gated; a monotone band that crosses never passes.
"""

EPILOG = """\
examples:
  skcalbound predictions.csv
  skcalbound scores.parquet --scores prob --labels label --bound tv nw --h 2^-6
  skcalbound churn.csv --labels churned --pos-label yes --h '2**-6'
  skcalbound predictions.csv --json --plot reliability.png
  skcalbound scores.csv --bound nw --h 0.015625 --max-ce 0.05 || exit 1
  skcalbound scores.csv --json > record.json && skcalbound verify record.json scores.csv

The --json output has each bound's audit record ("certificates": data fingerprint,
parameters, numbers, by bound). skcalbound verify RECORD.json DATA checks that DATA are
the data certified and, for a record made with an int --random-state, refits each bound
and compares the whole certificate; a record it cannot refit exits 3 (fingerprint
checked, bound not recomputed). See skcalbound verify --help; a data file named verify
is given as ./verify.

Exit status: 0 on success (with --max-ce: every upper bound is below TAU); 1 with
--max-ce when some upper bound is not below TAU; 2 for a bad option, file, column or
value."""

GUARANTEES = ("high_probability", "paper")

# Rows per chunk when the command streams a file without --chunksize: half of
# pyarrow's default row group. Peak RSS of --bound nw on 2 * 10**7 rows: 562 MB with
# it, 645 MB with 2**20, 530 MB with 2**18 (a chunk's working arrays; the statistics
# merged per chunk, tens of MB, do not depend on it).
CHUNK_ROWS = 2**19


class CLIError(Exception):
    """A problem with the input: reported on one line, exit status 2."""


def package_version():
    """The installed version, from the package metadata (what pip reports)."""
    try:
        return version("skcalbound")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return __version__


_FLOAT = r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER = re.compile(
    rf"(?P<base>[+-]?{_FLOAT})(?:\s*(?:\*\*|\^)\s*(?P<exponent>[+-]?{_FLOAT}))?"
)


def parse_number(text):
    """A float from ``0.015625``, ``1e-2``, ``2**-6`` or ``2^-6`` (as the docs write
    bandwidths); argparse's error for anything else. Parsed, never evaluated."""
    match = _NUMBER.fullmatch(text.strip())
    problem = None
    if match is None:
        problem = "not a number"
    else:
        base, exponent = match["base"], match["exponent"]
        if exponent is not None and base[0] in "+-":
            problem = "write a power with an unsigned base"
        else:
            try:
                value = float(base)
                if exponent is not None:
                    value = value ** float(exponent)
            except (OverflowError, ZeroDivisionError):
                value = math.inf
            if not math.isfinite(value):
                problem = "not a finite number"
    if problem is not None:
        raise argparse.ArgumentTypeError(
            f"expected a number such as 0.015625, 1e-2, 2**-6 or 2^-6; got {text!r} "
            f"({problem})"
        )
    return value


def build_parser():
    """The command's argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "file", help="CSV or Parquet file (by extension: .csv[.gz], .parquet, .pq)."
    )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--scores",
        default="y_prob",
        metavar="COLUMN",
        help="column of predicted probabilities in [0, 1] (default: %(default)s)",
    )
    data.add_argument(
        "--labels",
        default="y_true",
        metavar="COLUMN",
        help="column of binary labels (default: %(default)s)",
    )
    data.add_argument(
        "--pos-label",
        default=None,
        metavar="LABEL",
        help="the label of the positive class, whose probability --scores holds "
        "(read as the labels' type: 1 for integers, True for booleans, churn for "
        "text); needed unless the labels are 0/1, -1/1 or booleans",
    )
    data.add_argument(
        "--format",
        choices=("csv", "parquet"),
        default=None,
        help="file format, if the extension does not say it",
    )
    data.add_argument(
        "--chunksize",
        type=int,
        default=None,
        metavar="ROWS",
        help="read the file ROWS rows at a time, never whole (files larger than "
        "memory). Without it, nw and lipschitz (either --guarantee) stream in chunks "
        f"of {CHUNK_ROWS} rows when they are all the bounds asked for (--bound nw "
        "lipschitz) and neither --by nor --plot is given; tv and monotone sort every "
        "score, so with them the two columns (and --by's) are read whole, no other "
        "column. With --chunksize, monotone certifies on the cells of a fixed score "
        "grid instead (within about 1%% of the sorted band's width); the other "
        "numbers do not depend on how the file is read",
    )
    data.add_argument(
        "--by",
        default=None,
        metavar="COLUMN",
        help="also certify each segment (each value of COLUMN) and the whole file: "
        "one interval per row of a table, all holding simultaneously at "
        "--confidence-level (each computed at 1 - (1 - P)/G for G certificates)",
    )
    bounds = parser.add_argument_group("bounds")
    bounds.add_argument(
        "--bound",
        nargs="+",
        default=None,
        metavar="NAME",
        help="bounds to compute, any of: monotone, tv, nw, lipschitz (default: "
        "monotone; also nw when --h or --b1/--b2 is given, lipschitz when --L is "
        "given; tv instead of monotone with --guarantee paper)",
    )
    bounds.add_argument(
        "--confidence-level",
        type=float,
        default=0.95,
        metavar="P",
        help="probability with which each bound holds (default: %(default)s)",
    )
    bounds.add_argument(
        "--guarantee",
        choices=GUARANTEES,
        default="high_probability",
        help="high_probability: every interval holds with probability >= "
        "--confidence-level (default); paper: the paper's published forms, for "
        "comparison with its numbers (nw, lipschitz: in expectation over the "
        "training labels only; monotone has no paper form)",
    )
    bounds.add_argument(
        "--V",
        type=parse_number,
        default=1.0,
        help="tv: bound on the total variation of E[y|s] (default: %(default)s)",
    )
    bounds.add_argument(
        "--h",
        type=parse_number,
        default=None,
        help="nw, lipschitz: bandwidth of the sech perturbation the scores went "
        "through, at most 0.5 (e.g. 2^-6, '2**-6' (quoted: * is special in the "
        "shell) or 0.015625); an assumption about how the scores were produced, not "
        "a knob to tune",
    )
    bounds.add_argument(
        "--b1",
        type=parse_number,
        default=None,
        help="nw: bound on |eta'| (with --b2, instead of --h)",
    )
    bounds.add_argument(
        "--b2",
        type=parse_number,
        default=None,
        help="nw: bound on |eta''| (with --b1, instead of --h)",
    )
    bounds.add_argument(
        "--L",
        type=parse_number,
        default=None,
        help="lipschitz: Lipschitz constant (instead of --h)",
    )
    bounds.add_argument(
        "--cv",
        type=int,
        default=5,
        metavar="K",
        help="number of cross-fitting folds of tv, nw and lipschitz (default: "
        "%(default)s); monotone fits one band on all rows",
    )
    bounds.add_argument(
        "--aggregate",
        choices=("mean", "min"),
        default="mean",
        help="combine the fold bounds by their mean or minimum; both are certified "
        "(default: %(default)s)",
    )
    bounds.add_argument(
        "--random-state",
        type=int,
        default=0,
        metavar="SEED",
        help="seed of the shuffled folds, and of monotone's order of tied scores "
        "(default: %(default)s, reproducible)",
    )
    bounds.add_argument(
        "--n-bins",
        type=int,
        default=15,
        metavar="N",
        help="bins of the binned ECE shown for comparison (default: %(default)s)",
    )
    gate = parser.add_argument_group("gate")
    gate.add_argument(
        "--max-ce",
        type=float,
        default=None,
        metavar="TAU",
        help="exit with status 1 unless the upper bound of every computed bound is "
        "strictly below TAU (in (0, 1]): a pass certifies CE < TAU with probability "
        ">= --confidence-level; prints a one-line PASS/FAIL verdict",
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--json", action="store_true", help="print JSON instead of a table"
    )
    out.add_argument(
        "--plot",
        default=None,
        metavar="PATH",
        help="write the reliability plot (one panel per bound: surrogate, band, "
        "interval) to PATH (.png, .pdf, .svg)",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {package_version()}"
    )
    return parser


def _header(path, file_format):
    """The column names of ``path``, read from its schema or first line."""
    if file_format == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(path).names
    return list(pd.read_csv(path, nrows=0).columns)


def read_table(path, file_format=None, columns=None):
    """The data frame in ``path`` (only ``columns`` when all are in the file, else
    every column, for the messages naming them); CLIError if it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise CLIError(f"{path}: no such file")
    if file_format is None:
        suffixes = [s.lower() for s in path.suffixes]
        if suffixes and suffixes[-1] in (".parquet", ".pq"):
            file_format = "parquet"
        elif ".csv" in suffixes[-2:]:
            file_format = "csv"
        else:
            raise CLIError(
                f"{path}: cannot tell the format from the extension; name the file "
                ".csv or .parquet, or pass --format csv|parquet"
            )
    try:
        if columns is not None:
            columns = list(dict.fromkeys(columns))
            if not set(columns) <= set(_header(path, file_format)):
                columns = None
        if file_format == "parquet":
            return pd.read_parquet(path, columns=columns)
        return pd.read_csv(path, usecols=columns)
    except ImportError as exc:
        raise CLIError(
            f"{path}: reading Parquet needs pyarrow: pip install 'skcalbound[cli]' "
            f"({exc})"
        ) from exc
    except Exception as exc:  # pandas and pyarrow raise many types for bad files
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise CLIError(f"{path}: not a readable {file_format} file: {message}") from exc


def _plain(value):
    """A numpy scalar as the Python value it holds (for messages and JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def _column(frame, name, option, path):
    if name not in frame.columns:
        shown = ", ".join(map(str, frame.columns[:20]))
        more = ", ..." if len(frame.columns) > 20 else ""
        raise CLIError(
            f"{path}: no column {name!r} (columns: {shown}{more}); pass {option} NAME"
        )
    return frame[name]


def _as_label(text, labels, labels_column):
    """``--pos-label`` (a string) as a value of the labels column's type."""
    kind = labels.dtype.kind
    if kind == "b":
        value = {"true": True, "1": True, "false": False, "0": False}.get(
            text.strip().lower()
        )
        if value is None:
            raise CLIError(
                f"--pos-label {text!r}: column {labels_column!r} holds booleans; pass "
                "--pos-label True or --pos-label False"
            )
        return value
    if kind in "iuf":
        try:
            value = float(text)
        except ValueError:
            raise CLIError(
                f"--pos-label {text!r}: column {labels_column!r} holds numbers; pass "
                "one of its labels"
            ) from None
        return int(value) if kind in "iu" and value.is_integer() else value
    return text


def _labels_text(classes):
    return ", ".join(repr(_plain(c)) for c in classes)


def scores_and_labels(frame, scores_column, labels_column, path, pos_label=None):
    """Float scores, the labels as 0/1 and the positive label; CLIError for bad
    values.

    The positive class is ``pos_label`` (a string, read as the labels' type); without
    it the labels must be 0/1, -1/1 or booleans, and 1 (True) is positive, as in
    scikit-learn.
    """
    scores = _column(frame, scores_column, "--scores", path)
    labels = _column(frame, labels_column, "--labels", path)
    if len(frame) == 0:
        raise CLIError(f"{path}: the file has no rows")
    numeric = pd.to_numeric(scores, errors="coerce").to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~((numeric >= 0.0) & (numeric <= 1.0))  # also NaN, inf, text
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise CLIError(
            f"{path}: column {scores_column!r} must hold probabilities in [0, 1] "
            f"(no missing values); row {row} holds {_plain(scores.iloc[row])!r} "
            f"({int(bad.sum())} bad rows in all)"
        )
    missing = labels.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise CLIError(
            f"{path}: column {labels_column!r} has a missing label in row {row}"
        )
    values = labels.to_numpy()
    if values.dtype.kind not in "biuf":
        values = values.astype(str)  # text labels, compared as written
    classes = pd.unique(values)
    if len(classes) != 2:
        shown = _labels_text(list(classes)[:5])
        raise CLIError(
            f"{path}: column {labels_column!r} must hold exactly two distinct labels "
            f"(binary classification); found {len(classes)}: {shown}"
            f"{', ...' if len(classes) > 5 else ''}"
        )
    classes = np.sort(classes)
    if pos_label is None:
        if classes.dtype.kind == "b":
            positive = True
        elif classes.dtype.kind in "iuf" and classes.tolist() in ([0, 1], [-1, 1]):
            positive = 1
        else:
            raise CLIError(
                f"{path}: column {labels_column!r} holds the labels "
                f"{_labels_text(classes)}: say which is the positive class (the one "
                f"whose probability column {scores_column!r} holds) with --pos-label "
                "LABEL"
            )
    else:
        positive = _as_label(pos_label, values, labels_column)
        if positive not in classes.tolist():
            raise CLIError(
                f"{path}: --pos-label {pos_label!r} is not a label of column "
                f"{labels_column!r}, whose labels are {_labels_text(classes)}"
            )
    positives = values == positive
    return numeric, positives.astype(int), _plain(positive)


def _bound_classes():
    """``{name: class}`` of the bounds (imported here, not at start-up, so that
    ``--version`` and ``--help`` import no scikit-learn)."""
    from ._registry import BY_NAME

    return BY_NAME


def _estimators(args, bounds):
    """The estimator of each bound name, its assumption from the options of the
    parameters it states it with (``assumption_params``), and the common options it
    takes. A bound that does not cross-fit by default (monotone: ``cv=None``, one
    band on all rows) keeps its ``cv``; one without a ``guarantee`` parameter
    (monotone) refuses ``--guarantee paper``."""
    classes = _bound_classes()
    common = dict(
        confidence_level=args.confidence_level,
        guarantee=args.guarantee,
        cv=args.cv,
        aggregate=args.aggregate,
        random_state=args.random_state,
    )
    estimators = {}
    for name in bounds:
        cls = classes[name]
        defaults = cls().get_params()
        if args.guarantee != "high_probability" and "guarantee" not in defaults:
            raise CLIError(
                f"--guarantee {args.guarantee}: {name} has no paper form (the paper "
                "has no calibration band); compute it without --guarantee, or use "
                "--bound tv nw lipschitz"
            )
        skip = {"cv", "aggregate"} if defaults.get("cv", 0) is None else set()
        params = {k: v for k, v in common.items() if k in defaults and k not in skip}
        estimators[name] = cls(
            **{p: getattr(args, p) for p in cls.assumption_params}, **params
        )
    return estimators


def _assumption(est):
    return type(est).assumption_text.format(**vars(est))


def _table_name(name):
    return _bound_classes()[name].label


def _in_expectation_only(name, guarantee):
    from ._base import in_expectation_only

    return in_expectation_only(_bound_classes()[name], guarantee)


def _is_bound(row):
    """Whether a result row is a bound (certified or not), not the binned ECE."""
    return row["bound"] is not None


def bound_names(args):
    """The bounds to compute: --bound, or monotone (tv with --guarantee paper: the
    paper has no band) plus those the assumption options name."""
    bounds = args.bound
    if bounds is None:
        bounds = ["tv" if args.guarantee == "paper" else "monotone"]
        if args.h is not None or args.b1 is not None or args.b2 is not None:
            bounds.append("nw")
        if args.L is not None:
            bounds.append("lipschitz")
    return list(dict.fromkeys(bounds))


def _result_row(name, est, caught):
    """One bound's row of the report (``caught``: the warnings of its fit).
    ``certified``: it holds with probability at least ``confidence_level``; false for
    the paper's NW and Lipschitz forms, which hold in expectation only, and for a
    band that crosses (``assumption_rejected``: the data reject the monotone
    calibration function the interval assumes)."""
    expectation = _in_expectation_only(
        name, getattr(est, "guarantee", "high_probability")
    )
    rejected = bool(getattr(est, "monotonicity_rejected_", False))
    return {
        "method": name,
        "certified": not (expectation or rejected),
        "assumption_rejected": rejected,
        "lower_bound": float(est.lower_bound_),
        "bound": float(est.bound_),
        "estimate": float(est.estimate_),
        "confidence_level": float(est.confidence_level),
        "guarantee": getattr(est, "guarantee", "high_probability"),
        "in_expectation_only": expectation,
        "assumption": _assumption(est),
        "terms": {k: float(v) for k, v in est.terms_.items()},
        "warnings": list(
            dict.fromkeys(" ".join(str(w.message).split()) for w in caught)
        ),
    }


def _ece_row(args, ece):
    return {
        "method": "binned_ece",
        "certified": False,
        "lower_bound": None,
        "bound": None,
        "estimate": float(ece),
        "confidence_level": None,
        "guarantee": None,
        "in_expectation_only": None,
        "assumption_rejected": None,
        "assumption": f"heuristic, not a bound ({args.n_bins} equal-width bins)",
        "terms": {},
        "warnings": [],
    }


def compute(args, scores, labels):
    """The results as a list of dicts, and the fitted estimators by name."""
    estimators = _estimators(args, bound_names(args))
    results = []
    for name, est in estimators.items():
        try:
            # Warnings (e.g. VacuousBoundWarning) go into the report, not to stderr.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est.fit(scores, labels)
        except (ValueError, TypeError) as exc:  # the options of this bound
            raise CLIError(f"{name}: {exc}") from exc
        results.append(_result_row(name, est, caught))
    from . import binned_ece

    try:
        ece = binned_ece(labels, scores, n_bins=args.n_bins)
    except ValueError as exc:
        raise CLIError(f"--n-bins: {exc}") from exc
    results.append(_ece_row(args, ece))
    return results, estimators


def compute_chunks(args):
    """``compute`` on a file read in chunks of ``--chunksize`` rows (``_cli_chunks``):
    the results, the estimators, the number of rows and the positive label."""
    from ._cli_chunks import ChunkedFile, compute_chunked

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
    estimators = _estimators(args, bound_names(args))
    if args.bound is None:  # the default monotone (or tv) sorts: leave it out
        estimators = {k: e for k, e in estimators.items() if _mergeable(e)}
        if not estimators:
            raise CLIError(
                "--chunksize certifies with nw, which needs its assumption: pass --h "
                "(or --b1 and --b2); the default monotone band (and tv) needs the "
                "whole sorted sample (--bound monotone --chunksize certifies it on "
                "the cells of a fixed score grid)"
            )
    reader = ChunkedFile(args.file, args)
    results = compute_chunked(args, estimators, reader, _result_row)
    results.append(_ece_row(args, reader.binned_ece()))
    return results, estimators, reader.n_samples, _plain(reader.positive)


def streams(args):
    """Whether the file is read in chunks without ``--chunksize``: every bound asked
    for runs on chunks (nw, lipschitz; not tv, which sorts every score), and neither
    ``--by`` nor ``--plot`` needs the rows in memory."""
    if args.by is not None or args.plot is not None:
        return False
    return all(map(_mergeable, _estimators(args, bound_names(args)).values()))


def _mergeable(est):
    """Whether a bound runs on chunks (nw, lipschitz), not on the sorted sample."""
    try:
        return est._method().mergeable
    except (ValueError, TypeError):  # a bad option: the fit in memory says it
        return False


def selection_note(results):
    """With several bounds, why reporting the smallest is not certified, and the
    confidence level at which each must be computed for that; else None."""
    bounds = [r for r in results if _is_bound(r)]
    k = len(bounds)
    if k < 2:
        return None
    p = bounds[0]["confidence_level"]
    level = f"{100 * p:g}%"
    holds = f"at {level}"
    if any(r["in_expectation_only"] for r in bounds):
        holds = f"(at {level}, or in expectation for the paper's forms)"
    return (
        f"Each of these {k} intervals holds on its own {holds}. Reporting the "
        f"smallest upper bound, picked after seeing all {k}, is not certified at "
        f"{level}: to choose among them, compute each with --confidence-level "
        f"{1 - (1 - p) / k:.6g} (= 1 - (1 - {p:g})/{k}, a union bound); then all {k} "
        f"hold together at {level}, and so does the smallest."
    )


def _interval(result):
    return f"[{result['lower_bound']:.6f}, {result['bound']:.6f}]"


def format_table(results, header):
    """The human-readable report: per bound its interval ``[lower, upper]``, the
    point estimate, its assumption and level, and the terms of the upper bound."""
    lines = [header, ""]
    labels = [_table_name(r["method"]) for r in results if _is_bound(r)]
    w = max(len(label) + 2 for label in [*labels, "binned ECE"])
    lines.append(f"{'method':<{w}}{'[lower, upper]':<22}{'estimate':>9}  assumption")
    for r in results:
        if _is_bound(r):
            name = _table_name(r["method"])
            level = f"{100 * r['confidence_level']:g}%"
            if r.get("assumption_rejected"):
                holds = (
                    "rejected by the data (the band crosses): not certified, and "
                    "never passes --max-ce"
                )
            elif r["in_expectation_only"]:
                holds = (
                    "paper's form: holds in expectation over the training labels, not "
                    f"with probability >= {level}"
                )
            else:
                holds = f"holds with probability >= {level}"
            lines.append(
                f"{name:<{w}}{_interval(r):<22}{r['estimate']:>9.6f}  "
                f"{r['assumption']}; {holds}"
            )
            for term, value in r["terms"].items():
                shown = f"{value:>10.6f}"
                if term.startswith("n_") and float(value).is_integer():  # a count
                    shown = f"{int(value):>10d}"
                lines.append(f"  {term:<22}{shown}")
            for message in r["warnings"]:
                lines.extend(
                    textwrap.wrap(
                        f"warning: {message}",
                        width=88,
                        initial_indent="  ",
                        subsequent_indent="    ",
                    )
                )
        else:
            lines.append(
                f"{'binned ECE':<{w}}{'-':<22}{r['estimate']:>9.6f}  {r['assumption']}"
            )
    note = selection_note(results)
    if note is not None:
        lines.append("")
        lines.extend(textwrap.wrap(f"Note: {note}", width=88))
    return "\n".join(lines)


def gate(results, max_ce):
    """The ``--max-ce`` gate: passed iff every bound's upper bound is below ``max_ce``.

    Returns a dict with ``max_ce``, ``passed``, ``gated`` (the bounds compared),
    ``failed`` (those not below ``max_ce``, and a band that crosses: the data reject
    the assumption its interval needs, so it never passes) and the one-line
    ``verdict``.
    """
    bounds = [r for r in results if _is_bound(r)]

    def below(r):
        return r["bound"] < max_ce and not r.get("assumption_rejected")

    failed = [r for r in bounds if not below(r)]
    passed = not failed
    level = f"{100 * bounds[0]['confidence_level']:g}%"

    def compared(r):
        sign = "<" if r["bound"] < max_ce else ">="
        text = f"{r['method']} upper bound {r['bound']:.6f} {sign} {max_ce:g}"
        if r.get("assumption_rejected"):
            text += " but its band crosses (monotonicity rejected)"
        return text

    # The failing bounds first: they are the reason for the verdict.
    shown = failed + [r for r in bounds if below(r)]
    listed = "; ".join(compared(r) for r in shown)
    loose = [r["method"] for r in bounds if r["in_expectation_only"]]
    if passed:
        certified = "" if loose else "certified "
        verdict = (
            f"PASS (--max-ce {max_ce:g}): {certified}CE < {max_ce:g} at confidence "
            f"{level} ({listed})"
        )
    else:
        verdict = (
            f"FAIL (--max-ce {max_ce:g}): CE < {max_ce:g} not certified at confidence "
            f"{level} ({listed})"
        )
    if loose:
        verb = "holds" if len(loose) == 1 else "hold"
        verdict += (
            f"; guarantee=paper: {', '.join(loose)} {verb} in expectation over the "
            "training labels only"
        )
    return {
        "max_ce": max_ce,
        "passed": passed,
        "gated": [r["method"] for r in bounds],
        "failed": [r["method"] for r in failed],
        "verdict": verdict,
    }


def write_plot(path, estimators, scores, title=None):
    """One panel per fitted bound (its display), side by side, saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import CalibrationBoundDisplay

    # Side by side rather than on one axes: the surrogates of several bounds are
    # close to each other, and their curves and bands hid one another.
    fig, axes = plt.subplots(
        1,
        len(estimators),
        figsize=(5.5 * len(estimators), 7.0),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    for k, (ax, (name, est)) in enumerate(zip(axes[0], estimators.items())):
        CalibrationBoundDisplay.from_bound(est, scores, ax=ax, color=f"C{k}")
        ax.set_title(
            f"{_table_name(name)} bound\n{_assumption(est)}", fontsize="medium"
        )
        ax.label_outer()
    if title is not None:
        fig.suptitle(title)
    try:
        fig.savefig(path, dpi=120)
    except (ValueError, OSError) as exc:
        raise CLIError(
            f"{path}: cannot write the plot: {' '.join(str(exc).split())}"
        ) from exc
    finally:
        plt.close(fig)


def compute_by(args, frame, scores, labels):
    """``--by``: the per-segment table of each bound (``bounds_by_group``, with the
    whole file as the last row), by bound name."""
    from ._groups import bounds_by_group
    from ._warnings import VacuousBoundWarning

    groups = _column(frame, args.by, "--by", args.file)
    tables = {}
    for name, est in _estimators(args, bound_names(args)).items():
        try:
            with warnings.catch_warnings():  # the table's vacuous column says it
                warnings.simplefilter("ignore", VacuousBoundWarning)
                tables[name] = bounds_by_group(
                    labels,
                    scores,
                    groups,
                    method=est,
                    include_overall=True,
                    confidence_level=args.confidence_level,
                    n_bins=args.n_bins,
                )
        except (ValueError, TypeError) as exc:
            raise CLIError(f"--by {args.by}: {name}: {exc}") from exc
    return tables


def _by_note(table, n_tables):
    note = table.attrs["note"]  # with the caveat of guarantee='paper' where it applies
    if n_tables > 1:
        p = table.attrs["confidence_level"]
        note += (
            f" This holds within each table; all {n_tables} tables together hold "
            f"with probability at least {1 - n_tables * (1 - p):g} = 1 - {n_tables} * "
            f"(1 - {p:g}) (the same union bound)."
        )
    return note


def by_rows(tables):
    """The tables as JSON-ready row dicts (with a ``method`` key; NaN as None)."""
    rows = []
    for name, table in tables.items():
        for record in table.to_dict("records"):
            row = {"method": name}
            for key, value in record.items():
                value = _plain(value)
                if isinstance(value, float) and math.isnan(value):
                    value = None
                row[key] = value
            rows.append(row)
    return rows


def format_by_table(tables, header, column):
    """The ``--by`` report: per bound, one row per segment, worst first."""
    lines = [header]
    for name, table in tables.items():
        lines += [
            "",
            f"{_table_name(name)} bound by {column!r} (worst first; '(all)' is "
            "the whole file):",
        ]
        lines.append(
            f"{'group':<16}{'n':>8}{'n_pos':>8}  {'[lower, upper]':<22}"
            f"{'estimate':>9}{'ECE':>9}  status"
        )
        for r in table.to_dict("records"):
            if not math.isnan(r["upper_bound"]):  # certified or in expectation only
                interval = f"[{r['lower_bound']:.6f}, {r['upper_bound']:.6f}]"
                plug_in = f"{r['estimate']:.6f}"
                vacuous = " (vacuous: above 0.5)" if r["vacuous"] else ""
                status = r["status"] + vacuous
            else:
                interval, plug_in, status = "-", "-", r["status"]
            ece = "-" if math.isnan(r["binned_ece"]) else f"{r['binned_ece']:.6f}"
            lines.append(
                f"{str(_plain(r['group'])):<16}{r['n']:>8}{r['n_positive']:>8}  "
                f"{interval:<22}{plug_in:>9}{ece:>9}  {status}"
            )
        lines.extend(textwrap.wrap(f"Note: {_by_note(table, len(tables))}", width=88))
    return "\n".join(lines)


def _report_by(args, frame, scores, labels, positive):
    """Print the ``--by`` report (table or JSON); returns the exit status."""
    for option, value in (("--max-ce", args.max_ce), ("--plot", args.plot)):
        if value is not None:
            raise CLIError(f"{option} cannot be combined with --by")
    tables = compute_by(args, frame, scores, labels)
    if args.json:
        report = {
            "file": str(args.file),
            "n_samples": int(scores.shape[0]),
            "scores_column": args.scores,
            "labels_column": args.labels,
            "by": args.by,
            "positive_label": positive,
            "guarantee": args.guarantee,
            "confidence_level": args.confidence_level,
            "segments": by_rows(tables),
            "notes": {
                name: _by_note(table, len(tables)) for name, table in tables.items()
            },
        }
        print(json.dumps(report, indent=2))
    else:
        header = (
            f"{args.file}: {scores.shape[0]} scores (column {args.scores!r}), labels "
            f"(column {args.labels!r}, positive class {positive!r}), segments by "
            f"column {args.by!r}; cv={args.cv}, aggregate={args.aggregate}, "
            f"guarantee={args.guarantee}, random_state={args.random_state}"
        )
        print(format_by_table(tables, header, args.by))
    return 0


def _check_assumptions(args):
    """The assumption options' ranges, checked before any bound is fitted."""
    if args.h is not None and not 0.0 < args.h <= 0.5:
        if args.h <= 0.0:
            raise CLIError(f"--h must be positive; got {args.h:g}")
        guess = ""
        if float(args.h).is_integer() and args.h <= 41:
            guess = f" Did you mean --h 2**-{int(args.h)}?"
        elif args.h >= 2:
            guess = f" Did you mean --h 1/{args.h:g} = {1 / args.h:.6g}?"
        raise CLIError(
            f"--h {args.h:g} is above 0.5. h is the bandwidth of the sech perturbation "
            "the scores went through (perturb_scores or SechPerturbedClassifier with "
            "that h, typically 2**-6): an assumption about how the scores were "
            f"produced, not a knob to tune.{guess} To assume a weak smoothness of "
            "E[y|s] on purpose, give it directly: --b1 and --b2 (nw) or --L "
            "(lipschitz)."
        )


def _fail(message):
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def main(argv=None):
    """Run the command; returns the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader closed the pipe (``skcalbound f.csv | head``): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["verify"]:
        return _verify(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    # The bound names from the bound classes (after parsing: --version imports none).
    for name in args.bound or ():
        if name not in _bound_classes():
            choices = ", ".join(map(repr, _bound_classes()))
            parser.error(
                f"argument --bound: invalid choice: {name!r} (choose from {choices})"
            )
    try:
        if not (0.0 < args.confidence_level < 1.0) or math.isnan(args.confidence_level):
            raise CLIError(
                f"--confidence-level must be in (0, 1); got {args.confidence_level}"
            )
        if args.max_ce is not None and not (0.0 < args.max_ce <= 1.0):
            raise CLIError(
                f"--max-ce must be in (0, 1] (a calibration error); got {args.max_ce}"
            )
        _check_assumptions(args)
        if args.plot is not None and not Path(args.plot).resolve().parent.is_dir():
            raise CLIError(
                f"{args.plot}: the directory {Path(args.plot).parent} does not exist"
            )
        if args.chunksize is not None:
            if args.chunksize < 1:
                raise CLIError(
                    f"--chunksize must be a positive number of rows; got "
                    f"{args.chunksize}"
                )
            results, estimators, n_samples, positive = compute_chunks(args)
        elif streams(args):
            args.chunksize = CHUNK_ROWS
            results, estimators, n_samples, positive = compute_chunks(args)
        else:
            columns = [args.scores, args.labels] + [args.by] * (args.by is not None)
            frame = read_table(args.file, args.format, columns=columns)
            scores, labels, positive = scores_and_labels(
                frame, args.scores, args.labels, args.file, args.pos_label
            )
            if args.by is not None:
                return _report_by(args, frame, scores, labels, positive)
            results, estimators = compute(args, scores, labels)
            n_samples = scores.shape[0]
        if args.plot is not None:
            write_plot(
                args.plot,
                estimators,
                scores,
                title=f"{args.file}: {scores.shape[0]} scores, positive class "
                f"{positive!r}",
            )
    except CLIError as exc:
        return _fail(exc)
    verdict = None if args.max_ce is None else gate(results, args.max_ce)
    if args.json:
        report = {
            "file": str(args.file),
            "n_samples": int(n_samples),
            "scores_column": args.scores,
            "labels_column": args.labels,
            "positive_label": positive,
            "guarantee": args.guarantee,
            "results": results,
        }
        if args.chunksize is not None:
            report["chunksize"] = int(args.chunksize)
        note = selection_note(results)
        if note is not None:
            report["note"] = note
        # Each bound's audit record, for ``skcalbound verify``.
        report["certificates"] = {
            name: {**est.certificate_, "source": _source(args)}
            for name, est in estimators.items()
        }
        if args.plot is not None:
            report["plot"] = str(args.plot)
        if verdict is not None:
            report["gate"] = verdict
        print(json.dumps(report, indent=2))
        if verdict is not None:  # stdout stays pure JSON
            print(verdict["verdict"], file=sys.stderr)
    else:
        header = (
            f"{args.file}: {n_samples} scores (column {args.scores!r}), labels "
            f"(column {args.labels!r}, positive class {positive!r}); cv={args.cv}, "
            f"aggregate={args.aggregate}, guarantee={args.guarantee}, "
            f"random_state={args.random_state}"
        )
        if "monotone" in estimators:
            header += " (monotone: one band on all rows, no folds)"
        if args.chunksize is not None:
            header += f"; read in chunks of {args.chunksize} rows"
        print(format_table(results, header))
        if args.plot is not None:
            print(f"\nreliability plot written to {args.plot}")
        if verdict is not None:
            print(f"\n{verdict['verdict']}")
    if verdict is not None and not verdict["passed"]:
        return 1
    return 0


# --------------------------------------------------------------------------------------
# skcalbound verify RECORD DATA
# --------------------------------------------------------------------------------------

VERIFY_DESCRIPTION = """\
Check an audit record against a data file. First, that the file holds the data
certified: the same number of rows, the same SHA-256 fingerprint of the scores and 0/1
labels (read as the main command reads them, in file order: the same rows in another
order do not match) and the same number of positives. Then, when the record's params
can repeat its numbers (an int random_state and an int or default cv, read from the
params, never from the record's "reproducible" flag), refit its estimator with them
and compare the whole certificate with the record: method, guarantee, confidence
level, assumption as given and as used, n, folds, params, bound, lower_bound, estimate
and terms, numbers to a relative 1e-12 (a refit repeats them to the bit on one
machine; 1e-12 leaves room for another machine's rounding only). Not compared: the
creation time, the source, the library version (named when numbers differ) and the
labels' names (the positive class enters through the fingerprint).

A record that cannot be refit (random_state=None, a RandomState instance, a splitter
as cv) is checked as far as it can be: its entries against its params, its terms
(non-negative, adding up to the bound, min(sum, 1)), its lower bound against them, and
its assumption as used and every entry that does not depend on the folds against a
fit with stand-in folds. It is never reported OK: exit status 3 (PARTIAL: fingerprint
matches, bound not recomputed).

RECORD is the JSON output of skcalbound FILE --json (every certificate in its
"certificates" is checked) or one bare certificate (an estimator's certificate_ written
with json.dump). Records written by the command remember the file's columns and
--pos-label, so skcalbound verify RECORD DATA needs no options; the options below
override them (for a bare certificate the defaults are y_prob, y_true and the
record's pos_label)."""

VERIFY_EPILOG = """\
examples:
  skcalbound scores.csv --json > record.json
  skcalbound verify record.json scores.csv
  skcalbound verify certificate.json holdout.parquet --scores prob --labels label

Exit status: 0 when every certificate was recomputed and agrees with the record (one
line starting with OK); 1 when the data differ from the data certified, a recomputed
entry differs from the record, or the record contradicts itself (a line starting with
FAIL names it); 2 for a bad record, file or option; 3 (PARTIAL) when the data match
(fingerprint matches) but some bound could not be recomputed and nothing failed (one
line starting with PARTIAL says what was checked and why)."""

# The exit status of a record whose data match but whose bound was not recomputed.
PARTIAL_STATUS = 3


def build_verify_parser():
    """The argument parser of ``skcalbound verify``."""
    parser = argparse.ArgumentParser(
        prog=f"{PROG} verify",
        description=VERIFY_DESCRIPTION,
        epilog=VERIFY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("record", help="JSON audit record (see above)")
    parser.add_argument("file", help="CSV or Parquet file holding the data certified")
    parser.add_argument(
        "--scores",
        default=None,
        metavar="COLUMN",
        help="column of scores (default: from the record, else y_prob)",
    )
    parser.add_argument(
        "--labels",
        default=None,
        metavar="COLUMN",
        help="column of labels (default: from the record, else y_true)",
    )
    parser.add_argument(
        "--pos-label",
        default=None,
        metavar="LABEL",
        help="the positive class (default: from the record)",
    )
    parser.add_argument(
        "--format",
        choices=("csv", "parquet"),
        default=None,
        help="file format, if the extension does not say it",
    )
    return parser


def _source(args):
    """How the command read its data, stored with each certificate for ``verify``."""
    return {
        "file": str(args.file),
        "scores_column": args.scores,
        "labels_column": args.labels,
        "pos_label": args.pos_label,
        "format": args.format,
    }


def read_certificates(path):
    """The certificates in the JSON file ``path`` (a bare one, or the command's
    ``--json`` output); CLIError if there are none."""
    from ._certificate import record_problem

    path = Path(path)
    if not path.is_file():
        raise CLIError(f"{path}: no such file")
    try:
        record = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: not a JSON file: {exc}") from exc
    if isinstance(record, dict) and "results" in record:
        found = record.get("certificates")
        found = list(found.values()) if isinstance(found, dict) else []
        if not found:
            raise CLIError(
                f"{path}: the report holds no certificates (written by an older "
                "skcalbound, or with --by?)"
            )
    else:
        found = [record]
    for certificate in found:
        problem = record_problem(certificate)
        if problem is not None:
            raise CLIError(
                f"{path}: not a skcalbound audit record (a certificate_ or the JSON of "
                f"skcalbound FILE --json): {problem}"
            )
        if certificate["method"] not in _verifiable():
            raise CLIError(
                f"{path}: cannot verify a {certificate['method']!r} record; "
                f"verifiable: {', '.join(_verifiable())}"
            )
    return found


def _verifiable():
    return {cls.__name__: cls for cls in _bound_classes().values()}


def _read_options(args, certificate):
    """``(scores column, labels column, pos_label text, format)`` for a certificate:
    the options, else the record's source, else the defaults."""
    source = certificate.get("source") or {}
    pos_label = args.pos_label
    if pos_label is None:
        if source:
            pos_label = source.get("pos_label")
        elif certificate.get("pos_label") is not None:
            pos_label = str(certificate["pos_label"])
        elif len(certificate.get("classes") or []) == 2:
            pos_label = str(certificate["classes"][1])  # scikit-learn's default
    return (
        args.scores or source.get("scores_column") or "y_prob",
        args.labels or source.get("labels_column") or "y_true",
        pos_label,
        args.format or source.get("format"),
    )


def _refit(cls, params, scores, labels, chunked=False):
    """``(estimator fitted with params, None)``, or ``(None, why not)``; ``chunked``:
    through ``fit_chunks`` (one chunk), for a record of a bound whose chunked form
    differs from its in-memory one (the band on a score grid, SPEC 14.6)."""
    try:
        estimator = cls(**params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if chunked:
                estimator.fit_chunks([(labels, scores)])
            else:
                estimator.fit(scores, labels)
    except (ValueError, TypeError, ArithmeticError) as exc:  # params it refuses
        return None, f"{type(exc).__name__}: {exc}"
    return estimator, None


def _differences_line(method, certificate, found):
    """The FAIL line of the entries that differ from a refit's."""
    from ._certificate import RTOL

    field, recorded, recomputed = found[0]
    line = (
        f"FAIL {method}: {field} differs: recorded {recorded!r}, recomputed "
        f"{recomputed!r}"
    )
    if all(isinstance(v, float) for v in (recorded, recomputed)):
        line += f" (relative tolerance {RTOL:g})"
    if len(found) > 1:
        names = [name for name, _, _ in found[1:]]
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        line += f"; also differ: {shown}."
    if certificate.get("version") != __version__:
        line += (
            f" (recorded with skcalbound {certificate.get('version')}, recomputed "
            f"with {__version__})"
        )
    return line


def _check_one(certificate, args, tables):
    """``(status, line)`` for one certificate against ``args.file``: status ``"ok"``
    (refit, the same certificate), ``"fail"`` or ``"partial"`` (data match and the
    record is consistent, but its bound was not recomputed)."""
    from ._certificate import (
        certificate_differences,
        data_difference,
        fingerprint_of,
        refit_obstacles,
    )

    method = certificate["method"]
    scores_column, labels_column, pos_label, file_format = _read_options(
        args, certificate
    )
    key = (scores_column, labels_column, pos_label, file_format)
    if key not in tables:
        frame = read_table(args.file, file_format)
        tables[key] = scores_and_labels(
            frame, scores_column, labels_column, args.file, pos_label
        )[:2]
    scores, labels = tables[key]
    cls = _verifiable()[method]
    # Validates the data as fit does.
    n, n_positive, digest = fingerprint_of(cls(), scores, labels)
    difference = data_difference(certificate, n, n_positive, digest)
    if difference is not None:
        return "fail", f"FAIL {method}: {args.file}: {difference}"
    data = f"data match (n={n}, sha256 {digest[:12]}...)"
    # A parameter added since the record was made: the value that reproduces what
    # the record's version computed (removing it from a newer record only makes
    # the refit compute the older form, whose numbers then differ).
    legacy = getattr(cls, "_params_of_older_records", {})
    certificate = dict(certificate, params={**legacy, **certificate["params"]})
    # Reproducible or not: from the params, never from the record's flag.
    obstacles, refused = refit_obstacles(certificate), None
    if not obstacles:
        params = dict(certificate["params"], pos_label=None)  # labels read as 0/1
        # The band fitted on chunks is the grid band (its terms count the cells).
        chunked = "n_cells" in certificate["terms"]
        estimator, why = _refit(cls, params, scores, labels, chunked)
        if estimator is not None:
            found = certificate_differences(certificate, estimator.certificate_)
            if found:
                return "fail", _differences_line(method, certificate, found)
            return "ok", (
                f"{method}: {data}; recomputed bound {estimator.bound_:.6g}, "
                f"lower_bound {estimator.lower_bound_:.6g} and "
                f"{len(estimator.terms_)} terms agree"
            )
        refused = why
    return _check_unrefittable(
        certificate, cls, (scores, labels), data, obstacles, refused
    )


def _check_unrefittable(certificate, cls, arrays, data, obstacles, refused):
    """``(status, line)`` for a record whose data (``arrays``) match, as ``data``
    says, but whose bound cannot be recomputed: ``obstacles`` (from its params), or
    a refit with its params ``refused`` (why). ``"fail"`` if it contradicts itself
    or a fit on stand-in folds, else ``"partial"``."""
    from ._certificate import (
        certificate_differences,
        consistency_problems,
        stand_in_params,
    )

    method = certificate["method"]
    problems = consistency_problems(certificate, obstacles)
    if problems:
        return "fail", f"FAIL {method}: the record contradicts itself: " + "; ".join(
            problems
        )
    reasons = [*obstacles]
    if refused is not None:
        reasons.append(f"cannot refit with its params: {refused}")
    checked = "terms add up to the bound, lower bound consistent"
    if refused is not None:
        checked += " (params and assumption as used not checked: they cannot be fit)"
    else:
        chunked = "n_cells" in certificate["terms"]
        stand_in, why = _refit(cls, stand_in_params(certificate), *arrays, chunked)
        if stand_in is None:
            checked += f" (params and assumption as used not checked: {why})"
        else:
            found = certificate_differences(
                certificate, stand_in.certificate_, drawn=False
            )
            if found:
                return "fail", _differences_line(method, certificate, found)
            checked += (
                ", params and assumption as used agree with a fit on stand-in folds"
            )
    return "partial", (
        f"{method}: {data}; {checked}; bound not recomputed ({'; '.join(reasons)})"
    )


def _verify(argv):
    """``skcalbound verify RECORD DATA``; returns the exit status."""
    args = build_verify_parser().parse_args(argv)
    try:
        certificates = read_certificates(args.record)
        tables = {}
        checked = [_check_one(c, args, tables) for c in certificates]
    except CLIError as exc:
        return _fail(exc)
    failed = [line for status, line in checked if status == "fail"]
    if failed:
        for line in failed:
            print(line, file=sys.stderr)
        return 1
    count = f"{len(checked)} certificate{'s' if len(checked) > 1 else ''}"
    lines = "; ".join(line for _, line in checked)
    if any(status == "partial" for status, _ in checked):
        print(
            f"PARTIAL {args.file} against {args.record} ({count}): fingerprint "
            f"matches, bound not recomputed: {lines}"
        )
        return PARTIAL_STATUS
    print(f"OK {args.file} against {args.record} ({count}): {lines}")
    return 0
