"""The exception hierarchy of the region server.

Every error the server raises on purpose is a ``RegionError``.  Bad arguments
raise the built-in ``TypeError`` / ``ValueError`` naming the argument, before
anything is changed.  Errors of the storage engine (``lsm.LSMError``) pass
through unchanged: they concern one region's files, not the region layer.
This module passes them on, with the engine's reading of them (``reason``,
``is_retryable``), so that the layers above catch them without importing lsm.
"""
from lsm.errors import (ClosedError, CorruptionError, LSMError, ReadOnlyError,  # noqa: F401
                        StorageError, reason)
from lsm.health import is_retryable  # noqa: F401 -- passed on (see above)

__all__ = [
    "RegionError", "UnknownTableError", "TableExistsError", "UnknownRegionError",
    "SplitError", "HotPartitionError", "DescriptorBudgetError", "ServerClosedError", "RegionBusyError",
    "MetaCorruptionError", "InvariantError", "PartialWriteError",
    # the engine's, passed on
    "LSMError", "CorruptionError", "StorageError", "ClosedError", "ReadOnlyError", "reason",
    "is_retryable",
]


class RegionError(Exception):
    """Base class of every error raised by the region layer."""


class UnknownTableError(RegionError):
    """The named table does not exist."""


class TableExistsError(RegionError):
    """``create_table`` was given the name of an existing table."""


class UnknownRegionError(RegionError):
    """No open region of the table has the given region id."""


class SplitError(RegionError):
    """A requested split cannot be done (no split point, hot partition key, ...).

    The region is left exactly as it was.
    """


class HotPartitionError(SplitError):
    """No split point respects the table's split restriction: the region holds
    one key group (one partition key value), so it cannot split.  The message
    names the key; the server reports it as the region's split blocker."""


class DescriptorBudgetError(RegionError):
    """A new region would pass the server's file-descriptor budget
    (regions/descriptors.py): refused before any file is made."""


class ServerClosedError(RegionError):
    """The server was used after ``close()``."""


class RegionBusyError(RegionError):
    """An operation waited longer than ``ServerOptions.busy_wait_seconds`` for a
    region in transition (a split that neither finished nor rolled back)."""


class MetaCorruptionError(RegionError):
    """The meta file fails its structural checks: the server refuses to guess."""


class InvariantError(RegionError):
    """``RegionServer.check()`` found a broken invariant (the message says which)."""


class PartialWriteError(RegionError):
    """A batch spanning regions failed after some of its regions' parts were
    applied (each part is atomic).  ``applied_keys`` holds every key of the
    applied parts; the failure is the ``__cause__``.  A batch whose first part
    fails raises that failure itself: nothing was applied."""

    def __init__(self, message, applied_keys):
        super().__init__(message)
        self.applied_keys = applied_keys
