"""Which ``Host`` a server on loopback answers: the DNS-rebinding defence.

A web page the developer visits can make its own domain resolve to 127.0.0.1
(DNS rebinding); the browser then sends that page's requests, with the page's
rights to read the answers, to a server on loopback, naming the page's domain
in ``Host``.  So a server bound to a loopback address answers only requests
naming loopback (``localhost``, ``127.0.0.1``, ``::1``), its own bound address
or a name it was given (``--allowed-host``), with or without a port, as local
development servers do (Vite's ``server.allowedHosts``, webpack-dev-server's
``allowedHosts``).  A request without ``Host`` is no browser's and passes.
A server bound elsewhere checks nothing here (the console asks for the
access key there instead).

Pure functions: thread-safe.
"""
from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    """``host`` (an address to bind) is a loopback address or ``localhost``."""
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The host a ``Host`` header names, without its port, lower case, an IP
    address in its canonical form: ``"[::1]:8800"`` -> ``"::1"``,
    ``"LocalHost.:80"`` -> ``"localhost"``."""
    name = header.strip().lower()
    if name.startswith("["):
        name = name[1:name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    name = name.rstrip(".")
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def allowed_hosts(bound_host: str, extra=()) -> frozenset | None:
    """The host names a server bound to ``bound_host`` answers (loopback's,
    its own, and ``extra``), or None when it is not on loopback (no check)."""
    if not is_loopback(bound_host):
        return None
    return frozenset(host_name(h) for h in (*LOOPBACK_NAMES, bound_host, *extra))


def host_allowed(header: str | None, allowed: frozenset | None) -> bool:
    """A request with this ``Host`` header (None: none) may be answered."""
    return allowed is None or header is None or host_name(header) in allowed
