"""The report of ``skcalbound FILE``: result rows, table, JSON, gate and plot.

Each fitted bound is asked what the report says of it: its ``label``, its
``assumption_text``, whether its guarantee holds in expectation only
(``_base.in_expectation_only``) and whether the data rejected its assumption.
"""

import json
import sys
import textwrap

from .._base import in_expectation_only
from .._registry import BY_NAME
from ._errors import CLIError
from ._parser import GUARANTEES

_WIDTH = 88


def assumption(est):
    """The assumption of a fitted bound, in words."""
    return type(est).assumption_text.format(**vars(est))


def _guarantee(est):
    """A bound's guarantee (a bound without the parameter has the default's)."""
    return getattr(est, "guarantee", GUARANTEES[0])


def result_row(name, est, caught):
    """One bound's row of the report (``caught``: the warnings of its fit).
    ``certified``: it holds with probability at least ``confidence_level``; false for
    a form that holds in expectation only, and when the data reject the assumption
    (``assumption_rejected``: a band that crosses, or an empty interval)."""
    expectation = in_expectation_only(est, _guarantee(est))
    why = est._rejection()
    return {
        "method": name,
        "certified": not expectation and why is None,
        "assumption_rejected": why is not None,
        "rejection": why,
        "lower_bound": float(est.lower_bound_),
        "bound": float(est.bound_),
        "estimate": float(est.estimate_),
        "confidence_level": float(est.confidence_level),
        "guarantee": _guarantee(est),
        "in_expectation_only": expectation,
        "assumption": assumption(est),
        "terms": {k: float(v) for k, v in est.terms_.items()},
        "warnings": list(
            dict.fromkeys(" ".join(str(w.message).split()) for w in caught)
        ),
    }


def ece_row(n_bins, ece):
    """The row of the binned ECE, shown for comparison (never gated)."""
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
        "rejection": None,
        "assumption": f"heuristic, not a bound ({n_bins} equal-width bins)",
        "terms": {},
        "warnings": [],
    }


def _bounds(results):
    """The rows that are bounds (certified or not), not the binned ECE."""
    return [r for r in results if r["bound"] is not None]


def selection_note(results):
    """With several bounds, why reporting the smallest is not certified, and the
    confidence level at which each must be computed for that; else None."""
    bounds = _bounds(results)
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


def _holds(r):
    """What a bound's interval holds with, in words."""
    level = f"{100 * r['confidence_level']:g}%"
    if r.get("assumption_rejected"):
        return (
            f"rejected by the data ({r['rejection']}): not certified, and never "
            "passes --max-ce"
        )
    if r["in_expectation_only"]:
        return (
            "paper's form: holds in expectation over the training labels, not with "
            f"probability >= {level}"
        )
    return f"holds with probability >= {level}"


def _bound_lines(r, width):
    """A bound's row, its terms and its warnings."""
    interval = f"[{r['lower_bound']:.6f}, {r['bound']:.6f}]"
    lines = [
        f"{BY_NAME[r['method']].label:<{width}}{interval:<22}{r['estimate']:>9.6f}  "
        f"{r['assumption']}; {_holds(r)}"
    ]
    for term, value in r["terms"].items():
        shown = f"{value:>10.6f}"
        if term.startswith("n_") and float(value).is_integer():  # a count
            shown = f"{int(value):>10d}"
        lines.append(f"  {term:<22}{shown}")
    for message in r["warnings"]:
        lines.extend(
            textwrap.wrap(
                f"warning: {message}",
                width=_WIDTH,
                initial_indent="  ",
                subsequent_indent="    ",
            )
        )
    return lines


def format_table(results, header):
    """The human-readable report: per bound its interval ``[lower, upper]``, the
    point estimate, its assumption and level, and the terms of the upper bound."""
    labels = [BY_NAME[r["method"]].label for r in _bounds(results)]
    w = max(len(label) + 2 for label in [*labels, "binned ECE"])
    lines = [header, ""]
    lines.append(f"{'method':<{w}}{'[lower, upper]':<22}{'estimate':>9}  assumption")
    for r in results:
        if r["bound"] is not None:
            lines += _bound_lines(r, w)
        else:
            lines.append(
                f"{'binned ECE':<{w}}{'-':<22}{r['estimate']:>9.6f}  {r['assumption']}"
            )
    note = selection_note(results)
    if note is not None:
        lines.append("")
        lines.extend(textwrap.wrap(f"Note: {note}", width=_WIDTH))
    return "\n".join(lines)


def gate(results, max_ce):
    """The ``--max-ce`` gate: passed iff every bound's upper bound is below ``max_ce``.

    Returns a dict with ``max_ce``, ``passed``, ``gated`` (the bounds compared),
    ``failed`` (those not below ``max_ce``, and a band that crosses: the data reject
    the assumption its interval needs, so it never passes) and the one-line
    ``verdict``.
    """
    bounds = _bounds(results)

    def below(r):
        return r["bound"] < max_ce and not r.get("assumption_rejected")

    def compared(r):
        sign = "<" if r["bound"] < max_ce else ">="
        text = f"{r['method']} upper bound {r['bound']:.6f} {sign} {max_ce:g}"
        if r.get("assumption_rejected"):
            text += f" but the data reject its assumption ({r['rejection']})"
        return text

    failed = [r for r in bounds if not below(r)]
    level = f"{100 * bounds[0]['confidence_level']:g}%"
    # The failing bounds first: they are the reason for the verdict.
    listed = "; ".join(compared(r) for r in failed + [r for r in bounds if below(r)])
    loose = [r["method"] for r in bounds if r["in_expectation_only"]]
    if not failed:
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
        "passed": not failed,
        "gated": [r["method"] for r in bounds],
        "failed": [r["method"] for r in failed],
        "verdict": verdict,
    }


def source(args):
    """How the command read its data, stored with each certificate for ``verify``."""
    return {
        "file": str(args.file),
        "scores_column": args.scores,
        "labels_column": args.labels,
        "pos_label": args.pos_label,
        "format": args.format,
    }


def print_json(args, run, verdict):
    """The JSON report of a ``Run`` (stdout stays pure JSON: the verdict goes to
    stderr)."""
    report = {
        "file": str(args.file),
        "n_samples": int(run.n_samples),
        "scores_column": args.scores,
        "labels_column": args.labels,
        "positive_label": run.positive,
        "guarantee": args.guarantee,
        "results": run.results,
    }
    if args.chunksize is not None:
        report["chunksize"] = int(args.chunksize)
    note = selection_note(run.results)
    if note is not None:
        report["note"] = note
    # Each bound's audit record, for ``skcalbound verify``.
    report["certificates"] = {
        name: {**est.certificate_, "source": source(args)}
        for name, est in run.estimators.items()
    }
    if args.plot is not None:
        report["plot"] = str(args.plot)
    if verdict is not None:
        report["gate"] = verdict
    print(json.dumps(report, indent=2))
    if verdict is not None:
        print(verdict["verdict"], file=sys.stderr)


def print_table(args, run, verdict):
    """The table report of a ``Run``, then the plot's path and the verdict."""
    header = (
        f"{args.file}: {run.n_samples} scores (column {args.scores!r}), labels "
        f"(column {args.labels!r}, positive class {run.positive!r}); cv={args.cv}, "
        f"aggregate={args.aggregate}, guarantee={args.guarantee}, "
        f"random_state={args.random_state}"
    )
    for name, est in run.estimators.items():
        if not est._has_folds():  # the monotone band, TV's cell bound
            header += f" ({name}: one fit on all rows, no folds)"
    if args.chunksize is not None:
        header += f"; read in chunks of {args.chunksize} rows"
    print(format_table(run.results, header))
    if args.plot is not None:
        print(f"\nreliability plot written to {args.plot}")
    if verdict is not None:
        print(f"\n{verdict['verdict']}")


def write_plot(path, estimators, scores, title=None):
    """One panel per fitted bound (its display), side by side, saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .._display import CalibrationBoundDisplay

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
    for k, (ax, est) in enumerate(zip(axes[0], estimators.values())):
        CalibrationBoundDisplay.from_bound(est, scores, ax=ax, color=f"C{k}")
        ax.set_title(f"{type(est).label} bound\n{assumption(est)}", fontsize="medium")
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
