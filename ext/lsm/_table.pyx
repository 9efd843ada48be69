# cython: language_level=3
"""The per-entry hot paths of SSTables: building data blocks, the two-level
(index -> data block) iterator, and the key-range-bounded iterator.

The file layout these serve is documented at the top of lsm/sstable.py.
No file I/O here: the builder hands each finished data block to the Python
method ``emit_data_block(contents, last_key)`` of its subclass, and the
two-level iterator asks a Python ``loader(offset, size) -> Block``.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport calloc, malloc, realloc, free
from libc.string cimport memcpy, memcmp

from lsm._keys cimport KIND_DELETE, KIND_VALUE, TAG_FIRST, cmp_ikey, cmp_user, ikey_of, lookup_ikey, tag_at
from lsm._coding cimport decode_fixed32, get_block_handle, mask_crc
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from lsm._iter cimport InternalIterator
from lsm._block cimport (Block, BlockBuilder, BlockIter, block_find, block_in_place, block_shape,
                        zstd_decompressor)
from lsm._blockcache cimport BlockCache, _Slot, bury
from cpython.object cimport PyObject
from lsm._bloom cimport murmur3_x64_128, probe

from lsm.batch import check_bound
from lsm.errors import CorruptionError

cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item

cdef PyObject* _NONE = <PyObject*>None

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ

cdef extern from "crc32_fold.h":
    uint32_t lsm_crc32(uint32_t crc, const unsigned char *p, size_t n) nogil

#: What ``PointReader.lookup`` returns for a tombstone.
DELETED = object()

cdef enum:
    KBUF = 512              # stack buffer of a point read's key decoding


cdef class TableBuildCore:
    """Accepts entries in strictly increasing internal-key order, cuts them
    into data blocks of about ``block_size`` bytes and collects the bloom
    digests of distinct user keys.  Subclassed by lsm.sstable.TableBuilder,
    which does the writing.  One thread at a time.
    """
    cdef BlockBuilder data
    cdef Py_ssize_t block_size
    cdef bint bloom
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

    def _setup(self, Py_ssize_t block_size, int restart_interval, bint bloom):
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.data = BlockBuilder(restart_interval)
        self.block_size = block_size
        self.bloom = bloom

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
        """Hand the pending data block (if any) to ``emit_data_block``."""
        cdef bytes contents, last
        if self.data.nentries == 0:
            return
        contents = self.data.finish()
        last = self.data.last_key
        self.data.reset()
        self.emit_data_block(contents, last)

    def emit_data_block(self, bytes contents, bytes last_key):
        raise NotImplementedError

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


cdef class TwoLevelIter(InternalIterator):
    """Index block -> data blocks.  ``loader(offset, size)`` returns the
    parsed ``Block`` (through the block cache); it may raise CorruptionError,
    which propagates.  ``reader``, the table's PointReader, when given:
    a raw block of its mapped file is read in place, uncached, as its point
    reads read it, a cached block found and a compressed one read from the
    mapping in C (``PointReader.iter_block``), and only the others go
    through ``loader``.  One thread at a time; the table must stay open.
    """
    cdef BlockIter index
    cdef BlockIter data
    cdef object loader
    cdef PointReader reader
    cdef uint64_t data_off
    cdef bint have_data

    def __init__(self, Block index not None, loader, PointReader reader=None):
        self.index = index.iterator()
        self.loader = loader
        self.reader = reader
        self.data = None
        self.have_data = False

    cdef int _init_data(self) except -1:
        cdef uint64_t off, size
        cdef Block blk
        if not self.index.valid():
            self.data = None
            self.have_data = False
            return 0
        self.index.value_handle(&off, &size)
        if self.have_data and off == self.data_off:
            return 0
        self.data = None
        self.have_data = False
        blk = None
        if self.reader is not None:
            blk = self.reader.iter_block(off, size, self.index.restart_index)
        if blk is None:
            blk = self.loader(off, size)
        self.data = blk.iterator()
        self.data_off = off
        self.have_data = True
        return 0

    cdef int _skip_forward(self) except -1:
        while self.data is None or not self.data.valid():
            if not self.index.valid():
                self.data = None
                self.have_data = False
                return 0
            self.index._parse_next()
            self._init_data()
            if self.data is not None:
                self.data.seek_to_first()
        return 0

    cdef int _skip_backward(self) except -1:
        while self.data is None or not self.data.valid():
            if not self.index.valid():
                self.data = None
                self.have_data = False
                return 0
            self.index.prev()
            self._init_data()
            if self.data is not None:
                self.data.seek_to_last()
        return 0

    cpdef bint valid(self):
        return self.data is not None and self.data.cur < self.data.limit

    cpdef seek_to_first(self):
        self.index.seek_to_first()
        self._init_data()
        if self.data is not None:
            self.data.seek_to_first()
        self._skip_forward()

    cpdef seek_to_last(self):
        self.index.seek_to_last()
        self._init_data()
        if self.data is not None:
            self.data.seek_to_last()
        self._skip_backward()

    cpdef seek(self, bytes ikey):
        self.index.seek(ikey)
        self._init_data()
        if self.data is not None:
            self.data.seek(ikey)
        self._skip_forward()

    cpdef seek_for_prev(self, bytes ikey):
        self.seek(ikey)
        if not self.valid():
            self.seek_to_last()
        elif cmp_ikey(self.data.kbuf, self.data.klen, <const unsigned char*>PyBytes_AS_STRING(ikey),
                      PyBytes_GET_SIZE(ikey)) > 0:
            self.prev()

    cpdef next(self):
        if not self.valid():
            raise ValueError("next() on an invalid iterator")
        self.data._parse_next()
        if self.data.cur >= self.data.limit:
            self._skip_forward()

    cpdef prev(self):
        if not self.valid():
            raise ValueError("prev() on an invalid iterator")
        self.data.prev()
        self._skip_backward()

    cpdef bytes key(self):
        if not self.valid():
            raise ValueError("key() on an invalid iterator")
        return PyBytes_FromStringAndSize(<char*>self.data.kbuf, self.data.klen)

    cpdef bytes value(self):
        if not self.valid():
            raise ValueError("value() on an invalid iterator")
        return PyBytes_FromStringAndSize(<char*>self.data.ptr + self.data.voff, self.data.vlen)




cdef class BoundedIter(InternalIterator):
    """Any internal iterator restricted to user keys in ``[lo, hi)``
    (``None`` = unbounded).  It never yields or lands outside the range, in
    either direction or on any seek.  One thread at a time.
    """
    cdef InternalIterator inner
    cdef bytes lo, hi
    cdef bytes cur_key
    cdef bint ok

    def __init__(self, InternalIterator inner not None, lo, hi):
        check_bound("lo", lo)
        check_bound("hi", hi)
        self.inner = inner
        self.lo = lo
        self.hi = hi
        self.ok = False

    cdef inline int _check(self, bint check_lo, bint check_hi) except -1:
        cdef bytes k
        cdef Py_ssize_t kn
        self.ok = False
        self.cur_key = None
        if not self.inner.valid():
            return 0
        k = self.inner.key()
        kn = PyBytes_GET_SIZE(k) - 8
        if check_hi and self.hi is not None and cmp_user(
                <const unsigned char*>PyBytes_AS_STRING(k), kn,
                <const unsigned char*>PyBytes_AS_STRING(self.hi), PyBytes_GET_SIZE(self.hi)) >= 0:
            return 0
        if check_lo and self.lo is not None and cmp_user(
                <const unsigned char*>PyBytes_AS_STRING(k), kn,
                <const unsigned char*>PyBytes_AS_STRING(self.lo), PyBytes_GET_SIZE(self.lo)) < 0:
            return 0
        self.ok = True
        self.cur_key = k
        return 0

    cdef inline bint _below_lo(self, bytes ikey):
        return self.lo is not None and cmp_user(
            <const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8,
            <const unsigned char*>PyBytes_AS_STRING(self.lo), PyBytes_GET_SIZE(self.lo)) < 0

    cdef inline bint _at_or_above_hi(self, bytes ikey):
        return self.hi is not None and cmp_user(
            <const unsigned char*>PyBytes_AS_STRING(ikey), PyBytes_GET_SIZE(ikey) - 8,
            <const unsigned char*>PyBytes_AS_STRING(self.hi), PyBytes_GET_SIZE(self.hi)) >= 0

    cpdef bint valid(self):
        return self.ok

    cpdef seek_to_first(self):
        if self.lo is None:
            self.inner.seek_to_first()
        else:
            self.inner.seek(ikey_of(self.lo, TAG_FIRST))
        self._check(False, True)

    cpdef seek_to_last(self):
        if self.hi is None:
            self.inner.seek_to_last()
        else:
            # The last entry before the first entry of user key hi.
            self.inner.seek(ikey_of(self.hi, TAG_FIRST))
            if self.inner.valid():
                self.inner.prev()
            else:
                self.inner.seek_to_last()
        self._check(True, False)

    cpdef seek(self, bytes ikey):
        if ikey is None or PyBytes_GET_SIZE(ikey) < 8:
            raise ValueError("seek needs an internal key (>= 8 bytes)")
        if self._below_lo(ikey):
            self.seek_to_first()
        else:
            self.inner.seek(ikey)
            self._check(False, True)

    cpdef seek_for_prev(self, bytes ikey):
        if ikey is None or PyBytes_GET_SIZE(ikey) < 8:
            raise ValueError("seek_for_prev needs an internal key (>= 8 bytes)")
        if self._at_or_above_hi(ikey):
            self.seek_to_last()
        else:
            self.inner.seek_for_prev(ikey)
            self._check(True, False)

    cpdef next(self):
        if not self.ok:
            raise ValueError("next() on an invalid iterator")
        self.inner.next()
        self._check(False, True)

    cpdef prev(self):
        if not self.ok:
            raise ValueError("prev() on an invalid iterator")
        self.inner.prev()
        self._check(True, False)

    cpdef bytes key(self):
        if not self.ok:
            raise ValueError("key() on an invalid iterator")
        return self.cur_key

    cpdef bytes value(self):
        if not self.ok:
            raise ValueError("value() on an invalid iterator")
        return self.inner.value()




cdef class MappedBlocks:
    """A table file's data blocks read in place from its mapping (LevelDB
    reads an mmapped table this way: it caches no block it reads from a
    mapping).  Holds the buffer (``PointReader.attach_source``) until it is
    freed, which ``PointReader.detach_source`` defers (``bury``) while a
    search without the GIL may read it.

    A block is read in place when its handle lies within the data, its type
    is raw and it is found good the first time: its CRC (when ``verify``)
    and its restart array checked whole (``block_shape``).  That first check
    is remembered per index entry (``checked``: the block's offset + 1), as
    a cached block's is: a page of the file that changed on disk after it
    was checked is not checked again.  Anything else is read through the
    block cache and ``fill``, which decompresses it or says what is wrong.
    """
    def __cinit__(self, buf, Py_ssize_t data_end, bint verify, int raw_type, Py_ssize_t trailer,
                  Py_ssize_t overhead, Py_ssize_t nblocks, int zstd_type=-1):
        PyObject_GetBuffer(buf, &self.view, PyBUF_SIMPLE)
        self.held = True
        self.c.checked = <uint64_t*>calloc(max(nblocks, 1), sizeof(uint64_t))
        if self.c.checked == NULL:
            raise MemoryError()
        self.c.base = <const unsigned char*>self.view.buf
        self.c.end = min(data_end, self.view.len)
        self.c.verify, self.c.raw_type, self.c.zstd_type = verify, raw_type, zstd_type
        self.c.trailer, self.c.overhead, self.c.nblocks = trailer, overhead, nblocks

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)
        free(self.c.checked)


cdef const unsigned char* map_block(const MapC* m, uint64_t off, uint64_t size, Py_ssize_t ordinal,
                                    Py_ssize_t* limit, uint32_t* nrest) noexcept nogil:
    """The raw data block at ``off`` (``size`` bytes; index entry number
    ``ordinal``) in place, with its ``block_shape``; NULL when it must be
    read through the cache (MappedBlocks)."""
    cdef const unsigned char* p
    cdef bint known
    if size < 4:
        return NULL
    p = _stored(m, off, size, ordinal, m.raw_type, &known)
    if p == NULL:
        return NULL
    if known:
        nrest[0] = decode_fixed32(p + size - 4)
        limit[0] = <Py_ssize_t>size - 4 - 4 * <Py_ssize_t>nrest[0]
        return p
    if block_shape(p, <Py_ssize_t>size, limit, nrest) != 0:
        return NULL
    if 0 <= ordinal < m.nblocks:
        m.checked[ordinal] = off + 1
    return p


cdef inline const unsigned char* _stored(const MapC* m, uint64_t off, uint64_t size, Py_ssize_t ordinal,
                                         int btype, bint* known) noexcept nogil:
    """The payload of the stored block at ``off`` when its handle lies in
    the data, its type is ``btype`` and its CRC is right (unless not
    ``verify``); ``*known`` when it was found good before (``checked``).
    NULL otherwise."""
    cdef uint64_t end = off + size + <uint64_t>m.trailer
    cdef const unsigned char* p
    known[0] = False
    if end < off or end > <uint64_t>m.end:
        return NULL
    p = m.base + off
    if p[size] != btype:
        return NULL
    if 0 <= ordinal < m.nblocks and m.checked[ordinal] == off + 1:
        known[0] = True
        return p
    if m.verify and mask_crc(lsm_crc32(0, p, size + 1)) != decode_fixed32(p + size + 1):
        return NULL
    return p


cdef inline int _found(int r, const unsigned char* kbuf, Py_ssize_t klen, const unsigned char* lk,
                       Py_ssize_t lkn, const unsigned char* v, Py_ssize_t vlen,
                       const unsigned char** vp, Py_ssize_t* vn) noexcept nogil:
    """``lookup_nogil``'s answer from a block search for the lookup key
    ``lk`` that gave ``r`` and the entry ``kbuf[:klen]`` with value ``v``."""
    if r < 0:
        return -1
    if r == 0 or klen != lkn or memcmp(kbuf, lk, lkn - 8) != 0:
        return 0
    if (tag_at(kbuf, klen) & 0xFF) != KIND_VALUE:
        return 2
    vp[0] = v
    vn[0] = vlen
    return 1


cdef class PointReader:
    """``Table.get`` in one C call: bloom probe, index search, block cache,
    in-block search.  Only a block-cache miss calls back into Python
    (``fill(offset, size) -> Block``, which reads, checks and caches).

    ``cache`` is the table's ``BlockCache`` (or None), keyed by
    ``(owner, offset)``; its ``get`` refreshes the LRU order of a hit.
    ``lo``/``hi`` bound a view (``TableView``): keys outside ``[lo, hi)``
    are not there.  ``lookup`` is the C entry of ``lsm._read``'s point read:
    the searches decode keys into a stack buffer and build no object but the
    value found.
    """
    def __init__(self, filt, Block index, cache, owner, fill, lo=None, hi=None, slots=None):
        self._filter = filt
        self._index = index
        self._cache = cache
        self._owner = owner
        self._fill = fill
        self._lo = lo
        self._hi = hi
        # A hit on a block this reader has read before skips the cache's
        # dict: the index entry's number picks the block's cache slot here
        # (checked by its offset; an evicted slot has no value).
        if slots is None and cache is not None:
            slots = [None] * index.num_restarts
        self._slots = slots
        if lo is not None:
            self._lo_p, self._lo_n = <const unsigned char*>PyBytes_AS_STRING(lo), PyBytes_GET_SIZE(lo)
        if hi is not None:
            self._hi_p, self._hi_n = <const unsigned char*>PyBytes_AS_STRING(hi), PyBytes_GET_SIZE(hi)
        if filt is not None:
            self._filter_p = <const unsigned char*>PyBytes_AS_STRING(filt)
            self._filter_n = PyBytes_GET_SIZE(filt)
        if slots is not None:
            self._slot_items = <void**>(<PyListObject*>slots).ob_item
            self._nslots = PyList_GET_SIZE(slots)

    def attach_source(self, buf, Py_ssize_t data_end, bint verify, int raw_type,
                      Py_ssize_t trailer, Py_ssize_t overhead, int zstd_type=-1):
        """Search the raw data blocks in place in ``buf`` (the table file's
        bytes: a mapping), read as ``fill`` would read them: the handle
        within ``data_end``, the trailer's type ``raw_type``, its CRC when
        ``verify`` (``MappedBlocks``).  A block of type ``zstd_type`` (a
        zstd frame) missing from the cache is decompressed from ``buf`` in
        C and cached (``_read_zstd``).  Anything else (a bad CRC or handle,
        a bad frame) goes to ``fill``, which reads it or says what is
        wrong; a block read from ``buf`` into the cache is charged
        ``overhead`` bytes more than it holds.  ``detach_source`` before
        the buffer goes (Table.close)."""
        self.detach_source()
        self._map = MappedBlocks(buf, data_end, verify, raw_type, trailer, overhead,
                                 self._index.num_restarts, zstd_type)
        self._map_c = &self._map.c

    def detach_source(self):
        """Stop reading the buffer; it is let go once no search without the
        GIL may still read it (lsm/_blockcache.pyx, ``bury``)."""
        if self._map is not None:
            self._map_c = NULL
            bury(self._map)
            self._map = None

    cdef Block in_place(self, uint64_t off, uint64_t size, Py_ssize_t ordinal):
        """The raw data block at ``off`` (``size`` bytes; index entry number
        ``ordinal``, only a hint) as a Block over the mapping, not cached;
        None when it must be read through the cache (MappedBlocks)."""
        cdef Py_ssize_t limit
        cdef uint32_t nrest
        cdef const unsigned char* p
        if self._map is None:
            return None
        p = map_block(&self._map.c, off, size, ordinal, &limit, &nrest)
        if p == NULL:
            return None
        return block_in_place(self._map, p, limit, nrest)

    cdef Block iter_block(self, uint64_t off, uint64_t size, Py_ssize_t ordinal):
        """An iterator's data block at ``off`` of a mapped table: read in
        place (``in_place``), else from the cache, else read from the
        mapping into the cache (``_read_fast``), else by ``fill`` (which
        names what is wrong); None for a table with no mapping (the
        iterator's loader reads it)."""
        if self._map is None:
            return None
        blk = self.in_place(off, size, ordinal)
        if blk is not None:
            return <Block>blk
        if self._cache is not None:
            blk = self._cache.lookup(self._owner, off)
            if blk is not None:
                return <Block>blk
        blk = self._read_fast(off, size, ordinal)
        return <Block>(blk if blk is not None else self._fill(off, size))

    cdef object _read_fast(self, uint64_t off, uint64_t size, Py_ssize_t ordinal):
        """The raw data block at ``off`` read from the attached source into a
        Block and cached, or None when ``fill`` must read it."""
        cdef Py_ssize_t limit
        cdef uint32_t nrest
        cdef const unsigned char* p
        cdef bytes raw
        cdef Block blk
        if self._map is None:
            return None
        p = map_block(&self._map.c, off, size, ordinal, &limit, &nrest)
        if p == NULL:
            return self._read_zstd(off, size, ordinal)
        raw = PyBytes_FromStringAndSize(<const char*>p, <Py_ssize_t>(size + <uint64_t>self._map.c.trailer))
        try:
            blk = Block(raw, <Py_ssize_t>size)
        except CorruptionError:
            return None
        if self._cache is not None:
            self._cache.put(self._owner, off, blk, PyBytes_GET_SIZE(raw) + self._map.c.overhead)
        return blk

    cdef object _read_zstd(self, uint64_t off, uint64_t size, Py_ssize_t ordinal):
        """The zstd-compressed data block at ``off`` decompressed from the
        attached source into a Block and cached (as ``fill`` would, without
        its Python calls), or None when ``fill`` must read it."""
        cdef MappedBlocks m = self._map     # held: the mapping outlives a close meanwhile
        cdef const unsigned char* p
        cdef bint known
        cdef Block blk
        if m is None or m.c.zstd_type < 0:
            return None
        p = _stored(&m.c, off, size, ordinal, m.c.zstd_type, &known)
        if p == NULL:
            return None
        try:
            data = zstd_decompressor().decompress(
                PyMemoryView_FromMemory(<char*>p, <Py_ssize_t>size, PyBUF_READ))
            blk = Block(data)
        except Exception:
            return None                     # fill reads it again and names what is wrong
        if not known and 0 <= ordinal < m.c.nblocks:
            m.c.checked[ordinal] = off + 1
        if self._cache is not None:
            self._cache.put(self._owner, off, blk, PyBytes_GET_SIZE(data) + m.c.overhead)
        return blk

    def bounded(self, lo, hi):
        """This reader restricted to user keys in ``[lo, hi)`` (None = open)."""
        return PointReader(self._filter, self._index, self._cache, self._owner, self._fill, lo, hi,
                           self._slots)

    cdef object lookup(self, const unsigned char* uk, Py_ssize_t un, const unsigned char* lk, Py_ssize_t lkn):
        """The entry of user key ``uk`` at the lookup key ``lk`` (user key +
        tag of the read's sequence): its value (bytes), ``DELETED`` for a
        tombstone, None when the table has no visible entry."""
        cdef unsigned char kbuf[KBUF]
        cdef Py_ssize_t klen, voff, vlen, ivoff, ivlen, pos, limit, ordinal = -1
        cdef uint64_t off, size
        cdef uint32_t nrest
        cdef const unsigned char* d
        cdef int r
        cdef object blk
        if self._lo is not None and cmp_user(uk, un, <const unsigned char*>PyBytes_AS_STRING(self._lo),
                                             PyBytes_GET_SIZE(self._lo)) < 0:
            return None
        if self._hi is not None and cmp_user(uk, un, <const unsigned char*>PyBytes_AS_STRING(self._hi),
                                             PyBytes_GET_SIZE(self._hi)) >= 0:
            return None
        if self._filter is not None and not probe(
                <const unsigned char*>PyBytes_AS_STRING(self._filter), PyBytes_GET_SIZE(self._filter), uk, un):
            return None
        r = self._index.find(lk, lkn, kbuf, KBUF, &klen, &ivoff, &ivlen, &ordinal)
        if r == 0:
            return None
        if r < 0:
            return self._slow(PyBytes_FromStringAndSize(<char*>lk, lkn))
        if self._map is not None:
            pos = ivoff
            if get_block_handle(self._index.ptr, ivoff + ivlen, &pos, &off, &size) != 0:
                raise CorruptionError("bad block handle in index block")
            d = map_block(&self._map.c, off, size, ordinal, &limit, &nrest)
            if d != NULL:
                r = block_find(d, limit, nrest, lk, lkn, kbuf, KBUF, &klen, &voff, &vlen)
                if r == 0:
                    return None
                if r == 1:
                    if klen != lkn or memcmp(kbuf, lk, lkn - 8) != 0:
                        return None
                    if (tag_at(kbuf, klen) & 0xFF) != KIND_VALUE:
                        return DELETED
                    return PyBytes_FromStringAndSize(<const char*>d + voff, vlen)
                # A long key or a corrupt entry: the Block path below says which.
        blk = self._block_at(ivoff, ivlen, ordinal)
        r = (<Block>blk).find(lk, lkn, kbuf, KBUF, &klen, &voff, &vlen)
        if r == 0:
            return None
        if r < 0:
            return self._slow(PyBytes_FromStringAndSize(<char*>lk, lkn))
        if klen != lkn or memcmp(kbuf, lk, lkn - 8) != 0:
            return None
        if (tag_at(kbuf, klen) & 0xFF) != KIND_VALUE:
            return DELETED
        return PyBytes_FromStringAndSize(<char*>(<Block>blk).ptr + voff, vlen)

    cdef int lookup_nogil(self, const unsigned char* uk, Py_ssize_t un, const unsigned char* lk,
                          Py_ssize_t lkn, const unsigned char** vp, Py_ssize_t* vn,
                          Py_ssize_t* hits) noexcept nogil:
        """``lookup`` without the GIL, for a search registered with
        ``_blockcache.read_enter`` (its doc says why the blocks stay alive):
        0 when the table has no visible entry, 1 for a value (``*vp``,
        ``*vn``: its bytes, inside a cached block), 2 for a tombstone, and
        -1 when it needs the GIL (a block neither read in place from the
        mapping nor in this reader's slots, a key longer than the stack
        buffer, a corrupt block): the caller then calls ``lookup``.  A
        value found in the mapping stays readable until ``read_exit``
        (``detach_source`` buries the mapping).  A block found in its slot adds one to ``*hits``
        (the caller adds them to the cache's count with the GIL).  The
        block's slot is tried before the mapping: a cached block's search
        touches no page of the file."""
        cdef unsigned char kbuf[KBUF]
        cdef Py_ssize_t klen, voff, vlen, pos, ordinal = -1
        cdef uint64_t off, size
        cdef int r
        cdef void* o
        cdef void* b
        cdef const MapC* m
        cdef const unsigned char* d
        cdef Py_ssize_t limit
        cdef uint32_t nrest
        if lkn > KBUF:
            return -1
        if self._lo_p != NULL and cmp_user(uk, un, self._lo_p, self._lo_n) < 0:
            return 0
        if self._hi_p != NULL and cmp_user(uk, un, self._hi_p, self._hi_n) >= 0:
            return 0
        if self._filter_p != NULL and not probe(self._filter_p, self._filter_n, uk, un):
            return 0
        r = self._index.find(lk, lkn, kbuf, KBUF, &klen, &voff, &vlen, &ordinal)
        if r == 0:
            return 0
        if r < 0:
            return -1
        pos = voff
        if get_block_handle(self._index.ptr, voff + vlen, &pos, &off, &size) != 0:
            return -1
        if 0 <= ordinal < self._nslots:
            o = self._slot_items[ordinal]
            if o != <void*>_NONE and (<_Slot>o).offset == off:
                b = (<_Slot>o).block
                if b != NULL:
                    (<_Slot>o).referenced = True
                    hits[0] += 1
                    r = (<Block>b).find(lk, lkn, kbuf, KBUF, &klen, &voff, &vlen)
                    return _found(r, kbuf, klen, lk, lkn, (<Block>b).ptr + voff, vlen, vp, vn)
        m = self._map_c
        if m != NULL:
            d = map_block(m, off, size, ordinal, &limit, &nrest)
            if d != NULL:
                r = block_find(d, limit, nrest, lk, lkn, kbuf, KBUF, &klen, &voff, &vlen)
                return _found(r, kbuf, klen, lk, lkn, d + voff, vlen, vp, vn)
        return -1

    cdef Block _block_at(self, Py_ssize_t voff, Py_ssize_t vlen, Py_ssize_t ordinal):
        """The data block of index entry number ``ordinal`` (-1: unknown),
        whose value is at ``voff``, through the block cache."""
        cdef Py_ssize_t pos = voff
        cdef uint64_t off, size
        cdef object blk = None
        cdef _Slot s
        if get_block_handle(self._index.ptr, voff + vlen, &pos, &off, &size) != 0:
            raise CorruptionError("bad block handle in index block")
        if self._cache is None:
            blk = self._read_fast(off, size, ordinal)
            return <Block>(blk if blk is not None else self._fill(off, size))
        cdef bint slotted = self._slots is not None and 0 <= ordinal < PyList_GET_SIZE(self._slots)
        if slotted:
            o = PyList_GET_ITEM(self._slots, ordinal)
            if <object>o is not None:
                s = <_Slot>o
                if s.offset == off and s.value is not None:
                    s.referenced = True
                    self._cache.hits += 1
                    return <Block>s.value
        blk = self._cache.lookup(self._owner, off)
        if blk is None:
            blk = self._read_fast(off, size, ordinal)
            if blk is None:
                blk = self._fill(off, size)
        if slotted:
            # The slot replaced may be in use by a search without the GIL.
            bury(<object>PyList_GET_ITEM(self._slots, ordinal))
            self._slots[ordinal] = self._cache.slot_of(self._owner, off)
        return <Block>blk

    cdef int collect(self, const unsigned char* lo, Py_ssize_t lon, const unsigned char* lk,
                     Py_ssize_t lkn, const unsigned char* hi, Py_ssize_t hin, uint64_t seq,
                     list out, Py_ssize_t cap) except -2:
        """Append to ``out`` ``(user key, tag, value)`` of the newest entry
        with sequence <= ``seq`` of each user key of ``[lo, hi)`` in the
        table, ascending (``lk``: ``lo`` + the read's tag, as ``lookup``
        takes).  Returns 0, or -1 when the caller must iterate instead: more
        than ``cap`` keys, a key longer than the stack buffer, a corrupt
        entry (the iterator reports it), or a view starting inside the range.
        No bloom probe: the filter answers for one key, not a range."""
        cdef unsigned char kbuf[KBUF]
        cdef unsigned char ibuf[KBUF]
        cdef Py_ssize_t klen, voff, vlen, ilen, ivoff, ivlen, pos, ipos, n0 = len(out), ordinal = -1
        cdef Py_ssize_t lastn = -1
        cdef const unsigned char* last = NULL
        cdef uint64_t tag
        cdef int r
        cdef Block blk
        cdef bytes uk
        if self._lo is not None and cmp_user(lo, lon, <const unsigned char*>PyBytes_AS_STRING(self._lo),
                                             PyBytes_GET_SIZE(self._lo)) < 0:
            if cmp_user(hi, hin, <const unsigned char*>PyBytes_AS_STRING(self._lo),
                        PyBytes_GET_SIZE(self._lo)) <= 0:
                return 0
            return -1
        if self._hi is not None and cmp_user(<const unsigned char*>PyBytes_AS_STRING(self._hi),
                                             PyBytes_GET_SIZE(self._hi), hi, hin) < 0:
            hi = <const unsigned char*>PyBytes_AS_STRING(self._hi)
            hin = PyBytes_GET_SIZE(self._hi)
        r = self._index.find(lk, lkn, ibuf, KBUF, &ilen, &ivoff, &ivlen, &ordinal)
        while r == 1:
            ipos = ivoff + ivlen
            blk = self._block_at(ivoff, ivlen, ordinal)
            r = blk.find(lk, lkn, kbuf, KBUF, &klen, &voff, &vlen)
            while r == 1:
                if cmp_user(kbuf, klen - 8, hi, hin) >= 0:
                    return 0
                tag = tag_at(kbuf, klen)
                if (tag >> 8) <= seq and (lastn != klen - 8 or memcmp(last, kbuf, lastn) != 0):
                    if len(out) - n0 >= cap:
                        return -1
                    uk = PyBytes_FromStringAndSize(<char*>kbuf, klen - 8)
                    out.append((uk, tag,
                                PyBytes_FromStringAndSize(<char*>blk.ptr + voff, vlen)))
                    last = <const unsigned char*>PyBytes_AS_STRING(uk)
                    lastn = klen - 8
                pos = voff + vlen
                r = blk.next_entry(&pos, kbuf, KBUF, &klen, &voff, &vlen)
            if r != 0:
                return -1
            r = self._index.next_entry(&ipos, ibuf, KBUF, &ilen, &ivoff, &ivlen)
            ordinal += 1
        return 0 if r == 0 else -1

    cdef object _slow(self, bytes lk):
        # Keys longer than the stack buffer (or a corrupt block, which the
        # BlockIter path reports with its message): the object path.
        cdef object h, blk, r
        h = self._index.find_handle(lk)
        if h is None:
            return None
        blk = None
        if self._cache is not None:
            blk = self._cache.lookup(self._owner, <uint64_t>(<tuple>h)[0])
        if blk is None:
            blk = self._fill((<tuple>h)[0], (<tuple>h)[1])
        r = (<Block>blk).get(lk)
        if r is None:
            return None
        return (<tuple>r)[1] if (<tuple>r)[0] == KIND_VALUE else DELETED

    def get(self, bytes user_key not None, uint64_t seq):
        """``(kind, value)`` of the newest entry of ``user_key`` with
        sequence <= ``seq``, or None.  A bloom miss reads no block."""
        cdef bytes lk = lookup_ikey(user_key, seq)
        r = self.lookup(<const unsigned char*>PyBytes_AS_STRING(user_key), PyBytes_GET_SIZE(user_key),
                        <const unsigned char*>PyBytes_AS_STRING(lk), PyBytes_GET_SIZE(lk))
        if r is None:
            return None
        if r is DELETED:
            return (KIND_DELETE, b"")
        return (KIND_VALUE, r)


def index_boundaries(Block index, Py_ssize_t trailer_size, Py_ssize_t stride=1):
    """``[(last user key of block i, end offset of block i incl. trailer)]``
    from an index block (every ``stride``-th block and the last), decoded in C (a split-point search reads every
    table's index; tens of thousands of entries for a 200 MB region)."""
    cdef BlockIter it = index.iterator()
    cdef uint64_t off, size
    cdef list out = []
    cdef Py_ssize_t i = 0
    it.seek_to_first()
    while it.cur < it.limit:
        i += 1
        if stride > 1 and i % stride != 0 and it.nxt < it.limit:
            it._parse_next()     # only every stride-th entry, and the last
            continue
        it.value_handle(&off, &size)
        if it.klen < 8:
            raise CorruptionError("index key shorter than 8 bytes")
        out.append((PyBytes_FromStringAndSize(<char*>it.kbuf, it.klen - 8), off + size + trailer_size))
        it._parse_next()
    return out
