# The C interface of regions.tablestore._cellcodec, for _reads, _writes and
# _rowcodec: the cells codec (heads, deltas, a row's cells, their CU sizes,
# the clock) and the inline helpers the row codecs share (a str's UTF-8
# length, the layout's integers, objects the cyclic GC need not watch).
from cpython.object cimport PyObject, PyTypeObject
from libc.stdint cimport int64_t, uint64_t

cdef extern from "Python.h":
    PyTypeObject PyBaseObject_Type
    void PyObject_GC_UnTrack(void* op)
    bint PyObject_IS_GC(object op)
    bint PyObject_GC_IsTracked(object op)
    bint PyUnicode_IS_ASCII(object op)
    Py_ssize_t PyUnicode_GET_LENGTH(object op)
    bytes PyUnicode_AsUTF8String(object op)


cdef inline Py_ssize_t _utf8_len(str s) except -1:
    """The byte length of ``s`` in UTF-8 (what the CU sizes count): its
    length when it is ASCII, with no copy; otherwise measured on the
    encoded copy (which raises as encoding does, lone surrogates included)."""
    if s is None:
        raise TypeError("expected a str, got None")
    if PyUnicode_IS_ASCII(s):
        return PyUnicode_GET_LENGTH(s)
    return len(PyUnicode_AsUTF8String(s))


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


# -- results the cyclic GC need not watch -----------------------------------
# The rows, items and capacity units the reads return hold only atomic values
# (str, int, float, bytes, bool, None) and each other, in a tree: they can be
# in no cycle.  Tracked, every one a caller keeps is walked again by each full
# collection, and they bring those collections on: 100-row BatchGetRows with
# their results kept spent 7.5 us a row, against 3.4 us with the results
# dropped, and the difference was the GC's (issue 11, docs/performance.md).
# Untracked, they are freed by reference counting as before; a cycle a caller
# builds through one (a row appended to its own column list) is the only
# thing the GC would no longer free.  msgspec's ``Struct(gc=False)`` makes the
# same trade for the same reason.
cdef inline object _untracked(object o):
    """``o``, untracked (a no-op on an object already untracked)."""
    PyObject_GC_UnTrack(<void*>o)
    return o


cdef inline object _new_untracked(object cls):
    """``object.__new__(cls)``, untracked: an instance of the result class
    ``cls`` (a Python class, of any metaclass, with no ``__new__`` of its
    own) whose ``__init__`` is not run.  object's ``tp_new`` is called
    directly, as ``object.__new__`` ends up calling it, without that call's
    argument tuple and wrapper (~35 ns of an instance's ~130; a BatchGetRow
    makes three a row: its item, CapacityUnit and Row)."""
    o = PyBaseObject_Type.tp_new(<type>cls, <PyObject*>(), NULL)
    PyObject_GC_UnTrack(<void*>o)
    return o


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


cdef inline Py_ssize_t _value_size(v) except -1:
    """cells.value_size: 8 for numbers, 1 for booleans, else the byte length."""
    if v is True or v is False:
        return 1
    if isinstance(v, (int, float)):
        return 8
    if isinstance(v, str):
        return _utf8_len(v)
    return len(v)


# -- defined in _cellcodec.pyx ------------------------------------------------
cdef Py_ssize_t _names_size(names) except -1
cdef object _head_cells(bytes data, Py_ssize_t keep, Py_ssize_t* size)
cdef object _head_cells_at(const unsigned char* p, Py_ssize_t n, Py_ssize_t keep,
                           Py_ssize_t* size)
cdef object _row_cells(Py_ssize_t rklen, list entries, Py_ssize_t keep, Py_ssize_t* size)
cdef bytes _delta_key(bytes row_key, bytes name, uint64_t gen)
cdef int64_t _now_ms() noexcept nogil
cdef bytes _put_delta(int64_t ts, value)
cdef bytes _put_head(uint64_t gen, cells, int64_t now_ms)
from regions._api cimport Buf
cdef bytes _unstamped_head(Buf* b, columns)
cdef int _stamp_head(bytes head, uint64_t gen, int64_t now_ms) except -1
