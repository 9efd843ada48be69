"""Search indexes (Tablestore's multi-index) on tantivy, kept in step by the change feed.

A search index of table T holds one document per row of T: the row's primary
key and the columns its fields name, indexed as the field types say (LONG,
DOUBLE, BOOLEAN, KEYWORD, TEXT, DATE, GEO_POINT, VECTOR; ``is_array``
columns hold a JSON array).  It is a consumer of T's change feed
(indexes.py), like a global secondary index: the maintainer thread
reconciles each fed row into it (upsert by primary key, or delete), commits
the engine, and only then lets the feed forget the entries: the committed
engine plus the feed entries left are the durable sync point, so a kill at
any moment is made good by the next open (the entries are applied again;
applying is idempotent).  A new index loads the rows already there (phase
FULL, a back-fill with a saved cursor), then follows the feed (INCR).

Engine: tantivy (its inverted index, BM25 scores, phrase positions) for
everything but vectors, which are searched exactly with numpy over the
stored float32 arrays (docs/search.md has the measurements behind the
choice).  Documents carry ``_pk`` (the row key, hex: the delete term),
``_has`` (the names of the fields the row has: ExistsQuery), and one field
per index field, named ``f<i>``.

Catalogue: each index has a region-server table ``<T>.search.<name>`` whose
attributes hold its record (fields, TTL, creation time, phase, cursor); its
engine lives in ``<server path>/search/<T>/<name>`` (in memory for an
in-memory server).  Deleting the record's table is the point of no return
of a drop; creating it, of a create.

The query and sort objects are the SDK's (``tablestore.metadata``: MatchQuery,
BoolQuery, FieldSort, ColumnsToGet...) or anything with their names and
fields: this module reads them by class name and attribute, so code written
for the cloud passes them unchanged.
"""
import base64
import json
import logging
import math
import os
import re
import shutil
import struct
import threading
import time
import uuid
import zlib

from . import cells, pkcodec, searchscore
from ._searchpage import Stored, load as _load_page, window as _window_page
from .errors import OTSClientError, service_error

__all__ = ["SearchIndexDef", "Engine", "SEARCH_INFIX", "SEARCH_ATTRIBUTE", "FIELD_TYPES",
           "check_search_meta", "describe_search", "return_type_name", "SearchResponse",
           "SearchHit"]

log = logging.getLogger("regions.tablestore")

SEARCH_INFIX = ".search."          # "<table>.search.<index>": '.' is in no Tablestore name
SEARCH_ATTRIBUTE = "search_index"  # the key of the index's record in that table's attributes
MAX_SEARCH_INDEXES = 5             # per table (assumed like secondary indexes; see docs)
REINDEX_SUFFIX = "_reindex"        # a reindex index's name ends so (the service's rule)
MAX_REINDEXES = 5                  # dynamic schema changes under way at once (the service's)
SWITCH_WAIT_SECONDS = 30.0         # a switch waits this long for the pair to load the table
DEFAULT_LIMIT = 10                 # rows a Search returns without a limit
MAX_LIMIT = 100
MAX_INDEX_ONLY_LIMIT = 1000        # when every column returned comes from the index
MAX_OFFSET_LIMIT = 100_000         # offset + limit (paging past it: next_token)
MAX_TOP_K = 1000                   # KnnVectorQuery's top_k
LAYOUT = 6          # the engine's schema (2: GEO_POINT text fast; 3: _pko, TEXT not stored;
#                    4: one stored field, _doc; 5: _doc the key alone; 6: _pko2, _pko3)
LAYOUT_FILE = "LAYOUT"             # in the engine's directory
_KEYWORDS_MAX = 200_000            # distinct values a keyword range reads from the column
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1

# FieldType numbers (search.proto, the SDK's FieldType enum) -> our names
FIELD_TYPES = {1: "LONG", 2: "DOUBLE", 3: "BOOLEAN", 4: "KEYWORD", 5: "TEXT", 6: "NESTED",
               7: "GEO_POINT", 8: "DATE", 9: "VECTOR", 12: "JSON"}
_OPERATORS = {1: "OR", 2: "AND"}
_SERVED_TYPES = ("LONG", "DOUBLE", "BOOLEAN", "KEYWORD", "TEXT", "DATE", "GEO_POINT", "VECTOR",
                 "NESTED")
_ANALYZERS = ("single_word", "max_word", "min_word", "split", "fuzzy")
_METRICS = {0: "euclidean", 1: "cosine", 2: "dot_product"}


def _tantivy():
    from regions.extras import require
    return require("tantivy", "Search indexes")


def _numpy():
    from regions.extras import require
    return require("numpy", "Vector search")


# -- definitions ---------------------------------------------------------------
class FieldDef:
    """One field of a search index, from the SDK's FieldSchema."""

    __slots__ = ("name", "type", "is_array", "analyzer", "params", "sortable", "store", "index",
                 "dimension", "metric", "date_formats", "highlight", "parent")

    def __init__(self, name, type, is_array=False, analyzer=None, params=None, sortable=None,
                 store=True, index=True, dimension=None, metric=None, date_formats=(),
                 highlight=False, parent=None):
        self.name, self.type, self.is_array = name, type, bool(is_array)
        self.highlight = bool(highlight)
        self.parent = parent        # a NESTED field's name, for its sub-fields ("n.nk")
        self.analyzer, self.params = analyzer, dict(params or {})
        self.sortable = bool(sortable)     # as declared (described so); any non-TEXT field sorts
        self.store, self.index = bool(store), bool(index)
        self.dimension, self.metric = dimension, metric
        self.date_formats = list(date_formats)

    def to_json(self):
        return {k: getattr(self, k) for k in self.__slots__}

    @classmethod
    def from_json(cls, d):
        return cls(**d)


class SearchIndexDef:
    """A search index as its record stores it.

    ``name`` is the name searches use; ``storage`` the one its record table
    and files go by (its first name: a switch of a reindex index with its
    source swaps their names, not their files).  A dynamic schema change
    (the service's reindex) pairs two indexes: ``brother`` names the other
    of the pair (None: unpaired), ``weights`` [[index name, weight]] share
    the searches of the source's name between the two (set on the source;
    empty: all to it), and ``epoch`` counts the pair's switches (the record
    written last wins a name two records claim after a crash mid-switch:
    SearchIndexDef.settle)."""

    def __init__(self, name, base, fields, ttl=-1, created=0, phase="FULL", cursor=None,
                 index_sort=None, routing=(), storage=None, brother=None, weights=(), epoch=0):
        self.name, self.base, self.fields = name, base, tuple(fields)
        self._by_name = {f.name: f for f in reversed(self.fields)}    # the first of a name
        self.nested = any(f.type == "NESTED" for f in self.fields)
        self.ttl, self.created, self.phase, self.cursor = ttl, created, phase, cursor
        # [[sorter kind, field or None, "ASC"|"DESC"]]: the order of a search without a sort
        self.index_sort = index_sort or [["PrimaryKeySort", None, "ASC"]]
        self.routing = list(routing)       # IndexSetting.routing_fields (described only)
        self.storage = storage or name
        self.brother, self.weights, self.epoch = brother, [list(w) for w in weights], epoch

    @property
    def table(self):
        return self.base + SEARCH_INFIX + self.storage

    def to_json(self):
        return {"name": self.name, "base": self.base, "fields": [f.to_json() for f in self.fields],
                "ttl": self.ttl, "created": self.created, "phase": self.phase,
                "cursor": self.cursor, "index_sort": self.index_sort, "routing": self.routing,
                "storage": self.storage, "brother": self.brother, "weights": self.weights,
                "epoch": self.epoch}

    @classmethod
    def from_json(cls, d):
        return cls(d["name"], d["base"], [FieldDef.from_json(f) for f in d["fields"]], d["ttl"],
                   d["created"], d["phase"], d["cursor"], d.get("index_sort"),
                   d.get("routing", ()), d.get("storage"), d.get("brother"),
                   d.get("weights", ()), d.get("epoch", 0))

    @staticmethod
    def settle(definitions):
        """The definitions of one base table as loaded, each name held once:
        a crash between the two records of a switch leaves the pair's
        index written second still holding the name its brother took (at
        a lower epoch); it takes its brother's old name, as the switch
        would have given it.  Returns the definitions that changed (to be
        saved)."""
        by_name, changed = {}, []
        for d in sorted(definitions, key=lambda d: -d.epoch):
            if d.name in by_name and d.brother is not None:
                winner = by_name[d.name]
                d.name, d.brother, d.epoch = winner.brother, winner.name, winner.epoch
                changed.append(d)
            by_name.setdefault(d.name, d)
        return changed

    def pick(self, draw):
        """The name a search of this index goes to: itself, or its brother
        by the share its ``weights`` give it (``draw`` in [0, 1))."""
        total = sum(w for _, w in self.weights)
        if total <= 0:
            return self.name
        at = draw * total
        for name, w in self.weights:
            if at < w:
                return name
            at -= w
        return self.name

    def sort(self):
        """The index's sort as the SDK's Sort-like object (the default order)."""
        return _IndexSort(self.index_sort)

    def field(self, name):
        f = self._by_name.get(name)
        if f is None:
            raise service_error("search_field_not_exist", field=name, index=self.name)
        return f


def _enum_name(value, names):
    if value is None:
        return None
    if isinstance(value, str):
        return value.upper()
    try:
        return names[int(value)]
    except (KeyError, TypeError, ValueError):
        raise OTSClientError("unknown enum value %r" % (value,)) from None


def check_search_meta(index_name, base, meta, pk_names) -> SearchIndexDef:
    """The definition of a new search index from the SDK's SearchIndexMeta,
    or the service's error for a bad one."""
    if type(meta).__name__ != "SearchIndexMeta":
        raise OTSClientError("index_meta should be an instance of SearchIndexMeta, not %s"
                             % type(meta).__name__)
    fields, seen = [], set()
    for schema in meta.fields or ():
        _check_field(schema, fields, seen, None)
    if not fields:
        raise service_error("search_no_fields")
    ttl = meta.time_to_live if meta.time_to_live is not None else -1
    if not isinstance(ttl, int) or (ttl != -1 and ttl < 86400):
        raise service_error("search_ttl_invalid", ttl=ttl)
    index_sort = None
    if getattr(meta, "index_sort", None) is not None:
        index_sort = []
        for s in meta.index_sort.sorters or ():
            kind = type(s).__name__
            if kind not in ("PrimaryKeySort", "FieldSort"):
                raise service_error("search_sort_unsupported", sort=kind)
            order = "DESC" if int(getattr(s, "sort_order", 0) or 0) == 1 else "ASC"
            index_sort.append([kind, getattr(s, "field_name", None), order])
    routing = list(getattr(getattr(meta, "index_setting", None), "routing_fields", None) or ())
    for name in routing:
        if name not in pk_names:
            raise service_error("search_routing_field", field=name)
    return SearchIndexDef(index_name, base, fields, ttl, int(time.time() * 1000), "FULL",
                          index_sort=index_sort, routing=routing)


class _IndexSort:
    """An index's stored sort, shaped as the SDK's Sort (``sorters``)."""

    class _Sorter:
        def __init__(self, kind, field_name, order):
            self.kind, self.field_name = kind, field_name
            self.sort_order = 1 if order == "DESC" else 0
            self.sort_mode = None

    def __init__(self, stored):
        self.sorters = []
        for kind, field, order in stored:
            sorter = self._Sorter(kind, field, order)
            sorter.__class__ = type(kind, (self._Sorter,), {})
            self.sorters.append(sorter)


_BY_KEY = _IndexSort([("PrimaryKeySort", None, "ASC")])
_BY_SCORE = _IndexSort([("ScoreSort", None, "DESC")])


def _check_field(schema, fields, seen, parent):
    """Append the FieldDef of the SDK's FieldSchema ``schema`` to ``fields``
    (a NESTED field's, then its sub-fields', named "parent.sub")."""
    if True:
        name = schema.field_name
        if not isinstance(name, str) or not name:
            raise OTSClientError("field_name should be a non-empty str, not %r" % (name,))
        if parent is not None:
            name = parent + "." + name
        if name in seen:
            raise service_error("search_field_duplicated", field=name)
        seen.add(name)
        kind = _enum_name(schema.field_type, FIELD_TYPES)
        if kind not in _SERVED_TYPES:
            raise service_error("search_field_type_unsupported", field=name, type=kind)
        analyzer = schema.analyzer if kind == "TEXT" else None
        if analyzer is not None and analyzer not in _ANALYZERS:
            raise service_error("search_analyzer_invalid", field=name, analyzer=analyzer)
        params = dict(vars(schema.analyzer_parameter)) if getattr(
            schema, "analyzer_parameter", None) is not None else {}
        dimension = metric = None
        if kind == "VECTOR":
            opts = getattr(schema, "vector_options", None)
            if opts is None or not isinstance(opts.dimension, int) or not 1 <= opts.dimension <= 4096:
                raise service_error("search_vector_options", field=name)
            dimension, metric = opts.dimension, _enum_name(opts.metric_type, _METRICS)
        sortable = schema.enable_sort_and_agg
        if kind in ("TEXT", "VECTOR") and sortable:
            raise service_error("search_sort_on_text", field=name)
        highlight = bool(getattr(schema, "enable_highlighting", False))
        if highlight and kind != "TEXT":
            raise service_error("search_highlight_not_text", field=name)
        fields.append(FieldDef(name, kind, schema.is_array, analyzer, params, sortable,
                               True if schema.store is None else schema.store,
                               True if schema.index is None else schema.index, dimension, metric,
                               getattr(schema, "date_formats", None) or (), highlight, parent))
        if kind == "NESTED":
            subs = getattr(schema, "sub_field_schemas", None) or []
            if not subs:
                raise service_error("search_nested_no_fields", field=name)
            for sub in subs:
                _check_field(sub, fields, seen, name)


# -- the engine ---------------------------------------------------------------------
class Engine:
    """One search index's documents: a tantivy index (on disk at ``path``, or
    in memory) plus the vectors.  ``upsert``/``delete`` stage changes;
    ``commit`` makes them durable and visible.  Thread-safe."""

    def __init__(self, definition: SearchIndexDef, pk_names, path=None, rows=None):
        """``rows(row_key)``: the row as ``upsert`` takes it, (pk values,
        live columns), or None when it is gone: what a search reads back of
        a document's values (None: an engine of a few documents, as inner
        hits make, which keeps each document's values in memory and
        indexes with one thread and a small budget)."""
        tv = _tantivy()
        self.definition, self.pk_names = definition, list(pk_names)
        self._tv = tv
        self._rows = rows
        self._memo = {} if rows is None else None
        # the fields whose values a search reads back (a TEXT only as written,
        # for highlighting; a VECTOR from its own stored field)
        self._kept = [f for f in definition.fields
                      if f.type != "VECTOR" and (f.type != "TEXT" or f.highlight)]
        sb = tv.SchemaBuilder()
        # stored: _doc alone (the row key: _searchpage) and VECTORs: a stored
        # document costs its size to read; the values come from the row
        sb.add_text_field("_pk", stored=False, tokenizer_name="raw")
        sb.add_bytes_field("_doc", stored=True)
        sb.add_text_field("_has", tokenizer_name="raw")
        sb.add_integer_field("_ts", indexed=True, fast=True)   # newest cell (ms)
        for part in _KEY_PARTS:     # the row key's order, 8 bytes a part (_order_of)
            sb.add_unsigned_field(part, indexed=True, fast=True)
        self._names = {}                 # index field name -> tantivy field name
        for i, f in enumerate(definition.fields):
            tname = self._names[f.name] = "f%d" % i
            if f.type in ("LONG", "DATE"):
                sb.add_integer_field(tname, indexed=True, fast=True)
            elif f.type == "DOUBLE":
                sb.add_float_field(tname, indexed=True, fast=True)
            elif f.type == "BOOLEAN":
                sb.add_boolean_field(tname, indexed=True, fast=True)
            elif f.type == "KEYWORD":
                sb.add_text_field(tname, tokenizer_name="raw", fast=True)
            elif f.type == "TEXT":           # tokens are ours (_tokens), joined by spaces
                sb.add_text_field(tname, stored=False, tokenizer_name="whitespace")
                # highlighting: the text as written, kept in _doc as tname_raw
            elif f.type == "GEO_POINT":          # fast: count and distinct_count
                sb.add_text_field(tname, tokenizer_name="raw", fast=True)
                sb.add_float_field(tname + "_lat", indexed=True, fast=True)
                sb.add_float_field(tname + "_lon", indexed=True, fast=True)
            elif f.type == "VECTOR":
                sb.add_bytes_field(tname, stored=True)
            # NESTED: its sub-fields hold its objects' values (flattened)
        self.schema = sb.build()
        self.path = path
        self.rebuilt = False    # the files were of an older layout: emptied, to be back-filled
        if path is not None:
            self.index = self._open(path)
        else:
            self.index = tv.Index(self.schema)
        # the writer: a thread's share of the memory budget reached is a
        # segment written, and a search visits every segment (15 MB left a
        # 20,000-row back-fill in 7 segments, a sorted search then 2.4x slower
        # than on one); two threads, a segment each a commit: tantivy caches
        # 100 blocks of stored documents per segment, and the keys of 100,000
        # rows (800 KB) fit two segments' caches, not one's (10 documents read
        # in 6.8 us, in one segment 16.9); the memory is taken as documents
        # arrive and freed at each commit (a 100,000-row back-fill: 14 MB
        # more at its peak than one thread of 64 MB)
        self._writer = (self.index.writer(heap_size=128_000_000, num_threads=2)
                        if rows is not None else
                        self.index.writer(heap_size=15_000_000, num_threads=1))
        self._lock = threading.Lock()
        self._pending = 0
        self.index.reload()
        # VECTOR fields' vectors in memory (exact search or usearch), changed
        # at commit with the documents; loaded from the stored documents
        self._vectors = {f.name: _Vectors(f) for f in definition.fields if f.type == "VECTOR"}
        self._vector_ops = []
        if self._vectors:
            self._load_vectors()

    def _open(self, path):
        """The engine's files at ``path``; files of another layout (an older
        version's schema) are removed and the engine starts empty, with
        ``rebuilt`` set so that its owner loads the table again."""
        marker = os.path.join(path, LAYOUT_FILE)
        try:
            with open(marker) as f:
                layout = f.read().strip()
        except FileNotFoundError:
            layout = None
        if layout != str(LAYOUT) and os.path.isdir(path) and os.listdir(path):
            log.warning("search index %r: its files are of layout %s, not %s: rebuilding it",
                        self.definition.name, layout, LAYOUT)
            shutil.rmtree(path)
            self.rebuilt = True
        os.makedirs(path, exist_ok=True)
        index = self._tv.Index(self.schema, path=path, reuse=True)
        if layout != str(LAYOUT):
            with open(marker + ".tmp", "w") as f:
                f.write(str(LAYOUT))
                f.flush()
                os.fsync(f.fileno())
            os.replace(marker + ".tmp", marker)
        return index

    # -- writing ------------------------------------------------------------------
    def upsert(self, row_key, pk_values, live):
        """Stage the document of a row: ``pk_values`` {name: value}, ``live``
        {column: [(ts, value)]} (newest first)."""
        doc = self._tv.Document()
        doc.add_text("_pk", row_key.hex())
        for i, part in enumerate(_KEY_PARTS):
            doc.add_unsigned(part, _order_of(row_key, i))
        doc.add_integer("_ts", max((v[0][0] for v in live.values() if v), default=0))
        stored = self._fill(doc, pk_values, live)
        doc.add_bytes("_doc", Stored.pack(row_key))
        with self._lock:
            self._writer.delete_documents("_pk", row_key.hex())
            self._writer.add_document(doc)
            self._pending += 1
            if self._memo is not None:
                self._memo[row_key] = stored
            for name in self._vectors:
                values = _field_values(self.definition.field(name),
                                       live[name][0][1] if live.get(name) else None)
                self._vector_ops.append((name, row_key, values[0] if values else None))

    def _fill(self, doc, pk_values, live):
        """Index the fields of a row (``upsert``'s ``pk_values``, ``live``)
        in ``doc`` (_DISCARD: none, and only the fields that keep values)
        and return the values a search reads back ({tantivy field:
        [values]}: _searchpage.Stored)."""
        stored = {}
        objects = {}                     # NESTED field -> its objects
        for f in self.definition.fields if doc is not _DISCARD else self._kept:
            if f.parent is not None:
                raw = [o.get(f.name[len(f.parent) + 1:]) for o in objects.get(f.parent, ())
                       if isinstance(o, dict)]
                if f.type == "NESTED":           # objects inside the parent's objects
                    objects[f.name] = [x for r in raw for x in (r if isinstance(r, list)
                                                                else [r]) if isinstance(x, dict)]
                    if objects[f.name]:
                        doc.add_text("_has", f.name)
                    continue
                values = [v for r in raw for v in _field_values(f, r, True)]
            else:
                value = pk_values[f.name] if f.name in pk_values else (
                    live[f.name][0][1] if live.get(f.name) else None)
                if value is None:
                    continue
                if f.type == "NESTED":
                    objects[f.name] = _nested_objects(value)
                    if objects[f.name]:
                        doc.add_text("_has", f.name)
                    continue
                values = _field_values(f, value)
            if not values:
                continue
            if f.type == "KEYWORD" and f.parent is None:   # a set, as the service's are
                values = list(dict.fromkeys(values))
            doc.add_text("_has", f.name)
            tname = self._names[f.name]
            for v in values:
                _add(doc, f, tname, v, stored)
        return stored

    def _values(self, row_key):
        """The values a search reads back of row ``row_key``'s document
        (_searchpage.Stored): the row's, as ``upsert`` made them ({}: gone)."""
        if self._memo is not None:
            return self._memo.get(row_key, {})
        row = self._rows(row_key)
        return {} if row is None else self._fill(_DISCARD, *row)

    def delete(self, row_key):
        with self._lock:
            self._writer.delete_documents("_pk", row_key.hex())
            self._pending += 1
            if self._memo is not None:
                self._memo.pop(row_key, None)
            for name in self._vectors:
                self._vector_ops.append((name, row_key, None))

    def commit(self):
        with self._lock:
            if self._pending:
                self._writer.commit()
                self._pending = 0
                self.index.reload()
                for name, row_key, vector in self._vector_ops:
                    self._vectors[name].put(row_key, vector)
                self._vector_ops = []

    def _load_vectors(self):
        searcher = self.index.searcher()
        result = searcher.search(self._tv.Query.all_query(), limit=max(1, searcher.num_docs))
        np = _numpy()
        for _, address in result.hits:
            doc = Stored(searcher.doc(address), self._values)
            row_key = doc.row_key
            for name, store in self._vectors.items():
                raw = doc.get(self._names[name])
                if raw:
                    store.put(row_key, np.frombuffer(bytes(raw[0]), dtype=np.float32))

    def clear(self):
        with self._lock:
            self._writer.delete_all_documents()
            self._writer.commit()
            self._pending = 0
            self.index.reload()
            self._vectors = {n: _Vectors(v.field) for n, v in self._vectors.items()}
            self._vector_ops = []

    def num_docs(self):
        return self.index.searcher().num_docs

    def storage_bytes(self):
        """The engine's files' size (None in memory)."""
        if self.path is None:
            return None
        total = 0
        for d, _, files in os.walk(self.path):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(d, f))
                except FileNotFoundError:      # merged away by the engine meanwhile
                    pass
        return total

    def close(self):
        with self._lock:
            self._writer.commit()
            self._writer.wait_merging_threads()

    # -- reading ------------------------------------------------------------------
    def search(self, query, sort=None, offset=0, limit=DEFAULT_LIMIT, token=None, ttl=-1,
               collapse=None, count=True, keys=False):
        """(row keys with scores [(row_key, score)], total count, next token) of
        ``query`` sorted by ``sort`` (the SDK's Sort or None: by primary key),
        ``offset``/``limit`` or ``token``; rows whose newest cell is older than
        ``ttl`` seconds (the index's or the table's TTL) are not there;
        ``collapse``: a field, the first row of each of its values only;
        ``count`` False: the total is not counted where that costs (None);
        ``keys``: the page's hits may be (row key, score) alone."""
        searcher = self.index.searcher()
        tq, vector = self._query(query)
        kind = type(query).__name__
        if token is None:
            start = offset
        else:
            start, sort = _decode_token(token)[0], token_sort(sort, token)
        if tq is None:                     # a KNN without a filter: the nearest rows first
            field, q, top_k = vector[:3]
            picked = self._vectors[field.name].search(q, max(top_k, start + limit), None)
            tq = self._tv.Query.term_set_query(self.schema, "_pk", [k.hex() for k, _ in picked]) \
                if picked else _nothing(self._tv)
        tq = self._live(tq, ttl)
        if limit == 0 and start == 0 and vector is None and collapse is None:
            # no rows asked (aggregations, a count): count, read nothing
            return [], searcher.search(tq, limit=1, count=True).count, None
        top = None
        if kind == "FunctionsScoreQuery" and not getattr(sort, "sorters", None):
            sort = _BY_SCORE                   # the functions' scores order its rows
        if vector is None and collapse is None \
                and kind != "FunctionScoreQuery" and kind != "FunctionsScoreQuery":
            top = self._top(searcher, tq, sort, start + limit, start, count, keys)
        if top is not None:
            page, total, more = top
        else:
            hits = self._hits(searcher, tq, query)
            if vector is not None:
                field, q, top_k, metric, min_score = vector
                raised = top_k < start + limit         # the service then takes offset + limit
                hits = self._knn((field, q, max(top_k, start + limit), metric, min_score), hits)
            self._order(hits, sort)
            if collapse is not None:
                tname, seen, kept = self._names[self.definition.field(collapse).name], set(), []
                for h in hits:
                    value = tuple(h[2].get(tname) or ())
                    if value and value in seen:
                        continue
                    seen.add(value)
                    kept.append(h)
                hits = kept
            total = len(hits)
            page = hits[start:start + limit]
            more = start + limit < total
        next_token = None
        if more or (vector is not None and raised and len(page) == limit):
            next_token = _encode_token(start + limit, sort)
        return page, total, next_token

    def scope(self, query, ttl=-1):
        """The tantivy query of the rows ``query`` matches (a KNN resolved to
        its top_k rows), those older than ``ttl`` seconds left out: the
        scope of a search's aggregations."""
        return self._live(self._inner(query), ttl)

    def top_keys(self, searcher, tq, sort, limit):
        """The row keys of the first ``limit`` rows ``tq`` matches in the order
        of ``sort`` (the SDK's Sort; None: the index's): top_rows."""
        top = self._top(searcher, tq, sort, limit, keys=True)
        if top is not None:
            return [h[0] for h in top[0]]
        hits = self._hits(searcher, tq, None)
        self._order(hits, sort)
        return [h[0] for h in hits[:limit]]

    def _top(self, searcher, tq, sort, need, skip=0, count=True, keys=False):
        """(hits ``skip`` to ``need`` of ``tq`` in the order of ``sort``, the
        number of hits (None unless ``count``), whether more hits follow), reading only those documents (and the rows tied
        with them): tantivy's top-k by ``_pko`` (the row key's first bytes
        after its tag: rows sharing them are ordered by their whole key), by
        a single-valued numeric field's column, or by score; None when the
        order needs every document (a distance, several sorters, an
        ascending score); ``keys``: hits (row key, value) alone."""
        sorters = getattr(sort, "sorters", None) or self.definition.sort().sorters
        if len(sorters) != 1:
            return None
        s, tv = sorters[0], self._tv
        kind = type(s).__name__
        desc = getattr(s, "sort_order", 0) == 1      # the SDK's SortOrder.DESC (an IntEnum)
        if kind in ("PrimaryKeySort", "DocSort"):
            res = searcher.search(tq, limit=_fetch(need), count=count, order_by_field="_pko",
                                  order=tv.Order.Desc if desc else tv.Order.Asc)
            def ties(value, m):        # the rows sharing the key's first 8 bytes
                return [((value,) + v, a) for v, a in self._key_run(
                    searcher, self._tied_query(tq, _KEY_PARTS[0], tv.FieldType.Unsigned,
                                               _pko_of(value, desc)), m, desc, 1)]
            return (self._window(searcher, res.hits, need, skip, ties, desc, keys), res.count,
                    len(res.hits) > need)
        if kind == "FieldSort":
            return self._top_by_field(searcher, tq, s, desc, need, skip, count, keys)
        if kind == "ScoreSort" and (getattr(s, "sort_order", None) is None or desc):
            fetch = _fetch(need, scored=True)
            while True:      # a tie at the k-th score: every row with that score is read
                res = searcher.search(tq, limit=fetch, count=count)
                found = res.hits
                if len(found) < fetch:                      # every hit
                    break
                if not need or found[-1][0] < found[need - 1][0]:
                    break
                fetch *= 4
            return (self._window(searcher, found, need, skip, None, False, keys), res.count,
                    len(found) > need)
        return None

    def _top_by_field(self, searcher, tq, s, desc, need, skip, count, keys=False):
        """``_top`` for a FieldSort on a single-valued LONG, DOUBLE or DATE
        field: tantivy's top k by the field's fast column, which puts the
        rows without a value last in either order (its value 0 there: a
        page that reaches a 0 reads its documents to tell a missing value
        from the extreme one); ties go by primary key; the rows without the
        field, when the page reaches them, by key."""
        f = self.definition.field(s.field_name)
        if f.type not in ("LONG", "DOUBLE", "DATE") or f.is_array or f.parent is not None \
                or getattr(s, "nested_filter", None) is not None:
            return None
        tv, tname = self._tv, self._names[f.name]
        res = searcher.search(tq, limit=_fetch(need), count=count, order_by_field=tname,
                              order=tv.Order.Desc if desc else tv.Order.Asc)
        found = res.hits
        more = len(found) > need
        floats = f.type == "DOUBLE"
        ftype = tv.FieldType.Float if floats else tv.FieldType.Integer
        if found and found[min(need, len(found)) - 1][0] == 0:
            # the page reaches tantivy's 0: the rows without the field, and
            # those of the extreme value (an integer's min descending, max
            # ascending; no double maps to 0), in the order of their documents
            found = [h for h in found if h[0]]
            if not floats:
                found += [(0, a) for _, a in self._tied(
                    searcher, tq, tname, ftype, _sort_value(0, desc, False))]
            if len(found) < need:                        # then the rows without it, by key
                hits = self._window(searcher, found, len(found), skip, None, False, keys)
                missing = self._top(searcher, tv.Query.boolean_query([
                    (tv.Occur.Must, tq),
                    (tv.Occur.MustNot, tv.Query.term_query(self.schema, "_has", f.name))]),
                    _BY_KEY, need - len(found), max(0, skip - len(found)), keys=keys)
                return hits + missing[0], res.count, missing[2]
            more = more or len(found) > need

        def ties(value, m):    # tantivy's sort value is the field's, mapped to a u64
            return [((value,) + v, a) for v, a in self._key_run(
                searcher, self._tied_query(tq, tname, ftype, _sort_value(value, desc, floats)),
                m, False)]
        return self._window(searcher, found, need, skip, ties, False, keys), res.count, more

    def _tied_query(self, tq, tname, ftype, value):
        """``tq``'s rows whose ``tname`` is ``value``."""
        tv = self._tv
        return tv.Query.boolean_query([
            (tv.Occur.Must, tq),
            (tv.Occur.Must, tv.Query.range_query(self.schema, tname, ftype, value, value))])

    def _tied(self, searcher, tq, tname, ftype, value):
        """tantivy's hits of ``tq`` whose ``tname`` is ``value``."""
        return searcher.search(self._tied_query(tq, tname, ftype, value),
                               limit=max(1, searcher.num_docs), count=False).hits

    def _key_run(self, searcher, tq, m, desc, level=0):
        """The first ``m`` hits of ``tq`` by row key (descending: ``desc``)
        as far as the key's parts from ``_KEY_PARTS[level]`` on tell them
        apart, each (the tuple of its parts' sort values, address), and
        every hit that shares all of them with the ``m``-th (a run the
        window orders by the keys it reads).  A part's run of ties that
        reaches past the hits asked for is asked again by the next part,
        restricted to it: the rows of a long common key prefix cost a search
        a part, not a document read each."""
        tv = self._tv
        if level == len(_KEY_PARTS):
            return [((), a) for _, a in searcher.search(tq, limit=max(1, searcher.num_docs),
                                                        count=False).hits]
        part, fetch = _KEY_PARTS[level], _fetch(m)
        hits = searcher.search(tq, limit=fetch, count=False, order_by_field=part,
                               order=tv.Order.Desc if desc else tv.Order.Asc).hits
        if len(hits) < fetch or hits[m - 1][0] != hits[-1][0]:
            return [((v,), a) for v, a in hits]
        edge = hits[m - 1][0]          # its run reaches past the hits: the next part's order
        head = [((v,), a) for v, a in hits if v != edge]
        rest = self._key_run(searcher, self._tied_query(tq, part, tv.FieldType.Unsigned,
                                                        _pko_of(edge, desc)),
                             m - len(head), desc, level + 1)
        return head + [((edge,) + v, a) for v, a in rest]

    def _window(self, searcher, found, need, skip, ties, key_desc, keys=False):
        """Hits ``skip`` to ``need`` as (row key, score, document) of
        ``found``, tantivy's (value, address) hits in its order (at most
        ``need + 1`` of them, or every one at least as good as the
        ``need``-th), rows of equal value ordered by row key (descending:
        ``key_desc``).  Only the documents of the page and of the runs of
        equal values that cross its edges are read; ``ties(value, m)`` gives
        the first ``m`` hits of the ``need``-th value in key order (values:
        tuples that tie only where the keys' first bytes do: _key_run) when
        ``found`` stops inside its run; ``keys``: (row key, score) alone."""
        values = None if keys else self._values
        page = _window_page(searcher.doc, values, found, need, skip, key_desc, ties is None)
        if page is None:                 # found stops inside the need-th value's run
            edge = found[min(need, len(found)) - 1][0]
            run = next(i for i, h in enumerate(found) if h[0] == edge)
            page = _window_page(searcher.doc, values, found[:run] + ties(edge, need - run),
                                need, skip, key_desc, True)
        return page

    def stored(self, searcher, address):
        """The stored document at ``address``: its ``row_key``, ``get(field)``
        and ``fields()`` by tantivy field name (checkers)."""
        return Stored(searcher.doc(address), self._values)

    def _loaded(self, searcher, found):
        """[(row key, score, stored document)] of tantivy's (score, address) hits."""
        return _load_page(searcher.doc, found, self._values)

    def _live(self, tq, ttl):
        if ttl is None or ttl <= 0:
            return tq
        tv = self._tv
        cutoff = int(time.time() * 1000) - ttl * 1000
        return tv.Query.boolean_query([
            (tv.Occur.Must, tq),
            (tv.Occur.Must, tv.Query.range_query(self.schema, "_ts", tv.FieldType.Integer,
                                                 cutoff, _INT_MAX))])

    def _hits(self, searcher, tq, query):
        """[(row key, score, stored document)] of every row ``tq`` matches (a
        FunctionScoreQuery ``query``: scores times its field's value)."""
        result = searcher.search(tq, limit=max(1, searcher.num_docs), count=False)
        if type(query).__name__ == "FunctionsScoreQuery":
            return self._functions_scored(searcher, tq, query, result.hits)
        factor = (self._names[self.definition.field(query.field_value_factor.field_name).name]
                  if type(query).__name__ == "FunctionScoreQuery" else None)
        hits = []
        for score, address in result.hits:
            doc = Stored(searcher.doc(address), self._values)
            if factor is not None:        # the query's score times the field's value
                score = score * float((doc.get(factor) or [0])[0])
            hits.append((doc.row_key, score, doc))
        return hits

    def _functions_scored(self, searcher, tq, q, found):
        """[(row key, score, stored document)] of tantivy's ``found`` hits of
        FunctionsScoreQuery ``q`` (``tq``: its query), scored by its functions
        (searchscore); the rows under its ``min_score`` left out."""
        tv, every = self._tv, max(1, searcher.num_docs)
        passes = []                       # per function: the addresses its filter matches
        for fn in q.functions:
            if fn.filter is None:
                passes.append(None)
                continue
            both = tv.Query.boolean_query([(tv.Occur.Must, tq),
                                           (tv.Occur.Must, self._inner(fn.filter))])
            passes.append({(a.segment_ord, a.doc)
                           for _, a in searcher.search(both, limit=every, count=False).hits})

        def values_of(doc):
            def values(name):
                f = self.definition.field(name)
                tname = self._names[f.name]
                if f.type == "GEO_POINT":
                    return list(zip(doc.get(tname + "_lat", ()), doc.get(tname + "_lon", ())))
                if f.type not in ("LONG", "DOUBLE", "DATE"):
                    raise service_error("search_query_field_type", query="FunctionsScoreQuery",
                                        field=name)
                return doc.get(tname, ())
            return values

        def date_ms(name, text):
            return _date_ms(self.definition.field(name), text)

        hits = []
        for base, address in found:
            doc = Stored(searcher.doc(address), self._values)
            at = (address.segment_ord, address.doc)
            score = searchscore.score(q, base, [p is None or at in p for p in passes],
                                      values_of(doc), date_ms, _point, _haversine)
            if score is not None:
                hits.append((doc.row_key, score, doc))
        return hits

    def _order(self, hits, sort):
        """Sort ``hits`` in place by ``sort``; ties go by primary key."""
        keys = self._sort_keys(sort)
        hits.sort(key=lambda h: h[0])
        for key_fn, reverse in reversed(keys):
            hits.sort(key=key_fn, reverse=reverse)

    def highlight(self, query, doc, parameters, html=False):
        """The SDK's HighlightResult of one hit (its stored document ``doc``)
        for the Highlight's ``parameters``: each field's text as written,
        with the query's terms on that field wrapped in the tags (``html``:
        the HTML_MODE encoder, the text around the tags HTML-escaped)."""
        sdk = _sdk()
        out = []
        for p in parameters:
            f = self.definition.field(p.field_name)
            if not f.highlight:
                raise service_error("search_highlight_field", field=f.name)
            text = (doc.get(self._names[f.name] + "_raw") or [""])[0]
            words = {w for w in _query_words(query, f)}
            fragments = _highlight(text, words, p.pre_tag or "<em>", p.post_tag or "</em>",
                                   p.fragment_size or 100, p.number_of_fragments or 5,
                                   not f.params.get("case_sensitive"),
                                   _html_escape if html else None)
            if fragments:
                out.append(sdk.HighlightField(f.name, fragments))
        return sdk.HighlightResult(out)

    def holds(self, row_key, f, values):
        """Whether the document of ``row_key`` holds field ``f`` as
        ``values`` (``_field_values``' of the row's column; [] or None: the
        document has no value of ``f``): each value found by a query on the
        field beside the key (a TEXT: its every token), for checkers, since
        a document stores its key alone."""
        tv, tname = self._tv, self._names[f.name]
        key = (tv.Occur.Must, tv.Query.term_query(self.schema, "_pk", row_key.hex()))
        searcher = self.index.searcher()

        def count(*parts):
            return searcher.search(tv.Query.boolean_query([key, *parts]), 1).count

        if not values:
            return count((tv.Occur.Must, tv.Query.term_query(self.schema, "_has", f.name))) == 0
        for v in values:
            if f.type == "TEXT":
                parts = [(tv.Occur.Must, tv.Query.term_query(self.schema, tname, w))
                         for w in dict.fromkeys(_analyze_text(f, v).split(" ")) if w]
            elif f.type == "GEO_POINT":
                parts = [(tv.Occur.Must, tv.Query.range_query(
                    self.schema, tname + suffix, tv.FieldType.Float, x, x))
                    for suffix, x in (("_lat", v[0]), ("_lon", v[1]))]
            elif f.type == "DOUBLE":
                parts = [(tv.Occur.Must, tv.Query.range_query(self.schema, tname,
                                                              tv.FieldType.Float, v, v))]
            elif f.type == "VECTOR":             # the vector held in memory for it
                store = self._vectors[f.name]
                ident = store.ids.get(row_key)
                if ident is None or [float(x) for x in store.vecs[ident]] != [
                        float(x) for x in _numpy().asarray(v, dtype=_numpy().float32)]:
                    return False
                continue
            else:                   # LONG, DATE, BOOLEAN, KEYWORD: the term itself
                parts = [(tv.Occur.Must, tv.Query.term_query(self.schema, tname, v))]
            if count(*parts) != 1:
                return False
        return True

    # -- inner hits of nested queries ----------------------------------------------
    def inner_hit_queries(self, query):
        """The NestedQuerys of ``query`` (in its positive clauses) that ask
        for inner hits."""
        out, kind = [], type(query).__name__
        if kind == "NestedQuery":
            if getattr(query, "inner_hits", None) is not None:
                out.append(query)
        elif kind == "BoolQuery":
            for attr in ("must_queries", "should_queries", "filter_queries"):
                for sub in getattr(query, attr, None) or ():
                    out += self.inner_hit_queries(sub)
        elif kind in ("ConstScoreQuery", "FunctionScoreQuery", "FunctionsScoreQuery"):
            out += self.inner_hit_queries(getattr(query, "filter", None)
                                          or getattr(query, "query", None))
        elif kind == "DisMaxQuery":
            for sub in query.queries or ():
                out += self.inner_hit_queries(sub)
        return out

    def inner_hits(self, nested, objects_of, html=False):
        """The SDK's SearchInnerHits of one hit: for each NestedQuery of
        ``nested``, the objects of its path (``objects_of(path)``: the row's,
        in order) that its inner query matches, as SearchHits with their
        ``nested_doc_offset``, score and highlight, sorted and paged by its
        InnerHits (default: by score, 3).  The objects are searched by an
        engine of their own, so every query type means what it does here."""
        sdk = _sdk()
        out = []
        for q in nested:
            self.definition.field(q.path)
            prefix = q.path + "."
            fields = [FieldDef(**dict(f.to_json(), parent=None if f.parent == q.path
                                      else f.parent))
                      for f in self.definition.fields if f.name.startswith(prefix)]
            engine = Engine(SearchIndexDef("inner", self.definition.base, fields), [])
            tops = [f for f in fields if f.parent is None]
            for offset, o in enumerate(objects_of(q.path)):
                if not isinstance(o, dict):
                    continue
                live = {f.name: [(0, _as_column(o.get(f.name[len(prefix):])))]
                        for f in tops if o.get(f.name[len(prefix):]) is not None}
                engine.upsert(b"\x00" + offset.to_bytes(8, "big"), {}, live)
            engine.commit()
            inner = q.inner_hits
            sort = inner.sort or _BY_SCORE
            hits, _, _ = engine.search(q.query, sort, inner.offset or 0,
                                       3 if inner.limit is None else inner.limit)
            params = getattr(getattr(inner, "highlight", None), "highlight_parameters", None)
            found = [sdk.SearchHit(None, score, engine.highlight(q.query, doc, params, html)
                                   if params else None, None,
                                   int.from_bytes(key[1:], "big"))
                     for key, score, doc in hits]
            out.append(sdk.SearchInnerHit(q.path, found))
        return out

    def scan(self, query, parallel_id, max_parallel, after, limit):
        """ParallelScan: up to ``limit`` row keys matching ``query`` of stream
        ``parallel_id`` of ``max_parallel`` (rows are dealt to the streams by
        a hash of their key, so each row is in exactly one, whatever is
        written meanwhile), in key order after row key ``after`` (None: from
        the start)."""
        searcher = self.index.searcher()
        tq, vector = self._query(query)
        if vector is not None:
            raise service_error("search_query_unsupported", query="KnnVectorQuery in a scan")
        result = searcher.search(tq, limit=max(1, searcher.num_docs), count=False)
        keys = []
        for _, address in result.hits:
            row_key = Stored(searcher.doc(address), self._values).row_key
            if after is not None and row_key <= after:
                continue
            if max_parallel > 1 and zlib.crc32(row_key) % max_parallel != parallel_id:
                continue
            keys.append(row_key)
        keys.sort()
        return keys[:limit]

    def _sort_keys(self, sort):
        sorters = list(getattr(sort, "sorters", None) or ())
        if not sorters:
            # the index's sort (by primary key ascending unless it says
            # otherwise): relevance is never the default (the service's docs)
            sorters = self.definition.sort().sorters
        out = []
        for s in sorters:
            kind = type(s).__name__
            desc = int(getattr(s, "sort_order", 0) or 0) == 1
            if kind == "PrimaryKeySort" or kind == "DocSort":
                out.append(((lambda h: h[0]), desc))
            elif kind == "ScoreSort":
                desc = getattr(s, "sort_order", None) is None or desc
                out.append(((lambda h: h[1]), desc))
            elif kind == "FieldSort":
                f = self.definition.field(s.field_name)
                if f.type in ("TEXT", "VECTOR", "NESTED"):
                    raise service_error("search_sort_not_enabled", field=f.name)
                tname = self._names[f.name]
                mode_max = int(getattr(s, "sort_mode", 0) or 0) == 1
                out.append((_field_sort_key(tname, desc, mode_max), desc))
            elif kind == "GeoDistanceSort":
                f = self.definition.field(s.field_name)
                if f.type != "GEO_POINT":
                    raise service_error("search_sort_not_enabled", field=f.name)
                lat, lon = _point((s.points or [None])[0])
                tname = self._names[f.name]
                out.append((_geo_sort_key(tname, lat, lon, desc), desc))
            else:
                raise service_error("search_sort_unsupported", sort=kind)
        return out

    def _knn(self, vector, hits):
        """The ``top_k`` of ``hits`` (the rows the filter matched) nearest to
        the query vector, by the field's metric, with the service's scores."""
        field, q, top_k, _, min_score = vector
        by_key = {h[0]: h for h in hits}
        found = self._vectors[field.name].search(q, top_k, by_key)
        return [(key, score, by_key[key][2]) for key, score in found
                if min_score is None or score >= min_score]

    def _query(self, q):
        """(tantivy query, vector search or None) of the SDK's query ``q``."""
        tv, schema = self._tv, self.schema
        kind = type(q).__name__
        if q is None or kind == "MatchAllQuery":
            return tv.Query.all_query(), None
        if kind == "KnnVectorQuery":
            f = self.definition.field(q.field_name)
            if f.type != "VECTOR":
                raise service_error("search_query_field_type", query=kind, field=f.name)
            np = _numpy()
            vec = np.asarray(q.float32_query_vector, dtype=np.float32)
            if vec.shape != (f.dimension,):
                raise service_error("search_vector_dimension", field=f.name,
                                    dimension=f.dimension)
            # no filter: the vectors alone (search() loads the top k's documents only)
            base = self._inner(q.filter) if getattr(q, "filter", None) is not None else None
            top_k = q.top_k if q.top_k is not None else DEFAULT_LIMIT
            if not isinstance(top_k, int) or not 0 < top_k <= MAX_TOP_K:
                raise service_error("search_top_k", top_k=top_k, max=MAX_TOP_K)
            return base, (f, vec, top_k, f.metric, getattr(q, "min_score", None))
        if kind == "BoolQuery":
            return self._bool(q), None
        if kind == "ConstScoreQuery":
            return tv.Query.const_score_query(self._inner(q.filter), 1.0), None
        if kind == "FunctionScoreQuery":       # its score: search() (at the top)
            return self._inner(q.query), None
        if kind == "FunctionsScoreQuery":      # its scores: _hits (searchscore)
            searchscore.check(q)
            return self._inner(q.query), None
        if kind == "DisMaxQuery":
            return tv.Query.disjunction_max_query([self._inner(s) for s in q.queries or ()],
                                                  q.tie_breaker), None
        if kind in ("GeoDistanceQuery", "GeoBoundingBoxQuery", "GeoPolygonQuery"):
            return self._geo(kind, q), None
        if kind == "NestedQuery":           # sub-fields are flattened: the inner query
            self.definition.field(q.path)
            return self._inner(q.query), None
        if kind == "ExistsQuery":
            self.definition.field(q.field_name)
            return tv.Query.term_query(schema, "_has", q.field_name), None
        f = self.definition.field(q.field_name)
        tname = self._names[f.name]
        if kind == "TermQuery":
            return self._term(f, tname, q.column_value), None
        if kind == "TermsQuery":
            return tv.Query.boolean_query([(tv.Occur.Should, self._term(f, tname, v))
                                           for v in q.column_values]), None
        if kind == "RangeQuery":
            return self._range(f, tname, q), None
        if kind in ("PrefixQuery", "SuffixQuery", "WildcardQuery"):
            if f.type != "KEYWORD" and f.type != "TEXT":
                raise service_error("search_query_field_type", query=kind, field=f.name)
            pattern = (re.escape(q.prefix) + ".*" if kind == "PrefixQuery"
                       else ".*" + re.escape(q.suffix) if kind == "SuffixQuery"
                       else _wildcard_regex(q.value))
            return tv.Query.regex_query(schema, tname, pattern), None
        if kind in ("MatchQuery", "MatchPhraseQuery"):
            if f.type != "TEXT":               # a keyword (or number) matches whole
                return self._term(f, tname, q.text), None
            words = [w.replace(" ", _SPACE) for w in _tokens(f, q.text)]
            if not words:
                return _nothing(tv), None
            if kind == "MatchPhraseQuery" and (f.analyzer == "fuzzy"):
                # a phrase on n-grams is a substring search: the whole text if
                # it is one n-gram, else every longest n-gram of it
                text, hi = q.text.lower(), f.params.get("max_chars", 7)
                grams = [text] if len(text) <= hi else sorted(
                    {text[i:i + hi] for i in range(len(text) - hi + 1)})
                return tv.Query.boolean_query([
                    (tv.Occur.Must, tv.Query.term_query(schema, tname, g.replace(" ", _SPACE)))
                    for g in grams]), None
            if kind == "MatchPhraseQuery":
                if len(words) == 1:
                    return tv.Query.term_query(schema, tname, words[0]), None
                return tv.Query.phrase_query(schema, tname, words), None
            terms = [tv.Query.term_query(schema, tname, w) for w in dict.fromkeys(words)]
            if len(terms) == 1:           # one word: its term, scored alike, unwrapped
                return terms[0], None
            if _enum_name(getattr(q, "operator", None), _OPERATORS) == "AND":
                return tv.Query.boolean_query([(tv.Occur.Must, t) for t in terms]), None
            msm = getattr(q, "minimum_should_match", None)
            if isinstance(msm, int) and msm > 1:
                return self._at_least(terms, msm), None
            return tv.Query.boolean_query([(tv.Occur.Should, t) for t in terms]), None
        raise service_error("search_query_unsupported", query=kind)

    def _geo(self, kind, q):
        """A geo query: the rows whose point is inside, found through the
        latitude/longitude fields' ranges (a bounding box) and checked
        exactly, as a set of row keys."""
        f = self.definition.field(q.field_name)
        if f.type != "GEO_POINT":
            raise service_error("search_query_field_type", query=kind, field=f.name)
        tname = self._names[f.name]
        if kind == "GeoDistanceQuery":
            lat, lon = _point(q.center_point)
            return self.geo_ring(f, lat, lon, 0.0, float(q.distance), True)
        if kind == "GeoBoundingBoxQuery":
            top, left = _point(q.top_left)
            bottom, right = _point(q.bottom_right)
            box = (bottom, top, left, right)
            # the bottom edge is out (the vendor's test: the service's 500 of 600 rows)
            inside = lambda a, b: a > bottom  # noqa: E731
        else:
            poly = [_point(p) for p in q.points]
            box = (min(p[0] for p in poly), max(p[0] for p in poly),
                   min(p[1] for p in poly), max(p[1] for p in poly))
            inside = lambda a, b: _in_polygon(a, b, poly)  # noqa: E731
        return self._geo_rows(tname, box, inside)

    def geo_ring(self, f, lat, lon, near, far, far_in=False):
        """Rows with a point of GEO_POINT field ``f`` at ``near`` metres or more
        from (lat, lon) and less than ``far`` (at most, ``far_in``)."""
        dlat = min(math.degrees(far / _EARTH_M), 180.0)
        dlon = min(dlat / max(math.cos(math.radians(lat)), 1e-9), 360.0)
        box = (lat - dlat, lat + dlat, lon - dlon, lon + dlon)

        def inside(a, b):
            d = _haversine(lat, lon, a, b)
            return near <= d and (d < far or far_in and d == far)
        return self._geo_rows(self._names[f.name], box, inside)

    def _geo_rows(self, tname, box, inside):
        """The rows with a point in ``box`` (lat, lat, lon, lon) for which
        ``inside(lat, lon)``: a term set of their keys."""
        tv = self._tv
        ranges = tv.Query.boolean_query([
            (tv.Occur.Must, tv.Query.range_query(self.schema, tname + "_lat", tv.FieldType.Float,
                                                 box[0], box[1])),
            (tv.Occur.Must, tv.Query.range_query(self.schema, tname + "_lon", tv.FieldType.Float,
                                                 box[2], box[3]))])
        searcher = self.index.searcher()
        keys = []
        for _, address in searcher.search(ranges, limit=max(1, searcher.num_docs)).hits:
            doc = Stored(searcher.doc(address), self._values)
            if any(inside(a, b) for a, b in zip(doc.get(tname + "_lat", ()),
                                                doc.get(tname + "_lon", ()))):
                keys.append(doc.row_key.hex())
        if not keys:
            return _nothing(tv)
        return tv.Query.term_set_query(self.schema, "_pk", keys)

    def _term(self, f, tname, value):
        tv = self._tv
        if f.type in ("KEYWORD", "TEXT"):
            if not isinstance(value, str):
                raise service_error("search_query_value_type", field=f.name, type=f.type)
            return tv.Query.term_query(self.schema, tname, value)
        return tv.Query.term_query(self.schema, tname, _typed(f, value))

    def _range(self, f, tname, q):
        tv = self._tv
        lo, hi = q.range_from, q.range_to
        if f.type in ("LONG", "DATE"):
            ftype, lo_d, hi_d = tv.FieldType.Integer, _INT_MIN, _INT_MAX
        elif f.type == "DOUBLE":
            ftype, lo_d, hi_d = tv.FieldType.Float, -math.inf, math.inf
        elif f.type == "KEYWORD":
            # strings: a regex can't bound; filter the terms by comparing in Python
            return self._keyword_range(f, tname, q)
        else:
            raise service_error("search_query_field_type", query="RangeQuery", field=f.name)
        lower = lo_d if lo is None else _typed(f, lo)
        upper = hi_d if hi is None else _typed(f, hi)
        return tv.Query.range_query(self.schema, tname, ftype, lower, upper,
                                    include_lower=bool(q.include_lower) or lo is None,
                                    include_upper=bool(q.include_upper) or hi is None)

    def _keyword_range(self, f, tname, q):
        """A range of a KEYWORD field (tantivy has no range over strings): the
        field's distinct values (its fast column's terms) inside, as terms."""
        tv = self._tv
        searcher = self.index.searcher()
        terms = aggregate(searcher, tv.Query.all_query(), {"v": {"terms": {
            "field": tname, "size": _KEYWORDS_MAX, "segment_size": _KEYWORDS_MAX}}})["v"]
        if terms.get("sum_other_doc_count"):        # too many: every document's values
            result = searcher.search(tv.Query.all_query(), limit=max(1, searcher.num_docs))
            distinct = {v for _, address in result.hits
                        for v in Stored(searcher.doc(address), self._values).get(tname, ())}
        else:
            distinct = [b["key"] for b in terms["buckets"]]
        values = set()
        for v in distinct:
            if ((q.range_from is None or v > q.range_from
                 or (q.include_lower and v == q.range_from))
                    and (q.range_to is None or v < q.range_to
                         or (q.include_upper and v == q.range_to))):
                values.add(v)
        return tv.Query.boolean_query([(tv.Occur.Should, tv.Query.term_query(self.schema, tname, v))
                                       for v in sorted(values)])

    def _inner(self, q):
        """A query inside another: a KnnVectorQuery there is resolved now to
        its top_k rows, each scoring its similarity (so a Bool adds it to
        its other clauses' scores: the hybrid search of the vector stores)."""
        tq, vector = self._query(q)
        if vector is None:
            return tq
        tv = self._tv
        field, vec, top_k, _, min_score = vector
        if tq is None:
            candidates = None
        else:
            searcher = self.index.searcher()
            candidates = {Stored(searcher.doc(a), self._values).row_key
                          for _, a in searcher.search(tq, limit=max(1, searcher.num_docs)).hits}
        found = [(k, s) for k, s in self._vectors[field.name].search(vec, top_k, candidates)
                 if min_score is None or s >= min_score]
        if not found:
            return _nothing(tv)
        return tv.Query.boolean_query([
            (tv.Occur.Should, tv.Query.const_score_query(
                tv.Query.term_query(self.schema, "_pk", key.hex()), score))
            for key, score in found])

    def _bool(self, q):
        tv = self._tv
        parts = []
        for attr, occur in (("must_queries", tv.Occur.Must), ("filter_queries", tv.Occur.Must),
                            ("must_not_queries", tv.Occur.MustNot)):
            for sub in getattr(q, attr, None) or ():
                parts.append((occur, self._inner(sub)))
        should = [self._inner(sub) for sub in getattr(q, "should_queries", None) or ()]
        msm = getattr(q, "minimum_should_match", None)
        if should:
            if msm is None:
                msm = 0 if parts else 1
            if msm <= 1:
                if msm == 1 and parts:
                    parts.append((tv.Occur.Must, tv.Query.boolean_query(
                        [(tv.Occur.Should, s) for s in should])))
                else:
                    parts += [(tv.Occur.Should, s) for s in should]
            else:
                parts.append((tv.Occur.Must, self._at_least(should, msm)))
        if not parts:
            return tv.Query.all_query()
        if all(o == tv.Occur.MustNot for o, _ in parts):
            parts.append((tv.Occur.Must, tv.Query.all_query()))
        return tv.Query.boolean_query(parts)

    def _at_least(self, should, msm):
        """Rows matching at least ``msm`` of ``should`` (tantivy's boolean
        query has no minimum_should_match): every combination of msm of them."""
        import itertools
        tv = self._tv
        if msm > len(should):
            return _nothing(tv)
        combos = [tv.Query.boolean_query([(tv.Occur.Must, s) for s in combo])
                  for combo in itertools.combinations(should, msm)]
        return tv.Query.boolean_query([(tv.Occur.Should, c) for c in combos])


# -- vectors ---------------------------------------------------------------------------
EXACT_MAX = 25_000     # rows a KNN searches exactly (numpy) below; usearch's HNSW above
_USEARCH_METRICS = {"euclidean": "l2sq", "cosine": "cos", "dot_product": "ip"}


class _Vectors:
    """One VECTOR field's vectors: ``put(row_key, vector or None)``, and
    ``search(q, k, candidates)``: the k nearest among ``candidates`` (row
    keys), by exact search when there are few (up to EXACT_MAX: the
    measurement in docs/search.md), else through a usearch HNSW index kept
    beside (over-fetched, then filtered to the candidates; exact again when
    that leaves fewer than k).  Callers hold the engine's lock to change it."""

    def __init__(self, field):
        self.field = field
        self.ids, self.keys, self.vecs = {}, {}, {}     # row key <-> id, id -> vector
        self._next = 0
        self._hnsw = None
        self._lock = threading.Lock()

    def put(self, row_key, vector):
        np = _numpy()
        with self._lock:
            old = self.ids.pop(row_key, None)
            if old is not None:
                self.keys.pop(old)
                self.vecs.pop(old)
                if self._hnsw is not None:
                    self._hnsw.remove(old)
            if vector is None:
                return
            ident, self._next = self._next, self._next + 1
            vec = np.asarray(vector, dtype=np.float32)
            self.ids[row_key], self.keys[ident], self.vecs[ident] = ident, row_key, vec
            if self._hnsw is not None:
                self._hnsw.add(ident, vec)
            elif len(self.vecs) > EXACT_MAX:
                self._build()

    def _build(self):
        from regions.extras import require
        index = require("usearch.index", "Vector search").Index(
            ndim=self.field.dimension, metric=_USEARCH_METRICS[self.field.metric],
            dtype="f32", connectivity=16, expansion_add=128, expansion_search=128)
        np = _numpy()
        ids = np.fromiter(self.vecs, dtype=np.uint64, count=len(self.vecs))
        index.add(ids, np.vstack([self.vecs[int(i)] for i in ids]))
        self._hnsw = index

    def search(self, q, k, candidates):
        np = _numpy()
        with self._lock:
            if candidates is None:
                idents = list(self.keys)
            else:
                idents = [self.ids[key] for key in candidates if key in self.ids]
            if self._hnsw is not None and len(idents) > EXACT_MAX:
                wanted = set(idents)
                # over-fetched (a filter's candidates: 20x; else 4x, at least 32),
                # which lifts the graph's recall for the k kept
                fetch = min(len(self.vecs), k * 20 if len(wanted) < len(self.vecs)
                            else max(k * 4, 32))
                found = self._hnsw.search(q, fetch)
                picked = [(int(i), float(d)) for i, d in zip(found.keys, found.distances)
                          if int(i) in wanted][:k]
                if len(picked) >= min(k, len(wanted)):
                    return [(self.keys[i], _score_of(self.field.metric, d)) for i, d in picked]
            if not idents:
                return []
            m = np.vstack([self.vecs[i] for i in idents])
        scores = _vector_scores(np, m, q, self.field.metric)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.keys[idents[i]], float(scores[i])) for i in order]


def _score_of(metric, distance):
    """The service's score of a usearch distance (l2sq, 1 - cos, 1 - dot)."""
    if metric == "euclidean":
        return 1.0 / (1.0 + distance)
    return (1.0 + (1.0 - distance)) / 2.0


# -- values -----------------------------------------------------------------------------
def _nested_objects(value):
    """A NESTED column's objects (a JSON array of objects), or none."""
    try:
        objects = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return []
    return objects if isinstance(objects, list) else []


def _field_values(f, value, parsed=False):
    """The values a column's value gives field ``f`` (a list: arrays give
    several; a value that does not fit the type gives none, as the service
    drops dirty data: never an error, which would stop the index's feed).
    ``parsed``: a nested object's value, already JSON (an array is a list)."""
    try:
        return _values(f, value, parsed)
    except (ValueError, TypeError, OverflowError, re.error):
        log.warning("search index field %r: a value it cannot take is left out", f.name)
        return []


def _values(f, value, parsed):
    if value is None:
        return []
    if parsed:
        items = value if isinstance(value, list) else [value]
        if f.type == "VECTOR":
            return [value] if isinstance(value, list) and len(value) == f.dimension else []
        return [v for v in (_coerce(f, x) for x in items) if v is not None]
    if f.is_array or f.type in ("VECTOR",):
        if f.type == "VECTOR":
            try:
                vec = json.loads(value) if isinstance(value, str) else None
            except ValueError:
                return []
            if not isinstance(vec, list) or len(vec) != f.dimension:
                return []
            return [vec]
        try:
            items = json.loads(value) if isinstance(value, str) else None
        except ValueError:
            return []
        if not isinstance(items, list):
            return []
        return [v for v in (_coerce(f, x) for x in items) if v is not None]
    v = _coerce(f, value)
    return [] if v is None else [v]


def _coerce(f, value):
    t = f.type
    if t == "DATE":
        return _date_ms(f, value)
    if t == "LONG":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if t == "DOUBLE":
        if isinstance(value, bool):
            return None
        return float(value) if isinstance(value, (int, float)) else None
    if t == "BOOLEAN":
        return value if isinstance(value, bool) else None
    if t in ("KEYWORD", "TEXT"):
        return value if isinstance(value, str) else None
    if t == "GEO_POINT":
        if not isinstance(value, str):
            return None
        try:
            lat, lon = (float(x) for x in value.split(","))
        except ValueError:
            return None
        return (lat, lon, value)
    return None


_EPOCH_UNITS = {"epoch_second": 1000, "epoch_millis": 1, "epoch_micros": 0.001,
                "epoch_nanos": 0.000001}
#: Java date-format letters -> (regex group, digits): strict, as Java's parsing
#: is ("dd" is two digits; "SSSSSS" six digits of the second's fraction).
_JAVA_FIELDS = {"y": "year", "M": "month", "d": "day", "H": "hour", "m": "minute",
                "s": "second", "S": "fraction"}
_FORMATS = {}


def _date_regex(fmt):
    """The compiled regex of Java date format ``fmt`` (its letters as named
    digit groups, 'quoted' text and punctuation literal, X/Z a zone), or
    None for a format this server does not parse."""
    if fmt in _FORMATS:
        return _FORMATS[fmt]
    out, i, ok = [], 0, True
    while i < len(fmt):
        ch = fmt[i]
        run = len(fmt) - i - len(fmt[i:].lstrip(ch))
        if ch == "'":
            close = fmt.find("'", i + 1)
            if close < 0:
                ok = False
                break
            out.append(re.escape(fmt[i + 1:close]))
            i = close + 1
            continue
        if ch in _JAVA_FIELDS:
            name = _JAVA_FIELDS[ch]
            if "(?P<%s>" % name in "".join(out):
                ok = False
                break
            out.append(r"(?P<%s>\d{%d})" % (name, run))
        elif ch in "XZ":
            out.append(r"(?P<zone>Z|[+-]\d{2}:?\d{2})")
        elif ch.isalpha():
            ok = False                     # a letter this server does not know
            break
        else:
            out.append(re.escape(ch * run))
        i += run
    _FORMATS[fmt] = re.compile("".join(out)) if ok else None
    return _FORMATS[fmt]


def _date_ms(f, value):
    """A DATE field's value as ms since the epoch: an integer by the field's
    epoch format (epoch_millis when none is given), a string by one of its
    Java-style date formats (yyyy-MM-dd'T'HH:mm:ss.SSSSSS...; UTC unless it
    names a zone); else None (not indexed, as the service drops a value it
    cannot parse)."""
    if isinstance(value, bool):
        return None
    formats = f.date_formats or ["epoch_millis"]
    if isinstance(value, int):
        for fmt in formats:
            if fmt in _EPOCH_UNITS:
                return int(value * _EPOCH_UNITS[fmt])
        return value
    if not isinstance(value, str):
        return None
    import datetime
    for fmt in formats:
        regex = None if fmt in _EPOCH_UNITS else _date_regex(fmt)
        m = regex.fullmatch(value) if regex is not None else None
        if m is None:
            continue
        g = m.groupdict()
        zone = datetime.timezone.utc
        if g.get("zone") and g["zone"] != "Z":
            z = g["zone"].replace(":", "")
            minutes = int(z[1:3]) * 60 + int(z[3:5])
            zone = datetime.timezone(datetime.timedelta(minutes=-minutes if z[0] == "-"
                                                        else minutes))
        try:
            parsed = datetime.datetime(int(g.get("year") or 1970), int(g.get("month") or 1),
                                       int(g.get("day") or 1), int(g.get("hour") or 0),
                                       int(g.get("minute") or 0), int(g.get("second") or 0),
                                       tzinfo=zone)
        except ValueError:
            continue
        fraction = g.get("fraction") or "0"
        return int(parsed.timestamp()) * 1000 + int(fraction[:3].ljust(3, "0"))
    return None


def _typed(f, value):
    if isinstance(value, str) and f.type in ("LONG", "DOUBLE"):
        try:                              # the service converts a query's string
            value = int(value) if f.type == "LONG" else float(value)
        except ValueError:
            pass
    elif isinstance(value, float) and f.type == "LONG" and value.is_integer():
        value = int(value)                # and a whole DOUBLE (the Java SDK's Timeline tests)
    v = _coerce(f, value)
    if v is None:
        raise service_error("search_query_value_type", field=f.name, type=f.type)
    return v


def _ignore(*args):
    pass


class _Discard:
    """A document that keeps nothing (``_fill`` for the values alone)."""

    add_text = add_integer = add_float = add_boolean = add_bytes = add_unsigned = \
        staticmethod(_ignore)


_DISCARD = _Discard()


def _add(doc, f, tname, v, stored):
    """Index value ``v`` of field ``f`` (tantivy field ``tname``) in ``doc``,
    and keep what a search reads back in ``stored`` (Stored)."""
    t = f.type
    if t in ("LONG", "DATE"):
        doc.add_integer(tname, v)
    elif t == "DOUBLE":
        doc.add_float(tname, v)
    elif t == "BOOLEAN":
        doc.add_boolean(tname, v)
    elif t in ("KEYWORD",):
        doc.add_text(tname, v)
    elif t == "TEXT":
        if doc is not _DISCARD:
            doc.add_text(tname, _analyze_text(f, v))
        if f.highlight:
            stored.setdefault(tname + "_raw", []).append(v)   # as written (highlighting)
        return
    elif t == "GEO_POINT":
        doc.add_text(tname, v[2])
        doc.add_float(tname + "_lat", v[0])
        doc.add_float(tname + "_lon", v[1])
        for suffix, x in (("", v[2]), ("_lat", v[0]), ("_lon", v[1])):
            stored.setdefault(tname + suffix, []).append(x)
        return
    elif t == "VECTOR":
        doc.add_bytes(tname, struct.pack("<%df" % len(v), *v))     # stored itself
        return
    stored.setdefault(tname, []).append(v)


_SPACE = "\u2581"        # stands for a space inside a token (tantivy splits on spaces)


def _analyze_text(f, text):
    """The text as indexed: its tokens (``_tokens``) joined by spaces, which
    tantivy's whitespace tokenizer splits again, in order (phrase positions)."""
    return " ".join(t.replace(" ", _SPACE) for t in _tokens(f, text))


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+")
_LETTERS_DIGITS = re.compile(r"[^\W\d_]+|\d+")


def _tokens(f, text):
    """The tokens of ``text`` by field ``f``'s analyzer, as the service
    describes each (docs/search.md); a query's text goes through the same.

    - single_word: words split at whitespace and punctuation, each CJK
      character a word; lower-cased unless ``case_sensitive``; with
      ``delimit_word``, letters and digits apart ("iPhone6": iphone, 6).
    - max_word / min_word: Chinese segmented by jieba's dictionary (rjieba):
      max_word every dictionary word it finds, overlapping (jieba's search
      mode: 菊花茶 -> 菊花, 花茶, 菊花茶), min_word the fewest (its precise
      mode); other words as single_word; lower-cased.
    - split: the text split at ``delimiter`` (default a space), as written.
    - fuzzy: every substring of ``min_chars`` to ``max_chars`` characters
      (n-grams), lower-cased.
    """
    analyzer = f.analyzer or "single_word"
    if analyzer == "split":
        delimiter = f.params.get("delimiter") or " "
        return [t for t in text.split(delimiter) if t]
    if analyzer == "fuzzy":
        lo, hi = f.params.get("min_chars", 1), f.params.get("max_chars", 7)
        low = text.lower()
        return sorted({low[i:i + n] for n in range(lo, hi + 1) for i in range(len(low) - n + 1)})
    case = analyzer == "single_word" and f.params.get("case_sensitive")
    split_digits = analyzer == "single_word" and f.params.get("delimit_word")
    out = []
    for w in _WORD.findall(text):
        if _CJK.search(w):
            if analyzer == "max_word":
                out += _max_words(w)
            elif analyzer == "min_word":
                out += [p.lower() for p in _jieba().cut(w) if _WORD.fullmatch(p)]
            else:
                out += [p.lower() for p in _split_cjk(w)]
            continue
        for part in (_LETTERS_DIGITS.findall(w) if split_digits else (w,)):
            out.append(part if case else part.lower())
    return out


def _max_words(word):
    """max_word: every dictionary word in ``word`` (jieba's full mode), a
    single character only where no longer word covers it (梨花茶 -> 梨花,
    花茶: the service's "the most words")."""
    parts = [p.lower() for p in _jieba().cut_all(word) if _WORD.fullmatch(p)]
    longer = [p for p in parts if len(p) > 1]
    out = []
    for p in parts:
        if len(p) == 1 and any(p in q for q in longer):
            continue                  # a character a word covers
        shorter = [q for q in longer if len(q) < len(p) and q in p]
        if len(p) > 2 and shorter and all(any(c in q for q in shorter) for c in p):
            continue                  # a word its shorter words cover (菊花茶: 菊花, 花茶)
        out.append(p)
    return out


def _split_cjk(word):
    """single_word: each CJK character alone, runs of other characters kept."""
    return [m for m in re.findall(r"[\u3400-\u9fff\uf900-\ufaff]|[^\u3400-\u9fff\uf900-\ufaff]+",
                                  word)]


def _jieba():
    from regions.extras import require
    return require("rjieba", "The max_word and min_word analyzers")


def _query_words(query, f):
    """The tokens the query looks for in field ``f`` (highlighting)."""
    if query is None:
        return []
    kind = type(query).__name__
    words = []
    if getattr(query, "field_name", None) == f.name:
        if kind in ("MatchQuery", "MatchPhraseQuery"):
            words += _tokens(f, query.text)
        elif kind == "TermQuery":
            words.append(query.column_value)
        elif kind == "TermsQuery":
            words += list(query.column_values)
    for attr in ("query", "filter", "must_queries", "should_queries", "filter_queries",
                 "queries"):
        sub = getattr(query, attr, None)
        for q in (sub if isinstance(sub, list) else [sub] if sub is not None else []):
            if hasattr(q, "__dict__"):
                words += _query_words(q, f)
    return [w for w in words if isinstance(w, str) and w]


_ENCODERS = {1: "PLAIN_MODE", 2: "HTML_MODE"}     # HighlightEncoder


def html_encoder(highlight):
    """Whether the SDK's Highlight asks for the HTML_MODE encoder."""
    return _enum_name(getattr(highlight, "highlight_encoder", None), _ENCODERS) == "HTML_MODE"


_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;", "/": "&#x2F;"}


def _html_escape(text):
    """Text as the service's HTML_MODE highlight encoder writes it."""
    return "".join(_HTML.get(ch, ch) for ch in text)


def _highlight(text, words, pre, post, size, count, fold, encode=None):
    """Fragments of ``text`` of about ``size`` characters around the words
    found (longest first where they overlap), the words wrapped in tags;
    ``encode``: applied to the text, not to the tags."""
    encode = encode or (lambda t: t)
    if not words:
        return []
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)),
                         re.IGNORECASE if fold else 0)
    spans = [m.span() for m in pattern.finditer(text)]
    if not spans:
        return []
    fragments, start = [], None
    for a, b in spans:
        if start is None or b - start > size:
            if len(fragments) == count:
                break
            start = max(0, a - max(0, (size - (b - a)) // 2)) if len(text) > size else 0
            fragments.append([start, min(len(text), start + size), []])
        fragments[-1][2].append((a, b))
    out = []
    for lo, hi, marks in fragments:
        piece, pos = [], lo
        for a, b in marks:
            if a < pos or b > hi:
                continue
            piece += [encode(text[pos:a]), pre, encode(text[a:b]), post]
            pos = b
        piece.append(encode(text[pos:hi]))
        out.append("".join(piece))
    return out


def aggregate(searcher, query, spec):
    """tantivy's ``Searcher.aggregate``; a panic of the library (a pyo3
    PanicException, a BaseException) becomes an internal error that names
    it, not an exception that escapes the request's handlers."""
    try:
        return searcher.aggregate(query, spec)
    except BaseException as e:
        if type(e).__name__ != "PanicException":
            raise
        log.error("search engine panic in an aggregation %s: %s", json.dumps(spec)[:200], e)
        raise service_error("internal_error") from None


def _nothing(tv):
    """A query no document matches."""
    return tv.Query.boolean_query([(tv.Occur.Must, tv.Query.all_query()),
                                   (tv.Occur.MustNot, tv.Query.all_query())])


_EARTH_M = 6_371_008.8


def _point(text):
    try:
        lat, lon = (float(x) for x in str(text).split(","))
    except ValueError:
        raise service_error("search_geo_point", point=text) from None
    return lat, lon


def _haversine(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * _EARTH_M * math.asin(min(1.0, math.sqrt(a)))


def _in_polygon(lat, lon, poly):
    """Ray casting over (lat, lon) vertices."""
    inside = False
    for (a_lat, a_lon), (b_lat, b_lon) in zip(poly, poly[1:] + poly[:1]):
        if (a_lon > lon) != (b_lon > lon):
            cross = a_lat + (lon - a_lon) * (b_lat - a_lat) / (b_lon - a_lon)
            if lat < cross:
                inside = not inside
    return inside


def _wildcard_regex(pattern):
    out = []
    for ch in pattern:
        out.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
    return "".join(out)


def _geo_sort_key(tname, lat, lon, desc):
    """GeoDistanceSort: by the distance of the row's nearest point (rows
    without one last)."""
    def key(h):
        points = list(zip(h[2].get(tname + "_lat", ()), h[2].get(tname + "_lon", ())))
        if not points:
            return (1, 0) if not desc else (0, 0)
        d = min(_haversine(lat, lon, a, b) for a, b in points)
        return (0, d) if not desc else (1, d)
    return key


def _field_sort_key(tname, desc, mode_max):
    """A sort key over stored field values: rows without the field last (as
    the service puts missing values last in either order)."""
    def key(h):
        values = h[2].get(tname)
        if not values:
            return (1, 0) if not desc else (0, 0)
        v = max(values) if mode_max or desc else min(values)
        return (0, v) if not desc else (1, v)
    return key


def _vector_scores(np, m, q, metric):
    if metric == "cosine":
        norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
        cos = (m @ q) / np.where(norms == 0, 1.0, norms)
        return (1.0 + cos) / 2.0
    if metric == "dot_product":
        return (1.0 + (m @ q)) / 2.0
    d2 = ((m - q) ** 2).sum(axis=1)
    return 1.0 / (1.0 + d2)


_TOKEN_SORTERS = ("PrimaryKeySort", "DocSort", "FieldSort", "ScoreSort")


def _encode_token(position, sort=None):
    """A paging token: the position of the next page and the sort it goes
    by (as the service's carries it: the Java SDK sends a token without its
    sort); a sort a token cannot carry (a geo distance's) is left out."""
    spec = []
    for s in getattr(sort, "sorters", None) or ():
        kind = type(s).__name__
        if kind not in _TOKEN_SORTERS:
            spec = []
            break
        order = getattr(s, "sort_order", None)
        desc = (order is None and kind == "ScoreSort") or int(order or 0) == 1
        spec.append((kind, getattr(s, "field_name", None), "DESC" if desc else "ASC"))
    if not spec:
        return base64.urlsafe_b64encode(b'{"offset": %d}' % position)    # json.dumps' text
    key = (position, tuple(spec))
    token = _TOKENS.get(key)
    if token is None:                 # a page's next token each search: the token kept
        if len(_TOKENS) >= 1024:
            _TOKENS.clear()
        token = _TOKENS[key] = base64.urlsafe_b64encode(b'{"offset": %d, "sort": %s}' % (
            position, json.dumps([list(x) for x in key[1]]).encode()))
    return token


_TOKENS = {}                          # (position, sort) -> its token


def _decode_token(token):
    """(position, the sort's [kind, field, order] list or None) of a token."""
    try:
        raw = token if isinstance(token, (bytes, bytearray)) else str(token).encode()
        body = json.loads(base64.urlsafe_b64decode(raw))
        spec = body.get("sort")
        if spec is not None and not all(isinstance(x, list) and len(x) == 3
                                        and x[0] in _TOKEN_SORTERS for x in spec):
            raise ValueError(spec)
        return int(body["offset"]), spec
    except (ValueError, KeyError, TypeError, AttributeError):
        raise service_error("search_token_invalid") from None


def token_sort(sort, token):
    """The sort a search goes by: ``sort``, or, when the request names none,
    the one its paging ``token`` carries (the Java SDK's SearchQuery drops
    its sort when given a token: the token carries it)."""
    if getattr(sort, "sorters", None) or not token:
        return sort
    spec = _decode_token(token)[1]
    return _IndexSort(spec) if spec else sort


# -- parallel scans ------------------------------------------------------------------------
MAX_SCAN_LIMIT = 2000
DEFAULT_ALIVE_S = 60


class ScanSessions:
    """The live sessions of parallel scans: id -> (table, index, deadline, splits).
    A session lives ``alive_time`` seconds from its last use (the ScanQuery's,
    default 60); a token carries the session and the last row key read.
    Thread-safe; in memory (a restart expires every session, as a session
    on the service may expire at any time)."""

    def __init__(self, clock=time.monotonic):
        self._sessions, self._lock, self._clock = {}, threading.Lock(), clock

    def start(self, table, index, splits):
        session = uuid.uuid4().hex
        with self._lock:
            now = self._clock()
            self._sessions = {k: v for k, v in self._sessions.items() if v[2] > now}
            self._sessions[session] = (table, index, now + DEFAULT_ALIVE_S, splits)
        return session

    def resume(self, session, table, index, token, alive_time):
        """(the row key to go on after or None for the start, the session's
        splits), or the service's error for an unknown or expired session or
        a token not its own."""
        alive = alive_time if isinstance(alive_time, int) and alive_time > 0 else DEFAULT_ALIVE_S
        with self._lock:
            entry = self._sessions.get(session)
            now = self._clock()
            if entry is None or entry[2] <= now or entry[:2] != (table, index):
                self._sessions.pop(session, None)
                raise service_error("scan_session_expired")
            splits = entry[3]
            self._sessions[session] = (table, index, now + alive, splits)
        if not token:
            return None, splits
        try:
            raw = json.loads(base64.urlsafe_b64decode(bytes(token)))
            if raw["session"] != session:
                raise ValueError
            return bytes.fromhex(raw["after"]), splits
        except (ValueError, KeyError, TypeError):
            raise service_error("search_token_invalid") from None

    @staticmethod
    def token(session, after):
        return base64.urlsafe_b64encode(json.dumps({"session": session,
                                                    "after": after.hex()}).encode())


class _Unpacked:
    """A response that unpacks as the tuple of its ``_V1`` fields, as the
    SDK's do (their ``v1_response``: the SDK's older return values)."""

    _V1 = ()

    def v1_response(self):
        return tuple(getattr(self, name) for name in self._V1)

    def __iter__(self):
        return iter(self.v1_response())


class ComputeSplitsResponse(_Unpacked):
    """As the SDK's: ``session_id``, ``splits_size``."""

    _V1 = ("session_id", "splits_size")

    def __init__(self, session_id, splits_size):
        self.session_id, self.splits_size = session_id, splits_size
        self.request_id = ""


class ParallelScanResponse(_Unpacked):
    """As the SDK's: ``rows``, ``next_token`` (b"": the stream is done)."""

    _V1 = ("rows", "next_token")

    def __init__(self, rows, next_token):
        self.rows, self.next_token = rows, next_token
        self.request_id = ""


# -- the SDK's response shapes ---------------------------------------------------------
class SearchHit:
    __slots__ = ("row", "score", "highlight_result", "search_inner_hits", "nested_doc_offset")

    def __init__(self, row, score, highlight_result=None, search_inner_hits=None,
                 nested_doc_offset=None):
        self.row, self.score = row, score
        self.highlight_result, self.search_inner_hits = highlight_result, search_inner_hits
        self.nested_doc_offset = nested_doc_offset


class SearchResponse(_Unpacked):
    """As the SDK's: ``rows`` [(primary key, attribute columns)], ``next_token``,
    ``is_all_succeed``, ``total_count``, ``search_hits``, ``agg_results`` and
    ``group_by_results`` (searchagg.py).  ``search_hits`` is either given
    or made when first read from ``scores`` (a row's score each: hits with
    no highlight and no inner hits)."""

    _V1 = ("rows", "next_token", "total_count", "is_all_succeed", "agg_results",
           "group_by_results", "search_hits")

    def __init__(self, rows, agg_results, group_by_results, next_token, is_all_succeed,
                 total_count, search_hits=None, scores=None):
        self.rows, self.agg_results, self.group_by_results = rows, agg_results, group_by_results
        self.next_token, self.is_all_succeed = next_token, is_all_succeed
        self.total_count, self._search_hits, self._scores = total_count, search_hits, scores
        self.request_id = ""

    @property
    def search_hits(self):
        if self._search_hits is None:
            self._search_hits = [SearchHit(row, score)
                                 for row, score in zip(self.rows, self._scores)]
        return self._search_hits

    @search_hits.setter
    def search_hits(self, hits):
        self._search_hits = hits



_RETURN_TYPES = {1: "ALL", 2: "SPECIFIED", 3: "NONE", 4: "ALL_FROM_INDEX"}


def from_index_only(columns_to_get, definition, pk_names):
    """Whether a search's rows need nothing but the index: no columns, the
    index's own, or named columns all primary-key or index fields."""
    kind = return_type_name(getattr(columns_to_get, "return_type", None))
    if kind in (None, "NONE", "ALL_FROM_INDEX"):
        return True
    if kind == "SPECIFIED":
        fields = {f.name for f in definition.fields}
        return all(c in fields or c in pk_names for c in columns_to_get.column_names or ())
    return False


def return_type_name(value):
    """ColumnsToGet's ``return_type`` (the SDK's ColumnReturnType) by name; None: absent."""
    if value is None:
        return None
    name = getattr(value, "_name_", None)       # an Enum member's (its .name is a property)
    if isinstance(name, str):
        return name
    return _RETURN_TYPES.get(int(value), "NONE")


def describe_search(definition, include_sync_stat=True, sync_point_ns=None):
    """``(SearchIndexMeta, SyncStat or None)`` in the SDK's classes; the sync
    point (ns): every write acknowledged before it is searchable."""
    sdk = _sdk()
    kinds = {v: k for k, v in FIELD_TYPES.items()}
    metrics = {v: k for k, v in _METRICS.items()}
    fields, by_name = [], {}
    for f in definition.fields:
        vector = None
        if f.type == "VECTOR":
            vector = sdk.VectorOptions(sdk.VectorDataType.VD_FLOAT_32,
                                       sdk.VectorMetricType(metrics[f.metric]), f.dimension)
        schema = sdk.FieldSchema(
            f.name if f.parent is None else f.name[len(f.parent) + 1:],
            sdk.FieldType(kinds[f.type]), index=f.index, store=f.store,
            is_array=f.is_array, enable_sort_and_agg=f.sortable,
            analyzer=f.analyzer if f.type != "TEXT" else (f.analyzer or "single_word"),
            date_formats=f.date_formats or None, vector_options=vector,
            enable_highlighting=f.highlight if f.type == "TEXT" else None,
            analyzer_parameter=_analyzer_parameter(sdk, f))
        by_name[f.name] = schema
        if f.parent is None:
            fields.append(schema)
        else:
            by_name[f.parent].sub_field_schemas.append(schema)
    sorters = []
    for kind, field, order in definition.index_sort:
        order = sdk.SortOrder.DESC if order == "DESC" else sdk.SortOrder.ASC
        sorters.append(sdk.PrimaryKeySort(order) if kind == "PrimaryKeySort"
                       else sdk.FieldSort(field, order))
    meta = sdk.SearchIndexMeta(fields, index_setting=sdk.IndexSetting(definition.routing),
                               index_sort=None if definition.nested else sdk.Sort(sorters),
                               time_to_live=definition.ttl)
    stat = None
    if include_sync_stat:
        phase = sdk.SyncPhase.FULL if definition.phase == "FULL" else sdk.SyncPhase.INCR
        stat = sdk.SyncStat(phase, time.time_ns() if sync_point_ns is None else sync_point_ns)
    return meta, stat


def _analyzer_parameter(sdk, f):
    if f.type != "TEXT" or not f.params:
        return None
    kind = {"single_word": sdk.SingleWordAnalyzerParameter, "split": sdk.SplitAnalyzerParameter,
            "fuzzy": sdk.FuzzyAnalyzerParameter}.get(f.analyzer or "single_word")
    return kind(**f.params) if kind is not None else None


def _sdk():
    from regions.extras import require
    return require("tablestore", "Search indexes").metadata


def engine_path(server, definition):
    """Where the engine of ``definition`` lives (None: in memory)."""
    root = getattr(server, "path", None)
    if root is None:
        return None
    return os.path.join(root, "search", definition.base, definition.storage)


def remove_engine(server, definition):
    path = engine_path(server, definition)
    if path is not None and os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def _as_column(value):
    """A nested object's value as its column would hold it (arrays and
    objects as JSON text)."""
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def _fetch(need, scored=False):
    """How many of tantivy's top hits a page of ``need`` asks for.  Values
    tie, and a run of the ``need``-th value that reaches past the hits
    asked for is a search again, which costs the query's whole evaluation;
    hits cost no document read, but each one more costs tantivy's top-k
    collector a little.  Scores (BM25 of equal term frequencies and
    lengths) tie in long runs: twice the page (at 100,000 documents, 11
    hits left a quarter of the match queries to search again, 22 none, and
    64 cost a match 20% more: less pruning).  A number's or a key's runs
    are mostly short: three more (a 1% range sorted by a number uniform in
    0..999,999 at 1,000,000 rows searched again for most pages with one
    more; 22 hits cost a term query sorted by a number a quarter more
    than 11 at 100,000)."""
    return 2 * (need + 1) if scored else need + 4


def _sort_value(raw, desc, floats):
    """The field value of tantivy's sort value ``raw`` of a fast i64 or f64
    column (a u64 in the values' order; ascending: its complement)."""
    u = raw if desc else ~raw & 0xFFFF_FFFF_FFFF_FFFF
    if not floats:
        return u - (1 << 63)                        # i64: the sign bit flipped
    bits = u ^ (1 << 63) if u >> 63 else ~u & 0xFFFF_FFFF_FFFF_FFFF
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def _pko_of(value, desc):
    """The ``_pko`` of tantivy's sort value of it (ascending: the complement)."""
    return value if desc else ~value & 0xFFFF_FFFF_FFFF_FFFF


#: the fast fields that hold a row key's order, 8 bytes each after its tag
_KEY_PARTS = ("_pko", "_pko2", "_pko3")


def _order_of(row_key, part=0):
    """A u64 in the order of row keys (never decreasing as they grow): the
    ``part``-th 8 bytes after the first column's tag (every row key of a
    table has the same first tag), zero-padded; keys equal in every part
    before it are ordered by this one."""
    start = 1 + 8 * part
    return int.from_bytes(row_key[start:start + 8].ljust(8, b"\0"), "big")


def row_key_values(row_key, pk_names):
    return dict(zip(pk_names, pkcodec.decode_pk(row_key, len(pk_names))[0]))


def head_key(row_key):
    return cells.head_key(row_key)
