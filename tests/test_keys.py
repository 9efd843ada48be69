"""Key-design helpers: round trips, the connector check, order preservation."""

import hashlib
import random
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from regions import keys as kd
from regions.keys import IntColumn, KeyDesignError, StrColumn

ALNUM = string.ascii_letters + string.digits
text_values = st.text(alphabet=ALNUM + "-_.", min_size=1, max_size=20)
nonneg = st.integers(min_value=0, max_value=10**12)


# --- hash prefix --------------------------------------------------------------

def test_hash_prefix_is_the_first_hex_digits_of_md5_of_the_value():
    assert kd.hash_prefix(1001, 4) == hashlib.md5(b"1001").hexdigest()[:4] + "1001"
    assert kd.hash_prefix("abc", 2, sep=":") == hashlib.md5(b"abc").hexdigest()[:2] + ":abc"


@given(value=st.one_of(text_values, nonneg), width=st.integers(1, 32),
       algo=st.sampled_from(["md5", "mmh3"]), sep=st.sampled_from(["", "#"]))
def test_strip_hash_prefix_inverts_hash_prefix(value, width, algo, sep):
    key = kd.hash_prefix(value, width, algo, sep)
    assert kd.strip_hash_prefix(key, width, algo, sep) == str(value)


def test_strip_hash_prefix_rejects_a_key_with_a_foreign_prefix():
    with pytest.raises(KeyDesignError, match="prefix"):
        kd.strip_hash_prefix("zzzz1001", 4)


def test_hash_prefix_rejects_unknown_hash_and_bad_width():
    with pytest.raises(KeyDesignError, match="unknown hash"):
        kd.hash_prefix(1, 4, algo="sha1")
    with pytest.raises(KeyDesignError, match="width"):
        kd.hash_prefix(1, 0)
    with pytest.raises(TypeError):
        kd.hash_prefix(1.5, 4)


def test_hash_prefix_spreads_sequential_ids_over_all_first_digits():
    firsts = {kd.hash_prefix(i, 4)[0] for i in range(2000)}
    assert firsts == set("0123456789abcdef")


# --- salting --------------------------------------------------------------------

@given(value=st.one_of(text_values, nonneg), buckets=st.integers(1, 1000),
       sep=st.sampled_from(["", "_"]))
def test_unsalt_inverts_salt_and_the_salt_is_in_range(value, buckets, sep):
    key = kd.salt(value, buckets, sep)
    s, original = kd.unsalt(key, buckets, sep)
    assert original == str(value)
    assert 0 <= s < buckets
    assert s == kd.salt_of(value, buckets)
    assert key == kd.salt(value, buckets, sep)  # deterministic


def test_random_salt_uses_every_bucket_and_still_round_trips():
    rng = random.Random(7)
    salts = set()
    for _ in range(500):
        key = kd.salt("order-1", 12, rng=rng)
        s, original = kd.unsalt(key, 12)
        salts.add(s)
        assert original == "order-1"
    assert salts == set(range(12))


def test_salt_width_pads_to_the_largest_salt():
    assert kd.salt_width(10) == 1
    assert kd.salt_width(11) == 2
    assert kd.salt("x", 100).startswith(f"{kd.salt_of('x', 100):02d}")


def test_unsalt_rejects_a_salt_out_of_range():
    with pytest.raises(KeyDesignError, match="salt below 16"):
        kd.unsalt("99abc", 16)


# --- reversal -------------------------------------------------------------------

@given(n=nonneg)
def test_unreverse_number_inverts_reverse_number(n):
    assert kd.unreverse_number(kd.reverse_number(n, 13)) == n


def test_reverse_number_pads_before_reversing():
    assert kd.reverse_number(120, 5) == "02100"
    assert kd.reverse_fixed("ab", 4) == "ba00"
    with pytest.raises(KeyDesignError, match="longer than width"):
        kd.reverse_number(123456, 5)
    with pytest.raises(KeyDesignError, match="negative"):
        kd.reverse_number(-1, 5)


@given(a=st.integers(0, kd.MAX_TIMESTAMP), b=st.integers(0, kd.MAX_TIMESTAMP))
def test_reversed_timestamp_is_an_involution_that_reverses_order(a, b):
    assert kd.reversed_timestamp(kd.reversed_timestamp(a)) == a
    if a < b:
        assert kd.reversed_timestamp(a) > kd.reversed_timestamp(b)


def test_reversed_timestamp_rejects_out_of_range():
    with pytest.raises(KeyDesignError, match="outside"):
        kd.reversed_timestamp(-1)


# --- splicing -------------------------------------------------------------------

DEVICE_CARD = [StrColumn(ALNUM), IntColumn(8), StrColumn(ALNUM)]


@given(st.tuples(text_values.filter(lambda s: set(s) <= set(ALNUM)),
                 st.integers(0, 10**8 - 1),
                 st.text(alphabet=ALNUM + ",", min_size=1, max_size=8)))
def test_unsplice_inverts_splice_even_with_the_connector_in_the_last_column(values):
    cols = [StrColumn(ALNUM), IntColumn(8), StrColumn(ALNUM + ",")]
    assert kd.unsplice(kd.splice(values, cols, ","), cols, ",") == values


def test_splice_zero_pads_integers():
    assert kd.splice(("dev7", 12, "card9"), DEVICE_CARD) == "dev7,00000012,card9"


def test_splice_rejects_bad_values():
    with pytest.raises(KeyDesignError, match="negative"):
        kd.splice(("d", -1, "c"), DEVICE_CARD)
    with pytest.raises(KeyDesignError, match="does not fit"):
        kd.splice(("d", 10**8, "c"), DEVICE_CARD)
    with pytest.raises(KeyDesignError, match="outside its column's alphabet"):
        kd.splice(("d!", 1, "c"), DEVICE_CARD)
    with pytest.raises(TypeError):
        kd.splice((1, 1, "c"), DEVICE_CARD)
    with pytest.raises(KeyDesignError, match="empty"):
        kd.splice(("", 1, "c"), DEVICE_CARD)


def test_connector_check_rejects_a_connector_inside_a_leading_column():
    with pytest.raises(KeyDesignError, match="could not be split back"):
        kd.check_connector("a", [StrColumn("abc"), StrColumn("abc")])
    with pytest.raises(KeyDesignError, match="one character"):
        kd.check_connector("::", [StrColumn("abc")])
    kd.check_connector("a", [StrColumn("xyz"), StrColumn("abc")])  # last column may hold it


def test_tablestore_example_colon_breaks_the_order_and_comma_keeps_it():
    # The guide's case: spliced without a connector, ("a", "100") and ("a1", "001")
    # read "a100" and "a1001". The tuples sort ("a", ...) first.
    cols = [StrColumn(ALNUM), StrColumn(ALNUM)]
    low, high = ("a", "100"), ("a1", "001")
    assert kd.splice(low, cols, ":") > kd.splice(high, cols, ":")  # ':' (0x3a) > '1' (0x31)
    assert kd.splice(low, cols, ",") < kd.splice(high, cols, ",")  # ',' (0x2c) < '0' (0x30)
    colon, comma = kd.splice_order_check(cols, ":"), kd.splice_order_check(cols, ",")
    assert not colon and comma
    a, b = colon.witness
    assert a < b and kd.splice(a, cols, ":") > kd.splice(b, cols, ":")


def test_unpadded_integers_break_the_order_whatever_the_connector():
    cols = [IntColumn(None), StrColumn("abc")]
    check = kd.splice_order_check(cols, ",")
    assert not check
    a, b = check.witness
    assert a < b and kd.splice(a, cols) > kd.splice(b, cols)


def test_fixed_width_columns_need_no_low_connector():
    cols = [IntColumn(6), StrColumn("abc")]
    assert kd.splice_order_check(cols, "~")


POOL = string.printable.strip()


@st.composite
def column_designs(draw):
    """Columns, a connector absent from all but the last column, and rows."""
    connector = draw(st.sampled_from(POOL))
    ncols = draw(st.integers(1, 3))
    cols = []
    for j in range(ncols):
        if draw(st.booleans()):
            cols.append(IntColumn(draw(st.sampled_from([None, 3]))))
        else:
            pool = [c for c in POOL if c != connector or j == ncols - 1]
            cols.append(StrColumn("".join(draw(st.sets(st.sampled_from(pool),
                                                        min_size=1, max_size=5)))))
    if any(connector in c.alphabet for c in cols[:-1]):
        assume(False)

    def value(col):
        if isinstance(col, IntColumn):
            return st.integers(0, 999)
        return st.text(alphabet=col.alphabet, min_size=1, max_size=4)

    rows = draw(st.lists(st.tuples(*[value(c) for c in cols]), min_size=2, max_size=30))
    return cols, connector, rows


@settings(max_examples=300, deadline=None)
@given(column_designs())
def test_order_is_preserved_exactly_when_the_check_says_so(design):
    cols, connector, rows = design
    check = kd.splice_order_check(cols, connector)
    if check:
        spliced = {r: kd.splice(r, cols, connector) for r in set(rows)}
        assert len(set(spliced.values())) == len(spliced)  # injective
        assert sorted(spliced, key=spliced.get) == sorted(spliced)
    else:
        a, b = check.witness
        assert a < b
        assert kd.splice(a, cols, connector) > kd.splice(b, cols, connector)
