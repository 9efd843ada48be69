"""LevelDB's db_bench workloads through the Python API: ours beside LevelDB
(plyvel) and RocksDB (rocksdict).

    pip install -e '.[bench]'
    python -m pytest bench/test_bench_lsm.py --benchmark-only -s         # N = 1,000,000
    BENCH_N=200000 python -m pytest bench/test_bench_lsm.py --benchmark-only -s
    BENCH_N=10000000 BENCH_PEERS=plyvel,rocksdict python -m pytest bench/test_bench_lsm.py \
        --benchmark-only -s -k "not flat and not threads"     # every workload at 1e7: ~18 min

Shapes (as in ../shared/reference/perf.md): 16-byte keys (big-endian counter
for fillseq/fillbatch, random bytes for fillrandom), 100-byte values from a
pool of 65,536 random values, one put per call unless batched (1000 per
WriteBatch).  Reads, seeks and scans run on the fillrandom store after
compact_range(), close and reopen; the first read pass warms the caches and
is not measured.  WAL on, no fsync per write.

The peers run twice over: with ours' memory budget and filters (``plyvel``,
``rocksdict``: a 32 MB write buffer, a 160 MB block cache, 10-bit bloom
filters, as lsm.Options' defaults, which ``Ours`` opens with), and with
their library defaults (``plyvel-defaults``: 4 MB buffer, 8 MB cache, no
bloom; ``rocksdict-defaults``: RocksDB's 64 MB buffer and default block
cache, no bloom).
``BENCH_PEERS`` (comma-separated) picks some of them; a peer whose library
is not installed is left out.

Every arm runs interleaved in one process (a round of each peer, then ours,
ROUNDS times, default 3): pytest-benchmark's statistics are ours, and
``extra_info`` records every arm's median (``ops_per_s`` ours,
``arms``) and ``ratio`` = ours / the better same-budget peer; the summary
printed at the end (with ``-s``) has one table for the same budget and one
for the defaults.

Also: point-read cost at 1e5 and 1e6 keys (1e7 with BENCH_FLAT_1E7=1, which
takes minutes and ~2 GB of disk for each engine), and readrandom from 1 and
2 threads: ours through ``get`` and through ``multi_get`` (MULTI keys a
call), plyvel's ``get``, rocksdict's ``get`` of a key and of a list of keys
(its MultiGet).
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
MULTI = 100             # keys a multi_get call: a BatchGetRow's most rows
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
WRITE_BUFFER = 32 << 20     # ours' budget (lsm.Options' defaults), given to the peers
BLOCK_CACHE = 160 << 20
BLOOM_BITS = 10

_rng = random.Random(301)
VALUES = [_rng.randbytes(100) for _ in range(65536)]
SEQ_KEYS = [i.to_bytes(16, "big") for i in range(N)]
RAND_KEYS = [_rng.randbytes(16) for _ in range(N)]
READ_KEYS = random.Random(7).sample(RAND_KEYS, READS)
MISSING_KEYS = [_rng.randbytes(16) for _ in range(READS)]
SEEK_KEYS = random.Random(8).sample(RAND_KEYS, SCANS)


class Engine:
    """An engine's Python API as the workloads call it (``db``: the store)."""
    name = None

    def put(self, k, v):
        self.db.put(k, v)

    def new_batch(self):
        raise NotImplementedError

    def commit(self, batch):
        self.db.write(batch)

    def fill_batches(self, keys):
        values = VALUES
        for i in range(0, len(keys), BATCH):
            b = self.new_batch()
            put = b.put
            for j, k in enumerate(keys[i:i + BATCH], i):
                put(k, values[j & 0xFFFF])
            self.commit(b)

    def getter(self):
        return self.db.get

    new_reader = getter

    def multi_getter(self):
        """``f(keys) -> values`` in one call, or None: the engine has none."""
        return None

    def compact(self):
        self.db.compact_range()

    def items_from(self, key):
        """An iterator of ``(key, value)`` from ``key`` (None: the first) on."""
        raise NotImplementedError

    def scan_from(self, key, n):
        for _ in zip(range(n), self.items_from(key)):
            pass

    def full_scan(self):
        n = 0
        for _ in self.items_from(None):
            n += 1
        return n

    def close(self):
        self.db.close()


class Ours(Engine):
    name = "lsm"

    def __init__(self, path):
        opts = lsm.Options()
        assert (opts.memtable_bytes, opts.block_cache_bytes, opts.bloom_bits_per_key) == \
            (WRITE_BUFFER, BLOCK_CACHE, BLOOM_BITS), "the peers' budget is ours' defaults"
        self.db = lsm.DB.open(path, opts)

    def new_batch(self):
        return lsm.WriteBatch()

    def multi_getter(self):
        return self.db.multi_get

    def items_from(self, key):
        return self.db.scan(key)


class LevelDB(Engine):
    """plyvel with ours' budget: write buffer, block cache, bloom filter."""
    name = "plyvel"

    def __init__(self, path):
        import plyvel
        self.db = plyvel.DB(path, create_if_missing=True, **self.options())

    @staticmethod
    def options():
        return dict(write_buffer_size=WRITE_BUFFER, lru_cache_size=BLOCK_CACHE,
                    bloom_filter_bits=BLOOM_BITS)

    def new_batch(self):
        return self.db.write_batch()

    def commit(self, batch):
        batch.write()

    def items_from(self, key):
        return self.db.iterator(start=key)


class LevelDBDefaults(LevelDB):
    """plyvel's defaults: 4 MB write buffer, 8 MB block cache, no bloom."""
    name = "plyvel-defaults"

    @staticmethod
    def options():
        return {}


class RocksDB(Engine):
    """rocksdict (RocksDB through PyO3) in raw (bytes) mode with ours'
    budget: write buffer, block cache, bloom filter."""
    name = "rocksdict"

    def __init__(self, path):
        import rocksdict
        self._batch = rocksdict.WriteBatch
        opts = rocksdict.Options(raw_mode=True)
        opts.create_if_missing(True)
        self.configure(rocksdict, opts)
        self.db = rocksdict.Rdict(path, opts)

    @staticmethod
    def configure(rocksdict, opts):
        opts.set_write_buffer_size(WRITE_BUFFER)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(BLOCK_CACHE))
        table.set_bloom_filter(BLOOM_BITS, False)
        opts.set_block_based_table_factory(table)

    def new_batch(self):
        return self._batch(raw_mode=True)

    def multi_getter(self):
        return self.db.get          # given a list of keys: RocksDB's MultiGet

    def compact(self):
        self.db.flush(True)
        self.db.compact_range(None, None)

    def items_from(self, key):
        return self.db.items(from_key=key)


class RocksDBDefaults(RocksDB):
    """rocksdict's defaults: RocksDB's 64 MB write buffer, its default block
    cache, no bloom."""
    name = "rocksdict-defaults"

    @staticmethod
    def configure(rocksdict, opts):
        pass


PEERS = [LevelDB, RocksDB, LevelDBDefaults, RocksDBDefaults]
BUDGET = ("plyvel", "rocksdict")            # the same-budget table's peers
DEFAULTS = ("plyvel-defaults", "rocksdict-defaults")
RESULTS = {}        # workload -> {arm: ops/s}


def _table(title, arms, rows):
    lines = [title, "  " + f"{'workload':30s}" + "".join(f"{a:>20s}" for a in ("lsm",) + arms)
             + "".join(f"{'lsm/' + a:>24s}" for a in arms)]
    for name, got in rows:
        have = [a for a in arms if a in got]
        if not have:
            continue
        lines.append("  " + f"{name:30s}" + "".join(f"{got[a]:>18,.0f}/s" if a in got else f"{'-':>20s}"
                                                    for a in ("lsm",) + arms)
                     + "".join(f"{got['lsm'] / got[a]:>23.2f}x" if a in got else f"{'-':>24s}"
                               for a in arms))
    return "\n".join(lines)


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    if RESULTS:
        rows = list(RESULTS.items())
        print(f"\n\nmedians of {ROUNDS} interleaved rounds, N = {N:,}")
        print(_table("same budget (32 MB write buffer, 160 MB block cache, 10-bit blooms):", BUDGET, rows))
        print(_table("peers at their library defaults:", DEFAULTS, rows))
        others = [(name, got) for name, got in rows if set(got) - set(BUDGET) - set(DEFAULTS) - {"lsm"}]
        for name, got in others:
            print(f"  {name}: " + ", ".join(f"{a} {v:,.0f}/s" for a, v in got.items()))
        one, two = RESULTS.get("readrandom, 1 thread"), RESULTS.get("readrandom, 2 threads")
        if one and two:
            print("  2 threads / 1 thread: " + ", ".join(f"{a} {two[a] / one[a]:.2f}x"
                                                       for a in two if a in one))


def _interleaved(benchmark, name, ours_round, peer_rounds, ops):
    """Run each of ``peer_rounds`` (arm name -> round) then ``ours_round()``,
    ROUNDS times; each returns its own seconds (setup excluded).  Benchmark
    stats are ours; every arm's median and the ratio to the better
    same-budget peer go to extra_info and RESULTS."""
    times = {"lsm": []}
    times.update({arm: [] for arm in peer_rounds})

    def setup():
        for arm, one in peer_rounds.items():
            times[arm].append(one())
        return (), {}

    def run():
        times["lsm"].append(ours_round())

    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, iterations=1)
    got = {arm: ops / statistics.median(t) for arm, t in times.items()}
    best = max([got[a] for a in BUDGET if a in got], default=None)
    benchmark.extra_info.update(ops_per_s=got["lsm"], arms=got, seconds=times,
                                ratio=got["lsm"] / best if best else None)
    RESULTS[name] = got


def _peers():
    """The peers to run (BENCH_PEERS picks some; a missing library drops its)."""
    pytest.importorskip("plyvel", reason="the peers need the bench extra: pip install -e '.[bench]'")
    want = os.environ.get("BENCH_PEERS")
    want = None if not want else set(want.split(","))
    out = []
    for eng in PEERS:
        if want is not None and eng.name not in want:
            continue
        try:
            __import__("plyvel" if issubclass(eng, LevelDB) else "rocksdict")
        except ImportError:
            continue
        out.append(eng)
    return out


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
    fill = {"fillseq": _put_all(SEQ_KEYS), "fillrandom": _put_all(RAND_KEYS),
            "fillbatch": lambda store: store.fill_batches(SEQ_KEYS)}[workload]
    _interleaved(benchmark, workload, _fill_round(Ours, fill),
                 {eng.name: _fill_round(eng, fill) for eng in _peers()}, N)


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
    for eng in [Ours] + _peers():
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


def _others(stores, make):
    return {name: make(store) for name, store in stores.items() if name != "lsm"}


def test_readrandom(benchmark, filled):
    _interleaved(benchmark, "readrandom", _reads(filled["lsm"], READ_KEYS, True),
                 _others(filled, lambda st: _reads(st, READ_KEYS, True)), len(READ_KEYS))


def test_readmissing(benchmark, filled):
    _interleaved(benchmark, "readmissing", _reads(filled["lsm"], MISSING_KEYS, False),
                 _others(filled, lambda st: _reads(st, MISSING_KEYS, False)), len(MISSING_KEYS))


class _Control:
    """The control arm of the thread runs: a "get" is SHA-256 of 2 KiB
    (hashlib releases the GIL from 2 KiB on), about a get's time: its 2
    threads / 1 thread is the parallelism the machine gave the process
    during the run (2.0 on two idle cores), the bound of every arm's."""
    _buf = bytes(2048)

    def new_reader(self):
        import hashlib
        sha, buf = hashlib.sha256, self._buf
        return lambda _k: sha(buf).digest()


def _threaded_reads(store, keys, threads=2, multi=False):
    """Seconds for ``threads`` threads to read ``keys`` (a share each) with
    the store's get, or with its multi-get, MULTI keys a call."""
    parts = [keys[i::threads] for i in range(threads)]

    def one():
        barrier = threading.Barrier(threads + 1)
        found = [0] * threads

        def work(i):
            part = parts[i]
            n = 0
            if multi:
                get = store.multi_getter()
                barrier.wait()
                for j in range(0, len(part), MULTI):
                    for v in get(part[j:j + MULTI]):
                        if v is not None:
                            n += 1
            else:
                get = store.new_reader()
                barrier.wait()
                for k in part:
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


def _gil_held(run):
    """``run`` with ours' gets keeping the GIL (``lsm._read.set_handover``:
    they hand it over between readers by default)."""
    from lsm._read import set_handover

    def one():
        was = set_handover(False)
        try:
            return run()
        finally:
            set_handover(was)
    return one


@pytest.mark.parametrize("threads", [1, 2])
def test_readrandom_threads(benchmark, filled, threads):
    """readrandom from 1 and 2 threads: each same-budget arm through get and,
    where it has one, through its multi-get (MULTI keys a call): the
    ``... multi_get`` arms, ours among them; ours' get keeping the GIL
    (``lsm gil held``, the build before the handover); and the control arm (``_Control``), whose
    2-thread/1-thread ratio bounds every arm's."""
    arms = {"control: sha256 of 2 KiB": _threaded_reads(_Control(), READ_KEYS, threads),
            "lsm gil held": _gil_held(_threaded_reads(filled["lsm"], READ_KEYS, threads))}
    for name, store in filled.items():
        if name != "lsm" and name not in BUDGET:
            continue
        if name != "lsm":
            arms[name] = _threaded_reads(store, READ_KEYS, threads)
        if store.multi_getter() is not None:
            arms[name + " multi_get"] = _threaded_reads(store, READ_KEYS, threads, multi=True)
    _interleaved(benchmark, f"readrandom, {threads} thread{'s' if threads > 1 else ''}",
                 _threaded_reads(filled["lsm"], READ_KEYS, threads), arms, len(READ_KEYS))


def _seeks(store):
    def run():
        for k in SEEK_KEYS:
            store.scan_from(k, 100)
    return _timed(run)


def test_seekrandom_scan100(benchmark, filled):
    _interleaved(benchmark, "seekrandom + 100-key scan", _seeks(filled["lsm"]), _others(filled, _seeks), SCANS)


def _full(store):
    def run():
        assert store.full_scan() == N
    return _timed(run)


def test_fullscan(benchmark, filled):
    _interleaved(benchmark, "full scan (keys)", _full(filled["lsm"]), _others(filled, _full), N)


FLAT_SIZES = [100_000, 1_000_000] + ([10_000_000] if os.environ.get("BENCH_FLAT_1E7") else [])


@pytest.mark.parametrize("size", FLAT_SIZES, ids=lambda n: f"{n:.0e}")
def test_point_read_flat(benchmark, filled, size):
    """readrandom over stores of 1e5, 1e6 (and 1e7) random keys: the cost per
    get should stay flat as the store grows (compare the sizes' ops_per_s)."""
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
            for eng in [Ours] + _peers():
                store, d = _make_filled(eng, allkeys)
                made.append((store, d))
                stores[eng.name] = store
            del allkeys
        _interleaved(benchmark, f"readrandom at {size:.0e} keys", _reads(stores["lsm"], keys, True),
                     _others(stores, lambda st: _reads(st, keys, True)), len(keys))
    finally:
        for store, d in made:
            store.close()
            shutil.rmtree(d, ignore_errors=True)
