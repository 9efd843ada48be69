"""The stream check of the crash loops: the workload table's stream against
its acknowledgement log (killloop ``--stream``,
tests/test_tablestore_stream_crash.py).

**The reader** (``StreamReader``) reads a table's stream as a client of the
Go or Java SDK would: DescribeStream, then each shard after its parent(s)
(the lineage), a closed shard until ``next_shard_iterator`` is None, an open
one until the iterator comes back unchanged.  It keeps its iterators from
one reopen of the store to the next (they are opaque strings that stay
valid), so each read returns the records written since the last; a new
stream id (the table dropped and made again) starts it afresh.

**The check** (``StreamCheck.check``), after each kill and reopen, once the
table itself is checked (workload.check_state):

* every write the model applies, of every acknowledged operation (a put,
  update or delete, a batch's rows, a transaction's rows; a row refused by
  its condition is no write), is *one* record of its row, read in the order
  acknowledged: its action (PUT_ROW, UPDATE_ROW, DELETE_ROW) and its columns
  as the operation wrote them (a put's cells, an update's PUT of ``v``, the
  new value of an INCREMENTed ``n``, DELETE_ALL of ``pad``; a delete none);
* the operation the kill interrupted (never acknowledged) may have a record
  of each row it wrote, at most one: one if the row shows its write, none if
  it does not (a row whose state is the same either way may go both ways);
* nothing else: a record no write accounts for is a phantom, one read twice
  a duplicate, a write without its record a loss, records of a row out of
  order wrong.

The new records read by the kept iterators are the ones compared; then a
fresh reader reads the whole stream again from its first shards, which must
give every row the same records as all the kept iterators' reads together
(a record that appeared behind a kept iterator, or a record twice).
"""
from collections import Counter

from .workload import TABLE, apply_row

__all__ = ["StreamReader", "StreamCheck", "STATS"]

#: the counters ``StreamCheck`` keeps in its stats dict
STATS = ("stream_checks", "stream_records", "stream_shards", "stream_splits",
         "stream_pending_recorded", "stream_problems")
_LIMIT = 1000


class StreamReader:
    """Reads the stream of ``table`` following the shards' lineage, keeping
    its place (module doc).  ``records``: every record read so far, by row
    (primary-key values), in the order read."""

    def __init__(self, table: str = TABLE):
        self.table = table
        self._reset(None)

    def _reset(self, stream_id):
        self.stream_id = stream_id
        self.fresh = True       # the last read began this stream
        self.parents = set()    # the shards closed by a split, as the lineage names them
        self.iterators = {}     # shard id -> the iterator to go on from
        self.done = set()       # closed shards read to their end
        self.shards = {}        # shard id -> StreamShard, as last described
        self.records = {}

    def read(self, client) -> dict:
        """The records written since the last read, by row, in the order read."""
        streams = client.list_stream(self.table)
        if not streams:
            self._reset(None)
            return {}
        stream_id = streams[0].stream_id
        self.fresh = stream_id != self.stream_id
        if self.fresh:
            self._reset(stream_id)
        shards, start = {}, None
        while True:
            desc = client.describe_stream(stream_id, start)
            shards.update((s.shard_id, s) for s in desc.shards)
            if desc.next_shard_id is None:
                break
            start = desc.next_shard_id
        self.shards = shards
        self.parents.update(p for s in shards.values() for p in (s.parent_id, s.parent_sibling_id)
                            if p is not None)
        new = {}
        progress = True
        while progress:
            progress = False
            for shard in shards.values():
                if shard.shard_id in self.done or any(
                        p is not None and p in shards and p not in self.done
                        for p in (shard.parent_id, shard.parent_sibling_id)):
                    continue
                if self._read_shard(client, shard.shard_id, new):
                    self.done.add(shard.shard_id)
                    progress = True
        for row, records in new.items():
            self.records.setdefault(row, []).extend(records)
        return new

    def _read_shard(self, client, shard_id, out) -> bool:
        """Read one shard as far as it goes; True once it is closed and read to its end."""
        it = self.iterators.get(shard_id)
        if it is None:
            it = client.get_shard_iterator(self.stream_id, shard_id)
        while True:
            resp = client.get_stream_record(it, limit=_LIMIT)
            for record in resp.records:
                out.setdefault(tuple(v for _, v in record.primary_key), []).append(record)
            if resp.next_shard_iterator is None:
                self.iterators.pop(shard_id, None)
                return True
            if resp.next_shard_iterator == it and not resp.records:
                self.iterators[shard_id] = it
                return False
            it = resp.next_shard_iterator


def record_shape(record) -> tuple:
    """What the check compares of a record: its action and its columns
    ``(name, type, value)`` in name order."""
    return (record.action_type,
            tuple(sorted((c.name, c.type, c.value) for c in record.columns)))


def write_shape(row, state) -> tuple:
    """The record a workload row write makes (``state``: the row after it)."""
    if row["t"] == "delete":
        return ("DELETE_ROW", ())
    if row["t"] == "put":
        return ("PUT_ROW", tuple(sorted((c, "PUT", v) for c, v in row["put"].items())))
    cols = [(c, "PUT", v) for c, v in row["put"].items()]
    cols += [(c, "PUT", state[c]) for c in row.get("inc", {})]
    cols += [(c, "DELETE_ALL_VERSIONS", None) for c in row.get("del", ())]
    return ("UPDATE_ROW", tuple(sorted(cols)))


def expected_writes(model: dict, acked) -> dict:
    """{row: [(op id, record shape)]} of the acknowledged operations, in
    order, as the model applies them (a row refused by its condition writes
    nothing); ``model`` is left as it was."""
    state, out = dict(model), {}
    for op, _ in acked:
        for row in op["rows"]:
            key = tuple(row["k"])
            new, ok = apply_row(state.get(key), row)
            if not ok:
                continue
            if new is None:
                state.pop(key, None)
            else:
                state[key] = new
            out.setdefault(key, []).append((op["id"], write_shape(row, new)))
    return out, state


def pending_writes(state: dict, pending, actual: dict) -> dict:
    """{row: (op id, record shape, landed)} of the operation in flight, for
    the rows it would write (none refused by its condition); ``landed``:
    True if ``actual`` shows the write, False if it shows the row before it,
    None if the two are the same.  A transaction lands as a whole."""
    out = {}
    if pending is None:
        return out
    for row in pending["rows"]:
        key = tuple(row["k"])
        before = state.get(key)
        after, ok = apply_row(before, row)
        if not ok:
            continue
        got = actual.get(key)
        landed = None if before == after else (got == after)
        out[key] = [pending["id"], write_shape(row, after), landed]
    if pending["kind"] == "txn" and any(w[2] for w in out.values()):
        for w in out.values():
            w[2] = True
    return out


class StreamCheck:
    """The stream check (module doc), one per run; ``stats`` gets STATS."""

    def __init__(self, stats: dict, table: str = TABLE):
        self.stats = stats
        for name in STATS:
            stats.setdefault(name, 0)
        self.reader = StreamReader(table)

    def check(self, summary, client, model: dict, acked, pending, actual: dict,
              when: str = None) -> None:
        """Check the stream of the reopened ``client`` against ``model`` (the
        table's state before ``acked``), the acknowledged operations, the one
        in flight and the table read after the reopen (``actual``)."""
        when = when if when is not None else f"cycle {summary.cycles}"
        stats = self.stats
        reader = self.reader
        shards, parents = len(reader.shards), len(reader.parents)
        new = reader.read(client)
        if reader.stream_id is None:
            self._problem(summary, "losses", f"{when}: the table has no stream")
            return
        if reader.fresh:            # a new stream: every shard is new
            shards = parents = 0
        stats["stream_checks"] += 1
        stats["stream_shards"] += len(reader.shards) - shards
        stats["stream_splits"] += len(reader.parents) - parents
        want, state = expected_writes(model, acked)
        maybe = pending_writes(state, pending, actual)
        for row in sorted(set(want) | set(new) | set(maybe), key=repr):
            got = [record_shape(r) for r in new.get(row, [])]
            stats["stream_records"] += len(got)
            expect = [shape for _, shape in want.get(row, [])]
            flight = maybe.get(row)
            if flight is not None:
                op_id, shape, landed = flight
                if len(got) == len(expect) + 1 and got[-1] == shape:
                    expect.append(shape)
                    stats["stream_pending_recorded"] += 1
                    if landed is False:
                        self._problem(summary, "wrong", f"{when}: row {row}: a record of op "
                                      f"{op_id} (in flight), whose write did not land")
                elif landed:
                    self._problem(summary, "losses", f"{when}: row {row}: op {op_id} (in "
                                  f"flight) landed, its record is missing")
            if got != expect:
                self._mismatch(summary, when, row, expect, got)
        self._compare_full(summary, client, when)

    def _mismatch(self, summary, when, row, expect, got):
        missing, extra = Counter(expect) - Counter(got), Counter(got) - Counter(expect)
        if missing:
            self._problem(summary, "losses", f"{when}: row {row}: records missing: "
                                             f"{sorted(missing.elements())[:3]}")
        for shape in extra.elements():
            kind = "duplicate" if shape in expect else "phantom"
            self._problem(summary, "wrong", f"{when}: row {row}: a {kind} record {shape}")
        if not missing and not extra:
            self._problem(summary, "wrong", f"{when}: row {row}: records out of order: "
                                            f"expected {expect}, read {got}")

    def _compare_full(self, summary, client, when):
        """A fresh reader from the first shards: the same records, row by row."""
        fresh = StreamReader(self.reader.table)
        fresh.read(client)
        kept = self.reader.records
        for row in sorted(set(kept) | set(fresh.records), key=repr):
            if fresh.records.get(row, []) != kept.get(row, []):
                self._problem(summary, "wrong", f"{when}: row {row}: a fresh reader reads "
                              f"{len(fresh.records.get(row, []))} records, the kept iterators "
                              f"{len(kept.get(row, []))}")

    def _problem(self, summary, kind, text):
        self.stats["stream_problems"] += 1
        summary.failure(kind, "stream: " + text)
