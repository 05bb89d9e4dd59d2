"""The cross-fitting framework shared by every certified bound.

``_BaseCalibrationBound.fit`` is the only place where the stages meet:
``_validation`` -> ``_splitting`` -> ``_surrogates`` -> ``_terms`` -> ``_result``.
A bound plugs in through a small picklable *method* object (see ``_BoundMethod``).
"""

import dataclasses
import functools
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import ClassifierTags, check_random_state
from sklearn.utils.validation import check_is_fitted

from ._assumptions import check_untied_scores
from ._certificate import DataSummary, build_certificate
from ._chunks import (
    ArraySource,
    DaskSource,
    IterableSource,
    check_random_seed,
    is_dask_collection,
)
from ._compat import Interval, StrOptions, _fit_context
from ._estimate import calibration_estimate, estimate_cells
from ._guarantee import GUARANTEES, guarantee_of
from ._result import FoldResult, aggregate_folds
from ._splitting import (
    DataOrder,
    GroupDesign,
    check_enough_rows,
    make_folds,
    row_folds,
)
from ._validation import check_held_out_labels, check_scores, scores_labels
from ._warnings import (
    warn_if_cells_below_chance,
    warn_if_low_confidence,
    warn_if_vacuous,
)


class _BoundMethod:
    """The hooks of one bound (frozen dataclasses in subclasses).

    Every bound is computed the same way, by :func:`cross_fit`: for each design of
    cross-fitting splits (``_splitting.GroupDesign``), :meth:`passes` reads the rows of
    a source (``_chunks``) and returns, per split, the statistics of its certificate
    (sums over the validation rows given the training rows) and a few facts about it;
    :meth:`fold_terms` turns one split's statistics into its terms at a level
    ``delta`` (closed form); :func:`fold_result` builds every :class:`FoldResult` from
    them; :meth:`surrogate` gives the smoother on all rows (``predict``, ``score``);
    :meth:`held_out` the statistics of that smoother on held-out scores.

    Attributes
    ----------
    min_train : int
        Fewest training points a split may have.
    mergeable : bool
        Whether :meth:`passes` runs on any source (chunks, Dask: sums that merge by
        addition); if not, it needs the rows in memory, and ``unmergeable_reason``
        and ``unmergeable_alternative`` say why and what to use.
    level_free : bool
        Whether the statistics do not depend on ``delta``, so that a fitted bound can
        be recomputed at another level without refitting (``interval_at``).
    nested_levels : bool
        Whether the interval only widens as the level ``delta`` decreases, so that
        ``calibration_test`` gets a valid p-value by bisection on the level.
    """

    min_train = 2
    mergeable = False
    level_free = True
    nested_levels = True
    unmergeable_reason = " needs all the rows in memory"
    unmergeable_alternative = "load the data as arrays, or use NWCalibrationBound."

    def passes(self, source, design, *, delta, key_seed, check=None, check_counts=None):
        """A :class:`Passes` of ``design`` over ``source``.

        ``delta`` is the level of one split (only a method that is not ``level_free``
        reads it); ``key_seed`` the one int drawn from ``random_state`` in ``fit``
        (row keys of subsamples, tie orders); ``check`` is called on every chunk's
        scores and ``check_counts`` on per-cell counts of all rows (the tie check of
        ``h``).
        """
        raise NotImplementedError

    def fold_terms(self, statistics, delta):
        """The :class:`FoldTerms` of one split's ``statistics`` at ``delta``."""
        raise NotImplementedError

    def surrogate(self, passes, folds, source, delta):
        """The smoother on all rows, at the full level ``delta``, from the
        :class:`Passes` of every design and the cross-fitted ``folds`` (a method may
        choose among candidates from them)."""
        raise NotImplementedError

    def held_out(self, surrogate, scores, labels=None):
        """``(statistics, info)`` of ``surrogate`` on held-out ``scores`` (their 0/1
        ``labels``: only a method whose certificate reads validation labels uses
        them)."""
        raise NotImplementedError

    def fitted_attributes(self, surrogate, folds, key_seed):
        """Extra fitted attributes of the estimator, by name."""
        return {}

    def interval_at(self, estimator, alpha):
        """``(lower, upper)`` of the fitted ``estimator`` at level ``alpha``, for a
        method that is not ``level_free`` but recomputes its interval from level-free
        data the fit kept; ``None`` if it cannot (TV)."""
        return None


@dataclass(frozen=True)
class Passes:
    """What :meth:`_BoundMethod.passes` gives: per split ``(statistics, info)``, the
    number of positive labels among the rows, and what :meth:`_BoundMethod.surrogate`
    needs (``refit``: the method's own)."""

    splits: tuple
    n_positive: int
    refit: object = None


@dataclass(frozen=True)
class FoldTerms:
    """One split at one level: additive ``terms`` (``validation_mean`` first), facts
    for ``fold_results_`` (``info``), the lower and upper bounds when the method
    chooses them (``lower``, else ``validation_mean`` minus the other terms;
    ``upper``, else the sum of the terms) and arrays kept out of the frame
    (``extra``)."""

    terms: dict
    info: dict = field(default_factory=dict)
    lower: float = None
    extra: dict = field(default_factory=dict)
    upper: float = None


def fold_result(method, statistics, delta, info):
    """The :class:`FoldResult` of one split: the one place fold results are built."""
    out = method.fold_terms(statistics, delta)
    head = {k: info[k] for k in ("n_train", "n_validation") if k in info}
    return FoldResult(
        terms=out.terms,
        info={**head, "delta": float(delta), **info, **out.info},
        estimate=float(out.terms["validation_mean"]),
        extra={**out.extra, "statistics": statistics, "info": info},
        lower=out.lower,
        upper=out.upper,
    )


def cross_fit(method, source, designs, delta, key_seed, check=None, check_counts=None):
    """The fold loop of every bound: the passes of each design, a fold result per split
    at ``delta / n_splits`` (the union bound over the splits), and the smoother on all
    rows at ``delta``.

    Returns
    -------
    results : list of FoldResult
    surrogate : object
    n_positive : int
    """
    delta_split = delta / sum(len(design.splits) for design in designs)
    runs, results = [], []
    for design in designs:
        run = method.passes(
            source,
            design,
            delta=delta_split,
            key_seed=key_seed,
            check=check,
            check_counts=check_counts,
        )
        check_counts = None  # one look at the counts is enough
        runs.append(run)
        results.extend(fold_result(method, s, delta_split, i) for s, i in run.splits)
    surrogate = method.surrogate(tuple(runs), tuple(results), source, delta)
    return results, surrogate, runs[0].n_positive


class _Paired:
    """A pass's result and the estimate's cell sums of the same chunks, merged
    together by addition."""

    def __init__(self, result, cells):
        self.result, self.cells = result, cells

    def __add__(self, other):
        return _Paired(self.result + other.result, self.cells + other.cells)

    def __iadd__(self, other):
        self.result += other.result
        self.cells += other.cells
        return self


def _estimate_chunk(key_seed, chunk):
    """The :class:`EstimateCells` of one chunk, its rows' halves drawn from
    ``(key_seed, row index)`` like the folds."""
    halves = row_folds(key_seed, chunk.start, chunk.n, 2)
    return estimate_cells(chunk.scores, chunk.labels, halves)


def _paired_chunk(fn, key_seed, chunk):
    return _Paired(fn(chunk), _estimate_chunk(key_seed, chunk))


class _EstimateTap:
    """``source`` whose first pass also gathers the :class:`EstimateCells` of
    ``estimate_`` (``_estimate``), so that the estimate costs no pass of its own.
    The functions it hands to the source hold the seed, not the source (Dask ships
    them)."""

    def __init__(self, source, key_seed):
        self._source, self._key_seed, self.cells = source, key_seed, None

    def __getattr__(self, name):
        return getattr(self._source, name)

    def map_reduce(self, fn):
        if self.cells is not None:
            return self._source.map_reduce(fn)
        paired = self._source.map_reduce(
            functools.partial(_paired_chunk, fn, self._key_seed)
        )
        self.cells = paired.cells
        return paired.result

    def estimate(self):
        """``estimate_``; one pass of its own if the bound made none (TV)."""
        if self.cells is None:
            self.cells = self._source.map_reduce(
                functools.partial(_estimate_chunk, self._key_seed)
            )
        return calibration_estimate(self.cells)


def interval_at(estimator, alpha):
    """``(lower, upper)`` of a fitted bound recomputed at ``confidence_level = 1 -
    alpha`` (``alpha`` given as such, so that tiny levels keep their digits), without
    refitting, or ``None`` if its method cannot (its statistics depend on the level,
    as TV's surrogate does).

    Valid because the fold statistics of NW and Lipschitz do not depend on the level
    (bandwidths, candidates and weights are fixed); each fold is recomputed at its
    share ``alpha / n_splits_`` and aggregated as in ``fit``. A method whose
    statistics depend on the level recomputes them itself
    (:meth:`_BoundMethod.interval_at`: the monotone band, from its sorted rows).
    """
    method = estimator._method()
    if not method.level_free:
        return method.interval_at(estimator, alpha)
    delta = alpha / estimator.n_splits_
    folds = [
        fold_result(method, fold.extra["statistics"], delta, fold.extra["info"])
        for fold in estimator.result_.folds
    ]
    result = aggregate_folds(folds, estimator.aggregate, 1.0 - alpha, warn=False)
    return result.lower_bound, result.bound


def _tie_checks(h, arrays, n):
    """``(check, check_counts)`` for :func:`cross_fit`: with ``h`` the scores must look
    perturbed (not tied). Chunks are checked one by one; arrays in memory only when a
    cell of pass 1 holds a block of ``max(10, n/1000)`` rows, which a tie block that
    large fills (look closer only then)."""
    if h is None:
        return None, None
    if arrays is None:
        return (lambda scores: check_untied_scores(scores, h, is_sorted=False)), None

    def check_counts(counts):
        if counts.max() >= max(10, -(-n // 1000)):
            check_untied_scores(arrays[0], h, is_sorted=False)

    return None, check_counts


#: Why the data reject a bound's assumption: its band crosses (the monotone bound),
#: or its interval is empty.
BAND_CROSSES = "the band crosses"
EMPTY_INTERVAL = "empty interval: the lower bound is above the upper bound"


def rejection(lower_bound, bound, crossed=False):
    """Why the data reject a bound's assumption, in words, or None: its band
    ``crossed``, or its interval is empty. Under the assumption the lower and the
    upper bound hold together with probability ``confidence_level``, so an empty
    interval means a rare event or an assumption that does not hold; either way it
    certifies nothing. For a fitted estimator and for its audit record alike."""
    if crossed:
        return BAND_CROSSES
    return EMPTY_INTERVAL if lower_bound > bound else None


def fit_without_positives(estimator, scores):
    """Fit an unfitted bound estimator on validated scores whose labels are all 0.

    ``fit`` refuses labels of one class (the likely sign of a wrong column); the
    one-vs-rest problem of a class absent from the labels
    (``MulticlassCalibrationBound(classes=...)``) has no positive, and its bound is as
    valid as any: the guarantee holds over all samples, those without one included.
    """
    estimator._validate_params()
    method = estimator._method()
    warn_if_low_confidence(estimator.confidence_level)
    estimator.classes_, estimator.n_features_in_ = np.array([0, 1]), 1
    labels = np.zeros(scores.shape[0], dtype=np.uint8)
    return estimator._fit_arrays(method, scores, labels)


def in_expectation_only(method, guarantee):
    """Whether the bound ``method`` (its class or an instance) with this
    ``guarantee`` holds only in expectation over the training labels (SPEC section
    9): :meth:`Guarantee.in_expectation_only <skcalbound._guarantee.Guarantee>`,
    kept here for the command line."""
    return guarantee_of(guarantee).in_expectation_only(method)


class _BaseCalibrationBound(BaseEstimator):
    """Base class: cross-fitted certified upper bound on the L1 calibration error.

    Class attributes a bound sets: ``name`` (its ``method=``/``--bound`` string, the
    key of ``_registry.BOUNDS``), ``label`` (in legends, tables and plot titles),
    ``assumption_params`` (the constructor
    parameters that state its assumption), ``assumption_text`` (the assumption, a
    ``str.format`` template over the fitted estimator's attributes),
    ``paper_in_expectation`` (whether ``guarantee='paper'`` holds only in expectation
    over the training labels, SPEC section 9) and ``smoothness_params`` (the
    constructor parameters that state a smoothness assumption ``h`` can give; empty
    when none does).
    """

    name = None
    label = None
    smoothness_params = ()
    assumption_params = ()  # every constructor parameter that states the assumption
    assumption_text = None  # str.format template over the fitted estimator's vars
    paper_in_expectation = False  # guarantee="paper" holds in expectation only

    _parameter_constraints = {
        "pos_label": [Real, str, "boolean", None],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "cv": ["cv_object"],
        "aggregate": [StrOptions({"mean", "min"})],
        "guarantee": [StrOptions(set(GUARANTEES))],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
    }

    def _method(self):
        raise NotImplementedError

    def _has_folds(self):
        """Whether the fit splits the rows by ``cv`` (else it is computed once on all
        rows): what decides how large a segment must be."""
        return self.cv is not None

    def _vacuous_advice(self):
        """What shrinks this bound when it is vacuous (``VacuousBoundWarning``)."""
        return (
            "More labelled samples shrink the slack (the user guide's table gives its "
            "typical size by sample size)."
        )

    def _rejection(self):
        """Why the data reject the fitted bound's assumption, in words, or None
        (:func:`rejection`). Every consumer that decides on the interval (the test,
        the scorers, the segments, the command line) asks this."""
        check_is_fitted(self)
        crossed = getattr(self, "monotonicity_rejected_", False)
        return rejection(self.lower_bound_, self.bound_, crossed)

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
            return self._fit_source(
                method, DaskSource(y, X, self.pos_label), "Dask input"
            )
        scores, labels, self.classes_, column = scores_labels(
            self, X, y, self.pos_label
        )
        return self._fit_arrays(method, scores, labels, column)

    def _fit_arrays(self, method, scores, labels, column=None):
        """Fit on validated float64 scores in [0, 1] and uint8 labels in {0, 1}
        (``column``: of a two-column input, the positive class's)."""
        source = ArraySource(scores, labels, self.n_jobs)
        return self._fit_source(
            method, source, "arrays", arrays=(scores, labels), column=column
        )

    def _fit_source(self, method, source, what, arrays=None, column=None):
        """Fit on the rows of ``source`` (``_chunks``): validated arrays in memory
        (``arrays``), chunks or Dask."""
        name = type(self).__name__
        if arrays is None and not method.mergeable:
            raise ValueError(
                f"{name} {method.unmergeable_reason.strip()} (got {what}); "
                f"{method.unmergeable_alternative}"
            )
        random_state = check_random_state(self.random_state)
        key_seed = check_random_seed(random_state)  # the one draw of the fit
        n = source.n_samples
        if self.cv is None or isinstance(self.cv, Integral):
            # Folds drawn row by row from (seed, row index): the same folds, and so
            # the same numbers, in memory, in chunks and on Dask.
            k = 5 if self.cv is None else int(self.cv)
            check_enough_rows(n, k, method.min_train, name)
            ids = None if arrays is None else row_folds(key_seed, 0, n, k)
            designs = [GroupDesign.partition(k, ids=ids, seed=key_seed)]
        elif arrays is None:
            raise ValueError(
                f"{what} needs cv=<int>: the folds of data that is not in one place "
                "are drawn row by row from (random_state, row index), so that they do "
                f"not depend on the chunking; got cv={self.cv!r}."
            )
        else:
            folds = make_folds(
                self.cv, random_state, DataOrder(n), method.min_train, name
            )
            designs = GroupDesign.from_folds(folds)
        check, check_counts = _tie_checks(getattr(self, "h", None), arrays, n)
        source = _EstimateTap(source, key_seed)
        results, surrogate, n_positive = cross_fit(
            method,
            source,
            designs,
            1.0 - self.confidence_level,
            key_seed,
            check,
            check_counts,
        )
        if arrays is None:
            self.classes_ = source.classes
            self.n_features_in_ = 1
        estimate = self._estimate_of(source, column)
        self._set_result(method, results, surrogate, n, key_seed, estimate)
        self._keep_data_summary(arrays, source, n_positive)
        return self

    def _estimate_of(self, tap, column=None):
        """``estimate_`` from ``tap`` (an ``_EstimateTap``), warning first when its
        per-cell sums show the scores ranking the positive class below chance (the
        check's grid is the estimate's: no pass of its own, for every input);
        ``column``: of a two-column input, the positive class's."""
        estimate = tap.estimate()
        warn_if_cells_below_chance(*tap.cells.by_label(), self.classes_, column)
        return estimate

    def _keep_data_summary(self, arrays, source, n_positive):
        """Keep what :attr:`certificate_` says of the data: the fingerprint of the
        validated ``arrays`` in data order, or for a source not in memory
        (``arrays`` None) its row count, ``n_positive`` and the digest it took on
        the way (None if it could not)."""
        if arrays is not None:
            summary = DataSummary.of_arrays(*arrays)
        else:
            digest = getattr(source, "digest", None)
            summary = DataSummary(source.n_samples, n_positive, digest)
        self.__dict__.pop("certificate_", None)  # a refit's record is its own
        self._data_summary = summary

    # The audit record is built on first access, from the fitted numbers and the
    # DataSummary ``fit`` kept, and then cached in the instance's ``__dict__``
    # (``functools.cached_property``): the one thing written to a fitted estimator
    # after ``fit`` returns; a refit drops it. A non-data descriptor, so that a
    # subclass may still assign ``self.certificate_``. The fingerprint itself is
    # hashed in ``fit`` (in line, one sequential read of 9 bytes a row): hashing on
    # first access would need the validated arrays kept on the estimator, 9 bytes a
    # row in memory and in every pickle, and the scores are often the caller's own
    # array (no copy when already float64), which the caller may change after
    # ``fit``; the record must fingerprint the data as the fit used them.
    @functools.cached_property
    def certificate_(self):
        """The audit record of the fit (``_certificate``), built on first access."""
        check_is_fitted(self)
        return build_certificate(self, self._data_summary)

    def _set_result(self, method, results, surrogate, n_samples, key_seed, estimate):
        """The fitted attributes from the fold results, the refit surrogate and the
        point estimate (``_estimate``)."""
        result = aggregate_folds(
            results,
            self.aggregate,
            self.confidence_level,
            guarantee=self.guarantee,
            in_expectation_only=in_expectation_only(self, self.guarantee),
        )
        self.result_ = dataclasses.replace(result, estimate=estimate)
        self.bound_ = self.result_.bound
        warn_if_vacuous(
            self.bound_,
            n_samples,
            type(self).__name__,
            self._vacuous_advice(),
            in_expectation_only=self.result_.in_expectation_only,
        )
        self.lower_bound_ = self.result_.lower_bound
        self.estimate_ = self.result_.estimate
        self.terms_ = dict(self.result_.terms)
        if self.result_.lower_terms is not None:  # SPEC 13's two routes
            self.lower_terms_ = dict(self.result_.lower_terms)
        self.fold_results_ = self.result_.fold_frame()
        self.n_splits_ = len(results)
        self.surrogate_ = surrogate
        extra = method.fitted_attributes(surrogate, self.result_.folds, key_seed)
        for name, value in extra.items():
            setattr(self, name, value)

    @_fit_context(prefer_skip_nested_validation=True)
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
        source = IterableSource(chunks, self.pos_label, n_samples)
        return self._fit_source(method, source, "chunked input")

    def predict(self, X):
        """The surrogate calibration function the bound uses, refit on all data.

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
            Held-out labels, from the classes seen in ``fit``. Most bounds depend on
            the scores only (Proposition 1 evaluates ``|s - eta_hat(s)|``) and check
            the labels for consistency; NW's default (``noise='adaptive'``) also
            builds its pilot from them. The result does not depend on ``cv`` or
            ``aggregate``, which only shape the cross-fitted :attr:`bound_`.

        Returns
        -------
        float
            ``-min(U, 1)`` where ``U`` is the certified bound on the held-out data.
        """
        check_is_fitted(self)
        scores = check_scores(self, X)
        labels = check_held_out_labels(self, y, scores.shape[0])
        h = getattr(self, "h", None)
        if h is not None:  # with h, the scores must look perturbed: not tied
            check_untied_scores(scores, h, is_sorted=False)
        method = self._score_method()
        statistics, info = method.held_out(self.surrogate_, scores, labels=labels)
        fold = fold_result(method, statistics, 1.0 - self.confidence_level, info)
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
