# cython: language_level=3
"""Python-visible twins of the C owners of byte layouts, for the tests that
check them against their Python owners (tests/test_dbformat.py):

* ``_keys.pxd`` (internal keys) against lsm/dbformat.py;
* ``_coding.pxd`` (fixed ints, varints, block handles, the CRC mask) against
  struct, lsm.block's varints and lsm/crc.py.

Nothing in the engine calls these.
"""
from libc.stdint cimport uint32_t, uint64_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

from lsm._coding cimport (MASK_DELTA as _MASK_DELTA, decode_fixed32, decode_fixed64, encode_fixed32,
                          encode_fixed64, mask_crc as _mask_crc, put_varint64)
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
