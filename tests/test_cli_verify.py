"""``skcalbound verify RECORD DATA`` and the certificates in ``--json``, in process.

A record passes against the file it certifies (exit 0, one OK line), fails with exit
status 1 when one label of the file is flipped or a recorded number is edited, and a
file that is not a record is a one-line error with exit status 2.
"""

import contextlib
import io
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import KFold

from skcalbound import (
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    NWCalibrationBound,
    TVCalibrationBound,
)
from skcalbound._cli import main

H = 2.0**-6


def _write_data_file(folder):
    rng = np.random.default_rng(3)
    s = rng.uniform(0.05, 0.95, size=800)
    y = rng.uniform(size=800) < s
    path = folder / "scores.csv"
    pd.DataFrame({"prob": s, "churned": np.where(y, "yes", "no")}).to_csv(
        path, index=False
    )
    return path


@pytest.fixture
def data_file(tmp_path):
    return _write_data_file(tmp_path)


# The data file's columns and positive class, as the command's options.
COLUMNS = ("--scores", "prob", "--labels", "churned", "--pos-label", "yes")


def _record(data_file, capsys, *options):
    if "--bound" not in options:  # TV's record (the command's default is the band)
        options = ("--bound", "tv", *options)
    code = main([str(data_file), *COLUMNS, "--json", *options])
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
    assert out.startswith(
        f"OK {data_file} against {record} (2 certificates and the report built on them)"
    )
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


def test_a_record_s_positive_label_missing_from_the_file_is_named_as_the_record_s(
    data_file, capsys
):
    # The file's labels recoded: the error blamed --pos-label, not given to verify.
    record, _ = _record(data_file, capsys)
    frame = pd.read_csv(data_file)
    frame["churned"] = frame["churned"].map({"yes": "Y", "no": "N"})
    frame.to_csv(data_file, index=False)
    code, out, err = _verify(capsys, record, data_file)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert (
        "the record's positive label 'yes' is not a label of column 'churned', whose "
        "labels are 'N', 'Y': is this the file the record was made on? (--pos-label "
        "LABEL overrides the record's)"
    ) in err
    # Given as an option, the option is named; with the file's own label the data
    # match, and the report's positive label 'yes' is what differs.
    code, _, err = _verify(capsys, record, data_file, "--pos-label", "yes")
    assert code == 2 and "--pos-label 'yes' is not a label of column" in err
    code, out, err = _verify(capsys, record, data_file, "--pos-label", "Y")
    assert code == 1
    assert "positive_label is 'yes', the data and certificates say 'Y'" in out + err


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
    code, out, _ = _verify(capsys, path, data_file, *COLUMNS)
    assert code == 3 and out.startswith("PARTIAL")
    assert (
        "data match" in out
        and "bound not recomputed (random_state is not an int (RandomState" in out
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


# --------------------------------------------------------------------------------------
# Forged records fail; what is not recomputed is never OK (issue 36, item 1).
# --------------------------------------------------------------------------------------

PARTIAL = 3  # exit status: fingerprint matches, bound not recomputed


def _bare(data_file, tmp_path, est, edit=None):
    """Fit ``est`` on the data file (positive class "yes"), apply ``edit`` to a copy of
    its certificate, and write that as a bare record."""
    frame = pd.read_csv(data_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small sample: vacuous-bound warnings
        est.set_params(pos_label="yes").fit(
            frame["prob"].to_numpy(), frame["churned"].to_numpy()
        )
    cert = json.loads(json.dumps(est.certificate_))
    if edit is not None:
        edit(cert)
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(cert))
    return path, cert


def _verify_bare(capsys, path, data_file):
    return _verify(capsys, path, data_file, "--scores", "prob", "--labels", "churned")


@pytest.mark.parametrize(
    "make",
    [lambda: TVCalibrationBound(method="denoise"), lambda: NWCalibrationBound(h=H)],
)
def test_edited_bound_of_a_random_state_none_record_fails(
    data_file, capsys, tmp_path, make
):
    # random_state=None (the default): no refit can repeat the folds, but the terms
    # must still add up to the bound.
    est = make()
    path, cert = _bare(data_file, tmp_path, est, lambda c: c.update(bound=0.001))
    assert cert["params"]["random_state"] is None
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and out == ""
    name = type(est).__name__
    assert err.startswith(f"FAIL {name}: the record contradicts itself: its ")
    if "folds" in cert:  # NW's default: per fold the smaller of its two routes
        assert "its bound is 0.001; its folds make it " in err
    else:
        assert f"its terms add up to {math.fsum(cert['terms'].values())!r}" in err
        assert "its bound is 0.001" in err


def _relabel(cert, params_too):
    """A paper-mode record at level 0.9 relabelled high-probability at 0.999 under a
    weaker assumption (a larger V, or a smaller h: larger b1 and b2)."""
    new = {"guarantee": "high_probability", "confidence_level": 0.999}
    assumption = cert["assumption"]
    if "V" in assumption:
        assumption["V"] = 4.0 * assumption["V"]
        changed = {"V": assumption["V"]}
    else:
        assumption["h"] = assumption["h"] / 4.0
        assumption["b1_"] = 4.0 * assumption["b1_"]
        assumption["b2_"] = 16.0 * assumption["b2_"]
        changed = {"h": assumption["h"]}
    cert.update(new)
    if params_too:
        cert["params"].update(new, **changed)


@pytest.mark.parametrize("params_too", [False, True])
@pytest.mark.parametrize(
    "make",
    [
        lambda: TVCalibrationBound(method="denoise", V=1.0),
        lambda: NWCalibrationBound(h=H),
    ],
)
def test_relabelled_paper_record_fails(data_file, capsys, tmp_path, make, params_too):
    est = make().set_params(guarantee="paper", confidence_level=0.9, random_state=0)
    genuine, _ = _bare(data_file, tmp_path, est)
    code, out, _ = _verify_bare(capsys, genuine, data_file)
    assert code == 0 and out.startswith("OK")
    path, _ = _bare(data_file, tmp_path, est, lambda c: _relabel(c, params_too))
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and out == ""
    name = type(est).__name__
    if params_too:  # refit as relabelled: other numbers (and NW's b2_)
        first = "assumption.b2_" if name == "NWCalibrationBound" else "bound"
        assert err.startswith(f"FAIL {name}: {first} differs: recorded ")
        assert "terms." in err
    else:  # refit from the params: the guarantee the numbers were made under
        assert err.startswith(
            f"FAIL {name}: guarantee differs: recorded 'high_probability', "
            "recomputed 'paper'"
        )
        assert "also differ: confidence_level, assumption." in err


def test_reproducible_flag_set_false_and_bound_edited_fails(
    data_file, capsys, tmp_path
):
    def forge(cert):
        cert["reproducible"] = False
        cert["not_reproducible"] = ["random_state=None"]
        cert["bound"] = 0.0001

    est = TVCalibrationBound(method="denoise", random_state=0)
    path, cert = _bare(data_file, tmp_path, est, forge)
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and out == ""
    # Reproducible by its params (an int random_state, an int cv): refit, compared.
    assert err.startswith(
        "FAIL TVCalibrationBound: reproducible differs: recorded False, recomputed True"
    )
    assert "also differ: not_reproducible, bound." in err


def test_a_record_made_non_reproducible_is_at_best_partial(data_file, capsys, tmp_path):
    # Whoever also edits the params and every term consistently cannot get an OK: the
    # bound is not recomputed, and the exit status says so.
    def forge(cert):
        for d in (cert, cert["params"]):
            d["random_state"] = None
        cert["reproducible"] = False
        scale = 0.0001 / cert["bound"]
        cert["terms"] = {k: v * scale for k, v in cert["terms"].items()}
        cert["bound"] = sum(cert["terms"].values())
        cert["lower_bound"] = max(
            0.0, 2 * cert["terms"]["validation_mean"] - cert["bound"]
        )

    path, _ = _bare(
        data_file, tmp_path, TVCalibrationBound(method="denoise", random_state=0), forge
    )
    code, out, _ = _verify_bare(capsys, path, data_file)
    assert code == PARTIAL and not out.startswith("OK")


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda: TVCalibrationBound(method="denoise"), "random_state=None"),
        (
            lambda: TVCalibrationBound(
                method="denoise", random_state=np.random.RandomState(0)
            ),
            "random_state is not an int (RandomState(MT19937) at 0x",
        ),
        (
            lambda: NWCalibrationBound(h=H, cv=KFold(3), random_state=0),
            "cv is not an int (KFold(n_splits=3, random_state=None, shuffle=False), "
            "stored as its repr): its splits are not recorded",
        ),
        (
            lambda: LipschitzBucketBound(h=H, guarantee="paper", aggregate="min"),
            "random_state=None",
        ),
    ],
)
def test_genuine_non_reproducible_record_gets_the_partial_status(
    data_file, capsys, tmp_path, make, reason
):
    est = make()
    path, cert = _bare(data_file, tmp_path, est)
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == PARTIAL and err == ""
    name = type(est).__name__
    assert out.startswith(
        f"PARTIAL {data_file} against {path} (1 certificate): fingerprint matches, "
        f"bound not recomputed: {name}: data match (n=800"
    )
    if "folds" in cert:  # NW's default: per fold the smaller of two routes
        assert "each fold's two routes give the bound and lower bound" in out
    else:
        assert "terms add up to the bound, lower bound consistent" in out
    assert f"bound not recomputed ({reason}" in out
    assert out.count("\n") == 1


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda c: c.update(lower_bound=c["lower_bound"] + 0.05),
            "its lower_bound is ",
        ),
        (
            lambda c: c["terms"].update(tv_denoising=c["terms"]["tv_denoising"] / 2),
            "its terms add up to ",
        ),
        (lambda c: c.update(guarantee="paper"), "guarantee is 'paper' but its params"),
        (lambda c: c["assumption"].update(V=0.5), "assumption.V is 0.5 but its params"),
        (lambda c: c.update(reproducible=True), "it says reproducible"),
        (lambda c: c.update(n_positive=c["n_positive"] + 1), "n_positive"),
    ],
)
def test_edited_non_reproducible_record_fails_its_checks(
    data_file, capsys, tmp_path, edit, message
):
    path, _ = _bare(data_file, tmp_path, TVCalibrationBound(method="denoise"), edit)
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and out == "" and err.startswith("FAIL TVCalibrationBound: ")
    assert message in err


def test_edited_assumption_as_used_fails_without_a_refit(data_file, capsys, tmp_path):
    def edit(cert):
        cert["assumption"]["b1_"] = 2 * cert["assumption"]["b1_"]

    path, cert = _bare(data_file, tmp_path, NWCalibrationBound(h=H), edit)
    code, _, err = _verify_bare(capsys, path, data_file)
    assert code == 1
    assert err.startswith(
        f"FAIL NWCalibrationBound: assumption.b1_ differs: recorded "
        f"{cert['assumption']['b1_']!r}, recomputed {cert['assumption']['b1_'] / 2!r}"
    )


def test_fingerprint_mismatch_says_that_row_order_matters(data_file, capsys):
    record, _ = _record(data_file, capsys)
    frame = pd.read_csv(data_file)
    frame.iloc[::-1].to_csv(data_file, index=False)  # the same rows, reversed
    code, _, err = _verify(capsys, record, data_file)
    assert code == 1
    assert "same number of rows (800) but the SHA-256 fingerprint" in err
    assert "positive labels here" not in err  # the same rows
    assert (
        "the fingerprint depends on the row order: the same rows in another order "
        "(a warehouse export without ORDER BY) do not match" in err
    )


def test_verify_help_documents_every_exit_status(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 when every certificate was recomputed and agrees" in text
    assert "1 when the data differ from the data certified" in text
    assert "2 for a bad record, file or option" in text
    assert (
        "3 (PARTIAL) when the data match (fingerprint matches) but some bound" in text
    )


def test_a_parameter_stored_as_repr_is_partial_and_says_what_was_not_checked(
    data_file, capsys, tmp_path
):
    est = LipschitzBucketBound(h=H, n_buckets=np.array([4, 8]), random_state=0)
    path, cert = _bare(data_file, tmp_path, est)
    assert cert["params"]["n_buckets"] == "array([4, 8])"
    code, out, _ = _verify_bare(capsys, path, data_file)
    assert code == PARTIAL and out.startswith("PARTIAL")
    assert "(params and assumption as used not checked: " in out
    assert out.rstrip().endswith(
        "bound not recomputed (parameters stored as repr: n_buckets)"
    )
    # Taking the name out of params_as_repr gets a refit, which refuses the repr.
    cert["params_as_repr"] = []
    path.write_text(json.dumps(cert))
    code, out, _ = _verify_bare(capsys, path, data_file)
    assert code == PARTIAL
    assert "bound not recomputed (cannot refit with its params: " in out


# --------------------------------------------------------------------------------------
# MonotoneCalibrationBound records (issue 37): refit when reproducible, else the band's
# own consistency checks (SPEC 14: bound = min(1, band_upper + transfer_upper), ...).
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cv", [None, 3])
def test_genuine_monotone_record_is_recomputed(data_file, capsys, tmp_path, cv):
    est = MonotoneCalibrationBound(cv=cv, random_state=0)
    path, cert = _bare(data_file, tmp_path, est)
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 0 and err == ""
    assert out.startswith(f"OK {data_file} against {path} (1 certificate): ")
    assert f"recomputed bound {est.bound_:.6g}" in out
    assert f"{len(est.terms_)} terms agree" in out


@pytest.mark.parametrize("cv", [None, 3])
def test_monotone_record_with_an_edited_number_fails_the_refit(
    data_file, capsys, tmp_path, cv
):
    est = MonotoneCalibrationBound(cv=cv, random_state=0)
    path, cert = _bare(data_file, tmp_path, est, lambda c: c.update(bound=0.01))
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and out == ""
    assert err.startswith(
        "FAIL MonotoneCalibrationBound: bound differs: recorded 0.01, recomputed "
        f"{est.bound_!r}"
    )


@pytest.mark.parametrize("cv", [None, 3])
def test_genuine_monotone_record_without_random_state_is_partial(
    data_file, capsys, tmp_path, cv
):
    est = MonotoneCalibrationBound(cv=cv)
    path, cert = _bare(data_file, tmp_path, est)
    assert cert["guarantee"] == "high_probability"
    assert "guarantee" not in cert["params"]
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == PARTIAL and err == ""
    assert "MonotoneCalibrationBound: data match (n=800" in out
    assert "terms add up to the bound, lower bound consistent" in out
    assert "params and assumption as used agree with a fit on stand-in folds" in out
    assert "bound not recomputed (random_state=None" in out


def _scale_band_terms(cert):
    """A consistent-looking forgery of a one-band record: every term and both ends
    scaled down, the sums kept."""
    t = cert["terms"]
    for name in ("band_upper", "transfer_upper"):
        t[name] *= 0.25
    cert["bound"] = t["band_upper"] + t["transfer_upper"]


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c.update(bound=c["bound"] / 2), "its bound is "),
        (
            lambda c: c.update(lower_bound=c["lower_bound"] + 0.05),
            "its lower_bound is ",
        ),
        (
            lambda c: c["terms"].update(transfer_upper=-c["terms"]["transfer_upper"]),
            "its terms transfer_upper have the wrong sign",
        ),
        (
            lambda c: c["terms"].update(
                transfer_lower=-c["terms"]["transfer_lower"] + 0.01
            ),
            "its terms transfer_lower have the wrong sign",
        ),
        (
            lambda c: c["terms"].update(n_windows=c["terms"]["n_windows"] - 1),
            "its n_windows is ",
        ),
        (lambda c: c["terms"].pop("band_lower"), "its terms have no band_lower"),
        (lambda c: c.update(guarantee="paper"), "guarantee is 'paper' but its params"),
    ],
)
def test_forged_monotone_record_without_random_state_fails(
    data_file, capsys, tmp_path, edit, message
):
    est = MonotoneCalibrationBound()
    path, cert = _bare(data_file, tmp_path, est, edit)
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and out == ""
    assert err.startswith(
        "FAIL MonotoneCalibrationBound: the record contradicts itself: "
    )
    assert message in err


def test_consistently_forged_monotone_record_is_at_best_partial(
    data_file, capsys, tmp_path
):
    # Its terms add up; without an int random_state the numbers are not recomputed
    # (with ties the band depends on the seed's tie order): PARTIAL, never OK.
    path, _ = _bare(data_file, tmp_path, MonotoneCalibrationBound(), _scale_band_terms)
    code, out, _ = _verify_bare(capsys, path, data_file)
    assert code == PARTIAL and out.startswith("PARTIAL")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c.update(bound=c["bound"] / 2), "its bound is "),
        (lambda c: c.update(lower_bound=c["bound"] + 0.01), "its lower_bound "),
        (
            lambda c: c["terms"].update(maurer_pontil=-1.0),
            "its terms maurer_pontil are negative",
        ),
    ],
)
def test_forged_cross_fitted_monotone_record_fails(
    data_file, capsys, tmp_path, edit, message
):
    path, _ = _bare(data_file, tmp_path, MonotoneCalibrationBound(cv=3), edit)
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and out == ""
    assert err.startswith(
        "FAIL MonotoneCalibrationBound: the record contradicts itself: "
    )
    assert message in err


def test_monotone_consistency_checks_by_hand():
    # The band's relations on a hand-made record (SPEC 14 terms_).
    from skcalbound._certificate import _band_problems

    terms = {
        "band_upper": 0.10,
        "transfer_upper": 0.05,
        "band_lower": 0.04,
        "transfer_lower": -0.03,
        "mean_band_width": 0.2,
        "n_windows": 2,  # n = 40: lengths 32 (starts 0, 8) and 40 (start 0)
    }
    record = {"terms": terms, "bound": 0.15, "lower_bound": 0.01, "n_samples": 40}
    assert _band_problems(record) == ["its n_windows is 2; 40 rows have 3 windows"]
    terms["n_windows"] = 3
    assert _band_problems(record) == []
    record["lower_bound"] = 0.0  # max(0, 0.04 - 0.03) = 0.01
    assert _band_problems(record) == [
        f"its lower_bound is 0.0; its terms make it {0.04 - 0.03!r}"
    ]
    record.update(lower_bound=0.01, bound=1.0)
    terms["transfer_upper"] = 2.0  # min(1, 2.1) = 1: clipped
    assert _band_problems(record) == []


@pytest.mark.parametrize("method", ["denoise", "cells"])
def test_a_tv_record_from_before_the_method_parameter(tmp_path, capsys, method):
    # Records made before TVCalibrationBound had `method` were denoising records and
    # have no params.method: verify reads them as method="denoise" (they failed with
    # "params.method differs" once the default became the cell bound). Removing the
    # entry from a newer cells record makes the refit compute the denoising bound,
    # whose numbers differ: FAIL.
    rng = np.random.default_rng(4)
    s = rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < s**2).astype(int)
    data = tmp_path / "scores.csv"
    pd.DataFrame({"y_prob": s, "y_true": y}).to_csv(data, index=False)
    est = TVCalibrationBound(method=method, random_state=0).fit(s, y)
    record = json.loads(json.dumps(est.certificate_))
    del record["params"]["method"]
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    code, out, err = _verify(capsys, path, data)
    if method == "denoise":
        assert code == 0, out
        assert "TVCalibrationBound: data match" in out and "agree" in out
    else:
        assert code == 1, out + err
        assert "FAIL TVCalibrationBound" in out + err


def test_verify_refits_with_the_recorded_noise(data_file, capsys, tmp_path):
    # NW's noise is a parameter of the record: a worst-case record verifies, and so
    # does one made before noise existed (no noise in its params: the worst-case form
    # it computed); the same record claiming the default does not.
    est = NWCalibrationBound(h=H, noise="worst_case", random_state=0)
    path, cert = _bare(data_file, tmp_path, est)
    assert cert["params"]["noise"] == "worst_case" and "folds" not in cert
    code, out, _ = _verify_bare(capsys, path, data_file)
    assert code == 0 and out.startswith("OK")
    path, _ = _bare(data_file, tmp_path, est, lambda c: c["params"].pop("noise"))
    code, out, _ = _verify_bare(capsys, path, data_file)
    assert code == 0 and out.startswith("OK")
    edited = lambda c: c["params"].update(noise="adaptive")  # noqa: E731
    path, _ = _bare(data_file, tmp_path, est, edited)
    code, out, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and out == ""
    # The refit with noise="adaptive" is SPEC 13's: other numbers, other terms.
    assert err.startswith("FAIL NWCalibrationBound: bound differs: recorded ")
    assert "terms.bias_mean" in err and "terms.smoothing_mean" in err
    # Without a refit (random_state=None) the record contradicts itself.
    unrefittable = lambda c: c["params"].update(noise="adaptive", random_state=None)  # noqa: E731
    path, _ = _bare(data_file, tmp_path, est, unrefittable)
    code, _, err = _verify_bare(capsys, path, data_file)
    assert code == 1 and "its folds (per fold its route and both tables)" in err


def test_verify_an_adaptive_record_with_the_triangle_route(tmp_path, capsys):
    # Scores all 0.9, eta = 1/2: every fold's bound is its triangle route, below the
    # sum of its terms; verify refits it, and checks it without a refit too.
    rng = np.random.default_rng(0)
    path = tmp_path / "mass.csv"
    y = rng.random(5000) < 0.5
    pd.DataFrame(
        {"prob": np.full(5000, 0.9), "churned": np.where(y, "yes", "no")}
    ).to_csv(path, index=False)
    est = NWCalibrationBound(b1=1.0, b2=1.0, random_state=0)
    record, cert = _bare(path, tmp_path, est)
    assert {fold["route"] for fold in cert["folds"]} == {"triangle"}
    code, out, _ = _verify_bare(capsys, record, path)
    assert code == 0 and out.startswith("OK")
    est = NWCalibrationBound(b1=1.0, b2=1.0)  # random_state=None: no refit
    record, cert = _bare(path, tmp_path, est)
    code, out, _ = _verify_bare(capsys, record, path)
    assert code == PARTIAL
    assert "each fold's two routes give the bound and lower bound" in out


def _edit(report, path, value):
    """``report`` with the entry at ``path`` (keys and list indices) set to
    ``value``, or removed when ``value`` is ``_REMOVED``."""
    report = json.loads(json.dumps(report))
    *parents, last = path
    node = report
    for key in parents:
        node = node[key]
    if value is _REMOVED:
        del node[last]
    else:
        node[last] = value
    return report


_REMOVED = object()

# Edits of the report's human-readable part, which verify did not read (each gave
# "OK", exit status 0): the numbers a reader, the table and the gate use.
REPORT_FORGERIES = {
    "tv bound": (("results", 0, "bound"), 0.01, "results.tv.bound is 0.01"),
    "nw lower bound": (
        ("results", 1, "lower_bound"),
        0.02,
        "results.nw.lower_bound is 0.02",
    ),
    "nw level": (
        ("results", 1, "confidence_level"),
        0.99,
        "results.nw.confidence_level is 0.99",
    ),
    "certified flag": (
        ("results", 0, "certified"),
        False,
        "results.tv.certified is False, the certificate says True",
    ),
    "a term": (
        ("results", 1, "terms", "bias_mean"),
        0.0,
        "results.nw.terms.bias_mean is 0.0",
    ),
    "binned ECE": (
        ("results", 2, "estimate"),
        0.5,
        "results.binned_ece.estimate is 0.5",
    ),
    "rows": (("n_samples",), 1, "n_samples is 1, the data and certificates say 800"),
    "positive class": (("positive_label",), "no", "positive_label is 'no'"),
    "gate": (("gate", "passed"), False, "gate.passed is False"),
    "gate threshold": (("gate", "max_ce"), 0.001, "gate.passed is True"),
    "note": (("note",), "Certified.", "note is 'Certified.'"),
    "a certificate": (
        ("certificates", "tv"),
        _REMOVED,
        "result 'tv' has no certificate",
    ),
    "a result": (("results", 0), _REMOVED, "certificate 'tv' has no result"),
}


@pytest.fixture(scope="module")
def genuine_report(tmp_path_factory):
    """A data file and the report of tv and nw on it, which verifies (made once)."""
    folder = tmp_path_factory.mktemp("report")
    path = _write_data_file(folder)
    options = ("--bound", "tv", "nw", "--h", "2^-6", "--max-ce", "0.9", "--json")
    out, ignored = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(ignored):
        assert main([str(path), *COLUMNS, *options]) == 0
    record = folder / "genuine.json"
    record.write_text(out.getvalue())
    with contextlib.redirect_stdout(ignored):
        assert main(["verify", str(record), str(path)]) == 0
    return path, json.loads(out.getvalue())


@pytest.mark.parametrize("case", list(REPORT_FORGERIES))
def test_an_edited_report_fails_even_with_its_certificates_intact(
    genuine_report, tmp_path, capsys, case
):
    data_file, report = genuine_report
    record = tmp_path / "record.json"
    path, value, message = REPORT_FORGERIES[case]
    record.write_text(json.dumps(_edit(report, path, value)))
    code, out, err = _verify(capsys, record, data_file)
    assert code == 1 and out == "", (out, err)
    assert err.startswith(
        f"FAIL {record}: the report disagrees with its certificates: "
    ), err
    assert message in err, err


def test_a_partial_record_checks_its_report_from_the_certificates(
    data_file, capsys, tmp_path
):
    # A certificate that cannot be refit (random_state=None): the report's row must
    # still say what the certificate says.
    code = main([str(data_file), *COLUMNS, "--json", "--bound", "nw", "--h", "2^-6"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    frame = pd.read_csv(data_file)
    est = NWCalibrationBound(h=H, pos_label="yes").fit(
        frame["prob"].to_numpy(), frame["churned"].to_numpy()
    )
    certificate = est.certificate_
    report["certificates"]["nw"] = {
        **certificate,
        "source": report["certificates"]["nw"]["source"],
    }
    for key in ("bound", "lower_bound", "estimate", "terms"):
        report["results"][0][key] = certificate[key]
    record = tmp_path / "record.json"
    record.write_text(json.dumps(report))
    code, out, _ = _verify(capsys, record, data_file)
    assert code == 3 and out.startswith("PARTIAL")
    forged = _edit(report, ("results", 0, "bound"), 0.001)
    record.write_text(json.dumps(forged))
    code, _, err = _verify(capsys, record, data_file)
    assert code == 1 and "results.nw.bound is 0.001, the certificate says " in err


@pytest.fixture
def rejecting_file(tmp_path):
    """E[y|s] = s on 50,000 rows: L = 0.1 is far too small, the interval empty."""
    rng = np.random.default_rng(3)
    s = rng.uniform(0.05, 0.95, size=50_000)
    y = rng.uniform(size=s.size) < s
    path = tmp_path / "scores.csv"
    pd.DataFrame({"y_prob": s, "y_true": y.astype(int)}).to_csv(path, index=False)
    return path


def test_an_empty_interval_is_not_certified_and_fails_the_gate(rejecting_file, capsys):
    # The lower bound exceeds the upper bound. The row said "holds with probability
    # >= 95%", the JSON "certified": true, and --max-ce passed.
    data_file = rejecting_file
    options = ("--bound", "lipschitz", "--L", "0.1", "--max-ce", "0.9")
    code = main([str(data_file), *options])
    out, err = capsys.readouterr()
    assert code == 1
    assert (
        "rejected by the data (empty interval: the lower bound is above the upper "
        "bound): not certified" in out
    )
    assert "\nFAIL (--max-ce 0.9): CE < 0.9 not certified" in out
    assert "but the data reject its assumption (empty interval" in out
    code = main([str(data_file), "--json", *options])
    report = json.loads(capsys.readouterr().out)
    row = report["results"][0]
    assert row["lower_bound"] > row["bound"]
    assert row["assumption_rejected"] is True and row["certified"] is False
    assert report["gate"]["failed"] == ["lipschitz"]
    # And the record verifies as it is, not with certified flipped to true.
    record = data_file.parent / "record.json"
    record.write_text(json.dumps(report))
    assert _verify(capsys, record, data_file)[0] == 0
    record.write_text(json.dumps(_edit(report, ("results", 0, "certified"), True)))
    code, _, err = _verify(capsys, record, data_file)
    assert code == 1 and "results.lipschitz.certified is True" in err


def test_verify_prints_no_python_warning_of_the_fit(tmp_path, capsys):
    # Scores that rank the positive class below chance: the command's run reports
    # the BelowChanceWarning in the record's rows; verify printed it again to
    # standard error as a raw Python warning.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=2000)
    y = (rng.uniform(size=s.size) < 1 - s).astype(int)
    path = tmp_path / "anti.csv"
    pd.DataFrame({"y_prob": s, "y_true": y}).to_csv(path, index=False)
    assert main([str(path), "--bound", "tv", "--json"]) == 0
    report = capsys.readouterr().out
    assert "rank the positive class below chance" in report
    record = tmp_path / "record.json"
    record.write_text(report)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = _verify(capsys, record, path)
    assert code == 0 and out.startswith("OK") and err == ""
