"""The store's health after a failed write, flush or compaction (RocksDB's ErrorHandler).

States and what each means for the store's users::

    OK --failure--> DEGRADED --resume succeeds--> OK
                       |  ^ resume fails: again, after a longer wait
                       |--'
    OK or DEGRADED --failure that no retry can mend--> STOPPED

* OK: reads and writes are served.
* DEGRADED (a *retryable* failure: the file system ran out of something that
  comes back, ``RETRYABLE_ERRNOS``, or an ``EIO`` of a write): reads are
  served; writes are refused at once with ``ReadOnlyError`` naming the cause
  (``retryable`` true); the store resumes by itself, retrying what failed
  after ``Options.resume_retry_seconds``, doubling up to
  ``resume_retry_max_seconds``, as long as it fails for a retryable reason.
  ``DB.resume()`` retries at once.
* STOPPED (anything else: corruption, a read's ``EIO``, a permission
  refused, a bug): reads are served, writes refused (``retryable`` false);
  no retry is made by itself.  ``DB.resume()`` tries once more unless the
  cause is corruption, which no resume can mend (``fatal``).

What a resume does is the DB's (lsm/background.py, ``_try_resume``): the
work that failed is redone so that nothing acknowledged is lost and nothing
is applied twice.  This module only classifies, times the retries, builds
the refusal and logs: one line at each change of state, with the cause,
never one per refused write.

Thread-safety: the DB calls every method with its ``_mutex`` held, except
``refusal`` (which reads two fields, each a single load).
"""
import errno
import logging
import time

from .errors import CorruptionError, ReadOnlyError

__all__ = ["Health", "OK", "DEGRADED", "STOPPED", "RETRYABLE_ERRNOS", "is_retryable"]

log = logging.getLogger("lsm")

OK, DEGRADED, STOPPED = "ok", "degraded", "stopped"

#: Errors of a file system that ran out of something that comes back
#: (space, descriptors, memory) or was briefly busy: a retry can succeed.
RETRYABLE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE,
                              errno.EAGAIN, errno.ENOMEM, errno.EINTR, errno.EBUSY})

#: Operations (the ``"<op> failed: ..."`` prefix of a StorageError, lsm/fs.py)
#: that only read: their EIO is a damaged medium, not a write to retry.
_READS = ("read", "open for read", "listdir", "stat")


def is_retryable(exc: BaseException) -> bool:
    """Whether the failure ``exc`` may go away by itself (see the module doc):
    a retryable errno, or EIO of an operation that writes."""
    if isinstance(exc, CorruptionError) or not isinstance(exc, OSError):
        return False
    if exc.errno in RETRYABLE_ERRNOS:
        return True
    if exc.errno == errno.EIO:
        what = str(exc.strerror or "").partition(" failed:")[0]
        return what not in _READS
    return False


class Health:
    """One store's health (see the module doc).  ``name``: what the log calls it."""

    def __init__(self, name: str, retry_seconds: float, retry_max_seconds: float, clock=time.monotonic):
        self.name = name
        self.state = OK
        self.cause = None           # the exception that made it leave OK
        self.where = None           # what failed: "WAL", "flush", "compaction", "resume"
        self.since = None           # clock time it left OK
        self.attempts = 0           # resumes tried since
        self.next_try = None        # clock time of the next automatic resume (DEGRADED)
        self._min, self._max, self._clock = retry_seconds, retry_max_seconds, clock
        self._delay = retry_seconds

    # -- changes of state --------------------------------------------------
    def failed(self, exc: BaseException, where: str) -> None:
        """``where`` failed with ``exc``: leave OK (or stay out of it)."""
        now = self._clock()
        state = DEGRADED if is_retryable(exc) else STOPPED
        if self.state == OK:
            self.since, self.attempts, self._delay = now, 0, self._min
        elif self.state == STOPPED and state == DEGRADED:
            return      # a retryable failure never hides a fatal one
        changed = state != self.state or type(exc) is not type(self.cause) \
            or getattr(exc, "errno", None) != getattr(self.cause, "errno", None)
        self.state, self.cause, self.where = state, exc, where
        self.next_try = now + self._delay if state == DEGRADED else None
        if changed:
            if state == DEGRADED:
                log.warning("%s: %s failed (%s): writes refused, reads served; resuming by itself "
                            "(next try in %.2g s)", self.name, where, exc, self._delay)
            else:
                log.error("%s: %s failed (%s): writes refused until %s", self.name, where, exc,
                          "the data is repaired" if isinstance(exc, CorruptionError)
                          else "resume() or a reopen")

    def retry_failed(self, exc: BaseException) -> None:
        """A resume failed with ``exc``: wait twice as long before the next."""
        self.attempts += 1
        self._delay = min(self._delay * 2, self._max)
        self.failed(exc, self.where or "resume")

    def resumed(self) -> None:
        """Back to OK."""
        if self.state != OK:
            log.warning("%s: resumed after %.1f s and %d retries (was: %s failed: %s); writes accepted",
                        self.name, self._clock() - self.since, self.attempts + 1, self.where, self.cause)
        self.state, self.cause, self.where, self.since, self.next_try = OK, None, None, None, None
        self.attempts, self._delay = 0, self._min

    # -- queries -------------------------------------------------------------
    def due(self) -> float:
        """Seconds until the next automatic resume (<= 0: now); None when none is due."""
        if self.state != DEGRADED:
            return None
        return self.next_try - self._clock()

    def refusal(self, failure: BaseException) -> ReadOnlyError:
        """The error a refused write raises (``failure``: the DB's recorded one,
        in case this health has not classified it yet)."""
        cause = self.cause if self.cause is not None else failure
        retryable = is_retryable(cause)
        if retryable:
            how = "resuming by itself once the resource is back"
        elif isinstance(cause, CorruptionError):
            how = "stopped: stored data is corrupt"
        else:
            how = "stopped until resume() or a reopen"
        return ReadOnlyError(f"DB refuses writes after an earlier failure: {cause} ({how})",
                             cause=cause, retryable=retryable)
