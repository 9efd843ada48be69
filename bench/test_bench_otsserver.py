"""SDK clients in several processes hammering a local server over loopback.

Records requests/s and the server's CPU per request (from /proc of the server
process) for PutRow, GetRow and GetRange, and the clients' CPU per request for
comparison: the server is not the bottleneck when its CPU per request is below
the clients'.  Bounded: a fixed number of requests per client process.

    pytest bench/test_bench_otsserver.py --benchmark-only
"""
import logging
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time

import pytest
import tablestore as ts

CLIENTS = 4
REQUESTS = 1500          # per client process and operation
ROWS = 2000


def _cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _client(endpoint):
    logging.getLogger("tablestore").addHandler(logging.NullHandler())
    return ts.OTSClient(endpoint, "ak", "sk", "inst", retry_policy=ts.NoRetryPolicy())


def _work(args):
    endpoint, op, worker = args
    c = _client(endpoint)
    start_cpu = time.process_time()
    for i in range(REQUESTS):
        k = (worker * REQUESTS + i) % ROWS
        if op == "PutRow":
            c.put_row("bench", ts.Row([("k", k)], [("a", k), ("b", "x" * 20), ("c", 1.5)]))
        elif op == "GetRow":
            c.get_row("bench", [("k", k)])
        else:
            c.get_range("bench", ts.Direction.FORWARD, [("k", k)], [("k", ts.INF_MAX)], limit=10)
    return time.process_time() - start_cpu


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("otsbench")
    proc = subprocess.Popen([sys.executable, "-m", "regions.otsserver", "--data", str(data),
                             "--port", "0", "--instance", "inst", "--access-key-id", "ak",
                             "--access-key-secret", "sk"], stdout=subprocess.PIPE, text=True)
    endpoint = None
    while endpoint is None:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("server did not start")
        if line.startswith("export OTS_TEST_ENDPOINT="):
            endpoint = line.strip().split("=", 1)[1]
    c = _client(endpoint)
    c.create_table(ts.TableMeta("bench", [("k", "INTEGER")]), ts.TableOptions(),
                   ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
    for k in range(ROWS):
        c.put_row("bench", ts.Row([("k", k)], [("a", k), ("b", "x" * 20), ("c", 1.5)]))
    yield proc, endpoint
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


@pytest.mark.parametrize("op", ["PutRow", "GetRow", "GetRange"])
def test_sdk_clients_against_server(benchmark, server, op):
    proc, endpoint = server
    result = {}

    def run():
        cpu0, t0 = _cpu_seconds(proc.pid), time.perf_counter()
        with mp.get_context("spawn").Pool(CLIENTS) as pool:
            client_cpu = pool.map(_work, [(endpoint, op, w) for w in range(CLIENTS)])
        elapsed = time.perf_counter() - t0
        n = CLIENTS * REQUESTS
        result.update(requests_per_s=round(n / elapsed),
                      server_cpu_us_per_request=round((_cpu_seconds(proc.pid) - cpu0) / n * 1e6),
                      client_cpu_us_per_request=round(sum(client_cpu) / n * 1e6),
                      clients=CLIENTS, requests=n)

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    print("\n%s: %s" % (op, result))
    assert result["requests_per_s"] > 0
