"""FunctionsScoreQuery (the Java and Go SDKs' FUNCTIONS_SCORE_QUERY;
regions.tablestore.searchscore): every function, score mode and combine
mode against the formulas computed here from the rows' values."""
import math

import pytest
from tablestore import (ColumnReturnType, ColumnsToGet, DateTimeUnit, DateTimeValue, ExistsQuery,
                        FieldSchema, FieldSort, FieldType, MatchAllQuery, RangeQuery,
                        SearchIndexMeta, SearchQuery, Sort, SortOrder)

from regions.tablestore import (CapacityUnit, Condition, OTSClient, OTSServiceError,
                                ReservedThroughput, Row, TableMeta, TableOptions)
from regions.tablestore.searchscore import (DecayFunction, FieldValueFactorFunction,
                                            FunctionsScoreQuery, ScoreFunction)

ORIGIN = (30.137817, 120.08681)
DAY = 86_400_000
T0 = 1_700_000_000_000


def _haversine(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = (math.sin((p2 - p1) / 2) ** 2
         + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2)
    return 2 * 6_371_008.8 * math.asin(min(1.0, math.sqrt(a)))


# id -> (n LONG, d DOUBLE, t DATE ms, geo "lat,lon" or None)
ROWS = {i: (i * 10, i / 4, T0 + i * DAY,
            None if i % 4 == 3 else "%.6f,%.6f" % (ORIGIN[0] + i * 0.001, ORIGIN[1]))
        for i in range(12)}


@pytest.fixture(scope="module")
def client():
    c = OTSClient(None)
    c.create_table(TableMeta("t", [("id", "INTEGER")]), TableOptions(),
                   ReservedThroughput(CapacityUnit(0, 0)))
    c.create_search_index("t", "idx", SearchIndexMeta([
        FieldSchema("n", FieldType.LONG), FieldSchema("d", FieldType.DOUBLE),
        FieldSchema("t", FieldType.DATE, date_formats=["epoch_millis"]),
        FieldSchema("geo", FieldType.GEOPOINT)]))
    for i, (n, d, t, geo) in ROWS.items():
        cols = [("n", n), ("d", d), ("t", t)] + ([("geo", geo)] if geo else [])
        c.put_row("t", Row([("id", i)], cols), Condition("IGNORE"))
    assert c.wait_for_search_index("t", "idx")
    yield c
    c.close()


def scores(client, q, sort=None):
    resp = client.search("t", "idx", SearchQuery(q, limit=100, sort=sort),
                         ColumnsToGet(return_type=ColumnReturnType.NONE))
    return [(r[0][0][1], h.score) for r, h in zip(resp.rows, resp.search_hits)]


def by_score(pairs):
    return sorted(pairs, key=lambda p: (-p[1], p[0]))


def test_a_geo_gauss_decay_at_its_origin_scores_its_weight(client):
    """The Go SDK's TestQueryFunctionsScore_1 on our rows: MAX of the
    query's 1 and 2 x the gauss decay (1 at the origin); rows without a
    point keep the query's score; unsorted, the rows come by score."""
    scale, decay = 1000.0, 0.6
    q = FunctionsScoreQuery(MatchAllQuery(), [ScoreFunction(
        decay=DecayFunction("geo", "GAUSS", "GEO", "%f,%f" % ORIGIN, scale, 0, decay, "SUM"),
        filter=ExistsQuery("geo"), weight=2)], score_mode="MAX", combine_mode="MAX",
        min_score=0, max_score=1000)
    sigma2 = -scale * scale / (2 * math.log(decay))
    want = []
    for i, (_, _, _, geo) in ROWS.items():
        if geo is None:
            want.append((i, 1.0))
            continue
        dist = _haversine(*ORIGIN, *map(float, geo.split(",")))
        want.append((i, max(1.0, 2 * math.exp(-dist * dist / (2 * sigma2)))))
    got = scores(client, q)
    assert got[0] == (0, 2.0)
    assert [k for k, _ in got] == [k for k, _ in by_score(want)]
    assert all(math.isclose(g, w, rel_tol=1e-9) for (_, g), (_, w) in zip(got, by_score(want)))


@pytest.mark.parametrize("fn", ["GAUSS", "EXP", "LINEAR"])
def test_numeric_and_date_decays_follow_their_formulas(client, fn):
    origin, scale, offset, decay = 30.0, 40.0, 10.0, 0.5

    def f(dist):
        dist = max(0.0, dist - offset)
        if fn == "GAUSS":
            return math.exp(-dist * dist / (2 * (-scale * scale / (2 * math.log(decay)))))
        if fn == "EXP":
            return math.exp(math.log(decay) / scale * dist)
        s = scale / (1 - decay)
        return max(0.0, (s - dist) / s)

    q = FunctionsScoreQuery(RangeQuery("n", 0, 1000), [ScoreFunction(
        decay=DecayFunction("n", fn, "NUMERIC", origin, scale, offset, decay))],
        combine_mode="REPLACE")
    got = dict(scores(client, q))
    assert got.keys() == set(ROWS)
    for i, (n, _, _, _) in ROWS.items():
        assert math.isclose(got[i], f(abs(n - origin)), rel_tol=1e-9, abs_tol=1e-12), (i, n)
    # dates: the scale and offset in days
    q = FunctionsScoreQuery(MatchAllQuery(), [ScoreFunction(decay=DecayFunction(
        "t", fn, "DATE", T0 + 3 * DAY, DateTimeValue(4, DateTimeUnit.DAY),
        DateTimeValue(1, DateTimeUnit.DAY), decay))], combine_mode="REPLACE")
    got = dict(scores(client, q))
    scale, offset, origin = 4.0, 1.0, 3.0
    for i in ROWS:
        assert math.isclose(got[i], f(abs(i - origin)), rel_tol=1e-9, abs_tol=1e-12), (i, fn)


def test_score_and_combine_modes_weights_caps_and_min_score(client):
    fvf = ScoreFunction(field_value_factor=FieldValueFactorFunction("d", 2.0, "LN1P", 1.0),
                        weight=3)
    only_even = ScoreFunction(weight=5, filter=RangeQuery("n", 0, 200, include_upper=True))
    rnd = ScoreFunction(random=True, weight=0.5)

    def fv(i):
        return math.log1p(2.0 * ROWS[i][1])

    cases = {
        "SUM": lambda i, e: 3 * fv(i) + (5 if e else 0),
        "AVG": lambda i, e: (3 * fv(i) + (5 if e else 0)) / (3 + (5 if e else 0)),
        "MAX": lambda i, e: max(3 * fv(i), 5) if e else 3 * fv(i),
        "MIN": lambda i, e: min(3 * fv(i), 5) if e else 3 * fv(i),
        "MULTIPLY": lambda i, e: 3 * fv(i) * (5 if e else 1),
        "FIRST": lambda i, e: 3 * fv(i),
    }
    for mode, want in cases.items():
        q = FunctionsScoreQuery(MatchAllQuery(), [fvf, only_even], score_mode=mode,
                                combine_mode="SUM")
        got = dict(scores(client, q))
        for i in ROWS:
            assert math.isclose(got[i], 1.0 + want(i, ROWS[i][0] <= 200), rel_tol=1e-9), (mode, i)
    # combine modes with the query's score (MatchAll: 1), a cap, a floor
    for combine, want in {"MULTIPLY": lambda f: f, "AVG": lambda f: (1 + f) / 2,
                          "MAX": lambda f: max(1, f), "MIN": lambda f: min(1, f),
                          "SUM": lambda f: 1 + f, "REPLACE": lambda f: f}.items():
        q = FunctionsScoreQuery(MatchAllQuery(), [fvf], combine_mode=combine, max_score=4.0,
                                min_score=1.5)
        got = dict(scores(client, q))
        expected = {i: want(min(4.0, 3 * fv(i))) for i in ROWS}
        assert got.keys() == {i for i, s in expected.items() if s >= 1.5}, combine
        assert all(math.isclose(got[i], expected[i], rel_tol=1e-9) for i in got), combine
    # a random function scores in [0, 0.5) x the query's 1, and a sort given is kept
    q = FunctionsScoreQuery(MatchAllQuery(), [rnd])
    got = scores(client, q, Sort([FieldSort("n", SortOrder.DESC)]))
    assert [k for k, _ in got] == sorted(ROWS, reverse=True)
    assert all(math.isnan(s) for _, s in got)          # scores only for a score sort
    assert all(0 <= s < 0.5 for _, s in scores(client, q))


def test_a_missing_value_and_the_field_value_factor_missing(client):
    """A row without the field: ``missing`` stands in; without it the
    function does not apply (the functions' score is 1)."""
    q = FunctionsScoreQuery(MatchAllQuery(), [ScoreFunction(
        decay=DecayFunction("geo", "LINEAR", "GEO", "%f,%f" % ORIGIN, 100000, 0, 0.5))],
        combine_mode="REPLACE")
    got = dict(scores(client, q))
    assert all(got[i] == 1.0 for i, r in ROWS.items() if r[3] is None)
    assert all(got[i] < 1.0 for i, r in ROWS.items() if r[3] is not None and i)


@pytest.mark.parametrize("q,words", [
    (FunctionsScoreQuery(MatchAllQuery(), []), "at least one function"),
    (FunctionsScoreQuery(None, [ScoreFunction(weight=1)]), "needs a query"),
    (FunctionsScoreQuery(MatchAllQuery(), [ScoreFunction(random=True, decay=DecayFunction(
        "n", scale=1))]), "one of field_value_factor, decay or random"),
    (FunctionsScoreQuery(MatchAllQuery(), [ScoreFunction()]), "needs a weight"),
    (FunctionsScoreQuery(MatchAllQuery(), [ScoreFunction(decay=DecayFunction(
        "n", scale=0))]), "scale must be positive"),
    (FunctionsScoreQuery(MatchAllQuery(), [ScoreFunction(decay=DecayFunction(
        "n", scale=1, decay=1.5))]), "decay must be in (0, 1)"),
    (FunctionsScoreQuery(MatchAllQuery(), [ScoreFunction(weight=1)], score_mode=42),
     "Unknown score_mode"),
])
def test_a_query_no_row_can_be_scored_by_is_refused(client, q, words):
    with pytest.raises(OTSServiceError) as e:
        scores(client, q)
    assert e.value.code == "OTSParameterInvalid" and words in e.value.message

