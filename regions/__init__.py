"""regions: an HBase-style region server over the lsm engine.

Guide to modules (see docs/regions.md):

- ``server``      RegionServer: tables -> regions, stores, scans; its split host
- ``_router``     (C) Table (a table's layout, hooks, split lock) and Router: routing
                  and the single-key data operations, which RegionServer binds as its own
- ``_region``     (C) Region: one lsm store over [start, end) and its gate
- ``reports``     RegionServer.regions() (RegionInfo) and metrics()
- ``meta``        the atomic catalogue of tables, regions, split parents, procedures
- ``procedure``   the split procedure (persisted steps, recovery, kill points) and
                  the janitor (split parents' garbage collection)
- ``maintenance`` background passes: memtable budget, split checks, janitor
- ``check``       RegionServer.check(): the server's invariants (HBase's hbck)
- ``policy``      split policies: when to split
- ``adjust``      split restrictions: where a split may fall
- ``options``   ServerOptions
- ``errors``    RegionError and its subclasses

Importing this package imports the lsm engine (a region, in C, knows its
store's C paths, and the engine's errors are passed on by ``errors``); RegionServer
itself is loaded on first use.
"""
from .adjust import DelimitedKeyPrefix, KeyPrefix
from .errors import (HotPartitionError, InvariantError, MetaCorruptionError, PartialWriteError,
                     RegionBusyError, RegionError, ServerClosedError, SplitError,
                     TableExistsError, UnknownRegionError, UnknownTableError)
from .options import ServerOptions
from .policy import (ConstantSizeSplitPolicy, DisabledSplitPolicy,
                     IncreasingToUpperBoundSplitPolicy, SplitPolicy, SteppingSplitPolicy)
from .reports import RegionInfo

__all__ = [
    "RegionServer", "ServerOptions", "RegionInfo",
    "SplitPolicy", "ConstantSizeSplitPolicy", "IncreasingToUpperBoundSplitPolicy",
    "SteppingSplitPolicy", "DisabledSplitPolicy", "KeyPrefix", "DelimitedKeyPrefix",
    "RegionError", "UnknownTableError", "TableExistsError", "UnknownRegionError", "SplitError",
    "HotPartitionError",
    "ServerClosedError", "RegionBusyError", "MetaCorruptionError", "InvariantError",
    "PartialWriteError",
]


def __getattr__(name):
    # RegionServer needs lsm.DB; load it on first use so that importing
    # regions (e.g. regions.presplit) does not pull in the engine.
    if name == "RegionServer":
        from .server import RegionServer
        return RegionServer
    if name == "PUREPYTHON":
        # the one C-or-Python switch (lsm/purepython.py), for the layers above
        from lsm import PUREPYTHON
        return PUREPYTHON
    raise AttributeError(f"module 'regions' has no attribute {name!r}")
