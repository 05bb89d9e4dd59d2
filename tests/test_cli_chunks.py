"""``skcalbound FILE --chunksize ROWS``: a file read in chunks gives the numbers and
the audit record of the same file read whole."""

import json

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from skcalbound import perturb_scores
from skcalbound._cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chunks")
    rng = np.random.default_rng(0)
    n = 4000
    p = rng.beta(2, 5, size=n)
    s = perturb_scores(p, 2**-4, random_state=0)
    y = rng.uniform(size=n) < p
    frame = pd.DataFrame(
        {
            "y_prob": s,
            "y_true": y.astype(int),
            "lab": np.where(y, "churn", "stay"),
            "seg": rng.integers(0, 3, n),
        }
    )
    frame.to_csv(folder / "d.csv", index=False)
    frame.to_parquet(folder / "d.parquet", row_group_size=1000)
    return folder


def _json(capsys, *argv):
    assert main([*map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _same(a, b):
    (ra, *_), (rb, *_) = a["results"], b["results"]
    for key in ("bound", "lower_bound", "estimate"):
        assert_allclose(rb[key], ra[key], rtol=1e-9, atol=1e-15)
    assert ra["terms"].keys() == rb["terms"].keys()
    for key in ra["terms"]:
        assert_allclose(rb["terms"][key], ra["terms"][key], rtol=1e-9, atol=1e-15)
    assert_allclose(
        b["results"][-1]["estimate"], a["results"][-1]["estimate"], rtol=1e-12
    )
    ca, cb = a["certificates"]["nw"], b["certificates"]["nw"]
    assert cb["fingerprint"] == ca["fingerprint"] and cb["n_samples"] == ca["n_samples"]


@pytest.mark.parametrize("name", ["d.csv", "d.parquet"])
@pytest.mark.parametrize("chunksize", [777, 4000, 10_000])
def test_chunks_give_the_numbers_of_the_whole_file(capsys, files, name, chunksize):
    whole = _json(capsys, files / name, "--bound", "nw", "--h", "2**-4")
    chunked = _json(
        capsys, files / name, "--bound", "nw", "--h", "2**-4", "--chunksize", chunksize
    )
    _same(whole, chunked)
    assert chunked["chunksize"] == chunksize and "chunksize" not in whole
    assert chunked["n_samples"] == whole["n_samples"] == 4000


def test_text_labels_and_the_table(capsys, files):
    options = ["--labels", "lab", "--pos-label", "churn", "--h", "2**-4"]
    whole = _json(capsys, files / "d.parquet", *options, "--bound", "nw")
    chunked = _json(capsys, files / "d.parquet", *options, "--chunksize", 999)
    _same(whole, chunked)
    assert chunked["positive_label"] == "churn"
    # Without --bound, --chunksize computes nw only (tv needs the sorted sample).
    assert [r["method"] for r in chunked["results"]] == ["nw", "binned_ece"]
    assert main([str(files / "d.csv"), "--h", "2**-4", "--chunksize", "500"]) == 0
    assert "read in chunks of 500 rows" in capsys.readouterr().out


def test_a_chunked_record_verifies(capsys, files, tmp_path):
    record = tmp_path / "r.json"
    report = _json(capsys, files / "d.csv", "--h", "2**-4", "--chunksize", 600)
    record.write_text(json.dumps(report))
    assert main(["verify", str(record), str(files / "d.csv")]) == 0
    assert capsys.readouterr().out.startswith("OK")


@pytest.mark.parametrize(
    "options, message",
    [
        (
            ["--bound", "tv"],
            "tv: TVCalibrationBound cannot run on data that is not in one place",
        ),
        (["--h", "2**-4", "--by", "seg"], "--by cannot be used with --chunksize"),
        (["--h", "2**-4", "--plot", "x.png"], "--plot cannot be used with --chunksize"),
        ([], "--chunksize certifies with nw, which needs its assumption"),
        (["--h", "2**-4", "--labels", "lab"], "holds text labels"),
        (["--h", "2**-4", "--scores", "nope"], "no column 'nope'"),
    ],
)
def test_what_needs_the_file_in_memory_is_refused(capsys, files, options, message):
    assert main([str(files / "d.csv"), *options, "--chunksize", "700"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("skcalbound: error: ") and message in err
    if "not in one place" in message:  # the library's own reason, passed through
        assert "(got chunked input)" in err


def test_bad_rows_are_named_with_their_row_in_the_file(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    frame = pd.DataFrame({"y_prob": np.linspace(0, 1, 50), "y_true": np.arange(50) % 2})
    frame.loc[37, "y_prob"] = 1.5
    frame.to_csv(path, index=False)
    assert main([str(path), "--h", "2**-4", "--chunksize", "10"]) == 2
    assert "row 37 holds 1.5" in capsys.readouterr().err
