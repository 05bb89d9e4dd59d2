"""Scorers for cross_validate / GridSearchCV and the refit rule that chooses h."""

import pickle
import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, check_scoring, roc_auc_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

from skcalbound import (
    BelowChanceWarning,
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    MonotonicityWarning,
    NWCalibrationBound,
    SechPerturbedClassifier,
    TVCalibrationBound,
    largest_h_within_tolerance,
    make_bound_scorer,
    make_perturbation_scorer,
    perturb_scores,
    perturbed_brier_score_loss,
    perturbed_log_loss,
)

H_GRID = [2.0**-k for k in range(2, 9)]
# The searches below fit the NW bound once per candidate and fold, and a fit grows
# slower as h shrinks (~0.5 s at h = 2^-10 on 1000 scores): by default they run on a
# coarser grid, the full grids under ``slow``.
COARSE_H_GRID = [2.0**-k for k in (2, 5, 8)]


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=6000, n_features=8, flip_y=0.05, random_state=0
    )
    return X[:3000], y[:3000], X[3000:], y[3000:]


def _fitted(data, h=2**-4, pipeline=False):
    X, y, _, _ = data
    clf = SechPerturbedClassifier(LogisticRegression(), h=h, random_state=0)
    model = make_pipeline(StandardScaler(), clf) if pipeline else clf
    return model.fit(X, y), clf


@pytest.mark.parametrize("pipeline", [False, True], ids=["classifier", "pipeline"])
@pytest.mark.parametrize(
    "method, Bound",
    [("nw", NWCalibrationBound), ("lipschitz", LipschitzBucketBound)],
)
def test_bound_scorer_reads_h_and_equals_the_estimator_on_the_same_draw(
    data, pipeline, method, Bound
):
    model, clf = _fitted(data, pipeline=pipeline)
    _, _, X, y = data
    scorer = make_bound_scorer(method, random_state=0, confidence_level=0.9)
    state = clf.random_state_.get_state()
    value = scorer(model, X, y)
    clf.random_state_.set_state(state)
    proba = model.predict_proba(X)
    expected = Bound(h=2**-4, random_state=0, confidence_level=0.9).fit(proba, y).bound_
    assert value == -expected
    assert -1.0 <= value < 0.0


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
@pytest.mark.parametrize(
    "method, Bound, params",
    [
        ("nw", NWCalibrationBound, {"h": 2**-4}),
        ("lipschitz", LipschitzBucketBound, {"h": 2**-4}),
        ("tv", TVCalibrationBound, {}),
    ],
)
def test_bound_scorer_passes_the_guarantee(data, guarantee, method, Bound, params):
    model, clf = _fitted(data)
    _, _, X, y = data
    scorer = make_bound_scorer(method, guarantee=guarantee, random_state=0)
    assert f"guarantee={guarantee!r}" in repr(scorer)
    state = clf.random_state_.get_state()
    value = scorer(model, X, y)
    clf.random_state_.set_state(state)
    proba = model.predict_proba(X)
    expected = Bound(**params, guarantee=guarantee, random_state=0).fit(proba, y)
    assert value == -expected.bound_
    other = "paper" if guarantee == "high_probability" else "high_probability"
    other_mode = Bound(**params, guarantee=other, random_state=0).fit(proba, y)
    assert value != -other_mode.bound_


def test_nw_scorer_derives_b1_b2_from_h_in_its_own_guarantee_mode(data):
    # The classifier's b1_/b2_ are those of the default mode; the scorer must not read
    # them: in paper mode b2 is Corollary 4's, three times the sharp value.
    model, clf = _fitted(data)
    _, _, X, y = data
    proba = model.predict_proba(X)
    h = 2**-4
    sharp_b2 = np.tanh(1 / h) ** 2 / (2 * h**2)
    b1 = np.tanh(1 / h) / (2 * h)
    expected_b2 = {"high_probability": sharp_b2, "paper": 3 * sharp_b2}
    values = {}
    for guarantee, b2 in expected_b2.items():
        # The worst-case form reads h only through (b1, b2); the default also has a
        # relative branch under h.
        scorer = make_bound_scorer(
            "nw", guarantee=guarantee, noise="worst_case", random_state=0
        )
        est = scorer.bound_estimator(model)
        assert est.h == h and est.b1 is None and est.b2 is None
        est.fit(proba, y)
        assert_allclose([est.b1_, est.b2_], [b1, b2], rtol=1e-12)
        # The same number as stating those constants directly.
        stated = NWCalibrationBound(
            b1=est.b1_,
            b2=est.b2_,
            guarantee=guarantee,
            noise="worst_case",
            random_state=0,
        ).fit(proba, y)
        assert est.bound_ == stated.bound_
        values[guarantee] = est.bound_
    assert values["high_probability"] != values["paper"]
    # Lipschitz: L = b1 in both modes.
    for guarantee in expected_b2:
        est = make_bound_scorer("lipschitz", guarantee=guarantee).bound_estimator(model)
        assert est.h == h and est.fit(proba, y).L_ == pytest.approx(b1, rel=1e-12)


def test_bound_scorer_with_explicit_assumptions_on_any_classifier(data):
    X_fit, y_fit, X, y = data
    model = LogisticRegression().fit(X_fit, y_fit)
    proba = model.predict_proba(X)
    tv = make_bound_scorer("tv", V=1.0, random_state=0)(model, X, y)
    assert tv == -TVCalibrationBound(V=1.0, random_state=0).fit(proba, y).bound_
    nw = make_bound_scorer("nw", b1=2.0, b2=8.0, random_state=0)(model, X, y)
    assert (
        nw == -NWCalibrationBound(b1=2.0, b2=8.0, random_state=0).fit(proba, y).bound_
    )
    lip = make_bound_scorer("lipschitz", L=2.0, random_state=0)(model, X, y)
    assert lip == -LipschitzBucketBound(L=2.0, random_state=0).fit(proba, y).bound_
    # Given constants win over the perturbed classifier's h.
    perturbed, clf = _fitted(data)
    state = clf.random_state_.get_state()
    value = make_bound_scorer("nw", b1=2.0, b2=8.0, random_state=0)(perturbed, X, y)
    clf.random_state_.set_state(state)
    proba = perturbed.predict_proba(X)
    assert (
        value
        == -NWCalibrationBound(b1=2.0, b2=8.0, random_state=0).fit(proba, y).bound_
    )


def test_monotone_scorer_gives_a_crossing_band_the_trivial_score(data):
    """Scored against the opposite labels, the model's probabilities point away from
    them: the band crosses, and its bound (small) would make the worst model look
    the best in a search. It scores -1, the trivial bound."""
    X_fit, y_fit, X, y = data
    model = LogisticRegression().fit(X_fit, y_fit)
    scorer = make_bound_scorer("monotone", random_state=0)
    with pytest.warns(MonotonicityWarning), pytest.warns(BelowChanceWarning):
        crossed = MonotoneCalibrationBound(random_state=0).fit(
            model.predict_proba(X), 1 - y
        )
    assert crossed.monotonicity_rejected_ and crossed.bound_ < 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert scorer(model, X, 1 - y) == -1.0
    assert -0.2 < scorer(model, X, y) < 0.0  # the labels as they are


@pytest.mark.parametrize("cv", [None, 3])
def test_monotone_scorer_needs_no_h_and_equals_the_estimator(data, cv):
    # "monotone" bounds the model's own probabilities (no perturbation, no h), like
    # "tv"; in cross_validate and GridSearchCV as a named scorer.
    X_fit, y_fit, X, y = data
    model = LogisticRegression().fit(X_fit, y_fit)
    proba = model.predict_proba(X)
    scorer = make_bound_scorer("monotone", cv=cv, random_state=0)
    assert repr(scorer) == f"make_bound_scorer('monotone', cv={cv!r}, random_state=0)"
    est = MonotoneCalibrationBound(cv=cv, random_state=0).fit(proba, y)
    assert scorer(model, X, y) == -est.bound_
    assert -1.0 < scorer(model, X, y) < 0.0
    # A perturbed classifier is scored on its (perturbed) probabilities, no h read.
    perturbed, clf = _fitted(data)
    state = clf.random_state_.get_state()
    value = scorer(perturbed, X, y)
    clf.random_state_.set_state(state)
    expected = MonotoneCalibrationBound(cv=cv, random_state=0).fit(
        perturbed.predict_proba(X), y
    )
    assert value == -expected.bound_
    result = cross_validate(model, X, y, cv=2, scoring={"monotone": scorer})
    by_hand = [
        -MonotoneCalibrationBound(cv=cv, random_state=0)
        .fit(clone(model).fit(X[train], y[train]).predict_proba(X[test]), y[test])
        .bound_
        for train, test in StratifiedKFold(2).split(X, y)
    ]
    assert_array_equal(result["test_monotone"], by_hand)
    with pytest.raises(TypeError, match="unexpected keyword argument 'h'"):
        make_bound_scorer("monotone", h=2**-4)


def test_bound_scorer_uses_the_positive_class_of_string_labels(data):
    X_fit, y_fit, X, y = data
    names = np.array(["neg", "pos"])
    model = LogisticRegression().fit(X_fit, names[y_fit])
    value = make_bound_scorer("tv", random_state=0)(model, X, names[y])
    proba = model.predict_proba(X)
    assert value == -TVCalibrationBound(random_state=0).fit(proba, y).bound_


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: make_bound_scorer("ece"), InvalidParameterError, "'method' parameter"),
        (lambda: make_bound_scorer("nw", bogus=1), TypeError, "bogus"),
        (
            lambda: make_bound_scorer("tv", V=-1.0),
            InvalidParameterError,
            "'V' parameter",
        ),
        (
            lambda: make_bound_scorer("nw", h=0.1, guarantee="exact"),
            InvalidParameterError,
            "'guarantee' parameter",
        ),
        (lambda: make_bound_scorer("nw", h=0.1, b1=2.0), ValueError, "Give either h"),
        (
            lambda: make_bound_scorer("lipschitz", L=-1.0),
            InvalidParameterError,
            "'L' parameter",
        ),
        (
            lambda: make_perturbation_scorer("accuracy"),
            InvalidParameterError,
            "'metric' parameter",
        ),
        (
            lambda: make_perturbation_scorer("log_loss", h=-1.0),
            InvalidParameterError,
            "'h' parameter",
        ),
        (
            # As the bounds and perturb_scores: h = 64 was meant as 1/64.
            lambda: make_perturbation_scorer("auroc_loss", h=64),
            ValueError,
            r"^h=64 is above 0.5\. .* Did you mean h=1/64=0.015625\?$",
        ),
        (
            lambda: make_bound_scorer("nw", h=64),
            ValueError,
            r"^h=64 is above 0.5\. .* Did you mean h=1/64=0.015625\?",
        ),
        (
            lambda: largest_h_within_tolerance(-0.1),
            InvalidParameterError,
            "'tolerance' parameter",
        ),
    ],
)
def test_bad_scorer_parameters_fail_when_the_scorer_is_made(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_nw_scorer_on_an_unperturbed_classifier_asks_for_h(data):
    X_fit, y_fit, X, y = data
    model = LogisticRegression().fit(X_fit, y_fit)
    with pytest.raises(
        ValueError,
        match=(
            r"make_bound_scorer\('nw'\) bounds the probabilities of a "
            r"SechPerturbedClassifier .* got LogisticRegression, .* Wrap the model: "
            r"SechPerturbedClassifier\(model, h=\.\.\.\) .* pass b1 and b2 to "
            r"make_bound_scorer\.$"
        ),
    ):
        make_bound_scorer("nw")(model, X, y)
    with pytest.raises(
        ValueError, match=r"make_perturbation_scorer\('log_loss'\) needs h"
    ):
        make_perturbation_scorer("log_loss")(model, X, y)


@pytest.mark.parametrize("method, direct", [("nw", "b1 and b2"), ("lipschitz", "L")])
def test_bound_scorer_with_h_on_an_unperturbed_classifier_says_to_wrap_it(
    data, method, direct
):
    # The trap: given h, the bound scorer bounded a plain classifier's unperturbed
    # probabilities under an assumption only the perturbation makes true, while
    # make_perturbation_scorer(h=...) in the same scoring dict scored the classifier
    # as perturbed: two different classifiers. The bound scorer now refuses.
    X_fit, y_fit, X, y = data
    model = LogisticRegression().fit(X_fit, y_fit)
    with pytest.raises(ValueError) as info:
        make_bound_scorer(method, h=2**-6, random_state=0)(model, X, y)
    assert str(info.value).startswith(
        f"make_bound_scorer({method!r}, h=0.015625) bounds the probabilities of a "
        "SechPerturbedClassifier (or a Pipeline ending in one), under the assumption "
        "its h states; got LogisticRegression, whose probabilities were not "
        "perturbed, so that assumption does not hold for them. Wrap the model: "
        "SechPerturbedClassifier(model, h=...)"
    )
    assert str(info.value).endswith(f"pass {direct} to make_bound_scorer.")
    # Wrapped, it is scored under that h, on the perturbed probabilities.
    wrapped = SechPerturbedClassifier(model, h=2**-6, random_state=0).fit(X_fit, y_fit)
    state = wrapped.random_state_.get_state()
    value = make_bound_scorer(method, h=2**-6, random_state=0)(wrapped, X, y)
    wrapped.random_state_.set_state(state)
    Bound = {"nw": NWCalibrationBound, "lipschitz": LipschitzBucketBound}[method]
    proba = wrapped.predict_proba(X)
    assert value == -Bound(h=2**-6, random_state=0).fit(proba, y).bound_


@pytest.mark.parametrize("pipeline", [False, True], ids=["classifier", "pipeline"])
def test_scorers_refuse_an_h_that_is_not_the_classifiers(data, pipeline):
    # The trap: make_bound_scorer("nw", h=2**-6) scoring a SechPerturbedClassifier
    # with h = 2**-8 bounded under the wrong h without a word (0.156 instead of
    # 0.222).
    model, clf = _fitted(data, h=2**-8, pipeline=pipeline)
    _, _, X, y = data
    for method in ("nw", "lipschitz"):
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"make_bound_scorer({method!r}, h=0.015625) scored a "
                "SechPerturbedClassifier with h=0.00390625: the bound would assume "
                "another perturbation than the one its probabilities went through. "
                "Leave h out (the scorer reads it from the classifier)."
            ),
        ):
            make_bound_scorer(method, h=2**-6, random_state=0)(model, X, y)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "make_perturbation_scorer('auroc_loss', h=0.015625) scored a "
            "SechPerturbedClassifier with h=0.00390625: it would score another "
            "perturbation than the classifier's."
        ),
    ):
        make_perturbation_scorer("auroc_loss", h=2**-6)(model, X, y)
    # The classifier's own h, stated, is the bound under that h.
    state = clf.random_state_.get_state()
    value = make_bound_scorer("nw", h=2**-8, random_state=0)(model, X, y)
    clf.random_state_.set_state(state)
    proba = model.predict_proba(X)
    assert value == -NWCalibrationBound(h=2**-8, random_state=0).fit(proba, y).bound_


def test_the_rule_reads_the_neg_key_as_scikit_learn_names_negated_scores():
    # make_perturbation_scorer returns minus the cost, so cv_results_ holds negative
    # AUROC losses: the documented key and the rule's default are neg_auroc_loss.
    results = {"params": [{"h": 0.25}, {"h": 0.5}], "mean_test_neg_auroc_loss": [0, -1]}
    assert largest_h_within_tolerance(0.001)(results) == 0
    assert "scorer='neg_auroc_loss'" in repr(largest_h_within_tolerance())
    # A search keyed by the earlier name is told what changed.
    old = {"params": [{"h": 0.25}], "mean_test_auroc_loss": [-0.0005]}
    with pytest.raises(
        ValueError,
        match=re.escape(
            "cv_results_ has no 'mean_test_neg_auroc_loss': give GridSearchCV a scorer "
            "named 'neg_auroc_loss', e.g. scoring={'neg_auroc_loss': "
            "make_perturbation_scorer('auroc_loss'), ...}. It has "
            "'mean_test_auroc_loss': the default key is now 'neg_auroc_loss'"
        ),
    ):
        largest_h_within_tolerance(0.001)(old)
    assert largest_h_within_tolerance(0.001, scorer="auroc_loss")(old) == 0


def test_scorers_take_no_metadata(data):
    model, _ = _fitted(data)
    _, _, X, y = data
    for scorer in (make_bound_scorer("tv"), make_perturbation_scorer("brier_score")):
        with pytest.raises(
            TypeError, match=r"takes no metadata; got \['sample_weight'\]"
        ):
            scorer(model, X, y, sample_weight=np.ones(len(y)))


@pytest.mark.parametrize("pipeline", [False, True], ids=["classifier", "pipeline"])
def test_perturbation_scorers_equal_the_metric_functions(data, pipeline):
    model, clf = _fitted(data, pipeline=pipeline)
    _, _, X, y = data
    inner = model[:-1].transform(X) if pipeline else X
    p = clf.estimator_.predict_proba(inner)[:, 1]
    assert make_perturbation_scorer("log_loss")(model, X, y) == -perturbed_log_loss(
        y, p, h=2**-4
    )
    assert make_perturbation_scorer("brier_score")(
        model, X, y
    ) == -perturbed_brier_score_loss(y, p, h=2**-4)
    state = clf.random_state_.get_state()
    auroc = make_perturbation_scorer("auroc_loss")(model, X, y)
    clf.random_state_.set_state(state)
    drawn = model.predict_proba(X)[:, 1]
    assert auroc == -(roc_auc_score(y, p) - roc_auc_score(y, drawn))
    # With h given, any classifier: its own probabilities perturbed with random_state.
    plain = LogisticRegression().fit(*data[:2])
    q = plain.predict_proba(X)[:, 1]
    value = make_perturbation_scorer("auroc_loss", h=2**-3, random_state=5)(plain, X, y)
    assert value == -(
        roc_auc_score(y, q) - roc_auc_score(y, perturb_scores(q, 2**-3, random_state=5))
    )
    assert value < 0  # h = 1/8 costs AUROC


def test_perturbation_loss_scorers_take_a_fold_of_one_class(data):
    # A CV fold without positives (or without negatives): the expected losses are
    # means of per-row terms, so the two one-class folds, weighted, give the whole's.
    # The bound scorers still refuse such a fold.
    model, clf = _fitted(data)
    _, _, X, y = data
    for metric in ("log_loss", "brier_score"):
        scorer = make_perturbation_scorer(metric)
        parts = [scorer(model, X[y == k], y[y == k]) * np.sum(y == k) for k in (0, 1)]
        assert_allclose(sum(parts) / y.size, scorer(model, X, y), rtol=1e-12)
    p = clf.estimator_.predict_proba(X[y == 0])[:, 1]
    assert make_perturbation_scorer("brier_score")(model, X[y == 0], y[y == 0]) == (
        -perturbed_brier_score_loss(np.zeros(p.size), p, h=2**-4)
    )
    with pytest.raises(ValueError, match=r"y contains a single class \(0\)"):
        make_bound_scorer("nw")(model, X[y == 0], y[y == 0])


def _cv_results(h, auroc_loss, name="h"):
    return {
        "params": [{name: v} for v in h],
        "mean_test_neg_auroc_loss": -np.asarray(auroc_loss, dtype=float),
    }


@pytest.mark.parametrize(
    "h, loss, expected",
    [
        (
            [0.25, 0.125, 0.0625, 0.03125],
            [0.05, 0.002, 0.0009, 0.0001],
            2,
        ),  # largest within
        (
            [0.03125, 0.0625, 0.125],
            [0.0001, 0.0009, 0.002],
            1,
        ),  # order of the grid is free
        ([0.25, 0.125], [0.05, 0.01], 1),  # none within: the smallest cost
        ([0.0625, 0.0625, 0.125], [0.0008, 0.0002, 0.004], 1),  # equal h: smaller cost
        ([0.5, 0.25], [-0.0005, 0.0004], 0),  # negative cost (noise) is within
    ],
)
def test_largest_h_rule_by_hand(h, loss, expected):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert largest_h_within_tolerance(0.001)(_cv_results(h, loss)) == expected
    # Only when none is within the tolerance: the fallback is said, not silent.
    assert len(caught) == (min(loss) > 0.001)


def test_largest_h_rule_says_when_none_is_within_and_when_all_failed():
    rule = largest_h_within_tolerance(0.001)
    with pytest.warns(
        UserWarning,
        match=r"No candidate's mean cost \('neg_auroc_loss', negated\) is within the "
        r"tolerance 0.001: the smallest is 0.01, at h=0.125, which is refit",
    ):
        assert rule(_cv_results([0.25, 0.125], [0.05, 0.01])) == 1
    # Every fit failed (error_score=np.nan): NumPy's "All-NaN slice encountered".
    with pytest.raises(
        ValueError, match="Every candidate's mean_test_neg_auroc_loss is NaN"
    ):
        rule(_cv_results([0.25, 0.125], [np.nan, np.nan]))


def test_largest_h_rule_finds_the_pipeline_parameter_and_says_what_is_missing():
    rule = largest_h_within_tolerance(0.001)
    results = _cv_results(
        [0.25, 0.0625], [0.01, 0.0005], name="sechperturbedclassifier__h"
    )
    assert rule(results) == 1
    with pytest.raises(ValueError, match="cv_results_ has no 'mean_test_cost'"):
        largest_h_within_tolerance(0.001, scorer="cost")(results)
    ambiguous = {
        "params": [{"a__h": 0.1, "b__h": 0.2}],
        "mean_test_neg_auroc_loss": [0.0],
    }
    with pytest.raises(ValueError, match=r"found \['a__h', 'b__h'\] .* Pass param="):
        rule(ambiguous)
    assert largest_h_within_tolerance(0.001, param="b__h")(ambiguous) == 0


@pytest.mark.parametrize(
    "grid",
    [COARSE_H_GRID, pytest.param(H_GRID, marks=pytest.mark.slow)],
    ids=["coarse", "full"],
)
def test_grid_search_over_h_with_the_tolerance_rule_and_the_bound(data, grid):
    X, y, _, _ = data
    scoring = {
        "neg_auroc_loss": make_perturbation_scorer("auroc_loss"),
        "nw": make_bound_scorer("nw", random_state=0),
    }
    search = GridSearchCV(
        SechPerturbedClassifier(LogisticRegression(), random_state=0),
        {"h": grid},
        scoring=scoring,
        refit=largest_h_within_tolerance(0.002),
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
    ).fit(X, y)
    res = search.cv_results_
    cost = -res["mean_test_neg_auroc_loss"]
    h = np.array(res["param_h"], dtype=float)
    within = np.flatnonzero(cost <= 0.002)
    assert within.size and search.best_index_ == within[np.argmax(h[within])]
    assert search.best_params_["h"] == h[search.best_index_]
    assert search.best_estimator_.h == search.best_params_["h"]
    # Costs grow with h, and the NW bound tightens with h: the trade-off the rule
    # settles.
    assert cost[0] > 0.01 > cost[-1]
    assert res["mean_test_nw"][0] > res["mean_test_nw"][-1]
    # The other documented choice: the h with the smallest certified bound.
    by_bound = clone(search).set_params(refit="nw").fit(X, y)
    assert by_bound.best_index_ == int(np.argmax(by_bound.cv_results_["mean_test_nw"]))


def test_cross_validate_with_several_scorers_equals_a_hand_loop_on_one_draw(data):
    X, y, _, _ = data
    scoring = {
        "nw": make_bound_scorer("nw", random_state=0),
        "lipschitz": make_bound_scorer("lipschitz", random_state=0),
        "tv": make_bound_scorer("tv", random_state=0),
        "log_loss": make_perturbation_scorer("log_loss"),
        "neg_auroc_loss": make_perturbation_scorer("auroc_loss"),
    }
    model = SechPerturbedClassifier(LogisticRegression(), h=2**-4, random_state=0)
    cv = StratifiedKFold(2, shuffle=True, random_state=1)
    result = cross_validate(model, X, y, cv=cv, scoring=scoring)
    for k, (train, test) in enumerate(cv.split(X, y)):
        fitted = clone(model).fit(X[train], y[train])
        # Every scorer of the dict sees the same (first) perturbation of the fold.
        drawn = fitted.predict_proba(X[test])
        original = fitted.estimator_.predict_proba(X[test])[:, 1]
        bounds = {
            "nw": NWCalibrationBound(h=2**-4, random_state=0),
            "lipschitz": LipschitzBucketBound(h=2**-4, random_state=0),
            "tv": TVCalibrationBound(random_state=0),
        }
        expected = {
            **{name: -b.fit(drawn, y[test]).bound_ for name, b in bounds.items()},
            "log_loss": -perturbed_log_loss(y[test], original, h=2**-4),
            "neg_auroc_loss": -(
                roc_auc_score(y[test], original) - roc_auc_score(y[test], drawn[:, 1])
            ),
        }
        for name, value in expected.items():
            assert result[f"test_{name}"][k] == value, name
    # NW is tighter than Lipschitz here, and than TV's default cell bound on this
    # draw (0.222 and 0.223 against TV's 0.350 and 0.349); TV's denoising bound is
    # the loosest.
    assert np.all(result["test_nw"] > result["test_lipschitz"])
    assert np.all(result["test_nw"] > result["test_tv"])
    denoise = TVCalibrationBound(method="denoise", random_state=0)
    assert denoise.fit(drawn, y[test]).bound_ > -result["test_lipschitz"][k]


class _CountingLogisticRegression(LogisticRegression):
    """Records the number of rows of every ``predict_proba`` call (clones share it)."""

    calls = []

    def predict_proba(self, X):
        type(self).calls.append(len(X))
        return super().predict_proba(X)


class _CountingPerturbed(SechPerturbedClassifier):
    """Records the number of rows of every ``predict_proba`` call (clones share it)."""

    calls = []

    def predict_proba(self, X):
        type(self).calls.append(len(X))
        return super().predict_proba(X)


def _counted_search(X, y, scoring, grid):
    _CountingLogisticRegression.calls.clear()
    _CountingPerturbed.calls.clear()
    GridSearchCV(
        _CountingPerturbed(_CountingLogisticRegression(), random_state=0),
        {"h": grid},
        scoring=scoring,
        # A tolerance some candidate meets (its warning is not what is tested here).
        refit=largest_h_within_tolerance(0.02),
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
    ).fit(X, y)
    return list(_CountingPerturbed.calls), list(_CountingLogisticRegression.calls)


@pytest.mark.parametrize(
    "grid",
    [
        [2.0**-2, 2.0**-4],  # what is counted does not depend on h: the cheap end
        pytest.param([2.0**-k for k in range(2, 11)], marks=pytest.mark.slow),
    ],
    ids=["2_candidates", "9_candidates"],
)
def test_grid_search_scorers_share_one_prediction_per_candidate_and_fold(data, grid):
    X, y, _, _ = data
    scoring = {
        "neg_auroc_loss": make_perturbation_scorer("auroc_loss"),
        "nw": make_bound_scorer("nw", random_state=0),
    }
    perturbed, inner = _counted_search(X, y, scoring, grid)
    folds = [len(test) for _, test in StratifiedKFold(3).split(X, y)]  # 1000 each
    k = len(grid)
    # k candidates x 3 folds: one perturbed prediction of each test fold, shared by
    # both scorers; the inner model predicts once inside it and once for the AUROC
    # loss's unperturbed probabilities. The refit predicts nothing.
    assert sorted(perturbed) == sorted(folds * k)
    assert len(perturbed) == 3 * k
    assert sorted(inner) == sorted(folds * 2 * k)
    # The same scorers as plain callables are not shared: each draws its own.
    unshared = {name: (lambda s: lambda *a: s(*a))(s) for name, s in scoring.items()}
    perturbed, inner = _counted_search(X, y, unshared, grid)
    assert len(perturbed) == 6 * k and len(inner) == 9 * k


def test_scorers_share_the_prediction_with_sklearn_scorers(data):
    model, clf = _fitted(data)
    _, _, X, y = data
    scoring = {
        "roc_auc": "roc_auc",
        "nw": make_bound_scorer("nw", random_state=0),
        "neg_brier_score": "neg_brier_score",
        "neg_auroc_loss": make_perturbation_scorer("auroc_loss"),
    }
    state = clf.random_state_.get_state()
    scores = check_scoring(model, scoring=scoring)(model, X, y)
    after = model.predict_proba(X)[:, 1]
    clf.random_state_.set_state(state)
    drawn = model.predict_proba(X)[:, 1]
    # One draw for all four: the next one is the generator's second.
    assert_array_equal(after, model.predict_proba(X)[:, 1])
    assert scores["roc_auc"] == roc_auc_score(y, drawn)
    assert scores["neg_brier_score"] == -brier_score_loss(y, drawn)
    nw = NWCalibrationBound(h=2**-4, random_state=0).fit(drawn, y)
    assert scores["nw"] == -nw.bound_
    original = clf.estimator_.predict_proba(X)[:, 1]
    assert scores["neg_auroc_loss"] == -(roc_auc_score(y, original) - scores["roc_auc"])


def test_scorers_fall_back_to_plain_callables_without_sklearn_scorer_api(monkeypatch):
    from skcalbound import _scorers

    class Renamed:
        def _score(self, caller, estimator, X, y_true, **kwargs):  # another signature
            pass

    monkeypatch.setattr(_scorers, "_Scorer", Renamed)
    assert _scorers._sklearn_scorer_base() is object
    monkeypatch.setattr(_scorers, "_Scorer", None)  # gone from scikit-learn
    assert _scorers._sklearn_scorer_base() is object
    monkeypatch.undo()
    assert _scorers._sklearn_scorer_base().__name__ == "_Scorer"


@pytest.mark.parametrize("pipeline", [False, True], ids=["classifier", "pipeline"])
def test_pos_label_scores_the_probability_of_that_class(data, pipeline):
    X_fit, y_fit, X, y = data
    names = np.array(["churn", "stay"])  # classes_ sorted: "churn" is classes_[0]
    clf = SechPerturbedClassifier(LogisticRegression(), h=2**-4, random_state=0)
    model = make_pipeline(StandardScaler(), clf) if pipeline else clf
    model.fit(X_fit, names[y_fit])
    scoring = {
        "nw": make_bound_scorer("nw", pos_label="churn", random_state=0),
        "tv": make_bound_scorer("tv", pos_label="churn", random_state=0),
        "neg_auroc_loss": make_perturbation_scorer("auroc_loss", pos_label="churn"),
        "log_loss": make_perturbation_scorer("log_loss", pos_label="churn"),
        "roc_auc": "roc_auc",  # scikit-learn's, for classes_[1] = "stay"
    }
    state = clf.random_state_.get_state()
    scores = check_scoring(model, scoring=scoring)(model, X, names[y])
    clf.random_state_.set_state(state)
    drawn = model.predict_proba(X)
    inner = model[:-1].transform(X) if pipeline else X
    original = clf.estimator_.predict_proba(inner)
    # Relabelled churn -> 1, stay -> 0, with the probability column of churn.
    churn = (names[y] == "churn").astype(int)
    assert (
        scores["nw"]
        == -NWCalibrationBound(h=2**-4, random_state=0).fit(drawn[:, 0], churn).bound_
    )
    tv = TVCalibrationBound(random_state=0).fit(drawn[:, 0], churn)
    assert scores["tv"] == -tv.bound_
    assert scores["neg_auroc_loss"] == -(
        roc_auc_score(churn, original[:, 0]) - roc_auc_score(churn, drawn[:, 0])
    )
    assert scores["log_loss"] == -perturbed_log_loss(churn, original[:, 0], h=2**-4)
    assert scores["roc_auc"] == roc_auc_score(names[y], drawn[:, 1])
    # The default, classes_[1] = "stay", is another number.
    clf.random_state_.set_state(state)
    default = make_bound_scorer("tv", random_state=0)(model, X, names[y])
    stay = TVCalibrationBound(random_state=0).fit(drawn[:, 1], 1 - churn)
    assert default == -stay.bound_
    assert default != scores["tv"]


def test_pos_label_on_a_plain_classifier_and_its_errors(data):
    X_fit, y_fit, X, y = data
    model = LogisticRegression().fit(X_fit, y_fit)
    proba = model.predict_proba(X)
    value = make_bound_scorer("tv", pos_label=0, random_state=0)(model, X, y)
    assert value == -TVCalibrationBound(random_state=0).fit(proba[:, 0], 1 - y).bound_
    scorer = make_perturbation_scorer(
        "auroc_loss", h=2**-3, pos_label=0, random_state=5
    )
    drawn = perturb_scores(proba[:, 0], 2**-3, random_state=5)
    assert scorer(model, X, y) == -(
        roc_auc_score(1 - y, proba[:, 0]) - roc_auc_score(1 - y, drawn)
    )
    with pytest.raises(
        ValueError,
        match=r"pos_label='churn' is not a valid label: it "
        r"should be one of the estimator's classes_ \[0, 1\]",
    ):
        make_bound_scorer("tv", pos_label="churn")(model, X, y)
    with pytest.raises(
        ValueError,
        match=r"y_true has labels the estimator does not "
        r"know: \[2\]; its classes_ are \[0, 1\]",
    ):
        make_bound_scorer("tv")(model, X, np.where(y == 1, 2, y))
    with pytest.raises(InvalidParameterError, match="'pos_label' parameter"):
        make_bound_scorer("tv", pos_label=[1])
    with pytest.raises(InvalidParameterError, match="'pos_label' parameter"):
        make_perturbation_scorer("auroc_loss", pos_label=[1])


def test_scorer_reprs_and_pickling():
    cases = {
        make_bound_scorer("nw", random_state=0): (
            "make_bound_scorer('nw', random_state=0)"
        ),
        make_bound_scorer("tv", pos_label="churn", V=1.0): (
            "make_bound_scorer('tv', pos_label='churn', V=1.0)"
        ),
        make_perturbation_scorer("auroc_loss"): (
            "make_perturbation_scorer('auroc_loss', h=None, random_state=None)"
        ),
        make_perturbation_scorer("log_loss", h=0.25, pos_label=0, random_state=3): (
            "make_perturbation_scorer('log_loss', h=0.25, pos_label=0, random_state=3)"
        ),
    }
    for scorer, text in cases.items():
        assert repr(scorer) == text
        assert repr(pickle.loads(pickle.dumps(scorer))) == text


def test_grid_search_routes_sample_weight_to_the_inner_estimator(data):
    X, y, _, _ = data
    weights = np.random.default_rng(0).uniform(0.1, 3.0, size=y.shape[0])
    with config_context(enable_metadata_routing=True):
        inner = LogisticRegression().set_fit_request(sample_weight=True)
        search = GridSearchCV(
            SechPerturbedClassifier(inner, random_state=0),
            {"h": [2**-6, 2**-3]},
            scoring={"nw": make_bound_scorer("nw", random_state=0)},
            refit="nw",
            cv=2,
        ).fit(X, y, sample_weight=weights)
    expected = LogisticRegression().fit(X, y, sample_weight=weights).coef_
    assert_array_equal(search.best_estimator_.estimator_.coef_, expected)


class _ScoresAsProbabilities(ClassifierMixin, BaseEstimator):
    """A classifier whose probability of class 1 is its one feature."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.column_stack([1.0 - X[:, 0], X[:, 0]])


def test_bound_scorer_gives_an_empty_interval_the_trivial_score():
    """eta(s) = s on [0.05, 0.95] with L = 0.1: the Lipschitz interval is empty
    ([0.069, 0.049]), the data reject L. Its small upper bound scored -0.049, better
    than the honest -0.08 of L = 1; it scores -1, the trivial bound."""
    rng = np.random.default_rng(3)
    s = rng.uniform(0.05, 0.95, size=50_000)
    y = (rng.uniform(size=s.size) < s).astype(int)
    model = _ScoresAsProbabilities().fit(s[:, None], y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rejected = LipschitzBucketBound(L=0.1, random_state=0).fit(s, y)
        assert rejected.lower_bound_ > rejected.bound_
        assert (
            make_bound_scorer("lipschitz", L=0.1, random_state=0)(model, s[:, None], y)
            == -1.0
        )
        honest = make_bound_scorer("lipschitz", L=1.0, random_state=0)(
            model, s[:, None], y
        )
    assert -0.2 < honest < -rejected.bound_
