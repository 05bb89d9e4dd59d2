"""The ``skcalbound`` command, end to end through a subprocess, and its errors.

The printed numbers must be the estimators' on the same data and seed; every bad
file, column, value or option gets one line on stderr and exit status 2.
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    binned_ece,
    perturb_scores,
)
from skcalbound._cli import main

ROOT = Path(__file__).resolve().parents[1]
H = 2.0**-6


def _run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "skcalbound", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=120,
    )


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=6000)
    y = (rng.uniform(size=s.size) < s**2).astype(int)
    return s, y


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory, data):
    s, y = data
    path = tmp_path_factory.mktemp("cli") / "scores.csv"
    pd.DataFrame({"y_prob": s, "y_true": y}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory, data):
    s, y = data
    path = tmp_path_factory.mktemp("cli") / "perturbed.parquet"
    frame = pd.DataFrame(
        {"id": np.arange(s.size), "prob": perturb_scores(s, H, random_state=0),
         "label": np.where(y == 1, "spam", "ham")}
    )
    frame.to_parquet(path)
    return path


def _table_row(stdout, name):
    """``(bound, plug-in)`` printed on the row of ``name``."""
    match = re.search(rf"^{re.escape(name)}\s+(\S+)\s+(\S+)\s", stdout, flags=re.M)
    assert match, stdout
    return match.group(1), match.group(2)


# --------------------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------------------


def test_csv_table_prints_the_estimators_numbers(csv_file, data):
    s, y = data
    result = _run(csv_file, cwd=csv_file.parent)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    tv = TVCalibrationBound(random_state=0).fit(s, y)
    bound, estimate = _table_row(result.stdout, "TV")
    assert bound == f"{tv.bound_:.6f}" and estimate == f"{tv.estimate_:.6f}"
    for term, value in tv.terms_.items():
        assert re.search(rf"^  {term}\s+{value:.6f}$", result.stdout, flags=re.M), term
    assert _table_row(result.stdout, "binned ECE") == ("-", f"{binned_ece(y, s):.6f}")
    assert "6000 scores (column 'y_prob')" in result.stdout
    assert "positive class 1" in result.stdout
    assert "NW" not in result.stdout  # only TV without --h


def test_parquet_json_prints_the_estimators_numbers(parquet_file, data):
    _, y = data
    frame = pd.read_parquet(parquet_file)
    s = frame["prob"].to_numpy()
    result = _run(
        parquet_file, "--scores", "prob", "--labels", "label", "--bound", "nw",
        "lipschitz", "tv", "--h", H, "--confidence-level", 0.9, "--cv", 4,
        "--random-state", 7, "--json", cwd=parquet_file.parent,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["n_samples"] == 6000 and report["positive_label"] == "spam"
    assert report["scores_column"] == "prob" and report["labels_column"] == "label"
    by_method = {r["method"]: r for r in report["results"]}
    assert list(by_method) == ["nw", "lipschitz", "tv", "binned_ece"]
    labels = frame["label"].to_numpy()
    common = dict(confidence_level=0.9, cv=4, random_state=7)
    expected = {
        "nw": NWCalibrationBound(h=H, **common).fit(s, labels),
        "lipschitz": LipschitzBucketBound(h=H, **common).fit(s, labels),
        "tv": TVCalibrationBound(**common).fit(s, labels),
    }
    for method, est in expected.items():
        got = by_method[method]
        assert got["bound"] == est.bound_, method  # exact: JSON keeps every digit
        assert got["estimate"] == est.estimate_
        assert got["terms"] == est.terms_
        assert got["confidence_level"] == 0.9 and got["certified"] is True
    assert by_method["nw"]["assumption"] == "|eta'| <= b1 = 32, |eta''| <= b2 = 6144"
    ece = by_method["binned_ece"]
    assert ece["certified"] is False and ece["bound"] is None
    assert ece["estimate"] == binned_ece(labels, s)
    # The string labels are the same classes as 0/1: the positive class is "spam".
    assert by_method["tv"]["bound"] == TVCalibrationBound(**common).fit(s, y).bound_


def test_plot_is_written(csv_file, tmp_path):
    out = tmp_path / "reliability.png"
    result = _run(csv_file, "--b1", 2, "--b2", 4, "--plot", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"reliability plot written to {out}" in result.stdout
    assert _table_row(result.stdout, "NW")[0] != "-"  # --b1/--b2 add the NW bound


def test_help_explains_the_command():
    result = _run("--help", cwd=ROOT)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())  # argparse wraps lines at the terminal width
    for phrase in ["Certified upper bound on the calibration error", "--scores COLUMN",
                   "(default: y_prob)", "--labels COLUMN", "(default: y_true)", "--h H",
                   "heuristic, not a bound", "examples:", "Exit status"]:
        assert phrase in text, phrase


def test_bad_file_through_a_subprocess(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"this is not parquet")
    result = _run(path, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"skcalbound: error: {path}: not a readable parquet file")


def test_console_script_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["skcalbound"] == "skcalbound._cli:main"
    assert "pyarrow" in " ".join(project["optional-dependencies"]["cli"])


# --------------------------------------------------------------------------------------
# Errors: one line, exit status 2 (in process, for speed)
# --------------------------------------------------------------------------------------


def _write(tmp_path, name, frame):
    path = tmp_path / name
    if name.endswith(".parquet"):
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)
    return path


GOOD = {"y_prob": [0.1, 0.4, 0.8, 0.9] * 5, "y_true": [0, 1, 1, 0] * 5}


def _with(column, values):
    frame = pd.DataFrame(GOOD)
    frame[column] = pd.Series(values, dtype=object)
    return frame


ERROR_CASES = {
    "missing scores column": (
        "a.csv", pd.DataFrame({"p": GOOD["y_prob"], "y_true": GOOD["y_true"]}), [],
        r"no column 'y_prob' \(columns: p, y_true\); pass --scores NAME",
    ),
    "missing labels column": (
        "a.parquet", pd.DataFrame(GOOD), ["--labels", "target"],
        r"no column 'target' \(columns: y_prob, y_true\); pass --labels NAME",
    ),
    "nan score": (
        "a.csv", _with("y_prob", [0.1, np.nan] + GOOD["y_prob"][2:]), [],
        r"column 'y_prob' must hold probabilities in \[0, 1\] \(no missing values\); "
        r"row 1 holds nan \(1 bad rows in all\)",
    ),
    "score above one": (
        "a.parquet", _with("y_prob", [0.1, 0.2, 1.5] + GOOD["y_prob"][3:]), [],
        r"row 2 holds 1.5 \(1 bad rows",
    ),
    "text score": (
        "a.csv", _with("y_prob", ["high"] + GOOD["y_prob"][1:]), [],
        r"row 0 holds 'high'",
    ),
    "three classes": (
        "a.csv", _with("y_true", [0, 1, 2, 0] * 5), [],
        r"column 'y_true' must hold exactly two distinct labels .* found 3: 0, 1, 2",
    ),
    "one class": (
        "a.csv", _with("y_true", [1] * 20), [],
        r"exactly two distinct labels .* found 1: 1",
    ),
    "missing label": (
        "a.csv", _with("y_true", [0, None] + GOOD["y_true"][2:]), [],
        r"column 'y_true' has a missing label in row 1",
    ),
    "no rows": (
        "a.csv", pd.DataFrame({"y_prob": [], "y_true": []}), [],
        r"the file has no rows",
    ),
    "nw without its assumption": (
        "a.csv", pd.DataFrame(GOOD), ["--bound", "nw"],
        r"nw: The NW bound needs the derivative bounds .* give h",
    ),
    "negative V": (
        "a.csv", pd.DataFrame(GOOD), ["--V", "-1"],
        r"tv: The 'V' parameter of TVCalibrationBound must be a float in the range "
        r"\(0.0, inf\)",
    ),
    "too many folds": (
        "a.csv", pd.DataFrame(GOOD), ["--cv", "50"],
        r"tv: .*50",
    ),
    "confidence level": (
        "a.csv", pd.DataFrame(GOOD), ["--confidence-level", "1.5"],
        r"--confidence-level must be in \(0, 1\); got 1.5",
    ),
    "n_bins": (
        "a.csv", pd.DataFrame(GOOD), ["--n-bins", "0"],
        r"--n-bins: The 'n_bins' parameter of binned_ece must be an int",
    ),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_are_one_line_with_status_2(case, tmp_path, capsys):
    name, frame, options, message = ERROR_CASES[case]
    path = _write(tmp_path, name, frame)
    assert main([str(path), *options]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"skcalbound: error: ") and re.search(message, lines[0]), (
        lines[0]
    )


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.csv", None, r"missing.csv: no such file"),
        ("scores.txt", b"y_prob,y_true\n0.1,0\n", r"cannot tell the format .* --format"),
        ("empty.csv", b"", r"not a readable csv file: No columns to parse from file"),
        ("bad.parquet", b"PAR1 nonsense", r"not a readable parquet file"),
    ],
)
def test_unreadable_files(name, content, message, tmp_path, capsys):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    assert main([str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert re.search(message, err), err


def test_format_option_reads_a_file_without_extension(tmp_path, capsys):
    path = tmp_path / "scores.txt"
    pd.DataFrame(GOOD).to_csv(path, index=False)
    assert main([str(path), "--format", "csv", "--cv", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    s, y = np.array(GOOD["y_prob"]), np.array(GOOD["y_true"])
    expected = TVCalibrationBound(cv=2, random_state=0).fit(s, y).bound_
    assert report["results"][0]["bound"] == expected


def test_plot_into_a_missing_directory(csv_file, tmp_path, capsys):
    target = tmp_path / "nowhere" / "plot.png"
    assert main([str(csv_file), "--plot", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "the directory" in err and "does not exist" in err


def test_bad_option_is_argparse_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["x.csv", "--bound", "ece"])
    assert exc.value.code == 2
    assert "invalid choice: 'ece'" in capsys.readouterr().err


def test_closed_pipe_stops_quietly(csv_file):
    # ``skcalbound f.csv | head -1``: the reader is gone before the table is printed.
    proc = subprocess.Popen(
        [sys.executable, "-m", "skcalbound", str(csv_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=csv_file.parent,
    )
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert b"BrokenPipeError" not in err and err == b""
