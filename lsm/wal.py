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
"""
import re
import struct
from typing import Iterator
from zlib import crc32

from .crc import MASK_DELTA, mask_crc
from .errors import ClosedError, CorruptionError, ReadOnlyError

__all__ = [
    "BLOCK_SIZE", "HEADER_SIZE", "FULL", "FIRST", "MIDDLE", "LAST",
    "mask_crc", "LogWriter", "LogReader", "read_log",
]

BLOCK_SIZE = 32768
HEADER_SIZE = 7
FULL = 1      # never renumber: written to disk
FIRST = 2     # never renumber
MIDDLE = 3    # never renumber
LAST = 4      # never renumber

_MASK_DELTA = MASK_DELTA          # inlined below on the hot paths
_HEADER = struct.Struct("<IHB")
_CRC = struct.Struct("<I")
_LEN_TYPE = struct.Struct("<HB")
_LEN = struct.Struct("<H")
_ZEROS = bytes(HEADER_SIZE)
# Where a later FULL or FIRST record could start: its type byte is 6 bytes on.
_START_TYPE = re.compile(b"[\x01\x02]")



class LogWriter:
    """Appends logical records to an ``AppendFile``.

    Each ``add_record`` builds every fragment of the record and hands them to
    ``f.append`` in one call (one ``write`` syscall): once it returns the
    record is with the OS.  After a failed append the writer refuses further
    records (``ReadOnlyError``): the file's tail is unknown, and a record
    written after torn bytes would turn a droppable tail into mid-log damage.

    Not thread-safe: the owner serializes calls (the DB's write path does).
    The writer owns ``f``: ``close()`` closes it.
    """

    __slots__ = ("_f", "room", "_error")

    def __init__(self, f, offset: int = 0):
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"LogWriter offset must be an int >= 0, got {offset!r}")
        self._f = f
        #: Bytes left in the current block (an attribute, not a method: the
        #: DB reads it on every write).  A FULL record of up to ``room -
        #: HEADER_SIZE`` payload bytes fits without fragments.
        self.room = BLOCK_SIZE - offset % BLOCK_SIZE
        self._error = None

    @property
    def size(self) -> int:
        """Bytes in the file (what a later ``LogWriter`` would take as ``offset``)."""
        return self._f.size

    def add_record(self, payload) -> None:
        if self._error is not None:
            self._refuse()
        if type(payload) is not bytes:
            payload = self._as_bytes(payload)
        n = len(payload)
        bo = BLOCK_SIZE - self.room
        if n + HEADER_SIZE <= BLOCK_SIZE - bo:          # the common case: one FULL record
            lt = _LEN_TYPE.pack(n, FULL)
            c = crc32(payload, crc32(lt))
            rec = _CRC.pack((((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF) + lt + payload
            new_offset = bo + HEADER_SIZE + n
        else:
            rec, new_offset = self._fragments(payload, bo)
        try:
            self._f.append(rec)
        except BaseException as e:
            self._error = e
            raise
        self.room = BLOCK_SIZE - new_offset

    def append_framed(self, rec: bytes) -> None:
        """Append one FULL physical record built elsewhere (lsm._record's
        C twin of ``add_record``'s fast path); it must fit in ``room``."""
        if self._error is not None:
            self._refuse()
        try:
            self._f.append(rec)
        except BaseException as e:
            self._error = e
            raise
        self.room -= len(rec)

    @staticmethod
    def _as_bytes(payload) -> bytes:
        if isinstance(payload, (bytes, bytearray, memoryview)):
            return bytes(payload)
        raise TypeError(f"log record payload must be bytes, got {type(payload).__name__}")

    @staticmethod
    def _fragments(payload: bytes, bo: int):
        """All physical records (and block trailers) of one logical record."""
        parts = []
        view = memoryview(payload)
        n = len(payload)
        pos = 0
        begin = True
        while True:
            left = BLOCK_SIZE - bo
            if left < HEADER_SIZE:                      # zero trailer, next block
                parts.append(_ZEROS[:left])
                bo = 0
                left = BLOCK_SIZE
            frag = min(n - pos, left - HEADER_SIZE)
            end = pos + frag == n
            if begin:
                typ = FULL if end else FIRST
                begin = False
            else:
                typ = LAST if end else MIDDLE
            chunk = view[pos:pos + frag]
            lt = _LEN_TYPE.pack(frag, typ)
            parts.append(_CRC.pack(mask_crc(crc32(chunk, crc32(lt)))) + lt)
            parts.append(chunk)
            bo += HEADER_SIZE + frag
            pos += frag
            if end:
                return b"".join(parts), bo

    def _refuse(self):
        if isinstance(self._error, ClosedError):
            raise ClosedError("add_record on a closed LogWriter")
        raise ReadOnlyError(f"log writer refuses records after a failed append: {self._error!r}")

    def sync(self) -> None:
        if self._error is not None:
            self._refuse()
        self._f.sync()

    def close(self) -> None:
        """Close the file (idempotent); unsynced bytes stay with the OS."""
        if not isinstance(self._error, ClosedError):
            self._error = ClosedError("closed")
            self._f.close()


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
