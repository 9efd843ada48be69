"""In-memory instances beside on-disk ones: the engine and the row API.

    python -m pytest bench/test_bench_memory.py --benchmark-only
    BENCH_MEM_N=200000 BENCH_MEM_ROWS=20000 python -m pytest bench/test_bench_memory.py --benchmark-only

The same workload runs on a store opened with ``None`` (lsm/memfs.py) and on
one in a temporary directory (default durability: WAL handed to the OS, no
fsync), interleaved round by round in one process (ROUNDS, default 3) so
that both see the same machine.  pytest-benchmark's statistics are the
in-memory store's; ``extra_info`` records both medians (``ops_per_s``,
``disk_ops_per_s``) and ``ratio`` = memory / disk.

Shapes: engine: 16-byte random keys, 100-byte values, one put per call, then
random point reads of present keys (after a flush, so that reads go to the
tables); rows: 1 INTEGER primary key + 3 attributes (~100 bytes), put_row
then get_row of every row.
"""
import os
import random
import shutil
import statistics
import tempfile
import time

import pytest

import lsm
import regions.tablestore as ots

N = int(os.environ.get("BENCH_MEM_N", "100000"))
ROWS = int(os.environ.get("BENCH_MEM_ROWS", "10000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))

_rng = random.Random(13)
KEYS = [_rng.randbytes(16) for _ in range(N)]
VALUES = [_rng.randbytes(100) for _ in range(1024)]
READ_KEYS = random.Random(14).sample(KEYS, min(N, 50_000))


def _interleaved(benchmark, ops, make, run):
    """ROUNDS times: ``run(make(path))`` on disk, then in memory (path None),
    each on a fresh ``make``; only ``run`` is timed.  pytest-benchmark times
    the in-memory rounds; the medians of both go to extra_info."""
    disk_s, opened = [], []

    def close_memory():
        while opened:
            opened.pop().close()

    def setup():
        close_memory()                          # the previous in-memory round's
        tmp = tempfile.mkdtemp(prefix="bench-memory-")
        try:
            target = make(os.path.join(tmp, "store"))
            t0 = time.perf_counter()
            run(target)
            disk_s.append(time.perf_counter() - t0)
            target.close()
        finally:
            shutil.rmtree(tmp)
        opened.append(make(None))
        return (opened[0],), {}

    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, iterations=1)
    close_memory()
    if benchmark.stats is not None:             # None under --benchmark-disable
        memory, disk = benchmark.stats.stats.median, statistics.median(disk_s)
        benchmark.extra_info.update(ops_per_s=round(ops / memory), disk_ops_per_s=round(ops / disk),
                                    ratio=round(disk / memory, 2))


class _Filled:
    """An engine store with every key written and flushed, for the read workload."""

    def __init__(self, path):
        self.db = lsm.DB.open(path)
        for i, k in enumerate(KEYS):
            self.db.put(k, VALUES[i & 1023])
        self.db.flush()

    def close(self):
        self.db.close()


def test_engine_put(benchmark):
    def run(db):
        put, values = db.put, VALUES
        for i, k in enumerate(KEYS):
            put(k, values[i & 1023])
    _interleaved(benchmark, N, lsm.DB.open, run)


def test_engine_get(benchmark):
    def run(filled):
        get = filled.db.get
        for k in READ_KEYS:
            get(k)
    _interleaved(benchmark, len(READ_KEYS), _Filled, run)


def _attrs(i):
    return [("a", i), ("b", "x" * 60), ("c", 1.5)]


def _rows_client(path):
    client = ots.OTSClient(ots.client.MEMORY if path is None else path)
    client.create_table(ots.TableMeta("b", [("id", "INTEGER")]))
    return client


class _FilledRows:
    def __init__(self, path):
        self.client = _rows_client(path)
        for i in range(ROWS):
            self.client.put_row("b", ots.Row([("id", i)], _attrs(i)))

    def close(self):
        self.client.close()


def test_put_row(benchmark):
    def run(client):
        for i in range(ROWS):
            client.put_row("b", ots.Row([("id", i)], _attrs(i)))
    _interleaved(benchmark, ROWS, _rows_client, run)


def test_get_row(benchmark):
    def run(filled):
        get_row = filled.client.get_row
        for i in range(ROWS):
            get_row("b", [("id", i)], max_version=1)
    _interleaved(benchmark, ROWS, _FilledRows, run)


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_open_and_close(benchmark, where, tmp_path):
    """What a test fixture pays: open an instance, create a table, close it."""
    counter = iter(range(1 << 30))

    def run():
        path = None if where == "memory" else str(tmp_path / str(next(counter)))
        _rows_client(path).close()
    benchmark.pedantic(run, rounds=5 * ROUNDS, iterations=1)
