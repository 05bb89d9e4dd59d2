"""The command line on files larger than memory: ``skcalbound FILE --chunksize ROWS``.

The file is read in chunks of ``ROWS`` rows, two columns only (Parquet by row
groups with pyarrow, CSV with pandas' ``chunksize``), and each bound is fitted with
``fit_chunks``: every pass reopens the file, so at most one chunk is in memory. The
chunks are checked and turned into float scores and 0/1 labels exactly as the
in-memory command does (same messages, global row numbers), so a chunked run prints
the numbers and the audit record (fingerprint included) of an in-memory run on the
same file: ``skcalbound verify`` reads either.
"""

import numpy as np
import pandas as pd

from ._binned_ece import uniform_bins
from ._cli import CLIError, _as_label, _labels_text, _plain


def _format(path, file_format):
    if file_format is not None:
        return file_format
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq"):
        return "parquet"
    if ".csv" in suffixes[-2:]:
        return "csv"
    raise CLIError(
        f"{path}: cannot tell the format from the extension; name the file .csv or "
        ".parquet, or pass --format csv|parquet"
    )


class ChunkedFile:
    """A callable returning a fresh iterator of ``(labels 0/1, scores)`` chunks of one
    file, checked as ``_cli.scores_and_labels`` checks a whole file.

    The first complete pass also gathers what the report needs besides the bounds:
    the distinct labels (exactly two), and the per-bin sums of the uniform binned ECE
    (``binned_ece``'s bins per chunk, summed).
    """

    def __init__(self, path, args):
        from pathlib import Path

        self.path = Path(path)
        if not self.path.is_file():
            raise CLIError(f"{self.path}: no such file")
        self.format = _format(self.path, args.format)
        self.scores_column, self.labels_column = args.scores, args.labels
        self.pos_label = args.pos_label
        self.chunksize = args.chunksize
        self.n_bins = args.n_bins
        self.positive = None
        self.seen = None
        self.n_samples = None
        self.ece_sums = None
        self._complete = False
        if self.format == "parquet":
            try:
                import pyarrow.parquet as pq
            except ImportError as exc:
                raise CLIError(
                    f"{self.path}: reading Parquet needs pyarrow: pip install "
                    f"'skcalbound[cli]' ({exc})"
                ) from exc
            try:
                meta = pq.ParquetFile(self.path)
            except Exception as exc:
                message = " ".join(str(exc).split()) or type(exc).__name__
                raise CLIError(
                    f"{self.path}: not a readable parquet file: {message}"
                ) from exc
            names = meta.schema_arrow.names
            self._check_columns(names)
            self.n_samples = int(meta.metadata.num_rows)

    def _check_columns(self, names):
        for name, option in (
            (self.scores_column, "--scores"),
            (self.labels_column, "--labels"),
        ):
            if name not in names:
                shown = ", ".join(map(str, list(names)[:20]))
                raise CLIError(
                    f"{self.path}: no column {name!r} (columns: {shown}); "
                    f"pass {option} NAME"
                )

    def _frames(self):
        columns = [self.labels_column, self.scores_column]
        if self.format == "parquet":
            import pyarrow.parquet as pq

            # Without pre-buffering, pyarrow reads a column chunk at a time (measured
            # on 3 * 10**7 rows read twice: peak RSS 527 MB with its default, 199 MB).
            reader = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
            for batch in reader.iter_batches(
                batch_size=self.chunksize, columns=columns
            ):
                yield batch.to_pandas()
            return
        try:
            reader = pd.read_csv(self.path, usecols=columns, chunksize=self.chunksize)
        except ValueError as exc:
            header = pd.read_csv(self.path, nrows=0).columns
            self._check_columns(header)
            raise CLIError(f"{self.path}: {exc}") from exc
        with reader:
            yield from reader

    def _convert(self, frame, start):
        scores = frame[self.scores_column]
        numeric = pd.to_numeric(scores, errors="coerce").to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~((numeric >= 0.0) & (numeric <= 1.0))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise CLIError(
                f"{self.path}: column {self.scores_column!r} must hold probabilities "
                f"in [0, 1] (no missing values); row {start + row} holds "
                f"{_plain(scores.iloc[row])!r}"
            )
        labels = frame[self.labels_column]
        missing = labels.isna().to_numpy()
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise CLIError(
                f"{self.path}: column {self.labels_column!r} has a missing label in "
                f"row {start + row}"
            )
        values = labels.to_numpy()
        if values.dtype.kind not in "biuf":
            values = values.astype(str)
        if self.positive is None:
            self.positive = self._positive(values)
        if not self._complete:
            self.seen.update(pd.unique(values).tolist())
            if len(self.seen) > 2:
                shown = _labels_text(sorted(self.seen, key=repr)[:5])
                raise CLIError(
                    f"{self.path}: column {self.labels_column!r} must hold exactly two "
                    f"distinct labels (binary classification); found more: {shown}, ..."
                )
        return (values == self.positive).astype(int), numeric

    def _positive(self, values):
        if self.pos_label is not None:
            return _as_label(self.pos_label, values, self.labels_column)
        kind = values.dtype.kind
        if kind == "b":
            return True
        if kind in "iuf":
            return 1
        raise CLIError(
            f"{self.path}: column {self.labels_column!r} holds text labels "
            f"({_labels_text(pd.unique(values)[:2])}, ...): say which is the positive "
            f"class (the one whose probability column {self.scores_column!r} holds) "
            "with --pos-label LABEL"
        )

    def _check_labels(self):
        classes = np.sort(np.array(list(self.seen)))
        if len(classes) != 2:
            raise CLIError(
                f"{self.path}: column {self.labels_column!r} must hold exactly two "
                f"distinct labels (binary classification); found {len(classes)}: "
                f"{_labels_text(classes)}"
            )
        if (
            self.pos_label is None
            and classes.dtype.kind != "b"
            and classes.tolist() not in ([0, 1], [-1, 1])
        ):
            raise CLIError(
                f"{self.path}: column {self.labels_column!r} holds the labels "
                f"{_labels_text(classes)}: say which is the positive class (the one "
                f"whose probability column {self.scores_column!r} holds) with "
                "--pos-label LABEL"
            )
        if self.positive not in classes.tolist():
            raise CLIError(
                f"{self.path}: --pos-label {self.pos_label!r} is not a label of column "
                f"{self.labels_column!r}, whose labels are {_labels_text(classes)}"
            )

    def __call__(self):
        first = not self._complete
        if first:
            self.seen = set()
            sums = np.zeros((2, self.n_bins))
        start = 0
        for frame in self._frames():
            labels, scores = self._convert(frame, start)
            if first:
                bins = uniform_bins(scores, self.n_bins)
                sums[0] += np.bincount(bins, weights=scores, minlength=self.n_bins)
                sums[1] += np.bincount(bins, weights=labels, minlength=self.n_bins)
            start += scores.shape[0]
            yield labels, scores
        if first:
            if start == 0:
                raise CLIError(f"{self.path}: the file has no rows")
            self._check_labels()
            self.ece_sums = sums
            self.n_samples = start
            self._complete = True

    def binned_ece(self):
        return float(np.abs(self.ece_sums[0] - self.ece_sums[1]).sum() / self.n_samples)


def compute_chunked(args, estimators, reader, result_of):
    """Fit every estimator on the chunks of ``reader``; ``result_of(name, est, caught)``
    is the in-memory command's result row."""
    import warnings

    results = []
    for name, est in estimators.items():
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est.fit_chunks(reader, n_samples=reader.n_samples)
        except (ValueError, TypeError) as exc:
            raise CLIError(f"{name}: {exc}") from exc
        results.append(result_of(name, est, caught))
    if not reader._complete:  # no bound read the file through
        for _ in reader():
            pass
    return results
