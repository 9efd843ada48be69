"""Split policies, adjusters and ServerOptions: HBase's formulas, worked by hand."""
import re

import pytest

import regions
from regions.adjust import adjust_split_point
from regions.policy import jitter_rate

MiB = 1 << 20


def test_increasing_policy_follows_the_cube_rule_up_to_the_cap():
    p = regions.IncreasingToUpperBoundSplitPolicy(max_bytes=512 * MiB, initial_bytes=16 * MiB, jitter=0)
    # min(512, 16 * c**3) MiB, by hand: 16, 128, 432, then the cap
    assert [p.threshold(c) // MiB for c in (1, 2, 3, 4, 50)] == [16, 128, 432, 512, 512]
    assert p.threshold(0) == 512 * MiB and p.threshold(101) == 512 * MiB   # HBase's guard
    assert p.should_split(16 * MiB + 1, 1) and not p.should_split(16 * MiB, 1)


def test_stepping_policy_uses_initial_size_only_for_a_single_region():
    p = regions.SteppingSplitPolicy(max_bytes=512 * MiB, initial_bytes=16 * MiB, jitter=0)
    assert p.threshold(1) == 16 * MiB
    assert p.threshold(2) == 512 * MiB and p.threshold(7) == 512 * MiB


def test_constant_and_disabled_policies():
    assert regions.ConstantSizeSplitPolicy(1000, jitter=0).threshold(1) == 1000
    assert regions.ConstantSizeSplitPolicy(1000, jitter=0).should_split(1001, 9)
    d = regions.DisabledSplitPolicy()
    assert d.threshold(1) is None and not d.should_split(1 << 60, 1)


def test_jitter_spreads_maxima_within_plus_minus_half_the_jitter():
    p = regions.ConstantSizeSplitPolicy(1000, jitter=0.25)
    maxima = {p.threshold(1, jitter_rate(rid, 0.25)) for rid in range(200)}
    assert min(maxima) >= 875 and max(maxima) < 1125
    assert len(maxima) > 50                    # siblings do not share a threshold
    assert jitter_rate(7, 0.25) == jitter_rate(7, 0.25)   # stable per region id
    assert jitter_rate(7, 0) == 0


@pytest.mark.parametrize("args, exc", [
    ((0,), ValueError), (("big",), TypeError), ((100, 1.5), ValueError), ((100, "x"), TypeError),
])
def test_policy_arguments_are_validated(args, exc):
    with pytest.raises(exc):
        regions.ConstantSizeSplitPolicy(*args)


def test_server_options_build_the_named_policy_with_their_thresholds():
    o = regions.ServerOptions(memtable_bytes=MiB, max_region_bytes=64 * MiB, split_policy="increasing")
    p = o.make_policy()
    assert isinstance(p, regions.IncreasingToUpperBoundSplitPolicy)
    assert p.initial_bytes == 2 * MiB and p.max_bytes == 64 * MiB   # 2 x memtable, HBase's rule
    assert isinstance(regions.ServerOptions().make_policy(), regions.SteppingSplitPolicy)
    mine = regions.ConstantSizeSplitPolicy(5)
    assert regions.ServerOptions(split_policy=mine).make_policy() is mine


@pytest.mark.parametrize("field, value, exc", [
    ("memtable_bytes", 0, ValueError), ("memtable_bytes", "1", TypeError),
    ("split_policy", "sometimes", ValueError), ("split_policy", 3, TypeError),
    ("background_workers", -1, ValueError), ("maintenance_interval", 0, ValueError),
    ("split_jitter", 2.0, ValueError), ("sync", 1, TypeError),
])
def test_server_options_validate_names_the_bad_field(field, value, exc):
    with pytest.raises(exc, match=field if field != "split_jitter" else "jitter"):
        regions.ServerOptions(**{field: value}).validate()


def test_server_options_from_settings_read_text_by_each_fields_type():
    o = regions.ServerOptions.from_settings(
        ["memtable_bytes=8KiB", "max_region_bytes = 2M", "sync=true", "split_policy=constant",
         "split_jitter=0.1", "max_regions=7"], background_workers=0)
    assert (o.memtable_bytes, o.max_region_bytes, o.sync, o.split_policy, o.split_jitter,
            o.max_regions, o.background_workers) == (8192, 2 << 20, True, "constant", 0.1, 7, 0)
    assert regions.ServerOptions.from_settings([]) == regions.ServerOptions()


@pytest.mark.parametrize("setting, message", [
    ("memtable_bytes", "expected NAME=VALUE"), ("fs=/tmp", "expected NAME=VALUE"),
    ("memtable_bytes=8x", "memtable_bytes: cannot read '8x' as a byte count"),
    ("sync=maybe", "sync: cannot read 'maybe' as true or false"),
    ("split_jitter=much", "split_jitter: cannot read 'much' as a number"),
    ("memtable_bytes=0", "memtable_bytes must be >= 1"),
    ("split_policy=sometimes", "unknown policy 'sometimes'"),
])
def test_server_options_from_settings_name_the_bad_setting(setting, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        regions.ServerOptions.from_settings([setting])


def test_regions_server_refuses_a_bad_server_option_before_opening_anything(tmp_path, capsys):
    from regions.otsserver.cli import main
    with pytest.raises(SystemExit) as e:
        main(["--data", str(tmp_path / "d"), "-D", "max_regions=many"])
    assert e.value.code == 2
    assert "max_regions: cannot read 'many' as an integer" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_key_prefix_and_delimited_prefix_boundaries():
    assert regions.KeyPrefix(2)(b"abcdef") == b"ab"
    assert regions.KeyPrefix(4)(b"ab") == b"ab"
    d = regions.DelimitedKeyPrefix(b"|")
    assert d(b"user7|2024") == b"user7" and d(b"nodelim") == b"nodelim"
    with pytest.raises(ValueError):
        regions.KeyPrefix(0)
    with pytest.raises(TypeError):
        regions.DelimitedKeyPrefix("|")
    with pytest.raises(ValueError):
        regions.DelimitedKeyPrefix(b"")


def _keys_after(keys):
    return lambda p: (k for k in sorted(keys) if k > p)


def test_adjuster_moves_the_point_to_its_group_boundary():
    keys = [b"aa1", b"aa2", b"bb1", b"bb2", b"bb3", b"cc1"]
    point, reason = adjust_split_point(b"bb2", b"", b"", regions.KeyPrefix(2), _keys_after(keys))
    assert (point, reason) == (b"bb", None)


def test_adjuster_falls_forward_to_the_next_group_when_the_boundary_is_the_region_start():
    keys = [b"bb1", b"bb2", b"bb3", b"bb4", b"cc1", b"cc2"]
    # region starts at b"bb": the middle key's group starts at the region start
    point, reason = adjust_split_point(b"bb3", b"bb", b"", regions.KeyPrefix(2), _keys_after(keys))
    assert (point, reason) == (b"cc", None)


def test_adjuster_reports_a_hot_group_that_fills_the_region():
    keys = [b"bb1", b"bb2", b"bb3", b"bb4"]
    point, reason = adjust_split_point(b"bb3", b"bb", b"bc", regions.KeyPrefix(2), _keys_after(keys))
    assert point is None and "hot partition key" in reason


def test_adjuster_without_hook_keeps_the_point_and_rejects_points_outside():
    assert adjust_split_point(b"m", b"a", b"z", None, _keys_after([])) == (b"m", None)
    point, reason = adjust_split_point(b"a", b"a", b"z", None, _keys_after([]))
    assert point is None and "not inside" in reason


def test_adjuster_rejects_a_boundary_after_the_key():
    with pytest.raises(ValueError, match="sorts after"):
        adjust_split_point(b"m", b"", b"", lambda k: k + b"\x00", _keys_after([]))


def test_adjuster_never_leaves_the_lower_daughter_empty():
    # region starts at b"" but all its keys share one group: b"hot" > b"" yet the
    # split would leave [b"", b"hot") empty, so the region is reported hot instead
    keys = [b"hot1", b"hot2", b"hot3"]
    point, reason = adjust_split_point(b"hot2", b"", b"", regions.KeyPrefix(3), _keys_after(keys), b"hot1")
    assert point is None and "hot partition key" in reason
    point, _ = adjust_split_point(b"hot2", b"", b"", regions.KeyPrefix(3), _keys_after(keys + [b"iii"]), b"hot1")
    assert point == b"iii"
