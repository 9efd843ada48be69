# The row layout's byte values for C, declared once.  The formats are
# documented, and owned, in Python: regions/tablestore/pkcodec.py (row keys:
# TAG_*) and regions/tablestore/cells.py (entries: ROW_*, KIND_*, D_*, T_*).
# tests/test_tablestore_rows_c.py checks every value here against them
# (through ``_rowcodec.LAYOUT``).  Never renumbered.

cdef enum:
    # pkcodec: the tag byte of each primary-key value
    TAG_INF_MIN = 0x00
    TAG_INTEGER = 0x10
    TAG_STRING = 0x20
    TAG_BINARY = 0x30
    TAG_INF_MAX = 0xFF
    # pkcodec: a STRING or BINARY value ends with 0x00 PK_END; a 0x00 inside
    # it is written 0x00 PK_ESCAPED
    PK_END = 0x01
    PK_ESCAPED = 0xFF
    # cells: the byte after the row key (head, delta) and the row's end
    ROW_HEAD = 0x00
    ROW_DELTA = 0x01
    ROW_END = 0x02
    # cells: head kinds
    KIND_PUT = 0x01
    KIND_DELETED = 0x02
    # cells: delta kinds
    D_PUT = 0x11
    D_DELETE_ONE = 0x12
    D_DELETE_ALL = 0x13
    D_EXISTS = 0x14
    # cells: value types
    T_INTEGER = 0
    T_DOUBLE = 1
    T_BOOLEAN = 2
    T_STRING = 3
    T_BINARY = 4
