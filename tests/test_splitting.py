"""The global stable sort, the folds in sorted coordinates, and which splitters are
accepted (the split must not look at the labels or the scores, SPEC section 2) and
honoured by every bound."""

import numpy as np
import pytest
from _bounds import (
    BOUND_ESTIMATORS,
    BOUNDS,
    folded_bound,
    inherited_cells,
    scores_labels,
)
from _synthetic import slow_except
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.model_selection import (
    GroupKFold,
    GroupShuffleSplit,
    KFold,
    LeaveOneGroupOut,
    LeavePGroupsOut,
    RepeatedKFold,
    RepeatedStratifiedKFold,
    ShuffleSplit,
    StratifiedGroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
)

from skcalbound import (
    LipschitzBucketBound,
    NWCalibrationBound,
    TVCalibrationBound,
)
from skcalbound._splitting import SortedSample, make_folds, row_folds, stable_argsort


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: rng.uniform(size=1000),
        lambda rng: rng.choice([0.0, 0.25, 0.5, 1.0], size=1000),
        lambda rng: np.round(rng.uniform(size=5000), 2),
        lambda rng: np.concatenate(
            [np.zeros(300), rng.uniform(size=300), np.ones(300)]
        ),
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


def _sorted_sample(scores, labels):
    """A :class:`SortedSample` of arrays in data order."""
    order, sorted_scores = stable_argsort(scores)
    return SortedSample(order=order, scores=sorted_scores, labels=labels[order])


def test_kfold_folds_partition_and_are_disjoint():
    rng = np.random.default_rng(3)
    s = rng.uniform(size=103)
    sample = _sorted_sample(s, np.zeros(103))
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
    sample = _sorted_sample(s, np.zeros(100))
    folds = make_folds(4, np.random.RandomState(0), sample, 2, "Est")
    positions = np.flatnonzero(folds[0].validation)
    assert positions.max() - positions.min() > 50


@pytest.mark.parametrize("n, k, seed", [(103, 5, 0), (10, 2, 7), (50, 7, 3)])
def test_kfold_fast_path_gives_sklearn_kfold_folds(n, k, seed):
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    sample = _sorted_sample(s, np.zeros(n))
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
        lambda rng: np.concatenate(
            [rng.uniform(size=10_000), rng.uniform(size=10_000)]
        ),
    ],
)
def test_stable_argsort_adversarial(make):
    x = make(np.random.default_rng(4))
    order, xs = stable_argsort(x)
    assert_array_equal(order, np.argsort(x, kind="stable"))
    assert_array_equal(xs, x[np.argsort(x, kind="stable")])


# --------------------------------------------------------------------------------------
# Splitters must not look at the data values (SPEC section 2)
# --------------------------------------------------------------------------------------


# NW and Lipschitz have no default for their assumption constants.
# TV's cross-fitted denoising bound: its default cell bound has no folds (cv unused).
REQUIRED_PARAMS = {
    NWCalibrationBound: {"h": 2**-4},
    LipschitzBucketBound: {"L": 2.0},
    TVCalibrationBound: {"method": "denoise"},
}

LABEL_MESSAGE = (
    "looks at the labels to form its folds; a certified bound needs splits that are "
    r"independent of the labels and scores \(the surrogate fitted on one part must be "
    r"independent of the other part's data\)\. Use KFold\(shuffle=True\) or pass "
    r"cv=<int>"
)


@pytest.mark.parametrize(
    "cv",
    [
        StratifiedKFold(3),
        StratifiedKFold(3, shuffle=True, random_state=0),
        StratifiedShuffleSplit(n_splits=3, test_size=0.3, random_state=0),
        RepeatedStratifiedKFold(n_splits=2, n_repeats=2, random_state=0),
        StratifiedGroupKFold(3),
    ],
    ids=lambda cv: type(cv).__name__,
)
@pytest.mark.parametrize(
    "Est", [TVCalibrationBound, NWCalibrationBound, LipschitzBucketBound]
)
def test_label_splitters_are_rejected_with_the_reason(Est, cv):
    s, y = scores_labels(300)
    est = Est(cv=cv, **REQUIRED_PARAMS.get(Est, {}))
    with pytest.raises(ValueError, match=type(cv).__name__ + " " + LABEL_MESSAGE):
        est.fit(s, y)


@pytest.mark.parametrize(
    "cv",
    [
        GroupKFold(3),
        GroupShuffleSplit(n_splits=3, test_size=0.3, random_state=0),
        LeaveOneGroupOut(),
        LeavePGroupsOut(2),
    ],
    ids=lambda cv: type(cv).__name__,
)
def test_group_splitters_are_rejected_with_the_reason(cv):
    s, y = scores_labels(300)
    with pytest.raises(
        ValueError,
        match=type(cv).__name__ + r" needs groups to form its folds, and groups are "
        r"not supported: fit\(X, y\) takes no groups to pass on",
    ):
        TVCalibrationBound(method="denoise", cv=cv).fit(s, y)


class RecordingSplitter:
    """Shuffled halves, recording what ``split`` is given."""

    def __init__(self):
        self.calls = []

    def get_n_splits(self, X=None, y=None, groups=None):
        return 2

    def split(self, X, y=None, groups=None):
        self.calls.append((np.array(X, copy=True), y, groups))
        idx = np.random.default_rng(5).permutation(len(X))
        half = len(X) // 2
        yield idx[:half], idx[half:]
        yield idx[half:], idx[:half]


def test_custom_splitter_sees_neither_labels_nor_scores():
    s, y = scores_labels(300)
    splitter = RecordingSplitter()
    est = TVCalibrationBound(method="denoise", cv=splitter, random_state=0).fit(s, y)
    assert len(splitter.calls) == 1
    X_seen, y_seen, groups_seen = splitter.calls[0]
    assert y_seen is None and groups_seen is None
    # A placeholder with one row per sample: the scores do not reach the splitter.
    assert X_seen.shape[0] == s.shape[0]
    assert_array_equal(X_seen, np.zeros_like(X_seen))
    # The folds are the splitter's: the same pairs given as a list give the same bound.
    pairs = list(RecordingSplitter().split(s))
    assert est.n_splits_ == 2
    assert (
        TVCalibrationBound(method="denoise", cv=pairs, random_state=0).fit(s, y).bound_
        == est.bound_
    )


class NeedsLabels(RecordingSplitter):
    def split(self, X, y=None, groups=None):
        if y is None:
            raise ValueError("y is required")
        return super().split(X, y, groups)


class NeedsGroups(RecordingSplitter):
    def split(self, X, y=None, groups=None):
        if groups is None:
            raise TypeError("groups is required")
        return super().split(X, y, groups)


class Broken(RecordingSplitter):
    def split(self, X, y=None, groups=None):
        raise RuntimeError("broken for its own reasons")


def test_custom_splitter_that_fails_without_labels_is_rejected_with_the_reason():
    s, y = scores_labels(300)
    with pytest.raises(
        ValueError,
        match=r"NeedsLabels looks at the labels to form its folds \(split\(X\) without "
        r"labels raised ValueError: y is required\); a certified bound needs splits "
        "that are independent of the labels and scores",
    ):
        TVCalibrationBound(method="denoise", cv=NeedsLabels()).fit(s, y)


def test_custom_splitter_that_needs_groups_is_rejected_with_the_reason():
    s, y = scores_labels(300)
    with pytest.raises(
        ValueError,
        match=r"NeedsGroups needs groups to form its folds \(split\(X\) without labels "
        r"raised TypeError: groups is required\), and groups are not supported",
    ):
        TVCalibrationBound(method="denoise", cv=NeedsGroups()).fit(s, y)


def test_other_splitter_failures_are_raised_unchanged():
    s, y = scores_labels(300)
    with pytest.raises(RuntimeError, match="^broken for its own reasons$"):
        TVCalibrationBound(method="denoise", cv=Broken()).fit(s, y)


@pytest.mark.parametrize(
    "make_cv, n_splits",
    [
        (lambda: KFold(3), 3),
        (lambda: KFold(4, shuffle=True, random_state=2), 4),
        (lambda: ShuffleSplit(n_splits=5, test_size=0.25, random_state=0), 5),
        (lambda: RepeatedKFold(n_splits=2, n_repeats=2, random_state=1), 4),
    ],
    ids=["KFold", "KFold-shuffled", "ShuffleSplit", "RepeatedKFold"],
)
def test_label_free_splitters_still_work(make_cv, n_splits):
    s, y = scores_labels(300)
    X = np.zeros((s.shape[0], 1))
    # make_folds gives exactly the splitter's splits (as masks over sorted positions).
    sample = _sorted_sample(s, y)
    folds = make_folds(make_cv(), None, sample, 2, "E")
    expected = list(make_cv().split(X))
    assert len(folds) == len(expected) == n_splits
    for fold, (train, val) in zip(folds, expected, strict=True):
        assert_array_equal(np.sort(sample.order[fold.train]), np.sort(train))
        assert_array_equal(np.sort(sample.order[fold.validation]), np.sort(val))
    # Through the estimator: the same bound as the same splits given as pairs.
    est = TVCalibrationBound(method="denoise", cv=make_cv(), random_state=0).fit(s, y)
    assert est.n_splits_ == n_splits
    pairs = TVCalibrationBound(method="denoise", cv=expected, random_state=0).fit(s, y)
    assert pairs.bound_ == est.bound_


@pytest.mark.parametrize("as_generator", [False, True])
def test_index_pair_iterables_still_work(as_generator):
    s, y = scores_labels(300)
    idx = np.random.default_rng(2).permutation(s.shape[0])
    pairs = [(idx[:200], idx[200:]), (idx[100:], idx[:100])]
    est = TVCalibrationBound(
        method="denoise", cv=iter(pairs) if as_generator else pairs
    ).fit(s, y)
    assert est.n_splits_ == 2
    assert_array_equal(est.fold_results_["n_validation"], [100, 100])


# ======================================================================================
# Any splitter through the estimators' cv: sklearn's, explicit index pairs, int cv
# (row folds), and the errors for splits that are not usable.
# ======================================================================================
@pytest.fixture
def data():
    return scores_labels()


# --------------------------------------------------------------------------------------
# Splitters
# --------------------------------------------------------------------------------------


def _explicit_splits(n):
    idx = np.random.default_rng(0).permutation(n)
    half = n // 2
    return [(idx[:half], idx[half:]), (idx[half:], idx[:half])]


# (make_cv, n_splits) by id.
SPLITTERS = {
    "KFold": (lambda n: KFold(3), 3),
    "KFold-shuffled": (lambda n: KFold(4, shuffle=True, random_state=2), 4),
    "ShuffleSplit": (
        lambda n: ShuffleSplit(n_splits=6, test_size=0.25, random_state=0),
        6,
    ),
    "list": (_explicit_splits, 2),
    "generator": (lambda n: iter(_explicit_splits(n)), 2),  # a one-shot generator
    # Not a partition: every sample is validated twice. (Stratified splitters are
    # rejected: tests/test_splitting.py.)
    "RepeatedKFold": (
        lambda n: RepeatedKFold(n_splits=2, n_repeats=2, random_state=0),
        4,
    ),
}


# The splits that are not a partition (samples validated never or twice) for every
# bound by default, the others for the TV bound.
@pytest.mark.parametrize(
    "Est, splitter",
    slow_except(
        [BOUNDS, SPLITTERS],
        default=inherited_cells(SPLITTERS, ("ShuffleSplit", "RepeatedKFold")),
    ),
)
def test_any_sklearn_splitter(Est, splitter, data):
    make_cv, n_splits = splitter
    X, y = data
    cv = make_cv(X.shape[0])
    est = folded_bound(Est, cv=cv).fit(X, y)
    assert est.n_splits_ == n_splits
    assert est.fold_results_.shape[0] == n_splits
    assert_allclose(est.fold_results_["delta"], 0.05 / n_splits, rtol=1e-12)
    assert 0.0 < est.bound_ <= 1.0
    # The same splits given as an explicit list give the same bound.
    splits = (
        list(make_cv(X.shape[0]).split(X, y))
        if hasattr(cv, "split")
        else list(make_cv(X.shape[0]))
    )
    assert folded_bound(Est, cv=splits).fit(X, y).bound_ == est.bound_
    assert_array_equal(
        est.fold_results_["n_validation"], [len(val) for _, val in splits]
    )


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_int_cv_draws_row_folds(Est, data):
    # Every bound: folds drawn row by row from one seed drawn from random_state (the
    # rule of fit_chunks and Dask input), not KFold's.
    X, y = data
    est = folded_bound(Est, cv=3, random_state=7).fit(X, y)
    seed = np.random.RandomState(7).randint(np.iinfo(np.int32).max)
    ids = row_folds(seed, 0, y.shape[0], 3)
    splits = [(np.flatnonzero(ids != k), np.flatnonzero(ids == k)) for k in range(3)]
    kfold = list(KFold(3, shuffle=True, random_state=7).split(X))
    assert folded_bound(Est, cv=kfold).fit(X, y).bound_ != est.bound_
    assert folded_bound(Est, cv=splits).fit(X, y).bound_ == est.bound_


@pytest.mark.parametrize(
    "splits, match",
    [
        (
            [(np.arange(0, 120), np.arange(100, 200))],
            "Split 0: training and validation parts overlap",
        ),
        (
            [
                (np.arange(100, 200), np.arange(100)),
                (np.arange(0, 100), np.arange(90, 200)),
            ],
            "Split 1: training and validation parts overlap",
        ),
        (
            [(np.r_[np.arange(100), 5], np.arange(100, 200))],
            "Split 0 repeats indices",
        ),
        (
            [(np.arange(100), np.r_[np.arange(100, 200), 150])],
            "Split 0 repeats indices",
        ),
        (
            [(np.arange(100), np.arange(100, 250))],
            r"Split 0: validation indices must lie in \[0, 199\]",
        ),
        ([(np.arange(200), np.array([], dtype=int))], "Split 0 has 200 training and 0"),
        ([], "The cross-validation splitter yielded no splits"),
    ],
)
@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_invalid_explicit_splits_raise(Est, splits, match):
    X, y = scores_labels(200)
    X_before, y_before = X.copy(), y.copy()
    with pytest.raises(ValueError, match=match):
        folded_bound(Est, cv=splits).fit(X, y)
    assert_array_equal(X, X_before)
    assert_array_equal(y, y_before)


# Fewest training points a fold may have: TV's transfer term needs two (its
# log(4 (m - 1) / delta)); the NW smoother is defined from one (nearest-neighbour
# fallback), and so is the bucket mean (the nearest training score's bucket).
MIN_TRAIN = {
    "TVCalibrationBound": 2,
    "NWCalibrationBound": 1,
    "LipschitzBucketBound": 1,
}


@pytest.mark.parametrize("Est", BOUND_ESTIMATORS)
def test_smallest_training_part(Est):
    X, y = scores_labels(200)
    k = MIN_TRAIN[Est.__name__]
    est = folded_bound(Est, cv=[(np.arange(k), np.arange(k, 200))]).fit(X, y)
    assert est.fold_results_["n_train"].tolist() == [k]
    assert est.bound_ == 1.0  # certified, if uninformative
    with pytest.raises(
        ValueError,
        match=rf"Split 0 has {k - 1} training and {200 - k + 1} validation points; "
        rf"{Est.__name__} needs at least {k} and 1\.",
    ):
        folded_bound(Est, cv=[(np.arange(k - 1), np.arange(k - 1, 200))]).fit(X, y)
