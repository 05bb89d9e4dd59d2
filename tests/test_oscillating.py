"""An oscillating calibration function: binned ECE is stuck, certified bounds converge.

``eta(s) = s + 0.15 sin(80 pi s)`` with ``s ~ U(0.2, 0.8)`` (:class:`Oscillating`):
24 whole periods, ``eta`` in [0, 1], ``CE = 0.3 / pi ~ 0.0955`` exactly. Fifteen
equal-width bins are 2.67 periods wide, so the binned ECE averages the oscillation out
and converges to ``population_binned_ece() ~ 0.0090``, a tenth of the CE, however
large ``n`` gets. The certified bounds that know how fast ``eta`` can move
(``L = 1 + 12 pi ~ 38.7``, ``b2 = 0.15 (80 pi)^2 ~ 9475``) stay above CE and close in
on it.
"""

import math

import numpy as np
import pytest
from _synthetic import Oscillating, checked_quad
from numpy.testing import assert_allclose

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    binned_ece,
)


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


# ----------------------------------------------------------------------------------
# Binned ECE against the certified bounds as n grows
# ----------------------------------------------------------------------------------
SIZES = (10_000, 100_000, 400_000)


def test_binned_ece_stays_far_from_ce_while_certified_bounds_approach_it():
    """ECE converges to the wrong value; the Lipschitz and NW bounds close in on CE.

    Observed (data seed ``[7, n]``, ``random_state=0``, the default
    ``guarantee="high_probability"``), ``CE = 0.0955``:

    ====== ======= ========== ========= =========
    n      ECE     Lipschitz  NW        TV
    ====== ======= ========== ========= =========
    1e4    0.0108  0.3169     0.2366    1.0000
    1e5    0.0096  0.1731     0.1359    0.6744
    4e5    0.0086  0.1396     0.1173    0.4618
    ====== ======= ========== ========= =========

    so ``|ECE - CE|`` goes 0.085 -> 0.086 -> 0.087 (it tends to
    ``CE - 0.0090 = 0.0865``, the population binned ECE being ``0.0090``), while the
    Lipschitz gap goes 0.221 -> 0.078 -> 0.044 and the NW gap 0.141 -> 0.040 -> 0.022.
    (The published forms, ``guarantee="paper"``, gave 0.169 -> 0.063 -> 0.037 for
    Lipschitz and 0.147 -> 0.055 -> 0.033 for NW: the certified Lipschitz form pays for
    the training labels, the certified NW form is tighter by its expanded Lemma 6.)
    About 2 s.

    The TV bound is included for validity only: here ``V ~ 14.4`` (24 periods of a
    large oscillation), and its denoising term ``TVB ~ sqrt(4 t2 V / m)`` with
    ``t2 ~ sqrt(m ln(4m/delta) / 8)`` decays like ``(V^2 ln m / m)^(1/4)``: 0.40 of its
    0.47 at n = 4e5, so it is still ~5x CE and would need ~10^4 times more data to
    reach the gaps of the other two. It cannot exploit that ``eta`` is smooth.
    """
    problem = Oscillating()
    ce = problem.true_ce
    limit = problem.population_binned_ece(15)
    assert_allclose(limit, 0.00895, atol=5e-5)
    rows = []
    for n in SIZES:
        scores, labels = problem.sample(n, np.random.default_rng([7, n]))
        rows.append(
            {
                "ece": binned_ece(labels, scores),
                "lipschitz": LipschitzBucketBound(L=problem.b1, random_state=0)
                .fit(scores, labels)
                .bound_,
                "nw": NWCalibrationBound(b1=problem.b1, b2=problem.b2, random_state=0)
                .fit(scores, labels)
                .bound_,
                "tv": TVCalibrationBound(V=problem.V, random_state=0)
                .fit(scores, labels)
                .bound_,
            }
        )
        print(n, {key: round(value, 4) for key, value in rows[-1].items()})

    # Binned ECE: far from CE at every n, and the distance does not shrink: it tends
    # to CE - limit (0.0865), and at the largest n the ECE sits at its limit.
    ece_gaps = [abs(row["ece"] - ce) for row in rows]
    assert min(ece_gaps) > 0.07, ece_gaps
    assert ece_gaps[-1] >= 0.95 * ece_gaps[0], ece_gaps
    assert abs(rows[-1]["ece"] - limit) < 0.002, rows[-1]
    assert_allclose(ce - limit, 0.0865, atol=1e-4)

    # Certified bounds: above CE at every n, strictly closer at every step.
    for key, final_gap in [("lipschitz", 0.045), ("nw", 0.04), ("tv", 0.6)]:
        gaps = np.array([row[key] - ce for row in rows])
        assert np.all(gaps >= 0), (key, gaps)
        assert np.all(np.diff(gaps) < 0), (key, gaps)
        assert gaps[-1] < final_gap, (key, gaps)
    for key in ("lipschitz", "nw"):
        gaps = [row[key] - ce for row in rows]
        assert gaps[-1] < 0.3 * gaps[0], (key, gaps)
        # ... and at the largest n both are tighter than the ECE is wrong.
        assert gaps[-1] < 0.6 * ece_gaps[-1], (key, gaps, ece_gaps)
