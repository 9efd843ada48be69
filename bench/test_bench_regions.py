"""Region server benchmarks (run with ``pytest bench/ --benchmark-only``).

- Split time of a 1 MB and of a 200 MB region: a split writes references
  (bounded views), not data, so the two should be close (the issue asks for
  the larger under 3x the smaller).  Each round splits a fresh copy of a
  prepared server directory; the copy and the open are setup, not measured.
- CPU per put and per get through the server with 1, 16 and 64 pre-split
  regions against a bare lsm.DB, interleaved (the server's overhead; the
  issue asks for under 10%, and 64 regions no slower per key than 1):
  ``python -m pytest bench/test_bench_regions.py -k overhead --benchmark-only -s``.
"""
import random
import shutil

import pytest

import lsm
import regions

MiB = 1 << 20
VALUE = 1000


def _options():
    return regions.ServerOptions(background_workers=0, split_policy=regions.DisabledSplitPolicy(),
                                 memtable_bytes=8 * MiB)


def _prepare(path, size):
    """A server with table "t" of one region holding ``size`` bytes of values."""
    with regions.RegionServer.open(path, _options()) as s:
        _load(s, size, VALUE, seed=1)
        s.compact("t")      # a settled region: leveled tables, no L0 backlog
    return path


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    return {size: _prepare(str(root / f"src{size}"), size * MiB) for size in (1, 200)}


@pytest.mark.parametrize("size_mb", [1, 200])
@pytest.mark.parametrize("point", ["given", "middle"])
def test_split_time_is_independent_of_region_size(benchmark, prepared, tmp_path, size_mb, point):
    """``given``: the split key is passed (the procedure alone: flush, close,
    views, meta, open).  ``middle``: the server also finds the middle key,
    which reads every table's block index (lsm's middle_key, O(blocks))."""
    state = {}
    counter = iter(range(1000))
    n = size_mb * MiB // VALUE
    key = b"row%09d" % (n // 2) if point == "given" else None

    def setup():
        if "server" in state:
            state["server"].close()
        dst = str(tmp_path / f"copy{next(counter)}")
        shutil.copytree(prepared[size_mb], dst)
        s = regions.RegionServer.open(dst, _options())
        state["server"] = s
        return (s, s.regions("t")[0].region_id), {}

    def split(s, rid):
        return s.split_region("t", rid, key)

    daughters = benchmark.pedantic(split, setup=setup, rounds=5, iterations=1)
    s = state["server"]
    assert len(daughters) == 2 and len(s.regions("t")) == 2
    assert sum(r.size_bytes for r in s.regions("t")) >= 0.8 * size_mb * MiB
    benchmark.extra_info["region_bytes"] = size_mb * MiB
    s.close()


N_KEYS = 20000


def _keys():
    rng = random.Random(7)
    return [b"%08x" % rng.getrandbits(32) for _ in range(N_KEYS)]


ARMS = ("lsm.DB", "1 region", "16 regions", "64 regions")


def _open_arm(arm, path):
    """(store, put, get, flush) of one arm: the raw lsm store or a server
    with table "t" pre-split into that many regions (even split points over
    the keys' hex space)."""
    if arm == "lsm.DB":
        db = lsm.DB.open(path, lsm.Options(memtable_bytes=8 * MiB))
        # the same wrapper as the server's arms, so that only the server differs
        return (db, lambda k, v, put=db.put: put(k, v), lambda k, get=db.get: get(k), db.flush)
    n = int(arm.split()[0])
    s = regions.RegionServer.open(path, _options())
    s.create_table("t", [b"%08x" % (i * (1 << 32) // n) for i in range(1, n)])
    return (s, lambda k, v, put=s.put: put("t", k, v), lambda k, get=s.get: get("t", k),
            s.flush_all)


def _per_op_us(fn, items):
    import time
    t0 = time.process_time()
    for x in items:
        fn(x)
    return (time.process_time() - t0) / len(items) * 1e6


def overhead_rounds(tmp_path, rounds=3):
    """CPU time per put, per get (memtable) and per get (flushed tables) of
    each arm, arms interleaved round by round (fresh stores each round);
    ``{arm: {op: [us per round]}}``."""
    keys = _keys()
    value = b"v" * 100
    reads = random.Random(8).choices(keys, k=N_KEYS)
    out = {arm: {"put": [], "get": [], "get_flushed": []} for arm in ARMS}
    for rnd in range(rounds):
        for arm in ARMS[rnd % len(ARMS):] + ARMS[:rnd % len(ARMS)]:   # each arm first once
            store, put, get, flush = _open_arm(arm, str(tmp_path / f"{arm}-{rnd}".replace(" ", "_")))
            try:
                out[arm]["put"].append(_per_op_us(lambda k: put(k, value), keys))
                out[arm]["get"].append(_per_op_us(get, reads))
                flush()
                _per_op_us(get, reads)                      # warm the block cache
                out[arm]["get_flushed"].append(_per_op_us(get, reads))
                assert get(keys[0]) == value
            finally:
                store.close()
    return out


def test_region_server_overhead_per_operation(benchmark, tmp_path):
    """The issue's bars: the server under 10% over a bare lsm.DB per
    operation, and 64 pre-split regions no slower per key than 1.  Medians
    of 4 interleaved rounds of 20,000 puts and gets (CPU time), the arms'
    order rotated round by round."""
    import statistics
    result = {}
    benchmark.pedantic(lambda: result.update(overhead_rounds(tmp_path, 4)), rounds=1, iterations=1)
    med = {arm: {op: statistics.median(v) for op, v in ops.items()} for arm, ops in result.items()}
    for arm in ARMS:
        for op, us in med[arm].items():
            benchmark.extra_info[f"{arm} {op} us"] = round(us, 3)
            benchmark.extra_info[f"{arm} {op} / lsm.DB"] = round(us / med["lsm.DB"][op], 3)
    print("\n" + "\n".join("%-11s " % arm + "  ".join(
        "%s %.2f us (%.2fx)" % (op, us, us / med["lsm.DB"][op]) for op, us in med[arm].items())
        for arm in ARMS))
    assert all(us > 0 for ops in med.values() for us in ops.values())


def test_writes_over_64_regions_against_1_at_200k_keys(benchmark, tmp_path):
    """The bar "writes over 64 pre-split regions no slower per key than over
    1" past the warm-up the test above measures (20,000 puts: every region
    opens its WAL and memtable for ~300 puts, and nothing flushes): 200,000
    random puts, CPU time per put, 1 and 64 regions alternated for 3 rounds,
    fresh servers, flushes inline (the server's options above)."""
    import statistics
    import time
    rng = random.Random(7)
    keys = [b"%08x" % rng.getrandbits(32) for _ in range(200_000)]
    value = b"v" * 100
    per_put = {1: [], 64: []}

    def rounds():
        for rnd in range(3):
            for n in ((1, 64) if rnd % 2 == 0 else (64, 1)):
                s = regions.RegionServer.open(str(tmp_path / f"{n}-{rnd}"), _options())
                try:
                    s.create_table("t", [b"%08x" % (i * (1 << 32) // n) for i in range(1, n)])
                    put = s.put
                    t0 = time.process_time()
                    for k in keys:
                        put("t", k, value)
                    per_put[n].append((time.process_time() - t0) / len(keys) * 1e6)
                    assert s.get("t", keys[-1]) == value
                finally:
                    s.close()

    benchmark.pedantic(rounds, rounds=1, iterations=1)
    one, many = statistics.median(per_put[1]), statistics.median(per_put[64])
    benchmark.extra_info.update({"1 region put us": round(one, 3), "64 regions put us": round(many, 3),
                                 "64 / 1": round(many / one, 3)})
    print(f"\n200k puts: 1 region {one:.2f} us, 64 regions {many:.2f} us a put ({many / one:.2f}x)")
    assert one > 0 and many > 0


def _load_fresh(path, size, value_bytes=100):
    """A server whose one region has just taken ``size`` bytes of writes
    (1000-key batches), flushed: its store is typically still compacting."""
    s = regions.RegionServer.open(path, regions.ServerOptions(
        background_workers=0, split_policy=regions.DisabledSplitPolicy(), memtable_bytes=4 * MiB))
    return s, _load(s, size, value_bytes, seed=2)


def _load(s, size, value_bytes, seed):
    """Create table "t" and write ``size`` bytes of values in 1000-key
    batches, keys in a scattered order; flush.  Returns the key count."""
    s.create_table("t")
    rng = random.Random(seed)
    n = size // value_bytes
    pairs = []
    for i in range(n):
        pairs.append((b"row%09d" % (i * 7919 % n), rng.randbytes(value_bytes)))
        if len(pairs) == 1000:
            s.write("t", pairs)
            pairs = []
    if pairs:
        s.write("t", pairs)
    s.flush_all()
    return n


@pytest.mark.parametrize("size_mb", [1, 40])
def test_split_time_right_after_a_load(benchmark, tmp_path, size_mb):
    """The split of a region that has just been loaded (100-byte values) and
    flushed: closing the parent aborts its compaction in flight (lsm's
    ``_compaction_check``) instead of waiting for it, so 40 MB should split
    about as fast as 1 MB.  The load is setup; only the split is timed."""
    state = {"n": 0}

    def setup():
        if "server" in state:
            state["server"].close()
        state["n"] += 1
        s, n = _load_fresh(str(tmp_path / f"s{state['n']}"), size_mb * MiB)
        state["server"] = s
        return (s, s.regions("t")[0].region_id, b"row%09d" % (n // 2)), {}

    def split(s, rid, key):
        return s.split_region("t", rid, key)

    daughters = benchmark.pedantic(split, setup=setup, rounds=3, iterations=1)
    s = state["server"]
    assert len(daughters) == 2 and len(s.regions("t")) == 2
    benchmark.extra_info["region_bytes"] = size_mb * MiB
    s.close()
