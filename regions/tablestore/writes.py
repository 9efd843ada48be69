"""The write path of the data API: a row write validated whole, then run under its row lock.

A PutRow, UpdateRow or DeleteRow (alone or as one row of a BatchWriteRow)
goes through two steps:

``prepare``
    checks the request completely against the table's schema and limits
    (validate.py, conditions.py) and returns a ``Prepared`` write; it raises
    before anything is written and touches no state, so BatchWriteRow can
    prepare every row before running any.
``RowWriter.run``
    takes the row's striped lock, reads the row when the write depends on it
    (a row condition, a column condition, an INCREMENT), evaluates the
    condition, and writes the row's entries (cells.py) as one region-server
    write: a PutRow head, a DELETED head, or a batch of UpdateRow deltas.
    One write is one atomic region write, so a row is never half-written.

The capacity units of a write (capacity.py) are computed from the prepared
sizes.  ``RowWriter.run_batch`` is the BatchWriteRow form: the rows of one
table written together (one region write per region), each with its own
result item whatever goes wrong.

The C path: ``RowWriter.write_plain_put``, ``write_plain_update``,
``write_row``, ``write_plain_batch`` and ``write_batch`` are the client's
entries, and the one place where a write takes the C path or this one.  A
plain row written unconditionally (the common PutRow, an UpdateRow that only
puts, a BatchWriteRow of such puts) is checked, encoded and written in one
call of ``_writes.PlainWriter`` (ext/regions/tablestore/_writes.pyx), which
declines anything else before doing anything; then the steps above run.
The client's PutRow, UpdateRow and BatchWriteRow are that one call from the
client's method on, its own checks of the call included
(``write_plain_put``, ``write_plain_update``, ``write_plain_batch``).  The
C path is this module's twin (tests/test_tablestore_rows_c.py holds them to
the same stored bytes and answers); ``LSM_REGIONS_PUREPYTHON=1``
(lsm/purepython.py) turns it off.

Thread-safety: a ``RowWriter`` is shared by the client's threads; writes to a
row hold that row's stripe of ``locks``, so conditional writes and INCREMENT
are atomic per row.  A local transaction's writer (``RowWriter.on``) writes
into the transaction's view instead of the server.
"""
import logging

from regions import PUREPYTHON

from . import _cellcodec, _rowcodec, _writes, cells, pkcodec
from ._writes import stripe, stripe_locks
from .capacity import failed_condition_cu, write_cu
from .conditions import check_condition, evaluate
from .errors import BATCH_WIDE, OTSClientError, OTSServiceError, service_error
from .metadata import (PK_AUTO_INCR, BatchWriteRowResponse, BatchWriteRowResponseItem,
                       BatchWriteRowType, Condition, ReturnType, Row, RowExistenceExpectation)
from .reads import row_entries, visible
from .validate import (BATCH_WRITE_BYTES, CELL_TS_BYTES, INT64_MAX, INT64_MIN, check_pk,
                       check_put_columns, check_return_columns, check_row_size,
                       check_update_columns)

__all__ = ["Prepared", "prepare", "data_size", "check_repeated", "check_atomic", "RowWriter",
           "LOCK_STRIPES", "write_failed", "failed_item"]

log = logging.getLogger("regions.tablestore")

LOCK_STRIPES = 256
# The default condition of a write; never mutated (conditions are read only).
_IGNORE = Condition(RowExistenceExpectation.IGNORE)


class Prepared:
    """A validated row write, ready to run under its row lock.

    ``row_key`` is None until ``run`` for a row with an auto-increment
    column (its value is assigned under the lock); ``pk_bytes`` and
    ``attr_bytes`` are the sizes capacity units and limits count;
    ``return_columns`` the INCREMENT columns whose new values an
    RT_AFTER_MODIFY update returns (None: none), ``returned`` those values,
    set when the row is written.
    """

    __slots__ = ("table", "kind", "pk_values", "row_key", "cells", "condition", "return_type",
                 "pk_bytes", "attr_bytes", "auto_incr", "return_columns", "returned")


def prepare(name, schema, kind, row, condition, return_type, return_column_names=None) -> Prepared:
    """Validate one row write of table ``name`` completely; raises before anything is written."""
    if condition is None:
        condition = _IGNORE
    if not isinstance(condition, Condition):
        raise OTSClientError("condition should be an instance of Condition, not %s"
                             % condition.__class__.__name__)
    if condition.column_condition is not None:
        check_condition(condition.column_condition)
    p = Prepared()
    p.table, p.kind, p.condition, p.return_type = name, kind, condition, return_type
    if not PUREPYTHON and kind in (BatchWriteRowType.PUT, BatchWriteRowType.UPDATE):
        # A plain row (the common case) checked, encoded and sized in one C
        # call; anything else, and every error, by the checks below.
        plain = (_writes.plain_put if kind == BatchWriteRowType.PUT else _writes.plain_update)(
            schema, row.primary_key, row.attribute_columns)
        if plain is not None:
            p.pk_values, p.row_key, p.cells, p.pk_bytes, p.attr_bytes = plain
            p.auto_incr = False
            p.return_columns = check_return_columns(kind, return_type, return_column_names,
                                                    p.cells)
            return p
    now = cells.now_ms()
    # the columns before the key: the service checks a request's names and
    # values before the key against the schema (the Java SDK's RestrictedItemTest 12)
    if kind == BatchWriteRowType.PUT:
        p.cells = check_put_columns(schema, row.attribute_columns, now)
        values = check_pk(schema, row.primary_key, "put")
    elif kind == BatchWriteRowType.UPDATE:
        # an UpdateRow may make a row with an auto-increment key, as a PutRow
        # (the Java SDK's IncrementRequest.testAutoPkWrite): the row is new
        p.cells = check_update_columns(schema, row.attribute_columns, now)
        values = check_pk(schema, row.primary_key, "put")
    else:
        values = check_pk(schema, row.primary_key)
        p.cells = []
    p.return_columns = check_return_columns(kind, return_type, return_column_names, p.cells)
    # EXPECT_NOT_EXIST is a condition of UpdateRow and DeleteRow too, a row
    # that is there fails it (the Java SDK's current CapacityUnitTest,
    # DeleteRowTest, UpdateRowTest, IncrementRequest; ecto_tablestore's
    # docs), not the guide's "Invalid condition" (the PHP SDK's tests
    # of that are commented out as obsolete)
    expect = condition.row_existence_expectation
    p.auto_incr = any(v is PK_AUTO_INCR for v in values)
    if p.auto_incr and (expect != RowExistenceExpectation.IGNORE
                        or condition.column_condition is not None):
        raise service_error("auto_incr_condition")
    p.pk_values = values
    p.row_key = None if p.auto_incr else _rowcodec.encode_pk(schema.types, values)
    p.pk_bytes = _rowcodec.pk_size(schema.names, [0 if v is PK_AUTO_INCR else v
                                              for v in values] if p.auto_incr else values)
    p.attr_bytes = _cellcodec.cells_size(p.cells if kind == BatchWriteRowType.PUT
                                     else [(c[1], c[2]) for c in p.cells])
    if kind != BatchWriteRowType.DELETE:
        check_row_size(kind, p.pk_bytes + p.attr_bytes)
    return p


def data_size(p) -> int:
    """A prepared write's data size as BatchWriteRow's limit counts it
    (BATCH_WRITE_BYTES): its CU size, and CELL_TS_BYTES for each cell whose
    timestamp the request gave (a cell's last item; None: the writer's).
    PlainWriter.batch, its C twin, takes only cells without one."""
    return p.pk_bytes + p.attr_bytes + CELL_TS_BYTES * sum(1 for c in p.cells if c[-1] is not None)


def check_repeated(plans) -> list:
    """The service's rules on a row repeated in one table's batch: none of its
    writes may carry a condition (the whole request's error), and if one
    increments it, it may not be repeated at all (the atomic counter notes:
    each of its writes gets the error, the other rows are written).  Returns
    ``plans`` with those errors in place of the rows'."""
    seen = {}
    for i, p in enumerate(plans):
        if isinstance(p, OTSServiceError) or p.row_key is None:
            continue
        seen.setdefault(p.row_key, []).append(i)
    repeated = [group for group in seen.values() if len(group) > 1]
    for group in repeated:
        for i in group:
            condition = plans[i].condition
            if condition.row_existence_expectation != RowExistenceExpectation.IGNORE:
                raise service_error("batch_repeated_expectation")
            if condition.column_condition is not None:
                raise service_error("batch_repeated_condition")
    plans = list(plans)
    for group in repeated:
        if any(c[0] == "INCREMENT" for i in group if plans[i].kind == BatchWriteRowType.UPDATE
               for c in plans[i].cells):
            error = service_error("batch_repeated_increment")
            for i in group:
                plans[i] = error
    return plans


def check_atomic(plans) -> list:
    """The service's rule of an atomic BatchWriteRow (``is_atomic``), for one
    table's rows: they all share the first row's partition key value (the
    first primary-key column); otherwise every row gets OTSDataOutOfRange
    naming the first row's value and the first other one (the Java SDK's
    tests: all rows fail, each with that text).  Rows whose preparation
    failed are skipped here (their error fails the batch anyway, see
    RowWriter.run_atomic).  Returns ``plans``, or the error once per row."""
    first = None
    for p in plans:
        if isinstance(p, OTSServiceError):
            continue
        value = p.pk_values[0]          # never PK_AUTO_INCR: the first column cannot be one
        if first is None:
            first = value
        elif value != first:
            error = service_error("atomic_out_of_range", atomic=pkcodec.value_text(first),
                                  data=pkcodec.value_text(value))
            return [error] * len(plans)
    return plans


def write_failed(table, count, exc) -> frozenset:
    """The keys that a region-server write of ``count`` rows of ``table``
    applied before it failed with ``exc`` (its ``applied_keys``; none when it
    names none), the failure logged: the one statement of a failed batch
    write, for ``RowWriter._run_group`` and the C path's batch
    (``_writes.PlainWriter``, handed it at construction)."""
    log.error("BatchWriteRow: writing %d rows of table %r failed: %s", count, table, exc)
    return getattr(exc, "applied_keys", frozenset())


def failed_item(kind, table, exc) -> BatchWriteRowResponseItem:
    """The BatchWriteRow result item of a row of ``kind`` that failed with ``exc``."""
    if isinstance(exc, OTSServiceError):
        cu = (failed_condition_cu(kind == BatchWriteRowType.DELETE)
              if exc.code == "OTSConditionCheckFail" else None)
        return BatchWriteRowResponseItem(False, exc.code, exc.message, cu, None)
    log.error("BatchWriteRow: row of table %r failed", table, exc_info=exc)
    exc = service_error("internal_error")
    return BatchWriteRowResponseItem(False, exc.code, exc.message, None, None)


class RowWriter:
    """Runs row writes against ``server`` (a RegionServer, or a local
    transaction's view) under the striped row ``locks``.

    ``gens`` numbers the entries written (cells.Generations), ``auto`` the
    auto-increment values; ``transactions`` (transactions.TransactionManager)
    checks every write outside a transaction against the partitions that
    transactions hold; ``txn`` is the transaction this writer writes in.
    ``schemas`` is the client's dict (name -> Schema), read at each write;
    ``resolve(table_name)`` -> (name, schema) is the client's check of a
    table a request names (it raises the service's error for one that is
    missing or not writable).
    """

    def __init__(self, server, locks, gens, auto, transactions, schemas, resolve, txn=None):
        self.server, self.locks, self.gens, self.auto = server, locks, gens, auto
        self.transactions, self.txn = transactions, txn
        self.schemas, self.resolve = schemas, resolve
        # indexes.Indexer: a write to a table with indexes feeds them (set by
        # the client; None in a transaction, whose commit feeds them)
        self.indexer = None
        self.c_path = None          # _writes.PlainWriter once start_c_path ran
        self._c_schemas = {}        # the tables the C path may write (allow_c_path)
        # OTSClient.put_row / update_row whole, for a plain row: PlainWriter.put_row /
        # update_row once start_c_path ran; until then, and once stopped, they decline
        self.write_plain_put = self.write_plain_update = _declined

    def on(self, txn) -> "RowWriter":
        """This writer writing into local transaction ``txn`` (its view is the
        server), by this module's path only (a transaction buffers its writes)."""
        return RowWriter(txn, self.locks, self.gens, self.auto, self.transactions, self.schemas,
                         self.resolve, txn)

    # -- the entries: the C path, else prepare and run --------------------------
    def start_c_path(self):
        """Write plain rows in one C call (``_writes.PlainWriter``), feeding
        ``indexer`` as ``run`` does; never under LSM_REGIONS_PUREPYTHON nor in
        a transaction.  Called once ``indexer`` is set."""
        if not PUREPYTHON and self.txn is None:
            self.c_path = _writes.PlainWriter(self._c_schemas, self.server, self.locks,
                                              self.gens, self.transactions, self.indexer,
                                              failed_item, write_failed)
            self.write_plain_put = self.c_path.put_row
            self.write_plain_update = self.c_path.update_row

    def stop_c_path(self):
        """From now on every write takes this module's path (the client closed)."""
        self.c_path = None
        self.write_plain_put = self.write_plain_update = _declined

    def allow_c_path(self, name, schema):
        """Whether the C path may write table ``name``: ``schema``, or None when
        it may not (an index table, whose writes are refused by ``resolve``; a
        table with a stream, whose records need the entries ``run`` hands the
        feed)."""
        if schema is None:
            self._c_schemas.pop(name, None)
        else:
            self._c_schemas[name] = schema

    def write_row(self, kind, table_name, row, condition, return_type,
                  return_column_names=None):
        """A PutRow, UpdateRow or DeleteRow of one row outside a transaction:
        (consumed CU, return_row or None).  The C path when it takes the row,
        else ``prepare_row`` and ``run_prepared``."""
        if self.c_path is not None and return_column_names is None:
            if kind == BatchWriteRowType.PUT:
                got = self.c_path.put(table_name, row, condition, return_type)
            elif kind == BatchWriteRowType.UPDATE:
                got = self.c_path.update(table_name, row, condition, return_type)
            else:
                got = None
            if got is not None:
                return got
        return self.run_prepared(self.prepare_row(kind, table_name, row, condition, return_type,
                                                  return_column_names))

    def prepare_row(self, kind, table_name, row, condition, return_type,
                    return_column_names=None) -> Prepared:
        """``prepare`` of a row of the table a request names (``resolve``)."""
        name, schema = self.resolve(table_name)
        return prepare(name, schema, kind, row, condition, return_type, return_column_names)

    def run_prepared(self, p: Prepared):
        """``run`` with the table's current schema (table_not_exist if it was
        deleted since ``p`` was prepared)."""
        schema = self.schemas.get(p.table)
        if schema is None:
            raise service_error("table_not_exist")
        return self.run(p, schema)

    def write_plain_batch(self, request):
        """A BatchWriteRow request of plain puts written whole, the client's
        checks of it included, in one call of the C path
        (``PlainWriter.batch_request``): its response, or None when the C
        path is off or leaves the request to the client's checks and
        ``write_batch`` (as it does any atomic batch)."""
        if self.c_path is None or getattr(request, "is_atomic", False):
            return None
        return self.c_path.batch_request(request)

    def write_batch(self, request, atomic=False) -> BatchWriteRowResponse:
        """A BatchWriteRow's rows (the request checked by the caller: rows in
        every table, within BATCH_WRITE_ROWS).  Plain unconditional puts, all
        of them, take the C path in one call; otherwise every row is prepared
        first (a whole-request error raises before any row is written, a
        row's service error becomes its result), then each table's rows run
        together (``run_batch``; ``atomic``: ``check_atomic``, ``run_atomic``)."""
        if self.c_path is not None and not atomic:
            response = self.c_path.batch(request.items, BATCH_WRITE_BYTES)
            if response is not None:
                return BatchWriteRowResponse.of_puts(response)
        prepared = {}
        size = 0
        for table_name, item in request.items.items():
            plans = []
            for row_item in item.row_items:
                try:
                    p = self.prepare_row(row_item.type, table_name, row_item.row,
                                         row_item.condition, row_item.return_type,
                                         getattr(row_item, "return_column_names", None))
                    size += data_size(p)
                    plans.append(p)
                except OTSServiceError as exc:
                    if getattr(exc, "key", None) in BATCH_WIDE:
                        raise
                    plans.append(exc)
            plans = check_repeated(plans)
            prepared[table_name] = check_atomic(plans) if atomic else plans
        if size > BATCH_WRITE_BYTES:
            raise service_error("batch_write_size", limit=BATCH_WRITE_BYTES, size=size)
        response = {}
        for table_name, plans in prepared.items():
            run = self.run_atomic if atomic else self.run_batch
            response[table_name] = run(plans, self.schemas.get(table_name))
        return BatchWriteRowResponse(request, response)

    def _assign_auto(self, p, schema):
        """Give an auto-increment row its key values (once, before its lock)."""
        if p.row_key is None:
            p.pk_values = [self.auto.next() if v is PK_AUTO_INCR else v for v in p.pk_values]
            p.row_key = _rowcodec.encode_pk(schema.types, p.pk_values)

    def _row_ops(self, p, schema, now):
        """The (key, value) entries of write ``p``, under its row lock: reads
        the row when the write depends on it, raises condition_failed (or an
        INCREMENT error) when it may not be written."""
        name, row_key, cond = p.table, p.row_key, p.condition
        self.transactions.check_write(name, row_key, self.txn, p.pk_bytes + p.attr_bytes)
        live = None
        if (cond.row_existence_expectation != RowExistenceExpectation.IGNORE
                or cond.column_condition is not None
                or (p.kind == BatchWriteRowType.UPDATE
                    and any(c[0] == "INCREMENT" for c in p.cells))):
            head, deltas = cells.split_entries(len(row_key),
                                               row_entries(self.server, name, row_key))
            live = visible(len(row_key), head, deltas, schema.ttl, schema.max_versions, now)
            expect = cond.row_existence_expectation
            if ((expect == RowExistenceExpectation.EXPECT_EXIST and live is None)
                    or (expect == RowExistenceExpectation.EXPECT_NOT_EXIST and live is not None)
                    or (cond.column_condition is not None
                        and not evaluate(cond.column_condition, live or {}))):
                raise service_error("condition_failed")
        if p.kind == BatchWriteRowType.PUT:
            return [(cells.head_key(row_key), _cellcodec.put_head(self.gens.next(), p.cells, now))]
        if p.kind == BatchWriteRowType.DELETE:
            return [(cells.head_key(row_key), cells.encode_deleted_head(self.gens.next()))]
        return self._update_ops(p, live, now)

    @staticmethod
    def _success(p, schema):
        """(consumed CU, return_row or None) of a written row: its primary key
        (RT_PK), or the new values of its return columns (RT_AFTER_MODIFY),
        in name order and without the key, as the service returns them (the
        ex_aliyun_ots SDK's tests read ``{nil, [{"count", 1, ts}]}``)."""
        return_row = None
        if p.return_type == ReturnType.RT_PK:
            return_row = Row(list(zip(schema.names, p.pk_values)))
        elif p.return_columns:
            return_row = Row([], sorted(p.returned))
        return write_cu(p.pk_bytes, p.attr_bytes, p.condition), return_row

    def run(self, p: Prepared, schema):
        """Execute ``p`` under its row lock: (consumed CU, return_row or None)."""
        self._assign_auto(p, schema)
        with self.locks[stripe(p.row_key, len(self.locks))]:
            ops = self._row_ops(p, schema, cells.now_ms())
            feed = (self.indexer.before_write(p.table, [p.row_key], [ops])
                    if self.indexer is not None else None)
            landed = ()
            try:
                if len(ops) == 1:
                    self.server.put(p.table, *ops[0])
                else:
                    self.server.write(p.table, ops)
                landed = None
            finally:
                if feed is not None:
                    self.indexer.after_write(p.table, [p.row_key], feed, landed)
        return self._success(p, schema)

    def _update_ops(self, p, live, now):
        """The deltas of UpdateRow ``p`` (cells.py), INCREMENTs resolved against
        ``live``; the new values of its return columns in ``p.returned``."""
        row_key, ops, returned = p.row_key, p.cells, []
        out = []
        if any(op == "PUT" or op == "INCREMENT" for op, _, _, _ in ops):
            # The row exists from now on, whatever its columns become (cells.py).
            out.append((cells.exists_key(row_key, self.gens.next()), cells.EXISTS_VALUE))
        for op, col, value, ts in ops:
            if ts is None and op != "DELETE_ALL":
                ts = now
            key = cells.delta_key(row_key, col, self.gens.next())
            if op == "PUT":
                out.append((key, cells.encode_put_delta(ts, value)))
            elif op == "DELETE":
                out.append((key, cells.encode_delete_one(ts)))
            elif op == "DELETE_ALL":
                out.append((key, cells.encode_delete_all()))
            else:
                current = live.get(col) if live else None
                base = current[0][1] if current else 0
                if current and current[0][0] >= ts:
                    ts = current[0][0]  # same version, higher generation: overwrites it
                if not isinstance(base, int) or isinstance(base, bool):
                    raise service_error("increment_on_non_integer", column=col)
                result = base + value
                if not INT64_MIN <= result <= INT64_MAX:
                    raise service_error("increment_overflow", column=col)
                if live is not None:
                    live[col] = [(ts, result)] + (current or [])
                if p.return_columns and col in p.return_columns:
                    returned.append((col, result, ts))
                out.append((key, cells.encode_put_delta(ts, result)))
        p.returned = returned
        return out

    def run_batch(self, plans, schema) -> list:
        """One table's rows of a BatchWriteRow, run: their result items, in order.

        ``plans`` are Prepared writes or the OTSServiceErrors their preparation
        raised; ``schema`` is the table's (None: it was deleted meanwhile).
        The rows are written together: under the locks of all their rows
        (taken in stripe order), each row's condition is checked and its
        entries added to one batch, which the region server applies as one
        write per region (one WAL record and, with sync, one fsync per region
        instead of one per row).  A row key seen again starts a new group, so
        a repeated row's later writes come after its earlier ones (never one
        that increments it: check_repeated refuses that).  Each row
        still gets its own result, whatever goes wrong (``run_reported``); if
        a region's part fails, exactly the rows of the parts that were not
        applied are reported failed.
        """
        results = [None] * len(plans)
        group, keys = [], set()
        for i, p in enumerate(plans):
            if isinstance(p, OTSServiceError) or schema is None:
                results[i] = self.run_reported(p, schema)
                continue
            self._assign_auto(p, schema)
            if p.row_key in keys:
                self._run_group(plans, group, schema, results)
                group, keys = [], set()
            group.append(i)
            keys.add(p.row_key)
        if group:
            self._run_group(plans, group, schema, results)
        return results

    def run_atomic(self, plans, schema) -> list:
        """One table's rows of an atomic BatchWriteRow (check_atomic passed),
        run all or nothing: their result items, in order.

        If any row cannot be written (its preparation failed, its condition
        failed, an INCREMENT error), no row is: that row gets its own error
        and every other row the first such error (ours: the service's text for
        rows failed by another is not known).  Otherwise all rows, repeated
        ones included (check_repeated refused conditions and increments on
        them, so no row reads another's write), are written as one batch under
        the locks of all of them, after every condition was checked.  One
        table's rows are one partition key value, hence in one region (splits
        never divide a partition key: split_boundary, and pre-split points are
        partition key values), so the batch is one region write: one WAL
        record, all or nothing, also across a crash.
        """
        results = [None] * len(plans)
        first = next((p for p in plans if isinstance(p, OTSServiceError)), None)
        if first is not None or schema is None:
            if first is None:
                first = service_error("table_not_exist")
            for i, p in enumerate(plans):
                results[i] = self.run_reported(p if isinstance(p, OTSServiceError) else first,
                                               schema)
            return results
        for p in plans:
            self._assign_auto(p, schema)
        self._run_group(plans, list(range(len(plans))), schema, results, atomic=True)
        return results

    def _run_group(self, plans, group, schema, results, atomic=False):
        """Write the rows ``group`` (indexes of ``plans``; distinct row keys
        unless ``atomic``) as one batch; ``atomic``: a row that fails fails
        them all, before anything is written (run_atomic)."""
        locks = stripe_locks(self.locks, [plans[i].row_key for i in group])
        for lock in locks:
            lock.acquire()
        try:
            pairs, written, first_key, row_ops = [], [], {}, []
            now = cells.now_ms()
            for i in group:
                p = plans[i]
                try:
                    ops = self._row_ops(p, schema, now)
                except Exception as exc:  # noqa: BLE001 -- the row's own result
                    results[i] = self._failed(p, exc)
                    if atomic:
                        cause = results[i]
                        for j in group:
                            if j != i:
                                results[j] = BatchWriteRowResponseItem(
                                    False, cause.error_code, cause.error_message, None, None)
                        return
                    continue
                pairs += ops
                written.append(i)
                row_ops.append(ops)
                first_key[i] = ops[0][0]
            if not written:
                return
            table, rows = plans[written[0]].table, [plans[i].row_key for i in written]
            feed = (self.indexer.before_write(table, rows, row_ops)
                    if self.indexer is not None else None)
            applied = frozenset()
            try:
                self.server.write(table, pairs)
                applied = None
            except Exception as exc:  # noqa: BLE001 -- reported row by row below
                applied = write_failed(table, len(written), exc)
                failure = exc
            finally:
                if feed is not None:
                    self.indexer.after_write(table, rows, feed, None if applied is None else {
                        plans[i].row_key for i in written if first_key[i] in applied})
            for i in written:
                if applied is None or first_key[i] in applied:
                    results[i] = _written_item(*self._success(plans[i], schema))
                else:
                    results[i] = self._failed(plans[i], failure)
        finally:
            for lock in reversed(locks):
                lock.release()

    @staticmethod
    def _failed(p, exc) -> BatchWriteRowResponseItem:
        """The result item of a row that failed with ``exc``."""
        return failed_item(p.kind, p.table, exc)

    def run_reported(self, p, schema) -> BatchWriteRowResponseItem:
        """One row of a batch, run alone: its result item, whatever goes wrong.

        ``p`` is a Prepared write or the OTSServiceError its preparation
        raised.  Past this point rows are being written, so nothing may escape
        and leave the batch half-applied and unreported: a service error is
        the row's own error; any other exception (a fault of ours) is logged
        and reported as the row's OTSInternalServerError.  A row is one atomic
        region write, so a failed row wrote nothing (unless the fault came
        after its write, which only the log can tell).
        """
        if isinstance(p, OTSServiceError):
            return BatchWriteRowResponseItem(False, p.code, p.message, None, None)
        try:
            if schema is None:
                raise service_error("table_not_exist")
            result = self.run(p, schema)
        except Exception as exc:  # noqa: BLE001 -- reported as the row's result, see above
            return self._failed(p, exc)
        return _written_item(*result)


def _declined(table_name, row, condition, return_type, transaction_id, return_column_names):
    """``RowWriter.write_plain_put`` and ``write_plain_update`` while the C
    path is off: every call left to the client's Python path."""
    return None


def _written_item(consumed, row) -> BatchWriteRowResponseItem:
    """The BatchWriteRow result item of a row written, with its return row (RT_PK's
    key, RT_AFTER_MODIFY's columns) if it has one."""
    return BatchWriteRowResponseItem(True, None, None, consumed, row.primary_key if row else None,
                                     row.attribute_columns if row else None)
