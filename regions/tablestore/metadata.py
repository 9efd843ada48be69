"""The SDK's data classes: same names, fields, defaults and constructor checks.

These mirror ``tablestore.metadata`` of the official Python SDK 6.4.8 so code
written for the cloud service builds its requests unchanged.  Constructors
raise :class:`OTSClientError` exactly where the SDK's do.  Instances are plain
value holders, not thread-safe to mutate while a request uses them.

Code written for the cloud may also keep importing its classes from the SDK
and change only the client: an instance of the SDK's class of the same name
counts as an instance of ours (``isinstance``, through the ``_Mirror``
metaclass; the fields are the same), and ``own_marker`` maps the SDK's
INF_MIN / INF_MAX / PK_AUTO_INCR to ours where primary keys come in.  The
SDK itself is never imported here.
"""
import functools
from enum import EnumMeta, IntEnum

from .errors import OTSClientError

__all__ = [
    "INF_MIN", "INF_MAX", "PK_AUTO_INCR", "TableMeta", "TableOptions", "CapacityUnit",
    "ReservedThroughput", "ReservedThroughputDetails", "ColumnType", "ReturnType",
    "Direction", "UpdateType", "UpdateTableResponse", "DescribeTableResponse", "RowDataItem",
    "LogicalOperator", "ComparatorType", "ColumnConditionType", "ColumnCondition",
    "CompositeColumnCondition", "SingleColumnCondition", "CastType", "RegexRule",
    "SingleColumnRegexCondition", "ColumnPaginationFilter", "RowExistenceExpectation",
    "Condition", "Row", "RowItem", "PutRowItem", "UpdateRowItem", "DeleteRowItem",
    "TableInBatchGetRowItem", "BatchGetRowRequest", "BatchGetRowResponse",
    "BatchWriteRowType", "TableInBatchWriteRowItem", "BatchWriteRowRequest",
    "BatchWriteRowResponse", "BatchWriteRowResponseItem",
    "SecondaryIndexType", "SecondaryIndexMeta",
]


_SDK_PACKAGE = "tablestore"


@functools.lru_cache(maxsize=1024)
def _from_sdk(cls, name):
    """Whether class ``cls`` is, or derives from, the SDK's class ``name`` (cached:
    ``isinstance(None, ColumnPaginationFilter)`` is on hot paths)."""
    return any(c.__name__ == name and c.__module__.partition(".")[0] == _SDK_PACKAGE
               for c in cls.__mro__)


class _Mirror(type):
    """Metaclass of the mirrored classes: ``isinstance(x, TableMeta)`` also holds
    for the SDK's ``tablestore.TableMeta``.  (An exact type match never gets
    here: Python answers it first, so our own objects pay nothing.)"""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or _from_sdk(type(obj), cls.__name__)


class _MirrorEnum(EnumMeta):
    """``_Mirror`` for the SDK's enums (CastType)."""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or _from_sdk(type(obj), cls.__name__)


class _Value(metaclass=_Mirror):
    """Readable repr and field equality, like the SDK's JSON repr (handy in tests)."""

    def __repr__(self):
        fields = ", ".join("%s=%r" % kv for kv in vars(self).items())
        return "%s(%s)" % (type(self).__name__, fields)

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    __hash__ = None


class INF_MIN:
    """Marker class: smaller than every value of a primary-key column (range bounds)."""


class INF_MAX:
    """Marker class: greater than every value of a primary-key column (range bounds)."""


class PK_AUTO_INCR:
    """Marker class: the auto-increment option in a schema, the placeholder in a put."""


_MARKERS = {"INF_MIN": INF_MIN, "INF_MAX": INF_MAX, "PK_AUTO_INCR": PK_AUTO_INCR}


def own_marker(value):
    """Our INF_MIN / INF_MAX / PK_AUTO_INCR for the SDK's marker classes of
    those names; any other value unchanged."""
    if type(value) is type and value.__module__.partition(".")[0] == _SDK_PACKAGE:
        return _MARKERS.get(value.__name__, value)
    return value


class TableMeta(_Value):
    def __init__(self, table_name, schema_of_primary_key, defined_columns=None):
        self.table_name = table_name
        self.schema_of_primary_key = schema_of_primary_key
        self.defined_columns = [] if defined_columns is None else defined_columns[:]


class SecondaryIndexType(IntEnum):
    GLOBAL_INDEX = 0
    LOCAL_INDEX = 1


class SecondaryIndexMeta(_Value):
    """As the SDK's.  ``describe_table`` also sets ``index_update_mode``
    ("IUM_ASYNC_INDEX" for a global index, "IUM_SYNC_INDEX" for a local one)
    and ``index_sync_phase`` ("ISP_FULL" while the base data is loaded into
    it, then "ISP_INCR"), the wire's IndexMeta fields the SDK does not keep.
    ``split_points`` (ours, as ``create_table``'s): values of the index's first
    column at which its table is pre-split (None: one region, which splits by
    size as it grows)."""

    def __init__(self, index_name, primary_key_names, defined_column_names,
                 index_type=SecondaryIndexType.GLOBAL_INDEX, split_points=None):
        self.index_name = index_name
        self.primary_key_names = primary_key_names
        self.defined_column_names = defined_column_names
        self.index_type = index_type
        if split_points is not None:
            self.split_points = split_points


class TableOptions(_Value):
    """As the SDK's, plus ``update_full_row`` (the Go and Java SDKs' option:
    set at CreateTable only; an UpdateRow then rewrites the whole row in the
    service, for search-index TTL and global tables: here the rows read the
    same either way, so it is kept and described)."""

    def __init__(self, time_to_live=-1, max_version=1, max_time_deviation=86400, allow_update=None,
                 update_full_row=None):
        self.time_to_live = time_to_live
        self.max_version = max_version
        self.max_time_deviation = max_time_deviation
        self.allow_update = allow_update
        self.update_full_row = update_full_row


class CapacityUnit(_Value):
    def __init__(self, read=0, write=0):
        self.read = read
        self.write = write


class ReservedThroughput(_Value):
    def __init__(self, capacity_unit):
        self.capacity_unit = capacity_unit


class ReservedThroughputDetails(_Value):
    def __init__(self, capacity_unit, last_increase_time, last_decrease_time):
        self.capacity_unit = capacity_unit
        self.last_increase_time = last_increase_time
        self.last_decrease_time = last_decrease_time


class ColumnType:
    STRING = "STRING"
    INTEGER = "INTEGER"
    BOOLEAN = "BOOLEAN"
    DOUBLE = "DOUBLE"
    BINARY = "BINARY"
    INF_MIN = "INF_MIN"
    INF_MAX = "INF_MAX"


class ReturnType:
    RT_NONE = "RT_NONE"
    RT_PK = "RT_PK"
    # Not in the Python SDK (the protocol's, and the Java SDK's): an UpdateRow
    # returns the new values of the INCREMENT columns its ``return_column_names``
    # name (docs/tablestore.md, "Atomic counters").
    RT_AFTER_MODIFY = "RT_AFTER_MODIFY"


class Direction:
    FORWARD = "FORWARD"
    BACKWARD = "BACKWARD"


class UpdateType:
    PUT = "PUT"
    DELETE = "DELETE"
    DELETE_ALL = "DELETE_ALL"
    INCREMENT = "INCREMENT"


class UpdateTableResponse(_Value):
    """As the SDK's, plus ``stream_details`` (streams.StreamDetails)."""

    def __init__(self, reserved_throughput_details, table_options, stream_details=None):
        self.reserved_throughput_details = reserved_throughput_details
        self.table_options = table_options
        self.stream_details = stream_details
        self.request_id = ""


class DescribeTableResponse(_Value):
    """As the SDK's, plus ``shard_splits``: the partition-key values where regions
    start, and ``stream_details`` (streams.StreamDetails)."""

    def __init__(self, table_meta, table_options, reserved_throughput_details,
                 secondary_indexes=None, sse_details=None, shard_splits=None,
                 stream_details=None):
        self.table_meta = table_meta
        self.stream_details = stream_details
        self.table_options = table_options
        self.reserved_throughput_details = reserved_throughput_details
        self.sse_details = sse_details
        self.secondary_indexes = [] if secondary_indexes is None else secondary_indexes[:]
        self.shard_splits = [] if shard_splits is None else list(shard_splits)
        self.request_id = ""


class RowDataItem(_Value):
    def __init__(self, is_ok, error_code, error_message, table_name, consumed,
                 primary_key_columns, attribute_columns):
        self.is_ok = is_ok
        self.error_code = error_code
        self.error_message = error_message
        self.table_name = table_name
        self.consumed = consumed
        self.row = None
        if primary_key_columns is not None or attribute_columns is not None:
            self.row = Row(primary_key_columns, attribute_columns)


class LogicalOperator:
    NOT = 0
    AND = 1
    OR = 2
    __values__ = [NOT, AND, OR]
    __members__ = ["LogicalOperator.NOT", "LogicalOperator.AND", "LogicalOperator.OR"]


class ComparatorType:
    EQUAL = 0
    NOT_EQUAL = 1
    GREATER_THAN = 2
    GREATER_EQUAL = 3
    LESS_THAN = 4
    LESS_EQUAL = 5
    EXIST = 6
    NOT_EXIST = 7
    __values__ = [0, 1, 2, 3, 4, 5, 6, 7]
    __single_condition_values__ = [0, 1, 2, 3, 4, 5]
    __members__ = ["ComparatorType." + n for n in (
        "EQUAL", "NOT_EQUAL", "GREATER_THAN", "GREATER_EQUAL", "LESS_THAN", "LESS_EQUAL",
        "EXIST", "NOT_EXIST")]
    __single_condition_members__ = __members__[:6]


class ColumnConditionType:
    COMPOSITE_COLUMN_CONDITION = 0
    SINGLE_COLUMN_CONDITION = 1
    SINGLE_COLUMN_REGEX_CONDITION = 2


class ColumnCondition(_Value):
    """Base of the column conditions (filters)."""


class CompositeColumnCondition(ColumnCondition):
    def __init__(self, combinator):
        self.sub_conditions = []
        if combinator not in LogicalOperator.__values__:
            raise OTSClientError("Expect input combinator should be one of %s, but '%s'"
                                 % (str(LogicalOperator.__members__), combinator))
        self.combinator = combinator

    def get_type(self):
        return ColumnConditionType.COMPOSITE_COLUMN_CONDITION

    def get_combinator(self):
        return self.combinator

    def add_sub_condition(self, condition):
        if not isinstance(condition, ColumnCondition):
            raise OTSClientError(
                "The input condition should be an instance of ColumnCondition, not %s"
                % condition.__class__.__name__)
        self.sub_conditions.append(condition)

    def clear_sub_condition(self):
        self.sub_conditions = []


class SingleColumnCondition(ColumnCondition):
    def __init__(self, column_name, column_value, comparator, pass_if_missing=True,
                 latest_version_only=True):
        self.column_name = column_name
        self.column_value = column_value
        self.comparator = None
        self.pass_if_missing = None
        self.latest_version_only = None
        self.set_comparator(comparator)
        self.set_pass_if_missing(pass_if_missing)
        self.set_latest_version_only(latest_version_only)

    def get_type(self):
        return ColumnConditionType.SINGLE_COLUMN_CONDITION

    def set_pass_if_missing(self, pass_if_missing):
        if not isinstance(pass_if_missing, bool):
            raise OTSClientError(
                "The input pass_if_missing of SingleColumnCondition should be an instance of "
                "Bool, not %s" % pass_if_missing.__class__.__name__)
        self.pass_if_missing = pass_if_missing

    def get_pass_if_missing(self):
        return self.pass_if_missing

    def set_latest_version_only(self, latest_version_only):
        if not isinstance(latest_version_only, bool):
            raise OTSClientError(
                "The input latest_version_only of SingleColumnCondition should be an instance "
                "of Bool, not %s" % latest_version_only.__class__.__name__)
        self.latest_version_only = latest_version_only

    def get_latest_version_only(self):
        return self.latest_version_only

    def set_column_name(self, column_name):
        if not isinstance(column_name, (str, bytes)):
            raise OTSClientError(
                "The input column_name of SingleColumnCondition should be an instance of str, "
                "not %s" % column_name.__class__.__name__)
        self.column_name = column_name

    def get_column_name(self):
        return self.column_name

    def set_column_value(self, column_value):
        if column_value is None:
            raise OTSClientError("The input column_value of SingleColumnCondition should not be None")
        self.column_value = column_value

    def get_column_value(self):
        return self.column_value

    def set_comparator(self, comparator):
        if comparator not in ComparatorType.__single_condition_values__:
            raise OTSClientError(
                "Expect input comparator of SingleColumnCondition should be one of %s, but '%s'"
                % (str(ComparatorType.__single_condition_members__), comparator))
        self.comparator = comparator

    def get_comparator(self):
        return self.comparator


class CastType(IntEnum, metaclass=_MirrorEnum):
    """What the regex's match is cast to before the comparison."""
    VT_INTEGER = 0
    VT_DOUBLE = 1
    VT_STRING = 2


class RegexRule(_Value):
    def __init__(self, regex_input, cast_type):
        self.regex = None
        self.cast_type = None
        self.set_regex(regex_input)
        self.set_cast_type(cast_type)

    def set_regex(self, regex_input):
        if not isinstance(regex_input, (str, bytes)):
            raise OTSClientError("regex_input should be an instance of str, not %s"
                                 % regex_input.__class__.__name__)
        self.regex = regex_input

    def set_cast_type(self, cast_type):
        if not isinstance(cast_type, CastType):
            raise OTSClientError("input cast_type should be an instance of CastType, not %s"
                                 % cast_type.__class__.__name__)
        self.cast_type = cast_type

    def get_regex(self):
        return self.regex

    def get_cast_type(self):
        return self.cast_type


class SingleColumnRegexCondition(ColumnCondition):
    """A single-column condition on a value transformed by an optional RegexRule.

    As the SDK's: any comparator (EXIST and NOT_EXIST take no value; the
    value then defaults to 0) and no ``pass_if_missing`` (always False).  A
    filter decoded from the wire with ``filter_if_missing`` false sets
    ``_pass_if_missing`` on the instance (conditions.py reads it through
    ``get_pass_if_missing``).
    """

    _pass_if_missing = False
    _NO_VALUE = (ComparatorType.EXIST, ComparatorType.NOT_EXIST)

    def __init__(self, column_name, comparator, column_value=None, regex_rule=None,
                 latest_version_only=True):
        self.column_name = None
        self.comparator = None
        self.column_value = None
        self.latest_version_only = None
        self.regex_rule = None
        self.set_column_name(column_name)
        self.set_comparator(comparator)
        self.check_arguments(column_value, comparator)
        self.set_column_value(0 if column_value is None else column_value)
        self.set_regex_rule(regex_rule)
        self.set_latest_version_only(latest_version_only)

    def get_type(self):
        return ColumnConditionType.SINGLE_COLUMN_REGEX_CONDITION

    @classmethod
    def check_arguments(cls, column_value, comparator):
        if column_value is not None and comparator in cls._NO_VALUE:
            raise OTSClientError("when column_value is set, comparator should not be EXIST or "
                                 "NOT_EXIST, but now is %s" % ComparatorType.__members__[comparator])
        if column_value is None and comparator not in cls._NO_VALUE:
            raise OTSClientError("when column_value is not set, comparator should be EXIST or "
                                 "NOT_EXIST, but now is %s" % ComparatorType.__members__[comparator])

    def set_column_name(self, column_name):
        if not isinstance(column_name, (str, bytes)):
            raise OTSClientError(
                "The input column_name of SingleColumnRegexCondition should be an instance of "
                "str, not %s" % column_name.__class__.__name__)
        self.column_name = column_name

    def get_column_name(self):
        return self.column_name

    def set_comparator(self, comparator):
        if comparator not in ComparatorType.__values__:
            raise OTSClientError(
                "Expect input comparator of SingleColumnRegexCondition should be one of %s, "
                "but '%s'" % (str(ComparatorType.__members__), comparator))
        self.comparator = comparator

    def get_comparator(self):
        return self.comparator

    def set_column_value(self, column_value):
        if column_value is None:
            raise OTSClientError("The input column_value of SingleColumnRegexCondition."
                                 "set_column_value should not be None")
        self.column_value = column_value

    def get_column_value(self):
        return self.column_value

    def set_regex_rule(self, regex_rule):
        if regex_rule is not None and not isinstance(regex_rule, RegexRule):
            raise OTSClientError("input regex_rule should be an instance of RegexRule or None, "
                                 "not %s" % regex_rule.__class__.__name__)
        self.regex_rule = regex_rule

    def get_regex_rule(self):
        return self.regex_rule

    def set_latest_version_only(self, latest_version_only):
        if not isinstance(latest_version_only, bool):
            raise OTSClientError(
                "The input latest_version_only of SingleColumnRegexCondition should be an "
                "instance of Bool, not %s" % latest_version_only.__class__.__name__)
        self.latest_version_only = latest_version_only

    def get_latest_version_only(self):
        return self.latest_version_only

    def get_pass_if_missing(self):
        return self._pass_if_missing


class ColumnPaginationFilter(_Value):
    """Wide-row paging, a read filter only (not in the Python SDK 6.4.8; the proto's
    FT_COLUMN_PAGINATION): of the row's attribute columns in name order, skip
    ``offset`` and return at most ``limit``.  Not a ColumnCondition, so it can be
    neither a write condition nor a sub-condition (as in the Java SDK).  Ranges
    (offset >= 0, limit > 0) are the service's checks, made at request time."""

    def __init__(self, offset, limit):
        for name, value in (("offset", offset), ("limit", limit)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise OTSClientError("The input %s of ColumnPaginationFilter should be an "
                                     "instance of int, not %s" % (name, value.__class__.__name__))
        self.offset = offset
        self.limit = limit

    def get_offset(self):
        return self.offset

    def get_limit(self):
        return self.limit


class RowExistenceExpectation:
    IGNORE = "IGNORE"
    EXPECT_EXIST = "EXPECT_EXIST"
    EXPECT_NOT_EXIST = "EXPECT_NOT_EXIST"
    __values__ = [IGNORE, EXPECT_EXIST, EXPECT_NOT_EXIST]
    __members__ = ["RowExistenceExpectation.IGNORE", "RowExistenceExpectation.EXPECT_EXIST",
                   "RowExistenceExpectation.EXPECT_NOT_EXIST"]


class Condition(_Value):
    def __init__(self, row_existence_expectation, column_condition=None):
        self.row_existence_expectation = None
        self.column_condition = None
        self.set_row_existence_expectation(row_existence_expectation)
        if column_condition is not None:
            self.set_column_condition(column_condition)

    def set_row_existence_expectation(self, row_existence_expectation):
        if row_existence_expectation not in RowExistenceExpectation.__values__:
            raise OTSClientError("Expect input row_existence_expectation should be one of %s, but '%s'"
                                 % (str(RowExistenceExpectation.__members__), row_existence_expectation))
        self.row_existence_expectation = row_existence_expectation

    def get_row_existence_expectation(self):
        return self.row_existence_expectation

    def set_column_condition(self, column_condition):
        if not isinstance(column_condition, ColumnCondition):
            raise OTSClientError(
                "The input column_condition should be an instance of ColumnCondition, not %s"
                % column_condition.__class__.__name__)
        self.column_condition = column_condition

    def get_column_condition(self):
        return self.column_condition


class Row(_Value):
    def __init__(self, primary_key, attribute_columns=None):
        self.primary_key = primary_key
        self.attribute_columns = attribute_columns


class BatchWriteRowType:
    PUT = "put"
    UPDATE = "update"
    DELETE = "delete"


class RowItem(_Value):
    """``return_column_names`` (not in the Python SDK): with ReturnType
    RT_AFTER_MODIFY, the INCREMENT columns whose new values the row's result
    returns (the protocol's ReturnContent)."""

    def __init__(self, row_type, row, condition, return_type=None, return_column_names=None):
        self.type = row_type
        self.condition = condition
        self.row = row
        self.return_type = return_type
        self.return_column_names = return_column_names


class PutRowItem(RowItem):
    def __init__(self, row, condition, return_type=None, return_column_names=None):
        # RowItem.__init__'s fields, in its order, set here: a BatchWriteRow
        # of puts builds one item a row, and the second call was a fifth of it
        self.type = BatchWriteRowType.PUT
        self.condition = condition
        self.row = row
        self.return_type = return_type
        self.return_column_names = return_column_names


class UpdateRowItem(RowItem):
    def __init__(self, row, condition, return_type=None, return_column_names=None):
        RowItem.__init__(self, BatchWriteRowType.UPDATE, row, condition, return_type,
                         return_column_names)


class DeleteRowItem(RowItem):
    def __init__(self, row, condition, return_type=None, return_column_names=None):
        RowItem.__init__(self, BatchWriteRowType.DELETE, row, condition, return_type,
                         return_column_names)


class TableInBatchGetRowItem(_Value):
    def __init__(self, table_name, primary_keys, columns_to_get=None, column_filter=None,
                 max_version=None, time_range=None, start_column=None, end_column=None,
                 token=None):
        self.table_name = table_name
        self.primary_keys = primary_keys
        self.columns_to_get = columns_to_get
        self.column_filter = column_filter
        self.max_version = max_version
        self.time_range = time_range
        self.start_column = start_column
        self.end_column = end_column
        self.token = token


class BatchGetRowRequest(_Value):
    """Items keyed by table name: adding a table twice keeps the later item (as the SDK)."""

    def __init__(self):
        self.items = {}

    def add(self, table_item):
        if not isinstance(table_item, TableInBatchGetRowItem):
            raise OTSClientError(
                "The input table_item should be an instance of TableInBatchGetRowItem, not %s"
                % table_item.__class__.__name__)
        self.items[table_item.table_name] = table_item


class BatchGetRowResponse(_Value):
    def __init__(self, table_rows):
        self.items = table_rows

    def get_failed_rows(self):
        return [row for rows in self.items.values() for row in rows if not row.is_ok]

    def get_succeed_rows(self):
        return [row for rows in self.items.values() for row in rows if row.is_ok]

    def get_result(self):
        return self.get_succeed_rows(), self.get_failed_rows()

    def get_result_by_table(self, table_name):
        return self.items.get(table_name)

    def is_all_succeed(self):
        return self.get_failed_rows() == []


class TableInBatchWriteRowItem(_Value):
    def __init__(self, table_name, row_items):
        self.table_name = table_name
        self.row_items = row_items


class BatchWriteRowRequest(_Value):
    """``is_atomic`` (ours: the Python SDK 6.4.8 has no such attribute; the
    Go SDK's ``BatchWriteRowRequest.IsAtomic``, the Java SDK's
    ``setAtomic``, the wire's ``is_atomic``): the rows of each table must
    share one partition key value and are written all or nothing."""

    def __init__(self, is_atomic=False):
        self.items = {}
        self.transaction_id = None
        self.is_atomic = is_atomic

    def add(self, table_item):
        if not isinstance(table_item, TableInBatchWriteRowItem):
            raise OTSClientError(
                "The input table_item should be an instance of TableInBatchWriteRowItem, not %s"
                % table_item.__class__.__name__)
        self.items[table_item.table_name] = table_item

    def set_transaction_id(self, transcation_id):
        self.transaction_id = transcation_id

    def set_atomic(self, is_atomic):
        """(ours, as the Java SDK's ``setAtomic``) see the class."""
        self.is_atomic = is_atomic


class BatchWriteRowResponseItem(_Value):
    """``attribute_columns`` (not in the Python SDK, whose reader drops them):
    the columns an RT_AFTER_MODIFY row returns."""

    def __init__(self, is_ok, error_code, error_message, consumed, primary_key,
                 attribute_columns=None):
        self.is_ok = is_ok
        self.error_code = error_code
        self.error_message = error_message
        self.consumed = consumed
        self.row = Row(primary_key, attribute_columns)

    def set_index(self, index):
        self.index = index


class BatchWriteRowResponse(_Value):
    """Pairs each per-row result with the request row at the same index, per table."""

    def __init__(self, request, response):
        self.table_of_put = {}
        self.table_of_update = {}
        self.table_of_delete = {}
        for table_name, results in response.items():
            by_type = {BatchWriteRowType.PUT: [], BatchWriteRowType.UPDATE: [],
                       BatchWriteRowType.DELETE: []}
            for index, item in enumerate(results):
                item.set_index(index)
                by_type[request.items[table_name].row_items[index].type].append(item)
            self.table_of_put[table_name] = by_type[BatchWriteRowType.PUT]
            self.table_of_update[table_name] = by_type[BatchWriteRowType.UPDATE]
            self.table_of_delete[table_name] = by_type[BatchWriteRowType.DELETE]

    @classmethod
    def of_puts(cls, response):
        """The response to a request of PutRowItems only, from ``response``
        (table -> its results in request order, each ``index`` already
        set): what ``__init__`` builds for it, without the loop over rows.
        Not in the SDK (the data API's fast path, _writes.PlainWriter.batch)."""
        self = cls.__new__(cls)
        self.table_of_put = dict(response)
        self.table_of_update = {name: [] for name in response}
        self.table_of_delete = {name: [] for name in response}
        return self

    @staticmethod
    def _split(tables):
        rows = [row for rows in tables.values() for row in rows]
        return [r for r in rows if r.is_ok], [r for r in rows if not r.is_ok]

    def get_put(self):
        return self._split(self.table_of_put)

    def get_put_by_table(self, table_name):
        return self.table_of_put[table_name]

    def get_failed_of_put(self):
        return self.get_put()[1]

    def get_succeed_of_put(self):
        return self.get_put()[0]

    def get_update(self):
        return self._split(self.table_of_update)

    def get_update_by_table(self, table_name):
        return self.table_of_update[table_name]

    def get_failed_of_update(self):
        return self.get_update()[1]

    def get_succeed_of_update(self):
        return self.get_update()[0]

    def get_delete(self):
        return self._split(self.table_of_delete)

    def get_delete_by_table(self, table_name):
        return self.table_of_delete[table_name]

    def get_failed_of_delete(self):
        return self.get_delete()[1]

    def get_succeed_of_delete(self):
        return self.get_delete()[0]

    def is_all_succeed(self):
        return not (self.get_failed_of_put() or self.get_failed_of_update()
                    or self.get_failed_of_delete())
