"""Expected losses under the sech perturbation: deterministic quadrature against Monte
Carlo averages of the sampler, limits and hand values."""

import re

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate
from sklearn.metrics import brier_score_loss, log_loss

from skcalbound import perturb_scores, perturbed_brier_score_loss, perturbed_log_loss
from skcalbound._sech import sech_pdf

# Unperturbed probabilities with both ends, near-ends and the middle, and their labels.
P = np.array([0.0, 1e-12, 0.02, 0.3, 0.5, 0.7, 0.98, 1.0 - 1e-12, 1.0, 0.9])
Y = np.array([0, 1, 0, 1, 1, 0, 1, 0, 1, 1])


# A wide, a middle and a narrow kernel by default (10**6 draws, ~0.2 s a cell).
@pytest.mark.parametrize(
    "h",
    [
        2.0**-k if k in (2, 6, 12) else pytest.param(2.0**-k, marks=pytest.mark.slow)
        for k in (2, 4, 6, 8, 10, 12)
    ],
)
def test_expected_losses_match_monte_carlo_within_their_standard_error(h):
    # 10**6 perturbed draws: 10**5 per probability.
    draws = 100_000
    s = perturb_scores(np.repeat(P, draws), h, random_state=int(np.log2(1 / h)))
    y = np.repeat(Y, draws)
    with np.errstate(divide="ignore"):
        log_terms = np.where(y == 1, np.log(s), np.log1p(-s))
    assert np.all(np.isfinite(log_terms))
    for expected, values in [
        (perturbed_log_loss(Y, P, h=h), -log_terms.reshape(len(P), draws)),
        (perturbed_brier_score_loss(Y, P, h=h), ((s - y) ** 2).reshape(len(P), draws)),
    ]:
        # The mean over the 10 probabilities of per-probability means: its standard
        # error from the per-probability variances.
        mc = values.mean()
        se = np.sqrt(values.var(axis=1, ddof=1).sum() / draws) / len(P)
        assert abs(expected - mc) < 4 * se, (h, expected, mc, se)


def _quad_loss(metric, p, y, h):
    """``E loss(s, y)`` for ``s`` drawn from the sech kernel around ``p``, by adaptive
    quadrature of the density (independent of the CDF-variable rule)."""

    def loss(s):
        if metric is perturbed_brier_score_loss:
            return (s - y) ** 2
        return -np.log(s) if y == 1 else -np.log1p(-s)

    return integrate.quad(
        lambda s: loss(s) * sech_pdf(s, p, h),
        0,
        1,
        points=[p],
        epsabs=1e-14,
        epsrel=1e-12,
        limit=200,
    )[0]


def test_against_adaptive_quadrature_of_the_density():
    # An independent route: integrate the loss against the kernel density in s.
    h = 2.0**-3
    for p, y in [(0.0, 1), (0.2, 0), (0.75, 1), (1.0, 0)]:
        for metric, rtol in (
            (perturbed_log_loss, 1e-9),
            (perturbed_brier_score_loss, 1e-10),
        ):
            expected = 0.5 * (
                _quad_loss(metric, p, y, h) + _quad_loss(metric, p, 1 - y, h)
            )
            kwargs = {"n_nodes": 128} if metric is perturbed_log_loss else {}
            assert_allclose(
                metric([y, 1 - y], [p, p], h=h, **kwargs), expected, rtol=rtol
            )


def test_small_h_tends_to_the_unperturbed_losses():
    p = np.array([0.1, 0.35, 0.6, 0.9])
    y = np.array([0, 1, 0, 1])
    h = 2.0**-30
    assert_allclose(perturbed_log_loss(y, p, h=h), log_loss(y, p), rtol=1e-7)
    assert_allclose(
        perturbed_brier_score_loss(y, p, h=h), brier_score_loss(y, p), rtol=1e-7
    )
    # Perturbation costs: both losses grow with h here.
    losses = [perturbed_log_loss(y, p, h=2.0**-k) for k in (8, 6, 4, 2)]
    assert np.all(np.diff(losses) > 0)


def test_finite_at_probabilities_rounding_to_one_with_tiny_h():
    # 1 - 2**-53 with h = 2**-40: perturbed scores round to exactly 1 in double, but the
    # expected log-loss of a negative label is finite (about -log(h) + 0.6).
    loss = perturbed_log_loss([0, 1], [1 - 2.0**-53, 1 - 2.0**-53], h=2.0**-40)
    assert np.isfinite(loss)
    assert 13 < loss < 15  # 0.5 * (28.06 + ~0)


def test_predict_proba_input_and_labels_of_any_two_classes():
    proba = np.column_stack((1 - P, P))
    labels = np.where(Y == 1, "spam", "ham")
    assert perturbed_log_loss(labels, proba, h=0.1, pos_label="spam") == (
        perturbed_log_loss(Y, P, h=0.1)
    )
    assert perturbed_brier_score_loss(labels, proba, h=0.1, pos_label="spam") == (
        perturbed_brier_score_loss(Y, P, h=0.1)
    )


@pytest.mark.parametrize("func", [perturbed_log_loss, perturbed_brier_score_loss])
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(y_true=[0, 1], y_prob=[0.2, 0.5], h=0.0), "'h' parameter"),
        (
            dict(y_true=[0, 1], y_prob=[0.2, 1.5], h=0.1),
            r"Scores must be probabilities in \[0, 1\]",
        ),
        (dict(y_true=[0, 1, 2], y_prob=[0.2, 0.5, 0.1], h=0.1), "two classes"),
        (
            dict(y_true=[0, 1], y_prob=[0.2, 0.5, 0.1], h=0.1),
            "inconsistent numbers of samples",
        ),
        (
            dict(y_true=[0, 1], y_prob=[0.2, 0.5], h=0.1, n_nodes=2),
            "'n_nodes' parameter",
        ),
    ],
)
def test_bad_input(func, kwargs, match):
    with pytest.raises(ValueError, match=match):
        func(**kwargs)


@pytest.mark.parametrize("metric", [perturbed_log_loss, perturbed_brier_score_loss])
def test_h_above_one_half_is_refused_with_the_bounds_hint(metric):
    # The loss of a perturbation that no bound accepts would be scored without a
    # word; h = 6 meant 2**-6 or 1/6.
    with pytest.raises(
        ValueError,
        match=re.escape(
            "h=6 is above 0.5. h is the bandwidth, in probability units, of the sech "
            "perturbation"
        )
        + ".*"
        + re.escape("Did you mean h=1/6=0.166667 or h=2**-6=0.015625?"),
    ):
        metric(Y, P, h=6)
    assert np.isfinite(metric(Y, P, h=0.5))


# --------------------------------------------------------------------------------------
# Labels of a single class (a segment or a CV fold without positives): the metrics are
# well defined, as scikit-learn's brier_score_loss and log_loss are on them.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", [perturbed_log_loss, perturbed_brier_score_loss])
@pytest.mark.parametrize(
    "y_true, pos_label, positive",
    [
        ([1, 1, 1, 1], None, 1),
        ([0, 0, 0, 0], None, 0),
        ([-1, -1, -1, -1], None, 0),
        ([True, True, True, True], None, 1),
        (["stay"] * 4, "churn", 0),
        (["churn"] * 4, "churn", 1),
    ],
)
def test_single_class_equals_the_mean_of_hand_expectations(
    metric, y_true, pos_label, positive
):
    h = 2.0**-3
    p = np.array([0.0, 0.2, 0.75, 1.0])
    expected = np.mean([_quad_loss(metric, q, positive, h) for q in p])
    assert_allclose(
        metric(y_true, p, h=h, n_nodes=128, pos_label=pos_label), expected, rtol=1e-9
    )


def test_single_class_tends_to_sklearn_losses_and_adds_up_to_both_classes():
    # With a tiny h: scikit-learn's losses, which take one class too (log_loss given
    # labels=[0, 1]).
    p = np.array([0.1, 0.35, 0.6, 0.9])
    h = 2.0**-30
    for y in (np.ones(4, dtype=int), np.zeros(4, dtype=int)):
        assert_allclose(
            perturbed_log_loss(y, p, h=h), log_loss(y, p, labels=[0, 1]), rtol=1e-7
        )
        assert_allclose(
            perturbed_brier_score_loss(y, p, h=h), brier_score_loss(y, p), rtol=1e-7
        )
    # A mean of per-sample terms: the two classes' means, weighted, give the whole's.
    positive = Y == 1
    for metric in (perturbed_log_loss, perturbed_brier_score_loss):
        parts = [
            metric(Y[rows], P[rows], h=2**-6) * rows.sum()
            for rows in (positive, ~positive)
        ]
        assert_allclose(sum(parts) / Y.size, metric(Y, P, h=2**-6), rtol=1e-13)


def test_single_class_reads_the_predict_proba_column_of_pos_label():
    p = np.array([0.1, 0.35, 0.6, 0.9])
    proba = np.column_stack((1 - p, p))  # classes_ ["churn", "stay"]: churn first
    for metric in (perturbed_log_loss, perturbed_brier_score_loss):
        # No churn: all negatives, scored on column 0, churn's.
        assert metric(["stay"] * 4, proba, h=0.1, pos_label="churn") == metric(
            [0] * 4, 1 - p, h=0.1
        )
        # All pos_label: the absent class, hence the column, is unknown.
        with pytest.raises(ValueError, match="do not say which column"):
            metric(["churn"] * 4, proba, h=0.1, pos_label="churn")


@pytest.mark.parametrize("func", [perturbed_log_loss, perturbed_brier_score_loss])
@pytest.mark.parametrize(
    "y_true, pos_label, match",
    [
        ([2, 2], None, re.escape("y_true takes value in {2} and pos_label is not")),
        (["a", "a"], None, re.escape("y_true takes value in {'a'} and pos_label")),
        ([0, 0], "1", "a string and a number are never the same class"),
        ([0.0, np.nan], None, "NaN"),
    ],
)
def test_single_class_without_a_known_positive_class_is_refused(
    func, y_true, pos_label, match
):
    with pytest.raises(ValueError, match=match):
        func(y_true, [0.2, 0.5], h=0.1, pos_label=pos_label)
