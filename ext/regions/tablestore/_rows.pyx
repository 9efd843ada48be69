# cython: language_level=3
"""C twins of the per-row hot paths of regions.tablestore.

Every function here reimplements, byte for byte and value for value, a
pure-Python function that stays the reference (tests run both on the same
random inputs, tests/test_tablestore_rows_c.py):

    encode_pk, decode_pk        pkcodec.encode_pk, pkcodec.decode_pk
    encode_head, decode_head    cells.encode_head, cells.decode_head
    put_head                    cells.put_head
    pk_size, cells_size         capacity.pk_size over zip(names, values), capacity.cells_size
    head_cells, row_cells       head_cells, row_cells of tests/rows_reference.py
    RangePage                   the GetRange page loop (range_page, tests/rows_reference.py)
    RowReader                   OTSClient.get_row of a whole row by a plain key (OTSClient._get)
    plain_put, plain_update     writes.prepare of a plain PutRow / UpdateRow (its Python checks)

The formats are documented where they are owned (pkcodec.py: row keys,
cells.py: head values); nothing here defines a format.  Keys and head values
are ``bytes`` (what the region server returns); other buffers are copied to
bytes first.  Pure functions (RangePage: one object per page, one thread),
thread-safe.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String, PyUnicode_DecodeUTF8
from regions._buf cimport (Buf, buf_put as _put, buf_put_byte as _put_byte,
                            buf_put_le as _put_le, buf_reserve as _reserve)
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memchr, memcmp, memcpy
from regions.tablestore._layout cimport *

from operator import itemgetter

from regions.tablestore.capacity import UNIT
from regions.tablestore.cells import put_head as _py_put_head
from regions.tablestore import cells as _cells_module
from regions.tablestore.metadata import (INF_MAX, INF_MIN, BatchWriteRowResponseItem,
                                         BatchWriteRowType, CapacityUnit, Condition, PutRowItem,
                                         ReturnType, Row, RowDataItem, RowExistenceExpectation)
from regions.tablestore.validate import (MAX_ROW_WRITE_BYTES, MAX_VALUE_BYTES, SHORT_PK_STR,
                                         _GOOD_NAMES)

cdef extern from *:
    Py_ssize_t PY_SSIZE_T_MAX

cdef extern from "Python.h":
    int PyGC_Enable()
    int PyGC_Disable()
    void PyObject_GC_UnTrack(void* op)
    bint PyObject_IS_GC(object op)
    bint PyObject_GC_IsTracked(object op)


# -- tuples the cyclic GC need not watch ------------------------------------
# A page of rows is thousands of small tuples alive at once; every tracked one
# is walked by each young-generation collection while the page is built (a
# 5,000-row GetRange page triggered ~40 of them and spent more time in the GC
# than in reading).  A tuple holding no GC-tracked object can be in no cycle:
# the GC itself untracks such a tuple on its first pass over it; these do it
# when the tuple is made.
cdef inline tuple _atomic(tuple t):
    """``t`` (a cell: name, value, ts; values are never containers), untracked."""
    PyObject_GC_UnTrack(<void*>t)
    return t


cdef inline tuple _maybe_atomic(tuple t):
    """``t``, untracked when none of its items is tracked."""
    for item in t:
        if PyObject_IS_GC(item) and PyObject_GC_IsTracked(item):
            return t
    PyObject_GC_UnTrack(<void*>t)
    return t

cdef object _INF_MIN = INF_MIN
cdef object _CapacityUnit = CapacityUnit
cdef object _RowDataItem = RowDataItem
cdef Py_ssize_t _UNIT = UNIT
cdef Py_ssize_t _SHORT_PK_STR = SHORT_PK_STR
cdef Py_ssize_t _MAX_PLAIN_STR = MAX_VALUE_BYTES // 4     # validate._plain_value
cdef Py_ssize_t _MAX_ROW_WRITE_BYTES = MAX_ROW_WRITE_BYTES
cdef set _GOOD_NAMES_SET = _GOOD_NAMES
cdef object _INF_MAX = INF_MAX
cdef object _Row = Row
cdef object _by_gen = itemgetter(0)

cdef uint64_t _OFFSET = (<uint64_t>1) << 63

#: The values of _layout.pxd, for the test that checks them against pkcodec and cells.
LAYOUT = {"TAG_INF_MIN": TAG_INF_MIN, "TAG_INTEGER": TAG_INTEGER, "TAG_STRING": TAG_STRING,
          "TAG_BINARY": TAG_BINARY, "TAG_INF_MAX": TAG_INF_MAX, "PK_END": PK_END,
          "PK_ESCAPED": PK_ESCAPED, "ROW_HEAD": ROW_HEAD,
          "ROW_DELTA": ROW_DELTA, "ROW_END": ROW_END, "KIND_PUT": KIND_PUT,
          "KIND_DELETED": KIND_DELETED, "D_PUT": D_PUT, "D_DELETE_ONE": D_DELETE_ONE,
          "D_DELETE_ALL": D_DELETE_ALL, "D_EXISTS": D_EXISTS, "T_INTEGER": T_INTEGER,
          "T_DOUBLE": T_DOUBLE, "T_BOOLEAN": T_BOOLEAN, "T_STRING": T_STRING,
          "T_BINARY": T_BINARY}


# -- output buffer: ext/regions/_buf.pxd
cdef inline int _put_be64(Buf* b, uint64_t v) except -1:
    cdef int i
    _reserve(b, 8)
    for i in range(8):
        b.p[b.n + i] = (v >> (56 - 8 * i)) & 0xff
    b.n += 8
    return 0


cdef inline bytes _take(Buf* b):
    try:
        return PyBytes_FromStringAndSize(<char*>b.p, b.n)
    finally:
        free(b.p)
        b.p = NULL


cdef inline uint64_t _get_le(const unsigned char* p, int width) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(width):
        v |= (<uint64_t>p[i]) << (8 * i)
    return v


cdef inline uint64_t _get_be64(const unsigned char* p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | p[i]
    return v


cdef inline bytes _as_bytes(data):
    return data if type(data) is bytes else bytes(data)


# -- primary keys (pkcodec.py owns the format) ------------------------------
cdef int _put_escaped(Buf* b, bytes raw) except -1:
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(raw)
    cdef Py_ssize_t i, n = PyBytes_GET_SIZE(raw)
    _reserve(b, 2 * n + 2)
    for i in range(n):
        b.p[b.n] = s[i]
        b.n += 1
        if s[i] == 0:
            b.p[b.n] = PK_ESCAPED
            b.n += 1
    b.p[b.n] = 0x00
    b.p[b.n + 1] = PK_END
    b.n += 2
    return 0


def encode_pk(types, values):
    """Row key of the PK ``values`` (twin of pkcodec.encode_pk)."""
    cdef Buf b
    cdef int64_t iv
    b.p, b.n, b.cap = NULL, 0, 0
    try:
        for t, v in zip(types, values):
            if v is _INF_MIN:
                _put_byte(&b, TAG_INF_MIN)
            elif v is _INF_MAX:
                _put_byte(&b, TAG_INF_MAX)
            elif t == "INTEGER":
                iv = v
                _put_byte(&b, TAG_INTEGER)
                _put_be64(&b, (<uint64_t>iv) ^ _OFFSET)
            else:
                _put_byte(&b, TAG_STRING if t == "STRING" else TAG_BINARY)
                _put_escaped(&b, PyUnicode_AsUTF8String(v) if isinstance(v, str) else bytes(v))
        return _take(&b)
    finally:
        free(b.p)


cdef object _decode_one(const unsigned char* p, Py_ssize_t n, Py_ssize_t* pos,
                        Py_ssize_t* size):
    """One PK value at ``pos[0]`` (advanced past it); adds its CU size to size[0]."""
    cdef Py_ssize_t i = pos[0], j
    cdef unsigned char tag
    cdef const unsigned char* hit
    if i >= n:
        raise ValueError("corrupt row key: truncated at offset %d" % i)
    tag = p[i]
    if tag == TAG_INTEGER:
        if i + 9 > n:
            raise ValueError("corrupt row key: truncated INTEGER at offset %d" % i)
        pos[0] = i + 9
        size[0] += 8
        return <int64_t>(_get_be64(p + i + 1) ^ _OFFSET)
    if tag == TAG_STRING or tag == TAG_BINARY:
        # find the terminator 0x00 PK_END; an escaped 0x00 is 0x00 PK_ESCAPED
        j = i + 1
        while True:
            hit = <const unsigned char*>memchr(p + j, 0, n - j) if j < n else NULL
            if hit == NULL or hit - p + 1 >= n:
                raise ValueError("corrupt row key: unterminated value at offset %d" % i)
            j = hit - p
            if p[j + 1] == PK_END:
                break
            j += 2
        raw = _unescape(p + i + 1, j - i - 1)
        pos[0] = j + 2
        size[0] += PyBytes_GET_SIZE(raw)
        if tag == TAG_STRING:
            return raw.decode("utf-8")
        return bytearray(raw)
    if tag == TAG_INF_MIN:
        pos[0] = i + 1
        return _INF_MIN
    if tag == TAG_INF_MAX:
        pos[0] = i + 1
        return _INF_MAX
    raise ValueError("corrupt row key: unknown PK tag 0x%02x at offset %d" % (tag, i))


cdef bytes _unescape(const unsigned char* s, Py_ssize_t n):
    """Bytes of an escaped PK value: every 0x00 PK_ESCAPED becomes 0x00."""
    cdef bytes out
    cdef unsigned char* q
    cdef Py_ssize_t i = 0, m = 0
    if memchr(s, 0, n) == NULL:
        return PyBytes_FromStringAndSize(<const char*>s, n)
    out = PyBytes_FromStringAndSize(NULL, n)
    q = <unsigned char*>PyBytes_AS_STRING(out)
    while i < n:
        q[m] = s[i]
        m += 1
        i += 2 if s[i] == 0 and i + 1 < n and s[i + 1] == PK_ESCAPED else 1
    return out[:m]


def decode_pk(data, Py_ssize_t count, Py_ssize_t pos=0):
    """(values list, end offset) of ``count`` PK columns (twin of pkcodec.decode_pk)."""
    cdef bytes b = _as_bytes(data)
    cdef Py_ssize_t size = 0
    cdef list values = []
    for _ in range(count):
        values.append(_decode_one(<const unsigned char*>PyBytes_AS_STRING(b),
                                  PyBytes_GET_SIZE(b), &pos, &size))
    return values, pos


cdef Py_ssize_t _names_size(names) except -1:
    cdef Py_ssize_t total = 0
    for name in names:
        total += PyBytes_GET_SIZE(PyUnicode_AsUTF8String(name))
    return total


cdef inline Py_ssize_t _value_size(v) except -1:
    """cells.value_size: 8 for numbers, 1 for booleans, else the byte length."""
    if v is True or v is False:
        return 1
    if isinstance(v, (int, float)):
        return 8
    if isinstance(v, str):
        return PyBytes_GET_SIZE(PyUnicode_AsUTF8String(v))
    return len(v)


def pk_size(names, values):
    """CU size of a primary key (twin of capacity.pk_size(zip(names, values)))."""
    cdef Py_ssize_t total = 0
    for name, v in zip(names, values):
        total += PyBytes_GET_SIZE(PyUnicode_AsUTF8String(name)) + _value_size(v)
    return total


def cells_size(cells):
    """CU size of (name, value, ...) cells, value None: the name only (twin of
    capacity.cells_size)."""
    cdef Py_ssize_t total = 0
    for cell in cells:
        total += PyBytes_GET_SIZE(PyUnicode_AsUTF8String(cell[0]))
        v = cell[1]
        if v is not None:
            total += _value_size(v)
    return total


# -- head values (cells.py owns the format) ---------------------------------
cdef int _put_value(Buf* b, value) except -1:
    cdef double d
    cdef uint64_t u
    cdef int64_t iv
    cdef bytes raw
    if value is True or value is False:
        _put_byte(b, T_BOOLEAN)
        _put_byte(b, 1 if value else 0)
    elif isinstance(value, int):
        iv = value
        _put_byte(b, T_INTEGER)
        _put_le(b, <uint64_t>iv, 8)
    elif isinstance(value, float):
        d = value
        memcpy(&u, &d, 8)
        _put_byte(b, T_DOUBLE)
        _put_le(b, u, 8)
    else:
        if isinstance(value, str):
            raw = PyUnicode_AsUTF8String(value)
            _put_byte(b, T_STRING)
        elif isinstance(value, bytes):
            raw = value
            _put_byte(b, T_STRING)
        else:
            raw = bytes(value)
            _put_byte(b, T_BINARY)
        if PyBytes_GET_SIZE(raw) > 0xFFFFFFFF:
            raise ValueError("cell value longer than 4 GB")
        _put_le(b, PyBytes_GET_SIZE(raw), 4)
        _put(b, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
    return 0


cdef int _put_cell(Buf* b, name, value, int64_t ts) except -1:
    cdef bytes raw = PyUnicode_AsUTF8String(name)
    if PyBytes_GET_SIZE(raw) > 255:
        raise ValueError("column name longer than 255 bytes: %r" % name)
    _put_byte(b, <unsigned char>PyBytes_GET_SIZE(raw))
    _put(b, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
    _put_le(b, <uint64_t>ts, 8)
    _put_value(b, value)
    return 0


cdef bytes _encode_head(uint64_t gen, cells, bint stamp, int64_t now_ms):
    """A PUT head of (name, value, ts) cells; with ``stamp`` a None ts is ``now_ms``."""
    cdef Buf b
    b.p, b.n, b.cap = NULL, 0, 0
    try:
        _put_byte(&b, KIND_PUT)
        _put_le(&b, gen, 8)
        for name, value, ts in cells:
            _put_cell(&b, name, value, now_ms if stamp and ts is None else ts)
        return _take(&b)
    finally:
        free(b.p)


def encode_head(uint64_t gen, cells):
    """Head of a PutRow from (name, value, ts) cells (twin of cells.encode_head)."""
    return _encode_head(gen, cells, False, 0)


def put_head(uint64_t gen, cells, int64_t now_ms):
    """Head of a PutRow from validated (name, value, ts or None) cells (twin of
    cells.put_head).  Cells whose names strictly increase are already in read
    order and are encoded here; any other list takes the reference path."""
    prev = None
    for cell in cells:
        if prev is not None and not prev < cell[0]:
            return _py_put_head(gen, cells, now_ms)
        prev = cell[0]
    return _encode_head(gen, cells, True, now_ms)


cdef inline Py_ssize_t _need(Py_ssize_t pos, Py_ssize_t k, Py_ssize_t n) except -1:
    if pos + k > n:
        raise ValueError("corrupt head: truncated at offset %d" % pos)
    return pos + k


cdef object _decode_value(const unsigned char* p, Py_ssize_t n, Py_ssize_t* pos,
                          Py_ssize_t* size):
    """The typed value at ``pos[0]`` (advanced past it); adds its CU size to size[0]."""
    cdef Py_ssize_t i = pos[0], ln
    cdef unsigned char t
    cdef uint64_t u
    cdef double d
    _need(i, 1, n)
    t = p[i]
    if t == T_INTEGER or t == T_DOUBLE:
        pos[0] = _need(i, 9, n)
        size[0] += 8
        u = _get_le(p + i + 1, 8)
        if t == T_INTEGER:
            return <int64_t>u
        memcpy(&d, &u, 8)
        return d
    if t == T_STRING or t == T_BINARY:
        _need(i, 5, n)
        ln = <Py_ssize_t>_get_le(p + i + 1, 4)
        pos[0] = _need(i + 5, ln, n)
        size[0] += ln
        if t == T_STRING:
            return PyUnicode_DecodeUTF8(<const char*>p + i + 5, ln, NULL)
        return bytearray(PyBytes_FromStringAndSize(<const char*>p + i + 5, ln))
    if t == T_BOOLEAN:
        pos[0] = _need(i, 2, n)
        size[0] += 1
        return p[i + 1] == 1
    raise ValueError("corrupt cell: unknown value type %d at offset %d" % (t, i))


cdef object _head_cells(bytes data, Py_ssize_t keep, Py_ssize_t* size):
    """Cells of a PUT head trimmed to ``keep`` versions a column (None: DELETED head)."""
    cdef const unsigned char* p = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), pos = 9, ln, count = 0
    cdef Py_ssize_t prev = -1, prev_len = 0, skip = 0, name_pos
    cdef uint64_t raw_ts, last_raw_ts = 0
    ts = None
    cdef list out
    _need(0, 9, n)
    if p[0] == KIND_DELETED:
        return None
    out = []
    while pos < n:
        ln = p[pos]
        _need(pos + 1, ln + 8, n)
        if prev >= 0 and ln == prev_len and memcmp(p + pos + 1, p + prev, ln) == 0:
            count += 1
        else:
            prev, prev_len, count = pos + 1, ln, 1
        name_pos = pos + 1
        raw_ts = _get_le(p + pos + 1 + ln, 8)
        if ts is None or raw_ts != last_raw_ts:  # a row's cells mostly share one ts
            ts, last_raw_ts = <int64_t>raw_ts, raw_ts
        pos += 9 + ln
        if count > keep:
            value = _decode_value(p, n, &pos, &skip)
            continue
        size[0] += ln
        value = _decode_value(p, n, &pos, size)
        out.append(_atomic((PyUnicode_DecodeUTF8(<const char*>p + name_pos, ln, NULL), value, ts)))
    return out


def decode_head(data):
    """(gen, cells or None) of a head value (twin of cells.decode_head)."""
    cdef bytes b = _as_bytes(data)
    cdef Py_ssize_t size = 0
    _need(0, 9, PyBytes_GET_SIZE(b))
    gen = _get_le(<const unsigned char*>PyBytes_AS_STRING(b) + 1, 8)
    return gen, _head_cells(b, PY_SSIZE_T_MAX, &size)


def head_cells(data, Py_ssize_t keep):
    """(cells or None, CU size of the cells) of a head read whole (twin of rows_reference.head_cells).

    Cells are (name, value, ts) in read order, at most ``keep`` versions of a
    column; None (size 0) for a DELETED head, [] for a PUT head without cells.
    """
    cdef Py_ssize_t size = 0
    cells = _head_cells(_as_bytes(data), keep, &size)
    if cells is None:
        return None, 0
    return cells, size


cdef object _row_cells(Py_ssize_t rklen, list entries, Py_ssize_t keep, Py_ssize_t* size):
    """Cells of a row's entries read whole, or None when the row does not exist
    (cells.row_exists: a PUT head, a surviving EXISTS delta, or a cell)."""
    cdef bytes key, value, head = None
    cdef const unsigned char* kp
    cdef const unsigned char* vp
    cdef Py_ssize_t kn, vn, pos, n_deltas = 0, dummy = 0, ln
    cdef uint64_t head_gen = 0, gen
    cdef bint marked = False
    cdef list decoded = []
    for key, value in entries:
        if PyBytes_GET_SIZE(key) == rklen + 1:  # R ROW_HEAD
            head = value
        else:
            n_deltas += 1
    if n_deltas == 0:
        return None if head is None else _head_cells(head, keep, size)
    columns = {}  # name -> {ts: value}, as cells.merge_row
    if head is not None:
        _need(0, 9, PyBytes_GET_SIZE(head))
        head_gen = _get_le(<const unsigned char*>PyBytes_AS_STRING(head) + 1, 8)
        head_list = _head_cells(head, PY_SSIZE_T_MAX, &dummy)
        marked = head_list is not None
        for name, v, ts in head_list or ():
            columns.setdefault(name, {})[ts] = v
    for key, value in entries:
        kn = PyBytes_GET_SIZE(key)
        if kn == rklen + 1:
            continue
        # delta key = R ROW_DELTA name 0x00 uint64-BE(~gen); value = kind [ts [value]]
        # (the EXISTS delta has the empty name)
        if kn < rklen + 10:
            raise ValueError("corrupt delta key of %d bytes" % kn)
        kp = <const unsigned char*>PyBytes_AS_STRING(key)
        gen = ~_get_be64(kp + kn - 8)
        if gen < head_gen:
            continue
        vp = <const unsigned char*>PyBytes_AS_STRING(value)
        vn = PyBytes_GET_SIZE(value)
        _need(0, 1, vn)
        if vp[0] == D_EXISTS:
            marked = True
            continue
        name = PyUnicode_DecodeUTF8(<const char*>kp + rklen + 1, kn - rklen - 10, NULL)
        if vp[0] == D_DELETE_ALL:
            decoded.append((gen, name, D_DELETE_ALL, None, None))
            continue
        _need(1, 8, vn)
        ts = <int64_t>_get_le(vp + 1, 8)
        if vp[0] == D_DELETE_ONE:
            decoded.append((gen, name, D_DELETE_ONE, ts, None))
        else:
            pos = 9
            decoded.append((gen, name, D_PUT, ts, _decode_value(vp, vn, &pos, &dummy)))
    decoded.sort(key=_by_gen)
    for _, name, kind, ts, v in decoded:
        if kind == D_PUT:
            columns.setdefault(name, {})[ts] = v
        elif kind == D_DELETE_ONE:
            versions = columns.get(name)
            if versions is not None:
                versions.pop(ts, None)
        else:
            columns.pop(name, None)
    out = []
    for name in sorted(columns):
        ln = PyBytes_GET_SIZE(PyUnicode_AsUTF8String(name))
        for ts, v in sorted(columns[name].items(), reverse=True)[:keep]:
            out.append(_atomic((name, v, ts)))
            size[0] += ln + _value_size(v)
    if not out and not marked:
        return None
    return out


def row_cells(Py_ssize_t row_key_len, entries, Py_ssize_t keep):
    """(cells or None, CU size) of one row's (key, value) entries read whole
    (twin of rows_reference.row_cells)."""
    cdef Py_ssize_t size = 0
    cells = _row_cells(row_key_len, list(entries), keep, &size)
    if cells is None:
        return None, 0
    return cells, size


# -- one GetRange page ------------------------------------------------------
cdef object _new_object = object.__new__


cdef inline object _make_row(primary_key, attribute_columns):
    """``Row(primary_key, attribute_columns)`` without the Python-level __init__
    call: the same two attributes, set in the same order (the twin tests
    compare rows by their attributes)."""
    row = _new_object(_Row)
    row.primary_key = primary_key
    row.attribute_columns = attribute_columns
    return row


cdef list _pk_list(list names, list values):
    """``list(zip(names, values))`` for a decoded primary key."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(values)
    cdef list out = []
    for i in range(n):
        out.append(_maybe_atomic((names[i], values[i])))
    return out


cdef class RangePage:
    """One GetRange page built from a scan's entries (twin of rows_reference.range_page).

    ``RangePage(npk, pk_names, fast, keep, max_rows, max_bytes, slow, live)``;
    ``run(entries)`` -> (rows, next start PK values or None, bytes read).
    Entries are grouped into rows (a row's entries are contiguous and start
    with its self-delimiting row key).  When ``fast`` (no columns_to_get,
    filter, time_range or TTL) every row is merged and decoded here
    (row_cells); otherwise rows go to ``slow(row_key, values, group)`` -> (Row
    parts or None, attribute bytes returned, row exists).  Once the page is
    full (max_rows rows scanned or returned, or max_bytes returned), the first
    row ``live(row_key, group)`` says exists is the next start.  Not thread-safe: one object per page.
    """
    cdef Py_ssize_t npk, keep, max_rows, max_bytes, names_size, scanned, read_bytes
    cdef bint fast, done
    cdef list pk_names, rows
    cdef object slow, live, next_values

    def __init__(self, Py_ssize_t npk, pk_names, bint fast, Py_ssize_t keep,
                 Py_ssize_t max_rows, Py_ssize_t max_bytes, slow, live):
        self.npk, self.pk_names, self.fast, self.keep = npk, list(pk_names), fast, keep
        self.max_rows, self.max_bytes, self.slow, self.live = max_rows, max_bytes, slow, live
        self.names_size = _names_size(self.pk_names)

    cdef int _row(self, bytes first_key, first_value, Py_ssize_t rklen, list values,
                  Py_ssize_t vsize, list group) except -1:
        """Account one complete row; sets ``done`` when it is the next start."""
        cdef Py_ssize_t size = 0
        cdef list cells
        if (self.scanned >= self.max_rows or self.read_bytes >= self.max_bytes
                or PyList_GET_SIZE(self.rows) >= self.max_rows):
            if group is None:
                group = [(first_key, first_value)]
            if self.live(first_key[:rklen], group):
                self.next_values = values
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
                self.read_bytes += self.names_size + vsize + size
                self.rows.append(_make_row(_pk_list(self.pk_names, values), cells))
            return 0
        if group is None:
            group = [(first_key, first_value)]
        parts, size, exists = self.slow(first_key[:rklen], values, group)
        if exists:
            self.scanned += 1
        if parts is not None:
            self.read_bytes += self.names_size + vsize + size
            self.rows.append(_make_row(parts[0], parts[1]))
        return 0

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

    cdef _run(self, entries):
        cdef bytes key, first_key = None
        cdef const unsigned char* kp
        cdef const unsigned char* rp = NULL
        cdef Py_ssize_t rklen = 0, pos, vsize = 0
        cdef list group = None, values = None
        first_value = None
        self.rows = []
        self.scanned = self.read_bytes = 0
        self.done = False
        self.next_values = None
        for key, value in entries:
            kp = <const unsigned char*>PyBytes_AS_STRING(key)
            if (first_key is not None and PyBytes_GET_SIZE(key) > rklen
                    and (kp[rklen] == ROW_HEAD or kp[rklen] == ROW_DELTA) and memcmp(kp, rp, rklen) == 0):
                if group is None:
                    group = [(first_key, first_value)]
                group.append((key, value))
                continue
            if first_key is not None:
                self._row(first_key, first_value, rklen, values, vsize, group)
                if self.done:
                    break
            pos = vsize = 0
            values = []
            for _ in range(self.npk):
                values.append(_decode_one(kp, PyBytes_GET_SIZE(key), &pos, &vsize))
            first_key, first_value, rklen, rp, group = key, value, pos, kp, None
        else:
            if first_key is not None:
                self._row(first_key, first_value, rklen, values, vsize, group)
        return self.rows, self.next_values, self.read_bytes


# -- GetRow of a whole row --------------------------------------------------
cdef class RowReader:
    """``OTSClient.get_row(table, primary_key)`` with every other argument at
    its default, in one C call: the key checked and encoded, the row read
    (``server.read_range``), merged and decoded (``row_cells``), its Row and
    read CU built.  ``get`` returns what ``get_row`` returns, or None when
    the read is not plain (then the Python path, ``OTSClient._get``, its
    twin, decides and raises what it raises): a table not in ``schemas`` or
    with a TTL, a key that ``validate._plain_pk`` would not pass as plain,
    or a key type other than INTEGER and STRING.  ``schemas`` is the
    client's own dict (name -> Schema), read at each call.  Thread-safe.
    """
    cdef dict _schemas
    cdef object _server

    def __init__(self, dict schemas not None, server):
        self._schemas = schemas
        self._server = server

    def get(self, table_name, primary_key):
        """(consumed, Row or None, b"") as ``get_row`` returns, or None."""
        return self._read(table_name, primary_key)

    def item(self, table_name, primary_key, item_table_name):
        """The BatchGetRow result item of the row (``RowDataItem(True, None,
        None, item_table_name, consumed, ...)``, its attributes set in the
        order its ``__init__`` sets them), or None."""
        got = self._read(table_name, primary_key)
        if got is None:
            return None
        item = _new_object(_RowDataItem)
        item.is_ok = True
        item.error_code = None
        item.error_message = None
        item.table_name = item_table_name
        item.consumed = (<tuple>got)[0]
        item.row = (<tuple>got)[1]
        return item

    def items(self, table_name, primary_keys, item_table_name):
        """``[item(table_name, pk, item_table_name) for pk in primary_keys]``
        in one C loop: BatchGetRow's items of a table (None where a read is
        not plain)."""
        cdef list out = []
        for pk in primary_keys:
            out.append(self.item(table_name, pk, item_table_name))
        return out

    cdef object _read(self, table_name, primary_key):
        cdef Buf b
        cdef Py_ssize_t i, size = 0, csize = 0
        cdef list names, values = []
        cdef bytes row_key, end
        if type(table_name) is not str:
            return None
        schema = self._schemas.get(table_name)
        if schema is None or schema.ttl > 0:
            return None
        names = <list?>schema.names
        b.p, b.n, b.cap = NULL, 0, 0
        try:
            if not _plain_key(names, <list?>schema.types, primary_key, &b, &size, values):
                return None
            row_key = PyBytes_FromStringAndSize(<char*>b.p, b.n)
            _put_byte(&b, ROW_END)
            end = PyBytes_FromStringAndSize(<char*>b.p, b.n)
        finally:
            free(b.p)
        entries = self._server.read_range(table_name, row_key, end)
        cells = None
        if entries:
            cells = _row_cells(PyBytes_GET_SIZE(row_key), list(entries), 1, &csize)
        if cells is None:
            return _CapacityUnit(1, 0), None, b""
        size += csize
        return (_CapacityUnit(max(1, (size + _UNIT - 1) // _UNIT), 0),
                _make_row(_pk_list(names, values), cells), b"")


cdef bint _plain_key(list names, list types, primary_key, Buf* b, Py_ssize_t* size,
                     list values) except -1:
    """Whether ``primary_key`` is plainly valid (``validate._plain_pk``) with
    INTEGER and STRING columns only; if so its row key is written to ``b``,
    its values appended to ``values`` and its CU size added to ``size``."""
    cdef Py_ssize_t i, n = len(names)
    cdef int64_t iv
    cdef bytes raw
    if type(primary_key) is not list and type(primary_key) is not tuple:
        return False
    if len(primary_key) != n:
        return False
    for i in range(n):
        col = primary_key[i]
        if type(col) is not tuple or len(<tuple>col) != 2:
            return False
        name = names[i]
        if type((<tuple>col)[0]) is not str or (<tuple>col)[0] != name:
            return False
        v = (<tuple>col)[1]
        t = types[i]
        if t == "INTEGER":
            if type(v) is not int:
                return False
            try:
                iv = v
            except OverflowError:
                return False
            _put_byte(b, TAG_INTEGER)
            _put_be64(b, (<uint64_t>iv) ^ _OFFSET)
            size[0] += 8
        elif t == "STRING":
            if type(v) is not str or len(<str>v) > _SHORT_PK_STR or not (<str>v).isascii():
                return False
            raw = PyUnicode_AsUTF8String(v)
            _put_byte(b, TAG_STRING)
            _put_escaped(b, raw)
            size[0] += PyBytes_GET_SIZE(raw)
        else:
            return False
        size[0] += PyBytes_GET_SIZE(PyUnicode_AsUTF8String(name))
        values.append(v)
    return True


cdef list _plain_cells(list pk_names, columns, bint update, Py_ssize_t* attr):
    """The cells of plain columns, or None: (name, value) pairs whose names
    passed ``check_name`` before (``validate._GOOD_NAMES``) and are not key
    columns, with plain values (``validate._plain_value``); for an update,
    each name once.  Put cells are (name, value, None), update cells
    ("PUT", name, value, None); their CU size is added to ``attr``."""
    cdef list out = []
    cdef set names = set() if update else None
    cdef double d
    cdef int64_t iv
    if type(columns) is not list and type(columns) is not tuple:
        return None
    for col in columns:
        if (type(col) is not tuple and (update or type(col) is not list)) or len(col) != 2:
            return None
        name = col[0]
        if type(name) is not str or name not in _GOOD_NAMES_SET or name in pk_names:
            return None
        if update:
            if name in names:
                return None
            names.add(name)
        v = col[1]
        t = type(v)
        if t is int:
            try:
                iv = v
            except OverflowError:
                return None
            attr[0] += 8
        elif t is float:
            d = v
            if d != d or d - d != 0.0:          # NaN or an infinity
                return None
            attr[0] += 8
        elif t is str:
            if len(<str>v) > _MAX_PLAIN_STR:
                return None
            attr[0] += PyBytes_GET_SIZE(PyUnicode_AsUTF8String(v))
        else:
            return None
        attr[0] += PyBytes_GET_SIZE(PyUnicode_AsUTF8String(name))
        out.append(("PUT", name, v, None) if update else (name, v, None))
    return out


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


cdef object _Condition = Condition
cdef object _IGNORE = RowExistenceExpectation.IGNORE
cdef object _RT_NONE = ReturnType.RT_NONE
cdef bytes _HEAD = _cells_module.HEAD
cdef object _PutRowItem = PutRowItem
cdef object _BatchWriteRowResponseItem = BatchWriteRowResponseItem
cdef object _PUT = BatchWriteRowType.PUT
import logging
_log = logging.getLogger("regions.tablestore")
cdef bytes _EXISTS_VALUE = _cells_module.EXISTS_VALUE
from lsm import WriteBatch as _WriteBatch


cdef class PlainWriter:
    """``OTSClient.put_row(table, row, condition, return_type)`` in one C call
    for a plain row written unconditionally: the table's schema in
    ``schemas`` (the client's dict), ``row`` a Row of a plain key and plain
    columns (``plain_put``), ``condition`` None or IGNORE without a column
    condition, ``return_type`` None or RT_NONE.  Under the row's stripe of
    ``locks`` it does what ``RowWriter.run`` does for such a row (its twin):
    the partition checked against the transactions' locks, the head encoded
    with the next generation and ``cells.now_ms()``, one ``server.put``; it
    returns ``(consumed, None)``.  Anything else returns None before doing
    anything, and the Python path decides.  Thread-safe.
    """
    cdef dict _schemas
    cdef object _server, _gens, _transactions
    cdef list _locks

    def __init__(self, dict schemas not None, server, list locks not None, gens, transactions):
        self._schemas = schemas
        self._server = server
        self._locks = locks
        self._gens = gens
        self._transactions = transactions

    def put(self, table_name, row, condition, return_type):
        """``put_row``'s answer, or None (see the class doc)."""
        return self._write(table_name, row, condition, return_type, False)

    def update(self, table_name, row, condition, return_type):
        """``update_row``'s answer for an UpdateRow that only puts plain
        columns (``plain_update``): its EXISTS delta and one PUT delta per
        column, stamped now, written as one batch; or None."""
        return self._write(table_name, row, condition, return_type, True)

    def batch(self, dict items not None, Py_ssize_t max_bytes):
        """BatchWriteRow's results (``{table: [result item, ...]}``) when every
        row of ``items`` (``{table: TableInBatchWriteRowItem}``, counted and
        checked non-empty by the caller) is a PutRowItem of a plain row
        written unconditionally, no row key repeated in its table, the rows'
        bytes within ``max_bytes``; else None, before doing anything.  Each
        table's rows are written as ``RowWriter.run_batch`` writes them (its
        twin): under the locks of all their stripes, taken in order, each
        row's partition checked against the transactions' locks (a refused
        row fails alone), one region-server write of their heads; if that
        write fails, the rows it did not apply fail (``writes.failed_item``).
        """
        cdef Py_ssize_t attr, size, total = 0, i, n, nlocks = len(self._locks)
        cdef list plans = [], rows, results, stripes
        cdef tuple got
        cdef dict response = {}
        for table_name, table_item in items.items():
            if type(table_name) is not str:
                return None
            schema = self._schemas.get(table_name)
            if schema is None:
                return None
            rows = []
            keys = set()
            for row_item in table_item.row_items:
                if type(row_item) is not _PutRowItem:
                    return None
                if not _unconditional(row_item.condition, row_item.return_type):
                    return None
                row = row_item.row
                if type(row) is not _Row:
                    return None
                attr = 0
                cells = _plain_cells(<list?>schema.names, row.attribute_columns, False, &attr)
                if cells is None:
                    return None
                got = _plain_row(schema, row.primary_key, cells, attr)
                if got is None or got[1] in keys:
                    return None
                keys.add(got[1])
                size = <Py_ssize_t>got[3] + <Py_ssize_t>got[4]
                total += size
                rows.append((got[1], got[2], size))
            plans.append((table_name, rows))
        if total > max_bytes:
            return None
        for table_name, rows in plans:
            n = len(rows)
            results = [None] * n
            stripes = sorted({_stripe(<bytes>(<tuple>r)[0], nlocks) for r in rows})
            locks = [self._locks[i] for i in stripes]
            for lock in locks:
                lock.acquire()
            try:
                self._write_rows(table_name, rows, results)
            finally:
                for lock in reversed(locks):
                    lock.release()
            response[table_name] = results
        return response

    cdef int _write_rows(self, str table_name, list rows, list results) except -1:
        """One table's plain rows, under their locks (``batch``)."""
        cdef Py_ssize_t i
        cdef list written = []
        cdef tuple r
        batch = _WriteBatch()
        now = _cells_module.now_ms()
        for i in range(len(rows)):
            r = <tuple>rows[i]
            if self._transactions._locked:
                try:
                    self._transactions.check_write(table_name, r[0], None, r[2])
                except Exception as exc:
                    results[i] = _failed_item(_PUT, table_name, exc)
                    continue
            batch.put(<bytes>r[0] + _HEAD, put_head(self._gens.next(), r[1], now))
            written.append(i)
        if not written:
            return 0
        try:
            self._server.write(table_name, batch)
            applied = None
        except Exception as exc:
            _log.error("BatchWriteRow: writing %d rows of table %r failed: %s",
                       len(written), table_name, exc)
            applied = getattr(exc, "applied_keys", frozenset())
            failure = exc
        for i in written:
            r = <tuple>rows[i]
            if applied is None or <bytes>r[0] + _HEAD in applied:
                results[i] = _ok_item(r[2])
            else:
                results[i] = _failed_item(_PUT, table_name, failure)
        return 0

    cdef object _write(self, table_name, row, condition, return_type, bint update):
        cdef Py_ssize_t attr = 0, size, i
        cdef tuple got, cell
        cdef int64_t now
        if type(table_name) is not str or type(row) is not _Row:
            return None
        if not _unconditional(condition, return_type):
            return None
        schema = self._schemas.get(table_name)
        if schema is None:
            return None
        columns = _only_puts(row.attribute_columns) if update else row.attribute_columns
        if columns is None:
            return None
        cells = _plain_cells(<list?>schema.names, columns, update, &attr)
        if cells is None:
            return None
        got = _plain_row(schema, row.primary_key, cells, attr)
        if got is None:
            return None
        row_key = <bytes>got[1]
        size = <Py_ssize_t>got[3] + <Py_ssize_t>got[4]
        with self._locks[_stripe(row_key, len(self._locks))]:
            if self._transactions._locked:
                self._transactions.check_write(table_name, row_key, None, size)
            if not update:
                head = put_head(self._gens.next(), got[2], _cells_module.now_ms())
                self._server.put(table_name, row_key + _HEAD, head)
            else:
                # writes.RowWriter._update_ops of puts: EXISTS first, then the columns
                now = _cells_module.now_ms()
                batch = _WriteBatch()
                batch.put(_delta_key(row_key, b"", self._gens.next()), _EXISTS_VALUE)
                for i in range(len(<list>got[2])):
                    cell = <tuple>(<list>got[2])[i]
                    batch.put(_delta_key(row_key, PyUnicode_AsUTF8String(cell[1]), self._gens.next()),
                              _put_delta(now, cell[2]))
                self._server.write(table_name, batch)
        return _CapacityUnit(0, max(1, (size + _UNIT - 1) // _UNIT)), None


cdef inline Py_ssize_t _stripe(bytes row_key, Py_ssize_t n) except -1:
    """``hash(row_key) % n`` as Python computes it (C's % keeps the hash's sign)."""
    cdef Py_ssize_t s = hash(row_key) % n
    return s + n if s < 0 else s


cdef inline bint _unconditional(condition, return_type) except -1:
    """No condition (or IGNORE without a column condition), no return type (or RT_NONE)."""
    if return_type is not None and return_type != _RT_NONE:
        return False
    return condition is None or (type(condition) is _Condition
                                 and condition.column_condition is None
                                 and condition.row_existence_expectation == _IGNORE)


cdef object _failed_item(kind, table, exc):
    """writes.failed_item (imported here: writes imports this module)."""
    from regions.tablestore.writes import failed_item
    return failed_item(kind, table, exc)


cdef object _ok_item(Py_ssize_t size):
    """``BatchWriteRowResponseItem(True, None, None, CU, None)``, its attributes
    set in the order its ``__init__`` sets them."""
    item = _new_object(_BatchWriteRowResponseItem)
    item.is_ok = True
    item.error_code = None
    item.error_message = None
    item.consumed = _CapacityUnit(0, max(1, (size + _UNIT - 1) // _UNIT))
    item.row = _make_row(None, None)
    return item


cdef bytes _delta_key(bytes row_key, bytes name, uint64_t gen):
    """cells.delta_key (cells.exists_key for the empty name): R ROW_DELTA name 0x00 BE64(~gen)."""
    cdef Buf b
    b.p, b.n, b.cap = NULL, 0, 0
    try:
        _put(&b, PyBytes_AS_STRING(row_key), PyBytes_GET_SIZE(row_key))
        _put_byte(&b, ROW_DELTA)
        _put(&b, PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name))
        _put_byte(&b, 0)
        _put_be64(&b, ~gen)
        return PyBytes_FromStringAndSize(<char*>b.p, b.n)
    finally:
        free(b.p)


cdef bytes _put_delta(int64_t ts, value):
    """cells.encode_put_delta: D_PUT, LE64 timestamp, the typed value."""
    cdef Buf b
    b.p, b.n, b.cap = NULL, 0, 0
    try:
        _put_byte(&b, D_PUT)
        _put_le(&b, <uint64_t>ts, 8)
        _put_value(&b, value)
        return PyBytes_FromStringAndSize(<char*>b.p, b.n)
    finally:
        free(b.p)


def delta_key(bytes row_key not None, str name not None, uint64_t gen):
    """The C twin of cells.delta_key (for the tests)."""
    return _delta_key(row_key, PyUnicode_AsUTF8String(name), gen)


def put_delta(int64_t ts, value):
    """The C twin of cells.encode_put_delta (for the tests)."""
    return _put_delta(ts, value)
