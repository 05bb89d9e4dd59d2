"""``CalibrationBoundDisplay``: the reliability curve behind a certified bound.

In the style of :class:`sklearn.calibration.CalibrationDisplay`; built on the public
bound estimators (a consumer module, see ``tests/test_layering.py``).
"""

from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ._base import in_expectation_only
from ._registry import BY_NAME as _BOUND_CLASSES
from ._registry import bound_name
from ._scorers import perturbation_assumption
from ._sech_perturbed import SechPerturbedClassifier
from ._validation import check_prob_labels, check_probabilities, classifier_labels_01


def _method_of(estimator):
    """The short name of a bound estimator (``bound_name``), else a TypeError."""
    return bound_name(estimator)


def _make_bound(bound, bound_params):
    """An unfitted bound estimator from a method name or an estimator instance."""
    classes = _BOUND_CLASSES
    if bound_params is not None and not isinstance(bound_params, dict):
        raise TypeError(
            f"bound_params must be a dict or None; got {type(bound_params).__name__}."
        )
    if isinstance(bound, str):
        if bound not in classes:
            raise ValueError(
                f"bound must be one of {sorted(classes)} or a bound estimator; "
                f"got {bound!r}."
            )
        return classes[bound](**(bound_params or {}))
    _method_of(bound)
    return clone(bound).set_params(**(bound_params or {}))


def _bound_for_01_labels(bound, bound_params, pos_label):
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


def _model_name(estimator):
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


def _positive_column(estimator, y, pos_label):
    """``(labels as 0/1, column of pos_label in predict_proba)`` for a fitted binary
    classifier: ``pos_label`` defaults to ``classes_[1]``, as in scikit-learn's
    ``CalibrationDisplay.from_estimator``."""
    return classifier_labels_01(np.asarray(estimator.classes_), y, pos_label, "y")


def _with_perturbation_h(estimator, bound, bound_params):
    """``bound_params`` with the ``h`` of a perturbed classifier, by the bound scorer's
    rule (:func:`~skcalbound._scorers.perturbation_assumption`): a bound that needs a
    smoothness assumption stated by neither ``bound`` nor ``bound_params`` reads
    ``h`` from the classifier; an ``h`` that differs from it, or a plain classifier,
    is an error."""
    cls = _BOUND_CLASSES.get(bound) if isinstance(bound, str) else type(bound)
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


def _check_n_grid(n_grid):
    if n_grid is None:
        return
    if not isinstance(n_grid, Integral) or isinstance(n_grid, bool) or n_grid < 2:
        raise ValueError(f"n_grid must be an int >= 2 or None; got {n_grid!r}.")


# The default number of points of the drawn curve.
_N_GRID = 512
# The NW surrogate is a kernel smoother: predict(s) averages the labels of the
# training scores within bandwidth_ of s. The bandwidth that minimises the certified
# bound is small (0.003 for the 300,000 perturbed scores of examples/demo.py), so each
# average holds a few thousand labels and predict moves by a few hundredths between
# scores 1/512 apart: the fitted surrogate is that noisy at that scale, and drawing it
# every 1/512 draws every wiggle of the noise (the jagged curves of issue 14). By
# default it is drawn every 2 * bandwidth_ (the kernel's support), at least 64 and at
# most 512 points: consecutive points average disjoint sets of training scores, one
# point per feature the smoother resolves. Each point is still exactly predict (no
# other smoothing); what remains jagged is the surrogate's own noise, and the band
# around it says how large its error can be.
_MIN_NW_GRID = 64


def _default_n_grid(estimator, method, low, high):
    if method != "nw":
        return _N_GRID
    support = 2.0 * float(estimator.bandwidth_)
    return int(np.clip(np.ceil((high - low) / support) + 1, _MIN_NW_GRID, _N_GRID))


# The label of the (hidden) container that pairs a display's curve with its band, so
# that the legend draws them as one entry; the rest of the label is the band's note.
_PAIR = "_skcalbound curve and band:"
_HIST_COLOR = "0.5"


def _band_note(method, guarantee):
    """What the band is, in words: the smoother's pointwise error bound (the
    paper's Lemma 6), whose average over the scores enters the bound."""
    form = ""
    if method == "nw":
        what, source = "kernel smoother's", "the assumed derivative bounds"
        if guarantee == "paper":
            form = " (the paper's looser form)"
    else:
        what, source = "bucket average's", "the Lipschitz constant"
    return (
        f"shaded: $\\hat\\eta \\pm \\tilde g$, the {what} error bound at each "
        f"score{form}:\nits bias (from {source}) plus its label noise,\na bound on "
        "the expected error of $\\hat\\eta$ there (not a confidence band)"
    )


# The legend of a TV curve and of its hatched ends (SPEC section 8: the TV surrogate
# is the denoised step function, which flattens both ends, not a recalibration map).
_TV_CURVE = (
    "TV-denoised surrogate $\\hat\\eta$ (used by the bound, not a recalibration map)"
)
# TV's cell bound (``method_ == "cells"``): its curve is the blocks' mean labels,
# a step function with no denoising, so nothing is flattened and nothing hatched.
_TV_CELLS_CURVE = (
    "TV cells: block mean labels (used by the bound, not a recalibration map)"
)
_FLAT_NOTE = (
    "hatched: flat ends of the TV-denoised surrogate (below its first jump, above "
    "its\nlast): the denoising's flattening, not the model's"
)


def _flat_ends(grid, values):
    """The score ranges where a drawn TV step function is flat at its ends.

    With ``drawstyle="steps-post"`` the value at ``grid[i]`` holds on
    ``[grid[i], grid[i + 1])``, so the curve is flat from ``grid[0]`` to its first
    jump and from its last jump to ``grid[-1]``: ``[(grid[0], first jump), (last
    jump, grid[-1])]``, or the whole range when it has no jump.
    """
    grid, values = np.asarray(grid, dtype=float), np.asarray(values, dtype=float)
    jumps = np.flatnonzero(values[1:] != values[:-1]) + 1
    if jumps.size == 0:
        return [(float(grid[0]), float(grid[-1]))]
    first, last = float(grid[jumps[0]]), float(grid[jumps[-1]])
    return [(float(grid[0]), first), (last, float(grid[-1]))]


def _legend_entries(ax):
    """``(handles, labels)`` of the axes: the curves (each drawn over its band),
    then the other labelled artists (histograms), then one note per kind of band."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    bands, notes = {}, {}
    for container in ax.containers:
        label = container.get_label() or ""
        if label.startswith(_PAIR):
            line, band = container
            bands[id(line)] = band
            # The note's patch in the colour of the first band it explains, not the
            # histogram's grey (they used to be mistaken for each other).
            notes.setdefault(label[len(_PAIR) :], band.get_facecolor())
    curves, others = [], []
    for handle, label in zip(*ax.get_legend_handles_labels()):
        if id(handle) in bands:
            curves.append(((bands[id(handle)], handle), label))
        elif isinstance(handle, Line2D):
            curves.append((handle, label))
        else:
            others.append((handle, label))
    shade = [
        (Patch(facecolor=color, linewidth=0), note) for note, color in notes.items()
    ]
    entries = curves + others + shade
    return [h for h, _ in entries], [label for _, label in entries]


def _legend_below(ax):
    """The legend under the axes, below the tick labels and the x label, so that it
    covers no data; its offset is in points, so it stays below them when the figure
    is resized or laid out again."""
    from matplotlib.transforms import offset_copy

    if ax.get_legend() is not None:
        ax.get_legend().remove()
    figure = ax.figure
    get_renderer = getattr(figure.canvas, "get_renderer", None)
    if get_renderer is not None:
        # What lies under the axes is the x axis (tick labels and label): its box
        # alone, as laying out the whole axes (the y axis too) costs 3x as much, most
        # of a plot's time.
        box = ax.xaxis.get_tightbbox(get_renderer())
        below = 0.0 if box is None else max(ax.bbox.y0 - box.y0, 0.0)  # pixels
        offset = below * 72.0 / figure.dpi + 4.0
    else:  # backends without a renderer at hand: tick labels and x label of 10 pt
        offset = 40.0
    handles, labels = _legend_entries(ax)
    return ax.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=offset_copy(ax.transAxes, fig=figure, y=-offset, units="points"),
        fontsize="small",
        frameon=False,
        borderaxespad=0.0,
    )


def _smoothing_band(estimator, method, grid):
    """``min(g, 1)`` for the refit surrogate at ``grid``, or None (TV).

    NW: Lemma 6 in the form the estimator's ``guarantee`` mode certifies, with its
    ``b1_`` and ``b2_``: expanded at the query in ``"high_probability"`` mode, ``g =
    b1 |sum_i w_i (s_i - s)| + b2/2 sum_i w_i (s_i - s)**2 + sqrt(sum_i w_i**2)/2``,
    and as published (``b1 sum_i w_i |s_i - s|`` in the first term, the query's own
    grid cell by Cauchy-Schwarz) in ``"paper"`` mode. Lipschitz:
    ``L mean_b |s_i - s| + 1/(2 sqrt(n_b))`` (the query's own grid cell by
    Cauchy-Schwarz), the same in both modes.
    """
    if method == "nw":
        _, g, _ = estimator.surrogate_.residuals_and_smoothing(
            estimator.b1_, estimator.b2_, grid
        )
    elif method == "lipschitz":
        _, g, _ = estimator.surrogate_.residuals_and_smoothing(estimator.L_, grid)
    else:
        return None
    return np.minimum(g, 1.0)


# The monotone band (MonotoneCalibrationBound.band_): a simultaneous band, drawn as
# the step functions it is, and where it crosses (L > U) in a colour of its own.
_CROSSING_COLOR = "crimson"


def _band_steps(scores, lower, upper):
    """The band of :class:`~skcalbound.MonotoneCalibrationBound` as constant pieces.

    ``scores`` are the distinct sorted scores ``u_1 < ... < u_m`` with ``lower =
    L(u_k)`` and ``upper = U(u_k)``; ``L`` is right-continuous and ``U``
    left-continuous (``Band``), so on ``[0, u_1)`` the band is ``[0, U(u_1)]``, on
    the open gap ``(u_k, u_{k+1})`` it is ``[L(u_k), U(u_{k+1})]`` and on
    ``(u_m, 1]`` it is ``[L(u_m), 1]``. Returns ``(edges, lo, hi)``: the band is
    ``[lo[i], hi[i]]`` between ``edges[i]`` and ``edges[i + 1]`` (open pieces;
    consecutive equal pieces merged, which changes no point of the drawing).
    """
    scores = np.asarray(scores, dtype=float)
    edges = np.concatenate(([0.0], scores, [1.0]))
    lo = np.concatenate(([0.0], np.asarray(lower, dtype=float)))
    hi = np.concatenate((np.asarray(upper, dtype=float), [1.0]))
    keep = np.ones(lo.shape[0], dtype=bool)
    keep[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    starts = np.flatnonzero(keep)
    return edges[np.append(starts, lo.shape[0])], lo[starts], hi[starts]


def _steps(edges, values):
    """``(x, y)`` of a piecewise constant function drawn with vertical jumps."""
    return np.repeat(edges, 2)[1:-1], np.repeat(values, 2)


def _crossing_points(scores, lower, upper):
    """The scores ``u_k`` where ``L(u_k) > U(u_k)`` and the drawn gaps do not already
    cover ``[U(u_k), L(u_k)]``: the gap before ``u_k`` crosses over that segment when
    ``L`` does not jump at ``u_k``, the gap after it when ``U`` does not (the
    crossing regions are closed in the drawing). Returns a boolean mask."""
    before = np.concatenate(([0.0], lower[:-1]))  # L just below u_k (0 below u_1)
    after = np.concatenate((upper[1:], [1.0]))  # U just above u_k (1 above u_m)
    return (lower > upper) & (before < lower) & (upper < after)


def _draw_certified_band(ax, certified_band, color, level):
    """Fill the band (where ``L <= U``) and, where it crosses, the region between
    ``U`` and ``L`` in red: on the gaps between scores (filled) and at the scores
    where only the score itself crosses (segments). Returns ``(band, crossing)``:
    the band's PolyCollection and None, or the crossing's ``(PolyCollection,
    Line2D)`` (the segments as one line broken by NaN)."""
    scores, lower, upper = (np.asarray(a, dtype=float) for a in certified_band)
    edges, lo, hi = _band_steps(scores, lower, upper)
    x, y_lo = _steps(edges, np.minimum(lo, hi))
    _, y_hi = _steps(edges, hi)
    band = ax.fill_between(
        x,
        y_lo,
        y_hi,
        color=color,
        alpha=0.25,
        linewidth=0,
        zorder=2,
        label=f"certified band, {level}, all scores at once\n"
        "(if E[y|s] is non-decreasing; $L(s) \\leq E[y \\mid s] \\leq U(s)$)",
    )
    # A crossing on a gap (L(u_k) > U(u_{k+1})) is a crossing at u_k too.
    if not np.any(lower > upper):
        return band, None
    # Only the crossing pieces (each piece is two points of x), outlined so that a
    # small crossing still shows.
    crossed = np.repeat(lo > hi, 2)
    region = ax.fill_between(
        x,
        np.repeat(hi, 2),
        np.repeat(lo, 2),
        where=crossed,
        facecolor=_CROSSING_COLOR,
        edgecolor=_CROSSING_COLOR,
        alpha=0.6,
        linewidth=1.0,
        zorder=3.5,
        label="band crosses ($L > U$): the data reject a non-decreasing "
        "E[y|s],\nwhich the band and the interval assume",
    )
    at = _crossing_points(scores, lower, upper)
    nan = np.full(int(at.sum()), np.nan)
    (points,) = ax.plot(
        np.column_stack((scores[at], scores[at], nan)).ravel(),
        np.column_stack((upper[at], lower[at], nan)).ravel(),
        color=_CROSSING_COLOR,
        linewidth=1.5,
        zorder=3.5,
        label="_band crosses at a score",
    )
    return band, (region, points)


def check_matplotlib_support(caller):
    """Raise a clear ImportError if matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{caller} needs matplotlib: pip install 'skcalbound[plot]' (or "
            "pip install matplotlib)."
        ) from exc


def _percent(confidence_level):
    return f"{100 * confidence_level:g}%"


def _bound_text(display):
    """The legend's statement of the bound: the interval, its level and its form."""
    level = _percent(display.confidence_level)
    if display.lower_bound is None:
        claim = f"CE $\\leq$ {display.bound:.3f}"
    else:
        claim = f"CE $\\in$ [{display.lower_bound:.3f}, {display.bound:.3f}]"
    if in_expectation_only(_BOUND_CLASSES[display.method], display.guarantee):
        return f"{claim} ({level}, paper's form: in expectation over training labels)"
    band = display.certified_band
    if band is not None and np.any(np.asarray(band[1]) > np.asarray(band[2])):
        # Crossed: the data reject the assumption the interval is certified under.
        return f"{claim} ({level}) if E[y|s] were non-decreasing, which the data reject"
    return f"certified {claim} ({level})"


class CalibrationBoundDisplay:
    """Reliability curve of a certified calibration bound.

    Plots the surrogate calibration function :math:`\\hat\\eta` that a bound estimator
    fitted (what its ``predict`` returns), the diagonal of perfect calibration, for
    the NW and Lipschitz bounds the band :math:`\\hat\\eta \\pm \\tilde g` (the
    smoother's error bound at each score, Lemma 6 of the paper), a histogram of the
    scores, and in the legend the certified interval ``[lower_bound, bound]`` for
    the calibration error (the estimator's ``lower_bound_`` and ``bound_``, which
    hold together) with its confidence level.
    With ``guarantee="paper"`` the NW and Lipschitz bounds are the published form,
    which holds in expectation over the training labels only; the legend says so
    instead of "certified".

    So that the figure reads at a glance, the legend sits under the axes (it covers
    no data), the curve is drawn over its band in one colour, the histogram is
    neutral grey, and the NW surrogate is drawn at one point per kernel support
    (see ``n_grid`` in :meth:`from_bound`).

    The band is **not** a confidence band: :math:`\\tilde g(s) = \\min(g_T(s), 1)`
    bounds the *expected* error :math:`E|\\hat\\eta(s) - \\eta(s)|` of the surrogate
    over the training labels at the score :math:`s`, the quantity whose average enters
    the NW and Lipschitz bounds. The TV bound has no pointwise counterpart (its
    denoising term bounds an average of :math:`|\\hat\\eta - \\eta|` over the training
    scores, not the error at any one score), so no band is drawn for it.

    For TV's denoising bound (``method='denoise'``) the curve is the TV-denoised
    step function the bound is computed from,
    **not a recalibration map**: the denoising pulls it towards a constant, so it is
    flat below its first jump and above its last even for perfectly calibrated
    scores. The legend says so, and those two score ranges are hatched in the
    curve's colour (:attr:`flat_ends_`) and labelled as the denoising's flattening,
    so that they are not read as the model's over- or under-confidence. For TV's
    cell bound (``method='cells'``, its default) the curve is the blocks' mean
    labels, as the legend says, and nothing is hatched.

    For NW the band drawn is Lemma 6 in the form the certificate averages, with the
    fitted ``b1_`` and ``b2_`` of the estimator's ``guarantee`` mode: with
    ``guarantee="high_probability"``, expanded at the query,
    :math:`g_T(s) = b_1 |\\sum_i w_i (s_i - s)| + \\tfrac12 b_2 \\sum_i w_i (s_i - s)^2
    + \\tfrac12 \\sqrt{\\sum_i w_i^2}`; with ``"paper"``, as published, whose first term
    is :math:`b_1 \\sum_i w_i |s_i - s|`. For Lipschitz bucketing the band is
    :math:`L \\cdot \\mathrm{mean}_{i \\in b} |s_i - s| + 1 / (2 \\sqrt{n_b})` over the
    score's bucket, the same in both modes.

    For :class:`~skcalbound.MonotoneCalibrationBound` the curve is its ``predict``,
    the isotonic fit clipped into the band (a recalibration map), and the shaded
    region is the certified band ``L(s) <= E[y | s] <= U(s)`` (``band_``, at every
    score at once, if the calibration function is non-decreasing), drawn as the step
    functions it is: ``L`` right-continuous and ``U`` left-continuous, as
    :meth:`~skcalbound.MonotoneCalibrationBound.predict_interval` evaluates them. Its
    legend gives ``confidence_level``, at which the band and the interval hold
    together (the band alone holds at ``1 - (1 - confidence_level) / 2``). Where the
    band crosses (``L > U``: the data reject monotonicity), the crossing is drawn in
    red and the legend says so.

    It is recommended to create a display with :meth:`from_estimator`,
    :meth:`from_predictions` or :meth:`from_bound`. All attributes are stored
    unchanged.

    Read more in the :ref:`User Guide <display>`.

    Parameters
    ----------
    grid : ndarray of shape (n_grid,)
        Increasing scores at which the surrogate is evaluated.

    surrogate : ndarray of shape (n_grid,)
        The surrogate calibration function at ``grid``.

    bound : float
        Certified upper bound on the calibration error.

    lower_bound : float, default=None
        Certified lower bound on the calibration error, holding together with
        ``bound``; the legend shows the interval ``[lower_bound, bound]``. None shows
        the upper bound only.

    band : ndarray of shape (n_grid,), default=None
        Half-width of the band around the surrogate (the error bound
        :math:`\\tilde g` at ``grid``), or None for no band.

    certified_band : tuple of three ndarrays, default=None
        A simultaneous band ``(scores, lower, upper)``: distinct sorted scores and
        ``L``, ``U`` there, ``L`` right-continuous and ``U`` left-continuous step
        functions between them (the arrays of
        :attr:`MonotoneCalibrationBound.band_
        <skcalbound.MonotoneCalibrationBound>`), drawn as steps over [0, 1]; or
        None.

    y_prob : ndarray of shape (n_samples,), default=None
        Scores shown as a histogram, or None for no histogram.

    method : {'tv', 'nw', 'lipschitz', 'monotone'}, default='tv'
        The bound that produced the numbers, named in the legend.

    confidence_level : float, default=0.95
        Probability with which ``bound`` holds, shown in the legend.

    guarantee : {'high_probability', 'paper'}, default='high_probability'
        The estimator's ``guarantee``. With ``'paper'``, the NW and Lipschitz bounds
        are labelled as the paper's form, which holds in expectation over the
        training labels, rather than as certified.

    estimator_name : str, default=None
        Name of the classifier, shown in the legend; None shows the bound's name only.

    Attributes
    ----------
    estimator_ : bound estimator
        The fitted bound estimator; set by :meth:`from_estimator`,
        :meth:`from_predictions` and :meth:`from_bound` only.

    line_ : matplotlib Line2D
        The surrogate curve.

    band_ : matplotlib PolyCollection or None
        The band (for ``certified_band``: where ``L <= U``), or None if no band
        was drawn.

    crossing_ : tuple or None
        Where a ``certified_band`` crosses: ``(PolyCollection, Line2D)``, the
        region between ``U`` and ``L`` on the gaps between scores, and the
        segments ``[U(u), L(u)]`` at the scores ``u`` where ``L > U`` that the
        gaps do not cover (one line broken by NaN); None when it does not cross
        (or there is no such band).

    flat_ends_ : list of matplotlib Rectangle or None
        For TV, the hatched score ranges where the drawn step function is flat at
        its ends: from the smallest grid score to its first jump and from its last
        jump to the largest (one range, the whole curve, if it has no jump). None
        for the other bounds and for TV's cell bound.

    hist_ : matplotlib StepPatch or None
        The score histogram (heights scaled to at most 0.2), or None.

    ref_line_ : matplotlib Line2D or None
        The diagonal, or None if it was not drawn by this display.

    ax_ : matplotlib Axes
        Axes with the plot.

    figure_ : matplotlib Figure
        Figure containing the plot.

    See Also
    --------
    sklearn.calibration.CalibrationDisplay : Binned reliability diagram.
    NWCalibrationBound : The bound whose band is drawn for perturbed scores.
    TVCalibrationBound : The bound for a monotone calibration function.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from skcalbound import CalibrationBoundDisplay, perturb_scores
    >>> rng = np.random.default_rng(0)
    >>> s = perturb_scores(rng.uniform(size=20_000), h=2**-4, random_state=0)
    >>> y = rng.uniform(size=20_000) < s
    >>> disp = CalibrationBoundDisplay.from_predictions(
    ...     y, s, bound="nw", bound_params={"h": 2**-4, "random_state": 0})
    >>> print(f"CE in [{disp.lower_bound:.3f}, {disp.bound:.3f}]")  # true CE = 0
    CE in [0.000, 0.075]
    """

    def __init__(
        self,
        grid,
        surrogate,
        bound,
        *,
        lower_bound=None,
        band=None,
        certified_band=None,
        y_prob=None,
        method="tv",
        confidence_level=0.95,
        guarantee="high_probability",
        estimator_name=None,
    ):
        self.grid = grid
        self.surrogate = surrogate
        self.bound = bound
        self.lower_bound = lower_bound
        self.band = band
        self.certified_band = certified_band
        self.y_prob = y_prob
        self.method = method
        self.confidence_level = confidence_level
        self.guarantee = guarantee
        self.estimator_name = estimator_name

    def plot(
        self,
        *,
        ax=None,
        name=None,
        ref_line=True,
        show_band=True,
        show_hist=True,
        **kwargs,
    ):
        """Plot the display.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to plot on. If None, a new figure and axes are created.

        name : str, default=None
            Name of the classifier in the legend. If None, ``estimator_name`` is used.

        ref_line : bool, default=True
            Whether to draw the diagonal of perfect calibration (once per axes).

        show_band : bool, default=True
            Whether to draw the band, if the display has one.

        show_hist : bool, default=True
            Whether to draw the histogram of the scores, if the display has them.

        **kwargs : dict
            Keyword arguments passed to :meth:`matplotlib.axes.Axes.plot` for the
            surrogate curve.

        Returns
        -------
        display : CalibrationBoundDisplay
            The display, with the artists stored as attributes.

        Notes
        -----
        The legend is placed under the axes, below the tick labels and the x label,
        and lists every display drawn on the axes; each curve's entry is drawn over
        its band, and what the band means is said once. A figure made by the display
        uses ``layout="constrained"``, which keeps the legend inside it; on axes of
        your own, use a figure with ``layout="constrained"`` too, or save with
        ``bbox_inches="tight"``.
        """
        check_matplotlib_support(f"{type(self).__name__}.plot")
        import matplotlib.pyplot as plt
        from matplotlib.container import Container

        if ax is None:
            # Constrained layout keeps the legend under the axes inside the figure.
            _, ax = plt.subplots(figsize=(6.4, 6.4), layout="constrained")
        self.ax_, self.figure_ = ax, ax.figure
        name = self.estimator_name if name is None else name
        cls = _BOUND_CLASSES.get(self.method)
        method = cls.label if cls is not None else str(self.method)

        ref_label = "Perfectly calibrated"
        self.ref_line_ = None
        if ref_line and ref_label not in ax.get_legend_handles_labels()[1]:
            (self.ref_line_,) = ax.plot(
                [0, 1],
                [0, 1],
                color="black",
                linestyle=":",
                linewidth=1.0,
                label=ref_label,
            )

        prefix = f"{name}: " if name else ""
        label = f"{prefix}{method} surrogate $\\hat\\eta$; {_bound_text(self)}"
        line_kwargs = {"label": label, "zorder": 3, "linewidth": 1.5}
        # A TV display of a fitted cell bound: block means, no flat ends.
        cells = getattr(getattr(self, "estimator_", None), "method_", None) == "cells"
        if self.method == "tv":
            curve = _TV_CELLS_CURVE if cells else _TV_CURVE
            label = f"{prefix}{curve};\n{_bound_text(self)}"
            line_kwargs["label"] = label
            line_kwargs["drawstyle"] = "steps-post"  # a right-continuous step function
        elif self.method == "monotone":
            line_kwargs["label"] = (
                f"{prefix}isotonic fit $\\hat\\eta$ (predict: a recalibration map);"
                f"\n{_bound_text(self)}"
            )
        line_kwargs.update(kwargs)
        (self.line_,) = ax.plot(self.grid, self.surrogate, **line_kwargs)

        self.flat_ends_ = None
        if self.method == "tv" and not cells:
            # Hatched in the curve's colour: the ends the denoising flattened.
            shown = _FLAT_NOTE in ax.get_legend_handles_labels()[1]
            self.flat_ends_ = [
                ax.axvspan(
                    low,
                    high,
                    facecolor="none",
                    edgecolor=self.line_.get_color(),
                    hatch="///",
                    alpha=0.3,
                    linewidth=0,
                    zorder=0,
                    label="_flat end" if shown or k else _FLAT_NOTE,
                )
                for k, (low, high) in enumerate(_flat_ends(self.grid, self.surrogate))
            ]

        self.band_, self.crossing_ = None, None
        if show_band and self.certified_band is not None:
            self.band_, self.crossing_ = _draw_certified_band(
                ax,
                self.certified_band,
                self.line_.get_color(),
                _percent(self.confidence_level),
            )
        if show_band and self.band is not None:
            lower = np.clip(self.surrogate - self.band, 0.0, 1.0)
            upper = np.clip(self.surrogate + self.band, 0.0, 1.0)
            # The band in the curve's colour, light: it belongs to the curve.
            self.band_ = ax.fill_between(
                self.grid,
                lower,
                upper,
                color=self.line_.get_color(),
                alpha=0.2,
                linewidth=0,
                zorder=2,
            )
            # Hidden from the legend; the legend draws the curve over its band.
            ax.add_container(
                Container(
                    (self.line_, self.band_),
                    label=_PAIR + _band_note(self.method, self.guarantee),
                )
            )

        self.hist_ = None
        if show_hist and self.y_prob is not None:
            counts, edges = np.histogram(self.y_prob, bins=50, range=(0.0, 1.0))
            heights = 0.2 * counts / max(int(counts.max()), 1)
            # Neutral grey: the histogram is context, not a curve or a band.
            self.hist_ = ax.stairs(
                heights,
                edges,
                fill=True,
                color=_HIST_COLOR,
                alpha=0.35,
                linewidth=0,
                zorder=1,
                label=f"{prefix}scores (histogram, scaled)",
            )

        ylabel = "$E[y \\mid s]$ (surrogate $\\hat\\eta$)"
        if self.certified_band is not None:  # the band is about E[y|s] itself
            ylabel = "$E[y \\mid s]$"
        ax.set(
            xlim=(0.0, 1.0),
            ylim=(0.0, 1.0),
            xlabel="Predicted probability $s$",
            ylabel=ylabel,
        )
        _legend_below(ax)
        return self

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
            512 points), so that consecutive points average disjoint sets of
            training scores; each point is exactly ``predict``.

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
            surrogate curve.

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
        check_is_fitted(estimator)
        if not callable(getattr(estimator, "predict_proba", None)):
            raise TypeError(
                "estimator must be a fitted binary classifier with a predict_proba "
                f"method; {type(estimator).__name__} has none."
            )
        _check_n_grid(n_grid)
        proba = np.asarray(estimator.predict_proba(X))
        if proba.ndim != 2 or proba.shape[1] != 2:
            raise ValueError(
                "estimator must be a binary classifier: predict_proba must return two "
                f"columns; got an array of shape {proba.shape}."
            )
        if name is None:
            name = _model_name(estimator)
        bound_params = _with_perturbation_h(estimator, bound, bound_params)
        bound_est, pos_label = _bound_for_01_labels(bound, bound_params, pos_label)
        labels, column = _positive_column(estimator, y, pos_label)
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
            512 points), so that consecutive points average disjoint sets of
            training scores; each point is exactly ``predict``.

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
            surrogate curve.

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
        _check_n_grid(n_grid)
        estimator, pos_label = _bound_for_01_labels(bound, bound_params, pos_label)
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

    @classmethod
    def from_bound(
        cls,
        estimator,
        y_prob=None,
        *,
        n_grid=None,
        name=None,
        ax=None,
        ref_line=True,
        show_band=True,
        show_hist=True,
        **kwargs,
    ):
        """Plot an already fitted bound estimator.

        Parameters
        ----------
        estimator : bound estimator
            A fitted :class:`~skcalbound.TVCalibrationBound`,
            :class:`~skcalbound.NWCalibrationBound`,
            :class:`~skcalbound.LipschitzBucketBound` or
            :class:`~skcalbound.MonotoneCalibrationBound`.

        y_prob : array-like of shape (n_samples,) or (n_samples, 2), default=None
            Scores to show as a histogram, usually those the bound was fitted on;
            they also set the range of the curve. If None, no histogram is drawn and
            the curve spans [0, 1].

        n_grid : int, default=None
            Number of scores, evenly spaced over the range of ``y_prob`` (of [0, 1]
            without it), at which the surrogate and the band are drawn. None draws
            512, except for NW: one point per kernel support ``2 * bandwidth_`` (64
            to 512 points), so that consecutive points average disjoint sets of
            training scores; each point is exactly ``predict``.

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
            surrogate curve.

        Returns
        -------
        display : CalibrationBoundDisplay
            The display; ``estimator`` is stored as :attr:`estimator_`.

        See Also
        --------
        CalibrationBoundDisplay.from_predictions : From labels and scores.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np
        >>> from skcalbound import CalibrationBoundDisplay, LipschitzBucketBound
        >>> rng = np.random.default_rng(0)
        >>> s = rng.uniform(size=20_000)
        >>> y = rng.uniform(size=20_000) < s
        >>> est = LipschitzBucketBound(L=1.0, random_state=0).fit(s, y)
        >>> disp = CalibrationBoundDisplay.from_bound(est, s)
        >>> bool(disp.bound == est.bound_)
        True
        """
        check_matplotlib_support(f"{cls.__name__}.from_bound")
        _check_n_grid(n_grid)
        method = _method_of(estimator)
        check_is_fitted(estimator)
        if y_prob is None:
            scores, low, high = None, 0.0, 1.0
        else:
            scores = check_probabilities(y_prob, "y_prob")
            low, high = float(scores.min()), float(scores.max())
        if n_grid is None:
            n_grid = _default_n_grid(estimator, method, low, high)
        grid = np.linspace(low, high, n_grid)
        certified_band = None
        if method == "monotone":
            band = estimator.band_
            certified_band = (band.scores, band.lower, band.upper)
        display = cls(
            grid,
            estimator.predict(grid),
            float(estimator.bound_),
            lower_bound=float(estimator.lower_bound_),
            band=_smoothing_band(estimator, method, grid),
            certified_band=certified_band,
            y_prob=scores,
            method=method,
            confidence_level=float(estimator.confidence_level),
            guarantee=getattr(estimator, "guarantee", "high_probability"),
            estimator_name=name,
        )
        display.estimator_ = estimator
        return display.plot(
            ax=ax,
            ref_line=ref_line,
            show_band=show_band,
            show_hist=show_hist,
            **kwargs,
        )
