"""MonotoneCalibrationBound (SPEC section 14): hand-checked terms, an independent
brute-force reference (plain loops and root finding), Monte Carlo coverage on
problems with exact truth, the failure on a non-monotone calibration function."""

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _kl_reference import kl_limits
from _monotone_problems import MONOTONE_PROBLEMS
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.special import expit, logit
from sklearn.base import clone
from sklearn.isotonic import IsotonicRegression
from sklearn.utils import check_random_state

from skcalbound import (
    MonotoneCalibrationBound,
    MonotonicityWarning,
    TVCalibrationBound,
    monotone_bound,
)
from skcalbound._chunks import check_random_seed
from skcalbound._monotone_method import sorted_rows
from skcalbound._surrogates._band import (
    Band,
    BandFit,
    band_interval,
    gap_envelope,
    maurer_pontil_term,
    n_windows,
    window_lengths,
    window_starts,
)
from skcalbound._surrogates._dkw import dkw_epsilon, dkw_positions, quantile_transfer
from skcalbound.datasets import make_oscillating


def gap_envelopes(sorted_scores, fit):
    """``(G_plus, G_minus)`` of ``gap_envelope``, both sides."""
    return gap_envelope(sorted_scores, fit, "plus"), gap_envelope(
        sorted_scores, fit, "minus"
    )


# ----------------------------------------------------------------- the reference


def _ref_windows(n):
    """Every window ``(a, ell)`` of SPEC 14 step 2, and the number of lengths."""
    lengths, k, ell = [], 0, 1
    while True:
        while ell * ell < 1024 * 2**k:  # the smallest ell with ell >= sqrt(1024 2^k)
            ell += 1
        if ell >= n:
            break
        lengths.append(ell)
        k += 1
    lengths.append(n)
    windows = []
    for ell in lengths:
        D = max(1, ell // 4)
        starts, a = [], 0
        while a <= n - ell:
            starts.append(a)
            a += D
        if starts[-1] != n - ell:
            starts.append(n - ell)
        windows.append((ell, starts))
    return windows, len(lengths)


def _ref_order(s, seed):
    """The order of SPEC 14 step 1 as the package draws it, by loops: a stable sort,
    then the rows of every tie block ordered by ranks, a uniform permutation of all
    tied positions drawn from ``seed``."""
    order = list(np.argsort(s, kind="stable"))
    xs = [s[i] for i in order]
    n = len(xs)
    tied = [
        j
        for j in range(n)
        if (j > 0 and xs[j] == xs[j - 1]) or (j < n - 1 and xs[j] == xs[j + 1])
    ]
    if not tied:
        return np.array(order)
    rank = dict(zip(tied, np.random.default_rng(seed).permutation(len(tied))))
    blocks = {}
    for j in tied:
        blocks.setdefault(xs[j], []).append(j)
    new = list(order)
    for members in blocks.values():
        for j, source in zip(members, sorted(members, key=rank.get)):
            new[j] = order[source]
    return np.array(new)


def _reference(xs, ys, delta):
    """SPEC 14 steps 2–6 by loops: ``(L, U)`` as functions, the unclipped upper and
    lower bounds. ``xs`` sorted, ``ys`` in the same order."""
    n = len(xs)
    d1 = d2 = delta / 2
    windows, J = _ref_windows(n)
    first, last, his, los = [], [], [], []
    for ell, starts in windows:
        c = math.log(2 * J * len(starts) / d1)
        for a in starts:
            lo, hi = kl_limits(int(sum(ys[a : a + ell])), ell, c)
            first.append(xs[a])
            last.append(xs[a + ell - 1])
            his.append(hi)
            los.append(lo)
    first, last = np.array(first), np.array(last)
    his, los = np.array(his), np.array(los)

    def U(x):
        return float(np.min(his[first >= x], initial=1.0))

    def L(x):
        return float(np.max(los[last <= x], initial=0.0))

    xe = [0.0, *xs, 1.0]
    g_plus, g_minus = [], []
    for i in range(n + 1):
        # G+ taken at least 0 too (only a crossing band can make it negative).
        g_plus.append(max(0.0, xe[i + 1] - L(xe[i]), U(xe[i + 1]) - xe[i]))
        g_minus.append(max(0.0, xe[i] - U(xe[i + 1]), L(xe[i]) - xe[i + 1]))
    eps = math.sqrt(math.log(2 / d2) / (2 * n))
    K = math.ceil(n * eps)
    upper = lower = 0.0
    for j in range(1, n + 1):
        I = range(max(0, j - K), min(n, j + K - 1) + 1)
        upper += max(g_plus[i] for i in I)
        lower += min(g_minus[i] for i in I)
    return L, U, upper / n, lower / n, len(first)


def _rows(n, seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        s = rng.beta(2, 5, n)
        y = rng.uniform(size=n) < expit(1.3 * logit(s) + 0.2)
    elif kind == "atoms":  # ties: 7 atoms and a continuous part
        atoms = np.array([0.0, 0.1, 0.25, 0.4, 0.6, 0.85, 1.0])
        s = np.where(
            rng.uniform(size=n) < 0.7, rng.choice(atoms, n), rng.uniform(size=n)
        )
        y = rng.uniform(size=n) < 0.1 + 0.8 * s
    else:  # steep: the band is narrow somewhere
        s = rng.uniform(size=n)
        y = rng.uniform(size=n) < np.where(s < 0.5, 0.05, 0.95)
    return s, y.astype(np.int64)


# ------------------------------------------------------------- hand-checked terms


def test_window_lengths_are_exact_integers():
    assert window_lengths(10**4)[:8] == [32, 46, 64, 91, 128, 182, 256, 363]
    assert window_lengths(10**4)[-1] == 10**4
    assert 65 not in window_lengths(10**6)  # not ceil(32 * sqrt(2)**2) in floats
    lengths = window_lengths(10**7)
    for k, ell in enumerate(lengths[:-1]):
        assert (ell - 1) ** 2 < 1024 * 2**k <= ell**2
    assert window_lengths(32) == [32]
    assert window_lengths(33) == [32, 33]
    assert window_lengths(5) == [5]


def test_window_starts_step_a_quarter_and_end_flush():
    assert_array_equal(window_starts(100, 32), [0, 8, 16, 24, 32, 40, 48, 56, 64, 68])
    assert_array_equal(window_starts(96, 32), [0, 8, 16, 24, 32, 40, 48, 56, 64])
    assert_array_equal(window_starts(5, 5), [0])
    assert_array_equal(window_starts(6, 3), [0, 1, 2, 3])  # D = max(1, 3 // 4)
    # Their number without building them (the band's budget reads it).
    for n in (5, 6, 96, 100, 1000, 12345):
        for ell in window_lengths(n):
            assert n_windows(n, ell) == window_starts(n, ell).shape[0], (n, ell)


def test_quantile_transfer_by_hand():
    # n = 4, delta2 = 0.5: eps = sqrt(ln 4 / 8) = 0.416, K = ceil(1.66) = 2, so
    # I_j = [j - 2, j + 1] within [0, 4].
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    K = dkw_positions(4, dkw_epsilon(4, 0.5))
    assert K == 2
    upper, lower = quantile_transfer(g, g[::-1].copy(), K)
    assert upper == pytest.approx((3 + 4 + 5 + 5) / 4)
    assert lower == pytest.approx((3 + 2 + 1 + 1) / 4)
    # A K larger than n: every j sees every gap.
    K = dkw_positions(4, dkw_epsilon(4, 1e-9))
    assert K > 4
    upper, lower = quantile_transfer(g, g[::-1].copy(), K)
    assert (upper, lower) == (5.0, 1.0)


def test_gap_envelopes_by_hand():
    xs = np.array([0.2, 0.5, 0.5, 0.9])
    band = Band(
        scores=np.array([0.2, 0.5, 0.9]),
        lower=np.array([0.1, 0.3, 0.6]),
        upper=np.array([0.4, 0.7, 0.95]),
    )
    fit = BandFit(
        band, np.array([0.1, 0.3, 0.3, 0.6]), np.array([0.4, 0.7, 0.7, 0.95]), 0
    )
    g_plus, g_minus = gap_envelopes(xs, fit)
    # gaps [0, .2], [.2, .5], [.5, .5], [.5, .9], [.9, 1]: L(left end), U(right end)
    # L(0) = 0; U(1) = 1.
    assert_allclose(
        g_plus,
        [
            max(0.2 - 0.0, 0.4 - 0.0),
            max(0.5 - 0.1, 0.7 - 0.2),
            max(0.5 - 0.3, 0.7 - 0.5),
            max(0.9 - 0.3, 0.95 - 0.5),
            max(1.0 - 0.6, 1.0 - 0.9),
        ],
    )
    assert_allclose(
        g_minus,
        [0.0, max(0, 0.2 - 0.7, 0.1 - 0.5), max(0, 0.5 - 0.7, 0.3 - 0.5), 0.0, 0.0],
    )
    # The step functions between and beyond the scores (SPEC 14 step 4).
    x = np.array([0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.95, 1.0])
    assert_allclose(band.lower_at(x), [0, 0, 0.1, 0.1, 0.3, 0.3, 0.6, 0.6, 0.6])
    assert_allclose(band.upper_at(x), [0.4, 0.4, 0.4, 0.7, 0.7, 0.95, 0.95, 1, 1])


def test_one_window_sample_by_hand():
    # n = 5 < 32: one window, all rows; c = ln(2 / delta1); U = hi up to x_1, then 1;
    # L = 0 below x_5, then lo. delta = 0.5: eps = sqrt(ln 8 / 10), K = 3.
    xs = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    ys = np.array([0, 0, 1, 0, 1])
    lo, hi = kl_limits(2, 5, math.log(2 / 0.25))
    out = band_interval(xs, ys, 0.5)
    assert_allclose(out.fit.upper, [hi, 1, 1, 1, 1], atol=1e-11)
    assert_allclose(out.fit.lower, [0, 0, 0, 0, lo], atol=1e-11)
    g_plus = [hi, 0.9, 0.8, 0.7, 0.6, 1 - lo]  # gaps 0..5
    windows = [(0, 3), (0, 4), (0, 5), (1, 5), (2, 5)]  # I_j, j = 1..5
    expected = np.mean([max(g_plus[a : b + 1]) for a, b in windows])
    assert out.upper == pytest.approx(expected, abs=1e-11)
    assert out.lower == 0.0
    assert out.terms["n_windows"] == 1
    band_upper = np.mean(np.maximum(xs - out.fit.lower, out.fit.upper - xs))
    assert out.terms["band_upper"] == pytest.approx(band_upper)
    assert out.terms["transfer_upper"] == pytest.approx(expected - band_upper)


def test_maurer_pontil_term_by_hand():
    assert maurer_pontil_term(0.04, 100, 0.05) == pytest.approx(
        math.sqrt(2 * 0.04 * math.log(40) / 100) + 7 * math.log(40) / (3 * 99)
    )


# ------------------------------------------------------- the brute-force reference


@pytest.mark.parametrize(
    "n, seed, kind",
    [
        (2, 4, "steep"),
        (5, 1, "atoms"),
        (33, 2, "steep"),
        (40, 0, "continuous"),
        (300, 1, "continuous"),
        (2000, 2, "continuous"),
        (2000, 3, "steep"),
        (500, 4, "atoms"),
        (2000, 5, "atoms"),
    ],
)
def test_band_and_interval_match_the_brute_force_reference(n, seed, kind):
    s, y = _rows(n, seed, kind)
    delta = 0.1
    est = MonotoneCalibrationBound(confidence_level=1 - delta, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vacuous at n = 40
        est.fit(s, y)
    order = _ref_order(s, check_random_seed(check_random_state(seed)))
    xs, ys = list(s[order]), list(y[order])
    L, U, upper, lower, n_windows = _reference(xs, ys, delta)
    queries = np.unique(np.concatenate([s, (s[1:] + s[:-1]) / 2, [0, 1e-9, 1]]))
    lo, hi = est.predict_interval(queries)
    assert_allclose(lo, [L(x) for x in queries], rtol=0, atol=1e-9)
    assert_allclose(hi, [U(x) for x in queries], rtol=0, atol=1e-9)
    assert est.bound_ == pytest.approx(min(upper, 1.0), abs=1e-9)
    assert est.lower_bound_ == pytest.approx(max(lower, 0.0), abs=1e-9)
    assert est.terms_["n_windows"] == n_windows
    terms = est.terms_
    assert terms["band_upper"] + terms["transfer_upper"] == pytest.approx(upper)
    assert terms["band_lower"] + terms["transfer_lower"] == pytest.approx(lower)
    assert est.fold_results_.shape[0] == 1 and est.n_splits_ == 1


def test_tie_order_comes_from_the_permutation_not_the_data_order():
    # Labels sorted inside every tie block (data grouped by class): a stable sort
    # alone would keep the negatives first in each block, which the proof does not
    # allow. The rows are shuffled inside the blocks, by random_state.
    rng = np.random.default_rng(0)
    s = np.repeat([0.2, 0.4, 0.6, 0.8], 250)
    y = np.concatenate([np.sort(rng.uniform(size=250) < p) for p in s[::250]])
    y = y.astype(np.int64)
    rows = sorted_rows(s, y, check_random_seed(check_random_state(0)))
    assert_array_equal(rows.scores, s)
    assert not np.array_equal(rows.labels, y)
    assert_array_equal(np.sort(rows.order), np.arange(s.shape[0]))
    assert_array_equal(rows.labels, y[rows.order])
    bands = {
        MonotoneCalibrationBound(random_state=r).fit(s, y).band_.upper.tobytes()
        for r in range(4)
    }
    assert len(bands) > 1  # another random_state, another (valid) order


def test_tie_order_is_uniform_and_independent_across_blocks():
    # Blocks of 3 and 2 tied rows: over 2400 seeds, the 3! * 2! joint orders are
    # equally frequent (chi-square), as after a full permutation and a stable sort.
    s = np.array([0.5, 0.7, 0.5, 0.7, 0.5, 0.1])
    y = np.zeros(6, dtype=np.int64)
    counts = {}
    for seed in range(2400):
        order = tuple(sorted_rows(s, y, seed).order)
        counts[order] = counts.get(order, 0) + 1
    assert len(counts) == 12
    assert all(o[0] == 5 for o in counts)  # the untied row first, always
    assert stats.chisquare(list(counts.values())).pvalue > 1e-4


# --------------------------------------------------------------------- estimator


def test_predict_is_the_isotonic_fit_clipped_into_the_band():
    s, y = _rows(3000, 7, "atoms")
    est = MonotoneCalibrationBound(random_state=0).fit(s, y)
    iso = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(s, y)
    x = np.linspace(0, 1, 501)
    lo, hi = est.predict_interval(x)
    assert_allclose(est.predict(x), np.clip(iso.predict(x), lo, hi), atol=1e-12)
    assert np.all(lo <= hi)
    # estimate_ is every bound's estimate (the same rows and random_state).
    tv = TVCalibrationBound(random_state=0).fit(s, y)
    assert est.estimate_ == tv.estimate_


def test_one_liner_returns_the_estimators_bound():
    s, y = _rows(1500, 8, "continuous")
    labels = np.where(y == 1, "yes", "no")
    est = MonotoneCalibrationBound(random_state=3, pos_label="yes").fit(s, labels)
    assert monotone_bound(labels, s, pos_label="yes", random_state=3) == est.bound_


def test_fitted_state_pickles_and_refits_identically():
    s, y = _rows(1000, 9, "atoms")
    est = MonotoneCalibrationBound(random_state=1).fit(s, y)
    again = pickle.loads(pickle.dumps(est))
    assert_array_equal(again.predict(s), est.predict(s))
    assert_array_equal(again.band_.upper, est.band_.upper)
    refit = MonotoneCalibrationBound(random_state=1).fit(s, y)
    assert refit.bound_ == est.bound_ and refit.lower_bound_ == est.lower_bound_
    assert refit.certificate_["bound"] == est.bound_


def test_cross_fitted_folds_follow_spec_14_2():
    # Tie-free, so the training bands do not depend on the tie order.
    s, y = _rows(2000, 10, "continuous")
    idx = np.random.default_rng(0).permutation(2000)
    splits = [(idx[1000:], idx[:1000]), (idx[:1000], idx[1000:])]
    delta = 0.1
    est = MonotoneCalibrationBound(confidence_level=1 - delta, cv=splits).fit(s, y)
    assert est.n_splits_ == 2
    frame = est.fold_results_
    for k, (train, validation) in enumerate(splits):
        order = np.argsort(s[train])
        fit = band_interval(s[train][order], y[train][order], delta / 2).fit
        x = s[validation]
        lo, hi = fit.band.lower_at(x), fit.band.upper_at(x)
        h_plus = np.maximum(x - lo, hi - x)
        h_minus = np.maximum(np.maximum(x - hi, lo - x), 0)
        d = delta / (4 * 2)
        mp = lambda z: (
            math.sqrt(2 * np.var(z, ddof=1) * math.log(2 / d) / 1000)
            + (7 * math.log(2 / d) / (3 * 999))
        )
        assert frame["bound"][k] == pytest.approx(h_plus.mean() + mp(h_plus))
        assert frame["lower_bound"][k] == pytest.approx(h_minus.mean() - mp(h_minus))
    assert est.bound_ == pytest.approx(min(frame["bound"].mean(), 1))
    est_min = MonotoneCalibrationBound(
        confidence_level=1 - delta, cv=splits, aggregate="min"
    ).fit(s, y)
    assert est_min.bound_ == pytest.approx(frame["bound"].min())


def test_score_is_the_fixed_split_formula_at_the_full_level():
    s, y = _rows(3000, 11, "continuous")
    est = MonotoneCalibrationBound(random_state=0).fit(s[:2000], y[:2000])
    x = s[2000:]
    lo, hi = est.predict_interval(x)
    h_plus = np.maximum(x - lo, hi - x)
    d = 0.05 / 4
    mp = math.sqrt(2 * np.var(h_plus, ddof=1) * math.log(2 / d) / 1000) + 7 * math.log(
        2 / d
    ) / (3 * 999)
    assert est.score(x, y[2000:]) == pytest.approx(-(h_plus.mean() + mp))


def test_bad_parameters_and_inputs_are_errors():
    s, y = _rows(200, 12, "continuous")
    with pytest.raises(ValueError, match="window_bound"):
        MonotoneCalibrationBound(window_bound="exact").fit(s, y)
    with pytest.raises(ValueError, match="confidence_level"):
        MonotoneCalibrationBound(confidence_level=1.0).fit(s, y)
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        MonotoneCalibrationBound().fit(s + 1, y)
    with pytest.raises(ValueError, match="with cv set needs all the rows in memory"):
        MonotoneCalibrationBound(cv=3).fit_chunks([(y, s)])
    with pytest.raises(ValueError, match="at least 2"):
        MonotoneCalibrationBound(cv=[(np.arange(1, 200), np.array([0]))]).fit(s, y)


# ----------------------------------------------------- a non-monotone calibration


def test_oscillating_calibration_breaks_the_band_and_the_warning_says_so():
    # eta(s) = s + 0.15 sin(80 pi s): far from monotone. At 10**4 rows the upper
    # bound falls below the true CE in most samples (the assumption is false);
    # at 10**5 the band crosses and the estimator warns.
    misses = 0
    for seed in range(4):
        data = make_oscillating(10**4, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MonotonicityWarning)
            est = MonotoneCalibrationBound(confidence_level=0.9, random_state=0)
            misses += est.fit(data.scores, data.labels).bound_ < data.true_ce
    assert misses >= 3
    data = make_oscillating(10**5, random_state=0)
    with pytest.warns(MonotonicityWarning, match="TVCalibrationBound"):
        est = MonotoneCalibrationBound(random_state=0).fit(data.scores, data.labels)
    assert est.monotonicity_rejected_
    assert np.any(est.band_.lower > est.band_.upper)
    assert 0.0 <= est.bound_ <= 1.0


def test_monotone_data_do_not_warn():
    s, y = _rows(20_000, 13, "continuous")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MonotonicityWarning)
        est = MonotoneCalibrationBound(random_state=0).fit(s, y)
    assert not est.monotonicity_rejected_


# --------------------------------------------------------------------- coverage


PROBLEMS = MONOTONE_PROBLEMS


def _misses(problem, level, n, repeats, seed):
    truth = problem.true_ce
    rng = np.random.default_rng(seed)
    upper = lower = 0
    for _ in range(repeats):
        s, y = problem.sample(n, rng)
        rows = sorted_rows(s, y, int(rng.integers(2**31)))
        out = band_interval(rows.scores, rows.labels, 1 - level)
        upper += min(out.upper, 1.0) < truth
        lower += max(out.lower, 0.0) > truth
    return upper, lower


def test_truths_are_exact():
    assert PROBLEMS["calibrated"].true_ce == pytest.approx(0.0, abs=1e-9)
    assert PROBLEMS["point mass"].true_ce == pytest.approx(0.4)
    assert PROBLEMS["atoms with ties"].true_ce == pytest.approx(
        0.2 * 0.03 + 0.3 * 0.05 + 0.2 * 0.1 + 0.2 * 0.05 + 0.1 * 0.02
    )
    assert PROBLEMS["0.5% base rate"].true_ce == pytest.approx(0.005)
    # Quarters with eta = 0.1, 0.3, 0.5, 0.7: integrals of |s - eta| of
    # (0.1**2 + 0.15**2) / 2, (0.05**2 + 0.2**2) / 2, 0.25**2 / 2 and
    # (0.3**2 - 0.05**2) / 2.
    assert PROBLEMS["step"].true_ce == pytest.approx(0.1125)


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_coverage_small(level):
    # Few repeats (the band is conservative: misses are rare far below the level),
    # so the check is against a generous binomial quantile; the slow test has 500.
    repeats = 40
    limit = stats.binom.ppf(0.999, repeats, 1 - level)
    for k, (name, problem) in enumerate(PROBLEMS.items()):
        upper, lower = _misses(problem, level, 500, repeats, seed=k)
        assert upper <= limit and lower <= limit, (name, upper, lower)


@pytest.mark.slow
@pytest.mark.parametrize("level", [0.9, 0.95])
@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_coverage(name, level):
    repeats = 500
    upper, lower = _misses(
        PROBLEMS[name], level, 1000, repeats, seed=sorted(PROBLEMS).index(name)
    )
    # Misses on either side at most the binomial 99.9% quantile at the nominal rate.
    limit = stats.binom.ppf(0.999, repeats, 1 - level)
    print(f"{name} at {level}: {upper} upper and {lower} lower misses in {repeats}")
    assert upper <= limit and lower <= limit


def test_narrower_than_tv_on_the_logistic_problem():
    s, y = _rows(10**4, 14, "continuous")
    band = MonotoneCalibrationBound(random_state=0).fit(s, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The comparison: TV's denoising bound (the cell bound, TV's
        # default, is narrower: 0.195 wide here against the band's 0.128).
        tv = TVCalibrationBound(method="denoise", random_state=0).fit(s, y)
    assert band.bound_ - band.lower_bound_ < 0.5 * (tv.bound_ - tv.lower_bound_)


def test_inputs_are_not_mutated_and_every_accepted_form_gives_the_same_bound():
    s, y = _rows(1500, 15, "atoms")
    s_copy, y_copy = s.copy(), y.copy()
    est = MonotoneCalibrationBound(random_state=2)
    assert est.fit(s, y) is est
    assert_array_equal(s, s_copy)
    assert_array_equal(y, y_copy)
    read_only = s.copy()
    read_only.flags.writeable = False
    forms = [
        read_only,
        s.reshape(-1, 1),
        np.column_stack([1 - s, s]),
        np.asfortranarray(np.column_stack([1 - s, s])),
        pd.Series(s),
        s.tolist(),
    ]
    for X in forms:
        other = clone(est).fit(X, y)
        assert other.bound_ == est.bound_ and other.lower_bound_ == est.lower_bound_
    assert_array_equal(s, s_copy)
    assert clone(est).fit(s, y.astype(bool)).bound_ == est.bound_


def test_crossing_is_read_at_the_scores():
    # L(0.5) = 0.6 > U(0.5) = 0.55: the band crosses at 0.5 (and nowhere else).
    band = Band(np.array([0.2, 0.5]), np.array([0.1, 0.6]), np.array([0.3, 0.55]))
    assert band.crossed
    x = np.linspace(0, 1, 101)
    assert np.flatnonzero(band.lower_at(x) > band.upper_at(x)).tolist() == [50]
    ok = Band(np.array([0.2, 0.5]), np.array([0.1, 0.5]), np.array([0.3, 0.55]))
    assert not ok.crossed
    assert not np.any(ok.lower_at(x) > ok.upper_at(x))


def test_identity_attributes_make_it_a_bound_like_the_others():
    # The registry finds a bound by its name: the scorers, calibration_test,
    # bounds_by_group, the display and the command line read it there.
    from skcalbound._base import in_expectation_only
    from skcalbound._registry import bound_class, bound_name

    assert bound_class("monotone") is MonotoneCalibrationBound
    assert bound_name(MonotoneCalibrationBound()) == "monotone"
    assert not in_expectation_only(MonotoneCalibrationBound, "paper")
    assert MonotoneCalibrationBound.smoothness_params == ()  # no h to read
    assert MonotoneCalibrationBound.assumption_params == ()
    est = MonotoneCalibrationBound(random_state=0).fit(
        [0.1, 0.2, 0.8, 0.9], [0, 1, 0, 1]
    )
    assert est.result_.guarantee == "high_probability"
    assert est.certificate_["guarantee"] == "high_probability"
    assert est.certificate_["method"] == "MonotoneCalibrationBound"


# ------------------------------------------------- one DKW transfer for both bounds


def _pinned_data(kind, n):
    rng = np.random.default_rng(5)
    if kind == "continuous":
        s = rng.beta(2, 5, n)
        y = rng.uniform(size=n) < expit(1.3 * logit(s) + 0.2)
    elif kind == "atoms":
        atoms = [0.0, 0.1, 0.4, 0.85, 1.0]
        s = np.where(
            rng.uniform(size=n) < 0.7, rng.choice(atoms, n), rng.uniform(size=n)
        )
        y = rng.uniform(size=n) < 0.1 + 0.8 * s
    else:
        s = np.full(n, 0.9)
        y = rng.uniform(size=n) < 0.5
    return s, y.astype(np.int64)


# (band upper, band lower, cells upper, cells lower) as float.hex, printed by the
# code before the band and the cell bound shared skcalbound/_surrogates/_dkw.py.
PINNED = {
    ("continuous", 3000): (
        "0x1.7c31c993dee3dp-3",
        "0x0.0p+0",
        "0x1.000bea6ef7485p-2",
        "0x0.0p+0",
    ),
    ("atoms", 3000): (
        "0x1.d09ba5f7b6150p-3",
        "0x1.b28f4bbf34ac6p-7",
        "0x1.6620649628b8ep-2",
        "0x0.0p+0",
    ),
    ("point", 700): (
        "0x1.da23d8340147ep-2",
        "0x1.0a0f6c1ae9866p-2",
        "0x1.05e0cebef03a7p-1",
        "0x1.aebe5dc27e676p-3",
    ),
    ("continuous", 200000): (
        "0x1.16fed6b3ef3c5p-4",
        "0x1.454bdfbd528aap-9",
        "0x1.410418044574cp-4",
        "0x0.0p+0",
    ),
}


@pytest.mark.parametrize("kind, n", sorted(PINNED))
def test_shared_transfer_leaves_both_bounds_unchanged(kind, n):
    # Pinned on the machine that made them (to the bit there); compared to 1e-13 so
    # that another CPU's last-digit rounding (vectorised sums) does not fail it.
    s, y = _pinned_data(kind, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        band = MonotoneCalibrationBound(random_state=0).fit(s, y)
        cells = TVCalibrationBound(method="cells", V=0.7, random_state=0).fit(s, y)
    got = (band.bound_, band.lower_bound_, cells.bound_, cells.lower_bound_)
    expected = [float.fromhex(v) for v in PINNED[kind, n]]
    assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_shared_transfer_equals_both_former_implementations():
    # The cell bound's former transfer padded with -inf/+inf (mode "constant"), the
    # band's with the end values (mode "nearest", size clipped): the same extrema.
    from scipy.ndimage import maximum_filter1d, minimum_filter1d

    rng = np.random.default_rng(0)
    for n, K in [(1, 1), (6, 2), (50, 3), (50, 60), (999, 40)]:
        g_plus, g_minus = rng.uniform(size=n + 1), rng.uniform(size=n + 1)
        upper, lower = quantile_transfer(g_plus, g_minus, K)
        old = maximum_filter1d(g_plus, 2 * K, mode="constant", cval=-np.inf)[1:]
        assert upper == float(np.mean(old))
        old = minimum_filter1d(g_minus, 2 * K, mode="constant", cval=np.inf)[1:]
        assert lower == float(np.mean(old))
    # K: the cell bound rounded ceil(n eps), the band ceil(n eps (1 + 1e-12)); they
    # differ only where n eps is within 1e-12 (relative) below an integer.
    for n in [10, 200, 5000, 10**6, 10**7]:
        for delta in [0.025, 0.05, 0.1, 0.5]:
            eps = dkw_epsilon(n, delta)
            assert dkw_positions(n, eps) == max(1, math.ceil(n * eps))
