"""The resource loops at a small count: a disk that fills and empties, and
descriptors that run out and come back, under writers and splits; nothing
lost, doubled or made up, and writes resume by themselves within seconds."""
from regions.soak import descriptors, diskfull


def _ok(s):
    assert s.ok, s.line() + "\n" + "\n".join(s.details)
    assert s.cycles == 2 and s.verified > 100
    f = s.figures
    assert f["refused"] > 0 and f["resume_max_s"] < diskfull.RESUME_LIMIT_S, f


def test_diskfull_two_fills_lose_nothing_and_writes_resume_by_themselves():
    s = diskfull.run(seed=3, count=2)
    _ok(s)
    assert s.figures["causes"] == ["No space left on device"]


def test_descriptors_exhausted_twice_in_a_child_lose_nothing_and_writes_resume():
    s = descriptors.run(seed=3, count=2)
    _ok(s)
    assert s.figures["causes"] == ["Too many open files"]
