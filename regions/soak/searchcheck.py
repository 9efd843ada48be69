"""The search-index check of the crash loops: the workload table's search
index against the table (killloop ``--search``,
tests/test_tablestore_search_crash.py).

**The index** (``INDEX``, ``FIELDS``): one search index on the workload's
table, a field for each column the workload writes and for the partition
key: ``v`` KEYWORD (``"o<op id>"``), ``n`` LONG (the counter), ``node`` and
``prev`` LONG (the linked list), ``pad`` TEXT (runs of ``x``), ``p`` LONG
(a primary-key column).  ``ensure`` makes it right after CreateTable (or
after a kill cut that short), ``churn`` drops and makes it again while the
workload runs (its back-fill beside the writes); both note each step in the
acknowledgement log (``S create``, ``S created``, ``S drop``, ``S
dropped``), from which ``expected`` tells the parent whether the index must
be there.

**The check** (``SearchCheck.check``), after each kill and reopen, once the
table itself is checked (workload.check_state) and the index is in sync
(``wait_for_search_index``), against the table as read (``actual``):

* the index is there if its creation was acknowledged and no drop begun
  since, absent if its drop was acknowledged (either way while one was in
  flight);
* its documents, read from the engine: one per row of the table, none of a
  row not there (a *phantom*), none twice, each field's values those of the
  row's column (a stale document is wrong);
* MatchAll paged by ``next_token`` and a parallel scan through every stream
  (``compute_splits``, ``parallel_scan``) return exactly the table's row
  keys, each once, and MatchAll's ``total_count`` is their number;
* a few Term, Terms, Range, Exists, Match and Bool queries drawn at random
  return exactly the rows the same predicate selects from the table.

The search rows are asked with ``ColumnReturnType.NONE``: the keys come
from the index alone (the other return types read the row from the table
and leave out a row that is not there, which would hide a phantom).
"""
import random

from tablestore.metadata import (AnalyzerType, BoolQuery, ColumnReturnType, ColumnsToGet,
                                 ExistsQuery, FieldSchema, FieldType, MatchAllQuery, MatchQuery,
                                 RangeQuery, ScanQuery, SearchIndexMeta, SearchQuery, TermQuery,
                                 TermsQuery)

from regions.tablestore import pkcodec
from regions.tablestore.search import _field_values

from .workload import TABLE

__all__ = ["INDEX", "FIELDS", "ensure", "create", "drop", "churn", "expected", "SearchCheck",
           "STATS"]

INDEX = "soak_search"
FIELDS = (("v", FieldType.KEYWORD), ("n", FieldType.LONG), ("node", FieldType.LONG),
          ("prev", FieldType.LONG), ("pad", FieldType.TEXT), ("p", FieldType.LONG))
#: the counters ``SearchCheck`` keeps in its stats dict
STATS = ("search_checks", "search_documents", "search_queries", "search_problems")
_NONE = ColumnsToGet(return_type=ColumnReturnType.NONE)


def _meta():
    return SearchIndexMeta([FieldSchema(name, kind, enable_sort_and_agg=kind != FieldType.TEXT,
                                        analyzer=AnalyzerType.SINGLEWORD
                                        if kind == FieldType.TEXT else None)
                            for name, kind in FIELDS])


def exists(client, table=TABLE) -> bool:
    return (table, INDEX) in client.list_search_index(table)


def create(client, log=None) -> None:
    _note(log, "create")
    client.create_search_index(TABLE, INDEX, _meta())
    _note(log, "created")


def drop(client, log=None) -> None:
    _note(log, "drop")
    client.delete_search_index(TABLE, INDEX)
    _note(log, "dropped")


def ensure(client, log=None) -> None:
    """The table's search index, made if missing (a new table, or a kill
    that cut its making or a churn short)."""
    if not exists(client):
        create(client, log)


def churn(client, log=None) -> None:
    """Drop the index and make it again: its back-fill runs beside the workload."""
    drop(client, log)
    create(client, log)


def _note(log, step):
    if log is not None:
        log.note("S", step)


def expected(notes, before):
    """Whether the index must be there after a kill: from the child's ``S``
    notes (``notes``: read_log's) and ``before`` (True, False, or None:
    either) when the child noted nothing."""
    state = before
    for step in notes.get("S", ()):
        state = {"create": None, "created": True, "drop": None, "dropped": False}[step]
    return state


class SearchCheck:
    """The search check (module doc), one per run; ``stats`` gets STATS.
    ``expect`` (True, False, None: either) says whether the index must be
    there at the next check."""

    def __init__(self, stats: dict, table: str = TABLE, seed: int = 0):
        self.stats, self.table = stats, table
        for name in STATS:
            stats.setdefault(name, 0)
        self.rng = random.Random(seed)
        self.expect = None

    def check(self, summary, client, actual: dict, when: str = None,
              timeout: float = 120.0) -> None:
        """Check the index of the reopened ``client`` against ``actual`` (the
        table read after the reopen: {(p, r): {column: value}})."""
        when = when if when is not None else f"cycle {summary.cycles}"
        there = exists(client, self.table)
        if self.expect is not None and there != self.expect:
            kind = "losses" if self.expect else "wrong"
            self._problem(summary, kind, f"{when}: the index is {'' if there else 'not '}"
                                         f"there, its {'creation' if self.expect else 'drop'} "
                                         "was acknowledged")
        self.expect = there
        if not there:
            return
        if not client.wait_for_search_index(self.table, INDEX, timeout):
            summary.failure("hangs", f"{when}: search index {INDEX!r} not in sync within "
                                     f"{timeout:g} s")
            return
        self.stats["search_checks"] += 1
        self._documents(summary, client, actual, when)
        self._keys(summary, client, actual, when)
        for query, predicate in self._queries(actual):
            self.stats["search_queries"] += 1
            got = self._search(client, query)[0]
            want = sorted(k for k, cols in actual.items() if predicate(k, cols))
            self._compare(summary, when, f"{type(query).__name__} {vars(query)}", want, got)

    # -- the engine's documents ---------------------------------------------------
    def _documents(self, summary, client, actual, when):
        """Every stored document against the table's row (module doc)."""
        definition, engine = next((d, e) for d, e in client._indexer.searches_of(self.table)
                                  if d.name == INDEX)
        searcher = engine.index.searcher()
        seen = set()
        result = searcher.search(engine._tv.Query.all_query(), limit=max(1, searcher.num_docs))
        for _, address in result.hits:
            doc = engine.stored(searcher, address)
            key = tuple(pkcodec.decode_pk(doc.row_key, 2)[0])
            self.stats["search_documents"] += 1
            if key in seen:
                self._problem(summary, "wrong", f"{when}: row {key}: two documents")
                continue
            seen.add(key)
            cols = actual.get(key)
            if cols is None:
                self._problem(summary, "wrong", f"{when}: row {key}: a phantom document "
                                                f"{_shown(doc)}")
                continue
            row = dict(cols, p=key[0], r=key[1])
            for f in definition.fields:    # a document stores its key: ask the index
                want = _field_values(f, row[f.name]) if f.name in row else []
                if not engine.holds(doc.row_key, f, want):
                    self._problem(summary, "wrong", f"{when}: row {key}: field {f.name} "
                                                    f"does not hold the row's {want}")
        for key in sorted(set(actual) - seen):
            self._problem(summary, "losses", f"{when}: row {key}: no document")
        if searcher.num_docs != len(result.hits):
            self._problem(summary, "wrong", f"{when}: {searcher.num_docs} documents counted, "
                                            f"{len(result.hits)} found")

    # -- the API: MatchAll, parallel scan, queries ------------------------------------
    def _keys(self, summary, client, actual, when):
        want = sorted(actual)
        got, total = self._search(client, MatchAllQuery())
        self._compare(summary, when, "MatchAll", want, got)
        if total != len(want):
            self._problem(summary, "wrong", f"{when}: MatchAll's total_count {total}, "
                                            f"the table has {len(want)} rows")
        session, splits = client.compute_splits(self.table, INDEX)
        got = []
        for parallel in range(splits):
            token = None
            while True:
                rows, token = client.parallel_scan(
                    self.table, INDEX, ScanQuery(MatchAllQuery(), 500, token, parallel, splits,
                                                 60), session, _NONE)
                got += [_key(r) for r in rows]
                if not token:
                    break
        self._compare(summary, when, f"parallel scan ({splits} streams)", want, sorted(got))

    def _search(self, client, query):
        """(row keys in the order found, total_count) of ``query``, paged by next_token."""
        keys, token, total = [], None, None
        while True:
            resp = client.search(self.table, INDEX, SearchQuery(
                query, limit=100, next_token=token, get_total_count=True), _NONE)
            keys += [_key(r) for r in resp.rows]
            total = resp.total_count if total is None else total
            token = resp.next_token
            if not token:
                return keys, total

    def _queries(self, actual):
        """[(query, predicate(key, columns))]: one of each kind, values drawn
        from the table (or the empty query when it has no such value)."""
        rng, rows = self.rng, sorted(actual.items())
        if not rows:
            return [(TermQuery("v", "o-1"), lambda k, c: False)]
        pick = lambda col: rng.choice([c[col] for _, c in rows if col in c] or [None])  # noqa
        v, n, node = pick("v"), pick("n"), pick("node")
        # no row with the column: a value no row has (never None, which the
        # predicates would take for "the column missing")
        v, n, node = v or "o-1", -1 if n is None else n, 0 if node is None else node
        vs = sorted({pick("v") for _ in range(5)} - {None})
        pad = rng.choice([c["pad"] for _, c in rows if c.get("pad")] or ["x"])
        lo = rng.randrange(0, 12)
        p = rng.randrange(32)
        return [
            (TermQuery("v", v), lambda k, c: c.get("v") == v),
            (TermsQuery("v", vs), lambda k, c: c.get("v") in vs),
            (RangeQuery("n", lo, lo + 8), lambda k, c: "n" in c and lo <= c["n"] < lo + 8),
            (TermQuery("n", n), lambda k, c: c.get("n") == n),
            (RangeQuery("node", node, include_lower=False),
             lambda k, c: "node" in c and c["node"] > node),
            (ExistsQuery("prev"), lambda k, c: "prev" in c),
            (MatchQuery("pad", pad), lambda k, c: c.get("pad") == pad),
            (BoolQuery(must_queries=[TermQuery("p", p)], must_not_queries=[ExistsQuery("n")]),
             lambda k, c: k[0] == p and "n" not in c),
        ]

    def _compare(self, summary, when, what, want, got):
        if got == want:
            return
        twice = sorted({k for k in got if got.count(k) > 1})
        lost, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        if lost:
            self._problem(summary, "losses", f"{when}: {what}: rows missing {lost[:5]}")
        if extra:
            self._problem(summary, "wrong", f"{when}: {what}: phantom rows {extra[:5]}")
        if twice:
            self._problem(summary, "wrong", f"{when}: {what}: rows twice {twice[:5]}")
        if not (lost or extra or twice):
            self._problem(summary, "wrong", f"{when}: {what}: rows out of order")

    def _problem(self, summary, kind, text):
        self.stats["search_problems"] += 1
        summary.failure(kind, "search: " + text)


def _key(row):
    return tuple(v for _, v in row[0])


def _shown(doc):
    return doc.fields()
