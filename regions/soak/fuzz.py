"""Experiment 7: malformed input on the embedded API, on the wire, and to the file parsers.

Three parts share the ``count`` of inputs (30 % / 40 % / 30 %):

* **embedded**: Hypothesis draws calls of ``OTSClient`` (put, update,
  delete, get, get_range, batch get and write, transactions) whose every
  argument may be wrong: types, sizes, names, NaN and infinities, lone
  surrogates, out-of-range integers, oversize batches.  Each call returns or
  raises ``OTSClientError`` / a 4xx ``OTSServiceError``; one that raises
  changes no row (a full GetRange before and after).
* **wire** (regions/soak/fuzzwire.py): against an in-process ``regions-server``, correctly signed
  requests of every API whose protobuf body has bits flipped, is cut or
  spliced, or carries a PlainBuffer row built with wrong tags, types,
  lengths and counts (checksums right, so the decoder is reached) or a
  wrong checksum; and raw connections: garbage bytes, heads cut or sent
  slowly, a Content-Length longer or shorter than the body.  Each gets a
  reply with the service's error code (never a 5xx), or the connection
  closes, within the server's timeout; a refused request changes no row; a
  well-behaved SDK client writing and reading meanwhile sees no error.
* **parsers**: real WAL, table and MANIFEST files, mutated (bits flipped,
  cut, bytes inserted, spans repeated), fed to ``LogReader`` + batch
  replay, ``Table.open`` + a full scan + ``verify``, and ``VersionEdit.decode``:
  each parses or raises ``CorruptionError``, nothing else.
"""
import logging
import math
import os
import random
import shutil
import time

import lsm
from lsm import filenames
from lsm.batch import replay
from lsm.errors import LSMError
from lsm.fs import OSFileSystem
from lsm.dbformat import lookup_key
from lsm.sstable import Table
from lsm.version import VersionEdit
from lsm.wal import LogReader

from regions.tablestore import OTSClientError, OTSServiceError

from . import Summary, _cli
from .fuzzkit import forget, mutate, report, seed_rows, snapshot, table_meta
from .fuzzwire import run_wire
from .ioerrors import scratch_dir

__all__ = ["run", "main", "SHARES"]

#: How ``count`` is shared among the parts.
SHARES = {"embedded": 0.3, "wire": 0.4, "parsers": 0.3}


# --------------------------------------------------------------------- embedded

def _strategies(ts):
    """Hypothesis strategies for the API's arguments, valid and not."""
    from hypothesis import strategies as st
    weird_text = st.sampled_from(["", "\ud800", "a\udfff", "x" * 1100, "名", "\x00", "t" * 256, "9t", "t-t"])
    scalar = st.one_of(
        st.integers(min_value=-2 ** 70, max_value=2 ** 70), st.floats(), st.just(math.nan),
        st.just(math.inf), st.text(max_size=8), weird_text, st.binary(max_size=8),
        st.builds(bytearray, st.binary(max_size=8)), st.booleans(), st.none(),
        st.just(ts.INF_MIN), st.just(ts.INF_MAX), st.just(ts.PK_AUTO_INCR), st.just(b"\xff\xfe"),
        st.builds(lambda n: "v" * n, st.sampled_from([1, 2 << 20, (2 << 20) + 1])))
    name = st.one_of(st.sampled_from(["p", "n", "a", "b"]), weird_text, st.integers(), st.none(), st.binary(max_size=4))
    table = st.one_of(st.just("t"), st.just("t"), weird_text, st.text(max_size=6), st.integers(), st.none(),
                      st.just("no_such"))
    good_pk = st.builds(lambda p, n: [("p", p), ("n", n)], st.sampled_from(["p0", "p1", "p9"]), st.integers(0, 30))
    pk = st.one_of(good_pk, good_pk, st.lists(st.tuples(name, scalar), max_size=5), scalar,
                   st.lists(st.tuples(name, scalar, scalar), max_size=3),
                   st.builds(lambda k: [("n", k[0][1]), ("p", k[1][1])], good_pk))
    cell = st.one_of(st.tuples(name, scalar), st.tuples(name, scalar, scalar), st.tuples(name), scalar)
    cells = st.one_of(st.lists(cell, max_size=6), scalar, st.builds(lambda n: [("c%d" % i, i) for i in range(n)],
                                                                    st.sampled_from([1024, 1025, 5000])))
    row = st.builds(ts.Row, pk, cells)
    update_cells = st.one_of(st.dictionaries(st.sampled_from(["PUT", "DELETE", "DELETE_ALL", "INCREMENT", "BAD"]),
                                             st.lists(cell, max_size=4), max_size=3), cells)
    urow = st.builds(ts.Row, pk, update_cells)
    expectation = st.sampled_from([ts.RowExistenceExpectation.IGNORE, ts.RowExistenceExpectation.EXPECT_EXIST,
                                   ts.RowExistenceExpectation.EXPECT_NOT_EXIST, "EXPECT", None, 7])
    condition = st.one_of(st.none(), st.builds(ts.Condition, expectation), scalar,
                          st.builds(lambda e, c: ts.Condition(e, ts.SingleColumnCondition(c[0], c[-1], ts.ComparatorType.EQUAL)),
                                    expectation, st.tuples(name, scalar)))
    limit = st.one_of(st.none(), st.integers(-3, 6000), scalar)
    columns = st.one_of(st.none(), st.lists(name, max_size=4), scalar,
                        st.builds(lambda n: ["c%d" % i for i in range(n)], st.sampled_from([128, 129])))
    n_rows = st.sampled_from([0, 1, 2, 100, 101, 200, 201])
    return dict(scalar=scalar, table=table, pk=pk, row=row, urow=urow, condition=condition, limit=limit,
                columns=columns, n_rows=n_rows, st=st)


def _call(client, ts, s, data):
    """Draw one call and return (name, thunk).  Every draw happens here,
    before the call runs: a draw made while it runs would depend on the
    store's state (a refused start of a transaction skipping the draws of
    its row), and Hypothesis refuses a generation that is not a function of
    its choices (FlakyStrategyDefinition)."""
    st = s["st"]
    d = data.draw
    kind = d(st.sampled_from(["put", "update", "delete", "get", "range", "bget", "bwrite", "txn"]))
    table = d(s["table"])
    if kind == "put":
        row, cond = d(s["row"]), d(s["condition"])
        return kind, lambda: client.put_row(table, row, cond)
    if kind == "update":
        row, cond = d(s["urow"]), d(s["condition"])
        return kind, lambda: client.update_row(table, row, cond)
    if kind == "delete":
        pk, cond = d(s["pk"]), d(s["condition"])
        return kind, lambda: client.delete_row(table, ts.Row(pk), cond)
    if kind == "get":
        pk, columns, limit = d(s["pk"]), d(s["columns"]), d(s["limit"])
        return kind, lambda: client.get_row(table, pk, columns, max_version=limit)
    if kind == "range":
        direction = d(st.sampled_from([ts.Direction.FORWARD, ts.Direction.BACKWARD, "SIDEWAYS", None]))
        args = (d(s["pk"]), d(s["pk"]), d(s["columns"]), d(s["limit"]))
        versions = d(s["limit"])
        return kind, lambda: client.get_range(table, direction, *args, max_version=versions)
    if kind == "bget":
        req = ts.BatchGetRowRequest()
        pks = [d(s["pk"]) for _ in range(min(d(s["n_rows"]), 101))]
        req.add(ts.TableInBatchGetRowItem(table, pks, d(s["columns"]), max_version=d(s["limit"])))
        return kind, lambda: client.batch_get_row(req)
    if kind == "bwrite":
        n = d(s["n_rows"])
        req = ts.BatchWriteRowRequest()
        items = [ts.PutRowItem(ts.Row([("p", "p1"), ("n", i % 30)], [("a", i)]), ts.Condition("IGNORE"))
                 for i in range(n)]
        if items:
            items[d(st.integers(0, n - 1))] = d(st.sampled_from([
                ts.PutRowItem(d(s["row"]), ts.Condition("IGNORE")),
                ts.UpdateRowItem(d(s["urow"]), ts.Condition("IGNORE")),
                ts.DeleteRowItem(ts.Row(d(s["pk"])), ts.Condition("IGNORE"))]))
        req.add(ts.TableInBatchWriteRowItem(table, items))
        return kind, lambda: client.batch_write_row(req)
    key, row = d(s["pk"]), d(s["row"])

    def txn():
        tid = client.start_local_transaction(table, key[:1] if isinstance(key, list) else key)
        try:
            client.put_row(table, row, transaction_id=tid)
            client.commit_transaction(tid)
        except BaseException:
            client.abort_transaction(tid)
            raise
    return kind, txn


#: Examples per Hypothesis run of the embedded part: Hypothesis keeps a record
#: of every example it drew (its data tree), and the valid calls grow the
#: table that each example snapshots, so a long run goes in chunks, each on a
#: fresh table (a 40,000-input run otherwise grew past 19 GB).
EMBEDDED_CHUNK = 500


def _embedded(root, seed, count, summary, deadline):
    import regions.tablestore as ts
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st

    client = ts.OTSClient(os.path.join(root, "embedded"))
    try:
        s = _strategies(ts)
        for chunk, start in enumerate(range(0, count, EMBEDDED_CHUNK)):
            if time.monotonic() > deadline:
                break
            if "t" in client.list_table():
                client.delete_table("t")
            client.create_table(*table_meta(ts, "t"))
            seed_rows(client, ts, "t")
            _embedded_chunk(client, ts, s, seed + chunk, min(EMBEDDED_CHUNK, count - start),
                            summary, given, hseed, settings, st, HealthCheck, Phase)
    finally:
        client.close()


def _embedded_chunk(client, ts, s, seed, count, summary, given, hseed, settings, st,
                    HealthCheck, Phase):
    state = {"before": snapshot(client, ts, "t")}

    @hseed(seed)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data):
        # No time check here: an example that returned before drawing would
        # make Hypothesis stop the run (FlakyStrategyDefinition: the long
        # runs ended so at their time bound); _embedded checks between chunks.
        summary.cycles += 1
        kind = "construction"           # a bad argument may be refused by a class already
        try:
            kind, thunk = _call(client, ts, s, data)
            thunk()
        except (OTSClientError, OTSServiceError) as e:
            error = e
            if isinstance(e, OTSServiceError) and e.http_status >= 500:
                report(summary, "crashes", f"embedded {kind}: {e.http_status} {e.code} {e.message}")
        except Exception as e:  # noqa: BLE001 - the finding
            error = e
            report(summary, "crashes", f"embedded {kind}: {type(e).__name__}: {e}"[:300])
        else:
            state["before"] = snapshot(client, ts, "t")     # it was a valid call: the new state
            return
        after = snapshot(client, ts, "t")
        if after != state["before"]:
            report(summary, "wrong", f"embedded {kind}: a refused call changed rows: "
                    f"{type(error).__name__}: {error}"[:300])
            state["before"] = after
        summary.verified += 1
    one()


# ---------------------------------------------------------------------- parsers

def _real_files(root):
    """A real WAL, table and MANIFEST: {kind: bytes}."""
    path = os.path.join(root, "files")
    db = lsm.DB.open(path, lsm.Options(background=False, block_size=256, compression=True,
                                       compression_min_level=0))
    try:
        for i in range(60):
            db.put(b"key%03d" % i, b"value %d " % i * (1 + i % 5))
        db.flush()
        b = lsm.WriteBatch()
        for i in range(0, 60, 7):
            b.delete(b"key%03d" % i)
            b.put(b"new%03d" % i, b"x" * i)
        db.write(b)
        for i in range(5):
            db.put(b"wal%d" % i, b"y" * 40 * i)
    finally:
        db.close()      # which trims the zeros written ahead of the WAL's end
    names = os.listdir(path)

    def first(kind):
        return next(os.path.join(path, n) for n in sorted(names) if (filenames.parse(n) or ("",))[0] == kind
                    and os.path.getsize(os.path.join(path, n)))
    return {k: open(first(k), "rb").read() for k in ("log", "sst", "manifest")}


def _parse_log(data, _path):
    for _entry in replay(LogReader(data, "<fuzzed log>")):
        pass


def _parse_table(data, path):
    with open(path, "wb") as f:
        f.write(data)
    t = Table.open(OSFileSystem().open_read(path), lsm.Options(), name=path)
    try:
        t.verify()
        it = t.iterator()
        it.seek_to_first()
        while it.valid():
            it.key(), it.value()
            it.next()
        it.seek(lookup_key(b"key030"))      # an internal iterator seeks internal keys
        t.may_contain(b"key030")
    finally:
        t.close()


def _parse_manifest(data, _path):
    for rec in LogReader(data, "<fuzzed manifest>"):
        VersionEdit.decode(rec)


def _parsers(root, seed, count, summary, deadline):
    rng = random.Random(seed)
    files = _real_files(root)
    scratch = os.path.join(root, "fuzzed.sst")
    parsers = (("log", _parse_log), ("sst", _parse_table), ("manifest", _parse_manifest))
    records = [r for r in LogReader(files["manifest"], "m")]
    for i in range(count):
        if time.monotonic() > deadline:
            break
        summary.cycles += 1
        kind, parse = parsers[i % 3]
        data = mutate(rng, files[kind])
        if kind == "manifest" and i % 2:
            data, parse = mutate(rng, rng.choice(records)), lambda d, _p: VersionEdit.decode(d)
        try:
            parse(data, scratch)
        except LSMError:
            pass
        except Exception as e:  # noqa: BLE001 - the finding
            report(summary, "crashes", f"parser {kind}: {type(e).__name__}: {e}"[:300])
            continue
        summary.verified += 1


# -------------------------------------------------------------------------- run

def run(seed=0, count=None, seconds=None, dir=None) -> Summary:
    """``count`` inputs (default 10,000) shared by the three parts, within ``seconds``."""
    count = 10_000 if count is None else count
    summary = Summary("fuzz", seed, "malformed API calls, wire requests, files")
    start = time.monotonic()
    root = scratch_dir(dir)
    quiet = [logging.getLogger(n) for n in ("regions", "lsm", "tablestore", "regions.otsserver")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.CRITICAL)
    try:
        parts = (("embedded", _embedded), ("wire", run_wire), ("parsers", _parsers))
        for n, (name, part) in enumerate(parts):
            share = int(count * SHARES[name])
            budget = None if seconds is None else start + seconds * (n + 1) / len(parts)
            part(root, seed, share, summary, budget if budget is not None else float("inf"))
    finally:
        for q, lv in zip(quiet, levels):
            q.setLevel(lv)
        shutil.rmtree(root, ignore_errors=True)
        forget(summary)
    summary.seconds = time.monotonic() - start
    return summary


def main(argv=None) -> int:
    return _cli.main("fuzz", __doc__, run, argv, "inputs (default 10,000)")
