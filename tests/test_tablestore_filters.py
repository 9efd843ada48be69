"""Regex conditions, EXIST/NOT_EXIST, the filter node limit, ColumnPaginationFilter and
wide-row column windows (start_column/end_column/token), embedded and over the wire.

Every behaviour runs on both clients through the ``c`` fixture: the embedded
``regions.tablestore.OTSClient`` (with its own classes) and the official SDK
against ``regions-server`` (with the SDK's classes).  The SDK 6.4.8 has no
ColumnPaginationFilter, so that one goes over the wire as a hand-built request.
"""
import time

import pytest
import tablestore as ts
from tablestore.plainbuffer.plain_buffer_builder import PlainBufferBuilder
from tablestore.protobuf import table_store_filter_pb2 as fpb
from tablestore.protobuf import table_store_pb2 as pb

import regions.tablestore as emb
from regions.otsserver import convert
from regions.otsserver.convert import CODEC
from regions.tablestore import conditions, reads
from regions.tablestore.columns import Window, column_window, read_window
from test_otsserver_sdk import create, error_of, raw_post, sdk

T0 = (int(time.time()) - 3600) * 1000
LO = [("gid", emb.INF_MIN), ("uid", emb.INF_MIN)]
HI = [("gid", emb.INF_MAX), ("uid", emb.INF_MAX)]
P400 = (400, "OTSParameterInvalid")


class Client:
    """One client and the class library that goes with it (SDK or embedded)."""

    def __init__(self, client, lib, server=None):
        self.client, self.lib, self.server = client, lib, server
        self.lo = [("gid", lib.INF_MIN), ("uid", lib.INF_MIN)]
        self.hi = [("gid", lib.INF_MAX), ("uid", lib.INF_MAX)]

    def __getattr__(self, name):
        return getattr(self.client, name)

    def rows(self, cond, **kw):
        counter = self.lib.CapacityUnit(0, 0)
        return list(self.client.xget_range("t", "FORWARD", self.lo, self.hi, counter, column_filter=cond,
                                           max_version=1, **kw))

    def uids(self, cond, **kw):
        return [r.primary_key[1][1] for r in self.rows(cond, **kw)]

    def error(self, fn, *args, **kw):
        with pytest.raises((ts.OTSServiceError, emb.OTSServiceError)) as e:
            fn(*args, **kw)
        return e.value.get_http_status(), e.value.get_error_code(), e.value.get_error_message()


@pytest.fixture(params=["embedded", "wire"])
def c(request):
    """The table "t" behind the embedded API or the SDK (the plugin's fixtures)."""
    if request.param == "embedded":
        client = request.getfixturevalue("ots_client")
        create(client, lib=emb)
        return Client(client, emb)
    srv = request.getfixturevalue("ots_server")
    client = srv.client()
    create(client)
    return Client(client, ts, srv)


def pk(i, uid="u"):
    return [("gid", i), ("uid", uid)]


def put(c, i, columns, uid="u"):
    c.put_row("t", c.lib.Row(pk(i, uid), [col + (T0,) if len(col) == 2 else col
                                          for col in columns]))


def regex(c, name, comparator, value=None, rx=None, cast="VT_STRING", **kw):
    rule = None if rx is None else c.lib.RegexRule(rx, getattr(c.lib.CastType, cast))
    return c.lib.SingleColumnRegexCondition(name, comparator, value, rule, **kw)


# ------------------------------------------------------------ the classes

def test_regex_classes_have_the_sdks_fields_defaults_and_checks():
    for lib in (emb, ts):
        assert [int(t) for t in lib.CastType] == [0, 1, 2]
        cond = lib.SingleColumnRegexCondition("c", lib.ComparatorType.EXIST)
        assert (cond.column_value, cond.regex_rule, cond.latest_version_only) == (0, None, True)
        assert cond.get_pass_if_missing() is False and cond.get_type() == 2
        rule = lib.RegexRule("a(b)", lib.CastType.VT_INTEGER)
        assert (rule.get_regex(), rule.get_cast_type()) == ("a(b)", lib.CastType.VT_INTEGER)
    bad = [
        lambda lib: lib.RegexRule(1, lib.CastType.VT_STRING),
        lambda lib: lib.RegexRule("x", 2),
        lambda lib: lib.SingleColumnRegexCondition("c", lib.ComparatorType.EXIST, 1),
        lambda lib: lib.SingleColumnRegexCondition("c", lib.ComparatorType.EQUAL),
        lambda lib: lib.SingleColumnRegexCondition(1, lib.ComparatorType.EQUAL, 1),
        lambda lib: lib.SingleColumnRegexCondition("c", 8, 1),
        lambda lib: lib.SingleColumnRegexCondition("c", lib.ComparatorType.EQUAL, 1, "rule"),
        lambda lib: lib.SingleColumnRegexCondition("c", lib.ComparatorType.EQUAL, 1,
                                                   latest_version_only=1),
        # EXIST/NOT_EXIST stay out of SingleColumnCondition, as in the SDK
        lambda lib: lib.SingleColumnCondition("c", 1, lib.ComparatorType.EXIST),
    ]
    for make in bad:
        messages = []
        for lib in (emb, ts):
            with pytest.raises((emb.OTSClientError, ts.OTSClientError)) as e:
                make(lib)
            messages.append(str(e.value))
        assert messages[0] == messages[1]


def test_column_pagination_filter_is_a_read_filter_only():
    page = emb.ColumnPaginationFilter(1, 2)
    assert (page.get_offset(), page.get_limit()) == (1, 2)
    with pytest.raises(emb.OTSClientError):
        emb.ColumnPaginationFilter("1", 2)
    with pytest.raises(emb.OTSClientError):
        emb.ColumnPaginationFilter(0, True)
    with pytest.raises(emb.OTSClientError, match="instance of ColumnCondition"):
        emb.Condition("IGNORE", page)
    with pytest.raises(emb.OTSClientError, match="instance of ColumnCondition"):
        emb.CompositeColumnCondition(emb.LogicalOperator.AND).add_sub_condition(page)


# ------------------------------------------------------------ pure functions

def test_column_window_takes_the_range_then_the_page_in_name_order():
    cols = {n: [(1, i)] for i, n in enumerate("edcba")}
    assert list(column_window(cols, None, None)) == list("abcde")
    assert list(column_window(cols, "b", "d")) == ["b", "c"]
    assert list(column_window(cols, "bb", None)) == ["c", "d", "e"]
    assert list(column_window(cols, None, "a")) == []
    assert list(column_window(cols, None, None, (1, 2))) == ["b", "c"]
    assert list(column_window(cols, "b", None, (2, 10))) == ["d", "e"]
    assert list(column_window(cols, None, None, (9, 1))) == []
    assert list(column_window(cols, None, None, (1, 2), {"a", "c", "e"})) == ["c", "e"]
    assert column_window(cols, "c", "d")["c"] is cols["c"] and len(cols) == 5


def test_a_window_turns_off_the_whole_row_fast_path():
    from regions.tablestore.schema import Schema
    schema = Schema(["gid"], ["INTEGER"], None, -1, 1, 86400, True, [])
    assert reads.whole_read(schema, None, None, None)
    assert reads.whole_read(schema, None, None, None, None)
    assert not reads.whole_read(schema, None, None, None, Window("a", None, None, None))


def test_read_window_validates_and_splits_off_the_pagination():
    cond = emb.SingleColumnCondition("a", 1, emb.ComparatorType.EQUAL)
    assert read_window(None, None, None, cond, None) == (None, cond)
    assert read_window(None, None, b"", None, None) == (None, None)
    assert read_window(None, None, [], None, None) == (None, None)
    assert read_window(b"a", None, None, emb.ColumnPaginationFilter(0, 3), {"a"}) == (
        Window("a", None, (0, 3), {"a"}), None)
    with pytest.raises(emb.OTSClientError):
        read_window(1, None, None, None, None)


def test_regex_transformation_rules():
    def ok(value, rx, cast, comparator, wanted, **kw):
        cond = emb.SingleColumnRegexCondition("c", comparator, wanted,
                                              emb.RegexRule(rx, getattr(emb.CastType, cast)), **kw)
        conditions.check_condition(cond)
        return conditions.evaluate(cond, {"c": [(2, value)]})
    E, GT = emb.ComparatorType.EQUAL, emb.ComparatorType.GREATER_THAN
    # the docs' examples: whole match without a group, first group with one
    assert ok("1aaa51bbb5", "1[a-z]+5", "VT_STRING", E, "1aaa5")
    assert ok("1aaa51bbb5", "1([a-z]+)5", "VT_STRING", E, "aaa")
    doc = "{cluster_name:name 1,lastupdatetime:12345}"
    assert ok(doc, "lastupdatetime:([0-9]+)}", "VT_INTEGER", GT, 12344)
    assert not ok(doc, "lastupdatetime:([0-9]+)}", "VT_INTEGER", GT, 12345)
    assert ok("t=-2.5e1;", "t=([^;]*)", "VT_DOUBLE", E, -25.0)
    assert ok("n=7", "n=(.*)", "VT_INTEGER", E, 7.0)  # INTEGER and DOUBLE compare numerically
    # no match, a failed cast, an unused group, a non-STRING value: the column is missing
    for value, rx, cast in [("abc", "z+", "VT_STRING"), ("n=x", "n=(.*)", "VT_INTEGER"),
                            ("n=1_0", "n=(.*)", "VT_INTEGER"), ("n=nan", "n=(.*)", "VT_DOUBLE"),
                            ("n=9223372036854775808", "n=(.*)", "VT_INTEGER"),
                            ("b", "(a)|b", "VT_STRING"), (5, ".*", "VT_INTEGER")]:
        assert not ok(value, rx, cast, emb.ComparatorType.NOT_EQUAL, 123456)
        assert not ok(value, rx, cast, emb.ComparatorType.EXIST, None)
        assert ok(value, rx, cast, emb.ComparatorType.NOT_EXIST, None)


def test_wire_decoding_of_regex_filters():
    def encoded(comparator, rule=None, filter_if_missing=True):
        single = fpb.SingleColumnValueFilter(
            comparator=comparator, column_name="c", filter_if_missing=filter_if_missing,
            latest_version_only=True, column_value=_variant(5))
        if rule is not None:
            single.value_trans_rule.CopyFrom(rule)
        return fpb.Filter(type=fpb.FT_SINGLE_COLUMN_VALUE,
                          filter=single.SerializeToString()).SerializeToString()
    plain = convert.column_filter(encoded(fpb.CT_EQUAL))
    assert type(plain) is emb.SingleColumnCondition and plain.column_value == 5
    exist = convert.column_filter(encoded(fpb.CT_EXIST))
    assert type(exist) is emb.SingleColumnRegexCondition and exist.regex_rule is None
    # an absent cast_type is the proto2 default, VT_INTEGER
    no_cast = convert.column_filter(encoded(fpb.CT_EQUAL, fpb.ValueTransferRule(regex="(.*)")))
    assert no_cast.regex_rule.cast_type == emb.CastType.VT_INTEGER
    # filter_if_missing false on a regex filter (other SDKs may send it) lets a missing column pass
    lenient = convert.column_filter(encoded(fpb.CT_EQUAL, fpb.ValueTransferRule(regex="x"),
                                            filter_if_missing=False))
    assert conditions.evaluate(lenient, {}) is True
    assert conditions.evaluate(no_cast, {}) is False
    with pytest.raises(emb.OTSServiceError, match="Invalid cast type of the regex rule: VT_BLOB"):
        convert.column_filter(encoded(fpb.CT_EQUAL, fpb.ValueTransferRule(
            regex="x", cast_type=fpb.VT_BLOB)))


def _variant(value):
    """A filter's column_value as the SDK serializes it."""
    return bytes(PlainBufferBuilder.serialize_column_value(value))


# ------------------------------------------------------------ regex and EXIST, both clients

def test_vendor_get_range2_regex_and_exist_cases(c):
    """filter_and_condition_update_unitttest.test_get_range2 of the vendor's suite, 20 rows."""
    C = c.lib.ComparatorType
    for i in range(20):
        put(c, 0, [("index", i), ("addr", "china"), ("col%d" % i, ("x" if i % 2 == 0 else "y") * (i + 1)),
                   ("intCol", str(i))], uid="%02d" % i)
    assert len(c.rows(regex(c, "index", C.EXIST))) == 20
    assert c.rows(regex(c, "index_not_exist", C.EXIST)) == []
    assert c.uids(regex(c, "col0", C.EXIST)) == ["00"]
    assert len(c.rows(regex(c, "col0", C.NOT_EXIST))) == 19
    assert c.uids(regex(c, "index", C.EQUAL, 0)) == ["00"]
    assert len(c.rows(regex(c, "intCol", C.EXIST, rx=".*", cast="VT_INTEGER"))) == 20
    rows = c.rows(regex(c, "col10", C.EXIST, rx="xx[x]+xx"))
    assert [r.primary_key for r in rows] == [pk(0, "10")]
    assert [col[:2] for col in rows[0].attribute_columns] == [
        ("addr", "china"), ("col10", "x" * 11), ("index", 10), ("intCol", "10")]


def test_regex_conditions_filter_reads(c):
    C = c.lib.ComparatorType
    put(c, 1, [("json", '{"age":31,"name":"ann"}'), ("n", 1)])
    put(c, 2, [("json", '{"age":7,"name":"bob"}'), ("n", 2)])
    put(c, 3, [("json", '{"name":"cy"}'), ("n", 3)])
    put(c, 4, [("n", 4)])
    age = dict(rx='"age":([0-9]+)', cast="VT_INTEGER")
    assert [r.primary_key[0][1] for r in c.rows(regex(c, "json", C.GREATER_THAN, 10, **age))] == [1]
    assert [r.primary_key[0][1] for r in c.rows(regex(c, "json", C.LESS_EQUAL, 7, **age))] == [2]
    # no match or no column: missing, and a regex condition never passes a missing column
    assert [r.primary_key[0][1] for r in c.rows(regex(c, "json", C.NOT_EQUAL, 31, **age))] == [2]
    assert [r.primary_key[0][1] for r in c.rows(regex(c, "json", C.NOT_EXIST, **age))] == [3, 4]
    name = regex(c, "json", C.EQUAL, "bob", rx='"name":"([a-z]*)"')
    _, row, _ = c.get_row("t", pk(2), column_filter=name)
    assert row is not None and row.primary_key == pk(2)
    assert c.get_row("t", pk(1), column_filter=name)[1] is None
    # inside a composite, with a plain condition
    comp = c.lib.CompositeColumnCondition(c.lib.LogicalOperator.OR)
    comp.add_sub_condition(regex(c, "json", C.EXIST, rx="cy"))
    comp.add_sub_condition(c.lib.SingleColumnCondition("n", 4, C.EQUAL))
    assert [r.primary_key[0][1] for r in c.rows(comp)] == [3, 4]
    # batch get
    req = c.lib.BatchGetRowRequest()
    req.add(c.lib.TableInBatchGetRowItem("t", [pk(1), pk(2), pk(3)], None,
                                         regex(c, "json", C.EXIST, **age), 1))
    got = c.batch_get_row(req).get_result_by_table("t")
    assert [item.row is not None for item in got] == [True, True, False]


def test_latest_version_only_decides_which_versions_a_regex_sees(c):
    C = c.lib.ComparatorType
    c.update_table("t", c.lib.TableOptions(max_version=2))
    nine = dict(rx="v=([0-9])", cast="VT_INTEGER")
    one_latest = regex(c, "s", C.EQUAL, 1, **nine)
    one_any = regex(c, "s", C.EQUAL, 1, latest_version_only=False, **nine)
    c.update_row("t", c.lib.Row(pk(1), {"put": [("s", "v=1", T0), ("s", "v=9", T0 + 1)]}),
                 c.lib.Condition("IGNORE"))
    assert c.get_row("t", pk(1), column_filter=one_latest, max_version=2)[1] is None
    assert c.get_row("t", pk(1), column_filter=one_any, max_version=2)[1] is not None


def test_regex_and_exist_in_write_conditions(c):
    C = c.lib.ComparatorType
    put(c, 1, [("s", "state=open")])
    is_open = regex(c, "s", C.EQUAL, "open", rx="state=(.*)")
    is_closed = regex(c, "s", C.EQUAL, "closed", rx="state=(.*)")
    c.update_row("t", c.lib.Row(pk(1), {"put": [("x", 1, T0)]}), c.lib.Condition("IGNORE", is_open))
    assert c.error(c.update_row, "t", c.lib.Row(pk(1), {"put": [("x", 2, T0)]}),
                   c.lib.Condition("IGNORE", is_closed)) == (
        403, "OTSConditionCheckFail", "Condition check failed.")
    assert c.get_row("t", pk(1), ["x"])[1].attribute_columns[0][1] == 1
    c.put_row("t", c.lib.Row(pk(2), [("y", 1, T0)]),
              c.lib.Condition("IGNORE", regex(c, "s", C.NOT_EXIST)))
    assert c.error(c.delete_row, "t", c.lib.Row(pk(2)),
                   c.lib.Condition("IGNORE", regex(c, "y", C.NOT_EXIST)))[1] == "OTSConditionCheckFail"
    c.delete_row("t", c.lib.Row(pk(2)), c.lib.Condition("EXPECT_EXIST", regex(c, "y", C.EXIST)))
    assert c.get_row("t", pk(2))[1] is None


def test_bad_regex_rules_get_a_400_and_change_nothing(c):
    C = c.lib.ComparatorType
    put(c, 1, [("s", "a")])
    long_rx = "a" * 257
    assert c.error(c.get_row, "t", pk(1), column_filter=regex(c, "s", C.EXIST, rx=long_rx)) == \
        P400 + ("The length of regex must be in range: [1, 256].",)
    assert c.get_row("t", pk(1), column_filter=regex(c, "s", C.EXIST, rx="a" + "x?" * 127 + "$"))[1] \
        is not None
    assert c.error(c.get_row, "t", pk(1), column_filter=regex(c, "s", C.EXIST, rx="")) == \
        P400 + ("The length of regex must be in range: [1, 256].",)
    assert c.error(c.put_row, "t", c.lib.Row(pk(1), [("s", "b", T0)]),
                   c.lib.Condition("IGNORE", regex(c, "s", C.EXIST, rx="(a"))) == \
        P400 + ("Invalid regex: (a.",)
    assert c.get_row("t", pk(1))[1].attribute_columns[0][1] == "a"


# ------------------------------------------------------------ the node limit

def _chain(lib, depth):
    """NOT(NOT(...NOT(a == 2))): ``depth`` composites and one leaf."""
    cond = lib.SingleColumnCondition("a", 2, lib.ComparatorType.EQUAL)
    for _ in range(depth):
        outer = lib.CompositeColumnCondition(lib.LogicalOperator.NOT)
        outer.add_sub_condition(cond)
        cond = outer
    return cond


def _flat(lib, op, leaves):
    comp = lib.CompositeColumnCondition(op)
    for i in range(leaves):
        comp.add_sub_condition(lib.SingleColumnCondition("a%d" % i, 1, lib.ComparatorType.EQUAL))
    return comp


def test_a_filter_has_at_most_32_nodes_counted_before_the_operators(c):
    L = c.lib.LogicalOperator
    put(c, 1, [("a", 1)])
    too_many = P400 + ("The count of filter exceeds the max: 32.",)
    assert c.get_row("t", pk(1), column_filter=_chain(c.lib, 31))[1] is not None  # 32 nodes
    assert c.error(c.get_row, "t", pk(1), column_filter=_chain(c.lib, 32)) == too_many
    assert c.get_row("t", pk(1), column_filter=_flat(c.lib, L.OR, 31))[1] is not None
    assert c.error(c.get_range, "t", "FORWARD", c.lo, c.hi,
                   column_filter=_flat(c.lib, L.AND, 32)) == too_many
    # NOT with 40 sub-filters: the count comes first
    assert c.error(c.get_row, "t", pk(1), column_filter=_flat(c.lib, L.NOT, 40)) == too_many
    assert c.error(c.get_row, "t", pk(1), column_filter=_flat(c.lib, L.NOT, 2)) == \
        P400 + ("Invalid NOT operator: the number of sub-filters must be 1.",)
    assert c.error(c.update_row, "t", c.lib.Row(pk(1), {"put": [("a", 2, T0)]}),
                   c.lib.Condition("IGNORE", _flat(c.lib, L.OR, 40))) == too_many
    # a BatchGetRow fails whole (the Java SDK's UnifiedFilterRestrictionAndParamCheckingTest)
    req = c.lib.BatchGetRowRequest()
    req.add(c.lib.TableInBatchGetRowItem("t", [pk(1)], None, _flat(c.lib, L.OR, 40), 1))
    assert c.error(c.batch_get_row, req) == too_many
    assert c.get_row("t", pk(1))[1].attribute_columns[0][1] == 1


def test_a_deep_filter_is_refused_without_deep_recursion():
    cond = _chain(emb, 5000)
    with pytest.raises(emb.OTSServiceError, match="exceeds the max: 32"):
        conditions.check_condition(cond)
    inner = fpb.Filter(type=fpb.FT_SINGLE_COLUMN_VALUE, filter=fpb.SingleColumnValueFilter(
        comparator=fpb.CT_EQUAL, column_name="a", column_value=_variant(1),
        filter_if_missing=False, latest_version_only=True).SerializeToString())
    for _ in range(200):
        inner = fpb.Filter(type=fpb.FT_COMPOSITE_COLUMN_VALUE, filter=fpb.CompositeColumnValueFilter(
            combinator=fpb.LO_NOT, sub_filters=[inner]).SerializeToString())
    with pytest.raises(emb.OTSServiceError, match="exceeds the max: 32"):
        convert.column_filter(inner.SerializeToString())


# ------------------------------------------------------------ wide rows

def _wide(c):
    put(c, 1, [(n, i) for i, n in enumerate(["a", "b", "c", "d", "e"])])
    put(c, 2, [("b", 10), ("z", 11)])


def _names(row):
    return None if row is None else [col[0] for col in row.attribute_columns]


def test_start_and_end_column_window_get_row_batch_and_range(c):
    _wide(c)
    consumed, row, token = c.get_row("t", pk(1), start_column="b", end_column="d")
    assert _names(row) == ["b", "c"] and row.primary_key == pk(1) and token == b""
    assert _names(c.get_row("t", pk(1), start_column="c")[1]) == ["c", "d", "e"]
    assert _names(c.get_row("t", pk(1), end_column="b")[1]) == ["a"]
    assert _names(c.get_row("t", pk(1), ["a", "c", "e"], start_column="b")[1]) == ["c", "e"]
    _, _, rows, token = c.get_range("t", "FORWARD", c.lo, c.hi, start_column="b", end_column="c")
    assert [_names(r) for r in rows] == [["b"], ["b"]] and token == b""
    req = c.lib.BatchGetRowRequest()
    req.add(c.lib.TableInBatchGetRowItem("t", [pk(1), pk(2)], None, None, 1,
                                         start_column="d", end_column="zz"))
    got = c.batch_get_row(req).get_result_by_table("t")
    assert [_names(item.row) for item in got] == [["d", "e"], ["z"]]
    counter = c.lib.CapacityUnit(0, 0)
    assert [_names(r) for r in c.xget_range("t", "FORWARD", c.lo, c.hi, counter, start_column="e")] \
        == [["e"], ["z"]]


def test_the_filter_sees_only_the_window_and_cu_counts_only_the_window(c):
    C = c.lib.ComparatorType
    put(c, 1, [("big", "x" * 5000), ("small", 1)])
    full, _, _ = c.get_row("t", pk(1))
    windowed, row, _ = c.get_row("t", pk(1), start_column="c")
    assert (full.read, windowed.read) == (2, 1) and _names(row) == ["small"]
    needs_big = c.lib.SingleColumnCondition("big", "y", C.NOT_EQUAL, pass_if_missing=False)
    assert c.get_row("t", pk(1), column_filter=needs_big)[1] is not None
    assert c.get_row("t", pk(1), column_filter=needs_big, start_column="c")[1] is None


def test_window_errors(c):
    _wide(c)
    assert c.error(c.get_row, "t", pk(1), start_column="c", end_column="c") == \
        P400 + ("start_column must be less than end_column.",)
    assert c.error(c.get_range, "t", "FORWARD", c.lo, c.hi, start_column="d", end_column="b") == \
        P400 + ("start_column must be less than end_column.",)
    bad_token = P400 + ("Invalid token: this service returns no next_token to resume from.",)
    assert c.error(c.get_row, "t", pk(1), token=b"\x01") == bad_token
    assert c.error(c.get_range, "t", "FORWARD", c.lo, c.hi, token=b"abc") == bad_token
    req = c.lib.BatchGetRowRequest()
    req.add(c.lib.TableInBatchGetRowItem("t", [pk(1)], None, None, 1, token=[b"abc"]))
    item = c.batch_get_row(req).get_result_by_table("t")[0]
    assert (item.is_ok, item.error_message) == (False, bad_token[2])


# ------------------------------------------------------------ ColumnPaginationFilter

def test_column_pagination_embedded(tmp_path):
    with emb.OTSClient(str(tmp_path / "p")) as client:
        c = Client(client, emb)
        create(client, lib=emb)
        _wide(c)
        page = emb.ColumnPaginationFilter
        assert _names(client.get_row("t", pk(1), column_filter=page(1, 2))[1]) == ["b", "c"]
        assert _names(client.get_row("t", pk(1), column_filter=page(1, 2), start_column="c")[1]) \
            == ["d", "e"]
        assert _names(client.get_row("t", pk(1), ["a", "c", "d", "e"],
                                     column_filter=page(1, 2))[1]) == ["c", "d"]
        _, _, rows, _ = client.get_range("t", "FORWARD", c.lo, c.hi, column_filter=page(1, 1))
        assert [_names(r) for r in rows] == [["b"], ["z"]]
        req = emb.BatchGetRowRequest()
        req.add(emb.TableInBatchGetRowItem("t", [pk(1), pk(2)], None, page(0, 1), 1))
        assert [_names(i.row) for i in client.batch_get_row(req).get_result_by_table("t")] == \
            [["a"], ["b"]]
        bad = P400 + ("Invalid ColumnPaginationFilter: offset must be at least 0 and limit "
                      "greater than 0.",)
        assert c.error(client.get_row, "t", pk(1), column_filter=page(-1, 2)) == bad
        assert c.error(client.get_row, "t", pk(1), column_filter=page(0, 0)) == bad


def _page_filter(offset, limit):
    return fpb.Filter(type=fpb.FT_COLUMN_PAGINATION, filter=fpb.ColumnPaginationFilter(
        offset=offset, limit=limit).SerializeToString()).SerializeToString()


def test_column_pagination_over_the_wire(tmp_path):
    from regions.otsserver.cli import make_server
    srv = make_server(str(tmp_path / "data"), "127.0.0.1", 0, "inst", "ak", "sk").start()
    try:
        client = sdk(srv)
        create(client)
        _wide(Client(client, ts))
        req = pb.GetRowRequest(table_name="t", primary_key=CODEC.encode_row(pk(1)),
                               max_versions=1, filter=_page_filter(1, 2), start_column="a")
        status, data = raw_post(srv, "GetRow", req.SerializeToString())
        assert status == 200
        resp = pb.GetRowResponse()
        resp.ParseFromString(data)
        row = CODEC.decode_row(resp.row)
        assert row.primary_key == pk(1) and [cell.name for cell in row.cells] == ["b", "c"]
        assert not resp.HasField("next_token")
        req = pb.GetRangeRequest(table_name="t", direction=pb.FORWARD, max_versions=1,
                                 inclusive_start_primary_key=CODEC.encode_row(LO),
                                 exclusive_end_primary_key=CODEC.encode_row(HI),
                                 filter=_page_filter(0, 1))
        status, data = raw_post(srv, "GetRange", req.SerializeToString())
        resp = pb.GetRangeResponse()
        resp.ParseFromString(data)
        rows = CODEC.decode_rows(resp.rows)
        assert status == 200 and [[cell.name for cell in r.cells] for r in rows] == [["a"], ["b"]]
        # bad ranges, inside a composite, in a write condition: 400, nothing written
        for flt, message in [
                (_page_filter(0, 0), "Invalid ColumnPaginationFilter: offset must be at least 0 "
                                     "and limit greater than 0."),
                (fpb.Filter(type=fpb.FT_COMPOSITE_COLUMN_VALUE,
                            filter=fpb.CompositeColumnValueFilter(
                                combinator=fpb.LO_NOT,
                                sub_filters=[fpb.Filter.FromString(_page_filter(0, 1))])
                            .SerializeToString()).SerializeToString(),
                 "ColumnPaginationFilter can only be the whole filter of a read.")]:
            req = pb.GetRowRequest(table_name="t", primary_key=CODEC.encode_row(pk(1)),
                                   max_versions=1, filter=flt)
            status, data = raw_post(srv, "GetRow", req.SerializeToString())
            assert (status, error_of(data)) == (400, ("OTSParameterInvalid", message))
        put_req = pb.PutRowRequest(table_name="t", row=CODEC.encode_row(pk(1), [("a", 99)]))
        put_req.condition.row_existence = pb.IGNORE
        put_req.condition.column_condition = _page_filter(0, 1)
        status, data = raw_post(srv, "PutRow", put_req.SerializeToString())
        assert (status, error_of(data)) == (400, (
            "OTSParameterInvalid", "ColumnPaginationFilter can only be the whole filter of a read."))
        assert client.get_row("t", pk(1), ["a"])[1].attribute_columns[0][1] == 0
    finally:
        srv.stop()


def test_a_filter_on_a_primary_key_column_compares_the_key():
    """The service's reading (the Java SDK's UnifiedFilterAdvanceTest): a key
    column is not missing for a filter."""
    with emb.OTSClient(None) as c:
        c.create_table(emb.TableMeta("pkf", [("k", "INTEGER")]), emb.TableOptions(),
                       emb.ReservedThroughput(emb.CapacityUnit(0, 0)))
        for i in range(10):
            c.put_row("pkf", emb.Row([("k", i)], [("a", i)]))
        cond = emb.SingleColumnCondition("k", 5, emb.ComparatorType.GREATER_EQUAL)
        _, _, rows, _ = c.get_range("pkf", "FORWARD", [("k", emb.INF_MIN)], [("k", emb.INF_MAX)],
                                    column_filter=cond)
        assert [r.primary_key[0][1] for r in rows] == [5, 6, 7, 8, 9]


def test_a_filter_value_longer_than_a_column_value_may_be_is_refused():
    with emb.OTSClient(None) as c:
        c.create_table(emb.TableMeta("fv", [("k", "INTEGER")]), emb.TableOptions(),
                       emb.ReservedThroughput(emb.CapacityUnit(0, 0)))
        cond = emb.SingleColumnCondition("Column", "a" * (2 * 1048576 + 1),
                                         emb.ComparatorType.EQUAL)
        with pytest.raises(emb.OTSServiceError) as e:
            c.get_row("fv", [("k", 0)], column_filter=cond)
        assert e.value.message == ("The length of attribute column: 'Column' exceeds the "
                                   "MaxLength:2097152 with CurrentLength:2097153.")
