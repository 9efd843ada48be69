"""What the region server reports of itself: ``regions()`` and ``metrics()``
(mixed into RegionServer, as lsm's background work is into DB).

The numbers themselves are counted where they happen (regions/metrics.py,
the region's gate, each lsm store's stats); this module gathers them into
the dicts the console, ``/metrics`` and library users read.  Thread-safety:
as RegionServer's; reading a region's stats enters its gate as internal work.
"""
import time

__all__ = ["ServerReports"]


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
            out.append(r.info(stats))
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
        library users read this): ``path``, ``uptime_seconds``, ``sync``
        (durability mode), ``split_policy``, ``block_cache`` (hits, misses,
        usage, capacity), ``splits`` (regions.metrics.SplitHistory.snapshot, since
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
        return {"path": self.path, "uptime_seconds": time.time() - self._opened_at,
                "sync": bool(self.options.sync), "split_policy": repr(self._policy),
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
