"""Experiment 3: simulated power loss, reopen, verify.

In-process, through ``lsm.faultfs.FaultInjectionFS`` over the real file
system (without its fsyncs: the fault-injecting layer records what was
synced and drops the rest itself; harness.NoSyncFileSystem), with every write fsynced before it is acknowledged (``sync=True``;
one cycle in four runs with ``sync=False`` instead) and all work inline (no background thread: lsm ``background=False``,
``background_workers=0``, ``RegionServer.maintain()`` every few operations),
so that a cycle is deterministic for its seed.  Each cycle:

1. opens the server on the fault-injecting file system and runs 1 to 80
   operations of the shared workload (workload.py) on the tiny-threshold
   table, whose memtables flush, whose stores compact and whose regions split;
2. cuts the power at a random point: three cycles in four at a random file
   operation (``crash_at`` one of ``CRASH_POINTS``: the i-th append, sync or
   creation of a WAL, of a table (a flush or a compaction), of a manifest,
   the i-th write of META (a split's steps), a directory rename, sync or
   creation, a removal, wherever it happens, the open's own recovery
   included), after which nothing more reaches the disk; otherwise between
   two operations;
3. drops every unsynced byte and every directory entry not made durable by a
   directory sync (``drop_unsynced``), reopens and checks: every acknowledged
   write present (they were all synced), the one operation in flight all or
   nothing, the linked list without holes, the regions and every table
   checksum sound (workload.check_state, check_regions, check_files).  After a
   ``sync=False`` cycle acknowledged writes may be lost, but each partition
   key value must come back as a prefix of its writes, with no hole
   (workload.check_prefix).

    python -m regions.soak powerloss --seed 1 --count 300
"""
import functools
import random

import lsm
import regions
from lsm.faultfs import FaultInjectionFS, SimulatedCrash
from regions.tablestore import OTSClient

from . import Summary
from . import workload
from .harness import NoSyncFileSystem, parser, report, start

__all__ = ["run", "main"]

#: Where a power cut may fall: name -> (file operation, a part of its path,
#: how many such operations may pass first; about what one cycle makes).
CRASH_POINTS = {
    "wal_append": ("append", ".log", 120), "wal_sync": ("sync", ".log", 60),
    "wal_create": ("open_append", ".log", 6),
    "table_append": ("append", ".sst", 80), "table_sync": ("sync", ".sst", 6),
    "table_create": ("open_append", ".sst", 6),
    "manifest_append": ("append", "MANIFEST", 12), "manifest_sync": ("sync", "MANIFEST", 12),
    "current_rename": ("rename", "CURRENT", 4),
    "meta_write": ("write_atomic", "META", 4), "meta_rename": ("rename", "META", 4),
    "daughter_rename": ("rename", ".creating", 2), "dir_create": ("makedirs", "", 4),
    "dir_sync": ("sync_dir", "", 10), "remove": ("remove", "", 8), "rmtree": ("rmtree", "", 2),
}
MAX_OPS = 80
MAINTAIN_EVERY = 8
#: Share of the cycles run without fsync (sync=False): their check is the prefix one.
UNSYNCED = 0.25


def _options(fs, sync=True):
    return workload.server_options(
        sync=sync, fs=fs, background_workers=0,
        lsm_options=lsm.Options(block_size=512, compression=False, background=False))


def run(seed: int, count: int = None, seconds: float = None, dir: str = None,
        epoch: int = 50, stats: dict = None) -> Summary:
    """Run ``count`` power cuts (or as many as fit in ``seconds``; 300 when
    neither is given) in ``dir`` (harness.WorkDir).  ``stats``, if given,
    receives the operations acknowledged, the cuts with one in flight, the
    cycles without fsync and the writes they lost, where the cuts fell
    (between operations or at each crash point) and the splits seen.  Every ``epoch`` cycles the table is dropped and
    created again, so that regions keep splitting in a long run."""
    if count is None and seconds is None:
        count = 300
    summary, work, rng, st = start(
        "powerloss", "unsynced bytes and directory entries dropped", seed, dir, stats,
        ("ops", "pending", "unsynced_cycles", "unsynced_writes_lost", "cuts_between_ops", "splits",
         "regions"))
    path = work.path("store")
    st.update({f"cut_{name}": 0 for name in CRASH_POINTS})
    fs = FaultInjectionFS(NoSyncFileSystem())
    model, next_id, regions_before = {}, 0, workload.INITIAL_REGIONS
    while work.more(summary, count, seconds):
        point = rng.choice(sorted(CRASH_POINTS)) if rng.random() < 0.75 else None
        if point:
            op, part, bound = CRASH_POINTS[point]
            fs.crash_at(op, part, after=rng.randrange(bound))
        synced = rng.random() >= UNSYNCED
        log = workload.MemoryLog()
        wl = workload.Workload(None, random.Random(rng.getrandbits(32)), log, next_id,
                               workload.next_node(model), nodes=synced)
        cut = _run_until_cut(summary, _options(fs, synced), path, wl, rng.randint(1, MAX_OPS))
        st[f"cut_{point}" if cut else "cuts_between_ops"] += 1
        fs.drop_unsynced()
        fs.clear_faults()
        fs.ops.clear()
        summary.cycles += 1
        acked, pending = log.result()
        st["ops"] += len(acked)
        st["pending"] += pending is not None
        st["unsynced_cycles"] += not synced
        next_id = wl.next_id
        try:
            server = regions.RegionServer.open(path, _options(fs))
        except Exception as e:
            summary.failure("crashes", f"cycle {summary.cycles}: reopen failed: {e!r}")
            fs.drop_unsynced()
            continue
        model, n = workload.verify_reopened(
            summary, server, path, model, acked, pending, drop=summary.cycles % epoch == 0,
            check=workload.check_state if synced else functools.partial(workload.check_prefix,
                                                                         stats=st))
        st["splits"] += max(0, n - regions_before)
        st["regions"] = regions_before = n
    return work.finish(summary)


def _run_until_cut(summary, options, path, wl, n_ops) -> bool:
    """Open the store and run ``n_ops`` operations; True if the power was cut
    inside a file operation.  The server is abandoned, never closed: after a
    power cut nothing may run its clean shutdown."""
    try:
        server = regions.RegionServer.open(path, options)
        wl.client = OTSClient(path, server=server)
        workload.create_table(wl.client)
        for i in range(n_ops):
            wl.step()
            if i % MAINTAIN_EVERY == MAINTAIN_EVERY - 1:
                server.maintain()
    except SimulatedCrash:
        return True
    except Exception as e:
        summary.failure("crashes", f"cycle {summary.cycles}: the workload raised {e!r}")
    return False


def main(argv=None) -> int:
    args = parser("powerloss", "power cuts (default 300)", doc=__doc__).parse_args(argv)
    stats = {}
    return report(run(args.seed, args.count, args.seconds, args.dir, stats=stats), stats)
