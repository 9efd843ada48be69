"""Local transactions: atomic multi-row work inside one partition key value.

Tablestore's model (StartLocalTransaction / CommitTransaction /
AbortTransaction, and ``transaction_id`` on the row operations):

* ``start(table, partition)`` locks the partition key value (pessimistic
  locking) and returns an id.  While it is locked, writes from outside the
  transaction and a second transaction on it fail with 409
  OTSRowOperationConflict; reads from outside see only committed data (Read
  Committed).
* Operations carrying the id run against the transaction's *view*: the
  committed rows with the transaction's own buffered writes laid over them, so
  its reads, conditions and INCREMENTs see its writes.  Writes are buffered as
  the very store entries (cells.py layout) the client would have written: a
  ``Transaction`` has the region server's ``scan``/``put``/``write`` interface
  and the client simply runs on it (``OTSClient._in_transaction``).  Cell
  versions and generations are assigned when a write is buffered, not at commit
  (the service's rule).
* ``commit`` writes every buffered entry as ONE region-server write (its
  ``(key, value)`` pairs, a deletion's value None): one WAL record of one region (a partition key value is never split across regions),
  so a commit is all or nothing, also across a crash.  ``abort`` drops them.
* A transaction idle for ``timeout`` seconds expires: its lock is released
  (lazily, by the next request that meets it) and its id becomes unknown.
* At most ``max_bytes`` of data (counted as a write request's data size: PK +
  attribute bytes) per transaction; one request at a time per transaction.

Ids are 32 upper-case hex digits (ours); anything else is "TransactionID is
invalid.", a well-formed unknown id OTSSessionNotExist.

Thread-safety: every method may be called from any thread.  Lock order: a row
lock stripe of the client, then ``self._mutex``; ``start`` takes every stripe
(a barrier), so a write from outside that checked the partition unlocked has
finished before the lock is set.  A transaction's own requests are serialised
by its busy flag (a second concurrent one gets OTSSessionBusy).
"""
import re
import threading
import time
import uuid

from sortedcontainers import SortedDict

from . import pkcodec
from ._writes import stripe_locks
from .errors import service_error

__all__ = ["TransactionManager", "Transaction", "TIMEOUT_S", "MAX_BYTES"]

#: Idle time after which the service aborts a transaction (docs: 60 s).
TIMEOUT_S = 60.0
#: Data one transaction may write (docs: 4 MB, counted as a write request's).
MAX_BYTES = 4 << 20

_ID = re.compile(r"[0-9A-F]{32}\Z")
_DELETED = None          # overlay value of a key the transaction deleted (as in write pairs)
_ACTIVE, _DONE = "active", "done"


def render_partition(key):
    """A partition key value as the service's messages print it (ours for INF and BINARY)."""
    return pkcodec.value_text(pkcodec.decode_partition_value(key))


def partition_of(row_key):
    """The partition-key record a row key (or range bound) starts with."""
    return row_key[:pkcodec.partition_prefix_len(row_key)]


class Transaction:
    """One open transaction: its partition, its buffered entries, its state.

    Has the region server's data interface (``scan``, ``get``, ``put``,
    ``delete``, ``write``) over its view; every other attribute is the
    server's.  Used only while its manager marks it busy.
    """

    def __init__(self, manager, txn_id, table, partition):
        self._server = manager.server
        self.id, self.table, self.partition = txn_id, table, partition
        self.overlay = SortedDict()      # key -> value, or _DELETED
        self.size = 0                    # data bytes written (write-request rule)
        self.pending = 0                 # size of the write being buffered now
        self.state = _ACTIVE
        self.busy = False
        self.last_used = manager.clock()
        self.client = None               # the client running on this view (set by it)

    def __getattr__(self, name):
        return getattr(self._server, name)

    # -- the store interface the client runs on -----------------------------
    def put(self, table, key, value, sync=None):
        self._buffer([(key, value)])

    def delete(self, table, key, sync=None):
        self._buffer([(key, _DELETED)])

    def write(self, table, pairs, sync=None):
        self._buffer(pairs)      # a deletion's value None: _DELETED

    def _buffer(self, items):
        for key, value in items:
            self.overlay[key] = value
        self.size += self.pending
        self.pending = 0

    def get(self, table, key):
        _check_scope(self, table, (key,))
        if key in self.overlay:
            return self.overlay[key]
        return self._server.get(table, key)

    def scan(self, table, start=None, end=None, reverse=False, expect=0):
        """The view's entries in ``[start, end)``; both bounds must lie in the
        partition (``expect``: RegionServer.scan's)."""
        _check_scope(self, table, (start or b"\x00", end or b"\xff"))
        committed = self._server.scan(table, start, end, reverse=reverse, expect=expect)
        mine = [(k, self.overlay[k]) for k in
                self.overlay.irange(start, end, inclusive=(True, False), reverse=reverse)]
        return _merge(committed, mine, reverse) if mine else committed

    def read_range(self, table, start, end):
        """``list(scan(table, start, end))`` (the RegionServer interface)."""
        return list(self.scan(table, start, end))

    def read_ranges(self, table, ranges):
        """``[read_range(table, start, end) for start, end in ranges]`` (the
        RegionServer interface)."""
        return [self.read_range(table, start, end) for start, end in ranges]

    def pairs(self):
        """Every buffered entry, ``(key, value)`` in key order, a deletion's
        value None (``_DELETED``): what ``RegionServer.write`` takes."""
        return list(self.overlay.items())


def _merge(committed, mine, reverse):
    """Merge two sorted (key, value) streams; ``mine`` wins ties, drops deletions."""
    mine = iter(mine)
    m = next(mine, None)
    for item in committed:
        key = item[0]
        while m is not None and (m[0] > key if reverse else m[0] < key):
            if m[1] is not _DELETED:
                yield m
            m = next(mine, None)
        if m is not None and m[0] == key:
            if m[1] is not _DELETED:
                yield m
            m = next(mine, None)
            continue
        yield item
    while m is not None:
        if m[1] is not _DELETED:
            yield m
        m = next(mine, None)


class TransactionManager:
    """The open transactions of one client and the partition locks they hold."""

    def __init__(self, server, row_locks, timeout=TIMEOUT_S, max_bytes=MAX_BYTES,
                 clock=time.monotonic):
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError("transaction_timeout must be a positive number of seconds, got %r"
                             % (timeout,))
        self.server = server
        self.timeout, self.max_bytes, self.clock = timeout, max_bytes, clock
        self._row_locks = row_locks
        self._mutex = threading.Lock()
        self._by_id = {}
        # (table, partition) -> Transaction; empty: no write outside a
        # transaction needs check_write (the C writer reads it to skip the call)
        self.held = {}
        self.indexer = None              # indexes.Indexer: a commit feeds the table's indexes

    # -- lifecycle ------------------------------------------------------------
    def start(self, table, partition):
        """Lock ``partition`` (a row-key prefix) of ``table``; a new Transaction."""
        for lock in self._row_locks:         # barrier: no outside write in flight
            lock.acquire()
        try:
            with self._mutex:
                holder = self._holder(table, partition)
                if holder is not None:
                    raise service_error("row_operation_conflict")
                txn = Transaction(self, uuid.uuid4().hex.upper(), table, partition)
                self._by_id[txn.id] = txn
                self.held[(table, partition)] = txn
                return txn
        finally:
            for lock in self._row_locks:
                lock.release()

    def use(self, txn_id):
        """Context manager: the live Transaction ``txn_id``, marked busy for the
        request.  The transaction stays valid when the request fails."""
        return _Use(self, txn_id)

    def commit(self, txn_id):
        """Apply every buffered write atomically (one WAL record), then unlock."""
        with self.use(txn_id) as txn:
            pairs = txn.pairs()
            try:
                if pairs and self.indexer is None:
                    self.server.write(txn.table, pairs)
                elif pairs:
                    # under the rows' locks, as every write that feeds indexes
                    # (indexes.py: a reconcile must not see the rows between
                    # their feed entries and their write)
                    by_row = {}       # row key -> its entries (key order: the stream's records)
                    for key, value in pairs:
                        entries = by_row.setdefault(key[:pkcodec.row_key_len(key)], [])
                        if value:     # never empty: a head or a delta (a deletion has None)
                            entries.append((key, value))
                    rows = list(by_row)
                    locks = stripe_locks(self._row_locks, rows)
                    for lock in locks:
                        lock.acquire()
                    try:
                        feed = self.indexer.before_write(txn.table, rows, list(by_row.values()))
                        landed = ()
                        try:
                            self.server.write(txn.table, pairs)
                            landed = None
                        finally:
                            if feed is not None:
                                self.indexer.after_write(txn.table, rows, feed, landed)
                    finally:
                        for lock in reversed(locks):
                            lock.release()
            finally:
                self._finish(txn)

    def abort(self, txn_id):
        with self.use(txn_id) as txn:
            self._finish(txn)

    def drop_table(self, table):
        """Forget the transactions of a deleted table."""
        with self._mutex:
            for txn in [t for t in self._by_id.values() if t.table == table]:
                self._release(txn)

    def open_ids(self):
        """Ids of the transactions not yet committed, aborted or expired."""
        with self._mutex:
            return sorted(t.id for t in self._by_id.values() if not self._expired(t))

    # -- checks on the write path ---------------------------------------------
    def check_write(self, table, row_key, txn, size):
        """Called under ``row_key``'s stripe before a write is applied.

        Outside a transaction (``txn`` None): OTSRowOperationConflict if the
        row's partition is locked.  Inside: the row must be in the
        transaction's table and partition, and fit the data limit.
        """
        if txn is None:
            if self.held:
                with self._mutex:
                    if self._holder(table, partition_of(row_key)) is not None:
                        raise service_error("row_operation_conflict")
            return
        _check_scope(txn, table, (row_key,))
        if txn.size + size > self.max_bytes:
            raise service_error("transaction_data_size", limit=self.max_bytes)
        txn.pending = size

    # -- internals (callers hold self._mutex) ---------------------------------
    def _holder(self, table, partition):
        txn = self.held.get((table, partition))
        if txn is not None and self._expired(txn):
            self._release(txn)
            return None
        return txn

    def _expired(self, txn):
        return not txn.busy and self.clock() - txn.last_used > self.timeout

    def _release(self, txn):
        txn.state = _DONE
        self._by_id.pop(txn.id, None)
        if self.held.get((txn.table, txn.partition)) is txn:
            del self.held[(txn.table, txn.partition)]

    def _finish(self, txn):
        with self._mutex:
            self._release(txn)

    def _acquire(self, txn_id):
        if not isinstance(txn_id, str) or not _ID.match(txn_id):
            raise service_error("transaction_id_invalid")
        with self._mutex:
            txn = self._by_id.get(txn_id)
            if txn is not None and self._expired(txn):
                self._release(txn)
                txn = None
            if txn is None:
                raise service_error("session_not_exist")
            if txn.busy:
                raise service_error("session_busy")
            txn.busy = True
            return txn

    def _unbusy(self, txn):
        with self._mutex:
            txn.busy = False
            txn.last_used = self.clock()


def _check_scope(txn, table, keys):
    """OTSDataOutOfRange unless ``table`` is the transaction's and every key
    (row key or range bound) starts with its partition key value."""
    if table != txn.table:
        raise service_error("transaction_other_table", txn_table=txn.table, table=table)
    for key in keys:
        if partition_of(key) != txn.partition:
            raise service_error("data_out_of_range", txn=render_partition(txn.partition),
                                data=render_partition(key))


class _Use:
    __slots__ = ("manager", "txn_id", "txn")

    def __init__(self, manager, txn_id):
        self.manager, self.txn_id = manager, txn_id

    def __enter__(self):
        self.txn = self.manager._acquire(self.txn_id)
        return self.txn

    def __exit__(self, *exc):
        self.manager._unbusy(self.txn)
