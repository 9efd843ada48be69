"""The reliability loops of regions.soak at their CI counts (experiments 1, 2,
3 and 6; docs/reliability.md has the long runs), and their checks, which
must see the faults they exist to find."""
import pytest

from regions.soak import Summary, concurrency, killloop, powerloss, wire, workload


# -- the loops at their CI counts ------------------------------------------------

def test_killloop_120_kill_9_cycles_lose_nothing():
    stats = {}
    s = killloop.run(seed=1, count=120, stats=stats)
    assert s.ok, s.details
    assert s.cycles == 120 and s.verified == stats["ops"] > 120 * 50
    assert stats["pending"] > 50           # most kills land with an operation in flight
    assert stats["kills_in_start"] > 0 and stats["splits"] >= 10
    # the plan's coverage (R7): kills inside flushes or compactions and inside
    # splits (where a kill lands is timing: a CI run at 120 cycles saw 7
    # inside splits; the floor proves the coverage without a coin toss)
    assert stats["kills_in_table_write"] >= 10 and stats["kills_in_split"] >= 5


def test_powerloss_300_power_cuts_lose_no_synced_write():
    stats = {}
    s = powerloss.run(seed=1, count=300, stats=stats)
    assert s.ok, s.details
    assert s.cycles == 300 and s.verified == stats["ops"] > 300 * 10
    for point in ("wal_append", "wal_sync", "table_append", "table_sync", "manifest_sync",
                  "meta_write", "dir_sync", "remove"):     # in writes, flushes, compactions, splits
        assert stats[f"cut_{point}"] > 0, (point, stats)
    assert stats["cuts_between_ops"] > 0 and stats["pending"] > 0 and stats["splits"] >= 5
    assert stats["unsynced_cycles"] > 0 and stats["unsynced_writes_lost"] > 0


def test_wire_server_killed_and_stopped_under_sdk_writers_loses_and_doubles_nothing():
    stats = {}
    s = wire.run(seed=1, count=6, stats=stats)
    assert s.ok, s.details
    assert s.cycles == 6 and stats["sigkill"] == stats["sigterm"] == 3
    assert s.verified == stats["ops"] > 100
    assert stats["unknown"] > 0            # the writers did meet broken connections
    assert stats["regions"] > 1            # and the table split while it was being killed


def test_concurrency_eight_threads_during_splits_match_their_models():
    stats = {}
    s = concurrency.run(seed=1, seconds=60, stats=stats)
    assert s.ok, s.details
    assert s.cycles == stats["ops"] > 10000
    assert stats["splits"] >= 5 and stats["rolled_back"] == 0
    assert stats["scans"] > 0 and stats["increments"] > 0 and stats["cas"] > 0


# -- the checks see what they look for -----------------------------------------------

def _put(op_id, key, **cols):
    return {"id": op_id, "kind": "put", "rows": [{"k": list(key), "t": "put", "c": "I",
                                                  "put": cols}]}


def _inc(op_id, key, n):
    return {"k": list(key), "t": "update", "c": "I", "put": {"v": "o%d" % op_id}, "inc": {"n": n}}


def _check(model, acked, pending, actual):
    s = Summary("test", 0, "none")
    workload.check_state(s, dict(model), acked, pending, actual)
    return s


def test_the_check_passes_the_state_the_log_describes():
    acked = [(_put(1, (0, 1), v="o1"), [True])]
    pending = {"id": 2, "kind": "txn", "rows": [_inc(2, (0, 1), 3), _inc(2, (0, 2), 1)]}
    s = _check({}, acked, pending, {(0, 1): {"v": "o2", "n": 3}, (0, 2): {"v": "o2", "n": 1}})
    assert s.ok and s.verified == 1
    assert _check({}, acked, pending, {(0, 1): {"v": "o1"}}).ok


@pytest.mark.parametrize("actual, kind", [
    ({}, "losses"),                                         # an acknowledged put is gone
    ({(0, 1): {"v": "o1"}, (5, 5): {"v": "o9"}}, "wrong"),  # a row nobody wrote
    ({(0, 1): {"v": "o0"}}, "wrong"),                       # an older value came back
])
def test_the_check_counts_lost_and_phantom_rows(actual, kind):
    s = _check({}, [(_put(1, (0, 1), v="o1"), [True])], None, actual)
    assert getattr(s, kind) == 1 and not s.ok


def test_the_check_counts_an_increment_applied_twice():
    pending = {"id": 2, "kind": "update", "rows": [_inc(2, (0, 1), 2)]}
    model = {(0, 1): {"v": "o1", "n": 5}}
    assert _check(model, [], pending, {(0, 1): {"v": "o2", "n": 7}}).ok
    assert _check(model, [], pending, {(0, 1): {"v": "o2", "n": 9}}).wrong == 1


def test_the_check_counts_a_transaction_half_applied():
    pending = {"id": 2, "kind": "txn", "rows": [_inc(2, (0, 1), 1), _inc(2, (0, 2), 1)]}
    s = _check({}, [], pending, {(0, 1): {"v": "o2", "n": 1}})
    assert s.wrong == 1 and "transaction 2" in s.details[0]


def test_the_check_counts_an_outcome_the_model_contradicts():
    put_new = _put(2, (0, 1), v="o2")
    put_new["rows"][0]["c"] = "N"                           # EXPECT_NOT_EXIST on a present row
    s = _check({(0, 1): {"v": "o1"}}, [(put_new, [True])], None, {(0, 1): {"v": "o2"}})
    assert not s.ok and "reported [True]" in s.details[0]


def test_the_check_counts_a_dangling_link():
    nodes = {workload.node_key(k): {"node": k, "prev": k - 1} for k in (0, 1, 2)}
    assert _check(nodes, [], None, dict(nodes)).ok
    del nodes[workload.node_key(1)]
    s = _check(nodes, [], None, dict(nodes))
    assert s.losses == 1 and "dangling link" in s.details[0]


def test_the_wire_check_counts_a_write_applied_twice():
    acked = [({"kind": "seq", "i": 1}, ["seq"]), ({"kind": "seq", "i": 2}, ["seq"]),
             ({"kind": "bump"}, ["bump"]), ({"kind": "bump"}, ["unknown"])]
    for counter, bump, kind in (({"seq": 2, "n": 2}, 2, None), ({"seq": 2, "n": 3}, 1, "wrong"),
                                ({"seq": 2, "n": 2}, 3, "wrong"), ({"seq": 1, "n": 1}, 1, "losses")):
        s = Summary("test", 0, "none")
        wire._check_writer(s, 0, {(0, -1): counter, (0, -2): {"m": bump}}, acked, None)
        assert (kind is None and s.ok) or getattr(s, kind) == 1, (counter, bump, s.details)


def test_the_prefix_check_accepts_lost_tails_and_counts_holes():
    acked = [(_put(1, (0, 1), v="o1"), [True]), (_put(2, (0, 2), v="o2"), [True]),
             (_put(3, (1, 1), v="o3"), [True])]
    for actual in ({}, {(0, 1): {"v": "o1"}}, {(0, 1): {"v": "o1"}, (1, 1): {"v": "o3"}}):
        stats = {}
        s = Summary("test", 0, "none")
        workload.check_prefix(s, {}, acked, None, actual, stats)
        assert s.ok and stats["unsynced_writes_lost"] == 3 - len(actual), actual
    s = Summary("test", 0, "none")
    workload.check_prefix(s, {}, acked, None, {(0, 2): {"v": "o2"}})   # o2 kept, o1 lost
    assert s.losses == 1 and "partition 0" in s.details[0]
