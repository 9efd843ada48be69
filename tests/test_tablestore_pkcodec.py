"""The order-preserving PK codec: golden bytes, round trips, order == typed tuple order."""
from hypothesis import given, settings, strategies as st

from regions.tablestore import INF_MAX, INF_MIN
from regions.tablestore.pkcodec import (decode_partition_value, decode_pk, encode_pk,
                                        partition_prefix_len)

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
