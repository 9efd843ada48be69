# cython: language_level=3
"""A table's build core: entries in, data blocks and bloom digests out (the
per-entry half of lsm/sstable.py's ``TableBuilder``, which holds one and
does the writing; the file layout is documented there).

No file I/O here: each finished data block goes to the ``emit(contents,
last_key)`` the core is handed at construction (the builder's block writer).
"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t
from libc.stdlib cimport malloc, realloc, free

from lsm._keys cimport cmp_ikey, cmp_user
from lsm._block cimport BlockBuilder
from lsm._bloom cimport murmur3_x64_128


cdef class TableBuildCore:
    """Accepts entries in strictly increasing internal-key order, cuts them
    into data blocks of about ``block_size`` bytes, each handed to ``emit``,
    and collects the bloom digests of distinct user keys (``bloom``).  Held
    by lsm.sstable.TableBuilder, which does the writing.  One thread at a
    time.
    """
    cdef BlockBuilder data
    cdef Py_ssize_t block_size
    cdef bint bloom
    cdef object emit
    cdef unsigned char* digests
    cdef Py_ssize_t ndigest_bytes, digest_cap
    cdef bytes first_key, last_key
    cdef readonly uint64_t num_entries, raw_key_bytes, raw_value_bytes
    cdef public bint closed

    def __cinit__(self, *args, **kwargs):
        self.digest_cap = 16 * 1024
        self.digests = <unsigned char*>malloc(self.digest_cap)
        if self.digests == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.digests)

    def __init__(self, Py_ssize_t block_size, int restart_interval, bint bloom, emit):
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.data = BlockBuilder(restart_interval)
        self.block_size = block_size
        self.bloom = bloom
        self.emit = emit

    cdef int _add_digest(self, bytes ikey) except -1:
        # The digest of the user key, h1 then h2 little-endian (_bloom.pyx).
        cdef uint64_t h1, h2
        cdef unsigned char* nb
        cdef unsigned char* d
        cdef int i
        murmur3_x64_128(<const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8,
                        0, &h1, &h2)
        if self.ndigest_bytes + 16 > self.digest_cap:
            nb = <unsigned char*>realloc(self.digests, self.digest_cap * 2)
            if nb == NULL:
                raise MemoryError()
            self.digests = nb
            self.digest_cap *= 2
        d = self.digests + self.ndigest_bytes
        for i in range(8):
            d[i] = <unsigned char>(h1 >> (8 * i))
            d[8 + i] = <unsigned char>(h2 >> (8 * i))
        self.ndigest_bytes += 16
        return 0

    def add(self, bytes ikey not None, bytes value not None):
        """Append an entry; ValueError unless ikey is > every earlier key."""
        cdef Py_ssize_t kn = PyBytes_GET_SIZE(ikey)
        cdef const unsigned char* k = <const unsigned char*>PyBytes_AS_STRING(ikey)
        cdef const unsigned char* last
        cdef Py_ssize_t lastn
        cdef bint new_user_key = True
        if self.closed:
            raise ValueError("add() after finish() or abandon()")
        if kn < 8:
            raise ValueError(f"internal key must be >= 8 bytes, got {kn}")
        if self.num_entries:
            last = <const unsigned char*>PyBytes_AS_STRING(self.last_key)
            lastn = PyBytes_GET_SIZE(self.last_key)
            if cmp_ikey(last, lastn, k, kn) >= 0:
                raise ValueError("internal keys must be added in strictly increasing order")
            new_user_key = cmp_user(last, lastn - 8, k, kn - 8) != 0
        else:
            self.first_key = ikey
        if self.bloom and new_user_key:
            self._add_digest(ikey)
        self.data._add(ikey, value)
        self.last_key = ikey
        self.num_entries += 1
        self.raw_key_bytes += kn
        self.raw_value_bytes += PyBytes_GET_SIZE(value)
        if self.data.size_estimate() >= self.block_size:
            self.flush_data_block()

    def flush_data_block(self):
        """Hand the pending data block (if any) to ``emit``."""
        cdef bytes contents, last
        if self.data.nentries == 0:
            return
        contents = self.data.finish()
        last = self.data.last_key
        self.data.reset()
        self.emit(contents, last)

    @property
    def pending_bytes(self):
        """Size of the data block being built (0 when none)."""
        return self.data.size_estimate() if self.data.nentries else 0

    @property
    def smallest(self):
        return self.first_key

    @property
    def largest(self):
        return self.last_key

    def filter_digests(self):
        """The bloom digests collected so far (16 bytes per distinct user key)."""
        return PyBytes_FromStringAndSize(<char*>self.digests, self.ndigest_bytes)
