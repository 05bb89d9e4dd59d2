"""What ``CalibrationBoundDisplay.plot`` draws: bands, flat ends, histogram, legend."""

import numpy as np

# The label of the (hidden) container that pairs a display's curve with its band, so
# that the legend draws them as one entry; the rest of the label is the band's note.
_PAIR = "_skcalbound curve and band:"
_HIST_COLOR = "0.5"
# Where a certified band crosses (L > U), in a colour of its own.
_CROSSING_COLOR = "crimson"


def percent(confidence_level):
    return f"{100 * confidence_level:g}%"


def flat_ends(grid, values):
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


def draw_flat_ends(ax, grid, values, color, note):
    """Hatch, in the curve's ``color``, the score ranges where the step function
    ``values`` is flat at its ends; ``note`` labels them once per axes."""
    shown = note in ax.get_legend_handles_labels()[1]
    return [
        ax.axvspan(
            low,
            high,
            facecolor="none",
            edgecolor=color,
            hatch="///",
            alpha=0.3,
            linewidth=0,
            zorder=0,
            label="_flat end" if shown or k else note,
        )
        for k, (low, high) in enumerate(flat_ends(grid, values))
    ]


def draw_band(ax, line, grid, values, band, note):
    """Fill ``values +- band`` (clipped to [0, 1]) at ``grid`` in the colour of the
    curve ``line``, paired with it for the legend, which says ``note`` once."""
    from matplotlib.container import Container

    lower = np.clip(values - band, 0.0, 1.0)
    upper = np.clip(values + band, 0.0, 1.0)
    # The band in the curve's colour, light: it belongs to the curve.
    artist = ax.fill_between(
        grid, lower, upper, color=line.get_color(), alpha=0.2, linewidth=0, zorder=2
    )
    # Hidden from the legend; the legend draws the curve over its band.
    ax.add_container(Container((line, artist), label=_PAIR + note))
    return artist


def draw_histogram(ax, y_prob, label):
    """The scores' histogram, 50 bins, heights scaled to at most 0.2, in neutral
    grey: context, not a curve or a band."""
    counts, edges = np.histogram(y_prob, bins=50, range=(0.0, 1.0))
    heights = 0.2 * counts / max(int(counts.max()), 1)
    return ax.stairs(
        heights,
        edges,
        fill=True,
        color=_HIST_COLOR,
        alpha=0.35,
        linewidth=0,
        zorder=1,
        label=label,
    )


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


def draw_certified_band(ax, certified_band, color, level):
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


def legend_below(ax):
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
