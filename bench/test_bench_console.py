"""What serving the web console and /metrics costs the wire API.

Two ``regions-server`` subprocesses on copies of the same loaded store:

- ``off``: started with ``--no-console`` (GET answers 405, no sampler thread);
- ``scraped``: the console on.

Against both, a scraper process starts 10 GETs per second (each in its own
thread, on a new connection, as Prometheus and an operator's browser would),
cycling through ``/metrics``, ``/``, ``/tables/bench`` and a row-browser page
(``/tables/bench/rows?limit=20``); the ``off`` server answers them 405, so the
scraper's own CPU weighs on both arms alike and the difference is the
server's work of serving the console.

Against each, the replay clients of test_bench_otsserver.py (captured signed
SDK requests, resent over 4 keep-alive connections: the server's own
capacity, the measure most sensitive to extra server work) run GetRow and
PutRow, ``ROUNDS`` times back to back per measured run.  Runs alternate
off / scraped; the figure is the median of ``repeats`` runs each.  Also recorded: the server CPU of one scrape cycle
(measured alone, from /proc), from which the cost of 10 scrapes per second
follows without the noise of throughput runs: 10 x CPU per GET / 1 s of one
core.

    python bench/test_bench_console.py 5      # the table in docs/performance.md
    python bench/test_bench_console.py three 4   # CPU per request: off, quiet, scraped
    python bench/test_bench_console.py paired 30  # one server, scraped or not run by run
    python bench/test_bench_console.py paired 30 /metrics   # Prometheus alone
    python bench/test_bench_console.py paired-keepalive 30  # kept-alive connections

The paired method (``paired``) is the one that resolves a few percent on a
shared machine: one server with the console on, one scraper process running
throughout; run by run (ABBA order) the scraper sends its 10 GETs a second
either to the server or to a stand-in HTTP server (``python -m http.server``),
so the scraper's own CPU weighs on both arms and the server and its store are
the same for both.  Each pair gives a ratio (throughput and server CPU per
API request, scraped over not); the figure is the median of the ratios with
a bootstrap 95% interval.
    pytest bench/test_bench_console.py --benchmark-only -s
"""
import multiprocessing as mp
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from test_bench_otsserver import _cpu_seconds, _load, _start_server, hammer

SCRAPES_PER_S = 10
PATHS = ("/metrics", "/", "/tables/bench", "/tables/bench/rows?limit=20")
OPS = ("GetRow", "PutRow")
ROUNDS = 3               # replay runs (4 x 1500 requests each) per measured run


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


def _get(url, counter):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            r.read()
    except urllib.error.HTTPError as e:     # the --no-console server answers 405
        e.read()
    with counter.get_lock():
        counter.value += 1


def _keepalive_scraper(endpoint, stop, counter, target, paths=PATHS):
    """As Prometheus scrapes: one GET every 1/SCRAPES_PER_S seconds over a
    kept-alive connection per endpoint (``endpoint[target.value]``)."""
    import http.client
    conns = {}
    period = 1.0 / SCRAPES_PER_S
    nxt, i = time.monotonic(), 0
    while not stop.is_set():
        where = endpoint[target.value]
        c = conns.get(where)
        if c is None:
            c = conns[where] = http.client.HTTPConnection(where.split("//", 1)[1], timeout=30)
        try:
            c.request("GET", paths[i % len(paths)])
            c.getresponse().read()
        except (OSError, http.client.HTTPException):
            c.close()
            del conns[where]
        with counter.get_lock():
            counter.value += 1
        i += 1
        nxt += period
        time.sleep(max(0.0, nxt - time.monotonic()))


def _scraper(endpoint, stop, counter, target=None, paths=PATHS):
    """Start one GET every 1/SCRAPES_PER_S seconds, each in its own thread, so
    a slow answer under load does not lower the rate.  ``endpoint`` may be a
    pair, the GETs then going to ``endpoint[target.value]``."""
    import threading
    period = 1.0 / SCRAPES_PER_S
    nxt, i, threads = time.monotonic(), 0, []
    while not stop.is_set():
        where = endpoint if target is None else endpoint[target.value]
        t = threading.Thread(target=_get, args=(where + paths[i % len(paths)], counter))
        t.start()
        threads.append(t)
        i += 1
        nxt += period
        time.sleep(max(0.0, nxt - time.monotonic()))
    for t in threads:
        t.join(30)


class Setup:
    def __init__(self, tmp):
        base = "%s/base" % tmp
        proc, endpoint = _start_server(base, "--no-console")
        try:
            _bodies, self.requests = _load(endpoint)
        finally:
            _stop(proc)
        shutil.copytree(base, "%s/scraped" % tmp)
        self.off = _start_server(base, "--no-console")
        self.on = _start_server("%s/scraped" % tmp)

    def run(self, mode, op, rounds=ROUNDS):
        """``rounds`` back-to-back replay runs with the scraper going; the rate
        is all requests over the sum of the runs' elapsed times.  The scraper
        runs in both modes (against ``off`` its GETs get a cheap 405), so its
        own CPU on this shared machine is charged to both alike."""
        proc, endpoint = self.off if mode == "off" else self.on
        ctx = mp.get_context("spawn")
        stop, counter = ctx.Event(), ctx.Value("i", 0)
        scraper = ctx.Process(target=_scraper, args=(endpoint, stop, counter))
        scraper.start()
        try:
            t0 = time.perf_counter()
            results = [hammer(endpoint, op, proc.pid, replay=self.requests[op])
                       for _ in range(rounds)]
            scrapes = counter.value / (time.perf_counter() - t0)
        finally:
            stop.set()
            scraper.join(60)
        n = sum(r["requests"] for r in results)
        elapsed = sum(r["requests"] / r["requests_per_s"] for r in results)
        return dict(requests_per_s=round(n / elapsed), requests=n,
                    ok=sum(r["ok"] for r in results), scrapes_per_s=round(scrapes, 1),
                    server_cpu_us_per_request=round(statistics.mean(
                        r["server_cpu_us_per_request"] for r in results)))

    def cpu_per_get(self, n=100):
        """Server CPU (ms) per GET of the scrape cycle, measured with nothing else running."""
        proc, endpoint = self.on
        out = {}
        for path in PATHS:
            cpu0 = _cpu_seconds(proc.pid)
            for _ in range(n):
                with urllib.request.urlopen(endpoint + path, timeout=30) as r:
                    r.read()
            out[path] = round((_cpu_seconds(proc.pid) - cpu0) / n * 1e3, 2)
        return out

    def close(self):
        for proc, _ in (self.off, self.on):
            _stop(proc)


@pytest.fixture(scope="module")
def setup():
    with tempfile.TemporaryDirectory() as tmp:
        s = Setup(tmp)
        yield s
        s.close()


@pytest.mark.parametrize("mode", ["off", "scraped"])
@pytest.mark.parametrize("op", OPS)
def test_console_cost(benchmark, setup, op, mode):
    result = {}
    benchmark.pedantic(lambda: result.update(setup.run(mode, op)), rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    print("\n%s %s: %s" % (op, mode, result))
    assert result["ok"] == result["requests"]


def compare(repeats=3):
    with tempfile.TemporaryDirectory() as tmp:
        s = Setup(tmp)
        try:
            cpu = s.cpu_per_get()
            print("server CPU per GET (ms):", cpu)
            mean_ms = sum(cpu.values()) / len(cpu)
            print("=> %d GETs/s cost %.2f%% of one core" % (SCRAPES_PER_S,
                                                           SCRAPES_PER_S * mean_ms / 10))
            for op in OPS:
                runs = {"off": [], "scraped": []}
                for _ in range(repeats):
                    for mode in runs:
                        runs[mode].append(s.run(mode, op))
                off = statistics.median(r["requests_per_s"] for r in runs["off"])
                on = statistics.median(r["requests_per_s"] for r in runs["scraped"])
                print("%s: off %d req/s %s, scraped %d req/s %s (scrapes/s %s): %+.1f%%" % (
                    op, off, [r["requests_per_s"] for r in runs["off"]], on,
                    [r["requests_per_s"] for r in runs["scraped"]],
                    [r["scrapes_per_s"] for r in runs["scraped"]], (on - off) / off * 100))
                # The server is bound by one core (the GIL), so its capacity is
                # 1 / (server CPU per API request); the scraped server's CPU per
                # request includes the console's work.  CPU time, unlike wall
                # time, is not stretched by other processes on the machine.
                cpu_off = statistics.median(r["server_cpu_us_per_request"] for r in runs["off"])
                cpu_on = statistics.median(r["server_cpu_us_per_request"] for r in runs["scraped"])
                print("%s: server CPU per request off %d us %s, scraped %d us %s: "
                      "capacity cost %.1f%%" % (
                          op, cpu_off, [r["server_cpu_us_per_request"] for r in runs["off"]], cpu_on,
                          [r["server_cpu_us_per_request"] for r in runs["scraped"]],
                          (1 - cpu_off / cpu_on) * 100))
        finally:
            s.close()


def cpu_three_ways(repeats=4, op="GetRow"):
    """Server CPU per API request of three servers on copies of one store, runs
    interleaved: console off, console on but not scraped, console scraped 10
    times a second.  quiet - off is the noise floor of the comparison; scraped
    - quiet is what serving the scrapes costs."""
    with tempfile.TemporaryDirectory() as tmp:
        base = "%s/base" % tmp
        proc, endpoint = _start_server(base, "--no-console")
        try:
            _bodies, requests = _load(endpoint)
        finally:
            _stop(proc)
        for name in ("quiet", "scraped"):
            shutil.copytree(base, "%s/%s" % (tmp, name))
        servers = {"off": _start_server(base, "--no-console"),
                   "quiet": _start_server("%s/quiet" % tmp),
                   "scraped": _start_server("%s/scraped" % tmp)}
        ctx = mp.get_context("spawn")
        cpu = {name: [] for name in servers}
        try:
            for _ in range(repeats):
                for name, (proc, endpoint) in servers.items():
                    stop, counter = ctx.Event(), ctx.Value("i", 0)
                    scraper = None
                    if name == "scraped":
                        scraper = ctx.Process(target=_scraper, args=(endpoint, stop, counter))
                        scraper.start()
                    try:
                        runs = [hammer(endpoint, op, proc.pid, replay=requests[op])
                                for _ in range(ROUNDS)]
                    finally:
                        stop.set()
                        if scraper is not None:
                            scraper.join(60)
                    cpu[name].append(statistics.mean(r["server_cpu_us_per_request"] for r in runs))
        finally:
            for proc, _ in servers.values():
                _stop(proc)
        for name, values in cpu.items():
            print("%s: server CPU per %s %.1f us (median) %s" % (
                name, op, statistics.median(values), [round(v) for v in values]))


def _stand_in():
    """``python -m http.server`` on a free loopback port: what the scraper
    hits when the server is not being scraped (its 404s cost the scraper
    what the console's pages do)."""
    proc = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1",
                             "--directory", tempfile.gettempdir(), "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()                  # "Serving HTTP on 127.0.0.1 port N (...)"
    return proc, "http://127.0.0.1:%s" % line.split(" port ")[1].split()[0]


def _interval(ratios, rng=random.Random(0), n=2000):
    """Median of ``ratios`` and its bootstrap 95% interval."""
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return statistics.median(ratios), meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def paired(pairs=30, ops=OPS, paths=PATHS, keepalive=False):
    """Run by run, the one server scraped or not (ABBA); returns per op the
    pairs' ratios (scraped / not) of throughput and of server CPU per request.
    ``paths``: what the scraper cycles through (``("/metrics",)``: Prometheus
    alone); ``keepalive``: GETs over kept-alive connections, as Prometheus
    sends them, instead of a new connection each."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, endpoint = _start_server("%s/data" % tmp)
        decoy = _stand_in()
        ctx = mp.get_context("spawn")
        stop, counter, target = ctx.Event(), ctx.Value("i", 0), ctx.Value("i", 1)
        scraper = ctx.Process(target=_keepalive_scraper if keepalive else _scraper,
                              args=((endpoint, decoy[1]), stop, counter, target, paths))
        out = {}
        try:
            _bodies, requests = _load(endpoint)
            scraper.start()
            for op in ops:
                rate, cpu = [], []
                for i in range(pairs):
                    got = {}
                    for scraped in ((True, False) if i % 2 == 0 else (False, True)):
                        target.value = 0 if scraped else 1
                        got[scraped] = hammer(endpoint, op, proc.pid, replay=requests[op])
                        assert got[scraped]["ok"] == got[scraped]["requests"]
                    rate.append(got[True]["requests_per_s"] / got[False]["requests_per_s"])
                    cpu.append(got[True]["server_cpu_us_per_request"]
                               / got[False]["server_cpu_us_per_request"])
                out[op] = dict(throughput=_interval(rate), server_cpu=_interval(cpu),
                               pairs=pairs)
                print("%s, %d pairs: throughput scraped / not %.3f (95%% %.3f-%.3f); "
                      "server CPU per request %.3f (95%% %.3f-%.3f)"
                      % ((op, pairs) + out[op]["throughput"] + out[op]["server_cpu"]), flush=True)
        finally:
            stop.set()
            scraper.join(60)
            _stop(proc)
            decoy[0].terminate()
            decoy[0].wait(10)
        return out


def test_console_cost_paired(benchmark):
    """Six pairs per op (``python bench/test_bench_console.py paired 30`` for
    the figure in docs/performance.md)."""
    result = {}
    benchmark.pedantic(lambda: result.update(paired(6)), rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    for op in OPS:
        assert 0 < result[op]["throughput"][0] and 0 < result[op]["server_cpu"][0]


if __name__ == "__main__":
    if sys.argv[1:2] in (["paired"], ["paired-keepalive"]):
        paired(int(sys.argv[2]) if len(sys.argv) > 2 else 30,
               paths=tuple(sys.argv[3].split(",")) if len(sys.argv) > 3 else PATHS,
               keepalive=sys.argv[1] == "paired-keepalive")
    elif sys.argv[1:2] == ["three"]:
        cpu_three_ways(int(sys.argv[2]) if len(sys.argv) > 2 else 4)
    else:
        compare(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
