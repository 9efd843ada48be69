"""LevelDB's db_bench workloads through the Python API, ours beside LevelDB (plyvel).

    pip install -e '.[bench]'
    python -m pytest bench/test_bench_lsm.py --benchmark-only            # N = 1,000,000
    BENCH_N=200000 python -m pytest bench/test_bench_lsm.py --benchmark-only

Shapes (as in ../shared/reference/perf.md): 16-byte keys (big-endian counter
for fillseq/fillbatch, random bytes for fillrandom), 100-byte values from a
pool of 65,536 random values, one put per call unless batched (1000 per
WriteBatch).  Reads, seeks and scans run on the fillrandom store after
compact_range(), close and reopen; the first read pass warms the caches and
is not measured.  Each engine runs with its library defaults, WAL on, no
fsync per write.  Every benchmark records ``ops_per_s`` in ``extra_info``;
compare ours and plyvel's as ratios from the same session.
"""
import os
import random
import shutil
import tempfile

import pytest

import lsm

N = int(os.environ.get("BENCH_N", "1000000"))
READS = min(N, 200_000)
SCANS = 2_000
BATCH = 1000

_rng = random.Random(301)
VALUES = [_rng.randbytes(100) for _ in range(65536)]
SEQ_KEYS = [i.to_bytes(16, "big") for i in range(N)]
RAND_KEYS = [_rng.randbytes(16) for _ in range(N)]
READ_KEYS = random.Random(7).sample(RAND_KEYS, READS)
MISSING_KEYS = [_rng.randbytes(16) for _ in range(READS)]
SEEK_KEYS = random.Random(8).sample(RAND_KEYS, SCANS)


class Ours:
    name = "lsm"

    def __init__(self, path):
        self.db = lsm.DB.open(path)

    def put(self, k, v):
        self.db.put(k, v)

    def fill_batches(self, keys):
        db, values = self.db, VALUES
        for i in range(0, len(keys), BATCH):
            b = lsm.WriteBatch()
            put = b.put
            for j, k in enumerate(keys[i:i + BATCH], i):
                put(k, values[j & 0xFFFF])
            db.write(b)

    def getter(self):
        return self.db.get

    def compact(self):
        self.db.compact_range()

    def scan_from(self, key, n):
        it = self.db.scan(key)
        for _ in zip(range(n), it):
            pass

    def full_scan(self):
        n = 0
        for _ in self.db.scan():
            n += 1
        return n

    def close(self):
        self.db.close()


class LevelDB:
    name = "plyvel"

    def __init__(self, path):
        import plyvel
        self.db = plyvel.DB(path, create_if_missing=True)

    def put(self, k, v):
        self.db.put(k, v)

    def fill_batches(self, keys):
        db, values = self.db, VALUES
        for i in range(0, len(keys), BATCH):
            with db.write_batch() as b:
                put = b.put
                for j, k in enumerate(keys[i:i + BATCH], i):
                    put(k, values[j & 0xFFFF])

    def getter(self):
        return self.db.get

    def compact(self):
        self.db.compact_range()

    def scan_from(self, key, n):
        it = self.db.iterator(start=key)
        for _ in zip(range(n), it):
            pass

    def full_scan(self):
        n = 0
        for _ in self.db.iterator():
            n += 1
        return n

    def close(self):
        self.db.close()


ENGINES = [Ours, LevelDB]


@pytest.fixture(params=ENGINES, ids=lambda e: e.name)
def engine(request):
    if request.param is LevelDB:
        pytest.importorskip("plyvel", reason="the peer needs the bench extra: pip install -e '.[bench]'")
    return request.param


def _run_fill(benchmark, engine, fill):
    dirs = []

    def setup():
        d = tempfile.mkdtemp(prefix=f"bench-{engine.name}-")
        dirs.append(d)
        return (engine(d),), {}

    def run(store):
        fill(store)
        store.close()

    try:
        benchmark.pedantic(run, setup=setup, rounds=1, iterations=1)
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    benchmark.extra_info["ops_per_s"] = N / benchmark.stats.stats.mean


def test_fillseq(benchmark, engine):
    def fill(store):
        put, values = store.put, VALUES
        for i, k in enumerate(SEQ_KEYS):
            put(k, values[i & 0xFFFF])
    _run_fill(benchmark, engine, fill)


def test_fillrandom(benchmark, engine):
    def fill(store):
        put, values = store.put, VALUES
        for i, k in enumerate(RAND_KEYS):
            put(k, values[i & 0xFFFF])
    _run_fill(benchmark, engine, fill)


def test_fillbatch(benchmark, engine):
    _run_fill(benchmark, engine, lambda store: store.fill_batches(SEQ_KEYS))


@pytest.fixture(scope="module")
def filled():
    """Per engine: the fillrandom store, compacted, closed and reopened."""
    made = {}
    yield lambda eng: made.get(eng.name) or made.setdefault(eng.name, _make_filled(eng))
    for store, d in made.values():
        store.close()
        shutil.rmtree(d, ignore_errors=True)


def _make_filled(engine):
    d = tempfile.mkdtemp(prefix=f"bench-read-{engine.name}-")
    store = engine(d)
    put = store.put
    for i, k in enumerate(RAND_KEYS):
        put(k, VALUES[i & 0xFFFF])
    store.compact()
    store.close()
    store = engine(d)
    get = store.getter()
    for k in READ_KEYS:          # warm-up pass, not measured
        get(k)
    return store, d


def _reads(benchmark, store, keys, expect_found):
    get = store.getter()

    def run():
        found = 0
        for k in keys:
            if get(k) is not None:
                found += 1
        return found

    found = benchmark.pedantic(run, rounds=3, iterations=1)
    assert found == (len(keys) if expect_found else 0)
    benchmark.extra_info["ops_per_s"] = len(keys) / benchmark.stats.stats.median


def test_readrandom(benchmark, engine, filled):
    _reads(benchmark, filled(engine)[0], READ_KEYS, True)


def test_readmissing(benchmark, engine, filled):
    _reads(benchmark, filled(engine)[0], MISSING_KEYS, False)


def test_seekrandom_scan100(benchmark, engine, filled):
    store = filled(engine)[0]

    def run():
        for k in SEEK_KEYS:
            store.scan_from(k, 100)

    benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["ops_per_s"] = SCANS / benchmark.stats.stats.median
    benchmark.extra_info["keys_per_s"] = 100 * SCANS / benchmark.stats.stats.median


def test_fullscan(benchmark, engine, filled):
    store = filled(engine)[0]
    n = benchmark.pedantic(store.full_scan, rounds=3, iterations=1)
    assert n == N
    benchmark.extra_info["ops_per_s"] = N / benchmark.stats.stats.median
