"""The compiled Cython modules are the ones in use, not a silent fallback."""
import importlib.machinery

import lsm._iter
import lsm.db
import lsm.memtable


def _is_extension(mod):
    return mod.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def test_iterator_module_is_a_compiled_extension():
    assert _is_extension(lsm._iter)
    assert lsm.db.DBIterator is lsm._iter.DBIterator
    assert lsm.memtable.MemTableIterator is lsm._iter.MemTableIterator
    # a cdef class, not a Python class: no __dict__ on instances
    assert not hasattr(lsm._iter.ListIterator([], []), "__dict__")
