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

Hot paths have C twins in ``regions.tablestore._rows`` (the client uses
those): ``head_cells`` (a row that is one PutRow head, read whole) and
``row_cells`` (a row read whole) and ``range_page`` (the GetRange page loop).  The functions here are the
reference the twins are tested against.  Pure functions, thread-safe.
"""
from . import cells, pkcodec
from .capacity import cells_size, pk_size
from .columns import column_window
from .conditions import evaluate
from .metadata import Row

__all__ = ["row_entries", "visible", "select", "read_columns", "project", "assemble", "whole_read",
           "head_cells", "row_cells", "range_page", "group_rows", "PK_PROJECTIONS"]


def row_entries(server, table, row_key):
    """The (key, value) entries of row ``row_key`` of ``table``: one region-server scan."""
    return list(server.scan(table, row_key, cells.row_end(row_key)))


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
    if column_filter is not None and not evaluate(column_filter, chosen):
        return None, 0, True
    parts = project(schema.names, pk_values, chosen, names, pk_projection)
    if parts is None:
        return None, 0, True
    return parts, cells_size(parts[1]), True


def whole_read(schema, names, time_range, column_filter, window=None):
    """True when a read returns a row's newest versions whole: no columns_to_get,
    time_range, filter, column window or TTL; then a row that is one PutRow head
    is its cells (``head_cells``) and ``assemble`` is not needed."""
    return (names is None and column_filter is None and time_range is None
            and window is None and schema.ttl <= 0)


def head_cells(data, keep):
    """(cells or None, CU size of the cells) of a head value read whole.

    The head's cells are already in read order, so this is ``decode_head``
    trimmed to ``keep`` versions a column: what ``assemble`` returns for a
    row that is one head when ``whole_read`` holds and keep = min(max_version,
    the table's max_versions).  None (size 0) for a DELETED head; [] for a
    PUT head without cells (a row that holds only its primary key).
    """
    cell_list = cells.decode_head(data)[1]
    if cell_list is None:
        return None, 0
    out = []
    prev, count = None, 0
    for cell in cell_list:
        if cell[0] != prev:
            prev, count = cell[0], 0
        count += 1
        if count <= keep:
            out.append(cell)
    return out, cells_size(out)


def row_cells(row_key_len, entries, keep):
    """(cells or None, CU size of the cells) of one row's (key, value) entries
    read whole (``whole_read``, keep = min(max_version, the table's
    max_versions)): exactly what ``assemble`` returns then, for any row (head,
    deltas, or both); None when the row does not exist.  A row that is one
    head takes ``head_cells``.  C twin: ``_rows.row_cells``."""
    head, deltas = cells.split_entries(row_key_len, entries)
    if not deltas:
        return (None, 0) if head is None else head_cells(head, keep)
    exists, columns = cells.merge_row(row_key_len, head, deltas)
    if not exists:
        return None, 0
    out = [(n, v, ts) for n in sorted(columns) for ts, v in columns[n][:keep]]
    return out, cells_size(out)


def group_rows(entries, npk):
    """Group a scan's (key, value) entries by row: yields (row_key, pk values, entries).

    A row's entries are contiguous (forward or reverse) and each starts with
    the row key, which is self-delimiting (pkcodec; ``cells.in_row``).
    """
    in_row = cells.in_row
    row_key = None
    group = []
    values = None
    for key, value in entries:
        if row_key is not None and in_row(key, row_key):
            group.append((key, value))
            continue
        if row_key is not None:
            yield row_key, values, group
        values, end = pkcodec.decode_pk(key, npk)
        row_key = key[:end]
        group = [(key, value)]
    if row_key is not None:
        yield row_key, values, group


def range_page(entries, npk, pk_names, fast, keep, max_rows, max_bytes, slow, live):
    """One GetRange page: (rows, next start PK values or None, bytes returned).

    Rows are read until ``max_rows`` rows were scanned or returned or
    ``max_bytes`` returned; then the first row that ``live(row_key, group)``
    says exists is the next start.  With ``fast`` (``whole_read``) a row is
    ``row_cells``; otherwise it is ``slow(row_key, values, group)`` -> (Row
    parts or None, attribute bytes returned, row exists).  A row counts as
    scanned when it exists; its bytes (primary key and attribute cells)
    count when it is returned.  C twin: ``_rows.RangePage``.
    """
    rows = []
    scanned = read_bytes = 0
    for row_key, values, group in group_rows(entries, npk):
        if scanned >= max_rows or read_bytes >= max_bytes or len(rows) >= max_rows:
            if live(row_key, group):
                return rows, values, read_bytes
            continue
        if fast:
            cell_list, size = row_cells(len(row_key), group, keep)
            if cell_list is not None:
                scanned += 1
                read_bytes += pk_size(zip(pk_names, values)) + size
                rows.append(Row(list(zip(pk_names, values)), cell_list))
            continue
        parts, size, exists = slow(row_key, values, group)
        if exists:
            scanned += 1
        if parts is not None:
            read_bytes += pk_size(zip(pk_names, values)) + size
            rows.append(Row(parts[0], parts[1]))
    return rows, None, read_bytes
