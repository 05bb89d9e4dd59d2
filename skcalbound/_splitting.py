"""Cross-fitting splits and the one global sort every fold reuses.

Inputs are assumed validated (see ``_validation``).
"""

import functools
import itertools
import math
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from sklearn.model_selection import (
    GroupKFold,
    GroupShuffleSplit,
    KFold,
    LeaveOneGroupOut,
    LeavePGroupsOut,
    RepeatedStratifiedKFold,
    StratifiedGroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
    check_cv,
)
from sklearn.utils import check_random_state


def stable_argsort(x):
    """Stable argsort of scores in [0, 1], and the sorted scores.

    Why not ``np.argsort(x, kind="stable")``: it is a merge sort, slower than numpy's
    vectorised quicksort, which itself is slower than the vectorised sort of plain
    64-bit integers. Doubles in [0, 1] (in fact in [0, 2)) order like their bit
    patterns, whose two top bits are zero; so we sort one ``uint64`` key per score: the
    top ``64 - b`` informative bits of the score, then the ``b``-bit data index. Keys
    order by truncated score, then by index. Scores that agree on the kept bits but
    differ below them can come out of order; those short runs are found (a descent in
    the gathered scores) and re-sorted with a stable ``lexsort``. The result is
    identical to a stable sort in every case (``tests/test_splitting.py``), and faster
    than ``np.argsort`` plus the gather on large continuous samples.

    Parameters
    ----------
    x : ndarray of shape (n,), float64, finite, in [0, 1]
        Inputs are assumed validated.

    Returns
    -------
    order : ndarray of shape (n,), intp
    sorted_x : ndarray of shape (n,)
    """
    n = x.shape[0]
    b = np.uint64(max(1, (n - 1).bit_length()))
    key = np.add(x, 0.0).view(np.uint64)  # adding 0.0 turns -0.0 into +0.0
    key <<= np.uint64(2)
    key >>= b
    key <<= b
    step = 1 << 20  # index bits in chunks: no 8n-byte temporary
    for start in range(0, n, step):
        key[start : start + step] |= np.arange(
            start, min(start + step, n), dtype=np.uint64
        )
    key.sort()
    key &= (np.uint64(1) << b) - np.uint64(1)  # in place: no second 8n-byte array
    order = key.view(np.intp)
    xs = x.take(order)
    descents = np.flatnonzero(xs[1:] < xs[:-1])
    if descents.size:
        key = np.add(xs, 0.0).view(np.uint64)  # the truncated scores, in sorted order
        key <<= np.uint64(2)
        key >>= b
        # Runs of equal truncated scores are short and rare: work on the positions
        # that continue a run, not on all n positions.
        cont = np.flatnonzero(key[1:] == key[:-1])
        breaks = np.flatnonzero(np.diff(cont) != 1) + 1
        run_first = cont[np.concatenate(([0], breaks))]
        run_last = cont[np.concatenate((breaks - 1, [cont.size - 1]))] + 1
        runs = np.unique(np.searchsorted(run_first, descents, side="right") - 1)
        first = run_first[runs]
        lengths = run_last[runs] - first + 1
        offsets = np.repeat(first - np.cumsum(lengths) + lengths, lengths)
        positions = offsets + np.arange(lengths.sum())
        run_id = np.repeat(np.arange(runs.size), lengths)
        # lexsort is stable: equal scores keep their (index) order inside a run.
        fix = positions[np.lexsort((xs[positions], run_id))]
        order[positions] = order[fix]
        xs[positions] = xs[fix]
    return order, xs


@dataclass(frozen=True)
class SortedSample:
    """All scores and labels in stable score order; ``order[k]`` is the data index.

    ``labels`` are uint8 (a random gather of bytes moves less memory than one of
    doubles).
    """

    order: np.ndarray
    scores: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class Fold:
    """One cross-fitting split over *sorted* positions.

    Either ``assignment`` (fold id of every sorted position; this fold is ``index``,
    validation where ``assignment == index`` and training elsewhere) for partitions
    such as ``KFold``, or explicit boolean masks ``train_mask``/``validation_mask``
    (``index`` then only numbers the split).
    """

    assignment: np.ndarray = None
    index: int = -1
    train_mask: np.ndarray = None
    validation_mask: np.ndarray = None

    @property
    def train(self):
        if self.assignment is not None:
            return self.assignment != self.index
        return self.train_mask

    @property
    def validation(self):
        if self.assignment is not None:
            return self.assignment == self.index
        return self.validation_mask


# Splitters that form their folds from the labels: the validation part would then
# depend on the training labels (SPEC section 2).
_LABEL_SPLITTERS = (
    RepeatedStratifiedKFold,
    StratifiedGroupKFold,
    StratifiedKFold,
    StratifiedShuffleSplit,
)
# Splitters that need ``groups``, which ``fit(X, y)`` has none of to pass on.
_GROUP_SPLITTERS = (GroupKFold, GroupShuffleSplit, LeaveOneGroupOut, LeavePGroupsOut)

_INDEPENDENT_SPLITS = (
    "a certified bound needs splits that are independent of the labels and scores "
    "(the surrogate fitted on one part must be independent of the other part's data)"
)
_WHAT_TO_USE = (
    "Use KFold(shuffle=True) or pass cv=<int>; a custom splitter or explicit "
    "(train, validation) index pairs must not look at the labels or the scores."
)


def _labels_error(name, detail=""):
    return ValueError(
        f"{name} looks at the labels to form its folds{detail}; "
        f"{_INDEPENDENT_SPLITS}. {_WHAT_TO_USE}"
    )


def _groups_error(name, detail=""):
    return ValueError(
        f"{name} needs groups to form its folds{detail}, and groups are not "
        "supported: fit(X, y) takes no groups to pass on, and the certificate assumes "
        "i.i.d. (score, label) pairs, so there is no group structure for the split to "
        f"respect; {_INDEPENDENT_SPLITS}. {_WHAT_TO_USE}"
    )


def _split_failure(splitter, X, exc):
    """Why ``splitter.split(X)`` (no labels, no groups) raised ``exc``, as an error.

    Probes the splitter with placeholder labels (alternating 0 and 1) and/or
    placeholder groups (one per sample), which carry no information about the data.
    If it splits with placeholder labels, it needs the labels; if only with
    placeholder groups, it needs groups. Otherwise the failure has another cause, and
    ``None`` is returned so that the caller re-raises ``exc`` unchanged.
    """
    n = X.shape[0]
    fake_labels = np.arange(n) % 2
    fake_groups = np.arange(n)
    detail = f" (split(X) without labels raised {type(exc).__name__}: {exc})"
    probes = [
        ({"y": fake_labels}, _labels_error),
        ({"groups": fake_groups}, _groups_error),
        ({"y": fake_labels, "groups": fake_groups}, _labels_error),
    ]
    for kwargs, make_error in probes:
        try:
            next(iter(splitter.split(X, **kwargs)))
        except Exception:
            continue
        return make_error(type(splitter).__name__, detail)
    return None


def resolve_cv(cv, random_state):
    """The splitter for ``cv``: an int means shuffled ``KFold`` (SPEC section 2).

    Anything else goes to ``check_cv(cv, classifier=False)``, without labels (with
    labels it would turn an int into ``StratifiedKFold``): a splitter is kept as
    given, an iterable of (train, validation) index pairs is wrapped. The split must be
    independent of the data values, labels and scores alike, so splitters that form
    their folds from the labels (``StratifiedKFold``, ``RepeatedStratifiedKFold``,
    ``StratifiedShuffleSplit``, ``StratifiedGroupKFold``) and splitters that need
    ``groups`` (``GroupKFold`` and the like) are rejected here, and every other
    splitter is called as ``split(X)`` with a placeholder ``X`` and no labels
    (``_generic_folds``). A custom splitter, or explicit index pairs, must not be
    built from the scores or the labels either (for example a rule that puts high
    scores in validation makes it a biased sample); that cannot be checked here.
    """
    if isinstance(cv, Integral):
        return KFold(n_splits=int(cv), shuffle=True, random_state=random_state)
    if isinstance(cv, _LABEL_SPLITTERS):
        raise _labels_error(type(cv).__name__)
    if isinstance(cv, _GROUP_SPLITTERS):
        raise _groups_error(type(cv).__name__)
    return check_cv(cv, classifier=False)


def _as_index(idx, n, what, k):
    idx = np.asarray(idx)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise ValueError(f"Split {k}: boolean {what} mask must have length {n}.")
        idx = np.flatnonzero(idx)
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise ValueError(f"Split {k}: {what} indices must be a 1-D integer array.")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"Split {k}: {what} indices must lie in [0, {n - 1}].")
    return idx


def _kfold_folds(splitter, order):
    """The folds of a ``KFold`` splitter as masks over sorted positions.

    Same folds as ``splitter.split`` (same shuffle of ``arange(n)``, same fold sizes;
    ``tests/test_splitting.py`` checks it), but as one fold-id vector gathered into
    sorted order once: ``KFold.split`` materialises a training index array per fold,
    which costs about as much as the TV prox itself at 10**7 samples.
    """
    n = order.shape[0]
    k = splitter.n_splits
    # intp, not a narrower type: numpy's shuffle has a fast path for 8-byte items.
    indices = np.arange(n)
    if splitter.shuffle:
        check_random_state(splitter.random_state).shuffle(indices)
    sizes = np.full(k, n // k, dtype=np.intp)
    sizes[: n % k] += 1
    fold_of = np.empty(n, dtype=np.min_scalar_type(-k))
    stops = np.cumsum(sizes)
    for j in range(k):
        fold_of[indices[stops[j] - sizes[j] : stops[j]]] = j
    fold_sorted = fold_of[order]
    return [Fold(assignment=fold_sorted, index=j) for j in range(k)]


def _split_without_labels(splitter, n):
    """``splitter.split(X)`` on a placeholder ``X`` of ``n`` rows: no scores, no labels.

    A splitter that fails without labels (or groups) gets an error saying why it cannot
    be used (``_split_failure``); any other failure is re-raised as it is.
    """
    X = np.zeros((n, 1))
    try:
        splits = iter(splitter.split(X))
        first = next(splits)
    except StopIteration:
        return iter(())
    except Exception as exc:
        error = _split_failure(splitter, X, exc)
        if error is None:
            raise
        raise error from exc
    return itertools.chain([first], splits)


def _generic_folds(splitter, sample):
    """Folds of any splitter or iterable of (train, validation) index pairs.

    The splitter is called as ``split(X)`` with a placeholder ``X`` and without labels
    (SPEC section 2): it sees neither the scores nor the labels, only the number of
    samples, so ``StratifiedKFold`` and the like could not stratify and are rejected
    in ``resolve_cv``.
    """
    order = sample.order
    n = order.shape[0]
    inverse = np.empty(n, dtype=np.intp)
    inverse[order] = np.arange(n)
    folds = []
    for k, (train, val) in enumerate(_split_without_labels(splitter, n)):
        train = _as_index(train, n, "training", k)
        val = _as_index(val, n, "validation", k)
        train_mask = np.zeros(n, dtype=bool)
        val_mask = np.zeros(n, dtype=bool)
        train_mask[inverse[train]] = True
        val_mask[inverse[val]] = True
        if train_mask.sum() != train.size or val_mask.sum() != val.size:
            raise ValueError(
                f"Split {k} repeats indices; each sample may appear at most once in "
                "the training part and once in the validation part."
            )
        if np.any(train_mask & val_mask):
            raise ValueError(
                f"Split {k}: training and validation parts overlap; a certified bound "
                "needs disjoint parts."
            )
        folds.append(Fold(index=k, train_mask=train_mask, validation_mask=val_mask))
    return folds


def check_enough_rows(n, cv, min_train, estimator_name):
    """``cv`` folds of ``n`` rows leave every fold ``min_train`` training points and
    one validation point, or a ValueError says how many rows are needed.

    The folds are as balanced as ``KFold``'s: the largest validation part has
    ``ceil(n / cv)`` rows, so the smallest training part has ``n - ceil(n / cv)``.
    """
    if n >= cv and n - math.ceil(n / cv) >= min_train:
        return
    needed = max(cv, min_train + 1)
    while needed - math.ceil(needed / cv) < min_train:
        needed += 1
    smallest = max(n - math.ceil(n / cv), 0) if n >= cv else None
    why = (
        f"the smallest training part of {cv} folds of {n} rows has {smallest}"
        if smallest is not None
        else f"{n} rows cannot be split into {cv} folds"
    )
    raise ValueError(
        f"Too few samples for cv={cv}: {estimator_name} with cv={cv} needs at least "
        f"{needed} samples (every fold needs {min_train} training points and one "
        f"validation point; {why}); got n_samples={n}. Use more samples or a "
        "smaller cv."
    )


def make_folds(cv, random_state, sample, min_train, estimator_name):
    """Resolve ``cv`` and return the folds as masks over the sorted sample.

    Every fold must have at least ``min_train`` training points and one validation
    point; training and validation parts must be disjoint and free of repeated indices,
    because the certificate needs the validation part independent of the surrogate and
    independent noise on every training label.
    """
    n = sample.order.shape[0]
    if isinstance(cv, Integral):
        check_enough_rows(n, cv, min_train, estimator_name)
    splitter = resolve_cv(cv, random_state)
    if type(splitter) is KFold:
        if splitter.n_splits > n:
            raise ValueError(
                f"{estimator_name}: cannot split {n} samples into "
                f"{splitter.n_splits} folds."
            )
        folds = _kfold_folds(splitter, sample.order)
    else:
        folds = _generic_folds(splitter, sample)
    if not folds:
        raise ValueError("The cross-validation splitter yielded no splits.")
    if folds[0].assignment is not None:
        # One pass instead of two per fold: a partition's sizes are its fold counts.
        sizes = np.bincount(folds[0].assignment.astype(np.intp), minlength=len(folds))
        counts = [(n - int(c), int(c)) for c in sizes]
    else:
        counts = [(int(f.train.sum()), int(f.validation.sum())) for f in folds]
    for k, (n_train, n_val) in enumerate(counts):
        if n_train < min_train or n_val < 1:
            raise ValueError(
                f"Split {k} has {n_train} training and {n_val} validation points; "
                f"{estimator_name} needs at least {min_train} and 1."
            )
    return folds


def shuffle_ties(sample, folds, seed):
    """Put each block of tied scores in a uniformly random order, drawn from ``seed``.

    The stable sort leaves tied scores in the caller's data order, which can depend on
    the labels (data grouped by class); the TV surrogate reads labels in sorted order,
    so that order must not (SPEC section 3, step 1). A random permutation followed by
    a stable sort has the same effect as this: a uniform order inside every tie block,
    independent of the data. Only tied positions are touched, so for continuous
    scores nothing changes and nothing is drawn. ``folds`` are permuted along, so each
    data point keeps its fold.

    Returns
    -------
    sample : SortedSample
    folds : list of Fold
    """
    xs = sample.scores
    tied = xs[1:] == xs[:-1]
    if not tied.any():
        return sample, folds
    in_block = np.zeros(xs.shape[0], dtype=bool)
    in_block[1:] |= tied
    in_block[:-1] |= tied
    positions = np.flatnonzero(in_block)
    # Block id of each tied position: a new block starts where a score differs from
    # the one before it.
    starts = np.ones(xs.shape[0], dtype=bool)
    starts[1:] = ~tied
    block = np.cumsum(starts)[positions]
    keys = np.random.default_rng(seed() if callable(seed) else seed).random(
        positions.shape[0]
    )
    source = positions[np.lexsort((keys, block))]

    def permuted(a):
        a = a.copy()
        a[positions] = a[source]
        return a

    sample = SortedSample(
        order=permuted(sample.order), scores=xs, labels=permuted(sample.labels)
    )
    folds = [
        Fold(assignment=permuted(f.assignment), index=f.index)
        if f.assignment is not None
        else Fold(
            index=f.index,
            train_mask=permuted(f.train_mask),
            validation_mask=permuted(f.validation_mask),
        )
        for f in folds
    ]
    return sample, folds


# --------------------------------------------------------------- counter-based rows
# SplitMix64 (Steele, Lea & Flood 2014) of a stream key and the row index: a
# stateless, counter-based generator, so the draw of row ``i`` depends on ``(seed,
# i)`` only, whatever the chunking, the partitioning or the order chunks are read
# in. NumPy's generators are sequential (Philox can ``advance`` but draws blocks of
# four), and a per-row hash of eight integer operations is all this needs.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix(z, tmp):
    """The SplitMix64 finaliser of a uint64 array, in place (``tmp``: scratch)."""
    for shift, mix in ((30, _MIX1), (27, _MIX2), (31, None)):
        np.right_shift(z, np.uint64(shift), out=tmp)
        z ^= tmp
        if mix is not None:
            z *= mix
    return z


def _stream_key(seed, stream):
    z = np.array([stream], dtype=np.uint64)
    z = _splitmix(z, np.empty(1, dtype=np.uint64))
    z ^= np.uint64(int(seed) % 2**64)
    return _splitmix(z, np.empty(1, dtype=np.uint64))[0]


# Rows per block of the hash: its temporaries stay in cache, instead of whole-array
# temporaries written to memory and read back.
_HASH_BLOCK = 2**16


def _hashed_rows(seed, start, n, stream, finish):
    """``finish(hash block, out slice)`` for the rows ``start .. start + n - 1``."""
    key = _stream_key(seed, stream)
    z = np.empty(min(n, _HASH_BLOCK), dtype=np.uint64)
    tmp = np.empty_like(z)
    for a in range(0, n, _HASH_BLOCK):
        m = min(_HASH_BLOCK, n - a)
        zz, tt = z[:m], tmp[:m]
        zz[...] = np.arange(start + a + 1, start + a + 1 + m, dtype=np.uint64)
        zz *= _GOLDEN
        zz += key
        finish(_splitmix(zz, tt), tt, slice(a, a + m))


def row_keys(seed, start, n, stream=0):
    """One uint64 per row ``start .. start + n - 1``: a function of ``(seed, stream,
    row)`` only."""
    out = np.empty(n, dtype=np.uint64)

    def finish(z, tmp, where):
        out[where] = z

    _hashed_rows(seed, start, n, stream, finish)
    return out


FOLD_STREAM, SUBSAMPLE_STREAM, TIE_STREAM = 1, 2, 3


@functools.lru_cache(maxsize=8)
def _permutations(k):
    """Permutations of ``range(k)`` in lexicographic order (int8), for ``k <= 8``."""
    if k > 8:
        return None
    return np.array(list(itertools.permutations(range(k))), dtype=np.int8)


def row_folds(seed, start, n, n_splits):
    """Fold ids of rows ``start .. start + n - 1``, drawn from ``(seed, row index)``.

    Rows come in blocks of ``n_splits`` consecutive rows (block ``b``: rows ``b K ..
    b K + K - 1``), and every block gets a uniformly random permutation of the ``K``
    fold ids (Fisher-Yates, its swaps drawn from the keys of :func:`row_keys` of the
    block's rows; for ``K <= 8``, one of the ``K!`` permutations picked by the key of
    the block). So each row's fold is uniform and independent of the data values,
    the folds are as balanced as ``KFold``'s (sizes differ by at most one), and the id
    of a row does not depend on how the rows are cut into chunks.
    """
    K = int(n_splits)
    first, stop = start // K, -(-(start + n) // K)
    blocks = stop - first
    table = _permutations(K)
    if table is not None:
        # One key per block picks one of the K! permutations (bias below K!/2**64).
        keys = row_keys(seed, first, blocks, FOLD_STREAM)
        # np.take of whole rows: cheaper than table[index] for int8 rows.
        perm = np.take(table, (keys % np.uint64(table.shape[0])).astype(np.intp), 0)
    else:
        keys = row_keys(seed, first * K, blocks * K, FOLD_STREAM).reshape(blocks, K)
        perm = np.empty((blocks, K), dtype=np.intp)
        perm[...] = np.arange(K)
        rows = np.arange(blocks)
        for j in range(K - 1, 0, -1):
            # Fisher-Yates: swap j with a uniform position in 0..j (53 bits of a key).
            u = (keys[:, j] >> np.uint64(11)).astype(np.float64)
            r = (u * ((j + 1) / 2.0**53)).astype(np.intp)
            swapped = perm[rows, r]
            perm[rows, r] = perm[:, j]
            perm[:, j] = swapped
    offset = start - first * K
    return perm.reshape(-1)[offset : offset + n]


@dataclass(frozen=True)
class GroupDesign:
    """Cross-fitting splits as groups of rows, for bounds on mergeable statistics.

    Every row is in one group (``-1``: in none); split ``k`` validates the rows of
    group ``splits[k][0]`` with a surrogate trained on the groups ``splits[k][1]``.
    A partition (``KFold``, the counter rule) has one group per fold and split ``k``
    trains on every group but ``k``. Group ids come from ``ids`` (data order, in
    memory) or, for data not in one place, from ``row_folds(seed, row, n_groups)``.
    """

    n_groups: int
    splits: tuple
    ids: np.ndarray = None
    seed: int = None

    @classmethod
    def partition(cls, n_groups, ids=None, seed=None):
        everyone = tuple(range(n_groups))
        splits = tuple((k, tuple(g for g in everyone if g != k)) for k in everyone)
        return cls(n_groups, splits, ids, seed)

    @classmethod
    def from_folds(cls, folds):
        """Designs for folds over data positions (``make_folds`` on the identity
        order): one for a partition, else one per split (its training rows are group
        0, validation rows group 1, the others group 2)."""
        if folds[0].assignment is not None:
            ids = folds[0].assignment.astype(np.intp)
            return [cls.partition(len(folds), ids=ids)]
        # Explicit splits that form a partition (``PredefinedSplit``, index pairs of
        # a k-fold): one design, every training part the complement of its fold.
        n = folds[0].validation.shape[0]
        ids = np.full(n, -1, dtype=np.intp)
        partition = True
        for k, fold in enumerate(folds):
            v = fold.validation
            if np.any(ids[v] >= 0) or not np.array_equal(fold.train, ~v):
                partition = False
                break
            ids[v] = k
        if partition and np.all(ids >= 0):
            return [cls.partition(len(folds), ids=ids)]
        designs = []
        for fold in folds:
            ids = np.full(fold.train.shape[0], 2, dtype=np.intp)
            ids[fold.train] = 0
            ids[fold.validation] = 1
            designs.append(cls(3, ((1, (0,)),), ids))
        return designs

    def groups(self, start, n):
        if self.ids is not None:
            return self.ids[start : start + n]
        return row_folds(self.seed, start, n, self.n_groups)

    def training_sizes(self, group_sizes, min_train):
        """The training size of every split from the rows per group, or a clear error
        for a split with too few training or no validation rows."""
        sizes = []
        for k, (validation, train) in enumerate(self.splits):
            m = int(round(float(group_sizes[list(train)].sum())))
            n_val = int(round(float(group_sizes[validation])))
            if m < min_train or n_val < 1:
                raise ValueError(
                    f"Split {k} has {m} training and {n_val} validation points; at "
                    f"least {min_train} and 1 are needed (too few rows for the number "
                    "of folds)."
                )
            sizes.append(m)
        return sizes

    @property
    def split_of_group(self):
        out = np.full(self.n_groups, -1, dtype=np.intp)
        for k, (validation, _) in enumerate(self.splits):
            out[validation] = k
        return out


@dataclass(frozen=True)
class DataOrder:
    """The identity "sorted order": ``make_folds`` over data positions."""

    n: int

    @property
    def order(self):
        return np.arange(self.n)
