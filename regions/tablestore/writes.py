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
sizes.  ``RowWriter.run_reported`` is the BatchWriteRow form: the row's result
item whatever goes wrong.

Thread-safety: a ``RowWriter`` is shared by the client's threads; writes to a
row hold that row's stripe of ``locks``, so conditional writes and INCREMENT
are atomic per row.  A local transaction's writer (``RowWriter.on``) writes
into the transaction's view instead of the server.
"""
import logging

from . import _rows, cells
from .capacity import failed_condition_cu, write_cu
from .conditions import check_condition, evaluate
from .errors import OTSClientError, OTSServiceError, service_error
from .metadata import (PK_AUTO_INCR, BatchWriteRowResponseItem, BatchWriteRowType, Condition,
                       ReturnType, Row, RowExistenceExpectation)
from .reads import row_entries, visible
from .validate import (INT64_MAX, INT64_MIN, check_pk, check_put_columns, check_row_size,
                       check_update_columns)

__all__ = ["Prepared", "prepare", "check_repeated", "RowWriter", "LOCK_STRIPES"]

log = logging.getLogger("regions.tablestore")

LOCK_STRIPES = 256
# The default condition of a write; never mutated (conditions are read only).
_IGNORE = Condition(RowExistenceExpectation.IGNORE)


def _new_batch():
    import lsm
    return lsm.WriteBatch()


class Prepared:
    """A validated row write, ready to run under its row lock.

    ``row_key`` is None until ``run`` for a row with an auto-increment
    column (its value is assigned under the lock); ``pk_bytes`` and
    ``attr_bytes`` are the sizes capacity units and limits count.
    """

    __slots__ = ("table", "kind", "pk_values", "row_key", "cells", "condition", "return_type",
                 "pk_bytes", "attr_bytes", "auto_incr")


def prepare(name, schema, kind, row, condition, return_type) -> Prepared:
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
    now = cells.now_ms()
    if kind == BatchWriteRowType.PUT:
        values = check_pk(schema, row.primary_key, "put")
        p.cells = check_put_columns(schema, row.attribute_columns, now)
    elif kind == BatchWriteRowType.UPDATE:
        values = check_pk(schema, row.primary_key)
        p.cells = check_update_columns(schema, row.attribute_columns, now)
    else:
        values = check_pk(schema, row.primary_key)
        p.cells = []
    expect = condition.row_existence_expectation
    if expect == RowExistenceExpectation.EXPECT_NOT_EXIST and kind != BatchWriteRowType.PUT:
        raise service_error("update_expect_not_exist" if kind == BatchWriteRowType.UPDATE
                            else "delete_expect_not_exist")
    p.auto_incr = any(v is PK_AUTO_INCR for v in values)
    if p.auto_incr and (expect != RowExistenceExpectation.IGNORE
                        or condition.column_condition is not None):
        raise service_error("auto_incr_condition")
    p.pk_values = values
    p.row_key = None if p.auto_incr else _rows.encode_pk(schema.types, values)
    p.pk_bytes = _rows.pk_size(schema.names, [0 if v is PK_AUTO_INCR else v
                                              for v in values] if p.auto_incr else values)
    p.attr_bytes = _rows.cells_size(p.cells if kind == BatchWriteRowType.PUT
                                    else [(c[1], c[2]) for c in p.cells])
    if kind != BatchWriteRowType.DELETE:
        check_row_size(kind, p.pk_bytes + p.attr_bytes)
    return p


def check_repeated(plans):
    """A row repeated in one table's batch may not carry a condition (the service's rule)."""
    seen = {}
    for p in plans:
        if isinstance(p, OTSServiceError) or p.row_key is None:
            continue
        seen.setdefault(p.row_key, []).append(p)
    for group in seen.values():
        if len(group) < 2:
            continue
        for p in group:
            if p.condition.row_existence_expectation != RowExistenceExpectation.IGNORE:
                raise service_error("batch_repeated_expectation")
            if p.condition.column_condition is not None:
                raise service_error("batch_repeated_condition")


class RowWriter:
    """Runs prepared writes against ``server`` (a RegionServer, or a local
    transaction's view) under the striped row ``locks``.

    ``gens`` numbers the entries written (cells.Generations), ``auto`` the
    auto-increment values; ``transactions`` (transactions.TransactionManager)
    checks every write outside a transaction against the partitions that
    transactions hold; ``txn`` is the transaction this writer writes in.
    """

    def __init__(self, server, locks, gens, auto, transactions, txn=None):
        self.server, self.locks, self.gens, self.auto = server, locks, gens, auto
        self.transactions, self.txn = transactions, txn

    def on(self, txn) -> "RowWriter":
        """This writer writing into local transaction ``txn`` (its view is the server)."""
        return RowWriter(txn, self.locks, self.gens, self.auto, self.transactions, txn)

    def run(self, p: Prepared, schema):
        """Execute ``p`` under its row lock: (consumed CU, return_row or None)."""
        name = p.table
        if p.auto_incr:
            p.pk_values = [self.auto.next() if v is PK_AUTO_INCR else v for v in p.pk_values]
            p.row_key = _rows.encode_pk(schema.types, p.pk_values)
        row_key = p.row_key
        cond = p.condition
        needs_read = (cond.row_existence_expectation != RowExistenceExpectation.IGNORE
                      or cond.column_condition is not None
                      or (p.kind == BatchWriteRowType.UPDATE
                          and any(c[0] == "INCREMENT" for c in p.cells)))
        with self.locks[hash(row_key) % len(self.locks)]:
            self.transactions.check_write(name, row_key, self.txn, p.pk_bytes + p.attr_bytes)
            live = None
            if needs_read:
                head, deltas = cells.split_entries(len(row_key),
                                                   row_entries(self.server, name, row_key))
                live = visible(len(row_key), head, deltas, schema.ttl, schema.max_versions,
                               cells.now_ms())
                expect = cond.row_existence_expectation
                if ((expect == RowExistenceExpectation.EXPECT_EXIST and live is None)
                        or (expect == RowExistenceExpectation.EXPECT_NOT_EXIST
                            and live is not None)
                        or (cond.column_condition is not None
                            and not evaluate(cond.column_condition, live or {}))):
                    raise service_error("condition_failed")
            now = cells.now_ms()
            if p.kind == BatchWriteRowType.PUT:
                self.server.put(name, cells.head_key(row_key),
                                _rows.put_head(self.gens.next(), p.cells, now))
            elif p.kind == BatchWriteRowType.DELETE:
                self.server.put(name, cells.head_key(row_key),
                                cells.encode_deleted_head(self.gens.next()))
            else:
                self.server.write(name, self._update_batch(row_key, p.cells, live, now))
        consumed = write_cu(p.pk_bytes, p.attr_bytes, cond)
        return_row = None
        if p.return_type == ReturnType.RT_PK:
            return_row = Row(list(zip(schema.names, p.pk_values)))
        return consumed, return_row

    def _update_batch(self, row_key, ops, live, now):
        """The deltas of one UpdateRow (cells.py), INCREMENTs resolved against ``live``."""
        batch = _new_batch()
        if any(op == "PUT" or op == "INCREMENT" for op, _, _, _ in ops):
            # The row exists from now on, whatever its columns become (cells.py).
            batch.put(cells.exists_key(row_key, self.gens.next()), cells.EXISTS_VALUE)
        for op, col, value, ts in ops:
            if ts is None and op != "DELETE_ALL":
                ts = now
            key = cells.delta_key(row_key, col, self.gens.next())
            if op == "PUT":
                batch.put(key, cells.encode_put_delta(ts, value))
            elif op == "DELETE":
                batch.put(key, cells.encode_delete_one(ts))
            elif op == "DELETE_ALL":
                batch.put(key, cells.encode_delete_all())
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
                batch.put(key, cells.encode_put_delta(ts, result))
        return batch

    def run_reported(self, p, schema) -> BatchWriteRowResponseItem:
        """One row of a batch, run: its result item, whatever goes wrong.

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
            consumed, row = self.run(p, schema)
        except OTSServiceError as exc:
            cu = (failed_condition_cu(p.kind == BatchWriteRowType.DELETE)
                  if exc.code == "OTSConditionCheckFail" else None)
            return BatchWriteRowResponseItem(False, exc.code, exc.message, cu, None)
        except Exception:  # noqa: BLE001 -- reported as the row's result, see above
            log.exception("BatchWriteRow: row of table %r failed", p.table)
            exc = service_error("internal_error")
            return BatchWriteRowResponseItem(False, exc.code, exc.message, None, None)
        return BatchWriteRowResponseItem(True, None, None, consumed,
                                         row.primary_key if row else None)
