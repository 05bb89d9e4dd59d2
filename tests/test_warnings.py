"""The warning that scores rank the positive class below chance (a wrong ``pos_label``
or column order), ``skcalbound._warnings``: its message at every door, its silence at
chance and on few samples, and the binned AUROC it is computed from. The command
line's report of it is in ``tests/test_cli.py``.
"""

import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from skcalbound import (
    BelowChanceWarning,
    MonotoneCalibrationBound,
    NWCalibrationBound,
    TVCalibrationBound,
    calibration_test,
    nw_bound,
    tv_bound,
)
from skcalbound._validation import check_scores_labels
from skcalbound._warnings import _binned_auroc, _cell_counts


def _below_chance(caught):
    return [w for w in caught if issubclass(w.category, BelowChanceWarning)]


def _fit_caught(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit()
    return result, _below_chance(caught)


def test_wrong_pos_label_warns_naming_pos_label(calibrated_churn):
    # The trap: P(churn) bounded against "stay" as the positive class gave a
    # "certified miscalibrated" interval with only the vacuous-bound warning.
    s, y, words = calibrated_churn
    auroc = roc_auc_score(words == "stay", s)
    assert auroc < 0.3
    est, caught = _fit_caught(
        lambda: TVCalibrationBound(pos_label="stay", random_state=0).fit(s, words)
    )
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith(
        f"The scores rank the positive class below chance: their AUROC against the "
        f"labels is {auroc:.3f} ({np.sum(words == 'stay')} positive and "
        f"{np.sum(words == 'churn')} negative samples), more than 3 standard errors "
        "below 0.5."
    )
    assert "check pos_label (the class whose probability the scores are)" in message
    assert "predict_proba's columns follow the sorted classes" in message
    assert caught[0].filename == __file__  # the user's line, not the library's
    # A warning, not a change: the bound is that of the scores as given.
    with pytest.warns(BelowChanceWarning):
        flipped = TVCalibrationBound(random_state=0).fit(s, 1 - y)
    assert est.bound_ == flipped.bound_


@pytest.mark.parametrize(
    "labels, pos_label, column, shown",
    [
        (None, None, 1, "pos_label (here 1)"),
        ("words", "churn", 0, "pos_label (here 'churn')"),
    ],
)
def test_two_columns_in_the_wrong_order_warn_naming_the_column(
    calibrated_churn, labels, pos_label, column, shown
):
    s, y, words = calibrated_churn
    y = words if labels == "words" else y
    # [P(churn), P(stay)] for classes sorted [0, 1] is the wrong order; for the
    # sorted ["churn", "stay"] with pos_label="churn", [P(stay), P(churn)] is.
    proba = np.column_stack([s, 1 - s]) if column == 1 else np.column_stack([1 - s, s])
    _, caught = _fit_caught(
        lambda: NWCalibrationBound(h=2**-4, pos_label=pos_label).fit(proba, y)
    )
    assert len(caught) == 1
    classes = [0, 1] if labels is None else ["churn", "stay"]
    assert str(caught[0].message).endswith(
        f"check {shown} and the column order: the scores were read from column "
        f"{column} of the two-column input, the column of {classes[column]!r} among "
        f"the sorted classes {classes}."
    )
    # The right order does not warn.
    right = proba[:, ::-1]
    _, caught = _fit_caught(
        lambda: NWCalibrationBound(h=2**-4, pos_label=pos_label).fit(right, y)
    )
    assert caught == []


@pytest.mark.parametrize(
    "call",
    [
        lambda y, p: tv_bound(y, p, random_state=0),
        lambda y, p: nw_bound(y, p, h=2**-4, random_state=0),
        lambda y, p: calibration_test(y, p, h=2**-4, random_state=0),
    ],
    ids=["tv_bound", "nw_bound", "calibration_test"],
)
def test_one_liners_warn_once_at_the_users_line(calibrated_churn, call):
    s, y, _ = calibrated_churn
    proba = np.column_stack([s, 1 - s])  # P(churn) in the column of class 1
    _, caught = _fit_caught(lambda: call(y, proba))
    assert len(caught) == 1
    assert caught[0].filename == __file__
    _, caught = _fit_caught(lambda: call(y, proba[:, ::-1]))
    assert caught == []


def _independent(rng, n):
    return rng.uniform(size=n), rng.uniform(size=n) < 0.3


def _constant(rng, n):
    return np.full(n, 0.3), rng.uniform(size=n) < 0.3


def _two_ends(rng, n):
    # Positives at either end of the negatives, at random: AUROC 1/2, with the
    # largest sampling noise an AUROC of 1/2 can have (about sqrt(3) times that of
    # scores independent of the labels).
    positive = rng.uniform(size=n) < 0.3
    ends = np.where(rng.uniform(size=n) < 0.5, 0.01, 0.99)
    return np.where(positive, ends, rng.uniform(0.2, 0.8, size=n)), positive


@pytest.mark.parametrize("sample", [_independent, _constant, _two_ends])
def test_no_warning_at_chance(sample):
    for seed in range(20):
        s, y = sample(np.random.default_rng(seed), 2000)
        # The door every fit goes through, without the fit.
        _, caught = _fit_caught(
            lambda: check_scores_labels(TVCalibrationBound(), s, y.astype(int))
        )
        assert caught == [], seed


def test_few_samples_of_a_class_never_warn():
    # 10 positives and 10 negatives, perfectly inverted: 1/2 - 3 se < 0, so no AUROC
    # could be told below chance from sampling noise.
    s = np.linspace(0.05, 0.95, 20)
    y = (s < 0.5).astype(int)
    _, caught = _fit_caught(lambda: TVCalibrationBound(cv=2, random_state=0).fit(s, y))
    assert caught == []


def test_binned_auroc_is_the_auroc_and_bounds_it_within_a_cell():
    rng = np.random.default_rng(0)
    s = rng.beta(0.5, 3, size=5000)
    s[:2] = [0.0, 1.0]
    y = (rng.uniform(size=s.size) < s).astype(np.uint8)
    y[:2] = [0, 1]
    for scores in (s, np.round(s, 2)):  # with ties, the same rule: 1/2 a pair
        auroc, tied = _binned_auroc(*_cell_counts(scores, y))
        assert auroc == pytest.approx(roc_auc_score(y, scores), abs=tied / 2 + 1e-12)
    assert _binned_auroc(*_cell_counts(np.round(s, 2), y))[0] == pytest.approx(
        roc_auc_score(y, np.round(s, 2)), rel=1e-12
    )
    # Every pair in one cell, ranked perfectly: the bound auroc + tied / 2 is exact.
    close = 0.5 + 1e-9 * np.arange(100)
    order = (np.arange(100) >= 50).astype(np.uint8)
    auroc, tied = _binned_auroc(*_cell_counts(close, order))
    assert (auroc, tied) == (0.5, 1.0) and roc_auc_score(order, close) == 1.0


@pytest.mark.parametrize(
    "make, chunked",
    [
        (lambda: NWCalibrationBound(h=2**-4, random_state=0), "list"),
        (lambda: MonotoneCalibrationBound(random_state=0), "list"),
        (lambda: NWCalibrationBound(h=2**-4, random_state=0), "dask"),
    ],
)
def test_chunks_and_dask_warn_as_arrays_do(calibrated_churn, make, chunked):
    # fit counts the AUROC in the estimate's per-cell sums, so rows that are not in
    # one array (chunks, Dask) get the warning too, with the same numbers.
    s, y, _ = calibrated_churn
    flipped = 1 - y
    _, in_memory = _fit_caught(lambda: make().fit(s, flipped))
    if chunked == "dask":
        da = pytest.importorskip("dask.array")
        xs, ys = da.from_array(s, chunks=700), da.from_array(flipped, chunks=700)
        _, caught = _fit_caught(lambda: make().fit(xs, ys))
    else:
        parts = [(flipped[a : a + 700], s[a : a + 700]) for a in range(0, len(s), 700)]
        _, caught = _fit_caught(lambda: make().fit_chunks(parts))
    assert len(in_memory) == len(caught) == 1
    assert str(caught[0].message) == str(in_memory[0].message)
    assert f"{roc_auc_score(flipped, s):.3f}" in str(caught[0].message)
    assert caught[0].filename == __file__
