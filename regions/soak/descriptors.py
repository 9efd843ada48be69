"""Experiment: file descriptors run out and come back under writers and splits.

The diskfull experiment's writers, table and checks (regions/soak/diskfull.py)
in a child process whose RLIMIT_NOFILE is lowered to ``LIMIT`` (soft and
hard, so the server's raise to the hard limit cannot undo it), on the OS
file system.  Each cycle another part of the process takes every descriptor
left (the way a flood of connections would: ``/dev/null`` opened until
EMFILE), holds them ``FULL_S`` while new WALs, tables, table opens and
splits fail with EMFILE, then closes them all; the time from their return
until every region accepts writes again is the resume time.  Checked as in
diskfull: no acknowledged write lost, no phantom, no counter doubled,
``RegionServer.check()`` clean, refusals naming ``Too many open files``,
every resume within ``RESUME_LIMIT_S``.

    python -m regions.soak descriptors --seed 1 --count 20
"""
import errno
import json
import os
import shutil
import subprocess
import sys
import time

from . import Summary, _cli
from .diskfull import exercise, report, server_options, verify
from .ioerrors import scratch_dir

__all__ = ["run", "main", "LIMIT"]

#: RLIMIT_NOFILE of the child.
LIMIT = 512


def _hog():
    """Open /dev/null until the process has no descriptor left; the list of them."""
    fds = []
    while True:
        try:
            fds.append(os.open(os.devnull, os.O_RDONLY))
        except OSError as e:
            if e.errno != errno.EMFILE:
                raise
            return fds


def _child(seed, count, seconds, root):
    """The experiment itself, in the child (see the module doc); prints the
    summary's fields as JSON on its last line."""
    import resource
    from regions.tablestore import OTSClient
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))
    summary = Summary("descriptors", seed, f"descriptors exhausted and returned (RLIMIT_NOFILE {LIMIT})")
    path = os.path.join(root, "db")
    start = time.monotonic()

    def exhaust():
        fds = _hog()
        return lambda: [os.close(fd) for fd in fds]
    w, resumes, n_regions = exercise(OTSClient(path, server_options=server_options()), summary,
                                     seed, count, seconds, exhaust, "the descriptors")
    verify(path, w, summary)
    report(summary, w, resumes, os.strerror(errno.EMFILE), n_regions)
    summary.seconds = time.monotonic() - start
    print(json.dumps(summary.__dict__))


def run(seed=0, count=None, seconds=None, dir=None) -> Summary:
    """``count`` exhaust-and-return cycles (default 10) in a child process."""
    root = scratch_dir(dir)
    try:
        code = (f"from regions.soak import descriptors; "
                f"descriptors._child({seed}, {count!r}, {seconds!r}, {root!r})")
        limit = 120 + (seconds or 3 * (count or 10))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=limit)
        lines = out.stdout.strip().splitlines()
        if out.returncode != 0 or not lines:
            s = Summary("descriptors", seed, "descriptors exhausted and returned")
            s.failure("crashes", f"child exited {out.returncode}: {out.stderr[-2000:]}")
            return s
        return Summary(**json.loads(lines[-1]))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv=None) -> int:
    return _cli.main("descriptors", __doc__, run, argv, "exhaust-and-return cycles (default 10)",
                     lambda s: f"  figures: {s.figures}")
