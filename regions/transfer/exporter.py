"""Writing a key range of a table to a row file, page by page.

GetRange pages (at most 5000 rows / 4 MB each, the service's cut) are read
forward from ``start`` (inclusive) to ``end`` (exclusive), following
``next_start_primary_key``; each row is written with its primary key and
the latest version of its attribute columns (``columns``: only those; a
row that has none of them is still written, with its key).

Keys on the command line (``--start``/``--end``) are the primary-key values
in schema order, comma-separated (CSV quoting for a comma inside a value),
typed by the table's schema; columns left out are INF_MIN, so ``--start 7``
starts at the first row whose partition key is 7 and ``--end 9`` stops
before the first row whose partition key is 9.  No ``--start``: the table's
first row; no ``--end``: past its last.

CSV and Parquet need every column name (and Parquet every type) before the
first row: when they are not all known, the pages are first spooled to a
temporary file beside the output while the columns are learnt, then the file
is written.  JSON Lines streams.  Attribute columns appear sorted by name,
after the primary key.  The output is written to ``<out>.partial`` and
renamed when complete, so a failed export leaves no half file under the
output's name.
"""

from __future__ import annotations

import csv
import os
import pickle
import tempfile
import time
from dataclasses import dataclass

from . import columns as col
from .errors import BadValue, TransferError
from .formats import open_writer
from .progress import Progress

__all__ = ["ExportOptions", "ExportResult", "parse_key", "export_table"]


@dataclass
class ExportOptions:
    table: str
    fmt: str = "csv"
    start: str | None = None
    end: str | None = None
    columns: list | None = None
    page_rows: int | None = None   # None: the service's page size
    progress: bool | None = None


@dataclass
class ExportResult:
    rows: int = 0
    pages: int = 0
    read_cu: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        rate = self.rows / self.seconds if self.seconds else 0.0
        return (f"rows exported: {self.rows} in {self.pages} GetRange pages, {self.seconds:.1f} s "
                f"({rate:,.0f} rows/s)\ncapacity units consumed: read {self.read_cu}")


def parse_key(text: str | None, schema, lib, which: str) -> list:
    """The primary key ``text`` names (module docstring); INF_MIN-padded.
    ``text`` None: all INF_MIN (``which='start'``) or all INF_MAX."""
    if text is None:
        fill = lib.INF_MIN if which == "start" else lib.INF_MAX
        return [(name, fill) for name, _ in schema]
    try:
        parts = next(csv.reader([text]))
    except (csv.Error, StopIteration):
        parts = [text]
    if len(parts) > len(schema):
        raise TransferError(f"--{which} {text!r} has {len(parts)} values; the primary key has "
                            f"{len(schema)} columns ({', '.join(n for n, _ in schema)})")
    key = []
    for (name, kind), part in zip(schema, parts):
        try:
            key.append((name, col.from_text(part, kind, pk=True)))
        except BadValue as e:
            raise TransferError(f"--{which}: column {name!r}: {e}") from None
    return key + [(name, lib.INF_MIN) for name, _ in schema[len(parts):]]


def _pages(target, opts, schema, result, progress):
    """Rows of the range as dicts, page by page."""
    lib = target.lib
    start = parse_key(opts.start, schema, lib, "start")
    end = parse_key(opts.end, schema, lib, "end")
    # Naming the key columns too keeps the rows that have none of the asked
    # attributes (columns_to_get returns a row only if it has a named column).
    names = [n for n, _ in schema] + list(opts.columns) if opts.columns else None
    while start is not None:
        try:
            rows, start, cu = target.read_range(opts.table, start, end, names, opts.page_rows)
        except Exception as e:  # noqa: BLE001
            code, message, _ = target.error_fields(e)
            raise TransferError(f"GetRange of {opts.table!r} in {target.where} failed after "
                                f"{result.rows} rows: {code}: {message}") from None
        result.pages += 1
        result.read_cu += cu
        page = []
        for pk, attrs in rows:
            row = dict(pk)
            row.update((c[0], c[1]) for c in attrs)
            page.append(row)
        result.rows += len(page)
        progress.update(len(page))
        yield page


def export_table(target, out: str, opts: ExportOptions) -> ExportResult:
    """Write ``opts.table``'s range to ``out`` in ``opts.fmt``; TransferError
    on bad keys, a missing table or a failed read (``out`` then untouched)."""
    started = time.monotonic()
    schema = target.schema(opts.table)
    pk_names = [n for n, _ in schema]
    result = ExportResult()
    progress = Progress(None, f"export {opts.table}", opts.progress)
    partial = out + ".partial"
    try:
        pages = _pages(target, opts, schema, result, progress)
        if opts.fmt == "jsonl":
            _write(partial, "jsonl", [], {}, pages)
        elif opts.fmt == "csv" and opts.columns:
            _write(partial, "csv", pk_names + list(opts.columns), {}, pages)
        else:
            _spooled(partial, opts.fmt, schema, pages)
        os.replace(partial, out)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise
    finally:
        progress.close()
    result.seconds = time.monotonic() - started
    return result


def _write(path, fmt, names, types, pages):
    writer = open_writer(path, fmt, names, types)
    try:
        for page in pages:
            for row in page:
                writer.write(row)
    finally:
        writer.close()


def _spooled(path, fmt, schema, pages):
    """Pages to a temporary spool while learning the columns, then to ``path``."""
    types = dict(schema)
    with tempfile.TemporaryFile(dir=os.path.dirname(os.path.abspath(path))) as spool:
        for page in pages:
            for row in page:
                for name, value in row.items():
                    types.setdefault(name, col.type_of(value))
            pickle.dump(page, spool, pickle.HIGHEST_PROTOCOL)
        spool.seek(0)

        def again():
            while True:
                try:
                    yield pickle.load(spool)
                except EOFError:
                    return

        pk = [n for n, _ in schema]
        names = pk + sorted(n for n in types if n not in pk)
        _write(path, fmt, names, types, again())
