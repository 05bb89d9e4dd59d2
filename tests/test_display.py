"""CalibrationBoundDisplay: artists hold the right data, constructors, errors.

The band is checked against slow references computed here from the definitions
(Lemma 6 with the NW weights; the Lipschitz form with box weights), not against the
code that draws it.
"""

import warnings
from unittest import mock

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from numpy.testing import assert_allclose, assert_array_equal  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from skcalbound import (  # noqa: E402
    CalibrationBoundDisplay,
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    NWCalibrationBound,
    SechPerturbedClassifier,
    TVCalibrationBound,
    perturb_scores,
)

H = 2.0**-4


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def perturbed():
    rng = np.random.default_rng(3)
    s0 = rng.beta(2.0, 3.0, size=3000)
    y = rng.uniform(size=s0.size) < s0**1.5
    return perturb_scores(s0, H, random_state=0), y


def _legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _nw_reference_g(
    scores, labels, query, bandwidth, tempering, n_bins, b1, b2, expanded=False
):
    """Lemma 6's ``g_T`` at one query, one training point at a time, with the weights
    of the grid smoother (tempered Epanechnikov on bin offsets, nearest-neighbour
    fallback) and the actual scores in every distance. ``expanded``: Lemma 6 expanded
    at the query (SPEC section 12), ``b1 |sum w d|`` in the first term; else as
    published, ``b1 sum w |d|``, with the sum over the query's own cell (one weight
    ``w_0``) bounded by Cauchy-Schwarz, ``w_0 sqrt(N_c sum d**2)``."""
    qb = min(int(query * n_bins), n_bins - 1)
    bins = np.minimum((scores * n_bins).astype(int), n_bins - 1)
    u = (qb - bins) / (n_bins * bandwidth)
    w = np.where(np.abs(u) < 1, np.maximum(1 - u * u, 0.0) ** tempering, 0.0)
    fallback_used = w.sum() == 0
    if fallback_used:
        dist = np.abs(scores - query)
        w = (dist == dist.min()).astype(float)
    w = w / w.sum()
    d = query - scores
    own = (bins == qb) & (w > 0)
    if expanded:
        first = abs(w @ d)
    elif own.any() and not fallback_used:
        first = w[~own] @ np.abs(d[~own]) + w[own][0] * np.sqrt(
            own.sum() * (d[own] @ d[own])
        )
    else:
        first = w @ np.abs(d)
    return b1 * first + 0.5 * b2 * (w @ (d * d)) + 0.5 * np.sqrt(w @ w)


def _bucket_reference_g(train, query, L, n_buckets, shift, n_shifts, n_cells):
    """``L S / n_b + 1 / (2 sqrt(n_b))`` over the query's bucket, or the bucket of the
    nearest training score (the lower one when equidistant), where ``S`` sums the
    distances to the bucket's points outside the query's cell of the grid of
    ``n_cells`` and bounds those inside by Cauchy-Schwarz."""

    def bucket(v):
        return np.clip(np.floor(n_buckets * v - shift / n_shifts), -1, n_buckets - 1)

    def cell(v):
        return np.minimum(np.floor(n_cells * v), n_cells - 1)

    own = bucket(train) == bucket(query)
    if not own.any():
        dist = np.abs(train - query)
        own = bucket(train) == bucket(train[np.flatnonzero(dist == dist.min())[0]])
    points = train[own]
    inside = cell(points) == cell(query)
    S = np.sum(np.abs(query - points[~inside])) + np.sqrt(
        inside.sum() * np.sum((query - points[inside]) ** 2)
    )
    return L * S / own.sum() + 0.5 / np.sqrt(own.sum())


# --------------------------------------------------------------------------------------
# from_predictions: what is drawn
# --------------------------------------------------------------------------------------


def test_nw_display_draws_the_surrogate_the_band_and_the_bound(perturbed):
    s, y = perturbed
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound="nw", bound_params={"h": H, "random_state": 0}, n_grid=200
    )
    est = disp.estimator_
    assert isinstance(est, NWCalibrationBound) and est.h == H
    assert (
        disp.bound
        == est.bound_
        == NWCalibrationBound(h=H, random_state=0).fit(s, y).bound_
    )
    # The grid spans the scores; the curve is predict on it.
    assert_allclose(disp.grid, np.linspace(s.min(), s.max(), 200), rtol=0, atol=0)
    assert_array_equal(disp.line_.get_xdata(), disp.grid)
    assert_allclose(disp.line_.get_ydata(), est.predict(disp.grid), rtol=0, atol=1e-15)
    # The band: min(g_T, 1) of Lemma 6 expanded at the query (what the default
    # certificate uses) for the refit smoother, from the definition.
    order = np.argsort(s, kind="stable")
    train, labels = s[order], y[order].astype(float)
    reference = [
        min(
            _nw_reference_g(
                train,
                labels,
                q,
                est.bandwidth_,
                est.tempering,
                est.surrogate_.n_bins,
                est.b1_,
                est.b2_,
                expanded=True,
            ),
            1.0,
        )
        for q in disp.grid
    ]
    assert_allclose(disp.band, reference, rtol=1e-9)
    assert 0 < disp.band.min() and disp.band.max() <= 1
    # The polygon is the band clipped to [0, 1] around the surrogate.
    y_vertices = disp.band_.get_paths()[0].vertices[:, 1]
    lower = np.clip(disp.surrogate - disp.band, 0, 1)
    upper = np.clip(disp.surrogate + disp.band, 0, 1)
    assert_allclose([y_vertices.min(), y_vertices.max()], [lower.min(), upper.max()])
    # Legend: the interval with its confidence level; the band is not called certified.
    texts = _legend_texts(disp.ax_)
    line_label = disp.line_.get_label()
    assert disp.lower_bound == est.lower_bound_ and disp.guarantee == "high_probability"
    interval = f"[{est.lower_bound_:.3f}, {est.bound_:.3f}]"
    assert f"certified CE $\\in$ {interval} (95%)" in line_label
    assert "NW" in line_label and line_label in texts
    band_note = texts[-1]
    assert "not a confidence band" in band_note and "certified" not in band_note
    # The note says what the band is in words, not by the paper's lemma number.
    assert "Lemma" not in band_note
    assert "kernel smoother's error bound at each score" in band_note
    assert "its bias (from the assumed derivative bounds) plus its label noise" in (
        band_note.replace("\n", " ")
    )
    assert texts == [
        "Perfectly calibrated",
        line_label,
        "scores (histogram, scaled)",
        band_note,
    ]
    assert_array_equal(disp.ref_line_.get_xydata(), [[0, 0], [1, 1]])


@pytest.fixture(scope="module")
def miscalibrated():
    # True CE = 1/6; at this size the NW and Lipschitz lower bounds are well above 0.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=20_000)
    return s, rng.uniform(size=s.size) < s**2


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
@pytest.mark.parametrize(
    "bound, params, name",
    [
        ("nw", {"b1": 2.0, "b2": 2.0}, "NW"),
        ("lipschitz", {"L": 2.0}, "Lipschitz bucketing"),
        ("tv", {}, "TV-denoised"),
    ],
)
def test_legend_shows_the_certified_interval(
    miscalibrated, bound, params, name, guarantee
):
    s, y = miscalibrated
    disp = CalibrationBoundDisplay.from_predictions(
        y,
        s,
        bound=bound,
        bound_params={**params, "guarantee": guarantee, "random_state": 0},
        n_grid=50,
    )
    est = disp.estimator_
    assert est.guarantee == disp.guarantee == guarantee
    assert disp.lower_bound == est.lower_bound_ and disp.bound == est.bound_
    assert 0.0 <= est.lower_bound_ <= 1 / 6 <= est.bound_
    if bound != "tv":
        assert est.lower_bound_ > 0.05  # an interval, not [0, bound]
    label = disp.line_.get_label()
    interval = f"CE $\\in$ [{est.lower_bound_:.3f}, {est.bound_:.3f}] (95%"
    if bound == "tv" and guarantee == "high_probability":  # TV's default: cells
        name = "TV cells: block mean labels"
    else:
        name = f"{name} surrogate"
    assert label.startswith(name) and interval in label
    assert label in _legend_texts(disp.ax_)
    # The published NW and Lipschitz forms hold in expectation only: not "certified".
    in_expectation = guarantee == "paper" and bound != "tv"
    assert ("certified" in label) is not in_expectation
    caveat = "paper's form: in expectation over training labels"
    assert (caveat in label) is in_expectation


def test_an_empty_interval_is_not_called_certified():
    # Lipschitz with L = 0.1 on eta(s) = s: the interval [0.069, 0.049] is empty,
    # and the legend said "certified CE in [0.069, 0.049] (95%)".
    rng = np.random.default_rng(3)
    s = rng.uniform(0.05, 0.95, size=50_000)
    y = rng.uniform(size=s.size) < s
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the empty interval's own warning
        est = LipschitzBucketBound(L=0.1, random_state=0).fit(s, y)
    disp = CalibrationBoundDisplay.from_bound(est, s)
    assert est.lower_bound_ > est.bound_
    assert disp.line_.get_label() == (
        "Lipschitz bucketing surrogate $\\hat\\eta$; CE $\\in$ "
        f"[{est.lower_bound_:.3f}, {est.bound_:.3f}] (95%): empty, the data reject "
        "the assumption"
    )


def test_display_without_a_lower_bound_shows_the_upper_bound_only():
    disp = CalibrationBoundDisplay(
        np.linspace(0, 1, 5), np.linspace(0, 1, 5), 0.25, method="nw"
    ).plot()
    assert disp.lower_bound is None
    assert disp.line_.get_label() == (
        "NW surrogate $\\hat\\eta$; certified CE $\\leq$ 0.250 (95%)"
    )
    disp = CalibrationBoundDisplay(
        np.linspace(0, 1, 5),
        np.linspace(0, 1, 5),
        0.25,
        lower_bound=0.125,
        method="lipschitz",
        confidence_level=0.9,
        guarantee="paper",
    ).plot(name="m")
    assert disp.line_.get_label() == (
        "m: Lipschitz bucketing surrogate $\\hat\\eta$; CE $\\in$ [0.125, 0.250] (90%, "
        "paper's form: in expectation over training labels)"
    )


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_nw_band_is_the_modes_lemma_6_with_the_modes_b2(perturbed, guarantee):
    # The band uses the estimator's own b1_, b2_ and form of Lemma 6: the sharp b2 and
    # Lemma 6 expanded at the query in high-probability mode, Corollary 4's (three
    # times larger) b2 and the published Lemma 6 in paper mode.
    s, y = perturbed
    disp = CalibrationBoundDisplay.from_predictions(
        y,
        s,
        bound="nw",
        bound_params={"h": H, "guarantee": guarantee, "random_state": 0},
        n_grid=40,
    )
    est = disp.estimator_
    sharp_b2 = np.tanh(1 / H) ** 2 / (2 * H**2)
    expected_b2 = sharp_b2 if guarantee == "high_probability" else 3 * sharp_b2
    assert_allclose(
        [est.b1_, est.b2_], [np.tanh(1 / H) / (2 * H), expected_b2], rtol=1e-12
    )
    order = np.argsort(s, kind="stable")
    train, labels = s[order], y[order].astype(float)
    expanded = guarantee == "high_probability"
    reference = [
        min(
            _nw_reference_g(
                train,
                labels,
                q,
                est.bandwidth_,
                est.tempering,
                est.surrogate_.n_bins,
                est.b1_,
                est.b2_,
                expanded,
            ),
            1.0,
        )
        for q in disp.grid
    ]
    assert_allclose(disp.band, reference, rtol=1e-9)
    # The legend names the band in words, and the paper's form as such.
    form = " (the paper's looser form)" if guarantee == "paper" else ""
    assert _legend_texts(disp.ax_)[-1] == (
        "shaded: $\\hat\\eta \\pm \\tilde g$, the kernel smoother's error bound at "
        f"each score{form}:\nits bias (from the assumed derivative bounds) plus its "
        "label noise,\na bound on the expected error of $\\hat\\eta$ there (not a "
        "confidence band)"
    )
    # With the other mode's b2 the band would differ: the mode's constant is used.
    other_b2 = 3 * sharp_b2 if guarantee == "high_probability" else sharp_b2
    other = [
        min(
            _nw_reference_g(
                train,
                labels,
                q,
                est.bandwidth_,
                est.tempering,
                est.surrogate_.n_bins,
                est.b1_,
                other_b2,
                expanded,
            ),
            1.0,
        )
        for q in disp.grid
    ]
    assert np.max(np.abs(np.asarray(other) - disp.band)) > 1e-3


def test_histogram_shows_the_scores_scaled_to_a_fifth(perturbed):
    s, y = perturbed
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound="tv", bound_params={"random_state": 0}
    )
    counts, edges = np.histogram(s, bins=50, range=(0, 1))
    values = disp.hist_.get_data().values
    assert_allclose(values, 0.2 * counts / counts.max())
    assert_allclose(disp.hist_.get_data().edges, edges)
    assert_array_equal(disp.y_prob, s)


def test_tv_display_has_no_band_and_draws_a_step_function(perturbed):
    s, y = perturbed
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound=TVCalibrationBound(random_state=0)
    )
    est = disp.estimator_
    assert disp.method == "tv" and disp.band is None and disp.band_ is None
    assert disp.line_.get_drawstyle() == "steps-post"
    assert_allclose(disp.line_.get_ydata(), est.predict(disp.grid), rtol=0, atol=0)
    texts = _legend_texts(disp.ax_)
    assert any(
        f"[{est.lower_bound_:.3f}, {est.bound_:.3f}]" in t and "TV" in t for t in texts
    )
    assert not any("Lemma" in t or t.startswith("shaded") for t in texts)


def test_tv_curve_is_the_denoised_surrogate_with_its_flat_ends_hatched():
    # Perfectly calibrated uniform scores: the TV surrogate is flat below its first
    # jump and above its last (issue 36, item 4). The legend says the curve is the
    # denoised surrogate, not a recalibration map, and the two ends are hatched in
    # the curve's colour, labelled as the denoising's flattening.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=20_000)
    y = rng.uniform(size=s.size) < s
    disp = CalibrationBoundDisplay.from_predictions(
        y,
        s,
        bound="tv",
        bound_params={"method": "denoise", "random_state": 0},
        name="m",
    )
    est, grid = disp.estimator_, disp.grid
    label = disp.line_.get_label()
    assert label.startswith(
        "m: TV-denoised surrogate $\\hat\\eta$ (used by the bound, not a "
        "recalibration map);\n"
    )
    assert "recalibrated" not in label
    texts = _legend_texts(disp.ax_)
    note = (
        "hatched: flat ends of the TV-denoised surrogate (below its first jump, above "
        "its\nlast): the denoising's flattening, not the model's"
    )
    assert texts == [
        "Perfectly calibrated",
        label,
        note,
        "m: scores (histogram, scaled)",
    ]
    # The hatched ranges: from the smallest score to the first grid point past the
    # step function's first jump, and from the first grid point past its last jump
    # to the largest score; over the full height, in the curve's colour.
    knots = est.surrogate_.step.knots
    first = grid[np.searchsorted(grid, knots[1])]
    last = grid[np.searchsorted(grid, knots[-1])]
    left, right = disp.flat_ends_
    assert left.get_label() == note and right.get_label().startswith("_")
    for patch, (x0, x1) in zip(disp.flat_ends_, [(grid[0], first), (last, grid[-1])]):
        assert_allclose([patch.get_x(), patch.get_x() + patch.get_width()], [x0, x1])
        assert (patch.get_y(), patch.get_height()) == (0.0, 1.0)
        assert patch.get_transform().contains_branch_seperately(disp.ax_.transData) == (
            True,
            False,
        )  # x in data, y in axes coordinates
        assert patch.get_hatch() == "///"
        assert_allclose(
            patch.get_edgecolor()[:3], matplotlib.colors.to_rgb(disp.line_.get_color())
        )
    # Wide ends, where the curve is flat while the diagonal climbs by 0.1 or more.
    assert first > 0.1 and last < 0.9
    inside = grid[(grid >= grid[0]) & (grid < first)]
    assert np.unique(est.predict(inside)).size == 1
    assert np.unique(est.predict(grid[grid >= last])).size == 1
    assert est.predict([first])[0] != est.predict([grid[0]])[0]


def test_tv_cells_curve_is_the_block_means_and_nothing_is_hatched():
    # TV's default, the cell bound: the curve is the blocks' mean labels (no
    # denoising, so no flat ends to hatch), and the legend says so.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=20_000)
    y = rng.uniform(size=s.size) < s
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound="tv", bound_params={"random_state": 0}, name="m"
    )
    est = disp.estimator_
    assert est.method_ == "cells" and disp.flat_ends_ is None
    label = disp.line_.get_label()
    assert label.startswith(
        "m: TV cells: block mean labels (used by the bound, not a recalibration map);\n"
    )
    assert f"[{est.lower_bound_:.3f}, {est.bound_:.3f}]" in label
    assert "denoised" not in " ".join(_legend_texts(disp.ax_))
    # The curve is predict: one value per block, the block's mean label.
    assert_array_equal(disp.surrogate, est.predict(disp.grid))
    # The first block: every score below the first interior edge.
    first = s < est.surrogate_.edges[0]
    assert 0 < first.sum() < s.size
    assert est.predict([s.min()])[0] == pytest.approx(y[first].mean(), abs=1e-12)


def test_flat_ends_of_a_constant_curve_and_on_shared_axes():
    # No jump: the whole curve is the denoising's flat end, one hatched range.
    disp = CalibrationBoundDisplay(
        np.linspace(0.2, 0.7, 6), np.full(6, 0.4), 0.3, method="tv"
    ).plot()
    (patch,) = disp.flat_ends_
    assert_allclose([patch.get_x(), patch.get_width()], [0.2, 0.5])
    # Other bounds hatch nothing; two TV curves on one axes: one legend entry.
    fig, ax = plt.subplots()
    grid = np.linspace(0, 1, 11)
    step = np.repeat([0.2, 0.5, 0.8], [3, 4, 4])
    for name in ("a", "b"):
        tv = CalibrationBoundDisplay(grid, step, 0.3, method="tv").plot(
            ax=ax, name=name
        )
        xs = [(p.get_x(), p.get_x() + p.get_width()) for p in tv.flat_ends_]
        assert_allclose(xs, [(0.0, 0.3), (0.7, 1.0)])
    nw = CalibrationBoundDisplay(grid, grid, 0.3, method="nw").plot(ax=ax)
    assert nw.flat_ends_ is None
    texts = _legend_texts(ax)
    assert sum(t.startswith("hatched: flat ends") for t in texts) == 1


def test_lipschitz_band_matches_the_box_weight_definition_with_fallback():
    # Scores with a gap: grid points in the gap lie in empty buckets and use the
    # bucket of the nearest training score.
    rng = np.random.default_rng(1)
    s = np.concatenate([rng.uniform(0.0, 0.2, 300), rng.uniform(0.7, 0.9, 300)])
    y = rng.uniform(size=s.size) < s
    est = LipschitzBucketBound(L=2.0, n_buckets=16, n_shifts=3, random_state=0).fit(
        s, y
    )
    disp = CalibrationBoundDisplay.from_bound(est, s, n_grid=301)
    _, _, n_fallback = est.surrogate_.residuals_and_smoothing(est.L_, disp.grid)
    assert n_fallback > 50  # the gap is exercised
    train = np.sort(s)
    ((n_cells, _),) = est.surrogate_.grids
    reference = [
        min(
            _bucket_reference_g(train, q, 2.0, est.n_buckets_, est.shift_, 3, n_cells),
            1.0,
        )
        for q in disp.grid
    ]
    assert_allclose(disp.band, reference, rtol=1e-9, atol=1e-12)
    assert_allclose(disp.line_.get_ydata(), est.predict(disp.grid), rtol=0, atol=0)
    assert "Lipschitz" in disp.line_.get_label()
    assert f"[{est.lower_bound_:.3f}, {est.bound_:.3f}]" in disp.line_.get_label()
    note = _legend_texts(disp.ax_)[-1]
    assert "Lemma" not in note and "paper's looser form" not in note
    assert note.startswith(
        "shaded: $\\hat\\eta \\pm \\tilde g$, the bucket average's error bound at "
        "each score:\nits bias (from the Lipschitz constant) plus its label noise"
    )


# --------------------------------------------------------------------------------------
# Reading the figure: legend outside the data, colours, grid of the NW curve
# --------------------------------------------------------------------------------------


def _extent(artist, renderer):
    return artist.get_window_extent(renderer)


def test_legend_is_under_the_axes_and_its_x_label(perturbed):
    s, y = perturbed
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound="nw", bound_params={"h": H, "random_state": 0}
    )
    fig, ax = disp.figure_, disp.ax_
    fig.canvas.draw()  # constrained layout moves the axes: measure after it
    renderer = fig.canvas.get_renderer()
    legend = _extent(ax.get_legend(), renderer)
    x_label = _extent(ax.xaxis.label, renderer)
    tick_labels = [_extent(t, renderer) for t in ax.get_xticklabels() if t.get_text()]
    # Entirely below the axes, the tick labels and the x label: it covers no data.
    assert legend.y1 <= ax.bbox.y0
    assert legend.y1 <= x_label.y0 and legend.y1 <= min(t.y0 for t in tick_labels)
    # Centred under the axes, and inside the figure the display made.
    assert abs((legend.x0 + legend.x1) / 2 - (ax.bbox.x0 + ax.bbox.x1) / 2) < 1.0
    assert fig.bbox.x0 <= legend.x0 and legend.x1 <= fig.bbox.x1
    assert fig.bbox.y0 <= legend.y0
    # Before the fix it sat in the upper left corner, over a quarter of the axes.
    assert not legend.overlaps(ax.bbox)


def test_legend_stays_under_the_x_label_when_the_figure_is_resized(perturbed):
    s, y = perturbed
    _, ax = plt.subplots(figsize=(4, 4))
    CalibrationBoundDisplay.from_predictions(
        y, s, bound="tv", bound_params={"random_state": 0}, ax=ax
    )
    fig = ax.figure
    for size in [(4, 4), (10, 3)]:
        fig.set_size_inches(*size)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legend = _extent(ax.get_legend(), renderer)
        assert legend.y1 <= _extent(ax.xaxis.label, renderer).y0, size


def test_histogram_is_grey_and_the_band_takes_the_curves_colour(perturbed):
    s, y = perturbed
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound="nw", bound_params={"h": H, "random_state": 0}, color="tab:red"
    )
    line = np.asarray(matplotlib.colors.to_rgb(disp.line_.get_color()))
    band = disp.band_.get_facecolor()[0]
    hist = np.asarray(disp.hist_.get_facecolor())
    # The band: the curve's colour, light.
    assert_allclose(band[:3], line, atol=1e-12)
    assert band[3] < 0.5
    # The histogram: neutral grey (r = g = b), far from the curve's colour.
    assert hist[0] == hist[1] == hist[2]
    assert np.max(np.abs(hist[:3] - line)) > 0.3
    # The legend draws the curve's entry over its band, in the curve's colour.
    legend = disp.ax_.get_legend()
    index = _legend_texts(disp.ax_).index(disp.line_.get_label())
    patch = legend.legend_handles[index]
    assert_allclose(patch.get_facecolor()[:3], line, atol=1e-12)
    # The band's note too: not the histogram's grey.
    note = next(
        i for i, t in enumerate(_legend_texts(disp.ax_)) if t.startswith("shaded")
    )
    assert_allclose(legend.legend_handles[note].get_facecolor(), band, atol=1e-12)


def test_one_note_per_kind_of_band_when_displays_share_axes(perturbed):
    s, y = perturbed
    _, ax = plt.subplots()
    for name in ["a", "b"]:
        CalibrationBoundDisplay.from_predictions(
            y,
            s,
            bound="nw",
            bound_params={"h": H, "random_state": 0},
            ax=ax,
            name=name,
            show_hist=name == "a",
        )
    lip = LipschitzBucketBound(h=H, random_state=0).fit(s, y)
    CalibrationBoundDisplay.from_bound(lip, s, ax=ax, name="c", show_hist=False)
    texts = _legend_texts(ax)
    notes = [t for t in texts if t.startswith("shaded")]
    assert len(notes) == 2  # NW's error bound and Lipschitz's, once each
    assert [t.split(":")[0] for t in texts[1:4]] == ["a", "b", "c"]
    assert texts[4] == "a: scores (histogram, scaled)"


def test_nw_curve_is_drawn_every_kernel_support_by_default():
    # At large n the bound picks a small bandwidth; the curve is predict at points
    # 2 * bandwidth_ apart (not every 1/512, where it drew its noise).
    rng = np.random.default_rng(0)
    s = perturb_scores(rng.uniform(size=200_000), 2.0**-6, random_state=0)
    y = rng.uniform(size=s.size) < s
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound="nw", bound_params={"h": 2.0**-6, "random_state": 0}
    )
    est = disp.estimator_
    step = np.diff(disp.grid)
    n_expected = int(np.ceil((s.max() - s.min()) / (2 * est.bandwidth_))) + 1
    assert 64 < disp.grid.size == n_expected < 512
    assert_allclose(step, 2 * est.bandwidth_, rtol=0.02)
    assert_allclose(disp.grid[[0, -1]], [s.min(), s.max()], rtol=0, atol=0)
    # Still exactly the fitted surrogate, and its band, at those points.
    assert_allclose(disp.line_.get_ydata(), est.predict(disp.grid), rtol=0, atol=0)
    assert disp.band.shape == disp.grid.shape
    # A given n_grid is honoured; TV keeps 512 points.
    fine = CalibrationBoundDisplay.from_bound(est, s, n_grid=512)
    assert fine.grid.size == 512
    tv = TVCalibrationBound(random_state=0).fit(s[:5000], y[:5000])
    assert CalibrationBoundDisplay.from_bound(tv, s[:5000]).grid.size == 512


# --------------------------------------------------------------------------------------
# The constructors
# --------------------------------------------------------------------------------------


def test_from_estimator_fits_the_bound_on_predict_proba():
    X, y = make_classification(n_samples=6000, random_state=0)
    clf = LogisticRegression().fit(X[:3000], y[:3000])
    disp = CalibrationBoundDisplay.from_estimator(
        clf,
        X[3000:],
        y[3000:],
        bound="lipschitz",
        bound_params={"L": 4.0, "random_state": 0},
    )
    p = clf.predict_proba(X[3000:])[:, 1]
    expected = LipschitzBucketBound(L=4.0, random_state=0).fit(p, y[3000:])
    assert disp.bound == expected.bound_
    assert_allclose(disp.surrogate, expected.predict(disp.grid), rtol=0, atol=0)
    assert disp.line_.get_label().startswith("LogisticRegression: Lipschitz")
    assert disp.estimator_name == "LogisticRegression"


@pytest.mark.parametrize("bound", ["nw", "lipschitz", NWCalibrationBound()])
@pytest.mark.parametrize("pipeline", [False, True])
def test_from_estimator_reads_h_from_a_perturbed_classifier(bound, pipeline):
    X, y = make_classification(n_samples=4000, random_state=0)
    clf = SechPerturbedClassifier(LogisticRegression(), h=2.0**-5, random_state=0)
    if pipeline:
        clf = make_pipeline(StandardScaler(), clf)
    clf.fit(X[:2000], y[:2000])
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X[2000:], y[2000:], bound=bound, bound_params={"random_state": 0}
    )
    assert disp.estimator_.h == 2.0**-5
    if isinstance(bound, NWCalibrationBound):
        assert bound.h is None  # the caller's instance is not modified


def test_from_estimator_keeps_a_stated_assumption():
    X, y = make_classification(n_samples=4000, random_state=0)
    clf = SechPerturbedClassifier(LogisticRegression(), h=2.0**-5, random_state=0)
    clf.fit(X[:2000], y[:2000])
    disp = CalibrationBoundDisplay.from_estimator(
        clf,
        X[2000:],
        y[2000:],
        bound="lipschitz",
        bound_params={"L": 100.0, "random_state": 0},
    )
    assert disp.estimator_.L == 100.0 and disp.estimator_.h is None
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X[2000:], y[2000:], bound=NWCalibrationBound(b1=40.0, b2=2000.0)
    )
    assert disp.estimator_.h is None and disp.estimator_.b1 == 40.0
    # TV needs no smoothness: nothing is added.
    disp = CalibrationBoundDisplay.from_estimator(clf, X[2000:], y[2000:], bound="tv")
    assert "h" not in disp.estimator_.get_params()


def test_legend_names_the_model_inside_its_wrappers():
    from sklearn.frozen import FrozenEstimator
    from sklearn.naive_bayes import GaussianNB

    X, y = make_classification(n_samples=4000, random_state=0)
    trained = GaussianNB().fit(X[:2000], y[:2000])
    wrapped = [
        SechPerturbedClassifier(LogisticRegression(), h=2.0**-5, random_state=0),
        make_pipeline(
            StandardScaler(),
            SechPerturbedClassifier(LogisticRegression(), h=2.0**-5, random_state=0),
        ),
        make_pipeline(StandardScaler(), LogisticRegression()),
    ]
    for clf in wrapped:
        clf.fit(X[:2000], y[:2000])
        disp = CalibrationBoundDisplay.from_estimator(
            clf,
            X[2000:],
            y[2000:],
            bound="nw",
            bound_params={"b1": 2.0, "b2": 2.0, "random_state": 0},
        )
        assert disp.estimator_name == "LogisticRegression"
        assert disp.line_.get_label().startswith("LogisticRegression: NW surrogate")
    frozen = SechPerturbedClassifier(
        FrozenEstimator(trained), h=2.0**-5, random_state=0
    ).fit(X[:2000], y[:2000])
    disp = CalibrationBoundDisplay.from_estimator(
        frozen, X[2000:], y[2000:], bound="nw"
    )
    assert disp.line_.get_label().startswith("GaussianNB: NW surrogate")
    assert disp.estimator_.h == 2.0**-5
    assert not any(
        "Sech" in t or "Pipeline" in t or "Frozen" in t for t in _legend_texts(disp.ax_)
    )


def test_from_estimator_name_and_line_kwargs():
    X, y = make_classification(n_samples=2000, random_state=0)
    clf = LogisticRegression().fit(X, y)
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X, y, bound_params={"random_state": 0}, name="my model", color="red"
    )
    assert disp.line_.get_label().startswith("my model: TV")
    assert disp.line_.get_color() == "red"


def _churn_data():
    rng = np.random.default_rng(5)
    p_churn = rng.uniform(size=4000)
    churn = rng.uniform(size=p_churn.size) < p_churn**2
    return p_churn, churn, np.where(churn, "churn", "stay")


@pytest.mark.parametrize("bound", ["tv", "nw"])
def test_from_predictions_pos_label(bound):
    p_churn, churn, labels = _churn_data()
    params = {"random_state": 0, **({"h": 2.0**-4} if bound == "nw" else {})}
    with pytest.raises(
        ValueError,
        match=r"y_true takes value in \{'churn', 'stay'\} "
        "and pos_label is not specified",
    ):
        CalibrationBoundDisplay.from_predictions(
            labels, p_churn, bound=bound, bound_params=params
        )
    expected = CalibrationBoundDisplay.from_predictions(
        churn.astype(int), p_churn, bound=bound, bound_params=params
    )
    disp = CalibrationBoundDisplay.from_predictions(
        labels, p_churn, bound=bound, bound_params=params, pos_label="churn"
    )
    assert disp.bound == expected.bound and disp.lower_bound == expected.lower_bound
    assert_array_equal(disp.surrogate, expected.surrogate)
    # A predict_proba output: the column of pos_label among the sorted labels
    # ('churn' sorts first, so column 0).
    proba = np.column_stack([p_churn, 1 - p_churn])
    disp = CalibrationBoundDisplay.from_predictions(
        labels, proba, bound=bound, bound_params=params, pos_label="churn"
    )
    assert disp.bound == expected.bound
    assert_array_equal(disp.y_prob, p_churn)
    with pytest.raises(ValueError, match="pos_label='lost' is not a valid label"):
        CalibrationBoundDisplay.from_predictions(
            labels, p_churn, bound=bound, bound_params=params, pos_label="lost"
        )


def test_pos_label_stated_by_the_bound():
    p_churn, churn, labels = _churn_data()
    expected = TVCalibrationBound(random_state=0).fit(p_churn, churn)
    bound = TVCalibrationBound(pos_label="churn", random_state=0)
    disp = CalibrationBoundDisplay.from_predictions(labels, p_churn, bound=bound)
    assert disp.bound == expected.bound_
    assert bound.pos_label == "churn"  # the caller's instance is not modified
    with pytest.raises(
        ValueError, match="pos_label='stay' and the bound's pos_label='churn' disagree"
    ):
        CalibrationBoundDisplay.from_predictions(
            labels, p_churn, bound=bound, pos_label="stay"
        )


def test_from_estimator_pos_label_picks_the_column_and_the_labels():
    X, y01 = make_classification(n_samples=6000, random_state=0)
    y = np.where(y01 == 1, "yes", "no")  # classes_ = ['no', 'yes']
    clf = LogisticRegression().fit(X[:3000], y[:3000])
    X_test, y_test = X[3000:], y[3000:]
    proba = clf.predict_proba(X_test)
    # Default: classes_[1] = 'yes', as in scikit-learn's CalibrationDisplay.
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X_test, y_test, bound_params={"random_state": 0}
    )
    expected = TVCalibrationBound(random_state=0).fit(proba[:, 1], y_test == "yes")
    assert disp.bound == expected.bound_
    # pos_label='no': column 0, labels compared to 'no'.
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X_test, y_test, bound_params={"random_state": 0}, pos_label="no"
    )
    expected = TVCalibrationBound(random_state=0).fit(proba[:, 0], y_test == "no")
    assert disp.bound == expected.bound_ and disp.lower_bound == expected.lower_bound_
    assert_array_equal(disp.y_prob, proba[:, 0])
    with pytest.raises(
        ValueError,
        match=r"pos_label='maybe' is not a valid label: it "
        r"should be one of the estimator's classes_ \['no', 'yes'\]",
    ):
        CalibrationBoundDisplay.from_estimator(clf, X_test, y_test, pos_label="maybe")
    with pytest.raises(
        ValueError,
        match=r"y has labels the estimator does not know: "
        r"\['maybe'\]",
    ):
        CalibrationBoundDisplay.from_estimator(
            clf, X_test, np.where(y_test == "no", "maybe", y_test)
        )


def test_from_bound_without_scores_spans_the_unit_interval():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=2000)
    y = rng.uniform(size=2000) < s
    est = NWCalibrationBound(b1=1.0, b2=1.0, random_state=0).fit(s, y)
    disp = CalibrationBoundDisplay.from_bound(est, n_grid=11)
    assert_allclose(disp.grid, np.linspace(0, 1, 11))
    assert disp.hist_ is None and disp.y_prob is None
    assert disp.estimator_ is est and disp.bound == est.bound_
    assert disp.band.shape == (11,)


def test_bound_instance_is_cloned_and_bound_params_applied(perturbed):
    s, y = perturbed
    bound = NWCalibrationBound(h=H, random_state=0)
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound=bound, bound_params={"confidence_level": 0.9}
    )
    assert not hasattr(bound, "bound_") and bound.confidence_level == 0.95
    assert disp.estimator_ is not bound and disp.estimator_.confidence_level == 0.9
    assert disp.confidence_level == 0.9 and "(90%)" in disp.line_.get_label()


def test_displays_share_axes_and_draw_one_diagonal(perturbed):
    s, y = perturbed
    _, ax = plt.subplots()
    first = CalibrationBoundDisplay.from_predictions(
        y, s, bound="tv", bound_params={"random_state": 0}, ax=ax, name="a"
    )
    second = CalibrationBoundDisplay.from_predictions(
        y,
        s,
        bound="nw",
        bound_params={"h": H, "random_state": 0},
        ax=ax,
        name="b",
        show_hist=False,
        show_band=False,
    )
    assert first.ax_ is second.ax_ is ax
    assert first.ref_line_ is not None and second.ref_line_ is None
    assert second.band_ is None and second.hist_ is None and second.band is not None
    texts = _legend_texts(ax)
    assert texts.count("Perfectly calibrated") == 1
    assert any(t.startswith("a: TV") for t in texts)
    assert any(t.startswith("b: NW") for t in texts)


def test_plot_writes_an_image(tmp_path, perturbed):
    s, y = perturbed
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound="nw", bound_params={"h": H, "random_state": 0}
    )
    path = tmp_path / "reliability.png"
    disp.figure_.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def test_unknown_bound_name(perturbed):
    s, y = perturbed
    with pytest.raises(
        ValueError,
        match=r"bound must be one of \['lipschitz', 'monotone', 'nw', 'tv'\]",
    ):
        CalibrationBoundDisplay.from_predictions(y, s, bound="ece")


def test_bound_that_is_not_a_bound_estimator(perturbed):
    s, y = perturbed
    with pytest.raises(
        TypeError, match="Expected a bound estimator .* got LogisticRegression"
    ):
        CalibrationBoundDisplay.from_predictions(y, s, bound=LogisticRegression())
    with pytest.raises(TypeError, match="bound_params must be a dict"):
        CalibrationBoundDisplay.from_predictions(y, s, bound="tv", bound_params=[1])


def test_nw_without_its_assumption_says_what_to_pass(perturbed):
    s, y = perturbed
    with pytest.raises(ValueError, match="give h"):
        CalibrationBoundDisplay.from_predictions(y, s, bound="nw")


def test_a_keyword_meant_for_the_bound_is_refused_before_any_fit(perturbed):
    # Unknown keywords go to matplotlib, which raised "Line2D.set() got an
    # unexpected keyword argument 'h'" only after the bound had been fitted.
    s, y = perturbed
    X = s[:, None]
    clf = SechPerturbedClassifier(LogisticRegression(), h=H).fit(X, y)
    fits = []
    original = NWCalibrationBound.fit
    with mock.patch.object(
        NWCalibrationBound,
        "fit",
        lambda self, *a, **k: fits.append(1) or original(self, *a, **k),
    ):
        with pytest.raises(
            TypeError,
            match=r"from_predictions chooses the bound with bound='monotone', "
            r"not method='monotone'",
        ):
            CalibrationBoundDisplay.from_predictions(y, s, method="monotone")
        with pytest.raises(
            TypeError,
            match=r"from_predictions got h=0.0625, a parameter of the bound "
            r"estimator, not of the plot: pass bound_params=\{'h': \.\.\.\}",
        ):
            CalibrationBoundDisplay.from_predictions(y, s, bound="nw", h=H)
        with pytest.raises(
            TypeError,
            match=r"from_estimator got random_state=0, .* "
            r"bound_params=\{'random_state': \.\.\.\}",
        ):
            CalibrationBoundDisplay.from_estimator(
                clf, X, y, bound="nw", random_state=0
            )
        # TV's own method is a bound parameter too.
        with pytest.raises(TypeError, match=r"bound_params=\{'method': \.\.\.\}"):
            CalibrationBoundDisplay.from_predictions(y, s, method="cells")
    assert fits == []
    # A matplotlib keyword still reaches the curve.
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, bound="nw", bound_params={"h": H}, color="tab:red"
    )
    assert disp.line_.get_color() == "tab:red"


@pytest.mark.parametrize("n_grid", [1, 2.5, True])
def test_bad_n_grid(perturbed, n_grid):
    s, y = perturbed
    with pytest.raises(ValueError, match="n_grid must be an int >= 2"):
        CalibrationBoundDisplay.from_predictions(y, s, n_grid=n_grid)


def test_unfitted_bound_in_from_bound():
    with pytest.raises(NotFittedError):
        CalibrationBoundDisplay.from_bound(TVCalibrationBound())


def test_classifier_without_predict_proba():
    X, y = make_classification(n_samples=200, random_state=0)
    svc = LinearSVC().fit(X, y)
    with pytest.raises(
        TypeError, match="with a predict_proba method; LinearSVC has none"
    ):
        CalibrationBoundDisplay.from_estimator(svc, X, y)


def test_multiclass_classifier_is_rejected():
    X, y = make_classification(
        n_samples=300, n_classes=3, n_informative=4, random_state=0
    )
    clf = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"binary classifier.*shape \(300, 3\)"):
        CalibrationBoundDisplay.from_estimator(clf, X, y)


def test_unfitted_classifier():
    X, y = make_classification(n_samples=200, random_state=0)
    with pytest.raises(NotFittedError):
        CalibrationBoundDisplay.from_estimator(LogisticRegression(), X, y)


def test_bad_scores_raise_and_inputs_are_not_mutated(perturbed):
    s, y = perturbed
    s_bad = s.copy()
    s_bad[5] = np.nan
    s_copy, y_copy = s_bad.copy(), y.copy()
    with pytest.raises(ValueError, match="NaN"):
        CalibrationBoundDisplay.from_predictions(y, s_bad)
    assert_array_equal(s_bad, s_copy)
    assert_array_equal(y, y_copy)
    s_out = s * 2
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        CalibrationBoundDisplay.from_predictions(y, s_out)


def test_valid_inputs_are_not_mutated(perturbed):
    s, y = perturbed
    s_copy, y_copy = s.copy(), y.copy()
    CalibrationBoundDisplay.from_predictions(y, s, bound="nw", bound_params={"h": H})
    assert_array_equal(s, s_copy)
    assert_array_equal(y, y_copy)


def test_from_estimator_refuses_an_h_that_is_not_the_classifiers():
    # The scorers' trap, in the display: a bound stating h = 2**-6 drawn for a
    # classifier perturbed with h = 2**-8 was fitted under the wrong h without a word.
    X, y = make_classification(n_samples=4000, random_state=0)
    clf = SechPerturbedClassifier(LogisticRegression(), h=2.0**-8, random_state=0)
    clf.fit(X[:2000], y[:2000])
    for bound, params in [(NWCalibrationBound(h=2.0**-6), None), ("nw", {"h": 0.5})]:
        with pytest.raises(
            ValueError,
            match=r"was given a SechPerturbedClassifier with h=0\.00390625: the "
            r"bound would assume another perturbation .* Leave h out \(the display "
            r"reads it from the classifier\)\.",
        ):
            CalibrationBoundDisplay.from_estimator(
                clf, X[2000:], y[2000:], bound=bound, bound_params=params
            )
    # Its own h, stated, is accepted and used.
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X[2000:], y[2000:], bound=NWCalibrationBound(h=2.0**-8, random_state=0)
    )
    assert disp.estimator_.h == 2.0**-8


def test_from_estimator_with_h_on_an_unperturbed_classifier_says_to_wrap_it():
    X, y = make_classification(n_samples=4000, random_state=0)
    clf = LogisticRegression().fit(X[:2000], y[:2000])
    with pytest.raises(
        ValueError,
        match=r"got LogisticRegression, whose probabilities were not perturbed.* "
        r"Wrap the model: SechPerturbedClassifier\(model, h=\.\.\.\).* pass b1 and b2 "
        r"to the bound \(bound_params\)\.",
    ):
        CalibrationBoundDisplay.from_estimator(
            clf, X[2000:], y[2000:], bound=NWCalibrationBound(h=2.0**-6)
        )
    # A smoothness assumption stated directly is the user's, as for the scorer.
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X[2000:], y[2000:], bound=NWCalibrationBound(b1=2.0, b2=4.0)
    )
    assert disp.estimator_.b1 == 2.0 and disp.estimator_.h is None


# --------------------------------------------------------------------------------------
# The monotone band (issue 37): drawn as the step functions L and U it is
# --------------------------------------------------------------------------------------


def _inside(collection, x, y):
    return any(path.contains_point((x, y)) for path in collection.get_paths())


@pytest.fixture
def logistic_like():
    from scipy.special import expit, logit

    rng = np.random.default_rng(5)
    s = rng.beta(2.0, 5.0, size=4000)
    y = (rng.uniform(size=s.size) < expit(1.3 * logit(s) + 0.2)).astype(int)
    return s, y


def test_monotone_band_is_drawn_as_the_estimators_band(logistic_like):
    s, y = logistic_like
    est = MonotoneCalibrationBound(confidence_level=0.9, random_state=0).fit(s, y)
    disp = CalibrationBoundDisplay.from_bound(est, s, name="LR")
    assert disp.method == "monotone" and disp.crossing_ is None
    assert_array_equal(disp.line_.get_ydata(), est.predict(disp.grid))
    # The band against predict_interval (L right-, U left-continuous steps): inside
    # just above L and just below U, outside beyond them; at gap midpoints, below
    # the smallest score and above the largest.
    u = est.band_.scores
    picks = np.r_[0, np.linspace(1, u.size - 2, 7).astype(int), u.size - 1]
    xs = np.r_[u[0] / 2, (u[picks[1:-1]] + u[picks[1:-1] + 1]) / 2, (u[-1] + 1) / 2]
    lower, upper = est.predict_interval(xs)
    assert lower[0] == 0.0 and upper[-1] == 1.0
    assert np.all(upper - lower > 0.02)
    eps = 1e-3
    for x, low, high in zip(xs, lower, upper):
        assert _inside(disp.band_, x, low + eps) and _inside(disp.band_, x, high - eps)
        assert not _inside(disp.band_, x, high + eps)
        assert low - eps < 0 or not _inside(disp.band_, x, low - eps)
    texts = _legend_texts(disp.ax_)
    curve = next(t for t in texts if t.startswith("LR: isotonic fit"))
    assert curve.endswith(
        f"certified CE $\\in$ [{est.lower_bound_:.3f}, {est.bound_:.3f}] (90%)"
    )
    band = next(t for t in texts if t.startswith("certified band"))
    assert band.startswith("certified band, 90%, all scores at once\n")
    assert not any("crosses" in t for t in texts)
    assert disp.hist_ is not None and disp.ref_line_ is not None


def test_monotone_from_estimator_by_name(logistic_like):
    X, y = make_classification(n_samples=4000, random_state=0)
    clf = LogisticRegression().fit(X[:2000], y[:2000])
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X[2000:], y[2000:], bound="monotone", bound_params={"random_state": 0}
    )
    est = disp.estimator_
    assert isinstance(est, MonotoneCalibrationBound)
    ref = MonotoneCalibrationBound(random_state=0).fit(
        clf.predict_proba(X[2000:])[:, 1], y[2000:]
    )
    assert (disp.lower_bound, disp.bound) == (ref.lower_bound_, ref.bound_)
    assert disp.band_ is not None
    assert "certified band, 95%, all scores at once" in "".join(_legend_texts(disp.ax_))


def test_a_crossing_band_is_drawn_where_it_crosses():
    # L(u) > U(u) at u = 0.5 and 0.8; on the gap (0.5, 0.8) the band is
    # [L(0.5), U(0.8)] = [0.6, 0.5]: crossed too. On (0.2, 0.5) it is [0.1, 0.4].
    band = (np.array([0.2, 0.5, 0.8]), np.array([0.1, 0.6, 0.7]), [0.3, 0.4, 0.5])
    grid = np.linspace(0.2, 0.8, 5)
    disp = CalibrationBoundDisplay(
        grid, grid, 0.2, lower_bound=0.1, certified_band=band, method="monotone"
    ).plot()
    region, points = disp.crossing_
    assert _inside(region, 0.65, 0.55) and not _inside(region, 0.65, 0.45)
    assert not _inside(region, 0.35, 0.3)
    assert not _inside(disp.band_, 0.65, 0.55)  # the band is empty there
    assert _inside(disp.band_, 0.35, 0.3) and not _inside(disp.band_, 0.35, 0.45)
    # The segments [U(u), L(u)] at 0.5 (the gaps on both sides leave part of it
    # uncovered) and 0.8, broken by NaN.
    x, y = points.get_xdata(), points.get_ydata()
    assert_array_equal(x[~np.isnan(x)], [0.5, 0.5, 0.8, 0.8])
    assert_array_equal(y[~np.isnan(y)], [0.4, 0.6, 0.5, 0.7])
    texts = _legend_texts(disp.ax_)
    assert any(t.startswith("band crosses ($L > U$)") for t in texts)
    assert any(
        t.endswith("if E[y|s] were non-decreasing, which the data reject")
        for t in texts
    )
    assert not any("certified CE" in t for t in texts)


def test_oscillating_calibration_shows_the_crossing():
    from skcalbound import MonotoneCalibrationBound, MonotonicityWarning
    from skcalbound.datasets import make_oscillating

    data = make_oscillating(10**5, random_state=0)
    with pytest.warns(MonotonicityWarning):
        est = MonotoneCalibrationBound(random_state=0).fit(data.scores, data.labels)
    disp = CalibrationBoundDisplay.from_bound(est, data.scores)
    region, points = disp.crossing_
    k = int(np.argmax(est.band_.lower - est.band_.upper))
    x = est.band_.scores[k]
    mid = (est.band_.lower[k] + est.band_.upper[k]) / 2
    # At the score that crosses most, the drawing is red (a gap next to it, or a
    # segment at it), not the band.
    assert est.band_.lower[k] > est.band_.upper[k] + 0.02
    assert (
        _inside(region, x - 1e-9, mid)
        or _inside(region, x + 1e-9, mid)
        or x in points.get_xdata()
    )
    assert not _inside(disp.band_, x - 1e-9, mid)
    assert not _inside(disp.band_, x + 1e-9, mid)
    assert any("crosses" in t for t in _legend_texts(disp.ax_))


def test_the_display_draws_what_the_fitted_bound_answers(perturbed):
    # Nothing is switched on the bound's name: a bound whose class answers otherwise
    # (its curve and band, its style) is drawn otherwise.
    import dataclasses

    from skcalbound._curve import CurveStyle, DisplayCurve

    class Wide(LipschitzBucketBound):
        def _display_curve(self, low, high, n_grid=None):
            curve = super()._display_curve(low, high, n_grid)
            assert isinstance(curve, DisplayCurve)
            return dataclasses.replace(curve, band=np.full(curve.grid.shape, 0.05))

        @classmethod
        def _display_style(cls, guarantee, estimator=None):
            assert isinstance(estimator, Wide)
            return CurveStyle("wide: ", drawstyle="steps-post", band_note="wide band")

    s, y = perturbed
    est = Wide(h=H, random_state=0).fit(s, y)
    disp = CalibrationBoundDisplay.from_bound(est, s, n_grid=50)
    assert_array_equal(disp.grid, np.linspace(s.min(), s.max(), 50))
    assert_array_equal(disp.surrogate, est.predict(disp.grid))
    assert_array_equal(disp.band, np.full(50, 0.05))
    assert disp.line_.get_label().startswith("wide: certified CE $\\in$ [")
    assert disp.line_.get_drawstyle() == "steps-post"
    assert "wide band" in _legend_texts(disp.ax_)


@pytest.mark.parametrize(
    "bound, params",
    [
        (TVCalibrationBound, {}),
        (NWCalibrationBound, {"h": H}),
        (LipschitzBucketBound, {"h": H}),
        (MonotoneCalibrationBound, {}),
    ],
)
def test_each_bound_answers_its_curve_at_the_grid_it_is_given(perturbed, bound, params):
    s, y = perturbed
    est = bound(random_state=0, **params).fit(s, y)
    curve = est._display_curve(0.1, 0.9, 17)
    assert_array_equal(curve.grid, np.linspace(0.1, 0.9, 17))
    assert_array_equal(curve.values, est.predict(curve.grid))
    smooth = bound in (NWCalibrationBound, LipschitzBucketBound)
    assert (curve.band is not None) is smooth
    if smooth:
        assert curve.band.shape == (17,) and np.all(
            (curve.band > 0) & (curve.band <= 1)
        )
    assert (curve.certified_band is not None) is (bound is MonotoneCalibrationBound)
