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
from operator import itemgetter

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
        self.doc, self._values, self.row_key = doc, values, _row_key_of(doc.get_first("_doc"))

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
    by ``values`` (Stored); ``values`` None: [(row key, value)] alone."""
    cdef list out = []
    cdef Stored doc
    if values is None:
        for value, address in found:
            out.append((_row_key_of(doc_at(address).get_first("_doc")), value))
        return out
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


cdef bytes _row_key_of(bytes blob):
    """The row key a ``_doc`` holds."""
    cdef const unsigned char* p = <const unsigned char*>PyBytes_AS_STRING(blob)
    cdef Py_ssize_t end
    if PyBytes_GET_SIZE(blob) < 2:
        raise ValueError("a search document's _doc is shorter than its key")
    end = 2 + (p[0] << 8 | p[1])
    if PyBytes_GET_SIZE(blob) < end:
        raise ValueError("a search document's _doc is shorter than its key")
    return blob[2:end]


def window(doc_at, values, list found, Py_ssize_t need, Py_ssize_t skip, bint key_desc,
           bint whole):
    """Hits ``skip`` to ``need`` of tantivy's ``found`` [(value, address)]
    (its order: values never increasing) as [(row key, value, Stored)],
    rows of one value ordered by row key (descending: ``key_desc``); only
    the documents of the page and of the runs of equal values crossing its
    edges are read.  None when ``found`` ends inside the run of the
    ``need``-th value and may not hold all of it (not ``whole``): the
    caller asks tantivy for that run and asks again.  ``values`` None:
    [(row key, value)] alone (``load``)."""
    cdef Py_ssize_t n = len(found), end = min(need, n), lo, hi, i, j
    if skip >= end:
        return []
    lo, hi = skip, end
    first = found[skip][0]
    while lo and found[lo - 1][0] == first:
        lo -= 1
    edge = found[end - 1][0]
    while hi < n and found[hi][0] == edge:
        hi += 1
    if hi > end and hi == n and not whole:
        return None
    cdef list page = load(doc_at, found[lo:hi], values)
    i = 0
    while i < hi - lo:               # each run of one value: by row key
        j = i + 1
        while j < hi - lo and page[j][1] == page[i][1]:
            j += 1
        if j - i > 1:
            page[i:j] = sorted(page[i:j], key=_row_key, reverse=key_desc)
        i = j
    return page[skip - lo:end - lo]


_row_key = itemgetter(0)
