"""kill -9 with a search index: a child process runs the crash workload
(regions/soak/workload.py) on its table with a search index
(regions.soak.searchcheck) and SIGKILLs itself at a chosen step
(regions.soak.killsteps): between the engine's add and its commit, between
the engine's commit and the feed's forget, in the index's back-fill (before
its first commit, after a commit before its cursor is saved, just after the
cursor), inside the index's create and drop, or at a kill point of a split of
the base table.  The parent first checks what the kill left, then reopens the
store, checks the table (workload.check_state) and that the index, once in
sync, holds exactly the table's rows (searchcheck.SearchCheck: each row one
document with its values, no phantom, no duplicate; MatchAll, a parallel scan
and Term/Range/Match queries agree with the table); then writes more,
makes a dropped index again, and checks again.  Then the checker is shown to
see each kind of problem, and the kill loop itself runs (killloop --search)
at a small count.  Also: a search index keeps the table's change feed when
the table's last secondary index or its stream goes (a defect found on the
way)."""
import os
import random

import pytest

import regions
from regions.procedure import KILL_ENV
from regions.soak import Summary, killloop, searchcheck, workload
from regions.soak.harness import NoSyncFileSystem
from regions.soak.killsteps import run_child
from regions.tablestore import OTSClient, pkcodec
from regions.tablestore.indexes import FEED_SUFFIX
from regions.tablestore.search import SEARCH_ATTRIBUTE, SEARCH_INFIX, Stored

TABLE, INDEX = workload.TABLE, searchcheck.INDEX
RECORD, FEED = TABLE + SEARCH_INFIX + INDEX, TABLE + FEED_SUFFIX
_OPS = 150              # operations of the child before its trap is set


def _reopen(path):
    return regions.RegionServer.open(path, workload.server_options(
        background_workers=0, fs=NoSyncFileSystem()))


def left_behind(path) -> dict:
    """What the kill left, read before a client opens the store: the feed's
    entries (None: no feed), the index's record (phase, cursor) or None,
    whether its engine's files are there."""
    with _reopen(path) as server:
        record = (server.table_attributes(RECORD) or {}).get(SEARCH_ATTRIBUTE) \
            if server.has_table(RECORD) else None
        return {"feed": len(list(server.scan(FEED))) if server.has_table(FEED) else None,
                "record": record and (record["phase"], record["cursor"]),
                "engine": os.path.isdir(os.path.join(path, "search", TABLE, INDEX))}


def verify(path, acked, pending, seed, expect):
    """Reopen: the table is the log's, the index (there if ``expect``) the
    table's; then 60 more operations (the index made again if it was not
    there) and the index is still the table's."""
    summary, stats = Summary("search-crash", seed, "SIGKILL"), {}
    check = searchcheck.SearchCheck(stats, seed=seed)
    check.expect = expect
    model, _ = workload.verify_reopened(summary, _reopen(path), path, {}, acked, pending,
                                        search=check)
    assert summary.ok, summary.details
    assert summary.verified == len(acked) >= _OPS
    assert stats["search_checks"] == (1 if expect else 0) and stats["search_problems"] == 0
    log = workload.MemoryLog()
    with OTSClient(path, server_options=workload.server_options()) as client:
        searchcheck.ensure(client)
        wl = workload.Workload(client, random.Random(seed + 1), log, 10 ** 6,
                               workload.next_node(model))
        for _ in range(60):
            wl.step()
    more, none = log.result()
    check.expect = True
    workload.verify_reopened(summary, _reopen(path), path, model, more, none, search=check)
    assert summary.ok, summary.details
    assert stats["search_problems"] == 0 and stats["search_documents"] > 200


def _feed_left(left):
    return bool(left["feed"])


def _backfilling(cursor):
    return lambda left: left["record"] is not None and left["record"][0] == "FULL" and \
        (left["record"][1] is not None) == cursor


_MAINTAINER, _BACKFILL = "@index-maintainer", "@search-backfill-" + INDEX

# step -> (the child's action, the methods trapped, their table (or search index),
#          the nth call, before or after it, rows added for a back-fill to read,
#          what the kill left, whether the index is there after the reopen)
TRAPS = {
    "engine added, not committed": ("write", "engine.commit" + _MAINTAINER, INDEX, 5, "before",
                                    0, _feed_left, True),
    "engine committed, feed not forgotten": ("write", "engine.commit" + _MAINTAINER, INDEX, 5,
                                             "after", 0, _feed_left, True),
    "back-fill, before its first commit": ("search-create", "engine.upsert" + _BACKFILL, INDEX,
                                           200, "before", 0, _backfilling(False), True),
    "back-fill committed, its cursor not saved": ("search-create", "engine.commit" + _BACKFILL,
                                                  INDEX, 1, "after", 800, _backfilling(False),
                                                  True),
    "back-fill, just after its cursor": ("search-create", "set_table_attributes", RECORD, 1,
                                         "after", 800, _backfilling(True), True),
    "create, its record not made": ("search-create", "create_table", RECORD, 1, "before", 0,
                                    lambda left: left["record"] is None, False),
    "create, record made, nothing loaded": ("search-create", "create_table", RECORD, 1, "after",
                                            0, _backfilling(False), True),
    "drop, its record not deleted": ("search-drop", "delete_table", RECORD, 1, "before", 0,
                                     lambda left: left["record"] is not None, True),
    "drop, record deleted, feed and engine left": (
        "search-drop", "delete_table", RECORD, 1, "after", 0,
        lambda left: left["record"] is None and left["engine"] and left["feed"] is not None,
        False),
}


@pytest.mark.parametrize("step", sorted(TRAPS))
def test_kill_at_a_search_step_then_reopen(tmp_path, step):
    *trap, left, expect = TRAPS[step]
    path = str(tmp_path / "store")
    seed = 41 + sorted(TRAPS).index(step)
    acked, pending = run_child(path, seed, *trap, indexes=False, search=True, ops=_OPS)
    assert left(left_behind(path)), left_behind(path)
    verify(path, acked, pending, seed, expect)


@pytest.mark.parametrize("point", ["split.before_meta", "split.daughters_opened"])
def test_kill_inside_a_split_of_the_base_table(tmp_path, point):
    path = str(tmp_path / "store")
    acked, pending = run_child(path, 9, "split", env={KILL_ENV: point}, indexes=False,
                               search=True, ops=_OPS)
    verify(path, acked, pending, 9, True)


@pytest.mark.parametrize("drop", ["the last secondary index", "the stream"])
def test_a_search_index_keeps_the_feed_when_the_tables_last_index_or_its_stream_goes(
        tmp_path, drop):
    """Dropping a table's last secondary index, or disabling its stream, once
    dropped the table's change feed with its search engines (``_unfeed``):
    the search index was still listed but unreadable (KeyError), and the
    writes after it never reached it, not even after a reopen (found reading
    indexes.py for this soak)."""
    from tablestore.metadata import FieldSchema, FieldType, SearchIndexMeta
    from regions.tablestore import Row, SecondaryIndexMeta, TableMeta
    from regions.tablestore.streams import StreamSpecification
    client = OTSClient(str(tmp_path))
    stream = drop == "the stream"
    client.create_table(TableMeta("t", [("p", "INTEGER")], [("a", "STRING")]),
                        secondary_indexes=None if stream else [SecondaryIndexMeta("g", ["a"], [])],
                        stream_spec=StreamSpecification(True, 24) if stream else None)
    client.create_search_index("t", "s", SearchIndexMeta([FieldSchema("a", FieldType.KEYWORD)]))
    client.put_row("t", Row([("p", 1)], [("a", "x")]))
    if stream:
        client.update_table("t", stream_spec=StreamSpecification(False))
    else:
        client.delete_secondary_index("t", "g")
    client.put_row("t", Row([("p", 2)], [("a", "y")]))
    for reopen in (False, True):
        if reopen:
            client.close()
            client = OTSClient(str(tmp_path))
        assert client.wait_for_search_index("t", "s")
        engine = client._indexer.tables["t"].searches["s"]
        assert engine.num_docs() == 2
    client.close()


# -- the checker sees each kind of problem ------------------------------------------

@pytest.fixture
def indexed():
    """An in-memory client whose table took 300 operations, its index in sync."""
    client = OTSClient(None, server_options=workload.server_options())
    workload.create_table(client)
    searchcheck.ensure(client)
    wl = workload.Workload(client, random.Random(3), workload.MemoryLog(), 0, 0)
    for _ in range(300):
        wl.step()
    assert client.wait_for_search_index(TABLE, INDEX, 60)
    yield client
    client.close()


def _check(client, expect=True):
    summary, stats = Summary("search-check", 0, "tampered"), {}
    check = searchcheck.SearchCheck(stats)
    check.expect = expect
    check.check(summary, client, workload.read_state(client))
    return summary, stats


def _tamper(client, change):
    engine = client._indexer.tables[TABLE].searches[INDEX]
    change(engine)
    engine._pending += 1
    engine.commit()


def _row_key(key):
    return pkcodec.encode_pk(["INTEGER", "INTEGER"], list(key))


def test_the_check_passes_on_the_index_as_written(indexed):
    summary, stats = _check(indexed)
    assert summary.ok, summary.details
    assert stats["search_documents"] > 300 and stats["search_queries"] == 8


def test_the_check_sees_a_lost_a_phantom_a_stale_and_a_doubled_document(indexed):
    state = workload.read_state(indexed)
    (k1, c1), (k2, c2) = sorted(state.items())[:2]
    gone = (31, 15) if (31, 15) not in state else (31, 999)
    pk = lambda k: {"p": k[0], "r": k[1]}                       # noqa: E731
    live = lambda cols: {c: [(1, v)] for c, v in cols.items()}  # noqa: E731
    tampers = [
        (lambda e: e.delete(_row_key(k1)), "losses", "no document"),
        (lambda e: e.upsert(_row_key(gone), pk(gone), live(c1)), "wrong", "phantom"),
        (lambda e: e.upsert(_row_key(k2), pk(k2), live(dict(c2, v="o-1"))), "wrong",
         "field v"),
        (lambda e: e._writer.add_document(e._tv.Document(
            _pk=_row_key(k2).hex(), _doc=Stored.pack(_row_key(k2)))), "wrong",
         "two documents"),
    ]
    for change, kind, words in tampers:
        _tamper(indexed, change)
        summary, _ = _check(indexed)
        assert getattr(summary, kind) >= 1 and any(words in d for d in summary.details), \
            (words, summary.details)
        for key in (k1, k2, gone):                  # the index as it was, for the next one
            indexed._indexer.reconcile(TABLE, _row_key(key), [],
                                       list(indexed._indexer.tables[TABLE].searches.values()))
        _tamper(indexed, lambda e: None)
        assert _check(indexed)[0].ok


def test_the_check_sees_an_index_there_or_not_against_its_log(indexed):
    summary, _ = _check(indexed, expect=False)
    assert summary.wrong == 1 and "its drop was acknowledged" in summary.details[0]
    searchcheck.drop(indexed)
    summary, _ = _check(indexed, expect=True)
    assert summary.losses == 1 and "its creation was acknowledged" in summary.details[0]
    assert searchcheck.expected({"S": ["drop", "dropped", "create"]}, True) is None
    assert searchcheck.expected({"S": ["drop", "dropped"]}, True) is False
    assert searchcheck.expected({}, True) is True


# -- the loop, at a small count ----------------------------------------------------

def test_the_kill_loop_with_a_search_index_finds_every_row_once():
    stats = {}
    s = killloop.run(seed=5, count=4, stats=stats, search=True)
    assert s.ok, s.details
    assert stats["search_checks"] >= 3 and stats["search_problems"] == 0
    assert stats["search_documents"] > 300 and stats["kills_with_feed_left"] >= 1
