"""Build the official Go SDK offline and run its own ``tablestore`` tests against a fresh ``regions-server``.

    python -m regions.otsserver.go_suite PATH [-k/--run PATTERN] [--keep] [--install]
                                              [--timeout SECONDS] [--server-arg ARG ...] [-v]

``PATH`` is the source of ``aliyun/aliyun-tablestore-go-sdk``: a checkout or a
bare git directory (``git archive`` is used then).  Its ``tablestore/``,
``common/`` and ``testConfig/`` are copied into a temporary GOPATH and built
in GOPATH mode (``GO111MODULE=off``, ``GOPROXY=off``: no module proxy, no
network) against the Go sources of Debian's ``golang-*`` packages in
``/usr/share/gocode``.  The Debian packages needed are worked out from the
imports of the ``tablestore`` package, its tests and the SDK packages they
import (``DEBIAN``); a missing one stops the run with the one ``apt-get
install`` line that brings it, or ``--install`` runs that line itself.
Debian 12 has no Go runtime of flatbuffers, which the package imports for
timeseries and SQL (both out of scope): a compile-only stand-in
(``FLATBUFFERS_STANDIN``, ours) is put in the GOPATH; each of its functions
panics.

The tests' endpoint and keys are the SDK's ``testConfig`` package: the copy's
``config.go`` is rewritten to name the fresh server (``write_config``).  The
copy's test files are left as the vendor wrote them but for ``PATCHES``: the
``TableStoreSuite.SetUpSuite`` fixture creates a search index for its SQL
tests and waits for it to sync (SQL is not served); under gocheck a failed ``SetUpSuite``
misses every test of the suite, so those two calls are taken out of the copy
(the suite's tables and rows are still prepared; no assertion of a test is
touched).

What runs: the gocheck tests of ``SUITES`` (less ``EXCLUDED``: SQL) and the
package's plain ``go test`` tests (unit tests that need no server), in one
test binary; each test is listed as passed or failed with its first line.  A
test that crashes the binary is listed as failed and the rest run in a new
process.  Suites out of scope (``OUT_OF_SCOPE``: timeseries) are
listed as excluded with the reason.  The exit status is 0 only when every
test run passed.

CI does not run this (no network to fetch the SDK's repository, no Go on its
machine); the result is recorded in docs/otsserver.md.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

from regions import cliutil
from regions.otsserver import vendor_suite

PROG = "python -m regions.otsserver.go_suite"
MODULE = "github.com/aliyun/aliyun-tablestore-go-sdk"
#: The SDK's directories copied out: the package under test, what it imports
#: of its own module, and the tests' configuration.
PARTS = ("tablestore", "common", "testConfig")
PACKAGE = "tablestore"
GOCODE = "/usr/share/gocode"
GO_PACKAGE = "golang-go"

#: Import path (prefix) -> the Debian package whose sources provide it under
#: GOCODE (None: Debian 12 has none; FLATBUFFERS_STANDIN stands in).
DEBIAN = {
    "github.com/golang/protobuf": "golang-github-golang-protobuf-1-3-dev",
    "github.com/hashicorp/golang-lru": "golang-github-hashicorp-golang-lru-dev",
    "gopkg.in/check.v1": "golang-gopkg-check.v1-dev",
    "github.com/stretchr/testify": "golang-github-stretchr-testify-dev",
    "github.com/cenkalti/backoff": "golang-github-cenkalti-backoff-dev",
    "github.com/satori/go.uuid": "golang-github-satori-go.uuid-dev",
    "go.uber.org/zap": "golang-go.uber-zap-dev",
    "go.uber.org/atomic": "golang-go.uber-atomic-dev",
    "gopkg.in/natefinch/lumberjack.v2": "golang-gopkg-natefinch-lumberjack.v2-dev",
    "github.com/golang/mock": "golang-github-golang-mock-dev",
    "github.com/smartystreets/goconvey": "golang-github-smartystreets-goconvey-dev",
    "github.com/google/flatbuffers": None,
}

#: gocheck suites in scope: the served API (tables, rows, batches, ranges,
#: atomic batches, auto-increment, the row matrix, streams).
SUITES = ("TableStoreSuite", "SearchSuite")
#: Suites out of scope, with the reason.
OUT_OF_SCOPE = {
    "TimeseriesSuite": "timeseries tables are not served (and Debian 12 has no Go flatbuffers "
                       "runtime)",
}
#: Tests of the suites in scope that are out of scope: pattern on "Suite.Test" -> reason.
EXCLUDED = ((re.compile(r"^TableStoreSuite\.TestSQL"), "SQL is not served"),)

#: The copy's test-setup edits: (file under the package, pattern of a line,
#: why).  Each pattern must match exactly one line, or the run stops.
PATCHES = (
    ("api_test.go", r"^\s*PrepareSQLSearchIndex\(c,.*\)\s*$",
     "SetUpSuite creates a search index for the SQL tests (SQL is not served)"),
    ("api_test.go", r"^\s*WaitDataSyncByMatchAllQuery\(c,.*\)\s*$",
     "SetUpSuite waits for that search index to sync"),
)

#: Ours: the flatbuffers API that the SDK's generated timeseries and SQL code
#: names, every function panicking (compiles; never called by the tests run).
FLATBUFFERS_STANDIN = '''\
// Package flatbuffers is a compile-only stand-in written by regions' go_suite:
// Debian 12 packages no Go runtime of flatbuffers, which the SDK needs only
// for timeseries and SQL, both out of scope. Every function panics.
package flatbuffers

type UOffsetT uint32
type SOffsetT int32
type VOffsetT uint16

const SizeUint32 = 4

func standIn() { panic("flatbuffers stand-in (regions go_suite): timeseries and SQL are out of scope") }

func GetUOffsetT(buf []byte) UOffsetT { standIn(); return 0 }

type Table struct {
	Bytes []byte
	Pos   UOffsetT
}

func (t *Table) Offset(vtableOffset VOffsetT) VOffsetT         { standIn(); return 0 }
func (t *Table) Indirect(off UOffsetT) UOffsetT                { standIn(); return 0 }
func (t *Table) String(off UOffsetT) string                    { standIn(); return "" }
func (t *Table) ByteVector(off UOffsetT) []byte                { standIn(); return nil }
func (t *Table) VectorLen(off UOffsetT) int                    { standIn(); return 0 }
func (t *Table) Vector(off UOffsetT) UOffsetT                  { standIn(); return 0 }
func (t *Table) GetBool(off UOffsetT) bool                     { standIn(); return false }
func (t *Table) GetInt8(off UOffsetT) int8                     { standIn(); return 0 }
func (t *Table) GetInt32(off UOffsetT) int32                   { standIn(); return 0 }
func (t *Table) GetInt64(off UOffsetT) int64                   { standIn(); return 0 }
func (t *Table) GetUint32(off UOffsetT) uint32                 { standIn(); return 0 }
func (t *Table) GetFloat64(off UOffsetT) float64               { standIn(); return 0 }
func (t *Table) MutateBool(off UOffsetT, n bool) bool          { standIn(); return false }
func (t *Table) MutateInt8(off UOffsetT, n int8) bool          { standIn(); return false }
func (t *Table) MutateInt32(off UOffsetT, n int32) bool        { standIn(); return false }
func (t *Table) MutateInt64(off UOffsetT, n int64) bool        { standIn(); return false }
func (t *Table) MutateFloat64(off UOffsetT, n float64) bool    { standIn(); return false }
func (t *Table) MutateInt8Slot(slot VOffsetT, n int8) bool     { standIn(); return false }
func (t *Table) MutateInt64Slot(slot VOffsetT, n int64) bool   { standIn(); return false }
func (t *Table) MutateUint32Slot(slot VOffsetT, n uint32) bool { standIn(); return false }

type Builder struct{}

func NewBuilder(initialSize int) *Builder                                 { standIn(); return nil }
func (b *Builder) StartObject(numfields int)                              { standIn() }
func (b *Builder) EndObject() UOffsetT                                    { standIn(); return 0 }
func (b *Builder) StartVector(elemSize, numElems, alignment int) UOffsetT { standIn(); return 0 }
func (b *Builder) EndVector(vectorNumElems int) UOffsetT                  { standIn(); return 0 }
func (b *Builder) CreateString(s string) UOffsetT                         { standIn(); return 0 }
func (b *Builder) CreateByteVector(v []byte) UOffsetT                     { standIn(); return 0 }
func (b *Builder) Finish(rootTable UOffsetT)                              { standIn() }
func (b *Builder) FinishSizePrefixed(rootTable UOffsetT)                  { standIn() }
func (b *Builder) FinishedBytes() []byte                                  { standIn(); return nil }
func (b *Builder) PlaceByte(x byte)                                       { standIn() }
func (b *Builder) PrependBool(x bool)                                     { standIn() }
func (b *Builder) PrependInt8(x int8)                                     { standIn() }
func (b *Builder) PrependInt64(x int64)                                   { standIn() }
func (b *Builder) PrependFloat64(x float64)                               { standIn() }
func (b *Builder) PrependUOffsetT(off UOffsetT)                           { standIn() }
func (b *Builder) PrependUOffsetTSlot(o int, x, d UOffsetT)               { standIn() }
func (b *Builder) PrependInt8Slot(o int, x, d int8)                       { standIn() }
func (b *Builder) PrependInt64Slot(o int, x, d int64)                     { standIn() }
func (b *Builder) PrependUint32Slot(o int, x, d uint32)                   { standIn() }
'''
FLATBUFFERS = "github.com/google/flatbuffers/go"

#: The variables of the SDK's testConfig package that the tests read.
CONFIG_VARS = ("OtsEndpoint", "InstanceName", "OtsAccessId", "OtsAccessKey")

sdk_source = vendor_suite.source_type(PARTS, "aliyun/aliyun-tablestore-go-sdk",
                                      "tablestore/, common/ and testConfig/")


class Missing(RuntimeError):
    """What to install, as the one line that says so."""


# -- what the package imports ------------------------------------------------

_IMPORT_BLOCK = re.compile(r"^import\s*\((.*?)^\)", re.S | re.M)
_IMPORT_ONE = re.compile(r'^import\s+(?:[\w.]+\s+)?"([^"]+)"', re.M)
_QUOTED = re.compile(r'^\s*(?:[\w.]+\s+)?"([^"]+)"', re.M)


def go_imports(text: str) -> set:
    """The import paths of one Go source file."""
    found = set(_IMPORT_ONE.findall(text))
    for block in _IMPORT_BLOCK.findall(text):
        found.update(_QUOTED.findall(block))
    return found


def _go_files(directory: str, tests: bool):
    for name in sorted(os.listdir(directory)):
        if name.endswith(".go") and (tests or not name.endswith("_test.go")):
            yield os.path.join(directory, name)


def external_imports(module_root: str, package: str = PACKAGE) -> set:
    """The import paths outside the standard library and the SDK's own
    module that ``package`` (with its tests) and the SDK packages it
    imports (without theirs) need."""
    seen, external = set(), set()
    todo = [(package, True)]
    while todo:
        rel, tests = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        directory = os.path.join(module_root, rel)
        if not os.path.isdir(directory):
            raise RuntimeError(f"the SDK's source has no {rel}/ (imported by the tests)")
        for path in _go_files(directory, tests):
            with open(path, encoding="utf-8") as f:
                for imp in go_imports(f.read()):
                    if imp.startswith(MODULE + "/"):
                        todo.append((imp[len(MODULE) + 1:], False))
                    elif "." in imp.split("/")[0]:
                        external.add(imp)
    return external


def debian_package(import_path: str):
    """(prefix, Debian package or None) for ``import_path``; KeyError if unknown."""
    for prefix, deb in DEBIAN.items():
        if import_path == prefix or import_path.startswith(prefix + "/"):
            return prefix, deb
    raise KeyError(import_path)


def missing_packages(imports, gocode: str | None = None, go=None) -> list:
    """The Debian packages to install for ``imports`` (and Go itself, unless
    ``go`` is found), in a stable order; RuntimeError for an import no
    Debian package is known to provide."""
    gocode = gocode or GOCODE
    needed = [] if go else [GO_PACKAGE]
    for imp in sorted(imports):
        try:
            _, deb = debian_package(imp)
        except KeyError:
            raise RuntimeError(f"the SDK imports {imp}, which no Debian package known to "
                               f"{PROG} provides (add it to DEBIAN)") from None
        if deb is None or os.path.isdir(os.path.join(gocode, "src", imp)):
            continue
        if deb not in needed:
            needed.append(deb)
    return needed


def apt_line(packages) -> str:
    return "apt-get install -y " + " ".join(packages)


# -- the copy: test setup, configuration, stand-ins -------------------------

def apply_patches(package_dir: str) -> list:
    """Take the ``PATCHES`` lines out of the copy; the lines taken, as
    ``file:line: text``.  RuntimeError if a pattern does not match one line."""
    done = []
    for name, pattern, why in PATCHES:
        path = os.path.join(package_dir, name)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        hits = [i for i, ln in enumerate(lines) if re.match(pattern, ln)]
        if len(hits) != 1:
            raise RuntimeError(f"the SDK's {PACKAGE}/{name} changed: {len(hits)} lines match "
                               f"{pattern!r} (one expected), so its test setup cannot be "
                               f"adjusted ({why})")
        i = hits[0]
        done.append(f"{name}:{i + 1}: {lines[i].strip()}")
        lines[i] = re.match(r"\s*", lines[i]).group(0) + "// taken out by regions' go_suite: " + why
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    return done


def config_text(endpoint: str) -> str:
    """The copy's ``testConfig/config.go``: the fresh server and its keys."""
    values = (endpoint, vendor_suite.INSTANCE, vendor_suite.KEY_ID, vendor_suite.SECRET)
    body = "".join('\t%-12s = "%s"\n' % (name, value) for name, value in zip(CONFIG_VARS, values))
    return ("// Written by regions' go_suite: the SDK's tests against a fresh regions-server.\n"
            "package testConfig\n\nvar (\n" + body + ")\n")


def write_config(module_root: str, endpoint: str) -> str:
    """Rewrite the copy's testConfig for ``endpoint``; RuntimeError if the
    SDK's testConfig does not declare the variables its tests read."""
    directory = os.path.join(module_root, "testConfig")
    text = ""
    for path in _go_files(directory, tests=False):
        with open(path, encoding="utf-8") as f:
            text += f.read()
        os.remove(path)
    absent = [v for v in CONFIG_VARS if not re.search(r"\b%s\b\s*=" % v, text)]
    if absent:
        raise RuntimeError("the SDK's testConfig changed: it declares no %s" % ", ".join(absent))
    path = os.path.join(directory, "config.go")
    with open(path, "w", encoding="utf-8") as f:
        f.write(config_text(endpoint))
    return path


def write_standins(gopath: str, imports, gocode: str | None = None) -> list:
    """Put the stand-ins for imports Debian lacks into ``gopath``."""
    gocode = gocode or GOCODE
    written = []
    if FLATBUFFERS in imports and not os.path.isdir(os.path.join(gocode, "src", FLATBUFFERS)):
        directory = os.path.join(gopath, "src", FLATBUFFERS)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "flatbuffers.go"), "w") as f:
            f.write(FLATBUFFERS_STANDIN)
        written.append(FLATBUFFERS)
    return written


# -- the tests ---------------------------------------------------------------

_SUITE_REG = re.compile(r"^var\s+_\s*=\s*(?:\w+\.)?Suite\(\s*&(\w+)\{", re.M)
_SUITE_TEST = re.compile(r"^func\s+\(\s*\w+\s+\*(\w+)\s*\)\s+(Test\w*)\s*\(\s*\w+\s+\*(?:\w+\.)?C\s*\)",
                         re.M)
_PLAIN_TEST = re.compile(r"^func\s+(Test\w*)\s*\(\s*\w+\s+\*testing\.T\s*\)\s*\{(.*?)^\}", re.M | re.S)


def list_tests(package_dir: str) -> dict:
    """The package's tests: ``{"suites": {suite: [test, ...]}, "plain": [test, ...],
    "hooks": [test, ...]}`` (hooks: the plain tests that run gocheck)."""
    suites, plain, hooks = {}, [], []
    registered = set()
    for path in _go_files(package_dir, tests=True):
        if not path.endswith("_test.go"):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        registered.update(_SUITE_REG.findall(text))
        for suite, test in _SUITE_TEST.findall(text):
            suites.setdefault(suite, []).append(test)
        for test, body in _PLAIN_TEST.findall(text):
            (hooks if "TestingT(" in body else plain).append(test)
    suites = {s: sorted(t) for s, t in suites.items() if s in registered}
    return {"suites": suites, "plain": sorted(plain), "hooks": sorted(hooks)}


def select(tests: dict, pattern: str | None = None) -> dict:
    """Split the tests into ``run`` (gocheck "Suite.Test" names and plain test
    names) and ``excluded`` (name -> reason); ``pattern`` (a regex searched in
    the name) narrows what runs."""
    chosen = re.compile(pattern) if pattern else None
    run, excluded = [], {}
    for suite, names in sorted(tests["suites"].items()):
        for name in names:
            full = f"{suite}.{name}"
            if suite in OUT_OF_SCOPE:
                excluded[full] = OUT_OF_SCOPE[suite]
                continue
            if suite not in SUITES:
                excluded[full] = "a suite not known to test the served API"
                continue
            why = next((why for rx, why in EXCLUDED if rx.search(full)), None)
            if why:
                excluded[full] = why
            elif not chosen or chosen.search(full):
                run.append(full)
    for name in tests["plain"]:
        if not chosen or chosen.search(name):
            run.append(name)
    return {"run": run, "excluded": excluded}


def check_args(suite_tests, plain, hooks) -> list:
    """The test binary's arguments for one run (gocheck runs under its hooks)."""
    top = list(plain) + (list(hooks) if suite_tests else [])
    args = ["-test.run", "^(%s)$" % "|".join(map(re.escape, top)) if top else "^$"]
    if suite_tests:
        args += ["-check.vv", "-check.f",
                 "^(%s)$" % "|".join(re.escape(t) for t in suite_tests)]
    args.append("-test.v")
    return args


_GOCHECK = re.compile(r"^(START|PASS|FAIL|PANIC|SKIP|MISS|FAIL EXPECTED): \S+: (\w+\.\w+)")
_PLAIN = re.compile(r"^(=== RUN|--- PASS|--- FAIL|--- SKIP):? +(\w+)(?=\s|$)")
_FIXTURES = ("SetUpSuite", "TearDownSuite", "SetUpTest", "TearDownTest")


def parse_output(text: str) -> tuple:
    """The outcomes in a test binary's output (gocheck's ``-check.vv`` and
    ``-test.v``): ``({name: (status, lines)}, started)``, status passed,
    failed, skipped or missed, ``lines`` what the test printed; ``started``
    the test begun last and never ended (the binary crashed in it)."""
    outcomes, current, block, fixture_failure = {}, None, [], None
    for line in text.splitlines():
        m = _GOCHECK.match(line) or _PLAIN.match(line)
        if not m:
            if current:
                block.append(line)
            continue
        label, name = m.groups()
        short = name.split(".")[-1]
        if short in _FIXTURES:      # SetUpTest/TearDownTest run inside a test's block
            if short in ("SetUpSuite", "TearDownSuite"):
                if label == "START":
                    current, block = name, []
                else:
                    if label in ("FAIL", "PANIC") and short == "SetUpSuite":
                        fixture_failure = block
                    current, block = None, []
            continue
        if label in ("START", "=== RUN"):
            current, block = name, []
            continue
        status = {"PASS": "passed", "--- PASS": "passed", "FAIL EXPECTED": "passed",
                  "SKIP": "skipped", "--- SKIP": "skipped", "MISS": "missed"}.get(label, "failed")
        lines = block if name == current else []
        if status == "missed" and fixture_failure is not None:
            lines = ["SetUpSuite failed: " + first_line(fixture_failure)]
        elif label == "SKIP":
            lines = [line.split(name, 1)[1].strip(" ()")]
        outcomes[name] = (status, lines)
        current, block = None, []
    return outcomes, current


def first_line(lines) -> str:
    """What went wrong, in one line: gocheck's ``file:line:`` and the check
    that failed with its first ``...`` line, a panic, or a plain test's
    first message."""
    lines = [ln.rstrip() for ln in lines]
    for i, ln in enumerate(lines):
        if ln.startswith("... Panic:") or ln.startswith("panic:"):
            return ln.lstrip(". ")[:300]
        m = re.match(r"^\S*?([\w.]+_test\.go:\d+):$", ln)
        if m:
            rest = [x.strip() for x in lines[i + 1:] if x.strip()]
            code = rest[0] if rest else ""
            detail = next((x for x in rest[1:] if x.startswith("...")), "")
            detail = re.sub(r'\} \(".*"\)$', "}", detail)   # an error's text, said again
            return (f"{m.group(1)}: {code} {detail}".strip())[:300]
        m = re.match(r"^\s+([\w.]+_test\.go:\d+: .*)", ln)
        if m:
            return m.group(1)[:300]
    said = [ln.strip() for ln in lines if ln.strip()]
    return said[0][:300] if said else ""


def crash_line(text: str) -> str:
    """The first line of a Go panic or fatal error in a binary's output."""
    for ln in text.splitlines():
        if ln.startswith(("panic:", "fatal error:")):
            return ln.strip()[:300]
    said = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return said[-1][:300] if said else "no output"


# -- running -----------------------------------------------------------------

def go_env(root: str) -> dict:
    """Go's environment: GOPATH mode, our GOPATH then Debian's, no module proxy."""
    env = dict(os.environ, GO111MODULE="off",
               GOPATH=f"{os.path.join(root, 'gopath')}{os.pathsep}{GOCODE}",
               GOPROXY="off", GOFLAGS="", GOTOOLCHAIN="local", GOSUMDB="off")
    if not env.get("GOCACHE") and not env.get("HOME"):
        env["GOCACHE"] = os.path.join(root, "gocache")
    return env


def run_binary(binary: str, cwd: str, selection: list, plain_all: set, hooks: list,
               env: dict, timeout: float, log) -> dict:
    """Run ``selection`` in the test binary, in new processes while some
    crash; ``{name: (status, lines)}``."""
    results, todo = {}, list(selection)
    while todo:
        suite_tests = [t for t in todo if "." in t]
        plain = [t for t in todo if t in plain_all]
        proc = subprocess.run([binary, *check_args(suite_tests, plain, hooks),
                               "-test.timeout", "%ds" % timeout],
                              cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace",
                              timeout=timeout + 60)
        log.write(proc.stdout)
        outcomes, started = parse_output(proc.stdout)
        for name in todo:
            if name in outcomes:
                results[name] = outcomes[name]
        if started in todo and started not in results:
            results[started] = ("failed", ["the test binary crashed: " + crash_line(proc.stdout)])
        left = [t for t in todo if t not in results]
        if left and (len(left) == len(todo)):
            for name in left:       # no progress: nothing more will run
                results[name] = ("failed", ["not run: the test binary exited %d: %s"
                                            % (proc.returncode, crash_line(proc.stdout))])
            left = []
        todo = left
    return results


def source_commit(source: str) -> str:
    """The SDK's commit, where git can tell."""
    for args in (["--git-dir", source], ["-C", source]):
        try:
            done = subprocess.run(["git", *args, "rev-parse", "--short", "HEAD"],
                                  capture_output=True, text=True)
        except OSError:
            return "unknown"
        if done.returncode == 0:
            return done.stdout.strip()
    return "unknown"


def add_runner_args(p, kept, timeout, timeout_what, verbose_help):
    """The flags every SDK runner takes (this one's and java_suite's):
    --keep (``kept``: what the temporary directory holds), --install,
    --timeout (default ``timeout`` seconds, of ``timeout_what``),
    --server-arg, -v."""
    p.add_argument("--keep", action="store_true",
                   help="keep the temporary directory (%s)" % kept)
    p.add_argument("--install", action="store_true",
                   help="run the apt-get install line for missing Debian packages (as root)")
    p.add_argument("--timeout", type=cliutil.int_in(10, None, "a number of seconds"),
                   default=timeout, help="%s (seconds; default %d)" % (timeout_what, timeout))
    p.add_argument("--server-arg", action="append", default=[],
                   help="an extra regions-server flag (repeatable; --server-arg=-v)")
    p.add_argument("-v", "--verbose", action="store_true", help=verbose_help)


def main(argv=None) -> int:
    p = cliutil.Parser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("source", type=sdk_source,
                   help="the Go SDK's source: a checkout or a bare git directory")
    p.add_argument("-k", "--run", dest="pattern", metavar="PATTERN",
                   help="run only the tests whose name (Suite.Test or Test) this regex matches")
    add_runner_args(p, "GOPATH, test binary, logs", 3600, "the test binary's timeout",
                    "print each failed test's whole output")
    args = p.parse_args(argv)
    check_pattern(p, args.pattern, "-k/--run")
    vendor_suite.check_server_args(p, args.server_arg)
    return run_in_temp(PROG, "go-suite-", args.keep, lambda root: _run(root, args))


def check_pattern(parser, pattern, flag: str) -> None:
    """Refuse, as ``parser``'s error, a ``pattern`` that is not a regex."""
    if pattern:
        try:
            re.compile(pattern)
        except re.error as e:
            parser.error(f"argument {flag}: {pattern!r} is not a regular expression: {e}")


def run_in_temp(prog: str, prefix: str, keep: bool, body) -> int:
    """Run ``body(root)`` (the number of tests failed) in a new temporary
    directory, removed after unless ``keep``; the exit status: 0 when none
    failed, 1 when some did or the run stopped (said in one line)."""
    root = tempfile.mkdtemp(prefix=prefix)
    try:
        failed = body(root)
    except Missing as e:
        return cliutil.fail(prog, e, status=1)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        return cliutil.fail(prog, cliutil.os_error(e) if isinstance(e, OSError) else e, status=1)
    finally:
        if keep:
            print("kept: %s" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if not failed else 1


def apt_install(needed) -> None:
    """Run the ``apt-get install`` line for ``needed`` (as root); Missing if it fails."""
    line = apt_line(needed)
    print("$ " + line, flush=True)
    done = subprocess.run(line.split(), env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if done.returncode:
        raise Missing(f"{line} failed (exit {done.returncode}); run apt-get update first?")


def ensure_packages(imports, install: bool) -> None:
    """Raise Missing (the apt line) unless Go and the Debian packages are
    there; with ``install``, run that line first."""
    needed = missing_packages(imports, go=shutil.which("go"))
    if needed and install:
        apt_install(needed)
        needed = missing_packages(imports, go=shutil.which("go"))
    if needed:
        raise Missing(f"missing Debian packages: {apt_line(needed)} "
                      "(or rerun with --install)")


def _run(root: str, args) -> int:
    """Copy, build and run; the number of tests failed."""
    module_root = os.path.join(root, "gopath", "src", MODULE)
    os.makedirs(module_root)
    vendor_suite.extract(args.source, module_root, PARTS)
    package_dir = os.path.join(module_root, PACKAGE)
    imports = external_imports(module_root)
    ensure_packages(imports, args.install)
    write_standins(os.path.join(root, "gopath"), imports)
    patched = apply_patches(package_dir)
    tests = list_tests(package_dir)
    chosen = select(tests, args.pattern)
    if not chosen["run"]:
        raise RuntimeError(f"no test in scope matches {args.pattern!r}")
    env = go_env(root)
    version = subprocess.run(["go", "version"], capture_output=True, text=True,
                             env=env).stdout.strip()
    server = vendor_suite.Server(root, args.server_arg)
    try:
        write_config(module_root, server.endpoint)
        print("go suite: SDK %s, %s, server %s" % (source_commit(args.source), version,
                                                  server.endpoint))
        for line in patched:
            print("  test setup taken out: " + line)
        binary = os.path.join(root, "tablestore.test")
        build = subprocess.run(["go", "test", "-c", "-o", binary, "."], cwd=package_dir,
                               env=env, capture_output=True, text=True, timeout=1800)
        if build.returncode:
            said = [ln for ln in (build.stderr + build.stdout).splitlines() if ln.strip()]
            raise RuntimeError("the build failed: " + (said[0] if said else "no output"))
        with open(os.path.join(root, "go-test.log"), "w") as log:
            results = run_binary(binary, package_dir, chosen["run"], set(tests["plain"]),
                                 tests["hooks"], env, args.timeout, log)
    finally:
        server.stop()
    return report(chosen, results, args.verbose)


def excluded_lines(excluded: dict) -> list:
    """``excluded`` (name -> reason) as lines: a whole suite out of scope in
    one line with its count, other tests by name."""
    lines, by_reason = [], {}
    for name, why in sorted(excluded.items()):
        suite = name.split(".")[0]
        key = (suite, why) if suite in OUT_OF_SCOPE else (None, why)
        by_reason.setdefault(key, []).append(name)
    for (suite, why), names in by_reason.items():
        if suite:
            lines.append("excluded %s (%d tests): %s" % (suite, len(names), why))
        else:
            lines.append("excluded %s: %s" % (", ".join(names), why))
    return lines


def report_group(title: str, names, results: dict, say, verbose: bool = False,
                 width: int = 40) -> tuple:
    """Print a group of tests: its title with the counts, then each test as
    PASS, SKIP or FAIL (``say(lines, name)``: the one line; ``verbose``: all of a
    failure's lines); ``(passed, failed, skipped)``.  A test without an
    outcome, or missed, failed."""
    outcomes = {}
    for name in names:
        status, lines = results.get(name, ("failed", ["no outcome"]))
        outcomes[name] = ("failed" if status == "missed" else status, lines)
    counts = {}
    for status, _ in outcomes.values():
        counts[status] = counts.get(status, 0) + 1
    print("%-*s %s" % (width, title,
                       ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items()))))
    for name, (status, lines) in outcomes.items():
        short = name.split(".", 1)[-1]
        if status == "passed":
            print("  PASS %s" % short)
        elif status == "skipped":
            print("  SKIP %s: %s" % (short, say(lines, name)))
        else:
            print("  FAIL %s: %s" % (short, "\n".join(lines) if verbose else say(lines, name)))
    return counts.get("passed", 0), counts.get("failed", 0), counts.get("skipped", 0)


def report(chosen: dict, results: dict, verbose: bool = False) -> int:
    """Print each test's outcome by group and the totals; the number failed."""
    groups = {}
    for name in chosen["run"]:
        groups.setdefault(name.split(".")[0] if "." in name else "unit tests (no server)",
                          []).append(name)
    failed = passed = skipped = 0
    for group, names in groups.items():
        p, f, s = report_group(group, names, results, lambda lines, name: first_line(lines),
                               verbose)
        passed, failed, skipped = passed + p, failed + f, skipped + s
    for line in excluded_lines(chosen["excluded"]):
        print(line)
    print("go suite: %d passed, %d failed%s" % (passed, failed,
                                                ", %d skipped" % skipped if skipped else ""))
    return failed


if __name__ == "__main__":
    sys.exit(main())
