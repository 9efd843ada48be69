"""The HTTP/1.1 front end: POST /<ApiName>, authentication, signed responses.

One thread per connection (``socketserver.ThreadingTCPServer``) with
keep-alive: each client blocks only its own thread, so a slow or broken client
cannot stall the others; a socket timeout ends connections that stall
mid-request.  The store below is thread-safe, and the GIL is released in its
I/O.  The request loop is our own (``_Connection``, heads parsed by
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

import itertools
import logging
import os
import socket
import socketserver
import threading
import zlib

from regions.otsserver import errors
from regions.otsserver.auth import Authenticator, content_md5, format_date, response_authorization
from regions.otsserver.errors import WireError
from regions.otsserver.httphead import MAX_HEAD_BYTES, BadHead, RequestHead, parse_head

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 5 * 1024 * 1024       # the service's POST limit -> 413
DEFAULT_TIMEOUT_S = 30.0               # idle keep-alive and stalled-body limit
RECV_BYTES = 65536                     # one recv takes a whole SDK request
_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict",
            413: "Request Entity Too Large", 429: "Too Many Requests",
            431: "Request Header Fields Too Large", 500: "Internal Server Error",
            503: "Service Unavailable", 505: "HTTP Version Not Supported"}


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


class _Connection(socketserver.BaseRequestHandler):
    """One keep-alive connection: read a head, read the body, answer; repeat.

    The socket is read in large chunks into one buffer (a request usually
    arrives in one ``recv``), so pipelined requests are served in order.
    """
    server: "OTSServer"

    def setup(self):
        sock = self.request
        sock.settimeout(self.server.timeout_s)
        try:  # a reply is one send; do not let Nagle hold it for the client's ACK
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.server._track(sock, True)
        self.debug = log.isEnabledFor(logging.DEBUG)   # once per connection, not per request

    def finish(self):
        self.server._track(self.request, False)

    def handle(self):
        sock = self.request
        buf = b""
        while True:
            buf = buf.lstrip(b"\r\n")        # RFC 9112 2.2: ignore blank lines between requests
            end = buf.find(b"\r\n\r\n")
            try:
                while end < 0:
                    if len(buf) > MAX_HEAD_BYTES:
                        return self._fail(BadHead("Request header is too large.", 431))
                    data = sock.recv(RECV_BYTES)
                    if not data:
                        return                  # the client closed (maybe mid-head): nothing to answer
                    start = max(0, len(buf) - 3)
                    buf += data
                    end = buf.find(b"\r\n\r\n", start)
            except OSError:                     # idle keep-alive or stalled head: drop, as http.server
                return
            try:
                head = parse_head(buf[:end])
            except BadHead as err:
                return self._fail(err)
            buf = buf[end + 4:]
            get = head.method == "GET" and self.server.console is not None
            if head.method != "POST" and not get:
                return self._send(405, _error_body(errors.method_not_allowed()), None, "", True)
            close = not head.keep_alive()
            try:
                if get and "content-length" not in head.headers:
                    body = b""                  # the console's GETs carry no body
                else:
                    body, buf = self._read_body(head, buf)
            except WireError as err:            # the stream is lost: answer, then close
                return self._send(err.http_status, _error_body(err), None, head.api, True)
            if self._serve(head, body, close):
                return

    def _fail(self, err: BadHead):
        status = err.status if err.status in _REASONS else 400
        self._send(status, _error_body(WireError(status, "OTSParameterInvalid", str(err))),
                   None, "", True)

    def _read_body(self, head: RequestHead, buf: bytes):
        """(body, rest of the buffer), or WireError after which the connection closes."""
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
        if len(buf) >= n:
            return buf[:n], buf[n:]
        sock = self.request
        if head.headers.get("expect", "").lower() == "100-continue" and not buf:
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = bytearray(n)
        body[:len(buf)] = buf
        view, got = memoryview(body), len(buf)
        try:
            while got < n:
                k = sock.recv_into(view[got:])
                if not k:
                    raise errors.parameter_invalid("The request body is shorter than Content-Length.")
                got += k
        except (socket.timeout, TimeoutError):
            raise errors.request_timeout() from None
        except OSError:
            raise errors.parameter_invalid("The request body is shorter than Content-Length.") from None
        return bytes(body), b""

    def _serve(self, head: RequestHead, body: bytes, close: bool) -> bool:
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
            return self._answer(head, body, close)
        finally:  # after the reply went out: stop() may close the socket once this is 0
            with server._inflight:
                server._active -= 1
                server._inflight.notify_all()

    def _answer(self, head: RequestHead, body: bytes, close: bool) -> bool:
        server = self.server
        api = head.api
        verified = None
        try:
            with server.service.metered(api):
                verified = server.authenticator.verify(api, head.headers, body)
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
            status, ctype, body, extra = 500, "text/plain; charset=utf-8", b"Internal error\n", ()
        else:
            status, ctype, body, extra = reply
        close = close or self.server._stopping
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
        """Write one reply (head and body in one send); False if the client is gone."""
        server = self.server
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
        try:
            self.request.sendall(head.encode("latin-1") + b"\r\n" + payload)
            return True
        except OSError:
            return False


class OTSServer(socketserver.ThreadingTCPServer):
    """Serves one ``service`` on (host, port); ``port=0`` picks a free port.

    Use ``start()`` (background thread) or ``serve_forever()``; ``stop()``
    stops accepting, lets requests in flight finish, closes idle keep-alive
    connections, then closes the service.  Safe to call ``stop()`` twice.
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, host: str, port: int, service, authenticator: Authenticator,
                 max_body: int = MAX_BODY_BYTES, timeout_s: float = DEFAULT_TIMEOUT_S,
                 console=None):
        if max_body <= 0 or timeout_s <= 0:
            raise ValueError("max_body and timeout_s must be positive")
        self.service = service
        self.authenticator = authenticator
        self.max_body = max_body
        self.timeout_s = timeout_s
        self.console = console      # answers GET (handle(target, headers) -> Reply), or None
        self._inflight = threading.Condition()
        self._active = 0
        self._stopping = False
        self._stopped = False
        self._conns: set = set()
        self._conns_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._id_prefix = "%08x-%04x" % (int.from_bytes(os.urandom(4), "big"), os.getpid() & 0xFFFF)
        self._thread = None
        super().__init__((host, port), _Connection)

    @property
    def endpoint(self) -> str:
        host, port = self.server_address[:2]
        return "http://%s:%d" % (host, port)

    def _request_id(self) -> str:
        return "%s-%012x" % (self._id_prefix, next(self._ids))

    def _track(self, conn, alive: bool):
        with self._conns_lock:
            (self._conns.add if alive else self._conns.discard)(conn)

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
