"""SPEC 13's lemmas with bucket weights (issue 39 item 3).

The grid implementation (``LipschitzBucketBound(noise="adaptive")``,
``skcalbound._surrogates.buckets._adaptive``) against plain loops of its definition
(``grid_bias``: the own cell by Cauchy-Schwarz, the reach from cell edges, the pilot
per cell) to ``1e-12``, in memory, in chunks and per fold of the estimator; and the
exact per-point prototype (``bucket_statistics``) that measured the gain, checked
against the same plain loops with exact distances and against section 10's estimator.
"""

import math

import numpy as np
import pytest
from _adaptive_reference import adaptive_fold, lemma4_AB, psi

from skcalbound import LipschitzBucketBound
from skcalbound._sech import sech_derivative_bounds
from skcalbound._surrogates.nw._adaptive import _means, _psi, _statistics
from skcalbound._terms import adaptive_terms, high_probability_terms
from skcalbound.datasets import make_overconfident, make_rare_event

CLIP = 1e-4
CANDIDATES = tuple((2**k, r) for k in range(1, 13) for r in range(4))


def _ab(x, h):
    x = np.clip(x, 0.0, 1.0)
    return np.tanh(x / h) / h, np.tanh((1.0 - x) / h) / h


def bucket_of(s, B, r, R):
    """SPEC 5's bucket id + 1 (0 is the partial bucket below the first edge)."""
    return np.clip(np.floor(B * np.asarray(s) - r / R), -1, B - 1).astype(np.intp) + 1


def lipschitz_bias(s, mean_d, m1, M2, d, fallback, L, h):
    """Per query: ``Babs = min(1, L_v mean_b |s_i - s|)`` with ``L_v = L`` (L given)
    or ``min(L, Kbar_v / 4)`` (h-mode: ``|eta'| <= kappa1 / 4`` on the window
    ``[s - d, s + d]``, where ``kappa1 <= Kbar = A(s + d) + B(s - d)``), and SPEC 13's
    ``R_v`` (Corollary 4 with the bucket's ``m1``, ``M2``, ``d``; NaN where undefined
    or without ``h``)."""
    if h is None:
        return np.minimum(1.0, L * mean_d), np.full(np.shape(s), np.nan)
    a_hi, b_lo = _ab(s + d, h)[0], _ab(s - d, h)[1]
    k_bar = a_hi + b_lo
    babs = np.minimum(1.0, np.minimum(L, k_bar / 4.0) * mean_d)
    a0, b0 = _ab(s, h)
    kappa_bar = 2.0 * (np.maximum(a_hi, b_lo) + 0.5 * np.minimum(a_hi, b_lo)) ** 2
    rho = (a0 + b0) * np.abs(m1) + kappa_bar * _psi(k_bar * d) * M2
    ok = (rho < 0.5) & ~fallback
    return babs, np.where(ok, rho / np.where(ok, 1.0 - rho, 1.0), np.nan)


def default_bucket_pilot(train_scores, val_scores, val_labels, B):
    """Per training point: the validation labels within ``min(1 / B, 1/2)`` of its
    score plus one pseudo-observation equal to the score, clipped to ``[1e-4, 1 -
    1e-4]`` (SPEC 13's default pilot with the box of twice a bucket's half-width)."""
    radius = min(1.0 / B, 0.5)
    order = np.argsort(val_scores, kind="stable")
    sv = val_scores[order]
    yv = np.concatenate(([0.0], np.cumsum(val_labels[order], dtype=np.float64)))
    lo = np.searchsorted(sv, train_scores - radius, side="right")
    hi = np.searchsorted(sv, train_scores + radius, side="left")
    pilot = (train_scores + yv[hi] - yv[lo]) / (1.0 + hi - lo)
    return np.clip(pilot, CLIP, 1.0 - CLIP)


def bucket_statistics(s_tr, y_tr, s_v, y_v, B, r, R, L, h, pilot=None):
    """One candidate ``(B, r)`` on one fold: today's sums (SPEC 10: ``n``, the moments
    of ``r``, the mean of ``min(1, g)`` with the exact distance sum, ``C2``) and SPEC
    13's :class:`AdaptiveStatistics` with :func:`lipschitz_bias`; ``pilot`` per
    training point (default :func:`default_bucket_pilot`)."""
    if pilot is None:
        pilot = default_bucket_pilot(s_tr, s_v, y_v, B)
    order = np.argsort(s_tr, kind="stable")
    st, yt, pilot = s_tr[order], y_tr[order].astype(np.float64), pilot[order]
    m, n, nbk = st.shape[0], s_v.shape[0], B + 2
    tb = bucket_of(st, B, r, R)
    lo = np.searchsorted(tb, np.arange(nbk), side="left")
    hi = np.searchsorted(tb, np.arange(nbk), side="right")
    nb = (hi - lo).astype(np.float64)
    qb = bucket_of(s_v, B, r, R)
    fallback = nb[qb] == 0
    if fallback.any():  # the bucket of the nearest training score (ties: the lower)
        k = np.searchsorted(st, s_v[fallback])
        below, above = np.clip(k - 1, 0, m - 1), np.clip(k, 0, m - 1)
        x = s_v[fallback]
        lower = (k > 0) & ((k >= m) | (x - st[below] <= st[above] - x))
        qb = qb.copy()
        qb[fallback] = tb[np.where(lower, below, above)]
    cum = lambda x: np.concatenate(([0.0], np.cumsum(x)))  # noqa: E731
    P, Y, Pp = cum(st), cum(yt), cum(pilot)
    Pv = cum(pilot * (1.0 - pilot))
    a, b = lo[qb], hi[qb]
    n_b = nb[qb]
    eta = (Y[b] - Y[a]) / n_b
    k = np.clip(np.searchsorted(st, s_v), a, b)
    dist = s_v * (k - a) - (P[k] - P[a]) + (P[b] - P[k]) - s_v * (b - k)
    mean_d = np.maximum(dist, 0.0) / n_b
    centre = np.where(nb > 0, (P[hi] - P[lo]) / np.maximum(nb, 1.0), 0.0)
    dev = st - centre[tb]
    spread = np.bincount(tb, weights=dev * dev, minlength=nbk) / np.maximum(nb, 1.0)
    m1 = centre[qb] - s_v
    M2 = spread[qb] + m1 * m1
    d = np.maximum(s_v - st[a], st[b - 1] - s_v)
    r_v = np.abs(s_v - eta)
    served = np.bincount(qb, minlength=nbk).astype(np.float64)
    today = {
        "n": n,
        "residual_moments": (float(r_v.mean()), float(r_v.var())),
        "smoothing_mean": float(
            np.minimum(1.0, L * mean_d + 0.5 / np.sqrt(n_b)).mean()
        ),
        "sum_c_squared": float((served**2 / np.maximum(nb, 1.0)).sum() / n**2),
    }
    # SPEC 13, as skcalbound._surrogates.nw._adaptive._rows with the Lipschitz bias.
    babs, R = lipschitz_bias(s_v, mean_d, m1, M2, d, fallback, L, h)
    eta0 = (Pp[b] - Pp[a]) / n_b
    noise0 = np.sqrt(np.maximum(Pv[b] - Pv[a], 0.0)) / n_b
    choices = np.stack([babs, R * s_v, R * (1.0 - s_v)])
    branch = np.argmin(np.where(np.isnan(choices), np.inf, choices), axis=0)
    bias = np.where(branch == 1, R * eta, R * (1.0 - eta))
    bias = np.where(branch == 0, babs, bias)
    rel = np.where(np.isnan(R), np.inf, R * np.minimum(eta0, 1.0 - eta0))
    bias0 = np.minimum(babs, rel)
    inside = bias0 + noise0 < 1.0
    bhat = np.where(branch == 0, babs, np.minimum(babs, R * np.minimum(eta, 1 - eta)))
    f = 1.0 + np.where(branch > 0, R, 0.0)
    rb = r_v + bias
    totals = [
        n,
        r_v.sum(),
        r_v @ r_v,
        bias.sum(),
        rb @ rb,
        np.minimum(1.0, babs + 0.5 / np.sqrt(n_b)).sum(),
        bhat @ bhat,
        np.count_nonzero(branch > 0),
        np.minimum(1.0, bias0 + noise0).sum(),
    ]
    means, psi_nb = _means(np.array(totals, dtype=np.float64))
    # Per bucket (every training point of a bucket has the same weight 1 / n_b).
    per = lambda w, power: (  # noqa: E731
        np.bincount(qb, weights=w, minlength=nbk) / n / np.maximum(nb, 1.0) ** power
    )
    noise_part = np.where(inside, 1.0 / (2.0 * noise0 * n_b * n_b), 0.0)
    bias_part = np.where(inside & (rel < babs), R * np.sign(0.5 - eta0) / n_b, 0.0)
    gamma = per(noise_part, 0)[tb] * (1.0 - 2.0 * pilot) + per(bias_part, 0)[tb]
    stats = _statistics(
        means,
        psi_nb,
        per(np.ones(n), 1)[tb],
        per(f, 1)[tb],
        per(f * f, 2)[tb],
        gamma,
        pilot,
        yt,
        fallback.sum(),
    )
    return today, stats


def fold_bounds(s_tr, y_tr, s_v, y_v, L, h, delta, candidates=CANDIDATES, R=4):
    """Per candidate at ``delta / len(candidates)`` (the union bound of SPEC 5 and
    10): today's ``(upper, lower)`` and SPEC 13's ``adaptive_terms``."""
    share = delta / len(candidates)
    out = []
    for B, r in candidates:
        today, stats = bucket_statistics(s_tr, y_tr, s_v, y_v, B, r, R, L, h)
        terms = high_probability_terms(
            today["n"],
            today["residual_moments"],
            today["smoothing_mean"],
            today["sum_c_squared"],
            share,
        )
        upper = sum(terms.values())
        out.append(
            {
                "candidate": (B, r),
                "today": (upper, 2.0 * terms["validation_mean"] - upper),
                "adaptive": adaptive_terms(stats, share),
            }
        )
    return out


PROBLEMS = {
    "rare": lambda n, seed: make_rare_event(n, h=2**-6, random_state=seed),
    "rare_005": lambda n, seed: make_rare_event(n, b=119.5, h=2**-6, random_state=seed),
    "overconfident": lambda n, seed: make_overconfident(n, h=2**-6, random_state=seed),
}


def splits(n, n_splits=5, seed=0):
    """``(train, validation)`` index pairs of a random partition into ``n_splits``."""
    fold = np.random.default_rng(seed).permutation(n) % n_splits
    return [(np.flatnonzero(fold != k), np.flatnonzero(fold == k)) for k in range(5)]


def measure(problem, n, seed=0, confidence_level=0.95, h=2**-6):
    """Today's and SPEC 13's interval (mean over 5 folds, clipped) on ``problem``."""
    data = PROBLEMS[problem](n, seed)
    s, y = data.scores, data.labels.astype(np.int64)
    L = float(sech_derivative_bounds(h)[0])
    folds = splits(n)
    delta = (1.0 - confidence_level) / len(folds)
    today, adaptive, chosen = [], [], []
    for train, val in folds:
        rows = fold_bounds(s[train], y[train], s[val], y[val], L, h, delta)
        today.append(
            (min(x["today"][0] for x in rows), max(x["today"][1] for x in rows))
        )
        best = min(rows, key=lambda x: x["adaptive"]["upper"])
        lower = max(x["adaptive"]["lower"] for x in rows)
        adaptive.append((best["adaptive"]["upper"], lower))
        chosen.append((*best["candidate"], best["adaptive"]["route"]))
    interval = lambda pairs: (  # noqa: E731
        max(float(np.mean([p[1] for p in pairs])), 0.0),
        min(float(np.mean([p[0] for p in pairs])), 1.0),
    )
    return {
        "ce": data.true_ce,
        "today": interval(today),
        "adaptive": interval(adaptive),
        "chosen": chosen,
        "folds": folds,
        "data": data,
    }


# -- the plain-loop reference ------------------------------------------------------
def reference_bucket_weights(train_scores, B, r, R):
    """``(weights, is_fallback)`` of candidate ``(B, r)`` by plain loops (SPEC 5)."""
    ts = [float(x) for x in train_scores]

    def bucket(s):
        return min(max(math.floor(B * s - r / R), -1), B - 1)

    def is_fallback(s):
        return not any(bucket(x) == bucket(s) for x in ts)

    def weights(s):
        j = bucket(s)
        if is_fallback(s):  # the nearest training score's bucket (ties: the lower)
            gap = min(abs(x - s) for x in ts)
            j = bucket(min(x for x in ts if abs(x - s) == gap))
        inside = [1.0 if bucket(x) == j else 0.0 for x in ts]
        return [w / sum(inside) for w in inside]

    return weights, is_fallback


def _h_mode_bias(s, points, mean_d, d, L, h, fallback):
    """In h-mode, by plain loops: ``Babs = min(1, min(L, Kbar / 4) mean_d)`` and
    Corollary 4's ``R`` (None where undefined) for the weighted ``points`` ``(s_i,
    w_i)``, the distance mean ``mean_d`` and the reach ``d``."""
    m1 = sum(w * (x - s) for x, w in points)
    M2 = sum(w * (x - s) ** 2 for x, w in points)
    a_hi = lemma4_AB(min(s + d, 1.0), h)[0]
    b_lo = lemma4_AB(max(s - d, 0.0), h)[1]
    k_bar = a_hi + b_lo
    a0, b0 = lemma4_AB(s, h)
    kappa_bar = 2.0 * (max(a_hi, b_lo) + 0.5 * min(a_hi, b_lo)) ** 2
    rho = (a0 + b0) * abs(m1) + kappa_bar * psi(k_bar * d) * M2
    R = rho / (1.0 - rho) if rho < 0.5 and not fallback else None
    return min(1.0, min(L, k_bar / 4.0) * mean_d), R


def reference_bias(L, h):
    """:func:`lipschitz_bias` by plain loops, as ``adaptive_fold``'s ``bias``."""

    def bias(s, points, fallback):
        mean_d = sum(w * abs(x - s) for x, w in points)
        if h is None:
            return min(1.0, L * mean_d), None
        d = max(abs(x - s) for x, _ in points)
        return _h_mode_bias(s, points, mean_d, d, L, h, fallback)

    return bias


def _small_fold(seed):
    """60 training and 40 validation points with gaps (empty buckets: fallbacks)."""
    rng = np.random.default_rng(seed)
    s = np.concatenate([rng.uniform(0.0, 0.3, 70), rng.uniform(0.6, 0.95, 30)])
    y = (rng.uniform(size=100) < np.clip(0.8 * s + 0.05, 0, 1)).astype(np.int64)
    perm = rng.permutation(100)
    return s[perm[:60]], y[perm[:60]], s[perm[60:]], y[perm[60:]]


@pytest.mark.parametrize("h", [None, 2**-3])
@pytest.mark.parametrize("candidate", [(8, 1), (2, 3), (64, 0)])
def test_bucket_statistics_match_the_plain_loop_reference(h, candidate):
    st, yt, sv, yv = _small_fold(3)
    B, r = candidate
    L = 1.7 if h is None else float(sech_derivative_bounds(h)[0])
    pilot = default_bucket_pilot(st, sv, yv.astype(float), B)
    _, stats = bucket_statistics(st, yt, sv, yv, B, r, 4, L, h, pilot)
    weights, is_fallback = reference_bucket_weights(st, B, r, 4)
    assert any(is_fallback(s) for s in sv) == (B == 64)
    out = adaptive_fold(
        st, yt, sv, yv, weights, b1=0.0, b2=0.0, h=h, delta_fold=0.01,
        is_fallback=is_fallback, pilot=pilot, bias=reference_bias(L, h),
    )  # fmt: skip
    terms = adaptive_terms(stats, 0.01)
    for table in ("upper_terms", "lower_terms"):
        for key, value in out[table].items():
            assert terms[table][key] == pytest.approx(value, rel=1e-12, abs=1e-14)
    assert terms["upper"] == pytest.approx(out["U"], rel=1e-12)
    assert terms["lower"] == pytest.approx(out["L"], rel=1e-12, abs=1e-14)
    assert terms["route"] == out["route"]
    assert stats.n_relative == sum(k > 0 for k in out["branch"])
    if h is not None and B == 8:
        assert stats.n_relative > 0  # the relative branch is exercised


def test_today_s_form_is_the_package_s():
    """SPEC 10 from the prototype's exact distance sums against the estimator's
    (whose own-cell Cauchy-Schwarz bound is larger by parts per million)."""
    data = make_rare_event(4000, h=2**-6, random_state=1)
    s, y = data.scores, data.labels.astype(np.int64)
    folds = splits(s.shape[0])
    est = LipschitzBucketBound(h=2**-6, cv=folds).fit(s, y)
    L = float(sech_derivative_bounds(2**-6)[0])
    for (train, val), row in zip(folds, est.fold_results_.itertuples()):
        rows = fold_bounds(s[train], y[train], s[val], y[val], L, 2**-6, 0.01)
        upper = min(x["today"][0] for x in rows)
        assert upper <= row.bound <= upper * (1 + 1e-4)


def test_the_adaptive_form_is_tighter_on_a_rare_event():
    """At 10**4 rows the upper gap over CE shrinks by more than half."""
    out = measure("rare", 10_000)
    ce = out["ce"]
    assert out["adaptive"][1] - ce < 0.5 * (out["today"][1] - ce)
    assert out["adaptive"][1] > ce


# -- the grid form, against plain loops ---------------------------------------------
GRID_CELLS = 2**14  # the grid of the 48 default candidates


def _cell(x, K=GRID_CELLS):
    return min(math.floor(K * x), K - 1)


def grid_bias(L, h, K=GRID_CELLS):
    """The bias of the grid form by plain loops, as ``adaptive_fold``'s ``bias``: the
    distance sum with the query's own cell bounded by Cauchy-Schwarz (exact at a
    fallback query, whose bucket lies on one side), ``d_v`` from the edges of the
    bucket's first and last occupied cells, ``L_v`` and ``R_v`` as
    :func:`reference_bias`."""

    def bias(s, points, fallback):
        w = points[0][1]  # every point of a bucket weighs 1 / n_b
        c = _cell(s, K)
        if fallback:
            total = sum(abs(x - s) for x, _ in points)
        else:
            own = [x for x, _ in points if _cell(x, K) == c]
            total = sum(abs(x - s) for x, _ in points if _cell(x, K) != c)
            total += math.sqrt(len(own) * sum((s - x) ** 2 for x in own))
        mean_d = w * total
        if h is None:
            return min(1.0, L * mean_d), None
        low = min(_cell(x, K) for x, _ in points) / K
        high = (max(_cell(x, K) for x, _ in points) + 1) / K
        d = max(s - low, high - s)
        return _h_mode_bias(s, points, mean_d, d, L, h, fallback)

    return bias


def grid_pilot(train_scores, val_scores, val_labels, B, K=GRID_CELLS):
    """``bucket_pilot`` by plain loops, per training point: the validation labels in
    the cells whose centres lie within ``min(1/B, 1/2)`` of its cell's centre, plus
    one pseudo-observation at that centre, clipped to ``[1e-4, 1 - 1e-4]``."""
    radius = min(1.0 / B, 0.5)
    out = []
    for x in train_scores:
        c = _cell(x, K)
        near = [
            y
            for v, y in zip(val_scores, val_labels)
            if abs(_cell(v, K) - c) / K < radius
        ]
        value = (sum(near) + (c + 0.5) / K) / (len(near) + 1.0)
        out.append(min(max(value, CLIP), 1.0 - CLIP))
    return np.array(out)


def _training(st, yt, K=GRID_CELLS):
    """The :class:`Training` of the training points, with the extremes of every
    occupied cell (the fallback's)."""
    from skcalbound._surrogates.buckets._table import cell_stats

    stats = cell_stats(st, yt.astype(float), np.zeros(st.shape[0], np.intp), 1, K)
    training = stats.merged([0])
    cells = np.flatnonzero(training.count > 0)
    of = np.minimum(np.floor(st * K).astype(np.intp), K - 1)
    hi = np.array([st[of == c].max() for c in cells])
    lo = np.array([st[of == c].min() for c in cells])
    return training.with_extremes({"cells": cells, "hi": hi, "lo": lo})


def _grid_statistics(st, yt, sv, yv, B, r, L, h, pieces=1, K=GRID_CELLS):
    from skcalbound._surrogates.buckets import _adaptive

    training = _training(st, yt, K)
    cv = np.minimum(np.floor(sv * K).astype(np.intp), K - 1)
    validation = (
        np.bincount(cv, minlength=K).astype(float),
        np.bincount(cv, weights=yv.astype(float), minlength=K),
    )
    context = _adaptive.BucketContext.of(training, validation, (B, r), 4, L, h)
    parts = [_adaptive.row_sums(context, part) for part in np.array_split(sv, pieces)]
    sums = parts[0]
    for part in parts[1:]:
        sums = sums + part
    return context, _adaptive.finish(context, sums, training)


def _assert_terms_match(terms, out):
    for table in ("upper_terms", "lower_terms"):
        assert list(terms[table]) == list(out[table])
        for key, value in out[table].items():
            assert terms[table][key] == pytest.approx(value, rel=1e-12, abs=1e-14)
    assert terms["upper"] == pytest.approx(out["U"], rel=1e-12, abs=1e-14)
    assert terms["lower"] == pytest.approx(out["L"], rel=1e-12, abs=1e-14)
    assert terms["route"] == out["route"]


@pytest.mark.parametrize("pieces", [1, 3])
@pytest.mark.parametrize("h", [None, 2**-3])
@pytest.mark.parametrize("candidate", [(8, 1), (2, 3), (64, 0)])
def test_grid_form_matches_the_plain_loop_reference(h, candidate, pieces):
    """Every term of both routes, the bounds and the route, to 1e-12; in one piece
    and in three chunks merged by addition."""
    st, yt, sv, yv = _small_fold(3)
    B, r = candidate
    L = 1.7 if h is None else float(sech_derivative_bounds(h)[0])
    context, stats = _grid_statistics(st, yt, sv, yv, B, r, L, h, pieces)
    pilot = grid_pilot(st, sv, yv, B)
    cells = np.minimum(np.floor(st * GRID_CELLS).astype(np.intp), GRID_CELLS - 1)
    np.testing.assert_allclose(context.pilot[cells], pilot, rtol=1e-15)
    weights, is_fallback = reference_bucket_weights(st, B, r, 4)
    out = adaptive_fold(
        st, yt, sv, yv, weights, b1=0.0, b2=0.0, h=h, delta_fold=0.01,
        is_fallback=is_fallback, pilot=pilot, bias=grid_bias(L, h),
    )  # fmt: skip
    _assert_terms_match(adaptive_terms(stats, 0.01), out)
    assert stats.n_relative == sum(k > 0 for k in out["branch"])
    assert stats.n_fallback == sum(is_fallback(s) for s in sv)
    assert (stats.n_fallback > 0) == (B == 64)  # gaps: empty buckets fall back
    if h is not None and B == 8:
        assert stats.n_relative > 0  # the relative branch is exercised


def test_bucket_pilot_is_its_definition():
    from skcalbound._surrogates.buckets._adaptive import bucket_pilot

    st, _, sv, yv = _small_fold(5)
    K = GRID_CELLS
    cv = np.minimum(np.floor(sv * K).astype(np.intp), K - 1)
    validation = (
        np.bincount(cv, minlength=K).astype(float),
        np.bincount(cv, weights=yv.astype(float), minlength=K),
    )
    cells = np.minimum(np.floor(st * K).astype(np.intp), K - 1)
    for B in (2, 16, 4096):
        pilot = bucket_pilot(validation, B, K)
        assert np.all((pilot >= CLIP) & (pilot <= 1 - CLIP))
        np.testing.assert_allclose(pilot[cells], grid_pilot(st, sv, yv, B), rtol=1e-15)


def _two_folds(n, seed):
    rng = np.random.default_rng(seed)
    fold = rng.permutation(n) % 2
    return [(np.flatnonzero(fold != k), np.flatnonzero(fold == k)) for k in range(2)]


@pytest.mark.parametrize("mode", ["L", "h"])
def test_each_fold_of_the_estimator_is_the_reference(mode):
    """Per fold: every evaluated candidate's bound is its reference upper bound, the
    bound the smallest of them (the reported candidate's) and the lower bound the
    reported lower candidate's reference lower bound, the largest of the evaluated
    ones', each at ``delta_fold / 48``; the same in chunks."""
    data = make_overconfident(400, h=2**-3 if mode == "h" else None, random_state=4)
    s, y = data.scores, data.labels.astype(np.int64)
    folds = _two_folds(s.shape[0], 1)
    h = 2**-3 if mode == "h" else None
    L = 1.7 if h is None else float(sech_derivative_bounds(h)[0])
    params = dict(noise="adaptive", cv=folds, confidence_level=0.9)
    params.update(h=h) if h is not None else params.update(L=L)
    est = LipschitzBucketBound(**params).fit(s, y)
    delta = (1 - 0.9) / 2 / 48
    results = zip(folds, est.fold_results_.itertuples(), est.result_.folds)
    for (train, val), row, fold in results:
        st, yt, sv, yv = s[train], y[train], s[val], y[val]
        bounds = fold.extra["candidate_bounds"]
        evaluated = [
            (CANDIDATES[j], "U", bounds[j]) for j in np.flatnonzero(np.isfinite(bounds))
        ]
        assert len(evaluated) == row.n_evaluated and len(bounds) == len(CANDIDATES)
        assert row.bound == min(b for _, _, b in evaluated)
        best = CANDIDATES[int(np.argmin(bounds))]
        assert best == (row.n_buckets, row.shift)
        lower = ((row.lower_n_buckets, row.lower_shift), "L", row.lower_bound)
        lowers = []
        for (B, r), side, value in [*evaluated, lower]:
            weights, is_fallback = reference_bucket_weights(st, B, r, 4)
            out = adaptive_fold(
                st, yt, sv, yv, weights, b1=0.0, b2=0.0, h=h, delta_fold=delta,
                is_fallback=is_fallback, pilot=grid_pilot(st, sv, yv, B),
                bias=grid_bias(L, h),
            )  # fmt: skip
            assert value == pytest.approx(out[side], rel=1e-12, abs=1e-14)
            lowers.append(out["L"])
        assert row.lower_bound == pytest.approx(max(lowers), rel=1e-12, abs=1e-14)
        assert row.n_evaluated >= 2 and row.route in ("jensen", "triangle")
    # In chunks (folds drawn row by row: cv an int), the in-memory fit's numbers.
    params.update(cv=2, random_state=0)
    memory = LipschitzBucketBound(**params).fit(s, y)
    chunks = [(y[i : i + 97], s[i : i + 97]) for i in range(0, s.shape[0], 97)]
    chunked = LipschitzBucketBound(**params).fit_chunks(chunks)
    assert chunked.bound_ == pytest.approx(memory.bound_, rel=1e-12)
    assert chunked.lower_bound_ == pytest.approx(memory.lower_bound_, abs=1e-14)
    for name, value in memory.terms_.items():
        assert chunked.terms_[name] == pytest.approx(value, rel=1e-12, abs=1e-15)


def test_grid_form_matches_where_the_tangent_majorant_gives_the_lower_bound():
    """A rare event, where ``Psi_tan`` (the supergradient ``gamma`` of ``Psi_NB`` at
    the pilot, its relative part included) is below ``Psi_wc``: the lower route
    through ``gamma`` to 1e-12."""
    data = make_rare_event(800, h=2**-6, random_state=2)
    s, y = data.scores, data.labels.astype(np.int64)
    st, yt, sv, yv = s[:480], y[:480], s[480:], y[480:]
    h = 2**-6
    L = float(sech_derivative_bounds(h)[0])
    _, stats = _grid_statistics(st, yt, sv, yv, 64, 0, L, h)
    weights, is_fallback = reference_bucket_weights(st, 64, 0, 4)
    out = adaptive_fold(
        st, yt, sv, yv, weights, b1=0.0, b2=0.0, h=h, delta_fold=0.05,
        is_fallback=is_fallback, pilot=grid_pilot(st, sv, yv, 64),
        bias=grid_bias(L, h),
    )  # fmt: skip
    assert out["a_L"] == out["Psi_tan"] < out["Psi_wc"]
    _assert_terms_match(adaptive_terms(stats, 0.05), out)
    assert stats.n_relative == sum(k > 0 for k in out["branch"]) > 0
    assert any(out["relative_active"])  # gamma's relative part is exercised
