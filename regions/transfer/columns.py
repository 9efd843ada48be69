"""Typed columns: ``NAME:TYPE`` specs, text and JSON values as Tablestore values.

Types are Tablestore's: primary-key columns INTEGER, STRING, BINARY;
attribute columns also DOUBLE and BOOLEAN.  One text form per type, shared by
the CSV reader and writer (and by JSON Lines for the types JSON lacks):

=========  ======================================================  ==============
type       text accepted                                           text written
=========  ======================================================  ==============
INTEGER    decimal int64 (``-12``, ``+7``)                          ``-12``
DOUBLE     a finite float (``1.5``, ``2e3``, ``7``)                 ``repr(float)``
BOOLEAN    ``true``/``false`` (any case), ``1``/``0``               ``true``
STRING     any text (UTF-8)                                         as is
BINARY     base64 (standard alphabet, padded)                       base64
=========  ======================================================  ==============

Limits are the service's (regions.tablestore.validate): a primary-key value
at most 1 KB, an attribute value at most 2 MB, integers in int64, doubles
finite.  A value that breaks a rule raises ``BadValue`` naming it, here,
before anything is sent.  BINARY values are ``bytearray``: the SDK sends
``bytes`` as a STRING.  Pure functions.
"""

from __future__ import annotations

import base64
import binascii
import math

from regions.tablestore.validate import MAX_PK_BYTES, MAX_VALUE_BYTES

from .errors import BadValue, TransferError

__all__ = ["PK_TYPES", "TYPES", "parse_spec", "from_text", "to_text", "from_json", "to_json",
           "type_of", "infer_type", "check_value"]

PK_TYPES = ("INTEGER", "STRING", "BINARY")
TYPES = ("INTEGER", "DOUBLE", "BOOLEAN", "STRING", "BINARY")
_INT64 = (-(1 << 63), (1 << 63) - 1)
_TRUE, _FALSE = ("true", "1"), ("false", "0")


def parse_spec(spec: str, what: str, allowed=TYPES) -> list[tuple[str, str]]:
    """``'a:INTEGER,b:STRING'`` as ``[(name, TYPE)]``; TransferError names a bad part."""
    out, seen = [], set()
    for part in spec.split(","):
        name, _, kind = part.strip().partition(":")
        kind = kind.strip().upper()
        if not name or kind not in allowed:
            raise TransferError(f"{what} column {part.strip()!r} must be NAME:TYPE with TYPE one "
                                f"of {', '.join(allowed)}")
        if name in seen:
            raise TransferError(f"{what} column {name!r} is given twice")
        seen.add(name)
        out.append((name, kind))
    return out


def type_of(value) -> str:
    """The Tablestore type of a Python value (bool before int: a bool is an int)."""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, (bytes, bytearray)):
        return "BINARY"
    raise BadValue(f"a {type(value).__name__} value cannot be stored "
                   "(Tablestore has INTEGER, DOUBLE, BOOLEAN, STRING, BINARY)")


def check_value(value, kind: str, pk: bool = False):
    """``value`` (already of ``kind``'s Python type) within the service's limits."""
    if kind == "INTEGER" and not _INT64[0] <= value <= _INT64[1]:
        raise BadValue(f"{value} is outside the INTEGER (int64) range")
    if kind == "DOUBLE" and not math.isfinite(value):
        raise BadValue(f"{value} is not a finite DOUBLE")
    if kind in ("STRING", "BINARY"):
        size = len(value.encode("utf-8")) if kind == "STRING" else len(value)
        limit = MAX_PK_BYTES if pk else MAX_VALUE_BYTES
        if size > limit:
            what = "a primary-key value" if pk else "a cell"
            raise BadValue(f"{kind} value of {size} bytes is over the service's limit of "
                           f"{limit} bytes for {what}")
    return value


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def from_text(text: str, kind: str, pk: bool = False):
    """The value of ``kind`` that ``text`` writes (table above)."""
    try:
        if kind == "STRING":
            value = text
        elif kind == "INTEGER":
            value = int(text.strip())
        elif kind == "DOUBLE":
            value = float(text)
        elif kind == "BOOLEAN":
            low = text.strip().lower()
            if low not in _TRUE + _FALSE:
                raise ValueError
            value = low in _TRUE
        else:
            value = bytearray(base64.b64decode(text, validate=True))
    except (ValueError, binascii.Error):
        raise BadValue(f"{_short(text)} is not "
                       f"{'a base64 ' if kind == 'BINARY' else 'an ' if kind[0] in 'AEIOU' else 'a '}"
                       f"{kind}") from None
    return check_value(value, kind, pk)


def to_text(value) -> str:
    """The text form of a Tablestore value (the inverse of ``from_text``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def from_json(value, kind: str | None, pk: bool = False):
    """A JSON (or Parquet) value as a Tablestore value: its own type when
    ``kind`` is None, else converted to ``kind`` (a string through
    ``from_text``, an int to DOUBLE; nothing else is coerced)."""
    if kind is None:
        kind = type_of(value)
        if isinstance(value, bytes):
            value = bytearray(value)
        return check_value(value, kind, pk)
    if isinstance(value, str) and kind != "STRING":
        return from_text(value, kind, pk)
    if kind == "DOUBLE" and type_of(value) == "INTEGER":
        value = float(value)
    have = type_of(value)
    if have != kind:
        raise BadValue(f"{_short(str(value))} is {have}, not {kind}")
    return check_value(bytearray(value) if kind == "BINARY" else value, kind, pk)


def to_json(value):
    """A Tablestore value as JSON can hold it (BINARY as base64 text)."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def infer_type(texts) -> str:
    """The narrowest type every non-empty text parses as: INTEGER, DOUBLE,
    BOOLEAN, else STRING (BINARY is never guessed: give it by ``--columns``)."""
    texts = [t for t in texts if t != ""]
    for kind in ("INTEGER", "DOUBLE", "BOOLEAN"):
        try:
            for t in texts:
                from_text(t, kind)
        except BadValue:
            continue
        if texts:
            return kind
    return "STRING"
