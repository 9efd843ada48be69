"""Every command line answers bad input with one line: ``PROG: error: ...``
on stderr, a non-zero exit status, no traceback, and no store left behind.

regions-server, regions-import, regions-export, the soak runner and the
vendor-suite runner (regions-presplit has its own tests).  The cases run in
process (cheap); a few run as real subprocesses, to see what a user sees.
"""
import argparse
import os
import socket
import subprocess
import sys

import pytest

import regions
from regions import cliutil
from regions.otsserver import cli as server_cli
from regions.otsserver import vendor_suite
from regions.soak import __main__ as soak
from regions.transfer.cli import export_main, import_main


@pytest.fixture
def paths(tmp_path, monkeypatch):
    """Placeholders of the cases: {d} a store directory that must never be
    made, {f} a file, {csv} an input, {empty} an empty directory, {sdk} a
    fake SDK checkout; the working directory is a scratch one, kept empty."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "in.csv").write_text("uid,oid,v\n1,a,1\n")
    (tmp_path / "empty").mkdir()
    for part in ("tests", "examples"):
        (tmp_path / "sdk" / part).mkdir(parents=True)
    return {"d": str(tmp_path / "store"), "f": str(tmp_path / "afile"),
            "csv": str(tmp_path / "in.csv"), "empty": str(tmp_path / "empty"),
            "sdk": str(tmp_path / "sdk"), "missing": str(tmp_path / "missing"),
            "out": str(tmp_path / "out.csv"), "tmp": str(tmp_path)}


def expand(argv, paths):
    return [a.format(**paths) for a in argv]


def assert_one_error(status, err, prog, message, paths):
    """One line ``PROG: error: ...MESSAGE...``, non-zero status, nothing made."""
    assert status not in (0, None), err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    line = err.rstrip("\n")
    assert line.startswith(f"{prog}: error: "), line
    assert message.format(**paths) in line, line
    assert not os.path.exists(paths["d"]), "a store directory was made"
    assert os.listdir(".") == [], "something was made in the working directory"


def run_main(main, argv, capsys):
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr()
    return status, err


SERVER = [
    (["--data", "{d}", "--port", "99999"], "argument --port: 99999 is not a port (0-65535)"),
    (["--data", "{d}", "--port", "-5"], "argument --port: -5 is not a port (0-65535)"),
    (["--data", "{d}", "--port", "http"], "argument --port: http is not a port (0-65535)"),
    (["--data", "{d}", "--timeout", "-1"],
     "argument --timeout: -1 is not a number of seconds (greater than 0, at most 86400)"),
    (["--data", "{d}", "--timeout", "nan"], "argument --timeout: nan is not"),
    (["--data", "{d}", "--timeout", "1e12"], "argument --timeout: 1e12 is not"),
    (["--data", "{d}", "--max-body", "0"],
     "argument --max-body: 0 is not a byte size (1 or more, e.g. 8192, 64KiB, 5MiB)"),
    (["--data", "{d}", "--max-body", "5MB"], "argument --max-body: 5MB is not a byte size"),
    (["--data", "{d}", "-D", "memtable_bytes=0"],
     "argument -D/--server-option: ServerOptions.memtable_bytes must be >= 1, got 0"),
    (["--data", "{d}", "-D", "sync"], "argument -D/--server-option: server option 'sync': "
                                      "expected NAME=VALUE"),
    (["--data", "{d}", "-D", "sync=maybe"], "server option sync: cannot read 'maybe'"),
    (["--data", "{d}", "-D", "memtable_bytes=-5"],
     "server option memtable_bytes: cannot read '-5' as a byte count"),
    (["--data", "{d}", "--instance", ""], "argument --instance: '' is not an instance name"),
    (["--data", "{d}", "--access-key-id", "a b"], "argument --access-key-id: 'a b' is not"),
    (["--data", "{d}", "--host", ""], "argument --host: '' is not a host"),
    (["--data", "{d}", "--pk-projection", "some"], "argument --pk-projection: invalid choice"),
    (["--data", "{d}", "--in-memory"], "argument --in-memory: not allowed with argument --data"),
    (["--port", "0"], "one of the arguments --data --in-memory is required"),
    (["--data", ""], "argument --data: an empty path is not a directory"),
    (["--data", "{f}"], "argument --data: {f} is a file, not a directory"),
    (["--data", "{f}/store"], "argument --data: {f}/store: {f} is a file, not a directory"),
    (["--data", "{d}", "--bogus"], "unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize("argv, message", SERVER)
def test_regions_server_refuses_bad_options_at_parse_time(argv, message, paths, capsys):
    status, err = run_main(server_cli.main, expand(argv, paths), capsys)
    assert status == 2
    assert_one_error(status, err, "regions-server", message, paths)


def test_a_bad_port_in_the_environment_is_named(paths, capsys, monkeypatch):
    monkeypatch.setenv("OTS_TEST_ENDPOINT", "http://127.0.0.1:99999")
    status, err = run_main(server_cli.main, ["--data", paths["d"]], capsys)
    assert_one_error(status, err, "regions-server", "OTS_TEST_ENDPOINT=http://127.0.0.1:99999: "
                     "Port out of range 0-65535; fix it or give --port", paths)


def test_a_port_in_use_is_named_with_the_way_out_and_no_store_is_made(paths, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, err = run_main(server_cli.main, ["--data", paths["d"], "--port", str(port)],
                               capsys)
    assert status == 1
    assert_one_error(status, err, "regions-server",
                     f"port {port} on 127.0.0.1: Address already in use; --port 0 picks a "
                     "free one", paths)


def test_a_host_that_is_not_this_machine_is_named(paths, capsys):
    status, err = run_main(server_cli.main, ["--data", paths["d"], "--host", "192.0.2.1",
                                             "--port", "0"], capsys)
    assert_one_error(status, err, "regions-server",
                     "--host 192.0.2.1: not an address of this machine", paths)


def test_a_store_in_use_is_one_line_naming_the_store(paths):
    # a process: the line comes after the SDK is imported (its warnings filtered)
    store = os.path.join(paths["tmp"], "inuse")
    with regions.RegionServer.open(store):
        proc = subprocess.run([sys.executable, "-m", "regions.otsserver", "--data", store,
                               "--port", "0"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert_one_error(proc.returncode, proc.stderr, "regions-server",
                     f"cannot open the store in {store}: lock failed: already held", paths)


TRANSFER = [
    (export_main, ["{out}", "--data", "{d}", "--table", "t"], "no store at {d}"),
    (export_main, ["{out}", "--data", "{empty}", "--table", "t"], "no store at {empty}"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t"], "no store at {d}"),
    # --create: the store is made only once every check passed
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--create"],
     "--create needs --primary-key"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--create",
                   "--primary-key", "user:INTEGER"], "{csv}: no column 'user' of the primary key"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--create",
                   "--primary-key", "uid:FLOAT"], "--primary-key column 'uid:FLOAT' must be"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--create", "--primary-key",
                   "uid:INTEGER", "--split-points", "{missing}"], "--split-points {missing}:"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--workers", "0"],
     "argument --workers: 0 is not a positive integer (1 or more)"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--batch-rows", "201"],
     "argument --batch-rows: 201 is not an integer (1-200)"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--shuffle-rows", "-1"],
     "argument --shuffle-rows: -1 is not a positive integer"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--seed", "-1"],
     "argument --seed: -1 is not a non-negative integer (0 or more)"),
    (import_main, ["{missing}", "--data", "{d}", "--table", "t"],
     "argument INPUT: {missing}: no such file"),
    (import_main, ["{empty}", "--data", "{d}", "--table", "t"],
     "argument INPUT: {empty} is a directory, not a file"),
    (import_main, ["{csv}", "--data", "{d}", "--table", "t", "--rejects", "{missing}/r.jsonl"],
     "argument --rejects: {missing}/r.jsonl: {missing}: no such directory"),
    (import_main, ["{csv}", "--data", "{d}", "--table", ""],
     "argument --table: '' is not a table name"),
    (export_main, ["{missing}/out.csv", "--data", "{d}", "--table", "t"],
     "argument OUTPUT: {missing}/out.csv: {missing}: no such directory"),
    (export_main, ["{out}", "--data", "{d}", "--table", "t", "--page-rows", "0"],
     "argument --page-rows: 0 is not a positive integer"),
    (export_main, ["{out}", "--data", "", "--table", "t"],
     "argument --data: an empty path is not a directory"),
    (export_main, ["{out}", "--data", "{f}", "--table", "t"],
     "argument --data: {f} is a file, not a directory"),
    (export_main, ["{out}", "--data", "{d}", "--table", "t", "--format", "xml"],
     "argument --format: invalid choice: 'xml'"),
    (export_main, ["{out}", "--data", "{d}"], "the following arguments are required: --table"),
]


@pytest.mark.parametrize("main, argv, message", TRANSFER,
                         ids=[f"{m.__name__}-{i}" for i, (m, _, _) in enumerate(TRANSFER)])
def test_import_and_export_refuse_bad_input_and_make_no_store(main, argv, message, paths,
                                                               capsys):
    status, err = run_main(main, expand(argv, paths), capsys)
    prog = "regions-import" if main is import_main else "regions-export"
    assert status == 2
    assert_one_error(status, err, prog, message, paths)
    assert os.listdir(paths["empty"]) == []


def test_an_import_with_create_makes_the_store_once_its_checks_pass(paths, capsys):
    argv = [paths["csv"], "--data", paths["d"], "--table", "t", "--create",
            "--primary-key", "uid:INTEGER,oid:STRING", "--no-progress"]
    assert import_main(argv) == 0
    assert regions.RegionServer.exists(paths["d"])
    assert export_main([paths["out"], "--data", paths["d"], "--table", "t",
                        "--no-progress"]) == 0
    assert open(paths["out"]).read() == "uid,oid,v\n1,a,1\n"


SOAK = [
    ([], "python -m regions.soak", "the following arguments are required: EXPERIMENT"),
    (["bogus"], "python -m regions.soak", "argument EXPERIMENT: invalid choice: 'bogus'"),
    (["--seed", "1", "fuzz"], "python -m regions.soak", "the experiment comes first"),
    (["fuzz", "--count", "-5"], "python -m regions.soak fuzz",
     "argument --count: -5 is not a positive integer (1 or more)"),
    (["fuzz", "--count", "0"], "python -m regions.soak fuzz", "argument --count: 0 is not"),
    (["corruption", "--seconds", "-1"], "python -m regions.soak corruption",
     "argument --seconds: -1 is not a positive number (greater than 0)"),
    (["ioerrors", "--seconds", "inf"], "python -m regions.soak ioerrors",
     "argument --seconds: inf is not a positive number"),
    (["corruption", "--seed", "-1"], "python -m regions.soak corruption",
     "argument --seed: -1 is not a non-negative integer (0 or more)"),
    (["fuzz", "--dir", "{missing}"], "python -m regions.soak fuzz",
     "argument --dir: {missing}: no such directory"),
    (["ioerrors", "--dir", "{f}"], "python -m regions.soak ioerrors",
     "argument --dir: {f} is a file, not a directory"),
    (["fuzz", "--bogus"], "python -m regions.soak fuzz", "unrecognized arguments: --bogus"),
    # the experiments of harness.py: the same options, and their own
    (["killloop", "--window", "-1"], "python -m regions.soak killloop",
     "argument --window: -1 is not a positive number (greater than 0)"),
    (["killloop", "--window", "0"], "python -m regions.soak killloop",
     "argument --window: 0 is not a positive number"),
    (["killloop", "--count", "-3"], "python -m regions.soak killloop",
     "argument --count: -3 is not a positive integer (1 or more)"),
    (["killloop", "--dir", "{f}"], "python -m regions.soak killloop",
     "argument --dir: {f} is a file, not a directory"),
    (["wire", "--clients", "0"], "python -m regions.soak wire",
     "argument --clients: 0 is not a positive integer (1 or more)"),
    (["wire", "--clients", "-2"], "python -m regions.soak wire",
     "argument --clients: -2 is not a positive integer"),
    (["wire", "--dir", "{f}/run"], "python -m regions.soak wire",
     "argument --dir: {f}/run: {f} is a file, not a directory"),
    (["powerloss", "--seed", "-1"], "python -m regions.soak powerloss",
     "argument --seed: -1 is not a non-negative integer (0 or more)"),
    (["powerloss", "--seconds", "nan"], "python -m regions.soak powerloss",
     "argument --seconds: nan is not a positive number"),
    (["concurrency", "--threads", "0"], "python -m regions.soak concurrency",
     "argument --threads: 0 is not a positive integer (1 or more)"),
    (["concurrency", "--threads", "-8"], "python -m regions.soak concurrency",
     "argument --threads: -8 is not a positive integer"),
    (["concurrency", "--seconds", "-1"], "python -m regions.soak concurrency",
     "argument --seconds: -1 is not a positive number"),
]


@pytest.mark.parametrize("argv, prog, message", SOAK)
def test_the_soak_runner_refuses_bad_arguments(argv, prog, message, paths, capsys):
    status, err = run_main(soak.main, expand(argv, paths), capsys)
    assert status == 2
    assert_one_error(status, err, prog, message, paths)


def test_a_work_directory_may_be_new_but_not_a_file(paths, capsys):
    from regions.soak._cli import parser
    ap = parser("killloop", "kill cycles", seed=1, work_dir=True)
    assert ap.parse_args(["--dir", paths["missing"]]).dir == paths["missing"]
    assert ap.parse_args([]).seed == 1
    status, err = run_main(ap.parse_args, ["--dir", paths["f"]], capsys)
    assert status == 2
    assert_one_error(status, err, "python -m regions.soak killloop",
                     "argument --dir: {f} is a file, not a directory", paths)


VENDOR = [
    ([], "the following arguments are required: source"),
    (["{missing}"], "argument source: {missing}: no such directory"),
    (["{f}"], "argument source: {f} is a file, not a directory"),
    (["{empty}"], "argument source: {empty} is not the SDK's source: it needs tests/ and "
                  "examples/"),
    (["{sdk}", "--module", "bogus"], "argument --module: invalid choice: 'bogus'"),
    (["{sdk}", "--example", "bogus"], "argument --example: invalid choice: 'bogus'"),
    (["{sdk}", "--server-arg=--timeout", "--server-arg=-1"],
     "--server-arg: argument --timeout: -1 is not a number of seconds"),
    (["{sdk}", "--server-arg=--bogus"], "--server-arg: unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize("argv, message", VENDOR)
def test_the_vendor_suite_runner_refuses_bad_arguments(argv, message, paths, capsys,
                                                       monkeypatch):
    made = []
    monkeypatch.setattr(vendor_suite, "extract", lambda *a: made.append(a))
    status, err = run_main(vendor_suite.main, expand(argv, paths), capsys)
    assert status == 2
    assert_one_error(status, err, vendor_suite.PROG, message, paths)
    assert made == []  # refused before anything is copied or started


def test_a_bare_git_directory_without_the_sdks_tests_is_refused(paths):
    bare = os.path.join(paths["tmp"], "bare.git")
    subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
    with pytest.raises(argparse.ArgumentTypeError, match="is not the SDK's source"):
        vendor_suite.sdk_source(bare)


def test_a_server_that_does_not_start_is_one_line_naming_its_error(paths, capsys, monkeypatch):
    def broken(self, workdir, extra_args=()):
        raise RuntimeError("regions-server did not start: regions-server: error: it broke")
    monkeypatch.setattr(vendor_suite.Server, "__init__", broken)
    status, err = run_main(vendor_suite.main, [paths["sdk"], "--no-examples",
                                               "--module", "row_op_test"], capsys)
    assert status == 1
    assert_one_error(status, err, vendor_suite.PROG, "regions-server did not start: "
                     "regions-server: error: it broke", paths)


# -- the shared helpers ----------------------------------------------------

@pytest.mark.parametrize("convert, good, bad", [
    (cliutil.port, {"0": 0, "65535": 65535, "8800": 8800}, ["65536", "-1", "1.5", "x", ""]),
    (cliutil.positive_int, {"1": 1, "200": 200}, ["0", "-3", "2.0"]),
    (cliutil.non_negative_int, {"0": 0, "7": 7}, ["-1"]),
    (cliutil.int_in(1, 200), {"1": 1, "200": 200}, ["0", "201"]),
    (cliutil.positive_float, {"0.5": 0.5, "3": 3.0}, ["0", "-1", "nan", "inf", "x"]),
    (cliutil.non_negative_float, {"0": 0.0, "2.5": 2.5}, ["-0.1", "nan"]),
    (cliutil.byte_size, {"8192": 8192, "64KiB": 65536, "5mib": 5 << 20, "1G": 1 << 30},
     ["0", "-1", "5MB", "1.5MiB", "KiB", ""]),
    (cliutil.word("a name"), {"local": "local"}, ["", "a b", "a\tb", "a\nb"]),
])
def test_type_helpers_take_what_they_promise_and_name_what_they_refuse(convert, good, bad):
    for text, value in good.items():
        assert convert(text) == value
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError) as e:
            convert(text)
        assert "is not" in str(e.value)
        assert text.strip() in str(e.value) or repr(text) in str(e.value)  # the value named


def test_errors_are_one_line_whatever_the_message(capsys):
    assert cliutil.fail("prog", ValueError("first\n\n  second\n")) == 2
    assert capsys.readouterr().err == "prog: error: first; second\n"
    with pytest.raises(SystemExit) as e:
        cliutil.Parser(prog="prog").error("bad\nworse")
    assert e.value.code == 2
    assert capsys.readouterr().err == "prog: error: bad; worse\n"


def test_byte_sizes_are_read_in_one_place_for_d_and_the_options_that_take_them():
    from regions.options import ServerOptions, parse_bytes
    for text, value in {"8192": 8192, "64KiB": 65536, " 5 mib ": 5 << 20, "1G": 1 << 30,
                        "0": 0, "0K": 0}.items():
        assert parse_bytes(text) == value
        if value:
            assert cliutil.byte_size(text) == value
            assert ServerOptions.from_settings([f"memtable_bytes={text}"]).memtable_bytes == value
    for text in ("", "K", "-1", "+1", "1.5MiB", "5MB", "1_000", "x"):
        with pytest.raises(ValueError, match="is not a byte count"):
            parse_bytes(text)
        with pytest.raises(ValueError, match="cannot read .* as a byte count"):
            ServerOptions.from_settings([f"memtable_bytes={text}"])


def test_an_input_file_may_be_a_pipe():
    r, w = os.pipe()
    try:
        assert cliutil.input_file(f"/dev/fd/{r}") == f"/dev/fd/{r}"
    finally:
        os.close(r)
        os.close(w)


def test_os_errors_lose_their_errno():
    assert cliutil.os_error(FileNotFoundError(2, "No such file or directory", "/x")) == \
        "No such file or directory: /x"
    assert cliutil.os_error(OSError("plain")) == "plain"


# -- what a user sees: real processes ----------------------------------------

_TRANSFER = "import sys; from regions.transfer.cli import {0} as m; sys.exit(m())"

PROCESSES = [
    (["-m", "regions.otsserver", "--data", "{d}", "--port", "99999"],
     "regions-server: error: argument --port: 99999 is not a port (0-65535)"),
    (["-m", "regions.otsserver", "--data", "{d}", "--max-body", "0"],
     "regions-server: error: argument --max-body: 0 is not a byte size"),
    (["-c", _TRANSFER.format("export_main"), "{out}", "--data", "{d}", "--table", "t"],
     "regions-export: error: no store at {d}"),
    (["-c", _TRANSFER.format("import_main"), "{csv}", "--data", "{d}", "--table", "t",
      "--create", "--primary-key", "user:INTEGER"],
     "regions-import: error: {csv}: no column 'user'"),
    (["-m", "regions.soak", "fuzz", "--seconds", "-1"],
     "python -m regions.soak fuzz: error: argument --seconds: -1 is not a positive number"),
    (["-m", "regions.otsserver.vendor_suite", "{empty}"],
     "python -m regions.otsserver.vendor_suite: error: argument source: {empty} is not the "
     "SDK's source"),
]


@pytest.mark.parametrize("argv, message", PROCESSES, ids=["server-port", "server-max-body",
                                                          "export", "import", "soak", "vendor"])
def test_as_a_process_each_cli_says_one_line_and_exits_non_zero(argv, message, paths):
    proc = subprocess.run([sys.executable, *expand(argv, paths)], capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout == ""
    assert_one_error(proc.returncode, proc.stderr, message.split(": error: ")[0],
                     message.split(": error: ")[1], paths)
