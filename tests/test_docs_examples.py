"""The worked examples of the user guide run and print what the page shows."""

import doctest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_user_guide_examples():
    result = doctest.testfile(
        str(ROOT / "docs" / "user_guide.rst"),
        module_relative=False,
        optionflags=doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted >= 10
    assert result.failed == 0


def test_user_guide_explains_what_is_certified():
    text = (ROOT / "docs" / "user_guide.rst").read_text()
    section = text.split("What exactly is certified\n=========================")[1]
    section = section.split("\n.. _")[0]
    for needed in (
        'guarantee="high_probability"',
        'guarantee="paper"',
        "McDiarmid",
        "Maurer",
        "lower_bound_",
        "calibration_test",
    ):
        assert needed in section, needed


def test_large_data_examples():
    # Chunks, the in-memory fit and Dask give the same certificate
    # (docs/large_data.rst).
    result = doctest.testfile(
        str(ROOT / "docs" / "large_data.rst"),
        module_relative=False,
        optionflags=doctest.NORMALIZE_WHITESPACE,
    )
    assert result.attempted >= 8
    assert result.failed == 0
