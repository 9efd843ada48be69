"""The HTTP layer alone (a stub service): signing, errors, limits, keep-alive, bad clients."""
import asyncio
import contextlib
import http.client
import logging
import socket
import threading

import pytest
import tablestore
from tablestore.auth import RequestContext, SignV2
from tablestore.credentials import Credentials
from tablestore.protobuf import table_store_pb2 as pb
from tablestore.protocol import OTSProtocol

from regions.otsserver.auth import Authenticator
from regions.otsserver.errors import WireError
from regions.otsserver.http import OTSServer

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)


class StubService:
    """ListTable answers; Boom raises a Tablestore error; anything else is unknown."""

    def __init__(self):
        self.calls = []
        self.closed = False
        self.gate = None

    def metered(self, api):
        return contextlib.nullcontext()

    def handle(self, api, body):
        self.calls.append(api)
        if api == "ListTable":
            if self.gate is not None:
                self.gate.wait(5)
            return pb.ListTableResponse(table_names=["t1", "t2"]).SerializeToString()
        if api == "Boom":
            raise WireError(409, "OTSObjectAlreadyExist", "Requested table already exists.")
        if api == "Crash":
            raise RuntimeError("bug")
        raise WireError(400, "OTSParameterInvalid", "Unsupported operation: %s." % api)

    def close(self):
        self.closed = True


@pytest.fixture
def server():
    service = StubService()
    srv = OTSServer("127.0.0.1", 0, service, Authenticator("inst", {"ak": "sk"}),
                    max_body=1024, timeout_s=2.0).start()
    yield srv
    srv.stop()


def client(srv, secret="sk", **kw):
    return tablestore.OTSClient(srv.endpoint, "ak", secret, "inst",
                                retry_policy=tablestore.NoRetryPolicy(), **kw)


def signed(api, body=b""):
    proto = OTSProtocol("inst", "utf8", logging.getLogger("t"))
    return proto._make_request_headers(body, "/" + api, SignV2("utf8"),
                                       RequestContext(Credentials("ak", "sk")))


def raw_post(srv, api, body=b"", headers=None):
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=5)
    conn.request("POST", "/" + api, body=body, headers=headers or signed(api, body))
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp, data


def error_of(data):
    err = pb.Error()
    err.ParseFromString(data)
    return err.code, err.message


def test_sdk_v2_and_v4_clients_accept_signed_responses(server):
    assert client(server).list_table() == ("t1", "t2")
    assert client(server, region="cn-local").list_table() == ("t1", "t2")


def test_async_sdk_client(server):
    async def run():
        async with tablestore.AsyncOTSClient(server.endpoint, "ak", "sk", "inst",
                                             retry_policy=tablestore.NoRetryPolicy()) as c:
            return await c.list_table()
    assert asyncio.run(run()) == ("t1", "t2")


def test_wrong_secret_reaches_the_sdk_as_otsauthfailed(server):
    with pytest.raises(tablestore.OTSServiceError) as e:
        client(server, secret="nope").list_table()
    assert (e.value.get_http_status(), e.value.get_error_code(), e.value.get_error_message()) == \
        (403, "OTSAuthFailed", "Signature mismatch.")
    assert "ListTable" not in server.service.calls


def test_service_errors_are_signed_protobuf_errors(server):
    resp, data = raw_post(server, "Boom")
    assert resp.status == 409
    assert error_of(data) == ("OTSObjectAlreadyExist", "Requested table already exists.")
    assert resp.getheader("authorization", "").startswith("OTS ak:")
    assert resp.getheader("x-ots-requestid")


def test_unknown_api_and_internal_error(server):
    resp, data = raw_post(server, "NoSuchApi")
    assert (resp.status, error_of(data)) == (400, ("OTSParameterInvalid",
                                                   "Unsupported operation: NoSuchApi."))
    resp, data = raw_post(server, "Crash")
    assert (resp.status, error_of(data)) == (500, ("OTSInternalServerError", "Internal server error."))


def test_other_methods_get_405(server):
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    conn.request("GET", "/ListTable")
    resp = conn.getresponse()
    assert resp.status == 405 and error_of(resp.read())[0] == "OTSMethodNotAllowed"


def test_oversize_body_gets_413_without_reaching_the_service(server):
    body = b"x" * 2048
    resp, data = raw_post(server, "ListTable", body)
    assert (resp.status, error_of(data)) == (413, ("OTSRequestBodyTooLarge",
                                                   "The size of POST data is too large."))
    assert server.service.calls == []


def test_garbage_request_line_gets_a_tablestore_error(server):
    with socket.create_connection(server.server_address[:2], timeout=5) as s:
        s.sendall(b"\x00\x01garbage\r\n\r\n")
        data = s.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert error_of(body)[0] == "OTSParameterInvalid"


def test_truncated_body_then_half_close_gets_an_error(server):
    headers = signed("ListTable", b"abcdef")
    with socket.create_connection(server.server_address[:2], timeout=5) as s:
        lines = ["POST /ListTable HTTP/1.1", "Host: localhost", "Content-Length: 6"]
        lines += ["%s: %s" % kv for kv in headers.items()]
        s.sendall(("\r\n".join(lines) + "\r\n\r\nabc").encode())
        s.shutdown(socket.SHUT_WR)
        data = s.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert error_of(body)[0] == "OTSParameterInvalid"
    assert server.service.calls == []


def test_stalled_body_times_out_with_408(server):
    headers = signed("ListTable", b"abcdef")
    with socket.create_connection(server.server_address[:2], timeout=10) as s:
        lines = ["POST /ListTable HTTP/1.1", "Host: localhost", "Content-Length: 6"]
        lines += ["%s: %s" % kv for kv in headers.items()]
        s.sendall(("\r\n".join(lines) + "\r\n\r\nabc").encode())
        data = s.recv(65536)  # the server's 2 s timeout answers
    assert data.startswith(b"HTTP/1.1 408")


def test_slow_clients_do_not_block_others_and_keepalive_reuses_one_connection(server):
    idle = [socket.create_connection(server.server_address[:2]) for _ in range(5)]
    try:
        idle[0].sendall(b"POST /ListTable HTTP/1.1\r\nContent-Length: 10\r\n")  # half a request
        c = client(server)
        assert [c.list_table() for _ in range(3)] == [("t1", "t2")] * 3
        conn = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
        for _ in range(3):
            conn.request("POST", "/ListTable", body=b"", headers=signed("ListTable"))
            resp = conn.getresponse()
            assert resp.status == 200 and resp.read() is not None
        assert conn.sock is not None  # still the first socket: keep-alive held
    finally:
        for s in idle:
            s.close()


def test_stop_waits_for_requests_in_flight_then_closes_the_service():
    service = StubService()
    service.gate = threading.Event()
    srv = OTSServer("127.0.0.1", 0, service, Authenticator("inst", {"ak": "sk"})).start()
    results = []
    t = threading.Thread(target=lambda: results.append(client(srv).list_table()))
    t.start()
    while "ListTable" not in service.calls:
        threading.Event().wait(0.01)
    stopper = threading.Thread(target=srv.stop)
    stopper.start()
    threading.Event().wait(0.2)
    assert not service.closed  # the request in flight holds the close back
    service.gate.set()
    stopper.join(10)
    t.join(10)
    assert results == [("t1", "t2")] and service.closed


def _request_bytes(api, body=b"", extra=()):
    lines = ["POST /%s HTTP/1.1" % api, "Host: localhost", "Content-Length: %d" % len(body)]
    lines += ["%s: %s" % kv for kv in signed(api, body).items()] + list(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _read_replies(sock, count):
    """``count`` replies from a raw socket: [(status line, headers dict, body)]."""
    data, replies = b"", []
    while len(replies) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            lines = data[:end].decode("latin-1").split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
            n = int(headers["content-length"])
            if len(data) >= end + 4 + n:
                replies.append((lines[0], headers, data[end + 4:end + 4 + n]))
                data = data[end + 4 + n:]
                continue
        chunk = sock.recv(65536)
        assert chunk, "server closed after %d replies" % len(replies)
        data += chunk
    return replies


def test_pipelined_requests_on_one_connection_are_answered_in_order(server):
    with socket.create_connection(server.server_address[:2], timeout=5) as s:
        s.sendall(_request_bytes("ListTable") + b"\r\n" + _request_bytes("NoSuchApi")
                  + _request_bytes("ListTable"))
        replies = _read_replies(s, 3)
    assert [r[0] for r in replies] == ["HTTP/1.1 200 OK", "HTTP/1.1 400 Bad Request",
                                       "HTTP/1.1 200 OK"]
    assert error_of(replies[1][2])[1] == "Unsupported operation: NoSuchApi."
    assert len({r[1]["x-ots-requestid"] for r in replies}) == 3
    assert server.service.calls == ["ListTable", "NoSuchApi", "ListTable"]


def test_expect_100_continue_gets_an_interim_reply_before_the_body(server):
    body = b"\x0a\x01t"
    with socket.create_connection(server.server_address[:2], timeout=5) as s:
        head, _, _ = _request_bytes("Boom", body, ["Expect: 100-continue"]).partition(b"\r\n\r\n")
        s.sendall(head + b"\r\n\r\n")
        assert s.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(body)
        (status, headers, data), = _read_replies(s, 1)
    assert status == "HTTP/1.1 409 Conflict" and headers["authorization"].startswith("OTS ak:")


def test_http10_and_connection_close_end_the_connection_after_the_reply(server):
    for raw in (_request_bytes("ListTable").replace(b"HTTP/1.1", b"HTTP/1.0", 1),
                _request_bytes("ListTable", extra=["Connection: close"])):
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(raw)
            (status, headers, _), = _read_replies(s, 1)
            assert status == "HTTP/1.1 200 OK" and headers["connection"] == "close"
            assert s.recv(1) == b""


def test_bad_content_length_and_chunked_bodies_are_refused(server):
    for extra, message in ((["Transfer-Encoding: chunked"], "Transfer-Encoding is not supported."),
                           ([], "Invalid Content-Length: -1.")):
        raw = _request_bytes("ListTable", extra=extra)
        if not extra:
            raw = raw.replace(b"Content-Length: 0", b"Content-Length: -1")
        with socket.create_connection(server.server_address[:2], timeout=5) as s:
            s.sendall(raw)
            (status, headers, data), = _read_replies(s, 1)
        assert status.startswith("HTTP/1.1 400") and error_of(data) == ("OTSParameterInvalid", message)
    assert server.service.calls == []


def test_replies_are_not_held_by_nagle(server):
    c = client(server)
    assert c.list_table() == ("t1", "t2")
    with server._conns_lock:
        conns = list(server._conns)
    assert conns and all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in conns)
