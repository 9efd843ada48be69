# The point read of lsm._read, for the region server's Router (regions._router).

cdef object point_get(object path, object key)
cdef list point_scan_short(object path, bytes start, bytes end, Py_ssize_t limit)
