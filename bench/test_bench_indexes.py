"""Secondary indexes: what a write pays for them, and how far a global index lags.

Rows as bench/test_bench_rows.py's (~100 bytes): an INTEGER primary key
``id`` and the predefined columns ``a`` INTEGER (= id), ``b`` STRING (60
characters), ``c`` DOUBLE.  Every arm is a table of one client (one store,
one block cache, one index maintainer thread), measured in the same session:

- ``plain``: no index; its writes take the C path (``_writes.PlainWriter``).
- ``python``: no index, but left out of the C writer's tables
  (``client._writer.allow_c_path(name, None)``), so its writes take the Python path
  (``prepare``, ``RowWriter.run`` / ``run_batch``): what the C path saves.
  Writes to the indexed tables below take the C path too, framed by the
  indexer's ``before_write`` (the feed entry) and ``after_write`` (the local
  indexes, or waking the maintainer), so plain -> an indexed arm is the
  index's own cost.
- ``global1``: one global index (on ``a``, carrying ``c``).
- ``global3``: three global indexes (``a``; ``b``; ``a, b``).
- ``local1``: one local index (``id, a``, carrying ``c``).
- ``stream``: no index, a stream (Tablestore Streams, streams.py): its
  writes take the Python path (the feed entry carries the write's entries,
  which the C writer does not hand over), then the record is copied into the
  stream's log; compare with ``python`` for the stream's own cost.

Write cost (``test_index_write_cost``): put_row of new rows, update_row of
the indexed column ``a`` (every index row moves), batch_write_row of 200 new
rows.  Each round times ``BENCH_INDEX_N`` rows of every arm, the arms'
order rotated round by round; per arm and round: the writer's wall time
(the maintainer thread runs beside it), the writer thread's CPU time
(``time.thread_time``), then for the global arms the drain
(``wait_for_indexes``, not part of the write) and the maintainer thread's
CPU over the round and the drain.  Medians of ``BENCH_INDEX_ROUNDS`` rounds,
in us a row; ``extra_info`` and the summary printed at the end hold them and
the ratios to ``plain`` (the goal: one global index at most 1.5x, one local
index at most 2x a plain write's time on the writer's thread).

Lag (``test_global_index_lag``): one global index, put_row of new rows for
``BENCH_INDEX_LAG_S`` seconds (default 10) at a fixed rate from one or two
writer threads (paced against the clock, so a writer that falls behind
catches up: the rate reached is recorded), or as fast as one writer goes.
Two lags per row: ``lag_ms`` (the Indexer's: feed entry's time to the start
of the maintainer pass that applies it) and the end-to-end one (put_row
called to its reconcile returned: the index row is readable), p50 / p99 /
max, each second's p99, the largest backlog seen, and the drain time after
the load.  The bench keeps every lag (``Indexer._lags`` is swapped for an
unbounded deque; it keeps the last 100,000) and wraps ``Indexer.reconcile``
to time the end-to-end lag.

Where the time goes (``test_index_write_stages``, printed with ``-s``): the
region-server calls of the writer and of the maintainer, timed call by call
through a stand-in server, by call and table (base, feed, refs, index), the
maintainer paused while the writer runs and its drain then run on the
bench's thread; "the rest" is everything else (the API call, in C or in
Python, the indexer's own Python; the stand-in's own cost a call, measured
and listed, falls in it too).  The C writer keeps its own reference to the
server, so a C-path arm's base write is in "the rest" (the ``plain`` arm's
total is that path's whole cost).

    pytest bench/test_bench_indexes.py --benchmark-only -s
    BENCH_INDEX_ROUNDS=5 pytest bench/test_bench_indexes.py --benchmark-only -s -k cost
    BENCH_INDEX_LAG_RATES=5000,20000 pytest bench/test_bench_indexes.py --benchmark-only -s -k lag

These reach into the client's internals (``_writer``, ``_indexer``,
its ``_mutex``, ``_thread``, ``_lags``, ``_drain``): they measure the
implementation, not the API.
"""
import array
import collections
import statistics
import os
import threading
import time
from time import perf_counter, perf_counter_ns

import pytest

from regions.tablestore import (BatchWriteRowRequest, CapacityUnit, Condition, OTSClient,
                                PutRowItem, ReservedThroughput, Row, RowExistenceExpectation,
                                SecondaryIndexMeta, SecondaryIndexType,
                                TableInBatchWriteRowItem, TableMeta, TableOptions)
from regions.tablestore import pkcodec
from regions.tablestore.indexes import FEED_SUFFIX, REFS_SUFFIX
from regions.tablestore.streams import StreamSpecification

N = int(os.environ.get("BENCH_INDEX_N", "10000"))
ROUNDS = int(os.environ.get("BENCH_INDEX_ROUNDS", "3"))
LAG_S = float(os.environ.get("BENCH_INDEX_LAG_S", "10"))
BATCH = 200
LOCAL = SecondaryIndexType.LOCAL_INDEX
IGNORE = Condition(RowExistenceExpectation.IGNORE)
DEFINED = [("a", "INTEGER"), ("b", "STRING"), ("c", "DOUBLE")]
INDEXES = {
    "plain": [],
    "python": [],
    "global1": [SecondaryIndexMeta("global1_a", ["a"], ["c"])],
    "global3": [SecondaryIndexMeta("global3_a", ["a"], ["c"]),
                SecondaryIndexMeta("global3_b", ["b"], ["c"]),
                SecondaryIndexMeta("global3_ab", ["a", "b"], [])],
    "local1": [SecondaryIndexMeta("local1_a", ["id", "a"], ["c"], LOCAL)],
    "stream": [],
}
ARMS = tuple(INDEXES)
GLOBAL_ARMS = ("global1", "global3")


def _attrs(i):
    return [("a", i), ("b", "x" * 60), ("c", 1.5)]


def _create(client, name, indexes):
    client.create_table(TableMeta(name, [("id", "INTEGER")], defined_columns=list(DEFINED)),
                        TableOptions(), ReservedThroughput(CapacityUnit(0, 0)),
                        secondary_indexes=list(indexes))


def _client(path):
    """One client with every arm's table; ``python`` left to the Python path."""
    c = OTSClient(str(path))
    for arm in ARMS:
        _create(c, arm, INDEXES[arm])
    c.update_table("stream", stream_spec=StreamSpecification(True, 24))
    c._writer.allow_c_path("python", None)
    assert sorted(c._writer._c_schemas) == sorted(set(ARMS) - {"python", "stream"})
    return c


def _maintainer_cpu(client):
    """CPU seconds of the client's index maintainer thread so far."""
    thread = client._indexer._thread
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


# -- write cost: the workloads ------------------------------------------------
def _puts(client, arm, rnd):
    base = rnd * N
    put = client.put_row
    return lambda: [put(arm, Row([("id", i)], _attrs(i))) for i in range(base, base + N)]


def _updates(client, arm, rnd):
    """update_row of the indexed column: a new value each round, so every
    index row on ``a`` moves (the old one deleted, the new one written)."""
    shift = (rnd + 1) * N
    update = client.update_row
    return lambda: [update(arm, Row([("id", i)], {"put": [("a", i + shift)]}), IGNORE)
                    for i in range(N)]


def _batch_request(arm, ids):
    req = BatchWriteRowRequest()
    req.add(TableInBatchWriteRowItem(arm, [PutRowItem(Row([("id", i)], _attrs(i)), IGNORE)
                                           for i in ids]))
    return req


def _batches(client, arm, rnd):
    base = rnd * N

    def run():
        for start in range(base, base + N, BATCH):
            response = client.batch_write_row(_batch_request(arm, range(start, start + BATCH)))
            assert response.is_all_succeed()
    return run


def _fill(client, arm):
    for start in range(0, N, BATCH):
        client.batch_write_row(_batch_request(arm, range(start, min(N, start + BATCH))))
    if arm in GLOBAL_ARMS:
        assert client.wait_for_indexes(arm, 120)


WORKLOADS = {"put_row": (_puts, False), "update_row": (_updates, True),
             "batch_write_row_200": (_batches, False)}
RESULTS = {}


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    if not RESULTS:
        return
    print(f"\n\nsecondary indexes: us a row, medians of {ROUNDS} interleaved rounds, N = {N}")
    print("  (wall: the writer's wait; cpu: the writer thread's CPU; drain: wait_for_indexes "
          "after the round; maint: the maintainer's CPU)")
    for name, res in RESULTS.items():
        if name.startswith("lag"):
            continue
        print(f"  {name}")
        plain, python = res["plain"], res["python"]
        for arm, f in res.items():
            print(f"    {arm:8s} wall {f['wall_us']:6.2f}  cpu {f['cpu_us']:6.2f}  "
                  f"drain {f['drain_us']:6.2f}  maint {f['maint_us']:6.2f}   "
                  f"/plain: wall {f['wall_us'] / plain['wall_us']:5.2f}x "
                  f"cpu {f['cpu_us'] / plain['cpu_us']:5.2f}x   "
                  f"/python: cpu {f['cpu_us'] / python['cpu_us']:5.2f}x")
    for name, res in RESULTS.items():
        if name.startswith("lag"):
            print(f"  {name}: {res['rate_reached']:,.0f} writes/s reached; lag_ms p50 "
                  f"{res['lag_ms_p50']:.1f} p99 {res['lag_ms_p99']:.1f} "
                  f"max {res['lag_ms_max']:.1f}; "
                  f"end to end p50 {res['e2e_ms_p50']:.1f} p99 {res['e2e_ms_p99']:.1f} max "
                  f"{res['e2e_ms_max']:.1f} ms; backlog max {res['backlog_max']:,}; "
                  f"drained in {res['drain_s']:.2f} s")
            print(f"    put_row p50 {res['put_us_p50']:.1f} us, p99 {res['put_us_p99']:.1f} us; "
                  f"maintainer CPU {res['maintainer_cpu_share']:.0%} of a core; "
                  f"end-to-end p99 by second: {res['e2e_ms_p99_by_second']}")


def _round(client, arm, make, rnd):
    """One arm's round: (wall s, writer CPU s, drain s, maintainer CPU s)."""
    run = make(client, arm, rnd)
    m0 = _maintainer_cpu(client)
    t0, u0 = perf_counter(), time.thread_time()
    run()
    t1, u1 = perf_counter(), time.thread_time()
    if arm in GLOBAL_ARMS:
        assert client.wait_for_indexes(arm, 120), f"{arm}: the feed did not drain"
    t2 = perf_counter()
    return t1 - t0, u1 - u0, t2 - t1, _maintainer_cpu(client) - m0


@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_index_write_cost(benchmark, tmp_path, workload):
    make, prefill = WORKLOADS[workload]
    client = _client(tmp_path / "store")
    try:
        if prefill:
            for arm in ARMS:
                _fill(client, arm)
        got = {arm: [] for arm in ARMS}
        for rnd in range(ROUNDS):
            k = rnd % len(ARMS)
            for arm in ARMS[k:] + ARMS[:k]:
                got[arm].append(_round(client, arm, make, rnd))
        # the usual table: one more round of global1
        benchmark.pedantic(make(client, "global1", ROUNDS), rounds=1, iterations=1)
        assert client.wait_for_indexes("global1", 120)
        res = {}
        for arm, rounds in got.items():
            wall, cpu, drain, maint = (statistics.median(x) * 1e6 / N for x in zip(*rounds))
            res[arm] = {"wall_us": wall, "cpu_us": cpu, "drain_us": drain, "maint_us": maint}
        for arm, f in res.items():
            for k in ("wall", "cpu"):
                f[f"{k}_vs_plain"] = f[f"{k}_us"] / res["plain"][f"{k}_us"]
                f[f"{k}_vs_python"] = f[f"{k}_us"] / res["python"][f"{k}_us"]
            benchmark.extra_info.update({f"{arm}_{k}": round(v, 3) for k, v in f.items()})
        benchmark.extra_info.update({"rounds": ROUNDS, "rows": N})
        RESULTS[workload] = res
    finally:
        client.close()


# -- lag of a global index under a sustained load -------------------------------
def _lag_cases():
    """(rate a second or None: as fast as it goes, writer threads)."""
    rates = os.environ.get("BENCH_INDEX_LAG_RATES")
    cases = ([(int(r), 1) for r in rates.split(",")] if rates
             else [(10_000, 1), (10_000, 2), (None, 1)])
    return [pytest.param(r, t, id=f"{r or 'max'}-{t}thread") for r, t in cases]


def _pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


@pytest.mark.parametrize("rate,threads", _lag_cases())
def test_global_index_lag(benchmark, tmp_path, rate, threads):
    client = OTSClient(str(tmp_path / "store"))
    _create(client, "lagged", INDEXES["global1"])
    ix = client._indexer
    ix._lags = collections.deque()          # every applied lag (it keeps 100,000)
    cap = int(LAG_S * 200_000) + 1
    sent = array.array("d", bytes(8 * cap))     # perf_counter() at put_row's call, by id
    took = array.array("d", bytes(8 * cap))     # put_row's own wall time, by id
    applied = []                                # (row key, perf_counter() after its reconcile)
    reconcile = ix.reconcile

    def timed_reconcile(base, row_key, indexes=None):
        reconcile(base, row_key, indexes)
        applied.append((row_key, perf_counter()))
    ix.reconcile = timed_reconcile
    progress = [0] * threads                    # rows written, by writer thread
    backlog = []
    stop = threading.Event()

    def writer(k, start, end):
        put, per = client.put_row, (rate / threads if rate else None)
        i, j = k, 0
        while i < cap:
            now = perf_counter()
            if now >= end:
                break
            if per is not None and j >= (now - start) * per:
                time.sleep(0.0005)
                continue
            sent[i] = now
            put("lagged", Row([("id", i)], _attrs(i)))
            took[i] = perf_counter() - now
            i += threads
            j += 1
            progress[k] = j

    def sampler():
        while not stop.wait(0.1):
            backlog.append(sum(progress) - len(applied))

    def run():
        m0 = _maintainer_cpu(client)
        start = perf_counter() + 0.05
        ts = [threading.Thread(target=writer, args=(k, start, start + LAG_S))
              for k in range(threads)]
        mon = threading.Thread(target=sampler)
        mon.start()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        t_end = perf_counter()
        ok = client.wait_for_indexes("lagged", 300)
        drain = perf_counter() - t_end
        stop.set()
        mon.join()
        return ok, drain, t_end - start, _maintainer_cpu(client) - m0

    try:
        out = []
        benchmark.pedantic(lambda: out.append(run()), rounds=1, iterations=1)
        ok, drain, elapsed, maint = out[0]
        assert ok, "the feed did not drain in 300 s"
        total = sum(progress)
        e2e, by_second = [], collections.defaultdict(list)
        t0 = min(sent[k] for k in range(threads))
        for row_key, t in applied:
            i = pkcodec.decode_pk(row_key, 1)[0][0]
            lag = (t - sent[i]) * 1000
            e2e.append(lag)
            by_second[int(sent[i] - t0)].append(lag)
        lags = list(ix._lags)
        puts = [took[i] * 1e6 for i in range(cap) if sent[i]]
        res = {"rate_target": rate or 0, "threads": threads, "seconds": round(elapsed, 2),
               "written": total, "rate_reached": total / elapsed,
               "lag_ms_p50": _pct(lags, 0.5), "lag_ms_p99": _pct(lags, 0.99),
               "lag_ms_max": max(lags), "e2e_ms_p50": _pct(e2e, 0.5),
               "e2e_ms_p99": _pct(e2e, 0.99), "e2e_ms_max": max(e2e),
               "e2e_ms_p99_by_second": [round(_pct(v, 0.99), 1)
                                        for _, v in sorted(by_second.items())],
               "put_us_p50": _pct(puts, 0.5), "put_us_p99": _pct(puts, 0.99),
               "backlog_max": max(backlog) if backlog else 0, "drain_s": drain,
               "maintainer_cpu_share": maint / (elapsed + drain)}
        benchmark.extra_info.update({k: (round(v, 3) if isinstance(v, float) else v)
                                     for k, v in res.items()})
        RESULTS[f"lag {rate or 'max'}/s, {threads} writer thread{'s' * (threads > 1)}"] = res
    finally:
        ix.reconcile = reconcile
        client.close()


# -- where the time goes ------------------------------------------------------------
class TimedServer:
    """Stands in for the region server: times each call (a scan step by step),
    by (caller, method, table kind)."""

    def __init__(self, inner, stats, role):
        self._inner, self._stats, self._role = inner, stats, role
        for m in ("put", "get", "delete", "write", "read_range"):
            setattr(self, m, self._wrap(m, getattr(inner, m)))

    @staticmethod
    def kind(table):
        if table.endswith(FEED_SUFFIX):
            return "feed"
        if table.endswith(REFS_SUFFIX):
            return "refs"
        return "index" if "_" in table else "base"

    def _wrap(self, method, fn):
        stats, role, kind = self._stats, self._role, self.kind

        def timed(table, *args, **kwargs):
            t = perf_counter_ns()
            got = fn(table, *args, **kwargs)
            d = perf_counter_ns() - t
            s = stats[(role, method, kind(table))]
            s[0] += 1
            s[1] += d
            return got
        return timed

    def scan(self, table, *args, **kwargs):
        it = iter(self._inner.scan(table, *args, **kwargs))
        s = self._stats[(self._role, "scan", self.kind(table))]
        while True:
            t = perf_counter_ns()
            try:
                item = next(it)
            except StopIteration:
                s[0] += 1
                s[1] += perf_counter_ns() - t
                return
            s[0] += 1
            s[1] += perf_counter_ns() - t
            yield item

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _stage_table(stats, rows, total_ns):
    lines, acc = [], 0
    for (role, method, kind), (calls, ns) in sorted(stats.items(), key=lambda kv: -kv[1][1]):
        acc += ns
        lines.append((f"{role} {method} {kind}", calls / rows, ns / rows / 1000))
    lines.append(("the rest", 0.0, (total_ns - acc) / rows / 1000))
    return lines


def test_index_write_stages(benchmark, tmp_path):
    client = _client(tmp_path / "store")
    ix = client._indexer
    real = client._writer.server
    report = {}
    try:
        for op, make in (("put_row", _puts), ("update_row", _updates)):
            if op == "update_row":
                for arm in ("plain", "python", "global1", "local1"):
                    _fill(client, arm)
            for arm in ("plain", "python", "global1", "local1"):
                stats = collections.defaultdict(lambda: [0, 0])
                client._writer.server = TimedServer(real, stats, "writer")
                ix.server = TimedServer(real, stats, "indexer")
                paused = arm == "global1"
                if paused:                 # the maintainer waits at its next pass
                    ix._mutex.acquire()
                    time.sleep(0.1)
                try:
                    run = make(client, arm, 1)
                    t0 = perf_counter_ns()
                    run()
                    report[f"{op} {arm}: the writer"] = _stage_table(stats, N,
                                                                      perf_counter_ns() - t0)
                    if paused:
                        stats.clear()
                        table = ix.tables[arm]
                        t0 = perf_counter_ns()
                        globals_ = [i for i in table.indexes if not i.local]
                        while ix._drain(table, 256, globals_):
                            pass
                        report[f"{op} {arm}: the maintainer's drain"] = _stage_table(
                            stats, N, perf_counter_ns() - t0)
                finally:
                    if paused:
                        ix._mutex.release()
                    client._writer.server = ix.server = real
        # the stand-in's own cost a call
        stats = collections.defaultdict(lambda: [0, 0])
        timed = TimedServer(real, stats, "x")
        t0 = perf_counter_ns()
        for _ in range(N):
            real.get("plain", b"\x00")
        t1 = perf_counter_ns()
        for _ in range(N):
            timed.get("plain", b"\x00")
        overhead = ((perf_counter_ns() - t1) - (t1 - t0)) / N / 1000
        benchmark.pedantic(make(client, "global1", 2), rounds=1, iterations=1)
    finally:
        client.close()
    print(f"\n\nwhere an indexed write's time goes (us a row, N = {N}; the stand-in server "
          f"adds {overhead:.2f} us a call, counted in each call's time)")
    for title, lines in report.items():
        total = sum(us for _, _, us in lines)
        print(f"  {title}: {total:.2f} us a row")
        for name, calls, us in lines:
            print(f"    {name:28s} {calls:5.2f} calls {us:7.2f} us")
        benchmark.extra_info[title] = {name: round(us, 3) for name, _, us in lines}
    benchmark.extra_info["stand_in_us_a_call"] = round(overhead, 3)
