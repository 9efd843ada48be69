"""SDK clients in several processes hammering a local server over loopback.

For PutRow, GetRow and GetRange, 4 SDK client processes (``OTSClient``, one
keep-alive connection each) send a fixed number of requests to

- ``server``: the real ``regions-server`` (a subprocess on a store), and
- ``instant``: a raw responder (``_instant_responder``, another subprocess)
  that answers every request at once with a canned, correctly signed reply
  captured from the real server, so the clients do exactly the same decoding
  work.  Its rate is what the 4 clients can send on this machine when the
  server costs (almost) nothing: the bound the issue compares against.

Recorded per run: requests/s over the request loops only (the clients import
the SDK, connect and warm up, then start together at a barrier; the rate is
all requests / (last loop end - first loop start)), the server's CPU per
request (from /proc of the server process), and the clients' CPU per request.
Both servers and the clients share this machine's cores, so the server's CPU
per request is charged against the clients' throughput: on 2 cores the real
server can reach the instant rate only if its cost per request is small
beside the clients'.  Bounded: a fixed number of requests per client.

    pytest bench/test_bench_otsserver.py --benchmark-only -s
    python bench/test_bench_otsserver.py          # same runs, a table on stdout
"""
import logging
import multiprocessing as mp
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

import pytest
import tablestore as ts

CLIENTS = 4
REQUESTS = 1500          # per client process and operation
WARMUP = 20              # per client, before the barrier
REPLAY_KEYS = 50         # distinct captured requests per op for the replay clients
ROWS = 2000
OPS = ("GetRow", "GetRange", "PutRow")   # reads first: they run on 2000 rows of one version each
KEY_ID, SECRET, INSTANCE = "ak", "sk", "inst"


def _cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _client(endpoint):
    logging.getLogger("tablestore").addHandler(logging.NullHandler())
    return ts.OTSClient(endpoint, KEY_ID, SECRET, INSTANCE, retry_policy=ts.NoRetryPolicy())


def _call(c, op, k):
    if op == "PutRow":
        c.put_row("bench", ts.Row([("k", k)], [("a", k), ("b", "x" * 20), ("c", 1.5)]))
    elif op == "GetRow":
        c.get_row("bench", [("k", k)])
    else:
        c.get_range("bench", ts.Direction.FORWARD, [("k", k)], [("k", ts.INF_MAX)], limit=10)


def _sdk(endpoint, op, worker, barrier, out):
    c = _client(endpoint)
    for i in range(WARMUP):
        _call(c, op, i)
    barrier.wait(60)
    cpu0, t0 = time.process_time(), time.perf_counter()
    for i in range(REQUESTS):
        _call(c, op, (worker * REQUESTS + i) % ROWS)
    out.put((t0, time.perf_counter(), time.process_time() - cpu0, REQUESTS))


def hammer(endpoint, op, server_pid, clients=CLIENTS, replay=None):
    """Run ``clients`` client processes against ``endpoint``; return the figures.

    SDK clients, or with ``replay`` (captured raw requests of ``op``) replay
    clients; ``ok`` counts the 200 replies (SDK clients raise on anything else).
    """
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(clients + 1), ctx.Queue()
    procs = [ctx.Process(target=_replay, args=(endpoint, replay, barrier, out)) if replay else
             ctx.Process(target=_sdk, args=(endpoint, op, w, barrier, out))
             for w in range(clients)]
    for p in procs:
        p.start()
    barrier.wait(120)            # everyone connected and warmed up
    cpu0 = _cpu_seconds(server_pid)
    results = [out.get(timeout=600) for _ in procs]
    server_cpu = _cpu_seconds(server_pid) - cpu0
    for p in procs:
        p.join(60)
    n = clients * REQUESTS
    elapsed = max(r[1] for r in results) - min(r[0] for r in results)
    return dict(requests_per_s=round(n / elapsed),
                server_cpu_us_per_request=round(server_cpu / n * 1e6),
                client_cpu_us_per_request=round(sum(r[2] for r in results) / n * 1e6),
                clients=clients, requests=n, ok=sum(r[3] for r in results))


# ------------------------------------------------------------- the servers
def _start_server(data, *extra):
    proc = subprocess.Popen([sys.executable, "-m", "regions.otsserver", "--data", str(data),
                             "--port", "0", "--instance", INSTANCE, "--access-key-id", KEY_ID,
                             "--access-key-secret", SECRET, *extra],
                            stdout=subprocess.PIPE, text=True)
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("server did not start")
        if line.startswith("export OTS_TEST_ENDPOINT="):
            return proc, line.strip().split("=", 1)[1]


def _load(endpoint):
    """Create and fill the table.

    Returns (replies, requests): one captured reply body per op, and per op
    ``REPLAY_KEYS`` complete signed HTTP requests (bytes) for ``_replay``.
    """
    c = _client(endpoint)
    c.create_table(ts.TableMeta("bench", [("k", "INTEGER")]), ts.TableOptions(),
                   ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
    for k in range(ROWS):
        _call(c, "PutRow", k)
    captured, requests = {}, {op: [] for op in OPS}
    send = c.connection.send_receive
    host = endpoint.split("//", 1)[1]

    def recording(url, headers, body):
        status, reason, res_headers, res_body = send(url, headers, body)
        api = url.rsplit("/", 1)[-1]
        captured[api] = res_body
        head = "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n" % (url, host, len(body))
        head += "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
        requests[api].append(head.encode("latin-1") + body)
        return status, reason, res_headers, res_body

    c.connection.send_receive = recording
    for op in OPS:
        for k in range(REPLAY_KEYS):
            _call(c, op, k * (ROWS // REPLAY_KEYS))
    return captured, requests


def _replay(endpoint, requests, barrier, out):
    """A client that costs the server's machine almost nothing: it resends
    captured SDK requests (signed; the server accepts their date for 15
    minutes) and reads each reply just far enough to find its end."""
    host, port = endpoint.split("//", 1)[1].split(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    barrier.wait(60)
    cpu0, t0, ok = time.process_time(), time.perf_counter(), 0
    for i in range(REQUESTS):
        sock.sendall(requests[i % len(requests)])
        data = b""
        while True:
            data += sock.recv(65536)
            end = data.find(b"\r\n\r\n")
            if end >= 0:
                at = data.index(b"Content-Length: ") + 16
                if len(data) >= end + 4 + int(data[at:data.index(b"\r\n", at)]):
                    break
        ok += data.startswith(b"HTTP/1.1 200")
    out.put((t0, time.perf_counter(), time.process_time() - cpu0, ok))
    sock.close()


def _instant_responder(sock, bodies):
    """Answer every request on ``sock`` with the canned body of its API, at once.

    One thread, non-blocking sockets: the cheapest correct HTTP/1.1 keep-alive
    answer this process can give.  The x-ots-date is fixed at start (the SDK
    accepts 15 minutes of skew), so each reply is precomputed bytes.
    """
    from regions.otsserver.auth import content_md5, format_date, response_authorization
    date = format_date()
    replies = {}
    for api, body in bodies.items():
        h = {"x-ots-contentmd5": content_md5(body), "x-ots-requestid": "stub",
             "x-ots-date": date, "x-ots-contenttype": "protocol buffer"}
        h["authorization"] = response_authorization(KEY_ID, SECRET.encode(), api, h)
        head = "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(body)
        head += "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
        replies[api.encode()] = head.encode("latin-1") + body
    sel = selectors.DefaultSelector()
    sock.setblocking(False)
    sel.register(sock, selectors.EVENT_READ, None)
    buffers = {}
    while True:
        for key, _ in sel.select():
            if key.data is None:
                conn, _ = sock.accept()
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sel.register(conn, selectors.EVENT_READ, True)
                buffers[conn] = b""
                continue
            conn = key.fileobj
            data = conn.recv(65536)
            if not data:
                sel.unregister(conn)
                conn.close()
                continue
            buf = buffers[conn] + data
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                head = buf[:end].lower()
                at = head.index(b"content-length:") + 15
                length = int(head[at:head.index(b"\r\n", at)])
                if len(buf) < end + 4 + length:
                    break
                api = buf[:buf.index(b" HTTP/")].rsplit(b"/", 1)[-1]
                conn.sendall(replies[api])
                buf = buf[end + 4 + length:]
            buffers[conn] = buf


def _instant(bodies):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    endpoint = "http://127.0.0.1:%d" % sock.getsockname()[1]
    proc = mp.get_context("spawn").Process(target=_instant_responder, args=(sock, bodies),
                                           daemon=True)
    proc.start()
    sock.close()
    return proc, endpoint


class Setup:
    """The real server on a loaded store, the instant responder, the captured requests."""

    def __init__(self, data_dir):
        self.proc, self.endpoint = _start_server(data_dir)
        try:
            bodies, self.requests = _load(self.endpoint)
            self.stub, self.stub_endpoint = _instant(bodies)
        except BaseException:
            self.close()
            raise

    def run(self, target, op):
        """target: "instant" (SDK clients, instant responder), "server" (SDK
        clients, real server) or "replay" (replay clients, real server)."""
        if target == "instant":
            return hammer(self.stub_endpoint, op, self.stub.pid)
        if target == "server":
            return hammer(self.endpoint, op, self.proc.pid)
        return hammer(self.endpoint, op, self.proc.pid, replay=self.requests[op])

    def close(self):
        if getattr(self, "stub", None) is not None:
            self.stub.terminate()
            self.stub.join(10)
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


# ------------------------------------------------------------------ pytest
@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    s = Setup(tmp_path_factory.mktemp("otsbench"))
    yield s
    s.close()


@pytest.mark.parametrize("target", ["instant", "server", "replay"])
@pytest.mark.parametrize("op", OPS)
def test_clients_against_server(benchmark, setup, op, target):
    result = {}
    benchmark.pedantic(lambda: result.update(setup.run(target, op)), rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    print("\n%s %s: %s" % (op, target, result))
    assert result["ok"] == result["requests"]


def compare(repeats=3, targets=("instant", "server", "replay")):
    """Interleaved runs (instant, server, replay, instant, ...) per op; medians.

    Other work on the machine moves single runs by up to 2x, so the rates are
    medians of ``repeats`` alternating runs; CPU per request moves less.
    """
    import statistics
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        s = Setup(tmp)
        try:
            for op in OPS:
                runs = {t: [] for t in targets}
                for _ in range(repeats):
                    for t in targets:
                        runs[t].append(s.run(t, op))
                for name, rs in runs.items():
                    assert all(r["ok"] == r["requests"] for r in rs)
                    med = {k: statistics.median(r[k] for r in rs) for k in
                           ("requests_per_s", "server_cpu_us_per_request", "client_cpu_us_per_request")}
                    print("%-8s %-7s median %s  runs %s" % (
                        op, name, med, [r["requests_per_s"] for r in rs]), flush=True)
        finally:
            s.close()


if __name__ == "__main__":
    compare(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
