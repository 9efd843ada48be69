"""The checks of the engine API's arguments: keys, values, range bounds.

A bad argument raises the built-in ``TypeError`` or ``ValueError`` naming it,
before anything changes (lsm/errors.py); these are the one text of each.  They
depend on nothing, so every module that takes keys, the C ones included
(ext/lsm/_write_batch.pyx, _write.pyx, _read.pyx, _table_iter.pyx), imports them at load
time: the cold path of a check written in C calls them for the message.
"""

__all__ = ["check_key", "check_value", "check_bound"]


def check_key(key, limit: int, name: str = "key") -> None:
    if type(key) is not bytes:
        if isinstance(key, (bytearray, memoryview)):
            raise TypeError(f"{name} must be bytes, got {type(key).__name__} (convert with bytes())")
        raise TypeError(f"{name} must be bytes, got {type(key).__name__}")
    if not key:
        raise ValueError(f"{name} must not be empty")
    if len(key) > limit:
        raise ValueError(f"{name} is {len(key)} bytes, over the limit of {limit} (Options.max_key_bytes)")


def check_value(value, limit: int) -> None:
    if type(value) is not bytes:
        raise TypeError(f"value must be bytes, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"value is {len(value)} bytes, over the limit of {limit} (Options.max_value_bytes)")


def check_bound(name: str, bound) -> None:
    """A range bound (start/end, lo/hi) must be bytes or None (None = open)."""
    if bound is not None and type(bound) is not bytes:
        raise TypeError(f"{name} must be bytes or None, got {type(bound).__name__}")
