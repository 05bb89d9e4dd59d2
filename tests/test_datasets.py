"""skcalbound.datasets: the generators' truth against independent computations.

Independent checks: closed forms derived by hand, exact rational sums for the discrete
problems, :func:`scipy.integrate.quad` on the defining integral, and Monte Carlo with
10^7 draws (within 4 standard errors). For the perturbed problems the Monte Carlo
check uses the labels of the generative process: ``E[(s - y) g(s)] <= CE`` for every
``|g| <= 1``, with equality for ``g = sign(s - eta(s))``, which only needs the signs
of ``s - eta(s)`` (piecewise constant between the roots), not the integral itself.
"""

import collections
import functools
import inspect
import math
import pickle
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from _synthetic import (
    Oscillating,
    SmoothSine,
    checked_quad,
    default_problems,
    perturbed_problems,
    smooth_problems,
)
from numpy.testing import assert_allclose, assert_array_equal
from numpydoc.validate import validate
from scipy import integrate, stats

import skcalbound.datasets as datasets
from skcalbound._sech import sech_derivative_bounds, sech_inverse_cdf, sech_pdf
from skcalbound.datasets import (
    CustomProblem,
    _perturbed,
    make_atoms,
    make_calibrated,
    make_calibration_problem,
    make_discrete,
    make_multiclass,
    make_oscillating,
    make_overconfident,
    make_parabola,
    make_rare_event,
)
from skcalbound.datasets._generators import get_problem
from skcalbound.datasets._multiclass import _TemperedEta
from skcalbound.datasets._perturbed import SechPerturbed
from skcalbound.datasets._problems import (
    PiecewiseLinear,
    atoms_and_linear,
    zigzag_base,
    zigzag_steps,
)
from skcalbound.datasets._smooth import Parabola

GENERATORS = {
    "calibrated": make_calibrated,
    "overconfident": make_overconfident,
    "parabola": make_parabola,
    "oscillating": make_oscillating,
    "discrete": make_discrete,
    "atoms": make_atoms,
    "rare_event": make_rare_event,
}
HAND_DERIVED_CE = {
    "calibrated": 0.0,
    "overconfident": 0.2 / math.pi,
    "oscillating": 0.3 / math.pi,
    "discrete": 0.07,
    "atoms": 0.025 + 0.65 / 12.0,
    # 0.2 E[s] for s ~ Beta(0.5, 20) (E[s] = 1/41), less 1.2 E[s - 5/6; s > 5/6] + ...:
    # P(s > 5/6) < (1/6)^19.5 / (0.5 B(0.5, 20)) < 1e-14, far below rtol=1e-12 here.
    "rare_event": 0.2 / 41.0,
}
MC_DRAWS = 10_000_000


# ----------------------------------------------------------------------------------
# What a generator returns
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(GENERATORS))
def test_generators_return_a_sample_its_truth_and_constants(name):
    data = GENERATORS[name](2_000, random_state=0)
    assert set(data) == {
        "scores",
        "labels",
        "true_ce",
        "ce_integration_error",
        "assumptions",
        "problem",
    }
    assert data.scores.shape == data.labels.shape == (2_000,)
    assert data.scores.dtype == np.float64
    assert np.all((data.scores >= 0.0) & (data.scores <= 1.0))
    assert set(np.unique(data.labels)) <= {0, 1}
    assert data.true_ce == data.problem.true_ce
    assert data.ce_integration_error == 0.0
    assert "V" in data.assumptions
    same = make_calibration_problem(name, 2_000, random_state=0)
    assert_array_equal(same.scores, data.scores)
    assert_array_equal(same.labels, data.labels)
    other = GENERATORS[name](2_000, random_state=1)
    assert not np.array_equal(other.scores, data.scores)


@pytest.mark.parametrize("name", sorted(HAND_DERIVED_CE))
def test_true_ce_matches_the_hand_derivation(name):
    assert_allclose(
        GENERATORS[name](10).true_ce, HAND_DERIVED_CE[name], rtol=1e-12, atol=1e-15
    )


def test_smooth_problems_carry_every_constant_and_the_others_only_v():
    for name in ("calibrated", "overconfident", "parabola", "oscillating"):
        assert set(GENERATORS[name](10).assumptions) == {"V", "b1", "b2", "L"}
    for name in ("discrete", "atoms"):
        assert set(GENERATORS[name](10).assumptions) == {"V"}
    assert make_calibrated(10).assumptions == {"V": 1.0, "b1": 1.0, "b2": 0.0, "L": 1.0}
    parabola = make_parabola(10).assumptions
    assert_allclose([parabola[k] for k in ("V", "b1", "b2", "L")], [1.6, 3.2, 6.4, 3.2])


def test_parabola_truth_and_constants_against_quad_and_a_grid():
    problem = make_parabola(10, bottom=0.2, top=0.7).problem
    root = (1.0 + 2.0 - math.sqrt((1 + 2.0) ** 2 - 4 * 2.0 * 0.7)) / (2 * 2.0)
    value, _ = integrate.quad(
        lambda s: abs(s - problem.eta(s)),
        0,
        1,
        points=[root],
        epsabs=1e-13,
        epsrel=1e-13,
    )
    assert_allclose(problem.true_ce, value, atol=1e-12)
    grid = np.linspace(0, 1, 200_001)
    eta = problem.eta(grid)
    slope, curvature = np.gradient(eta, grid), np.gradient(np.gradient(eta, grid), grid)
    assert_allclose(np.abs(slope).max(), problem.b1, rtol=1e-3)
    assert_allclose(np.abs(curvature[10:-10]).max(), problem.b2, rtol=1e-3)
    assert_allclose(np.abs(np.diff(eta)).sum(), problem.V, rtol=1e-9)


def test_discrete_truth_is_an_exact_rational_sum():
    problem = make_discrete(10).problem
    exact = sum(
        Fraction(p) * abs(Fraction(s) - Fraction(e))
        for s, p, e in zip(problem.support, problem.probs, problem.eta_values)
    )
    assert abs(Fraction(problem.true_ce) - exact) < Fraction(1, 10**15)
    atoms = make_atoms(10).problem
    exact_atoms = (
        Fraction(2, 10) * Fraction(5, 100)
        + Fraction(15, 100) * Fraction(1, 10)
        + Fraction(65, 100) * Fraction(1, 12)
    )
    assert abs(Fraction(atoms.true_ce) - exact_atoms) < Fraction(1, 10**15)


# 10^6 draws by default (a 1% error in the truth is seen there, as the next test
# shows), the ten million draws under ``slow``.
@pytest.mark.parametrize(
    "draws",
    [1_000_000, pytest.param(MC_DRAWS, marks=pytest.mark.slow)],
    ids=["10^6", "10^7"],
)
@pytest.mark.parametrize("name", list(GENERATORS))
def test_true_ce_against_monte_carlo(name, draws):
    data = GENERATORS[name](draws, random_state=12345)
    problem = data.problem
    residual = np.abs(data.scores - problem.eta(data.scores))
    error = residual.std() / math.sqrt(draws)
    assert abs(residual.mean() - data.true_ce) <= 4 * error + 1e-12, (
        residual.mean(),
        data.true_ce,
        error,
    )
    # The labels: E[(s - y) sign(s - eta(s))] = CE.
    signed = (data.scores - data.labels) * np.sign(
        data.scores - problem.eta(data.scores)
    )
    assert abs(signed.mean() - data.true_ce) <= 4 * signed.std() / math.sqrt(draws)


def test_monte_carlo_check_can_fail():
    # Guards against a vacuous test: a 1% error in the truth is seen at 10^6 draws.
    data = make_overconfident(1_000_000, random_state=0)
    residual = np.abs(data.scores - data.problem.eta(data.scores))
    error = residual.std() / 1e3
    assert abs(residual.mean() - 1.01 * data.true_ce) > 4 * error


# ----------------------------------------------------------------------------------
# Through the sech perturbation
# ----------------------------------------------------------------------------------
@functools.cache
def perturbed_data(name, h):
    """``GENERATORS[name](1_000, h=h, random_state=0)``, made once per process: its
    truth costs up to ~1.5 s of numerical integration (oscillating, h = 2^-6), and the
    tests below read it several times (nothing mutates it)."""
    return GENERATORS[name](1_000, h=h, random_state=0)


# Every problem at h = 2^-4 (~0.05 s a truth); at h = 2^-6 (~0.3 s, up to ~0.8 s) by
# default only the two whose truths the tests below read too.
@pytest.mark.parametrize(
    "name, h",
    [
        pytest.param(
            name,
            h,
            marks=()
            if h == 2.0**-4 or name in ("oscillating", "atoms")
            else pytest.mark.slow,
        )
        for h in (2.0**-4, 2.0**-6)
        for name in GENERATORS
    ],
)
def test_perturbed_problems_report_a_small_integration_error(name, h):
    data = perturbed_data(name, h)
    assert 0.0 <= data.ce_integration_error < 1e-5
    b1, b2 = sech_derivative_bounds(h)
    assert data.assumptions == {"V": b1, "b1": b1, "b2": b2, "L": b1, "h": h}
    assert data.problem.base.name == name
    # The density integrates to one and eta stays in [0, 1].
    grid = np.linspace(0.0, 1.0, 2001)
    eta = data.problem.eta(grid)
    assert np.all((eta >= 0.0) & (eta <= 1.0))
    assert_allclose(data.problem.cdf(1.0), 1.0, atol=1e-9)


def check_perturbed_truth_through_the_labels(name, draws):
    h = 2.0**-6
    # The numbers of GENERATORS[name](draws, h=h, random_state=7), bit for bit (the
    # same problem through the same generator), with the problem's truth computed once.
    data = make_calibration_problem(
        perturbed_data(name, h).problem, draws, random_state=7
    )
    assert data.problem.name == f"{name}_h=2^-6"
    problem = data.problem
    roots = problem.sign_changes()
    cells = np.concatenate([[0.0], roots, [1.0]])
    signs = np.sign(problem.gap(0.5 * (cells[:-1] + cells[1:])))
    g = signs[np.searchsorted(roots, data.scores)]
    signed = (data.scores - data.labels) * g
    error = signed.std() / math.sqrt(draws)
    assert abs(signed.mean() - data.true_ce) <= 4 * error, (
        signed.mean(),
        data.true_ce,
        error,
    )


# atoms by default; oscillating (and every problem with 10**7 draws, below) under slow.
@pytest.mark.parametrize(
    "name",
    [pytest.param("oscillating", marks=pytest.mark.slow), "atoms", "rare_event"],
)
def test_perturbed_truth_against_monte_carlo_through_the_labels(name):
    check_perturbed_truth_through_the_labels(name, 2_000_000)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GENERATORS))
def test_perturbed_truth_against_monte_carlo_with_ten_million_draws(name):
    check_perturbed_truth_through_the_labels(name, MC_DRAWS)


def test_perturbing_a_calibrated_model_miscalibrates_it_near_the_ends():
    data = make_calibrated(10, h=2.0**-4)
    assert data.true_ce > 1e-3
    assert data.problem.eta(0.0)[0] > 0.0  # pulled towards the mass inside


def test_perturbed_oscillation_is_damped():
    # A period of 1/40 is averaged out by h = 2^-6: the CE falls below a tenth of the
    # unperturbed 0.3 / pi (the truth itself is checked by Monte Carlo above).
    damped = perturbed_data("oscillating", 2.0**-6).true_ce
    assert damped < 0.1 * 0.3 / math.pi


# The truth at h = 2^-7 costs ~2.5 s of quadrature.
@pytest.mark.slow
def test_finer_perturbation_keeps_part_of_the_oscillation():
    # ... and partly kept by h = 2^-7.
    damped = perturbed_data("oscillating", 2.0**-6).true_ce
    kept = make_oscillating(10, h=2.0**-7).true_ce
    assert 2 * damped < kept < 0.3 / math.pi


def test_perturbed_sampler_uses_the_exact_kernel():
    data = make_discrete(200_000, h=2.0**-5, random_state=3)
    assert stats.kstest(data.scores, data.problem.cdf).pvalue > 1e-3


@pytest.fixture
def integrations(monkeypatch):
    """An empty truth cache for the test; the problems integrated are listed."""
    monkeypatch.setattr(_perturbed, "_TRUTH_CACHE", collections.OrderedDict())
    integrated = []
    integrate_truth = SechPerturbed._integrate_truth

    def counting(problem):
        integrated.append(problem)
        return integrate_truth(problem)

    monkeypatch.setattr(SechPerturbed, "_integrate_truth", counting)
    return integrated


def test_repeated_generator_calls_integrate_the_truth_once(integrations):
    h = 2.0**-3
    first = make_parabola(50, h=h, random_state=0)
    assert len(integrations) == 1
    # The same definition through every door: no new integration, the same values.
    again = [
        make_parabola(50, h=h, random_state=0),
        make_calibration_problem("parabola", 50, h=h, random_state=0),
        make_calibration_problem(Parabola(), 50, h=h, random_state=0),
    ]
    problems = [get_problem("parabola", h=h), SechPerturbed(base=Parabola(), h=h)]
    for data in again:
        assert data.true_ce == first.true_ce
        assert data.ce_integration_error == first.ce_integration_error
        assert_array_equal(data.scores, first.scores)
        assert_array_equal(data.labels, first.labels)
    for problem in problems:
        assert problem.true_ce == first.true_ce
        assert problem.ce_integration_error == first.ce_integration_error
        for rule in (0, 1):
            assert_array_equal(
                problem.sign_changes(rule), first.problem.sign_changes(rule)
            )
    assert len(integrations) == 1
    # ... the values of an integration from scratch, bit for bit.
    truth = SechPerturbed._integrate_truth(problems[1])
    assert len(integrations) == 2  # that one, asked for explicitly
    assert truth.true_ce == first.true_ce
    assert truth.ce_integration_error == first.ce_integration_error
    assert_array_equal(truth.sign_changes[0], first.problem.sign_changes(0))
    # The roots handed out are copies: writing into them changes nothing shared.
    roots = first.problem.sign_changes()
    assert roots.shape == (1,) and roots.flags.writeable
    roots[:] = -1.0
    assert_array_equal(problems[0].sign_changes(), truth.sign_changes[0])
    # Another bandwidth, or another base, is another problem.
    make_parabola(50, h=2.0**-2, random_state=0)
    make_parabola(50, top=0.8, h=h, random_state=0)
    assert len(integrations) == 4


@dataclass(frozen=True)
class _FlatParabola(Parabola):
    """A subclass with the fields of ``Parabola()`` but another calibration function."""

    def eta(self, s):
        return np.full_like(np.asarray(s, dtype=float), 0.5)


def test_user_defined_problems_are_integrated_afresh(integrations):
    h = 2.0**-3
    # A custom problem's eta may depend on state that changes between calls.
    state = {"amplitude": 0.1}
    custom = CustomProblem(
        lambda s: s + state["amplitude"] * np.sin(2 * np.pi * s), name="sine"
    )
    before = make_calibration_problem(custom, 10, h=h).true_ce
    state["amplitude"] = 0.05
    after = make_calibration_problem(custom, 10, h=h).true_ce
    assert len(integrations) == 2
    smaller = CustomProblem(lambda s: s + 0.05 * np.sin(2 * np.pi * s))
    assert after == SechPerturbed(base=smaller, h=h).true_ce != before
    # A subclass of a built-in problem, equal fields, another eta: not shared either.
    parabola = make_parabola(10, h=h).true_ce
    flat = SechPerturbed(base=_FlatParabola(), h=h).true_ce
    assert len(integrations) == 5 and flat != parabola
    # Nor a base whose fields could change (lists), nor a subclass of SechPerturbed.
    listed = PiecewiseLinear(left=[0.0], right=[1.0])
    assert _perturbed._truth_key(SechPerturbed(base=listed, h=h)) is None
    sub = type("SubPerturbed", (SechPerturbed,), {})(base=Parabola(), h=h)
    assert _perturbed._truth_key(sub) is None
    assert _perturbed._truth_key(SechPerturbed(base=Parabola(), h=h)) is not None


@pytest.mark.parametrize("n", [1, 7, 200])
@pytest.mark.parametrize("name", ["atoms", "oscillating"])
def test_blocked_kernel_sums_are_the_plain_ones(name, n, monkeypatch):
    # _p_q forms the kernel in place by blocks of scores; against the plain
    # composition of sech and gd over all scores at once (blocks of 16 rows here, so
    # that n = 200 ends on a partial block).
    from skcalbound._sech import gd, sech

    problem = get_problem(name, h=2.0**-5)
    nodes, weights, eta_nodes = problem._inner_rules[0]
    monkeypatch.setattr(_perturbed, "KERNEL_BLOCK", 16 * nodes.shape[0])
    x, weight_atoms, eta_atoms = problem._atoms()
    h = problem.h
    s = np.concatenate([[0.0, 1.0], np.random.default_rng(n).uniform(size=n - 1)])[:n]
    for cumulative in (False, True):
        if cumulative:
            k_c = h * (gd((s[:, None] - nodes) / h) - gd(-nodes / h))
            k_a = h * (gd((s[:, None] - x) / h) - gd(-x / h))
        else:
            k_c, k_a = sech((s[:, None] - nodes) / h), sech((s[:, None] - x) / h)
        p = k_c @ weights + k_a @ weight_atoms
        q = k_c @ (weights * eta_nodes) + k_a @ (weight_atoms * eta_atoms)
        got = problem._p_q(s, cumulative=cumulative)
        assert_allclose(got, [p, q], rtol=1e-14, atol=0)


def _reference_piecewise_eta(problem, s):
    """``PiecewiseLinear.eta`` as first written: a search and one ``where`` per atom."""
    s = np.asarray(s, dtype=float)
    knots = np.asarray(problem.knots)
    j = np.clip(np.searchsorted(knots, s, side="right") - 1, 0, len(problem.left) - 1)
    lo, hi = np.asarray(problem.left)[j], np.asarray(problem.right)[j]
    out = lo + (s - knots[j]) / (knots[j + 1] - knots[j]) * (hi - lo)
    for x, _, e in problem.atoms:
        out = np.where(s == x, e, out)
    return out


PIECEWISE = {
    "zigzag_base": zigzag_base,
    "zigzag_steps": zigzag_steps,
    "atoms": atoms_and_linear,
}


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_eta_is_the_reference_bit_for_bit(name):
    problem = PIECEWISE[name]()
    s = np.concatenate(
        [
            np.random.default_rng(0).uniform(-0.1, 1.1, 50_000),
            problem.knots,
            np.nextafter(problem.knots, -1.0),
            np.nextafter(problem.knots, 2.0),
            [np.nan],
        ]
    )
    assert_array_equal(problem.eta(s), _reference_piecewise_eta(problem, s))
    assert problem.eta(0.5).shape == ()


@pytest.mark.parametrize("h", [2.0**-6, 0.3, 1e-5])
@pytest.mark.parametrize("name", ["zigzag_base", "parabola", "calibrated"])
def test_perturbed_sample_is_the_reference_bit_for_bit(name, h):
    # Blocked and in place, the sampler gives the numbers of the plain composition of
    # base.sample_scores, base.eta and sech_inverse_cdf with the same generator.
    base = PIECEWISE[name]() if name in PIECEWISE else get_problem(name)
    problem = SechPerturbed(base=base, h=h)
    for seed, n in [(0, 40_000), (1, 16_384), (2, 1)]:
        scores, labels, s_orig = problem.sample_with_original(
            n, np.random.default_rng(seed)
        )
        rng = np.random.default_rng(seed)
        expected_orig = base.sample_scores(n, rng)
        eta = (
            _reference_piecewise_eta(base, expected_orig)
            if name in PIECEWISE
            else base.eta(expected_orig)
        )
        expected_labels = (rng.uniform(size=n) < eta).astype(np.int64)
        expected = sech_inverse_cdf(rng.uniform(size=n), expected_orig, h)
        assert_array_equal(s_orig, expected_orig)
        assert_array_equal(labels, expected_labels)
        assert labels.dtype == np.int64
        assert_array_equal(scores, expected)


# ----------------------------------------------------------------------------------
# Your own problem
# ----------------------------------------------------------------------------------
def test_custom_problem_reproduces_a_built_in_one():
    custom = CustomProblem(lambda s: s**2, V=1.0, name="square")
    assert_allclose(custom.true_ce, 1.0 / 6.0, atol=1e-11)
    assert custom.ce_integration_error < 1e-9
    data = make_calibration_problem(custom, 1_000, random_state=0)
    assert data.assumptions == {"V": 1.0}
    assert_array_equal(data.labels, data.labels.astype(bool))


def test_custom_problem_with_atoms_and_a_beta_law_against_monte_carlo():
    custom = CustomProblem(
        lambda s: np.sqrt(s),
        stats.beta(2, 3),
        atoms=[(0.0, 0.1, 0.2), (1.0, 0.05, 0.5)],
        b1=None,
    )
    beta_part, _ = integrate.quad(
        lambda s: (np.sqrt(s) - s) * stats.beta(2, 3).pdf(s), 0, 1
    )
    assert_allclose(
        custom.true_ce, 0.1 * 0.2 + 0.05 * 0.5 + 0.85 * beta_part, atol=1e-10
    )
    data = make_calibration_problem(custom, 2_000_000, random_state=5)
    assert_allclose(np.mean(data.scores == 0.0), 0.1, atol=5 * math.sqrt(0.09 / 2e6))
    signed = (data.scores - data.labels) * np.sign(
        data.scores - custom.eta(data.scores)
    )
    assert abs(signed.mean() - custom.true_ce) <= 4 * signed.std() / math.sqrt(2e6)
    perturbed = make_calibration_problem(custom, 10, h=2.0**-5)
    assert perturbed.ce_integration_error < 1e-5


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"eta": 0.5}, TypeError, "eta must be a callable"),
        ({"eta": lambda s: 2 * s}, ValueError, r"map \[0, 1\] into \[0, 1\]"),
        ({"eta": lambda s: 0.5}, ValueError, "wrong shape"),
        ({"eta": np.sqrt, "scores": stats.norm(0.5, 1)}, ValueError, "support inside"),
        ({"eta": np.sqrt, "scores": [0.1, 0.2]}, TypeError, "frozen continuous"),
        ({"eta": np.sqrt, "V": -1.0}, ValueError, "V must be a finite nonnegative"),
        (
            {"eta": np.sqrt, "atoms": [(0.0, 0.7, 0.1), (1.0, 0.6, 0.9)]},
            ValueError,
            "sum to more than one",
        ),
        ({"eta": np.sqrt, "atoms": [(1.5, 0.1, 0.1)]}, ValueError, "atom"),
    ],
)
def test_custom_problem_rejects_bad_input_clearly(kwargs, error, match):
    with pytest.raises(error, match=match):
        CustomProblem(**kwargs)


# ----------------------------------------------------------------------------------
# Validation and documentation
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: make_parabola(0), "n_samples"),
        (lambda: make_parabola(10, h=0.0), "'h' parameter"),
        (lambda: make_parabola(10, top=1.5), "'top' parameter"),
        (lambda: make_overconfident(10, amplitude=0.5), "'amplitude' parameter"),
        (lambda: make_oscillating(10, cycles=41), "cycles \\* low and cycles \\* high"),
        (lambda: make_calibration_problem("square", 10), "'problem' parameter"),
        (lambda: make_calibration_problem(object(), 10), "'problem' parameter"),
    ],
)
def test_generators_reject_bad_parameters_clearly(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_too_inaccurate_truth_is_refused(monkeypatch):
    from skcalbound.datasets import _exact

    monkeypatch.setattr(_exact, "MAX_INTEGRATION_ERROR", 0.0)
    with pytest.raises(ArithmeticError, match="known only to"):
        make_parabola(10, h=2.0**-4)


@pytest.mark.parametrize("name", datasets.__all__)
def test_numpydoc_validation_of_the_public_datasets(name):
    errors = [
        f"{code}: {msg}"
        for code, msg in validate(f"skcalbound.datasets.{name}")["errors"]
        if code not in {"GL01", "GL02", "RT02"}
    ]
    assert not errors, errors


def test_datasets_module_is_documented():
    assert all(inspect.getdoc(getattr(datasets, name)) for name in datasets.__all__)
    api = (Path(__file__).resolve().parents[1] / "docs" / "api.rst").read_text()
    assert re.search(r"^\.\. automodule:: skcalbound\.datasets", api, flags=re.M)


def test_every_integrated_truth_checks_its_promise(monkeypatch):
    # CustomProblem.true_ce and make_multiclass's truth, like SechPerturbed's, refuse
    # to return a value whose error estimate is not below MAX_INTEGRATION_ERROR
    # (forced here to 0: quad's estimates are ~1e-12, never 0).
    from scipy import stats

    from skcalbound.datasets import _exact, make_multiclass

    problem = CustomProblem(np.sqrt, stats.beta(0.5, 20))
    assert 0 < problem.ce_integration_error < 1e-9
    assert 0.1 < problem.true_ce < 0.11
    monkeypatch.setattr(_exact, "MAX_INTEGRATION_ERROR", 0.0)
    with pytest.raises(ArithmeticError, match="custom: the true calibration error is"):
        CustomProblem(np.sqrt, stats.beta(0.5, 20)).true_ce
    with pytest.raises(ArithmeticError, match="make_multiclass: .* known only to"):
        make_multiclass(10, 3, random_state=0)


# --------------------------------------------------------------------------------------
# The synthetic problems refuse a bandwidth above one half.
# --------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------
# h above 1/2 in the synthetic problems, as at every other door
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda h: make_calibration_problem("overconfident", 100, h=h),
        lambda h: make_calibrated(100, h=h),
    ],
    ids=["make_calibration_problem", "make_calibrated"],
)
def test_synthetic_problems_refuse_h_above_one_half(make):
    with pytest.raises(
        ValueError,
        match=r"^h=64 is above 0\.5\. .* Did you mean h=1/64=0\.015625\?$",
    ):
        make(64)
    assert make(0.5).scores.shape == (100,)


# --------------------------------------------------------------------------------------
# The synthetic truth for perturbed classifiers and for smooth calibration functions.
#
# ``SechPerturbed`` computes the calibration error of a sech-perturbed classifier (paper
# eq. (7)) by quadrature; these tests check that number against independent quadrature
# (``scipy.integrate.quad``), against Monte Carlo draws of the generative process of
# Appendix D (labels from the *unperturbed* score), and check the derivative bounds of
# Corollaries 3 and 4 on the resulting calibration function.
# --------------------------------------------------------------------------------------
BANDWIDTHS = (2.0**-4, 2.0**-6)
PROBLEMS = dict(zip(BANDWIDTHS, perturbed_problems(BANDWIDTHS)))
H_IDS = ["h=2^-4", "h=2^-6"]
N_MC = 10**5
# eta and the CDF of a perturbed problem cost ~3 s and ~5 s per 10**5 scores (h = 2^-6):
# the default suite draws 2 * 10**4, the slow suite 10**5.
N_MC_DEFAULT = 2 * 10**4


@pytest.fixture(
    scope="module",
    params=[
        *((h, N_MC_DEFAULT) for h in BANDWIDTHS),
        *(pytest.param((h, N_MC), marks=pytest.mark.slow) for h in BANDWIDTHS),
    ],
    ids=[*H_IDS, *(f"{i}-n=10^5" for i in H_IDS)],
)
def drawn(request):
    """``(problem, s, y, s_orig, eta(s))`` for ``n`` draws, shared by the tests
    below."""
    h, n = request.param
    problem = PROBLEMS[h]
    rng = np.random.default_rng(int(1 / h))
    scores, labels, s_orig = problem.sample_with_original(n, rng)
    return problem, scores, labels, s_orig, problem.eta(scores)


def inner_points(problem, s):
    """Breakpoints of the ``so``-integrand at ``s``: the knots and the kernel peak."""
    offsets = problem.h * np.array([-40, -10, -3, -1, 0, 1, 3, 10, 40])
    return np.unique(np.concatenate([problem.base.knots, np.clip(s + offsets, 0, 1)]))


def quad_p_q(problem, s):
    """``p(s)``, ``q(s)`` by ``quad`` over each piece of the continuous part, plus
    atoms."""
    base, h = problem.base, problem.h
    p = sum(w * sech_pdf(s, x, h) for x, w, _ in base.atoms)
    q = sum(w * e * sech_pdf(s, x, h) for x, w, e in base.atoms)
    points = inner_points(problem, s)
    w = base.continuous_weight / h  # the integrands, k(s | so) * h, are of order one
    for lo, hi in zip(points[:-1], points[1:]):
        p += w * checked_quad(lambda so: sech_pdf(s, so, h) * h, lo, hi, tol=1e-13)
        q += w * checked_quad(
            lambda so: base.eta(so) * sech_pdf(s, so, h) * h, lo, hi, tol=1e-13
        )
    return p, q


# ----------------------------------------------------------------------------------
# The perturbed problems
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("h", BANDWIDTHS, ids=H_IDS)
def test_integration_error_estimate_is_small(h):
    problem = PROBLEMS[h]
    print(
        f"{problem}: CE = {problem.true_ce:.15f}, "
        f"integration error estimate {problem.ce_integration_error:.2e}"
    )
    assert problem.ce_integration_error < 1e-6
    assert 0.0 < problem.true_ce < 1.0


def test_true_ce_values():
    # Regression values of the truth (integration error estimates ~1e-17).
    assert_allclose(PROBLEMS[2.0**-4].true_ce, 0.0761820222811182, rtol=0, atol=1e-12)
    assert_allclose(PROBLEMS[2.0**-6].true_ce, 0.12819719778714647, rtol=0, atol=1e-12)
    # The unperturbed classifier's CE, the h -> 0 limit, is larger on this problem.
    assert_allclose(zigzag_base().true_ce, 0.14476190476190476, rtol=1e-14)


def test_true_ce_matches_monte_carlo(drawn):
    problem, scores, _, _, eta = drawn
    residual = np.abs(scores - eta)
    se = residual.std() / math.sqrt(scores.shape[0])
    assert abs(residual.mean() - problem.true_ce) < 5 * se, (residual.mean(), se)


@pytest.mark.parametrize("h", BANDWIDTHS, ids=H_IDS)
def test_outer_integral_matches_quad(h):
    problem = PROBLEMS[h]
    points = np.unique(
        np.concatenate(
            [
                problem.base.knots,
                problem.sign_changes(),
                np.arange(0, 1, h),
            ]
        )
    )
    value = sum(
        checked_quad(lambda s: abs(problem.gap(s)[0]), lo, hi, tol=1e-12)
        for lo, hi in zip(points[:-1], points[1:])
    )
    assert_allclose(value, problem.true_ce, rtol=0, atol=1e-12)


@pytest.mark.parametrize("h", BANDWIDTHS, ids=H_IDS)
def test_inner_integrals_match_quad(h):
    problem = PROBLEMS[h]
    s = np.array([0.0, 0.003, 0.2, 0.2 + h / 3, 0.5, 0.5 + 2 * h, 0.77, 0.999, 1.0])
    p, q = problem.density(s), problem.positive_density(s)
    for i, si in enumerate(s):
        p_ref, q_ref = quad_p_q(problem, si)
        assert_allclose([p[i], q[i]], [p_ref, q_ref], rtol=1e-12)


@pytest.mark.parametrize("h", BANDWIDTHS, ids=H_IDS)
def test_density_integrates_to_one_and_matches_the_cdf(h):
    problem = PROBLEMS[h]
    points = np.unique(np.concatenate([problem.base.knots, np.arange(0, 1, h)]))
    pieces = [
        checked_quad(lambda s: problem.density(s)[0], lo, hi, tol=1e-12)
        for lo, hi in zip(points[:-1], points[1:])
    ]
    assert_allclose(sum(pieces), 1.0, atol=1e-10)
    assert_allclose(problem.cdf(points[1:]), np.cumsum(pieces), atol=1e-10)
    assert problem.cdf(0.0)[0] == 0.0 and abs(problem.cdf(1.0)[0] - 1.0) < 1e-14
    assert np.all(problem.density(np.linspace(0, 1, 1001)) > 0)


def test_scores_follow_the_mixture_cdf(drawn):
    problem, scores, _, s_orig, _ = drawn
    assert np.all((scores >= 0) & (scores <= 1)) and np.all(np.isfinite(scores))
    result = stats.kstest(scores, problem.cdf)
    assert result.pvalue > 1e-3, result
    # The unperturbed scores keep their atoms; the perturbed ones have none.
    n = scores.shape[0]
    for x, p, _ in problem.base.atoms:
        assert abs(np.mean(s_orig == x) - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert np.unique(scores).shape[0] > 0.999 * n


def test_labels_drawn_from_the_original_score_agree_with_eq_7(drawn):
    # y ~ Bernoulli(eta_orig(s_orig)), but given the perturbed s it is
    # Bernoulli(eta(s)) with eta from eq. (7): E[y - eta(s) | s in bin] = 0.
    problem, scores, labels, s_orig, eta = drawn
    assert not np.array_equal(labels, (eta > 0.5).astype(int))
    edges = np.quantile(scores, np.linspace(0, 1, 21))
    bins = np.clip(np.searchsorted(edges, scores, side="right") - 1, 0, 19)
    naive = problem.base.eta(scores)  # the unperturbed eta at the perturbed score
    naive_off = 0
    for b in range(20):
        at = bins == b
        se = math.sqrt(np.mean(eta[at] * (1 - eta[at])) / at.sum())
        assert abs(np.mean(labels[at] - eta[at])) < 5 * se, b
        naive_off += abs(np.mean(labels[at] - naive[at])) > 5 * se
    assert naive_off >= 3  # the check has power: a wrong eta fails it


@pytest.mark.parametrize("h", BANDWIDTHS, ids=H_IDS)
def test_eta_derivatives_are_within_corollaries_3_and_4(h):
    problem = PROBLEMS[h]
    b1, b2 = sech_derivative_bounds(h)
    step = h / 64
    s = np.linspace(step, 1 - step, 1501)
    up, mid, down = problem.eta(s + step), problem.eta(s), problem.eta(s - step)
    first = (up - down) / (2 * step)
    second = (up - 2 * mid + down) / step**2
    assert np.max(np.abs(first)) <= b1
    assert np.max(np.abs(second)) <= b2
    # eta is a weighted mean of eta_orig values, so it stays inside their range.
    assert np.all((mid >= 0.05) & (mid <= 0.95))


def test_assumptions_of_the_perturbed_problems():
    for h, problem in PROBLEMS.items():
        # The sharp b2 (SPEC section 12), a third of Corollary 4's.
        b1, b2 = sech_derivative_bounds(h)
        assert problem.assumptions == {"h": h, "b1": b1, "b2": b2, "L": b1}
        assert problem.assumption_kwargs("b1", "b2") == {"b1": b1, "b2": b2}
        assert problem.assumption_kwargs("h") == {"h": h}
        with pytest.raises(KeyError, match="no assumption"):
            problem.assumption_kwargs("V")
    assert_allclose(PROBLEMS[2.0**-6].assumptions["b1"], 32.0, rtol=1e-15)
    assert_allclose(PROBLEMS[2.0**-6].assumptions["b2"], 64**2 / 2, rtol=1e-15)
    with pytest.raises(ValueError, match="h must be positive"):
        SechPerturbed(base=zigzag_base(), h=0.0)


def test_tv_problems_are_unchanged():
    # The TV coverage tests splat `assumptions` into TVCalibrationBound: only V there.
    for problem in default_problems():
        assert set(problem.assumptions) == {"V"}
        assert not isinstance(problem, (SechPerturbed, SmoothSine))


def test_perturbed_sampler_is_reproducible():
    problem = PROBLEMS[2.0**-4]
    first = problem.sample(1000, np.random.default_rng(3))
    second = problem.sample(1000, np.random.default_rng(3))
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert set(np.unique(first[1])) == {0, 1}


# ----------------------------------------------------------------------------------
# The smooth problem
# ----------------------------------------------------------------------------------
def test_smooth_sine_hand_values():
    (problem,) = smooth_problems()
    assert_allclose(problem.true_ce, 0.2 / math.pi, rtol=1e-15)
    assert_allclose(problem.b1, 1 + 0.2 * math.pi, rtol=1e-15)
    assert_allclose(problem.b2, 0.4 * math.pi**2, rtol=1e-15)
    assert problem.assumptions == {
        "V": 1.0,
        "b1": problem.b1,
        "b2": problem.b2,
        "L": problem.b1,
    }
    ce = checked_quad(lambda s: abs(s - problem.eta(s)), 0, 1, points=[0.5])
    assert_allclose(ce, problem.true_ce, atol=1e-10)


@pytest.mark.parametrize("amplitude, cycles", [(0.1, 1), (0.05, 3)])
def test_smooth_sine_derivative_bounds_are_attained(amplitude, cycles):
    problem = SmoothSine(amplitude=amplitude, cycles=cycles)
    s = np.linspace(0, 1, 200_001)
    step = 1e-4
    first = (problem.eta(s + step) - problem.eta(s - step)) / (2 * step)
    second = (
        problem.eta(s + step) - 2 * problem.eta(s) + problem.eta(s - step)
    ) / step**2
    # Central differences are off by O(step^2 (2 pi c)^2) relative.
    assert_allclose(np.max(np.abs(first)), problem.b1, rtol=2e-6)
    assert_allclose(np.max(np.abs(second)), problem.b2, rtol=2e-6)
    eta = problem.eta(s)
    assert np.all(np.diff(eta) >= 0) and eta[0] == 0.0 and abs(eta[-1] - 1) < 1e-15
    assert_allclose(problem.true_ce, 2 * amplitude / math.pi, rtol=1e-15)


def test_smooth_sine_monte_carlo(rng):
    problem = SmoothSine()
    scores, labels = problem.sample(N_MC, rng)
    residual = np.abs(scores - problem.eta(scores))
    assert abs(residual.mean() - problem.true_ce) < 5 * residual.std() / math.sqrt(N_MC)
    y_resid = labels - problem.eta(scores)
    assert abs(y_resid.mean()) < 5 * y_resid.std() / math.sqrt(N_MC)


def test_smooth_sine_rejects_bad_parameters():
    with pytest.raises(ValueError, match="positive integer"):
        SmoothSine(cycles=1.5)
    with pytest.raises(ValueError, match="monotone"):
        SmoothSine(amplitude=0.2)
    with pytest.raises(ValueError, match="monotone"):
        SmoothSine(amplitude=0.0)


# ----------------------------------------------------------------------------------
# Score laws whose density is unbounded at an end (Beta with a < 1 or b < 1)
# ----------------------------------------------------------------------------------
def _miscalibrated(s):
    """The issue's calibration function: ``eta(s) = min(1.2 s, 1)``."""
    return np.clip(1.2 * np.asarray(s, dtype=float), 0.0, 1.0)


def _independent_inner(a, b, h, panels=128, order=20):
    """Nodes ``so`` and weights ``f(so) dso / Z(so, h)`` for ``Beta(a, b)``, by
    Gauss-Legendre in ``t = so^a`` (if ``a < 1``) or ``t = (1 - so)^b`` (if ``b < 1``).

    The change of variable takes the singularity out: ``f(so) dso`` is
    ``(1 - so)^(b - 1) / (a B(a, b)) dt`` in the first, ``so^(a - 1) / (b B(a, b)) dt``
    in the second, smooth in ``t``. Independent of the package's graded mesh.
    """
    from scipy import special

    from skcalbound._sech import sech_normalizer

    x, w = np.polynomial.legendre.leggauss(order)
    kink = (5.0 / 6.0) ** a if a < 1 else (1.0 / 6.0) ** b  # eta's, in t
    edges = np.unique(np.append(np.linspace(0.0, 1.0, panels + 1), kink))
    lo, hi = edges[:-1, None], edges[1:, None]
    t = (0.5 * (lo + hi) + 0.5 * (hi - lo) * x).ravel()
    wt = (0.5 * (hi - lo) * w).ravel()
    if a < 1:
        so = t ** (1.0 / a)
        weights = wt * (1.0 - so) ** (b - 1.0) / (a * special.beta(a, b))
    else:
        so = 1.0 - t ** (1.0 / b)
        weights = wt * so ** (a - 1.0) / (b * special.beta(a, b))
    return so, weights / sech_normalizer(so, h)


def _independent_p_q(s, inner, h):
    so, weights = inner
    kernel = 1.0 / np.cosh((np.atleast_1d(s)[:, None] - so) / h)
    return kernel @ weights, kernel @ (weights * _miscalibrated(so))


def _independent_perturbed_ce(a, b, h):
    """``int |s p - q|`` by adaptive ``quad`` over ``s`` of the sums above."""
    from scipy import integrate

    inner = _independent_inner(a, b, h)

    def gap(s):
        p, q = _independent_p_q(s, inner, h)
        return abs(s * p[0] - q[0])

    value, error = integrate.quad(
        gap, 0, 1, limit=2000, epsabs=1e-12, epsrel=1e-10, points=np.arange(1, 16) / 16
    )
    assert error < 1e-10
    return value


def _custom(a, b):
    from skcalbound.datasets import CustomProblem

    return CustomProblem(_miscalibrated, stats.beta(a, b), breakpoints=(5.0 / 6.0,))


SINGULAR_LAWS = [
    pytest.param(0.5, 20.0, 2.0**-6, id="beta(0.5,20)-h=2^-6"),
    pytest.param(2.0, 0.5, 2.0**-4, id="beta(2,0.5)-h=2^-4", marks=pytest.mark.slow),
    pytest.param(0.25, 3.0, 2.0**-5, id="beta(0.25,3)-h=2^-5", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("a, b, h", SINGULAR_LAWS)
def test_unbounded_density_truth_matches_independent_quadrature(a, b, h):
    # The case: the first panel's Gauss-Legendre missed 0.8% of the mass of
    # Beta(0.5, 20) next to 0 and returned 0.00725 with an error estimate of 0.016;
    # the exact value is 0.00736.
    from skcalbound.datasets import make_calibration_problem

    data = make_calibration_problem(_custom(a, b), 10, h=h, random_state=0)
    expected = _independent_perturbed_ce(a, b, h)
    print(f"{data.true_ce!r} {expected!r} error estimate {data.ce_integration_error}")
    # Within its own error estimate (the promise: below 1e-5), and far inside it.
    assert data.ce_integration_error < 1e-6
    assert abs(data.true_ce - expected) < max(data.ce_integration_error, 1e-10)
    mass = data.problem._ce_by_rule(1, data.problem.sign_changes(1))[1]
    assert_allclose(mass, 1.0, atol=1e-7)
    if (a, b, h) == (0.5, 20.0, 2.0**-6):
        assert round(data.true_ce, 5) == 0.00736


@pytest.mark.parametrize(
    "a, b, h, n",
    [
        (0.5, 20.0, 2.0**-6, 10**5),
        pytest.param(0.5, 20.0, 2.0**-6, 4 * 10**6, marks=pytest.mark.slow),
        pytest.param(2.0, 0.5, 2.0**-4, 4 * 10**6, marks=pytest.mark.slow),
    ],
)
def test_unbounded_density_truth_matches_monte_carlo(a, b, h, n):
    # Scores from the sampler (Appendix D's process, not the quadrature), eta from the
    # independent quadrature, interpolated by a cubic spline on a grid of step h / 32.
    from scipy.interpolate import CubicSpline

    from skcalbound.datasets._perturbed import SechPerturbed

    problem = SechPerturbed(base=_custom(a, b), h=h)
    grid = np.linspace(0.0, 1.0, int(32 / h) + 1)
    p, q = _independent_p_q(grid, _independent_inner(a, b, h), h)
    eta = CubicSpline(grid, q / p)
    scores, _ = problem.sample(n, np.random.default_rng(7))
    residual = np.abs(scores - eta(scores))
    se = residual.std() / math.sqrt(n)
    print(f"MC {residual.mean():.6f} +- {se:.1e}, truth {problem.true_ce:.6f}")
    assert abs(residual.mean() - problem.true_ce) < 4 * se, (residual.mean(), se)


@pytest.mark.parametrize("a, b", [(0.5, 20.0), (2.0, 0.5), (0.5, 0.5), (0.05, 2.0)])
def test_unbounded_density_unperturbed_truth_is_the_closed_form(a, b):
    # eta = min(1.2 s, 1) >= s: CE = 0.2 E[s; s < 5/6] + E[1 - s; s >= 5/6], in
    # incomplete Beta functions; and Monte Carlo agrees.
    from scipy import special

    c = 5.0 / 6.0
    exact = 0.2 * a / (a + b) * special.betainc(a + 1, b, c) + b / (
        a + b
    ) * special.betaincc(a, b + 1, c)
    problem = _custom(a, b)
    assert_allclose(problem.true_ce, exact, rtol=1e-12)
    s = stats.beta(a, b).rvs(size=2 * 10**5, random_state=1)
    residual = np.abs(s - _miscalibrated(s))
    se = residual.std() / math.sqrt(s.size)
    assert abs(residual.mean() - exact) < 4 * se


# The named rare-event problem (issue 39): Beta(0.5, 20), eta = min(1, 1.2 s).
def test_rare_event_truth_is_that_of_the_proofs():
    # adaptive_proofs.md section 1: base rate 0.0293, CE (h = 2^-6) 0.00736.
    from skcalbound.datasets._exact import gauss_legendre_panels

    h = 2.0**-6
    data = make_rare_event(10, h=h, random_state=0)
    problem = data.problem
    assert problem.name == "rare_event_h=2^-6"
    assert round(problem.base.base_rate, 4) == 0.0293
    assert_allclose(problem.base.base_rate, 1.2 / 41.0, rtol=1e-12)
    assert round(data.true_ce, 5) == 0.00736
    assert data.ce_integration_error < 1e-6
    # The independent quadrature in t = so^0.5 of the tests above.
    assert abs(data.true_ce - _independent_perturbed_ce(0.5, 20.0, 2.0**-6)) < 1e-9
    # ... and its density and eta next to 0, where Beta(0.5, 20)'s is unbounded.
    near_zero = np.array([0.0, 1e-6, 1e-4, 1e-2, 0.2])
    expected = _independent_p_q(near_zero, _independent_inner(0.5, 20.0, h), h)
    got = problem._p_q(near_zero)
    assert_allclose(got, expected, rtol=1e-9)
    assert_allclose(got[1] / got[0], expected[1] / expected[0], rtol=1e-9)
    # Through the perturbation the labels keep their law: int q = the base rate.
    nodes, weights = gauss_legendre_panels(
        problem._outer_edges(1, problem.sign_changes(1)), 24
    )
    p, q = problem._p_q(nodes, 1)
    assert_allclose([weights @ p, weights @ q], [1.0, 1.2 / 41.0], atol=1e-9)
    unperturbed = make_rare_event(10)
    assert unperturbed.ce_integration_error == 0.0
    assert round(unperturbed.true_ce, 5) == 0.00488


@pytest.mark.parametrize(
    "a, b, slope", [(0.5, 20.0, 1.2), (2.0, 0.5, 1.2), (0.5, 3.0, 2.5), (0.7, 4.0, 0.6)]
)
def test_rare_event_closed_form_against_quad_and_monte_carlo(a, b, slope):
    from skcalbound.datasets._problems import RareEvent

    problem = RareEvent(a=a, b=b, slope=slope)
    law = stats.beta(a, b)
    custom = CustomProblem(
        problem.eta, law, breakpoints=[c for c in [1.0 / slope] if c < 1]
    )
    assert_allclose(problem.true_ce, custom.true_ce, rtol=1e-9, atol=1e-12)
    rate = integrate.quad(lambda s: problem.eta(s) * law.pdf(s), 0, 1, points=[0.5])
    assert_allclose(problem.base_rate, rate[0], rtol=1e-9)
    data = make_rare_event(1_000_000, a=a, b=b, slope=slope, random_state=3)
    residual = np.abs(data.scores - problem.eta(data.scores))
    se = residual.std() / 1e3
    assert abs(residual.mean() - problem.true_ce) <= 4 * se
    se_rate = math.sqrt(problem.base_rate * (1 - problem.base_rate) / 1e6)
    assert abs(data.labels.mean() - problem.base_rate) <= 4 * se_rate


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rare_event_perturbed_truth_against_monte_carlo(seed):
    # 4e5 perturbed scores per seed from the sampler (Appendix D's process); eta of
    # the perturbed problem from the package's quadrature, interpolated by a cubic
    # spline on a grid of step h / 32; tolerance 4 standard errors.
    from scipy.interpolate import CubicSpline

    h = 2.0**-6
    problem = make_rare_event(1, h=h).problem
    grid = np.linspace(0.0, 1.0, int(32 / h) + 1)
    eta = CubicSpline(grid, problem.eta(grid))
    data = make_rare_event(400_000, h=h, random_state=seed)
    residual = np.abs(data.scores - eta(data.scores))
    se = residual.std() / math.sqrt(data.scores.size)
    print(f"MC {residual.mean():.6f} +- {se:.1e}, truth {data.true_ce:.6f}")
    assert abs(residual.mean() - data.true_ce) < 4 * se
    assert se < 0.01 * data.true_ce  # the check can see a 4% error


def test_rare_event_constants_hold_and_only_those():
    grid = np.linspace(0.0, 1.0, 200_001)
    for slope, expected in [
        (1.2, {"V": 1.0, "L": 1.2}),
        (3.0, {"V": 1.0, "L": 3.0}),
        (0.8, {"V": 0.8, "L": 0.8, "b1": 0.8, "b2": 0.0}),
    ]:
        problem = make_rare_event(10, slope=slope).problem
        assert problem.assumptions == expected
        eta = problem.eta(grid)
        assert_allclose(np.abs(np.diff(eta)).sum(), expected["V"], rtol=1e-12)
        assert_allclose(np.abs(np.diff(eta) / np.diff(grid)).max(), slope, rtol=1e-9)
        assert np.all(np.diff(eta) >= 0)
    # Above slope 1, eta' jumps from slope to 0 at 1/slope: no b2 can hold.
    eta = make_rare_event(10).problem.eta
    c = 1.0 / 1.2
    assert eta(c + 1e-6) - eta(c) == 0.0 and eta(c) - eta(c - 1e-6) > 1e-6
    b1, b2 = sech_derivative_bounds(2.0**-6)
    perturbed = make_rare_event(10, h=2.0**-6).assumptions
    assert perturbed == {"V": b1, "b1": b1, "b2": b2, "L": b1, "h": 2.0**-6}


def test_rare_event_sample_is_reproducible_from_random_state():
    for h in (None, 2.0**-6):
        first = make_rare_event(5_000, h=h, random_state=11)
        again = make_rare_event(5_000, h=h, random_state=np.random.RandomState(11))
        named = make_calibration_problem("rare_event", 5_000, h=h, random_state=11)
        other = make_rare_event(5_000, h=h, random_state=12)
        for data in (again, named):
            assert_array_equal(data.scores, first.scores)
            assert_array_equal(data.labels, first.labels)
        assert not np.array_equal(other.scores, first.scores)
        assert 0 < first.labels.sum() < 500  # a rare positive class


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"a": 0.0}, "'a' parameter"),
        ({"b": -1.0}, "'b' parameter"),
        ({"slope": 0.0}, "'slope' parameter"),
        ({"slope": "steep"}, "'slope' parameter"),
        ({"n_samples": 0}, "'n_samples' parameter"),
        ({"h": -(2.0**-6)}, "'h' parameter"),
        ({"h": 1.0}, "h"),
    ],
)
def test_rare_event_rejects_bad_parameters_clearly(kwargs, match):
    kwargs = {"n_samples": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        make_rare_event(**kwargs)


def test_rare_event_problem_rejects_bad_parameters_clearly():
    from skcalbound.datasets._problems import RareEvent

    for field in ("a", "b", "slope"):
        for value in (0.0, -1.0, math.inf, math.nan, "1"):
            with pytest.raises(ValueError, match=f"{field} must be a positive finite"):
                RareEvent(**{field: value})


def test_a_truth_that_misses_its_promise_raises():
    # Beta(0.01, 2): the mass within 1e-290 of 0 is still ~1e-3, beyond any grading;
    # the integration error estimate says so, and the truth is refused, not returned.
    from skcalbound.datasets import _generators

    problem = _generators.perturb_problem(_custom(0.01, 2.0), 2.0**-3)
    assert problem.ce_integration_error > 1e-5
    with pytest.raises(ArithmeticError, match=r"known only to 0\.001.*above 1e-05"):
        problem.true_ce
    # make_calibration_problem(..., h=2**-3) samples through _sample, which refuses it.
    with pytest.raises(ArithmeticError, match="known only to"):
        _generators._sample(problem, 10, 0)


def test_unbounded_points_are_found_only_where_the_density_blows_up():
    from skcalbound.datasets._exact import unbounded_points
    from skcalbound.datasets._generators import PROBLEM_NAMES, get_problem

    ends = np.array([0.0, 0.5, 1.0])
    assert unbounded_points(stats.beta(0.5, 20).pdf, ends) == [(0.0, 1)]
    assert unbounded_points(stats.beta(2, 0.5).pdf, ends) == [(1.0, -1)]
    assert unbounded_points(stats.beta(0.9, 0.9).pdf, ends) == [(0.0, 1), (1.0, -1)]
    for law in (stats.beta(1, 1), stats.beta(1, 3), stats.beta(2, 5)):
        assert unbounded_points(law.pdf, ends) == []
    # None in the built-in problems (steps of a density are not singularities):
    # their truths, and the regression values above, are the ungraded ones; except
    # the rare event's Beta(0.5, 20), unbounded at 0.
    for name in PROBLEM_NAMES:
        base = get_problem(name)
        expected = [(0.0, 1)] if name == "rare_event" else []
        assert unbounded_points(base._continuous_pdf, base._breakpoints()) == expected


# --------------------------------------------------------------------------------------
# An oscillating calibration function: binned ECE is stuck, certified bounds converge.
#
# ``eta(s) = s + 0.15 sin(80 pi s)`` with ``s ~ U(0.2, 0.8)`` (:class:`Oscillating`):
# 24 whole periods, ``eta`` in [0, 1], ``CE = 0.3 / pi ~ 0.0955`` exactly. Fifteen
# equal-width bins are 2.67 periods wide, so the binned ECE averages the oscillation out
# and converges to ``population_binned_ece() ~ 0.0090``, a tenth of the CE, however
# large ``n`` gets. The certified bounds that know how fast ``eta`` can move
# (``L = 1 + 12 pi ~ 38.7``, ``b2 = 0.15 (80 pi)^2 ~ 9475``) stay above CE and close in
# on it.
# --------------------------------------------------------------------------------------
# ----------------------------------------------------------------------------------
# The problem: closed forms against independent numerics
# ----------------------------------------------------------------------------------
def test_oscillating_hand_values():
    problem = Oscillating()
    assert str(problem) == "oscillating"
    assert_allclose(problem.true_ce, 0.3 / math.pi, rtol=1e-15)
    assert_allclose(problem.b1, 1.0 + 12.0 * math.pi, rtol=1e-15)
    assert_allclose(problem.b2, 0.15 * (80.0 * math.pi) ** 2, rtol=1e-15)
    # 24 periods, each rising and falling by ~2A = 0.3 twice: V is just above 14.4.
    k = 12.0 * math.pi
    exact = (
        0.6
        * (4 * math.acos(-1 / k) - 2 * math.pi + 4 * math.sqrt(k * k - 1))
        / (2 * math.pi)
    )
    assert exact < problem.V <= exact * (1 + 2e-12)
    assert 14.4 < problem.V < 14.41
    assert problem.assumptions == {
        "V": problem.V,
        "b1": problem.b1,
        "b2": problem.b2,
        "L": problem.b1,
    }
    assert problem.assumption_kwargs("L") == {"L": problem.b1}


def test_oscillating_eta_stays_a_probability_and_is_constant_off_the_support():
    problem = Oscillating()
    s = np.linspace(0.0, 1.0, 1_000_001)
    eta = problem.eta(s)
    assert eta.min() >= 0.0 and eta.max() <= 1.0
    # Lowest near s = 0.2 + 3 / (4c) = 0.21875, where the sine is -1: 0.21875 - 0.15,
    # less 1 / (2 b2) ~ 5e-5 because eta' = 1 there, not 0.
    assert 0.06875 - 6e-5 < eta.min() < 0.06875 - 5e-5
    assert_allclose(problem.eta([0.0, 0.1, 0.2]), 0.2, atol=1e-14)
    assert_allclose(problem.eta([0.8, 0.9, 1.0]), 0.8, atol=1e-14)


def test_oscillating_constants_numerically():
    """CE, V by quadrature; L, b2, V on fine grids (the suprema are attained)."""
    problem = Oscillating()
    c, A, lo, hi = problem.cycles, problem.amplitude, problem.low, problem.high
    omega = 2 * math.pi * c
    # CE: the density is 1 / (hi - lo); |s - eta| has kinks at the zeros j / (2c).
    kinks = np.arange(round(2 * c * lo), round(2 * c * hi) + 1) / (2 * c)
    ce = checked_quad(lambda s: abs(s - problem.eta(s)), lo, hi, points=kinks) / (
        hi - lo
    )
    assert_allclose(ce, problem.true_ce, atol=1e-10)
    # V: int |eta'|, with breakpoints at the zeros of eta' = 1 + k cos(omega s).
    theta0 = math.acos(-1.0 / problem.k)
    zeros = np.sort(
        [
            (2 * math.pi * j + sign * theta0) / omega
            for j in range(round(c * lo), round(c * hi) + 1)
            for sign in (-1, 1)
        ]
    )
    zeros = zeros[(zeros > lo) & (zeros < hi)]
    assert zeros.shape[0] == 2 * round(c * (hi - lo))

    def speed(s):
        return abs(1.0 + problem.k * math.cos(omega * s))

    assert_allclose(checked_quad(speed, lo, hi, points=zeros), problem.V, rtol=1e-11)
    # On all of [0, 1] (constant extension included): the grid sees at most V and L.
    grid = np.linspace(0.0, 1.0, 4_000_001)
    steps = np.abs(np.diff(problem.eta(grid)))
    assert steps.sum() <= problem.V
    assert_allclose(steps.sum(), problem.V, rtol=1e-6)
    slopes = steps / np.diff(grid)
    assert slopes.max() <= problem.b1 * (1 + 1e-9)
    assert_allclose(slopes.max(), problem.b1, rtol=1e-6)
    # b2 on the support, by central differences (truncation ~ (omega h)^2 / 12 ~ 5e-7).
    h = 1e-5
    inner = np.linspace(lo + h, hi - h, 600_001)
    second = (
        problem.eta(inner + h) - 2 * problem.eta(inner) + problem.eta(inner - h)
    ) / h**2
    assert_allclose(np.abs(second).max(), problem.b2, rtol=1e-5)
    assert_allclose(A * omega**2, problem.b2, rtol=1e-15)


def test_oscillating_monte_carlo(rng):
    problem = Oscillating()
    n = 10**6
    scores, labels = problem.sample(n, rng)
    assert scores.min() >= problem.low and scores.max() < problem.high
    residual = np.abs(scores - problem.eta(scores))
    assert abs(residual.mean() - problem.true_ce) < 5 * residual.std() / math.sqrt(n)
    noise = labels - problem.eta(scores)
    for g in (noise, noise * np.sin(2 * math.pi * problem.cycles * scores)):
        assert abs(g.mean()) < 5 * g.std() / math.sqrt(n)


@pytest.mark.parametrize("n_bins", [1, 8, 15, 40])
def test_population_binned_ece_by_quadrature(n_bins):
    problem = Oscillating()
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:]):
        a, b = max(a, problem.low), min(b, problem.high)
        if b > a:
            gap = checked_quad(lambda s: problem.eta(s) - s, a, b)
            total += abs(gap) / (problem.high - problem.low)
    assert_allclose(problem.population_binned_ece(n_bins), total, atol=1e-10)
    if n_bins in (
        1,
        8,
        40,
    ):  # bins of whole periods (24, 5, 1 in the support) see nothing
        assert problem.population_binned_ece(n_bins) < 1e-12


def test_oscillating_rejects_bad_parameters():
    with pytest.raises(ValueError, match="positive integer"):
        Oscillating(cycles=2.5)
    with pytest.raises(ValueError, match="must be integers"):
        Oscillating(low=0.21)
    with pytest.raises(ValueError, match="eta in"):
        Oscillating(amplitude=0.25)
    with pytest.raises(ValueError, match="low < high"):
        Oscillating(low=0.8, high=0.2)


def test_oscillating_small_amplitude_is_monotone():
    problem = Oscillating(amplitude=0.003, cycles=40)  # k = 0.24 pi < 1
    assert problem.V == problem.high - problem.low
    grid = np.linspace(0.0, 1.0, 200_001)
    assert np.all(np.diff(problem.eta(grid)) >= 0)


# --------------------------------------------------------------------------------------
# The multiclass problems (make_multiclass): exact truth, checked by simulation.
# --------------------------------------------------------------------------------------


def test_make_multiclass_rows_argmax_and_exact_truth():
    K = 4
    data = make_multiclass(300_000, K, a=2.0, b=2.0, power=2.0, random_state=0)
    P, y = data.proba, data.labels
    assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    c = P.max(axis=1)
    assert np.all(c > 1.0 / K)
    assert np.all(np.sort(P, axis=1)[:, -2] < c)  # the argmax is unique
    # E|U - U^2| = E[U] - E[U^2] = 1/2 - 3/10 for U ~ Beta(2, 2).
    assert_allclose(data.true_top_label_ce, (1 - 1 / K) * 0.2, rtol=1e-10)
    assert_allclose(data.true_classwise_ce, 2 / K * data.true_top_label_ce, rtol=1e-12)
    eta = _TemperedEta(K, 2.0)
    correct = P.argmax(axis=1) == y
    # P(correct | c) = eta(c): compare within bins of c.
    bins = np.digitize(c, np.linspace(1 / K, 1, 11))
    for b in np.unique(bins):
        mask = bins == b
        if mask.sum() > 5000:
            assert abs(correct[mask].mean() - eta(c[mask]).mean()) < 0.02
    # Class-wise: P(y = k | P_k) is eta(c) or (1 - eta(c)) / (K - 1).
    for k in range(K):
        pred = P.argmax(axis=1) == k
        assert abs((y == k)[pred].mean() - eta(P[pred, k]).mean()) < 0.01
        c_other = 1.0 - (K - 1) * P[~pred, k]
        assert (
            abs((y == k)[~pred].mean() - ((1 - eta(c_other)) / (K - 1)).mean()) < 0.01
        )
        cal = np.where(pred, eta(P[:, k]), (1 - eta(1 - (K - 1) * P[:, k])) / (K - 1))
        assert abs(np.abs(P[:, k] - cal).mean() - data.true_classwise_ce) < 2e-3
    assert abs(np.abs(c - eta(c)).mean() - data.true_top_label_ce) < 2e-3
    # The top-label problem agrees with the truth and with the constants.
    assert_allclose(data.top_label_problem.true_ce, data.true_top_label_ce, rtol=1e-8)
    assert data.top_label_assumptions == {
        "V": 1.0,
        "b1": 2.0,
        "b2": 2 / (1 - 1 / K),
        "L": 2.0,
    }
    assert data.classwise_assumptions["b2"] == pytest.approx(2.0 * K)


def test_make_multiclass_is_seeded():
    a = make_multiclass(50, 5, random_state=3)
    b = make_multiclass(50, 5, random_state=3)
    assert_array_equal(a.proba, b.proba)
    assert_array_equal(a.labels, b.labels)


# --------------------------------------------------------------------------------------
# The class-wise recipe with h: perturb every column, one NW fit per class.
# --------------------------------------------------------------------------------------


# Each K and each shape once by default (a Latin square's diagonal: the third shape,
# whose truth and law cost ~0.4 s, once); the other six cells under slow.
@pytest.mark.parametrize(
    "K, shape",
    [
        pytest.param(
            K, shape, marks=() if k == j else pytest.mark.slow, id=f"shape{j}-{K}"
        )
        for j, shape in enumerate([(2.0, 2.0, 2.0), (1.0, 1.0, 3.0), (3.0, 1.5, 2.5)])
        for k, K in enumerate([2, 3, 10])
    ],
)
def test_classwise_problem_has_the_exact_classwise_truth(K, shape):
    a, b, power = shape
    data = make_multiclass(10, K, a=a, b=b, power=power, random_state=0)
    problem = data.classwise_problem
    assert_allclose(problem.true_ce, data.true_classwise_ce, rtol=0, atol=1e-8)
    assert_allclose(problem.true_ce, 2 / K * data.true_top_label_ce, rtol=0, atol=1e-8)
    law = problem.scores
    assert law.support() == (0.0, 1.0)
    assert_allclose(law.cdf([0.0, 1.0 / K, 1.0]), [0.0, 1.0 - 1.0 / K, 1.0], atol=1e-12)
    # The law and eta match the columns of a large sample.
    big = make_multiclass(100_000, K, a=a, b=b, power=power, random_state=1)
    assert stats.kstest(big.proba[:, 0], law.cdf).pvalue > 1e-3
    restored = pickle.loads(pickle.dumps(problem))
    assert restored.true_ce == problem.true_ce
    assert_array_equal(restored.scores.cdf([0.1, 0.5]), law.cdf([0.1, 0.5]))
