"""regions.soak hostile: a short run end to end, and its judge."""
from regions.soak import Summary, hostile


def test_one_wave_of_hostile_connections_beside_an_sdk_writer_loses_and_doubles_nothing():
    stats = {}
    s = hostile.run(seed=1, count=1, clients=1, stats=stats, quiet_s=0.5)
    assert s.ok, s.details
    assert s.verified > stats["slow_head"] + stats["idle"] > 0
    assert stats["quiet_calls"] and stats["hostile_calls"] and stats["hostile_p99_ms"] > 0
    assert stats["front_end_log_lines"] == 0 and stats["unknown"] == 0


def test_the_judge_counts_hangs_5xx_and_answers_of_the_wrong_kind():
    s, st = Summary("hostile", 1, "test"), dict.fromkeys(hostile.KINDS + ("refused_at_cap",), 0)
    hostile._judge(s, st, 0, [("slow_head", (408, 2.1)), ("idle", ("closed", 3.0)),
                              ("slow_body", ("hang", 7.0)), ("garbage", (500, 0.1)),
                              ("forged", (200, 0.1)), ("garbage", (431, 0.1))])
    assert (s.hangs, s.crashes, s.wrong) == (1, 1, 1)
    s = Summary("hostile", 1, "test")
    hostile._judge(s, st, 3, [("over_cap", (503, 0.0))] * 19 + [("over_cap", ("closed", 3.1))])
    assert s.wrong == 1 and st["refused_at_cap"] == 19      # fewer refused than the excess


def test_percentile_is_the_nearest_rank():
    assert hostile.percentile([], 0.99) is None
    assert hostile.percentile(list(range(1, 101)), 0.99) == 99
    assert hostile.percentile([5, 1, 3], 0.5) == 3 and hostile.percentile([7], 0.99) == 7
