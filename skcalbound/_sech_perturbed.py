"""``SechPerturbedClassifier`` and ``perturb_scores``: the sech perturbation of a
classifier's probabilities (paper section 5, Appendix D; SPEC section 6)."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils import Bunch, check_random_state, get_tags
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    process_routing,
)
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from ._assumptions import check_perturbation_h
from ._compat import (
    HasMethods,
    Interval,
    _fit_context,
    _routing_enabled,
    validate_params,
)
from ._sech import sech_derivative_bounds, sech_inverse_cdf
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
        ``predict_proba`` output, whose column 1 (the second class in sorted order,
        scikit-learn's default positive class) is perturbed: without labels there
        is no ``pos_label`` to choose another; pass that class's column instead.

    h : float
        Bandwidth of the perturbation, in probability units, ``0 < h <= 0.5``
        (typically ``2**-6``; a larger ``h`` is refused, as by the bounds). Small
        ``h`` changes the scores little (and the ranking, hence AUROC, hardly at all);
        the bound's slack grows as ``h`` shrinks.

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
    check_perturbation_h(h)
    s = check_probabilities(scores)
    u = check_random_state(random_state).uniform(size=s.shape[0])
    return sech_inverse_cdf(u, s, float(h))


class SechPerturbedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Binary classifier whose probabilities are perturbed with the sech kernel.

    Wraps any binary classifier with ``predict_proba`` and replaces each of its
    positive-class probabilities :math:`s_o` by a fresh draw from the density
    :math:`k(s \\mid s_o) \\propto \\operatorname{sech}((s - s_o)/h)` on [0, 1].
    Whatever the inner classifier, the calibration function
    :math:`\\eta(s) = E[y \\mid s]` of the perturbed probabilities then has
    :math:`|\\eta'| \\le \\tanh(1/h)/(2h)` and
    :math:`|\\eta''| \\le \\tfrac32 \\tanh^2(1/h)/h^2` (Corollaries 3 and 4 of the
    paper), which is what :class:`NWCalibrationBound` (and
    :class:`LipschitzBucketBound`) need: pass them the same ``h``, or use
    :func:`make_bound_scorer`, which reads it from this estimator. For small ``h`` the
    ranking of the scores, hence the AUROC, hardly changes.

    Read more in the :ref:`User Guide <choosing_h>`.

    Parameters
    ----------
    estimator : estimator object
        A binary classifier implementing ``fit`` and ``predict_proba``. It is cloned
        and fitted in :meth:`fit`; to wrap an already fitted model without refitting
        it, pass ``sklearn.frozen.FrozenEstimator(model)``.

    h : float, default=2**-6
        Bandwidth of the perturbation, in probability units, ``0 < h <= 0.5``
        (:meth:`fit` refuses a larger ``h``, as the bounds do). The paper finds
        ``2**-6`` costs almost no AUROC; larger ``h`` gives tighter certified bounds.

    random_state : int, RandomState instance or None, default=None
        Seeds the generator, created in :meth:`fit`, from which every call of
        :meth:`predict_proba` draws fresh noise: the sequence of outputs of a fitted
        estimator is reproducible for an int, while two calls on the same ``X`` give
        independent perturbations, as the guarantee requires.

    Attributes
    ----------
    estimator_ : estimator object
        The fitted inner classifier.

    classes_ : ndarray of shape (2,)
        The class labels, from ``estimator_``.

    n_features_in_ : int
        Number of features seen by ``estimator_`` in :meth:`fit` (when it defines it).

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen by ``estimator_``, when it defines them.

    b1_ : float
        :math:`\\tanh(1/h)/(2h)`: bound on the derivative of the calibration function
        of the perturbed probabilities (also their Lipschitz constant).

    b2_ : float
        :math:`\\tanh^2(1/h)/(2h^2)`: bound on its second derivative (the sharp
        constant; Corollary 4 of the paper states three times this).

    random_state_ : numpy.random.RandomState
        The generator of the perturbations; it advances with every call of
        :meth:`predict_proba`, :meth:`predict_log_proba` and :meth:`predict`.

    See Also
    --------
    perturb_scores : The same perturbation applied to an array of probabilities.
    NWCalibrationBound : Certified bound on the calibration error of the perturbed
        probabilities.
    make_bound_scorer : Scorer that reads ``h`` from this estimator.

    Notes
    -----
    The noise must be fresh and independent of the labels: the guarantee is about the
    randomised classifier. Deriving it from a hash of ``X`` would repeat it for equal
    inputs and break the derivative bounds for discrete inputs. Predictions are
    therefore not deterministic, and scikit-learn's checks that call
    ``predict_proba`` twice on the same data expect them to be (the estimator sets
    the ``non_deterministic`` tag).

    References
    ----------
    .. [1] Ciosek et al., "Measuring Uncertainty Calibration", ICLR 2026,
       arXiv:2512.13872, section 5 and Appendix D.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalbound import NWCalibrationBound, SechPerturbedClassifier
    >>> X, y = make_classification(n_samples=20_000, random_state=0)
    >>> clf = SechPerturbedClassifier(LogisticRegression(), h=2**-4, random_state=0)
    >>> clf.fit(X[:10_000], y[:10_000]).classes_
    array([0, 1])
    >>> proba = clf.predict_proba(X[10_000:])
    >>> bound = NWCalibrationBound(h=clf.h, random_state=0).fit(proba, y[10_000:])
    >>> print(f"CE of the perturbed classifier in "
    ...       f"[{bound.lower_bound_:.3f}, {bound.bound_:.3f}]")
    CE of the perturbed classifier in [0.000, 0.072]
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict_proba"])],
        "h": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator, *, h=2**-6, random_state=None):
        self.estimator = estimator
        self.h = h
        self.random_state = random_state

    @_fit_context(
        # The inner estimator is validated by its own fit.
        prefer_skip_nested_validation=False
    )
    def fit(self, X, y, **fit_params):
        """Fit a clone of the inner classifier and seed the perturbation.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data, validated by the inner estimator.

        y : array-like of shape (n_samples,)
            Binary target values.

        **fit_params : dict
            Parameters for the inner estimator's ``fit`` (for example
            ``sample_weight``). With metadata routing enabled
            (``sklearn.set_config(enable_metadata_routing=True)``), only those the
            inner estimator requests are passed.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        check_perturbation_h(self.h)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            raise ValueError(
                "Only binary classification is supported. The type of the target is "
                f"{y_type}; the sech perturbation and the calibration bounds are for "
                "the probability of one positive class."
            )
        if _routing_enabled():
            routed = process_routing(self, "fit", **fit_params)
        else:
            routed = Bunch(estimator=Bunch(fit=fit_params))
        self.estimator_ = clone(self.estimator).fit(X, y, **routed.estimator.fit)
        classes = np.asarray(self.estimator_.classes_)
        if classes.shape[0] != 2:
            raise ValueError(
                "Only binary classification is supported: the inner estimator has "
                f"{classes.shape[0]} classes ({classes.tolist()})."
            )
        self.classes_ = classes
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
        b1, b2 = sech_derivative_bounds(self.h)
        self.b1_, self.b2_ = float(b1), float(b2)
        self.random_state_ = np.random.RandomState(
            check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        )
        return self

    def predict_proba(self, X):
        """Perturbed class probabilities, with fresh noise on every call.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data, validated by the inner estimator.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
            ``[1 - s, s]`` with ``s`` the perturbed probability of ``classes_[1]``.
        """
        check_is_fitted(self)
        inner = self.estimator_.predict_proba(X)
        scores = check_probabilities(inner, name="the inner estimator's predict_proba")
        u = self.random_state_.uniform(size=scores.shape[0])
        s = sech_inverse_cdf(u, scores, float(self.h))
        return np.column_stack((1.0 - s, s))

    def predict_log_proba(self, X):
        """Logarithm of perturbed class probabilities (a fresh perturbation).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data, validated by the inner estimator.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, 2)
            ``log`` of :meth:`predict_proba` (``-inf`` where a probability is 0).
        """
        check_is_fitted(self)
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Class of the larger perturbed probability (a fresh perturbation).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data, validated by the inner estimator.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``classes_[1]`` where the perturbed probability of ``classes_[1]``
            exceeds 1/2, else ``classes_[0]``: the argmax of :meth:`predict_proba`.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def get_metadata_routing(self):
        """Get metadata routing of this object.

        Returns
        -------
        routing : MetadataRouter
            Routes ``fit`` metadata to the inner estimator's ``fit``.
        """
        return MetadataRouter(owner=self.__class__.__name__).add(
            estimator=self.estimator,
            method_mapping=MethodMapping().add(caller="fit", callee="fit"),
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        tags.classifier_tags.multi_class = False
        tags.non_deterministic = True
        return tags
