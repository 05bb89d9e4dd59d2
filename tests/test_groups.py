"""``bounds_by_group``: per-segment intervals at the union-bound level.

Each row must equal the estimator fitted on that segment alone at
``1 - (1 - confidence_level) / G``; too-small and single-class segments are reported,
not dropped; and, by Monte Carlo on segments with a known calibration error, the rate
at which *any* interval misses stays within the binomial tolerance of
``1 - confidence_level``.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from _synthetic import binomial_tolerance
from numpy.testing import assert_allclose

from skcalbound import (
    BelowChanceWarning,
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    MonotonicityWarning,
    NWCalibrationBound,
    TVCalibrationBound,
    VacuousBoundWarning,
    binned_ece,
    perturb_scores,
)
from skcalbound._groups import bounds_by_group
from skcalbound.datasets import make_calibrated, make_overconfident, make_parabola

H = 2.0**-4


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 4000
    groups = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    s = perturb_scores(rng.uniform(0.1, 0.9, size=n), H, random_state=0)
    eta = np.where(groups == "c", 0.5, s)
    y = (rng.uniform(size=n) < eta).astype(int)
    return y, s, groups


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VacuousBoundWarning)
        return bounds_by_group(*args, **kwargs)


@pytest.mark.parametrize(
    "method, cls, params",
    [
        ("nw", NWCalibrationBound, {"h": H, "cv": 4}),
        ("tv", TVCalibrationBound, {}),  # the cell bound: no folds
        ("lipschitz", LipschitzBucketBound, {"h": H, "cv": 4}),
    ],
)
@pytest.mark.parametrize("include_overall", [False, True])
def test_rows_equal_segment_fits_at_adjusted_level(
    data, method, cls, params, include_overall
):
    y, s, groups = data
    table = _quiet(
        y,
        s,
        groups,
        method=method,
        confidence_level=0.9,
        random_state=0,
        include_overall=include_overall,
        **params,
    )
    G = 3 + include_overall
    level = 1 - 0.1 / G
    assert table.attrs["n_certificates"] == G
    assert_allclose(table.attrs["per_certificate_level"], level, rtol=1e-15)
    assert table.attrs["confidence_level"] == 0.9
    assert "simultaneously" in table.attrs["note"]
    assert len(table) == G
    for _, row in table.iterrows():
        mask = np.ones(len(y), bool) if row.group == "(all)" else groups == row.group
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VacuousBoundWarning)
            est = cls(**params, confidence_level=level, random_state=0).fit(
                s[mask], y[mask]
            )
        assert row.n == mask.sum() and row.n_positive == y[mask].sum()
        assert row.upper_bound == est.bound_
        assert row.lower_bound == est.lower_bound_
        assert row.estimate == est.estimate_
        assert row.binned_ece == binned_ece(y[mask], s[mask], n_bins=15)
        assert row.confidence_level == level
        assert row.status == "certified"
        assert row.vacuous == (est.bound_ > 0.5)
    if include_overall:
        assert table.group.iloc[-1] == "(all)"
    body = table[table.group != "(all)"]
    assert list(body.upper_bound) == sorted(body.upper_bound, reverse=True)
    assert body.group.iloc[0] == "c"  # the miscalibrated segment is worst


@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize("by_instance", [False, True])
def test_monotone_rows_equal_segment_fits_at_adjusted_level(data, cv, by_instance):
    # method="monotone" (one band per segment by default; cross-fitted with cv), or
    # an unfitted MonotoneCalibrationBound whose parameters are used.
    y, s, groups = data
    if by_instance:
        method, params = MonotoneCalibrationBound(cv=cv, random_state=0), {}
    else:
        method, params = "monotone", {"cv": cv, "random_state": 0}
    table = _quiet(
        y,
        s,
        groups,
        method=method,
        confidence_level=0.9,
        include_overall=True,
        **params,
    )
    level = 1 - 0.1 / 4
    assert table.attrs["method"] == "monotone"
    assert table.attrs["guarantee"] == "high_probability"
    assert not table.attrs["in_expectation_only"]
    assert table.attrs["n_certificates"] == 4
    assert_allclose(table.attrs["per_certificate_level"], level, rtol=1e-15)
    for _, row in table.iterrows():
        mask = np.ones(len(y), bool) if row.group == "(all)" else groups == row.group
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VacuousBoundWarning)
            est = MonotoneCalibrationBound(
                cv=cv, confidence_level=level, random_state=0
            ).fit(s[mask], y[mask])
        assert row.upper_bound == est.bound_
        assert row.lower_bound == est.lower_bound_
        assert row.estimate == est.estimate_
        assert row.status == "certified"
    body = table[table.group != "(all)"]
    assert body.group.iloc[0] == "c"  # the miscalibrated segment (CE 0.2) is worst


def test_monotone_segments_without_folds_need_two_samples(data):
    # cv=None: no folds to fill; a segment of one sample gets no certificate (a rule
    # on its size only), one of two (both classes) gets one.
    y, s, groups = data
    groups = groups.astype(object).copy()
    y = y.copy()
    groups[:1] = "one"
    groups[1:3] = "two"
    y[1:3] = [0, 1]
    table = _quiet(y, s, groups, method="monotone", random_state=0)
    by = table.set_index("group")
    assert by.loc["one", "status"] == "too few samples: 1"
    assert by.loc["two", "status"] == "certified"
    assert table.attrs["n_certificates"] == 4
    two = MonotoneCalibrationBound(confidence_level=1 - 0.05 / 4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VacuousBoundWarning)
        assert by.loc["two", "upper_bound"] == two.fit(s[1:3], y[1:3]).bound_


def test_small_and_single_class_segments_are_reported(data):
    y, s, groups = data
    groups = groups.astype(object).copy()
    y = y.copy()
    groups[:4] = "tiny"  # 4 samples: fewer than cv=5 folds
    groups[4:6] = "two"
    single = np.flatnonzero(groups == "b")[:50]
    groups[single] = "ones"
    y[single] = 1
    table = _quiet(y, s, groups, h=H, random_state=0)
    by = table.set_index("group")
    assert by.loc["tiny", "status"] == "too few samples for cv=5: 4"
    assert by.loc["two", "status"] == "too few samples for cv=5: 2"
    assert by.loc["ones", "status"] == "single class (all labels 1)"
    for g in ("tiny", "two", "ones"):
        assert np.isnan(by.loc[g, ["lower_bound", "upper_bound", "estimate"]]).all()
    assert np.isnan(by.loc["tiny", "confidence_level"])
    # Counted in G: the single-class segment (label-dependent); not: the small ones.
    assert table.attrs["n_certificates"] == 4
    assert by.loc["ones", "confidence_level"] == 1 - 0.05 / 4
    # The binned ECE is defined for one class (it was NaN): by hand, the mean over
    # the bins of the bin's count times |mean score - 1|, over n.
    ones = s[groups == "ones"]
    edges = np.linspace(0.0, 1.0, 16)
    bins = np.clip(np.searchsorted(edges[1:-1], ones, side="right"), 0, 14)
    by_hand = (
        sum(
            abs(ones[bins == b].mean() - 1.0) * np.sum(bins == b)
            for b in np.unique(bins)
        )
        / ones.size
    )
    assert by.loc["ones", "binned_ece"] == pytest.approx(by_hand, rel=1e-12)
    assert np.isfinite(by.loc["tiny", "binned_ece"])
    assert by.loc["tiny", "n"] == 4
    # Rows without a bound come after the certified ones, in group order.
    assert list(table.group[-3:]) == ["ones", "tiny", "two"]
    assert (table.status.iloc[:-3] == "certified").all()


def test_cv_rule_uses_fold_sizes():
    # cv=2 with 3 samples leaves a fold with 1 training point: too few.
    rng = np.random.default_rng(1)
    s = rng.uniform(size=400)
    y = (rng.uniform(size=400) < s).astype(int)
    groups = np.r_[np.zeros(397, int), [1, 1, 1]]
    y[-3:] = [0, 1, 0]
    denoise = TVCalibrationBound(method="denoise", cv=2)  # the cross-fitted TV bound
    table = _quiet(y, s, groups, method=denoise, random_state=0)
    assert table.group.tolist() == [0, 1]
    assert table.status.tolist() == ["certified", "too few samples for cv=2: 3"]
    assert table.attrs["n_certificates"] == 1
    assert table.confidence_level.iloc[0] == 0.95


def test_bounds_without_folds_need_two_samples_per_segment():
    # TV's cell bound and the monotone band are computed once on all rows: the cv
    # rule does not apply to them (it named a cv=5 that the cell bound never uses).
    rng = np.random.default_rng(1)
    s = rng.uniform(size=400)
    y = (rng.uniform(size=400) < s).astype(int)
    groups = np.r_[np.zeros(396, int), [1, 1, 1, 1], [2]]
    s, y = np.r_[s, 0.5], np.r_[y[:-4], [0, 1, 0, 1], 1]
    for method in ("tv", "monotone"):
        table = _quiet(y, s, groups, method=method, random_state=0).set_index("group")
        assert table.attrs["n_certificates"] == 2
        assert table.loc[1, "status"] == "certified"
        assert table.loc[2, "status"] == "too few samples: 1"
    folded = _quiet(y, s, groups, method=TVCalibrationBound(method="denoise"))
    assert folded.set_index("group").loc[1, "status"] == "too few samples for cv=5: 4"
    assert folded.attrs["n_certificates"] == 1


def test_pos_label_predict_proba_and_pandas_groups(data):
    y, s, groups = data
    ref = _quiet(y, s, groups, h=H, random_state=0)
    text = np.where(y == 1, "churn", "stay")
    proba = np.column_stack([s, 1 - s])  # "churn" sorts first: column 0
    series = pd.Series(groups, index=np.arange(len(y))[::-1])  # index is ignored
    for g in (series, pd.Categorical(groups), list(groups)):
        out = _quiet(text, proba, g, pos_label="churn", h=H, random_state=0)
        pd.testing.assert_frame_equal(out, ref)
    ints = np.searchsorted(["a", "b", "c"], groups)
    out = _quiet(y, s, ints, h=H, random_state=0)
    assert sorted(out.group) == [0, 1, 2]
    assert_allclose(out.upper_bound, ref.upper_bound, rtol=0)


def test_inputs_not_mutated(data):
    y, s, groups = data
    series = pd.Series(groups)
    copies = y.copy(), s.copy(), series.copy()
    _quiet(y, s, series, h=H, random_state=0)
    np.testing.assert_array_equal(y, copies[0])
    np.testing.assert_array_equal(s, copies[1])
    pd.testing.assert_series_equal(series, copies[2])


def test_vacuous_bounds_collected_in_one_warning():
    rng = np.random.default_rng(2)
    s = rng.uniform(size=600)
    y = (rng.uniform(size=600) < s).astype(int)
    groups = np.repeat(["x", "y", "z"], 200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = bounds_by_group(y, s, groups, method="tv", random_state=0)
    vacuous = [w for w in caught if w.category is VacuousBoundWarning]
    assert len(vacuous) == 1
    assert "3 segment(s) (x, y, z)" in str(vacuous[0].message)
    assert vacuous[0].filename == __file__
    assert table.vacuous.all()


def test_errors(data):
    y, s, groups = data
    with pytest.raises(ValueError, match="groups has 3 entries but y_true and y_prob"):
        bounds_by_group(y, s, ["a", "b", "c"])
    with pytest.raises(ValueError, match="groups must be one-dimensional"):
        bounds_by_group(y, s, np.c_[groups, groups])
    missing = pd.Series(groups, dtype=object)
    missing[[3, 10]] = None
    with pytest.raises(ValueError, match=r"2 missing value\(s\).*position 3.*fillna"):
        bounds_by_group(y, s, missing)
    assert missing.isna().sum() == 2  # not filled in place
    with pytest.raises(ValueError, match="names the whole-population row"):
        bounds_by_group(
            y, s, np.where(groups == "a", "(all)", groups), include_overall=True, h=H
        )
    with pytest.raises(TypeError, match=r"got parameters \['V'\] that NWCalibrat"):
        bounds_by_group(y, s, groups, V=1.0)
    with pytest.raises(ValueError, match="cv to be an int or a scikit-learn splitter"):
        bounds_by_group(y, s, groups, method="tv", cv=[(np.arange(5), np.arange(5))])
    with pytest.raises(ValueError, match="'method' parameter of bounds_by_group"):
        bounds_by_group(y, s, groups, method="ece")
    with pytest.raises(ValueError, match="'confidence_level' parameter"):
        bounds_by_group(y, s, groups, confidence_level=1.0)
    with pytest.raises(ValueError, match="takes the labels first"):
        bounds_by_group(s, y, groups)


def test_splitter_cv(data):
    from sklearn.model_selection import KFold

    y, s, groups = data
    cv = KFold(3, shuffle=True, random_state=0)
    a = _quiet(y, s, groups, method=TVCalibrationBound(method="denoise"), cv=cv)
    est = TVCalibrationBound(
        method="denoise", cv=cv, confidence_level=1 - 0.05 / 3
    ).fit(s[groups == "a"], y[groups == "a"])
    assert a.set_index("group").loc["a", "upper_bound"] == est.bound_


# Four segments of different sizes and known calibration errors (sech-perturbed, so
# NW's assumption holds with the constants of h).
_SEGMENTS = [
    (make_calibrated, 400),
    (make_overconfident, 800),
    (make_parabola, 1500),
    (make_calibrated, 3000),
]


def _any_miss_count(repetitions, confidence_level, seed):
    # The truths are computed once (numerical integration); fresh samples per run.
    problems = [make(10, h=H, random_state=0).problem for make, _ in _SEGMENTS]
    sizes = [n for _, n in _SEGMENTS]
    names = np.repeat(np.arange(len(_SEGMENTS)), sizes)
    rng = np.random.default_rng(seed)
    misses = 0
    for r in range(repetitions):
        parts = [p.sample(n, rng) for p, n in zip(problems, sizes)]
        s = np.concatenate([scores for scores, _ in parts])
        y = np.concatenate([labels for _, labels in parts])
        table = _quiet(
            y, s, names, h=H, confidence_level=confidence_level, random_state=r
        )
        truth = np.array([problems[g].true_ce for g in table.group])
        assert table.attrs["n_certificates"] == len(_SEGMENTS)
        miss = (table.upper_bound < truth) | (table.lower_bound > truth)
        misses += bool(miss.any())
    return misses


@pytest.mark.parametrize("repetitions", [12, pytest.param(60, marks=pytest.mark.slow)])
def test_simultaneous_coverage_small(repetitions):
    level = 0.8
    assert _any_miss_count(repetitions, level, 0) <= binomial_tolerance(
        repetitions, level
    )


# R = 1000: a study-size cell (``make test-study``); ``make test-slow`` runs R = 60
# through test_simultaneous_coverage_small.
@pytest.mark.slow
@pytest.mark.study
def test_simultaneous_coverage():
    repetitions, level = 1000, 0.8
    assert _any_miss_count(repetitions, level, 7) <= binomial_tolerance(
        repetitions, level
    )


def _below_chance_warnings(y, s, groups):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = bounds_by_group(
            y, s, groups, method="tv", include_overall=True, random_state=0
        )
    below = [w for w in caught if issubclass(w.category, BelowChanceWarning)]
    assert all(w.filename == __file__ for w in below)
    return table, [str(w.message) for w in below]


@pytest.fixture(scope="module")
def four_segments():
    rng = np.random.default_rng(0)
    n = 20_000
    s = rng.uniform(size=n)
    return s, (rng.uniform(size=n) < s).astype(int), rng.integers(4, size=n)


def test_ranking_below_chance_is_said_once_about_pos_label_or_the_segments(
    four_segments,
):
    """Every row flipped: one warning, the whole population's, about pos_label (not
    one per segment, none naming it). Some segments flipped: one warning naming
    them, which says pos_label is not the cause. None: no warning."""
    s, y, g = four_segments
    _, none = _below_chance_warnings(y, s, g)
    assert none == []

    _, everywhere = _below_chance_warnings(y, 1 - s, g)
    assert len(everywhere) == 1
    assert everywhere[0].startswith(
        "The scores rank the positive class below chance: their AUROC against the "
        "labels is 0.16"
    )
    assert "(10080 positive and 9920 negative samples)" in everywhere[0]
    assert "check pos_label" in everywhere[0]

    table, one = _below_chance_warnings(y, np.where(g == 2, 1 - s, s), g)
    assert len(one) == 1
    auroc = one[0].split("its AUROC against the labels is ")[1][:5]
    assert one[0].startswith("The scores of segment 2 rank the positive class below")
    assert 0.1 < float(auroc) < 0.2
    assert "so pos_label is not the cause, but a mix-up confined to it" in one[0]
    assert table.loc[table["group"] == 2, "estimate"].item() > 0.4  # it shows

    _, two = _below_chance_warnings(y, np.where(g % 2 == 1, 1 - s, s), g)
    assert len(two) == 1
    assert two[0].startswith("The scores of segments 1, 3 rank the positive class")
    assert "their AUROCs against the labels are 0.1" in two[0]
    assert "confined to them" in two[0]


def test_a_crossing_band_is_a_status_sorted_first_and_one_warning(four_segments):
    """Segment 2's calibration function decreases: its band crosses, so its interval
    rests on a rejected assumption. Its status says so (not 'certified'), it comes
    first whatever its upper bound, and one MonotonicityWarning names it."""
    s, y, g = four_segments
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = bounds_by_group(
            y, np.where(g == 2, 1 - s, s), g, method="monotone", include_overall=True
        )
    crossed = [w for w in caught if issubclass(w.category, MonotonicityWarning)]
    assert len(crossed) == 1 and crossed[0].filename == __file__
    assert str(crossed[0].message).startswith(
        "The calibration band crosses (L(s) > U(s) at some score) for 1 segment(s) "
        "(2): the data reject a non-decreasing calibration function there"
    )
    assert table.group.tolist()[0] == 2
    first = table.iloc[0]
    assert first.status == "assumption rejected (the band crosses)"
    assert first.upper_bound < table.upper_bound.iloc[1]  # first all the same
    assert first.lower_bound > first.upper_bound  # the crossing shows in the interval
    assert (table.status.iloc[1:] == "certified").all()


def test_an_empty_interval_is_a_status_sorted_first_and_one_warning():
    """Segment 'a' (eta(s) = s on [0.05, 0.95], 60,000 rows) rejects L = 0.1: its
    interval is empty. It said 'certified' with its lower bound above its upper
    bound, and each fit's warning named no segment."""
    rng = np.random.default_rng(3)
    s = np.concatenate([rng.uniform(0.05, 0.95, 60_000), rng.uniform(0.4, 0.6, 4000)])
    eta = np.concatenate([s[:60_000], np.full(4000, 0.5)])
    y = rng.uniform(size=s.size) < eta
    g = np.repeat(["a", "b"], [60_000, 4000])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = bounds_by_group(y, s, g, method="lipschitz", L=0.1, random_state=0)
    empty = [w for w in caught if "interval is empty" in str(w.message)]
    assert len(empty) == 1 and empty[0].filename == __file__
    assert str(empty[0].message).startswith(
        "The interval is empty (lower bound above upper bound) for 1 segment(s) (a)"
    )
    first = table.iloc[0]
    assert first.group == "a" and first.lower_bound > first.upper_bound
    assert first.status == "assumption rejected (empty interval)"
    assert table.status.tolist()[1:] == ["certified"]
