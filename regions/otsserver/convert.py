"""Protobuf messages <-> the data API's objects (rows, conditions, filters, table meta).

Requests arrive as proto2 messages of the service's table_store.proto
(``wire``: the SDK's messages brought up to date; filters are the SDK's
``tablestore.protobuf``, imported at run time: the optional ``server`` extra)
with rows in PlainBuffer;
this module turns them into the very arguments the SDK's ``OTSClient`` would
have been called with, so ``regions.tablestore`` validates them exactly as it
does for embedded callers.  Responses go the other way.  Every required proto2
field is always set (the SDK's native decoder rejects messages without them).

Stateless apart from the codec; thread-safe.
"""
from __future__ import annotations

from google.protobuf.message import DecodeError
from tablestore.protobuf import table_store_filter_pb2 as fpb

from regions.otsserver import errors, rowmatrix
from regions.otsserver import wire as pb
from regions.otsserver.plainbuffer import (
    DELETE_ALL_VERSION, DELETE_ONE_VERSION, INCREMENT, Markers, NotUtf8, PlainBufferCodec,
    PlainBufferError,
)
from regions.tablestore import conditions as check
from regions.tablestore import metadata as md
from regions.tablestore.errors import OTSClientError, service_error
from regions.tablestore.streams import RecordColumnType, StreamSpecification

CODEC = PlainBufferCodec(Markers(md.INF_MIN, md.INF_MAX, md.PK_AUTO_INCR))

PK_TYPES = {pb.INTEGER: "INTEGER", pb.STRING: "STRING", pb.BINARY: "BINARY", pb.PK_BOOLEAN: "BOOLEAN"}
PK_TYPES_PB = {v: k for k, v in PK_TYPES.items()}
DEFINED_TYPES = {pb.DCT_INTEGER: "INTEGER", pb.DCT_DOUBLE: "DOUBLE", pb.DCT_BOOLEAN: "BOOLEAN",
                 pb.DCT_STRING: "STRING", pb.DCT_BLOB: "BINARY"}
DEFINED_TYPES_PB = {v: k for k, v in DEFINED_TYPES.items()}
EXPECTATIONS = {pb.IGNORE: md.RowExistenceExpectation.IGNORE,
                pb.EXPECT_EXIST: md.RowExistenceExpectation.EXPECT_EXIST,
                pb.EXPECT_NOT_EXIST: md.RowExistenceExpectation.EXPECT_NOT_EXIST}
DIRECTIONS = {pb.FORWARD: md.Direction.FORWARD, pb.BACKWARD: md.Direction.BACKWARD}
UPDATE_OPS = {None: md.UpdateType.PUT, DELETE_ONE_VERSION: md.UpdateType.DELETE,
              DELETE_ALL_VERSION: md.UpdateType.DELETE_ALL, INCREMENT: md.UpdateType.INCREMENT}


def parse(message_cls, body: bytes):
    """Parse a request body; truncated, garbage or incomplete -> 400."""
    msg = message_cls()
    try:
        msg.ParseFromString(body)
    except (DecodeError, RuntimeError, ValueError):
        raise errors.bad_protobuf() from None
    if not msg.IsInitialized():
        raise errors.bad_protobuf()
    return msg


def optional(proto, field):
    """The value of an optional field, None when absent."""
    return getattr(proto, field) if proto.HasField(field) else None


def decode_row(data: bytes):
    try:
        return CODEC.decode_row(data)
    except NotUtf8 as e:
        if e.part == "name":
            raise service_error("invalid_column_name", column=e.column) from None
        raise service_error("not_utf8", column=e.column) from None
    except PlainBufferError as e:
        raise errors.parameter_invalid(str(e)) from None


def primary_key(data: bytes) -> list:
    """A PK-only row (GetRow key, GetRange bounds)."""
    row = decode_row(data)
    if row.cells or row.delete_marker:
        raise errors.data_format_invalid()
    return row.primary_key


def put_row(data: bytes) -> md.Row:
    row = decode_row(data)
    if row.delete_marker:
        raise errors.data_format_invalid()
    columns = []
    for cell in row.cells:
        if cell.op is not None:
            raise errors.parameter_invalid(
                "OpType cannot be given for column name:%s in PutRow." % cell.name)
        if cell.value is None:
            raise errors.parameter_invalid("Column value must be given for column name:%s in PutRow."
                                           % cell.name)
        columns.append((cell.name, cell.value) if cell.timestamp is None
                       else (cell.name, cell.value, cell.timestamp))
    return md.Row(row.primary_key, columns)


def update_row(data: bytes) -> md.Row:
    """Cells grouped by update type, as the SDK's ``update_of_attribute_columns`` dict."""
    row = decode_row(data)
    if row.delete_marker:
        raise errors.data_format_invalid()
    if not row.cells:
        raise service_error("update_missing_cells")
    update: dict = {}
    for cell in row.cells:
        kind = UPDATE_OPS[cell.op]
        if kind == md.UpdateType.DELETE_ALL:
            if cell.value is not None:
                raise service_error("delete_with_value")
            if cell.timestamp is not None:
                raise service_error("delete_all_no_ts")
            item = cell.name
        elif kind == md.UpdateType.DELETE:
            if cell.value is not None:
                raise service_error("delete_with_value")
            item = (cell.name, None, cell.timestamp)
        elif cell.timestamp is None:
            item = (cell.name, cell.value)
        else:
            item = (cell.name, cell.value, cell.timestamp)
        update.setdefault(kind, []).append(item)
    return md.Row(row.primary_key, update)


def delete_row(data: bytes) -> md.Row:
    row = decode_row(data)
    if not row.delete_marker:
        raise errors.parameter_invalid(
            "Invalid request of delete row: missing RowDeleteMarker in request.")
    if row.cells:
        raise errors.data_format_invalid()
    return md.Row(row.primary_key)


# ------------------------------------------------------------ filters

CAST_TYPES = {fpb.VT_INTEGER: md.CastType.VT_INTEGER, fpb.VT_DOUBLE: md.CastType.VT_DOUBLE,
              fpb.VT_STRING: md.CastType.VT_STRING}
NO_VALUE = (md.ComparatorType.EXIST, md.ComparatorType.NOT_EXIST)


def column_filter(data: bytes):
    """A read's serialized ``Filter`` -> a column condition or a ColumnPaginationFilter."""
    return _decode(data, read=True)


def column_condition(data: bytes):
    """A write's serialized ``Filter`` -> SingleColumn(Regex)Condition / CompositeColumnCondition."""
    return _decode(data, read=False)


def _decode(data: bytes, read: bool):
    """Decoding stops at the service's node limit, so a deep filter costs no deep recursion."""
    try:
        return _filter(_message(fpb.Filter, data), read, [0])
    except (DecodeError, PlainBufferError, OTSClientError):
        raise service_error("filter_invalid") from None


def _message(cls, data: bytes):
    msg = cls()
    msg.ParseFromString(data)
    if not msg.IsInitialized():
        raise DecodeError("incomplete")
    return msg


def _filter(flt, top_of_read: bool, count: list):
    count[0] += 1
    if count[0] > check.MAX_FILTER_NODES:
        raise service_error("filter_count", limit=check.MAX_FILTER_NODES)
    if flt.type == fpb.FT_SINGLE_COLUMN_VALUE:
        return _single(_message(fpb.SingleColumnValueFilter, flt.filter))
    if flt.type == fpb.FT_COMPOSITE_COLUMN_VALUE:
        comp = _message(fpb.CompositeColumnValueFilter, flt.filter)
        cond = md.CompositeColumnCondition(comp.combinator - 1)
        for sub in comp.sub_filters:
            cond.add_sub_condition(_filter(sub, False, count))
        return cond
    if flt.type == fpb.FT_COLUMN_PAGINATION:
        if not top_of_read:
            raise service_error("pagination_position")
        page = _message(fpb.ColumnPaginationFilter, flt.filter)
        return md.ColumnPaginationFilter(page.offset, page.limit)
    raise service_error("filter_invalid")


def _single(single):
    """A SingleColumnValueFilter: a SingleColumnCondition when it is one, else a
    SingleColumnRegexCondition (a ValueTransferRule, or EXIST / NOT_EXIST).  An
    absent ``cast_type`` reads as the proto2 default, VT_INTEGER."""
    value = CODEC.decode_bare_variant(single.column_value)
    comparator = single.comparator - 1
    rule = None
    if single.HasField("value_trans_rule"):
        vt = single.value_trans_rule
        if vt.cast_type not in CAST_TYPES:
            raise service_error("cast_type_invalid", cast_type=fpb.VariantType.Name(vt.cast_type))
        rule = md.RegexRule(vt.regex, CAST_TYPES[vt.cast_type])
    if rule is None and comparator not in NO_VALUE:
        return md.SingleColumnCondition(
            single.column_name, value, comparator, pass_if_missing=not single.filter_if_missing,
            latest_version_only=single.latest_version_only)
    cond = md.SingleColumnRegexCondition(single.column_name, comparator,
                                         None if comparator in NO_VALUE else value, rule,
                                         single.latest_version_only)
    if not single.filter_if_missing:
        cond._pass_if_missing = True
    return cond


def condition(proto) -> md.Condition:
    cond = md.Condition(EXPECTATIONS[proto.row_existence])
    if proto.HasField("column_condition"):
        cond.set_column_condition(column_condition(proto.column_condition))
    return cond


RETURN_TYPES = {pb.RT_NONE: md.ReturnType.RT_NONE, pb.RT_PK: md.ReturnType.RT_PK,
                pb.RT_AFTER_MODIFY: md.ReturnType.RT_AFTER_MODIFY}


def return_type(proto):
    """A write's ``return_content.return_type`` (None when absent)."""
    if not proto.HasField("return_content"):
        return None
    return RETURN_TYPES[proto.return_content.return_type]


def return_column_names(proto):
    """A write's ``return_content.return_column_names`` (None when none)."""
    return list(proto.return_content.return_column_names) or None


def read_options(proto) -> dict:
    """The keyword arguments GetRow, BatchGetRow items and GetRange share."""
    time_range = None
    if proto.HasField("time_range"):
        tr = proto.time_range
        if tr.HasField("specific_time"):
            time_range = tr.specific_time
        elif tr.HasField("start_time") != tr.HasField("end_time"):
            raise service_error("time_range_both")
        elif tr.HasField("start_time"):
            time_range = (tr.start_time, tr.end_time)
    return {
        "columns_to_get": list(proto.columns_to_get) or None,
        "column_filter": column_filter(proto.filter) if proto.HasField("filter") else None,
        "max_version": proto.max_versions if proto.HasField("max_versions") else None,
        "time_range": time_range,
        "start_column": proto.start_column if proto.HasField("start_column") else None,
        "end_column": proto.end_column if proto.HasField("end_column") else None,
        "token": _token(proto),
    }


def _token(proto):
    """GetRow/GetRange carry one optional token, BatchGetRow items a list (one per row)."""
    field = proto.DESCRIPTOR.fields_by_name["token"]
    if field.label == field.LABEL_REPEATED:
        return list(proto.token) or None
    return proto.token if proto.HasField("token") else None


def transaction_id(proto):
    """The request's ``transaction_id`` (None when absent; "" is kept: an invalid id)."""
    return proto.transaction_id if proto.HasField("transaction_id") else None


# ------------------------------------------------------------ responses

def set_consumed(proto_consumed, cu) -> None:
    unit = proto_consumed.capacity_unit
    unit.read = (cu.read or 0) if cu is not None else 0
    unit.write = (cu.write or 0) if cu is not None else 0


def encode_row(row) -> bytes:
    """A returned Row (PK and (name, value, ts) columns) -> PlainBuffer; None -> b""."""
    if row is None or (not row.primary_key and not row.attribute_columns):
        return b""
    try:
        return CODEC.encode_row(row.primary_key or (), row.attribute_columns or ())
    except PlainBufferError as e:
        raise errors.parameter_invalid(str(e)) from None


def encode_rows(rows) -> bytes:
    try:
        return CODEC.encode_rows([(r.primary_key or (), r.attribute_columns or ()) for r in rows])
    except PlainBufferError as e:
        raise errors.parameter_invalid(str(e)) from None


def encode_matrix(rows) -> bytes:
    """Returned rows as one SimpleRowMatrix block (rowmatrix.py; GetRange's
    DBT_SIMPLE_ROW_MATRIX); no rows -> ``b""``."""
    try:
        return rowmatrix.encode_rows([(r.primary_key or (), r.attribute_columns or ())
                                      for r in rows])
    except rowmatrix.MatrixError as e:
        raise errors.parameter_invalid(str(e)) from None


def encode_primary_key(pk) -> bytes:
    return CODEC.encode_row(pk) if pk else b""


def encode_written_row(row) -> bytes:
    """The row a write returns: its primary key (RT_PK), or the columns of an
    RT_AFTER_MODIFY update alone, without TAG_ROW_PK, as the service sends
    them (the ex_aliyun_ots SDK's tests decode them as ``{nil, columns}``);
    ``b""`` for none."""
    if row is None:
        return b""
    if row.primary_key:
        return encode_primary_key(row.primary_key)
    if row.attribute_columns:
        return CODEC.encode_row(None, row.attribute_columns)
    return b""


# ------------------------------------------------------------ table meta

def table_meta(proto) -> md.TableMeta:
    schema = []
    for col in proto.primary_key:
        if col.type not in PK_TYPES:
            raise service_error("invalid_pk_type", type=pb.PrimaryKeyType.Name(col.type))
        entry = (col.name, PK_TYPES[col.type])
        if col.HasField("option") and col.option == pb.AUTO_INCREMENT:
            entry += (md.PK_AUTO_INCR,)
        schema.append(entry)
    return md.TableMeta(proto.table_name, schema, defined_columns(proto.defined_column))


def table_options(proto, defaults: bool) -> md.TableOptions:
    """CreateTable fills SDK defaults for absent fields; UpdateTable leaves them None."""
    def get(field, default):
        return getattr(proto, field) if proto.HasField(field) else (default if defaults else None)
    return md.TableOptions(get("time_to_live", -1), get("max_versions", 1),
                           get("deviation_cell_version_in_sec", 86400), get("allow_update", None),
                           optional(proto, "update_full_row"))


def capacity_unit(proto) -> md.CapacityUnit:
    return md.CapacityUnit(proto.read if proto.HasField("read") else None,
                           proto.write if proto.HasField("write") else None)


def split_points(partitions, schema) -> list | None:
    """CreateTable ``partitions`` (bare variants) -> the SDK's split_points values."""
    if not partitions:
        return None
    pk_type = schema[0][1] if schema else None
    points = []
    try:
        for part in list(partitions)[1:]:
            value = CODEC.decode_bare_variant(part.begin)
            if pk_type == "STRING" and isinstance(value, bytearray):
                value = bytes(value).decode("utf-8")
            elif pk_type == "BINARY" and isinstance(value, str):
                value = bytearray(value.encode("utf-8"))
            expected = {"INTEGER": int, "STRING": str, "BINARY": bytearray}.get(pk_type)
            if expected is not None and (type(value) is not expected):
                # (the Java SDK's SplitPointTest: the service's text)
                raise errors.parameter_invalid(
                    "The value type of partition does not match with primary key.")
            points.append(value)
    except (PlainBufferError, UnicodeDecodeError):
        raise errors.parameter_invalid("Invalid partition range.") from None
    return points


def fill_table_meta(proto, meta) -> None:
    proto.table_name = meta.table_name
    for entry in meta.schema_of_primary_key:
        col = proto.primary_key.add()
        col.name = entry[0]
        col.type = PK_TYPES_PB[entry[1]]
        if len(entry) > 2 and entry[2] is md.PK_AUTO_INCR:
            col.option = pb.AUTO_INCREMENT
    for name, kind in meta.defined_columns or ():
        col = proto.defined_column.add()
        col.name = name
        col.type = DEFINED_TYPES_PB[kind]


def fill_table_options(proto, opts) -> None:
    proto.time_to_live = opts.time_to_live if opts.time_to_live is not None else -1
    proto.max_versions = opts.max_version if opts.max_version is not None else 1
    proto.deviation_cell_version_in_sec = (opts.max_time_deviation
                                           if opts.max_time_deviation is not None else 86400)
    proto.allow_update = True if opts.allow_update is None else bool(opts.allow_update)
    proto.update_full_row = bool(getattr(opts, "update_full_row", False))


def stream_spec(request):
    """CreateTable's or UpdateTable's ``stream_spec`` as the data API's
    StreamSpecification, or None when absent."""
    if not request.HasField("stream_spec"):
        return None
    spec = request.stream_spec
    return StreamSpecification(spec.enable_stream, optional(spec, "expiration_time"),
                               list(spec.columns_to_get))


#: RecordColumn types -> a stream record cell's op (PlainBuffer's cell type)
RECORD_CELL_OPS = {RecordColumnType.PUT: None,
                   RecordColumnType.DELETE_ONE_VERSION: DELETE_ONE_VERSION,
                   RecordColumnType.DELETE_ALL_VERSIONS: DELETE_ALL_VERSION}


def stream_record(record) -> bytes:
    """A StreamRecord -> GetStreamRecord's ``record``: one PlainBuffer row with
    its sequence info; a deletion's cells carry their op (the SDKs tell a
    put by its value, one version by its timestamp)."""
    cells = [(c.name, c.value, c.timestamp, RECORD_CELL_OPS[c.type]) for c in record.columns]
    info = record.sequence_info
    try:
        return CODEC.encode_record(record.primary_key, cells, info.epoch, info.timestamp,
                                   info.row_index)
    except PlainBufferError as e:
        raise errors.parameter_invalid(str(e)) from None


def fill_stream_details(proto, details) -> None:
    """``proto`` (a StreamDetails: UpdateTable's and DescribeTable's
    ``stream_details``, which the service always sends and the Go SDK reads
    unchecked) from ``details``: None (no stream), or an object with
    ``enable_stream`` and, when enabled, ``stream_id``, ``expiration_time``
    (hours) and ``last_enable_time`` (any of them may be absent or None)."""
    enabled = bool(getattr(details, "enable_stream", False))
    proto.enable_stream = enabled
    if not enabled:
        return
    for field in ("stream_id", "expiration_time", "last_enable_time"):
        value = getattr(details, field, None)
        if value is not None:
            setattr(proto, field, value)
    proto.columns_to_get.extend(getattr(details, "columns_to_get", None) or ())


def fill_throughput_details(proto, details) -> None:
    cu = details.capacity_unit if details is not None else None
    proto.capacity_unit.read = (cu.read or 0) if cu is not None else 0
    proto.capacity_unit.write = (cu.write or 0) if cu is not None else 0
    proto.last_increase_time = (details.last_increase_time or 0) if details is not None else 0
    if details is not None and details.last_decrease_time is not None:
        proto.last_decrease_time = details.last_decrease_time


def shard_split(partition_key_name: str, value) -> bytes:
    """A region boundary as DescribeTable's ``shard_splits`` carries it: a PK-only row."""
    return CODEC.encode_row([(partition_key_name, value)])


# ------------------------------------------------------------ secondary indexes

#: each index type with the one update mode the service pairs it with: a global
#: index is updated asynchronously, a local one synchronously (the SDKs send
#: these pairs; the Python SDK's SecondaryIndexMeta cannot say otherwise)
UPDATE_MODE_OF_TYPE = {pb.IT_GLOBAL_INDEX: pb.IUM_ASYNC_INDEX, pb.IT_LOCAL_INDEX: pb.IUM_SYNC_INDEX}
UPDATE_MODES_PB = {"IUM_ASYNC_INDEX": pb.IUM_ASYNC_INDEX, "IUM_SYNC_INDEX": pb.IUM_SYNC_INDEX}
SYNC_PHASES_PB = {"ISP_FULL": pb.ISP_FULL, "ISP_INCR": pb.ISP_INCR}


def index_meta(proto) -> "md.SecondaryIndexMeta":
    """An ``IndexMeta`` (CreateTable's ``index_metas``, CreateIndex's
    ``index_meta``) -> the data API's SecondaryIndexMeta; the data API checks
    names and columns.  An update mode other than the index type's is refused
    here: nothing else can express it."""
    if proto.index_update_mode != UPDATE_MODE_OF_TYPE[proto.index_type]:
        raise errors.index_update_mode_mismatch(pb.IndexUpdateMode.Name(proto.index_update_mode),
                                                pb.IndexType.Name(proto.index_type))
    return md.SecondaryIndexMeta(proto.name, list(proto.primary_key), list(proto.defined_column),
                                 md.SecondaryIndexType(proto.index_type))


def fill_index_meta(repeated, index) -> None:
    """Append ``index`` (the data API's SecondaryIndexMeta) to ``repeated``
    (DescribeTable's ``index_metas``), every required field set, with its
    ``index_sync_phase`` when it has one."""
    kind = int(index.index_type)
    msg = repeated.add(name=index.index_name,
                       index_update_mode=UPDATE_MODES_PB.get(
                           getattr(index, "index_update_mode", None), UPDATE_MODE_OF_TYPE[kind]),
                       index_type=kind)
    msg.primary_key.extend(index.primary_key_names)
    msg.defined_column.extend(index.defined_column_names or ())
    phase = SYNC_PHASES_PB.get(getattr(index, "index_sync_phase", None))
    if phase is not None:
        msg.index_sync_phase = phase


# ------------------------------------------------------------ predefined columns

def defined_columns(repeated) -> list:
    """DefinedColumnSchema messages -> ``[(name, type)]`` as TableMeta's ``defined_columns``."""
    return [(c.name, DEFINED_TYPES.get(c.type, str(c.type))) for c in repeated]
