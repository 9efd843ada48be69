# cython: language_level=3
"""A table's build core, in C: entries in, the table's data blocks written
out (lsm/sstable.py's ``TableBuilder`` holds one and writes the metadata
blocks and the footer; the file layout is documented there).

What runs where:

- per entry, here (``add``, or ``add_entry`` from C: lsm._compaction_stream
  drains a compaction into it with no Python call; or ``add_nogil``, without
  the GIL: the stream drains a flush so, with pointers into the frozen
  memtable): the order check, the bloom digest of each new user key, the
  data block's encoding (lsm._block.BlockBuilder);
- per data block, here: its stored form (``_store``: the zstd compressor's
  ``compress``, a C extension's, called once when compressing, the trailer,
  the masked CRC), gathered in a C buffer handed to the file
  ``write_buffer`` bytes at a time (an ``OSAppendFile`` written from the
  buffer in C, with the GIL released; any other file through ``append``),
  and the block's index entry;
- once per table, in Python (``TableBuilder.finish``): the filter, the
  properties, the metaindex and the footer, each block stored through
  ``store_block`` here.

The stored block's trailer is defined in _table_builder.pxd (lsm/block.py
documents it and re-exports the values); ``encode_stored_block`` is the one
encoder of a stored block, for Python (lsm.block).

One thread at a time; the file belongs to the caller (neither synced nor
closed here).
"""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy

from lsm._coding cimport encode_fixed32, mask_crc, put_varint64
from lsm._crc32 cimport lsm_crc32
from lsm._block cimport raise_add_error
from lsm._keys cimport cmp_ikey, cmp_user
from lsm._bloom cimport murmur3_x64_128


cdef bytes _payload(bytes contents, object compress, unsigned char* btype):
    """What a block stores of ``contents``: its zstd frame when ``compress``
    (a compressor's ``compress``) is given and saves at least 1/8 of it
    (LevelDB's rule), else ``contents``; ``btype`` set to match."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(contents)
    cdef bytes z
    btype[0] = TYPE_RAW
    if compress is not None and n > 0:
        z = compress(contents)
        if PyBytes_GET_SIZE(z) <= n - n // 8:
            btype[0] = TYPE_ZSTD
            return z
    return contents


cdef inline void _put_trailer(unsigned char* d, Py_ssize_t n, unsigned char btype) noexcept nogil:
    """The trailer of the payload ``d[:n]``, at ``d + n`` (TRAILER_SIZE bytes)."""
    cdef uint32_t crc
    d[n] = btype
    crc = lsm_crc32(lsm_crc32(0, d, n), d + n, 1)
    encode_fixed32(d + n + 1, mask_crc(crc))


cdef inline void _put_stored(unsigned char* d, bytes payload, unsigned char btype) noexcept:
    """``payload`` + its trailer at ``d`` (room for len + TRAILER_SIZE)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(payload)
    memcpy(d, PyBytes_AS_STRING(payload), n)
    _put_trailer(d, n, btype)


cdef inline int _keep_key(unsigned char** buf, Py_ssize_t* n, Py_ssize_t* cap,
                          const unsigned char* k, Py_ssize_t kn) noexcept nogil:
    """Copy ``k[:kn]`` into ``buf`` (grown as needed): 0 or BUILD_NO_MEMORY."""
    cdef unsigned char* nb
    if kn > cap[0]:
        nb = <unsigned char*>realloc(buf[0], kn)
        if nb == NULL:
            return BUILD_NO_MEMORY
        buf[0], cap[0] = nb, kn
    memcpy(buf[0], k, kn)
    n[0] = kn
    return 0


def encode_stored_block(bytes contents not None, compress=None):
    """``contents`` as stored in a table file: payload + type + masked CRC
    (lsm/block.py's grammar); ``compress``: a zstd compressor's
    ``compress``, or None to store raw."""
    cdef unsigned char btype
    cdef bytes payload = _payload(contents, compress, &btype)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(payload) + TRAILER_SIZE)
    _put_stored(<unsigned char*>PyBytes_AS_STRING(out), payload, btype)
    return out


cdef class TableBuildCore:
    """Accepts entries in strictly increasing internal-key order, cuts them
    into data blocks of about ``block_size`` bytes, stores each (compressed
    with ``compressor``, a ``zstandard.ZstdCompressor``, unless None) and
    appends them to ``f`` ``write_buffer`` bytes at a time; collects the
    index of the data blocks and, when ``bloom``, the bloom digests of
    distinct user keys.  Held by lsm.sstable.TableBuilder, which finishes
    the table.  One thread at a time (``compressor`` is that thread's).
    """

    def __cinit__(self, *args, **kwargs):
        self.digest_cap = 16 * 1024
        self.digests = <unsigned char*>malloc(self.digest_cap)
        self.firstcap = self.lastcap = 64
        self.firstk = <unsigned char*>malloc(self.firstcap)
        self.lastk = <unsigned char*>malloc(self.lastcap)
        if self.digests == NULL or self.firstk == NULL or self.lastk == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.digests)
        free(self.out)
        free(self.firstk)
        free(self.lastk)

    def __init__(self, f, Py_ssize_t block_size, int restart_interval, bint bloom, compressor,
                 Py_ssize_t write_buffer):
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        if write_buffer < 1:
            raise ValueError(f"write_buffer must be >= 1, got {write_buffer}")
        self.data = BlockBuilder(restart_interval)
        self.index = BlockBuilder(1)
        self.block_size = block_size
        self.bloom = bloom
        self.f = f
        self.osf = f if type(f) is OSAppendFile else None
        self.compress = None if compressor is None else compressor.compress
        self.raw = compressor is None
        self.write_buffer = write_buffer
        self.out_cap = write_buffer + 2 * block_size + 1024
        self.out = <unsigned char*>malloc(self.out_cap)
        if self.out == NULL:
            raise MemoryError()

    # -- entries -> data blocks -------------------------------------------
    cdef int _add_digest(self, const unsigned char* k, Py_ssize_t kn) noexcept nogil:
        # The digest of the user key k[:kn], h1 then h2 little-endian (_bloom.pyx).
        cdef uint64_t h1, h2
        cdef unsigned char* nb
        cdef unsigned char* d
        cdef int i
        murmur3_x64_128(k, kn, 0, &h1, &h2)
        if self.ndigest_bytes + 16 > self.digest_cap:
            nb = <unsigned char*>realloc(self.digests, self.digest_cap * 2)
            if nb == NULL:
                return BUILD_NO_MEMORY
            self.digests = nb
            self.digest_cap *= 2
        d = self.digests + self.ndigest_bytes
        for i in range(8):
            d[i] = <unsigned char>(h1 >> (8 * i))
            d[8 + i] = <unsigned char>(h2 >> (8 * i))
        self.ndigest_bytes += 16
        return 0

    cdef int add_raw(self, const unsigned char* k, Py_ssize_t kn, const unsigned char* v,
                     Py_ssize_t vn) noexcept nogil:
        """The internal key ``k[:kn]`` -> ``v[:vn]`` into the data block
        (which the caller finishes once it holds ``block_size``): 0, or a
        BUILD_ failure (``raise_error`` raises it)."""
        cdef bint new_user_key = True
        cdef int rc
        if self.closed:
            return BUILD_CLOSED
        if kn < 8:
            return BUILD_SHORT_KEY
        if self.num_entries:
            if cmp_ikey(self.lastk, self.lastn, k, kn) >= 0:
                return BUILD_ORDER
            new_user_key = cmp_user(self.lastk, self.lastn - 8, k, kn - 8) != 0
        elif _keep_key(&self.firstk, &self.firstn, &self.firstcap, k, kn) != 0:
            return BUILD_NO_MEMORY
        if self.bloom and new_user_key and self._add_digest(k, kn - 8) != 0:
            return BUILD_NO_MEMORY
        rc = self.data.add_raw(k, kn, v, vn)
        if rc != 0:
            return rc
        if _keep_key(&self.lastk, &self.lastn, &self.lastcap, k, kn) != 0:
            return BUILD_NO_MEMORY
        self.num_entries += 1
        self.raw_key_bytes += kn
        self.raw_value_bytes += vn
        return 0

    cdef int add_nogil(self, const unsigned char* k, Py_ssize_t kn, const unsigned char* v,
                       Py_ssize_t vn) noexcept nogil:
        """``add`` without the GIL, for a core with no compressor (``raw``):
        the entry, the data block it fills and the write that block makes
        due (an ``OSAppendFile`` is written here).  0; BUILD_NEED_GIL: the
        entry is in, and the caller must call ``write_out_pending`` with the
        GIL before adding more; else a failure (``raise_error``)."""
        cdef int rc = self.add_raw(k, kn, v, vn)
        if rc != 0 or self.data.encoded_size() < self.block_size:
            return rc
        rc = self._finish_raw_block()
        if rc != 0 or self.out_len < self.write_buffer:
            return rc
        rc = self.osf.write_nogil(<const char*>self.out, self.out_len) if self.osf is not None else -1
        if rc == -1:
            return BUILD_NEED_GIL
        self.out_len = 0            # written or failed: the builder is abandoned after an error
        if rc != 0:
            self.io_errno = rc
            return BUILD_IO
        return 0

    cdef int write_out_pending(self) except -1:
        """After ``add_nogil`` returned BUILD_NEED_GIL: hand the gathered
        blocks to the file."""
        return self._write_out()

    cdef int raise_error(self, int rc) except -1:
        """Raise the failure ``rc`` of ``add_raw`` or ``add_nogil`` (0 and
        BUILD_NEED_GIL: none)."""
        if rc == 0 or rc == BUILD_NEED_GIL:
            return 0
        if rc == BUILD_CLOSED:
            raise ValueError("add() after finish() or abandon()")
        if rc == BUILD_SHORT_KEY:
            raise ValueError("internal key must be >= 8 bytes")
        if rc == BUILD_ORDER:
            raise ValueError("internal keys must be added in strictly increasing order")
        if rc == BUILD_IO:
            self.osf.raise_write_error(self.io_errno)
        raise_add_error(rc)
        raise SystemError(f"TableBuildCore: unknown result {rc}")

    cdef int add_entry(self, bytes ikey, bytes value) except -1:
        """``add`` for C callers (neither argument None)."""
        cdef Py_ssize_t kn = PyBytes_GET_SIZE(ikey)
        if kn < 8 and not self.closed:
            raise ValueError(f"internal key must be >= 8 bytes, got {kn}")
        self.raise_error(self.add_raw(<const unsigned char*>PyBytes_AS_STRING(ikey), kn,
                                      <const unsigned char*>PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value)))
        if self.data.encoded_size() >= self.block_size:
            self._finish_data_block()
        return 0

    def add(self, bytes ikey not None, bytes value not None):
        """Append an entry; ValueError unless ikey is > every earlier key."""
        self.add_entry(ikey, value)

    cpdef uint64_t size_estimate(self):
        """Bytes stored so far plus the data block being built."""
        return self.estimate()

    def flush_data_block(self):
        """Store the pending data block (if any)."""
        self._finish_data_block()

    # -- data blocks -> stored blocks -> the file ----------------------------
    cdef int _finish_data_block(self) except -1:
        cdef bytes handle
        if self.data.nentries == 0:
            return 0
        if self.raw:
            self.raise_error(self._finish_raw_block())
            if self.out_len >= self.write_buffer:
                self._write_out()
            return 0
        handle = self._store(self.data.finish(), self.compress)
        raise_add_error(self.index.add_raw(self.data.lastk, self.data.lastn,
                                           <const unsigned char*>PyBytes_AS_STRING(handle),
                                           PyBytes_GET_SIZE(handle)))
        self.data.clear()
        self.num_data_blocks += 1
        return 0

    cdef int _finish_raw_block(self) noexcept nogil:
        """Store the data block raw, encoded straight into ``out``, and
        index it: 0 or a BUILD_ failure.  The caller writes ``out`` out."""
        cdef Py_ssize_t n = self.data.encoded_size()
        cdef unsigned char h[20]
        cdef int hn, rc
        if self.data.nentries == 0:
            return 0
        if self._reserve(n + TRAILER_SIZE) != 0:
            return BUILD_NO_MEMORY
        self.data.finish_into(self.out + self.out_len)
        hn = self._stored(n, TYPE_RAW, h)
        rc = self.index.add_raw(self.data.lastk, self.data.lastn, h, hn)
        if rc != 0:
            return rc
        self.data.clear()
        self.num_data_blocks += 1
        return 0

    cdef int _stored(self, Py_ssize_t n, unsigned char btype, unsigned char* h) noexcept nogil:
        """The payload ``n`` bytes at the end of ``out`` becomes the next
        stored block: its trailer, and its handle at ``h`` (room for 20
        bytes; returns its length)."""
        cdef int hn
        _put_trailer(self.out + self.out_len, n, btype)
        self.out_len += n + TRAILER_SIZE
        hn = put_varint64(h, self.offset)
        hn += put_varint64(h + hn, <uint64_t>n)
        self.offset += <uint64_t>(n + TRAILER_SIZE)
        return hn

    cdef bytes _store(self, bytes contents, object compress):
        """Gather ``contents`` stored as the next block (handed to the file
        once ``write_buffer`` bytes are gathered); its handle."""
        cdef unsigned char btype
        cdef bytes payload = _payload(contents, compress, &btype)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(payload)
        cdef unsigned char h[20]
        cdef int hn
        if self._reserve(n + TRAILER_SIZE) != 0:
            raise MemoryError()
        memcpy(self.out + self.out_len, PyBytes_AS_STRING(payload), n)
        hn = self._stored(n, btype, h)
        if self.out_len >= self.write_buffer:
            self._write_out()
        return PyBytes_FromStringAndSize(<char*>h, hn)

    cdef int _reserve(self, Py_ssize_t n) noexcept nogil:
        """Room for ``n`` more bytes in ``out`` (a block larger than the
        buffer's slack grows it): 0, or -1 out of memory."""
        cdef Py_ssize_t cap
        cdef unsigned char* nb
        if self.out_len + n > self.out_cap:
            cap = self.out_len + n + self.write_buffer
            nb = <unsigned char*>realloc(self.out, cap)
            if nb == NULL:
                return -1
            self.out, self.out_cap = nb, cap
        return 0

    cdef int _write_out(self) except -1:
        cdef Py_ssize_t n = self.out_len
        self.out_len = 0            # written or failed: the builder is abandoned after an error
        if n == 0:
            return 0
        if self.osf is not None:
            self.osf.write(<const char*>self.out, n)
        else:
            self.f.append(PyBytes_FromStringAndSize(<char*>self.out, n))
        return 0

    def store_block(self, bytes contents not None):
        """Store ``contents`` raw as the next block (a metadata block); its handle."""
        return self._store(contents, None)

    def write_out(self, bytes tail not None):
        """Hand every gathered block, then ``tail`` (the footer), to the file."""
        cdef Py_ssize_t n = PyBytes_GET_SIZE(tail)
        if self._reserve(n) != 0:
            raise MemoryError()
        memcpy(self.out + self.out_len, PyBytes_AS_STRING(tail), n)
        self.out_len += n
        self.offset += <uint64_t>n
        self._write_out()

    def index_block(self):
        """The contents of the index block (for ``finish``, once)."""
        return self.index.finish()

    def abandon(self):
        """Stop: nothing more is added or written."""
        self.closed = True
        self.out_len = 0

    @property
    def smallest(self):
        """The first internal key added (None before any)."""
        return PyBytes_FromStringAndSize(<char*>self.firstk, self.firstn) if self.num_entries else None

    @property
    def largest(self):
        """The last internal key added (None before any)."""
        return PyBytes_FromStringAndSize(<char*>self.lastk, self.lastn) if self.num_entries else None

    def filter_digests(self):
        """The bloom digests collected so far (16 bytes per distinct user key)."""
        return PyBytes_FromStringAndSize(<char*>self.digests, self.ndigest_bytes)
