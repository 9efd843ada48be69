"""The regions-presplit script end to end, as a subprocess."""

import importlib.util
import json
import os
import random
import re
import shlex
import subprocess
import sys

import pytest

from regions import keys as keydesign
from regions import extras
from regions import presplit as ps
from regions.presplit import cli
from regions.presplit.formats import points_from_json, read_splits_file, to_string_binary


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
    for word in ("hex", "hash-prefix", "--sample", "--evaluate", "--create-table", "SPLITS",
                 "regions-import --create --split-points"):
        assert word in proc.stdout


def help_examples(text):
    """The epilog's examples, continuation lines joined, comments dropped."""
    lines = text[text.index("\nexamples:\n") + len("\nexamples:\n"):].splitlines()
    examples = []
    for line in lines:
        # A run of spaces inside a command is a line continuation that got lost.
        assert not re.search(r"\S {3,}[^#\s]", line), f"two lines run into one: {line!r}"
        if examples and examples[-1].endswith("\\"):
            examples[-1] = examples[-1][:-1] + line.strip()
        else:
            assert line.startswith("  regions-"), f"not an example of its own: {line!r}"
            examples.append(line.strip())
    return [e.split("  #")[0].strip() for e in examples]


def test_help_prints_percent_signs_once_and_each_example_on_its_own_line():
    proc = run("--help")
    assert proc.returncode == 0
    assert "%%" not in proc.stdout and "10% of writes" in proc.stdout
    examples = help_examples(proc.stdout)
    assert len(examples) >= 9
    for example in examples:
        assert example.count("regions-") == 1, example  # no example runs into the next


def test_every_help_example_parses_with_the_real_parser(tmp_path, monkeypatch):
    from regions.transfer.cli import import_parser
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders.csv").write_text("key,v\n")  # the inputs the examples read
    (tmp_path / "keys.txt").write_text("k\n")
    examples = help_examples(cli.build_parser().format_help())
    assert any(e.startswith("regions-import") for e in examples)
    for example in examples:
        prog, *argv = shlex.split(example)
        parser = cli.build_parser() if prog == "regions-presplit" else import_parser()
        parser.parse_args(argv)  # exits 2 on an option that does not exist


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
    (("hex", "-n", "-3"), "at least 1, got -3"),
    (("hex", "-n", "1"), "1 region needs no split points"),
    (("integer", "-n", "1000001"), "more than 1000"),
    (("hex", "-n", "100000000", "--length", "16"), "more than 1000"),
    (("explicit", "--points", ",".join(f"{i:05d}" for i in range(1, 1200))), "more than 1000"),
    (("hexadecimal", "-n", "4"), "invalid choice: 'hexadecimal'"),
    (("hash-prefix", "-n", "4", "--width", "0"), "argument --width: 0 is not an integer (1-32)"),
    (("hash-prefix", "-n", "4", "--width", "33"), "33 is not an integer (1-32)"),
    (("hash-prefix", "-n", "4", "--width", "four"), "four is not an integer"),
    (("hash-prefix", "-n", "17", "--width", "1"), "too short for 17 regions"),
    (("hex", "-n", "4", "--length", "0"), "argument --length"),
    (("hex", "-n", "4", "--evaluate", "--keys", "0"), "argument --keys"),
    (("hex", "-n", "4", "--evaluate", "--value-size", "-1"),
     "argument --value-size: -1 is not a non-negative integer (0 or more)"),
    (("hex", "-n", "4", "--evaluate", "--seed", "-1"),
     "argument --seed: -1 is not a non-negative integer (0 or more)"),
    (("hex", "-n", "4", "--evaluate", "zipf", "--zipf-s", "nan"),
     "argument --zipf-s: nan is not a positive number (greater than 0)"),
    (("salt", "-n", "4", "--buckets", "0"), "argument --buckets: 0 is not a positive integer"),
    (("hex", "-n", "4", "--evaluate", "file"), "--evaluate file needs --key-file FILE"),
    (("hex", "-n", "4", "--evaluate", "zipf", "--key-file", os.devnull),
     "--key-file is for --evaluate file, not --evaluate zipf"),
    (("hex", "-n", "4", "--key-file", "/nonexistent/keys.txt"),
     "argument --key-file: /nonexistent/keys.txt: no such file"),
    (("explicit", "--splits", "/nonexistent/splits.txt"),
     "argument --splits: /nonexistent/splits.txt: no such file"),
    (("explicit", "--splits", "/"), "argument --splits: / is a directory, not a file"),
    (("hex", "-n", "4", "-o", "/nonexistent/plan.txt"),
     "argument -o/--output: /nonexistent/plan.txt: /nonexistent: no such directory"),
    (("hex", "-n", "4", "--plot", "/"), "argument --plot: / is a directory, not a file"),
    (("hex", "-n", "4", "--create-table", os.devnull, "t"),
     f"argument --create-table: {os.devnull} is a file, not a directory"),
    (("hex", "-n", "4", "--create-table", ".", "a b"),
     "argument --create-table: 'a b' is not a table name"),
    (("alphabet", "--alphabet", "", "-n", "4"), "alphabet is empty"),
    (("hex", "-n", "300", "--length", "2"), "too short for 300 regions"),
    (("--sample", "/nonexistent/keys.txt", "-n", "4"),
     "argument --sample: /nonexistent/keys.txt: no such file"),
    (("explicit", "--points", "b,a"), "unsorted"),
    (("hex",), "needs --regions"),
    (("bogus", "-n", "2"), "invalid choice"),
    ((), "choose an algorithm or give --sample"),
    (("hex", "-n", "abc"), "invalid int value"),
])
def test_bad_input_exits_nonzero_with_one_line(args, match):
    assert_one_line_error(run(*args), match)


@pytest.mark.parametrize("content, key_type, match", [
    ("a\n\nb\n", "str", "splits.txt:2: empty line"),
    ("b\na\n", "str", "unsorted at 1: 'b' then 'a'"),
    ("a\na\n", "str", "duplicate at 1"),
    ("10\nx\n", "int", "splits.txt:2: 'x' is not an integer key"),
    (b"\xff\xfe\n", "str", "cannot read"),
])
def test_a_bad_splits_file_is_one_line_naming_it(tmp_path, content, key_type, match):
    path = tmp_path / "splits.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    proc = run("explicit", "--splits", str(path), "--key-type", key_type)
    assert_one_line_error(proc, match)


def test_a_key_file_alone_implies_evaluate_file(tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("".join(keydesign.hash_prefix(i, 2) + "\n" for i in range(2000)))
    proc = run("hash-prefix", "--width", "2", "-n", "4", "--key-file", str(keys))
    assert proc.returncode == 0, proc.stderr
    assert f"spread of {keys} over 4 regions:" in proc.stdout
    assert "keys: 2000  distinct partition-key values: 2000  key bytes: " in proc.stdout


def test_plot_draws_or_says_matplotlib_is_missing(tmp_path):
    out = tmp_path / "spread.png"
    proc = run("hex", "-n", "4", "--keys", "1000", "--plot", str(out))
    if importlib.util.find_spec("matplotlib") is None:
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines()[-1] == \
            "regions-presplit: error: " + extras.missing("matplotlib", "--plot")
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


@pytest.mark.parametrize("primary_key", [(), ("--primary-key", "k:STRING")])
def test_a_table_name_the_store_refuses_makes_no_store(tmp_path, primary_key):
    path = tmp_path / "new"
    proc = run("hex", "-n", "4", "--create-table", str(path), "1abc", *primary_key)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        f"regions-presplit: error: cannot create table '1abc' in {path}: ")
    assert not path.exists()


def test_primary_key_type_must_match_the_points_and_nothing_is_printed():
    proc = run("integer", "-n", "4", "--high", "999", "--create-table", "/tmp/unused", "t",
               "--primary-key", "a:STRING")
    assert_one_line_error(proc, "the split points are int but partition key 'a' is STRING")


# --- the next step after a good plan -------------------------------------------------

def main_in_process(capsys, *argv):
    """``cli.main`` in this process: (status, stdout, stderr)."""
    try:
        status = cli.main(list(argv))
    except SystemExit as e:  # argparse's own errors
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err


def next_commands(stderr):
    """The commands the next-step hint prints (its indented lines), as argv lists."""
    assert "next: " in stderr, stderr
    hint = stderr[stderr.index("next: "):]
    return [shlex.split(line) for line in hint.splitlines() if line.startswith("  ")]


@pytest.mark.parametrize("plan, pk_type, rows", [
    (("hash-prefix", "--width", "2", "-n", "4", "--evaluate", "uniform", "--keys", "2000"),
     "STRING", [keydesign.hash_prefix(i, 2) for i in range(40)]),
    (("integer", "-n", "4", "--low", "0", "--high", "999", "--evaluate", "--keys", "2000"),
     "INTEGER", [str(i) for i in range(0, 1000, 25)]),
])
def test_a_good_plan_prints_the_commands_that_write_it_and_create_the_table(
        tmp_path, monkeypatch, capsys, plan, pk_type, rows):
    from regions import RegionServer
    from regions.transfer.cli import import_main
    status, out, err = main_in_process(capsys, *plan)
    assert status == 0 and "advisor: no problems found" in out
    write, load = next_commands(err)
    # The user's own command line, completed with --format splits -o splits.txt ...
    assert write == ["regions-presplit", *plan, "--format", "splits", "-o", "splits.txt"]
    # ... which, run as printed, writes the plan as a SPLITS file ...
    proc = run(*write[1:], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = [p.split() for p in out.split("\n\n")[0].splitlines()[1:]]
    assert [[line] for line in (tmp_path / "splits.txt").read_text().splitlines()] == expected
    # ... and the import command, run as printed on a CSV of the placeholders' names,
    # creates the table pre-split on that file and loads the rows.
    assert load[:1] == ["regions-import"] and f"KEY:{pk_type}" in load
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ROWS.csv").write_text("KEY,v\n" + "".join(f"{k},x\n" for k in rows))
    assert import_main(load[1:]) == 0
    assert f"rows written: {len(rows)}" in capsys.readouterr().out
    server = RegionServer.open(str(tmp_path / "DIR"))
    try:
        assert len(server.regions("TABLE")) == 4
    finally:
        server.close()


def test_a_splits_file_written_leads_to_the_import_command_alone(tmp_path, capsys):
    from regions.transfer.cli import import_parser
    out_path = str(tmp_path / "my splits.txt")
    status, out, err = main_in_process(capsys, "uniform", "-n", "4", "--length", "2",
                                       "--format", "splits", "-o", out_path)
    assert status == 0 and out == ""
    [load] = next_commands(err)
    (tmp_path / "ROWS.csv").write_text("KEY,v\n")
    args = import_parser().parse_args(
        [str(tmp_path / a) if a == "ROWS.csv" else a for a in load[1:]])
    assert args.create and args.split_points == out_path and args.primary_key == "KEY:BINARY"


def test_the_next_step_is_not_taught_before_a_plan_is_checked_or_after_findings(capsys):
    status, _, err = main_in_process(capsys, "hex", "-n", "4")
    assert status == 0
    assert "check the plan against your keys (--evaluate file --key-file KEYS)" in \
        " ".join(err.split())
    assert next_commands(err)[0][-4:] == ["--format", "splits", "-o", "splits.txt"]
    quiet = [  # findings, a warning, a machine format, a table made, a pipe
        ("decimal", "-n", "4", "--evaluate", "sequential", "--keys", "2000"),
        ("interpolate", "-n", "4", "--start", "0000", "--end", "ffff"),
        ("hex", "-n", "4", "--format", "json"),
        ("hex", "-n", "4", "--format", "splits"),
    ]
    for argv in quiet:
        status, _, err = main_in_process(capsys, *argv)
        assert status == 0 and "next:" not in err, (argv, err)


@pytest.mark.parametrize("given, kept", [
    (["hex", "-n", "4", "--format", "text", "-o", "plan.txt"], ["hex", "-n", "4"]),
    (["hex", "--form=json", "-n", "4", "--out", "p.json"], ["hex", "-n", "4"]),
    (["hex", "-oplan.txt", "-n", "4", "--output=x", "--fo", "text"], ["hex", "-n", "4"]),
    (["explicit", "--points", "a,b", "--sep", "-o"], ["explicit", "--points", "a,b", "--sep"]),
])
def test_splits_argv_replaces_the_users_format_and_output(given, kept):
    # The last case is not valid argparse input (--sep would take -o as an option);
    # it only shows the function drops every -o spelling.
    completed = cli.splits_argv(given)
    assert completed == kept + ["--format", "splits", "-o", "splits.txt"]
    if given[0] == "hex":
        args = cli.build_parser().parse_args(completed)
        assert (args.format, args.output, args.regions) == ("splits", "splits.txt", 4)


# --- the advice never recommends the algorithm in use -----------------------------------

ALGORITHM_ARGS = {  # every algorithm the CLI offers, and the key type of its points
    "hex": (["hex", "-n", "4"], "str"),
    "decimal": (["decimal", "-n", "4"], "str"),
    "alphabet": (["alphabet", "--alphabet", "abcxyz", "-n", "4"], "str"),
    "uniform": (["uniform", "-n", "4"], "bytes"),
    "integer": (["integer", "-n", "4"], "int"),
    "hash-prefix": (["hash-prefix", "-n", "4"], "str"),
    "salt": (["salt", "-n", "4"], "str"),
    "sample": (["--sample", "SAMPLE", "-n", "4"], "str"),
    "explicit": (["explicit", "--points", "g,p"], "str"),
    "interpolate": (["interpolate", "--start", "\\x00", "--end", "\\xff", "-n", "4"], "bytes"),
}
KEY_SHAPES = {  # --evaluate file: ids in arrival order, three values (one hot), a narrow range
    "ids": lambda rng: list(range(3000)),
    "few": lambda rng: [rng.choice([1, 1, 1, 2, 3]) for _ in range(3000)],
    "range": lambda rng: [rng.randrange(1000, 2000) for _ in range(3000)],
}
WORKLOADS = [*ps.evaluator.WORKLOADS, "auto"] + [f"file:{shape}" for shape in KEY_SHAPES]
NAMED = re.compile(r"\balgorithm ([a-z][a-z-]*)|\bthe ([a-z][a-z-]*) algorithm\b")


def test_the_matrix_covers_every_algorithm_and_workload():
    assert set(ALGORITHM_ARGS) == set(cli.ALGORITHMS)
    assert set(ps.evaluator.WORKLOADS) | {"file", "auto"} == \
        set(cli.build_parser()._option_string_actions["--evaluate"].choices)


def key_file(tmp_path, key_type, shape):
    values = KEY_SHAPES[shape](random.Random(7))
    render = {"str": lambda v: f"{v:08d}", "int": str,
              "bytes": lambda v: to_string_binary(v.to_bytes(8, "big"))}[key_type]
    path = tmp_path / f"{shape}.txt"
    path.write_text("".join(render(v) + "\n" for v in values))
    return str(path)


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("name", sorted(ALGORITHM_ARGS))
def test_advice_names_a_different_algorithm_or_a_keys_helper(tmp_path, capsys, name, workload):
    args, key_type = ALGORITHM_ARGS[name]
    if name == "sample":
        sample = tmp_path / "sample.txt"
        rng = random.Random(3)
        sample.write_text("".join(f"user{rng.randrange(10**6):06d}\n" for _ in range(3000)))
        args = [str(sample) if a == "SAMPLE" else a for a in args]
    if workload.startswith("file:"):
        evaluate = ["--evaluate", "file", "--key-type", key_type,
                    "--key-file", key_file(tmp_path, key_type, workload[5:])]
    else:
        evaluate = ["--evaluate"] + ([] if workload == "auto" else [workload])
    status, out, err = main_in_process(capsys, *args, *evaluate, "--keys", "2000")
    if name in ("explicit", "interpolate") and not workload.startswith("file:"):
        # Points without a keyspace: no workload to draw, and the error says what to give.
        assert status == 2 and err.count("\n") == 1
        assert "no keyspace to draw keys from; evaluate it with a sample or a key file" in err
        return
    assert status == 0, err
    fixes = re.findall(r"^    fix: (.*)$", out, re.M)
    assert len(fixes) == out.count("\n[")  # one fix per finding
    bad_shape = workload in ("file:ids", "file:few") or (
        workload in ("sequential", "timestamp") and name not in ("hash-prefix", "salt"))
    if bad_shape:  # the matrix is not vacuous: these keys are known to need advice
        assert fixes, out
    for fix in fixes:
        named = {a or b for a, b in NAMED.findall(fix)}
        assert name not in named, fix  # never "use what you already use"
        if name == "sample":
            assert "--sample" not in fix, fix
        assert named <= set(cli.ALGORITHMS), fix  # only algorithms that exist
        helpers = set(re.findall(r"\bkeys\.([a-z_]+)", fix))
        assert all(hasattr(keydesign, h) for h in helpers), fix
        assert named - {name} or helpers, f"not actionable: {fix}"


def test_decimal_sequential_advice_no_longer_says_use_the_decimal_algorithm(capsys):
    status, out, _ = main_in_process(capsys, "decimal", "-n", "4", "--evaluate", "sequential",
                                     "--keys", "2000")
    assert status == 0 and "[monotonic]" in out and "[empty-regions]" in out
    assert "decimal algorithm" not in out and "algorithm decimal" not in out
    assert "keys.hash_prefix" in out
