"""HTTP/1.1 request heads: the one parser the server uses, and nothing else.

Why not ``http.server``: its ``BaseHTTPRequestHandler`` reads a head line by
line and builds an ``email.message.Message`` through the email package's
feed parser, a large share of the server's Python time per request (the
profile: docs/otsserver.md "Measured").  Tablestore
requests are simple: one request line and a dozen ``name: value`` lines.

Grammar accepted (RFC 9112, minus what no client of ours sends)::

    head         = request-line *( header-line ) ; the blank line is not part of it
    request-line = method SP target SP "HTTP/1." ("0" / "1") CRLF
    header-line  = name ":" OWS value OWS CRLF   ; a line starting SP/HTAB
                                                 ; continues the previous value

Names are lower-cased; a repeated name keeps its last value (the SDK never
repeats one).  Bytes are decoded as latin-1, as ``http.server`` does.

Pure functions, no state: thread-safe.
"""
from __future__ import annotations

from typing import NamedTuple

MAX_HEAD_BYTES = 64 * 1024     # request line + headers; larger -> 431
MAX_HEADERS = 100              # as http.client's limit; more -> 431


class BadHead(ValueError):
    """A head that cannot be served; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class RequestHead(NamedTuple):
    method: str
    target: str
    version: str              # "HTTP/1.1" or "HTTP/1.0"
    headers: dict             # lower-case name -> value (stripped)

    @property
    def api(self) -> str:
        """The last path segment without query: "/x/PutRow?a=b" -> "PutRow"."""
        return self.target.rsplit("/", 1)[-1].split("?", 1)[0]

    def keep_alive(self) -> bool:
        """HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "keep-alive"."""
        conn = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.1":
            return "close" not in conn
        return "keep-alive" in conn


def parse_head(head: bytes) -> RequestHead:
    """Parse a request head (without its terminating blank line).

    Raises BadHead (a ValueError) naming what is wrong.
    """
    if not isinstance(head, (bytes, bytearray)):
        raise TypeError("head must be bytes, not %s" % type(head).__name__)
    if len(head) > MAX_HEAD_BYTES:
        raise BadHead("Request header is too large.", 431)
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split(" ")
    if len(words) != 3 or not words[0] or not words[1]:
        raise BadHead("Bad request line: %r." % lines[0][:100])
    method, target, version = words
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadHead("Unsupported HTTP version: %r." % version[:20], 505
                      if version.startswith("HTTP/") else 400)
    if len(lines) - 1 > MAX_HEADERS:
        raise BadHead("Too many headers.", 431)
    headers = {}
    name = None
    for line in lines[1:]:
        if line[:1] in (" ", "\t"):
            if name is None:
                raise BadHead("Bad header line: %r." % line[:100])
            headers[name] = (headers[name] + " " + line.strip()).strip()
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise BadHead("Bad header line: %r." % line[:100])
        name = name.lower()
        headers[name] = value.strip()
    return RequestHead(method, target, version, headers)
