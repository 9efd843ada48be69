"""Row files: CSV, JSON Lines and Parquet readers and writers.

Formats (chosen by ``--format`` or the file's extension):

- ``csv`` (``.csv``): RFC 4180 as Python's ``csv`` module reads it, UTF-8, a
  header line naming the columns.  Every value is text (typed by
  ``columns.from_text``); an empty field is an absent column (Tablestore
  has no NULL), except in a STRING primary-key column, where it is ``""``.
- ``jsonl`` (``.jsonl``, ``.ndjson``, ``.json``): one JSON object per line;
  JSON types are kept (int, float, bool, string); ``null`` is an absent
  column; BINARY is base64 text.
- ``parquet`` (``.parquet``, ``.pq``): through pyarrow, an optional extra
  (``pip install -e '.[transfer]'``); arrow types map to
  Tablestore's (ints, floats, bool, string, binary); nulls are absent.

A reader yields ``(line, values)`` per row, ``values`` a dict, or ``(line,
BadRow)`` for a row it cannot parse, and goes on with the next row (a CSV
quote left open swallows the rest of the file: the reader says so and
stops).  ``line`` is the 1-based line of the row's first character
(Parquet: the row's 1-based position).  ``estimate()`` is the number of rows
to expect, for the progress bar.  Writers take the column names and types up
front and ``write(row_dict)`` per row.  Readers and writers are not
thread-safe: one thread each.
"""

from __future__ import annotations

import csv
import json
import os

from regions import extras

from . import columns as col
from .errors import BadRow, TransferError

__all__ = ["FORMATS", "format_of", "open_reader", "open_writer", "count_lines"]

FORMATS = ("csv", "jsonl", "parquet")
_EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
               ".parquet": "parquet", ".pq": "parquet"}
_CSV_FIELD_LIMIT = 64 << 20  # above the 2 MB cell limit, so an oversize cell is reported as one


def format_of(path: str, given: str | None) -> str:
    """The format ``given``, or the one ``path``'s extension names."""
    if given:
        if given not in FORMATS:
            raise TransferError(f"unknown format {given!r}: choose one of {', '.join(FORMATS)}")
        return given
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXTENSIONS:
        raise TransferError(f"{path}: cannot tell the format from the extension {ext or '(none)'!r}"
                            f"; give --format {'|'.join(FORMATS)}")
    return _EXTENSIONS[ext]


def count_lines(path: str) -> int:
    """Newlines in ``path`` (a cheap upper bound of its rows, for ETAs)."""
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            n += chunk.count(b"\n")
    return n


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise TransferError(extras.missing("pyarrow", "Parquet")) from None
    return pyarrow


def _open_text(path: str, mode: str):
    # Reading: a UTF-8 byte-order mark (Excel's CSV) is skipped, not taken
    # for part of the first column's name.
    try:
        return open(path, mode, encoding="utf-8-sig" if mode == "r" else "utf-8", newline="")
    except OSError as e:
        raise TransferError(f"cannot open {path}: {e.strerror or e}") from None


class CsvReader:
    typed = False

    def __init__(self, path: str):
        self.path = path
        self._f = _open_text(path, "r")
        csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
        self._rows = csv.reader(self._f, strict=True)
        try:
            self.columns = next(self._rows)
        except StopIteration:
            raise TransferError(f"{path}: the file is empty (a CSV file needs a header line)")
        except (csv.Error, UnicodeDecodeError) as e:
            raise TransferError(f"{path}:1: cannot read the header line: {e}") from None
        dup = {c for c in self.columns if self.columns.count(c) > 1}
        if dup or "" in self.columns:
            raise TransferError(f"{path}:1: the header names column "
                                f"{sorted(dup)[0]!r} twice" if dup else
                                f"{path}:1: the header has an empty column name")

    def estimate(self) -> int:
        return max(0, count_lines(self.path) - 1)

    def __iter__(self):
        rows, names, n = self._rows, self.columns, len(self.columns)
        while True:
            line = rows.line_num + 1
            try:
                fields = next(rows)
            except StopIteration:
                return
            except UnicodeDecodeError as e:
                yield line, BadRow(self.path, line, None, f"not UTF-8 text: {e.reason}")
                return
            except csv.Error as e:
                yield line, BadRow(self.path, line, None, f"malformed CSV: {e}")
                if "unexpected end of data" in str(e):
                    return
                continue
            if len(fields) != n:
                if fields == []:
                    continue  # a blank line
                yield line, BadRow(self.path, line, None,
                                   f"{len(fields)} fields where the header has {n}")
                continue
            yield line, dict(zip(names, fields))

    def close(self):
        self._f.close()


class JsonLinesReader:
    typed = True
    columns = None

    def __init__(self, path: str):
        self.path = path
        self._f = _open_text(path, "r")

    def estimate(self) -> int:
        return count_lines(self.path)

    def __iter__(self):
        line = 0
        while True:
            line += 1
            try:
                text = self._f.readline()
            except UnicodeDecodeError as e:
                yield line, BadRow(self.path, line, None, f"not UTF-8 text: {e.reason}")
                return
            if not text:
                return
            if not text.strip():
                continue
            try:
                doc = json.loads(text)
            except ValueError as e:
                yield line, BadRow(self.path, line, None, f"not JSON: {e}")
                continue
            if not isinstance(doc, dict):
                yield line, BadRow(self.path, line, None,
                                   f"a JSON {type(doc).__name__} where an object is expected")
                continue
            yield line, {k: v for k, v in doc.items() if v is not None}

    def close(self):
        self._f.close()


class ParquetReader:
    typed = True

    def __init__(self, path: str):
        self.path = path
        pa = _pyarrow()
        try:
            self._file = pa.parquet.ParquetFile(path)
        except (OSError, pa.ArrowException) as e:
            raise TransferError(f"cannot read {path} as Parquet: {e}") from None
        self.columns = self._file.schema_arrow.names

    def estimate(self) -> int:
        return self._file.metadata.num_rows

    def __iter__(self):
        line = 0
        for batch in self._file.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                line += 1
                yield line, {k: v for k, v in row.items() if v is not None}

    def close(self):
        self._file.close()


def open_reader(path: str, fmt: str):
    """A reader of ``path`` in format ``fmt`` (see the module docstring)."""
    return {"csv": CsvReader, "jsonl": JsonLinesReader, "parquet": ParquetReader}[fmt](path)


class CsvWriter:
    def __init__(self, path: str, names, types):
        self._f = _open_text(path, "w")
        self._names = list(names)
        self._w = csv.writer(self._f, lineterminator="\n")
        self._w.writerow(self._names)

    def write(self, row: dict):
        self._w.writerow(["" if (v := row.get(n)) is None else col.to_text(v)
                          for n in self._names])

    def close(self):
        self._f.close()


class JsonLinesWriter:
    def __init__(self, path: str, names=None, types=None):
        self._f = _open_text(path, "w")

    def write(self, row: dict):
        self._f.write(json.dumps({k: col.to_json(v) for k, v in row.items()},
                                 ensure_ascii=False, allow_nan=False) + "\n")

    def close(self):
        self._f.close()


class ParquetWriter:
    """Rows buffered into row groups of ``group_rows``; the schema comes from
    the column types (a value of another type in a column is a TransferError)."""

    group_rows = 10_000

    def __init__(self, path: str, names, types):
        pa = _pyarrow()
        arrow = {"INTEGER": pa.int64(), "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(),
                 "STRING": pa.string(), "BINARY": pa.binary()}
        self._pa, self._names = pa, list(names)
        self._schema = pa.schema([(n, arrow[types[n]]) for n in self._names])
        try:
            self._w = pa.parquet.ParquetWriter(path, self._schema)
        except (OSError, pa.ArrowException) as e:
            raise TransferError(f"cannot write {path}: {e}") from None
        self._rows = []

    def write(self, row: dict):
        self._rows.append(row)
        if len(self._rows) >= self.group_rows:
            self._flush()

    def _flush(self):
        if self._rows:
            try:
                table = self._pa.Table.from_pylist(self._rows, schema=self._schema)
            except (self._pa.ArrowException, TypeError, ValueError) as e:
                raise TransferError(f"a column holds values of two types, which Parquet "
                                    f"cannot: {e}; export it to jsonl instead") from None
            self._w.write_table(table)
            self._rows = []

    def close(self):
        self._flush()
        self._w.close()


def open_writer(path: str, fmt: str, names, types):
    """A writer of ``fmt`` to ``path`` with columns ``names`` (order kept) of
    ``types`` ({name: TYPE}; JSON Lines ignores both)."""
    return {"csv": CsvWriter, "jsonl": JsonLinesWriter, "parquet": ParquetWriter}[fmt](
        path, names, types)
