"""``skcalbound verify RECORD DATA`` and the certificates in ``--json``, in process.

A record passes against the file it certifies (exit 0, one OK line), fails with exit
status 1 when one label of the file is flipped or a recorded number is edited, and a
file that is not a record is a one-line error with exit status 2.
"""

import json

import numpy as np
import pandas as pd
import pytest

from skcalbound import NWCalibrationBound, TVCalibrationBound
from skcalbound._cli import main

H = 2.0**-6


@pytest.fixture
def data_file(tmp_path):
    rng = np.random.default_rng(3)
    s = rng.uniform(0.05, 0.95, size=800)
    y = rng.uniform(size=800) < s
    path = tmp_path / "scores.csv"
    pd.DataFrame({"prob": s, "churned": np.where(y, "yes", "no")}).to_csv(
        path, index=False
    )
    return path


def _record(data_file, capsys, *options):
    code = main(
        [
            str(data_file),
            "--scores",
            "prob",
            "--labels",
            "churned",
            "--pos-label",
            "yes",
            "--json",
            *options,
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    path = data_file.parent / "record.json"
    path.write_text(out)
    return path, json.loads(out)


def _verify(capsys, *args):
    code = main(["verify", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_holds_each_bounds_certificate(data_file, capsys):
    _, report = _record(data_file, capsys, "--bound", "tv", "nw", "--h", "2^-6")
    certified = [r for r in report["results"] if r["certified"]]
    assert list(report["certificates"]) == ["tv", "nw"]
    for r in certified:
        r["certificate"] = report["certificates"][r["method"]]
    assert [r["certificate"]["method"] for r in certified] == [
        "TVCalibrationBound",
        "NWCalibrationBound",
    ]
    frame = pd.read_csv(data_file)
    s, y = frame["prob"].to_numpy(), (frame["churned"] == "yes").to_numpy()
    for r in certified:
        cert = r["certificate"]
        assert cert["bound"] == r["bound"] and cert["lower_bound"] == r["lower_bound"]
        assert cert["source"] == {
            "file": str(data_file),
            "scores_column": "prob",
            "labels_column": "churned",
            "pos_label": "yes",
            "format": None,
        }
    est = NWCalibrationBound(h=H, random_state=0).fit(s, y)
    cert = dict(certified[1]["certificate"])
    del cert["source"], cert["created"]
    expected = dict(est.certificate_)
    del expected["created"]
    assert cert == expected
    assert report["results"][-1]["method"] == "binned_ece"  # no certificate


def test_verify_passes_on_the_unchanged_file(data_file, capsys):
    record, _ = _record(data_file, capsys, "--bound", "tv", "nw", "--h", "2^-6")
    code, out, err = _verify(capsys, record, data_file)
    assert code == 0 and err == ""
    assert out.startswith(f"OK {data_file} against {record} (2 certificates)")
    assert out.count("\n") == 1
    assert "TVCalibrationBound: data match (n=800" in out
    assert "NWCalibrationBound: data match" in out and "terms agree" in out


def test_verify_a_bare_certificate(data_file, capsys, tmp_path):
    frame = pd.read_csv(data_file)
    est = TVCalibrationBound(random_state=4, pos_label="yes").fit(
        frame["prob"].to_numpy(), frame["churned"].to_numpy()
    )
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(est.certificate_))
    # Columns not in the record: passed as options; pos_label from the record.
    code, out, _ = _verify(
        capsys, path, data_file, "--scores", "prob", "--labels", "churned"
    )
    assert code == 0 and out.startswith("OK") and "(1 certificate)" in out
    assert f"recomputed bound {est.bound_:.6g}" in out


def test_verify_fails_when_one_label_is_flipped(data_file, capsys):
    record, report = _record(data_file, capsys)
    frame = pd.read_csv(data_file)
    frame.loc[10, "churned"] = "no" if frame.loc[10, "churned"] == "yes" else "yes"
    frame.to_csv(data_file, index=False)
    code, out, err = _verify(capsys, record, data_file)
    assert code == 1 and out == ""
    assert err.startswith("FAIL TVCalibrationBound: ")
    assert (
        "the data differ from the data certified: same number of rows (800) but "
        "the SHA-256 fingerprint of the scores and labels differs" in err
    )
    n_pos = report["certificates"]["tv"]["n_positive"]
    assert f"positive labels here, {n_pos} certified" in err


def test_verify_fails_when_rows_are_missing(data_file, capsys):
    record, _ = _record(data_file, capsys)
    pd.read_csv(data_file).iloc[:-1].to_csv(data_file, index=False)
    code, _, err = _verify(capsys, record, data_file)
    assert code == 1
    assert (
        "the data differ from the data certified: 799 rows here, 800 certified" in err
    )


@pytest.mark.parametrize("field", ["bound", "lower_bound", "terms"])
def test_verify_fails_when_a_recorded_number_is_edited(data_file, capsys, field):
    record, report = _record(data_file, capsys)
    cert = report["certificates"]["tv"]
    if field == "terms":
        name = next(iter(cert["terms"]))
        original = cert["terms"][name]
        cert["terms"][name] = original * (1 + 1e-9)
        shown = f"terms.{name}"
    else:
        original = cert[field]
        cert[field] = original + 1e-6
        shown = field
    record.write_text(json.dumps(report))
    code, out, err = _verify(capsys, record, data_file)
    assert code == 1 and out == ""
    assert err.startswith(f"FAIL TVCalibrationBound: {shown} differs: recorded ")
    assert f"recomputed {original!r}" in err


def test_verify_checks_only_the_data_of_a_non_reproducible_record(
    data_file, capsys, tmp_path
):
    frame = pd.read_csv(data_file)
    est = TVCalibrationBound(random_state=np.random.RandomState(0)).fit(
        frame["prob"].to_numpy(), (frame["churned"] == "yes").to_numpy()
    )
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(est.certificate_))
    code, out, _ = _verify(
        capsys,
        path,
        data_file,
        "--scores",
        "prob",
        "--labels",
        "churned",
        "--pos-label",
        "yes",
    )
    assert code == 0
    assert (
        "data match" in out
        and "bound not recomputed (random_state is a RandomState instance" in out
    )


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not a JSON file"),
        ("[1, 2]", "not a skcalbound audit record .* expected a JSON object, got list"),
        ('{"bound": 0.1}', 'not a skcalbound audit record .* no "record"'),
        ('{"results": []}', "the report holds no certificates"),
    ],
)
def test_bad_record_is_a_one_line_error(data_file, capsys, tmp_path, content, message):
    import re

    path = tmp_path / "bad.json"
    path.write_text(content)
    code, out, err = _verify(capsys, path, data_file)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("skcalbound: error: ")
    assert re.search(message, err), err


def test_missing_record_and_missing_certificate_entries(data_file, capsys, tmp_path):
    code, _, err = _verify(capsys, tmp_path / "none.json", data_file)
    assert code == 2 and "none.json: no such file" in err
    record, report = _record(data_file, capsys)
    del report["certificates"]["tv"]["fingerprint"]
    record.write_text(json.dumps(report))
    code, _, err = _verify(capsys, record, data_file)
    assert code == 2 and "missing entries: fingerprint" in err


def test_a_data_file_named_verify_is_given_as_dot_slash(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200)
    monkeypatch.chdir(tmp_path)
    pd.DataFrame(
        {"y_prob": s, "y_true": (rng.uniform(size=200) < s).astype(int)}
    ).to_csv("verify", index=False)
    assert main(["./verify", "--format", "csv", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_samples"] == 200
