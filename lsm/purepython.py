"""The one switch between the C fast paths and the Python general paths.

Where an operation has a C fast path beside a Python general path (the
general one handles every case, the fast one the common cases), the choice
is made per operation in one place, and this flag sends every such choice
down the Python path, as msgpack's ``MSGPACK_PUREPYTHON`` does::

    LSM_REGIONS_PUREPYTHON=1 python -m pytest tests/test_tablestore_model.py

It is read here, once, at import; every fork reads ``PUREPYTHON`` from here
(lsm: ``lsm.PUREPYTHON``; the layers above through ``regions.PUREPYTHON``).
The forks it turns: the operations an ``lsm.DB``, a ``RegionServer`` and a
``TableBuilder`` bind to one C call each when they are made (``c_call``
below: under the switch, the method of the same name in db.py, server.py or
sstable.py runs), and with them a region's router calling its store's C
point read, scan and put directly (lsm's C face finds those paths through
the store's bound methods, ext/lsm/_api.pyx);
regions.tablestore's C row writer (``writes.RowWriter``), C row reader and C
decoding of rows read whole (``reads.row_reader``, ``reads.decode_in_c``);
regions.otsserver's C PlainBuffer encoder and CRC-8 of a whole buffer
(``plainbuffer.PlainBufferCodec``'s ``compiled``, ``plainbuffer.crc8_buffer``).
Code that has no Python twin (the engine's
blocks, tables, memtable, WAL writer; the row codec) runs in C either way:
the switch turns choices, it does not make a second engine.
"""
import os

__all__ = ["ENV", "PUREPYTHON", "c_call", "bind_c_calls"]

#: The environment variable: set and not "0", every fork takes the Python path.
ENV = "LSM_REGIONS_PUREPYTHON"
PUREPYTHON = os.environ.get(ENV, "") not in ("", "0")


def c_call(path: str):
    """Declare a method as one C call bound in its place: ``bind_c_calls(obj)``
    (run when ``obj`` opens, or is made) sets ``obj.<name>`` to ``obj.<path>.<name>``, the
    C object's method of the same name, so a call of ``obj.<name>`` is that C
    call and no Python frame.  The method declared is the documentation of
    the operation, and its body (the same call, through ``obj.<path>``) is
    what runs under the switch."""
    def declare(method):
        method.c_call = path
        return method
    return declare


_C_CALLS = {}       # class -> ((name, path), ...): its methods declared by c_call


def bind_c_calls(obj) -> None:
    """The one fork of the operations declared by ``c_call``: unless
    ``PUREPYTHON``, bind each on ``obj`` to its C call.  ``obj``'s C objects
    (the paths) must exist."""
    if PUREPYTHON:
        return
    cls = type(obj)
    calls = _C_CALLS.get(cls)
    if calls is None:
        calls = _C_CALLS[cls] = tuple(
            (name, method.c_call) for name in dir(cls)
            for method in (getattr(cls, name),) if hasattr(method, "c_call"))
    for name, path in calls:
        setattr(obj, name, getattr(getattr(obj, path), name))
