"""Where the rows come from: arrays in memory, an iterable of chunks, or Dask.

A bound on mergeable statistics (``_surrogates/nw/``) is two map-reduce passes
over the rows. A *source* runs one pass: it calls ``fn(chunk)`` on every chunk of
validated rows (:class:`Chunk`) and merges the results with ``+`` in row order, so
that the result depends on the rows, not on how they were cut. Three sources:

- :class:`ArraySource`: validated arrays in memory, in blocks of a fixed size (the
  one-chunk case of the same code, and threads for ``n_jobs``);
- :class:`IterableSource`: a re-iterable of ``(y_true, y_prob)`` chunks (arrays,
  pandas Series, a file read by row groups), read once per pass;
- :class:`DaskSource`: two dask arrays or DataFrame columns; each pass is one chain
  of ``dask.delayed`` additions over the blocks, computed with the active scheduler.

Each source validates its chunks the way ``fit`` validates arrays, and gives every
row its global index (``Chunk.start``), from which the counter-based fold ids and
subsample keys of ``_splitting`` are drawn.
"""

import hashlib
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import effective_n_jobs
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_consistent_length, column_or_1d

from ._validation import (
    _binary_classes,
    _check_range,
    _positive_index,
    _probabilities_array,
    _scores_from_array,
    _swapped_message,
)

# Rows per block of an in-memory pass: big enough that the per-block grids (a few MB)
# cost little, small enough that threads share the work. Fixed, so that ``n_jobs``
# changes no result (the blocks and the merge order are the same).
_ARRAY_BLOCK = 2**21

# How the arguments go, for the message when labels and scores look swapped.
_CHUNK_CALL = "Each chunk of fit_chunks is a pair (y_true, y_prob): the labels first."
_DASK_CALL = (
    "On Dask input, fit takes the scores first (fit(y_prob, y_true)) and the "
    "functions the labels first (nw_bound(y_true, y_prob))."
)


@dataclass
class Chunk:
    """Validated rows ``start .. start + n - 1``: float64 scores in [0, 1] and float64
    0/1 labels (1 for the positive class)."""

    scores: np.ndarray
    labels: np.ndarray
    start: int

    @property
    def n(self):
        return self.scores.shape[0]


def _merge(results):
    """The sum of ``results`` (in place into the first, which the caller's ``fn``
    made for this merge)."""
    total = None
    for result in results:
        if total is None:
            total = result
        else:
            total += result
    return total


class ArraySource:
    """Validated arrays in memory (``labels`` 0/1, any numeric dtype)."""

    def __init__(self, scores, labels, n_jobs=None):
        self.scores = scores
        self.labels = labels
        self.n_jobs = n_jobs
        self.n_samples = scores.shape[0]

    def _chunk(self, start):
        stop = min(start + _ARRAY_BLOCK, self.n_samples)
        labels = self.labels[start:stop]
        return Chunk(self.scores[start:stop], labels, start)

    def map_reduce(self, fn):
        starts = range(0, self.n_samples, _ARRAY_BLOCK)
        if effective_n_jobs(self.n_jobs) == 1 or len(starts) == 1:
            return _merge(fn(self._chunk(s)) for s in starts)
        results = Parallel(n_jobs=self.n_jobs, prefer="threads")(
            delayed(fn)(self._chunk(s)) for s in starts
        )
        return _merge(results)


class _LabelCheck:
    """The labels seen so far across chunks, checked as ``fit`` checks them once the
    last chunk is in: two classes, and ``pos_label`` among them (or labels {0, 1},
    {-1, 1} or booleans without it). ``call`` says how the arguments go, for the
    message when labels and scores look swapped."""

    def __init__(self, pos_label, call=_CHUNK_CALL):
        self.pos_label = pos_label
        self.positive = 1 if pos_label is None else pos_label
        self.call = call
        self.seen = set()

    def labels_01(self, y, scores):
        values = pd.unique(y)
        self.seen.update(values.tolist())
        if len(self.seen) > 2:
            try:
                _binary_classes(np.array(sorted(self.seen, key=repr)))
            except ValueError as exc:
                # Scores where the labels go: fit's message, not "got 20000 classes".
                message = _swapped_message(np.asarray(y), scores, self.call)
                if message is None:
                    raise
                raise ValueError(message) from exc
        return (y == self.positive).astype(np.float64)

    def classes(self):
        classes = _binary_classes(np.array(list(self.seen)))
        _positive_index(classes, self.pos_label)
        return classes


def _validated_chunk(y_true, y_prob, k, labels):
    """``(scores, labels 0/1)`` of chunk ``k`` (for messages), or a clear error."""
    X = _probabilities_array(y_prob, f"y_prob of chunk {k}")
    if X.ndim == 2 and X.shape[1] == 2:
        raise ValueError(
            f"Chunk {k}: y_prob has two columns; chunked input takes the positive "
            "class's probabilities as one column (the column of pos_label), so that "
            "no chunk has to know the classes of the others."
        )
    y = column_or_1d(np.asarray(y_true))
    check_consistent_length(y, X)
    scores = _scores_from_array(X, "y_prob")
    if scores.shape[0]:
        _check_range(scores)
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    return scores, labels.labels_01(y, scores)


def _as_pair(chunk, k):
    if isinstance(chunk, pd.DataFrame):
        if chunk.shape[1] != 2:
            raise ValueError(
                f"Chunk {k} is a DataFrame with {chunk.shape[1]} columns; expected "
                "two, the labels then the scores (y_true, y_prob)."
            )
        return chunk.iloc[:, 0].to_numpy(), chunk.iloc[:, 1].to_numpy()
    try:
        y_true, y_prob = chunk
    except (TypeError, ValueError):
        raise TypeError(
            f"Chunk {k} is a {type(chunk).__name__}; each chunk must be a pair "
            "(y_true, y_prob) of arrays or a DataFrame with those two columns."
        ) from None
    return y_true, y_prob


class IterableSource:
    """A re-iterable of ``(y_true, y_prob)`` chunks, or a function returning a fresh
    iterator of them (every pass reads the chunks again, in the same order)."""

    def __init__(self, chunks, pos_label=None, n_samples=None):
        if not callable(chunks) and iter(chunks) is chunks:
            raise TypeError(
                "chunks is an iterator, which can be read only once; the bound reads "
                "the data twice. Pass a list of chunks, or a function that returns a "
                "fresh iterator of them (for example lambda: read_chunks(path))."
            )
        self._chunks = chunks
        self.pos_label = pos_label
        self.classes = None
        self.digest = None
        self._passes = 0
        self._rows = None
        if n_samples is None:
            # The grid of the statistics depends on the number of rows: count them.
            n_samples = sum(
                len(_as_pair(c, k)[1]) for k, c in enumerate(self._iterate())
            )
        self.n_samples = int(n_samples)

    def _iterate(self):
        return iter(self._chunks() if callable(self._chunks) else self._chunks)

    def map_reduce(self, fn):
        """One pass. The data fingerprint (``_certificate``) hashes all scores, then
        all labels: the scores on the first pass, the labels on the second."""
        first_pass = self._passes == 0
        self._passes += 1
        labels = _LabelCheck(self.pos_label)
        if first_pass:
            self._digest = hashlib.sha256()
        start, results = 0, None
        for k, chunk in enumerate(self._iterate()):
            scores, y01 = _validated_chunk(*_as_pair(chunk, k), k, labels)
            if first_pass:
                self._digest.update(np.ascontiguousarray(scores, dtype="<f8").data)
            elif self.digest is None:
                self._digest.update(y01.astype(np.uint8).data)
            result = fn(Chunk(scores, y01, start))
            results = result if results is None else _merge((results, result))
            start += scores.shape[0]
        if start != self.n_samples:
            raise ValueError(
                f"chunks gave {start} rows on pass {self._passes}, but "
                f"{self.n_samples} were expected (n_samples, or the rows counted "
                "before); the bound reads the data more than once and needs the same "
                "rows every time."
            )
        if first_pass:
            self.classes = labels.classes()
        elif self.digest is None:
            self.digest = self._digest.hexdigest()
        return results


# Parquet read by Dask is re-planned at most this many bytes (uncompressed, from the
# file's metadata) a partition, split at row groups: by default dd.read_parquet makes
# one partition of a file below 512 MiB, which a pass would hold whole.
_PARQUET_BLOCKSIZE = "8MiB"


def _by_row_groups(series):
    """``series`` with its Parquet reads re-planned in partitions of row groups (at
    most ``_PARQUET_BLOCKSIZE``), or None.

    Only when the rows do not depend on the partitioning: every step between the
    read and ``series`` is row-wise (a column, a comparison, a row filter), no
    ``partitions[...]`` nor ``map_partitions``; else (or with no Parquet read) None,
    and the partitions stay those the user made.
    """
    try:
        from dask.dataframe.dask_expr._collection import new_collection
        from dask.dataframe.dask_expr._expr import Elemwise, Filter
        from dask.dataframe.dask_expr.io.parquet import ReadParquetFSSpec
    except ImportError:  # another Dask: its partitions as they are
        return None
    expr = series.expr
    reads = []
    for node in expr.walk():
        if isinstance(node, ReadParquetFSSpec):
            if node.operand("_partitions") is not None:
                return None
            reads.append(node)
        elif not isinstance(node, (Elemwise, Filter)):
            return None
    if not reads:
        return None
    for node in reads:
        replan = {
            "split_row_groups": "adaptive",
            "blocksize": _PARQUET_BLOCKSIZE,
            "_dataset_info_cache": None,
        }
        expr = expr.substitute(node, node.substitute_parameters(replan))
    return new_collection(expr)


def _frame_of_columns(y_true, y_prob):
    """One dask DataFrame ``[y_true, y_prob]`` of two Series partitioned alike (from
    one DataFrame, row-wise): each partition then reads both columns once and no
    other column. None for anything else (read as arrays, row by row position)."""
    try:
        import dask.dataframe as dd
        from dask.dataframe.dask_expr._expr import are_co_aligned
    except ImportError:  # a Dask without its expression planner
        return None
    if not (isinstance(y_true, dd.Series) and isinstance(y_prob, dd.Series)):
        return None
    planned = _by_row_groups(y_true), _by_row_groups(y_prob)
    if planned[0] is not None and planned[1] is not None:  # both, or neither
        y_true, y_prob = planned
    # Not partitioned alike, assign would align the rows by index, not by position.
    if not are_co_aligned(y_true.expr, y_prob.expr):
        return None
    return y_true.to_frame(name="y_true").assign(y_prob=y_prob)


class _Partition:
    """One partition of a dask DataFrame as its own small graph, computed (with the
    synchronous scheduler) inside the block that uses it: a pass then reads a
    partition when its block runs. As tasks of their own, partitions are read ahead
    by the scheduler's idle threads while the blocks wait for the running total
    (34 of 40 partitions at once, measured), which is the memory the pass saves."""

    def __init__(self, graph, key):
        self.graph = graph
        self.key = key

    def compute(self):
        from dask.local import get_sync

        return get_sync(self.graph, self.key)


def _partitions(frame):
    """The :class:`_Partition` of every partition of ``frame``, in order."""
    from dask.optimization import cull

    frame = frame.optimize()
    keys = frame.__dask_keys__()
    graph, dependencies = cull(dict(frame.__dask_graph__()), keys)
    partitions = []
    for key in keys:
        own, stack = {}, [key]
        while stack:
            k = stack.pop()
            if k not in own:
                own[k] = graph[k]
                stack.extend(dependencies[k])
        partitions.append(_Partition(own, key))
    return partitions


def _partition_lengths(frame):
    """The rows of each partition of ``frame``: from the Parquet metadata when Dask's
    planner knows them without reading (no filter), else one pass over the
    partitions, one at a time."""
    try:
        from dask.dataframe.dask_expr._expr import Lengths, Literal
    except ImportError:  # another Dask: count them
        pass
    else:
        known = Lengths(frame.expr).optimize()
        if isinstance(known, Literal) and len(known.value) == frame.npartitions:
            return list(known.value)
    return list(frame.map_partitions(len).compute())


class DaskSource:
    """Scores and labels on Dask: two dask arrays of the same length, or two columns
    of dask DataFrames.

    Each pass is one chain of additions over the blocks (array chunks, or DataFrame
    partitions holding both columns), each block cut in slices of ``_ARRAY_BLOCK``
    rows as ``ArraySource`` cuts arrays: a pass holds the running total and the
    blocks the scheduler runs at once, never the data. Parquet read with
    ``dd.read_parquet`` is re-planned by row groups (``_by_row_groups``).
    """

    def __init__(self, y_true, y_prob, pos_label=None, call=_DASK_CALL):
        self.pos_label = pos_label
        self.call = call
        self.classes = None
        self.digest = None
        frame = _frame_of_columns(y_true, y_prob)
        if frame is not None:
            sizes = _partition_lengths(frame)
            self._blocks = [(part,) for part in _partitions(frame)]
        else:
            sizes, self._blocks = self._array_blocks(y_true, y_prob)
        self._sizes = [int(size) for size in sizes]
        self._starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(int)
        self.n_samples = int(np.sum(sizes))

    @staticmethod
    def _array_blocks(y_true, y_prob):
        """The chunk sizes and the ``(labels, scores)`` blocks of two arrays."""
        import dask.array as da

        with warnings.catch_warnings():
            # String labels become an object array: what the blocks are checked on.
            warnings.filterwarnings("ignore", "Dask currently has limited support")
            y_true, y_prob = (
                x.to_dask_array(lengths=True)
                if hasattr(x, "to_dask_array")
                else da.asarray(x)
                for x in (y_true, y_prob)
            )
        if y_prob.ndim != 1 or y_true.ndim != 1:
            raise ValueError(
                "Dask input must be two 1-D arrays (or Series): the labels and the "
                f"positive class's probabilities; got shapes {y_true.shape} and "
                f"{y_prob.shape}."
            )
        if np.isnan(y_prob.shape[0]) or np.isnan(y_true.shape[0]):
            y_true, y_prob = y_true.compute_chunk_sizes(), y_prob.compute_chunk_sizes()
        if y_true.shape[0] != y_prob.shape[0]:
            raise ValueError(
                "Found input variables with inconsistent numbers of samples: "
                f"[{y_true.shape[0]}, {y_prob.shape[0]}]"
            )
        y_true = y_true.rechunk(y_prob.chunks)
        # The blocks unoptimised: optimising each array's graph on its own would
        # inline what they share (two columns of one generated block) into both, and
        # compute it twice per pass.
        blocks = zip(
            y_true.to_delayed(optimize_graph=False).ravel(),
            y_prob.to_delayed(optimize_graph=False).ravel(),
        )
        return y_prob.chunks[0], list(blocks)

    def map_reduce(self, fn):
        import dask

        first_pass = self.classes is None
        pos, call = self.pos_label, self.call

        def block(*data, start, size, k, after=None):
            # ``after``: the running total of block k - ahead is done (None).
            if len(data) == 1:  # a DataFrame partition [y_true, y_prob]
                part = data[0].compute()
                y, s = (part.iloc[:, j].to_numpy() for j in (0, 1))
            else:
                y, s = data
            labels = _LabelCheck(pos, call)
            n = len(s)
            if len(y) != n or n != size:  # the rows' indices (folds) hang on it
                raise ValueError(
                    f"Block {k} of the Dask input has {len(y)} labels and {n} scores; "
                    f"{size} rows were expected (its length before the passes)."
                )

            def slices():
                for a in range(0, n, _ARRAY_BLOCK) if n else (0,):
                    stop = a + _ARRAY_BLOCK
                    scores, y01 = _validated_chunk(y[a:stop], s[a:stop], k, labels)
                    yield fn(Chunk(scores, y01, start + a))

            return (_merge(slices()), frozenset(labels.seen))

        def add(total, b):
            # In place into the running total, which only this task reads.
            statistics, seen = total
            statistics += b[0]
            return (statistics, seen | b[1])

        # A chain in block order (the same additions for the same blocks): each
        # block's result goes into the running total as it comes. Block k waits for
        # the total of block k - ahead, so that at most ``ahead`` results (tens of MB
        # each, as large as the statistics) wait to be added, however the scheduler
        # orders the blocks; a tree would hold one partial total per level.
        ahead = _threads()
        total, done = None, []
        for k, data in enumerate(self._blocks):
            after = done[k - ahead] if k >= ahead else None
            start, size = int(self._starts[k]), self._sizes[k]
            part = dask.delayed(block)(*data, start=start, size=size, k=k, after=after)
            total = part if total is None else dask.delayed(add)(total, part)
            done.append(dask.delayed(_nothing)(total))
        result, seen = dask.compute(total)[0]
        if first_pass:
            labels = _LabelCheck(pos, call)
            labels.seen = set(seen)
            self.classes = labels.classes()
        return result


def _nothing(_):
    """A token that its argument is computed (not the argument: no copy of it)."""
    return None


def _threads():
    """How many blocks a Dask pass computes ahead of its running total: the threads
    of the active scheduler (a distributed client's, else the local pool's), at
    least 2."""
    import dask
    from dask.system import CPU_COUNT

    try:
        from distributed import get_client

        return max(2, sum(get_client().nthreads().values()))
    except (ImportError, ValueError):  # no distributed, or no client
        return max(2, dask.config.get("num_workers", None) or CPU_COUNT)


def is_dask_collection(x):
    """Whether ``x`` is a dask collection (without importing dask when it is not)."""
    return type(x).__module__.split(".")[0] == "dask"


def check_random_seed(random_state):
    """The int seed of the counter-based fold ids and subsample keys: one draw from
    ``check_random_state(random_state)``, so that ``random_state=0`` and a fresh
    ``RandomState(0)`` give the same folds, as for every other random choice."""
    from sklearn.utils import check_random_state

    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
