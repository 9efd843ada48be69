"""The file-system interface: OSFileSystem on the real OS and MemoryFileSystem
(the same contract tests run on both), FaultInjectionFS for tests."""
import errno
import os
import threading

import pytest

from lsm.errors import ClosedError, CorruptionError, LSMError, StorageError
from lsm.faultfs import FaultInjectionFS, SimulatedCrash
from lsm.fs import TEMP_SUFFIX, FileMissingError, OSFileSystem
from lsm.memfs import MemoryFileSystem


@pytest.fixture(params=["os", "memory"])
def fs(request, tmp_path):
    """The file system under a contract test: the OS's, or one in memory
    where ``tmp_path`` exists too (so the tests use the same paths)."""
    if request.param == "os":
        return OSFileSystem()
    mfs = MemoryFileSystem()
    mfs.makedirs(str(tmp_path))
    return mfs


@pytest.fixture
def ffs():
    return FaultInjectionFS(OSFileSystem())


def content(path):
    with open(path, "rb") as f:
        return f.read()


# -- the FileSystem contract: OSFileSystem and MemoryFileSystem ----------------

def test_append_hands_bytes_to_the_file_before_returning(fs, tmp_path):
    p = str(tmp_path / "log")
    f = fs.open_append(p)
    f.append(b"hello ")
    assert fs.read_all(p) == b"hello "      # no close, no sync: already in the file
    f.append(memoryview(b"world"))
    assert fs.read_all(p) == b"hello world" and f.size == 11
    f.sync()
    f.close()
    f.close()
    with pytest.raises(ClosedError):
        f.append(b"x")


def test_open_append_truncates_or_continues(fs, tmp_path):
    p = str(tmp_path / "f")
    with fs.open_append(p) as f:
        f.append(b"abc")
    with fs.open_append(p, truncate=False) as f:
        assert f.size == 3
        f.append(b"def")
        assert f.size == 6
    assert fs.read_all(p) == b"abcdef"
    with fs.open_append(p) as f:
        assert f.size == 0
    assert fs.read_all(p) == b""


def test_preallocate_changes_no_byte_a_reader_sees_after_close(fs, tmp_path):
    p = str(tmp_path / "wal")
    with fs.open_append(p, preallocate=4096) as f:
        f.append(b"a" * 100)
        f.append(b"b" * 5000)
        assert f.size == 5100
    assert fs.read_all(p) == b"a" * 100 + b"b" * 5000
    with fs.open_append(p, truncate=False, preallocate=4096) as f:
        f.append(b"c")
    assert fs.read_all(p) == b"a" * 100 + b"b" * 5000 + b"c"


def test_os_preallocate_keeps_zeros_ahead_of_the_end_and_close_trims_them(tmp_path):
    p = str(tmp_path / "wal")
    f = OSFileSystem().open_append(p, preallocate=4096)
    f.append(b"a" * 100)
    assert (f.size, os.path.getsize(p)) == (100, 4096)
    f.sync()
    f.append(b"b" * 5000)                 # crosses the zeros' end: one more step
    assert (f.size, os.path.getsize(p)) == (5100, 8192)
    assert content(p) == b"a" * 100 + b"b" * 5000 + bytes(8192 - 5100)
    f.append(b"c" * 9000)                 # more than a step at once
    assert (f.size, os.path.getsize(p)) == (14100, 16384)
    f.close()
    assert content(p) == b"a" * 100 + b"b" * 5000 + b"c" * 9000
    f.close()
    with pytest.raises(ClosedError):
        f.append(b"x")


def _mapped(path):
    with open("/proc/self/maps") as m:
        return any(line.rstrip().endswith(path) for line in m)


def test_os_preallocated_appends_go_through_a_mapping_until_the_first_sync(tmp_path):
    """Appends are copied into a shared mapping of the zeros (the bytes are
    in the file for any reader at once, as after write(2)); the first sync
    ends the mapping, and later appends are pwrites into the zeros."""
    p = str(tmp_path / "wal")
    f = OSFileSystem().open_append(p, preallocate=4096)
    f.append(b"")                         # nothing to map yet: changes nothing
    assert f.size == 0 and not _mapped(p)
    f.append(b"a" * 100)
    assert _mapped(p) and content(p) == b"a" * 100 + bytes(3996)
    f.append(b"b" * 4000)                 # past the zeros' end: mapped further on
    assert _mapped(p) and content(p) == b"a" * 100 + b"b" * 4000 + bytes(8192 - 4100)
    f.sync()
    assert not _mapped(p)
    f.append(b"c" * 10)
    assert not _mapped(p) and content(p) == b"a" * 100 + b"b" * 4000 + b"c" * 10 + bytes(8192 - 4110)
    f.close()
    assert content(p) == b"a" * 100 + b"b" * 4000 + b"c" * 10


def test_os_preallocation_starts_at_64_kib_and_doubles_up_to_its_step(tmp_path):
    """Many small WALs (a region server's) write few zeros each."""
    p = str(tmp_path / "wal")
    f = OSFileSystem().open_append(p, preallocate=256 << 10)
    ends = []
    for _ in range(6):
        f.append(b"x" * (40 << 10))
        ends.append(os.path.getsize(p) >> 10)
    assert ends == [64, 192, 192, 192, 448, 448]     # 64, + 128, + 256 (KiB)
    f.close()
    assert content(p) == b"x" * (240 << 10)


def test_os_preallocated_long_appends_past_the_zeros_are_written_once(tmp_path):
    """An append of 64 KiB or more that does not fit the mapped zeros (a
    large batch's record) is one pwrite at the end, with no zeros written
    ahead for it; shorter ones are mapped again, past it."""
    p = str(tmp_path / "wal")
    f = OSFileSystem().open_append(p, preallocate=1 << 20)
    f.append(b"a" * 100)
    assert os.path.getsize(p) == 64 << 10
    f.append(b"b" * (100 << 10))          # past the zeros: written there, none ahead
    assert (f.size, os.path.getsize(p)) == (100 + (100 << 10),) * 2
    f.append(b"c" * (50 << 10))           # shorter: zeros laid again from the end (a step), mapped
    assert _mapped(p) and os.path.getsize(p) == 100 + (100 << 10) + (128 << 10)
    f.append(b"d" * 10)
    assert os.path.getsize(p) == 100 + (100 << 10) + (128 << 10)
    f.close()
    assert content(p) == b"a" * 100 + b"b" * (100 << 10) + b"c" * (50 << 10) + b"d" * 10


def test_failed_append_is_a_storage_error_with_errno_and_path():
    f = OSFileSystem().open_append("/dev/full", truncate=False)
    with pytest.raises(StorageError) as ei:
        f.append(b"x" * 100)
    assert ei.value.errno == errno.ENOSPC and "/dev/full" in str(ei.value)
    f.close()


def test_missing_files_raise_file_missing_error(fs, tmp_path):
    p = str(tmp_path / "nope")
    for call in (lambda: fs.read_all(p), lambda: fs.remove(p), lambda: fs.file_size(p),
                 lambda: fs.open_read(p), lambda: fs.rename(p, p + "2"),
                 lambda: fs.open_append(str(tmp_path / "no-dir" / "f")), lambda: fs.rmtree(p)):
        with pytest.raises(FileMissingError) as ei:
            call()
        e = ei.value
        assert isinstance(e, StorageError) and isinstance(e, FileNotFoundError)
        assert e.errno == errno.ENOENT and str(tmp_path) in str(e)
    assert fs.remove_if_exists(p) is False
    fs.rmtree(p, missing_ok=True)


def test_directory_operations(fs, tmp_path):
    d = str(tmp_path / "a" / "b")
    fs.makedirs(d)
    fs.makedirs(d)                                   # exist_ok
    for name in ("b2", "a1", "c3"):
        with fs.open_append(os.path.join(d, name)) as f:
            f.append(name.encode())
    assert fs.listdir(d) == ["a1", "b2", "c3"]
    fs.rename(os.path.join(d, "a1"), os.path.join(d, "z9"))
    fs.sync_dir(d)
    assert fs.listdir(d) == ["b2", "c3", "z9"] and fs.read_all(os.path.join(d, "z9")) == b"a1"
    fs.truncate(os.path.join(d, "z9"), 1)
    assert fs.file_size(os.path.join(d, "z9")) == 1
    assert fs.remove_if_exists(os.path.join(d, "z9")) is True
    assert not fs.exists(os.path.join(d, "z9"))
    fs.rmtree(str(tmp_path / "a"))
    assert not fs.exists(str(tmp_path / "a"))


def test_write_atomic_replaces_the_file_and_leaves_no_temp(fs, tmp_path):
    p = str(tmp_path / "CURRENT")
    fs.write_atomic(p, b"MANIFEST-000001\n")
    fs.write_atomic(p, b"MANIFEST-000002\n")
    assert fs.read_all(p) == b"MANIFEST-000002\n"
    assert fs.listdir(str(tmp_path)) == ["CURRENT"]
    with pytest.raises(TypeError, match="must be bytes"):
        fs.write_atomic(p, "text")
    assert fs.read_all(p) == b"MANIFEST-000002\n"


@pytest.mark.parametrize("op", ["open_append", "append", "sync", "rename"])
def test_failed_write_atomic_keeps_the_old_file_and_removes_the_temp(ffs, tmp_path, op):
    p = str(tmp_path / "CURRENT")
    ffs.write_atomic(p, b"old\n")
    ffs.fail(op)
    with pytest.raises(StorageError):
        ffs.write_atomic(p, b"new\n")
    assert content(p) == b"old\n"
    assert os.listdir(tmp_path) == ["CURRENT"]


def test_lock_is_exclusive_until_released(fs, tmp_path):
    p = str(tmp_path / "LOCK")
    lk = fs.lock(p)
    assert lk.held
    with pytest.raises(StorageError, match="already held") as ei:
        fs.lock(p)
    assert p in str(ei.value)
    lk.release()
    lk.release()
    assert not lk.held
    with fs.lock(p) as again:
        assert again.held
    assert not again.held


def test_read_file_reads_exact_ranges(fs, tmp_path):
    p = str(tmp_path / "table")
    data = bytes(range(256)) * 64
    with fs.open_append(p) as f:
        f.append(data)
    rf = fs.open_read(p)
    assert rf.size == len(data)
    assert rf.read(0, 4096) == data[:4096]
    assert rf.read(len(data) - 10, 10) == data[-10:]
    assert rf.read(100, 0) == b""
    assert isinstance(rf.read(5, 5), bytes)
    with pytest.raises(CorruptionError, match="short read"):
        rf.read(len(data) - 10, 11)
    with pytest.raises(ValueError, match="offset"):
        rf.read(-1, 5)
    rf.close()
    rf.close()
    with pytest.raises(ClosedError):
        rf.read(0, 1)


def test_read_file_of_an_empty_file(fs, tmp_path):
    p = str(tmp_path / "empty")
    fs.open_append(p).close()
    with fs.open_read(p) as rf:
        assert rf.size == 0
        assert rf.read(0, 0) == b""
        with pytest.raises(CorruptionError, match="short read"):
            rf.read(0, 1)


def test_read_file_is_shared_by_threads(fs, tmp_path):
    p = str(tmp_path / "table")
    data = os.urandom(1 << 16)
    with fs.open_append(p) as f:
        f.append(data)
    rf = fs.open_read(p)
    errors = []

    def reader(seed):
        for i in range(2000):
            off = (seed * 7919 + i * 4093) % (len(data) - 4096)
            if rf.read(off, 4096) != data[off:off + 4096]:
                errors.append(off)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rf.close()
    assert errors == []


# -- FaultInjectionFS ----------------------------------------------------------

def test_drop_unsynced_truncates_to_the_last_sync(ffs, tmp_path):
    p = str(tmp_path / "log")
    f = ffs.open_append(p)
    f.append(b"durable")
    f.sync()
    f.append(b"+lost")
    ffs.sync_dir(str(tmp_path))
    assert content(p) == b"durable+lost"
    ffs.drop_unsynced()
    assert content(p) == b"durable"
    with pytest.raises(ClosedError):            # power loss closed the handle
        f.append(b"x")


def test_drop_unsynced_deletes_files_whose_directory_was_not_synced(ffs, tmp_path):
    synced_dir, unsynced = str(tmp_path / "a"), str(tmp_path / "b")
    os.makedirs(synced_dir)
    os.makedirs(unsynced)
    for d in (synced_dir, unsynced):
        with ffs.open_append(os.path.join(d, "f")) as f:
            f.append(b"data")
            f.sync()
    ffs.sync_dir(synced_dir)
    ffs.drop_unsynced()
    assert content(os.path.join(synced_dir, "f")) == b"data"
    assert not os.path.exists(os.path.join(unsynced, "f"))


def test_drop_unsynced_without_entries_keeps_never_synced_files_empty(ffs, tmp_path):
    p = str(tmp_path / "new")
    with ffs.open_append(p) as f:
        f.append(b"never synced")
    ffs.drop_unsynced(entries=False)
    assert content(p) == b""


def test_drop_unsynced_undoes_a_rename_whose_directory_was_not_synced(ffs, tmp_path):
    d = str(tmp_path)
    cur, tmp = os.path.join(d, "CURRENT"), os.path.join(d, "CURRENT.new")
    ffs.write_atomic(cur, b"old\n")
    with ffs.open_append(tmp) as f:
        f.append(b"new\n")
        f.sync()
    ffs.rename(tmp, cur)
    assert content(cur) == b"new\n"
    ffs.drop_unsynced()
    assert content(cur) == b"old\n"
    assert sorted(os.listdir(d)) == ["CURRENT"]      # the unsynced create is undone too


def test_write_atomic_survives_power_loss(ffs, tmp_path):
    p = str(tmp_path / "CURRENT")
    ffs.write_atomic(p, b"one\n")
    ffs.write_atomic(p, b"two\n")
    ffs.drop_unsynced()
    assert content(p) == b"two\n"


def test_files_not_written_through_the_wrapper_count_as_durable(ffs, tmp_path):
    p = str(tmp_path / "old")
    with open(p, "wb") as f:
        f.write(b"from before")
    with ffs.open_append(p, truncate=False) as f:
        f.append(b" and after")
    ffs.drop_unsynced()
    assert content(p) == b"from before"


def test_ops_are_recorded_in_order(ffs, tmp_path):
    d = str(tmp_path)
    log, cur = os.path.join(d, "000003.log"), os.path.join(d, "CURRENT")
    f = ffs.open_append(log)
    f.append(b"abc")
    f.sync()
    f.close()
    ffs.write_atomic(cur, b"M\n")
    ffs.remove(log)
    assert ffs.ops == [
        ("open_append", log), ("append", log, 3), ("sync", log),
        ("write_atomic", cur), ("open_append", cur + TEMP_SUFFIX),
        ("append", cur + TEMP_SUFFIX, 2), ("sync", cur + TEMP_SUFFIX),
        ("rename", cur + TEMP_SUFFIX, cur), ("sync_dir", d), ("remove", log),
    ]


def test_fail_raises_eio_once_then_works(ffs, tmp_path):
    p = str(tmp_path / "log")
    f = ffs.open_append(p)
    ffs.fail("sync")
    f.append(b"a")
    with pytest.raises(StorageError) as ei:
        f.sync()
    assert ei.value.errno == errno.EIO and p in str(ei.value)
    f.sync()
    assert [op for op in ffs.ops if op[0] == "sync"] == [("sync", p)]


def test_fail_after_times_and_path_filter(ffs, tmp_path):
    a, b = str(tmp_path / "a.log"), str(tmp_path / "b.sst")
    fa, fb = ffs.open_append(a), ffs.open_append(b)
    ffs.fail("append", path_contains=".sst", after=2, times=2)
    for _ in range(5):
        fa.append(b"x")                  # never matches
    fb.append(b"1")
    fb.append(b"2")
    for _ in range(2):
        with pytest.raises(StorageError):
            fb.append(b"3")
    fb.append(b"4")
    assert content(a) == b"xxxxx" and content(b) == b"124"


def test_fail_forever_and_custom_exception(ffs, tmp_path):
    p = str(tmp_path / "f")
    ffs.fail("open_append", times=None, exc=OSError(errno.ENOSPC, "full"))
    for _ in range(3):
        with pytest.raises(OSError) as ei:
            ffs.open_append(p)
        assert ei.value.errno == errno.ENOSPC
    ffs.clear_faults()
    ffs.open_append(p).close()


def test_fail_read_on_read_file_and_read_all(ffs, tmp_path):
    p = str(tmp_path / "t")
    with ffs.open_append(p) as f:
        f.append(b"0123456789")
    rf = ffs.open_read(p)
    ffs.fail("read", times=2)
    with pytest.raises(StorageError):
        rf.read(0, 4)
    with pytest.raises(StorageError):
        ffs.read_all(p)
    assert rf.read(2, 3) == b"234" and ffs.read_all(p) == b"0123456789"
    rf.close()


def test_partial_append_is_a_torn_write(ffs, tmp_path):
    p = str(tmp_path / "log")
    f = ffs.open_append(p)
    f.append(b"whole|")
    ffs.fail("append", partial=True)
    with pytest.raises(StorageError):
        f.append(b"0123456789")
    ffs.fail("append", partial=3)
    with pytest.raises(StorageError):
        f.append(b"abcdef")
    assert content(p) == b"whole|01234abc"
    assert ffs.ops[-2:] == [("append", p, 5), ("append", p, 3)]
    assert f.size == 14


def test_fault_arguments_are_checked(ffs):
    with pytest.raises(ValueError, match="unknown op"):
        ffs.fail("bogus")
    with pytest.raises(ValueError, match="partial"):
        ffs.fail("sync", partial=True)
    with pytest.raises(ValueError, match="times"):
        ffs.fail("sync", times=0)
    with pytest.raises(ValueError, match="after"):
        ffs.fail("sync", after=-1)
    with pytest.raises(TypeError):
        FaultInjectionFS("not a fs")


def test_crash_at_stops_every_later_operation(ffs, tmp_path):
    p, cur = str(tmp_path / "log"), str(tmp_path / "CURRENT")
    ffs.write_atomic(cur, b"old\n")
    lk = ffs.lock(str(tmp_path / "LOCK"))
    f = ffs.open_append(p)
    f.append(b"synced")
    f.sync()
    ffs.sync_dir(str(tmp_path))
    ffs.crash_at("rename", "CURRENT")
    with pytest.raises(SimulatedCrash) as ei:
        ffs.write_atomic(cur, b"new\n")
    assert not isinstance(ei.value, (LSMError, Exception))
    with pytest.raises(SimulatedCrash):
        f.append(b"after the crash")
    with pytest.raises(SimulatedCrash):
        ffs.exists(p)
    f.close()                                 # closing still works
    ffs.drop_unsynced()                       # power loss; the FS works again
    assert content(cur) == b"old\n" and content(p) == b"synced"
    assert not lk.held
    assert sorted(os.listdir(tmp_path)) == ["CURRENT", "LOCK", "log"]
    ffs.lock(str(tmp_path / "LOCK")).release()


def test_close_all_closes_handles_and_releases_locks(ffs, tmp_path):
    p = str(tmp_path / "t")
    with ffs.open_append(p) as f:
        f.append(b"abc")
    w, r = ffs.open_append(str(tmp_path / "w")), ffs.open_read(p)
    lk = ffs.lock(str(tmp_path / "LOCK"))
    ffs.close_all()
    assert not lk.held
    with pytest.raises(ClosedError):
        w.append(b"x")
    with pytest.raises(ClosedError):
        r.read(0, 1)


def test_renamed_directory_carries_its_files_state(ffs, tmp_path):
    tmp, final = str(tmp_path / "db.creating"), str(tmp_path / "db")
    ffs.makedirs(tmp)
    f = ffs.open_append(os.path.join(tmp, "MANIFEST"))
    f.append(b"edit")
    f.sync()
    ffs.sync_dir(tmp)
    f.append(b"+unsynced")
    f.close()
    ffs.rename(tmp, final)
    ffs.drop_unsynced()                       # parent never synced: the rename is undone
    assert os.listdir(tmp_path) == ["db.creating"]
    assert content(os.path.join(tmp, "MANIFEST")) == b"edit"

    ffs.rename(tmp, final)
    ffs.sync_dir(str(tmp_path))
    with ffs.open_append(os.path.join(final, "MANIFEST"), truncate=False) as f:
        f.append(b"+more")
    ffs.drop_unsynced()
    assert content(os.path.join(final, "MANIFEST")) == b"edit"


def test_replacing_an_empty_directory_by_rename(ffs, tmp_path):
    src, dst = str(tmp_path / "new"), str(tmp_path / "old")
    os.makedirs(src)
    os.makedirs(dst)
    ffs.rename(src, dst)
    assert os.listdir(tmp_path) == ["old"]
