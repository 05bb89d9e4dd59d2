"""Monte Carlo checks of the guarantee ``P(bound_ >= CE) >= confidence_level``.

Each coverage cell fits the estimator ``R`` times on independent samples of a
synthetic problem with an exactly known calibration error, with independent fold
seeds, and requires the number of failures ``bound_ < CE`` to stay within the
``1 - 1e-3`` quantile of ``Binomial(R, 1 - confidence_level)``. The default suite runs
one small cell per bound and per guarantee mode, and one power check per bound;
``make test-slow`` runs the other small cells and the large cells with ``R = 100``;
``make test-study`` runs the large cells with their full ``R`` (500 or 1000), which
takes hours (the ``study`` marker).

The TV bound is loose, so the power tests check that the same harness does reject
quantities that are not certified (the plug-in estimate, or the bound without the
terms that pay for the surrogate's error).

The NW bound (Proposition 2) runs on the problems whose derivative bounds are known:
sech-perturbed classifiers (``h`` given, ``b1, b2`` follow) and a smooth sine
(``b1, b2`` given). Below ``n ~ 1000`` it is clipped at 1, so its cells start at
``n = 2000``.

The Lipschitz bucketing bound runs on the same problems (``h`` for the perturbed
classifiers, so ``L = tanh(1/h) / (2h)``; ``L = b1`` for the sine), at the same sizes,
and in the slow suite also on :class:`Oscillating` at ``n = 20000``, where ``L ~ 38.7``.
Its power tests use :class:`Oscillating`: bucketing coarser than the oscillation
averages it out, so a plug-in estimate or a bound with ``L`` far too small falls below
CE.
"""

import zlib
from dataclasses import replace

import numpy as np
import pytest
from _synthetic import (
    CalibratedBeta,
    CoverageResult,
    DiscreteTies,
    Oscillating,
    PiecewiseLinear,
    PowerMiscalibrated,
    ScoreAsProba,
    SechPerturbed,
    SmoothSine,
    abs_linear_integral,
    atoms_and_linear,
    binomial_tolerance,
    checked_quad,
    coverage,
    default_problems,
    fitted_bound,
    perturbed_problems,
    slow_except,
    smooth_problems,
    study_split,
    zigzag_steps,
)
from numpy.testing import assert_allclose
from scipy import stats
from sklearn.frozen import FrozenEstimator

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    SechPerturbedClassifier,
    TVCalibrationBound,
    make_bound_scorer,
)

PROBLEMS = default_problems()
PROBLEM_IDS = [p.name for p in PROBLEMS]
NW_PROBLEMS = perturbed_problems() + smooth_problems()
NW_PROBLEM_IDS = [p.name for p in NW_PROBLEMS]


def tv_factory(aggregate, guarantee="high_probability"):
    """Estimator factory for :func:`coverage`: the TV bound with the problem's ``V``
    (the paper's denoising bound; the cell bound's coverage is in test_tv_cells)."""

    def make(problem, confidence_level, random_state):
        return TVCalibrationBound(
            **problem.assumptions,
            method="denoise",
            confidence_level=confidence_level,
            aggregate=aggregate,
            guarantee=guarantee,
            random_state=random_state,
        )

    return make


def cell_seed(*key):
    """A stable seed per test cell, so cells use independent data."""
    return zlib.crc32(repr(key).encode())


def mode_key(guarantee):
    """Seed key of the guarantee mode: the high-probability cells keep their seeds."""
    return () if guarantee == "high_probability" else (guarantee,)


def check_coverage(
    problem, n, aggregate, confidence_level, repetitions, guarantee="high_probability"
):
    result = coverage(
        tv_factory(aggregate, guarantee),
        problem,
        n,
        repetitions,
        confidence_level=confidence_level,
        seed=cell_seed(
            problem.name,
            n,
            aggregate,
            confidence_level,
            repetitions,
            *mode_key(guarantee),
        ),
    )
    assert result.repetitions == repetitions
    assert np.all(np.isfinite(result.values))
    assert np.all(result.values <= 1.0)  # CE <= 1, so the reported bound is clipped
    print(f"coverage {aggregate}: {result.summary()}")  # shown with `pytest -s`
    assert result.failures <= result.tolerance, f"{aggregate}: {result.summary()}"
    return result


# ----------------------------------------------------------------------------------
# The problems themselves: closed forms, assumption constants, samplers
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "problem, true_ce, V",
    [
        (PowerMiscalibrated(k=2.0), 1.0 / 6.0, 1.0),
        (PowerMiscalibrated(k=3.0), 0.25, 1.0),
        (CalibratedBeta(), 0.0, 1.0),
        (DiscreteTies(), 0.07, 0.9),
        (atoms_and_linear(), 0.025 + 0.65 / 12.0, 0.85),
        (zigzag_steps(), 0.33, 2.6),
    ],
    ids=["square", "cube", "calibrated", "discrete", "atoms", "zigzag"],
)
def test_hand_derived_truth(problem, true_ce, V):
    assert_allclose(problem.true_ce, true_ce, rtol=1e-12, atol=1e-15)
    assert_allclose(problem.V, V, rtol=1e-12)
    assert problem.assumptions == {"V": problem.V}


def test_atoms_sit_at_exactly_zero_and_one(rng):
    scores, _ = atoms_and_linear().sample(100_000, rng)
    assert_allclose(np.mean(scores == 0.0), 0.2, atol=5 * np.sqrt(0.2 * 0.8 / 1e5))
    assert_allclose(np.mean(scores == 1.0), 0.15, atol=5 * np.sqrt(0.15 * 0.85 / 1e5))
    inner = scores[(scores > 0.0) & (scores < 1.0)]
    assert_allclose(inner.shape[0] / 1e5, 0.65, atol=5 * np.sqrt(0.65 * 0.35 / 1e5))
    # The continuous part is U(0, 1): mean 1/2, variance 1/12.
    assert_allclose(inner.mean(), 0.5, atol=5 * np.sqrt(1 / 12 / inner.shape[0]))


def test_discrete_scores_are_tied(rng):
    problem = DiscreteTies()
    scores, labels = problem.sample(50_000, rng)
    assert set(np.unique(scores)) == set(problem.support)
    for s, p, e in zip(problem.support, problem.probs, problem.eta_values):
        at = scores == s
        assert_allclose(at.mean(), p, atol=5 * np.sqrt(p * (1 - p) / 50_000))
        assert_allclose(labels[at].mean(), e, atol=5 * np.sqrt(e * (1 - e) / at.sum()))


@pytest.mark.parametrize(
    "u, v, fu, fv",
    [
        (0.0, 1.0, -0.1, 0.2),
        (0.2, 0.7, 0.3, 0.1),
        (0.0, 0.5, -0.4, -0.05),
        (0.1, 0.9, 0.5, -0.5),
    ],
)
def test_abs_linear_integral_matches_quadrature(u, v, fu, fv):
    def f(s):
        return abs(fu + (fv - fu) * (s - u) / (v - u))

    root = u - fu * (v - u) / (fv - fu)
    points = [root] if u < root < v else None
    assert_allclose(
        abs_linear_integral(u, v, fu, fv),
        checked_quad(f, u, v, points=points),
        atol=1e-10,
    )


@pytest.mark.parametrize("problem", PROBLEMS, ids=PROBLEM_IDS)
def test_true_ce_matches_quadrature(problem):
    """An independent route to CE: quadrature of ``|s - eta(s)|`` against the score
    law."""

    def residual(s):
        return abs(s - float(problem.eta(np.array([s]))[0]))

    if isinstance(problem, PowerMiscalibrated):
        expected = checked_quad(residual, 0.0, 1.0)
    elif isinstance(problem, CalibratedBeta):
        density = stats.beta(problem.a, problem.b).pdf
        expected = checked_quad(lambda s: residual(s) * density(s), 0.0, 1.0)
    elif isinstance(problem, DiscreteTies):
        expected = sum(p * residual(s) for s, p in zip(problem.support, problem.probs))
    else:
        assert isinstance(problem, PiecewiseLinear)
        pieces = 0.0
        for u, v, lo, hi in zip(
            problem.knots, problem.knots[1:], problem.left, problem.right
        ):
            # quad never evaluates the endpoints (where atoms sit); split at the kink.
            fu, fv = u - lo, v - hi
            root = u - fu * (v - u) / (fv - fu) if fv != fu else u
            points = [root] if u < root < v else None
            pieces += checked_quad(residual, u, v, points=points)
        atoms = sum(p * residual(x) for x, p, _ in problem.atoms)
        expected = atoms + problem.continuous_weight * pieces
    assert_allclose(problem.true_ce, expected, atol=1e-9)


@pytest.mark.parametrize("problem", PROBLEMS, ids=PROBLEM_IDS)
def test_V_is_the_total_variation_of_eta(problem):
    """TV of ``eta`` on a fine grid holding every knot, atom and support point."""
    grid = np.linspace(0.0, 1.0, 200_001)
    extra = []
    for x in getattr(problem, "knots", ()) + getattr(problem, "support", ()):
        extra += [x - 1e-12, x, x + 1e-12]
    grid = np.unique(np.clip(np.concatenate([grid, extra]), 0.0, 1.0))
    grid_tv = np.sum(np.abs(np.diff(problem.eta(grid))))
    # A grid can only see less variation than there is; for these problems it sees all.
    assert grid_tv <= problem.V + 1e-12
    assert_allclose(grid_tv, problem.V, atol=1e-8)


@pytest.mark.parametrize("problem", PROBLEMS, ids=PROBLEM_IDS)
def test_sampler_matches_true_ce(problem):
    n = 10**6
    scores, labels = problem.sample(
        n, np.random.default_rng(cell_seed(problem.name, "mc"))
    )
    assert scores.shape == labels.shape == (n,)
    assert np.all((scores >= 0.0) & (scores <= 1.0))
    assert set(np.unique(labels)) == {0, 1}
    eta = problem.eta(scores)
    residual = np.abs(scores - eta)
    se = residual.std() / np.sqrt(n)
    assert abs(residual.mean() - problem.true_ce) <= 5 * se + 1e-12
    # Labels follow eta: E[y - eta(s)] = 0 and E[(y - eta(s)) s] = 0.
    noise = labels - eta
    for g in (noise, noise * scores):
        assert abs(g.mean()) <= 5 * g.std() / np.sqrt(n)


# ----------------------------------------------------------------------------------
# The harness
# ----------------------------------------------------------------------------------
class _ConstantBound:
    """A fake estimator whose ``bound_`` is a fixed ``value``."""

    def __init__(self, value):
        self.value = value

    def fit(self, scores, labels):
        assert scores.shape == labels.shape
        self.bound_ = self.value
        return self


@pytest.mark.parametrize(
    "repetitions, confidence_level", [(60, 0.95), (100, 0.8), (1000, 0.95)]
)
def test_binomial_tolerance(repetitions, confidence_level):
    """The tolerance is the smallest count a valid bound exceeds with prob. <= 1e-3."""
    tolerance = binomial_tolerance(repetitions, confidence_level)
    failures = stats.binom(repetitions, 1.0 - confidence_level)
    assert failures.sf(tolerance) <= 1e-3 < failures.sf(tolerance - 1)
    assert repetitions * (1.0 - confidence_level) < tolerance < repetitions


def test_binomial_tolerance_tightens_with_repetitions():
    assert binomial_tolerance(100, 0.95) == 13
    assert binomial_tolerance(1000, 0.95) / 1000 < binomial_tolerance(100, 0.95) / 100


@pytest.mark.parametrize("shift, failures", [(-1e-12, 30), (0.0, 0), (1e-3, 0)])
def test_coverage_counts_strict_failures(shift, failures):
    problem = PowerMiscalibrated()
    result = coverage(
        lambda p, level, rs: _ConstantBound(p.true_ce + shift),
        problem,
        50,
        30,
        confidence_level=0.95,
        seed=0,
    )
    assert result.failures == failures
    assert result.passed == (failures <= result.tolerance)


def test_coverage_is_reproducible_and_repetitions_are_independent():
    problem = PowerMiscalibrated()
    kwargs = dict(confidence_level=0.95, seed=3, quantity=lambda e: e.estimate_)
    first = coverage(tv_factory("mean"), problem, 300, 8, **kwargs)
    second = coverage(tv_factory("mean"), problem, 300, 8, **kwargs)
    assert_allclose(first.values, second.values, rtol=0, atol=0)
    assert np.unique(first.values).shape[0] == 8


# ----------------------------------------------------------------------------------
# Coverage of the TV bound
# ----------------------------------------------------------------------------------
# The default suite's cell, in both guarantee modes: the non-monotone zigzag.
@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_tv_bound_coverage_small(guarantee):
    check_coverage(zigzag_steps(), 2000, "mean", 0.8, 100, guarantee)


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize("n", [200, 2000])
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("problem", PROBLEMS, ids=PROBLEM_IDS)
def test_tv_bound_coverage(problem, aggregate, n, confidence_level):
    check_coverage(problem, n, aggregate, confidence_level, repetitions=100)


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize(
    "n, repetitions",
    study_split([(500, 1000), (5000, 1000), (50_000, 500)], slow=100),
)
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("problem", PROBLEMS, ids=PROBLEM_IDS)
def test_tv_bound_coverage_slow(problem, aggregate, n, repetitions, confidence_level):
    check_coverage(problem, n, aggregate, confidence_level, repetitions)


# ----------------------------------------------------------------------------------
# Power: the harness rejects quantities that are not certified
# ----------------------------------------------------------------------------------
def _plug_in(estimator):
    # The folds' plug-in mean |s - eta_hat(s)| (estimate_ until issue 36).
    return estimator.terms_["validation_mean"]


def _without_surrogate_terms(estimator):
    terms = estimator.terms_
    return estimator.bound_ - terms["tv_denoising"] - terms["population_transfer"]


# The default suite runs the cell that drops the bound's own terms; the others are slow.
@pytest.mark.parametrize(
    "quantity, aggregate",
    slow_except(
        [
            {"estimate": _plug_in, "no_tvb_ptb": _without_surrogate_terms},
            ["mean", "min"],
        ],
        default="no_tvb_ptb-mean",
    ),
)
def test_harness_detects_an_invalid_bound(quantity, aggregate):
    """On the non-monotone problem, at n = 5000, dropping the certification fails."""
    problem = zigzag_steps()
    certified = []  # the certified bound_ of the very same fits

    def record(estimator):
        certified.append(estimator.bound_)
        return quantity(estimator)

    result = coverage(
        tv_factory(aggregate),
        problem,
        5000,
        60,
        confidence_level=0.95,
        seed=cell_seed("power", aggregate),
        quantity=record,
    )
    assert not result.passed, result.summary()
    assert result.failure_rate >= 0.5
    # ... while the certified bound from the very same fits holds.
    valid = replace(result, values=np.asarray(certified))
    assert valid.repetitions == 60
    assert valid.passed, valid.summary()


@pytest.mark.slow
def test_harness_detects_an_invalid_bound_with_ties():
    """The plug-in estimate also undercovers on the tied, discrete problem."""
    result = coverage(
        tv_factory("mean"),
        DiscreteTies(),
        2000,
        60,
        confidence_level=0.95,
        seed=cell_seed("power", "discrete"),
        quantity=_plug_in,
    )
    assert not result.passed, result.summary()


# ----------------------------------------------------------------------------------
# Coverage of the NW bound
# ----------------------------------------------------------------------------------
def nw_assumptions(problem):
    """``h`` for a perturbed classifier (b1, b2 then follow), else ``b1`` and ``b2``."""
    if isinstance(problem, SechPerturbed):
        return problem.assumption_kwargs("h")
    return problem.assumption_kwargs("b1", "b2")


def nw_factory(aggregate, guarantee="high_probability", **params):
    """Estimator factory for :func:`coverage`: the NW bound with the problem's
    constants."""

    def make(problem, confidence_level, random_state):
        return NWCalibrationBound(
            **nw_assumptions(problem),
            **params,
            confidence_level=confidence_level,
            aggregate=aggregate,
            guarantee=guarantee,
            random_state=random_state,
        )

    return make


def check_nw_coverage(
    problem, n, aggregate, confidence_level, repetitions, guarantee="high_probability"
):
    result = coverage(
        nw_factory(aggregate, guarantee),
        problem,
        n,
        repetitions,
        confidence_level=confidence_level,
        seed=cell_seed(
            "nw",
            problem.name,
            n,
            aggregate,
            confidence_level,
            repetitions,
            *mode_key(guarantee),
        ),
    )
    assert result.repetitions == repetitions
    assert np.all(np.isfinite(result.values))
    assert np.all(result.values <= 1.0)
    print(f"nw coverage {aggregate}: {result.summary()}")  # shown with `pytest -s`
    assert result.failures <= result.tolerance, f"{aggregate}: {result.summary()}"
    return result


def test_nw_problems_carry_the_constants_the_bound_needs():
    perturbed = [p for p in NW_PROBLEMS if isinstance(p, SechPerturbed)]
    assert sorted(p.h for p in perturbed) == [2.0**-6, 2.0**-4]
    for p in perturbed:
        assert nw_assumptions(p) == {"h": p.h}
    (sine,) = [p for p in NW_PROBLEMS if isinstance(p, SmoothSine)]
    assert nw_assumptions(sine) == {"b1": sine.b1, "b2": sine.b2}


# The default suite's cell, in both guarantee modes: the h = 2^-6 perturbed classifier,
# whose bound is the largest multiple of CE (~4x at n = 2000), with fewer repeats (12,
# as the Lipschitz cell below: a valid bound exceeds the tolerance of 7 misses with
# probability <= 1e-3; 60 and 100 repeats run under slow).
@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_nw_bound_coverage_small(guarantee):
    problem = next(p for p in NW_PROBLEMS if getattr(p, "h", None) == 2.0**-6)
    check_nw_coverage(problem, 2000, "mean", 0.8, 12, guarantee)


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("problem", NW_PROBLEMS, ids=NW_PROBLEM_IDS)
def test_nw_bound_coverage(problem, aggregate, confidence_level):
    check_nw_coverage(problem, 2000, aggregate, confidence_level, repetitions=60)


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize(
    "n, repetitions", study_split([(2000, 500), (20_000, 500)], slow=100)
)
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("problem", NW_PROBLEMS, ids=NW_PROBLEM_IDS)
def test_nw_bound_coverage_slow(problem, aggregate, n, repetitions, confidence_level):
    check_nw_coverage(problem, n, aggregate, confidence_level, repetitions)


# Power of the harness for NW. With the plug-in bandwidth the label noise pushes the
# plug-in estimate *up*, so to show that the harness rejects what is not certified the
# smoother is made to oversmooth: then only ``g_T`` pays for its bias.
# - "estimate": a sine of four periods smoothed over half a period is nearly flat, so
#   ``mean |eta_hat - s|`` is well below CE; the certified bound is not clipped there.
# - "no_smoothing_terms": the bound without ``smoothing_mean`` and
#   ``bernstein_smoothing`` on the h = 2^-6 perturbed classifier with a kernel of
#   width 1/4 (the certified bound is then clipped at 1).
NW_POWER_CASES = {
    "estimate": (
        SmoothSine(amplitude=1.0 / (8.0 * np.pi), cycles=4, name="sine_4_periods"),
        1.0 / 8.0,
        _plug_in,
    ),
    "no_smoothing_terms": (
        next(p for p in NW_PROBLEMS if getattr(p, "h", None) == 2.0**-6),
        0.25,
        lambda e: e.terms_["validation_mean"] + e.terms_["bernstein_residual"],
    ),
}


# The default suite runs the cell that drops the bound's smoothing terms; the others are
# slow.
@pytest.mark.parametrize(
    "case, aggregate",
    slow_except(
        [list(NW_POWER_CASES), ["mean", "min"]], default="no_smoothing_terms-mean"
    ),
)
def test_harness_detects_an_invalid_nw_bound(case, aggregate):
    problem, bandwidth, quantity = NW_POWER_CASES[case]
    kwargs = dict(confidence_level=0.95, seed=cell_seed("nw power", case, aggregate))
    # The quantities are the worst-case form's terms.
    factory = nw_factory(aggregate, bandwidth=bandwidth, noise="worst_case")
    certified = []  # the certified bound_ of the very same fits

    def record(estimator):
        certified.append(estimator.bound_)
        return quantity(estimator)

    result = coverage(factory, problem, 5000, 40, quantity=record, **kwargs)
    assert not result.passed, result.summary()
    assert result.failure_rate >= 0.5
    # ... while the certified bound from the very same fits holds.
    valid = replace(result, values=np.asarray(certified))
    assert valid.repetitions == 40
    assert valid.passed, valid.summary()
    if case == "estimate":
        assert valid.values.max() < 0.5, valid.summary()


# ----------------------------------------------------------------------------------
# Coverage of the Lipschitz bucketing bound
# ----------------------------------------------------------------------------------
LIPSCHITZ_PROBLEMS = NW_PROBLEMS
LIPSCHITZ_PROBLEM_IDS = NW_PROBLEM_IDS


def lipschitz_assumptions(problem, scale=1.0):
    """``h`` for a perturbed classifier (``L = b1(h)`` follows), else ``L``.

    ``scale != 1`` gives ``L = scale * L_true`` (always through ``L``): with
    ``scale < 1`` the assumption is false and the bound is not certified.
    """
    if scale == 1.0 and isinstance(problem, SechPerturbed):
        return problem.assumption_kwargs("h")
    return {"L": scale * problem.assumption_kwargs("L")["L"]}


def lipschitz_factory(aggregate, scale=1.0, **params):
    """Estimator factory for :func:`coverage`: the Lipschitz bound with the problem's
    ``L`` (``params`` may set ``guarantee``)."""

    def make(problem, confidence_level, random_state):
        return LipschitzBucketBound(
            **lipschitz_assumptions(problem, scale),
            **params,
            confidence_level=confidence_level,
            aggregate=aggregate,
            random_state=random_state,
        )

    return make


def check_lipschitz_coverage(
    problem, n, aggregate, confidence_level, repetitions, guarantee="high_probability"
):
    result = coverage(
        lipschitz_factory(aggregate, guarantee=guarantee),
        problem,
        n,
        repetitions,
        confidence_level=confidence_level,
        seed=cell_seed(
            "lipschitz",
            problem.name,
            n,
            aggregate,
            confidence_level,
            repetitions,
            *mode_key(guarantee),
        ),
    )
    assert result.repetitions == repetitions
    assert np.all(np.isfinite(result.values))
    assert np.all(result.values <= 1.0)
    print(
        f"lipschitz coverage {aggregate}: {result.summary()}"
    )  # shown with `pytest -s`
    assert result.failures <= result.tolerance, f"{aggregate}: {result.summary()}"
    return result


def test_lipschitz_problems_carry_the_constants_the_bound_needs():
    perturbed = [p for p in LIPSCHITZ_PROBLEMS if isinstance(p, SechPerturbed)]
    assert sorted(p.h for p in perturbed) == [2.0**-6, 2.0**-4]
    (sine,) = [p for p in LIPSCHITZ_PROBLEMS if isinstance(p, SmoothSine)]
    assert lipschitz_assumptions(sine) == {"L": sine.b1}
    for p in perturbed + [sine, Oscillating()]:
        kwargs = lipschitz_assumptions(p)
        assert kwargs == ({"h": p.h} if p in perturbed else {"L": p.b1})
        scores, labels = p.sample(200, np.random.default_rng(0))
        fitted = LipschitzBucketBound(**kwargs, random_state=0).fit(scores, labels)
        # From h the estimator derives the problem's L = b1(h) (Corollary 3).
        assert_allclose(fitted.L_, p.assumptions["L"], rtol=1e-15)
        assert lipschitz_assumptions(p, 0.02) == {"L": 0.02 * p.assumptions["L"]}


# The grid: 12 cells of 30 fits at n = 2000 (~0.055 s a fit, ~20 s in all on one core).
# Observed failures: 0 in every cell (the bound is ~4-5x CE at n = 2000: medians ~0.31
# for the sine, CE 0.064; ~0.40 for h = 2^-4, CE 0.076; ~0.55 for h = 2^-6, CE 0.128).
# The default suite's cell, in both guarantee modes: the h = 2^-6 perturbed classifier
# (the bound is ~4x CE there), with fewer repeats.
@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_lipschitz_bound_coverage_small(guarantee):
    problem = next(p for p in LIPSCHITZ_PROBLEMS if getattr(p, "h", None) == 2.0**-6)
    check_lipschitz_coverage(problem, 2000, "mean", 0.8, 12, guarantee)


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("problem", LIPSCHITZ_PROBLEMS, ids=LIPSCHITZ_PROBLEM_IDS)
def test_lipschitz_bound_coverage(problem, aggregate, confidence_level):
    check_lipschitz_coverage(problem, 2000, aggregate, confidence_level, repetitions=30)


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize(
    "n, repetitions", study_split([(2000, 500), (20_000, 500)], slow=100)
)
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("problem", LIPSCHITZ_PROBLEMS, ids=LIPSCHITZ_PROBLEM_IDS)
def test_lipschitz_bound_coverage_slow(
    problem, aggregate, n, repetitions, confidence_level
):
    check_lipschitz_coverage(problem, n, aggregate, confidence_level, repetitions)


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize("aggregate", ["mean", "min"])
@pytest.mark.parametrize("repetitions", study_split([500], slow=100))
def test_lipschitz_bound_coverage_oscillating_slow(
    aggregate, confidence_level, repetitions
):
    # At n = 2000 the bound is clipped at 1 here (L ~ 38.7); at n = 20000 it is ~0.3.
    check_lipschitz_coverage(
        Oscillating(), 20_000, aggregate, confidence_level, repetitions
    )


# Power of the harness for the Lipschitz bound. On the coverage problems above the label
# noise pushes the plug-in estimate up and the 1/(2 sqrt(n_b)) term keeps even a bound
# with L/50 above CE (0/20 failures each at n = 2000 and 5000 in a pilot run; the
# plug-in estimate failed 1-8/20 there), so the power cases use Oscillating
# (CE = 0.3/pi ~ 0.0955, 40 periods per unit score): buckets of whole periods average
# the oscillation out, leaving mean |s - eta_hat| ~ bucket width / 4.
# - "estimate": the plug-in estimate with 40 buckets (one period each) at n = 5000:
#   ~0.028 < CE in every repeat, while the certified bound from the same fits (true L)
#   is ~0.44: valid and not clipped.
# - "L_over_50": the bound with L/50 ~ 0.77 and the default candidates at n = 10^4: it
#   picks B <= 8 buckets (whole periods each) and gets ~0.087 < CE in every repeat; the
#   same data with the true L give bounds ~0.26. (aggregate="min" is lower still.)
# With the plug-in estimate and default candidates the failure rate depends on n
# (pilot: 14/30 at n = 5000, 0/20 at n = 2000), so it is not used.
# "L_over_50" uses the published form (guarantee="paper"): the default form's extra
# terms (label concentration, population transfer, ~0.03 here) lift even the L/50 bound
# above CE, so it would not show the harness's power.
# The default suite runs "estimate" on 10 repeats ("estimate_R=10"), the slow suite the
# cases below in full.
LIPSCHITZ_POWER_CASES = {
    "estimate": (5000, 40, 1.0, {"n_buckets": 40}, _plug_in),
    "L_over_50": (10_000, 20, 1.0 / 50.0, {"guarantee": "paper"}, fitted_bound),
    "estimate_R=10": (5000, 10, 1.0, {"n_buckets": 40}, _plug_in),
}


@pytest.mark.parametrize(
    "case", slow_except([list(LIPSCHITZ_POWER_CASES)], default="estimate_R=10")
)
def test_harness_detects_an_invalid_lipschitz_bound(case):
    n, repetitions, scale, params, quantity = LIPSCHITZ_POWER_CASES[case]
    problem = Oscillating()
    kwargs = dict(confidence_level=0.95, seed=cell_seed("lipschitz power", case))
    certified = []  # the certified bound_ of the very same fits, when L is the true one

    def record(estimator):
        certified.append(estimator.bound_)
        return quantity(estimator)

    factory = lipschitz_factory("mean", scale, **params)
    result = coverage(factory, problem, n, repetitions, quantity=record, **kwargs)
    print(f"lipschitz power {case}: {result.summary()}")
    assert not result.passed, result.summary()
    assert result.failure_rate >= 0.5, result.summary()
    # ... while the certified bound with the true L, on the very same data, holds.
    if scale == 1.0:
        valid = replace(result, values=np.asarray(certified))
    else:
        valid = coverage(
            lipschitz_factory("mean", **params), problem, n, repetitions, **kwargs
        )
    print(f"lipschitz power {case}, certified: {valid.summary()}")
    assert valid.failures == 0, valid.summary()
    assert valid.values.max() < 0.6, valid.summary()  # informative, not clipped at 1


# ----------------------------------------------------------------------------------
# End to end: SechPerturbedClassifier around a classifier with a step-shaped eta_orig
# ----------------------------------------------------------------------------------
def step_problem(h):
    """A classifier whose calibration function is a staircase (jumps of up to 0.8, an
    atom of tied scores at 1/2), seen through the sech perturbation of bandwidth ``h``:
    the perturbation alone must make ``eta`` smooth enough for the NW bound."""
    base = PiecewiseLinear(
        knots=(0.0, 0.25, 0.5, 0.75, 1.0),
        left=(0.8, 0.1, 0.9, 0.3),
        right=(0.8, 0.1, 0.9, 0.3),
        atoms=((0.5, 0.2, 0.5),),
        name="staircase",
    )
    return SechPerturbed(base=base, h=h, name=f"staircase_h=2^{np.log2(h):g}")


# The staircase's steps (0.8 on the lowest scores, 0.3 on the highest) rank the
# positives below chance: the warning says so, and is not what these cells test.
_STAIRCASE_RANKS_BELOW_CHANCE = pytest.mark.filterwarnings(
    "ignore::skcalbound.BelowChanceWarning"
)


def perturbed_classifier_coverage(problem, n, repetitions, confidence_level, seed):
    """Each repetition: labels from ``eta_orig(s_orig)``, a ``SechPerturbedClassifier``
    around the frozen score model, and ``-make_bound_scorer("nw")`` on its predictions
    (``h`` read from the classifier)."""
    values = np.empty(repetitions)
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(repetitions)):
        rng = np.random.default_rng(child)
        s_orig = np.asarray(problem.base.sample_scores(n, rng), dtype=float)
        labels = (rng.uniform(size=n) < problem.base.eta(s_orig)).astype(int)
        X = s_orig[:, None]
        model = FrozenEstimator(ScoreAsProba().fit(X, labels))
        clf = SechPerturbedClassifier(
            model, h=problem.h, random_state=int(rng.integers(2**31))
        )
        scorer = make_bound_scorer(
            "nw",
            confidence_level=confidence_level,
            random_state=int(rng.integers(2**31)),
        )
        values[r] = -scorer(clf.fit(X, labels), X, labels)
    return CoverageResult(
        problem=str(problem),
        n=int(n),
        confidence_level=float(confidence_level),
        true_ce=float(problem.true_ce),
        values=values,
        tolerance=binomial_tolerance(repetitions, confidence_level),
    )


def test_staircase_truth_is_integrated_accurately():
    for h in (2.0**-4, 2.0**-6):
        problem = step_problem(h)
        assert problem.ce_integration_error < 1e-9
        # Unperturbed CE of the staircase: sum over pieces of int |s - c| ds (x 0.8)
        # plus the atom's 0.2 * |0.5 - 0.5| = 0; the perturbed classifier's CE is below
        # it.
        pieces = [
            (0.0, 0.25, 0.8),
            (0.25, 0.5, 0.1),
            (0.5, 0.75, 0.9),
            (0.75, 1.0, 0.3),
        ]
        unperturbed = 0.8 * sum(
            checked_quad(lambda s: abs(s - c), a, b) for a, b, c in pieces
        )
        assert 0.05 < problem.true_ce < unperturbed


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize("h", [2.0**-4, 2.0**-6], ids=["h=2^-4", "h=2^-6"])
@_STAIRCASE_RANKS_BELOW_CHANCE
def test_nw_covers_the_perturbed_staircase_classifier(h, confidence_level):
    problem = step_problem(h)
    seed = cell_seed("staircase", h, confidence_level)
    result = perturbed_classifier_coverage(problem, 3000, 40, confidence_level, seed)
    print(result.summary())
    assert np.all(np.isfinite(result.values)) and np.all(result.values <= 1.0)
    assert result.values.max() < 1.0  # not clipped: the check has teeth
    assert result.failures <= result.tolerance, result.summary()


@pytest.mark.slow
@pytest.mark.parametrize("confidence_level", [0.95, 0.8])
@pytest.mark.parametrize("n", [3000, 30_000])
@pytest.mark.parametrize("h", [2.0**-4, 2.0**-6], ids=["h=2^-4", "h=2^-6"])
@pytest.mark.parametrize("repetitions", study_split([500], slow=100))
@_STAIRCASE_RANKS_BELOW_CHANCE
def test_nw_covers_the_perturbed_staircase_classifier_slow(
    h, n, confidence_level, repetitions
):
    problem = step_problem(h)
    seed = cell_seed(
        "staircase slow",
        h,
        n,
        confidence_level,
        *(() if repetitions == 500 else (repetitions,)),
    )
    result = perturbed_classifier_coverage(
        problem, n, repetitions, confidence_level, seed
    )
    print(result.summary())
    assert result.failures <= result.tolerance, result.summary()
