# The one internal-iterator interface (LevelDB's Iterator), shared by every
# iterator kind: block, table, bounded view (_block.pyx, _table_iter.pyx),
# memtable (_memtable.pyx), list, level, merging (_iter.pyx).  Entries are
# (internal key, value) in internal-key order (see lsm/dbformat.py).
#
# Contract: key()/value() only while valid(); seek(ikey) positions at the
# first entry >= ikey; seek_for_prev(ikey) at the last entry <= ikey;
# next()/prev() move one entry and may leave the iterator invalid.
# Implementations raise lsm.errors.CorruptionError on bad bytes.
cdef class InternalIterator:
    cpdef bint valid(self)
    cpdef seek_to_first(self)
    cpdef seek_to_last(self)
    cpdef seek(self, bytes ikey)
    cpdef seek_for_prev(self, bytes ikey)
    cpdef next(self)
    cpdef prev(self)
    cpdef bytes key(self)
    cpdef bytes value(self)
