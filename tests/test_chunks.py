"""Bounds on data that is not in one place: chunks and Dask give the in-memory numbers.

The NW certificate (high-probability mode) and the Lipschitz bound (both modes) run on
mergeable statistics (``_surrogates/nw/``, ``_surrogates/buckets/``): in
memory it is the one-source case of the same code, so for the same ``random_state`` the
folds, and every number, agree with chunked and Dask input up to the order of the
additions.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from _synthetic import slow_except
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils._param_validation import InvalidParameterError

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
    _chunks,
    lipschitz_bucket_bound,
    nw_bound,
    tv_bound,
)
from skcalbound._splitting import row_folds, row_keys

RTOL = 1e-9


def _data(kind, n=6000, seed=0):
    """Scores and labels with the features that stress the statistics."""
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 5, size=n)
    if kind == "atoms":  # atoms at 0 and 1 and a tie block inside
        s[: n // 10] = 0.0
        s[n // 10 : n // 5] = 1.0
        s[n // 5 : n // 5 + 7] = 0.25
    elif kind == "gaps":  # empty cells and isolated points: the fallback fires
        s = np.concatenate(
            [
                rng.uniform(0.0, 0.05, n // 2),
                rng.uniform(0.9, 1.0, n - n // 2 - 12),
                np.linspace(0.3, 0.7, 12),
            ]
        )
        rng.shuffle(s)
    y = (rng.uniform(size=s.shape[0]) < np.clip(s * 1.1, 0, 1)).astype(int)
    return s, y


def _chunked(s, y, sizes):
    """``(y_true, y_prob)`` chunks of the given sizes (repeated), the last unequal."""
    chunks, start, k = [], 0, 0
    while start < s.shape[0]:
        size = sizes[k % len(sizes)]
        chunks.append((y[start : start + size], s[start : start + size]))
        start += size
        k += 1
    return chunks


def _assert_same_fit(a, b):
    assert_allclose(b.bound_, a.bound_, rtol=RTOL)
    assert_allclose(b.lower_bound_, a.lower_bound_, rtol=RTOL, atol=1e-15)
    assert_allclose(b.estimate_, a.estimate_, rtol=RTOL)
    assert a.terms_.keys() == b.terms_.keys()
    for key in a.terms_:
        assert_allclose(b.terms_[key], a.terms_[key], rtol=RTOL, err_msg=key)
    fa, fb = a.fold_results_, b.fold_results_
    assert_array_equal(fa.columns, fb.columns)
    for column in (
        "n_train",
        "n_validation",
        "n_bins",
        "n_fallback",
        "n_buckets",
        "shift",
    ):
        if column in fa:
            assert_array_equal(fb[column], fa[column], err_msg=column)
    if "route" in fa:  # NW's default (SPEC 13): which route gave each fold's bound
        assert_array_equal(fb["route"], fa["route"])
        fa, fb = fa.drop(columns="route"), fb.drop(columns="route")
    assert_allclose(fb.to_numpy(float), fa.to_numpy(float), rtol=RTOL, atol=1e-15)
    grid = np.linspace(0, 1, 101)
    assert_allclose(b.predict(grid), a.predict(grid), rtol=RTOL, atol=1e-15)


PARAMS = [
    {"b1": 2.0, "b2": 4.0},
    {"b1": 2.0, "b2": 4.0, "guarantee": "paper", "max_validation": 700},
    {
        "b1": 2.0,
        "b2": 4.0,
        "guarantee": "paper",
        "bandwidth": 0.004,
        "aggregate": "min",
    },
    {"b1": 2.0, "b2": 4.0, "bandwidth": 0.004, "aggregate": "min"},
    {"b1": 2.0, "b2": 4.0, "max_validation": 300},
    {"b1": 1.0, "b2": 1.0, "bandwidth": "plugin", "cv": 3},
]


# The default suite runs every parameter set on one kind of data and every kind at least
# once (the fallback on "gaps" with a small bandwidth in both modes); the full grid of
# parameters x kinds runs under slow.
@pytest.mark.parametrize(
    "params, kind",
    slow_except(
        [{str(i): p for i, p in enumerate(PARAMS)}, ["smooth", "atoms", "gaps"]],
        default=["0-smooth", "1-atoms", "2-gaps", "3-gaps", "4-atoms", "5-smooth"],
    ),
)
def test_chunks_give_the_in_memory_numbers(kind, params):
    s, y = _data(kind)
    a = NWCalibrationBound(random_state=3, **params).fit(s, y)
    if kind == "gaps" and "bandwidth" in params and params["bandwidth"] == 0.004:
        assert a.fold_results_["n_fallback"].sum() > 0  # the fallback is exercised
    for sizes in ([1000], [777, 1234, 5], [6000]):
        b = NWCalibrationBound(random_state=3, **params).fit_chunks(
            _chunked(s, y, sizes)
        )
        _assert_same_fit(a, b)
        assert b.certificate_["fingerprint"] == a.certificate_["fingerprint"]
        assert b.certificate_["n_positive"] == a.certificate_["n_positive"]


LIPSCHITZ_PARAMS = [
    {"L": 2.0},
    {"L": 2.0, "guarantee": "paper", "aggregate": "min"},
    {"L": 30.0, "n_buckets": [3, 5, 10], "n_shifts": 3, "cv": 3},
    {"L": 2.0, "n_buckets": [1, 64, 4096], "n_shifts": 2, "guarantee": "paper"},
]


def _assert_same_lipschitz_fit(a, b, held=None):
    _assert_same_fit(a, b)
    assert_array_equal(b.candidates_.columns, a.candidates_.columns)
    assert_allclose(
        b.candidates_.to_numpy(float), a.candidates_.to_numpy(float), rtol=RTOL
    )
    assert (b.n_buckets_, b.shift_) == (a.n_buckets_, a.shift_)
    if held is not None:
        assert_allclose(b.score(*held), a.score(*held), rtol=RTOL)


# As for NW: every parameter set once and every kind at least once by default (the
# fallback on "gaps" with 4096 buckets); the full grid under slow.
@pytest.mark.parametrize(
    "params, kind",
    slow_except(
        [
            {str(i): p for i, p in enumerate(LIPSCHITZ_PARAMS)},
            ["smooth", "atoms", "gaps"],
        ],
        default=["0-smooth", "1-atoms", "2-atoms", "3-gaps"],
    ),
)
def test_lipschitz_chunks_give_the_in_memory_numbers(kind, params):
    s, y = _data(kind)
    held = _data(kind, n=800, seed=5)
    a = LipschitzBucketBound(random_state=3, **params).fit(s, y)
    if kind == "gaps" and params.get("n_buckets") == [1, 64, 4096]:
        # The fallback is exercised (by the candidates with 4096 buckets).
        counts = [c[5] for f in a.result_.folds for c in f.extra["statistics"]]
        assert sum(counts) > 0
    for sizes in ([1000], [777, 1234, 5], [6000]):
        b = LipschitzBucketBound(random_state=3, **params).fit_chunks(
            _chunked(s, y, sizes)
        )
        _assert_same_lipschitz_fit(a, b, held)
        assert b.certificate_["fingerprint"] == a.certificate_["fingerprint"]


# Each guarantee and each chunking once by default; the other two cells under slow.
@pytest.mark.parametrize(
    "guarantee, chunks",
    slow_except(
        [
            ["high_probability", "paper"],
            {"1000": 1000, "uneven": (3000, 1000, 1500, 500)},
        ],
        default=["high_probability-1000", "paper-uneven"],
    ),
)
def test_lipschitz_dask_gives_the_in_memory_numbers(chunks, guarantee):
    da = pytest.importorskip("dask.array")
    s, y = _data("atoms")
    params = {"L": 4.0, "guarantee": guarantee, "n_buckets": [2, 16, 128, 4096]}
    a = LipschitzBucketBound(random_state=2, **params).fit(s, y)
    b = LipschitzBucketBound(random_state=2, **params).fit(
        da.from_array(s, chunks=chunks), da.from_array(y, chunks=chunks)
    )
    _assert_same_lipschitz_fit(a, b)
    assert_allclose(
        lipschitz_bucket_bound(
            da.from_array(y, chunks=chunks),
            da.from_array(s, chunks=chunks),
            random_state=2,
            **params,
        ),
        a.bound_,
        rtol=RTOL,
    )


@pytest.mark.parametrize(
    "Est, params",
    [(NWCalibrationBound, {"b1": 2.0, "b2": 4.0}), (LipschitzBucketBound, {"L": 3.0})],
)
def test_chunks_of_one_row_and_a_generator(Est, params):
    # 120 rows: atoms at 0 (12 rows) and 1 (12 rows) and a tie block of 7, each row its
    # own chunk (a pass costs a merge per row).
    s, y = _data("atoms", n=120)
    a = Est(**params, random_state=0).fit(s, y)

    def rows():
        for i in range(s.shape[0]):
            yield y[i : i + 1], s[i : i + 1]

    b = Est(**params, random_state=0).fit_chunks(rows)
    _assert_same_fit(a, b)
    c = Est(**params, random_state=0).fit_chunks(rows, n_samples=s.shape[0])
    _assert_same_fit(a, c)


def test_dataframe_chunks_and_pos_label():
    s, y = _data("smooth")
    labels = np.where(y == 1, "churn", "stay")
    a = NWCalibrationBound(b1=2.0, b2=4.0, pos_label="churn", random_state=1).fit(
        s, labels
    )
    frames = [
        pd.DataFrame({"label": labels[i : i + 1500], "p": s[i : i + 1500]})
        for i in range(0, s.shape[0], 1500)
    ]
    b = NWCalibrationBound(b1=2.0, b2=4.0, pos_label="churn", random_state=1)
    b.fit_chunks(frames)
    _assert_same_fit(a, b)
    assert_array_equal(b.classes_, ["churn", "stay"])
    with pytest.raises(ValueError, match="pos_label is not specified"):
        NWCalibrationBound(b1=2.0, b2=4.0).fit_chunks(frames)


@pytest.mark.parametrize("h", [2.0**-4])
def test_chunks_with_h_and_a_random_state_instance(h):
    from skcalbound import perturb_scores

    s, y = _data("smooth", n=5000)
    s = perturb_scores(s, h, random_state=0)
    a = NWCalibrationBound(
        h=h, max_validation=700, random_state=np.random.RandomState(5)
    ).fit(s, y)
    b = NWCalibrationBound(
        h=h, max_validation=700, random_state=np.random.RandomState(5)
    ).fit_chunks(_chunked(s, y, [999]))
    _assert_same_fit(a, b)
    assert (a.fold_results_["n_validation"] == 700).all()


@pytest.mark.parametrize("chunks", [1000, 4321, (3000, 1000, 1500, 500)])
@pytest.mark.parametrize("guarantee", ["high_probability", "paper"])
def test_dask_gives_the_in_memory_numbers(chunks, guarantee):
    da = pytest.importorskip("dask.array")
    s, y = _data("atoms")
    params = {"b1": 2.0, "b2": 4.0, "max_validation": 500, "guarantee": guarantee}
    a = NWCalibrationBound(random_state=2, **params).fit(s, y)
    b = NWCalibrationBound(random_state=2, **params).fit(
        da.from_array(s, chunks=chunks), da.from_array(y, chunks=chunks)
    )
    _assert_same_fit(a, b)
    assert b.certificate_["fingerprint"] is None
    assert any("fingerprint" in reason for reason in b.certificate_["not_reproducible"])
    assert_allclose(
        nw_bound(
            da.from_array(y, chunks=chunks),
            da.from_array(s, chunks=chunks),
            random_state=2,
            **params,
        ),
        a.bound_,
        rtol=RTOL,
    )


def test_dask_dataframe_columns():
    dd = pytest.importorskip("dask.dataframe")
    s, y = _data("gaps")
    frame = pd.DataFrame({"p": s, "y": np.where(y == 1, "yes", "no")})
    ddf = dd.from_pandas(frame, npartitions=4)
    a = NWCalibrationBound(b1=2.0, b2=4.0, pos_label="yes", random_state=0)
    a.fit(s, frame["y"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no conversion warning reaches the user
        b = NWCalibrationBound(b1=2.0, b2=4.0, pos_label="yes", random_state=0)
        b.fit(ddf["p"], ddf["y"])
    _assert_same_fit(a, b)


def _parquet(path, s, y, row_group=1000):
    """``s``, ``y`` and a wide third column in a Parquet file of row groups of
    ``row_group`` rows (small enough that dd.read_parquet makes one partition)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table(
        {
            "y_prob": s,
            "y_true": y.astype(np.int8),
            "text": np.array(["x" * 40] * s.shape[0], dtype=object),
        }
    )
    pq.write_table(table, path, row_group_size=row_group)
    return path


@pytest.mark.parametrize(
    "Est, one_liner, params",
    [
        (NWCalibrationBound, nw_bound, {"b1": 2.0, "b2": 4.0, "max_validation": 500}),
        (LipschitzBucketBound, lipschitz_bucket_bound, {"L": 3.0}),
    ],
)
def test_dask_read_parquet_gives_the_in_memory_numbers(
    tmp_path, Est, one_liner, params
):
    # The way a data engineer writes it: the columns of dd.read_parquet.
    dd = pytest.importorskip("dask.dataframe")
    s, y = _data("atoms")
    df = dd.read_parquet(_parquet(tmp_path / "scores.parquet", s, y))
    a = Est(random_state=3, **params).fit(s, y)
    b = Est(random_state=3, **params).fit(df["y_prob"], df["y_true"])
    (_assert_same_fit if Est is NWCalibrationBound else _assert_same_lipschitz_fit)(
        a, b
    )
    bound = one_liner(df["y_true"], df["y_prob"], random_state=3, **params)
    assert abs(bound - a.bound_) <= 1e-12 * a.bound_


@pytest.mark.parametrize("max_validation", [None, 400])
def test_nw_adaptive_on_read_parquet_and_in_chunks_gives_the_in_memory_numbers(
    tmp_path, max_validation
):
    # SPEC 13 (NW's default) in h-mode, relative branch and fallback included: the
    # columns of dd.read_parquet and fit_chunks give the in-memory fit's numbers.
    dd = pytest.importorskip("dask.dataframe")
    from skcalbound.datasets import make_rare_event

    data = make_rare_event(6000, h=2**-6, random_state=0)
    s, y = data.scores, data.labels
    params = {
        "h": 2**-6,
        "noise": "adaptive",
        "bandwidth": 2.0**-9,
        "max_validation": max_validation,
        "random_state": 3,
    }
    a = NWCalibrationBound(**params).fit(s, y)
    assert (a.fold_results_["n_relative"] > 0).all()
    assert a.fold_results_["n_fallback"].sum() > 0
    df = dd.read_parquet(_parquet(tmp_path / "scores.parquet", s, y))
    b = NWCalibrationBound(**params).fit(df["y_prob"], df["y_true"])
    c = NWCalibrationBound(**params).fit_chunks(_chunked(s, y, [777, 1500]))
    for other in (b, c):
        _assert_same_fit(a, other)
    bound = nw_bound(df["y_true"], df["y_prob"], **params)
    assert abs(bound - a.bound_) <= 1e-12 * a.bound_


def test_dask_read_parquet_streams_by_row_groups(tmp_path, monkeypatch):
    # dd.read_parquet makes one partition of a file below 512 MiB: the passes must
    # not compute it (nor a whole column), but a row group at a time.
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    from collections import Counter

    from dask.callbacks import Callback

    s, y = _data("smooth")
    df = dd.read_parquet(_parquet(tmp_path / "scores.parquet", s, y))
    assert df.npartitions == 1
    sizes, slices, rows_of_block = [], [], Counter()

    class Record(Callback):
        def _posttask(self, key, result, dsk, state, id):
            if isinstance(result, (pd.Series, pd.DataFrame, np.ndarray)):
                sizes.append(len(result))

    validated = _chunks._validated_chunk

    def record_slice(y_true, y_prob, k, labels):
        slices.append(len(y_prob))
        rows_of_block[k] += len(y_prob)
        return validated(y_true, y_prob, k, labels)

    monkeypatch.setattr(_chunks, "_ARRAY_BLOCK", 400)
    monkeypatch.setattr(_chunks, "_validated_chunk", record_slice)
    # Partitions of at most 1 byte: one row group each (8 MiB would group them all).
    monkeypatch.setattr(_chunks, "_PARQUET_BLOCKSIZE", 1, raising=False)
    with Record():
        b = nw_bound(df["y_true"], df["y_prob"], b1=2.0, b2=4.0, random_state=0)
    # No task outside the blocks computes more than a row group (no whole column).
    assert max(sizes, default=0) <= 1000
    # Six blocks of one row group each, read once per pass (two passes), in slices
    # of _ARRAY_BLOCK rows.
    assert rows_of_block == {k: 2 * 1000 for k in range(6)}
    assert max(slices) == 400
    assert abs(b - nw_bound(y, s, b1=2.0, b2=4.0, random_state=0)) <= 1e-12 * b
    # A step whose rows depend on the partitioning keeps the user's partitions.
    head = df.map_partitions(lambda frame: frame.head(5000))
    with dask.config.set(scheduler="synchronous"):
        c = nw_bound(head["y_true"], head["y_prob"], b1=2.0, b2=4.0, random_state=0)
    assert_allclose(
        c, nw_bound(y[:5000], s[:5000], b1=2.0, b2=4.0, random_state=0), rtol=1e-12
    )


def test_dask_read_parquet_after_row_wise_steps(tmp_path, monkeypatch):
    # A row filter and a comparison between the read and the columns: the read is
    # re-planned by row groups (the lengths then need a pass), the rows are the same.
    dd = pytest.importorskip("dask.dataframe")
    monkeypatch.setattr(_chunks, "_PARQUET_BLOCKSIZE", 1, raising=False)
    s, y = _data("smooth")
    df = dd.read_parquet(_parquet(tmp_path / "scores.parquet", s, y))
    kept = df[df["y_prob"] > 0.1]
    b = nw_bound(kept["y_true"] == 1, kept["y_prob"], b1=2.0, b2=4.0, random_state=0)
    a = nw_bound(y[s > 0.1] == 1, s[s > 0.1], b1=2.0, b2=4.0, random_state=0)
    assert abs(b - a) <= 1e-12 * a


def test_dask_series_of_two_frames_are_read_by_position():
    # Two Series not partitioned alike are paired by position, as arrays are, not
    # aligned by index.
    dd = pytest.importorskip("dask.dataframe")
    s, y = _data("smooth", n=3000)
    reversed_index = pd.Series(s, index=np.arange(3000)[::-1])
    scores = dd.from_pandas(reversed_index, npartitions=3, sort=False)
    labels = dd.from_pandas(pd.Series(y), npartitions=4)
    a = NWCalibrationBound(b1=2.0, b2=4.0, random_state=0).fit(s, y)
    b = NWCalibrationBound(b1=2.0, b2=4.0, random_state=0).fit(scores, labels)
    _assert_same_fit(a, b)


def test_swapped_labels_and_scores_in_chunks_and_on_dask():
    # fit's message, not "got 6000 classes".
    s, y = _data("smooth")
    y = y.astype(float)
    with pytest.raises(ValueError, match="the arguments look swapped") as info:
        NWCalibrationBound(b1=2.0, b2=4.0).fit_chunks([(s, y)])
    assert "Each chunk of fit_chunks is a pair (y_true, y_prob)" in str(info.value)
    with pytest.raises(ValueError, match="the arguments look swapped"):
        NWCalibrationBound(b1=2.0, b2=4.0).fit_chunks(_chunked(y, s, [700]))
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="the arguments look swapped") as info:
        nw_bound(
            da.from_array(s, chunks=1000), da.from_array(y, chunks=1000), b1=2.0, b2=4.0
        )
    assert "nw_bound(y_true, y_prob)" in str(info.value)


def test_dask_blocks_shared_by_both_arrays_are_computed_once_per_pass():
    # Scores and labels cut from one block (as two columns of one DataFrame share a
    # partition): each of the two passes computes every block once, not once per
    # array (dask's per-array graph optimisation inlines a shared block into both).
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    calls = []

    def draw(k):
        calls.append(k)
        rng = np.random.default_rng(k)
        s = rng.uniform(size=500)
        return np.stack([s, (rng.uniform(size=500) < s).astype(float)], axis=1)

    both = da.concatenate(
        [
            da.from_delayed(dask.delayed(draw)(k), shape=(500, 2), dtype=float)
            for k in range(4)
        ]
    )
    with dask.config.set(scheduler="synchronous"):
        est = NWCalibrationBound(b1=2.0, b2=4.0, random_state=0)
        est.fit(both[:, 0], both[:, 1])
    assert sorted(calls) == [0, 0, 1, 1, 2, 2, 3, 3]
    s, y = both.compute().T
    _assert_same_fit(NWCalibrationBound(b1=2.0, b2=4.0, random_state=0).fit(s, y), est)


# A block of 997 rows (not a divisor of anything) by default, the default 4096 slow.
@pytest.mark.parametrize("block", [997, pytest.param(4096, marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "Est, params",
    [
        (
            NWCalibrationBound,
            {"b1": 2.0, "b2": 4.0, "max_validation": 800, "bandwidth": 0.004},
        ),
        (LipschitzBucketBound, {"L": 2.0, "guarantee": "paper"}),
    ],
)
def test_n_jobs_and_blocks_change_nothing(monkeypatch, block, Est, params):
    s, y = _data("gaps", n=9000)
    reference = Est(random_state=np.random.RandomState(4), **params).fit(s, y)
    monkeypatch.setattr(_chunks, "_ARRAY_BLOCK", block)
    one = Est(random_state=np.random.RandomState(4), **params).fit(s, y)
    two = Est(random_state=np.random.RandomState(4), n_jobs=2, **params)
    two.fit(s, y)
    _assert_same_fit(reference, one)
    # Same blocks, same merge order: threads change no bit.
    assert two.bound_ == one.bound_ and two.lower_bound_ == one.lower_bound_
    assert two.terms_ == one.terms_


def test_fold_ids_do_not_depend_on_the_chunking():
    n, k = 10_007, 5
    whole = row_folds(11, 0, n, k)
    sizes = np.bincount(whole)
    assert sizes.sum() == n and sizes.max() - sizes.min() == 1  # as balanced as KFold
    cut = np.concatenate(
        [row_folds(11, a, b - a, k) for a, b in [(0, 1), (1, 4), (4, 5000), (5000, n)]]
    )
    assert_array_equal(cut, whole)
    # Every complete block of k rows holds each fold once, in a random order.
    blocks = whole[: n - n % k].reshape(-1, k)
    assert_array_equal(
        np.sort(blocks, axis=1), np.tile(np.arange(k), (blocks.shape[0], 1))
    )
    assert len({tuple(b) for b in blocks}) > 100
    # A row's fold is uniform over the seeds.
    first = [row_folds(seed, 0, 1, k)[0] for seed in range(2000)]
    assert np.bincount(first, minlength=k).min() > 330
    # More folds than a permutation table holds: Fisher-Yates, same properties.
    many = row_folds(3, 0, 1000, 12)
    assert_array_equal(
        np.sort(many[:996].reshape(-1, 12), axis=1), np.tile(np.arange(12), (83, 1))
    )
    assert_array_equal(
        many, np.concatenate([row_folds(3, 0, 500, 12), row_folds(3, 500, 500, 12)])
    )
    keys = row_keys(1, 0, 1000, 2)
    assert_array_equal(
        keys, np.concatenate([row_keys(1, 0, 10, 2), row_keys(1, 10, 990, 2)])
    )
    assert np.unique(keys).shape[0] == 1000
    assert not np.array_equal(keys, row_keys(1, 0, 1000, 3))


def test_score_and_predict_of_a_chunked_fit():
    s, y = _data("gaps")
    held_s, held_y = _data("gaps", seed=9)
    a = NWCalibrationBound(
        b1=2.0, b2=4.0, bandwidth=0.004, max_validation=1000, random_state=0
    ).fit(s, y)
    b = NWCalibrationBound(
        b1=2.0, b2=4.0, bandwidth=0.004, max_validation=1000, random_state=0
    ).fit_chunks(_chunked(s, y, [2500]))
    assert_allclose(b.score(held_s, held_y), a.score(held_s, held_y), rtol=RTOL)
    assert -1 <= a.score(held_s, held_y) < 0


# ------------------------------------------------------------------ clear errors


@pytest.mark.parametrize(
    "estimator, match",
    [
        (
            TVCalibrationBound(),
            "TVCalibrationBound cannot run on data that is not in one",
        ),
    ],
)
def test_bounds_that_need_the_sorted_sample_say_so(estimator, match):
    s, y = _data("smooth", n=500)
    with pytest.raises(ValueError, match=match) as info:
        estimator.fit_chunks([(y, s)])
    assert "(got chunked input)" in str(info.value)
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match=match) as info:
        estimator.fit(da.from_array(s, chunks=100), da.from_array(y, chunks=100))
    assert "(got Dask input)" in str(info.value)


def test_one_liners_on_dask_input_say_why_not():
    da = pytest.importorskip("dask.array")
    s, y = _data("smooth", n=500)
    ds, dy = da.from_array(s, chunks=100), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match="TVCalibrationBound cannot run"):
        tv_bound(dy, ds)


def test_chunk_input_errors():
    s, y = _data("smooth", n=500)
    est = NWCalibrationBound(b1=1.0, b2=1.0)
    with pytest.raises(
        TypeError, match="chunks is an iterator, which can be read only once"
    ):
        est.fit_chunks(iter([(y, s)]))
    with pytest.raises(ValueError, match=r"needs cv=<int>.*got cv=\[\(array"):
        NWCalibrationBound(
            b1=1.0, b2=1.0, cv=[(np.arange(9), np.arange(9, 20))]
        ).fit_chunks([(y, s)])
    with pytest.raises(ValueError, match="Chunk 1: y_prob has two columns"):
        est.fit_chunks([(y[:10], s[:10]), (y[10:], np.c_[1 - s[10:], s[10:]])])
    with pytest.raises(
        TypeError, match="Chunk 0 is a ndarray; each chunk must be a pair"
    ):
        est.fit_chunks([s])
    with pytest.raises(ValueError, match="exactly two classes"):
        est.fit_chunks([(y, s), (np.full(3, 2), s[:3])])
    with pytest.raises(ValueError, match=r"Scores must be probabilities in \[0, 1\]"):
        est.fit_chunks([(y, s), (y[:3], s[:3] + 1.0)])
    with pytest.raises(
        ValueError, match="chunks gave 500 rows on pass 1, but 501 were expected"
    ):
        est.fit_chunks([(y, s)], n_samples=501)
    with pytest.raises(ValueError, match=r"cv=5 needs at least 5 samples"):
        est.fit_chunks([(y[:3], s[:3])])
    calls = []

    def growing():
        calls.append(1)
        yield y[: 100 + len(calls)], s[: 100 + len(calls)]

    with pytest.raises(ValueError, match="the bound reads the data more than once"):
        est.fit_chunks(growing)
    # Nothing was mutated.
    s2, y2 = s.copy(), y.copy()
    NWCalibrationBound(b1=1.0, b2=1.0).fit_chunks([(y, s)])
    assert_array_equal(s, s2) and assert_array_equal(y, y2)


def test_ties_with_h_are_checked_per_chunk():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=20_000)
    s[:100] = 0.5  # 100 equal scores in 20 000: above n/1000 = 20
    y = (rng.uniform(size=s.shape[0]) < s).astype(int)
    with pytest.raises(ValueError, match="100 of the 20000 scores equal 0.5"):
        NWCalibrationBound(h=2**-5).fit(s, y)
    with pytest.raises(ValueError, match="of the 5000 scores equal 0.5"):
        NWCalibrationBound(h=2**-5).fit_chunks(_chunked(s, y, [5000]))


def test_lipschitz_adaptive_on_read_parquet_and_in_chunks_gives_the_in_memory_numbers(
    tmp_path,
):
    # SPEC 13 with bucket weights (noise="adaptive") in h-mode, relative branch and
    # fallback included: the columns of dd.read_parquet, dask arrays and fit_chunks
    # give the in-memory fit's numbers, and score() on held-out rows too.
    dd = pytest.importorskip("dask.dataframe")
    da = pytest.importorskip("dask.array")
    from skcalbound.datasets import make_rare_event

    data = make_rare_event(6000, h=2**-6, random_state=0)
    s, y = data.scores, data.labels
    held = make_rare_event(3000, h=2**-6, random_state=1)
    params = {"h": 2**-6, "noise": "adaptive", "random_state": 3}
    a = LipschitzBucketBound(**params).fit(s, y)
    assert (a.fold_results_["n_relative"] > 0).all()
    assert a.fold_results_["n_fallback"].sum() > 0
    df = dd.read_parquet(_parquet(tmp_path / "scores.parquet", s, y))
    b = LipschitzBucketBound(**params).fit(df["y_prob"], df["y_true"])
    c = LipschitzBucketBound(**params).fit_chunks(_chunked(s, y, [777, 1500]))
    d = LipschitzBucketBound(**params).fit(
        da.from_array(s, chunks=1100), da.from_array(y, chunks=1100)
    )
    for other in (b, c, d):
        _assert_same_lipschitz_fit(a, other, held=(held.scores, held.labels))
        assert_array_equal(other.fold_results_["route"], a.fold_results_["route"])
    bound = lipschitz_bucket_bound(df["y_true"], df["y_prob"], **params)
    assert abs(bound - a.bound_) <= 1e-12 * a.bound_


@pytest.mark.parametrize(
    "Est, params, message",
    [
        (NWCalibrationBound, {"b1": 1.0, "b2": -3.0}, "'b2' parameter"),
        (NWCalibrationBound, {"h": 2**-6, "cv": 1}, "'cv' parameter"),
        (NWCalibrationBound, {"h": 2**-6, "confidence_level": -0.5}, "'confidence"),
        (NWCalibrationBound, {"h": 2**-6, "tempering": -1.0}, "'tempering' param"),
        (LipschitzBucketBound, {"L": -1.0}, "'L' parameter"),
        (LipschitzBucketBound, {"h": 2**-6, "cv": 0}, "'cv' parameter"),
    ],
)
def test_fit_chunks_validates_the_parameters_as_fit_does(Est, params, message):
    # fit_chunks skipped fit's parameter validation: b2 = -3 and confidence_level
    # = -0.5 returned bounds, cv = 1 never returned, cv = 0 divided by zero.
    s, y = _data("smooth")
    chunks = _chunked(s, y, [700])
    with pytest.raises(InvalidParameterError, match=message):
        Est(**params).fit_chunks(chunks)
    with pytest.raises(InvalidParameterError, match=message):
        Est(**params).fit(s, y)
