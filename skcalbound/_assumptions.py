"""Checks of the assumption constants a bound is given: the perturbation bandwidth
``h``, the derivative bounds ``b1``, ``b2`` and ``L``, and that scores said to be
perturbed are not tied."""

import numpy as np
import pandas as pd

from ._validation import _num

# Above these, a smoothing-error term g = b1 * (distance) + ... is far above 1 at every
# score not tied with training scores, and the distances that could keep it below 1
# are below what double precision resolves after the grid sums (absolute error about
# eps * bin width per unit of b1): the number would rest on rounding.
MAX_FIRST_DERIVATIVE = 2.0**40
MAX_SECOND_DERIVATIVE = 1.5 * 2.0**82  # b2(h) for h = 2**-41, as b1 <= 2**40


def check_smoothness_constants(names, values, h=None):
    """Raise a ValueError if a derivative bound is too large to evaluate reliably.

    ``names``/``values`` pair the constants (``"b1"``, ``"b2"`` or ``"L"``) with their
    values; ``h`` is the bandwidth they were derived from, if any.
    """
    limits = {
        "b1": MAX_FIRST_DERIVATIVE,
        "L": MAX_FIRST_DERIVATIVE,
        "b2": MAX_SECOND_DERIVATIVE,
    }
    for name, value in zip(names, values):
        limit = limits[name]
        if value > limit:
            origin = f" (from h={h!r})" if h is not None else ""
            fix = "h >= 2**-41" if h is not None else f"{name} <= {limit:.4g}"
            raise ValueError(
                f"{name}={value:.4g}{origin} is too large: above {limit:.4g} the "
                "smoothing-error term exceeds 1 at every score not tied with a "
                "training score, and the distances that could keep it below 1 are "
                "smaller than double precision resolves, so the bound would rest on "
                "rounding. Use "
                f"{fix}; the bound is 1 (uninformative) in that regime anyway."
            )


# The sech perturbation's bandwidth is a scale in probability units; above 1/2 the
# perturbation spreads a score over all of [0, 1] and no user means that (the values
# seen in practice were 1/h or the exponent of 2**-k).
MAX_PERTURBATION_H = 0.5


def check_perturbation_h(h, constants=None):
    """Raise a ValueError, saying what ``h`` is, if ``h`` exceeds 1/2.

    ``constants`` names the parameters that state a bound's assumption directly
    (``"b1 and b2"`` or ``"L"``), for a user who really means a weak one; ``None``
    for the doors that perturb (``perturb_scores``, ``SechPerturbedClassifier``, the
    perturbed losses and scorers), where ``h`` is the noise itself.
    """
    if h is None or h <= MAX_PERTURBATION_H:
        return
    guesses = []
    if h >= 2:
        guesses.append(f"h=1/{h:g}={1 / h:.6g}")
    if float(h).is_integer() and h <= 41:
        guesses.append(f"h=2**-{int(h)}={2.0**-h:.6g}")
    meant = f" Did you mean {' or '.join(guesses)}?" if guesses else ""
    if constants is None:
        raise ValueError(
            f"h={h!r} is above 0.5. h is the bandwidth, in probability units, of the "
            "sech perturbation (perturb_scores(y_prob, h) or "
            "SechPerturbedClassifier(h=h)), typically 2**-6 = 0.015625: above 0.5 "
            "it spreads each score over most of [0, 1], the perturbed scores rank "
            f"little better than chance, and the bounds refuse it.{meant}"
        )
    raise ValueError(
        f"h={h!r} is above 0.5. h is the bandwidth, in probability units, of the sech "
        "perturbation the scores went through (perturb_scores(y_prob, h) or "
        "SechPerturbedClassifier(h=h)), typically 2**-6 = 0.015625: an assumption "
        f"about how the scores were produced, not a knob to tune.{meant} To assume a "
        f"weak smoothness on purpose, give {constants} directly."
    )


_TIE_CELLS = 2**16


def check_untied_scores(sorted_scores, h, *, is_sorted=True):
    """Raise a ValueError if the scores cannot have come through the perturbation.

    Scores perturbed with the sech kernel have a continuous law, so ties among them
    come from rounding only. Rounding ties are not rare: stored as float32, 17% of
    10**7 perturbed scores are tied, in blocks of at most 8 (measured: a Beta(2, 5)
    score law perturbed with ``h = 2**-6``), so an error on any tie would reject
    honest data. The test is the largest block of equal scores instead: at least
    ``max(10, n / 1000)`` equal scores means a value holding a thousandth of the data
    (an unperturbed tree model, rounded or discrete scores). The perturbation does not
    produce that in float64 for any accepted ``h >= 2**-41`` (10**7 copies of 0.9
    perturbed with ``h = 2**-41``: largest block 857, measured), only when ``h`` is
    below the precision the scores were stored in.
    """
    n = sorted_scores.shape[0]
    limit = max(10, -(-n // 1000))
    if not is_sorted:
        # Sort-free: a block of ``limit`` equal scores puts ``limit`` points in one
        # cell of any grid, so only the points of such heavy cells need sorting.
        cells = np.minimum((sorted_scores * _TIE_CELLS).astype(np.intp), _TIE_CELLS - 1)
        heavy = np.bincount(cells, minlength=_TIE_CELLS) >= limit
        if not heavy.any():
            return
        everything = sorted_scores
        sorted_scores = np.sort(sorted_scores[heavy[cells]])
    equal = sorted_scores[1:] == sorted_scores[:-1]
    if np.count_nonzero(equal) < limit - 1:
        return  # no block can reach the limit
    starts = np.flatnonzero(np.concatenate(([True], ~equal)))
    sizes = np.diff(np.append(starts, sorted_scores.shape[0]))
    largest = int(sizes.argmax())
    if sizes[largest] < limit:
        return
    n_distinct = starts.shape[0] if is_sorted else pd.unique(everything).shape[0]
    raise ValueError(
        f"h={h!r} states that the scores were perturbed with the sech kernel, whose "
        f"output is continuous, but {int(sizes[largest])} of the {n} scores equal "
        f"{_num(sorted_scores[starts[largest]])} ({n_distinct} distinct values in "
        "all): these scores were not perturbed, so the NW and Lipschitz assumptions "
        "derived from h do not hold for them. Perturb them first (perturb_scores("
        "y_prob, h) or SechPerturbedClassifier(model, h=h)) and bound the perturbed "
        "scores, or, if the calibration function is smooth for another reason, state "
        "its smoothness directly (b1 and b2, or L), or use TVCalibrationBound."
    )
