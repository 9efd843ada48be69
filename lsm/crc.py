"""The masked CRC of LevelDB, shared by the log format (lsm/wal.py) and the
table format (lsm/sstable.py, lsm/block.py): the one place that defines it.

A CRC stored inside data that is itself checksummed is masked (rotated and
offset) so that a CRC over a CRC stays strong.  The checksum itself is
zlib's crc32 (see docs/formats/wal.md for why not crc32c), computed by
``crc32`` here: ``lsm._crc32.crc32``, which folds long buffers with
PCLMULQDQ (ext/lsm/crc32_fold.h; measured against zlib's in
docs/performance.md, 2026-11-25, stop 24) and gives the same values as
``zlib.crc32``.  ext/lsm/_coding.pxd holds the C
twin of the mask (tests/test_dbformat.py checks they agree).
"""
from ._crc32 import crc32

__all__ = ["MASK_DELTA", "crc32", "mask_crc", "unmask_crc"]

MASK_DELTA = 0xA282EAD8   # never change: written to disk


def mask_crc(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + MASK_DELTA) & 0xFFFFFFFF


def unmask_crc(masked: int) -> int:
    rot = (masked - MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF
