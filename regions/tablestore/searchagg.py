"""Aggregations and group-bys of a search (``SearchQuery(aggs=..., group_bys=...)``),
computed by tantivy's aggregations over the index's fast (columnar) fields.

A request is evaluated scope by scope.  A scope is a tantivy query: the
search's own, and for what is asked inside a group, the group's condition
added to it.  In each scope one tantivy aggregation request carries the
metrics tantivy computes as the service does (max, min, sum, avg, count,
distinct_count); each group-by is one more request, its buckets (field
values, ranges, histogram intervals) with those metrics nested inside.
What tantivy has no aggregation for is computed through queries: a
GroupByFilter's or GroupByGeoDistance's groups are the scope with the
filter (or the distance ring) added; percentiles are exact, from the
scope's sorted values (tantivy's value counts); top_rows are the scope's
first rows in the requested order.  Sub-aggregations and sub-group-bys a
bucket cannot carry natively are evaluated in the bucket's own scope.

Values follow the service: metrics on LONG, DOUBLE and DATE fields as
doubles, counts as integers, an array field counts each of its values,
a NESTED field's sub-fields count each object's value (the index stores
them flattened), ``missing`` stands for the rows without a value.  The
request objects and the results are the SDK's (``tablestore.aggregation``,
``tablestore.group_by``), read by class name and attribute.
"""
import bisect
import math
import re

from .errors import service_error
from .search import _nothing, aggregate

MAX_AGGS = 5                 # aggregations in one request, or in one group
MAX_GROUP_BYS = 5            # group-bys in one request, or in one group
MAX_DEPTH = 3                # group-bys inside group-bys (the outermost is 1)
MAX_GROUP_SIZE = 2000        # GroupByField's size
DEFAULT_GROUP_SIZE = 10
MAX_TOP_ROWS = 100           # TopRows' limit
DEFAULT_TOP_ROWS = 1
MAX_RANGES = {"GroupByRange": 100, "GroupByGeoDistance": 10, "GroupByFilter": 10}
MAX_BUCKETS = 2000           # groups a histogram may make
EXACT_VALUES = 100_000       # distinct values percentiles are exact below (tantivy's sketch above)

_NUMERIC = ("LONG", "DOUBLE")
_ORDERED = ("LONG", "DOUBLE", "DATE")
_GROUPABLE = ("LONG", "DOUBLE", "BOOLEAN", "KEYWORD", "DATE")
_COUNTABLE = ("LONG", "DOUBLE", "BOOLEAN", "KEYWORD", "DATE", "GEO_POINT")
_TANTIVY_METRIC = {"Max": "max", "Min": "min", "Sum": "sum", "Avg": "avg"}
# what each aggregation accepts, and its name in the service's messages
_AGG_FIELDS = {"Max": (_ORDERED, "max agg"), "Min": (_ORDERED, "min agg"),
               "Sum": (_NUMERIC, "sum agg"), "Avg": (_NUMERIC, "avg agg"),
               "Count": (_COUNTABLE, "count agg"),
               "DistinctCount": (_COUNTABLE, "distinct count agg"),
               "Percentiles": (_ORDERED, "percentiles agg")}


def _sdk():
    from regions.extras import require
    return require("tablestore", "Search indexes")


def _kind(obj):
    return type(obj).__name__


def _order_desc(sort_order):
    """The SDK's SortOrder (or its number, or a name) -> descending?"""
    name = getattr(sort_order, "name", sort_order)
    if isinstance(name, str):
        return name.upper() == "DESC"
    return int(sort_order or 0) == 1


class Aggregator:
    """The aggregations of one search, over ``engine`` (search.Engine) as it
    is now; ``rows_of([row_key]) -> [row]`` makes top_rows' rows."""

    def __init__(self, engine, rows_of, sort=None):
        self.engine, self.rows_of = engine, rows_of
        self.sort = sort            # the search's: top_rows' order when they give none
        self.tv = engine._tv
        self.searcher = engine.index.searcher()
        self.sdk = _sdk()

    # -- the request ------------------------------------------------------------
    def run(self, scope, aggs, group_bys, depth=0):
        """([AggResult], [GroupByResult]) of ``aggs`` and ``group_bys`` in ``scope``."""
        aggs, group_bys = list(aggs or ()), list(group_bys or ())
        self.check(aggs, group_bys, depth)
        specs = {"a%d" % i: s for i, s in enumerate(self._metric(a) for a in aggs) if s}
        raw = self._aggregate(scope, specs)
        return (self._agg_results(lambda: scope, aggs, raw),
                [self._group_by(scope, g, depth + 1) for g in group_bys])

    def check(self, aggs, group_bys, depth):
        """Refuse what the service refuses, before anything is computed."""
        if len(aggs) > MAX_AGGS:
            raise service_error("search_agg_count", count=len(aggs), max=MAX_AGGS)
        if len(group_bys) > MAX_GROUP_BYS:
            raise service_error("search_group_by_count", count=len(group_bys),
                                max=MAX_GROUP_BYS)
        if group_bys and depth >= MAX_DEPTH:
            raise service_error("search_group_by_depth", max=MAX_DEPTH)
        names = [getattr(x, "name", None) for x in aggs + group_bys]
        seen = set()
        for name in names:
            if not isinstance(name, str) or not name:
                raise service_error("search_agg_name", name=name)
            if name in seen:
                raise service_error("search_agg_name_duplicated", name=name)
            seen.add(name)
        for a in aggs:
            self._check_agg(a)
        for g in group_bys:
            self._check_group_by(g, depth + 1)

    def _check_agg(self, a):
        kind = _kind(a)
        if kind in _AGG_FIELDS:
            allowed, what = _AGG_FIELDS[kind]
            if a.field not in {f.name for f in self.engine.definition.fields}:
                raise service_error("search_agg_field_not_exist", agg=what, field=a.field)
            f = self.engine.definition.field(a.field)
            if f.type not in allowed:
                raise service_error("search_agg_field_type", agg=what, field=f.name,
                                    type=f.type.lower(),
                                    allowed=", ".join(t.lower() for t in allowed))
            if kind == "Percentiles":
                points = getattr(a, "percentiles_list", None)
                if not points or not all(isinstance(p, (int, float)) and not isinstance(p, bool)
                                         and 0 <= p <= 100 for p in points):
                    raise service_error("search_percentiles", percentiles=points)
        elif kind == "TopRows":
            limit = a.limit if a.limit is not None else DEFAULT_TOP_ROWS
            if not isinstance(limit, int) or not 0 < limit <= MAX_TOP_ROWS:
                raise service_error("search_top_rows_limit", limit=limit, max=MAX_TOP_ROWS)
            self.engine._sort_keys(a.sort)     # refuses a sorter it can't use
        else:
            raise service_error("search_agg_unsupported", agg=kind)

    def _check_group_by(self, g, depth):
        kind = _kind(g)
        if kind == "GroupByField":
            self._field(g.field_name, _GROUPABLE, kind)
            size = g.size if g.size is not None else DEFAULT_GROUP_SIZE
            if not isinstance(size, int) or not 0 < size <= MAX_GROUP_SIZE:
                raise service_error("search_group_size", size=size, max=MAX_GROUP_SIZE)
            self._group_sorters(g)
        elif kind in ("GroupByRange", "GroupByGeoDistance"):
            self._field(g.field_name, ("GEO_POINT",) if kind == "GroupByGeoDistance"
                        else ("LONG", "DOUBLE", "DATE"), kind)
            ranges = list(g.ranges or ())
            if not ranges or len(ranges) > MAX_RANGES[kind]:
                raise service_error("search_group_ranges", group_by=kind, max=MAX_RANGES[kind])
            for r in ranges:
                self._range(r)
            if kind == "GroupByGeoDistance":
                origin = getattr(g, "origin", None)
                if origin is None or not all(isinstance(getattr(origin, c, None), (int, float))
                                             for c in ("lat", "lon")):
                    raise service_error("search_geo_origin")
        elif kind == "GroupByFilter":
            filters = list(g.filters or ())
            if not filters or len(filters) > MAX_RANGES[kind]:
                raise service_error("search_group_ranges", group_by=kind, max=MAX_RANGES[kind])
            for q in filters:
                self.engine._inner(q)
        elif kind == "GroupByComposite":
            sources = list(getattr(g, "sources", None) or ())
            if not sources or len(sources) > MAX_GROUP_BYS:
                raise service_error("search_composite_sources", max=MAX_GROUP_BYS)
            for src in sources:
                if _kind(src) not in _COMPOSITE_SOURCES or src.sub_aggs or src.sub_group_bys:
                    raise service_error("search_composite_sources", max=MAX_GROUP_BYS)
                self._check_group_by(src, depth)
            for size in (g.size, getattr(g, "suggested_size", None)):
                if size is not None and (not isinstance(size, int) or size <= 0):
                    raise service_error("search_group_size", size=size, max=MAX_GROUP_SIZE)
            if g.size is not None and g.size > MAX_GROUP_SIZE:
                raise service_error("search_group_size", size=g.size, max=MAX_GROUP_SIZE)
            _after_keys(getattr(g, "next_token", None), len(sources))
        elif kind == "GroupByGeoGrid":
            self._field(g.field_name, ("GEO_POINT",), kind)
            if _precision(getattr(g, "precision", None)) is None:
                raise service_error("search_geo_precision", precision=g.precision)
            size = g.size if g.size is not None else MAX_GEO_CELLS
            if not isinstance(size, int) or not 0 < size <= MAX_GEO_CELLS:
                raise service_error("search_group_size", size=size, max=MAX_GEO_CELLS)
        elif kind == "GroupByDateHistogram":
            f = self._field(g.field_name, ("DATE",), kind)
            self._date_buckets(f, g)           # refuses a bad interval, range or zone
            self._group_sorters(g)
        elif kind == "GroupByHistogram":
            f = self._field(g.field_name, ("LONG", "DOUBLE", "DATE"), kind)
            interval = self._number(f, g.interval, "interval")
            if interval <= 0:
                raise service_error("search_histogram_interval", interval=g.interval)
            bounds = getattr(g, "field_range", None)
            if bounds is None or bounds.min is None or bounds.max is None:
                raise service_error("search_histogram_range")
            lo, hi = self._number(f, bounds.min, "min"), self._number(f, bounds.max, "max")
            if lo > hi:
                raise service_error("search_histogram_range")
            if (hi - lo) / interval > MAX_BUCKETS:
                raise service_error("search_histogram_buckets", max=MAX_BUCKETS)
            self._group_sorters(g)
        else:
            raise service_error("search_group_by_unsupported", group_by=kind)
        sub_aggs, sub_groups = list(g.sub_aggs or ()), list(g.sub_group_bys or ())
        self.check(sub_aggs, sub_groups, depth)

    # -- fields -----------------------------------------------------------------
    def _field(self, name, allowed, kind):
        f = self.engine.definition.field(name)
        if f.type not in allowed:
            raise service_error("search_agg_field_type", agg=kind, field=f.name,
                                type=f.type.lower(),
                                allowed=", ".join(t.lower() for t in allowed))
        return f

    def _fast(self, f):
        """The tantivy fast field holding ``f``'s values."""
        return self.engine._names[f.name]

    def _number(self, f, value, what):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise service_error("search_agg_value", what=what, field=f.name, type=f.type)
        return int(value) if f.type in ("LONG", "DATE") and float(value).is_integer() \
            else float(value)

    def _missing(self, f, a):
        value = getattr(a, "missing", None)
        if value is None:
            value = getattr(a, "missing_value", None)
        if value is None:
            return None
        if f.type == "KEYWORD":
            if not isinstance(value, str):
                raise service_error("search_agg_value", what="missing", field=f.name,
                                    type=f.type)
            return value
        if f.type == "BOOLEAN":
            if not isinstance(value, bool):
                raise service_error("search_agg_value", what="missing", field=f.name,
                                    type=f.type)
            return value
        return self._number(f, value, "missing")

    @staticmethod
    def _range(r):
        if not (isinstance(r, tuple) and len(r) == 2) and not hasattr(r, "begin"):
            raise service_error("search_group_range", range=r)
        lo, hi = (r if isinstance(r, tuple) else (r.begin, r.end))
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
                raise service_error("search_group_range", range=r)
        if lo > hi:
            raise service_error("search_group_range", range=r)
        return float(lo), float(hi)

    # -- metrics ----------------------------------------------------------------
    def _metric(self, a):
        """The tantivy aggregation of ``a`` if tantivy computes it; else None."""
        kind = _kind(a)
        if kind in _TANTIVY_METRIC:
            f = self.engine.definition.field(a.field)
            body = {"field": self._fast(f)}
            missing = self._missing(f, a)
            if missing is not None:
                body["missing"] = missing
            return {_TANTIVY_METRIC[kind]: body}
        if kind == "Count":
            f = self.engine.definition.field(a.field)
            return {"value_count": {"field": self._fast(f)}}
        if kind == "DistinctCount":
            f = self.engine.definition.field(a.field)
            body = {"field": self._fast(f)}
            missing = self._missing(f, a)
            if missing is not None:
                body["missing"] = int(missing) if f.type == "BOOLEAN" else missing
            return {"cardinality": body}
        return None

    def _aggregate(self, scope, specs):
        if not specs:
            return {}
        return aggregate(self.searcher, scope, specs)

    def _agg_results(self, scope_of, aggs, raw):
        """The SDK's AggResults of ``aggs``: the native ones from ``raw``
        (their tantivy results, keyed a<i>), the others computed in the
        scope ``scope_of()`` gives (made only if one needs it)."""
        sdk, out, scope = self.sdk, [], None
        for i, a in enumerate(aggs):
            kind = _kind(a)
            if kind in _TANTIVY_METRIC:
                value = raw["a%d" % i]["value"]
                if value is None:
                    value = _empty_metric(kind)
                elif kind in ("Sum", "Avg") and \
                        self.engine.definition.field(a.field).type == "DOUBLE":
                    value = float("%.15g" % value)   # the engine's summing order's last bits
                out.append(sdk.AggResult(a.name, float(value)))
            elif kind in ("Count", "DistinctCount"):
                found = raw.get("a%d" % i)
                if found is None:                 # not nested: counted in its own scope
                    scope = scope if scope is not None else scope_of()
                    found = self._aggregate(scope, {"a": self._metric(a)})["a"]
                out.append(sdk.AggResult(a.name, int(found["value"] or 0)))
            else:
                scope = scope if scope is not None else scope_of()
                if kind == "Percentiles":
                    out.append(sdk.AggResult(a.name, self._percentiles(scope, a)))
                else:
                    keys = self.engine.top_keys(self.searcher, scope, a.sort or self.sort,
                                                a.limit if a.limit is not None
                                                else DEFAULT_TOP_ROWS)
                    out.append(sdk.AggResult(a.name, self.rows_of(keys)))
        return out

    def _percentiles(self, scope, a):
        """[PercentilesResultItem(percentile, value)] by percentile: exact, the
        value at position p/100 * (n - 1) of the n sorted values, interpolated
        between neighbours (what the service answers on the data its SDKs'
        tests hold), in the field's type (a LONG or DATE truncated to an
        integer); none when no row has a value."""
        f = self.engine.definition.field(a.field)
        body = {"field": self._fast(f), "size": EXACT_VALUES, "segment_size": EXACT_VALUES,
                "order": {"_key": "asc"}}
        missing = self._missing(f, a)
        if missing is not None:
            body["missing"] = missing
        raw = aggregate(self.searcher, scope, {"v": {"terms": body}})["v"]
        points = sorted(a.percentiles_list)
        if raw.get("sum_other_doc_count"):         # too many distinct values: the sketch
            body = {"field": body["field"], "percents": [float(p) for p in points]}
            if missing is not None:
                body["missing"] = missing
            sketch = aggregate(self.searcher, scope, {"v": {"percentiles": body}})["v"]["values"]
            values = [sketch.get(str(float(p))) for p in points]
        else:
            keys = [b["key"] for b in raw["buckets"]]
            ends, n = [], 0
            for b in raw["buckets"]:
                n += b["doc_count"]
                ends.append(n)
            values = [_rank_value(keys, ends, n, p) for p in points]
        integral = f.type in ("LONG", "DATE")
        return [self.sdk.PercentilesResultItem(float(p), int(v) if integral else float(v))
                for p, v in zip(points, values) if v is not None]

    # -- group-bys --------------------------------------------------------------
    def _group_by(self, scope, g, depth):
        kind = _kind(g)
        if kind == "GroupByComposite":
            items, token = self._GroupByComposite(scope, g, depth)
            return self.sdk.GroupByResult(g.name, items, [s.name for s in g.sources], token)
        items = getattr(self, "_" + kind)(scope, g, depth)
        return self.sdk.GroupByResult(g.name, items)

    def _native_subs(self, g):
        """The tantivy metrics of ``g``'s sub-aggregations (nested in its
        buckets); a value_count of a string column is left to each bucket's
        own scope (tantivy panics on it inside a bucket)."""
        return {"a%d" % i: s for i, s in enumerate(self._metric(a) for a in g.sub_aggs or ())
                if s and not ("value_count" in s and self._string_column(s["value_count"]))}

    def _string_column(self, body):
        f = next(f for f in self.engine.definition.fields
                 if self.engine._names[f.name] == body["field"])
        return f.type in ("KEYWORD", "GEO_POINT")

    def _subs(self, g, bucket, scope_of, depth):
        """(sub agg results, sub group-by results) of one of ``g``'s groups."""
        sub_groups = list(g.sub_group_bys or ())
        cache = []

        def scope():
            if not cache:
                cache.append(scope_of())
            return cache[0]

        aggs = self._agg_results(scope, list(g.sub_aggs or ()), bucket)
        groups = [self._group_by(scope(), s, depth + 1) for s in sub_groups]
        return aggs, groups

    def _and(self, scope, query):
        tv = self.tv
        return tv.Query.boolean_query([(tv.Occur.Must, scope), (tv.Occur.Must, query)])

    def _count(self, scope):
        return self.searcher.search(scope, limit=1, count=True).count

    def _GroupByField(self, scope, g, depth):
        f = self.engine.definition.field(g.field_name)
        size = g.size if g.size is not None else DEFAULT_GROUP_SIZE
        sorters = self._group_sorters(g) or [("count", True, None)]
        subs = self._native_subs(g)
        primary = sorters[0]
        fetch = size + 1
        while True:
            body = {"field": self._fast(f), "size": fetch,
                    "segment_size": max(fetch * 10, 10_000),
                    "order": {_tantivy_order(primary, g): "desc" if primary[1] else "asc"}}
            spec = {"terms": body}
            if subs:
                spec["aggs"] = subs
            buckets = self._aggregate(scope, {"g": spec})["g"]["buckets"]
            if len(buckets) < fetch or fetch >= EXACT_VALUES:
                break
            # ties at the cut: fetch more, so that the ties are broken by key
            last, after = (_bucket_sort_key(buckets[size - 1], primary, f),
                           _bucket_sort_key(buckets[size], primary, f))
            if last != after:
                break
            fetch = min(fetch * 4, EXACT_VALUES)
        buckets = _sorted_buckets(buckets, sorters, f)[:size]
        items = []
        for b in buckets:
            value = _bucket_value(f, b)
            aggs, groups = self._subs(g, b, lambda v=value: self._and(
                scope, self.engine._term(f, self.engine._names[f.name], v)), depth)
            items.append(self.sdk.GroupByFieldResultItem(_group_key(f, b), b["doc_count"],
                                                         aggs, groups))
        return items

    def _GroupByRange(self, scope, g, depth):
        f = self.engine.definition.field(g.field_name)
        subs = self._native_subs(g)
        specs = {}
        ranges = [self._range(r) for r in g.ranges]
        for i, (lo, hi) in enumerate(ranges):
            bounds = {}
            if lo != -math.inf:
                bounds["from"] = lo
            if hi != math.inf:
                bounds["to"] = hi
            spec = {"range": {"field": self._fast(f), "ranges": [bounds]}}
            if subs:
                spec["aggs"] = subs
            specs["r%d" % i] = spec
        raw = self._aggregate(scope, specs)
        items = []
        for i, (lo, hi) in sorted(enumerate(ranges), key=lambda r: r[1]):   # by from
            bucket = next((b for b in raw["r%d" % i]["buckets"]
                           if b.get("from", -math.inf) == lo and b.get("to", math.inf) == hi),
                          {"doc_count": 0})
            aggs, groups = self._subs(g, bucket, lambda lo=lo, hi=hi: self._and(
                scope, self._range_query(f, lo, hi)), depth)
            items.append(self.sdk.GroupByRangeResultItem(lo, hi, bucket["doc_count"], aggs,
                                                         groups))
        return items

    def _range_query(self, f, lo, hi):
        """Rows with a value of ``f`` in [lo, hi)."""
        tv, tname = self.tv, self.engine._names[f.name]
        if f.type == "DOUBLE":
            return tv.Query.range_query(self.engine.schema, tname, tv.FieldType.Float,
                                        max(lo, -1.8e308), min(hi, 1.8e308),
                                        include_lower=True, include_upper=False)
        low = -(1 << 63) if lo == -math.inf else math.ceil(lo)
        high = (1 << 63) - 1 if hi == math.inf else math.ceil(hi) - 1
        if low > high:
            return _nothing(tv)
        return tv.Query.range_query(self.engine.schema, tname, tv.FieldType.Integer, low, high)

    def _GroupByFilter(self, scope, g, depth):
        items = []
        for q in g.filters:
            sub = self._and(scope, self.engine._inner(q))
            specs = self._native_subs(g)
            raw = self._aggregate(sub, specs)
            aggs, groups = self._subs(g, raw, lambda sub=sub: sub, depth)
            items.append(self.sdk.GroupByFilterResultItem(self._count(sub), aggs, groups))
        return items

    def _GroupByGeoDistance(self, scope, g, depth):
        f = self.engine.definition.field(g.field_name)
        items = []
        for r in g.ranges:
            lo, hi = self._range(r)
            lo = max(lo, 0.0)            # the service answers an open start as 0 metres
            sub = self._and(scope, self.engine.geo_ring(f, g.origin.lat, g.origin.lon, lo, hi))
            raw = self._aggregate(sub, self._native_subs(g))
            aggs, groups = self._subs(g, raw, lambda sub=sub: sub, depth)
            items.append(self.sdk.GroupByGeoDistanceResultItem(lo, hi, self._count(sub), aggs,
                                                               groups))
        return items

    def _GroupByHistogram(self, scope, g, depth):
        """Groups of ``interval`` (keys ``floor(v / interval) * interval``),
        those whose key is in ``field_range`` [min, max] (the values of the
        last group may pass max), empty ones left out unless
        ``min_doc_count`` is 0; by key ascending unless sorted otherwise."""
        f = self.engine.definition.field(g.field_name)
        interval = self._number(f, g.interval, "interval")
        lo = self._number(f, g.field_range.min, "min")
        hi = self._number(f, g.field_range.max, "max")
        first = math.ceil(lo / interval) * interval           # the first key in range
        last = math.floor(hi / interval) * interval
        min_count = getattr(g, "min_doc_count", None)
        min_count = 1 if min_count is None else int(min_count)
        items = []
        if first > last:
            return items
        body = {"field": self._fast(f), "interval": interval, "min_doc_count": 0,
                "hard_bounds": {"min": first, "max": last + interval}}
        spec = {"histogram": body}
        subs = self._native_subs(g)
        if subs:
            spec["aggs"] = subs
        buckets = [b for b in self._aggregate(scope, {"h": spec})["h"]["buckets"]
                   if first <= b["key"] <= last]
        missing = self._missing(f, g)
        if missing is not None:
            self._missing_bucket(scope, f, missing, interval, first, last, buckets)
        buckets = [b for b in buckets if b["doc_count"] >= min_count]
        sorters = self._group_sorters(g) or [("key", False, None)]
        integral = f.type in ("LONG", "DATE")
        for b in _sorted_buckets(buckets, sorters, f):
            key = int(b["key"]) if integral else float(b["key"])
            aggs, groups = self._subs(g, b, lambda k=key: self._and(
                scope, self._range_query(f, k, k + interval)), depth)
            items.append(self.sdk.GroupByHistogramResultItem(key, b["doc_count"], aggs, groups))
        return items

    def _GroupByComposite(self, scope, g, depth):
        """(items, next token): the combinations of its sources' groups (each
        source a GroupByField, GroupByHistogram or GroupByDateHistogram) that
        have rows, in the order of their keys (each source's ascending), a
        page of ``size`` (or ``suggested_size``, up to 2,000) after the
        token's keys; each item's keys as strings."""
        size = g.size or min(getattr(g, "suggested_size", None) or DEFAULT_GROUP_SIZE,
                             MAX_GROUP_SIZE)
        after = _after_keys(getattr(g, "next_token", None), len(g.sources))
        found = []
        self._combine(scope, list(g.sources), after, [], found, size + 1)
        more = len(found) > size
        found = found[:size]
        items = []
        for keys, count, combo_scope in found:
            aggs, groups = self._subs(g, self._aggregate(combo_scope, self._native_subs(g)),
                                      lambda q=combo_scope: q, depth)
            items.append(self.sdk.GroupByCompositeResultItem([k[1] for k in keys], count, aggs,
                                                            groups))
        token = _composite_token([k[0] for k in found[-1][0]]) if more else None
        return items, token

    def _combine(self, scope, sources, after, keys, found, limit):
        """Append (keys, row count, scope) of each combination of ``sources``'
        groups in ``scope`` past ``after`` (the sort keys of the last one
        given, or None), in key order, until ``found`` holds ``limit``."""
        for sort_key, text, count, sub in self._source_groups(scope, sources[0]):
            if len(found) >= limit:
                return
            inner = None
            if after is not None:
                if sort_key < after[0] or (sort_key == after[0] and len(sources) == 1):
                    continue
                inner = after[1:] if sort_key == after[0] else None
            here = keys + [(sort_key, text)]
            if len(sources) == 1:
                found.append((here, count, sub))
            else:
                self._combine(sub, sources[1:], inner, here, found, limit)

    def _source_groups(self, scope, src):
        """[(sort key, key as text, row count, the group's scope)] of one
        composite source in ``scope``, by key ascending, groups with rows."""
        kind = _kind(src)
        f = self.engine.definition.field(src.field_name)
        out = []
        if kind == "GroupByField":
            body = {"field": self._fast(f), "size": EXACT_VALUES, "segment_size": EXACT_VALUES,
                    "order": {"_key": "asc"}}
            for b in self._aggregate(scope, {"g": {"terms": body}})["g"]["buckets"]:
                value = _bucket_value(f, b)
                out.append((b["key"], _group_key(f, b), b["doc_count"], self._and(
                    scope, self.engine._term(f, self.engine._names[f.name], value))))
            return out
        if kind == "GroupByHistogram":
            items = self._GroupByHistogram(scope, _Plain(src), 0)
            interval = self._number(f, src.interval, "interval")
            return [(it.key, str(it.key) if isinstance(it.key, int) else repr(it.key), it.value,
                     self._and(scope, self._range_query(f, it.key, it.key + interval)))
                    for it in items]
        starts, lo, hi = self._date_buckets(f, src)
        items = self._GroupByDateHistogram(scope, _Plain(src), 0)
        ends = dict(zip(starts, starts[1:]))
        return [(it.timestamp, str(it.timestamp), it.row_count, self._and(
            scope, self._range_query(f, max(it.timestamp, lo), min(ends[it.timestamp], hi))))
            for it in items]

    def _GroupByGeoGrid(self, scope, g, depth):
        """The geohash cells of ``precision`` (1-12 characters) holding the
        rows' points, by row count descending (then key), at most ``size``:
        a longitude histogram with a latitude histogram in each of its
        groups, whose intervals are the cells' (geohash halves longitude
        and latitude in turn, longitude first)."""
        f = self.engine.definition.field(g.field_name)
        chars = _precision(g.precision)
        bits = 5 * chars
        lon_iv, lat_iv = 360.0 / (1 << ((bits + 1) // 2)), 180.0 / (1 << (bits // 2))
        tname = self._fast(f)
        inner = {"histogram": {"field": tname + "_lat", "interval": lat_iv, "min_doc_count": 1}}
        subs = self._native_subs(g)
        if subs:
            inner["aggs"] = subs
        raw = self._aggregate(scope, {"g": {
            "histogram": {"field": tname + "_lon", "interval": lon_iv, "min_doc_count": 1},
            "aggs": {"lat": inner}}})["g"]["buckets"]
        cells = []
        for column in raw:
            for b in column["lat"]["buckets"]:
                b = dict(b, lon=column["key"], lat=b["key"])
                b["key"] = _geohash(b["lat"], b["lon"], lat_iv, lon_iv, bits)
                cells.append(b)
        cells.sort(key=lambda b: b["key"])
        cells.sort(key=lambda b: b["doc_count"], reverse=True)
        tv, items = self.tv, []
        for b in cells[:g.size if g.size is not None else MAX_GEO_CELLS]:
            def cell(b=b):
                return self._and(scope, tv.Query.boolean_query([
                    (tv.Occur.Must, tv.Query.range_query(
                        self.engine.schema, tname + "_lat", tv.FieldType.Float, b["lat"],
                        b["lat"] + lat_iv, include_upper=False)),
                    (tv.Occur.Must, tv.Query.range_query(
                        self.engine.schema, tname + "_lon", tv.FieldType.Float, b["lon"],
                        b["lon"] + lon_iv, include_upper=False))]))
            aggs, groups = self._subs(g, b, cell, depth)
            grid = self.sdk.GeoGrid(self.sdk.GeoPoint(b["lat"] + lat_iv, b["lon"]),
                                    self.sdk.GeoPoint(b["lat"], b["lon"] + lon_iv))
            items.append(self.sdk.GroupByGeoGridResultItem(b["key"], grid, b["doc_count"],
                                                           aggs, groups))
        return items

    def _GroupByDateHistogram(self, scope, g, depth):
        """Groups of a calendar or fixed ``interval`` in ``time_zone`` (UTC by
        default), shifted by ``offset``: each group's key is its start (ms);
        the values counted are those in ``field_range`` [min, max); empty
        groups left out unless ``min_doc_count`` is 0 (then those between
        the first and the last group that has rows); by key ascending unless
        sorted otherwise."""
        f = self.engine.definition.field(g.field_name)
        starts, lo, hi = self._date_buckets(f, g)
        ranges = [(max(a, lo), min(b, hi)) for a, b in zip(starts, starts[1:])]
        spec = {"range": {"field": self._fast(f), "ranges": [
            {"from": a, "to": b} for a, b in ranges if a < b]}}
        subs = self._native_subs(g)
        if subs:
            spec["aggs"] = subs
        found = {(b.get("from"), b.get("to")): b
                 for b in self._aggregate(scope, {"d": spec})["d"]["buckets"]}
        buckets = []
        for key, (a, b) in zip(starts, ranges):
            bucket = dict(found.get((float(a), float(b)), {"doc_count": 0}), key=key)
            bucket["span"] = (a, b)
            buckets.append(bucket)
        missing = getattr(g, "missing", None)
        if missing is not None:
            value = self._date_value(f, missing, "missing")
            for bucket in buckets:
                a, b = bucket["span"]
                if a <= value < b:
                    bucket["doc_count"] += self._count(self._absent(scope, f))
                    break
        min_count = getattr(g, "min_doc_count", None)
        min_count = 1 if min_count is None else int(min_count)
        full = [i for i, b in enumerate(buckets) if b["doc_count"]]
        if min_count <= 0:
            buckets = buckets[full[0]:full[-1] + 1] if full else []
        else:
            buckets = [b for b in buckets if b["doc_count"] >= min_count]
        sorters = self._group_sorters(g) or [("key", False, None)]
        items = []
        for b in _sorted_buckets(buckets, sorters, f):
            aggs, groups = self._subs(g, b, lambda span=b["span"]: self._and(
                scope, self._range_query(f, *span)), depth)
            items.append(self.sdk.GroupByDateHistogramResultItem(int(b["key"]), b["doc_count"],
                                                                 aggs, groups))
        return items

    def _date_buckets(self, f, g):
        """(the group starts, ms, each followed by the next one's start; the
        range's min and max, ms) of a GroupByDateHistogram."""
        bounds = getattr(g, "field_range", None)
        if bounds is None or bounds.min is None or bounds.max is None:
            raise service_error("search_histogram_range")
        lo = self._date_value(f, bounds.min, "min")
        hi = self._date_value(f, bounds.max, "max")
        if lo > hi:
            raise service_error("search_histogram_range")
        step = _date_step(getattr(g, "interval", None))
        if step is None or step[:2] == (0, 0):
            raise service_error("search_date_interval", interval=_show(g.interval))
        offset = _date_step(g.offset) if getattr(g, "offset", None) is not None else (0, 0)
        if offset is None or (step[0] == 0 and offset[0]):    # a month offset of fixed groups
            raise service_error("search_date_interval", interval=_show(g.offset))
        zone = _zone_ms(getattr(g, "time_zone", None))
        if zone is None:
            raise service_error("search_time_zone", zone=g.time_zone)
        starts = _date_starts(lo, hi, step, offset, zone)
        if starts is None:
            raise service_error("search_histogram_buckets", max=MAX_BUCKETS)
        return starts, lo, hi

    def _date_value(self, f, value, what):
        """A DATE field's bound or missing value as ms (an integer, or a
        string in one of the field's formats)."""
        from .search import _date_ms
        ms = _date_ms(f, value) if isinstance(value, str) else value
        if isinstance(ms, bool) or not isinstance(ms, int):
            raise service_error("search_agg_value", what=what, field=f.name, type=f.type)
        return ms

    def _absent(self, scope, f):
        tv = self.tv
        return tv.Query.boolean_query([
            (tv.Occur.Must, scope),
            (tv.Occur.MustNot, tv.Query.term_query(self.engine.schema, "_has", f.name))])

    def _missing_bucket(self, scope, f, missing, interval, first, last, buckets):
        """Count the rows without a value of ``f`` in the group of ``missing``
        (their sub-aggregations do not see them)."""
        n = self._count(self._absent(scope, f))
        key = math.floor(missing / interval) * interval
        if not n or not first <= key <= last:
            return
        for b in buckets:
            if b["key"] == key:
                b["doc_count"] += n
                return
        buckets.append({"key": key, "doc_count": n})

    def _group_sorters(self, g):
        """[(by, descending, sub agg name)] of a group-by's ``group_by_sort``."""
        out = []
        sorts = getattr(g, "group_by_sort", None)
        if sorts is None:
            return out
        if not isinstance(sorts, list):
            sorts = list(getattr(sorts, "sorters", None) or ())
        names = {a.name: a for a in g.sub_aggs or ()}
        for s in sorts:
            kind = _kind(s)
            desc = _order_desc(getattr(s, "sort_order", None))
            if kind == "GroupKeySort":
                out.append(("key", desc, None))
            elif kind == "RowCountSort":
                out.append(("count", desc, None))
            elif kind == "SubAggSort":
                sub = names.get(s.sub_agg_name)
                if sub is None or _kind(sub) not in _TANTIVY_METRIC and \
                        _kind(sub) not in ("Count", "DistinctCount"):
                    raise service_error("search_group_sub_agg_sort", name=s.sub_agg_name)
                index = list(names).index(s.sub_agg_name)
                out.append(("agg", desc, "a%d" % index))
            else:
                raise service_error("search_group_sort_unsupported", sort=kind)
        return out


# -- buckets ------------------------------------------------------------------------------
def _tantivy_order(sorter, g):
    by, _, sub = sorter
    return {"key": "_key", "count": "_count"}.get(by) or sub


def _bucket_value(f, b):
    """A terms bucket's key as the field's value (a term query's)."""
    key = b["key"]
    if f.type == "BOOLEAN":
        return bool(key)
    if f.type == "DOUBLE":
        return float(key)
    return key


def _group_key(f, b):
    """GroupByField's key, a string as the service gives it."""
    key = b["key"]
    if f.type == "BOOLEAN":
        return "true" if key else "false"
    if f.type == "DOUBLE":
        return repr(float(key))
    return str(key)


def _bucket_sort_key(b, sorter, f):
    by, _, sub = sorter
    if by == "count":
        return b["doc_count"]
    if by == "key":
        return b["key"]
    value = b[sub]["value"]
    return -math.inf if value is None else value


def _sorted_buckets(buckets, sorters, f):
    """``buckets`` in the order of ``sorters``; ties by key, ascending."""
    out = sorted(buckets, key=lambda b: b["key"])
    for sorter in reversed(sorters):
        out.sort(key=lambda b: _bucket_sort_key(b, sorter, f), reverse=sorter[1])
    return out


# -- geohash cells ------------------------------------------------------------------------
MAX_GEO_CELLS = 10_000         # GroupByGeoGrid's size (and its default)
_BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz"


def _precision(value):
    """GeoHashPrecision (1-12) as a number of characters, or None."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if 1 <= n <= 12 and not isinstance(value, bool) else None


def _geohash(lat, lon, lat_iv, lon_iv, bits):
    """The geohash of the cell whose south-west corner is (lat, lon)."""
    lon_i = int(round((lon + 180.0) / lon_iv))
    lat_i = int(round((lat + 90.0) / lat_iv))
    lon_bits, lat_bits = (bits + 1) // 2, bits // 2
    code, n_lon, n_lat = 0, lon_bits, lat_bits
    for b in range(bits):
        if b % 2 == 0:
            n_lon -= 1
            code = code << 1 | (lon_i >> n_lon & 1)
        else:
            n_lat -= 1
            code = code << 1 | (lat_i >> n_lat & 1)
    return "".join(_BASE32[code >> shift & 31] for shift in range(bits - 5, -1, -5))


# -- composite group-bys -----------------------------------------------------------------
_COMPOSITE_SOURCES = ("GroupByField", "GroupByHistogram", "GroupByDateHistogram")


class _Plain:
    """A composite source read as a group-by of its own: by key ascending,
    groups with rows, nothing inside."""

    def __init__(self, source):
        self.__dict__.update(vars(source))
        self.group_by_sort, self.min_doc_count = None, 1
        self.sub_aggs, self.sub_group_bys = [], []


def _composite_token(keys):
    import base64
    import json
    return base64.urlsafe_b64encode(json.dumps({"after": keys}).encode()).decode()


def _after_keys(token, n):
    """The sort keys a composite page starts after (None: the first page)."""
    if not token:
        return None
    import base64
    import json
    try:
        raw = token if isinstance(token, (bytes, bytearray)) else str(token).encode()
        keys = json.loads(base64.urlsafe_b64decode(raw))["after"]
    except (ValueError, KeyError, TypeError):
        raise service_error("search_token_invalid") from None
    if not isinstance(keys, list) or len(keys) != n:
        raise service_error("search_token_invalid")
    return keys


# -- date histograms ------------------------------------------------------------------
_FIXED_MS = {"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000,
             "DAY": 86_400_000}
_MONTHS = {"MONTH": 1, "QUARTER_YEAR": 3, "YEAR": 12}
_UNITS = {1: "YEAR", 2: "QUARTER_YEAR", 3: "MONTH", 4: "WEEK", 5: "DAY", 6: "HOUR",
          7: "MINUTE", 8: "SECOND", 9: "MILLISECOND"}


def _show(value):
    return "%s %s" % (getattr(value, "value", None), getattr(value, "unit", None))


def _date_step(value):
    """A DateTimeValue as (months, ms[, the ms its groups start after the
    epoch]): a calendar step in months (MONTH, QUARTER_YEAR, YEAR) or a fixed
    one in ms (WEEK: 7 days from a Monday); None when it is not a whole
    number of a unit."""
    n, unit = getattr(value, "value", None), getattr(value, "unit", None)
    name = getattr(unit, "name", None) or (_UNITS.get(int(unit)) if isinstance(unit, int)
                                           else None)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0 or name is None:
        return None
    if name in _MONTHS:
        return (n * _MONTHS[name], 0)
    if name == "WEEK":                       # weeks start on Mondays (1970-01-05)
        return (0, n * 7 * 86_400_000, 4 * 86_400_000)
    return (0, n * _FIXED_MS[name])


def _zone_ms(text):
    """A time zone "+hh:mm" / "-hh:mm" (or "Z", or none: UTC) as ms east of UTC."""
    if text in (None, "", "Z", "UTC"):
        return 0
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", str(text))
    if m is None:
        return None
    ms = (int(m.group(2)) * 60 + int(m.group(3))) * 60_000
    return -ms if m.group(1) == "-" else ms


def _date_starts(lo, hi, step, offset, zone):
    """Every group start (ms, UTC) from the group holding ``lo`` past ``hi``,
    then one more (the last group's end): groups of ``step`` (months, ms) in
    local time (``zone`` ms east of UTC), shifted by ``offset`` (months, ms);
    None when there would be more than MAX_BUCKETS."""
    months, ms = step[:2]
    if not months and ms <= 0:
        return None
    if not months:
        shift = zone - offset[1] - (step[2] if len(step) > 2 else 0)
        first = (lo + shift) // ms * ms - shift
        count = (hi - first) // ms + 2
        if count > MAX_BUCKETS + 1:
            return None
        return [first + i * ms for i in range(count)]
    import datetime
    utc = datetime.timezone.utc

    def month_start(index):                  # months since 1970-01 -> ms (UTC)
        y, m = divmod(index, 12)
        local = datetime.datetime(1970 + y, m + 1, 1, tzinfo=utc)
        return int(local.timestamp() * 1000) - zone + offset[1]

    local = datetime.datetime.fromtimestamp((lo + zone - offset[1]) / 1000, utc)
    index = ((local.year - 1970) * 12 + local.month - 1 - offset[0]) // months * months \
        + offset[0]
    starts = [month_start(index)]
    while starts[-1] <= hi:
        index += months
        starts.append(month_start(index))
        if len(starts) > MAX_BUCKETS + 1:
            return None
    return starts


def _empty_metric(kind):
    """A metric over no value, as the service answers (its Go SDK reads
    -inf, +inf, +inf as "no value" for max, min, avg; a sum of nothing is 0)."""
    return {"Max": -math.inf, "Min": math.inf, "Avg": math.inf}.get(kind, 0.0)


def _rank_value(keys, ends, n, p):
    """The value at position ``p``/100 * (n - 1) of ``n`` sorted values
    (``keys``, each repeated up to cumulative count ``ends``), interpolated
    linearly between neighbours."""
    if not n:
        return None
    pos = p / 100.0 * (n - 1)
    lo = int(math.floor(pos))
    frac = pos - lo

    def at(rank):
        return keys[bisect.bisect_right(ends, rank)]

    a = at(lo)
    if frac == 0 or lo + 1 >= n:
        return a
    return a + frac * (at(lo + 1) - a)

