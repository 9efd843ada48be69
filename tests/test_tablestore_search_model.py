"""The search index against a model: random puts, updates, deletes and TTL-old
rows beside random queries; every answer is compared with a brute-force
evaluation of the same query over the table's rows (the table is the model:
the index must hold exactly what the table holds)."""
import math
import random
import time

import pytest
from tablestore.metadata import (BoolQuery, ColumnReturnType, ColumnsToGet, ExistsQuery,
                                 FieldSchema, FieldSort, FieldType, MatchQuery, PrimaryKeySort,
                                 RangeQuery, ScoreSort, SearchIndexMeta, SearchQuery, Sort,
                                 SortOrder, TermQuery, TermsQuery)

from regions.tablestore import (CapacityUnit, Condition, OTSClient, ReservedThroughput, Row,
                                TableMeta, TableOptions)

IGNORE = Condition("IGNORE")
WORDS = ["red", "green", "blue", "cyan", "gold", "iron", "salt"]


def random_columns(rng):
    cols = {}
    if rng.random() < 0.9:
        cols["tag"] = rng.choice(["a", "b", "c", "d"])
    if rng.random() < 0.9:
        cols["n"] = rng.randrange(-50, 50)
    if rng.random() < 0.8:
        cols["text"] = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4)))
    return cols


def random_query(rng):
    """(the SDK's query, the same as a predicate over a row's columns)."""
    kind = rng.randrange(6)
    if kind == 0:
        tag = rng.choice("abcde")
        return TermQuery("tag", tag), lambda c: c.get("tag") == tag
    if kind == 1:
        tags = rng.sample("abcde", 2)
        return TermsQuery("tag", tags), lambda c: c.get("tag") in tags
    if kind == 2:
        lo, hi = sorted(rng.sample(range(-60, 60), 2))
        return RangeQuery("n", lo, hi), lambda c: "n" in c and lo <= c["n"] < hi
    if kind == 3:
        word = rng.choice(WORDS)
        return MatchQuery("text", word), lambda c: word in c.get("text", "").split()
    if kind == 4:
        return ExistsQuery("n"), lambda c: "n" in c
    a, pa = random_query(rng)
    b, pb = random_query(rng)
    return (BoolQuery(must_queries=[a], must_not_queries=[b]),
            lambda c: pa(c) and not pb(c))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_writes_and_queries_agree_with_a_scan(seed):
    rng = random.Random(seed)
    client = OTSClient(None)
    try:
        client.create_table(TableMeta("t", [("id", "INTEGER")]),
                            TableOptions(max_time_deviation=10 * 86400),
                            ReservedThroughput(CapacityUnit(0, 0)))
        client.create_search_index("t", "idx", SearchIndexMeta([
            FieldSchema("tag", FieldType.KEYWORD), FieldSchema("n", FieldType.LONG),
            FieldSchema("text", FieldType.TEXT)], time_to_live=86400))
        old = int(time.time() * 1000) - 3 * 86400 * 1000
        for step in range(400):
            key = rng.randrange(60)
            op = rng.random()
            if op < 0.5:
                cols = random_columns(rng)
                ts = old if rng.random() < 0.05 else None       # a row the TTL hides
                client.put_row("t", Row([("id", key)], [(k, v, ts) if ts else (k, v)
                                                        for k, v in cols.items()]), IGNORE)
            elif op < 0.8:
                cols = random_columns(rng)
                update = {"put": list(cols.items())}
                gone = [c for c in ("tag", "n", "text") if c not in cols]
                if gone and rng.random() < 0.5:
                    update["delete_all"] = [rng.choice(gone)]
                client.update_row("t", Row([("id", key)], update), IGNORE)
            else:
                client.delete_row("t", Row([("id", key)]), IGNORE)
            if step % 50 == 49:
                assert client.wait_for_search_index("t", "idx")
                table = model(client, old)
                for _ in range(12):
                    query, predicate = random_query(rng)
                    resp = client.search("t", "idx", SearchQuery(query, limit=100,
                                                                 get_total_count=True),
                                         ColumnsToGet(return_type=ColumnReturnType.NONE))
                    got = [r[0][0][1] for r in resp.rows]
                    expected = sorted(k for k, c in table.items() if predicate(c))
                    assert got == expected, (seed, step, query)
                    assert resp.total_count == len(expected)
                    # a page of it in a random order (n has many ties and
                    # missing values: ties go by key, the rows without n last)
                    sort, order = random_sort(rng, query, table, expected)
                    offset = rng.randrange(len(expected) + 1)
                    limit = rng.randrange(1, 12)
                    resp = client.search("t", "idx", SearchQuery(
                        query, sort=sort, offset=offset, limit=limit),
                        ColumnsToGet(return_type=ColumnReturnType.NONE))
                    got = [r[0][0][1] for r in resp.rows]
                    assert got == order[offset:offset + limit], (seed, step, query, sort, offset)
    finally:
        client.close()


def random_sort(rng, query, table, keys):
    """(a random Sort, ``keys`` in its order): by n (ties by key, the rows
    without n last in either order), by key either way, or by score for a
    TermQuery on a keyword (every score equal: by key)."""
    desc = rng.random() < 0.5
    order = SortOrder.DESC if desc else SortOrder.ASC
    kind = rng.randrange(3)
    if kind == 0:
        def n_order(k):
            n = table[k].get("n")
            return (n is None, 0 if n is None else (-n if desc else n), k)
        return Sort([FieldSort("n", order)]), sorted(keys, key=n_order)
    if kind == 1 or type(query).__name__ != "TermQuery":
        return Sort([PrimaryKeySort(order)]), sorted(keys, reverse=desc)
    return Sort([ScoreSort()]), sorted(keys)


def test_pages_by_key_when_keys_share_their_first_bytes():
    """Row keys alike in their first 8 bytes (the index's top-k key): every
    page of every order by key is a slice of the table's order."""
    client = OTSClient(None)
    try:
        client.create_table(TableMeta("s", [("k", "STRING"), ("j", "INTEGER")]), TableOptions(),
                            ReservedThroughput(CapacityUnit(0, 0)))
        client.create_search_index("s", "idx", SearchIndexMeta([
            FieldSchema("n", FieldType.LONG)]))
        keys = [(p + str(i), j) for p in ("prefix-alike-", "prefix-alik", "zz")
                for i in range(7) for j in (2, -1)]
        for n, (k, j) in enumerate(keys):
            client.put_row("s", Row([("k", k), ("j", j)], [("n", n % 3)]), IGNORE)
        assert client.wait_for_search_index("s", "idx")
        for desc in (False, True):
            expected = sorted(keys, reverse=desc)
            for offset in range(len(keys)):
                for limit in (1, 3, 5):
                    resp = client.search("s", "idx", SearchQuery(
                        TermQuery("n", 1) if limit == 5 else RangeQuery("n", 0, 9),
                        sort=Sort([PrimaryKeySort(SortOrder.DESC if desc else SortOrder.ASC)]),
                        offset=offset, limit=limit),
                        ColumnsToGet(return_type=ColumnReturnType.NONE))
                    got = [(r[0][0][1], r[0][1][1]) for r in resp.rows]
                    want = [k for k in expected if limit != 5 or keys.index(k) % 3 == 1]
                    assert got == want[offset:offset + limit], (desc, offset, limit)
    finally:
        client.close()


@pytest.mark.parametrize("seed", [1, 2])
def test_pages_when_keys_share_long_prefixes(seed, monkeypatch):
    """Row keys sharing 5, 12, 20 and 30 bytes (past each 8-byte part of the
    index's key order, and past all three), values of n in long runs of
    ties: random pages by key and by n either way are slices of the
    table's order, and the key parts' refinement is what reads them (a run
    of ties is asked again by the next part, down to the documents)."""
    from regions.tablestore import search as search_module
    levels = []
    key_run = search_module.Engine._key_run

    def spy(self, searcher, tq, m, desc, level=0):
        levels.append(level)
        return key_run(self, searcher, tq, m, desc, level)
    monkeypatch.setattr(search_module.Engine, "_key_run", spy)
    rng = random.Random(seed)
    client = OTSClient(None)
    try:
        client.create_table(TableMeta("p", [("k", "STRING")]), TableOptions(),
                            ReservedThroughput(CapacityUnit(0, 0)))
        client.create_search_index("p", "idx", SearchIndexMeta([
            FieldSchema("n", FieldType.LONG)]))
        keys = [p + "%03d" % i for p in ("a" * 5, "b" * 12, "c" * 20, "d" * 30)
                for i in rng.sample(range(1000), 40)]
        ns = {k: rng.randrange(3) for k in keys}
        rng.shuffle(keys)
        for k in keys:
            client.put_row("p", Row([("k", k)], [("n", ns[k])]), IGNORE)
        assert client.wait_for_search_index("p", "idx")
        for _ in range(60):
            desc = rng.random() < 0.5
            order = SortOrder.DESC if desc else SortOrder.ASC
            if rng.random() < 0.5:
                sort, expected = Sort([PrimaryKeySort(order)]), sorted(keys, reverse=desc)
            else:
                sort = Sort([FieldSort("n", order)])
                expected = sorted(keys, key=lambda k: (-ns[k] if desc else ns[k], k))
            offset, limit = rng.randrange(len(keys)), rng.randrange(1, 30)
            resp = client.search("p", "idx", SearchQuery(RangeQuery("n", 0, 9), sort=sort,
                                                         offset=offset, limit=limit),
                                 ColumnsToGet(return_type=ColumnReturnType.NONE))
            got = [r[0][0][1] for r in resp.rows]
            assert got == expected[offset:offset + limit], (sort, offset, limit)
    finally:
        client.close()
    assert {0, 1, 2, 3} <= set(levels)     # every part, and past them the documents


def model(client, old):
    """The table's rows as the index should see them: {id: {column: value}},
    the rows whose newest cell is older than the TTL left out."""
    _, _, rows, _ = client.get_range("t", "FORWARD", [("id", -1)], [("id", 10 ** 6)])
    out = {}
    for r in rows:
        cells = {c[0]: (c[1], c[2]) for c in r.attribute_columns}
        if cells and max(ts for _, ts in cells.values()) <= old:
            continue
        out[r.primary_key[0][1]] = {k: v for k, (v, _) in cells.items()}
    return out


def test_sort_values_are_read_back_from_tantivy_s_own():
    """_sort_value inverts the u64 tantivy sorts a fast i64 or f64 column
    by (ascending: its complement), every value exact."""
    import struct

    import tantivy

    from regions.tablestore.search import _sort_value
    rng = random.Random(5)
    ints = [-(1 << 63), (1 << 63) - 1, 0, -1, 1] + [rng.randrange(-(1 << 63), 1 << 63)
                                                    for _ in range(30)]
    floats = [0.0, -0.0, 1.5, -1.5, 1e308, -1e308, 5e-324, float("inf"), float("-inf")] + [
        struct.unpack("<d", rng.randbytes(8))[0] for _ in range(30)]
    floats = [x for x in floats if x == x]                    # no NaN
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("i", fast=True, indexed=True)
    sb.add_float_field("f", fast=True, indexed=True)
    sb.add_integer_field("which", stored=True, indexed=True)
    index = tantivy.Index(sb.build())
    writer = index.writer(15_000_000, 1)
    for n, (i, f) in enumerate(zip(ints, floats)):
        doc = tantivy.Document()
        doc.add_integer("i", i)
        doc.add_float("f", f)
        doc.add_integer("which", n)
        writer.add_document(doc)
    writer.commit()
    index.reload()
    searcher = index.searcher()
    for field, values, is_float in (("i", ints, False), ("f", floats, True)):
        for desc in (False, True):
            hits = searcher.search(tantivy.Query.all_query(), 100, order_by_field=field,
                                   order=tantivy.Order.Desc if desc else tantivy.Order.Asc).hits
            for raw, address in hits:
                want = values[searcher.doc(address)["which"][0]]
                got = _sort_value(raw, desc, is_float)
                assert got == want and math.copysign(1, got) == math.copysign(1, want), \
                    (field, desc, raw, got, want)


def test_pages_by_a_field_holding_its_extremes_beside_rows_without_it():
    """tantivy sorts a row without the field as it sorts the extreme value
    (its sort value 0): every page, in either order, puts the extreme among
    the values and the rows without the field after them, by key."""
    client = OTSClient(None)
    try:
        client.create_table(TableMeta("x", [("k", "INTEGER")]), TableOptions(),
                            ReservedThroughput(CapacityUnit(0, 0)))
        client.create_search_index("x", "idx", SearchIndexMeta([
            FieldSchema("n", FieldType.LONG), FieldSchema("tag", FieldType.KEYWORD)]))
        lo, hi = -(1 << 63), (1 << 63) - 1
        values = {k: v for k, v in enumerate([lo, 5, hi, None, lo, None, 0, hi, None, -7, 5])}
        for k, v in values.items():
            client.put_row("x", Row([("k", k)], [("tag", "a")] + ([("n", v)] if v is not None
                                                                   else [])), IGNORE)
        assert client.wait_for_search_index("x", "idx")
        for desc in (False, True):
            have = sorted((k for k, v in values.items() if v is not None),
                          key=lambda k: (-values[k] if desc else values[k], k))
            want = have + sorted(k for k, v in values.items() if v is None)
            for offset in range(len(values)):
                for limit in (1, 2, 4, 11):
                    resp = client.search("x", "idx", SearchQuery(
                        TermQuery("tag", "a"), offset=offset, limit=limit,
                        sort=Sort([FieldSort("n", SortOrder.DESC if desc else SortOrder.ASC)])),
                        ColumnsToGet(return_type=ColumnReturnType.NONE))
                    got = [r[0][0][1] for r in resp.rows]
                    assert got == want[offset:offset + limit], (desc, offset, limit)
    finally:
        client.close()


def test_a_token_carries_its_sort():
    """The Java SDK's SearchQuery drops its sort when given a token (the
    token carries it): pages asked with the token alone keep the first
    page's order, and its scores."""
    client = OTSClient(None)
    try:
        client.create_table(TableMeta("s", [("k", "INTEGER")]), TableOptions(),
                            ReservedThroughput(CapacityUnit(0, 0)))
        client.create_search_index("s", "idx", SearchIndexMeta([
            FieldSchema("name", FieldType.KEYWORD, enable_sort_and_agg=True),
            FieldSchema("n", FieldType.LONG, enable_sort_and_agg=True),
            FieldSchema("text", FieldType.TEXT)]))
        for k in range(9):
            client.put_row("s", Row([("k", k)], [("name", "company%d" % (k % 5)), ("n", k % 4),
                                                 ("text", "red " * (1 + k % 3))]), IGNORE)
        assert client.wait_for_search_index("s", "idx")
        none = ColumnsToGet(return_type=ColumnReturnType.NONE)
        for sort in (Sort([FieldSort("name", SortOrder.DESC)]),
                     Sort([FieldSort("n", SortOrder.DESC), PrimaryKeySort(SortOrder.DESC)]),
                     Sort([PrimaryKeySort(SortOrder.DESC)]), Sort([ScoreSort()])):
            query = MatchQuery("text", "red")
            whole = client.search("s", "idx", SearchQuery(query, sort=sort, limit=100), none)
            resp = client.search("s", "idx", SearchQuery(query, sort=sort, limit=2), none)
            got = [(r[0][0][1], h.score) for r, h in zip(resp.rows, resp.search_hits)]
            while resp.next_token:
                resp = client.search("s", "idx", SearchQuery(query, next_token=resp.next_token,
                                                             limit=2), none)
                got += [(r[0][0][1], h.score) for r, h in zip(resp.rows, resp.search_hits)]
            want = [(r[0][0][1], h.score) for r, h in zip(whole.rows, whole.search_hits)]
            assert [k for k, _ in got] == [k for k, _ in want], sort
            assert [s for _, s in got] == pytest.approx([s for _, s in want], nan_ok=True), sort
    finally:
        client.close()
