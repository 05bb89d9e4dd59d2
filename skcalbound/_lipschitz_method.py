"""The Lipschitz bucketing method of the fold loop: box weights with the
certificate of SPEC section 10 or 13, or Proposition 2 as published."""

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._base import FoldTerms, Passes, _BoundMethod
from ._guarantee import guarantee_of
from ._passes import run
from ._surrogates.buckets._candidates import candidate_grids
from ._surrogates.buckets._model import BucketGrid, Chosen
from ._surrogates.buckets._surrogate import BucketSurrogate
from ._terms import adaptive_terms, high_probability_terms, nw_bound_terms

# The paper's candidate bucket counts (Appendix E): 2, 4, ..., 4096.
DEFAULT_N_BUCKETS = tuple(2**k for k in range(1, 13))

# SPEC 13's triangle route after validation_mean: columns of fold_results_.
_TRIANGLE = ("bernstein_residual", "smoothing_bound", "smoothing_transfer")


def _n_validation(sums):
    return sums.n if isinstance(sums, Chosen) else sums[0].n


def _moments(total, square, n):
    mean = total / n
    return mean, max(square / n - mean * mean, 0.0)


@dataclass(frozen=True)
class _LipschitzMethod(_BoundMethod):
    """Box weights with the certificate of SPEC section 10 (or Proposition 2 as
    published, ``guarantee="paper"``): every candidate at ``delta / n_candidates``."""

    L: float
    n_buckets: tuple
    n_shifts: int
    guarantee: str = "high_probability"
    noise: str = "worst_case"
    h: float = None
    min_train = 1
    mergeable = True

    @property
    def _adaptive(self):
        """SPEC 13 with bucket weights (``noise="adaptive"``, high-probability)."""
        return self.noise == "adaptive" and not self._published

    @property
    def _published(self):
        """Proposition 2 as published (its certificate reads the sums of
        ``min(g, 1)**2``), else the high-probability one (it reads ``C2``)."""
        return guarantee_of(self.guarantee).published

    def _terms(self, sums, delta_c):
        n = sums.n
        residual = _moments(sums.sum_r, sums.sum_r2, n)
        if self._published:
            smoothing = _moments(sums.sum_g, sums.sum_g2, n)
            return nw_bound_terms(int(n), residual, smoothing, delta_c)
        return high_probability_terms(
            int(n), residual, sums.sum_g / n, sums.c2, delta_c
        )

    def _grid(self):
        return BucketGrid(
            self.n_buckets,
            self.n_shifts,
            self.L,
            squares=self._published,
            c2=not self._published,
            min_train=self.min_train,
            noise="adaptive" if self._adaptive else "worst_case",
            h=self.h,
        )

    def fold_terms(self, statistics, delta):
        """The terms of the best candidate, all candidates' bounds in ``extra``.

        ``statistics`` holds, per candidate, its ``CandidateSums`` (``n``, ``sum_r``,
        ``sum_r2``, ``sum_g``, ``sum_g2``, ``n_fallback``, ``c2``); the sum of
        ``g~**2`` (read in paper mode only) is None in high-probability mode and
        ``C2`` (high-probability mode only) in paper mode.
        The upper bound is the smallest candidate upper bound and the lower bound the
        largest candidate lower bound: every candidate holds at ``delta /
        n_candidates``, so all hold at once.
        """
        candidates = candidate_grids(self.n_buckets, self.n_shifts)[0]
        if isinstance(statistics, Chosen):
            return self._adaptive_fold_terms(statistics, delta, candidates)
        delta_c = delta / len(candidates)  # union bound over the candidates
        all_terms = [self._terms(sums, delta_c) for sums in statistics]
        bounds = np.array([sum(terms.values()) for terms in all_terms])
        lowers = np.array(
            [2.0 * terms["validation_mean"] - b for terms, b in zip(all_terms, bounds)]
        )
        best = int(np.argmin(bounds))  # ties: the fewest buckets, the smallest shift
        B, r = candidates[best]
        info = {
            "n_buckets": int(B),
            "shift": int(r),
            "n_candidates": len(candidates),
            "n_fallback": int(statistics[best].n_fallback),
        }
        if not self._published:
            info["sum_c_squared"] = float(statistics[best].c2)
        return FoldTerms(
            all_terms[best], info, float(np.max(lowers)), {"candidate_bounds": bounds}
        )

    @staticmethod
    def _adaptive_fold_terms(statistics, delta, candidates):
        """SPEC 13 for the evaluated candidates, each at ``delta / n_candidates``
        (the union bound over every candidate, evaluated or not): the smallest upper
        bound (its candidate's two routes' tables) and the largest lower bound (its
        candidate's triangle table in ``lower_from`` when that is another one)."""
        delta_c = delta / statistics.n_candidates
        outs = [adaptive_terms(s, delta_c) for s in statistics.statistics]
        k = int(np.argmin([out["upper"] for out in outs]))
        low = int(np.argmax([out["lower"] for out in outs]))
        out, best = outs[k], statistics.statistics[k]
        bounds = np.full(len(candidates), np.inf)
        bounds[list(statistics.indices)] = [o["upper"] for o in outs]
        B, r = candidates[statistics.indices[k]]
        B_low, r_low = candidates[statistics.indices[low]]
        lower_terms = out["lower_terms"]
        extra = {"candidate_bounds": bounds, "lower_terms": lower_terms}
        if low != k:
            extra["lower_from"] = outs[low]["lower_terms"]
        info = {
            "n_buckets": int(B),
            "shift": int(r),
            "lower_n_buckets": int(B_low),
            "lower_shift": int(r_low),
            "n_candidates": len(candidates),
            "n_evaluated": len(outs),
            "n_fallback": int(best.n_fallback),
            "n_relative": int(best.n_relative),
            "sum_c_squared": float(best.sum_c_squared),
            "route": out["route"],
            **{k: v for k, v in lower_terms.items() if k in _TRIANGLE},
        }
        return FoldTerms(
            out["upper_terms"],
            info,
            lower=outs[low]["lower"],
            extra=extra,
            upper=out["upper"],
        )

    def passes(self, source, design, *, delta, key_seed, check=None, check_counts=None):
        fit = run(self._grid(), source, design, check=check, check_counts=check_counts)
        splits = tuple(
            (
                sums if isinstance(sums, Chosen) else tuple(sums),
                {"n_train": int(m), "n_validation": int(_n_validation(sums))},
            )
            for sums, m in zip(fit.sums, fit.n_train)
        )
        return Passes(splits, fit.n_positive, (fit.totals, fit.n_samples))

    def surrogate(self, passes, folds, source, delta):
        """Every candidate on all rows (the first design's groups cover every row),
        using the candidate with the smallest mean bound over the folds, chosen before
        the surrogate is built."""
        totals, n_samples = passes[0].refit
        best = self._candidate_bounds(folds)[1]
        return BucketSurrogate(totals, self.n_buckets, self.n_shifts, best, n_samples)

    @staticmethod
    def _candidate_bounds(folds):
        """Per fold and candidate bucketing, the fold bound; the index of the
        candidate with the smallest mean over folds (what ``predict`` uses)."""
        bounds = np.stack([fold.extra["candidate_bounds"] for fold in folds])
        # SPEC 13 evaluates a few candidates per fold (the others are inf): the
        # candidate evaluated in the most folds, then the smallest mean over them.
        finite = np.isfinite(bounds)
        missing = (~finite).sum(axis=0)
        mean = np.where(finite, bounds, 0.0).sum(axis=0) / np.maximum(
            finite.sum(axis=0), 1
        )
        return bounds, int(np.lexsort((mean, missing))[0])

    def held_out(self, surrogate, scores, labels=None):
        if self._adaptive:
            chosen = self._grid().held_out(surrogate.totals, scores, labels)
            info = {
                "n_train": int(surrogate.n_train),
                "n_validation": int(scores.shape[0]),
            }
            return chosen, info
        published = self._published
        sums = surrogate.all_sums(scores, self.L, squares=published, c2=not published)
        info = {"n_train": int(surrogate.n_train), "n_validation": int(scores.shape[0])}
        return tuple(sums), info

    def fitted_attributes(self, surrogate, folds, key_seed):
        bounds, best = self._candidate_bounds(folds)  # the surrogate's candidate
        mean = bounds.mean(axis=0)
        B, r = np.array(surrogate.candidates, dtype=np.int64).reshape(-1, 2).T
        columns = {"n_buckets": B, "shift": r}
        columns.update((f"fold{k}_bound", bounds[k]) for k in range(bounds.shape[0]))
        columns["mean_bound"] = mean
        frame = pd.DataFrame(columns)  # one constructor call, not one per column
        B, r = surrogate.candidates[best]
        return {"L_": self.L, "candidates_": frame, "n_buckets_": B, "shift_": r}
