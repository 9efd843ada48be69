# cython: language_level=3
"""Blocks: the unit of I/O, caching and checksumming of an SSTable.

Grammar (LevelDB's block_builder.cc layout; the full table format is at the
top of lsm/sstable.py and in docs/formats/sstable.md)::

    block    := entry* restarts:uint32le[num_restarts] num_restarts:uint32le
    entry    := shared:varint32 unshared:varint32 value_len:varint32
                key_delta:byte[unshared] value:byte[value_len]
    varint   := 7 bits per byte, least significant group first, high bit = more

An entry's key is the first ``shared`` bytes of the previous entry's key
followed by ``key_delta``.  Every ``restart_interval``-th entry is a restart
point: it stores ``shared = 0`` and its offset is listed in ``restarts``, so
a seek binary-searches the restart keys and then scans at most
``restart_interval`` entries.  An empty block is ``restarts = [0]``.

Data and index blocks hold internal keys (lsm/dbformat.py) and are searched
with ``cmp_ikey``; meta blocks (metaindex, properties) hold names and are only
read whole with ``Block.entries()``.

Thread-safety: a ``Block`` is immutable once parsed and may be shared by any
number of threads (it lives in the block cache); a ``BlockIter`` or
``BlockBuilder`` belongs to one thread at a time.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memcmp

from lsm._coding cimport decode_fixed32 as _fixed32, get_block_handle, get_varint64, put_varint64 as _put_varint
from lsm._keys cimport cmp_ikey, tag_at
from lsm._iter cimport InternalIterator, RawEntry

import zstandard

from lsm.errors import CorruptionError

#: Blocks with at least this many restart points (index blocks, whose
#: every entry is one) get a prefix array for their binary search.
DEF PREFIX_MIN_RESTARTS = 64


cdef inline uint64_t _prefix8(const unsigned char* k, Py_ssize_t n) noexcept nogil:
    """The first 8 bytes of ``k[:n]`` as a big-endian integer, zero-padded:
    integers compare as the padded bytes do, so the order of keys is kept
    (a key before another never gets a larger prefix)."""
    cdef uint64_t p = 0
    cdef Py_ssize_t j
    for j in range(8):
        p = (p << 8) | (k[j] if j < n else 0)
    return p


def encode_varint(uint64_t v):
    """The varint encoding of ``v`` (for block handles and properties)."""
    cdef unsigned char tmp[10]
    cdef Py_ssize_t n = _put_varint(tmp, v)
    return PyBytes_FromStringAndSize(<char*>tmp, n)


def decode_handle(bytes data, Py_ssize_t pos=0):
    """Return ``(offset, size, next_pos)`` of the block handle at ``pos``;
    CorruptionError("bad block handle") if malformed.  (The one decoder of
    handles: ``BlockIter.value_handle`` for index entries, this for Python.)"""
    cdef uint64_t off, size
    if pos < 0 or pos > len(data) or get_block_handle(
            <const unsigned char*>PyBytes_AS_STRING(data), len(data), &pos, &off, &size) != 0:
        raise CorruptionError("bad block handle")
    return off, size, pos


def decode_varint(bytes data, Py_ssize_t pos=0):
    """Return ``(value, next_pos)``; CorruptionError if malformed."""
    cdef uint64_t v
    if pos < 0 or pos > len(data) or \
            get_varint64(<const unsigned char*>PyBytes_AS_STRING(data), len(data), &pos, &v) != 0:
        raise CorruptionError("bad varint")
    return v, pos


cdef inline int _entry_header(const unsigned char* d, Py_ssize_t limit, Py_ssize_t* p, Py_ssize_t prev_klen,
                              uint64_t* shared, uint64_t* unshared, uint64_t* vlen) noexcept nogil:
    """Decode the entry header at ``p`` (moved past it): 0 ok, 1 a bad
    varint, 2 lengths out of bounds (``prev_klen``: the previous key's)."""
    cdef Py_ssize_t q = p[0]
    if q + 3 <= limit and d[q] < 0x80 and d[q + 1] < 0x80 and d[q + 2] < 0x80:
        shared[0] = d[q]
        unshared[0] = d[q + 1]
        vlen[0] = d[q + 2]
        p[0] = q + 3
    elif (get_varint64(d, limit, p, shared) != 0 or get_varint64(d, limit, p, unshared) != 0
            or get_varint64(d, limit, p, vlen) != 0):
        return 1
    if shared[0] > <uint64_t>prev_klen or unshared[0] + vlen[0] > <uint64_t>(limit - p[0]):
        return 2
    return 0


cdef int block_shape(const unsigned char* p, Py_ssize_t n, Py_ssize_t* limit,
                     uint32_t* nrest) noexcept nogil:
    """Check the restart array of the block ``p[:n]`` whole: 0 and the end
    of its entries (``*limit``) and its restart count (``*nrest``), or 1
    too short, 2 a bad restart count (in ``*nrest``), 3 a bad restart
    array (offsets not increasing from 0, or past the entries)."""
    cdef uint32_t i, r, prev = 0, nr
    cdef Py_ssize_t lim
    if n < 4:
        return 1
    nr = _fixed32(p + n - 4)
    nrest[0] = nr
    if nr == 0 or nr > (n - 4) // 4:
        return 2
    lim = n - 4 - 4 * <Py_ssize_t>nr
    for i in range(nr):
        r = _fixed32(p + lim + 4 * i)
        if (i == 0 and r != 0) or (i > 0 and r <= prev) or (r >= lim and lim > 0) \
                or (lim == 0 and nr != 1):
            return 3
        prev = r
    limit[0] = lim
    return 0


cdef inline int _restart_key(const unsigned char* d, Py_ssize_t limit, uint32_t i,
                             const unsigned char** k, Py_ssize_t* kn) noexcept nogil:
    """The key of restart ``i`` (its shared length must be 0): -1 if corrupt."""
    cdef Py_ssize_t pos = _fixed32(d + limit + 4 * i)
    cdef uint64_t shared, unshared, vlen
    if (get_varint64(d, limit, &pos, &shared) != 0 or shared != 0
            or get_varint64(d, limit, &pos, &unshared) != 0
            or get_varint64(d, limit, &pos, &vlen) != 0
            or unshared < 8 or unshared + vlen > <uint64_t>(limit - pos)):
        return -1
    k[0] = d + pos
    kn[0] = <Py_ssize_t>unshared
    return 0


cdef int _restart_search(const unsigned char* d, Py_ssize_t limit, uint32_t nrest,
                         const uint64_t* p, Py_ssize_t c, const unsigned char* key0,
                         const unsigned char* t, Py_ssize_t tn, uint32_t* found) noexcept nogil:
    """``Block._restart_search`` of the block ``d`` (entries end at
    ``limit``, ``nrest`` restarts; ``p``: its prefix array or NULL, with
    ``c`` and ``key0`` as Block keeps them)."""
    cdef Py_ssize_t left = 0, right = <Py_ssize_t>nrest - 1, mid, lo, hi
    cdef Py_ssize_t un = tn - 8
    cdef const unsigned char* k
    cdef Py_ssize_t kn
    cdef uint64_t pt
    if p != NULL and un >= c and memcmp(t, key0, c) == 0:
        # Restarts whose prefix is below t's are all < t; above, all > t.
        pt = _prefix8(t + c, un - c)
        lo, hi = 0, right + 1
        while lo < hi:                      # the first prefix >= pt
            mid = (lo + hi) >> 1
            if p[mid] < pt:
                lo = mid + 1
            else:
                hi = mid
        left = lo - 1
        hi = right + 1
        while lo < hi:                      # the first prefix > pt
            mid = (lo + hi) >> 1
            if p[mid] <= pt:
                lo = mid + 1
            else:
                hi = mid
        right = lo - 1
    while left < right:
        mid = (left + right + 1) >> 1
        if _restart_key(d, limit, <uint32_t>mid, &k, &kn) != 0:
            return -1
        if cmp_ikey(k, kn, t, tn) < 0:
            left = mid
        else:
            right = mid - 1
    found[0] = <uint32_t>left if left > 0 else 0
    return 0


cdef int _find(const unsigned char* d, Py_ssize_t limit, uint32_t nrest, const uint64_t* prefixes,
               Py_ssize_t common, const unsigned char* key0, const unsigned char* t, Py_ssize_t tn,
               unsigned char* kbuf, Py_ssize_t kcap, Py_ssize_t* klen, Py_ssize_t* voff,
               Py_ssize_t* vlen, Py_ssize_t* ordinal) noexcept nogil:
    """``Block.find`` of the block ``d`` (as ``_restart_search`` takes it)."""
    cdef uint32_t left
    cdef Py_ssize_t p, nk = 0, j = 0
    cdef uint64_t shared, unshared, vl
    if limit == 0:
        return 0
    if _restart_search(d, limit, nrest, prefixes, common, key0, t, tn, &left) != 0:
        return -1
    p = _fixed32(d + limit + 4 * left)
    while p < limit:
        if _entry_header(d, limit, &p, nk, &shared, &unshared, &vl) != 0:
            return -1
        if <Py_ssize_t>(shared + unshared) > kcap:
            return -2
        memcpy(kbuf + shared, d + p, unshared)
        nk = <Py_ssize_t>(shared + unshared)
        if nk < 8:
            return -1
        p += <Py_ssize_t>unshared
        if cmp_ikey(kbuf, nk, t, tn) >= 0:
            klen[0] = nk
            voff[0] = p
            vlen[0] = <Py_ssize_t>vl
            if ordinal != NULL:
                ordinal[0] = left + j
            return 1
        p += <Py_ssize_t>vl
        j += 1
    return 0


cdef int block_find(const unsigned char* d, Py_ssize_t limit, uint32_t nrest,
                    const unsigned char* t, Py_ssize_t tn, unsigned char* kbuf, Py_ssize_t kcap,
                    Py_ssize_t* klen, Py_ssize_t* voff, Py_ssize_t* vlen) noexcept nogil:
    """``Block.find`` in a block not held by a Block: ``d[:n]`` whose
    ``block_shape`` gave ``limit`` and ``nrest`` (a data block read in place
    from a table file's mapping; lsm._table.PointReader)."""
    return _find(d, limit, nrest, NULL, 0, NULL, t, tn, kbuf, kcap, klen, voff, vlen, NULL)


cdef class BlockBuilder:
    """Builds one block from entries added in order.

    The caller guarantees the order (the table builder checks internal-key
    order once, for the whole table); the builder only encodes.  ``add_raw``,
    ``finish_into`` and ``clear`` run without the GIL (a table's build core
    builds a flush's blocks so, lsm._table_builder); ``add``, ``finish`` and
    ``reset`` are them for Python and for callers holding bytes.
    """

    def __cinit__(self, int restart_interval=16):
        if restart_interval < 1:
            raise ValueError(f"restart_interval must be >= 1, got {restart_interval}")
        self.restart_interval = restart_interval
        self.cap = 8192
        self.buf = <unsigned char*>malloc(self.cap)
        self.rcap = 64
        self.restarts = <uint32_t*>malloc(self.rcap * sizeof(uint32_t))
        self.lastcap = 64
        self.lastk = <unsigned char*>malloc(self.lastcap)
        if self.buf == NULL or self.restarts == NULL or self.lastk == NULL:
            raise MemoryError()
        self.clear()

    def __dealloc__(self):
        free(self.buf)
        free(self.restarts)
        free(self.lastk)

    cdef void clear(self) noexcept nogil:
        self.size = 0
        self.nrestarts = 1
        self.restarts[0] = 0
        self.counter = 0
        self.nentries = 0
        self.lastn = 0

    cpdef reset(self):
        self.clear()

    cdef int _reserve(self, Py_ssize_t extra) noexcept nogil:
        cdef Py_ssize_t need = self.size + extra, cap = self.cap
        cdef unsigned char* nb
        if need <= cap:
            return 0
        while cap < need:
            cap *= 2
        nb = <unsigned char*>realloc(self.buf, cap)
        if nb == NULL:
            return ADD_NO_MEMORY
        self.buf, self.cap = nb, cap
        return 0

    cdef int add_raw(self, const unsigned char* k, Py_ssize_t kn, const unsigned char* v,
                     Py_ssize_t vn) noexcept nogil:
        """Append ``k[:kn] -> v[:vn]``: 0, or ADD_TOO_LARGE (the lengths do
        not fit the format), ADD_NO_MEMORY (``raise_add_error`` raises them)."""
        cdef const unsigned char* last = self.lastk
        cdef Py_ssize_t shared = 0, lim
        cdef uint32_t* nr
        cdef unsigned char* nk
        if kn > 0xFFFFFFFFLL or vn > 0xFFFFFFFFLL or self.size + kn + vn > 0xFFFFFFF0LL:
            return ADD_TOO_LARGE
        if self.counter < self.restart_interval:
            lim = kn if kn < self.lastn else self.lastn
            while shared < lim and last[shared] == k[shared]:
                shared += 1
        else:
            if self.nrestarts == self.rcap:
                nr = <uint32_t*>realloc(self.restarts, 2 * self.rcap * sizeof(uint32_t))
                if nr == NULL:
                    return ADD_NO_MEMORY
                self.restarts = nr
                self.rcap *= 2
            self.restarts[self.nrestarts] = <uint32_t>self.size
            self.nrestarts += 1
            self.counter = 0
        if kn > self.lastcap:
            nk = <unsigned char*>realloc(self.lastk, kn)
            if nk == NULL:
                return ADD_NO_MEMORY
            self.lastk, self.lastcap = nk, kn
        if self._reserve(15 + kn - shared + vn) != 0:
            return ADD_NO_MEMORY
        self.size += _put_varint(self.buf + self.size, shared)
        self.size += _put_varint(self.buf + self.size, kn - shared)
        self.size += _put_varint(self.buf + self.size, vn)
        memcpy(self.buf + self.size, k + shared, kn - shared)
        self.size += kn - shared
        memcpy(self.buf + self.size, v, vn)
        self.size += vn
        memcpy(self.lastk + shared, k + shared, kn - shared)
        self.lastn = kn
        self.counter += 1
        self.nentries += 1
        return 0

    cdef int _add(self, bytes key, bytes value) except -1:
        return raise_add_error(self.add_raw(<const unsigned char*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                                            <const unsigned char*>PyBytes_AS_STRING(value),
                                            PyBytes_GET_SIZE(value)))

    def add(self, bytes key not None, bytes value not None):
        """Append an entry; keys must come in the block's order."""
        self._add(key, value)

    cpdef Py_ssize_t size_estimate(self):
        """Bytes ``finish()`` would return now."""
        return self.encoded_size()

    @property
    def num_entries(self):
        return self.nentries

    @property
    def last_key(self):
        """The last key added (b"" before any)."""
        return PyBytes_FromStringAndSize(<char*>self.lastk, self.lastn)

    cdef void finish_into(self, unsigned char* d) noexcept nogil:
        """The encoded block, ``encoded_size()`` bytes, at ``d``."""
        cdef Py_ssize_t i, o
        cdef uint32_t r
        memcpy(d, self.buf, self.size)
        o = self.size
        for i in range(self.nrestarts + 1):
            r = self.restarts[i] if i < self.nrestarts else <uint32_t>self.nrestarts
            d[o] = r & 0xFF
            d[o + 1] = (r >> 8) & 0xFF
            d[o + 2] = (r >> 16) & 0xFF
            d[o + 3] = (r >> 24) & 0xFF
            o += 4

    cpdef bytes finish(self):
        """The encoded block; the builder must be ``reset()`` before reuse."""
        cdef bytes out = PyBytes_FromStringAndSize(NULL, self.encoded_size())
        self.finish_into(<unsigned char*>PyBytes_AS_STRING(out))
        return out


cdef int raise_add_error(int rc) except -1:
    """Raise what a failed ``BlockBuilder.add_raw`` (``rc``) means; 0: nothing."""
    if rc == ADD_TOO_LARGE:
        raise ValueError("block entry too large for the format")
    if rc == ADD_NO_MEMORY:
        raise MemoryError()
    return 0


cdef extern from "Python.h":
    ctypedef struct PyObject
    PyObject* PyThreadState_GetDict()

cdef object _ZSTD_KEY = object()        # this module's key in a thread state's dict


cpdef object zstd_decompressor():
    """This thread's zstd decompressor (one a thread: they are not
    thread-safe), kept in the thread state's dict: lsm/block.py's reads and
    lsm._table's reads from a mapping share it."""
    cdef dict d = <dict><object>PyThreadState_GetDict()
    z = d.get(_ZSTD_KEY)
    if z is None:
        z = d[_ZSTD_KEY] = zstandard.ZstdDecompressor()
    return z


cdef bytes _EMPTY_BLOCK = b"\x00\x00\x00\x00\x01\x00\x00\x00"     # restarts [0]


cdef Block block_in_place(object owner, const unsigned char* p, Py_ssize_t limit, uint32_t nrest):
    """A Block over bytes it does not hold: ``p``, whose ``block_shape``
    gave ``limit`` and ``nrest``, kept alive by ``owner`` (its ``data``):
    a data block read in place from a table file's mapping (lsm._table)."""
    cdef Block b = Block.__new__(Block, _EMPTY_BLOCK)
    b.data = owner
    b.ptr = p
    b.limit = limit
    b.num_restarts = nrest
    if nrest >= PREFIX_MIN_RESTARTS:
        b._build_prefixes()
    return b


cdef class Block:
    """A parsed, immutable block over its (decompressed) contents.

    Construction checks the restart array (count, bounds, order) so that the
    search loops can trust it; entries are checked as they are decoded.
    Raises CorruptionError, never crashes, on bad bytes.  ``data`` holds the
    bytes (those of a block read in place: the object that keeps them,
    ``block_in_place``).
    """

    def __cinit__(self, bytes data not None, Py_ssize_t size=-1):
        # size >= 0: the block is data[:size] (a stored block read with its
        # trailer, parsed without copying it off).
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        if size > n:
            raise ValueError(f"size {size} past the end of {n} bytes")
        if size >= 0:
            n = size
        cdef const unsigned char* p = <const unsigned char*>PyBytes_AS_STRING(data)
        self.data = data
        self.ptr = p
        cdef int bad = block_shape(p, n, &self.limit, &self.num_restarts)
        if bad == 1:
            raise CorruptionError(f"block too short ({n} bytes)")
        if bad == 2:
            raise CorruptionError(f"bad restart count {self.num_restarts} in a {n}-byte block")
        if bad:
            raise CorruptionError(f"bad restart array in a {n}-byte block")
        if self.num_restarts >= PREFIX_MIN_RESTARTS:
            self._build_prefixes()

    def __dealloc__(self):
        free(self.prefixes)

    cdef int _build_prefixes(self) noexcept:
        """The prefix array of the restart keys: for each, the 8 bytes of its
        user key after the prefix all of them share (``common``).  A binary
        search over these integers, 8 bytes each and contiguous, narrows the
        restarts to those whose 8 bytes equal the target's before any key is
        decoded; an index block of 2,000 entries is then searched in a few
        cache lines instead of 11 decoded keys scattered over 60 KB.  Left
        NULL (the plain search) when a restart key is not an internal key."""
        cdef uint32_t i, n = self.num_restarts
        cdef const unsigned char* k0
        cdef const unsigned char* k
        cdef Py_ssize_t kn0, kn, c
        if self._restart_key(0, &k0, &kn0) != 0 or self._restart_key(n - 1, &k, &kn) != 0:
            return 0
        kn0 -= 8
        kn -= 8
        c = 0
        while c < kn0 and c < kn and k0[c] == k[c]:
            c += 1
        cdef uint64_t* p = <uint64_t*>malloc(n * sizeof(uint64_t))
        if p == NULL:
            return 0
        for i in range(n):
            if self._restart_key(i, &k, &kn) != 0 or kn - 8 < c:
                free(p)
                return 0
            p[i] = _prefix8(k + c, kn - 8 - c)
        self.common = c
        self.key0 = k0
        self.prefixes = p
        return 0

    cdef int _restart_search(self, const unsigned char* t, Py_ssize_t tn,
                             uint32_t* found) noexcept nogil:
        """The last restart point whose key is < the internal key ``t`` (0
        when none is): where a seek starts scanning.  -1 on a corrupt
        restart entry."""
        return _restart_search(self.ptr, self.limit, self.num_restarts, self.prefixes, self.common,
                               self.key0, t, tn, found)

    cdef int _restart_key(self, uint32_t i, const unsigned char** k,
                          Py_ssize_t* kn) noexcept nogil:
        return _restart_key(self.ptr, self.limit, i, k, kn)

    cdef int find(self, const unsigned char* t, Py_ssize_t tn, unsigned char* kbuf, Py_ssize_t kcap,
                  Py_ssize_t* klen, Py_ssize_t* voff, Py_ssize_t* vlen,
                  Py_ssize_t* ordinal=NULL) noexcept nogil:
        """The first entry >= the internal key t, decoded into the caller's
        ``kbuf`` (``kcap`` bytes; no allocation, no GIL): the point-read
        twin of ``BlockIter._seek_raw``.  Returns 1 found (key in
        ``kbuf[:klen]``, value at ``data[voff:voff + vlen]``), 0 past the
        last entry, -1 corrupt, -2 a key longer than ``kcap`` (the caller
        then takes the BlockIter path).  ``ordinal``, when given, receives
        the found entry's number in the block if every entry is a restart
        point (an index block), else only a number to check against."""
        return _find(self.ptr, self.limit, self.num_restarts, self.prefixes, self.common, self.key0,
                     t, tn, kbuf, kcap, klen, voff, vlen, ordinal)

    cdef int next_entry(self, Py_ssize_t* pos, unsigned char* kbuf, Py_ssize_t kcap,
                        Py_ssize_t* klen, Py_ssize_t* voff, Py_ssize_t* vlen) noexcept nogil:
        """The entry after the one ``find`` (or this) decoded last into
        ``kbuf[:klen]``, which starts at ``pos[0]`` (that entry's ``voff +
        vlen``): decoded in place, ``pos`` moved past it.  Returns as
        ``find`` does (0: the block's last entry was the one before)."""
        cdef Py_ssize_t p = pos[0], nk
        cdef uint64_t shared, unshared, vl
        if p >= self.limit:
            return 0
        if _entry_header(self.ptr, self.limit, &p, klen[0], &shared, &unshared, &vl) != 0:
            return -1
        nk = <Py_ssize_t>(shared + unshared)
        if nk > kcap:
            return -2
        if nk < 8:
            return -1
        memcpy(kbuf + shared, self.ptr + p, unshared)
        p += <Py_ssize_t>unshared
        klen[0] = nk
        voff[0] = p
        vlen[0] = <Py_ssize_t>vl
        pos[0] = p + <Py_ssize_t>vl
        return 1

    cpdef BlockIter iterator(self):
        cdef BlockIter it = BlockIter.__new__(BlockIter)
        it.block = self
        it.ptr = self.ptr
        it.limit = self.limit
        it.cur = self.limit
        it.nxt = self.limit
        return it

    def entries(self):
        """Every (key, value) in order: for small meta blocks."""
        cdef BlockIter it = self.iterator()
        out = []
        it.seek_to_first()
        while it.cur < it.limit:
            out.append((it.key(), it.value()))
            it._parse_next()
        return out

    def get(self, bytes lookup not None):
        """The newest entry of ``lookup``'s user key at or below its sequence.

        ``lookup`` is ``dbformat.lookup_key(user_key, seq)``.  Returns
        ``(kind, value)`` or None when the first entry >= lookup has another
        user key (or there is none).  Hot: the point-read path.
        """
        cdef Py_ssize_t tn = PyBytes_GET_SIZE(lookup)
        cdef BlockIter it
        cdef uint64_t tag
        if tn < 8:
            raise ValueError("lookup key shorter than 8 bytes")
        it = self.iterator()
        it._seek_raw(<const unsigned char*>PyBytes_AS_STRING(lookup), tn)
        if it.cur >= it.limit or it.klen != tn or \
                memcmp(it.kbuf, PyBytes_AS_STRING(lookup), tn - 8) != 0:
            return None
        tag = tag_at(it.kbuf, it.klen)
        return (<int>(tag & 0xFF), it.value())

    def find_handle(self, bytes ikey not None):
        """Index-block search: the handle ``(offset, size)`` of the first
        entry whose key is >= ``ikey``, or None past the last block."""
        cdef Py_ssize_t tn = PyBytes_GET_SIZE(ikey)
        cdef BlockIter it
        cdef uint64_t off, size
        if tn < 8:
            raise ValueError("internal key shorter than 8 bytes")
        it = self.iterator()
        it._seek_raw(<const unsigned char*>PyBytes_AS_STRING(ikey), tn)
        if it.cur >= it.limit:
            return None
        it.value_handle(&off, &size)
        return off, size


cdef class BlockIter(InternalIterator):
    """Iterator over one block: seeks binary-search the restart array."""

    cdef int value_handle(self, uint64_t* offset, uint64_t* size) except -1:
        """Decode the current value as a block handle (an index entry)."""
        cdef Py_ssize_t pos = self.voff
        if get_block_handle(self.ptr, self.voff + self.vlen, &pos, offset, size) != 0:
            raise CorruptionError("bad block handle in index block")
        return 0

    def __dealloc__(self):
        free(self.kbuf)

    cdef int _corrupt(self, str what) except -1:
        self.cur = self.limit
        self.nxt = self.limit
        raise CorruptionError(f"corrupt block entry: {what}")

    cdef int _seek_to_restart(self, uint32_t i):
        self.klen = 0
        self.restart_index = i
        self.nxt = _fixed32(self.ptr + self.limit + 4 * i)
        return 0

    cdef int _parse_next(self) except -1:
        cdef Py_ssize_t p = self.nxt, limit = self.limit, nk
        cdef const unsigned char* d = self.ptr
        cdef uint64_t shared, unshared, vlen
        cdef int r
        cdef unsigned char* nb
        cdef Block blk
        if p >= limit:
            self.cur = limit
            self.nxt = limit
            return 0
        r = _entry_header(d, limit, &p, self.klen, &shared, &unshared, &vlen)
        if r == 1:
            return self._corrupt("bad varint")
        if r == 2:
            return self._corrupt("lengths out of bounds")
        nk = <Py_ssize_t>(shared + unshared)
        if nk > self.kcap:
            nb = <unsigned char*>realloc(self.kbuf, nk + 64)
            if nb == NULL:
                raise MemoryError()
            self.kbuf = nb
            self.kcap = nk + 64
        memcpy(self.kbuf + shared, d + p, unshared)
        self.klen = nk
        self.cur = self.nxt
        self.voff = p + <Py_ssize_t>unshared
        self.vlen = <Py_ssize_t>vlen
        self.nxt = self.voff + self.vlen
        blk = self.block
        while self.restart_index + 1 < blk.num_restarts and \
                _fixed32(d + limit + 4 * (self.restart_index + 1)) <= <uint32_t>self.cur:
            self.restart_index += 1
        return 0

    cdef int _seek_raw(self, const unsigned char* t, Py_ssize_t tn) except -1:
        """Position at the first entry >= t (invalid if none)."""
        cdef Block blk = self.block
        cdef uint32_t left
        cdef int bad
        if blk.limit == 0:
            self.cur = self.nxt = self.limit
            return 0
        with nogil:
            bad = blk._restart_search(t, tn, &left)
        if bad:
            return self._corrupt("bad restart entry")
        self._seek_to_restart(left)
        while True:
            self._parse_next()
            if self.cur >= self.limit:
                return 0
            if self.klen < 8:
                return self._corrupt("internal key shorter than 8 bytes")
            if cmp_ikey(self.kbuf, self.klen, t, tn) >= 0:
                return 0

    cpdef bint valid(self):
        return self.cur < self.limit

    cpdef seek_to_first(self):
        self._seek_to_restart(0)
        self._parse_next()

    cpdef seek_to_last(self):
        self._seek_to_restart(self.block.num_restarts - 1)
        self._parse_next()
        while self.nxt < self.limit:
            self._parse_next()

    cpdef seek(self, bytes ikey):
        if ikey is None or PyBytes_GET_SIZE(ikey) < 8:
            raise ValueError("seek needs an internal key (>= 8 bytes)")
        self._seek_raw(<const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey))

    cpdef seek_for_prev(self, bytes ikey):
        self.seek(ikey)
        if self.cur >= self.limit:
            self.seek_to_last()
        elif cmp_ikey(self.kbuf, self.klen, <const unsigned char*>PyBytes_AS_STRING(ikey),
                      PyBytes_GET_SIZE(ikey)) > 0:
            self.prev()

    cpdef next(self):
        if self.cur >= self.limit:
            raise ValueError("next() on an invalid iterator")
        self._parse_next()

    cpdef prev(self):
        cdef Py_ssize_t original = self.cur
        if original >= self.limit:
            raise ValueError("prev() on an invalid iterator")
        if original == 0:
            self.cur = self.nxt = self.limit
            return
        while _fixed32(self.ptr + self.limit + 4 * self.restart_index) >= <uint32_t>original:
            self.restart_index -= 1
        self._seek_to_restart(self.restart_index)
        while True:
            self._parse_next()
            if self.nxt >= original:
                break
        if self.nxt != original:
            self._corrupt("entries overlap")

    cpdef bytes key(self):
        if self.cur >= self.limit:
            raise ValueError("key() on an invalid iterator")
        return PyBytes_FromStringAndSize(<char*>self.kbuf, self.klen)

    cpdef bytes value(self):
        if self.cur >= self.limit:
            raise ValueError("value() on an invalid iterator")
        return PyBytes_FromStringAndSize(<char*>self.ptr + self.voff, self.vlen)

    cdef int entry(self, RawEntry* e) except -1:
        if self.cur >= self.limit:
            raise ValueError("entry() on an invalid iterator")
        if self.klen < 8:
            return 0                    # key() shows it as it is
        e.key, e.klen = self.kbuf, self.klen - 8
        e.tag = tag_at(self.kbuf, self.klen)
        e.value, e.vlen = self.ptr + self.voff, self.vlen
        return 1
