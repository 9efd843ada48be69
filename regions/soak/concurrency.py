"""Experiment 6: 8 threads of rows and scans through one OTSClient while auto-splits run.

One embedded ``OTSClient`` on a table that starts as one region and splits
all the time (memtables of 4 KiB, regions split from 16 KiB, two split
workers, a maintenance pass every 10 ms); ``sys.setswitchinterval(1e-5)``
forces thread switches between few bytecodes.  Each of ``threads`` workers
owns the partition key values ``p`` with ``p % threads == its number``: it
writes a window of its latest partitions and moves on to a fresh one every
``MOVE_EVERY`` operations, so the data grows and regions keep splitting.
Owning its keys, a worker keeps an exact private model (db_stress's way) and
checks it on every read.  A worker's operations, drawn from a seeded RNG:

* PutRow / UpdateRow (PUT, DELETE_ALL, INCREMENT) / DeleteRow, and
  BatchWriteRow of up to 20 of its rows, with the model updated on success;
  each write sets the columns ``a`` and ``b`` to one token, so a read seeing
  two tokens would be a torn row;
* GetRow and GetRange over one of its partitions (small pages, FORWARD or
  BACKWARD): the rows must equal the model exactly, pages sorted, gap-free,
  duplicate-free;
* GetRange over ``SPAN`` partition key values (all workers', crossing
  regions) in pages of 50: keys strictly increasing, inside the range, no
  duplicate, and every *anchor* row of the range (one per partition,
  written when a worker starts a partition and never changed) written
  before the scan began must be in it (its cost does not grow with the
  table, so a long run's operations stay short);
* INCREMENT of a shared hot counter, and a compare-and-set on it
  (``cas == expected`` -> ``expected + 1``) whose failures must be
  OTSConditionCheckFail: at the end the counter equals the increments
  acknowledged and ``cas`` the successful sets, exactly.

A watchdog samples each worker's progress (operations and GetRange pages)
every second: a worker stuck for ``HANG_S`` seconds is a hang (every thread's stack is dumped on stderr by
``faulthandler``) and stops the run.  At the end the whole table is compared
with the union of the models, ``RegionServer.check()`` must pass, and once
the server is closed no file it opened may still be open, and
``lsm.tools verify`` must pass.

With ``--indexes`` the table declares its columns and carries a global
index on ``a`` (every write moves its row), a local one on ``(p, n)`` and a
global one on ``anchor``.  A GetRange of an own partition also reads that
partition of the local index, which must already hold exactly what the
worker's model calls for (a local index is in step when the write returns);
every ``--check-every`` seconds the workers pause, the global indexes catch
up (``wait_for_indexes``) and every index is compared with the whole table
(regions.tablestore.indexcheck), and once more at the end.

    python -m regions.soak concurrency --seed 1 --seconds 60
    python -m regions.soak concurrency --seed 1 --seconds 60 --indexes
"""
import faulthandler
import os
import random
import sys
import threading
import time

import lsm
import regions
from regions import cliutil
from regions.tablestore import (BatchWriteRowRequest, CapacityUnit, ComparatorType, Condition,
                                DeleteRowItem, Direction, INF_MAX, INF_MIN, OTSClient,
                                OTSServiceError, PutRowItem, ReservedThroughput, Row,
                                RowExistenceExpectation, SecondaryIndexMeta, SecondaryIndexType,
                                SingleColumnCondition, TableInBatchWriteRowItem, TableMeta,
                                TableOptions)

from . import Summary
from . import workload
from .harness import parser, report, start

__all__ = ["run", "main"]

TABLE = "conc"
ROWS = 24               # rows of a partition: r in [0, ROWS); r = -1 is its anchor
WINDOW = 3              # partitions a worker writes at a time
MOVE_EVERY = 150        # operations before a worker starts a fresh partition
HOT = (-1, 0)           # the shared counter row
SPAN = 32               # partitions a cross-partition GetRange covers
HANG_S = 30.0
KiB = 1 << 10
_IGNORE = Condition(RowExistenceExpectation.IGNORE)
#: with --indexes: the columns declared, and the indexes (module doc)
COLUMNS = [("a", "STRING"), ("b", "STRING"), ("pad", "STRING"), ("n", "INTEGER"),
           ("anchor", "INTEGER"), ("count", "INTEGER"), ("cas", "INTEGER")]
INDEXES = [SecondaryIndexMeta("conc_a", ["a"], ["b"]),
           SecondaryIndexMeta("conc_pn", ["p", "n"], ["a"], SecondaryIndexType.LOCAL_INDEX),
           SecondaryIndexMeta("conc_anchor", ["anchor"], [])]
LOCAL = "conc_pn"
_CONDITION_FAILED = "OTSConditionCheckFail"


def server_options() -> regions.ServerOptions:
    return regions.ServerOptions(
        memtable_bytes=4 * KiB, background_workers=2, maintenance_interval=0.01,
        split_policy=regions.ConstantSizeSplitPolicy(16 * KiB, jitter=0.25),
        lsm_options=lsm.Options(block_size=512, compression=False))


def _pk(p, r):
    return [("p", p), ("r", r)]


def _cols(row):
    return {name: value for name, value, _ts in row.attribute_columns}


class _Shared:
    """What the workers share: the anchors written so far, the stop flag,
    the summary (its counters under ``lock``) and each worker's progress."""

    def __init__(self, summary, n):
        self.summary = summary
        self.lock = threading.Lock()
        self.anchors = []               # (p, r) in the order their writes were acknowledged
        self.stop = threading.Event()
        self.progress = [0] * n
        self.counts = {"ops": 0, "scans": 0, "pages": 0, "increments": 0, "cas": 0,
                       "cas_failed": 0, "local_index_reads": 0}
        # the pause of an index check: workers park between operations
        self.paused = False
        self._gate = threading.Condition()
        self._parked = 0

    def fail(self, kind, text):
        with self.lock:
            self.summary.failure(kind, text)

    def park(self):
        """A worker between two operations: wait while the run is paused."""
        with self._gate:
            self._parked += 1
            self._gate.notify_all()
            while self.paused and not self.stop.is_set():
                self._gate.wait(0.1)
            self._parked -= 1

    def pause(self, workers, timeout) -> bool:
        """Stop the workers between operations; False if they did not all
        stop within ``timeout`` (or the run is stopping)."""
        with self._gate:
            self.paused = True
            return self._gate.wait_for(lambda: self._parked == workers or self.stop.is_set(),
                                       timeout) and not self.stop.is_set()

    def resume(self):
        with self._gate:
            self.paused = False
            self._gate.notify_all()


class _Worker:
    def __init__(self, number, client, shared, threads, seed, indexes=False):
        self.n, self.client, self.shared, self.threads = number, client, shared, threads
        self.indexes = indexes
        self.rng = random.Random(seed)
        self.model = {}                 # (p, r) -> {column: value}
        self.partitions = []            # the window: the newest WINDOW partitions
        self.started = 0                # partitions started so far
        self.ops = 0
        self.increments = self.cas = self.cas_failed = 0
        self.token = 0

    # -- the loop -------------------------------------------------------------
    def run(self):
        try:
            while not self.shared.stop.is_set():
                if self.shared.paused:
                    self.shared.park()
                if self.ops % MOVE_EVERY == 0:
                    self._new_partition()
                self._step()
                self.ops += 1
                self._tick()
        except BaseException as e:          # the run must report, not die silently
            self.shared.fail("crashes", f"worker {self.n} after {self.ops} operations: {e!r}")
            self.shared.stop.set()

    def _tick(self):
        """Progress the watchdog sees: every operation and every page."""
        self.shared.progress[self.n] += 1

    def _new_partition(self):
        self.started += 1
        p = self.n + self.threads * self.started
        self.partitions = (self.partitions + [p])[-WINDOW:]
        self.client.put_row(TABLE, Row(_pk(p, -1), [("anchor", p)]))
        self.model[(p, -1)] = {"anchor": p}
        with self.shared.lock:
            self.shared.anchors.append((p, -1))

    def _step(self):
        x = self.rng.random()
        if x < 0.25:
            self._write_one()
        elif x < 0.33:
            self._batch()
        elif x < 0.50:
            self._get_row()
        elif x < 0.62:
            self._range_own()
        elif x < 0.66:
            self._range_across()
        elif x < 0.84:
            self._increment()
        else:
            self._compare_and_set()

    def _key(self):
        return (self.rng.choice(self.partitions), self.rng.randrange(ROWS))

    def _next_token(self):
        self.token += 1
        return "w%d-%d" % (self.n, self.token)

    # -- writes ---------------------------------------------------------------
    def _write_one(self):
        key, kind, tok = self._key(), self.rng.random(), self._next_token()
        old = self.model.get(key)
        if kind < 0.45:
            cols = {"a": tok, "b": tok, "pad": "x" * self.rng.randrange(200)}
            self.client.put_row(TABLE, Row(_pk(*key), sorted(cols.items())))
            self.model[key] = cols
        elif kind < 0.8:
            update = {"PUT": [("a", tok), ("b", tok)], "INCREMENT": [("n", 1)]}
            if self.rng.random() < 0.3:
                update["DELETE_ALL"] = ["pad"]
            self.client.update_row(TABLE, Row(_pk(*key), update), _IGNORE)
            new = dict(old or {}, a=tok, b=tok, n=(old or {}).get("n", 0) + 1)
            if "DELETE_ALL" in update:
                new.pop("pad", None)
            self.model[key] = new
        else:
            self.client.delete_row(TABLE, Row(_pk(*key)), _IGNORE)
            self.model.pop(key, None)

    def _batch(self):
        keys = {self._key() for _ in range(self.rng.randint(1, 20))}
        items, after = [], {}
        for key in sorted(keys):
            if self.rng.random() < 0.8:
                tok = self._next_token()
                cols = {"a": tok, "b": tok}
                items.append(PutRowItem(Row(_pk(*key), sorted(cols.items())), _IGNORE))
                after[key] = cols
            else:
                items.append(DeleteRowItem(Row(_pk(*key)), _IGNORE))
                after[key] = None
        request = BatchWriteRowRequest()
        request.add(TableInBatchWriteRowItem(TABLE, items))
        response = self.client.batch_write_row(request)
        if not response.is_all_succeed():
            failed = response.get_failed_of_put() + response.get_failed_of_delete()
            raise AssertionError(f"batch rows failed: {[(r.index, r.error_code) for r in failed]}")
        for key, cols in after.items():
            if cols is None:
                self.model.pop(key, None)
            else:
                self.model[key] = cols

    def _increment(self):
        self.client.update_row(TABLE, Row(_pk(*HOT), {"INCREMENT": [("count", 1)]}), _IGNORE)
        self.increments += 1

    def _compare_and_set(self):
        _, row, _ = self.client.get_row(TABLE, _pk(*HOT), ["cas"], max_version=1)
        seen = _cols(row).get("cas", 0) if row else 0
        cond = Condition(RowExistenceExpectation.IGNORE,
                         SingleColumnCondition("cas", seen, ComparatorType.EQUAL,
                                               pass_if_missing=True))
        try:
            self.client.update_row(TABLE, Row(_pk(*HOT), {"PUT": [("cas", seen + 1)]}), cond)
            self.cas += 1
        except OTSServiceError as e:
            if e.code != _CONDITION_FAILED:
                raise
            self.cas_failed += 1

    # -- reads ----------------------------------------------------------------
    def _get_row(self):
        key = self._key()
        _, row, _ = self.client.get_row(TABLE, _pk(*key), max_version=1)
        got = _cols(row) if row is not None else None
        if got != self.model.get(key):
            self.shared.fail("wrong", f"worker {self.n}: GetRow {key} = {got}, "
                                      f"the model says {self.model.get(key)}")
        if got and "a" in got and got.get("a") != got.get("b"):
            self.shared.fail("wrong", f"worker {self.n}: torn row {key}: {got}")

    def _range_own(self):
        p = self.rng.choice(self.partitions)
        forward = self.rng.random() < 0.5
        lo, hi = _pk(p, INF_MIN), _pk(p, INF_MAX)
        rows = self._pages(Direction.FORWARD if forward else Direction.BACKWARD,
                           lo if forward else hi, hi if forward else lo, self.rng.randint(1, 8))
        got = {k: c for k, c in rows}
        want = {k: c for k, c in self.model.items() if k[0] == p}
        keys = [k for k, _ in rows]
        if keys != sorted(want, reverse=not forward) or got != want:
            missing = sorted(set(want) - set(got))
            extra = sorted(set(got) - set(want))
            self.shared.fail("wrong", f"worker {self.n}: GetRange of partition {p} "
                                      f"({'FORWARD' if forward else 'BACKWARD'}): missing "
                                      f"{missing[:5]}, extra {extra[:5]}, order ok: "
                                      f"{keys == sorted(got, reverse=not forward)}")
        if self.indexes:
            self._local_index(p)

    def _local_index(self, p):
        """Partition ``p`` of the local index: exactly the entries of the
        model's rows that have a counter ``n`` (key ``(p, n, r)``, attribute
        ``a``), as soon as the writes returned."""
        want = {(k[0], c["n"], k[1]): {"a": c["a"]} if "a" in c else {}
                for k, c in self.model.items() if k[0] == p and "n" in c}
        got, start = {}, [("p", p), ("n", INF_MIN), ("r", INF_MIN)]
        while start is not None:
            _, start, rows, _ = self.client.get_range(
                LOCAL, Direction.FORWARD, start, [("p", p), ("n", INF_MAX), ("r", INF_MAX)],
                limit=self.rng.randint(1, 8))
            got.update((tuple(v for _, v in r.primary_key), _cols(r)) for r in rows)
            self._tick()
        if got != want:
            self.shared.fail("wrong", f"worker {self.n}: local index of partition {p}: missing "
                                      f"{sorted(set(want) - set(got))[:5]}, extra "
                                      f"{sorted(set(got) - set(want))[:5]}, wrong "
                                      f"{[k for k in want if k in got and got[k] != want[k]][:5]}")
        with self.shared.lock:
            self.shared.counts["local_index_reads"] += 1

    def _range_across(self):
        with self.shared.lock:
            anchors = list(self.shared.anchors)
        top = max(p for p, _ in anchors)
        lo = self.rng.randint(-1, max(-1, top - SPAN // 2))
        hi = lo + SPAN
        rows = self._pages(Direction.FORWARD, _pk(lo, INF_MIN), _pk(hi, INF_MIN), 50)
        keys = [k for k, _ in rows]
        if any(a >= b for a, b in zip(keys, keys[1:])):
            bad = next(i for i, (a, b) in enumerate(zip(keys, keys[1:])) if a >= b)
            self.shared.fail("wrong", f"worker {self.n}: GetRange [{lo}, {hi}) out of order or "
                                      f"duplicated at {keys[bad]}, {keys[bad + 1]}")
        outside = [k for k in keys if not lo <= k[0] < hi]
        present = set(keys)
        lost = [a for a in anchors if lo <= a[0] < hi and a not in present]
        if lost or outside:
            self.shared.fail("wrong", f"worker {self.n}: GetRange [{lo}, {hi}) skipped anchors "
                                      f"{lost[:5]}, returned rows outside {outside[:5]}")
        with self.shared.lock:
            self.shared.counts["scans"] += 1

    def _pages(self, direction, start, end, limit):
        rows, pages = read_pages(self.client, direction, start, end, limit, self._tick)
        with self.shared.lock:
            self.shared.counts["pages"] += pages
        return rows


def read_pages(client, direction, start, end, limit, tick=None):
    """``([(key, columns)], pages)``: every row of [start, end) by GetRange
    pages of ``limit`` rows; ``tick()`` after each page (progress)."""
    out, pages = [], 0
    while start is not None:
        _, start, rows, _ = client.get_range(TABLE, direction, start, end, max_version=1,
                                             limit=limit)
        out += [(tuple(v for _, v in r.primary_key), _cols(r)) for r in rows]
        pages += 1
        if tick is not None:
            tick()
    return out, pages


def _watchdog(shared, workers):
    last, since = list(shared.progress), [time.monotonic()] * len(workers)
    while not shared.stop.wait(1.0):
        now = time.monotonic()
        if shared.paused:               # an index check: nobody is meant to progress
            since = [now] * len(workers)
            continue
        for i, n in enumerate(shared.progress):
            if n != last[i]:
                last[i], since[i] = n, now
            elif now - since[i] > HANG_S:
                shared.fail("hangs", f"worker {i} made no progress for {HANG_S:.0f} s "
                                     f"(stacks on stderr)")
                faulthandler.dump_traceback(all_threads=True)
                shared.stop.set()
                return


def run(seed: int, count: int = None, seconds: float = None, dir: str = None,
        threads: int = 8, stats: dict = None, indexes: bool = False,
        check_every: float = 15.0) -> Summary:
    """Run ``threads`` workers for ``seconds`` (60 when neither ``seconds``
    nor ``count`` is given; ``count``: stop once the workers made that many
    operations in all) in ``dir`` (harness.WorkDir).  ``summary.cycles`` is
    the number of operations, ``verified`` that number (each operation's
    outcome is checked: a write's in the model, a read against it) plus the
    rows of the final comparison.  ``stats``, if given, receives operations,
    scans, pages, increments, CAS outcomes, splits, regions and descriptors
    left open; with ``indexes`` (module doc; every index checked each
    ``check_every`` seconds and at the end) the reads of the local index, the
    index checks and the problems they found."""
    if count is None and seconds is None:
        seconds = 60.0
    summary, work, _rng, st = start(
        "concurrency", f"{threads} threads, splits, switch interval 1e-5"
        + (", with indexes" if indexes else ""), seed, dir, stats,
        ("index_checks", "index_problems") if indexes else ())
    path = work.path("store")
    shared = _Shared(summary, threads)
    fds = _open_fds()
    server = regions.RegionServer.open(path, server_options())
    client = OTSClient(path, server=server)
    client.create_table(TableMeta(TABLE, [("p", "INTEGER"), ("r", "INTEGER")],
                                  COLUMNS if indexes else None), TableOptions(),
                        ReservedThroughput(CapacityUnit(0, 0)),
                        secondary_indexes=INDEXES if indexes else None)
    rng = random.Random(seed)
    workers = [_Worker(i, client, shared, threads, rng.getrandbits(32), indexes)
               for i in range(threads)]
    pool = [threading.Thread(target=w.run, name=f"soak-worker-{w.n}", daemon=True) for w in workers]
    dog = threading.Thread(target=_watchdog, args=(shared, workers), daemon=True)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for t in pool + [dog]:
            t.start()
        next_check = time.monotonic() + check_every
        while not shared.stop.is_set():
            if seconds is not None and time.monotonic() - work.began >= seconds:
                break
            if count is not None and sum(w.ops for w in workers) >= count:
                break
            if indexes and time.monotonic() >= next_check:
                _paused_index_check(summary, client, workers, shared, st)
                next_check = time.monotonic() + check_every
            time.sleep(0.05)
        shared.stop.set()
        for t in pool:
            t.join(HANG_S)
            if t.is_alive():
                summary.failure("hangs", f"{t.name} did not stop within {HANG_S:.0f} s")
    finally:
        sys.setswitchinterval(switch)
    summary.cycles = sum(w.ops for w in workers)
    if summary.hangs:
        return work.finish(summary)     # a stuck thread holds the store: leave it open
    served = []
    try:
        if indexes:     # first: the regions _final_check lists are verified once closed
            workload.check_indexes(summary, client, st, TABLE, "at the end")
        served = _final_check(summary, server, client, workers, shared, st)
    finally:
        client.close()                  # its index maintainer stops; the server stays open
        server.close()
    leaked = _open_fds() - fds
    st["leaked_fds"] = len(leaked)
    if leaked:
        summary.failure("wrong", f"file descriptors left open after close: {sorted(leaked)[:10]}")
    workload.check_files(summary, path, served)
    return work.finish(summary)


def _paused_index_check(summary, client, workers, shared, st):
    """Pause the workers, let the global indexes catch up and compare every
    index with the table (workload.check_indexes), resume."""
    try:
        if shared.pause(len(workers), HANG_S):
            ops = sum(w.ops for w in workers)
            workload.check_indexes(summary, client, st, TABLE, f"after {ops} operations")
        elif not shared.stop.is_set():
            summary.failure("hangs", f"the workers did not pause within {HANG_S:.0f} s")
            shared.stop.set()
    finally:
        shared.resume()


def _final_check(summary, server, client, workers, shared, st):
    model = {k: c for w in workers for k, c in w.model.items()}
    increments, cas = sum(w.increments for w in workers), sum(w.cas for w in workers)
    hot = model[HOT] = {}
    if increments:
        hot["count"] = increments
    if cas:
        hot["cas"] = cas
    if not hot:
        del model[HOT]
    rows, _ = read_pages(client, Direction.FORWARD, _pk(INF_MIN, INF_MIN), _pk(INF_MAX, INF_MAX),
                         500)
    rows = dict(rows)
    for key in sorted(set(rows) | set(model)):
        if rows.get(key) != model.get(key):
            summary.failure("losses" if key not in rows else "wrong",
                            f"final state of {key}: {rows.get(key)}, the models say "
                            f"{model.get(key)}")
    summary.verified = len(rows) + sum(w.ops for w in workers)
    served = workload.check_regions(summary, server)
    splits = server.metrics()["splits"]
    st.update(ops=summary.cycles, increments=increments,
              cas=cas, cas_failed=sum(w.cas_failed for w in workers),
              splits=splits["finished"], rolled_back=splits["rolled_back"],
              regions=len(server.regions(TABLE)), rows=len(rows))
    st.update(scans=shared.counts["scans"], pages=shared.counts["pages"])
    if workers[0].indexes:
        st["local_index_reads"] = shared.counts["local_index_reads"]
    return served


def _open_fds():
    """The process's open files (Linux: /proc/self/fd) as ``{fd: target}``
    items; an empty set where /proc is not mounted."""
    root = "/proc/self/fd"
    if not os.path.isdir(root):
        return set()
    out = set()
    for fd in os.listdir(root):
        try:
            out.add((int(fd), os.readlink(os.path.join(root, fd))))
        except OSError:         # the listing's own descriptor, already closed
            pass
    return out


def main(argv=None) -> int:
    ap = parser("concurrency", "stop after this many operations in all",
                "run this many seconds (default 60)", doc=__doc__)
    ap.add_argument("--threads", type=cliutil.positive_int, default=8,
                    help="worker threads (8)")
    ap.add_argument("--indexes", action="store_true",
                    help="the table carries secondary indexes: the local one read with each "
                         "partition, every one checked each --check-every seconds and at the end")
    ap.add_argument("--check-every", type=cliutil.positive_float, default=15.0,
                    help="with --indexes: seconds between two pauses that check every index (15)")
    args = ap.parse_args(argv)
    stats = {}
    return report(run(args.seed, args.count, args.seconds, args.dir, args.threads, stats,
                      args.indexes, args.check_every), stats)
