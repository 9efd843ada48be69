# The C interface of regions.tablestore._rowcodec, for _reads, _writes and
# _searchpage: the row key's codec, the plain key check and the result
# objects built without their Python-level __init__ (see _untracked in
# _cellcodec.pxd).
from regions._api cimport Buf
from regions.tablestore._cellcodec cimport (_as_bytes, _atomic, _get_be64, _maybe_atomic,
                                            _new_untracked, _untracked, _utf8_len, _value_size)


# -- defined in _rowcodec.pyx -------------------------------------------------
cdef object _decode_one(const unsigned char* p, Py_ssize_t n, Py_ssize_t* pos,
                        Py_ssize_t* size)
cdef bint _plain_key(list names, list types, primary_key, Buf* b, Py_ssize_t* size,
                     list values, bint columns=*) except -1
cdef object _make_row(primary_key, attribute_columns)
cdef object _make_cu(Py_ssize_t read, Py_ssize_t write)
cdef object _read_cu(Py_ssize_t size)
cdef object _write_cu(Py_ssize_t size)
cdef list _pk_list(list names, list values)
