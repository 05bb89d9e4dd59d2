"""``skcalbound verify RECORD DATA``: check an audit record against a data file.

The data are read as the main command reads them and fingerprinted; a record whose
params can repeat its numbers is refit and compared whole; one that cannot is
checked as far as it can be and exits 3 (PARTIAL). See ``skcalbound verify --help``.
"""

import json
import re
import sys
import warnings
from pathlib import Path

from .. import __version__
from .._base import in_expectation_only, rejection
from .._binned_ece import binned_ece
from .._certificate import (
    RTOL,
    certificate_differences,
    consistency_problems,
    data_difference,
    fingerprint_of,
    record_differences,
    record_problem,
    refit_obstacles,
    stand_in_params,
)
from .._registry import BOUNDS
from ._errors import CLIError, fail
from ._parser import GUARANTEES
from ._read import read_table, scores_and_labels
from ._report import ece_row, gate, result_row, selection_note

# The exit status of a record whose data match but whose bound was not recomputed.
PARTIAL_STATUS = 3


def read_record(path):
    """``(report, certificates)`` of the JSON file ``path``: the command's ``--json``
    output and its certificates by bound name, or ``(None, {None: certificate})``
    for a bare one; CLIError if there are none."""

    path = Path(path)
    if not path.is_file():
        raise CLIError(f"{path}: no such file")
    try:
        record = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise CLIError(f"{path}: not a JSON file: {exc}") from exc
    report = None
    if isinstance(record, dict) and "results" in record:
        report, found = record, record.get("certificates")
        found = dict(found) if isinstance(found, dict) else {}
        if not found:
            raise CLIError(
                f"{path}: the report holds no certificates (written by an older "
                "skcalbound, or with --by?)"
            )
    else:
        found = {None: record}
    for certificate in found.values():
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
    return report, found


def _verifiable():
    """The bound classes a record can name, by class name (its ``method``)."""
    return {cls.__name__: cls for cls in BOUNDS}


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
    """``(status, line, refit)`` for one certificate against ``args.file``: status
    ``"ok"`` (``refit``: the estimator refitted with its params, the same
    certificate), ``"fail"`` or ``"partial"`` (data match and the record is
    consistent, but its bound was not recomputed); ``refit`` is None but for
    ``"ok"``. ``tables``: the data read so far, by read options."""

    method = certificate["method"]
    scores_column, labels_column, pos_label, file_format = _read_options(
        args, certificate
    )
    key = (scores_column, labels_column, pos_label, file_format)
    if key not in tables:
        frame = read_table(args.file, file_format)
        tables[key] = scores_and_labels(
            frame,
            scores_column,
            labels_column,
            args.file,
            pos_label,
            from_record=args.pos_label is None,
        )
    scores, labels, _ = tables[key]
    cls = _verifiable()[method]
    # Validates the data as fit does; its warnings (scores below chance, ...) were
    # the fit's, and are in the record's rows.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n, n_positive, digest = fingerprint_of(cls(), scores, labels)
    difference = data_difference(certificate, n, n_positive, digest)
    if difference is not None:
        return "fail", f"FAIL {method}: {args.file}: {difference}", None
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
                return "fail", _differences_line(method, certificate, found), None
            line = (
                f"{method}: {data}; recomputed bound {estimator.bound_:.6g}, "
                f"lower_bound {estimator.lower_bound_:.6g} and "
                f"{len(estimator.terms_)} terms agree"
            )
            return "ok", line, estimator
        refused = why
    status, line = _check_unrefittable(
        certificate, cls, (scores, labels), data, obstacles, refused
    )
    return status, line, None


def _check_unrefittable(certificate, cls, arrays, data, obstacles, refused):
    """``(status, line)`` for a record whose data (``arrays``) match, as ``data``
    says, but whose bound cannot be recomputed: ``obstacles`` (from its params), or
    a refit with its params ``refused`` (why). ``"fail"`` if it contradicts itself
    or a fit on stand-in folds, else ``"partial"``."""

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
    if "folds" in certificate:  # NW's default: per fold the smaller of two routes
        checked = "each fold's two routes give the bound and lower bound"
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


def _expected_row(name, certificate, refit):
    """The report's row of the bound ``name`` as its verified certificate gives it:
    the whole row from the ``refit`` estimator, or without one what the certificate
    records (the assumption in words needs the estimator). Its warnings are not
    compared."""
    if refit is not None:
        row = result_row(name, refit, [])
    else:
        cls = _verifiable()[certificate["method"]]
        guarantee = certificate.get("guarantee") or GUARANTEES[0]
        expectation = in_expectation_only(cls, guarantee)
        crossed = (certificate.get("assumption") or {}).get("monotonicity_rejected_")
        why = rejection(certificate["lower_bound"], certificate["bound"], crossed)
        row = {
            "method": name,
            "certified": not expectation and why is None,
            "assumption_rejected": why is not None,
            "rejection": why,
            "lower_bound": certificate["lower_bound"],
            "bound": certificate["bound"],
            "estimate": certificate["estimate"],
            "confidence_level": certificate["confidence_level"],
            "guarantee": guarantee,
            "in_expectation_only": expectation,
            "terms": certificate["terms"],
        }
    row.pop("warnings", None)
    return row


_ECE_BINS = re.compile(r"\((\d+) equal-width bins\)")


def _expected_ece_row(row, scores, labels):
    """The binned ECE's row recomputed on the data, at the number of bins the row
    states."""
    found = _ECE_BINS.search(str(row.get("assumption")))
    if found is None:
        return None
    n_bins = int(found.group(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the command's run showed them
        return ece_row(n_bins, binned_ece(labels, scores, n_bins=n_bins))


def report_problems(report, certificates, refits, data):
    """What the human-readable part of a ``--json`` ``report`` says against its
    verified ``certificates`` (by bound name; ``refits``: the refitted estimator of
    each, or None) and the ``data`` (scores, labels, positive label): every bound's
    row, the binned ECE, the note, the gate, the number of rows and the positive
    class. Empty when they agree."""
    scores, labels, positive = data
    rows = report.get("results")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return ["its results are not a list of rows"]
    named = [r.get("method") for r in rows]
    problems = [
        f"result {name!r} has no certificate"
        for name in named
        if name != "binned_ece" and name not in certificates
    ]
    problems += [
        f"certificate {name!r} has no result"
        for name in certificates
        if name not in named
    ]
    if len(set(named)) != len(named):
        problems.append("a method has two results")
    if problems:
        return problems
    expected = []
    for row in rows:
        name = row["method"]
        if name == "binned_ece":
            want = _expected_ece_row(row, scores, labels)
            if want is None:
                problems.append("the binned ECE's row does not say its bins")
                continue
        else:
            want = _expected_row(name, certificates[name], refits[name])
        expected.append({**row, **want})
        found = record_differences(row, want, f"results.{name}")
        problems += [
            f"{path} is {recorded!r}, the certificate says {wanted!r}"
            for path, recorded, wanted in found
        ]
    top = {"n_samples": int(scores.shape[0]), "positive_label": positive}
    found = record_differences(report, top)
    note = selection_note(expected)  # None for one bound: then there is none
    if report.get("note") != note:
        found.append(("note", report.get("note"), note))
    recorded_gate = report.get("gate")
    if recorded_gate is not None:
        max_ce = (
            recorded_gate.get("max_ce") if isinstance(recorded_gate, dict) else None
        )
        if not isinstance(max_ce, (int, float)) or isinstance(max_ce, bool):
            found.append(("gate.max_ce", max_ce, "a number"))
        else:
            found += record_differences(recorded_gate, gate(expected, max_ce), "gate")
    problems += [
        f"{path} is {recorded!r}, the data and certificates say {wanted!r}"
        for path, recorded, wanted in found
    ]
    return problems


def verify(args):
    """``skcalbound verify RECORD DATA`` (parsed ``args``); returns the exit status."""
    try:
        report, certificates = read_record(args.record)
        tables = {}
        checked = [_check_one(c, args, tables) for c in certificates.values()]
        problems = []
        if report is not None and not any(c[0] == "fail" for c in checked):
            refits = {name: c[2] for name, c in zip(certificates, checked)}
            data = tables[next(iter(tables))]
            problems = report_problems(report, certificates, refits, data)
    except CLIError as exc:
        return fail(exc)
    failed = [line for status, line, _ in checked if status == "fail"]
    if problems:
        failed.append(
            f"FAIL {args.record}: the report disagrees with its certificates: "
            + "; ".join(problems)
        )
    if failed:
        for line in failed:
            print(line, file=sys.stderr)
        return 1
    count = f"{len(checked)} certificate{'s' if len(checked) > 1 else ''}"
    if report is not None:
        count += f" and the report built on {'them' if len(checked) > 1 else 'it'}"
    lines = "; ".join(line for _, line, _ in checked)
    if any(status == "partial" for status, _, _ in checked):
        print(
            f"PARTIAL {args.file} against {args.record} ({count}): fingerprint "
            f"matches, bound not recomputed: {lines}"
        )
        return PARTIAL_STATUS
    print(f"OK {args.file} against {args.record} ({count}): {lines}")
    return 0
