"""The search index against a model: random puts, updates, deletes and TTL-old
rows beside random queries; every answer is compared with a brute-force
evaluation of the same query over the table's rows (the table is the model:
the index must hold exactly what the table holds)."""
import random
import time

import pytest
from tablestore.metadata import (BoolQuery, ColumnReturnType, ColumnsToGet, ExistsQuery,
                                 FieldSchema, FieldType, MatchQuery, RangeQuery, SearchIndexMeta,
                                 SearchQuery, TermQuery, TermsQuery)

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
    finally:
        client.close()


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
