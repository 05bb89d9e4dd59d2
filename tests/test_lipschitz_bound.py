"""LipschitzBucketBound: folds recomputed by hand, candidate choice, predict, score,
parameters and errors.

The hand checks rebuild each bucketing with a plain loop over the training points
(bucket id ``clip(floor(B s - r/R), -1, B - 1)``, the nearest training score's bucket
when a query's is empty, the lower one at the midpoint), then every term with box
weights: ``r = |eta_hat - s|``, ``g~ = min(L mean_b |s - s_i| + 1 / (2 sqrt(n_b)), 1)``,
population variances, ``BB(m, d, var) = sqrt(2 var ln(3/d) / m) + 3 ln(3/d) / m``.
``guarantee="paper"``: Proposition 2, ``d`` half of the candidate's share
``delta_fold / n_candidates``. ``"high_probability"``: the five terms of SPEC section
10, ``d`` a third of the share, with ``C2 = sum_i c_i**2`` from the weights ``1 / n_b``.
The estimator must agree to 1e-12.
"""

import math
import pickle

import numpy as np
import pytest
from _bounds import (
    LIPSCHITZ_SMALL_GRID,
    SMOOTHING_TERMS,
    assert_same_fit,
    exactness_split,
    five_terms,
    scores_labels,
    shuffled_parts,
)
from _synthetic import perturbed_problems
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.model_selection import KFold

from skcalbound import LipschitzBucketBound, NWCalibrationBound, lipschitz_bucket_bound
from skcalbound._sech import sech_lipschitz

# The terms_ keys of each guarantee, in the order they add up, and the columns of
# fold_results_.
TERM_NAMES = SMOOTHING_TERMS
GUARANTEES = list(TERM_NAMES)
FOLD_COLUMNS = {
    "paper": [
        "n_train",
        "n_validation",
        "delta",
        "n_buckets",
        "shift",
        "n_candidates",
        "n_fallback",
        "estimate",
        *TERM_NAMES["paper"],
        "bound",
        "lower_bound",
    ],
    "high_probability": [
        "n_train",
        "n_validation",
        "delta",
        "n_buckets",
        "shift",
        "n_candidates",
        "n_fallback",
        "sum_c_squared",
        "estimate",
        *TERM_NAMES["high_probability"],
        "bound",
        "lower_bound",
    ],
}


# ----------------------------------------------------------------------------------
# A slow, obviously correct reference
# ----------------------------------------------------------------------------------
def _bucket(s, B, r, R):
    return min(max(math.floor(B * s - r / R), -1), B - 1)


def _smoother(train_s, train_y, query, B, r, R, L, train_b=None):
    """``(eta_hat, g unclipped, fallback, used)`` at one query, one training point at a
    time; ``used`` are the indices of the training points of the bucket used
    (``train_b``: the training points' buckets, if the caller has them)."""
    train_s = [float(s) for s in train_s]
    if train_b is None:
        train_b = [_bucket(s, B, r, R) for s in train_s]
    q = float(query)
    b = _bucket(q, B, r, R)
    used = [i for i, tb in enumerate(train_b) if tb == b]
    fallback = not used
    if fallback:
        below = [s for s in train_s if s < q]
        above = [s for s in train_s if s > q]
        if not above or (below and q <= 0.5 * (max(below) + min(above))):
            nearest = max(below)
        else:
            nearest = min(above)
        b = _bucket(nearest, B, r, R)
        used = [i for i, tb in enumerate(train_b) if tb == b]
    n_b = len(used)
    eta = sum(float(train_y[i]) for i in used) / n_b
    g = L * math.fsum(abs(q - train_s[i]) for i in used) / n_b + 0.5 / math.sqrt(n_b)
    return eta, g, fallback, used


def _bernstein(m, delta, variance):
    return (
        math.sqrt(2 * variance * math.log(3 / delta) / m) + 3 * math.log(3 / delta) / m
    )


def _candidate(train_s, train_y, val_s, B, r, R, L, delta, guarantee="paper"):
    """Terms of one candidate's bound at ``delta`` (its share), its fallbacks, the
    clipped ``g`` and ``C2``."""
    train_b = [_bucket(float(s), B, r, R) for s in train_s]
    rows = [_smoother(train_s, train_y, q, B, r, R, L, train_b) for q in val_s]
    res = np.array([abs(row[0] - float(q)) for row, q in zip(rows, val_s)])
    g = np.minimum([row[1] for row in rows], 1.0)
    m = len(rows)
    var_r = float(np.sum((res - res.mean()) ** 2)) / m
    var_g = float(np.sum((g - g.mean()) ** 2)) / m
    # c_i: the weight 1 / n_b of training point i, averaged over the queries.
    c = np.zeros(len(train_s))
    for row in rows:
        c[row[3]] += 1.0 / len(row[3]) / m
    C2 = float(np.sum(c * c))
    if guarantee == "paper":
        terms = {
            "validation_mean": float(res.mean()),
            "smoothing_mean": float(g.mean()),
            "bernstein_residual": _bernstein(m, delta / 2, var_r),
            "bernstein_smoothing": _bernstein(m, delta / 2, var_g),
        }
    else:
        d = delta / 3
        concentration = math.sqrt(math.log(1 / d) * C2 / 2)
        a = float(g.mean()) + concentration
        u = math.log(1 / d) / (2 * m)
        terms = {
            "validation_mean": float(res.mean()),
            "bernstein_residual": _bernstein(m, d, var_r),
            "smoothing_mean": float(g.mean()),
            "label_concentration": concentration,
            "population_transfer": (math.sqrt(u) + math.sqrt(u + a)) ** 2 - a,
        }
    return terms, sum(row[2] for row in rows), g, C2


def _lower(terms):
    """``validation_mean`` minus every other term (SPEC section 11)."""
    return 2 * terms["validation_mean"] - sum(terms.values())


def _all_candidates(train_s, train_y, val_s, n_buckets, R, L, delta_fold, guarantee):
    """``{(B, r): (terms, n_fallback, g, C2)}`` for every candidate at
    ``delta_fold / n``."""
    candidates = [(B, r) for B in sorted(set(n_buckets)) for r in range(R)]
    share = delta_fold / len(candidates)
    return {
        (B, r): _candidate(train_s, train_y, val_s, B, r, R, L, share, guarantee)
        for B, r in candidates
    }


def _check_row(row, terms, label):
    for name in terms:
        assert_allclose(
            row[name], terms[name], rtol=1e-12, atol=0, err_msg=f"{label} {name}"
        )
    assert_allclose(row["bound"], sum(terms.values()), rtol=1e-12, err_msg=label)
    assert_allclose(
        row["estimate"], terms["validation_mean"], rtol=1e-12, err_msg=label
    )


# ----------------------------------------------------------------------------------
# One candidate, one fold, by hand
# ----------------------------------------------------------------------------------
def _tiny_problem():
    """35 points on [0, 1] for B = 4 buckets [0, 1/4), [1/4, 1/2), [1/2, 3/4), [3/4, 1].

    Training: ties at 0, 1/8 and 1 in bucket 0 and 3, a single point at 1/4 in bucket 1,
    nothing in bucket 2. Validation: 0.5 (the midpoint of 1/4 and 3/4: bucket 1), 0.6
    and 0.74 (bucket 3), both ends, ties with training scores; 0.45 and 0.5 have
    ``g > 1`` (clipped) at ``L = 4``. Three more points are neither training nor
    validation in the non-partition split. Data order shuffled.
    """
    rng = np.random.default_rng(3)
    train_s = np.array(
        [
            0.0,
            0.0,
            0.0625,
            0.125,
            0.125,
            0.2,
            0.25,
            0.75,
            0.8,
            0.875,
            1.0,
            1.0,
            0.9,
            0.1,
        ]
    )
    train_y = np.array([0, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 0])
    val_s = np.array(
        [
            0.5,
            0.6,
            0.74,
            0.7,
            0.0,
            1.0,
            0.125,
            0.3,
            0.45,
            0.9,
            0.99,
            0.05,
            0.51,
            0.26,
            0.2,
            0.76,
            0.875,
            0.01,
        ]
    )
    extra_s = np.array([0.3, 0.95, 0.15])
    scores = np.concatenate([train_s, val_s, extra_s])
    labels = np.concatenate([train_y, rng.integers(0, 2, val_s.size), [1, 0, 1]])
    return shuffled_parts(rng, scores, labels, train_s.size, val_s.size)


@pytest.mark.parametrize("path", ["partition", "subset"])
@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_one_candidate_one_fold_by_hand(guarantee, path):
    X, y, train, val, extra = _tiny_problem()
    if path == "partition":  # training = the complement of the validation part
        train = np.sort(np.concatenate([train, extra]))
    confidence_level, L = 0.9, 4.0
    est = LipschitzBucketBound(
        noise="worst_case",
        L=L,
        n_buckets=[4],
        n_shifts=1,
        confidence_level=confidence_level,
        guarantee=guarantee,
        cv=[(train, val)],
    ).fit(X, y)
    delta = 1 - confidence_level  # one split: delta_fold = delta, one candidate
    terms, n_fallback, g, C2 = _candidate(
        X[train], y[train], X[val], 4, 0, 1, L, delta, guarantee
    )
    assert list(est.terms_) == TERM_NAMES[guarantee]
    for name in TERM_NAMES[guarantee]:
        assert_allclose(est.terms_[name], terms[name], rtol=1e-12, atol=0, err_msg=name)
    folds = est.fold_results_
    assert list(folds.columns) == FOLD_COLUMNS[guarantee]
    row = folds.iloc[0]
    _check_row(row, terms, path)
    assert_allclose(row["lower_bound"], _lower(terms), rtol=1e-12)
    if guarantee == "high_probability":
        assert_allclose(row["sum_c_squared"], C2, rtol=1e-12)
    total = sum(terms.values())
    assert_allclose(est.bound_, min(total, 1.0), rtol=1e-12)
    assert est.lower_bound_ == max(row["lower_bound"], 0.0)
    assert_allclose(row["estimate"], terms["validation_mean"], rtol=1e-12)
    assert row["n_train"] == train.size and row["n_validation"] == val.size
    assert_allclose(row["delta"], delta, rtol=1e-15)
    assert (row["n_buckets"], row["shift"], row["n_candidates"]) == (4, 0, 1)
    assert row["n_fallback"] == n_fallback
    # 0.5, 0.51, 0.6, 0.7 and 0.74 fall in the empty bucket [1/2, 3/4); 0.5 uses the
    # bucket of 1/4 (at the midpoint of 1/4 and 3/4 in the subset split), 0.6 that of
    # 3/4.
    assert n_fallback == 5
    assert np.count_nonzero(g == 1.0) >= 2 and np.count_nonzero(g < 1.0) >= 10
    assert est.n_splits_ == 1
    assert (est.n_buckets_, est.shift_, est.L_) == (4, 0, L)


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_one_candidate_two_folds_by_hand(guarantee):
    X, y, train, val, extra = _tiny_problem()
    a = np.sort(np.concatenate([train, extra]))
    splits = [(a, val), (val, a)]
    confidence_level, L = 0.8, 1.5
    est = LipschitzBucketBound(
        noise="worst_case",
        L=L,
        n_buckets=[4],
        n_shifts=1,
        confidence_level=confidence_level,
        guarantee=guarantee,
        cv=splits,
    ).fit(X, y)
    delta_fold = (1 - confidence_level) / 2
    expected = []
    for k, (tr, va) in enumerate(splits):
        terms, n_fallback, _, _ = _candidate(
            X[tr], y[tr], X[va], 4, 0, 1, L, delta_fold, guarantee
        )
        row = est.fold_results_.iloc[k]
        _check_row(row, terms, f"fold {k}")
        assert_allclose(row["lower_bound"], _lower(terms), rtol=1e-12)
        assert row["n_fallback"] == n_fallback
        assert_allclose(row["delta"], delta_fold, rtol=1e-15)
        expected.append(terms)
    for name in TERM_NAMES[guarantee]:
        assert_allclose(
            est.terms_[name],
            np.mean([t[name] for t in expected]),
            rtol=1e-12,
            err_msg=name,
        )
    mean_bound = np.mean([sum(t.values()) for t in expected])
    # 17 and 21 validation points: the Bernstein terms alone exceed 1/2. The bound is
    # clipped at 1; fold bounds, terms and candidates stay unclipped.
    assert mean_bound > 1.0
    assert est.bound_ == 1.0
    assert est.lower_bound_ == 0.0  # likewise the lower bound, at 0
    assert_allclose(sum(est.terms_.values()), mean_bound, rtol=1e-12)
    assert_allclose(est.candidates_["mean_bound"], [mean_bound], rtol=1e-12)


# ----------------------------------------------------------------------------------
# Several candidates: the minimum at delta_fold / n_candidates
# ----------------------------------------------------------------------------------
def _gapped_sample(n, seed):
    """Scores uniform on [0, 0.3] (mass 0.35), [0.55, 1] (0.6) and the sparse gap
    between (0.05): fine buckets there are often empty. ``eta = s**2``."""
    rng = np.random.default_rng(seed)
    part = rng.choice(3, size=n, p=[0.35, 0.6, 0.05])
    s = rng.uniform(np.array([0, 0.55, 0.3])[part], np.array([0.3, 1, 0.55])[part])
    return s, (rng.uniform(size=n) < s**2).astype(int)


N_BUCKETS, N_SHIFTS, L_SEVERAL = [2, 3, 16], 2, 1.5


@pytest.fixture(scope="module", params=GUARANTEES)
def several(request):
    """A fit with 6 candidates on two folds, and every candidate's terms by hand, in
    each mode."""
    guarantee = request.param
    X, y = _gapped_sample(240, 0)
    splits = list(KFold(2, shuffle=True, random_state=0).split(X))
    confidence_level = 0.9
    est = LipschitzBucketBound(
        noise="worst_case",
        L=L_SEVERAL,
        n_buckets=N_BUCKETS,
        n_shifts=N_SHIFTS,
        confidence_level=confidence_level,
        guarantee=guarantee,
        cv=splits,
    ).fit(X, y)
    delta_fold = (1 - confidence_level) / 2
    by_fold = []
    for tr, va in splits:
        by_fold.append(
            _all_candidates(
                X[tr],
                y[tr],
                X[va],
                N_BUCKETS,
                N_SHIFTS,
                L_SEVERAL,
                delta_fold,
                guarantee,
            )
        )
    return X, y, splits, est, by_fold


def test_fold_bound_is_the_minimum_over_candidates(several):
    X, y, splits, est, by_fold = several
    candidates = list(by_fold[0])
    assert len(candidates) == 6
    chosen = []
    for k, hand in enumerate(by_fold):
        bounds = np.array([sum(hand[c][0].values()) for c in candidates])
        assert np.ptp(bounds) > 0.01  # the choice matters
        best = candidates[int(np.argmin(bounds))]
        row = est.fold_results_.iloc[k]
        assert (row["n_buckets"], row["shift"]) == best
        assert row["n_candidates"] == 6
        assert row["n_fallback"] == hand[best][1]
        _check_row(row, hand[best][0], f"fold {k}")
        assert_allclose(row["bound"], bounds.min(), rtol=1e-12)
        # The lower bound is the largest candidate lower bound (all candidates hold at
        # once), not necessarily the chosen candidate's.
        assert_allclose(
            row["lower_bound"], max(_lower(hand[c][0]) for c in candidates), rtol=1e-12
        )
        if est.guarantee == "high_probability":
            assert_allclose(row["sum_c_squared"], hand[best][3], rtol=1e-12)
        chosen.append(best)
    assert any(hand[c][1] > 0 for hand in by_fold for c in candidates)  # fallback fired
    assert chosen[0] != (2, 0) or chosen[1] != (2, 0)  # not just the first candidate
    assert_allclose(est.bound_, min(est.fold_results_["bound"].mean(), 1.0), rtol=1e-15)


def test_candidates_frame_and_chosen_candidate(several):
    X, y, splits, est, by_fold = several
    frame = est.candidates_
    assert list(frame.columns) == [
        "n_buckets",
        "shift",
        "fold0_bound",
        "fold1_bound",
        "mean_bound",
    ]
    candidates = list(by_fold[0])
    assert list(zip(frame["n_buckets"], frame["shift"])) == candidates
    for k, hand in enumerate(by_fold):
        assert_allclose(
            frame[f"fold{k}_bound"],
            [sum(hand[c][0].values()) for c in candidates],
            rtol=1e-12,
        )
    mean = np.mean(
        [[sum(hand[c][0].values()) for c in candidates] for hand in by_fold], axis=0
    )
    assert_allclose(frame["mean_bound"], mean, rtol=1e-12)
    assert (est.n_buckets_, est.shift_) == candidates[int(np.argmin(mean))]
    assert est.L_ == L_SEVERAL


def test_aggregate_min_takes_the_smallest_fold(several):
    X, y, splits, est, by_fold = several
    low = LipschitzBucketBound(
        noise="worst_case",
        L=L_SEVERAL,
        n_buckets=N_BUCKETS,
        n_shifts=N_SHIFTS,
        confidence_level=0.9,
        guarantee=est.guarantee,
        cv=splits,
        aggregate="min",
    ).fit(X, y)
    bounds = est.fold_results_["bound"].to_numpy()
    assert bounds[0] != bounds[1]
    k = int(np.argmin(bounds))
    assert low.bound_ == min(bounds[k], 1.0)
    assert low.terms_ == {
        name: est.fold_results_[name].iloc[k] for name in TERM_NAMES[est.guarantee]
    }
    assert low.bound_ < est.bound_
    # The folds themselves do not depend on the aggregate.
    assert_array_equal(low.fold_results_["bound"], bounds)


# ----------------------------------------------------------------------------------
# predict and score
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fine", [False, True])
def test_predict_is_the_chosen_bucketing_on_all_data(several, fine):
    X, y, splits, est, _ = several
    n_shifts = N_SHIFTS
    if fine:  # buckets of 1/64 or finer: empty ones in the sparse gap
        n_shifts = 3
        est = LipschitzBucketBound(
            noise="worst_case",
            L=L_SEVERAL,
            n_buckets=[64, 100],
            n_shifts=n_shifts,
            cv=splits,
            guarantee=est.guarantee,
        ).fit(X, y)
    B, r = est.n_buckets_, est.shift_
    mean = est.candidates_["mean_bound"].to_numpy()
    assert (B, r) == tuple(
        est.candidates_.iloc[int(np.argmin(mean))][["n_buckets", "shift"]]
    )
    rng = np.random.default_rng(1)
    queries = np.concatenate(
        [rng.uniform(size=150), [0.0, 1.0, 0.3, 0.55, 0.42, 0.43], X[:20]]
    )  # unsorted, ties with the data, the gap
    rows = [_smoother(X, y, q, B, r, n_shifts, L_SEVERAL) for q in queries]
    assert_array_equal(est.predict(queries), [row[0] for row in rows])
    if fine:
        assert any(row[2] for row in rows) and not all(row[2] for row in rows)
    # A predict_proba-shaped input gives the same values, and so does a pickled copy.
    assert_array_equal(
        est.predict(np.column_stack([1 - queries, queries])), [row[0] for row in rows]
    )
    assert_array_equal(
        pickle.loads(pickle.dumps(est)).predict(queries), [row[0] for row in rows]
    )


def test_score_is_the_fixed_split_bound_by_hand(several):
    X, y, splits, est, _ = several
    held_s, held_y = _gapped_sample(300, 9)
    delta = 1 - 0.9  # the full delta, shared by the 6 candidates
    hand = _all_candidates(
        X, y, held_s, N_BUCKETS, N_SHIFTS, L_SEVERAL, delta, est.guarantee
    )
    bounds = [sum(terms.values()) for terms, _, _, _ in hand.values()]
    assert min(bounds) < 1.0  # so the check is not only the clip
    assert_allclose(est.score(held_s, held_y), -min(bounds), rtol=1e-12)
    # Independent of cv and aggregate.
    other = LipschitzBucketBound(
        noise="worst_case",
        L=L_SEVERAL,
        n_buckets=N_BUCKETS,
        n_shifts=N_SHIFTS,
        confidence_level=0.9,
        cv=3,
        aggregate="min",
        random_state=4,
        guarantee=est.guarantee,
    ).fit(X, y)
    assert other.score(held_s, held_y) == est.score(held_s, held_y)


# ----------------------------------------------------------------------------------
# The Lipschitz constant, the functional form
# ----------------------------------------------------------------------------------
def _uniform_sample(n, seed=0, power=2.0):
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    return s, (rng.uniform(size=n) < s**power).astype(int)


# Each h once by default, the two modes alternating (L = b1 in both); the other four
# cells under slow.
@pytest.mark.parametrize(
    "guarantee, h",
    [
        pytest.param(
            guarantee,
            h,
            marks=() if (i + j) % 2 == 0 else pytest.mark.slow,
            id=f"{guarantee}-{h}",
        )
        for i, guarantee in enumerate(GUARANTEES)
        for j, h in enumerate([2.0**-4, 2.0**-6, 0.3, 0.5])
    ],
)
def test_L_follows_from_h(guarantee, h):
    # L = b1 in both modes (only NW's b2 from h differs between them).
    s, y = _uniform_sample(2000)
    params = dict(
        n_buckets=[4, 16, 64], n_shifts=2, guarantee=guarantee, random_state=0
    )
    est = LipschitzBucketBound(noise="worst_case", h=h, **params).fit(s, y)
    assert_allclose(est.L_, math.tanh(1 / h) / (2 * h), rtol=1e-14)
    explicit = LipschitzBucketBound(
        noise="worst_case", L=math.tanh(1 / h) / (2 * h), **params
    ).fit(s, y)
    assert explicit.bound_ == est.bound_
    assert explicit.terms_ == est.terms_
    assert explicit.candidates_.equals(est.candidates_)


def test_larger_L_gives_a_larger_smoothing_term():
    s, y = _uniform_sample(2000)
    fits = [
        LipschitzBucketBound(
            noise="worst_case", L=L, n_buckets=[8], n_shifts=1, random_state=0
        ).fit(s, y)
        for L in [0.0, 0.5, 2.0]
    ]
    # One candidate, same folds: eta_hat is the same, g grows with L.
    assert len({est.terms_["validation_mean"] for est in fits}) == 1
    smoothing = [est.terms_["smoothing_mean"] for est in fits]
    assert smoothing[0] < smoothing[1] < smoothing[2]
    # L = 0: g = 1 / (2 sqrt(n_b)), about 1 / (2 sqrt(1600 / 8)) per bucket.
    assert_allclose(smoothing[0], 0.5 / math.sqrt(200), rtol=0.05)


@pytest.mark.parametrize(
    "params",
    [
        {"L": 2.0},
        {"h": 2.0**-4, "aggregate": "min", "confidence_level": 0.8},
        {"L": 1.0, "n_buckets": [3, 5, 10], "n_shifts": 3, "cv": 3},
        {"L": 0.5, "n_buckets": 16, "n_shifts": 1},
        {"L": 2.0, "guarantee": "paper", "aggregate": "min"},
    ],
)
def test_function_equals_estimator(params):
    s, y = _uniform_sample(1500)
    expected = LipschitzBucketBound(**params, random_state=0).fit(s, y).bound_
    assert 0.0 < expected < 1.0
    assert lipschitz_bucket_bound(y, s, **params, random_state=0) == expected
    proba = np.column_stack([1 - s, s])
    assert lipschitz_bucket_bound(y, proba, **params, random_state=0) == expected


def test_splitter_forms_and_n_jobs_give_the_same_bound():
    s, y = _uniform_sample(2500)
    s[::50] = 0.5  # ties across folds
    kfold = KFold(5, shuffle=True, random_state=0)
    params = dict(L=3.0, n_buckets=[4, 32, 256], n_shifts=4)
    a = LipschitzBucketBound(**params, cv=kfold).fit(s, y)
    b = LipschitzBucketBound(**params, cv=list(kfold.split(s))).fit(s, y)
    c = LipschitzBucketBound(**params, cv=kfold, n_jobs=2).fit(s, y)
    for other in (b, c):
        assert_allclose(other.bound_, a.bound_, rtol=1e-12)
        assert_allclose(
            other.candidates_["mean_bound"], a.candidates_["mean_bound"], rtol=1e-12
        )
        assert list(other.fold_results_["n_buckets"]) == list(
            a.fold_results_["n_buckets"]
        )
        assert list(other.fold_results_["shift"]) == list(a.fold_results_["shift"])
    assert list(a.fold_results_["n_validation"]) == [500] * 5


def test_bucket_counts_are_sorted_and_deduplicated():
    s, y = _uniform_sample(1000)
    a = LipschitzBucketBound(L=1.0, n_buckets=[16, 4, 16], n_shifts=2, random_state=0)
    b = LipschitzBucketBound(L=1.0, n_buckets=(4, 16), n_shifts=2, random_state=0)
    a.fit(s, y)
    b.fit(s, y)
    assert list(a.candidates_["n_buckets"]) == [4, 4, 16, 16]
    assert list(a.candidates_["shift"]) == [0, 1, 0, 1]
    assert a.bound_ == b.bound_
    default = LipschitzBucketBound(L=1.0, random_state=0).fit(s, y)
    assert list(default.candidates_["n_buckets"].unique()) == [
        2**k for k in range(1, 13)
    ]
    assert set(default.fold_results_["n_candidates"]) == {48}


# ----------------------------------------------------------------------------------
# Against the truth and the NW bound
# ----------------------------------------------------------------------------------
def test_perturbed_problem_above_the_truth_and_the_nw_bound():
    problem = perturbed_problems()[1]
    assert problem.h == 2.0**-6
    s, y = problem.sample(200_000, np.random.default_rng(6))
    lip = LipschitzBucketBound(h=problem.h, random_state=0).fit(s, y)
    nw = NWCalibrationBound(h=problem.h, random_state=0).fit(s, y)
    ce = problem.true_ce
    assert ce < nw.bound_ < lip.bound_ < 1.0
    assert lip.bound_ < ce + 0.1  # a useful bound, not a trivial one
    assert lip.estimate_ == pytest.approx(ce, abs=0.02)
    assert (lip.fold_results_["n_candidates"] == 48).all()


# ----------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, match",
    [
        ({"L": -1.0}, r"'L' parameter .* range \[0.0, inf\) .* Got -1.0"),
        ({"L": 1.0, "h": 0.1}, r"Give either L .* not both; got L=1.0, h=0.1"),
        ({}, r"needs the Lipschitz constant .* give L .* or h .* got L=None, h=None"),
        ({"h": 0.0}, r"'h' parameter .* range \(0.0, inf\) .* Got 0.0"),
        ({"h": -0.5}, r"'h' parameter .* Got -0.5"),
        ({"L": 1.0, "n_buckets": 0}, r"'n_buckets' parameter .* Got 0 instead"),
        ({"L": 1.0, "n_buckets": []}, r"n_buckets must be .* non-empty .*; got \[\]"),
        (
            {"L": 1.0, "n_buckets": [2, 0]},
            r"n_buckets must be .* positive ints; got \[2, 0\]",
        ),
        (
            {"L": 1.0, "n_buckets": [2.5]},
            r"n_buckets must be .* positive ints; got \[2.5\]",
        ),
        ({"L": 1.0, "n_buckets": "abc"}, r"'n_buckets' parameter .* Got 'abc'"),
        ({"L": 1.0, "n_shifts": 0}, r"'n_shifts' parameter .* range \[1, inf\). Got 0"),
        (
            {"L": 1.0, "noise": "bernstein"},
            r"'noise' parameter .* \{.*'adaptive'.*\}.* Got 'bernstein'",
        ),
    ],
)
def test_invalid_parameters_raise_and_do_not_mutate(params, match):
    s, y = _uniform_sample(200)
    s_copy, y_copy = s.copy(), y.copy()
    est = LipschitzBucketBound(**params)
    with pytest.raises(ValueError, match=match):
        est.fit(s, y)
    with pytest.raises(ValueError, match=match):
        lipschitz_bucket_bound(y, s, **params)
    assert not hasattr(est, "bound_")
    assert est.get_params()["n_buckets"] == params.get("n_buckets")  # unchanged
    np.testing.assert_array_equal(s, s_copy)
    np.testing.assert_array_equal(y, y_copy)


@pytest.mark.parametrize("large", [{"L": 2.0**40}, {"L": sech_lipschitz(2.0**-41)}])
def test_largest_lipschitz_constant_gives_the_same_finite_bound(large):
    # Every query is tied with all training scores of its bucket, so g = 1/(2 sqrt(n_b))
    # whatever L: the largest accepted L must give the bound of L = 1 (no inf * 0).
    s = np.repeat([0.25, 0.75], 50)
    y = np.tile([0, 1], 50)
    params = dict(n_buckets=[4], n_shifts=1, cv=2, random_state=0)
    ref = LipschitzBucketBound(L=1.0, **params).fit(s, y)
    est = LipschitzBucketBound(**large, **params).fit(s, y)
    assert list(est.terms_) == TERM_NAMES["high_probability"]
    for name in est.terms_:
        assert_allclose(est.terms_[name], ref.terms_[name], rtol=1e-12, err_msg=name)
    assert est.bound_ == ref.bound_
    assert_allclose(est.score(s, y), ref.score(s, y), rtol=1e-12)
    # Through h, these tied scores cannot be perturbed ones: rejected.
    with pytest.raises(ValueError, match="50 of the 100 scores equal 0.25"):
        LipschitzBucketBound(h=2.0**-41, **params).fit(s, y)


@pytest.mark.parametrize(
    "huge, match",
    [
        (
            {"L": 1e200},
            r"L=1e\+200 is too large: above 1\.1e\+12 .* Use L <= 1\.1e\+12",
        ),
        (
            {"h": 1e-300},
            r"L=5e\+299 \(from h=1e-300\) is too large: .* Use h >= 2\*\*-41",
        ),
        ({"h": 2.0**-42}, r"L=2\.199e\+12 \(from h=2\.2737\d*e-13\) is too large"),
    ],
)
def test_too_large_lipschitz_constant_is_rejected(huge, match):
    # Beyond 2**40, g would rest on rounding (distances below double precision after
    # the grid sums): a clear error instead of a number.
    s, y = _uniform_sample(200)
    with pytest.raises(ValueError, match=match):
        LipschitzBucketBound(**huge).fit(s, y)
    with pytest.raises(ValueError, match=match):
        lipschitz_bucket_bound(y, s, **huge)


# ----------------------------------------------------------------------------------
# LipschitzBucketBound: the Lipschitz constant
# ----------------------------------------------------------------------------------


def test_lipschitz_h_is_a_way_to_give_L():
    X, y = scores_labels()
    h = 2**-2
    grid = LIPSCHITZ_SMALL_GRID
    from_h = LipschitzBucketBound(noise="worst_case", h=h, random_state=0, **grid).fit(
        X, y
    )
    # The docstring's L = tanh(1/h) / (2h).
    assert_allclose(from_h.L_, math.tanh(1 / h) / (2 * h), rtol=1e-12)
    given = LipschitzBucketBound(
        noise="worst_case", L=from_h.L_, random_state=0, **grid
    ).fit(X, y)
    assert_same_fit(given, from_h)
    assert (
        lipschitz_bucket_bound(y, X, h=h, noise="worst_case", random_state=0, **grid)
        == from_h.bound_
    )
    # A given constant is used as it is (as a float).
    est = LipschitzBucketBound(noise="worst_case", L=1, random_state=0, **grid).fit(
        X, y
    )
    assert type(est.L_) is float and est.L_ == 1.0
    again = LipschitzBucketBound(noise="worst_case", L=1.0, random_state=0, **grid).fit(
        X, y
    )
    assert est.bound_ == again.bound_
    # A larger constant, a larger bound (eta(s) = s**2 is 2-Lipschitz, not 1-Lipschitz:
    # L = 1 only shows that the bound grows with L).
    bounds = [
        LipschitzBucketBound(noise="worst_case", L=L, random_state=0, **grid)
        .fit(X, y)
        .bound_
        for L in (1.0, 2.0, 8.0)
    ]
    assert bounds[0] < bounds[1] < bounds[2] < 1.0


# ----------------------------------------------------------------------------------
# Lipschitz: every candidate of one fold by hand
# ----------------------------------------------------------------------------------
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
    return (*five_terms(res, g, W, delta), n_fallback)


@pytest.mark.parametrize("path", ["partition", "subset"])
def test_lipschitz_fold_by_hand(path):
    X, y, train, val = exactness_split(path)
    L, n_buckets, n_shifts, confidence_level = 2.0, [4, 16], 2, 0.9
    est = LipschitzBucketBound(
        noise="worst_case",
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
    assert list(est.terms_) == TERM_NAMES["high_probability"]
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
# noise="adaptive" (SPEC 13 with bucket weights)
# ----------------------------------------------------------------------------------
def test_adaptive_noise_is_tighter_on_a_rare_event_and_its_score_holds():
    """On the rare event (base rate 0.029, CE 0.0074) at 2e4 rows the adaptive
    upper bound is below half the worst-case one; both hold; score() on 1e5 held-out
    rows (SPEC 13 on them, their labels giving the pilot) is a certified bound there
    too, tighter than the worst case's."""
    from skcalbound.datasets import make_rare_event

    data = make_rare_event(20_000, h=2**-6, random_state=0)
    held = make_rare_event(100_000, h=2**-6, random_state=1)
    fits = {
        noise: LipschitzBucketBound(h=2**-6, noise=noise, random_state=0).fit(
            data.scores, data.labels
        )
        for noise in ("worst_case", "adaptive")
    }
    ce = data.true_ce
    assert ce < fits["adaptive"].bound_ < 0.5 * fits["worst_case"].bound_
    rows = fits["adaptive"].fold_results_
    assert (rows["n_evaluated"] >= 2).all() and (rows["n_evaluated"] <= 4).all()
    assert (rows["n_candidates"] == 48).all()
    scores = {k: -est.score(held.scores, held.labels) for k, est in fits.items()}
    assert ce < scores["adaptive"] < scores["worst_case"]
    # The held-out labels enter through the pilot (and the candidates' ranking).
    flipped = -fits["adaptive"].score(held.scores, 1 - held.labels)
    assert flipped != scores["adaptive"]


def test_paper_guarantee_ignores_noise():
    s, y = _uniform_sample(3000)
    params = dict(L=2.0, guarantee="paper", random_state=0)
    a = LipschitzBucketBound(noise="adaptive", **params).fit(s, y)
    b = LipschitzBucketBound(noise="worst_case", **params).fit(s, y)
    assert a.bound_ == b.bound_ and a.lower_bound_ == b.lower_bound_
    assert list(a.terms_) == TERM_NAMES["paper"]


def _miscalibrated_by_one_sixth():
    """``eta(s) = s**2`` on uniform scores: CE = 1/6, 2-Lipschitz."""
    rng = np.random.default_rng(0)
    s = rng.uniform(size=20_000)
    return s, rng.uniform(size=s.size) < s**2


ADAPTIVE_TEST = dict(method="lipschitz", L=2.0, noise="adaptive", random_state=0)


def test_adaptive_calibration_test_rejects_on_both_sides():
    from skcalbound import calibration_test

    s, y = _miscalibrated_by_one_sixth()
    result = calibration_test(y, s, **ADAPTIVE_TEST)
    assert result.pvalue < 1e-6 and result.reject
    assert 0.0 < result.lower_bound < 1 / 6 < result.upper_bound < 0.25
    less = calibration_test(y, s, tolerance=0.3, alternative="less", **ADAPTIVE_TEST)
    assert less.pvalue < 1e-6 and less.reject


@pytest.mark.slow
def test_adaptive_calibration_test_pvalue_is_monotone_in_the_tolerance():
    from skcalbound import calibration_test

    s, y = _miscalibrated_by_one_sixth()
    greater = [
        calibration_test(y, s, tolerance=t, **ADAPTIVE_TEST).pvalue
        for t in (0.0, 0.05, 0.1, 0.15)
    ]
    less = [
        calibration_test(y, s, tolerance=t, alternative="less", **ADAPTIVE_TEST).pvalue
        for t in (0.15, 0.2, 0.25, 0.3)
    ]
    assert greater == sorted(greater) and greater[0] < 0.05 < greater[-1]
    assert less == sorted(less, reverse=True) and less[0] > 0.05 > less[-1]
