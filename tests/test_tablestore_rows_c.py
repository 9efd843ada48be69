"""The C twins in regions.tablestore (_rowcodec, _cellcodec, _reads, _writes) agree with their
pure-Python references.

Same random inputs through both: PK codec, head codec, head_cells, pk_size and
the GetRange page loop (rows, next start, bytes read); corrupt input raises
ValueError in both.
"""
import itertools
import re

import pytest
from hypothesis import given, settings, strategies as st

from regions import PUREPYTHON

from regions.tablestore import (INF_MAX, INF_MIN, _cellcodec, _reads, _rowcodec, _writes, cells,
                                pkcodec, reads, writes)
from regions.tablestore.capacity import UNIT, cells_size, pk_size, read_cu, write_cu
from regions.tablestore.errors import OTSServiceError
from regions.tablestore.schema import Schema

import rows_reference as reference

INT = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
PK_TYPES = {"INTEGER": INT, "STRING": st.text(max_size=8),
            "BINARY": st.binary(max_size=8).map(bytearray)}
NAMES = st.text("abcXY_0", min_size=1, max_size=4).filter(lambda n: not n[0].isdigit())
# ``bytes`` values are STRINGs (the SDK's quirk), so they hold UTF-8 here.
VALUES = st.one_of(INT, st.floats(allow_nan=False), st.booleans(), st.text(max_size=12),
                   st.text(max_size=6).map(str.encode), st.binary(max_size=12).map(bytearray))
TS = st.integers(min_value=0, max_value=(1 << 62))
# plain writes' names and values
ATTR_NAMES = st.sampled_from(["a", "b", "col_1", "x" * 40])
PLAIN_VALUES = st.one_of(INT, st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))


#: A test of the client's own C path (its reader, writer, page loop), which
#: LSM_REGIONS_PUREPYTHON turns off; the twins' agreement is tested either way.
client_c_path = pytest.mark.skipif(PUREPYTHON, reason="the client's C path is off "
                                   "(LSM_REGIONS_PUREPYTHON)")


def _pk_schema():
    return st.lists(st.sampled_from(sorted(PK_TYPES)), min_size=1, max_size=4)


@st.composite
def _pk(draw, bounds=False):
    types = draw(_pk_schema())
    values = []
    for t in types:
        strategy = PK_TYPES[t]
        if bounds:
            strategy = st.one_of(strategy, st.sampled_from([INF_MIN, INF_MAX]))
        values.append(draw(strategy))
    return types, values


def _head_cells_list():
    return st.lists(st.tuples(NAMES, VALUES, TS), max_size=6).map(
        lambda cs: sorted(cs, key=lambda c: (c[0], -c[2])))


def test_golden_row_keys_from_the_format():
    assert _rowcodec.encode_pk(["INTEGER"], [0]) == b"\x10\x80" + b"\x00" * 7
    assert _rowcodec.encode_pk(["INTEGER"], [-1]) == b"\x10\x7f" + b"\xff" * 7
    assert _rowcodec.encode_pk(["STRING"], ["a\x00b"]) == b"\x20a\x00\xffb\x00\x01"
    assert _rowcodec.encode_pk(["BINARY", "INTEGER"], [bytearray(b""), INF_MAX]) == \
        b"\x30\x00\x01\xff"
    assert _rowcodec.decode_pk(b"\x20a\x00\xffb\x00\x01\x10\x80" + b"\x00" * 7, 2) == \
        (["a\x00b", 0], 16)


@settings(max_examples=300, deadline=None)
@given(_pk(bounds=True))
def test_pk_codec_matches_the_reference(pk):
    types, values = pk
    key = pkcodec.encode_pk(types, values)
    assert _rowcodec.encode_pk(types, values) == key
    assert _rowcodec.decode_pk(key, len(types)) == pkcodec.decode_pk(key, len(types))
    assert _rowcodec.decode_pk(b"xx" + key, len(types), 2) == pkcodec.decode_pk(b"xx" + key,
                                                                           len(types), 2)


@settings(max_examples=200, deadline=None)
@given(_pk())
def test_pk_size_matches_the_reference(pk):
    types, values = pk
    names = ["k%d" % i for i in range(len(types))]
    assert _rowcodec.pk_size(names, values) == pk_size(zip(names, values))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=1 << 24), st.integers(min_value=0, max_value=1 << 20))
def test_the_c_capacity_units_round_as_capacity_py(size, pk):
    """_rowcodec.read_cu and write_cu (the C reads' and plain writes' CUs)
    are capacity.read_cu and capacity.write_cu of an unconditional write,
    around every 4 KB boundary too."""
    for n in (size, size - size % UNIT, size - size % UNIT + 1, 0, 1, UNIT, UNIT + 1):
        c, py = _rowcodec.read_cu(n), read_cu(n)
        assert (c.read, c.write) == (py.read, py.write)
        c, py = _rowcodec.write_cu(pk + n), write_cu(pk, n, None)
        assert (c.read, c.write) == (py.read, py.write)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=12), max_size=20), st.integers(min_value=1, max_value=300))
def test_the_row_lock_stripes_are_pythons_hash_mod_n(keys, n):
    """_writes.stripe (the one statement of the row-lock rule, in C) is
    ``hash(key) % n`` as Python computes it, and stripe_locks (what every
    batch, C or Python, and a transaction's commit take) is each distinct
    stripe's lock once, in stripe order."""
    locks = [object() for _ in range(n)]
    for key in keys:
        assert _writes.stripe(key, n) == hash(key) % n
    assert _writes.stripe_locks(locks, keys) == [locks[i] for i in sorted({hash(k) % n
                                                                           for k in keys})]


@pytest.mark.parametrize("key", [b"\x42", b"\x10\x80", b"\x20abc", b"\x20a\x00\x02", b""])
def test_corrupt_row_keys_raise_value_error_in_both(key):
    with pytest.raises(ValueError):
        pkcodec.decode_pk(key, 1)
    with pytest.raises(ValueError):
        _rowcodec.decode_pk(key, 1)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=(1 << 64) - 1), _head_cells_list(),
       st.integers(min_value=1, max_value=4))
def test_head_codec_and_head_cells_match_the_reference(gen, cell_list, keep):
    head = cells.encode_head(gen, cell_list)
    assert _cellcodec.encode_head(gen, cell_list) == head
    assert _cellcodec.decode_head(head) == cells.decode_head(head)
    assert _cellcodec.head_cells(head, keep) == reference.head_cells(head, keep)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=(1 << 64) - 1),
       st.lists(st.tuples(NAMES, VALUES, st.one_of(st.none(), TS)), max_size=6), TS)
def test_put_head_and_cells_size_match_the_reference(gen, cell_list, now):
    # any order, repeated names and (name, ts) pairs: the C path or its fallback
    assert _cellcodec.put_head(gen, cell_list, now) == cells.put_head(gen, cell_list, now)
    assert _cellcodec.cells_size(cell_list) == cells_size(cell_list)
    assert _cellcodec.cells_size([(n, None) for n, _, _ in cell_list]) == \
        cells_size([(n, None) for n, _, _ in cell_list])


@settings(max_examples=300, deadline=None)
@given(INT.map(lambda g: g & ((1 << 64) - 1)), TS,
       st.lists(st.tuples(st.one_of(NAMES, st.text("aé€𝄞", min_size=1, max_size=3)),
                          st.one_of(INT, st.floats(allow_nan=False), st.text(max_size=12),
                                    st.text("xé€𝄞", max_size=5))), max_size=6),
       st.booleans())
def test_an_unstamped_head_once_stamped_is_put_heads(gen, now, columns, as_lists):
    """A plain batch's heads (_cellcodec._unstamped_head, encoded from the
    row's (name, value) columns before the locks; _stamp_head under them):
    put_head's bytes for the cells (name, value, None), names in any order,
    repeated or not, ASCII or not."""
    pairs = [list(c) for c in columns] if as_lists else columns
    head = _cellcodec.unstamped_head(pairs)
    assert _cellcodec.stamped(head, gen, now) == cells.put_head(gen, [(n, v, None) for n, v in columns], now)
    assert head == cells.put_head(0, [(n, v, None) for n, v in columns], 0)


def test_put_head_golden_bytes_from_the_format():
    head = _cellcodec.put_head(5, [("b", 1.5, None), ("a", True, 7)], 9)
    assert head == (b"\x01" + (5).to_bytes(8, "little")
                    + b"\x01a" + (7).to_bytes(8, "little") + b"\x02\x01"
                    + b"\x01b" + (9).to_bytes(8, "little")
                    + b"\x01" + bytes.fromhex("000000000000f83f"))  # 1.5 = 0x3FF8 << 48


def test_column_names_are_decoded_once_and_right_whatever_shares_their_slot():
    """Column names come from a cache of 256 slots keyed by a hash of their
    bytes: a name read again is the same str object, and 1,000 names (so
    that many share slots, UTF-8 of several widths) each read as written."""
    names = ["col_%d" % i for i in range(700)] + ["名前%d" % i for i in range(200)] + \
        ["\U0001F600x%d" % i for i in range(100)]
    heads = [cells.encode_head(1, [(n, i, 5)]) for i, n in enumerate(names)]
    for _ in range(2):
        got = [_cellcodec.decode_head(h)[1][0][0] for h in heads]
        assert got == names
    h = cells.encode_head(1, [("user_name", 1, 5), ("email", 2, 5)])
    first, again = _cellcodec.decode_head(h)[1], _cellcodec.decode_head(h)[1]
    assert [c[0] for c in first] == ["user_name", "email"]
    assert first[0][0] is again[0][0] and first[1][0] is again[1][0]


def test_head_cells_of_deleted_and_empty_heads():
    deleted = cells.encode_deleted_head(7)
    assert _cellcodec.head_cells(deleted, 1) == reference.head_cells(deleted, 1) == (None, 0)
    # A PutRow with no attribute column: the row exists and holds only its key.
    empty = cells.encode_head(7, [])
    assert _cellcodec.head_cells(empty, 1) == reference.head_cells(empty, 1) == ([], 0)
    assert _cellcodec.decode_head(cells.encode_deleted_head(7)) == (7, None)


@pytest.mark.parametrize("head", [b"\x01\x00", cells.encode_head(1, [("a", 1, 5)])[:-3],
                                  b"\x01" + b"\x00" * 8 + b"\x01a" + b"\x00" * 8 + b"\x09"])
def test_corrupt_heads_raise_in_both(head):
    with pytest.raises(Exception):
        cells.decode_head(head)
    with pytest.raises(ValueError):
        _cellcodec.decode_head(head)


# -- the GetRange page loop ---------------------------------------------------
@st.composite
def _stored_rows(draw):
    """Entries of a few rows in key order: heads, DELETED heads, and deltas
    (PUT, DELETE_ONE, DELETE_ALL, EXISTS) older or newer than the head."""
    ids = sorted(draw(st.sets(st.integers(-50, 50), min_size=0, max_size=12)))
    entries = []
    for i in ids:
        row_key = pkcodec.encode_pk(["INTEGER", "STRING"], [i, "r%d" % i])
        head_gen = 1000
        shape = draw(st.sampled_from(["head", "head", "deleted", "deltas", "both"]))
        head_ts = []
        if shape in ("head", "both"):
            head_cells = draw(_head_cells_list())
            head_ts = [ts for _, _, ts in head_cells]
            entries.append((cells.head_key(row_key), cells.encode_head(head_gen, head_cells)))
        elif shape == "deleted":
            entries.append((cells.head_key(row_key), cells.encode_deleted_head(head_gen)))
        if shape in ("deltas", "both", "deleted"):
            gens = draw(st.sets(st.integers(990, 1010), min_size=1, max_size=4))
            for gen in gens:
                name = draw(NAMES)
                op = draw(st.sampled_from(["put", "put", "delete_one", "delete_all",
                                           "exists"]))
                if op == "exists":
                    entries.append((cells.exists_key(row_key, gen), cells.EXISTS_VALUE))
                    continue
                ts = draw(st.one_of(TS, st.sampled_from(head_ts or [5])))
                value = {"put": lambda: cells.encode_put_delta(ts, draw(VALUES)),
                         "delete_one": lambda: cells.encode_delete_one(ts),
                         "delete_all": cells.encode_delete_all}[op]()
                entries.append((cells.delta_key(row_key, name, gen), value))
    entries.sort()
    return entries


def _page_callbacks(schema, keep, calls):
    """A page's ``slow`` and ``live`` (as OTSClient._range_page's, at time 0
    with no TTL), each call recorded in ``calls``."""
    def slow(row_key, values, group):
        calls.append(("slow", row_key, list(values), list(group)))
        head, deltas = cells.split_entries(len(row_key), group)
        return reads.assemble(schema, values, len(row_key), head, deltas, 0, None, keep,
                              None, None)

    def live(row_key, group):
        calls.append(("live", row_key, list(group)))
        head, deltas = cells.split_entries(len(row_key), group)
        return reads.visible(len(row_key), head, deltas, -1, schema.max_versions,
                             0) is not None
    return slow, live


@settings(max_examples=300, deadline=None)
@given(_stored_rows(), st.booleans(), st.booleans(), st.integers(1, 3), st.integers(1, 6),
       st.integers(1, 400), st.integers(1, 3))
def test_range_page_matches_the_reference(entries, reverse, fast, keep, max_rows, max_bytes,
                                          max_versions):
    schema = Schema(["id", "s"], ["INTEGER", "STRING"], None, max_versions=max_versions)
    calls = {"c": [], "py": []}

    def callbacks(tag):
        return _page_callbacks(schema, keep, calls[tag])

    if reverse:
        entries = entries[::-1]
    args = (2, schema.names, fast, keep, max_rows, max_bytes)
    got = _reads.RangePage(*args, *callbacks("c")).run(iter(entries))
    want = reference.range_page(iter(entries), *args, *callbacks("py"))
    assert got == want
    assert calls["c"] == calls["py"]


_SCAN_TABLES = itertools.count()


@pytest.fixture(scope="module")
def region_server():
    import lsm
    import regions
    opts = regions.ServerOptions(memtable_bytes=4096, background_workers=0,
                                 split_policy=regions.DisabledSplitPolicy(),
                                 lsm_options=lsm.Options(block_size=256, background=False))
    with regions.RegionServer.open(None, opts) as server:
        yield server


@client_c_path
@settings(max_examples=150, deadline=None)
@given(_stored_rows(), st.booleans(), st.booleans(), st.integers(1, 3), st.integers(1, 6),
       st.integers(1, 400), st.data())
def test_range_page_scan_reads_as_run_over_the_servers_scan(region_server, entries, reverse, fast,
                                                            keep, max_rows, max_bytes, data):
    """``RangePage.scan`` (the server's C scan handing each entry in place,
    regions/_api.pxd ``range_scan_into``) against ``run`` of the server's
    ``scan``: the same page, the same callbacks, the same region reads
    counted, on a table pre-split anywhere, its rows in memtables or files,
    read whole or from bounds in either direction."""
    server = region_server
    schema = Schema(["id", "s"], ["INTEGER", "STRING"], None, max_versions=2)
    keys = sorted({k for k, _ in entries})
    splits = sorted(set(data.draw(st.lists(st.sampled_from(keys), max_size=3)))) if keys else []
    table = "scan%d" % next(_SCAN_TABLES)
    server.create_table(table, split_keys=[k for k in splits if k])
    if entries:
        server.write(table, list(entries))
    if data.draw(st.booleans()):
        server.flush_all()
    bound = st.one_of(st.none(), st.sampled_from(keys or [b"\x01"]), st.binary(max_size=3))
    lo, hi = data.draw(bound) or b"", data.draw(bound)
    calls = {"c": [], "py": []}

    def callbacks(tag):
        return _page_callbacks(schema, keep, calls[tag])

    def region_reads():
        return [r.reads for r in server._table(table).layout[1]]

    args = (2, schema.names, fast, keep, max_rows, max_bytes)
    before = region_reads()
    got = _reads.RangePage(*args, *callbacks("c")).scan(server, table, lo, hi, reverse,
                                                       max_rows + 2)
    middle = region_reads()
    want = _reads.RangePage(*args, *callbacks("py")).run(
        server.scan(table, lo, hi, reverse=reverse, expect=max_rows + 2))
    assert got == want
    assert calls["c"] == calls["py"]
    assert [b - a for a, b in zip(before, middle)] == [
        b - a for a, b in zip(middle, region_reads())]
    server.delete_table(table)


def test_range_page_cuts_at_max_rows_and_names_the_next_start():
    keys = [pkcodec.encode_pk(["INTEGER"], [i]) for i in range(5)]
    entries = [(cells.head_key(k), cells.encode_head(1, [("a", i, 9)]))
               for i, k in enumerate(keys)]
    page = _reads.RangePage(1, ["id"], True, 1, 3, 1 << 20, None, lambda k, g: True)
    rows, next_values, read_bytes = page.run(iter(entries))
    assert [r.primary_key for r in rows] == [[("id", 0)], [("id", 1)], [("id", 2)]]
    assert [r.attribute_columns for r in rows] == [[("a", i, 9)] for i in range(3)]
    assert next_values == [3]
    assert read_bytes == 3 * (2 + 8 + 1 + 8)  # "id" + INTEGER, "a" + INTEGER per row


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMES, VALUES, st.one_of(st.none(), TS)), min_size=1, max_size=6),
       st.integers(1, 4), st.integers(1, 4), TS)
def test_head_cells_is_what_assemble_returns_for_a_head_read_whole(cell_list, max_version,
                                                                   max_versions, now):
    """The GetRow/GetRange fast path (whole_read): a row that is one PutRow head."""
    schema = Schema(["id"], ["INTEGER"], None, max_versions=max_versions)
    assert reads.whole_read(schema, None, None, None)
    row_key = pkcodec.encode_pk(["INTEGER"], [1])
    head = _cellcodec.put_head(9, cell_list, now)
    parts, size, exists = reads.assemble(schema, [1], len(row_key), head, [], now, None,
                                         max_version, None, None)
    assert exists
    got, got_size = _cellcodec.head_cells(head, min(max_version, max_versions))
    assert got == parts[1]
    assert got_size == size


@settings(max_examples=300, deadline=None)
@given(_stored_rows(), st.integers(1, 4), st.integers(1, 4))
def test_row_cells_is_what_assemble_returns_for_any_row_read_whole(entries, max_version,
                                                                   max_versions):
    """GetRow/GetRange read whole: heads, DELETED heads and deltas, masked and trimmed."""
    schema = Schema(["id", "s"], ["INTEGER", "STRING"], None, max_versions=max_versions)
    keep = min(max_version, max_versions)
    for row_key, values, group in reference.group_rows(iter(entries), 2):
        head, deltas = cells.split_entries(len(row_key), group)
        parts, size, exists = reads.assemble(schema, values, len(row_key), head, deltas, 0,
                                             None, max_version, None, None)
        assert exists == (parts is not None)  # read whole: an existing row is returned
        want = (parts[1], size) if parts else (None, 0)
        assert reference.row_cells(len(row_key), group, keep) == want
        assert _cellcodec.row_cells(len(row_key), group, keep) == want


def test_the_c_layout_declares_the_bytes_pkcodec_and_cells_own():
    """ext/regions/tablestore/_layout.pxd against the Python owners of the formats."""
    expected = {
        "TAG_INF_MIN": pkcodec.TAG_INF_MIN, "TAG_INTEGER": pkcodec.TAG_INTEGER,
        "TAG_STRING": pkcodec.TAG_STRING, "TAG_BINARY": pkcodec.TAG_BINARY,
        "TAG_INF_MAX": pkcodec.TAG_INF_MAX, "PK_END": pkcodec._TERM[1],
        "PK_ESCAPED": pkcodec._ESCAPED_ZERO[1],
        "ROW_HEAD": cells.HEAD[0], "ROW_DELTA": cells.DELTA[0], "ROW_END": cells.ROW_END[0],
        "KIND_PUT": cells.KIND_PUT, "KIND_DELETED": cells.KIND_DELETED,
        "D_PUT": cells.D_PUT, "D_DELETE_ONE": cells.D_DELETE_ONE,
        "D_DELETE_ALL": cells.D_DELETE_ALL, "D_EXISTS": cells.D_EXISTS,
        "T_INTEGER": cells.T_INTEGER, "T_DOUBLE": cells.T_DOUBLE, "T_BOOLEAN": cells.T_BOOLEAN,
        "T_STRING": cells.T_STRING, "T_BINARY": cells.T_BINARY,
    }
    assert _rowcodec.LAYOUT == expected


# -- RowReader: get_row of a whole row by a plain key ------------------------
def _slow_get(client, table, pk):
    """OTSClient._get, the Python path RowReader is the twin of."""
    from regions.tablestore.validate import check_pk
    name, schema = client._schema(table)
    return client._get(name, schema, check_pk(schema, pk), None, 1, None, None)


def _same(a, b):
    assert (a[0].read, a[0].write, a[2]) == (b[0].read, b[0].write, b[2])
    assert (a[1] is None) == (b[1] is None)
    if a[1] is not None:
        assert (a[1].primary_key, a[1].attribute_columns) == (b[1].primary_key, b[1].attribute_columns)


@client_c_path
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "update", "delete", "increment"]),
                          st.integers(0, 7), st.sampled_from(["a", "b", "c", "d"]),
                          st.one_of(INT, st.text(max_size=30),
                                    st.floats(allow_nan=False, allow_infinity=False))),
                min_size=1, max_size=40),
       st.sampled_from([1, 3]), st.integers(-1, 40))
def test_row_reader_is_the_python_get_on_rows_with_deltas_and_deletes(ops, max_versions, flush_at):
    from regions.tablestore import (OTSClient, Row, TableMeta, TableOptions, Condition,
                                    RowExistenceExpectation, RowDataItem)
    client = OTSClient(":memory:")
    try:
        client.create_table(TableMeta("t", [("k", "INTEGER"), ("s", "STRING")]),
                            TableOptions(max_version=max_versions))
        ignore = Condition(RowExistenceExpectation.IGNORE)
        for n, (kind, i, col, value) in enumerate(ops):
            if n == flush_at:       # rows part in tables, part in the memtable
                client._server.flush_all()
            pk = [("k", i), ("s", "r%d" % i)]
            if kind == "put":
                client.put_row("t", Row(pk, [(col, value)]), ignore)
            elif kind == "update":
                gone = "c" if col == "d" else "d"
                client.update_row("t", Row(pk, {"put": [(col, value)], "delete_all": [gone]}), ignore)
            elif kind == "delete":
                client.delete_row("t", Row(pk), ignore)
            else:
                try:
                    client.update_row("t", Row(pk, {"increment": [("n", 1)]}), ignore)
                except Exception:
                    pass            # a non-integer cell "n" is refused by both paths alike
        for i in range(9):
            pk = [("k", i), ("s", "r%d" % i)]
            fast = client._row_reader.get("t", pk)
            assert fast is not None
            _same(fast, _slow_get(client, "t", pk))
            _same(fast, client.get_row("t", pk))
            _same(fast, client.get_row("t", tuple(pk), columns_to_get=None, max_version=1))
            # BatchGetRow's item: what RowDataItem.__init__ makes of the Python path's result
            slow = _slow_get(client, "t", pk)
            expect = RowDataItem(True, None, None, "t", slow[0],
                                 slow[1].primary_key if slow[1] else None,
                                 slow[1].attribute_columns if slow[1] else None)
            got = client._row_reader.item("t", pk, "t")
            assert list(vars(got)) == list(vars(expect)) and repr(got) == repr(expect)
    finally:
        client.close()


@client_c_path
def test_row_reader_leaves_every_read_that_is_not_plain_to_the_python_path():
    from regions.tablestore import OTSClient, Row, TableMeta, TableOptions
    client = OTSClient(":memory:")
    try:
        client.create_table(TableMeta("t", [("k", "INTEGER"), ("s", "STRING")]))
        client.create_table(TableMeta("ttl", [("k", "INTEGER")]), TableOptions(time_to_live=86400))
        client.create_table(TableMeta("bin", [("k", "BINARY")]))
        client.put_row("t", Row([("k", 1), ("s", "x")], [("a", 1)]))
        reader = client._row_reader
        assert reader.get("t", [("k", 1), ("s", "x")])[1].attribute_columns[0][:2] == ("a", 1)
        for table, pk in [
                (b"t", [("k", 1), ("s", "x")]),            # a bytes table name
                ("nope", [("k", 1), ("s", "x")]),          # no such table: the Python error
                ("ttl", [("k", 1)]),                       # a TTL: cells may have expired
                ("bin", [("k", bytearray(b"x"))]),         # a BINARY key
                ("t", [("k", 1)]),                         # too few columns
                ("t", [("k", True), ("s", "x")]),          # a bool is not an INTEGER
                ("t", [("k", 1 << 63), ("s", "x")]),       # beyond int64
                ("t", [("k", 1), ("s", "é")]),             # not ASCII: the full check
                ("t", [("k", 1), ("s", "x" * 257)]),       # long: the full check
                ("t", [("k", 1), ("s", b"x")]),            # bytes for a STRING
                ("t", [("s", "x"), ("k", 1)]),             # names out of order
                ("t", [["k", 1], ("s", "x")]),             # a list, not a tuple
                ("t", "k=1"),                              # not a list
        ]:
            assert reader.get(table, pk) is None, (table, pk)
        with pytest.raises(Exception) as e:
            client.get_row("nope", [("k", 1), ("s", "x")])
        assert "OTSObjectNotExist" in str(e.value) or "not exist" in str(e.value)
        with pytest.raises(Exception):
            client.get_row("t", [("k", 1 << 63), ("s", "x")])
    finally:
        client.close()
    # a closed client's reads take the Python path (and its error)
    assert client._row_reader.get("t", [("k", 1), ("s", "x")]) is None


# -- RowReader.batch_request: a BatchGetRow of plain keys whole ------------------
def _get_request(*tables, **read):
    """A BatchGetRowRequest of ``(table, keys)`` pairs, ``max_version=1`` and ``read``."""
    from regions.tablestore import BatchGetRowRequest, TableInBatchGetRowItem
    req = BatchGetRowRequest()
    for table, keys in tables:
        req.add(TableInBatchGetRowItem(table, keys, **dict({"max_version": 1}, **read)))
    return req


def _python_answer(client, req):
    """``client.batch_get_row(req)`` by its Python path alone (the C reader off):
    the response's repr, or the exception's type and text."""
    saved, client._row_reader = client._row_reader, reads.row_reader({}, None)
    try:
        return _answer(client, req)
    finally:
        client._row_reader = saved


def _answer(client, req):
    try:
        return repr(client.batch_get_row(req))
    except Exception as e:
        return type(e), str(e)


class _CountingServer:
    """A region server whose reads are counted (``reads``), passed through."""

    def __init__(self, server):
        self.server, self.reads = server, 0

    def read_ranges(self, table, ranges):
        self.reads += 1
        return self.server.read_ranges(table, ranges)


def _two_tables(client):
    from regions.tablestore import TableMeta
    client.create_table(TableMeta("t", [("k", "INTEGER"), ("s", "STRING")]))
    client.create_table(TableMeta("u", [("id", "INTEGER")]))


@client_c_path
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "update", "delete"]), st.integers(0, 7),
                          st.sampled_from(["a", "b"]), PLAIN_VALUES), max_size=30),
       st.lists(st.integers(0, 9), max_size=50), st.lists(st.integers(0, 9), max_size=50),
       st.integers(-1, 30))
def test_a_plain_batch_get_is_read_whole_in_c_as_the_python_path_reads_it(ops, t_keys, u_keys,
                                                                        flush_at):
    """RowReader.batch_request (the client's first try) answers a request of
    plain keys, over several tables, repeated and missing keys included, with
    the response the client's Python path gives, the GC left as it was."""
    import gc
    from regions.tablestore import OTSClient, Row, Condition, RowExistenceExpectation
    ignore = Condition(RowExistenceExpectation.IGNORE)
    with OTSClient(":memory:") as client:
        _two_tables(client)
        for n, (kind, i, col, value) in enumerate(ops):
            if n == flush_at:
                client._server.flush_all()
            for table, pk in (("t", [("k", i), ("s", "r%d" % i)]), ("u", [("id", i)])):
                if kind == "put":
                    client.put_row(table, Row(pk, [(col, value)]), ignore)
                elif kind == "update":
                    client.update_row(table, Row(pk, {"put": [(col, value)]}), ignore)
                else:
                    client.delete_row(table, Row(pk), ignore)
        req = _get_request(("t", [[("k", i), ("s", "r%d" % i)] for i in t_keys]),
                           ("u", [(("id", i),) for i in u_keys]))
        got = client._row_reader.batch_request(req)
        assert got is not None and gc.isenabled()
        assert repr(got) == _python_answer(client, req) == _answer(client, req)
        assert not any(gc.is_tracked(x) for rows in got.items.values() for it in rows
                       for x in (it, it.consumed) + ((it.row, it.row.primary_key,
                                                      *it.row.primary_key,
                                                      it.row.attribute_columns)
                                                     if it.row else ()))


@client_c_path
def test_a_batch_get_the_c_path_declines_gets_the_python_paths_answer_having_read_nothing():
    """Every request RowReader.batch_request does not take whole it declines
    before reading any row, and the client answers it, or raises, exactly as
    its Python path does: another class, no tables, a table name not
    checked yet or not a str, no such table, a TTL, an item of another
    class or with any read argument but max_version=1, keys not in a list,
    more than BATCH_GET_ROWS keys, a key that is not plain (in any table)."""
    import gc
    from regions.tablestore import (OTSClient, Row, TableMeta, TableOptions, BatchGetRowRequest,
                                    TableInBatchGetRowItem, ColumnPaginationFilter,
                                    SingleColumnCondition, ComparatorType)
    from regions.tablestore.validate import BATCH_GET_ROWS, GOOD_NAMES
    with OTSClient(":memory:") as client:
        _two_tables(client)
        client.create_table(TableMeta("ttl", [("k", "INTEGER")]), TableOptions(time_to_live=86400))
        client.create_table(TableMeta("bin", [("k", "BINARY")]))
        for i in range(3):
            client.put_row("t", Row([("k", i), ("s", "x")], [("a", i)]))
            client.put_row("u", Row([("id", i)], [("a", i)]))
        t_keys = [[("k", i), ("s", "x")] for i in range(3)]
        u_keys = [[("id", i)] for i in range(3)]

        def variant(change, *tables):
            req = _get_request(*(tables or (("t", list(t_keys)), ("u", list(u_keys)))))
            change(req)
            return req
        subclass = type("Sub", (BatchGetRowRequest,), {})()
        subclass.add(TableInBatchGetRowItem("t", t_keys, max_version=1))
        item_subclass = type("SubItem", (TableInBatchGetRowItem,), {})
        declined = [
            None, subclass, _get_request(("t", t_keys)).items["t"],
            variant(lambda r: r.items.clear()),
            variant(lambda r: setattr(r, "items", list(r.items.items()))),
            variant(lambda r: r.items.update({"never_checked_name": r.items.pop("u")})),
            variant(lambda r: r.items.update({b"u": r.items.pop("u")})),
            variant(lambda r: None, ("t", t_keys), ("nope", u_keys)),
            variant(lambda r: None, ("ttl", [[("k", 1)]])),
            variant(lambda r: None, ("bin", [[("k", bytearray(b"x"))]])),
            variant(lambda r: r.items.update({"u": item_subclass("u", u_keys, max_version=1)})),
            variant(lambda r: setattr(r.items["u"], "primary_keys", tuple(u_keys))),
            variant(lambda r: delattr(r.items["u"], "token")),
            variant(lambda r: delattr(r.items["u"], "primary_keys")),
            _get_request(("t", [[("k", i), ("s", "x")] for i in range(BATCH_GET_ROWS + 1)])),
            _get_request(("t", [[("k", i), ("s", "x")] for i in range(BATCH_GET_ROWS)]),
                         ("u", [[("id", 1)]])),
        ]
        for read in [{"max_version": True}, {"max_version": 2}, {"max_version": 1.0},
                     {"max_version": None, "time_range": (0, 1 << 62)}, {"time_range": 5},
                     {"columns_to_get": []}, {"columns_to_get": ["a"]},
                     {"column_filter": SingleColumnCondition("a", 1, ComparatorType.EQUAL)},
                     {"column_filter": ColumnPaginationFilter(0, 1)}, {"start_column": "a"},
                     {"end_column": "b"}, {"token": b"x"}]:
            declined.append(_get_request(("t", t_keys), ("u", u_keys), **read))
        for bad in ([("id", True)], [("id", 1 << 63)], [("id", "1")], [["id", 1]], "id=1",
                    [("id", 1), ("id", 2)], [("ID", 1)], [], None):
            declined.append(_get_request(("t", t_keys), ("u", u_keys + [bad])))
        for req in declined:
            counting = _CountingServer(client._server)
            assert _reads.RowReader(client._schemas, counting).batch_request(req) is None, req
            assert counting.reads == 0 and gc.isenabled()
            assert client._row_reader.batch_request(req) is None
            python = _python_answer(client, req)
            assert _answer(client, req) == python, req
        # a table's name the memo of checked names forgot (it is cleared when
        # full) is checked again by the Python path, then taken
        GOOD_NAMES["table"].discard("u")
        req = _get_request(("u", u_keys))
        assert client._row_reader.batch_request(req) is None
        assert _answer(client, req) == _python_answer(client, req)
        assert repr(client._row_reader.batch_request(req)) == _python_answer(client, req)
        # a table with no keys is no reason to decline (its result: no items)
        req = _get_request(("t", []), ("u", u_keys))
        assert repr(client._row_reader.batch_request(req)) == _python_answer(client, req)
    # a closed client's requests take the Python path (and its error)
    assert client._row_reader.batch_request(_get_request(("t", t_keys))) is None


# -- plain_put: writes.prepare of a plain PutRow ------------------------------
def _python_put(schema, primary_key, columns):
    """What writes.prepare's Python checks make of a PutRow (plain_put's twin)."""
    from regions.tablestore.validate import check_pk, check_put_columns
    values = check_pk(schema, primary_key, "put")
    cell_list = check_put_columns(schema, columns, 0)
    return (values, pkcodec.encode_pk(schema.types, values), cell_list,
            pk_size(list(zip(schema.names, values))), cells_size(cell_list))



@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["INTEGER", "STRING"]), min_size=1, max_size=3).flatmap(
           lambda types: st.tuples(st.just(types), st.tuples(*[
               INT if t == "INTEGER" else st.text("abc\x00z", max_size=8) for t in types]))),
       st.lists(st.tuples(ATTR_NAMES, PLAIN_VALUES), max_size=6))
def test_plain_put_matches_the_python_checks(pk, columns):
    types, values = pk
    schema = Schema(["k%d" % i for i in range(len(types))], types, None, -1, 1, 86400, None, [])
    primary_key = list(zip(schema.names, values))
    expect = _python_put(schema, primary_key, columns)      # also makes the names known
    assert _writes.plain_put(schema, primary_key, columns) == expect
    assert _writes.plain_put(schema, tuple(primary_key), tuple(list(c) for c in columns)) == expect


def test_plain_put_leaves_everything_not_plain_to_the_python_checks():
    schema = Schema(["k"], ["INTEGER"], None, -1, 1, 86400, None, [])
    pk = [("k", 1)]
    _python_put(schema, pk, [("a", 1)])
    assert _writes.plain_put(schema, pk, [("a", 1)]) == ([1], pkcodec.encode_pk(["INTEGER"], [1]),
                                                       [("a", 1, None)], 9, 9)
    from regions.tablestore.validate import check_name
    check_name("seen_as_a_table_only", "table")
    for columns in ([("never_checked_name", 1)],            # a name not seen valid yet
                    [("seen_as_a_table_only", 1)],          # not seen valid as an attribute
                    [("k", 1)],                             # a key column's name
                    [("a", True)], [("a", b"x")], [("a", bytearray(b"x"))],
                    [("a", float("nan"))], [("a", float("inf"))], [("a", 1 << 63)],
                    [("a", "x" * ((512 << 10) + 1))],       # long: the byte count decides
                    [("a", 1, 1000)],                       # a timestamp: the range check
                    [("a",)], ["a"], "a", None):
        assert _writes.plain_put(schema, pk, columns) is None, columns
    for key in ([("k", True)], [("k", 1 << 63)], [("k", 1), ("j", 2)], [], "k"):
        assert _writes.plain_put(schema, key, [("a", 1)]) is None, key
    wide = [("w%d" % i, i) for i in range(1025)]
    _python_put(schema, pk, wide[:1024])                   # 1,024 columns: plain
    assert _writes.plain_put(schema, pk, wide[:1024]) == _python_put(schema, pk, wide[:1024])
    assert _writes.plain_put(schema, pk, wide) is None       # 1,025: the service's error
    big = [("a", "x" * (512 << 10)), ("b", "y" * (512 << 10))] * 4    # 4 MiB of attributes
    _python_put(schema, pk, [("a", 1), ("b", 1)])
    assert _writes.plain_put(schema, pk, big) is None        # over the row limit: the service's error


def _python_update(schema, primary_key, update):
    """What writes.prepare's Python checks make of an UpdateRow (plain_update's twin)."""
    from regions.tablestore.validate import check_pk, check_update_columns
    values = check_pk(schema, primary_key)
    ops = check_update_columns(schema, update, 0)
    return (values, pkcodec.encode_pk(schema.types, values), ops,
            pk_size(list(zip(schema.names, values))), cells_size([(c[1], c[2]) for c in ops]))


@settings(max_examples=200, deadline=None)
@given(INT, st.dictionaries(ATTR_NAMES, PLAIN_VALUES, min_size=1, max_size=4),
       st.sampled_from(["put", "PUT"]))
def test_plain_update_matches_the_python_checks(k, columns, key):
    schema = Schema(["k"], ["INTEGER"], None, -1, 1, 86400, None, [])
    update = {key: list(columns.items())}
    expect = _python_update(schema, [("k", k)], update)      # also makes the names known
    assert _writes.plain_update(schema, [("k", k)], update) == expect


def test_plain_update_leaves_everything_but_plain_puts_to_the_python_checks():
    schema = Schema(["k"], ["INTEGER"], None, -1, 1, 86400, None, [])
    pk = [("k", 1)]
    _python_update(schema, pk, {"put": [("a", 1), ("b", 2)]})
    assert _writes.plain_update(schema, pk, {"put": [("a", 1)]})[2] == [("PUT", "a", 1, None)]
    for update in ({"put": [("a", 1), ("a", 2)]},              # a repeated column: the rules decide
                   {"put": [("a", 1)], "delete_all": ["b"]},   # other operations
                   {"increment": [("a", 1)]}, {"Put": [("a", 1)]}, {"put": []},
                   {"put": [["a", 1]]}, {"put": [("a", 1, 1000)]}, {"put": [("a", None)]},
                   {"put": [("a", True)]}, {"put": [("k", 1)]}, [("a", 1)], {}):
        assert _writes.plain_update(schema, pk, update) is None, update
    wide = {"put": [("w%d" % i, i) for i in range(1025)]}
    with pytest.raises(OTSServiceError, match="column count: 1025"):
        _python_update(schema, pk, wide)                    # the service's error ...
    assert _writes.plain_update(schema, pk, wide) is None   # ... so not plain
    wide["put"].pop()
    assert _writes.plain_update(schema, pk, wide) == _python_update(schema, pk, wide)


def test_an_update_expecting_no_row_is_checked_after_the_plain_path():
    """A plain update (the C path's checks) with EXPECT_NOT_EXIST still has
    its condition checked: a missing row is made, a row that is there fails
    and keeps its columns."""
    from regions.tablestore import (OTSClient, Row, TableMeta, Condition, RowExistenceExpectation,
                                    OTSServiceError)
    expect_none = Condition(RowExistenceExpectation.EXPECT_NOT_EXIST)
    with OTSClient(":memory:") as client:
        client.create_table(TableMeta("t", [("k", "INTEGER")]))
        client.update_row("t", Row([("k", 1)], {"put": [("a", 1)]}), expect_none)
        with pytest.raises(OTSServiceError) as e:
            client.update_row("t", Row([("k", 1)], {"put": [("a", 2)]}), expect_none)
        assert e.value.code == "OTSConditionCheckFail"
        assert [c[:2] for c in client.get_row("t", [("k", 1)])[1].attribute_columns] == [("a", 1)]


@client_c_path
def test_a_range_page_pauses_the_gc_only_while_it_is_built():
    import gc
    from regions.tablestore import OTSClient, Row, TableMeta, INF_MIN, INF_MAX
    with OTSClient(":memory:") as client:
        client.create_table(TableMeta("t", [("k", "INTEGER")]))
        for i in range(50):
            client.put_row("t", Row([("k", i)], [("a", i), ("s", "x" * i)]))
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            try:
                _, _, rows, _ = client.get_range("t", "FORWARD", [("k", INF_MIN)], [("k", INF_MAX)])
                assert gc.isenabled() is enabled
            finally:
                gc.enable()
            assert [r.primary_key for r in rows] == [[("k", i)] for i in range(50)]
            # rows hold no container but their own: the GC need not watch them
            assert not any(gc.is_tracked(c) for r in rows for c in r.attribute_columns + r.primary_key)
            assert not any(gc.is_tracked(x) for r in rows
                           for x in (r, r.attribute_columns, r.primary_key))
    page = _reads.RangePage(1, ["k"], True, 1, 10, 1 << 20, None, None)
    with pytest.raises(ValueError):                 # a corrupt row key: the state is restored
        page.run([(b"\x07garbage", b"\x00" * 9)])
    assert gc.isenabled()


@client_c_path
def test_read_results_are_untracked_and_still_freed():
    """GetRow, BatchGetRow and BatchWriteRow results (items, rows, their lists,
    CUs) are not tracked by the cyclic GC, a batch read leaves the GC as it
    found it, and the results are freed when dropped, by reference counting."""
    import gc
    import weakref
    from regions.tablestore import (OTSClient, Row, TableMeta, BatchGetRowRequest,
                                    BatchWriteRowRequest, PutRowItem,
                                    TableInBatchGetRowItem, TableInBatchWriteRowItem)
    with OTSClient(":memory:") as client:
        client.create_table(TableMeta("t", [("k", "INTEGER")]))
        for i in range(5):
            client.put_row("t", Row([("k", i)], [("a", i)]))
        consumed, row, _ = client.get_row("t", [("k", 1)])
        assert row.attribute_columns[0][:2] == ("a", 1)
        assert not any(gc.is_tracked(x) for x in (consumed, row, row.primary_key,
                                                   row.attribute_columns))
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            try:
                req = BatchGetRowRequest()
                req.add(TableInBatchGetRowItem("t", [[("k", i)] for i in range(7)], max_version=1))
                items = client.batch_get_row(req).get_result_by_table("t")
                assert gc.isenabled() is enabled
            finally:
                gc.enable()
        assert [it.row.primary_key if it.row else None for it in items] == \
            [[("k", i)] for i in range(5)] + [None, None]
        assert not any(gc.is_tracked(x) for it in items[:5]
                       for x in (it, it.consumed, it.row, it.row.primary_key,
                                 it.row.attribute_columns))
        assert not any(gc.is_tracked(x) for it in items[5:] for x in (it, it.consumed))
        refs = [weakref.ref(it.row) for it in items[:5]] + [weakref.ref(items[0])]
        del items
        assert all(r() is None for r in refs)
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            try:
                req = BatchWriteRowRequest()
                req.add(TableInBatchWriteRowItem("t", [PutRowItem(Row([("k", 9)], [("a", 9)]),
                                                                  None)]))
                (done,) = client.batch_write_row(req).get_put()[0]
                assert gc.isenabled() is enabled        # paused only while the batch ran
            finally:
                gc.enable()
            assert done.is_ok and not gc.is_tracked(done) and not gc.is_tracked(done.consumed)


@client_c_path
def test_the_benchs_result_floor_builds_what_the_reads_return():
    """_reads.result_rows (bench/test_bench_rows.py's floor) builds the rows
    and BatchGetRow items the client returns for the same rows, as untracked."""
    import gc
    import time
    from regions.tablestore import (OTSClient, Row, TableMeta, BatchGetRowRequest,
                                    TableInBatchGetRowItem)
    raw, stamp = "x" * 7, int(time.time() * 1000) - 10    # within the table's time deviation
    with OTSClient(":memory:") as client:
        client.create_table(TableMeta("t", [("id", "INTEGER")]))
        for i in range(4):
            client.put_row("t", Row([("id", i)], [("a", i, stamp + i), ("b", raw, stamp + i),
                                                  ("c", 1.5, stamp + i)]))
        _, _, rows, _ = client.get_range("t", "FORWARD", [("id", INF_MIN)], [("id", INF_MAX)])
        req = BatchGetRowRequest()
        req.add(TableInBatchGetRowItem("t", [[("id", i)] for i in (3, 1)], max_version=1))
        items = client.batch_get_row(req).get_result_by_table("t")
    floor = _reads.result_rows("id", ("a", "b", "c"), range(4), raw.encode(), 1.5, stamp)
    assert floor == rows
    floor_items = _reads.result_rows("id", ("a", "b", "c"), [3, 1], raw.encode(), 1.5, stamp, "t")
    assert floor_items == items
    assert not any(gc.is_tracked(x) for it in floor_items
                   for x in (it, it.consumed, it.row, it.row.primary_key,
                             it.row.attribute_columns, *it.row.attribute_columns))


# -- PlainWriter: put_row of a plain row in one C call ---------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.text("abc", max_size=3),
                          st.lists(st.tuples(ATTR_NAMES, PLAIN_VALUES), max_size=4)),
                min_size=1, max_size=15),
       st.sampled_from(["none", "ignore", "rt_none"]))
def test_plain_writer_stores_what_the_python_path_stores(puts, how):
    """The same puts through put_row (the C path where plain) and through the
    Python path (RowWriter.prepare_row + run_prepared) leave the same rows and answer the
    same capacity units."""
    from regions.tablestore import (OTSClient, Row, TableMeta, Condition, ReturnType,
                                    RowExistenceExpectation, INF_MIN, INF_MAX)
    condition = None if how == "none" else Condition(RowExistenceExpectation.IGNORE)
    rt = ReturnType.RT_NONE if how == "rt_none" else None
    with OTSClient(":memory:") as fast, OTSClient(":memory:") as slow:
        for c in (fast, slow):
            c.create_table(TableMeta("t", [("k", "INTEGER"), ("s", "STRING")]))
        for k, s, columns in puts:
            row = Row([("k", k), ("s", s)], columns)
            try:
                expect = slow._writer.run_prepared(slow._writer.prepare_row("put", "t", row, condition, rt))
            except Exception as e:
                with pytest.raises(type(e)):
                    fast.put_row("t", row, condition, rt)
                continue
            assert fast.put_row("t", row, condition, rt) == expect
        ranges = [c.get_range("t", "FORWARD", [("k", INF_MIN), ("s", INF_MIN)],
                              [("k", INF_MAX), ("s", INF_MAX)], max_version=1)
                  for c in (fast, slow)]
        strip = lambda rows: [(r.primary_key, [a[:2] for a in r.attribute_columns]) for r in rows]
        assert strip(ranges[0][2]) == strip(ranges[1][2])


@client_c_path
def test_plain_writer_leaves_every_put_that_is_not_plain_to_the_python_path():
    from regions.tablestore import (OTSClient, Row, TableMeta, Condition, ReturnType,
                                    RowExistenceExpectation, SingleColumnCondition,
                                    ComparatorType, OTSServiceError)
    with OTSClient(":memory:") as client:
        client.create_table(TableMeta("t", [("k", "INTEGER")]))
        client.put_row("t", Row([("k", 0)], [("a", 1)]))      # makes "a" a known name
        writer = client._writer.c_path
        row = Row([("k", 1)], [("a", 1)])
        assert writer.put("t", row, None, None) is not None
        for args in [
                (b"t", row, None, None),                                   # bytes table name
                ("nope", row, None, None),                                 # no such table
                ("t", Row([("k", 1)], [("a", 1, 5)]), None, None),         # a timestamp
                ("t", Row([("k", True)], [("a", 1)]), None, None),         # not plain key
                ("t", Row([("k", 1)], [("unseen", 1)]), None, None),       # a name not checked yet
                ("t", row, Condition(RowExistenceExpectation.EXPECT_EXIST), None),
                ("t", row, Condition(RowExistenceExpectation.IGNORE,
                                     SingleColumnCondition("a", 1, ComparatorType.EQUAL)), None),
                ("t", row, None, ReturnType.RT_PK),
                ("t", "not a row", None, None)]:
            assert writer.put(*args) is None, args
        # what the Python path does with them is unchanged
        with pytest.raises(OTSServiceError) as e:
            client.put_row("t", Row([("k", 9)], [("a", 1)]),
                           Condition(RowExistenceExpectation.EXPECT_EXIST))
        assert e.value.code == "OTSConditionCheckFail"
        assert client.put_row("t", row, None, ReturnType.RT_PK)[1].primary_key == [("k", 1)]
        # a partition held by a local transaction refuses the plain path's write too
        txn = client.start_local_transaction("t", [("k", 5)])
        with pytest.raises(OTSServiceError) as e:
            client.put_row("t", Row([("k", 5)], [("a", 2)]))
        assert e.value.code == "OTSRowOperationConflict"
        client.put_row("t", Row([("k", 5)], [("a", 3)]), transaction_id=txn)
        assert client.get_row("t", [("k", 5)])[1] is None          # not committed yet
        client.commit_transaction(txn)
        assert client.get_row("t", [("k", 5)])[1].attribute_columns[0][:2] == ("a", 3)
    assert client._writer.c_path is None                           # closed: the Python path


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=12), st.text(max_size=8), st.integers(0, (1 << 64) - 1),
       INT, PLAIN_VALUES)
def test_delta_encoders_match_cells(row_key, name, gen, ts, value):
    assert _cellcodec.delta_key(row_key, name, gen) == cells.delta_key(row_key, name, gen)
    assert _cellcodec.delta_key(row_key, "", gen) == cells.exists_key(row_key, gen)
    assert _cellcodec.put_delta(ts, value) == cells.encode_put_delta(ts, value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "update"]), st.integers(0, 4),
                          st.dictionaries(ATTR_NAMES, PLAIN_VALUES, min_size=1, max_size=3)),
                min_size=1, max_size=15))
def test_plain_writer_updates_store_what_the_python_path_stores(ops):
    """UpdateRows that only put, through update_row (the C path where plain)
    and through the Python path, mixed with puts: same rows, same answers."""
    from regions.tablestore import (OTSClient, Row, TableMeta, TableOptions, Condition,
                                    RowExistenceExpectation)
    ignore = Condition(RowExistenceExpectation.IGNORE)
    with OTSClient(":memory:") as fast, OTSClient(":memory:") as slow:
        for c in (fast, slow):
            c.create_table(TableMeta("t", [("k", "INTEGER")]), TableOptions(max_version=3))
        for kind, k, columns in ops:
            cols = list(columns.items())
            row = Row([("k", k)], cols if kind == "put" else {"put": cols})
            expect = slow._writer.run_prepared(slow._writer.prepare_row(kind, "t", row, ignore, None))
            got = (fast.put_row if kind == "put" else fast.update_row)("t", row, ignore)
            assert got == expect
        for k in range(5):
            # the newest versions: older ones depend on which writes shared a millisecond
            a, b = (c.get_row("t", [("k", k)])[1] for c in (fast, slow))
            assert (a is None) == (b is None)
            if a is not None:
                assert [x[:2] for x in a.attribute_columns] == [x[:2] for x in b.attribute_columns]


@client_c_path
def test_a_plain_update_writes_the_keys_the_python_update_writes():
    """The rule of an UpdateRow's entries, written once in each language
    (PlainWriter._write, RowWriter._update_ops), held together: the same
    keys in the same order of generations, the EXISTS delta first, then one
    PUT delta a column in the request's order."""
    import itertools
    from regions.tablestore import (OTSClient, Row, TableMeta, Condition,
                                    RowExistenceExpectation)
    ignore = Condition(RowExistenceExpectation.IGNORE)
    row_key = pkcodec.encode_pk(["INTEGER"], [1])
    with OTSClient(":memory:") as fast, OTSClient(":memory:") as slow:
        for c in (fast, slow):
            c.create_table(TableMeta("t", [("k", "INTEGER")]))
            c.put_row("t", Row([("k", 0)], [("a", 0), ("b", 0), ("c", 0)]))   # names known
            c._writer.gens.next = itertools.count(1000).__next__
        row = Row([("k", 1)], {"put": [("b", 1), ("a", "x"), ("c", 2.5)]})
        assert fast._writer.c_path.update("t", row, ignore, None) is not None  # the C path
        slow._writer.run_prepared(slow._writer.prepare_row("update", "t", row, ignore, None))
        fast_keys, slow_keys = ([k for k, _ in c._server.scan("t", row_key)] for c in (fast, slow))
        assert fast_keys == slow_keys
        assert set(fast_keys) == {
            cells.exists_key(row_key, 1000), cells.delta_key(row_key, "b", 1001),
            cells.delta_key(row_key, "a", 1002), cells.delta_key(row_key, "c", 1003)}


# -- PlainWriter.put_row / update_row: the client's PutRow and UpdateRow whole ---------
_TXN = object()         # a case's transaction id: the client's own open transaction


def _outcome(call):
    """What a client's write answers: ("ok", CU, return row) or ("raised", type, text)."""
    try:
        cu, row = call()
    except Exception as e:          # noqa: BLE001 -- compared, not handled
        return ("raised", type(e), str(e))
    return ("ok", (cu.read, cu.write), repr(row))


@client_c_path
def test_the_client_entries_decline_every_call_the_python_path_might_refuse():
    """PlainWriter.put_row and update_row (OTSClient.put_row and update_row's
    first try) take a call only as plainly as the client's Python path would
    write it: a table name that is not a plain table's (bytes, unknown,
    invalid, an index's, a table with a stream), a transaction id, return
    column names, a condition, a return type, a wrong type anywhere, a key
    of too many columns, a row over the size limit, an update that does more
    than put: each is declined before anything is written, and the client
    then answers it exactly as a client without the C path does (the same
    answer, or the same exception with the same text)."""
    from regions.tablestore import (OTSClient, Row, TableMeta, Condition, ReturnType,
                                    RowExistenceExpectation, SingleColumnCondition,
                                    ComparatorType, SecondaryIndexMeta, INF_MIN, INF_MAX)
    from regions.tablestore.streams import StreamSpecification
    from regions.tablestore.validate import MAX_ROW_WRITE_BYTES, SHORT_VALUE_STR
    # a row of 8 columns "w0".."w7" exactly at the row limit (key: 1 + 8 bytes), and one byte over
    edge = [("w%d" % i, "x" * SHORT_VALUE_STR) for i in range(8)]
    edge[7] = ("w7", "x" * (MAX_ROW_WRITE_BYTES - 9 - 16 - 7 * SHORT_VALUE_STR))
    over = edge[:7] + [("w7", edge[7][1] + "x")]
    ignore = Condition(RowExistenceExpectation.IGNORE)
    conditions = [Condition(RowExistenceExpectation.EXPECT_EXIST),
                  Condition(RowExistenceExpectation.EXPECT_NOT_EXIST),
                  Condition(RowExistenceExpectation.IGNORE,
                            SingleColumnCondition("a", 1, ComparatorType.EQUAL)),
                  RowExistenceExpectation.IGNORE, "IGNORE"]
    columns = [[("a", None)], [("a", b"x")], [("a", bytearray(b"x"))], [("a", True)],
               [("a", 1, 1000)], [("a", float("nan"))], [("a", 1 << 63)],
               [("never_seen_by_the_c_entry", 1)],
               [("1x", 1)], [("k", 1)], [("a",)], "a", [("w%d" % i, i) for i in range(1025)],
               over]
    declined = []       # (kind, (table, row, condition, return_type, transaction_id, names))
    for kind in ("put", "update"):
        def row_of(cols, k=3, pk=None, cls=Row):
            return cls([("k", k)] if pk is None else pk, cols if kind == "put" else {"put": cols})
        plain = row_of([("a", 1)])
        declined += [(kind, (name, plain, None, None, None, None))
                     for name in (b"t", "nope", "1bad", "", None, 7, "ix_by_a", "st")]
        declined += [(kind, ("t", row_of([("a", 1)], 30), None, None, _TXN, None)),
                     (kind, ("t", plain, None, None, "no-such-transaction", None)),
                     (kind, ("t", plain, None, None, None, ["a"])),
                     (kind, ("t", plain, None, ReturnType.RT_NONE, None, [])),
                     (kind, ("t", row_of([("a", 1)], 4), None, ReturnType.RT_PK, None, None)),
                     (kind, ("t", plain, None, ReturnType.RT_AFTER_MODIFY, None, None)),
                     (kind, ("t", plain, None, "RT_PK", None, None))]
        declined += [(kind, ("t", plain, c, None, None, None)) for c in conditions]
        declined += [(kind, ("t", r, None, None, None, None)) for r in [
            "not a row", row_of([("a", 1)], pk="k=1"), row_of([("a", 1)], True),
            row_of([("a", 1)], 1 << 63), row_of([("a", 1)], pk=[("k", 1), ("j", 2)]),
            row_of([("a", 1)], pk=[("k%d" % i, i) for i in range(5)]),    # pk_count
            row_of([("a", 1)], pk=[]), row_of([("a", 1)], pk=[["k", 1]]),
            row_of([("a", 1)], pk=("k", 1)), row_of([("a", 1)], cls=type("SubRow", (Row,), {}))]]
        declined += [(kind, ("t", row_of(cols), ignore, None, None, None)) for cols in columns]
    for update in ({"put": [("a", 1), ("a", 2)]}, {"delete_all": ["a"]}, {"delete": [("a", 5)]},
                   {"increment": [("n", 1)]}, {"put": [("a", 1)], "delete_all": ["b"]},
                   {"put": []}, {"Put": [("a", 1)]}, {}, [("a", 1)], {"put": (("a", 1),)}):
        declined.append(("update", ("t", Row([("k", 5)], update), None, None, None, None)))
    declined.append(("put", ("t", Row([("k", 5)], {"put": [("a", 1)]}), None, None, None, None)))
    taken = [("put", ("t", Row([("k", 6)], edge), None, None, None, None)),
             ("update", ("t", Row([("k", 8)], {"put": edge}), ignore, ReturnType.RT_NONE,
                         None, None)),
             ("put", ("ix", Row([("k", 1)], [("a", 5)]), None, None, None, None)),
             ("update", ("ix", Row([("k", 2)], {"PUT": [("a", 6)]}), None, None, None, None)),
             ("put", ("t", Row(([("k", 9)]), (("a", 2), ["b", "y"])), ignore, None, None, None))]
    # taken, and refused under the row lock: a partition a transaction holds
    refused = [(kind, ("t", Row([("k", 30)], cols), None, None, None, None))
               for kind, cols in (("put", [("a", 1)]), ("update", {"put": [("a", 1)]}))]

    def args_of(client, args):
        return tuple(txns[id(client)] if a is _TXN else a for a in args)

    def stored(client):
        return [list(client._server.scan(t)) for t in ("t", "ix", "st")]

    with OTSClient(":memory:") as fast, OTSClient(":memory:") as slow:
        slow._writer.stop_c_path()
        for c in (fast, slow):
            c.create_table(TableMeta("t", [("k", "INTEGER")]))
            c.create_table(TableMeta("ix", [("k", "INTEGER")], defined_columns=[("a", "INTEGER")]),
                           secondary_indexes=[SecondaryIndexMeta("ix_by_a", ["a"], [])])
            c.create_table(TableMeta("st", [("k", "INTEGER")]),
                           stream_spec=StreamSpecification(True, 24))
            c.put_row("t", Row([("k", 0)], [("a", 0), ("b", 0)] + [(n, 0) for n, _ in edge]))
        txns = {id(c): c.start_local_transaction("t", [("k", 30)]) for c in (fast, slow)}
        writer = fast._writer.c_path
        before = stored(fast)
        for kind, args in declined:
            entry = writer.put_row if kind == "put" else writer.update_row
            assert entry(*args_of(fast, args)) is None, (kind, args)
        assert stored(fast) == before               # declined: nothing written
        for kind, args in taken:
            entry = writer.put_row if kind == "put" else writer.update_row
            assert entry(*args_of(fast, args)) is not None, (kind, args)
        for kind, args in declined + taken + refused:
            method = "put_row" if kind == "put" else "update_row"
            a, b = (_outcome(lambda: getattr(c, method)(*args_of(c, args))) for c in (fast, slow))
            assert a == b, (kind, args)
        assert a[:2] == ("raised", OTSServiceError) and "OTSRowOperationConflict" in a[2]
        for c in (fast, slow):
            c.commit_transaction(txns[id(c)])
            assert c.wait_for_indexes("ix")

        def newest(client, table):
            names = client._schemas[table].names
            start, out = [(n, INF_MIN) for n in names], []
            while start:
                _, start, got, _ = client.get_range(table, "FORWARD", start,
                                                    [(n, INF_MAX) for n in names], max_version=1)
                out += [(r.primary_key, [x[:2] for x in r.attribute_columns]) for r in got]
            return out
        for table in ("t", "ix", "ix_by_a", "st"):
            assert newest(fast, table) == newest(slow, table), table
    # a closed client's writes all take the Python path
    assert fast._writer.write_plain_put("t", Row([("k", 1)], [("a", 1)]), None, None, None,
                                        None) is None
    assert fast._writer.on(None).write_plain_update is writes._declined


@client_c_path
def test_the_client_entries_admit_an_indexed_table_once_and_close_its_feed_entry():
    """An indexed table's plain write through PlainWriter.put_row and
    update_row: admitted once (``indexer.admit``, as the client admits it),
    after the row is checked, before its lock and its write; declined,
    nothing written, when the table's schema changed while it waited; its
    feed entry closed (``after_write``) whether the write landed or not, as
    RowWriter.run closes it.  A table without indexes is not admitted."""
    import threading
    from regions.tablestore import Row, cells as cells_mod
    from regions.tablestore.schema import Schema
    from regions.tablestore.validate import check_name
    check_name("a", "attribute")
    calls, written = [], []
    hook = [lambda: None]

    class Indexer:
        tables = {"t": object()}

        def admit(self, table):
            calls.append(("admit", table, list(written)))
            hook[0]()

        def before_write(self, table, keys, entries=None):
            calls.append(("before", table, keys))
            return ["feed"]

        def after_write(self, table, keys, feed, landed=None):
            calls.append(("after", table, keys, feed, landed))

    class Server:
        fail = False

        def put(self, table, key, value):
            if self.fail:
                raise IOError("disk gone")
            written.append((table, key))

        def write(self, table, pairs):
            if self.fail:
                raise IOError("disk gone")
            written.append((table, pairs[0][0]))

    schema = Schema(["k"], ["INTEGER"], None, -1, 1, 86400, None, [])
    schemas = {"t": schema, "u": schema}
    txns = type("NoTxn", (), {"held": {}})()
    server = Server()
    w = _writes.PlainWriter(schemas, server, [threading.Lock()], cells_mod.Generations(), txns,
                            Indexer(), writes.failed_item, writes.write_failed)
    row_key = pkcodec.encode_pk(["INTEGER"], [1])
    put, update = Row([("k", 1)], [("a", 1)]), Row([("k", 1)], {"put": [("a", 1)]})
    for entry, row in ((w.put_row, put), (w.update_row, update)):
        del calls[:], written[:]
        assert entry("t", row, None, None, None, None) is not None
        assert calls == [("admit", "t", []), ("before", "t", [row_key]),
                         ("after", "t", [row_key], ["feed"], None)]
        assert written and written[0][1].startswith(row_key)
        del calls[:], written[:]
        assert entry("u", row, None, None, None, None) is not None
        assert calls == [] and len(written) == 1              # no indexes: no admission
        server.fail = True
        del calls[:], written[:]
        with pytest.raises(IOError):
            entry("t", row, None, None, None, None)
        assert calls[-1] == ("after", "t", [row_key], ["feed"], ())
        server.fail = False
        other = Schema(["k"], ["INTEGER"], None, -1, 1, 86400, None, [])
        hook[0] = lambda: schemas.__setitem__("t", other)   # altered while the write waited
        del calls[:], written[:]
        assert entry("t", row, None, None, None, None) is None
        assert calls == [("admit", "t", [])] and written == []
        hook[0] = lambda: None
        schemas["t"] = schema
        del calls[:]
        assert w.put("t", put, None, None) is not None      # write_row's entry: no admission
        assert [c[0] for c in calls] == ["before", "after"]


def _batch_of(rows, condition=None):
    from regions.tablestore import (BatchWriteRowRequest, PutRowItem, Row,
                                    TableInBatchWriteRowItem)
    req = BatchWriteRowRequest()
    req.add(TableInBatchWriteRowItem("t", [PutRowItem(Row(pk, cols), condition)
                                           for pk, cols in rows]))
    return req


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.lists(st.tuples(ATTR_NAMES, PLAIN_VALUES),
                                                       max_size=3)),
                min_size=1, max_size=40),
       st.integers(-1, 5))
def test_plain_writer_batches_store_what_the_python_path_stores(rows, locked):
    """BatchWriteRow of plain puts through the C path and through the Python
    path (a client without it): same results item by item, same rows; a
    partition held by a transaction refuses its rows alone in both."""
    from regions.tablestore import OTSClient, Row, TableMeta, INF_MIN, INF_MAX
    with OTSClient(":memory:") as fast, OTSClient(":memory:") as slow:
        slow._writer.stop_c_path()
        for c in (fast, slow):
            c.create_table(TableMeta("t", [("k", "INTEGER")]))
            c.put_row("t", Row([("k", 0)], [("a", 1), ("b", 1), ("col_1", 1), ("x" * 40, 1)]))
            if locked >= 0:
                c.start_local_transaction("t", [("k", locked)])
        req = _batch_of([([("k", k)], cols) for k, cols in rows])
        try:
            expect = slow.batch_write_row(req)
        except Exception as e:
            with pytest.raises(type(e)):
                fast.batch_write_row(req)
            return
        got = fast.batch_write_row(req)
        assert repr(got.get_put()) == repr(expect.get_put())
        for table_of in ("table_of_put", "table_of_update", "table_of_delete"):
            assert repr(getattr(got, table_of)) == repr(getattr(expect, table_of))
        assert [item.index for item in got.get_put_by_table("t")] == list(range(len(rows)))
        a, b = (c.get_range("t", "FORWARD", [("k", INF_MIN)], [("k", INF_MAX)])[2]
                for c in (fast, slow))
        assert [(r.primary_key, [x[:2] for x in r.attribute_columns]) for r in a] == \
            [(r.primary_key, [x[:2] for x in r.attribute_columns]) for r in b]


@client_c_path
def test_the_c_and_python_batches_agree_on_the_4mb_limit():
    """PlainWriter.batch and writes.data_size, twins, at the limit: ten plain
    rows (2 + 98 of key, 50 of name, no timestamp: a cell's CU size) of
    4,194,304 bytes are taken by both, one byte more is refused by both (the
    C path declines it, before writing anything, and the Python path raises)."""
    from regions.tablestore import OTSClient, Row, TableMeta
    from regions.tablestore.validate import BATCH_WRITE_BYTES

    def rows(extra):
        sizes = [419281] * 4 + [419280] * 6        # 10 x 150 + these = 4,194,304
        sizes[0] += extra
        return [([("pk", "v" * 96 + "%02d" % i)], [("k" * 50, "a" * n)])
                for i, n in enumerate(sizes)]
    with OTSClient(":memory:") as fast, OTSClient(":memory:") as slow:
        slow._writer.stop_c_path()
        for c in (fast, slow):
            c.create_table(TableMeta("t", [("pk", "STRING")]))
            c.put_row("t", Row([("pk", "x")], [("k" * 50, 1)]))     # the name known
        assert fast._writer.c_path.batch(_batch_of(rows(0)).items, BATCH_WRITE_BYTES) is not None
        assert fast._writer.c_path.batch(_batch_of(rows(1)).items, BATCH_WRITE_BYTES) is None
        assert slow.batch_write_row(_batch_of(rows(0))).is_all_succeed()
        for c in (fast, slow):
            with pytest.raises(OTSServiceError, match="data size: 4194305[.]"):
                c.batch_write_row(_batch_of(rows(1)))


@client_c_path
def test_plain_writer_batch_leaves_what_is_not_plain_and_reports_a_failed_write():
    import threading
    from regions.tablestore import (OTSClient, TableMeta, Condition, RowExistenceExpectation,
                                    BatchWriteRowRequest, UpdateRowItem, Row,
                                    TableInBatchWriteRowItem, cells as cells_mod)
    with OTSClient(":memory:") as client:
        client.create_table(TableMeta("t", [("k", "INTEGER")]))
        client.put_row("t", Row([("k", 0)], [("a", 1)]))
        writer = client._writer.c_path
        plain = _batch_of([([("k", 1)], [("a", 1)]), ([("k", 2)], [("a", 2)])])
        assert writer.batch(plain.items, 4 << 20) is not None
        repeated = _batch_of([([("k", 1)], [("a", 1)]), ([("k", 1)], [("a", 2)])])
        conditional = _batch_of([([("k", 1)], [("a", 1)])],
                                Condition(RowExistenceExpectation.EXPECT_EXIST))
        update = BatchWriteRowRequest()
        update.add(TableInBatchWriteRowItem("t", [UpdateRowItem(Row([("k", 1)], {"put": [("a", 1)]}),
                                                                None)]))
        naming = _batch_of([([("k", 1)], [("a", 1)])])       # return column names: refused
        naming.items["t"].row_items[0].return_column_names = ["a"]
        for req in (repeated, conditional, update, _batch_of([([("k", True)], [("a", 1)])]),
                    _batch_of([([("k", 1)], [("a", 1, 99)])]), naming):
            assert writer.batch(req.items, 4 << 20) is None
        assert writer.batch(plain.items, 10) is None          # over the size limit: Python says so
        # the last row of repeated wins, as the Python path writes it
        assert client.batch_write_row(repeated).get_put()[0][1].is_ok
        assert client.get_row("t", [("k", 1)])[1].attribute_columns[0][:2] == ("a", 2)

    class Failing:
        """A region server whose write applies the first row's head, then fails."""
        def write(self, table, pairs):
            e = IOError("disk gone")
            e.applied_keys = frozenset([pairs[0][0]])
            raise e
    from regions.tablestore.schema import Schema
    schema = Schema(["k"], ["INTEGER"], None, -1, 1, 86400, None, [])
    txns = type("NoTxn", (), {"held": {}})()
    w = _writes.PlainWriter({"t": schema}, Failing(), [threading.Lock()], cells_mod.Generations(),
                            txns, None, writes.failed_item, writes.write_failed)
    got = w.batch(_batch_of([([("k", 1)], [("a", 1)]), ([("k", 2)], [("a", 2)])]).items, 4 << 20)
    first, second = got["t"]
    assert (first.index, second.index) == (0, 1)
    assert first.is_ok and first.consumed.write == 1
    assert not second.is_ok and second.error_code == "OTSInternalServerError"


@client_c_path
def test_plain_writer_takes_a_request_only_as_plainly_as_the_client_checks_it():
    """PlainWriter.batch_request (the client's first try) answers what the
    client answers for a request of plain puts, and leaves to the client's
    checks every request they might refuse: another class, a transaction,
    an atomic batch, no tables, a table name not checked yet, a table
    without rows (or not a list of them), more than BATCH_WRITE_ROWS rows."""
    import gc
    from regions.tablestore import (OTSClient, Row, TableMeta, BatchWriteRowRequest,
                                    TableInBatchWriteRowItem, PutRowItem)
    from regions.tablestore.validate import BATCH_WRITE_ROWS
    with OTSClient(":memory:") as fast, OTSClient(":memory:") as slow:
        slow._writer.stop_c_path()
        for c in (fast, slow):
            c.create_table(TableMeta("t", [("k", "INTEGER")]))
            c.put_row("t", Row([("k", 0)], [("a", 1)]))
        writer = fast._writer.c_path
        plain = _batch_of([([("k", i)], [("a", i)]) for i in range(1, 4)])
        got = writer.batch_request(plain)
        assert gc.isenabled()
        assert repr(got.table_of_put) == repr(slow.batch_write_row(plain).table_of_put)
        assert (got.table_of_update, got.table_of_delete) == ({"t": []}, {"t": []})

        def variant(change):
            req = _batch_of([([("k", 1)], [("a", 1)])])
            change(req)
            return req
        subclass = type("Sub", (BatchWriteRowRequest,), {})()
        subclass.add(TableInBatchWriteRowItem("t", [PutRowItem(Row([("k", 1)], [("a", 1)]), None)]))
        declined = [
            subclass, plain.items["t"],
            variant(lambda r: r.set_transaction_id("txn")),
            variant(lambda r: r.set_atomic(True)),
            variant(lambda r: r.items.clear()),
            variant(lambda r: r.items.update({"unchecked": r.items.pop("t")})),
            variant(lambda r: setattr(r.items["t"], "row_items", [])),
            variant(lambda r: setattr(r.items["t"], "row_items", tuple(r.items["t"].row_items))),
            _batch_of([([("k", i)], [("a", i)]) for i in range(BATCH_WRITE_ROWS + 1)]),
            _batch_of([([("k", 1)], [("a", 1)]), ([("k", 1)], [("a", 2)])])]
        for req in declined:
            assert writer.batch_request(req) is None
        assert gc.isenabled()
        for req in declined[2:]:             # and the client answers as its Python path does
            try:
                expect = repr(slow.batch_write_row(req).table_of_put)
            except Exception as e:
                with pytest.raises(type(e), match=re.escape(str(e))):
                    fast.batch_write_row(req)
                continue
            assert repr(fast.batch_write_row(req).table_of_put) == expect


@client_c_path
def test_a_plain_batch_admits_a_table_with_indexes_once_before_it_writes():
    from regions.tablestore import OTSClient, Row, TableMeta, SecondaryIndexMeta
    with OTSClient(":memory:") as client:
        client.create_table(TableMeta("t", [("k", "INTEGER")], defined_columns=[("a", "INTEGER")]),
                            secondary_indexes=[SecondaryIndexMeta("by_a", ["a"], [])])
        client.put_row("t", Row([("k", 0)], [("a", 0)]))
        calls = []
        admit = client._indexer.admit
        client._indexer.admit = lambda table: calls.append((table, client.get_row(
            "t", [("k", 1)])[1])) or admit(table)
        req = _batch_of([([("k", 1)], [("a", 5)]), ([("k", 2)], [("a", 6)])])
        assert client._writer.c_path.batch_request(req).is_all_succeed()
        assert calls == [("t", None)]                  # once, before the rows were written
        assert client.get_row("t", [("k", 2)])[1].attribute_columns[0][:2] == ("a", 6)


@client_c_path
def test_a_plain_batch_whose_rows_grow_while_they_are_checked_is_declined():
    """The C plan sizes its arrays by the rows it was given; a list that grows
    meanwhile (a condition's ``__eq__`` is the one Python code its checks
    can run) is declined, not overrun."""
    from regions.tablestore import (OTSClient, Row, TableMeta, Condition, PutRowItem,
                                    RowExistenceExpectation)

    class Growing:
        def __eq__(self, other):
            if len(rows) < 50:
                rows.append(PutRowItem(Row([("k", 100 + len(rows))], [("a", 1)]), None))
            return other is RowExistenceExpectation.IGNORE
    with OTSClient(":memory:") as client:
        client.create_table(TableMeta("t", [("k", "INTEGER")]))
        client.put_row("t", Row([("k", 0)], [("a", 1)]))
        req = _batch_of([([("k", i)], [("a", i)]) for i in range(1, 4)])
        rows = req.items["t"].row_items
        condition = Condition(RowExistenceExpectation.IGNORE)
        condition.row_existence_expectation = Growing()
        rows[0].condition = condition
        assert client._writer.c_path.batch(req.items, 4 << 20) is None
        assert len(rows) > 3


def test_the_c_clock_of_cell_versions_reads_what_cells_now_ms_reads():
    """_cellcodec.now_ms (what the C writers stamp cells with) against
    cells.now_ms, read around it: the same wall clock in whole milliseconds
    (1 ms either way for time.time's float rounding)."""
    for _ in range(2000):
        before = cells.now_ms()
        got = _cellcodec.now_ms()
        after = cells.now_ms()
        assert type(got) is int and before - 1 <= got <= after + 1
