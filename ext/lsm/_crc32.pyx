# cython: language_level=3
"""zlib's CRC-32 of a buffer, in C: ``crc32`` (lsm/crc.py re-exports it, and
masks it as LevelDB does), folded with PCLMULQDQ when the buffer is long and
the CPU has it (ext/lsm/crc32_fold.h, declared in _crc32.pxd), else zlib's.
The CRC of every table block and log record; the same values as
``zlib.crc32`` (tests/test_record.py checks both methods against it).
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint32_t


def crc32(data, uint32_t value=0):
    """zlib's ``crc32(data, value)`` of any buffer, folded with PCLMULQDQ
    when the buffer is long and the CPU has it (ext/lsm/crc32_fold.h): the
    CRC of every table block and log record (lsm/crc.py)."""
    cdef Py_buffer view
    cdef uint32_t c
    if type(data) is bytes:
        return lsm_crc32(value, <const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            c = lsm_crc32(value, <const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return c


def _crc32_with(data, uint32_t value, int force):
    """``crc32`` with the method forced (1: folded when >= 64 bytes and the
    CPU can, 0: zlib), and the fold's constants: for tests."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return lsm_crc32_with(value, <const unsigned char*>view.buf, view.len, force)
    finally:
        PyBuffer_Release(&view)


#: The fold's constants (x^544, x^480, x^160, x^96 mod P, reflected) and
#: the length from which ``crc32`` folds: for tests.
FOLD_CONSTANTS = (LSM_K544, LSM_K480, LSM_K160, LSM_K96)
FOLD_MIN = LSM_CRC_FOLD_MIN
