"""Row API throughput: 1 INTEGER PK + 3 attributes (~100 bytes a row).

Targets (issue 4): put_row and get_row >= 25k rows/s, get_range >= 250k rows/s
(test_get_range_full_pages; test_get_range_updated_rows has no bar).
Runs on the real RegionServer when it exists, else on the in-memory fake
(then the figures measure this layer alone).  ``rows/s`` = N / mean time.
"""
import itertools
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from tablestore_fake import open_client  # noqa: E402

from regions.tablestore import (INF_MAX, INF_MIN, BatchWriteRowRequest, PutRowItem, Row,  # noqa: E402
                                TableInBatchWriteRowItem, TableMeta)

N = 2000


def _attrs(i):
    return [("a", i), ("b", "x" * 60), ("c", 1.5)]


@pytest.fixture
def client(tmp_path):
    c = open_client(tmp_path)
    c.create_table(TableMeta("b", [("id", "INTEGER")]))
    yield c
    c.close()


def _measure(benchmark, run, rows):
    """3 rounds of ``run``; records rows/s (none under --benchmark-disable,
    where ``run`` still runs once as a smoke test)."""
    benchmark.pedantic(run, rounds=3, iterations=1)
    if benchmark.stats is not None:
        benchmark.extra_info["rows_per_s"] = rows / benchmark.stats.stats.mean


def _fill(client, n):
    for start in range(0, n, 200):
        req = BatchWriteRowRequest()
        req.add(TableInBatchWriteRowItem("b", [PutRowItem(Row([("id", i)], _attrs(i)), None)
                                               for i in range(start, min(n, start + 200))]))
        client.batch_write_row(req)


def test_put_row(benchmark, client):
    counter = itertools.count()

    def run():
        base = next(counter) * N
        for i in range(base, base + N):
            client.put_row("b", Row([("id", i)], _attrs(i)))
    _measure(benchmark, run, N)


def test_get_row(benchmark, client):
    _fill(client, N)

    def run():
        for i in range(N):
            client.get_row("b", [("id", i)])
    _measure(benchmark, run, N)


def test_update_row_increment(benchmark, client):
    _fill(client, N)

    def run():
        for i in range(N):
            client.update_row("b", Row([("id", i)], {"increment": [("a", 1)]}), None)
    _measure(benchmark, run, N)


def test_batch_write_row_200(benchmark, client):
    counter = itertools.count()

    def run():
        base = next(counter) * N
        _fill_from(client, base, N)
    _measure(benchmark, run, N)


def _fill_from(client, base, n):
    for start in range(base, base + n, 200):
        req = BatchWriteRowRequest()
        req.add(TableInBatchWriteRowItem("b", [PutRowItem(Row([("id", i)], _attrs(i)), None)
                                               for i in range(start, start + 200)]))
        client.batch_write_row(req)


def _read_all(client, rows, columns):
    """GetRange over the whole table, page by page; checks the row and column counts."""
    start = [("id", INF_MIN)]
    got = 0
    while start:
        _, start, page, _ = client.get_range("b", "FORWARD", start, [("id", INF_MAX)])
        got += len(page)
        assert len(page[-1].attribute_columns) == columns
    assert got == rows


def test_get_range_full_pages(benchmark, client):
    rows = 10000
    _fill(client, rows)
    _measure(benchmark, lambda: _read_all(client, rows, 3), rows)


def test_get_range_updated_rows(benchmark, client):
    """Full pages over rows that are a PutRow head plus one UpdateRow delta each
    (no bar; rows then take the merge path instead of the one-head path)."""
    rows = 10000
    _fill(client, rows)
    for i in range(rows):
        client.update_row("b", Row([("id", i)], {"put": [("d", i)]}), None)
    _measure(benchmark, lambda: _read_all(client, rows, 4), rows)
