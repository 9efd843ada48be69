"""The one exception hierarchy of the lsm engine.

Every error the engine raises on purpose is an ``LSMError``.  Bad arguments
are the exception: they raise the built-in ``TypeError`` / ``ValueError``
naming the argument, before anything is changed.
"""

import errno
import os

__all__ = ["LSMError", "CorruptionError", "StorageError", "FileMissingError", "ClosedError",
           "ReadOnlyError", "storage_error"]


class LSMError(Exception):
    """Base class of every error raised by the engine."""


class CorruptionError(LSMError):
    """Stored bytes fail a checksum, a magic number or a structural check.

    Raised instead of ever returning a wrong value.
    """


class StorageError(LSMError, OSError):
    """The file system failed (write, fsync, rename, ...).

    After a failed write or fsync the store refuses further writes until it
    resumes (lsm/health.py) or is reopened: the state of the failed record
    on disk is unknown.
    """


class FileMissingError(StorageError, FileNotFoundError):
    """The file or directory does not exist (ENOENT)."""


def storage_error(exc: OSError, what: str, path: str, path2: str = None) -> StorageError:
    """Map an ``OSError`` to the engine's ``StorageError``: the one place for it
    (the file systems of lsm/fs.py and lsm/memfs.py, and the C append file,
    ext/lsm/_fileio.pyx, raise what it makes).

    Keeps ``errno``; the message names the operation and the path(s).
    """
    cls = FileMissingError if exc.errno == errno.ENOENT else StorageError
    err = cls(exc.errno, f"{what} failed: {exc.strerror or exc}", path, None, path2)
    err.__cause__ = exc
    return err


class ClosedError(LSMError):
    """The store (or an iterator or snapshot of it) was used after close()."""


class ReadOnlyError(LSMError):
    """A write reached a store that refuses writes after an earlier failure.

    ``cause``: that failure (None if unknown); ``retryable``: whether the
    store resumes by itself once the resource is back (lsm/health.py says
    which failures are); ``reason``: the cause in a few words, the OS's own
    (``No space left on device``) for a file-system error.
    """

    def __init__(self, message, cause=None, retryable=False):
        super().__init__(message)
        self.cause = cause
        self.retryable = retryable

    @property
    def reason(self) -> str:
        return reason(self.cause if self.cause is not None else self)


def reason(exc: BaseException) -> str:
    """A failure's cause in a few words: the OS's text for a file-system
    error (``No space left on device``), else the message."""
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    return str(exc)
