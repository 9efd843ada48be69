"""Column conditions (write conditions) and filters (reads): validation and evaluation.

One evaluator serves both uses: a write's ``Condition.column_condition`` and a
read's ``column_filter`` are the same filter in Tablestore.

Semantics (shared/reference/tablestore.md 4.2):
- SingleColumnCondition compares the column's newest version when
  ``latest_version_only`` is True, else passes if any version matches.
- A missing column passes iff ``pass_if_missing``.
- NOT takes exactly one sub-condition; AND/OR take at least two.
- Comparing values of different types (our rule; the service documents none):
  INTEGER and DOUBLE compare numerically; otherwise values of different types
  are unequal, so EQUAL fails, NOT_EQUAL passes and the ordering comparators
  fail.  ``bytes`` counts as STRING (the SDK sends it as one).
Pure functions, thread-safe.
"""
from .errors import OTSClientError, service_error
from .metadata import (ColumnCondition, ComparatorType, CompositeColumnCondition,
                       LogicalOperator, SingleColumnCondition)

__all__ = ["check_condition", "evaluate"]

_C = ComparatorType


def _kind(value):
    if value is True or value is False:
        return "BOOLEAN"
    if isinstance(value, (int, float)):
        return "NUMBER"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, bytes):
        return "STRING"
    return "BINARY"


def _norm(value):
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _compare(stored, comparator, wanted):
    if _kind(stored) != _kind(wanted):
        return comparator == _C.NOT_EQUAL
    a, b = _norm(stored), _norm(wanted)
    if comparator == _C.EQUAL:
        return a == b
    if comparator == _C.NOT_EQUAL:
        return a != b
    if comparator == _C.GREATER_THAN:
        return a > b
    if comparator == _C.GREATER_EQUAL:
        return a >= b
    if comparator == _C.LESS_THAN:
        return a < b
    return a <= b


def check_condition(cond):
    """Validate a condition tree as the SDK (client side) and the service would."""
    if isinstance(cond, CompositeColumnCondition):
        n = len(cond.sub_conditions)
        if cond.combinator == LogicalOperator.NOT and n != 1:
            raise service_error("filter_not")
        if cond.combinator != LogicalOperator.NOT and n < 2:
            raise service_error("filter_and_or")
        for sub in cond.sub_conditions:
            check_condition(sub)
    elif isinstance(cond, SingleColumnCondition):
        if not isinstance(cond.column_name, (str, bytes)):
            raise OTSClientError("expect str or unicode type for string, not %s: %s"
                                 % (cond.column_name.__class__.__name__, cond.column_name))
        v = cond.column_value
        if not isinstance(v, (str, bytes, bytearray, int, float)):
            raise OTSClientError("Unsupported column type: " + str(type(v)))
    elif isinstance(cond, ColumnCondition):
        raise service_error("filter_invalid")
    else:
        raise OTSClientError("column condition should be an instance of ColumnCondition, not %s"
                             % cond.__class__.__name__)


def evaluate(cond, columns):
    """True when ``columns`` ({name: [(ts, value)] newest first}) satisfy ``cond``."""
    if isinstance(cond, SingleColumnCondition):
        name = cond.column_name
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        versions = columns.get(name)
        if not versions:
            return cond.pass_if_missing
        if cond.latest_version_only:
            return _compare(versions[0][1], cond.comparator, cond.column_value)
        return any(_compare(v, cond.comparator, cond.column_value) for _, v in versions)
    subs = cond.sub_conditions
    if cond.combinator == LogicalOperator.NOT:
        return not evaluate(subs[0], columns)
    if cond.combinator == LogicalOperator.AND:
        return all(evaluate(s, columns) for s in subs)
    return any(evaluate(s, columns) for s in subs)
