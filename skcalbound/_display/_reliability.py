"""``CalibrationBoundDisplay``: the reliability curve behind a certified bound.

In the style of :class:`sklearn.calibration.CalibrationDisplay`; what it draws is asked
of the fitted bound (``_display_curve`` and ``_display_style``, see ``_curve.py``).
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._curve import surrogate_style
from .._guarantee import HIGH_PROBABILITY, guarantee_of
from .._registry import BY_NAME, bound_name
from .._validation import check_probabilities
from ._artists import (
    draw_band,
    draw_certified_band,
    draw_flat_ends,
    draw_histogram,
    legend_below,
    percent,
)
from ._constructors import FromData, check_matplotlib_support, check_n_grid

# The note on a band of a bound that has none of its own.
_BAND_NOTE = "shaded: the band around $\\hat\\eta$"


def _bound_class(display):
    """The class of the display's fitted bound, else the bound named ``method`` in
    the registry (None for a name no bound has)."""
    estimator = getattr(display, "estimator_", None)
    return type(estimator) if estimator is not None else BY_NAME.get(display.method)


def _style(display):
    """How the display's curve is drawn (a ``CurveStyle``), asked of its bound's class
    and fitted estimator; a plain smooth curve for a name no bound has."""
    cls = _bound_class(display)
    if cls is None:
        return surrogate_style(str(display.method))
    return cls._display_style(display.guarantee, getattr(display, "estimator_", None))


def _bound_text(display):
    """The legend's statement of the bound: the interval, its level and its form."""
    level = percent(display.confidence_level)
    if display.lower_bound is None:
        claim = f"CE $\\leq$ {display.bound:.3f}"
    else:
        claim = f"CE $\\in$ [{display.lower_bound:.3f}, {display.bound:.3f}]"
    if guarantee_of(display.guarantee).in_expectation_only(_bound_class(display)):
        return f"{claim} ({level}, paper's form: in expectation over training labels)"
    band = display.certified_band
    if band is not None and np.any(np.asarray(band[1]) > np.asarray(band[2])):
        # Crossed: the data reject the assumption the interval is certified under.
        return f"{claim} ({level}) if E[y|s] were non-decreasing, which the data reject"
    if display.lower_bound is not None and display.lower_bound > display.bound:
        # Empty: under the assumption both ends hold together, so the data reject it.
        return f"{claim} ({level}): empty, the data reject the assumption"
    return f"certified {claim} ({level})"


class CalibrationBoundDisplay(FromData):
    """Reliability curve of a certified calibration bound.

    Plots the surrogate calibration function :math:`\\hat\\eta` that a bound estimator
    fitted (what its ``predict`` returns), the diagonal of perfect calibration, the
    bound's band if it has one, a histogram of the scores, and in the legend the
    interval ``[lower_bound, bound]`` for the calibration error (the estimator's
    ``lower_bound_`` and ``bound_``, which hold together) with its confidence level.
    With ``guarantee="paper"`` the NW and Lipschitz bounds are the published form,
    which holds in expectation over the training labels only; the legend says so
    instead of "certified".

    For NW and Lipschitz the band is :math:`\\hat\\eta \\pm \\tilde g`, **not** a
    confidence band: :math:`\\tilde g(s) = \\min(g_T(s), 1)` (Lemma 6 of the paper, in
    the form the estimator's ``guarantee`` certifies) bounds the *expected* error
    :math:`E|\\hat\\eta(s) - \\eta(s)|` of the surrogate over the training labels at
    the score :math:`s`, the quantity whose average enters those bounds. For
    :class:`~skcalbound.MonotoneCalibrationBound` the curve is the isotonic fit and the
    band its certified band ``L(s) <= E[y | s] <= U(s)`` (``band_``), drawn as the step
    functions it is, in red where it crosses (``L > U``: the data reject
    monotonicity). TV has no pointwise counterpart, so no band is drawn; its curve is
    the step function the bound is computed from, **not a recalibration map**: the
    blocks' mean labels, or with ``method='denoise'`` the denoised surrogate, whose
    flat ends (the denoising's flattening, not the model's) are hatched.

    The legend sits under the axes (it covers no data), each curve is drawn over its
    band in one colour, and the histogram is neutral grey. It is recommended to create
    a display with :meth:`from_estimator`, :meth:`from_predictions` or
    :meth:`from_bound`. All attributes are stored unchanged.

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
    CE in [0.000, 0.041]
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

        if ax is None:
            # Constrained layout keeps the legend under the axes inside the figure.
            _, ax = plt.subplots(figsize=(6.4, 6.4), layout="constrained")
        self.ax_, self.figure_ = ax, ax.figure
        name = self.estimator_name if name is None else name
        style = _style(self)

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
        line_kwargs = {
            "label": f"{prefix}{style.legend}{_bound_text(self)}",
            "zorder": 3,
            "linewidth": 1.5,
            "drawstyle": style.drawstyle,
            **kwargs,
        }
        (self.line_,) = ax.plot(self.grid, self.surrogate, **line_kwargs)
        color = self.line_.get_color()

        self.flat_ends_ = None
        if style.flat_ends_note is not None:
            self.flat_ends_ = draw_flat_ends(
                ax, self.grid, self.surrogate, color, style.flat_ends_note
            )
        self.band_, self.crossing_ = None, None
        if show_band and self.certified_band is not None:
            self.band_, self.crossing_ = draw_certified_band(
                ax, self.certified_band, color, percent(self.confidence_level)
            )
        if show_band and self.band is not None:
            note = style.band_note or _BAND_NOTE
            self.band_ = draw_band(
                ax, self.line_, self.grid, self.surrogate, self.band, note
            )
        self.hist_ = None
        if show_hist and self.y_prob is not None:
            label = f"{prefix}scores (histogram, scaled)"
            self.hist_ = draw_histogram(ax, self.y_prob, label)

        ylabel = "$E[y \\mid s]$ (surrogate $\\hat\\eta$)"
        if self.certified_band is not None:  # the band is about E[y|s] itself
            ylabel = "$E[y \\mid s]$"
        ax.set(
            xlim=(0.0, 1.0),
            ylim=(0.0, 1.0),
            xlabel="Predicted probability $s$",
            ylabel=ylabel,
        )
        legend_below(ax)
        return self

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
        check_n_grid(n_grid)
        method = bound_name(estimator)
        check_is_fitted(estimator)
        if y_prob is None:
            scores, low, high = None, 0.0, 1.0
        else:
            scores = check_probabilities(y_prob, "y_prob")
            low, high = float(scores.min()), float(scores.max())
        curve = estimator._display_curve(low, high, n_grid)
        display = cls(
            curve.grid,
            curve.values,
            float(estimator.bound_),
            lower_bound=float(estimator.lower_bound_),
            band=curve.band,
            certified_band=curve.certified_band,
            y_prob=scores,
            method=method,
            confidence_level=float(estimator.confidence_level),
            guarantee=getattr(estimator, "guarantee", HIGH_PROBABILITY.name),
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
