"""``perturb_scores``: the public face of the exact sech sampler (``skcalbound._sech``)."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from skcalbound import perturb_scores
from skcalbound._sech import sech_cdf, sech_inverse_cdf


def test_perturb_scores_is_the_inverse_cdf_sampler_on_the_random_state_uniforms():
    s = np.array([0.0, 1e-12, 0.3, 1.0, 0.7])
    u = np.random.RandomState(5).uniform(size=s.size)
    assert_array_equal(perturb_scores(s, 2**-6, random_state=5), sech_inverse_cdf(u, s, 2**-6))


@pytest.mark.parametrize("h", [2**-2, 2**-6, 2**-12, 2**-20])
@pytest.mark.parametrize("s_orig", [0.0, 1e-12, 0.3, 1.0])
def test_perturbed_scores_follow_the_truncated_sech_law(h, s_orig):
    draws = perturb_scores(np.full(4000, s_orig), h, random_state=1)
    assert np.all(np.isfinite(draws)) and draws.min() >= 0.0 and draws.max() <= 1.0
    p = stats.kstest(draws, lambda x: sech_cdf(x, s_orig, h)).pvalue
    assert p > 1e-4


def test_perturb_scores_accepts_predict_proba_and_leaves_input_alone():
    proba = np.array([[0.75, 0.25], [0.5, 0.5], [0.0, 1.0]])
    before = proba.copy()
    out = perturb_scores(proba, 0.1, random_state=0)
    assert_array_equal(out, perturb_scores(proba[:, 1], 0.1, random_state=0))
    assert_array_equal(proba, before)
    assert out.shape == (3,)


def test_perturb_scores_reproducible_and_fresh():
    s = np.linspace(0, 1, 50)
    assert_array_equal(perturb_scores(s, 0.05, random_state=3),
                       perturb_scores(s, 0.05, random_state=3))
    rs = np.random.RandomState(0)
    assert not np.array_equal(perturb_scores(s, 0.05, random_state=rs),
                              perturb_scores(s, 0.05, random_state=rs))


@pytest.mark.parametrize(
    "scores, h, match",
    [
        ([0.2, 1.5], 0.1, r"Scores must be probabilities in \[0, 1\]"),
        ([0.2, np.nan], 0.1, "Scores contain 1 NaN"),
        ([0.2, 0.3], 0.0, "'h' parameter of perturb_scores must be a float in the range \\(0"),
        ([0.2, 0.3], -1.0, "'h' parameter"),
    ],
)
def test_perturb_scores_rejects_bad_input(scores, h, match):
    with pytest.raises(ValueError, match=match):
        perturb_scores(scores, h)
