"""``TVCalibrationBound(method="cells")``: the cell bound of SPEC section 14.5.

A brute-force reference written with plain loops (independent of the vectorised
code, with its own KL limits by bisection), hand-checked pieces on tiny inputs, the
estimator's wiring, and Monte Carlo coverage on both sides (small by default, 500
repeats under ``slow``).
"""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _kl_reference import kl_limits
from scipy import stats
from sklearn.model_selection import StratifiedKFold

from skcalbound import MonotoneCalibrationBound, TVCalibrationBound, tv_bound
from skcalbound._certificate import consistency_problems
from skcalbound._cli import main
from skcalbound._surrogates._dkw import (
    dkw_epsilon,
    dkw_positions,
    quantile_transfer,
    window_extremum,
)
from skcalbound._surrogates._tv_cells import (
    block_boundaries,
    cells_bound,
    choose_blocks,
)
from skcalbound.datasets._generators import get_problem

# ---------------------------------------------------------------------------------
# The reference: SPEC 14.5 with loops.


def _reference(x, y, V, delta):
    """``(upper, lower, terms)`` of SPEC 14.5 on sorted ``x`` by loops."""
    n = len(x)
    d1 = d2 = delta / 2
    best, B = None, None
    for b in range(1, n + 1):
        f = V / b + math.sqrt(math.log(2 * b / d1) * b / (2 * n))
        if best is None or f < best:
            best, B = f, b
    # Tie blocks.
    ties = []  # (start, count)
    for j in range(n):
        if j == 0 or x[j] != x[j - 1]:
            ties.append([j, 1])
        else:
            ties[-1][1] += 1
    cuts = set()  # position after which a block ends
    running = 0
    for t, (start, count) in enumerate(ties):
        before = running
        running += count
        for m in range(1, B + 1):  # running count reaches or passes m n / B
            if before * B < m * n <= running * B:
                cuts.add(running)
        if count * B >= n:
            cuts.add(start)
            cuts.add(running)
    cuts.discard(0)
    cuts.add(n)
    ends = sorted(cuts)
    blocks, start = [], 0
    for end in ends:
        blocks.append((start, end))
        start = end
    nb = len(blocks)
    c = math.log(2 * nb / d1)
    lo, hi, block_of, largest = [], [], [0] * n, 0.0
    for b, (a, e) in enumerate(blocks):
        S = sum(y[a:e])
        limits = kl_limits(S, e - a, c)
        lo.append(limits[0])
        hi.append(limits[1])
        for j in range(a, e):
            block_of[j] = b
        if x[e - 1] > x[a]:
            largest = max(largest, (e - a) / n)
    xs = [0.0, *x, 1.0]
    bl = [0, *block_of]
    br = [*block_of, nb - 1]
    gp, gm = [], []
    for i in range(n + 1):
        a_, b_ = xs[i], xs[i + 1]
        L1, H1 = lo[bl[i]], hi[bl[i]]
        L2, H2 = lo[br[i]], hi[br[i]]
        # sup of max(x - lo, hi - x) on [a_, b_] with block b(i): at an endpoint;
        # at b_ with block b(i + 1).
        sup = max(b_ - L1, H1 - a_, b_ - L2, H2 - b_)
        # inf of dist(x, [L1, H1]) over [a_, b_]: 0 if the intervals meet.
        if b_ < L1:
            inside = L1 - b_
        elif a_ > H1:
            inside = a_ - H1
        else:
            inside = 0.0
        if b_ < L2:
            point = L2 - b_
        elif b_ > H2:
            point = b_ - H2
        else:
            point = 0.0
        gp.append(sup)
        gm.append(min(inside, point))
    eps = math.sqrt(math.log(2 / d2) / (2 * n))
    K = math.ceil(n * eps)
    up = low = 0.0
    for j in range(1, n + 1):
        window = [i for i in range(j - K, j + K) if 0 <= i <= n]
        up += max(gp[i] for i in window)
        low += min(gm[i] for i in window)
    up, low = up / n, low / n
    cu = sum(max(x[j] - lo[block_of[j]], hi[block_of[j]] - x[j]) for j in range(n)) / n
    cl = 0.0
    for j in range(n):
        L, H = lo[block_of[j]], hi[block_of[j]]
        cl += max(0.0, x[j] - H, L - x[j])
    cl /= n
    osc = V * (largest + 2 * eps)
    terms = {
        "cells_upper": cu,
        "transfer_upper": up - cu,
        "oscillation": osc,
        "cells_lower": cl,
        "transfer_lower": low - cl,
        "n_blocks": nb,
        "largest_block_mass": largest,
    }
    return up + osc, low - osc, terms


def _sorted_sample(kind, n, seed):
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        x = rng.beta(2, 5, n)
        eta = 1 / (1 + np.exp(-(1.3 * np.log(x / (1 - x)) + 0.2)))
    elif kind == "discrete":
        x = rng.choice([0.1, 0.3, 0.35, 0.6, 0.9], n, p=[0.1, 0.4, 0.1, 0.3, 0.1])
        eta = np.where(x > 0.5, 0.7, 0.2)
    else:  # atoms at 0 and 0.5 (heavy ties) and a continuous part
        x = np.where(rng.uniform(size=n) < 0.5, rng.uniform(size=n), 0.0)
        x[rng.uniform(size=n) < 0.2] = 0.5
        eta = 0.5 + 0.4 * np.sin(6 * x)
    y = (rng.uniform(size=n) < eta).astype(np.uint8)
    order = np.argsort(x, kind="stable")
    return x[order], y[order]


@pytest.mark.parametrize(
    "kind, n, V, delta",
    [
        ("continuous", 300, 1.0, 0.05),
        ("continuous", 2000, 1.0, 0.1),
        ("discrete", 1500, 0.9, 0.05),
        ("atoms", 1200, 2.5, 0.2),
        ("continuous", 40, 3.0, 0.5),
        ("discrete", 2000, 5.0, 0.05),
        ("atoms", 2000, 0.3, 0.05),
        ("continuous", 1000, 14.0, 0.01),
    ],
)
def test_matches_loop_reference(kind, n, V, delta):
    x, y = _sorted_sample(kind, n, seed=n)
    ref_up, ref_low, ref_terms = _reference(x.tolist(), y.tolist(), V, delta)
    r = cells_bound(x, y, V, delta)
    assert r.upper == pytest.approx(ref_up, abs=1e-9)
    assert r.lower == pytest.approx(ref_low, abs=1e-9)
    est = TVCalibrationBound(V=V, method="cells", confidence_level=1 - delta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x[::-1].copy(), y[::-1].copy())  # order of the rows is irrelevant
    assert est.bound_ == pytest.approx(min(1.0, ref_up), abs=1e-9)
    assert est.lower_bound_ == pytest.approx(max(0.0, ref_low), abs=1e-9)
    for name, value in ref_terms.items():
        assert est.terms_[name] == pytest.approx(value, abs=1e-9), name


# ---------------------------------------------------------------------------------
# Pieces by hand.


def test_choose_blocks_is_the_argmin():
    d1 = 0.025
    for n, V in [(4, 1.0), (1000, 1.0), (10**6, 14.4), (10**5, 0.01)]:
        f = [
            V / B + math.sqrt(math.log(2 * B / d1) * B / (2 * n))
            for B in range(1, n + 1)
        ]
        assert choose_blocks(n, V, d1) == int(np.argmin(f)) + 1
    # n = 4, V = 1, delta1 = 0.025: f(B) = 1 / B + sqrt(ln(80 B) B / 8) is 1.7401,
    # 1.6264, 1.7669, 1.9483 for B = 1 .. 4.
    assert choose_blocks(4, 1.0, d1) == 2


def test_block_boundaries_by_hand():
    # Tie blocks .1 x2, .2, .3 x3, .4, .5; B = 4 so n / B = 2. Running counts 2, 3,
    # 6, 7, 8 cross multiples of 2 after .1, .3 and .5; the ties .1 (2 >= 2) and .3
    # (3) are blocks of their own, so .2 is cut off too.
    x = np.array([0.1, 0.1, 0.2, 0.3, 0.3, 0.3, 0.4, 0.5])
    assert block_boundaries(x, 4).tolist() == [0, 2, 3, 6]
    # Continuous, n = 10, B = 3: counts cross 10/3, 20/3, 10 at 4, 7, 10.
    assert block_boundaries(np.linspace(0, 1, 10), 3).tolist() == [0, 4, 7]
    # One value: one block.
    assert block_boundaries(np.full(5, 0.3), 2).tolist() == [0]


def test_dkw_and_transfer_by_hand():
    assert dkw_epsilon(200, 0.05) == pytest.approx(math.sqrt(math.log(40) / 400))
    assert dkw_positions(200, dkw_epsilon(200, 0.05)) == 20  # 200 * 0.0960 = 19.2
    assert dkw_positions(10, 0.0001) == 1
    v = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])
    # K = 1: positions j - 1 and j; K = 2: j - 2 .. j + 1 (inside the array).
    assert window_extremum(v, 1, "max").tolist() == [3, 3, 4, 4, 5, 9, 9]
    assert window_extremum(v, 1, "min").tolist() == [3, 1, 1, 1, 1, 5, 2]
    assert window_extremum(v, 2, "max").tolist() == [3, 4, 4, 5, 9, 9, 9]
    assert window_extremum(v, 9, "min").tolist() == [1] * 7
    # K = 1: j = 1 .. n sees gaps j - 1 and j.
    gp = np.array([0.5, 0.1, 0.3, 0.2])
    gm = np.array([0.0, 0.2, 0.1, 0.4])
    up, low = quantile_transfer(gp, gm, 1)
    assert up == pytest.approx((0.5 + 0.3 + 0.3) / 3)
    assert low == pytest.approx((0.0 + 0.1 + 0.1) / 3)
    # K = 2 with clipping at both ends: j = 1 sees gaps 0..2, j = 2 gaps 0..3, j = 3
    # gaps 1..3.
    up, low = quantile_transfer(gp, gm, 2)
    assert up == pytest.approx((0.5 + 0.5 + 0.3) / 3)
    assert low == pytest.approx((0.0 + 0.0 + 0.1) / 3)


def test_point_mass_terms_by_hand():
    # n scores all 0.9: one block of one score, so p* = 2 eps (no multi-score block).
    n, delta, V = 400, 0.1, 1.0
    y = np.zeros(n, dtype=np.uint8)
    y[:200] = 1
    x = np.full(n, 0.9)
    r = cells_bound(x, y, V, delta)
    lo, hi = kl_limits(200, n, math.log(2 / 0.05))
    eps = math.sqrt(math.log(2 / 0.05) / (2 * n))
    assert (r.n_blocks, r.largest_block_mass) == (1, 0.0)
    assert r.oscillation == pytest.approx(2 * eps)
    # At every sample point h+ = max(0.9 - lo, hi - 0.9), h- = 0.9 - hi.
    assert r.cells_upper == pytest.approx(max(0.9 - lo, hi - 0.9), abs=1e-10)
    assert r.cells_lower == pytest.approx(0.9 - hi, abs=1e-10)
    # Gap 0 = [0, 0.9] has G+ = max(0.9 - lo, hi) and G- = 0 (it meets [lo, hi]);
    # gap n = [0.9, 1] has G+ = 1 - lo and G- = 0.9 - hi; the others are the point.
    K = math.ceil(n * eps)
    g_point_up, g_point_low = max(0.9 - lo, hi - 0.9), 0.9 - hi
    up = (K * max(0.9 - lo, hi) + (n - 2 * K) * g_point_up + K * (1 - lo)) / n
    low = (K * 0.0 + (n - 2 * K) * g_point_low + K * g_point_low) / n
    assert r.upper == pytest.approx(up + 2 * eps, abs=1e-10)
    assert r.lower == pytest.approx(low - 2 * eps, abs=1e-10)


# ---------------------------------------------------------------------------------
# The estimator.


def _data(n=3000, seed=0, name="parabola"):
    problem = get_problem(name)
    s, y = problem.sample(n, np.random.default_rng(seed))
    return problem, s, y


def test_estimator_attributes_and_relations():
    problem, s, y = _data()
    V = problem.assumptions["V"]
    est = TVCalibrationBound(V=V, method="cells", random_state=0).fit(s, y)
    t = est.terms_
    assert est.n_splits_ == 1 and len(est.fold_results_) == 1
    assert est.bound_ == pytest.approx(
        min(1.0, t["cells_upper"] + t["transfer_upper"] + t["oscillation"])
    )
    assert est.lower_bound_ == pytest.approx(
        max(0.0, t["cells_lower"] + t["transfer_lower"] - t["oscillation"])
    )
    assert t["transfer_upper"] >= 0 >= t["transfer_lower"]
    assert 0 <= t["cells_lower"] <= est.estimate_ <= t["cells_upper"]
    assert t["n_blocks"] >= 2 and 0 < t["largest_block_mass"] < 0.2
    # cv, aggregate and random_state play no part (the first two are said unused).
    other = TVCalibrationBound(
        V=V, method="cells", cv=3, aggregate="min", random_state=7
    )
    with pytest.warns(UserWarning, match="no folds: cv=3 and aggregate='min' are not"):
        other.fit(s, y)
    assert (other.bound_, other.lower_bound_) == (est.bound_, est.lower_bound_)
    # The functional form.
    assert tv_bound(y, s, V=V, method="cells") == est.bound_
    # The audit record is consistent, and a changed bound is caught.
    record = est.certificate_
    assert record["params"]["method"] == "cells"
    assert consistency_problems(record, []) == []
    bad = {**record, "bound": record["bound"] - 0.01}
    assert "its bound is" in " ".join(consistency_problems(bad, []))


def test_predict_is_the_block_means():
    x = np.array([0.1, 0.1, 0.2, 0.3, 0.3, 0.3, 0.4, 0.5] * 50)
    y = np.tile([1, 0, 1, 1, 0, 0, 1, 1], 50)
    est = TVCalibrationBound(method="cells").fit(x, y)
    r = cells_bound(np.sort(x), y[np.argsort(x, kind="stable")], 1.0, 0.05)
    edges, means = r.edges, r.means
    got = est.predict(np.array([0.0, 0.1, 0.15, 0.3, 0.35, 0.45, 1.0]))
    expected = means[
        np.searchsorted(edges, [0.0, 0.1, 0.15, 0.3, 0.35, 0.45, 1.0], side="right")
    ]
    assert got.tolist() == expected.tolist()
    # The tie at 0.1 has mean label 1/2 and the one at 0.3 has 1/3.
    assert est.predict(np.array([0.1]))[0] == pytest.approx(0.5)
    assert est.predict(np.array([0.3]))[0] == pytest.approx(1 / 3)


def test_ties_ordered_by_label_change_nothing():
    x = np.repeat([0.2, 0.5, 0.8], 400)
    rng = np.random.default_rng(3)
    y = (rng.uniform(size=x.shape[0]) < x).astype(int)
    by_label = np.lexsort((y, x))
    a = TVCalibrationBound(method="cells").fit(x[by_label], y[by_label])
    shuffled = rng.permutation(x.shape[0])
    b = TVCalibrationBound(method="cells").fit(x[shuffled], y[shuffled])
    assert (a.bound_, a.lower_bound_) == (b.bound_, b.lower_bound_)


def test_errors():
    _, s, y = _data(500)
    with pytest.raises(ValueError, match="guarantee='paper' is the published bound"):
        TVCalibrationBound(method="cells", guarantee="paper").fit(s, y)
    # No fixed-split bound: score is the cell bound of the held-out rows alone.
    est = TVCalibrationBound(method="cells").fit(s[:250], y[:250])
    held_out = TVCalibrationBound(method="cells").fit(s[250:], y[250:])
    assert est.bound_ != held_out.bound_
    assert est.score(s[250:], y[250:]) == -held_out.bound_
    with pytest.raises(ValueError, match="needs the whole sorted sample"):
        TVCalibrationBound(method="cells").fit_chunks([(y, s)])
    with pytest.raises(ValueError, match="method"):
        TVCalibrationBound(method="bins").fit(s, y)


def test_denoise_is_unchanged_and_auto_resolves_by_guarantee():
    # The class docstring's example, computed before method= existed (commit
    # 3fcb831): method="denoise" gives the same numbers.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=20_000)
    y = rng.uniform(size=20_000) < s**2
    d = TVCalibrationBound(method="denoise", random_state=0).fit(s, y)
    assert d.bound_ == pytest.approx(0.4334, abs=5e-4) and d.method_ == "denoise"
    # The default, method="auto", is the cell bound (narrower here)...
    a = TVCalibrationBound(random_state=0).fit(s, y)
    c = TVCalibrationBound(method="cells").fit(s, y)
    assert a.get_params()["method"] == "auto" and a.method_ == "cells"
    assert (a.bound_, a.lower_bound_) == (c.bound_, c.lower_bound_)
    assert a.bound_ < d.bound_ - 0.1
    # ... and with guarantee="paper" the paper's bound, as before the switch
    # (0.449775 on main at 12c11a0, where "denoise" was the default).
    p = TVCalibrationBound(guarantee="paper", random_state=0).fit(s, y)
    q = TVCalibrationBound(guarantee="paper", method="denoise", random_state=0)
    q.fit(s, y)
    assert p.method_ == "denoise"
    assert (p.bound_, p.lower_bound_) == (q.bound_, q.lower_bound_)
    assert p.bound_ == pytest.approx(0.4497746, abs=1e-6)


# ---------------------------------------------------------------------------------
# Coverage: both sides, against exact CE.

PROBLEMS = (
    "oscillating",
    "parabola",
    "calibrated",
    "overconfident",
    "discrete",
    "atoms",
)


def _misses(name, n, level, repeats, seed):
    problem = get_problem(name)
    V, ce = problem.assumptions["V"], problem.true_ce
    upper = lower = 0
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeats):
            s, y = problem.sample(n, rng)
            est = TVCalibrationBound(V=V, method="cells", confidence_level=level)
            est.fit(s, y)
            upper += est.bound_ < ce
            lower += est.lower_bound_ > ce
    return upper, lower


def _allowed(repeats, level):
    """The largest miss count a valid bound exceeds with probability < 1e-3."""
    return int(stats.binom.ppf(1 - 1e-3, repeats, 1 - level))


@pytest.mark.parametrize("name", ["oscillating", "parabola", "discrete"])
def test_coverage_small(name):
    upper, lower = _misses(name, 1000, 0.9, 20, seed=1)
    assert upper <= _allowed(20, 0.9) and lower <= _allowed(20, 0.9)


@pytest.mark.slow
@pytest.mark.parametrize("level", [0.9, 0.95])
@pytest.mark.parametrize("name", PROBLEMS)
def test_coverage_slow(name, level):
    upper, lower = _misses(name, 2000, level, 500, seed=2)
    print(f"{name} level {level}: misses upper {upper}, lower {lower} of 500")
    assert upper <= _allowed(500, level) and lower <= _allowed(500, level)


def test_a_false_V_is_caught():
    # The harness can see a failure: with V far below the truth (the oscillating
    # problem's eta has total variation 14.4) one block and no oscillation term
    # leave the true CE outside the interval every time.
    problem = get_problem("oscillating")
    rng = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            s, y = problem.sample(2000, rng)
            est = TVCalibrationBound(V=1e-9, method="cells").fit(s, y)
            assert est.lower_bound_ > problem.true_ce


def test_verify_recomputes_a_cells_certificate(tmp_path, capsys):
    _, s, y = _data(800, seed=4)
    data = tmp_path / "scores.csv"
    pd.DataFrame({"prob": s, "y": y}).to_csv(data, index=False)
    est = TVCalibrationBound(V=1.6, method="cells", random_state=0).fit(s, y)
    record = tmp_path / "cert.json"
    record.write_text(json.dumps(est.certificate_))
    code = main(["verify", str(record), str(data), "--scores", "prob", "--labels", "y"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("OK"), out
    assert f"recomputed bound {est.bound_:.6g}" in out
    # A record whose bound was raised is caught without a refit.
    bad = {**est.certificate_, "bound": est.bound_ + 0.05}
    record.write_text(json.dumps(bad))
    code = main(["verify", str(record), str(data), "--scores", "prob", "--labels", "y"])
    assert code != 0


def test_default_records_are_checked_as_cells():
    _, s, y = _data(800, seed=4)
    # The default (method="auto") is the cell bound: its record is checked by the
    # cell bound's rule, without a refit (random_state=None cannot be repeated).
    est = TVCalibrationBound().fit(s, y)
    record = json.loads(json.dumps(est.certificate_))
    assert record["params"]["method"] == "auto" and "oscillation" in record["terms"]
    assert consistency_problems(record, ["random_state=None"]) == []
    raised = {**record, "bound": record["bound"] + 0.05}
    (problem,) = consistency_problems(raised, ["random_state=None"])
    assert problem.startswith("its bound is")


def test_score_of_the_cell_bound_with_named_classes():
    # pos_label names the positive class: the held-out labels are read with it.
    _, s, y = _data(1000, seed=6)
    names = np.where(y == 1, "churn", "stay")
    est = TVCalibrationBound(pos_label="churn").fit(s[:500], names[:500])
    held_out = TVCalibrationBound(method="cells").fit(s[500:], y[500:])
    assert est.score(s[500:], names[500:]) == -held_out.bound_
    # A predict_proba output: the column of "churn" (sorted first) is read.
    proba = np.column_stack([s[500:], 1 - s[500:]])
    assert est.score(proba, names[500:]) == -held_out.bound_


def test_the_upper_terms_named_in_the_user_guide_add_up_to_the_bound():
    # The user guide said sum(terms_.values()) is the bound for every bound; the
    # cell bound's terms also hold the lower bound's and two counts (the sum was 25
    # with a bound of 0.21). It now names the upper terms, checked here.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=20_000)
    y = rng.uniform(size=s.size) < s**2
    tv = TVCalibrationBound(random_state=0).fit(s, y)
    t = tv.terms_
    upper = t["cells_upper"] + t["transfer_upper"] + t["oscillation"]
    assert math.isclose(tv.bound_, min(1.0, upper), rel_tol=1e-15)
    band = MonotoneCalibrationBound(random_state=0).fit(s, y)
    upper = band.terms_["band_upper"] + band.terms_["transfer_upper"]
    assert math.isclose(band.bound_, min(1.0, upper), rel_tol=1e-15)
    assert sum(tv.terms_.values()) > 1.0  # the counts: not additive as a whole


@pytest.mark.parametrize(
    "params, unused",
    [
        ({"cv": 3}, "cv=3 is not used"),
        ({"aggregate": "min"}, "aggregate='min' is not used"),
        ({"cv": 10, "aggregate": "min"}, "cv=10 and aggregate='min' are not used"),
    ],
)
def test_the_cell_bound_says_that_cv_and_aggregate_are_not_used(params, unused):
    # The cell bound has no folds: cv=3, a KFold or aggregate='min' gave the same
    # bound as the defaults without a word, and a StratifiedKFold, which every
    # cross-fitted bound refuses, was accepted.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=5000)
    y = rng.uniform(size=s.size) < s
    default = TVCalibrationBound(random_state=0).fit(s, y)
    with pytest.warns(UserWarning, match="has no folds: " + unused) as caught:
        tv = TVCalibrationBound(random_state=0, **params).fit(s, y)
    assert caught[0].filename == __file__
    assert tv.bound_ == default.bound_ and tv.n_splits_ == 1
    with pytest.raises(ValueError, match="StratifiedKFold looks at the labels"):
        TVCalibrationBound(cv=StratifiedKFold(3)).fit(s, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the defaults, and denoise's own folds
        TVCalibrationBound(random_state=0, cv=None).fit(s, y)
        TVCalibrationBound(random_state=0, method="denoise", **params).fit(s, y)
