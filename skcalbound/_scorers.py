"""Scorers for ``cross_validate`` and ``GridSearchCV``, and choosing the bandwidth ``h``.

Built on the public estimators (SPEC section 8): a bound scorer fits a bound estimator
on the ``predict_proba`` output of the model being scored; the perturbation scorers
evaluate a :class:`SechPerturbedClassifier` (or any classifier, given ``h``).
"""

from numbers import Real

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import column_or_1d

from ._compat import Interval, StrOptions, validate_params
from ._lipschitz_bound import LipschitzBucketBound
from ._nw_bound import NWCalibrationBound
from ._perturbed_metrics import perturbed_brier_score_loss, perturbed_log_loss
from ._sech_perturbed import SechPerturbedClassifier, perturb_scores
from ._tv_bound import TVCalibrationBound

_BOUNDS = {
    "nw": NWCalibrationBound,
    "tv": TVCalibrationBound,
    "lipschitz": LipschitzBucketBound,
}
# The parameters that state the smoothness assumption; without any of them, ``h`` is
# read from the perturbed classifier being scored.
_SMOOTHNESS = {"nw": ("h", "b1", "b2"), "lipschitz": ("h", "L"), "tv": ()}


def _perturbed_step(estimator):
    """The :class:`SechPerturbedClassifier` that makes ``estimator``'s probabilities
    (itself, or the last step of a possibly nested ``Pipeline``), or None."""
    while isinstance(estimator, Pipeline):
        estimator = estimator.steps[-1][1]
    return estimator if isinstance(estimator, SechPerturbedClassifier) else None


def _unperturbed_proba(estimator, X):
    """``predict_proba`` of the model before its perturbation (of the model itself if
    it is not perturbed)."""
    if isinstance(estimator, Pipeline):
        if len(estimator.steps) > 1:
            X = estimator[:-1].transform(X)
        return _unperturbed_proba(estimator.steps[-1][1], X)
    if isinstance(estimator, SechPerturbedClassifier):
        return estimator.estimator_.predict_proba(X)
    return estimator.predict_proba(X)


def _binary_labels(estimator, y_true):
    """Labels as 0/1 for ``estimator.classes_[1]``, checking the model is binary."""
    classes = np.asarray(estimator.classes_)
    if classes.shape[0] != 2:
        raise ValueError(
            "Calibration scorers are for binary classifiers; the estimator has "
            f"{classes.shape[0]} classes ({classes.tolist()})."
        )
    return (column_or_1d(y_true) == classes[1]).astype(np.float64)


def _no_metadata(scorer, kwargs):
    if kwargs:
        raise TypeError(
            f"{scorer!r} takes no metadata; got {sorted(kwargs)}. The certified bounds "
            "and expected losses here are unweighted."
        )


class _BoundScorer:
    """``scorer(estimator, X, y) = -bound`` of the estimator's probabilities on ``X``."""

    def __init__(self, method, params):
        self.method = method
        self.params = params

    def __repr__(self):
        args = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"make_bound_scorer({self.method!r}{args})"

    def bound_estimator(self, estimator):
        """The unfitted bound estimator for the model ``estimator``."""
        params = dict(self.params)
        names = _SMOOTHNESS[self.method]
        if names and not any(params.get(name) is not None for name in names):
            perturbed = _perturbed_step(estimator)
            if perturbed is None:
                raise ValueError(
                    f"make_bound_scorer({self.method!r}) needs the smoothness of the "
                    "calibration function: the scored estimator is not a "
                    "SechPerturbedClassifier nor a Pipeline ending in one, so its h "
                    f"cannot be read; got {type(estimator).__name__}. Pass "
                    f"{' or '.join(names)} to make_bound_scorer."
                )
            # The bandwidth, not the classifier's b1_/b2_: the bound estimator derives
            # b1 and b2 from h in its own guarantee mode (SPEC section 12).
            params["h"] = perturbed.h
        return _BOUNDS[self.method](**params)

    def __call__(self, estimator, X, y_true, **kwargs):
        _no_metadata(self, kwargs)
        bound = self.bound_estimator(estimator)
        labels = _binary_labels(estimator, y_true)
        scores = estimator.predict_proba(X)[:, 1]
        return -bound.fit(scores, labels).bound_


@validate_params(
    {"method": [StrOptions(set(_BOUNDS))]},
    prefer_skip_nested_validation=True,
)
def make_bound_scorer(method, **params):
    """Scorer returning the negated certified bound of a classifier's probabilities.

    For ``scoring=`` in :func:`~sklearn.model_selection.cross_validate` and
    :class:`~sklearn.model_selection.GridSearchCV`: on the scoring data ``(X, y)``,
    fits the bound estimator of ``method`` on ``estimator.predict_proba(X)[:, 1]`` and
    ``y``, and returns ``-bound_`` (greater is better, like scikit-learn's ``neg_*``
    scorers). For ``"nw"`` and ``"lipschitz"`` without ``h``, ``b1``/``b2`` or ``L``,
    the bandwidth ``h`` is read from the scored :class:`SechPerturbedClassifier` (also
    as the last step of a :class:`~sklearn.pipeline.Pipeline`), so a grid over ``h``
    scores each candidate under its own assumption. The bound estimator receives that
    ``h`` and derives ``b1`` and ``b2`` from it in its own ``guarantee`` mode (the
    sharp ``b2 = tanh(1/h)**2 / (2 h**2)`` for ``"high_probability"``, Corollary 4's
    three times larger value for ``"paper"``), never from the classifier's ``b1_``
    and ``b2_``.

    Read more in the :ref:`User Guide <choosing_h>`.

    Parameters
    ----------
    method : {'nw', 'tv', 'lipschitz'}
        The bound: :class:`NWCalibrationBound`, :class:`TVCalibrationBound` or
        :class:`LipschitzBucketBound`.

    **params : dict
        Parameters of that estimator (``confidence_level``, ``guarantee``, ``cv``,
        ``random_state``, ``V``, ``h``, ...), checked now. ``guarantee`` is
        ``"high_probability"`` (default: the bound holds with probability at least
        ``confidence_level``) or ``"paper"`` (the published form; for ``"nw"`` and
        ``"lipschitz"`` it holds in expectation over the training labels only).

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y)`` returning the negated bound, a float in [-1, 0].

    See Also
    --------
    make_perturbation_scorer : Scorers of the cost of the perturbation.

    Notes
    -----
    Each score is certified for the data it is computed on. The largest of several
    scores (as ``GridSearchCV`` picks) is not: selecting by the bound and reporting
    the same bound needs fresh data, or a union bound over the candidates
    (``confidence_level`` raised accordingly).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_validate
    >>> from skcalbound import SechPerturbedClassifier, make_bound_scorer
    >>> X, y = make_classification(n_samples=20_000, random_state=0)
    >>> clf = SechPerturbedClassifier(LogisticRegression(), h=2**-4, random_state=0)
    >>> scoring = {"nw": make_bound_scorer("nw", random_state=0), "roc_auc": "roc_auc"}
    >>> result = cross_validate(clf, X, y, cv=2, scoring=scoring)
    >>> print(-result["test_nw"].round(3))
    [0.12  0.123]
    """
    names = _SMOOTHNESS[method]
    given = {k: v for k, v in params.items() if v is not None}
    estimator = _BOUNDS[method](**params)  # TypeError for unknown names
    estimator._validate_params()
    if any(name in given for name in names):
        estimator._method()  # h against b1/b2/L: exactly one way
    return _BoundScorer(method, params)


_LOSSES = {"log_loss", "brier_score", "auroc_loss"}


class _PerturbationScorer:
    """``scorer(estimator, X, y)`` = minus a cost of the perturbation."""

    def __init__(self, metric, h, random_state):
        self.metric = metric
        self.h = h
        self.random_state = random_state

    def __repr__(self):
        return (
            f"make_perturbation_scorer({self.metric!r}, h={self.h!r}, "
            f"random_state={self.random_state!r})"
        )

    def __call__(self, estimator, X, y_true, **kwargs):
        _no_metadata(self, kwargs)
        perturbed = _perturbed_step(estimator)
        if self.h is None and perturbed is None:
            raise ValueError(
                f"make_perturbation_scorer({self.metric!r}) needs h: the scored "
                "estimator is not a SechPerturbedClassifier nor a Pipeline ending in "
                f"one; got {type(estimator).__name__}. Pass h to "
                "make_perturbation_scorer to score the perturbation of any classifier."
            )
        h = perturbed.h if self.h is None else self.h
        labels = _binary_labels(estimator, y_true)
        original = _unperturbed_proba(estimator, X)[:, 1]
        if self.metric == "log_loss":
            return -perturbed_log_loss(labels, original, h=h)
        if self.metric == "brier_score":
            return -perturbed_brier_score_loss(labels, original, h=h)
        if self.h is None:  # the model's own perturbation, a fresh draw
            scores = estimator.predict_proba(X)[:, 1]
        else:
            scores = perturb_scores(original, h, random_state=self.random_state)
        return -(roc_auc_score(labels, original) - roc_auc_score(labels, scores))


@validate_params(
    {
        "metric": [StrOptions(_LOSSES)],
        "h": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_perturbation_scorer(metric, *, h=None, random_state=None):
    """Scorer of what the sech perturbation costs a classifier (greater is better).

    On the scoring data, compares the classifier's perturbed probabilities with its
    unperturbed ones (those of the inner estimator of a
    :class:`SechPerturbedClassifier`, also as the last step of a
    :class:`~sklearn.pipeline.Pipeline`):

    - ``"log_loss"``: minus :func:`perturbed_log_loss`, the expected log-loss under
      the perturbation (deterministic);
    - ``"brier_score"``: minus :func:`perturbed_brier_score_loss` (deterministic);
    - ``"auroc_loss"``: minus the drop in ROC AUC from the unperturbed to the perturbed
      probabilities (one fresh perturbation), the quantity the paper bounds when
      choosing ``h`` (section 7).

    Read more in the :ref:`User Guide <choosing_h>`.

    Parameters
    ----------
    metric : {'log_loss', 'brier_score', 'auroc_loss'}
        What to score.

    h : float, default=None
        Perturbation bandwidth. ``None`` reads it from the scored
        :class:`SechPerturbedClassifier`; given, any probabilistic classifier can be
        scored as if it were perturbed with ``h``.

    random_state : int, RandomState instance or None, default=None
        Seeds the perturbation drawn for ``"auroc_loss"`` when ``h`` is given (with
        ``h=None`` the scored classifier draws its own).

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y)`` returning minus the cost.

    See Also
    --------
    largest_h_within_tolerance : ``GridSearchCV`` refit rule built on
        ``"auroc_loss"``.
    make_bound_scorer : Scorers of the certified bounds.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalbound import SechPerturbedClassifier, make_perturbation_scorer
    >>> X, y = make_classification(n_samples=2_000, random_state=0)
    >>> clf = SechPerturbedClassifier(LogisticRegression(), h=2**-6).fit(X, y)
    >>> scorer = make_perturbation_scorer("log_loss")
    >>> round(-scorer(clf, X, y), 4)
    0.07
    """
    return _PerturbationScorer(metric, h, random_state)


class _LargestH:
    """``GridSearchCV(refit=...)`` rule: the largest ``h`` whose cost is tolerated."""

    def __init__(self, tolerance, scorer, param):
        self.tolerance = tolerance
        self.scorer = scorer
        self.param = param

    def __repr__(self):
        return (
            f"largest_h_within_tolerance({self.tolerance!r}, scorer={self.scorer!r}, "
            f"param={self.param!r})"
        )

    def _param_name(self, params):
        if self.param is not None:
            return self.param
        names = {k for p in params for k in p if k == "h" or k.endswith("__h")}
        if len(names) != 1:
            raise ValueError(
                "Cannot tell which searched parameter is the perturbation bandwidth: "
                f"found {sorted(names) or 'none'} among the parameters named 'h' or "
                "ending in '__h'. Pass param= to largest_h_within_tolerance."
            )
        return names.pop()

    def __call__(self, cv_results):
        key = f"mean_test_{self.scorer}"
        if key not in cv_results:
            raise ValueError(
                f"cv_results_ has no {key!r}: give GridSearchCV a scorer named "
                f"{self.scorer!r}, e.g. scoring={{{self.scorer!r}: "
                "make_perturbation_scorer('auroc_loss'), ...}."
            )
        params = cv_results["params"]
        name = self._param_name(params)
        h = np.array([p.get(name, np.nan) for p in params], dtype=float)
        cost = -np.asarray(cv_results[key], dtype=float)
        ok = np.flatnonzero((cost <= self.tolerance) & np.isfinite(h))
        if ok.size == 0:
            return int(np.nanargmin(cost))
        # The largest h; among equal h, the smallest cost.
        return int(ok[np.lexsort((cost[ok], -h[ok]))[0]])


@validate_params(
    {
        "tolerance": [Interval(Real, 0, None, closed="left")],
        "scorer": [str],
        "param": [str, None],
    },
    prefer_skip_nested_validation=True,
)
def largest_h_within_tolerance(tolerance=0.001, *, scorer="auroc_loss", param=None):
    """``GridSearchCV`` refit rule: the largest ``h`` whose cost is within a tolerance.

    The paper's recipe for choosing the perturbation (section 7): the larger ``h``, the
    tighter the certified bound; take the largest ``h`` that costs the classifier at
    most ``tolerance`` of ROC AUC. Use as ``GridSearchCV(..., refit=rule)`` with a
    scorer named ``scorer`` made by :func:`make_perturbation_scorer`.

    Read more in the :ref:`User Guide <choosing_h>`.

    Parameters
    ----------
    tolerance : float, default=0.001
        Largest accepted mean cost (for ``"auroc_loss"``: drop in ROC AUC).

    scorer : str, default='auroc_loss'
        Key of the cost scorer in ``GridSearchCV``'s ``scoring`` dict; it must return
        minus the cost, as :func:`make_perturbation_scorer` does.

    param : str, default=None
        Name of the bandwidth in the parameter grid; ``None`` finds the one parameter
        named ``h`` or ending in ``__h`` (as in a pipeline).

    Returns
    -------
    refit : callable
        ``refit(cv_results) -> int``, the index of the chosen candidate: the largest
        ``h`` whose mean cost is at most ``tolerance`` (ties: the smaller cost), or,
        if none qualifies, the candidate of smallest mean cost.

    See Also
    --------
    make_perturbation_scorer : The cost scorers.

    Notes
    -----
    To choose the ``h`` that minimises the certified bound instead, score with
    :func:`make_bound_scorer` and pass its key as ``refit``. Either way, a bound
    reported for the chosen model must be computed on data not used for choosing.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skcalbound import (SechPerturbedClassifier, largest_h_within_tolerance,
    ...                         make_perturbation_scorer)
    >>> X, y = make_classification(n_samples=20_000, random_state=0)
    >>> search = GridSearchCV(
    ...     SechPerturbedClassifier(LogisticRegression(), random_state=0),
    ...     {"h": [2.0**-k for k in range(2, 11)]},
    ...     scoring={"auroc_loss": make_perturbation_scorer("auroc_loss")},
    ...     refit=largest_h_within_tolerance(0.001),
    ... ).fit(X, y)
    >>> search.best_params_["h"] == 2**-7  # AUROC drop 0.0017 at 2**-6, 0.0006 at 2**-7
    True
    """
    return _LargestH(tolerance, scorer, param)
