"""A store made of bounded views of other stores' tables (a region split).

``create_store_from_views`` writes the manifest of a new store whose tables
are views: ``FileMeta`` entries naming another store's table (``path``,
relative to the new store) with user-key bounds ``[lo, hi)`` (HBase's
Reference files; reading one is ``sstable.TableView``).  No data is copied.
``DB.create_from_views`` (lsm/db.py) calls it and opens the result; the
manifest fields are in docs/formats/manifest.md.
"""
import os

from .batch import check_bound
from .dbformat import parse_internal_key
from .fs import OSFileSystem
from .sstable import Table, TableView
from .version import FileMeta, VersionEdit, VersionSet

__all__ = ["create_store_from_views"]


def create_store_from_views(path: str, views, options, last_sequence: int = None) -> None:
    """Create the store at ``path`` from ``views`` (see ``DB.create_from_views``).

    Atomic: built in ``path + ".creating"`` and renamed to ``path`` at the
    end, so a failure leaves nothing.
    """
    if last_sequence is not None and (not isinstance(last_sequence, int) or last_sequence < 0):
        raise ValueError(f"last_sequence must be an int >= 0, got {last_sequence!r}")
    fs = options.fs or OSFileSystem()
    path = os.path.abspath(os.fspath(path))
    if fs.exists(path) and fs.listdir(path):
        raise ValueError(f"create_from_views: {path} exists and is not empty")
    tmp = path + ".creating"
    fs.rmtree(tmp, missing_ok=True)
    fs.makedirs(tmp)
    try:
        vs = VersionSet(fs, tmp, options.num_levels)
        edit = VersionEdit()
        views = list(views)
        l0 = [v for v in views if v[0] == 0]
        numbers = {}
        # L0 order is by number: the newest (first) view gets the highest.
        for i, v in enumerate(reversed(l0)):
            numbers[id(v)] = 2 + i
        nxt = 2 + len(l0)
        max_seq = 0
        for v in views:
            level, tpath, lo, hi = v
            if not (isinstance(level, int) and 0 <= level < options.num_levels):
                raise ValueError(f"create_from_views: bad level {level!r}")
            check_bound("lo", lo)
            check_bound("hi", hi)
            tpath = os.path.abspath(tpath)
            f = fs.open_read(tpath)
            view = TableView(Table.open(f, options, name=tpath), lo, hi)
            try:
                if view.smallest is None:
                    continue
                n = numbers.get(id(v))
                if n is None:
                    n, nxt = nxt, nxt + 1
                edit.add(level, FileMeta(n, view.file_size, view.num_entries, view.smallest,
                                         view.largest, os.path.relpath(tpath, path), lo, hi))
                if last_sequence is None:
                    max_seq = max(max_seq, _max_sequence(view))
            finally:
                del view
        vs.next_file = nxt
        vs.last_seq = max_seq if last_sequence is None else last_sequence
        vs.current = vs.current.apply(edit)
        vs.current.check()
        vs.create()
        vs.close()
        fs.rename(tmp, path)
        fs.sync_dir(os.path.dirname(path))
    except BaseException:
        fs.rmtree(tmp, missing_ok=True)
        raise


def _max_sequence(table) -> int:
    """Largest sequence number among a table's entries (a full read)."""
    it = table.iterator()
    it.seek_to_first()
    best = 0
    while it.valid():
        best = max(best, parse_internal_key(it.key())[1])
        it.next()
    return best
