"""Model-based and concurrency tests of the row API, plus compaction GC and CU rules."""
import random
import threading
import time

import pytest

from regions.tablestore import (INF_MAX, INF_MIN, ColumnPaginationFilter, ComparatorType,
                                Condition, OTSServiceError,
                                Row, SingleColumnCondition, TableMeta, TableOptions)
from regions.tablestore.capacity import UNIT
from tablestore_fake import FakeServer, open_client


class Model:
    """Tablestore as a dict: pk tuple -> {column: value} (max_versions 1, no TTL).

    A row exists from its first write until DeleteRow, whatever columns it has
    left; an UpdateRow with only deletions does not create a row."""

    def __init__(self):
        self.rows = {}

    def put(self, key, cols):
        self.rows[key] = dict(cols)

    def update(self, key, puts, deletes, incs):
        if key not in self.rows and not puts and not incs:
            return
        row = dict(self.rows.get(key, {}))
        for n, v in puts:
            row[n] = v
        for n in deletes:
            row.pop(n, None)
        for n, d in incs:
            row[n] = row.get(n, 0) + d
        self.rows[key] = row

    def delete(self, key):
        self.rows.pop(key, None)


def _pk(key):
    return [("p", key[0]), ("s", key[1])]


def _check(client, model):
    lo, hi = _pk((INF_MIN, INF_MIN)), _pk((INF_MAX, INF_MAX))
    got = {}
    next_start = lo
    while next_start:
        _, next_start, rows, _ = client.get_range("m", "FORWARD", next_start, hi, limit=37)
        for r in rows:
            got[(r.primary_key[0][1], r.primary_key[1][1])] = {n: v for n, v, _ in
                                                              r.attribute_columns}
    assert got == model.rows
    back = [(r.primary_key[0][1], r.primary_key[1][1]) for r in client.get_range(
        "m", "BACKWARD", hi, lo)[2]]
    assert back == sorted(model.rows, reverse=True)
    # Column ranges of wide rows: [c1, n) of every row, paged; and one page of
    # at most 2 columns from offset 1 (ColumnPaginationFilter) on GetRow.
    got = {}
    next_start = lo
    while next_start:
        _, next_start, rows, _ = client.get_range("m", "FORWARD", next_start, hi, limit=41,
                                                  start_column="c1", end_column="n")
        for r in rows:
            got[(r.primary_key[0][1], r.primary_key[1][1])] = {n: v for n, v, _ in
                                                              r.attribute_columns}
    assert got == {k: {n: v for n, v in cols.items() if "c1" <= n < "n"}
                   for k, cols in model.rows.items()}
    for key in list(model.rows)[:20]:
        row = client.get_row("m", _pk(key), column_filter=ColumnPaginationFilter(1, 2))[1]
        assert row is not None and row.primary_key == _pk(key)
        assert [n for n, _, _ in row.attribute_columns] == sorted(model.rows[key])[1:3]


def test_random_row_operations_match_the_model_across_reopen(tmp_path):
    rnd = random.Random(7)
    tiny = dict(memtable_bytes=8 << 10, max_region_bytes=32 << 10, split_jitter=0.0,
                split_policy="constant", background_workers=0)
    client = open_client(tmp_path, **tiny)
    client.create_table(TableMeta("m", [("p", "INTEGER"), ("s", "STRING")]),
                        split_points=[-5, 5])
    model = Model()
    for step in range(3000):
        key = (rnd.randint(-150, 150), rnd.choice(["", "a", "b\x00", "zz"]))
        op = rnd.random()
        if op < 0.4:
            cols = {"c%d" % rnd.randint(0, 3): "v" * rnd.randint(0, 300)
                    for _ in range(rnd.randint(0, 3))}  # none: a PK-only row
            client.put_row("m", Row(_pk(key), list(cols.items())))
            model.put(key, cols)
        elif op < 0.75:
            # Distinct columns, each put or deleted; some updates only delete.
            names = rnd.sample(["c0", "c1", "c2", "c3"], rnd.randint(1, 3))
            only_deletes = rnd.random() < 0.25
            puts = [(n, "v%d" % step) for n in names
                    if not only_deletes and rnd.random() < 0.6]
            deletes = [n for n in names if n not in dict(puts)]
            incs = [("n", rnd.randint(1, 5))] if not only_deletes and rnd.random() < 0.3 else []
            if any(n == "n" and not isinstance(model.rows.get(key, {}).get("n", 0), int)
                   for n, _ in incs):
                incs = []
            client.update_row("m", Row(_pk(key), {"put": puts, "delete_all": deletes,
                                                  "increment": incs}), None)
            model.update(key, puts, deletes, incs)
        else:
            client.delete_row("m", Row(_pk(key)), None)
            model.delete(key)
        if step % 100 == 99:
            client._server.flush_all()
            client._server.maintain()      # auto-split regions over max_region_bytes, inline
        if step % 1000 == 999:
            _check(client, model)
    splits = client.describe_table("m").shard_splits
    # the tiny thresholds made the server split the pre-split regions further
    assert len(splits) > 4, splits
    client.close()
    # Pre-split at -5 and 5; auto-splits (if the server made any) stay on partition keys.
    assert splits[:1] and set([-5, 5]) <= set(splits) and splits == sorted(set(splits))
    client = open_client(tmp_path, **tiny)
    _check(client, model)
    assert client.describe_table("m").shard_splits == splits
    client.close()


def test_threads_doing_increments_and_conditional_updates_lose_nothing(tmp_path):
    client = open_client(tmp_path)
    client.create_table(TableMeta("m", [("p", "INTEGER"), ("s", "STRING")]))
    for r in range(3):
        client.put_row("m", Row(_pk((r, "")), [("n", 0), ("cas", 0)]))
    threads, per_thread = 4, 150

    def work(seed):
        rnd = random.Random(seed)
        for _ in range(per_thread):
            key = _pk((rnd.randint(0, 2), ""))
            client.update_row("m", Row(key, {"increment": [("n", 1)]}), None)
            while True:  # compare-and-set loop on 'cas'
                cur = client.get_row("m", key, ["cas"])[1].attribute_columns[0][1]
                cond = Condition("EXPECT_EXIST",
                                 SingleColumnCondition("cas", cur, ComparatorType.EQUAL))
                try:
                    client.update_row("m", Row(key, {"put": [("cas", cur + 1)]}), cond)
                    break
                except OTSServiceError as e:
                    assert e.get_error_code() == "OTSConditionCheckFail"

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    totals = {"n": 0, "cas": 0}
    for r in range(3):
        for n, v, _ in client.get_row("m", _pk((r, "")))[1].attribute_columns:
            totals[n] += v
    assert totals == {"n": threads * per_thread, "cas": threads * per_thread}
    client.close()


def test_compaction_filter_drops_masked_expired_and_excess_versions():
    from regions.tablestore import OTSClient
    server = FakeServer()
    c = OTSClient(None, server=server)
    c.create_table(TableMeta("m", [("p", "INTEGER")]), TableOptions(max_version=2))
    key = [("p", 1)]
    c.put_row("m", Row(key, [("a", 1)]))
    base = int(time.time() * 1000) - 60000
    for i in range(4):
        c.update_row("m", Row(key, {"put": [("b", i, base + i)]}), None)
    c.update_row("m", Row(key, {"put": [("z", 1)]}), None)
    c.update_row("m", Row(key, {"delete_all": ["z"]}), None)
    before = c.get_row("m", key, max_version=5)
    entries = len(server.tables["m"]["data"])
    server.compact("m")
    after = len(server.tables["m"]["data"])
    # head + 2 newest 'b' puts + delete_all marker of z survive; 2 excess b and the masked z go.
    # 5 UpdateRows with a put wrote 5 EXISTS deltas; the newest survives.
    assert (entries, after) == (12, 5)
    assert c.get_row("m", key, max_version=5) == before
    c.put_row("m", Row(key, [("a", 2)]))
    server.compact("m")
    assert len(server.tables["m"]["data"]) == 1


@pytest.mark.parametrize("value_bytes,write_cu", [(10, 1), (4096 - 11, 1),
                                                  (4096 - 10, 2), (3 * 4096, 4)])
def test_write_cu_rounds_pk_plus_attributes_up_to_4k(tmp_path, value_bytes, write_cu):
    c = open_client(tmp_path)
    c.create_table(TableMeta("m", [("p", "INTEGER")]))
    # size = "p"(1) + 8 + "ab"(2) + value_bytes
    consumed, _ = c.put_row("m", Row([("p", 1)], [("ab", "x" * value_bytes)]))
    assert (consumed.read, consumed.write) == (0, write_cu)
    consumed, _, _ = c.get_row("m", [("p", 1)])
    assert consumed.read == -(-(9 + 2 + value_bytes) // UNIT)
    c.close()


def test_read_cu_of_missing_row_and_empty_range_is_one_and_update_counts_deleted_names(tmp_path):
    c = open_client(tmp_path)
    c.create_table(TableMeta("m", [("p", "INTEGER")]))
    assert c.get_row("m", [("p", 1)])[0].read == 1
    assert c.get_range("m", "FORWARD", [("p", INF_MIN)], [("p", INF_MAX)])[0].read == 1
    name = "d" * 200
    consumed, _ = c.update_row("m", Row([("p", 1)], {"delete_all": [name] * 1}),
                               Condition("IGNORE"))
    assert (consumed.read, consumed.write) == (0, 1)
    c.close()


def _partition(client, part, tid=None):
    """The rows of one partition key value as the client sees them (in ``tid``)."""
    got = client.get_range("m", "FORWARD", _pk((part, INF_MIN)), _pk((part, INF_MAX)),
                           transaction_id=tid)[2]
    return {(part, r.primary_key[1][1]): {n: v for n, v, _ in r.attribute_columns} for r in got}


def _of(rows, part):
    return {k: v for k, v in rows.items() if k[0] == part}


def test_random_transactions_commit_and_abort_match_the_model(tmp_path):
    """Steps inside local transactions go to a copy of the model (the
    transaction's view); commit replaces the model by the copy, abort drops
    it.  Reads inside match the copy, reads outside the model, after every
    step; across reopen the committed state remains."""
    rnd = random.Random(11)
    client = open_client(tmp_path, memtable_bytes=8 << 10, background_workers=0)
    client.create_table(TableMeta("m", [("p", "INTEGER"), ("s", "STRING")]), split_points=[3])
    model = Model()
    for round_ in range(60):
        part = rnd.randint(0, 5)
        tid = client.start_local_transaction("m", [("p", part)])
        view = Model()
        view.rows = {k: dict(v) for k, v in model.rows.items()}
        for step in range(rnd.randint(1, 12)):
            key = (part, rnd.choice(["", "a", "b", "zz"]))
            op = rnd.random()
            if op < 0.4:
                cols = {"c%d" % rnd.randint(0, 3): "v%d.%d" % (round_, step)}
                client.put_row("m", Row(_pk(key), list(cols.items())), None, None, tid)
                view.put(key, cols)
            elif op < 0.8:
                puts = [("c%d" % rnd.randint(0, 3), "u%d.%d" % (round_, step))]
                incs = [("n", rnd.randint(1, 5))] if rnd.random() < 0.4 else []
                client.update_row("m", Row(_pk(key), {"put": puts, "increment": incs}), None,
                                  None, tid)
                view.update(key, puts, [], incs)
            else:
                client.delete_row("m", Row(_pk(key)), None, transaction_id=tid)
                view.delete(key)
            assert _partition(client, part, tid) == _of(view.rows, part)
            back = client.get_range("m", "BACKWARD", _pk((part, INF_MAX)), _pk((part, INF_MIN)),
                                    transaction_id=tid)[2]
            assert [(part, r.primary_key[1][1]) for r in back] == \
                sorted(_of(view.rows, part), reverse=True)
            assert _partition(client, part) == _of(model.rows, part)
        if rnd.random() < 0.6:
            client.commit_transaction(tid)
            model = view
        else:
            client.abort_transaction(tid)
        _check(client, model)
    client.close()
    client = open_client(tmp_path, memtable_bytes=8 << 10, background_workers=0)
    _check(client, model)
    client.close()
