"""The wire part of the fuzz experiment (regions/soak/fuzz.py describes it):
an in-process regions-server, signed malformed requests of every API, raw
connections, and a well-behaved official-SDK client meanwhile."""
import http.client
import logging
import math
import os
import random
import socket
import struct
import threading
import time

from .fuzzkit import mutate, report, seed_rows, snapshot, table_meta

__all__ = ["run_wire"]

_WIRE_TIMEOUT_S = 1.0          # the fuzzed server's stalled-request limit
_CLIENT_TIMEOUT_S = 10.0       # no reply or close within this is a hang
_KEY_ID, _SECRET, _INSTANCE = "ak", "sk", "inst"


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
    meta, opts, rt = table_meta(ts, "fresh")
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
        self.client.create_table(*table_meta(ts, "t"))
        self.client.create_table(*table_meta(ts, "u"))
        seed_rows(self.client, ts, "t")
        self.before = snapshot(self.client, ts, "t")
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
                self.before = snapshot(self.client, self.ts, "t")
            return
        if status >= 500 or b"Traceback" in data:
            report(s, "crashes", f"wire {what}: HTTP {status} {data[:120]!r}")
            return
        err = pb.Error()
        try:
            err.ParseFromString(data)
        except Exception:  # noqa: BLE001 - any parse failure is the finding
            err.code = ""
        if err.code not in self.codes and err.code not in ("OTSAuthFailed", "OTSParameterInvalid"):
            report(s, "wrong", f"wire {what}: HTTP {status} with unknown error {data[:80]!r}")
        after = snapshot(self.client, self.ts, "t")
        if after != self.before:
            report(s, "wrong", f"wire {what}: a refused request changed rows")
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
                report(s, "hangs", f"wire raw {what}: no reply and no close in {_CLIENT_TIMEOUT_S} s")
                return
            except ConnectionError:
                reply = b""         # reset by the server: a close
        finally:
            sock.close()
        status = reply[9:12]
        # 505: the mutation hit the request line's HTTP version, which the server
        # rightly refuses as HTTP says (RFC 9110 15.6.6); any other 5xx is ours.
        refused_5xx = status.startswith(b"5") and status != b"505"
        if reply and (not reply.startswith(b"HTTP/1.1 ") or refused_5xx or b"Traceback" in reply):
            report(s, "crashes", f"wire raw {what}: {reply[:100]!r}")
        if status == b"200":        # a slow or oddly written head of a valid request: it was applied
            self.before = snapshot(self.client, self.ts, "t")
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
        wire.client.create_table(*table_meta(wire.ts, "good"))
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
    head = ("POST /%s HTTP/1.1\r\nHost: localhost\r\n" % api).encode() + b"".join(
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
    return "head flipped", [mutate(rng, full[:len(full) - len(body)]) + body]


def run_wire(root, seed, count, summary, deadline):
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
                    body, what = mutate(rng, bodies[api]), "flipped"
                status, data = wire.post(api, body)
                wire.check(f"{api} {what}", status, data, api in _WRITES)
            except socket.timeout:
                report(summary, "hangs", f"wire {api}: no reply in {_CLIENT_TIMEOUT_S} s")
    finally:
        good.stop_event.set()
        good.join(_CLIENT_TIMEOUT_S * 2)
        wire.stop()
    for e in good.errors[:5]:
        report(summary, "wrong", f"wire: the well-behaved client saw {e}"[:300])
    summary.verified += good.ops - len(good.errors)
