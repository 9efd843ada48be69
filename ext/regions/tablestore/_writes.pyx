# cython: language_level=3
"""C twins of the plain writes of regions.tablestore (writes.py).

    plain_put, plain_update     writes.prepare of a plain PutRow / UpdateRow (its Python checks)
    PlainWriter                 RowWriter.run / run_batch of plain rows written unconditionally;
                                OTSClient.put_row, update_row, batch_write_row of them whole
    stripe, stripe_locks        the row lock a row key takes, the locks a batch takes in order
                                (RowWriter's and the transactions' too: the one statement)

writes.RowWriter owns the PlainWriter and is the one place a write takes
this path or its own.  Tests run each against its Python twin on the same
random inputs (tests/test_tablestore_rows_c.py); keys are encoded by
_rowcodec, heads and deltas by _cellcodec.  Nothing here imports writes.py:
what it needs of it (``failed_item``, ``write_failed``) is handed in at
construction.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String
from regions._api cimport Buf, buf_put as _put
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc
from regions.tablestore._cellcodec cimport (_delta_key, _new_untracked, _now_ms, _put_delta,
                                            _stamp_head, _unstamped_head, _utf8_len)
from regions.tablestore._rowcodec cimport _make_row, _plain_key, _write_cu

from regions.tablestore import cells as _cells_module
from regions.tablestore.metadata import (BatchWriteRowRequest, BatchWriteRowResponse,
                                         BatchWriteRowResponseItem, BatchWriteRowType,
                                         Condition, PutRowItem, ReturnType, Row,
                                         RowExistenceExpectation)
from regions.tablestore.validate import (BATCH_WRITE_BYTES, BATCH_WRITE_ROWS, GOOD_NAMES,
                                         MAX_ROW_WRITE_BYTES, MAX_WRITE_COLUMNS, SHORT_VALUE_STR)

cdef extern from "Python.h":
    int PyGC_Enable()
    int PyGC_Disable()
    Py_ssize_t _Py_HashBytes(const void* src, Py_ssize_t size)

cdef object _Row = Row
cdef Py_ssize_t _SHORT_VALUE_STR = SHORT_VALUE_STR     # validate._plain_value's
cdef Py_ssize_t _MAX_ROW_WRITE_BYTES = MAX_ROW_WRITE_BYTES
cdef Py_ssize_t _MAX_WRITE_COLUMNS = MAX_WRITE_COLUMNS
cdef set _GOOD_NAMES_SET = GOOD_NAMES["attribute"]    # attribute names checked valid
cdef object _Condition = Condition
cdef object _IGNORE = RowExistenceExpectation.IGNORE
cdef object _RT_NONE = ReturnType.RT_NONE
cdef bytes _HEAD = _cells_module.HEAD
cdef Py_ssize_t _HEAD_LEN = len(_HEAD)
cdef set _GOOD_TABLES = GOOD_NAMES["table"]           # table names checked valid
cdef Py_ssize_t _BATCH_WRITE_ROWS = BATCH_WRITE_ROWS
cdef Py_ssize_t _BATCH_WRITE_BYTES = BATCH_WRITE_BYTES
cdef object _BatchWriteRowRequest = BatchWriteRowRequest
cdef object _of_puts = BatchWriteRowResponse.of_puts
cdef object _PutRowItem = PutRowItem
cdef object _BatchWriteRowResponseItem = BatchWriteRowResponseItem
cdef object _PUT = BatchWriteRowType.PUT
cdef bytes _EXISTS_VALUE = _cells_module.EXISTS_VALUE


cdef Py_ssize_t _columns_size(list pk_names, columns, bint update) except -2:
    """The CU size of plain columns, or -1 when they are not: (name, value)
    pairs (tuples; for a put, lists too) whose names passed ``check_name``
    as attribute names before (``validate.GOOD_NAMES``) and are not key
    columns, with plain values (``validate._plain_value``); for an update,
    each name once; at most MAX_WRITE_COLUMNS of them."""
    cdef set names = set() if update else None
    cdef Py_ssize_t size = 0
    cdef double d
    cdef int64_t iv
    if type(columns) is not list and type(columns) is not tuple:
        return -1
    if len(columns) > _MAX_WRITE_COLUMNS:
        return -1
    for col in columns:
        if (type(col) is not tuple and (update or type(col) is not list)) or len(col) != 2:
            return -1
        name = col[0]
        if type(name) is not str or name not in _GOOD_NAMES_SET or name in pk_names:
            return -1
        if update:
            if name in names:
                return -1
            names.add(name)
        v = col[1]
        t = type(v)
        if t is int:
            try:
                iv = v
            except OverflowError:
                return -1
            size += 8
        elif t is float:
            d = v
            if d != d or d - d != 0.0:          # NaN or an infinity
                return -1
            size += 8
        elif t is str:
            if len(<str>v) > _SHORT_VALUE_STR:
                return -1
            size += _utf8_len(<str>v)
        else:
            return -1
        size += _utf8_len(name)
    return size


cdef list _plain_cells(list pk_names, columns, bint update, Py_ssize_t* attr):
    """The cells of plain columns (``_columns_size``), or None: put cells
    are (name, value, None), update cells ("PUT", name, value, None); their
    CU size is added to ``attr``."""
    cdef Py_ssize_t size = _columns_size(pk_names, columns, update)
    if size < 0:
        return None
    attr[0] += size
    if update:
        return [("PUT", col[0], col[1], None) for col in columns]
    return [(col[0], col[1], None) for col in columns]


cdef object _plain_row(schema, primary_key, list cells, Py_ssize_t attr):
    cdef Buf b
    cdef Py_ssize_t size = 0
    cdef list values = []
    cdef bytes row_key
    b.p, b.n, b.cap = NULL, 0, 0
    try:
        if not _plain_key(<list?>schema.names, <list?>schema.types, primary_key, &b, &size, values):
            return None
        row_key = PyBytes_FromStringAndSize(<char*>b.p, b.n)
    finally:
        free(b.p)
    if size + attr > _MAX_ROW_WRITE_BYTES:
        return None
    return values, row_key, cells, size, attr


def plain_put(schema, primary_key, columns):
    """(values, row key, cells, pk bytes, attribute bytes) of a PutRow that is
    plainly valid, or None (then ``writes.prepare``'s Python checks, its
    twin, decide and raise what they raise): a plain key (``_plain_key``),
    plain columns (``_plain_cells``) and a row within MAX_ROW_WRITE_BYTES.
    Cells are (name, value, None): the writer assigns the timestamps."""
    cdef Py_ssize_t attr = 0
    cells = _plain_cells(<list?>schema.names, columns, False, &attr)
    return None if cells is None else _plain_row(schema, primary_key, cells, attr)


cdef object _only_puts(update):
    """The (name, value) list of an UpdateRow's columns that only put, or None."""
    if type(update) is not dict or len(<dict>update) != 1:
        return None
    columns = (<dict>update).get("put")
    if columns is None:
        columns = (<dict>update).get("PUT")
    if type(columns) is not list or not columns:
        return None
    return columns


def plain_update(schema, primary_key, update):
    """``plain_put`` for an UpdateRow that only puts (``{"put": [(name,
    value), ...]}``, each name once): cells ("PUT", name, value, None)."""
    cdef Py_ssize_t attr = 0
    columns = _only_puts(update)
    if columns is None:
        return None
    cells = _plain_cells(<list?>schema.names, columns, True, &attr)
    return None if cells is None else _plain_row(schema, primary_key, cells, attr)


cdef class PlainWriter:
    """``OTSClient.put_row(table, row, condition, return_type)`` in one C call
    for a plain row written unconditionally: the table's schema in
    ``schemas`` (the client's dict), ``row`` a Row of a plain key and plain
    columns (``plain_put``), ``condition`` None or IGNORE without a column
    condition, ``return_type`` None or RT_NONE.  Under the row's stripe of
    ``locks`` it does what ``RowWriter.run`` does for such a row (its twin):
    the partition checked against the transactions' locks, the head encoded
    with the next generation and the clock (``_cellcodec._now_ms``, the twin of
    ``cells.now_ms``), one ``server.put``; it
    returns ``(consumed, None)``.  Anything else returns None before doing
    anything, and the Python path decides.  Thread-safe.  ``put_row`` and
    ``update_row`` are the client's calls whole, its own checks included
    (``OTSClient.put_row`` tries them first, through ``RowWriter``).

    ``indexer`` (indexes.Indexer, or None), handed in at construction: a
    table in its ``tables`` has secondary indexes, and its writes are framed
    by ``indexer.before_write`` (the feed entry, before the base write) and
    ``indexer.after_write`` (its local indexes), under the row locks, as
    ``RowWriter`` frames them.  ``failed_item(kind, table, exc)``
    (writes.failed_item) makes a batch's result item of a row that failed;
    ``write_failed(table, count, exc)`` (writes.write_failed) logs a batch's
    failed write and names the keys it applied.
    """
    cdef dict _schemas
    cdef object _server, _gens, _transactions, _indexer, _failed_item, _write_failed
    cdef list _locks
    cdef dict _indexed, _held

    def __init__(self, dict schemas not None, server, list locks not None, gens, transactions,
                 indexer, failed_item not None, write_failed not None):
        self._schemas = schemas
        self._server = server
        self._locks = locks
        self._gens = gens
        self._transactions = transactions
        self._held = transactions.held
        self._indexer = indexer
        self._indexed = indexer.tables if indexer is not None else {}
        self._failed_item = failed_item
        self._write_failed = write_failed

    def put(self, table_name, row, condition, return_type):
        """``put_row``'s answer, or None (see the class doc)."""
        return self._write(table_name, row, condition, return_type, False, False)

    def update(self, table_name, row, condition, return_type):
        """``update_row``'s answer for an UpdateRow that only puts plain
        columns (``plain_update``): its EXISTS delta and one PUT delta per
        column, stamped now, written as one region-server write; or None."""
        return self._write(table_name, row, condition, return_type, True, False)

    def put_row(self, table_name, row, condition, return_type, transaction_id,
                return_column_names):
        """``OTSClient.put_row(...)``'s answer, the client's own checks
        included, or None before doing anything (the client's Python path
        then admits, checks and writes the row as it always did): ``put``
        of a call outside a transaction (``transaction_id`` None) and
        without ``return_column_names``.  The client's other checks pass
        for any row ``put`` takes (``check_pk_count``: a plain key has its
        schema's 1 to 4 columns); a table with indexes is admitted
        (``indexer.admit``, as the client admits it) once the row is
        checked and encoded, and the call declined if the table's schema
        changed while it waited."""
        if transaction_id is not None or return_column_names is not None:
            return None
        return self._write(table_name, row, condition, return_type, False, True)

    def update_row(self, table_name, row, condition, return_type, transaction_id,
                   return_column_names):
        """``OTSClient.update_row(...)``'s answer as ``put_row`` gives
        ``put_row``'s: ``update`` of a call outside a transaction, without
        ``return_column_names``, its table admitted; or None."""
        if transaction_id is not None or return_column_names is not None:
            return None
        return self._write(table_name, row, condition, return_type, True, True)

    def batch(self, dict items not None, Py_ssize_t max_bytes):
        """BatchWriteRow's results (``{table: [result item, ...]}``, each
        item's ``index`` set: ``BatchWriteRowResponse.of_puts``) when every
        row of ``items`` (``{table: TableInBatchWriteRowItem}``, counted and
        checked non-empty by the caller) is a PutRowItem of a plain row
        written unconditionally, with no return column names, no row key
        repeated in its table, the rows' bytes within ``max_bytes`` (their
        CU size: the data size ``writes.data_size`` counts, as plain cells
        carry no timestamp); else None, before doing anything.  Each
        table's rows are written as ``RowWriter.run_batch`` writes them (its
        twin): under the locks of all their stripes, taken in order, each
        row's partition checked against the transactions' locks (a refused
        row fails alone), one region-server write of their heads; if that
        write fails (``writes.write_failed``), the rows it did not apply fail
        (``writes.failed_item``).

        Run with the cyclic GC paused, as a BatchGetRow's items are built
        (_reads.RowReader.items): the request's rows are young objects, and
        each collection the batch's allocations would trigger walks them
        all.  The pause is global and bounded by the batch (BATCH_WRITE_ROWS).
        """
        cdef int was_enabled = PyGC_Disable()
        try:
            return self._batch(items, max_bytes, False)
        finally:
            if was_enabled:
                PyGC_Enable()

    def batch_request(self, request):
        """``OTSClient.batch_write_row(request)``'s answer (``of_puts``) when
        ``request`` passes the client's checks as plainly as ``batch`` takes
        its rows: a BatchWriteRowRequest (this class), not atomic, outside a
        transaction, each table named by a name ``check_name`` passed
        before (``validate.GOOD_NAMES``) and given a list of rows, at most
        BATCH_WRITE_ROWS rows in all, each table's rows ones ``batch``
        takes; else None, before doing anything (the client's Python path
        then checks the request and raises what it raises).  The rows are
        written as ``batch`` writes them; a table with indexes is admitted
        first (``indexer.admit``, as the client admits it), once every row
        is checked.  The GC is paused for the whole call, the response
        included (``batch`` says why): each collection the call started
        would walk the request once more."""
        cdef Py_ssize_t total = 0
        cdef int was_enabled
        if type(request) is not _BatchWriteRowRequest:
            return None
        if getattr(request, "transaction_id", None) is not None \
                or getattr(request, "is_atomic", False):
            return None
        items = getattr(request, "items", None)
        if type(items) is not dict or not items:
            return None
        for table_name, table_item in (<dict>items).items():
            if type(table_name) is not str or table_name not in _GOOD_TABLES:
                return None
            row_items = getattr(table_item, "row_items", None)
            if type(row_items) is not list or not row_items:
                return None
            total += len(<list>row_items)
        if total > _BATCH_WRITE_ROWS:
            return None
        was_enabled = PyGC_Disable()
        try:
            response = self._batch(items, _BATCH_WRITE_BYTES, True)
            return None if response is None else _of_puts(response)
        finally:
            if was_enabled:
                PyGC_Enable()

    cdef dict _batch(self, dict items, Py_ssize_t max_bytes, bint admit):
        """``batch``; ``admit``: tables with indexes admitted (``batch_request``)."""
        cdef Py_ssize_t total = 0, size
        cdef list tables = []
        cdef dict response = {}
        cdef _TableRows rows
        cdef Buf b
        b.p, b.n, b.cap = NULL, 0, 0
        try:
            for table_name, table_item in items.items():
                if type(table_name) is not str:
                    return None
                schema = self._schemas.get(table_name)
                if schema is None:
                    return None
                rows = _TableRows(table_name, table_item.row_items, len(self._locks))
                size = rows.plan(schema, &b)
                if size < 0:
                    return None
                total += size
                tables.append(rows)
        finally:
            free(b.p)
        if total > max_bytes:
            return None
        if admit:
            for rows in tables:
                if rows.table in self._indexed:
                    self._indexer.admit(rows.table)
        for rows in tables:
            response[rows.table] = self._write_rows(rows)
        return response

    cdef list _write_rows(self, _TableRows rows):
        """One table's planned rows written (``batch``): their result items."""
        cdef Py_ssize_t i, n = rows.n, refused = 0
        cdef list results = [None] * n, ops = rows.ops
        cdef tuple op
        cdef int64_t now
        table_name = rows.table
        locks = rows.locks(self._locks)
        for lock in locks:
            lock.acquire()
        try:
            now = _now_ms()
            next_gen = self._gens.next
            for i in range(n):
                op = <tuple>ops[i]
                if self._held:
                    try:
                        self._check_write(table_name, _row_key(op[0]), rows.sizes[i])
                    except Exception as exc:
                        results[i] = self._failed(table_name, exc, i)
                        refused += 1
                        continue
                _stamp_head(<bytes>op[1], next_gen(), now)
            if refused == n:
                return results
            if refused:
                ops = [ops[i] for i in range(n) if results[i] is None]
            feed = keys = None
            if table_name in self._indexed:
                keys = [_row_key((<tuple>op)[0]) for op in ops]
                feed = self._indexer.before_write(table_name, keys)
            try:
                self._server.write(table_name, ops)
                applied = None
            except Exception as exc:
                applied = self._write_failed(table_name, len(ops), exc)
                failure = exc
            if feed is not None:
                self._indexer.after_write(table_name, keys, feed)
        finally:
            for lock in reversed(locks):
                lock.release()
        for i in range(n):
            if results[i] is None:
                if applied is None or (<tuple>rows.ops[i])[0] in applied:
                    results[i] = _ok_item(rows.sizes[i], i)
                else:
                    results[i] = self._failed(table_name, failure, i)
        return results

    cdef object _write(self, table_name, row, condition, return_type, bint update, bint admit):
        """``put`` (``update``: ``update``); ``admit``: a table with indexes
        admitted (``put_row``, ``update_row``) once the row is checked and
        encoded, the call declined if the table's schema changed meanwhile."""
        cdef Py_ssize_t attr, size = 0, s, nlocks = len(self._locks)
        cdef Buf b
        cdef bytes key = None, row_key = None, head = None
        cdef tuple cols = None
        if type(table_name) is not str or type(row) is not _Row:
            return None
        if not _unconditional(condition, return_type):
            return None
        schema = self._schemas.get(table_name)
        if schema is None:
            return None
        names = <list?>schema.names
        columns = _only_puts(row.attribute_columns) if update else row.attribute_columns
        if columns is None:
            return None
        attr = _columns_size(names, columns, update)
        if attr < 0:
            return None
        b.p, b.n, b.cap = NULL, 0, 0
        try:
            if not _plain_key(names, <list?>schema.types, row.primary_key, &b, &size, []):
                return None
            size += attr
            if size > _MAX_ROW_WRITE_BYTES:
                return None
            s = _stripe_of(<char*>b.p, b.n, nlocks)
            if update:
                row_key = PyBytes_FromStringAndSize(<char*>b.p, b.n)
                # the checked columns, as they are now: a tuple of (str, value) tuples
                cols = tuple(columns)
            else:
                _put(&b, <char*>_HEAD, _HEAD_LEN)
                key = PyBytes_FromStringAndSize(<char*>b.p, b.n)
                head = _unstamped_head(&b, columns)     # its own bytes: stamped under the lock
        finally:
            free(b.p)
        if admit and table_name in self._indexed:
            self._indexer.admit(table_name)     # Python code: the row is already encoded
            if self._schemas.get(table_name) is not schema:
                return None                     # changed while it waited: the client decides
        lock = self._locks[s]
        lock.acquire()
        try:
            if row_key is None and (self._held or table_name in self._indexed):
                row_key = _row_key(key)         # a put's, only when something reads it
            self._check_write(table_name, row_key, size)
            feed = None
            if table_name in self._indexed:
                feed = self._indexer.before_write(table_name, [row_key])
            landed = ()
            try:
                if update:
                    self._server.write(table_name, self._update_ops(row_key, cols))
                else:
                    _stamp_head(head, self._gens.next(), _now_ms())
                    self._server.put(table_name, key, head)
                landed = None
            finally:
                if feed is not None:
                    self._indexer.after_write(table_name, [row_key], feed, landed)
        finally:
            lock.release()
        return _write_cu(size), None

    cdef list _update_ops(self, bytes row_key, tuple cols):
        """writes.RowWriter._update_ops of an update that only puts ``cols``
        ((name, value) tuples), under its row lock: EXISTS first, then the
        columns, in order, each with the next generation, stamped now."""
        cdef int64_t now = _now_ms()
        cdef tuple col
        cdef list ops
        next_gen = self._gens.next
        ops = [(_delta_key(row_key, b"", next_gen()), _EXISTS_VALUE)]
        for col in cols:
            ops.append((_delta_key(row_key, PyUnicode_AsUTF8String(col[0]), next_gen()),
                        _put_delta(now, col[1])))
        return ops

    cdef inline int _check_write(self, table_name, bytes row_key, Py_ssize_t size) except -1:
        """``transactions.check_write`` of a write outside a transaction, skipped
        while no partition is held (the check would find nothing)."""
        if self._held:
            self._transactions.check_write(table_name, row_key, None, size)
        return 0

    cdef object _failed(self, table_name, exc, Py_ssize_t index):
        """``failed_item`` of a put of a batch, its ``index`` in its table's
        rows set (``BatchWriteRowResponse`` sets it)."""
        item = self._failed_item(_PUT, table_name, exc)
        item.index = index
        return item


cdef class _TableRows:
    """One table's rows of a plain batch, checked and encoded before any lock
    is taken (``plan``), for ``PlainWriter._write_rows``: per row its (key,
    head) pair for the region server (the row key + HEAD; the head
    unstamped, ``_cellcodec._stamp_head`` stamps it under the locks) and
    its CU size; the stripes of their locks.  One batch's, one thread's."""
    cdef str table
    cdef object row_items
    cdef list ops
    cdef Py_ssize_t n, cap, nlocks
    cdef Py_ssize_t* sizes          # cap of them
    cdef unsigned char* taken      # per stripe: 1 when a row holds its lock

    def __cinit__(self, str table, row_items, Py_ssize_t nlocks):
        self.table = table
        self.row_items = row_items
        self.ops = []
        self.nlocks = nlocks
        self.taken = <unsigned char*>calloc(nlocks, 1)
        if self.taken == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.sizes)
        free(self.taken)

    cdef Py_ssize_t plan(self, schema, Buf* b) except -2:
        """The rows' bytes (their CU sizes' sum) when every row is one that
        ``PlainWriter.batch`` takes, each row checked (``_columns_size``,
        ``_rowcodec._plain_key``, MAX_ROW_WRITE_BYTES, its key not repeated)
        and encoded in one pass over its columns; else -1.  ``b`` is the
        batch's scratch buffer."""
        cdef list names = <list?>schema.names, types = <list?>schema.types
        cdef list values = []                   # _plain_key's (the key's values: unused)
        cdef set keys = set()
        cdef Py_ssize_t attr, size, total = 0, count
        cdef bytes key
        row_items = self.row_items
        if type(row_items) is not list and type(row_items) is not tuple:
            return -1
        self.cap = len(row_items)
        self.sizes = <Py_ssize_t*>malloc(max(1, self.cap) * sizeof(Py_ssize_t))
        if self.sizes == NULL:
            raise MemoryError()
        for row_item in row_items:
            if self.n == self.cap:              # the list grew meanwhile (a condition's __eq__)
                return -1
            if type(row_item) is not _PutRowItem:
                return -1
            if not _unconditional(row_item.condition, row_item.return_type) \
                    or row_item.return_column_names:
                return -1
            row = row_item.row
            if type(row) is not _Row:
                return -1
            columns = row.attribute_columns
            attr = _columns_size(names, columns, False)
            if attr < 0:
                return -1
            b.n = size = 0
            if not _plain_key(names, types, row.primary_key, b, &size, values):
                return -1
            size += attr
            if size > _MAX_ROW_WRITE_BYTES:
                return -1
            self.taken[_stripe_of(<char*>b.p, b.n, self.nlocks)] = 1
            _put(b, <char*>_HEAD, _HEAD_LEN)
            key = PyBytes_FromStringAndSize(<char*>b.p, b.n)
            count = len(keys)
            keys.add(key)
            if len(keys) == count:              # repeated: the Python path orders it
                return -1
            self.ops.append((key, _unstamped_head(b, columns)))
            self.sizes[self.n] = size
            self.n += 1
            total += size
        return total

    cdef list locks(self, list locks):
        """The locks of ``locks`` (all stripes) that the rows hold, in stripe
        order (``stripe_locks``'s order)."""
        cdef Py_ssize_t s
        return [locks[s] for s in range(self.nlocks) if self.taken[s]]


cdef inline bytes _row_key(bytes key):
    """The row key of a head's ``key`` (row key + HEAD)."""
    return key[:PyBytes_GET_SIZE(key) - _HEAD_LEN]


cpdef Py_ssize_t stripe(bytes row_key, Py_ssize_t n) except -1:
    """The stripe of ``n`` row locks that ``row_key``'s writes hold: ``hash(row_key) % n``
    as Python computes it.  writes.RowWriter takes it too."""
    return _stripe_of(PyBytes_AS_STRING(row_key), PyBytes_GET_SIZE(row_key), n)


cdef inline Py_ssize_t _stripe_of(const char* row_key, Py_ssize_t size, Py_ssize_t n) noexcept:
    """``stripe`` of the row key ``row_key[:size]``, with no bytes object:
    ``hash(bytes)`` is ``_Py_HashBytes`` of its characters.  C's % keeps
    the hash's sign."""
    cdef Py_ssize_t s = _Py_HashBytes(row_key, size) % n
    return s + n if s < 0 else s


cpdef list stripe_locks(list locks, row_keys):
    """The locks of ``locks`` (the row-lock stripes) that writes to ``row_keys``
    hold, each once, in stripe order: the order every batch takes them in, so
    two batches never wait for each other.  writes.RowWriter and
    transactions.TransactionManager take them so too."""
    cdef Py_ssize_t n = len(locks)
    return [locks[i] for i in sorted({stripe(<bytes?>k, n) for k in row_keys})]


cdef inline bint _unconditional(condition, return_type) except -1:
    """No condition (or IGNORE without a column condition), no return type (or RT_NONE)."""
    if return_type is not None and return_type != _RT_NONE:
        return False
    return condition is None or (type(condition) is _Condition
                                 and condition.column_condition is None
                                 and condition.row_existence_expectation == _IGNORE)


cdef object _ok_item(Py_ssize_t size, Py_ssize_t index):
    """``BatchWriteRowResponseItem(True, None, None, CU, None)``, its attributes
    set in the order its ``__init__`` sets them, then its ``index`` in its
    table's rows (``BatchWriteRowResponse`` sets it); untracked by the GC, as
    its CU and row are (_cellcodec.pxd)."""
    item = _new_untracked(_BatchWriteRowResponseItem)
    item.is_ok = True
    item.error_code = None
    item.error_message = None
    item.consumed = _write_cu(size)
    item.row = _make_row(None, None)
    item.index = index
    return item
