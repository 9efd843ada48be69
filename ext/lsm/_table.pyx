# cython: language_level=3
"""A table's point reader: ``Table.get`` in one C call (bloom probe, index
search, block cache or the mapped file, in-block search), the blocks the
table's iterators read (``iter_block``), and the index's boundaries that a
split-point search reads.  The file layout is documented at the top of
lsm/sstable.py; the build core is lsm._table_builder, the iterators
lsm._table_iter, the mapped blocks lsm._mapped_blocks.

No file I/O here: a block-cache miss calls the Python ``fill(offset, size)
-> Block``, which reads, checks and caches; a mapped file's bytes are read
in place, never through a file call.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcmp

from lsm._keys cimport KIND_DELETE, KIND_VALUE, cmp_user, lookup_ikey, tag_at
from lsm._coding cimport get_block_handle
from lsm._block cimport Block, BlockIter, block_find, block_in_place, zstd_decompressor
from lsm._blockcache cimport BlockCache, _Slot, bury
from lsm._bloom cimport probe
from lsm._mapped_blocks cimport MapC, MappedBlocks, map_block, stored_block

from lsm.errors import CorruptionError

cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item

cdef PyObject* _NONE = <PyObject*>None

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ

#: What ``PointReader.lookup`` returns for a tombstone.
DELETED = object()

cdef enum:
    KBUF = 512              # stack buffer of a point read's key decoding


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
        p = stored_block(&m.c, off, size, ordinal, m.c.zstd_type, &known)
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
