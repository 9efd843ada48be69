"""The order-preserving PK codec: golden bytes, round trips, order == typed tuple order."""
from hypothesis import given, settings, strategies as st

from regions.tablestore import INF_MAX, INF_MIN
from regions.tablestore import _rowcodec
from regions.tablestore.pkcodec import (decode_partition_value, decode_pk, encode_pk,
                                        partition_prefix_len, row_key_len)

INT = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
TYPES = {"INTEGER": INT, "STRING": st.text(max_size=12), "BINARY": st.binary(max_size=12)}
SCHEMAS = st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=4)


def _typed(types):
    return st.tuples(*[TYPES[t] for t in types])


def _sort_key(types, values):
    return tuple(v.encode("utf-8") if t == "STRING" else v for t, v in zip(types, values))


def test_golden_bytes_derived_from_the_format():
    assert encode_pk(["INTEGER"], [0]) == b"\x10\x80" + b"\x00" * 7
    assert encode_pk(["INTEGER"], [-1]) == b"\x10\x7f" + b"\xff" * 7
    assert encode_pk(["STRING"], ["a\x00b"]) == b"\x20a\x00\xffb\x00\x01"
    assert encode_pk(["BINARY", "INTEGER"], [bytearray(b""), INF_MAX]) == b"\x30\x00\x01\xff"
    assert encode_pk(["STRING"], [INF_MIN]) == b"\x00"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_byte_order_equals_typed_tuple_order_and_round_trips(data):
    types = data.draw(SCHEMAS)
    a = data.draw(_typed(types))
    b = data.draw(_typed(types))
    ea, eb = encode_pk(types, a), encode_pk(types, b)
    ka, kb = _sort_key(types, a), _sort_key(types, b)
    assert (ea < eb) == (ka < kb) and (ea == eb) == (ka == kb)
    values, end = decode_pk(ea, len(types))
    assert end == len(ea)
    assert [bytes(v) if t == "BINARY" else v for t, v in zip(types, values)] == list(a)
    assert ea[:partition_prefix_len(ea)] == encode_pk(types[:1], a[:1])
    first = decode_partition_value(ea)
    assert (bytes(first) if types[0] == "BINARY" else first) == a[0]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_inf_bounds_enclose_every_row_in_any_column(data):
    types = data.draw(SCHEMAS)
    row = data.draw(_typed(types))
    i = data.draw(st.integers(0, len(types) - 1))
    low = list(row[:i]) + [INF_MIN] * (len(types) - i)
    high = list(row[:i]) + [INF_MAX] * (len(types) - i)
    key = encode_pk(types, row)
    assert encode_pk(types, low) < key < encode_pk(types, high)
    # No row key is a prefix of another one's cells: the row's cell keys stay inside.
    assert encode_pk(types, high) > key + b"\x01\xff"


def test_shorter_value_sorts_before_its_extensions():
    assert encode_pk(["STRING"], ["a"]) < encode_pk(["STRING"], ["a\x00"]) \
        < encode_pk(["STRING"], ["a\x01"]) < encode_pk(["STRING"], ["ab"])
    assert encode_pk(["INTEGER", "STRING"], [1, "zz"]) < encode_pk(["INTEGER", "STRING"], [2, ""])


# Stored keys: a row key and a suffix starting with a byte below 0x10 (cells.py),
# and any bytes at all, weighted towards the codec's special bytes.
_BYTES = st.lists(st.sampled_from([0x00, 0x01, 0x02, 0x10, 0x20, 0x30, 0xFF, 0x61]),
                  max_size=14).map(bytes)


@st.composite
def _entry_keys(draw):
    types = draw(SCHEMAS)
    row = encode_pk(types, draw(_typed(types)))
    return row + bytes([draw(st.integers(0, 2))]) + draw(_BYTES), len(row)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_entry_keys(), _BYTES.map(lambda b: (b, None))))
def test_the_row_key_prefix_is_the_row_key_and_its_c_twin_agrees(case):
    """row_key_len finds the row key of every stored key; the C extractor
    (_rowcodec.ROW_KEY_PREFIX, what a table's memtables index by) answers as
    it does on any bytes."""
    key, rklen = case
    if rklen is not None:
        assert row_key_len(key) == rklen
    assert _rowcodec.ROW_KEY_PREFIX.prefix_len(key) == row_key_len(key)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_entry_keys().map(lambda c: c[0]), _BYTES), min_size=3, max_size=12))
def test_keys_with_one_row_key_prefix_are_one_run_in_key_order(keys):
    """lsm.PrefixExtractor's contract: between two keys with the same prefix
    every key has it too (so a range within one prefix reads one bucket)."""
    keys = sorted(set(keys))
    pre = [(row_key_len(k), k[:row_key_len(k)]) for k in keys]
    for i in range(len(keys)):
        for j in range(i + 2, len(keys)):
            if pre[i][0] >= 0 and pre[i] == pre[j]:
                assert all(pre[m] == pre[i] for m in range(i + 1, j))
