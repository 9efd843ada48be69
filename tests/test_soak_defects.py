"""Defects the soak loops (regions.soak) found, each pinned by a focused test.

docs/reliability.md "Defects found and fixed" describes each one.
"""
import os

import lsm
from lsm.faultfs import FaultInjectionFS
from lsm.fs import OSFileSystem


def _tables(path):
    return sorted(n for n in os.listdir(path) if n.endswith(".sst"))


def test_a_flushed_table_survives_power_loss_once_the_manifest_names_it(tmp_path):
    """powerloss, seed 1: a flush synced its table and the manifest edit but
    not the directory, so a power cut kept a manifest naming a vanished table
    and the store no longer opened (FileMissingError)."""
    path = str(tmp_path / "db")
    fs = FaultInjectionFS(OSFileSystem())
    db = lsm.DB.open(path, lsm.Options(fs=fs, sync=True, background=False, memtable_bytes=1024))
    db.put(b"first", b"x")          # the store's first manifest: CURRENT's rename synced the directory
    for i in range(200):
        db.put(b"k%04d" % i, b"v" * 40)
    assert _tables(path), "the writes should have flushed a table"
    fs.drop_unsynced()              # power cut: the process never closes the store
    with lsm.DB.open(path) as db:
        assert db.get(b"first") == b"x"
        assert [k for k, _ in db.scan()] == [b"first"] + [b"k%04d" % i for i in range(200)]
