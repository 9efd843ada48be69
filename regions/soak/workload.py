"""The crash experiments' shared workload, its acknowledgement log and the
expected-state check (RocksDB's expected state, HBase's big linked list).

The workload runs one operation at a time through the embedded Tablestore API
(``regions.tablestore.OTSClient``) on table ``soak``: primary key ``(p
INTEGER, r INTEGER)``, pre-split at ``SPLIT_POINTS``, auto-splitting with the
tiny thresholds of ``server_options``.  Operations, drawn from a seeded
``random.Random``:

* ``put`` (condition IGNORE or EXPECT_NOT_EXIST), ``update`` (PUT, DELETE_ALL
  and INCREMENT of the counter column ``n``; IGNORE or EXPECT_EXIST),
  ``delete`` (IGNORE or EXPECT_EXIST): one row each;
* ``batch``: BatchWriteRow of 1 to 200 distinct rows of the three kinds;
* ``txn``: a local transaction on one partition key value, 1 to 8 rows,
  committed;
* ``node``: a linked-list node (``node`` = k, ``prev`` = k - 1) in a ring of
  ``NODE_SLOTS`` rows that no other operation touches.

Every value written names the operation that wrote it (``v = "o<id>"``), so a
phantom (a value nobody wrote) cannot hide.

**The log.**  Before each call the runner logs ``B <op as JSON>``, after it
``A <id> <per-row outcomes>`` (True: applied, False: condition failed);
``AckFile`` appends each line and flushes it before the next call, so after a
kill -9 the file holds every acknowledgement the child made.  The workload is
sequential: at most one operation is pending (begun, never acknowledged).

**The check** (``check_state``), against a model (``{(p, r): {column:
value}}``) that the caller carries from cycle to cycle:

* every acknowledged operation is applied to the model; its logged outcomes
  must be the model's (a condition that failed must have been false);
* every row the pending operation does not touch equals the model: a row
  missing is a *loss*, anything else *wrong*;
* the pending operation is all-or-nothing: each row of a batch or a single
  write is either untouched or fully applied (an INCREMENT once, never twice);
  a transaction's rows are all untouched or all applied;
* linked list: every node's predecessor slot holds that node or a newer one
  (a *dangling link* counts as a loss: an earlier write vanished while a later
  one survived, a hole).

``check_prefix`` is the check after a power cut without fsync
(``sync=False``): acknowledged writes not yet synced may be lost, but each
partition key value (whose rows live in one region, hence one WAL) must come
back as its state after a *prefix* of its writes (a row of a batch, a single
write, or a whole transaction each count as one write): a later write kept
while an earlier one is lost (a hole) is a loss.

**Secondary indexes** (``create_table(client, indexes=True)``: killloop
``--indexes``, tests/test_tablestore_index_crash.py): the table then declares
its columns and carries ``INDEXES``: a global index on ``v`` (every write
moves its row to a new key), a local one on ``(p, n)`` (rows without a
counter have no entry; an INCREMENT moves the row) and a global one on
``node`` (the linked list's nodes only); ``churn_index`` drops or creates
(with its base data, back-filled in the background) a fourth, on ``pad``.
``check_indexes`` waits for the global indexes and back-fills and compares
every index with the table (regions.tablestore.indexcheck): a missing, a
phantom or a wrong entry is a wrong result.

The caller then carries the state it read as the next cycle's model.
``check_regions`` and ``check_files`` add the store-level checks:
``RegionServer.check()`` (regions sorted, contiguous, covering the key space;
meta and files agree) and ``lsm.tools.verify`` of every region store (every
table checksum).
"""
import json
import os
import random

import lsm
import lsm.tools
import regions
from regions.meta import region_dir_name
from regions.tablestore import (BatchWriteRowRequest, CapacityUnit, Condition, DeleteRowItem,
                                Direction, INF_MAX, INF_MIN, OTSClient, OTSServiceError,
                                PutRowItem, ReservedThroughput, Row, RowExistenceExpectation,
                                SecondaryIndexMeta, SecondaryIndexType, TableInBatchWriteRowItem,
                                TableMeta, TableOptions, UpdateRowItem)
from regions.tablestore import indexcheck
from regions.tablestore.streams import StreamSpecification

__all__ = ["TABLE", "INITIAL_REGIONS", "server_options", "create_table", "node_key", "Workload",
           "AckFile", "MemoryLog", "read_log", "read_state", "check_state", "check_prefix",
           "check_regions", "check_files", "next_node", "verify_reopened", "INDEXES",
           "CHURN_INDEX", "churn_index", "check_indexes"]

TABLE = "soak"
PARTITIONS = 32
ROWS = 16                       # r in [0, ROWS): the rows operations pick from
SPLIT_POINTS = [8, 16, 24]
INITIAL_REGIONS = len(SPLIT_POINTS) + 1
NODE_BASE, NODE_SLOTS = 1000, 128   # linked-list ring: r = NODE_BASE + slot
MAX_BATCH = 200
KiB = 1 << 10

_CONDITIONS = {"I": RowExistenceExpectation.IGNORE, "E": RowExistenceExpectation.EXPECT_EXIST,
               "N": RowExistenceExpectation.EXPECT_NOT_EXIST}
_CONDITION_FAILED = "OTSConditionCheckFail"


def server_options(**changes) -> regions.ServerOptions:
    """Tiny thresholds: memtables of 8 KiB, regions split from 24 KiB, so a
    cycle of a few hundred operations flushes, compacts and splits."""
    opts = regions.ServerOptions(
        memtable_bytes=8 * KiB, maintenance_interval=0.02,
        split_policy=regions.ConstantSizeSplitPolicy(24 * KiB, jitter=0.25),
        lsm_options=lsm.Options(block_size=512, compression=False))
    return opts.copy(**changes)


#: the columns the operations write, declared when the table has indexes
COLUMNS = [("v", "STRING"), ("n", "INTEGER"), ("pad", "STRING"), ("node", "INTEGER"),
           ("prev", "INTEGER")]
_GLOBAL, _LOCAL = SecondaryIndexType.GLOBAL_INDEX, SecondaryIndexType.LOCAL_INDEX
#: (name, index columns, attribute columns, type) of the table's indexes (module doc)
INDEXES = (("soak_v", ["v"], ["n"], _GLOBAL), ("soak_pn", ["p", "n"], ["v"], _LOCAL),
           ("soak_node", ["node"], ["prev"], _GLOBAL))
CHURN_INDEX = ("soak_pad", ["pad"], ["v"], _GLOBAL)
#: the table's stream (killloop ``--stream``: regions.soak.streamcheck)
STREAM = StreamSpecification(True, 24)


def _index_meta(index) -> SecondaryIndexMeta:
    name, columns, attributes, kind = index
    return SecondaryIndexMeta(name, list(columns), list(attributes), kind)


def create_table(client, indexes: bool = False, stream: bool = False) -> None:
    """Create the workload's table, pre-split, unless it exists; ``indexes``:
    with its columns declared and ``INDEXES``; ``stream``: with a stream
    (``STREAM``).  A table that exists without the stream asked for is a
    CreateTable that a kill cut short and the reopen did not finish: an
    error (it is one the next open must finish)."""
    if TABLE not in client.list_table():
        client.create_table(TableMeta(TABLE, [("p", "INTEGER"), ("r", "INTEGER")],
                                      COLUMNS if indexes else None),
                            TableOptions(), ReservedThroughput(CapacityUnit(0, 0)),
                            secondary_indexes=[_index_meta(i) for i in INDEXES] if indexes else None,
                            split_points=SPLIT_POINTS, stream_spec=STREAM if stream else None)
    elif stream and not client.list_stream(TABLE):
        raise RuntimeError("table %r exists without its stream: a CreateTable cut short was "
                           "not finished by the open" % TABLE)


def churn_index(client) -> str:
    """Drop ``CHURN_INDEX`` if the table has it, else create it with its base
    data (the back-fill runs in the background); returns what was done."""
    name = CHURN_INDEX[0]
    if any(m.index_name == name for m in client.describe_table(TABLE).secondary_indexes):
        client.delete_secondary_index(TABLE, name)
        return "dropped"
    client.create_secondary_index(TABLE, _index_meta(CHURN_INDEX), True)
    return "created"


def check_indexes(summary, client, stats: dict, table: str = TABLE, when: str = None,
                  timeout: float = 120.0) -> None:
    """Wait for ``table``'s global indexes and back-fills (``timeout``: a hang
    past it), then compare every index with the table
    (indexcheck.check_indexes); each problem is a wrong result, ``when``
    (default: the cycle) naming it.  Counts ``index_checks`` and
    ``index_problems`` in ``stats``."""
    when = when if when is not None else f"cycle {summary.cycles}"
    if not client.wait_for_indexes(table, timeout):
        summary.failure("hangs", f"{when}: the indexes of {table!r} did not catch up within "
                                 f"{timeout:g} s")
        return
    problems = indexcheck.check_indexes(client, table)
    stats["index_checks"] = stats.get("index_checks", 0) + 1
    stats["index_problems"] = stats.get("index_problems", 0) + len(problems)
    for problem in problems:
        summary.failure("wrong", f"{when}: index {problem}")


def node_key(k: int) -> tuple:
    slot = k % NODE_SLOTS
    return (slot % PARTITIONS, NODE_BASE + slot)


# -- generating operations ------------------------------------------------------

class Workload:
    """Seeded operations, run one at a time through ``client`` and logged to ``log``.

    ``next_id``: the first operation id (ids stay unique across cycles, so a
    value always names one write); ``next_node``: the next linked-list node;
    ``nodes=False``: write no node (writes that may be lost without fsync
    must not become link targets: a node points at a durable one).
    """

    KINDS = (("put", 18), ("update", 12), ("increment", 16), ("delete", 8), ("batch", 10),
             ("txn", 8), ("node", 10))

    def __init__(self, client, rng: random.Random, log, next_id: int, next_node: int,
                 nodes: bool = True):
        self.client, self.rng, self.log = client, rng, log
        self.next_id, self.next_node = next_id, next_node
        kinds = [(k, w) for k, w in self.KINDS if nodes or k != "node"]
        self._kinds = [k for k, _ in kinds]
        self._weights = [w for _, w in kinds]

    def step(self) -> None:
        """Generate one operation, log it, run it, log its outcomes."""
        op = self.generate()
        self.log.begin(op)
        oks = run_op(self.client, op)
        self.log.ack(op["id"], oks)

    def generate(self) -> dict:
        rng = self.rng
        op_id, self.next_id = self.next_id, self.next_id + 1
        kind = rng.choices(self._kinds, self._weights)[0]
        if kind == "node":
            k, self.next_node = self.next_node, self.next_node + 1
            row = {"k": node_key(k), "t": "put", "c": "I", "put": {"node": k, "prev": k - 1}}
            return {"id": op_id, "kind": "node", "rows": [row]}
        if kind == "batch":
            n = rng.randint(1, 20) if rng.random() < 0.85 else rng.randint(21, MAX_BATCH)
            keys = rng.sample(range(PARTITIONS * ROWS), n)
            rows = [self._row(op_id, divmod(x, ROWS), rng.choice(("put", "update", "increment",
                                                                    "delete")), True)
                    for x in keys]
            return {"id": op_id, "kind": "batch", "rows": rows}
        if kind == "txn":
            p = rng.randrange(PARTITIONS)
            rows = [self._row(op_id, (p, r), rng.choice(("put", "increment", "delete")), False)
                    for r in rng.sample(range(ROWS), rng.randint(1, 8))]
            return {"id": op_id, "kind": "txn", "rows": rows}
        key = (rng.randrange(PARTITIONS), rng.randrange(ROWS))
        return {"id": op_id, "kind": kind, "rows": [self._row(op_id, key, kind, True)]}

    def _row(self, op_id, key, kind, conditional):
        rng = self.rng
        cond = "I"
        if kind == "put":
            if conditional and rng.random() < 0.3:
                cond = "N"
            pad = "x" * rng.randrange(0, 160)
            return {"k": list(key), "t": "put", "c": cond, "put": {"v": "o%d" % op_id, "pad": pad}}
        if kind == "delete":
            if conditional and rng.random() < 0.4:
                cond = "E"
            return {"k": list(key), "t": "delete", "c": cond}
        if conditional and rng.random() < 0.4:
            cond = "E"
        row = {"k": list(key), "t": "update", "c": cond, "put": {"v": "o%d" % op_id}}
        if kind == "increment":
            row["inc"] = {"n": rng.randint(1, 5)}
        elif rng.random() < 0.5:
            row["del"] = ["pad"]
        return row


def _api_row(row):
    pk = [("p", row["k"][0]), ("r", row["k"][1])]
    if row["t"] == "put":
        return Row(pk, sorted(row["put"].items()))
    if row["t"] == "delete":
        return Row(pk)
    columns = {"PUT": sorted(row["put"].items())}
    if row.get("inc"):
        columns["INCREMENT"] = sorted(row["inc"].items())
    if row.get("del"):
        columns["DELETE_ALL"] = list(row["del"])
    return Row(pk, columns)


def _single(call):
    try:
        call()
        return True
    except OTSServiceError as e:
        if e.code != _CONDITION_FAILED:
            raise
        return False


def run_op(client, op) -> list:
    """Run ``op`` through ``client``; the outcome of each row, in order."""
    kind, rows = op["kind"], op["rows"]
    if kind == "batch":
        items = {"put": PutRowItem, "update": UpdateRowItem, "delete": DeleteRowItem}
        request = BatchWriteRowRequest()
        request.add(TableInBatchWriteRowItem(TABLE, [
            items[r["t"]](_api_row(r), Condition(_CONDITIONS[r["c"]])) for r in rows]))
        response = client.batch_write_row(request)
        results = [item for by_type in (response.table_of_put, response.table_of_update,
                                        response.table_of_delete)
                   for item in by_type.get(TABLE, [])]
        results.sort(key=lambda item: item.index)
        for item in results:
            if not item.is_ok and item.error_code != _CONDITION_FAILED:
                raise RuntimeError(f"batch row {item.index} of op {op['id']}: "
                                   f"{item.error_code} {item.error_message}")
        return [item.is_ok for item in results]
    if kind == "txn":
        tid = client.start_local_transaction(TABLE, [("p", rows[0]["k"][0])])
        for r in rows:
            _write(client, r, tid)
        client.commit_transaction(tid)
        return [True] * len(rows)
    return [_single(lambda: _write(client, rows[0], None))]


def _write(client, row, tid):
    cond = Condition(_CONDITIONS[row["c"]])
    if row["t"] == "put":
        client.put_row(TABLE, _api_row(row), cond, None, tid)
    elif row["t"] == "update":
        client.update_row(TABLE, _api_row(row), cond, None, tid)
    else:
        client.delete_row(TABLE, _api_row(row), cond, None, tid)


# -- the acknowledgement log ----------------------------------------------------

class AckFile:
    """The child's log: one line per begin and per acknowledgement, each
    appended and handed to the OS before the workload goes on."""

    def __init__(self, path: str):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _line(self, text: str) -> None:
        data = (text + "\n").encode()
        while data:
            data = data[os.write(self._fd, data):]

    def begin(self, op: dict) -> None:
        self._line("B " + json.dumps(op, separators=(",", ":")))

    def ack(self, op_id: int, oks: list) -> None:
        self._line("A %d %s" % (op_id, json.dumps(oks)))

    def note(self, tag: str, obj) -> None:
        """Any other line: ``tag`` and ``obj`` as JSON."""
        self._line(tag + " " + json.dumps(obj))

    def close(self) -> None:
        os.close(self._fd)


class MemoryLog:
    """The same log in memory (the in-process experiments)."""

    def __init__(self):
        self.ops, self.oks = [], {}

    def begin(self, op: dict) -> None:
        self.ops.append(op)

    def ack(self, op_id: int, oks: list) -> None:
        self.oks[op_id] = oks

    def result(self):
        """``(acked, pending)`` as ``read_log`` returns them."""
        return _split(self.ops, self.oks)


def read_log(path: str, notes: dict = None):
    """``(acked, pending)``: the acknowledged operations in order as ``(op,
    oks)`` pairs, and the operation begun but never acknowledged (or None).
    A torn last line (the kill landed mid-write) counts as never written.
    Lines of other tags (``AckFile.note``) go to ``notes`` (tag -> list of
    objects) when given, else are an error."""
    ops, oks = [], {}
    with open(path, "rb") as f:
        data = f.read()
    for line in data.split(b"\n")[:-1]:      # the part after the last newline is torn
        tag, _, rest = line.decode().partition(" ")
        if tag == "B":
            ops.append(json.loads(rest))
        elif tag == "A":
            op_id, _, outcome = rest.partition(" ")
            oks[int(op_id)] = json.loads(outcome)
        elif notes is not None:
            notes.setdefault(tag, []).append(json.loads(rest))
        else:
            raise ValueError(f"{path}: unreadable log line {line[:80]!r}")
    return _split(ops, oks)


def _split(ops, oks):
    acked = [(op, oks[op["id"]]) for op in ops if op["id"] in oks]
    pending = [op for op in ops if op["id"] not in oks]
    if len(pending) > 1 or (pending and pending[0] is not ops[-1]):
        raise ValueError(f"more than one operation pending: {[op['id'] for op in pending]}")
    return acked, (pending[0] if pending else None)


# -- the expected state ---------------------------------------------------------

def apply_row(state, row):
    """``(new_state, applied)``: one row write of the workload on a row's
    state (None: the row does not exist; else ``{column: value}``)."""
    cond = row["c"]
    if (cond == "E" and state is None) or (cond == "N" and state is not None):
        return state, False
    if row["t"] == "delete":
        return None, True
    if row["t"] == "put":
        return dict(row["put"]), True
    new = dict(state or {})
    new.update(row["put"])
    for col in row.get("del", ()):
        new.pop(col, None)
    for col, delta in row.get("inc", {}).items():
        new[col] = new.get(col, 0) + delta
    return new, True


def apply_op(model: dict, op: dict) -> list:
    """Apply ``op`` to ``model`` in place; the outcome of each row."""
    oks = []
    for row in op["rows"]:
        key = tuple(row["k"])
        new, ok = apply_row(model.get(key), row)
        if new is None:
            model.pop(key, None)
        else:
            model[key] = new
        oks.append(ok)
    return oks


def read_state(client) -> dict:
    """Every row of the table as ``{(p, r): {column: value}}`` (latest versions)."""
    state = {}
    start = [("p", INF_MIN), ("r", INF_MIN)]
    while start is not None:
        _, start, rows, _ = client.get_range(TABLE, Direction.FORWARD, start,
                                             [("p", INF_MAX), ("r", INF_MAX)], max_version=1)
        for row in rows:
            key = tuple(v for _, v in row.primary_key)
            if key in state:
                raise AssertionError(f"GetRange returned row {key} twice")
            state[key] = {name: value for name, value, _ts in row.attribute_columns}
    return state


def check_state(summary, model: dict, acked, pending, actual: dict) -> dict:
    """Check ``actual`` against ``model`` advanced by ``acked`` and ``pending``
    (module docstring), counting failures on ``summary``; returns the next
    model (``actual``, once checked).  ``model`` is changed in place."""
    for op, oks in acked:
        want = apply_op(model, op)
        if want != list(oks):
            summary.failure("wrong", f"op {op['id']} ({op['kind']}) reported {oks}, "
                                     f"the model says {want}")
        summary.verified += 1
    touched = {tuple(r["k"]) for r in pending["rows"]} if pending else set()
    for key in sorted(set(model) | set(actual), key=repr):
        if key in touched:
            continue
        if model.get(key) != actual.get(key):
            kind = "losses" if key not in actual or _missing(model.get(key), actual[key]) else "wrong"
            summary.failure(kind, f"row {key}: expected {model.get(key)}, found {actual.get(key)}")
    if pending:
        _check_pending(summary, model, pending, actual)
    _check_links(summary, actual)
    return actual


def check_prefix(summary, model: dict, acked, pending, actual: dict, stats=None) -> dict:
    """``check_state`` for unsynced writes (module docstring): every partition
    key value of ``actual`` is its state in ``model`` after a prefix of its
    writes in ``acked`` then ``pending``.  Returns ``actual``; adds to
    ``stats["unsynced_writes_lost"]`` (if given) the writes past the prefixes."""
    units = {}                      # partition -> [[row, ...] applied at once], in order
    base = dict(model)
    for op, oks in acked:
        want = apply_op(model, op)  # ``model``: the state before the cut, for the outcomes
        if want != list(oks):
            summary.failure("wrong", f"op {op['id']} ({op['kind']}) reported {oks}, "
                                     f"the model says {want}")
        summary.verified += 1
    for op in [op for op, _ in acked] + ([pending] if pending else []):
        if op["kind"] == "txn":
            units.setdefault(op["rows"][0]["k"][0], []).append(op["rows"])
        else:
            for row in op["rows"]:
                units.setdefault(row["k"][0], []).append([row])
    for p in sorted(set(units) | {k[0] for k in base} | {k[0] for k in actual}):
        state = {k: c for k, c in base.items() if k[0] == p}
        found = {k: c for k, c in actual.items() if k[0] == p}
        steps = units.get(p, [])
        for i in range(len(steps) + 1):
            if state == found:
                if stats is not None:
                    stats["unsynced_writes_lost"] = (stats.get("unsynced_writes_lost", 0)
                                                     + len(steps) - i)
                break
            if i < len(steps):
                apply_op(state, {"rows": steps[i]})
        else:
            summary.failure("losses", f"partition {p}: the state is no prefix of its "
                                      f"{len(steps)} writes (a hole or a phantom): {found}")
    return actual


def _missing(want, got):
    return want is not None and any(c not in got for c in want)


def _check_pending(summary, model, pending, actual):
    after = dict(model)
    apply_op(after, pending)
    keys = [tuple(r["k"]) for r in pending["rows"]]
    before_rows = [actual.get(k) == model.get(k) for k in keys]
    after_rows = [actual.get(k) == after.get(k) for k in keys]
    for k, b, a in zip(keys, before_rows, after_rows):
        if not (a or b):
            summary.failure("wrong", f"row {k} of pending op {pending['id']} ({pending['kind']}) "
                                     f"is half applied: before {model.get(k)}, after "
                                     f"{after.get(k)}, found {actual.get(k)}")
    if pending["kind"] == "txn" and not (all(before_rows) or all(after_rows)):
        summary.failure("wrong", f"transaction {pending['id']} is partly applied")


def _check_links(summary, actual):
    for key, cols in actual.items():
        if key[1] < NODE_BASE:
            continue
        prev = cols.get("prev", -1)
        if prev < 0:
            continue
        target = actual.get(node_key(prev))
        if target is None or target.get("node", -1) < prev:
            summary.failure("losses", f"dangling link: node {cols.get('node')} points to node "
                                      f"{prev}, whose slot holds {target}")


def next_node(state: dict) -> int:
    """The next linked-list node to write, given the table's state."""
    return 1 + max((c.get("node", -1) for k, c in state.items() if k[1] >= NODE_BASE), default=-1)


def check_regions(summary, server) -> list:
    """``RegionServer.check()`` (a broken invariant counts as a wrong
    result); returns the ids of the regions the server serves."""
    try:
        server.check()
    except regions.InvariantError as e:
        summary.failure("wrong", f"RegionServer.check: {e}")
    return [r.region_id for t in server.list_tables() for r in server.regions(t)]


def check_files(summary, path: str, region_ids) -> None:
    """``lsm.tools.verify`` of the stores of ``region_ids`` (what
    ``check_regions`` returned) of the server at ``path``, which must be
    closed (an open store may compact meanwhile and delete files its manifest
    names); problems count as wrong results.  Verifying a store reads the
    tables it views in split parents too.  A split parent's own store is not
    verified: it is never opened again, and its manifest may still name a
    grandparent's tables that were rightly deleted once no region used them."""
    for name in (region_dir_name(i) for i in sorted(region_ids)):
        for problem in lsm.tools.verify(os.path.join(path, "regions", name)):
            summary.failure("wrong", f"lsm.tools verify {name}: {problem}")


def verify_reopened(summary, server, path, model, acked, pending, drop=False, check=check_state,
                    indexes=None, stream=None, search=None):
    """Check the reopened ``server`` (at ``path``) against ``model`` and the
    log (``check``: ``check_state`` or ``check_prefix``; ``check_regions``,
    ``check_files``); ``indexes`` (a stats dict): the table's indexes too
    (``check_indexes``); ``stream`` (a streamcheck.StreamCheck): the table's
    stream too; ``search`` (a searchcheck.SearchCheck): its search index too;
    close it.  Returns ``(next model,
    regions of the table)``; ``drop``: delete the table afterwards (the next
    model is then empty).  An exception counts as a crash."""
    try:
        client = OTSClient(path, server=server)   # applies what a kill left in the feed
        exists = TABLE in client.list_table()
        actual = read_state(client) if exists else {}
        before = dict(model)
        model = check(summary, model, acked, pending, actual)
        if indexes is not None and exists:
            check_indexes(summary, client, indexes)
        if stream is not None and exists:
            stream.check(summary, client, before, acked, pending, actual)
        if search is not None and exists:
            search.check(summary, client, actual)
        client.close()                  # its index maintainer stops; the server stays open
        served = check_regions(summary, server)
        n = len(server.regions(TABLE)) if exists else INITIAL_REGIONS
        server.close()
        check_files(summary, path, served)
        if drop and exists:
            with regions.RegionServer.open(path, server.options) as server:
                with OTSClient(path, server=server) as client:
                    client.delete_table(TABLE)
            model, n = {}, INITIAL_REGIONS
        return model, n
    except Exception as e:
        summary.failure("crashes", f"cycle {summary.cycles}: verification raised {e!r}")
        return model, 0
    finally:
        server.close()
