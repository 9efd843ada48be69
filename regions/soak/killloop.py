"""Experiment 1: kill -9 of a child writing through the Tablestore API, reopen, verify.

Each cycle starts a child process (``child``) that opens the store in
``--dir`` and runs the shared workload (workload.py) on the pre-split,
auto-splitting table, logging every operation to an acknowledgement file.
The parent SIGKILLs it at a random moment: usually ``uniform(0.05,
window)`` seconds after the child said it was ready, one cycle in ten
during its start (while it recovers the previous kill's WAL).  Then the
parent reopens the same directory and checks the expected state and the
store (workload.check_state, check_regions, check_files); the state read becomes
the next cycle's model, so state and crashes accumulate in one directory
(RocksDB's crash test).  Every ``epoch`` cycles the table is dropped and
created again, so that pre-split regions keep splitting in a long run.

The default durability (no fsync) is the contract under test: a kill -9
loses no acknowledged write.

With ``--indexes`` the table carries secondary indexes (workload.INDEXES:
two global, one local), and one child in three first drops or creates a
fourth with its base data (workload.churn_index), whose back-fill then runs
beside the workload; after each kill the reopen applies what the kill left
in the change feed, and the parent waits for the global indexes and
back-fills and compares every index with the table (workload.check_indexes):
a missing, phantom or wrong entry is a wrong result.

    python -m regions.soak killloop --seed 1 --count 150
With ``--stream`` the table has a stream (workload.STREAM), whose writers
copy each write's records from the change feed into the stream's log after
the base write, while the table splits; a kill may land between the feed
append and the base write, between the base write and the copy, or inside
a split.  After each kill the parent reads the stream as a client would
(regions.soak.streamcheck: each shard after its parents, its iterators kept
from one kill to the next) and checks that every acknowledged write is one
record, in order per row, with the columns it wrote, and that the write in
flight has a record only if it landed and at most one.

With ``--search`` the table has a search index (regions.soak.searchcheck:
a field per column the workload writes), made right after CreateTable, and
one child in four drops and makes it again (its back-fill then runs beside
the workload); a kill may land between the engine's add and its commit,
between the commit and the feed's forget, in a back-fill, or inside the
index's create or drop.  After each kill the parent waits for the index to
be in sync and checks it holds exactly the table's rows: each row one
document with the row's values, no phantom, no duplicate, through the
engine, MatchAll, a parallel scan and a few Term/Range/Match queries.

    python -m regions.soak killloop --seed 1 --count 150 --indexes
    python -m regions.soak killloop --seed 1 --count 200 --stream
    python -m regions.soak killloop --seed 1 --count 200 --search
"""
import logging
import os
import random
import select
import signal
import subprocess
import sys
import time

import regions
from lsm.fs import OSFileSystem
from regions import cliutil
from regions.tablestore import OTSClient
from regions.tablestore.indexes import FEED_SUFFIX, INDEX_ATTRIBUTE
from regions.tablestore.search import SEARCH_ATTRIBUTE

from . import Summary
from . import searchcheck, streamcheck, workload
from .harness import AppendFileProxy, NoSyncFileSystem, child_env, parser, report, start

__all__ = ["run", "main", "child"]

_READY = b"ready\n"
_CHILD = "from regions.soak.killloop import child; child()"
_START_TIMEOUT_S = 60.0


def child(argv=None) -> None:
    """The child: ``PATH LOG SEED NEXT_ID NEXT_NODE [indexes] [stream] [search]``;
    runs until killed (or until its parent is gone)."""
    args = (argv or sys.argv[1:])
    path, log_path, seed, next_id, next_node = args[:5]
    indexes, stream, search = ("indexes" in args[5:], "stream" in args[5:],
                               "search" in args[5:])
    log = workload.AckFile(log_path)
    server = regions.RegionServer.open(path, workload.server_options(fs=_TableNotingFS(log)))
    client = OTSClient(path, server=server)
    workload.create_table(client, indexes, stream)
    rng = random.Random(int(seed))
    if indexes and rng.random() < 1 / 3:
        log.note("I", workload.churn_index(client))
    if search:
        searchcheck.ensure(client, log)
        if rng.random() < 1 / 4:
            searchcheck.churn(client, log)
    os.write(1, _READY)
    wl = workload.Workload(client, rng, log, int(next_id), int(next_node))
    parent = os.getppid()
    while os.getppid() == parent:       # an orphan (its parent killed) stops
        wl.step()
    os._exit(3)


class _TableNotingFS(OSFileSystem):
    """The child's file system: notes in the log when a table file is
    created (``T+``, a flush or compaction writing) and closed (``T-``), so
    the parent knows which kills landed inside one.  With the real fsyncs,
    so that the windows of flushes, compactions and splits are as long as in
    production."""

    def __init__(self, log):
        self._log = log

    def open_append(self, path: str, truncate: bool = True, preallocate: int = 0):
        f = super().open_append(path, truncate, preallocate)
        if not path.endswith(".sst"):
            return f
        self._log.note("T+", path)
        return _NotedTableFile(f, self._log)


class _NotedTableFile(AppendFileProxy):
    def __init__(self, inner, log):
        super().__init__(inner)
        self._log = log

    def close(self):
        self._inner.close()
        self._log.note("T-", self.path)


class _SplitRecoveries(logging.Handler):
    """Counts the splits a reopen finished or undid: kills inside a split."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def emit(self, record):
        if record.getMessage().startswith("recovery: split of region"):
            self.count += 1


def _wait_ready(proc, timeout):
    """True once the child printed its ready line; False if it died or timed out."""
    deadline = time.monotonic() + timeout
    got = b""
    while not got.endswith(_READY):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            return False
        chunk = os.read(proc.stdout.fileno(), 64)
        if not chunk:
            return False
        got += chunk
    return True


def run(seed: int, count: int = None, seconds: float = None, dir: str = None,
        window: float = 0.4, epoch: int = 25, stats: dict = None,
        indexes: bool = False, stream: bool = False, search: bool = False) -> Summary:
    """Run ``count`` kill cycles (or as many as fit in ``seconds``; 150 when
    neither is given) in ``dir`` (harness.WorkDir).  ``stats``, if given,
    receives the operations acknowledged, the kills with one in flight, the
    kills during the child's start, inside a table write (a flush or a
    compaction) and inside a split (one the reopen rolled back or forward),
    the splits seen and the regions; with ``indexes`` (module doc) also the
    index checks and the problems they found, the indexes created and
    dropped, the kills that left entries in the change feed and those that
    stopped a back-fill; with ``stream``, streamcheck.STATS and the kills
    that left change-feed entries; with ``search``, searchcheck.STATS, the
    indexes made and dropped, the kills that stopped its back-fill and
    those that left change-feed entries."""
    if count is None and seconds is None:
        count = 150
    summary, work, rng, st = start(
        "killloop", "SIGKILL at a random moment" + (", with indexes" if indexes else "")
        + (", with a stream" if stream else "") + (", with a search index" if search else ""),
        seed,
        dir, stats, ("ops", "pending", "kills_in_start", "kills_in_table_write", "kills_in_split",
                     "splits", "regions") + (_INDEX_STATS if indexes else ())
        + (_STREAM_STATS if stream else ()) + (_SEARCH_STATS if search else ()))
    checker = streamcheck.StreamCheck(st) if stream else None
    searches = searchcheck.SearchCheck(st, seed=seed) if search else None
    flags = (["indexes"] if indexes else []) + (["stream"] if stream else []) + (
        ["search"] if search else [])
    path, log_path = work.path("store"), work.path("acks.log")
    recoveries = _SplitRecoveries()
    logging.getLogger("regions").addHandler(recoveries)
    model, next_id, regions_before = {}, 0, workload.INITIAL_REGIONS
    env = child_env()
    while work.more(summary, count, seconds):
        if os.path.exists(log_path):
            os.remove(log_path)
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, path, log_path, str(rng.getrandbits(32)),
             str(next_id), str(workload.next_node(model))] + flags,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        if rng.random() < 0.1:
            time.sleep(rng.uniform(0.0, 0.3))
            st["kills_in_start"] += 1
        elif _wait_ready(proc, _START_TIMEOUT_S):
            time.sleep(rng.uniform(0.05, window))
        elif proc.poll() is None:
            summary.failure("hangs", f"cycle {summary.cycles}: the child did not start "
                                     f"within {_START_TIMEOUT_S} s")
        proc.kill()                                     # SIGKILL
        _, err = proc.communicate(timeout=_START_TIMEOUT_S)
        summary.cycles += 1
        if proc.returncode != -signal.SIGKILL:
            summary.failure("crashes", f"cycle {summary.cycles}: the child exited with "
                                       f"{proc.returncode}: {err.decode()[-1500:]}")
        notes = {}
        acked, pending = (workload.read_log(log_path, notes) if os.path.exists(log_path)
                          else ([], None))
        st["kills_in_table_write"] += bool(set(notes.get("T+", ())) - set(notes.get("T-", ())))
        for done in notes.get("I", ()):
            st["indexes_" + done] += 1
        if search:
            searches.expect = searchcheck.expected(notes, searches.expect)
            for done in notes.get("S", ()):
                if done.endswith("ed"):
                    st["searches_" + done] += 1
        st["ops"] += len(acked)
        st["pending"] += pending is not None
        next_id += len(acked) + (pending is not None)
        try:
            # the parent's reopen is never killed: its fsyncs would only cost time
            server = regions.RegionServer.open(path, workload.server_options(
                background_workers=0, fs=NoSyncFileSystem()))
        except Exception as e:      # a store that does not reopen: the worst outcome
            summary.failure("crashes", f"cycle {summary.cycles}: reopen failed: {e!r}")
            continue
        if indexes or stream or search:
            _count_index_kills(server, st)
        model, n = workload.verify_reopened(summary, server, path, model, acked, pending,
                                            drop=summary.cycles % epoch == 0,
                                            indexes=st if indexes else None, stream=checker,
                                            search=searches)
        if search and summary.cycles % epoch == 0:
            searches.expect = False         # the table dropped, with its index
        st["splits"] += max(0, n - regions_before)
        st["regions"] = regions_before = n
    logging.getLogger("regions").removeHandler(recoveries)
    st["kills_in_split"] = recoveries.count
    return work.finish(summary)


_INDEX_STATS = ("index_checks", "index_problems", "indexes_created", "indexes_dropped",
                "kills_with_feed_left", "kills_in_backfill")
_STREAM_STATS = ("kills_with_feed_left",) + streamcheck.STATS
_SEARCH_STATS = ("kills_with_feed_left", "kills_in_search_backfill", "searches_created",
                 "searches_dropped") + searchcheck.STATS


def _count_index_kills(server, st) -> None:
    """Before the client reopens (and applies them): whether the kill left
    change-feed entries unapplied, and stopped a back-fill (an index still
    loading its base data)."""
    feed = workload.TABLE + FEED_SUFFIX
    if server.has_table(feed) and next(iter(server.scan(feed)), None) is not None:
        st["kills_with_feed_left"] += 1
    for name in server.list_tables():
        own = (server.table_attributes(name) or {}).get(INDEX_ATTRIBUTE)
        if own is not None and own.get("phase") == "ISP_FULL":
            st["kills_in_backfill"] += 1
        record = (server.table_attributes(name) or {}).get(SEARCH_ATTRIBUTE)
        if record is not None and record.get("phase") == "FULL" and \
                "kills_in_search_backfill" in st:
            st["kills_in_search_backfill"] += 1


def main(argv=None) -> int:
    ap = parser("killloop", "kill cycles (default 150)", doc=__doc__)
    ap.add_argument("--window", type=cliutil.positive_float, default=0.4,
                    help="longest run of a child after it is ready, in seconds (0.4)")
    ap.add_argument("--indexes", action="store_true",
                    help="the table carries secondary indexes, checked after every kill")
    ap.add_argument("--stream", action="store_true",
                    help="the table has a stream, read through its shards and checked "
                         "against the acknowledgements after every kill")
    ap.add_argument("--search", action="store_true",
                    help="the table has a search index, checked against the table after "
                         "every kill")
    args = ap.parse_args(argv)
    stats = {}
    summary = run(args.seed, args.count, args.seconds, args.dir, window=args.window, stats=stats,
                  indexes=args.indexes, stream=args.stream, search=args.search)
    return report(summary, stats)
