"""Expected losses of a classifier whose probabilities go through the sech perturbation.

Deterministic: the expectation over the perturbation is a quadrature in the CDF
variable (paper Appendix F; SPEC section 6), not an average of samples.
"""

from numbers import Integral, Real

import numpy as np

from ._assumptions import check_perturbation_h
from ._compat import Interval, validate_params
from ._sech import sech_expectations
from ._validation import check_prob_labels

_PARAMETERS = {
    "y_true": ["array-like"],
    "y_prob": ["array-like"],
    "h": [Interval(Real, 0, None, closed="neither")],
    "n_nodes": [Interval(Integral, 8, None, closed="left")],
    "pos_label": [Real, str, "boolean", None],
}


def _per_sample(labels, scores, h, n_nodes, positive, negative):
    """``E[positive(s)]`` for positive labels, ``E[negative(1 - s)]`` for the others."""
    out = np.empty(scores.shape[0])
    for mask, func in ((labels == 1.0, positive), (labels == 0.0, negative)):
        (out[mask],) = sech_expectations(scores[mask], h, [func], n_nodes=n_nodes)
    return out


@validate_params(_PARAMETERS, prefer_skip_nested_validation=True)
def perturbed_log_loss(y_true, y_prob, *, h, n_nodes=64, pos_label=None):
    r"""Expected log-loss of probabilities after the sech perturbation.

    The loss a :class:`SechPerturbedClassifier` with bandwidth ``h`` incurs on average
    over its random perturbation, when its inner classifier predicts ``y_prob``:
    :math:`-\frac1n \sum_i [y_i E \log s_i + (1 - y_i) E \log(1 - s_i)]`, with
    :math:`s_i` drawn from the sech kernel around ``y_prob[i]``. This is the
    cross-entropy term of the paper's training loss for perturbation-aware models
    (Appendix F, equation (34)).

    Read more in the :ref:`User Guide <choosing_h>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class. Labels of
        a single class (a segment or a fold without positives) are accepted, as
        by ``calibration_curve``, when the positive class is known: labels in
        {0}, {1}, {-1} or booleans, or ``pos_label`` given.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        *Unperturbed* probabilities of the positive class, or a ``predict_proba``
        output.

    h : float
        Bandwidth of the sech perturbation, in probability units, ``0 < h <= 0.5``
        (a larger ``h`` is refused, as by :func:`perturb_scores`).

    n_nodes : int, default=64
        Quadrature nodes per sample; 64 gives about 10 exact digits.

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans.

    Returns
    -------
    loss : float
        The expected log-loss (natural logarithm), finite for every ``h > 0``: unlike
        :func:`sklearn.metrics.log_loss` no clipping is needed, because a perturbed
        probability is 0 or 1 with probability zero.

    See Also
    --------
    perturbed_brier_score_loss : The expected Brier score.
    SechPerturbedClassifier : The classifier whose loss this is.

    Notes
    -----
    Each expectation is :math:`\int_0^1 \log Q(u \mid p_i)\,du` with :math:`Q` the
    quantile function of the sech kernel (exact inverse CDF), computed by
    Gauss-Legendre quadrature after a substitution that absorbs the logarithmic
    singularities at :math:`u = 0, 1`; the tests check it against Monte Carlo averages
    of sampled perturbations.

    Examples
    --------
    >>> from skcalbound import perturbed_log_loss
    >>> y, p = [0, 1, 1], [0.1, 0.8, 0.99]
    >>> round(perturbed_log_loss(y, p, h=2**-6), 4)
    0.1172
    """
    check_perturbation_h(h)
    labels, scores = check_prob_labels(
        y_true, y_prob, pos_label, "perturbed_log_loss", single_class=True
    )
    losses = _per_sample(
        labels,
        scores,
        float(h),
        n_nodes,
        lambda s, one_minus_s, rows: np.log(s),
        lambda s, one_minus_s, rows: np.log(one_minus_s),
    )
    return float(-losses.mean())


@validate_params(_PARAMETERS, prefer_skip_nested_validation=True)
def perturbed_brier_score_loss(y_true, y_prob, *, h, n_nodes=64, pos_label=None):
    r"""Expected Brier score of probabilities after the sech perturbation.

    :math:`\frac1n \sum_i E (s_i - y_i)^2`, with :math:`s_i` drawn from the sech
    kernel of bandwidth ``h`` around ``y_prob[i]``: the Brier score a
    :class:`SechPerturbedClassifier` incurs on average over its perturbation.

    Read more in the :ref:`User Guide <choosing_h>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels; ``pos_label`` says which is the positive class. Labels of
        a single class (a segment or a fold without positives) are accepted, as
        by ``calibration_curve``, when the positive class is known: labels in
        {0}, {1}, {-1} or booleans, or ``pos_label`` given.

    y_prob : array-like of shape (n_samples,) or (n_samples, 2)
        *Unperturbed* probabilities of the positive class, or a ``predict_proba``
        output.

    h : float
        Bandwidth of the sech perturbation, in probability units, ``0 < h <= 0.5``
        (a larger ``h`` is refused, as by :func:`perturb_scores`).

    n_nodes : int, default=64
        Quadrature nodes per sample.

    pos_label : int, float, bool or str, default=None
        The label of the positive class (scikit-learn's ``pos_label``). ``None``
        means 1, which requires labels in {0, 1}, {-1, 1} or booleans.

    Returns
    -------
    loss : float
        The expected Brier score; equals :func:`sklearn.metrics.brier_score_loss` of
        ``y_prob`` plus the mean variance and squared shift of the perturbation.

    See Also
    --------
    perturbed_log_loss : The expected log-loss.

    Examples
    --------
    >>> from skcalbound import perturbed_brier_score_loss
    >>> y, p = [0, 1, 1], [0.1, 0.8, 0.99]
    >>> round(perturbed_brier_score_loss(y, p, h=2**-6), 4)
    0.0173
    """
    check_perturbation_h(h)
    labels, scores = check_prob_labels(
        y_true, y_prob, pos_label, "perturbed_brier_score_loss", single_class=True
    )
    # (s - y)**2 is s**2 for y = 0 and (1 - s)**2 for y = 1.
    losses = _per_sample(
        labels,
        scores,
        float(h),
        n_nodes,
        lambda s, one_minus_s, rows: one_minus_s * one_minus_s,
        lambda s, one_minus_s, rows: s * s,
    )
    return float(losses.mean())
