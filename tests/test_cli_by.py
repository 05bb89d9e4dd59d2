"""``skcalbound FILE --by COLUMN``: the per-segment table of ``bounds_by_group``.

The printed and JSON numbers must be those of ``bounds_by_group`` with the same
options (the whole file as the ``(all)`` row, counted in G); the output says that
the intervals hold simultaneously; bad columns and option combinations exit with 2.
"""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from skcalbound import VacuousBoundWarning
from skcalbound._cli import main
from skcalbound._groups import bounds_by_group

H = 2.0**-6


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 3000
    region = rng.choice(["north", "south", "x"], size=n, p=[0.5, 0.498, 0.002])
    s = rng.uniform(size=n)
    y = (rng.uniform(size=n) < np.where(region == "south", 0.5, s)).astype(int)
    return pd.DataFrame({"y_prob": s, "y_true": y, "region": region})


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("cli_by") / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def _expected(frame, method, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VacuousBoundWarning)
        return bounds_by_group(
            frame.y_true,
            frame.y_prob,
            frame.region,
            method=method,
            include_overall=True,
            random_state=0,
            cv=5,
            **params,
        )


def test_json_rows_match_bounds_by_group(csv_file, frame, capsys):
    status = main(
        [
            str(csv_file),
            "--by",
            "region",
            "--bound",
            "tv",
            "nw",
            "--h",
            "2^-6",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    report = json.loads(out)  # pure JSON: no NaN
    assert report["by"] == "region"
    rows = report["segments"]
    assert [r["method"] for r in rows] == ["tv"] * 4 + ["nw"] * 4
    for method, params in (("tv", {"V": 1.0}), ("nw", {"h": H})):
        expected = _expected(frame, method, **params)
        got = [r for r in rows if r["method"] == method]
        assert [r["group"] for r in got] == expected.group.tolist()
        assert got[-1]["group"] == "(all)"
        for r, (_, e) in zip(got, expected.iterrows()):
            assert r["n"] == e.n and r["status"] == e.status
            if e.status == "certified":
                assert r["upper_bound"] == e.upper_bound
                assert r["lower_bound"] == e.lower_bound
                assert r["confidence_level"] == e.confidence_level
            else:
                assert r["upper_bound"] is None and r["confidence_level"] is None
        assert "hold simultaneously" in report["notes"][method]
        assert "all 2 tables together" in report["notes"][method]
    # The segment of 4 rows: too small for NW's five folds; TV's cell bound has none.
    small = {r["method"]: r for r in rows if r["group"] == "x"}
    assert small["nw"]["status"] == "too few samples for cv=5: 4"
    assert small["tv"]["status"] == "certified"
    assert small["tv"]["confidence_level"] == 1 - 0.05 / 4


def test_table_output(csv_file, frame, capsys):
    assert (
        main(
            [
                str(csv_file),
                "--by",
                "region",
                "--bound",
                "nw",
                "--h",
                "2^-6",
                "--confidence-level",
                "0.9",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    expected = _expected(frame, "nw", h=H, confidence_level=0.9)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("group"))
    shown = [line.split()[0] for line in lines[start + 1 : start + 5]]
    assert shown == expected.group.tolist()
    top = expected.iloc[0]
    assert f"[{top.lower_bound:.6f}, {top.upper_bound:.6f}]" in lines[start + 1]
    text = " ".join(out.split())
    assert "All 3 intervals hold simultaneously with probability at least 0.9" in text
    assert "level 0.966667 = 1 - (1 - 0.9)/3" in text
    assert "too few samples for cv=5" in out
    assert "tables together" not in text  # one table


def test_without_by_output_unchanged(csv_file, capsys):
    assert main([str(csv_file), "--bound", "tv"]) == 0
    out = capsys.readouterr().out
    assert "segments by" not in out and "TV" in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--by", "nope"], "no column 'nope'"),
        (
            ["--by", "region", "--max-ce", "0.1"],
            "--max-ce cannot be combined with --by",
        ),
        (["--by", "region", "--plot", "x.png"], "--plot cannot be combined with --by"),
    ],
)
def test_errors(csv_file, capsys, extra, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([str(csv_file), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("skcalbound: error:") and message in err


def test_missing_group_is_an_error(tmp_path, frame, capsys):
    path = tmp_path / "gaps.csv"
    gaps = frame.copy()
    gaps.loc[5, "region"] = None
    gaps.to_csv(path, index=False)
    assert main([str(path), "--by", "region", "--bound", "tv"]) == 2
    err = capsys.readouterr().err
    assert "--by region: column 'region'" in err and "1 missing value(s)" in err
    assert "fillna" not in err and "data row 5" in err


def test_default_by_is_the_band_of_bounds_by_group(csv_file, frame, capsys):
    # Without --h the default bound is the band; --by passes the unfitted estimator
    # (random_state=0, cv=None: one band per segment) to bounds_by_group.
    from skcalbound import MonotoneCalibrationBound

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VacuousBoundWarning)
        expected = bounds_by_group(
            frame.y_true,
            frame.y_prob,
            frame.region,
            method=MonotoneCalibrationBound(random_state=0),
            include_overall=True,
        )
    assert main([str(csv_file), "--by", "region", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["segments"]
    assert {r["method"] for r in rows} == {"monotone"}
    assert [r["group"] for r in rows] == expected.group.tolist()
    for r, (_, e) in zip(rows, expected.iterrows()):
        assert r["status"] == e.status
        if e.status == "certified":
            assert (r["lower_bound"], r["upper_bound"]) == (
                e.lower_bound,
                e.upper_bound,
            )


def test_warnings_go_into_the_report_not_to_stderr(tmp_path, capsys):
    """A segment whose scores point away from its labels: its band crosses and it
    ranks below chance. Both warnings are in the report (text and JSON), once each,
    naming the segment, whose row comes first with the status that says so."""
    rng = np.random.default_rng(0)
    n = 20_000
    s = rng.uniform(size=n)
    y = (rng.uniform(size=n) < s).astype(int)
    region = rng.choice(["north", "south", "flipped"], size=n)
    path = tmp_path / "flipped.csv"
    pd.DataFrame(
        {"y_prob": np.where(region == "flipped", 1 - s, s), "y_true": y, "r": region}
    ).to_csv(path, index=False)
    assert main([str(path), "--by", "r"]) == 0
    captured = capsys.readouterr()
    assert "Warning" not in captured.err
    lines = captured.out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("group"))
    assert lines[start + 1].startswith("flipped")
    assert lines[start + 1].endswith("assumption rejected (the band crosses)")
    text = " ".join(captured.out.split())
    assert text.count("warning: ") == 2
    assert "warning: The scores of segment flipped rank the positive class" in text
    assert "warning: The calibration band crosses" in text
    assert "for 1 segment(s) (flipped)" in text
    # In the command's terms (the library says method='tv').
    assert "Use --bound tv instead" in text and "method='tv'" not in text

    assert main([str(path), "--by", "r", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    messages = report["warnings"]["monotone"]
    assert len(messages) == 2
    assert messages[0].startswith("The scores of segment flipped rank")
    assert report["segments"][0]["status"] == "assumption rejected (the band crosses)"


def test_a_continuous_column_is_refused_with_advice(frame, tmp_path, capsys):
    # One segment per distinct value: 3000 one-row segments and no bound in any; the
    # table printed 3000 rows of "too few samples: 1" and exited 0.
    path = tmp_path / "age.csv"
    age = np.random.default_rng(1).normal(40.0, 10.0, size=frame.shape[0])
    frame.assign(age=age).to_csv(path, index=False)
    assert main([str(path), "--by", "age", "--bound", "tv"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert (
        "--by age: none of the 3000 segments of column 'age' gets a bound (each has "
        "too few rows or a single class; the largest has 1 row)"
    ) in err
    assert "bin it into a column of its own first (e.g. deciles)" in err
    # Binned, the same column gives certified segments.
    frame.assign(decile=pd.qcut(age, 10, labels=False)).to_csv(path, index=False)
    assert main([str(path), "--by", "decile", "--bound", "tv", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["segments"]
    assert sum(r["status"] == "certified" for r in rows) == 11
