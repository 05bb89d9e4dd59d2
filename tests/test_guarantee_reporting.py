"""The guarantee travels with every number (issue 36, items 5 and 2).

With ``guarantee="paper"`` the NW and Lipschitz bounds are the published Proposition 2,
which holds in expectation over the training labels only (SPEC section 9); TV's
published form holds with probability ``confidence_level``. Nothing calls the former
certified: not the fitted ``result_``, not ``calibration_test``, not
``bounds_by_group``, not a warning, not the command line's JSON. And the
``VacuousBoundWarning`` recommends what shrinks the bound that raised it.
"""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    VacuousBoundWarning,
    bounds_by_group,
    calibration_test,
    perturb_scores,
)
from skcalbound._cli import main
from skcalbound._guarantee import GUARANTEES, HIGH_PROBABILITY, PAPER, guarantee_of
from skcalbound._result import FoldResult, aggregate_folds

H = 2.0**-4
CLASSES = {
    "tv": (TVCalibrationBound, {}),
    "nw": (NWCalibrationBound, {"h": H}),
    "lipschitz": (LipschitzBucketBound, {"h": H}),
}
# (method, guarantee) -> whether the bound holds in expectation only.
EXPECTATION_ONLY = {
    ("tv", "high_probability"): False,
    ("tv", "paper"): False,
    ("nw", "high_probability"): False,
    ("nw", "paper"): True,
    ("lipschitz", "high_probability"): False,
    ("lipschitz", "paper"): True,
}


@pytest.fixture(scope="module")
def sample():
    """Perturbed scores, eta = 1/2 while the scores spread: CE about 0.15."""
    rng = np.random.default_rng(0)
    n = 4000
    s = perturb_scores(rng.uniform(0.2, 0.8, size=n), H, random_state=0)
    y = (rng.uniform(size=n) < 0.5).astype(int)
    return s, y


@pytest.mark.parametrize("method, guarantee", sorted(EXPECTATION_ONLY))
def test_one_source_of_truth_for_in_expectation_only(method, guarantee):
    from skcalbound._base import in_expectation_only

    cls, _ = CLASSES[method]
    expected = EXPECTATION_ONLY[method, guarantee]
    assert guarantee_of(guarantee).in_expectation_only(cls) is expected
    assert guarantee_of(guarantee).in_expectation_only(cls()) is expected
    assert in_expectation_only(cls, guarantee) is expected  # the command line's door


def test_guarantee_of_knows_the_two_modes_and_refuses_the_rest():
    assert list(GUARANTEES) == ["high_probability", "paper"]
    assert guarantee_of("paper") is PAPER and PAPER.published
    assert guarantee_of("high_probability") is HIGH_PROBABILITY
    assert not HIGH_PROBABILITY.published
    for bad in ["Paper", "", None, 1]:
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"guarantee must be 'high_probability' or 'paper'; got {bad!r}"
            ),
        ):
            guarantee_of(bad)
    with pytest.raises(InvalidParameterError, match="'high_probability'"):
        NWCalibrationBound(h=H, guarantee="Paper").fit([0.2, 0.8], [0, 1])


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_tv_auto_computes_the_modes_method(sample, guarantee):
    s, y = sample
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VacuousBoundWarning)
        est = TVCalibrationBound(guarantee=guarantee, random_state=0).fit(s, y)
    assert est.method_ == guarantee_of(guarantee).tv_method
    assert est.method_ == {"high_probability": "cells", "paper": "denoise"}[guarantee]


@pytest.mark.parametrize("method, guarantee", sorted(EXPECTATION_ONLY))
def test_result_carries_the_guarantee(sample, method, guarantee):
    s, y = sample
    cls, params = CLASSES[method]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VacuousBoundWarning)
        est = cls(guarantee=guarantee, random_state=0, **params).fit(s, y)
    expected = EXPECTATION_ONLY[method, guarantee]
    assert est.result_.guarantee == guarantee
    assert est.result_.in_expectation_only is expected
    text = repr(est.result_)
    assert f"guarantee={guarantee!r}" in text
    assert f"in_expectation_only={expected}" in text


def _fold(validation_mean, other):
    return FoldResult(
        terms={"validation_mean": validation_mean, "other": other},
        info={},
        estimate=validation_mean,
        lower=validation_mean + 0.1,  # above the upper bound: an empty interval
    )


@pytest.mark.parametrize("expectation", [False, True])
def test_empty_interval_warning_says_certified_only_when_it_is(expectation):
    folds = [_fold(0.2, 0.05), _fold(0.2, 0.05)]
    with pytest.warns(UserWarning) as caught:
        result = aggregate_folds(
            folds,
            "mean",
            0.95,
            guarantee="paper" if expectation else "high_probability",
            in_expectation_only=expectation,
        )
    (message,) = [str(w.message) for w in caught]
    assert result.in_expectation_only is expectation
    assert message.startswith("The certified interval is empty") is not expectation
    assert ("in expectation over the training labels" in message) is expectation
    assert "the assumption on the calibration function" in message


@pytest.mark.parametrize("method, guarantee", sorted(EXPECTATION_ONLY))
def test_calibration_test_carries_the_guarantee(sample, method, guarantee):
    s, y = sample
    _, params = CLASSES[method]
    expected = EXPECTATION_ONLY[method, guarantee]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = calibration_test(
            y, s, method=method, guarantee=guarantee, random_state=0, **params
        )
    caveats = [
        str(w.message)
        for w in caught
        if issubclass(w.category, UserWarning)
        and "level is not guaranteed" in str(w.message)
    ]
    assert res.guarantee == guarantee
    assert res.in_expectation_only is expected
    assert f"in_expectation_only={expected}" in repr(res)
    assert len(caveats) == int(expected)
    if expected:
        assert caveats[0].startswith(
            f"calibration_test(method={method!r}, guarantee='paper'): the published "
            "bound holds in expectation over the training labels only"
        )
        assert "p-value is not a valid one" in caveats[0]
        assert caught[0].filename == __file__  # points at the caller


@pytest.mark.parametrize("method, guarantee", sorted(EXPECTATION_ONLY))
def test_bounds_by_group_words_each_row(sample, method, guarantee):
    s, y = sample
    _, params = CLASSES[method]
    groups = np.arange(s.size) % 2
    expected = EXPECTATION_ONLY[method, guarantee]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = bounds_by_group(
            y, s, groups, method=method, guarantee=guarantee, random_state=0, **params
        )
    status = "in expectation only" if expected else "certified"
    assert (table["status"] == status).all()
    assert table["upper_bound"].is_monotonic_decreasing  # worst first, as before
    assert table.attrs["guarantee"] == guarantee
    assert table.attrs["in_expectation_only"] is expected
    caveat = "each interval holds in expectation over the training labels only"
    assert (caveat in table.attrs["note"]) is expected
    for w in caught:
        if issubclass(w.category, VacuousBoundWarning):
            assert ("certified" in str(w.message)) is not expected


# --------------------------------------------------------------------------------------
# VacuousBoundWarning: the wording and the advice fit the bound that raised it
# --------------------------------------------------------------------------------------


def _vacuous_message(est):
    rng = np.random.default_rng(1)
    s = perturb_scores(rng.uniform(size=300), H, random_state=1)
    y = (rng.uniform(size=300) < s).astype(int)
    with pytest.warns(VacuousBoundWarning) as caught:
        est.fit(s, y)
    (w,) = [w for w in caught if issubclass(w.category, VacuousBoundWarning)]
    return " ".join(str(w.message).split())


@pytest.mark.parametrize("method, guarantee", sorted(EXPECTATION_ONLY))
def test_vacuous_warning_calls_certified_only_what_is(method, guarantee):
    cls, params = CLASSES[method]
    message = _vacuous_message(cls(guarantee=guarantee, random_state=0, **params))
    name = cls.__name__
    if EXPECTATION_ONLY[method, guarantee]:
        assert message.startswith(
            f"The upper bound of {name} (guarantee='paper': it holds in expectation "
            "over the training labels only, not with probability confidence_level)"
        )
        assert "certified" not in message
    else:
        assert message.startswith(f"The certified upper bound of {name} is ")


def test_vacuous_warning_advice_fits_the_bound():
    tv = _vacuous_message(TVCalibrationBound(random_state=0))
    nw_h = _vacuous_message(NWCalibrationBound(h=H, random_state=0))
    nw_b = _vacuous_message(NWCalibrationBound(b1=2.0, b2=2.0, random_state=0))
    lip = _vacuous_message(LipschitzBucketBound(h=H, random_state=0))
    for message in (tv, nw_h, nw_b, lip):
        assert "More labelled samples shrink the slack" in message
    # TV and Lipschitz: NW on perturbed scores is tighter. NW is not told to use NW.
    assert "NWCalibrationBound on scores perturbed with SechPerturbedClassifier" in tv
    assert "NWCalibrationBound with the same h is tighter than bucketing" in lip
    for message in (nw_h, nw_b):
        assert "NWCalibrationBound" not in message.split("samples: ")[1]
    assert "A larger h (now 0.0625: a stronger perturbation" in nw_h
    assert "Smaller b1 and b2 also shrink it" in nw_b


# --------------------------------------------------------------------------------------
# The command line: "certified" is false whenever the number holds in expectation only
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory, sample):
    s, y = sample
    path = tmp_path_factory.mktemp("guarantee") / "scores.csv"
    pd.DataFrame({"y_prob": s, "y_true": y, "part": np.arange(s.size) % 2}).to_csv(
        path, index=False
    )
    return path


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_cli_json_certified_is_false_in_expectation_only(csv_file, guarantee, capsys):
    options = ["--bound", "tv", "nw", "lipschitz", "--h", "2**-4", "--json"]
    options += ["--max-ce", "0.9"]
    status = main([str(csv_file), *options, "--guarantee", guarantee])
    report = json.loads(capsys.readouterr().out)
    by_method = {r["method"]: r for r in report["results"]}
    assert list(by_method) == ["tv", "nw", "lipschitz", "binned_ece"]
    for method in ("tv", "nw", "lipschitz"):
        row = by_method[method]
        expected = EXPECTATION_ONLY[method, guarantee]
        assert row["in_expectation_only"] is expected
        assert row["certified"] is not expected
        assert row["bound"] is not None
    assert by_method["binned_ece"]["certified"] is False
    # Every bound is gated and counted in the selection note, certified or not.
    assert report["gate"]["gated"] == ["tv", "nw", "lipschitz"]
    assert "compute each with --confidence-level 0.983333" in report["note"]
    assert status == (0 if report["gate"]["passed"] else 1)
    verdict = report["gate"]["verdict"]
    assert ("certified CE <" in verdict) is (guarantee == "high_probability")


def test_cli_by_table_words_the_status(csv_file, capsys):
    options = ["--bound", "nw", "--h", "2**-4", "--by", "part", "--guarantee", "paper"]
    assert main([str(csv_file), *options]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("0 ", "1 ", "(all)"))]
    assert len(rows) == 3
    for line in rows:
        assert line.rstrip().endswith("in expectation only"), line
        assert "certified" not in line
    notes = " ".join(out.split())
    caveat = "each interval holds in expectation over the training labels only"
    assert notes.count(caveat) == 1
