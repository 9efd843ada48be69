# cython: language_level=3
"""Internal iterators: the base interface (see _iter.pxd)."""

cdef class InternalIterator:
    """Base of every internal iterator; subclasses override every method."""

    cpdef bint valid(self):
        return False

    cpdef seek_to_first(self):
        raise NotImplementedError

    cpdef seek_to_last(self):
        raise NotImplementedError

    cpdef seek(self, bytes ikey):
        raise NotImplementedError

    cpdef seek_for_prev(self, bytes ikey):
        raise NotImplementedError

    cpdef next(self):
        raise NotImplementedError

    cpdef prev(self):
        raise NotImplementedError

    cpdef bytes key(self):
        raise NotImplementedError

    cpdef bytes value(self):
        raise NotImplementedError
