# The write path of lsm._write, for the region server's Router (regions._router).

cdef object write_put(object path, object key, object value, object sync)
cdef object write_pairs(object path, object pairs, object sync)
