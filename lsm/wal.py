"""The log format (LevelDB's), used for the WAL and the manifest.

Format (never renumber; the prose spec with a worked example is
docs/formats/wal.md)::

    file     := block* partial_block?          blocks of BLOCK_SIZE = 32768 bytes
    block    := record* trailer?
    record   := checksum:uint32le  length:uint16le  type:uint8  payload[length]
    trailer  := 0x00{1..6}                      a block tail too short for a header
    type     := FULL 1 | FIRST 2 | MIDDLE 3 | LAST 4     (0 is reserved: zero fill)
    checksum := mask(crc32(length ‖ type ‖ payload))     bytes 4 .. 7+length of the record
    mask(c)  := ((c >> 15) | (c << 17)) + 0xa282ead8   mod 2**32

A logical record that does not fit in the rest of a block is split into a FIRST,
MIDDLE* and LAST fragment, one per block; a physical record never crosses a
block boundary.  When exactly 7 bytes are left, a non-empty record starts with
an empty FIRST fragment there.  Two deliberate differences from LevelDB: the
CRC is zlib's CRC-32 (not CRC-32C: zlib ships with Python and runs at memory
speed; both detect every single-bit and every burst error up to 32 bits), and
it covers the length bytes too, so a flipped length is detected for certain.

Recovery (``LogReader``) yields a *prefix* of the logical records, never a
sieve.  A problem (bad checksum, impossible length, unknown type, zero header,
non-zero trailer, a fragment out of sequence) is a *torn tail* when no valid
FULL or FIRST record starts anywhere after it: the rest is dropped and
reported in ``dropped_tail_bytes`` (0 when the rest is all zero bytes, e.g.
preallocation).  Otherwise data in the middle is damaged and ``CorruptionError``
names the file and offset.  Scanning for a later record is byte-by-byte (not
block-aligned), so damage to a length field is still caught.  The price: a
record torn at the tail whose payload embeds a valid log record is refused
rather than dropped (loud, never silent).

The writer is ``LogWriter``, in C with the format's constants (declared once,
ext/lsm/_log_writer.pxd, re-exported here); this module is the format's prose
and its reader.
"""
import re
import struct
from typing import Iterator

from ._log_writer import BLOCK_SIZE, FIRST, FULL, HEADER_SIZE, LAST, LogWriter, MIDDLE
from .crc import MASK_DELTA, crc32, mask_crc
from .errors import CorruptionError

__all__ = [
    "BLOCK_SIZE", "HEADER_SIZE", "FULL", "FIRST", "MIDDLE", "LAST",
    "mask_crc", "LogWriter", "LogReader", "read_log",
]

_MASK_DELTA = MASK_DELTA          # inlined below on the hot paths
_HEADER = struct.Struct("<IHB")
_CRC = struct.Struct("<I")
_LEN_TYPE = struct.Struct("<HB")
_LEN = struct.Struct("<H")
# Where a later FULL or FIRST record could start: its type byte is 6 bytes on.
_START_TYPE = re.compile(b"[\x01\x02]")


class LogReader:
    """Iterates the logical records of a whole log held in memory.

    After iteration: ``end_offset`` is the offset just past the last complete
    record (truncate there before appending to this log again, then pass it to
    ``LogWriter`` as ``offset``); ``dropped_tail_bytes`` and ``tail_reason``
    describe a dropped torn tail (0 and None for a clean end).  Iteration
    raises ``CorruptionError`` for damage followed by valid records; records
    already yielded before it are correct but the caller must not use the log.
    """

    def __init__(self, data: bytes, path: str = "<log>"):
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        elif not isinstance(data, bytes):
            raise TypeError(f"LogReader data must be bytes, got {type(data).__name__}")
        self.path = path
        self._data = data
        self.end_offset = 0
        self.dropped_tail_bytes = 0
        self.tail_reason = None

    def __iter__(self) -> Iterator[bytes]:
        data = self._data
        n = len(data)
        view = memoryview(data)
        unpack_from = _HEADER.unpack_from
        self.end_offset = 0
        self.dropped_tail_bytes = 0
        self.tail_reason = None
        pos = 0
        frags = None            # fragments of an open FIRST..LAST record
        frag_start = 0
        while True:
            left = BLOCK_SIZE - pos % BLOCK_SIZE
            if left < HEADER_SIZE:                      # block trailer: must be zero
                stop = min(pos + left, n)
                if data.count(0, pos, stop) != stop - pos:
                    return self._problem(pos, "non-zero block trailer")
                pos += left
                continue
            if pos >= n:
                if frags is not None:
                    return self._problem(frag_start, "fragmented record cut off at end of file")
                return
            if n - pos < HEADER_SIZE:
                return self._problem(pos, "truncated record header")
            crc, length, typ = unpack_from(data, pos)
            end = pos + HEADER_SIZE + length
            if length > left - HEADER_SIZE:
                return self._problem(pos, f"record length {length} crosses the block boundary")
            if end > n:
                return self._problem(pos, f"record length {length} runs past the end of the file")
            c = crc32(view[pos + 4:end])
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF != crc:
                if crc == 0 and length == 0 and typ == 0:
                    return self._problem(pos, "zero-filled region")
                return self._problem(pos, "checksum mismatch")
            if typ == FULL or typ == FIRST:
                if frags is not None:                   # this valid record follows the damage
                    raise self._corrupt(frag_start, "fragmented record without its LAST fragment",
                                        pos)
                if typ == FULL:
                    yield data[pos + HEADER_SIZE:end]
                    self.end_offset = end
                else:
                    frags = [data[pos + HEADER_SIZE:end]]
                    frag_start = pos
            elif typ == MIDDLE or typ == LAST:
                if frags is None:
                    return self._problem(pos, "fragment without a FIRST fragment")
                frags.append(data[pos + HEADER_SIZE:end])
                if typ == LAST:
                    yield b"".join(frags)
                    frags = None
                    self.end_offset = end
            else:
                return self._problem(pos, f"unknown record type {typ}")
            pos = end

    def _problem(self, pos: int, reason: str) -> None:
        """Damage at ``pos``: a torn tail, unless a valid record starts later."""
        later = self._next_record_start(pos)
        if later is not None:
            raise self._corrupt(pos, reason, later)
        data, end = self._data, self.end_offset
        if data.count(0, end) != len(data) - end:
            self.dropped_tail_bytes = len(data) - end
            self.tail_reason = f"{reason} at offset {pos}"

    def _corrupt(self, pos: int, reason: str, later: int) -> CorruptionError:
        return CorruptionError(
            f"log {self.path!r}: {reason} at offset {pos}, and a valid record follows at offset "
            f"{later}: the log is damaged before its end")

    def _next_record_start(self, pos: int):
        """Offset of the first CRC-valid FULL or FIRST record starting after ``pos``."""
        data = self._data
        n = len(data)
        view = memoryview(data)
        for m in _START_TYPE.finditer(data, pos + HEADER_SIZE):
            q = m.start() - (HEADER_SIZE - 1)
            room = BLOCK_SIZE - q % BLOCK_SIZE - HEADER_SIZE
            if room < 0:
                continue
            length = _LEN.unpack_from(data, q + 4)[0]
            end = q + HEADER_SIZE + length
            if length <= room and end <= n and \
                    mask_crc(crc32(view[q + 4:end])) == _CRC.unpack_from(data, q)[0]:
                return q
        return None


def read_log(fs, path: str) -> list:
    """All records of the log at ``path`` (a torn tail dropped; see ``LogReader``)."""
    return list(LogReader(fs.read_all(path), path))
