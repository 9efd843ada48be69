"""Splits under concurrent load: writers and readers run while background
splits happen; nothing acknowledged is lost, scans stay sorted and complete."""
import sys
import threading

import lsm
import regions
from conftest import run_writers_then_readers

KiB = 1 << 10


def test_writers_and_readers_during_background_splits(tmp_path):
    opts = regions.ServerOptions(
        memtable_bytes=4 * KiB, background_workers=2, maintenance_interval=0.01,
        split_policy=regions.ConstantSizeSplitPolicy(16 * KiB, jitter=0.25),
        lsm_options=lsm.Options(block_size=512, compression=False))
    old_switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    server = regions.RegionServer.open(str(tmp_path / "srv"), opts)
    try:
        server.create_table("t")
        preloaded = {b"p%05d" % i: b"pre%d" % i for i in range(300)}
        for k, v in preloaded.items():
            server.put("t", k, v)
        acked = [dict() for _ in range(3)]
        errors = []
        stop = threading.Event()

        def writer(n):
            try:
                for i in range(1500):
                    k = b"w%d-%05d" % (n, i)
                    v = b"%d" % i + b"x" * 60
                    server.put("t", k, v)
                    acked[n][k] = v
            except Exception as e:   # pragma: no cover - reported below
                errors.append(e)

        def reader():
            try:
                while not stop.is_set():
                    for k, v in list(preloaded.items())[::37]:
                        assert server.get("t", k) == v
                    keys = [k for k, _ in server.scan("t", b"p", b"q")]
                    assert keys == sorted(preloaded), "scan lost or repeated keys during a split"
                    rkeys = [k for k, _ in server.scan("t", b"p", b"q", reverse=True)]
                    assert rkeys == sorted(preloaded, reverse=True)
            except Exception as e:
                errors.append(e)

        run_writers_then_readers([threading.Thread(target=writer, args=(n,)) for n in range(3)],
                                 [threading.Thread(target=reader) for _ in range(2)], stop)
        assert not errors, errors
        assert len(server.regions("t")) >= 4, "no split happened under load"
        server.check()
        want = dict(preloaded)
        for a in acked:
            want.update(a)
        assert list(server.scan("t")) == sorted(want.items())
    finally:
        sys.setswitchinterval(old_switch)
        server.close()
