"""Every error: Tablestore's status, code and exact message, and nothing changed."""
import math

import pytest

from regions.tablestore import (INF_MAX, INF_MIN, PK_AUTO_INCR, BatchGetRowRequest,
                                BatchWriteRowRequest, CapacityUnit, ComparatorType,
                                CompositeColumnCondition, Condition, LogicalOperator,
                                OTSClientError, OTSServiceError, PutRowItem, ReservedThroughput,
                                Row, SingleColumnCondition, TableInBatchGetRowItem,
                                TableInBatchWriteRowItem, TableMeta, TableOptions)
from tablestore_fake import open_client

P = (400, "OTSParameterInvalid")


@pytest.fixture
def client(tmp_path):
    c = open_client(tmp_path)
    c.create_table(TableMeta("t", [("PK1", "INTEGER"), ("PK2", "STRING")]))
    c.put_row("t", Row([("PK1", 1), ("PK2", "a")], [("a", 1)]))
    yield c
    c.close()


def snapshot(c):
    lo = [("PK1", INF_MIN), ("PK2", INF_MIN)]
    hi = [("PK1", INF_MAX), ("PK2", INF_MAX)]
    rows = c.get_range("t", "FORWARD", lo, hi, max_version=100)[2]
    return c.list_table(), [(r.primary_key, r.attribute_columns) for r in rows]


def expect(c, call, status, code, message):
    before = snapshot(c)
    with pytest.raises(OTSServiceError) as e:
        call()
    got = (e.value.get_http_status(), e.value.get_error_code(), e.value.get_error_message())
    assert got == (status, code, message)
    assert snapshot(c) == before


PK = [("PK1", 1), ("PK2", "a")]


def _batch_get(table, keys=(PK,)):
    request = BatchGetRowRequest()
    request.add(TableInBatchGetRowItem(table, list(keys), max_version=1))
    return request


def _bget_columns(columns):
    request = BatchGetRowRequest()
    request.add(TableInBatchGetRowItem("t", [PK], columns, max_version=1))
    return request


def _batch_put(table, keys=(PK,)):
    request = BatchWriteRowRequest()
    request.add(TableInBatchWriteRowItem(table, [
        PutRowItem(Row(key, [("a", 1)]), Condition("IGNORE")) for key in keys]))
    return request


def cases():
    long = "x" * 1025
    meta = lambda schema, name="n": TableMeta(name, schema)  # noqa: E731
    return [
        ("missing table", lambda c: c.get_row("zz", PK), 404, "OTSObjectNotExist",
         "Requested table does not exist."),
        ("delete missing table", lambda c: c.delete_table("zz"), 404, "OTSObjectNotExist",
         "Requested table does not exist."),
        ("table exists", lambda c: c.create_table(meta([("k", "STRING")], "t")), 409,
         "OTSObjectAlreadyExist", "Requested table already exists."),
        ("bad table name", lambda c: c.create_table(meta([("k", "STRING")], "1x")),
         *P, "Invalid table name: '1x'."),
        ("bad pk name", lambda c: c.create_table(meta([("k-1", "STRING")])),
         *P, "Invalid column name: 'k-1'."),
        ("boolean pk", lambda c: c.create_table(meta([("k", "BOOLEAN")])),
         *P, "BOOLEAN is an invalid type for the primary key."),
        ("five pks", lambda c: c.create_table(meta([("k%d" % i, "STRING") for i in range(5)])),
         *P, "The number of primary key columns must be in range: [1, 4]."),
        ("dup pk", lambda c: c.create_table(meta([("k", "STRING"), ("k", "INTEGER")])),
         *P, "Duplicated primary key name: 'k'."),
        ("auto incr string", lambda c: c.create_table(meta([("a", "STRING"),
                                                            ("k", "STRING", PK_AUTO_INCR)])),
         *P, "AUTO_INCREMENT primary key must be integer."),
        ("auto incr first", lambda c: c.create_table(meta([("k", "INTEGER", PK_AUTO_INCR)])),
         *P, "First primary key can't be auto increment, table: n."),
        ("ttl 0", lambda c: c.update_table("t", TableOptions(time_to_live=0)),
         *P, "TimeToLive cannot be 0 or less than -1."),
        ("max versions 0", lambda c: c.update_table("t", TableOptions(max_version=0)),
         *P, "The maximum versions cannot be less than or equal to 0."),
        ("pk name", lambda c: c.get_row("t", [("PK2", 1), ("PK1", "a")]), 400, "OTSInvalidPK",
         "Validate PK name fail. Input: PK2, Meta: PK1."),
        ("pk size", lambda c: c.get_row("t", [("PK1", 1)]), 400, "OTSInvalidPK",
         "Validate PK size fail. Input: 1, Meta: 2."),
        # the Java SDK's DataOperationTest and ParameterLegalityTest: the service's texts
        ("pk type", lambda c: c.put_row("t", Row([("PK1", "1"), ("PK2", "a")], [("a", 1)])),
         400, "OTSInvalidPK", "Validate PK type fail. Input: VT_STRING, Meta: VT_INTEGER."),
        ("pk type binary", lambda c: c.get_row("t", [("PK1", bytearray(b"1")), ("PK2", "a")]),
         400, "OTSInvalidPK", "Validate PK type fail. Input: VT_BLOB, Meta: VT_INTEGER."),
        ("pk too long", lambda c: c.get_row("t", [("PK1", 1), ("PK2", long)]), *P,
         "The length of primary key column: 'PK2' exceeds the MaxLength:1024 with "
         "CurrentLength:1025."),
        # RestrictedItemTest (19, 21): a key too long fails a whole batch, read or write
        ("pk too long in batch get", lambda c: c.batch_get_row(
            _batch_get("t", [PK, [("PK1", 1), ("PK2", long)]])), *P,
         "The length of primary key column: 'PK2' exceeds the MaxLength:1024 with "
         "CurrentLength:1025."),
        ("pk too long in batch write", lambda c: c.batch_write_row(
            _batch_put("t", [PK, [("PK1", 1), ("PK2", long)]])), *P,
         "The length of primary key column: 'PK2' exceeds the MaxLength:1024 with "
         "CurrentLength:1025."),
        # RestrictedItemTest 16: a key of 5 columns is pk_count, before the table is looked
        # up, and fails a whole batch
        ("five key columns", lambda c: c.get_row("t", PK + [("k%d" % i, 1) for i in range(3)]),
         *P, "The number of primary key columns must be in range: [1, 4]."),
        ("five key columns, missing table", lambda c: c.put_row("zz", Row(
            [("k%d" % i, 1) for i in range(5)], [("a", 1)])), *P,
         "The number of primary key columns must be in range: [1, 4]."),
        ("five key columns in a batch", lambda c: c.batch_write_row(_batch_put("t", [
            PK + [("k%d" % i, 1) for i in range(3)]])), *P,
         "The number of primary key columns must be in range: [1, 4]."),
        ("inf in row", lambda c: c.get_row("t", [("PK1", INF_MIN), ("PK2", "a")]), *P,
         "VT_INF_MIN is an invalid type for the primary key."),
        ("inf max in row", lambda c: c.delete_row("t", Row([("PK1", 1), ("PK2", INF_MAX)]), None),
         *P, "VT_INF_MAX is an invalid type for the primary key."),
        ("auto incr read", lambda c: c.get_row("t", [("PK1", PK_AUTO_INCR), ("PK2", "a")]),
         *P, "PKAutoIncr can't be used for read operations."),
        # the Java SDK's ParameterLegalityTest: an invalid table name is refused as such
        # by every API, before the table is looked up; a batch fails whole
        ("invalid table describe", lambda c: c.describe_table("0"), *P,
         "Invalid table name: '0'."),
        ("invalid table get", lambda c: c.get_row("T#", PK), *P, "Invalid table name: 'T#'."),
        ("invalid table batch get", lambda c: c.batch_get_row(_batch_get("3t")), *P,
         "Invalid table name: '3t'."),
        ("invalid table batch write", lambda c: c.batch_write_row(_batch_put("-")), *P,
         "Invalid table name: '-'."),
        ("bad column", lambda c: c.put_row("t", Row(PK, [("a\tb", 1)])), *P,
         "Invalid column name: 'a\tb'."),
        # the Java SDK's ParameterLegalityTest.testInvalidColumnName: '#' may not lead
        ("column starting with #", lambda c: c.put_row("t", Row(PK, [("#abc", 1)])), *P,
         "Invalid column name: '#abc'."),
        ("columns to get", lambda c: c.get_range("t", "FORWARD", PK, [("PK1", 9), ("PK2", "a")],
                                                 ["#"]), *P, "Invalid column name: '#'."),
        # RestrictedItemTest 12: a column's name is checked before the key against the
        # schema, and an invalid one fails a whole batch
        ("column name before the key", lambda c: c.update_row("t", Row([("pk", 1)], {
            "put": [("a" * 256, 1)]}), None), *P, "Invalid column name: '%s'." % ("a" * 256)),
        ("column to get before the key", lambda c: c.get_row("t", [("pk", 1)], ["a" * 256]),
         *P, "Invalid column name: '%s'." % ("a" * 256)),
        ("column name in a batch write", lambda c: c.batch_write_row(_bwrite([PutRowItem(Row(
            [("pk", 1)], [("#a", 1)]), Condition("IGNORE"))])), *P, "Invalid column name: '#a'."),
        ("column to get in a batch get", lambda c: c.batch_get_row(_bget_columns(["#"])), *P,
         "Invalid column name: '#'."),
        ("column of a filter", lambda c: c.get_row("t", PK, column_filter=SingleColumnCondition(
            "#a", 1, ComparatorType.EQUAL)), *P, "Invalid column name: '#a'."),
        # ParameterLegalityTest.testInvalidPrimaryKey: in a BatchGetRow, the whole batch
        ("inf in a batch get", lambda c: c.batch_get_row(_batch_get("t", [
            [("PK1", INF_MIN), ("PK2", "a")]])), *P,
         "VT_INF_MIN is an invalid type for the primary key."),
        ("attr is pk", lambda c: c.put_row("t", Row(PK, [("PK1", 1)])), *P,
         "Duplicated attribute column name with primary key column: PK1."),
        ("nan", lambda c: c.put_row("t", Row(PK, [("a", math.nan)])), *P,
         "Invalid double value: NaN or Infinity. Cell:a."),
        ("string too big", lambda c: c.put_row("t", Row(PK, [("a", "x" * (2 * 1048576 + 1))])),
         *P, "The length of attribute column: 'a' exceeds the MaxLength:2097152 with "
         "CurrentLength:2097153."),
        ("old ts", lambda c: c.put_row("t", Row(PK, [("a", 1, 1000)])), *P,
         "Invalid timestamp. Cell:a."),
        ("delete with value", lambda c: c.update_row("t", Row(PK, {"delete": [("a", 1, 5)]}),
                                                     None), *P,
         "Column value cannot be given when type is DELETE_ONE_VERSION,DELETE_ALL_VERSION."),
        ("delete no ts", lambda c: c.update_row("t", Row(PK, {"delete": ["a"]}), None), *P,
         "Timestamp must be given when type is DELETE_ONE_VERSION."),
        ("delete all ts", lambda c: c.update_row("t", Row(PK, {"delete_all": [("a", None, 5)]}),
                                                 None), *P,
         "Timestamp cannot be given when type is DELETE_ALL_VERSION."),
        ("empty update", lambda c: c.update_row("t", Row(PK, {}), None), *P,
         "Invalid update row request: missing cells in request."),
        ("condition fails", lambda c: c.put_row("t", Row(PK, [("a", 2)]),
                                                Condition("EXPECT_NOT_EXIST")),
         403, "OTSConditionCheckFail", "Condition check failed."),
        # per operation, as the Java SDK's ParameterLegalityTest reads them
        ("no version", lambda c: c.get_row("t", PK, max_version=None), *P,
         "No version condition is specified."),
        ("no version in a range", lambda c: c.get_range(
            "t", "FORWARD", PK, [("PK1", 9), ("PK2", "a")], max_version=None), *P,
         "No version condition is specified."),
        ("no version in a batch get", lambda c: c.batch_get_row(_bget(1, max_version=None)), *P,
         "No version condition is specified while querying row."),
        # RestrictedItemTest 12: an invalid column name to get is found first
        ("no version and a bad column in a batch get", lambda c: c.batch_get_row(
            _bget(1, max_version=None, columns=["#a"])), *P, "Invalid column name: '#a'."),
        ("time range half", lambda c: c.get_row("t", PK, time_range=(1, None)), *P,
         "Start and end time must be given at the same time."),
        ("specific time with max versions", lambda c: c.get_range(
            "t", "FORWARD", PK, [("PK1", 9), ("PK2", "a")], max_version=1, time_range=5), *P,
         "Specific tiemstamp and max versions cannot be given at the same time."),
        ("limit 0", lambda c: c.get_range("t", "FORWARD", PK, [("PK1", 9), ("PK2", "a")],
                                          limit=0), *P, "The limit must be greater than 0."),
        ("forward order", lambda c: c.get_range("t", "FORWARD", PK, PK), *P,
         "Begin key must less than end key in FORWARD"),
        ("backward order", lambda c: c.get_range("t", "BACKWARD", PK,
                                                 [("PK1", 9), ("PK2", "a")]), *P,
         "Begin key must more than end key in BACKWARD"),
        ("not with 2", lambda c: c.get_row("t", PK, column_filter=_composite(LogicalOperator.NOT, 2)),
         *P, "Invalid NOT operator: the number of sub-filters must be 1."),
        ("and with 1", lambda c: c.get_row("t", PK, column_filter=_composite(LogicalOperator.AND, 1)),
         *P, "Invalid AND/OR operator: the number of sub-filters must be more than 1."),
        ("batch get empty", lambda c: c.batch_get_row(BatchGetRowRequest()), *P,
         "No row specified in the request of BatchGetRow."),
        ("batch get 101", lambda c: c.batch_get_row(_bget(101)), *P,
         "Rows count exceeds the upper limit: 100."),
        ("batch write empty", lambda c: c.batch_write_row(BatchWriteRowRequest()), *P,
         "No row is specified in BatchWriteRow."),
        ("batch write no op", lambda c: c.batch_write_row(_bwrite([])), *P,
         "No operation is specified for table: 't'."),
        ("batch write 201", lambda c: c.batch_write_row(_bwrite(_puts(201))), *P,
         "Rows count exceeds the upper limit: 200."),
        # size per row: PK1 3+8, PK2 3+1, a 1+1500000 = 1500016 bytes; x3 = 4500048
        ("batch write 4MB", lambda c: c.batch_write_row(_bwrite(_puts(3, "x" * 1500000))), *P,
         "The total data size of BatchWriteRow request exceeds the limit, limit size: 4194304, "
         "data size: 4500048."),
        # RestrictedItemTest 41, 43: too many columns written or asked for fail a whole batch
        ("batch write 1025 columns", lambda c: c.batch_write_row(_bwrite([PutRowItem(Row(
            PK, [("c%d" % i, i) for i in range(1025)]), Condition("IGNORE"))])), *P,
         "The number of attribute columns exceeds the limit, limit count: 1024, column count: "
         "1025."),
        ("batch get 1025 columns", lambda c: c.batch_get_row(_bget_columns(
            ["c%d" % i for i in range(1025)])), *P,
         "The number of columns from the request exceeds the limit, limit count: 1024, column "
         "count: 1025."),
        # RestrictedItemTest 46: a timestamp (ms) in [0, INT64_MAX/1000)
        ("timestamp too big", lambda c: c.put_row("t", Row(PK, [("a", 1, (2 ** 63 - 1) // 1000)])),
         *P, "Timestamp must be in range [0, INT64_MAX/1000)."),
        ("timestamp negative", lambda c: c.update_row("t", Row(PK, {"put": [("a", 1, -1)]}), None),
         *P, "Timestamp must be in range [0, INT64_MAX/1000)."),
        ("timestamp in a batch", lambda c: c.batch_write_row(_bwrite([PutRowItem(Row(
            PK, [("a", 1, (2 ** 63 - 1) // 1000)]), Condition("IGNORE"))])), *P,
         "Timestamp must be in range [0, INT64_MAX/1000)."),
        ("batch repeated expectation", lambda c: c.batch_write_row(_bwrite(
            _puts(1) + _puts(1, cond=Condition("EXPECT_EXIST")))), *P,
         "Repeated rows do not support row exist expectation check in BatchModify."),
    ]


def _composite(op, n):
    c = CompositeColumnCondition(op)
    for _ in range(n):
        c.add_sub_condition(SingleColumnCondition("a", 1, ComparatorType.EQUAL))
    return c


def _bget(n, max_version=1, columns=None):
    r = BatchGetRowRequest()
    r.add(TableInBatchGetRowItem("t", [[("PK1", i), ("PK2", "a")] for i in range(n)], columns,
                                 max_version=max_version))
    return r


def _puts(n, value=1, cond=None):
    return [PutRowItem(Row([("PK1", 100 + i), ("PK2", "b")], [("a", value)]), cond)
            for i in range(n)]


def _bwrite(items):
    r = BatchWriteRowRequest()
    r.add(TableInBatchWriteRowItem("t", items))
    return r


@pytest.mark.parametrize("name,call,status,code,message", cases(), ids=[c[0] for c in cases()])
def test_service_error_code_message_and_nothing_changed(client, name, call, status, code,
                                                        message):
    expect(client, lambda: call(client), status, code, message)


@pytest.mark.parametrize("call,message", [
    (lambda c: c.put_row("t", Row(PK, [("a", object())])), "Unsupported column type: "),
    (lambda c: c.get_row("t", [("PK1", 1.5), ("PK2", "a")]), "Unsupported primary key type: "),
    (lambda c: c.put_row("t", Row(PK, [("a", 1)]), "IGNORE"),
     "condition should be an instance of Condition, not str"),
    (lambda c: c.get_range("t", "SIDEWAYS", PK, PK), "direction should be one of"),
    (lambda c: list(c.xget_range("t", "FORWARD", PK, PK, CapacityUnit(), count=0)),
     "the value of count must be larger than 0"),
    (lambda c: c.put_row("t", Row(PK, [("a", 1 << 63)])), "9223372036854775808 exceeds the range of int64"),
    (lambda c: c.update_row("t", Row(PK, [("a", 1)]), None),
     "the attribute columns of UpdateRow is not dict"),
    (lambda c: c.create_table(TableMeta("n", [("k", "INTEGER")]), split_points=[3, 2]),
     "The split-point list isn't strictly increasing."),
    (lambda c: c.create_table(TableMeta("n", [("k", "INTEGER")]), split_points=["a"]),
     "The split-point's type doesn't match the partition key's type. Expected INTEGER, "
     "but got str."),
    (lambda c: c.create_table(TableMeta("n", [("k", "INTEGER")]), split_points=[INF_MAX]),
     "The split-point can't be set as an INF value."),
    (lambda c: c.create_table(TableMeta("n", [("k", "INTEGER")]), TableOptions(),
                              ReservedThroughput(CapacityUnit(None, 0))),
     "both of read and write of CapacityUnit are required"),
    (lambda c: c.create_table(TableMeta("n", [("k", "DOUBLE")])),
     "primary_key_type should be one of [BINARY, BOOLEAN, INTEGER, STRING], not DOUBLE"),
])
def test_client_side_errors_as_the_sdk_and_nothing_changed(client, call, message):
    before = snapshot(client)
    with pytest.raises(OTSClientError) as e:
        call(client)
    assert str(e.value).startswith(message)
    assert snapshot(client) == before


def test_sdk_constructor_checks():
    with pytest.raises(OTSClientError):
        Condition("SOMETIMES")
    with pytest.raises(OTSClientError):
        SingleColumnCondition("a", 1, ComparatorType.EXIST)
    with pytest.raises(OTSClientError):
        SingleColumnCondition("a", 1, ComparatorType.EQUAL, pass_if_missing="yes")
    with pytest.raises(OTSClientError):
        CompositeColumnCondition(7)


def test_error_str_and_accessors():
    e = OTSServiceError(403, "OTSConditionCheckFail", "Condition check failed.")
    assert str(e) == ("ErrorCode: OTSConditionCheckFail, ErrorMessage: Condition check failed., "
                      "RequestID: ")
    assert OTSClientError("m").get_http_status() is None


@pytest.mark.parametrize("kind", ["put", "update"])
@pytest.mark.parametrize("binary", [False, True])
def test_a_batch_write_counts_8_bytes_for_each_timestamp_given(tmp_path, kind, binary):
    """The Java SDK's RestrictedItemTest 48: three rows of a 98-character key
    "pk", a 50-character column name and a value, each cell with its
    timestamp: 2 + 98 + 50 + value + 8 a row.  1,397,945 + 2 x 1,397,943 is
    4,194,305 bytes, refused; a byte less, 4,194,304, is taken.  A value
    over 512 K characters is not plain: the Python path sizes it."""
    import time
    from regions.tablestore import UpdateRowItem
    c = open_client(tmp_path)
    c.create_table(TableMeta("t48", [("pk", "STRING")]))
    now = int(time.time() * 1000)

    def batch(first):
        r = BatchWriteRowRequest()
        items = []
        for i, n in enumerate([first, 1397943, 1397943]):
            value = bytearray(b"a" * n) if binary else "a" * n
            key = [("pk", "v" * 96 + "%02d" % i)]
            items.append(PutRowItem(Row(key, [("k" * 50, value, now)]), Condition("IGNORE"))
                         if kind == "put" else
                         UpdateRowItem(Row(key, {"put": [("k" * 50, value, now)]}),
                                       Condition("IGNORE")))
        r.add(TableInBatchWriteRowItem("t48", items))
        return r
    with pytest.raises(OTSServiceError) as e:
        c.batch_write_row(batch(1397945))
    assert (e.value.get_http_status(), e.value.get_error_code(), e.value.get_error_message()) == (
        *P, "The total data size of BatchWriteRow request exceeds the limit, limit size: "
        "4194304, data size: 4194305.")
    assert c.batch_write_row(batch(1397944)).is_all_succeed()
    c.close()


def test_a_value_too_long_fails_the_whole_batch():
    """As the service does (the Java SDK's TableStoreWriter resends such a
    batch row by row): nothing of the batch is written."""
    from regions.tablestore import (BatchWriteRowRequest, CapacityUnit, OTSClient,
                                    OTSServiceError, PutRowItem, ReservedThroughput,
                                    TableInBatchWriteRowItem, TableMeta, TableOptions)
    with OTSClient(None) as c:
        c.create_table(TableMeta("t", [("k", "INTEGER")]), TableOptions(),
                       ReservedThroughput(CapacityUnit(0, 0)))
        request = BatchWriteRowRequest()
        request.add(TableInBatchWriteRowItem("t", [
            PutRowItem(Row([("k", 1)], [("a", "ok")]), None),
            PutRowItem(Row([("k", 2)], [("longattr", "x" * (2 * 1048576 + 1))]), None)]))
        try:
            c.batch_write_row(request)
            raise AssertionError("not refused")
        except OTSServiceError as e:
            assert (e.code, e.message) == (
                "OTSParameterInvalid", "The length of attribute column: 'longattr' exceeds the "
                "MaxLength:2097152 with CurrentLength:2097153.")
        assert c.get_row("t", [("k", 1)])[1] is None


@pytest.mark.parametrize("name", ["\nabc", "abc\r", "\n", "a\rb", "a#b", "$", "公司"])
def test_attribute_names_the_java_sdk_writes_are_valid(client, name):
    """ParameterLegalityTest.testValidColumnName: '\n', '\r', punctuation
    (a '#' not leading) and CJK in an attribute column's name."""
    client.put_row("t", Row(PK, [(name, 5)]))
    assert [(n, v) for n, v, _ in client.get_row("t", PK, [name])[1].attribute_columns] == [
        (name, 5)]
