"""Experiment 4: file operation i fails, for every i of a fixed scenario (SQLite's I/O error loop).

A scenario (a flush, a compaction, a reopen, a split, a local transaction
commit) is first run once through ``lsm.faultfs.FaultInjectionFS`` to count
its mutating file operations of each kind.  Then, for every kind, every
index i and every error (EIO; ENOSPC, as a torn write, on appends and file
creation; a failing fsync is EIO on ``sync``/``sync_dir``), the scenario runs
again on a fresh directory with operation i failing once, and again failing
forever.  Every write is one new key with a known value.  Checked:

* a write that returned is never one made after a failed WAL append or a
  failed fsync (the store refuses writes until it resumes or is reopened:
  ``ReadOnlyError``; its automatic resume is off here, the diskfull loop
  checks it);
* only the engine's and the region layer's errors come out (anything else is
  a crash);
* with the fault cleared, the directory reopens; every acknowledged write is
  there, nothing that was never written is; ``DB.check`` /
  ``RegionServer.check`` and ``lsm.tools.verify`` of every store are clean.

``count`` bounds the fault runs (None: all of them, in a seeded order).
"""
import collections
import errno
import os
import random
import shutil
import tempfile
import time

import lsm
from lsm.errors import LSMError, StorageError
from lsm.faultfs import FaultInjectionFS
from lsm.fs import OSFileSystem
from lsm.tools import verify

import regions
from regions.errors import RegionError
from regions.tablestore import OTSClient
from regions.tablestore.errors import OTSServiceError

from . import Summary, _cli

__all__ = ["run", "main", "SCENARIOS", "scratch_dir", "expected_errors"]

#: Errors a failing file system may surface through the API; anything else is a crash.
expected_errors = (LSMError, RegionError, OTSServiceError)

# (operation, errno, torn): the faults tried on each kind of operation.
_ERRORS = {
    "append": ((errno.EIO, False), (errno.ENOSPC, True)),
    "open_append": ((errno.EIO, False), (errno.ENOSPC, False)),
    "write_atomic": ((errno.EIO, False), (errno.ENOSPC, False)),
    "sync": ((errno.EIO, False),),
    "sync_dir": ((errno.EIO, False),),
    "rename": ((errno.EIO, False),),
    "remove": ((errno.EIO, False),),
    "truncate": ((errno.EIO, False),),
}


def scratch_dir(base=None) -> str:
    """A fresh temporary directory, in RAM when the machine has /dev/shm."""
    if base is None and os.path.isdir("/dev/shm"):
        base = "/dev/shm"
    return tempfile.mkdtemp(prefix="soak-", dir=base)


class _Run:
    """One scenario run: the model of acknowledged writes and the faults that fired."""

    def __init__(self, fs, path, summary):
        self.fs, self.path, self.summary = fs, path, summary
        self.acked, self.attempted = {}, {}
        self.fired = []             # (op, path) of each injected failure
        self.forgiven = 0           # failures before a reopen of the stores (a split's daughters)
        self.closers = []

    def injector(self, code):
        """An exception class for ``FaultInjectionFS.fail`` that records each firing."""
        fired = self.fired

        class Injected(StorageError):
            def __init__(self, text):
                super().__init__(code, text)
                op, _, path = text[len("injected failure of "):].partition(" ")
                fired.append((op, path))
        return Injected

    def must_refuse(self) -> bool:
        """True once a WAL append or any fsync failed: no write may be acknowledged after."""
        return any(op in ("sync", "sync_dir") or (op == "append" and ".log" in p)
                   for op, p in self.fired[self.forgiven:])

    def reopened(self) -> None:
        """The stores written from now on were opened after the failures so far."""
        self.forgiven = len(self.fired)

    def write(self, key, value, fn) -> None:
        """Run the write ``fn`` (which stores ``value`` at ``key``) and record the outcome."""
        refuse = self.must_refuse()
        self.attempted[key] = value
        try:
            fn()
        except expected_errors:
            return
        if refuse:
            self.summary.failure("wrong", f"write of {key!r} acknowledged after {self.fired[-1]} failed")
        self.acked[key] = value

    def closing(self, obj):
        self.closers.append(obj)
        return obj

    def close_all(self) -> None:
        for obj in reversed(self.closers):
            try:
                obj.close()
            except expected_errors:
                pass
        self.fs.close_all()         # what the OS does when the process ends


def _key(i):
    return b"k%06d" % i


def _value(i):
    return b"v%06d-" % i + bytes(random.Random(i).randrange(256) for _ in range(60))


def _lsm_options(fs):
    # No automatic resume within a run (lsm/health.py): what is checked here
    # is the refusal after a failure and the reopen; the diskfull loop
    # checks the resume.
    return lsm.Options(fs=fs, background=False, sync=True, memtable_bytes=2048,
                       block_size=256, target_file_bytes=4096, compression=False,
                       resume_retry_seconds=3600)


def _puts(run, db, lo, hi):
    for i in range(lo, hi):
        if i % 5 == 4:          # a batch of two keys now and then
            b = lsm.WriteBatch()
            b.put(_key(i), _value(i))
            b.put(_key(i + 1000), _value(i + 1000))
            run.write(_key(i), _value(i), lambda: db.write(b))
            if _key(i) in run.acked:
                run.acked[_key(i + 1000)] = _value(i + 1000)
            run.attempted[_key(i + 1000)] = _value(i + 1000)
        else:
            run.write(_key(i), _value(i), lambda: db.put(_key(i), _value(i)))


def _flush(run):
    db = run.closing(lsm.DB.open(run.path, _lsm_options(run.fs)))
    _puts(run, db, 0, 30)
    db.flush()
    _puts(run, db, 30, 36)
    db.close()


def _compaction(run):
    db = run.closing(lsm.DB.open(run.path, _lsm_options(run.fs)))
    for n in range(3):
        _puts(run, db, 12 * n, 12 * n + 12)
        db.flush()
    db.compact_range()
    _puts(run, db, 36, 40)
    db.close()


def _reopen_setup(run):
    db = lsm.DB.open(run.path, _lsm_options(run.fs))
    _puts(run, db, 0, 25)       # some in a table, the rest only in the WAL
    db.close()


def _reopen(run):
    db = run.closing(lsm.DB.open(run.path, _lsm_options(run.fs)))
    _puts(run, db, 25, 30)
    db.close()


def _server_options(fs):
    return regions.ServerOptions(fs=fs, sync=True, background_workers=0, split_policy="disabled",
                                 memtable_bytes=2048, lsm_options=_lsm_options(None), busy_wait_seconds=0.05)


def _split(run):
    server = run.closing(regions.RegionServer.open(run.path, _server_options(run.fs)))
    if "t" not in server.list_tables():
        server.create_table("t")
    for i in range(30):
        run.write(_key(i), _value(i), lambda: server.put("t", _key(i), _value(i)))
    rid = server.regions("t")[0].region_id
    server.split_region("t", rid, _key(15))
    run.reopened()              # the daughters are new stores
    for i in range(30, 36):
        run.write(_key(i), _value(i), lambda: server.put("t", _key(i), _value(i)))
    server.close()


def _transaction(run):
    client = run.closing(OTSClient(run.path, server_options=_server_options(run.fs)))
    if "t" not in client.list_table():
        client.create_table(regions.tablestore.TableMeta("t", [("p", "STRING"), ("n", "INTEGER")]),
                            regions.tablestore.TableOptions(), regions.tablestore.ReservedThroughput(
                                regions.tablestore.CapacityUnit(0, 0)))
    for t in range(3):
        txn = client.start_local_transaction("t", [("p", "p%d" % t)])
        rows = [regions.tablestore.Row([("p", "p%d" % t), ("n", n)], [("v", _value(n).hex())]) for n in range(5)]
        for row in rows:
            client.put_row("t", row, transaction_id=txn)
        key = b"p%d" % t
        run.write(key, len(rows), lambda: client.commit_transaction(txn))
    client.close()


#: name -> (set-up run before faults or None, the scenario, the layer it checks)
SCENARIOS = {
    "flush": (None, _flush, "lsm"),
    "compaction": (None, _compaction, "lsm"),
    "reopen": (_reopen_setup, _reopen, "lsm"),
    "split": (None, _split, "server"),
    "transaction": (None, _transaction, "client"),
}


def _verify_lsm(run):
    db = lsm.DB.open(run.path, lsm.Options(background=False))
    try:
        _check_model(run, db.get)
        db.check()
    finally:
        db.close()
    return verify(run.path)


def _verify_server(run):
    server = regions.RegionServer.open(run.path, regions.ServerOptions(background_workers=0))
    try:
        if "t" in server.list_tables():
            _check_model(run, lambda k: server.get("t", k))
        elif run.acked:
            run.summary.failure("losses", "table 't' is gone")
        server.check()
    finally:
        server.close()
    return _verify_stores(run.path)


def _verify_stores(path):
    """``lsm.tools.verify`` of every region store of the server at ``path``."""
    root = os.path.join(path, "regions")
    return [p for name in sorted(os.listdir(root)) for p in verify(os.path.join(root, name))]


def _verify_client(run):
    client = OTSClient(run.path, server_options=regions.ServerOptions(background_workers=0))
    try:
        for key, count in run.attempted.items():
            _, _, rows, _ = client.get_range("t", "FORWARD", [("p", key.decode()), ("n", regions.tablestore.INF_MIN)],
                                          [("p", key.decode()), ("n", regions.tablestore.INF_MAX)])
            if len(rows) not in (0, count) or (key in run.acked and len(rows) != count):
                run.summary.failure("losses" if key in run.acked else "wrong",
                                    f"transaction {key!r}: {len(rows)} of {count} rows")
            run.summary.verified += key in run.acked
    finally:
        client.close()
    server = regions.RegionServer.open(run.path, regions.ServerOptions(background_workers=0))
    try:
        server.check()
    finally:
        server.close()
    return _verify_stores(run.path)


def _check_model(run, get):
    for key, value in run.attempted.items():
        got = get(key)
        if key in run.acked and got != value:
            run.summary.failure("losses", f"acknowledged {key!r} reads {got!r:.40}")
        elif got is not None and got != value:
            run.summary.failure("wrong", f"{key!r} reads {got!r:.40}, never written")
        run.summary.verified += key in run.acked


_VERIFY = {"lsm": _verify_lsm, "server": _verify_server, "client": _verify_client}



def _one(name, root, summary, fault=None):
    """Run scenario ``name`` in a fresh directory under ``root``, with ``fault``
    ((op, index, errno, torn, persistent)) injected; return the op counts."""
    setup, scenario, layer = SCENARIOS[name]
    path = os.path.join(root, "db")
    shutil.rmtree(path, ignore_errors=True)
    fs = FaultInjectionFS(OSFileSystem())
    run = _Run(fs, path, summary)
    if setup is not None:
        setup(run)
        fs.ops.clear()
    if fault is not None:
        op, index, code, torn, persistent = fault
        fs.fail(op, after=index, times=None if persistent else 1, exc=run.injector(code),
                **({"partial": True} if torn else {}))
    try:
        scenario(run)
    except expected_errors:
        pass
    except Exception as e:  # noqa: BLE001 - counted and reported
        summary.failure("crashes", f"{name} {fault}: {type(e).__name__}: {e}")
    finally:
        run.close_all()
    counts = collections.Counter(o[0] for o in fs.ops)
    fs.clear_faults()
    if fault is not None and not run.fired:
        return counts           # the fault point was not reached (an earlier failure stopped the run)
    try:
        problems = _VERIFY[layer](run)
    except expected_errors as e:
        summary.failure("losses", f"{name} {fault}: does not reopen: {type(e).__name__}: {e}")
        return counts
    except Exception as e:  # noqa: BLE001
        summary.failure("crashes", f"{name} {fault}: reopen: {type(e).__name__}: {e}")
        return counts
    for p in problems:
        summary.failure("wrong", f"{name} {fault}: verify: {p}")
    return counts


def fault_points(root, summary):
    """Every (scenario, fault) of the experiment, counted by a fault-free run of each scenario."""
    points = []
    for name in SCENARIOS:
        counts = _one(name, root, summary)
        for op, errors in _ERRORS.items():
            for index in range(counts.get(op, 0)):
                for code, torn in errors:
                    for persistent in (False, True):
                        points.append((name, (op, index, code, torn, persistent)))
    return points


def run(seed=0, count=None, seconds=None, dir=None) -> Summary:
    """Run every fault point (or ``count`` of them, chosen by ``seed``) within ``seconds``."""
    summary = Summary("ioerrors", seed, "EIO/ENOSPC/fsync at op i, once and forever")
    start = time.monotonic()
    root = scratch_dir(dir)
    try:
        points = fault_points(root, summary)
        random.Random(seed).shuffle(points)
        for name, fault in points[:count]:
            if seconds is not None and time.monotonic() - start > seconds:
                break
            _one(name, root, summary, fault)
            summary.cycles += 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary.seconds = time.monotonic() - start
    return summary


def main(argv=None) -> int:
    return _cli.main("ioerrors", __doc__, run, argv, "fault runs (default: all of them)")
