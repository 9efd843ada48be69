"""kill -9 with a stream: a child process runs the crash workload
(regions/soak/workload.py) on its table with a stream (workload.STREAM),
splitting, and SIGKILLs itself at a chosen step of the stream's write path
(regions.soak.killsteps: the feed entry appended but the base row not
written; the base row written but its records not copied into the stream's
log; the records copied but the feed entries not forgotten; new shards saved
in the catalogue after a split, the write that saw it not fed) or at a step
of a split (regions.procedure's kill points).  The parent reopens the store,
checks the table (workload.check_state) and reads the stream as a client
would (regions.soak.streamcheck): every acknowledged write is one record, in
order per row, with the columns it wrote; the write in flight has a record
only if it landed, and at most one.  Then 150 more operations, a reopen, and
the same reader's iterators, kept across it, read on.  Then the checker is
shown to see each kind of problem, and the kill loop itself runs
(regions.soak.killloop with a stream) at a small count."""
import random
import struct

import pytest

import regions
from regions.procedure import KILL_ENV
from regions.soak import Summary, killloop, streamcheck, workload
from regions.soak.harness import NoSyncFileSystem
from regions.soak.killsteps import run_child
from regions.tablestore import OTSClient
from regions.tablestore.indexes import FEED_SUFFIX
from regions.tablestore.streams import LOG_SUFFIX, STREAM_ATTRIBUTE

TABLE = workload.TABLE
LOG, FEED = TABLE + LOG_SUFFIX, TABLE + FEED_SUFFIX
_KEY = struct.Struct(">QQ")


def left_behind(path) -> dict:
    """What the kill left, read before a client opens the store (and records
    or drops what the feed holds): the feed's entries, the stream's shards."""
    with regions.RegionServer.open(path, workload.server_options(
            background_workers=0, fs=NoSyncFileSystem())) as server:
        doc = server.table_attributes(LOG)[STREAM_ATTRIBUTE]
        return {"feed": len(list(server.scan(FEED))), "shards": doc["shards"]}


def _reopen(path):
    return regions.RegionServer.open(path, workload.server_options(
        background_workers=0, fs=NoSyncFileSystem()))


def verify(path, acked, pending, seed) -> dict:
    """Reopen: the table is the log's, the stream its writes'; then 150 more
    operations, a reopen, and the same reader reads on.  Returns the stats."""
    summary, stats = Summary("stream-crash", seed, "SIGKILL"), {}
    check = streamcheck.StreamCheck(stats)
    model, _ = workload.verify_reopened(summary, _reopen(path), path, {}, acked, pending,
                                        stream=check)
    assert summary.ok, summary.details
    assert summary.verified == len(acked) >= 300
    first = dict(stats)
    log = workload.MemoryLog()
    with OTSClient(path, server_options=workload.server_options()) as client:
        wl = workload.Workload(client, random.Random(seed + 1), log, 10 ** 6,
                               workload.next_node(model))
        for _ in range(150):
            wl.step()
    more, none = log.result()
    workload.verify_reopened(summary, _reopen(path), path, model, more, none, stream=check)
    assert summary.ok, summary.details
    assert stats["stream_checks"] == 2 and stats["stream_problems"] == 0
    assert stats["stream_records"] > first["stream_records"]
    return first


def _shards_split(left):
    return any(s["parent"] is not None for s in left["shards"])


# step -> (the child's action, the server methods trapped, their table, the nth call,
#          before or after it, what the kill left, whether the write in flight is recorded)
TRAPS = {
    "feed appended, base row not written": ("write", "put+write", TABLE, 40, "before",
                                            lambda left: left["feed"] > 0, False),
    "base row written, its records not copied": ("write", "put", LOG, 40, "before",
                                                 lambda left: left["feed"] > 0, True),
    "records copied, feed entries not forgotten": ("write", "delete+write", FEED, 30, "before",
                                                   lambda left: left["feed"] > 0, True),
    "new shards saved after a split, the write not fed": ("write", "set_table_attributes", LOG,
                                                          1, "after", _shards_split, False),
}


@pytest.mark.parametrize("step", sorted(TRAPS))
def test_kill_at_a_stream_step_then_reopen(tmp_path, step):
    action, methods, table, nth, when, left, recorded = TRAPS[step]
    path = str(tmp_path / "store")
    seed = 21 + sorted(TRAPS).index(step)
    acked, pending = run_child(path, seed, action, methods, table, nth, when, indexes=False,
                               stream=True)
    assert left(left_behind(path)), left_behind(path)
    stats = verify(path, acked, pending, seed)
    assert pending is not None and (stats["stream_pending_recorded"] > 0) == recorded, stats


@pytest.mark.parametrize("point", ["split.prepared", "split.before_meta", "split.after_meta",
                                   "split.daughters_opened"])
def test_kill_inside_a_split_then_reopen(tmp_path, point):
    path = str(tmp_path / "store")
    acked, pending = run_child(path, 8, "split", env={KILL_ENV: point}, indexes=False,
                               stream=True)
    verify(path, acked, pending, 8)


# -- the checker sees each kind of problem ------------------------------------------

@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A store whose table took 400 operations, split in the middle: (path, acked)."""
    path = str(tmp_path_factory.mktemp("stream") / "store")
    log = workload.MemoryLog()
    with regions.RegionServer.open(path, workload.server_options(
            split_policy=regions.DisabledSplitPolicy())) as server:
        with OTSClient(path, server=server) as client:
            workload.create_table(client, stream=True)
            wl = workload.Workload(client, random.Random(5), log, 0, 0)
            for i in range(400):
                if i == 200:
                    server.flush_all()
                    region = max(server.regions(TABLE), key=lambda r: r.size_bytes)
                    server.split_region(TABLE, region.region_id)
                wl.step()
    acked, _ = log.result()
    return path, acked


def _check(path, acked, tamper=None, pending=None):
    """Check a copy of the stream as ``tamper(server, records)`` leaves it
    (``records``: [(shard, seq, value)] of the log): the Summary and stats."""
    summary, stats = Summary("stream-check", 0, "tampered"), {}
    with _reopen(path) as server:
        records = [_KEY.unpack(k) + (v,) for k, v in server.scan(LOG)]
        undo = []
        if tamper is not None:
            undo = tamper(server, records)
        try:
            with OTSClient(path, server=server) as client:
                streamcheck.StreamCheck(stats).check(summary, client, {}, acked, pending,
                                                     workload.read_state(client))
        finally:
            for key, value in undo:         # the log as it was, for the next test
                if value is None:
                    server.delete(LOG, key)
                else:
                    server.put(LOG, key, value)
    return summary, stats


def _row_of(value):
    n = struct.unpack_from("<I", value, 8)[0]
    return value[12:12 + n]


def _rows_with_two(records):
    """Two records of one row in one shard: (shard, seq, value) each."""
    seen = {}
    for shard, seq, value in records:
        other = seen.setdefault((shard, _row_of(value)), (shard, seq, value))
        if other[1] != seq:
            return other, (shard, seq, value)
    raise AssertionError("no row with two records in a shard")


def _free_seq(records, shard):
    """A seq no record of ``shard`` has, between two of its records (readable)."""
    mine = sorted(seq for s, seq, _ in records if s == shard)
    return next(q for q in range(mine[0] + 1, mine[-1]) if q not in mine)


def test_the_check_passes_on_the_stream_as_written(written):
    summary, stats = _check(*written)
    assert summary.ok, summary.details
    assert stats["stream_records"] > 1000 and stats["stream_splits"] >= 1


def test_the_check_sees_a_record_lost(written):
    def tamper(server, records):
        shard, seq, value = records[len(records) // 2]
        server.delete(LOG, _KEY.pack(shard, seq))
        return [(_KEY.pack(shard, seq), value)]
    summary, _ = _check(*written, tamper)
    assert summary.losses == 1 and summary.wrong == 0, summary.details


def test_the_check_sees_a_record_behind_the_kept_iterators(written):
    """A record that appears where the kept iterators have passed (read by
    the fresh reader only)."""
    path, acked = written
    summary, stats = Summary("stream-check", 0, "tampered"), {}
    check = streamcheck.StreamCheck(stats)
    with _reopen(path) as server, OTSClient(path, server=server) as client:
        check.check(summary, client, {}, acked, None, workload.read_state(client))
        assert summary.ok, summary.details
        records = [_KEY.unpack(k) + (v,) for k, v in server.scan(LOG)]
        (shard, _, value), _ = _rows_with_two(records)
        key = _KEY.pack(shard, _free_seq(records, shard))
        server.put(LOG, key, value)
        try:
            state = workload.read_state(client)
            check.check(summary, client, state, [], None, state)
        finally:
            server.delete(LOG, key)
    assert summary.wrong == 1 and "fresh reader" in summary.details[0], summary.details


def test_the_check_sees_a_record_twice_out_of_order_and_a_phantom(written):
    def twice(server, records):
        (shard, _, value), _ = _rows_with_two(records)
        key = _KEY.pack(shard, _free_seq(records, shard))
        server.put(LOG, key, value)
        return [(key, None)]

    def swapped(server, records):
        (s1, q1, v1), (s2, q2, v2) = _rows_with_two(records)
        server.put(LOG, _KEY.pack(s1, q1), v2)
        server.put(LOG, _KEY.pack(s2, q2), v1)
        return [(_KEY.pack(s1, q1), v1), (_KEY.pack(s2, q2), v2)]

    def phantom(server, records):
        shard, seq, value = records[-1]
        row = _row_of(value)
        other = next(_row_of(v) for _, _, v in records if _row_of(v) != row and
                     len(_row_of(v)) == len(row))
        server.put(LOG, _KEY.pack(shard, seq), value.replace(row, other, 1))
        return [(_KEY.pack(shard, seq), value)]

    for tamper, words in ((twice, "duplicate"), (swapped, "out of order"),
                          (phantom, "phantom")):
        summary, _ = _check(*written, tamper)
        assert not summary.ok and any(words in d for d in summary.details), summary.details


def test_the_check_sees_a_landed_write_in_flight_without_its_record(written):
    path, acked = written
    *done, (last, _) = acked

    def tamper(server, records):
        undo = []
        keys = [tuple(r["k"]) for r in last["rows"]]
        for shard, seq, value in records:
            if any(_row_of(value) == _row_of_key(k) for k in keys) and seq == max(
                    q for s, q, v in records if _row_of(v) == _row_of(value)):
                server.delete(LOG, _KEY.pack(shard, seq))
                undo.append((_KEY.pack(shard, seq), value))
        return undo
    summary, _ = _check(path, done, tamper, pending=last)
    assert summary.losses >= 1 and any("in flight" in d for d in summary.details), \
        summary.details


def _row_of_key(key):
    from regions.tablestore import pkcodec
    return pkcodec.encode_pk(["INTEGER", "INTEGER"], list(key))


# -- the loop, at a small count ----------------------------------------------------

def test_the_kill_loop_with_a_stream_finds_every_write_once_in_order():
    stats = {}
    s = killloop.run(seed=5, count=20, stats=stats, stream=True)
    assert s.ok, s.details
    assert stats["stream_checks"] >= 16 and stats["stream_problems"] == 0
    assert stats["stream_records"] > 1000 and stats["stream_splits"] >= 1
    assert stats["kills_with_feed_left"] >= 1
