"""Bounded views of tables, and a store made of them (a region split).

The one owner of the view concept: ``TableView`` reads the user-key range
``[lo, hi)`` of a table (HBase's Reference, a daughter's half of its parent's
store file), ``narrow_views`` intersects a store's views with a key range,
and ``create_store_from_views`` builds a store of views.  One convention for
"unbounded" throughout: ``None`` (the region layer's ``b""`` bounds are
converted at its call).

``create_store_from_views`` writes the manifest of a new store whose tables
are views: ``FileMeta`` entries naming another store's table (``path``,
relative to the new store) with user-key bounds ``[lo, hi)`` (HBase's
Reference files; reading one is ``sstable.TableView``).  No data is copied.
``DB.create_from_views`` (lsm/db.py) calls it and opens the result; the
manifest fields are in docs/formats/manifest.md.
"""
import os

from .arguments import check_bound
from .dbformat import parse_internal_key
from .fs import OSFileSystem
from ._table_iter import BoundedIter
from .sstable import Table
from .version import FileMeta, VersionEdit, VersionSet

__all__ = ["TableView", "narrow_views", "create_store_from_views"]


def narrow_views(views, lo, hi):
    """Intersect ``(level, path, vlo, vhi)`` views with ``[lo, hi)``; drop the
    views left empty.  Every bound: bytes, or None = unbounded.

    >>> narrow_views([(1, "t.sst", None, b"m"), (2, "u.sst", b"c", None)], b"d", None)
    [(1, 't.sst', b'd', b'm'), (2, 'u.sst', b'd', None)]
    """
    out = []
    for level, path, vlo, vhi in views:
        nlo = vlo if lo is None or (vlo is not None and vlo > lo) else lo
        nhi = vhi if hi is None or (vhi is not None and vhi < hi) else hi
        if nlo is not None and nhi is not None and nlo >= nhi:
            continue
        out.append((level, path, nlo, nhi))
    return out




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


class TableView:
    """The user-key range ``[lo, hi)`` of a table (None = unbounded): HBase's
    Reference, i.e. a daughter's half of its parent's store file.

    Offers the Table interface, clamped to the range.  ``table`` may itself
    be a view: the ranges intersect and the view reads the base table.
    ``close()`` closes the base table only when ``own=True``.
    """

    def __init__(self, table, lo, hi, *, own=False):
        check_bound("lo", lo)
        check_bound("hi", hi)
        if isinstance(table, TableView):
            lo = table.lo if lo is None or (table.lo is not None and table.lo > lo) else lo
            hi = table.hi if hi is None or (table.hi is not None and table.hi < hi) else hi
            table = table.table
        self.table, self.lo, self.hi, self._own = table, lo, hi, own
        #: The point read (lsm._read), clamped to the range.
        self.point = table.point.bounded(lo, hi)
        self.name = table.name
        self._empty = lo is not None and hi is not None and lo >= hi
        self._off_lo = 0 if lo is None else table.approximate_offset(lo)
        self._off_hi = table.data_size if hi is None else table.approximate_offset(hi)
        if hi is not None and self._off_hi < table.data_size:
            # The block holding hi is partly inside the range: count it.
            self._off_hi = min(table.data_size, self._block_end_at(self._off_hi))
        self.file_size = 0 if self._empty else max(0, self._off_hi - self._off_lo)
        self.data_size = self.file_size
        self.num_entries = 0 if not table.data_size else \
            round(table.num_entries * self.file_size / table.data_size)
        self._ends = None

    def _block_end_at(self, off):
        for _, end in self.table.block_boundaries():
            if end > off:
                return end
        return self.table.data_size

    def _in_range(self, uk: bytes) -> bool:
        return not self._empty and (self.lo is None or uk >= self.lo) and \
            (self.hi is None or uk < self.hi)

    def _end_keys(self):
        if self._ends is None:
            it = self.iterator()
            it.seek_to_first()
            first = it.key() if it.valid() else None
            it.seek_to_last()
            self._ends = (first, it.key() if it.valid() else None)
        return self._ends

    @property
    def smallest(self):
        """First internal key inside the range (None when empty)."""
        return self._end_keys()[0]

    @property
    def largest(self):
        """Last internal key inside the range (None when empty)."""
        return self._end_keys()[1]

    def may_contain(self, user_key: bytes) -> bool:
        return self._in_range(user_key) and self.table.may_contain(user_key)

    def get(self, user_key: bytes, seq: int):
        if not self._in_range(user_key):
            return None
        return self.table.get(user_key, seq)

    def iterator(self):
        if self._empty:
            return BoundedIter(self.table.iterator(), b"", b"")
        return BoundedIter(self.table.iterator(), self.lo, self.hi)

    def approximate_offset(self, user_key: bytes) -> int:
        """Offset within the view's bytes: 0 .. file_size, monotonic."""
        off = self.table.approximate_offset(user_key)
        return min(max(off, self._off_lo), self._off_lo + self.file_size) - self._off_lo

    def block_boundaries(self, max_points: int = 0):
        """The table's boundaries whose key is in range, offsets relative to
        the view (cumulative, ending at most at ``file_size``)."""
        return [(k, min(max(c - self._off_lo, 0), self.file_size))
                for k, c in self.table.block_boundaries(max_points) if self._in_range(k)]

    def verify(self) -> None:
        self.table.verify()

    def close(self) -> None:
        if self._own:
            self.table.close()
