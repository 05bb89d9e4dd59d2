"""The cross-fitting framework shared by every certified bound.

``_BaseCalibrationBound.fit`` is the only place where the stages meet:
``_validation`` -> ``_splitting`` -> ``_surrogates`` -> ``_terms`` -> ``_result``.
A bound plugs in through a small picklable *method* object (see ``_BoundMethod``).
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import ClassifierTags, check_random_state
from joblib import effective_n_jobs
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted

from ._certificate import build_certificate
from ._compat import Interval, StrOptions, _fit_context
from ._result import FoldResult, aggregate_folds
from ._chunks import ArraySource, DaskSource, IterableSource, check_random_seed, is_dask_collection
from ._splitting import check_enough_rows, row_folds, DataOrder, GroupDesign, SortedSample, make_folds, shuffle_ties
from ._validation import (
    check_held_out_labels,
    check_scores,
    check_scores_labels,
    check_untied_scores,
    warn_if_low_confidence,
    warn_if_vacuous,
)


class _BoundMethod:
    """Interface of the per-bound method objects (frozen dataclasses in subclasses).

    The default :meth:`fit_folds` gathers each fold's training data, calls :meth:`fit`
    and then :meth:`fold_terms` on the validation scores; a method whose surrogate can
    be computed more cheaply from the whole sorted sample overrides it.

    Attributes
    ----------
    min_train : int
        Fewest training points a fold may have.
    """

    min_train = 2
    # Whether the bound runs on mergeable statistics (``fit_mergeable``: chunks, Dask,
    # no sort); if not, why it cannot run on data that is not in one place, and what
    # to use instead.
    mergeable = False
    unmergeable_reason = " needs all the rows in memory"
    unmergeable_alternative = "load the data as arrays, or use NWCalibrationBound."

    def fit(self, sorted_scores, sorted_labels, delta, *, out=None):
        """Fit the surrogate on training data in stable score order.

        ``sorted_labels`` are float64 zeros and ones; ``out``, when given, is a float64
        scratch buffer of the same length the method may write to.
        """
        raise NotImplementedError

    def fold_terms(self, surrogate, scores, delta, *, is_sorted):
        """Return ``(terms, info, estimate)`` for validation ``scores``.

        ``is_sorted`` says the scores are nondecreasing (cross-fitting passes them in
        sorted order; ``score`` in data order).
        """
        raise NotImplementedError

    def fit_folds(self, sample, folds, delta):
        """Fit on each fold's training part and bound on its validation part."""
        workspace = _Workspace(max(int(np.count_nonzero(fold.train)) for fold in folds))
        results = []
        for fold in folds:
            train = np.flatnonzero(fold.train)  # one fold's index array alive at a time
            scores, labels, out = workspace.training_data(sample, train)
            surrogate = self.fit(scores, labels, delta, out=out)
            validation = sample.scores.take(np.flatnonzero(fold.validation))
            results.append(
                fold_result(self, surrogate, validation, delta, is_sorted=True)
            )
        return results

    def refit(self, sample, delta, folds=()):
        """The surrogate on all data (what ``predict`` and ``score`` use); ``folds``
        are the cross-fitted ``FoldResult`` s, for choices a method makes from them."""
        return self.fit(sample.scores, sample.labels.astype(np.float64), delta)

    def fitted_attributes(self, surrogate, folds):
        """Extra fitted attributes of the estimator, by name, from the refit
        ``surrogate`` and the cross-fitted ``folds`` (a tuple of ``FoldResult``)."""
        return {}

    def held_out_result(self, surrogate, scores, delta):
        """The fixed-split bound of ``surrogate`` on held-out ``scores`` (data order)."""
        return fold_result(self, surrogate, scores, delta, is_sorted=False)


def interval_at(estimator, alpha):
    """``(lower, upper)`` of a fitted bound recomputed at ``confidence_level = 1 -
    alpha`` (``alpha`` given as such, so that tiny levels keep their digits), without
    refitting, or ``None`` if its method cannot (its surrogate depends on the level,
    as TV's does).

    Valid because the fold statistics of NW and Lipschitz do not depend on the level
    (bandwidths, candidates and weights are fixed); each fold is recomputed at its
    share ``alpha / n_splits_`` and aggregated as in ``fit``.
    """
    method = estimator._method()
    rebound = getattr(method, "rebound", None)
    if rebound is None:
        return None
    delta = alpha / estimator.n_splits_
    folds = [rebound(fold, delta) for fold in estimator.result_.folds]
    result = aggregate_folds(folds, estimator.aggregate, 1.0 - alpha, warn=False)
    return result.lower_bound, result.bound


def fold_result(method, surrogate, scores, delta, *, is_sorted):
    """The :class:`FoldResult` of ``method.fold_terms``."""
    terms, info, estimate = method.fold_terms(surrogate, scores, delta, is_sorted=is_sorted)
    info = {
        "n_train": int(surrogate.n_train),
        "n_validation": int(scores.shape[0]),
        "delta": float(delta),
        **info,
    }
    return FoldResult(terms=terms, info=info, estimate=float(estimate))


class _Workspace:
    """Float64 buffers for one fold's training data, reused from fold to fold.

    At 10**7 samples a fresh 64 MB array per fold and per vector costs more than the
    TV prox itself on a virtual machine, where first-touch page faults are slow. A
    fold's surrogate may keep references into the buffers, so it must not outlive its
    fold: only the numbers in its ``FoldResult`` are kept.
    """

    def __init__(self, size):
        self.scores = np.empty(size)
        self.labels = np.empty(size)
        self.labels_uint8 = np.empty(size, dtype=np.uint8)
        self.out = np.empty(size)

    def training_data(self, sample, train):
        """Training scores and float64 labels at sorted positions ``train``."""
        m = train.shape[0]
        # mode="clip" (the indices are valid) lets take write into ``out`` unbuffered.
        scores = np.take(sample.scores, train, out=self.scores[:m], mode="clip")
        labels = self.labels[:m]
        labels[...] = np.take(sample.labels, train, out=self.labels_uint8[:m], mode="clip")
        return scores, labels, self.out[:m]


def bound_classes():
    """``{short name: class}`` of every bound estimator, read from the classes.

    A bound states its facts as class attributes (``short_name``, ``display_name``,
    ``smoothness_params``); the scorers, the display, the command line and
    ``bounds_by_group`` find the bounds here instead of keeping tables of their own
    (a bound's module must have been imported: the consumers import them all).
    """
    found, stack = {}, list(_BaseCalibrationBound.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        name = cls.__dict__.get("short_name")
        if name:
            found[name] = cls
    return dict(sorted(found.items()))


def bound_name(estimator):
    """The short name of a bound estimator, or a TypeError naming what was given."""
    name = getattr(type(estimator), "short_name", None) if isinstance(
        estimator, _BaseCalibrationBound
    ) else None
    if name is None:
        expected = ", ".join(cls.__name__ for cls in bound_classes().values())
        raise TypeError(f"Expected a bound estimator ({expected}); got "
                        f"{type(estimator).__name__}.")
    return name


class _BaseCalibrationBound(BaseEstimator):
    """Base class: cross-fitted certified upper bound on the L1 calibration error.

    Class attributes a bound sets: ``short_name`` (its ``method=``/``bound=`` string),
    ``display_name`` (in legends and tables) and ``smoothness_params`` (the
    constructor parameters that state a smoothness assumption ``h`` can give; empty
    when none does).
    """

    short_name = None
    display_name = None
    paper_name = None  # the paper's label (experiments' tables, figures), if any
    smoothness_params = ()

    _parameter_constraints = {
        "pos_label": [Real, str, "boolean", None],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "cv": ["cv_object"],
        "aggregate": [StrOptions({"mean", "min"})],
        "guarantee": [StrOptions({"high_probability", "paper"})],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
    }

    def _method(self):
        raise NotImplementedError

    def _check_sorted_scores(self, sorted_scores):
        """With ``h`` (NW, Lipschitz), the scores must look perturbed: not tied."""
        h = getattr(self, "h", None)
        if h is not None:
            check_untied_scores(sorted_scores, h)

    def _score_method(self):
        """The method :meth:`score` uses (fitted state may fix its randomness)."""
        return self._method()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Compute the certified bound by cross-fitting, and refit the surrogate.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Scores in [0, 1] of the positive class, or a ``predict_proba`` output
            (columns in sorted class order; the column of ``pos_label`` is used).
        y : array-like of shape (n_samples,)
            Binary labels; ``pos_label`` says which is the positive class.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        method = self._method()  # hyperparameter consistency, before the data
        warn_if_low_confidence(self.confidence_level)
        if is_dask_collection(X) or is_dask_collection(y):
            source = DaskSource(y, X, self.pos_label)
            return self._fit_source(method, source, "Dask input")
        scores, labels, self.classes_ = check_scores_labels(self, X, y, self.pos_label)
        delta = 1.0 - self.confidence_level
        random_state = check_random_state(self.random_state)
        if getattr(method, "mergeable", False):
            # Mergeable statistics (``_surrogates/_nw_grid``): no sort, folds in data
            # order, the in-memory pass being the one-source case of chunked input.
            h = getattr(self, "h", None)
            n = scores.shape[0]
            check_counts = None
            if h is not None:

                def check_counts(counts):
                    # A block of max(10, n/1000) equal scores fills a cell of the grid
                    # of pass 1 that much: look closer only then.
                    if counts.max() >= max(10, -(-n // 1000)):
                        check_untied_scores(scores, h, is_sorted=False)

            seed = check_random_seed(random_state)
            if self.cv is None or isinstance(self.cv, Integral):
                # Folds drawn row by row from (seed, row index): the same folds, and so
                # the same numbers, as fit_chunks and Dask input with this seed.
                k = 5 if self.cv is None else int(self.cv)
                check_enough_rows(n, k, method.min_train, type(self).__name__)
                designs = [
                    GroupDesign.partition(k, ids=row_folds(seed, 0, n, k).astype(np.intp))
                ]
            else:
                folds = make_folds(
                    self.cv, random_state, DataOrder(n), method.min_train,
                    type(self).__name__,
                )
                designs = GroupDesign.from_folds(folds)
            n_splits = sum(len(d.splits) for d in designs)
            results, surrogate, _ = method.fit_mergeable(
                ArraySource(scores, labels, self.n_jobs), designs, delta / n_splits, seed,
                check_counts=check_counts,
            )
            self._set_result(method, results, surrogate, n)
            self.certificate_ = build_certificate(self, scores, labels)
            return self
        sample = SortedSample.from_arrays(scores, labels)
        self._check_sorted_scores(sample.scores)
        folds = make_folds(
            self.cv, random_state, sample, method.min_train, type(self).__name__
        )
        # After the folds, so that the folds of a seeded fit do not depend on ties.
        sample, folds = shuffle_ties(
            sample, folds, lambda: random_state.randint(np.iinfo(np.int32).max)
        )
        delta_fold = delta / len(folds)  # union bound over the folds
        # One task per worker, each running a contiguous group of folds.
        groups = np.array_split(np.arange(len(folds)), effective_n_jobs(self.n_jobs))
        results = Parallel(n_jobs=self.n_jobs)(
            delayed(method.fit_folds)(sample, [folds[k] for k in g], delta_fold)
            for g in groups
            if g.size
        )
        results = [result for group in results for result in group]
        surrogate = None
        self._set_result(method, results, surrogate, scores.shape[0], sample=sample)
        # The audit record (``_certificate``): data fingerprint in data order.
        self.certificate_ = build_certificate(self, scores, labels)
        return self

    def _set_result(self, method, results, surrogate, n_samples, sample=None):
        """The fitted attributes from the fold results and the refit surrogate (refit
        here from ``sample`` when not given)."""
        self.result_ = aggregate_folds(results, self.aggregate, self.confidence_level)
        self.bound_ = self.result_.bound
        warn_if_vacuous(self.bound_, n_samples, type(self).__name__)
        self.lower_bound_ = self.result_.lower_bound
        self.estimate_ = self.result_.estimate
        self.terms_ = dict(self.result_.terms)
        self.fold_results_ = self.result_.fold_frame()
        self.n_splits_ = len(results)
        if surrogate is None:
            # The surrogate on all data, at the full delta: what predict and score use.
            delta = 1.0 - self.confidence_level
            surrogate = method.refit(sample, delta, self.result_.folds)
        self.surrogate_ = surrogate
        for name, value in method.fitted_attributes(
            self.surrogate_, self.result_.folds
        ).items():
            setattr(self, name, value)

    def _fit_source(self, method, source, what):
        """Fit on rows that are not in one array: ``source`` is a ``_chunks`` source."""
        if not getattr(method, "mergeable", False):
            raise ValueError(
                f"{type(self).__name__} {method.unmergeable_reason.strip()} (got "
                f"{what}); {method.unmergeable_alternative}"
            )
        if not isinstance(self.cv, Integral):
            raise ValueError(
                f"{what} needs cv=<int>: the folds of data that is not in one place "
                "are drawn row by row from (random_state, row index), so that they do "
                f"not depend on the chunking; got cv={self.cv!r}."
            )
        seed = check_random_seed(self.random_state)
        check_enough_rows(source.n_samples, int(self.cv), method.min_train, type(self).__name__)
        h = getattr(self, "h", None)
        check = None
        if h is not None:
            check = lambda scores: check_untied_scores(scores, h, is_sorted=False)  # noqa: E731
        delta = 1.0 - self.confidence_level
        results, surrogate, n_positive = method.fit_mergeable(
            source,
            [GroupDesign.partition(int(self.cv), seed=seed)],
            delta / int(self.cv),
            seed,
            check=check,
        )
        self.classes_ = source.classes
        self.n_features_in_ = 1
        self._set_result(method, results, surrogate, source.n_samples)
        self.certificate_ = build_certificate(
            self, None, None,
            summary=(source.n_samples, n_positive, getattr(source, "digest", None)),
        )
        return self

    def fit_chunks(self, chunks, *, n_samples=None):
        """Compute the certified bound from data in chunks, never all in memory.

        Two passes over the chunks (per-cell statistics, then the per-point terms),
        each holding one chunk and a few grids at a time. The folds are drawn row by
        row from ``(random_state, row index)``, so the result does not depend on how
        the rows are cut into chunks, and equals :meth:`fit` on the same rows with the
        same folds (see :ref:`large_data`).

        Parameters
        ----------
        chunks : sequence or callable
            ``(y_true, y_prob)`` pairs of arrays (or two-column DataFrames, labels
            first), or a function returning a fresh iterator of them (each pass calls
            it). ``y_prob`` holds the positive class's probabilities, one column.
        n_samples : int, default=None
            The total number of rows, if known; otherwise one more pass counts them.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        method = self._method()
        warn_if_low_confidence(self.confidence_level)
        return self._fit_source(
            method, IterableSource(chunks, self.pos_label, n_samples), "chunked input"
        )

    def predict(self, X):
        """Recalibrated probabilities: the surrogate refit on all fitted data.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Scores in [0, 1], or a ``predict_proba`` output.

        Returns
        -------
        ndarray of shape (n_samples,)
            The surrogate calibration function at the scores.
        """
        check_is_fitted(self)
        return self.surrogate_(check_scores(self, X))

    def score(self, X, y):
        """Negated fixed-split certified bound on held-out data (greater is better).

        The surrogate refit on all fitted data plays the training part and ``(X, y)``
        the validation part, at the full ``1 - confidence_level`` (the paper's
        fixed-split bound). Choosing among several bounds by their value on the same
        held-out data needs fresh data or a union bound.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Held-out scores, independent of the data passed to ``fit``.
        y : array-like of shape (n_samples,)
            Held-out labels, from the classes seen in ``fit``. The bound depends on the
            scores only (Proposition 1 evaluates ``|s - eta_hat(s)|``); the labels are
            checked for consistency. The result does not depend on ``cv`` or
            ``aggregate``, which only shape the cross-fitted :attr:`bound_`.

        Returns
        -------
        float
            ``-min(U, 1)`` where ``U`` is the certified bound on the held-out data.
        """
        check_is_fitted(self)
        scores = check_scores(self, X)
        check_held_out_labels(self, y, scores.shape[0])
        self._check_sorted_scores(np.sort(scores))
        delta = 1.0 - self.confidence_level
        fold = self._score_method().held_out_result(self.surrogate_, scores, delta)
        return -min(fold.bound, 1.0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = False
        # Binary labels only (SPEC section 8); scikit-learn's tag for it.
        tags.classifier_tags = ClassifierTags(multi_class=False)
        # X may be 1-D too, but ``one_d_array=True`` only makes sklearn's common checks
        # cut X to its first column and then index it as 2-D, so they crash inside the
        # check instead of testing us. ``two_d_array=False`` would skip them all.
        tags.input_tags.one_d_array = False
        tags.input_tags.two_d_array = True
        return tags
