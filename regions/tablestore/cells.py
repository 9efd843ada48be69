"""Cell layout of a Tablestore row in the region server's key space.

A row is stored HBase-style as cells, written without rewriting the row:

    head key   = R 0x00                                   (at most one per row)
    delta key  = R 0x01 name 0x00 uint64-BE(~gen)         (one per UpdateRow cell)
    exists key = R 0x01 0x00 uint64-BE(~gen)              (a delta with the empty name)

``R`` is the row key (pkcodec: self-delimiting, so all of a row's entries are
contiguous and sort head first).  Column names never contain 0x00 or 0x01
(validated: validate.check_name refuses control characters).  ``gen`` is a write generation, unique and
increasing per client (``Generations``); ``~gen`` puts a column's newest
delta first.

Head value (written by PutRow, replacing the row; or by DeleteRow)::

    kind u8 (0x01 PUT, 0x02 DELETED)  gen u64-LE  [cell*]   (cells only for PUT)
    cell  = name_len u8  name  ts i64-LE  value
    value = type u8 payload: 0 INTEGER i64-LE | 1 DOUBLE f64-LE | 2 BOOLEAN u8
            | 3 STRING u32-LE len + utf8 | 4 BINARY u32-LE len + bytes

The head's cells are sorted by name, each column's versions newest first:
the order a read returns, so a PutRow-only row decodes in one pass.

Delta value::

    0x11 PUT ts i64-LE value | 0x12 DELETE_ONE ts i64-LE | 0x13 DELETE_ALL
    | 0x14 EXISTS (only under the exists key)

Masking: a head of generation H hides every delta of its row with gen < H
(PutRow replaces the row, DeleteRow deletes it); a DELETE_ALL delta hides the
column's cells of lower generation; DELETE_ONE hides the version with its
timestamp; a PUT of a timestamp already present overwrites it.

Existence (Tablestore's rule: a row exists from its first write until
DeleteRow, whatever columns it has left): a row exists when its head is a
PUT head (with or without cells), or an EXISTS delta survives its head's
mask (every UpdateRow that puts a value writes one beside its cells, so a
row an UpdateRow created outlives the deletion or TTL expiry of all its
columns), or a cell survives the masks (stores written before EXISTS
deltas).  Existence ignores TTL and max_versions: they expire versions, not
rows.  ``row_exists`` is the one statement of the rule; the C twins
(``_cellcodec``) follow it.

The constants below are the layout's one statement in Python;
ext/regions/tablestore/_layout.pxd declares the same for C (pkcodec's tags
too), and tests/test_tablestore_rows_c.py checks that the two agree.

Format constants are never renumbered.  Pure functions, thread-safe.
"""
import itertools
import math
import struct
import time

__all__ = ["head_key", "encode_head", "read_order", "put_head",
           "encode_deleted_head", "encode_put_delta",
           "encode_delete_one", "encode_delete_all", "delta_key", "decode_head", "decode_delta",
           "exists_key", "EXISTS_VALUE", "merge_row", "split_entries", "Generations",
           "compaction_filter_factory", "value_size", "now_ms", "HEAD", "DELTA", "ROW_END", "row_end", "in_row"]

HEAD = b"\x00"
DELTA = b"\x01"
ROW_END = b"\x02"  # R + ROW_END sorts after every entry of row R
KIND_PUT = 0x01
KIND_DELETED = 0x02
D_PUT = 0x11
D_DELETE_ONE = 0x12
D_DELETE_ALL = 0x13
D_EXISTS = 0x14
EXISTS_VALUE = bytes((D_EXISTS,))
T_INTEGER, T_DOUBLE, T_BOOLEAN, T_STRING, T_BINARY = 0, 1, 2, 3, 4

_q = struct.Struct("<q")
_Q = struct.Struct("<Q")
_d = struct.Struct("<d")
_I = struct.Struct("<I")
_BQ = struct.Struct("<BQ")
_NEG = struct.Struct(">Q")
_MASK = (1 << 64) - 1


def head_key(row_key):
    return row_key + HEAD


def row_end(row_key):
    """The end (exclusive) of row ``row_key``'s entries: ``[row_key, row_end)`` is the row."""
    return row_key + ROW_END


def in_row(key, row_key):
    """Whether entry ``key`` belongs to row ``row_key`` (its head or one of its deltas)."""
    n = len(row_key)
    return len(key) > n and key[n] in _ROW_TAGS and key.startswith(row_key)


_ROW_TAGS = (HEAD[0], DELTA[0])


def delta_key(row_key, name, gen):
    return row_key + DELTA + name.encode() + b"\x00" + _NEG.pack(~gen & _MASK)


def exists_key(row_key, gen):
    """Key of the EXISTS delta an UpdateRow that puts a value writes (value ``EXISTS_VALUE``)."""
    return row_key + DELTA + b"\x00" + _NEG.pack(~gen & _MASK)


def encode_value(value):
    """Typed value bytes.  ``bytes`` is a STRING (the SDK's quirk), bytearray BINARY."""
    if value is True or value is False:
        return b"\x02\x01" if value else b"\x02\x00"
    if isinstance(value, int):
        return b"\x00" + _q.pack(value)
    if isinstance(value, float):
        return b"\x01" + _d.pack(value)
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return b"\x03" + _I.pack(len(raw)) + raw
    if isinstance(value, bytes):
        return b"\x03" + _I.pack(len(value)) + value
    return b"\x04" + _I.pack(len(value)) + bytes(value)


def decode_value(data, pos):
    """(value, next offset) of the typed value at ``pos``."""
    t = data[pos]
    if t == T_INTEGER:
        return _q.unpack_from(data, pos + 1)[0], pos + 9
    if t == T_STRING:
        n = _I.unpack_from(data, pos + 1)[0]
        return data[pos + 5:pos + 5 + n].decode("utf-8"), pos + 5 + n
    if t == T_DOUBLE:
        return _d.unpack_from(data, pos + 1)[0], pos + 9
    if t == T_BOOLEAN:
        return data[pos + 1] == 1, pos + 2
    if t == T_BINARY:
        n = _I.unpack_from(data, pos + 1)[0]
        return bytearray(data[pos + 5:pos + 5 + n]), pos + 5 + n
    raise ValueError("corrupt cell: unknown value type %d at offset %d" % (t, pos))


def value_size(value):
    """Tablestore's CU size of a value: 8 for numbers, 1 for booleans, else byte length."""
    if value is True or value is False:
        return 1
    if isinstance(value, (int, float)):
        return 8
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    return len(value)


def encode_head(gen, cells):
    """Head of a PutRow: ``cells`` are (name, value, ts) in read order (sorted)."""
    parts = [_BQ.pack(KIND_PUT, gen)]
    for name, value, ts in cells:
        raw = name.encode()
        parts.append(bytes((len(raw),)) + raw + _q.pack(ts) + encode_value(value))
    return b"".join(parts)


def read_order(cells):
    """PutRow cells in read order: by name, newest first; a repeated (name, ts) keeps the last."""
    latest = {}
    for name, value, ts in cells:
        latest[(name, ts)] = value
    ordered = sorted(latest.items(), key=lambda kv: (kv[0][0], -kv[0][1]))
    return [(name, value, ts) for (name, ts), value in ordered]


def put_head(gen, cells, now_ms):
    """Head of a PutRow from its validated (name, value, ts or None) cells:
    missing timestamps become ``now_ms``, cells go in read order.  C twin:
    ``_cellcodec.put_head``."""
    return encode_head(gen, read_order([(n, v, now_ms if ts is None else ts)
                                        for n, v, ts in cells]))


def encode_deleted_head(gen):
    return _BQ.pack(KIND_DELETED, gen)


def encode_put_delta(ts, value):
    return bytes((D_PUT,)) + _q.pack(ts) + encode_value(value)


def encode_delete_one(ts):
    return bytes((D_DELETE_ONE,)) + _q.pack(ts)


def encode_delete_all():
    return bytes((D_DELETE_ALL,))


def decode_head(data):
    """(gen, cells) of a head; cells is None for a DELETED head, else [(name, value, ts)]."""
    kind, gen = _BQ.unpack_from(data, 0)
    if kind == KIND_DELETED:
        return gen, None
    cells = []
    pos = 9
    n = len(data)
    while pos < n:
        ln = data[pos]
        name = data[pos + 1:pos + 1 + ln].decode()
        pos += 1 + ln
        ts = _q.unpack_from(data, pos)[0]
        value, pos = decode_value(data, pos + 8)
        cells.append((name, value, ts))
    return gen, cells


def decode_delta(row_key_len, key, value):
    """(name, gen, kind, ts, value) of a delta entry."""
    name = key[row_key_len + 1:-9].decode()
    gen = ~_NEG.unpack_from(key, len(key) - 8)[0] & _MASK
    kind = value[0]
    if kind == D_DELETE_ALL or kind == D_EXISTS:
        return name, gen, kind, None, None
    ts = _q.unpack_from(value, 1)[0]
    if kind == D_DELETE_ONE:
        return name, gen, kind, ts, None
    return name, gen, kind, ts, decode_value(value, 9)[0]


def merge_row(row_key_len, head, deltas):
    """(exists, live cells as {name: [(ts, value), ...] newest first}) of a row.

    ``head`` is the head value or None; ``deltas`` the (key, value) delta
    entries of the row, in any order.  Masks are applied and existence
    decided (module docstring); TTL and max_versions are not (reads.visible).
    """
    head_gen = 0
    columns = {}
    marked = False
    if head is not None:
        head_gen, cells = decode_head(head)
        marked = cells is not None
        for name, value, ts in cells or ():
            columns.setdefault(name, {})[ts] = value
    if deltas:
        decoded = [decode_delta(row_key_len, k, v) for k, v in deltas]
        decoded.sort(key=lambda d: d[1])
        for name, gen, kind, ts, value in decoded:
            if gen < head_gen:
                continue
            if kind == D_PUT:
                columns.setdefault(name, {})[ts] = value
            elif kind == D_DELETE_ONE:
                columns.get(name, {}).pop(ts, None)
            elif kind == D_EXISTS:
                marked = True
            else:
                columns.pop(name, None)
    live = {name: sorted(versions.items(), reverse=True)
            for name, versions in columns.items() if versions}
    return row_exists(marked, live), live


def row_exists(marked, columns):
    """The existence rule: a PUT head or a surviving EXISTS delta (``marked``),
    or any surviving cell."""
    return bool(marked or columns)


def split_entries(row_key_len, entries):
    """(head value or None, [delta entries]) of one row's (key, value) entries."""
    head = None
    deltas = []
    for key, value in entries:
        if len(key) == row_key_len + 1:
            head = value
        else:
            deltas.append((key, value))
    return head, deltas


def now_ms():
    """The clock of cell versions: milliseconds since the epoch (a cell's default timestamp)."""
    return int(time.time() * 1000)


class Generations:
    """Unique, increasing write generations for one client.

    Starts at the wall clock (in units of ``unit_ns``) when the client opens, so generations keep
    increasing across reopen as long as the clock does not step back by more
    than the time between the two opens.  ``next()`` is thread-safe: it is
    the counter's own ``__next__`` (``itertools.count``, in C), which runs
    whole under the GIL, so no two calls return the same value.
    """

    def __init__(self, unit_ns=1):
        self.next = itertools.count(time.time_ns() // unit_ns).__next__


def compaction_filter_factory(get_options):
    """Factory for the region server's compaction filter of one table.

    ``get_options()`` returns (ttl_seconds, max_versions) of the table now.
    The filter sees surviving entries in key order and drops, within what it
    has seen: deltas hidden by their row's head, PUT deltas hidden by a newer
    DELETE_ALL of their column, PUT deltas older than the TTL, PUT deltas
    overwritten by a newer PUT of the same timestamp, and PUT deltas beyond
    max_versions (counted over newer PUT deltas of the column with a larger
    timestamp), and EXISTS deltas but the row's newest.  It never drops
    heads or delete markers, whose masks may cover entries of other files.  Reads enforce TTL and max_versions
    whatever compaction has done.
    """
    def factory():
        ttl, max_versions = get_options()
        min_ts = (time.time() - ttl) * 1000 if ttl and ttl > 0 else -math.inf
        state = {"row": None, "head_gen": 0, "column": None, "cleared": False, "newer": []}

        def drop(key, value):
            if key.endswith(HEAD) and value[0] in (KIND_PUT, KIND_DELETED):
                # A head: R 0x00, and its value starts with a head kind.
                state["row"] = key[:-1]
                state["head_gen"] = _BQ.unpack_from(value, 0)[1]
                state["column"] = None
                return False
            sep = key.rfind(DELTA, 0, len(key) - 9)
            row, column = key[:sep], key[:len(key) - 8]
            gen = ~_NEG.unpack_from(key, len(key) - 8)[0] & _MASK
            if row != state["row"]:
                state["row"], state["head_gen"] = row, 0
            if column != state["column"]:
                state["column"], state["cleared"], state["newer"] = column, False, []
            if gen < state["head_gen"]:
                return True
            kind = value[0]
            if kind == D_DELETE_ALL:
                state["cleared"] = True
                return False
            if kind == D_EXISTS:
                # The row's newest EXISTS delta (seen first) says it all.
                if state["cleared"]:
                    return True
                state["cleared"] = True
                return False
            if kind != D_PUT:
                return False
            if state["cleared"]:
                return True
            ts = _q.unpack_from(value, 1)[0]
            if ts < min_ts:
                return True
            newer = state["newer"]
            if ts in newer or sum(1 for t in newer if t > ts) >= max_versions:
                return True  # overwritten by a newer write of its version, or excess
            newer.append(ts)
            return False

        return drop
    return factory
