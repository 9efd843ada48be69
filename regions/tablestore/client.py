"""OTSClient: Tablestore's data API over an embedded region server.

Signatures, defaults and return shapes follow the official Python SDK 6.4.8,
so code written for the cloud runs here by changing the constructor.  Every
request is validated whole (validate.py) before anything is written; errors
are the SDK's OTSClientError or the service's OTSServiceError (errors.py).
This module is the API's surface: tables (their stored schema: schema.py),
reads (reads.py, and the C twins in _reads: a BatchGetRow of whole reads of
plain keys is one call of _reads.RowReader.batch_request, which declines every
other request before reading anything), and the dispatch of writes to the
write path (writes.RowWriter: its C path, else prepare, then run under the
row lock).  BatchWriteRow is checked whole here, then written by
writes.RowWriter.write_batch: every row gets its own result, and no exception
leaves a batch half-applied and unreported.  An atomic BatchWriteRow
(``is_atomic``, ours on the embedded client: metadata.py) writes each table's
rows, one partition key value, all or nothing (writes.check_atomic,
RowWriter.run_atomic), never by the C path.

Thread-safety: one client may be used by many threads.  Writes hold their
row's striped lock (writes.RowWriter); a row's entries always live in one
region (split_boundary keeps a partition key in one region), so its
multi-entry writes are atomic batches.  Reads take no lock and see each row
as one region-server scan sees it.  Local transactions (transactions.py): a
request with a ``transaction_id`` runs on a copy of the client whose server
and writer are the transaction's view; writes outside a transaction check the
partition lock under their row lock.
"""
import contextlib
import copy
import json
import math
import random
import threading
import time

from regions._meter import metered
from regions.metrics import ApiMetrics

from . import _reads, _rowcodec, _searchpage, cells, pkcodec
from .capacity import read_cu
from .columns import read_window
from .conditions import check_node_count
from .errors import (BATCH_WIDE, OTSClientError, OTSServiceError, not_a_string, service_error,
                     storage_error)
from .indexes import MAX_INDEXES, Indexer, check_index_meta, check_index_shape
from .metadata import (BatchGetRowRequest, BatchGetRowResponse, BatchWriteRowRequest,
                       BatchWriteRowResponse, BatchWriteRowType, CapacityUnit,
                       DescribeTableResponse, Direction, PK_AUTO_INCR, ReservedThroughput,
                       ReservedThroughputDetails, Row, RowDataItem, TableMeta, TableOptions,
                       UpdateTableResponse, INF_MAX, INF_MIN, own_marker)
from .reads import (PK_PROJECTIONS, assemble, decode_in_c, read_row, row_entries, row_reader,
                    visible, whole_read)
from .schema import ATTRIBUTE, Schema, table_attributes
from .search import (DEFAULT_LIMIT as DEFAULT_SEARCH_LIMIT, MAX_LIMIT as MAX_SEARCH_LIMIT,
                     MAX_INDEX_ONLY_LIMIT, MAX_OFFSET_LIMIT, MAX_SCAN_LIMIT,
                     MAX_REINDEXES, MAX_SEARCH_INDEXES, REINDEX_SUFFIX, SWITCH_WAIT_SECONDS,
                     from_index_only,
                     ComputeSplitsResponse, ParallelScanResponse, ScanSessions, SearchHit,
                     SearchResponse, check_search_meta, describe_search, html_encoder,
                     return_type_name, token_sort)
from .searchagg import Aggregator
from .streams import (DEFAULT_RECORD_LIMIT, MAX_RECORD_LIMIT, STREAM_SPEC, Stream,
                      StreamDetails, check_stream_spec, decode_iterator, stream_spec_record)
from .transactions import TIMEOUT_S, TransactionManager, partition_of
from .validate import (BATCH_GET_ROWS, BATCH_WRITE_ROWS, INT64_MAX,
                       INT64_MIN, MAX_SPLIT_POINT_BYTES, MAX_TABLES,
                       MAX_DEFINED_COLUMNS, RANGE_BYTES, RANGE_ROWS, check_batch_rows,
                       check_defined_columns, check_pk, check_read_params, check_reserved_cu,
                       check_name, check_pk_count, check_table_meta, check_table_options,
                       decode_name)
from .writes import LOCK_STRIPES, RowWriter

__all__ = ["OTSClient"]

# The official SDK's connection arguments (OTSClient and AsyncOTSClient, 6.4.8):
# accepted so that cloud code runs by changing the endpoint, and ignored.
_SDK_CONNECTION_OPTIONS = frozenset((
    "access_key_id", "access_key_secret", "instance_name", "credentials_provider", "region",
    "sts_token", "sign_date", "auto_update_v4_sign", "encoding", "socket_timeout",
    "max_connection", "logger_name", "retry_policy", "ssl_version", "extra_headers",
    "enable_native", "native_fallback", "keepalive_timeout", "force_close"))
_CLIENT_OPTIONS = frozenset(("server", "server_options", "pk_projection", "transaction_timeout",
                             "max_partitions"))
#: ``OTSClient(MEMORY)`` (or None): an instance in memory, gone at close.
MEMORY = ":memory:"


class OTSClient:
    """``OTSClient(path, **options)``: an embedded Tablestore instance in ``path``;
    ``":memory:"`` or None: a fresh one in memory, nothing on disk, gone at close.

    Options: ``server_options`` (regions.ServerOptions for a new server) or
    ``server`` (an open server with the RegionServer interface; the client
    then does not close it); ``pk_projection``: the primary key of returned
    rows, ``"full"`` (the default, the service's: every key column whatever
    ``columns_to_get`` names) or ``"requested"`` (the 2017 guide's examples:
    only the key columns ``columns_to_get`` names); ``transaction_timeout``
    (seconds an idle local transaction lives).  The SDK's connection arguments are accepted and
    ignored, by keyword or in the SDK's positions after the endpoint
    (``access_key_id, access_key_secret, instance_name, credentials_provider,
    region``; keywords: ``sts_token``, ``retry_policy``, ``socket_timeout``...,
    see ``_SDK_CONNECTION_OPTIONS``).  Any other keyword is a ``TypeError``
    naming it, so a misspelt option is never silently dropped.
    """

    def __init__(self, path, access_key_id=None, access_key_secret=None, instance_name=None,
                 credentials_provider=None, region=None, **options):
        unknown = sorted(set(options) - _CLIENT_OPTIONS - _SDK_CONNECTION_OPTIONS)
        if unknown:
            raise TypeError("OTSClient() got an unexpected keyword argument %r" % unknown[0])
        pk_projection = options.pop("pk_projection", "full")
        if pk_projection not in PK_PROJECTIONS:
            raise ValueError("pk_projection must be one of %s, not %r"
                             % (", ".join(PK_PROJECTIONS), pk_projection))
        self._pk_projection = pk_projection
        # CreateTable's partitions (split points + 1) at most: None, any
        # number (pre-splitting into many regions is this store's way to
        # load a keyspace: regions.presplit); the service's is 10
        self._max_partitions = options.pop("max_partitions", None)
        if self._max_partitions is not None and (
                not isinstance(self._max_partitions, int) or self._max_partitions < 1):
            raise ValueError("max_partitions must be a positive int or None, not %r"
                             % (self._max_partitions,))
        self._api_metrics = ApiMetrics()
        server = options.pop("server", None)
        self._owns_server = server is None
        if server is None:
            import regions
            server = regions.RegionServer.open(None if path == MEMORY else path,
                                               options.pop("server_options", None))
        self._server = server
        self._schemas = {}
        # get_row of a whole row by a plain key, in one C call (its twin: _get)
        self._row_reader = row_reader(self._schemas, server)
        self._meta_lock = threading.Lock()
        locks = [threading.Lock() for _ in range(LOCK_STRIPES)]
        self._txn = None  # the Transaction this client runs in (see _in_transaction)
        self._transactions = TransactionManager(
            server, locks, options.pop("transaction_timeout", TIMEOUT_S))
        # auto-increment values: microsecond-like, as the service's
        self._writer = RowWriter(server, locks, cells.Generations(), cells.Generations(1000),
                                 self._transactions, self._schemas, self._writable)
        for name in server.list_tables():
            attrs = server.table_attributes(name) or {}
            if ATTRIBUTE in attrs:
                self._schemas[name] = Schema.from_json(attrs[ATTRIBUTE], name)
                self._configure(name)
        # secondary indexes (indexes.py): the writers feed them
        self._indexer = Indexer(server, locks, self._writer.gens, self._schemas, self._configure)
        self._scans = ScanSessions()     # parallel scans' sessions (search.py)
        self._writer.indexer = self._transactions.indexer = self._indexer
        self._writer.start_c_path()
        self._indexer.open()
        for name in self._schemas:
            self._refresh_plain(name)

    # -- lifecycle -------------------------------------------------------
    def metrics(self) -> dict:
        """``{"api": regions.metrics.ApiMetrics.snapshot(), "server":
        RegionServer.metrics(), "tables": {name: schema and options}}``: the
        numbers the console and ``/metrics`` show.  API names are the wire's
        (``GetRow``); an OTSClientError counts as OTSParameterInvalid, as
        the endpoint answers it."""
        tables = {}
        for name, sc in sorted(self._schemas.items()):
            read, write = self._server.table_attributes(name).get("reserved", [0, 0])
            tables[name] = {
                "primary_key": [[n, t] + (["AUTO_INCREMENT"] if i == sc.auto_incr else [])
                                for i, (n, t) in enumerate(zip(sc.names, sc.types))],
                "defined_columns": [list(d) for d in sc.defined],
                "time_to_live": sc.ttl, "max_versions": sc.max_versions,
                "max_time_deviation": sc.deviation, "allow_update": sc.allow_update,
                "reserved_read_cu": read or 0, "reserved_write_cu": write or 0}
        return {"api": self._api_metrics.snapshot(), "server": self._server.metrics(),
                "tables": tables}

    @contextlib.contextmanager
    def request(self, api):
        """Meter one request of a front end as ``api``, whole: from the first
        check to the reply, whatever refuses it (authentication, parsing, the data
        API).  The API methods called inside are not counted again.  The wire
        endpoint (regions.otsserver) wraps every request in this."""
        _front_end.metering = True
        t0 = time.perf_counter()
        code = None
        try:
            yield
        except Exception as e:
            code = _error_code(e)
            raise
        finally:
            _front_end.metering = False
            self._api_metrics.record(api, time.perf_counter() - t0, code)

    def close(self):
        if self._server is not None:
            self._indexer.close()
        if self._owns_server and self._server is not None:
            self._server.close()
        self._server = None
        self._row_reader = row_reader({}, None)         # every read takes the Python path
        self._writer.stop_c_path()                      # and every write

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _configure(self, name):
        def options():
            s = self._schemas.get(name)
            return (s.ttl, s.max_versions) if s else (-1, 1 << 30)

        def boundary(key):
            return key[:pkcodec.partition_prefix_len(key)]

        self._server.configure_table(
            name, split_boundary=boundary,
            compaction_filter_factory=cells.compaction_filter_factory(options),
            prefix_extractor=_rowcodec.ROW_KEY_PREFIX)

    def _refresh_plain(self, name):
        """Whether the C path of writes may write table ``name``
        (writes.RowWriter.allow_c_path): a data table without a stream."""
        schema = self._schemas.get(name)
        plain = schema is not None and name not in self._indexer.index_of \
            and not self._indexer.stream(name)
        self._writer.allow_c_path(name, schema if plain else None)

    def _schema(self, table_name):
        if not isinstance(table_name, (str, bytes)):
            raise not_a_string(table_name)
        table_name = decode_name(table_name, "table")
        schema = self._schemas.get(table_name)
        if schema is None:
            if self._indexer.building(table_name):
                raise service_error("index_building")
            check_name(table_name, "table")     # an invalid name is refused as such
            raise service_error("table_not_exist")
        return table_name, schema

    def _taken(self) -> set:
        """Every table and index name of the instance (one namespace, one quota)."""
        return set(self._schemas) | set(self._indexer.index_of)

    # -- tables ----------------------------------------------------------
    def create_table(self, table_meta, table_options=None, reserved_throughput=None,
                     secondary_indexes=None, split_points=None, stream_spec=None,
                     enable_local_txn=None):
        """As the SDK's, plus ``stream_spec`` (a streams.StreamSpecification:
        the Go and Java SDKs' CreateTable option; not in the Python SDK) and
        ``enable_local_txn`` (theirs too): False refuses local transactions
        on the table; left out, they are allowed (the service's default is
        off, but the Python SDK 6.4.8 cannot turn them on)."""
        if enable_local_txn is not None and not isinstance(enable_local_txn, bool):
            raise OTSClientError("enable_local_txn should be a bool, not %s"
                                 % type(enable_local_txn).__name__)
        name, names, types, auto_incr, defined = check_table_meta(table_meta)
        stream = check_stream_spec(stream_spec)
        opts = check_table_options(table_options if table_options is not None else TableOptions())
        if reserved_throughput is None:
            reserved_throughput = ReservedThroughput(CapacityUnit(0, 0))
        reserved = self._check_reserved(reserved_throughput, create=True)
        split_keys = self._split_keys(split_points, types[0])
        if split_keys and self._max_partitions is not None \
                and len(split_keys) + 1 > self._max_partitions:
            raise service_error("partition_count", limit=self._max_partitions)
        schema = Schema(names, types, auto_incr, opts.get("ttl", -1), opts.get("max_versions", 1),
                        opts.get("deviation", 86400), opts.get("allow_update", True), defined,
                        update_full_row=opts.get("update_full_row", False))
        with self._meta_lock:
            if name in self._taken():
                raise service_error("table_exists")
            if len(self._taken()) >= MAX_TABLES:
                raise service_error("table_quota", limit=MAX_TABLES)
            indexes = self._check_indexes(name, schema, secondary_indexes or [], {name})
            # The table's record lists its indexes and its stream from the
            # start: creating it is the one commit point; a crash before
            # their tables are made leaves them to the next open to make.
            schema = schema.with_indexes([index.to_json() for index in indexes])
            attrs = table_attributes(schema, reserved, int(time.time()))
            if enable_local_txn is False:
                attrs["local_txn"] = False
            if stream and stream[0]:
                attrs[STREAM_SPEC] = stream_spec_record(stream[1], stream[2])
            self._server.create_table(name, split_keys=split_keys, attributes=attrs)
            self._schemas[name] = schema
            self._configure(name)
            self._indexer.make_listed(name, schema, indexes)
            if stream and stream[0]:
                self._indexer.enable_stream(name, schema, stream[1], stream[2])
            self._refresh_plain(name)

    @staticmethod
    def _split_keys(split_points, pk_type):
        """Region split keys of a table whose first key column is ``pk_type``."""
        if not split_points:
            return None
        _validate_split_points(split_points, pk_type)
        return [pkcodec.encode_value(pk_type, bytearray(p) if isinstance(p, bytes)
                                     and pk_type == "BINARY" else p)
                for p in split_points]

    def _check_indexes(self, name, schema, metas, taken):
        """The IndexDefs of ``metas`` for table ``name`` (all checked before any is made)."""
        if not isinstance(metas, (list, tuple)):
            raise OTSClientError("secondary_indexes should be a list, not %s"
                                 % metas.__class__.__name__)
        taken = self._taken() | set(taken)
        if len(taken) + len(metas) > MAX_TABLES:
            raise service_error("table_quota", limit=MAX_TABLES)
        indexes = []
        for meta in metas:
            index = check_index_meta(name, schema, meta, taken)
            taken.add(index.name)
            index.split_keys = self._split_keys(getattr(meta, "split_points", None),
                                                index.schema(schema).types[0])
            indexes.append(index)
        if len(schema.indexes) + len(indexes) > MAX_INDEXES:
            raise service_error("index_count", table=name, limit=MAX_INDEXES)
        return indexes

    def _committer(self, name):
        """``commit(schema)``: store ``schema`` as table ``name``'s (one meta write)."""
        def commit(schema):
            attrs = dict(self._server.table_attributes(name))
            attrs[ATTRIBUTE] = schema.to_json()
            self._server.set_table_attributes(name, attrs)
            self._schemas[name] = schema
        return commit

    def create_secondary_index(self, table_name, index_meta, include_base_data=True):
        """Add a secondary index to the table (indexes.py); with
        ``include_base_data`` the rows already there are loaded into it in the
        background (``describe_table``'s ``index_sync_phase`` is ISP_FULL until
        done), else only rows written from now on are indexed."""
        check_index_shape(index_meta)
        with self._meta_lock:
            name, schema = self._index_base(table_name)
            index, = self._check_indexes(name, schema, [index_meta], ())
            self._indexer.create(name, schema, index, bool(include_base_data),
                                 self._committer(name))
            self._refresh_plain(name)

    def delete_secondary_index(self, table_name, index_name):
        with self._meta_lock:
            name, schema = self._index_base(table_name)
            index_name = decode_name(index_name, "index")
            if not any(d["name"] == index_name for d in schema.indexes):
                raise service_error("index_not_exist", index=index_name)
            self._indexer.drop(name, schema, index_name, self._committer(name))
            self._refresh_plain(name)

    def _index_base(self, table_name):
        """``_base_schema`` for CreateIndex and DropIndex, which name a missing
        table in their own words."""
        try:
            return self._base_schema(table_name)
        except OTSServiceError as e:
            if e.code != "OTSObjectNotExist":
                raise
            raise service_error("index_base_not_exist", table=table_name) from None

    def add_defined_column(self, table_name, defined_columns):
        """Add predefined columns ``[(name, type)]`` to the table (the service's
        AddDefinedColumn; not in the Python SDK 6.4.8): appended after those
        there, in the order given."""
        with self._meta_lock:
            name, schema = self._base_schema(table_name)
            new = check_defined_columns(defined_columns)
            have = dict(schema.defined)
            for column, _ in new:
                if column in schema.names:
                    raise service_error("defined_column_is_pk", column=column)
                if column in have:
                    raise service_error("defined_column_exists", column=column)
                have[column] = None
            if len(have) > MAX_DEFINED_COLUMNS:
                raise service_error("defined_columns_limit")
            self._set_schema(name, schema.with_defined(list(schema.defined) + new))

    def delete_defined_column(self, table_name, column_names):
        """Remove predefined columns (the service's DeleteDefinedColumn): not one
        an index uses; the cells written under them stay (the table is
        schema-free), they are only no longer declared."""
        with self._meta_lock:
            name, schema = self._base_schema(table_name)
            if not isinstance(column_names, (list, tuple)):
                raise OTSClientError("column_names should be a list, not %s"
                                     % column_names.__class__.__name__)
            have = dict(schema.defined)
            for column in column_names:
                if column not in have:
                    raise service_error("defined_column_not_exist", column=column)
                for index in self._indexer.indexes_of(name):
                    if column in index.columns or column in index.attributes:
                        raise service_error("defined_column_indexed", column=column,
                                            index=index.name)
            self._set_schema(name, schema.with_defined(
                [d for d in schema.defined if d[0] not in set(column_names)]))

    def _set_schema(self, name, schema):
        self._committer(name)(schema)
        self._indexer.set_schema(name, schema)
        self._refresh_plain(name)

    def _base_schema(self, table_name):
        """``_schema`` of a data table: an index table's name is not one."""
        name, schema = self._schema(table_name)
        if name in self._indexer.index_of:
            raise service_error("table_not_exist")
        return name, schema

    def index_catalogue(self, feeds=True) -> dict:
        """The instance's secondary indexes and their change feeds, for
        operators (ours; the console and /metrics show it):
        ``indexes.Indexer.catalogue``."""
        return self._indexer.catalogue(feeds)

    def wait_for_indexes(self, table_name, timeout=10.0) -> bool:
        """Block until every write to the table so far is in its global
        indexes and their back-fills are done (False: ``timeout`` passed).
        Not in the SDK: the service gives no such call; tests and tools use it."""
        name, _ = self._base_schema(table_name)
        deadline = time.monotonic() + timeout
        for index in self._indexer.indexes_of(name):
            if not self._indexer.wait_backfill(index.name, max(0.0, deadline - time.monotonic())):
                return False
        return self._indexer.wait(name, max(0.0, deadline - time.monotonic()))

    @staticmethod
    def _check_reserved(reserved_throughput, create):
        if not isinstance(reserved_throughput, ReservedThroughput):
            raise OTSClientError("reserved_throughput should be an instance of ReservedThroughput, "
                                 "not %s" % reserved_throughput.__class__.__name__)
        cu = reserved_throughput.capacity_unit
        if not isinstance(cu, CapacityUnit):
            raise OTSClientError("capacity_unit should be an instance of CapacityUnit, not %s"
                                 % cu.__class__.__name__)
        if create and (cu.read is None or cu.write is None):
            raise OTSClientError("both of read and write of CapacityUnit are required")
        if not create and cu.read is None and cu.write is None:
            raise OTSClientError("at least one of read or write of CapacityUnit is required")
        for v in (cu.read, cu.write):
            if v is not None and (not isinstance(v, int) or not -(1 << 31) <= v < (1 << 31)):
                raise OTSClientError("%s exceeds the range of int32" % v)
        return check_reserved_cu([cu.read, cu.write])

    def delete_table(self, table_name):
        with self._meta_lock:
            name, schema = self._base_schema(table_name)
            for index in list(schema.indexes):
                self._indexer.drop(name, self._schemas[name], index["name"],
                                   self._committer(name))
            for definition, _ in self._indexer.searches_of(name):
                self._indexer.drop_search(name, definition.name)
            self._indexer.forget_table(name)
            self._server.delete_table(name)
            del self._schemas[name]
            self._refresh_plain(name)
            self._transactions.drop_table(name)

    def list_table(self):
        return tuple(sorted(n for n in self._schemas if n not in self._indexer.index_of))

    def describe_table(self, table_name):
        """As the SDK's.  An index's name describes its table: its whole key (the
        index columns, then the base key's other columns) and its attribute
        columns as defined columns, no indexes."""
        name, schema = self._schema(table_name)
        attrs = self._server.table_attributes(name)
        pk_schema = [(n, t, PK_AUTO_INCR) if i == schema.auto_incr else (n, t)
                     for i, (n, t) in enumerate(zip(schema.names, schema.types))]
        splits = [pkcodec.decode_partition_value(r.start_key)
                  for r in self._server.regions(name) if r.start_key]
        resp = DescribeTableResponse(TableMeta(name, pk_schema, list(schema.defined)),
                                     self._table_options(schema), self._details(attrs),
                                     secondary_indexes=self._indexer.metas(name),
                                     shard_splits=splits)
        resp.stream_details = self._stream_details(name)
        resp.creation_time = int(attrs.get("created", 0)) * 1_000_000    # µs, as the service's
        return resp

    def _stream_details(self, name):
        stream = self._indexer.stream(name)
        return stream.details() if stream is not None else StreamDetails(False)

    @staticmethod
    def _table_options(schema):
        return TableOptions(schema.ttl, schema.max_versions, schema.deviation, schema.allow_update,
                            schema.update_full_row)

    @staticmethod
    def _details(attrs):
        read, write = attrs.get("reserved", [0, 0])
        return ReservedThroughputDetails(CapacityUnit(read or 0, write or 0),
                                         attrs.get("created", 0), None)

    def update_table(self, table_name, table_options=None, reserved_throughput=None,
                     stream_spec=None):
        """As the SDK's, plus ``stream_spec`` (streams.StreamSpecification, the
        Go and Java SDKs' option): enabling starts a stream (a new one, with a
        new id, if one was there before), disabling deletes it and its records."""
        stream = check_stream_spec(stream_spec)
        with self._meta_lock:
            name, schema = self._base_schema(table_name)
            if stream and stream[0] and self._indexer.stream(name) is not None:
                raise service_error("stream_enabled", table=name)
            opts = check_table_options(table_options) if table_options is not None else {}
            if "update_full_row" in opts:
                raise service_error("update_full_row_update")
            reserved = (self._check_reserved(reserved_throughput, create=False)
                        if reserved_throughput is not None else None)
            attrs = dict(self._server.table_attributes(name))
            new = schema.with_options(**opts)
            if new.indexes and new.max_versions != 1:
                raise service_error("index_max_versions", table=name)
            if new.indexes and new.ttl != -1 and new.allow_update:
                raise service_error("index_ttl", table=name)
            attrs[ATTRIBUTE] = new.to_json()
            if reserved is not None:
                old = attrs.get("reserved", [0, 0])
                attrs["reserved"] = [r if r is not None else o for r, o in zip(reserved, old)]
            if stream is not None:       # the intent first: the next open finishes the job
                if stream[0]:
                    attrs[STREAM_SPEC] = stream_spec_record(stream[1], stream[2])
                else:
                    attrs.pop(STREAM_SPEC, None)
            self._server.set_table_attributes(name, attrs)
            self._schemas[name] = new
            self._indexer.set_schema(name, new)
            if stream is not None:
                if stream[0]:
                    self._indexer.enable_stream(name, new, stream[1], stream[2])
                else:
                    self._indexer.disable_stream(name)
            self._refresh_plain(name)
            resp = UpdateTableResponse(self._details(attrs), self._table_options(new))
            resp.stream_details = self._stream_details(name)
            return resp

    # -- search indexes (search.py) ------------------------------------------
    def create_search_index(self, table_name, index_name, index_meta, source_index_name=None):
        """As the SDK's: a search index of the table's rows (the rows there now
        are loaded in the background: sync phase FULL, then INCR).
        ``source_index_name`` (the Go and Java SDKs'): the new index, named
        ``<anything>_reindex``, is that index's reindex index, the first step
        of a dynamic schema change (update_search_index: weights, switch)."""
        index_name = check_name(decode_name(index_name, "index"), "index")
        with self._meta_lock:
            name, schema = self._base_schema(table_name)
            if (name, index_name) in self._indexer.search_defs:
                raise service_error("search_index_exists", index=index_name)
            source = None
            if source_index_name is not None:
                _, source, _ = self._search_index(table_name, source_index_name)
                if not index_name.endswith(REINDEX_SUFFIX):
                    raise service_error("reindex_name", index=index_name)
                if source.brother is not None:
                    raise service_error("reindex_paired", index=source.name,
                                        brother=source.brother)
                if sum(1 for d in self._indexer.search_defs.values() if d.brother is not None) \
                        >= 2 * MAX_REINDEXES:
                    raise service_error("reindex_count", limit=MAX_REINDEXES)
            if len(self._indexer.searches_of(name)) >= MAX_SEARCH_INDEXES:
                raise service_error("search_index_count", table=name, limit=MAX_SEARCH_INDEXES)
            definition = check_search_meta(index_name, name, index_meta, schema.names)
            self._indexer.create_search(name, schema, definition)
            if source is not None:
                self._indexer.pair_search(name, source.name, index_name)

    def _search_index(self, table_name, index_name):
        try:
            name, _ = self._base_schema(table_name)
        except OTSServiceError as e:
            if e.code != "OTSObjectNotExist":
                raise
            raise service_error("search_table_not_exist", table=table_name) from None
        index_name = decode_name(index_name, "index")
        definition = self._indexer.search_defs.get((name, index_name))
        if definition is None:
            raise service_error("search_index_not_exist", table=name, index=index_name)
        return name, definition, self._indexer.tables[name].searches[index_name]

    def delete_search_index(self, table_name, index_name):
        with self._meta_lock:
            name, definition, _ = self._search_index(table_name, index_name)
            self._indexer.drop_search(name, definition.name)

    def list_search_index(self, table_name=None):
        """[(table name, index name)] of the instance's, or one table's, search indexes."""
        if table_name is not None:
            name, _ = self._base_schema(table_name)
        return [key for key in sorted(self._indexer.search_defs)
                if table_name is None or key[0] == name]

    def describe_search_index(self, table_name, index_name, include_sync_stat=True):
        """(SearchIndexMeta, SyncStat or None), the SDK's classes."""
        name, definition, _ = self._search_index(table_name, index_name)
        oldest = self._indexer.feed_state(name)["oldest_pending"]
        sync_point = None
        if definition.phase == "FULL":
            sync_point = definition.created * 1_000_000          # nothing before is certain
        elif oldest is not None:
            sync_point = int(oldest * 1_000_000_000) - 1         # before the oldest pending write
        return describe_search(definition, include_sync_stat, sync_point)

    def search_index_metering(self, table_name, index_name):
        """The index's size as the service's MeteringInfo gives it (the Java
        and Go SDKs' DescribeSearchIndex): ``storage_size`` (bytes on disk,
        0 in memory), ``row_count`` (documents), ``timestamp`` (s)."""
        _, _, engine = self._search_index(table_name, index_name)
        return {"storage_size": engine.storage_bytes() or 0, "row_count": engine.num_docs(),
                "timestamp": int(time.time())}

    def update_search_index(self, table_name, index_name, index_meta=None,
                            switch_index_name=None, query_flow_weights=None):
        """What the service lets change: the index's ``time_to_live``; and in
        a dynamic schema change (the Go and Java SDKs'), ``query_flow_weights``
        [(index name, weight 0-100)] sharing the searches of the source
        index between it and its reindex index, or ``switch_index_name``
        (its reindex index): the two swap names, so searches of
        ``index_name`` read the new schema's index (both must have loaded
        the table: sync phase INCR)."""
        with self._meta_lock:
            name, definition, _ = self._search_index(table_name, index_name)
            if switch_index_name is not None or query_flow_weights is not None:
                return self._reindex_step(name, definition, switch_index_name,
                                          query_flow_weights)
            ttl = getattr(index_meta, "time_to_live", None)
            if ttl is None or not isinstance(ttl, int) or (ttl != -1 and ttl < 86400):
                raise service_error("search_ttl_invalid", ttl=ttl)
            definition.ttl = ttl
            self._indexer.save_search(definition)

    def _reindex_step(self, name, definition, switch_index_name, weights):
        """update_search_index's weights or switch (under the meta lock)."""
        pair = {definition.name, definition.brother}
        if definition.brother is None:
            raise service_error("reindex_unpaired", index=definition.name)
        if switch_index_name is not None:
            if weights is not None or switch_index_name != definition.brother:
                raise service_error("reindex_switch", index=definition.name,
                                    brother=definition.brother)
            for n in sorted(pair):
                self._indexer.wait_search(name, n, timeout=SWITCH_WAIT_SECONDS)
                if self._indexer.search_defs[(name, n)].phase != "INCR":
                    raise service_error("reindex_not_synced", index=n)
            self._indexer.switch_search(name, definition.name)
            return
        checked = []
        for w in weights:
            index, weight = (w.index_name, w.weight) if hasattr(w, "index_name") else w
            if index not in pair or not isinstance(weight, int) or not 0 <= weight <= 100 \
                    or index in [c[0] for c in checked]:
                raise service_error("reindex_weights", index=definition.name,
                                    brother=definition.brother)
            checked.append([index, weight])
        self._indexer.weigh_search(name, definition.name, checked)

    def search_index_pair(self, table_name, index_name):
        """(brother index name or None, [[index name, weight]]): the index's
        part in a dynamic schema change, as DescribeSearchIndex gives it."""
        _, definition, _ = self._search_index(table_name, index_name)
        return definition.brother, [list(w) for w in definition.weights]

    def wait_for_search_index(self, table_name, index_name, timeout=30.0) -> bool:
        """Block until the index holds every row written so far (ours: the
        service gives no such call; tests and tools use it)."""
        name, definition, _ = self._search_index(table_name, index_name)
        return self._indexer.wait_search(name, definition.name, timeout)

    def search(self, table_name, index_name, search_query, columns_to_get=None,
               routing_keys=None, timeout_s=None):
        """As the SDK's: SearchResponse (rows, next_token, total_count,
        is_all_succeed, search_hits)."""
        name, definition, engine = self._search_index(table_name, index_name)
        if definition.weights:          # a dynamic schema change shares its searches
            picked = definition.pick(random.random())
            if picked != definition.name:
                name, definition, engine = self._search_index(table_name, picked)
        if type(search_query).__name__ != "SearchQuery":
            raise OTSClientError("search_query should be an instance of SearchQuery, not %s"
                                 % type(search_query).__name__)
        schema = self._schemas[name]
        limit = search_query.limit
        offset = search_query.offset or 0
        if limit is None:
            limit = DEFAULT_SEARCH_LIMIT
        if not isinstance(limit, int) or limit < 0 or limit > MAX_SEARCH_LIMIT:
            # up to 1,000 rows when every column returned comes from the
            # index (the service's FAQ), else 100
            cap = MAX_INDEX_ONLY_LIMIT if from_index_only(
                columns_to_get, definition, schema.names) else MAX_SEARCH_LIMIT
            if not isinstance(limit, int) or limit < 0 or limit > cap:
                raise service_error("search_limit", limit=limit, max=cap)
        if not isinstance(offset, int) or offset < 0 or offset + limit > MAX_OFFSET_LIMIT:
            raise service_error("search_offset", offset=offset, max=MAX_OFFSET_LIMIT)
        ttl = _shorter_ttl(definition.ttl, schema.ttl)
        query, sort, token_in = search_query.query, search_query.sort, search_query.next_token
        counted = bool(search_query.get_total_count)
        collapse = getattr(getattr(search_query, "collapse", None), "field_name", None)
        highlighting = getattr(search_query, "highlight", None)
        highlight = getattr(highlighting, "highlight_parameters", None)
        nested = engine.inner_hit_queries(query) if definition.nested else ()
        kind = return_type_name(getattr(columns_to_get, "return_type", None))
        keys_only = kind in (None, "NONE") and not nested and not highlight
        hits, total, token = engine.search(query, sort, offset, limit, token_in or None, ttl,
                                           collapse, counted, keys_only)
        if definition.nested and sort is None:
            token = None       # an index with NESTED fields has no index sort: no paging token
        sorters = getattr(sort, "sorters", None) or (
            token_in and getattr(token_sort(sort, token_in), "sorters", None)) or ()
        by_score = any(type(s).__name__ == "ScoreSort" for s in sorters) if sorters \
            else type(query).__name__ == "FunctionsScoreQuery"
        agg_results, group_by_results = [], []
        if getattr(search_query, "aggs", None) or getattr(search_query, "group_bys", None):
            aggregator = Aggregator(engine, lambda keys: [
                r for r in (self._search_row(name, schema, definition, k, kind, columns_to_get)
                            for k in keys) if r is not None], sort)
            agg_results, group_by_results = aggregator.run(
                engine.scope(query, ttl), search_query.aggs, search_query.group_bys)
        if not counted:
            total = -1
        if keys_only:
            # keys only (the common page): the rows straight from the keys
            rows = _searchpage.key_rows(schema.names, hits)
            scores = [h[1] for h in hits] if by_score else [math.nan] * len(rows)
            return SearchResponse(rows, agg_results, group_by_results, token or b"", True,
                                  total, scores=scores)
        rows, search_hits = [], []
        html = html_encoder(highlighting)
        for row_key, score, doc in hits:
            row = self._search_row(name, schema, definition, row_key, kind, columns_to_get)
            if row is None:
                continue                 # deleted since the index saw it
            rows.append(row)
            if not by_score:
                score = math.nan        # the service scores only a search sorted by score
            inner = engine.inner_hits(nested, self._nested_objects(name, row[0]), html) \
                if nested else None
            search_hits.append(SearchHit(row, score, engine.highlight(
                search_query.query, doc, highlight, html) if highlight else None, inner))
        return SearchResponse(rows, agg_results, group_by_results, token or b"", True,
                              total, search_hits)

    def compute_splits(self, table_name, index_name):
        """A parallel scan's session: ComputeSplitsResponse-shaped
        (``session_id``, ``splits_size``: the number of regions of the table,
        as the service's is its partitions')."""
        name, definition, _ = self._search_index(table_name, index_name)
        splits = len(self._server.table_layout(name)[1])
        return ComputeSplitsResponse(self._scans.start(name, definition.name, splits), splits)

    def parallel_scan(self, table_name, index_name, scan_query, session_id, columns_to_get=None,
                      timeout_s=None):
        """One page of stream ``scan_query.current_parallel_id`` of a parallel
        scan: ParallelScanResponse-shaped (``rows``, ``next_token``: b"" once
        the stream is done).  Every matching row is in exactly one stream."""
        name, definition, engine = self._search_index(table_name, index_name)
        m, p = scan_query.max_parallel, scan_query.current_parallel_id
        limit = scan_query.limit
        if not isinstance(limit, int) or not 0 < limit <= MAX_SCAN_LIMIT:
            raise service_error("scan_limit", limit=limit, max=MAX_SCAN_LIMIT)
        after, splits = self._scans.resume(session_id, name, definition.name,
                                           scan_query.next_token,
                                           getattr(scan_query, "alive_time", None))
        if not isinstance(m, int) or not 0 < m <= splits:
            raise service_error("scan_max_parallel", splits=splits, max=m)
        if not isinstance(p, int) or not 0 <= p < m:
            raise service_error("scan_parallel_id", max=m, id=p)
        schema = self._schemas[name]
        keys = engine.scan(scan_query.query, p, m, after, limit)
        kind = return_type_name(getattr(columns_to_get, "return_type", None))
        rows = [r for r in (self._search_row(name, schema, definition, k, kind, columns_to_get)
                            for k in keys) if r is not None]
        token = self._scans.token(session_id, keys[-1]) if keys else b""
        return ParallelScanResponse(rows, token)

    def _nested_objects(self, name, pk):
        """``objects_of(path)``: the objects of a NESTED path ("a", or "a.b":
        the b objects of every a object, in order) in row ``pk``."""
        cache = {}

        def objects_of(path):
            parts = path.split(".")
            if parts[0] not in cache:
                _, row, _ = self.get_row(name, pk, [parts[0]])
                cells = row.attribute_columns if row is not None else []
                cache[parts[0]] = next((c[1] for c in cells if c[0] == parts[0]), None)
            try:
                objects = json.loads(cache[parts[0]]) if isinstance(cache[parts[0]], str) else []
            except ValueError:
                objects = []
            for part in parts[1:]:
                objects = [x for o in objects if isinstance(o, dict)
                           for x in (o.get(part) if isinstance(o.get(part), list)
                                     else [o.get(part)])]
            return objects if isinstance(objects, list) else []
        return objects_of

    def _search_row(self, name, schema, definition, row_key, kind, columns_to_get):
        """A search's row of ``row_key`` with the columns ``kind`` (the
        return type's name) and ``columns_to_get`` ask (None: the row is
        gone since the index saw it)."""
        pk = list(zip(schema.names, _rowcodec.decode_pk(row_key, len(schema.names))[0]))
        if kind in (None, "NONE"):
            return (pk, [])
        names = None
        if kind == "SPECIFIED":
            names = list(columns_to_get.column_names or ())
        elif kind == "ALL_FROM_INDEX":
            names = [f.name for f in definition.fields if f.name not in schema.names]
        _, row, _ = self.get_row(name, pk, names)
        if row is None:
            return None
        return (row.primary_key, row.attribute_columns)

    # -- streams (streams.py; the Go and Java SDKs' API, not the Python SDK's) --
    def list_stream(self, table_name=None):
        """The streams of the instance, or of one table: [streams.Stream]."""
        if table_name is not None:
            name, _ = self._base_schema(table_name)
            names = [name]
        else:
            names = self.list_table()
        out = []
        for name in names:
            stream = self._indexer.stream(name)
            if stream is not None:
                out.append(Stream(stream.id, name, stream.creation_time))
        return out

    def _stream_by_id(self, stream_id):
        if not isinstance(stream_id, str):
            raise not_a_string(stream_id)
        for stream in self._indexer.streams():
            if stream.id == stream_id:
                stream.trim()
                return stream
        raise service_error("stream_not_exist", stream=stream_id)

    def describe_stream(self, stream_id, inclusive_start_shard_id=None, shard_limit=None):
        """The stream's shards (a shard per region, with their lineage):
        streams.DescribeStreamResponse."""
        stream = self._stream_by_id(stream_id)
        start = None
        if inclusive_start_shard_id is not None:
            start = stream.shard(inclusive_start_shard_id).id
        if shard_limit is not None and (not isinstance(shard_limit, int) or shard_limit <= 0):
            raise service_error("stream_shard_limit", limit=shard_limit)
        table = self._indexer.tables.get(stream.base)
        with table.append_lock:
            stream.refresh(table.last_seq + 1)
        return stream.describe(start, shard_limit)

    def get_shard_iterator(self, stream_id, shard_id, timestamp=None):
        """An iterator (str) at the oldest record kept of the shard, or at the
        first written at or after ``timestamp`` (µs)."""
        stream = self._stream_by_id(stream_id)
        if timestamp is not None and (not isinstance(timestamp, int) or timestamp < 0):
            raise OTSClientError("timestamp should be a non-negative int (µs), not %r"
                                 % (timestamp,))
        table = self._indexer.tables.get(stream.base)
        return stream.iterator(shard_id, table.horizon(), timestamp)

    def get_stream_record(self, shard_iterator, limit=None):
        """Up to ``limit`` (default 100, at most 1000) records from the
        iterator on: streams.GetStreamRecordResponse (``records``,
        ``next_shard_iterator``: the same iterator when nothing new is there
        yet, None once a closed shard is read to its end)."""
        if not isinstance(shard_iterator, str):
            raise not_a_string(shard_iterator)
        stream_id, shard, seq = decode_iterator(shard_iterator)
        if limit is None:
            limit = DEFAULT_RECORD_LIMIT
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            raise service_error("stream_record_limit", limit=limit)
        stream = self._stream_by_id(stream_id)
        table = self._indexer.tables.get(stream.base)
        schema = self._schemas.get(stream.base)
        return stream.read(shard, seq, min(limit, MAX_RECORD_LIMIT), table.horizon(),
                           schema.names)

    # -- reading rows ----------------------------------------------------
    def get_row(self, table_name, primary_key, columns_to_get=None, column_filter=None,
                max_version=1, time_range=None, start_column=None, end_column=None, token=None,
                transaction_id=None):
        if (transaction_id is None and columns_to_get is None and column_filter is None
                and max_version == 1 and type(max_version) is int and time_range is None
                and start_column is None and end_column is None and token is None):
            got = self._row_reader.get(table_name, primary_key)
            if got is not None:
                return got
        if transaction_id is not None:
            with self._transactions.use(transaction_id) as txn:
                return txn.client.get_row(table_name, primary_key, columns_to_get, column_filter,
                                          max_version, time_range, start_column, end_column,
                                          token)
        name, schema = self._schema(table_name)
        # the request's own checks before the key's against the schema (RestrictedItemTest 12)
        names, max_version, rng = check_read_params(columns_to_get, max_version, time_range)
        values = check_pk(schema, primary_key)
        window, column_filter = read_window(start_column, end_column, token, column_filter, names)
        return self._get(name, schema, values, names, max_version, rng, column_filter, window)

    def _get(self, name, schema, values, names, max_version, rng, column_filter, window=None):
        row_key = _rowcodec.encode_pk(schema.types, values)
        entries = row_entries(self._server, name, row_key)
        if not entries:
            return read_cu(0), None, b""
        # Read CU: the primary key and the attribute cells returned.
        parts, size = read_row(schema, values, len(row_key), entries, names, max_version, rng,
                               column_filter, self._pk_projection, window)
        if parts is None:
            return read_cu(0), None, b""
        consumed = read_cu(_rowcodec.pk_size(schema.names, values) + size)
        return consumed, Row(parts[0], parts[1]), b""

    def get_range(self, table_name, direction, inclusive_start_primary_key,
                  exclusive_end_primary_key, columns_to_get=None, limit=None, column_filter=None,
                  max_version=1, time_range=None, start_column=None, end_column=None, token=None,
                  transaction_id=None):
        if transaction_id is not None:
            with self._transactions.use(transaction_id) as txn:
                return txn.client.get_range(
                    table_name, direction, inclusive_start_primary_key,
                    exclusive_end_primary_key, columns_to_get, limit, column_filter, max_version,
                    time_range, start_column, end_column, token)
        if direction not in (Direction.FORWARD, Direction.BACKWARD):
            raise OTSClientError("direction should be one of [FORWARD, BACKWARD], not %s"
                                 % str(direction))
        name, schema = self._schema(table_name)
        names, max_version, rng = check_read_params(columns_to_get, max_version, time_range)
        start = check_pk(schema, inclusive_start_primary_key, "bound")
        end = check_pk(schema, exclusive_end_primary_key, "bound")
        window, column_filter = read_window(start_column, end_column, token, column_filter, names)
        if limit is not None:
            if not isinstance(limit, int) or isinstance(limit, bool):
                raise OTSClientError("expect int or long for the value, not %s"
                                     % limit.__class__.__name__)
            if limit <= 0:
                raise service_error("limit_invalid")
        s = _rowcodec.encode_pk(schema.types, start)
        e = _rowcodec.encode_pk(schema.types, end)
        forward = direction == Direction.FORWARD
        if forward and not s < e:
            raise service_error("forward_range")
        if not forward and not s > e:
            raise service_error("backward_range")
        max_rows = min(limit or RANGE_ROWS, RANGE_ROWS)
        # A row is one entry or more; the page reads the next start's row too,
        # and knows a row whole at the entry after it: max_rows + 2 entries.
        expect = max_rows + 2
        if forward:
            scan = (name, s, e, False, expect)
        else:
            scan = (name, cells.row_end(e), cells.row_end(s), True, expect)
        return self._range_page(schema, scan, forward, names, max_version, rng,
                                column_filter, max_rows, window)

    def _range_page(self, schema, scan, forward, names, max_version, rng, column_filter,
                    max_rows, window=None):
        """One GetRange page of ``scan``, the server's scan's ``(table, start,
        end, reverse, expect)``, read by ``RangePage.scan`` (in C, entry by
        entry, when the server has its C scan): rows, next start PK, consumed."""
        now = cells.now_ms()
        pk_projection = self._pk_projection

        def slow(row_key, values, group):
            head, deltas = cells.split_entries(len(row_key), group)
            return assemble(schema, values, len(row_key), head, deltas, now, names,
                            max_version, rng, column_filter, pk_projection, window)

        def live(row_key, group):
            head, deltas = cells.split_entries(len(row_key), group)
            return visible(len(row_key), head, deltas, schema.ttl, schema.max_versions,
                           now) is not None

        page = _reads.RangePage(len(schema.names), schema.names,
                               decode_in_c(schema, names, rng, column_filter, window),
                               min(max_version or 1, schema.max_versions), max_rows,
                               RANGE_BYTES, slow, live)
        rows, next_values, read_bytes = page.scan(self._server, *scan)
        next_pk = None if next_values is None else list(zip(schema.names, next_values))
        return read_cu(read_bytes), next_pk, rows, b""

    def xget_range(self, table_name, direction, inclusive_start_primary_key,
                   exclusive_end_primary_key, consumed_counter, columns_to_get=None, count=None,
                   column_filter=None, max_version=1, time_range=None, start_column=None,
                   end_column=None, token=None):
        """Generator of Rows over all pages; adds each page's read CU to ``consumed_counter``."""
        if not isinstance(consumed_counter, CapacityUnit):
            raise OTSClientError("consumed_counter should be an instance of CapacityUnit, not %s"
                                 % consumed_counter.__class__.__name__)
        left = None
        if count is not None:
            if count <= 0:
                raise OTSClientError("the value of count must be larger than 0")
            left = count
        consumed_counter.read = 0
        consumed_counter.write = 0
        next_start = inclusive_start_primary_key
        while next_start:
            consumed, next_start, rows, _ = self.get_range(
                table_name, direction, next_start, exclusive_end_primary_key, columns_to_get,
                left, column_filter, max_version, time_range, start_column, end_column, token)
            consumed_counter.read += consumed.read
            for row in rows:
                yield row
                if left is not None:
                    left -= 1
                    if left <= 0:
                        return

    def batch_get_row(self, request):
        # a request of whole reads of plain keys, checked and read in one C call
        response = self._row_reader.batch_request(request)
        if response is not None:
            return response
        if not isinstance(request, BatchGetRowRequest):
            raise OTSClientError("The request should be a instance of BatchGetRowRequest, not %d"
                                 % len(request.__class__.__name__))
        if not request.items:
            raise service_error("batch_get_empty")
        # A table entry with no keys is valid: it gets an empty result list.
        total = sum(len(item.primary_keys) for item in request.items.values())
        check_batch_rows(total, BATCH_GET_ROWS)
        for table_name, item in request.items.items():
            check_name(table_name, "table")       # these fail the whole batch, as the service's
            check_node_count(item.column_filter)
        result = {}
        for table_name, item in request.items.items():
            items = result[table_name] = []
            try:
                name, schema = self._schema(table_name)
                names, max_version, rng = check_read_params(
                    item.columns_to_get, item.max_version, item.time_range,
                    "batch_get_no_version_condition")
                window, column_filter = read_window(item.start_column, item.end_column,
                                                    item.token, item.column_filter, names)
                table_error = None
                whole = (max_version == 1 and whole_read(schema, names, rng, column_filter, window))
            except OTSServiceError as exc:
                if getattr(exc, "key", None) in BATCH_WIDE:
                    raise
                table_error = exc
            plain = (self._row_reader.items(name, item.primary_keys, table_name)
                     if table_error is None and whole else None)
            if plain is not None and all(plain):     # every row read in C (items are true)
                result[table_name] = plain
                continue
            for i, pk in enumerate(item.primary_keys):
                error = table_error
                if plain is not None and plain[i] is not None:
                    items.append(plain[i])
                    continue
                if error is None:
                    try:
                        values = check_pk(schema, pk)
                    except OTSServiceError as exc:
                        if getattr(exc, "key", None) in BATCH_WIDE:
                            raise
                        error = exc
                if error is not None:
                    items.append(RowDataItem(False, error.code, error.message, table_name,
                                             None, None, None))
                    continue
                consumed, row, _ = self._get(name, schema, values, names, max_version, rng,
                                             column_filter, window)
                items.append(RowDataItem(True, None, None, table_name, consumed,
                                         row.primary_key if row else None,
                                         row.attribute_columns if row else None))
        return BatchGetRowResponse(result)

    # -- writing rows ----------------------------------------------------
    # ``return_column_names`` (not in the Python SDK): with ReturnType
    # RT_AFTER_MODIFY, an UpdateRow returns the new values of these INCREMENT
    # columns (writes.RowWriter._success); the protocol carries it on every write.
    # A plain row written unconditionally outside a transaction is the whole
    # call in one C call, the checks below included (RowWriter.write_plain_put,
    # write_plain_update); anything else is declined before anything is done.
    def put_row(self, table_name, row, condition=None, return_type=None, transaction_id=None,
                return_column_names=None):
        got = self._writer.write_plain_put(table_name, row, condition, return_type,
                                           transaction_id, return_column_names)
        if got is not None:
            return got
        self._indexer.admit(table_name)     # a table whose global indexes lag waits
        return self._write(BatchWriteRowType.PUT, table_name, row, condition, return_type,
                           transaction_id, return_column_names)

    def update_row(self, table_name, row, condition, return_type=None, transaction_id=None,
                   return_column_names=None):
        got = self._writer.write_plain_update(table_name, row, condition, return_type,
                                              transaction_id, return_column_names)
        if got is not None:
            return got
        self._indexer.admit(table_name)
        return self._write(BatchWriteRowType.UPDATE, table_name, row, condition, return_type,
                           transaction_id, return_column_names)

    def delete_row(self, table_name, row=None, condition=None, return_type=None,
                   transaction_id=None, return_column_names=None, **kwargs):
        self._indexer.admit(table_name)
        primary_key = kwargs.get("primary_key", None)
        if row is not None:
            primary_key = row
        if isinstance(primary_key, Row):
            primary_key = primary_key.primary_key
        return self._write(BatchWriteRowType.DELETE, table_name, Row(primary_key), condition,
                           return_type, transaction_id, return_column_names)

    def _write(self, kind, table_name, row, condition, return_type, transaction_id,
               return_column_names):
        """One row's write (writes.RowWriter), in its transaction if one is
        named (the row checked first, then the transaction)."""
        check_pk_count(getattr(row, "primary_key", None))     # before the table's lookup
        if transaction_id is None:
            return self._writer.write_row(kind, table_name, row, condition, return_type,
                                          return_column_names)
        p = self._writer.prepare_row(kind, table_name, row, condition, return_type,
                                     return_column_names)
        with self._transactions.use(transaction_id) as txn:
            return txn.client._writer.run_prepared(p)

    def _writable(self, table_name):
        """(name, schema) of a table a write names: ``_schema``, not an index's."""
        name, schema = self._schema(table_name)
        if name in self._indexer.index_of:
            raise service_error("index_write", table=name)
        return name, schema

    def batch_write_row(self, request):
        response = self._writer.write_plain_batch(request)
        if response is not None:
            return response
        if not isinstance(request, BatchWriteRowRequest):
            raise OTSClientError("The request should be a instance of BatchWriteRowRequest, not %s"
                                 % request.__class__.__name__)
        if request.transaction_id is not None and self._txn is None:
            with self._transactions.use(request.transaction_id) as txn:
                return txn.client.batch_write_row(request)
        if not request.items:
            raise service_error("batch_write_empty")
        total = 0
        for table_name, item in request.items.items():
            check_name(table_name, "table")       # fails the whole batch, as the service's
            if not item.row_items:
                raise service_error("batch_no_operation", table=table_name)
            total += len(item.row_items)
        check_batch_rows(total, BATCH_WRITE_ROWS)
        for table_name in request.items:
            self._indexer.admit(table_name)
        # is_atomic: ours (metadata.py); the SDK's has none
        return self._writer.write_batch(request, bool(getattr(request, "is_atomic", False)))

    # -- local transactions (state in transactions.py) ------------------------
    def start_local_transaction(self, table_name, key):
        """Lock the partition key value ``key`` ([(name, value)]) of the table;
        returns the transaction id for the row operations' ``transaction_id``."""
        if table_name == "":
            raise service_error("invalid_table_name", table="")    # (the Java SDK's LocalTxnTest)
        name, schema = self._schema(table_name)
        if (self._server.table_attributes(name) or {}).get("local_txn") is False:
            raise service_error("transaction_disabled")
        if not isinstance(key, (list, tuple)):
            raise OTSClientError("Priamry key is not list, but is %s" % str(type(key)))
        if len(key) != 1:
            raise service_error("transaction_one_pk")
        if schema.auto_incr is not None:
            raise service_error("transaction_auto_incr")
        values = check_pk(schema.partition(), key)
        partition = partition_of(_rowcodec.encode_pk(schema.types[:1], values))
        txn = self._transactions.start(name, partition)
        txn.client = self._in_transaction(txn)
        return txn.id

    def commit_transaction(self, transaction_id):
        """Apply the transaction's writes atomically (one WAL record); unlock."""
        self._transactions.commit(transaction_id)

    def abort_transaction(self, transaction_id):
        """Drop the transaction's writes; unlock."""
        self._transactions.abort(transaction_id)

    def _in_transaction(self, txn):
        """This client running on the transaction's view: a shallow copy sharing
        schemas, row locks and generations, whose server is ``txn`` (reads see
        the transaction's writes, writes are buffered in it)."""
        view = copy.copy(self)
        view._server, view._owns_server, view._txn = txn, False, txn
        view._row_reader = row_reader(self._schemas, txn)
        view._writer = self._writer.on(txn)      # writes go into the transaction
        return view


def _validate_split_points(split_points, pk_type):
    """The SDK's client-side checks of ``split_points`` (same messages)."""
    if not split_points:
        raise OTSClientError("The split-point list cannot be empty.")
    for point in split_points:
        if own_marker(point) is INF_MIN or own_marker(point) is INF_MAX:
            raise OTSClientError("The split-point can't be set as an INF value.")
    expected = {"INTEGER": (int,), "STRING": (str,), "BINARY": (bytes, bytearray)}[pk_type]
    for point in split_points:
        if not isinstance(point, expected) or (pk_type == "INTEGER" and isinstance(point, bool)):
            raise OTSClientError("The split-point's type doesn't match the partition key's type. "
                                 "Expected %s, but got %s." % (pk_type, type(point).__name__))
    for i in range(1, len(split_points)):
        if split_points[i - 1] >= split_points[i]:
            raise OTSClientError("The split-point list isn't strictly increasing.")
    # the service's own checks (the Java SDK's SplitPointTest); its limit of 10
    # partitions only with OTSClient(max_partitions=10) (regions-server
    # --max-partitions): pre-splitting into many regions is this store's way
    # to load a keyspace (regions.presplit, regions-import --split-points)
    for point in split_points:
        if pk_type == "INTEGER":
            if point in (INT64_MIN, INT64_MAX):
                raise service_error("split_point_int64_bound")
            continue
        if not len(point):
            raise service_error("split_point_empty", type="string" if pk_type == "STRING"
                                else "binary")
        size = len(point.encode("utf-8")) if isinstance(point, str) else len(point)
        if size > MAX_SPLIT_POINT_BYTES:
            raise service_error("split_point_length", limit=MAX_SPLIT_POINT_BYTES, size=size)


# -- request metrics (regions.metrics.ApiMetrics; OTSClient.metrics()) ------
# A front end that meters its requests whole (OTSClient.request) sets this on
# its thread, so the API methods it calls are not counted a second time.
class _FrontEnd(threading.local):
    #: True while the wire front end meters a request whole (the class
    #: default makes the per-call check a plain attribute read).
    metering = False


_front_end = _FrontEnd()


def _error_code(exc):
    """The error code a failed request counts under: the service's code, the
    endpoint's answer to an OTSClientError, or a front end's own error code."""
    if isinstance(exc, OTSServiceError):
        return exc.code
    if isinstance(exc, OTSClientError):
        return "OTSParameterInvalid"     # what the endpoint answers for it
    return getattr(exc, "code", None) or "OTSInternalServerError"


def _shorter_ttl(a, b):
    """The shorter of two TTLs in seconds (None or <= 0: none), -1 for none."""
    if a is None or a <= 0:
        return b if b is not None and b > 0 else -1
    return a if b is None or b <= 0 or a < b else b


#: method -> the wire API name it counts under
METERED_APIS = {
    "create_table": "CreateTable", "delete_table": "DeleteTable", "list_table": "ListTable",
    "describe_table": "DescribeTable", "update_table": "UpdateTable", "get_row": "GetRow",
    "get_range": "GetRange", "batch_get_row": "BatchGetRow", "put_row": "PutRow",
    "update_row": "UpdateRow", "delete_row": "DeleteRow", "batch_write_row": "BatchWriteRow",
    "start_local_transaction": "StartLocalTransaction",
    "commit_transaction": "CommitTransaction", "abort_transaction": "AbortTransaction",
    "create_secondary_index": "CreateIndex", "delete_secondary_index": "DropIndex",
    "add_defined_column": "AddDefinedColumn", "delete_defined_column": "DeleteDefinedColumn",
    "create_search_index": "CreateSearchIndex", "delete_search_index": "DeleteSearchIndex",
    "list_search_index": "ListSearchIndex", "describe_search_index": "DescribeSearchIndex",
    "update_search_index": "UpdateSearchIndex", "search": "Search",
    "compute_splits": "ComputeSplits", "parallel_scan": "ParallelScan",
    "list_stream": "ListStream", "describe_stream": "DescribeStream",
    "get_shard_iterator": "GetShardIterator", "get_stream_record": "GetStreamRecord",
}
for _name, _api in METERED_APIS.items():
    # (a storage failure raised as the service's error: storage_error)
    setattr(OTSClient, _name, metered(_api, getattr(OTSClient, _name), _front_end, _error_code,
                                      storage_error))
del _name, _api
