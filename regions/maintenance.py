"""The region server's background work, one pass at a time.

A pass (``Maintenance.run_pass``, HBase's chores in one place):

1. the memtable budget (HBase's MemStoreFlusher): while the memtables of all
   regions together exceed ``global_memtable_bytes``, flush the largest;
2. split checks (the split policy decides *when*, policy.py): every region
   the policy selects is split by a ``SplitProcedure``; a region whose data is
   one partition key value cannot split (``HotPartitionError``) and keeps
   that reason as its split blocker until it has grown by a quarter;
3. the janitor (HBase's CatalogJanitor, ``procedure.collect_parents``): split
   parents nothing refers to any more are deleted.

With ``background_workers > 0`` a thread runs a pass every
``maintenance_interval`` seconds and splits and janitor runs go to a pool
(one task per region or table at a time); with 0 there is no thread and
``run_pass`` does everything inline (tests call ``RegionServer.maintain``).
Maintenance sees the server only through its split host (procedure.py).
"""
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from . import procedure
from .errors import DescriptorBudgetError, HotPartitionError, SplitError

__all__ = ["Maintenance"]

log = logging.getLogger("regions")

# A hot region is re-examined once it has grown by this factor.
_REEXAMINE_GROWTH = 1.25


class Maintenance:
    """Background work of one server: ``start()``, ``run_pass()``, ``stop()``."""

    def __init__(self, host, options, policy):
        self.host = host
        self.options = options
        self.policy = policy
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pending = set()
        self._stopped = False
        self._executor = None
        self._thread = None

    def start(self):
        if not self.options.background_workers:
            return
        self._executor = ThreadPoolExecutor(self.options.background_workers,
                                            thread_name_prefix="regions-split")
        self._thread = threading.Thread(target=self._loop, name="regions-maintenance",
                                        daemon=True)
        self._thread.start()

    def stop(self):
        """Stop the loop and wait for the tasks in flight.  Idempotent."""
        with self._lock:
            self._stopped = True
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._executor.shutdown(wait=True)
            self._thread = None

    def _loop(self):
        while not self._stop.wait(self.options.maintenance_interval):
            try:
                self.run_pass()
            except Exception:
                log.exception("regions maintenance pass failed")

    def run_pass(self):
        """One pass: memtable budget, split checks, janitor (module docstring)."""
        host = self.host
        if host.closed:
            return
        self._enforce_memtable_budget()
        total = sum(len(t.layout[1]) for t in host.tables())
        for t in host.tables():
            regs = t.layout[1]
            for r in regs:
                if total >= self.options.max_regions:
                    break
                if self._wants_split(r, len(regs)):
                    total += 1
                    self._submit_split(t, r)
            self._submit_janitor(t)

    # -- the memtable budget ---------------------------------------------
    def _enforce_memtable_budget(self):
        sizes = []
        for t in self.host.tables():
            for r in t.layout[1]:
                sizes.append((int(self.host.region_stats(r).get("memtable_bytes", 0)), r))
        total = sum(s for s, _ in sizes)
        for size, r in sorted(sizes, key=lambda x: -x[0]):
            if total <= self.options.global_memtable_bytes or size == 0:
                break
            self.host.with_store(r, lambda db: db.flush(wait=False))
            total -= size

    # -- split checks ----------------------------------------------------
    def _wants_split(self, r, count):
        size = int(self.host.region_stats(r).get("table_bytes", 0))
        if r.split_blocker is not None and size < r.blocked_at_size * _REEXAMINE_GROWTH:
            return False        # hot: re-examined once it has grown
        return self.policy.should_split(size, count, r.jitter_rate)

    def _submit_split(self, t, r):
        host = self.host

        def task():
            with t.split_lock:
                if host.closed or not host.serves(t, r):
                    return
                try:
                    point = host.split_point(t, r)
                except HotPartitionError as e:
                    return self._block(r, e)
                except SplitError:
                    return      # nothing to split now (too little data, not serving)
                try:
                    procedure.SplitProcedure(host, t, r, point).run()
                except DescriptorBudgetError as e:     # checked before anything was written
                    return self._block(r, e)
                r.split_blocker = None
        self._run(("split", t.name, r.id), task)

    def _block(self, r, e):
        """Region ``r`` cannot split (``e`` says why): said once, and not
        examined again until it has grown (``_wants_split``)."""
        if r.split_blocker is None:
            log.warning("%s", e)
        r.split_blocker = str(e)
        r.blocked_at_size = int(self.host.region_stats(r).get("table_bytes", 0)) or 1

    # -- the janitor -----------------------------------------------------
    def _submit_janitor(self, t):
        host = self.host
        if not any(p["table"] == t.name for p in host.meta_doc().parents):
            return

        def task():
            with t.split_lock:
                if not host.closed and host.serves(t):
                    procedure.collect_parents(host, t)
        self._run(("gc", t.name), task)

    # -- running tasks ---------------------------------------------------
    def _run(self, key, fn):
        """Run ``fn`` inline (no workers) or in the pool, one task per key at a time."""
        if self._executor is None:
            fn()
            return
        with self._lock:
            if key in self._pending or self._stopped:
                return
            self._pending.add(key)

        def task():
            try:
                fn()
            except Exception:
                log.exception("background task %r failed", key)
            finally:
                with self._lock:
                    self._pending.discard(key)
        self._executor.submit(task)
