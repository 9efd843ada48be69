"""``regions-server``: run a local Tablestore endpoint on a data directory.

    regions-server --data ./ots-data --port 8800
    regions-server --in-memory --port 0      # nothing on disk, gone at stop

Defaults come from the environment variables the SDK's examples read
(OTS_TEST_ENDPOINT's port, OTS_TEST_ACCESS_KEY_ID, OTS_TEST_ACCESS_KEY_SECRET,
OTS_TEST_INSTANCE), so the examples connect unchanged; the server prints the
``export`` lines that set them.  SIGINT/SIGTERM stop it cleanly: no new
requests, requests in flight finish, then the store is closed (flushed).
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from urllib.parse import urlparse

from regions.extras import guard

DEFAULT_INSTANCE = "local"
DEFAULT_KEY_ID = "local_access_key_id"
DEFAULT_KEY_SECRET = "local_access_key_secret"
DEFAULT_PORT = 8800


#: The longest --timeout and deadlines: a day (a socket's timeout overflows far beyond).
MAX_TIMEOUT_S = 86400.0
#: The most --max-connections (a thread and a descriptor each).
MAX_CONNECTIONS = 65536


def _default_port(parser) -> int:
    endpoint = os.environ.get("OTS_TEST_ENDPOINT")
    if endpoint:
        try:
            port = urlparse(endpoint).port
        except ValueError as e:
            parser.error(f"OTS_TEST_ENDPOINT={endpoint}: {e}; fix it or give --port")
        if port:
            return port
    return DEFAULT_PORT


def build_parser() -> argparse.ArgumentParser:
    from regions import cliutil
    p = cliutil.Parser(prog="regions-server", description=__doc__.split("\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", type=cliutil.store_dir,
                       help="directory of the store (created if missing)")
    where.add_argument("--in-memory", action="store_true",
                       help="keep the store in memory: nothing on disk, no durability, "
                            "every table gone when the server stops (for tests)")
    p.add_argument("--host", default="127.0.0.1", type=cliutil.word("a host"),
                   help="address to listen on (default 127.0.0.1; 0.0.0.0: every address)")
    p.add_argument("--port", type=cliutil.port, default=None,
                   help="port, 0-65535; 0 picks a free one (default: OTS_TEST_ENDPOINT's, "
                        f"else {DEFAULT_PORT})")
    p.add_argument("--instance", type=cliutil.word("an instance name"),
                   default=os.environ.get("OTS_TEST_INSTANCE", DEFAULT_INSTANCE))
    p.add_argument("--access-key-id", type=cliutil.word("an access key id"),
                   default=os.environ.get("OTS_TEST_ACCESS_KEY_ID", DEFAULT_KEY_ID))
    p.add_argument("--access-key-secret", type=cliutil.word("an access key secret"),
                   default=os.environ.get("OTS_TEST_ACCESS_KEY_SECRET", DEFAULT_KEY_SECRET))
    p.add_argument("--any-instance", action="store_true",
                   help="accept any instance name instead of rejecting others with OTSAuthFailed")
    p.add_argument("--max-body", type=cliutil.byte_size, default=None,
                   help="largest request body: bytes, or with KiB/MiB/GiB (default 5MiB)")
    seconds = cliutil.float_in(0, MAX_TIMEOUT_S, "a number of seconds")
    p.add_argument("--timeout", type=seconds,
                   default=None, help="seconds an idle or stalled connection is kept (default 30)")
    p.add_argument("--head-deadline", type=seconds, default=None, metavar="SECONDS",
                   help="seconds a request's whole head may take to arrive, from its first byte "
                        "(default 10; later: 408 and the connection closed)")
    p.add_argument("--body-deadline", type=seconds, default=None, metavar="SECONDS",
                   help="seconds a request's whole body may take to arrive (default 60)")
    p.add_argument("--max-connections", type=cliutil.int_in(1, MAX_CONNECTIONS, "a number of "
                                                            "connections"),
                   default=None, metavar="N", help="connections served at once; more are answered 503 "
                                      "OTSServerBusy at once and closed (default 256)")
    p.add_argument("--allowed-host", dest="allowed_hosts", action="append", default=[],
                   type=cliutil.word("a host name"), metavar="NAME",
                   help="on loopback, a Host name answered besides localhost, 127.0.0.1, ::1 "
                        "and --host (repeatable; others get 403: the DNS-rebinding defence)")
    p.add_argument("--pk-projection", choices=("full", "requested"), default="full",
                   help="primary key of returned rows: full (the service's) or only the key "
                        "columns columns_to_get names (the 2017 guide's examples)")
    p.add_argument("--max-partitions", type=cliutil.int_in(1, None, "a number of partitions"),
                   default=None, metavar="N",
                   help="refuse a CreateTable of more than N partitions, as the service does "
                        "with 10 (default: any number: regions-import --split-points pre-splits "
                        "into many)")
    p.add_argument("--no-console", action="store_true",
                   help="answer GET with 405 instead of serving the web console and /metrics")
    p.add_argument("-D", "--server-option", dest="server_options", action="append", default=[],
                   metavar="NAME=VALUE",
                   help="a regions.ServerOptions field, e.g. -D memtable_bytes=8MiB "
                        "-D max_region_bytes=1GiB -D sync=true (repeatable)")
    p.add_argument("--verbose", "-v", action="store_true", help="log every request")
    return p


def check_address(host: str, port: int) -> str | None:
    """Why the server could not listen on (host, port), or None: tried with
    a socket like the server's before anything is opened, so that a port in
    use leaves no store behind."""
    import errno
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server
        try:
            s.bind((host, port))
        except socket.gaierror as e:
            return f"--host {host}: {e.strerror}"
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:
                return f"--host {host}: not an address of this machine"
            hint = {errno.EADDRINUSE: "", errno.EACCES: " (ports below 1024 need privileges)"}
            if e.errno in hint:  # soak/wire.py waits out "Address already in use"
                return (f"port {port} on {host}: {e.strerror}{hint[e.errno]}; "
                        "--port 0 picks a free one")
            return f"--host {host} --port {port}: {e.strerror}"
    return None


def make_server(data: str | None, host: str, port: int, instance: str, key_id: str, secret: str,
                any_instance: bool = False, max_body: int | None = None,
                timeout_s: float | None = None, pk_projection: str = "full", server_options=None,
                console: bool = True, limits=None, max_partitions: int | None = None):
    """Open the store in ``data`` (None: in memory) and wrap it in a (not yet
    started) OTSServer; ``server_options``: a regions.ServerOptions (tests make regions split early);
    ``limits``: more of OTSServer's keyword arguments (head_deadline_s, body_deadline_s,
    max_connections, allowed_hosts); ``max_partitions``: OTSClient's."""
    from regions.otsserver.auth import Authenticator
    from regions.otsserver.console import Console
    from regions.otsserver.hosts import is_loopback
    from regions.otsserver.http import DEFAULT_TIMEOUT_S, MAX_BODY_BYTES, OTSServer
    from regions.otsserver.protocol import TablestoreService
    from regions.tablestore import OTSClient

    client = OTSClient(data, pk_projection=pk_projection, server_options=server_options,
                       max_partitions=max_partitions)
    web = None
    try:
        # The web console and /metrics answer GET on the same port; open on a
        # loopback address, behind basic auth with the access key otherwise.
        if console:
            web = Console(client, instance, {key_id: secret}, open_access=is_loopback(host))
        return OTSServer(host, port, TablestoreService(client),
                         Authenticator(instance, {key_id: secret}, check_instance=not any_instance),
                         max_body=max_body or MAX_BODY_BYTES,
                         timeout_s=timeout_s or DEFAULT_TIMEOUT_S, console=web, **(limits or {}))
    except BaseException:
        if web is not None:
            web.close()
        client.close()
        raise


def _limits(args) -> dict:
    """OTSServer's keyword arguments the command line set (the others keep its defaults)."""
    given = {"head_deadline_s": args.head_deadline, "body_deadline_s": args.body_deadline,
             "max_connections": args.max_connections, "allowed_hosts": tuple(args.allowed_hosts)}
    return {k: v for k, v in given.items() if v is not None}


@guard("regions-server", "the local endpoint")
def main(argv=None) -> int:
    from regions import cliutil
    from regions.errors import RegionError
    from regions.options import ServerOptions
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        options = ServerOptions.from_settings(args.server_options)
    except (TypeError, ValueError) as e:
        parser.error(f"argument -D/--server-option: {e}")
    if args.port is None:
        args.port = _default_port(parser)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    problem = check_address(args.host, args.port)
    if problem:
        return cliutil.fail("regions-server", problem, status=1)
    import lsm
    try:
        server = make_server(args.data, args.host, args.port, args.instance, args.access_key_id,
                             args.access_key_secret, args.any_instance, args.max_body, args.timeout,
                             args.pk_projection, server_options=options,
                             console=not args.no_console, limits=_limits(args),
                             max_partitions=args.max_partitions)
    except (OSError, RegionError, lsm.LSMError) as e:
        what = cliutil.os_error(e) if isinstance(e, OSError) else e
        where = f"cannot open the store in {args.data}" if args.data else "cannot start"
        return cliutil.fail("regions-server", f"{where}: {what}", status=1)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    where = "in memory, gone at stop" if args.in_memory else "in %s" % os.path.abspath(args.data)
    print("regions-server: serving %s (data %s)" % (server.endpoint, where))
    if server.console is not None:
        print("regions-server: console at %s/ , Prometheus metrics at %s/metrics"
              % (server.endpoint, server.endpoint))
    print("export OTS_TEST_ENDPOINT=%s" % server.endpoint)
    print("export OTS_TEST_ACCESS_KEY_ID=%s" % args.access_key_id)
    print("export OTS_TEST_ACCESS_KEY_SECRET=%s" % args.access_key_secret)
    print("export OTS_TEST_INSTANCE=%s" % args.instance, flush=True)
    while not stop.wait(0.5):
        pass
    print("regions-server: stopping", flush=True)
    server.stop()
    print("regions-server: stopped, store closed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
