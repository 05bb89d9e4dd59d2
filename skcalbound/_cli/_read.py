"""Reading the scores and labels columns of a CSV or Parquet file, whole or in chunks.

One format detection, one check of the two columns (the same messages, with rows
numbered in the file, whether the file is read whole or ``--chunksize`` rows at a
time), and the labels turned into 0/1 with the positive class. The bounds' own
checks (``skcalbound._validation``, ``skcalbound._chunks``) then run in ``fit`` and
``fit_chunks``. See docs/internals/cli.rst.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from .._binned_ece import bin_sums, ece_of_bin_sums, uniform_bins
from .._validation import _binary_classes, _positive_index
from ._errors import CLIError

_PARQUET_SUFFIXES = (".parquet", ".pq")


def plain(value):
    """A numpy scalar as the Python value it holds (for messages and JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def labels_text(classes):
    """Labels as the messages list them: ``'churn', 'stay'``."""
    return ", ".join(repr(plain(c)) for c in classes)


def file_format(path, given=None):
    """``given``, else ``"csv"`` or ``"parquet"`` from the extension of ``path``."""
    if given is not None:
        return given
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in _PARQUET_SUFFIXES:
        return "parquet"
    if ".csv" in suffixes[-2:]:
        return "csv"
    raise CLIError(
        f"{path}: cannot tell the format from the extension; name the file .csv or "
        ".parquet, or pass --format csv|parquet"
    )


def _existing(path):
    path = Path(path)
    if not path.is_file():
        raise CLIError(f"{path}: no such file")
    return path


def _unreadable(path, kind, exc):
    """The CLIError of a file pandas or pyarrow cannot read."""
    if isinstance(exc, ImportError):
        return CLIError(
            f"{path}: reading Parquet needs pyarrow: pip install 'skcalbound[cli]' "
            f"({exc})"
        )
    message = " ".join(str(exc).split()) or type(exc).__name__
    return CLIError(f"{path}: not a readable {kind} file: {message}")


def _header(path, kind):
    """The column names of ``path``, read from its schema or first line."""
    if kind == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(path).names
    return list(pd.read_csv(path, nrows=0).columns)


def read_table(path, given_format=None, columns=None):
    """The data frame in ``path`` (only ``columns`` when all are in the file, else
    every column, for the messages naming them); CLIError if it cannot be read."""
    path = _existing(path)
    kind = file_format(path, given_format)
    try:
        if columns is not None:
            columns = list(dict.fromkeys(columns))
            if not set(columns) <= set(_header(path, kind)):
                columns = None
        if kind == "parquet":
            return pd.read_parquet(path, columns=columns)
        return pd.read_csv(path, usecols=columns)
    except Exception as exc:  # pandas and pyarrow raise many types for bad files
        raise _unreadable(path, kind, exc) from exc


def check_column(names, name, option, path):
    """CLIError unless ``name`` is among the column ``names`` (``option`` names it)."""
    names = list(names)
    if name in names:
        return
    shown = ", ".join(map(repr, names[:20]))  # quoted: ' y_true' is not 'y_true'
    more = ", ..." if len(names) > 20 else ""
    hint = f"pass {option} NAME"
    if names and all(_is_number(n) for n in names):
        hint = (
            "its first line holds numbers, not column names: the file seems to have "
            "no header row; add one (e.g. y_prob,y_true)"
        )
    elif len(names) == 1 and any(c in str(names[0]) for c in "\t;|"):
        hint = (
            "its one column's name holds a tab, ';' or '|': the file seems to use "
            "another delimiter than ','; write it comma-separated"
        )
    raise CLIError(f"{path}: no column {name!r} (columns: {shown}{more}); {hint}")


def _is_number(text):
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _as_label(text, labels, labels_column):
    """``--pos-label`` (a string) as a value of the labels column's type."""
    kind = labels.dtype.kind
    if kind == "b":
        value = {"true": True, "1": True, "false": False, "0": False}.get(
            text.strip().lower()
        )
        if value is None:
            raise CLIError(
                f"--pos-label {text!r}: column {labels_column!r} holds booleans; pass "
                "--pos-label True or --pos-label False"
            )
        return value
    if kind in "iuf":
        try:
            value = float(text)
        except ValueError:
            raise CLIError(
                f"--pos-label {text!r}: column {labels_column!r} holds numbers; pass "
                "one of its labels"
            ) from None
        return int(value) if kind in "iu" and value.is_integer() else value
    return text


class Columns:
    """The scores and labels columns of the file ``path``, checked a frame at a time.

    ``whole``: the first frame is the whole file (its messages count every bad row
    and every label); else frames are chunks, rows numbered from their ``start``.
    ``positive`` is the positive label once a frame has been converted; ``seen``
    the distinct labels so far, in the order they appear.
    """

    def __init__(
        self, path, scores_column, labels_column, pos_label, *, whole, from_record=False
    ):
        self.path = path
        self.scores_column, self.labels_column = scores_column, labels_column
        self.pos_label = pos_label
        self.from_record = from_record  # pos_label read from an audit record
        self.whole = whole
        self.positive = None
        self.seen = {}

    def check_present(self, names):
        """CLIError unless both columns are among ``names``."""
        check_column(names, self.scores_column, "--scores", self.path)
        check_column(names, self.labels_column, "--labels", self.path)

    def convert(self, frame, start=0):
        """``(float scores, 0/1 labels)`` of ``frame``, rows ``start ...`` of the
        file."""
        if self.whole and len(frame) == 0:
            raise CLIError(f"{self.path}: the file has no rows")
        scores = self._scores(frame[self.scores_column], start)
        labels = frame[self.labels_column]
        missing = labels.isna().to_numpy()
        if missing.any():
            row = start + int(np.flatnonzero(missing)[0])
            raise CLIError(
                f"{self.path}: column {self.labels_column!r} has a missing label in "
                f"row {row}"
            )
        values = labels.to_numpy()
        if values.dtype.kind not in "biuf":
            values = values.astype(str)  # text labels, compared as written
        self._see(values)
        if self.positive is None:
            self.positive = self._positive(values)
        return scores, (values == self.positive).astype(int)

    def _scores(self, column, start):
        scores = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~((scores >= 0.0) & (scores <= 1.0))  # also NaN, inf, text
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            n_bad = int(bad.sum())
            count = ""
            if self.whole:
                count = f" ({n_bad} bad row{'s' if n_bad > 1 else ''} in all)"
            hint = ""
            finite = scores[np.isfinite(scores)]
            # Most above 1, none above 100: percentages.
            if (
                finite.size
                and finite.min() >= 0.0
                and finite.max() <= 100.0
                and np.mean(finite > 1.0) > 0.5
            ):
                hint = "; they look like percentages: divide them by 100"
            raise CLIError(
                f"{self.path}: column {self.scores_column!r} must hold probabilities "
                f"in [0, 1] (no missing values); data row {start + row} (counted "
                f"from 0 after the header) holds {plain(column.iloc[row])!r}{count}"
                f"{hint}"
            )
        return scores

    def _see(self, values):
        self.seen.update(dict.fromkeys(pd.unique(values).tolist()))
        if self.whole:
            self.check_classes()
        elif len(self.seen) > 2:
            raise CLIError(
                f"{self.path}: column {self.labels_column!r} must hold exactly two "
                "distinct labels (binary classification); found more: "
                f"{labels_text(list(self.seen)[:5])}, ..."
            )

    def _positive(self, values):
        """The positive label, from ``--pos-label`` or the labels' type."""
        if self.pos_label is not None:
            return _as_label(self.pos_label, values, self.labels_column)
        if values.dtype.kind == "b":
            return True
        if values.dtype.kind in "iuf":
            return 1
        raise CLIError(
            f"{self.path}: column {self.labels_column!r} holds text labels "
            f"({labels_text(list(self.seen)[:2])}, ...): say which is the positive "
            f"class (the one whose probability column {self.scores_column!r} holds) "
            "with --pos-label LABEL"
        )

    def check_classes(self):
        """CLIError unless the labels seen are two, one of them the positive class
        (``--pos-label``, else 1 of 0/1 or -1/1, or True): the library's rules
        (``_validation``), the file's words."""
        found = list(self.seen)
        try:
            classes = _binary_classes(np.array(found))
        except ValueError:
            more = ", ..." if len(found) > 5 else ""
            raise CLIError(
                f"{self.path}: column {self.labels_column!r} must hold exactly two "
                f"distinct labels (binary classification); found {len(found)}: "
                f"{labels_text(found[:5])}{more}"
            ) from None
        positive = self.pos_label
        if positive is not None:
            positive = _as_label(positive, classes, self.labels_column)
        try:
            _positive_index(classes, positive)
        except ValueError:
            if positive is None:
                raise CLIError(
                    f"{self.path}: column {self.labels_column!r} holds the labels "
                    f"{labels_text(classes)}: say which is the positive class (the "
                    f"one whose probability column {self.scores_column!r} holds) "
                    "with --pos-label LABEL"
                ) from None
            if self.from_record:
                raise CLIError(
                    f"{self.path}: the record's positive label {self.pos_label!r} is "
                    f"not a label of column {self.labels_column!r}, whose labels are "
                    f"{labels_text(classes)}: is this the file the record was made "
                    "on? (--pos-label LABEL overrides the record's)"
                ) from None
            raise CLIError(
                f"{self.path}: --pos-label {self.pos_label!r} is not a label of "
                f"column {self.labels_column!r}, whose labels are "
                f"{labels_text(classes)}"
            ) from None


def scores_and_labels(
    frame, scores_column, labels_column, path, pos_label=None, from_record=False
):
    """Float scores, the labels as 0/1 and the positive label of a whole file's
    ``frame``; CLIError for bad values.

    The positive class is ``pos_label`` (a string, read as the labels' type; read
    from an audit record if ``from_record``); without it the labels must be 0/1, -1/1
    or booleans, and 1 (True) is positive, as in scikit-learn.
    """
    columns = Columns(
        path,
        scores_column,
        labels_column,
        pos_label,
        whole=True,
        from_record=from_record,
    )
    columns.check_present(frame.columns)
    scores, labels = columns.convert(frame)
    return scores, labels, plain(columns.positive)


class ChunkedFile:
    """A callable returning a fresh iterator of ``(labels 0/1, scores)`` chunks of one
    file (``args.chunksize`` rows, two columns), checked by :class:`Columns`.

    The first complete pass also gathers what the report needs besides the bounds:
    the number of rows, the positive label and the binned ECE's per-bin sums.
    """

    def __init__(self, args):
        self.path = _existing(args.file)
        self.format = file_format(self.path, args.format)
        self.columns = Columns(
            self.path, args.scores, args.labels, args.pos_label, whole=False
        )
        self.chunksize = args.chunksize
        self.n_bins = args.n_bins
        self.n_samples = None
        self.ece_sums = None
        self.complete = False
        if self.format == "parquet":
            try:
                import pyarrow.parquet as pq

                meta = pq.ParquetFile(self.path)
            except Exception as exc:
                raise _unreadable(self.path, self.format, exc) from exc
            self.columns.check_present(meta.schema_arrow.names)
            self.n_samples = int(meta.metadata.num_rows)

    @property
    def positive(self):
        return plain(self.columns.positive)

    def _frames(self):
        names = [self.columns.labels_column, self.columns.scores_column]
        if self.format == "parquet":
            import pyarrow.parquet as pq

            # Without pre-buffering, pyarrow reads a column chunk at a time
            # (docs/internals/cli.rst).
            reader = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=1 << 20)
            for batch in reader.iter_batches(batch_size=self.chunksize, columns=names):
                yield batch.to_pandas()
            return
        try:
            reader = pd.read_csv(self.path, usecols=names, chunksize=self.chunksize)
        except ValueError as exc:
            self.columns.check_present(_header(self.path, "csv"))
            raise CLIError(f"{self.path}: {exc}") from exc
        with reader:
            yield from reader

    def __call__(self):
        first = not self.complete
        sums = np.zeros((2, self.n_bins))
        start = 0
        for frame in self._frames():
            scores, labels = self.columns.convert(frame, start)
            if first:
                bins = uniform_bins(scores, self.n_bins)
                sums += bin_sums(bins, scores, labels, self.n_bins)
            start += scores.shape[0]
            yield labels, scores
        if first:
            if start == 0:
                raise CLIError(f"{self.path}: the file has no rows")
            self.columns.check_classes()
            self.ece_sums = sums
            self.n_samples = start
            self.complete = True

    def read_through(self):
        """Read the file once, if no bound did (for the binned ECE and the labels)."""
        if not self.complete:
            for _ in self():
                pass

    def binned_ece(self):
        return ece_of_bin_sums(self.ece_sums, self.n_samples)
