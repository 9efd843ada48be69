"""Experiment 7: malformed input on the embedded API, on the wire, and to the file parsers.

Three parts share the ``count`` of inputs (30 % / 40 % / 30 %):

* **embedded**: Hypothesis draws calls of ``OTSClient`` (put, update,
  delete, get, get_range, batch get and write, transactions) whose every
  argument may be wrong: types, sizes, names, NaN and infinities, lone
  surrogates, out-of-range integers, oversize batches.  Each call returns or
  raises ``OTSClientError`` / a 4xx ``OTSServiceError``; one that raises
  changes no row (a full GetRange before and after).
* **wire**: against an in-process ``regions-server``, correctly signed
  requests of every API whose protobuf body has bits flipped, is cut or
  spliced, or carries a PlainBuffer row built with wrong tags, types,
  lengths and counts (checksums right, so the decoder is reached) or a
  wrong checksum; and raw connections: garbage bytes, heads cut or sent
  slowly, a Content-Length longer or shorter than the body.  Each gets a
  reply with the service's error code (never a 5xx), or the connection
  closes, within the server's timeout; a refused request changes no row; a
  well-behaved SDK client writing and reading meanwhile sees no error.
* **parsers**: real WAL, table and MANIFEST files, mutated (bits flipped,
  cut, bytes inserted, spans repeated), fed to ``LogReader`` + batch
  replay, ``Table.open`` + a full scan + ``verify``, and ``VersionEdit.decode``:
  each parses or raises ``CorruptionError``, nothing else.
"""
import http.client
import logging
import math
import os
import random
import shutil
import socket
import struct
import threading
import time

import lsm
from lsm import filenames
from lsm.batch import replay
from lsm.errors import LSMError
from lsm.fs import OSFileSystem
from lsm.sstable import Table
from lsm.version import VersionEdit
from lsm.wal import LogReader

from regions.tablestore import OTSClientError, OTSServiceError

from . import Summary, _cli
from .ioerrors import scratch_dir

__all__ = ["run", "main", "SHARES"]

#: How ``count`` is shared among the parts.
SHARES = {"embedded": 0.3, "wire": 0.4, "parsers": 0.3}
_WIRE_TIMEOUT_S = 1.0          # the fuzzed server's stalled-request limit
_CLIENT_TIMEOUT_S = 10.0       # no reply or close within this is a hang
_KEY_ID, _SECRET, _INSTANCE = "ak", "sk", "inst"


def _report(summary, kind, text):
    """Count a failure; keep its text only the first time (the first 60
    characters say which it is), so that one defect does not hide the others."""
    seen = _SEEN.setdefault(id(summary), set())
    if text[:60] in seen:
        setattr(summary, kind, getattr(summary, kind) + 1)
        return
    seen.add(text[:60])
    summary.failure(kind, text)


_SEEN = {}


# --------------------------------------------------------------------- embedded

def _table_meta(ts, name):
    return (ts.TableMeta(name, [("p", "STRING"), ("n", "INTEGER")]), ts.TableOptions(max_version=3),
            ts.ReservedThroughput(ts.CapacityUnit(0, 0)))


def _seed_rows(client, ts, table, rows=20):
    for i in range(rows):
        client.put_row(table, ts.Row([("p", "p%d" % (i % 4)), ("n", i)], [("a", i), ("b", "s%d" % i)]))


def _snapshot(client, ts, table):
    """Every row of ``table`` with every version: what a refused input must leave alone."""
    out, start = [], [("p", ts.INF_MIN), ("n", ts.INF_MIN)]
    while start is not None:
        _, start, rows, _ = client.get_range(table, ts.Direction.FORWARD, start,
                                             [("p", ts.INF_MAX), ("n", ts.INF_MAX)], max_version=3)
        out += [(tuple(r.primary_key), tuple(tuple(c) for c in r.attribute_columns)) for r in rows]
    return out


def _strategies(ts):
    """Hypothesis strategies for the API's arguments, valid and not."""
    from hypothesis import strategies as st
    weird_text = st.sampled_from(["", "\ud800", "a\udfff", "x" * 1100, "名", "\x00", "t" * 256, "9t", "t-t"])
    scalar = st.one_of(
        st.integers(min_value=-2 ** 70, max_value=2 ** 70), st.floats(), st.just(math.nan),
        st.just(math.inf), st.text(max_size=8), weird_text, st.binary(max_size=8),
        st.builds(bytearray, st.binary(max_size=8)), st.booleans(), st.none(),
        st.just(ts.INF_MIN), st.just(ts.INF_MAX), st.just(ts.PK_AUTO_INCR), st.just(b"\xff\xfe"),
        st.builds(lambda n: "v" * n, st.sampled_from([1, 2 << 20, (2 << 20) + 1])))
    name = st.one_of(st.sampled_from(["p", "n", "a", "b"]), weird_text, st.integers(), st.none(), st.binary(max_size=4))
    table = st.one_of(st.just("t"), st.just("t"), weird_text, st.text(max_size=6), st.integers(), st.none(),
                      st.just("no_such"))
    good_pk = st.builds(lambda p, n: [("p", p), ("n", n)], st.sampled_from(["p0", "p1", "p9"]), st.integers(0, 30))
    pk = st.one_of(good_pk, good_pk, st.lists(st.tuples(name, scalar), max_size=5), scalar,
                   st.lists(st.tuples(name, scalar, scalar), max_size=3),
                   st.builds(lambda k: [("n", k[0][1]), ("p", k[1][1])], good_pk))
    cell = st.one_of(st.tuples(name, scalar), st.tuples(name, scalar, scalar), st.tuples(name), scalar)
    cells = st.one_of(st.lists(cell, max_size=6), scalar, st.builds(lambda n: [("c%d" % i, i) for i in range(n)],
                                                                    st.sampled_from([1024, 1025, 5000])))
    row = st.builds(ts.Row, pk, cells)
    update_cells = st.one_of(st.dictionaries(st.sampled_from(["PUT", "DELETE", "DELETE_ALL", "INCREMENT", "BAD"]),
                                             st.lists(cell, max_size=4), max_size=3), cells)
    urow = st.builds(ts.Row, pk, update_cells)
    expectation = st.sampled_from([ts.RowExistenceExpectation.IGNORE, ts.RowExistenceExpectation.EXPECT_EXIST,
                                   ts.RowExistenceExpectation.EXPECT_NOT_EXIST, "EXPECT", None, 7])
    condition = st.one_of(st.none(), st.builds(ts.Condition, expectation), scalar,
                          st.builds(lambda e, c: ts.Condition(e, ts.SingleColumnCondition(c[0], c[-1], ts.ComparatorType.EQUAL)),
                                    expectation, st.tuples(name, scalar)))
    limit = st.one_of(st.none(), st.integers(-3, 6000), scalar)
    columns = st.one_of(st.none(), st.lists(name, max_size=4), scalar,
                        st.builds(lambda n: ["c%d" % i for i in range(n)], st.sampled_from([128, 129])))
    n_rows = st.sampled_from([0, 1, 2, 100, 101, 200, 201])
    return dict(scalar=scalar, table=table, pk=pk, row=row, urow=urow, condition=condition, limit=limit,
                columns=columns, n_rows=n_rows, st=st)


def _call(client, ts, s, data):
    """Draw one call and return (name, thunk)."""
    st = s["st"]
    d = data.draw
    kind = d(st.sampled_from(["put", "update", "delete", "get", "range", "bget", "bwrite", "txn"]))
    table = d(s["table"])
    if kind == "put":
        return kind, lambda: client.put_row(table, d(s["row"]), d(s["condition"]))
    if kind == "update":
        return kind, lambda: client.update_row(table, d(s["urow"]), d(s["condition"]))
    if kind == "delete":
        return kind, lambda: client.delete_row(table, ts.Row(d(s["pk"])), d(s["condition"]))
    if kind == "get":
        return kind, lambda: client.get_row(table, d(s["pk"]), d(s["columns"]), max_version=d(s["limit"]))
    if kind == "range":
        direction = d(st.sampled_from([ts.Direction.FORWARD, ts.Direction.BACKWARD, "SIDEWAYS", None]))
        return kind, lambda: client.get_range(table, direction, d(s["pk"]), d(s["pk"]), d(s["columns"]),
                                              d(s["limit"]), max_version=d(s["limit"]))
    if kind == "bget":
        req = ts.BatchGetRowRequest()
        pks = [d(s["pk"]) for _ in range(min(d(s["n_rows"]), 101))]
        req.add(ts.TableInBatchGetRowItem(table, pks, d(s["columns"]), max_version=d(s["limit"])))
        return kind, lambda: client.batch_get_row(req)
    if kind == "bwrite":
        n = d(s["n_rows"])
        req = ts.BatchWriteRowRequest()
        items = [ts.PutRowItem(ts.Row([("p", "p1"), ("n", i % 30)], [("a", i)]), ts.Condition("IGNORE"))
                 for i in range(n)]
        if items:
            items[d(st.integers(0, n - 1))] = d(st.sampled_from([
                ts.PutRowItem(d(s["row"]), ts.Condition("IGNORE")),
                ts.UpdateRowItem(d(s["urow"]), ts.Condition("IGNORE")),
                ts.DeleteRowItem(ts.Row(d(s["pk"])), ts.Condition("IGNORE"))]))
        req.add(ts.TableInBatchWriteRowItem(table, items))
        return kind, lambda: client.batch_write_row(req)
    key = d(s["pk"])

    def txn():
        tid = client.start_local_transaction(table, key[:1] if isinstance(key, list) else key)
        try:
            client.put_row(table, d(s["row"]), transaction_id=tid)
            client.commit_transaction(tid)
        except BaseException:
            client.abort_transaction(tid)
            raise
    return kind, txn


def _embedded(root, seed, count, summary, deadline):
    import regions.tablestore as ts
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st

    client = ts.OTSClient(os.path.join(root, "embedded"))
    try:
        client.create_table(*_table_meta(ts, "t"))
        _seed_rows(client, ts, "t")
        s = _strategies(ts)
        state = {"before": _snapshot(client, ts, "t")}

        @hseed(seed)
        @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(st.data())
        def one(data):
            if time.monotonic() > deadline:
                return
            summary.cycles += 1
            kind, thunk = _call(client, ts, s, data)
            try:
                thunk()
            except (OTSClientError, OTSServiceError) as e:
                error = e
                if isinstance(e, OTSServiceError) and e.http_status >= 500:
                    _report(summary, "crashes", f"embedded {kind}: {e.http_status} {e.code} {e.message}")
            except Exception as e:  # noqa: BLE001 - the finding
                error = e
                _report(summary, "crashes", f"embedded {kind}: {type(e).__name__}: {e}"[:300])
            else:
                state["before"] = _snapshot(client, ts, "t")     # it was a valid call: the new state
                return
            after = _snapshot(client, ts, "t")
            if after != state["before"]:
                _report(summary, "wrong", f"embedded {kind}: a refused call changed rows: "
                        f"{type(error).__name__}: {error}"[:300])
                state["before"] = after
            summary.verified += 1
        one()
    finally:
        client.close()


# ------------------------------------------------------------------------- wire

def _sdk_bodies():
    """A valid request body of every API (the official SDK's encoder and classes)."""
    import tablestore as ts
    from tablestore.protocol import OTSProtocol
    enc = OTSProtocol(_INSTANCE, "utf8", logging.getLogger("regions.soak.fuzz")).encoder

    def body(api, *args):
        return enc.encode_request(api, *args).SerializeToString()
    pk = [("p", "p1"), ("n", 3)]
    ign = ts.Condition(ts.RowExistenceExpectation.IGNORE)
    bget = ts.BatchGetRowRequest()
    bget.add(ts.TableInBatchGetRowItem("t", [pk, [("p", "p2"), ("n", 4)]], max_version=1))
    bwrite = ts.BatchWriteRowRequest()
    bwrite.add(ts.TableInBatchWriteRowItem("t", [
        ts.PutRowItem(ts.Row(pk, [("a", 1)]), ign),
        ts.UpdateRowItem(ts.Row([("p", "p2"), ("n", 4)], {"put": [("b", "x")], "delete_all": ["a"]}), ign),
        ts.DeleteRowItem(ts.Row([("p", "p3"), ("n", 5)]), ign)]))
    meta, opts, rt = _table_meta(ts, "fresh")
    return {
        "CreateTable": body("CreateTable", meta, opts, rt, None, []),
        "DeleteTable": body("DeleteTable", "gone"),
        "ListTable": body("ListTable"),
        "DescribeTable": body("DescribeTable", "t"),
        # Not "t": a TTL or max_version set by a mutated body changes what a
        # later GetRange of "t" returns with no write at all.
        "UpdateTable": body("UpdateTable", "u", ts.TableOptions(max_version=3), None),
        "GetRow": body("GetRow", "t", pk, ["a"], None, 1, None, None, None, None, None),
        "PutRow": body("PutRow", "t", ts.Row(pk, [("a", 1), ("b", 2.5), ("c", True), ("d", bytearray(b"x"))]),
                       ign, None, None),
        "UpdateRow": body("UpdateRow", "t", ts.Row(pk, {"put": [("a", 2)], "delete": [("b", 1)],
                                                        "increment": [("i", 1)]}), ign, None, None),
        "DeleteRow": body("DeleteRow", "t", pk, ign, None, None),
        "BatchGetRow": body("BatchGetRow", bget),
        "BatchWriteRow": body("BatchWriteRow", bwrite),
        "GetRange": body("GetRange", "t", ts.Direction.FORWARD, [("p", ts.INF_MIN), ("n", ts.INF_MIN)],
                         [("p", ts.INF_MAX), ("n", ts.INF_MAX)], None, 10, None, 1, None, None, None, None, None),
        "StartLocalTransaction": body("StartLocalTransaction", "t", [("p", "p1")]),
        "CommitTransaction": body("CommitTransaction", "no-such-transaction"),
        "AbortTransaction": body("AbortTransaction", "no-such-transaction"),
    }


class _PlainBufferRows:
    """PlainBuffer rows with wrong tags, types, lengths and counts whose
    checksums are right (so the decoder gets past them), or a wrong checksum."""

    def __init__(self, rng):
        from regions.otsserver import plainbuffer as pbuf
        self.rng, self.pb = rng, pbuf

    def _int(self, n, exact):
        r = self.rng.random()
        if r < 0.8:
            return exact
        return self.rng.choice([exact + 1, exact - 1, 0, -1, 2 ** 31 - 1, -2 ** 31, exact * 7 + 3])

    def _variant(self):
        pb, rng = self.pb, self.rng
        vt = rng.choice([pb.VT_INTEGER, pb.VT_DOUBLE, pb.VT_BOOLEAN, pb.VT_STRING, pb.VT_BLOB, pb.VT_INF_MIN,
                         pb.VT_INF_MAX, pb.VT_AUTO_INCREMENT, pb.VT_NULL, 0x0C, 0xFF])
        if vt in (pb.VT_STRING, pb.VT_BLOB):
            data = rng.choice([b"abc", b"\xff\xfe", "é".encode(), b"\xed\xa0\x80", b""])
            return bytes([vt]) + struct.pack("<i", self._int(len(data), len(data))) + data
        size = {pb.VT_INTEGER: 8, pb.VT_DOUBLE: 8, pb.VT_BOOLEAN: 1}.get(vt, 0)
        if vt == pb.VT_DOUBLE and rng.random() < 0.3:
            return bytes([vt]) + struct.pack("<d", rng.choice([math.nan, math.inf]))
        return bytes([vt]) + bytes(rng.randrange(256) for _ in range(self._int(size, size) % 16))

    def _cell(self, out, name):
        pb, rng = self.pb, self.rng
        out.append(self._tag(pb.TAG_CELL))
        out.append(self._tag(pb.TAG_CELL_NAME))
        out += struct.pack("<i", self._int(len(name), len(name))) + name
        crc = pb.crc8(0, name)
        if rng.random() < 0.9:
            variant = self._variant()
            out.append(self._tag(pb.TAG_CELL_VALUE))
            out += struct.pack("<i", self._int(len(variant), len(variant))) + variant
            crc = pb.crc8(crc, variant)
        op = rng.choice([None, None, pb.DELETE_ALL_VERSION, pb.DELETE_ONE_VERSION, pb.INCREMENT, 0x2, 0x77])
        if op is not None:
            out += bytes([self._tag(pb.TAG_CELL_TYPE), op])
        if rng.random() < 0.4:
            ts = struct.pack("<q", rng.choice([0, -1, 1700000000000, 2 ** 63 - 1]))
            out.append(self._tag(pb.TAG_CELL_TIMESTAMP))
            out += ts
            crc = pb.crc8(crc, ts)
        if op is not None:
            crc = pb.CRC8_TABLE[crc ^ op]
        out += bytes([self._tag(pb.TAG_CELL_CHECKSUM), crc])
        return crc

    def _tag(self, tag):
        return tag if self.rng.random() < 0.97 else self.rng.randrange(0x0C)

    def row(self):
        pb, rng = self.pb, self.rng
        out = bytearray(struct.pack("<i", pb.HEADER if rng.random() < 0.97 else 0x76))
        out.append(self._tag(pb.TAG_ROW_PK))
        row_crc = 0
        for name in rng.choice([[b"p", b"n"], [b"p"], [], [b"n", b"p"], [b"p", b"n", b"x"], [b"", b"n"]]):
            row_crc = pb.CRC8_TABLE[row_crc ^ self._cell(out, name)]
        if rng.random() < 0.7:
            out.append(self._tag(pb.TAG_ROW_DATA))
            for name in rng.sample([b"a", b"b", b"a", b"\xff", b"p"], rng.randrange(4)):
                row_crc = pb.CRC8_TABLE[row_crc ^ self._cell(out, name)]
        marker = rng.random() < 0.2
        if marker:
            out.append(self._tag(pb.TAG_DELETE_ROW_MARKER))
        row_crc = pb.CRC8_TABLE[row_crc ^ (1 if marker else 0)]
        out += bytes([self._tag(pb.TAG_ROW_CHECKSUM), row_crc if rng.random() < 0.9 else row_crc ^ 0x5A])
        if rng.random() < 0.05:
            del out[rng.randrange(len(out)):]
        return bytes(out)


def _plainbuffer_body(api, rows):
    from tablestore.protobuf import table_store_pb2 as pb
    ign = pb.Condition(row_existence=pb.IGNORE)
    field = {"PutRow": "row", "UpdateRow": "row_change", "DeleteRow": "primary_key"}.get(api)
    if field is not None:
        return getattr(pb, api + "Request")(table_name="t", condition=ign, **{field: rows.row()}).SerializeToString()
    if api == "GetRow":
        return pb.GetRowRequest(table_name="t", primary_key=rows.row(), max_versions=1).SerializeToString()
    if api == "GetRange":
        return pb.GetRangeRequest(table_name="t", direction=pb.FORWARD, max_versions=1,
                                  inclusive_start_primary_key=rows.row(),
                                  exclusive_end_primary_key=rows.row()).SerializeToString()
    req = pb.BatchWriteRowRequest()
    t = req.tables.add(table_name="t")
    for _ in range(rows.rng.randrange(1, 4)):
        t.rows.add(type=rows.rng.choice([pb.PUT, pb.UPDATE, pb.DELETE]), row_change=rows.row(), condition=ign)
    return req.SerializeToString()


def _mutate(rng, data: bytes) -> bytes:
    """Bits flipped, a cut, bytes inserted, a span repeated or deleted."""
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 3])):
        what = rng.random()
        if what < 0.5 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif what < 0.65:
            del b[rng.randrange(len(b) + 1):]
        elif what < 0.8:
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif b:
            i = rng.randrange(len(b))
            j = min(len(b), i + rng.randrange(1, 32))
            if rng.random() < 0.5:
                b[i:i] = b[i:j]
            else:
                del b[i:j]
    return bytes(b)


class _Wire:
    """An in-process regions-server, a signer and the checks of one reply."""

    def __init__(self, root, summary):
        import regions.tablestore as ts
        from tablestore.auth import RequestContext, SignV2
        from tablestore.credentials import Credentials
        from tablestore.protocol import OTSProtocol
        from regions.otsserver.cli import make_server
        from regions.tablestore.errors import ERRORS
        self.ts, self.summary = ts, summary
        self.codes = {code for _status, code, _msg in ERRORS.values()}
        self.srv = make_server(os.path.join(root, "wire"), "127.0.0.1", 0, _INSTANCE, _KEY_ID, _SECRET,
                               timeout_s=_WIRE_TIMEOUT_S, console=False).start()
        self.client = self.srv.service.client
        self.client.create_table(*_table_meta(ts, "t"))
        self.client.create_table(*_table_meta(ts, "u"))
        _seed_rows(self.client, ts, "t")
        self.before = _snapshot(self.client, ts, "t")
        self._proto = OTSProtocol(_INSTANCE, "utf8", logging.getLogger("regions.soak.fuzz"))
        self._signer, self._ctx = SignV2("utf8"), RequestContext(Credentials(_KEY_ID, _SECRET))
        self.conn = None

    def headers(self, api, body):
        return self._proto._make_request_headers(body, "/" + api, self._signer, self._ctx)

    def post(self, api, body):
        """(status, reply body) of a signed POST, on a kept-alive connection."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(*self.srv.server_address[:2], timeout=_CLIENT_TIMEOUT_S)
            try:
                self.conn.request("POST", "/" + api, body=body, headers=self.headers(api, body))
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.will_close:
                    self.close_conn()
                return resp.status, data
            except socket.timeout:
                self.close_conn()
                raise
            except (ConnectionError, http.client.HTTPException):
                self.close_conn()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close_conn(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def check(self, what, status, data, write):
        """A reply to a malformed request: 200, or the service's error code in a 4xx."""
        from tablestore.protobuf import table_store_pb2 as pb
        s = self.summary
        if status == 200:
            if write:
                self.before = _snapshot(self.client, self.ts, "t")
            return
        if status >= 500 or b"Traceback" in data:
            _report(s, "crashes", f"wire {what}: HTTP {status} {data[:120]!r}")
            return
        err = pb.Error()
        try:
            err.ParseFromString(data)
        except Exception:  # noqa: BLE001 - any parse failure is the finding
            err.code = ""
        if err.code not in self.codes and err.code not in ("OTSAuthFailed", "OTSParameterInvalid"):
            _report(s, "wrong", f"wire {what}: HTTP {status} with unknown error {data[:80]!r}")
        after = _snapshot(self.client, self.ts, "t")
        if after != self.before:
            _report(s, "wrong", f"wire {what}: a refused request changed rows")
            self.before = after
        s.verified += 1

    def raw(self, what, chunks, pause=0.0):
        """Send raw ``chunks`` on a new connection; the server must answer (4xx, never 5xx)
        or close within the client timeout."""
        s = self.summary
        sock = socket.create_connection(self.srv.server_address[:2], timeout=_CLIENT_TIMEOUT_S)
        try:
            try:
                for c in chunks:
                    sock.sendall(c)
                    if pause:
                        time.sleep(pause)
                if what.endswith("closed"):
                    sock.shutdown(socket.SHUT_WR)
                reply = b""
                while b"\r\n\r\n" not in reply:
                    data = sock.recv(65536)
                    if not data:
                        break
                    reply += data
            except socket.timeout:
                _report(s, "hangs", f"wire raw {what}: no reply and no close in {_CLIENT_TIMEOUT_S} s")
                return
            except ConnectionError:
                reply = b""         # reset by the server: a close
        finally:
            sock.close()
        status = reply[9:12]
        if reply and (not reply.startswith(b"HTTP/1.1 ") or status.startswith(b"5") or b"Traceback" in reply):
            _report(s, "crashes", f"wire raw {what}: {reply[:100]!r}")
        if status == b"200":        # a slow or oddly written head of a valid request: it was applied
            self.before = _snapshot(self.client, self.ts, "t")
        s.verified += 1

    def stop(self):
        self.close_conn()
        self.srv.stop()


class _GoodClient(threading.Thread):
    """A well-behaved official-SDK client writing and reading its own table meanwhile."""

    def __init__(self, wire):
        super().__init__(name="fuzz-good-client", daemon=True)
        import tablestore as sdk
        self.sdk_mod = sdk
        self.sdk = sdk.OTSClient(wire.srv.endpoint, _KEY_ID, _SECRET, _INSTANCE,
                                 retry_policy=sdk.NoRetryPolicy(), socket_timeout=_CLIENT_TIMEOUT_S)
        wire.client.create_table(*_table_meta(wire.ts, "good"))
        self.stop_event, self.errors, self.ops = threading.Event(), [], 0

    def run(self):
        sdk = self.sdk_mod
        i = 0
        while not self.stop_event.is_set():
            pk = [("p", "g"), ("n", i % 50)]
            try:
                self.sdk.put_row("good", sdk.Row(pk, [("v", i)]))
                _, row, _ = self.sdk.get_row("good", pk, max_version=1)
                if row is None or row.attribute_columns[0][1] != i:
                    self.errors.append(f"row {pk} reads {row and row.attribute_columns}")
            except Exception as e:  # noqa: BLE001 - any error is the finding
                self.errors.append(f"{type(e).__name__}: {e}")
            i += 1
            self.ops += 2
            time.sleep(0.002)


_WRITES = {"PutRow", "UpdateRow", "DeleteRow", "BatchWriteRow", "CreateTable", "DeleteTable", "UpdateTable",
           "StartLocalTransaction", "CommitTransaction", "AbortTransaction"}
_PLAINBUFFER_APIS = ("PutRow", "UpdateRow", "DeleteRow", "GetRow", "GetRange", "BatchWriteRow")


def _raw_cases(wire, rng, api, body):
    head = ("POST /%s HTTP/1.1\r\nHost: x\r\n" % api).encode() + b"".join(
        ("%s: %s\r\n" % kv).encode() for kv in wire.headers(api, body).items())
    full = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    k = rng.randrange(7)
    if k == 0:
        return "garbage", [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) + b"\r\n\r\n"]
    if k == 1:
        return "head cut, closed", [full[:rng.randrange(1, len(head))]]
    if k == 2:
        return "slow head", [full[i:i + 40] for i in range(0, len(full), 40)][:6] + [full[240:]], 0.01
    if k == 3:
        return "content-length too long", [head + b"Content-Length: %d\r\n\r\n" % (len(body) + 5) + body]
    if k == 4:
        return "content-length too short", [head + b"Content-Length: %d\r\n\r\n" % max(0, len(body) - 3) + body]
    if k == 5:
        return "content-length bad", [head + rng.choice([b"Content-Length: -1\r\n\r\n", b"Content-Length: 1e3\r\n\r\n",
                                                         b"Content-Length: 99999999999\r\n\r\n"]) + body]
    return "head flipped", [_mutate(rng, full[:len(full) - len(body)]) + body]


def _wire(root, seed, count, summary, deadline):
    rng = random.Random(seed)
    wire = _Wire(root, summary)
    good = _GoodClient(wire)
    good.start()
    try:
        bodies = _sdk_bodies()
        rows = _PlainBufferRows(rng)
        apis = sorted(bodies)
        for i in range(count):
            if time.monotonic() > deadline:
                break
            summary.cycles += 1
            api = apis[i % len(apis)]
            r = rng.random()
            try:
                if r < 0.05:
                    case = _raw_cases(wire, rng, api, bodies[api])
                    wire.raw(*case)
                    continue
                if r < 0.35 and api in _PLAINBUFFER_APIS:
                    body, what = _plainbuffer_body(api, rows), "plainbuffer"
                else:
                    body, what = _mutate(rng, bodies[api]), "flipped"
                status, data = wire.post(api, body)
                wire.check(f"{api} {what}", status, data, api in _WRITES)
            except socket.timeout:
                _report(summary, "hangs", f"wire {api}: no reply in {_CLIENT_TIMEOUT_S} s")
    finally:
        good.stop_event.set()
        good.join(_CLIENT_TIMEOUT_S * 2)
        wire.stop()
    for e in good.errors[:5]:
        _report(summary, "wrong", f"wire: the well-behaved client saw {e}"[:300])
    summary.verified += good.ops - len(good.errors)


# ---------------------------------------------------------------------- parsers

def _real_files(root):
    """A real WAL, table and MANIFEST: {kind: bytes}."""
    path = os.path.join(root, "files")
    db = lsm.DB.open(path, lsm.Options(background=False, block_size=256, compression=True,
                                       compression_min_level=0))
    try:
        for i in range(60):
            db.put(b"key%03d" % i, b"value %d " % i * (1 + i % 5))
        db.flush()
        b = lsm.WriteBatch()
        for i in range(0, 60, 7):
            b.delete(b"key%03d" % i)
            b.put(b"new%03d" % i, b"x" * i)
        db.write(b)
        for i in range(5):
            db.put(b"wal%d" % i, b"y" * 40 * i)
        names = os.listdir(path)

        def first(kind):
            return next(os.path.join(path, n) for n in sorted(names) if (filenames.parse(n) or ("",))[0] == kind
                        and os.path.getsize(os.path.join(path, n)))
        files = {k: open(first(k), "rb").read() for k in ("log", "sst", "manifest")}
    finally:
        db.close()
    return files


def _parse_log(data, _path):
    for _entry in replay(LogReader(data, "<fuzzed log>")):
        pass


def _parse_table(data, path):
    with open(path, "wb") as f:
        f.write(data)
    t = Table.open(OSFileSystem().open_read(path), lsm.Options(), name=path)
    try:
        t.verify()
        it = t.iterator()
        it.seek_to_first()
        while it.valid():
            it.key(), it.value()
            it.next()
        it.seek(b"key030")
        t.may_contain(b"key030")
    finally:
        t.close()


def _parse_manifest(data, _path):
    for rec in LogReader(data, "<fuzzed manifest>"):
        VersionEdit.decode(rec)


def _parsers(root, seed, count, summary, deadline):
    rng = random.Random(seed)
    files = _real_files(root)
    scratch = os.path.join(root, "fuzzed.sst")
    parsers = (("log", _parse_log), ("sst", _parse_table), ("manifest", _parse_manifest))
    records = [r for r in LogReader(files["manifest"], "m")]
    for i in range(count):
        if time.monotonic() > deadline:
            break
        summary.cycles += 1
        kind, parse = parsers[i % 3]
        data = _mutate(rng, files[kind])
        if kind == "manifest" and i % 2:
            data, parse = _mutate(rng, rng.choice(records)), lambda d, _p: VersionEdit.decode(d)
        try:
            parse(data, scratch)
        except LSMError:
            pass
        except Exception as e:  # noqa: BLE001 - the finding
            _report(summary, "crashes", f"parser {kind}: {type(e).__name__}: {e}"[:300])
            continue
        summary.verified += 1


# -------------------------------------------------------------------------- run

def run(seed=0, count=None, seconds=None, dir=None) -> Summary:
    """``count`` inputs (default 10,000) shared by the three parts, within ``seconds``."""
    count = 10_000 if count is None else count
    summary = Summary("fuzz", seed, "malformed API calls, wire requests, files")
    start = time.monotonic()
    root = scratch_dir(dir)
    quiet = [logging.getLogger(n) for n in ("regions", "lsm", "tablestore", "regions.otsserver")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.CRITICAL)
    try:
        parts = (("embedded", _embedded), ("wire", _wire), ("parsers", _parsers))
        for n, (name, part) in enumerate(parts):
            share = int(count * SHARES[name])
            budget = None if seconds is None else start + seconds * (n + 1) / len(parts)
            part(root, seed, share, summary, budget if budget is not None else float("inf"))
    finally:
        for q, lv in zip(quiet, levels):
            q.setLevel(lv)
        shutil.rmtree(root, ignore_errors=True)
        _SEEN.pop(id(summary), None)
    summary.seconds = time.monotonic() - start
    return summary


def main(argv=None) -> int:
    return _cli.main("fuzz", __doc__, run, argv, "inputs (default 10,000)")
