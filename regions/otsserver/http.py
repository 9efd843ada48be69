"""The HTTP/1.1 front end: POST /<ApiName>, authentication, signed responses.

One thread per connection (``ThreadingHTTPServer``) with keep-alive: each
client blocks only its own thread, so a slow or broken client cannot stall
the others; a socket timeout ends connections that stall mid-request.  The
store below is thread-safe, and the GIL is released in its I/O.

Every reply, success or error, carries what the SDK checks: x-ots-contentmd5,
x-ots-requestid, x-ots-date, x-ots-contenttype, and an ``authorization``
signature whenever the request's key was verified.  Errors are a protobuf
``Error`` body with Tablestore's HTTP status; nothing is ever answered with
an HTML page.

Contract of the ``service`` object: ``handle(api: str, body: bytes) -> bytes``
returns the serialized response message or raises ``WireError``; it must be
thread-safe.  ``close()`` is called once, after the last request finished.
"""
from __future__ import annotations

import itertools
import logging
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from regions.otsserver import errors
from regions.otsserver.auth import Authenticator, content_md5, format_date, response_authorization
from regions.otsserver.errors import WireError

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 5 * 1024 * 1024       # the service's POST limit -> 413
DEFAULT_TIMEOUT_S = 30.0               # idle keep-alive and stalled-body limit
_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict",
            413: "Request Entity Too Large", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}


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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "OTSServer"

    def setup(self):
        self.timeout = self.server.timeout_s
        super().setup()
        self.server._track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server._track(self.connection, False)

    def log_message(self, fmt, *args):  # quiet by default; the CLI enables debug
        log.debug("%s " + fmt, self.address_string(), *args)

    # Malformed request lines, bad headers and the like come here from the
    # base class: answer with a Tablestore error, then close.
    def send_error(self, code, message=None, explain=None):
        status = code if code in _REASONS else 400
        self.close_connection = True
        self._reply(status, _error_body(WireError(status, "OTSParameterInvalid",
                                                  message or "Bad request.")), None, "")

    def do_POST(self):
        server = self.server
        with server._inflight:
            if server._stopping:
                self.close_connection = True
                self._reply(503, _error_body(WireError(
                    503, "OTSServerUnavailable", "Server is not available.")), None, "")
                return
            server._active += 1
        try:
            self._post()
        finally:
            with server._inflight:
                server._active -= 1
                server._inflight.notify_all()
            if server._stopping:
                self.close_connection = True

    def _post(self):
        api = self.path.rsplit("/", 1)[-1].split("?", 1)[0]
        verified = None
        try:
            body = self._read_body()
            headers = {k.lower(): v for k, v in self.headers.items()}
            verified = self.server.authenticator.verify(api, headers, body)
            status, payload = 200, self.server.service.handle(api, body)
        except WireError as err:
            status, payload = err.http_status, _error_body(err)
        except Exception:  # a bug below: never a crash of the connection
            log.exception("internal error serving %s", api)
            err = errors.internal_error()
            status, payload = err.http_status, _error_body(err)
        self._reply(status, payload, verified, api)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise errors.parameter_invalid("Transfer-Encoding is not supported.")
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise errors.parameter_invalid("Missing header: 'Content-Length'.")
        try:
            n = int(length)
            if n < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            raise errors.parameter_invalid("Invalid Content-Length: %s." % length) from None
        if n > self.server.max_body:
            self.close_connection = True  # the body stays unread: the stream is lost
            raise errors.body_too_large()
        try:
            body = self.rfile.read(n)
        except (socket.timeout, TimeoutError):
            self.close_connection = True
            raise errors.request_timeout() from None
        if len(body) != n:
            self.close_connection = True
            raise errors.parameter_invalid("The request body is shorter than Content-Length.")
        return body

    def _reply(self, status: int, payload: bytes, verified, api: str):
        server = self.server
        headers = {
            "x-ots-contentmd5": content_md5(payload),
            "x-ots-requestid": server._request_id(),
            "x-ots-date": format_date(),
            "x-ots-contenttype": "protocol buffer",
        }
        if verified is not None:
            headers["authorization"] = response_authorization(
                verified.access_key_id, verified.signing_key, api, headers)
        lines = ["HTTP/1.1 %d %s" % (status, _REASONS.get(status, "Error")),
                 "Content-Length: %d" % len(payload)]
        lines.extend("%s: %s" % kv for kv in headers.items())
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(head + payload)
        except OSError:
            self.close_connection = True

    def _not_allowed(self):
        self.close_connection = True
        self._reply(405, _error_body(errors.method_not_allowed()), None, "")

    do_GET = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _not_allowed


class OTSServer(ThreadingHTTPServer):
    """Serves one ``service`` on (host, port); ``port=0`` picks a free port.

    Use ``start()`` (background thread) or ``serve_forever()``; ``stop()``
    stops accepting, lets requests in flight finish, closes idle keep-alive
    connections, then closes the service.  Safe to call ``stop()`` twice.
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, host: str, port: int, service, authenticator: Authenticator,
                 max_body: int = MAX_BODY_BYTES, timeout_s: float = DEFAULT_TIMEOUT_S):
        if max_body <= 0 or timeout_s <= 0:
            raise ValueError("max_body and timeout_s must be positive")
        self.service = service
        self.authenticator = authenticator
        self.max_body = max_body
        self.timeout_s = timeout_s
        self._inflight = threading.Condition()
        self._active = 0
        self._stopping = False
        self._stopped = False
        self._conns: set = set()
        self._conns_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._id_prefix = "%08x-%04x" % (int.from_bytes(os.urandom(4), "big"), os.getpid() & 0xFFFF)
        self._thread = None
        super().__init__((host, port), _Handler)

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
        close = getattr(self.service, "close", None)
        if close is not None:
            close()
