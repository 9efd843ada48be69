"""The log format: round trips, golden bytes, and the recovery contract.

Expected bytes are derived here from the format (zlib's CRC-32 and the mask
spelled out below), independently of lsm.wal's own helpers.
"""
import random
import struct
import zlib

import pytest

from lsm.errors import ClosedError, CorruptionError, ReadOnlyError, StorageError
from lsm.faultfs import FaultInjectionFS
from lsm.fs import OSFileSystem
from lsm.wal import BLOCK_SIZE, LogReader, LogWriter, read_log
from lsm.memfs import MemoryAppendFile

B = 32768   # the block size, spelled out: the format fixes it
H = 7       # header: checksum uint32le, length uint16le, type uint8


def masked_crc(body: bytes) -> int:
    c = zlib.crc32(body)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def phys(typ: int, payload: bytes) -> bytes:
    """One physical record, built by hand from the format."""
    body = struct.pack("<HB", len(payload), typ) + payload
    return struct.pack("<I", masked_crc(body)) + body


def write_log(records, offset_data=b""):
    """Write records; returns (bytes, end offset of each record)."""
    f = MemoryAppendFile(offset_data)
    w = LogWriter(f, len(offset_data))
    ends = []
    for r in records:
        w.add_record(r)
        ends.append(f.size)
    return f.getvalue(), ends


def read(data, path="<log>"):
    r = LogReader(data, path)
    return list(r), r


# -- format and round trips ---------------------------------------------------

def test_block_size_is_32k():
    assert BLOCK_SIZE == B


def test_golden_bytes_of_one_full_record():
    data, _ = write_log([b"abc"])
    crc = masked_crc(b"\x03\x00" + b"\x01" + b"abc")   # length 3 LE, type FULL, payload
    expected = struct.pack("<I", crc) + bytes([0x03, 0x00, 0x01]) + b"abc"
    assert data == expected
    assert len(data) == 10


def test_worked_example_of_docs_formats_wal_md():
    data, ends = write_log([b"abc", b"x" * 32760])
    assert ends == [10, 32784]
    # The documented header bytes; each checksum re-derived from zlib here.
    assert data[0:10] == bytes.fromhex("f675f3fb 030001 616263")
    assert data[0:4] == struct.pack("<I", masked_crc(bytes.fromhex("030001") + b"abc"))
    assert data[10:17] == bytes.fromhex("e462aaab ef7f02")
    assert data[10:14] == struct.pack("<I", masked_crc(bytes.fromhex("ef7f02") + b"x" * 32751))
    assert data[17:B] == b"x" * 32751
    assert data[B:B + 7] == bytes.fromhex("91b95510 090004")
    assert data[B:B + 4] == struct.pack("<I", masked_crc(bytes.fromhex("090004") + b"x" * 9))
    assert data[B + 7:] == b"x" * 9


@pytest.mark.parametrize("size", [0, 1, 100, B - H - 1, B - H, B - H + 1, B - 6, B, 100 * 1024])
def test_round_trip_of_one_record(size):
    payload = random.Random(size).randbytes(size)
    data, ends = write_log([payload])
    records, r = read(data)
    assert records == [payload]
    assert r.end_offset == len(data) == ends[0]
    assert r.dropped_tail_bytes == 0 and r.tail_reason is None


def test_record_exactly_filling_a_block_is_one_full_record():
    payload = b"z" * (B - H)
    data, _ = write_log([payload])
    assert data == phys(1, payload)
    assert len(data) == B


def test_record_spanning_blocks_is_first_middle_last():
    payload = bytes(range(256)) * 400          # 102400 bytes: 4 blocks
    data, _ = write_log([payload])
    room = B - H
    expected = (phys(2, payload[:room]) + phys(3, payload[room:2 * room])
                + phys(3, payload[2 * room:3 * room]) + phys(4, payload[3 * room:]))
    assert data == expected


def test_short_block_tail_is_zero_filled():
    first = b"a" * (B - H - 3)            # leaves 3 bytes in the block
    data, _ = write_log([first, b"bc"])
    assert data == phys(1, first) + b"\x00" * 3 + phys(1, b"bc")
    assert read(data)[0] == [first, b"bc"]


def test_exactly_seven_bytes_left_gives_an_empty_first_fragment():
    first = b"a" * (B - H - H)                 # leaves exactly 7 bytes
    data, _ = write_log([first, b"xyz"])
    assert data == phys(1, first) + phys(2, b"") + phys(4, b"xyz")
    assert read(data)[0] == [first, b"xyz"]


def test_empty_record_fits_in_the_last_seven_bytes():
    first = b"a" * (B - H - H)
    data, _ = write_log([first, b"", b"q"])
    assert data == phys(1, first) + phys(1, b"") + phys(1, b"q")
    assert read(data)[0] == [first, b"", b"q"]


def test_many_random_records_round_trip():
    rng = random.Random(20240601)
    records = [rng.randbytes(rng.choice([0, 1, 7, 150, 4000, B - H, 70000])) for _ in range(300)]
    data, ends = write_log(records)
    got, r = read(data)
    assert got == records
    assert r.end_offset == ends[-1]


def test_payload_may_be_bytearray_or_memoryview_but_not_str():
    f = MemoryAppendFile()
    w = LogWriter(f)
    w.add_record(bytearray(b"ab"))
    w.add_record(memoryview(b"cd"))
    with pytest.raises(TypeError, match="payload must be bytes"):
        w.add_record("text")
    with pytest.raises(TypeError, match="payload must be bytes"):
        w.add_record(12)
    assert read(f.getvalue())[0] == [b"ab", b"cd"]


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="offset"):
        LogWriter(MemoryAppendFile(), -1)
    with pytest.raises(TypeError, match="must be bytes"):
        LogReader("not bytes")


def test_append_continues_an_existing_log(tmp_path):
    fs = OSFileSystem()
    path = str(tmp_path / "000001.log")
    rng = random.Random(7)
    first = [rng.randbytes(n) for n in (10, B - 40, 5, 3)]   # ends 1 byte short of a block trailer
    second = [rng.randbytes(n) for n in (0, 2, 50000, 9)]
    w = LogWriter(fs.open_append(path))
    for r in first:
        w.add_record(r)
    w.close()
    f = fs.open_append(path, truncate=False)
    assert f.size == fs.file_size(path)
    w = LogWriter(f, f.size)
    for r in second:
        w.add_record(r)
    w.sync()
    w.close()
    assert read_log(fs, path) == first + second


@pytest.mark.parametrize("prefix_sizes", [[], [3], [B - 17], [B - 14], [B - 10], [B - 7],
                                          [B - 7, 0], [100, B]])
def test_writer_offset_keeps_the_block_arithmetic(prefix_sizes):
    # Prefixes ending 10, 7, 3 and 0 bytes before a block boundary, and past it.
    existing, _ = write_log([b"p" * n for n in prefix_sizes])
    records = [b"r" * 20, b"s" * (B - 100), b"t"]
    data, _ = write_log(records, existing)
    assert data[:len(existing)] == existing
    assert read(data)[0] == [b"p" * n for n in prefix_sizes] + records


# -- recovery: torn tails ----------------------------------------------------

# Each layout: the sizes of earlier records, then of the last three, placed so
# that the cuts meet a record spanning a block boundary, a zero block trailer,
# and an empty FIRST fragment in the last 7 bytes of a block.
TRUNCATION_LAYOUTS = {
    "spanning": ([30, 200, B - 401], [300, 0, 40]),
    "trailer": ([30, B - 64], [10, 50, 0]),
    "seven-left": ([30, B - 74], [16, 5, 1]),
}


@pytest.mark.parametrize("layout", sorted(TRUNCATION_LAYOUTS))
def test_truncation_at_every_offset_of_the_last_three_records_gives_a_prefix(layout):
    earlier, last3 = TRUNCATION_LAYOUTS[layout]
    rng = random.Random(99)
    records = [rng.randbytes(n) for n in earlier + last3]
    data, ends = write_log(records)
    assert ends[-4] < B < ends[-1]      # the last three cross into the second block
    start = ends[-4]
    for cut in range(start, len(data) + 1):
        got, r = read(data[:cut])
        complete = sum(1 for e in ends if e <= cut)
        assert got == records[:complete], cut
        assert r.end_offset == ends[complete - 1]
        rest = data[r.end_offset:cut]
        if rest.count(0) == len(rest):
            assert (r.dropped_tail_bytes, r.tail_reason) == (0, None), cut
        else:
            assert r.dropped_tail_bytes == cut - r.end_offset, cut
            assert r.tail_reason, cut


def test_truncation_inside_the_header_and_payload_is_reported():
    data, ends = write_log([b"one", b"two-two"])
    got, r = read(data[:ends[0] + 3])
    assert got == [b"one"] and r.dropped_tail_bytes == 3
    assert "truncated record header" in r.tail_reason
    got, r = read(data[:ends[1] - 1])
    assert got == [b"one"] and r.dropped_tail_bytes == ends[1] - 1 - ends[0]
    assert "past the end of the file" in r.tail_reason


def test_zero_filled_tail_is_a_clean_end():
    records = [b"alpha", b"beta" * 1000]
    data, ends = write_log(records)
    for extra in (1, 6, 7, 100, B, 3 * B + 5):
        got, r = read(data + bytes(extra))
        assert got == records
        assert (r.end_offset, r.dropped_tail_bytes, r.tail_reason) == (ends[-1], 0, None)


def test_garbage_tail_is_dropped():
    records = [b"alpha", b"beta"]
    data, _ = write_log(records)
    rng = random.Random(5)
    for n in (1, 7, 64, 4096, 64 * 1024):
        garbage = rng.randbytes(n)
        got, r = read(data + garbage)
        assert got == records
        assert r.dropped_tail_bytes == n


def test_first_fragment_without_last_at_end_is_a_torn_tail():
    data = phys(1, b"kept") + phys(2, b"lost-start")
    got, r = read(data)
    assert got == [b"kept"]
    assert r.dropped_tail_bytes == len(phys(2, b"lost-start"))
    assert "cut off" in r.tail_reason


def test_lone_last_fragment_at_end_is_a_torn_tail():
    data = phys(1, b"kept") + phys(4, b"orphan")
    got, r = read(data)
    assert got == [b"kept"] and "without a FIRST" in r.tail_reason


# -- recovery: damage in the middle ------------------------------------------

def _flip(data: bytes, bit: int) -> bytes:
    b = bytearray(data)
    b[bit // 8] ^= 1 << (bit % 8)
    return bytes(b)


def test_flipped_bit_in_a_middle_record_raises_corruption():
    records = [b"first record", b"the middle record", b"after one", b"after two"]
    data, ends = write_log(records)
    start, end = ends[0], ends[1]
    for bit in range(start * 8, end * 8):
        with pytest.raises(CorruptionError) as ei:
            read(_flip(data, bit), "/db/000007.log")
        msg = str(ei.value)
        assert "/db/000007.log" in msg and f"offset {start}" in msg, (bit, msg)


def test_flipped_bit_in_the_last_record_drops_it():
    records = [b"first record", b"second", b"the last record"]
    data, ends = write_log(records)
    for bit in range(ends[1] * 8, ends[2] * 8):
        got, r = read(_flip(data, bit))
        assert got == records[:2], bit
        assert r.dropped_tail_bytes == ends[2] - ends[1]


def test_flipped_bit_in_a_spanning_last_record_drops_it():
    records = [b"head" * 10, bytes(range(256)) * 200]       # the last spans two blocks
    data, ends = write_log(records)
    for byte in list(range(ends[0], ends[0] + 20)) + [B - 1, B + 3, len(data) - 1]:
        got, r = read(_flip(data, byte * 8 + 5))
        assert got == records[:1], byte


def test_flipped_bit_in_a_spanning_middle_record_raises():
    records = [b"head", bytes(range(256)) * 200, b"tail"]
    data, ends = write_log(records)
    for byte in (ends[0] + 2, ends[0] + 100, B + 2, B + 100):
        with pytest.raises(CorruptionError):
            read(_flip(data, byte * 8))


def test_zeroed_record_before_valid_records_raises():
    data, ends = write_log([b"a" * 50, b"b" * 50, b"c" * 50])
    hole = data[:ends[0]] + bytes(ends[1] - ends[0]) + data[ends[1]:]
    with pytest.raises(CorruptionError, match=f"offset {ends[0]}"):
        read(hole)


def test_wiped_block_never_joins_two_records():
    # LevelDB's ErrorJoinsRecords: FIRST of one record, LAST of another.
    records = [b"x" * (2 * B), b"y" * (2 * B), b"z"]
    data, _ = write_log(records)
    wiped = data[:B] + bytes(2 * B) + data[3 * B:]
    with pytest.raises(CorruptionError):
        read(wiped)


@pytest.mark.parametrize("typ, message", [
    (2, "fragmented record without its LAST fragment at offset 9"),    # FIRST, then FULL
    (3, "fragment without a FIRST fragment at offset 9"),               # lone MIDDLE
    (4, "fragment without a FIRST fragment at offset 9"),               # lone LAST
    (9, "unknown record type 9 at offset 9"),
])
def test_bad_fragment_sequence_before_valid_records_raises(typ, message):
    data = phys(1, b"ok") + phys(typ, b"odd") + phys(1, b"next")
    with pytest.raises(CorruptionError, match=message):
        read(data)


def test_non_zero_block_trailer_before_valid_records_raises():
    first = b"a" * (B - H - 3)
    data, _ = write_log([first, b"bc"])
    bad = bytearray(data)
    bad[B - 2] = 1
    with pytest.raises(CorruptionError, match="trailer"):
        read(bytes(bad))


def test_records_before_the_damage_are_yielded_before_the_error():
    data, ends = write_log([b"good", b"bad", b"later"])
    reader = iter(LogReader(_flip(data, ends[0] * 8 + 60)))
    assert next(reader) == b"good"
    with pytest.raises(CorruptionError):
        next(reader)


# -- the writer after failures ------------------------------------------------

def test_writer_refuses_records_after_a_failed_append(tmp_path):
    fs = FaultInjectionFS(OSFileSystem())
    path = str(tmp_path / "log")
    w = LogWriter(fs.open_append(path))
    w.add_record(b"one")
    fs.fail("append", partial=True)
    with pytest.raises(StorageError):
        w.add_record(b"two" * 10)
    with pytest.raises(ReadOnlyError):
        w.add_record(b"three")          # the fault is spent; the writer still refuses
    with pytest.raises(ReadOnlyError):
        w.sync()
    w.close()
    got, r = read(fs.base.read_all(path))
    assert got == [b"one"] and r.dropped_tail_bytes == (H + 30) // 2


def test_closed_writer_raises_closed_error():
    f = MemoryAppendFile()
    w = LogWriter(f)
    w.close()
    w.close()
    assert f.closed
    with pytest.raises(ClosedError):
        w.add_record(b"x")
