"""Scorers for ``cross_validate`` and ``GridSearchCV``; choosing the bandwidth ``h``.

Built on the public estimators (SPEC section 8): a bound scorer fits a bound estimator
on the ``predict_proba`` output of the model being scored; the perturbation scorers
evaluate a :class:`SechPerturbedClassifier` (or any classifier, given ``h``).
"""

import inspect
import warnings
from numbers import Real

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import Pipeline

from ._assumptions import check_perturbation_h
from ._compat import Interval, StrOptions, _Scorer, validate_params
from ._perturbed_metrics import perturbed_brier_score_loss, perturbed_log_loss
from ._registry import BY_NAME as _BOUNDS
from ._sech_perturbed import SechPerturbedClassifier, perturb_scores
from ._validation import classifier_labels_01
from ._warnings import _user_stacklevel

# Without b1/b2 or L (a bound's ``smoothness_params`` other than ``h``), ``h`` is read
# from the perturbed classifier scored; a given ``h`` must be its.


# The one place that relies on scikit-learn's private scorer API (checked with
# scikit-learn 1.9; tests/test_scorers.py counts the calls). No public API shares a
# prediction between the scorers of a ``scoring`` dict. scikit-learn's
# ``_MultimetricScorer`` (what ``cross_validate`` and ``GridSearchCV`` make of a dict)
# does, but only for instances of its private ``_BaseScorer``: when two of them use
# the same response method, it calls ``scorer._score(method_caller, estimator, X, y)``
# with a ``method_caller`` that calls ``estimator.predict_proba(X)`` once and hands
# every scorer the column of ``classes_[1]``. Sharing that call is what makes the
# AUROC loss and the bounds of a candidate describe the same perturbation
# (``SechPerturbedClassifier.predict_proba`` draws fresh noise on every call), and it
# spares a prediction per scorer. The class comes from ``_compat._Scorer``
# (``make_scorer``'s class). If it is gone or its ``_score`` has another signature,
# the scorers derive from ``object``: each then calls ``predict_proba`` itself, which
# is slower and draws a perturbation per scorer, each score still correct for its own
# draw.
def _sklearn_scorer_base():
    score = getattr(_Scorer, "_score", None)
    if score is None:
        return object
    names = list(inspect.signature(score).parameters)
    if names[:5] != ["self", "method_caller", "estimator", "X", "y_true"]:
        return object
    return _Scorer


_ScorerBase = _sklearn_scorer_base()


def _call_without_cache(estimator, response_method, X, pos_label=None):
    """``method_caller`` of a scorer called directly: the full ``predict_proba``."""
    return getattr(estimator, response_method)(X)


def _scorer_signature(y_true, y_score):
    """What scikit-learn reads as the scorers' metric (``_score_func``): its
    parameters say that the scorers take no metadata, such as ``sample_weight``."""
    raise NotImplementedError  # never called: the scorers override ``_score``


def _perturbed_step(estimator):
    """The :class:`SechPerturbedClassifier` that makes ``estimator``'s probabilities
    (itself, or the last step of a possibly nested ``Pipeline``), or None."""
    while isinstance(estimator, Pipeline):
        estimator = estimator.steps[-1][1]
    return estimator if isinstance(estimator, SechPerturbedClassifier) else None


def perturbation_assumption(cls, params, estimator, caller, *, verb, reader, target):
    """The constructor parameters ``params`` of the bound class ``cls``, for bounding
    the probabilities of ``estimator``, with the ``h`` of its perturbation.

    TV, or a smoothness assumption stated directly (``b1``/``b2``, ``L``): ``params``
    as they are. Otherwise the probabilities must come from a
    :class:`SechPerturbedClassifier` (or a ``Pipeline`` ending in one), whose ``h`` is
    the assumption; a plain classifier, or an ``h`` in ``params`` that differs from
    the classifier's, is an error. ``caller`` (the call), ``verb`` (what it did to
    the classifier), ``reader`` (who reads ``h``) and ``target`` (where ``b1``/``b2``
    or ``L`` go) word the messages. The one rule for the bound scorer and
    ``CalibrationBoundDisplay.from_estimator``.
    """
    names = getattr(cls, "smoothness_params", ())
    stated = [n for n in names if n != "h" and params.get(n) is not None]
    if not names or stated:
        return dict(params)  # TV, or b1/b2 or L as stated
    h = params.get("h")
    perturbed = _perturbed_step(estimator)
    if perturbed is None:
        direct = " and ".join(n for n in names if n != "h")
        raise ValueError(
            f"{caller} bounds the probabilities of a SechPerturbedClassifier (or a "
            "Pipeline ending in one), under the assumption its h states; got "
            f"{type(estimator).__name__}, whose probabilities were not perturbed, so "
            "that assumption does not hold for them. Wrap the model: "
            "SechPerturbedClassifier(model, h=...) "
            "(SechPerturbedClassifier(FrozenEstimator(model), h=...) for a fitted "
            "one); or, if its calibration function is smooth for another reason, "
            f"pass {direct} to {target}."
        )
    if h is not None and float(h) != float(perturbed.h):
        raise ValueError(
            f"{caller} {verb} a SechPerturbedClassifier with h={perturbed.h!r}: the "
            "bound would assume another perturbation than the one its probabilities "
            f"went through. Leave h out ({reader} reads it from the classifier)."
        )
    # The bandwidth, not the classifier's b1_/b2_: the bound estimator derives
    # b1 and b2 from h in its own guarantee mode (SPEC section 12).
    return {**params, "h": perturbed.h}


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


def _binary_labels(estimator, y_true, pos_label):
    """Labels as 0/1 for ``pos_label`` (default ``classes_[1]``) and the index of its
    column in ``predict_proba``, checking the model is binary and knows the labels."""
    classes = np.asarray(estimator.classes_)
    if classes.shape[0] != 2:
        raise ValueError(
            "Calibration scorers are for binary classifiers; the estimator has "
            f"{classes.shape[0]} classes ({classes.tolist()})."
        )
    return classifier_labels_01(classes, y_true, pos_label, "y_true")


def _column(proba, column):
    """The probabilities of the class in ``column`` of ``predict_proba``, from the
    full output or from the column of ``classes_[1]`` that scikit-learn shares."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim == 2:
        return proba[:, column]
    return proba if column == 1 else 1.0 - proba


def _no_metadata(scorer, kwargs):
    if kwargs:
        raise TypeError(
            f"{scorer!r} takes no metadata; got {sorted(kwargs)}. The certified bounds "
            "and expected losses here are unweighted."
        )


class _ProbaScorer(_ScorerBase):
    """A scorer of ``predict_proba`` that shares it with the other scorers of a
    ``scoring`` dict (see ``_sklearn_scorer_base``); subclasses define ``_value``."""

    def __init__(self, pos_label):
        self.pos_label = pos_label
        # The attributes scikit-learn's scorers read, set without its constructor.
        self._score_func = _scorer_signature
        self._sign = 1
        self._kwargs = {}
        self._response_method = "predict_proba"

    def __call__(self, estimator, X, y_true, **kwargs):
        return self._score(_call_without_cache, estimator, X, y_true, **kwargs)

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        _no_metadata(self, kwargs)
        labels, column = _binary_labels(estimator, y_true, self.pos_label)

        def predicted():
            # Asks for ``classes_[1]``'s column, the one scikit-learn's scorers share.
            proba = method_caller(estimator, "predict_proba", X, pos_label=None)
            return _column(proba, column)

        return self._value(estimator, X, labels, column, predicted)

    def _get_pos_label(self):
        return self.pos_label

    def _accept_sample_weight(self):
        return False


class _BoundScorer(_ProbaScorer):
    """``scorer(estimator, X, y) = -bound`` of the estimator's probabilities on X."""

    def __init__(self, method, params, pos_label=None):
        super().__init__(pos_label)
        self.method = method
        self.params = params

    def __repr__(self):
        params = self.params
        if self.pos_label is not None:
            params = {"pos_label": self.pos_label, **params}
        args = "".join(f", {k}={v!r}" for k, v in params.items())
        return f"make_bound_scorer({self.method!r}{args})"

    def bound_estimator(self, estimator):
        """The unfitted bound estimator for the model ``estimator``."""
        cls = _BOUNDS[self.method]
        caller = f"make_bound_scorer({self.method!r}"
        if self.params.get("h") is not None:
            caller += f", h={self.params['h']!r}"
        params = perturbation_assumption(
            cls,
            self.params,
            estimator,
            caller + ")",
            verb="scored",
            reader="the scorer",
            target="make_bound_scorer",
        )
        return cls(**params)

    def _value(self, estimator, X, labels, column, predicted):
        bound = self.bound_estimator(estimator)
        # Labels already 0/1 for pos_label: the bound's own default positive class.
        fitted = bound.fit(predicted(), labels.astype(np.int64))
        if fitted._rejection() is not None:
            # A band that crossed or an empty interval: its bound rests on an
            # assumption the data reject, so it certifies nothing beyond the
            # trivial CE <= 1 (and such a bound is small: taken as is, a search
            # would prefer it).
            return -1.0
        return -fitted.bound_


@validate_params(
    {
        "method": [StrOptions(set(_BOUNDS))],
        "pos_label": [Real, str, "boolean", None],
    },
    prefer_skip_nested_validation=True,
)
def make_bound_scorer(method, *, pos_label=None, **params):
    """Scorer returning the negated certified bound of a classifier's probabilities.

    For ``scoring=`` in :func:`~sklearn.model_selection.cross_validate` and
    :class:`~sklearn.model_selection.GridSearchCV`: on the scoring data ``(X, y)``,
    fits the bound estimator of ``method`` on the probability of ``pos_label`` in
    ``estimator.predict_proba(X)`` and ``y == pos_label``, and returns ``-bound_``
    (greater is better, like scikit-learn's ``neg_*`` scorers). For ``"nw"`` and
    ``"lipschitz"`` without ``b1``/``b2`` or ``L``, the bandwidth ``h`` is read
    from the scored :class:`SechPerturbedClassifier` (also as the last step of a
    :class:`~sklearn.pipeline.Pipeline`), so a grid over ``h`` scores each candidate
    under its own assumption; an ``h`` given here must be the classifier's, and a
    classifier that is not perturbed is an error (wrap it in
    :class:`SechPerturbedClassifier`, or state ``b1`` and ``b2``, or ``L``): the
    bound is never computed on unperturbed probabilities under an assumption that
    only the perturbation makes true. The bound estimator receives that ``h`` and
    derives ``b1`` and ``b2`` from it in its own ``guarantee`` mode (the sharp
    ``b2 = tanh(1/h)**2 / (2 h**2)`` for ``"high_probability"``, Corollary 4's three
    times larger value for ``"paper"``), never from the classifier's ``b1_`` and
    ``b2_``.

    In a ``scoring`` dict, this scorer and those of :func:`make_perturbation_scorer`
    share one ``predict_proba`` call per candidate and fold (as scikit-learn's own
    scorers do): the bound and the AUROC loss of a perturbed classifier are computed
    on the same perturbation.

    Read more in the :ref:`User Guide <choosing_h>`.

    Parameters
    ----------
    method : {'nw', 'tv', 'lipschitz', 'monotone'}
        The bound: :class:`NWCalibrationBound`, :class:`TVCalibrationBound`,
        :class:`LipschitzBucketBound` or :class:`MonotoneCalibrationBound`. ``"tv"``
        and ``"monotone"`` need no ``h``: they bound the model's own probabilities.

    pos_label : int, float, bool or str, default=None
        The positive class, as in scikit-learn's scorers: the bound is on the
        calibration of the predicted probability of ``pos_label`` (its column among
        ``estimator.classes_``), against the labels equal to ``pos_label``. ``None``
        means ``estimator.classes_[1]``.

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
        A bound whose assumption the data reject scores -1, the trivial bound: a
        band that crosses (``"monotone"``: the data reject the monotone calibration
        function it assumes; a :class:`MonotonicityWarning` says so), or an empty
        interval (lower bound above upper bound, e.g. ``L`` too small; a warning
        says so). Its own bound is not certified, and is small.

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
    [0.07  0.073]
    """
    names = _BOUNDS[method].smoothness_params
    given = {k: v for k, v in params.items() if v is not None}
    estimator = _BOUNDS[method](**params)  # TypeError for unknown names
    estimator._validate_params()
    if any(name in given for name in names):
        estimator._method()  # h against b1/b2/L: exactly one way
    return _BoundScorer(method, params, pos_label)


_LOSSES = {"log_loss", "brier_score", "auroc_loss"}


class _PerturbationScorer(_ProbaScorer):
    """``scorer(estimator, X, y)`` = minus a cost of the perturbation."""

    def __init__(self, metric, h, random_state, pos_label=None):
        super().__init__(pos_label)
        self.metric = metric
        self.h = h
        self.random_state = random_state

    def __repr__(self):
        label = "" if self.pos_label is None else f", pos_label={self.pos_label!r}"
        return (
            f"make_perturbation_scorer({self.metric!r}, h={self.h!r}{label}, "
            f"random_state={self.random_state!r})"
        )

    def _value(self, estimator, X, labels, column, predicted):
        step = _perturbed_step(estimator)
        if self.h is None and step is None:
            raise ValueError(
                f"make_perturbation_scorer({self.metric!r}) needs h: the scored "
                "estimator is not a SechPerturbedClassifier nor a Pipeline ending in "
                f"one; got {type(estimator).__name__}. Pass h to "
                "make_perturbation_scorer to score the perturbation of any classifier."
            )
        if step is not None and self.h is not None and self.h != step.h:
            raise ValueError(
                f"make_perturbation_scorer({self.metric!r}, h={self.h!r}) scored a "
                f"SechPerturbedClassifier with h={step.h!r}: it would score another "
                "perturbation than the classifier's. Leave h out (the scorer reads it "
                "from the classifier)."
            )
        h = step.h if self.h is None else self.h
        if step is None:  # not perturbed: the shared prediction is the original
            original = predicted()
        else:
            original = _column(_unperturbed_proba(estimator, X), column)
        if self.metric == "log_loss":
            return -perturbed_log_loss(labels, original, h=h)
        if self.metric == "brier_score":
            return -perturbed_brier_score_loss(labels, original, h=h)
        if self.h is None:  # the model's own perturbation, shared with other scorers
            scores = predicted()
        else:
            scores = perturb_scores(original, h, random_state=self.random_state)
        return -(roc_auc_score(labels, original) - roc_auc_score(labels, scores))


@validate_params(
    {
        "metric": [StrOptions(_LOSSES)],
        "h": [Interval(Real, 0, None, closed="neither"), None],
        "pos_label": [Real, str, "boolean", None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_perturbation_scorer(metric, *, h=None, pos_label=None, random_state=None):
    """Scorer of what the sech perturbation costs a classifier (greater is better).

    On the scoring data, compares the classifier's perturbed probabilities with its
    unperturbed ones (those of the inner estimator of a
    :class:`SechPerturbedClassifier`, also as the last step of a
    :class:`~sklearn.pipeline.Pipeline`):

    - ``"log_loss"``: minus :func:`perturbed_log_loss`, the expected log-loss under
      the perturbation (deterministic);
    - ``"brier_score"``: minus :func:`perturbed_brier_score_loss` (deterministic);
    - ``"auroc_loss"``: minus the drop in ROC AUC from the unperturbed to the perturbed
      probabilities (one perturbation), the quantity the paper bounds when choosing
      ``h`` (section 7). In a ``scoring`` dict, that perturbation is the one
      :func:`make_bound_scorer`'s scorers bound: all share one ``predict_proba`` call
      per candidate and fold. Being one random draw, it is noisy: on a few
      thousand validation rows its spread from draw to draw can be of the order of
      the default tolerance of :func:`largest_h_within_tolerance` (0.001), and a
      single fold can show a negative drop. Compare candidates by the mean over
      several folds (``GridSearchCV``'s ``mean_test_``), on enough rows, or by the
      deterministic costs above.

    Read more in the :ref:`User Guide <choosing_h>`.

    Parameters
    ----------
    metric : {'log_loss', 'brier_score', 'auroc_loss'}
        What to score.

    h : float, default=None
        Perturbation bandwidth, ``0 < h <= 0.5``. ``None`` reads it from the scored
        :class:`SechPerturbedClassifier`; given, any probabilistic classifier can be
        scored as if it were perturbed with ``h`` (a
        :class:`SechPerturbedClassifier` with another ``h`` is an error).

    pos_label : int, float, bool or str, default=None
        The positive class, as in scikit-learn's scorers: the probabilities are those
        of ``pos_label`` (its column among ``estimator.classes_``) and the labels
        equal to it count as positive. ``None`` means ``estimator.classes_[1]``.

    random_state : int, RandomState instance or None, default=None
        Seeds the perturbation drawn for ``"auroc_loss"`` when ``h`` is given (with
        ``h=None`` the scored classifier draws its own).

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y)`` returning minus the cost. Name it ``neg_`` and
        the metric in a ``scoring`` dict (``"neg_auroc_loss"``, the key
        :func:`largest_h_within_tolerance` reads by default), as scikit-learn names
        its negated scores (``"neg_log_loss"``): ``cv_results_`` holds minus the cost.

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
    check_perturbation_h(h)
    return _PerturbationScorer(metric, h, random_state, pos_label)


def _renamed(cv_results):
    """A hint for ``cv_results_`` keyed by ``auroc_loss``, the earlier default."""
    if "mean_test_auroc_loss" not in cv_results:
        return ""
    return (
        " It has 'mean_test_auroc_loss': the default key is now 'neg_auroc_loss' "
        "(the scorer returns minus the AUROC loss, and scikit-learn names negated "
        "scores neg_...); rename the scorer, or pass scorer='auroc_loss'."
    )


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
                f"make_perturbation_scorer('auroc_loss'), ...}}.{_renamed(cv_results)}"
            )
        params = cv_results["params"]
        name = self._param_name(params)
        h = np.array([p.get(name, np.nan) for p in params], dtype=float)
        cost = -np.asarray(cv_results[key], dtype=float)
        if np.isnan(cost).all():
            raise ValueError(
                f"Every candidate's {key} is NaN: no scoring succeeded (with "
                "GridSearchCV's error_score=np.nan, every fit or score failed; its "
                "warnings say why), so there is no h to choose."
            )
        ok = np.flatnonzero((cost <= self.tolerance) & np.isfinite(h))
        if ok.size == 0:
            best = int(np.nanargmin(cost))
            warnings.warn(
                f"No candidate's mean cost ({self.scorer!r}, negated) is within the "
                f"tolerance {self.tolerance:g}: the smallest is {cost[best]:.3g}, at "
                f"{name}={h[best]:g}, which is refit. It is not 'the largest h within "
                "tolerance'; search smaller h, or accept a larger tolerance.",
                UserWarning,
                stacklevel=_user_stacklevel(),
            )
            return best
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
def largest_h_within_tolerance(tolerance=0.001, *, scorer="neg_auroc_loss", param=None):
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

    scorer : str, default='neg_auroc_loss'
        Key of the cost scorer in ``GridSearchCV``'s ``scoring`` dict; it must return
        minus the cost, as :func:`make_perturbation_scorer` does (hence ``neg_``,
        scikit-learn's prefix for negated scores).

    param : str, default=None
        Name of the bandwidth in the parameter grid; ``None`` finds the one parameter
        named ``h`` or ending in ``__h`` (as in a pipeline).

    Returns
    -------
    refit : callable
        ``refit(cv_results) -> int``, the index of the chosen candidate: the largest
        ``h`` whose mean cost is at most ``tolerance`` (ties: the smaller cost), or,
        if none qualifies, the candidate of smallest mean cost, with a warning. A
        ValueError if every candidate's cost is NaN (every scoring failed).

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
    ...     {"h": [2.0**-k for k in range(5, 9)]},
    ...     scoring={"neg_auroc_loss": make_perturbation_scorer("auroc_loss")},
    ...     refit=largest_h_within_tolerance(0.001),
    ... ).fit(X, y)
    >>> search.best_params_["h"] == 2**-7  # AUROC drop 0.0017 at 2**-6, 0.0006 at 2**-7
    True
    """
    return _LargestH(tolerance, scorer, param)
