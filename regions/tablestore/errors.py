"""Tablestore's errors: the two exception classes and the one table of codes.

Every error the service side of this package raises is built here by
:func:`service_error` from a row of :data:`ERRORS`, so the code, HTTP status
and message wording of each failure live in exactly one place.  Messages are
Tablestore's own (shared/reference/tablestore.md, section 6); where the
reference gives none, the wording is ours and is marked ``(ours)`` below;
``(error-code page)`` marks wording from the service's current error-code
page, ``(SDK tests)`` wording asserted by the official SDK's tests.

:class:`OTSClientError` is what the official SDK raises when it rejects a
request before sending it; :class:`OTSServiceError` is what the service
answers.  Both have the SDK's accessors.
"""

from regions.errors import (ClosedError, CorruptionError, LSMError, ReadOnlyError,
                            is_retryable, reason)

__all__ = ["OTSError", "OTSClientError", "OTSServiceError", "ERRORS", "BATCH_WIDE",
           "service_error", "storage_error"]


class OTSError(Exception):
    """Base of both Tablestore errors (as in the SDK)."""


class OTSClientError(OTSError):
    """A request the SDK itself refuses (bad argument types, bad split points...)."""

    def __init__(self, message, http_status=None):
        super().__init__(message)
        self.message = message
        self.http_status = http_status

    def get_http_status(self):
        return self.http_status

    def get_error_message(self):
        return self.message

    def __str__(self):
        return self.message


class OTSServiceError(OTSError):
    """An error answered by the service: HTTP status, error code, message."""

    def __init__(self, http_status, code, message, request_id=""):
        super().__init__(http_status, code, message)
        self.http_status = http_status
        self.code = code
        self.message = message
        self.request_id = request_id

    def get_http_status(self):
        return self.http_status

    def get_error_code(self):
        return self.code

    def get_error_message(self):
        return self.message

    def get_request_id(self):
        return self.request_id

    def __str__(self):
        return "ErrorCode: %s, ErrorMessage: %s, RequestID: %s" % (
            self.code, self.message, self.request_id)


_P = (400, "OTSParameterInvalid")

#: name -> (http status, error code, message template).
ERRORS = {
    # tables
    "table_not_exist": (404, "OTSObjectNotExist", "Requested table does not exist."),
    "table_exists": (409, "OTSObjectAlreadyExist", "Requested table already exists."),
    # (the Java SDK's RestrictedItemTest: the service's text, with the quota)
    "table_quota": (403, "OTSQuotaExhausted", "Number of tables exceeds the quota:{limit}."),
    # quoted, as the Java SDK's ParameterLegalityTest reads them from the service
    "invalid_table_name": _P + ("Invalid table name: '{table}'.",),
    "invalid_column_name": _P + ("Invalid column name: '{column}'.",),
    "transaction_disabled": _P + ("Try to call method using explicit transaction on "
                                  "explicit-transaction-disabled table.",),   # (Java SDK tests)
    "invalid_pk_type": _P + ("{type} is an invalid type for the primary key.",),
    "pk_count": _P + ("The number of primary key columns must be in range: [1, {limit}].",),
    "duplicated_pk_name": _P + ("Duplicated primary key name: '{name}'.",),
    "auto_incr_not_integer": _P + ("AUTO_INCREMENT primary key must be integer.",),
    "auto_incr_first": _P + ("First primary key can't be auto increment, table: {table}.",),
    "auto_incr_count": _P + ("AUTO_INCREMENT primary key count must <= 1.",),  # (error-code page)
    "reserved_negative": _P + ("Invalid Capacity Unit:{cu} . Capacity Unit must be "
                               "nonnegative.",),  # (error-code page)
    "reserved_too_large": _P + ("Invalid Capacity Unit:{cu} . Capacity Unit must be at most "
                                "{limit}.",),  # (ours)
    "ttl_invalid": _P + ("TimeToLive cannot be 0 or less than -1.",),
    "ttl_too_small": _P + ("TimeToLive must be -1 or at least 86400 seconds.",),  # (ours)
    "max_versions_invalid": _P + ("The maximum versions cannot be less than or equal to 0.",),
    "deviation_invalid": _P + ("MaxTimeDeviation must be greater than 0.",),  # (ours)
    "defined_columns_limit": _P + ("The number of defined columns must be in range: [0, 32].",),  # (Java SDK tests)
    # secondary indexes (indexes.py); texts from shared/reference/tablestore.md,
    # "Secondary indexes: behaviour, error codes and texts"
    "invalid_index_name": _P + ("Invalid index name: {index}.",),  # (ours)
    "index_exists": (409, "OTSObjectAlreadyExist", "Requested table already exists."),  # (ours)
    "index_not_exist": _P + ("Index does not exist: {index}.",),  # (prefix: ecto_tablestore)
    "index_base_not_exist": _P + ("table [{table}] does not exist.",),  # (prefix: ecto_tablestore)
    "index_count": _P + ("Number of index per table exceeds the quota:{limit}.",),  # (Java SDK tests)
    "index_pk_count": _P + ("The number of primary key columns must be in range: [1, {limit}] in "
                            "index.",),  # (Java SDK tests)
    "index_pk_total": _P + ("The number of primary key columns of index {index} exceeds the "
                            "limit: {limit}.",),  # (ours)
    "index_attribute_count": _P + ("The number of attribute columns must be in range: [0, {limit}] "
                                   "in index.",),  # (Java SDK tests)
    "index_duplicated_column": _P + ("Duplicated column {column} in index {index}.",),  # (ours)
    "index_column_not_defined": _P + ("Column {column} of index {index} is neither a primary key "
                                      "column nor a defined column.",),  # (ours)
    "index_column_type": _P + ("Index column {column} of index {index} has type {type}; an index "
                               "column must be STRING, INTEGER or BINARY.",),  # (ours)
    "index_attribute_is_pk": _P + ("Attribute column {column} of index {index} is a primary key "
                                   "column.",),  # (ours)
    "local_index_first_pk": _P + ("The first primary key column of local index {index} must be "
                                  "{column}.",),  # (ours)
    "index_max_versions": _P + ("The max version of table {table} must be 1 to create an "
                                "index.",),  # (ours)
    "index_ttl": _P + ("Don't support allow update operation on table with index and ttl",),  # (docs FAQ)
    "index_write": _P + ("Index table {table} cannot be written.",),  # (ours)
    "index_building": _P + ("Disallow read index table in building base state",),  # (SDK tests; code ours)
    # defined (predefined) columns: AddDefinedColumn, DeleteDefinedColumn
    "defined_column_exists": _P + ("Duplicated defined column name: '{column}'.",),  # (ours)
    "defined_column_is_pk": _P + ("Defined column {column} is a primary key column.",),  # (ours)
    "defined_column_not_exist": _P + ("Defined column {column} does not exist.",),  # (ours)
    "defined_column_indexed": _P + ("Defined column {column} is used by index {index}; drop the "
                                    "index first.",),  # (ours)
    # primary keys
    "pk_name_mismatch": (400, "OTSInvalidPK", "Validate PK name fail. Input: {input}, Meta: {meta}."),
    "pk_size_mismatch": (400, "OTSInvalidPK", "Validate PK size fail. Input: {input}, Meta: {meta}."),
    # (the Java SDK's DataOperationTest and ParameterLegalityTest: the service's text)
    "pk_type_mismatch": (400, "OTSInvalidPK", "Validate PK type fail. Input: {input}, Meta: {meta}."),
    "pk_schema_mismatch": (400, "OTSInvalidPK", "Primary key schema mismatch."),
    "pk_too_long": _P + ("The length of primary key column: '{column}' exceeds the MaxLength:"
                         "{limit} with CurrentLength:{length}.",),   # (Java SDK tests)
    "auto_incr_read": _P + ("PKAutoIncr can't be used for read operations.",),
    "auto_incr_condition": _P + ("Can't set condition when modify row with pk auto increment.",),
    # rows
    "attr_dup_pk": _P + ("Duplicated attribute column name with primary key column: {column}.",),
    # (the Java SDK's TestWriterInnerConstructClient: the service's text, quoted, no spaces)
    "attr_too_long": _P + ("The length of attribute column: '{column}' exceeds the MaxLength:"
                           "{limit} with CurrentLength:{length}.",),
    "double_invalid": _P + ("Invalid double value: NaN or Infinity. Cell:{column}.",),  # (ours)
    "delete_with_value": _P + ("Column value cannot be given when type is "
                               "DELETE_ONE_VERSION,DELETE_ALL_VERSION.",),
    "delete_one_needs_ts": _P + ("Timestamp must be given when type is DELETE_ONE_VERSION.",),
    "delete_all_no_ts": _P + ("Timestamp cannot be given when type is DELETE_ALL_VERSION.",),
    "invalid_timestamp": _P + ("Invalid timestamp. Cell:{column}.",),
    # (the Java SDK's RestrictedItemTest, case 46: a cell's timestamp, ms)
    "timestamp_range": _P + ("Timestamp must be in range [0, INT64_MAX/1000).",),
    "update_missing_cells": _P + ("Invalid update row request: missing cells in request.",),
    "write_columns_limit": _P + ("The number of attribute columns exceeds the limit, limit count: "
                                 "{limit}, column count: {count}.",),  # (SDK tests: .NET)
    "increment_not_integer": _P + ("Increment value must be INTEGER. Cell:{column}.",),  # (ours)
    "increment_on_non_integer": _P + ("The type of the column to increment must be INTEGER. "
                                      "Cell:{column}.",),  # (ours)
    "not_utf8": _P + ("Value of column {column} must be UTF8 encoding.",),  # (error-code page)
    "put_row_size": _P + ("The total data size of PutRow request exceeds the limit, limit size: "
                          "{limit} , data size: {size}.",),  # (error-code page)
    "update_row_size": _P + ("The total data size of UpdateRow request exceeds the limit, limit "
                             "size: {limit} , data size: {size}.",),  # (error-code page)
    "update_duplicated_column": _P + ("Duplicated attribute column name: '{column}' while updating "
                                      "row.",),  # (SDK tests)
    "increment_with_ts": _P + ("Timestamp cannot be given when type is INCREMENT. "
                               "Cell:{column}.",),  # (ours)
    "increment_overflow": _P + ("The result of INCREMENT exceeds the range of INTEGER. "
                                "Cell:{column}.",),  # (ours)
    "condition_failed": (403, "OTSConditionCheckFail", "Condition check failed."),
    # return content (ReturnType, return_column_names)
    "invalid_return_type": _P + ("Invalid return type: {return_type}.",),  # (error-code page)
    # the service refuses these (the Java SDK's IncrementRequest test); wording ours
    "return_columns_need_after_modify": _P + ("Return column names can only be given with "
                                              "ReturnType RT_AFTER_MODIFY.",),  # (ours)
    "return_column_not_increment": _P + ("The column to return must be an INCREMENT column of "
                                         "the update: {column}.",),  # (ours)
    # reads
    # A read that gives neither max_versions nor time_range: the Java SDK's
    # ParameterLegalityTest reads the first text from GetRow and GetRange, the
    # second (the error-code page's) from BatchGetRow, which fails whole
    # (BATCH_WIDE), after an invalid column name (its RestrictedItemTest 12).
    "no_version_condition": _P + ("No version condition is specified.",),
    "batch_get_no_version_condition": _P + ("No version condition is specified while querying "
                                            "row.",),
    "time_range_both": _P + ("Start and end time must be given at the same time.",),
    # (the service's text, typo included: aliyun-tablestore-nodejs-sdk issues #10, #58)
    "specific_time_and_max_versions": _P + ("Specific tiemstamp and max versions cannot be given "
                                            "at the same time.",),
    "time_range_invalid": _P + ("Invalid time range: start time must be less than end time.",),  # (ours)
    "max_version_invalid": _P + ("The maximum versions to get must be greater than 0.",),  # (ours)
    "columns_to_get_limit": _P + ("The number of columns from the request exceeds the limit, "
                                  "limit count: {limit}, column count: {count}.",),  # (Java SDK tests)
    "limit_invalid": _P + ("The limit must be greater than 0.",),
    "forward_range": _P + ("Begin key must less than end key in FORWARD",),
    "backward_range": _P + ("Begin key must more than end key in BACKWARD",),
    # filters
    "filter_not": _P + ("Invalid NOT operator: the number of sub-filters must be 1.",),
    # The service's text per the Java SDK's UnifiedFilterRestrictionAndParamCheckingTest
    # (the docs' error table says "must be 2.").
    "filter_and_or": _P + ("Invalid AND/OR operator: the number of sub-filters must be more "
                           "than 1.",),
    "filter_invalid": _P + ("Deserialize filter failed.",),
    # Every node, composite or single, counts (same Java SDK test).
    "filter_count": _P + ("The count of filter exceeds the max: {limit}.",),
    "regex_invalid": _P + ("Invalid regex: {regex}.",),  # (ours)
    "regex_length": _P + ("The length of regex must be in range: [1, {limit}].",),  # (ours)
    "cast_type_invalid": _P + ("Invalid cast type of the regex rule: {cast_type}.",),  # (ours)
    "pagination_invalid": _P + ("Invalid ColumnPaginationFilter: offset must be at least 0 and "
                                "limit greater than 0.",),  # (ours)
    "pagination_position": _P + ("ColumnPaginationFilter can only be the whole filter of a "
                                 "read.",),  # (ours)
    # wide rows
    "column_range_invalid": _P + ("start_column must be less than end_column.",),  # (ours)
    "token_invalid": _P + ("Invalid token: this service returns no next_token to resume "
                           "from.",),  # (ours)
    # batches
    "batch_get_empty": _P + ("No row specified in the request of BatchGetRow.",),
    "batch_write_empty": _P + ("No row is specified in BatchWriteRow.",),
    "batch_no_operation": _P + ("No operation is specified for table: '{table}'.",),  # (SDK tests)
    "batch_rows_limit": _P + ("Rows count exceeds the upper limit: {limit}.",),  # (Java SDK tests)
    # (the Java SDK's RestrictedItemTest, case 48; the reference's page has no space after
    # "data size:")
    "batch_write_size": _P + ("The total data size of BatchWriteRow request exceeds the limit, "
                              "limit size: {limit}, data size: {size}.",),
    "batch_repeated_expectation": _P + ("Repeated rows do not support row exist expectation "
                                        "check in BatchModify.",),
    "batch_repeated_condition": _P + ("Repeated rows do not support row condition check in "
                                      "BatchModify.",),
    # a row incremented may be written once in a batch (the atomic counter notes); each of its
    # writes gets this.  (ours, after the two above)
    "batch_repeated_increment": _P + ("Repeated rows do not support increment in BatchModify.",),
    "request_too_large": (413, "OTSRequestBodyTooLarge", "The size of POST data is too large."),
    # local transactions (docs/tablestore.md, "Local transactions")
    "row_operation_conflict": (409, "OTSRowOperationConflict",
                               "Data is being modified by the other request."),
    "transaction_id_invalid": _P + ("TransactionID is invalid.",),
    "session_not_exist": (404, "OTSSessionNotExist",  # (ours: the status)
                          "Session not exist or may be timeout."),
    "session_busy": (409, "OTSSessionBusy",  # (ours: the status and message)
                     "The last request in the transaction has not been completed."),
    "data_out_of_range": (400, "OTSDataOutOfRange",  # (ours: the status)
                          "Data out of scope of transaction. Transaction PartKey:{txn}. "
                          "Data PartKey:{data}"),
    # an atomic BatchWriteRow whose rows of one table have two partition key values: every row
    # of that table gets it (the Java SDK's OTSAPIBehaviorTest.testAtomicBatchWriteRowWithDiffPartKey
    # asserts code and text for a STRING key; the status is ours: it is a row's error)
    "atomic_out_of_range": (400, "OTSDataOutOfRange",
                            "Data out of scope of atomic. Atomic PartKey:{atomic}. Data PartKey:{data}"),
    # (ours; the Go SDK's TestUpdateAndDescribeTable asserts "contain updateFullRow")
    "update_full_row_update": _P + ("UpdateTable request cannot contain updateFullRow: it is set "
                                    "at CreateTable only.",),
    # search indexes (search.py); texts ours unless marked
    "search_index_exists": (409, "OTSObjectAlreadyExist", "Index {index} already exists."),
    # (the vendor's parallel_scan_test, for ComputeSplits; used for every search API)
    "search_index_not_exist": (400, "OTSMetaNotMatch", "search index [{index}] does not exist"),
    "search_table_not_exist": _P + ("table [{table}] does not exist",),   # (same test)
    "scan_parallel_id": _P + ("[parallel_scan.current_parallel_id] must in [0, max_parallel), "
                              "current max_parallel is {max}, current_parallel_id is {id}",),
    "scan_max_parallel": _P + ("[parallel_scan.max_parallel_id] must in (0 ,{splits}], current "
                               "max_parallel_id is {max}",),   # (the vendor's test, its spacing)
    "scan_session_expired": (400, "OTSSessionExpired", "ScanQuery'session is expired, please "
                             "retry ComputeSplitsRequest and ScanQuery."),
    "scan_limit": _P + ("The limit of a scan must be in [1, {max}]: {limit}.",),
    # a dynamic schema change (the service's reindex; texts ours)
    "reindex_name": _P + ("A reindex index's name must end with _reindex: {index}.",),
    "reindex_paired": _P + ("Search index {index} is already in a schema change with {brother}.",),
    "reindex_count": _P + ("At most {limit} search indexes can be rebuilt at the same time.",),
    "reindex_unpaired": _P + ("Search index {index} has no reindex index: create one with "
                              "source_index_name first.",),
    "reindex_switch": _P + ("Search index {index} can only switch with its reindex index "
                            "{brother}.",),
    "reindex_weights": _P + ("Invalid query_flow_weight of search index {index}: each of {index} "
                             "and {brother} at most once, a weight in [0, 100].",),
    "reindex_not_synced": _P + ("Search index {index} has not loaded the table yet (sync phase "
                                "FULL): switch when it is in INCR.",),
    "search_index_count": _P + ("The number of search indexes of table {table} exceeds the "
                                "limit: {limit}.",),
    "search_field_duplicated": _P + ("Duplicated field name: {field}.",),
    "search_field_type_unsupported": _P + ("Field type {type} of field {field} is not supported "
                                           "by this server.",),
    "search_analyzer_invalid": _P + ("Invalid analyzer {analyzer} of field {field}.",),
    "search_vector_options": _P + ("Vector field {field} needs vector_options with a dimension "
                                   "in [1, 4096].",),
    "search_sort_on_text": _P + ("Field {field}: enable_sort_and_agg is not supported for TEXT "
                                 "and VECTOR fields.",),
    "search_no_fields": _P + ("A search index needs at least one field.",),
    "search_ttl_invalid": _P + ("Invalid time_to_live of a search index: {ttl} (-1, or at least "
                                "86400 seconds).",),
    "search_field_not_exist": _P + ("Field {field} is not in search index {index}.",),
    "search_sort_not_enabled": _P + ("Field {field} cannot be sorted: enable_sort_and_agg is "
                                     "false.",),
    "search_sort_unsupported": _P + ("Unsupported sorter: {sort}.",),
    "search_query_unsupported": _P + ("Unsupported query: {query}.",),
    "search_function_score": _P + ("Invalid FunctionsScoreQuery: {detail}",),
    "search_query_field_type": _P + ("{query} does not apply to field {field} of its type.",),
    "search_query_value_type": _P + ("The value does not fit field {field} of type {type}.",),
    "search_vector_dimension": _P + ("The query vector of field {field} must have {dimension} "
                                     "dimensions.",),
    "search_limit": _P + ("The limit must be in [0, {max}]: {limit}.",),
    "search_offset": _P + ("offset + limit must be at most {max}: offset {offset}.",),
    "search_token_invalid": _P + ("Invalid next_token.",),
    "search_top_k": _P + ("top_k must be in [1, {max}]: {top_k}.",),
    "search_geo_point": _P + ("Invalid geo point: {point} (\"lat,lon\").",),
    # (the vendor's full_text_search_test)
    "search_highlight_field": _P + ("highlighting is not supported for field[{field}]",),
    "search_highlight_not_text": _P + ("enable_highlighting is only for TEXT fields: {field}.",),
    "search_nested_no_fields": _P + ("NESTED field {field} needs sub_field_schemas.",),
    "search_routing_field": _P + ("Routing field {field} is not a primary key column.",),
    # aggregations and group-bys (searchagg.py); texts ours
    "search_agg_count": _P + ("Too many aggregations: {count} (at most {max}).",),
    "search_group_by_count": _P + ("Too many group-bys: {count} (at most {max}).",),
    "search_group_by_depth": _P + ("Group-bys are nested deeper than {max}.",),
    "search_agg_name": _P + ("An aggregation or group-by needs a name: {name!r}.",),
    "search_agg_name_duplicated": _P + ("Duplicated aggregation or group-by name: {name}.",),
    "search_agg_unsupported": _P + ("Unsupported aggregation: {agg}.",),
    "search_group_by_unsupported": _P + ("Unsupported group-by: {group_by}.",),
    # (the service's texts: the Go SDK's search_api_test)
    "search_agg_field_not_exist": _P + ("[{agg}] field: {field} does not exist",),
    "search_agg_field_type": _P + ("[{agg}] field_name:{field} type:{type} is invalid, allow "
                                   "[{allowed}]",),
    "search_agg_value": _P + ("The {what} of field {field} must be a value of type {type}.",),
    "search_percentiles": _P + ("Percentiles must be numbers in [0, 100]: {percentiles}.",),
    "search_top_rows_limit": _P + ("The limit of TopRows must be in [1, {max}]: {limit}.",),
    "search_group_size": _P + ("The size of GroupByField must be in [1, {max}]: {size}.",),
    "search_group_ranges": _P + ("{group_by} needs from 1 to {max} ranges or filters.",),
    "search_group_range": _P + ("Invalid range: {range} (from <= to, both numbers).",),
    "search_geo_origin": _P + ("GroupByGeoDistance needs an origin (lat, lon).",),
    "search_histogram_interval": _P + ("The interval of GroupByHistogram must be positive: "
                                       "{interval}.",),
    "search_histogram_range": _P + ("GroupByHistogram needs a field_range with min <= max.",),
    "search_histogram_buckets": _P + ("GroupByHistogram would make more than {max} groups.",),
    "search_date_interval": _P + ("Invalid date interval: {interval} (a positive number of "
                                  "YEAR, QUARTER_YEAR, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND or "
                                  "MILLISECOND).",),
    "search_composite_sources": _P + ("GroupByComposite needs 1 to {max} sources, each a "
                                      "GroupByField, GroupByHistogram or GroupByDateHistogram "
                                      "without sub-aggregations.",),
    "search_geo_precision": _P + ("Invalid geohash precision: {precision} (1 to 12).",),
    "search_time_zone": _P + ("Invalid time zone: {zone} (+hh:mm or -hh:mm).",),
    "search_group_sub_agg_sort": _P + ("SubAggSort names {name}, which is not a metric "
                                       "sub-aggregation of the group-by.",),
    "search_group_sort_unsupported": _P + ("Unsupported group-by sort: {sort}.",),
    # pre-split points (the Java SDK's SplitPointTest: the service's texts)
    "split_point_int64_bound": _P + ("The value of partition range can not be INT64_MIN or "
                                     "INT64_MAX.",),
    "split_point_empty": _P + ("The value of partition range can not be empty {type}.",),
    "partition_count": _P + ("The count of partitions cannot be greater than {limit}",),
    "split_point_length": _P + ("The value of partition range exceeds the MaxLength:{limit} with "
                                "CurrentLength:{size}.",),
    # streams (streams.py)
    "stream_expiration": _P + ("The expiration time of a stream must be in [{low}, {high}] "
                               "hours: {value}.",),  # (ours)
    "stream_enabled": _P + ("The stream of table {table} is already enabled.",),  # (ours)
    "stream_not_exist": (404, "OTSObjectNotExist", "Stream does not exist: {stream}."),  # (ours)
    "stream_shard_not_exist": (404, "OTSObjectNotExist",
                               "Shard does not exist: {shard}."),  # (ours)
    "stream_shard_limit": _P + ("The shard limit must be greater than 0: {limit}.",),  # (ours)
    "stream_record_limit": _P + ("The limit must be greater than 0: {limit}.",),  # (ours)
    "stream_iterator_invalid": _P + ("Invalid shard iterator.",),  # (ours)
    # (the Java SDK's APITest.testStreamWithLongTableName: the prefix, the code)
    "stream_id_invalid": _P + ("Invalid stream id: the stream of a table whose name is longer "
                               "than {limit} characters cannot be read.",),
    # (docs: the service's text; the status is ours, the docs show it only through Tunnel)
    "stream_trimmed": (400, "OTSTrimmedDataAccess",
                       "Requested stream data is already trimmed or does not exist."),
    # (the Go SDK's PR #17)
    "stream_disable_expiration": _P + ("Expiration time is invalid when enableStream is false",),
    "transaction_other_table": (400, "OTSDataOutOfRange",  # (ours)
                                "Data out of scope of transaction. Transaction table:{txn_table}. "
                                "Data table:{table}"),
    "transaction_data_size": (400, "OTSOutOfTransactionDataSizeLimit",  # (ours: status, message)
                              "The total data size of the transaction exceeds the limit: {limit}."),
    "transaction_one_pk": _P + ("StartLocalTransaction support only one primary key.",),
    "transaction_auto_incr": _P + ("Local transactions cannot be used on a table with an "
                                   "auto-increment primary key column.",),  # (ours)
    # a fault of ours while running one row of a batch (the row's result, never the request's)
    "internal_error": (500, "OTSInternalServerError", "Internal server error."),
    # a stored table schema this version cannot read (schema.py)
    "schema_record": (500, "OTSInternalServerError", "Table schema record of {table}: {problem}."),  # (ours)
    # storage (storage_error below): a region whose disk filled up or whose
    # descriptors ran out refuses writes until it resumes by itself: the
    # service's 503 for a partition briefly unavailable, which the SDKs'
    # default retry policies retry for writes too; the cause is ours
    "storage_degraded": (503, "OTSPartitionUnavailable",
                         "The partition is not available: {reason}; writes resume by "
                         "themselves once it is back."),
    "storage_stopped": (500, "OTSInternalServerError",
                        "Internal server error: the partition refuses writes after a storage "
                        "failure: {reason}."),  # (ours)
    "data_corrupted": (500, "OTSInternalServerError",
                       "Stored data is corrupt: a checksum failed; see the server's log and "
                       "lsm.tools verify."),  # (ours)
}


def not_a_string(value):
    """The SDK's OTSClientError for a value that should be a str."""
    return OTSClientError("expect str or unicode type for string, not %s: %s"
                          % (value.__class__.__name__, value))


def service_error(error, **fields):
    """The :class:`OTSServiceError` for row ``error`` of :data:`ERRORS` (its
    ``key`` is ``error``)."""
    status, code, template = ERRORS[error]
    exc = OTSServiceError(status, code, template.format(**fields))
    exc.key = error
    return exc


def storage_error(exc):
    """The service's answer to the storage's failure ``exc`` (an
    ``lsm.LSMError``, or an ``OSError`` the file system raised), or None
    for any other exception: a write refused by a degraded store, or the
    write that found the disk full, is ``storage_degraded`` (503, retried);
    one refused for good ``storage_stopped`` (500); corruption
    ``data_corrupted``.  The reason is the OS's text
    (``No space left on device``).  A closed store is not answered here."""
    if isinstance(exc, ReadOnlyError):
        cause, retryable = exc.cause if exc.cause is not None else exc, exc.retryable
    elif isinstance(exc, (LSMError, OSError)) and not isinstance(exc, ClosedError):
        cause, retryable = exc, is_retryable(exc)
    else:
        return None
    if isinstance(cause, CorruptionError):
        return service_error("data_corrupted")
    return service_error("storage_degraded" if retryable else "storage_stopped",
                         reason=reason(cause))


#: A row's errors that fail a whole BatchWriteRow or BatchGetRow (400), not
#: only the row: the service checks lengths and counts before it looks at the
#: rows one by one (the Java SDK's TableStoreWriter tests resend such a batch
#: row by row; its RestrictedItemTest expects a key too long, too many columns
#: written or asked for, an invalid column name, a timestamp out of range, a
#: key of more than 4 columns, to fail the batch; its ParameterLegalityTest an
#: INF_MIN in a key, and a BatchGetRow without a version condition).
BATCH_WIDE = frozenset({"attr_too_long", "pk_too_long", "write_columns_limit",
                        "columns_to_get_limit", "invalid_column_name", "invalid_pk_type",
                        "timestamp_range", "pk_count", "batch_get_no_version_condition"})
