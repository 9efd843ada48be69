# The memtable's point read (_memtable.pyx), for lsm._read.
from libc.stdint cimport uint64_t

cpdef object get_version(dict versions, bytes key, uint64_t seq)
