"""Binned expected calibration error: the heuristic the certified bounds replace."""

from numbers import Integral, Real

import numpy as np

from ._compat import Interval, StrOptions, validate_params
from ._validation import check_prob_labels


@validate_params(
    {
        "y_true": ["array-like"],
        "y_prob": ["array-like"],
        "n_bins": [Interval(Integral, 1, None, closed="left")],
        "strategy": [StrOptions({"uniform", "quantile"})],
        "pos_label": [Real, str, "boolean", None],
    },
    prefer_skip_nested_validation=True,
)
def binned_ece(y_true, y_prob, *, n_bins=15, strategy="uniform", pos_label=None):
    """Binned expected calibration error (ECE), the usual plug-in heuristic.

    ``sum_b (n_b / n) |mean(s in b) - mean(y in b)|`` over the bins of
    :func:`sklearn.calibration.calibration_curve` with the same ``n_bins`` and
    ``strategy``, so the two can be cross-checked. It is *not* a bound: it depends on
    the binning and can stay a constant away from the true calibration error however
    much data there is. It is here to be compared with the certified bounds.

    Read more in the :ref:`User Guide <binned_ece>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class. Labels of
        a single class (a segment or a fold without positives) are accepted, as
        by ``calibration_curve``, when the positive class is known: labels in
        {0}, {1}, {-1} or booleans, or ``pos_label`` given.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        Predicted probabilities of the positive class, or a ``predict_proba`` output.

    n_bins : int, default=15
        Number of bins.

    strategy : {'uniform', 'quantile'}, default='uniform'
        ``'uniform'``: equal-width bins on [0, 1]; ``'quantile'``: edges at the
        quantiles of ``y_prob`` (equal mass), exactly as ``calibration_curve``.

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans.

    Returns
    -------
    ece : float
        The binned ECE, in [0, 1].

    See Also
    --------
    sklearn.calibration.calibration_curve : The bins this function uses.
    TVCalibrationBound : A certified upper bound instead of a heuristic.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import binned_ece
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=100_000)
    >>> y = rng.uniform(size=100_000) < s ** 2  # true CE = 1/6
    >>> print(round(binned_ece(y, s), 3))
    0.167
    """
    labels, scores = check_prob_labels(
        y_true, y_prob, pos_label, "binned_ece", single_class=True
    )
    # Edges and assignment exactly as calibration_curve computes them. For 'quantile'
    # the expression matters to the last bit: np.percentile(s, np.linspace(0, 100, k))
    # can differ from np.percentile(s, np.linspace(0, 1, k) * 100) in the last ulp, and
    # a score lying on a quantile edge then changes bins.
    if strategy == "quantile":
        quantiles = np.linspace(0, 1, n_bins + 1)
        edges = np.percentile(scores, quantiles * 100)
        # A score on an interior edge belongs to the bin below, as in
        # calibration_curve.
        bin_ids = np.searchsorted(edges[1:-1], scores)
    else:
        bin_ids = uniform_bins(scores, n_bins)
    return ece_of_bin_sums(bin_sums(bin_ids, scores, labels, n_bins), scores.shape[0])


def bin_sums(bin_ids, scores, labels, n_bins):
    """Per bin, the sum of the scores (row 0) and of the 0/1 labels (row 1): an array
    of shape (2, n_bins); the sums of chunks of rows add up to the whole's."""
    return np.stack(
        [
            np.bincount(bin_ids, weights=scores, minlength=n_bins),
            np.bincount(bin_ids, weights=labels, minlength=n_bins),
        ]
    )


def ece_of_bin_sums(sums, n_samples):
    """The binned ECE of ``n_samples`` rows from their ``bin_sums``."""
    return float(np.abs(sums[0] - sums[1]).sum() / n_samples)


def uniform_bins(scores, n_bins):
    """``np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], scores)``, exactly: the
    bin of every score in [0, 1] among ``n_bins`` equal-width bins, a score on an
    interior edge in the bin below (``calibration_curve``'s rule).

    Why not ``searchsorted`` itself: a binary search per score (its branches are
    unpredictable) is most of binned ECE's time.
    ``floor(s * n_bins)`` is the bin up to the rounding of the product and of the
    edges; each score is then moved one bin at a time while an edge of its bin is on
    the wrong side of it (``edge_lo < s <= edge_hi`` with linspace's own edges), which
    ends at the bin ``searchsorted`` gives (one step at most in practice:
    ``tests/test_binned_ece.py`` holds the two equal on scores at and next to every
    edge).

    Parameters
    ----------
    scores : ndarray of shape (n,), float64, finite, in [0, 1]
        Inputs are assumed validated.
    n_bins : int
        Number of bins, at least 1.

    Returns
    -------
    ndarray of shape (n,), intp
    """
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # Bin b holds lower[b] < s <= upper[b]; the outer edges open to infinity, so that
    # 0 lands in the first bin and 1 in the last without a test of the bin index.
    lower, upper = edges[:-1].copy(), edges[1:].copy()
    lower[0], upper[-1] = -np.inf, np.inf
    bins = np.multiply(scores, n_bins).astype(np.intp)
    np.clip(bins, 0, n_bins - 1, out=bins)
    wrong = lower.take(bins) >= scores
    wrong |= upper.take(bins) < scores
    wrong = np.flatnonzero(wrong)
    while wrong.size:  # rare: scores next to an edge
        b, s = bins[wrong], scores[wrong]
        move = (upper.take(b) < s).astype(np.intp)
        move -= lower.take(b) >= s
        b += move
        bins[wrong] = b
        wrong = wrong[(lower.take(b) >= s) | (upper.take(b) < s)]
    return bins
