"""Right-continuous step functions on [0, 1], the form of the TV surrogate."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StepFunction:
    """``f(s) = values[k]`` for ``knots[k] <= s < knots[k + 1]``; ``values[0]`` below.

    ``knots`` are strictly increasing and ``values[k] != values[k + 1]``: one entry per
    constant piece, so the object stays small however many points were fitted.
    """

    knots: np.ndarray
    values: np.ndarray

    def __call__(self, scores):
        k = np.searchsorted(self.knots, scores, side="right") - 1
        return self.values[np.maximum(k, 0)]

    def evaluate_sorted(self, sorted_scores):
        """Like calling the function, for nondecreasing scores, in O(n + pieces log n).

        One binary search per knot instead of one per score: the pieces are few.
        """
        bounds = np.searchsorted(sorted_scores, self.knots[1:], side="left")
        counts = np.diff(bounds, prepend=0, append=sorted_scores.shape[0])
        return np.repeat(self.values, counts)

    @property
    def total_variation(self):
        """Sum of the absolute jumps."""
        return float(np.abs(np.diff(self.values)).sum())


def tie_block_starts(sorted_scores):
    """Start positions of the runs of equal values in a sorted vector."""
    change = np.flatnonzero(sorted_scores[1:] != sorted_scores[:-1]) + 1
    return np.concatenate(([0], change))


def _piece_starts(values):
    return np.concatenate(([0], np.flatnonzero(values[1:] != values[:-1]) + 1))


def _clipped_step(knots, values):
    """A step function with values clipped to [0, 1] (against rounding only)."""
    values = np.clip(values, 0.0, 1.0)
    first = _piece_starts(values)
    return StepFunction(knots=knots[first], values=values[first])


def step_from_block_values(sorted_scores, starts, block_values):
    """Compress one value per tie block into a :class:`StepFunction`."""
    first = _piece_starts(block_values)
    return _clipped_step(sorted_scores[starts[first]], block_values[first])


def step_from_point_values(sorted_scores, values):
    """Compress per-point values (distinct sorted scores) into a ``StepFunction``."""
    first = _piece_starts(values)
    return _clipped_step(sorted_scores[first], values[first])
