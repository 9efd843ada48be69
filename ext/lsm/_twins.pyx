# cython: language_level=3
"""Python-visible twins of the C owners of byte layouts, for the tests that
check them against their Python owners (tests/test_dbformat.py):

* ``_keys.pxd`` (internal keys) against lsm/dbformat.py;
* ``_coding.pxd`` (fixed ints, varints, block handles, the CRC mask) against
  struct, lsm.block's varints and lsm/crc.py;
* the C face's ``point_scan_into`` (``_api.pxd``) against ``DB.scan_chunk``
  and ``DB.scan`` (tests/test_scan_into.py).

Nothing in the engine calls these.
"""
from libc.stdint cimport uint32_t, uint64_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

from lsm._coding cimport (MASK_DELTA as _MASK_DELTA, decode_fixed32, decode_fixed64, encode_fixed32,
                          encode_fixed64, mask_crc as _mask_crc, put_varint64)
from lsm._api cimport entry_fn, point_path, point_scan_into
from lsm._keys cimport (KIND_DELETE as _KD, KIND_VALUE as _KV, MAX_SEQ as _MAX_SEQ, TAG_SIZE as _TS,
                        cmp_ikeys, ikey_of, lookup_ikey, pack_tag, tag_of, user_of)

KIND_DELETE = _KD
KIND_VALUE = _KV
TAG_SIZE = _TS
MAX_SEQ = _MAX_SEQ
MASK_DELTA = _MASK_DELTA


def make_internal_key(bytes user, uint64_t seq, int kind):
    return ikey_of(user, pack_tag(seq, kind))


def lookup_key(bytes user, uint64_t seq):
    return lookup_ikey(user, seq)


def parse_internal_key(bytes ikey):
    cdef uint64_t tag = tag_of(ikey)
    return user_of(ikey), tag >> 8, <int>(tag & 0xff)


def compare(bytes a, bytes b):
    cdef int r = cmp_ikeys(a, b)
    return (r > 0) - (r < 0)


def mask_crc(uint32_t crc):
    return _mask_crc(crc)


def fixed32(uint32_t v):
    cdef unsigned char b[4]
    encode_fixed32(b, v)
    return PyBytes_FromStringAndSize(<char*>b, 4), decode_fixed32(b)


def fixed64(uint64_t v):
    cdef unsigned char b[8]
    encode_fixed64(b, v)
    return PyBytes_FromStringAndSize(<char*>b, 8), decode_fixed64(b)


def varint(uint64_t v):
    cdef unsigned char b[10]
    cdef Py_ssize_t n = put_varint64(b, v)
    return PyBytes_FromStringAndSize(<char*>b, n)


cdef struct _Taking:
    void* out           # the list the entries go to (borrowed)
    Py_ssize_t stop_at  # fn asks to stop at this entry (1-based), 0: never
    Py_ssize_t raise_at # fn raises at this entry (1-based), 0: never


cdef int _take(void* ctx, const unsigned char* key, Py_ssize_t klen, const unsigned char* value,
               Py_ssize_t vlen) except -1:
    cdef _Taking* t = <_Taking*>ctx
    cdef list out = <list>t.out
    if t.raise_at and len(out) + 1 == t.raise_at:
        raise KeyError("the consumer failed")
    out.append((PyBytes_FromStringAndSize(<const char*>key, klen),
                PyBytes_FromStringAndSize(<const char*>value, vlen)))
    return 1 if t.stop_at and len(out) == t.stop_at else 0


def scan_into(db, start=None, end=None, Py_ssize_t limit=1000, bint reverse=False, snapshot=None,
              Py_ssize_t stop_at=0, Py_ssize_t raise_at=0):
    """``(entries, last key, stopped)`` of ``point_scan_into`` on ``db``'s
    C path (its entries collected as ``(key, value)``; ``stop_at``: the
    entry after which the consumer asks to stop, ``raise_at`` the one it
    raises KeyError at), or None under the switch."""
    cdef list out = []
    cdef _Taking t
    cdef Py_ssize_t count = 0
    cdef bint stopped = False
    path = point_path(db)
    if path is None:
        return None
    t.out, t.stop_at, t.raise_at = <void*>out, stop_at, raise_at
    last = point_scan_into(path, start, end, limit, reverse, snapshot, _take, &t, &count, &stopped)
    assert count == len(out)
    return out, last, stopped
