# cython: language_level=3
"""C twins of the row key's codec (pkcodec.py), and the result rows made of keys.

Every function here reimplements, byte for byte and value for value, a
pure-Python function that stays the reference (tests run both on the same
random inputs, tests/test_tablestore_rows_c.py, test_tablestore_pkcodec.py):

    encode_pk, decode_pk        pkcodec.encode_pk, pkcodec.decode_pk
    _plain_key                  validate._plain_pk, then pkcodec.encode_pk
    pk_size                     capacity.pk_size over zip(names, values)
    read_cu, write_cu           capacity.read_cu, capacity.write_cu of an unconditional write
    ROW_KEY_PREFIX              pkcodec.row_key_len, as an lsm.PrefixExtractor

and builds the objects the C reads and writes return (``Row``,
``CapacityUnit``, a primary key's list) without their Python-level
``__init__``, the capacity units with capacity.py's rounding (the one
statement of it in C).  One concept: a row as the API names it, by its primary key
(pkcodec.py owns the format; nothing here defines one); the cells of a row
are _cellcodec's.  Keys are ``bytes`` (what the region server returns);
other buffers are copied to bytes first.  The C interface (_rowcodec.pxd)
serves the row reads (_reads), the plain writes (_writes) and the search
pages (_searchpage).  Pure functions, thread-safe.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String
from regions._api cimport (Buf, buf_put_be64 as _put_be64, buf_put_byte as _put_byte,
                            buf_reserve as _reserve, buf_take as _take)
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free
from libc.string cimport memchr
from regions.tablestore._layout cimport *
from regions._api cimport PrefixExtractor

from regions.tablestore.capacity import UNIT
from regions.tablestore.metadata import INF_MAX, INF_MIN, CapacityUnit, Row
from regions.tablestore.validate import SHORT_PK_STR

cdef object _INF_MIN = INF_MIN
cdef object _INF_MAX = INF_MAX
cdef object _Row = Row
cdef object _CapacityUnit = CapacityUnit
cdef Py_ssize_t _SHORT_PK_STR = SHORT_PK_STR
cdef Py_ssize_t _UNIT = UNIT

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



def pk_size(names, values):
    """CU size of a primary key (twin of capacity.pk_size(zip(names, values)))."""
    cdef Py_ssize_t total = 0
    for name, v in zip(names, values):
        total += _utf8_len(name) + _value_size(v)
    return total


# -- a plain primary key ---------------------------------------------------
cdef bint _plain_key(list names, list types, primary_key, Buf* b, Py_ssize_t* size,
                     list values, bint columns=False) except -1:
    """Whether ``primary_key`` is plainly valid (``validate._plain_pk``) with
    INTEGER and STRING columns only; if so its row key is written to ``b``,
    its values appended to ``values`` and its CU size added to ``size``.

    With ``columns``, ``values`` gets the key's columns instead: the
    caller's own ``(name, value)`` tuples, checked to hold an exact str
    (equal to the schema's name) and an exact int or str, hence untracked
    here (``_atomic``: they can be in no cycle) and fit to be a result
    row's primary key as they are (a read's: ``_reads``)."""
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
        size[0] += _utf8_len(name)
        values.append(_atomic(<tuple>col) if columns else v)
    return True




# -- the row key as a memtable's key prefix -----------------------------------
cdef Py_ssize_t _row_key_len(const unsigned char* key, Py_ssize_t n,
                             Py_ssize_t arg) noexcept nogil:
    """pkcodec.row_key_len (its doc says why the prefix is sound)."""
    cdef Py_ssize_t pos = 0
    cdef const unsigned char* end
    while pos < n and key[pos] >= 0x10:
        if key[pos] == TAG_INTEGER:
            if pos + 9 > n:
                return -1
            pos += 9
        elif key[pos] == TAG_STRING or key[pos] == TAG_BINARY:
            pos += 1
            while True:
                end = <const unsigned char*>memchr(key + pos, 0, n - pos)
                if end == NULL or end + 1 >= key + n:
                    return -1
                if end[1] == PK_END:
                    pos = end - key + 2
                    break
                pos = end - key + 1
        else:
            return -1
    return pos if pos > 0 else -1


cdef PrefixExtractor _row_prefix():
    cdef PrefixExtractor pe = PrefixExtractor.__new__(PrefixExtractor)
    pe.fn, pe.arg, pe.name = _row_key_len, 0, "tablestore.row_key"
    return pe


#: The row key of a stored entry's key, as an lsm.PrefixExtractor: a row's
#: entries share one memtable bucket, and a row read is a dict lookup there.
ROW_KEY_PREFIX = _row_prefix()


# -- result objects -----------------------------------------------------------
# Built without their Python-level __init__ and untracked by the cyclic GC
# (see _untracked in _cellcodec.pxd).
cdef object _make_row(primary_key, attribute_columns):
    """``Row(primary_key, attribute_columns)`` without the Python-level __init__
    call: the same two attributes, set in the same order (the twin tests
    compare rows by their attributes); the row and its lists untracked."""
    row = _new_untracked(_Row)
    if type(primary_key) is list:
        _untracked(primary_key)
    if type(attribute_columns) is list:
        _untracked(attribute_columns)
    row.primary_key = primary_key
    row.attribute_columns = attribute_columns
    return row


cdef object _make_cu(Py_ssize_t read, Py_ssize_t write):
    """``CapacityUnit(read, write)`` without the Python-level __init__, untracked."""
    cu = _new_untracked(_CapacityUnit)
    cu.read = read
    cu.write = write
    return cu


cdef inline Py_ssize_t _units(Py_ssize_t size):
    """capacity.py's rule: ``size`` bytes in units of UNIT (4 KB), rounded up,
    at least 1."""
    return max(1, (size + _UNIT - 1) // _UNIT)


cdef object _read_cu(Py_ssize_t size):
    """capacity.read_cu(size) for C callers: a read of ``size`` bytes (0: nothing
    read, one unit)."""
    return _make_cu(_units(size), 0)


cdef object _write_cu(Py_ssize_t size):
    """capacity.write_cu(pk, attributes, None) for C callers, ``size`` their sum:
    an unconditional write's units, no read."""
    return _make_cu(0, _units(size))


def read_cu(Py_ssize_t size):
    """``_read_cu`` for the tests that hold it to capacity.read_cu."""
    return _read_cu(size)


def write_cu(Py_ssize_t size):
    """``_write_cu`` for the tests that hold it to capacity.write_cu."""
    return _write_cu(size)


cdef list _pk_list(list names, list values):
    """``list(zip(names, values))`` for a decoded primary key."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(values)
    cdef list out = []
    for i in range(n):
        out.append(_maybe_atomic((names[i], values[i])))
    return out
