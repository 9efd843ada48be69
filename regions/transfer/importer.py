"""Loading a row file into a Tablestore table, the way the guide advises.

The pipeline, one stage per concern:

1. read (formats.py) and type (columns.py) each row in the calling thread;
   a row that cannot be typed, is over a limit or repeats a primary key
   already seen becomes a ``BadRow`` and is rejected (nothing is written
   for it); the other rows go on;
2. shuffle (shuffle.py) in bounded memory, so that the workers' writes
   spread over the partitions instead of moving as one front through them
   (``shuffle=False`` keeps the file's order);
3. cut into BatchWriteRow batches of at most 200 rows and 4 MB of row data
   (the service's limits, regions.tablestore.validate);
4. ``workers`` threads write the batches (PutRow, condition IGNORE), retrying
   only the rows whose error the service calls retryable (retry.py);
5. every row ends either written or in the rejects file with its error:
   nothing is lost silently, also when the run is interrupted (Ctrl-C stops
   the writing, and the rows not yet written go to the rejects file).

Duplicate primary keys: the first row of a key (in file order) is written
and every later one is rejected, naming the line of the first.  The service
itself would keep whichever PutRow came last, and with shuffled batches on
parallel workers "last" is an accident; a repeated key in a load is almost
always a primary key that is not unique, which the user should hear about.
``allow_duplicates=True`` sends them all (the service's overwrite: which row
wins is then unspecified unless ``shuffle=False`` and one worker).  Tracking
costs ~100 bytes per row.

The rejects file (JSON Lines, one object per rejected row):
``{"line": 12, "column": "3 (price)", "error": "...", "row": {...}}`` with the
row's values as read (text for CSV, BINARY as base64); ``column`` is null
when the error is not one column's.  It is replaced at the start of a run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import random
import sys
import threading
import time
from dataclasses import dataclass, field

from regions.tablestore.capacity import cells_size, pk_size
from regions.tablestore.validate import (BATCH_WRITE_BYTES, BATCH_WRITE_ROWS,
                                         MAX_ROW_WRITE_BYTES)

from . import columns as col
from . import retry
from .errors import BadRow, BadValue, TransferError
from .formats import open_reader
from .progress import Progress
from .shuffle import shuffled
from .spread import Spread

__all__ = ["ImportOptions", "ImportResult", "import_file", "INFER_ROWS"]

INFER_ROWS = 1000   # CSV rows whose values type the attribute columns
SHOW_ERRORS = 20    # bad rows printed on stderr; the rest only in the rejects file
INTERRUPTED = "not written: the import was interrupted"


@dataclass
class ImportOptions:
    """What ``import_file`` does; defaults are the command line's."""
    table: str
    primary_key: list | None = None       # [(name, TYPE)]; None: the existing table's
    columns: dict = field(default_factory=dict)  # {name: TYPE} for attribute columns
    fmt: str = "csv"
    create: bool = False
    split_points: list = field(default_factory=list)
    shuffle: bool = True
    shuffle_rows: int = 100_000           # rows the shuffle holds in memory
    workers: int = 4
    batch_rows: int = BATCH_WRITE_ROWS
    batch_bytes: int = BATCH_WRITE_BYTES
    rejects: str | None = None            # None: <input>.rejects.jsonl
    allow_duplicates: bool = False
    progress: bool | None = None          # None: when stderr is a terminal
    seed: int | None = None
    errors_to: object = None              # where bad rows are printed (stderr)


@dataclass
class ImportResult:
    rows_read: int = 0
    rows_written: int = 0
    rejected: int = 0
    write_cu: int = 0
    read_cu: int = 0
    seconds: float = 0.0
    rejects_path: str | None = None
    interrupted: bool = False
    spread: object = None                 # spread.Spread after the run

    def summary(self) -> str:
        rate = self.rows_written / self.seconds if self.seconds else 0.0
        lines = [f"rows read: {self.rows_read}",
                 f"rows written: {self.rows_written} in {self.seconds:.1f} s ({rate:,.0f} rows/s)",
                 f"capacity units consumed: write {self.write_cu}, read {self.read_cu}"]
        if self.rejected:
            lines.append(f"rows rejected: {self.rejected}, each with its error in "
                         f"{self.rejects_path}")
        else:
            lines.append("rows rejected: 0")
        if self.interrupted:
            lines.append("interrupted: every row not written is in the rejects file")
        if self.spread is not None:
            lines.append(self.spread.text())
        return "\n".join(lines)


class _Ledger:
    """Every row's fate: written (a bit per line) or rejected (a line in the
    rejects file, opened at the first reject, and on stderr for the first
    ``SHOW_ERRORS``).  Callers hold the writer's lock."""

    def __init__(self, path: str, errors_to):
        self.path, self.count, self._f = path, 0, None
        self._errors_to = errors_to or sys.stderr
        self._done = bytearray()
        self.progress = None  # a Progress: rejected rows count as processed
        if os.path.exists(path):
            os.unlink(path)

    def _mark(self, line):
        byte = line >> 3
        if byte >= len(self._done):
            self._done.extend(bytes(byte + 1 - len(self._done) + 4096))
        self._done[byte] |= 1 << (line & 7)

    def done(self, line) -> bool:
        byte = line >> 3
        return byte < len(self._done) and bool(self._done[byte] & (1 << (line & 7)))

    def written(self, line):
        self._mark(line)

    def reject(self, source, line, column, message, values):
        self._mark(line)
        if self._f is None:
            self._f = open(self.path, "w", encoding="utf-8")
        row = {k: col.to_json(v) for k, v in values.items()} if values is not None else None
        self._f.write(json.dumps({"line": line, "column": column, "error": message, "row": row},
                                 ensure_ascii=False) + "\n")
        self.count += 1
        if self.progress is not None:
            self.progress.update(1)
        if self.count <= SHOW_ERRORS:
            where = f"{source}:{line}: " + (f"column {column}: " if column else "")
            print(f"regions-import: {where}{message}", file=self._errors_to)
        elif self.count == SHOW_ERRORS + 1:
            print(f"regions-import: more rejected rows: see {self.path}", file=self._errors_to)

    def close(self):
        if self._f is not None:
            self._f.close()


class _Typer:
    """Turns one read row into ``(primary_key, attributes)`` or raises BadRow."""

    def __init__(self, reader, source, primary_key, types):
        self.source, self.pk, self.types = source, primary_key, types
        self.text = not reader.typed
        self.position = {n: i + 1 for i, n in enumerate(reader.columns or ())}
        self.pk_names = {n for n, _ in primary_key}

    def label(self, name):
        return f"{self.position[name]} ({name})" if name in self.position else repr(name)

    def __call__(self, line, values):
        name = None
        try:
            pk = []
            for name, kind in self.pk:
                if name not in values:
                    raise BadValue("the primary-key column is missing")
                raw = values[name]
                pk.append((name, col.from_text(raw, kind, True) if self.text
                           else col.from_json(raw, kind, True)))
            attrs = []
            for name, raw in values.items():
                if name in self.pk_names or (self.text and raw == ""):
                    continue
                kind = self.types.get(name)
                attrs.append((name, col.from_text(raw, kind) if self.text
                              else col.from_json(raw, kind)))
        except BadValue as e:
            raise BadRow(self.source, line, self.label(name), str(e)) from None
        size = pk_size(pk) + cells_size(attrs)
        if size > MAX_ROW_WRITE_BYTES:
            raise BadRow(self.source, line, None, f"the row holds {size} bytes, over the "
                         f"service's limit of {MAX_ROW_WRITE_BYTES} bytes for one row")
        return pk, attrs, size


class _Writer:
    """The worker threads and what they have done (all counters under ``lock``)."""

    def __init__(self, target, opts, rejects, progress, source):
        self.target, self.table, self.rejects = target, opts.table, rejects
        self.progress, self.source = progress, source
        self.lock = threading.Lock()
        self.written = self.write_cu = self.read_cu = 0
        self.spread = Spread(seed=opts.seed)
        self.queue = queue.Queue(maxsize=2 * opts.workers)
        self.threads = [threading.Thread(target=self._work, name=f"import-{i}", daemon=True)
                        for i in range(opts.workers)]
        for t in self.threads:
            t.start()

    def _work(self):
        while (batch := self.queue.get()) is not None:
            try:
                self._write(batch)
            except BaseException as e:  # noqa: BLE001 - a fault of ours: no row may vanish
                self._reject(batch, f"{type(e).__name__}: {e}")

    def _reject(self, rows, message):
        with self.lock:
            for line, _, _, values in rows:
                self.rejects.reject(self.source, line, None, message, values)

    def _write(self, pending):
        tries = 0
        while pending:
            tries += 1
            try:
                results = self.target.write_rows(self.table, [(pk, a) for _, pk, a, _ in pending])
            except Exception as e:  # noqa: BLE001 - the whole request failed
                code, message, status = self.target.error_fields(e)
                if retry.retryable(code, message, status) and tries < retry.MAX_TRIES:
                    time.sleep(retry.delay(tries, code))
                    continue
                return self._reject(pending, f"{code}: {message}")
            again, code = [], None
            with self.lock:
                for row, r in zip(pending, results):
                    if r.ok:
                        self.written += 1
                        self.rejects.written(row[0])
                        self.write_cu += r.write_cu
                        self.read_cu += r.read_cu
                        self.spread.add(row[1][0][1])
                    elif retry.retryable(r.code, r.message) and tries < retry.MAX_TRIES:
                        again.append(row)
                        code = r.code
                    else:
                        self.rejects.reject(self.source, row[0], None, f"{r.code}: {r.message}",
                                         row[3])
            self.progress.update(len(pending) - len(again))
            pending = again
            if pending:
                time.sleep(retry.delay(tries, code))

    def finish(self):
        for _ in self.threads:
            self.queue.put(None)
        for t in self.threads:
            t.join()


def _batches(rows, max_rows, max_bytes):
    batch, size = [], 0
    for row, row_size in rows:
        if batch and (len(batch) >= max_rows or size + row_size > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += row_size
    if batch:
        yield batch


def _resolve_table(target, opts):
    """The primary key to load with (the table is created later, by
    ``_create``, once the input is known to fit it)."""
    if opts.create:
        if not opts.primary_key:
            raise TransferError("--create needs --primary-key NAME:TYPE,...")
        if target.exists(opts.table):
            raise TransferError(f"table {opts.table!r} already exists in {target.where}; "
                                "drop --create to load into it")
        return opts.primary_key
    schema = target.schema(opts.table)
    if opts.primary_key and [tuple(c) for c in opts.primary_key] != schema:
        have = ",".join(f"{n}:{t}" for n, t in schema)
        raise TransferError(f"table {opts.table!r} has primary key {have}, not "
                            f"{','.join(f'{n}:{t}' for n, t in opts.primary_key)}")
    return schema


def _column_types(reader, source, primary_key, given, head):
    """Attribute column types: given by the user, else (CSV) inferred from
    the ``head`` rows; JSON and Parquet values keep their own types."""
    pk_names = {n for n, _ in primary_key}
    if reader.columns is not None:
        missing = [n for n in pk_names if n not in reader.columns]
        if missing:
            raise TransferError(f"{source}: no column {missing[0]!r} of the primary key; "
                                f"the file has: {', '.join(reader.columns)}")
    types = dict(given)
    if reader.typed:
        return types
    for name in reader.columns:
        if name not in pk_names and name not in types:
            types[name] = col.infer_type(v[name] for _, v in head if isinstance(v, dict))
    return types


def import_file(path: str, target, opts: ImportOptions) -> ImportResult:
    """Load ``path`` into ``opts.table`` through ``target`` (target.py).

    Raises TransferError, having written nothing, when the run cannot start
    (unreadable file, table missing, of another key or an index, bad options); bad
    rows do not raise: they are in the result's rejects.
    """
    if opts.workers < 1:
        raise TransferError(f"--workers must be at least 1, got {opts.workers}")
    if not 1 <= opts.batch_rows <= BATCH_WRITE_ROWS:
        raise TransferError(f"batch rows must be in [1, {BATCH_WRITE_ROWS}], got {opts.batch_rows}")
    result = ImportResult(rejects_path=opts.rejects or path + ".rejects.jsonl")
    if os.path.exists(result.rejects_path) and os.path.exists(path) \
            and os.path.samefile(result.rejects_path, path):
        raise TransferError(f"the rejects file {result.rejects_path} is the input itself")
    base = target.index_base(opts.table)
    if base is not None:  # the service would refuse every row: say why before reading any
        raise TransferError(f"table {opts.table!r} is an index of {base!r}: indexes are written "
                            "only by their base table")
    started = time.monotonic()
    source = path  # as the user named it, in every message
    reader = open_reader(path, opts.fmt)
    try:
        primary_key = _resolve_table(target, opts)
        head = list(itertools.islice(iter(reader), INFER_ROWS))
        types = _column_types(reader, source, primary_key, opts.columns, head)
        if opts.create:
            target.create_table(opts.table, primary_key, opts.split_points)
        typer = _Typer(reader, source, primary_key, types)
        rejects = _Ledger(result.rejects_path, opts.errors_to)
        progress = rejects.progress = Progress(reader.estimate(), f"import {opts.table}",
                                               opts.progress)
        writer = _Writer(target, opts, rejects, progress, source)
        rows = _typed_rows(itertools.chain(head, reader), typer, opts, rejects, writer, result)
        if opts.shuffle:
            rows = shuffled(rows, opts.shuffle_rows, random.Random(opts.seed))
        try:
            for batch in _batches(rows, opts.batch_rows, opts.batch_bytes):
                writer.queue.put(batch)
        except KeyboardInterrupt:
            result.interrupted = True
        finally:
            writer.finish()
        if result.interrupted:
            _reject_unwritten(path, opts.fmt, source, rejects)
        rejects.close()
        progress.close()
        result.rows_written, result.rejected = writer.written, rejects.count
        result.write_cu, result.read_cu = writer.write_cu, writer.read_cu
        result.seconds = time.monotonic() - started
        result.spread = writer.spread.report(target, opts.table)
        return result
    finally:
        reader.close()


def _reject_unwritten(path, fmt, source, ledger):
    """After an interruption: every row of the file neither written nor
    rejected goes to the rejects file (read again from the file: rows that
    were in the shuffle or in a queue are in no other list)."""
    reader = open_reader(path, fmt)
    try:
        for line, values in reader:
            if not ledger.done(line):
                ledger.reject(source, line, None, INTERRUPTED,
                              None if isinstance(values, BadRow) else values)
    finally:
        reader.close()


def _typed_rows(items, typer, opts, rejects, writer, result):
    """``((line, pk, attrs, values), size)`` per good row; bad rows rejected."""
    seen = None if opts.allow_duplicates else {}
    for line, values in items:
        result.rows_read += 1
        if isinstance(values, BadRow):
            with writer.lock:
                rejects.reject(values.source, line, values.column, values.message, None)
            continue
        try:
            pk, attrs, size = typer(line, values)
            if seen is not None:
                digest = hashlib.blake2b(repr([v for _, v in pk]).encode(), digest_size=12).digest()
                first = seen.setdefault(digest, line)
                if first != line:
                    names = ", ".join(n for n, _ in pk)
                    raise BadRow(typer.source, line, None, f"duplicate primary key ({names}) "
                                 f"first seen at line {first}; that row is the one loaded")
        except BadRow as e:
            with writer.lock:
                rejects.reject(e.source, e.line, e.column, e.message, values)
            continue
        yield (line, pk, attrs, values), size
