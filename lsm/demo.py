"""The main job: a short tour of the engine, printing what it does.

    python -m lsm.demo
"""
import os
import tempfile
import time

from . import DB, Options, WriteBatch


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="lsm-demo-") as path:
        opts = Options(memtable_bytes=256 << 10)
        print(f"open a store in {path}")
        db = DB.open(path, opts)
        t0 = time.perf_counter()
        n = 50_000
        for i in range(n):
            db.put(b"user:%08d" % i, b"payload-%d" % i)
        print(f"wrote {n} keys in {time.perf_counter() - t0:.2f}s")
        b = WriteBatch()
        for i in range(0, 1000, 2):
            b.delete(b"user:%08d" % i)
        db.write(b)
        print("deleted 500 keys in one atomic batch")
        print("get user:00000001 ->", db.get(b"user:00000001"), "| get user:00000000 ->", db.get(b"user:00000000"))
        print("scan [user:00000990, user:00001000):", [k.decode() for k, _ in db.scan(b"user:00000990", b"user:00001000")])
        print("reverse scan, first 3:", [k.decode() for _, (k, _v) in zip(range(3), db.scan(reverse=True))])
        snap = db.snapshot()
        db.put(b"user:00000001", b"changed")
        print("after an update: now", db.get(b"user:00000001"), "| snapshot", db.get(b"user:00000001", snapshot=snap))
        snap.close()
        db.flush()
        st = db.stats()
        print(f"flushed: files per level {st['files_per_level']}, {st['flushes']} flushes")
        db.compact_range()
        st = db.stats()
        print(f"compacted: files per level {st['files_per_level']}, {st['table_bytes']} table bytes, "
              f"write amplification {st['write_amplification']:.2f}")
        print("middle key (the split point a region would use):", db.middle_key())
        db.close()
        db = DB.open(path, opts)
        count = sum(1 for _ in db.scan())
        print(f"reopened: {count} keys, get user:00000001 -> {db.get(b'user:00000001')}")
        db.close()
        print("files:", sorted(os.listdir(path)))


if __name__ == "__main__":
    main()
