"""Region server benchmarks (run with ``pytest bench/ --benchmark-only``).

- Split time of a 1 MB and of a 200 MB region: a split writes references
  (bounded views), not data, so the two should be close (the issue asks for
  the larger under 3x the smaller).  Each round splits a fresh copy of a
  prepared server directory; the copy and the open are setup, not measured.
- Write throughput per key into 16 pre-split regions versus 1 region (routing
  overhead; the issue asks for under 10%), with the raw lsm store as baseline.
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


@pytest.mark.parametrize("n_regions", [1, 16])
def test_write_throughput_over_pre_split_regions(benchmark, tmp_path, n_regions):
    keys = _keys()
    value = b"v" * 100
    splits = [b"%08x" % (i << 28) for i in range(1, n_regions)]
    state = {"n": 0}

    def setup():
        if "server" in state:
            state["server"].close()
        state["n"] += 1
        s = regions.RegionServer.open(str(tmp_path / f"s{state['n']}"), _options())
        s.create_table("t", splits)
        state["server"] = s
        return (s,), {}

    def write(s):
        put = s.put
        for k in keys:
            put("t", k, value)

    benchmark.pedantic(write, setup=setup, rounds=5, iterations=1)
    s = state["server"]
    assert len(s.regions("t")) == n_regions
    assert sum(r.writes for r in s.regions("t")) == N_KEYS
    benchmark.extra_info["keys_per_round"] = N_KEYS
    s.close()


def test_write_throughput_raw_lsm_baseline(benchmark, tmp_path):
    keys = _keys()
    value = b"v" * 100
    state = {"n": 0}

    def setup():
        if "db" in state:
            state["db"].close()
        state["n"] += 1
        db = lsm.DB.open(str(tmp_path / f"d{state['n']}"), lsm.Options(memtable_bytes=8 * MiB))
        state["db"] = db
        return (db,), {}

    def write(db):
        put = db.put
        for k in keys:
            put(k, value)

    benchmark.pedantic(write, setup=setup, rounds=5, iterations=1)
    assert state["db"].get(keys[0]) == value
    state["db"].close()


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
    batch = lsm.WriteBatch()
    for i in range(n):
        batch.put(b"row%09d" % (i * 7919 % n), rng.randbytes(value_bytes))
        if len(batch) == 1000:
            s.write("t", batch)
            batch = lsm.WriteBatch()
    if len(batch):
        s.write("t", batch)
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
