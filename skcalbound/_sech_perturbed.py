"""The sech perturbation of scores (paper section 5, Appendix D; SPEC section 6)."""

from numbers import Real

from sklearn.utils import check_random_state

from ._compat import Interval, validate_params
from ._sech import sech_inverse_cdf
from ._validation import check_probabilities


@validate_params(
    {
        "scores": ["array-like"],
        "h": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def perturb_scores(scores, h, *, random_state=None):
    """Perturb probabilities with the truncated sech kernel of bandwidth ``h``.

    Each score :math:`s_o` is replaced by a draw from the density
    :math:`k(s \\mid s_o) \\propto \\operatorname{sech}((s - s_o)/h)` on [0, 1], by
    exact inverse-CDF sampling. Whatever the classifier, the calibration function of
    the perturbed scores then has :math:`|\\eta'| \\le \\tanh(1/h)/(2h)` and
    :math:`|\\eta''| \\le \\tfrac32 \\tanh^2(1/h)/h^2` (Corollaries 3 and 4 of the
    paper), so :class:`NWCalibrationBound` with the same ``h`` certifies its
    calibration error.

    Read more in the :ref:`User Guide <nw_bound>`.

    Parameters
    ----------
    scores : array-like of shape (n_samples,) or (n_samples, 2)
        Predicted probabilities of the positive class in [0, 1], or a
        ``predict_proba`` output.

    h : float
        Bandwidth of the perturbation, ``h > 0``. Small ``h`` changes the scores
        little (and the ranking, hence AUROC, hardly at all); the bound's slack grows
        as ``h`` shrinks.

    random_state : int, RandomState instance or None, default=None
        Source of the uniforms of the sampler. Pass an int for reproducible output
        across calls.

    Returns
    -------
    perturbed : ndarray of shape (n_samples,)
        Perturbed positive-class probabilities, finite and in [0, 1].

    See Also
    --------
    NWCalibrationBound : Certified bound for perturbed scores (pass the same ``h``).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalbound import perturb_scores
    >>> perturb_scores(np.array([0.0, 0.5, 1.0]), h=2**-6, random_state=0).round(3)
    array([0.016, 0.511, 0.99 ])
    """
    s = check_probabilities(scores)
    u = check_random_state(random_state).uniform(size=s.shape[0])
    return sech_inverse_cdf(u, s, float(h))
