"""kill -9 with secondary indexes: a child process runs the crash workload
(regions/soak/workload.py) on its table with two global indexes and a local
one, and SIGKILLs itself at a chosen step of the index machinery (a trap on
one region-server call: the feed appended but the base row not written, the
base row written but its local index not, an index row written but its refs
entry not, the entries applied but not forgotten, in a back-fill before and
after its cursor is saved, creating and dropping an index), or at a step of a
split of the base table or of an index table (regions.procedure's kill
points).  The parent reopens the store and checks that every acknowledged
write is there and nothing else (workload.check_state), that every index
holds exactly what the table calls for (regions.tablestore.indexcheck), and
that writes after the recovery keep them so.  Then the kill loop itself
(regions.soak.killloop with indexes) at a small count."""
import random
import time

import pytest

import regions
from regions.procedure import KILL_ENV
from regions.soak import Summary, concurrency, killloop, workload
from regions.soak.harness import NoSyncFileSystem
from regions.soak.killsteps import run_child
from regions.tablestore import OTSClient, Row, SecondaryIndexMeta, TableMeta
from regions.tablestore.indexcheck import check_indexes
from regions.tablestore.indexes import FEED_SUFFIX, INDEX_ATTRIBUTE, Indexer
from regions.tablestore.schema import ATTRIBUTE

TABLE = workload.TABLE


def left_behind(path) -> dict:
    """What the kill left, read from the store before a client opens it (and
    applies the feed, drops what is half made): the feed's entries, the
    tables, the indexes the table lists, and each index table's phase and
    back-fill cursor."""
    with regions.RegionServer.open(path, workload.server_options(
            background_workers=0, fs=NoSyncFileSystem())) as server:
        tables = set(server.list_tables())
        feed = TABLE + FEED_SUFFIX
        own = {n: server.table_attributes(n).get(INDEX_ATTRIBUTE) for n in tables}
        return {"feed": len(list(server.scan(feed))) if feed in tables else 0, "tables": tables,
                "listed": {i["name"] for i in
                           server.table_attributes(TABLE)[ATTRIBUTE].get("indexes", ())},
                "phase": {n: (o["phase"], o["cursor"]) for n, o in own.items() if o}}


def verify(path, acked, pending, seed):
    """Reopen: the table is the log's, every index the table's; then 150
    more operations, and the indexes still are."""
    summary, stats = Summary("index-crash", seed, "SIGKILL"), {}
    server = regions.RegionServer.open(path, workload.server_options(
        background_workers=0, fs=NoSyncFileSystem()))
    model, _ = workload.verify_reopened(summary, server, path, {}, acked, pending,
                                        indexes=stats)
    assert summary.ok, summary.details
    assert stats == {"index_checks": 1, "index_problems": 0}
    assert summary.verified == len(acked) >= 300
    with OTSClient(path, server_options=workload.server_options()) as client:
        wl = workload.Workload(client, random.Random(seed + 1), workload.MemoryLog(),
                               10 ** 6, workload.next_node(model))
        for _ in range(150):
            wl.step()
        workload.check_indexes(summary, client, stats)
    assert summary.ok and stats["index_problems"] == 0, summary.details


def _feed_left(left):
    return left["feed"] > 0


def _backfilling(cursor):
    return lambda left: left["phase"]["soak_pad"][0] == "ISP_FULL" and \
        (left["phase"]["soak_pad"][1] is not None) == cursor


def _made_not_listed(name):
    return lambda left: name in left["tables"] and name not in left["listed"]


# step -> (the child's action, the server methods trapped, their table, the nth call,
#          before or after it, rows added for a back-fill to read, what the kill left)
TRAPS = {
    "feed appended, base row not written": ("write", "put+write", TABLE, 40, "before", 0,
                                            _feed_left),
    "base row written, local index not": ("write", "write", "soak_pn", 25, "before", 0,
                                          _feed_left),
    "global index row written, refs not": ("write", "put", "soak_v.refs", 30, "before", 0,
                                           _feed_left),
    "local index row written, refs not": ("write", "put", "soak_pn.refs", 20, "before", 0,
                                          _feed_left),
    "entries applied, not yet forgotten": ("write", "delete+write@index-maintainer",
                                           "soak.feed", 12, "before", 0, _feed_left),
    "back-fill, before its first cursor": ("create", "write", "soak_pad", 600, "before", 1500,
                                           _backfilling(False)),
    "back-fill, just after its cursor": ("create", "set_table_attributes", "soak_pad", 1,
                                         "after", 1500, _backfilling(True)),
    "index tables made, not yet listed": ("create", "set_table_attributes", TABLE, 1, "before",
                                          0, _made_not_listed("soak_pad")),
    "index listed, back-fill not begun": ("create", "set_table_attributes", TABLE, 1, "after",
                                          0, _backfilling(False)),
    "index unlisted, its tables not deleted": ("drop", "delete_table", "soak_node", 1,
                                               "before", 0, _made_not_listed("soak_node")),
}


@pytest.mark.parametrize("step", sorted(TRAPS))
def test_kill_at_an_index_step_then_reopen(tmp_path, step):
    *trap, left = TRAPS[step]
    path = str(tmp_path / "store")
    seed = 1 + sorted(TRAPS).index(step)
    acked, pending = run_child(path, seed, *trap)
    assert left(left_behind(path)), left_behind(path)
    verify(path, acked, pending, seed)


@pytest.mark.parametrize("table", [TABLE, "soak_v"])
@pytest.mark.parametrize("point", ["split.prepared", "split.before_meta", "split.after_meta",
                                   "split.daughters_opened"])
def test_kill_inside_a_split_of_the_base_table_or_of_an_index(tmp_path, table, point):
    path = str(tmp_path / "store")
    acked, pending = run_child(path, 7, "split", table=table, env={KILL_ENV: point})
    verify(path, acked, pending, 7)


def test_feed_entries_a_crash_left_reach_a_global_index_whatever_the_maintainer_does_first(
        tmp_path, monkeypatch):
    """Entries left in the feed (a kill after the acknowledgements, before the
    maintainer applied them) are applied at open.  Indexer.open once started
    the maintainer thread (in ``_attach``) before it had loaded the index
    tables' schemas; a maintainer pass in that window reconciled each row
    against no index and deleted the entries: the rows never reached the
    index (killloop --indexes met it in most cycles; fixed in 006eda7).  The
    window is widened here: 0.3 s after each ``_attach``."""
    path = str(tmp_path / "store")
    client = OTSClient(path)
    client.create_table(TableMeta("t", [("p", "INTEGER")], [("a", "STRING")]),
                        secondary_indexes=[SecondaryIndexMeta("g", ["a"], [])])
    client._indexer._drain = lambda *args: False       # applies nothing: entries stay
    for i in range(10):
        client.put_row("t", Row([("p", i)], [("a", "v%d" % i)]))
    client.close()
    attach = Indexer._attach

    def slow_attach(self, base, schema):
        attach(self, base, schema)
        time.sleep(0.3)
    monkeypatch.setattr(Indexer, "_attach", slow_attach)
    client = OTSClient(path)
    monkeypatch.undo()
    assert client.wait_for_indexes("t")
    assert [str(p) for p in check_indexes(client, "t")] == []
    client.close()


# -- the soak loops with indexes, at small counts ---------------------------------------

def test_the_kill_loop_with_indexes_loses_nothing_and_finds_every_index_right():
    stats = {}
    s = killloop.run(seed=3, count=20, stats=stats, indexes=True)
    assert s.ok, s.details
    assert s.cycles == 20 and stats["index_checks"] == 20 and stats["index_problems"] == 0
    assert stats["kills_with_feed_left"] > 5          # most kills leave entries to apply
    assert stats["indexes_created"] + stats["indexes_dropped"] > 0


def test_eight_threads_during_splits_keep_their_indexes_right():
    stats = {}
    s = concurrency.run(seed=1, seconds=20, stats=stats, indexes=True, check_every=4)
    assert s.ok, s.details
    assert stats["index_checks"] >= 3 and stats["index_problems"] == 0     # paused ones, the last
    assert stats["local_index_reads"] > 100 and stats["splits"] >= 5
