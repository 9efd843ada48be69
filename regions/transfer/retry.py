"""Which failures the tools retry, and how long they wait.

Only what the service says is worth another try, as the official SDK's
``DefaultRetryPolicy`` reads it (tablestore/retry.py, 6.4.8): throttling and
transient conflicts on any API (``ANY_API``), and on idempotent requests also
the service's own transient faults (``IDEMPOTENT``: timeouts, internal
errors, HTTP 500/502/503).  The importer's writes are PutRow with condition
IGNORE, which are idempotent (writing the row again leaves the same row), so
they get both lists, as the SDK's ``WriteRetryPolicy`` gives writes.
Everything else (a bad value, a missing table, a schema mismatch) fails the
row at once.  tests/test_transfer.py checks these lists against the SDK's.

Back-off: the SDK's: 0.5 s (throttling) or 0.2 s (other) doubled per try,
at most 3 s, with jitter, at most ``MAX_TRIES`` tries in all.
"""

import random

__all__ = ["ANY_API", "IDEMPOTENT", "IDEMPOTENT_STATUS", "THROTTLING", "MAX_TRIES",
           "retryable", "delay"]

ANY_API = frozenset({"OTSRowOperationConflict", "OTSNotEnoughCapacityUnit", "OTSTableNotReady",
                     "OTSPartitionUnavailable", "OTSServerBusy", "OTSOperationConflict",
                     "OTSOperationThrottled"})
#: OTSQuotaExhausted is retried only with this message (too many table operations).
QUOTA_RETRY_MESSAGE = "Too frequent table operations."
IDEMPOTENT = frozenset({"OTSTimeout", "OTSInternalServerError", "OTSServerUnavailable"})
IDEMPOTENT_STATUS = frozenset({500, 502, 503})
THROTTLING = frozenset({"OTSServerBusy", "OTSNotEnoughCapacityUnit", "OTSOperationThrottled"})
MAX_TRIES = 21  # the SDK's 20 retries after the first try
_BASE_THROTTLED, _BASE_OTHER, _MAX_DELAY = 0.5, 0.2, 3.0


def retryable(code, message=None, status=None, idempotent=True) -> bool:
    """Whether a failure with this error code / message / HTTP status is retried."""
    if code in ANY_API or (code == "OTSQuotaExhausted" and message == QUOTA_RETRY_MESSAGE):
        return True
    return idempotent and (code in IDEMPOTENT or status in IDEMPOTENT_STATUS)


def delay(tries: int, code, rng=random) -> float:
    """Seconds to wait before try ``tries + 1`` (``tries`` >= 1 made so far)."""
    base = _BASE_THROTTLED if code in THROTTLING or code == "OTSQuotaExhausted" else _BASE_OTHER
    limit = min(_MAX_DELAY, base * 2 ** (tries - 1))
    return limit * 0.5 + limit * 0.5 * rng.random()
