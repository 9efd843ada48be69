"""``regions-presplit``: plan, evaluate and create a pre-split table.

The command line is a thin layer over the library: it builds one
``SplitAlgorithm`` from the arguments, asks it for the points, optionally
evaluates them against a workload and asks the advisor, writes the plan, and
optionally creates the table. A bad argument (a number out of range, a file
that cannot be read or written, a PATH that cannot hold a store) is refused
while parsing, before anything is computed or created; every later expected
failure is a ``PresplitError`` or ``KeyDesignError``. Either is one line on
stderr (``regions.cliutil``) and exit status 2, never a traceback.

After a good plan (no warning, no finding of the advisor, no table created)
it says on stderr what to do next: the user's own command line completed
with ``--format splits -o splits.txt``, then the ``regions-import --create
--split-points`` command that creates the table pre-split on that file.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import textwrap
import warnings

from .. import cliutil
from ..keys import KeyDesignError
from . import algorithms as alg
from .advisor import advise
from .errors import PresplitError
from .evaluator import WORKLOADS, bar_chart, evaluate, plot, render_table, show, workload
from .formats import (KEY_TYPES, from_string_binary, parse_point, points_json,
                      read_sample_file, read_splits_file, splits_text)

PROG = "regions-presplit"
ALGORITHMS = ("hex", "decimal", "alphabet", "uniform", "integer", "hash-prefix", "salt",
              "sample", "explicit", "interpolate")

DESCRIPTION = """\
Propose split points for a table pre-split into N regions, show how keys
and load would spread over them, and optionally create the table.

Choose the algorithm that matches the keys that will really arrive:
  hex          fixed-width [0-9a-f] strings, e.g. an md5 prefix (HBase HexStringSplit)
  decimal      fixed-width digit strings (HBase DecimalStringSplit)
  alphabet     fixed-width strings over --alphabet (base36, [0-9A-Za-z], ...)
  uniform      raw bytes of --length (HBase UniformSplit; Tablestore BINARY keys)
  integer      an INTEGER partition key in [--low, --high]
  hash-prefix  keys = first --width hex digits of md5/mmh3(id) + id
  salt         keys = one of --buckets zero-padded salts + id
  sample       quantiles of real keys from --sample FILE (equal count or --by bytes)
  explicit     your own points: --points a,b,c or --splits FILE (HBase SPLITS file)
  interpolate  bytes between --start and --end (HBase Bytes.split; beware text keys)

Then look before you create: --evaluate draws a workload from the
algorithm's keyspace (uniform, sequential ids, timestamps, zipf) or reads
keys from --key-file, prints the share of keys and bytes per region, a bar
chart, the hot spot of the last 10% of writes, and the advisor's findings
(monotonic keys, few partition-key values, hot keys, empty regions, skew)
with a fix.

Then create the table: write the points as a SPLITS file (--format splits
-o splits.txt) and give it to regions-import --create --split-points
splits.txt, or create the table here with --create-table. After a good
plan the planner prints both commands, completed with your arguments.
"""

EPILOG = """\
examples:
  %(prog)s hex --regions 16 --length 16
  %(prog)s --sample keys.txt --regions 8 --format splits -o splits.txt
  regions-import --data ./data --table orders --create --split-points splits.txt \\
      --primary-key key:STRING orders.csv      # the table, pre-split on splits.txt
  %(prog)s integer --regions 4 --low 0 --high 999 --format json
  %(prog)s decimal --regions 8 --evaluate sequential      # the monotonic trap
  %(prog)s hash-prefix --width 4 --regions 8 --evaluate sequential
  %(prog)s hex --regions 16 --evaluate --plot spread.png
  %(prog)s hex --regions 16 --create-table ./data orders
  %(prog)s hash-prefix --regions 16 --create-table ./data orders \\
      --primary-key hash_order:STRING,order:INTEGER        # a Tablestore table
"""


MAX_REGIONS = 1000       # the region server's max_regions (HBase's regionSplitLimit)
MAX_KEYS = 10_000_000    # largest workload --evaluate draws
MAX_KEY_LENGTH = 1024    # Tablestore's limit on a primary-key column (regions.tablestore)
SPLITS_FILE = "splits.txt"


class _CreateTable(argparse.Action):
    """``--create-table PATH TABLE``: PATH where a store is or can be made
    (``cliutil.store_dir``), TABLE a name (a ``type=`` would check both as one)."""

    def __call__(self, parser, namespace, values, option_string=None):
        path, table = values
        try:
            values = [cliutil.store_dir(path), cliutil.word("a table name")(table)]
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentError(self, str(e)) from None
        setattr(namespace, self.dest, values)


def build_parser() -> argparse.ArgumentParser:
    p = cliutil.Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("algorithm", nargs="?", choices=ALGORITHMS, metavar="ALGORITHM",
                   help="one of: " + ", ".join(ALGORITHMS) + " (default: sample with --sample)")
    p.add_argument("-n", "--regions", type=int, metavar="N",
                   help=f"number of regions, 2-{MAX_REGIONS} (N-1 points)")
    g = p.add_argument_group("keyspace")
    g.add_argument("--length", type=cliutil.int_in(1, MAX_KEY_LENGTH), default=8,
                   help=f"key length in characters or bytes, 1-{MAX_KEY_LENGTH} (8)")
    g.add_argument("--upper", action="store_true", help="hex with A-F instead of a-f")
    g.add_argument("--alphabet", help="characters keys can hold (alphabet algorithm)")
    g.add_argument("--low", type=int, default=0, help="integer: lowest key (0)")
    g.add_argument("--high", type=int, default=alg.INT64_MAX, help="integer: highest key")
    g.add_argument("--width", type=cliutil.int_in(1, 32), default=4,
                   help="hash-prefix: hex digits, 1-32 (4)")
    g.add_argument("--hash", default="md5", choices=("md5", "mmh3"), help="hash-prefix: hash")
    g.add_argument("--buckets", type=cliutil.positive_int, default=16,
                   help="salt: salt values (16)")
    g.add_argument("--sep", default="", help="hash-prefix/salt: separator after the prefix")
    g.add_argument("--sample", metavar="FILE", type=cliutil.input_file,
                   help="key sample, one key per line (optionally key<TAB>bytes), in arrival order")
    g.add_argument("--by", default="count", choices=("count", "bytes"),
                   help="sample: equal key counts or equal bytes per region")
    g.add_argument("--points", help="explicit: comma-separated split points")
    g.add_argument("--splits", metavar="FILE", type=cliutil.input_file,
                   help="explicit: HBase SPLITS file")
    g.add_argument("--start", help="interpolate: first key (\\xNN escapes)")
    g.add_argument("--end", help="interpolate: last key (\\xNN escapes)")
    g.add_argument("--key-type", default="str", choices=KEY_TYPES,
                   help="type of keys in --sample/--splits/--points/--key-file (str)")
    o = p.add_argument_group("output")
    o.add_argument("--format", default="text", choices=("text", "json", "splits"),
                   help="text (default), json, or an HBase SPLITS file")
    o.add_argument("-o", "--output", metavar="FILE", type=cliutil.output_file,
                   help="write the plan here (default stdout)")
    e = p.add_argument_group("evaluation")
    e.add_argument("--evaluate", nargs="?", const="auto", metavar="WORKLOAD",
                   choices=WORKLOADS + ("file", "auto"),
                   help="spread of a workload: uniform (default; the sample itself for "
                        "sample), sequential, timestamp, zipf, or file (--key-file)")
    e.add_argument("--keys", type=cliutil.int_in(1, MAX_KEYS), default=100_000,
                   help=f"workload size, 1-{MAX_KEYS} (100000)")
    e.add_argument("--key-file", metavar="FILE", type=cliutil.input_file,
                   help="keys for --evaluate file (given alone, it implies --evaluate file)")
    e.add_argument("--seed", type=cliutil.non_negative_int, default=0, help="workload seed (0)")
    e.add_argument("--zipf-s", type=cliutil.positive_float, default=1.1,
                   help="zipf exponent, above 0 (1.1)")
    e.add_argument("--value-size", type=cliutil.non_negative_int, default=0,
                   help="bytes of value per row (0)")
    e.add_argument("--plot", metavar="PNG", type=cliutil.output_file,
                   help="draw the spread (needs matplotlib)")
    p.add_argument("--create-table", nargs=2, metavar=("PATH", "TABLE"), action=_CreateTable,
                   help="create TABLE pre-split in the embedded region server at PATH")
    p.add_argument("--primary-key", metavar="NAME:TYPE,...",
                   help="with --create-table: create a Tablestore table (regions.tablestore) "
                        "with this primary key, e.g. 'hash_order:STRING,order:INTEGER'; the "
                        "first column is the partition key the points split")
    return p


def make_algorithm(args) -> alg.SplitAlgorithm:
    """The algorithm the arguments describe."""
    name = args.algorithm or ("sample" if args.sample else None)
    if name is None:
        raise PresplitError("choose an algorithm or give --sample FILE")
    if name == "hex":
        return alg.HexSplit(args.length, args.upper)
    if name == "decimal":
        return alg.DecimalSplit(args.length)
    if name == "alphabet":
        if args.alphabet is None:
            raise PresplitError("the alphabet algorithm needs --alphabet CHARS")
        return alg.AlphabetSplit(args.alphabet, args.length)
    if name == "uniform":
        return alg.UniformSplit(args.length)
    if name == "integer":
        return alg.IntegerSplit(args.low, args.high)
    if name == "hash-prefix":
        return alg.HashPrefixSplit(args.width, args.hash, args.sep)
    if name == "salt":
        return alg.SaltSplit(args.buckets, args.sep)
    if name == "sample":
        if not args.sample:
            raise PresplitError("the sample algorithm needs --sample FILE")
        keys, sizes = read_sample_file(args.sample, args.key_type)
        return alg.SampleSplit(keys, sizes, by=args.by)
    if name == "explicit":
        if bool(args.points) == bool(args.splits):
            raise PresplitError("the explicit algorithm needs exactly one of --points or --splits")
        if args.splits:
            return alg.ExplicitSplit(read_splits_file(args.splits, args.key_type))
        return alg.ExplicitSplit([parse_point(t, args.key_type) for t in args.points.split(",")])
    if args.start is None or args.end is None:
        raise PresplitError("the interpolate algorithm needs --start and --end")
    return alg.InterpolateSplit(from_string_binary(args.start), from_string_binary(args.end))


def _workload_keys(args, algorithm):
    kind = args.evaluate
    if kind == "auto":
        kind = "sample" if isinstance(algorithm, alg.SampleSplit) else "uniform"
    if kind == "sample":
        return algorithm.keys, None, "the sample"
    if kind == "file":
        path = args.key_file or args.sample
        if not path:
            raise PresplitError("--evaluate file needs --key-file FILE")
        keys, sizes = read_sample_file(path, args.key_type)
        return keys, sizes, path
    return workload(algorithm, kind, args.keys, args.seed, args.zipf_s), None, f"{kind} workload"


def create_table(path: str, table: str, points) -> int:
    """Create ``table`` pre-split on ``points`` in the region server at ``path``.

    Imported lazily: the planner works without the server. Returns the
    number of regions created.
    """
    try:
        from regions.errors import RegionError
        from regions.server import RegionServer, check_table_name
    except ImportError as e:
        raise PresplitError(f"--create-table needs the region server (regions.RegionServer), "
                            f"which cannot be imported: {e}") from None
    split_keys = alg.encode_points(points)
    try:
        check_table_name(table)             # before the store is made
        server = RegionServer.open(path)
        try:
            server.create_table(table, split_keys=split_keys)
        finally:
            server.close()
    except (RegionError, ValueError, TypeError, OSError) as e:
        raise PresplitError(f"cannot create table {table!r} in {path}: {e}") from None
    return len(split_keys) + 1


PK_TYPES = {"STRING": "str", "INTEGER": "int", "BINARY": "bytes"}
PK_NAMES = {kind: name for name, kind in PK_TYPES.items()}


def parse_primary_key(spec: str, key_type: str) -> list[tuple[str, str]]:
    """``'a:STRING,b:INTEGER'`` as the SDK's schema list, checked against the
    type of the split points (the partition key's type)."""
    schema = []
    for part in spec.split(","):
        name, _, kind = part.strip().partition(":")
        if not name or kind.upper() not in PK_TYPES:
            raise PresplitError(f"primary-key column {part!r} must be NAME:STRING, "
                                "NAME:INTEGER or NAME:BINARY")
        schema.append((name, kind.upper()))
    if PK_TYPES[schema[0][1]] != key_type:
        raise PresplitError(f"the split points are {key_type} but partition key "
                            f"{schema[0][0]!r} is {schema[0][1]}")
    return schema


def create_tablestore_table(path: str, table: str, schema, points) -> int:
    """Create a Tablestore table pre-split on the typed ``points`` through
    ``regions.tablestore.OTSClient.create_table(..., split_points=...)``."""
    try:
        from regions.tablestore import OTSClient, OTSError, TableMeta
        from regions.tablestore.validate import check_table_meta
    except ImportError as e:
        raise PresplitError(f"--primary-key needs the Tablestore layer (regions.tablestore), "
                            f"which cannot be imported: {e}") from None
    try:
        meta = TableMeta(table, schema)
        check_table_meta(meta)              # before the store is made
        client = OTSClient(path)
        try:
            client.create_table(meta, split_points=list(points))
        finally:
            client.close()
    except (OTSError, ValueError, TypeError, OSError) as e:
        raise PresplitError(f"cannot create table {table!r} in {path}: {e}") from None
    return len(points) + 1


def _emit(text: str, path: str | None) -> None:
    if path is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise PresplitError(f"cannot write {path}: {e.strerror or e}") from None


def _evaluation_json(report, findings) -> dict:
    doc = report.as_dict()
    doc["top_key"] = show(report.top_key)
    doc["per_region"] = [{"start": show(r.start), "end": show(r.end), "keys": r.keys,
                          "bytes": r.bytes, "key_share": r.key_share,
                          "byte_share": r.byte_share} for r in report.regions]
    doc["findings"] = [{"code": f.code, "message": f.message, "fix": f.fix} for f in findings]
    return doc


def _check_regions(n: int) -> None:
    """The CLI's bounds on N (the library takes any N >= 1)."""
    if n == 1:
        raise PresplitError("1 region needs no split points (a table starts as one region): "
                            "give --regions 2 or more")
    if n > MAX_REGIONS:
        raise PresplitError(f"{n} regions is more than {MAX_REGIONS}, the region server's "
                            "limit (max_regions; HBase's regionSplitLimit)")


def _evaluate_kind(args):
    """``--evaluate``'s workload, ``file`` when only --key-file is given."""
    if args.key_file and args.evaluate not in (None, "auto", "file"):
        raise PresplitError(f"--key-file is for --evaluate file, not --evaluate {args.evaluate}")
    if args.key_file:
        return "file"
    return args.evaluate or ("auto" if args.plot else None)


def splits_argv(argv, path: str = SPLITS_FILE) -> list[str]:
    """``argv`` writing the plan as a SPLITS file to ``path``: its own --format
    and -o/--output (in every spelling argparse takes) replaced."""
    out, tail, skip = [], [], False
    for i, tok in enumerate(argv):
        if skip:
            skip = False
            continue
        if tok == "--":
            tail = list(argv[i:])
            break
        name = tok.split("=", 1)[0]
        if len(name) > 2 and any(o.startswith(name) for o in ("--format", "--output")):
            skip = "=" not in tok
        elif tok.startswith("-o") and not tok.startswith("--"):
            skip = tok == "-o"
        else:
            out.append(tok)
    return out + ["--format", "splits", "-o", path] + tail


def next_steps(argv, key_type: str, evaluated: bool, written: str | None = None) -> str:
    """What to do after a good plan: the command that writes it as a SPLITS
    file (unless ``written`` already is that file), and the one that creates
    the table pre-split on it."""
    pk = f"KEY:{PK_NAMES[key_type]}"
    if written is not None:
        lines, path = [f"next: create the table pre-split on the points in {written}:"], written
    else:
        check = ("" if evaluated else "check the plan against your keys (--evaluate file "
                 "--key-file KEYS) or a workload (--evaluate sequential, timestamp, zipf); ")
        lines = textwrap.wrap(f"next: {check}write the split points to a file, then create the "
                              "table pre-split on them:", 88, break_on_hyphens=False)
        lines.append("  " + shlex.join([PROG, *splits_argv(argv)]))
        path = SPLITS_FILE
    return "\n".join(lines + [
        "  " + shlex.join(["regions-import", "--data", "DIR", "--table", "TABLE", "--create",
                           "--split-points", path, "--primary-key", pk, "ROWS.csv"]),
        "(DIR, TABLE, ROWS.csv and the partition key KEY are yours; more primary-key columns "
        "follow KEY)",
        f"or let the planner create it: add --create-table DIR TABLE --primary-key {pk}",
        "or in Python: OTSClient.create_table(meta, split_points=points)",
    ])


def run(args, argv=()) -> str | None:
    """Plan, evaluate, write, create; returns the next step to suggest (None
    when the plan is not a good one to create, or when it was created)."""
    algorithm = make_algorithm(args)
    schema = None
    if args.primary_key:
        if not args.create_table:
            raise PresplitError("--primary-key only makes sense with --create-table PATH TABLE")
        schema = parse_primary_key(args.primary_key, algorithm.key_type)
    if args.regions is None and not isinstance(algorithm, alg.ExplicitSplit):
        raise PresplitError(f"the {algorithm.name} algorithm needs --regions N")
    if args.regions is not None and args.regions >= 1:
        _check_regions(args.regions)
    points = algorithm.split(args.regions)
    _check_regions(len(points) + 1)
    evaluation = None
    args.evaluate = _evaluate_kind(args)
    if args.evaluate:
        keys, sizes, source = _workload_keys(args, algorithm)
        report = evaluate(points, keys, sizes, args.value_size)
        evaluation = (report, advise(report, keys, algorithm), source)
    if args.format == "json":
        extra = None
        if evaluation:
            extra = {"evaluation": _evaluation_json(evaluation[0], evaluation[1])}
            extra["evaluation"]["source"] = evaluation[2]
        _emit(points_json(points, algorithm.name, algorithm.key_type, extra), args.output)
    elif args.format == "splits":
        _emit(splits_text(points), args.output)
    else:
        lines = [f"# {algorithm.describe()}: {len(points) + 1} regions, {len(points)} split points"]
        lines += [show(p) for p in points]
        _emit("\n".join(lines) + "\n", args.output)
    if evaluation:
        report, findings, source = evaluation
        text = [f"\nspread of {source} over {len(report.regions)} regions:",
                render_table(report), "", bar_chart(report), ""]
        text += [str(f) for f in findings] or ["advisor: no problems found"]
        # The SPLITS stream on stdout must stay a pure SPLITS file.
        to = sys.stderr if (args.format == "splits" and args.output is None) else sys.stdout
        if args.format != "json" or args.output is not None:
            print("\n".join(text), file=to)
        if args.plot:
            plot(evaluation[0], args.plot, f"{algorithm.describe()}: {source}")
    if args.create_table:
        path, table = args.create_table
        if schema:
            count = create_tablestore_table(path, table, schema, points)
        else:
            count = create_table(path, table, points)
        print(f"created table {table!r} in {path} with {count} regions", file=sys.stderr)
        return None
    if (evaluation and evaluation[1]) or args.format == "json" or \
            (args.format == "splits" and args.output is None):
        return None
    written = args.output if args.format == "splits" else None
    return next_steps(argv, algorithm.key_type, evaluation is not None, written)


def main(argv=None) -> int:
    """Console-script entry point; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", alg.SmallAlphabetWarning)
            hint = run(args, argv)
        for w in caught:
            print(f"{PROG}: warning: {w.message}", file=sys.stderr)
        if hint and not caught:  # a plan that drew a warning is not a good one
            sys.stdout.flush()
            print(hint, file=sys.stderr)
        return 0
    except (PresplitError, KeyDesignError) as e:
        return cliutil.fail(PROG, e)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
