"""Natural mistakes that used to give silently wrong certificates, and now don't.

Each test reproduces a trap a new user fell into (the positive class, ``h`` taken for
a knob, swapped arguments, a level read as delta, a vacuous bound) and asserts the
error or warning that now names it.
"""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    VacuousBoundWarning,
    binned_ece,
    calibration_test,
    lipschitz_bucket_bound,
    nw_bound,
    perturb_scores,
    perturbed_brier_score_loss,
    perturbed_log_loss,
    tv_bound,
)

H = 2.0**-6


@pytest.fixture(scope="module")
def churn():
    """A well-calibrated model of P(churn): scores, 0/1 labels, "churn"/"stay"
    labels."""
    rng = np.random.default_rng(0)
    s = perturb_scores(rng.beta(2, 5, size=5000), H, random_state=1)
    churned = rng.uniform(size=s.shape[0]) < s
    return s, churned.astype(int), np.where(churned, "churn", "stay").astype(object)


FUNCTIONS = {
    "tv_bound": lambda y, s, **kw: tv_bound(y, s, random_state=0, **kw),
    "nw_bound": lambda y, s, **kw: nw_bound(y, s, h=H, random_state=0, **kw),
    "lipschitz_bucket_bound": lambda y, s, **kw: lipschitz_bucket_bound(
        y, s, h=H, n_buckets=32, random_state=0, **kw
    ),
    "binned_ece": lambda y, s, **kw: binned_ece(y, s, **kw),
    "calibration_test": lambda y, s, **kw: (
        calibration_test(y, s, h=H, random_state=0, **kw).upper_bound
    ),
    "perturbed_log_loss": lambda y, s, **kw: perturbed_log_loss(y, s, h=H, **kw),
    "perturbed_brier_score_loss": lambda y, s, **kw: perturbed_brier_score_loss(
        y, s, h=H, **kw
    ),
}
NO_POS_LABEL = re.escape(
    "y_true takes value in {'churn', 'stay'} and pos_label is not specified: either "
    "make y_true take value in {0, 1} or {-1, 1} or pass pos_label explicitly."
)


# --------------------------------------------------------------------------------------
# 1. The positive class
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FUNCTIONS)
def test_string_labels_need_pos_label(name, churn):
    # The trap: "stay" sorts last, so it used to be the positive class, and a model of
    # P(churn) was scored against "stay" (binned ECE 0.002 became 0.47), silently.
    # The first 1,000 rows: the positive class does not depend on the size (the
    # bounds at 5,000 rows cost ~0.1 s a call).
    s, labels, words = (a[:1000] for a in churn)
    call = FUNCTIONS[name]
    with pytest.raises(ValueError, match=NO_POS_LABEL):
        call(words, s)
    assert call(words, s, pos_label="churn") == call(labels, s)
    # The other class is a different question, with its own number.
    assert_allclose(call(words, 1 - s, pos_label="stay"), call(1 - labels, 1 - s))


def test_wrong_positive_class_is_far_off(churn):
    # What the trap cost: the same scores against the other class.
    s, labels, words = churn
    right = binned_ece(words, s, pos_label="churn")
    wrong = binned_ece(words, s, pos_label="stay")
    assert right < 0.02 < 0.3 < wrong


@pytest.mark.parametrize("name", ["tv_bound", "nw_bound", "binned_ece"])
def test_pos_label_not_among_labels(name, churn):
    s, _, words = churn
    with pytest.raises(
        ValueError,
        match=re.escape(
            "pos_label='Churn' is not a valid label. "
            "It should be one of ['churn', 'stay']."
        ),
    ):
        FUNCTIONS[name](words, s, pos_label="Churn")


def test_pos_label_selects_the_predict_proba_column(churn):
    # predict_proba of a model trained on "churn"/"stay" has P(churn) in column 0.
    s, labels, words = churn
    proba = np.column_stack([s, 1 - s])
    assert tv_bound(words, proba, pos_label="churn", random_state=0) == tv_bound(
        labels, s, random_state=0
    )
    assert binned_ece(words, proba, pos_label="stay") == binned_ece(1 - labels, 1 - s)


# --------------------------------------------------------------------------------------
# 2. h is an assumption, not a knob
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "Est, h, meant, direct",
    [
        (NWCalibrationBound, 64, "Did you mean h=1/64=0.015625?", "b1 and b2"),
        (
            NWCalibrationBound,
            6,
            "Did you mean h=1/6=0.166667 or h=2**-6=0.015625?",
            "b1 and b2",
        ),
        (LipschitzBucketBound, 0.75, "", "L"),
    ],
)
def test_h_above_one_half_is_rejected(Est, h, meant, direct, churn):
    # The trap: h=64 (1/h) or h=6 (the exponent) gave a "certificate" of 0.017 where
    # the true CE was 0.475.
    s, labels, _ = churn
    message = (
        f"h={h!r} is above 0.5. h is the bandwidth, in probability units, of the sech "
        "perturbation the scores went through (perturb_scores(y_prob, h) or "
        "SechPerturbedClassifier(h=h)), typically 2**-6 = 0.015625: an assumption "
        "about how the scores were produced, not a knob to tune."
    )
    with pytest.raises(ValueError) as info:
        Est(h=h).fit(s, labels)
    text = str(info.value)
    assert text.startswith(message)
    assert meant in text
    assert text.endswith(
        f"To assume a weak smoothness on purpose, give {direct} directly."
    )
    # h = 1/2 itself is accepted, and b1/b2 or L state a weak assumption on purpose.
    assert 0 < Est(h=0.5, random_state=0).fit(s, labels).bound_ <= 1


@pytest.mark.parametrize(
    "fit",
    [
        lambda s, y: NWCalibrationBound(h=H).fit(s, y),
        lambda s, y: LipschitzBucketBound(h=H).fit(s, y),
        lambda s, y: nw_bound(y, s, h=H),
        lambda s, y: calibration_test(y, s, h=H),
    ],
)
def test_unperturbed_discrete_scores_with_h_are_rejected(fit):
    # The trap: forgetting to perturb. A tree model's scores take a few values; no
    # perturbation produces that, so h cannot describe them.
    rng = np.random.default_rng(0)
    leaves = np.array([0.05, 0.2, 0.35, 0.6, 0.9])
    s = leaves[rng.integers(0, 5, size=3000)]
    y = (rng.uniform(size=3000) < s).astype(int)
    values, counts = np.unique(s, return_counts=True)
    largest = counts.argmax()
    with pytest.raises(
        ValueError,
        match=re.escape(
            "h=0.015625 states that the scores were perturbed with the sech kernel, "
            f"whose output is continuous, but {counts[largest]} of the 3000 scores "
            f"equal {float(values[largest])!r} (5 distinct values in all): "
            "these scores were not perturbed"
        ),
    ):
        fit(s, y)


def test_ties_from_float32_storage_are_accepted():
    # Stored as float32, perturbed scores tie by rounding (about 2% at 10**6); that is
    # not the trap, and the bound is the same kind of number as in float64.
    rng = np.random.default_rng(0)
    s = perturb_scores(rng.beta(2, 5, size=10**6), H, random_state=0)
    s32 = s.astype(np.float32)
    assert np.unique(s32).size < 0.99 * s.size  # many ties
    y = (rng.uniform(size=s.size) < s).astype(np.int8)
    est = NWCalibrationBound(h=H, random_state=0).fit(s32, y)
    assert est.bound_ < 0.05


def test_ties_are_allowed_when_smoothness_is_stated_directly():
    # b1/b2 (or L) say the calibration function is smooth for some other reason;
    # nothing is claimed about how the scores were produced.
    rng = np.random.default_rng(0)
    s = np.round(rng.uniform(size=3000), 2)
    y = (rng.uniform(size=3000) < s).astype(int)
    assert 0 < NWCalibrationBound(b1=1.0, b2=1.0, random_state=0).fit(s, y).bound_ < 1
    assert 0 < LipschitzBucketBound(L=1.0, random_state=0).fit(s, y).bound_ < 1


def test_held_out_scores_are_checked_too(churn):
    s, labels, _ = churn
    est = NWCalibrationBound(h=H, random_state=0).fit(s, labels)
    with pytest.raises(ValueError, match=r"of the 5000 scores equal 0\.5 \(1 distinct"):
        est.score(np.full(5000, 0.5), labels)


@pytest.mark.parametrize("Est", [TVCalibrationBound, NWCalibrationBound])
def test_low_confidence_level_warns(Est, churn):
    s, labels, _ = churn
    params = {"h": H} if Est is NWCalibrationBound else {}
    with pytest.warns(
        UserWarning,
        match=re.escape(
            "confidence_level=0.05 is the probability that the bound holds, not the "
            "probability delta that it fails: with this value it holds only 5% of the "
            "time. Did you mean confidence_level=0.95?"
        ),
    ):
        Est(confidence_level=0.05, random_state=0, **params).fit(s, labels)


def test_docstrings_say_assumptions_are_not_knobs():
    for obj in (
        TVCalibrationBound,
        NWCalibrationBound,
        LipschitzBucketBound,
        tv_bound,
        nw_bound,
        lipschitz_bucket_bound,
    ):
        doc = " ".join(obj.__doc__.split())
        n_params = {
            "TVCalibrationBound": 1,
            "tv_bound": 1,
            "NWCalibrationBound": 3,
            "nw_bound": 3,
        }.get(obj.__name__, 2)
        phrase = (
            "**An assumption about how the scores were produced, not a tuning "
            "knob: never choose it from the data**"
        )
        assert doc.count(phrase) == n_params, obj.__name__


# --------------------------------------------------------------------------------------
# 3. Swapped arguments
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, call, order",
    [
        (
            "tv_bound",
            lambda s, y: tv_bound(s, y),
            "tv_bound takes the labels first: tv_bound(y_true, y_prob).",
        ),
        (
            "binned_ece",
            lambda s, y: binned_ece(s, y),
            "binned_ece takes the labels first: binned_ece(y_true, y_prob).",
        ),
        (
            "calibration_test",
            lambda s, y: calibration_test(s, y, method="tv"),
            "calibration_test takes the labels first: "
            "calibration_test(y_true, y_prob).",
        ),
        (
            "fit",
            lambda s, y: TVCalibrationBound().fit(y, s),
            "fit takes the scores first: TVCalibrationBound(...).fit(y_prob, y_true).",
        ),
    ],
)
def test_swapped_arguments_are_named(name, call, order, churn):
    # The trap: tv_bound(scores, labels) failed with "got 5000 classes: [0.00019...]".
    s, labels, _ = churn
    n_distinct = np.unique(s).size
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"The labels hold {n_distinct} distinct values in [0, 1] and the scores "
            f"only 0 and 1: the arguments look swapped. {order}"
        ),
    ):
        call(s, labels)


def test_three_integer_classes_are_not_called_swapped():
    s = np.linspace(0, 1, 30)
    with pytest.raises(ValueError, match=r"got 3 classes: \[0, 1, 2\]\. Multiclass"):
        tv_bound(np.arange(30) % 3, s)


# --------------------------------------------------------------------------------------
# 5. Vacuous bounds
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, what", [(100, "clipped at 1"), (285, "above 0.5")])
def test_vacuous_bound_warns_with_advice(n, what):
    # The trap: on 285 or 899 held-out rows every bound was near 1, with no word.
    # TV's default cell bound is 1 at 100 rows here and 0.670 at 285 (its denoising
    # bound was 1 at 285 and above 0.5 at 899).
    rng = np.random.default_rng(0)
    s = rng.uniform(size=n)
    y = rng.uniform(size=n) < s
    with pytest.warns(VacuousBoundWarning) as record:
        bound = tv_bound(y, s, random_state=0)
    (warning,) = [w for w in record if w.category is VacuousBoundWarning]
    text = str(warning.message)
    assert (bound >= 1.0) == (what == "clipped at 1")
    assert bound > 0.5
    shown = "clipped at 1" if bound >= 1 else f"{bound:.3f}, above 0.5"
    assert text.startswith(
        f"The certified upper bound of TVCalibrationBound is {shown} with {n} samples"
    )
    assert "More labelled samples shrink the slack" in text
    assert "SechPerturbedClassifier" in text
    assert warning.filename == __file__  # points at the caller's line


def test_informative_bound_does_not_warn(churn):
    s, labels, _ = churn
    with warnings.catch_warnings():
        warnings.simplefilter("error", VacuousBoundWarning)
        assert NWCalibrationBound(h=H, random_state=0).fit(s, labels).bound_ < 0.5
