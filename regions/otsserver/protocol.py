"""One handler per Tablestore API: request bytes in, response bytes out.

``TablestoreService(client).handle(api, body)`` parses ``<Api>Request`` (the
service's table_store.proto: ``wire``),
calls the same-named method of the data API client (``regions.tablestore
.OTSClient``, whose signatures and return shapes are the official SDK's), and
serializes ``<Api>Response``.  Errors of the data API (``OTSServiceError``)
become ``WireError`` with the same status, code and message; the data API's
client-side checks (``OTSClientError``: what the SDK would have refused before
sending) become 400 OTSParameterInvalid.

Thread-safety: as thread-safe as the client (which is); handlers keep no
state but the last time each search index was seen in sync (under a lock:
DescribeSearchIndex's ``current_sync_timestamp``).
Ownership: the service owns the client and closes it in ``close()``.
"""
from __future__ import annotations

import logging
import threading
import time

from tablestore.protobuf import search_pb2 as spb
from tablestore.protobuf import timeseries_pb2 as tpb

from lsm.errors import CorruptionError

from regions.otsserver import convert as cv
from regions.otsserver import errors
from regions.otsserver import reindexwire
from regions.otsserver import searchwire as sw
from regions.otsserver import wire as pb
from regions.tablestore import metadata as md
from regions.tablestore.errors import OTSClientError, OTSServiceError, service_error
from regions.tablestore.validate import BATCH_WRITE_ROWS, check_batch_rows, decode_name

log = logging.getLogger(__name__)

BATCH_WRITE_TYPES = {pb.PUT: md.PutRowItem, pb.UPDATE: md.UpdateRowItem, pb.DELETE: md.DeleteRowItem}
ROW_OF_TYPE = {pb.PUT: cv.put_row, pb.UPDATE: cv.update_row, pb.DELETE: cv.delete_row}


UNKNOWN_API = "Unknown"     # the metrics' name for requests to an API we do not serve


class TablestoreService:
    """Maps the wire protocol onto one data API client."""

    def __init__(self, client):
        self.client = client
        self._synced = {}           # (table, search index) -> ns it was last seen in sync
        self._synced_lock = threading.Lock()
        self._handlers = {
            "CreateTable": self.create_table, "DeleteTable": self.delete_table,
            "ListTable": self.list_table, "DescribeTable": self.describe_table,
            "UpdateTable": self.update_table, "GetRow": self.get_row, "PutRow": self.put_row,
            "UpdateRow": self.update_row, "DeleteRow": self.delete_row,
            "BatchGetRow": self.batch_get_row, "BatchWriteRow": self.batch_write_row,
            "GetRange": self.get_range, "CreateIndex": self.create_index,
            "DropIndex": self.drop_index, "AddDefinedColumn": self.add_defined_column,
            "DeleteDefinedColumn": self.delete_defined_column,
            "CreateSearchIndex": self.create_search_index,
            "DescribeSearchIndex": self.describe_search_index,
            "ListSearchIndex": self.list_search_index,
            "ListTimeseriesTable": self.list_timeseries_table,
            "UpdateSearchIndex": self.update_search_index,
            "DeleteSearchIndex": self.delete_search_index,
            "Search": self.search,
            "ComputeSplits": self.compute_splits, "ParallelScan": self.parallel_scan,
            "StartLocalTransaction": self.start_local_transaction,
            "CommitTransaction": self.commit_transaction,
            "AbortTransaction": self.abort_transaction,
            "ListStream": self.list_stream, "DescribeStream": self.describe_stream,
            "GetShardIterator": self.get_shard_iterator, "GetStreamRecord": self.get_stream_record,
        }

    @property
    def apis(self):
        return tuple(self._handlers)

    def metered(self, api: str):
        """A context that counts one request whole in the client's metrics
        (``OTSClient.request``): under ``api`` when this service answers it,
        else ``UNKNOWN_API``, so made-up names cannot grow the metrics."""
        return self.client.request(api if api in self._handlers else UNKNOWN_API)

    def handle(self, api: str, body: bytes) -> bytes:
        handler = self._handlers.get(api)
        if handler is None:
            raise errors.unsupported_operation(api)
        try:
            return handler(body).SerializeToString()
        except OTSServiceError as e:
            raise errors.from_service(e) from None
        except OTSClientError as e:
            raise errors.parameter_invalid(e.message) from None
        except Exception as e:
            answer = errors.from_storage(e)
            if answer is None:
                raise
            if isinstance(e, CorruptionError):
                log.error("%s: %s", api, e)
            # (a refusal of a degraded store is not logged here: the store
            # logs once when it degrades and once when it resumes)
            raise answer from None

    def close(self) -> None:
        self.client.close()

    # ------------------------------------------------------------- tables
    def create_table(self, body):
        req = cv.parse(pb.CreateTableRequest, body)
        if req.HasField("sse_spec") and req.sse_spec.enable:
            raise errors.parameter_invalid(
                "Server-side encryption is not supported by this server.")
        meta = cv.table_meta(req.table_meta)
        options = cv.table_options(req.table_options, defaults=True)
        throughput = md.ReservedThroughput(cv.capacity_unit(req.reserved_throughput.capacity_unit))
        points = cv.split_points(req.partitions, meta.schema_of_primary_key)
        indexes = [cv.index_meta(m) for m in req.index_metas] or None
        self.client.create_table(meta, options, throughput, secondary_indexes=indexes,
                                 split_points=points, stream_spec=cv.stream_spec(req),
                                 enable_local_txn=cv.optional(req, "enable_local_txn"))
        return pb.CreateTableResponse()

    def delete_table(self, body):
        req = cv.parse(pb.DeleteTableRequest, body)
        self.client.delete_table(req.table_name)
        return pb.DeleteTableResponse()

    def list_table(self, body):
        cv.parse(pb.ListTableRequest, body)
        resp = pb.ListTableResponse()
        resp.table_names.extend(self.client.list_table())
        return resp

    def describe_table(self, body):
        req = cv.parse(pb.DescribeTableRequest, body)
        desc = self.client.describe_table(req.table_name)
        resp = pb.DescribeTableResponse()
        cv.fill_table_meta(resp.table_meta, desc.table_meta)
        cv.fill_throughput_details(resp.reserved_throughput_details, desc.reserved_throughput_details)
        cv.fill_table_options(resp.table_options, desc.table_options)
        pk_name = desc.table_meta.schema_of_primary_key[0][0]
        for value in getattr(desc, "shard_splits", None) or ():
            resp.shard_splits.append(cv.shard_split(pk_name, value))
        for index in desc.secondary_indexes or ():
            cv.fill_index_meta(resp.index_metas, index)
        resp.table_status = pb.ACTIVE          # table operations here are immediate
        created = getattr(desc, "creation_time", None)
        if created:
            resp.creation_time = created
        cv.fill_stream_details(resp.stream_details, getattr(desc, "stream_details", None))
        return resp

    def update_table(self, body):
        req = cv.parse(pb.UpdateTableRequest, body)
        options = cv.table_options(req.table_options, defaults=False) \
            if req.HasField("table_options") else None
        throughput = md.ReservedThroughput(cv.capacity_unit(req.reserved_throughput.capacity_unit)) \
            if req.HasField("reserved_throughput") else None
        result = self.client.update_table(req.table_name, table_options=options,
                                          reserved_throughput=throughput,
                                          stream_spec=cv.stream_spec(req))
        resp = pb.UpdateTableResponse()
        cv.fill_throughput_details(resp.reserved_throughput_details,
                                   result.reserved_throughput_details)
        cv.fill_table_options(resp.table_options, result.table_options)
        cv.fill_stream_details(resp.stream_details, getattr(result, "stream_details", None))
        return resp

    # ------------------------------------------------------------- streams
    def list_stream(self, body):
        req = cv.parse(pb.ListStreamRequest, body)
        resp = pb.ListStreamResponse()
        for stream in self.client.list_stream(cv.optional(req, "table_name")):
            resp.streams.add(stream_id=stream.stream_id, table_name=stream.table_name,
                             creation_time=stream.creation_time)
        return resp

    def describe_stream(self, body):
        req = cv.parse(pb.DescribeStreamRequest, body)
        desc = self.client.describe_stream(req.stream_id,
                                           cv.optional(req, "inclusive_start_shard_id"),
                                           cv.optional(req, "shard_limit"))
        resp = pb.DescribeStreamResponse(
            stream_id=desc.stream_id, expiration_time=desc.expiration_time,
            table_name=desc.table_name, creation_time=desc.creation_time,
            stream_status=pb.StreamStatus.Value(desc.stream_status))
        for shard in desc.shards:
            item = resp.shards.add(shard_id=shard.shard_id)
            if shard.parent_id is not None:
                item.parent_id = shard.parent_id
            if shard.parent_sibling_id is not None:
                item.parent_sibling_id = shard.parent_sibling_id
        if desc.next_shard_id is not None:
            resp.next_shard_id = desc.next_shard_id
        return resp

    def get_shard_iterator(self, body):
        req = cv.parse(pb.GetShardIteratorRequest, body)
        iterator = self.client.get_shard_iterator(req.stream_id, req.shard_id,
                                                  cv.optional(req, "timestamp"))
        return pb.GetShardIteratorResponse(shard_iterator=iterator)

    def get_stream_record(self, body):
        req = cv.parse(pb.GetStreamRecordRequest, body)
        result = self.client.get_stream_record(req.shard_iterator, cv.optional(req, "limit"))
        resp = pb.GetStreamRecordResponse(may_more_record=result.may_more_record)
        for record in result.records:
            resp.stream_records.add(action_type=pb.ActionType.Value(record.action_type),
                                    record=cv.stream_record(record))
        if result.next_shard_iterator is not None:
            resp.next_shard_iterator = result.next_shard_iterator
        cv.set_consumed(resp.consumed, result.consumed)
        return resp

    # -------------------------------------------------- secondary indexes
    def create_index(self, body):
        req = cv.parse(pb.CreateIndexRequest, body)
        # An absent include_base_data reads as the proto2 default, false.
        self.client.create_secondary_index(req.main_table_name, cv.index_meta(req.index_meta),
                                           include_base_data=req.include_base_data)
        return pb.CreateIndexResponse()

    def drop_index(self, body):
        req = cv.parse(pb.DropIndexRequest, body)
        self.client.delete_secondary_index(req.main_table_name, req.index_name)
        return pb.DropIndexResponse()

    # ------------------------------------------------- predefined columns
    def add_defined_column(self, body):
        req = cv.parse(pb.AddDefinedColumnRequest, body)
        self.client.add_defined_column(req.table_name, cv.defined_columns(req.columns))
        return pb.AddDefinedColumnResponse()

    def delete_defined_column(self, body):
        req = cv.parse(pb.DeleteDefinedColumnRequest, body)
        self.client.delete_defined_column(req.table_name, list(req.columns))
        return pb.DeleteDefinedColumnResponse()

    # ------------------------------------------------------ search indexes
    def create_search_index(self, body):
        req = cv.parse(spb.CreateSearchIndexRequest, body)
        self.client.create_search_index(req.table_name, req.index_name, sw.index_meta(req),
                                        reindexwire.source_index(body))
        with self._synced_lock:
            self._synced.pop((req.table_name, req.index_name), None)
        return spb.CreateSearchIndexResponse()

    def describe_search_index(self, body):
        req = cv.parse(spb.DescribeSearchIndexRequest, body)
        include = req.include_sync_stat if req.HasField("include_sync_stat") else True
        meta, stat = self.client.describe_search_index(req.table_name, req.index_name, include)
        resp = spb.DescribeSearchIndexResponse()
        sw.fill_index_schema(resp.schema, meta)
        if stat is not None:
            sw.fill_sync_stat(resp.sync_stat, stat, self._sync_point(req.table_name,
                                                                     req.index_name, stat))
        resp.time_to_live = meta.time_to_live if meta.time_to_live is not None else -1
        sw.fill_metering_info(resp, self.client.search_index_metering(req.table_name,
                                                                      req.index_name))
        brother, weights = self.client.search_index_pair(req.table_name, req.index_name)
        if brother is None and not weights:
            return resp
        return reindexwire.Described(resp, brother, weights)

    def _sync_point(self, table, index, stat):
        """``current_sync_timestamp`` as the service means it (nanoseconds, its
        docs' SyncStat and the vendor's example): every write acknowledged
        before it is in the index.  Now, when the index is in phase INCR and
        holds every write so far; else the last such time seen (0 before any,
        and in phase FULL).  The embedded client's describe gives the time of
        the call in microseconds, in sync or not: not what a waiter needs."""
        now = time.time_ns()                  # taken before the check: a lower bound
        key = (table, index)
        if sw.in_incr(stat) and \
                self.client.wait_for_search_index(table, index, timeout=0.01):
            with self._synced_lock:
                self._synced[key] = max(now, self._synced.get(key, 0))
                return self._synced[key]
        with self._synced_lock:
            if not sw.in_incr(stat):
                self._synced.pop(key, None)
            return self._synced.get(key, 0)

    def list_timeseries_table(self, body):
        """Always empty: timeseries tables are not served, but clients list
        them (the Java SDK's RestrictedItemTest does before every test)."""
        cv.parse(tpb.ListTimeseriesTableRequest, body)
        return tpb.ListTimeseriesTableResponse()

    def list_search_index(self, body):
        req = cv.parse(spb.ListSearchIndexRequest, body)
        resp = spb.ListSearchIndexResponse()
        for table, index in self.client.list_search_index(cv.optional(req, "table_name")):
            resp.indices.add(table_name=table, index_name=index)
        return resp

    def update_search_index(self, body):
        req = cv.parse(spb.UpdateSearchIndexRequest, body)
        switch, weights = reindexwire.reindex_update(body)
        if switch is not None or weights is not None:
            self.client.update_search_index(req.table_name, req.index_name,
                                            switch_index_name=switch, query_flow_weights=weights)
        else:
            self.client.update_search_index(req.table_name, req.index_name, sw.update_meta(req))
        return spb.UpdateSearchIndexResponse()

    def delete_search_index(self, body):
        req = cv.parse(spb.DeleteSearchIndexRequest, body)
        self.client.delete_search_index(req.table_name, req.index_name)
        with self._synced_lock:
            self._synced.pop((req.table_name, req.index_name), None)
        return spb.DeleteSearchIndexResponse()

    def search(self, body):
        req = cv.parse(spb.SearchRequest, body)
        query = sw.search_query(req.search_query)
        result = self.client.search(req.table_name, req.index_name, query,
                                    sw.columns_to_get(req), routing_keys=sw.routing_keys(req),
                                    timeout_s=sw.timeout_s(req))
        resp = spb.SearchResponse()
        sw.fill_search_response(resp, result, query)
        return resp

    def compute_splits(self, body):
        req = cv.parse(spb.ComputeSplitsRequest, body)
        if not req.HasField("search_index_splits_options"):     # the service's words
            raise errors.parameter_invalid("[search index splits options] must not be null")
        resp = spb.ComputeSplitsResponse()
        sw.fill_compute_splits(resp, self.client.compute_splits(
            req.table_name, req.search_index_splits_options.index_name))
        return resp

    def parallel_scan(self, body):
        req = cv.parse(spb.ParallelScanRequest, body)
        if not req.HasField("scan_query"):
            raise errors.parameter_invalid("ParallelScan needs a scan_query.")
        result = self.client.parallel_scan(req.table_name, req.index_name,
                                           sw.scan_query(req.scan_query), sw.session_id(req),
                                           sw.columns_to_get(req), timeout_s=sw.timeout_s(req))
        resp = spb.ParallelScanResponse()
        sw.fill_parallel_scan(resp, result)
        return resp

    # ---------------------------------------------------------- single row
    def get_row(self, body):
        req = cv.parse(pb.GetRowRequest, body)
        opts = cv.read_options(req)
        consumed, row, next_token = self.client.get_row(
            req.table_name, cv.primary_key(req.primary_key),
            transaction_id=cv.transaction_id(req), **opts)
        resp = pb.GetRowResponse()
        cv.set_consumed(resp.consumed, consumed)
        resp.row = cv.encode_row(row)
        if next_token:
            resp.next_token = next_token
        return resp

    def put_row(self, body):
        return self._write_row(body, pb.PutRowRequest, pb.PutRowResponse, "row", cv.put_row,
                               self.client.put_row)

    def update_row(self, body):
        return self._write_row(body, pb.UpdateRowRequest, pb.UpdateRowResponse, "row_change",
                               cv.update_row, self.client.update_row)

    def delete_row(self, body):
        return self._write_row(body, pb.DeleteRowRequest, pb.DeleteRowResponse, "primary_key",
                               cv.delete_row, self.client.delete_row)

    def _write_row(self, body, request_type, response_type, field, convert, write):
        """PutRow, UpdateRow and DeleteRow: the request's row (in ``field``,
        decoded by ``convert``), condition, return type and transaction, given
        to the client's ``write``."""
        req = cv.parse(request_type, body)
        consumed, row = write(req.table_name, convert(getattr(req, field)),
                              cv.condition(req.condition), cv.return_type(req),
                              cv.transaction_id(req),
                              return_column_names=cv.return_column_names(req))
        resp = response_type()
        cv.set_consumed(resp.consumed, consumed)
        data = cv.encode_written_row(row)
        if data:
            resp.row = data
        return resp

    # ------------------------------------------------------------- batches
    def batch_get_row(self, body):
        req = cv.parse(pb.BatchGetRowRequest, body)
        request = md.BatchGetRowRequest()
        order = []
        for table in req.tables:
            # A string field that is not UTF-8 reaches us as bytes (the SDK's
            # pure-Python protobuf): the request's error, as GetRow's.
            name = decode_name(table.table_name, "table")
            if name in request.items:
                raise errors.parameter_invalid("Duplicated table name: %s." % name)
            keys = [cv.primary_key(k) for k in table.primary_key]
            request.add(md.TableInBatchGetRowItem(name, keys, **cv.read_options(table)))
            order.append(name)
        if not order:
            raise service_error("batch_get_empty")
        result = self.client.batch_get_row(request)
        resp = pb.BatchGetRowResponse()
        for name in order:
            out = resp.tables.add()
            out.table_name = name
            for item in result.items.get(name, ()):
                row = _row_result(out.rows.add(), item)
                if item.is_ok:
                    row.row = cv.encode_row(item.row)
        return resp

    def batch_write_row(self, body):
        """Rows whose conversion fails with a service error (not UTF-8, a bad
        update or filter: what the data API would refuse per row) get that
        error as their result, in place, as they do on the embedded client;
        the other rows go to the client.  In an atomic batch (``is_atomic``)
        such a row fails its whole table, as a row the client refuses does
        (RowWriter.run_atomic): the table is not sent, each of its rows gets
        its own error or the first one."""
        req = cv.parse(pb.BatchWriteRowRequest, body)
        check_batch_rows(sum(len(t.rows) for t in req.tables), BATCH_WRITE_ROWS)
        request = md.BatchWriteRowRequest(is_atomic=req.is_atomic)
        request.set_transaction_id(cv.transaction_id(req))
        tables = []  # (name, [row item or OTSServiceError]) in request order
        for table in req.tables:
            table_name = decode_name(table.table_name, "table")   # as in batch_get_row
            if any(name == table_name for name, _ in tables):
                raise errors.parameter_invalid("Duplicated table name: %s." % table_name)
            rows = [_row_item(r) for r in table.rows]
            items = [r for r in rows if not isinstance(r, OTSServiceError)]
            if req.is_atomic and len(items) < len(rows):
                first = next(r for r in rows if isinstance(r, OTSServiceError))
                rows = [r if isinstance(r, OTSServiceError) else first for r in rows]
                items = []
            if items or not rows:  # an empty entry: the client words the error
                request.add(md.TableInBatchWriteRowItem(table_name, items))
            tables.append((table_name, rows))
        result = self.client.batch_write_row(request) if request.items or not tables else None
        resp = pb.BatchWriteRowResponse()
        for name, rows in tables:
            out = resp.tables.add()
            out.table_name = name
            results = iter(_results_in_request_order(result, name) if result else ())
            for given in rows:
                item = (md.BatchWriteRowResponseItem(False, given.code, given.message, None, None)
                        if isinstance(given, OTSServiceError) else next(results))
                row = _row_result(out.rows.add(), item)
                data = cv.encode_written_row(item.row) if item.is_ok else b""
                if data:
                    row.row = data
        return resp

    # --------------------------------------------------------------- range
    def get_range(self, body):
        req = cv.parse(pb.GetRangeRequest, body)
        consumed, next_pk, rows, next_token = self.client.get_range(
            req.table_name, cv.DIRECTIONS[req.direction],
            cv.primary_key(req.inclusive_start_primary_key),
            cv.primary_key(req.exclusive_end_primary_key),
            limit=req.limit if req.HasField("limit") else None,
            transaction_id=cv.transaction_id(req), **cv.read_options(req))
        resp = pb.GetRangeResponse()
        cv.set_consumed(resp.consumed, consumed)
        if req.data_block_type_hint == pb.DBT_SIMPLE_ROW_MATRIX:
            resp.rows = cv.encode_matrix(rows)
            resp.data_block_type = pb.DBT_SIMPLE_ROW_MATRIX
        else:
            resp.rows = cv.encode_rows(rows)
        if next_pk:
            resp.next_start_primary_key = cv.encode_primary_key(next_pk)
        if next_token:
            resp.next_token = next_token
        return resp


    # ------------------------------------------------------- transactions
    def start_local_transaction(self, body):
        req = cv.parse(pb.StartLocalTransactionRequest, body)
        resp = pb.StartLocalTransactionResponse()
        resp.transaction_id = self.client.start_local_transaction(req.table_name,
                                                                  cv.primary_key(req.key))
        return resp

    def commit_transaction(self, body):
        req = cv.parse(pb.CommitTransactionRequest, body)
        self.client.commit_transaction(req.transaction_id)
        return pb.CommitTransactionResponse()

    def abort_transaction(self, body):
        req = cv.parse(pb.AbortTransactionRequest, body)
        self.client.abort_transaction(req.transaction_id)
        return pb.AbortTransactionResponse()


def _row_item(proto):
    """A RowInBatchWriteRowRequest -> the data API's row item, or its OTSServiceError."""
    try:
        return BATCH_WRITE_TYPES[proto.type](ROW_OF_TYPE[proto.type](proto.row_change),
                                             cv.condition(proto.condition),
                                             cv.return_type(proto),
                                             cv.return_column_names(proto))
    except OTSServiceError as e:
        return e


def _row_result(row, item):
    """``row`` (a batch response's row message) with ``item``'s outcome: is_ok,
    the capacity consumed, or the error; the row's data is the caller's."""
    row.is_ok = bool(item.is_ok)
    if not item.is_ok:
        row.error.code = item.error_code or "OTSInternalServerError"
        row.error.message = item.error_message or ""
    if item.is_ok or item.consumed is not None:
        cv.set_consumed(row.consumed, item.consumed)
    return row


def _results_in_request_order(result, table_name):
    """BatchWriteRowResponse splits results by type; the wire wants request order."""
    items = []
    for by_table in (result.table_of_put, result.table_of_update, result.table_of_delete):
        items.extend(by_table.get(table_name, ()))
    items.sort(key=lambda item: item.index)
    return items
