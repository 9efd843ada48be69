"""lsm: a LevelDB-style LSM storage engine in Python with Cython speedups.

>>> import lsm, tempfile
>>> with lsm.DB.open(tempfile.mkdtemp()) as db:
...     db.put(b"k", b"v")
...     db.get(b"k")
b'v'

Keys and values are ``bytes``; keys sort bytewise.  See ``lsm.db`` for the
durability contract and ``lsm.options.Options`` for every tunable.
"""
from .background import CompactionPacer
from .batch import WriteBatch
from .db import DB, Snapshot
from .errors import ClosedError, CorruptionError, LSMError, ReadOnlyError, StorageError
from .memtable import PrefixExtractor, fixed_prefix
from .options import Options
from .purepython import PUREPYTHON

__all__ = [
    "DB", "Snapshot", "WriteBatch", "Options", "CompactionPacer", "PrefixExtractor", "fixed_prefix",
    "LSMError", "CorruptionError", "StorageError", "ClosedError", "ReadOnlyError",
    "PUREPYTHON",
]
