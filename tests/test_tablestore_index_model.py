"""Model-based test of secondary indexes: seeded random steps (indexes created
with and without their base data, dropped; rows put, updated, incremented,
deleted, in batches and local transactions, moving between index keys and
losing or gaining index columns; reopens; splits of the base table and of
the index tables), and after every step the index checker
(regions/tablestore/indexcheck.py) must find nothing: the local indexes at
once, the global ones after ``wait_for_indexes``.  The checker itself is
shown to see a missing, a phantom and a wrong entry, and a refs table out of
step."""
import random
import threading
import time

import pytest

from regions.tablestore import (BatchWriteRowRequest, Condition, DeleteRowItem, OTSServiceError,
                                PutRowItem, Row, RowExistenceExpectation, SecondaryIndexMeta,
                                SecondaryIndexType, TableInBatchWriteRowItem, TableMeta,
                                UpdateRowItem)
from regions.errors import SplitError
from regions.tablestore import _cellcodec, _rowcodec, cells
from regions.tablestore.indexcheck import check_indexes, main as check_main, read_rows
from regions.tablestore.indexes import REFS_SUFFIX
from tablestore_fake import open_client

GLOBAL, LOCAL = SecondaryIndexType.GLOBAL_INDEX, SecondaryIndexType.LOCAL_INDEX
TABLE = "m"
DEFINED = [("a", "STRING"), ("b", "INTEGER"), ("c", "STRING"), ("d", "BINARY")]
#: every index the steps may create: name -> (index columns, attributes, type)
POOL = {
    "g_a": (["a"], ["b", "c"], GLOBAL),
    "g_bc": (["b", "c"], ["a", "d"], GLOBAL),
    "g_sd": (["s", "d"], [], GLOBAL),               # a base key column first
    "l_pb": (["p", "b"], ["a", "c"], LOCAL),
    "l_pas": (["p", "a", "s"], ["d"], LOCAL),       # the base key's last column inside
}
#: the values a step writes: few, so rows keep moving onto each other's index keys;
#: the last of each column is of the wrong type (an index key then has no entry);
#: BINARY values are bytearrays (the SDK's rule: bytes are a STRING)
VALUES = {"a": ["A", "B", "C", 7], "b": [1, 2, 3, "2"], "c": ["u", "v", 5],
          "d": [bytearray(b"\x00"), bytearray(b"\x01\xff"), "x"]}
TINY = dict(memtable_bytes=4 << 10, max_region_bytes=12 << 10, split_jitter=0.0,
            split_policy="constant", background_workers=0)
HOUR_MS = 3600 * 1000
_CONDS = {"I": RowExistenceExpectation.IGNORE, "E": RowExistenceExpectation.EXPECT_EXIST,
          "N": RowExistenceExpectation.EXPECT_NOT_EXIST}


def _meta(name):
    columns, attributes, kind = POOL[name]
    return SecondaryIndexMeta(name, list(columns), list(attributes), kind)


def _pk(key):
    return [("p", key[0]), ("s", key[1])]


class Model:
    """The base table: pk -> {column: (value, timestamp, order)}; the visible
    version of a column is the one of the highest (timestamp, order)."""

    def __init__(self):
        self.rows = {}
        self.order = 0

    def _next(self):
        self.order += 1
        return self.order

    def exists(self, key):
        return key in self.rows

    def put(self, key, cols, now):
        self.rows[key] = {n: (v, now, self._next()) for n, v in cols.items()}

    def update(self, key, puts, deletes, incs, now):
        """puts: [(name, value, ts or None)]; False if the row would not be
        written (an INCREMENT of a column that is not an integer)."""
        row = dict(self.rows.get(key, {}))
        for n, d in incs:
            cur = row.get(n)
            if cur is not None and (not isinstance(cur[0], int) or isinstance(cur[0], bool)):
                return False
        if key not in self.rows and not puts and not incs:
            return True
        for n, v, ts in puts:
            cell = (v, now if ts is None else ts, self._next())
            if n not in row or cell[1:] > row[n][1:]:
                row[n] = cell
        for n in deletes:
            row.pop(n, None)
        for n, d in incs:
            cur = row.get(n)
            row[n] = ((cur[0] if cur else 0) + d, max(now, cur[1]) if cur else now,
                      self._next())
        self.rows[key] = row
        return True

    def delete(self, key):
        self.rows.pop(key, None)

    def values(self):
        return {k: {n: c[0] for n, c in cols.items()} for k, cols in self.rows.items()}


class Run:
    """One seeded run: the client, the model, the indexes and their exemptions."""

    def __init__(self, path, seed):
        self.path, self.rnd = path, random.Random(seed)
        self.client = open_client(path, **TINY)
        self.model = Model()
        self.indexes = {}             # name -> (local, include_base_data)
        # index made without its base data -> base rows not written since
        # (they may lack an entry)
        self.exempt = {}
        self.counts = dict.fromkeys(("create", "create_base", "drop", "put", "update", "delete",
                                     "batch", "txn", "refused", "split", "reopen", "checks"), 0)
        first = self.rnd.sample(sorted(POOL), 2)
        self.client.create_table(TableMeta(TABLE, [("p", "INTEGER"), ("s", "STRING")], DEFINED),
                                 secondary_indexes=[_meta(n) for n in first], split_points=[3])
        for name in first:
            self.indexes[name] = (POOL[name][2] == LOCAL, False)

    # -- steps ------------------------------------------------------------------
    def step(self, i):
        x = self.rnd.random()
        if x < 0.06:
            self.create()
        elif x < 0.09:
            self.drop()
        elif x < 0.36:
            self.put()
        elif x < 0.66:
            self.update()
        elif x < 0.76:
            self.delete()
        elif x < 0.88:
            self.batch()
        else:
            self.transaction()
        if i % 40 == 39:
            self.split()
        if i % 150 == 149:
            self.reopen()

    def key(self):
        return (self.rnd.randrange(8), self.rnd.choice(["", "x", "yy"]))

    def columns(self):
        names = self.rnd.sample(sorted(VALUES), self.rnd.randint(0, 4))
        return {n: self.rnd.choice(VALUES[n]) for n in names}

    def written(self, key):
        for rows in self.exempt.values():
            rows.discard(key)

    def create(self):
        free = sorted(set(POOL) - set(self.indexes))
        if not free or len(self.indexes) >= 5:
            return
        name = self.rnd.choice(free)
        base_data = self.rnd.random() < 0.6
        self.client.create_secondary_index(TABLE, _meta(name), base_data)
        self.indexes[name] = (POOL[name][2] == LOCAL, base_data)
        if not base_data:
            self.exempt[name] = set(self.model.rows)
        self.counts["create_base" if base_data else "create"] += 1

    def drop(self):
        if not self.indexes:
            return
        name = self.rnd.choice(sorted(self.indexes))
        self.client.delete_secondary_index(TABLE, name)
        del self.indexes[name]
        self.exempt.pop(name, None)
        self.counts["drop"] += 1

    def condition(self, put=False):
        """EXPECT_NOT_EXIST is a PutRow's only (the service refuses it elsewhere)."""
        return self.rnd.choice("IIIEN" if put else "IIIE")

    def allowed(self, key, cond):
        exists = self.model.exists(key)
        return not ((cond == "E" and not exists) or (cond == "N" and exists))

    def _put_plan(self):
        key, cols, cond = self.key(), self.columns(), self.condition(put=True)
        return key, cond, cols

    def _update_plan(self):
        key, cond = self.key(), self.condition()
        names = self.rnd.sample(sorted(VALUES), self.rnd.randint(1, 3))
        puts, deletes = [], []
        now = int(time.time() * 1000)
        for n in names:
            if self.rnd.random() < 0.7:
                ts = None
                if self.rnd.random() < 0.15:      # an explicit version, older or newer
                    ts = now + self.rnd.choice((-HOUR_MS, HOUR_MS))
                puts.append((n, self.rnd.choice(VALUES[n]), ts))
            else:
                deletes.append(n)
        incs = [("b", self.rnd.randint(1, 2))] if "b" not in names and \
            self.rnd.random() < 0.3 else []
        return key, cond, puts, deletes, incs

    @staticmethod
    def _update_row(key, puts, deletes, incs):
        cols = {"put": [(n, v) if ts is None else (n, v, ts) for n, v, ts in puts]}
        if deletes:
            cols["delete_all"] = deletes
        if incs:
            cols["increment"] = incs
        return Row(_pk(key), cols)

    def _apply_put(self, key, cond, cols, now):
        if not self.allowed(key, cond):
            return False
        self.model.put(key, cols, now)
        self.written(key)
        return True

    def _apply_update(self, key, cond, puts, deletes, incs, now):
        if not self.allowed(key, cond):
            return False
        if not self.model.update(key, puts, deletes, incs, now):
            return "increment"
        self.written(key)
        return True

    def _apply_delete(self, key, cond):
        if not self.allowed(key, cond):
            return False
        self.model.delete(key)
        self.written(key)
        return True

    def _run(self, call, want):
        """Run one write; its outcome must be the model's ``want``."""
        error = None
        try:
            call()
            got = True
        except OTSServiceError as e:
            error = e
            got = {"OTSConditionCheckFail": False}.get(e.code, e.code)
            if got == "OTSParameterInvalid" and "ncrement" in e.message:
                got = "increment"
        assert got == want, (want, got, error)
        if got is not True:
            self.counts["refused"] += 1

    def put(self):
        key, cond, cols = self._put_plan()
        now = int(time.time() * 1000)
        want = self._apply_put(key, cond, cols, now)
        self._run(lambda: self.client.put_row(TABLE, Row(_pk(key), list(cols.items())),
                                              Condition(_CONDS[cond])), want)
        self.counts["put"] += 1

    def update(self):
        key, cond, puts, deletes, incs = self._update_plan()
        now = int(time.time() * 1000)
        want = self._apply_update(key, cond, puts, deletes, incs, now)
        self._run(lambda: self.client.update_row(TABLE, self._update_row(key, puts, deletes, incs),
                                                 Condition(_CONDS[cond])), want)
        self.counts["update"] += 1

    def delete(self):
        key, cond = self.key(), self.condition()
        want = self._apply_delete(key, cond)
        self._run(lambda: self.client.delete_row(TABLE, Row(_pk(key)), Condition(_CONDS[cond])),
                  want)
        self.counts["delete"] += 1

    def batch(self):
        keys = list(dict.fromkeys(self.key() for _ in range(self.rnd.randint(1, 8))))
        items, wants = [], []
        now = int(time.time() * 1000)
        for key in keys:
            kind = self.rnd.random()
            if kind < 0.4:
                _, cond, cols = self._put_plan()
                wants.append(self._apply_put(key, cond, cols, now))
                items.append(PutRowItem(Row(_pk(key), list(cols.items())),
                                        Condition(_CONDS[cond])))
            elif kind < 0.8:
                _, cond, puts, deletes, incs = self._update_plan()
                wants.append(self._apply_update(key, cond, puts, deletes, incs, now))
                items.append(UpdateRowItem(self._update_row(key, puts, deletes, incs),
                                           Condition(_CONDS[cond])))
            else:
                cond = self.condition()
                wants.append(self._apply_delete(key, cond))
                items.append(DeleteRowItem(Row(_pk(key)), Condition(_CONDS[cond])))
        request = BatchWriteRowRequest()
        request.add(TableInBatchWriteRowItem(TABLE, items))
        response = self.client.batch_write_row(request)
        results = sorted((r for by_type in (response.table_of_put, response.table_of_update,
                                            response.table_of_delete)
                          for r in by_type.get(TABLE, [])), key=lambda r: r.index)
        got = [True if r.is_ok else {"OTSConditionCheckFail": False}.get(r.error_code, "increment")
               for r in results]
        assert got == wants, (got, wants, [(r.error_code, r.error_message) for r in results])
        self.counts["batch"] += 1

    def transaction(self):
        p = self.rnd.randrange(8)
        tid = self.client.start_local_transaction(TABLE, [("p", p)])
        saved = ({k: dict(v) for k, v in self.model.rows.items()}, self.model.order,
                 {n: set(r) for n, r in self.exempt.items()})
        for _ in range(self.rnd.randint(1, 4)):
            key = (p, self.rnd.choice(["", "x", "yy"]))
            now = int(time.time() * 1000)
            if self.rnd.random() < 0.5:
                cols = self.columns()
                self.model.put(key, cols, now)
                self.written(key)
                self.client.put_row(TABLE, Row(_pk(key), list(cols.items())), None, None, tid)
            elif self.rnd.random() < 0.7:
                _, _, puts, deletes, incs = self._update_plan()
                if self.model.update(key, puts, deletes, incs, now):
                    self.written(key)
                    self.client.update_row(TABLE, self._update_row(key, puts, deletes, incs),
                                           None, None, tid)
                else:
                    self.model.rows, self.model.order, self.exempt = (
                        {k: dict(v) for k, v in saved[0].items()}, saved[1],
                        {n: set(r) for n, r in saved[2].items()})
                    self.client.abort_transaction(tid)
                    return
            else:
                self.model.delete(key)
                self.written(key)
                self.client.delete_row(TABLE, Row(_pk(key)), None, transaction_id=tid)
        if self.rnd.random() < 0.75:
            self.client.commit_transaction(tid)
        else:
            self.client.abort_transaction(tid)
            self.model.rows, self.model.order, self.exempt = saved
        self.counts["txn"] += 1

    def split(self):
        """Split the largest region of the base table and of each index table
        (those with two partition keys or more: a split falls between them)."""
        server = self.client._server
        server.flush_all()
        for table in [TABLE] + sorted(self.indexes):
            try:
                regions = server.regions(table)
            except Exception:       # an index table not there: still building
                continue
            region = max(regions, key=lambda r: r.size_bytes)
            try:
                server.split_region(table, region.region_id)
                self.counts["split"] += 1
            except SplitError:
                pass

    def reopen(self):
        """A clean close and open: the catalogue, phases and back-fills reload.
        (Feed entries left unapplied by a kill are test_tablestore_index_crash.py's.)"""
        assert self.client.wait_for_indexes(TABLE, 30)
        self.client.close()
        self.client = open_client(self.path, **TINY)
        self.counts["reopen"] += 1

    # -- checks -----------------------------------------------------------------
    def check(self, base=False):
        """The local indexes now, then every index once the global ones caught up;
        ``base``: the base table against the model too."""
        described = self.client.describe_table(TABLE).secondary_indexes
        assert sorted(m.index_name for m in described) == sorted(self.indexes)
        ready = [m.index_name for m in described if m.index_type == LOCAL
                 and m.index_sync_phase == "ISP_INCR"]
        assert check_indexes(self.client, TABLE, ready, self.exempt) == []
        assert self.client.wait_for_indexes(TABLE, 30)
        assert check_indexes(self.client, TABLE, exempt=self.exempt) == []
        self.counts["checks"] += 1
        if base:
            got = {k: {n: c[0] for n, c in cols.items()}
                   for k, cols in read_rows(self.client, TABLE, ["p", "s"]).items()}
            assert got == self.model.values()


@pytest.mark.parametrize("seed", [1, 2])
def test_random_steps_keep_every_index_equal_to_what_its_base_calls_for(tmp_path, seed):
    run = Run(tmp_path / "store", seed)
    for i in range(500):
        run.step(i)
        run.check(base=i % 25 == 24)
    server = run.client._server
    split = [n for n in run.indexes if len(server.regions(n)) > 1]
    base_regions = len(server.regions(TABLE))
    run.client.close()
    # the steps did what they are for: every kind, some refused, tables split
    assert min(run.counts.values()) > 0, run.counts
    assert base_regions > 2 and split, (base_regions, run.indexes)


# -- the checker sees what it looks for --------------------------------------------

def _indexed(tmp_path):
    client = open_client(tmp_path / "store")
    client.create_table(TableMeta(TABLE, [("p", "INTEGER"), ("s", "STRING")], DEFINED),
                        secondary_indexes=[_meta("g_a"), _meta("l_pb")])
    client.put_row(TABLE, Row(_pk((1, "x")), [("a", "A"), ("b", 1), ("c", "u")]))
    client.put_row(TABLE, Row(_pk((2, "")), [("a", "B"), ("b", 2)]))
    client.put_row(TABLE, Row(_pk((3, "y")), [("b", 3)]))          # no a: not in g_a
    assert client.wait_for_indexes(TABLE)
    assert check_indexes(client, TABLE) == []
    return client


def _index_key(client, index, values):
    return cells.head_key(_rowcodec.encode_pk(client._schemas[index].types, list(values)))


def test_the_checker_reports_a_missing_entry(tmp_path):
    client = _indexed(tmp_path)
    client._server.delete("g_a", _index_key(client, "g_a", ("B", 2, "")))
    problems = check_indexes(client, TABLE)
    # the entry is gone, and refs still names it
    assert [(p.index, p.kind, p.key, p.base_key) for p in problems] == [
        ("g_a", "missing", ("B", 2, ""), (2, "")), ("g_a", "refs", (), ())]
    # an index made without its base data may lack the entry of a row not written since
    assert [p.kind for p in check_indexes(client, TABLE, exempt={"g_a": {(2, "")}})] == ["refs"]
    assert check_indexes(client, TABLE, exempt={"g_a": {(1, "x")}}) != []
    client.close()


def test_the_checker_reports_a_phantom_and_a_wrong_entry(tmp_path):
    client = _indexed(tmp_path)
    server, gens = client._server, client._writer.gens
    now = cells.now_ms()
    # a phantom: an entry for row (3, 'y') under an a it never had
    server.put("g_a", _index_key(client, "g_a", ("Z", 3, "y")), _cellcodec.put_head(
        gens.next(), [("b", 3, now)], now))
    # a wrong entry: l_pb's row of (1, 'x') with another value of a
    server.put("l_pb", _index_key(client, "l_pb", (1, 1, "x")), _cellcodec.put_head(
        gens.next(), [("a", "Q", now), ("c", "u", now)], now))
    problems = {(p.index, p.kind): p for p in check_indexes(client, TABLE, refs=False)}
    assert set(problems) == {("g_a", "phantom"), ("l_pb", "wrong")}
    assert problems["g_a", "phantom"].key == ("Z", 3, "y")
    assert problems["g_a", "phantom"].base_key == (3, "y")
    wrong = problems["l_pb", "wrong"]
    assert wrong.want["a"][0] == "A" and wrong.got["a"][0] == "Q"
    assert "wrong" in str(wrong) and "'Q'" in str(wrong)
    client.close()


def test_the_checker_reports_refs_out_of_step_with_the_index(tmp_path):
    client = _indexed(tmp_path)
    row_key = _rowcodec.encode_pk(["INTEGER", "STRING"], [1, "x"])
    stale = _rowcodec.encode_pk(client._schemas["g_a"].types, ["OLD", 1, "x"])
    client._server.put("g_a" + REFS_SUFFIX, row_key, stale)
    problems = check_indexes(client, TABLE)
    assert [(p.index, p.kind, p.base_key) for p in problems] == [("g_a", "refs", (1, "x"))]
    assert check_indexes(client, TABLE, refs=False) == []
    client.close()


def test_the_check_command_reads_a_store_and_exits_1_on_a_problem(tmp_path, capsys):
    client = _indexed(tmp_path)
    client.close()
    data = str(tmp_path / "store")
    assert check_main(["--data", data]) == 0
    assert capsys.readouterr().out == "indexes checked: 2, problems: 0\n"
    client = open_client(tmp_path / "store")
    client._server.delete("l_pb", _index_key(client, "l_pb", (2, 2, "")))
    client.close()
    assert check_main(["--data", data, TABLE]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("m/l_pb: missing index row (2, 2, '') (base row (2, ''))")
    assert out[-1] == "indexes checked: 2, problems: 2"
    # made without its base data, the index may lack the entry; refs still names it
    assert check_main(["--data", data, "--no-base-data", "l_pb"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "indexes checked: 2, problems: 1"


def _status(main, argv):
    """``main(argv)``'s exit status, whether it returns it or argparse exits."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("args, error", [
    (["--data", "{missing}"], "argument --data: {missing}: no such directory"),
    (["--data", "{empty}"], "no store at {empty}"),
    (["--data", "{store}", "nope"], "no table 'nope' in {store}"),
    (["--data", "{store}", "--timeout", "0"], "argument --timeout: 0 is not a positive number "
                                              "(greater than 0)"),
])
def test_the_check_command_refuses_bad_input_in_one_line_and_makes_no_store(tmp_path, capsys,
                                                                            args, error):
    _indexed(tmp_path).close()
    (tmp_path / "empty").mkdir()
    paths = dict(missing=str(tmp_path / "missing"), empty=str(tmp_path / "empty"),
                 store=str(tmp_path / "store"))
    assert _status(check_main, [a.format(**paths) for a in args]) == 2
    assert capsys.readouterr().err == ("python -m regions.tablestore.indexcheck: error: %s\n"
                                       % error.format(**paths))
    assert list((tmp_path / "empty").iterdir()) == [] and not (tmp_path / "missing").exists()


# -- races the seeded steps cannot time: each made certain with a slow write ----------

def _slow(monkeypatch, server, method, table, seconds, started=None):
    """``server.method`` delayed by ``seconds`` for ``table`` (``started`` set
    when the delayed call begins) until ``monkeypatch.undo()``."""
    real = getattr(server, method)

    def slow(name, *args, **kwargs):
        if name == table:
            if started is not None:
                started.set()
            time.sleep(seconds)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(server, method, slow)


def test_a_committed_transaction_reaches_a_global_index_however_late_its_write_lands(
        monkeypatch):
    """A commit appends the feed entries of its rows, then writes them; it
    once did so without their row locks, and a maintainer pass between the
    two reconciled the rows' state before the commit and deleted the
    entries: the index never saw the transaction's rows (the crash tests met
    it every run; fixed in 149c4d5).  Here the commit's write is 0.3 s
    late."""
    client = open_client(":memory:")
    client.create_table(TableMeta(TABLE, [("p", "INTEGER"), ("s", "STRING")], DEFINED),
                        secondary_indexes=[_meta("g_a")])
    client.put_row(TABLE, Row(_pk((1, "x")), [("a", "A")]))
    assert client.wait_for_indexes(TABLE)
    tid = client.start_local_transaction(TABLE, [("p", 1)])
    client.put_row(TABLE, Row(_pk((1, "x")), [("a", "B")]), None, None, tid)
    _slow(monkeypatch, client._server, "write", TABLE, 0.3)
    client.commit_transaction(tid)
    monkeypatch.undo()
    assert client.wait_for_indexes(TABLE)
    assert [str(p) for p in check_indexes(client, TABLE)] == []
    client.close()


@pytest.mark.parametrize("index", ["g_a", "l_pb"])
def test_an_index_created_with_its_base_data_holds_a_write_in_flight_meanwhile(monkeypatch,
                                                                              index):
    """A write that began before create_secondary_index (its feed looked up:
    no index yet) and lands after the back-fill read its row's place wrote
    no feed entry and was never back-filled: the acknowledged row was never
    indexed (fixed in 149c4d5: the create passes every row lock once).
    Here the write is 0.3 s late; the index is created meanwhile."""
    client = open_client(":memory:")
    client.create_table(TableMeta(TABLE, [("p", "INTEGER"), ("s", "STRING")], DEFINED))
    client.put_row(TABLE, Row(_pk((1, "x")), [("a", "A"), ("b", 1)]))
    started = threading.Event()
    _slow(monkeypatch, client._server, "put", TABLE, 0.3, started)
    writer = threading.Thread(target=client.put_row, args=(
        TABLE, Row(_pk((2, "y")), [("a", "B"), ("b", 2)])))
    writer.start()
    assert started.wait(10)
    client.create_secondary_index(TABLE, _meta(index), True)
    writer.join()
    monkeypatch.undo()
    assert client.wait_for_indexes(TABLE)
    assert [str(p) for p in check_indexes(client, TABLE)] == []
    client.close()
