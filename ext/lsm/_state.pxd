# The live state of an open DB, for its C paths (lsm._read, lsm._write).
from libc.stdint cimport uint64_t


cdef class DBState:
    cdef public object mem, imm, log, write_error, bg_error
    cdef readonly dict mem_versions, imm_versions   # mem's and imm's ``versions`` (set_mem, set_imm)
    cdef public bint closed
    cdef public uint64_t last_seq


cdef class CurrentVersion:
    cdef readonly object version    # a VersionSet's current Version
    cdef public object view         # the point read's ReadView of it, or None (lsm._read)
    cdef readonly Py_ssize_t l0_files   # len(version.levels[0])
