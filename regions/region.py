"""A region: one lsm store serving ``[start, end)`` of a table's row keys,
with the gate a split uses to take it offline.

The gate (HBase's region read/write lock): every data operation ``enter``s
and ``exit``s; ``close_gate`` stops new entries and waits until the
operations in flight have finished.  Operations that find the gate closed
call ``wait_transition`` and then route again: to the daughters once the
split has switched meta, or to this region again if the split rolled back.

Thread-safety: every method may be called from any thread.  The store
(``db``) is owned by the region; the server replaces it only while the gate
is closed.
"""
import threading
import time

from ._gate import Gate
from .errors import RegionBusyError

__all__ = ["Region", "RegionInfo", "OPEN", "SPLITTING", "CLOSED", "SPLIT"]

OPEN = "OPEN"            # serving
SPLITTING = "SPLITTING"  # gate closed by a split procedure
SPLIT = "SPLIT"          # replaced by its daughters: route again
CLOSED = "CLOSED"        # closed with its table or the server: route again


class RegionInfo:
    """A read-only snapshot of one region, as ``RegionServer.regions()`` reports it.

    ``size_bytes``: bytes of the region's table files (views counted by their
    range); ``key_count``: the store's entry-count estimate; ``reads``: read
    operations served since the region was opened, ``writes``: keys written
    since then (each key of a batch counts);
    ``split_blocker``: why the region cannot split (e.g. a hot partition key),
    or None.
    """

    __slots__ = ("table", "region_id", "start_key", "end_key", "state", "size_bytes",
                 "key_count", "reads", "writes", "split_blocker")

    def __init__(self, table, region_id, start_key, end_key, state, size_bytes=0,
                 key_count=0, reads=0, writes=0, split_blocker=None):
        self.table = table
        self.region_id = region_id
        self.start_key = start_key
        self.end_key = end_key
        self.state = state
        self.size_bytes = size_bytes
        self.key_count = key_count
        self.reads = reads
        self.writes = writes
        self.split_blocker = split_blocker

    # check_layout() reads these names
    start = property(lambda self: self.start_key)
    end = property(lambda self: self.end_key)

    def contains(self, key: bytes) -> bool:
        """HBase's ``containsRow``: ``start <= key < end`` (empty end: unbounded)."""
        return key >= self.start_key and (not self.end_key or key < self.end_key)

    def __repr__(self):
        return (f"RegionInfo(table={self.table!r}, region_id={self.region_id}, "
                f"start_key={self.start_key!r}, end_key={self.end_key!r}, state={self.state}, "
                f"size_bytes={self.size_bytes}, key_count={self.key_count}, reads={self.reads}, "
                f"writes={self.writes}, split_blocker={self.split_blocker!r})")


class Region(Gate):
    """One region of one table; see the module docstring.  The gate's hot
    half (``enter``, ``exit``, ``count_writes``, ``state``, ``reads``,
    ``writes``, ``inflight``) is ``regions._gate.Gate``, in C."""

    def __init__(self, table: str, region_id: int, start: bytes, end: bytes, db, jitter_rate: float):
        # The rare waits (close_gate, wait_transition) use this condition.
        super().__init__(OPEN, threading.Condition())
        self.table = table
        self.id = region_id
        self.start = start
        self.end = end
        self.db = db
        self.jitter_rate = jitter_rate
        #: Why the last split attempt failed (hot partition key), with the
        #: size at that time so the check is not repeated until it grows.
        self.split_blocker = None
        self.blocked_at_size = 0

    def close_gate(self, state: str, timeout: float) -> None:
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

    def close(self, timeout: float) -> None:
        """Close the region for good (its table or the server closes): the
        gate closes, operations in flight finish (``RegionBusyError`` after
        ``timeout`` seconds), the store closes, waiting operations route again."""
        self.close_gate(CLOSED, timeout)
        self.db.close()
        self.set_state(CLOSED)

    def set_state(self, state: str) -> None:
        """Publish a transition (reopened, split, closed) to waiting operations."""
        with self._cv:
            self.state = state
            self._cv.notify_all()

    def wait_transition(self, timeout: float) -> None:
        """Block while a split holds the gate (at most ``timeout`` seconds)."""
        with self._cv:
            if self.state is SPLITTING:
                if not self._cv.wait_for(lambda: self.state is not SPLITTING, timeout):
                    raise RegionBusyError(f"region {self.id} of {self.table!r} has been "
                                          f"splitting for more than {timeout} s")

    # -- reporting --------------------------------------------------------
    def info(self, stats=None) -> RegionInfo:
        stats = stats or {}
        return RegionInfo(self.table, self.id, self.start, self.end,
                          OPEN if self.state is OPEN else self.state,
                          int(stats.get("table_bytes", 0)), int(stats.get("num_entries", 0)),
                          self.reads, self.writes, self.split_blocker)
