# The region server's scan in C (regions._router), for regions' face (regions/_api.pxd).
from lsm._api cimport entry_fn

cdef object range_path(object server)
cdef int range_scan_into(object path, object table, object start, object end, bint reverse,
                         Py_ssize_t expect, entry_fn fn, void* ctx) except -1
