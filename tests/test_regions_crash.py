"""Crash at each step of the split procedure: a child process SIGKILLs itself at
a kill point (REGIONS_KILL_AT) while a writer thread keeps writing into the
splitting region; the parent reopens, runs check(), verifies that every
acknowledged write is there, then runs the split again (double execution)."""
import os
import signal
import subprocess
import sys

import pytest

import lsm
import regions
from regions.procedure import KILL_ENV, KILL_POINTS

CHILD = r'''
import sys, threading
import lsm, regions
path, point = sys.argv[1], sys.argv[2]
opts = regions.ServerOptions(memtable_bytes=4096, background_workers=0,
                             split_policy=regions.DisabledSplitPolicy(),
                             lsm_options=lsm.Options(block_size=256, compression=False))
s = regions.RegionServer.open(path, opts)
s.create_table("t", [b"k5000"])
lock = threading.Lock()
def ack(tag, k, v):
    with lock:
        sys.stdout.write("%s %s %s\n" % (tag, k.hex(), v.hex()))
        sys.stdout.flush()
for i in range(400):
    k, v = b"k%04d" % (i * 3), b"first-%d" % i
    s.put("t", k, v)
    ack("A", k, v)
def writer():
    for i in range(100000):
        k, v = b"k%04d" % (i * 3 + 1), b"during-%d" % i
        if k >= b"k5000":
            k = b"k0%03d" % (i % 1000) + b"x"
        s.put("t", k, v)
        ack("A", k, v)
threading.Thread(target=writer, daemon=True).start()
region = s.regions("t")[0]
s.split_region("t", region.region_id)
if point.startswith("gc."):
    s.compact("t")
    s.maintain()
sys.stdout.write("END\n")
sys.stdout.flush()
'''

BEFORE_PONR = {"split.prepared", "split.parent_closed", "split.daughter_a_created",
               "split.daughter_b_created", "split.before_meta"}


def options():
    return regions.ServerOptions(memtable_bytes=4096, background_workers=0,
                                 split_policy=regions.DisabledSplitPolicy(),
                                 lsm_options=lsm.Options(block_size=256, compression=False))


def run_child(path, point):
    env = dict(os.environ, **{KILL_ENV: point})
    p = subprocess.run([sys.executable, "-c", CHILD, path, point], env=env,
                       capture_output=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, (point, p.returncode, p.stderr.decode()[-2000:])
    acked = {}
    for line in p.stdout.decode().splitlines():
        parts = line.split(" ")
        if parts[0] == "A" and len(parts) == 3:     # a torn last line is not an ack
            acked[bytes.fromhex(parts[1])] = bytes.fromhex(parts[2])
    assert "END" not in p.stdout.decode()
    return acked


@pytest.mark.parametrize("point", KILL_POINTS)
def test_kill_at_each_split_step_then_recover(tmp_path, point):
    path = str(tmp_path / "srv")
    acked = run_child(path, point)
    assert len(acked) >= 400
    with regions.RegionServer.open(path, options()) as s:
        s.check()
        infos = s.regions("t")
        assert len(infos) == (2 if point in BEFORE_PONR else 3), (point, infos)
        for k, v in acked.items():
            assert s.get("t", k) == v, (point, k)
        got = dict(s.scan("t"))
        assert all(got[k] == v for k, v in acked.items())
        assert all(v.startswith((b"first-", b"during-")) for v in got.values())   # no phantoms
        # double execution: split again, everything still there
        s.split_region("t", infos[0].region_id)
        s.check()
        assert {k: got[k] for k in got} == dict(s.scan("t"))
    with regions.RegionServer.open(path, options()) as s:
        s.check()
        assert dict(s.scan("t")) == got
