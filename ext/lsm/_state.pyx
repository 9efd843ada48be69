# cython: language_level=3
"""The live state of an open DB that its C paths read on every call.

``DBState`` holds, as C fields, what ``DB.get`` (``lsm._read``) and ``DB.put``,
``delete`` and ``write`` (``lsm._write``) read or change each time: the
memtable (``mem``), the frozen one (``imm``), the WAL (``log``, a ``_Log``),
the last sequence number, whether the DB is closed, and the failures that
make it refuse writes (``write_error``, ``bg_error``).  The DB's own
attributes of those names (``_mem``, ``_imm``, ``_log``, ``_last_seq``,
``_closed``, ``_write_error``, ``_bg_error``) are properties over these
fields, so there is one copy, and the DB's Python code reads and writes it
as before.  Why C fields: C code reading a Python object's attributes goes
through the generic attribute lookup, which is no cheaper than Python's own
specialized bytecode; C fields are read as a struct's (the measurement that
chose this is in docs/performance.md).
"""


cdef class DBState:
    """See the module doc.  Guarded as the DB guards the attributes: writes
    under its write lock (and ``_mutex`` for ``imm``), reads lock-free under
    the GIL."""

    def __init__(self):
        self.mem = self.imm = self.log = None
        self.mem_versions = self.imm_versions = None
        self.write_error = self.bg_error = None
        self.closed = False
        self.last_seq = 0

    def set_mem(self, mem):
        """``mem`` and its ``versions`` dict (which a memtable never
        replaces), which the point read reads without an attribute lookup."""
        self.mem_versions = None if mem is None else mem.versions
        self.mem = mem

    def set_imm(self, imm):
        """``imm`` and its ``versions`` dict, as ``set_mem``."""
        self.imm_versions = None if imm is None else imm.versions
        self.imm = imm


cdef class CurrentVersion:
    """A ``VersionSet``'s current version (its ``current`` property reads and
    sets this) and the point read's view of it (``lsm._read.ReadView``),
    which the point read reads as C fields.  ``set`` replaces the version
    and forgets the view in one step, so a view read here is always the
    current version's; the point read stores a view it built only if the
    version it built it from is still current.  Reads and writes under the
    GIL; the VersionSet's lock orders the writers.  ``l0_files``: how many
    L0 files the version has (the write path's slowdown check reads it)."""

    def __init__(self, version=None):
        self.set(version)

    def set(self, version):
        self.version = version
        self.view = None
        self.l0_files = 0 if version is None else len(version.levels[0])
