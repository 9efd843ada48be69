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
    import importlib
    import pathlib

    import lsm.sstable
    ext = pathlib.Path(__file__).resolve().parent.parent / "ext"
    modules = sorted(".".join(p.relative_to(ext).with_suffix("").parts)
                     for p in ext.rglob("*.pyx"))
    assert "lsm._api" in modules and "regions._router" in modules      # every one of ext/
    for name in modules:
        mod = importlib.import_module(name)
        assert _is_extension(mod), mod.__file__
    assert lsm.sstable.TwoLevelIter is lsm._table_iter.TwoLevelIter
    assert lsm.sstable.TableBuildCore is lsm._table_builder.TableBuildCore
    assert lsm.sstable.PointReader is lsm._table.PointReader
