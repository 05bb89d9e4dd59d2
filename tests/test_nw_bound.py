"""NWCalibrationBound: one fold recomputed by hand, parameters, splitters, subsampling.

The hand checks rebuild the smoother's weights with a plain loop over the training
points (the binned tempered Epanechnikov kernel, nearest-neighbour fallback) and every
term from them: of Proposition 2 as published (``guarantee="paper"``) and of the
high-probability certificate (SPEC sections 10 and 12: Lemma 6 expanded at the query,
``C2 = sum_i c_i**2``, five terms at ``delta / 3``); the estimator must agree to 1e-12
relative. Further down: a larger hand-computed fold (gaps, ties, fallbacks), the
derivative bounds given by ``h``, the two guarantees compared, the bandwidth rules and
the numerical guards.
"""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from _bounds import (
    SMOOTHING_TERMS,
    assert_same_fit,
    exactness_split,
    five_terms,
    scores_labels,
    shuffled_parts,
    spec_plugin_bandwidth,
)
from _synthetic import (
    SmoothSine,
    binomial_tolerance,
    checked_quad,
    coverage,
    perturbed_problems,
    slow_except,
)
from numpy.testing import assert_allclose
from sklearn.model_selection import KFold, ShuffleSplit

from skcalbound import (
    BelowChanceWarning,
    NWCalibrationBound,
    TVCalibrationBound,
    nw_bound,
)
from skcalbound._sech import sech_derivative_bounds
from skcalbound._surrogates.nw._search import plugin_bandwidth as nw_plugin_bandwidth
from skcalbound._terms import nw_bound_terms

# The terms_ keys of each guarantee, in the order they add up.
TERM_NAMES = SMOOTHING_TERMS
GUARANTEES = list(TERM_NAMES)


# ----------------------------------------------------------------------------------
# A slow, obviously correct reference
# ----------------------------------------------------------------------------------
def _bin(s, G):
    return min(math.floor(s * G), G - 1)


def _weights(train_s, query, bandwidth, tempering, G):
    """Normalised weights of the training points for one query, and the fallback
    flag."""
    q = _bin(query, G)
    w = []
    for s in train_s:
        k = q - _bin(s, G)
        if abs(k) < G * bandwidth:
            w.append(max(1.0 - (k / (G * bandwidth)) ** 2, 0.0) ** tempering)
        else:
            w.append(0.0)
    fallback = sum(w) == 0.0
    if fallback:
        # Equal weights on the nearest training score(s), both sides if equidistant.
        dist = [abs(query - s) for s in train_s]
        w = [1.0 if d == min(dist) else 0.0 for d in dist]
    total = sum(w)
    return [x / total for x in w], fallback


def _reference(
    train_s, train_y, queries, bandwidth, tempering, G, b1, b2, guarantee="paper"
):
    """``eta_hat``, unclipped ``g_T``, fallback flags and the weight rows at each query.

    ``g_T`` is Lemma 6 as published (``b1 sum w |d|``) for ``"paper"``, with the sum
    over the training points in the query's own cell (they share one weight ``w_0``)
    bounded by Cauchy-Schwarz, ``w_0 sqrt(N_c sum d**2)``; and expanded at the query
    (``b1 |sum w d|``, SPEC section 12) for ``"high_probability"``; except at a
    fallback query, where the library keeps ``b1 d`` (equal to the signed form unless
    the nearest scores lie on both sides).
    """
    eta, g, fallback, rows = [], [], [], []
    for query in queries:
        w, fb = _weights(train_s, query, bandwidth, tempering, G)
        d = [query - s for s in train_s]
        eta.append(sum(wi * yi for wi, yi in zip(w, train_y)))
        if fb:
            first = sum(wi * abs(di) for wi, di in zip(w, d))
        elif guarantee == "paper":
            own = [_bin(s, G) == _bin(query, G) for s in train_s]
            first = sum(wi * abs(di) for wi, di, o in zip(w, d, own) if not o)
            inside = [(wi, di) for wi, di, o in zip(w, d, own) if o]
            if inside:
                first += inside[0][0] * math.sqrt(
                    len(inside) * sum(di * di for _, di in inside)
                )
        else:
            first = abs(sum(wi * di for wi, di in zip(w, d)))
        g.append(
            b1 * first
            + 0.5 * b2 * sum(wi * di * di for wi, di in zip(w, d))
            + 0.5 * math.sqrt(sum(wi * wi for wi in w))
        )
        fallback.append(fb)
        rows.append(w)
    return np.array(eta), np.array(g), np.array(fallback), np.array(rows)


def _bernstein(m, delta, variance):
    return (
        math.sqrt(2 * variance * math.log(3 / delta) / m) + 3 * math.log(3 / delta) / m
    )


def _expected_terms(eta, g, queries, delta, rows=None, guarantee="paper"):
    """Proposition 2 with delta split in two, R = 1, population variances (``"paper"``);
    the five terms of SPEC section 10 with delta split in three, from the weight rows
    (``"high_probability"``)."""
    r = np.abs(eta - np.asarray(queries))
    g = np.minimum(g, 1.0)
    m = r.shape[0]
    var_r = float(np.sum((r - r.mean()) ** 2)) / m
    var_g = float(np.sum((g - g.mean()) ** 2)) / m
    if guarantee == "paper":
        return {
            "validation_mean": float(r.mean()),
            "smoothing_mean": float(g.mean()),
            "bernstein_residual": _bernstein(m, delta / 2, var_r),
            "bernstein_smoothing": _bernstein(m, delta / 2, var_g),
        }
    d = delta / 3
    c = rows.mean(axis=0)  # c_i: the mean weight of training point i
    concentration = math.sqrt(math.log(1 / d) * float(np.sum(c * c)) / 2)
    a = float(g.mean()) + concentration
    u = math.log(1 / d) / (2 * m)
    return {
        "validation_mean": float(r.mean()),
        "bernstein_residual": _bernstein(m, d, var_r),
        "smoothing_mean": float(g.mean()),
        "label_concentration": concentration,
        "population_transfer": (math.sqrt(u) + math.sqrt(u + a)) ** 2 - a,
    }


def _tiny_problem():
    """60 points on a dyadic grid with ties, two clusters and a gap.

    Training: 38 points in [0, 1/4] and [3/4, 1] (ties at 0, 1/8, 1/4, 7/8 and 1; the
    block at 1/4 holds a 0 and a 1). Validation: 17 points, among them 1/2 (midway
    between the blocks at 1/4 and 3/4: fallback to both), 3/8 and 0.6 (fallback to one
    side), 0.7 (just outside the kernel of the block at 3/4), ties with training
    scores, and both ends of [0, 1]. Five more points are neither training nor
    validation in the non-partition split.
    """
    rng = np.random.default_rng(11)
    left = np.concatenate([[0, 0, 16, 16, 32, 32], rng.integers(1, 32, size=14)]) / 128
    right = (
        np.concatenate([[96, 112, 112, 128, 128], rng.integers(97, 128, size=13)]) / 128
    )
    train_s = np.concatenate([left, right])
    train_y = (rng.uniform(size=train_s.size) < 0.2 + 0.6 * train_s).astype(float)
    train_y[[4, 5]] = [0.0, 1.0]  # the block at 1/4
    val_s = np.array(
        [
            0.5,
            0.375,
            0.6,
            0.7,
            0.0,
            1.0,
            0.125,
            0.875,
            0.2501,
            0.03,
            0.11,
            0.19,
            0.2,
            0.8,
            0.91,
            0.97,
            0.74,
        ]
    )
    extra_s = np.array([0.05, 0.1, 0.2, 0.8, 0.99])
    scores = np.concatenate([train_s, val_s, extra_s])
    labels = np.concatenate([train_y, np.ones(val_s.size), np.zeros(extra_s.size)])
    assert scores.size == 60 and np.unique(scores).size < 60
    return shuffled_parts(rng, scores, labels, train_s.size, val_s.size)


@pytest.mark.parametrize(
    "bandwidth",
    # 0.6: the kernel is wider than the whole grid (once a crash, now a test).
    [0.05, 0.3, 0.6],
)
@pytest.mark.parametrize("path", ["partition", "subset"])
@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_one_fold_by_hand(guarantee, path, bandwidth):
    X, y, train, val, extra = _tiny_problem()
    if path == "partition":  # training = the complement of the validation part
        train = np.sort(np.concatenate([train, extra]))
    confidence_level, b1, b2, tempering = 0.9, 3.0, 4.0, 1.2
    est = NWCalibrationBound(
        b1=b1,
        b2=b2,
        bandwidth=bandwidth,
        tempering=tempering,
        confidence_level=confidence_level,
        guarantee=guarantee,
        cv=[(train, val)],
        noise="worst_case",  # section 10 by hand
    ).fit(X, y)
    row = est.fold_results_.iloc[0]
    G = int(row["n_bins"])
    # A power of two, fine enough: 64 cells per bandwidth (the expanded Lemma 6's signed
    # first moment sees the query's offset in its cell; the published one's own-cell
    # term is bounded by Cauchy-Schwarz).
    cells = 64
    assert G & (G - 1) == 0 and G * bandwidth >= cells and G * bandwidth < 2 * cells

    eta, g, fallback, rows = _reference(
        X[train], y[train], X[val], bandwidth, tempering, G, b1, b2, guarantee
    )
    delta = 1 - confidence_level  # one split: delta_fold = delta
    expected = _expected_terms(eta, g, X[val], delta, rows, guarantee)
    assert list(est.terms_) == TERM_NAMES[guarantee]
    for name in TERM_NAMES[guarantee]:
        assert_allclose(
            est.terms_[name], expected[name], rtol=1e-12, atol=0, err_msg=name
        )
        assert_allclose(row[name], expected[name], rtol=1e-12, atol=0, err_msg=name)
    total = sum(expected.values())
    assert_allclose(row["bound"], total, rtol=1e-12)
    lower = 2 * expected["validation_mean"] - total
    assert_allclose(row["lower_bound"], lower, rtol=1e-12)
    assert_allclose(est.bound_, min(total, 1.0), rtol=1e-12)
    assert est.lower_bound_ == max(row["lower_bound"], 0.0)
    assert_allclose(row["estimate"], expected["validation_mean"], rtol=1e-12)
    assert row["n_train"] == train.size
    assert row["n_validation"] == val.size
    assert_allclose(row["delta"], delta, rtol=1e-15)
    assert row["bandwidth"] == bandwidth
    assert row["n_fallback"] == np.count_nonzero(fallback)
    if guarantee == "high_probability":
        c = rows.mean(axis=0)
        assert_allclose(row["sum_c_squared"], np.sum(c * c), rtol=1e-12)
    if bandwidth == 0.05:
        # 1/2, 3/8, 0.6 and 0.7 have no training score within the kernel; the
        # midpoint 1/2 averages the blocks at 1/4 (labels 0, 1) and 3/4 (label 1).
        assert row["n_fallback"] == 4
        w, _ = _weights(X[train], 0.5, bandwidth, tempering, G)
        near = [s for s, wi in zip(X[train], w) if wi > 0]
        assert sorted(near) == [0.25, 0.25, 0.75]
        assert_allclose(eta[list(X[val]).index(0.5)], 2 / 3, rtol=1e-15)
        assert np.any(g > 1.0)  # the clip at 1 is exercised


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_refit_predict_and_score_by_hand(guarantee):
    """``predict`` is the smoother on all fitted data; ``score`` its fixed-split
    bound."""
    X, y, train, val, _ = _tiny_problem()
    confidence_level, b1, b2, bandwidth, tempering = 0.9, 0.5, 1.0, 0.05, 1.2
    est = NWCalibrationBound(
        b1=b1,
        b2=b2,
        bandwidth=bandwidth,
        tempering=tempering,
        confidence_level=confidence_level,
        guarantee=guarantee,
        cv=[(train, val)],
        noise="worst_case",  # section 10 by hand
    ).fit(X, y)
    G = int(
        est.fold_results_["n_bins"].iloc[0]
    )  # the refit uses the same float bandwidth
    assert est.bandwidth_ == bandwidth
    rng = np.random.default_rng(5)
    # Held-out scores mostly in the clusters, a few in the gap (fallback).
    queries = np.concatenate(
        [
            rng.uniform(0, 0.25, 190),
            rng.uniform(0.75, 1.0, 190),
            rng.uniform(0.25, 0.75, 20),
        ]
    )
    eta, g, fallback, rows = _reference(
        X, y, queries, bandwidth, tempering, G, b1, b2, guarantee
    )
    assert fallback.any() and not fallback.all()
    assert_allclose(est.predict(queries), eta, rtol=1e-12, atol=1e-15)
    held_out_y = (rng.uniform(size=queries.size) < 0.5).astype(int)
    # The full delta.
    expected = _expected_terms(eta, g, queries, 1 - confidence_level, rows, guarantee)
    total = sum(expected.values())
    assert total < 1.0  # so the check is not only the clip
    assert_allclose(est.score(queries, held_out_y), -total, rtol=1e-12)


# ----------------------------------------------------------------------------------
# Assumption constants and bandwidths
# ----------------------------------------------------------------------------------
def _uniform_sample(n, seed=0, power=2.0):
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    return s, (rng.uniform(size=n) < s**power).astype(int)


@pytest.mark.parametrize("h", [2.0**-4, 2.0**-6, 0.3])
@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_b1_b2_follow_from_h(guarantee, h):
    s, y = _uniform_sample(3000)
    est = NWCalibrationBound(h, guarantee=guarantee, random_state=0).fit(s, y)
    # Section 10 reads h only through (b1, b2); SPEC 13 also has its relative branch.
    wc = NWCalibrationBound(
        h, noise="worst_case", guarantee=guarantee, random_state=0
    ).fit(s, y)
    t = math.tanh(1 / h)
    assert_allclose(est.b1_, t / (2 * h), rtol=1e-14)
    if guarantee == "paper":  # Corollary 4
        assert_allclose(est.b2_, 1.5 * t * t / h**2, rtol=1e-14)
    else:  # the sharp constant of SPEC section 12, a third of it
        assert_allclose(est.b2_, t * t / (2 * h**2), rtol=1e-14)
    # Section 10 reads h only through (b1, b2): the same bound when they are given
    # directly. So does guarantee="paper", whatever noise is.
    explicit = NWCalibrationBound(
        b1=est.b1_, b2=est.b2_, noise="worst_case", guarantee=guarantee, random_state=0
    ).fit(s, y)
    assert explicit.bound_ == wc.bound_
    assert explicit.terms_ == wc.terms_
    if guarantee == "paper":
        assert wc.terms_ == est.terms_ and wc.bound_ == est.bound_


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_user_b1_b2_are_used_as_given(guarantee):
    s, y = _uniform_sample(3000)
    fits = {
        (b1, b2): NWCalibrationBound(
            b1=b1,
            b2=b2,
            bandwidth=0.05,
            guarantee=guarantee,
            noise="worst_case",
            random_state=0,
        ).fit(s, y)
        for b1, b2 in [(0.5, 1.0), (2.0, 1.0), (2.0, 30.0)]
    }
    for (b1, b2), est in fits.items():
        assert est.b1_ == b1 and est.b2_ == b2
    # Same folds and smoother, so eta_hat is the same; g_T grows with b1 and with b2.
    small, larger_b1, larger_b2 = fits.values()
    assert small.terms_["validation_mean"] == larger_b1.terms_["validation_mean"]
    assert small.terms_["smoothing_mean"] < larger_b1.terms_["smoothing_mean"]
    assert larger_b1.terms_["smoothing_mean"] < larger_b2.terms_["smoothing_mean"]


@pytest.mark.parametrize(
    "guarantee, bandwidth",
    # In paper mode "auto" is the plug-in rule; in high-probability mode it searches
    # around it (tests/test_high_probability.py).
    [("paper", "auto"), ("paper", "plugin"), ("high_probability", "plugin")],
)
def test_plugin_bandwidth_for_the_full_sample_and_each_fold(guarantee, bandwidth):
    n, b1, b2 = 1003, 1.5, 6.0  # folds of 201 and 200 points: two training sizes
    s, y = _uniform_sample(n)
    est = NWCalibrationBound(
        b1=b1, b2=b2, bandwidth=bandwidth, guarantee=guarantee, random_state=0
    ).fit(s, y)
    assert_allclose(est.bandwidth_, nw_plugin_bandwidth(n, b1, b2), rtol=1e-15)
    folds = est.fold_results_
    assert sorted(set(folds["n_train"])) == [802, 803]
    for m, bandwidth in zip(folds["n_train"], folds["bandwidth"]):
        assert_allclose(bandwidth, nw_plugin_bandwidth(m, b1, b2), rtol=1e-15)
    assert folds["bandwidth"].nunique() == 2
    # Independently of that function: h' = t**2 with 2 b t^5 + a t^3 = c / 2 (App. E).
    for m, bandwidth in [
        (n, est.bandwidth_),
        *zip(folds["n_train"], folds["bandwidth"]),
    ]:
        t = math.sqrt(bandwidth)
        c = 1.15 / (2 * math.sqrt(2 * m))
        assert_allclose(2 * (b2 / 10) * t**5 + (3 * b1 / 8) * t**3, c / 2, rtol=1e-10)
    # Fewer training points, wider kernel.
    assert est.bandwidth_ < folds["bandwidth"].min()


def test_float_bandwidth_is_used_everywhere():
    s, y = _uniform_sample(2000)
    est = NWCalibrationBound(b1=1.0, b2=2.0, bandwidth=0.037, random_state=0).fit(s, y)
    assert est.bandwidth_ == 0.037
    assert list(est.fold_results_["bandwidth"]) == [0.037] * 5
    assert est.surrogate_.bandwidth == 0.037


@pytest.mark.parametrize("bandwidth", [1.0, 2.0])  # exact values for 0.6: above
@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_wide_float_bandwidth_gives_a_bound(guarantee, bandwidth):
    s, y = _uniform_sample(2000)
    est = NWCalibrationBound(
        b1=1.0, b2=2.0, bandwidth=bandwidth, guarantee=guarantee, random_state=0
    ).fit(s, y)
    assert 0.0 < est.bound_ <= 1.0
    # The kernel reaches every training point: eta_hat is their kernel-weighted mean.
    G = int(est.fold_results_["n_bins"].iloc[0])
    bins = np.minimum((s * G).astype(int), G - 1)
    for q in (0.1, 0.9):
        u = (min(int(q * G), G - 1) - bins) / (G * bandwidth)
        w = (1 - u**2) ** 1.2
        assert_allclose(est.predict([q]), [w @ y / w.sum()], rtol=1e-12)


# ----------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, match",
    [
        (
            {"h": 0.1, "b1": 1.0},
            r"Give either h .* not both; got h=0.1, b1=1.0, b2=None",
        ),
        (
            {"h": 0.1, "b2": 1.0},
            r"Give either h .* not both; got h=0.1, b1=None, b2=1.0",
        ),
        ({}, r"needs the derivative bounds .* got h=None, b1=None, b2=None"),
        ({"b1": 1.0}, r"give h .* or both b1 .* and b2 .* got h=None, b1=1.0, b2=None"),
        ({"b2": 1.0}, r"or both b1 .* got h=None, b1=None, b2=1.0"),
        ({"b1": 1.0, "b2": 1.0, "bandwidth": 0.0}, r"'bandwidth' parameter .* Got 0.0"),
        (
            {"b1": 1.0, "b2": 1.0, "bandwidth": -0.1},
            r"'bandwidth' parameter .* Got -0.1",
        ),
        ({"b1": 1.0, "b2": 1.0, "bandwidth": "silverman"}, r"'bandwidth' parameter"),
        ({"h": 0.0}, r"'h' parameter .* range \(0.0, inf\)"),
        ({"h": -0.5}, r"'h' parameter .* Got -0.5"),
        ({"b1": -1.0, "b2": 1.0}, r"'b1' parameter .* Got -1.0"),
        ({"b1": 1.0, "b2": -1.0}, r"'b2' parameter .* Got -1.0"),
        ({"h": 0.1, "max_validation": 0}, r"'max_validation' parameter .* Got 0"),
        ({"h": 0.1, "max_validation": "all"}, r"'max_validation' parameter"),
        ({"h": 0.1, "tempering": -0.2}, r"'tempering' parameter .* Got -0.2"),
    ],
)
def test_invalid_parameters_raise_and_do_not_mutate(params, match):
    s, y = _uniform_sample(200)
    s_copy, y_copy = s.copy(), y.copy()
    est = NWCalibrationBound(**params)
    with pytest.raises(ValueError, match=match):
        est.fit(s, y)
    with pytest.raises(ValueError, match=match):
        nw_bound(y, s, **params)
    assert not hasattr(est, "bound_")
    assert est.get_params()["h"] == params.get("h")  # hyperparameters unchanged
    np.testing.assert_array_equal(s, s_copy)
    np.testing.assert_array_equal(y, y_copy)


def test_valid_fit_does_not_mutate_inputs():
    s, y = _uniform_sample(500)
    s[:7] = 0.25  # ties
    s_copy, y_copy = s.copy(), y.copy()
    NWCalibrationBound(b1=1.0, b2=1.0, max_validation=50, random_state=0).fit(s, y)
    np.testing.assert_array_equal(s, s_copy)
    np.testing.assert_array_equal(y, y_copy)


# ----------------------------------------------------------------------------------
# Validation subsample
# ----------------------------------------------------------------------------------
def test_max_validation_none_uses_every_point():
    n = 2003
    s, y = _uniform_sample(n)
    est = NWCalibrationBound(b1=1.0, b2=1.0, random_state=0).fit(s, y)
    assert est.fold_results_["n_validation"].sum() == n
    assert sorted(set(est.fold_results_["n_validation"])) == [400, 401]


def test_max_validation_int_caps_the_evaluated_points():
    s, y = _uniform_sample(2000)
    kfold = KFold(5, shuffle=True, random_state=1)
    capped = NWCalibrationBound(
        b1=1.0, b2=1.0, max_validation=123, cv=kfold, random_state=0
    )
    assert list(capped.fit(s, y).fold_results_["n_validation"]) == [123] * 5
    # A cap above the fold size evaluates the whole fold, as None does.
    full = NWCalibrationBound(b1=1.0, b2=1.0, cv=kfold, random_state=0).fit(s, y)
    loose = NWCalibrationBound(
        b1=1.0, b2=1.0, max_validation=400, cv=kfold, random_state=0
    )
    assert loose.fit(s, y).bound_ == full.bound_
    assert list(loose.fold_results_["n_validation"]) == [400] * 5


@pytest.mark.parametrize(
    "n, expected",
    [
        (2000, 400),  # folds of 400 < 5000: every point
        (40_000, 5000),  # ceil(0.05 n) = 2000 < 5000
        (120_000, 6000),  # ceil(0.05 n) = 6000
        (400_000, 15_000),  # ceil(0.05 n) = 20000 > 15000
    ],
)
def test_max_validation_auto_is_the_papers_rule(n, expected):
    assert expected == min(n // 5, min(15_000, max(5000, math.ceil(0.05 * n))))
    rng = np.random.default_rng(n)
    s = rng.uniform(size=n)
    y = (rng.uniform(size=n) < s).astype(np.int8)
    est = NWCalibrationBound(b1=1.0, b2=1.0, max_validation="auto", random_state=0).fit(
        s, y
    )
    assert list(est.fold_results_["n_validation"]) == [expected] * 5
    assert list(est.fold_results_["n_train"]) == [n - n // 5] * 5


def test_subsample_is_reproducible_and_seeded_by_random_state():
    s, y = _uniform_sample(3000)
    kfold = KFold(5, shuffle=True, random_state=0)  # the folds do not change below

    def fit(random_state):
        return NWCalibrationBound(
            b1=1.0, b2=1.0, max_validation=200, cv=kfold, random_state=random_state
        ).fit(s, y)

    first, again, other = fit(7), fit(7), fit(8)
    assert first.bound_ == again.bound_
    assert first.terms_ == again.terms_
    assert first.bound_ != other.bound_
    assert first.score(s[:1000], y[:1000]) == again.score(s[:1000], y[:1000])


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_subsampled_bound_is_not_tighter_than_the_full_one(guarantee):
    s, y = _uniform_sample(3000)
    kfold = KFold(5, shuffle=True, random_state=0)
    params = dict(b1=1.0, b2=1.0, guarantee=guarantee, cv=kfold)
    full = NWCalibrationBound(**params).fit(s, y)
    subsampled = [
        NWCalibrationBound(**params, max_validation=150, random_state=seed).fit(s, y)
        for seed in range(10)
    ]
    # The terms that shrink with the number of evaluated points.
    widening = {
        "paper": ["bernstein_residual", "bernstein_smoothing"],
        "high_probability": ["bernstein_residual", "population_transfer"],
    }[guarantee]
    for est in subsampled:
        # 150 instead of 600 points per fold: wider deviation terms in every fold.
        for name in widening:
            assert np.all(est.fold_results_[name] > 1.5 * full.fold_results_[name]), (
                name
            )
        # The subsample means are unbiased estimates of the full-fold means.
        assert_allclose(
            est.terms_["validation_mean"], full.terms_["validation_mean"], atol=0.02
        )
    assert np.mean([est.bound_ for est in subsampled]) > full.bound_ + 0.02


# ----------------------------------------------------------------------------------
# Splitters
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_explicit_split_list_equals_the_kfold_path(guarantee):
    s, y = _uniform_sample(2500)
    s[::50] = 0.5  # ties across folds
    kfold = KFold(5, shuffle=True, random_state=0)
    # b1, b2 of h = 2**-4 stated directly: h would reject the ties.
    b1, b2 = sech_derivative_bounds(2.0**-4, guarantee=guarantee)
    kw = {"b1": b1, "b2": b2, "guarantee": guarantee, "noise": "worst_case"}
    a = NWCalibrationBound(**kw, cv=kfold).fit(s, y)
    b = NWCalibrationBound(**kw, cv=list(kfold.split(s))).fit(s, y)
    assert_allclose(b.bound_, a.bound_, rtol=1e-10)
    assert_allclose(b.lower_bound_, a.lower_bound_, rtol=1e-10)
    for name in TERM_NAMES[guarantee]:
        assert_allclose(b.terms_[name], a.terms_[name], rtol=1e-10, err_msg=name)
        assert_allclose(b.fold_results_[name], a.fold_results_[name], rtol=1e-10)
    assert list(b.fold_results_["n_validation"]) == list(
        a.fold_results_["n_validation"]
    )


@pytest.mark.parametrize(
    "guarantee, bandwidth",
    [("paper", "auto"), ("high_probability", "plugin"), ("high_probability", "auto")],
)
def test_non_partition_splitter(guarantee, bandwidth):
    n = 2000
    s, y = _uniform_sample(n)
    cv = ShuffleSplit(n_splits=3, train_size=0.5, test_size=0.3, random_state=0)
    est = NWCalibrationBound(
        b1=1.0,
        b2=2.0,
        bandwidth=bandwidth,
        confidence_level=0.9,
        guarantee=guarantee,
        cv=cv,
    ).fit(s, y)
    folds = est.fold_results_
    assert est.n_splits_ == 3
    assert list(folds["n_train"]) == [1000] * 3
    assert list(folds["n_validation"]) == [600] * 3
    assert_allclose(folds["delta"], 0.1 / 3, rtol=1e-12)
    for m, h in zip(folds["n_train"], folds["bandwidth"]):
        plugin = nw_plugin_bandwidth(m, 1.0, 2.0)
        if guarantee == "high_probability" and bandwidth == "auto":
            # One of plugin * 2**(k/2), k = -4..8, chosen from the training scores.
            k = 2 * math.log2(h / plugin)
            assert abs(k - round(k)) < 1e-9 and -4 <= round(k) <= 8
        else:
            assert_allclose(h, plugin, rtol=1e-15)
    assert 0 < est.bound_ < 1
    assert_allclose(est.bound_, folds["bound"].mean(), rtol=1e-12)


# ----------------------------------------------------------------------------------
# predict, score, the functional form
# ----------------------------------------------------------------------------------
def test_predict_is_close_to_the_true_calibration_function():
    problem = SmoothSine()
    s, y = problem.sample(200_000, np.random.default_rng(3))
    est = NWCalibrationBound(
        **problem.assumption_kwargs("b1", "b2"), noise="worst_case", random_state=0
    )
    est.fit(s, y)
    grid = np.linspace(0.0, 1.0, 1001)
    pred = est.predict(grid)
    assert np.all((pred >= 0.0) & (pred <= 1.0))
    error = np.abs(pred - problem.eta(grid))
    # Lemma 6: E|eta_hat - eta| <= g_T, whose mean over the (uniform) scores the
    # folds' smoothing term estimates (the refit has more data and a narrower kernel).
    assert error.mean() <= est.terms_["smoothing_mean"]
    assert error.max() < 0.05
    # Not the identity: the sine's miscalibration is found.
    assert np.abs(pred - grid).mean() > 0.5 * problem.true_ce


def test_score_is_a_negated_bound_above_the_held_out_residual():
    problem = SmoothSine()
    rng = np.random.default_rng(4)
    s, y = problem.sample(20_000, rng)
    held_s, held_y = problem.sample(20_000, rng)
    est = NWCalibrationBound(**problem.assumption_kwargs("b1", "b2"), random_state=0)
    score = est.fit(s, y).score(held_s, held_y)
    assert -1.0 <= score <= 0.0
    assert score < -np.mean(np.abs(est.predict(held_s) - held_s))
    # The refit surrogate does not depend on cv or aggregate, nor does score.
    other = NWCalibrationBound(
        **problem.assumption_kwargs("b1", "b2"), cv=3, aggregate="min", random_state=1
    ).fit(s, y)
    assert other.score(held_s, held_y) == score
    # The fixed split evaluates 20000 points at the full delta with a surrogate fitted
    # on 20000; each of the 5 folds evaluates 4000 at delta / 5 with one fitted on
    # 16000.
    assert -score < est.bound_


@pytest.mark.parametrize(
    "params",
    [
        {"h": 2.0**-4},
        {"b1": 1.0, "b2": 3.0, "aggregate": "min", "confidence_level": 0.8},
        {
            "b1": 1.0,
            "b2": 3.0,
            "bandwidth": 0.02,
            "tempering": 1.0,
            "max_validation": 100,
        },
        {"h": 0.1, "cv": 3, "max_validation": "auto"},
        {"h": 2.0**-4, "guarantee": "paper"},
        {"b1": 1.0, "b2": 3.0, "bandwidth": "plugin", "aggregate": "min"},
    ],
)
def test_function_equals_estimator(params):
    s, y = _uniform_sample(1500)
    expected = NWCalibrationBound(**params, random_state=0).fit(s, y).bound_
    assert nw_bound(y, s, **params, random_state=0) == expected
    # A predict_proba-shaped input gives the same number.
    proba = np.column_stack([1 - s, s])
    assert nw_bound(y, proba, **params, random_state=0) == expected


# ----------------------------------------------------------------------------------
# Tightness, and the nearest-neighbour fallback
# ----------------------------------------------------------------------------------
def test_tighter_than_tv_on_a_perturbed_classifier():
    (problem,) = perturbed_problems((2.0**-6,))
    s, y = problem.sample(200_000, np.random.default_rng(6))
    nw = NWCalibrationBound(h=problem.h, random_state=0).fit(s, y)
    ce = problem.true_ce
    assert ce <= nw.bound_ < ce + 0.06
    # TV needs V >= TV(eta); a grid sees at most the true variation (eta is smooth at
    # scale h, so 30 points per h see almost all of it), which only favours TV here.
    V = float(np.sum(np.abs(np.diff(problem.eta(np.linspace(0.0, 1.0, 2001))))))
    tv = TVCalibrationBound(V=V, random_state=0).fit(s, y)
    assert nw.bound_ < tv.bound_ - 0.05


@dataclass(frozen=True)
class GappedSine(SmoothSine):
    """The smooth sine (``eta = s + A sin(2 pi s)``) with scores in two clusters.

    ``s`` is uniform on [0.05, 0.25] and on [0.75, 0.95] (mass ``(1 - gap_mass) / 2``
    each) and on the gap [0.25, 0.75] (mass ``gap_mass``), so a narrow kernel finds no
    training score near most gap points. ``b1, b2`` are those of the sine.

    CE: ``int |A sin(2 pi s)| p(s) ds`` with ``int_a^b sin(2 pi s) ds =
    (cos 2 pi a - cos 2 pi b) / (2 pi)``: each cluster gives ``cos(pi / 10) / (2 pi)``,
    the gap ``1 / pi``.
    """

    amplitude: float = 0.05
    gap_mass: float = 0.01
    name: str = "gapped_sine"

    def density(self, s):
        cluster = (1 - self.gap_mass) / 2 / 0.2
        if 0.05 <= s <= 0.25 or 0.75 <= s <= 0.95:
            return cluster
        return self.gap_mass / 0.5 if 0.25 < s < 0.75 else 0.0

    @property
    def true_ce(self):
        cluster = (1 - self.gap_mass) / 2 / 0.2 * math.cos(math.pi / 10) / (2 * math.pi)
        return self.amplitude * (2 * cluster + self.gap_mass / 0.5 / math.pi)

    def sample_scores(self, n, rng):
        part = rng.choice(3, size=n, p=[(1 - self.gap_mass) / 2] * 2 + [self.gap_mass])
        low = np.array([0.05, 0.75, 0.25])[part]
        high = np.array([0.25, 0.95, 0.75])[part]
        return rng.uniform(low, high)


def test_gapped_problem_truth():
    problem = GappedSine()

    def integrand(s):
        return abs(s - float(problem.eta(s))) * problem.density(s)

    quad = checked_quad(integrand, 0.0, 1.0, points=[0.05, 0.25, 0.5, 0.75, 0.95])
    assert_allclose(problem.true_ce, quad, atol=1e-10)
    s = problem.sample_scores(100_000, np.random.default_rng(0))
    gap = (s > 0.25) & (s < 0.75)
    assert abs(gap.mean() - 0.01) < 5 * math.sqrt(0.01 * 0.99 / 1e5)
    assert s.min() >= 0.05 and s.max() <= 0.95


# 8 repeats of the mean aggregate by default; 40 of each aggregate under ``slow``.
@pytest.mark.parametrize(
    "aggregate, repetitions",
    [
        ("mean", 8),
        pytest.param("mean", 40, marks=pytest.mark.slow),
        pytest.param("min", 40, marks=pytest.mark.slow),
    ],
)
def test_fallback_fires_across_a_gap_and_the_bound_still_covers(aggregate, repetitions):
    problem = GappedSine()
    fallbacks = []

    def make(p, confidence_level, random_state):
        return NWCalibrationBound(
            **p.assumption_kwargs("b1", "b2"),
            bandwidth=0.003,
            aggregate=aggregate,
            confidence_level=confidence_level,
            random_state=random_state,
        )

    def bound_recording_fallbacks(est):
        fallbacks.append(int(est.fold_results_["n_fallback"].sum()))
        return est.bound_

    result = coverage(
        make,
        problem,
        5000,
        repetitions,
        confidence_level=0.9,
        seed=17,
        quantity=bound_recording_fallbacks,
    )
    # About 50 validation points fall in the gap, where the training scores are
    # ~0.01 apart: many have none within the kernel.
    assert len(fallbacks) == repetitions and min(fallbacks) > 5
    assert result.tolerance == binomial_tolerance(repetitions, 0.9)
    assert result.failures <= result.tolerance, result.summary()
    assert np.all(result.values < 0.5)  # not a clipped, trivial bound


@pytest.mark.parametrize(
    "params, match",
    [
        (
            {"h": 1e-20},
            r"b1=5e\+19 \(from h=1e-20\) is too large: .* Use h >= 2\*\*-41",
        ),
        ({"h": 2.0**-42}, r"b1=2\.199e\+12 \(from h=2\.27\d*e-13\) is too large"),
        ({"b1": 1e13, "b2": 1.0}, r"b1=1e\+13 is too large: .* Use b1 <= 1\.1e\+12"),
        ({"b1": 1.0, "b2": 1e30}, r"b2=1e\+30 is too large: .* Use b2 <= 7\.254e\+24"),
    ],
)
def test_derivative_bounds_beyond_double_precision_are_rejected(params, match):
    # At h = 1e-20 the grid sums' rounding (about eps * bin width) times b1 = 5e19
    # once made the smoothing term, and the bound, negative: a clear error instead.
    s, y = _uniform_sample(300)
    with pytest.raises(ValueError, match=match):
        NWCalibrationBound(**params).fit(s, y)
    with pytest.raises(ValueError, match=match):
        nw_bound(y, s, **params)


# Slow: an NW fit at h = 2**-41 costs ~3.5 s of CPU whatever n (the grid at tiny h).
@pytest.mark.slow
def test_smallest_accepted_h_gives_a_bound_in_range():
    # h = 2**-41: b1 = 2**40, b2 = 1.5 * 2**82 are accepted; on continuous scores the
    # smoothing term is clipped at 1 and the bound is exactly 1, never below 0.
    # The default's relative branch: psi(K d) overflows to inf, so no relative
    # branch (and no warning), and its bias is clipped at 1 too.
    s, y = _uniform_sample(2000)
    est = NWCalibrationBound(h=2.0**-41, random_state=0).fit(s, y)
    assert est.b1_ == 2.0**40
    assert 0.999 < est.terms_["bias_mean"] <= 1.0
    assert est.bound_ == 1.0 and (est.fold_results_["n_relative"] == 0).all()
    worst = NWCalibrationBound(h=2.0**-41, noise="worst_case", random_state=0)
    worst.fit(s, y)
    assert 0.999 < worst.terms_["smoothing_mean"] <= 1.0
    assert worst.bound_ == 1.0


TINY = [0.0, 5e-324, 1e-300, 1e-200]


@pytest.mark.parametrize("m", [1, 2, 100, 10**6, 10**9])
@pytest.mark.parametrize("b1", TINY + [1e-10, 1.0, 1e12])
@pytest.mark.parametrize("b2", TINY + [1e-10, 1.0, 7e24])
def test_plugin_bandwidth_is_finite_and_solves_its_equation(m, b1, b2):
    # Tiny b1 or b2 once started Newton near t = 1e100, where t**5 overflowed
    # (OverflowError from NWCalibrationBound(b1=1e-300, b2=0).fit).
    h = nw_plugin_bandwidth(m, b1, b2)
    assert 1e-4 <= h <= 0.25
    a, b, c = 3.0 * b1 / 8.0, b2 / 10.0, 1.15 / (2.0 * math.sqrt(2.0 * m))

    def f(t):
        return 2.0 * b * t**5 + a * t**3 - c / 2.0

    if f(0.5) <= 0.0:  # the root is beyond the clip, or there is none
        assert h == 0.25
    elif f(0.01) >= 0.0:
        assert h == 1e-4
    else:
        t = math.sqrt(h)
        assert f(t * (1 - 1e-12)) <= 0.0 <= f(t * (1 + 1e-12))


@pytest.mark.parametrize("guarantee", GUARANTEES)
@pytest.mark.parametrize("bandwidth", ["auto", "plugin"])
@pytest.mark.parametrize(
    "b1, b2", [(1e-300, 0.0), (0.0, 1e-300), (1e-300, 1e-300), (5e-324, 1e-10)]
)
def test_tiny_derivative_bounds_give_a_bound(b1, b2, bandwidth, guarantee):
    # The assumption "eta is (nearly) constant" is legal; the plug-in bandwidth is
    # then the widest, 1/4 (its equation's root lies beyond the clip).
    s, y = _uniform_sample(2000)
    est = NWCalibrationBound(
        b1=b1, b2=b2, bandwidth=bandwidth, guarantee=guarantee, random_state=0
    ).fit(s, y)
    assert 0.0 <= est.lower_bound_ <= est.bound_ <= 1.0
    assert est.bandwidth_ == 0.25 or bandwidth == "auto"
    if bandwidth == "plugin" or guarantee == "paper":
        assert (est.fold_results_["bandwidth"] == 0.25).all()
    assert -1.0 <= est.score(s[:200], y[:200]) <= 0.0
    assert nw_bound(
        y, s, b1=b1, b2=b2, bandwidth=bandwidth, guarantee=guarantee, random_state=0
    ) == pytest.approx(est.bound_, abs=0)


@pytest.mark.parametrize("guarantee", GUARANTEES)
@pytest.mark.parametrize("L", [0.0, 5e-324, 1e-300])
def test_tiny_lipschitz_constant_gives_a_bound(L, guarantee):
    # The Lipschitz bound's counterpart of the tiny b1, b2 above (no bandwidth rule:
    # it never overflowed; kept so that it stays so).
    from skcalbound import LipschitzBucketBound

    s, y = _uniform_sample(2000)
    est = LipschitzBucketBound(L=L, guarantee=guarantee, random_state=0).fit(s, y)
    zero = LipschitzBucketBound(L=0.0, guarantee=guarantee, random_state=0).fit(s, y)
    assert 0.0 <= est.lower_bound_ <= est.bound_ <= 1.0
    assert est.bound_ == pytest.approx(zero.bound_, rel=1e-12)


def test_bound_terms_by_hand():
    r = np.array([0.1, 0.2, 0.3, 0.0])
    gt = np.array([0.05, 0.05, 0.15, 0.05])
    terms = nw_bound_terms(4, (r.mean(), r.var()), (gt.mean(), gt.var()), delta=0.06)
    L = np.log(3 / 0.03)
    assert_allclose(terms["validation_mean"], 0.15, rtol=1e-15)
    assert_allclose(terms["smoothing_mean"], 0.075, rtol=1e-15)
    assert_allclose(
        terms["bernstein_residual"],
        np.sqrt(2 * r.var() * L / 4) + 3 * L / 4,
        rtol=1e-14,
    )
    assert_allclose(
        terms["bernstein_smoothing"],
        np.sqrt(2 * gt.var() * L / 4) + 3 * L / 4,
        rtol=1e-14,
    )
    # g in [0, R]: R * BB(n, d, var(g / R)).
    R = 0.5
    halved = nw_bound_terms(4, (r.mean(), r.var()), (gt.mean(), gt.var()), 0.06, R=R)
    assert_allclose(
        halved["bernstein_smoothing"],
        np.sqrt(2 * gt.var() * L / 4) + 3 * R * L / 4,
        rtol=1e-14,
    )


def test_several_explicit_splits_with_a_validation_cap():
    # Several explicit splits (one design each, then the smoother on all rows in one
    # more pass) with a subsample of each validation set: the cap holds per split,
    # and a cap no split reaches gives the numbers of no cap, score included.
    rng = np.random.default_rng(5)
    s = rng.uniform(size=6000)
    y = (rng.uniform(size=s.size) < s**2).astype(int)
    cv = ShuffleSplit(3, test_size=0.3, random_state=0)
    fits = {
        cap: NWCalibrationBound(b1=2.0, b2=2.0, cv=cv, max_validation=cap).fit(s, y)
        for cap in (None, 500, 10**6)
    }
    assert (fits[500].fold_results_["n_validation"] == 500).all()
    assert fits[500].bound_ > fits[None].bound_
    assert fits[10**6].bound_ == fits[None].bound_
    assert fits[10**6].bandwidth_ == fits[None].bandwidth_
    assert fits[10**6].score(s[:3000], y[:3000]) == fits[None].score(s[:3000], y[:3000])


# ----------------------------------------------------------------------------------
# NWCalibrationBound: the derivative bounds and the validation subsample
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_nw_h_is_a_way_to_give_b1_and_b2(guarantee):
    X, y = scores_labels()
    h = 2**-4
    kw = {"guarantee": guarantee, "noise": "worst_case", "random_state": 0}
    from_h = NWCalibrationBound(h=h, **kw).fit(X, y)
    # The docstring's b1 = tanh(1/h) / (2h), and b2 = tanh(1/h)**2 / (2 h**2)
    # (SPEC section 12), or Corollary 4's 1.5 tanh(1/h)**2 / h**2 in paper mode.
    assert_allclose(from_h.b1_, math.tanh(1 / h) / (2 * h), rtol=1e-12)
    factor = 1.5 if guarantee == "paper" else 0.5
    assert_allclose(from_h.b2_, factor * math.tanh(1 / h) ** 2 / h**2, rtol=1e-12)
    given = NWCalibrationBound(b1=from_h.b1_, b2=from_h.b2_, **kw).fit(X, y)
    assert_same_fit(given, from_h)
    # Given bounds are used as they are (as floats).
    est = NWCalibrationBound(b1=2, b2=2, **kw).fit(X, y)
    assert type(est.b1_) is float and type(est.b2_) is float
    assert (est.b1_, est.b2_) == (2.0, 2.0)
    assert type(est.bandwidth_) is float
    plugin = spec_plugin_bandwidth(X.shape[0], 2.0, 2.0)
    if guarantee == "paper":  # "auto" is the plug-in rule
        assert_allclose(est.bandwidth_, plugin, rtol=1e-9)
    else:  # one of plugin * 2**(k/2), k = -4..8
        k = 2 * math.log2(est.bandwidth_ / plugin)
        assert abs(k - round(k)) < 1e-6 and -4 <= round(k) <= 8
    # Smaller derivative bounds, a smaller smoothing term (eta(s) = s**2: b1 = b2 = 2
    # hold, and are far below h = 1/16's b1 = 8, b2 = 128 or 384).
    assert est.terms_["smoothing_mean"] < from_h.terms_["smoothing_mean"]


@pytest.mark.parametrize(
    "random_state",
    [0, None, "RandomState(0)"],
    ids=["int", "None", "RandomState"],
)
def test_nw_score_of_a_fitted_estimator_is_reproducible(random_state):
    X, y = scores_labels()
    if random_state == "RandomState(0)":
        random_state = np.random.RandomState(0)
    X_test, y_test = scores_labels(1500, seed=11)
    est = NWCalibrationBound(h=2**-4, max_validation=100, random_state=random_state)
    est.fit(X, y)
    assert est.fold_results_["n_validation"].tolist() == [100] * 5
    first = est.score(X_test, y_test)
    assert est.score(X_test, y_test) == first


# ----------------------------------------------------------------------------------
# NW: one fold by hand
# ----------------------------------------------------------------------------------
def _cell(s, G):
    return min(math.floor(s * G), G - 1)


def _nw_row(train_s, query, bandwidth, tempering, G):
    """The weights of every training point for one query, and the fallback flag.

    The tempered Epanechnikov kernel at the offset between the query's cell and the
    training point's cell, ``(1 - (k / (G h))**2) ** tempering`` for ``|k| < G h``;
    if it gives no training point any weight, equal weights on the nearest training
    score(s), both sides when equidistant. Normalised to sum to one.
    """
    q = _cell(query, G)
    w = []
    for s in train_s:
        k = q - _cell(s, G)
        inside = abs(k) < G * bandwidth
        w.append((1 - (k / (G * bandwidth)) ** 2) ** tempering if inside else 0.0)
    fallback = sum(w) == 0.0
    if fallback:
        distance = [abs(query - s) for s in train_s]
        w = [1.0 if x == min(distance) else 0.0 for x in distance]
    total = sum(w)
    return [x / total for x in w], fallback


def _nw_fold(train_s, train_y, val_s, b1, b2, bandwidth, tempering, G, delta):
    W, r, g, n_fallback = [], [], [], 0
    for query in val_s:
        w, fallback = _nw_row(train_s, query, bandwidth, tempering, G)
        offsets = [s - query for s in train_s]
        eta = sum(wi * yi for wi, yi in zip(w, train_y))
        if fallback:
            # Equal weights at distance d: b1 d + b2 d**2 / 2 + 1 / (2 sqrt(count)),
            # the published first moment sum w |s_i - s'| (= d), which equals the
            # signed one unless the nearest scores lie on both sides.
            first = sum(wi * abs(o) for wi, o in zip(w, offsets))
            n_fallback += 1
        else:
            # Lemma 6 expanded at the query (SPEC section 12).
            first = abs(sum(wi * o for wi, o in zip(w, offsets)))
        second = sum(wi * o * o for wi, o in zip(w, offsets))
        root = math.sqrt(sum(wi * wi for wi in w))
        g.append(b1 * first + 0.5 * b2 * second + 0.5 * root)
        r.append(abs(query - eta))
        W.append(w)
    return (*five_terms(r, g, W, delta), n_fallback, g)


@pytest.mark.parametrize("path", ["partition", "subset"])
def test_nw_fold_by_hand(path):
    X, y, train, val = exactness_split(path)
    b1, b2, bandwidth, tempering, confidence_level = 8.0, 20.0, 0.03, 1.2, 0.9
    est = NWCalibrationBound(
        b1=b1,
        b2=b2,
        bandwidth=bandwidth,
        tempering=tempering,
        confidence_level=confidence_level,
        cv=[(train, val)],
        noise="worst_case",  # section 10 by hand
        random_state=0,
    ).fit(X, y)
    # 64 cells per bandwidth at least: the power of two >= 64 / 0.03 = 2133.
    G = 4096
    row = est.fold_results_.iloc[0]
    assert row["n_bins"] == G and row["bandwidth"] == bandwidth
    delta = 1 - confidence_level  # one split: delta_fold = delta
    terms, upper, lower, C2, n_fallback, g = _nw_fold(
        X[train].tolist(),
        y[train].tolist(),
        X[val].tolist(),
        b1,
        b2,
        bandwidth,
        tempering,
        G,
        delta,
    )
    assert list(est.terms_) == TERM_NAMES["high_probability"]
    for name, value in terms.items():
        assert_allclose(est.terms_[name], value, rtol=0, atol=1e-12, err_msg=name)
        assert_allclose(row[name], value, rtol=0, atol=1e-12, err_msg=name)
    assert_allclose(row["sum_c_squared"], C2, rtol=1e-12)
    assert_allclose(row["bound"], upper, rtol=0, atol=1e-12)
    assert_allclose(row["lower_bound"], lower, rtol=0, atol=1e-12)
    assert_allclose(est.bound_, min(upper, 1.0), rtol=0, atol=1e-12)
    assert_allclose(est.lower_bound_, max(lower, 0.0), rtol=0, atol=1e-12)
    assert row["n_fallback"] == n_fallback
    assert row["n_train"] == train.size and row["n_validation"] == val.size
    # The cases the data are built for: many fallbacks, some g clipped at 1, and C2
    # above 1/m (the validation points do not load the training points evenly).
    assert 25 <= n_fallback <= 60
    assert any(x > 1.0 for x in g) and sum(x < 1.0 for x in g) > 60
    assert C2 > 1.5 / train.size


def test_nw_equidistant_fallback_by_hand():
    """One query, 0.5, at distance 0.125 from the block of two training points at 0.375
    and from the one at 0.625, with nothing within the kernel: equal weights 1/3 on the
    three, so ``eta_hat`` is their mean label, ``g = b1 d + b2 d**2 / 2 +
    1 / (2 sqrt(3))`` and ``C2 = 3 (1/3)**2``."""
    X, y, train, val = exactness_split("subset")
    (query,) = np.flatnonzero(X == 0.5)
    near = train[np.isin(X[train], [0.375, 0.625])]
    assert sorted(X[near]) == [0.375, 0.375, 0.625]
    b1, b2, confidence_level = 2.0, 3.0, 0.9
    est = NWCalibrationBound(
        b1=b1,
        b2=b2,
        bandwidth=0.03,
        confidence_level=confidence_level,
        cv=[(train, np.array([query]))],
        noise="worst_case",
    ).fit(X, y)
    row = est.fold_results_.iloc[0]
    assert row["n_fallback"] == 1 and row["n_validation"] == 1
    d = 0.125
    eta = y[near].mean()
    g = b1 * d + 0.5 * b2 * d * d + 0.5 / math.sqrt(3)
    assert_allclose(row["validation_mean"], abs(0.5 - eta), rtol=0, atol=1e-15)
    assert_allclose(row["smoothing_mean"], g, rtol=1e-14)
    assert_allclose(row["sum_c_squared"], 1 / 3, rtol=1e-14)
    d3 = (1 - confidence_level) / 3
    concentration = math.sqrt(math.log(1 / d3) * (1 / 3) / 2)
    assert_allclose(row["label_concentration"], concentration, rtol=1e-14)


# ----------------------------------------------------------------------------------
# The two modes
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("h", [2.0**-3, 2.0**-6, 0.5])
def test_nw_b2_from_h_is_a_third_in_high_probability_mode(h):
    s, y = np.linspace(0.01, 0.99, 300), np.arange(300) % 2
    hp = NWCalibrationBound(h, bandwidth=0.1, cv=2, random_state=0).fit(s, y)
    paper = NWCalibrationBound(
        h, bandwidth=0.1, cv=2, guarantee="paper", random_state=0
    ).fit(s, y)
    t = math.tanh(1 / h)
    assert hp.b1_ == paper.b1_
    assert_allclose(hp.b1_, t / (2 * h), rtol=1e-14)
    assert_allclose(hp.b2_, t * t / (2 * h * h), rtol=1e-14)  # SPEC section 12
    assert_allclose(paper.b2_, 1.5 * t * t / (h * h), rtol=1e-14)  # Corollary 4
    assert_allclose(hp.b2_, paper.b2_ / 3, rtol=1e-14)


@pytest.mark.parametrize("aggregate", ["mean", "min"])
def test_relative_branch_only_in_h_mode(aggregate):
    # SPEC 13's relative bias branch rests on the sech perturbation's property
    # |eta'| <= (A + B) min(eta, 1 - eta): with h only, never with b1 and b2 given
    # (even the very b1 and b2 that h gives).
    from skcalbound.datasets import make_rare_event

    data = make_rare_event(20_000, h=2**-6, random_state=0)
    s, y = data.scores, data.labels
    kw = {"aggregate": aggregate, "random_state": 0}
    from_h = NWCalibrationBound(h=2**-6, **kw).fit(s, y)
    assert (from_h.fold_results_["n_relative"] > 0).all()
    given = NWCalibrationBound(b1=from_h.b1_, b2=from_h.b2_, **kw).fit(s, y)
    assert (given.fold_results_["n_relative"] == 0).all()
    assert given._method().grid.h is None
    # Here (rare events) the relative bias more than pays for f = 1 + R in c'.
    assert from_h.bound_ < given.bound_
    with pytest.raises(ValueError, match="Give either h"):
        NWCalibrationBound(h=2**-6, b1=from_h.b1_, b2=from_h.b2_).fit(s, y)


def test_nw_high_probability_bound_is_below_the_paper_bound(overconfident):
    """On a smooth problem of some size the expanded Lemma 6 (and the sharper b2 and
    the bandwidth search) more than pay for the two extra terms."""
    s, y = overconfident
    hp = NWCalibrationBound(h=2.0**-5, noise="worst_case", random_state=0).fit(s, y)
    paper = NWCalibrationBound(h=2.0**-5, guarantee="paper", random_state=0).fit(s, y)
    assert hp.bound_ < paper.bound_ < 1.0
    assert hp.terms_["smoothing_mean"] < paper.terms_["smoothing_mean"]
    # The same with the same b2 and the plug-in bandwidth: Lemma 6 at the query.
    b1, b2 = paper.b1_, paper.b2_
    hp_same = NWCalibrationBound(
        b1=b1, b2=b2, bandwidth="plugin", noise="worst_case", random_state=0
    )
    paper_same = NWCalibrationBound(b1=b1, b2=b2, guarantee="paper", random_state=0)
    assert (
        hp_same.fit(s, y).terms_["smoothing_mean"]
        < paper_same.fit(s, y).terms_["smoothing_mean"]
    )


# ----------------------------------------------------------------------------------
# NW bandwidths (SPEC section 12)
# ----------------------------------------------------------------------------------
def _sample(n, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    return s, (rng.uniform(size=n) < s**2).astype(int)


def _search_grid(m, b1, b2):
    h = nw_plugin_bandwidth(m, b1, b2)
    return [min(max(h * 2.0 ** (k / 2), 1e-4), 0.5) for k in range(-4, 9)]


def test_auto_bandwidth_is_a_candidate_of_the_search_per_fold():
    n, b1, b2 = 3003, 2.0, 3.0  # folds of 601 and 600 points: two training sizes
    s, y = _sample(n)
    est = NWCalibrationBound(b1=b1, b2=b2, random_state=0).fit(s, y)
    assert est.bandwidth == "auto"
    folds = est.fold_results_
    assert sorted(set(folds["n_train"])) == [2402, 2403]
    for m, bandwidth in zip(folds["n_train"], folds["bandwidth"]):
        candidates = _search_grid(m, b1, b2)
        assert min(abs(bandwidth / c - 1) for c in candidates) < 1e-12, (m, bandwidth)
    # A grid of at least 64 cells per bandwidth (SPEC section 12) at and above the
    # full sample's plug-in bandwidth.
    wide = folds["bandwidth"] >= nw_plugin_bandwidth(n, b1, b2)
    assert wide.any()
    assert (folds["n_bins"] * folds["bandwidth"])[wide].min() >= 64
    assert min(abs(est.bandwidth_ / c - 1) for c in _search_grid(n, b1, b2)) < 1e-12
    # Not just the plug-in value on these data.
    assert not np.allclose(
        folds["bandwidth"], [nw_plugin_bandwidth(m, b1, b2) for m in folds["n_train"]]
    )


def test_auto_bandwidth_looks_at_no_label_and_no_validation_score():
    s, y = _sample(2000)
    train, val = np.arange(1500), np.arange(1500, 2000)
    est = NWCalibrationBound(b1=2.0, b2=3.0, cv=[(train, val)]).fit(s, y)
    other = NWCalibrationBound(b1=2.0, b2=3.0, cv=[(train, val)])
    with pytest.warns(BelowChanceWarning):  # the flipped labels
        other_labels = other.fit(s, 1 - y)
    moved = s.copy()
    moved[val] = np.random.default_rng(1).uniform(0.4, 0.6, size=500)
    other_validation = NWCalibrationBound(b1=2.0, b2=3.0, cv=[(train, val)])
    other_validation.fit(moved, y)
    h = est.fold_results_["bandwidth"].iloc[0]
    assert other_labels.fold_results_["bandwidth"].iloc[0] == h
    assert other_validation.fold_results_["bandwidth"].iloc[0] == h
    assert other_labels.bandwidth_ == est.bandwidth_  # the refit: all scores, no label


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_plugin_bandwidth_is_the_plugin_value(guarantee):
    n, b1, b2 = 2003, 2.0, 3.0
    s, y = _sample(n)
    modes = ["plugin"] if guarantee == "high_probability" else ["plugin", "auto"]
    for bandwidth in modes:  # in paper mode "auto" means the plug-in rule
        est = NWCalibrationBound(
            b1=b1, b2=b2, bandwidth=bandwidth, guarantee=guarantee, random_state=0
        ).fit(s, y)
        for m, h in zip(est.fold_results_["n_train"], est.fold_results_["bandwidth"]):
            assert h == nw_plugin_bandwidth(m, b1, b2)
        assert est.bandwidth_ == nw_plugin_bandwidth(n, b1, b2)


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_float_bandwidth_is_used_as_given(guarantee):
    s, y = _sample(2000)
    est = NWCalibrationBound(
        b1=2.0, b2=3.0, bandwidth=0.037, guarantee=guarantee, random_state=0
    ).fit(s, y)
    assert est.bandwidth_ == 0.037
    assert est.fold_results_["bandwidth"].tolist() == [0.037] * 5
    # Both modes: 64 cells per bandwidth (2048 >= 64 / 0.037 = 1730).
    assert est.fold_results_["n_bins"].tolist() == [2048] * 5


# ----------------------------------------------------------------------------------
# Numerical guards
# ----------------------------------------------------------------------------------
# Underflowing kernels in both modes (tempering=1e6) by default; the tiny bandwidth,
# whose grid of 2**20 cells costs ~1 s a fit whatever n, under slow.
@pytest.mark.parametrize(
    "params, guarantee",
    slow_except(
        [
            {
                "tempering=1e6": {"tempering": 1e6},
                "bandwidth=1e-4": {"bandwidth": 1e-4, "tempering": 50.0},
            },
            ["high_probability", "paper"],
        ],
        default=[
            "tempering=1e6-high_probability",
            "tempering=1e6-paper",
        ],
    ),
)
def test_extreme_kernels_give_a_finite_bound(params, guarantee):
    """Kernel values that underflow count as zero (at most 1e-100 is zero), so no
    0/0: a finite certificate in [0, 1], never NaN."""
    s, y = _sample(2000, seed=4)
    s = np.sort(s)  # any order: the split below is fixed
    cv = [(np.arange(0, 2000, 2), np.arange(1, 2000, 2))]
    est = NWCalibrationBound(b1=1.0, b2=1.0, guarantee=guarantee, cv=cv, **params)
    est.fit(s, y)
    assert 0.0 <= est.lower_bound_ <= est.bound_ <= 1.0
    values = [*est.terms_.values(), *est.fold_results_["bound"]]
    assert np.all(np.isfinite(values))
    pred = est.predict(np.linspace(0, 1, 101))
    assert np.all(np.isfinite(pred)) and np.all((pred >= 0) & (pred <= 1))
