# cython: language_level=3
"""lsm's C face (lsm/_api.pxd, which lists it) where the face is more than
the names it passes on: how a caller holding a store finds the C paths its
methods run, so that it calls them from C without a Python call.

An ``lsm.DB`` binds its ``get``, ``scan_short`` and ``put`` to its C paths
when it opens (``lsm.purepython.c_call``; not under LSM_REGIONS_PUREPYTHON):
that binding is what these functions recognise, so the switch reaches a
caller through them and the caller forks on nothing of its own.
"""
from lsm._read import PointPath
from lsm._write import WritePath


cdef object point_path(object store):
    """The ``PointPath`` that ``store.get`` and ``store.scan_short`` are
    bound to, or None (no store, another kind of store, or the switch)."""
    path = getattr(getattr(store, "get", None), "__self__", None)
    if type(path) is PointPath and getattr(getattr(store, "scan_short", None), "__self__", None) is path:
        return path
    return None


cdef object write_path(object store):
    """The ``WritePath`` that ``store.put`` is bound to, or None."""
    path = getattr(getattr(store, "put", None), "__self__", None)
    return path if type(path) is WritePath else None
