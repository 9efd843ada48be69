"""Split algorithms, formats, the evaluator and the advisor (library level)."""

import random
import string
import sys
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regions import presplit as ps
from regions.keys import strip_hash_prefix
from regions.presplit import PresplitError
from regions.presplit.evaluator import plot
from regions.presplit.formats import (from_string_binary, points_from_json, points_json,
                                      read_sample_file, read_splits_file, splits_text,
                                      to_string_binary)

B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def _random_b62_keys(count, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(B62) for _ in range(10)) for _ in range(count)]


ALGORITHMS = {
    "hex": lambda: ps.HexSplit(16),
    "hex-upper": lambda: ps.HexSplit(8, upper=True),
    "decimal": lambda: ps.DecimalSplit(10),
    "alphabet": lambda: ps.AlphabetSplit(B62, 6),
    "uniform": lambda: ps.UniformSplit(8),
    "integer": lambda: ps.IntegerSplit(-1000, 10**9),
    "hash-prefix": lambda: ps.HashPrefixSplit(4),
    "hash-prefix-mmh3": lambda: ps.HashPrefixSplit(3, "mmh3"),
    "salt": lambda: ps.SaltSplit(64),
    "sample": lambda: ps.SampleSplit(_random_b62_keys(20_000, seed=1)),
}


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
@pytest.mark.parametrize("n", [1, 2, 7, 16])
def test_points_are_sorted_unique_and_n_minus_one(name, n):
    points = ALGORITHMS[name]().split(n)
    assert len(points) == n - 1
    assert all(a < b for a, b in zip(points, points[1:]))
    assert ps.check_points(points) == points


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_uniform_keys_of_the_keyspace_spread_evenly(name):
    algorithm = ALGORITHMS[name]()
    n = 16
    keys = ps.workload(algorithm, "uniform", 100_000, seed=42)
    if name == "sample":  # fresh keys from the same distribution, not the sample itself
        keys = _random_b62_keys(100_000, seed=2)
    report = ps.evaluate(algorithm.split(n), keys)
    counts = [r.keys for r in report.regions]
    assert sum(counts) == 100_000
    assert max(counts) <= 1.5 * 100_000 / n, counts
    assert report.empty_regions == []


def test_hex_on_hex_keys_fills_every_region_but_byte_interpolation_leaves_most_empty():
    keys = ps.workload(ps.HexSplit(16), "uniform", 100_000, seed=3)
    hex_report = ps.evaluate(ps.HexSplit(16).split(16), keys)
    assert hex_report.empty_regions == []
    with pytest.warns(ps.SmallAlphabetWarning, match="hex algorithm"):
        interpolated = ps.InterpolateSplit(b"0" * 16, b"f" * 16).split(16)
    byte_report = ps.evaluate([p.decode("latin-1") for p in interpolated], keys)
    assert len(byte_report.empty_regions) > 16 // 2
    assert byte_report.key_skew > 3


# --- golden points, derived by hand ----------------------------------------------

def test_hex_points_are_floor_of_i_times_keyspace_over_n():
    # 2**32 * 1 // 10 = 0x19999999, 2**32 * 2 // 10 = 0x33333333
    assert ps.HexSplit(8).split(10)[:2] == ["19999999", "33333333"]
    assert ps.HexSplit(8).split(4) == ["40000000", "80000000", "c0000000"]
    assert ps.HexSplit(8, upper=True).split(4) == ["40000000", "80000000", "C0000000"]


def test_integer_decimal_uniform_and_salt_golden_points():
    assert ps.IntegerSplit(0, 999).split(4) == [250, 500, 750]
    assert ps.DecimalSplit(2).split(4) == ["25", "50", "75"]
    assert ps.UniformSplit(4).split(4) == [b"\x40\0\0\0", b"\x80\0\0\0", b"\xc0\0\0\0"]
    assert ps.SaltSplit(16).split(4) == ["04", "08", "12"]
    assert ps.AlphabetSplit("cab", 1).split(3) == ["b", "c"]  # alphabet is sorted first


def test_bytes_split_interpolates_like_hbase():
    assert ps.bytes_split(b"\x00", b"\x10", 3) == [b"\x00", b"\x04", b"\x08", b"\x0c", b"\x10"]
    # Too close: one zero byte more of resolution, 0x0100..0x0200 in steps of 64.
    assert ps.bytes_split(b"\x01", b"\x02", 3) == [b"\x01", b"\x01\x40", b"\x01\x80",
                                                  b"\x01\xc0", b"\x02"]


def test_bytes_split_does_not_warn_on_binary_keys():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ps.bytes_split(b"\x00\x00", b"\xff\xff", 7)


# --- sample ---------------------------------------------------------------------

def test_sample_equal_counts_and_equal_bytes():
    assert ps.SampleSplit(range(1000)).split(4) == [250, 500, 750]
    keys, sizes = ["a", "b", "c", "d"], [1, 1, 1, 3]
    assert ps.SampleSplit(keys, sizes, by="count").split(2) == ["c"]
    assert ps.SampleSplit(keys, sizes, by="bytes").split(2) == ["d"]


def test_sample_never_splits_equal_keys_and_keeps_n_minus_one_points():
    keys = [1] * 500 + list(range(2, 40))
    points = ps.SampleSplit(keys).split(8)
    assert len(points) == 7 and points == sorted(set(points))
    assert 1 not in points  # 1 is the smallest key: a point there would leave region 0 empty


# --- bad input ------------------------------------------------------------------

@pytest.mark.parametrize("make, match", [
    (lambda: ps.HexSplit(8).split(0), "at least 1"),
    (lambda: ps.AlphabetSplit("", 4), "alphabet is empty"),
    (lambda: ps.HexSplit(1).split(17), "too short for 17 regions"),
    (lambda: ps.IntegerSplit(0, 2).split(4), "too few for 4 regions"),
    (lambda: ps.IntegerSplit(5, 1), "range is empty"),
    (lambda: ps.SaltSplit(4).split(5), "cannot fill 5 regions"),
    (lambda: ps.SampleSplit([]), "sample is empty"),
    (lambda: ps.SampleSplit(["a", 1]), "mixes types"),
    (lambda: ps.SampleSplit(["a", "b"]).split(3), "2 distinct keys"),
    (lambda: ps.ExplicitSplit(["b", "a"]), "unsorted at 1"),
    (lambda: ps.ExplicitSplit(["a", "a"]), "duplicate at 1"),
    (lambda: ps.ExplicitSplit(["a", ""]), "empty"),
    (lambda: ps.ExplicitSplit(["a", "b"]).split(5), "make 3 regions, not 5"),
    (lambda: ps.bytes_split(b"b", b"a", 1), "start < end"),
    (lambda: ps.HashPrefixSplit(0), "1..32"),
    (lambda: ps.encode_point(1 << 64), "64 bits"),
])
def test_bad_input_raises_presplit_error_naming_it(make, match):
    with pytest.raises(PresplitError, match=match):
        make()


# --- encoding and formats ---------------------------------------------------------

@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=1, unique=True))
def test_encoded_ints_sort_like_the_ints(values):
    values.sort()
    encoded = ps.encode_points(values)
    assert encoded == sorted(encoded) and all(len(e) == 8 for e in encoded)


@given(st.lists(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=6),
                min_size=1, unique=True))
def test_encoded_strings_sort_like_the_strings(values):
    values.sort()
    assert ps.encode_points(values) == sorted(ps.encode_points(values))


@given(st.binary(min_size=1, max_size=12))
def test_string_binary_round_trips_and_is_printable(b):
    text = to_string_binary(b)
    assert from_string_binary(text) == b
    assert text.isascii() and text.isprintable()


def test_string_binary_escapes_like_hbase():
    assert to_string_binary(b"ab\x00\\\xff") == "ab\\x00\\x5C\\xFF"


@pytest.mark.parametrize("points", [["10", "20", "x y"], [-5, 0, 7], [b"\x00\x01", b"a\\", b"\xff"]])
def test_splits_file_and_json_round_trip(tmp_path, points):
    kind = type(points[0]).__name__
    path = tmp_path / "splits.txt"
    path.write_text(splits_text(points), encoding="utf-8")
    assert read_splits_file(str(path), kind) == points
    assert points_from_json(points_json(points, "explicit")) == points


def test_splits_file_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("a\n\nb\n")
    with pytest.raises(PresplitError, match=r"s.txt:2: empty line"):
        read_splits_file(str(path))
    path.write_text("b\na\n")
    with pytest.raises(PresplitError, match="unsorted"):
        read_splits_file(str(path))
    with pytest.raises(PresplitError, match="cannot read"):
        read_splits_file(str(tmp_path / "missing.txt"))


def test_sample_file_reads_sizes(tmp_path):
    path = tmp_path / "keys.txt"
    path.write_text("k1\t100\nk2\t300\n")
    assert read_sample_file(str(path)) == (["k1", "k2"], [100, 300])


# --- evaluator and advisor --------------------------------------------------------------

def test_evaluate_counts_keys_and_bytes_per_region():
    report = ps.evaluate(["m"], ["a", "zz", "m", "b"], value_size=10)
    assert [r.keys for r in report.regions] == [2, 2]  # "m" opens region 1
    assert [r.bytes for r in report.regions] == [22, 23]
    assert report.regions[0].start is None and report.regions[1].start == "m"
    assert report.total_bytes == 45 and report.distinct_keys == 4


def test_plot_without_matplotlib_names_the_plot_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "spread.png"
    with pytest.raises(PresplitError) as e:
        plot(ps.evaluate(["m"], ["a", "z"]), str(out))
    assert str(e.value) == "--plot needs matplotlib: pip install -e '.[plot]'"
    assert not out.exists()


def test_summary_line_names_what_it_counts():
    keys = ["a", "zz", "m", "b", "a", "a"]
    line = ps.render_table(ps.evaluate(["m"], keys)).splitlines()[-4]
    assert line == ("keys: 6  distinct partition-key values: 4  key bytes: "
                    f"{sum(len(k) for k in keys)}")
    with_values = ps.render_table(ps.evaluate(["m"], keys, value_size=10)).splitlines()[-4]
    assert with_values.endswith(f"row bytes: {sum(len(k) + 10 for k in keys)}")
    sized = ps.evaluate(["m"], keys, sizes=[100] * len(keys))
    assert sized.bytes_of == "row" and ps.render_table(sized).count("row bytes: 600") == 1


@pytest.mark.parametrize("algo, width", [("md5", 4), ("mmh3", 3)])
@pytest.mark.parametrize("kind", ["uniform", "zipf"])
def test_hash_prefix_workloads_draw_whole_keys(algo, width, kind):
    keys = ps.workload(ps.HashPrefixSplit(width, algo, sep="-"), kind, 2_000, seed=4)
    for key in keys:  # prefix, separator, id: strip_hash_prefix checks the prefix
        assert strip_hash_prefix(key, width, algo, "-").isdigit()
    if kind == "uniform":  # random 64-bit ids: no two alike, unlike bare 3-4 digit prefixes
        assert len(set(keys)) == len(keys)


def test_evaluate_rejects_keys_of_another_type():
    with pytest.raises(PresplitError, match="keys are str but the split points are int"):
        ps.evaluate([5], ["a"])


def codes(report, keys=()):
    return [f.code for f in ps.advise(report, keys)]


def test_sequential_ids_pile_on_one_region_and_the_advisor_says_monotonic():
    algorithm = ps.DecimalSplit(8)
    keys = ps.workload(algorithm, "sequential", 50_000, start=30_000_000)
    report = ps.evaluate(algorithm.split(8), keys)
    assert report.tail_hot_share == 1.0 and report.increasing_share == 1.0
    assert codes(report, keys)[0] == "monotonic"


def test_hash_prefix_spreads_the_same_sequential_ids():
    algorithm = ps.HashPrefixSplit(4)
    keys = ps.workload(algorithm, "sequential", 50_000)
    report = ps.evaluate(algorithm.split(8), keys)
    assert report.tail_hot_share < 0.25
    assert codes(report, keys) == []


def test_timestamps_are_monotonic_too():
    algorithm = ps.IntegerSplit(0, (1 << 63) - 1)
    keys = ps.workload(algorithm, "timestamp", 20_000)
    assert "monotonic" in codes(ps.evaluate(algorithm.split(4), keys), keys)


def test_few_partition_key_values_and_a_hot_key_are_flagged():
    sellers = [f"seller{i % 10:02d}" for i in range(5_000)] + ["seller00"] * 5_000
    report = ps.evaluate(ps.SampleSplit(sellers).split(8), sellers)
    found = codes(report, sellers)
    assert "few-values" in found and "hot-key" in found


def test_zipf_workload_has_a_hot_key():
    algorithm = ps.HexSplit(8)
    keys = ps.workload(algorithm, "zipf", 20_000, zipf_s=1.5, zipf_values=100)
    report = ps.evaluate(algorithm.split(16), keys)
    assert report.top_key_share > 1 / 16
    assert "hot-key" in codes(report, keys)


def test_empty_regions_get_the_alphabet_of_the_keys_as_the_fix():
    keys = ps.workload(ps.HexSplit(16), "uniform", 20_000, seed=5)
    with pytest.warns(ps.SmallAlphabetWarning):
        points = ps.InterpolateSplit(b"0" * 16, b"f" * 16).split(16)
    report = ps.evaluate([p.decode("latin-1") for p in points], keys)
    advice = {f.code: f for f in ps.advise(report, keys)}
    assert "hex algorithm" in advice["empty-regions"].fix


def test_empty_regions_advice_fits_the_algorithm_in_use():
    rng = random.Random(6)
    values = [rng.randrange(1000, 2000) for _ in range(5_000)]  # a narrow range, no front
    keys = [f"{v:08d}" for v in values]
    report = ps.evaluate(ps.DecimalSplit(8).split(4), keys)
    [blind] = ps.advise(report, keys)  # not told the algorithm: names the keys' alphabet
    assert blind.code == "empty-regions" and "use the decimal algorithm" in blind.fix
    [told] = ps.advise(report, keys, ps.DecimalSplit(8))
    assert "decimal algorithm" not in told.fix and "--length" not in told.fix
    assert told.fix.startswith("the keys run only from 00001000 to 00001999")
    assert "algorithm sample" in told.fix
    shorter = ps.DecimalSplit(6)  # the keys are longer than the plan thinks
    [fix] = ps.advise(ps.evaluate(shorter.split(4), keys), keys, shorter)
    assert "set --length 8 to match them" in fix.fix
    integer = ps.IntegerSplit(0, 9999)
    [fix] = ps.advise(ps.evaluate(integer.split(4), values), values, "integer")
    assert "set --low 1000 --high 1999" in fix.fix and "algorithm integer" not in fix.fix
    sample = ps.SampleSplit([f"{v:08d}" for v in range(5000, 9000)])
    [fix] = ps.advise(ps.evaluate(sample.split(4), keys), keys, sample)
    assert fix.fix.startswith("the sample does not cover these keys") and "--sample" not in fix.fix


def test_workload_rejects_unknown_kind_and_keyspace_less_algorithms():
    with pytest.raises(PresplitError, match="unknown workload"):
        ps.workload(ps.HexSplit(4), "bursty", 10)
    with pytest.raises(PresplitError, match="no keyspace"):
        ps.workload(ps.ExplicitSplit(["m"]), "sequential", 10)


def test_interleaved_per_device_order_numbers_are_a_moving_front():
    rng = random.Random(9)
    counters = [0] * 20
    keys = []
    for _ in range(20_000):
        d = rng.randrange(20)
        counters[d] += 1
        keys.append(counters[d])
    report = ps.evaluate(ps.SampleSplit(keys).split(8), keys)
    assert report.increasing_share < 0.9  # not a plain sequence ...
    assert "monotonic" in codes(report, keys)  # ... but the writes still move with a front


def test_a_hot_key_is_not_mistaken_for_a_moving_front():
    algorithm = ps.HexSplit(8)
    keys = ps.workload(algorithm, "zipf", 20_000, zipf_s=1.5, zipf_values=100)
    assert "monotonic" not in codes(ps.evaluate(algorithm.split(4), keys), keys)
