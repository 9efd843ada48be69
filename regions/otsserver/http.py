"""The HTTP/1.1 front end: POST /<ApiName>, authentication, signed responses.

One thread per connection (``socketserver.ThreadingTCPServer``) with
keep-alive: each client blocks only its own thread, so a slow or broken client
cannot stall the others.  The store below is thread-safe, and the GIL is
released in its I/O.

Limits, so that slow and hostile clients cost bounded time and memory:

- at most ``max_connections`` open connections; one more is answered at once
  with 503 ``OTSServerBusy`` (which the SDK retries) and closed, before its
  request is read;
- ``timeout_s`` bounds each wait for bytes (an idle keep-alive connection is
  dropped after it); ``head_deadline_s`` bounds the whole head from its first
  byte and ``body_deadline_s`` the whole body, so a client sending one byte
  every 100 ms is cut off with 408 all the same;
- the head's signature is verified before the body is read (it covers the
  body's MD5), and a body buffer grows with the bytes received, never with
  the length declared: a forged head declaring 5 MB costs nothing;
- ``accept()`` failing for want of descriptors or memory (EMFILE, ENFILE,
  ENOBUFS, ENOMEM) backs off from 5 ms doubling to 1 s, as Go's net/http,
  instead of spinning a core; the log says so once when it starts and once
  when it ends;
- bound to loopback, every request (wire API and console) must name a
  loopback host or the bound one in ``Host`` (``hosts``: the DNS-rebinding
  defence); others get 403.  The request loop is our own (``_Connection``, heads parsed by
``httphead``) rather than ``http.server``'s, whose email-package header parser
cost about a third of the server's Python time per request; replies go out in
one ``send`` with TCP_NODELAY set.  Figures: docs/otsserver.md, "Measured".

Every wire reply, success or error, carries what the SDK checks: x-ots-contentmd5,
x-ots-requestid, x-ots-date, x-ots-contenttype, and an ``authorization``
signature whenever the request's key was verified.  Errors are a protobuf
``Error`` body with Tablestore's HTTP status; nothing is ever answered with
an HTML page.

``GET`` goes to the optional ``console`` (``console.handle(target, headers)``
returns a ``regions.otsserver.console.Reply``): the web console and
``/metrics``; without a console, and for every other method, the answer is
405 as before.  The wire API is POST only.

Contract of the ``service`` object: ``handle(api: str, body: bytes) -> bytes``
returns the serialized response message or raises ``WireError``; it must be
thread-safe.  ``metered(api)`` is a context manager around each POST, from
authentication to the answer (the service counts the request and its error
code, whatever refuses it).  ``close()`` is called once, after the last
request finished.
"""
from __future__ import annotations

import errno
import itertools
import logging
import os
import socket
import socketserver
import threading
import time
import zlib

from regions.otsserver import errors, hosts
from regions.otsserver.auth import Authenticator, content_md5, format_date, response_authorization
from regions.otsserver.errors import WireError
from regions.otsserver.httphead import MAX_HEAD_BYTES, BadHead, RequestHead, parse_head

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 5 * 1024 * 1024       # the service's POST limit -> 413
DEFAULT_TIMEOUT_S = 30.0               # each wait for bytes; an idle keep-alive connection
DEFAULT_HEAD_DEADLINE_S = 10.0         # a whole head, from its first byte (an SDK's: one packet)
DEFAULT_BODY_DEADLINE_S = 60.0         # a whole body: 5 MiB at 1 Mbit/s takes 42 s
DEFAULT_MAX_CONNECTIONS = 256          # a thread each; more are answered 503 at once
RECV_BYTES = 65536                     # one recv takes a whole SDK request
LINGER_S = 1.0                         # reading an unread body after the reply, before closing
#: accept() errors that wait for a resource to return: back off, do not spin.
ACCEPT_RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
ACCEPT_BACKOFF_S = (0.005, 1.0)        # first and longest pause (Go's net/http)
_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict",
            413: "Request Entity Too Large", 429: "Too Many Requests",
            431: "Request Header Fields Too Large", 500: "Internal Server Error",
            503: "Service Unavailable", 505: "HTTP Version Not Supported"}
TEXT = "text/plain; charset=utf-8"


#: A compressed request (the Java SDK's ``setEnableRequestCompression``): the
#: body as sent is deflated (zlib's format), its MD5 and signature are over
#: those bytes; the size header gives the inflated size.
COMPRESS_TYPE = "x-ots-request-compress-type"
COMPRESS_SIZE = "x-ots-request-compress-size"
COMPRESS_TYPES = ("deflate",)


def inflate(headers, body: bytes, limit: int) -> bytes:
    """The request body a compressed request carries, inflated: exactly the
    size its header declares, never more than ``limit`` (the body limit, so a
    small body cannot expand past what an uncompressed one may be); else the
    error that names why (413 past the limit)."""
    kind = headers[COMPRESS_TYPE].strip().lower()
    if kind not in COMPRESS_TYPES:
        raise errors.request_compression("unsupported %s: %s." % (COMPRESS_TYPE, kind[:40]))
    size = headers.get(COMPRESS_SIZE)
    if size is None:
        raise errors.missing_header(COMPRESS_SIZE)
    size = size.strip()
    if not size.isdigit() or not size.isascii():
        raise errors.request_compression("%s is not a size: %s." % (COMPRESS_SIZE, size[:40]))
    size = int(size)
    if size > limit:
        raise errors.body_too_large()
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(body, size + 1)
    except zlib.error as e:
        raise errors.request_compression("it does not inflate (%s)." % e) from None
    if len(data) != size or not inflater.eof or inflater.unused_data:
        raise errors.request_compression("it does not inflate to %s %d." % (COMPRESS_SIZE, size))
    return data


def _error_body(err: WireError) -> bytes:
    # pb Error {required string code = 1; optional string message = 2;},
    # written by hand so this layer does not need the protobuf modules.
    code = err.code.encode("utf-8")
    msg = err.message.encode("utf-8")
    return b"\x0a" + _varint(len(code)) + code + b"\x12" + _varint(len(msg)) + msg


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _reply(server: "OTSServer", status: int, payload: bytes, verified, api: str,
           close: bool) -> bytes:
    """One wire reply, head and body: the x-ots-* headers the SDK checks, and
    the response signature when the request's key was ``verified``."""
    md5 = content_md5(payload)
    request_id = server._request_id()
    date = format_date()
    head = "HTTP/1.1 %d %s\r\nContent-Length: %d\r\nx-ots-contentmd5: %s\r\n" \
           "x-ots-requestid: %s\r\nx-ots-date: %s\r\nx-ots-contenttype: protocol buffer\r\n" \
           % (status, _REASONS.get(status, "Error"), len(payload), md5, request_id, date)
    if verified is not None:
        head += "authorization: %s\r\n" % response_authorization(
            verified.access_key_id, verified.signing_key, api,
            {"x-ots-contentmd5": md5, "x-ots-requestid": request_id, "x-ots-date": date,
             "x-ots-contenttype": "protocol buffer"})
    if close:
        head += "Connection: close\r\n"
    return head.encode("latin-1") + b"\r\n" + payload


class _Connection(socketserver.BaseRequestHandler):
    """One keep-alive connection: read a head, read the body, answer; repeat.

    The socket is read in large chunks into one buffer (a request usually
    arrives in one ``recv``), so pipelined requests are served in order.
    """
    server: "OTSServer"

    def setup(self):
        sock = self.request
        self._timeout = self.server.timeout_s
        sock.settimeout(self._timeout)
        try:  # a reply is one send; do not let Nagle hold it for the client's ACK
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.debug = log.isEnabledFor(logging.DEBUG)   # once per connection, not per request

    def handle(self):
        server = self.server
        buf = b""
        while True:
            try:
                end, buf = self._read_head(buf)
            except BadHead as err:
                return self._fail(err)
            except WireError as err:            # past the head's deadline
                return self._send(err.http_status, _error_body(err), None, "", True)
            if end < 0:
                return                          # closed, or idle past the timeout
            try:
                head = parse_head(buf[:end])
            except BadHead as err:
                return self._fail(err)
            buf = buf[end + 4:]
            get = head.method == "GET" and server.console is not None
            if head.method != "POST" and not get:
                return self._send(405, _error_body(errors.method_not_allowed()), None, "", True)
            if not hosts.host_allowed(head.headers.get("host"), server.allowed_hosts):
                return self._refuse_host(head, get)
            close = not head.keep_alive()
            checked = None                      # the head's authentication: Verified or WireError
            try:
                if get and "content-length" not in head.headers:
                    body = b""                  # the console's GETs carry no body
                else:
                    try:
                        n = self._body_length(head)
                    except WireError as err:    # the body stays unread: answer, then close
                        self._send(err.http_status, _error_body(err), None, head.api, True)
                        return self._linger()
                    if not get:
                        checked = self._verify_head(head)
                    if isinstance(checked, WireError) and len(buf) < n:
                        # refused before its body is read (or allocated): the stream is lost
                        self._serve(head, b"", True, checked)
                        return self._linger()
                    body, buf = self._read_body(head, buf, n)
            except WireError as err:            # the stream is lost: answer, then close
                return self._send(err.http_status, _error_body(err), None, head.api, True)
            if self._serve(head, body, close, checked):
                return

    def _recv(self, deadline, size: int = RECV_BYTES) -> bytes:
        """One ``recv``, waiting at most the timeout and never past ``deadline``
        (``time.monotonic()``; None: none); socket.timeout when it passes."""
        wait = self.server.timeout_s
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
            if wait <= 0:
                raise socket.timeout("deadline passed")
        if wait != self._timeout:
            self.request.settimeout(wait)
            self._timeout = wait
        return self.request.recv(size)

    def _read_head(self, buf: bytes):
        """``(end, buffer)``: the buffer holding the next request's head, which
        ends at ``end``; ``end`` -1 when the client closed or stayed idle past
        the timeout.  BadHead (431) past MAX_HEAD_BYTES, WireError (408) past
        the head's deadline, counted from its first byte."""
        buf = buf.lstrip(b"\r\n")           # RFC 9112 2.2: ignore blank lines between requests
        deadline = time.monotonic() + self.server.head_deadline_s if buf else None
        end = buf.find(b"\r\n\r\n")
        while end < 0:
            if len(buf) > MAX_HEAD_BYTES:
                raise BadHead("Request header is too large.", 431)
            try:
                data = self._recv(deadline)
            except socket.timeout:
                if deadline is None:
                    return -1, buf          # idle keep-alive: drop, as http.server
                raise errors.request_timeout() from None
            except OSError:
                return -1, buf
            if not data:
                return -1, buf              # the client closed (maybe mid-head): nothing to answer
            if deadline is None:
                deadline = time.monotonic() + self.server.head_deadline_s
            start = max(0, len(buf) - 3)
            buf += data
            end = buf.find(b"\r\n\r\n", start)
        return end, buf

    def _linger(self):
        """After a reply to a request whose body stays unread: half-close, then
        read and drop what the client still sends, for at most LINGER_S, so
        that the close is a FIN it reads after the reply, not a reset that
        may discard the reply (RFC 9112 9.6; Apache's lingering close)."""
        deadline = time.monotonic() + LINGER_S
        try:
            self.request.shutdown(socket.SHUT_WR)
            while self._recv(deadline):
                pass
        except OSError:             # socket.timeout included
            pass

    def _fail(self, err: BadHead):
        status = err.status if err.status in _REASONS else 400
        self._send(status, _error_body(WireError(status, "OTSParameterInvalid", str(err))),
                   None, "", True)

    def _refuse_host(self, head: RequestHead, get: bool):
        err = errors.host_not_allowed(head.headers["host"])
        if self.server._first_refusal(hosts.host_name(head.headers["host"])):
            log.warning("refused %s %s (and will refuse without a word): %s", head.method,
                        head.target[:100], err.message)
        if get:
            return self._send_page(err.http_status, TEXT, err.message.encode("utf-8") + b"\n",
                                   (), True)
        self._send(err.http_status, _error_body(err), None, head.api, True)
        self._linger()                  # its body stays unread

    def _body_length(self, head: RequestHead) -> int:
        """The body's declared length; WireError (400, 413) after which the connection closes."""
        if "transfer-encoding" in head.headers:
            raise errors.parameter_invalid("Transfer-Encoding is not supported.")
        length = head.headers.get("content-length")
        if length is None:
            raise errors.parameter_invalid("Missing header: 'Content-Length'.")
        if not length.isdigit() or not length.isascii():
            raise errors.parameter_invalid("Invalid Content-Length: %s." % length[:40])
        n = int(length)
        if n > self.server.max_body:
            raise errors.body_too_large()      # the body stays unread: the stream is lost
        return n

    def _verify_head(self, head: RequestHead):
        """The head's authentication (``Authenticator.verify_head``): Verified,
        or the AuthError to answer (through ``_serve``, so that it is metered)."""
        try:
            return self.server.authenticator.verify_head(head.api, head.headers)
        except WireError as err:
            return err

    def _read_body(self, head: RequestHead, buf: bytes, n: int):
        """(body of ``n`` bytes, rest of the buffer), or WireError after which
        the connection closes.  The body is kept as the chunks received and
        joined once whole: memory follows the bytes sent, not ``n``."""
        if len(buf) >= n:
            return buf[:n], buf[n:]
        if head.headers.get("expect", "").lower() == "100-continue" and not buf:
            self.request.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        deadline = time.monotonic() + self.server.body_deadline_s
        chunks, got = [buf], len(buf)
        try:
            while got < n:
                data = self._recv(deadline, min(RECV_BYTES, n - got))
                if not data:
                    raise errors.parameter_invalid("The request body is shorter than Content-Length.")
                chunks.append(data)
                got += len(data)
        except socket.timeout:
            raise errors.request_timeout() from None
        except OSError:
            raise errors.parameter_invalid("The request body is shorter than Content-Length.") from None
        return b"".join(chunks), b""

    def _serve(self, head: RequestHead, body: bytes, close: bool, checked=None) -> bool:
        """Answer one request; True when the connection must close after it."""
        server = self.server
        with server._inflight:
            if server._stopping:
                self._send(503, _error_body(errors.server_unavailable()), None, "", True)
                return True
            server._active += 1
        try:
            if head.method == "GET":
                return self._answer_get(head, close)
            return self._answer(head, body, close, checked)
        finally:  # after the reply went out: stop() may close the socket once this is 0
            with server._inflight:
                server._active -= 1
                server._inflight.notify_all()

    def _answer(self, head: RequestHead, body: bytes, close: bool, checked) -> bool:
        server = self.server
        api = head.api
        verified = None
        try:
            with server.service.metered(api):
                if isinstance(checked, WireError):
                    raise checked
                server.authenticator.verify_body(head.headers, body)
                verified = checked
                if COMPRESS_TYPE in head.headers:
                    body = inflate(head.headers, body, server.max_body)
                status, payload = 200, server.service.handle(api, body)
        except WireError as err:
            status, payload = err.http_status, _error_body(err)
        except Exception:  # a bug below: never a crash of the connection
            log.exception("internal error serving %s", api)
            err = errors.internal_error()
            status, payload = err.http_status, _error_body(err)
        close = close or server._stopping
        if not self._send(status, payload, verified, api, close):
            return True
        if self.debug:
            log.debug("%s %s %s -> %d (%d bytes)", self.client_address[0], head.method,
                      head.target, status, len(payload))
        return close

    def _answer_get(self, head: RequestHead, close: bool) -> bool:
        """A GET: the web console or /metrics (regions.otsserver.console)."""
        try:
            reply = self.server.console.handle(head.target, head.headers)
        except Exception:
            log.exception("internal error serving GET %s", head.target)
            reply = None
        if reply is None:
            status, ctype, body, extra = 500, TEXT, b"Internal error\n", ()
        else:
            status, ctype, body, extra = reply
        return self._send_page(status, ctype, body, extra, close or self.server._stopping)

    def _send_page(self, status: int, ctype: str, body: bytes, extra, close: bool) -> bool:
        """Write a reply that is not the wire API's (the console's); True when
        the connection must close after it."""
        out = "HTTP/1.1 %d %s\r\nContent-Length: %d\r\nContent-Type: %s\r\n" \
              "X-Content-Type-Options: nosniff\r\n" % (status, _REASONS.get(status, "Error"),
                                                        len(body), ctype)
        out += "".join("%s: %s\r\n" % kv for kv in extra)
        if close:
            out += "Connection: close\r\n"
        try:
            self.request.sendall(out.encode("latin-1") + b"\r\n" + body)
        except OSError:
            return True
        return close

    def _send(self, status: int, payload: bytes, verified, api: str, close: bool) -> bool:
        """Write one wire reply (head and body in one send); False if the client is gone."""
        try:
            self.request.sendall(_reply(self.server, status, payload, verified, api, close))
            return True
        except OSError:
            return False


class OTSServer(socketserver.ThreadingTCPServer):
    """Serves one ``service`` on (host, port); ``port=0`` picks a free port.

    Use ``start()`` (background thread) or ``serve_forever()``; ``stop()``
    stops accepting, lets requests in flight finish, closes idle keep-alive
    connections, then closes the service.  Safe to call ``stop()`` twice.

    The limits (module docstring): ``max_body``, ``timeout_s``,
    ``head_deadline_s``, ``body_deadline_s``, ``max_connections``; and
    ``allowed_hosts``, host names answered besides loopback's and the bound
    address when the server is on loopback.  ``refused`` counts the
    connections turned away at the cap.
    """

    daemon_threads = True
    allow_reuse_address = True
    #: The listen backlog: a burst of connections (past the cap too) waits here for accept()
    #: and its answer; a full backlog drops handshakes, which clients retry 1, 3, 7 s later.
    request_queue_size = 1024

    def __init__(self, host: str, port: int, service, authenticator: Authenticator,
                 max_body: int = MAX_BODY_BYTES, timeout_s: float = DEFAULT_TIMEOUT_S,
                 console=None, head_deadline_s: float = DEFAULT_HEAD_DEADLINE_S,
                 body_deadline_s: float = DEFAULT_BODY_DEADLINE_S,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS, allowed_hosts=()):
        if min(max_body, timeout_s, head_deadline_s, body_deadline_s, max_connections) <= 0:
            raise ValueError("max_body, timeout_s, head_deadline_s, body_deadline_s and "
                             "max_connections must be positive")
        self.service = service
        self.authenticator = authenticator
        self.max_body = max_body
        self.timeout_s = timeout_s
        self.head_deadline_s = head_deadline_s
        self.body_deadline_s = body_deadline_s
        self.max_connections = max_connections
        self.console = console      # answers GET (handle(target, headers) -> Reply), or None
        self.refused = 0
        self._inflight = threading.Condition()
        self._active = 0
        self._stopping = False
        self._stopped = False
        self._conns: set = set()
        self._conns_lock = threading.Lock()
        self._full = False          # the last connection met the cap (logged once per change)
        self._refused_hosts = set()     # Host names refused (logged once each, up to 64)
        self._accept_pause = 0.0    # the current back-off of a failing accept(), 0: none
        self._wake = threading.Event()
        self._ids = itertools.count(1)
        self._id_prefix = "%08x-%04x" % (int.from_bytes(os.urandom(4), "big"), os.getpid() & 0xFFFF)
        self._thread = None
        super().__init__((host, port), _Connection)
        self.allowed_hosts = hosts.allowed_hosts(host, (self.server_address[0], *allowed_hosts))

    @property
    def endpoint(self) -> str:
        host, port = self.server_address[:2]
        return "http://%s:%d" % (host, port)

    def _request_id(self) -> str:
        return "%s-%012x" % (self._id_prefix, next(self._ids))

    def _first_refusal(self, host: str) -> bool:
        """True the first time a request naming ``host`` is refused (up to 64 names)."""
        with self._conns_lock:
            first = host not in self._refused_hosts and len(self._refused_hosts) < 64
            if first:
                self._refused_hosts.add(host)
            return first

    # -- accepting: back-off and the connection cap (the serve_forever thread) ----------
    def get_request(self):
        try:
            conn = super().get_request()
        except OSError as e:
            if e.errno in ACCEPT_RESOURCE_ERRORS and not self._stopping:
                self._back_off(e)
            raise
        if self._accept_pause:
            log.warning("accept() works again")
            self._accept_pause = 0.0
        return conn

    def _back_off(self, e: OSError):
        """Wait before the next accept(): the descriptors (or the memory) a
        connection needs come back only when others close."""
        first, longest = ACCEPT_BACKOFF_S
        if not self._accept_pause:
            log.warning("accept() failed: %s; retrying from %g s to every %g s until it works",
                        e.strerror or e, first, longest)
        self._accept_pause = min(longest, self._accept_pause * 2) if self._accept_pause else first
        self._wake.wait(self._accept_pause)

    def process_request(self, request, client_address):
        with self._conns_lock:
            admitted = len(self._conns) < self.max_connections
            if admitted:
                self._conns.add(request)
        if admitted != (not self._full):
            self._full = not admitted
            if self._full:
                log.warning("%d connections open (--max-connections): refusing new ones with "
                            "503 OTSServerBusy", self.max_connections)
            else:
                log.warning("accepting connections again (%d refused so far)", self.refused)
        if not admitted:
            self.refused += 1
            return self._refuse(request)
        super().process_request(request, client_address)

    def _refuse(self, request):
        """Answer 503 at once and close, in this thread, before reading the
        request: a new socket's send buffer takes the reply whole.  What the
        client has sent already is read and dropped, so that the close is a
        FIN after the reply rather than a reset that may discard it."""
        err = errors.too_many_connections(self.max_connections)
        try:
            request.setblocking(False)
            request.send(_reply(self, err.http_status, _error_body(err), None, "", True))
            request.shutdown(socket.SHUT_WR)
            for _ in range(16):     # bounded: this is the accepting thread
                if not request.recv(RECV_BYTES):
                    break
        except OSError:
            pass
        request.close()

    def shutdown_request(self, request):
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def start(self) -> "OTSServer":
        self._thread = threading.Thread(target=self.serve_forever, name="otsserver",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()
        return self

    def stop(self, drain_timeout_s: float = 10.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
        self.server_close()
        with self._inflight:
            self._inflight.wait_for(lambda: self._active == 0, timeout=drain_timeout_s)
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:  # idle keep-alive readers: wake them so they exit
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self.console is not None:
            self.console.close()
        close = getattr(self.service, "close", None)
        if close is not None:
            close()
