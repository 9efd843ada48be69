"""The one switch between the C fast paths and the Python general paths.

Where an operation has a C fast path beside a Python general path (the
general one handles every case, the fast one the common cases), the choice
is made per operation in one place, and this flag sends every such choice
down the Python path, as msgpack's ``MSGPACK_PUREPYTHON`` does::

    LSM_REGIONS_PUREPYTHON=1 python -m pytest tests/test_tablestore_model.py

It is read here, once, at import; every fork reads ``PUREPYTHON`` from here
(lsm: ``lsm.PUREPYTHON``; the layers above through ``regions.PUREPYTHON``).
The forks it turns: lsm's DB binding its write methods to the C write path;
a region's gate calling its store's C point read, scan and put directly;
regions.tablestore's C row writer (``writes.RowWriter``), C row reader and C
decoding of rows read whole (``reads.row_reader``, ``reads.decode_in_c``);
regions.otsserver's C PlainBuffer encoder and CRC-8 of a whole buffer
(``plainbuffer.PlainBufferCodec``'s ``compiled``, ``plainbuffer.crc8_buffer``).
Code that has no Python twin (the engine's
blocks, tables, memtable, WAL writer; the row codec) runs in C either way:
the switch turns choices, it does not make a second engine.
"""
import os

__all__ = ["ENV", "PUREPYTHON"]

#: The environment variable: set and not "0", every fork takes the Python path.
ENV = "LSM_REGIONS_PUREPYTHON"
PUREPYTHON = os.environ.get(ENV, "") not in ("", "0")
