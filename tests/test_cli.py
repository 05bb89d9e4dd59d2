"""The ``skcalbound`` command: its output, the ``--max-ce`` gate, and its errors.

The printed numbers must be the estimators' on the same data and seed (the interval
``[lower_bound_, bound_]`` of each bound, in both guarantee modes); the gate exits
with status 1 unless every upper bound is below the threshold; every bad file,
column, value or option gets one line on stderr and exit status 2. The tests call
``main`` in process; a subprocess runs ``python -m skcalbound`` where the process is
the point: the exit status the shell sees, a fresh interpreter's imports, a closed
pipe.
"""

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomllib

from skcalbound import (
    BelowChanceWarning,
    LipschitzBucketBound,
    MonotoneCalibrationBound,
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
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
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
        {
            "id": np.arange(s.size),
            "prob": perturb_scores(s, H, random_state=0),
            "label": np.where(y == 1, "spam", "ham"),
        }
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


def test_default_is_the_monotone_band_with_the_estimators_numbers(
    csv_file, data, capsys
):
    # Raw scores (no --h): the default bound is the band (issue 37 item 5), with the
    # numbers of MonotoneCalibrationBound(random_state=0): one band on all rows,
    # whatever --cv says.
    s, y = data
    assert main([str(csv_file), "--cv", "3"]) == 0
    stdout, stderr = capsys.readouterr()
    assert stderr == ""
    band = MonotoneCalibrationBound(random_state=0).fit(s, y)
    assert band.n_splits_ == 1 and 0 < band.lower_bound_ < 1 / 6 < band.bound_ < 0.5
    lower, upper, estimate = _table_row(stdout, "Monotone band")
    assert (lower, upper) == (f"{band.lower_bound_:.6f}", f"{band.bound_:.6f}")
    assert estimate == f"{band.estimate_:.6f}"
    for term, value in band.terms_.items():
        shown = f"{value:d}" if term == "n_windows" else f"{value:.6f}"
        assert re.search(rf"^  {term}\s+{shown}$", stdout, flags=re.M), term
    assert "E[y|s] non-decreasing in s; holds with probability >= 95%" in stdout
    assert "(monotone: one fit on all rows, no folds)" in stdout
    assert _ece_row(stdout) == f"{binned_ece(y, s):.6f}"
    assert not re.search(r"^(TV|NW)", stdout, flags=re.M)  # the band alone
    assert "warning" not in stdout and "Note:" not in stdout


def test_csv_table_prints_the_estimators_numbers(csv_file, data, capsys):
    s, y = data
    # V = 4: TV's default cell bound is above 0.5 at n = 6000 (the warning below)
    # only with a V that large (0.352 with V = 1).
    assert main([str(csv_file), "--bound", "tv", "--V", "4"]) == 0
    stdout, stderr = capsys.readouterr()
    assert stderr == ""
    tv = TVCalibrationBound(V=4.0, random_state=0).fit(s, y)
    lower, upper, estimate = _table_row(stdout, "TV")
    assert (lower, upper) == (f"{tv.lower_bound_:.6f}", f"{tv.bound_:.6f}")
    assert estimate == f"{tv.estimate_:.6f}"
    for term, value in tv.terms_.items():
        # Counts (the cell bound's n_blocks) print as integers.
        shown = f"{value:d}" if isinstance(value, int) else f"{value:.6f}"
        assert re.search(rf"^  {term}\s+{shown}$", stdout, flags=re.M), term
    assert _ece_row(stdout) == f"{binned_ece(y, s):.6f}"
    assert "6000 scores (column 'y_prob')" in stdout
    assert "positive class 1" in stdout
    assert "guarantee=high_probability" in stdout
    assert "(tv: one fit on all rows, no folds)" in stdout  # the cell bound
    assert not re.search(r"^NW", stdout, flags=re.M)  # only TV without --h
    assert "PASS" not in stdout and "FAIL" not in stdout  # no gate
    # The estimator's VacuousBoundWarning (TV's bound is above 0.5 at n = 6000) is in
    # the table, under TV's row, not on stderr.
    assert tv.bound_ > 0.5
    warning = re.search(r"^  warning: (.*?)(?=^\S)", stdout, flags=re.M | re.S)
    assert warning, stdout
    text = " ".join(warning.group(1).split())
    assert text.startswith(
        f"The certified upper bound of TVCalibrationBound is "
        f"{tv.bound_:.3f}, above 0.5 with 6000 samples"
    )
    assert "Note:" not in stdout  # one bound: nothing to choose among


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
    # The default's first bound: the band, or TV in paper mode (no paper band).
    first = (
        {"TV": TVCalibrationBound(**common).fit(s, y)}
        if guarantee == "paper"
        else {"Monotone band": MonotoneCalibrationBound(random_state=0).fit(s, y)}
    )
    expected = {
        **first,
        "NW": NWCalibrationBound(b1=2.0, b2=2.0, **common).fit(s, y),
        "Lipschitz bucketing": LipschitzBucketBound(L=2.0, **common).fit(s, y),
    }
    for name, est in expected.items():
        lower, upper, estimate = _table_row(out, name)
        assert (lower, upper) == (f"{est.lower_bound_:.6f}", f"{est.bound_:.6f}"), name
        assert estimate == f"{est.estimate_:.6f}"
    assert float(_table_row(out, "NW")[0]) > 0  # CE = 1/6: a proper interval
    assert f"guarantee={guarantee}" in out
    caveat = "paper's form: holds in expectation over the training labels"
    # TV's published form holds with probability; NW's and Lipschitz's do not.
    rows = {
        name: next(line for line in out.splitlines() if line.startswith(name))
        for name in expected
    }
    assert "holds with probability >= 95%" in rows[next(iter(first))]
    for name in ("NW", "Lipschitz bucketing"):
        assert (caveat in rows[name]) is (guarantee == "paper"), name


def test_parquet_json_prints_the_estimators_numbers(parquet_file, data, capsys):
    _, y = data
    frame = pd.read_parquet(parquet_file)
    s = frame["prob"].to_numpy()
    status = main(
        [
            str(parquet_file),
            "--scores",
            "prob",
            "--labels",
            "label",
            "--bound",
            "nw",
            "lipschitz",
            "tv",
            "--h",
            "2**-6",
            "--V",
            "4",  # TV's cell bound above 0.5 here: its warning in the JSON
            "--confidence-level",
            "0.9",
            "--cv",
            "4",
            "--random-state",
            "7",
            "--json",
            "--pos-label",
            "spam",
        ]
    )
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    report = json.loads(out)
    assert report["n_samples"] == 6000 and report["positive_label"] == "spam"
    assert report["scores_column"] == "prob" and report["labels_column"] == "label"
    by_method = {r["method"]: r for r in report["results"]}
    assert list(by_method) == ["nw", "lipschitz", "tv", "binned_ece"]
    labels = frame["label"].to_numpy()
    common = dict(confidence_level=0.9, cv=4, random_state=7, pos_label="spam")
    expected = {
        "nw": NWCalibrationBound(h=H, **common).fit(s, labels),
        "lipschitz": LipschitzBucketBound(h=H, **common).fit(s, labels),
        # cv does not apply to TV's cell bound (the report says so, below).
        "tv": TVCalibrationBound(V=4.0, confidence_level=0.9, random_state=7).fit(
            s, labels == "spam"
        ),
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
    assert ece["estimate"] == binned_ece(labels, s, pos_label="spam")
    # The string labels are the same classes as 0/1: the positive class is "spam".
    tv = TVCalibrationBound(V=4.0, confidence_level=0.9, random_state=7)
    assert by_method["tv"]["bound"] == tv.fit(s, y).bound_
    # Three bounds side by side: the note on choosing among them.
    assert "0.966667 (= 1 - (1 - 0.9)/3, a union bound)" in report["note"]
    # Warnings of the fits are in the JSON (stdout stays JSON, stderr empty).
    assert by_method["nw"]["warnings"] == []
    # --cv 4 does not apply to TV's cell bound, and the row says so.
    assert [w.split(":")[0] for w in by_method["tv"]["warnings"]] == [
        "TVCalibrationBound's cell bound (method='cells', the default) has no folds",
        "The certified upper bound of TVCalibrationBound is 0.528, above 0.5 with "
        "6000 samples",
    ]


def _png_size(path):
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


@pytest.mark.parametrize(
    "options, n_panels",
    [
        # The three-panel cell (every bound) by default; one and two panels are slow.
        pytest.param([], 1, marks=pytest.mark.slow),
        pytest.param(["--b1", "2", "--b2", "4"], 2, marks=pytest.mark.slow),
        (["--h", "2^-6", "--bound", "tv", "nw", "lipschitz"], 3),
        (["--bound", "monotone"], 1),  # the band: fast
    ],
)
def test_plot_has_one_panel_per_bound(csv_file, tmp_path, capsys, options, n_panels):
    out = tmp_path / "reliability.png"
    assert main([str(csv_file), *options, "--plot", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert f"reliability plot written to {out}" in stdout
    # Panels of 5.5 x 7 inches side by side (the bounds' curves and bands no longer
    # hide one another on one axes).
    width, height = _png_size(out)
    assert abs(width / height - 5.5 * n_panels / 7.0) < 0.01
    if n_panels == 2:
        assert float(_table_row(stdout, "NW")[1]) > 0  # --b1/--b2 add the NW bound


def test_help_explains_the_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for phrase in [
        "Certified interval [lower, upper] for the calibration error",
        "--scores COLUMN",
        "(default: y_prob)",
        "--labels COLUMN",
        "(default: y_true)",
        "--h H",
        "heuristic, not a bound",
        "examples:",
        "--guarantee {high_probability,paper}",
        "--max-ce TAU",
        "every computed bound (each method of --bound) has its upper bound "
        "strictly below TAU",
        "with probability at least --confidence-level",
        "1 with --max-ce when some upper bound is not below TAU",
        "Exit status: 0 on success",
        "2 for a bad option",
        "--pos-label LABEL",
        "e.g. 2^-6, '2**-6' (quoted: * is special in the shell) or 0.015625",
        "not a knob to tune",
        "reporting the smallest of several intervals computed on the same "
        "file is not certified",
    ]:
        assert phrase in text, phrase


def test_bad_file_is_named_on_the_error_line(tmp_path, capsys):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"this is not parquet")
    assert main([str(path)]) == 2
    stdout, stderr = capsys.readouterr()
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(
        f"skcalbound: error: {path}: not a readable parquet file"
    )


def test_console_script_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["skcalbound"] == "skcalbound._cli:main"
    assert "pyarrow" in " ".join(project["optional-dependencies"]["cli"])


_REPORT = (
    "print('sklearn imported:', 'sklearn' in sys.modules, "
    "'scipy imported:', 'scipy' in sys.modules)"
)


@pytest.mark.parametrize(
    "command",
    [
        # The console script's entry point, and python -m skcalbound (~0.8 s a
        # subprocess: under slow, with the gate's run through python -m below).
        pytest.param(
            "import sys; from skcalbound._cli import main\n"
            "try:\n    main({argv!r})\nexcept SystemExit as e:\n    status = e.code\n"
            + _REPORT
            + "\nsys.exit(status)",
            id="console-script",
        ),
        pytest.param(
            "import runpy, sys; sys.argv = ['skcalbound', *{argv!r}]\n"
            "try:\n    runpy.run_module('skcalbound', run_name='__main__')\n"
            "except SystemExit as e:\n    status = e.code\n"
            + _REPORT
            + "\nsys.exit(status)",
            marks=pytest.mark.slow,
            id="python-m",
        ),
    ],
)
@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--version"], marks=pytest.mark.slow),
        pytest.param(["--vers"], marks=pytest.mark.slow),
        ["x.csv", "--version"],
    ],
)
def test_version_does_not_import_scikit_learn(command, argv):
    # skcalbound loads its public names lazily, and the command imports the
    # estimators only when it computes: --version answers without scikit-learn.
    result = subprocess.run(
        [sys.executable, "-c", command.format(argv=argv)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    expected = importlib.metadata.version("skcalbound")
    assert result.stdout.splitlines() == [
        f"skcalbound {expected}",
        "sklearn imported: False scipy imported: False",
    ]


def test_version_of_the_parser_is_the_installed_one(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == (
        f"skcalbound {importlib.metadata.version('skcalbound')}\n"
    )


# --------------------------------------------------------------------------------------
# The --max-ce gate: exit status 0 or 1, and a one-line verdict
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted(data):
    s, y = data
    return {
        "nw": NWCalibrationBound(b1=2.0, b2=2.0, cv=3, random_state=0).fit(s, y),
        # --cv 3 does not apply to TV's cell bound (the gate's report says so).
        "tv": TVCalibrationBound(random_state=0).fit(s, y),
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
        f"{fitted['nw'].lower_bound_:.6f}",
        f"{upper:.6f}",
    )
    # Equal is not below: the gate fails.
    status, out, err = _gate(csv_file, capsys, upper, *nw)
    assert status == 1 and err == ""
    assert out.splitlines()[-1].startswith(
        f"FAIL (--max-ce {upper:g}): CE < {upper:g} "
        "not certified at confidence 95% (nw upper"
    )


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
    status, out, err = _gate(csv_file, capsys, tv / 2, "--json", "--bound", "tv")
    assert status == 1
    report = json.loads(out)
    gate = report["gate"]
    assert gate["max_ce"] == tv / 2 and gate["passed"] is False
    assert gate["gated"] == ["tv"] and gate["failed"] == ["tv"]
    assert err.splitlines() == [gate["verdict"]] and gate["verdict"].startswith("FAIL")
    status, out, err = _gate(csv_file, capsys, 1.0, "--json", "--bound", "tv")
    assert status == 0 and json.loads(out)["gate"]["passed"] is True
    assert err.startswith("PASS") and len(err.splitlines()) == 1


def test_gate_in_paper_mode_says_what_holds_in_expectation(csv_file, capsys):
    status, out, _ = _gate(
        csv_file,
        capsys,
        1.0,
        "--bound",
        "nw",
        "tv",
        "--b1",
        "2",
        "--b2",
        "2",
        "--guarantee",
        "paper",
    )
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


# A subprocess that imports scikit-learn and fits (~2 s): under slow; the default suite
# checks the status in process and runs ``python -m skcalbound --version`` above.
@pytest.mark.slow
def test_gate_exit_status_through_the_command(csv_file, fitted):
    # The smoke test of the installed command: ``python -m skcalbound`` reads the
    # file, computes, prints and returns main's status to the shell (status 0 with
    # the same table is checked in process by the first test of this file).
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
        "a.csv",
        pd.DataFrame({"p": GOOD["y_prob"], "y_true": GOOD["y_true"]}),
        [],
        r"no column 'y_prob' \(columns: 'p', 'y_true'\); pass --scores NAME",
    ),
    # The names were shown unquoted: ' y_true' looked like the missing 'y_true'.
    "column name with a space": (
        "a.csv",
        pd.DataFrame({"y_prob": GOOD["y_prob"], " y_true": GOOD["y_true"]}),
        [],
        r"no column 'y_true' \(columns: 'y_prob', ' y_true'\); pass --labels NAME$",
    ),
    # A file without a header: the advice was --scores 0.2868..., which reads the
    # first data row as the header and drops it.
    "no header row": (
        "a.csv",
        pd.DataFrame(GOOD).T.reset_index(drop=True).T.rename(columns=str),
        [],
        r"no column 'y_prob' \(columns: '0', '1'\); its first line holds numbers, not "
        r"column names: the file seems to have no header row",
    ),
    "semicolon-separated": (
        "a.csv",
        pd.DataFrame({"y_prob;y_true": [f"{p};{y}" for p, y in zip(*GOOD.values())]}),
        [],
        r"\(columns: 'y_prob;y_true'\); its one column's name holds a tab, ';' or "
        r"'\|': the file seems to use another delimiter than ','",
    ),
    "missing labels column": (
        "a.parquet",
        pd.DataFrame(GOOD),
        ["--labels", "target"],
        r"no column 'target' \(columns: 'y_prob', 'y_true'\); pass --labels NAME",
    ),
    # It said "groups contains 1 missing value(s) ... (e.g. groups.fillna('missing'))".
    "missing segment": (
        "a.csv",
        pd.DataFrame({**GOOD, "seg": ["a", "b", None, "a"] * 5}),
        ["--by", "seg"],
        r"--by seg: column 'seg' of .*a.csv has 5 missing value\(s\), the first in "
        r"data row 2 \(counted from 0 after the header\); give them a segment of "
        r"their own \(e.g. the text 'missing'\) or drop those rows$",
    ),
    # An option no requested bound reads was ignored without a word (--h with tv:
    # perturbed scores, likely the reason for the command, and the wrong bound).
    "h with tv only": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "tv", "--h", "0.015625"],
        r"--h is not used by tv: it is read by lipschitz and nw; add --bound nw, or "
        r"drop --h$",
    ),
    "noise with the band": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "monotone", "--noise", "worst_case"],
        r"--noise is not used by monotone: .*; add --bound nw, or drop --noise$",
    ),
    "L with tv and the band": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "tv", "monotone", "--L", "1"],
        r"--L is not used by tv, monotone: it is read by lipschitz; add --bound "
        r"lipschitz, or drop --L$",
    ),
    # Percentages: most scores above 1, none above 100.
    "scores in percent": (
        "a.csv",
        _with("y_prob", [10.0, 40.0, 80.0, 90.0] * 5),
        [],
        r"data row 0 \(counted from 0 after the header\) holds 10.0 \(20 bad rows "
        r"in all\); they look like percentages: divide them by 100$",
    ),
    "nan score": (
        "a.csv",
        _with("y_prob", [0.1, np.nan] + GOOD["y_prob"][2:]),
        [],
        r"column 'y_prob' must hold probabilities in \[0, 1\] \(no missing values\); "
        r"data row 1 \(counted from 0 after the header\) holds nan \(1 bad row in "
        r"all\)$",
    ),
    "score above one": (
        "a.parquet",
        _with("y_prob", [0.1, 0.2, 1.5] + GOOD["y_prob"][3:]),
        [],
        r"data row 2 \(counted from 0 after the header\) holds 1.5 \(1 bad row in "
        r"all\)$",
    ),
    "text score": (
        "a.csv",
        _with("y_prob", ["high"] + GOOD["y_prob"][1:]),
        [],
        r"data row 0 \(counted from 0 after the header\) holds 'high'",
    ),
    "three classes": (
        "a.csv",
        _with("y_true", [0, 1, 2, 0] * 5),
        [],
        r"column 'y_true' must hold exactly two distinct labels .* found 3: 0, 1, 2",
    ),
    "one class": (
        "a.csv",
        _with("y_true", [1] * 20),
        [],
        r"exactly two distinct labels .* found 1: 1",
    ),
    "missing label": (
        "a.csv",
        _with("y_true", [0, None] + GOOD["y_true"][2:]),
        [],
        r"column 'y_true' has a missing label in row 1",
    ),
    "no rows": (
        "a.csv",
        pd.DataFrame({"y_prob": [], "y_true": []}),
        [],
        r"the file has no rows",
    ),
    "nw without its assumption": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "nw"],
        r"nw: The NW bound needs the derivative bounds .* give h",
    ),
    "negative V": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "tv", "--V", "-1"],
        r"tv: The 'V' parameter of TVCalibrationBound must be a float in the range "
        r"\(0.0, inf\)",
    ),
    "too many folds": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "tv", "--guarantee", "paper", "--cv", "50"],  # TV's folds
        r"tv: .*50",
    ),
    "confidence level": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--confidence-level", "1.5"],
        r"--confidence-level must be in \(0, 1\); got 1.5",
    ),
    "n_bins": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--n-bins", "0"],
        r"--n-bins: The 'n_bins' parameter of binned_ece must be an int",
    ),
    "h above one half": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--h", "0.75"],
        r"--h 0.75 is above 0.5. h is the bandwidth of the sech perturbation the "
        r"scores went through .*an assumption about how the scores were produced, not "
        r"a knob to tune. To assume a weak smoothness of E\[y\|s\] on purpose, give it "
        r"directly: --b1 and --b2 \(nw\) or --L \(lipschitz\).$",
    ),
    "h as an exponent": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--h", "6", "--bound", "nw"],
        r"--h 6 is above 0.5.* Did you mean --h 2\*\*-6\?",
    ),
    "h as one over h": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--h", "64.5"],
        r"Did you mean --h 1/64.5 = 0.0155039\?",
    ),
    # nw and lipschitz alone stream the file through fit_chunks, which did not
    # validate the parameters: b2 = -3 was certified, --cv 1 hung, --cv 0 raised a
    # ZeroDivisionError and a negative L "math domain error".
    "negative b2, streamed": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "nw", "--b1", "1", "--b2", "-3"],
        r"nw: The 'b2' parameter of NWCalibrationBound must be a float in the range "
        r"\[0.0, inf\) or None. Got -3.0 instead.$",
    ),
    "cv 1, streamed": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "nw", "--h", "0.015625", "--cv", "1"],
        r"nw: The 'cv' parameter of NWCalibrationBound must be an int in the range "
        r"\[2, inf\).* Got 1 instead.$",
    ),
    "cv 0, streamed": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "lipschitz", "--h", "0.015625", "--cv", "0"],
        r"lipschitz: The 'cv' parameter of LipschitzBucketBound must be an int .* "
        r"Got 0 instead.$",
    ),
    "negative L, streamed": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--bound", "lipschitz", "--L", "-1"],
        r"lipschitz: The 'L' parameter of LipschitzBucketBound must be a float in "
        r"the range \[0.0, inf\) or None. Got -1.0 instead.$",
    ),
    "h zero": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--h", "0"],
        r"--h must be positive; got 0$",
    ),
    "text labels without pos_label": (
        "a.csv",
        _with("y_true", ["churn", "stay", "stay", "churn"] * 5),
        [],
        r"a.csv: column 'y_true' holds the labels 'churn', 'stay': say which is the "
        r"positive class \(the one whose probability column 'y_prob' holds\) with "
        r"--pos-label LABEL$",
    ),
    "numeric labels other than 0/1 without pos_label": (
        "a.parquet",
        _with("y_true", [1, 2, 2, 1] * 5),
        [],
        r"column 'y_true' holds the labels 1, 2: say which is the positive class",
    ),
    "pos_label not a label": (
        "a.csv",
        _with("y_true", ["churn", "stay", "stay", "churn"] * 5),
        ["--pos-label", "Churn"],
        r"a.csv: --pos-label 'Churn' is not a label of column 'y_true', whose labels "
        r"are 'churn', 'stay'$",
    ),
    "pos_label not a number": (
        "a.csv",
        pd.DataFrame(GOOD),
        ["--pos-label", "yes"],
        r"--pos-label 'yes': column 'y_true' holds numbers; pass one of its labels",
    ),
    "pos_label not a boolean": (
        "a.csv",
        _with("y_true", [True, False, False, True] * 5),
        ["--pos-label", "yes"],
        r"column 'y_true' holds booleans; pass --pos-label True or --pos-label False",
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
    assert lines[0].startswith("skcalbound: error: ") and re.search(
        message, lines[0]
    ), lines[0]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.csv", None, r"missing.csv: no such file"),
        (
            "scores.txt",
            b"y_prob,y_true\n0.1,0\n",
            r"cannot tell the format .* --format",
        ),
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


def _json(capsys, *argv):
    assert main([*map(str, argv), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def test_pos_label_gives_the_bound_of_the_0_1_labels(tmp_path, capsys):
    rng = np.random.default_rng(2)
    p_churn = rng.uniform(size=3000)
    churn = (rng.uniform(size=p_churn.size) < p_churn**2).astype(int)
    named = _write(
        tmp_path,
        "churn.csv",
        pd.DataFrame(
            {"y_prob": p_churn, "y_true": np.where(churn == 1, "churn", "stay")}
        ),
    )
    coded = _write(
        tmp_path, "coded.csv", pd.DataFrame({"y_prob": p_churn, "y_true": churn})
    )
    options = ["--bound", "tv", "nw", "--b1", "2", "--b2", "2", "--cv", "3"]
    # Without --pos-label: exit status 2 and a message naming the labels and the option.
    assert main([str(named), *options]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "holds the labels 'churn', 'stay'" in err and "--pos-label" in err
    expected = _json(capsys, coded, *options)
    report = _json(capsys, named, *options, "--pos-label", "churn")
    assert report["positive_label"] == "churn" and expected["positive_label"] == 1
    assert report["results"] == expected["results"]
    # The other class: the bound of 1 - s against 1 - y, i.e. of P(stay).
    stay = _json(capsys, named, *options, "--pos-label", "stay")
    with pytest.warns(BelowChanceWarning, match="below chance"):
        tv = TVCalibrationBound(random_state=0).fit(p_churn, 1 - churn)
    assert stay["results"][0]["bound"] == tv.bound_
    assert any("below chance" in w for w in stay["results"][0]["warnings"])


@pytest.mark.parametrize(
    "labels, pos_label, positives",
    [
        ([True, False, False, True], None, [1, 0, 0, 1]),
        ([True, False, False, True], "False", [0, 1, 1, 0]),
        ([True, False, False, True], "true", [1, 0, 0, 1]),
        ([-1, 1, 1, -1], None, [0, 1, 1, 0]),
        ([1, 2, 2, 1], "2", [0, 1, 1, 0]),
        ([1, 2, 2, 1], "1.0", [1, 0, 0, 1]),
        ([0.5, 1.5, 1.5, 0.5], "0.5", [1, 0, 0, 1]),
    ],
)
def test_pos_label_read_as_the_labels_type(
    tmp_path, capsys, labels, pos_label, positives
):
    frame = pd.DataFrame({"y_prob": GOOD["y_prob"], "y_true": labels * 5})
    path = _write(tmp_path, "a.csv", frame)
    options = ["--cv", "2"] + ([] if pos_label is None else ["--pos-label", pos_label])
    report = _json(capsys, path, *options)
    expected = MonotoneCalibrationBound(random_state=0).fit(
        np.array(GOOD["y_prob"]), np.array(positives * 5)
    )
    assert report["results"][0]["bound"] == expected.bound_
    assert report["results"][1]["estimate"] == binned_ece(
        np.array(positives * 5), np.array(GOOD["y_prob"])
    )


def test_h_as_a_power_gives_the_same_bounds(csv_file, capsys):
    options = ["--bound", "nw", "lipschitz", "--cv", "3"]
    reports = [
        _json(capsys, csv_file, *options, "--h", h)
        for h in ["0.015625", "2**-6", "2^-6"]
    ]
    assert reports[0]["results"] == reports[1]["results"] == reports[2]["results"]
    assert (
        reports[0]["results"][0]["bound"]
        == NWCalibrationBound(h=H, cv=3, random_state=0)
        .fit(*_csv_arrays(csv_file))
        .bound_
    )


def _csv_arrays(path):
    frame = pd.read_csv(path)
    return frame["y_prob"].to_numpy(), frame["y_true"].to_numpy()


def test_note_on_choosing_among_several_bounds(csv_file, capsys):
    assert main([str(csv_file), "--b1", "2", "--b2", "2", "--cv", "3"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "Note: Each of these 2 intervals holds on its own at 95%. Reporting the "
        "smallest upper bound, picked after seeing all 2, is not certified at 95%: to "
        "choose among them, compute each with --confidence-level 0.975 (= 1 - (1 - "
        "0.95)/2, a union bound); then all 2 hold together at 95%, and so does the "
        "smallest."
    ) in out
    # In paper mode the NW form holds in expectation only: the note says so.
    assert (
        main(
            [
                str(csv_file),
                "--b1",
                "2",
                "--b2",
                "2",
                "--cv",
                "3",
                "--guarantee",
                "paper",
                "--confidence-level",
                "0.9",
            ]
        )
        == 0
    )
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "holds on its own (at 90%, or in expectation for the paper's forms)" in out
        and "--confidence-level 0.95 (= 1 - (1 - 0.9)/2" in out
    )
    # One bound: no note, in the table or the JSON.
    assert "note" not in _json(capsys, csv_file, "--cv", "3")


def test_format_option_reads_a_file_without_extension(tmp_path, capsys):
    path = tmp_path / "scores.txt"
    pd.DataFrame(GOOD).to_csv(path, index=False)
    assert main([str(path), "--format", "csv", "--cv", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    s, y = np.array(GOOD["y_prob"]), np.array(GOOD["y_true"])
    expected = MonotoneCalibrationBound(random_state=0).fit(s, y).bound_
    assert report["results"][0]["method"] == "monotone"
    assert report["results"][0]["bound"] == expected


def test_plot_into_a_missing_directory(csv_file, tmp_path, capsys):
    target = tmp_path / "nowhere" / "plot.png"
    assert main([str(csv_file), "--plot", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "the directory" in err and "does not exist" in err


@pytest.mark.parametrize("name, got", [("plot", "none"), ("plot.txt", "'.txt'")])
def test_plot_needs_an_image_extension(csv_file, tmp_path, capsys, name, got):
    # Without one, matplotlib wrote plot.png while the report said "plot"; refused
    # before the file is read, nothing written.
    assert main([str(csv_file), "--plot", str(tmp_path / name)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "--plot needs a file name whose extension is the image format" in err
    assert "such as .png, .pdf or .svg" in err and err.rstrip().endswith(f"got {got}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "option, value", [("--bound", "ece"), ("--guarantee", "exact"), ("--max-ce", "low")]
)
def test_bad_option_is_argparse_usage_error(option, value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["x.csv", option, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: invalid" in err and repr(value) in err


# Slow: a second start-up of the installed command (~2 s of CPU, most of it
# importing scikit-learn); test_gate_exit_status_through_the_command is the default
# suite's subprocess smoke test.
@pytest.mark.slow
def test_closed_pipe_stops_quietly(csv_file):
    # ``skcalbound f.csv | head -1``: the reader is gone before the table is printed.
    proc = subprocess.Popen(
        [sys.executable, "-m", "skcalbound", str(csv_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=csv_file.parent,
    )
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert b"BrokenPipeError" not in err and err == b""


# --------------------------------------------------------------------------------------
# The monotone band (issue 37): --bound monotone, the default, verify, the gate
# --------------------------------------------------------------------------------------


def test_monotone_json_is_the_estimators_with_its_certificate(csv_file, data, capsys):
    s, y = data
    report = _json(
        capsys,
        csv_file,
        "--bound",
        "monotone",
        "--confidence-level",
        "0.9",
        "--random-state",
        "7",
        "--cv",
        "3",  # not the band's: one band on all rows
    )
    band = MonotoneCalibrationBound(confidence_level=0.9, random_state=7).fit(s, y)
    (row, ece) = report["results"]
    assert row["method"] == "monotone" and ece["method"] == "binned_ece"
    assert (row["lower_bound"], row["bound"]) == (band.lower_bound_, band.bound_)
    assert row["estimate"] == band.estimate_
    assert row["terms"] == band.terms_
    assert row["certified"] is True and row["in_expectation_only"] is False
    assert row["guarantee"] == "high_probability"
    assert row["confidence_level"] == 0.9
    assert row["assumption"] == "E[y|s] non-decreasing in s"
    certificate = report["certificates"]["monotone"]
    assert certificate["method"] == "MonotoneCalibrationBound"
    assert certificate["params"]["random_state"] == 7
    assert certificate["params"]["cv"] is None
    assert certificate["bound"] == band.bound_
    assert certificate["fingerprint"] == band.certificate_["fingerprint"]


def test_with_h_the_default_adds_nw_to_the_band(parquet_file, capsys):
    frame = pd.read_parquet(parquet_file)
    s, y = frame["prob"].to_numpy(), (frame["label"] == "spam").to_numpy().astype(int)
    report = _json(
        capsys,
        parquet_file,
        "--scores",
        "prob",
        "--labels",
        "label",
        "--pos-label",
        "spam",
        "--h",
        "2^-6",
        "--cv",
        "3",
    )
    methods = [r["method"] for r in report["results"]]
    assert methods == ["monotone", "nw", "binned_ece"]
    nw = NWCalibrationBound(h=H, cv=3, random_state=0).fit(s, y)
    band = MonotoneCalibrationBound(random_state=0).fit(s, y)
    assert report["results"][0]["bound"] == band.bound_
    assert report["results"][1]["bound"] == nw.bound_
    assert "2 intervals" in report["note"]


def test_paper_mode_default_is_tv_and_the_band_has_no_paper_form(csv_file, capsys):
    report = _json(capsys, csv_file, "--guarantee", "paper", "--cv", "3")
    assert [r["method"] for r in report["results"]] == ["tv", "binned_ece"]
    assert main([str(csv_file), "--bound", "monotone", "--guarantee", "paper"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "--guarantee paper: monotone has no paper form" in err


def test_verify_recomputes_the_commands_monotone_certificate(
    csv_file, tmp_path, capsys
):
    record = tmp_path / "record.json"
    assert main([str(csv_file), "--json"]) == 0  # the default: the band, seed 0
    record.write_text(capsys.readouterr().out)
    assert main(["verify", str(record), str(csv_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"OK {csv_file} against {record} (1 certificate and the report built on it)"
    )
    assert "MonotoneCalibrationBound: data match" in out
    # A raised bound is caught by the refit.
    report = json.loads(record.read_text())
    report["certificates"]["monotone"]["bound"] *= 1.01
    record.write_text(json.dumps(report))
    assert main(["verify", str(record), str(csv_file)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("FAIL MonotoneCalibrationBound: bound differs")


def test_gate_on_the_band(csv_file, data, capsys):
    s, y = data
    upper = MonotoneCalibrationBound(random_state=0).fit(s, y).bound_
    status, out, _ = _gate(csv_file, capsys, float(np.nextafter(upper, 1.0)))
    assert status == 0
    assert out.splitlines()[-1].startswith(
        f"PASS (--max-ce {float(np.nextafter(upper, 1.0)):g}): certified CE <"
    )
    assert f"monotone upper bound {upper:.6f} <" in out.splitlines()[-1]
    status, out, _ = _gate(csv_file, capsys, upper)
    assert status == 1
    assert f"monotone upper bound {upper:.6f} >=" in out.splitlines()[-1]


def test_help_lists_each_bounds_assumption(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    rows = {
        "monotone": "non-decreasing in s",
        "tv": "total variation <= V",
        "nw": "bounded derivatives",
        "lipschitz": "Lipschitz",
    }
    for name, assumption in rows.items():
        assert re.search(rf"^  {name}\s+{re.escape(assumption)}", text, flags=re.M)
    flat = " ".join(text.split())
    assert "Default: monotone, plus nw with --h" in flat
    assert "not every non-monotone E[y|s] makes it cross" in flat


def test_chunksize_without_h_names_the_band(csv_file, capsys):
    assert main([str(csv_file), "--chunksize", "1000"]) == 2
    err = capsys.readouterr().err
    assert "the default monotone band (and tv) needs the whole sorted sample" in err


def test_a_crossing_band_is_not_certified_and_never_passes_the_gate(tmp_path, capsys):
    from skcalbound import MonotonicityWarning
    from skcalbound.datasets import make_oscillating

    data = make_oscillating(10**4, random_state=0)  # E[y|s] not monotone
    path = tmp_path / "oscillating.csv"
    pd.DataFrame({"y_prob": data.scores, "y_true": data.labels}).to_csv(
        path, index=False
    )
    with pytest.warns(MonotonicityWarning):  # the command reports it in the row
        band = MonotoneCalibrationBound(random_state=0).fit(data.scores, data.labels)
    assert band.monotonicity_rejected_ and band.bound_ < 0.5
    assert main([str(path), "--max-ce", "0.5", "--json"]) == 1
    out, err = capsys.readouterr()
    report = json.loads(out)
    row = report["results"][0]
    assert row["bound"] == band.bound_
    assert row["assumption_rejected"] is True and row["certified"] is False
    assert any(w.startswith("The calibration band of") for w in row["warnings"])
    assert report["gate"]["failed"] == ["monotone"]
    assert err.startswith("FAIL (--max-ce 0.5)")
    assert "but the data reject its assumption (the band crosses)" in err
    assert main([str(path)]) == 0
    assert "rejected by the data (the band crosses): not certified" in (
        " ".join(capsys.readouterr().out.split())
    )


# --------------------------------------------------------------------------------------
# Scores that rank the positive class below chance: the warning in the JSON output
# --------------------------------------------------------------------------------------


def _tv_row(capsys):
    results = json.loads(capsys.readouterr().out)["results"]
    return {r["method"]: r for r in results}["tv"]


def test_command_line_reports_the_warning(calibrated_churn, tmp_path, capsys):
    s, _, words = calibrated_churn
    path = tmp_path / "churn.csv"
    pd.DataFrame({"y_prob": s, "y_true": words}).to_csv(path, index=False)
    options = [str(path), "--bound", "tv", "--json", "--pos-label"]
    below = "The scores rank the positive class below chance"
    assert main([*options, "stay"]) == 0
    warned = _tv_row(capsys)["warnings"]
    assert sum(w.startswith(below) for w in warned) == 1
    assert main([*options, "churn"]) == 0
    assert not any(w.startswith(below) for w in _tv_row(capsys)["warnings"])


@pytest.mark.parametrize("noise", ["adaptive", "worst_case"])
def test_noise_option_gives_the_estimators_numbers(parquet_file, data, noise, capsys):
    _, y = data
    s = pd.read_parquet(parquet_file)["prob"].to_numpy()
    options = ["--scores", "prob", "--labels", "label", "--pos-label", "spam"]
    options += ["--bound", "nw", "--h", "2^-6", "--cv", "3", "--json"]
    if noise != "adaptive":  # the default
        options += ["--noise", noise]
    assert main([str(parquet_file), *options]) == 0
    cert = json.loads(capsys.readouterr().out)["certificates"]["nw"]
    est = NWCalibrationBound(h=H, noise=noise, cv=3, random_state=0).fit(s, y)
    assert cert["params"]["noise"] == noise
    assert (cert["bound"], cert["lower_bound"]) == (est.bound_, est.lower_bound_)
    assert ("folds" in cert) == (noise == "adaptive")


def test_lipschitz_noise_adaptive_on_a_file_prints_the_estimators_numbers(
    csv_file, data, capsys
):
    # The command line a user writes for Lipschitz bucketing's variance-adaptive form:
    # the estimator's numbers, narrower than its default on this miscalibrated sample
    # (eta = s**2, CE = 1/6; 0.79 of its width at 6000 rows), still around the truth.
    s, y = data
    args = [str(csv_file), "--bound", "lipschitz", "--L", "2", "--random-state", "0"]
    results = {}
    for noise in ("adaptive", "worst_case"):
        assert main([*args, "--noise", noise, "--json"]) == 0
        (result, _) = json.loads(capsys.readouterr().out)["results"]
        results[noise] = result
        est = LipschitzBucketBound(L=2.0, noise=noise, random_state=0).fit(s, y)
        assert result["bound"] == pytest.approx(est.bound_, rel=1e-12)
        assert result["lower_bound"] == pytest.approx(est.lower_bound_, abs=1e-12)
        assert result["terms"] == pytest.approx(est.terms_, rel=1e-12)
        assert result["lower_bound"] < 1 / 6 < result["bound"]
    assert list(results["adaptive"]["terms"])[:2] == ["validation_mean", "bias_mean"]
    width = {k: r["bound"] - r["lower_bound"] for k, r in results.items()}
    assert width["adaptive"] < 0.85 * width["worst_case"]
