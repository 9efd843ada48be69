"""Pure-Python references of the C read paths in regions.tablestore (_cellcodec, _rowcodec, _reads).

The client reads through the C twins; these are what they are tested
against, value for value (tests/test_tablestore_rows_c.py), and the plainest
statement of what each computes.  They build on the production functions
(cells.split_entries, cells.merge_row, cells.decode_head, cells.in_row,
pkcodec.decode_pk, capacity) so the layout is still said once.
"""
from regions.tablestore import cells, pkcodec
from regions.tablestore.capacity import cells_size, pk_size
from regions.tablestore.metadata import Row
from regions.tablestore.validate import CELL_TS_BYTES


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
    head takes ``head_cells``.  C twin: ``_cellcodec.row_cells``."""
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
    ``max_bytes`` returned (bytes returned and CELL_TS_BYTES a cell); then
    the first row that ``live(row_key, group)`` says exists is the next start.  With ``fast`` (``whole_read``) a row is
    ``row_cells``; otherwise it is ``slow(row_key, values, group)`` -> (Row
    parts or None, attribute bytes returned, row exists).  A row counts as
    scanned when it exists; its bytes (primary key and attribute cells)
    count when it is returned.  C twin: ``_reads.RangePage``.
    """
    rows = []
    scanned = read_bytes = page_bytes = 0
    for row_key, values, group in group_rows(entries, npk):
        if scanned >= max_rows or page_bytes >= max_bytes or len(rows) >= max_rows:
            if live(row_key, group):
                return rows, values, read_bytes
            continue
        if fast:
            cell_list, size = row_cells(len(row_key), group, keep)
            if cell_list is not None:
                scanned += 1
                read_bytes += pk_size(zip(pk_names, values)) + size
                page_bytes += pk_size(zip(pk_names, values)) + size + CELL_TS_BYTES * len(cell_list)
                rows.append(Row(list(zip(pk_names, values)), cell_list))
            continue
        parts, size, exists = slow(row_key, values, group)
        if exists:
            scanned += 1
        if parts is not None:
            read_bytes += pk_size(zip(pk_names, values)) + size
            page_bytes += pk_size(zip(pk_names, values)) + size + CELL_TS_BYTES * len(parts[1])
            rows.append(Row(parts[0], parts[1]))
    return rows, None, read_bytes
