# The point read and the scan of lsm._read, for the region server's Router (regions._router).
from lsm._db_iter cimport entry_fn

cdef object point_get(object path, object key)
cdef list point_scan_short(object path, bytes start, bytes end, Py_ssize_t limit)
cdef object point_scan_into(object path, object start, object end, Py_ssize_t limit,
                            bint reverse, object snapshot, entry_fn fn, void* ctx,
                            Py_ssize_t* count, bint* stopped)
