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
fsync per write.

Ours and plyvel run interleaved in one process (a plyvel round, then ours,
ROUNDS times, default 3): pytest-benchmark's statistics are ours, and
``extra_info`` records both medians (``ops_per_s``, ``peer_ops_per_s``) and
``ratio`` = ours / plyvel; the summary printed at the end lists the ratios.

Also: point-read cost at 1e5 and 1e6 keys (1e7 with BENCH_FLAT_1E7=1, which
takes minutes and ~2 GB of disk) and readrandom from 2 threads.
"""
import os
import random
import shutil
import statistics
import tempfile
import threading
import time

import pytest

import lsm

N = int(os.environ.get("BENCH_N", "1000000"))
READS = min(N, 200_000)
SCANS = 2_000
BATCH = 1000
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))

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

    def new_reader(self):
        return self.db.get

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

    def new_reader(self):
        return self.db.get

    def close(self):
        self.db.close()


RESULTS = {}


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    if RESULTS:
        print("\n\nours / plyvel (medians of %d interleaved rounds, N = %d)" % (ROUNDS, N))
        for name, (ours, peer) in RESULTS.items():
            print(f"  {name:28s} ours {ours:12,.0f}/s  plyvel {peer:12,.0f}/s  ratio {ours / peer:5.2f}x")


def _interleaved(benchmark, name, ours_round, peer_round, ops):
    """Run ``peer_round()`` then ``ours_round()``, ROUNDS times; each returns
    its own seconds (setup excluded).  Benchmark stats are ours; the medians
    and the ratio go to extra_info and RESULTS."""
    times = {"ours": [], "peer": []}

    def setup():
        times["peer"].append(peer_round())
        return (), {}

    def run():
        times["ours"].append(ours_round())

    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, iterations=1)
    ours = ops / statistics.median(times["ours"])
    peer = ops / statistics.median(times["peer"])
    benchmark.extra_info.update(ops_per_s=ours, peer_ops_per_s=peer, ratio=ours / peer,
                                ours_s=times["ours"], peer_s=times["peer"])
    RESULTS[name] = (ours, peer)


def _peer():
    pytest.importorskip("plyvel", reason="the peer needs the bench extra: pip install -e '.[bench]'")
    return LevelDB


def _fill_round(engine, fill):
    def one():
        d = tempfile.mkdtemp(prefix=f"bench-{engine.name}-")
        try:
            store = engine(d)
            t = time.perf_counter()
            fill(store)
            store.close()
            return time.perf_counter() - t
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return one


def _put_all(keys):
    def fill(store):
        put, values = store.put, VALUES
        for i, k in enumerate(keys):
            put(k, values[i & 0xFFFF])
    return fill


@pytest.mark.parametrize("workload", ["fillseq", "fillrandom", "fillbatch"])
def test_fill(benchmark, workload):
    peer = _peer()
    fill = {"fillseq": _put_all(SEQ_KEYS), "fillrandom": _put_all(RAND_KEYS),
            "fillbatch": lambda store: store.fill_batches(SEQ_KEYS)}[workload]
    _interleaved(benchmark, workload, _fill_round(Ours, fill), _fill_round(peer, fill), N)


def _make_filled(engine, keys):
    d = tempfile.mkdtemp(prefix=f"bench-read-{engine.name}-")
    store = engine(d)
    put = store.put
    for i, k in enumerate(keys):
        put(k, VALUES[i & 0xFFFF])
    store.compact()
    store.close()
    store = engine(d)
    get = store.getter()
    for k in keys[:READS]:          # warm-up pass, not measured
        get(k)
    for k in READ_KEYS:
        get(k)
    return store, d


@pytest.fixture(scope="module")
def filled():
    """Per engine: the fillrandom store, compacted, closed and reopened."""
    made = {}
    peer = _peer()
    for eng in (Ours, peer):
        made[eng.name] = _make_filled(eng, RAND_KEYS)
    yield {name: store for name, (store, _d) in made.items()}
    for store, d in made.values():
        store.close()
        shutil.rmtree(d, ignore_errors=True)


def _timed(fn):
    def one():
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    return one


def _reads(store, keys, expect_found):
    get = store.getter()

    def run():
        found = 0
        for k in keys:
            if get(k) is not None:
                found += 1
        assert found == (len(keys) if expect_found else 0)
    return _timed(run)


def test_readrandom(benchmark, filled):
    _interleaved(benchmark, "readrandom", _reads(filled["lsm"], READ_KEYS, True),
                 _reads(filled["plyvel"], READ_KEYS, True), len(READ_KEYS))


def test_readmissing(benchmark, filled):
    _interleaved(benchmark, "readmissing", _reads(filled["lsm"], MISSING_KEYS, False),
                 _reads(filled["plyvel"], MISSING_KEYS, False), len(MISSING_KEYS))


def _threaded_reads(store, keys, threads=2):
    parts = [keys[i::threads] for i in range(threads)]

    def one():
        barrier = threading.Barrier(threads + 1)
        found = [0] * threads

        def work(i):
            get = store.new_reader()
            barrier.wait()
            n = 0
            for k in parts[i]:
                if get(k) is not None:
                    n += 1
            found[i] = n
        ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in ts:
            t.join()
        elapsed = time.perf_counter() - t0
        assert sum(found) == len(keys)
        return elapsed
    return one


def test_readrandom_2threads(benchmark, filled):
    _interleaved(benchmark, "readrandom, 2 threads", _threaded_reads(filled["lsm"], READ_KEYS),
                 _threaded_reads(filled["plyvel"], READ_KEYS), len(READ_KEYS))


def _seeks(store):
    def run():
        for k in SEEK_KEYS:
            store.scan_from(k, 100)
    return _timed(run)


def test_seekrandom_scan100(benchmark, filled):
    _interleaved(benchmark, "seekrandom + 100-key scan", _seeks(filled["lsm"]), _seeks(filled["plyvel"]), SCANS)


def _full(store):
    def run():
        assert store.full_scan() == N
    return _timed(run)


def test_fullscan(benchmark, filled):
    _interleaved(benchmark, "full scan (keys)", _full(filled["lsm"]), _full(filled["plyvel"]), N)


FLAT_SIZES = [100_000, 1_000_000] + ([10_000_000] if os.environ.get("BENCH_FLAT_1E7") else [])


@pytest.mark.parametrize("size", FLAT_SIZES, ids=lambda n: f"{n:.0e}")
def test_point_read_flat(benchmark, filled, size):
    """readrandom over stores of 1e5, 1e6 (and 1e7) random keys: the cost per
    get should stay flat as the store grows (compare the sizes' ops_per_s)."""
    peer = _peer()
    rng = random.Random(size)
    made = []
    try:
        if size == N:
            stores = filled
            keys = READ_KEYS
        else:
            allkeys = [rng.randbytes(16) for _ in range(size)]
            keys = random.Random(9).sample(allkeys, min(size, READS))
            stores = {}
            for eng in (Ours, peer):
                store, d = _make_filled(eng, allkeys)
                made.append((store, d))
                stores[eng.name] = store
            del allkeys
        _interleaved(benchmark, f"readrandom at {size:.0e} keys", _reads(stores["lsm"], keys, True),
                     _reads(stores["plyvel"], keys, True), len(keys))
    finally:
        for store, d in made:
            store.close()
            shutil.rmtree(d, ignore_errors=True)
