"""Synthetic multiclass problems with exactly known top-label and class-wise CE."""

from numbers import Integral, Real

import numpy as np
from scipy import integrate, stats
from sklearn.utils import Bunch, check_random_state

from .._compat import Interval, validate_params
from ._custom import CustomProblem
from ._exact import checked_truth


def _confidence_law(n_classes, a, b):
    """The law of the confidence ``c = 1/K + (1 - 1/K) Beta(a, b)``."""
    low = 1.0 / n_classes
    return stats.beta(a, b, loc=low, scale=1.0 - low)


class _TemperedEta:
    """``eta(c) = 1/K + (1 - 1/K) u**power`` with ``u = (c - 1/K) / (1 - 1/K)``.

    A picklable callable (no closure), defined on all of [0, 1] by the same formula
    (``u < 0`` below ``1/K``, where ``u**power`` uses ``|u|``).
    """

    def __init__(self, n_classes, power):
        self.n_classes = int(n_classes)
        self.power = float(power)

    def __call__(self, c):
        low = 1.0 / self.n_classes
        u = (np.asarray(c, dtype=float) - low) / (1.0 - low)
        return low + (1.0 - low) * np.abs(u) ** self.power


class _OneVsRestScoreLaw(stats.rv_continuous):
    """Law of a one-vs-rest score ``P_k`` of :func:`make_multiclass` on [0, 1].

    A mixture: with probability ``1/K`` the confidence ``c = 1/K + (1 - 1/K) U``,
    ``U ~ Beta(alpha, beta)``, on ``(1/K, 1]``; otherwise ``(1 - c) / (K - 1)`` on
    ``[0, 1/K)``. Shape parameters ``n_classes, alpha, beta`` (module-level, so the
    frozen law pickles).
    """

    def _argcheck(self, n_classes, alpha, beta):
        return (n_classes >= 2) & (alpha > 0) & (beta > 0)

    def _pdf(self, s, n_classes, alpha, beta):
        low = 1.0 / n_classes
        width = 1.0 - low
        # Predicted (P_k = c): u = (s - 1/K) / (1 - 1/K).
        top = stats.beta.pdf((s - low) / width, alpha, beta) / width
        # Not predicted (P_k = (1 - c)/(K - 1)): c = 1 - (K - 1) s, so
        # u = 1 - K s and |du/ds| = K.
        rest = n_classes * stats.beta.pdf(1.0 - n_classes * s, alpha, beta)
        return np.where(s >= low, low * top, (1.0 - low) * rest)

    def _cdf(self, s, n_classes, alpha, beta):
        low = 1.0 / n_classes
        width = 1.0 - low
        top = stats.beta.cdf((s - low) / width, alpha, beta)
        rest = stats.beta.sf(1.0 - n_classes * s, alpha, beta)
        return np.where(s >= low, (1.0 - low) + low * top, (1.0 - low) * rest)

    def _rvs(self, n_classes, alpha, beta, size=None, random_state=None):
        low = 1.0 / n_classes
        c = low + (1.0 - low) * random_state.beta(alpha, beta, size=size)
        predicted = random_state.uniform(size=size) < low
        return np.where(predicted, c, (1.0 - c) / (n_classes - 1))


class _OneVsRestEta:
    """``P(y = k | P_k = s)``: ``eta(s)`` on ``[1/K, 1]``, else
    ``(1 - eta(1 - (K - 1) s)) / (K - 1)``. Picklable (no closure)."""

    def __init__(self, n_classes, power):
        self.n_classes = int(n_classes)
        self.eta = _TemperedEta(n_classes, power)

    def __call__(self, s):
        s = np.asarray(s, dtype=float)
        K = self.n_classes
        rest = (1.0 - self.eta(1.0 - (K - 1) * s)) / (K - 1)
        return np.clip(np.where(s >= 1.0 / K, self.eta(s), rest), 0.0, 1.0)


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "a": [Interval(Real, 1, None, closed="left")],
        "b": [Interval(Real, 1, None, closed="left")],
        "power": [Interval(Real, 2, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_multiclass(
    n_samples=1000, n_classes=3, *, a=2.0, b=2.0, power=2.0, random_state=None
):
    """Generate multiclass probabilities with exactly known top-label and class-wise CE.

    With ``K = n_classes``, each sample draws a confidence
    ``c = 1/K + (1 - 1/K) Beta(a, b)`` in ``(1/K, 1]`` and a predicted class uniformly
    among the ``K``; the row of probabilities is ``c`` at the predicted class and
    ``(1 - c) / (K - 1)`` (smaller than ``c``) elsewhere, so the argmax is the
    predicted class. The label is the predicted class with probability
    ``eta(c) = 1/K + (1 - 1/K) u**power``, ``u = (c - 1/K) / (1 - 1/K)`` (overconfident:
    ``eta(c) <= c``), and otherwise uniform among the other ``K - 1`` classes.

    **Truth.** The top-label calibration function is ``P(correct | c) = eta(c)``, so
    ``CE_top = E|c - eta(c)| = (1 - 1/K) E|U - U**power|`` with ``U ~ Beta(a, b)``,
    computed by :func:`scipy.integrate.quad`. For class ``k``: with probability
    ``1/K`` the class is predicted and ``P_k = c``, with ``P(y = k | P_k) = eta(c)``;
    otherwise ``P_k = (1 - c) / (K - 1) < 1/K``, a one-to-one function of ``c``, with
    ``P(y = k | P_k) = (1 - eta(c)) / (K - 1)``. The two ranges do not overlap, so
    ``CE_k = (1/K) E|c - eta(c)| + ((K - 1)/K) E|eta(c) - c| / (K - 1) =
    (2/K) CE_top`` for every class (``c`` and the predicted class being independent).
    The average and the largest class-wise errors are both ``2/K CE_top``.

    **Assumptions** (true on all of [0, 1] with ``eta`` extended by the same
    formula): both calibration functions are monotone, so ``V = 1``; the top-label
    one has ``|eta'| <= power`` (``b1 = L = power``) and ``|eta''| <= power (power -
    1) / (1 - 1/K)`` (``b2``); the class-wise one ``p -> P(y = k | P_k = p)`` has the
    same ``b1`` and ``L``, is continuous with a continuous derivative at ``1/K``, and
    has ``|eta_k''| <= (K - 1) power (power - 1) / (1 - 1/K)`` on ``[0, 1/K)``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of rows.
    n_classes : int, default=3
        Number of classes ``K >= 2``.
    a, b : float, default=2.0
        Shape parameters (``>= 1``) of the Beta law of the rescaled confidence.
    power : float, default=2.0
        Exponent of the calibration curve (``>= 2``); larger is more overconfident.
    random_state : int, RandomState instance or None, default=None
        Seed of the sample.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes

        proba : ndarray of shape (n_samples, n_classes)
            Rows of probabilities summing to one (a ``predict_proba`` output).
        labels : ndarray of shape (n_samples,)
            Labels in ``{0, ..., n_classes - 1}``.
        true_top_label_ce : float
            ``E|max_k P_k - P(y = argmax_k P_k | max_k P_k)|``.
        true_classwise_ce : float
            ``E|P_k - P(y = k | P_k)|``, the same for every class ``k`` (so also
            their mean and their maximum): ``2 / n_classes * true_top_label_ce``.
        ce_integration_error : float
            Error estimate of the quadrature behind ``true_top_label_ce``.
        top_label_assumptions : dict
            ``V``, ``b1``, ``b2``, ``L`` of the top-label calibration function.
        classwise_assumptions : dict
            ``V``, ``b1``, ``b2``, ``L`` of every class-wise calibration function.
        top_label_problem : CustomProblem
            The top-label binary problem (law of the confidence, ``eta``), for
            example to get the truth through the sech perturbation with
            ``make_calibration_problem(problem, h=h)`` or
            ``SechPerturbed(base=problem, h=h).true_ce``.
        classwise_problem : CustomProblem
            The one-vs-rest binary problem ``(P_k, y == k)`` of any class ``k`` (all
            have the same law): the mixture law of ``P_k`` and ``P(y = k | P_k)``; its
            ``true_ce`` is ``true_classwise_ce``, and
            ``SechPerturbed(base=classwise_problem, h=h).true_ce`` is the exact CE of
            a column perturbed with ``perturb_scores(P[:, k], h)``.

    See Also
    --------
    make_calibration_problem : Binary problems, optionally perturbed.

    Examples
    --------
    >>> from skcalbound.datasets import make_multiclass
    >>> data = make_multiclass(4, 3, random_state=0)
    >>> data.proba.shape, data.proba.sum(axis=1).round(12).tolist()
    ((4, 3), [1.0, 1.0, 1.0, 1.0])
    >>> round(data.true_top_label_ce, 4), round(data.true_classwise_ce, 4)
    (0.1333, 0.0889)
    """
    K = int(n_classes)
    low = 1.0 / K
    eta = _TemperedEta(K, power)
    law = _confidence_law(K, a, b)
    p = float(power)
    b1 = p
    b2_top = p * (p - 1.0) / (1.0 - low)
    problem = CustomProblem(
        eta,
        law,
        breakpoints=(low,),
        V=1.0,
        b1=b1,
        b2=b2_top,
        L=b1,
        name=f"multiclass_top_label_K{K}",
    )
    classwise_problem = CustomProblem(
        _OneVsRestEta(K, power),
        _OneVsRestScoreLaw(a=0.0, b=1.0, name="one_vs_rest")(K, float(a), float(b)),
        breakpoints=(low,),
        V=1.0,
        b1=b1,
        b2=(K - 1) * b2_top,
        L=b1,
        name=f"multiclass_classwise_K{K}",
    )
    u_law = stats.beta(a, b)
    value, error = integrate.quad(
        lambda u: abs(u - u**p) * u_law.pdf(u),
        0.0,
        1.0,
        epsabs=1e-12,
        epsrel=1e-12,
        limit=500,
    )
    true_top = checked_truth(
        (1.0 - low) * value, (1.0 - low) * error, "make_multiclass"
    )

    rng = check_random_state(random_state)
    generator = np.random.default_rng(rng.randint(np.iinfo(np.int32).max, size=4))
    n = int(n_samples)
    c = low + (1.0 - low) * generator.beta(a, b, size=n)
    predicted = generator.integers(K, size=n)
    proba = np.repeat(((1.0 - c) / (K - 1))[:, None], K, axis=1)
    proba[np.arange(n), predicted] = c
    correct = generator.uniform(size=n) < eta(c)
    # Wrong: uniform among the K - 1 other classes.
    shift = generator.integers(1, K, size=n)
    labels = np.where(correct, predicted, (predicted + shift) % K).astype(np.int64)
    return Bunch(
        proba=proba,
        labels=labels,
        true_top_label_ce=float(true_top),
        true_classwise_ce=float(2.0 / K * true_top),
        ce_integration_error=float((1.0 - low) * error),
        top_label_assumptions={"V": 1.0, "b1": b1, "b2": b2_top, "L": b1},
        classwise_assumptions={"V": 1.0, "b1": b1, "b2": (K - 1) * b2_top, "L": b1},
        top_label_problem=problem,
        classwise_problem=classwise_problem,
    )
