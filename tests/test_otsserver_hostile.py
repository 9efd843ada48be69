"""The HTTP front end under slow and hostile clients (issue 32): the connection
cap, the head's and the body's deadlines, bodies read only after the head's
signature and only as they arrive, back-off on accept() errors, the Host
check of a loopback server; and the command line that sets them."""
import errno
import logging
import socket
import threading
import time
import tracemalloc

import pytest
import tablestore
from test_otsserver_http import StubService, _read_replies, _request_bytes, client, error_of, signed

from regions.otsserver import cli, hosts
from regions.otsserver.auth import Authenticator
from regions.otsserver.http import OTSServer

MIB = 1 << 20


def serve(**limits):
    limits.setdefault("timeout_s", 5.0)
    return OTSServer("127.0.0.1", 0, StubService(), Authenticator("inst", {"ak": "sk"}),
                     **limits).start()


@pytest.fixture
def make():
    started = []

    def make(**limits):
        started.append(serve(**limits))
        return started[-1]
    yield make
    for srv in started:
        srv.stop()


def connect(srv):
    return socket.create_connection(srv.server_address[:2], timeout=10)


def wait_for_connections(srv, n):
    while len(srv._conns) != n:
        time.sleep(0.005)


def head_of(api, body=b"", length=None, secret="sk", host="localhost"):
    """A signed request head (``secret``: the key it is signed with) declaring ``length``."""
    headers = signed(api, body)
    if secret != "sk":
        headers["x-ots-signature"] = "forged"
    lines = ["POST /%s HTTP/1.1" % api, "Host: %s" % host,
             "Content-Length: %d" % (len(body) if length is None else length)]
    return ("\r\n".join(lines + ["%s: %s" % kv for kv in headers.items()]) + "\r\n\r\n").encode()


def trickle(sock, data, every=0.02):
    """Send ``data`` a byte at a time until the server answers; (reply, bytes sent)."""
    sock.settimeout(every)
    for i in range(len(data)):
        try:
            sock.sendall(data[i:i + 1])
        except OSError:         # the server cut the connection off
            sock.settimeout(10)
            return sock.recv(65536), i
        try:
            reply = sock.recv(65536)
        except socket.timeout:
            continue
        return reply, i + 1
    raise AssertionError("the server took the whole request")


def status_and_error(reply):
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), error_of(body)


# -- the connection cap -----------------------------------------------------------
def test_a_connection_past_the_cap_is_answered_503_server_busy_before_its_request(make, caplog):
    srv = make(max_connections=2)
    held = [connect(srv) for _ in range(2)]
    wait_for_connections(srv, 2)
    with connect(srv) as extra:      # nothing sent: the answer comes all the same, then EOF
        reply = extra.recv(65536)
        assert extra.recv(1) == b""
    assert status_and_error(reply) == (503, ("OTSServerBusy", "Server is busy: it holds 2 "
                                             "connections, its --max-connections; retry later."))
    with pytest.raises(tablestore.OTSServiceError) as e:    # what an SDK client sees
        client(srv).list_table()
    assert e.value.get_error_code() == "OTSServerBusy" and srv.refused == 2
    held[0].close()
    wait_for_connections(srv, 1)
    assert client(srv).list_table() == ("t1", "t2")         # a slot freed is taken again
    said = [r.getMessage() for r in caplog.records if r.name == "regions.otsserver.http"]
    assert said == ["2 connections open (--max-connections): refusing new ones with 503 "
                    "OTSServerBusy", "accepting connections again (2 refused so far)"]
    held[1].close()


# -- deadlines ----------------------------------------------------------------------
def test_a_head_sent_a_byte_at_a_time_is_cut_off_at_the_head_deadline(make):
    srv = make(head_deadline_s=0.3)        # each byte comes well within timeout_s (5 s)
    with connect(srv) as s:
        reply, sent = trickle(s, head_of("ListTable"))
    assert status_and_error(reply) == (408, ("OTSRequestTimeout", "Request timeout."))
    assert srv.service.calls == []


def test_a_body_sent_a_byte_at_a_time_is_cut_off_at_the_body_deadline(make):
    srv = make(body_deadline_s=0.3)
    body = b"x" * 500
    with connect(srv) as s:
        s.sendall(head_of("ListTable", body))
        reply, sent = trickle(s, body)
    assert sent < len(body)
    assert status_and_error(reply) == (408, ("OTSRequestTimeout", "Request timeout."))
    assert srv.service.calls == []


def test_an_idle_keep_alive_connection_is_still_dropped_without_a_word(make):
    srv = make(timeout_s=0.2, head_deadline_s=10.0)
    with connect(srv) as s:
        s.sendall(_request_bytes("ListTable"))
        assert _read_replies(s, 1)[0][0] == "HTTP/1.1 200 OK"
        assert s.recv(1) == b""


# -- bodies: after the head's signature, as they arrive ----------------------------------
def test_a_forged_head_declaring_a_large_body_is_refused_before_the_body(make):
    srv = make(max_body=5 * MIB)
    socks = [connect(srv) for _ in range(20)]
    tracemalloc.start()
    try:
        for s in socks:
            s.sendall(head_of("PutRow", length=5 * MIB, secret="forged"))
        replies = [s.recv(65536) for s in socks]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        for s in socks:
            s.close()
    assert {status_and_error(r) for r in replies} == {(403, ("OTSAuthFailed", "Signature mismatch."))}
    assert all(b"Connection: close" in r for r in replies)
    assert peak < 2 * MIB, peak      # 20 x 5 MiB declared; nothing allocated for them
    assert srv.service.calls == []


def test_a_client_pushing_a_refused_body_reads_the_refusal_not_a_reset(make):
    srv = make(max_body=4 * MIB)
    for head, status in ((head_of("PutRow", length=4 * MIB, secret="forged"), 403),
                         (head_of("PutRow", length=5 * MIB), 413)):
        with connect(srv) as s:         # more than the socket buffers hold: read and dropped
            s.sendall(head + b"x" * 4 * MIB)     # after the reply, then a FIN
            s.shutdown(socket.SHUT_WR)
            reply = b"".join(iter(lambda: s.recv(65536), b""))
        assert status_and_error(reply)[0] == status


def test_a_body_buffer_grows_with_the_bytes_received_not_the_length_declared(make):
    srv = make(max_body=5 * MIB, body_deadline_s=0.5)
    with connect(srv) as s:
        tracemalloc.start()
        try:
            s.sendall(head_of("ListTable", length=5 * MIB) + b"x" * 100_000)   # then silence
            reply = s.recv(65536)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert status_and_error(reply)[0] == 408
    assert peak < MIB, peak


def test_a_small_forged_request_keeps_its_connection_and_an_md5_mismatch_is_unsigned(make):
    srv = make()
    with connect(srv) as s:
        s.sendall(head_of("ListTable", b"abc", secret="forged") + b"abc")
        (status, headers, data), = _read_replies(s, 1)
        assert status.startswith("HTTP/1.1 403") and "connection" not in headers
        s.sendall(head_of("ListTable", b"abc") + b"abd")       # signed for another body
        (status, headers, data), = _read_replies(s, 1)
        assert error_of(data)[1].startswith("Mismatch between MD5") and "authorization" not in headers
        s.sendall(_request_bytes("ListTable"))
        assert _read_replies(s, 1)[0][0] == "HTTP/1.1 200 OK"


# -- accept() errors ---------------------------------------------------------------------
class _FailingListener:
    """The server's listening socket, whose accept() fails ``times`` with EMFILE."""

    def __init__(self, sock, times):
        self._sock, self.left = sock, times

    def accept(self):
        if self.left:
            self.left -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return self._sock.accept()

    def __getattr__(self, name):
        return getattr(self._sock, name)


def test_accept_errors_back_off_doubling_then_serve_again(caplog):
    srv = OTSServer("127.0.0.1", 0, StubService(), Authenticator("inst", {"ak": "sk"}))
    srv.socket = _FailingListener(srv.socket, 9)
    pauses = []
    srv._wake.wait = pauses.append          # record the back-off instead of sleeping it
    srv.start()
    try:
        assert client(srv).list_table() == ("t1", "t2")     # its connection waited in the backlog
    finally:
        srv.stop()
    assert pauses == [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0]
    said = [r.getMessage() for r in caplog.records if r.name == "regions.otsserver.http"]
    assert said == ["accept() failed: Too many open files; retrying from 0.005 s to every 1 s "
                    "until it works", "accept() works again"]


# -- the Host check on loopback --------------------------------------------------------------
def test_host_names_are_compared_without_port_case_or_brackets():
    allowed = hosts.allowed_hosts("127.0.0.1", ("Dev.Example",))
    for header in ("localhost", "LOCALHOST:8800", "127.0.0.1", "127.0.0.1:1", "[::1]:8800", "::1",
                   "[0:0:0:0:0:0:0:1]", "localhost.", "dev.example:80", None):
        assert hosts.host_allowed(header, allowed), header
    for header in ("evil.com", "evil.com:8800", "localhost.evil.com", "127.0.0.1.nip.io",
                   "10.0.0.1", "[::2]:8800", ""):
        assert not hosts.host_allowed(header, allowed), header
    assert hosts.allowed_hosts("0.0.0.0") is None and hosts.allowed_hosts("10.1.2.3") is None
    assert hosts.host_allowed("evil.com", None)         # not on loopback: no check here


def test_a_loopback_server_answers_only_requests_naming_a_loopback_host(make):
    srv = make(allowed_hosts=("dev.local",))
    port = srv.server_address[1]
    for host in ("localhost:%d" % port, "127.0.0.1", "[::1]:%d" % port, "dev.local"):
        with connect(srv) as s:
            s.sendall(head_of("ListTable", host=host))
            assert _read_replies(s, 1)[0][0] == "HTTP/1.1 200 OK", host
    with connect(srv) as s:
        s.sendall(head_of("ListTable", host="attacker.example:%d" % port))
        (status, headers, data), = _read_replies(s, 1)
        assert s.recv(1) == b""
    assert status.startswith("HTTP/1.1 403") and headers["connection"] == "close"
    assert error_of(data) == ("OTSAuthFailed", "Host header 'attacker.example:%d' is not a name of "
                              "this server: on loopback it answers localhost, 127.0.0.1, ::1 and "
                              "its own address (more with --allowed-host)." % port)
    assert srv.service.calls == ["ListTable"] * 4


# -- the command line ------------------------------------------------------------------------
def test_the_command_line_sets_the_limits_and_refuses_nonsense(capsys):
    args = cli.build_parser().parse_args([
        "--in-memory", "--port", "0", "--max-connections", "7", "--head-deadline", "1.5",
        "--body-deadline", "2", "--allowed-host", "dev.local", "--allowed-host", "box"])
    srv = cli.make_server(None, "127.0.0.1", 0, "i", "k", "s", console=False,
                          limits=cli._limits(args))
    try:
        assert (srv.max_connections, srv.head_deadline_s, srv.body_deadline_s) == (7, 1.5, 2.0)
        assert {"dev.local", "box", "localhost"} <= srv.allowed_hosts
    finally:
        srv.server_close()
        srv.service.close()
    assert cli._limits(cli.build_parser().parse_args(["--in-memory"])) == {"allowed_hosts": ()}
    for bad in (["--max-connections", "0"], ["--head-deadline", "0"], ["--body-deadline", "-1"],
                ["--allowed-host", "a b"]):
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(["--in-memory"] + bad)
        assert bad[0] in capsys.readouterr().err
