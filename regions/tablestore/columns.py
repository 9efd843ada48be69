"""Wide-row reads: the column window of GetRow, BatchGetRow items and GetRange.

A read's window is ``start_column`` (inclusive) and ``end_column``
(exclusive), bounds on attribute-column names in lexicographic order (the
docs' GetRowRequest/TableInBatchGetRowRequest pages), and a
ColumnPaginationFilter (offset, limit): of the columns in the window, in name
order, skip ``offset`` and keep at most ``limit`` (the docs'
ColumnPaginationFilter page).

Order of a read (reads.assemble): the versions asked for (``select``), then
the window, then the column filter, then ``columns_to_get``.  The window is
part of what is read: the service's filters see only the columns read (the
filter docs: "the reference columns used by a filter must be included in the
read data"), and pagination counts the columns that would be returned, so the
window applies ``columns_to_get`` too before counting.  Pagination is itself
the read's filter (the protocol has one ``filter`` field, and a
CompositeColumnValueFilter holds only column-value filters, as in the Java
SDK), so it never combines with a column condition.

Tokens: the service documents ``token`` and ``next_token`` as unavailable
("this parameter is unavailable", GetRow, TableInBatchGetRowRequest and
RowInBatchGetRowResponse pages), so no ``next_token`` is ever returned and a
non-empty token, which cannot be one we issued, is refused (ours).

Pure functions, thread-safe.
"""
from collections import namedtuple

from .conditions import check_condition
from .errors import OTSClientError, not_a_string, service_error
from .metadata import ColumnPaginationFilter
from .validate import decode_name

__all__ = ["Window", "column_window", "read_window"]

#: A read's column window: bounds (None = unbounded), (offset, limit) or None,
#: and the ``columns_to_get`` set or None.
Window = namedtuple("Window", "start_column end_column pagination names")


def column_window(columns, start_column, end_column, pagination=None, names=None):
    """The part of ``columns`` ({name: [(ts, value)...]}) a window reads.

    Columns named in ``names`` (all when None) within [start_column,
    end_column) (None = unbounded), then, with ``pagination`` = (offset,
    limit), the offset-th to (offset+limit-1)-th of those in name order.
    Returns a new dict; ``columns`` is not changed.  O(n log n) in the columns.

    >>> column_window({"a": [(1, 0)], "b": [(1, 1)], "c": [(1, 2)]}, "b", None, (0, 1))
    {'b': [(1, 1)]}
    """
    chosen = sorted(n for n in columns
                    if (names is None or n in names)
                    and (start_column is None or n >= start_column)
                    and (end_column is None or n < end_column))
    if pagination is not None:
        offset, limit = pagination
        chosen = chosen[offset:offset + limit]
    return {n: columns[n] for n in chosen}


def _bound(value):
    if value is None:
        return None
    value = decode_name(value)
    if not isinstance(value, str):
        raise not_a_string(value)
    return value


def _check_token(token):
    if token is None:
        return
    tokens = token if isinstance(token, (list, tuple)) else [token]
    for t in tokens:
        if not isinstance(t, (bytes, bytearray, str)):
            raise OTSClientError("expect bytes for token, not %s" % t.__class__.__name__)
        if t:
            raise service_error("token_invalid")


def read_window(start_column, end_column, token, column_filter, names):
    """Validate a read's wide-row arguments and its filter, as the service would.

    Returns (Window or None, column condition or None): the window when the
    read has one (bounds or a ColumnPaginationFilter), and the filter left to
    evaluate (None when the filter was the pagination).  ``names`` is the
    validated ``columns_to_get`` set (or None).
    """
    if column_filter is None and start_column is None and end_column is None and token is None:
        return None, None                # the common read: nothing to check
    _check_token(token)
    start, end = _bound(start_column), _bound(end_column)
    if start is not None and end is not None and not start < end:
        raise service_error("column_range_invalid")
    pagination = None
    if isinstance(column_filter, ColumnPaginationFilter):
        if column_filter.offset < 0 or column_filter.limit <= 0:
            raise service_error("pagination_invalid")
        pagination = (column_filter.offset, column_filter.limit)
        column_filter = None
    elif column_filter is not None:
        check_condition(column_filter)
    if start is None and end is None and pagination is None:
        return None, column_filter
    return Window(start, end, pagination, names), column_filter
