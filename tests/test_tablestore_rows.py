"""Row API semantics of regions.tablestore.OTSClient (reference section 4)."""
import pytest

from regions.tablestore import (INF_MAX, INF_MIN, PK_AUTO_INCR, BatchGetRowRequest,
                                BatchWriteRowRequest, CapacityUnit, ComparatorType,
                                CompositeColumnCondition, Condition, DeleteRowItem, Direction,
                                LogicalOperator, OTSClient, OTSServiceError, PutRowItem, ReturnType,
                                Row, RowExistenceExpectation, SingleColumnCondition,
                                TableInBatchGetRowItem,
                                TableInBatchWriteRowItem, TableMeta, TableOptions, UpdateRowItem)
from regions.tablestore import pkcodec
from tablestore_fake import open_client

import time

BASE = int(time.time() * 1000) - 3_600_000


def T(i):
    """A valid version timestamp (within the default max time deviation)."""
    return BASE + i


@pytest.fixture
def client(tmp_path):
    c = open_client(tmp_path)
    c.create_table(TableMeta("t", [("PK1", "INTEGER"), ("PK2", "STRING")]),
                   TableOptions(max_version=3))
    yield c
    c.close()


def pk(a, b="x"):
    return [("PK1", a), ("PK2", b)]


def attrs(row):
    return [(n, v) for n, v, _ in row.attribute_columns]


def test_put_then_get_returns_pk_in_schema_order_and_attributes_sorted(client):
    client.put_row("t", Row(pk(1), [("b", 2), ("a", "s"), ("c", bytearray(b"\x00")),
                                    ("d", 1.5), ("e", True)]))
    consumed, row, token = client.get_row("t", pk(1))
    assert row.primary_key == pk(1) and token == b""
    assert attrs(row) == [("a", "s"), ("b", 2), ("c", bytearray(b"\x00")), ("d", 1.5),
                          ("e", True)]
    assert isinstance(row.attribute_columns[2][1], bytearray)
    assert consumed == CapacityUnit(1, 0)


def test_bytes_values_are_strings_as_in_the_sdk(client):
    client.put_row("t", Row(pk(1), [("a", b"raw")]))
    assert attrs(client.get_row("t", pk(1))[1]) == [("a", "raw")]


def test_put_row_replaces_the_whole_row(client):
    client.put_row("t", Row(pk(1), [("a", 1), ("b", 2)]))
    client.update_row("t", Row(pk(1), {"put": [("c", 3)]}), None)
    client.put_row("t", Row(pk(1), [("z", 9)]))
    assert attrs(client.get_row("t", pk(1))[1]) == [("z", 9)]


def test_versions_newest_first_with_max_version_and_time_range(client):
    client.put_row("t", Row(pk(1), [("a", 1, T(1000)), ("a", 2, T(2000))]))
    client.update_row("t", Row(pk(1), {"put": [("a", 3, T(3000))]}), None)
    _, row, _ = client.get_row("t", pk(1), max_version=3)
    assert row.attribute_columns == [("a", 3, T(3000)), ("a", 2, T(2000)), ("a", 1, T(1000))]
    _, row, _ = client.get_row("t", pk(1), max_version=None, time_range=(T(1000), T(3000)))
    assert row.attribute_columns == [("a", 2, T(2000)), ("a", 1, T(1000))]
    _, row, _ = client.get_row("t", pk(1), max_version=None, time_range=T(2000))
    assert row.attribute_columns == [("a", 2, T(2000))]
    assert client.get_row("t", pk(1))[1].attribute_columns == [("a", 3, T(3000))]


def test_table_max_versions_bounds_what_reads_see(client):
    client.put_row("t", Row(pk(1), [("a", i, T(1000 * i)) for i in range(1, 6)]))
    _, row, _ = client.get_row("t", pk(1), max_version=10)
    assert [v for _, v, _ in row.attribute_columns] == [5, 4, 3]


def test_update_delete_one_version_and_delete_all(client):
    client.put_row("t", Row(pk(1), [("a", 1, T(1000)), ("a", 2, T(2000)), ("b", 5)]))
    client.update_row("t", Row(pk(1), {"delete": [("a", None, T(2000))]}), None)
    assert client.get_row("t", pk(1), max_version=3)[1].attribute_columns[0] == ("a", 1, T(1000))
    client.update_row("t", Row(pk(1), {"DELETE_ALL": ["a"]}), None)
    assert attrs(client.get_row("t", pk(1))[1]) == [("b", 5)]


def test_a_tables_memtables_file_its_rows_by_row_key_at_create_and_after_reopen(tmp_path):
    """Every region store of a table indexes its memtable by row key
    (_rowcodec.ROW_KEY_PREFIX): a row that is one head is read from its
    slot, without sorting the new keys; an updated row (a head and deltas)
    by the sorted keys; the reads answer as before, after a reopen too."""
    from regions.tablestore import _rowcodec

    def store(c):
        return c._server._tables["t"].layout[1][0].db
    c = open_client(tmp_path)
    try:
        c.create_table(TableMeta("t", [("PK1", "INTEGER"), ("PK2", "STRING")]))
        assert {r.db._mem.prefix_extractor for r in c._server._tables["t"].layout[1]} == \
            {_rowcodec.ROW_KEY_PREFIX}
        for i in range(30):
            c.put_row("t", Row(pk(i, "a\x00b"), [("a", i), ("b", "x")]))
        assert attrs(c.get_row("t", pk(4, "a\x00b"))[1]) == [("a", 4), ("b", "x")]
        assert c.get_row("t", pk(4, "a"))[1] is None
        assert store(c)._mem._pending                  # no row read sorted them
        for i in range(0, 30, 3):
            c.update_row("t", Row(pk(i, "a\x00b"), {"put": [("c", i)], "delete_all": ["b"]}), None)
        assert attrs(c.get_row("t", pk(3, "a\x00b"))[1]) == [("a", 3), ("c", 3)]
        assert not store(c)._mem._pending              # a head and deltas: sorted keys
    finally:
        c.close()
    c = open_client(tmp_path)
    try:
        assert store(c)._mem.prefix_extractor is _rowcodec.ROW_KEY_PREFIX
        c.update_row("t", Row(pk(4, "a\x00b"), {"put": [("c", 40)]}), None)
        assert attrs(c.get_row("t", pk(4, "a\x00b"))[1]) == [("a", 4), ("b", "x"), ("c", 40)]
    finally:
        c.close()


def test_update_of_only_deletes_on_a_missing_row_creates_nothing(client):
    client.update_row("t", Row(pk(7), {"delete_all": ["a"]}), None)
    assert client.get_row("t", pk(7))[1] is None


def test_increment_counts_a_missing_column_as_zero(client):
    client.update_row("t", Row(pk(1), {"increment": [("n", 5)]}), None)
    client.update_row("t", Row(pk(1), {"increment": [("n", -2)]}), None)
    assert attrs(client.get_row("t", pk(1))[1]) == [("n", 3)]


def test_delete_row_and_deleting_a_missing_row_succeeds(client):
    client.put_row("t", Row(pk(1), [("a", 1)]))
    assert client.delete_row("t", Row(pk(1)), None)[0] == CapacityUnit(0, 1)
    assert client.get_row("t", pk(1))[1] is None
    assert client.delete_row("t", pk(2))[0] == CapacityUnit(0, 1)
    assert client.delete_row("t", primary_key=pk(2))[0] == CapacityUnit(0, 1)


@pytest.mark.parametrize("expect,exists,ok", [
    ("IGNORE", False, True), ("IGNORE", True, True),
    ("EXPECT_EXIST", True, True), ("EXPECT_EXIST", False, False),
    ("EXPECT_NOT_EXIST", False, True), ("EXPECT_NOT_EXIST", True, False)])
def test_row_existence_expectations(client, expect, exists, ok):
    if exists:
        client.put_row("t", Row(pk(1), [("a", 1)]))
    before = client.get_row("t", pk(1))[1]
    call = lambda: client.put_row("t", Row(pk(1), [("a", 2)]), Condition(expect))  # noqa: E731
    if ok:
        consumed, _ = call()
        assert consumed == CapacityUnit(0 if expect == "IGNORE" else 1, 1)
        assert attrs(client.get_row("t", pk(1))[1]) == [("a", 2)]
    else:
        with pytest.raises(OTSServiceError) as e:
            call()
        assert (e.value.get_http_status(), e.value.get_error_code(),
                e.value.get_error_message()) == (403, "OTSConditionCheckFail",
                                                 "Condition check failed.")
        assert client.get_row("t", pk(1))[1] == before


@pytest.mark.parametrize("cmp,value,ok", [
    (ComparatorType.EQUAL, 5, True), (ComparatorType.EQUAL, 4, False),
    (ComparatorType.NOT_EQUAL, 4, True), (ComparatorType.GREATER_THAN, 4, True),
    (ComparatorType.GREATER_THAN, 5, False), (ComparatorType.GREATER_EQUAL, 5, True),
    (ComparatorType.LESS_THAN, 6, True), (ComparatorType.LESS_EQUAL, 4, False),
    (ComparatorType.EQUAL, "5", False), (ComparatorType.NOT_EQUAL, "5", True),
    (ComparatorType.EQUAL, 5.0, True)])
def test_single_column_condition_comparators(client, cmp, value, ok):
    client.put_row("t", Row(pk(1), [("a", 5)]))
    cond = Condition("IGNORE", SingleColumnCondition("a", value, cmp))
    if ok:
        assert client.update_row("t", Row(pk(1), {"put": [("b", 1)]}), cond)[0].read == 1
    else:
        with pytest.raises(OTSServiceError):
            client.update_row("t", Row(pk(1), {"put": [("b", 1)]}), cond)
        assert attrs(client.get_row("t", pk(1))[1]) == [("a", 5)]


def test_pass_if_missing_and_latest_version_only(client):
    client.put_row("t", Row(pk(1), [("a", 1, T(1000)), ("a", 2, T(2000))]))
    missing_ok = SingleColumnCondition("zz", 1, ComparatorType.EQUAL)
    missing_fail = SingleColumnCondition("zz", 1, ComparatorType.EQUAL, pass_if_missing=False)
    old = SingleColumnCondition("a", 1, ComparatorType.EQUAL)
    any_version = SingleColumnCondition("a", 1, ComparatorType.EQUAL, latest_version_only=False)
    assert client.get_row("t", pk(1), column_filter=missing_ok)[1] is not None
    assert client.get_row("t", pk(1), column_filter=missing_fail)[1] is None
    assert client.get_row("t", pk(1), column_filter=old, max_version=2)[1] is None
    assert client.get_row("t", pk(1), column_filter=any_version, max_version=2)[1] is not None


def test_composite_conditions_not_and_or(client):
    client.put_row("t", Row(pk(1), [("a", 1), ("b", "x")]))
    a1 = SingleColumnCondition("a", 1, ComparatorType.EQUAL)
    b_y = SingleColumnCondition("b", "y", ComparatorType.EQUAL)
    both = CompositeColumnCondition(LogicalOperator.AND)
    both.add_sub_condition(a1)
    both.add_sub_condition(b_y)
    either = CompositeColumnCondition(LogicalOperator.OR)
    either.add_sub_condition(a1)
    either.add_sub_condition(b_y)
    neither = CompositeColumnCondition(LogicalOperator.NOT)
    neither.add_sub_condition(both)
    assert client.get_row("t", pk(1), column_filter=both)[1] is None
    assert client.get_row("t", pk(1), column_filter=either)[1] is not None
    assert client.get_row("t", pk(1), column_filter=neither)[1] is not None


def test_columns_to_get_returns_the_full_primary_key_as_the_service_does(client):
    client.put_row("t", Row(pk(1), [("Attr1", 1), ("Attr2", 2)]))
    client.put_row("t", Row(pk(2), [("Attr2", 2)]))
    assert client.get_row("t", pk(1), ["blah"])[1] is None
    row = client.get_row("t", pk(1), ["Attr1"])[1]
    assert row.primary_key == pk(1) and attrs(row) == [("Attr1", 1)]
    lo, hi = pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX)
    _, _, rows, _ = client.get_range("t", Direction.FORWARD, lo, hi, ["Attr1"])
    assert [(r.primary_key, attrs(r)) for r in rows] == [(pk(1), [("Attr1", 1)])]
    _, _, rows, _ = client.get_range("t", Direction.FORWARD, lo, hi, ["Attr1", "PK1"])
    assert [(r.primary_key, attrs(r)) for r in rows] == [
        (pk(1), [("Attr1", 1)]), (pk(2), [])]


def test_pk_projection_requested_is_the_2017_guides_projection(tmp_path):
    """The guide's GetRange examples 5 and 6: key columns only when named."""
    c = OTSClient(str(tmp_path), pk_projection="requested")
    try:
        c.create_table(TableMeta("t", [("PK1", "INTEGER"), ("PK2", "STRING")]), TableOptions())
        c.put_row("t", Row(pk(1), [("Attr1", 1), ("Attr2", 2)]))
        c.put_row("t", Row(pk(2), [("Attr2", 2)]))
        assert c.get_row("t", pk(1), ["blah"])[1] is None
        row = c.get_row("t", pk(1), ["Attr1"])[1]
        assert row.primary_key == [] and attrs(row) == [("Attr1", 1)]
        assert c.get_row("t", pk(1))[1].primary_key == pk(1)
        lo, hi = pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX)
        _, _, rows, _ = c.get_range("t", Direction.FORWARD, lo, hi, ["Attr1"])
        assert [(r.primary_key, attrs(r)) for r in rows] == [([], [("Attr1", 1)])]
        _, _, rows, _ = c.get_range("t", Direction.FORWARD, lo, hi, ["Attr1", "PK1"])
        assert [(r.primary_key, attrs(r)) for r in rows] == [
            ([("PK1", 1)], [("Attr1", 1)]), ([("PK1", 2)], [])]
    finally:
        c.close()
    with pytest.raises(ValueError, match="pk_projection"):
        OTSClient(str(tmp_path), pk_projection="some")


def test_a_filter_sees_only_the_columns_read(client):
    client.put_row("t", Row(pk(1), [("a", 1), ("b", 2)]))
    on_b = SingleColumnCondition("b", 2, ComparatorType.EQUAL, pass_if_missing=False)
    assert attrs(client.get_row("t", pk(1), column_filter=on_b)[1]) == [("a", 1), ("b", 2)]
    # b is not read: missing for the filter, so pass_if_missing decides.
    assert client.get_row("t", pk(1), ["a"], column_filter=on_b)[1] is None
    passes = SingleColumnCondition("b", 3, ComparatorType.EQUAL, pass_if_missing=True)
    assert attrs(client.get_row("t", pk(1), ["a"], column_filter=passes)[1]) == [("a", 1)]
    lo, hi = pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX)
    assert client.get_range("t", "FORWARD", lo, hi, ["a"], column_filter=on_b)[2] == []


# -- rows that hold only their primary key ------------------------------------
def _exists(client, key):
    return client.get_row("t", key)[1] is not None


def test_put_row_without_attributes_creates_a_pk_only_row(client):
    consumed, _ = client.put_row("t", Row(pk(1), []))
    assert consumed == CapacityUnit(0, 1)
    consumed, row, _ = client.get_row("t", pk(1))
    assert row.primary_key == pk(1) and row.attribute_columns == []
    assert consumed == CapacityUnit(1, 0)
    client.put_row("t", Row(pk(1)))  # attribute_columns=None: the same
    assert _exists(client, pk(1))
    exist = Condition(RowExistenceExpectation.EXPECT_EXIST)
    not_exist = Condition(RowExistenceExpectation.EXPECT_NOT_EXIST)
    client.update_row("t", Row(pk(1), {"put": [("a", 1)]}), exist)
    with pytest.raises(OTSServiceError) as e:
        client.put_row("t", Row(pk(1), []), not_exist)
    assert e.value.code == "OTSConditionCheckFail"


def test_update_row_deleting_every_column_leaves_the_row(client):
    client.put_row("t", Row(pk(1), [("a", 1, T(1)), ("b", 2, T(1))]))
    client.update_row("t", Row(pk(1), {"delete_all": ["a", "b"]}), None)
    assert client.get_row("t", pk(1))[1].attribute_columns == []
    # A row an UpdateRow created survives the deletion of its columns too.
    client.update_row("t", Row(pk(2), {"put": [("a", 1, T(1))]}), None)
    client.update_row("t", Row(pk(2), {"delete": [("a", None, T(1))]}), None)
    assert client.get_row("t", pk(2))[1].attribute_columns == []
    client.update_row("t", Row(pk(3), {"increment": [("n", 1)]}), None)
    client.update_row("t", Row(pk(3), {"delete_all": ["n"]}), None)
    assert _exists(client, pk(3))
    exist = Condition(RowExistenceExpectation.EXPECT_EXIST)
    for i in (1, 2, 3):
        client.update_row("t", Row(pk(i), {"put": [("c", i)]}), exist)
    client.delete_row("t", Row(pk(2)), exist)
    assert not _exists(client, pk(2))
    with pytest.raises(OTSServiceError):
        client.delete_row("t", Row(pk(2)), exist)


def test_update_row_with_only_deletions_creates_nothing(client):
    client.update_row("t", Row(pk(1), {"delete_all": ["a"], "delete": [("b", None, T(1))]}), None)
    assert not _exists(client, pk(1))
    client.put_row("t", Row(pk(2), [("a", 1)]))
    client.delete_row("t", Row(pk(2)), None)
    client.update_row("t", Row(pk(2), {"delete_all": ["a"]}), None)
    assert not _exists(client, pk(2))


def test_pk_only_rows_are_in_ranges_batches_and_survive_flush_compaction_and_reopen(tmp_path):
    """The guide's GetRange examples return the row ('C', 1) with no attributes."""
    def check(c):
        lo, hi = pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX)
        for direction in ("FORWARD", "BACKWARD"):
            a, b = (lo, hi) if direction == "FORWARD" else (hi, lo)
            _, nxt, rows, _ = c.get_range("t", direction, a, b)
            got = [(r.primary_key, attrs(r)) for r in rows]
            want = [(pk(1), []), (pk(2), [("v", 2)]), (pk(3), [])]
            assert nxt is None and got == (want if direction == "FORWARD" else want[::-1])
        # A page cut lands on PK-only rows like on any other row.
        _, nxt, rows, _ = c.get_range("t", "FORWARD", lo, hi, limit=2)
        assert len(rows) == 2 and nxt == pk(3)
        request = BatchGetRowRequest()
        request.add(TableInBatchGetRowItem("t", [pk(1), pk(3), pk(4)], max_version=1))
        items = c.batch_get_row(request).get_result_by_table("t")
        assert [(i.is_ok, i.row.primary_key if i.row else None) for i in items] == [
            (True, pk(1)), (True, pk(3)), (True, None)]

    c = OTSClient(str(tmp_path))
    c.create_table(TableMeta("t", [("PK1", "INTEGER"), ("PK2", "STRING")]),
                   TableOptions(time_to_live=86400, max_version=1))
    c.put_row("t", Row(pk(1), []))
    c.put_row("t", Row(pk(2), [("v", 2)]))
    c.update_row("t", Row(pk(3), {"put": [("v", 3)]}), None)
    c.update_row("t", Row(pk(3), {"delete_all": ["v"]}), None)
    check(c)
    c._server.flush_all()
    c._server.compact("t")
    check(c)
    # Split between the partition keys 2 and 3 (the daughters hold views).
    region = c._server.regions("t")[0]
    c._server.split_region("t", region.region_id, pkcodec.encode_value("INTEGER", 3))
    assert len(c._server.regions("t")) == 2
    check(c)
    c.close()
    c = OTSClient(str(tmp_path))
    try:
        check(c)
    finally:
        c.close()


def test_rows_whose_columns_expired_by_ttl_still_exist(tmp_path):
    c = OTSClient(str(tmp_path / "ttl"))
    try:
        c.create_table(TableMeta("t", [("PK1", "INTEGER"), ("PK2", "STRING")]),
                       TableOptions(time_to_live=86400))
        # Versions that expire one second from now (the TTL bounds what can be written).
        old = int(time.time() * 1000) - 86400 * 1000 + 1000
        c.put_row("t", Row(pk(1), [("a", 1, old)]))
        c.update_row("t", Row(pk(2), {"put": [("a", 1, old)]}), None)
        c.update_row("t", Row(pk(3), {"delete_all": ["a"]}), None)
        assert len(c.get_range("t", "FORWARD", pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX))[2]) == 2
        time.sleep(1.2)
        for server_step in (None, "flush", "compact"):
            if server_step == "flush":
                c._server.flush_all()
            elif server_step:
                c._server.compact("t")
            assert [(r.primary_key, r.attribute_columns) for r in c.get_range(
                "t", "FORWARD", pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX))[2]] == [
                (pk(1), []), (pk(2), [])]
    finally:
        c.close()


def test_read_cu_counts_what_is_returned(client):
    """The guide: a GetRow of value1 from a 4322-byte row costs 1 read CU."""
    big = [("value%d" % i, "x" * 1100) for i in range(1, 5)]  # 4424 B of attributes
    client.put_row("t", Row(pk(1), big + [("small", 1)]))
    assert client.get_row("t", pk(1))[0] == CapacityUnit(2, 0)
    assert client.get_row("t", pk(1), ["value1"])[0] == CapacityUnit(1, 0)
    assert client.get_row("t", pk(1), ["small"])[0] == CapacityUnit(1, 0)
    lo, hi = pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX)
    for i in range(2, 6):
        client.put_row("t", Row(pk(i), big))
    assert client.get_range("t", "FORWARD", lo, hi)[0].read == 6  # 22208 B
    assert client.get_range("t", "FORWARD", lo, hi, ["value1"])[0].read == 2  # 5618 B
    assert client.get_range("t", "FORWARD", lo, hi, ["small"])[0].read == 1


def test_a_failed_delete_condition_costs_one_write_cu_and_no_read_cu(client):
    request = BatchWriteRowRequest()
    exist = Condition(RowExistenceExpectation.EXPECT_EXIST)
    request.add(TableInBatchWriteRowItem("t", [DeleteRowItem(Row(pk(9)), exist),
                                               UpdateRowItem(Row(pk(8), {"put": [("a", 1)]}),
                                                             exist)]))
    items = client.batch_write_row(request).get_failed_of_delete()
    assert [(i.error_code, i.consumed) for i in items] == [
        ("OTSConditionCheckFail", CapacityUnit(0, 1))]
    items = client.batch_write_row(request).get_failed_of_update()
    assert [(i.error_code, i.consumed) for i in items] == [
        ("OTSConditionCheckFail", CapacityUnit(1, 1))]


def _fill(client, n):
    for i in range(n):
        client.put_row("t", Row(pk(i // 3, "k%d" % (i % 3)), [("v", i)]))


def test_get_range_inclusive_start_exclusive_end_both_directions(client):
    _fill(client, 12)  # PK1 0..3, PK2 k0..k2
    _, nxt, rows, _ = client.get_range("t", "FORWARD", pk(1, "k1"), pk(2, "k1"))
    assert nxt is None and [r.primary_key for r in rows] == [pk(1, "k1"), pk(1, "k2"), pk(2, "k0")]
    _, nxt, rows, _ = client.get_range("t", "BACKWARD", pk(2, "k1"), pk(1, "k1"))
    assert [r.primary_key for r in rows] == [pk(2, "k1"), pk(2, "k0"), pk(1, "k2")]
    _, _, rows, _ = client.get_range("t", "FORWARD", pk(1, INF_MIN), pk(1, INF_MAX))
    assert [r.primary_key for r in rows] == [pk(1, "k0"), pk(1, "k1"), pk(1, "k2")]
    _, _, rows, _ = client.get_range("t", "BACKWARD", pk(INF_MAX, INF_MAX), pk(3, INF_MIN))
    assert [r.primary_key for r in rows] == [pk(3, "k2"), pk(3, "k1"), pk(3, "k0")]


def test_get_range_limit_gives_next_start_and_xget_range_follows_pages(client):
    _fill(client, 12)
    lo, hi = pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX)
    _, nxt, rows, _ = client.get_range("t", "FORWARD", lo, hi, limit=5)
    assert len(rows) == 5 and nxt == pk(1, "k2")
    _, nxt, rows, _ = client.get_range("t", "FORWARD", lo, hi, limit=12)
    assert len(rows) == 12 and nxt is None
    counter = CapacityUnit(9, 9)
    got = list(client.xget_range("t", "FORWARD", lo, hi, counter, count=7))
    assert [r.primary_key for r in got] == [pk(i // 3, "k%d" % (i % 3)) for i in range(7)]
    assert counter.write == 0 and counter.read >= 1
    assert len(list(client.xget_range("t", "BACKWARD", hi, lo, CapacityUnit()))) == 12


def test_get_range_page_is_cut_at_5000_rows(client):
    batch = 200
    for start in range(0, 5003, batch):
        req = BatchWriteRowRequest()
        req.add(TableInBatchWriteRowItem("t", [PutRowItem(Row(pk(i), [("v", i)]), None)
                                               for i in range(start, min(start + batch, 5003))]))
        assert client.batch_write_row(req).is_all_succeed()
    lo, hi = pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX)
    _, nxt, rows, _ = client.get_range("t", "FORWARD", lo, hi)
    assert len(rows) == 5000 and nxt == pk(5000)
    _, nxt, rows, _ = client.get_range("t", "FORWARD", nxt, hi)
    assert len(rows) == 3 and nxt is None


def test_get_range_page_is_cut_after_the_row_that_crosses_4mb(client):
    """The Java SDK's RestrictedItemTest 35: 2,081 rows of 2,016 bytes
    ("pk_0" and an INTEGER, "attr" and 2,000 characters), written until they
    pass 4 MB.  A page counts each cell's timestamp too (2,024 a row), so the
    2,073rd row crosses 4,194,304 and ends the page; the next starts after it."""
    client.create_table(TableMeta("r35", [("pk_0", "INTEGER")]))
    value = "a" * 2000
    for start in range(0, 2081, 200):
        req = BatchWriteRowRequest()
        req.add(TableInBatchWriteRowItem("r35", [
            PutRowItem(Row([("pk_0", i)], [("attr", value)]), None)
            for i in range(start, min(start + 200, 2081))]))
        assert client.batch_write_row(req).is_all_succeed()
    lo, hi = [("pk_0", INF_MIN)], [("pk_0", INF_MAX)]
    for columns in (None, ["pk_0", "attr"]):          # the C decode and assemble's
        _, nxt, rows, _ = client.get_range("r35", "FORWARD", lo, hi, columns,
                                           max_version=2 ** 31 - 1)
        assert len(rows) == 2073 and nxt == [("pk_0", 2073)]
        assert rows[-1].primary_key == [("pk_0", 2072)]
        consumed, nxt, rest, _ = client.get_range("r35", "FORWARD", nxt, hi, columns,
                                                  max_version=2 ** 31 - 1)
        assert [r.primary_key for r in rest] == [[("pk_0", i)] for i in range(2073, 2081)]
        assert nxt is None and consumed.read == -(-8 * 2016 // 4096)   # CU: no timestamps
        _, nxt, rows, _ = client.get_range("r35", "BACKWARD", hi, lo, columns)
        assert len(rows) == 2073 and nxt == [("pk_0", 2081 - 2074)]


def test_get_range_filter_skips_rows(client):
    _fill(client, 6)
    f = SingleColumnCondition("v", 3, ComparatorType.GREATER_EQUAL)
    _, _, rows, _ = client.get_range("t", "FORWARD", pk(INF_MIN, INF_MIN), pk(INF_MAX, INF_MAX),
                                     column_filter=f)
    assert [attrs(r) for r in rows] == [[("v", 3)], [("v", 4)], [("v", 5)]]


def test_auto_increment_pk_is_generated_monotonic_and_returned(tmp_path):
    c = open_client(tmp_path)
    c.create_table(TableMeta("a", [("p", "INTEGER"), ("id", "INTEGER", PK_AUTO_INCR)]))
    ids = []
    for _ in range(3):
        _, row = c.put_row("a", Row([("p", 1), ("id", PK_AUTO_INCR)], [("v", 1)]),
                           return_type=ReturnType.RT_PK)
        ids.append(row.primary_key[1][1])
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert c.get_row("a", [("p", 1), ("id", ids[1])])[1] is not None
    assert c.describe_table("a").table_meta.schema_of_primary_key == [
        ("p", "INTEGER"), ("id", "INTEGER", PK_AUTO_INCR)]
    c.close()


def test_batch_get_row_per_row_results_across_tables(client):
    client.create_table(TableMeta("u", [("k", "STRING")]))
    client.put_row("t", Row(pk(1), [("a", 1)]))
    client.put_row("u", Row([("k", "x")], [("b", 2)]))
    req = BatchGetRowRequest()
    req.add(TableInBatchGetRowItem("t", [pk(1), pk(2), [("PK1", 1)]], max_version=1))
    req.add(TableInBatchGetRowItem("u", [[("k", "x")]], max_version=1))
    req.add(TableInBatchGetRowItem("nope", [[("k", "x")]], max_version=1))
    res = client.batch_get_row(req)
    t = res.get_result_by_table("t")
    assert [r.is_ok for r in t] == [True, True, False]
    assert attrs(t[0].row) == [("a", 1)] and t[1].row is None and t[1].consumed.read == 1
    assert t[2].error_code == "OTSInvalidPK"
    assert attrs(res.get_result_by_table("u")[0].row) == [("b", 2)]
    assert res.get_result_by_table("nope")[0].error_code == "OTSObjectNotExist"
    assert len(res.get_failed_rows()) == 2 and not res.is_all_succeed()


def test_batch_write_row_partial_failure_in_request_order(client):
    client.put_row("t", Row(pk(2), [("a", 1)]))
    items = [PutRowItem(Row(pk(1), [("a", 1)]), Condition("EXPECT_NOT_EXIST"),
                        return_type=ReturnType.RT_PK),
             UpdateRowItem(Row(pk(3), {"put": [("a", 1)]}), Condition("EXPECT_EXIST")),
             DeleteRowItem(Row(pk(2)), None),
             PutRowItem(Row([("PK1", 1)], [("a", 1)]), None)]
    req = BatchWriteRowRequest()
    req.add(TableInBatchWriteRowItem("t", items))
    req.add(TableInBatchWriteRowItem("missing", [PutRowItem(Row(pk(1), [("a", 1)]), None)]))
    res = client.batch_write_row(req)
    put_ok, put_fail = res.get_put()
    assert [p.index for p in put_ok] == [0] and put_ok[0].row.primary_key == pk(1)
    assert put_ok[0].consumed == CapacityUnit(1, 1)
    assert [(p.index, p.error_code) for p in put_fail] == [(3, "OTSInvalidPK"),
                                                            (0, "OTSObjectNotExist")]
    upd = res.get_update_by_table("t")[0]
    assert (upd.is_ok, upd.error_code, upd.consumed) == (False, "OTSConditionCheckFail",
                                                         CapacityUnit(1, 1))
    assert res.get_delete()[0][0].is_ok
    assert client.get_row("t", pk(2))[1] is None and client.get_row("t", pk(3))[1] is None


def test_ttl_hides_expired_versions_on_read(client):
    import time
    now = int(time.time() * 1000)
    client.update_table("t", TableOptions(time_to_live=86400, max_version=3,
                                          max_time_deviation=200000))
    client.put_row("t", Row(pk(1), [("a", 1, now - 86400 * 1000 + 5000), ("b", 2)]))
    assert attrs(client.get_row("t", pk(1))[1]) == [("a", 1), ("b", 2)]
    opts = client.describe_table("t").table_options
    assert (opts.time_to_live, opts.max_version, opts.max_time_deviation) == (86400, 3, 200000)


def test_generations_are_unique_and_increasing_across_threads():
    """cells.Generations.next from 4 threads: no value twice, each thread's
    values increasing, all above the clock reading it started from."""
    import threading
    from regions.tablestore import cells

    start = time.time_ns()
    gens = cells.Generations()
    got = [[] for _ in range(4)]

    def work(out):
        for _ in range(20000):
            out.append(gens.next())
    threads = [threading.Thread(target=work, args=(out,)) for out in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [g for out in got for g in out]
    assert len(set(every)) == len(every) == 80000
    assert all(out == sorted(out) for out in got) and min(every) >= start


def test_an_update_row_makes_a_row_with_an_auto_increment_key():
    from regions.tablestore import (PK_AUTO_INCR, CapacityUnit, Condition, OTSClient,
                                    ReservedThroughput, ReturnType, Row, TableMeta, TableOptions)
    with OTSClient(None) as c:
        c.create_table(TableMeta("auto", [("p", "STRING"), ("a", "INTEGER", PK_AUTO_INCR)]),
                       TableOptions(), ReservedThroughput(CapacityUnit(0, 0)))
        _, row = c.update_row("auto", Row([("p", "x"), ("a", PK_AUTO_INCR)],
                                          {"INCREMENT": [("price", 1)]}),
                              Condition("IGNORE"), return_type=ReturnType.RT_PK)
        key = row.primary_key
        assert key[0] == ("p", "x") and isinstance(key[1][1], int)
        assert c.get_row("auto", key)[1].attribute_columns[0][:2] == ("price", 1)
