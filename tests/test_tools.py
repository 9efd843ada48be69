"""``python -m lsm.tools``: dump and verify, run as a user would (subprocesses)."""
import os
import re
import subprocess
import sys

import pytest

import lsm
from lsm import filenames

ENTRY = re.compile(r"^seq=(\d+) (PUT|DEL) (b'[^']*') -> (b'[^']*')$")


def tool(*args):
    r = subprocess.run([sys.executable, "-m", "lsm.tools", *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def files_of(path, kind):
    return sorted(os.path.join(path, n) for n in os.listdir(path)
                  if (filenames.parse(n) or (None,))[0] == kind)


@pytest.fixture
def store(dbpath):
    """A closed store: 30 keys (one deleted) flushed to a table, then a
    put and a batch left in the WAL.  Returns (path, table_ops, log_ops)."""
    opts = lsm.Options(background=False, block_size=256, compression=False)
    table_ops = [("PUT", b"key%02d" % i, b"value-%02d" % i) for i in range(30)]
    log_ops = [("PUT", b"late", b"x"), ("PUT", b"bk", b"bv"), ("DEL", b"key04", b"")]
    with lsm.DB.open(dbpath, opts) as db:
        for _, k, v in table_ops:
            db.put(k, v)
        db.flush()
        db.put(b"late", b"x")
        db.write(lsm.WriteBatch().put(b"bk", b"bv").delete(b"key04"))
    return dbpath, table_ops, log_ops


def test_dump_of_a_wal_prints_every_entry_with_its_sequence(store):
    path, table_ops, log_ops = store
    [log] = files_of(path, "log")
    rc, out, err = tool("dump", log)
    assert rc == 0, err
    lines = out.splitlines()
    parsed = [ENTRY.match(line) for line in lines]
    assert all(parsed), lines
    first = len(table_ops) + 1      # sequence numbers run on from the flushed writes
    assert [(int(m[1]), m[2], m[3], m[4]) for m in parsed] == \
        [(first + i, op, repr(k), repr(v)) for i, (op, k, v) in enumerate(log_ops)]


def test_dump_of_a_wal_reports_a_torn_tail(store):
    path, _, log_ops = store
    [log] = files_of(path, "log")
    with open(log, "r+b") as f:
        f.truncate(os.path.getsize(log) - 3)       # tear the batch record
    rc, out, err = tool("dump", log)
    assert rc == 0, err
    assert ENTRY.match(out.splitlines()[0])[3] == repr(log_ops[0][1])
    assert "b'bk'" not in out                      # the torn batch is not shown
    assert re.search(r"torn tail: \d+ bytes dropped", out), out


def test_dump_of_a_table_prints_its_entries_in_order(store):
    path, table_ops, _ = store
    [sst] = files_of(path, "sst")
    rc, out, err = tool("dump", sst)
    assert rc == 0, err
    header, *lines = out.splitlines()
    assert header.startswith(f"# {len(table_ops)} entries, {os.path.getsize(sst)} bytes"), header
    want = [f"{k!r} seq={i + 1} PUT -> {v!r}" for i, (_, k, v) in enumerate(table_ops)]
    assert lines == want


def test_dump_of_a_manifest_prints_the_edits(store):
    path, table_ops, _ = store
    [manifest] = files_of(path, "manifest")
    with open(os.path.join(path, filenames.CURRENT)) as f:
        assert f.read().strip() == os.path.basename(manifest)
    [sst] = files_of(path, "sst")
    number = filenames.parse(sst)[1]
    rc, out, err = tool("dump", manifest)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines and all(line.startswith("edit: ") for line in lines), lines
    added = [line for line in lines if f"+L0 #{number} " in line]
    assert len(added) == 1, lines
    assert f"{os.path.getsize(sst)}B {len(table_ops)} entries" in added[0]
    assert "b'key00'..b'key29'" in added[0]
    assert any(f"last_seq={len(table_ops)}" in line for line in lines)


def test_dump_refuses_a_file_that_is_not_a_store_file(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_bytes(b"hello")
    rc, out, err = tool("dump", str(p))
    assert rc == 1 and "notes.txt" in err, (rc, out, err)


def test_verify_passes_a_sound_store(store):
    rc, out, err = tool("verify", store[0])
    assert (rc, out.strip()) == (0, "OK"), (out, err)


@pytest.mark.parametrize("where", ["data", "index", "footer"])
def test_verify_names_the_table_with_a_flipped_bit(store, where):
    path = store[0]
    [sst] = files_of(path, "sst")
    size = os.path.getsize(sst)
    offset = {"data": 20, "index": size - 56 - 10, "footer": size - 20}[where]
    with open(sst, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x10]))
    rc, out, err = tool("verify", path)
    assert rc == 1, (out, err)
    problems = out.splitlines()[:-1]
    assert problems and all(sst in p for p in problems), out
    assert out.splitlines()[-1] == f"{len(problems)} problem(s)"


def test_verify_names_a_missing_table(store):
    path = store[0]
    [sst] = files_of(path, "sst")
    os.remove(sst)
    rc, out, err = tool("verify", path)
    assert rc == 1 and sst in out, (out, err)


def test_verify_names_a_wal_damaged_in_the_middle(store):
    path = store[0]
    [log] = files_of(path, "log")
    with open(log, "r+b") as f:
        f.seek(10)                      # inside the first of two records
        b = f.read(1)
        f.seek(10)
        f.write(bytes([b[0] ^ 1]))
    rc, out, err = tool("verify", path)
    assert rc == 1 and os.path.basename(log) in out, (out, err)


def test_verify_and_dump_follow_bounded_views_into_the_parent(store, tmp_path):
    parent = store[0]
    with lsm.DB.open(parent, lsm.Options(background=False)) as db:
        db.compact_range()
        views = [(lv, p, b"key10", b"key20") for lv, p, _lo, _hi in db.live_tables()]
        last = db.stats()["last_sequence"]
    daughter = str(tmp_path / "daughter")
    lsm.DB.create_from_views(daughter, views, lsm.Options(background=False), last_sequence=last).close()
    rc, out, err = tool("verify", daughter)
    assert (rc, out.strip()) == (0, "OK"), (out, err)
    [manifest] = files_of(daughter, "manifest")
    rc, out, err = tool("dump", manifest)
    assert rc == 0 and "view of" in out and "[b'key10', b'key20')" in out, (out, err)
    [sst] = files_of(parent, "sst")
    assert files_of(daughter, "sst") == []
    with open(sst, "r+b") as f:
        f.seek(30)
        b = f.read(1)
        f.seek(30)
        f.write(bytes([b[0] ^ 4]))
    rc, out, err = tool("verify", daughter)
    assert rc == 1, (out, err)
    named = out.splitlines()[0].split(": ")[0]
    assert os.path.realpath(named) == os.path.realpath(sst), out
