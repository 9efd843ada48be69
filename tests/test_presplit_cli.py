"""The regions-presplit script end to end, as a subprocess."""

import importlib.util
import json
import subprocess
import sys

import pytest

from regions import presplit as ps
from regions.presplit.formats import points_from_json, read_splits_file


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "regions.presplit", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120)


def assert_one_line_error(proc, match):
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert match in lines[0], lines[0]
    assert proc.stdout == ""


def test_help_teaches_the_algorithms_and_evaluation():
    proc = run("--help")
    assert proc.returncode == 0
    for word in ("hex", "hash-prefix", "--sample", "--evaluate", "--create-table", "SPLITS"):
        assert word in proc.stdout


def test_json_output_parses_back_to_the_library_points():
    proc = run("hex", "--regions", "8", "--length", "6", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["regions"] == 8 and doc["key_type"] == "str"
    assert points_from_json(proc.stdout) == ps.HexSplit(6).split(8)
    assert doc["split_keys_hex"] == [p.encode().hex() for p in ps.HexSplit(6).split(8)]


def test_splits_file_output_reads_back(tmp_path):
    out = tmp_path / "splits.txt"
    proc = run("uniform", "-n", "5", "--length", "2", "--format", "splits", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert read_splits_file(str(out), "bytes") == ps.UniformSplit(2).split(5)


def test_text_output_lists_one_point_per_line_after_a_header():
    proc = run("integer", "-n", "4", "--low", "0", "--high", "999")
    assert proc.returncode == 0, proc.stderr
    header, *lines = proc.stdout.strip().splitlines()
    assert header.startswith("#") and "4 regions" in header
    assert [int(x) for x in lines] == [250, 500, 750]


def test_sample_file_plan_and_evaluation(tmp_path):
    sample = tmp_path / "keys.txt"
    sample.write_text("".join(f"user{i:05d}\n" for i in range(0, 20_000, 7)))
    proc = run("--sample", str(sample), "-n", "4", "--evaluate", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    shares = [r["key_share"] for r in doc["evaluation"]["per_region"]]
    assert len(shares) == 4 and abs(sum(shares) - 1) < 1e-9
    assert max(shares) <= 0.26
    assert doc["evaluation"]["source"] == "the sample"


def test_evaluate_prints_table_bar_chart_and_the_monotonic_finding():
    proc = run("decimal", "-n", "4", "--evaluate", "sequential", "--keys", "2000")
    assert proc.returncode == 0, proc.stderr
    assert "skew (busiest / mean)" in proc.stdout
    assert "|" + "#" * 50 + "|" in proc.stdout
    assert "[monotonic]" in proc.stdout


def test_splits_format_keeps_stdout_a_pure_splits_file_when_evaluating():
    proc = run("hex", "-n", "4", "--format", "splits", "--evaluate", "--keys", "1000")
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ps.HexSplit(8).split(4)
    assert "skew" in proc.stderr


def test_interpolating_text_keys_warns_on_one_line():
    proc = run("interpolate", "-n", "4", "--start", "0000", "--end", "ffff")
    assert proc.returncode == 0
    assert proc.stderr.count("\n") == 1 and "warning" in proc.stderr and "hex" in proc.stderr


@pytest.mark.parametrize("args, match", [
    (("hex", "-n", "0"), "at least 1"),
    (("alphabet", "--alphabet", "", "-n", "4"), "alphabet is empty"),
    (("hex", "-n", "300", "--length", "2"), "too short for 300 regions"),
    (("--sample", "/nonexistent/keys.txt", "-n", "4"), "cannot read /nonexistent/keys.txt"),
    (("explicit", "--points", "b,a"), "unsorted"),
    (("hex",), "needs --regions"),
    (("bogus", "-n", "2"), "invalid choice"),
    ((), "choose an algorithm or give --sample"),
    (("hex", "-n", "abc"), "invalid int value"),
])
def test_bad_input_exits_nonzero_with_one_line(args, match):
    assert_one_line_error(run(*args), match)


def test_plot_draws_or_says_matplotlib_is_missing(tmp_path):
    out = tmp_path / "spread.png"
    proc = run("hex", "-n", "4", "--keys", "1000", "--plot", str(out))
    if importlib.util.find_spec("matplotlib") is None:
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines()[-1] == \
            "regions-presplit: error: --plot needs matplotlib: pip install 'lsm-regions[plot]'"
        assert not out.exists()
    else:
        assert proc.returncode == 0, proc.stderr
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_create_table_presplits_the_embedded_region_server(tmp_path):
    try:
        from regions import RegionServer
    except ImportError as e:
        pytest.fail(f"regions.RegionServer has not landed yet (issue 3), so --create-table "
                    f"cannot be checked: {e}")
    path = tmp_path / "store"
    proc = run("hex", "-n", "4", "--length", "4", "--create-table", str(path), "orders")
    assert proc.returncode == 0, proc.stderr
    assert "with 4 regions" in proc.stderr
    server = RegionServer.open(str(path))
    try:
        starts = [r.start_key for r in server.regions("orders")]
    finally:
        server.close()
    assert starts == [b""] + [p.encode() for p in ps.HexSplit(4).split(4)]


def test_create_table_with_a_primary_key_makes_a_presplit_tablestore_table(tmp_path):
    try:
        from regions.tablestore import OTSClient
    except ImportError as e:
        pytest.fail(f"regions.tablestore.OTSClient has not landed yet (issue 4): {e}")
    path = str(tmp_path / "ots")
    proc = run("integer", "-n", "4", "--low", "0", "--high", "999", "--create-table", path,
               "orders", "--primary-key", "order:INTEGER,item:STRING")
    assert proc.returncode == 0, proc.stderr
    client = OTSClient(path)
    try:
        assert "orders" in client.list_table()
        described = client.describe_table("orders").table_meta.schema_of_primary_key
        assert [tuple(c) for c in described] == [("order", "INTEGER"), ("item", "STRING")]
    finally:
        client.close()
    from regions import RegionServer
    server = RegionServer.open(path)
    try:
        assert len(server.regions("orders")) == 4  # pre-split, not one region
    finally:
        server.close()


def test_primary_key_type_must_match_the_points_and_nothing_is_printed():
    proc = run("integer", "-n", "4", "--high", "999", "--create-table", "/tmp/unused", "t",
               "--primary-key", "a:STRING")
    assert_one_line_error(proc, "the split points are int but partition key 'a' is STRING")
