"""The degraded state (lsm/health.py): a store whose disk filled up, whose
descriptors ran out or whose write failed serves reads, refuses writes fast
naming the cause, and resumes by itself once the resource is back, losing
and doubling nothing; corruption stops it for good."""
import errno
import logging
import os
import time

import pytest

import lsm
from lsm.errors import CorruptionError, ReadOnlyError, StorageError
from lsm.faultfs import FaultInjectionFS
from lsm.fs import OSFileSystem
from lsm.health import DEGRADED, OK, STOPPED, Health, is_retryable


def _opts(fs, **kw):
    kw.setdefault("memtable_bytes", 4096)
    kw.setdefault("wal_preallocate_bytes", 0)
    return lsm.Options(fs=fs, compression=False, **kw)


def _enospc(what="append"):
    return StorageError(errno.ENOSPC, f"{what} failed: No space left on device", "x")


def _until(cond, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def _put_all(db, keys):
    """Put each key (its value: the key twice); the keys acknowledged, refused, failed."""
    acked, refused, failed = [], [], []
    for k in keys:
        try:
            db.put(k, k + k)
            acked.append(k)
        except ReadOnlyError as e:
            refused.append((k, e))
        except StorageError:
            failed.append(k)
    return acked, refused, failed


def _accepts(db):
    try:
        db.put(b"probe", b"p")
        return True
    except ReadOnlyError:
        return False


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EMFILE, errno.ENFILE, errno.EAGAIN])
def test_resource_errors_and_a_writes_eio_are_retryable_corruption_and_a_reads_eio_are_not(code):
    assert is_retryable(StorageError(code, "open for append failed: x", "p"))
    assert is_retryable(StorageError(errno.EIO, "fsync failed: Input/output error", "p"))
    assert is_retryable(StorageError(errno.EIO, "zero-fill failed: Input/output error", "p"))
    assert not is_retryable(StorageError(errno.EIO, "read failed: Input/output error", "p"))
    assert not is_retryable(StorageError(errno.EACCES, "open for append failed: x", "p"))
    assert not is_retryable(CorruptionError("block checksum mismatch"))
    assert not is_retryable(ValueError("a bug"))


def test_retries_back_off_doubling_to_the_maximum_and_reset_when_resumed():
    now = [100.0]
    h = Health("db", 0.05, 0.4, clock=lambda: now[0])
    h.failed(_enospc(), "flush")
    assert h.state == DEGRADED and h.due() == pytest.approx(0.05)
    waits = []
    for _ in range(5):
        now[0] = h.next_try
        assert h.due() == 0
        h.retry_failed(_enospc())
        waits.append(round(h.next_try - now[0], 3))
    assert waits == [0.1, 0.2, 0.4, 0.4, 0.4] and h.attempts == 5
    h.resumed()
    assert h.state == OK and h.due() is None
    h.failed(_enospc(), "flush")
    assert h.due() == pytest.approx(0.05)
    h.failed(CorruptionError("bad"), "compaction")      # fatal wins, and stays
    h.failed(_enospc(), "flush")
    assert h.state == STOPPED and h.due() is None and isinstance(h.cause, CorruptionError)


def test_a_full_disk_refuses_writes_fast_with_the_cause_serves_reads_and_resumes_by_itself(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="lsm")
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(str(tmp_path), _opts(fs))
    before, _, _ = _put_all(db, [b"a%03d" % i for i in range(100)])
    fs.capacity = fs.used() + 300            # the disk fills up
    acked, refused, failed = _put_all(db, [b"b%03d" % i for i in range(300)])
    assert failed and refused and len(acked) < 300
    e = refused[-1][1]
    assert e.retryable and e.reason == "No space left on device"
    assert "No space left on device" in str(e)
    assert db.health()["state"] == "degraded"
    assert all(db.get(k) == k + k for k in before + acked)       # reads go on
    fs.capacity = None                        # space is back
    _until(lambda: _accepts(db), 5)
    assert db.health()["state"] == "ok"
    again, refused2, _ = _put_all(db, [k for k, _ in refused])
    assert not refused2
    want = {k: k + k for k in before + acked + again}
    want[b"probe"] = b"p"
    got = dict(db.scan())
    assert {k: got.get(k) for k in want} == want
    assert set(got) - set(want) <= set(failed)      # a failed write may or may not have landed
    db.check()
    db.close()
    with lsm.DB.open(str(tmp_path), _opts(None)) as db:
        assert {k: v for k, v in db.scan() if k in want} == want
        db.check()
    # once per change of state, not once per refused write
    lines = [r.getMessage() for r in caplog.records if r.name == "lsm"]
    assert sum("writes refused" in m for m in lines) == 1, lines
    assert sum("resumed after" in m for m in lines) == 1, lines


@pytest.mark.parametrize("op, path", [("open_append", ".sst"), ("append", ".sst"), ("sync", ".sst"),
                                      ("append", "MANIFEST"), ("sync", "MANIFEST"),
                                      ("open_append", ".log"), ("write_atomic", "CURRENT")])
def test_a_flush_that_fails_for_a_while_resumes_and_keeps_every_write_once(tmp_path, op, path):
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(str(tmp_path), _opts(fs, memtable_bytes=1 << 20))
    for i in range(200):
        db.put(b"k%04d" % i, b"v%d" % i)
    db.delete(b"k0007")
    if path == "CURRENT":               # written when a failed edit's manifest is replaced
        fs.fail("append", path_contains="MANIFEST", exc=_enospc())
    fs.fail(op, path_contains=path, times=None, exc=_enospc(op))
    with pytest.raises(StorageError):
        db.flush()
    with pytest.raises(ReadOnlyError) as e:
        db.put(b"x", b"y")
    assert e.value.retryable and db.get(b"k0003") == b"v3"
    fs.clear_faults()
    _until(lambda: _accepts(db), 5)
    db.flush()
    want = {b"k%04d" % i: b"v%d" % i for i in range(200) if i != 7}
    want[b"probe"] = b"p"
    assert dict(db.scan()) == want
    db.check()
    db.close()
    assert len([n for n in os.listdir(tmp_path) if n.startswith("MANIFEST")]) == 1
    with lsm.DB.open(str(tmp_path), _opts(None)) as db:
        assert dict(db.scan()) == want
        db.check()


def test_a_failed_wal_fsync_resumes_by_writing_the_memtable_to_a_table(tmp_path):
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(str(tmp_path), _opts(fs, sync=True, memtable_bytes=1 << 20))
    db.put(b"a", b"1")
    fs.fail("sync", path_contains=".log", exc=StorageError(errno.EIO, "fsync failed: Input/output error", "x"))
    with pytest.raises(StorageError):
        db.put(b"b", b"2")
    # b's record is in the memtable (readers see it) but not known durable:
    # the resume writes it to a table; the failed WAL is never synced again
    _until(lambda: _accepts(db), 5)
    assert db.stats()["files_per_level"][0] == 1
    db.put(b"c", b"3")
    db.close()
    with lsm.DB.open(str(tmp_path), _opts(None)) as db:
        assert (db.get(b"a"), db.get(b"b"), db.get(b"c")) == (b"1", b"2", b"3")


def test_resume_retries_at_once_and_raises_while_the_cause_lasts(tmp_path):
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(str(tmp_path), _opts(fs, background=False, resume_retry_seconds=600))
    db.put(b"a", b"1")
    fs.fail("append", path_contains=".log", times=None, exc=_enospc())
    with pytest.raises(StorageError):
        db.put(b"b", b"2")
    fs.fail("open_append", path_contains=".log", times=None, exc=_enospc("open for append"))
    with pytest.raises(ReadOnlyError) as e:
        db.resume()
    assert e.value.retryable and db.health()["retries"] == 1
    with pytest.raises(ReadOnlyError):
        db.put(b"c", b"3")              # no automatic retry for 600 s
    fs.clear_faults()
    db.resume()
    db.resume()                         # nothing to do: returns
    db.put(b"c", b"3")
    assert (db.get(b"a"), db.get(b"b"), db.get(b"c")) == (b"1", None, b"3")
    db.check()
    db.close()


def test_without_a_background_thread_the_next_write_after_the_wait_resumes(tmp_path):
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(str(tmp_path), _opts(fs, background=False, resume_retry_seconds=0.01))
    fs.fail("append", path_contains=".log", exc=_enospc())
    with pytest.raises(StorageError):
        db.put(b"a", b"1")
    time.sleep(0.02)
    db.put(b"b", b"2")
    assert db.health()["state"] == "ok" and db.get(b"a") is None
    db.close()


def test_corruption_found_by_a_compaction_stops_the_store_and_resume_says_so(tmp_path, caplog):
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(str(tmp_path), _opts(fs, background=False))
    for n in range(3):
        db.put(b"k%d" % n, b"v")
        db.flush()
    fs.fail("read", path_contains=".sst", times=None, exc=CorruptionError("block checksum mismatch"))
    with pytest.raises(CorruptionError):
        db.compact_range()
    for _ in range(3):
        with pytest.raises(ReadOnlyError) as e:
            db.put(b"x", b"y")
        assert not e.value.retryable and "corrupt" in str(e.value)
    with pytest.raises(ReadOnlyError, match="corrupt"):
        db.resume()
    assert db.health()["state"] == "stopped"
    fs.clear_faults()
    assert db.get(b"k1") == b"v"
    db.close()


def test_open_writes_no_table_for_a_wal_smaller_than_a_memtable(tmp_path):
    path = str(tmp_path)
    db = lsm.DB.open(path, _opts(None, memtable_bytes=1 << 20))
    for i in range(500):
        db.put(b"k%04d" % i, b"v" * 50)
    db._log.file.close()                # a crash: nothing flushed, the WAL left as it is
    db._lock_file.release()
    fs = FaultInjectionFS(OSFileSystem())
    fs.fail("open_append", path_contains=".sst", times=None, exc=_enospc("open for append"))
    with lsm.DB.open(path, _opts(fs, memtable_bytes=1 << 20)) as db:
        assert db.get(b"k0499") == b"v" * 50 and db.stats()["files_per_level"][0] == 0
    with lsm.DB.open(path, _opts(None, memtable_bytes=1 << 20)) as db:    # and again
        assert len(list(db.scan())) == 500
        db.check()


def test_open_on_a_full_disk_says_how_many_bytes_it_needs(tmp_path):
    path = str(tmp_path)
    with lsm.DB.open(path, _opts(None)) as db:
        for i in range(500):
            db.put(b"k%04d" % i, b"v" * 50)
    fs = FaultInjectionFS(OSFileSystem())
    fs.capacity = 0
    with pytest.raises(StorageError, match=r"opening the store needs about \d+ bytes free") as e:
        lsm.DB.open(path, _opts(fs))
    need = int(str(e.value).split("about ")[1].split()[0])
    assert e.value.errno == errno.ENOSPC and 4096 <= need <= 64 << 10
    fs.capacity = need
    with lsm.DB.open(path, _opts(fs)) as db:
        assert len(list(db.scan())) == 500
