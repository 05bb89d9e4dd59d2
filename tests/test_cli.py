"""The ``skcalbound`` command: its output, the ``--max-ce`` gate, and its errors.

The printed numbers must be the estimators' on the same data and seed (the interval
``[lower_bound_, bound_]`` of each bound, in both guarantee modes); the gate exits
with status 1 unless every upper bound is below the threshold; every bad file,
column, value or option gets one line on stderr and exit status 2. Most tests call
``main`` in process; a few run the installed command through a subprocess.
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
    """``(lower, upper, plug-in)`` printed on the row of ``name``."""
    match = re.search(
        rf"^{re.escape(name)}\s+\[(\S+), (\S+)\]\s+(\S+)\s", stdout, flags=re.M
    )
    assert match, stdout
    return match.group(1), match.group(2), match.group(3)


def _ece_row(stdout):
    match = re.search(r"^binned ECE\s+-\s+(\S+)\s", stdout, flags=re.M)
    assert match, stdout
    return match.group(1)


# --------------------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------------------


def test_csv_table_prints_the_estimators_numbers(csv_file, data):
    s, y = data
    result = _run(csv_file, cwd=csv_file.parent)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    tv = TVCalibrationBound(random_state=0).fit(s, y)
    lower, upper, estimate = _table_row(result.stdout, "TV")
    assert (lower, upper) == (f"{tv.lower_bound_:.6f}", f"{tv.bound_:.6f}")
    assert estimate == f"{tv.estimate_:.6f}"
    for term, value in tv.terms_.items():
        assert re.search(rf"^  {term}\s+{value:.6f}$", result.stdout, flags=re.M), term
    assert _ece_row(result.stdout) == f"{binned_ece(y, s):.6f}"
    assert "6000 scores (column 'y_prob')" in result.stdout
    assert "positive class 1" in result.stdout
    assert "guarantee=high_probability" in result.stdout
    assert "NW" not in result.stdout  # only TV without --h
    assert "PASS" not in result.stdout and "FAIL" not in result.stdout  # no gate


@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_table_prints_each_interval_in_both_modes(csv_file, data, guarantee, capsys):
    s, y = data
    options = ["--b1", "2", "--b2", "2", "--L", "2", "--cv", "3"]
    if guarantee == "paper":
        options += ["--guarantee", "paper"]
    assert main([str(csv_file), *options]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    common = dict(guarantee=guarantee, cv=3, random_state=0)
    expected = {
        "TV": TVCalibrationBound(**common).fit(s, y),
        "NW": NWCalibrationBound(b1=2.0, b2=2.0, **common).fit(s, y),
        "Lipschitz": LipschitzBucketBound(L=2.0, **common).fit(s, y),
    }
    for name, est in expected.items():
        lower, upper, estimate = _table_row(out, name)
        assert (lower, upper) == (f"{est.lower_bound_:.6f}", f"{est.bound_:.6f}"), name
        assert estimate == f"{est.estimate_:.6f}"
    assert float(_table_row(out, "NW")[0]) > 0  # CE = 1/6: a proper interval
    assert f"guarantee={guarantee}" in out
    caveat = "paper's form: holds in expectation over the training labels"
    # TV's published form holds with probability; NW's and Lipschitz's do not.
    rows = {name: next(line for line in out.splitlines() if line.startswith(name))
            for name in expected}
    assert "holds with probability >= 95%" in rows["TV"]
    for name in ("NW", "Lipschitz"):
        assert (caveat in rows[name]) is (guarantee == "paper"), name


def test_parquet_json_prints_the_estimators_numbers(parquet_file, data, capsys):
    _, y = data
    frame = pd.read_parquet(parquet_file)
    s = frame["prob"].to_numpy()
    status = main([
        str(parquet_file), "--scores", "prob", "--labels", "label", "--bound", "nw",
        "lipschitz", "tv", "--h", str(H), "--confidence-level", "0.9", "--cv", "4",
        "--random-state", "7", "--json",
    ])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    report = json.loads(out)
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
        assert got["lower_bound"] == est.lower_bound_, method
        assert got["estimate"] == est.estimate_
        assert got["terms"] == est.terms_
        assert got["confidence_level"] == 0.9 and got["certified"] is True
        assert got["guarantee"] == "high_probability"
        assert got["in_expectation_only"] is False
    assert report["guarantee"] == "high_probability" and "gate" not in report
    # b2 from h in the high-probability mode: tanh(1/h)**2 / (2 h**2), h = 2**-6.
    assert by_method["nw"]["assumption"] == "|eta'| <= b1 = 32, |eta''| <= b2 = 2048"
    ece = by_method["binned_ece"]
    assert ece["certified"] is False and ece["bound"] is None
    assert ece["lower_bound"] is None and ece["guarantee"] is None
    assert ece["estimate"] == binned_ece(labels, s)
    # The string labels are the same classes as 0/1: the positive class is "spam".
    assert by_method["tv"]["bound"] == TVCalibrationBound(**common).fit(s, y).bound_


def test_plot_is_written(csv_file, tmp_path, capsys):
    out = tmp_path / "reliability.png"
    assert main([str(csv_file), "--b1", "2", "--b2", "4", "--plot", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"reliability plot written to {out}" in stdout
    assert float(_table_row(stdout, "NW")[1]) > 0  # --b1/--b2 add the NW bound


def test_help_explains_the_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for phrase in ["Certified interval [lower, upper] for the calibration error",
                   "--scores COLUMN", "(default: y_prob)", "--labels COLUMN",
                   "(default: y_true)", "--h H", "heuristic, not a bound", "examples:",
                   "--guarantee {high_probability,paper}", "--max-ce TAU",
                   "every computed bound (each method of --bound) has its upper bound "
                   "strictly below TAU",
                   "with probability at least --confidence-level",
                   "1 with --max-ce when some upper bound is not below TAU",
                   "Exit status: 0 on success", "2 for a bad option"]:
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
# The --max-ce gate: exit status 0 or 1, and a one-line verdict
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted(data):
    s, y = data
    common = dict(cv=3, random_state=0)
    return {
        "nw": NWCalibrationBound(b1=2.0, b2=2.0, **common).fit(s, y),
        "tv": TVCalibrationBound(**common).fit(s, y),
    }


def _gate(csv_file, capsys, tau, *options):
    status = main([str(csv_file), "--cv", "3", "--max-ce", repr(tau), *options])
    out, err = capsys.readouterr()
    return status, out, err


def test_gate_passes_only_strictly_below_the_threshold(csv_file, fitted, capsys):
    upper = fitted["nw"].bound_
    nw = ["--bound", "nw", "--b1", "2", "--b2", "2"]
    above = float(np.nextafter(upper, 1.0))
    status, out, err = _gate(csv_file, capsys, above, *nw)
    assert status == 0 and err == ""
    verdict = out.splitlines()[-1]
    assert verdict == (
        f"PASS (--max-ce {above:g}): certified CE < {above:g} at confidence 95% "
        f"(nw upper bound {upper:.6f} < {above:g})"
    )
    # The interval is printed above the verdict.
    assert _table_row(out, "NW")[:2] == (
        f"{fitted['nw'].lower_bound_:.6f}", f"{upper:.6f}"
    )
    # Equal is not below: the gate fails.
    status, out, err = _gate(csv_file, capsys, upper, *nw)
    assert status == 1 and err == ""
    assert out.splitlines()[-1].startswith(f"FAIL (--max-ce {upper:g}): CE < {upper:g} "
                                           "not certified at confidence 95% (nw upper")


def test_gate_with_several_bounds_needs_every_one_below(csv_file, fitted, capsys):
    nw, tv = fitted["nw"].bound_, fitted["tv"].bound_
    assert nw < tv
    tau = 0.5 * (nw + tv)  # NW passes, TV does not
    options = ["--bound", "nw", "tv", "--b1", "2", "--b2", "2"]
    status, out, _ = _gate(csv_file, capsys, tau, *options)
    assert status == 1
    verdict = out.splitlines()[-1]
    assert verdict == (
        f"FAIL (--max-ce {tau:g}): CE < {tau:g} not certified at confidence 95% "
        f"(tv upper bound {tv:.6f} >= {tau:g}; nw upper bound {nw:.6f} < {tau:g})"
    )
    status, out, _ = _gate(csv_file, capsys, min(1.0, tv + 0.01), *options)
    assert status == 0 and out.splitlines()[-1].startswith("PASS")
    # The binned ECE is never gated: it is far below TV's bound and changes nothing.
    assert "ECE" not in out.splitlines()[-1]


def test_gate_in_json_mode_keeps_stdout_json(csv_file, fitted, capsys):
    tv = fitted["tv"].bound_
    status, out, err = _gate(csv_file, capsys, tv / 2, "--json")
    assert status == 1
    report = json.loads(out)
    gate = report["gate"]
    assert gate["max_ce"] == tv / 2 and gate["passed"] is False
    assert gate["gated"] == ["tv"] and gate["failed"] == ["tv"]
    assert err.splitlines() == [gate["verdict"]] and gate["verdict"].startswith("FAIL")
    status, out, err = _gate(csv_file, capsys, 1.0, "--json")
    assert status == 0 and json.loads(out)["gate"]["passed"] is True
    assert err.startswith("PASS") and len(err.splitlines()) == 1


def test_gate_in_paper_mode_says_what_holds_in_expectation(csv_file, capsys):
    status, out, _ = _gate(csv_file, capsys, 1.0, "--bound", "nw", "tv", "--b1", "2",
                           "--b2", "2", "--guarantee", "paper")
    assert status == 0
    verdict = out.splitlines()[-1]
    assert verdict.startswith("PASS (--max-ce 1): CE < 1 at confidence 95% (")
    assert verdict.endswith(
        "; guarantee=paper: nw holds in expectation over the training labels only"
    )


@pytest.mark.parametrize("tau", ["0", "-0.1", "1.5", "nan"])
def test_gate_threshold_must_be_a_calibration_error(csv_file, tau, capsys):
    assert main([str(csv_file), "--max-ce", tau]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "--max-ce must be in (0, 1]" in err


def test_gate_exit_status_through_the_command(csv_file, fitted):
    # ``python -m skcalbound`` returns main's status to the shell (status 0 is
    # checked end to end by the first test of this file).
    tau = fitted["tv"].bound_ / 2
    result = _run(csv_file, "--cv", 3, "--max-ce", tau, cwd=csv_file.parent)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines()[-1].startswith("FAIL")


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


@pytest.mark.parametrize(
    "option, value", [("--bound", "ece"), ("--guarantee", "exact"), ("--max-ce", "low")]
)
def test_bad_option_is_argparse_usage_error(option, value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["x.csv", option, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: invalid" in err and repr(value) in err


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
