"""Check secondary indexes against their base table: ``check_indexes(client, table)``.

The index a base table's rows call for is derived here from the rows alone,
by the rule indexes.py keeps (its module doc), and compared with what the
index table holds, both read through the row API (GetRange):

- the index primary key is the index columns ``describe_table`` lists for
  it (``primary_key_names``), then the base key's columns not among them;
- a base row has an entry only if every index column is present, with the
  type its predefined column declares (INTEGER: an int that is not a bool,
  STRING: str, BINARY: bytes); else it has none (sparse);
- the entry's attribute columns are the index's ``defined_column_names``
  present in the row, each with the base cell's value and timestamp.

A local index is checked by the same rule: it is a table of its own.

Problems (``Problem``), by ``kind``:

- ``missing``: a base row's entry is not in the index;
- ``phantom``: an index row that no base row calls for (a stale key left
  behind, or a row state that never existed);
- ``wrong``: the entry is there, with other attribute values or timestamps;
- ``refs``: (embedded client only) the index's ``<index>.refs`` table, the
  maintainer's record of the index row it last wrote for each base row, does
  not mirror the index table; a later write of that row would then leave a
  phantom behind;
- ``table``: an index listed by ``describe_table`` cannot be read.

Read the two sides when nothing writes: after ``wait_for_indexes`` for a
global index (the maintainer applies the change feed in the background; a
local index is in step when the write returns).  Every row of the base
table is held in memory while the indexes are read.

An index created with ``include_base_data=False`` holds only the rows
written since; ``exempt`` (index name -> base primary keys that may lack an
entry, or None: any row) says which missing entries are legitimate.  A
present entry is checked all the same.

    python -m regions.tablestore.indexcheck --data DIR [TABLE ...]

opens the store at DIR (refusing to make one), lets the open apply what a
crash left in the feeds, waits for the global indexes and back-fills
(``--timeout``), checks every index of the tables named (default: every
table with an index), prints each problem and a summary line, and exits 1 if
any index is wrong, 0 if none is.
"""
import dataclasses
import sys

from . import _rowcodec
from .metadata import INF_MAX, INF_MIN, Direction

__all__ = ["Problem", "check_indexes", "check_store", "expected_entries", "index_key_names", "read_rows", "main"]

PROG = "python -m regions.tablestore.indexcheck"
_PAGE = 5000


@dataclasses.dataclass(frozen=True)
class Problem:
    """One disagreement of index ``index`` of table ``table`` with its base:
    ``kind`` (see the module doc), the index row's primary key ``key``
    (values in index-key order), the base row's ``base_key``, and what the
    base calls for (``want``: ``{column: (value, timestamp)}`` or None) and
    the index holds (``got``)."""

    table: str
    index: str
    kind: str
    key: tuple = ()
    base_key: tuple = ()
    want: object = None
    got: object = None
    detail: str = ""

    def __str__(self):
        text = f"{self.table}/{self.index}: {self.kind}"
        if self.key:
            text += f" index row {self.key!r}"
        if self.base_key:
            text += f" (base row {self.base_key!r})"
        if self.kind == "wrong":
            text += f": attributes {self.got!r}, the base row calls for {self.want!r}"
        if self.detail:
            text += f": {self.detail}"
        return text


def _plain(value):
    return bytes(value) if isinstance(value, bytearray) else value


def read_rows(client, table, names) -> dict:
    """Every row of ``table`` (primary-key column ``names``), latest
    versions: ``{pk values: {column: (value, timestamp)}}``, by GetRange pages."""
    rows = {}
    start = [(n, INF_MIN) for n in names]
    end = [(n, INF_MAX) for n in names]
    while start:
        _, start, page, _ = client.get_range(table, Direction.FORWARD, start, end,
                                             max_version=1, limit=_PAGE)
        for row in page:
            key = tuple(_plain(v) for _, v in row.primary_key)
            rows[key] = {n: (_plain(v), ts) for n, v, ts in row.attribute_columns}
    return rows


def _of_type(value, typ) -> bool:
    if typ == "INTEGER":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "STRING":
        return isinstance(value, str)
    if typ == "BINARY":
        return isinstance(value, (bytes, bytearray))
    return False


def index_key_names(meta, base_names) -> list:
    """The primary key of index ``meta``: its index columns, then the base
    key's ``base_names`` not among them."""
    columns = list(meta.primary_key_names)
    return columns + [n for n in base_names if n not in columns]


def expected_entries(base_rows, base_names, types, meta) -> dict:
    """The rows index ``meta`` (a SecondaryIndexMeta as describe_table gives
    it) calls for, given ``base_rows`` (``read_rows``), the base key's
    ``base_names`` and ``types`` (column -> type, key and predefined
    columns): ``{index key: (base key, {column: (value, timestamp)})}``."""
    want = {}
    for base_key, columns in base_rows.items():
        values = dict(zip(base_names, base_key))
        key = []
        for name in index_key_names(meta, base_names):
            if name in values:
                key.append(values[name])
                continue
            cell = columns.get(name)
            if cell is None or not _of_type(cell[0], types.get(name)):
                key = None          # sparse: an index column is missing
                break
            key.append(cell[0])
        if key is None:
            continue
        attributes = {n: columns[n] for n in meta.defined_column_names if n in columns}
        want[tuple(key)] = (base_key, attributes)
    return want


def check_indexes(client, table, indexes=None, exempt=None, refs=True) -> list:
    """The problems (``Problem``) of the indexes of ``table`` (all of them, or
    those named in ``indexes``); [] when each holds exactly the rows the base
    table calls for.  ``exempt``: see the module doc; ``refs``: also check each
    index's refs table (an embedded OTSClient only)."""
    described = client.describe_table(table)
    base_names = [c[0] for c in described.table_meta.schema_of_primary_key]
    types = {c[0]: c[1] for c in described.table_meta.schema_of_primary_key}
    types.update((n, t) for n, t in described.table_meta.defined_columns)
    metas = [m for m in described.secondary_indexes
             if indexes is None or m.index_name in indexes]
    if not metas:
        return []
    base_rows = read_rows(client, table, base_names)
    exempt = exempt or {}
    problems = []
    for meta in metas:
        name, names = meta.index_name, index_key_names(meta, base_names)
        if getattr(meta, "index_sync_phase", None) == "ISP_FULL":
            problems.append(Problem(table, name, "table", detail=(
                "still loading its base data (ISP_FULL): check after wait_for_indexes")))
            continue
        try:
            got = read_rows(client, name, names)
        except Exception as e:  # noqa: BLE001 -- reported, the other indexes still checked
            problems.append(Problem(table, name, "table", detail=f"cannot read it: {e!r}"))
            continue
        want = expected_entries(base_rows, base_names, types, meta)
        problems += _compare(table, name, [names.index(n) for n in base_names], want, got,
                             exempt.get(name, ()) if name in exempt else frozenset())
        if refs and hasattr(client, "_indexer"):
            problems += _check_refs(client, table, name, names, base_names, types, got)
    return problems


def _compare(table, name, base_at, want, got, exempt) -> list:
    """The missing, phantom and wrong entries of index ``name``: ``want`` as
    ``expected_entries`` gives it, ``got`` as ``read_rows``; ``base_at``: where
    the base key's columns are in the index key; ``exempt``: base keys whose
    entry may be missing (None: any)."""
    problems = []
    for key in sorted(set(want) | set(got), key=repr):
        if key not in got:
            base_key, attributes = want[key]
            if exempt is None or base_key in exempt:
                continue
            problems.append(Problem(table, name, "missing", key, base_key, attributes))
        elif key not in want:
            problems.append(Problem(table, name, "phantom", key, tuple(key[i] for i in base_at),
                                    None, got[key]))
        elif got[key] != want[key][1]:
            problems.append(Problem(table, name, "wrong", key, want[key][0], want[key][1],
                                    got[key]))
    return problems


def _check_refs(client, table, name, index_names, base_names, types, got) -> list:
    """``<index>.refs`` must map each base row key to the index row key of
    its entry in ``got`` (the index's rows), and hold nothing else."""
    from .indexes import REFS_SUFFIX
    base_at = [index_names.index(n) for n in base_names]
    base_types = [types[n] for n in base_names]
    index_types = [types[n] for n in index_names]
    want = {}
    for key in got:
        base_key = tuple(key[i] for i in base_at)
        want[_rowcodec.encode_pk(base_types, list(base_key))] = (
            _rowcodec.encode_pk(index_types, list(key)), key, base_key)
    problems = []
    stored = dict(client._server.scan(name + REFS_SUFFIX))
    for row_key in sorted(set(want) | set(stored)):
        if row_key not in stored:
            _, key, base_key = want[row_key]
            problems.append(Problem(table, name, "refs", key, base_key,
                                    detail="no refs entry for this index row"))
        elif row_key not in want:
            problems.append(Problem(table, name, "refs", detail=(
                f"refs entry of base row key {row_key.hex()} names index row key "
                f"{stored[row_key].hex()}, and the index has no row of that base row")))
        elif stored[row_key] != want[row_key][0]:
            _, key, base_key = want[row_key]
            problems.append(Problem(table, name, "refs", key, base_key, detail=(
                f"refs names index row key {stored[row_key].hex()}")))
    return problems


def check_store(client, tables=None, timeout=60.0, exempt=None) -> tuple:
    """``(problems, indexes checked)`` of every table with an index (or of
    ``tables``), each after ``wait_for_indexes(table, timeout)``; a table whose
    indexes did not catch up in time is a ``table`` problem."""
    problems, checked = [], 0
    for table in tables if tables is not None else client.list_table():
        count = len(client.describe_table(table).secondary_indexes)
        if not count:
            continue
        if not client.wait_for_indexes(table, timeout):
            problems.append(Problem(table, "*", "table", detail=(
                f"its global indexes or back-fills did not catch up within {timeout:g} s")))
            continue
        problems += check_indexes(client, table, exempt=exempt)
        checked += count
    return problems, checked


def main(argv=None) -> int:
    from regions import cliutil
    ap = cliutil.Parser(prog=PROG, description="Check every secondary index of an embedded "
                        "store against its base table; exit 1 if one is wrong.")
    ap.add_argument("--data", type=cliutil.existing_dir, required=True, metavar="DIR",
                    help="the store's directory (an embedded instance; never made)")
    ap.add_argument("tables", nargs="*", metavar="TABLE",
                    help="tables whose indexes to check (default: every table with an index)")
    ap.add_argument("--timeout", type=cliutil.positive_float, default=60.0,
                    help="seconds to wait for global indexes and back-fills to catch up (60)")
    ap.add_argument("--no-base-data", action="append", default=[], metavar="INDEX",
                    help="an index created without include_base_data: a base row without "
                         "its entry is not a problem (repeatable)")
    args = ap.parse_args(argv)
    import regions
    from .client import OTSClient
    if not regions.RegionServer.exists(args.data):
        return cliutil.fail(PROG, f"no store at {args.data}")
    try:
        client = OTSClient(args.data)
    except Exception as e:  # noqa: BLE001 -- a store that does not open: one line
        return cliutil.fail(PROG, f"cannot open the store in {args.data}: {e}")
    with client:
        listed = client.list_table()
        unknown = [t for t in args.tables if t not in listed]
        if unknown:
            return cliutil.fail(PROG, f"no table {unknown[0]!r} in {args.data}")
        problems, checked = check_store(client, args.tables or None, args.timeout,
                                        dict.fromkeys(args.no_base_data))
        for problem in problems:
            print(problem)
        print(f"indexes checked: {checked}, problems: {len(problems)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
