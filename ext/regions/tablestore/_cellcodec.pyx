# cython: language_level=3
"""C twins of the cells codec (cells.py): a row's entries, heads and deltas.

Every function here reimplements, byte for byte and value for value, a
pure-Python function that stays the reference (tests run both on the same
random inputs, tests/test_tablestore_rows_c.py):

    encode_head, decode_head    cells.encode_head, cells.decode_head
    put_head                    cells.put_head
    delta_key, put_delta        cells.delta_key, cells.encode_put_delta
    head_cells, row_cells       head_cells, row_cells of tests/rows_reference.py
    cells_size                  capacity.cells_size
    now_ms                      cells.now_ms (the clock of cell versions)

One concept: the entries a row is stored as (cells.py owns their format;
nothing here defines one) turned into cells and back, with the CU size of
the cells on the way.  The row key is _rowcodec's.  Head values are
``bytes`` (what the region server returns); other buffers are copied to
bytes first.  The C interface (_cellcodec.pxd) serves the row reads
(_reads), the plain writes (_writes) and _rowcodec.  Pure functions,
thread-safe.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String, PyUnicode_DecodeUTF8
from regions._api cimport (Buf, buf_put as _put, buf_put_be64 as _put_be64,
                            buf_put_byte as _put_byte, buf_put_le as _put_le,
                            buf_take as _take)
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free
from libc.string cimport memcmp, memcpy
from regions.tablestore._layout cimport *

from operator import itemgetter

from regions.tablestore.cells import put_head as _py_put_head

cdef extern from *:
    Py_ssize_t PY_SSIZE_T_MAX

cdef object _by_gen = itemgetter(0)


# -- column names, decoded once ------------------------------------------------
# A page of rows repeats the same few column names on every row; each was a
# new str (an allocation, a UTF-8 decode, a free when the page goes).  A
# name's str is kept in one of 256 slots chosen by a hash of its bytes and
# handed out again while no other name takes the slot.  strs are immutable,
# so the rows share them safely; under the GIL a slot is read and replaced
# whole (a tuple), so threads need no lock.
cdef list _names = [None] * 256


cdef inline object _name(const unsigned char* p, Py_ssize_t n):
    """The str of the UTF-8 column name ``p[:n]``."""
    cdef unsigned int h = 2166136261u          # FNV-1a
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * 16777619u
    cdef object slot = _names[h & 255]
    if slot is not None:
        b = (<tuple>slot)[0]
        if PyBytes_GET_SIZE(b) == n and memcmp(PyBytes_AS_STRING(b), p, n) == 0:
            return (<tuple>slot)[1]
    s = PyUnicode_DecodeUTF8(<const char*>p, n, NULL)
    _names[h & 255] = (PyBytes_FromStringAndSize(<const char*>p, n), s)
    return s


# -- cell timestamps, made once while they repeat -------------------------------
# A row's cells mostly share one timestamp, and so do the rows one batch wrote
# (a PutRow stamps its cells with the one clock read): each would be a new int
# to allocate, and to free with the page.  The last timestamp's int is kept
# and handed out again while the next cells carry the same value.  ints are
# immutable, so rows share them safely; the slot's two fields are replaced
# together under the GIL, with no Python code between (freeing the old int
# runs none), so threads need no lock.
cdef uint64_t _last_raw = 0
cdef object _last_ts = None


cdef inline object _ts(uint64_t raw):
    """The int of the cell timestamp ``raw`` (the uint64 of its int64)."""
    global _last_raw, _last_ts
    cdef object ts
    if raw == _last_raw and _last_ts is not None:
        return _last_ts
    ts = <int64_t>raw
    _last_ts = ts
    _last_raw = raw
    return ts


# -- CU sizes (capacity.py owns the rule) ----------------------------------
cdef Py_ssize_t _names_size(names) except -1:
    cdef Py_ssize_t total = 0
    for name in names:
        total += _utf8_len(name)
    return total



def cells_size(cells):
    """CU size of (name, value, ...) cells, value None: the name only (twin of
    capacity.cells_size)."""
    cdef Py_ssize_t total = 0
    for cell in cells:
        total += _utf8_len(cell[0])
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
    return _put_head(gen, cells, now_ms)


cdef bytes _put_head(uint64_t gen, cells, int64_t now_ms):
    """``put_head`` for C callers (the plain writer), without a Python call."""
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
    return _head_cells_at(<const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data),
                          keep, size)


cdef object _head_cells_at(const unsigned char* p, Py_ssize_t n, Py_ssize_t keep,
                           Py_ssize_t* size):
    """``_head_cells`` of the head ``p[:n]`` (read in place: a GetRange page's)."""
    cdef Py_ssize_t pos = 9, ln, count = 0
    cdef Py_ssize_t prev = -1, prev_len = 0, skip = 0, name_pos
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
        ts = _ts(_get_le(p + pos + 1 + ln, 8))
        pos += 9 + ln
        if count > keep:
            value = _decode_value(p, n, &pos, &skip)
            continue
        size[0] += ln
        value = _decode_value(p, n, &pos, size)
        out.append(_atomic((_name(p + name_pos, ln), value, ts)))
    return out


def decode_head(data):
    """(gen, cells or None) of a head value (twin of cells.decode_head)."""
    cdef bytes b = _as_bytes(data)
    cdef Py_ssize_t size = 0
    _need(0, 9, PyBytes_GET_SIZE(b))
    gen = _get_le(<const unsigned char*>PyBytes_AS_STRING(b) + 1, 8)
    return gen, _head_cells(b, PY_SSIZE_T_MAX, &size)


def head_cells(data, Py_ssize_t keep):
    """(cells or None, CU size of the cells) of a head read whole (twin of
    rows_reference.head_cells).

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
        name = _name(kp + rklen + 1, kn - rklen - 10)
        if vp[0] == D_DELETE_ALL:
            decoded.append((gen, name, D_DELETE_ALL, None, None))
            continue
        _need(1, 8, vn)
        ts = _ts(_get_le(vp + 1, 8))
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
        ln = _utf8_len(name)
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



# -- deltas (cells.py owns the format) ---------------------------------------
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



# -- the clock of cell versions -------------------------------------------------
cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk_id, timespec* tp)
    int CLOCK_REALTIME


cdef int64_t _now_ms() noexcept nogil:
    """cells.now_ms in C: the wall clock in whole milliseconds since the
    epoch (the clock ``time.time`` reads), without a Python call."""
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


def now_ms():
    """``_now_ms`` for the tests that hold it to its twin, cells.now_ms."""
    return _now_ms()


# -- heads encoded first, stamped later (the plain writer's batches) --------------
# A BatchWriteRow of plain rows encodes each row's head as it checks the row,
# before it takes any lock, straight from the row's (name, value) columns (no
# cell tuples in between), and stamps the generation and the clock into the
# heads under the rows' locks, where put_head is given them: the bytes are
# put_head(gen, cells, now_ms)'s, the cells (name, value, None).
from cpython.unicode cimport PyUnicode_Compare, PyUnicode_DATA


cdef inline void _set_le(unsigned char* p, uint64_t v) noexcept:
    """``v`` as 8 little-endian bytes at ``p``."""
    cdef int i
    for i in range(8):
        p[i] = (v >> (8 * i)) & 0xff


cdef inline int _put_str(Buf* b, str s, int width) except -1:
    """``s`` in UTF-8 after its byte length in ``width`` little-endian bytes
    (1: a name, 255 bytes at most; 4: a value, 4 GB at most), as
    ``_put_cell`` and ``_put_value`` write them: an ASCII str copied from
    its own characters, any other encoded first (as encoding raises)."""
    cdef bytes raw
    cdef const char* p
    cdef Py_ssize_t n
    if PyUnicode_IS_ASCII(s):
        p, n = <const char*>PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s)
    else:
        raw = PyUnicode_AsUTF8String(s)
        p, n = PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw)
    if width == 1 and n > 255:
        raise ValueError("column name longer than 255 bytes: %r" % s)
    if n > 0xFFFFFFFF:
        raise ValueError("cell value longer than 4 GB")
    _put_le(b, <uint64_t>n, width)
    _put(b, p, n)
    return 0


cdef int _put_unstamped_cell(Buf* b, name, value) except -1:
    """``_put_cell(b, name, value, 0)``, a str name and a str value copied
    from their own characters when ASCII (``_put_str``)."""
    if type(name) is not str:
        return _put_cell(b, name, value, 0)
    _put_str(b, <str>name, 1)
    _put_le(b, 0, 8)
    if type(value) is not str:
        return _put_value(b, value)
    _put_byte(b, T_STRING)
    _put_str(b, <str>value, 4)
    return 0


cdef bytes _unstamped_head(Buf* b, columns):
    """``put_head(0, cells, 0)`` of a PutRow's ``columns`` (a list or tuple of
    (name, value) pairs, checked plain by the caller), the cells (name,
    value, None), encoded in ``b`` (emptied first: one buffer serves a
    batch): its generation and every cell's timestamp 0, for ``_stamp_head``.
    Names that strictly increase are encoded straight from the pairs; any
    other order takes put_head's way (read_order: sorted, a repeated name
    keeps its last value)."""
    cdef Py_ssize_t i, n = len(columns)
    prev = None
    for i in range(n):
        name = columns[i][0]
        if type(name) is not str or (prev is not None and PyUnicode_Compare(prev, name) >= 0):
            head = _put_head(0, [(c[0], c[1], None) for c in columns], 0)
            # a copy: the caller's alone whatever put_head hands back
            return PyBytes_FromStringAndSize(PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
        prev = name
    b.n = 0
    _put_byte(b, KIND_PUT)
    _put_le(b, 0, 8)
    for i in range(n):
        col = columns[i]
        _put_unstamped_cell(b, col[0], col[1])
    return PyBytes_FromStringAndSize(<char*>b.p, b.n)


cdef int _stamp_head(bytes head, uint64_t gen, int64_t now_ms) except -1:
    """Write ``gen`` and ``now_ms`` into ``head`` (an ``_unstamped_head``), in
    place, as its generation and every cell's timestamp: it becomes
    put_head(gen, cells, now_ms).  ``head`` must be the caller's alone (no
    one else holds it, nothing hashed it): bytes are otherwise immutable."""
    cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(head)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(head), pos
    cdef unsigned char t
    pos = _need(0, 9, n)
    _set_le(p + 1, gen)
    while pos < n:
        pos = _need(pos, 1, n)
        pos = _need(pos, p[pos - 1], n)        # the name
        _set_le(p + pos, <uint64_t>now_ms)
        pos = _need(pos, 9, n)                 # the timestamp, the value's type
        t = p[pos - 1]
        if t == T_INTEGER or t == T_DOUBLE:
            pos = _need(pos, 8, n)
        elif t == T_BOOLEAN:
            pos = _need(pos, 1, n)
        else:
            pos = _need(pos, 4, n)
            pos = _need(pos, <Py_ssize_t>_get_le(p + pos - 4, 4), n)
    return 0


def unstamped_head(columns):
    """``_unstamped_head`` for the tests (stamped: put_head's bytes)."""
    cdef Buf b
    b.p, b.n, b.cap = NULL, 0, 0
    try:
        return _unstamped_head(&b, columns)
    finally:
        free(b.p)


def stamped(bytes head not None, uint64_t gen, int64_t now_ms):
    """A copy of ``head`` stamped by ``_stamp_head`` (for the tests)."""
    cdef bytes out = PyBytes_FromStringAndSize(PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
    _stamp_head(out, gen, now_ms)
    return out
