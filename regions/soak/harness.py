"""What the experiments of this package (experiments 1, 2, 3 and 6) share
around their loops: the command line, the work directory, the report."""
import os
import random
import shutil
import tempfile
import time

from lsm.fs import AppendFile, OSFileSystem

from . import _cli

__all__ = ["parser", "report", "WorkDir", "child_env", "AppendFileProxy", "NoSyncFileSystem"]


def parser(prog: str, count_help: str, seconds_help: str = "stop after this many seconds",
           doc: str = ""):
    """The experiments' common arguments (``_cli.parser``): --seed (1), --count,
    --seconds, and --dir, the run's work directory (made if missing)."""
    return _cli.parser(prog, count_help, seconds_help, seed=1, doc=doc, work_dir=True)


def report(summary, stats) -> int:
    """Print the summary line, the run's statistics and failures; the exit code."""
    print(summary.line())
    if stats:
        print("  " + " ".join(f"{k}={v}" for k, v in stats.items()))
    for d in summary.details:
        print("  " + d)
    return 0 if summary.ok else 1


class WorkDir:
    """A run's directory (``dir``, or a fresh temporary one) and its clock.

    ``finish(summary)`` sets ``summary.seconds``; it removes a temporary
    directory after a run without failures and otherwise names the directory
    kept for the post-mortem in ``summary.details``.
    """

    def __init__(self, experiment: str, dir: str = None):
        self.own = dir is None
        self.root = tempfile.mkdtemp(prefix=f"soak-{experiment}-") if self.own else dir
        os.makedirs(self.root, exist_ok=True)
        self.began = time.monotonic()

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def more(self, summary, count, seconds) -> bool:
        """True while the run has cycles left (by ``count`` and by ``seconds``)."""
        return ((count is None or summary.cycles < count)
                and (seconds is None or time.monotonic() - self.began < seconds)
                and len(summary.details) < 20)

    def finish(self, summary):
        summary.seconds = time.monotonic() - self.began
        if not summary.ok:
            summary.details.append(f"work directory kept: {self.root}")
        elif self.own:
            shutil.rmtree(self.root, ignore_errors=True)
        return summary


def start(experiment: str, faults: str, seed: int, dir, stats, counters=()):
    """What every loop begins with: ``(summary, work, rng, stats)``: its Summary,
    its WorkDir, a Random seeded with ``seed``, and ``stats`` (the caller's dict,
    or a new one) with each name of ``counters`` set to 0."""
    from . import Summary
    st = stats if stats is not None else {}
    st.update(dict.fromkeys(counters, 0))
    return Summary(experiment, seed, faults), WorkDir(experiment, dir), random.Random(seed), st


def child_env() -> dict:
    """The environment of a child process: it imports this very package (a
    worktree or an install), whatever its working directory."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=root + (os.pathsep + path if path else ""))


class AppendFileProxy(AppendFile):
    """An ``AppendFile`` forwarding to ``inner``; subclasses change one step."""

    def __init__(self, inner):
        self._inner, self.path = inner, inner.path

    @property
    def size(self):
        return self._inner.size

    def append(self, data):
        self._inner.append(data)

    def sync(self):
        self._inner.sync()

    def close(self):
        self._inner.close()


class _NoSyncFile(AppendFileProxy):
    def sync(self):
        pass


class NoSyncFileSystem(OSFileSystem):
    """The OS file system without fsync (file or directory).  Under
    ``FaultInjectionFS``, which itself records what was synced and drops the
    rest at a simulated power cut, the real fsyncs only cost time."""

    def open_append(self, path: str, truncate: bool = True, preallocate: int = 0):
        return _NoSyncFile(super().open_append(path, truncate, preallocate))

    def sync_dir(self, path: str) -> None:
        pass
