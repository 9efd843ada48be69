"""In-memory instances: MemoryFileSystem beyond the shared contract (which
tests/test_fs.py runs on both file systems), and ``DB.open(None)``,
``RegionServer.open(None)``, ``OTSClient(":memory:")`` and
``regions-server --in-memory``: the same code paths, nothing on disk, gone
at close."""
import errno
import gc
import mmap
import os
import subprocess
import sys
import threading
import time
import tracemalloc

import pytest
import tablestore as ts

import lsm
import lsm.fs
import regions
import regions.tablestore as emb
from lsm.errors import ClosedError, StorageError
from lsm.faultfs import FaultInjectionFS
from lsm.memfs import MEMORY_PATH, MemoryAppendFile, MemoryFileSystem, MemoryReadFile

KiB = 1 << 10
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def mfs():
    fs = MemoryFileSystem()
    fs.makedirs("/d")
    return fs


def write(fs, path, data):
    with fs.open_append(path) as f:
        f.append(data)


def run_threads(target, n):
    """Run ``target(i)`` for i in range(n) on n threads at once; wait for all."""
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# -- MemoryFileSystem: what the shared contract tests do not cover ----------------

@pytest.mark.parametrize("call, code", [
    (lambda fs: fs.read_all("/d"), errno.EISDIR),
    (lambda fs: fs.open_append("/d"), errno.EISDIR),
    (lambda fs: fs.remove("/d"), errno.EISDIR),
    (lambda fs: fs.listdir("/d/f"), errno.ENOTDIR),
    (lambda fs: fs.open_append("/d/f/x"), errno.ENOTDIR),
    (lambda fs: fs.rmtree("/d/f"), errno.ENOTDIR),
    (lambda fs: fs.makedirs("/d/f"), errno.EEXIST),
    (lambda fs: fs.makedirs("/d/f/sub"), errno.ENOTDIR),
    (lambda fs: fs.rename("/d/f", "/d"), errno.EISDIR),
    (lambda fs: fs.rename("/d", "/d/sub"), errno.EINVAL),
    (lambda fs: fs.sync_dir("/d/f"), errno.ENOTDIR),
])
def test_directory_misuse_raises_the_posix_error_and_changes_nothing(mfs, call, code):
    write(mfs, "/d/f", b"x")
    with pytest.raises(StorageError) as ei:
        call(mfs)
    assert ei.value.errno == code and "/d" in str(ei.value)
    assert mfs.listdir("/d") == ["f"] and mfs.read_all("/d/f") == b"x"


def test_rename_moves_a_directory_with_its_files_and_replaces_only_an_empty_one(mfs):
    mfs.makedirs("/d/new/sub")
    write(mfs, "/d/new/sub/t", b"table")
    mfs.makedirs("/d/full")
    write(mfs, "/d/full/x", b"")
    with pytest.raises(StorageError) as ei:
        mfs.rename("/d/new", "/d/full")
    assert ei.value.errno == errno.ENOTEMPTY
    mfs.makedirs("/d/empty")
    mfs.rename("/d/new", "/d/empty")
    assert mfs.listdir("/d") == ["empty", "full"]
    assert mfs.read_all("/d/empty/sub/t") == b"table"


def test_an_open_append_file_follows_its_file_across_a_rename(mfs):
    f = mfs.open_append("/d/a")
    f.append(b"1")
    mfs.rename("/d/a", "/d/b")
    f.append(b"2")
    f.close()
    assert mfs.read_all("/d/b") == b"12" and not mfs.exists("/d/a")


def test_a_read_file_is_a_snapshot_of_the_bytes_at_open(mfs):
    write(mfs, "/d/t", b"0123")
    rf = mfs.open_read("/d/t")
    with mfs.open_append("/d/t", truncate=False) as f:
        f.append(b"45")
    mfs.remove("/d/t")
    assert (rf.size, rf.read(0, 4)) == (4, b"0123")


def test_truncate_shortens_or_extends_with_zeros(mfs):
    write(mfs, "/d/t", b"abcdef")
    mfs.truncate("/d/t", 2)
    assert mfs.read_all("/d/t") == b"ab"
    mfs.truncate("/d/t", 4)
    assert mfs.read_all("/d/t") == b"ab\0\0"
    with pytest.raises(StorageError):
        mfs.truncate("/d/t", -1)


def test_relative_paths_start_at_the_root_not_the_working_directory(mfs):
    write(mfs, "d/rel", b"r")
    assert mfs.read_all("/d/rel") == b"r" and mfs.exists("/d/../d/./rel")
    with pytest.raises(TypeError, match="path must be a str"):
        mfs.exists(b"/d")


def test_bytes_used_and_clear(mfs):
    write(mfs, "/d/a", b"x" * 100)
    mfs.makedirs("/d/e/f")
    write(mfs, "/d/e/f/b", b"y" * 23)
    assert mfs.bytes_used == 123
    lk = mfs.lock("/d/LOCK")
    mfs.clear()
    assert mfs.bytes_used == 0 and not mfs.exists("/d")
    mfs.makedirs("/d")
    mfs.lock("/d/LOCK").release()       # the old lock belongs to a forgotten file
    lk.release()


def test_standalone_files_for_format_tests():
    f = MemoryAppendFile(b"head")
    f.append(b"+tail")
    assert (f.size, f.getvalue(), f.closed) == (9, b"head+tail", False)
    f.sync()
    f.close()
    assert f.closed and f.getvalue() == b"head+tail"
    with pytest.raises(ClosedError):
        f.append(b"x")
    with pytest.raises(ClosedError):
        f.sync()
    r = MemoryReadFile(bytearray(b"abc"))
    assert (r.size, r.read(1, 2), r.closed) == (3, b"bc", False)
    r.close()
    assert r.closed


def test_many_threads_write_rename_list_and_read_at_once():
    fs = MemoryFileSystem()
    fs.makedirs("/t")
    errors = []

    def worker(n):
        try:
            d = "/t/w%d" % n
            fs.makedirs(d)
            for i in range(150):
                p = "%s/%d" % (d, i)
                with fs.open_append(p + ".tmp") as f:
                    for _ in range(4):
                        f.append(b"%d." % i)
                fs.rename(p + ".tmp", p)
                assert fs.open_read(p).read(0, 4) == (b"%d." % i * 4)[:4]
                assert fs.read_all(p) == b"%d." % i * 4
                if i % 3 == 0:
                    fs.remove(p)
                fs.listdir("/t")
            assert len(fs.listdir(d)) == 100
        except Exception as e:      # reported below
            errors.append(e)

    run_threads(worker, 6)
    assert errors == []
    assert fs.listdir("/t") == ["w%d" % n for n in range(6)]


def test_fault_injection_runs_over_memory_too(mfs):
    ffs = FaultInjectionFS(mfs)
    f = ffs.open_append("/d/log")
    f.append(b"durable")
    f.sync()
    f.append(b"+lost")
    ffs.sync_dir("/d")
    with ffs.open_append("/d/unsynced-dir-entry") as g:
        g.append(b"x")
    ffs.drop_unsynced()
    assert mfs.read_all("/d/log") == b"durable" and mfs.listdir("/d") == ["log"]


# -- nothing on disk --------------------------------------------------------------

@pytest.fixture
def no_disk(monkeypatch, tmp_path):
    """Fails the test on any use of the OS file system by the engine (an
    OSFileSystem made, a file opened, created, renamed or mapped) and checks
    that the working directory stays empty."""
    monkeypatch.chdir(tmp_path)

    def refuse(name):
        def call(*a, **kw):
            raise AssertionError(f"the OS file system was called: {name}{a}")
        return call
    monkeypatch.setattr(lsm.fs.OSFileSystem, "__init__", refuse("OSFileSystem"))
    for name in ("open", "mkdir", "makedirs", "replace", "rename", "remove", "unlink", "truncate"):
        monkeypatch.setattr(os, name, refuse("os." + name))
    monkeypatch.setattr(mmap, "mmap", refuse("mmap"))
    yield tmp_path
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_db_in_memory_runs_the_whole_engine_with_nothing_on_disk(no_disk, tiny):
    with lsm.DB.open(None, tiny(background=True)) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, b"v%d" % i + b"." * 40)
        for i in range(0, 3000, 2):
            db.delete(b"k%05d" % i)
        db.compact_range(None, None)
        db.check()
        assert db.stats()["flushes"] > 0 and db.stats()["compactions"] > 0
        assert db.get(b"k00001") == b"v1." + b"." * 39 and db.get(b"k00002") is None
        assert [k for k, _ in db.scan(b"k00010", b"k00016")] == [b"k00011", b"k00013", b"k00015"]
        assert repr(db) == "<lsm.DB %r>" % MEMORY_PATH


def test_db_in_memory_is_gone_at_close_and_its_memory_released(tiny):
    db = lsm.DB.open(None, tiny())
    db.put(b"warm", b"up")                         # first-use allocations before measuring
    db.close()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        db = lsm.DB.open(None, tiny())
        for i in range(1000):
            db.put(b"k%05d" % i, os.urandom(1000))   # ~1 MB, incompressible
        db.flush()
        fs = db.fs
        held = fs.bytes_used
        assert held > 1_000_000
        db.close()
        assert fs.bytes_used == 0
        del db
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - base < held // 4
    finally:
        tracemalloc.stop()
    with lsm.DB.open(None) as again:
        assert again.get(b"k00001") is None and list(again.scan()) == []


def test_db_in_memory_accepts_sync_and_each_open_is_its_own_store():
    a, b = lsm.DB.open(None, lsm.Options(sync=True)), lsm.DB.open(None)
    try:
        a.put(b"k", b"a", sync=True)
        b.put(b"k", b"b")
        assert (a.get(b"k"), b.get(b"k")) == (b"a", b"b")
    finally:
        a.close()
        b.close()


def test_db_reopens_from_a_memory_file_system_it_was_given(tiny):
    fs = MemoryFileSystem()
    with lsm.DB.open("/store", tiny(fs=fs)) as db:
        db.put(b"k", b"kept in the WAL")
    with lsm.DB.open("/store", tiny(fs=fs)) as db:       # recovery replays it
        assert db.get(b"k") == b"kept in the WAL"
    assert fs.exists("/store/CURRENT")


def test_bad_in_memory_arguments_name_what_is_wrong():
    with pytest.raises(ValueError, match="options.fs must be None"):
        lsm.DB.open(None, lsm.Options(fs=MemoryFileSystem()))
    with pytest.raises(TypeError, match="or None"):
        lsm.DB.open(3)
    with pytest.raises(ValueError, match="options.fs must be None"):
        regions.RegionServer.open(None, regions.ServerOptions(fs=MemoryFileSystem()))
    with pytest.raises(TypeError, match="or None"):
        regions.RegionServer.open(b"/x")


def test_region_server_in_memory_splits_under_concurrent_load(no_disk):
    opts = regions.ServerOptions(
        memtable_bytes=4 * KiB, background_workers=2, maintenance_interval=0.01,
        split_policy=regions.ConstantSizeSplitPolicy(16 * KiB, jitter=0.25),
        lsm_options=lsm.Options(block_size=512, compression=False))
    server = regions.RegionServer.open(None, opts)
    memory = server._memory
    try:
        server.create_table("t", split_keys=[b"w1"])
        acked, errors = [dict() for _ in range(3)], []

        def writer(n):
            try:
                for i in range(800):
                    k, v = b"w%d-%05d" % (n, i), b"%d" % i + b"x" * 60
                    server.put("t", k, v)
                    acked[n][k] = v
                    if i % 50 == 0:
                        assert server.get("t", k) == v
            except Exception as e:  # reported below
                errors.append(e)

        run_threads(writer, 3)
        assert errors == []
        # Maintenance splits every 0.01 s; on a loaded machine (CI beside
        # other suites) the writers can end before it has run: give it time.
        deadline = time.monotonic() + 20
        while len(server.regions("t")) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.regions("t")) >= 4, "no split happened"
        server.check()
        want = {}
        for a in acked:
            want.update(a)
        assert list(server.scan("t")) == sorted(want.items())
        assert server.path == MEMORY_PATH and memory.bytes_used > 0
    finally:
        server.close()
    assert memory.bytes_used == 0
    with regions.RegionServer.open(None) as fresh:
        assert fresh.list_tables() == []


# -- the Tablestore API ---------------------------------------------------------------

def _table(client, name="t"):
    client.create_table(emb.TableMeta(name, [("id", "INTEGER")]), emb.TableOptions(),
                        emb.ReservedThroughput(emb.CapacityUnit(0, 0)))


@pytest.mark.parametrize("path", [":memory:", None])
def test_ots_client_in_memory_is_fresh_and_leaves_no_files(no_disk, path):
    with emb.OTSClient(path) as client:
        _table(client)
        client.put_row("t", emb.Row([("id", 1)], [("name", "one")]))
        _, row, _ = client.get_row("t", [("id", 1)], max_version=1)
        assert row.attribute_columns[0][:2] == ("name", "one")
    with emb.OTSClient(path) as client:
        assert client.list_table() == ()


def test_regions_server_in_memory_serves_the_official_sdk(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-m", "regions.otsserver", "--in-memory", "--port", "0", "--no-console",
         "--access-key-id", "ak", "--access-key-secret", "sk", "--instance", "inst"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("export OTS_TEST_ENDPOINT="):
                endpoint = line.split("=", 1)[1].strip()
                break
        else:
            pytest.fail("regions-server did not start: %s%s" % ("".join(lines), proc.stderr.read()))
        assert "in memory" in lines[0]
        client = ts.OTSClient(endpoint, "ak", "sk", "inst", retry_policy=ts.NoRetryPolicy())
        client.create_table(ts.TableMeta("t", [("id", "INTEGER")]), ts.TableOptions(),
                            ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
        client.put_row("t", ts.Row([("id", 7)], [("v", "seven")]))
        _, row, _ = client.get_row("t", [("id", 7)], max_version=1)
        assert row.attribute_columns[0][:2] == ("v", "seven")
        assert client.list_table() == ("t",)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "store closed" in out
    assert os.listdir(tmp_path) == []


def test_regions_server_takes_either_data_or_in_memory(capsys):
    from regions.otsserver.cli import build_parser
    for argv in (["--data", "x", "--in-memory"], []):
        with pytest.raises(SystemExit) as ei:
            build_parser().parse_args(argv)
        assert ei.value.code == 2
    assert "--in-memory" in capsys.readouterr().err
