"""Dump and verify store files.

    python -m lsm.tools dump PATH      # a WAL (.log), table (.sst) or MANIFEST-*, readably
    python -m lsm.tools verify DBDIR   # every block checksum, the manifest against the files

``verify`` exits 0 when the store is sound and 1 (one line per problem) when
not; it reads the files directly and never opens the store for writing.
"""
import argparse
import os
import sys

from . import filenames
from .batch import replay
from .dbformat import parse_internal_key
from .errors import LSMError
from .fs import OSFileSystem
from .options import Options
from .sstable import Table
from .views import TableView
from .version import VersionEdit, VersionSet
from .wal import LogReader

__all__ = ["dump", "verify", "main"]

_KINDS = {0: "DEL", 1: "PUT"}


def _short(b: bytes, limit: int = 40) -> str:
    r = repr(b)
    return r if len(r) <= limit else r[:limit] + "...'"


def dump(path: str, out=sys.stdout) -> None:
    """Print a WAL, table or manifest file, one entry per line."""
    fs = OSFileSystem()
    kind = (filenames.parse(path) or ("?", 0))[0]
    if kind == "log":
        reader = LogReader(fs.read_all(path), path)
        for seq, k, key, value in replay(reader):
            print(f"seq={seq} {_KINDS.get(k, k)} {_short(key)} -> {_short(value)}", file=out)
        if reader.dropped_tail_bytes:
            print(f"# torn tail: {reader.dropped_tail_bytes} bytes dropped ({reader.tail_reason})", file=out)
    elif kind == "manifest":
        for rec in LogReader(fs.read_all(path), path):
            e = VersionEdit.decode(rec)
            parts = []
            if e.log_number is not None:
                parts.append(f"log={e.log_number}")
            if e.next_file is not None:
                parts.append(f"next_file={e.next_file}")
            if e.last_seq is not None:
                parts.append(f"last_seq={e.last_seq}")
            for lv, m in e.added:
                view = f" view of {m.path} [{m.lo!r}, {m.hi!r})" if m.is_view else ""
                parts.append(f"+L{lv} #{m.number} {m.size}B {m.entries} entries "
                             f"{_short(m.smallest_user)}..{_short(m.largest_user)}{view}")
            for lv, n in e.deleted:
                parts.append(f"-L{lv} #{n}")
            print("edit: " + "; ".join(parts), file=out)
    elif kind == "sst" or path.endswith(".sst"):
        t = Table.open(fs.open_read(path), Options(), name=path)
        print(f"# {t.num_entries} entries, {t.file_size} bytes, {t.num_data_blocks} data blocks", file=out)
        it = t.iterator()
        it.seek_to_first()
        while it.valid():
            uk, seq, k = parse_internal_key(it.key())
            print(f"{_short(uk)} seq={seq} {_KINDS.get(k, k)} -> {_short(it.value())}", file=out)
            it.next()
    else:
        raise ValueError(f"{path}: not a .log, .sst or MANIFEST-* file")


def verify(dbdir: str) -> list:
    """Problems found in the store at ``dbdir`` (empty when sound)."""
    fs = OSFileSystem()
    problems = []
    try:
        versions = VersionSet(fs, dbdir, Options().num_levels)     # the open's own reading of it
        versions.recover()
        metas = {m.number: (lv, m) for lv, m in versions.current.files()}
    except (LSMError, OSError, ValueError) as e:
        return [f"manifest: {e}"]
    for n, (lv, m) in sorted(metas.items()):
        path = os.path.normpath(os.path.join(dbdir, m.path) if m.is_view else
                                os.path.join(dbdir, filenames.table_name(n)))
        try:
            t = Table.open(fs.open_read(path), Options(), name=path)
            t.verify()
            view = TableView(t, m.lo, m.hi) if m.is_view else t
            if view.num_entries and not m.is_view and t.num_entries != m.entries:
                problems.append(f"{path}: manifest says {m.entries} entries, table has {t.num_entries}")
            if not m.is_view and (t.smallest != m.smallest or t.largest != m.largest):
                problems.append(f"{path}: key range differs from the manifest")
        except (LSMError, OSError) as e:
            msg = str(e)
            problems.append(msg if msg.startswith(path) else f"{path}: {msg}")
    for fname in fs.listdir(dbdir):
        p = filenames.parse(fname)
        if p and p[0] == "log":
            try:
                for _entry in replay(LogReader(fs.read_all(os.path.join(dbdir, fname)), fname)):
                    pass
            except LSMError as e:
                problems.append(f"{fname}: {e}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lsm.tools", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("dump", help="print a .log, .sst or MANIFEST file").add_argument("path")
    sub.add_parser("verify", help="check every checksum and the manifest").add_argument("dbdir")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "dump":
            dump(args.path)
            return 0
        problems = verify(args.dbdir)
    except (LSMError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for p in problems:
        print(p)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
