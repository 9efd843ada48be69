# cython: language_level=3
"""Per-API request metrics in C (``regions.metrics`` re-exports them; its
module doc describes what is counted).

Every data-API call is metered (``metered`` wraps each ``OTSClient`` API
method), so counting must cost next to nothing: ``ApiMetrics`` keeps its
counts in C arrays and a call records itself with two reads of the
monotonic clock and a few additions, no lock, no Python frame.

- ``ApiMetrics``: per-API request counts, errors by code, a latency
  histogram with fixed bucket bounds (``LATENCY_BUCKETS``, seconds), and a
  ring of per-second counts from which ``rates()`` gives requests and errors
  per second over the last minute.  ``clock`` (default ``time.monotonic``,
  then read in C) places a request in its second.
- ``metered(api, method, front, code_of, translate)``: ``method`` counted
  under ``api`` on every call, unless ``front.metering`` is set on the
  calling thread (a front end meters the whole request itself); a failed
  call counts under ``code_of(exception)``, and raises
  ``translate(exception)`` instead when that is not None.

Thread-safety: the GIL.  A request is recorded by C code that runs no Python
code once the clock is read (a custom ``clock`` is called first), so no
other thread sees a half-recorded one; ``rates`` and ``snapshot`` read
likewise.
"""
import functools
import time

from libc.math cimport floor
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

__all__ = ["ApiMetrics", "LATENCY_BUCKETS", "WINDOW_SECONDS", "metered"]

#: Upper bounds (seconds) of the latency histogram; +Inf is implicit.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: The window of ``ApiMetrics.rates``, seconds.
WINDOW_SECONDS = 60

cdef enum:
    NBOUNDS = 16                 # len(LATENCY_BUCKETS)
    WINDOW = 60                  # WINDOW_SECONDS

cdef double BOUNDS[NBOUNDS]
for _i, _b in enumerate(LATENCY_BUCKETS):
    BOUNDS[_i] = _b
assert len(LATENCY_BUCKETS) == NBOUNDS and WINDOW_SECONDS == WINDOW

# API name -> index into every ApiMetrics' histograms (process-wide; the
# names are the data API's and the front end's, a bounded set).
cdef dict _INDEX = {}
cdef list _NAMES = []


cdef Py_ssize_t _api_index(str api) except -1:
    cdef object i = _INDEX.get(api)
    if i is None:
        i = _INDEX[api] = len(_NAMES)
        _NAMES.append(api)
    return i


cdef inline double _monotonic() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef class _Histogram:
    cdef long long counts[NBOUNDS + 1]   # per bucket, not cumulative; the last is +Inf
    cdef double sum
    cdef long long count

    cdef inline void observe(self, double seconds) noexcept:
        cdef int i = 0
        while i < NBOUNDS and seconds > BOUNDS[i]:   # the first bound >= value ("le")
            i += 1
        self.counts[i] += 1
        self.sum += seconds
        self.count += 1

    cdef dict as_dict(self):
        return {"buckets": list(LATENCY_BUCKETS),
                "counts": [self.counts[i] for i in range(NBOUNDS + 1)],
                "sum": self.sum, "count": self.count}


cdef class ApiMetrics:
    """Requests, errors by code and latency per API name (module doc)."""
    cdef object _clock
    cdef bint _monotonic            # _clock is time.monotonic: read it in C
    cdef list _hists                # API index -> _Histogram or None
    cdef dict _errors               # (api, code) -> count
    cdef long long _ring_sec[WINDOW]
    cdef long long _ring_req[WINDOW]
    cdef long long _ring_err[WINDOW]
    cdef double _started

    def __init__(self, clock=time.monotonic):
        cdef int i
        self._clock = clock
        self._monotonic = clock is time.monotonic
        self._hists = []
        self._errors = {}
        for i in range(WINDOW):
            self._ring_sec[i] = -1
            self._ring_req[i] = 0
            self._ring_err[i] = 0
        self._started = self._now()

    cdef inline double _now(self) except? -1.0:
        if self._monotonic:
            return _monotonic()
        return float(self._clock())

    cdef int observe(self, Py_ssize_t index, double seconds, object error_code) except -1:
        """Count one request of the API of ``index`` (``_api_index``)."""
        cdef long long sec = <long long>floor(self._now())   # before any state changes
        cdef int slot = <int>(sec % WINDOW)
        cdef _Histogram h
        if slot < 0:
            slot += WINDOW
        while len(self._hists) <= index:
            self._hists.append(None)
        h = self._hists[index]
        if h is None:
            h = _Histogram()
            self._hists[index] = h
        h.observe(seconds)
        if self._ring_sec[slot] != sec:
            self._ring_sec[slot] = sec
            self._ring_req[slot] = 0
            self._ring_err[slot] = 0
        self._ring_req[slot] += 1
        if error_code is not None:
            key = (_NAMES[index], error_code)
            self._errors[key] = self._errors.get(key, 0) + 1
            self._ring_err[slot] += 1
        return 0

    def record(self, str api not None, double seconds, error_code=None):
        """Count one request of ``api`` that took ``seconds`` (failed with
        ``error_code`` unless None)."""
        self.observe(_api_index(api), seconds, error_code)

    def rates(self):
        """(requests/s, errors/s) over the last minute (or since start if shorter)."""
        cdef double now = self._now()
        cdef long long sec = <long long>floor(now), req = 0, err = 0
        cdef int i
        for i in range(WINDOW):
            if sec - WINDOW < self._ring_sec[i] <= sec:
                req += self._ring_req[i]
                err += self._ring_err[i]
        span = min(WINDOW_SECONDS, max(1.0, now - self._started))
        return req / span, err / span

    def snapshot(self) -> dict:
        """``{"requests": {api: n}, "errors": {api: {code: n}}, "latency": {api:
        histogram}, "requests_per_second": x, "errors_per_second": y}``; a
        histogram is ``{"buckets": bounds, "counts": per bucket (+Inf last),
        "sum": seconds, "count": n}``."""
        cdef _Histogram h
        cdef Py_ssize_t i
        cdef dict requests = {}, latency = {}, errors = {}
        rps, eps = self.rates()
        for (api, code), n in list(self._errors.items()):
            errors.setdefault(api, {})[code] = n
        for i in range(len(self._hists)):
            if self._hists[i] is not None:
                h = self._hists[i]
                requests[_NAMES[i]] = h.count
                latency[_NAMES[i]] = h.as_dict()
        return {"requests": requests, "errors": errors, "latency": latency,
                "requests_per_second": rps, "errors_per_second": eps}


def metered(str api not None, method, front, code_of, translate=None):
    """``method`` (an API method, ``self`` first) counted under ``api`` in
    ``self._api_metrics`` on every call (module doc).  ``translate(exc)``,
    if given, is what a call that failed with ``exc`` raises instead (None:
    ``exc`` itself); it is not applied under a front end, which answers
    the exception itself."""
    cdef Py_ssize_t index = _api_index(api)

    def call(self, *args, **kwargs):
        cdef double t0
        cdef ApiMetrics m
        if front.metering:
            return method(self, *args, **kwargs)
        t0 = _monotonic()
        try:
            result = method(self, *args, **kwargs)
        except Exception as e:
            other = translate(e) if translate is not None else None
            m = self._api_metrics
            m.observe(index, _monotonic() - t0, code_of(e if other is None else other))
            if other is not None:
                raise other from e
            raise
        m = self._api_metrics
        m.observe(index, _monotonic() - t0, None)
        return result
    return functools.update_wrapper(call, method)
