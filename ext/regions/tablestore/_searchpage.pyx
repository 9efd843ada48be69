"""A search's page in C (regions.tablestore.search): the stored documents of
tantivy's hits and the rows of their keys.

A search index stores one small field a document, ``_doc``: the row key
(its length in 2 bytes, big-endian, then the key).  A page of rows reads
the key alone; the values a search reads back ({tantivy field: [values]}:
sort keys, highlighting's text) are the row's, asked of the engine when
first needed (search.py: from the table, as the document was made from
it).  A stored document costs tantivy in proportion to its size (the doc
store decompresses a block for each document it does not hold: at 100,000
documents, 14 stored bytes read in 1.6 us, 60 in 3.3), so it holds nothing
else.  This module owns that layout (``Stored`` reads it, ``Stored.pack``
writes it); search.py asks tantivy and decides which documents a page
reads.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

from regions.tablestore._rowcodec cimport _decode_one, _pk_list


cdef class Stored:
    """The stored document ``doc`` (tantivy's Document): its ``row_key``;
    ``get(field)`` / ``[field]`` its values by tantivy field name (a VECTOR:
    its own stored field); ``fields()`` every value but the VECTORs, from
    ``values(row_key)`` ({} for a row that is gone)."""

    cdef readonly object doc
    cdef readonly bytes row_key
    cdef object _values
    cdef object _fields

    def __cinit__(self, doc, values):
        cdef bytes blob = doc.get_first("_doc")
        cdef const unsigned char* p = <const unsigned char*>PyBytes_AS_STRING(blob)
        cdef Py_ssize_t end = 2 + (p[0] << 8 | p[1])
        if PyBytes_GET_SIZE(blob) < end:
            raise ValueError("a search document's _doc is shorter than its key")
        self.doc, self._values, self.row_key = doc, values, blob[2:end]

    @staticmethod
    def pack(bytes row_key not None):
        """The ``_doc`` of ``row_key``."""
        if len(row_key) > 0xFFFF:
            raise ValueError("a row key longer than 65,535 bytes")
        return len(row_key).to_bytes(2, "big") + row_key

    def fields(self):
        if self._fields is None:
            self._fields = self._values(self.row_key)
        return self._fields

    def get(self, name, default=None):
        values = self.fields().get(name)
        if values is None:
            try:
                values = self.doc.get_all(name)      # a VECTOR
            except ValueError:
                return default
        return values if values else default

    def __getitem__(self, name):
        values = self.get(name)
        if values is None:
            raise KeyError(name)
        return values


def load(doc_at, found, values):
    """[(row key, value, Stored)] of tantivy's ``found`` [(value, address)],
    each document read by ``doc_at`` (the searcher's ``doc``), its values
    by ``values`` (Stored)."""
    cdef list out = []
    cdef Stored doc
    for value, address in found:
        doc = Stored(doc_at(address), values)
        out.append((doc.row_key, value, doc))
    return out


def key_rows(list names, hits):
    """The SDK's rows of the keys of ``hits`` [(row key, ...)]: ([(name,
    value)] of the primary key, no attribute columns) each."""
    cdef list out = []
    cdef Py_ssize_t pos, size, i, count = len(names)
    cdef bytes key
    cdef list values
    for hit in hits:
        key = hit[0]
        pos = size = 0
        values = []
        for i in range(count):
            values.append(_decode_one(<const unsigned char*>PyBytes_AS_STRING(key),
                                      PyBytes_GET_SIZE(key), &pos, &size))
        out.append((_pk_list(names, values), []))
    return out
