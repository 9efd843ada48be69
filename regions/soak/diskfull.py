"""Experiment: the disk fills and empties under writers and splits; writes resume by themselves.

One embedded ``OTSClient`` on a table that starts as one region and splits
as it grows (64 KiB memtables, regions split from 256 KiB), its stores on a
``FaultInjectionFS`` whose ``capacity`` plays the disk.  ``writers``
threads each put rows of their own keys (``w<id>-<seq>``, a value derived
from the key) and, after each, INCREMENT a counter row of their own.  Each
cycle the disk fills (``capacity`` set a little above what is used), stays
full for ``FULL_S`` while writes are refused and splits fail, then empties
(``capacity`` None); the time from the space's return to the first write
acknowledged again is the *resume* time.  A write is *acknowledged* (it
returned), *refused* (503 OTSPartitionUnavailable naming the cause: a
degraded region refused it before its WAL) or *uncertain* (any other
error: the write that found the disk full may or may not have landed).

Checked at the end, after a reopen on the plain file system: every
acknowledged row reads its value (no loss); every row read was written with
that value, acknowledged or not (no phantom: a refused or failed write may
be there or not); each counter lies between the increments
acknowledged and those acknowledged plus uncertain (no double); the
refusals name the cause; ``RegionServer.check()`` passes; and in each cycle
writes resumed by themselves within ``RESUME_LIMIT_S`` of the space's
return (a slower one is a hang).

The descriptors experiment (regions/soak/descriptors.py) runs the same
writers and checks with descriptors that run out and come back instead.

    python -m regions.soak diskfull --seed 1 --count 20
"""
import os
import random
import shutil
import statistics
import threading
import time

import lsm.fs
import regions
from lsm.faultfs import FaultInjectionFS
from regions.tablestore import (CapacityUnit, OTSClient, OTSServiceError, ReservedThroughput, Row,
                                TableMeta, TableOptions)

from . import Summary, _cli
from .ioerrors import scratch_dir

__all__ = ["run", "main", "Writers", "exercise", "server_options", "verify", "report"]

#: Seconds the disk stays full in each cycle.
FULL_S = 0.5
#: Seconds writes run after the space returns, before the next cycle.
FREE_S = 0.7
#: A resume slower than this is a hang (the store retries every second at most).
RESUME_LIMIT_S = 10.0
TABLE = "t"


def server_options(fs=None) -> regions.ServerOptions:
    """Small memtables and regions, so that flushes and splits happen within seconds."""
    return regions.ServerOptions(fs=fs, memtable_bytes=64 << 10, max_region_bytes=256 << 10,
                                 initial_region_bytes=256 << 10, maintenance_interval=0.02)


class Writers:
    """``n`` threads writing rows and counters through ``client`` (see the
    module doc) and the model of their outcomes; ``resumed_after(t)``: how
    long after ``t`` the first write was acknowledged."""

    def __init__(self, client, n: int, seed: int):
        self.client, self.n = client, n
        self.acked, self.uncertain = set(), set()
        self.incr_acked, self.incr_uncertain = [0] * n, [0] * n
        self.refused, self.causes, self.other_errors = 0, set(), []
        self.last_ack = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._threads = [threading.Thread(target=self._loop, args=(w,), daemon=True) for w in range(n)]

    @staticmethod
    def value(key: str) -> str:
        return key * 4

    def start(self):
        for t in self._threads:
            t.start()

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def _call(self, fn):
        """'acked', 'refused' or 'uncertain'."""
        try:
            fn()
            return "acked"
        except OTSServiceError as e:
            with self._lock:
                if e.code == "OTSPartitionUnavailable":
                    self.refused += 1
                    self.causes.add(e.message.split(":", 1)[1].split(";")[0].strip())
                    return "refused"
                self.other_errors.append(f"{e.code}: {e.message}"[:200])
            return "uncertain"
        except Exception as e:  # noqa: BLE001 - counted; the checks decide
            with self._lock:
                self.other_errors.append(f"{type(e).__name__}: {e}"[:200])
            return "uncertain"

    def _loop(self, w):
        c, seq = self.client, 0
        while not self._stop.is_set():
            key = f"w{w}-{seq:07d}"
            seq += 1
            out = self._call(lambda: c.put_row(TABLE, Row([("k", key)], [("v", self.value(key))])))
            with self._lock:
                if out == "acked":
                    self.acked.add(key)
                    self.last_ack = time.monotonic()
                elif out == "uncertain":
                    self.uncertain.add(key)
            if out == "refused":
                # (the write that found the disk full is answered the same
                # 503 as one a degraded region refused: either may be
                # there after, never with another value)
                with self._lock:
                    self.uncertain.add(key)
                time.sleep(0.002)
                continue
            out = self._call(lambda: c.update_row(TABLE, Row([("k", f"count-{w}")],
                                                             {"increment": [("n", 1)]}), None))
            with self._lock:
                if out == "acked":
                    self.incr_acked[w] += 1
                else:
                    self.incr_uncertain[w] += 1

    def resumed_after(self, t0: float, limit: float):
        """Seconds from ``t0`` until every region accepts writes again and a
        write was acknowledged after it (None past ``limit``)."""
        deadline = t0 + limit
        server = self.client._server
        while time.monotonic() < deadline:
            if self.last_ack > t0 and all(r.db.health()["state"] == "ok"
                                          for r in server.table_layout(TABLE)[1]):
                return time.monotonic() - t0
            time.sleep(0.002)
        return None

    def check(self, client, summary: Summary) -> None:
        """The end checks of the module doc, through ``client`` (reopened)."""
        seen = {}
        start, end = [("k", regions.tablestore.INF_MIN)], [("k", regions.tablestore.INF_MAX)]
        while start is not None:
            _, start, rows, _ = client.get_range(TABLE, "FORWARD", start, end, limit=5000)
            for r in rows:
                seen[r.primary_key[0][1]] = r
        for key in self.acked:
            r = seen.get(key)
            if r is None or r.attribute_columns[0][1] != self.value(key):
                summary.failure("losses", f"acknowledged {key} reads {r!r:.80}")
            summary.verified += 1
        for key, r in seen.items():
            if key.startswith("count-"):
                w = int(key[6:])
                n = dict((c[0], c[1]) for c in r.attribute_columns).get("n", 0)
                if not self.incr_acked[w] <= n <= self.incr_acked[w] + self.incr_uncertain[w]:
                    summary.failure("losses" if n < self.incr_acked[w] else "wrong",
                                    f"counter {w} is {n}: {self.incr_acked[w]} acknowledged, "
                                    f"{self.incr_uncertain[w]} uncertain")
                summary.verified += 1
            elif key not in self.acked and (key not in self.uncertain
                                            or r.attribute_columns[0][1] != self.value(key)):
                summary.failure("wrong", f"{key} was never written (acknowledged or uncertain)")


def make_table(client):
    client.create_table(TableMeta(TABLE, [("k", "STRING")]), TableOptions(),
                        ReservedThroughput(CapacityUnit(0, 0)))


def report(summary: Summary, writers: Writers, resumes: list, cause: str, regions_: int) -> None:
    """The figures every run reports, and the checks on the refusals."""
    if writers.refused and cause not in writers.causes:
        summary.failure("wrong", f"refusals named {sorted(writers.causes)}, not {cause!r}")
    summary.figures = {
        "regions": regions_, "acknowledged": len(writers.acked), "refused": writers.refused,
        "uncertain": len(writers.uncertain), "causes": sorted(writers.causes),
        "resume_median_s": round(statistics.median(resumes), 3) if resumes else None,
        "resume_max_s": round(max(resumes), 3) if resumes else None,
        "other_errors": writers.other_errors[:3],
    }


def verify(path, writers, summary):
    """Reopen on the plain file system and run the end checks."""
    client = OTSClient(path, server_options=server_options())
    try:
        writers.check(client, summary)
        client._server.check()
    finally:
        client.close()


def exercise(client, summary, seed, count, seconds, squeeze, what, writers=4):
    """Writers on ``client`` through ``count`` cycles (default 10, within
    ``seconds``): ``squeeze()`` takes the resource away and returns what
    gives it back; ``what`` names it in a hang.  Closes ``client``; returns
    (the Writers, the resume times, the regions at the end)."""
    start = time.monotonic()
    make_table(client)
    w = Writers(client, writers, seed)
    rng = random.Random(seed)
    resumes = []
    try:
        w.start()
        time.sleep(FREE_S)
        for _ in range(count or 10):
            if seconds is not None and time.monotonic() - start > seconds:
                break
            release = squeeze()
            time.sleep(FULL_S * rng.uniform(0.5, 1.5))
            freed = time.monotonic()
            release()
            took = w.resumed_after(freed, RESUME_LIMIT_S)
            if took is None:
                summary.failure("hangs", f"cycle {summary.cycles}: regions still refusing writes "
                                         f"{RESUME_LIMIT_S} s after {what} returned")
                break
            resumes.append(took)
            summary.cycles += 1
            time.sleep(FREE_S)
    finally:
        w.stop()
        n_regions = len(client._server.table_layout(TABLE)[1])
        client.close()
    return w, resumes, n_regions


def run(seed=0, count=None, seconds=None, dir=None) -> Summary:
    """``count`` fill-and-empty cycles (default 10) within ``seconds``."""
    summary = Summary("diskfull", seed, "disk fills and empties under writers and splits")
    rng = random.Random(seed)
    root = scratch_dir(dir)
    path = os.path.join(root, "db")
    start = time.monotonic()
    fs = FaultInjectionFS(lsm.fs.OSFileSystem())

    def fill():
        fs.capacity = fs.used() + rng.randrange(0, 256 << 10)
        return lambda: setattr(fs, "capacity", None)
    try:
        w, resumes, n_regions = exercise(OTSClient(path, server_options=server_options(fs)), summary,
                                         seed, count, seconds, fill, "the space")
        fs.close_all()
        verify(path, w, summary)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(summary, w, resumes, "No space left on device", n_regions)
    summary.seconds = time.monotonic() - start
    return summary


def main(argv=None) -> int:
    return _cli.main("diskfull", __doc__, run, argv, "fill-and-empty cycles (default 10)",
                     lambda s: f"  figures: {s.figures}")
