# cython: language_level=3
"""``DB.get`` in one C call (docs/walkthrough.md, "Inside the engine: A point read").

``PointPath(state, tables, cache, max_open, ...).get(key, snapshot=None)``
walks what ``DB.get`` reads, in order, and stops at the first entry of
``key`` visible at the read's sequence: the memtable and the frozen
memtable (``_memtable.get_version``), then the current version's L0 tables
newest first and one table per deeper level (binary search of the level's
largest keys against a lookup key built on the stack), each through
``_table.PointReader`` (bloom, index, block cache, in-block search).  It
builds no Python object but the value found; only a table not yet open
(``open_table``) or a block-cache miss (the table's ``_fill``) calls
back into Python.

The tables are searched in C: the version's ``ReadView`` (its files as C
arrays, with their readers once opened; built by the version's first read
and kept while it is current, ``CurrentVersion.view``) is walked by
``ReadView.probe``, each table through ``PointReader.lookup_nogil``, which
needs no GIL, registered with ``_blockcache.read_enter`` so that no block
it may reach is freed under it (lsm/_blockcache.pyx, "Reads without the
GIL").  ``multi_get(keys, snapshot=None)`` walks it for all its keys with
the GIL released once; ``get`` walks it holding the GIL while it reads
alone, and with the GIL released, handed over to the other readers
without sleeping, once a second thread reads too ("Two reader threads"
below; ``set_handover(False)`` keeps the GIL).  A table the walk
cannot read that way (not open in the view, its block not in the
reader's slots, a long key) is read through
``PointReader.lookup``, and the walk goes on.  A version with more files
than ``max_open`` keeps no readers, so the open files stay bounded by the
table cache: each of its tables is read through the table cache.

It reads the DB's state as ``DB.get`` did: the memtables, the last
sequence and the closed flag from the DB's ``DBState`` (lsm/_state.pyx, C
fields), ``versions.current`` and the table cache's map (lock-free,
see lsm/cache.py ``TableCache.peek``).  If a compaction deleted a table
between reading the version and opening the file, the read retries on the
new version.  ``PointPath(...).scan_chunk(start, end, limit, reverse, snapshot)`` is
``DB.scan_chunk``: the first ``limit`` entries of ``[start, end)`` read in
one call.  It builds the merging iterator of only the sources that may hold
the range, as ``DB.iterator`` does, but without pinning the version: every
table it needs is opened before it returns, and an open table outlives the
deletion of its file (lsm/cache.py), so only an open that finds the file
gone can fail, and that read retries on the new version, as ``get`` does.
``DB.iterator`` followed by ``next_batch`` is its twin; the tests compare
them.

Thread-safety: any number of threads.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from lsm._coding cimport encode_fixed64
from lsm._db_iter cimport DBIterator, entry_fn
from lsm._iter cimport InternalIterator
from cpython.ref cimport Py_XDECREF, Py_INCREF
from libc.stdlib cimport malloc, free

from lsm._blockcache cimport BlockCache, read_enter, read_exit
from lsm._keys cimport KIND_VALUE, bisect_keys, cmp_ikey, cmp_user, lower_bound as _lower_bound, pack_tag
from lsm._memtable cimport (MemTable, Version, get_version, lsm_prefetch, prefix_one,
                            prefix_prefetch, visible_range)
from lsm._state cimport CurrentVersion, DBState
from lsm._table cimport PointReader

# The bytes _prefetch_rows asks for from a value's address: its header and
# a row's head of up to ~220 bytes.
cdef Py_ssize_t _PREFETCH_VALUE = 256

from lsm._iter import LevelIterator, MergingIterator
from lsm._table import DELETED
from lsm.batch import check_bound, check_key
from lsm.errors import CorruptionError
from lsm.fs import FileMissingError

# -- Two reader threads (issue 34 part 3) -------------------------------------
#
# A get holds the GIL for its key, the memtables and its result (about 0.6 us
# with the caller's loop) and needs it not for its tables' search (about
# 1 us).  Released for the search, the GIL is only worth it if the other
# reader takes it at once and hands it back in time: a thread that finds it
# held sleeps in CPython's take_gil, and waking it costs more than a search
# (the convoy of docs/performance.md, issue 34: 0.64x one thread).  So a
# get hands it over in turns, without sleeping (``_search_released``): after
# its search it waits, spinning, until another thread has taken the GIL
# since its release (CPython's ``last_holder``), then until the GIL is free,
# and only then takes it; two readers so alternate their GIL parts while
# each one's search runs beside the other's.  A get releases the GIL only
# (``_hand_over``) unless ``set_handover(False)`` said not to, where the
# GIL's state can be read (CPython 3.11, whose internal header has it;
# elsewhere a get keeps the GIL, as before), while
# another thread has read within the last SHARED_GETS gets (one reader alone
# never pays a release), and while the turns work: a window of gets whose
# waits ran out (a thread holding the GIL for long between its gets, or no
# free core) makes the gets keep the GIL for HOLD_GETS, doubling while it
# keeps failing, up to HOLD_MAX.  ``multi_get`` releases it once a batch,
# the plain way: its batch outlasts any wait.  All of this state is read and
# written with the GIL held, so plain C globals suffice.
cdef extern from *:
    """
    #if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && !defined(Py_GIL_DISABLED)
    #  ifndef Py_BUILD_CORE
    #    define Py_BUILD_CORE 1
    #  endif
    #  undef _PyGC_FINALIZED
    #  include "internal/pycore_runtime.h"
    #  define LSM_GIL_KNOWN 1
    static inline int lsm_gil_locked(void) {
        return _Py_atomic_load_relaxed(&_PyRuntime.ceval.gil.locked) == 1;
    }
    static inline void* lsm_gil_last_holder(void) {
        return (void*)_Py_atomic_load_relaxed(&_PyRuntime.ceval.gil.last_holder);
    }
    #else
    #  define LSM_GIL_KNOWN 0
    static inline int lsm_gil_locked(void) { return 0; }
    static inline void* lsm_gil_last_holder(void) { return NULL; }
    #endif
    #if defined(__x86_64__) || defined(__i386__)
    static inline void lsm_cpu_relax(void) { __builtin_ia32_pause(); }
    #elif defined(__aarch64__)
    static inline void lsm_cpu_relax(void) { __asm__ __volatile__("yield"); }
    #else
    static inline void lsm_cpu_relax(void) { }
    #endif
    """
    int LSM_GIL_KNOWN
    int lsm_gil_locked() noexcept nogil
    void* lsm_gil_last_holder() noexcept nogil
    void lsm_cpu_relax() noexcept nogil

cdef extern from "Python.h":
    ctypedef struct PyThreadState
    PyThreadState* PyEval_SaveThread() nogil
    void PyEval_RestoreThread(PyThreadState*) nogil
    PyThreadState* PyThreadState_Get() nogil

cdef enum:
    SHARED_GETS = 256       # a get releases the GIL this many gets after another thread's
    SPINS_TAKEN = 4000      # cpu_relax()es the wait for another thread to take the GIL may take
                            # (~120 us: waking a sleeping thread takes 10-120 us on this VM)
    SPINS_FREE = 1500       # ... and the wait for it to be free (~45 us)
    WINDOW = 64             # released gets judged together ...
    WINDOW_MISSES = 16      # ... too many of whose waits ran out: the gets keep the GIL
    HOLD_GETS = 4096        # ... for this many gets, doubled while it keeps failing
    HOLD_MAX = 1 << 16

cdef PyThreadState* _last_reader = NULL  # the thread of the last get that searched the tables
cdef unsigned long long _gets = 0        # gets that searched the tables
cdef unsigned long long _shared_until = 0, _hold_until = 0
cdef unsigned long long _hold = HOLD_GETS
cdef unsigned long long _released = 0, _holds = 0   # for handover_stats()
cdef unsigned long long _late_taken = 0, _late_free = 0
cdef int _window = 0, _misses = 0
cdef bint _enabled = LSM_GIL_KNOWN   # set_handover(False): gets keep the GIL


def set_handover(bint on):
    """Let gets release the GIL beside other readers, where the GIL's state
    can be read (the default), or keep it always (for A/B runs); returns
    the previous setting."""
    global _enabled
    cdef bint was = _enabled
    _enabled = on and LSM_GIL_KNOWN
    return was


def handover_stats():
    """How many gets searched their tables with the GIL released, and how
    many times the gets went back to keeping it ("Two reader threads")."""
    return {"released": _released, "holds": _holds, "late_taken": _late_taken,
            "late_free": _late_free}


cdef inline bint _hand_over(PyThreadState* ts) noexcept:
    """Whether this get (of thread ``ts``) searches with the GIL released."""
    global _last_reader, _gets, _shared_until
    if not _enabled:
        return False
    _gets += 1
    if ts != _last_reader:
        _last_reader = ts
        _shared_until = _gets + SHARED_GETS
    return _gets < _shared_until and _gets >= _hold_until


cdef int _search_released(ReadView rv, PyThreadState* ts, Py_ssize_t* stage,
                          const unsigned char* uk, Py_ssize_t un, const unsigned char* lk,
                          Py_ssize_t lkn, Py_ssize_t* at, const unsigned char** vp,
                          Py_ssize_t* vn, Py_ssize_t* hits) noexcept:
    """``rv.probe`` with the GIL released and taken back in turn (the
    section's comment); called with the GIL held, returns with it."""
    global _released, _holds, _hold, _hold_until, _window, _misses, _late_taken, _late_free
    cdef int r
    cdef Py_ssize_t i = 0, j = 0
    cdef PyThreadState* saved = PyEval_SaveThread()
    r = rv.probe(stage, uk, un, lk, lkn, at, vp, vn, hits)
    while lsm_gil_last_holder() == <void*>ts and i < SPINS_TAKEN:   # until another took it
        lsm_cpu_relax()
        i += 1
    while lsm_gil_locked() and j < SPINS_FREE:                    # until it is free
        lsm_cpu_relax()
        j += 1
    PyEval_RestoreThread(saved)
    _released += 1
    if i == SPINS_TAKEN or j == SPINS_FREE:
        _misses += 1
        _late_taken += i == SPINS_TAKEN
        _late_free += j == SPINS_FREE
    _window += 1
    if _misses > WINDOW_MISSES:
        _hold_until = _gets + _hold
        _hold = min(_hold * 2, <unsigned long long>HOLD_MAX)
        _holds += 1
        _window = _misses = 0
    elif _window == WINDOW:
        _hold = HOLD_GETS
        _window = _misses = 0
    return r


cdef enum:
    LKBUF = 520
    SHORT_CAP = 64      # keys a source may hold of a short scan before it iterates


cdef struct FileC:
    const unsigned char* lo     # smallest user key
    Py_ssize_t lon
    const unsigned char* hi     # largest user key
    Py_ssize_t hin
    const unsigned char* ilarge # largest internal key
    Py_ssize_t ilargen
    void* reader                # its PointReader (a strong reference), or NULL


cdef struct Probe:
    # One key of a multi_get's walk of a ReadView (PointPath._many_from_version).
    const unsigned char* uk     # the user key (its bytes object's)
    Py_ssize_t un
    const unsigned char* lk     # the lookup key: user key + the read's tag
    Py_ssize_t lkn
    Py_ssize_t stage, at        # ReadView.probe's
    const unsigned char* vp     # the value found (r == 1)
    Py_ssize_t vn
    int r                       # ReadView.probe's answer


cdef class ReadView:
    """One version's files as C arrays, each with its point reader once
    opened: what ``PointPath.get`` walks without the GIL (module doc).
    Built once a version (kept in ``CurrentVersion.view`` while the version is
current); immutable but for the readers,
    each set once, with the GIL.  ``keep`` False (more files than the table
    cache may keep open): it keeps no reader, and every table is read with
    the GIL, through the table cache."""
    cdef FileC* files           # L0 newest first, then each deeper level's in order
    cdef Py_ssize_t n, nl0, nlevels
    cdef Py_ssize_t* starts     # level i's files: files[starts[i]:starts[i + 1]]
    cdef list metas             # the FileMeta of each file (they own the keys' bytes)
    cdef list numbers
    cdef readonly bint keep

    def readers_kept(self):
        """How many of the files' readers this view holds (for tests)."""
        return sum([1 for i in range(self.n) if self.files[i].reader != NULL])

    def __cinit__(self, v, bint keep):
        cdef list metas = [], numbers = []
        cdef list levels = []
        cdef Py_ssize_t i = 0, j
        cdef bytes b
        for item in <list>v.l0:
            metas.append((<tuple>item)[2])
            numbers.append((<tuple>item)[3])
        for item in <list>v.search:
            metas.extend(<list>(<tuple>item)[0])
            numbers.extend(<list>(<tuple>item)[3])
            levels.append(item)
        self.metas, self.numbers, self.keep = metas, numbers, keep
        self.n, self.nl0, self.nlevels = len(metas), len(<list>v.l0), len(levels)
        self.files = <FileC*>malloc(max(self.n, 1) * sizeof(FileC))
        self.starts = <Py_ssize_t*>malloc((self.nlevels + 1) * sizeof(Py_ssize_t))
        if self.files == NULL or self.starts == NULL:
            raise MemoryError()
        for item in <list>v.l0:
            b = <bytes>(<tuple>item)[0]
            self.files[i].lo, self.files[i].lon = <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)
            b = <bytes>(<tuple>item)[1]
            self.files[i].hi, self.files[i].hin = <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)
            self.files[i].ilarge, self.files[i].ilargen = NULL, 0
            self.files[i].reader = NULL
            i += 1
        for j, item in enumerate(levels):
            self.starts[j] = i
            for b, s in zip(<list>(<tuple>item)[1], <list>(<tuple>item)[2]):
                self.files[i].ilarge = <const unsigned char*>PyBytes_AS_STRING(b)
                self.files[i].ilargen = PyBytes_GET_SIZE(b)
                self.files[i].lo = <const unsigned char*>PyBytes_AS_STRING(<bytes>s)
                self.files[i].lon = PyBytes_GET_SIZE(<bytes>s)
                self.files[i].hi, self.files[i].hin = NULL, 0
                self.files[i].reader = NULL
                i += 1
        self.starts[self.nlevels] = i

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.files != NULL:
            for i in range(self.n):
                Py_XDECREF(<PyObject*>self.files[i].reader)
            free(self.files)
        free(self.starts)

    cdef Py_ssize_t level_first(self, Py_ssize_t level, const unsigned char* lk,
                                Py_ssize_t lkn) noexcept nogil:
        """The index of the first file of deeper level ``level`` (0: the first
        below L0) whose largest internal key is not below ``lk``; the level's
        end when there is none."""
        cdef Py_ssize_t lo = self.starts[level], hi = self.starts[level + 1], mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if cmp_ikey(self.files[mid].ilarge, self.files[mid].ilargen, lk, lkn) < 0:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef int probe(self, Py_ssize_t* stage, const unsigned char* uk, Py_ssize_t un,
                   const unsigned char* lk, Py_ssize_t lkn, Py_ssize_t* at,
                   const unsigned char** vp, Py_ssize_t* vn, Py_ssize_t* hits) noexcept nogil:
        """The point read of the tables, from ``*stage`` on (stage i < nl0:
        L0 file i; then one a deeper level), without the GIL: 0 when no
        table has the key, 1 for a value (``*vp``, ``*vn``), 2 for a
        tombstone, -1 when file ``*at`` (at stage ``*stage``) must be read
        with the GIL (not open in this view, or ``lookup_nogil`` said so)."""
        cdef Py_ssize_t s, i, lo
        cdef int r
        cdef FileC* f
        for s in range(stage[0], self.nl0 + self.nlevels):
            if s < self.nl0:
                f = &self.files[s]
                if cmp_user(f.lo, f.lon, uk, un) > 0 or cmp_user(uk, un, f.hi, f.hin) > 0:
                    continue
                i = s
            else:
                lo = self.level_first(s - self.nl0, lk, lkn)
                if lo == self.starts[s - self.nl0 + 1]:
                    continue
                f = &self.files[lo]
                if cmp_user(f.lo, f.lon, uk, un) > 0:
                    continue
                i = lo
            if self.files[i].reader == NULL:
                r = -1
            else:
                r = (<PointReader>self.files[i].reader).lookup_nogil(uk, un, lk, lkn, vp, vn, hits)
            if r != 0:
                stage[0] = s
                at[0] = i
                return r
        return 0


cdef object point_get(object path, object key):
    """``path.get(key)`` called from C (``path`` a PointPath; _read.pxd):
    the Router reads a region's store this way, without a second Python
    call."""
    return (<PointPath>path)._get(key, None)


cdef list point_scan_short(object path, bytes start, bytes end, Py_ssize_t limit):
    """``path.scan_short(start, end, limit)`` called from C (``path`` a
    PointPath; _read.pxd): how the Router reads a row."""
    return (<PointPath>path)._scan_short(start, end, limit, None)


cdef object point_scan_into(object path, object start, object end, Py_ssize_t limit,
                            bint reverse, object snapshot, entry_fn fn, void* ctx,
                            Py_ssize_t* count, bint* stopped):
    """``path.scan_chunk(start, end, limit, reverse, snapshot)`` from C
    (``path`` a PointPath; _read.pxd), each entry handed to ``fn(ctx, key,
    klen, value, vlen)`` in place instead of made into a list: the same
    entries in the same order, at one sequence.  ``*count``: how many ``fn``
    was handed; ``*stopped``: whether ``fn`` asked to stop.  Returns the last
    entry's key (where a caller reading in chunks goes on), None when
    none was handed.  A forward scan makes no object an entry where its
    sources lend their entries in place (memtables, tables)."""
    return (<PointPath>path)._scan_into(start, end, limit, reverse, snapshot, fn, ctx, count,
                                        stopped)


cdef inline int _check_bounds(object start, object end) except -1:
    """A scan's bounds: bytes or None (``check_bound`` raises for others)."""
    if start is not None and type(start) is not bytes:
        check_bound("start", start)
    if end is not None and type(end) is not bytes:
        check_bound("end", end)
    return 0


cdef inline int _vanished(CurrentVersion cur, object v, exc) except -1:
    """A table file gone under a read of version ``v``: a compaction deleted
    it after the version was read, and the data is in the newer version (the
    caller reads again); with no newer version, ``exc`` stands."""
    if v is cur.version:
        raise exc
    return 0


cdef class PointPath:
    """The point read of one ``DB`` (see the module doc).

    What it needs of its DB beyond ``state`` is handed in at construction,
    as lsm._write's ``WritePath`` has it: ``options`` (the key limit),
    ``current()`` (the VersionSet's ``CurrentVersion`` cell, read once),
    ``check_open()`` (raises for a closed store), ``snapshot_seq(snapshot)``
    (a snapshot's sequence, checked) and ``open_table(f)`` (the table or
    view of FileMeta ``f``, through the table cache).  It holds no DB."""
    cdef object _options, _current_cell, _check_open, _snapshot_seq, _open_table
    cdef DBState _s            # the DB's memtables, last sequence, closed flag
    cdef object _tables        # the TableCache's OrderedDict: number -> Table/TableView
    cdef BlockCache _cache     # the tables' block cache (hits taken without the GIL are added here)
    cdef Py_ssize_t _max_open  # a version with more files keeps no readers (ReadView.keep)
    cdef CurrentVersion _cur   # the DB's VersionSet's current version and view, once it has one

    def __init__(self, DBState state not None, tables_map, BlockCache cache, Py_ssize_t max_open,
                 options, current, check_open, snapshot_seq, open_table):
        self._options = options
        self._current_cell = current
        self._check_open = check_open
        self._snapshot_seq = snapshot_seq
        self._open_table = open_table
        self._s = state
        self._tables = tables_map
        self._cache = cache
        self._max_open = max_open

    cdef inline CurrentVersion _current(self):
        """The DB's current version and view (its VersionSet's cell, kept once seen)."""
        if self._cur is None:
            self._cur = <CurrentVersion?>self._current_cell()
        return self._cur

    def get(self, key, snapshot=None):
        """The value of ``key``, or None (``DB.get``)."""
        return self._get(key, snapshot)

    cdef object _get(self, object key, object snapshot):
        cdef DBState s = self._s
        cdef uint64_t seq
        cdef object v, r
        cdef Version mv
        cdef CurrentVersion cur
        cdef int attempt
        if type(key) is not bytes or PyBytes_GET_SIZE(key) == 0:
            check_key(key, self._options.max_key_bytes)
        if s.closed:
            self._check_open()
        seq = s.last_seq if snapshot is None else self._snapshot_seq(snapshot)
        mv = get_version(s.mem_versions, <bytes>key, seq)
        if mv is not None:
            return mv.value if mv.kind == KIND_VALUE else None
        if s.imm_versions is not None:
            mv = get_version(s.imm_versions, <bytes>key, seq)
            if mv is not None:
                return mv.value if mv.kind == KIND_VALUE else None
        cur = self._current()
        for attempt in range(3):
            v = cur.version
            try:
                r = self._from_version(v, cur.view, <bytes>key, seq)
            except FileMissingError as exc:
                _vanished(cur, v, exc)
                continue
            return None if r is None or r is DELETED else r
        raise CorruptionError(f"table files keep vanishing under a read of {key!r}")

    def multi_get(self, keys, snapshot=None):
        """``[get(k, snapshot) for k in keys]``, every key read at one
        sequence (the latest, or the snapshot's), with the GIL released once
        for the tables' searches of the whole batch (``DB.multi_get``)."""
        return self._multi_get(keys, snapshot)

    cdef list _multi_get(self, object keys, object snapshot):
        cdef DBState s = self._s
        cdef list ks = list(keys)   # held here: the caller's list may change while the GIL is out
        cdef Py_ssize_t n = len(ks), i, m = 0
        cdef list out = [None] * n
        cdef uint64_t seq
        cdef dict mem, imm
        cdef Version mv
        cdef Py_ssize_t* todo = NULL
        cdef CurrentVersion cur
        cdef object v
        cdef int attempt
        for k in ks:
            if type(k) is not bytes or PyBytes_GET_SIZE(k) == 0:
                check_key(k, self._options.max_key_bytes)
        if s.closed:
            self._check_open()
        seq = s.last_seq if snapshot is None else self._snapshot_seq(snapshot)
        # After seq: every entry at or below it is in these memtables by now.
        mem, imm = s.mem_versions, s.imm_versions
        todo = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
        if todo == NULL:
            raise MemoryError()
        try:
            for i in range(n):
                mv = get_version(mem, <bytes>ks[i], seq)
                if mv is None and imm is not None:
                    mv = get_version(imm, <bytes>ks[i], seq)
                if mv is None:
                    todo[m] = i
                    m += 1
                elif mv.kind == KIND_VALUE:
                    out[i] = mv.value
            if m == 0:
                return out
            cur = self._current()
            for attempt in range(3):
                v = cur.version
                try:
                    self._many_from_version(v, cur.view, ks, todo, m, seq, out)
                except FileMissingError as exc:
                    _vanished(cur, v, exc)
                    continue
                return out
        finally:
            free(todo)
        raise CorruptionError(f"table files keep vanishing under a multi_get of {n} keys")

    cdef int _many_from_version(self, object v, object view, list ks, const Py_ssize_t* todo,
                                Py_ssize_t m, uint64_t seq, list out) except -1:
        """``out[todo[j]]`` = the value of ``ks[todo[j]]`` in version ``v``'s
        tables (None for none or a tombstone), j < m: every key's walk of
        the ReadView (``ReadView.probe``) in one section without the GIL,
        then the values' bytes made with it; a key whose walk needs the
        GIL goes on with it (``_from_view``, from the next stage)."""
        cdef ReadView rv
        cdef Probe* ps = NULL
        cdef unsigned char* buf = NULL
        cdef Py_ssize_t j, total = 0, pos = 0, hits = 0
        cdef int epoch
        cdef bytes k
        cdef object r
        if self._max_open <= 0:
            for j in range(m):
                r = self._from_version(v, view, <bytes>ks[todo[j]], seq)
                out[todo[j]] = None if r is None or r is DELETED else r
            return 0
        rv = <ReadView>view
        if rv is None:
            rv = self._view(self._cur, v)
        for j in range(m):
            total += PyBytes_GET_SIZE(<bytes>ks[todo[j]]) + 8
        ps = <Probe*>malloc(m * sizeof(Probe))
        buf = <unsigned char*>malloc(total)
        try:
            if ps == NULL or buf == NULL:
                raise MemoryError()
            for j in range(m):
                k = <bytes>ks[todo[j]]
                ps[j].uk = <const unsigned char*>PyBytes_AS_STRING(k)
                ps[j].un = PyBytes_GET_SIZE(k)
                ps[j].lk = buf + pos
                ps[j].lkn = ps[j].un + 8
                memcpy(buf + pos, ps[j].uk, ps[j].un)
                encode_fixed64(buf + pos + ps[j].un, pack_tag(seq, KIND_VALUE))
                pos += ps[j].lkn
                ps[j].stage = 0
                ps[j].at = -1
            epoch = read_enter()
            with nogil:
                for j in range(m):
                    ps[j].r = rv.probe(&ps[j].stage, ps[j].uk, ps[j].un, ps[j].lk, ps[j].lkn,
                                       &ps[j].at, &ps[j].vp, &ps[j].vn, &hits)
            try:
                for j in range(m):
                    if ps[j].r == 1:
                        out[todo[j]] = PyBytes_FromStringAndSize(<const char*>ps[j].vp, ps[j].vn)
                    else:
                        out[todo[j]] = None
            finally:
                read_exit(epoch)
            if hits and self._cache is not None:
                self._cache.hits += hits
            for j in range(m):
                if ps[j].r == -1:
                    r = self._reader_at(rv, ps[j].at).lookup(ps[j].uk, ps[j].un, ps[j].lk, ps[j].lkn)
                    if r is None:
                        r = self._from_view(rv, ps[j].uk, ps[j].un, ps[j].lk, ps[j].lkn,
                                            ps[j].stage + 1)
                    out[todo[j]] = None if r is None or r is DELETED else r
        finally:
            free(ps)
            free(buf)
        return 0

    def scan_chunk(self, start=None, end=None, limit=1000, bint reverse=False, snapshot=None):
        """The first ``limit`` ``(key, value)`` of ``[start, end)`` (the last
        ones with ``reverse``) as one list (``DB.scan_chunk``)."""
        if type(limit) is not int or limit < 0:
            raise ValueError(f"limit must be an int >= 0, got {limit!r}")
        _check_bounds(start, end)
        return self._scan([(start, end)], limit, reverse, snapshot, False)[0]

    cdef int _read_seq(self, object snapshot, uint64_t* seq) except -1:
        """The sequence a read reads at (the last, or ``snapshot``'s), the
        store checked open: the state a scan reads is read after it."""
        cdef DBState s = self._s
        if s.closed:
            self._check_open()
        seq[0] = s.last_seq if snapshot is None else self._snapshot_seq(snapshot)
        return 0

    cdef object _scan_into(self, object start, object end, Py_ssize_t limit, bint reverse,
                           object snapshot, entry_fn fn, void* ctx, Py_ssize_t* count,
                           bint* stopped):
        """``scan_chunk(start, end, limit, reverse, snapshot)``'s entries
        handed to ``fn`` one by one, in place (``DBIterator.feed``), instead
        of made into a list (point_scan_into, lsm/_api.pxd)."""
        cdef DBState s = self._s
        cdef uint64_t seq
        cdef object v
        cdef CurrentVersion cur
        cdef DBIterator dbi
        cdef int attempt
        count[0], stopped[0] = 0, False
        if limit < 0:
            raise ValueError(f"limit must be an int >= 0, got {limit!r}")
        _check_bounds(start, end)
        self._read_seq(snapshot, &seq)
        mem, imm = s.mem, s.imm
        cur = self._current()
        for attempt in range(3):
            v = cur.version
            try:
                # every table is opened here: a file deleted after can still be read
                dbi = self._positioned(mem, imm, v, seq, start, end, reverse)
            except FileMissingError as exc:
                _vanished(cur, v, exc)
                continue
            if dbi is None:
                return None
            count[0] = dbi.feed(limit, reverse, fn, ctx, stopped)
            return dbi._key
        raise CorruptionError(f"table files keep vanishing under a scan of {(start, end)!r}")

    def scan_short(self, start, end, limit=1000, snapshot=None):
        """``scan_chunk(start, end, limit, False, snapshot)`` for a range
        expected to hold few entries (a row): each source's entries of the
        range are read directly (``_memtable.visible_range``,
        ``PointReader.collect``) and merged, building no iterator; when a
        source holds more than SHORT_CAP keys of it (or the range is not
        two bytes bounds), the iterator path of ``scan_chunk`` reads it."""
        if type(start) is not bytes or type(end) is not bytes or type(limit) is not int:
            return self.scan_chunk(start, end, limit, False, snapshot)
        return self._scan_short(start, end, limit, snapshot)

    cdef list _scan_short(self, bytes start, bytes end, Py_ssize_t limit, object snapshot):
        if limit < 0 or not _lt(start, end):
            return self.scan_chunk(start, end, limit, False, snapshot)
        return self._scan([(start, end)], limit, False, snapshot, True)[0]

    def scan_short_many(self, list ranges not None, limit=1000, snapshot=None):
        """``[scan_short(start, end, limit, snapshot) for start, end in
        ranges]``, every range read at one sequence (the latest, or the
        snapshot's), the DB's state read once (``DB.scan_short_many``)."""
        if type(limit) is not int or limit < 0:
            raise ValueError(f"limit must be an int >= 0, got {limit!r}")
        for pair in ranges:
            if type(pair) is not tuple or len(<tuple>pair) != 2:
                raise TypeError(f"ranges must hold (start, end) tuples, got {pair!r}")
            if (<tuple>pair)[0] is not None and type((<tuple>pair)[0]) is not bytes:
                check_bound("start", (<tuple>pair)[0])
            if (<tuple>pair)[1] is not None and type((<tuple>pair)[1]) is not bytes:
                check_bound("end", (<tuple>pair)[1])
        return self._scan(ranges, limit, False, snapshot, True)

    cdef list _scan(self, list ranges, Py_ssize_t limit, bint reverse, object snapshot,
                    bint short):
        """Checked scans' chunks, one list of entries a ``(start, end)`` of
        ``ranges``, all read at one sequence on the DB's state read once, and
        read again on the new version when a compaction deleted a table under
        them.  ``short``: each range that can be (two bytes bounds, start <
        end) is read as ``scan_short`` reads it."""
        cdef DBState s = self._s
        cdef uint64_t seq
        cdef object v, got
        cdef ReadView rv = None
        cdef CurrentVersion cur
        cdef list out
        cdef int attempt
        self._read_seq(snapshot, &seq)
        # After seq: every entry at or below it is in these memtables by now.
        mem, imm = s.mem, s.imm
        cur = self._current()
        for attempt in range(3):
            v = cur.version
            if short:
                rv = self._view(cur, v)
                if attempt == 0 and len(ranges) > 1:
                    _prefetch_rows(<MemTable>mem, ranges, seq)
            out = []
            try:
                for start, end in ranges:
                    got = None
                    if short and start is not None and end is not None and _lt(<bytes>start, <bytes>end):
                        got = self._short(mem, imm, rv, seq, <bytes>start, <bytes>end, limit)
                    if got is None:
                        got = self._chunk(mem, imm, v, seq, start, end, limit, reverse)
                    out.append(got)
                return out
            except FileMissingError as exc:
                _vanished(cur, v, exc)
        raise CorruptionError(f"table files keep vanishing under a scan of {ranges!r}")

    cdef object _short(self, object mem, object imm, ReadView rv, uint64_t seq,
                       bytes lo, bytes hi, Py_ssize_t limit):
        """The short scan's answer, or None: a source holds too many keys.
        The tables are found through ``rv``, the version's view.  A memtable
        whose prefix table answers (``prefix_one``: the range within one
        prefix of one key) adds no list; when that key is all the range
        holds, the answer is made from its Version directly."""
        cdef const unsigned char* uk = <const unsigned char*>PyBytes_AS_STRING(lo)
        cdef Py_ssize_t un = PyBytes_GET_SIZE(lo)
        cdef const unsigned char* hk = <const unsigned char*>PyBytes_AS_STRING(hi)
        cdef Py_ssize_t hn = PyBytes_GET_SIZE(hi)
        cdef unsigned char stack[LKBUF]
        cdef list merged = None
        cdef PyObject* key = NULL       # the one key the memtables' prefix tables found
        cdef PyObject* ver = NULL       # ... and its visible Version (borrowed: no Python code
        cdef PyObject* k2 = NULL        # runs before they are used or taken)
        cdef PyObject* v2 = NULL
        cdef bytes k1
        cdef Version v1
        cdef int rc
        if un + 8 > LKBUF:
            return None
        rc = prefix_one(<MemTable>mem, lo, hi, seq, &key, &ver)
        if rc == -2:
            merged = _range_of(<MemTable>mem, lo, hi, seq)
            if merged is None:
                return None
        if imm is not None:
            rc = prefix_one(<MemTable>imm, lo, hi, seq, &k2, &v2)
            if rc == -2 or (ver != NULL and v2 != NULL):
                merged = _merge(merged, _taken(key, ver))
                key = ver = NULL
                if rc == -2:
                    got = _range_of(<MemTable>imm, lo, hi, seq)
                    if got is None:
                        return None
                    merged = _merge(merged, got)
                else:
                    merged = _merge(merged, _taken(k2, v2))
            elif v2 != NULL:
                key, ver = k2, v2
        memcpy(stack, uk, un)
        encode_fixed64(stack + un, pack_tag(seq, KIND_VALUE))
        if ver == NULL:
            merged = self._short_view(rv, uk, un, stack, un + 8, hk, hn, seq, merged)
        else:
            # Held: the tables' reads below may run Python code (an open, a fill).
            k1, v1 = <bytes>key, <Version>ver
            merged = self._short_view(rv, uk, un, stack, un + 8, hk, hn, seq, merged)
            if merged is _TOO_MANY:
                return None
            if not merged:              # the key is all the range holds
                return [(k1, v1.value)] if limit > 0 and v1.kind == KIND_VALUE else []
            merged = _merge(merged, [(k1, pack_tag(v1.seq, v1.kind), v1.value)])
        return None if merged is _TOO_MANY else _visible(merged, limit)

    cdef list _short_view(self, ReadView rv, const unsigned char* uk, Py_ssize_t un,
                          const unsigned char* lk, Py_ssize_t lkn, const unsigned char* hk,
                          Py_ssize_t hn, uint64_t seq, list merged):
        """The tables' part of ``_short`` through the version's view: each L0
        file whose keys meet ``[uk, hk)``, then in each deeper level the files
        from the first whose largest key is not below ``lk`` while their
        smallest is below ``hk``; their entries merged into ``merged``, which
        is returned, or ``_TOO_MANY`` when a table holds too many keys of the
        range (``collect``'s -1)."""
        cdef Py_ssize_t s, i
        cdef FileC* f
        cdef list got
        for i in range(rv.nl0):
            f = &rv.files[i]
            if cmp_user(f.lo, f.lon, hk, hn) >= 0 or cmp_user(f.hi, f.hin, uk, un) < 0:
                continue
            got = []
            if self._reader_at(rv, i).collect(uk, un, lk, lkn, hk, hn, seq, got, SHORT_CAP) < 0:
                return _TOO_MANY
            merged = _merge(merged, got)
        for s in range(rv.nlevels):
            got = None
            for i in range(rv.level_first(s, lk, lkn), rv.starts[s + 1]):
                if cmp_user(rv.files[i].lo, rv.files[i].lon, hk, hn) >= 0:
                    break
                if got is None:
                    got = []
                if self._reader_at(rv, i).collect(uk, un, lk, lkn, hk, hn, seq, got,
                                                  SHORT_CAP) < 0:
                    return _TOO_MANY
            if got is not None:
                merged = _merge(merged, got)
        return merged

    cdef PointReader _reader_at(self, ReadView rv, Py_ssize_t i):
        """The point reader of the view's file ``i``, kept in the view (when
        it keeps readers) once opened."""
        cdef PointReader pr
        cdef PyObject* p = <PyObject*>rv.files[i].reader
        if p != NULL:
            return <PointReader>p
        pr = self._table_of(rv.numbers[i], rv.metas[i])
        if rv.keep and rv.files[i].reader == NULL:
            Py_INCREF(pr)
            rv.files[i].reader = <void*>pr
        return pr

    cdef ReadView _view(self, CurrentVersion cur, object v):
        """The view of version ``v`` (``cur``'s, built and kept there if
        ``v`` is still current)."""
        cdef ReadView rv = <ReadView>cur.view
        if rv is not None and cur.version is v:
            return rv
        rv = ReadView(v, len(<list>v.l0) + sum([len(<list>(<tuple>t)[0]) for t in v.search])
                      <= self._max_open)
        if cur.version is v:      # still current (CurrentVersion's doc)
            cur.view = rv
        return rv

    cdef list _chunk(self, object mem, object imm, object v, uint64_t seq, object lo, object hi,
                     Py_ssize_t limit, bint reverse):
        cdef DBIterator dbi = self._positioned(mem, imm, v, seq, lo, hi, reverse)
        if dbi is None:
            return []
        return dbi.next_batch(limit, reverse)

    cdef DBIterator _positioned(self, object mem, object imm, object v, uint64_t seq, object lo,
                                object hi, bint reverse):
        """The DBIterator of ``[lo, hi)`` at ``seq`` over the sources that may
        hold it (every table opened now), on its first entry (its last with
        ``reverse``); None when no source may."""
        cdef list children = []
        cdef object m, item, files
        cdef list largest, smallest_users, largest_users
        cdef Py_ssize_t i, j
        cdef InternalIterator it
        cdef DBIterator dbi
        for m in (mem, imm):
            if m is not None:
                m = m.iterator(lo, hi)
                if m is not None:
                    children.append(m)
        for item in <list>v.l0:
            if ((hi is None or _lt(<bytes>(<tuple>item)[0], hi))
                    and (lo is None or not _lt(<bytes>(<tuple>item)[1], lo))):
                children.append(self._iter(<object>(<tuple>item)[2]))
        for item in <list>v.bounds:
            files = (<tuple>item)[0]
            smallest_users = <list>(<tuple>item)[2]
            largest_users = <list>(<tuple>item)[3]
            i = 0 if lo is None else _lower_bound(largest_users, <bytes>lo)
            j = len(files) if hi is None else _lower_bound(smallest_users, <bytes>hi)
            if j - i == 1:
                children.append(self._iter((<list>files)[i]))
            elif j - i > 1:
                # Opened now, not lazily: nothing pins the version after this call.
                largest = <list>(<tuple>item)[1]
                children.append(LevelIterator(largest[i:j], [self._iter(f) for f in files[i:j]]
                                              .__getitem__))
        if len(children) == 1:
            it = <InternalIterator>children[0]
        elif children:
            it = MergingIterator(children)
        else:
            return None
        dbi = DBIterator(it, seq, lo, hi, None)
        if reverse:
            dbi.seek_to_last()
        else:
            dbi.seek_to_first()
        return dbi

    cdef InternalIterator _iter(self, object f):
        cdef PyObject* t = PyDict_GetItem(self._tables, f.number)
        if t != NULL:
            return (<object>t).iterator()
        return self._open_table(f).iterator()

    cdef object _from_version(self, object v, object view, bytes key, uint64_t seq):
        cdef const unsigned char* uk = <const unsigned char*>PyBytes_AS_STRING(key)
        cdef Py_ssize_t un = PyBytes_GET_SIZE(key)
        cdef unsigned char stack[LKBUF]
        cdef unsigned char* lk = stack
        cdef bytes heap = None
        cdef Py_ssize_t lkn = un + 8, lo
        cdef object item, r
        cdef list largest
        cdef bytes b
        cdef ReadView rv
        if lkn > LKBUF:
            heap = bytes(lkn)
            lk = <unsigned char*>PyBytes_AS_STRING(heap)
        memcpy(lk, uk, un)
        encode_fixed64(lk + un, pack_tag(seq, KIND_VALUE))
        if heap is None and self._max_open > 0:
            rv = <ReadView>view
            if rv is None:
                rv = self._view(self._cur, v)
            return self._from_view(rv, uk, un, lk, lkn)
        for item in <list>v.l0:
            b = <bytes>(<tuple>item)[0]
            if cmp_user(<const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), uk, un) > 0:
                continue
            b = <bytes>(<tuple>item)[1]
            if cmp_user(uk, un, <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)) > 0:
                continue
            r = self._table_of((<tuple>item)[3], (<tuple>item)[2]).lookup(uk, un, lk, lkn)
            if r is not None:
                return r
        for item in <list>v.search:
            largest = <list>(<tuple>item)[1]
            lo = bisect_keys(largest, lk, lkn, True)
            if lo < len(largest):
                b = <bytes>(<list>(<tuple>item)[2])[lo]
                if cmp_user(<const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), uk, un) <= 0:
                    r = self._table_of((<list>(<tuple>item)[3])[lo],
                                       (<list>(<tuple>item)[0])[lo]).lookup(uk, un, lk, lkn)
                    if r is not None:
                        return r
        return None

    cdef object _from_view(self, ReadView rv, const unsigned char* uk, Py_ssize_t un,
                           const unsigned char* lk, Py_ssize_t lkn, Py_ssize_t stage=0):
        """``_from_version`` through the version's ReadView, from ``stage``
        on (``ReadView.probe``): the tables' searches in C, a table that
        needs more (``lookup_nogil``'s -1) read through ``lookup``.  The
        walk releases the GIL when other threads read too (``_hand_over``;
        "Two reader threads" above); the value's bytes are made with it,
        before the search leaves its epoch."""
        cdef Py_ssize_t at = -1, hits
        cdef const unsigned char* vp = NULL
        cdef Py_ssize_t vn = 0
        cdef int r, epoch
        cdef object got = None
        cdef PointReader pr
        cdef PyObject* p
        cdef PyThreadState* ts = PyThreadState_Get()
        while True:
            hits = 0
            epoch = read_enter()
            if _hand_over(ts):
                r = _search_released(rv, ts, &stage, uk, un, lk, lkn, &at, &vp, &vn, &hits)
            else:
                r = rv.probe(&stage, uk, un, lk, lkn, &at, &vp, &vn, &hits)
            try:
                if r == 1:
                    got = PyBytes_FromStringAndSize(<const char*>vp, vn)
            finally:
                read_exit(epoch)
            if hits and self._cache is not None:
                self._cache.hits += hits
            if r == 1:
                return got
            if r == 2:
                return DELETED
            if r == 0:
                return None
            got = self._reader_at(rv, at).lookup(uk, un, lk, lkn)
            if got is not None:
                return got
            stage += 1

    cdef PointReader _table(self, object f):
        return self._table_of(f.number, f)

    cdef PointReader _table_of(self, object number, object f):
        """The point reader of file ``f`` (numbered ``number``), open or opened."""
        cdef PyObject* t = PyDict_GetItem(self._tables, number)
        if t != NULL:
            return <PointReader>(<object>t).point
        return <PointReader>self._open_table(f).point


cdef inline bint _lt(bytes a, bytes b):
    return cmp_user(<const unsigned char*>PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a),
                    <const unsigned char*>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)) < 0



cdef void _prefetch_rows(MemTable mem, list ranges, uint64_t seq):
    """``prefix_prefetch`` of each range's start in ``mem``: the slots, then
    the keys and versions; then, each range's key and Version in hand
    (``prefix_one``, its lines now on their way), the value that Version
    holds, which the read hands out and its caller reads next (``_scan`` of
    many short ranges).  Each phase asks for all the ranges' lines before
    the next reads any, so the batch's cache misses overlap."""
    cdef bint key
    cdef PyObject* k
    cdef PyObject* v
    cdef const char* p
    cdef Py_ssize_t off
    for key in (False, True):
        for pair in ranges:
            lo = (<tuple>pair)[0]
            if type(lo) is bytes:
                prefix_prefetch(mem, <bytes>lo, key)
    for pair in ranges:
        lo, hi = (<tuple>pair)[0], (<tuple>pair)[1]
        if type(lo) is not bytes or type(hi) is not bytes:
            continue
        k = v = NULL
        if prefix_one(mem, <bytes>lo, <bytes>hi, seq, &k, &v) == 1 and v != NULL:
            # Its address only: reading its size or its count would wait for it.
            p = <const char*><PyObject*>(<Version>v).value
            for off in range(0, _PREFETCH_VALUE, 64):
                lsm_prefetch(p + off)


cdef list _TOO_MANY = []       # _short_view's answer when a table must be iterated


cdef list _range_of(MemTable m, bytes lo, bytes hi, uint64_t seq):
    """``visible_range`` of ``[lo, hi)`` in ``m``, or None: it holds more
    than SHORT_CAP keys of it."""
    cdef list got = []
    if visible_range(m, lo, hi, seq, got, SHORT_CAP) < 0:
        return None
    return got


cdef list _taken(PyObject* key, PyObject* ver):
    """``[(key, tag, value)]`` of a key and its Version found by
    ``prefix_one`` (``[]`` when ``ver`` is NULL)."""
    cdef Version v
    if ver == NULL:
        return []
    v = <Version>ver
    return [(<object>key, pack_tag(v.seq, v.kind), v.value)]


cdef list _visible(list merged, Py_ssize_t limit):
    """The ``(user key, value)`` of the first ``limit`` values of the merged
    ``(user key, tag, value)`` (tombstones dropped)."""
    cdef list out = []
    cdef tuple e
    if merged is not None:
        for e in merged:
            if len(out) == limit:
                break
            if (<uint64_t>e[1] & 0xFF) == KIND_VALUE:
                out.append((e[0], e[2]))
    return out


cdef list _merge(list a, list b):
    """Two ascending lists of ``(user key, tag, value)`` as one: of a user key
    in both, the entry with the larger tag (the newer)."""
    cdef Py_ssize_t i = 0, j = 0, na, nb
    cdef list out
    cdef tuple x, y
    cdef int c
    if not b:
        return a
    if a is None or not a:
        return b
    na, nb = len(a), len(b)
    out = []
    while i < na and j < nb:
        x = <tuple>a[i]
        y = <tuple>b[j]
        c = cmp_user(<const unsigned char*>PyBytes_AS_STRING(x[0]), PyBytes_GET_SIZE(x[0]),
                     <const unsigned char*>PyBytes_AS_STRING(y[0]), PyBytes_GET_SIZE(y[0]))
        if c < 0:
            out.append(x)
            i += 1
        elif c > 0:
            out.append(y)
            j += 1
        else:
            out.append(x if <uint64_t>x[1] > <uint64_t>y[1] else y)
            i += 1
            j += 1
    out.extend(a[i:])
    out.extend(b[j:])
    return out
