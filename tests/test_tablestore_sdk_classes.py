"""Code written for the cloud keeps its ``tablestore`` imports and changes only
the client: the embedded OTSClient takes the official SDK's classes."""
import tablestore as ts

from regions.tablestore import OTSClient

PK = [("uid", 1), ("oid", "a")]


def test_every_row_api_takes_the_sdks_classes(tmp_path):
    with OTSClient(str(tmp_path / "s")) as c:
        c.create_table(ts.TableMeta("t", [("uid", "INTEGER"), ("oid", "STRING")]),
                       ts.TableOptions(max_version=2), ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
        c.create_table(ts.TableMeta("auto", [("p", "INTEGER"), ("id", "INTEGER", ts.PK_AUTO_INCR)]),
                       ts.TableOptions(), ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
        assert c.describe_table("t").table_options.max_version == 2

        c.put_row("t", ts.Row(PK, [("n", 1), ("s", "x")]),
                  ts.Condition(ts.RowExistenceExpectation.EXPECT_NOT_EXIST))
        c.update_row("t", ts.Row(PK, {"increment": [("n", 2)]}),
                     ts.Condition(ts.RowExistenceExpectation.EXPECT_EXIST,
                                  ts.SingleColumnCondition("n", 1, ts.ComparatorType.EQUAL)))
        both = ts.CompositeColumnCondition(ts.LogicalOperator.AND)
        both.add_sub_condition(ts.SingleColumnCondition("n", 3, ts.ComparatorType.EQUAL))
        both.add_sub_condition(ts.SingleColumnRegexCondition(
            "s", ts.ComparatorType.EQUAL, "x", ts.RegexRule("(x)", ts.CastType.VT_STRING)))
        _, row, _ = c.get_row("t", PK, max_version=1, column_filter=both)
        assert [(n, v) for n, v, _ in row.attribute_columns] == [("n", 3), ("s", "x")]
        assert c.get_row("t", PK, max_version=1, column_filter=ts.SingleColumnRegexCondition(
            "s", ts.ComparatorType.EQUAL, "y", ts.RegexRule("(x)", ts.CastType.VT_STRING)))[1] is None

        _, _, rows, _ = c.get_range("t", ts.Direction.FORWARD, [("uid", ts.INF_MIN), ("oid", ts.INF_MIN)],
                                    [("uid", ts.INF_MAX), ("oid", ts.INF_MAX)], max_version=1)
        assert [r.primary_key for r in rows] == [PK]

        batch = ts.BatchWriteRowRequest()
        batch.add(ts.TableInBatchWriteRowItem("t", [
            ts.PutRowItem(ts.Row([("uid", 2), ("oid", "b")], [("n", 5)]),
                          ts.Condition(ts.RowExistenceExpectation.IGNORE)),
            ts.DeleteRowItem(ts.Row(PK), ts.Condition(ts.RowExistenceExpectation.IGNORE))]))
        assert c.batch_write_row(batch).is_all_succeed()

        get = ts.BatchGetRowRequest()
        get.add(ts.TableInBatchGetRowItem("t", [PK, [("uid", 2), ("oid", "b")]], max_version=1))
        got = c.batch_get_row(get).get_result_by_table("t")
        assert [r.row.primary_key if r.row else None for r in got] == [None, [("uid", 2), ("oid", "b")]]

        _, ret = c.put_row("auto", ts.Row([("p", 1), ("id", ts.PK_AUTO_INCR)], [("v", 1)]),
                           return_type=ts.ReturnType.RT_PK)
        assert ret.primary_key[0] == ("p", 1) and isinstance(ret.primary_key[1][1], int)

        c.delete_row("t", ts.Row([("uid", 2), ("oid", "b")]), ts.Condition(ts.RowExistenceExpectation.IGNORE))
        c.update_table("t", ts.TableOptions(max_version=3))
        assert c.describe_table("t").table_options.max_version == 3
