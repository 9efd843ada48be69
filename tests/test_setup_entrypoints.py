"""The first hour: every console script of pyproject.toml answers --help, and
one whose optional dependencies are missing (or a ``python -m`` runner's:
the soak experiments, the vendor suite) says in one line, regions.extras'
exact line, which extra to install, not a traceback.

A fresh virtualenv with only the core installed is too slow to build here;
its stand-in is a child process in which the optional modules
(``regions.extras.OPTIONAL``: the server, transfer, plot and search extras) cannot be
imported.  The extras themselves are checked against pyproject.toml, and
``regions-server`` is checked to start without the SDK's warnings.
"""
import contextlib
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from regions import extras
from regions.otsserver import browser
from regions.tablestore import CapacityUnit, OTSClient, ReservedThroughput, Row, TableMeta, TableOptions

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SCRIPTS = PROJECT["scripts"]
EXTRAS = PROJECT["optional-dependencies"]

# The child: optionally hide the optional modules, then run a console script
# as pip's launcher does (argv[0] its name, sys.exit(main())) or a module as
# ``python -m`` does.
RUNNER = r"""
import importlib, importlib.abc, runpy, sys
hidden, name, target, *args = sys.argv[1:]

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in hidden.split(","):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)

if hidden:
    sys.meta_path.insert(0, Hide())
sys.argv = [name, *args]
if target.startswith("-m "):
    runpy.run_module(target[3:], run_name="__main__", alter_sys=True)
else:
    module, _, attr = target.partition(":")
    main = importlib.import_module(module)
    for part in attr.split("."):
        main = getattr(main, part)
    sys.exit(main())
"""


def command(name: str, *args, hide: bool = False) -> list:
    """argv running console script ``name`` (a key of [project.scripts]) or,
    for ``python -m MODULE``, the module, optionally without the extras."""
    target = "-m " + name.split()[-1] if name.startswith("python -m ") else SCRIPTS[name]
    hidden = ",".join(extras.OPTIONAL) if hide else ""
    return [sys.executable, "-c", RUNNER, hidden, name, target, *map(str, args)]


def run(argv, cwd):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd)


@contextlib.contextmanager
def serving(argv, cwd):
    """Start a regions-server command (with --port 0); yield (endpoint, output)
    once it serves; stop it with SIGTERM, then output["stderr"] is its stderr."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    output, endpoint = {}, None
    try:
        for line in proc.stdout:
            if line.startswith("export OTS_TEST_ENDPOINT="):
                endpoint = line.strip().split("=", 1)[1]
            if line.startswith("export OTS_TEST_INSTANCE="):  # the last line at start
                break
        assert endpoint, f"the server did not start: {proc.communicate(timeout=30)}"
        yield endpoint, output
    finally:
        proc.send_signal(signal.SIGTERM)
        out, output["stderr"] = proc.communicate(timeout=60)
    assert proc.returncode == 0, output["stderr"]


def requirement_name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", requirement).group(0).lower().replace("-", "_")


def self_references(requirements) -> set:
    """The extras an extra takes from this project (``lsm-regions[a,b]``)."""
    named = set()
    for r in requirements:
        m = re.fullmatch(r"lsm-regions\[([a-z,]+)\]", r)
        if m:
            named.update(m.group(1).split(","))
    return named


def direct(extra: str) -> set:
    return {requirement_name(r) for r in EXTRAS[extra] if not r.startswith("lsm-regions[")}


# --- the extras -----------------------------------------------------------

def test_each_optional_module_is_in_the_extra_named_for_it_and_each_runtime_extra_is_mapped():
    for module, (extra, _) in extras.OPTIONAL.items():
        assert module in direct(extra), f"{module} is not a requirement of the {extra} extra"
    for extra in {extra for extra, _ in extras.OPTIONAL.values()}:
        unmapped = direct(extra) - set(extras.OPTIONAL)
        assert not unmapped, f"the {extra} extra's {unmapped} are missing in regions.extras.OPTIONAL"


def test_every_requirement_is_listed_once_and_all_has_every_extra():
    names = [n for extra in EXTRAS for n in direct(extra)]
    assert sorted(names) == sorted(set(names)), "a requirement in two extras: name the extra instead"
    assert self_references(EXTRAS["all"]) == set(EXTRAS) - {"all"}
    for extra, requirements in EXTRAS.items():
        assert self_references(requirements) <= set(EXTRAS), f"{extra} names an unknown extra"


def test_the_readme_installs_every_extra_the_way_the_hints_say():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"&& {extras.install_hint('all')} &&" in readme
    assert extras.missing("pyarrow", "Parquet") == "Parquet needs pyarrow: pip install -e '.[transfer]'"


# --- the console scripts ---------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A store with table t (primary key a), a CSV of one more row, a file
    named .parquet, a stand-in of the SDK's source (its tests/ and examples/
    folders): what the scripts' cases read."""
    d = tmp_path_factory.mktemp("scripts")
    with OTSClient(str(d / "ots")) as client:
        client.create_table(TableMeta("t", [("a", "INTEGER")]), TableOptions(),
                            ReservedThroughput(CapacityUnit(0, 0)))
        client.put_row("t", Row([("a", 1)], [("b", "y")]))
    (d / "rows.csv").write_text("a,b\n2,x\n", encoding="utf-8")
    (d / "rows.parquet").write_bytes(b"PAR1")
    for part in ("tests", "examples"):
        (d / "sdk" / part).mkdir(parents=True)
    return d


def error(prog: str, module: str, what: str) -> str:
    """The one line a run without ``module`` ends with (regions.extras)."""
    return f"{prog}: error: {extras.missing(module, what)}"


def cases(d):
    """Per script or runner, runs without the optional modules: (arguments,
    the one line the run must say on stderr, or None: it must work without
    any)."""
    ots, csv, parquet = d / "ots", d / "rows.csv", d / "rows.parquet"
    server = error("regions-server", "tablestore", "the local endpoint")
    plot = error("regions-presplit", "matplotlib", "--plot")
    soak = [(["wire", "--help"], None)] + [
        ([experiment, "--count", "1"],
         error("python -m regions.soak", "tablestore", f"the {experiment} experiment"))
        for experiment in ("wire", "corruption", "fuzz")]
    return {
        "regions-server": [(["--in-memory", "--port", "0"], server)],
        "python -m regions.otsserver": [(["--in-memory", "--port", "0"], server)],
        "regions-import": [(["--data", ots, "--table", "t", "--no-shuffle", csv], None),
                           (["--data", ots, "--table", "t", parquet],
                            error("regions-import", "pyarrow", "Parquet")),
                           (["--endpoint", "http://127.0.0.1:9", "--table", "t", csv],
                            error("regions-import", "tablestore", "--endpoint"))],
        "regions-export": [(["--data", ots, "--table", "t", d / "out.csv"], None),
                           (["--data", ots, "--table", "t", d / "out.parquet"],
                            error("regions-export", "pyarrow", "Parquet"))],
        "regions-presplit": [(["hex", "-n", "4"], None),
                             (["hex", "-n", "4", "--evaluate", "uniform", "--plot", d / "p.png"],
                              plot)],
        "python -m regions.presplit": [(["hex", "-n", "4", "--evaluate", "uniform",
                                         "--plot", d / "p.png"], plot)],
        "python -m regions.tour": [(["--rows", "1000", "--data", d / "tour"], None)],
        "python -m regions.soak": soak,
        "python -m regions.otsserver.vendor_suite": [
            ([d / "sdk", "--module", "transaction_test", "--no-examples"],
             error("python -m regions.otsserver.vendor_suite", "tablestore", "the vendor suite"))],
    }


def test_every_console_script_has_cases(files):
    assert set(SCRIPTS) <= set(cases(files)), "a new console script needs its cases here"


@pytest.mark.parametrize("hide", [False, True], ids=["installed", "extras-missing"])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_each_console_script_answers_help(name, hide, tmp_path):
    done = run(command(name, "--help", hide=hide), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {name}")
    assert done.stderr == ""


def test_without_the_extras_each_run_works_or_names_the_extra_in_one_line(files):
    for name, runs in cases(files).items():
        for args, line in runs:
            done = run(command(name, *args, hide=True), files)
            what = f"{name} {' '.join(map(str, args))}"
            assert "Traceback" not in done.stderr, f"{what}:\n{done.stderr}"
            if line is None:
                assert done.returncode == 0, f"{what}: {done.stderr}"
            else:
                assert (done.returncode != 0, done.stderr) == (True, line + "\n"), what


def test_the_servers_line_names_the_sdk_and_the_command_to_install_it(tmp_path):
    done = run(command("regions-server", "--in-memory", "--port", "0", hide=True), tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", (
        "regions-server: error: the local endpoint needs tablestore (the official Tablestore "
        "SDK): pip install -e '.[server]'\n"))


# --- the SDK's warnings ----------------------------------------------------

def test_the_server_and_the_endpoint_tools_run_without_the_sdks_native_codec_warnings(tmp_path):
    bare = run([sys.executable, "-c", "import tablestore"], tmp_path)
    assert "Native C++ encoder not available" in bare.stderr, (
        "the SDK no longer warns of its native codec: regions/otsserver/sdk.py filters nothing")
    (tmp_path / "rows.csv").write_text("a,b\n1,x\n", encoding="utf-8")
    with serving(command("regions-server", "--in-memory", "--port", "0"), tmp_path) as (
            endpoint, output):
        tools = [run(command("regions-import", "--endpoint", endpoint, "--table", "t", "--create",
                             "--primary-key", "a:INTEGER", tmp_path / "rows.csv"), tmp_path),
                 run(command("regions-export", "--endpoint", endpoint, "--table", "t",
                             tmp_path / "out.csv"), tmp_path)]
    for done in tools:
        assert done.returncode == 0, done.stderr
        assert "Native" not in done.stderr
    assert (tmp_path / "out.csv").read_text(encoding="utf-8") == "a,b\n1,x\n"
    assert "Native" not in output["stderr"]
    assert "Traceback" not in output["stderr"]


# --- the browser's packages (python -m regions.otsserver.browser) ----------

# apt-get install -s, as Debian 12 prints it
NEW_ONLY = """\
Inst libdouble-conversion3 (3.2.1-1 Debian:12.15/oldstable [amd64])
Inst chromium-common (150.0.7871.100-1~deb12u1 Debian:12.15/oldstable [amd64])
Inst chromium (150.0.7871.100-1~deb12u1 Debian:12.15/oldstable [amd64])
Conf chromium (150.0.7871.100-1~deb12u1 Debian:12.15/oldstable [amd64])
"""
UPGRADES = """\
Inst libegl-mesa0 [22.3.6-1+deb12u1] (22.3.6-1+deb12u2 Debian:12.15/oldstable [amd64]) []
Inst libgbm1 (22.3.6-1+deb12u2 Debian:12.15/oldstable [amd64])
Remv chromium-shell [149.0-1]
"""


def test_the_browser_plan_tells_new_packages_from_upgrades_and_removals():
    assert browser.plan(NEW_ONLY) == (["libdouble-conversion3", "chromium-common", "chromium"], [])
    assert browser.plan(UPGRADES) == (["libgbm1"], ["libegl-mesa0 22.3.6-1+deb12u1",
                                                    "chromium-shell 149.0-1 (removed)"])


def test_with_chromium_installed_only_its_driver_of_the_same_version_is_asked_for(monkeypatch):
    monkeypatch.setattr(browser, "installed_version", lambda p: "150.0-1" if p == "chromium" else None)
    assert browser.wanted() == ["chromium-driver=150.0-1"]
    monkeypatch.setattr(browser, "installed_version", lambda p: None)
    assert browser.wanted() == ["chromium", "chromium-driver"]


@pytest.mark.parametrize("simulation, installs", [(NEW_ONLY, True), (UPGRADES, False)])
def test_the_browser_is_installed_without_recommends_and_never_over_an_upgrade(
        monkeypatch, capsys, simulation, installs):
    calls = []
    monkeypatch.setattr(browser, "installed", lambda: bool(calls))
    monkeypatch.setattr(browser.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(browser, "installed_version", lambda p: None)
    monkeypatch.setattr(browser.subprocess, "run", lambda argv, **kw: (
        calls.append(argv) or subprocess.CompletedProcess(argv, 0, simulation, "")))
    monkeypatch.setattr(browser.subprocess, "call", lambda argv, **kw: calls.append(argv) or 0)
    status = browser.main()
    simulated, *rest = calls
    assert simulated[-4:] == ["--no-install-recommends", "-s", "chromium", "chromium-driver"]
    err = capsys.readouterr().err
    if installs:
        [install] = rest
        assert status == 0 and install[-4:] == ["--no-install-recommends", "-y", "chromium",
                                                "chromium-driver"]
    else:
        assert status == 1 and rest == []
        assert "would upgrade or remove installed packages (libegl-mesa0 22.3.6-1+deb12u1, " \
               "chromium-shell 149.0-1 (removed)); not done" in err
