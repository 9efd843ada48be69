# cython: language_level=3
"""A table's build core, in C: entries in, the table's data blocks written
out (lsm/sstable.py's ``TableBuilder`` holds one and writes the metadata
blocks and the footer; the file layout is documented there).

What runs where:

- per entry, here (``add``, or ``add_entry`` from C: lsm._compaction_stream
  drains a flush or a compaction into it with no Python call): the order
  check, the bloom digest of each new user key, the data block's encoding
  (lsm._block.BlockBuilder);
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


cdef inline void _put_stored(unsigned char* d, bytes payload, unsigned char btype) noexcept:
    """``payload`` + its trailer at ``d`` (room for len + TRAILER_SIZE)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(payload)
    cdef uint32_t crc
    memcpy(d, PyBytes_AS_STRING(payload), n)
    d[n] = btype
    crc = lsm_crc32(lsm_crc32(0, d, n), d + n, 1)
    encode_fixed32(d + n + 1, mask_crc(crc))


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
        if self.digests == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.digests)
        free(self.out)

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
        self.write_buffer = write_buffer
        self.out_cap = write_buffer + 2 * block_size + 1024
        self.out = <unsigned char*>malloc(self.out_cap)
        if self.out == NULL:
            raise MemoryError()

    # -- entries -> data blocks -------------------------------------------
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

    cdef int add_entry(self, bytes ikey, bytes value) except -1:
        """``add`` for C callers (neither argument None)."""
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
            self._finish_data_block()
        return 0

    def add(self, bytes ikey not None, bytes value not None):
        """Append an entry; ValueError unless ikey is > every earlier key."""
        self.add_entry(ikey, value)

    cpdef uint64_t size_estimate(self):
        """Bytes stored so far plus the data block being built."""
        return self.offset + <uint64_t>(self.data.size_estimate() if self.data.nentries else 0)

    def flush_data_block(self):
        """Store the pending data block (if any)."""
        self._finish_data_block()

    # -- data blocks -> stored blocks -> the file ----------------------------
    cdef int _finish_data_block(self) except -1:
        cdef bytes contents, last
        if self.data.nentries == 0:
            return 0
        contents = self.data.finish()
        last = self.data.last_key
        self.data.reset()
        self.index._add(last, self._store(contents, self.compress))
        self.num_data_blocks += 1
        return 0

    cdef bytes _store(self, bytes contents, object compress):
        """Gather ``contents`` stored as the next block (handed to the file
        once ``write_buffer`` bytes are gathered); its handle."""
        cdef unsigned char btype
        cdef bytes payload = _payload(contents, compress, &btype)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(payload)
        cdef unsigned char h[20]
        cdef Py_ssize_t hn
        self._reserve(n + TRAILER_SIZE)
        _put_stored(self.out + self.out_len, payload, btype)
        self.out_len += n + TRAILER_SIZE
        hn = put_varint64(h, self.offset)
        hn += put_varint64(h + hn, <uint64_t>n)
        self.offset += <uint64_t>(n + TRAILER_SIZE)
        if self.out_len >= self.write_buffer:
            self._write_out()
        return PyBytes_FromStringAndSize(<char*>h, hn)

    cdef int _reserve(self, Py_ssize_t n) except -1:
        """Room for ``n`` more bytes in ``out`` (a block larger than the
        buffer's slack grows it)."""
        cdef Py_ssize_t cap
        cdef unsigned char* nb
        if self.out_len + n > self.out_cap:
            cap = self.out_len + n + self.write_buffer
            nb = <unsigned char*>realloc(self.out, cap)
            if nb == NULL:
                raise MemoryError()
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
        self._reserve(n)
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
        return self.first_key

    @property
    def largest(self):
        return self.last_key

    def filter_digests(self):
        """The bloom digests collected so far (16 bytes per distinct user key)."""
        return PyBytes_FromStringAndSize(<char*>self.digests, self.ndigest_bytes)
