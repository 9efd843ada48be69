"""kill -9 at a chosen step: the child of the index and stream crash tests
(tests/test_tablestore_index_crash.py, tests/test_tablestore_stream_crash.py).

The child opens a store, makes the workload's table (workload.create_table,
with indexes, a stream and/or a search index), runs operations of the crash
workload (300 unless told; logged to an acknowledgement file,
workload.AckFile), optionally adds rows for a back-fill to read, then
SIGKILLs itself at the chosen step: a *trap* on a region-server method (the
nth call on one table, before or after it runs, by any thread or a named
one) or on a search engine's method
(``engine.commit``, counting only commits with changes staged, or
``engine.upsert``; the "table" is the search index) while it goes on
writing, creating the churn index or dropping an index, creating or
dropping the search index (regions.soak.searchcheck); or, with action
``split``, at a kill point of a split it makes itself (``REGIONS_KILL_AT``,
regions.procedure) while a thread writes.  ``run_child`` runs it and
returns its log.
"""
import os
import random
import signal
import subprocess
import sys
import threading

import regions
from regions.tablestore import OTSClient, indexes
from regions.tablestore.search import Engine

from . import searchcheck, workload
from .harness import child_env

__all__ = ["run_child", "child"]

_CHILD = "from regions.soak.killsteps import child; child()"


def run_child(path, seed, action, methods="", table=workload.TABLE, nth=1, when="before",
              bulk=0, env=None, indexes=True, stream=False, search=False, ops=300):
    """Run the child until it kills itself (``action``: ``write``, ``create``
    the churn index, ``drop`` index ``table``, ``search-create`` or
    ``search-drop`` the search index (made with the table unless
    ``search-create``), or ``split`` ``table``; the
    trap: the ``nth`` call of one of ``methods`` (``put+write``;
    ``...@thread``: called by that thread) on ``table``, ``when`` ``before``
    or ``after`` it runs; ``bulk`` rows added first for a back-fill; ``env``:
    more environment, such as a kill point); the table with the workload's
    ``indexes``, a ``stream`` and/or a ``search`` index; ``ops`` operations
    before the trap is set.  Returns its log's ``(acked, pending)``."""
    log_path = os.path.join(os.path.dirname(path), "acks.log")
    p = subprocess.run([sys.executable, "-c", _CHILD, path, log_path, str(seed), action,
                        methods, table, str(nth), when, str(bulk),
                        ("indexes" if indexes else "-") + ("+stream" if stream else "")
                        + ("+search" if search else ""), str(ops)],
                       env=dict(child_env(), **(env or {})), capture_output=True, timeout=300)
    assert p.returncode == -signal.SIGKILL, (action, methods, table, p.returncode,
                                             p.stdout.decode(), p.stderr.decode()[-3000:])
    notes = {}
    acked, pending = workload.read_log(log_path, notes)
    assert "K" in notes or env, "the trap never fired"
    return acked, pending


def child(argv=None) -> None:
    """``PATH LOG SEED ACTION METHODS TABLE NTH WHEN BULK KIND OPS`` (``run_child``)."""
    path, log_path, seed, action, methods, table, nth, when, bulk, kind, ops = \
        (argv or sys.argv[1:])[:11]
    nth, bulk = int(nth), int(bulk)
    log = workload.AckFile(log_path)
    # a search back-fill commits by time; here at every cursor, so that a
    # back-fill of a few hundred rows reaches the steps between commits
    indexes._SEARCH_COMMIT_SECONDS = 0.0
    options = workload.server_options()
    if action == "split":   # only the split this child makes: the kill point is its
        options = options.copy(split_policy=regions.DisabledSplitPolicy())
    server = regions.RegionServer.open(path, options)
    client = OTSClient(path, server=server)
    workload.create_table(client, indexes="indexes" in kind, stream="stream" in kind)
    if "search" in kind and action != "search-create":
        searchcheck.ensure(client, log)
    wl = workload.Workload(client, random.Random(int(seed)), log, 0, 0)
    for _ in range(int(ops)):
        wl.step()
    for first in range(0, bulk, 200):      # rows for a back-fill to read, logged as batches
        op = {"id": wl.next_id, "kind": "batch", "rows": [     # r from 2000: no workload key
            {"k": [i % workload.PARTITIONS, 2000 + i // workload.PARTITIONS], "t": "put",
             "c": "I", "put": {"v": "o%d" % wl.next_id, "pad": "b%d" % i}}
            for i in range(first, min(bulk, first + 200))]}
        wl.next_id += 1
        log.begin(op)
        log.ack(op["id"], workload.run_op(client, op))

    def die():
        log.note("K", methods)
        os.kill(os.getpid(), signal.SIGKILL)

    names, _, thread = methods.partition("@")

    def trap(method):
        """Kill at the nth call of ``method`` on ``table`` (by ``thread``, if
        named), before or after it runs."""
        engine = method.startswith("engine.")
        owner = Engine if engine else server
        method = method.partition(".")[2] if engine else method
        real, calls = getattr(owner, method), [0]

        def call(name, *args, **kwargs):
            if engine:              # name: the Engine; a commit with nothing staged: no call
                self, name = name, name.definition.name
                args = (self,) + args
                if method == "commit" and not self._pending:
                    return real(*args, **kwargs)
            mine = name == table and thread in ("", threading.current_thread().name)
            if mine:
                calls[0] += 1
                if calls[0] == nth and when == "before":
                    die()
            result = real(*args, **kwargs) if engine else real(name, *args, **kwargs)
            if mine and calls[0] == nth and when == "after":
                die()
            return result
        setattr(owner, method, call)

    if action == "split":
        threading.Thread(target=lambda: [wl.step() for _ in iter(int, 1)], daemon=True).start()
        server.flush_all()
        region = max(server.regions(table), key=lambda r: r.size_bytes)
        server.split_region(table, region.region_id)     # the kill point fires inside
    else:
        for method in names.split("+"):
            trap(method)
        if action == "create":
            workload.churn_index(client)            # CHURN_INDEX, with its base data
        elif action == "drop":
            client.delete_secondary_index(workload.TABLE, table)
        elif action == "search-create":
            searchcheck.create(client, log)
        elif action == "search-drop":
            searchcheck.drop(client, log)
        for _ in range(3000):
            wl.step()
    sys.stdout.write("END: the kill never came\n")
