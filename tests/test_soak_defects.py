"""Defects the soak loops (regions.soak) found, each pinned by a focused test.

docs/reliability.md "Defects found and fixed" describes each one.
"""
import gc
import os

import lsm
import regions
from lsm.faultfs import FaultInjectionFS
from lsm.fs import OSFileSystem


def _tables(path):
    return sorted(n for n in os.listdir(path) if n.endswith(".sst"))


def test_a_flushed_table_survives_power_loss_once_the_manifest_names_it(tmp_path):
    """powerloss, seed 1: a flush synced its table and the manifest edit but
    not the directory, so a power cut kept a manifest naming a vanished table
    and the store no longer opened (FileMissingError)."""
    path = str(tmp_path / "db")
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(path, lsm.Options(fs=fs, sync=True, background=False, memtable_bytes=1024))
    db.put(b"first", b"x")          # the store's first manifest: CURRENT's rename synced the directory
    for i in range(200):
        db.put(b"k%04d" % i, b"v" * 40)
    assert _tables(path), "the writes should have flushed a table"
    fs.drop_unsynced()              # power cut: the process never closes the store
    with lsm.DB.open(path) as db:
        assert db.get(b"first") == b"x"
        assert [k for k, _ in db.scan()] == [b"first"] + [b"k%04d" % i for i in range(200)]


def _fds_under(path):
    root = "/proc/self/fd"
    out = []
    for fd in os.listdir(root):
        try:
            target = os.readlink(os.path.join(root, fd))
        except OSError:
            continue
        if target.startswith(path):
            out.append(target)
    return out


def test_closing_a_store_releases_every_table_file_without_the_garbage_collector(tmp_path):
    """concurrency: after RegionServer.close() the process still held ~180
    table files (most of them deleted by compactions) until a cyclic garbage
    collection: a table referred to itself through its point reader's
    block-fill callback, so dropping it freed nothing."""
    path = str(tmp_path / "db")
    gc.disable()
    try:
        db = lsm.DB.open(path, lsm.Options(memtable_bytes=2048, block_size=256, compression=False))
        for i in range(3000):
            db.put(b"k%05d" % (i % 700), b"v" * 50)
            if i % 300 == 0:
                assert len(list(db.scan(b"k", b"l"))) > 0 and db.get(b"k00000") is not None
        assert db.stats()["compactions"] > 0       # some tables were deleted while open
        db.close()
        assert _fds_under(path) == []
    finally:
        gc.enable()


class _CompactingOnExists(OSFileSystem):
    """``exists`` of a table file first runs ``hook`` once: a compaction that
    lands between the checker's listing of a region's tables and its look."""

    hook = None

    def exists(self, path):
        hook, self.hook = self.hook, None
        if hook is not None and path.endswith(".sst"):
            hook()
        return super().exists(path)


def test_server_check_does_not_report_a_table_a_compaction_just_replaced(tmp_path):
    """killloop (the full suite's run, seed 1): RegionServer.check() on a
    server compacting in the background reported "table file ... is
    missing" for a table that a compaction had replaced and deleted between
    the checker's listing of the region's tables and its look at the file."""
    fs = _CompactingOnExists()
    opts = regions.ServerOptions(memtable_bytes=1024, background_workers=0, fs=fs,
                                 split_policy=regions.DisabledSplitPolicy(),
                                 lsm_options=lsm.Options(block_size=256, compression=False,
                                                         background=False))
    with regions.RegionServer.open(str(tmp_path / "srv"), opts) as server:
        server.create_table("t")
        for i in range(400):
            server.put("t", b"k%04d" % (i % 150), b"v" * 40)
        db = server._table("t").layout[1][0].db
        before = {p for _lv, p, _lo, _hi in db.live_tables()}
        fs.hook = db.compact_range
        server.check()
        assert fs.hook is None                                  # the compaction ran inside the check
        assert before - {p for _lv, p, _lo, _hi in db.live_tables()}   # and replaced tables


def test_deleted_rows_stay_deleted_through_splits_and_compactions(tmp_path):
    """killloop, seed 2001 (5,000 cycles): one deleted row came back.  A
    change of this session dropped a row's DELETED head in a compaction with
    nothing deeper below it; with split daughters reading their parent's
    tables through views, the rows it masked came back (found again in a
    minute by this model: 400 partitions, tiny split thresholds, forced
    compactions), and the change was reverted.  The model keeps any future
    version of it honest: every 500 random puts, updates and deletes, the
    table equals the model."""
    import random

    import regions.tablestore as ts
    from regions.soak import workload
    rng = random.Random(3)
    model = {}
    with ts.OTSClient(str(tmp_path / "s"), server_options=workload.server_options()) as c:
        c.create_table(ts.TableMeta("t", [("p", "INTEGER"), ("r", "INTEGER")]), ts.TableOptions(),
                       ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
        for n in range(1, 12_001):
            k = (rng.randrange(400), rng.randrange(5))
            pk, x = [("p", k[0]), ("r", k[1])], rng.random()
            if x < 0.35:
                c.put_row("t", ts.Row(pk, [("v", "v%d" % n), ("pad", "x" * rng.randrange(200))]))
                model[k] = "v%d" % n
            elif x < 0.6:
                c.update_row("t", ts.Row(pk, {"put": [("v", "u%d" % n)]}), ts.Condition("IGNORE"))
                model[k] = "u%d" % n
            elif x < 0.85:
                c.delete_row("t", ts.Row(pk), ts.Condition("IGNORE"))
                model.pop(k, None)
            elif x < 0.86:
                c._server.compact("t")
            if n % 500 == 0:
                got, start = {}, [("p", ts.INF_MIN), ("r", ts.INF_MIN)]
                while start is not None:
                    _, start, rows, _ = c.get_range("t", "FORWARD", start,
                                                    [("p", ts.INF_MAX), ("r", ts.INF_MAX)])
                    for row in rows:
                        got[tuple(v for _, v in row.primary_key)] = \
                            {a: b for a, b, _ in row.attribute_columns}["v"]
                assert got == model, f"after op {n}: " + str(sorted(
                    (key, model.get(key), got.get(key)) for key in set(got) | set(model)
                    if got.get(key) != model.get(key))[:5])
        assert len(c._server.regions("t")) > 4          # it did split as it went


def test_a_manifest_record_that_is_json_but_not_an_object_is_corruption():
    """fuzz, seed 2000 (513,676 inputs): a mutated MANIFEST record that still
    parsed as JSON (a number, a string, a list) raised AttributeError."""
    import pytest

    from lsm.errors import CorruptionError
    from lsm.version import VersionEdit
    for record in (b"7", b'"x"', b"[1, 2]", b'{"add": [[0, 5]]}', b'{"add": [[0, {"n": 1}]]}'):
        with pytest.raises(CorruptionError, match="manifest: bad version edit"):
            VersionEdit.decode(record)


def test_a_batch_naming_a_table_in_bytes_that_are_not_utf8_is_a_parameter_error():
    """fuzz, seed 2000: a flipped BatchGetRow body whose table name was no
    longer UTF-8 got a 500 (the SDK's pure-Python protobuf hands such a
    string field over as bytes, and echoing it failed); BatchWriteRow did the
    same.  Now both are GetRow's answer: OTSParameterInvalid, nothing read
    or written."""
    import pytest

    import regions.tablestore as ts
    from regions.otsserver.errors import WireError
    from regions.otsserver.protocol import TablestoreService
    from regions.soak.fuzzkit import seed_rows, snapshot, table_meta
    from regions.soak.fuzzwire import _sdk_bodies
    with ts.OTSClient(":memory:") as c:
        c.create_table(*table_meta(ts, "t"))
        seed_rows(c, ts, "t")
        before = snapshot(c, ts, "t")
        service, bodies = TablestoreService(c), _sdk_bodies()
        for api in ("GetRow", "BatchGetRow", "BatchWriteRow"):
            body = bodies[api].replace(b"\x0a\x01t", b"\x0a\x01\xf4", 1)
            assert body != bodies[api]
            with pytest.raises(WireError) as e:
                service.handle(api, body)
            assert (e.value.code, e.value.message) == ("OTSParameterInvalid", "Invalid table name: '\ufffd'.")
        assert snapshot(c, ts, "t") == before
