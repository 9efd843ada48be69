"""The runner of the Go SDK's test suite (regions.otsserver.go_suite), without
Go: its argument errors, the Debian packages it asks for, the tests it picks,
the test setup it takes out, the config it writes, and how it reads a test
binary's output (a fake binary, a Python script, stands in for Go's).  The
result against the real SDK is recorded in docs/otsserver.md."""
import os
import subprocess
import sys
import textwrap

import pytest

from regions.otsserver import go_suite, vendor_suite

API = '''
package tablestore

import (
	"fmt"
	"github.com/aliyun/aliyun-tablestore-go-sdk/common"
	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore/otsprotocol"
	lruCache "github.com/hashicorp/golang-lru"
)

import "github.com/golang/protobuf/proto"
'''

PROTOCOL = '''
package otsprotocol

import (
	fmt "fmt"
	proto "github.com/golang/protobuf/proto"
	flatbuffers "github.com/google/flatbuffers/go"
)
'''

PROTOCOL_TEST = '''
package otsprotocol

import "github.com/smartystreets/goconvey/convey"
'''

API_TEST = '''
package tablestore

import (
	"github.com/aliyun/aliyun-tablestore-go-sdk/testConfig"
	. "gopkg.in/check.v1"
	"testing"
)

func TestApi(t *testing.T) {
	TestingT(t)
}

type TableStoreSuite struct{}
type SearchSuite struct{}
type Unregistered struct{}

var _ = Suite(&TableStoreSuite{})
var _ = Suite(&SearchSuite{})

func (s *TableStoreSuite) SetUpSuite(c *C) {
	PrepareTable(defaultTableName)
	PrepareSQLSearchIndex(c, sqlTableNameWithSearch, sqlSearchName)
	WaitDataSyncByMatchAllQuery(c, client, 4, sqlTableNameWithSearch, sqlSearchName, 40)
}

func (s *TableStoreSuite) TestCreateTable(c *C) {}
func (s *TableStoreSuite) TestPutGetRow(c *C) {}
func (s *TableStoreSuite) TestSQL(c *C) {}
func (s *TableStoreSuite) TestStream(c *C) {}
func (s *SearchSuite) TestSearchQuery(c *C) {}
func (s *Unregistered) TestNever(c *C) {}

func TestOtsError_Error(t *testing.T) {
	t.Log("no server")
}
'''

CONFIG = '''
package testConfig

var (
	OtsEndpoint  = "http://ots.example"
	InstanceName = "gate"
	OtsAccessId  = ""
	OtsAccessKey = ""
)
'''


def _fake_sdk(root):
    files = {"tablestore/api.go": API, "tablestore/api_test.go": API_TEST,
             "tablestore/otsprotocol/table_store.pb.go": PROTOCOL,
             "tablestore/otsprotocol/table_store_test.go": PROTOCOL_TEST,
             "common/credentials.go": "package common\n",
             "testConfig/config.go": CONFIG}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


@pytest.fixture
def sdk(tmp_path):
    return _fake_sdk(tmp_path / "sdk")


def run_main(main, argv, capsys):
    """(exit status, stdout, stderr) of an SDK runner's ``main`` (this file's
    and test_java_suite's)."""
    try:
        status = main([str(a) for a in argv])
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


def run(argv, capsys):
    return run_main(go_suite.main, argv, capsys)


def refused_in_one_line(runner, argv, message, sdk, tmp_path, capsys, monkeypatch):
    """``runner`` (go_suite, java_suite) refuses ``argv`` with one line,
    ``PROG: error: message``, exit 2, before anything is copied."""
    made = []
    monkeypatch.setattr(vendor_suite, "extract", lambda *a: made.append(a))
    argv = [a.format(tmp=tmp_path, sdk=sdk) for a in argv]
    status, _, err = run_main(runner.main, argv, capsys)
    assert status == 2
    line = f"{runner.PROG}: error: " + message.format(tmp=tmp_path, sdk=sdk)
    assert err.startswith(line) and err.count("\n") == 1, err
    assert made == []


def bare_clone(sdk, tmp_path):
    """A bare git directory of the fake source ``sdk`` (committed first)."""
    bare = tmp_path / "bare.git"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(sdk)], check=True)
    subprocess.run(git + ["-C", str(sdk), "add", "."], check=True)
    subprocess.run(git + ["-C", str(sdk), "commit", "-qm", "sdk"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(sdk), str(bare)],
                   check=True)
    return bare


# -- arguments -----------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    ([], "the following arguments are required: source"),
    (["{tmp}/nowhere"], "argument source: {tmp}/nowhere: no such directory"),
    (["{tmp}"], "argument source: {tmp} is not the SDK's source: it needs tablestore/, "
                "common/ and testConfig/ (give a checkout or a bare git directory of "
                "aliyun/aliyun-tablestore-go-sdk)"),
    (["{sdk}", "-k", "Test("], "argument -k/--run: 'Test(' is not a regular expression"),
    (["{sdk}", "--timeout", "5"], "argument --timeout: 5 is not a number of seconds"),
    (["{sdk}", "--server-arg=--bogus"], "--server-arg: unrecognized arguments: --bogus"),
])
def test_bad_arguments_are_one_line_before_anything_is_copied(argv, message, sdk, tmp_path,
                                                             capsys, monkeypatch):
    refused_in_one_line(go_suite, argv, message, sdk, tmp_path, capsys, monkeypatch)


def test_a_bare_git_directory_is_a_source(sdk, tmp_path):
    bare = bare_clone(sdk, tmp_path)
    assert go_suite.sdk_source(str(bare)) == str(bare)
    dest = tmp_path / "copy"
    vendor_suite.extract(str(bare), str(dest), go_suite.PARTS)
    assert (dest / "tablestore" / "api_test.go").read_text() == (sdk / "tablestore" /
                                                                 "api_test.go").read_text()
    assert go_suite.source_commit(str(bare)) == go_suite.source_commit(str(sdk)) != "unknown"


# -- the Debian packages ---------------------------------------------------------

def test_the_imports_are_the_package_its_tests_and_the_sdk_packages_it_imports(sdk):
    # otsprotocol's own tests (goconvey) are not needed; the package's are.
    assert go_suite.external_imports(str(sdk)) == {
        "github.com/golang/protobuf/proto", "github.com/hashicorp/golang-lru",
        "github.com/google/flatbuffers/go", "gopkg.in/check.v1"}


def test_a_missing_package_is_one_apt_line_and_nothing_runs(sdk, tmp_path, capsys,
                                                           monkeypatch):
    gocode = tmp_path / "gocode"
    (gocode / "src" / "gopkg.in" / "check.v1").mkdir(parents=True)
    monkeypatch.setattr(go_suite, "GOCODE", str(gocode))
    monkeypatch.setattr(go_suite.shutil, "which", lambda name: None)
    started = []
    monkeypatch.setattr(vendor_suite, "Server", lambda *a: started.append(a))
    status, out, err = run([sdk], capsys)
    assert status == 1 and started == []
    assert err == (f"{go_suite.PROG}: error: missing Debian packages: apt-get install -y "
                   "golang-go golang-github-golang-protobuf-1-3-dev "
                   "golang-github-hashicorp-golang-lru-dev (or rerun with --install)\n")


def test_an_import_no_debian_package_provides_is_named(tmp_path):
    with pytest.raises(RuntimeError, match="imports example.com/x/y, which no Debian package"):
        go_suite.missing_packages({"example.com/x/y"}, gocode=str(tmp_path), go="/usr/bin/go")
    # flatbuffers has no Debian package: the stand-in, never an apt line.
    assert go_suite.missing_packages({go_suite.FLATBUFFERS}, gocode=str(tmp_path),
                                     go="/usr/bin/go") == []
    assert go_suite.write_standins(str(tmp_path / "gp"), {go_suite.FLATBUFFERS},
                                   gocode=str(tmp_path)) == [go_suite.FLATBUFFERS]
    text = (tmp_path / "gp" / "src" / go_suite.FLATBUFFERS / "flatbuffers.go").read_text()
    assert text.startswith("// Package flatbuffers is a compile-only stand-in")


# -- which tests run -------------------------------------------------------------

def test_selection_runs_the_served_api_and_lists_the_rest_with_reasons(sdk):
    tests = go_suite.list_tests(str(sdk / "tablestore"))
    assert tests == {"suites": {"TableStoreSuite": ["TestCreateTable", "TestPutGetRow", "TestSQL",
                                                    "TestStream"],
                                "SearchSuite": ["TestSearchQuery"]},
                     "plain": ["TestOtsError_Error"], "hooks": ["TestApi"]}
    chosen = go_suite.select(tests)
    assert chosen["run"] == ["SearchSuite.TestSearchQuery", "TableStoreSuite.TestCreateTable",
                             "TableStoreSuite.TestPutGetRow", "TableStoreSuite.TestStream",
                             "TestOtsError_Error"]
    assert chosen["excluded"] == {"TableStoreSuite.TestSQL": "SQL is not served"}
    assert go_suite.excluded_lines(chosen["excluded"]) == [
        "excluded TableStoreSuite.TestSQL: SQL is not served"]
    picked = go_suite.select(tests, "Put|Stream$")
    assert picked["run"] == ["TableStoreSuite.TestPutGetRow", "TableStoreSuite.TestStream"]
    assert go_suite.select(tests, "SQL")["run"] == []     # excluded stays excluded


def test_the_binary_arguments_select_by_gocheck_filter_and_test_run():
    args = go_suite.check_args(["TableStoreSuite.TestStream"], ["TestOtsError_Error"], ["TestApi"])
    assert args == ["-test.run", "^(TestOtsError_Error|TestApi)$", "-check.vv", "-check.f",
                    r"^(TableStoreSuite\.TestStream)$", "-test.v"]
    assert go_suite.check_args([], ["TestX"], ["TestApi"]) == ["-test.run", "^(TestX)$",
                                                               "-test.v"]


# -- the copy's test setup and config ---------------------------------------------

def test_the_search_index_setup_is_taken_out_and_nothing_else(sdk):
    before = (sdk / "tablestore" / "api_test.go").read_text().split("\n")
    done = go_suite.apply_patches(str(sdk / "tablestore"))
    after = (sdk / "tablestore" / "api_test.go").read_text().split("\n")
    assert done == ["api_test.go:22: PrepareSQLSearchIndex(c, sqlTableNameWithSearch, "
                    "sqlSearchName)",
                    "api_test.go:23: WaitDataSyncByMatchAllQuery(c, client, 4, "
                    "sqlTableNameWithSearch, sqlSearchName, 40)"]
    changed = [(b, a) for b, a in zip(before, after) if b != a]
    assert len(before) == len(after) and len(changed) == 2
    assert all(a.strip().startswith("// taken out by regions' go_suite: ") for _, a in changed)
    with pytest.raises(RuntimeError, match="api_test.go changed: 0 lines match"):
        go_suite.apply_patches(str(sdk / "tablestore"))


def test_the_config_names_the_fresh_server(sdk):
    path = go_suite.write_config(str(sdk), "http://127.0.0.1:4321")
    assert os.listdir(sdk / "testConfig") == ["config.go"]
    text = open(path).read()
    assert 'OtsEndpoint  = "http://127.0.0.1:4321"' in text
    assert f'InstanceName = "{vendor_suite.INSTANCE}"' in text
    assert f'OtsAccessId  = "{vendor_suite.KEY_ID}"' in text
    assert f'OtsAccessKey = "{vendor_suite.SECRET}"' in text
    assert "package testConfig" in text
    (sdk / "testConfig" / "config.go").write_text("package testConfig\nvar OtsEndpoint = \"x\"\n")
    with pytest.raises(RuntimeError, match="declares no InstanceName, OtsAccessId, OtsAccessKey"):
        go_suite.write_config(str(sdk), "http://127.0.0.1:4321")


# -- reading the test binary ---------------------------------------------------------

OUTPUT = '''\
=== RUN   TestApi
START: gp/src/x/tablestore/api_test.go:58: TableStoreSuite.SetUpSuite
PASS: gp/src/x/tablestore/api_test.go:58: TableStoreSuite.SetUpSuite	6.022s

START: gp/src/x/tablestore/api_test.go:287: TableStoreSuite.TestCreateTable
START: gp/src/x/tablestore/api_test.go:86: TableStoreSuite.SetUpTest
PASS: gp/src/x/tablestore/api_test.go:86: TableStoreSuite.SetUpTest	0.000s
2026/11/26 08:55:50 TestCreateTable started
gp/src/x/tablestore/api_test.go:337:
    c.Check(*descResp.TableOption.UpdateFullRow, Equals, *tableOption.UpdateFullRow)
... obtained bool = false
... expected bool = true

START: gp/src/x/tablestore/api_test.go:90: TableStoreSuite.TearDownTest
PASS: gp/src/x/tablestore/api_test.go:90: TableStoreSuite.TearDownTest	0.000s
FAIL: gp/src/x/tablestore/api_test.go:287: TableStoreSuite.TestCreateTable

START: gp/src/x/tablestore/api_test.go:380: TableStoreSuite.TestPutGetRow
PASS: gp/src/x/tablestore/api_test.go:380: TableStoreSuite.TestPutGetRow	0.002s
START: gp/src/x/tablestore/api_test.go:380: TableStoreSuite.TestStream

... Panic: runtime error: invalid memory address or nil pointer dereference (PC=0x4392F1)

PANIC: gp/src/x/tablestore/api_test.go:380: TableStoreSuite.TestStream
OOPS: 1 passed, 1 FAILED, 1 PANICKED
--- FAIL: TestApi (15.78s)
=== RUN   TestOtsError_Error
    error_test.go:12: got "a", want "b"
--- FAIL: TestOtsError_Error (0.00s)
=== RUN   TestSkipped
    x_test.go:3: later
--- SKIP: TestSkipped (0.00s)
FAIL
'''


def test_the_outcomes_and_first_lines_of_gocheck_and_plain_tests():
    outcomes, started = go_suite.parse_output(OUTPUT)
    assert started is None
    status = {name: s for name, (s, _) in outcomes.items()}
    assert status == {"TableStoreSuite.TestCreateTable": "failed",
                      "TableStoreSuite.TestPutGetRow": "passed",
                      "TableStoreSuite.TestStream": "failed", "TestApi": "failed",
                      "TestOtsError_Error": "failed", "TestSkipped": "skipped"}
    first = {name: go_suite.first_line(lines) for name, (_, lines) in outcomes.items()}
    assert first["TableStoreSuite.TestCreateTable"] == (
        "api_test.go:337: c.Check(*descResp.TableOption.UpdateFullRow, Equals, "
        "*tableOption.UpdateFullRow) ... obtained bool = false")
    assert first["TableStoreSuite.TestStream"] == (
        "Panic: runtime error: invalid memory address or nil pointer dereference (PC=0x4392F1)")
    assert first["TestOtsError_Error"] == 'error_test.go:12: got "a", want "b"'


def test_a_failed_setup_suite_fails_every_test_it_missed():
    text = ("START: a/api_test.go:58: S.SetUpSuite\n"
            "a/api_test.go:70:\n    c.Assert(err, IsNil)\n... value = boom\n"
            "FAIL: a/api_test.go:58: S.SetUpSuite\n"
            "MISS: a/api_test.go:80: S.TestA\n")
    outcomes, started = go_suite.parse_output(text)
    assert outcomes == {"S.TestA": ("missed", ["SetUpSuite failed: api_test.go:70: "
                                               "c.Assert(err, IsNil) ... value = boom"])}


FAKE_BINARY = r'''#!{python}
# Plays a gocheck test binary: runs the tests -check.f names, in name order;
# S.TestCrash kills the process as a panic in another goroutine would.
import sys
args = sys.argv[1:]
names = args[args.index("-check.f") + 1][2:-2].replace("\\", "").split("|") if "-check.f" in args else []
names = sorted(names)
print("START: f_test.go:1: S.SetUpSuite")
print("PASS: f_test.go:1: S.SetUpSuite\t0.1s")
for name in names:
    print("START: f_test.go:2: " + name)
    if name == "S.TestCrash":
        print("panic: boom in a goroutine\n\ngoroutine 7 [running]:")
        sys.exit(2)
    print("PASS: f_test.go:2: " + name + "\t0.0s")
'''


def test_a_test_that_crashes_the_binary_fails_and_the_rest_run_in_a_new_process(tmp_path):
    binary = tmp_path / "fake.test"
    binary.write_text(FAKE_BINARY.replace("{python}", sys.executable))
    binary.chmod(0o755)
    log = open(tmp_path / "log", "w")
    results = go_suite.run_binary(str(binary), str(tmp_path), ["S.TestA", "S.TestCrash", "S.TestZ"],
                                  set(), ["TestApi"], dict(os.environ), 60, log)
    log.close()
    assert results == {"S.TestA": ("passed", []),
                       "S.TestCrash": ("failed", ["the test binary crashed: panic: boom in a "
                                                  "goroutine"]),
                       "S.TestZ": ("passed", [])}
    assert (tmp_path / "log").read_text().count("S.SetUpSuite\t") == 2    # two processes


def test_the_report_lists_each_test_and_counts_only_what_ran(capsys):
    chosen = {"run": ["S.TestA", "S.TestB", "TestUnit"], "excluded": {"S.TestSQL": "SQL"}}
    results = {"S.TestA": ("passed", []), "S.TestB": ("failed", ["x_test.go:1:", "  f()",
                                                                 "... value = 1"]),
               "TestUnit": ("passed", [])}
    assert go_suite.report(chosen, results) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == ["S                                        1 failed, 1 passed",
                                "  PASS TestA", "  FAIL TestB: x_test.go:1: f() ... value = 1",
                                "unit tests (no server)                   1 passed",
                                "  PASS TestUnit", "excluded S.TestSQL: SQL",
                                "go suite: 2 passed, 1 failed"]
