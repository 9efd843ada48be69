"""Every tunable of the engine, in one place, each with its reason."""
from dataclasses import dataclass, replace
from typing import Callable, Optional

from ._memtable import PrefixExtractor

__all__ = ["Options"]


@dataclass
class Options:
    # -- write path -------------------------------------------------------
    #: Bytes of key+value (plus a per-entry overhead estimate) the active
    #: memtable holds before it is frozen and flushed.  Bigger means fewer
    #: L0 files and less compaction competing with writers for the GIL;
    #: smaller means less memory and a shorter WAL to replay.  32 MiB (about
    #: 180k small entries, ~50 MB of Python objects) is RocksDB's ballpark.
    memtable_bytes: int = 32 << 20
    #: Per-entry overhead counted against ``memtable_bytes``: Python object
    #: and container overhead of one entry, so the budget tracks real memory.
    memtable_entry_overhead: int = 64
    #: Default durability of writes: False acknowledges once the WAL record
    #: is handed to the OS (survives kill -9); True fsyncs first (survives
    #: power loss; concurrent syncing writers share one fsync).
    sync: bool = False
    #: Bytes of zeros written ahead of the WAL's end, that many at a time.
    #: On the OS file system the zeros are also mapped, and a WAL record is
    #: copied into the mapping instead of written with ``write(2)``: a put
    #: saves the system call (docs/performance.md, stop 23), and the record
    #: is with the OS all the same (it survives kill -9); a WAL's first fsync ends its
    #: mapping (lsm._fileio says why).  With ``sync``, a synced write
    #: overwrites allocated space and its fdatasync commits no change of the
    #: file's size (sqlite3 reuses its WAL file for the same reason; what
    #: it saves an fdatasync: docs/performance.md, "A preallocated WAL").
    #: The reader ends cleanly at the zeros a crash leaves; a clean
    #: close trims them.  None: 1 MiB; 0: off (one ``write(2)`` a record).
    wal_preallocate_bytes: Optional[int] = None
    #: Largest key accepted (bytes).  Keys index blocks; huge keys bloat them.
    max_key_bytes: int = 64 << 10
    #: Largest value accepted (bytes): one value must fit comfortably in RAM
    #: and in one WAL record batch.
    max_value_bytes: int = 64 << 20

    # -- table format -----------------------------------------------------
    #: Uncompressed bytes per data block: the unit of I/O, caching and
    #: checksumming.  4 KiB is LevelDB's default and a page.
    block_size: int = 4096
    #: Entries between restart points in a block: the trade between prefix
    #: compression (more) and in-block binary-search granularity (fewer).
    restart_interval: int = 16
    #: Compress data blocks with zstandard.  A block is stored raw when
    #: compression saves less than 1/8 of it (LevelDB's rule).
    compression: bool = True
    #: zstandard level; 1 is fast enough to keep compaction cheap.
    compression_level: int = 1
    #: First level whose tables are compressed.  L0 and L1 are rewritten
    #: soon after they are written, so compressing them costs CPU (under the
    #: GIL, beside the writers) for bytes that do not stay; RocksDB setups
    #: commonly leave them raw for the same reason.
    compression_min_level: int = 2
    #: Bloom filter bits per key (0 disables): 10 bits gives ~1% false
    #: positives, so a missing key costs ~0.01 block reads per table.
    bloom_bits_per_key: int = 10
    #: Target size of one table file written by compaction.
    target_file_bytes: int = 8 << 20

    # -- read path --------------------------------------------------------
    #: Bytes of uncompressed, parsed blocks kept in the LRU block cache.
    #: Larger than LevelDB's 8 MiB on purpose: LevelDB leans on the OS page
    #: cache and a C block read, while a miss here costs Python work (read,
    #: checksum, parse, insert) worth more than a whole cached get
    #: (docs/performance.md, the engine's section, the figures).
    block_cache_bytes: int = 160 << 20
    #: A block cache shared by several stores (an ``lsm.cache.BlockCache``):
    #: a region server gives all its regions one, as HBase does, so the
    #: budget is per server, not per region.  None: a private cache of
    #: ``block_cache_bytes``.
    block_cache: object = None
    #: Open tables kept in the table cache.  An open table holds no file
    #: descriptor (it is mapped; lsm/fs.py) but a mapping and its index.
    max_open_files: int = 500
    #: A budget of open tables shared by several stores (an
    #: ``lsm.cache.SharedTables``): a region server gives all its regions
    #: one, so the bound is per server, not per region.  None: only
    #: ``max_open_files`` bounds this store's.
    shared_tables: object = None
    #: Check the checksum of every block read from disk (not of cached
    #: blocks).  Keep on: a flipped bit must never become a wrong value.
    verify_checksums: bool = True

    # -- compaction (leveled, like LevelDB) -------------------------------
    #: L0 files that trigger a compaction into L1.
    l0_compaction_trigger: int = 4
    #: L0 files at which writers are delayed a little, so compaction keeps up.
    l0_slowdown_trigger: int = 8
    #: L0 files at which writers wait for compaction.
    l0_stop_trigger: int = 12
    #: Target bytes of L1; each deeper level is ``level_multiplier`` larger.
    level1_bytes: int = 64 << 20
    level_multiplier: int = 10
    #: Number of levels (L0 .. L{num_levels-1}).
    num_levels: int = 7
    #: Compaction filter factory: called once per compaction with no
    #: arguments, it returns ``f(key, value) -> bool`` (True drops the entry).
    #: ``f`` sees the surviving values of that compaction in key order (never
    #: tombstones), so it may keep state, e.g. count versions of a column.
    #: The Tablestore layer uses it for TTL and max_versions.  The factory
    #: may return None: no filter for that compaction (no per-entry cost).
    compaction_filter_factory: Optional[Callable[[], Callable[[bytes, bytes], bool]]] = None
    #: What a key's prefix is (an ``lsm.PrefixExtractor``, e.g.
    #: ``lsm.fixed_prefix(8)``; RocksDB's ``prefix_extractor``), or None.
    #: With one, the memtable files each key under its prefix too, and a
    #: short scan within a prefix that one key has (``DB.scan_short``: a
    #: range whose two bounds have the same prefix) finds it by one hash
    #: lookup instead of searching the sorted keys.  Kept in memory only:
    #: any extractor, or none, reads the same data.  ``DB.set_prefix_extractor``
    #: changes it on an open DB.
    prefix_extractor: object = None
    #: Seconds without a write after which the tables left in L0 (fewer than
    #: ``l0_compaction_trigger``) are compacted into L1: a range read (a row
    #: of the data API) searches every L0 table, bloom filters answer for
    #: keys only, so after a load in random key order two L0 tables a region
    #: made row reads 0.7x of those of a store without (docs/performance.md,
    #: issue 34).  0: never.
    l0_idle_seconds: float = 2.0
    #: Compaction throughput control (HBase's pressure-aware compaction
    #: throughput controller, RocksDB's rate limiter), in bytes of input a
    #: second.  A compaction that is not urgent is paced to
    #: ``lower + (higher - lower) * pressure`` and sleeps, the GIL released,
    #: when it runs ahead, so that foreground reads and writes keep the
    #: interpreter: a size compaction of a level at 1x-2x its target
    #: (pressure 0 to 1: above 2x it is urgent) and a rewrite of a split's
    #: views (pressure 0: a view reads as fast as an own table; its rewrite
    #: only frees the parent's files).  Urgent, never paced: flushes, L0
    #: compactions (a range read, a row of the data API, searches every L0
    #: table: six of them made row reads 3.4x slower, docs/performance.md,
    #: issue 34), ``compact_range``, and any compaction while L0 holds
    #: ``l0_compaction_trigger`` tables or more (it holds the one background
    #: thread).  Unpaced, a compaction here reads about 60 MB/s.  0: no pacing.
    compaction_throughput_lower: int = 16 << 20
    compaction_throughput_higher: int = 48 << 20
    #: The timeline paced compactions share (an ``lsm.CompactionPacer``):
    #: a region server gives all its regions one, so the limits above are
    #: per server, not per region.  None: the store's own.
    compaction_pacer: object = None
    #: Run flush and compaction in a background thread.  Off only in tests
    #: that want every step to happen inline.
    background: bool = True
    #: Start compactions on their own (RocksDB's ``!disable_auto_compactions``).
    #: Off, flushes still run and ``compact_range`` still compacts, but no
    #: compaction is picked until ``DB.set_auto_compactions(True)``.  A
    #: region split opens its daughters with it off so that their first
    #: compactions do not compete for the GIL with the split's own steps.
    #: While off, writes stall once L0 reaches ``l0_stop_trigger`` files.
    auto_compactions: bool = True

    # -- degraded state (lsm/health.py) -------------------------------------
    #: Seconds before a store that a retryable failure (a full disk, no
    #: descriptor left) made refuse writes retries what failed; each failed
    #: retry doubles the wait up to ``resume_retry_max_seconds``.  Short, so
    #: that writes resume within about a second of the resource's return;
    #: a retry that fails costs one file operation.
    resume_retry_seconds: float = 0.05
    #: The longest wait between two retries (RocksDB's
    #: ``bgerror_resume_retry_interval``, 1 s).
    resume_retry_max_seconds: float = 1.0

    # -- environment ------------------------------------------------------
    #: The file-system interface every file operation goes through
    #: (``lsm.fs.OSFileSystem`` when None); tests pass a fault-injecting one.
    fs: object = None

    def wal_preallocate(self) -> int:
        """``wal_preallocate_bytes`` with its default resolved."""
        if self.wal_preallocate_bytes is None:
            return 1 << 20
        return self.wal_preallocate_bytes

    def copy(self, **changes) -> "Options":
        return replace(self, **changes)

    def validate(self) -> None:
        for name in ("memtable_bytes", "block_size", "restart_interval", "target_file_bytes",
                     "max_open_files", "l0_compaction_trigger", "level1_bytes",
                     "max_key_bytes", "max_value_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"Options.{name} must be a positive int, got {v!r}")
        v = self.wal_preallocate_bytes
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ValueError(f"Options.wal_preallocate_bytes must be None or an int >= 0, got {v!r}")
        for name in ("compaction_throughput_lower", "compaction_throughput_higher"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"Options.{name} must be an int >= 0, got {v!r}")
        if self.compaction_pacer is not None and not callable(getattr(self.compaction_pacer, "reserve", None)):
            raise TypeError("Options.compaction_pacer must be an lsm.CompactionPacer or None, "
                            f"got {type(self.compaction_pacer).__name__}")
        if self.bloom_bits_per_key < 0 or self.block_cache_bytes < 0:
            raise ValueError("Options.bloom_bits_per_key and block_cache_bytes must be >= 0")
        if not (self.l0_compaction_trigger <= self.l0_slowdown_trigger <= self.l0_stop_trigger):
            raise ValueError("Options: need l0_compaction_trigger <= l0_slowdown_trigger <= l0_stop_trigger")
        if self.prefix_extractor is not None and not isinstance(self.prefix_extractor,
                                                                PrefixExtractor):
            raise TypeError("Options.prefix_extractor must be an lsm.PrefixExtractor or None, "
                            f"got {type(self.prefix_extractor).__name__}")
        v = self.l0_idle_seconds
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"Options.l0_idle_seconds must be a number >= 0, got {v!r}")
        for name in ("resume_retry_seconds", "resume_retry_max_seconds"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"Options.{name} must be a number > 0, got {v!r}")
        if self.num_levels < 2:
            raise ValueError("Options.num_levels must be >= 2")
