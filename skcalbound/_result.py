"""Aggregation of fold bounds into the certified result (SPEC sections 2 and 11)."""

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class FoldResult:
    """One fold: additive ``terms`` (their sum is the unclipped fold bound unless
    ``upper`` is given), ``estimate`` (the fold's plug-in ``validation_mean``, the
    ``estimate`` column of ``fold_results_``; not the estimator's ``estimate_``) and
    ``info`` (scalars, one column each of ``fold_results_``); ``extra`` holds anything
    else a method reports (arrays), kept out of the frame.

    ``lower`` is the fold's certified lower bound before clipping at 0 (SPEC section
    11). When not given it is ``validation_mean - (every other term)``: the two-sided
    Bernstein event that gives ``E r <= mean r + BB`` also gives ``E r >= mean r - BB``,
    and ``CE >= E|s - eta_hat| - E|eta_hat - eta|``, whose last part the remaining
    terms bound. A method that picks its upper and lower bounds among several
    candidates passes ``lower`` explicitly, and ``upper`` when its upper bound is
    not the sum of ``terms`` (SPEC 13: the smaller of two routes, ``terms`` the
    first route's).
    """

    terms: dict
    info: dict
    estimate: float
    extra: dict = field(default_factory=dict, repr=False, compare=False)
    lower: float = None
    upper: float = None

    @property
    def bound(self):
        if self.upper is not None:
            return float(self.upper)
        return float(sum(self.terms.values()))

    @property
    def lower_bound(self):
        if self.lower is not None:
            return float(self.lower)
        return 2.0 * float(self.terms["validation_mean"]) - self.bound


@dataclass(frozen=True)
class BoundResult:
    """An upper bound on the L1 calibration error, with its parts: certified (it holds
    with probability at least ``confidence_level``) unless ``in_expectation_only``.

    Attributes
    ----------
    bound : float
        ``min(aggregate of the unclipped fold bounds, 1)``; holds with probability at
        least ``confidence_level`` (only in expectation if ``in_expectation_only``).
    lower_bound : float
        ``max(aggregate of the unclipped fold lower bounds, 0)``; holds jointly with
        ``bound`` (the same event).
    estimate : float
        The point estimate of the calibration error (``_estimate``; not
        certified). :func:`aggregate_folds` gives the mean of the folds' plug-in
        ``mean |s - eta_hat(s)|`` (``validation_mean``); the estimators replace it
        with the estimate of ``_estimate``.
    terms : dict
        Named additive components of the aggregate, before clipping.
    folds : tuple of FoldResult
    aggregate : str
    confidence_level : float
    guarantee : str
        The estimator's ``guarantee``: ``'high_probability'`` or ``'paper'``.
    in_expectation_only : bool
        True for the published form of the NW and Lipschitz bounds
        (``guarantee='paper'``), which holds only in expectation over the training
        labels, not with probability ``confidence_level``: not certified.
    lower_terms : dict or None
        For methods whose fold lower bound has its own table (SPEC 13's triangle
        route, ``extra["lower_terms"]`` or, from another candidate,
        ``extra["lower_from"]``): those tables aggregated as ``lower_bound`` is (their
        mean, or the table of the fold with the largest lower bound), so that
        ``lower_bound = max(0, 2 * validation_mean - sum of lower_terms)``; else None.
    """

    bound: float
    lower_bound: float
    estimate: float
    terms: dict
    folds: tuple = field(repr=False)
    aggregate: str
    confidence_level: float
    guarantee: str = "high_probability"
    in_expectation_only: bool = False
    lower_terms: dict = None

    def fold_frame(self):
        """One row per fold: sizes, every term, the unclipped bound and diagnostics."""
        rows = [
            {
                **fold.info,
                "estimate": fold.estimate,
                **fold.terms,
                "bound": fold.bound,
                "lower_bound": fold.lower_bound,
            }
            for fold in self.folds
        ]
        # Column by column: a frame from a list of dicts is slow, a sizeable part of a
        # fit at 10**3 rows; every fold has the same columns.
        return pd.DataFrame(
            {name: [row[name] for row in rows] for name in rows[0]},
            index=pd.RangeIndex(len(rows), name="fold"),
        )


def aggregate_folds(
    folds,
    aggregate,
    confidence_level,
    *,
    warn=True,
    guarantee="high_probability",
    in_expectation_only=False,
):
    """Combine fold results; every fold was computed at ``delta / len(folds)``.

    By the union bound all fold bounds hold simultaneously with probability at least
    ``1 - delta``, so their mean and their minimum are both certified; likewise the
    mean and the maximum of the fold lower bounds, on the same event.

    A certificate is a number: a non-finite term is an error, never a result.
    """
    for k, fold in enumerate(folds):
        values = {**fold.terms, "lower bound": fold.lower_bound}
        bad = {name: v for name, v in values.items() if not math.isfinite(v)}
        if bad:
            raise FloatingPointError(
                f"Fold {k} produced a non-finite {', '.join(bad)} ({bad}); a certified "
                "bound cannot rest on it. This happens only with extreme settings (a "
                "kernel bandwidth or tempering at which the smoother's weights "
                "underflow); use less extreme values."
            )
    bounds = np.array([f.bound for f in folds])
    lowers = np.array([f.lower_bound for f in folds])
    if aggregate == "mean":
        terms = {
            name: float(np.mean([f.terms[name] for f in folds]))
            for name in folds[0].terms
        }
        raw = float(np.mean(bounds))
    elif aggregate == "min":
        best = folds[int(np.argmin(bounds))]
        terms = dict(best.terms)
        raw = best.bound
    else:  # pragma: no cover - parameter validation rejects it earlier
        raise ValueError(f"Unknown aggregate {aggregate!r}.")
    lower = float(np.mean(lowers)) if aggregate == "mean" else float(np.max(lowers))
    lower_terms = _lower_tables(folds, aggregate, lowers)
    bound, lower = min(raw, 1.0), max(lower, 0.0)
    if warn and lower > bound:
        # Both hold on one event of probability >= confidence_level: an empty interval
        # means that event failed or the assumption on eta is false.
        if in_expectation_only:
            why = (
                "With guarantee='paper' they hold only in expectation over the "
                f"training labels, not with probability at least {confidence_level}, "
                "so either they failed on these training labels (the paper's form "
                "does not make that rare)"
            )
        else:
            why = (
                f"Both hold together with probability at least {confidence_level}, "
                "so either a rare event occurred"
            )
        word = "" if in_expectation_only else "certified "
        warnings.warn(
            f"The {word}interval is empty: lower bound {lower:.6g} > upper bound "
            f"{bound:.6g}. {why} or the assumption on the calibration function (V, "
            "h, b1, b2 or L) does not hold for these scores.",
            UserWarning,
            stacklevel=3,
        )
    return BoundResult(
        bound=bound,
        lower_bound=lower,
        estimate=float(np.mean([f.estimate for f in folds])),
        terms=terms,
        folds=tuple(folds),
        aggregate=aggregate,
        confidence_level=confidence_level,
        guarantee=guarantee,
        in_expectation_only=bool(in_expectation_only),
        lower_terms=lower_terms,
    )


def _lower_tables(folds, aggregate, lowers):
    """The tables of the folds' lower bounds aggregated as the lower bound is, or None
    when a fold has none (see :attr:`BoundResult.lower_terms`)."""
    if not all("lower_terms" in fold.extra for fold in folds):
        return None
    tables = [fold.extra.get("lower_from", fold.extra["lower_terms"]) for fold in folds]
    if aggregate == "min":
        return {k: float(v) for k, v in tables[int(np.argmax(lowers))].items()}
    return {k: float(np.mean([table[k] for table in tables])) for k in tables[0]}
