"""``skcalbound._cli._bounds``: the bounds the options ask for, and their estimators."""

import pytest

from skcalbound import (
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    NWCalibrationBound,
    TVCalibrationBound,
)
from skcalbound._cli._bounds import bound_names, estimators
from skcalbound._cli._errors import CLIError
from skcalbound._cli._parser import parse_args


@pytest.mark.parametrize(
    "options, expected",
    [
        ([], ["monotone"]),
        (["--guarantee", "paper"], ["tv"]),  # the band has no paper form
        (["--h", "2^-6"], ["monotone", "nw"]),
        (["--b1", "1", "--b2", "2"], ["monotone", "nw"]),
        (["--L", "3"], ["monotone", "lipschitz"]),
        (
            ["--h", "2^-6", "--L", "3", "--guarantee", "paper"],
            ["tv", "nw", "lipschitz"],
        ),
        (["--bound", "nw", "tv", "nw", "--h", "2^-6"], ["nw", "tv"]),
    ],
)
def test_bound_names(options, expected):
    assert bound_names(parse_args(["d.csv", *options])) == expected


def test_estimators_take_the_options_they_have():
    args = parse_args(
        ["d.csv", "--bound", "monotone", "tv", "nw", "lipschitz", "--h", "2^-6"]
        + ["--V", "2", "--cv", "3", "--aggregate", "min", "--random-state", "7"]
    )
    found = estimators(args)
    assert [type(e) for e in found.values()] == [
        MonotoneCalibrationBound,
        TVCalibrationBound,
        NWCalibrationBound,
        LipschitzBucketBound,
    ]
    band, tv, nw, lipschitz = found.values()
    assert band.cv is None and band.random_state == 7  # one band on all rows
    assert (tv.V, tv.cv, tv.aggregate) == (2.0, 3, "min")
    assert nw.h == lipschitz.h == 2**-6 and lipschitz.L is None


def test_a_bound_without_a_paper_form_refuses_it():
    args = parse_args(["d.csv", "--bound", "monotone", "--guarantee", "paper"])
    with pytest.raises(CLIError, match="monotone has no paper form"):
        estimators(args)


def test_noise_reaches_nw_and_lipschitz_and_each_keeps_its_default():
    bounds = ["--bound", "tv", "nw", "lipschitz", "--h", "2^-6"]
    for options, noise in [
        ([], ("adaptive", "worst_case")),
        (["--noise", "worst_case"], ("worst_case", "worst_case")),
        (["--noise", "adaptive"], ("adaptive", "adaptive")),
    ]:
        args = parse_args(["d.csv", *bounds, *options])
        tv, nw, lipschitz = estimators(args).values()
        assert (nw.noise, lipschitz.noise) == noise
        assert "noise" not in tv.get_params()
    with pytest.raises(SystemExit):
        parse_args(["d.csv", "--noise", "bernstein"])
