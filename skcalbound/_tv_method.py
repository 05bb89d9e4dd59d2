"""The TV bound's method objects (``_base._BoundMethod``): the denoising bound
cross-fitted on splits of the sorted sample, and the cell bound on all rows."""

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils.parallel import Parallel, delayed

from ._base import FoldTerms, Passes, _BoundMethod
from ._splitting import TIE_STREAM, SortedSample, shuffle_ties, stable_argsort
from ._surrogates._tv import fit_tv_surrogate
from ._surrogates._tv_cells import CellMeans, cells_bound
from ._terms import population_variance, tv_bound_terms, tv_delta_share, tv_t2


@dataclass(frozen=True)
class TVSplitStatistics:
    """What Proposition 1 needs of one split: ``n_validation`` rows, the ``mean``
    and population ``variance`` (divisor ``n_validation``) of their residuals
    ``|s - eta_hat(s)|``, the training size ``n_train`` and ``V_hat``, the total
    variation of the surrogate fitted on the training rows."""

    n_validation: int
    mean: float
    variance: float
    n_train: int
    V_hat: float


@dataclass(frozen=True)
class _TVMethod(_BoundMethod):
    """Proposition 1 wired to the TV surrogate; ``delta`` is split into three (four
    with ``guarantee="paper"``)."""

    V: float
    guarantee: str = "high_probability"
    min_train = 2
    unmergeable_reason = (
        " cannot run on data that is not in one place: its surrogate is total "
        "variation denoising of the labels in score order, which needs the whole "
        "sorted sample at once"
    )
    unmergeable_alternative = (
        "load the scores and labels as arrays (10**7 rows take about 0.5 GB), or bound "
        "scores perturbed with SechPerturbedClassifier (or perturb_scores) with "
        "NWCalibrationBound(h=...), which runs on chunks and on Dask."
    )

    level_free = False  # the surrogate's lambda depends on delta

    def fit_surrogate(
        self, sorted_scores, sorted_labels, delta, *, out=None, tied=None
    ):
        """The TV surrogate of training data in stable score order (float64 0/1
        labels; ``out``: a float64 scratch buffer of the same length, or None;
        ``tied``: False if the scores are known to be distinct, else None)."""
        m = sorted_scores.shape[0]
        weight = tv_t2(m, tv_delta_share(delta, self.guarantee))
        return fit_tv_surrogate(
            sorted_scores, sorted_labels, weight, out=out, tied=tied
        )

    def passes(self, source, design, *, delta, key_seed, check=None, check_counts=None):
        """The exact in-memory computation: the whole sample sorted once (ties in a
        random order drawn from ``key_seed``, never from the data), then per split
        the prox on its training part and the residuals of its validation part, the
        splits in parallel processes (``n_jobs``)."""
        n = source.n_samples
        order, scores = stable_argsort(source.scores)
        # Group and label of every row in one small integer, gathered into score
        # order at once: a random gather costs the same for a byte as for a double,
        # so one gather of codes instead of one of labels and one of group ids.
        codes = _row_codes(design.groups(0, n), source.labels, design.n_groups)
        codes = codes.take(order)
        del order
        # After the groups, so that each row keeps its group. shuffle_ties permutes
        # the order and the labels of a sample alike; the codes stand in for both
        # (the order is not needed any more).
        unshuffled = SortedSample(order=codes, scores=scores, labels=codes)
        shuffled, _ = shuffle_ties(unshuffled, [], [key_seed, TIE_STREAM])
        codes = shuffled.labels
        sample = _Sample(
            scores=scores,
            labels=codes & 1,
            groups=codes >> 1,
            # shuffle_ties returns its input when no two scores are equal.
            tied=False if shuffled is unshuffled else None,
        )
        del codes, shuffled, unshuffled
        partition = len(design.splits) == design.n_groups
        specs = [
            _Split(
                validation + 1, None if partition else np.add(train, 1, dtype=np.intp)
            )
            for validation, train in design.splits
        ]
        # One task per worker, each running a contiguous group of splits. With
        # several tasks each writes its own buffers: under a threading backend the
        # tasks share this process's sample, and with it ``sample.buffers``.
        groups = np.array_split(np.arange(len(specs)), effective_n_jobs(source.n_jobs))
        groups = [g for g in groups if g.size]
        private = len(groups) > 1
        parts = Parallel(n_jobs=source.n_jobs)(
            delayed(_tv_splits)(self, sample, [specs[k] for k in g], delta, private)
            for g in groups
        )
        splits = tuple(split for part in parts for split in part)
        return Passes(splits, int(np.count_nonzero(source.labels)), sample)

    def fold_terms(self, statistics, delta):
        st = statistics
        terms = tv_bound_terms(
            (st.n_validation, st.mean, st.variance),
            st.n_train,
            delta,
            self.V,
            st.V_hat,
            self.guarantee,
        )
        return FoldTerms(terms)

    def surrogate(self, passes, folds, source, delta):
        """The surrogate on all rows, at the full ``delta``."""
        sample = passes[0].refit
        _, labels, _, prox = sample.buffers
        labels[...] = sample.labels
        return self.fit_surrogate(
            sample.scores, labels, delta, out=prox, tied=sample.tied
        )

    def held_out(self, surrogate, scores, labels=None):
        return _statistics(surrogate, scores, surrogate(scores))


@dataclass(frozen=True)
class _TVCellsMethod(_TVMethod):
    """SPEC section 14.5: one cell bound on all rows (no cross-fitting), at the
    whole ``delta``; its one "split" has every row."""

    unmergeable_reason = (
        " cannot run on data that is not in one place: its cell bound (method="
        "'cells', the default) cuts the sorted sample into blocks of whole ties, "
        "which needs the whole sorted sample at once"
    )

    def passes(self, source, design, *, delta, key_seed, check=None, check_counts=None):
        """All rows sorted once. Tied scores need no random order: every block holds
        whole tie blocks, so no number depends on the order inside a tie."""
        order, scores = stable_argsort(source.scores)
        labels = source.labels.take(order)
        del order
        r = cells_bound(scores, labels, self.V, delta)
        n = int(scores.shape[0])
        info = {
            "n_train": n,
            "n_validation": n,
            "n_blocks": r.n_blocks,
            "largest_block_mass": r.largest_block_mass,
        }
        surrogate = CellMeans(edges=r.edges, values=r.means, n_train=n)
        return Passes(((r, info),), int(np.count_nonzero(labels)), surrogate)

    def fold_terms(self, statistics, delta):
        r = statistics
        # Additive, as every bound's terms (their sum is the unclipped upper bound):
        # the block-means estimate, the excess of the block limits over it, the
        # transfer and the oscillation.
        terms = {
            "validation_mean": r.estimate,
            "block_limits": r.cells_upper - r.estimate,
            "transfer_upper": r.transfer_upper,
            "oscillation": r.oscillation,
        }
        info = {
            "cells_upper": r.cells_upper,
            "cells_lower": r.cells_lower,
            "transfer_lower": r.transfer_lower,
            "epsilon": r.epsilon,
        }
        return FoldTerms(terms, info=info, lower=r.lower)

    def surrogate(self, passes, folds, source, delta):
        return passes[0].refit

    def held_out(self, surrogate, scores, labels=None):
        raise ValueError(
            "TVCalibrationBound(method='cells') has no fixed-split bound on held-out "
            "data (score): its cells and their limits come from the fitted rows "
            "themselves. Fit a new estimator on the held-out data instead."
        )


@dataclass(frozen=True)
class _Sample:
    """All rows in stable score order, tied scores shuffled: float64 ``scores``,
    uint8 0/1 ``labels``, ``groups`` (the design's group id plus one; 0: no group)
    and ``tied`` (False if no two scores are equal, else None: unknown).

    ``buffers`` (training scores, training labels, validation scores, prox
    solution: float64, one row per row) are made on first use, in the process that
    uses them: without workers, the folds and the refit on all rows reuse the same
    pages (a fresh array's first-touch page faults cost more than reusing one);
    parallel tasks, which may share one process (threads), make their own
    (``new_buffers``).
    A fold's surrogate does not outlive its fold (only its numbers are kept), and
    no surrogate keeps a reference into the buffers.
    """

    scores: np.ndarray
    labels: np.ndarray
    groups: np.ndarray
    tied: object = None

    @cached_property
    def buffers(self):
        return self.new_buffers()

    def new_buffers(self):
        n = self.scores.shape[0]
        return np.empty(n), np.empty(n), np.empty(n), np.empty(n)


@dataclass(frozen=True)
class _Split:
    """One split over ``_Sample.groups``: its validation group and its training
    groups (None: every other row, in a partition)."""

    validation: int
    train: np.ndarray = None


def _row_codes(ids, labels, n_groups):
    """``2 * (group id + 1) + label`` of every row, in the smallest unsigned type."""
    codes = np.empty(ids.shape[0], dtype=np.min_scalar_type(2 * n_groups + 1))
    np.add(ids, 1, out=codes, casting="unsafe")
    codes <<= 1
    codes |= labels.astype(codes.dtype, copy=False)
    return codes


def _statistics(surrogate, scores, fitted):
    """``(TVSplitStatistics, info)`` of a TV surrogate at validation ``scores``;
    ``fitted`` (its values there, a fresh array) is overwritten."""
    residuals = np.abs(np.subtract(scores, fitted, out=fitted), out=fitted)
    variance, mean = population_variance(residuals)
    V_hat = surrogate.total_variation
    statistics = TVSplitStatistics(
        int(scores.shape[0]), mean, variance, int(surrogate.n_train), V_hat
    )
    info = {
        "n_train": int(surrogate.n_train),
        "n_validation": int(scores.shape[0]),
        "V_hat": V_hat,
        "n_pieces": int(surrogate.step.values.shape[0]),
    }
    return statistics, info


# Rows per block of the fold gathers: the block's mask and positions stay in the
# cache, instead of an 8-byte position per row written and read back.
_GATHER_BLOCK = 1 << 16


def _split_data(sample, split, buffers):
    """The training scores and float64 labels and the validation scores of one split,
    in score order, written into ``buffers`` (as ``_Sample.buffers``)."""
    groups, scores, labels = sample.groups, sample.scores, sample.labels
    train_scores, train_labels, validation, _ = buffers
    mask = np.empty(min(_GATHER_BLOCK, groups.shape[0]), dtype=bool)
    label_bytes = np.empty(mask.shape[0], dtype=np.uint8)
    m = n_validation = 0
    for start in range(0, groups.shape[0], _GATHER_BLOCK):
        block = slice(start, start + _GATHER_BLOCK)
        g = groups[block]
        if split.train is None:  # a partition: training is every other row
            train = np.not_equal(g, split.validation, out=mask[: g.shape[0]])
        else:
            train = np.isin(g, split.train)
        # mode="clip" (the positions are valid) lets take write into ``out``
        # unbuffered.
        rows = np.flatnonzero(train)
        stop = m + rows.shape[0]
        np.take(scores[block], rows, out=train_scores[m:stop], mode="clip")
        # Bytes gathered, then widened in the cache: less memory traffic than a
        # gather of float64 labels.
        gathered = np.take(
            labels[block], rows, out=label_bytes[: rows.shape[0]], mode="clip"
        )
        train_labels[m:stop] = gathered
        m = stop
        rows = np.flatnonzero(np.equal(g, split.validation, out=mask[: g.shape[0]]))
        stop = n_validation + rows.shape[0]
        np.take(scores[block], rows, out=validation[n_validation:stop], mode="clip")
        n_validation = stop
    return train_scores[:m], train_labels[:m], validation[:n_validation]


def _tv_splits(method, sample, splits, delta, private=False):
    """``(statistics, info)`` of each split of a ``_Sample``: a per-split worker that
    ``Parallel`` can ship, reusing buffers for the data of every split: the
    sample's, or (``private``, when other tasks may run in the same process) its
    own."""
    buffers = sample.new_buffers() if private else sample.buffers
    prox = buffers[3]
    out = []
    for split in splits:
        scores, labels, validation = _split_data(sample, split, buffers)
        surrogate = method.fit_surrogate(
            scores, labels, delta, out=prox[: scores.shape[0]], tied=sample.tied
        )
        out.append(
            _statistics(surrogate, validation, surrogate.evaluate_sorted(validation))
        )
    return out
