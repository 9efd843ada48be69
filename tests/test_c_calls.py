"""The operations declared ``@c_call(path)`` (lsm/purepython.py) run as their
C calls: bound on the open object to ``getattr(obj, path)``'s method of the
same name, so a call is one C call, unless LSM_REGIONS_PUREPYTHON (then the
declared method runs, and makes the same call)."""
import lsm
import regions
from lsm.purepython import PUREPYTHON, bind_c_calls, c_call
from lsm.sstable import TableBuilder
from lsm.memfs import MemoryFileSystem

#: class -> the operations it declares, and on which of its C objects
DECLARED = {
    lsm.DB: {"put": "_writes", "delete": "_writes", "write": "_writes", "write_pairs": "_writes",
             "get": "_point", "multi_get": "_point", "scan_chunk": "_point",
             "scan_short": "_point", "scan_short_many": "_point"},
    regions.RegionServer: {name: "_router" for name in
                           ("put", "get", "delete", "write", "read_range", "read_ranges")},
    TableBuilder: {"add": "_core"},
}


def _declared(cls):
    return {name: getattr(cls, name).c_call for name in dir(cls)
            if hasattr(getattr(cls, name), "c_call")}


def _check(obj):
    declared = DECLARED[type(obj)]
    assert _declared(type(obj)) == declared
    for name, path in declared.items():
        bound = vars(obj).get(name)
        if PUREPYTHON:
            assert bound is None, name           # the method in the class body runs
        else:
            c_object = getattr(obj, path)
            assert bound == getattr(c_object, name), name
            assert bound.__self__ is c_object and not isinstance(c_object, type(obj))


def test_each_declared_operation_is_its_c_call():
    with lsm.DB.open(None) as db:
        _check(db)
    with regions.RegionServer.open(None) as server:
        _check(server)
    fs = MemoryFileSystem()
    _check(TableBuilder(fs.open_append("t"), lsm.Options()))


def test_a_declared_method_runs_as_its_c_call_and_says_so():
    class Path:
        def op(self, x):
            return ("c", x)

    class Obj:
        def __init__(self):
            self._path = Path()
            bind_c_calls(self)

        @c_call("_path")
        def op(self, x):
            """the operation"""
            return self._path.op(x)

    o = Obj()
    assert o.op(1) == ("c", 1) and Obj.op.__doc__ == "the operation"
    assert ("op" in vars(o)) is not PUREPYTHON
