"""Column conditions (write conditions) and filters (reads): validation and evaluation.

One evaluator serves both uses: a write's ``Condition.column_condition`` and a
read's ``column_filter`` are the same filter in Tablestore.  (The read-only
ColumnPaginationFilter is a column window, regions/tablestore/columns.py.)

Semantics (shared/reference/tablestore.md 4.2):
- SingleColumnCondition compares the column's newest version when
  ``latest_version_only`` is True, else passes if any version matches.
- A missing column passes iff ``pass_if_missing``.
- NOT takes exactly one sub-condition; AND/OR take at least two.
- A filter has at most 32 nodes, composite and single alike; the count is
  checked before the operators' arity (the Java SDK's
  UnifiedFilterRestrictionAndParamCheckingTest, run against the service;
  the docs' "up to 10 conditions" is not what the service enforces).
- Comparing values of different types (our rule; the service documents none):
  INTEGER and DOUBLE compare numerically; otherwise values of different types
  are unequal, so EQUAL fails, NOT_EQUAL passes and the ordering comparators
  fail.  ``bytes`` counts as STRING (the SDK sends it as one).

SingleColumnRegexCondition (the docs' ValueTransferRule page, alibabacloud.com
/help/en/tablestore/developer-reference/valuetransferrule, and the filter
page "SingleColumnValueRegexFilter"):
- Without a RegexRule it is a SingleColumnCondition that also allows EXIST /
  NOT_EXIST and whose ``pass_if_missing`` is False (the SDK sends
  ``filter_if_missing`` true).
- With a rule, each version's value is transformed: the regex (1 to 256
  bytes, Perl syntax, here Python's ``re``) is searched in the STRING value;
  the first capture group of the first match, or the whole match when the
  regex has no group, is cast to the rule's CastType.  VT_STRING keeps it,
  VT_INTEGER takes ``[+-]?[0-9]+`` within int64, VT_DOUBLE a finite decimal
  number (ours: the docs name the casts, not their syntax).  A non-STRING
  value, no match, a group that did not take part, or a failed cast all count
  as the version missing (ours: the docs say only STRING columns support it).
- EXIST passes iff the column has a (transformed) value, in its newest
  version when ``latest_version_only`` else in any; NOT_EXIST is its negation.
  Neither looks at ``pass_if_missing``.  The vendor's
  filter_and_condition_update_unitttest test_get_range2 pins these.
- The other comparators compare the transformed value with ``column_value``
  by the rules above; no transformed value -> ``pass_if_missing``.
Pure functions, thread-safe.
"""
import math
import re

from .errors import OTSClientError, not_a_string, service_error
from .metadata import (CastType, ColumnCondition, ComparatorType, CompositeColumnCondition,
                       LogicalOperator, SingleColumnCondition, SingleColumnRegexCondition)
from .validate import MAX_VALUE_BYTES, check_name, decode_name

__all__ = ["check_condition", "check_node_count", "evaluate", "MAX_FILTER_NODES",
           "MAX_REGEX_BYTES"]

MAX_FILTER_NODES = 32
MAX_REGEX_BYTES = 256

_C = ComparatorType
_SINGLE = (SingleColumnCondition, SingleColumnRegexCondition)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_MISSING = object()


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


def _regex_text(regex):
    return regex.decode("utf-8") if isinstance(regex, bytes) else regex


def check_condition(cond):
    """Validate a condition tree as the SDK (client side) and the service would."""
    if not isinstance(cond, ColumnCondition):
        raise OTSClientError("column condition should be an instance of ColumnCondition, not %s"
                             % cond.__class__.__name__)
    check_node_count(cond)
    _check(cond)


def check_node_count(cond):
    """The service's limit on filter nodes (any filter object, or None).  A
    BatchGetRow fails whole on it (the Java SDK's test), so the client checks
    it up front there."""
    if _too_many_nodes(cond):
        raise service_error("filter_count", limit=MAX_FILTER_NODES)


def _too_many_nodes(cond):
    """More than MAX_FILTER_NODES nodes; iterative and stops early, so a tree
    of any depth is counted without deep recursion."""
    stack, count = [cond], 0
    while stack:
        node = stack.pop()
        count += 1
        if count > MAX_FILTER_NODES:
            return True
        if isinstance(node, CompositeColumnCondition):
            stack.extend(node.sub_conditions)
    return False


def _check(cond):
    if isinstance(cond, CompositeColumnCondition):
        n = len(cond.sub_conditions)
        if cond.combinator == LogicalOperator.NOT and n != 1:
            raise service_error("filter_not")
        if cond.combinator != LogicalOperator.NOT and n < 2:
            raise service_error("filter_and_or")
        for sub in cond.sub_conditions:
            if not isinstance(sub, ColumnCondition):
                raise service_error("pagination_position")
            _check(sub)
    elif isinstance(cond, _SINGLE):
        if not isinstance(cond.column_name, (str, bytes)):
            raise not_a_string(cond.column_name)
        check_name(cond.column_name, "attribute")   # (the Java SDK's ParameterLegalityTest)
        v = cond.column_value
        if not isinstance(v, (str, bytes, bytearray, int, float)):
            raise OTSClientError("Unsupported column type: " + str(type(v)))
        if isinstance(v, (str, bytes, bytearray)):
            size = len(v.encode("utf-8")) if isinstance(v, str) else len(v)
            if size > MAX_VALUE_BYTES:   # as a written value (the Java SDK's filter tests)
                raise service_error("attr_too_long", column=decode_name(cond.column_name),
                                    limit=MAX_VALUE_BYTES, length=size)
        rule = getattr(cond, "regex_rule", None)
        if rule is not None:
            _check_rule(rule)
    else:
        raise service_error("filter_invalid")


def _check_rule(rule):
    regex = rule.regex
    if not isinstance(regex, (str, bytes)):
        raise OTSClientError("regex_input should be an instance of str, not %s"
                             % regex.__class__.__name__)
    size = len(regex if isinstance(regex, bytes) else regex.encode("utf-8"))
    if not 1 <= size <= MAX_REGEX_BYTES:
        raise service_error("regex_length", limit=MAX_REGEX_BYTES)
    try:
        re.compile(_regex_text(regex))
    except (re.error, UnicodeDecodeError):
        raise service_error("regex_invalid", regex=regex) from None
    if not isinstance(rule.cast_type, CastType):
        raise service_error("cast_type_invalid", cast_type=rule.cast_type)


def _cast(text, cast_type):
    if cast_type == CastType.VT_STRING:
        return text
    if cast_type == CastType.VT_INTEGER:
        if _INTEGER.fullmatch(text):
            value = int(text)
            if -(1 << 63) <= value < (1 << 63):
                return value
        return _MISSING
    if _DOUBLE.fullmatch(text):
        value = float(text)
        if math.isfinite(value):
            return value
    return _MISSING


def _transform(rule, value):
    """The value ``rule`` makes of a stored value (the value itself without a
    rule), or _MISSING."""
    if rule is None:
        return value
    if not isinstance(value, str):
        return _MISSING
    match = re.search(_regex_text(rule.regex), value)
    if match is None:
        return _MISSING
    text = match.group(1) if match.re.groups else match.group(0)
    if text is None:
        return _MISSING
    return _cast(text, rule.cast_type)


def _single(cond, columns):
    name = decode_name(cond.column_name)
    versions = columns.get(name) or ()
    if cond.latest_version_only:
        versions = versions[:1]
    rule = getattr(cond, "regex_rule", None)
    values = [_transform(rule, v) for _, v in versions]
    values = [v for v in values if v is not _MISSING]
    if cond.comparator == _C.EXIST:
        return bool(values)
    if cond.comparator == _C.NOT_EXIST:
        return not values
    if not values:
        return cond.get_pass_if_missing()
    return any(_compare(v, cond.comparator, cond.column_value) for v in values)


def evaluate(cond, columns):
    """True when ``columns`` ({name: [(ts, value)] newest first}) satisfy ``cond``."""
    if isinstance(cond, _SINGLE):
        return _single(cond, columns)
    subs = cond.sub_conditions
    if cond.combinator == LogicalOperator.NOT:
        return not evaluate(subs[0], columns)
    if cond.combinator == LogicalOperator.AND:
        return all(evaluate(s, columns) for s in subs)
    return any(evaluate(s, columns) for s in subs)
