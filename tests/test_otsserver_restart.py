"""The console script: restarts (clean and kill -9) lose no acknowledged write."""
import logging
import os
import signal
import subprocess
import sys
import time

import tablestore as ts

logging.getLogger("tablestore").addHandler(logging.NullHandler())
logging.getLogger("tablestore").setLevel(logging.CRITICAL)


def start(data):
    proc = subprocess.Popen(
        [sys.executable, "-m", "regions.otsserver", "--data", str(data), "--port", "0",
         "--instance", "inst", "--access-key-id", "ak", "--access-key-secret", "sk"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("export OTS_TEST_ENDPOINT="):
            endpoint = line.strip().split("=", 1)[1]
            for _ in range(3):  # the remaining export lines
                proc.stdout.readline()
            return proc, ts.OTSClient(endpoint, "ak", "sk", "inst", retry_policy=ts.NoRetryPolicy())
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("server did not start: %s" % proc.stdout.read())


def all_rows(client):
    _, _, rows, _ = client.get_range("t", ts.Direction.FORWARD, [("k", ts.INF_MIN)], [("k", ts.INF_MAX)])
    return {r.primary_key[0][1]: r.attribute_columns[0][1] for r in rows}


def test_kill_9_and_clean_stop_keep_every_acknowledged_write(tmp_path):
    data = tmp_path / "data"
    proc, c = start(data)
    try:
        c.create_table(ts.TableMeta("t", [("k", "INTEGER")]), ts.TableOptions(),
                       ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
        for i in range(50):
            c.put_row("t", ts.Row([("k", i)], [("v", "value-%d" % i)]))
        c.update_row("t", ts.Row([("k", 7)], {"PUT": [("v", "updated")]}), None)
        c.delete_row("t", ts.Row([("k", 8)]), None)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    expected = {i: "value-%d" % i for i in range(50)}
    expected[7] = "updated"
    del expected[8]

    proc, c = start(data)
    try:
        assert all_rows(c) == expected
        c.put_row("t", ts.Row([("k", 100)], [("v", "after-restart")]))
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "stopped, store closed" in out

    proc, c = start(data)
    try:
        expected[100] = "after-restart"
        assert all_rows(c) == expected
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
