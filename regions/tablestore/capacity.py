"""Capacity units by Tablestore's published rules (reference section 4.8).

Sizes: a column is its name's bytes plus its value's size (8 for INTEGER and
DOUBLE, 1 for BOOLEAN, byte length for STRING/BINARY); a primary key is the
sum over its columns.  One CU is 4 KB (4096 B), rounded up.

- PutRow/UpdateRow: write = ceil((PK + attributes) / 4K); UpdateRow's
  DELETE/DELETE_ALL cells count their name only.  A condition other than
  IGNORE, or a column condition, adds read = ceil(PK / 4K).
- DeleteRow: write = ceil(PK / 4K), plus the same condition rule.
- A failed condition consumes 1 write + 1 read; a failed DeleteRow, 1 write.
- GetRow: read = ceil((PK + attribute cells returned) / 4K); 1 if no row is
  returned.  What is read but not returned (columns left out, versions not
  selected, rows a filter drops) is not counted.
- GetRange: read = ceil(sum over returned rows / 4K); an empty page costs 1.
Pure functions.  The C paths' twins (_rowcodec.read_cu, write_cu, pk_size;
_cellcodec.cells_size) are held to these by tests/test_tablestore_rows_c.py.
"""
from .cells import value_size
from .metadata import CapacityUnit, RowExistenceExpectation

__all__ = ["UNIT", "units", "pk_size", "cells_size", "write_cu", "read_cu"]

UNIT = 4096


def units(size):
    return -(-size // UNIT)


def pk_size(primary_key):
    """Size of a PK given as [(name, value)]."""
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in primary_key)


def cells_size(cells):
    """Size of attribute cells given as (name, value, ...) tuples (value None: name only)."""
    total = 0
    for cell in cells:
        total += len(cell[0].encode("utf-8"))
        if cell[1] is not None:
            total += value_size(cell[1])
    return total


def has_read_cost(condition):
    return condition is not None and (
        condition.row_existence_expectation != RowExistenceExpectation.IGNORE
        or condition.column_condition is not None)


def write_cu(pk_bytes, attr_bytes, condition):
    """Consumed CU of a successful put/update/delete."""
    read = units(pk_bytes) if has_read_cost(condition) else 0
    return CapacityUnit(read, max(1, units(pk_bytes + attr_bytes)))


def read_cu(size):
    """Consumed CU of a read of ``size`` bytes (1 when nothing was read)."""
    return CapacityUnit(max(1, units(size)), 0)


def failed_condition_cu(delete=False):
    """CU of a write whose condition failed: 1 write + 1 read; a DeleteRow's, 1 write."""
    return CapacityUnit(0 if delete else 1, 1)

