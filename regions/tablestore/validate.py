"""Tablestore's limits and request checks, before anything is written.

Each check raises what the real stack raises: :class:`OTSClientError` where
the official SDK refuses a request before sending it (argument types, int64
range), :class:`OTSServiceError` (errors.py) where the service does.  The
functions return normalised data so the caller never re-parses a request.
Pure functions, thread-safe.
"""
import math
import re

from .errors import OTSClientError, not_a_string, service_error
from .metadata import (INF_MAX, INF_MIN, PK_AUTO_INCR, BatchWriteRowType, ReturnType, TableMeta,
                       TableOptions, own_marker)

__all__ = ["MAX_PK_COLUMNS", "MAX_PK_BYTES", "MAX_VALUE_BYTES", "MAX_COLUMNS_TO_GET",
           "BATCH_WRITE_ROWS", "BATCH_WRITE_BYTES", "CELL_TS_BYTES", "BATCH_GET_ROWS", "RANGE_ROWS",
           "RANGE_BYTES", "MAX_TABLES", "check_name", "check_table_meta", "check_defined_columns",
           "check_table_options", "check_pk", "check_pk_count", "check_put_columns", "check_update_columns",
           "check_read_params", "check_int64", "check_reserved_cu", "check_row_size",
           "check_batch_rows", "check_return_columns",
           "MAX_ROW_WRITE_BYTES", "MAX_WRITE_COLUMNS", "MAX_RESERVED_CU"]

MAX_PK_COLUMNS = 4
MAX_PK_BYTES = 1024
MAX_VALUE_BYTES = 2 << 20
MAX_COLUMNS_TO_GET = 1024     # (the Java SDK's RestrictedItemTest: 1,024 taken, 1,025 refused)
BATCH_WRITE_ROWS = 200
BATCH_WRITE_BYTES = 4 << 20
# The 4 MB limits count a cell's timestamp as 8 bytes more than its CU size:
# BatchWriteRow's data size (BATCH_WRITE_BYTES) where the request gives one
# (the Java SDK's RestrictedItemTest 48: key + name + value + 8 a cell,
# 4,194,305 refused), a GetRange page's (RANGE_BYTES) for every cell returned
# (RestrictedItemTest 35: 2,081 rows of 2,016 bytes, more than 4 MB with their
# timestamps before the last row, take two pages)
CELL_TS_BYTES = 8
MAX_ROW_WRITE_BYTES = 4 << 20  # the data of one PutRow / UpdateRow (reference section 5)
# Attribute cells one PutRow / UpdateRow (alone or in a batch) may give: the
# BatchWriteRow reference ("more than 1024 columns"); the .NET SDK's tests
# capture the service refusing 1,025 in each write.
MAX_WRITE_COLUMNS = 1024
MAX_RESERVED_CU = 100000
BATCH_GET_ROWS = 100
RANGE_ROWS = 5000
RANGE_BYTES = 4 << 20
MAX_TABLES = 64
MIN_TTL = 86400
MAX_DEFINED_COLUMNS = 32
MAX_SPLIT_POINT_BYTES = 64     # a pre-split point's (the Java SDK's SplitPointTest)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}\Z")
# The kinds of names check_name knows -> the error of a bad one.  Each kind
# has its own rule (check_name); an attribute column's is the widest.
_NAME_ERRORS = {"table": ("invalid_table_name", "table"),
                "column": ("invalid_column_name", "column"),        # primary-key, predefined
                "attribute": ("invalid_column_name", "column"),
                "index": ("invalid_index_name", "index")}
# Names (str) already checked, one memo per kind: a name valid for one kind
# (an attribute 'a-b') is never taken for valid as another (a table 'a-b').
# For the hot write path, so a row's column names are matched once, not per
# write; _writes (C) reads the attribute memo, GOOD_NAMES["attribute"] (each
# memo is one set for good: cleared when full, never replaced).  Bounded; set
# operations are atomic under the GIL, so sharing them between threads is safe.
GOOD_NAMES = {kind: set() for kind in _NAME_ERRORS}
_GOOD_NAMES_MAX = 4096
# A str of at most this many characters has at most 4x as many UTF-8 bytes,
# so it is within MAX_PK_BYTES / MAX_VALUE_BYTES without encoding it (the
# plain checks here and their C twins, _rowcodec._plain_key and
# _writes._plain_cells, read these two).
SHORT_PK_STR = 256
SHORT_VALUE_STR = MAX_VALUE_BYTES // 4
_PK_TYPES = ("INTEGER", "STRING", "BINARY", "BOOLEAN")
_DEFINED_TYPES = ("STRING", "INTEGER", "DOUBLE", "BOOLEAN", "BINARY")


#: Control characters an attribute column name may hold: the Java SDK's
#: ParameterLegalityTest.testValidColumnName writes names with '\n' and '\r'.
_NAME_CONTROLS_OK = frozenset(b"\n\r")


def _attribute_name_ok(name):
    """An attribute column name outside the documented rule that the service
    takes: the vendor's own get_row example (written against the service)
    writes the column 'postal code', the Java SDK's ParameterLegalityTest
    names with punctuation, CJK, '\n' and '\r', and refuses those starting
    with '#'.  Any 1-255 bytes of UTF-8 not starting with '#', without other
    control characters (0x00 and 0x01 separate a name in the row layout,
    cells.py)."""
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return (1 <= len(raw) <= 255 and raw[0] != 0x23
            and not any((c < 0x20 or c == 0x7F) and c not in _NAME_CONTROLS_OK for c in raw))


def decode_name(name, kind="column"):
    """``name`` as str if it is UTF-8 bytes (anything else is returned as it is);
    bytes that are not UTF-8 are an invalid table or column name."""
    if not isinstance(name, bytes):
        return name
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError:
        shown = name.decode("utf-8", "replace")
        if kind == "table":
            raise service_error("invalid_table_name", table=shown) from None
        raise service_error("invalid_column_name", column=shown) from None


def check_name(name, kind="column"):
    """A name of ``kind`` (a key of _NAME_ERRORS): a table, primary-key or
    predefined column name is 1-255 bytes of [A-Za-z0-9_], not starting with
    a digit; an attribute column name (``kind="attribute"``) may also be any
    other 1-255 bytes of UTF-8 without control characters (_attribute_name_ok).
    Whatever names of other kinds were checked before."""
    name = decode_name(name, kind)
    if not isinstance(name, str):
        raise not_a_string(name)
    good = GOOD_NAMES[kind]
    if name in good:
        return name
    if not _NAME.match(name) and not (kind == "attribute" and _attribute_name_ok(name)):
        error, field = _NAME_ERRORS[kind]
        raise service_error(error, **{field: name})
    if len(good) >= _GOOD_NAMES_MAX:
        good.clear()
    good.add(name)
    return name


def check_int64(value):
    if value < INT64_MIN or value > INT64_MAX:
        raise OTSClientError("%s exceeds the range of int64" % value)
    return value


def check_table_meta(table_meta):
    """Validate a TableMeta; returns (names, types, auto_incr index or None)."""
    if not isinstance(table_meta, TableMeta):
        raise OTSClientError("table_meta should be an instance of TableMeta, not %s"
                             % table_meta.__class__.__name__)
    table = check_name(table_meta.table_name, "table")
    names, types, auto_incr = [], [], None
    for i, col in enumerate(table_meta.schema_of_primary_key):
        if not isinstance(col, tuple):
            raise OTSClientError("all schemas of primary keys should be tuple, not %s"
                                 % col.__class__.__name__)
        if col[1] not in _PK_TYPES:
            raise OTSClientError("primary_key_type should be one of [%s], not %s"
                                 % (", ".join(sorted(_PK_TYPES)), col[1]))
        if len(col) == 3 and own_marker(col[2]) is not PK_AUTO_INCR:
            raise OTSClientError("primary_key_option should be one of [%s], not %s"
                                 % (PK_AUTO_INCR, col[2]))
        names.append(check_name(col[0]))
        types.append(col[1])
        if len(col) == 3:
            if col[1] != "INTEGER":
                raise service_error("auto_incr_not_integer")
            if i == 0:
                raise service_error("auto_incr_first", table=table)
            if auto_incr is not None:
                raise service_error("auto_incr_count")
            auto_incr = i
    if not 1 <= len(names) <= MAX_PK_COLUMNS:
        raise service_error("pk_count", limit=MAX_PK_COLUMNS)
    seen = set()
    for name in names:
        if name in seen:
            raise service_error("duplicated_pk_name", name=name)
        seen.add(name)
    for t in types:
        if t == "BOOLEAN":
            raise service_error("invalid_pk_type", type=t)
    defined = check_defined_columns(table_meta.defined_columns or ())
    for column, _ in defined:
        if column in seen:
            raise service_error("defined_column_is_pk", column=column)
    if len(defined) > MAX_DEFINED_COLUMNS:
        raise service_error("defined_columns_limit")
    return table, names, types, auto_incr, defined


def check_defined_columns(columns):
    """Predefined columns ``[(name, type)]`` (the SDK's checks, then the
    service's): a list of (name, type), no name twice."""
    if not isinstance(columns, (list, tuple)):
        raise OTSClientError("defined_columns should be a list, not %s"
                             % columns.__class__.__name__)
    defined, seen = [], set()
    for col in columns:
        if not isinstance(col, tuple):
            raise OTSClientError("all schemas of primary keys should be tuple, not %s"
                                 % col.__class__.__name__)
        if col[1] not in _DEFINED_TYPES:
            raise OTSClientError("Wrong type for defined column, only support "
                                 "[STRING, INTEGER, DOUBLE, BOOLEAN, BINARY].")
        name = check_name(col[0])
        if name in seen:
            raise service_error("defined_column_exists", column=name)
        seen.add(name)
        defined.append((name, col[1]))
    return defined


def check_table_options(options, partial=False):
    """Validate TableOptions; returns {field: value} of the fields given."""
    if not isinstance(options, TableOptions):
        raise OTSClientError("table_option should be an instance of TableOptions, not %s"
                             % options.__class__.__name__)
    out = {}
    for attr, key in (("time_to_live", "ttl"), ("max_version", "max_versions"),
                      ("max_time_deviation", "deviation")):
        value = getattr(options, attr)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise OTSClientError("%s should be an instance of int, not %s"
                                 % (attr, value.__class__.__name__))
        out[key] = value
    for attr in ("allow_update", "update_full_row"):
        value = getattr(options, attr, None)     # (the SDK's TableOptions has no update_full_row)
        if value is not None:
            if not isinstance(value, bool):
                raise OTSClientError("%s should be an instance of bool, not %s"
                                     % (attr, value.__class__.__name__))
            out[attr] = value
    ttl = out.get("ttl")
    if ttl is not None and ttl != -1:
        if ttl <= 0:
            raise service_error("ttl_invalid")
        if ttl < MIN_TTL:
            raise service_error("ttl_too_small")
    if out.get("max_versions") is not None and out["max_versions"] <= 0:
        raise service_error("max_versions_invalid")
    if out.get("deviation") is not None and out["deviation"] <= 0:
        raise service_error("deviation_invalid")
    return out


def check_reserved_cu(values):
    """The service's range of reserved read/write CU (None: not given)."""
    for cu in values:
        if cu is None:
            continue
        if cu < 0:
            raise service_error("reserved_negative", cu=cu)
        if cu > MAX_RESERVED_CU:
            raise service_error("reserved_too_large", cu=cu, limit=MAX_RESERVED_CU)
    return values


def check_row_size(kind, size):
    """One PutRow / UpdateRow's data (PK + attribute bytes, as CU count them) within 4 MB.

    ``kind``: BatchWriteRowType.PUT or .UPDATE.
    """
    if size > MAX_ROW_WRITE_BYTES:
        raise service_error("put_row_size" if kind == BatchWriteRowType.PUT
                            else "update_row_size",
                            limit=MAX_ROW_WRITE_BYTES, size=size)


def check_batch_rows(total, limit):
    """A batch's row count (every row given, valid or not) within ``limit``."""
    if total > limit:
        raise service_error("batch_rows_limit", limit=limit)


def _check_utf8(name, value):
    """A STRING given as ``bytes`` (the SDK sends its raw bytes) must be UTF-8."""
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        raise service_error("not_utf8", column=name) from None


#: A primary-key value's kind -> its PlainBuffer type as the service's
#: messages name it ("Validate PK type fail. Input: VT_BLOB, Meta: VT_INTEGER.",
#: "VT_INF_MIN is an invalid type for the primary key.": the Java SDK's tests).
_VT = {"INTEGER": "VT_INTEGER", "STRING": "VT_STRING", "BINARY": "VT_BLOB",
       "BOOLEAN": "VT_BOOLEAN", INF_MIN: "VT_INF_MIN", INF_MAX: "VT_INF_MAX"}


def _pk_value_kind(value):
    """The wire type the SDK would send for a PK value (client-side type check)."""
    if value is INF_MIN or value is INF_MAX or value is PK_AUTO_INCR:
        return value
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        check_int64(value)
        return "INTEGER"
    if isinstance(value, (str, bytes)):
        return "STRING"
    if isinstance(value, bytearray):
        return "BINARY"
    raise OTSClientError("Unsupported primary key type: " + str(type(value)))


def check_pk_count(primary_key):
    """A key of 1 to MAX_PK_COLUMNS columns: the service checks it before
    the key against the schema, and before the table is looked up (the Java
    SDK's RestrictedItemTest.testCase16: pk_count, not a size mismatch)."""
    if isinstance(primary_key, (list, tuple)) and not 1 <= len(primary_key) <= MAX_PK_COLUMNS:
        raise service_error("pk_count", limit=MAX_PK_COLUMNS)


def check_pk(schema, primary_key, mode="row"):
    """Validate a PK ([(name, value)]) against ``schema``; returns the values list.

    ``mode``: "row" (concrete values), "put" (PK_AUTO_INCR allowed in the
    auto-increment column) or "bound" (INF_MIN/INF_MAX allowed anywhere).
    """
    if not isinstance(primary_key, (list, tuple)):
        raise OTSClientError("Priamry key is not list, but is %s" % str(type(primary_key)))
    check_pk_count(primary_key)
    values = _plain_pk(schema, primary_key)
    if values is not None:
        return values
    given, kinds = [], []
    for col in primary_key:
        if not isinstance(col, tuple) or len(col) != 2:
            raise OTSClientError("Unsupported primary key type: " + str(type(col)))
        value = own_marker(col[1])
        given.append((col[0], value))
        kinds.append(_pk_value_kind(value))
    if len(primary_key) != len(schema.names):
        raise service_error("pk_size_mismatch", input=len(primary_key), meta=len(schema.names))
    values = []
    for i, ((name, value), kind) in enumerate(zip(given, kinds)):
        name = decode_name(name)
        if name != schema.names[i]:
            raise service_error("pk_name_mismatch", input=name, meta=schema.names[i])
        if kind is PK_AUTO_INCR:
            if mode != "put":
                raise service_error("auto_incr_read")
            if schema.auto_incr != i:
                raise service_error("pk_schema_mismatch")
        elif kind is INF_MIN or kind is INF_MAX:
            if mode != "bound":
                raise service_error("invalid_pk_type", type=_VT[kind])
        elif kind != schema.types[i]:
            raise service_error("pk_type_mismatch", input=_VT[kind], meta=_VT[schema.types[i]])
        elif kind != "INTEGER":
            if isinstance(value, bytes):
                _check_utf8(name, value)
            try:
                length = len(value.encode("utf-8")) if isinstance(value, str) else len(value)
            except UnicodeEncodeError:      # a lone surrogate: not UTF-8
                raise service_error("not_utf8", column=name) from None
            if length > MAX_PK_BYTES:
                raise service_error("pk_too_long", column=name, limit=MAX_PK_BYTES, length=length)
        values.append(value)
    return values


def _plain_pk(schema, primary_key):
    """The values of a PK that is plainly valid in every mode (str names equal to
    the schema's, INTEGER ints in int64, short str STRINGs), else None: then
    the full check decides and raises the right error."""
    if len(primary_key) != len(schema.names):
        return None
    values = []
    for col, name, pk_type in zip(primary_key, schema.names, schema.types):
        if type(col) is not tuple or len(col) != 2 or col[0] != name:
            return None
        value = col[1]
        kind = type(value)
        if pk_type == "INTEGER":
            if kind is not int or not INT64_MIN <= value <= INT64_MAX:
                return None
        elif pk_type != "STRING" or kind is not str or len(value) > SHORT_PK_STR \
                or not value.isascii():
            return None
        values.append(value)
    return values


def _plain_value(value):
    """True for an attribute value plainly within the limits (see _check_value)."""
    kind = type(value)
    if kind is int:
        return INT64_MIN <= value <= INT64_MAX
    if kind is str:
        return len(value) <= SHORT_VALUE_STR
    if kind is float:
        return math.isfinite(value)
    return False


def _check_value(name, value):
    """Client-side type check of an attribute value, then the service's limits."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return check_int64(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise service_error("double_invalid", column=name)
        return value
    if isinstance(value, (str, bytes, bytearray)):
        length = len(value.encode("utf-8")) if isinstance(value, str) else len(value)
        if length > MAX_VALUE_BYTES:
            raise service_error("attr_too_long", column=name, limit=MAX_VALUE_BYTES, length=length)
        if isinstance(value, bytes):
            _check_utf8(name, value)
        return value
    raise OTSClientError("Unsupported column type: " + str(type(value)))


def _check_attr_name(schema, name):
    name = check_name(name, "attribute")
    if name in schema.names:
        raise service_error("attr_dup_pk", column=name)
    return name


def _check_ts(schema, name, ts, now_ms):
    if not isinstance(ts, int) or isinstance(ts, bool):
        raise OTSClientError("expect int or long for the value, not %s" % ts.__class__.__name__)
    check_int64(ts)
    if not 0 <= ts < INT64_MAX // 1000:
        raise service_error("timestamp_range")
    low = now_ms - schema.deviation * 1000
    if schema.ttl > 0:
        low = max(low, now_ms - schema.ttl * 1000)
    if not low <= ts < now_ms + schema.deviation * 1000:
        raise service_error("invalid_timestamp", column=name)
    return ts


def check_put_columns(schema, columns, now_ms):
    """PutRow's attribute columns -> [(name, value, ts)]; ts None when not given.

    The writer assigns missing timestamps under the row lock, so versions of
    serialized writes to a row never go back in time.
    """
    if columns is None:
        columns = []
    if not isinstance(columns, (list, tuple)):
        raise OTSClientError("Unsupported column type:" + str(type(columns)))
    cells = []
    for col in columns:
        if not isinstance(col, (tuple, list)) or len(col) not in (2, 3):
            continue  # the SDK's writer silently skips other shapes
        name = _check_attr_name(schema, col[0])
        value = col[1] if _plain_value(col[1]) else _check_value(name, col[1])
        ts = _check_ts(schema, name, col[2], now_ms) if len(col) == 3 and col[2] is not None \
            else None
        cells.append((name, value, ts))
    _check_column_count(cells)
    return cells  # none: a row that holds only its primary key


def check_update_columns(schema, update, now_ms):
    """UpdateRow's dict -> [(op, name, value, ts)], op in PUT/DELETE/DELETE_ALL/INCREMENT.

    ts is None where the writer assigns it (see check_put_columns).  A column
    appears at most once, except as versions of a multi-version write
    (_check_repeated_cell).
    """
    if not isinstance(update, dict):
        raise OTSClientError("the attribute columns of UpdateRow is not dict, but is %s"
                             % str(type(update)))
    for key, cells in update.items():
        if not isinstance(cells, list):
            raise OTSClientError("the columns value of update-row must be list, but is %s"
                                 % str(type(update.values)))
        for cell in cells:
            if key.upper() not in ("DELETE", "DELETE_ALL") and not isinstance(cell, tuple):
                raise OTSClientError("the cell of update-row must be tuple, but is %s"
                                     % str(type(cell)))
    ops = []
    seen = {}
    for key, cells in update.items():
        op = key.upper()
        if op not in ("DELETE", "DELETE_ALL", "INCREMENT"):
            op = "PUT"  # the SDK sends cells of any other key as plain puts
        for cell in cells:
            if isinstance(cell, (str, bytes)):
                name, value, ts = cell, None, None
            elif isinstance(cell, (tuple, list)) and len(cell) in (2, 3):
                name, value = cell[0], cell[1]
                ts = cell[2] if len(cell) == 3 else None
            else:
                raise OTSClientError("Unsupported column format: " + str(cell))
            name = _check_attr_name(schema, name)
            if op in ("DELETE", "DELETE_ALL"):
                if value is not None:
                    raise service_error("delete_with_value")
                if op == "DELETE" and ts is None:
                    raise service_error("delete_one_needs_ts")
                if op == "DELETE_ALL" and ts is not None:
                    raise service_error("delete_all_no_ts")
                if ts is not None:
                    if not isinstance(ts, int) or isinstance(ts, bool):
                        raise OTSClientError("expect int or long for the value, not %s"
                                             % ts.__class__.__name__)
                    check_int64(ts)
                _check_repeated_cell(seen, op, name, ts)
                ops.append((op, name, None, ts))
                continue
            if value is None:
                raise OTSClientError("Unsupported column type: " + str(type(value)))
            value = _check_value(name, value)
            if op == "INCREMENT":
                if not isinstance(value, int) or isinstance(value, bool):
                    raise service_error("increment_not_integer", column=name)
                if ts is not None:
                    raise service_error("increment_with_ts", column=name)
            ts = None if ts is None else _check_ts(schema, name, ts, now_ms)
            _check_repeated_cell(seen, op, name, ts)
            ops.append((op, name, value, ts))
    if not ops:
        raise service_error("update_missing_cells")
    _check_column_count(ops)
    return ops


def _check_column_count(cells):
    """One write's attribute cells (each version and delete counts) within MAX_WRITE_COLUMNS."""
    if len(cells) > MAX_WRITE_COLUMNS:
        raise service_error("write_columns_limit", limit=MAX_WRITE_COLUMNS, count=len(cells))


def check_return_columns(kind, return_type, names, cells):
    """A write's return content -> the columns whose new values it returns
    (a frozenset), or None.  ReturnType RT_AFTER_MODIFY is an UpdateRow's
    only; ``names`` (its return_column_names; None or empty: none) need it,
    and each must be an INCREMENT column of the update's ``cells``
    (check_update_columns'): the service refuses a PUT or an untouched column
    (the Java SDK's IncrementRequest test)."""
    if names is None:
        names = ()
    if not isinstance(names, (list, tuple)):
        raise OTSClientError("expect list or tuple for value, not %s" % names.__class__.__name__)
    if return_type == ReturnType.RT_AFTER_MODIFY and kind != BatchWriteRowType.UPDATE:
        raise service_error("invalid_return_type", return_type=return_type)
    if names and return_type != ReturnType.RT_AFTER_MODIFY:
        raise service_error("return_columns_need_after_modify")
    if not names:
        return None
    increments = {c[1] for c in cells if c[0] == "INCREMENT"}
    out = set()
    for name in names:
        name = decode_name(name)
        if not isinstance(name, str):
            raise not_a_string(name)
        if name not in increments:
            raise service_error("return_column_not_increment", column=name)
        out.add(name)
    return frozenset(out)


def _check_repeated_cell(seen, op, name, ts):
    """A column may repeat in one UpdateRow, its cells applied in order (the
    last PUT of a version wins, a DELETE_ALL after a PUT deletes it: the Java
    SDK's tests against the service, APITest and UpdateRowTest); only an
    INCREMENT may not share its column with another cell.  ``seen``: name ->
    (op, set of versions), filled here."""
    previous = seen.get(name)
    if previous is None:
        seen[name] = (op, {ts})
        return
    first_op, versions = previous
    if op == "INCREMENT" or first_op == "INCREMENT":
        raise service_error("update_duplicated_column", column=name)
    versions.add(ts)


def check_read_params(columns_to_get, max_version, time_range, no_version="no_version_condition"):
    """Validate read parameters; returns (columns set or None, max_version, (lo, hi) or None).

    ``no_version``: the error of a read that gives neither max_version nor
    time_range (BatchGetRow's has its own text), raised after the columns'."""
    if columns_to_get is not None and not isinstance(columns_to_get, (list, tuple)):
        raise OTSClientError("expect list or tuple for value, not %s"
                             % columns_to_get.__class__.__name__)
    names = None
    if columns_to_get:
        if len(columns_to_get) > MAX_COLUMNS_TO_GET:
            raise service_error("columns_to_get_limit", limit=MAX_COLUMNS_TO_GET,
                                count=len(columns_to_get))
        names = set()
        for n in columns_to_get:
            # a name a write could not give is refused (the Java SDK's
            # ParameterLegalityTest, RestrictedItemTest 12)
            names.add(check_name(n, "attribute"))
    rng = None
    if time_range is not None:
        if isinstance(time_range, tuple):
            if len(time_range) != 2 or time_range[0] is None or time_range[1] is None:
                raise service_error("time_range_both")
            lo, hi = time_range
            if not lo < hi:
                raise service_error("time_range_invalid")
            rng = (lo, hi)
        elif isinstance(time_range, int):
            rng = (time_range, time_range + 1)
    if max_version is not None and not isinstance(max_version, int):
        raise OTSClientError("expect int or long for the value, not %s" % max_version.__class__.__name__)
    if max_version is not None and max_version <= 0:
        raise service_error("max_version_invalid")
    if max_version is None and rng is None:
        raise service_error(no_version)
    if max_version is not None and isinstance(time_range, int):
        raise service_error("specific_time_and_max_versions")
    return names, max_version, rng
