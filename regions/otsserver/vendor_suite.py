"""Run the official SDK's own tests and examples against a fresh ``regions-server``.

    python -m regions.otsserver.vendor_suite PATH [-k PATTERN] [--module M ...] [--example E ...]
                                                  [--no-examples] [--keep] [--server-arg ARG ...]

``PATH`` is the source of ``aliyun/aliyun-tablestore-python-sdk``: a checkout
or a bare git directory (``git archive`` is used then).  Only its ``tests/``
and ``examples/`` are copied out, into a temporary directory: its own
``tablestore/`` package would shadow the installed SDK, which is what runs
(the runner checks that it is the one imported).  The vendor wrote these tests
against the cloud service; they are the yardstick of "code written for the
cloud runs unchanged".

What runs: the unittest modules in ``MODULES`` (minus any case matching
``EXCLUDED``, listed as excluded with its reason), each in a child process
against its own fresh server, and the scripts in ``EXAMPLES``, each in a
child process against its own fresh server (an example passes when it exits
0 and prints no traceback).  ``EXCLUDED_MODULES`` and ``EXCLUDED_EXAMPLES``
name the vendor's modules and examples left out and why.

The cloud waits are patched out in the child, not in the copied files:
``APITestBase.wait_for_partition_load`` and ``wait_for_capacity_unit_update``
return at once, and a ``time.sleep`` called from the copied tests or
examples first waits until every search index on the server is in sync as
of the call, then sleeps at most ``SLEEP_CAP`` seconds.  Their sleeps wait
for cloud table loads, "too frequent table operations" and the cloud's
search index build (``time.sleep(100)`` after writing the rows), not for
time to pass in the data.  "In sync as of the call" is the service's own
signal, read over the wire like any client: DescribeSearchIndex's sync phase
is INCR and its ``current_sync_timestamp`` is at or after the moment the
sleep was called (the server reports there the latest moment before which
every acknowledged write is in the index: protocol.py); the wait is bounded
by the sleep asked for, so a test never waits longer than it meant to, and
an index never in sync makes its queries fail, not the runner hang.
Tables the vendor's CI creates in advance (``PREPARED_TABLES``: the
transaction tests' table) are created first.  The summary lists every
failure with its first line; the exit status is 0 only when everything
passed.

CI does not run this (no network to fetch the SDK's repository); the result
is recorded in docs/otsserver.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import io

from regions import cliutil
from regions.extras import guard

PROG = "python -m regions.otsserver.vendor_suite"

MODULES = ("row_op_test", "filter_and_condition_update_unitttest", "sdk_param_unittest",
           "transaction_test", "table_operation_test", "search_index_test",
           "full_text_search_test", "parallel_scan_test", "agg_test", "group_by_test")
EXAMPLES = ("put_row", "get_row", "update_row", "delete_row", "batch_get_row", "batch_write_row",
            "get_range", "pk_auto_incr", "transaction_and_commit", "transaction_and_abort",
            "table_operations", "secondary_index_operations", "search_index", "full_text_search",
            "vector_search", "agg", "group_by", "parallel_scan")
#: The vendor's examples not run: example -> why.
EXCLUDED_EXAMPLES = {}
#: Test cases left out, matched on the test's name: name pattern -> why.
EXCLUDED = {}
#: The vendor's modules not run: module -> why.
EXCLUDED_MODULES = {"sql_query_test": "SQL is not served",
                    "timeseries_api_test": "timeseries tables are not served",
                    "timeseries_meta_condition_test": "timeseries tables are not served"}
SLEEP_CAP = 0.05
#: Tables the vendor's CI creates before a module or example runs ("Table support
#: transaction must be set in advance", transaction_test.py): name -> PK schema.
PREPARED_TABLES = {"transaction_test": {"TransactionTable": [("PK0", "INTEGER"), ("PK1", "STRING")]},
                   "transaction_and_commit": {"TransactionTable": [("PK0", "INTEGER"),
                                                                   ("PK1", "STRING")]},
                   "transaction_and_abort": {"TransactionTable": [("PK0", "INTEGER"),
                                                                  ("PK1", "STRING")]}}
KEY_ID, SECRET, INSTANCE = "vendor_key_id", "vendor_key_secret", "vendor"

# Runs first in every child (argv[1]: the copy's root): the installed SDK, and
# the patched sleep: wait for the server's search indexes, then at most the cap.
_PRELUDE = r'''
import os, sys, time
root = os.path.abspath(sys.argv[1])
sys.path.insert(0, root)
import tablestore
assert not os.path.abspath(tablestore.__file__).startswith(root), \
    "the copied sources shadow the installed SDK: %s" % tablestore.__file__
_sleep = time.sleep
_client = []

def _in_sync(client, table, index, since_ns):
    try:
        _, stat = client.describe_search_index(table, index)
    except tablestore.OTSServiceError:
        return True                                  # dropped meanwhile
    return (stat is not None and stat.sync_phase == tablestore.SyncPhase.INCR
            and stat.current_sync_timestamp >= since_ns)

def wait_for_search_indexes(since_ns, deadline):
    """Until every search index on the server holds every write acknowledged
    before ``since_ns`` (the server's sync point), or ``deadline`` (monotonic)."""
    import logging
    logging.getLogger("tablestore-client").addHandler(logging.NullHandler())
    if not _client:
        _client.append(tablestore.OTSClient(
            os.environ["OTS_TEST_ENDPOINT"], os.environ["OTS_TEST_ACCESS_KEY_ID"],
            os.environ["OTS_TEST_ACCESS_KEY_SECRET"], os.environ["OTS_TEST_INSTANCE"],
            retry_policy=tablestore.NoRetryPolicy()))
    client = _client[0]
    while True:
        try:
            pending = [key for key in client.list_search_index()
                       if not _in_sync(client, key[0], key[1], since_ns)]
        except tablestore.OTSServiceError:
            pending = True
        if not pending or time.monotonic() >= deadline:
            return
        _sleep(0.01)

def capped_sleep(seconds):
    caller = os.path.abspath(sys._getframe(1).f_code.co_filename)
    if caller.startswith(root + os.sep):
        wait_for_search_indexes(time.time_ns(), time.monotonic() + seconds)
        seconds = min(seconds, @CAP@)
    _sleep(seconds)
time.sleep = capped_sleep
'''.replace("@CAP@", repr(SLEEP_CAP))

# Runs one module in the child: patch the test base's waits, write the outcomes as JSON.
_CHILD = _PRELUDE + r'''
import json, re, unittest
module, out, pattern, excluded = sys.argv[2:6]
try:
    from tests.lib import api_test_base
    api_test_base.APITestBase.wait_for_partition_load = lambda self, *a, **k: None
    api_test_base.APITestBase.wait_for_capacity_unit_update = lambda self, *a, **k: None
except ImportError:
    pass
excluded = [(re.compile(p), why) for p, why in json.loads(excluded).items()]
suite = unittest.defaultTestLoader.loadTestsFromName("tests." + module)
outcomes = []
def flat(s):
    for t in s:
        if isinstance(t, unittest.TestSuite):
            yield from flat(t)
        else:
            yield t
class Result(unittest.TestResult):
    def addSuccess(self, test):
        outcomes.append((test.id(), "passed", ""))
    def addFailure(self, test, err):
        outcomes.append((test.id(), "failed", self._exc_info_to_string(err, test)))
    def addError(self, test, err):
        outcomes.append((test.id(), "error", self._exc_info_to_string(err, test)))
    def addSkip(self, test, reason):
        outcomes.append((test.id(), "skipped", reason))
run = unittest.TestSuite()
for t in flat(suite):
    name = t.id().rsplit(".", 1)[-1]
    why = next((why for p, why in excluded if p.search(name)), None)
    if why is not None:
        outcomes.append((t.id(), "excluded", why))
    elif pattern and pattern not in t.id():
        continue
    else:
        run.addTest(t)
run.run(Result())
json.dump({"sdk": tablestore.__file__, "outcomes": outcomes}, open(out, "w"))
'''

# Runs one example script (argv[2], in the current directory) as __main__.
# The parallel_scan example imports the third-party ``threadpool`` (not one of
# our dependencies): when it is not installed, a stand-in of ours with the
# four names the example uses, each request on a thread of its own.
_EXAMPLE = _PRELUDE + r'''
try:
    import threadpool
except ImportError:
    import threading, types
    threadpool = types.ModuleType("threadpool")

    class WorkRequest:
        def __init__(self, callable_, args=None, kwds=None):
            self.callable, self.args, self.kwds = callable_, list(args or ()), dict(kwds or {})

    def makeRequests(callable_, args_list, callback=None, exc_callback=None):
        return [WorkRequest(callable_, *item) if isinstance(item, tuple)
                else WorkRequest(callable_, [item]) for item in args_list]

    class ThreadPool:
        def __init__(self, num_workers):
            self.threads = []

        def putRequest(self, request):
            t = threading.Thread(target=request.callable, args=request.args,
                                 kwargs=request.kwds)
            t.start()
            self.threads.append(t)

        def wait(self):
            for t in self.threads:
                t.join()

    threadpool.WorkRequest, threadpool.makeRequests = WorkRequest, makeRequests
    threadpool.ThreadPool = ThreadPool
    sys.modules["threadpool"] = threadpool
import runpy
sys.argv = [sys.argv[2]]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def source_type(parts, repo: str, what: str):
    """A ``type=`` for a vendor's source, a checkout or a bare git directory,
    that holds every path of ``parts`` (``what`` names them in the error)."""
    def source(text: str) -> str:
        cliutil.existing_dir(text)
        if all(os.path.exists(os.path.join(text, part)) for part in parts):
            return text
        try:
            bare = all(subprocess.run(["git", "--git-dir", text, "cat-file", "-e", f"HEAD:{part}"],
                                      capture_output=True).returncode == 0
                       for part in parts)
        except OSError:
            bare = False
        if not bare:
            raise argparse.ArgumentTypeError(
                f"{text} is not the SDK's source: it needs {what} (give a checkout or a bare git "
                f"directory of {repo})")
        return text
    return source


#: A ``type=``: the Python SDK's source, with ``tests/`` and ``examples/``.
sdk_source = source_type(("tests", "examples"), "aliyun/aliyun-tablestore-python-sdk",
                         "tests/ and examples/")


def absent_blobs(git_dir: str, parts) -> list:
    """The paths under ``parts`` whose blobs HEAD names but the git
    directory lacks (a partial mirror leaves its largest files out), sorted."""
    listing = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", "HEAD", "--",
                              *parts], check=True, capture_output=True).stdout
    entries = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, path = item.split(b"\t", 1)
        kind, obj = meta.split()[1:3]
        if kind == b"blob":
            entries.append((obj, path.decode("utf-8", "surrogateescape")))
    if not entries:
        return []
    checked = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "--batch-check"],
                             input=b"".join(obj + b"\n" for obj, _ in entries),
                             check=True, capture_output=True).stdout.decode().splitlines()
    return sorted(path for (_, path), line in zip(entries, checked) if line.endswith(" missing"))


def extract(source: str, dest: str, parts=("tests", "examples")) -> list:
    """Copy ``parts`` (paths) of a vendor's source, a checkout or a bare git
    directory (``git archive HEAD``), into ``dest``; the paths left out
    because the git directory lacks their blobs (none from a checkout)."""
    if all(os.path.exists(os.path.join(source, part)) for part in parts):
        for part in parts:
            src, dst = os.path.join(source, part), os.path.join(dest, part)
            if os.path.isdir(src):
                shutil.copytree(src, dst)
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)
        return []
    absent = absent_blobs(source, parts)
    data = subprocess.run(["git", "--git-dir", source, "archive", "HEAD", "--", *parts,
                           *(":(exclude,literal)" + path for path in absent)],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return absent


class Server:
    """A fresh ``regions-server`` on a free loopback port, in its own data directory."""

    def __init__(self, workdir: str, extra_args=()):
        self.data = tempfile.mkdtemp(prefix="data-", dir=workdir)
        cmd = [sys.executable, "-m", "regions.otsserver", "--data", self.data, "--port", "0",
               "--instance", INSTANCE, "--access-key-id", KEY_ID,
               "--access-key-secret", SECRET, *extra_args]
        self.log = open(os.path.join(self.data, "server.log"), "w+")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"serving (http://\S+)", line)
        if not m:
            self.stop()
            with open(self.log.name) as log:
                said = log.read().split("\n") + [line]
            said = [ln.strip() for ln in said if ln.strip()]
            raise RuntimeError("regions-server did not start: %s"
                               % (said[-1] if said else "no output"))
        self.endpoint = m.group(1)

    def prepare(self, name: str) -> None:
        """Create the tables the vendor's CI has in place before ``name`` runs."""
        tables = PREPARED_TABLES.get(name)
        if not tables:
            return
        import logging
        logging.getLogger("tablestore").addHandler(logging.NullHandler())
        import tablestore
        client = tablestore.OTSClient(self.endpoint, KEY_ID, SECRET, INSTANCE)
        for table, schema in tables.items():
            client.create_table(tablestore.TableMeta(table, schema), tablestore.TableOptions(),
                                tablestore.ReservedThroughput(tablestore.CapacityUnit(0, 0)))

    def env(self) -> dict:
        return dict(os.environ, OTS_TEST_ENDPOINT=self.endpoint, OTS_TEST_ACCESS_KEY_ID=KEY_ID,
                    OTS_TEST_ACCESS_KEY_SECRET=SECRET, OTS_TEST_INSTANCE=INSTANCE,
                    PYTHONDONTWRITEBYTECODE="1")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def first_line(text: str) -> str:
    """The line of a traceback that says what went wrong."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[\w.]*(Error|Exception|AssertionError)\b", ln) or ln.startswith("assert"):
            return ln[:300]
    return lines[-1][:300] if lines else ""


def run_module(root: str, module: str, pattern: str, server_args) -> list:
    server = Server(root, server_args)
    out = os.path.join(server.data, "outcomes.json")
    try:
        server.prepare(module)
        proc = subprocess.run([sys.executable, "-c", _CHILD, root, module, out, pattern or "",
                               json.dumps(EXCLUDED)],
                              cwd=root, env=server.env(), capture_output=True, text=True,
                              timeout=1800)
        if not os.path.exists(out):
            return [("tests.%s" % module, "error", proc.stderr or proc.stdout)]
        return [tuple(o) for o in json.load(open(out))["outcomes"]]
    finally:
        server.stop()


def run_example(root: str, name: str, server_args) -> tuple:
    server = Server(root, server_args)
    try:
        server.prepare(name)
        proc = subprocess.run([sys.executable, "-c", _EXAMPLE, root, name + ".py"],
                              cwd=os.path.join(root, "examples"),
                              env=server.env(), capture_output=True, text=True, timeout=600)
        text = proc.stdout + proc.stderr
        ok = proc.returncode == 0 and "Traceback" not in text
        return name, "passed" if ok else "failed", "" if ok else text
    finally:
        server.stop()


def check_server_args(parser, extra) -> None:
    """Refuse, as ``parser``'s error, --server-arg flags regions-server
    would refuse (before anything is copied or started)."""
    from regions.otsserver.cli import build_parser
    server = build_parser()
    server.error = lambda message: parser.error(f"--server-arg: {message}")
    server.parse_args(["--in-memory", "--port", "0", *extra])


@guard(PROG, "the vendor suite")
def main(argv=None) -> int:
    p = cliutil.Parser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("source", type=sdk_source,
                   help="the SDK's source: a checkout or a bare git directory")
    p.add_argument("-k", dest="pattern", help="run only tests whose id contains this")
    p.add_argument("--module", action="append", choices=MODULES,
                   help="modules to run (all, or none when only --example is given)")
    p.add_argument("--no-examples", action="store_true")
    p.add_argument("--example", action="append", choices=EXAMPLES,
                   help="examples to run (all, or none when only --module is given)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--server-arg", action="append", default=[],
                   help="an extra regions-server flag (repeatable; --server-arg=-v)")
    p.add_argument("-v", "--verbose", action="store_true", help="print whole tracebacks")
    args = p.parse_args(argv)
    check_server_args(p, args.server_arg)
    root = tempfile.mkdtemp(prefix="vendor-suite-")
    try:
        failed = _run(root, args)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        return cliutil.fail(PROG, e, status=1)
    finally:
        if args.keep:
            print("kept: %s" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("vendor suite: %s" % ("all passed" if not failed else "%d failed" % failed))
    return 0 if not failed else 1


def _run(root: str, args) -> int:
    """Copy the SDK's tests into ``root`` and run them; the number failed."""
    failed = 0
    extract(args.source, root)
    # Naming modules or examples picks them alone: --example without --module
    # runs no module, --module without --example no example.
    modules = args.module or (() if args.example else MODULES)
    examples = args.example or (() if args.module else EXAMPLES)
    if not args.module and not args.example:
        for module, why in EXCLUDED_MODULES.items():
            print("%-40s excluded: %s" % (module, why))
        for name, why in EXCLUDED_EXAMPLES.items():
            print("%-40s excluded: %s" % ("examples/%s.py" % name, why))
    for module in modules:
        outcomes = run_module(root, module, args.pattern, args.server_arg)
        counts = {}
        for _, status, _ in outcomes:
            counts[status] = counts.get(status, 0) + 1
        print("%-40s %s" % (module, ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items()))))
        for test_id, status, text in outcomes:
            if status in ("failed", "error"):
                failed += 1
                print("  %s %s: %s" % (status.upper(), test_id.split(".", 2)[-1],
                                       text if args.verbose else first_line(text)))
    if not args.no_examples and not args.pattern:
        for name in examples:
            name, status, text = run_example(root, name, args.server_arg)
            print("%-40s %s" % ("examples/%s.py" % name, status))
            if status != "passed":
                failed += 1
                print("  " + (text if args.verbose else first_line(text)))
    return failed


if __name__ == "__main__":
    sys.exit(main())
