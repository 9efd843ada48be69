"""Counters the operator's view reads: per-API requests, errors and latency,
per-region rates, and the split history.

Every number the console, ``/metrics`` and library users see is counted
here once (or in the lsm store / ``Region`` it reads) and handed out as
plain dicts by ``RegionServer.metrics()`` and ``OTSClient.metrics()``.
Nothing here knows about HTTP or Prometheus; the exposition is in
``regions.otsserver.metrics``.

- ``ApiMetrics`` (in C, ``regions._meter``: every API call is counted):
  per-API request counts, errors by code, a latency histogram with fixed
  bucket bounds (``LATENCY_BUCKETS``, seconds), and a ring of per-second
  counts from which ``rates()`` gives requests and errors per second over
  the last minute.
- ``RateTracker``: per-second rates of cumulative counters (a region's
  reads and writes), from samples taken at most once a second whenever the
  counters are read; a rate is None until two samples a second apart exist.
- ``SplitHistory``: splits started / finished / rolled back since the server
  started and their durations (a histogram).  The splits themselves (parent,
  daughters, split key, time, duration) are kept in meta, the last
  ``regions.meta.SPLIT_HISTORY`` of each table, so they survive a restart
  (``MetaDoc.split_history``; ``RegionServer.metrics()`` reports them).

Thread-safety: every class may be used from any thread (``ApiMetrics`` by
the GIL, the others with one lock each, held for a few dictionary updates).
"""
import collections
import threading
import time
from bisect import bisect_left as _bisect_left

from ._meter import LATENCY_BUCKETS, WINDOW_SECONDS, ApiMetrics

__all__ = ["ApiMetrics", "RateTracker", "SplitHistory", "LATENCY_BUCKETS", "SPLIT_BUCKETS",
           "WINDOW_SECONDS"]

#: Upper bounds (seconds) of the split duration histogram.
SPLIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _histogram(buckets):
    return {"buckets": list(buckets), "counts": [0] * (len(buckets) + 1), "sum": 0.0, "count": 0}


def _observe(h, value):
    # The first bucket whose bound is >= value (Prometheus' "le"); per
    # bucket, not cumulative; the last one is +Inf.
    h["counts"][_bisect_left(h["buckets"], value)] += 1
    h["sum"] += value
    h["count"] += 1


def _copy_histogram(h):
    return {"buckets": list(h["buckets"]), "counts": list(h["counts"]), "sum": h["sum"],
            "count": h["count"]}


class RateTracker:
    """Per-second rates of cumulative counters, by key (module docstring)."""

    def __init__(self, window: float = WINDOW_SECONDS, clock=time.monotonic):
        self._window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._samples = {}         # key -> deque of (t, values)

    def observe(self, key, values):
        """Record ``values`` (a tuple of counters) now; returns their rates per
        second over the window (a tuple of floats), or None if no earlier
        sample at least a second old exists yet."""
        now = self._clock()
        with self._lock:
            q = self._samples.get(key)
            if q is None:
                q = self._samples[key] = collections.deque()
            if not q or now - q[-1][0] >= 1.0:
                q.append((now, values))
            while len(q) > 2 and now - q[1][0] >= self._window:
                q.popleft()
            t0, v0 = q[0]
        if now - t0 < 1.0:
            return None
        return tuple(max(0, a - b) / (now - t0) for a, b in zip(values, v0))

    def forget(self, keep) -> None:
        """Drop the samples of every key not in ``keep``."""
        with self._lock:
            for key in [k for k in self._samples if k not in keep]:
                del self._samples[key]


class SplitHistory:
    """Split counters and the split duration histogram since the server
    started (module docstring).  The splits themselves are kept in meta
    (``MetaDoc.split_history``): they survive a restart."""

    def __init__(self):
        self._lock = threading.Lock()
        self.started = 0
        self.finished = 0
        self.rolled_back = 0
        self._durations = _histogram(SPLIT_BUCKETS)

    def start(self) -> None:
        """A split began."""
        with self._lock:
            self.started += 1

    def finish(self, took: float) -> None:
        """A split finished after ``took`` seconds."""
        with self._lock:
            self.finished += 1
            _observe(self._durations, took)

    def rollback(self, took: float) -> None:
        """A split was rolled back after ``took`` seconds."""
        with self._lock:
            self.rolled_back += 1
            _observe(self._durations, took)

    def snapshot(self) -> dict:
        """``{"started", "finished", "rolled_back", "duration": histogram}``."""
        with self._lock:
            return {"started": self.started, "finished": self.finished,
                    "rolled_back": self.rolled_back,
                    "duration": _copy_histogram(self._durations)}
