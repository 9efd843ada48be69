"""A region: one lsm store serving ``[start, end)`` of a table's row keys,
with the gate a split uses to take it offline (the whole concept, in C: the
router reads its fields and runs its gate on every operation).

The gate (HBase's region read/write lock): every data operation ``enter``s
and ``exit``s; ``close_gate`` stops new entries and waits until the
operations in flight have finished.  Operations that find the gate closed
call ``wait_transition`` and then route again: to the daughters once the
split has switched meta, or to this region again if the split rolled back.

Thread-safety: every method may be called from any thread.  ``enter``,
``exit`` and ``count_writes`` read and write C fields and run no Python code
until they are done, so they are atomic by the GIL and need no lock; state
changes (``state = ...``) are atomic the same way.  Only the rare waits
(``close_gate``, ``wait_transition``) and the wake-up in ``exit`` (the last
operation leaving a closing gate) take the region's condition.  A
free-threaded Python would need a critical section around each method.  The
store (``db``) is owned by the region; the server replaces it only while the
gate is closed.
"""
import threading
import time

from lsm._api cimport point_path, write_path
from regions.errors import RegionBusyError

__all__ = ["Region", "OPEN", "SPLITTING", "CLOSED", "SPLIT"]

OPEN = "OPEN"            # serving
SPLITTING = "SPLITTING"  # gate closed by a split procedure
SPLIT = "SPLIT"          # replaced by its daughters: route again
CLOSED = "CLOSED"        # closed with its table or the server: route again


cdef class Region:
    """One region of one table (see the module docstring): its key range
    (``start``, ``end``), its store (``db``), its gate (``state``, the
    operations in flight, the client reads and writes admitted), and what
    the split checks keep of it (``jitter_rate``; ``split_blocker``: why the
    last split attempt failed, e.g. a hot partition key, with the size then,
    ``blocked_at_size``, so the check is not repeated until it grows)."""

    def __init__(self, table, region_id, bytes start not None, end, db, jitter_rate):
        self._open = OPEN
        self._cv = threading.Condition()     # the rare waits and the last exit's wake-up
        self.state = OPEN
        self.table = table
        self.id = region_id
        self.start = start
        self.end = end
        self.db = db
        self.jitter_rate = jitter_rate
        self.split_blocker = None
        self.blocked_at_size = 0

    @property
    def db(self):
        """The region's store; its ``get`` and ``put`` are kept bound, which
        saves the router an attribute lookup an operation, and the C paths
        they run, when they are an ``lsm.DB``'s (lsm/_api.pxd's
        ``point_path`` and ``write_path``), which the router then calls
        from C: ``get``, ``scan_short``, ``put`` and ``write_pairs`` without
        a Python call."""
        return self._db

    @db.setter
    def db(self, value):
        self._db = value
        self._db_get = None if value is None else value.get
        self._db_put = None if value is None else value.put
        self._point = point_path(value)
        self._wpath = write_path(value)

    @property
    def state(self):
        return self._state

    @state.setter
    def state(self, value):
        self._state = value
        self._serving = value is self._open

    # -- the gate ---------------------------------------------------------
    def enter(self, write):
        """Admit one operation (``write``: True a write, False a read, None
        internal work, not counted); False if the region is not serving."""
        return region_admit(self, gate_kind(write))

    def exit(self):
        """The admitted operation is done."""
        region_leave(self)

    cpdef count_writes(self, Py_ssize_t n):
        """Count ``n`` more keys written by the admitted write (a batch's
        part: ``writes`` counts keys, as HBase counts each mutation)."""
        self.writes += n

    cdef int _wake(self) except -1:
        """The last operation left a gate that is not serving: wake ``close_gate``."""
        with self._cv:
            self._cv.notify_all()
        return 0

    def close_gate(self, state, double timeout):
        """Stop admitting operations and wait for those in flight to finish."""
        with self._cv:
            self.state = state
            deadline = time.monotonic() + timeout
            while self.inflight:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.state = OPEN
                    self._cv.notify_all()
                    raise RegionBusyError(f"region {self.id} of {self.table!r}: "
                                          f"{self.inflight} operations still in flight")
                self._cv.wait(left)

    def close(self, double timeout):
        """Close the region for good (its table or the server closes): the
        gate closes, operations in flight finish (``RegionBusyError`` after
        ``timeout`` seconds), the store closes, waiting operations route again."""
        self.close_gate(CLOSED, timeout)
        self._db.close()
        self.set_state(CLOSED)

    def set_state(self, state):
        """Publish a transition (reopened, split, closed) to waiting operations."""
        with self._cv:
            self.state = state
            self._cv.notify_all()

    def wait_transition(self, double timeout):
        """Block while a split holds the gate (at most ``timeout`` seconds)."""
        with self._cv:
            if self._state is SPLITTING:
                if not self._cv.wait_for(lambda: self._state is not SPLITTING, timeout):
                    raise RegionBusyError(f"region {self.id} of {self.table!r} has been "
                                          f"splitting for more than {timeout} s")
