import sys
import threading

import pytest

import lsm

# The fixtures of regions.pytest_plugin (ots_client, ots_server).  Installed,
# the package's pytest11 entry point has loaded the plugin before this file;
# naming it again would register it twice.  From a source tree, name it here.
pytest_plugins = [] if "regions.pytest_plugin" in sys.modules else ["regions.pytest_plugin"]


def tiny_options(**kw):
    """Options that make flush, compaction and multi-level trees happen with
    a few kilobytes of data."""
    base = dict(memtable_bytes=4096, memtable_entry_overhead=16, block_size=256, restart_interval=4,
                target_file_bytes=2048, level1_bytes=8192, level_multiplier=4, l0_compaction_trigger=2,
                l0_slowdown_trigger=6, l0_stop_trigger=10, block_cache_bytes=64 << 10, max_open_files=20,
                num_levels=4, background=False)
    base.update(kw)
    return lsm.Options(**base)


@pytest.fixture
def tiny():
    return tiny_options


@pytest.fixture
def dbpath(tmp_path):
    return str(tmp_path / "db")


def run_writers_then_readers(writers, readers, done: threading.Event):
    """Start every thread; once the writers are done, set ``done`` (the
    readers loop until it is set) and wait for the readers."""
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    for t in readers:
        t.join()
