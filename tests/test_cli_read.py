"""``skcalbound FILE --chunksize ROWS``, and ``--bound nw`` / ``lipschitz`` without it:
a file read in chunks gives the numbers and the audit record of the same file read
whole."""

import json

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from skcalbound import (
    LipschitzBucketBound,
    MonotoneCalibrationBound,
    NWCalibrationBound,
    perturb_scores,
)
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
    # With tv among the bounds the file is read whole (tv sorts every score).
    whole = _json(capsys, files / name, "--bound", "nw", "tv", "--h", "2**-4")
    chunked = _json(
        capsys, files / name, "--bound", "nw", "--h", "2**-4", "--chunksize", chunksize
    )
    _same(whole, chunked)
    assert chunked["chunksize"] == chunksize and "chunksize" not in whole
    assert chunked["n_samples"] == whole["n_samples"] == 4000


def test_text_labels_and_the_table(capsys, files):
    options = ["--labels", "lab", "--pos-label", "churn", "--h", "2**-4"]
    whole = _json(capsys, files / "d.parquet", *options, "--bound", "nw", "tv")
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
    assert "data row 37 (counted from 0 after the header) holds 1.5" in (
        capsys.readouterr().err
    )


def _whole_file(files):
    """The scores and labels of the test files, read whole."""
    frame = pd.read_csv(files / "d.csv")
    return frame["y_prob"].to_numpy(), frame["y_true"].to_numpy()


@pytest.mark.parametrize("name", ["d.csv", "d.parquet"])
@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_nw_and_lipschitz_stream_without_chunksize(
    capsys, monkeypatch, files, name, guarantee
):
    # The bounds that run on chunks never read the file whole, with no option for it.
    from skcalbound._cli import _main

    def whole(*args, **kwargs):
        raise AssertionError("the file was read whole")

    monkeypatch.setattr(_main, "read_table", whole)
    monkeypatch.setattr(_main, "CHUNK_ROWS", 1500)
    options = ["--bound", "nw", "lipschitz", "--h", "2**-4", "--guarantee", guarantee]
    report = _json(capsys, files / name, *options)
    assert report["chunksize"] == 1500 and report["n_samples"] == 4000
    s, y = _whole_file(files)
    params = {"h": 2**-4, "guarantee": guarantee, "random_state": 0}
    for row, est in zip(
        report["results"],
        [
            NWCalibrationBound(**params).fit(s, y),
            LipschitzBucketBound(**params).fit(s, y),
        ],
    ):
        for key in ("bound", "lower_bound", "estimate"):
            assert_allclose(row[key], getattr(est, key + "_"), rtol=1e-12, atol=1e-15)
        method = row["method"]
        assert (
            report["certificates"][method]["fingerprint"]
            == est.certificate_["fingerprint"]
        )
    monkeypatch.undo()
    table = main([str(files / name), "--bound", "nw", "--h", "2**-4"])
    assert table == 0
    assert f"read in chunks of {2**19} rows" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["d.csv", "d.parquet"])
def test_tv_reads_only_its_two_columns(capsys, monkeypatch, files, name):
    reads = []
    for reader in ("read_csv", "read_parquet"):
        original = getattr(pd, reader)

        def spy(path, *args, _original=original, **kwargs):
            reads.append(kwargs)
            return _original(path, *args, **kwargs)

        monkeypatch.setattr(pd, reader, spy)
    report = _json(capsys, files / name, "--bound", "tv", "nw", "--h", "2**-4")
    assert [r["method"] for r in report["results"]] == ["tv", "nw", "binned_ece"]
    (read,) = [kwargs for kwargs in reads if kwargs.get("nrows") != 0]
    assert read.get("usecols", read.get("columns")) == ["y_prob", "y_true"]
    assert report["n_samples"] == 4000 and "chunksize" not in report
    # A column not in the file: the message lists the file's columns.
    assert main([str(files / name), "--scores", "nope"]) == 2
    assert "no column 'nope' (columns: 'y_prob', 'y_true', 'lab', 'seg')" in (
        capsys.readouterr().err
    )


def test_help_says_what_streams(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "nw only" not in text
    assert (
        "nw and lipschitz (either --guarantee) stream in chunks of 524288 rows" in text
    )
    assert "tv and monotone sort every score" in text
    assert "With --chunksize, monotone certifies on the cells of a fixed score" in text


@pytest.mark.parametrize("name", ["d.csv", "d.parquet"])
def test_chunksize_gives_the_band_on_a_fixed_score_grid(capsys, files, name):
    # --chunksize with --bound monotone is fit_chunks' band (SPEC 14.6: cells of a
    # fixed score grid as the atoms), the same whatever the chunk size; without it
    # the file is read whole and the band is the exact one.
    frame = pd.read_csv(files / "d.csv")
    s, y = frame["y_prob"].to_numpy(), frame["y_true"].to_numpy()

    def chunks():
        for start in range(0, s.size, 1000):
            yield y[start : start + 1000], s[start : start + 1000]

    grid = MonotoneCalibrationBound(random_state=0).fit_chunks(chunks)
    exact = MonotoneCalibrationBound(random_state=0).fit(s, y)
    for chunksize in (777, 4000):
        report = _json(
            capsys, files / name, "--bound", "monotone", "--chunksize", chunksize
        )
        row = report["results"][0]
        assert_allclose(row["bound"], grid.bound_, rtol=1e-12)
        assert_allclose(row["lower_bound"], grid.lower_bound_, rtol=1e-12, atol=1e-15)
        assert row["terms"]["n_cells"] == grid.terms_["n_cells"]
    row = _json(capsys, files / name, "--bound", "monotone")["results"][0]
    assert (row["lower_bound"], row["bound"]) == (exact.lower_bound_, exact.bound_)
    assert grid.bound_ != exact.bound_  # the two are different bounds


def test_a_grid_band_record_verifies_and_cannot_pass_as_the_sorted_one(
    capsys, files, tmp_path
):
    # A record of --bound monotone --chunksize is the grid band's (its terms count
    # the cells): verify recomputes it through fit_chunks (it failed against the
    # sorted band's numbers). Dropping n_cells makes it claim the sorted band: FAIL.
    report = _json(
        capsys, files / "d.parquet", "--bound", "monotone", "--chunksize", 1000
    )
    record = report["certificates"]["monotone"]
    assert "n_cells" in record["terms"]
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(record))
    assert main(["verify", str(path), str(files / "d.parquet")]) == 0
    assert capsys.readouterr().out.startswith("OK ")
    del record["terms"]["n_cells"]
    path.write_text(json.dumps(record))
    assert main(["verify", str(path), str(files / "d.parquet")]) == 1
    assert "FAIL MonotoneCalibrationBound" in capsys.readouterr().err
