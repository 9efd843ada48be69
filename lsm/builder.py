"""Building table files from a stream of entries (LevelDB's builder.cc).

``build_tables`` drains a ``CompactionStream`` (ext/lsm/_compaction_stream.pyx) into one or
more new ``NNNNNN.sst`` files of the store directory and returns their
``FileMeta`` (not yet installed in a version: the caller logs the edit).
Flush (one memtable -> L0 tables) and compaction (inputs -> tables of the
output level) both write through here.  Python here runs once per output
table: the stream drains into each table's C build core (``TableBuilder.core``)
with no Python call per entry or per block.

Contract with the caller:

* ``new_file_number()`` allocates each output's number.
* ``pending`` is the caller's set of file numbers being written: each
  output's number is added before its file is created, so that obsolete-file
  cleanup (lsm/background.py) never deletes it.  Numbers of empty outputs
  and of every output after a failure are removed again; the numbers of the
  tables returned stay in ``pending`` until the caller has installed them.
  ``pending`` is changed only under ``lock``.
* On error every output written so far is removed and the error re-raised,
  so nothing half-built stays.
"""
import os

from . import filenames
from .sstable import TableBuilder
from .version import FileMeta

__all__ = ["build_tables"]


def build_tables(stream, options, fs, dirname: str, new_file_number, pending: set, lock,
                 cut: bool, level: int) -> list:
    """Write ``stream`` to new tables in ``dirname``; returns their FileMeta.

    When ``cut``, outputs are cut at ``options.target_file_bytes`` between
    user keys; ``level`` selects the compression (``compression_min_level``).
    """
    target = options.target_file_bytes if cut else 0
    if options.compression and level < options.compression_min_level:
        options = options.copy(compression=False)
    outputs, written = [], []
    builder = f = None
    try:
        while stream.valid():
            number = new_file_number()
            with lock:
                pending.add(number)
            path = os.path.join(dirname, filenames.table_name(number))
            written.append((number, path))
            f = fs.open_append(path)
            builder = TableBuilder(f, options)
            stream.fill(builder.core, target)
            if builder.num_entries:
                props = builder.finish()
                f.sync()
                f.close()
                outputs.append(FileMeta(number, props["size"], props["num_entries"],
                                        props["smallest"], props["largest"]))
            else:
                builder.abandon()
                f.close()
                fs.remove_if_exists(path)
                with lock:
                    pending.discard(number)
            builder = None
        return outputs
    except BaseException:
        if builder is not None:
            try:
                builder.abandon()
                f.close()
            except Exception:
                pass
        for n, p in written:
            fs.remove_if_exists(p)
            with lock:
                pending.discard(n)
        raise
