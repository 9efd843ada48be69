# cython: language_level=3
"""C twins of the row reads of regions.tablestore (reads.py, client.py).

    RangePage                   the GetRange page loop (range_page, tests/rows_reference.py)
    RowReader                   OTSClient.get_row of a whole row by a plain key (OTSClient._get),
                                BatchGetRow's items of plain keys, and a BatchGetRow of them
                                whole (OTSClient.batch_get_row's Python path)
    result_rows                 no twin: the bench's floor of the results (ResultsOnly)

Tests run each against its Python twin on the same random inputs
(tests/test_tablestore_rows_c.py); keys are decoded by _rowcodec, cells by
_cellcodec.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t
from regions._api cimport (Buf, buf_put as _put, buf_put_byte as _put_byte, range_path,
                           range_scan_into)
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp
from regions.tablestore._layout cimport *
from regions.tablestore._cellcodec cimport (_as_bytes, _atomic, _head_cells, _head_cells_at,
                                            _maybe_atomic, _names_size, _new_untracked,
                                            _row_cells)
from regions.tablestore._rowcodec cimport _decode_one, _make_cu, _make_row, _plain_key, _read_cu

from regions.tablestore.metadata import (BatchGetRowRequest, BatchGetRowResponse, RowDataItem,
                                         TableInBatchGetRowItem)
from regions.tablestore.validate import BATCH_GET_ROWS, CELL_TS_BYTES, GOOD_NAMES

cdef extern from "Python.h":
    int PyGC_Enable()
    int PyGC_Disable()

cdef object _RowDataItem = RowDataItem
cdef object _BatchGetRowRequest = BatchGetRowRequest
cdef object _BatchGetRowResponse = BatchGetRowResponse
cdef object _TableInBatchGetRowItem = TableInBatchGetRowItem
cdef Py_ssize_t _CELL_TS_BYTES = CELL_TS_BYTES
cdef Py_ssize_t _BATCH_GET_ROWS = BATCH_GET_ROWS
cdef set _GOOD_TABLES = GOOD_NAMES["table"]             # table names checked valid


# -- one GetRange page ------------------------------------------------------
cdef class RangePage:
    """One GetRange page built from a scan's entries (twin of rows_reference.range_page).

    ``RangePage(npk, pk_names, fast, keep, max_rows, max_bytes, slow, live)``;
    ``run(entries)`` -> (rows, next start PK values or None, bytes read: the
    rows' CU size).
    Entries are grouped into rows (a row's entries are contiguous and start
    with its self-delimiting row key).  When ``fast`` (no columns_to_get,
    filter, time_range or TTL) every row is merged and decoded here
    (row_cells); otherwise rows go to ``slow(row_key, values, group)`` -> (Row
    parts or None, attribute bytes returned, row exists).  Once the page is
    full (max_rows rows scanned or returned, or max_bytes returned: the rows'
    CU size and CELL_TS_BYTES for each cell's timestamp, so the row that
    crosses max_bytes is the page's last), the first row ``live(row_key,
    group)`` says exists is the next start.  Not thread-safe: one object per page.

    ``scan(server, table, start, end, reverse, expect)`` is
    ``run(server.scan(table, start, end, reverse=reverse, expect=expect))``
    with the region server's scan in C (regions/_api.pxd,
    ``range_scan_into``) handing each entry in place (``_entry``): a row's
    first entry is kept in a buffer until the next row's shows the row whole,
    and a row that is one head is decoded from there, so the scan makes no
    object for its entries.
    """
    cdef Py_ssize_t npk, keep, max_rows, max_bytes, names_size, scanned, read_bytes, page_bytes
    cdef bint fast, done
    cdef list pk_names, rows
    cdef object slow, live, next_values
    # scan's row in hand: its first entry (key, then value) in ``first``, its
    # key's length and decoded values, its later entries (None: none yet)
    cdef Buf first
    cdef Py_ssize_t fkn, fvn, rklen, vsize
    cdef list pk, group
    cdef bint have_row

    def __dealloc__(self):
        free(self.first.p)

    def __init__(self, Py_ssize_t npk, pk_names, bint fast, Py_ssize_t keep,
                 Py_ssize_t max_rows, Py_ssize_t max_bytes, slow, live):
        self.npk, self.pk_names, self.fast, self.keep = npk, list(pk_names), fast, keep
        self.max_rows, self.max_bytes, self.slow, self.live = max_rows, max_bytes, slow, live
        self.names_size = _names_size(self.pk_names)

    cdef int _row(self, bytes first_key, first_value, Py_ssize_t rklen, list pk,
                  Py_ssize_t vsize, list group) except -1:
        """Account one complete row (``pk``: its primary key, the list a Row
        returns); sets ``done`` when it is the next start."""
        cdef Py_ssize_t size = 0
        cdef list cells
        if self._full():
            if group is None:
                group = [(first_key, first_value)]
            if self.live(first_key[:rklen], group):
                self.next_values = _pk_values(pk)
                self.done = True
            return 0
        if self.fast:
            if group is None and PyBytes_GET_SIZE(first_key) == rklen + 1:
                cells = _head_cells(_as_bytes(first_value), self.keep, &size)
            else:
                cells = _row_cells(rklen, group if group is not None
                                   else [(first_key, first_value)], self.keep, &size)
            if cells is not None:
                self.scanned += 1
                self._returned(vsize + size, PyList_GET_SIZE(cells))
                self.rows.append(_make_row(pk, cells))
            return 0
        if group is None:
            group = [(first_key, first_value)]
        parts, size, exists = self.slow(first_key[:rklen], _pk_values(pk), group)
        if exists:
            self.scanned += 1
        if parts is not None:
            self._returned(vsize + size, len(parts[1]))
            self.rows.append(_make_row(parts[0], parts[1]))
        return 0

    cdef inline bint _full(self) noexcept:
        """Whether the page holds all it may (``_row``: the next row is the next start)."""
        return (self.scanned >= self.max_rows or self.page_bytes >= self.max_bytes
                or PyList_GET_SIZE(self.rows) >= self.max_rows)

    cdef inline void _returned(self, Py_ssize_t size, Py_ssize_t ncells):
        """Count a row returned: its key's values and cells of CU ``size``
        (the key's names added here), and ``ncells`` cells' timestamps."""
        self.read_bytes += self.names_size + size
        self.page_bytes += self.names_size + size + ncells * _CELL_TS_BYTES

    def run(self, entries):
        """(rows, next start PK values or None, bytes read) of the page.

        The page is built with the cyclic GC paused (its state restored
        after): its rows are thousands of small containers alive at once,
        and every collection the allocations trigger while the page grows
        walks them all (a 5,000-row page: ~40 young and one full collection
        in three pages, more than half of GetRange's time).  The pause is
        bounded by the page (RANGE_ROWS rows, RANGE_BYTES); it is global, so
        other threads' allocations trigger no collection meanwhile either:
        the next one runs after."""
        cdef int was_enabled = PyGC_Disable()
        try:
            return self._run(entries)
        finally:
            if was_enabled:
                PyGC_Enable()

    def scan(self, server, table, start, end, bint reverse, Py_ssize_t expect):
        """``run(server.scan(table, start, end, reverse=reverse, expect=expect))``:
        through the server's C scan when it has one (``range_path``), else
        that very call.  The cyclic GC is paused as ``run`` pauses it."""
        cdef int was_enabled
        path = range_path(server)
        if path is None:
            return self.run(server.scan(table, start, end, reverse=reverse, expect=expect))
        was_enabled = PyGC_Disable()
        try:
            self._start()
            self.have_row, self.group, self.pk = False, None, None
            if range_scan_into(path, table, start, end, reverse, expect, _page_entry,
                               <void*>self) == 1:
                return self._run(server.scan(table, start, end, reverse=reverse, expect=expect))
            if self.have_row and not self.done:
                self._row_in_hand()
            self.have_row, self.group, self.pk = False, None, None
            return self.rows, self.next_values, self.read_bytes
        finally:
            if was_enabled:
                PyGC_Enable()

    cdef int _entry(self, const unsigned char* kp, Py_ssize_t kn, const unsigned char* vp,
                    Py_ssize_t vn) except -1:
        """One entry of ``scan`` (``_run``'s loop body, in place): 1 once the
        page is done (the entry is not needed), else 0."""
        cdef Py_ssize_t rklen = self.rklen, pos = 0, vsize = 0, i
        cdef list pk, names = self.pk_names
        if (self.have_row and kn > rklen and (kp[rklen] == ROW_HEAD or kp[rklen] == ROW_DELTA)
                and memcmp(kp, self.first.p, rklen) == 0):
            if self.group is None:
                self.group = [self._first_entry()]
            self.group.append((PyBytes_FromStringAndSize(<const char*>kp, kn),
                               PyBytes_FromStringAndSize(<const char*>vp, vn)))
            return 0
        if self.have_row:
            self._row_in_hand()
            if self.done:
                return 1
        pk = []                     # the row's key decoded into the list its Row holds
        for i in range(self.npk):
            pk.append(_maybe_atomic((names[i], _decode_one(kp, kn, &pos, &vsize))))
        self.first.n = 0
        _put(&self.first, kp, kn)
        _put(&self.first, vp, vn)
        self.fkn, self.fvn, self.rklen, self.vsize = kn, vn, pos, vsize
        self.pk, self.group, self.have_row = pk, None, True
        return 0

    cdef tuple _first_entry(self):
        """The row in hand's first entry as ``(key, value)`` bytes."""
        return (PyBytes_FromStringAndSize(<const char*>self.first.p, self.fkn),
                PyBytes_FromStringAndSize(<const char*>self.first.p + self.fkn, self.fvn))

    cdef int _row_in_hand(self) except -1:
        """``_row`` of the row in hand; a row that is one head, on a page not
        full, decoded from the buffer (``_row``'s fast case, in place)."""
        cdef Py_ssize_t size = 0
        cdef tuple entry
        self.have_row = False
        if self.fast and self.group is None and self.fkn == self.rklen + 1 and not self._full():
            cells = _head_cells_at(<const unsigned char*>self.first.p + self.fkn, self.fvn,
                                   self.keep, &size)
            if cells is not None:
                self.scanned += 1
                self._returned(self.vsize + size, PyList_GET_SIZE(cells))
                self.rows.append(_make_row(self.pk, cells))
            return 0
        entry = self._first_entry()
        return self._row(<bytes>entry[0], entry[1], self.rklen, self.pk, self.vsize, self.group)

    cdef inline void _start(self):
        self.rows = []
        self.scanned = self.read_bytes = self.page_bytes = 0
        self.done = False
        self.next_values = None

    cdef _run(self, entries):
        cdef bytes key, first_key = None
        cdef const unsigned char* kp
        cdef const unsigned char* rp = NULL
        cdef Py_ssize_t rklen = 0, pos, vsize = 0, i
        cdef list group = None, pk = None, names = self.pk_names
        first_value = None
        self._start()
        for key, value in entries:
            kp = <const unsigned char*>PyBytes_AS_STRING(key)
            if (first_key is not None and PyBytes_GET_SIZE(key) > rklen
                    and (kp[rklen] == ROW_HEAD or kp[rklen] == ROW_DELTA) and memcmp(kp, rp, rklen) == 0):
                if group is None:
                    group = [(first_key, first_value)]
                group.append((key, value))
                continue
            if first_key is not None:
                self._row(first_key, first_value, rklen, pk, vsize, group)
                if self.done:
                    break
            pos = vsize = 0
            pk = []                     # the row's key decoded into the list its Row holds
            for i in range(self.npk):
                pk.append(_maybe_atomic((names[i], _decode_one(kp, PyBytes_GET_SIZE(key), &pos,
                                                               &vsize))))
            first_key, first_value, rklen, rp, group = key, value, pos, kp, None
        else:
            if first_key is not None:
                self._row(first_key, first_value, rklen, pk, vsize, group)
        return self.rows, self.next_values, self.read_bytes


cdef int _page_entry(void* ctx, const unsigned char* key, Py_ssize_t klen,
                     const unsigned char* value, Py_ssize_t vlen) except -1:
    """The ``entry_fn`` of ``RangePage.scan`` (``ctx``: the page)."""
    return (<RangePage>ctx)._entry(key, klen, value, vlen)


# -- GetRow and BatchGetRow of whole rows ----------------------------------------
# A TableInBatchGetRowItem's read arguments other than max_version (its
# fields), which a whole read leaves None; and what a field deleted reads as.
cdef tuple _OTHER_READ_ARGUMENTS = ("columns_to_get", "column_filter", "time_range",
                                    "start_column", "end_column", "token")
cdef object _READ_ARGUMENT_MISSING = object()


cdef object _whole_read_keys(item):
    """The keys of a BatchGetRow table item whose rows are read whole as
    ``RowReader.items`` reads them: a TableInBatchGetRowItem (this class),
    ``max_version`` the int 1, every other read argument None, its keys a
    list; else None."""
    if type(item) is not _TableInBatchGetRowItem:
        return None
    max_version = getattr(item, "max_version", None)
    if type(max_version) is not int or max_version != 1:
        return None
    for name in _OTHER_READ_ARGUMENTS:
        if getattr(item, name, _READ_ARGUMENT_MISSING) is not None:
            return None
    primary_keys = getattr(item, "primary_keys", None)
    return primary_keys if type(primary_keys) is list else None


cdef class _Keys:
    """One table's keys of a BatchGetRow (``RowReader.items``,
    ``batch_request``), planned for one read: the keys encoded into one
    buffer, each plain key's columns kept for its row's primary key
    (``_plain_key``'s ``columns``: the caller's tuples) in one flat list,
    ``npk`` a key, its CU size and row-key length in C arrays, so a key
    costs no object but its two range bounds.  One per call."""
    cdef list names, types, ranges, cols
    cdef Py_ssize_t n, npk
    cdef Py_ssize_t* ksize              # a key's CU size, -1: not plain
    cdef Py_ssize_t* rklen              # its row key's length

    def __cinit__(self, schema, Py_ssize_t n):
        self.names, self.types = <list?>schema.names, <list?>schema.types
        self.n, self.npk = n, len(self.names)
        self.ranges, self.cols = [], []
        self.ksize = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
        self.rklen = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
        if self.ksize == NULL or self.rklen == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.ksize)
        free(self.rklen)

    cdef bint plan(self, primary_keys, bint strict) except -1:
        """Check and encode the first ``n`` keys of ``primary_keys``, each
        into its row's range (``_bounds``); a key not plain is marked, or
        with ``strict`` ends the plan: False."""
        cdef Py_ssize_t i, mark
        cdef Buf b
        b.p, b.n, b.cap = NULL, 0, 0
        try:
            for i in range(self.n):
                b.n = 0
                self.ksize[i] = 0
                mark = PyList_GET_SIZE(self.cols)
                if _plain_key(self.names, self.types, primary_keys[i], &b, &self.ksize[i],
                              self.cols, True):
                    self.rklen[i] = b.n
                    self.ranges.append(_bounds(&b))
                elif strict:
                    return False
                else:
                    self.ksize[i] = -1
                    del self.cols[mark:]          # a key found not plain midway
            return True
        finally:
            free(b.p)

    cdef list read(self, server, table_name, item_table_name):
        """The keys' result items, None where a key is not plain: the planned
        rows read in one call (``server.read_ranges``: one read of each
        region's store, at one sequence, for the keys of one region that
        follow each other)."""
        cdef list out = [None] * self.n, got
        cdef Py_ssize_t i, j = 0, csize
        got = server.read_ranges(table_name, self.ranges)
        for i in range(self.n):
            if self.ksize[i] < 0:
                continue
            csize = 0
            row = _read_row(self.cols, j * self.npk, self.npk, self.rklen[i], got[j], &csize)
            j += 1
            out[i] = _make_item(item_table_name, _row_cu(row, self.ksize[i], csize), row)
        return out


cdef class RowReader:
    """``OTSClient.get_row(table, primary_key)`` with every other argument at
    its default, in one C call: the key checked and encoded, the row read
    (``server.read_range``), merged and decoded (``row_cells``), its Row and
    read CU built.  ``get`` returns what ``get_row`` returns, or None when
    the read is not plain (then the Python path, ``OTSClient._get``, its
    twin, decides and raises what it raises): a table not in ``schemas`` or
    with a TTL, a key that ``validate._plain_pk`` would not pass as plain,
    or a key type other than INTEGER and STRING.  ``items`` reads a
    BatchGetRow table's keys so, ``batch_request`` a BatchGetRow whole.
    ``schemas`` is the client's own dict (name -> Schema), read at each
    call.  Thread-safe.
    """
    cdef dict _schemas
    cdef object _server

    def __init__(self, dict schemas not None, server):
        self._schemas = schemas
        self._server = server

    def get(self, table_name, primary_key):
        """(consumed, Row or None, b"") as ``get_row`` returns, or None."""
        cdef list names, types, cols = []
        cdef Py_ssize_t ksize = 0, csize = 0
        cdef bytes row_key, end
        cdef Buf b
        schema = self._schema(table_name)
        if schema is None:
            return None
        names, types = <list?>schema.names, <list?>schema.types
        b.p, b.n, b.cap = NULL, 0, 0
        try:
            if not _plain_key(names, types, primary_key, &b, &ksize, cols, True):
                return None
            row_key, end = _bounds(&b)
        finally:
            free(b.p)
        row = _read_row(cols, 0, len(names), PyBytes_GET_SIZE(row_key),
                        self._server.read_range(table_name, row_key, end), &csize)
        return _row_cu(row, ksize, csize), row, b""

    def item(self, table_name, primary_key, item_table_name):
        """The BatchGetRow result item of the row (``RowDataItem(True, None,
        None, item_table_name, consumed, ...)``, its attributes set in the
        order its ``__init__`` sets them; untracked by the GC, as the row
        and its CU are: see _cellcodec.pxd), or None."""
        return self.items(table_name, [primary_key], item_table_name)[0]

    def items(self, table_name, primary_keys, item_table_name):
        """``[item(table_name, pk, item_table_name) for pk in primary_keys]``,
        None where a read is not plain: BatchGetRow's items of a table, its
        plain rows read in one call (``_Keys``).

        Built with the cyclic GC paused, as a GetRange page is (RangePage.run):
        a batch's worth (BATCH_GET_ROWS) of small objects is allocated, and the
        collections the allocations would trigger one after another cost more
        than the reads.  The pause is global and bounded by the batch; the
        collection runs after."""
        cdef _Keys keys
        cdef Py_ssize_t n
        cdef int was_enabled = PyGC_Disable()
        try:
            n = len(primary_keys)
            schema = self._schema(table_name)
            if schema is None:
                return [None] * n
            keys = _Keys(schema, n)
            keys.plan(primary_keys, False)
            return keys.read(self._server, table_name, item_table_name)
        finally:
            if was_enabled:
                PyGC_Enable()

    def batch_request(self, request):
        """``OTSClient.batch_get_row(request)``'s answer when every read of
        ``request`` is one ``items`` takes whole: a BatchGetRowRequest (this
        class) naming tables, each by a str that ``check_name`` passed
        before (``validate.GOOD_NAMES``) and that ``schemas`` holds without
        a TTL, with a TableInBatchGetRowItem (this class) of ``max_version``
        the int 1, no other read argument (``_whole_read_keys``) and a list
        of plain keys (``_plain_key``), BATCH_GET_ROWS keys at most in all;
        else None, having read nothing: the client's Python path then checks
        the request and answers or raises what it does.  Every key is
        checked before any row is read; the rows are read as ``items`` reads
        them, table by table, in the request's order.  The GC is paused for
        the whole call, the response included (``items`` says why)."""
        cdef Py_ssize_t total = 0
        cdef list plans = []
        cdef dict result = {}
        cdef _Keys keys
        cdef int was_enabled
        if type(request) is not _BatchGetRowRequest:
            return None
        tables = getattr(request, "items", None)
        if type(tables) is not dict or not tables:
            return None
        was_enabled = PyGC_Disable()
        try:
            for table_name, item in (<dict>tables).items():
                if type(table_name) is not str or table_name not in _GOOD_TABLES:
                    return None
                schema = self._schema(table_name)
                primary_keys = _whole_read_keys(item)
                if schema is None or primary_keys is None:
                    return None
                total += PyList_GET_SIZE(primary_keys)
                if total > _BATCH_GET_ROWS:
                    return None
                keys = _Keys(schema, PyList_GET_SIZE(primary_keys))
                if not keys.plan(primary_keys, True):
                    return None
                plans.append((table_name, keys))
            for table_name, keys in plans:
                result[table_name] = keys.read(self._server, table_name, table_name)
            return _BatchGetRowResponse(result)
        finally:
            if was_enabled:
                PyGC_Enable()

    cdef object _schema(self, table_name):
        """The table's Schema, or None when its reads are not plain."""
        if type(table_name) is not str:
            return None
        schema = self._schemas.get(table_name)
        if schema is None or schema.ttl > 0:
            return None
        return schema


cdef list _pk_values(list pk):
    """The values of a primary key's (name, value) list."""
    return [(<tuple>col)[1] for col in pk]


cdef object _make_item(table_name, consumed, row):
    """``RowDataItem(True, None, None, table_name, consumed, ...)`` of ``row``
    (a Row or None) without the Python-level __init__: its attributes set in
    the order its ``__init__`` sets them; untracked, as the row and its CU are
    (see _cellcodec.pxd)."""
    item = _new_untracked(_RowDataItem)
    item.is_ok = True
    item.error_code = None
    item.error_message = None
    item.table_name = table_name
    item.consumed = consumed
    item.row = row
    return item


cdef tuple _bounds(Buf* b):
    """``(row_key, end)``: the row key in ``b`` and the end of its row's range
    (the row key and ROW_END; ``b`` is left holding it)."""
    row_key = PyBytes_FromStringAndSize(<char*>b.p, b.n)
    _put_byte(b, ROW_END)
    return row_key, PyBytes_FromStringAndSize(<char*>b.p, b.n)


cdef object _read_row(list cols, Py_ssize_t at, Py_ssize_t npk, Py_ssize_t rklen, entries,
                      Py_ssize_t* csize):
    """The Row of a row read whole as ``entries``, or None when it does not
    exist; the CU size of its cells added to ``csize``.  Its primary key is
    its key's columns as ``_plain_key`` kept them, ``cols[at:at + npk]``."""
    if not entries:
        return None
    cells = _row_cells(rklen, entries if type(entries) is list else list(entries), 1, csize)
    if cells is None:
        return None
    return _make_row(cols[at:at + npk], cells)


cdef object _row_cu(row, Py_ssize_t ksize, Py_ssize_t csize):
    """The read CU of a GetRow (OTSClient._get's): nothing read for a missing
    row, else the key's and the cells' sizes."""
    return _read_cu(0 if row is None else ksize + csize)


# -- the results' floor (bench/test_bench_rows.py) ---------------------------
def result_rows(str pk_name not None, tuple names not None, keys, bytes raw not None,
                double real, int64_t stamp, item_table_name=None):
    """The results a read of the rows of INTEGER ``keys`` returns, built from
    values in hand by the C code our reads build them with, and nothing else
    (no store read, no row's layout decoded): the floor that
    bench/test_bench_rows.py's ``ResultsOnly`` measures.

    Row ``i`` is a Row of ``[(pk_name, i)]`` and the cells ``(names[0], i,
    ts)``, ``(names[1], raw decoded as UTF-8, ts)``, ``(names[2], real, ts)``:
    ``ts = stamp + i`` is one new int its cells share, the key's ``i`` and
    the cell's are new ints (``keys`` read as C integers), the string a new
    str, as any store that reads them makes them; the names are the ones
    handed in, the tuples and lists made directly, the Row made without its
    ``__init__``, all untracked by the GC (``_make_row``, ``_atomic``,
    ``_maybe_atomic``: RangePage's and RowReader's).  With
    ``item_table_name`` each row comes in its BatchGetRow item with its
    CapacityUnit(1, 0), as ``RowReader.items`` makes them (``_make_item``,
    ``_make_cu``).  Built with the cyclic GC paused, as a page and a batch
    are."""
    cdef int64_t i
    cdef list out = []
    cdef const char* p = PyBytes_AS_STRING(raw)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(raw)
    cdef object ts
    cdef int was_enabled = PyGC_Disable()
    name_a, name_b, name_c = names
    try:
        for k in keys:
            i = k
            ts = stamp + i
            row = _make_row([_maybe_atomic((pk_name, i))],
                            [_atomic((name_a, i, ts)),
                             _atomic((name_b, PyUnicode_DecodeUTF8(p, n, NULL), ts)),
                             _atomic((name_c, real, ts))])
            out.append(row if item_table_name is None
                       else _make_item(item_table_name, _make_cu(1, 0), row))
        return out
    finally:
        if was_enabled:
            PyGC_Enable()
