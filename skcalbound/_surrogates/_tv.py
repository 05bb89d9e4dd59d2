"""Total-variation denoising surrogate (paper section 4, SPEC section 3).

The only module that imports ``prox_tv``. Inputs are assumed validated and sorted.
"""

from dataclasses import dataclass

import numpy as np

from ._step import (
    StepFunction,
    step_from_block_values,
    step_from_point_values,
    tie_block_starts,
)

try:
    import prox_tv as _prox_tv
except ImportError as exc:  # pragma: no cover - exercised only on broken installs
    _prox_tv = None
    _PROX_TV_ERROR = exc
else:
    _PROX_TV_ERROR = None


def _tv1_1d(y, weight, out):
    """1-D TV prox of ``y`` with weight ``weight``, written into ``out`` if given."""
    if _prox_tv is None:
        raise ImportError(
            "TVCalibrationBound needs the 'prox-tv' package, which failed to import "
            f"({_PROX_TV_ERROR}). prox-tv is compiled against the system LAPACKE "
            "library: on Debian/Ubuntu run `apt-get install liblapacke-dev` (as root), "
            "then `pip install --force-reinstall --no-cache-dir prox-tv`."
        ) from _PROX_TV_ERROR
    # The classic taut string is exact and, on label vectors, the fastest of
    # prox-tv's solvers (faster than the default).
    # ``tv1_1d`` allocates its output; its solver wrapper writes into ours, which saves
    # a fresh 8m-byte array per fold (tests check both give the same solution).
    solver = getattr(_prox_tv, "_classictautstring_TV1", None)
    if out is None or solver is None:
        return _prox_tv.tv1_1d(y, weight, method="classictautstring")
    solver(np.ascontiguousarray(y, dtype=np.float64), float(weight), out)
    return out


@dataclass(frozen=True)
class TVSurrogate:
    """The fitted TV surrogate: a step function and the size of its training set.

    The denoised labels the bound is computed from, not a recalibration map: the
    denoising pulls the step function towards a constant, which flattens both ends.
    """

    step: StepFunction
    n_train: int
    weight: float

    def __call__(self, scores):
        return self.step(scores)

    def evaluate_sorted(self, sorted_scores):
        return self.step.evaluate_sorted(sorted_scores)

    @property
    def total_variation(self):
        return self.step.total_variation


def fit_tv_surrogate(sorted_scores, sorted_labels, weight, out=None, tied=None):
    """Solve the 1-D TV prox on labels in stable score order and average over ties.

    Parameters
    ----------
    sorted_scores : ndarray of shape (m,)
        Training scores, sorted by a stable sort (tie order independent of labels).
    sorted_labels : ndarray of shape (m,)
        Their labels in {0, 1}, float64.
    weight : float
        The prox weight :math:`t_2`; problem (2) with :math:`\\lambda = t_2 / m`.
    out : ndarray of shape (m,), float64, default=None
        Contiguous scratch buffer for the prox solution; not referenced afterwards.
    tied : bool, default=None
        Whether some scores are equal, if the caller knows (``False`` for a subset
        of distinct scores); None: look.

    Returns
    -------
    TVSurrogate
        The surrogate: on each tie block the mean of the block's prox values, extended
        to all of [0, 1] by the block at the largest training score ``<= s``.
    """
    fitted = _tv1_1d(sorted_labels, weight, out)
    # The prox of a vector in [0, 1]^m stays in [0, 1]^m; the step function clips its
    # (few) piece values against rounding.
    if tied is None:
        tied = bool(np.any(sorted_scores[1:] == sorted_scores[:-1]))
    if not tied:
        # No ties (the common case for continuous scores): one block per point.
        return TVSurrogate(
            step=step_from_point_values(sorted_scores, fitted),
            n_train=int(sorted_scores.shape[0]),
            weight=float(weight),
        )
    # Mean over each block of tied scores: by the triangle inequality this keeps
    # (1/m) sum_i |eta(s_i) - eta_hat(s_i)| <= TVB (SPEC section 3, step 2).
    starts = tie_block_starts(sorted_scores)
    sizes = np.diff(np.append(starts, fitted.shape[0]))
    block_values = np.add.reduceat(fitted, starts) / sizes
    step = step_from_block_values(sorted_scores, starts, block_values)
    return TVSurrogate(
        step=step, n_train=int(sorted_scores.shape[0]), weight=float(weight)
    )
