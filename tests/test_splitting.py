"""The global stable sort and the folds in sorted coordinates."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skcalbound._splitting import SortedSample, make_folds, stable_argsort


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: rng.uniform(size=1000),
        lambda rng: rng.choice([0.0, 0.25, 0.5, 1.0], size=1000),
        lambda rng: np.round(rng.uniform(size=5000), 2),
        lambda rng: np.concatenate([np.zeros(300), rng.uniform(size=300), np.ones(300)]),
        lambda rng: np.full(50, 0.3),
        lambda rng: np.array([0.5]),
        lambda rng: np.array([], dtype=float),
    ],
)
def test_stable_argsort_equals_numpy_stable_sort(make):
    x = make(np.random.default_rng(0))
    rng = np.random.default_rng(1)
    x = x[rng.permutation(x.size)]
    order, xs = stable_argsort(x)
    assert_array_equal(order, np.argsort(x, kind="stable"))
    assert_array_equal(xs, np.sort(x))


def test_stable_argsort_ignores_labels_within_ties():
    # Tie order is data order: it cannot depend on anything but the scores.
    s = np.array([0.5, 0.2, 0.5, 0.5, 0.2])
    assert_array_equal(stable_argsort(s)[0], [1, 4, 0, 2, 3])


def test_kfold_folds_partition_and_are_disjoint():
    rng = np.random.default_rng(3)
    s = rng.uniform(size=103)
    sample = SortedSample.from_arrays(s, np.zeros(103))
    folds = make_folds(5, np.random.RandomState(0), sample, 2, "Est")
    assert len(folds) == 5
    val_count = sum(f.validation.astype(int) for f in folds)
    assert_array_equal(val_count, np.ones(103, dtype=int))
    for f in folds:
        assert not np.any(f.train & f.validation)
        assert_array_equal(f.train | f.validation, np.ones(103, dtype=bool))


def test_int_cv_is_shuffled_kfold():
    # Scores sorted in data order: unshuffled KFold would give contiguous score
    # ranges to each validation fold, which is not an i.i.d. split.
    s = np.linspace(0, 1, 100)
    sample = SortedSample.from_arrays(s, np.zeros(100))
    folds = make_folds(4, np.random.RandomState(0), sample, 2, "Est")
    positions = np.flatnonzero(folds[0].validation)
    assert positions.max() - positions.min() > 50


@pytest.mark.parametrize("n, k, seed", [(103, 5, 0), (10, 2, 7), (50, 7, 3)])
def test_kfold_fast_path_gives_sklearn_kfold_folds(n, k, seed):
    from sklearn.model_selection import KFold

    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    sample = SortedSample.from_arrays(s, np.zeros(n))
    folds = make_folds(KFold(k, shuffle=True, random_state=seed), None, sample, 2, "E")
    expected = KFold(k, shuffle=True, random_state=seed).split(np.zeros((n, 1)))
    for fold, (train, val) in zip(folds, expected, strict=True):
        assert_array_equal(np.sort(sample.order[fold.train]), train)
        assert_array_equal(np.sort(sample.order[fold.validation]), np.sort(val))


@pytest.mark.parametrize(
    "make",
    [
        # Scores that agree on their top bits and differ only in the last ulps: the
        # truncated keys collide and the fix-up must restore the exact order.
        lambda rng: 0.5 + rng.permutation(2000) * np.finfo(float).eps / 2,
        lambda rng: 0.3 + rng.integers(0, 50, 3000) * np.finfo(float).eps,
        # Subnormals, exact zeros of both signs and one.
        lambda rng: np.array([0.0, -0.0, 5e-324, 1e-310, 1.0, -0.0, 0.0, 5e-324, 1.0]),
        lambda rng: rng.uniform(size=100_000) * 1e-300,
        lambda rng: np.concatenate([rng.uniform(size=10_000), rng.uniform(size=10_000)]),
    ],
)
def test_stable_argsort_adversarial(make):
    x = make(np.random.default_rng(4))
    order, xs = stable_argsort(x)
    assert_array_equal(order, np.argsort(x, kind="stable"))
    assert_array_equal(xs, x[np.argsort(x, kind="stable")])
