"""Secondary indexes: index tables kept in step with their base table.

An index is a table of regions like any other (pre-split, auto-split, read
with the row API under the index's name), written only by its maintainer,
the ``Indexer`` here.  Its rows are whole rows: the index primary key (the
index columns, then the base table's primary-key columns not already among
them: the service's auto-completion) and the index's attribute columns (its
predefined columns), with the base cells' values and timestamps.  A base row
whose index columns are not all present has no entry (sparse).

One change feed per base table
------------------------------
Every write to a table with indexes first appends the written row's key to
the table's *feed*, ``<table>.feed``: a region-server table of ``seq ->
row key + time`` (seq: 8 bytes big-endian, increasing).  The feed entry is
written (handed to the OS, or fsynced with sync) *before* the base write, so
no acknowledged base write lacks one; a feed entry whose base write never
happened (a crash in between) is harmless, because applying an entry never
trusts what the write was: it *reconciles* the row.

Reconciling row R of index I, under R's row lock: read R's current state from
the base table, derive the index row it wants (or none), look up the index
key I last wrote for R in ``<index>.refs`` (base row key -> index row key),
delete that index row if it is not the wanted one, write the wanted one, then
record it in refs.  The index write comes before the refs write, so refs is
never ahead of the index; a crash anywhere leaves the entry in the feed and
the next reconcile finishes the job.  Reconciling is idempotent and depends
only on the current state, so entries can be applied more than once, in any
order, and the back-fill can run beside live writes.

- A local index (``IUM_SYNC_INDEX``) is reconciled on the writer's thread,
  under the row lock, before the write is acknowledged: a read right after
  the write sees it.  Its data lives in its own table of regions, which keeps
  it a table like any other (reads, splits, console); it is synchronous, not
  co-located.
- A global index (``IUM_ASYNC_INDEX``) is reconciled by one background thread
  per client that follows every feed; the lag (from the feed entry's time to
  its application) is measured (``Indexer.lag_ms``).
- A feed entry is deleted once every index of its table has applied it; the
  feed's remaining entries are the durable position.  At open, every
  remaining entry is applied before the client is returned, so after a crash
  both kinds of index again hold exactly the acknowledged state.

The feed is per table, not per region: a split of the base table (or of an
index) changes nothing for it.

Catalogue: the base table's schema record lists its indexes (schema.py,
``indexes``); each index table's attributes name its base and its sync phase
(``ISP_FULL`` while ``include_base_data`` back-fills, with the back-fill's
cursor, then ``ISP_INCR``).  Creating an index makes its tables first and
lists it in the base schema last; dropping unlists it first and deletes its
tables last: a crash in between leaves unlisted tables, which ``open``
deletes.
"""
import collections
import itertools
import logging
import struct
import threading
import time

from regions.errors import UnknownTableError

from . import _cellcodec, _rowcodec, cells, pkcodec
from .errors import OTSClientError, service_error
from .metadata import SecondaryIndexMeta, SecondaryIndexType
from .reads import row_entries
from .schema import ATTRIBUTE, Schema
from .search import SEARCH_ATTRIBUTE, SEARCH_INFIX, Engine, SearchIndexDef, engine_path, remove_engine
from .streams import LOG_SUFFIX, STREAM_SPEC, StreamLog, encode_entries
from .validate import check_name

__all__ = ["IndexDef", "Indexer", "check_index_meta", "check_index_shape", "MAX_INDEXES", "MAX_INDEX_COLUMNS",
           "MAX_INDEX_ATTRIBUTES", "FEED_SUFFIX", "REFS_SUFFIX", "INDEX_ATTRIBUTE"]

log = logging.getLogger("regions.tablestore")

MAX_INDEXES = 5              # per base table
MAX_INDEX_COLUMNS = 4        # index columns chosen by the user
MAX_INDEX_PK = 8             # index primary key after auto-completion
MAX_INDEX_ATTRIBUTES = 32    # attribute (predefined) columns of an index
FEED_SUFFIX = ".feed"        # '.' is not in Tablestore names: no clash with a user table
REFS_SUFFIX = ".refs"
INDEX_ATTRIBUTE = "index"    # the key of an index table's own record in its attributes
_INDEX_KEY_TYPES = ("STRING", "INTEGER", "BINARY")
_SEQ = struct.Struct(">Q")
_ENTRY_TIME = struct.Struct("<q")
_STREAM_MARK = b"\x01"      # after the row key: the entry carries a stream's part
_FEED_BATCH = 256            # feed entries the maintainer applies per pass
_CURSOR_EVERY = 1000         # back-filled rows between two saved cursors
# a search index's back-fill commits (and saves its cursor) at most this
# often: each commit is a segment of the engine, and a search visits every
# segment (a load in 1,000-row commits left 6 segments of 20,000 rows, and a
# sorted search took 2.4x the time it takes on one; every 2 s left 4 of
# 100,000); a kill loses at most this much of a back-fill's work
_SEARCH_COMMIT_SECONDS = 10.0
# Feed entries a table's global indexes may lag behind before its writers
# wait for the maintainer (admit): the lag stays bounded at any write rate.
MAX_BACKLOG = 1000
_ADMIT_WAIT_S = 1.0          # at most, per write: a stuck maintainer slows writes, never stops them


class IndexDef:
    """One secondary index as the base schema lists it: ``name``, ``local``
    (a local index), ``columns`` (the index columns the user chose), ``pk``
    (the index primary key: ``columns`` then the base key's other columns),
    ``attributes`` (its attribute columns)."""

    __slots__ = ("name", "local", "columns", "pk", "attributes", "split_keys")

    def __init__(self, name, local, columns, attributes, base_pk):
        self.name, self.local = name, bool(local)
        self.split_keys = None   # the region split keys its table is created with
        self.columns, self.attributes = list(columns), list(attributes)
        self.pk = self.columns + [n for n in base_pk if n not in self.columns]

    def to_json(self) -> dict:
        return {"name": self.name, "type": "local" if self.local else "global",
                "columns": list(self.columns), "attributes": list(self.attributes)}

    @classmethod
    def from_json(cls, data, base_pk) -> "IndexDef":
        return cls(data["name"], data["type"] == "local", data["columns"], data["attributes"],
                   base_pk)

    def schema(self, base: Schema) -> Schema:
        """The index table's schema: its key typed from the base table's key and
        predefined columns, its attributes the predefined ones it carries."""
        types = dict(zip(base.names, base.types))
        types.update(base.defined)
        return Schema(self.pk, [types[n] for n in self.pk], None, base.ttl, 1, base.deviation,
                      True, [(n, types[n]) for n in self.attributes])

    def meta(self, phase) -> SecondaryIndexMeta:
        """As DescribeTable lists it: the declared index columns (not the
        auto-completed key), the attribute columns in declared order."""
        m = SecondaryIndexMeta(self.name, list(self.columns), list(self.attributes),
                               SecondaryIndexType.LOCAL_INDEX if self.local
                               else SecondaryIndexType.GLOBAL_INDEX)
        m.index_update_mode = "IUM_SYNC_INDEX" if self.local else "IUM_ASYNC_INDEX"
        m.index_sync_phase = phase
        return m


def check_index_shape(index_meta) -> None:
    """The checks the service makes before it looks the table up (the Java
    SDK's tests: too many index columns on a missing table get this error)."""
    if not isinstance(index_meta, SecondaryIndexMeta):
        raise OTSClientError("index_meta should be an instance of SecondaryIndexMeta, not %s"
                             % index_meta.__class__.__name__)
    if not 1 <= len(index_meta.primary_key_names or ()) <= MAX_INDEX_COLUMNS:
        raise service_error("index_pk_count", limit=MAX_INDEX_COLUMNS)
    if len(index_meta.defined_column_names or ()) > MAX_INDEX_ATTRIBUTES:
        raise service_error("index_attribute_count", limit=MAX_INDEX_ATTRIBUTES)


def check_index_meta(base_name, base: Schema, index_meta, taken) -> IndexDef:
    """Validate ``index_meta`` (ours or the SDK's SecondaryIndexMeta) for the
    base table; ``taken``: names of every table and index in the instance.
    Returns the IndexDef; raises the service's error, changing nothing."""
    if not isinstance(index_meta, SecondaryIndexMeta):
        raise OTSClientError("index_meta should be an instance of SecondaryIndexMeta, not %s"
                             % index_meta.__class__.__name__)
    name = check_name(index_meta.index_name, "index")
    if name in taken:
        raise service_error("index_exists", name=name)
    try:
        local = SecondaryIndexType(int(index_meta.index_type)) == SecondaryIndexType.LOCAL_INDEX
    except (TypeError, ValueError):
        raise OTSClientError("index_type should be a SecondaryIndexType, not %r"
                             % (index_meta.index_type,)) from None
    columns = list(index_meta.primary_key_names or ())
    attributes = list(index_meta.defined_column_names or ())
    check_index_shape(index_meta)
    defined = dict(base.defined)
    seen = set()
    for col in columns + attributes:
        if not isinstance(col, str):
            raise OTSClientError("index column names should be str, not %s"
                                 % col.__class__.__name__)
        if col in seen:
            raise service_error("index_duplicated_column", index=name, column=col)
        seen.add(col)
    for col in columns:
        if col in base.names:
            continue
        if col not in defined:
            raise service_error("index_column_not_defined", index=name, column=col)
        if defined[col] not in _INDEX_KEY_TYPES:
            raise service_error("index_column_type", index=name, column=col, type=defined[col])
    for col in attributes:
        if col in base.names:
            raise service_error("index_attribute_is_pk", index=name, column=col)
        if col not in defined:
            raise service_error("index_column_not_defined", index=name, column=col)
    if local and columns[0] != base.names[0]:
        raise service_error("local_index_first_pk", index=name, column=base.names[0])
    index = IndexDef(name, local, columns, attributes, base.names)
    if len(index.pk) > MAX_INDEX_PK:
        raise service_error("index_pk_total", index=name, limit=MAX_INDEX_PK)
    if base.max_versions != 1:
        raise service_error("index_max_versions", table=base_name)
    if base.ttl != -1 and base.allow_update:
        raise service_error("index_ttl", table=base_name)
    return index


class _Table:
    """What the Indexer keeps of one base table with indexes or a stream."""

    __slots__ = ("name", "schema", "indexes", "feed", "seq", "position", "append_lock",
                 "lagging", "last_seq", "applied_seq", "stream", "inflight", "searches")

    def __init__(self, name, schema, indexes):
        self.name, self.schema, self.indexes = name, schema, indexes
        self.feed = name + FEED_SUFFIX
        self.seq = None          # itertools.count of the next feed seq, set at attach
        self.position = b""      # the first feed key the maintainer has not applied
        # Appends are serialised, so an entry is visible only after every
        # entry of a lower seq: the maintainer's position never skips one.
        self.append_lock = threading.Lock()
        self.lagging = False     # it has a global index (its entries wait for the maintainer)
        self.last_seq = self.applied_seq = 0   # the newest entry appended, the newest applied
        self.stream = None       # streams.StreamLog: the table's stream, if enabled
        self.searches = {}       # search index name -> search.Engine (search.py)
        # feed key -> (shard, row key, entries blob, stamp) of a write whose
        # records are not in the stream's log yet (under append_lock)
        self.inflight = {}

    def follows(self):
        """Whether the maintainer applies this table's feed: global indexes or
        search indexes (the writers apply local indexes and the stream)."""
        return bool(self.searches) or any(not i.local for i in self.indexes)

    def horizon(self):
        """The newest seq whose records, and every older one's, are in the
        stream's log: a reader may read up to it (streams.py)."""
        with self.append_lock:
            for key in self.inflight:
                return _SEQ.unpack(key)[0] - 1
            return self.last_seq


class Indexer:
    """Keeps every secondary index of a client's tables in step (see the module doc).

    ``server`` is the client's region server, ``locks`` its row-lock stripes,
    ``gens`` its write generations, ``schemas`` its dict of table schemas (an
    index table's is added and removed here), ``configure(name)`` sets a new
    index table up as the client's tables are.  Thread-safe; ``close`` stops
    its threads.
    """

    def __init__(self, server, locks, gens, schemas, configure):
        self.server, self.locks, self.gens, self.schemas = server, locks, gens, schemas
        self.configure = configure
        # index name -> its table's Schema.  ``schemas`` (what the client reads
        # through) gets it only once readable: not while it is ISP_FULL, as
        # the service refuses reads of an index building its base data.
        self.index_schemas = {}
        self.tables = {}             # base table name -> _Table (only tables with indexes)
        self.index_of = {}           # index name -> base table name
        self.phase = {}              # index name -> "ISP_FULL" | "ISP_INCR"
        self._mutex = threading.RLock()
        self._wake = threading.Condition(self._mutex)
        self._closed = False
        self._lags = collections.deque(maxlen=100_000)   # ms, of applied global entries
        self._backfills = {}         # index name -> Thread
        self._thread = None
        self._idle = False           # the maintainer waits for a write (after_write wakes it)
        self._opening = False        # open() runs: no maintainer yet
        self.search_defs = {}        # (base table, search index name) -> search.SearchIndexDef

    # -- the catalogue --------------------------------------------------------
    @staticmethod
    def index_defs(schema: Schema):
        return [IndexDef.from_json(d, schema.names) for d in schema.indexes]

    def open(self):
        """Load the catalogue from the server's tables, delete what a crash left
        half-made, apply every feed entry left, resume back-fills."""
        server = self.server
        names = set(server.list_tables())
        listed = {}
        for name in names:
            schema = self.schemas.get(name)
            if schema is not None and schema.indexes:
                for index in self.index_defs(schema):
                    listed[index.name] = name
        for name in sorted(names):
            if not server.has_table(name):
                continue
            attrs = server.table_attributes(name) or {}
            own = attrs.get(INDEX_ATTRIBUTE)
            if own is not None and listed.get(name) != own["base"]:
                log.warning("dropping index table %r: its base table %r does not list it",
                            name, own["base"])
                self._drop_tables(name)
        for name in sorted(set(server.list_tables())):
            searched = {n.partition(SEARCH_INFIX)[0] for n in names if SEARCH_INFIX in n}
            for suffix, owner in ((FEED_SUFFIX, lambda b: b in self.schemas and (
                                       self.schemas[b].indexes or self._stream_spec(b)
                                       or b in searched)),
                                  (REFS_SUFFIX, lambda i: i in listed),
                                  (LOG_SUFFIX, lambda b: self._stream_spec(b) is not None)):
                if name.endswith(suffix) and not owner(name[:-len(suffix)]):
                    server.delete_table(name)
        for index_name, base in listed.items():
            self.index_of[index_name] = base
        # The maintainer starts once every index is known and the feed left
        # is applied (before: it would find indexes without their schema).
        self._opening = True
        for base in sorted(set(listed.values())):
            self._attach(base, self.schemas[base])
        for base in sorted(b for b in self.schemas if b not in listed):
            spec = self._stream_spec(base)
            if spec is None:
                continue
            table = self._attach(base, self.schemas[base])
            table.stream = StreamLog.load(server, base, table.append_lock)
            if table.stream is None:     # enabled, but a crash came before its log was made
                table.stream = StreamLog.create(server, base, table.append_lock,
                                                spec["expiration"], spec["origin_columns"],
                                                table.last_seq + 1)
            # seqs go on from the stream's (its records outlive their feed entries)
            last = max(table.last_seq, table.stream.last_seq())
            table.seq = itertools.count(last + 1)
            table.last_seq = table.applied_seq = last
        self._open_searches(listed)
        for index_name, base in listed.items():
            if not server.has_table(index_name):     # listed but never made: make it now
                index = next(i for i in self.tables[base].indexes if i.name == index_name)
                self._make_tables(base, self.schemas[base], index, "ISP_FULL")
            else:
                self.index_schemas[index_name] = self.schemas.pop(index_name)
            own = server.table_attributes(index_name)[INDEX_ATTRIBUTE]
            self._set_phase(index_name, own.get("phase", "ISP_INCR"))
        for table in list(self.tables.values()):
            self._drain(table, None, table.indexes)   # a crash may have cut a local one short
        self._opening = False
        if any(t.follows() for t in self.tables.values()):
            self._ensure_thread()
        for index_name, phase in self.phase.items():
            if phase == "ISP_FULL":
                self._start_backfill(self.index_of[index_name], index_name)
        for (base, name), definition in self.search_defs.items():
            if definition.phase == "FULL":
                self._start_search_backfill(base, name)

    # -- search indexes (search.py) ---------------------------------------------
    def _open_searches(self, listed):
        """Load every search index (its record table), dropping those whose
        base table is gone."""
        found = {}
        for name in sorted(self.server.list_tables()):
            if SEARCH_INFIX not in name:
                continue
            record = (self.server.table_attributes(name) or {}).get(SEARCH_ATTRIBUTE)
            base = record and record["base"]
            if base is None or base not in self.schemas or base in listed:
                self.server.delete_table(name)
                continue
            found.setdefault(base, []).append(SearchIndexDef.from_json(record))
        for base, definitions in found.items():
            for definition in SearchIndexDef.settle(definitions):   # a switch cut short
                self.save_search(definition)
            for definition in definitions:
                self._attach_search(base, self.schemas[base], definition)

    def _attach_search(self, base, schema, definition):
        engine = Engine(definition, schema.names, engine_path(self.server, definition),
                        rows=lambda row_key: self._row_state(base, row_key))
        if engine.rebuilt:                  # an older layout's files: load the table again
            definition.phase, definition.cursor = "FULL", None
            self.save_search(definition)
        table = self._attach(base, schema)
        table.searches[definition.name] = engine
        table.lagging = True
        self.search_defs[(base, definition.name)] = definition
        self._ensure_thread()
        return engine

    def create_search(self, base, schema, definition):
        """Add search index ``definition`` to ``base``: its record (the point
        of no return), its engine, then the back-fill (phase FULL)."""
        with self._mutex:
            remove_engine(self.server, definition)        # files a failed create left
            self.server.create_table(definition.table,
                                     attributes={SEARCH_ATTRIBUTE: definition.to_json()})
            self._attach_search(base, schema, definition)
        self._pass_locks()          # every write from now on is fed to it
        self._start_search_backfill(base, definition.name)

    def pair_search(self, base, source, reindex):
        """Search index ``reindex`` (just made) is ``source``'s reindex index:
        each the other's brother (a dynamic schema change)."""
        with self._mutex:
            a, b = self.search_defs[(base, source)], self.search_defs[(base, reindex)]
            a.brother, b.brother, a.weights, b.weights = reindex, source, [], []
            self.save_search(b)
            self.save_search(a)

    def weigh_search(self, base, name, weights):
        """Searches of ``name`` shared by ``weights`` [[index, weight]]."""
        with self._mutex:
            definition = self.search_defs[(base, name)]
            definition.weights = [list(w) for w in weights]
            self.save_search(definition)

    def switch_search(self, base, name):
        """``name`` and its brother swap names (the service's switch of a
        reindex index with its source): searches of ``name`` now read the
        brother's index, files and records stay where they are.  Two
        records change: the brother's first; a crash between the two is
        settled at the next open (SearchIndexDef.settle)."""
        with self._mutex:
            a = self.search_defs[(base, name)]
            b = self.search_defs[(base, a.brother)]
            table = self.tables[base]
            epoch = max(a.epoch, b.epoch) + 1
            a_name, b_name = a.name, b.name
            b.name, b.brother, b.weights, b.epoch = a_name, b_name, [], epoch
            self.save_search(b)
            a.name, a.brother, a.weights, a.epoch = b_name, a_name, [], epoch
            self.save_search(a)
            self.search_defs[(base, a.name)], self.search_defs[(base, b.name)] = a, b
            engines = table.searches
            engines[a.name], engines[b.name] = engines[b.name], engines[a.name]

    def drop_search(self, base, name):
        with self._mutex:
            definition = self.search_defs.pop((base, name))
            self.server.delete_table(definition.table)    # the point of no return
            brother = self.search_defs.get((base, definition.brother))
            if brother is not None and brother.brother == name:
                brother.brother, brother.weights = None, []   # the pair is no more
                self.save_search(brother)
            table = self.tables.get(base)
            engine = table.searches.pop(name) if table is not None else None
            if table is not None:
                table.lagging = table.follows()
                if not table.indexes and not table.searches and table.stream is None:
                    self._unfeed(base)
        thread = self._backfills.pop((base, name), None)
        if thread is not None:
            thread.join()
        if engine is not None:
            engine.close()
        remove_engine(self.server, definition)

    def searches_of(self, base):
        """[(SearchIndexDef, Engine)] of ``base``."""
        table = self.tables.get(base)
        if table is None:
            return []
        return [(self.search_defs[(base, n)], e) for n, e in list(table.searches.items())
                if (base, n) in self.search_defs]

    def save_search(self, definition):
        self.server.set_table_attributes(definition.table,
                                         {SEARCH_ATTRIBUTE: definition.to_json()})

    def _start_search_backfill(self, base, name):
        thread = threading.Thread(target=self._search_backfill, args=(base, name),
                                  name="search-backfill-" + name, daemon=True)
        self._backfills[(base, name)] = thread
        thread.start()

    def _search_backfill(self, base, name):
        """Load every row of ``base`` into the new search index, in key order
        from the saved cursor (saved after each commit); then phase INCR."""
        try:
            definition = self.search_defs[(base, name)]
            engine = self.tables[base].searches[name]
            cursor = bytes.fromhex(definition.cursor) if definition.cursor else None
            done, last, committed = 0, None, time.monotonic()
            for key, _ in self.server.scan(base, cursor):
                if self._closed or (base, name) not in self.search_defs:
                    return
                row_key = key[:pkcodec.row_key_len(key)]
                if row_key == last:
                    continue
                last = row_key
                self.reconcile(base, row_key, [], [engine])
                done += 1
                if done % _CURSOR_EVERY == 0 \
                        and time.monotonic() - committed >= _SEARCH_COMMIT_SECONDS:
                    engine.commit()
                    committed = time.monotonic()
                    definition.cursor = row_key.hex()
                    self.save_search(definition)
            engine.commit()
            with self._mutex:
                if (base, name) in self.search_defs:
                    definition.phase, definition.cursor = "INCR", None
                    self.save_search(definition)
        except Exception:   # noqa: BLE001 -- resumed from the cursor at the next open
            if not self._closed and (base, name) in self.search_defs:
                log.exception("back-fill of search index %r stopped", name)

    def wait_search(self, base, name, timeout=30.0) -> bool:
        """The back-fill done and every feed entry written so far applied."""
        deadline = time.monotonic() + timeout
        thread = self._backfills.get((base, name))
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                return False
        return self.wait(base, max(0.0, deadline - time.monotonic()))

    def _stream_spec(self, base):
        """The STREAM_SPEC record of data table ``base``, or None."""
        if base not in self.schemas or base in self.index_of or not self.server.has_table(base):
            return None
        return (self.server.table_attributes(base) or {}).get(STREAM_SPEC)

    def _attach(self, base, schema):
        """Follow ``base``'s feed with the indexes ``schema`` lists: a table
        already followed changes in place (a writer never sees it without
        indexes meanwhile, so no write goes unfed)."""
        table = self.tables.get(base)
        if table is not None:
            table.schema, table.indexes = schema, self.index_defs(schema)
            table.lagging = table.follows()
            if table.lagging:
                self._ensure_thread()
            return table
        table = _Table(base, schema, self.index_defs(schema))
        if not self.server.has_table(table.feed):
            self.server.create_table(table.feed)
        last = 0
        for key, _ in self.server.scan(table.feed, reverse=True):
            last = _SEQ.unpack(key)[0]
            break
        table.seq = itertools.count(last + 1)
        table.last_seq = table.applied_seq = last
        table.lagging = table.follows()
        self.tables[base] = table
        if table.lagging:
            self._ensure_thread()
        return table

    def _make_tables(self, base, schema, index, phase):
        """The index table (schema, base, phase) and its refs table."""
        ischema = index.schema(schema)
        attrs = {ATTRIBUTE: ischema.to_json(),
                 INDEX_ATTRIBUTE: {"base": base, "phase": phase, "cursor": None}}
        self.server.create_table(index.name, split_keys=index.split_keys, attributes=attrs)
        self.server.create_table(index.name + REFS_SUFFIX)
        self.index_schemas[index.name] = ischema
        self.configure(index.name)
        return ischema

    def _set_phase(self, index_name, phase):
        """Record the phase in memory; an index in ISP_INCR is readable."""
        self.phase[index_name] = phase
        if phase == "ISP_INCR":
            self.schemas[index_name] = self.index_schemas[index_name]
        else:
            self.schemas.pop(index_name, None)

    def _drop_tables(self, index_name):
        self.schemas.pop(index_name, None)
        self.index_schemas.pop(index_name, None)
        for name in (index_name, index_name + REFS_SUFFIX):
            if self.server.has_table(name):
                self.server.delete_table(name)

    def create(self, base, schema, index, include_base_data, commit):
        """Add ``index`` (checked) to table ``base``: its tables, then
        ``commit(new_base_schema)`` lists it (the point of no return), then the
        back-fill if ``include_base_data``.  Returns the index table's schema."""
        with self._mutex:
            phase = "ISP_FULL" if include_base_data else "ISP_INCR"
            ischema = self._make_tables(base, schema, index, phase)
            try:
                new = schema.with_indexes(list(schema.indexes) + [index.to_json()])
                commit(new)
            except BaseException:
                self._drop_tables(index.name)
                raise
            self.index_of[index.name] = base
            self._set_phase(index.name, phase)
            self._attach(base, new)
        # Every write from now on is fed (writers look the table up under their
        # row lock); one that looked before holds its lock until its row is
        # written: pass each lock once, and the back-fill sees them all.
        self._pass_locks()
        if include_base_data:
            with self._mutex:
                if index.name in self.index_of:
                    self._start_backfill(base, index.name)
        return ischema

    def make_listed(self, base, schema, indexes):
        """Make the tables of ``indexes``, which ``base``'s ``schema`` (stored:
        CreateTable's) already lists; a crash before leaves them to ``open``."""
        with self._mutex:
            for index in indexes:
                self._make_tables(base, schema, index, "ISP_INCR")
                self.index_of[index.name] = base
                self._set_phase(index.name, "ISP_INCR")
            if indexes:
                self._attach(base, schema)

    def drop(self, base, schema, index_name, commit):
        """Remove index ``index_name`` of ``base``: ``commit(new_base_schema)``
        unlists it, then its tables go."""
        with self._mutex:
            new = schema.with_indexes([d for d in schema.indexes if d["name"] != index_name])
            commit(new)
            self.index_of.pop(index_name, None)
            self.phase.pop(index_name, None)
            table = self.tables.get(base)
            if new.indexes or (table is not None and (table.stream is not None
                                                      or table.searches)):
                self._attach(base, new)
            else:
                self._unfeed(base)
        thread = self._backfills.pop(index_name, None)
        if thread is not None:
            thread.join()
        self._drop_tables(index_name)

    def _unfeed(self, base):
        """``base`` needs no feed any more (no index, no stream)."""
        self.tables.pop(base, None)
        if self.server.has_table(base + FEED_SUFFIX):
            self.server.delete_table(base + FEED_SUFFIX)

    def forget_table(self, base):
        """``base`` was deleted with its indexes (the caller dropped them): its
        stream goes too."""
        with self._mutex:
            table = self.tables.pop(base, None)
            if table is not None and table.stream is not None:
                table.stream.drop()
            if self.server.has_table(base + FEED_SUFFIX):
                self.server.delete_table(base + FEED_SUFFIX)

    # -- streams (streams.py) -------------------------------------------------
    def stream(self, base):
        """The StreamLog of ``base``, or None."""
        table = self.tables.get(base)
        return table.stream if table is not None else None

    def streams(self):
        return [t.stream for t in list(self.tables.values()) if t.stream is not None]

    def enable_stream(self, base, schema, hours, origin_columns=()):
        """Start ``base``'s stream: every write from now on is recorded."""
        with self._mutex:
            table = self._attach(base, schema)
            with table.append_lock:
                next_seq = table.last_seq + 1
            table.stream = StreamLog.create(self.server, base, table.append_lock, hours,
                                            origin_columns, next_seq)
        self._pass_locks()
        return table.stream

    def disable_stream(self, base):
        """Stop ``base``'s stream and delete its records."""
        with self._mutex:
            table = self.tables.get(base)
            if table is None or table.stream is None:
                return
            stream, table.stream = table.stream, None
        self._pass_locks()          # no writer copies into the log any more
        with self._mutex:
            stream.drop()
            table.inflight.clear()
            if not table.indexes and not table.searches and self.tables.get(base) is table:
                self._unfeed(base)

    def _pass_locks(self):
        """Wait for every writer that looked a table up before a change: each
        holds its row lock until its row is written (not under the mutex,
        which a writer may want while it holds its lock)."""
        for lock in self.locks:
            with lock:
                pass

    def set_schema(self, base, schema):
        """The base table's options changed (UpdateTable)."""
        with self._mutex:
            table = self.tables.get(base)
            if table is not None:
                table.schema = schema

    def catalogue(self, feeds=True) -> dict:
        """What is known of the indexes, for operators (the console, /metrics):
        ``index_of`` (index -> base table), ``indexes`` (base table -> a dict
        per index: ``name``, ``type`` (global, local), ``columns`` (as
        declared), ``primary_key`` (``[[name, type]]``: those, then the base
        key's other columns), ``attributes``, ``phase``, ``options`` (the
        index table's)), and with ``feeds``, ``feeds`` (base table ->
        ``feed_state``); ``searches`` (base table -> a dict per search index:
        ``name``, ``phase`` (FULL, INCR), ``time_to_live``, ``fields``
        (``[[name, type]]``), ``documents``, ``storage_bytes``) and
        ``streams`` (base table -> ``stream_id``, ``expiration_hours``,
        ``shards``, ``open_shards``)."""
        out = {"index_of": dict(self.index_of), "indexes": {}, "feeds": {}, "searches": {},
               "streams": {}}
        with self._mutex:           # a search index made or dropped meanwhile
            searches = [(key, d, self.tables.get(key[0]))
                        for key, d in sorted(self.search_defs.items())]
        for (base, name), definition, table in searches:
            engine = table.searches.get(name) if table is not None else None
            try:
                documents = engine.num_docs() if engine is not None else None
                size = engine.storage_bytes() if engine is not None else None
            except (OSError, ValueError):      # dropped while we looked
                documents = size = None
            out["searches"].setdefault(base, []).append({
                "name": name, "phase": definition.phase, "time_to_live": definition.ttl,
                "fields": [[f.name, f.type] for f in definition.fields],
                "documents": documents, "storage_bytes": size})
            if feeds:
                out["feeds"][base] = self.feed_state(base)
        for stream in self.streams():
            out["streams"][stream.base] = {
                "stream_id": stream.id, "expiration_hours": stream.expiration,
                "shards": len(stream.shards),
                "open_shards": sum(1 for s in stream.shards.values() if s.close_seq is None)}
        for base in sorted(set(out["index_of"].values())):
            entries = out["indexes"][base] = []
            for index in self.indexes_of(base):
                schema = self.index_schemas.get(index.name)
                if schema is None:          # being made or dropped
                    continue
                entries.append({"name": index.name, "type": "local" if index.local else "global",
                                "columns": list(index.columns),
                                "primary_key": [list(c) for c in zip(schema.names, schema.types)],
                                "attributes": list(index.attributes),
                                "phase": self.phase.get(index.name, "ISP_INCR"),
                                "options": {"defined_columns": [list(d) for d in schema.defined],
                                            "time_to_live": schema.ttl,
                                            "max_versions": schema.max_versions,
                                            "max_time_deviation": schema.deviation,
                                            "allow_update": schema.allow_update}})
            if feeds:
                out["feeds"][base] = self.feed_state(base)
        return out

    def feed_state(self, base) -> dict:
        """``{"table", "backlog", "oldest_pending"}`` of ``base``'s change feed:
        entries not yet applied to its global indexes (the seqs from the oldest
        pending entry to the newest: two seeks, not a count, exact while the
        maintainer deletes in order) and the wall-clock time (seconds) the
        oldest was written, or None.  With local indexes only, nothing lags
        (the writers apply their entries): backlog and time are None."""
        state = {"table": base + FEED_SUFFIX, "backlog": None, "oldest_pending": None}
        table = self.tables.get(base)
        if table is None or not table.follows():
            return state
        try:
            first = next(iter(self.server.scan(table.feed, table.position or None)), None)
            last = next(iter(self.server.scan(table.feed, reverse=True)), None) if first else None
        except UnknownTableError:          # the last index dropped meanwhile
            return state
        state["backlog"] = 0
        if first is not None and last is not None:
            state["backlog"] = max(1, _SEQ.unpack(last[0])[0] - _SEQ.unpack(first[0])[0] + 1)
            state["oldest_pending"] = _ENTRY_TIME.unpack(first[1][-_ENTRY_TIME.size:])[0] / 1e6
        return state

    def building(self, name) -> bool:
        """Whether ``name`` is an index still loading its base data (ISP_FULL)."""
        return self.phase.get(name) == "ISP_FULL"

    def indexes_of(self, base):
        table = self.tables.get(base)
        return table.indexes if table is not None else []

    def metas(self, base):
        """SecondaryIndexMeta of each index of ``base`` (describe_table)."""
        return [i.meta(self.phase.get(i.name, "ISP_INCR")) for i in self.indexes_of(base)]

    # -- the write path -------------------------------------------------------
    def before_write(self, base, row_keys, entries=None):
        """Append the feed entries of ``row_keys`` (the rows about to be written
        to ``base``), before the base write; returns their feed keys (None:
        the table has no index and no stream).  ``entries`` (a list of
        [(key, value)] per row: what the write stores) is required when the
        table has a stream: its records are made from them."""
        table = self.tables.get(base)
        if table is None:
            return None
        stamp = _ENTRY_TIME.pack(time.time_ns() // 1000)
        stream = table.stream
        if stream is not None and entries is None:
            raise RuntimeError("a write to %r (a table with a stream) without its entries" % base)
        with table.append_lock:
            keys = [_SEQ.pack(next(table.seq)) for _ in row_keys]
            values = [row_key + stamp for row_key in row_keys]
            if stream is not None:
                for i, (key, row_key) in enumerate(zip(keys, row_keys)):
                    shard = stream.shard_for(row_key, _SEQ.unpack(key)[0])
                    blob = encode_entries(row_key, entries[i])
                    values[i] = row_key + _STREAM_MARK + _SEQ.pack(shard) + blob + stamp
                    table.inflight[key] = (shard, row_key, blob, stamp)
            table.last_seq = _SEQ.unpack(keys[-1])[0]
            try:
                if len(keys) == 1:
                    self.server.put(table.feed, keys[0], values[0])
                else:
                    self.server.write(table.feed, list(zip(keys, values)))
            except BaseException as exc:
                for key in keys:
                    table.inflight.pop(key, None)
                if isinstance(exc, UnknownTableError) and self.tables.get(base) is not table:
                    return None       # its last index was dropped meanwhile
                raise
        return keys

    def after_write(self, base, row_keys, feed_keys, landed=None):
        """The base write of ``row_keys`` is done (their row locks still held):
        copy their records into the stream's log (only the rows in
        ``landed``, when given: a write that failed part-way), reconcile the
        local indexes now; wake the maintainer for the global ones (or, with
        none, drop the feed entries).  Call it whether the write succeeded or
        not, once ``before_write`` returned feed keys."""
        table = self.tables.get(base)
        if table is None or feed_keys is None:
            return
        if table.inflight:
            self._record(table, row_keys, feed_keys, landed)
        local = [i for i in table.indexes if i.local]
        if local:
            for row_key in dict.fromkeys(row_keys):
                self._reconcile(table, row_key, local)
        if not table.follows():
            self._forget(table, feed_keys)
        elif self._idle:
            with self._wake:
                self._wake.notify()

    @staticmethod
    def _record(table, row_keys, feed_keys, landed):
        """Copy the records of a write into its stream's log, then let readers
        past them (horizon)."""
        stream = table.stream
        try:
            for row_key, key in zip(row_keys, feed_keys):
                pending = table.inflight.get(key)
                if pending is None or stream is None or (landed is not None
                                                         and row_key not in landed):
                    continue
                shard, _, blob, stamp = pending
                stream.append(shard, _SEQ.unpack(key)[0], row_key, blob, stamp)
        except UnknownTableError:
            if table.stream is stream:
                raise
        finally:
            with table.append_lock:
                for key in feed_keys:
                    table.inflight.pop(key, None)

    def admit(self, base):
        """Called by a writer of table ``base`` before it takes its row lock:
        while its global indexes lag more than MAX_BACKLOG feed entries, wait
        for the maintainer (up to _ADMIT_WAIT_S), so the lag stays bounded."""
        table = self.tables.get(base) if type(base) is str else None
        if table is None or not table.lagging:
            return
        deadline = None
        while table.last_seq - table.applied_seq > MAX_BACKLOG and not self._closed:
            now = time.monotonic()
            if deadline is None:
                deadline = now + _ADMIT_WAIT_S
            elif now > deadline:
                return
            if self._idle:
                with self._wake:
                    self._wake.notify()
            time.sleep(0.0005)

    # -- reconciling ------------------------------------------------------------
    def reconcile(self, base, row_key, indexes=None, searches=()):
        """Bring ``indexes`` (default: all of ``base``'s) and the search
        indexes' engines ``searches`` in step with row ``row_key``, taking its
        row lock."""
        table = self.tables.get(base)
        if table is None:
            return
        with self.locks[hash(row_key) % len(self.locks)]:
            self._reconcile(table, row_key, table.indexes if indexes is None else indexes,
                            searches)

    def _row(self, table, row_key, now):
        """(pk values {name: value}, live columns {name: [(ts, value)]}) of
        row ``row_key`` as the indexes see it (the newest version of each
        column, decoded in C: an index needs max_versions 1; TTL as
        reads.visible applies it), or None when the row is gone."""
        schema = table.schema
        row_cells = _cellcodec.row_cells(len(row_key), row_entries(self.server, table.name,
                                                                  row_key), 1)[0]
        if row_cells is None:
            return None
        min_ts = now - schema.ttl * 1000 if schema.ttl > 0 else None
        live = {name: [(ts, value)] for name, value, ts in row_cells
                if min_ts is None or ts >= min_ts}
        return dict(zip(schema.names, _rowcodec.decode_pk(row_key, len(schema.names))[0])), live

    def _row_state(self, base, row_key):
        """``_row`` of ``base``'s row now (a search engine's ``rows``)."""
        table = self.tables.get(base)
        return None if table is None else self._row(table, row_key, cells.now_ms())

    def _reconcile(self, table, row_key, indexes, searches=()):
        """``reconcile`` with the row lock held."""
        now = cells.now_ms()
        values, live = self._row(table, row_key, now) or (None, None)
        for index in indexes:
            try:
                self._apply(index, row_key, values, live, now)
            except Exception as exc:   # a table dropped meanwhile: nothing to keep in step
                if index.name in self.index_of:
                    raise
                log.debug("index %r gone while reconciling: %s", index.name, exc)
        for engine in searches:        # a document per row (search.py)
            if live is None:
                engine.delete(row_key)
            else:
                engine.upsert(row_key, values, live)

    def _apply(self, index, row_key, values, live, now):
        ischema = self.index_schemas.get(index.name)
        if ischema is None:
            if index.name in self.index_of:   # never: the entry must not be dropped unapplied
                raise RuntimeError("index %r has no schema" % index.name)
            return                            # dropped meanwhile
        want = None
        if live is not None:
            key_values = []
            for name, typ in zip(ischema.names, ischema.types):
                if name in values:
                    key_values.append(values[name])
                    continue
                versions = live.get(name)
                if not versions or not _is_type(versions[0][1], typ):
                    key_values = None     # sparse: an index column is missing
                    break
                key_values.append(versions[0][1])
            if key_values is not None:
                row = [(name, live[name][0][1], live[name][0][0])
                       for name in index.attributes if name in live]
                want = (_rowcodec.encode_pk(ischema.types, key_values), row)
        refs = index.name + REFS_SUFFIX
        old = self.server.get(refs, row_key)
        pairs = []
        if old is not None and (want is None or old != want[0]):
            pairs.append((cells.head_key(old), None))
        if want is not None:
            pairs.append((cells.head_key(want[0]),
                          _cellcodec.put_head(self.gens.next(), sorted(want[1]), now)))
        if pairs:
            self.server.write(index.name, pairs)
        if want is not None and want[0] != old:
            self.server.put(refs, row_key, want[0])
        elif want is None and old is not None:
            self.server.delete(refs, row_key)

    # -- the maintainer (global indexes) ----------------------------------------
    def _ensure_thread(self):
        if self._thread is None and not self._closed and not self._opening:
            self._thread = threading.Thread(target=self._follow, name="index-maintainer",
                                            daemon=True)
            self._thread.start()

    def _follow(self):
        while True:
            with self._wake:
                if self._closed:
                    return
                # a table with local indexes only: its writers apply and drop
                # its entries under their row locks (never the maintainer,
                # which would drop an entry before its writer applied it)
                tables = [t for t in self.tables.values() if t.follows()]
            busy = False
            for table in tables:
                try:
                    busy |= self._drain(table, _FEED_BATCH,
                                        [i for i in table.indexes if not i.local])
                except Exception:   # noqa: BLE001 -- retried on the next pass
                    if self._closed:
                        return
                    log.exception("index maintainer: table %r", table.name)
                    time.sleep(0.1)
            if not busy:
                with self._wake:
                    if self._closed:
                        return
                    self._idle = True
                    self._wake.wait(0.05)
                    self._idle = False

    def _drain(self, table, limit, indexes):
        """Apply up to ``limit`` (None: all) of ``table``'s feed entries to
        ``indexes`` (the writers keep the local ones in step themselves); True
        if any was applied."""
        applied = False
        while True:
            entries = []
            # a stream's entries past the horizon are still their writers' to record
            bound = (_SEQ.pack(table.horizon() + 1)
                     if table.stream is not None and not self._opening else None)
            for key, value in self.server.scan(table.feed, table.position or None, bound):
                entries.append((key, value))
                if limit is not None and len(entries) >= limit:
                    break
            if not entries:
                return applied
            now_us = time.time_ns() // 1000
            for key, value in entries:
                row_key, recorded = _parse_entry(value)
                if recorded is not None and self._opening and table.stream is not None:
                    self._recover(table, key, row_key, recorded, value[-_ENTRY_TIME.size:])
                if indexes or table.searches:
                    self.reconcile(table.name, row_key, indexes, list(table.searches.values()))
                if table.follows():
                    self._lags.append((now_us - _ENTRY_TIME.unpack(value[-8:])[0]) / 1000)
            for engine in list(table.searches.values()):
                engine.commit()        # durable before the entries go: the sync point
            self._forget(table, [k for k, _ in entries])
            table.position = entries[-1][0] + b"\x00"
            table.applied_seq = max(table.applied_seq, _SEQ.unpack(entries[-1][0])[0])
            applied = True
            if limit is not None:
                return applied

    @staticmethod
    def _recover(table, key, row_key, recorded, stamp):
        """At open: the records of a feed entry left by a crash, copied into
        the stream's log if its write reached the base table."""
        shard, blob = _SEQ.unpack_from(recorded)[0], recorded[_SEQ.size:]
        if table.stream.landed(row_key, blob):
            table.stream.append(shard, _SEQ.unpack(key)[0], row_key, blob, stamp)
        else:
            log.info("stream of %r: dropped the record of a write that did not land", table.name)

    def _forget(self, table, feed_keys):
        if len(feed_keys) == 1:
            self.server.delete(table.feed, feed_keys[0])
            return
        self.server.write(table.feed, [(key, None) for key in feed_keys])

    def wait(self, base, timeout=10.0) -> bool:
        """Wait until every feed entry of ``base`` written so far is applied;
        False on timeout (the tests' and the bench's sync point)."""
        table = self.tables.get(base)
        if table is None:
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if next(iter(self.server.scan(table.feed, table.position or None)), None) is None:
                return True
            with self._wake:
                self._wake.notify()
            time.sleep(0.002)
        return False

    def lag_ms(self):
        """Lags (ms) of the global-index feed entries applied so far (the last 100,000)."""
        return list(self._lags)

    # -- back-fill ---------------------------------------------------------------
    def _start_backfill(self, base, index_name):
        thread = threading.Thread(target=self._backfill, args=(base, index_name),
                                  name="index-backfill-" + index_name, daemon=True)
        self._backfills[index_name] = thread
        thread.start()

    def _backfill(self, base, index_name):
        """Reconcile every row of ``base`` into the new index, in key order from
        the saved cursor; then the phase becomes ISP_INCR."""
        try:
            attrs = dict(self.server.table_attributes(index_name))
            own = dict(attrs[INDEX_ATTRIBUTE])
            cursor = bytes.fromhex(own["cursor"]) if own.get("cursor") else None
            table = self.tables.get(base)
            index = next(i for i in table.indexes if i.name == index_name)
            done = 0
            last = None
            for key, _ in self.server.scan(base, cursor):
                if self._closed or index_name not in self.index_of:
                    return
                row_key = key[:pkcodec.row_key_len(key)]
                if row_key == last:
                    continue
                last = row_key
                self.reconcile(base, row_key, [index])
                done += 1
                if done % _CURSOR_EVERY == 0:
                    own["cursor"] = row_key.hex()
                    attrs[INDEX_ATTRIBUTE] = own
                    self.server.set_table_attributes(index_name, attrs)
            own.update(phase="ISP_INCR", cursor=None)
            attrs[INDEX_ATTRIBUTE] = own
            with self._mutex:
                if index_name in self.index_of:
                    self.server.set_table_attributes(index_name, attrs)
                    self._set_phase(index_name, "ISP_INCR")
        except Exception:   # noqa: BLE001 -- resumed from the cursor at the next open
            if not self._closed and index_name in self.index_of:
                log.exception("back-fill of index %r stopped", index_name)

    def wait_backfill(self, index_name, timeout=60.0) -> bool:
        thread = self._backfills.get(index_name)
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def close(self):
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        for thread in [self._thread, *self._backfills.values()]:
            if thread is not None:
                thread.join()
        for table in list(self.tables.values()):
            for engine in list(table.searches.values()):
                engine.close()


def _parse_entry(value):
    """(row key, the stream part or None) of a feed entry's value: ``row_key
    [0x01 shard u64-BE entries-blob] stamp``."""
    body = value[:-_ENTRY_TIME.size]
    n = pkcodec.row_key_len(body)
    if n < 0 or n == len(body):
        return body, None
    return body[:n], body[n + 1:]


def _is_type(value, typ):
    if typ == "INTEGER":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "STRING":
        return isinstance(value, str)
    return isinstance(value, (bytes, bytearray))
