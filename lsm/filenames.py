"""Names of the files in a store directory: the one place that knows them.

    CURRENT            name of the live manifest (switched atomically)
    LOCK               held (flock) while the store is open
    MANIFEST-NNNNNN    log of version edits (lsm/version.py)
    NNNNNN.log         write-ahead log (lsm/wal.py framing, lsm/batch.py records)
    NNNNNN.sst         table (lsm/sstable.py)
"""
import os
import re

__all__ = ["CURRENT", "LOCK", "log_name", "table_name", "manifest_name", "parse"]

CURRENT = "CURRENT"
LOCK = "LOCK"

_PATTERN = re.compile(r"^(?:(\d+)\.(log|sst)|MANIFEST-(\d+))$")


def log_name(number: int) -> str:
    return f"{number:06d}.log"


def table_name(number: int) -> str:
    return f"{number:06d}.sst"


def manifest_name(number: int) -> str:
    return f"MANIFEST-{number:06d}"


def parse(name: str):
    """``(kind, number)`` for a store file name, kind in log/sst/manifest; None otherwise.

    >>> parse("/db/000012.sst"), parse("MANIFEST-000003"), parse("CURRENT")
    (('sst', 12), ('manifest', 3), None)
    """
    m = _PATTERN.match(os.path.basename(name))
    if not m:
        return None
    if m.group(3) is not None:
        return "manifest", int(m.group(3))
    return m.group(2), int(m.group(1))
