"""Atomic counters read back: UpdateRow's ReturnType RT_AFTER_MODIFY with
``return_column_names``, embedded and over the wire.

The Python SDK 6.4.8 cannot ask for it (its ReturnType has RT_NONE and RT_PK
only); the Java SDK's ``ReturnType.RT_AFTER_MODIFY`` + ``addReturnColumn`` and
the ex_aliyun_ots SDK's ``return_type: after_modify, return_columns: [...]``
can.  What the service does, from their tests against it (the Java SDK's
functiontest/IncrementRequest.java, ex_aliyun_ots's atomic_increment tests):
the row returned holds the named INCREMENT columns' new values and no primary
key; naming a column the update puts, or one it does not touch, is refused
and changes nothing, and so is naming any with RT_PK; BatchWriteRow's update
rows return them too.  Over the wire the official SDK sends the request (its
protobuf given the return content its encoder cannot write) and checks the
answer's signature; the returned row is read from the protobuf, since the
SDK's reader wants a TAG_ROW_PK the service's row does not carry.
"""
import logging
import time

import pytest
import tablestore as ts
from tablestore.plainbuffer.plain_buffer_coded_stream import PlainBufferCodedInputStream
from tablestore.plainbuffer.plain_buffer_stream import PlainBufferInputStream
from tablestore.protobuf import table_store_pb2 as pb

import regions.tablestore as emb

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)

AFTER = emb.ReturnType.RT_AFTER_MODIFY
PK = [("k", 1)]
P = (400, "OTSParameterInvalid")


@pytest.fixture
def client(ots_client):
    ots_client.create_table(emb.TableMeta("t", [("k", "INTEGER")]))
    return ots_client


def stored(client, pk=PK):
    row = client.get_row("t", pk)[1]
    return None if row is None else row.attribute_columns


def refused(client, call, message):
    before = stored(client)
    with pytest.raises(emb.OTSServiceError) as info:
        call()
    assert (info.value.get_http_status(), info.value.get_error_code(),
            info.value.get_error_message()) == P + (message,)
    assert stored(client) == before


def test_update_row_returns_the_new_values_of_the_named_increment_columns(client):
    for i in (1, 2, 3):
        consumed, row = client.update_row(
            "t", emb.Row(PK, {"put": [("name", "x")], "increment": [("count", 1), ("other", 10)]}),
            None, AFTER, return_column_names=["count"])
        assert consumed.write == 1
        assert row.primary_key == [] and [c[:2] for c in row.attribute_columns] == [("count", i)]
        # the version returned is the one stored
        assert row.attribute_columns[0] in stored(client)
    _, row = client.update_row("t", emb.Row(PK, {"increment": [("other", -5), ("count", 2)]}),
                               None, AFTER, return_column_names=["other", "count", "other"])
    assert [c[:2] for c in row.attribute_columns] == [("count", 5), ("other", 25)]
    # RT_AFTER_MODIFY naming nothing returns nothing; the update is made
    assert client.update_row("t", emb.Row(PK, {"increment": [("count", 1)]}), None, AFTER)[1] \
        is None
    assert dict((n, v) for n, v, _ in stored(client))["count"] == 6


def test_return_columns_that_are_not_increments_of_the_update_are_refused(client):
    client.put_row("t", emb.Row(PK, [("count", 1), ("price", 7)]))
    update = emb.Row(PK, {"increment": [("count", 1)], "put": [("price", 8)]})
    refused(client, lambda: client.update_row("t", update, None, AFTER,
                                              return_column_names=["count", "price"]),
            "The column to return must be an INCREMENT column of the update: price.")
    refused(client, lambda: client.update_row("t", update, None, AFTER,
                                              return_column_names=["untouched"]),
            "The column to return must be an INCREMENT column of the update: untouched.")
    for rt in (emb.ReturnType.RT_PK, emb.ReturnType.RT_NONE, None):
        refused(client, lambda: client.update_row("t", update, None, rt,
                                                  return_column_names=["count"]),
                "Return column names can only be given with ReturnType RT_AFTER_MODIFY.")
    refused(client, lambda: client.put_row("t", emb.Row(PK, [("count", 9)]), None, AFTER),
            "Invalid return type: RT_AFTER_MODIFY.")
    refused(client, lambda: client.delete_row("t", emb.Row(PK), None, AFTER),
            "Invalid return type: RT_AFTER_MODIFY.")
    refused(client, lambda: client.put_row("t", emb.Row(PK, [("count", 9)]), None,
                                           return_column_names=["count"]),
            "Return column names can only be given with ReturnType RT_AFTER_MODIFY.")


def test_batch_update_rows_return_their_increment_columns(client):
    """ex_aliyun_ots's atomic increment test: an RT_AFTER_MODIFY update and an
    RT_PK put in one batch."""
    client.put_row("t", emb.Row([("k", 1)], [("count", 3)]))
    req = emb.BatchWriteRowRequest()
    req.add(emb.TableInBatchWriteRowItem("t", [
        emb.UpdateRowItem(emb.Row([("k", 1)], {"put": [("attr1", "x")],
                                              "increment": [("count", -1), ("count2", 2)]}),
                          emb.Condition("EXPECT_EXIST", emb.SingleColumnCondition(
                              "count", 3, emb.ComparatorType.EQUAL)),
                          AFTER, ["count", "count2"]),
        emb.PutRowItem(emb.Row([("k", 2)], [("count", 0)]), emb.Condition("EXPECT_NOT_EXIST"),
                       emb.ReturnType.RT_PK),
        emb.UpdateRowItem(emb.Row([("k", 3)], {"increment": [("count", 1)]}),
                          None, AFTER, ["nope"])]))
    resp = client.batch_write_row(req)
    update, bad = resp.get_update_by_table("t")
    assert update.is_ok and update.row.primary_key == []
    assert [c[:2] for c in update.row.attribute_columns] == [("count", 2), ("count2", 2)]
    assert resp.get_put_by_table("t")[0].row.primary_key == [("k", 2)]
    assert (bad.is_ok, bad.error_code, bad.error_message) == (
        False, "OTSParameterInvalid",
        "The column to return must be an INCREMENT column of the update: nope.")
    assert stored(client, [("k", 3)]) is None
    # a put item naming return columns never takes the C batch path
    req = emb.BatchWriteRowRequest()
    req.add(emb.TableInBatchWriteRowItem("t", [
        emb.PutRowItem(emb.Row([("k", 4)], [("count", 0)]), None, None, ["count"])]))
    item = client.batch_write_row(req).get_put_by_table("t")[0]
    assert (item.is_ok, item.error_message) == (
        False, "Return column names can only be given with ReturnType RT_AFTER_MODIFY.")
    assert stored(client, [("k", 4)]) is None


def test_in_a_local_transaction_the_values_are_the_transactions(client):
    client.update_row("t", emb.Row(PK, {"increment": [("count", 5)]}), None)
    txn = client.start_local_transaction("t", PK)
    _, row = client.update_row("t", emb.Row(PK, {"increment": [("count", 1)]}), None, AFTER,
                               transaction_id=txn, return_column_names=["count"])
    assert [c[:2] for c in row.attribute_columns] == [("count", 6)]
    assert dict((n, v) for n, v, _ in stored(client))["count"] == 5     # not committed yet
    client.commit_transaction(txn)
    assert dict((n, v) for n, v, _ in stored(client))["count"] == 6


# ----------------------------------------------------------------- the wire

def sdk_with_return_content(server, monkeypatch, return_columns, return_type=pb.RT_AFTER_MODIFY):
    """The official SDK's client whose requests ask for ``return_type`` (None:
    the SDK's own) with ``return_columns`` (one list per request row; None:
    that row asks for nothing) and whose requests (``update_row``,
    ``_request_helper``) return the response's protobuf."""
    client = server.client()
    encode = client.protocol.encoder.encode_request

    def encode_request(api, *args, **kwargs):
        proto = encode(api, *args, **kwargs)
        rows = [proto] if api == "UpdateRow" else [r for t in proto.tables for r in t.rows]
        for row, names in zip(rows, return_columns):
            if names is not None:
                if return_type is not None:
                    row.return_content.return_type = return_type
                row.return_content.return_column_names.extend(names)
        return proto

    monkeypatch.setattr(client.protocol.encoder, "encode_request", encode_request)
    monkeypatch.setattr(client.protocol, "parse_response",
                        lambda api, status, headers, body:
                        getattr(pb, api + "Response").FromString(body))
    return client


def read_returned_row(data):
    """A returned RT_AFTER_MODIFY row: no TAG_ROW_PK after the header; its
    cells and checksums read by the SDK's own reader (the tag added back,
    which no checksum covers)."""
    assert data[4] == 0x02                     # TAG_ROW_DATA right after the header
    stream = PlainBufferCodedInputStream(PlainBufferInputStream(data[:4] + b"\x01" + data[4:]))
    return stream.read_row()


def test_over_the_wire_the_sdk_gets_the_new_values_without_the_key(ots_server, monkeypatch):
    plain = ots_server.client()
    plain.create_table(ts.TableMeta("t", [("k", "INTEGER")]), ts.TableOptions(),
                       ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
    c = sdk_with_return_content(ots_server, monkeypatch, [["count"]])
    for i in (1, 2):
        resp = c.update_row("t", ts.Row(PK, {"put": [("name", "x")],
                                              "increment": [("count", 1), ("other", 3)]}), None)
        assert resp.consumed.capacity_unit.write == 1
        pk, columns = read_returned_row(resp.row)
        assert pk == [] and [col[:2] for col in columns] == [("count", i)]
        assert columns[0][2] == plain.get_row("t", PK, ["count"])[1].attribute_columns[0][2]
    # refused, and nothing changes
    before = plain.get_row("t", PK)[1].attribute_columns
    for names, message in ((["name"], "The column to return must be an INCREMENT column of "
                                      "the update: name."),
                           (["absent"], "The column to return must be an INCREMENT column of "
                                        "the update: absent.")):
        c = sdk_with_return_content(ots_server, monkeypatch, [names])
        with pytest.raises(ts.OTSServiceError) as info:
            c.update_row("t", ts.Row(PK, {"put": [("name", "y")], "increment": [("count", 1)]}),
                         None)
        assert (info.value.get_http_status(), info.value.get_error_code(),
                info.value.get_error_message()) == P + (message,)
    assert plain.get_row("t", PK)[1].attribute_columns == before
    # names with RT_PK: refused as the service does
    c = sdk_with_return_content(ots_server, monkeypatch, [["count"]], return_type=None)
    with pytest.raises(ts.OTSServiceError) as info:
        c.update_row("t", ts.Row(PK, {"increment": [("count", 1)]}), None, ts.ReturnType.RT_PK)
    assert (info.value.get_http_status(), info.value.get_error_code(),
            info.value.get_error_message()) == P + (
        "Return column names can only be given with ReturnType RT_AFTER_MODIFY.",)
    assert plain.get_row("t", PK)[1].attribute_columns == before


def test_over_the_wire_batch_update_rows_return_their_values(ots_server, monkeypatch):
    plain = ots_server.client()
    plain.create_table(ts.TableMeta("t", [("k", "INTEGER")]), ts.TableOptions(),
                       ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
    c = sdk_with_return_content(ots_server, monkeypatch, [["count"], None, ["name"]])
    req = ts.BatchWriteRowRequest()
    req.add(ts.TableInBatchWriteRowItem("t", [
        ts.UpdateRowItem(ts.Row([("k", 1)], {"increment": [("count", 10)]}), None),
        ts.PutRowItem(ts.Row([("k", 2)], [("count", 0)]), None, ts.ReturnType.RT_PK),
        ts.UpdateRowItem(ts.Row([("k", 3)], {"put": [("name", "x")]}), None)]))
    resp = c._request_helper("BatchWriteRow", req)      # batch_write_row less its wrapper
    update, put, bad = resp.tables[0].rows
    assert update.is_ok and [col[:2] for col in read_returned_row(update.row)[1]] == [("count", 10)]
    assert put.is_ok and put.row      # its primary key, as before
    assert not bad.is_ok and bad.error.message == \
        "The column to return must be an INCREMENT column of the update: name."
    assert plain.get_row("t", [("k", 3)])[1] is None
    assert plain.get_row("t", [("k", 1)])[1].attribute_columns[0][:2] == ("count", 10)
