"""Experiment 2: regions-server killed (SIGKILL and SIGTERM, alternately) under official-SDK writers.

The parent starts ``python -m regions.otsserver`` on a free port and
``clients`` writer processes (``client``), each an official ``tablestore``
SDK client (``WriteRetryPolicy``, so the SDK retries writes on its own; the
policy is wrapped to count the retries it makes).  The server runs with the
killloop's tiny thresholds (``SPLIT_EARLY``), so its one-region table splits
while it is killed.  Then, ``count`` times, it
waits a random moment, stops the server (odd cycles SIGKILL, even cycles
SIGTERM: a clean stop that must let requests in flight finish) and restarts
it on the same directory and port.  Writers see refused or reset
connections and go on; at the end the parent stops the server and checks the
store embedded (``regions.tablestore.OTSClient`` on the same directory).

Each writer ``c`` makes operations whose double application is visible:

* ``seq``: UpdateRow of row ``(c, -1)`` conditioned on ``seq == i - 1``
  that sets ``seq = i`` and INCREMENTs ``n``.  When the outcome is unknown
  (the connection broke), the writer retries the same request until it is
  known; a condition failure then means an earlier attempt was applied
  (``seq == i`` is read back to be sure), and is counted as a *refused
  retry*.  So each step applies exactly once: at the end ``seq`` is the last
  step and ``n == seq``.  An INCREMENT applied twice makes ``n`` larger.
* ``put``: PutRow of ``(c, i)`` with EXPECT_NOT_EXIST and ``v = "c-i"``,
  retried the same way (a condition failure with our value in the row is a
  refused retry); acknowledged rows must be present with their value.
* ``batch``: BatchWriteRow of 1 to 10 such rows; each row's outcome as above.
* ``bump``: an unconditional INCREMENT of ``m`` on row ``(c, -2)``, never
  retried by the writer: ``m`` must lie between the acknowledged bumps and
  those plus the bumps whose outcome stayed unknown (more would be a double
  application).

No row may exist that no writer attempted (a phantom).

    python -m regions.soak wire --seed 1 --count 20
"""
import json
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import time

import regions
from regions import cliutil
from regions.tablestore import INF_MAX, INF_MIN, OTSClient

from . import Summary
from . import workload
from .harness import child_env, parser, report, start

__all__ = ["run", "main", "client"]

TABLE = "wire"
INSTANCE, KEY_ID, SECRET = "soak", "soak-ak", "soak-sk"
_CLIENT = "from regions.soak.wire import client; client()"
_START_TIMEOUT_S = 60.0
_BROKEN = "OTSConditionCheckFail"
#: The server's options (``regions-server -D``): the killloop's tiny
#: thresholds, so the table splits over and over while it is being killed.
SPLIT_EARLY = ("-D", "memtable_bytes=8KiB", "-D", "split_policy=constant",
               "-D", "max_region_bytes=24KiB", "-D", "split_jitter=0.25",
               "-D", "maintenance_interval=0.02")


# -- the writer process ---------------------------------------------------------

def client(argv=None) -> None:
    """A writer: ``ENDPOINT NUMBER LOG SEED STOP``; writes until the file STOP
    exists, then logs its counts (``S {json}``) and exits 0."""
    endpoint, number, log_path, seed, stop = (argv or sys.argv[1:])[:5]
    import tablestore as ts
    logging.getLogger("tablestore").addHandler(logging.NullHandler())
    logging.getLogger("tablestore").setLevel(logging.CRITICAL)

    class CountingRetryPolicy(ts.WriteRetryPolicy):
        retries = 0

        def should_retry(self, retry_times, exception, api_name):
            yes = super().should_retry(retry_times, exception, api_name)
            CountingRetryPolicy.retries += bool(yes)
            return yes

    sdk = ts.OTSClient(endpoint, KEY_ID, SECRET, INSTANCE, socket_timeout=10,
                       retry_policy=CountingRetryPolicy())
    _Writer(sdk, ts, int(number), workload.AckFile(log_path), random.Random(int(seed))).run(
        stop, CountingRetryPolicy)


class _Unknown(Exception):
    """The request's outcome is unknown: the connection broke or the server failed."""


class _Writer:
    def __init__(self, sdk, ts, number, log, rng):
        self.sdk, self.ts, self.c, self.log, self.rng = sdk, ts, number, log, rng
        self.seq = self.put_i = 0
        self.counts = {"ops": 0, "refused_retries": 0, "unknown": 0, "unknown_bumps": 0}
        self.latencies = []     # [start, seconds] of every SDK call (time.monotonic: system-wide)

    def run(self, stop, policy):
        while not os.path.exists(stop):
            kind = self.rng.choices(("seq", "put", "batch", "bump"), (3, 3, 2, 2))[0]
            getattr(self, "_" + kind)()
            self.counts["ops"] += 1
        self.counts["sdk_retries"] = policy.retries
        self.log.note("L", self.latencies)
        self.log.note("S", self.counts)

    def _call(self, fn):
        """``fn()``, timed; a broken connection or a 5xx becomes ``_Unknown``."""
        ts = self.ts
        t0 = time.monotonic()
        try:
            return fn()
        except ts.OTSServiceError as e:
            if e.get_http_status() >= 500 or e.get_error_code() in ("OTSServerUnavailable",):
                raise _Unknown(e.get_error_code()) from None
            raise
        except ts.OTSClientError as e:
            raise _Unknown(str(e)[:80]) from None
        except Exception as e:          # urllib3 and socket errors reach us as they are
            if type(e).__module__.split(".")[0] in ("urllib3", "socket", "http") \
                    or isinstance(e, OSError):
                raise _Unknown(repr(e)[:80]) from None
            raise
        finally:
            self.latencies.append((round(t0, 4), round(time.monotonic() - t0, 6)))

    def _until_known(self, fn):
        """Retry ``fn`` until its outcome is known: True (applied by this
        call) or False (condition failed)."""
        while True:
            try:
                self._call(fn)
                return True
            except _Unknown:
                self.counts["unknown"] += 1
                time.sleep(0.05)
            except self.ts.OTSServiceError as e:
                if e.get_error_code() != _BROKEN:
                    raise
                return False

    def _row(self, pk):
        while True:
            try:
                _, row, _ = self._call(lambda: self.sdk.get_row(TABLE, pk, max_version=1))
                return {n: v for n, v, _ in row.attribute_columns} if row else None
            except _Unknown:
                time.sleep(0.05)

    def _seq(self):
        ts, i = self.ts, self.seq + 1
        pk = _pk(self.c, -1)
        cond = ts.Condition(ts.RowExistenceExpectation.IGNORE,
                            ts.SingleColumnCondition("seq", i - 1, ts.ComparatorType.EQUAL,
                                                     pass_if_missing=(i == 1)))
        row = ts.Row(pk, {"PUT": [("seq", i)], "INCREMENT": [("n", 1)]})
        self.log.begin({"kind": "seq", "i": i})
        if not self._until_known(lambda: self.sdk.update_row(TABLE, row, cond)):
            got = self._row(pk)
            if (got or {}).get("seq") != i:
                raise AssertionError(f"seq {i}: the condition failed, row holds {got}")
            self.counts["refused_retries"] += 1
        self.log.ack(i, ["seq"])
        self.seq = i

    def _new_rows(self, n):
        first, self.put_i = self.put_i, self.put_i + n
        return [(_pk(self.c, i), "c%d-%d" % (self.c, i)) for i in range(first, first + n)]

    def _resolve_put(self, pk, value, applied):
        if not applied:
            got = self._row(pk)
            if (got or {}).get("v") != value:
                raise AssertionError(f"{pk}: EXPECT_NOT_EXIST failed, row holds {got}")
            self.counts["refused_retries"] += 1

    def _put(self):
        ts = self.ts
        ((pk, value),) = self._new_rows(1)
        self.log.begin({"kind": "put", "k": pk[0][1]})
        applied = self._until_known(lambda: self.sdk.put_row(
            TABLE, ts.Row(pk, [("v", value)]),
            ts.Condition(ts.RowExistenceExpectation.EXPECT_NOT_EXIST)))
        self._resolve_put(pk, value, applied)
        self.log.ack(pk[0][1], ["put"])

    def _batch(self):
        ts = self.ts
        rows = self._new_rows(self.rng.randint(1, 10))
        self.log.begin({"kind": "batch", "k": [pk[0][1] for pk, _ in rows]})
        left = rows
        while left:
            request = ts.BatchWriteRowRequest()
            request.add(ts.TableInBatchWriteRowItem(TABLE, [
                ts.PutRowItem(ts.Row(pk, [("v", v)]),
                              ts.Condition(ts.RowExistenceExpectation.EXPECT_NOT_EXIST))
                for pk, v in left]))
            try:
                response = self._call(lambda: self.sdk.batch_write_row(request))
            except _Unknown:
                self.counts["unknown"] += 1
                time.sleep(0.05)
                continue
            results = sorted(response.get_put()[0] + response.get_put()[1], key=lambda r: r.index)
            retry = []
            for (pk, value), result in zip(left, results):
                if result.is_ok:
                    continue
                if result.error_code == _BROKEN:
                    self._resolve_put(pk, value, False)
                else:                       # a row-level server error: outcome unknown
                    retry.append((pk, value))
            left = retry
        for pk, _ in rows:
            self.log.ack(pk[0][1], ["put"])

    def _bump(self):
        ts = self.ts
        row = ts.Row(_pk(self.c, -2), {"INCREMENT": [("m", 1)]})
        self.log.begin({"kind": "bump"})
        try:
            self._call(lambda: self.sdk.update_row(
                TABLE, row, ts.Condition(ts.RowExistenceExpectation.IGNORE)))
            self.log.ack(-2, ["bump"])
        except _Unknown:
            self.counts["unknown_bumps"] += 1
            self.log.ack(-2, ["unknown"])


# -- the parent -----------------------------------------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """``python -m regions.otsserver`` on ``data`` and ``port``, restartable;
    ``args``: its options beside where and who (default: no console, the
    killloop's split thresholds)."""

    def __init__(self, data, port, env, args=("--no-console", *SPLIT_EARLY)):
        self.data, self.port, self.env, self.proc = data, port, env, None
        self.args = tuple(args)
        self.endpoint = f"http://127.0.0.1:{port}"

    def start(self):
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "regions.otsserver", "--data", self.data, "--port",
                 str(self.port), "--instance", INSTANCE, "--access-key-id", KEY_ID,
                 "--access-key-secret", SECRET, *self.args],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env)
            out = b""
            for line in self.proc.stdout:
                out += line
                if line.startswith(b"export OTS_TEST_ENDPOINT="):
                    return
            self.proc.wait()
            if b"Address already in use" not in out or time.monotonic() > deadline:
                raise RuntimeError(f"regions-server did not start: {out.decode()[-2000:]}")
            time.sleep(0.2)

    def stop(self, sig):
        """Send ``sig``; ``(exit code, the server's last output)`` (SIGTERM:
        0 after a clean stop; None if it did not stop in time)."""
        self.proc.send_signal(sig)
        try:
            out, _ = self.proc.communicate(timeout=_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
            return None, out.decode()[-1500:]
        return self.proc.returncode, out.decode()[-1500:]


def run(seed: int, count: int = None, seconds: float = None, dir: str = None, clients: int = 3,
        stats: dict = None) -> Summary:
    """``count`` server kills (alternately SIGKILL and SIGTERM; 6 when
    neither ``count`` nor ``seconds`` is given) under ``clients`` SDK
    writers, in ``dir`` (harness.WorkDir).  ``summary.verified`` counts the
    acknowledged operations checked.  ``stats``, if given, receives the
    writers' operations, the SDK's own retries, the retries a condition
    refused (the write had been applied once), the unknown outcomes, the
    kills of each kind and the table's regions at the end (it starts as one
    and splits from 24 KiB, as in the killloop)."""
    if count is None and seconds is None:
        count = 6
    summary, work, rng, st = start(
        "wire", "SIGKILL and SIGTERM of regions-server under SDK writers", seed, dir, stats,
        ("sigkill", "sigterm"))
    data = work.path("data")
    env = child_env()
    server = _Server(data, _free_port(), env)
    server.start()
    _create_table(server.endpoint)
    stop = work.path("stop")
    writers = [subprocess.Popen(
        [sys.executable, "-c", _CLIENT, server.endpoint, str(c), work.path(f"acks-{c}.log"),
         str(rng.getrandbits(32)), stop],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for c in range(clients)]
    while work.more(summary, count, seconds):
        time.sleep(rng.uniform(0.3, 1.2))
        sig = signal.SIGKILL if summary.cycles % 2 == 0 else signal.SIGTERM
        code, out = server.stop(sig)
        summary.cycles += 1
        st["sigkill" if sig == signal.SIGKILL else "sigterm"] += 1
        if sig == signal.SIGTERM and code != 0:
            summary.failure("crashes", f"cycle {summary.cycles}: SIGTERM stop exited with "
                                       f"{code}: {out}")
        server.start()
    time.sleep(0.5)                     # the writers' last operations meet a live server
    open(stop, "w").close()
    _finish_writers(summary, writers)
    code, out = server.stop(signal.SIGTERM)
    if code != 0:
        summary.failure("crashes", f"the final SIGTERM stop exited with {code}: {out}")
    _check(summary, data, [work.path(f"acks-{c}.log") for c in range(clients)], st)
    return work.finish(summary)


def _finish_writers(summary, writers):
    """Wait for the writers (told to stop) to exit; one that does not is a
    hang, one that fails a crash."""
    for c, w in enumerate(writers):
        try:
            _, err = w.communicate(timeout=_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            w.kill()
            _, err = w.communicate()
            summary.failure("hangs", f"writer {c} did not finish")
        if w.returncode != 0:
            summary.failure("crashes", f"writer {c} exited with {w.returncode}: "
                                       f"{err.decode()[-1500:]}")


def _pk(c, k):
    """Row ``k`` of writer ``c``.  ``k`` is the partition key (the first
    column), so the table can split between any two of a writer's rows; the
    writers' counter rows are k = -1 and -2."""
    return [("k", k), ("c", c)]


def _create_table(endpoint):
    import tablestore as ts
    logging.getLogger("tablestore").addHandler(logging.NullHandler())
    sdk = ts.OTSClient(endpoint, KEY_ID, SECRET, INSTANCE)
    sdk.create_table(ts.TableMeta(TABLE, [("k", "INTEGER"), ("c", "INTEGER")]), ts.TableOptions(),
                     ts.ReservedThroughput(ts.CapacityUnit(0, 0)))


def _writer_log(path):
    """``(acked ops, pending op or None, counts or None)`` of a writer's log."""
    entries, counts = [], None
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    for line in lines:
        tag, _, rest = line.decode().partition(" ")
        if tag == "S":
            counts = json.loads(rest)
        elif tag == "B":
            entries.append([json.loads(rest), None])
        elif tag == "A":
            entries[-1][1] = json.loads(rest.partition(" ")[2])
    acked = [(op, oks) for op, oks in entries if oks is not None]
    pending = entries[-1][0] if entries and entries[-1][1] is None else None
    return acked, pending, counts


def _check(summary, data, logs, st):
    totals, served = {}, []
    server = regions.RegionServer.open(data)
    try:
        cl = OTSClient(data, server=server)
        rows = {}
        start = [("k", INF_MIN), ("c", INF_MIN)]
        while start is not None:
            _, start, got, _ = cl.get_range(TABLE, "FORWARD", start,
                                            [("k", INF_MAX), ("c", INF_MAX)], max_version=1)
            for r in got:
                pk = dict(r.primary_key)
                rows[pk["c"], pk["k"]] = {n: v for n, v, _ in
                                                             r.attribute_columns}
        for c, path in enumerate(logs):
            acked, pending, counts = _writer_log(path)
            for k, v in (counts or {}).items():
                totals[k] = totals.get(k, 0) + v
            _check_writer(summary, c, rows, acked, pending)
        served = workload.check_regions(summary, server)
        totals["regions"] = len(server.regions(TABLE))
    finally:
        server.close()
    workload.check_files(summary, data, served)
    st.update(totals)


def _check_writer(summary, c, rows, acked, pending):
    seq = max([op["i"] for op, _ in acked if op["kind"] == "seq"], default=0)
    counter = rows.pop((c, -1), {})
    if counter.get("seq", 0) != seq or counter.get("n", 0) != seq:
        summary.failure("wrong" if counter.get("n", 0) > seq else "losses",
                        f"writer {c}: counter row {counter}, expected seq = n = {seq}")
    bumps = [oks[0] for op, oks in acked if op["kind"] == "bump"]
    acked_bumps, unknown = bumps.count("bump"), bumps.count("unknown")
    unknown += pending is not None and pending["kind"] == "bump"
    m = rows.pop((c, -2), {}).get("m", 0)
    if not acked_bumps <= m <= acked_bumps + unknown:
        summary.failure("wrong" if m > acked_bumps else "losses",
                        f"writer {c}: m = {m}, acknowledged bumps {acked_bumps}, unknown {unknown}")
    keys = set()
    for op, _ in acked:
        if op["kind"] in ("put", "batch"):
            keys.update([op["k"]] if op["kind"] == "put" else op["k"])
    maybe = set()
    if pending is not None and pending["kind"] in ("put", "batch"):
        maybe.update([pending["k"]] if pending["kind"] == "put" else pending["k"])
    for k in sorted(keys):
        got = rows.pop((c, k), None)
        if got != {"v": "c%d-%d" % (c, k)}:
            summary.failure("losses" if got is None else "wrong",
                            f"writer {c}: row {k} acknowledged, found {got}")
    for k in sorted(maybe):
        got = rows.pop((c, k), None)
        if got not in (None, {"v": "c%d-%d" % (c, k)}):
            summary.failure("wrong", f"writer {c}: row {k} in flight, found {got}")
    summary.verified += len(acked)
    phantoms = sorted(k for k in rows if k[0] == c)
    if phantoms:
        summary.failure("wrong", f"writer {c}: rows nobody wrote: {phantoms[:5]}")


def writers_main(name: str, count_help: str, doc: str, run, argv=None) -> int:
    """``main`` of an experiment with SDK writer processes: the common
    options and ``--clients``; ``run(seed, count, seconds, dir, clients, stats)``."""
    ap = parser(name, count_help, doc=doc)
    ap.add_argument("--clients", type=cliutil.positive_int, default=3,
                    help="SDK writer processes (3)")
    args = ap.parse_args(argv)
    stats = {}
    return report(run(args.seed, args.count, args.seconds, args.dir, args.clients, stats), stats)


def main(argv=None) -> int:
    return writers_main("wire", "server kills (default 6)", __doc__, run, argv)
