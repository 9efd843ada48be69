"""regions-import and regions-export: typed rows in, the same rows out.

Embedded and through the official SDK against an in-process regions-server;
bad input (malformed CSV, wrong types, oversize values, duplicate keys) is
rejected row by row with file, line and column, and every row of the input
ends either written or in the rejects file.
"""
import base64
import json
import logging
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tablestore as ts

import consoleserver
import regions.tablestore as emb
from regions.transfer import importer, retry
from regions.transfer.cli import export_main, import_main
from regions.transfer.columns import from_text, infer_type
from regions.transfer.progress import Progress
from regions.transfer.shuffle import shuffled
from regions.transfer.target import EmbeddedTarget, RowResult
from regions.tablestore.validate import MAX_VALUE_BYTES

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)

PK = "uid:INTEGER,oid:STRING"
HEADER = "uid,oid,price,item,paid\n"


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def orders_csv(tmp_path, n=500, extra=""):
    rows = "".join(f"{i % 97},o{i},{i / 4},item {i},{'true' if i % 2 else 'false'}\n"
                   for i in range(n))
    return write(tmp_path / "orders.csv", HEADER + rows + extra)


def load(tmp_path, src, *args, table="orders", create=True):
    argv = [src, "--data", str(tmp_path / "db"), "--table", table, *args]
    if create:
        argv += ["--create", "--primary-key", PK]
    return import_main(argv)


def rows_of(tmp_path, table="orders"):
    with emb.OTSClient(str(tmp_path / "db")) as c:
        pk = [(n, emb.INF_MIN) for n, _ in c.describe_table(table).table_meta.schema_of_primary_key]
        end = [(n, emb.INF_MAX) for n, _ in pk]
        return {tuple(bytes(v) if isinstance(v, bytearray) else v for _, v in r.primary_key):
                {a[0]: a[1] for a in r.attribute_columns}
                for r in c.xget_range(table, emb.Direction.FORWARD, pk, end, emb.CapacityUnit())}


def rejects_of(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# -- import, embedded ------------------------------------------------------

def test_csv_rows_land_typed_with_one_write_cu_each(tmp_path, capsys):
    src = orders_csv(tmp_path, 500)
    assert load(tmp_path, src, "--workers", "3") == 0
    out = capsys.readouterr().out
    assert "rows written: 500" in out and "capacity units consumed: write 500, read 0" in out
    assert "rows rejected: 0" in out and "spread of the written rows over 1 region:" in out
    rows = rows_of(tmp_path)
    assert len(rows) == 500
    assert rows[(3, "o3")] == {"price": 0.75, "item": "item 3", "paid": True}
    assert not (tmp_path / "orders.csv.rejects.jsonl").exists()


def test_columns_override_the_inferred_types(tmp_path):
    blob = base64.b64encode(b"\x00\xffraw").decode()
    src = write(tmp_path / "t.csv", f"uid,oid,zip,data\n1,a,007,{blob}\n2,b,010,\n")
    assert load(tmp_path, src, "--columns", "zip:STRING,data:BINARY") == 0
    rows = rows_of(tmp_path)
    assert rows[(1, "a")] == {"zip": "007", "data": bytearray(b"\x00\xffraw")}
    assert rows[(2, "b")] == {"zip": "010"}  # an empty CSV field is an absent column


def test_bad_rows_are_named_rejected_and_the_rest_is_written(tmp_path, capsys):
    big = "x" * (MAX_VALUE_BYTES + 1)
    src = orders_csv(tmp_path, 20, extra=(
        "5,bad1,abc,thing,true\n"          # 22: price is no DOUBLE
        "x,bad2,1.0,thing,true\n"          # 23: the INTEGER primary key
        "5,bad3,1.0,thing\n"               # 24: a field short
        f"5,bad4,1.0,{big},true\n"         # 25: a cell over 2 MB
        "3,o3,9.9,again,true\n"            # 26: a repeated primary key (line 5)
        '5,bad5,1.0,"open quote,true\n'    # 27: malformed CSV, to the end of the file
        "6,lost,1.0,thing,true\n"))
    assert load(tmp_path, src, "--columns", "price:DOUBLE") == 2
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert err[0] == f"regions-import: {src}:22: column 3 (price): 'abc' is not a DOUBLE"
    assert err[1] == f"regions-import: {src}:23: column 1 (uid): 'x' is not an INTEGER"
    assert err[2] == f"regions-import: {src}:24: 4 fields where the header has 5"
    assert err[3].startswith(f"regions-import: {src}:25: column 4 (item): STRING value of "
                             f"{MAX_VALUE_BYTES + 1} bytes is over the service's limit")
    assert err[4] == (f"regions-import: {src}:26: duplicate primary key (uid, oid) first "
                      "seen at line 5; that row is the one loaded")
    assert err[5].startswith(f"regions-import: {src}:27: malformed CSV: unexpected end of data")
    assert "rows written: 20" in captured.out and "rows rejected: 6" in captured.out
    rows = rows_of(tmp_path)
    assert len(rows) == 20 and rows[(3, "o3")]["item"] == "item 3"
    rejects = rejects_of(tmp_path / "orders.csv.rejects.jsonl")
    assert [r["line"] for r in rejects] == [22, 23, 24, 25, 26, 27]
    assert rejects[0]["column"] == "3 (price)" and rejects[0]["row"]["price"] == "abc"


def test_batches_stay_under_the_services_4_mb_and_200_rows(tmp_path, monkeypatch):
    sizes = []
    real = EmbeddedTarget.write_rows
    monkeypatch.setattr(EmbeddedTarget, "write_rows",
                        lambda self, table, rows: sizes.append(len(rows)) or real(self, table, rows))
    big = "y" * (1_500_000)
    src = write(tmp_path / "big.csv", "uid,oid,blob\n" + "".join(f"{i},b{i},{big}\n"
                                                                 for i in range(7)))
    assert load(tmp_path, src, "--no-shuffle") == 0
    assert sizes == [2, 2, 2, 1]
    sizes.clear()
    assert load(tmp_path, orders_csv(tmp_path, 450), table="small") == 0
    assert sorted(sizes) == [50, 200, 200]


def test_the_input_is_never_its_own_rejects_file(tmp_path, capsys):
    src = orders_csv(tmp_path, 3)
    assert load(tmp_path, src, "--rejects", src) == 2
    assert "is the input itself" in capsys.readouterr().err
    assert open(src).read().startswith(HEADER)


def test_a_csv_with_a_byte_order_mark_names_its_first_column_right(tmp_path):
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbfuid,oid,v\n1,a,2\n")
    assert load(tmp_path, str(tmp_path / "bom.csv")) == 0
    assert rows_of(tmp_path) == {(1, "a"): {"v": 2}}


def test_allow_duplicates_sends_them_all_and_the_service_keeps_one(tmp_path):
    src = write(tmp_path / "d.csv", "uid,oid,v\n1,a,1\n1,a,2\n1,a,3\n")
    assert load(tmp_path, src, "--allow-duplicates", "--no-shuffle", "--workers", "1") == 0
    assert rows_of(tmp_path) == {(1, "a"): {"v": 3}}


def test_a_run_that_cannot_start_writes_nothing(tmp_path, capsys):
    src = write(tmp_path / "o.csv", "user,oid,v\n1,a,1\n")
    assert load(tmp_path, src) == 2
    assert capsys.readouterr().err == (f"regions-import: error: {src}: no column 'uid' of the "
                                       "primary key; the file has: user, oid, v\n")
    with emb.OTSClient(str(tmp_path / "db")) as c:
        assert c.list_table() == ()  # --create made no table for a file that cannot load
    src = write(tmp_path / "o.csv", "uid,oid,v\n1,a,1\n")
    assert load(tmp_path, src) == 0
    assert load(tmp_path, src, table="missing", create=False) == 2
    assert "cannot describe table 'missing'" in capsys.readouterr().err
    assert load(tmp_path, src) == 2
    assert "table 'orders' already exists" in capsys.readouterr().err
    assert import_main([src, "--data", str(tmp_path / "db"), "--table", "orders",
                        "--primary-key", "uid:INTEGER"]) == 2
    assert "has primary key uid:INTEGER,oid:STRING, not uid:INTEGER" in capsys.readouterr().err


def test_jsonl_keeps_json_types_and_rejects_what_has_no_tablestore_type(tmp_path, capsys):
    src = write(tmp_path / "o.jsonl", "\n".join([
        '{"uid": 1, "oid": "a", "n": 5, "f": 1.5, "ok": true, "s": "x", "gone": null}',
        '{"uid": 2, "oid": "b", "nested": {"a": 1}}',
        '{"uid": 3, "oid": "c", "bin": "AAE="}',
        'not json']) + "\n")
    assert load(tmp_path, src, "--columns", "bin:BINARY") == 2
    err = capsys.readouterr().err
    assert f"{src}:2: column 'nested': a dict value cannot be stored" in err
    assert f"{src}:4: not JSON" in err
    assert rows_of(tmp_path) == {(1, "a"): {"n": 5, "f": 1.5, "ok": True, "s": "x"},
                                 (3, "c"): {"bin": bytearray(b"\x00\x01")}}


def test_parquet_in_and_out_round_trips_every_type(tmp_path):
    table = pa.table({"uid": pa.array([1, 2, 3], pa.int64()), "oid": ["a", "b", "c"],
                      "f": [0.5, None, 2.5], "ok": [True, False, None],
                      "raw": [b"\x00", b"\x01\x02", None], "s": ["x", "y", "z"]})
    pq.write_table(table, tmp_path / "in.parquet")
    assert load(tmp_path, str(tmp_path / "in.parquet")) == 0
    assert export_main([str(tmp_path / "out.parquet"), "--data", str(tmp_path / "db"),
                        "--table", "orders"]) == 0
    back = pq.read_table(tmp_path / "out.parquet")
    assert back.column_names == ["uid", "oid", "f", "ok", "raw", "s"]
    assert back.to_pylist() == table.to_pylist()


def test_export_csv_then_import_gives_the_same_rows(tmp_path):
    src = orders_csv(tmp_path, 300)
    assert load(tmp_path, src) == 0
    out = str(tmp_path / "dump.csv")
    assert export_main([out, "--data", str(tmp_path / "db"), "--table", "orders",
                        "--page-rows", "70", "--no-progress"]) == 0
    assert load(tmp_path, out, table="copy") == 0
    assert rows_of(tmp_path, "copy") == rows_of(tmp_path)


def test_export_reads_a_key_range_page_by_page(tmp_path, capsys):
    assert load(tmp_path, orders_csv(tmp_path, 970)) == 0
    capsys.readouterr()
    out = tmp_path / "part.jsonl"
    assert export_main([str(out), "--data", str(tmp_path / "db"), "--table", "orders",
                        "--start", "10", "--end", "12,o500", "--columns", "price",
                        "--page-rows", "7"]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    want = sorted((uid, oid) for uid, oid in rows_of(tmp_path)
                  if uid == 10 or uid == 11 or (uid == 12 and oid < "o500"))
    assert [(r["uid"], r["oid"]) for r in got] == want
    assert set(got[0]) == {"uid", "oid", "price"}
    assert export_main([str(out), "--data", str(tmp_path / "db"), "--table", "orders",
                        "--start", "10", "--end", "11", "--columns", "nothing"]) == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"uid": uid, "oid": oid} for uid, oid in want if uid == 10]
    pages = -(-len(want) // 7)
    assert f"rows exported: {len(want)} in {pages} GetRange pages" in capsys.readouterr().out


def test_export_rejects_a_key_of_the_wrong_type_and_leaves_no_file(tmp_path, capsys):
    assert load(tmp_path, orders_csv(tmp_path, 5)) == 0
    out = tmp_path / "x.csv"
    assert export_main([str(out), "--data", str(tmp_path / "db"), "--table", "orders",
                        "--start", "abc"]) == 2
    assert "--start: column 'uid': 'abc' is not an INTEGER" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "x.csv.partial").exists()


def test_create_pre_split_from_a_splits_file_and_flag_a_hot_region(tmp_path, capsys):
    splits = write(tmp_path / "splits.txt", "20\n40\n60\n")
    rows = "".join(f"{5 if i % 2 else i % 80},o{i}\n" for i in range(400))
    src = write(tmp_path / "hot.csv", "uid,oid\n" + rows)
    assert load(tmp_path, src, "--split-points", splits) == 0
    out = capsys.readouterr().out
    assert "spread of the written rows over 4 regions:" in out
    assert "HOT region 0 [*, 20): 62.5% of the rows, over 2x an even share (25.0%)" in out
    with emb.OTSClient(str(tmp_path / "db")) as c:
        assert c.describe_table("orders").shard_splits == [20, 40, 60]


def test_a_binary_partition_key_loads_and_spreads(tmp_path, capsys):
    keys = [base64.b64encode(bytes([i])).decode() for i in range(0, 256, 5)]
    src = write(tmp_path / "b.csv", "k,v\n" + "".join(f"{k},{i}\n" for i, k in enumerate(keys)))
    splits = write(tmp_path / "splits.txt", "\\x80\n")
    assert import_main([src, "--data", str(tmp_path / "db"), "--table", "bin", "--create",
                        "--primary-key", "k:BINARY", "--split-points", splits]) == 0
    out = capsys.readouterr().out
    assert "spread of the written rows over 2 regions:" in out and "\\x80" in out
    assert len(rows_of(tmp_path, "bin")) == len(keys)


def test_split_points_from_the_planners_json_plan(tmp_path, capsys):
    from regions.presplit import IntegerSplit, points_json
    plan = write(tmp_path / "plan.json", points_json(IntegerSplit(0, 99).split(4), "integer"))
    assert load(tmp_path, orders_csv(tmp_path, 100), "--split-points", plan) == 0
    assert "spread of the written rows over 4 regions:" in capsys.readouterr().out
    hexplan = write(tmp_path / "hex.json", points_json(["4", "8"], "hex"))
    assert load(tmp_path, orders_csv(tmp_path, 100), "--split-points", hexplan, table="t2") == 2
    assert capsys.readouterr().err == (f"regions-import: error: --split-points {hexplan}: the "
                                       "plan's points are str but partition key 'uid' is "
                                       "INTEGER\n")


# -- retries ---------------------------------------------------------------

class Flaky(EmbeddedTarget):
    """Fails each row's first try with ``code``."""

    def __init__(self, path, code):
        super().__init__(path)
        self.code, self.tried, self.calls = code, set(), 0

    def write_rows(self, table, rows):
        self.calls += 1
        fresh = [(pk, a) for pk, a in rows if tuple(pk) not in self.tried]
        self.tried.update(tuple(pk) for pk, _ in rows)
        old = [r for r in rows if r not in fresh]
        done = iter(super().write_rows(table, old) if old else ())
        return [RowResult(False, self.code, "try again") if r in fresh else next(done)
                for r in rows]


@pytest.fixture
def no_wait(monkeypatch):
    monkeypatch.setattr(retry, "delay", lambda tries, code: 0)


def test_rows_the_service_calls_retryable_are_retried_until_written(tmp_path, no_wait):
    target = Flaky(str(tmp_path / "db"), "OTSServerBusy")
    target.create_table("orders", [("uid", "INTEGER"), ("oid", "STRING")])
    result = importer.import_file(orders_csv(tmp_path, 50), target,
                                  importer.ImportOptions("orders", workers=2))
    target.close()
    assert (result.rows_written, result.rejected) == (50, 0)
    assert target.calls >= 2 and len(rows_of(tmp_path)) == 50


def test_other_errors_are_not_retried_and_every_row_is_reported(tmp_path, no_wait):
    target = Flaky(str(tmp_path / "db"), "OTSParameterInvalid")
    target.create_table("orders", [("uid", "INTEGER"), ("oid", "STRING")])
    result = importer.import_file(orders_csv(tmp_path, 50), target,
                                  importer.ImportOptions("orders", workers=2, batch_rows=10))
    target.close()
    assert (result.rows_written, result.rejected, target.calls) == (0, 50, 5)
    rejects = rejects_of(result.rejects_path)
    assert sorted(r["line"] for r in rejects) == list(range(2, 52))
    assert {r["error"] for r in rejects} == {"OTSParameterInvalid: try again"}


def test_the_retried_codes_are_the_sdks(tmp_path):
    from tablestore.retry import RetryUtil, WriteRetryPolicy
    from regions.tablestore.errors import ERRORS
    codes = {code for _, code, _ in ERRORS.values()} | retry.ANY_API | retry.IDEMPOTENT
    policy = WriteRetryPolicy()
    for code in codes:
        for status, message in ((400, "x"), (403, retry.QUOTA_RETRY_MESSAGE), (503, "x")):
            e = ts.OTSServiceError(status, code, message)
            assert retry.retryable(code, message, status) == policy._can_retry(0, e,
                                                                               "BatchWriteRow")
            assert retry.retryable(code, message, status, idempotent=False) == \
                RetryUtil.should_retry_no_matter_which_api(e)


def test_an_interrupted_import_lists_every_row_it_did_not_write(tmp_path, monkeypatch):
    real = importer._batches

    def stop_after_two(rows, *a):
        for i, batch in enumerate(real(rows, *a)):
            if i == 2:
                raise KeyboardInterrupt
            yield batch

    monkeypatch.setattr(importer, "_batches", stop_after_two)
    target = EmbeddedTarget(str(tmp_path / "db"))
    target.create_table("orders", [("uid", "INTEGER"), ("oid", "STRING")])
    result = importer.import_file(orders_csv(tmp_path, 1000), target,
                                  importer.ImportOptions("orders", batch_rows=100,
                                                         shuffle_rows=50))
    target.close()
    assert result.interrupted and result.rows_written == 200
    rejected = {r["row"]["oid"] for r in rejects_of(result.rejects_path)}
    written = {oid for _, oid in rows_of(tmp_path)}
    assert len(rejected) == 800 and rejected | written == {f"o{i}" for i in range(1000)}


# -- pieces ----------------------------------------------------------------

def test_shuffle_yields_each_item_once_in_a_new_order_also_when_it_spills(tmp_path):
    for memory in (10_000, 100):  # in memory; dealt into piles, then piles of piles
        got = list(shuffled(range(3000), memory, random.Random(1), tmpdir=tmp_path))
        assert sorted(got) == list(range(3000)) and got != list(range(3000))
        assert sum(a < b for a, b in zip(got, got[1:])) < 1700  # no long sorted runs


def test_types_inferred_from_text():
    assert infer_type(["1", "-7", ""]) == "INTEGER"
    assert infer_type(["1", "2.5"]) == "DOUBLE"
    assert infer_type(["true", "FALSE"]) == "BOOLEAN"
    assert infer_type(["1", "x"]) == "STRING" and infer_type(["", ""]) == "STRING"
    with pytest.raises(ValueError, match="outside the INTEGER"):
        from_text(str(1 << 63), "INTEGER")
    with pytest.raises(ValueError, match="not a finite DOUBLE"):
        from_text("nan", "DOUBLE")


def test_without_tqdm_there_is_no_bar_and_the_tool_still_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)
    assert not Progress(10, "x", show=True).shown
    assert load(tmp_path, orders_csv(tmp_path, 10), "--progress") == 0
    assert "rows written: 10" in capsys.readouterr().out


def test_without_pyarrow_parquet_is_one_clear_error(tmp_path, monkeypatch, capsys):
    pq.write_table(pa.table({"uid": [1], "oid": ["a"]}), tmp_path / "in.parquet")
    monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)
    assert load(tmp_path, str(tmp_path / "in.parquet")) == 2
    assert capsys.readouterr().err == ("regions-import: error: Parquet needs pyarrow: "
                                       "pip install -e '.[transfer]'\n")


def test_progress_bar_shows_rows_when_asked(tmp_path, capsys):
    assert load(tmp_path, orders_csv(tmp_path, 300), "--progress") == 0
    err = capsys.readouterr().err
    assert "import orders" in err and "300/300" in err and "rows/s" in err


# -- through the official SDK against regions-server ----------------------

@pytest.fixture
def endpoint(tmp_path):
    srv = consoleserver.start(tmp_path)  # small regions: the load splits them
    yield ["--endpoint", srv.endpoint, "--instance", consoleserver.INSTANCE,
           "--access-key-id", consoleserver.KEY_ID, "--access-key-secret", consoleserver.SECRET]
    srv.stop()


def test_import_and_export_through_the_sdk(tmp_path, endpoint, capsys):
    splits = write(tmp_path / "splits.txt", "30\n60\n")
    src = orders_csv(tmp_path, 3000)
    assert import_main([src, *endpoint, "--table", "orders", "--create", "--primary-key", PK,
                        "--split-points", splits, "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "rows written: 3000" in out and "write 3000" in out
    regions_line = [line for line in out.splitlines() if line.startswith("spread of")][0]
    assert int(regions_line.split(" over ")[1].split()[0]) >= 3  # read from DescribeTable
    dump = str(tmp_path / "dump.jsonl")
    assert export_main([dump, *endpoint, "--table", "orders"]) == 0
    got = [json.loads(line) for line in open(dump)]
    assert len(got) == 3000
    assert got[0] == {"uid": 0, "oid": "o0", "price": 0.0, "item": "item 0", "paid": False}


# -- secondary indexes: exported like any table, never imported into ---------

def _orders_with_an_index(client):
    """orders (uid, oid) with defined columns and a global index by item."""
    meta = emb.TableMeta("orders", [("uid", "INTEGER"), ("oid", "STRING")],
                         defined_columns=[("price", "DOUBLE"), ("item", "STRING")])
    client.create_table(meta, emb.TableOptions(), emb.ReservedThroughput(emb.CapacityUnit(0, 0)),
                        secondary_indexes=[emb.SecondaryIndexMeta("by_item", ["item"], ["price"])])


def _index_rows(n):
    """The rows of orders_csv(n) as by_item holds them: item, then the base key."""
    return sorted(({"item": f"item {i}", "uid": i % 97, "oid": f"o{i}", "price": i / 4}
                   for i in range(n)), key=lambda r: (r["item"], r["uid"], r["oid"]))


def test_an_index_exports_like_a_table_and_refuses_an_import(tmp_path, capsys):
    with emb.OTSClient(str(tmp_path / "db")) as c:
        _orders_with_an_index(c)
    assert load(tmp_path, orders_csv(tmp_path, 300), "--columns", "price:DOUBLE",
                create=False) == 0
    out = tmp_path / "by_item.jsonl"
    assert export_main([str(out), "--data", str(tmp_path / "db"), "--table", "by_item",
                        "--page-rows", "40"]) == 0
    assert "rows exported: 300 in 8 GetRange pages" in capsys.readouterr().out
    assert [json.loads(line) for line in out.read_text().splitlines()] == _index_rows(300)
    # an import into the index is refused before its input is read: this file
    # lacks the key's columns, and the index, not the file, is named
    bad = write(tmp_path / "bad.csv", "nothing,here\n1,2\n")
    for args in ((), ("--create", "--primary-key", "item:STRING")):
        assert load(tmp_path, bad, *args, table="by_item", create=False) == 2
        assert capsys.readouterr().err == ("regions-import: error: table 'by_item' is an index "
                                           "of 'orders': indexes are written only by their "
                                           "base table\n")
    assert not (tmp_path / "bad.csv.rejects.jsonl").exists()
    with emb.OTSClient(str(tmp_path / "db")) as c:
        assert c.list_table() == ("orders",)      # no table 'by_item' was made either


def test_an_index_through_the_sdk_exports_and_refuses_an_import(tmp_path, capsys):
    srv = consoleserver.start(tmp_path)
    try:
        _orders_with_an_index(srv.service.client)
        endpoint = ["--endpoint", srv.endpoint, "--instance", consoleserver.INSTANCE,
                    "--access-key-id", consoleserver.KEY_ID,
                    "--access-key-secret", consoleserver.SECRET]
        assert import_main([orders_csv(tmp_path, 500), *endpoint, "--table", "orders",
                            "--columns", "price:DOUBLE"]) == 0
        assert srv.service.client.wait_for_indexes("orders")
        out = str(tmp_path / "by_item.csv")
        assert export_main([out, *endpoint, "--table", "by_item"]) == 0
        with open(out, encoding="utf-8") as f:
            lines = f.read().splitlines()
        assert lines[0] == "item,uid,oid,price" and len(lines) == 501
        assert lines[1:4] == [f"{r['item']},{r['uid']},{r['oid']},{r['price']}"
                              for r in _index_rows(500)[:3]]
        capsys.readouterr()
        assert import_main([out, *endpoint, "--table", "by_item"]) == 2
        assert capsys.readouterr().err == ("regions-import: error: table 'by_item' is an index "
                                           "of 'orders': indexes are written only by their "
                                           "base table\n")
    finally:
        srv.stop()
