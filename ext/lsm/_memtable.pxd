# The memtable's point read (_memtable.pyx), for lsm._read, and its writes, for lsm._record.
from libc.stdint cimport uint64_t

cpdef object get_version(dict versions, bytes key, uint64_t seq)
cpdef int visible_range(object mem, bytes lo, bytes hi, uint64_t seq, list out,
                        Py_ssize_t cap) except -2
cpdef add_entry(object mem, uint64_t seq, int kind, bytes key, bytes value)
cpdef add_entries(object mem, uint64_t seq, list ops)
