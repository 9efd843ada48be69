"""Read-side row assembly: from a row's stored entries to the SDK's Row shape.

Steps, in order (each a function, so GetRow, BatchGetRow and GetRange share
them): merge the row's head and deltas (cells.merge_row), apply the table's
max_versions and TTL (``visible``), apply the read's time_range and
max_version (``select``), ``columns_to_get`` (``read_columns``: a filter sees
only what is read), the wide-row column window (columns.py), the column
filter (conditions.evaluate), then the returned shape (``project``).
Returned rows carry PK columns in schema
order and attribute columns sorted by name, versions newest first, as
(name, value, ts) triples.  A row exists whatever columns it has left
(cells.row_exists): an existing row with no column read is returned with
its primary key and no attribute column.

The C path: a read that ``whole_read`` allows decodes its rows in C
(``_cellcodec.row_cells``: a row that is one PutRow head as it lies, another
merged), and GetRow and BatchGetRow of plain keys run whole in one C call
(``_reads.RowReader``: ``get``; ``batch_request``, the request's checks
included; a BatchGetRow it declines still reads each table's plain keys in
one call, ``items``).  This module is the one place reads choose:
``decode_in_c`` for a row's decode (GetRow's ``read_row``, the GetRange
page's ``fast`` rows), ``row_reader`` for the C reader, which declines (None)
every read it does not take; LSM_REGIONS_PUREPYTHON (lsm/purepython.py)
sends them all to the functions here.  The C code's pure-Python references,
which the tests run against it, are these functions and
tests/rows_reference.py.  Pure functions, thread-safe.
"""
from regions import PUREPYTHON

from . import _cellcodec, _reads, cells
from .capacity import cells_size
from .columns import column_window
from .conditions import evaluate

__all__ = ["row_entries", "visible", "select", "read_columns", "project", "assemble", "whole_read",
           "decode_in_c", "read_row", "row_reader", "PK_PROJECTIONS"]


def row_entries(server, table, row_key):
    """The (key, value) entries of row ``row_key`` of ``table``: one region-server scan."""
    return server.read_range(table, row_key, cells.row_end(row_key))


def visible(row_key_len, head, deltas, ttl, max_versions, now_ms):
    """{name: [(ts, value)] newest first} of the row's live cells, or None when
    the row does not exist (a row that exists with no live cell gives {})."""
    if head is not None and not deltas:
        gen, cell_list = cells.decode_head(head)
        if cell_list is None:
            return None
        columns = {}
        for name, value, ts in cell_list:
            columns.setdefault(name, []).append((ts, value))
    else:
        exists, columns = cells.merge_row(row_key_len, head, deltas)
        if not exists:
            return None
    min_ts = now_ms - ttl * 1000 if ttl > 0 else None
    out = {}
    for name, versions in columns.items():
        versions = versions[:max_versions]
        if min_ts is not None:
            versions = [v for v in versions if v[0] >= min_ts]
        if versions:
            out[name] = versions
    return out


def select(columns, max_version, time_range):
    """The versions a read asks for: within [lo, hi) and at most ``max_version`` per column."""
    if time_range is None and max_version is not None and max_version >= 1:
        if max_version == 1:
            return {n: v[:1] for n, v in columns.items()}
        return {n: v[:max_version] for n, v in columns.items()}
    out = {}
    lo, hi = time_range if time_range is not None else (None, None)
    for name, versions in columns.items():
        if lo is not None:
            versions = [v for v in versions if lo <= v[0] < hi]
        if max_version is not None:
            versions = versions[:max_version]
        if versions:
            out[name] = versions
    return out


def read_columns(columns, names):
    """The attribute columns a read reads: all, or those ``columns_to_get`` names."""
    if names is None:
        return columns
    return {n: v for n, v in columns.items() if n in names}


PK_PROJECTIONS = ("full", "requested")


def project(pk_names, pk_values, columns, names, pk_projection="full"):
    """(primary_key, attribute_columns) to return, or None when nothing named exists.

    ``columns`` are the row's read columns (``read_columns``), ``names`` the
    set from ``columns_to_get`` or None for all columns.  With no
    ``columns_to_get`` an existing row is returned whole, with no attribute
    column if it has none.  With ``columns_to_get`` a row is returned when at
    least one named column, primary key or attribute, exists in it (the
    service: naming only absent attributes reads no row).  The returned
    primary key is the full key (``pk_projection="full"``, the service), or
    only the named key columns (``"requested"``, the 2017 guide's examples).
    """
    attrs = [(n, v, ts) for n in sorted(columns) for ts, v in columns[n]]
    if names is None:
        return list(zip(pk_names, pk_values)), attrs
    named_pk = [(n, v) for n, v in zip(pk_names, pk_values) if n in names]
    if not named_pk and not attrs:
        return None
    if pk_projection == "full":
        return list(zip(pk_names, pk_values)), attrs
    return named_pk, attrs


def assemble(schema, pk_values, row_key_len, head, deltas, now_ms, names, max_version,
             time_range, column_filter, pk_projection="full", window=None):
    """(Row parts or None, bytes returned, row exists) of one stored row for a read.

    The filter sees only the columns read (``columns_to_get`` and the column
    ``window``, a columns.Window or None), so a column left out is missing
    for it; the bytes count the attribute cells returned (the caller adds the
    primary key): what read CU and the 4 MB page cut count.
    """
    live = visible(row_key_len, head, deltas, schema.ttl, schema.max_versions, now_ms)
    if live is None:
        return None, 0, False
    chosen = read_columns(select(live, max_version, time_range), names)
    if window is not None:
        chosen = column_window(chosen, *window)
    if column_filter is not None and not evaluate(column_filter, _with_pk(schema.names, pk_values,
                                                                        chosen)):
        return None, 0, True
    parts = project(schema.names, pk_values, chosen, names, pk_projection)
    if parts is None:
        return None, 0, True
    return parts, cells_size(parts[1]), True


def _with_pk(pk_names, pk_values, columns):
    """The columns a filter sees: the row's primary-key columns too (a filter
    on a key column compares the key: the Java SDK's UnifiedFilterAdvanceTest)."""
    view = {n: [(0, v)] for n, v in zip(pk_names, pk_values)}
    view.update(columns)
    return view


def whole_read(schema, names, time_range, column_filter, window=None):
    """True when a read returns a row's newest versions whole: no columns_to_get,
    time_range, filter, column window or TTL; then a row that is one PutRow head
    is its cells (``head_cells``) and ``assemble`` is not needed."""
    return (names is None and column_filter is None and time_range is None
            and window is None and schema.ttl <= 0)


def decode_in_c(schema, names, time_range, column_filter, window=None):
    """Whether rows read with these arguments are decoded in C (``whole_read``),
    or by ``assemble``: the one choice of the read path (False under
    LSM_REGIONS_PUREPYTHON)."""
    return not PUREPYTHON and whole_read(schema, names, time_range, column_filter, window)


def read_row(schema, pk_values, row_key_len, entries, names, max_version, time_range,
             column_filter, pk_projection="full", window=None, now_ms=None):
    """(Row parts or None, bytes returned) of a row read as ``entries`` (GetRow's
    decode): merged and decoded in C when ``decode_in_c``, else ``assemble``."""
    if decode_in_c(schema, names, time_range, column_filter, window):
        cell_list, size = _cellcodec.row_cells(row_key_len, entries,
                                              min(max_version, schema.max_versions))
        if cell_list is None:
            return None, 0
        return (list(zip(schema.names, pk_values)), cell_list), size
    head, deltas = cells.split_entries(row_key_len, entries)
    parts, size, _ = assemble(schema, pk_values, row_key_len, head, deltas,
                              cells.now_ms() if now_ms is None else now_ms, names, max_version,
                              time_range, column_filter, pk_projection, window)
    return parts, size


def row_reader(schemas, server):
    """GetRow's and BatchGetRow's C path, ``_reads.RowReader``: a whole row of a
    plain key of a table in ``schemas`` (the client's dict, read at each call)
    in one call; every other read it declines (None), and so every read under
    LSM_REGIONS_PUREPYTHON (it then knows no table)."""
    return _reads.RowReader({} if PUREPYTHON else schemas, server)
