"""Row-key design helpers: hash prefixes, salting, reversal, spliced keys.

Why: pre-splitting only helps when keys spread over the keyspace. The HBase
book and Tablestore's table-design guide give a small set of transforms that
turn a badly spread key (monotonic ids, timestamps, a partition key with few
values) into a well spread one. Each transform here comes with its inverse
where one exists, so application code can read the original value back.

- ``hash_prefix`` / ``strip_hash_prefix``: the first ``width`` hex digits of
  md5 (or mmh3) of the value, spliced in front of it (Tablestore's
  HashOrderNumber example). Gets stay cheap; range scans over the original
  order are lost.
- ``salt`` / ``unsalt``: one of N zero-padded salt values in front of the key,
  chosen deterministically from a hash or at random (HBase salting, Phoenix
  SALT_BUCKETS). Reads of one key need the salt or N probes.
- ``reverse_fixed`` / ``reverse_number``: reverse a fixed-width string or a
  zero-padded number, so the fast-changing end leads.
- ``reversed_timestamp``: ``MAX - ts`` (an involution), newest first.
- ``splice`` / ``unsplice``: several primary-key columns in one partition key
  string, integers zero-padded, joined by a connector; ``splice_order_check``
  says whether that preserves the order of the original tuples and, when it
  does not, returns a pair of tuples that proves it.

All functions are pure and thread-safe. Bad input raises ``KeyDesignError``
(a ``ValueError``) or ``TypeError`` naming what is wrong.
"""

from __future__ import annotations

import hashlib
import random
import string
from dataclasses import dataclass

import mmh3

__all__ = [
    "KeyDesignError", "hash_digest", "hash_prefix", "strip_hash_prefix",
    "salt_width", "salt_of", "salt", "unsalt", "reverse_fixed",
    "reverse_number", "unreverse_number", "MAX_TIMESTAMP", "reversed_timestamp",
    "StrColumn", "IntColumn", "splice", "unsplice", "check_connector",
    "OrderCheck", "splice_order_check",
]

HASHES = ("md5", "mmh3")
DIGITS = string.digits
MAX_TIMESTAMP = (1 << 63) - 1  # Long.MAX_VALUE, as in HBase's reversed-ts idiom


class KeyDesignError(ValueError):
    """A key-design helper was given a value it cannot transform or invert."""


def _text(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, bytes)):
        raise TypeError(f"key value must be str, int or bytes, not {type(value).__name__}")
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def hash_digest(value, algo: str = "md5") -> str:
    """Lowercase hex digest of ``value`` (str and int hashed as UTF-8 text).

    md5 gives 32 hex digits (Tablestore's example); mmh3 gives the 128-bit
    MurmurHash3 as 32 hex digits, faster and equally well spread.
    """
    data = _text(value).encode("utf-8")
    if algo == "md5":
        return hashlib.md5(data).hexdigest()
    if algo == "mmh3":
        return mmh3.hash_bytes(data).hex()
    raise KeyDesignError(f"unknown hash {algo!r}: choose one of {', '.join(HASHES)}")


def _check_width(width: int, limit: int, what: str) -> None:
    if isinstance(width, bool) or not isinstance(width, int):
        raise TypeError(f"{what} must be an int, not {type(width).__name__}")
    if not 1 <= width <= limit:
        raise KeyDesignError(f"{what} must be between 1 and {limit}, got {width}")


def hash_prefix(value, width: int = 4, algo: str = "md5", sep: str = "") -> str:
    """``hash_digest(value)[:width] + sep + str(value)``.

    Tablestore's HashOrderNumber: ``hash_prefix(order_number, 4)`` spreads
    monotonic order numbers over 16**4 prefixes; pre-split with
    ``presplit.hash_prefix`` of the same width.
    """
    _check_width(width, 32, "hash prefix width")
    return hash_digest(value, algo)[:width] + sep + _text(value)


def strip_hash_prefix(key: str, width: int = 4, algo: str = "md5", sep: str = "") -> str:
    """Inverse of ``hash_prefix`` for str and int values: the original text.

    Raises KeyDesignError when the prefix does not match the value's hash,
    so a key built with other parameters is never silently misread.
    """
    _check_width(width, 32, "hash prefix width")
    if not isinstance(key, str):
        raise TypeError(f"key must be str, not {type(key).__name__}")
    head, rest = key[:width], key[width:]
    if sep:
        if not rest.startswith(sep):
            raise KeyDesignError(f"key {key!r} lacks separator {sep!r} after the hash prefix")
        rest = rest[len(sep):]
    if len(head) != width or hash_digest(rest, algo)[:width] != head:
        raise KeyDesignError(f"key {key!r} does not start with the {algo} prefix of its value")
    return rest


def salt_width(buckets: int) -> int:
    """Digits of the zero-padded salt for ``buckets`` salt values."""
    _check_width(buckets, 10**9, "salt buckets")
    return len(str(buckets - 1))


def salt_of(value, buckets: int) -> int:
    """Deterministic salt in ``[0, buckets)``: mmh3 of the value, modulo N."""
    salt_width(buckets)
    return mmh3.hash(_text(value).encode("utf-8"), signed=False) % buckets


def salt(value, buckets: int, sep: str = "", rng: random.Random | None = None) -> str:
    """Salted key ``"%0*d" % (w, s) + sep + str(value)``.

    Deterministic (``rng=None``): the same value always gets the same salt,
    so a Get needs no probe. Random (``rng`` given): writes spread perfectly
    but a Get must probe all N salts.
    """
    width = salt_width(buckets)
    s = rng.randrange(buckets) if rng is not None else salt_of(value, buckets)
    return f"{s:0{width}d}{sep}{_text(value)}"


def unsalt(key: str, buckets: int, sep: str = "") -> tuple[int, str]:
    """Inverse of ``salt``: ``(salt, original text)``."""
    width = salt_width(buckets)
    if not isinstance(key, str):
        raise TypeError(f"key must be str, not {type(key).__name__}")
    head, rest = key[:width], key[width:]
    if not (len(head) == width and head.isdigit() and int(head) < buckets):
        raise KeyDesignError(f"key {key!r} does not start with a salt below {buckets}")
    if sep:
        if not rest.startswith(sep):
            raise KeyDesignError(f"key {key!r} lacks separator {sep!r} after the salt")
        rest = rest[len(sep):]
    return int(head), rest


def reverse_fixed(value: str, width: int, pad: str = "0") -> str:
    """Left-pad ``value`` to ``width`` with ``pad`` and reverse it.

    Fixed width matters: reversing unpadded ids maps "12" and "120" to keys
    that are not comparable digit by digit. Its own inverse for values that
    are already ``width`` long.
    """
    if not isinstance(value, str):
        raise TypeError(f"value must be str, not {type(value).__name__}")
    _check_width(width, 1 << 16, "width")
    if len(value) > width:
        raise KeyDesignError(f"value {value!r} is longer than width {width}")
    if len(pad) != 1:
        raise KeyDesignError(f"pad must be one character, got {pad!r}")
    return value.rjust(width, pad)[::-1]


def reverse_number(n: int, width: int) -> str:
    """Zero-padded decimal digits of a non-negative int, reversed."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"number must be an int, not {type(n).__name__}")
    if n < 0:
        raise KeyDesignError(f"cannot reverse negative number {n}")
    return reverse_fixed(str(n), width)


def unreverse_number(key: str) -> int:
    """Inverse of ``reverse_number``."""
    if not isinstance(key, str) or not key.isdigit():
        raise KeyDesignError(f"reversed number must be a string of digits, got {key!r}")
    return int(key[::-1])


def reversed_timestamp(ts: int, maximum: int = MAX_TIMESTAMP) -> int:
    """``maximum - ts``: newest rows sort first. Applying it twice gives ts."""
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise TypeError(f"timestamp must be an int, not {type(ts).__name__}")
    if not 0 <= ts <= maximum:
        raise KeyDesignError(f"timestamp {ts} is outside [0, {maximum}]")
    return maximum - ts


# --- spliced partition keys -------------------------------------------------

@dataclass(frozen=True)
class StrColumn:
    """A STRING primary-key column: non-empty values over ``alphabet``."""
    alphabet: str = string.ascii_letters + string.digits

    def __post_init__(self):
        if not isinstance(self.alphabet, str) or not self.alphabet:
            raise KeyDesignError("a string column needs a non-empty alphabet")

    fixed_width = None


@dataclass(frozen=True)
class IntColumn:
    """An INTEGER column rendered as decimal, zero-padded to ``width`` digits.

    ``width=None`` means no padding: the Tablestore guide's warning case,
    where 9 sorts after 10.
    """
    width: int | None = 19

    def __post_init__(self):
        if self.width is not None:
            _check_width(self.width, 40, "integer column width")

    alphabet = DIGITS

    @property
    def fixed_width(self):
        return self.width


def _render(value, column) -> str:
    if isinstance(column, IntColumn):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"integer column needs an int, not {type(value).__name__}")
        if value < 0:
            raise KeyDesignError(f"cannot splice negative integer {value} (shift it first)")
        text = str(value)
        if column.width is None:
            return text
        if len(text) > column.width:
            raise KeyDesignError(f"integer {value} does not fit in {column.width} digits")
        return text.zfill(column.width)
    if not isinstance(value, str):
        raise TypeError(f"string column needs a str, not {type(value).__name__}")
    if not value:
        raise KeyDesignError("cannot splice an empty string column")
    stray = set(value) - set(column.alphabet)
    if stray:
        raise KeyDesignError(f"value {value!r} has characters outside its column's alphabet: "
                             f"{''.join(sorted(stray))!r}")
    return value


def _columns(values, columns):
    if columns is None:
        columns = [IntColumn() if isinstance(v, int) and not isinstance(v, bool) else StrColumn()
                   for v in values]
    if len(columns) != len(values) or not values:
        raise KeyDesignError(f"{len(values)} values for {len(columns)} columns")
    return columns


def splice(values, columns=None, connector: str = ",") -> str:
    """Join typed column values into one partition-key string.

    Integers are zero-padded to their column's width so that digit order is
    numeric order. The connector must not occur in any column but the last
    (otherwise ``unsplice`` could not split the key back); run
    ``splice_order_check`` once at design time to know whether the spliced
    keys keep the order of the tuples.
    """
    values = tuple(values)
    columns = _columns(values, columns)
    check_connector(connector, columns)
    return connector.join(_render(v, c) for v, c in zip(values, columns))


def unsplice(key: str, columns, connector: str = ","):
    """Inverse of ``splice``: the tuple of typed values."""
    if not isinstance(key, str):
        raise TypeError(f"key must be str, not {type(key).__name__}")
    columns = list(columns)
    check_connector(connector, columns)
    parts = key.split(connector, len(columns) - 1)
    if len(parts) != len(columns):
        raise KeyDesignError(f"key {key!r} has {len(parts)} parts, expected {len(columns)}")
    out = []
    for part, col in zip(parts, columns):
        if isinstance(col, IntColumn):
            if not part.isdigit():
                raise KeyDesignError(f"part {part!r} of {key!r} is not a number")
            out.append(int(part))
        else:
            out.append(part)
    return tuple(out)


def check_connector(connector: str, columns) -> None:
    """Reject a connector that could not be split back out of a spliced key.

    A connector must be one character and must not occur in any column but
    the last. Whether it also keeps the order is ``splice_order_check``'s
    question.
    """
    if not isinstance(connector, str) or len(connector) != 1:
        raise KeyDesignError(f"connector must be one character, got {connector!r}")
    for i, col in enumerate(list(columns)[:-1]):
        if connector in col.alphabet:
            raise KeyDesignError(f"connector {connector!r} occurs in column {i}'s characters; "
                                 "the spliced key could not be split back")


@dataclass(frozen=True)
class OrderCheck:
    """Verdict of ``splice_order_check``.

    ``witness`` is ``None`` when order is preserved; otherwise two tuples
    ``(a, b)`` with ``a < b`` whose spliced keys compare the other way.
    """
    preserves_order: bool
    reason: str
    witness: tuple | None = None

    def __bool__(self):
        return self.preserves_order


def splice_order_check(columns, connector: str = ",") -> OrderCheck:
    """Does ``splice`` keep the lexicographic order of the original tuples?

    Exact for the columns it accepts (connector absent from every column but
    the last, see ``check_connector``). Two tuples first differ in some
    column j. If neither value is a proper prefix of the other, the first
    differing character decides both orders alike. If the shorter value is a
    proper prefix (possible only in variable-width columns before the last),
    the spliced key puts the connector against the longer value's next
    character, so order holds iff the connector sorts below every character
    of that column. An unpadded integer column breaks numeric order by
    itself (9 > 10 as text).
    """
    columns = list(columns)
    if not columns:
        raise KeyDesignError("splice_order_check needs at least one column")
    check_connector(connector, columns)
    filler = [0 if isinstance(c, IntColumn) else min(c.alphabet) for c in columns]
    for j, col in enumerate(columns):
        if isinstance(col, IntColumn) and col.width is None:
            lo, hi = list(filler), list(filler)
            lo[j], hi[j] = 9, 10
            return OrderCheck(False, f"column {j} is an unpadded integer: 10 sorts before 9 as text",
                              (tuple(lo), tuple(hi)))
    for j, col in enumerate(columns[:-1]):
        if col.fixed_width is not None:
            continue
        m = min(col.alphabet)
        if m < connector:
            lo, hi = list(filler), list(filler)
            lo[j], hi[j] = m, m + m
            return OrderCheck(
                False,
                f"connector {connector!r} sorts above {m!r}, a character of column {j}: "
                f"a value and its extension swap places",
                (tuple(lo), tuple(hi)))
    return OrderCheck(True, f"connector {connector!r} sorts below every character that can "
                            "follow a shorter value; integers are zero-padded")

