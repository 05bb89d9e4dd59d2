"""TVCalibrationBound: every term recomputed by hand, the surrogate against brute
force, the two guarantees compared, and the order of tied scores."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import lsq_linear, minimize

from skcalbound import TVCalibrationBound, tv_bound
from skcalbound._surrogates._tv import fit_tv_surrogate


def _tiny_tied_problem():
    """40 training points: 20 zeros then 20 ones in score order, one tie at the jump.

    Scores (training): 0.01 .. 0.19 for the first 19 zeros, then a tie block at 0.30
    holding the 20th zero and the first one (zero first in data order), then
    0.41 .. 0.57 for 17 more ones, and a second tie block at 0.9 of two ones.
    """
    s_zero = np.round(np.arange(1, 20) / 100, 2)
    s_one = np.round(0.40 + np.arange(1, 18) / 100, 2)
    train_s = np.concatenate([s_zero, [0.30, 0.30], s_one, [0.9, 0.9]])
    train_y = np.concatenate([np.zeros(19), [0.0, 1.0], np.ones(17), [1.0, 1.0]])
    val_s = np.array([0.0, 0.005, 0.10, 0.30, 0.35, 0.9, 0.95, 1.0, 0.3, 0.6])
    return train_s, train_y, val_s


# guarantee -> (equal shares of the fold's delta, Corollary 2's Hoeffding term kept)
FORMS = {"high_probability": (3, False), "paper": (4, True)}


@pytest.mark.parametrize("guarantee", list(FORMS))
def test_tv_terms_by_hand_with_ties(guarantee):
    train_s, train_y, val_s = _tiny_tied_problem()
    m, n_val = train_s.size, val_s.size
    confidence_level = 0.9
    V = 1.0
    delta = 1 - confidence_level  # one split: delta_fold = delta
    shares, hoeffding = FORMS[guarantee]
    d = delta / shares

    # Weight of the prox: t2 = sqrt(m / 8 ln(4 (m - 1) / d)).
    t1 = math.sqrt(0.5 * math.log(4 / d))
    t2 = math.sqrt(m / 8 * math.log(4 * (m - 1) / d))
    # The tied rows at 0.30 are put in a random order (drawn from random_state; their
    # data order could depend on the labels), so the labels in score order are 19
    # zeros, then (0, 1) or (1, 0), then 19 ones. The 1-D TV prox (KKT: the cumulative
    # residual runs linearly from 0 to -t2 and back to 0) is, for t2 < 9.5:
    # zero first, two pieces t2 / 20 and 1 - t2 / 20 of 20 points each; one first,
    # three pieces t2 / 19, 1/2 (the tie block: its residuals 1/2 and -1/2 cancel) and
    # 1 - t2 / 19. The tie block's value is the mean of its fitted values: 1/2 both
    # ways.
    assert t2 < 9.5

    def expected_terms(k):
        low, high, tie = t2 / k, 1 - t2 / k, 0.5

        def eta_hat(s):
            if s < 0.30:
                return low  # also below every training score: the first block's value
            if s < 0.41:
                return tie
            return high

        V_hat = abs(tie - low) + abs(high - tie)
        r = np.array([abs(s - eta_hat(s)) for s in val_s])
        mean = r.sum() / n_val
        var = ((r - mean) ** 2).sum() / n_val
        bb = math.sqrt(2 * var * math.log(3 / d) / n_val) + 3 * math.log(3 / d) / n_val
        tvb = math.sqrt(
            (2 * t1**2 + 2 * t1 * math.sqrt(t1**2 + 4 * t2 * V) + 4 * t2 * V) / m
        )
        ptb = (V + V_hat) * math.sqrt(math.log(2 / d) / (2 * m))
        if hoeffding:  # Corollary 2's boundary term, redundant (SPEC section 3)
            ptb += math.sqrt(math.log(2 / d) / (2 * m))
        terms = {
            "validation_mean": mean,
            "bernstein_residual": bb,
            "tv_denoising": tvb,
            "population_transfer": ptb,
        }
        return terms, V_hat

    by_order = {"zero first": expected_terms(20), "one first": expected_terms(19)}
    assert (
        abs(
            by_order["zero first"][0]["validation_mean"]
            - by_order["one first"][0]["validation_mean"]
        )
        > 1e-3
    )

    X = np.concatenate([train_s, val_s])
    y = np.concatenate([train_y, np.zeros(n_val)])
    y[-1] = 1  # validation labels do not enter the bound
    split = [(np.arange(m), np.arange(m, m + n_val))]
    seen = set()
    for seed in range(20):  # until both orders have been checked
        est = TVCalibrationBound(
            method="denoise",
            V=V,
            confidence_level=confidence_level,
            guarantee=guarantee,
            cv=split,
            random_state=seed,
        ).fit(X, y)
        order = min(
            by_order,
            key=lambda k: abs(
                by_order[k][0]["validation_mean"] - est.terms_["validation_mean"]
            ),
        )
        expected, V_hat = by_order[order]
        seen.add(order)
        assert list(est.terms_) == list(expected)
        for name, value in expected.items():
            assert_allclose(est.terms_[name], value, rtol=0, atol=1e-12, err_msg=name)
        total = sum(expected.values())
        assert_allclose(est.bound_, min(total, 1.0), rtol=0, atol=1e-12)
        assert total > 1.0 and est.bound_ == 1.0  # 40 points certify nothing: clipped
        row = est.fold_results_.loc[0]
        assert_allclose(row["bound"], total, rtol=0, atol=1e-12)
        lower = expected["validation_mean"] - (total - expected["validation_mean"])
        assert_allclose(row["lower_bound"], lower, rtol=0, atol=1e-12)
        assert est.lower_bound_ == 0.0  # clipped at 0
        assert_allclose(row["V_hat"], V_hat, rtol=0, atol=1e-12)
        assert row["n_train"] == m
        assert row["n_validation"] == n_val
        assert_allclose(
            row["estimate"], expected["validation_mean"], rtol=0, atol=1e-12
        )
        assert est.n_splits_ == 1
        if len(seen) == 2:
            break
    assert len(seen) == 2, seen


def _prox_dual_bvls(y, w):
    """Unconstrained 1-D TV prox by its dual, a bounded least-squares problem.

    min_v 1/2 ||y - v||^2 + w ||Dv||_1  has  v = y - D^T u  with
    u = argmin_{|u|_inf <= w} ||D^T u - y||^2 (Fenchel duality); BVLS solves it exactly.
    """
    m = y.size
    D = np.diff(np.eye(m), axis=0)  # (m - 1, m), (Dv)_i = v_{i+1} - v_i
    u = lsq_linear(D.T, y, bounds=(-w, w), method="bvls", tol=1e-14).x
    return y - D.T @ u


def _problem2_slsqp(y, lam):
    """Problem (2) with the box v in [0, 1]^m, by a generic constrained solver."""
    m = y.size

    def objective(z):
        v, p, q = z[:m], z[m : 2 * m - 1], z[2 * m - 1 :]
        return 0.5 / m * np.sum((y - v) ** 2) + lam * np.sum(p + q)

    cons = {
        "type": "eq",
        "fun": lambda z: np.diff(z[:m]) - z[m : 2 * m - 1] + z[2 * m - 1 :],
    }
    bounds = [(0, 1)] * m + [(0, None)] * (2 * (m - 1))
    z0 = np.concatenate([np.full(m, y.mean()), np.zeros(2 * (m - 1))])
    res = minimize(
        objective,
        z0,
        bounds=bounds,
        constraints=[cons],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    return res.x[:m], res.fun


@pytest.mark.parametrize("seed", range(12))
def test_tv_surrogate_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 13))
    y = (rng.uniform(size=m) < rng.uniform(size=m)).astype(float)
    s = np.sort(rng.uniform(size=m))  # distinct scores: one block per point
    w = float(rng.uniform(0.05, 2.0))
    surrogate = fit_tv_surrogate(s, y, w)
    got = surrogate(s)
    expected = _prox_dual_bvls(y, w)
    assert_allclose(got, expected, atol=1e-9)
    # The prox of labels stays in [0, 1] and solves problem (2) with lambda = w / m.
    v_box, f_box = _problem2_slsqp(y, w / m)
    f_got = 0.5 / m * np.sum((y - got) ** 2) + w / m * np.abs(np.diff(got)).sum()
    assert f_got <= f_box + 1e-9
    assert_allclose(
        surrogate.total_variation, np.abs(np.diff(expected)).sum(), atol=1e-9
    )


def test_tv_surrogate_ties_are_block_means_of_the_prox():
    rng = np.random.default_rng(3)
    s = np.sort(rng.choice([0.1, 0.2, 0.5, 0.7], size=11))
    y = (rng.uniform(size=11) < 0.5).astype(float)
    w = 0.4
    v = _prox_dual_bvls(y, w)
    surrogate = fit_tv_surrogate(s, y, w)
    for value in np.unique(s):
        block = s == value
        assert_allclose(surrogate(np.array([value]))[0], v[block].mean(), atol=1e-9)
    # Between blocks the step function keeps the value of the block below.
    assert_allclose(surrogate(np.array([0.15, 0.6]))[0], v[s == 0.1].mean(), atol=1e-9)
    assert_allclose(surrogate(np.array([0.0]))[0], v[s == 0.1].mean(), atol=1e-9)


@pytest.mark.parametrize("guarantee", list(FORMS))
def test_predict_is_refit_surrogate_on_all_data(guarantee):
    rng = np.random.default_rng(0)
    s = rng.uniform(size=5000)
    y = rng.uniform(size=5000) < s**2
    est = TVCalibrationBound(method="denoise", guarantee=guarantee, random_state=0).fit(
        s, y
    )
    order = np.argsort(s, kind="stable")
    m = s.size
    d = 0.05 / FORMS[guarantee][0]
    t2 = math.sqrt(m / 8 * math.log(4 * (m - 1) / d))
    expected = _reference_surrogate(s[order], y[order].astype(float), t2)
    grid = np.linspace(0, 1, 101)
    assert_allclose(est.predict(grid), expected(grid), atol=1e-10)
    # The surrogate is nondecreasing here (eta = s^2 is monotone) and tracks it.
    assert np.all(np.diff(est.predict(grid)) >= -1e-12)
    assert np.max(np.abs(est.predict(grid) - grid**2)) < 0.25


def _reference_surrogate(sorted_s, sorted_y, w):
    import prox_tv

    v = prox_tv.tv1_1d(sorted_y, w)

    def f(x):
        k = np.searchsorted(sorted_s, x, side="right") - 1
        return v[np.maximum(k, 0)]

    return f


@pytest.mark.parametrize("guarantee", list(FORMS))
def test_score_is_negated_fixed_split_bound(guarantee):
    rng = np.random.default_rng(1)
    s = rng.uniform(size=4000)
    y = rng.uniform(size=4000) < s
    s_test = rng.uniform(size=3000)
    est = TVCalibrationBound(
        method="denoise", V=1.0, guarantee=guarantee, random_state=0
    ).fit(s, y)
    shares, hoeffding = FORMS[guarantee]
    m, n_val, d = s.size, s_test.size, 0.05 / shares
    r = np.abs(s_test - est.predict(s_test))
    t1 = math.sqrt(0.5 * math.log(4 / d))
    t2 = math.sqrt(m / 8 * math.log(4 * (m - 1) / d))
    V_hat = np.abs(np.diff(est.surrogate_.step.values)).sum()
    expected = (
        r.mean()
        + math.sqrt(2 * r.var() * math.log(3 / d) / n_val)
        + 3 * math.log(3 / d) / n_val
        + math.sqrt((2 * t1**2 + 2 * t1 * math.sqrt(t1**2 + 4 * t2) + 4 * t2) / m)
        + (1 + V_hat) * math.sqrt(math.log(2 / d) / (2 * m))
        + hoeffding * math.sqrt(math.log(2 / d) / (2 * m))
    )
    assert expected < 1.0  # unclipped: the comparison is informative
    assert_allclose(est.score(s_test, y[:3000]), -expected, rtol=1e-12)


def test_functional_equals_estimator():
    rng = np.random.default_rng(2)
    s = rng.beta(2, 3, size=3000)
    y = rng.uniform(size=3000) < np.sqrt(s)
    for method, aggregate in (
        ("cells", "mean"),
        ("denoise", "mean"),
        ("denoise", "min"),
    ):
        params = dict(V=1.5, method=method, aggregate=aggregate, random_state=4)
        est = TVCalibrationBound(**params).fit(s, y)
        assert tv_bound(y, s, **params) == est.bound_


def test_bound_tightens_with_n():
    rng = np.random.default_rng(5)
    bounds = []
    for n in (10**3, 10**4, 10**5):
        s = rng.uniform(size=n)
        y = rng.uniform(size=n) < s**2
        bounds.append(tv_bound(y, s, random_state=0))
    assert bounds[0] > bounds[1] > bounds[2] > 1 / 6


def test_step_function_sorted_evaluation_matches_searchsorted():
    from skcalbound._surrogates._step import StepFunction

    rng = np.random.default_rng(8)
    step = StepFunction(
        knots=np.array([0.1, 0.3, 0.3000001, 0.8]),
        values=np.array([0.2, 0.5, 0.4, 0.9]),
    )
    for x in (
        np.sort(rng.uniform(size=1000)),
        np.array([0.0, 0.1, 0.1, 0.3, 0.8, 1.0]),
        np.array([]),
        np.full(5, 0.05),
    ):
        assert_allclose(step.evaluate_sorted(x), step(x), rtol=0, atol=0)


# Slow: the folds run in joblib's default (loky) processes, whose start-up costs two
# interpreter start-ups (~4 s of CPU) for a few milliseconds of fitting. The default
# suite checks n_jobs=2 under the threading backend for every bound
# (tests/test_bound_invariants.py::test_n_jobs_with_threads_does_not_change_the_result).
@pytest.mark.slow
def test_parallel_folds_give_identical_results():
    rng = np.random.default_rng(9)
    s = rng.uniform(size=20_000)
    y = rng.uniform(size=20_000) < s**2
    seq = TVCalibrationBound(random_state=0).fit(s, y)
    par = TVCalibrationBound(random_state=0, n_jobs=2).fit(s, y)
    assert par.bound_ == seq.bound_
    assert par.terms_ == seq.terms_
    assert par.fold_results_.equals(seq.fold_results_)


def test_missing_prox_tv_names_the_system_package(monkeypatch):
    import skcalbound._surrogates._tv as tv_module

    monkeypatch.setattr(tv_module, "_prox_tv", None)
    monkeypatch.setattr(tv_module, "_PROX_TV_ERROR", ImportError("liblapacke.so.3"))
    with pytest.raises(ImportError, match="apt-get install liblapacke-dev"):
        TVCalibrationBound().fit(np.linspace(0, 1, 50), np.arange(50) % 2)


def test_union_bound_splits_delta_over_folds():
    rng = np.random.default_rng(10)
    s = rng.uniform(size=3000)
    y = rng.uniform(size=3000) < s
    for cv in (2, 5, 10):
        est = TVCalibrationBound(
            method="denoise", cv=cv, confidence_level=0.9, random_state=0
        ).fit(s, y)
        assert est.n_splits_ == cv
        assert_allclose(est.fold_results_["delta"], 0.1 / cv, rtol=1e-15)
        assert_allclose(
            est.fold_results_["n_train"] + est.fold_results_["n_validation"], 3000
        )
    mean = TVCalibrationBound(method="denoise", random_state=0).fit(s, y)
    low = TVCalibrationBound(method="denoise", random_state=0, aggregate="min").fit(
        s, y
    )
    assert_allclose(mean.bound_, mean.fold_results_["bound"].mean(), rtol=1e-15)
    assert low.bound_ == mean.fold_results_["bound"].min()


def test_score_checks_held_out_labels():
    rng = np.random.default_rng(11)
    s = rng.uniform(size=500)
    y = np.where(rng.uniform(size=500) < s, "pos", "neg")
    est = TVCalibrationBound(method="denoise", random_state=0, pos_label="pos").fit(
        s, y
    )
    # One class only is fine on held-out data: the classes are known from fit.
    assert est.score(s[:50], np.full(50, "pos")) == est.score(s[:50], y[:50])
    with pytest.raises(
        ValueError, match=r"labels \['maybe'\] that were not seen in fit"
    ):
        est.score(s[:3], ["pos", "neg", "maybe"])
    with pytest.raises(ValueError, match="inconsistent numbers of samples: \\[3, 2\\]"):
        est.score(s[:3], ["pos", "neg"])


def test_prox_into_scratch_buffer_equals_public_prox():
    import prox_tv

    rng = np.random.default_rng(12)
    for m in (2, 7, 1000):
        y = (rng.uniform(size=m) < 0.4).astype(float)
        s = np.sort(rng.uniform(size=m))
        w = float(rng.uniform(0.1, 3.0))
        out = np.full(m, np.nan)  # the solver must overwrite every entry
        got = fit_tv_surrogate(s, y, w, out=out)
        assert not np.isnan(out).any()
        assert_allclose(out, prox_tv.tv1_1d(y, w), atol=1e-12)
        assert_allclose(got(s), fit_tv_surrogate(s, y, w)(s), rtol=0, atol=0)


def test_predict_is_documented_as_the_denoised_surrogate_not_a_recalibration():
    # Issue 36, item 4 (SPEC section 8): TV's predict is the denoised step function,
    # which flattens both ends, so neither it nor the shared predict docstring calls
    # it recalibrated probabilities.
    from skcalbound._base import _BaseCalibrationBound

    doc = " ".join(TVCalibrationBound.predict.__doc__.split())
    assert doc.startswith(
        "The TV-denoised surrogate used by the bound, not a recalibration map."
    )
    assert "flat below its first jump and above its last" in doc
    assert "not the model's over-confidence" in doc
    assert "Do not use it to recalibrate" in doc
    class_doc = " ".join(TVCalibrationBound.__doc__.split())
    assert (
        "returns the TV-denoised surrogate the bound is built on, not a " in class_doc
    )
    for text in (doc, class_doc, _BaseCalibrationBound.predict.__doc__):
        assert "recalibrated probabilities" not in text.lower()
    # What the docstring states, on perfectly calibrated uniform scores: flat ends
    # well inside (0, 1) (0.16 and 0.83 at 10**4 scores), one value below the first
    # jump and one above the last.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=10_000)
    y = rng.uniform(size=s.size) < s
    est = TVCalibrationBound(method="denoise", random_state=0).fit(s, y)
    knots = est.surrogate_.step.knots
    low, high = est.predict([0.0, 1.0])
    assert_allclose([low, high], [0.157, 0.826], atol=5e-4)
    assert_allclose(est.predict(np.linspace(0, knots[1], 50, endpoint=False)), low)
    assert_allclose(est.predict(np.linspace(knots[-1], 1, 50)), high)
    assert knots[1] > 0.1 and knots[-1] < 0.9


@pytest.mark.parametrize("cv", [2, 3, 5])
@pytest.mark.parametrize("n", range(2, 9))
def test_too_few_samples_for_uneven_folds_is_a_clear_error(n, cv):
    # TV's surrogate needs 2 training points per fold (t2 has ln(4(m - 1)/delta));
    # balanced folds of n rows leave n - ceil(n / cv) in the smallest training part.
    # 3 rows with cv=2 once passed the size check and died in math.log.
    s = np.linspace(0.1, 0.9, n)
    y = np.arange(n) % 2
    est = TVCalibrationBound(method="denoise", cv=cv, random_state=0)
    if n >= cv and n - math.ceil(n / cv) >= 2:
        with pytest.warns(UserWarning):  # vacuous at this size
            assert 0.0 <= est.fit(s, y).bound_ <= 1.0
        return
    needed = min(k for k in range(cv, 20) if k - math.ceil(k / cv) >= 2)
    with pytest.raises(
        ValueError,
        match=rf"^Too few samples for cv={cv}: TVCalibrationBound with cv={cv} needs "
        rf"at least {needed} samples .* got n_samples={n}\. Use more samples or a "
        "smaller cv\\.$",
    ):
        est.fit(s, y)


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_largest_V_gives_the_trivial_bound(guarantee):
    # V = 1.7e308 is legal (V > 0); 4 t2 V once overflowed to inf and the fit raised
    # FloatingPointError ("a kernel bandwidth or tempering"). The bound is 1.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=500)
    y = (rng.uniform(size=500) < s).astype(int)
    with pytest.warns(UserWarning, match="clipped at 1"):
        est = TVCalibrationBound(
            method="denoise", V=1.7e308, guarantee=guarantee, random_state=0
        )
        est.fit(s, y)
    assert (est.bound_, est.lower_bound_) == (1.0, 0.0)
    assert est.terms_["tv_denoising"] > 1e150
    assert est.score(s[:100], y[:100]) == -1.0


def test_tv_denoising_term_with_V_factored_out_is_the_same_value():
    from skcalbound._terms import tv_denoising_term, tv_t1, tv_t2

    m, delta = 400, 0.01
    t1, t2 = tv_t1(delta), tv_t2(m, delta)
    for V in [1e300, 1e305]:  # the direct formula is finite here
        direct = math.sqrt(
            (2 * t1**2 + 2 * t1 * math.sqrt(t1**2 + 4 * t2 * V) + 4 * t2 * V) / m
        )
        assert tv_denoising_term(m, delta, V) == direct
    huge = tv_denoising_term(m, delta, 1.7e308)
    assert math.isfinite(huge)
    assert huge == pytest.approx(math.sqrt(1.7e308) * math.sqrt(4 * t2 / m), rel=1e-12)


# ----------------------------------------------------------------------------------
# The two modes
# ----------------------------------------------------------------------------------
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
