# A region (regions._region.Region), for the router (regions._router): the
# fields it reads on every operation and the gate's two steps, inline.

cdef enum:
    READ = 0            # what a gate admits (Region.enter's write False, True, None)
    WRITE = 1
    INTERNAL = 2


cdef class Region:
    cdef object _state, _open
    cdef bint _serving
    cdef public Py_ssize_t inflight
    cdef public long long reads, writes
    cdef object _cv
    cdef public object start, end        # the key range, [start, end), an empty end unbounded
    cdef public object table, id, jitter_rate, split_blocker, blocked_at_size
    cdef object _db, _db_get, _db_put    # the store, and its get and put bound once
    cdef object _point                   # the C path its get and scan_short run, or None
    cdef object _wpath                   # the C path its put and write_pairs run, or None
                                         # (lsm/_api.pxd)
    cdef int _wake(self) except -1
    cpdef count_writes(self, Py_ssize_t n)


cdef inline int gate_kind(object write) except -1:
    """READ, WRITE or INTERNAL: what ``Region.enter``'s ``write`` (False,
    True, None) asks the gate to admit."""
    if write is False:
        return READ
    if write is True:
        return WRITE
    if write is None:
        return INTERNAL
    raise TypeError("write must be True, False or None")


cdef inline bint region_admit(Region r, int kind) noexcept:
    """``Region.enter`` from C: ``kind`` READ, WRITE or INTERNAL.  Atomic by
    the GIL (no Python code runs in it)."""
    if not r._serving:
        return False
    r.inflight += 1
    if kind == WRITE:
        r.writes += 1
    elif kind == READ:
        r.reads += 1
    return True


cdef inline int region_leave(Region r) except -1:
    """``Region.exit`` from C."""
    r.inflight -= 1
    if r.inflight == 0 and not r._serving:
        r._wake()
    return 0
