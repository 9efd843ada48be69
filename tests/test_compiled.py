"""The compiled Cython modules are the ones in use, not a silent fallback."""
import importlib.machinery

import lsm._db_iter
import lsm._iter
import lsm._memtable
import lsm.db
import lsm.memtable


def _is_extension(mod):
    return mod.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def test_iterator_module_is_a_compiled_extension():
    assert _is_extension(lsm._iter)
    assert lsm.db.DBIterator is lsm._db_iter.DBIterator
    assert lsm.memtable.MemTable is lsm._memtable.MemTable
    # cdef classes, not Python classes: no __dict__ on instances
    assert not hasattr(lsm._iter.ListIterator([], []), "__dict__")
    assert not hasattr(lsm.memtable.MemTable(), "__dict__")


def test_every_engine_extension_is_compiled_and_wired_in():
    import lsm._block
    import lsm._bloom
    import lsm._compaction_stream
    import lsm._fileio
    import lsm._crc32
    import lsm._log_writer
    import lsm._write_batch
    import lsm._mapped_blocks
    import lsm._table
    import lsm._table_builder
    import lsm._table_iter
    import lsm._twins
    import lsm.sstable
    for mod in (lsm._block, lsm._bloom, lsm._crc32, lsm._log_writer, lsm._write_batch, lsm._table,
                lsm._table_builder, lsm._table_iter, lsm._mapped_blocks,
                lsm._db_iter, lsm._memtable, lsm._compaction_stream, lsm._fileio, lsm._twins):
        assert _is_extension(mod), mod.__file__
    assert lsm.sstable.TwoLevelIter is lsm._table_iter.TwoLevelIter
    assert lsm.sstable.TableBuildCore is lsm._table_builder.TableBuildCore
    assert lsm.sstable.PointReader is lsm._table.PointReader
