"""``skcalbound FILE --by COLUMN``: one certified interval per segment, per bound.

Each bound's table is ``bounds_by_group``'s (the whole file as its last row), with
the union-bound note that makes all rows hold together.
"""

import json
import math
import textwrap
import warnings

from .._groups import bounds_by_group
from .._registry import BY_NAME
from .._warnings import VacuousBoundWarning
from ._bounds import estimators
from ._errors import CLIError
from ._read import check_column, plain


def compute_by(args, frame, scores, labels):
    """The per-segment table of each bound and its warnings (for the report, not
    stderr; the vacuous ones are the table's column), each by bound name."""
    check_column(frame.columns, args.by, "--by", args.file)
    groups = frame[args.by]
    missing = groups.isna().to_numpy()
    if missing.any():  # bounds_by_group's message speaks of groups.fillna
        first = int(missing.argmax())
        raise CLIError(
            f"--by {args.by}: column {args.by!r} of {args.file} has "
            f"{int(missing.sum())} missing value(s), the first in data row {first} "
            "(counted from 0 after the header); give them a segment of their own "
            "(e.g. the text 'missing') or drop those rows"
        )
    tables, notices = {}, {}
    for name, est in estimators(args).items():
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
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
        _refuse_if_no_segment_has_a_bound(args, tables[name], groups)
        # The library's advice in the command's terms.
        notices[name] = list(
            dict.fromkeys(
                " ".join(str(w.message).split()).replace("method='tv'", "--bound tv")
                for w in caught
            )
        )
    return tables, notices


def _refuse_if_no_segment_has_a_bound(args, table, groups):
    """A table whose every segment lacks a bound (a continuous column: one segment
    per distinct value) says nothing but the whole file's row: refused, with what
    ``--by`` groups by."""
    segments = table.iloc[:-1]  # the last row is the whole file
    if segments["upper_bound"].notna().any() or segments.shape[0] < 2:
        return
    largest = int(groups.value_counts().iloc[0])
    raise CLIError(
        f"--by {args.by}: none of the {segments.shape[0]} segments of column "
        f"{args.by!r} gets a bound (each has too few rows or a single class; the "
        f"largest has {largest} row{'s' if largest != 1 else ''}): --by makes one "
        "segment per distinct value; for a continuous column, bin it into a column "
        "of its own first (e.g. deciles)"
    )


def by_note(table, n_tables):
    """The table's note, and the union bound over several tables."""
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
                value = plain(value)
                if isinstance(value, float) and math.isnan(value):
                    value = None
                row[key] = value
            rows.append(row)
    return rows


def _segment_line(r):
    if not math.isnan(r["upper_bound"]):  # certified or in expectation only
        interval = f"[{r['lower_bound']:.6f}, {r['upper_bound']:.6f}]"
        plug_in = f"{r['estimate']:.6f}"
        vacuous = " (vacuous: above 0.5)" if r["vacuous"] else ""
        status = r["status"] + vacuous
    else:
        interval, plug_in, status = "-", "-", r["status"]
    ece = "-" if math.isnan(r["binned_ece"]) else f"{r['binned_ece']:.6f}"
    return (
        f"{str(plain(r['group'])):<16}{r['n']:>8}{r['n_positive']:>8}  "
        f"{interval:<22}{plug_in:>9}{ece:>9}  {status}"
    )


def format_by_table(tables, notices, header, column):
    """The ``--by`` report: per bound, one row per segment, worst first, then its
    warnings and its note."""
    lines = [header]
    for name, table in tables.items():
        lines += [
            "",
            f"{BY_NAME[name].label} bound by {column!r} (worst first; '(all)' is "
            "the whole file):",
        ]
        lines.append(
            f"{'group':<16}{'n':>8}{'n_pos':>8}  {'[lower, upper]':<22}"
            f"{'estimate':>9}{'ECE':>9}  status"
        )
        lines += [_segment_line(r) for r in table.to_dict("records")]
        for message in notices[name]:
            lines += textwrap.wrap(
                f"warning: {message}", width=88, subsequent_indent="  "
            )
        lines.extend(textwrap.wrap(f"Note: {by_note(table, len(tables))}", width=88))
    return "\n".join(lines)


def report_by(args, frame, scores, labels, positive):
    """Print the ``--by`` report (table or JSON); returns the exit status."""
    for option, value in (("--max-ce", args.max_ce), ("--plot", args.plot)):
        if value is not None:
            raise CLIError(f"{option} cannot be combined with --by")
    tables, notices = compute_by(args, frame, scores, labels)
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
                name: by_note(table, len(tables)) for name, table in tables.items()
            },
            "warnings": notices,
        }
        print(json.dumps(report, indent=2))
    else:
        header = (
            f"{args.file}: {scores.shape[0]} scores (column {args.scores!r}), labels "
            f"(column {args.labels!r}, positive class {positive!r}), segments by "
            f"column {args.by!r}; cv={args.cv}, aggregate={args.aggregate}, "
            f"guarantee={args.guarantee}, random_state={args.random_state}"
        )
        print(format_by_table(tables, notices, header, args.by))
    return 0
