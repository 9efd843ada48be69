"""The wire schema: table_store.proto as the service speaks it today.

The Python SDK 6.4.8's generated ``tablestore.protobuf.table_store_pb2`` is an
older table_store.proto than the service's (the Go SDK's
``tablestore/otsprotocol/table_store.proto``, the Java SDK's
``ots_internal_api.proto``): it lacks fields the service sends and clients
send, some of them required (DescribeTableResponse.table_status, without
which the Go SDK cannot decode the response).  This module is the one place
that knows the difference: it takes the SDK file's descriptor, adds the
fields, enums and messages listed in ``ENUMS``, ``FIELDS`` and ``MESSAGES``
(each with where it comes from), and builds message classes from the result
in a package and descriptor pool of ours (``PACKAGE``), so they can never
clash with the SDK's classes, which stay usable beside them.  Field numbers
and types are the service's, so bytes are interchangeable with the SDK's.

The module looks like a generated ``_pb2`` module: each message class and
each enum (an ``EnumTypeWrapper``: ``Name``, ``Value``) is an attribute, and
so is each enum value (``wire.PUT``, ``wire.DBT_SIMPLE_ROW_MATRIX``).  The
endpoint (convert.py, protocol.py) uses these classes for every
table_store.proto message; the filter and search messages stay the SDK's.

Built once at import; the classes are immutable and thread-safe as any
generated protobuf class.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from tablestore.protobuf import table_store_pb2 as _sdk

#: The proto package (and file name) of our classes: not the SDK's
#: ``com.aliyun.tablestore.protocol``, so both sets of classes can live in
#: one process; the package is not on the wire.
PACKAGE = "regions.otsserver.wire"
FILE_NAME = "regions/otsserver/wire/table_store.proto"

_F = descriptor_pb2.FieldDescriptorProto
OPTIONAL, REQUIRED, REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REQUIRED, _F.LABEL_REPEATED
_SCALARS = {"bool": _F.TYPE_BOOL, "int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64,
            "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES}

#: Enums the SDK's file lacks: (name, ((value, number), ...)).
ENUMS = (
    # DescribeTableResponse.table_status (Go SDK's proto)
    ("TableStatus", (("ACTIVE", 1), ("INACTIVE", 2), ("LOADING", 3), ("UNLOADING", 4),
                     ("UPDATING", 5))),
    # GetRange's data_block_type_hint / data_block_type (Go and Java SDKs' protos)
    ("DataBlockType", (("DBT_PLAIN_BUFFER", 0), ("DBT_SIMPLE_ROW_MATRIX", 1))),
    # GetRange's compress_type_hint / compress_type (Go SDK's proto: no compression defined)
    ("CompressType", (("CPT_NONE", 0),)),
    # TableOptions.bloom_filter_type (Go SDK's proto)
    ("BloomFilterType", (("NONE", 1), ("CELL", 2), ("ROW", 3))),
    # IndexMeta.index_sync_phase (Go and Java SDKs' protos)
    ("IndexSyncPhase", (("ISP_INVALID", 0), ("ISP_FULL", 1), ("ISP_INCR", 2))),
)

#: Messages the SDK's file lacks: (name, ((field, number, label, type), ...)); a
#: type that is not a scalar names a message or enum of this file.
MESSAGES = (
    # AddDefinedColumn / DeleteDefinedColumn (Go and Java SDKs' protos)
    ("AddDefinedColumnRequest", (("table_name", 1, REQUIRED, "string"),
                                 ("columns", 2, REPEATED, "DefinedColumnSchema"))),
    ("AddDefinedColumnResponse", ()),
    ("DeleteDefinedColumnRequest", (("table_name", 1, REQUIRED, "string"),
                                    ("columns", 2, REPEATED, "string"))),
    ("DeleteDefinedColumnResponse", ()),
)

#: Fields the SDK's messages lack: (message, field, number, label, type, default or None).
#: All from the Go SDK's table_store.proto unless said otherwise.
FIELDS = (
    # the status the service always sends; the Go SDK refuses a response without it
    ("DescribeTableResponse", "table_status", 4, REQUIRED, "TableStatus", None),
    # when the table was made, µs (the Java SDK's proto; its TableCreationTimeTest)
    ("DescribeTableResponse", "creation_time", 9, OPTIONAL, "int64", None),
    # an atomic BatchWriteRow: one partition key value per table, all or nothing
    ("BatchWriteRowRequest", "is_atomic", 3, OPTIONAL, "bool", None),
    # GetRange's row encoding asked for (DBT_SIMPLE_ROW_MATRIX: rowmatrix.py)
    ("GetRangeRequest", "data_block_type_hint", 15, OPTIONAL, "DataBlockType", "DBT_PLAIN_BUFFER"),
    # false: only the primary-key columns asked for (a matrix hint; we always send all)
    ("GetRangeRequest", "return_entire_primary_keys", 16, OPTIONAL, "bool", "true"),
    ("GetRangeRequest", "compress_type_hint", 17, OPTIONAL, "CompressType", "CPT_NONE"),
    # the encoding GetRange's rows are in (absent: plain buffer)
    ("GetRangeResponse", "data_block_type", 5, OPTIONAL, "DataBlockType", None),
    ("GetRangeResponse", "compress_type", 6, OPTIONAL, "CompressType", None),
    # whether the read fills the block cache (a hint; ours always may)
    ("GetRowRequest", "cache_blocks", 6, OPTIONAL, "bool", "true"),
    ("TableInBatchGetRowRequest", "cache_blocks", 7, OPTIONAL, "bool", "true"),
    ("GetRangeRequest", "cache_blocks", 9, OPTIONAL, "bool", "true"),
    # CreateTable's local-transaction switch (Go and Java SDKs' protos)
    ("CreateTableRequest", "enable_local_txn", 8, OPTIONAL, "bool", None),
    # table options the service has beside TTL and versions
    ("TableOptions", "bloom_filter_type", 3, OPTIONAL, "BloomFilterType", None),
    ("TableOptions", "block_size", 4, OPTIONAL, "int32", None),
    ("TableOptions", "update_full_row", 7, OPTIONAL, "bool", None),
    ("TableMeta", "index_meta", 4, REPEATED, "IndexMeta", None),
    # an index's build phase (Go and Java SDKs' protos)
    ("IndexMeta", "index_sync_phase", 6, OPTIONAL, "IndexSyncPhase", None),
    # streams: the columns a stream records (Java names field 5 column_to_get)
    ("StreamSpecification", "columns_to_get", 3, REPEATED, "string", None),
    ("StreamDetails", "columns_to_get", 5, REPEATED, "string", None),
    ("GetShardIteratorRequest", "timestamp", 3, OPTIONAL, "int64", None),
    ("GetShardIteratorRequest", "token", 4, OPTIONAL, "string", None),
    ("GetShardIteratorResponse", "next_token", 2, OPTIONAL, "string", None),
    ("GetStreamRecordRequest", "table_name", 3, OPTIONAL, "string", None),
    ("GetStreamRecordResponse", "consumed", 3, OPTIONAL, "ConsumedCapacity", None),
    ("GetStreamRecordResponse", "may_more_record", 4, OPTIONAL, "bool", None),
    ("GetStreamRecordResponse.StreamRecord", "origin_record", 3, OPTIONAL, "bytes", None),
)


def _file() -> descriptor_pb2.FileDescriptorProto:
    """The SDK's table_store.proto, moved to PACKAGE, with ENUMS, MESSAGES and FIELDS added."""
    file = descriptor_pb2.FileDescriptorProto.FromString(_sdk.DESCRIPTOR.serialized_pb)
    old = "." + file.package + "."
    file.name, file.package = FILE_NAME, PACKAGE
    messages = {}

    def walk(prefix, types):
        for m in types:
            messages[prefix + m.name] = m
            for f in m.field:
                if f.type_name.startswith(old):
                    f.type_name = "." + PACKAGE + "." + f.type_name[len(old):]
            walk(prefix + m.name + ".", m.nested_type)
    walk("", file.message_type)
    for name, values in ENUMS:
        enum = file.enum_type.add(name=name)
        for value, number in values:
            enum.value.add(name=value, number=number)
    enums = {e.name for e in file.enum_type}

    def add_field(msg, name, number, label, kind, default=None):
        field = msg.field.add(name=name, number=number, label=label)
        if kind in _SCALARS:
            field.type = _SCALARS[kind]
        else:
            field.type = _F.TYPE_ENUM if kind in enums else _F.TYPE_MESSAGE
            field.type_name = "." + PACKAGE + "." + kind
        if default is not None:
            field.default_value = default
    for name, fields in MESSAGES:
        msg = file.message_type.add(name=name)
        messages[name] = msg
        for field in fields:
            add_field(msg, *field)
    for message, name, number, label, kind, default in FIELDS:
        add_field(messages[message], name, number, label, kind, default)
    return file


def _build():
    pool = descriptor_pool.DescriptorPool()
    file = pool.Add(_file())
    namespace = {}
    for name in file.message_types_by_name:
        namespace[name] = message_factory.GetMessageClass(file.message_types_by_name[name])
    for name, enum in file.enum_types_by_name.items():
        namespace[name] = EnumTypeWrapper(enum)
        for value in enum.values:
            namespace[value.name] = value.number
    return pool.FindFileByName(FILE_NAME), namespace


DESCRIPTOR, _NAMESPACE = _build()
globals().update(_NAMESPACE)
__all__ = ["DESCRIPTOR", "PACKAGE"] + sorted(_NAMESPACE)
