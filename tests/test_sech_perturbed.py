"""``perturb_scores``: the public face of the exact sech sampler
(``skcalbound._sech``)."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from skcalbound import perturb_scores
from skcalbound._sech import sech_cdf, sech_inverse_cdf


def test_perturb_scores_is_the_inverse_cdf_sampler_on_the_random_state_uniforms():
    s = np.array([0.0, 1e-12, 0.3, 1.0, 0.7])
    u = np.random.RandomState(5).uniform(size=s.size)
    assert_array_equal(
        perturb_scores(s, 2**-6, random_state=5), sech_inverse_cdf(u, s, 2**-6)
    )


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
    assert_array_equal(
        perturb_scores(s, 0.05, random_state=3), perturb_scores(s, 0.05, random_state=3)
    )
    rs = np.random.RandomState(0)
    assert not np.array_equal(
        perturb_scores(s, 0.05, random_state=rs),
        perturb_scores(s, 0.05, random_state=rs),
    )


@pytest.mark.parametrize(
    "scores, h, match",
    [
        ([0.2, 1.5], 0.1, r"Scores must be probabilities in \[0, 1\]"),
        ([0.2, np.nan], 0.1, "Scores contain 1 NaN"),
        (
            [0.2, 0.3],
            0.0,
            "'h' parameter of perturb_scores must be a float in the range \\(0",
        ),
        ([0.2, 0.3], -1.0, "'h' parameter"),
    ],
)
def test_perturb_scores_rejects_bad_input(scores, h, match):
    with pytest.raises(ValueError, match=match):
        perturb_scores(scores, h)


# ----------------------------------------------------------------------------------
# SechPerturbedClassifier
# ----------------------------------------------------------------------------------
from _synthetic import ScoreAsProba  # noqa: E402
from numpy.testing import assert_allclose  # noqa: E402
from sklearn import config_context  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402
from sklearn.utils._param_validation import InvalidParameterError  # noqa: E402

from skcalbound import SechPerturbedClassifier  # noqa: E402
from skcalbound._sech import sech_derivative_bounds  # noqa: E402


def _data(n=400, seed=0):
    return make_classification(n_samples=n, n_features=5, random_state=seed)


def test_fit_clones_and_copies_the_inner_attributes():
    import pandas as pd

    X, y = _data()
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    inner = LogisticRegression()
    clf = SechPerturbedClassifier(inner, h=2**-5, random_state=0).fit(frame, y)
    assert not hasattr(inner, "coef_")  # the user's object is not fitted
    assert clf.estimator_ is not inner
    assert_array_equal(clf.estimator_.coef_, LogisticRegression().fit(frame, y).coef_)
    assert_array_equal(clf.classes_, [0, 1])
    assert clf.n_features_in_ == 5
    assert_array_equal(clf.feature_names_in_, frame.columns)
    b1, b2 = sech_derivative_bounds(2**-5)
    assert (clf.b1_, clf.b2_) == (b1, b2)
    assert clf.b1_ == np.tanh(32.0) * 16.0


def test_predict_proba_is_the_sech_sampler_on_the_inner_probabilities():
    # The documented generator: seeded in fit from random_state, one uniform per row.
    X, y = _data()
    clf = SechPerturbedClassifier(LogisticRegression(), h=2**-4, random_state=3).fit(
        X, y
    )
    seed = np.random.RandomState(3).randint(np.iinfo(np.int32).max)
    u = np.random.RandomState(seed).uniform(size=X.shape[0])
    inner = clf.estimator_.predict_proba(X)[:, 1]
    expected = sech_inverse_cdf(u, inner, 2**-4)
    proba = clf.predict_proba(X)
    assert_array_equal(proba[:, 1], expected)
    assert_array_equal(proba[:, 0], 1.0 - expected)
    assert proba.min() >= 0.0 and proba.max() <= 1.0


@pytest.mark.parametrize("s_orig", [0.0, 0.3, 1.0])
def test_perturbed_probabilities_follow_the_truncated_sech_law(s_orig):
    X = np.full((5000, 1), s_orig)
    clf = SechPerturbedClassifier(
        FrozenEstimator(ScoreAsProba().fit(X, [0, 1] * 2500)), h=2**-6, random_state=0
    ).fit(X, [0, 1] * 2500)
    draws = clf.predict_proba(X)[:, 1]
    p = stats.kstest(draws, lambda x: sech_cdf(x, s_orig, 2**-6)).pvalue
    assert p > 1e-3


def test_fresh_noise_per_call_reproducible_as_a_sequence():
    X, y = _data()
    first = SechPerturbedClassifier(LogisticRegression(), random_state=7).fit(X, y)
    second = SechPerturbedClassifier(LogisticRegression(), random_state=7).fit(X, y)
    a1, a2 = first.predict_proba(X), first.predict_proba(X)
    assert not np.array_equal(a1, a2)  # fresh noise on every call
    assert_array_equal(second.predict_proba(X), a1)  # same sequence from the same seed
    assert_array_equal(second.predict_proba(X), a2)
    # Refitting restarts the sequence.
    assert_array_equal(first.fit(X, y).predict_proba(X), a1)


def test_predict_is_the_argmax_of_the_same_draw_and_keeps_the_labels():
    X, y = _data(n=2000)
    labels = np.where(y == 1, "yes", "no")
    clf = SechPerturbedClassifier(LogisticRegression(), h=2**-2, random_state=0).fit(
        X, labels
    )
    assert_array_equal(clf.classes_, ["no", "yes"])
    state = clf.random_state_.get_state()
    proba = clf.predict_proba(X)
    clf.random_state_.set_state(state)
    pred = clf.predict(X)
    assert_array_equal(pred, np.where(proba[:, 1] > 0.5, "yes", "no"))
    clf.random_state_.set_state(state)
    assert_allclose(np.exp(clf.predict_log_proba(X)), proba, rtol=1e-15)
    # A large h flips some predictions of confident-but-not-certain scores.
    assert 0 < np.sum(pred != clf.estimator_.predict(X)) < 0.2 * X.shape[0]


def test_frozen_estimator_is_not_refit():
    X, y = _data()
    model = LogisticRegression().fit(X, y)
    coef = model.coef_.copy()
    X_other, y_other = _data(seed=1)
    clf = SechPerturbedClassifier(FrozenEstimator(model), random_state=0).fit(
        X_other, y_other
    )
    assert clf.estimator_.estimator is model
    assert_array_equal(model.coef_, coef)
    assert_array_equal(clf.estimator_.predict_proba(X), model.predict_proba(X))


def test_inside_a_pipeline():
    X, y = _data()
    pipe = make_pipeline(
        StandardScaler(), SechPerturbedClassifier(LogisticRegression(), random_state=0)
    )
    proba = pipe.fit(X, y).predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-15)
    unperturbed = (
        make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y).predict_proba(X)
    )
    assert np.abs(proba - unperturbed).max() < 37 * 2**-6
    assert not np.array_equal(proba, unperturbed)


def test_metadata_routing_sends_sample_weight_to_the_inner_fit():
    X, y = _data()
    weights = np.random.default_rng(0).uniform(0.1, 3.0, size=y.shape[0])
    weighted = LogisticRegression().fit(X, y, sample_weight=weights).coef_
    assert not np.allclose(weighted, LogisticRegression().fit(X, y).coef_)
    with config_context(enable_metadata_routing=True):
        inner = LogisticRegression().set_fit_request(sample_weight=True)
        clf = SechPerturbedClassifier(inner).fit(X, y, sample_weight=weights)
        assert_array_equal(clf.estimator_.coef_, weighted)
        # Not requested: scikit-learn's routing refuses it, naming the inner estimator.
        with pytest.raises(ValueError, match="sample_weight"):
            SechPerturbedClassifier(LogisticRegression()).fit(
                X, y, sample_weight=weights
            )
    # Without routing, fit parameters go to the inner fit as they are.
    clf = SechPerturbedClassifier(LogisticRegression()).fit(X, y, sample_weight=weights)
    assert_array_equal(clf.estimator_.coef_, weighted)


def test_multiclass_targets_are_rejected_before_fitting():
    X, y = make_classification(
        n_samples=300, n_classes=3, n_informative=3, random_state=0
    )
    inner = LogisticRegression()
    with pytest.raises(
        ValueError,
        match=(
            "Only binary classification is supported. "
            "The type of the target is multiclass"
        ),
    ):
        SechPerturbedClassifier(inner).fit(X, y)
    assert not hasattr(inner, "coef_")


@pytest.mark.parametrize(
    "estimator",
    [SVC(), LinearRegression(), "LogisticRegression"],
    ids=["svc_without_probability", "regressor", "string"],
)
def test_estimators_without_predict_proba_are_rejected(estimator):
    X, y = _data()
    with pytest.raises(
        InvalidParameterError,
        match=(
            "'estimator' parameter of SechPerturbedClassifier must be an object "
            "implementing 'fit' and 'predict_proba'"
        ),
    ):
        SechPerturbedClassifier(estimator).fit(X, y)


@pytest.mark.parametrize("h", [0.0, -1.0, "big"])
def test_bad_h_is_rejected(h):
    X, y = _data()
    with pytest.raises(
        InvalidParameterError, match="'h' parameter of SechPerturbedClassifier"
    ):
        SechPerturbedClassifier(LogisticRegression(), h=h).fit(X, y)


class BrokenProba(ScoreAsProba):
    def predict_proba(self, X):
        return np.column_stack((np.zeros(len(X)), np.full(len(X), 1.5)))


def test_bad_inner_probabilities_get_a_clear_error_and_input_is_untouched():
    X = np.random.default_rng(0).uniform(size=(50, 1))
    before = X.copy()
    clf = SechPerturbedClassifier(BrokenProba()).fit(X, [0, 1] * 25)
    with pytest.raises(
        ValueError, match="the inner estimator's predict_proba has 2 columns"
    ):
        clf.predict_proba(X)
    assert_array_equal(X, before)


def test_unfitted_methods_raise_not_fitted():
    from sklearn.exceptions import NotFittedError

    clf = SechPerturbedClassifier(LogisticRegression())
    for method in (clf.predict, clf.predict_proba, clf.predict_log_proba):
        with pytest.raises(NotFittedError):
            method(np.zeros((2, 5)))


# ----------------------------------------------------------------------------------
# h above 1/2: refused at the doors that perturb, with the bounds' hint
# ----------------------------------------------------------------------------------
from skcalbound import NWCalibrationBound  # noqa: E402

PERTURBATION_H_MESSAGE = (
    "h={h!r} is above 0.5. h is the bandwidth, in probability units, of the sech "
    "perturbation (perturb_scores(y_prob, h) or SechPerturbedClassifier(h=h)), "
    "typically 2**-6 = 0.015625: above 0.5 it spreads each score over most of "
    "[0, 1], the perturbed scores rank little better than chance, and the bounds "
    "refuse it.{meant}"
)


@pytest.mark.parametrize(
    "h, meant",
    [
        (64, " Did you mean h=1/64=0.015625?"),
        (6, " Did you mean h=1/6=0.166667 or h=2**-6=0.015625?"),
        (0.75, ""),
    ],
)
def test_h_above_one_half_is_refused_where_the_perturbation_is_drawn(h, meant):
    # The trap: perturb_scores(s, 64) and SechPerturbedClassifier(h=64), meaning
    # h = 1/64, were accepted and took a model's AUROC from 0.72 to 0.50, while the
    # bounds refused h=64 with this hint.
    expected = PERTURBATION_H_MESSAGE.format(h=h, meant=meant)
    X, y = _data()
    with pytest.raises(ValueError) as perturb:
        perturb_scores(np.linspace(0, 1, 11), h)
    with pytest.raises(ValueError) as wrap:
        SechPerturbedClassifier(LogisticRegression(), h=h).fit(X, y)
    with pytest.raises(ValueError) as bound:
        NWCalibrationBound(h=h).fit(np.linspace(0, 1, 400), y)
    assert str(perturb.value) == str(wrap.value) == expected
    assert meant in str(bound.value)  # the bounds' hint, word for word
    # h = 1/2 itself is accepted, as by the bounds.
    assert perturb_scores(np.linspace(0, 1, 11), 0.5, random_state=0).shape == (11,)
    clf = SechPerturbedClassifier(LogisticRegression(), h=0.5, random_state=0)
    assert clf.fit(X, y).predict_proba(X).shape == (X.shape[0], 2)
