"""Search indexes on the wire: search.proto messages <-> the SDK's ``tablestore.metadata`` objects.

Requests arrive as the SDK's ``tablestore.protobuf.search_pb2`` messages (its
search.proto has every field the service's has that the engine reads; nothing
is added in ``wire``).  This module turns them into the very objects the
official SDK's ``OTSClient`` is called with (SearchIndexMeta with its
FieldSchemas, analyzer parameters, VectorOptions, IndexSetting and index
Sort; SearchQuery with its Query tree, Sort, paging and Collapse;
ColumnsToGet; routing keys), so the embedded client (``regions.tablestore``,
search.py) checks and answers them exactly as it does for embedded callers,
and raises the service's error for what it does not serve.  Responses go the
other way: DescribeSearchIndex's schema and sync stat, ListSearchIndex's
indices, Search's rows (PlainBuffer, ``convert.CODEC``), hits (scores,
highlight fragments, inner hits), next token and total count; ComputeSplits' session and ParallelScan's pages.

The yardstick of the bytes is the SDK's own encoder.py (what a request holds)
and decoder.py (what it reads back); where the two disagree with proto2
defaults (an absent ``index`` reads as false; an absent sort order as ASC) we
always set the field.

Query values (TermQuery's ``term``, TermsQuery's ``terms``, RangeQuery's
bounds) are bare PlainBuffer variants; routing values are PlainBuffer
primary keys.  A query nested in bytes is parsed level by level, so depth is
checked here (``MAX_QUERY_DEPTH``), not by protobuf's recursion limit.

Aggregations and group-bys (``aggs``, ``group_bys``, each an Aggregation or
GroupBy message whose body is its own message's bytes, sub-aggregations and
sub-group-bys nested inside) become the SDK's ``tablestore.aggregation`` and
``tablestore.group_by`` objects; their results are written back walking the
request beside the results (a result's type is its request's), values as
the SDK's decoder reads them (metrics as doubles, counts as int64,
percentile values and histogram keys as bare variants, top rows as
PlainBuffer rows).

Stateless; thread-safe.
"""
from __future__ import annotations

from google.protobuf.message import DecodeError
from tablestore import aggregation as sagg
from tablestore import group_by as sgb
from tablestore import metadata as sdk
from tablestore.protobuf import search_pb2 as spb

from regions.otsserver import errors, searchfunctions
from regions.otsserver.convert import CODEC
from regions.otsserver.plainbuffer import PlainBufferError

__all__ = ["ConstScoreQuery", "SuffixQuery", "MAX_QUERY_DEPTH", "index_meta", "search_query",
           "columns_to_get", "routing_keys", "timeout_s", "fill_index_schema", "fill_sync_stat",
           "fill_search_response", "query", "sort", "update_meta", "in_incr",
           "scan_query", "session_id", "fill_compute_splits", "fill_parallel_scan", "fill_hit",
           "aggregations", "group_bys", "fill_aggregations", "fill_group_bys",
           "fill_metering_info"]

#: Queries nested deeper than this (Bool in Bool..., each level its own bytes) are refused.
MAX_QUERY_DEPTH = 64


class ConstScoreQuery(sdk.Query):
    """CONST_SCORE_QUERY: the SDK defines the type but no class; the engine
    reads a query of this name with a ``filter``."""

    def __init__(self, filter):
        self.filter = filter


def _parse(cls, data: bytes, what: str):
    msg = cls()
    try:
        msg.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        raise errors.parameter_invalid("Invalid %s." % what) from None
    return msg


def _opt(proto, field, default=None):
    return getattr(proto, field) if proto.HasField(field) else default


def _variant(data: bytes, field_name: str):
    try:
        return CODEC.decode_bare_variant(data)
    except PlainBufferError:
        raise errors.parameter_invalid("Invalid column value of field %s." % field_name) from None


# ------------------------------------------------------------- index schema

_ANALYZER_PARAMETERS = {
    sdk.AnalyzerType.SINGLEWORD: (spb.SingleWordAnalyzerParameter, lambda p: sdk.SingleWordAnalyzerParameter(
        p.case_sensitive, p.delimit_word)),
    sdk.AnalyzerType.SPLIT: (spb.SplitAnalyzerParameter, lambda p: sdk.SplitAnalyzerParameter(
        p.delimiter if p.HasField("delimiter") else " ")),
    sdk.AnalyzerType.FUZZY: (spb.FuzzyAnalyzerParameter, lambda p: sdk.FuzzyAnalyzerParameter(
        p.min_chars if p.HasField("min_chars") else 1, p.max_chars if p.HasField("max_chars") else 7)),
}


def _enum(cls, value):
    """``value`` (a proto enum number) as the SDK's IntEnum ``cls``; a number
    the SDK does not know stays an int (the engine refuses it by name)."""
    try:
        return cls(value)
    except ValueError:
        return value


def field_schema(proto) -> "sdk.FieldSchema":
    """A FieldSchema message -> the SDK's FieldSchema (its sub-fields too)."""
    analyzer = _opt(proto, "analyzer")
    parameter = None
    if analyzer is not None and proto.analyzer_parameter:
        known = _ANALYZER_PARAMETERS.get(analyzer)
        if known is None:
            raise errors.parameter_invalid("Analyzer %s takes no analyzer_parameter." % analyzer)
        parameter = known[1](_parse(known[0], proto.analyzer_parameter, "analyzer_parameter"))
    vector = None
    if proto.HasField("vector_options"):
        opts = proto.vector_options
        vector = sdk.VectorOptions(
            _enum(sdk.VectorDataType, opts.data_type) if opts.HasField("data_type") else None,
            _enum(sdk.VectorMetricType, opts.metric_type) if opts.HasField("metric_type") else None,
            _opt(opts, "dimension"))
    return sdk.FieldSchema(
        proto.field_name, _enum(sdk.FieldType, proto.field_type) if proto.HasField("field_type")
        else None,
        index=_opt(proto, "index"), store=_opt(proto, "store"), is_array=_opt(proto, "is_array"),
        enable_sort_and_agg=_opt(proto, "enable_sort_and_agg"), analyzer=analyzer,
        sub_field_schemas=[field_schema(f) for f in proto.field_schemas],
        analyzer_parameter=parameter, date_formats=list(proto.date_formats),
        is_virtual_field=proto.is_virtual_field, source_fields=list(proto.source_field_names),
        vector_options=vector, enable_highlighting=_opt(proto, "enable_highlighting"),
        json_type=_enum(sdk.JsonType, proto.json_type) if proto.HasField("json_type") else None,
        text_similarity=_enum(sdk.TextSimilarity, proto.text_similarity)
        if proto.HasField("text_similarity") else None)


def index_meta(request) -> "sdk.SearchIndexMeta":
    """CreateSearchIndexRequest's ``schema`` and ``time_to_live`` -> SearchIndexMeta."""
    schema = request.schema
    fields = [field_schema(f) for f in schema.field_schemas]
    setting = sdk.IndexSetting(list(schema.index_setting.routing_fields)) \
        if schema.HasField("index_setting") else None
    index_sort = sort(schema.index_sort) if schema.HasField("index_sort") else None
    return sdk.SearchIndexMeta(fields, setting, index_sort,
                               time_to_live=_opt(request, "time_to_live", -1))


def update_meta(request) -> "sdk.SearchIndexMeta":
    """UpdateSearchIndexRequest -> the SearchIndexMeta the SDK's
    update_search_index takes (only ``time_to_live`` travels; None when absent)."""
    return sdk.SearchIndexMeta([], time_to_live=_opt(request, "time_to_live"))


# ------------------------------------------------------------- sorts

def _order(proto, default=None):
    return sdk.SortOrder(proto.order) if proto.HasField("order") else default


def _nested_filter(proto, depth):
    if not proto.HasField("nested_filter"):
        return None
    nf = proto.nested_filter
    return sdk.NestedFilter(nf.path, query(nf.filter, depth + 1) if nf.HasField("filter") else None)


def sorter(proto, depth=0):
    if proto.HasField("field_sort"):
        s = proto.field_sort
        return sdk.FieldSort(s.field_name, _order(s),
                             sdk.SortMode(s.mode) if s.HasField("mode") else None,
                             _nested_filter(s, depth))
    if proto.HasField("geo_distance_sort"):
        s = proto.geo_distance_sort
        return sdk.GeoDistanceSort(
            s.field_name, list(s.points), _order(s),
            sdk.SortMode(s.mode) if s.HasField("mode") else None,
            sdk.GeoDistanceType(s.distance_type) if s.HasField("distance_type") else None,
            _nested_filter(s, depth))
    if proto.HasField("score_sort"):
        return sdk.ScoreSort(_order(proto.score_sort, sdk.SortOrder.DESC))
    if proto.HasField("pk_sort"):
        return sdk.PrimaryKeySort(_order(proto.pk_sort, sdk.SortOrder.ASC))
    if proto.HasField("doc_sort"):
        return sdk.DocSort(_order(proto.doc_sort, sdk.SortOrder.ASC))
    raise errors.parameter_invalid("A sorter names no sort.")


def sort(proto, depth=0) -> "sdk.Sort":
    return sdk.Sort([sorter(s, depth) for s in proto.sorter])


# ------------------------------------------------------------- queries

def _msm(proto):
    """minimum_should_match: the new string form when sent (an integer in a
    string), else the deprecated int; a percentage is refused here."""
    if proto.HasField("new_minimum_should_match"):
        text = proto.new_minimum_should_match.strip()
        try:
            return int(text)
        except ValueError:
            raise errors.parameter_invalid(
                "minimum_should_match %r is not supported by this server: give a number of "
                "clauses." % text) from None
    return _opt(proto, "minimum_should_match")


def _match(p, d):
    return sdk.MatchQuery(p.field_name, p.text, _msm(p),
                          sdk.QueryOperator(p.operator) if p.HasField("operator") else None,
                          _opt(p, "weight"))


def _match_phrase(p, d):
    return sdk.MatchPhraseQuery(p.field_name, p.text, _opt(p, "weight"), _opt(p, "slop"))


def _term(p, d):
    return sdk.TermQuery(p.field_name, _variant(p.term, p.field_name), _opt(p, "weight"))


def _terms(p, d):
    return sdk.TermsQuery(p.field_name, [_variant(t, p.field_name) for t in p.terms],
                          _opt(p, "weight"))


def _range(p, d):
    return sdk.RangeQuery(
        p.field_name,
        _variant(p.range_from, p.field_name) if p.HasField("range_from") else None,
        _variant(p.range_to, p.field_name) if p.HasField("range_to") else None,
        include_lower=_opt(p, "include_lower", False),
        include_upper=_opt(p, "include_upper", False))


def _bool(p, d):
    return sdk.BoolQuery([query(q, d + 1) for q in p.must_queries],
                         [query(q, d + 1) for q in p.must_not_queries],
                         [query(q, d + 1) for q in p.filter_queries],
                         [query(q, d + 1) for q in p.should_queries],
                         _msm(p), _opt(p, "weight"))


def _sub(p, field, d):
    return query(getattr(p, field), d + 1) if p.HasField(field) else None


def _inner_hits(p, d):
    if not p.HasField("inner_hits"):
        return None
    ih = p.inner_hits
    return sdk.InnerHits(sort(ih.sort, d + 1) if ih.HasField("sort") else None,
                         _opt(ih, "offset"), _opt(ih, "limit"),
                         highlight(ih.highlight) if ih.HasField("highlight") else None)


def _nested(p, d):
    return sdk.NestedQuery(p.path, _sub(p, "query", d),
                           sdk.ScoreMode(p.score_mode) if p.HasField("score_mode")
                           else sdk.ScoreMode.NONE, _inner_hits(p, d), _opt(p, "weight"))


def _function_score(p, d):
    return sdk.FunctionScoreQuery(_sub(p, "query", d),
                                  sdk.FieldValueFactor(p.field_value_factor.field_name)
                                  if p.HasField("field_value_factor") else None)


def _knn(p, d):
    return sdk.KnnVectorQuery(p.field_name, _opt(p, "top_k"), list(p.float32_query_vector),
                              _sub(p, "filter", d), _opt(p, "weight"), _opt(p, "min_score"),
                              _opt(p, "num_candidates"))


def _dis_max(p, d):
    return sdk.DisMaxQuery([query(q, d + 1) for q in p.queries], _opt(p, "tie_breaker"),
                           _opt(p, "weight"))


class SuffixQuery(sdk.Query):
    """SUFFIX_QUERY (19, the Java and Go SDKs'): the Python SDK has neither
    the type nor a class; the engine reads a query of this name with a
    ``field_name`` and a ``suffix``."""

    def __init__(self, field_name, suffix, weight=None):
        self.field_name, self.suffix, self.weight = field_name, suffix, weight


SUFFIX_QUERY = 19
_QUERY_NAMES = {SUFFIX_QUERY: "SUFFIX_QUERY",
                searchfunctions.FUNCTIONS_SCORE_QUERY: "FUNCTIONS_SCORE_QUERY"}


def _query_bytes(data, d):
    """A query inside another held as bytes (searchfunctions' messages)."""
    return query(_parse(spb.Query, data, "Query"), d + 1)

#: QueryType -> (the message its bytes hold, its SDK object from (message, depth))
QUERIES = {
    spb.MATCH_QUERY: (spb.MatchQuery, _match),
    spb.MATCH_PHRASE_QUERY: (spb.MatchPhraseQuery, _match_phrase),
    spb.TERM_QUERY: (spb.TermQuery, _term),
    spb.TERMS_QUERY: (spb.TermsQuery, _terms),
    spb.RANGE_QUERY: (spb.RangeQuery, _range),
    spb.PREFIX_QUERY: (spb.PrefixQuery, lambda p, d: sdk.PrefixQuery(p.field_name, p.prefix,
                                                                    _opt(p, "weight"))),
    spb.WILDCARD_QUERY: (spb.WildcardQuery, lambda p, d: sdk.WildcardQuery(p.field_name, p.value,
                                                                          _opt(p, "weight"))),
    # SuffixQuery's fields are PrefixQuery's (1 field_name, 2 the text, 3 weight)
    SUFFIX_QUERY: (spb.PrefixQuery, lambda p, d: SuffixQuery(p.field_name, p.prefix,
                                                             _opt(p, "weight"))),
    spb.BOOL_QUERY: (spb.BoolQuery, _bool),
    spb.CONST_SCORE_QUERY: (spb.ConstScoreQuery,
                            lambda p, d: ConstScoreQuery(_sub(p, "filter", d))),
    spb.FUNCTION_SCORE_QUERY: (spb.FunctionScoreQuery, _function_score),
    searchfunctions.FUNCTIONS_SCORE_QUERY: (
        searchfunctions.FunctionsScoreQuery,
        lambda p, d: searchfunctions.build(p, d, _query_bytes, _parse)),
    spb.NESTED_QUERY: (spb.NestedQuery, _nested),
    spb.MATCH_ALL_QUERY: (spb.MatchAllQuery, lambda p, d: sdk.MatchAllQuery()),
    spb.GEO_BOUNDING_BOX_QUERY: (spb.GeoBoundingBoxQuery, lambda p, d: sdk.GeoBoundingBoxQuery(
        p.field_name, p.top_left, p.bottom_right)),
    spb.GEO_DISTANCE_QUERY: (spb.GeoDistanceQuery, lambda p, d: sdk.GeoDistanceQuery(
        p.field_name, p.center_point, p.distance)),
    spb.GEO_POLYGON_QUERY: (spb.GeoPolygonQuery, lambda p, d: sdk.GeoPolygonQuery(
        p.field_name, list(p.points))),
    spb.EXISTS_QUERY: (spb.ExistsQuery, lambda p, d: sdk.ExistsQuery(p.field_name)),
    spb.KNN_VECTOR_QUERY: (spb.KnnVectorQuery, _knn),
    spb.DIS_MAX_QUERY: (spb.DisMaxQuery, _dis_max),
}


def _query_type(proto):
    """A Query's ``type``, also one the SDK's QueryType enum does not name
    (proto2 keeps such a value among the unknown fields); None when absent."""
    if proto.HasField("type"):
        return proto.type
    return _unknown_varint(proto, 1)


def _unknown_varint(proto, field):
    """A varint ``field`` of ``proto`` read from the message's bytes: one the
    Python SDK's proto does not name, or a value its enum lacks (proto2 keeps
    both among the unknown fields); None when absent."""
    data, pos = proto.SerializeToString(), 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        if tag == field << 3:
            return _read_varint(data, pos)[0]
        if tag & 7 == 0:
            pos = _read_varint(data, pos)[1]
        elif tag & 7 == 2:
            size, pos = _read_varint(data, pos)
            pos += size
        else:
            return None
    return None


def _read_varint(data, pos):
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos
    raise errors.parameter_invalid("Invalid query.")


def query(proto, depth=0):
    """A ``Query`` message (type and bytes) -> the SDK's query object, its sub-queries too."""
    if depth > MAX_QUERY_DEPTH:
        raise errors.parameter_invalid("The query is nested deeper than %d." % MAX_QUERY_DEPTH)
    kind = _query_type(proto)
    if kind is None:
        raise errors.parameter_invalid("A query without its type.")
    known = QUERIES.get(kind)
    if known is None:
        raise errors.parameter_invalid("Unknown query type: %d." % kind)
    message, build = known
    return build(_parse(message, proto.query, _QUERY_NAMES.get(kind) or spb.QueryType.Name(kind)),
                 depth)


def highlight(proto) -> "sdk.Highlight":
    params = [sdk.HighlightParameter(
        p.field_name, _opt(p, "number_of_fragments"), _opt(p, "fragment_size"),
        _opt(p, "pre_tag"), _opt(p, "post_tag"),
        sdk.HighlightFragmentOrder(p.fragments_order)) for p in proto.highlight_parameters]
    return sdk.Highlight(params, sdk.HighlightEncoder(proto.highlight_encoder))


# ------------------------------------------------------------- aggregations

def _value(proto, field, field_name):
    """A bare-variant field of ``proto`` (None when absent)."""
    return _variant(getattr(proto, field), field_name) if proto.HasField(field) else None


def _missing(proto, field="missing"):
    return _value(proto, field, proto.field_name)


def _metric(cls, with_missing=True):
    def build(p, name, depth):
        if with_missing:
            return cls(p.field_name, _missing(p), name=name)
        return cls(p.field_name, name=name)
    return build


def _top_rows(p, name, depth):
    return sagg.TopRows(_opt(p, "limit"), sort(p.sort, depth) if p.HasField("sort") else None,
                        name=name)


def _percentiles(p, name, depth):
    return sagg.Percentiles(p.field_name, list(p.percentiles), _missing(p, "missing_value"),
                            name=name)


AGGREGATIONS = {
    spb.AGG_AVG: (spb.AvgAggregation, _metric(sagg.Avg)),
    spb.AGG_MAX: (spb.MaxAggregation, _metric(sagg.Max)),
    spb.AGG_MIN: (spb.MinAggregation, _metric(sagg.Min)),
    spb.AGG_SUM: (spb.SumAggregation, _metric(sagg.Sum)),
    spb.AGG_COUNT: (spb.CountAggregation, _metric(sagg.Count, with_missing=False)),
    spb.AGG_DISTINCT_COUNT: (spb.DistinctCountAggregation, _metric(sagg.DistinctCount)),
    spb.AGG_TOP_ROWS: (spb.TopRowsAggregation, _top_rows),
    spb.AGG_PERCENTILES: (spb.PercentilesAggregation, _percentiles),
}


def _typed(entries, table, enum, what, depth) -> list:
    """Aggregation or GroupBy messages (name, type, body: the type's own
    message) -> the SDK's objects, each built by ``table[type]``."""
    out = []
    for e in entries:
        known = table.get(e.type) if e.HasField("type") else None
        if known is None:
            raise errors.parameter_invalid("Unknown %s type: %s."
                                           % (what, e.type if e.HasField("type") else None))
        message, build = known
        out.append(build(_parse(message, e.body, enum.Name(e.type)), e.name, depth))
    return out


def aggregations(proto, depth=0) -> list:
    """An ``Aggregations`` message -> [the SDK's Agg objects]."""
    return _typed(proto.aggs, AGGREGATIONS, spb.AggregationType, "aggregation", depth)


def _group_sort(proto):
    """A GroupBySort message -> [GroupKeySort | RowCountSort | SubAggSort], or None."""
    out = []
    for s in proto.sorters:
        if s.HasField("group_key_sort"):
            out.append(sgb.GroupKeySort(_order(s.group_key_sort, sdk.SortOrder.ASC)))
        elif s.HasField("row_count_sort"):
            out.append(sgb.RowCountSort(_order(s.row_count_sort, sdk.SortOrder.DESC)))
        elif s.HasField("sub_agg_sort"):
            out.append(sgb.SubAggSort(_order(s.sub_agg_sort, sdk.SortOrder.ASC),
                                      s.sub_agg_sort.sub_agg_name))
        else:
            raise errors.parameter_invalid("A group-by sorter names no sort.")
    return out or None


def _subs(p, depth):
    return (aggregations(p.sub_aggs, depth) if p.HasField("sub_aggs") else [],
            group_bys(p.sub_group_bys, depth + 1) if p.HasField("sub_group_bys") else [])


def _ranges(p):
    return [(r.begin if r.HasField("begin") else float("-inf"),
             r.end if r.HasField("end") else float("inf")) for r in p.ranges]


def _group_by_field(p, name, depth):
    sub_aggs, sub_groups = _subs(p, depth)
    return sgb.GroupByField(p.field_name, size=_opt(p, "size"),
                            group_by_sort=_group_sort(p.sort) if p.HasField("sort") else None,
                            sub_aggs=sub_aggs, sub_group_bys=sub_groups, name=name)


def _group_by_range(p, name, depth):
    sub_aggs, sub_groups = _subs(p, depth)
    return sgb.GroupByRange(p.field_name, _ranges(p), sub_aggs=sub_aggs,
                            sub_group_bys=sub_groups, name=name)


def _group_by_filter(p, name, depth):
    sub_aggs, sub_groups = _subs(p, depth)
    return sgb.GroupByFilter([query(q, depth + 1) for q in p.filters], sub_aggs=sub_aggs,
                             sub_group_bys=sub_groups, name=name)


def _group_by_geo_distance(p, name, depth):
    sub_aggs, sub_groups = _subs(p, depth)
    origin = sgb.GeoPoint(p.origin.lat, p.origin.lon) if p.HasField("origin") else None
    return sgb.GroupByGeoDistance(p.field_name, origin, _ranges(p), sub_aggs=sub_aggs,
                                  sub_group_bys=sub_groups, name=name)


def _field_range(p):
    """A histogram's FieldRange (bare variants), or None."""
    if not p.HasField("field_range"):
        return None
    r = p.field_range
    return sgb.FieldRange(_value(r, "min", p.field_name), _value(r, "max", p.field_name))


def _group_by_histogram(p, name, depth):
    sub_aggs, sub_groups = _subs(p, depth)
    return sgb.GroupByHistogram(
        p.field_name, _missing(p, "interval"), _field_range(p),
        missing_value=_missing(p, "missing_value"), min_doc_count=_opt(p, "min_doc_count"),
        group_by_sort=_group_sort(p.sort) if p.HasField("sort") else None,
        sub_aggs=sub_aggs, sub_group_bys=sub_groups, name=name)


def _date_time(p):
    return sgb.DateTimeValue(_opt(p, "value"), sdk.DateTimeUnit(p.unit)
                             if p.HasField("unit") else None)


def _group_by_date_histogram(p, name, depth):
    sub_aggs, sub_groups = _subs(p, depth)
    return sgb.GroupByDateHistogram(
        p.field_name, _date_time(p.interval) if p.HasField("interval") else None,
        _field_range(p),
        missing=_missing(p), min_doc_count=_opt(p, "min_doc_count"),
        time_zone=_opt(p, "time_zone"),
        group_by_sort=_group_sort(p.sort) if p.HasField("sort") else None,
        offset=_date_time(p.offset) if p.HasField("offset") else None,
        sub_aggs=sub_aggs, sub_group_bys=sub_groups, name=name)


def _group_by_composite(p, name, depth):
    sub_aggs, sub_groups = _subs(p, depth)
    return sgb.GroupByComposite(
        group_bys(p.sources, depth + 1) if p.HasField("sources") else [], size=_opt(p, "size"),
        next_token=_opt(p, "next_token"), suggested_size=_opt(p, "suggested_size"),
        sub_aggs=sub_aggs, sub_group_bys=sub_groups, name=name)


def _group_by_geo_grid(p, name, depth):
    sub_aggs, sub_groups = _subs(p, depth)
    return sgb.GroupByGeoGrid(p.field_name, _opt(p, "precision"), size=_opt(p, "size"),
                              sub_aggs=sub_aggs, sub_group_bys=sub_groups, name=name)


GROUP_BYS = {
    spb.GROUP_BY_FIELD: (spb.GroupByField, _group_by_field),
    spb.GROUP_BY_RANGE: (spb.GroupByRange, _group_by_range),
    spb.GROUP_BY_FILTER: (spb.GroupByFilter, _group_by_filter),
    spb.GROUP_BY_GEO_DISTANCE: (spb.GroupByGeoDistance, _group_by_geo_distance),
    spb.GROUP_BY_HISTOGRAM: (spb.GroupByHistogram, _group_by_histogram),
    spb.GROUP_BY_DATE_HISTOGRAM: (spb.GroupByDateHistogram, _group_by_date_histogram),
    spb.GROUP_BY_COMPOSITE: (spb.GroupByComposite, _group_by_composite),
    spb.GROUP_BY_GEO_GRID: (spb.GroupByGeoGrid, _group_by_geo_grid),
}


def group_bys(proto, depth=0) -> list:
    """A ``GroupBys`` message -> [the SDK's GroupBy objects], sub-group-bys too."""
    if depth > MAX_QUERY_DEPTH:
        raise errors.parameter_invalid("The group-bys are nested deeper than %d."
                                       % MAX_QUERY_DEPTH)
    return _typed(proto.group_bys, GROUP_BYS, spb.GroupByType, "group-by", depth)


#: SearchQuery's ``track_total_count`` (int32, field 13): the Java SDK's way to
#: ask for the total count (``setGetTotalCount(true)`` sends Integer.MAX_VALUE,
#: false -1; the Python SDK's proto has only ``get_total_count``, field 8).
TRACK_TOTAL_COUNT = 13


def track_total_count(proto):
    """SearchQuery's ``track_total_count`` (signed), None when absent."""
    value = _unknown_varint(proto, TRACK_TOTAL_COUNT)
    return None if value is None else value - (1 << 64) if value >= 1 << 63 else value


def search_query(data: bytes) -> "sdk.SearchQuery":
    """SearchRequest's serialized ``search_query`` -> the SDK's SearchQuery
    (a positive ``track_total_count`` asks for the total count too, counted
    up to it: kept as the query's ``track_total_count``)."""
    proto = _parse(spb.SearchQuery, data, "search_query")
    track = track_total_count(proto)
    result = sdk.SearchQuery(
        query(proto.query) if proto.HasField("query") else None,
        sort=sort(proto.sort) if proto.HasField("sort") else None,
        get_total_count=proto.get_total_count or (track is not None and track > 0),
        next_token=proto.token if proto.HasField("token") and proto.token else None,
        offset=_opt(proto, "offset"), limit=_opt(proto, "limit"),
        collapse_field=sdk.Collapse(proto.collapse.field_name)
        if proto.HasField("collapse") else None,
        aggs=aggregations(proto.aggs) if proto.HasField("aggs") else None,
        group_bys=group_bys(proto.group_bys) if proto.HasField("group_bys") else None,
        highlight=highlight(proto.highlight) if proto.HasField("highlight") else None)
    result.track_total_count = track if track is not None and track > 0 else None
    return result


def scan_query(data: bytes) -> "sdk.ScanQuery":
    """ParallelScanRequest's serialized ``scan_query`` -> the SDK's ScanQuery
    (an absent limit stays None: the engine words the error; absent parallel
    numbers are one stream, 0 of 1, as the service takes them: the Go SDK's
    single-threaded scan sends neither)."""
    proto = _parse(spb.ScanQuery, data, "scan_query")
    return sdk.ScanQuery(query(proto.query) if proto.HasField("query") else None,
                         _opt(proto, "limit"),
                         proto.token if proto.HasField("token") and proto.token else None,
                         _opt(proto, "current_parallel_id", 0), _opt(proto, "max_parallel", 1),
                         _opt(proto, "alive_time", 60))


def session_id(request):
    """ParallelScanRequest's ``session_id`` as the SDK's client gives it: a str."""
    if not request.HasField("session_id"):
        return None
    try:
        return request.session_id.decode("utf-8")
    except UnicodeDecodeError:
        raise errors.parameter_invalid("Invalid session_id.") from None


def columns_to_get(request):
    """SearchRequest's ``columns_to_get`` -> ColumnsToGet, None when absent."""
    if not request.HasField("columns_to_get"):
        return None
    ctg = request.columns_to_get
    kind = _enum(sdk.ColumnReturnType, ctg.return_type) if ctg.HasField("return_type") \
        else sdk.ColumnReturnType.NONE
    return sdk.ColumnsToGet(list(ctg.column_names), kind)


def routing_keys(request):
    """SearchRequest's ``routing_values`` (PlainBuffer primary keys) -> [[(name, value)]]."""
    keys = []
    for data in request.routing_values:
        try:
            keys.append(list(CODEC.decode_row(data).primary_key))
        except PlainBufferError:
            raise errors.parameter_invalid("Invalid routing value.") from None
    return keys or None


def timeout_s(request):
    return request.timeout_ms / 1000.0 if request.HasField("timeout_ms") else None


# ------------------------------------------------------------- responses

_FIELD_TYPE_TEXT = int(sdk.FieldType.TEXT)


def _enum_number(value):
    return int(getattr(value, "value", value))


def fill_field_schema(proto, field) -> None:
    """``proto`` (a FieldSchema message) from the SDK's FieldSchema; the flags
    always set (the SDK's decoder reads an absent ``index`` as false), a TEXT
    field's analyzer named (single_word when none was given: the service's
    default)."""
    proto.field_name = field.field_name
    proto.field_type = _enum_number(field.field_type)
    nested = proto.field_type == spb.NESTED
    if not nested:
        proto.index = True if field.index is None else bool(field.index)
        proto.store = True if field.store is None else bool(field.store)
        proto.is_array = bool(field.is_array)
        proto.enable_sort_and_agg = bool(field.enable_sort_and_agg)
    if field.enable_highlighting is not None:
        proto.enable_highlighting = bool(field.enable_highlighting)
    analyzer = field.analyzer
    if analyzer is None and proto.field_type == _FIELD_TYPE_TEXT:
        analyzer = sdk.AnalyzerType.SINGLEWORD
    if analyzer is not None:
        proto.analyzer = analyzer
        parameter = getattr(field, "analyzer_parameter", None)
        if parameter is not None:
            proto.analyzer_parameter = _analyzer_parameter_bytes(analyzer, parameter)
    for sub in getattr(field, "sub_field_schemas", None) or ():
        fill_field_schema(proto.field_schemas.add(), sub)
    proto.date_formats.extend(field.date_formats or ())
    if getattr(field, "is_virtual_field", False):
        proto.is_virtual_field = True
        proto.source_field_names.extend(field.source_fields or ())
    opts = field.vector_options
    if opts is not None:
        if opts.data_type is not None:
            proto.vector_options.data_type = _enum_number(opts.data_type)
        if opts.metric_type is not None:
            proto.vector_options.metric_type = _enum_number(opts.metric_type)
        if opts.dimension is not None:
            proto.vector_options.dimension = opts.dimension
    if getattr(field, "json_type", None) is not None:
        proto.json_type = _enum_number(field.json_type)
    if getattr(field, "text_similarity", None) is not None:
        proto.text_similarity = _enum_number(field.text_similarity)


def _analyzer_parameter_bytes(analyzer, parameter) -> bytes:
    """The serialized parameter message of ``analyzer`` from the SDK's object
    or a dict of its fields (the engine keeps them as a dict); b"" for none."""
    get = parameter.get if isinstance(parameter, dict) else (
        lambda name, default=None: getattr(parameter, name, default))
    if analyzer == sdk.AnalyzerType.SINGLEWORD:
        msg = spb.SingleWordAnalyzerParameter(case_sensitive=bool(get("case_sensitive", False)),
                                              delimit_word=bool(get("delimit_word", False)))
    elif analyzer == sdk.AnalyzerType.SPLIT:
        msg = spb.SplitAnalyzerParameter(delimiter=get("delimiter", " ") or " ")
    elif analyzer == sdk.AnalyzerType.FUZZY:
        msg = spb.FuzzyAnalyzerParameter(min_chars=get("min_chars", 1) or 1,
                                         max_chars=get("max_chars", 7) or 7)
    else:
        return b""
    return msg.SerializeToString()


def fill_sorter(proto, s) -> None:
    kind = type(s).__name__
    order = getattr(s, "sort_order", None)
    if kind == "FieldSort":
        proto.field_sort.field_name = s.field_name
        if order is not None:
            proto.field_sort.order = _enum_number(order)
        if s.sort_mode is not None:
            proto.field_sort.mode = _enum_number(s.sort_mode)
    elif kind == "GeoDistanceSort":
        proto.geo_distance_sort.field_name = s.field_name
        proto.geo_distance_sort.points.extend(s.points)
        if order is not None:
            proto.geo_distance_sort.order = _enum_number(order)
    elif kind == "ScoreSort":
        proto.score_sort.order = _enum_number(sdk.SortOrder.DESC if order is None else order)
    elif kind == "DocSort":
        proto.doc_sort.order = _enum_number(sdk.SortOrder.ASC if order is None else order)
    else:
        proto.pk_sort.order = _enum_number(sdk.SortOrder.ASC if order is None else order)


def fill_index_schema(proto, meta) -> None:
    """``proto`` (an IndexSchema) from the SDK's SearchIndexMeta.  An index
    without an index sort is described with the service's default, the
    primary key ascending (none when it has a NESTED field: the service
    cannot pre-sort those); an absent index setting, with no routing fields."""
    for field in meta.fields or ():
        fill_field_schema(proto.field_schemas.add(), field)
    setting = proto.index_setting
    setting.number_of_shards = 1
    setting.routing_fields.extend(getattr(meta.index_setting, "routing_fields", None) or ())
    sorters = getattr(meta.index_sort, "sorters", None)
    if sorters is None and not any(_enum_number(f.field_type) == spb.NESTED
                                   for f in meta.fields or ()):
        sorters = [sdk.PrimaryKeySort(sdk.SortOrder.ASC)]
    proto.index_sort.SetInParent()
    for s in sorters or ():
        fill_sorter(proto.index_sort.sorter.add(), s)


#: the SDK's SyncPhase (FULL 0, INCR 1) -> search.proto's (FULL 1, INCR 2)
SYNC_PHASES = {int(sdk.SyncPhase.FULL): spb.FULL, int(sdk.SyncPhase.INCR): spb.INCR}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def fill_metering_info(proto, metering) -> None:
    """``proto`` (a DescribeSearchIndexResponse) gains ``metering_info``
    (field 3: storage_size, row_count, reserved_read_cu, timestamp), which
    the Java and Go SDKs read and the Python SDK's search.proto lacks: its
    bytes are merged in as a field that message does not name (protobuf
    keeps and sends it)."""
    body = b"".join(_varint(tag) + _varint(max(0, int(value))) for tag, value in (
        (0x08, metering["storage_size"]), (0x10, metering["row_count"]), (0x18, 0),
        (0x20, metering["timestamp"])))
    proto.MergeFromString(_varint(0x1A) + _varint(len(body)) + body)


def in_incr(stat) -> bool:
    """Whether the SDK's SyncStat says phase INCR."""
    return _enum_number(stat.sync_phase) == int(sdk.SyncPhase.INCR)


def fill_sync_stat(proto, stat, current_sync_timestamp=None) -> None:
    """``proto`` (a SyncStat) from the SDK's SyncStat; ``current_sync_timestamp``
    (ns) replaces the stat's when given."""
    proto.sync_phase = SYNC_PHASES[_enum_number(stat.sync_phase)]
    ts = stat.current_sync_timestamp if current_sync_timestamp is None else current_sync_timestamp
    proto.current_sync_timestamp = int(ts or 0)


def encode_rows(repeated, rows) -> None:
    """Append each (primary key, attribute columns) of ``rows`` to ``repeated`` in PlainBuffer."""
    try:
        for pk, columns in rows:
            repeated.append(CODEC.encode_row(pk or (), columns or ()))
    except PlainBufferError as e:
        raise errors.parameter_invalid(str(e)) from None


def _bytes(token) -> bytes:
    if not token:
        return b""
    return token.encode("ascii") if isinstance(token, str) else bytes(token)


def fill_compute_splits(proto, result) -> None:
    proto.session_id = _bytes(result.session_id)
    proto.splits_size = int(result.splits_size)


def fill_parallel_scan(proto, result) -> None:
    """``proto`` (a ParallelScanResponse): the rows in PlainBuffer, the next
    token (b"" once the stream is done, always sent)."""
    encode_rows(proto.rows, result.rows)
    proto.next_token = _bytes(result.next_token)


def fill_hit(proto, hit) -> None:
    """``proto`` (a SearchHit) from the SDK's SearchHit: its score, highlight
    result (each field's fragments), inner hits of nested queries (each a
    path and its hits, recursively) and nested document offset."""
    if hit is None:
        return
    if getattr(hit, "score", None) is not None:
        proto.score = float(hit.score)
    result = getattr(hit, "highlight_result", None)
    if result is not None:
        proto.highlight_result.SetInParent()
        for field in getattr(result, "highlight_fields", None) or ():
            proto.highlight_result.highlight_fields.add(
                field_name=field.field_name, field_fragments=list(field.field_fragments or ()))
    for inner in getattr(hit, "search_inner_hits", None) or ():
        out = proto.search_inner_hits.add(path=inner.path)
        for sub in inner.search_hits or ():
            fill_hit(out.search_hits.add(), sub)
    if getattr(hit, "nested_doc_offset", None) is not None:
        proto.nested_doc_offset = int(hit.nested_doc_offset)


_METRIC_RESULTS = {spb.AGG_AVG: spb.AvgAggregationResult, spb.AGG_MAX: spb.MaxAggregationResult,
                   spb.AGG_MIN: spb.MinAggregationResult, spb.AGG_SUM: spb.SumAggregationResult,
                   spb.AGG_COUNT: spb.CountAggregationResult,
                   spb.AGG_DISTINCT_COUNT: spb.DistinctCountAggregationResult}


def _variant_bytes(value) -> bytes:
    try:
        return CODEC.encode_variant(value)
    except PlainBufferError as e:
        raise errors.parameter_invalid(str(e)) from None


def fill_aggregations(proto, aggs, results) -> None:
    """``proto`` (an AggregationsResult) from the results of ``aggs`` (the request's, in order)."""
    for a, r in zip(aggs, results):
        item = proto.agg_results.add(name=r.name, type=a.type)
        if a.type in _METRIC_RESULTS:
            body = _METRIC_RESULTS[a.type](value=r.value)
        elif a.type == spb.AGG_TOP_ROWS:
            body = spb.TopRowsAggregationResult()
            encode_rows(body.rows, r.value)
        else:
            body = spb.PercentilesAggregationResult()
            for p in r.value:
                body.percentiles_aggregation_items.add(
                    key=p.key, **({} if p.value is None else {"value": _variant_bytes(p.value)}))
        item.agg_result = body.SerializeToString()


def _fill_item_subs(item, g, result_item) -> None:
    fill_aggregations(item.sub_aggs_result, list(g.sub_aggs or ()), result_item.sub_aggs)
    fill_group_bys(item.sub_group_bys_result, list(g.sub_group_bys or ()),
                   result_item.sub_group_bys)


def fill_group_bys(proto, groups, results) -> None:
    """``proto`` (a GroupBysResult) from the results of ``groups`` (the request's, in order)."""
    for g, r in zip(groups, results):
        entry = proto.group_by_results.add(name=r.name, type=g.type)
        if g.type == spb.GROUP_BY_FIELD:
            body = spb.GroupByFieldResult()
            for it in r.items:
                _fill_item_subs(body.group_by_field_result_items.add(
                    key=it.key, row_count=it.row_count), g, it)
        elif g.type in (spb.GROUP_BY_RANGE, spb.GROUP_BY_GEO_DISTANCE):
            body = (spb.GroupByRangeResult() if g.type == spb.GROUP_BY_RANGE
                    else spb.GroupByGeoDistanceResult())
            items = (body.group_by_range_result_items if g.type == spb.GROUP_BY_RANGE
                     else body.group_by_geo_distance_result_items)
            for it in r.items:
                _fill_item_subs(items.add(range_from=it.range_from, range_to=it.range_to,
                                          row_count=it.row_count), g, it)
        elif g.type == spb.GROUP_BY_FILTER:
            body = spb.GroupByFilterResult()
            for it in r.items:
                _fill_item_subs(body.group_by_filter_result_items.add(row_count=it.row_count),
                                g, it)
        elif g.type == spb.GROUP_BY_GEO_GRID:
            body = spb.GroupByGeoGridResult()
            for it in r.items:
                item = body.group_by_geo_grid_result_items.add(key=it.key, row_count=it.row_count)
                for corner, point in (("top_left", it.geo_grid.top_left),
                                      ("bottom_right", it.geo_grid.bottom_right)):
                    getattr(item.geo_grid, corner).lat = point.lat
                    getattr(item.geo_grid, corner).lon = point.lon
                _fill_item_subs(item, g, it)
        elif g.type == spb.GROUP_BY_COMPOSITE:
            body = spb.GroupByCompositeResult()
            body.source_group_by_names.extend(r.source_group_by_names or ())
            if r.next_token:
                body.next_token = r.next_token
            for it in r.items:
                item = body.group_by_composite_result_items.add(row_count=it.row_count)
                item.keys.extend("" if k is None else k for k in it.keys)
                item.is_null_keys.extend(k is None for k in it.keys)
                _fill_item_subs(item, g, it)
        elif g.type == spb.GROUP_BY_DATE_HISTOGRAM:
            body = spb.GroupByDateHistogramResult()
            for it in r.items:
                _fill_item_subs(body.group_by_date_histogram_items.add(
                    timestamp=it.timestamp, row_count=it.row_count), g, it)
        else:
            body = spb.GroupByHistogramResult()
            for it in r.items:
                _fill_item_subs(body.group_by_histogra_items.add(
                    key=_variant_bytes(it.key), value=it.value), g, it)
        entry.group_by_result = body.SerializeToString()


def fill_search_response(proto, result, search_query=None) -> None:
    """``proto`` (a SearchResponse) from the embedded client's SearchResponse:
    each row in PlainBuffer with its hit (score), the total count (-1 when
    not asked), is_all_succeed and the next token as bytes; the results of
    ``search_query``'s aggregations and group-bys."""
    hits = list(getattr(result, "search_hits", None) or ())
    encode_rows(proto.rows, result.rows)
    for i in range(len(result.rows)):
        fill_hit(proto.search_hits.add(), hits[i] if i < len(hits) else None)
    proto.total_hits = -1 if result.total_count is None else int(result.total_count)
    track = getattr(search_query, "track_total_count", None)
    if track is not None and proto.total_hits > track:
        proto.total_hits = track        # counted up to track_total_count
    proto.is_all_succeed = bool(result.is_all_succeed)
    if result.next_token:
        proto.next_token = _bytes(result.next_token)
    if search_query is not None and getattr(search_query, "aggs", None):
        aggs = spb.AggregationsResult()
        fill_aggregations(aggs, search_query.aggs, result.agg_results)
        proto.aggs = aggs.SerializeToString()
    if search_query is not None and getattr(search_query, "group_bys", None):
        groups = spb.GroupBysResult()
        fill_group_bys(groups, search_query.group_bys, result.group_by_results)
        proto.group_bys = groups.SerializeToString()
