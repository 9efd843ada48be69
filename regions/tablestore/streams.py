"""Tablestore Streams: a table's change records, read by shard, from the change feed.

A table with a stream enabled (``StreamSpecification`` at CreateTable or
UpdateTable) keeps every committed write as a *stream record*: PUT_ROW with
the row's cells, UPDATE_ROW with each column's change (a put, the deletion
of one version, the deletion of all), DELETE_ROW, each with the versions
the write gave its cells.  Records are read by *shard*: a shard is a region
of the table, and when a region splits its shard closes and the daughters'
shards name it as parent (``parent_id``), as the service's shards do after
a partition split.  A reader that reads a shard to its end before its
daughters sees every change of every row exactly once and in order per row.

Where records come from
-----------------------
The table's change feed (indexes.py) carries, for a table with a stream,
the entries each write stored (cells.py: a PutRow's head, an UpdateRow's
deltas, a DeleteRow's deleted head) and the shard the write went to.  The
feed entry is durable before the base write; after the base write the
writer (under the row lock) copies the records into the stream's log,
``<table>.stream``, a region-server table of ``shard u64-BE + seq u64-BE ->
record``; then the feed entry may go.  A feed entry whose base write never
happened (a crash in between) is checked at open against the base table
(its first entry must be there, or a newer write of the row) and dropped if
it did not land: no record of a write that did not happen, none lost of one
that did.

Order and visibility: feed seqs are handed out in order under the table's
append lock, but writers copy their records after their base writes, so a
higher seq can reach the log before a lower one.  A reader only reads up to
the *horizon*, the seq below the lowest one still in flight, so an iterator
never passes a record that is not there yet.

Shards: the shard of a row is chosen when its feed entry is appended, under
the append lock, from the open shards' start keys.  Before choosing, the
table's region layout is compared with the one the shards were made from
(an identity check); when a region has split, its shard closes at the next
seq (``close_seq``: it holds the records below it) and the daughters' shards
open there.  Closing and choosing under one lock is what makes "read the
parent to its end, then the children" exact.

Catalogue: the log table's attributes (``{"stream": {...}}``) hold the
stream's id, times, expiration and shards; enabling makes the log table,
disabling deletes it (a new stream, with a new id, on the next enabling).
Records older than the expiration time are trimmed (``trim``), and a closed
shard whose records are all gone is forgotten.

Record layout in the log (value)::

    stamp i64-LE (µs)  row_key_len u32-LE  row_key  entries

``entries`` is the feed's blob: ``(suffix_len u32-LE, key suffix, value_len
u32-LE, value)*``, the stored entries' keys without the row key.  One feed
entry may hold several records of a row (a local transaction's writes):
``split_records`` cuts them at each head.
"""
import base64
import bisect
import json
import logging
import struct
import threading
import time
import uuid

from . import cells, pkcodec
from .capacity import read_cu
from .errors import OTSClientError, service_error
from .validate import check_name

__all__ = ["StreamLog", "StreamSpecification", "StreamDetails", "Stream", "StreamShard",
           "DescribeStreamResponse", "GetStreamRecordResponse", "StreamRecord", "RecordColumn",
           "RecordSequenceInfo", "StreamActionType", "RecordColumnType", "LOG_SUFFIX",
           "STREAM_ATTRIBUTE", "STREAM_SPEC", "check_stream_spec", "stream_spec_record", "encode_entries", "decode_entries",
           "split_records"]

log = logging.getLogger("regions.tablestore")

#: The longest table name whose stream GetStreamRecord reads: the service
#: enables, lists and describes the stream of any valid name, but refuses to
#: read one over 238 characters ("Invalid stream id", the Java SDK's
#: APITest.testStreamWithLongTableName; its stream ids are likely the name, '_'
#: and 16 digits, at most 255 characters).
READABLE_NAME_MAX = 238
LOG_SUFFIX = ".stream"          # '.' is not in Tablestore names: no clash with a user table
STREAM_ATTRIBUTE = "stream"     # the key of the stream's record in its log table's attributes
# The key, in the *base* table's attributes, of the stream it should have
# ({"expiration", "origin_columns"}): written with CreateTable's record or
# UpdateTable's, before the log table is made (or after it is dropped), so a
# crash in between is finished by the next open (Indexer.open).
STREAM_SPEC = "stream_spec"
MIN_EXPIRATION_H, MAX_EXPIRATION_H = 1, 168
DEFAULT_RECORD_LIMIT = 100      # records a GetStreamRecord returns without a limit
MAX_RECORD_LIMIT = 1000
_TRIM_EVERY_S = 60.0
_SEQ = struct.Struct(">Q")
_KEY = struct.Struct(">QQ")     # shard, seq
_STAMP = struct.Struct("<q")
_LEN = struct.Struct("<I")


# -- the API's shapes (the Go and Java SDKs'; the Python SDK has no stream API) --
class _Shape:
    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % kv for kv in vars(self).items()))

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    __hash__ = None


class StreamSpecification(_Shape):
    """CreateTable's and UpdateTable's ``stream_spec``: ``enable_stream``, and
    when enabling ``expiration_time`` in hours (1 to 168) and
    ``columns_to_get`` (the SDKs' "origin columns": kept and described; the
    records carry no origin_record here)."""

    def __init__(self, enable_stream, expiration_time=None, columns_to_get=None):
        self.enable_stream = enable_stream
        self.expiration_time = expiration_time
        self.columns_to_get = columns_to_get


class StreamDetails(_Shape):
    """DescribeTable's and UpdateTable's ``stream_details``."""

    def __init__(self, enable_stream, stream_id=None, expiration_time=None, last_enable_time=None,
                 columns_to_get=None):
        self.enable_stream = enable_stream
        self.stream_id = stream_id
        self.expiration_time = expiration_time
        self.last_enable_time = last_enable_time
        self.columns_to_get = columns_to_get or []


class Stream(_Shape):
    """An item of ListStream: ``stream_id``, ``table_name``, ``creation_time`` (µs)."""

    def __init__(self, stream_id, table_name, creation_time):
        self.stream_id, self.table_name, self.creation_time = stream_id, table_name, creation_time


class StreamShard(_Shape):
    def __init__(self, shard_id, parent_id=None, parent_sibling_id=None):
        self.shard_id, self.parent_id, self.parent_sibling_id = shard_id, parent_id, parent_sibling_id


class DescribeStreamResponse(_Shape):
    def __init__(self, stream_id, expiration_time, table_name, creation_time, stream_status,
                 shards, next_shard_id=None):
        self.stream_id, self.expiration_time = stream_id, expiration_time
        self.table_name, self.creation_time = table_name, creation_time
        self.stream_status = stream_status       # "STREAM_ACTIVE" (enabling is immediate here)
        self.shards, self.next_shard_id = shards, next_shard_id


class StreamActionType:
    PUT_ROW = "PUT_ROW"
    UPDATE_ROW = "UPDATE_ROW"
    DELETE_ROW = "DELETE_ROW"


class RecordColumnType:
    PUT = "PUT"
    DELETE_ONE_VERSION = "DELETE_ONE_VERSION"
    DELETE_ALL_VERSIONS = "DELETE_ALL_VERSIONS"


class RecordColumn(_Shape):
    """A column of a record: ``name``, ``type`` (RecordColumnType), ``value``
    (PUT only), ``timestamp`` (PUT and DELETE_ONE_VERSION)."""

    def __init__(self, name, type, value=None, timestamp=None):
        self.name, self.type, self.value, self.timestamp = name, type, value, timestamp


class RecordSequenceInfo(_Shape):
    """Where a record stands: ``epoch`` (0 here), ``timestamp`` (µs, when it
    was written), ``row_index`` (its place among the records of one write of
    a row: a local transaction's writes of one row share a feed entry)."""

    def __init__(self, epoch, timestamp, row_index):
        self.epoch, self.timestamp, self.row_index = epoch, timestamp, row_index


class StreamRecord(_Shape):
    """``action_type`` (StreamActionType), ``primary_key`` ([(name, value)]),
    ``columns`` ([RecordColumn]), ``sequence_info`` (RecordSequenceInfo)."""

    def __init__(self, action_type, primary_key, columns, sequence_info):
        self.action_type, self.primary_key = action_type, primary_key
        self.columns, self.sequence_info = columns, sequence_info


class GetStreamRecordResponse(_Shape):
    """``records``, ``next_shard_iterator`` (None: the shard is closed and read
    to its end), ``may_more_record`` (the read stopped at its limit) and
    ``consumed`` (CapacityUnit: the bytes read, by the read rule)."""

    def __init__(self, records, next_shard_iterator, may_more_record=False, consumed=None):
        self.records, self.next_shard_iterator = records, next_shard_iterator
        self.may_more_record = may_more_record
        self.consumed = consumed if consumed is not None else read_cu(0)


def stream_spec_record(hours, origin_columns):
    """The base table's STREAM_SPEC record."""
    return {"expiration": hours, "origin_columns": list(origin_columns)}


def check_stream_spec(spec):
    """The (enable, expiration hours, origin columns) of a
    StreamSpecification, or None for none; raises the service's error for a
    bad one."""
    if spec is None:
        return None
    if not isinstance(spec, StreamSpecification):
        raise OTSClientError("stream_spec should be an instance of StreamSpecification, not %s"
                             % spec.__class__.__name__)
    enable = spec.enable_stream
    if not isinstance(enable, bool):
        raise OTSClientError("enable_stream should be a bool, not %s" % enable.__class__.__name__)
    if not enable:
        if spec.expiration_time is not None:
            raise service_error("stream_disable_expiration")
        return False, None, []
    hours = spec.expiration_time
    if (not isinstance(hours, int) or isinstance(hours, bool)
            or not MIN_EXPIRATION_H <= hours <= MAX_EXPIRATION_H):
        raise service_error("stream_expiration", value=hours, low=MIN_EXPIRATION_H,
                            high=MAX_EXPIRATION_H)
    columns = spec.columns_to_get or []
    if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
        raise OTSClientError("columns_to_get should be a list of str, not %r" % (columns,))
    for column in columns:
        check_name(column, "column")
    return True, hours, list(columns)


# -- the records' bytes ------------------------------------------------------
def encode_entries(row_key, entries):
    """The feed's blob of a row's stored ``entries`` [(key, value)]."""
    n = len(row_key)
    parts = []
    for key, value in entries:
        parts += (_LEN.pack(len(key) - n), key[n:], _LEN.pack(len(value)), value)
    return b"".join(parts)


def decode_entries(row_key, blob, pos=0):
    """The [(key, value)] of a blob (``encode_entries``)."""
    out = []
    end = len(blob)
    while pos < end:
        n = _LEN.unpack_from(blob, pos)[0]
        suffix = blob[pos + 4:pos + 4 + n]
        pos += 4 + n
        m = _LEN.unpack_from(blob, pos)[0]
        out.append((row_key + suffix, blob[pos + 4:pos + 4 + m]))
        pos += 4 + m
    return out


def split_records(row_key, entries):
    """[(action, entries)] of one feed entry: each head is a record (PUT_ROW
    or DELETE_ROW), each run of deltas between heads one UPDATE_ROW."""
    out = []
    n = len(row_key)
    for key, value in entries:
        if key[n] == cells.HEAD[0]:
            kind = StreamActionType.PUT_ROW if value[0] == cells.KIND_PUT \
                else StreamActionType.DELETE_ROW
            out.append((kind, [(key, value)]))
        elif out and out[-1][0] == StreamActionType.UPDATE_ROW:
            out[-1][1].append((key, value))
        else:
            out.append((StreamActionType.UPDATE_ROW, [(key, value)]))
    return out


def _record_columns(row_key, action, entries):
    """The RecordColumns of one record, in the order written (a PutRow's in
    read order: by name, newest first)."""
    if action == StreamActionType.DELETE_ROW:
        return []
    if action == StreamActionType.PUT_ROW:
        _, row = cells.decode_head(entries[0][1])
        return [RecordColumn(name, RecordColumnType.PUT, value, ts) for name, value, ts in row]
    out = []
    n = len(row_key)
    for key, value in entries:
        name, _, kind, ts, val = cells.decode_delta(n, key, value)
        if kind == cells.D_EXISTS:
            continue
        if kind == cells.D_PUT:
            out.append(RecordColumn(name, RecordColumnType.PUT, val, ts))
        elif kind == cells.D_DELETE_ONE:
            out.append(RecordColumn(name, RecordColumnType.DELETE_ONE_VERSION, None, ts))
        else:
            out.append(RecordColumn(name, RecordColumnType.DELETE_ALL_VERSIONS))
    return out


def _max_gen(row_key, entries):
    n = len(row_key)
    gens = [cells.decode_head(v)[0] if k[n] == cells.HEAD[0] else cells.decode_delta(n, k, v)[1]
            for k, v in entries]
    return max(gens)


# -- iterators ----------------------------------------------------------------
def encode_iterator(stream_id, shard, seq):
    raw = json.dumps([stream_id, shard, seq], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_iterator(text):
    """(stream_id, shard number, seq) of an iterator, or the service's error."""
    try:
        stream_id, shard, seq = json.loads(base64.urlsafe_b64decode(text.encode()))
        if not (isinstance(stream_id, str) and isinstance(shard, int) and isinstance(seq, int)
                and shard >= 0 and seq >= 0):
            raise ValueError
    except (ValueError, TypeError, AttributeError, UnicodeError):
        raise service_error("stream_iterator_invalid") from None
    return stream_id, shard, seq


class _Shard:
    __slots__ = ("id", "parent", "sibling", "start", "end", "open_seq", "close_seq", "closed_at",
                 "trimmed")

    def __init__(self, id, parent, sibling, start, end, open_seq, close_seq=None, closed_at=None,
                 trimmed=-1):
        self.id, self.parent, self.sibling = id, parent, sibling
        self.start, self.end = start, end          # row-key bounds, b"" / None: unbounded
        self.open_seq, self.close_seq, self.closed_at = open_seq, close_seq, closed_at
        self.trimmed = trimmed                     # the newest seq trimmed (expired)

    def to_json(self):
        return {"id": self.id, "parent": self.parent, "sibling": self.sibling,
                "start": self.start.hex(), "end": None if self.end is None else self.end.hex(),
                "open_seq": self.open_seq, "close_seq": self.close_seq,
                "closed_at": self.closed_at, "trimmed": self.trimmed}

    @classmethod
    def from_json(cls, d):
        return cls(d["id"], d["parent"], d["sibling"], bytes.fromhex(d["start"]),
                   None if d["end"] is None else bytes.fromhex(d["end"]), d["open_seq"],
                   d["close_seq"], d["closed_at"], d.get("trimmed", -1))


class StreamLog:
    """The stream of one table: its catalogue (id, times, shards) and log.

    ``server`` is the region server, ``base`` the table.  The feed (the
    Indexer's ``_Table``) calls ``shard_for`` under its append lock and
    ``append`` after the base write; the client calls the read side.
    Thread-safe: the catalogue changes under ``lock`` (the feed's append
    lock, so shards close between two appends), reads need no lock.
    """

    def __init__(self, server, base, lock, doc):
        self.server, self.base, self.lock = server, base, lock
        self.table = base + LOG_SUFFIX
        self.id = doc["id"]
        self.creation_time = doc["creation_time"]
        self.expiration = doc["expiration"]
        self.last_enable_time = doc["last_enable_time"]
        self.origin_columns = doc.get("origin_columns", [])
        self.shards = {d["id"]: _Shard.from_json(d) for d in doc["shards"]}
        self._layout = None         # the region layout the open shards were made from
        self._starts, self._open = [], []
        self._index_open()
        self._trimmed_at = 0.0

    # -- the catalogue --------------------------------------------------------
    @classmethod
    def create(cls, server, base, lock, hours, origin_columns, next_seq):
        """Enable the stream of ``base``: its log table, one open shard per region."""
        now_us = time.time_ns() // 1000
        doc = {"id": "%s_%d_%s" % (base, now_us, uuid.uuid4().hex[:8]),
               "creation_time": now_us, "expiration": hours, "last_enable_time": now_us,
               "origin_columns": list(origin_columns), "shards": []}
        server.create_table(base + LOG_SUFFIX, attributes={STREAM_ATTRIBUTE: doc})
        stream = cls(server, base, lock, doc)
        with lock:
            stream.refresh(next_seq)
        return stream

    @classmethod
    def load(cls, server, base, lock):
        """The stream of ``base`` from its log table, or None."""
        name = base + LOG_SUFFIX
        if not server.has_table(name):
            return None
        doc = (server.table_attributes(name) or {}).get(STREAM_ATTRIBUTE)
        if doc is None:
            return None
        return cls(server, base, lock, doc)

    def drop(self):
        if self.server.has_table(self.table):
            self.server.delete_table(self.table)

    def details(self) -> StreamDetails:
        return StreamDetails(True, self.id, self.expiration, self.last_enable_time,
                             list(self.origin_columns))

    def _save(self):
        doc = {"id": self.id, "creation_time": self.creation_time, "expiration": self.expiration,
               "last_enable_time": self.last_enable_time, "origin_columns": self.origin_columns,
               "shards": [s.to_json() for s in sorted(self.shards.values(), key=lambda s: s.id)]}
        self.server.set_table_attributes(self.table, {STREAM_ATTRIBUTE: doc})

    def _index_open(self):
        opened = sorted((s for s in self.shards.values() if s.close_seq is None),
                        key=lambda s: s.start)
        self._starts = [s.start for s in opened]
        self._open = [s.id for s in opened]

    def refresh(self, next_seq):
        """Bring the open shards in line with the table's regions (under
        ``lock``): a region no longer there closes its shard at ``next_seq``,
        a new region's shard opens there, naming the closed shards its range
        came from.  Cheap when nothing changed (one identity check)."""
        layout = self.server.table_layout(self.base)
        if layout is self._layout:
            return
        regions = list(layout[1])
        starts = [_row_bound(s) for s in layout[0]]
        ends = starts[1:] + [None]
        now_us = time.time_ns() // 1000
        current = {r.id: (starts[i], ends[i]) for i, r in enumerate(regions)}
        closed = []
        for shard_id in list(self._open):
            shard = self.shards[shard_id]
            if current.get(shard_id) != (shard.start, shard.end):
                shard.close_seq, shard.closed_at = next_seq, now_us
                closed.append(shard)
        changed = bool(closed)
        for region_id, (start, end) in current.items():
            shard = self.shards.get(region_id)
            if shard is not None and shard.close_seq is None:
                continue
            parents = [s.id for s in closed if _overlaps(s.start, s.end, start, end)]
            if not parents and any(s.close_seq is None for s in self.shards.values()
                                   if _overlaps(s.start, s.end, start, end)):
                continue
            if shard is not None:         # a region id reused for another range: not ours
                region_id = max(self.shards) + 1
            self.shards[region_id] = _Shard(region_id, parents[0] if parents else None,
                                            parents[1] if len(parents) > 1 else None,
                                            start, end, next_seq)
            changed = True
        if changed:
            self._index_open()
            self._save()
        self._layout = layout

    def shard_for(self, row_key, next_seq):
        """The open shard row ``row_key`` is written to (under ``lock``)."""
        self.refresh(next_seq)
        return self._open[bisect.bisect_right(self._starts, row_key) - 1]

    def last_seq(self):
        """The newest seq the stream knows of (its records, its shards' bounds):
        the feed's seqs go on after it at open."""
        last = 0
        for shard in self.shards.values():
            last = max(last, shard.open_seq - 1, shard.trimmed,
                       shard.close_seq - 1 if shard.close_seq is not None else 0)
            for key, _ in self.server.scan(self.table, _KEY.pack(shard.id, 0),
                                           _KEY.pack(shard.id + 1, 0), reverse=True):
                last = max(last, _KEY.unpack(key)[1])
                break
        return last

    # -- writing ----------------------------------------------------------------
    def append(self, shard, seq, row_key, blob, stamp):
        """Store the records of feed entry ``seq`` (its row, its entries' blob)."""
        self.server.put(self.table, _KEY.pack(shard, seq),
                        stamp + _LEN.pack(len(row_key)) + row_key + blob)

    def landed(self, row_key, blob):
        """Whether the write a feed entry records reached the base table (its
        first entry is there, or the row has a newer head)."""
        entries = decode_entries(row_key, blob)
        if not entries:
            return False
        key, value = entries[0]
        if self.server.get(self.base, key) == value:
            return True
        head = self.server.get(self.base, cells.head_key(row_key))
        return head is not None and cells.decode_head(head)[0] > _max_gen(row_key, entries)

    # -- reading ------------------------------------------------------------------
    def describe(self, start_shard=None, limit=None):
        ids = sorted(self.shards)
        if start_shard is not None:
            ids = [i for i in ids if i >= start_shard]
        next_id = None
        if limit is not None and len(ids) > limit:
            next_id, ids = ids[limit], ids[:limit]
        shards = [StreamShard(str(i), _text(self.shards[i].parent), _text(self.shards[i].sibling))
                  for i in ids]
        return DescribeStreamResponse(self.id, self.expiration, self.base, self.creation_time,
                                      "STREAM_ACTIVE", shards, _text(next_id))

    def shard(self, shard_id):
        try:
            number = int(shard_id)
        except (TypeError, ValueError):
            number = None
        shard = self.shards.get(number)
        if shard is None:
            raise service_error("stream_shard_not_exist", shard=shard_id)
        return shard

    def iterator(self, shard_id, horizon, timestamp=None):
        """An iterator at the oldest record of the shard kept, or with
        ``timestamp`` (µs) at the first written then or later."""
        shard = self.shard(shard_id)
        seq = max(shard.open_seq, shard.trimmed + 1)
        if timestamp is not None:
            last = None
            for key, value in self._scan(shard, seq):
                if _STAMP.unpack_from(value)[0] >= timestamp:
                    seq = _KEY.unpack(key)[1]
                    break
                if _KEY.unpack(key)[1] <= horizon:
                    last = _KEY.unpack(key)[1]
            else:
                # after the last record, not at the horizon: the seqs of feed
                # entries a crash left and the open dropped (their writes did
                # not land) are handed out again after the next reopen
                if last is not None:
                    seq = last + 1
        return encode_iterator(self.id, shard.id, seq)

    def _scan(self, shard, seq, end=None):
        return self.server.scan(self.table, _KEY.pack(shard.id, seq),
                                _KEY.pack(shard.id, end) if end is not None
                                else _KEY.pack(shard.id + 1, 0))

    def read(self, shard_id, seq, limit, horizon, pk_names):
        """GetStreamRecord: up to ``limit`` records of the shard from ``seq``
        on, below ``horizon`` + 1 (the seqs every writer is past).  The next
        iterator follows the last record read; with none read, it is the same
        iterator, or None once a closed shard is read to its end."""
        if len(self.base) > READABLE_NAME_MAX:
            raise service_error("stream_id_invalid", limit=READABLE_NAME_MAX)
        shard = self.shard(shard_id)
        if seq <= shard.trimmed:
            raise service_error("stream_trimmed")
        end = horizon + 1 if shard.close_seq is None else min(shard.close_seq, horizon + 1)
        records, last_seq, size = [], None, 0
        if seq < end:
            for key, value in self._scan(shard, seq, end):
                last_seq = _KEY.unpack(key)[1]
                records += _records(value, pk_names)
                size += len(value)
                if len(records) >= limit:
                    break
        if last_seq is not None:
            more = len(records) >= limit          # the limit cut the page (the Java SDK's test)
            return GetStreamRecordResponse(records, encode_iterator(self.id, shard.id,
                                                                    last_seq + 1), more,
                                           read_cu(size))
        if shard.close_seq is not None and end == shard.close_seq:
            return GetStreamRecordResponse([], None)      # closed and read to its end
        return GetStreamRecordResponse([], encode_iterator(self.id, shard.id, seq))

    # -- expiry ---------------------------------------------------------------------
    def trim(self, now_us=None, force=False):
        """Delete records older than the expiration time; forget closed shards
        left empty by it.  At most once a minute unless ``force``."""
        if not force and time.monotonic() - self._trimmed_at < _TRIM_EVERY_S:
            return
        self._trimmed_at = time.monotonic()
        now_us = time.time_ns() // 1000 if now_us is None else now_us
        cutoff = now_us - self.expiration * 3_600_000_000
        with self.lock:
            shards = list(self.shards.values())
        changed = False
        for shard in shards:
            doomed = []
            for key, value in self._scan(shard, 0):
                if _STAMP.unpack_from(value)[0] >= cutoff:
                    break
                doomed.append(key)
            if doomed:
                for key in doomed:
                    self.server.delete(self.table, key)
                shard.trimmed = max(shard.trimmed, _KEY.unpack(doomed[-1])[1])
                changed = True
            if (shard.close_seq is not None and shard.closed_at < cutoff
                    and next(iter(self._scan(shard, 0)), None) is None):
                with self.lock:
                    self.shards.pop(shard.id, None)
                changed = True
        if changed:
            with self.lock:
                self._save()


def _records(value, pk_names):
    """The StreamRecords of one log entry."""
    stamp = _STAMP.unpack_from(value)[0]
    n = _LEN.unpack_from(value, 8)[0]
    row_key = value[12:12 + n]
    pk = list(zip(pk_names, pkcodec.decode_pk(row_key, len(pk_names))[0]))
    return [StreamRecord(action, pk, _record_columns(row_key, action, entries),
                         RecordSequenceInfo(0, stamp, index))
            for index, (action, entries) in enumerate(
                split_records(row_key, decode_entries(row_key, value, 12 + n)))]


def _row_bound(start_key):
    """A region's start key as a row-key bound (regions of a table split on row keys)."""
    n = pkcodec.row_key_len(start_key)
    return start_key if n < 0 else start_key[:n]


def _overlaps(a_start, a_end, b_start, b_end):
    return (a_end is None or b_start < a_end) and (b_end is None or a_start < b_end)


def _text(shard_id):
    return None if shard_id is None else str(shard_id)


