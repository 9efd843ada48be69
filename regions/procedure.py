"""The split procedure: an explicit state machine with persisted steps
(HBase's ``SplitTableRegionProcedure``), its recovery, and its kill points.

Steps (``run``), each followed by a kill point of the same name:

1. ``split.prepared``: the parent's automatic compactions stop (a running
   one aborts: it would only compete with the split for the GIL); meta
   records the procedure (parent, split key, the daughters' ids) and marks
   the parent SPLITTING.
2. ``split.parent_closed``: the parent is flushed while still serving (so the
   offline window is short), its gate is closed (new operations wait, those in
   flight finish), it is flushed again and its store closed: all its data is
   now in table files that nothing will change.
3. ``split.daughter_a_created`` / ``split.daughter_b_created``: each daughter
   is a new store made of bounded views (references) of the parent's table
   files, ``[start, split)`` and ``[split, end)``: no data is copied, so a split
   costs the same for 1 MB or 200 MB.
4. ``split.before_meta`` then the point of no return: ONE meta write replaces
   the parent by the daughters, records the parent for garbage collection,
   appends the split to the table's history (``MetaDoc.record_split``) and
   moves the procedure to ``meta_updated`` (``split.after_meta``).
5. ``split.daughters_opened``: the daughters are routed to; waiting operations
   wake up and go to the right daughter.
6. ``split.done``: the procedure record is removed.  Then the daughters'
   automatic compactions start (their stores were created with them off:
   rewriting the views competes for the GIL with the split's own file
   operations, and made a split right after a load several times slower:
   docs/performance.md, "Split right after a load").

Recovery (``recover``, on server open): a procedure still ``prepared`` rolls
back (the parent is OPEN again; the daughters' directories are orphans and are
deleted); one at ``meta_updated`` rolls forward (the daughters are already in
meta; only the record goes).  In-process, a failure before the point of no
return rolls back at once and reopens the parent.

Parent garbage collection (``collect_parents``): a split parent's directory is
deleted once no region of its table refers to its files any more (after the
daughters' compactions rewrote their views; lsm's ``external_files`` counts
versions still pinned by iterators, so a read in progress keeps its parent): first the meta write, then the
directory (``gc.after_meta``), so a crash leaves at worst an orphan directory.

The host: the procedure and the janitor see the server only through this
narrow interface (``RegionServer`` passes an adapter; see ``_SplitHost`` in
server.py)::

    busy_wait_seconds                      how long a gate may wait
    update_meta(change)                    change(doc), one atomic meta write
    meta_doc()                             the meta document (read only)
    open_store(table, region_id, **opts)   open a region's lsm store
    create_store(table, region_id, views, last_sequence)   automatic compactions off
    make_region(table, region_id, start, end, db)
    replace_region(table, parent, daughters)   route to the daughters
    region_dir(region_id), remove_region_dir(region_id)
    admit_stores(more, what)               raise if ``more`` stores pass the descriptor budget
    split_history                          optional: a regions.metrics.SplitHistory

Kill points: set ``REGIONS_KILL_AT=<name>`` in a child process's environment
and it SIGKILLs itself at that point (crash tests); ``set_kill_hook(f)`` calls
``f(name)`` at every point (in-process tests may raise to inject a failure;
``with kill_hook(f):`` for one block).
"""
import contextlib
import logging
import os
import signal
import time

from . import _region, meta as _meta
from .meta import RegionRecord
from lsm.health import is_retryable
from lsm.views import narrow_views

__all__ = ["SplitProcedure", "recover", "collect_parents", "kill_point", "set_kill_hook", "kill_hook",
           "KILL_ENV", "KILL_POINTS"]

log = logging.getLogger("regions")

KILL_ENV = "REGIONS_KILL_AT"
KILL_POINTS = (
    "split.prepared", "split.parent_closed", "split.daughter_a_created",
    "split.daughter_b_created", "split.before_meta", "split.after_meta",
    "split.daughters_opened", "split.done", "gc.after_meta",
)
_hook = None


def set_kill_hook(hook) -> None:
    """Install ``hook(name)`` called at every kill point (None removes it)."""
    global _hook
    _hook = hook


@contextlib.contextmanager
def kill_hook(hook):
    """``set_kill_hook(hook)`` for the ``with`` block, removed after it."""
    set_kill_hook(hook)
    try:
        yield
    finally:
        set_kill_hook(None)


def kill_point(name: str) -> None:
    if os.environ.get(KILL_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
    if _hook is not None:
        _hook(name)


class SplitProcedure:
    """Split ``parent`` (an open Region of table state ``table``) at ``split_key``.

    The caller holds ``table.split_lock`` for the whole run and has checked
    that ``split_key`` lies strictly inside the parent.  ``host`` is the
    split host (module docstring).
    """

    def __init__(self, host, table, parent, split_key: bytes):
        self.host = host
        self.table = table
        self.parent = parent
        self.split_key = split_key
        self.ids = None
        self.dbs = [None, None]
        self.t0 = None                  # time.monotonic() when run() began
        self.parent_closed = False
        self.past_ponr = False

    def run(self):
        """Run every step; returns the two daughter Regions.  Before the point of
        no return any exception rolls the split back and is re-raised."""
        # two daughters for one parent, checked before anything is written
        self.host.admit_stores(1, f"splitting region {self.parent.id} of {self.table.name!r}")
        history = getattr(self.host, "split_history", None)   # regions.metrics.SplitHistory
        self.t0 = time.monotonic()
        if history is not None:
            history.start()
        # The parent's compactions would only compete with the split for the
        # GIL: a running one aborts (its inputs stay for the daughters' views)
        self.parent.db.set_auto_compactions(False)
        try:
            self._prepare()
            self._close_parent()
            self._create_daughters()
            kill_point("split.before_meta")
            self._update_meta()
        except BaseException:
            if not self.past_ponr:
                self._rollback()
                if history is not None:
                    history.rollback(time.monotonic() - self.t0)
                raise
            self._roll_forward()   # past the point of no return: finish, then report
            raise
        daughters = self._roll_forward()
        if history is not None:
            history.finish(time.monotonic() - self.t0)
        return daughters

    def _roll_forward(self):
        try:
            daughters = self._open_daughters()
            self._finish()
        finally:
            for db in self.dbs:         # created with automatic compactions off
                if db is not None:
                    db.set_auto_compactions(True)
        return daughters

    # -- steps ------------------------------------------------------------
    def _prepare(self):
        p = self.parent

        def change(doc):
            self.ids = (doc.allocate_id(), doc.allocate_id())
            for r in doc.tables[self.table.name]["regions"]:
                if r.id == p.id:
                    r.state = _meta.SPLITTING
            doc.procedures.append({"kind": "split", "table": self.table.name, "parent": p.id,
                                   "split_key": self.split_key, "daughters": list(self.ids),
                                   "step": "prepared"})
        self.host.update_meta(change)
        kill_point("split.prepared")

    def _close_parent(self):
        p = self.parent
        p.db.flush(wait=True)                   # pre-flush while still serving
        p.close_gate(_region.SPLITTING, self.host.busy_wait_seconds)
        p.db.flush(wait=True)
        p.db.close()
        self.parent_closed = True
        # The list of table files must be taken with no background compaction
        # running (one could delete a listed file): reopen the flushed parent
        # quiesced, list, close.  Its WAL is empty, so this is cheap.
        quiet = self.host.open_store(self.table, p.id, background=False)
        try:
            self.views = quiet.live_tables()
            self.last_sequence = quiet.stats()["last_sequence"]
        finally:
            quiet.close()
        kill_point("split.parent_closed")

    def _create_daughters(self):
        p, k = self.parent, self.split_key
        bounds = ((p.start, k), (k, p.end))
        for i, name in enumerate(("split.daughter_a_created", "split.daughter_b_created")):
            lo, hi = bounds[i]
            self.dbs[i] = self.host.create_store(self.table, self.ids[i],
                                                 narrow_views(self.views, lo or None, hi or None),
                                                 self.last_sequence)
            kill_point(name)

    def _update_meta(self):
        p, k, (a, b) = self.parent, self.split_key, self.ids
        name = self.table.name

        def change(doc):
            regions = doc.tables[name]["regions"]
            i = next(i for i, r in enumerate(regions) if r.id == p.id)
            regions[i:i + 1] = [RegionRecord(a, p.start, k), RegionRecord(b, k, p.end)]
            doc.parents.append({"table": name, "id": p.id, "daughters": [a, b]})
            doc.record_split(name, p.id, (a, b), k, time.time(), time.monotonic() - self.t0)
            for proc in doc.procedures:
                if proc["parent"] == p.id:
                    proc["step"] = "meta_updated"
        self.host.update_meta(change)
        self.past_ponr = True
        kill_point("split.after_meta")

    def _open_daughters(self):
        p, k = self.parent, self.split_key
        host = self.host
        da = host.make_region(self.table, self.ids[0], p.start, k, self.dbs[0])
        db = host.make_region(self.table, self.ids[1], k, p.end, self.dbs[1])
        host.replace_region(self.table, p, (da, db))
        p.set_state(_region.SPLIT)              # waiting operations route again
        log.info("split region %d of %r at %r into %d [%r, %r) and %d [%r, %r)",
                 p.id, self.table.name, k, da.id, p.start, k, db.id, k, p.end)
        kill_point("split.daughters_opened")
        return da, db

    def _finish(self):
        try:
            self.host.update_meta(lambda doc: doc.procedures.__setitem__(
                slice(None), [x for x in doc.procedures if x["parent"] != self.parent.id]))
        except Exception:   # recovery drops a meta_updated record on the next open
            log.exception("split of region %d: could not remove the procedure record", self.parent.id)
        kill_point("split.done")

    def _rollback(self):
        host, p = self.host, self.parent
        log.warning("split of region %d of %r rolled back", p.id, self.table.name)
        for i, db in enumerate(self.dbs):
            if db is not None:
                try:
                    db.close()
                except Exception:
                    log.exception("closing daughter %d during rollback", self.ids[i])
        if self.parent_closed:
            p.db = _until_done(lambda: host.open_store(self.table, p.id),
                               f"reopening region {p.id} of {self.table.name!r}", lambda: host.closed,
                               host.busy_wait_seconds)
        else:
            p.db.set_auto_compactions(True)
        # Meta first, directories after: a failed point-of-no-return write may
        # still have reached the disk (its rename done, its directory fsync
        # failed), and a meta that names the daughters must find them.  If
        # this write fails too (and not for a resource that comes back), the
        # daughters stay (recovery rolls forward or removes them as orphans)
        # and the parent stays SPLITTING: it serves nothing until the server
        # is reopened and knows which meta holds.
        _until_done(lambda: host.update_meta(lambda doc: _rollback_doc(doc, p.id)),
                    f"rolling back the split of region {p.id} in meta", lambda: host.closed,
                    host.busy_wait_seconds)
        if self.ids:
            for rid in self.ids:
                try:
                    host.remove_region_dir(rid)
                except Exception as e:  # noqa: BLE001 - an orphan, removed at the next open
                    log.warning("split of region %d: daughter directory %d left for the next "
                                "open to remove: %s", p.id, rid, e)
        p.set_state(_region.OPEN)


def _until_done(fn, what, stop, seconds=None, first=0.05, most=1.0):
    """``fn()``, retried with backoff (up to ``most`` seconds apart) while it
    fails for a resource that comes back (a full disk, descriptors that ran
    out: lsm.health), while ``stop()`` is false (the server closing) and for
    at most ``seconds`` (None: no bound; a split's rollback gives it the
    host's ``busy_wait_seconds``, as long as the operations waiting for the
    parent wait, so that a fault that never clears ends the split's call),
    so that a split rolled back for want of one leaves its parent serving
    again once the resource returns, without a restart.  Said once in the log."""
    wait, said = first, False
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        try:
            return fn()
        except Exception as e:
            if not is_retryable(e) or stop() or (deadline is not None
                                                 and time.monotonic() >= deadline):
                raise
            if not said:
                log.warning("%s failed (%s): retrying until it succeeds", what, e)
                said = True
            time.sleep(wait)
            wait = min(wait * 2, most)


def _rollback_doc(doc, parent_id):
    for t in doc.tables.values():
        for r in t["regions"]:
            if r.id == parent_id:
                r.state = _meta.OPEN
    doc.procedures = [x for x in doc.procedures if x["parent"] != parent_id]


def recover(meta) -> None:
    """Finish or undo the splits a crash interrupted (meta only; orphan
    directories are removed by the caller afterwards)."""
    procs = meta.doc.procedures
    if not procs:
        return

    def change(doc):
        for proc in list(doc.procedures):
            if proc["step"] == "prepared":
                log.warning("recovery: split of region %d of %r rolled back",
                            proc["parent"], proc["table"])
                _rollback_doc(doc, proc["parent"])
            else:
                log.warning("recovery: split of region %d of %r rolled forward",
                            proc["parent"], proc["table"])
        doc.procedures = []
    meta.update(change)


def collect_parents(host, table) -> int:
    """The janitor (HBase's CatalogJanitor): delete the split parents of
    ``table`` no region refers to; returns how many.  The caller holds
    ``table.split_lock`` (no split may be copying views of a parent meanwhile)."""
    parents = [p for p in host.meta_doc().parents if p["table"] == table.name]
    if not parents:
        return 0
    refs = set()
    for r in table.layout[1]:
        refs.update(os.path.realpath(f) for f in r.db.external_files())
    done = 0
    for p in parents:
        pdir = os.path.realpath(host.region_dir(p["id"])) + os.sep
        if any(f.startswith(pdir) for f in refs):
            continue
        host.update_meta(lambda doc: doc.parents.__setitem__(
            slice(None), [x for x in doc.parents if x["id"] != p["id"]]))
        kill_point("gc.after_meta")
        host.remove_region_dir(p["id"])
        log.info("deleted split parent %d of %r", p["id"], table.name)
        done += 1
    return done
