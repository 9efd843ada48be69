"""What the region server reports of itself: ``regions()`` (a ``RegionInfo``
per region: a read-only snapshot, ``region_info``) and ``metrics()`` (mixed
into RegionServer, as lsm's background work is into DB).

The numbers themselves are counted where they happen (regions/metrics.py,
the region's gate, each lsm store's stats); this module gathers them into
the dicts the console, ``/metrics`` and library users read, and says a few
of them in words (``human_bytes``, ``describe_policy``: the one place sizes
are written for people; the console shows them).  Thread-safety: as
RegionServer's; reading a region's stats enters its gate as internal work.
"""
import time

from ._region import OPEN
from .policy import (ConstantSizeSplitPolicy, DisabledSplitPolicy,
                     IncreasingToUpperBoundSplitPolicy, SteppingSplitPolicy)

__all__ = ["ServerReports", "RegionInfo", "region_info", "human_bytes", "describe_policy"]

_UNITS = ("KiB", "MiB", "GiB", "TiB")


class RegionInfo:
    """A read-only snapshot of one region, as ``RegionServer.regions()`` reports it.

    ``size_bytes``: bytes of the region's table files (views counted by their
    range); ``key_count``: the store's entry-count estimate; ``reads``: read
    operations served since the region was opened, ``writes``: keys written
    since then (each key of a batch counts);
    ``split_blocker``: why the region cannot split (e.g. a hot partition key),
    or None.
    """

    __slots__ = ("table", "region_id", "start_key", "end_key", "state", "size_bytes",
                 "key_count", "reads", "writes", "split_blocker")

    def __init__(self, table, region_id, start_key, end_key, state, size_bytes=0,
                 key_count=0, reads=0, writes=0, split_blocker=None):
        self.table = table
        self.region_id = region_id
        self.start_key = start_key
        self.end_key = end_key
        self.state = state
        self.size_bytes = size_bytes
        self.key_count = key_count
        self.reads = reads
        self.writes = writes
        self.split_blocker = split_blocker

    # check_layout() reads these names
    start = property(lambda self: self.start_key)
    end = property(lambda self: self.end_key)

    def contains(self, key: bytes) -> bool:
        """HBase's ``containsRow``: ``start <= key < end`` (empty end: unbounded)."""
        return key >= self.start_key and (not self.end_key or key < self.end_key)

    def __repr__(self):
        return (f"RegionInfo(table={self.table!r}, region_id={self.region_id}, "
                f"start_key={self.start_key!r}, end_key={self.end_key!r}, state={self.state}, "
                f"size_bytes={self.size_bytes}, key_count={self.key_count}, reads={self.reads}, "
                f"writes={self.writes}, split_blocker={self.split_blocker!r})")


def region_info(r, stats=None) -> RegionInfo:
    """The ``RegionInfo`` of region ``r`` (``stats``: its store's, as ``_stats`` reads them)."""
    stats = stats or {}
    return RegionInfo(r.table, r.id, r.start, r.end, OPEN if r.state is OPEN else r.state,
                      int(stats.get("table_bytes", 0)), int(stats.get("num_entries", 0)),
                      r.reads, r.writes, r.split_blocker)


def human_bytes(n) -> str:
    """A byte count for a person, in binary units with one decimal, none when
    it is whole: ``812 B``, ``2.9 KiB``, ``24 KiB``, ``1.5 GiB``."""
    n = int(n)
    if abs(n) < 1024:
        return f"{n} B"
    value = float(n)
    for unit in _UNITS:
        value /= 1024
        if round(abs(value), 1) < 1024:
            break
    text = f"{value:.1f}"
    return f"{text[:-2] if text.endswith('.0') else text} {unit}"


def describe_policy(policy) -> str:
    """The split policy in words with human sizes, e.g. ``IncreasingToUpperBound:
    split a region when its table files exceed min(16 MiB × regions³, 512 MiB
    ± 12.5 %)...`` (a policy of another class: its repr)."""
    kind = type(policy)
    if kind is DisabledSplitPolicy:
        return "Disabled: regions never split by size (an operator's split_region still splits)"
    if kind not in (ConstantSizeSplitPolicy, IncreasingToUpperBoundSplitPolicy,
                    SteppingSplitPolicy):
        return repr(policy)
    top = human_bytes(policy.max_bytes)
    if policy.jitter:
        top += f" ± {policy.jitter * 50:g} %"     # the region's rate is in [-jitter/2, jitter/2)
    when = "split a region when its table files exceed "
    if kind is ConstantSizeSplitPolicy:
        return f"ConstantSize: {when}{top}"
    first = human_bytes(policy.initial_bytes)
    if kind is SteppingSplitPolicy:
        return f"Stepping: {when}{first} while its table has one region, then {top}"
    return (f"IncreasingToUpperBound: {when}min({first} × regions³, {top}), "
            "regions = its table's regions on this server")


def _int_or_none(x):
    return None if x is None else int(x)


class ServerReports:
    """``regions()`` and ``metrics()`` of RegionServer (which provides
    ``_table``, ``_tables``, ``_check_open``, ``_block_cache``, ``_rates``,
    ``_policy``, ``_split_history``, ``_meta``, ``_opened_at``, ``path`` and
    ``options``)."""

    def regions(self, name: str) -> list:
        """``RegionInfo`` of every region of the table, in key order."""
        out = []
        for r in self._table(name).layout[1]:
            stats = self._stats(r)
            out.append(region_info(r, stats))
        return out

    def _stats(self, r):
        if not r.enter(None):
            return {}
        try:
            return r.db.stats()
        finally:
            r.exit()

    def metrics(self) -> dict:
        """The server's numbers as one dict (the console, ``/metrics`` and
        library users read this): ``path``, ``opened_at`` (wall-clock
        seconds), ``uptime_seconds``, ``sync`` (durability mode),
        ``split_policy`` (``name``, ``class``, ``parameters`` and
        ``description``, in words), ``block_cache`` (hits, misses, usage,
        capacity), ``splits`` (regions.metrics.SplitHistory.snapshot, since
        the server started, and ``recent``: the splits meta keeps, the last
        ``regions.meta.SPLIT_HISTORY`` of each table, newest first, each with
        ``table, parent, daughters, split_key, time`` (wall-clock seconds)
        and ``duration_seconds``) and ``tables``: name -> list of region dicts in key order with
        ``region_id, start_key, end_key, state, size_bytes, key_count,
        memtable_bytes, files_per_level, flushes, compactions, bytes_flushed,
        bytes_compacted, wal_appends, wal_fsyncs, reads, writes,
        reads_per_second, writes_per_second`` (None until sampled a second
        apart), ``split_threshold`` (bytes; None: never splits) and
        ``split_blocker`` (why it cannot split) with ``split_blocker_key``
        (the split boundary of its one key group, or None)."""
        self._check_open()
        cache = self._block_cache.stats() if self._block_cache is not None else {}
        tables, seen = {}, set()
        for name, t in sorted(self._tables.items()):
            regs = t.layout[1]
            out = tables[name] = []
            for r in regs:
                st = self._stats(r)
                rates = self._rates.observe(r.id, (r.reads, r.writes))
                seen.add(r.id)
                out.append({
                    "region_id": r.id, "start_key": r.start, "end_key": r.end,
                    "state": r.state, "size_bytes": int(st.get("table_bytes", 0)),
                    "key_count": int(st.get("num_entries", 0)),
                    "memtable_bytes": int(st.get("memtable_bytes", 0)),
                    "files_per_level": list(st.get("files_per_level", ())),
                    **{k: int(st.get(k, 0)) for k in ("flushes", "compactions", "bytes_flushed",
                                                      "bytes_compacted", "wal_appends",
                                                      "wal_fsyncs")},
                    "reads": r.reads, "writes": r.writes,
                    "reads_per_second": rates[0] if rates else None,
                    "writes_per_second": rates[1] if rates else None,
                    "split_threshold": _int_or_none(self._policy.threshold(len(regs),
                                                                           r.jitter_rate)),
                    "split_blocker": r.split_blocker,
                    "split_blocker_key": self._blocker_key(t, r) if r.split_blocker else None})
        self._rates.forget(seen)
        p = self._policy
        return {"path": self.path, "opened_at": self._opened_at,
                "uptime_seconds": time.time() - self._opened_at,
                "sync": bool(self.options.sync),
                "split_policy": {"name": p.name, "class": type(p).__name__,
                                 "parameters": dict(vars(p)), "description": describe_policy(p)},
                "block_cache": {k: cache.get(k, 0) for k in ("hits", "misses", "usage", "capacity")},
                "splits": {**self._split_history.snapshot(), "recent": self._recent_splits()},
                "tables": tables}

    def _recent_splits(self):
        doc = self._meta.doc        # replaced whole by each meta write, never changed
        out = [{"table": name, **s, "daughters": list(s["daughters"])}
               for name in doc.tables for s in doc.split_history(name)]
        return sorted(out, key=lambda s: s["time"], reverse=True)

    @staticmethod
    def _blocker_key(t, r):
        """The key group a blocked region holds (its first key's split boundary)."""
        boundary = t.hooks.split_boundary
        if boundary is None or not r.enter(None):
            return None
        try:
            first = next((k for k, _ in r.db.scan(r.start or None, r.end or None)), None)
        finally:
            r.exit()
        return boundary(first) if first is not None else None
