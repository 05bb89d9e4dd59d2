"""``guarantee="high_probability"``: the certificates of SPEC sections 10-12.

* One fold of ``NWCalibrationBound`` and of ``LipschitzBucketBound`` recomputed with
  plain Python loops: the weights ``w_i(s')`` as the library defines them, then
  ``eta_hat``, ``r``, ``g``, ``c_i = mean_v w_i(s_v)``, ``C2 = sum_i c_i**2``, the
  five terms at ``delta / 3`` and the lower bound (to 1e-12).
* The lower bound (SPEC section 11) of all three bounds in both modes: below the
  upper bound, and the aggregate of the fold lower bounds clipped at 0.
* What must hold between the two modes, the bandwidth rules of NW, the guards against
  non-finite numbers, and the order of tied scores.
"""

import math

import numpy as np
import pytest
from _synthetic import slow_except
from numpy.testing import assert_allclose

from skcalbound import LipschitzBucketBound, NWCalibrationBound, TVCalibrationBound
from skcalbound._surrogates.nw._search import plugin_bandwidth as nw_plugin_bandwidth
from skcalbound.datasets import make_overconfident

HP_TERMS = [
    "validation_mean",
    "bernstein_residual",
    "smoothing_mean",
    "label_concentration",
    "population_transfer",
]


# ----------------------------------------------------------------------------------
# The five terms, from their definitions (SPEC section 10)
# ----------------------------------------------------------------------------------
def _five_terms(r, g, W, delta):
    """The five terms and the lower bound from per-query ``r`` and unclipped ``g`` and
    the weight matrix ``W`` (one row per evaluated validation point, one column per
    training point), with ``delta`` split in three."""
    n = len(r)
    d = delta / 3
    mean_r = sum(r) / n
    var_r = sum((x - mean_r) ** 2 for x in r) / n  # population variance
    log3 = math.log(3 / d)
    bernstein = math.sqrt(2 * var_r * log3 / n) + 3 * log3 / n
    smoothing = sum(min(x, 1.0) for x in g) / n
    c = [sum(W[v][i] for v in range(n)) / n for i in range(len(W[0]))]
    assert_allclose(sum(c), 1.0, rtol=1e-12)  # every query's weights sum to one
    C2 = sum(x * x for x in c)
    ell = math.log(1 / d)
    concentration = math.sqrt(ell * C2 / 2)
    a = smoothing + concentration
    F = (math.sqrt(ell / (2 * n)) + math.sqrt(ell / (2 * n) + a)) ** 2
    terms = {
        "validation_mean": mean_r,
        "bernstein_residual": bernstein,
        "smoothing_mean": smoothing,
        "label_concentration": concentration,
        "population_transfer": F - a,
    }
    upper = sum(terms.values())
    lower = mean_r - (bernstein + smoothing + concentration + (F - a))
    return terms, upper, lower, C2


def _exactness_problem():
    """About 300 training points in two clusters with a gap, 120 validation points.

    Training scores are multiples of 1/1024 in [0.1, 0.375] and [0.625, 0.9] (ties),
    with a block of two at 0.375 and one point at 0.625. Validation: 100 uniform scores
    (those in [0, 0.07), the gap and (0.93, 1] have no training score within a narrow
    kernel: nearest-neighbour fallback), 0.5 (equidistant from 0.375 and 0.625: both
    blocks), 0.45 and 0.55 (one side), 0.375 (tied with the training block that 0.45
    falls back to, so the block count must leave the validation point out) and both
    ends of [0, 1]. Twenty more points are neither training nor validation in the
    ``"subset"`` split. Data order shuffled.
    """
    rng = np.random.default_rng(2)
    left = rng.integers(103, 384, 150) / 1024
    right = rng.integers(641, 922, 150) / 1024
    train_s = np.concatenate([left, right, [0.375, 0.375, 0.625]])
    val_s = np.concatenate(
        [rng.uniform(size=100), [0.5, 0.45, 0.55, 0.375, 0.0, 1.0, 0.96, 0.03]]
    )
    extra_s = rng.uniform(size=20)
    scores = np.concatenate([train_s, val_s, extra_s])
    labels = (rng.uniform(size=scores.size) < scores).astype(int)
    perm = rng.permutation(scores.size)
    inverse = np.argsort(perm)
    n_train, n_val = train_s.size, val_s.size
    train = np.sort(inverse[:n_train])
    val = np.sort(inverse[n_train : n_train + n_val])
    extra = np.sort(inverse[n_train + n_val :])
    return scores[perm], labels[perm], train, val, extra


def _split(path):
    X, y, train, val, extra = _exactness_problem()
    if path == "partition":  # training = the complement of the validation part
        train = np.sort(np.concatenate([train, extra]))
    return X, y, train, val


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
    return (*_five_terms(r, g, W, delta), n_fallback, g)


@pytest.mark.parametrize("path", ["partition", "subset"])
def test_nw_fold_by_hand(path):
    X, y, train, val = _split(path)
    b1, b2, bandwidth, tempering, confidence_level = 8.0, 20.0, 0.03, 1.2, 0.9
    est = NWCalibrationBound(
        b1=b1,
        b2=b2,
        bandwidth=bandwidth,
        tempering=tempering,
        confidence_level=confidence_level,
        cv=[(train, val)],
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
    assert list(est.terms_) == HP_TERMS
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
    X, y, train, val = _split("subset")
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
# Lipschitz: every candidate of one fold by hand
# ----------------------------------------------------------------------------------
def _bucket(s, B, r, R):
    return min(max(math.floor(B * s - r / R), -1), B - 1)


def _bucket_row(train_s, query, B, r, R):
    """Weights ``1 / n_b`` on the training points of the query's bucket (SPEC section
    5); an empty bucket uses the bucket of the nearest training score, the lower one
    at the midpoint of the two training scores around the query."""
    b = _bucket(query, B, r, R)
    members = [i for i, s in enumerate(train_s) if _bucket(s, B, r, R) == b]
    fallback = not members
    if fallback:
        below = [s for s in train_s if s < query]
        above = [s for s in train_s if s > query]
        if not above or (below and query <= 0.5 * (max(below) + min(above))):
            b = _bucket(max(below), B, r, R)
        else:
            b = _bucket(min(above), B, r, R)
        members = [i for i, s in enumerate(train_s) if _bucket(s, B, r, R) == b]
    w = [0.0] * len(train_s)
    for i in members:
        w[i] = 1.0 / len(members)
    return w, members, fallback


def _lipschitz_candidate(train_s, train_y, val_s, B, r, R, L, delta):
    W, res, g, n_fallback = [], [], [], 0
    for query in val_s:
        w, members, fallback = _bucket_row(train_s, query, B, r, R)
        n_b = len(members)
        eta = sum(train_y[i] for i in members) / n_b
        g.append(
            L * sum(abs(query - train_s[i]) for i in members) / n_b
            + 0.5 / math.sqrt(n_b)
        )
        res.append(abs(query - eta))
        W.append(w)
        n_fallback += fallback
    return (*_five_terms(res, g, W, delta), n_fallback)


@pytest.mark.parametrize("path", ["partition", "subset"])
def test_lipschitz_fold_by_hand(path):
    X, y, train, val = _split(path)
    L, n_buckets, n_shifts, confidence_level = 2.0, [4, 16], 2, 0.9
    est = LipschitzBucketBound(
        L=L,
        n_buckets=n_buckets,
        n_shifts=n_shifts,
        confidence_level=confidence_level,
        cv=[(train, val)],
        random_state=0,
    ).fit(X, y)
    candidates = [(B, r) for B in n_buckets for r in range(n_shifts)]
    share = (1 - confidence_level) / len(candidates)  # union bound over candidates
    hand = {
        (B, r): _lipschitz_candidate(
            X[train].tolist(),
            y[train].tolist(),
            X[val].tolist(),
            B,
            r,
            n_shifts,
            L,
            share,
        )
        for B, r in candidates
    }
    uppers = np.array([hand[c][1] for c in candidates])
    assert np.ptp(uppers) > 0.01  # the choice matters
    best = candidates[int(np.argmin(uppers))]
    terms, upper, _, C2, n_fallback = hand[best]
    row = est.fold_results_.iloc[0]
    assert (row["n_buckets"], row["shift"], row["n_candidates"]) == (*best, 4)
    assert list(est.terms_) == HP_TERMS
    for name, value in terms.items():
        assert_allclose(row[name], value, rtol=0, atol=1e-12, err_msg=name)
        assert_allclose(est.terms_[name], value, rtol=0, atol=1e-12, err_msg=name)
    assert_allclose(row["sum_c_squared"], C2, rtol=1e-12)
    assert_allclose(row["bound"], upper, rtol=0, atol=1e-12)
    assert row["n_fallback"] == n_fallback
    # Every candidate's upper bound, and the largest candidate lower bound.
    assert_allclose(est.candidates_["fold0_bound"], uppers, rtol=0, atol=1e-12)
    lowers = [hand[c][2] for c in candidates]
    assert_allclose(row["lower_bound"], max(lowers), rtol=0, atol=1e-12)
    assert_allclose(est.lower_bound_, max(max(lowers), 0.0), rtol=0, atol=1e-12)
    assert_allclose(est.bound_, min(upper, 1.0), rtol=0, atol=1e-12)
    # The gap empties fine buckets: the fallback fires (0.5 uses the lower one).
    assert all(hand[(16, r)][4] > 10 for r in range(n_shifts))
    if path == "subset":
        _, members, fallback = _bucket_row(X[train].tolist(), 0.5, 16, 0, n_shifts)
        assert fallback and sorted(X[train][members]) == [0.375, 0.375]


# ----------------------------------------------------------------------------------
# The lower bound (SPEC section 11), all three bounds, both modes
# ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def miscalibrated():
    """20000 uniform scores with ``eta(s) = s**4``: ``CE = 1/2 - 1/5 = 0.3``, ``V = 1``,
    ``b1 = L = 4``, ``b2 = 12``; miscalibrated enough for positive lower bounds."""
    rng = np.random.default_rng(0)
    s = rng.uniform(size=20_000)
    return s, (rng.uniform(size=s.size) < s**4).astype(int)


BOUNDS = {
    "TV": (TVCalibrationBound, {"method": "denoise"}),  # the cross-fitted form
    "NW": (NWCalibrationBound, {"b1": 4.0, "b2": 12.0}),
    "Lipschitz": (LipschitzBucketBound, {"L": 4.0, "n_buckets": [8, 32, 128]}),
}


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
@pytest.mark.parametrize("name", list(BOUNDS))
def test_lower_bound_is_the_clipped_aggregate_of_the_fold_lower_bounds(
    name, guarantee, miscalibrated
):
    s, y = miscalibrated
    Est, params = BOUNDS[name]
    fits = {
        aggregate: Est(
            **params, guarantee=guarantee, aggregate=aggregate, random_state=0
        ).fit(s, y)
        for aggregate in ("mean", "min")
    }
    lowers = fits["mean"].fold_results_["lower_bound"]
    # The folds do not depend on the aggregate.
    assert_allclose(fits["min"].fold_results_["lower_bound"], lowers, rtol=0, atol=0)
    assert_allclose(fits["mean"].lower_bound_, max(lowers.mean(), 0.0), rtol=1e-12)
    assert fits["min"].lower_bound_ == max(lowers.max(), 0.0)
    for est in fits.values():
        # Informative here: 0 < lower <= CE = 0.3 <= upper < 1.
        assert 0.0 < est.lower_bound_ <= 0.3 <= est.bound_ < 1.0
        assert est.result_.lower_bound == est.lower_bound_
        frame = est.fold_results_
        assert (frame["lower_bound"] <= frame["bound"]).all()
        upper_rest = frame["bound"] - frame["validation_mean"]
        if name == "Lipschitz":
            # The largest candidate lower bound, at least the chosen candidate's.
            assert (frame["lower_bound"] >= frame["validation_mean"] - upper_rest).all()
        else:
            # validation_mean minus every other term.
            assert_allclose(
                frame["lower_bound"], frame["validation_mean"] - upper_rest, rtol=1e-12
            )
    assert fits["min"].lower_bound_ >= fits["mean"].lower_bound_


def test_lower_bound_is_clipped_at_zero_for_a_calibrated_sample():
    rng = np.random.default_rng(1)
    s = rng.uniform(size=3000)
    y = (rng.uniform(size=s.size) < s).astype(int)  # calibrated: CE = 0
    for Est, params in BOUNDS.values():
        est = Est(**params, random_state=0).fit(s, y)
        assert (est.fold_results_["lower_bound"] < 0).all()  # unclipped per fold
        assert est.lower_bound_ == 0.0


def test_an_empty_interval_warns():
    """Both bounds hold on one event; with ``aggregate="min"`` a fold whose data say
    "calibrated" and a fold whose data say "far from calibrated" can give a largest
    lower bound above the smallest upper bound. Two folds on different data (eta(s) = s
    and eta(s) = 1 - s, explicit index pairs) make it happen."""
    rng = np.random.default_rng(3)
    s = rng.uniform(size=8000)
    eta = np.where(np.arange(8000) < 4000, s, 1 - s)
    y = (rng.uniform(size=8000) < eta).astype(int)
    cv = [
        (np.arange(2000), np.arange(2000, 4000)),
        (np.arange(4000, 6000), np.arange(6000, 8000)),
    ]
    est = NWCalibrationBound(b1=1.0, b2=0.0, cv=cv, aggregate="min")
    with pytest.warns(UserWarning, match=r"The certified interval is empty: lower"):
        est.fit(s, y)
    assert est.lower_bound_ > est.bound_
    # The mean aggregate is an interval.
    est.set_params(aggregate="mean").fit(s, y)
    assert est.lower_bound_ <= est.bound_


def test_a_non_finite_term_is_an_error():
    from skcalbound._result import FoldResult, aggregate_folds

    good = FoldResult(
        terms={"validation_mean": 0.1, "bernstein_residual": 0.05},
        info={},
        estimate=0.1,
    )
    bad = FoldResult(
        terms={"validation_mean": 0.1, "bernstein_residual": math.nan},
        info={},
        estimate=0.1,
    )
    assert aggregate_folds([good, good], "mean", 0.95).bound == pytest.approx(0.15)
    with pytest.raises(
        FloatingPointError,
        match=r"Fold 1 produced a non-finite "
        r"bernstein_residual, lower bound",
    ):
        aggregate_folds([good, bad], "mean", 0.95)


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


@pytest.fixture(scope="module")
def overconfident():
    data = make_overconfident(20_000, h=2.0**-5, random_state=0)
    return data.scores, data.labels


def test_nw_high_probability_bound_is_below_the_paper_bound(overconfident):
    """On a smooth problem of some size the expanded Lemma 6 (and the sharper b2 and
    the bandwidth search) more than pay for the two extra terms."""
    s, y = overconfident
    hp = NWCalibrationBound(h=2.0**-5, random_state=0).fit(s, y)
    paper = NWCalibrationBound(h=2.0**-5, guarantee="paper", random_state=0).fit(s, y)
    assert hp.bound_ < paper.bound_ < 1.0
    assert hp.terms_["smoothing_mean"] < paper.terms_["smoothing_mean"]
    # The same with the same b2 and the plug-in bandwidth: Lemma 6 at the query.
    b1, b2 = paper.b1_, paper.b2_
    hp_same = NWCalibrationBound(b1=b1, b2=b2, bandwidth="plugin", random_state=0)
    paper_same = NWCalibrationBound(b1=b1, b2=b2, guarantee="paper", random_state=0)
    assert (
        hp_same.fit(s, y).terms_["smoothing_mean"]
        < paper_same.fit(s, y).terms_["smoothing_mean"]
    )


def test_tv_high_probability_bound_is_below_the_paper_bound(overconfident):
    """Three shares of delta instead of four and no Hoeffding term."""
    s, y = overconfident
    hp = TVCalibrationBound(method="denoise", random_state=0).fit(s, y)
    paper = TVCalibrationBound(guarantee="paper", random_state=0).fit(s, y)
    assert hp.bound_ < paper.bound_ < 1.0
    folds_hp, folds_paper = hp.fold_results_, paper.fold_results_
    assert (folds_hp["tv_denoising"] < folds_paper["tv_denoising"]).all()
    # Same folds: the ties are shuffled after the folds are drawn (no ties here).
    assert (folds_hp["n_train"] == folds_paper["n_train"]).all()
    m = folds_hp["n_train"].to_numpy()
    d = folds_hp["delta"].to_numpy() / 3
    assert_allclose(
        folds_hp["population_transfer"],
        (1.0 + folds_hp["V_hat"]) * np.sqrt(np.log(2 / d) / (2 * m)),
        rtol=1e-12,
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
    other_labels = NWCalibrationBound(b1=2.0, b2=3.0, cv=[(train, val)]).fit(s, 1 - y)
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


# ----------------------------------------------------------------------------------
# Tied scores: in a random order drawn from random_state, never from the labels
# ----------------------------------------------------------------------------------
def _tie_problem(one_first):
    """40 training points whose only tie that matters is the block at 0.30 holding a
    zero and a one; ``one_first`` puts the row of the one before the row of the zero
    (data grouped by class puts the zero first). Ten validation points."""
    s_zero = np.arange(1, 20) / 100
    s_one = 0.40 + np.arange(1, 20) / 100
    tie_y = [1.0, 0.0] if one_first else [0.0, 1.0]
    train_s = np.concatenate([s_zero, [0.30, 0.30], s_one])
    train_y = np.concatenate([np.zeros(19), tie_y, np.ones(19)])
    val_s = np.array([0.0, 0.05, 0.10, 0.30, 0.35, 0.5, 0.7, 0.95, 1.0, 0.3])
    X = np.concatenate([train_s, val_s])
    y = np.concatenate([train_y, np.arange(10) % 2])
    return X, y, [(np.arange(40), np.arange(40, 50))]


def _tv_by_order(X, y, split, labels_in_score_order, guarantee):
    """The TV fold bound for a given order of the training labels in score order."""
    import prox_tv

    ((train, val),) = split
    m = train.size
    share = 3 if guarantee == "high_probability" else 4
    d = 0.05 / share
    t1 = math.sqrt(0.5 * math.log(4 / d))
    t2 = math.sqrt(m / 8 * math.log(4 * (m - 1) / d))
    v = prox_tv.tv1_1d(np.asarray(labels_in_score_order, dtype=float), t2)
    s_sorted = np.sort(X[train])
    blocks = np.unique(s_sorted)
    values = np.array([v[s_sorted == b].mean() for b in blocks])
    fitted = values[np.maximum(np.searchsorted(blocks, X[val], side="right") - 1, 0)]
    r = np.abs(X[val] - fitted)
    n = r.size
    bb = math.sqrt(2 * r.var() * math.log(3 / d) / n) + 3 * math.log(3 / d) / n
    tvb = math.sqrt((2 * t1**2 + 2 * t1 * math.sqrt(t1**2 + 4 * t2) + 4 * t2) / m)
    ptb = (1 + np.abs(np.diff(values)).sum()) * math.sqrt(math.log(2 / d) / (2 * m))
    if guarantee == "paper":
        ptb += math.sqrt(math.log(2 / d) / (2 * m))
    return r.mean() + bb + tvb + ptb


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_tie_order_is_drawn_from_the_seed_and_blind_to_labels(guarantee):
    """Which of the two tied training rows at 0.30 comes first in score order changes
    the TV prox (a zero then a one: two pieces of 20 points; a one then a zero: three
    pieces), so the fold bound tells which order the library used: ``zero_first`` or
    ``one_first`` below, each recomputed from the prox of that label order.

    What is true (``_splitting.shuffle_ties``, called in ``fit`` after the folds are
    drawn): the tied positions are permuted by sorting random keys drawn from a seed
    of ``random_state``; the keys depend on the seed and on where the ties are, never
    on the labels or on the rows' content. Hence, for data grouped by class (the zero
    first in data order):

    * the order varies with the seed and both orders occur (it is drawn, not the
      caller's data order, which here is a function of the labels);
    * for every seed, swapping the two tied rows (the one first in data order) gives
      exactly the other order: the drawn permutation acts on positions, whatever the
      labels there. A rule that sorted ties by label would give the same bound for
      both data orders; one that kept the data order would give ``zero_first`` for
      grouped data at every seed.

    So the order of the labels inside a tie block is uniformly random whatever the
    data order, which is what Lemma 3 needs (SPEC section 3, step 1).
    """
    grouped = _tie_problem(one_first=False)
    swapped = _tie_problem(one_first=True)
    X, y, split = grouped
    base = [0.0] * 19
    tail = [1.0] * 19
    zero_first = _tv_by_order(X, y, split, base + [0.0, 1.0] + tail, guarantee)
    one_first = _tv_by_order(X, y, split, base + [1.0, 0.0] + tail, guarantee)
    assert abs(zero_first - one_first) > 1e-3  # the order shows in the bound

    def fold_bound(problem, seed):
        X, y, split = problem
        est = TVCalibrationBound(
            method="denoise", guarantee=guarantee, cv=split, random_state=seed
        )
        return est.fit(X, y).fold_results_["bound"].iloc[0]

    seen = []
    for seed in range(24):
        a, b = fold_bound(grouped, seed), fold_bound(swapped, seed)
        if abs(a - zero_first) < 1e-12:
            assert_allclose(b, one_first, rtol=0, atol=1e-12)
            seen.append("zero_first")
        else:
            assert_allclose(a, one_first, rtol=0, atol=1e-12)
            assert_allclose(b, zero_first, rtol=0, atol=1e-12)
            seen.append("one_first")
    assert 4 <= seen.count("zero_first") <= 20, seen  # both, about equally often
    # A fixed seed is reproducible.
    assert fold_bound(grouped, 7) == fold_bound(grouped, 7)
