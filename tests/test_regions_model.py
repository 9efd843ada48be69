"""Model-based test: random operations against a dict, with thresholds so tiny
that auto-splits happen all the time; check() after every step, reopens too."""
import random

import pytest

import lsm
import regions

KiB = 1 << 10


def options(split_boundary_groups=False):
    return regions.ServerOptions(
        memtable_bytes=2 * KiB, background_workers=0,
        split_policy=regions.ConstantSizeSplitPolicy(6 * KiB, jitter=0.25),
        lsm_options=lsm.Options(block_size=256, background=False, compression=False,
                                l0_compaction_trigger=3, l0_slowdown_trigger=6, l0_stop_trigger=8))


def compare_scan(server, model, rng):
    keys = sorted(model)
    lo = rng.choice([None, b"k%03d" % rng.randrange(300)])
    hi = rng.choice([None, b"k%03d" % rng.randrange(300)])
    rev = rng.random() < 0.4
    want = [(k, model[k]) for k in keys if (lo is None or k >= lo) and (hi is None or k < hi)]
    if rev:
        want.reverse()
    assert list(server.scan("t", lo, hi, reverse=rev)) == want, (lo, hi, rev)


@pytest.mark.parametrize("seed, grouped", [(1, False), (2, True), (3, False)])
def test_random_operations_match_a_dict_through_splits_and_reopens(tmp_path, seed, grouped):
    rng = random.Random(seed)
    path = str(tmp_path / "srv")
    server = regions.RegionServer.open(path, options())
    server.create_table("t", [b"k100"])

    def configure(s):
        if grouped:   # rows "kNNN-x" grouped by "kNNN": a split never divides a group
            s.configure_table("t", split_boundary=regions.DelimitedKeyPrefix(b"-"))
    configure(server)
    model = {}
    splits_seen = 0
    try:
        for step in range(500):
            op = rng.random()
            k = b"k%03d" % rng.randrange(300) + (b"-%d" % rng.randrange(4) if grouped else b"")
            if op < 0.55:
                v = b"%d:" % step + bytes(rng.randrange(20, 120))
                server.put("t", k, v)
                model[k] = v
            elif op < 0.65:
                server.delete("t", k)
                model.pop(k, None)
            elif op < 0.8:
                assert server.get("t", k) == model.get(k), k
            elif op < 0.88:
                compare_scan(server, model, rng)
            elif op < 0.97:
                server.flush_all()
                server.maintain()
            else:
                server.close()
                server = regions.RegionServer.open(path, options())
                configure(server)
            server.check()
            splits_seen = max(splits_seen, len(server.regions("t")))
        server.compact("t")
        server.maintain()
        server.check()
        assert list(server.scan("t")) == sorted(model.items())
        if grouped:
            for info in server.regions("t"):
                assert b"-" not in info.start_key      # boundaries are group prefixes
    finally:
        server.close()
    assert splits_seen >= 6        # the test really exercised auto-splits
