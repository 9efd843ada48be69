# cython: language_level=3
"""``DB.put``, ``DB.delete``, ``DB.write`` and ``DB.write_pairs`` in one C call each
(docs/walkthrough.md, "Inside the engine: A put").

``WritePath(state, lock, stats, options, current, admit, wal_failed,
sync_log)`` is handed everything it uses of its DB at construction
(``state``: the DB's ``lsm._state.DBState``, whose C fields it reads and
sets; the DB's write lock, stats dict and Options; ``current()``, the DB's
current-version cell once it has one; the DB's ``_admit``, ``_wal_failed``
and ``_sync_log``, the only Python it calls back) and imports nothing of
lsm/db.py.  It holds what a write does, in order: the arguments checked
(``check_key``, ``check_value``, the batch's or the pairs' keys and values),
then under the DB's write lock:

- admission: ``DB._admit`` when the DB is closed or failed, its memtable is
  full, or L0 has reached its slowdown trigger (it refuses, switches the
  memtable or waits); otherwise the current WAL;
- the next sequence number(s);
- the WAL record, built, framed and appended in one C call
  (``lsm._log_writer.LogWriter.add_single`` / ``add_batch``).  A failed append
  marks the WAL and the DB failed (``DB._wal_failed``): every later write is
  refused until the DB resumes (lsm/health.py);
- the memtable (``_memtable.add_entry``, once a pair, / ``add_entries``), the last
  sequence and the ``wal_appends`` count;
- with ``sync`` (or ``Options.sync``), the end of the record as the log's
  ``wanted``;

and after the lock, for a durable write, ``DB._sync_log`` (group commit).
The DB reads and writes the same state under the same lock elsewhere (the
memtable switch, flush, close); only the order of the steps lives here.
A batch's ops and the pairs are the two shapes of a record's operations
(_write_batch.pxd): the pairs go to the WAL record and the memtable as they
are, no WriteBatch made.  Each DB's ``put``, ``delete``, ``write`` and
``write_pairs`` (declared ``@c_call("_writes")``
in lsm/db.py, which documents them) are bound to its WritePath's when it opens.  Thread-safety: any number of threads (the
write lock serializes them).
"""
from cpython.bytes cimport PyBytes_GET_SIZE
from libc.stdint cimport uint64_t

from lsm._keys cimport KIND_DELETE, KIND_VALUE
from lsm._memtable cimport MemTable, add_entries, add_entry
from lsm._log_writer cimport LogWriter
from lsm._state cimport CurrentVersion, DBState
from lsm._write_batch cimport WriteBatch, op_key, op_kind, op_value, pairs_bytes

from lsm.arguments import check_key, check_value


cdef object write_put(object path, object key, object value, object sync):
    """``path.put(key, value, sync)`` called from C (``path`` a WritePath;
    _write.pxd): the region server's Router writes a region's store this
    way, without a second Python call."""
    (<WritePath>path)._put(key, value, sync)


cdef object write_pairs(object path, object pairs, object sync):
    """``path.write_pairs(pairs, sync)`` called from C (_write.pxd): how the
    region server's Router applies a write within one region."""
    (<WritePath>path)._write_pairs(pairs, sync)


cdef class WritePath:
    """The write path of one ``DB`` (see the module doc)."""
    cdef object _lock, _stats, _options, _current, _admit, _wal_failed, _sync_log
    cdef DBState _s
    cdef CurrentVersion _cur         # the DB's current version (its L0 file count), once read

    def __init__(self, DBState state not None, lock, dict stats not None, options, current,
                 admit, wal_failed, sync_log):
        self._s = state
        self._lock = lock                # the DB's, for its life
        self._stats = stats
        self._options = options
        self._current = current
        self._admit = admit
        self._wal_failed = wal_failed
        self._sync_log = sync_log

    def put(self, key, value, sync=None):
        """``DB.put``."""
        self._put(key, value, sync)

    cdef _put(self, object key, object value, object sync):
        cdef object options = self._options
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0 \
                or PyBytes_GET_SIZE(key) > options.max_key_bytes:
            check_key(key, options.max_key_bytes)
        if type(value) is not bytes or PyBytes_GET_SIZE(value) > options.max_value_bytes:
            check_value(value, options.max_value_bytes)
        self._apply(KIND_VALUE, key, value, None, False, sync)

    def delete(self, key, sync=None):
        """``DB.delete``."""
        cdef object options = self._options
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0 \
                or PyBytes_GET_SIZE(key) > options.max_key_bytes:
            check_key(key, options.max_key_bytes)
        self._apply(KIND_DELETE, key, b"", None, False, sync)

    def write(self, batch, sync=None):
        """``DB.write``."""
        cdef list ops
        cdef object options = self._options
        if not isinstance(batch, WriteBatch):
            raise TypeError(f"batch must be lsm.WriteBatch, got {type(batch).__name__}")
        ops = list((<WriteBatch>batch)._ops)
        if not ops:
            return
        if ((<WriteBatch>batch)._longest_key > options.max_key_bytes
                or (<WriteBatch>batch)._longest_value > options.max_value_bytes):
            _check_lengths(ops, options)     # raises, naming the first too long
        self._apply(0, None, None, ops, False, sync)

    def write_pairs(self, pairs, sync=None):
        """``DB.write_pairs``."""
        self._write_pairs(pairs, sync)

    cdef _write_pairs(self, object pairs, object sync):
        cdef list ops
        cdef object options = self._options
        if type(pairs) is not list:
            raise TypeError(f"pairs must be a list of (key, value) tuples, got {type(pairs).__name__}")
        if not pairs:
            return
        ops = list(pairs)     # the caller's list may change once the lock is waited for
        if pairs_bytes(ops) > min(options.max_key_bytes, options.max_value_bytes):
            _check_lengths(ops, options)     # else no key or value can be too long
        self._apply(0, None, None, ops, True, sync)

    cdef _apply(self, int kind, bytes key, bytes value, list ops, bint pairs, sync):
        """One checked write: ``ops`` (a batch's, or ``pairs``), or else one
        ``kind`` entry."""
        cdef DBState s = self._s
        cdef object options = self._options, lock = self._lock
        cdef bint durable = False
        cdef LogWriter w
        cdef MemTable mem
        cdef uint64_t seq
        cdef CurrentVersion cur = self._cur
        if cur is None:
            cur = self._cur = <CurrentVersion?>self._current()
        lock.acquire()
        try:
            mem = s.mem
            if (s.closed or s.write_error is not None or s.bg_error is not None
                    or mem.approximate_bytes >= options.memtable_bytes
                    or cur.l0_files >= options.l0_slowdown_trigger):
                lg = self._admit()
                mem = s.mem
            else:
                lg = s.log
            seq = s.last_seq + 1
            w = <LogWriter?>lg.writer
            try:
                if ops is None:
                    w.add_single(seq, kind, key, value)
                else:
                    w.add_batch(seq, ops)
            except BaseException as e:
                lg.failed = e
                self._wal_failed(e)
                raise
            if ops is None:
                add_entry(mem, seq, kind, key, value)
                s.last_seq = seq
            elif pairs:
                _add_pairs(mem, seq, ops)
                s.last_seq = seq + len(ops) - 1
            else:
                add_entries(mem, seq, ops)
                s.last_seq = seq + len(ops) - 1
            self._stats["wal_appends"] += 1
            durable = bool(sync or (sync is None and options.sync))
            if durable:
                end = w.size
                lg.wanted = end
        finally:
            lock.release()
        if durable:
            self._sync_log(lg, end)


cdef int _check_lengths(list ops, object options) except -1:
    """Each of ``ops`` (either shape, types checked) within the Options'
    ``max_key_bytes`` and ``max_value_bytes``, else ``check_key`` /
    ``check_value``'s ValueError."""
    cdef Py_ssize_t i, kmax = options.max_key_bytes, vmax = options.max_value_bytes
    cdef tuple op
    cdef bytes key, value
    for i in range(len(ops)):
        op = <tuple>ops[i]
        key, value = op_key(op), op_value(op)
        if PyBytes_GET_SIZE(key) > kmax:
            check_key(key, kmax)
        if value is not None and PyBytes_GET_SIZE(value) > vmax:
            check_value(value, vmax)
    return 0


cdef int _add_pairs(MemTable mem, uint64_t seq, list pairs) except -1:
    """``add_entries`` of (key, value) pairs (checked; value None a delete):
    ``add_entry`` of each at ``seq``, ``seq + 1``, ...  Runs no Python code,
    so no other thread sees the write half-added.  Caller holds the lock."""
    cdef Py_ssize_t i
    cdef tuple op
    cdef bytes value
    for i in range(len(pairs)):
        op = <tuple>pairs[i]
        value = op_value(op)
        add_entry(mem, seq + i, op_kind(op), op_key(op), b"" if value is None else value)
    return 0
