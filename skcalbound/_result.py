"""Aggregation of fold bounds into the certified result (SPEC section 2)."""

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class FoldResult:
    """One fold: additive ``terms`` (their sum is the unclipped fold bound) and ``info``
    (scalars, one column each of ``fold_results_``); ``extra`` holds anything else a
    method reports (arrays), kept out of the frame."""

    terms: dict
    info: dict
    estimate: float
    extra: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def bound(self):
        return float(sum(self.terms.values()))


@dataclass(frozen=True)
class BoundResult:
    """A certified upper bound on the L1 calibration error, with its parts.

    Attributes
    ----------
    bound : float
        ``min(aggregate of the unclipped fold bounds, 1)``; holds with probability at
        least ``confidence_level``.
    estimate : float
        Mean over folds of the plug-in estimate (not certified).
    terms : dict
        Named additive components of the aggregate, before clipping.
    folds : tuple of FoldResult
    aggregate : str
    confidence_level : float
    """

    bound: float
    estimate: float
    terms: dict
    folds: tuple = field(repr=False)
    aggregate: str
    confidence_level: float

    def fold_frame(self):
        """One row per fold: sizes, every term, the unclipped bound and diagnostics."""
        rows = []
        for k, fold in enumerate(self.folds):
            rows.append(
                {"fold": k, **fold.info, "estimate": fold.estimate, **fold.terms,
                 "bound": fold.bound}
            )
        return pd.DataFrame(rows).set_index("fold")


def aggregate_folds(folds, aggregate, confidence_level):
    """Combine fold results; every fold was computed at ``delta / len(folds)``.

    By the union bound all fold bounds hold simultaneously with probability at least
    ``1 - delta``, so their mean and their minimum are both certified.
    """
    bounds = np.array([f.bound for f in folds])
    if aggregate == "mean":
        terms = {name: float(np.mean([f.terms[name] for f in folds])) for name in folds[0].terms}
        raw = float(np.mean(bounds))
    elif aggregate == "min":
        best = folds[int(np.argmin(bounds))]
        terms = dict(best.terms)
        raw = best.bound
    else:  # pragma: no cover - parameter validation rejects it earlier
        raise ValueError(f"Unknown aggregate {aggregate!r}.")
    return BoundResult(
        bound=min(raw, 1.0),
        estimate=float(np.mean([f.estimate for f in folds])),
        terms=terms,
        folds=tuple(folds),
        aggregate=aggregate,
        confidence_level=confidence_level,
    )
