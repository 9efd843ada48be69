"""The wire schema (wire.py) and what the endpoint answers with it: every API
the service serves answers a response that the service's own table_store.proto
finds complete (every required field set: what the Go SDK's decoder demands),
with the optional fields the service always sends (stream details); an atomic
BatchWriteRow over the wire."""
import types

import pytest
from tablestore.protobuf import search_pb2 as spb
from tablestore.protobuf import timeseries_pb2 as tpb
from tablestore.protobuf import table_store_pb2 as sdk_pb

from regions.otsserver import convert as cv
from regions.otsserver import wire as pb
from regions.otsserver.protocol import TablestoreService
from regions.tablestore import INF_MAX, INF_MIN, OTSClient

# --------------------------------------------------------- the schema itself


@pytest.mark.parametrize("message, field, number", [
    ("DescribeTableResponse", "table_status", 4), ("BatchWriteRowRequest", "is_atomic", 3),
    ("GetRangeRequest", "data_block_type_hint", 15),
    ("GetRangeRequest", "return_entire_primary_keys", 16),
    ("GetRangeRequest", "compress_type_hint", 17), ("GetRangeResponse", "data_block_type", 5),
    ("GetRangeResponse", "compress_type", 6), ("CreateTableRequest", "enable_local_txn", 8),
    ("IndexMeta", "index_sync_phase", 6), ("UpdateTableResponse", "stream_details", 3),
    ("AddDefinedColumnRequest", "columns", 2)])
def test_the_schema_has_the_services_fields(message, field, number):
    assert getattr(pb, message).DESCRIPTOR.fields_by_name[field].number == number


def test_table_status_is_required_and_the_hints_default_as_the_service_says():
    assert pb.DescribeTableResponse.DESCRIPTOR.fields_by_name["table_status"].label == 2
    req = pb.GetRangeRequest()
    assert (req.data_block_type_hint, req.return_entire_primary_keys, req.compress_type_hint) == \
        (pb.DBT_PLAIN_BUFFER, True, pb.CPT_NONE)
    assert (pb.TableStatus.Name(pb.ACTIVE), pb.DataBlockType.Value("DBT_SIMPLE_ROW_MATRIX")) == \
        ("ACTIVE", 1)


def test_our_classes_live_beside_the_sdks_and_speak_the_same_bytes():
    assert pb.PutRowRequest is not sdk_pb.PutRowRequest
    assert pb.PutRowRequest.DESCRIPTOR.full_name == "regions.otsserver.wire.PutRowRequest"
    assert sdk_pb.PutRowRequest.DESCRIPTOR.full_name == "com.aliyun.tablestore.protocol.PutRowRequest"
    sdk_req = sdk_pb.PutRowRequest(table_name="t", row=b"x",
                                   condition=sdk_pb.Condition(row_existence=sdk_pb.IGNORE))
    ours = pb.PutRowRequest.FromString(sdk_req.SerializeToString())
    assert (ours.table_name, ours.row, ours.condition.row_existence) == ("t", b"x", pb.IGNORE)
    assert sdk_pb.PutRowRequest.FromString(ours.SerializeToString()) == sdk_req


def test_every_message_and_enum_of_the_sdks_file_is_here():
    assert set(sdk_pb.DESCRIPTOR.message_types_by_name) <= set(pb.DESCRIPTOR.message_types_by_name)
    for name, enum in sdk_pb.DESCRIPTOR.enum_types_by_name.items():
        assert {v.name: v.number for v in enum.values}.items() <= \
            {v.name: v.number for v in pb.DESCRIPTOR.enum_types_by_name[name].values}.items()


@pytest.mark.parametrize("details, expected", [
    (None, {"enable_stream": False}),
    (types.SimpleNamespace(enable_stream=False, stream_id="x"), {"enable_stream": False}),
    (types.SimpleNamespace(enable_stream=True, stream_id="s1", expiration_time=24,
                           last_enable_time=1700000000000000),
     {"enable_stream": True, "stream_id": "s1", "expiration_time": 24,
      "last_enable_time": 1700000000000000}),
    (types.SimpleNamespace(enable_stream=True), {"enable_stream": True})])
def test_stream_details_are_filled_from_whatever_the_data_api_gives(details, expected):
    msg = pb.StreamDetails()
    cv.fill_stream_details(msg, details)
    assert msg.IsInitialized()
    assert {f.name: v for f, v in msg.ListFields()} == expected


# --------------------------------------------------- every API, complete

PK = [("gid", INF_MIN), ("uid", INF_MIN)]


def row(gid, uid, *cells, delete=False):
    return cv.CODEC.encode_row([("gid", gid), ("uid", uid)], cells, delete_marker=delete)


def _requests():
    """(api, request message) in an order that works, covering every API served."""
    ignore = pb.Condition(row_existence=pb.IGNORE)
    meta = pb.TableMeta(table_name="t")
    meta.primary_key.add(name="gid", type=pb.INTEGER)
    meta.primary_key.add(name="uid", type=pb.STRING)
    meta.defined_column.add(name="i", type=pb.DCT_INTEGER)
    create = pb.CreateTableRequest(table_meta=meta, table_options=pb.TableOptions(
        time_to_live=-1, max_versions=1))
    create.reserved_throughput.capacity_unit.read = 0
    create.reserved_throughput.capacity_unit.write = 0
    batch_write = pb.BatchWriteRowRequest()
    rows = batch_write.tables.add(table_name="t")
    rows.rows.add(type=pb.PUT, row_change=row(2, "a", ("i", 2)), condition=ignore)
    rows.rows.add(type=pb.PUT, row_change=row(3, "a", ("i", 3)), condition=ignore)
    atomic = pb.BatchWriteRowRequest(is_atomic=True)
    rows = atomic.tables.add(table_name="t")
    rows.rows.add(type=pb.PUT, row_change=row(4, "a", ("i", 4)), condition=ignore)
    rows.rows.add(type=pb.UPDATE, row_change=row(4, "b", ("i", 5)), condition=ignore)
    batch_get = pb.BatchGetRowRequest()
    batch_get.tables.add(table_name="t", primary_key=[row(2, "a"), row(9, "z")], max_versions=1)
    index = pb.IndexMeta(name="by_i", primary_key=["i"], index_update_mode=pb.IUM_ASYNC_INDEX,
                         index_type=pb.IT_GLOBAL_INDEX)
    get_range = dict(table_name="t", direction=pb.FORWARD, max_versions=1,
                     inclusive_start_primary_key=cv.CODEC.encode_row(PK),
                     exclusive_end_primary_key=cv.CODEC.encode_row(
                         [("gid", INF_MAX), ("uid", INF_MAX)]))
    add_column = pb.AddDefinedColumnRequest(table_name="t")
    add_column.columns.add(name="j", type=pb.DCT_STRING)
    return [
        ("CreateTable", create),
        ("ListTable", pb.ListTableRequest()),
        ("DescribeTable", pb.DescribeTableRequest(table_name="t")),
        ("UpdateTable", pb.UpdateTableRequest(table_name="t", table_options=pb.TableOptions(
            deviation_cell_version_in_sec=3600))),
        ("PutRow", pb.PutRowRequest(table_name="t", row=row(1, "a", ("i", 1)), condition=ignore,
                                    return_content=pb.ReturnContent(return_type=pb.RT_PK))),
        ("GetRow", pb.GetRowRequest(table_name="t", primary_key=row(1, "a"), max_versions=1)),
        ("UpdateRow", pb.UpdateRowRequest(table_name="t", row_change=row(1, "a", ("i", 7)),
                                          condition=ignore)),
        ("DeleteRow", pb.DeleteRowRequest(table_name="t", primary_key=row(1, "a", delete=True),
                                          condition=ignore)),
        ("BatchWriteRow", batch_write),
        ("BatchWriteRow", atomic),
        ("BatchGetRow", batch_get),
        ("GetRange", pb.GetRangeRequest(**get_range)),
        ("GetRange", pb.GetRangeRequest(data_block_type_hint=pb.DBT_SIMPLE_ROW_MATRIX,
                                        **get_range)),
        ("CreateIndex", pb.CreateIndexRequest(main_table_name="t", index_meta=index,
                                              include_base_data=True)),
        ("DescribeTable", pb.DescribeTableRequest(table_name="t")),
        ("DropIndex", pb.DropIndexRequest(main_table_name="t", index_name="by_i")),
        ("AddDefinedColumn", add_column),
        ("DeleteDefinedColumn", pb.DeleteDefinedColumnRequest(table_name="t", columns=["j"])),
        ("ListSearchIndex", spb.ListSearchIndexRequest(table_name="t")),
        ("CreateSearchIndex", search_index_request()),
        ("ListSearchIndex", spb.ListSearchIndexRequest()),
        ("ListTimeseriesTable", tpb.ListTimeseriesTableRequest()),
        ("DescribeSearchIndex", spb.DescribeSearchIndexRequest(
            table_name="t", index_name="s", include_sync_stat=True)),
        ("UpdateSearchIndex", spb.UpdateSearchIndexRequest(table_name="t", index_name="s",
                                                           time_to_live=2 * 86400)),
        ("Search", search_request()),
        ("ComputeSplits", spb.ComputeSplitsRequest(
            table_name="t", search_index_splits_options=spb.SearchIndexSplitsOptions(
                index_name="s"))),
        ("ParallelScan", lambda got: spb.ParallelScanRequest(
            table_name="t", index_name="s", session_id=got["ComputeSplits"][-1].session_id,
            scan_query=spb.ScanQuery(
                query=spb.Query(type=spb.MATCH_ALL_QUERY), limit=10, alive_time=30,
                current_parallel_id=0, max_parallel=1).SerializeToString())),
        ("DeleteSearchIndex", spb.DeleteSearchIndexRequest(table_name="t", index_name="s")),
        ("StartLocalTransaction", pb.StartLocalTransactionRequest(
            table_name="t", key=cv.CODEC.encode_row([("gid", 5)]))),
        ("CommitTransaction", None),                   # the transaction just started
        ("StartLocalTransaction", pb.StartLocalTransactionRequest(
            table_name="t", key=cv.CODEC.encode_row([("gid", 6)]))),
        ("AbortTransaction", None),
        ("UpdateTable", pb.UpdateTableRequest(table_name="t", stream_spec=pb.StreamSpecification(
            enable_stream=True, expiration_time=24, columns_to_get=["i"]))),
        ("PutRow", pb.PutRowRequest(table_name="t", row=row(8, "a", ("i", 8)), condition=ignore)),
        ("ListStream", pb.ListStreamRequest(table_name="t")),
        ("DescribeStream", lambda got: pb.DescribeStreamRequest(
            stream_id=got["ListStream"][-1].streams[0].stream_id)),
        ("GetShardIterator", lambda got: pb.GetShardIteratorRequest(
            stream_id=got["DescribeStream"][-1].stream_id,
            shard_id=got["DescribeStream"][-1].shards[0].shard_id)),
        ("GetStreamRecord", lambda got: pb.GetStreamRecordRequest(
            shard_iterator=got["GetShardIterator"][-1].shard_iterator)),
        ("DeleteTable", pb.DeleteTableRequest(table_name="t")),
    ]


def search_index_request():
    schema = spb.IndexSchema()
    schema.field_schemas.add(field_name="i", field_type=spb.LONG, enable_sort_and_agg=True)
    schema.field_schemas.add(field_name="j", field_type=spb.TEXT, analyzer="split",
                             analyzer_parameter=spb.SplitAnalyzerParameter(
                                 delimiter=",").SerializeToString())
    return spb.CreateSearchIndexRequest(table_name="t", index_name="s", schema=schema)


def search_request():
    term = spb.TermQuery(field_name="i", term=cv.CODEC.encode_variant(2))
    query = spb.SearchQuery(query=spb.Query(type=spb.TERM_QUERY, query=term.SerializeToString()),
                            limit=10, get_total_count=True)
    return spb.SearchRequest(table_name="t", index_name="s", search_query=query.SerializeToString(),
                             columns_to_get=spb.ColumnsToGet(return_type=spb.RETURN_ALL))


SEARCH_APIS = ("ListSearchIndex", "CreateSearchIndex", "DescribeSearchIndex", "UpdateSearchIndex",
               "DeleteSearchIndex", "Search", "ComputeSplits", "ParallelScan")


def response_class(api):
    module = spb if api in SEARCH_APIS else tpb if api == "ListTimeseriesTable" else pb
    return getattr(module, api + "Response")


def test_every_api_answers_a_response_complete_by_the_services_proto():
    service = TablestoreService(OTSClient(":memory:"))
    answered = {}
    txn = None
    try:
        for api, req in _requests():
            if req is None:
                req = getattr(pb, api + "Request")(transaction_id=txn)
            elif callable(req):                # built from what was answered before
                req = req(answered)
            data = service.handle(api, req.SerializeToString())
            resp = response_class(api)()
            resp.MergeFromString(data)
            assert resp.IsInitialized(), (api, resp.FindInitializationErrors())
            answered.setdefault(api, []).append(resp)
            if api == "StartLocalTransaction":
                txn = resp.transaction_id
    finally:
        service.close()
    assert set(answered) == set(service.apis), "an API without a request in _requests()"
    for resp in answered["DescribeTable"] + answered["UpdateTable"][:1]:
        assert resp.HasField("stream_details") and not resp.stream_details.enable_stream
    enabled = answered["UpdateTable"][1].stream_details
    assert (enabled.enable_stream, enabled.expiration_time, list(enabled.columns_to_get)) == \
        (True, 24, ["i"])
    assert [r.action_type for r in answered["GetStreamRecord"][0].stream_records] == [pb.PUT_ROW]
    assert all(r.table_status == pb.ACTIVE for r in answered["DescribeTable"])
    assert all(r.creation_time > 10 ** 15 for r in answered["DescribeTable"])   # µs
    assert [r.is_ok for t in answered["BatchWriteRow"] for r in t.tables[0].rows] == [True] * 4
    assert [[(i.table_name, i.index_name) for i in r.indices] for r in answered["ListSearchIndex"]] \
        == [[], [("t", "s")]]
    described = answered["DescribeSearchIndex"][0]
    assert [f.field_name for f in described.schema.field_schemas] == ["i", "j"]
    # (the analyzer's parameters are not in the embedded describe yet: search.py's gap)
    assert described.schema.field_schemas[1].analyzer == "split"
    assert described.HasField("sync_stat")
    found = answered["Search"][0]
    assert len(found.rows) == len(found.search_hits) and found.is_all_succeed
    plain, matrix = answered["GetRange"]
    assert not plain.HasField("data_block_type")
    assert matrix.data_block_type == pb.DBT_SIMPLE_ROW_MATRIX


# --------------------------------------------------- atomic BatchWriteRow


@pytest.fixture
def service():
    client = OTSClient(":memory:")
    svc = TablestoreService(client)
    svc.handle("CreateTable", _requests()[0][1].SerializeToString())
    yield svc
    svc.close()


def atomic_batch(service, *changes, is_atomic=True):
    req = pb.BatchWriteRowRequest(is_atomic=is_atomic)
    table = req.tables.add(table_name="t")
    for kind, data in changes:
        table.rows.add(type=kind, row_change=data, condition=pb.Condition(row_existence=pb.IGNORE))
    resp = pb.BatchWriteRowResponse.FromString(service.handle("BatchWriteRow",
                                                              req.SerializeToString()))
    assert resp.IsInitialized()
    return [(r.is_ok, r.error.code if r.HasField("error") else None,
             r.error.message if r.HasField("error") else None) for r in resp.tables[0].rows]


def stored(service):
    return [r.primary_key for r in service.client.get_range(
        "t", "FORWARD", PK, [("gid", INF_MAX), ("uid", INF_MAX)], max_version=1)[2]]


def test_an_atomic_batch_of_two_partition_keys_is_refused_row_by_row_over_the_wire(service):
    got = atomic_batch(service, (pb.PUT, row(1, "a", ("i", 1))), (pb.PUT, row(1, "b", ("i", 1))),
                       (pb.PUT, row(2, "a", ("i", 1))))
    assert got == [(False, "OTSDataOutOfRange",
                    "Data out of scope of atomic. Atomic PartKey:1. Data PartKey:2")] * 3
    assert stored(service) == []


def test_the_same_rows_without_is_atomic_are_written(service):
    got = atomic_batch(service, (pb.PUT, row(1, "a", ("i", 1))), (pb.PUT, row(2, "a", ("i", 1))),
                       is_atomic=False)
    assert got == [(True, None, None)] * 2
    assert len(stored(service)) == 2


def test_a_row_the_wire_refuses_fails_the_whole_atomic_table(service):
    got = atomic_batch(service, (pb.PUT, row(1, "a", ("i", 1))), (pb.UPDATE, row(1, "b")),
                       (pb.PUT, row(1, "d", ("i", 1))))
    assert got == [(False, "OTSParameterInvalid",
                    "Invalid update row request: missing cells in request.")] * 3
    assert stored(service) == []
