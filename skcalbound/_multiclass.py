"""``MulticlassCalibrationBound``: a binary bound applied to a multiclass reduction."""

import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils import ClassifierTags
from sklearn.utils.validation import validate_data

from ._base import fit_without_positives
from ._compat import HasMethods, StrOptions, _fit_context
from ._validation import _ROW_SUM_ATOL, _num
from ._warnings import (
    BelowChanceWarning,
    MonotonicityWarning,
    _user_stacklevel,
    below_chance,
    below_chance_message,
)

_SHAPE = "a predict_proba output of shape (n_samples, n_classes) with n_classes >= 2"


def _check_proba(X):
    """Check a validated float array is a multiclass ``predict_proba`` output."""
    if X.ndim != 2 or X.shape[1] < 2:
        raise ValueError(f"X must be {_SHAPE}; got an array of shape {X.shape}.")
    finite = np.isfinite(X)
    if not np.all(finite):
        n_nan = int(np.isnan(X).sum())
        n_inf = int(np.isinf(X).sum())
        what = " and ".join(
            f"{k} {part}"
            for part, k in (("NaN", n_nan), ("infinite value(s)", n_inf))
            if k
        )
        raise ValueError(f"X contains {what}; expected finite probabilities in [0, 1].")
    lo, hi = X.min(), X.max()
    if lo < 0.0 or hi > 1.0:
        raise ValueError(
            f"X must hold probabilities in [0, 1]; got values in [{_num(lo)}, "
            f"{_num(hi)}]. Pass predict_proba outputs, not decision_function values."
        )
    row_sums = X.sum(axis=1)
    bad = np.flatnonzero(np.abs(row_sums - 1.0) > _ROW_SUM_ATOL[X.dtype])
    if bad.size:
        raise ValueError(
            f"X must be {_SHAPE} whose rows sum to one, but {bad.size} row(s) do not "
            f"(row {bad[0]} sums to {_num(row_sums[bad[0]])})."
        )


def _check_classes(classes, y, K):
    """The labels of the ``K`` columns: ``classes`` as given, or the sorted labels of
    ``y``; every label of ``y`` must be one of them."""
    seen = np.unique(y)
    if classes is None:
        if seen.size != K:
            shown = seen[:10].tolist()
            more = ", ..." if seen.size > 10 else ""
            raise ValueError(
                f"y has {seen.size} distinct label(s) {shown}{more} but X has {K} "
                "columns: column k is read as the probability of the k-th smallest "
                f"label, so y must contain exactly {K} classes, each at least once "
                "(or pass classes=, the labels of the columns, e.g. the model's "
                "classes_, when some class does not occur in y)."
            )
        return seen
    given = np.asarray(classes)
    if given.ndim != 1 or given.size != K:
        raise ValueError(
            f"classes must be a 1-D list of one label per column of X ({K}); got "
            f"{given.size} label(s) of shape {given.shape}."
        )
    _, counts = np.unique(given, return_counts=True)
    if np.any(counts > 1):
        raise ValueError(f"classes must be distinct; got {given.tolist()}.")
    missing = [label for label in seen.tolist() if label not in given.tolist()]
    if missing:
        raise ValueError(
            f"y contains label(s) {missing[:10]} not in classes={given.tolist()}; "
            "classes must include every label of y."
        )
    return given


def _json_safe(value):
    return value.item() if isinstance(value, np.generic) else value


def _top_label(P, y, classes):
    """``(confidence, correct)``: the largest probability and whether its class is y.

    ``np.argmax`` picks the first maximal column, so ties go to the smaller class.
    """
    predicted = classes[np.argmax(P, axis=1)]
    return P.max(axis=1).astype(np.float64), (predicted == y).astype(np.int64)


def _fit_reduced(inner, scores, labels):
    """``(inner.fit(scores, labels), below_chance(scores, labels))`` on a reduction
    this class built. The inner fit's :class:`BelowChanceWarning`, whose advice
    (``pos_label``, a two-column input) the user cannot act on here, is left to
    :func:`_warn_below_chance`, and a crossing band's :class:`MonotonicityWarning`
    (which cannot say which reduction crossed) to :func:`_warn_crossing`."""
    with warnings.catch_warnings():
        for category in (BelowChanceWarning, MonotonicityWarning):
            warnings.filterwarnings("ignore", category=category)
        fitted = inner.fit(scores, labels)
    return fitted, below_chance(scores, labels)


def _warn_crossing(which, level):
    """The band of the reduction(s) ``which`` crosses: monotonicity is rejected."""
    warnings.warn(
        f"The calibration band crosses (L(s) > U(s) at some score) for {which}: the "
        f"data reject a non-decreasing calibration function there at level "
        f"{level:g}, and the interval assumes one (monotonicity_rejected_ is True). "
        "Use TVCalibrationBound as the inner estimator instead: it assumes bounded "
        "variation, not monotonicity.",
        MonotonicityWarning,
        stacklevel=_user_stacklevel(),
    )


def _warn_below_chance(subject, auroc, classes):
    """A reduction ranks below chance: the usual cause is the column order of X."""
    shown = [_json_safe(c) for c in classes]
    check = (
        f"that column k of X is the probability of classes_[k], with classes_ = "
        f"{shown} (the sorted labels of y unless classes= names the columns)"
    )
    warnings.warn(
        below_chance_message(subject, auroc, check),
        BelowChanceWarning,
        stacklevel=_user_stacklevel(),
    )


def _listed(items):
    """``'a'``, ``'a and b'``, ``'a, b and c'``."""
    items = [str(x) for x in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class MulticlassCalibrationBound(MetaEstimatorMixin, BaseEstimator):
    """Certified bounds on multiclass calibration errors via a binary reduction.

    Wraps one of the binary bound estimators (:class:`TVCalibrationBound`,
    :class:`NWCalibrationBound`, :class:`LipschitzBucketBound`,
    :class:`MonotoneCalibrationBound`) and applies it to a
    reduction of a multiclass ``predict_proba`` output ``P`` of shape
    ``(n_samples, K)``, in the manner of
    :class:`~sklearn.multiclass.OneVsRestClassifier` (the given estimator is cloned,
    never fitted itself).

    - ``strategy="top_label"``: the score is the confidence ``max_k P_k`` and the
      binary label is whether the predicted class ``argmax_k P_k`` is the true one.
      One clone is fitted at the estimator's own ``confidence_level`` and bounds the
      top-label calibration error ``E|max_k P_k - P(y = argmax_k P_k | max_k P_k)|``.
    - ``strategy="classwise"``: one clone per class ``k``, fitted on ``(P[:, k], y ==
      classes_[k])`` at confidence level ``1 - (1 - c) / K`` (``c`` the estimator's
      ``confidence_level``), so that by the union bound all ``K`` intervals hold at
      once with probability at least ``c``. Then :attr:`bound_` (the mean of the
      per-class bounds) bounds the average class-wise calibration error
      ``(1/K) sum_k E|P_k - P(y = k | P_k)|``, :attr:`worst_bound_` bounds the largest
      class-wise error and :attr:`worst_lower_bound_` (the largest per-class lower
      bound) is a lower bound on it, all simultaneously.

    Read more in the :ref:`User Guide <multiclass_and_segments>`.

    Parameters
    ----------
    estimator : estimator instance
        An unfitted binary bound estimator: :class:`TVCalibrationBound`,
        :class:`NWCalibrationBound`, :class:`LipschitzBucketBound` or
        :class:`MonotoneCalibrationBound`, with its assumptions (``V``,
        ``b1``/``b2``/``h``, ``L``, a monotone calibration function) stated for the
        *reduced* binary problem. Its ``confidence_level`` is the level of the whole
        certificate; its ``random_state`` is kept as given in every clone. Its
        ``pos_label`` is ignored: the reduction passes labels in {0, 1}.

    strategy : {'top_label', 'classwise'}, default='top_label'
        Which calibration error is bounded (see above).

    classes : array-like of shape (n_classes,), default=None
        The label of each column of ``X``, in column order (e.g. the model's
        ``classes_``), as ``labels`` of :func:`~sklearn.metrics.log_loss`: needed when
        some class does not occur in ``y``. It must include every label of ``y``.
        ``None`` reads the labels from ``y``, which must then contain all of them:
        column ``k`` is the ``k``-th smallest.

    Attributes
    ----------
    bound_ : float
        Certified upper bound: on the top-label calibration error, or on the average
        class-wise calibration error (mean of the per-class bounds). An inner NW or
        Lipschitz estimator with ``guarantee='paper'`` makes this and every other
        bound here hold in expectation only: not certified (its
        ``result_.in_expectation_only``).

    lower_bound_ : float
        Certified lower bound on the same quantity (for ``'classwise'`` the mean of
        the per-class lower bounds), holding together with :attr:`bound_`.

    estimate_ : float
        Point estimate of the same quantity, not certified: the inner estimator's
        ``estimate_`` on the reduced problem (the mean over classes for
        ``'classwise'``). It can lie outside ``[lower_bound_, bound_]``.

    estimator_ : estimator instance
        The fitted clone (``'top_label'`` only).

    estimators_ : list of estimator instances
        The fitted clone of each class, in the order of :attr:`classes_`
        (``'classwise'`` only).

    per_class_ : pandas.DataFrame
        One row per class with columns ``class``, ``n_positive``, ``lower_bound``,
        ``bound`` and ``estimate``, and with :class:`MonotoneCalibrationBound`
        ``monotonicity_rejected`` (its band crossed) (``'classwise'`` only).

    monotonicity_rejected_ : bool
        With :class:`MonotoneCalibrationBound` only: whether a band crossed (the
        top-label one, or any class's), so that the data reject the monotone
        calibration function its interval assumes; :attr:`bound_` and
        :attr:`lower_bound_` then rest on a rejected assumption (a
        :class:`MonotonicityWarning` names the reduction).

    worst_bound_ : float
        Certified upper bound on ``max_k CE_k``, the largest per-class bound
        (``'classwise'`` only).

    worst_lower_bound_ : float
        Certified lower bound on ``max_k CE_k``, the largest per-class lower bound,
        since ``max_k CE_k >= CE_j >= lower_j`` for every ``j`` (``'classwise'``
        only).

    certificate_ : dict
        JSON-safe summary (``method``, ``strategy``, ``n_classes``, ``classes``,
        ``bound``, ``lower_bound`` and ``inner``, the inner estimators'
        certificates). Defined only if the inner estimators define ``certificate_``.

    classes_ : ndarray of shape (n_classes,)
        The labels of the columns: ``classes`` if given, else the sorted labels of
        ``y``; column ``k`` of ``X`` is the probability of ``classes_[k]``, as
        scikit-learn orders ``predict_proba``.

    n_features_in_ : int
        Number of columns of ``X``, the number of classes ``K``.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of ``X``, defined only when ``X`` is a data frame with string
        column names.

    See Also
    --------
    TVCalibrationBound, NWCalibrationBound, LipschitzBucketBound : The binary bounds.
    perturb_scores : The sech perturbation that makes NW's assumptions hold.

    Notes
    -----
    **What is certified.** The inner bound certifies the calibration of the reduced
    binary problem under the inner estimator's assumption; the assumption must hold
    for that problem (for ``'top_label'``: the function ``c -> P(correct | c)`` of
    the confidence; for ``'classwise'``: each ``p -> P(y = k | P_k = p)``). ``V = 1``
    holds whenever these functions are monotone, and so does
    :class:`MonotoneCalibrationBound`'s assumption.

    **Ties in the argmax** go to the first maximal column (``numpy.argmax``), that
    is to the smallest label (to the first of ``classes``): a row ``[0.4, 0.4,
    0.2]`` predicts ``classes_[0]``.

    **A class absent from** ``y`` (given in ``classes``). Top-label: its predictions
    are all wrong, as they should be. Class-wise: its one-vs-rest problem has no
    positive label, and the inner bound is computed on those all-negative labels
    (which the binary estimators' ``fit`` refuses from a user, as a likely wrong
    column); the certificate is as valid as any other, the guarantee being over all
    samples, those without a positive included. Its row of :attr:`per_class_` has
    ``n_positive`` 0.

    **NW and Lipschitz with** ``h``. ``h`` is an assumption about *perturbed*
    scores, and the estimators reject many exactly tied scores when ``h`` is given.
    Perturbing the multiclass model does not make the reduced scores perturbed; the
    certified recipe is to perturb the *reduced* scores and bound those yourself:

    - top-label: ``s = perturb_scores(P.max(axis=1), h)``, labels
      ``classes[P.argmax(axis=1)] == y``, then ``NWCalibrationBound(h=h).fit(s,
      labels)``. This certifies the calibration error of the perturbed confidence
      ``s`` (as a probability that the argmax is right), **not** that of the
      unperturbed multiclass model.
    - class-wise: perturb each column ``P[:, k]`` separately, fit on ``y ==
      classes[k]`` at level ``1 - (1 - c) / K`` and combine as this class does; it
      certifies the perturbed one-vs-rest probabilities.

    Alternatively state ``b1``/``b2`` (NW) or ``L`` (Lipschitz) directly when they
    are known to hold for the reduced problem.

    Examples
    --------
    >>> from skcalbound import TVCalibrationBound
    >>> from skcalbound import MulticlassCalibrationBound
    >>> from skcalbound.datasets import make_multiclass
    >>> data = make_multiclass(20_000, 3, random_state=0)
    >>> est = MulticlassCalibrationBound(TVCalibrationBound(random_state=0))
    >>> est = est.fit(data.proba, data.labels)
    >>> ce = data.true_top_label_ce
    >>> print(f"{est.lower_bound_:.3f} <= {ce:.3f} <= {est.bound_:.3f}")
    0.000 <= 0.133 <= 0.276
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "get_params", "set_params"])],
        "strategy": [StrOptions({"top_label", "classwise"})],
        "classes": ["array-like", None],
    }

    def __init__(self, estimator, *, strategy="top_label", classes=None):
        self.estimator = estimator
        self.strategy = strategy
        self.classes = classes

    def _inner(self, confidence_level=None):
        params = self.estimator.get_params(deep=False)
        if "confidence_level" not in params:
            raise TypeError(
                "estimator must be a calibration bound estimator (TVCalibrationBound, "
                "NWCalibrationBound, LipschitzBucketBound or MonotoneCalibrationBound) "
                "with a confidence_level; "
                f"got {type(self.estimator).__name__}."
            )
        inner = clone(self.estimator)
        if "pos_label" in params:
            inner.set_params(pos_label=None)
        if confidence_level is not None:
            inner.set_params(confidence_level=confidence_level)
        return inner

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the inner bound estimator(s) on the reduction of ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes)
            A ``predict_proba`` output: rows in [0, 1] summing to one, column ``k``
            the probability of the ``k``-th smallest label. Not modified.
        y : array-like of shape (n_samples,)
            Labels, each one of ``classes``; without ``classes``, every one of the
            ``n_classes`` classes must occur.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._inner()  # the estimator's type, before the data
        X, y = validate_data(
            self,
            X,
            y,
            ensure_2d=False,
            allow_nd=True,
            dtype=(np.float64, np.float32),
            ensure_all_finite=False,
            y_numeric=False,
        )
        # validate_data leaves n_features_in_ unset for input it cannot call 2-D.
        self.n_features_in_ = 1 if X.ndim == 1 else X.shape[1]
        _check_proba(X)
        self.classes_ = _check_classes(self.classes, y, X.shape[1])
        if self.strategy == "top_label":
            self._fit_top_label(X, y)
        else:
            self._fit_classwise(X, y)
        self._set_certificate()
        return self

    def _fit_top_label(self, X, y):
        scores, correct = _top_label(X, y, self.classes_)
        n_correct = int(correct.sum())
        if n_correct in (0, correct.size):
            what = "right" if n_correct else "wrong"
            raise ValueError(
                f"Every top-label prediction is {what}, so the top-label reduction has "
                "a single class; the bound needs both right and wrong predictions."
            )
        self.estimator_, found = _fit_reduced(self._inner(), scores, correct)
        if found is not None:
            auroc, n1, n0 = found
            _warn_below_chance(
                "The top-label confidences max_k P_k rank the right predictions",
                f"their AUROC against the correctness of the argmax is {auroc:.3f} "
                f"({n1} right and {n0} wrong predictions)",
                self.classes_,
            )
        self.bound_ = float(self.estimator_.bound_)
        self.lower_bound_ = float(self.estimator_.lower_bound_)
        self.estimate_ = float(self.estimator_.estimate_)
        if hasattr(self.estimator_, "monotonicity_rejected_"):
            self.monotonicity_rejected_ = bool(self.estimator_.monotonicity_rejected_)
            if self.monotonicity_rejected_:
                level = (1.0 - self.estimator_.confidence_level) / 2
                _warn_crossing("the top-label confidences", level)

    def _fit_classwise(self, X, y):
        K = self.classes_.size
        level = 1.0 - (1.0 - self.estimator.confidence_level) / K
        self.estimators_ = []
        rows = []
        below = {}  # column: its AUROC against y == its class, when below chance
        for k, label in enumerate(self.classes_):
            positive = (y == label).astype(np.int64)
            if positive.all():
                raise ValueError(
                    f"Every label of y is {_json_safe(label)!r}: the class-wise "
                    "reduction needs at least two classes to occur in y."
                )
            scores = X[:, k].astype(np.float64)
            if positive.any():
                fitted, found = _fit_reduced(self._inner(level), scores, positive)
                if found is not None:
                    below[k] = found[0]
            else:  # a class of ``classes`` absent from y (see Notes)
                fitted = fit_without_positives(self._inner(level), scores)
            self.estimators_.append(fitted)
            rows.append(
                {
                    "class": label,
                    "n_positive": int(positive.sum()),
                    "lower_bound": float(fitted.lower_bound_),
                    "bound": float(fitted.bound_),
                    "estimate": float(fitted.estimate_),
                }
            )
        if len(below) == 1:
            ((k, auroc),) = below.items()
            label = _json_safe(self.classes_[k])
            _warn_below_chance(
                f"The scores of column {k} of X rank class {label!r}",
                f"its AUROC against y == {label!r} is {auroc:.3f}",
                self.classes_,
            )
        elif below:
            _warn_below_chance(
                f"The scores of columns {_listed(below)} of X rank their classes",
                "their AUROCs against y == classes_[k] are "
                + _listed(f"{a:.3f}" for a in below.values()),
                self.classes_,
            )
        columns = ["class", "n_positive", "lower_bound", "bound", "estimate"]
        rejected = [
            getattr(e, "monotonicity_rejected_", None) for e in self.estimators_
        ]
        if rejected[0] is not None:  # a band per class: whether it crossed
            for row, crossed in zip(rows, rejected):
                row["monotonicity_rejected"] = bool(crossed)
            columns.append("monotonicity_rejected")
            self.monotonicity_rejected_ = any(rejected)
            if self.monotonicity_rejected_:
                named = [
                    f"{_json_safe(c)!r}" for c, r in zip(self.classes_, rejected) if r
                ]
                _warn_crossing(
                    f"class{'es' if len(named) > 1 else ''} {_listed(named)} "
                    "(one-vs-rest)",
                    (1.0 - level) / 2,
                )
        self.per_class_ = pd.DataFrame(rows, columns=columns)
        self.bound_ = float(self.per_class_["bound"].mean())
        self.lower_bound_ = float(self.per_class_["lower_bound"].mean())
        self.estimate_ = float(self.per_class_["estimate"].mean())
        self.worst_bound_ = float(self.per_class_["bound"].max())
        self.worst_lower_bound_ = float(self.per_class_["lower_bound"].max())

    def _set_certificate(self):
        fitted = [self.estimator_] if self.strategy == "top_label" else self.estimators_
        inner = [getattr(est, "certificate_", None) for est in fitted]
        if any(cert is None for cert in inner):
            return
        self.certificate_ = {
            "method": "MulticlassCalibrationBound",
            "strategy": self.strategy,
            "n_classes": int(self.classes_.size),
            "classes": [_json_safe(c) for c in self.classes_],
            "bound": self.bound_,
            "lower_bound": self.lower_bound_,
            "inner": inner,
        }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = False
        tags.classifier_tags = ClassifierTags(multi_class=True)
        tags.input_tags.two_d_array = True
        return tags
