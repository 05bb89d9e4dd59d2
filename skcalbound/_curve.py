"""What a bound estimator gives :class:`~skcalbound.CalibrationBoundDisplay` to draw.

Each bound class answers two questions: ``_display_curve(low, high, n_grid)`` (the
fitted curve and its band, a :class:`DisplayCurve`) and the classmethod
``_display_style(guarantee, estimator=None)`` (how it is drawn and named, a
:class:`CurveStyle`). The display draws them and never switches on a bound's name.
See ``docs/internals/display.rst``.
"""

from dataclasses import dataclass

import numpy as np

#: Points of a drawn curve when the bound states no resolution of its own.
N_GRID = 512
#: The fewest points of a curve drawn at one point per kernel support.
MIN_SUPPORT_GRID = 64


@dataclass(frozen=True)
class CurveStyle:
    """How the display draws a bound's curve and what its legend says.

    Attributes
    ----------
    legend : str
        The curve's legend entry before the statement of the bound, ending in its
        separator (``"; "`` or ``";\\n"``).
    drawstyle : {'default', 'steps-post'}
        How matplotlib joins the points: a right-continuous step function or lines.
    flat_ends_note : str or None
        The legend's note on the curve's flat ends, hatched as a denoising's
        flattening; None hatches nothing.
    band_note : str or None
        What the band ``curve +- band`` is, said once in the legend; None for a
        bound without a pointwise band.
    """

    legend: str
    drawstyle: str = "default"
    flat_ends_note: str = None
    band_note: str = None


@dataclass(frozen=True)
class DisplayCurve:
    """A fitted bound's curve at evenly spaced scores, and its band.

    Attributes
    ----------
    grid : ndarray of shape (n_grid,)
        Increasing scores.
    values : ndarray of shape (n_grid,)
        The estimator's ``predict`` at ``grid``.
    band : ndarray of shape (n_grid,) or None
        Half-width of the pointwise error band ``min(g, 1)`` at ``grid``, or None.
    certified_band : tuple of three ndarrays or None
        A simultaneous band ``(scores, lower, upper)`` (``L`` right-continuous and
        ``U`` left-continuous steps between the distinct sorted scores), or None.
    """

    grid: np.ndarray
    values: np.ndarray
    band: np.ndarray = None
    certified_band: tuple = None


def curve_grid(low, high, n_grid=None, *, support=None):
    """``n_grid`` evenly spaced scores from ``low`` to ``high``. None: 512, or with a
    kernel ``support`` one point per support (64 to 512 points), so that consecutive
    points average disjoint sets of training scores."""
    if n_grid is None:
        n_grid = N_GRID
        if support is not None:
            steps = np.ceil((high - low) / support) + 1
            n_grid = int(np.clip(steps, MIN_SUPPORT_GRID, N_GRID))
    return np.linspace(low, high, n_grid)


def surrogate_style(label, band_note=None):
    """The style of a smooth surrogate ``label`` (``"NW"``, ...) with this band."""
    return CurveStyle(f"{label} surrogate $\\hat\\eta$; ", band_note=band_note)


def smoothing_band_note(what, source, form=""):
    """The legend's note on the band ``eta_hat +- g~``: the surrogate's pointwise
    error bound (Lemma 6), ``what`` (``"kernel smoother's"``) and the ``source`` of
    its bias, the ``form`` of the bound appended to the first line."""
    return (
        f"shaded: $\\hat\\eta \\pm \\tilde g$, the {what} error bound at each "
        f"score{form}:\nits bias (from {source}) plus its label noise,\na bound on "
        "the expected error of $\\hat\\eta$ there (not a confidence band)"
    )
