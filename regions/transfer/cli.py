"""``regions-import`` and ``regions-export``: the command lines.

Thin layers over importer.py and exporter.py.  A run that cannot start
(bad arguments, unreadable file, missing table or store) prints one line
``regions-import: error: ...`` and exits 2 having written nothing, not even
an empty store (only ``regions-import --create`` makes one, once its
checks passed; see EmbeddedTarget); an
import that rejected rows exits 2 too, after writing every good row (each
bad row has one line on stderr, naming file, line and column, and a record
in the rejects file); a clean run exits 0.
"""

from __future__ import annotations

import argparse

from regions import cliutil
from regions.otsserver.cli import DEFAULT_INSTANCE, DEFAULT_KEY_ID, DEFAULT_KEY_SECRET
from regions.tablestore.validate import BATCH_WRITE_ROWS

from . import columns as col
from .errors import TransferError
from .exporter import ExportOptions, export_table
from .formats import FORMATS, format_of
from .importer import ImportOptions, import_file
from .target import EmbeddedTarget, EndpointTarget

IMPORT_EPILOG = """\
examples:
  regions-import --data ./ots --table orders --primary-key uid:INTEGER,oid:STRING orders.csv
  regions-import --data ./ots --table orders --create --primary-key uid:INTEGER,oid:STRING \\
      --split-points splits.txt --workers 4 orders.parquet
  regions-import --endpoint http://127.0.0.1:8800 --table orders orders.jsonl

The guide's way: the input is shuffled (in bounded memory) so that the
workers' writes spread over the partitions; --no-shuffle keeps its order.
Rows that cannot be written are listed with their error in the rejects file
(default: <input>.rejects.jsonl); a repeated primary key keeps its first row
and rejects the others (--allow-duplicates: let the service overwrite).
"""

EXPORT_EPILOG = """\
examples:
  regions-export --data ./ots --table orders orders.csv
  regions-export --data ./ots --table orders --start 100 --end 200 --columns price,item out.jsonl
  regions-export --endpoint http://127.0.0.1:8800 --table orders --format parquet out.pq
"""


def _target_args(p):
    g = p.add_argument_group("target: an embedded store (--data) or an endpoint (--endpoint)")
    where = g.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", metavar="PATH", type=cliutil.store_dir,
                       help="directory of an embedded store")
    where.add_argument("--endpoint", metavar="URL",
                       help="a Tablestore endpoint (regions-server or the cloud), via the SDK")
    g.add_argument("--instance", default=DEFAULT_INSTANCE, type=cliutil.word("an instance name"),
                   help=f"({DEFAULT_INSTANCE})")
    g.add_argument("--access-key-id", default=DEFAULT_KEY_ID,
                   type=cliutil.word("an access key id"), help=f"({DEFAULT_KEY_ID})")
    g.add_argument("--access-key-secret", default=DEFAULT_KEY_SECRET,
                   type=cliutil.word("an access key secret"), help="(regions-server's)")
    p.add_argument("--table", required=True, type=cliutil.word("a table name"))
    p.add_argument("--format", choices=FORMATS, help="default: from the file's extension")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", action="store_true", default=None,
                     help="draw the progress bar even when stderr is not a terminal")
    bar.add_argument("--no-progress", dest="progress", action="store_false")


def open_target(args, create=False):
    """The target the arguments name; ``create``: an embedded store may be
    made (by the first create_table), else it must exist."""
    if args.data:
        return EmbeddedTarget(args.data, create=create)
    return EndpointTarget(args.endpoint, args.instance, args.access_key_id,
                          args.access_key_secret)


def import_parser() -> argparse.ArgumentParser:
    p = cliutil.Parser(prog="regions-import", epilog=IMPORT_EPILOG,
                       description="Load CSV, JSON Lines or Parquet rows into a Tablestore table.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="INPUT", type=cliutil.input_file,
                   help="the file to load (.csv, .jsonl, .parquet)")
    _target_args(p)
    p.add_argument("--primary-key", metavar="COL:TYPE,...",
                   help="the primary key (INTEGER, STRING, BINARY); needed with --create, "
                        "checked against an existing table")
    p.add_argument("--columns", metavar="COL:TYPE,...",
                   help="types of attribute columns (INTEGER, DOUBLE, BOOLEAN, STRING, BINARY); "
                        "others are typed from the data")
    p.add_argument("--create", action="store_true", help="create the table (it must not exist)")
    p.add_argument("--split-points", metavar="FILE",
                   help="with --create: pre-split on these points (regions-presplit's SPLITS "
                        "file, or its JSON plan: FILE.json)")
    p.add_argument("--workers", type=cliutil.positive_int, default=4, help="writer threads (4)")
    p.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                   help="write in the file's order")
    p.add_argument("--shuffle-rows", type=cliutil.positive_int, default=100_000,
                   help="rows the shuffle holds in memory; beyond, it spills to temp files")
    p.add_argument("--batch-rows", type=cliutil.int_in(1, BATCH_WRITE_ROWS), default=200,
                   help=f"rows per BatchWriteRow, 1-{BATCH_WRITE_ROWS} ({BATCH_WRITE_ROWS})")
    p.add_argument("--rejects", metavar="PATH", type=cliutil.output_file,
                   help="default: <input>.rejects.jsonl")
    p.add_argument("--allow-duplicates", action="store_true",
                   help="send rows with a repeated primary key too (the service overwrites)")
    p.add_argument("--seed", type=cliutil.non_negative_int, help="seed of the shuffle")
    return p


def _split_points(path, primary_key):
    """The points of a regions-presplit plan: a SPLITS file, or its JSON
    (``--format json``, by the ``.json`` extension), typed like the
    partition key."""
    from regions.presplit import PresplitError, points_from_json, read_splits_file
    from regions.presplit.cli import PK_TYPES
    from regions.presplit.formats import read_lines
    key_type = PK_TYPES[primary_key[0][1]]
    try:
        if not path.endswith(".json"):
            return read_splits_file(path, key_type)
        points = points_from_json("\n".join(read_lines(path)))
        if points and type(points[0]).__name__ != key_type:
            raise PresplitError(f"the plan's points are {type(points[0]).__name__} but partition "
                                f"key {primary_key[0][0]!r} is {primary_key[0][1]}")
        return points
    except PresplitError as e:
        raise TransferError(f"--split-points {path}: {e}") from None


def import_options(args) -> ImportOptions:
    pk = col.parse_spec(args.primary_key, "--primary-key", col.PK_TYPES) if args.primary_key else None
    columns = dict(col.parse_spec(args.columns, "--columns")) if args.columns else {}
    if args.split_points and not args.create:
        raise TransferError("--split-points only makes sense with --create")
    points = _split_points(args.split_points, pk) if args.split_points and pk else []
    if not args.rejects:  # next to the input: checked as --rejects is
        try:
            cliutil.output_file(args.file + ".rejects.jsonl")
        except argparse.ArgumentTypeError as e:
            raise TransferError(f"the rejects file {e}; give --rejects PATH") from None
    return ImportOptions(
        table=args.table, primary_key=pk, columns=columns,
        fmt=format_of(args.file, args.format), create=args.create, split_points=points,
        shuffle=args.shuffle, shuffle_rows=args.shuffle_rows, workers=args.workers,
        batch_rows=args.batch_rows, rejects=args.rejects,
        allow_duplicates=args.allow_duplicates, progress=args.progress, seed=args.seed)


def _run(prog, args, options, job, create=False):
    """``job(path, target, options(args))`` with one target (opened once the
    options are checked; ``create``: see open_target), its summary on
    stdout; a TransferError as one line on stderr (None returned)."""
    try:
        opts = options(args)
        target = open_target(args, create)
        try:
            result = job(args.file, target, opts)
        finally:
            target.close()
    except TransferError as e:
        cliutil.fail(prog, e)
        return None
    print(result.summary())
    return result


def import_main(argv=None) -> int:
    """``regions-import``; returns the exit status."""
    args = import_parser().parse_args(argv)
    result = _run("regions-import", args, import_options, import_file, create=args.create)
    return 2 if result is None or result.rejected else 0


def export_parser() -> argparse.ArgumentParser:
    p = cliutil.Parser(prog="regions-export", epilog=EXPORT_EPILOG,
                       description="Write a key range of a Tablestore table to CSV, JSON Lines "
                                   "or Parquet, with GetRange paging.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="OUTPUT", type=cliutil.output_file,
                   help="the file to write (.csv, .jsonl, .parquet)")
    _target_args(p)
    p.add_argument("--start", metavar="KEY", help="first primary key (inclusive): values in "
                   "schema order, comma-separated; missing columns are INF_MIN")
    p.add_argument("--end", metavar="KEY", help="primary key to stop before (exclusive)")
    p.add_argument("--columns", metavar="COL,...", help="attribute columns to export (all)")
    p.add_argument("--page-rows", type=cliutil.positive_int,
                   help="rows per GetRange call (the service's 5000)")
    return p


def export_options(args) -> ExportOptions:
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    return ExportOptions(table=args.table, fmt=format_of(args.file, args.format),
                         start=args.start, end=args.end, columns=columns,
                         page_rows=args.page_rows, progress=args.progress)


def export_main(argv=None) -> int:
    """``regions-export``; returns the exit status."""
    result = _run("regions-export", export_parser().parse_args(argv), export_options,
                  lambda path, target, opts: export_table(target, path, opts))
    return 2 if result is None else 0
