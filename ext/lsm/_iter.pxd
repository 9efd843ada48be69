# The one internal-iterator interface (LevelDB's Iterator), shared by every
# iterator kind: block, table, bounded view (_block.pyx, _table_iter.pyx),
# memtable (_memtable.pyx), list, level, merging (_iter.pyx).  Entries are
# (internal key, value) in internal-key order (see lsm/dbformat.py).
#
# Contract: key()/value() only while valid(); seek(ikey) positions at the
# first entry >= ikey; seek_for_prev(ikey) at the last entry <= ikey;
# next()/prev() move one entry and may leave the iterator invalid.
# Implementations raise lsm.errors.CorruptionError on bad bytes.
#
# entry(&e): the current entry in place, without a bytes object (RawEntry:
# its user key, tag and value, pointers into the iterator's own memory,
# valid until it moves); 1 when filled, 0 when this kind of iterator
# cannot (the caller reads key()/value()).  Only while valid().
from libc.stdint cimport uint64_t


ctypedef struct RawEntry:
    const unsigned char* key    # the user key
    Py_ssize_t klen
    uint64_t tag                # (sequence << 8) | kind
    const unsigned char* value
    Py_ssize_t vlen


cdef class InternalIterator:
    cdef int entry(self, RawEntry* e) except -1
    cpdef bint valid(self)
    cpdef seek_to_first(self)
    cpdef seek_to_last(self)
    cpdef seek(self, bytes ikey)
    cpdef seek_for_prev(self, bytes ikey)
    cpdef next(self)
    cpdef prev(self)
    cpdef bytes key(self)
    cpdef bytes value(self)
