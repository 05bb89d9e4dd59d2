"""``from_estimator`` and ``from_predictions``: fit a bound, then ``from_bound``."""

from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .._registry import BY_NAME, bound_name
from .._scorers import perturbation_assumption
from .._sech_perturbed import SechPerturbedClassifier
from .._validation import check_prob_labels, classifier_labels_01


def check_matplotlib_support(caller):
    """Raise a clear ImportError if matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{caller} needs matplotlib: pip install 'skcalbound[plot]' (or "
            "pip install matplotlib)."
        ) from exc


def check_n_grid(n_grid):
    if n_grid is None:
        return
    if not isinstance(n_grid, Integral) or isinstance(n_grid, bool) or n_grid < 2:
        raise ValueError(f"n_grid must be an int >= 2 or None; got {n_grid!r}.")


# Every parameter of a bound estimator (none is a matplotlib Line2D property).
BOUND_PARAMETERS = frozenset(
    name for cls in BY_NAME.values() for name in cls._get_param_names()
)


def check_plot_kwargs(kwargs, caller):
    """A TypeError, before any fit, for a keyword meant for the bound that would
    otherwise reach matplotlib (``Line2D.set() got an unexpected keyword argument
    'h'``, after the bound was fitted)."""
    value = kwargs.get("method")
    if isinstance(value, str) and value in BY_NAME:
        raise TypeError(
            f"{caller} chooses the bound with bound={value!r}, not method={value!r} "
            "(method is a parameter of TVCalibrationBound: bound_params="
            "{'method': ...})."
        )
    for key in kwargs:
        if key in BOUND_PARAMETERS:
            raise TypeError(
                f"{caller} got {key}={kwargs[key]!r}, a parameter of the bound "
                f"estimator, not of the plot: pass bound_params={{{key!r}: ...}} "
                "(the other keyword arguments go to matplotlib's Axes.plot)."
            )


def _make_bound(bound, bound_params):
    """An unfitted bound estimator from a bound's name or an estimator instance."""
    if bound_params is not None and not isinstance(bound_params, dict):
        raise TypeError(
            f"bound_params must be a dict or None; got {type(bound_params).__name__}."
        )
    if isinstance(bound, str):
        if bound not in BY_NAME:
            raise ValueError(
                f"bound must be one of {sorted(BY_NAME)} or a bound estimator; "
                f"got {bound!r}."
            )
        return BY_NAME[bound](**(bound_params or {}))
    bound_name(bound)  # a TypeError for anything but a bound estimator
    return clone(bound).set_params(**(bound_params or {}))


def bound_for_01_labels(bound, bound_params, pos_label):
    """``(unfitted bound, pos_label)``: the bound is fitted on labels already
    converted to 0/1, so a ``pos_label`` it states becomes the display's (the two
    must agree) and the bound's own is reset to None."""
    estimator = _make_bound(bound, bound_params)
    stated = estimator.get_params().get("pos_label")
    if stated is not None:
        if pos_label is not None and pos_label != stated:
            raise ValueError(
                f"pos_label={pos_label!r} and the bound's pos_label={stated!r} "
                "disagree; give it once."
            )
        pos_label = stated
        estimator.set_params(pos_label=None)
    return estimator, pos_label


def model_name(estimator):
    """The class name of the model behind wrappers: the last step of a
    ``Pipeline``, the model a :class:`SechPerturbedClassifier` perturbs, the model
    in a ``FrozenEstimator``."""
    while True:
        if isinstance(estimator, Pipeline):
            estimator = estimator.steps[-1][1]
        elif isinstance(estimator, SechPerturbedClassifier):
            estimator = getattr(estimator, "estimator_", estimator.estimator)
        elif isinstance(estimator, FrozenEstimator):
            estimator = estimator.estimator
        else:
            return type(estimator).__name__


def positive_column(estimator, y, pos_label):
    """``(labels as 0/1, column of pos_label in predict_proba)`` for a fitted binary
    classifier: ``pos_label`` defaults to ``classes_[1]``, as in scikit-learn's
    ``CalibrationDisplay.from_estimator``."""
    return classifier_labels_01(np.asarray(estimator.classes_), y, pos_label, "y")


def with_perturbation_h(estimator, bound, bound_params):
    """``bound_params`` with the ``h`` of a perturbed classifier, by the bound scorer's
    rule (:func:`~skcalbound._scorers.perturbation_assumption`): a bound that needs a
    smoothness assumption stated by neither ``bound`` nor ``bound_params`` reads
    ``h`` from the classifier; an ``h`` that differs from it, or a plain classifier,
    is an error."""
    cls = BY_NAME.get(bound) if isinstance(bound, str) else type(bound)
    params = dict(bound_params or {})
    stated = dict(bound.get_params()) if not isinstance(bound, str) else {}
    stated.update(params)
    caller = f"CalibrationBoundDisplay.from_estimator(bound={bound!r})"
    checked = perturbation_assumption(
        cls,
        stated,
        estimator,
        caller,
        verb="was given",
        reader="the display",
        target="the bound (bound_params)",
    )
    if checked.get("h") != stated.get("h"):
        params["h"] = checked["h"]
    return params or bound_params


class FromData:
    """The constructors of :class:`CalibrationBoundDisplay` that fit the bound."""

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        bound="tv",
        bound_params=None,
        pos_label=None,
        n_grid=None,
        name=None,
        ax=None,
        ref_line=True,
        show_band=True,
        show_hist=True,
        **kwargs,
    ):
        """Fit a bound on a classifier's predicted probabilities and plot it.

        The bound estimator is fitted on ``estimator.predict_proba(X)[:, k]``, the
        probability of ``pos_label = estimator.classes_[k]`` (by default
        ``classes_[1]``), and on the labels ``y == pos_label``.

        Parameters
        ----------
        estimator : estimator instance
            Fitted binary classifier (or pipeline ending in one) with a
            ``predict_proba`` method. For ``bound='nw'`` or ``'lipschitz'`` it should
            be a :class:`~skcalbound.SechPerturbedClassifier` (or a pipeline ending
            in one): its ``h`` is then used unless ``bound`` or ``bound_params``
            states the smoothness (``h``, ``b1`` and ``b2``, or ``L``).

        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input values, independent of the data the classifier was trained on.

        y : array-like of shape (n_samples,)
            Labels, among ``estimator.classes_``.

        bound : str or bound estimator, default='tv'
            The bound to compute: a name, ``'tv'``, ``'nw'``, ``'lipschitz'`` or
            ``'monotone'`` (the estimator is built with
            ``bound_params``) or an unfitted bound estimator
            (:class:`~skcalbound.TVCalibrationBound`,
            :class:`~skcalbound.NWCalibrationBound`,
            :class:`~skcalbound.LipschitzBucketBound` or
            :class:`~skcalbound.MonotoneCalibrationBound`; cloned, never modified).

        bound_params : dict, default=None
            Parameters of the bound estimator, e.g. ``{"h": 2**-6,
            "random_state": 0}`` for ``bound='nw'``.

        pos_label : int, float, bool or str, default=None
            The positive class, as in scikit-learn's ``CalibrationDisplay``: the
            bound is fitted on the ``predict_proba`` column of ``pos_label`` in
            ``estimator.classes_`` and on the labels ``y == pos_label`` (as 0/1).
            None means ``estimator.classes_[1]``.

        n_grid : int, default=None
            Number of scores, evenly spaced between the smallest and the largest
            score, at which the surrogate and the band are drawn. None draws 512,
            except for NW: one point per kernel support ``2 * bandwidth_`` (64 to
            512 points).

        name : str, default=None
            Name of the classifier in the legend. If None, the class name of the
            model: of the last step of a pipeline, of the model inside a
            :class:`~skcalbound.SechPerturbedClassifier` or a ``FrozenEstimator``.

        ax : matplotlib Axes, default=None
            Axes to plot on. If None, a new figure and axes are created.

        ref_line : bool, default=True
            Whether to draw the diagonal of perfect calibration (once per axes).

        show_band : bool, default=True
            Whether to draw the band (NW, Lipschitz and monotone bounds only).

        show_hist : bool, default=True
            Whether to draw the histogram of the scores.

        **kwargs : dict
            Keyword arguments passed to :meth:`matplotlib.axes.Axes.plot` for the
            surrogate curve. A parameter of the bound estimator (``h``,
            ``random_state``, ...) is refused with a TypeError before any fit: it
            belongs in ``bound_params``.

        Returns
        -------
        display : CalibrationBoundDisplay
            The display; the fitted bound estimator is :attr:`estimator_`.

        See Also
        --------
        CalibrationBoundDisplay.from_predictions : From labels and scores.
        CalibrationBoundDisplay.from_bound : From a fitted bound estimator.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from skcalbound import CalibrationBoundDisplay
        >>> X, y = make_classification(n_samples=4000, random_state=0)
        >>> clf = LogisticRegression().fit(X[:2000], y[:2000])
        >>> disp = CalibrationBoundDisplay.from_estimator(
        ...     clf, X[2000:], y[2000:], bound_params={"random_state": 0})
        >>> disp.estimator_
        TVCalibrationBound(random_state=0)
        """
        check_matplotlib_support(f"{cls.__name__}.from_estimator")
        check_plot_kwargs(kwargs, f"{cls.__name__}.from_estimator")
        check_is_fitted(estimator)
        if not callable(getattr(estimator, "predict_proba", None)):
            raise TypeError(
                "estimator must be a fitted binary classifier with a predict_proba "
                f"method; {type(estimator).__name__} has none."
            )
        check_n_grid(n_grid)
        proba = np.asarray(estimator.predict_proba(X))
        if proba.ndim != 2 or proba.shape[1] != 2:
            raise ValueError(
                "estimator must be a binary classifier: predict_proba must return two "
                f"columns; got an array of shape {proba.shape}."
            )
        if name is None:
            name = model_name(estimator)
        bound_params = with_perturbation_h(estimator, bound, bound_params)
        bound_est, pos_label = bound_for_01_labels(bound, bound_params, pos_label)
        labels, column = positive_column(estimator, y, pos_label)
        scores = proba[:, column]
        bound_est.fit(scores, labels)
        return cls.from_bound(
            bound_est,
            scores,
            n_grid=n_grid,
            name=name,
            ax=ax,
            ref_line=ref_line,
            show_band=show_band,
            show_hist=show_hist,
            **kwargs,
        )

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_prob,
        *,
        bound="tv",
        bound_params=None,
        pos_label=None,
        n_grid=None,
        name=None,
        ax=None,
        ref_line=True,
        show_band=True,
        show_hist=True,
        **kwargs,
    ):
        """Fit a bound on labels and predicted probabilities and plot it.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            Binary labels.

        y_prob : array-like of shape (n_samples,) or (n_samples, 2)
            Predicted probabilities of the positive class, or a ``predict_proba``
            output (columns in sorted label order; the column of ``pos_label`` is
            used).

        bound : str or bound estimator, default='tv'
            The bound to compute: a name, ``'tv'``, ``'nw'``, ``'lipschitz'`` or
            ``'monotone'`` (the estimator is built with
            ``bound_params``) or an unfitted bound estimator
            (:class:`~skcalbound.TVCalibrationBound`,
            :class:`~skcalbound.NWCalibrationBound`,
            :class:`~skcalbound.LipschitzBucketBound` or
            :class:`~skcalbound.MonotoneCalibrationBound`; cloned, never modified).

        bound_params : dict, default=None
            Parameters of the bound estimator, e.g. ``{"h": 2**-6,
            "random_state": 0}`` for ``bound='nw'``.

        pos_label : int, float, bool or str, default=None
            The label of the positive class (scikit-learn's ``pos_label``); the
            bound is fitted on the labels ``y_true == pos_label`` (as 0/1). None
            requires labels in {0, 1}, {-1, 1} or booleans, and then 1 is positive.

        n_grid : int, default=None
            Number of scores, evenly spaced between the smallest and the largest
            score, at which the surrogate and the band are drawn. None draws 512,
            except for NW: one point per kernel support ``2 * bandwidth_`` (64 to
            512 points).

        name : str, default=None
            Name of the classifier in the legend.

        ax : matplotlib Axes, default=None
            Axes to plot on. If None, a new figure and axes are created.

        ref_line : bool, default=True
            Whether to draw the diagonal of perfect calibration (once per axes).

        show_band : bool, default=True
            Whether to draw the band (NW, Lipschitz and monotone bounds only).

        show_hist : bool, default=True
            Whether to draw the histogram of the scores.

        **kwargs : dict
            Keyword arguments passed to :meth:`matplotlib.axes.Axes.plot` for the
            surrogate curve. A parameter of the bound estimator (``h``,
            ``random_state``, ...) is refused with a TypeError before any fit: it
            belongs in ``bound_params``.

        Returns
        -------
        display : CalibrationBoundDisplay
            The display; the fitted bound estimator is :attr:`estimator_`.

        See Also
        --------
        CalibrationBoundDisplay.from_estimator : From a classifier and data.
        CalibrationBoundDisplay.from_bound : From a fitted bound estimator.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np
        >>> from skcalbound import CalibrationBoundDisplay
        >>> rng = np.random.default_rng(0)
        >>> s = rng.uniform(size=20_000)
        >>> y = rng.uniform(size=20_000) < s ** 2  # true CE = 1/6
        >>> disp = CalibrationBoundDisplay.from_predictions(
        ...     y, s, bound="tv", bound_params={"random_state": 0})
        >>> print(f"CE in [{disp.lower_bound:.3f}, {disp.bound:.3f}]")
        CE in [0.043, 0.287]
        """
        check_matplotlib_support(f"{cls.__name__}.from_predictions")
        check_plot_kwargs(kwargs, f"{cls.__name__}.from_predictions")
        check_n_grid(n_grid)
        estimator, pos_label = bound_for_01_labels(bound, bound_params, pos_label)
        labels, scores = check_prob_labels(
            y_true, y_prob, pos_label, f"{cls.__name__}.from_predictions"
        )
        estimator.fit(scores, labels)
        return cls.from_bound(
            estimator,
            scores,
            n_grid=n_grid,
            name=name,
            ax=ax,
            ref_line=ref_line,
            show_band=show_band,
            show_hist=show_hist,
            **kwargs,
        )
