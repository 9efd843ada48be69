"""The region server: tables as sorted lists of regions, routing, meta,
background flush / split / garbage collection.

Directory layout (under the server's ``path``)::

    LOCK              exclusive lock: one server per directory
    META              the catalogue (format in regions/meta.py)
    regions/r<id>/    one lsm store per region (and per split parent still
                      referred to by its daughters)

Routing is a bisect over the start keys of a table's regions, in C (the
server's ``Router``, ext/regions/_router.pyx; the regions are
ext/regions/_region.pyx's).  A table's ``layout`` (start keys, regions) is
replaced whole under the server lock and read without it, so lookups never
wait for a lock.

Thread-safety: every public method may be called from any thread.  Reads and
writes of one region never wait for another region; a region being split
makes its own operations wait briefly (then they go to the right daughter).
Lock order: ``table.split_lock`` before ``server._lock``; a region's gate is
never held while taking either.
"""
import bisect
import itertools
import json
import logging
import os
import re
import threading
import time

import lsm
import lsm.memfs
from lsm.cache import BlockCache, SharedTables
from lsm.purepython import bind_c_calls, c_call

from . import procedure
from .adjust import HOT_REASON, adjust_split_point
from .check import check_server
from .descriptors import DescriptorBudget, raise_nofile_limit
from .errors import (HotPartitionError, PartialWriteError, ServerClosedError, SplitError,
                     TableExistsError, UnknownRegionError, UnknownTableError)
from .maintenance import Maintenance
from .meta import META_FILE, Meta, RegionRecord, region_dir_name
from .metrics import RateTracker, SplitHistory
from .options import ServerOptions
from .policy import jitter_rate
from ._region import Region
from ._router import FIRST_CHUNK as _FIRST_CHUNK, MAX_CHUNK as _MAX_CHUNK, Router, Table, \
    check_key as _check_key, split_pairs
from .reports import ServerReports, region_info

__all__ = ["RegionServer", "check_table_name"]

log = logging.getLogger("regions")

# up to 511: a Tablestore table's name has up to 255, and the layer above
# names its helper tables after it ("<table>.stream", "<table>.search.<index>")
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,510}\Z")


def check_table_name(name) -> None:
    """Raise TypeError/ValueError naming what is wrong with a region server's
    table name (tools check it before they make a store)."""
    if not isinstance(name, str):
        raise TypeError(f"table name must be a str, got {type(name).__name__}")
    if not _TABLE_NAME.match(name):
        raise ValueError(f"table name {name!r} is invalid: 1-511 characters of letters, "
                         "digits, '_', '.', '-', not starting with a digit, '.' or '-'")
_bisect_right = bisect.bisect_right
_UNCHANGED = object()     # configure_table: argument not given


class _Hooks:
    """Per-table runtime hooks (not persisted).  The lsm stores of the table
    hold ``filter_factory``, which reads the current hook at every compaction,
    so a hook set after a store opened still takes effect."""

    def __init__(self):
        self.split_boundary = None
        self.compaction_filter_factory = None
        self.prefix_extractor = None

    def filter_factory(self):
        # None: no filter for this compaction (lsm skips the per-entry call)
        f = self.compaction_filter_factory
        return f() if f is not None else None


_chain = itertools.chain.from_iterable


def _check_bound(key, name):
    if key is not None:
        _check_key(key, name)


class _SplitHost:
    """The narrow view of the server that the split procedure, the janitor,
    maintenance and the checker use (procedure.py lists the interface)."""

    def __init__(self, server):
        self._s = server
        self.lock = server._lock
        self.fs = server._fs
        self.busy_wait_seconds = server.options.busy_wait_seconds
        self.regions_root = os.path.join(server.path, "regions")
        self.split_history = server._split_history

    @property
    def closed(self):
        return self._s._closed

    def tables(self):
        return list(self._s._tables.values())

    def serves(self, table, region=None):
        """True while ``table`` is open (and ``region`` one of its regions)."""
        return (self._s._tables.get(table.name) is table
                and (region is None or region in table.layout[1]))

    def meta_doc(self):
        return self._s._meta.doc

    def update_meta(self, change):
        with self._s._lock:
            self._s._meta.update(change)

    def open_store(self, table, region_id, **changes):
        return self._s._open_store(table, region_id, **changes)

    def create_store(self, table, region_id, views, last_sequence):
        return self._s._create_store(table, region_id, views, last_sequence)

    def make_region(self, table, region_id, start, end, db):
        return self._s._make_region(table, region_id, start, end, db)

    def replace_region(self, table, parent, daughters):
        with self._s._lock:
            regs = table.layout[1]
            i = regs.index(parent)
            regs = regs[:i] + list(daughters) + regs[i + 1:]
            table.layout = ([r.start for r in regs], regs)

    def region_dir(self, region_id):
        return self._s._region_path(region_id)

    def remove_region_dir(self, region_id):
        self.fs.rmtree(self.region_dir(region_id), missing_ok=True)

    def region_stats(self, r):
        return self._s._stats(r)

    def with_store(self, r, fn):
        self._s._with_store(r, fn)

    def split_point(self, table, r):
        return self._s._split_point(table, r, None)

    def admit_stores(self, more, what):
        with self._s._lock:
            self._s._admit_stores(more, what)


class RegionServer(ServerReports):
    """Hosts tables of regions in one directory.  Use ``RegionServer.open``.

    Its single-key data operations (``put``, ``get``, ``delete``, ``write``,
    ``read_range``, ``read_ranges``) are C: its router's (``_router``, a
    ``regions._router.Router``), as an ``lsm.DB``'s are its write and read
    paths'.  Each is declared below with ``@c_call("_router")``
    (lsm/purepython.py), which binds it on the open server to the router's
    method of the same name: a call is one C call, no Python frame.  The
    method's docstring is the operation's; its body makes the same call,
    and runs only under LSM_REGIONS_PUREPYTHON.  The router holds the
    tables (read here as ``_tables``) and calls back only into the slow
    paths this class hands it at construction: ``_enter_slow``,
    ``_write_parts`` and ``scan``."""

    # -- lifecycle --------------------------------------------------------
    @staticmethod
    def exists(path) -> bool:
        """Whether ``path`` holds a server's store (its meta file), which
        ``open`` opens rather than creates: tools that only read check it
        first, so that a mistyped path does not become an empty store."""
        return os.path.isfile(os.path.join(os.fspath(path), META_FILE))

    @classmethod
    def open(cls, path, options: ServerOptions = None) -> "RegionServer":
        """Open (creating if missing) the server at ``path``; recovers any
        split a crash interrupted and deletes orphan region directories.

        ``path`` None: a fresh, empty server in memory (lsm/memfs.py): the
        same code paths with nothing on disk and no durability, released at
        ``close()``."""
        options = options if options is not None else ServerOptions()
        if not isinstance(options, ServerOptions):
            raise TypeError(f"options must be a ServerOptions, got {type(options).__name__}")
        options.validate()
        path, options, memory = lsm.memfs.open_in_memory(path, options)
        try:
            return cls(os.path.abspath(os.fspath(path)), options, memory)
        except BaseException:
            if memory is not None:
                memory.clear()
            raise

    def __init__(self, path, options, memory=None):
        self.path = path
        self.options = options
        self._memory = memory       # the MemoryFileSystem of open(None), emptied at close
        self._fs = options.fs if options.fs is not None else lsm.fs.OSFileSystem()
        self._block_cache = None      # shared by every region's store (see _store_options)
        self._pacer = lsm.CompactionPacer()     # likewise: compaction pacing is per server
        # one descriptor budget and one table cache for every region (regions/descriptors.py)
        limit = raise_nofile_limit() if memory is None else None
        self._descriptors = DescriptorBudget(limit, options.descriptor_reserve)
        self._shared_tables = SharedTables(options.max_open_tables or min(
            32768, max(1000, (limit or 0) - self._descriptors.reserve)))
        self._policy = options.make_policy()
        self._lock = threading.RLock()
        self._router = Router(self._enter_slow, self._write_parts, self.scan)
        self._tables = self._router.tables   # changed only through the router: it caches a location
        bind_c_calls(self)      # each method declared @c_call below becomes its router's
        self._closed = False
        self._opened_at = time.time()
        self._split_history = SplitHistory()
        self._rates = RateTracker()
        self._fs.makedirs(os.path.join(path, "regions"))
        self._file_lock = self._fs.lock(os.path.join(path, "LOCK"))
        try:
            self._meta = Meta.open(self._fs, path)
            if not self._fs.exists(self._meta.path):
                self._meta.update(lambda doc: None)
            procedure.recover(self._meta)
            self._remove_orphans()
            for name, rec in self._meta.doc.tables.items():
                t = Table(name, _Hooks())
                regs = [self._make_region(t, r.id, r.start, r.end, self._open_store(t, r.id))
                        for r in rec["regions"]]
                t.layout = ([r.start for r in regs], regs)
                self._router.put_table(name, t)
        except BaseException:
            self._close_regions()
            self._file_lock.release()
            raise
        self._host = _SplitHost(self)
        self._maintenance = Maintenance(self._host, options, self._policy)
        self._maintenance.start()

    def close(self) -> None:
        """Stop background work, close every region.  Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._maintenance.stop()
        self._close_regions()
        self._file_lock.release()
        if self._memory is not None:
            self._memory.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _close_regions(self):
        for t in list(self._tables.values()):
            with t.split_lock:
                for r in t.layout[1]:
                    r.close(self.options.busy_wait_seconds)
        self._router.clear_tables()

    # -- stores -----------------------------------------------------------
    def _region_path(self, region_id: int) -> str:
        return os.path.join(self.path, "regions", region_dir_name(region_id))

    def _store_options(self, table, **changes):
        base = self.options.lsm_options if self.options.lsm_options is not None else lsm.Options()
        if self._block_cache is None:
            # One block cache for every region of the server (HBase's
            # BlockCache is per RegionServer): the budget does not grow with
            # the number of regions.
            self._block_cache = base.block_cache or BlockCache(base.block_cache_bytes)
        return base.copy(memtable_bytes=self.options.memtable_bytes, sync=self.options.sync,
                         fs=self._fs, compaction_filter_factory=table.hooks.filter_factory,
                         prefix_extractor=table.hooks.prefix_extractor,
                         block_cache=self._block_cache, shared_tables=self._shared_tables,
                         compaction_pacer=base.compaction_pacer or self._pacer,
                         **changes)

    def _open_stores(self) -> int:
        """Region stores open now (split parents kept for their daughters are closed)."""
        return sum(len(t.layout[1]) for t in self._tables.values())

    def _admit_stores(self, more: int, what: str) -> None:
        """Raise DescriptorBudgetError, before anything is made, if ``more``
        stores would pass the descriptor budget."""
        self._descriptors.check(self._open_stores(), more, what)

    def _open_store(self, table, region_id, **changes):
        return lsm.DB.open(self._region_path(region_id), self._store_options(table, **changes))

    def _create_store(self, table, region_id, views, last_sequence):
        """A daughter's store: ``views`` of its parent's tables; its sequence
        numbers continue above the parent's ``last_sequence``.  Its automatic
        compactions start off: the split procedure turns them on when it is
        done (its first compactions, rewriting the views, would otherwise
        compete with the split's own steps for the GIL)."""
        return lsm.DB.create_from_views(self._region_path(region_id), views,
                                        self._store_options(table, auto_compactions=False),
                                        last_sequence=last_sequence)

    def _make_region(self, table, region_id, start, end, db):
        rate = jitter_rate(region_id, getattr(self._policy, "jitter", 0.0))
        return Region(table.name, region_id, start, end, db, rate)

    def _remove_orphans(self):
        """Delete region directories meta does not know (crash leftovers)."""
        keep = {region_dir_name(i) for i in self._meta.doc.region_ids()}
        root = os.path.join(self.path, "regions")
        for name in self._fs.listdir(root):
            if name not in keep:
                log.warning("removing orphan region directory %s", name)
                self._fs.rmtree(os.path.join(root, name), missing_ok=True)

    # -- tables -----------------------------------------------------------
    def _table(self, name) -> Table:
        t = self._tables.get(name)
        if t is None:
            if self._closed:
                raise ServerClosedError("the region server is closed")
            if not isinstance(name, str):
                raise TypeError(f"table name must be a str, got {type(name).__name__}")
            raise UnknownTableError(f"table {name!r} does not exist")
        return t

    def _check_open(self):
        if self._closed:
            raise ServerClosedError("the region server is closed")

    def create_table(self, name: str, split_keys=None, attributes=None) -> None:
        """Create a table pre-split at ``split_keys`` (sorted, unique, non-empty
        bytes; n keys give n + 1 regions) with the JSON object ``attributes``
        stored atomically beside it.  Bad input raises TypeError/ValueError
        naming it, and an existing name TableExistsError; nothing is created."""
        check_table_name(name)
        keys = self._check_split_keys(split_keys)
        attributes = self._check_attributes(attributes)
        self._check_open()
        bounds = [b""] + keys + [b""]
        with self._lock:
            if name in self._tables:
                raise TableExistsError(f"table {name!r} already exists")
            self._admit_stores(len(bounds) - 1, f"creating table {name!r} with {len(bounds) - 1} "
                                                f"region{'s' if len(bounds) > 2 else ''}")
            t = Table(name, _Hooks())
            first = self._meta.doc.next_region_id
            regs = []
            try:
                for i in range(len(bounds) - 1):
                    db = self._open_store(t, first + i)
                    regs.append(self._make_region(t, first + i, bounds[i], bounds[i + 1], db))

                def change(doc):
                    doc.next_region_id = first + len(regs)
                    doc.tables[name] = {"attributes": attributes, "regions": [
                        RegionRecord(r.id, r.start, r.end) for r in regs]}
                self._meta.update(change)
            except BaseException:
                for r in regs:
                    r.db.close()
                for i in range(len(bounds) - 1):
                    self._fs.rmtree(self._region_path(first + i), missing_ok=True)
                raise
            t.layout = (bounds[:-1], regs)
            self._router.put_table(name, t)
        log.info("created table %r with %d regions", name, len(regs))

    @staticmethod
    def _check_split_keys(split_keys):
        if split_keys is None:
            return []
        if not isinstance(split_keys, (list, tuple)):
            raise TypeError(f"split_keys must be a list of bytes, got {type(split_keys).__name__}")
        for i, k in enumerate(split_keys):
            if type(k) is not bytes:
                raise TypeError(f"split_keys[{i}] must be bytes, got {type(k).__name__}")
            if not k:
                raise ValueError(f"split_keys[{i}] is empty (b'' already bounds the first region)")
            if i and k <= split_keys[i - 1]:
                what = "a duplicate of" if k == split_keys[i - 1] else "not after"
                raise ValueError(f"split_keys[{i}] = {k!r} is {what} split_keys[{i - 1}] = "
                                 f"{split_keys[i - 1]!r}: split keys must be sorted and unique")
        return list(split_keys)

    @staticmethod
    def _check_attributes(attributes):
        if attributes is None:
            return {}
        if not isinstance(attributes, dict):
            raise TypeError(f"attributes must be a dict, got {type(attributes).__name__}")
        try:
            return json.loads(json.dumps(attributes, allow_nan=False))
        except (TypeError, ValueError) as e:
            raise TypeError(f"attributes must be JSON-serialisable: {e}") from None

    def table_attributes(self, name: str) -> dict:
        """A copy of the table's attributes."""
        self._table(name)
        with self._lock:
            return json.loads(json.dumps(self._meta.doc.tables[name]["attributes"]))

    def set_table_attributes(self, name: str, attributes: dict) -> None:
        """Replace the table's attributes (one atomic meta write)."""
        if not isinstance(attributes, dict):
            raise TypeError(f"attributes must be a dict, got {type(attributes).__name__}")
        attributes = self._check_attributes(attributes)
        with self._lock:
            self._table(name)
            self._meta.update(lambda doc: doc.tables[name].__setitem__("attributes", attributes))

    def delete_table(self, name: str) -> None:
        """Delete the table and all its files (meta first: a crash leaves orphans only)."""
        t = self._table(name)
        with t.split_lock:
            with self._lock:
                if self._tables.get(name) is not t:
                    raise UnknownTableError(f"table {name!r} does not exist")
                parents = [p["id"] for p in self._meta.doc.parents if p["table"] == name]

                def change(doc):
                    del doc.tables[name]
                    doc.parents = [p for p in doc.parents if p["table"] != name]
                self._meta.update(change)
                self._router.pop_table(name)
            for r in t.layout[1]:
                r.close(self.options.busy_wait_seconds)
            for rid in [r.id for r in t.layout[1]] + parents:
                self._fs.rmtree(self._region_path(rid), missing_ok=True)
        log.info("deleted table %r", name)

    def has_table(self, name: str) -> bool:
        return name in self._tables

    def table_layout(self, name: str) -> tuple:
        """The table's ``(start keys, regions)`` (each region has ``id``): replaced
        whole when a region splits, never changed in place, so an identity
        check tells a caller whether the regions changed since it last looked."""
        return self._table(name).layout

    def list_tables(self) -> list:
        self._check_open()
        return sorted(self._tables)

    def configure_table(self, name: str, split_boundary=_UNCHANGED,
                        compaction_filter_factory=_UNCHANGED,
                        prefix_extractor=_UNCHANGED) -> None:
        """Set the table's runtime hooks (not persisted; call after every open).

        ``split_boundary(key) -> bytes`` maps a row key to the first key of its
        indivisible group (see regions/adjust.py); ``compaction_filter_factory``
        is handed to every region store of the table, present and future, and
        so is ``prefix_extractor`` (``lsm.Options.prefix_extractor``: what a
        row's key prefix is, for the memtables' prefix index).  An argument
        left out keeps the current hook; None removes it.
        """
        for arg, what in ((split_boundary, "split_boundary"),
                          (compaction_filter_factory, "compaction_filter_factory")):
            if arg is not _UNCHANGED and arg is not None and not callable(arg):
                raise TypeError(f"{what} must be callable or None, got {type(arg).__name__}")
        if (prefix_extractor is not _UNCHANGED and prefix_extractor is not None
                and not isinstance(prefix_extractor, lsm.PrefixExtractor)):
            raise TypeError("prefix_extractor must be an lsm.PrefixExtractor or None, "
                            f"got {type(prefix_extractor).__name__}")
        t = self._table(name)
        hooks = t.hooks
        if split_boundary is not _UNCHANGED:
            hooks.split_boundary = split_boundary
        if compaction_filter_factory is not _UNCHANGED:
            hooks.compaction_filter_factory = compaction_filter_factory
        if prefix_extractor is not _UNCHANGED:
            # Under the split lock, no daughter store is being made: each
            # store either is in the layout now or will read the hook.
            with t.split_lock:
                hooks.prefix_extractor = prefix_extractor
                for r in t.layout[1]:
                    set_pe = getattr(r.db, "set_prefix_extractor", None)
                    if set_pe is not None:
                        try:
                            set_pe(prefix_extractor)
                        except lsm.ClosedError:     # closing with the server: no reads left
                            pass

    # -- data -------------------------------------------------------------
    # Each runs as its router's method of the same name (the class docstring).
    @c_call("_router")
    def put(self, table: str, key: bytes, value: bytes, sync=None) -> None:
        """Set ``key`` of ``table`` to ``value`` (``sync``: as ``lsm.DB.put``)."""
        self._router.put(table, key, value, sync)

    @c_call("_router")
    def get(self, table: str, key: bytes):
        """The value of ``key`` of ``table``, or None."""
        return self._router.get(table, key)

    @c_call("_router")
    def delete(self, table: str, key: bytes, sync=None) -> None:
        """Delete ``key`` of ``table`` (no error if it is absent)."""
        self._router.delete(table, key, sync)

    @c_call("_router")
    def write(self, table: str, pairs: list, sync=None) -> None:
        """Apply ``pairs``, a list of ``(key, value)`` tuples (``value`` None:
        delete ``key``), in order: atomic when its keys lie in one region
        (always true for one row: one WAL record, ``lsm.DB.write_pairs``);
        a list spanning regions is applied region by region, each part
        atomic (``_write_parts``).  A bad pair raises TypeError or
        ValueError before anything is written."""
        self._router.write(table, pairs, sync)

    @c_call("_router")
    def read_range(self, table: str, start: bytes, end: bytes) -> list:
        """``list(scan(table, start, end))``, in one read of one store when the
        range lies in one region and is shorter than a scan chunk (a row)."""
        return self._router.read_range(table, start, end)

    @c_call("_router")
    def read_ranges(self, table: str, ranges: list) -> list:
        """``[read_range(table, start, end) for start, end in ranges]``, each
        region's ranges read in one call of its store, at one sequence (how
        BatchGetRow reads its rows)."""
        return self._router.read_ranges(table, ranges)

    def _enter(self, table, key, write):
        """Route to the region holding ``key`` and enter its gate (``write``: as
        ``Region.enter``'s): the router's, in C (one bisect and the gate),
        falling back to ``_enter_slow``."""
        return self._router.enter(table, key, write)

    def _enter_slow(self, table, key, write, before=False):
        """``_enter`` for every other case: an unknown table, a region in
        transition (wait, then route again), and ``before``: the region
        holding the keys just below ``key`` (None: the end), for reverse scans."""
        while True:
            starts, regs = self._table(table).layout
            if before:
                i = len(regs) - 1 if key is None else bisect.bisect_left(starts, key) - 1
            else:
                i = _bisect_right(starts, key) - 1
            r = regs[i]
            if r.enter(write):
                return r
            if self._closed:
                raise ServerClosedError("the region server is closed")
            r.wait_transition(self.options.busy_wait_seconds)

    def _write_parts(self, table: str, pairs: list, sync=None) -> None:
        """``write`` (the router's, in C, for pairs inside one region) for
        everything else, its pairs checked: empty, an unknown table, or keys
        in several regions (applied region by region, cut at each region's
        end by ``split_pairs``)."""
        if not pairs:
            self._table(table)
            return
        applied = []
        while pairs is not None:
            r = self._enter(table, pairs[0][0], True)
            try:
                # the part in the region (all the pairs when all lie in it), and the rest
                mine, pairs = split_pairs(pairs, r.start, r.end or None)
                r.db.write_pairs(mine, sync)
                if len(mine) > 1:
                    r.count_writes(len(mine) - 1)
            except Exception as e:
                if not applied:
                    raise
                raise PartialWriteError(
                    f"a batch of table {table!r} failed in region {r.id} after "
                    f"{len(applied)} of its keys were applied: {e}", frozenset(applied)) from e
            finally:
                r.exit()
            applied += [key for key, _ in mine]

    def scan(self, table: str, start=None, end=None, reverse=False, expect=0):
        """Iterate ``(key, value)`` over ``[start, end)`` of the table in key order
        (descending with ``reverse``), across regions and through splits.
        ``expect``: how many entries the caller expects to take (a GetRange
        page: its rows and the next start's); the first chunks add up to it,
        so a caller that stops there has read no entry past it.

        Not a point-in-time snapshot across regions: rows are read in chunks,
        each from one region under its gate, so a long scan never holds a
        split back.  Every key present for the whole scan is returned once.
        """
        _check_bound(start, "start")
        _check_bound(end, "end")
        self._table(table)
        # Chunks flattened by itertools.chain, in C: a generator that yielded
        # each entry cost a resumption an entry (~9% of a GetRange page).
        if reverse:
            return _chain(self._chunks_reverse(table, start or b"", end, expect))
        return _chain(self._chunks_forward(table, start or b"", end, expect))

    def _chunks_forward(self, table, lo, hi, expect=0):
        """The entries of ``[lo, hi)``, ascending, as lists (scan's chunks),
        none of the first ones past ``expect`` entries in all (see ``scan``)."""
        chunk = _FIRST_CHUNK
        while hi is None or lo < hi:
            r = self._enter(table, lo, False)
            n = min(chunk, expect) if expect > 0 else chunk
            try:
                sub_hi = hi if not r.end or (hi is not None and hi < r.end) else r.end
                items = r.db.scan_chunk(lo or None, sub_hi, n)
            finally:
                r.exit()
            expect -= len(items)
            yield items
            if len(items) == n:
                lo = items[-1][0] + b"\x00"
                chunk = min(chunk * 2, _MAX_CHUNK)
            elif not r.end or (hi is not None and r.end >= hi):
                return
            else:
                lo = r.end

    def _chunks_reverse(self, table, lo, hi, expect=0):
        """The entries of ``[lo, hi)``, descending, as lists (scan's chunks),
        none of the first ones past ``expect`` entries in all (see ``scan``)."""
        chunk = _FIRST_CHUNK
        while hi is None or lo < hi:
            r = self._enter_slow(table, hi, False, before=True)
            n = min(chunk, expect) if expect > 0 else chunk
            try:
                sub_lo = max(lo, r.start) or None
                items = r.db.scan_chunk(sub_lo, hi, n, reverse=True)
            finally:
                r.exit()
            expect -= len(items)
            yield items
            if len(items) == n:
                hi = items[-1][0]
                chunk = min(chunk * 2, _MAX_CHUNK)
            elif r.start <= lo:
                return
            else:
                hi = r.start

    # -- operations -------------------------------------------------------
    def flush_all(self) -> None:
        """Flush every region's memtable to table files (and wait)."""
        self._check_open()
        for t in list(self._tables.values()):
            for r in t.layout[1]:
                self._with_store(r, lambda db: db.flush(wait=True))

    def compact(self, table: str) -> None:
        """Compact every region of the table fully (this also rewrites the
        views daughters hold of their parents' files)."""
        for r in self._table(table).layout[1]:
            self._with_store(r, lambda db: db.compact_range())

    def _with_store(self, r, fn):
        """Run ``fn(r.db)`` under the gate; a region that split meanwhile is
        skipped (its daughters are in the layout the caller reads next)."""
        if r.enter(None):
            try:
                fn(r.db)
            finally:
                r.exit()

    def split_region(self, table: str, region_id: int, split_key=None) -> list:
        """Split one region now, at ``split_key`` or at its middle key; the point
        is moved by the table's split boundary like an automatic one.  Returns
        the daughters' ``RegionInfo``; ``SplitError`` if it cannot split."""
        if isinstance(region_id, bool) or not isinstance(region_id, int):
            raise TypeError(f"region_id must be an int, got {type(region_id).__name__}")
        _check_bound(split_key, "split_key")
        t = self._table(table)
        with t.split_lock:
            self._check_open()
            r = next((r for r in t.layout[1] if r.id == region_id), None)
            if r is None or self._tables.get(table) is not t:
                raise UnknownRegionError(f"table {table!r} has no region {region_id}")
            if split_key is not None and not (split_key > r.start and (not r.end or split_key < r.end)):
                raise ValueError(f"split_key {split_key!r} is not strictly inside region "
                                 f"{region_id} [{r.start!r}, {r.end!r})")
            point = self._split_point(t, r, split_key)
            daughters = procedure.SplitProcedure(self._host, t, r, point).run()
        return [region_info(d) for d in daughters]

    def _split_point(self, t, r, proposed):
        """The adjusted split key of region ``r`` (SplitError with the reason if none)."""
        if not r.enter(None):
            raise SplitError(f"region {r.id} of {t.name!r} is not serving")
        try:
            if proposed is None:
                proposed = r.db.middle_key(r.start or None, r.end or None)
                if proposed is None:
                    raise SplitError(f"region {r.id} of {t.name!r} has too little data to split")

            def keys_after(k):
                return (key for key, _ in r.db.scan(k + b"\x00", r.end or None))
            first = next((k for k, _ in r.db.scan(r.start or None, r.end or None)), None)
            point, reason = adjust_split_point(proposed, r.start, r.end,
                                               t.hooks.split_boundary, keys_after, first)
        finally:
            r.exit()
        if point is None:
            error = HotPartitionError if reason.startswith(HOT_REASON) else SplitError
            raise error(f"region {r.id} of {t.name!r} cannot split: {reason}")
        return point

    # -- background work and verification ----------------------------------
    def maintain(self) -> None:
        """One maintenance pass (maintenance.py): flush the largest memtable
        while over the global budget, split the regions the policy selects,
        delete split parents nothing refers to.  The background thread calls
        this every ``maintenance_interval``; with ``background_workers=0``
        tests call it, and splits then run inline."""
        self._maintenance.run_pass()

    def check(self) -> None:
        """Verify the server's invariants (check.py); ``InvariantError`` lists
        what is broken.  Waits for splits in progress to finish."""
        self._check_open()
        check_server(self._host)

