"""The command line's parser: ``skcalbound FILE ...`` and ``skcalbound verify ...``.

Two argparse subcommands: ``verify``, and ``certify``, which nobody types (arguments
not starting with ``verify`` are certify's: ``skcalbound FILE``). Parsing imports no
scikit-learn or pandas, so that ``--help`` and ``--version`` stay fast; the bound
names are checked after parsing.
"""

import argparse
import math
import re
from importlib.metadata import PackageNotFoundError, version

from .. import __version__, _guarantee
from ._errors import PROG
from ._help import DESCRIPTION, EPILOG, VERIFY_DESCRIPTION, VERIFY_EPILOG

GUARANTEES = tuple(_guarantee.GUARANTEES)  # the default first
CERTIFY, VERIFY = "certify", "verify"

# Rows per chunk when the command streams a file without --chunksize: half of
# pyarrow's default row group (benchmarks/bench_cli_memory.py measures the peak).
CHUNK_ROWS = 2**19


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


def _certify_arguments(parser):
    """The arguments of ``skcalbound FILE``."""
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
        default=GUARANTEES[0],
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
        "--noise",
        choices=("adaptive", "worst_case"),
        default=None,
        help="nw, lipschitz: how --guarantee high_probability pays for the label "
        "noise: by its variance, from a pilot estimate (adaptive, much tighter for "
        "rare events; nw's default) or at its worst (worst_case, lipschitz's "
        "default); unused with --guarantee paper",
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
        help="number of cross-fitting folds of nw, lipschitz and, with --guarantee "
        "paper, tv (default: %(default)s); monotone and tv's cell bound (its "
        "default) fit once on all rows",
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


def _verify_arguments(parser):
    """The arguments of ``skcalbound verify RECORD FILE``."""
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


def _subcommands():
    """The root parser and ``{name: parser}`` of its subcommands."""
    root = argparse.ArgumentParser(prog=PROG)
    commands = root.add_subparsers(dest="command", required=True)
    texts = {
        CERTIFY: (PROG, DESCRIPTION, EPILOG),
        VERIFY: (f"{PROG} {VERIFY}", VERIFY_DESCRIPTION, VERIFY_EPILOG),
    }
    parsers = {}
    for name, add in ((CERTIFY, _certify_arguments), (VERIFY, _verify_arguments)):
        prog, description, epilog = texts[name]
        parsers[name] = commands.add_parser(
            name,
            prog=prog,
            description=description,
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add(parsers[name])
    return root, parsers


def build_parser(command=CERTIFY):
    """The argument parser of one subcommand (``docs/conf.py`` prints its help)."""
    return _subcommands()[1][command]


def parse_args(argv):
    """The parsed ``argv``; ``args.command`` names the subcommand. Without
    ``verify`` first, the arguments are ``certify``'s (a data file called verify is
    given as ./verify). Argparse's error (exit status 2) for a bad option or bound."""
    root, parsers = _subcommands()
    argv = list(argv)
    if argv[:1] != [VERIFY]:
        argv.insert(0, CERTIFY)
    args, extra = root.parse_known_args(argv)
    parser = parsers[args.command]
    if extra:  # the subcommand's usage in the message, not the root's
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == CERTIFY:
        _check_bound_names(parser, args.bound)
    return args


def _check_bound_names(parser, names):
    """--bound's names, checked against the registry (after parsing: ``--version``
    imports no bound)."""
    from .._registry import BY_NAME

    for name in names or ():
        if name not in BY_NAME:
            choices = ", ".join(map(repr, BY_NAME))
            parser.error(
                f"argument --bound: invalid choice: {name!r} (choose from {choices})"
            )
