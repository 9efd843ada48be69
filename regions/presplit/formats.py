"""Reading and writing split points and key samples.

Formats (one owner for each):

- HBase SPLITS file (``create 't', 'f', SPLITS_FILE => 'splits.txt'``): one
  split point per line, lines end with ``\\n`` (a ``\\r\\n`` is accepted on
  reading). str points are written as UTF-8 text, int points in decimal, bytes
  points in HBase's ``Bytes.toStringBinary`` form: printable ASCII as is, every
  other byte and the backslash as ``\\xNN`` (two hex digits). An empty line
  is an error (the empty key is the table's start, never a split point).
- Key sample file: one key per line, in arrival order, decoded the same way
  as a SPLITS line; optionally ``key<TAB>bytes`` where ``bytes`` is the size
  of the row the key stands for (used for equal-bytes splits and byte
  shares).
- JSON: ``{"algorithm", "regions", "key_type", "split_points",
  "split_keys_hex"}``; bytes points appear in toStringBinary form in
  ``split_points`` and every point's raw-layer encoding (``encode_point``)
  in ``split_keys_hex``. ``points_from_json`` reads it back.

Functions are pure apart from the file they are given.
"""

from __future__ import annotations

import json
import re

from .algorithms import check_points, encode_point
from .errors import PresplitError

__all__ = [
    "KEY_TYPES", "to_string_binary", "from_string_binary", "format_point",
    "parse_point", "read_lines", "read_splits_file", "read_sample_file",
    "splits_text", "points_json", "points_from_json",
]

KEY_TYPES = ("str", "int", "bytes")
_ESCAPE = re.compile(rb"[^\x20-\x5b\x5d-\x7e]")
_HEX_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def to_string_binary(b: bytes) -> str:
    """HBase ``Bytes.toStringBinary``: printable ASCII kept, the rest ``\\xNN``."""
    return _ESCAPE.sub(lambda m: b"\\x%02X" % m.group()[0], b).decode("ascii")


def from_string_binary(s: str) -> bytes:
    """HBase ``Bytes.toBytesBinary``: the inverse of ``to_string_binary``."""
    out, pos = bytearray(), 0
    for m in _HEX_ESCAPE.finditer(s):
        out += s[pos:m.start()].encode("utf-8")
        out.append(int(m.group(1), 16))
        pos = m.end()
    out += s[pos:].encode("utf-8")
    return bytes(out)


def format_point(point) -> str:
    """One point as a SPLITS-file line (without the newline)."""
    if isinstance(point, bytes):
        return to_string_binary(point)
    text = str(point)
    if "\n" in text or "\r" in text:
        raise PresplitError(f"point {point!r} contains a line break; a SPLITS file cannot hold it")
    return text


def parse_point(text: str, key_type: str):
    """One SPLITS-file line as a typed point."""
    if key_type == "str":
        return text
    if key_type == "bytes":
        return from_string_binary(text)
    if key_type == "int":
        try:
            return int(text)
        except ValueError:
            raise PresplitError(f"{text!r} is not an integer key") from None
    raise PresplitError(f"unknown key type {key_type!r}: choose one of {', '.join(KEY_TYPES)}")


def read_lines(path: str) -> list[str]:
    """The file's lines without line endings; PresplitError if unreadable."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise PresplitError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _parse_line(text: str, key_type: str, path: str, no: int):
    """``parse_point`` naming the file and line of a bad key."""
    try:
        return parse_point(text, key_type)
    except PresplitError as e:
        raise PresplitError(f"{path}:{no}: {e}") from None


def read_splits_file(path: str, key_type: str = "str") -> list:
    """Points of an HBase SPLITS file, validated (sorted, unique, non-empty)."""
    points = []
    for no, line in enumerate(read_lines(path), 1):
        if not line:
            raise PresplitError(f"{path}:{no}: empty line (split points cannot be empty)")
        points.append(_parse_line(line, key_type, path, no))
    try:
        return check_points(points)
    except PresplitError as e:
        raise PresplitError(f"{path}: {e}") from None


def read_sample_file(path: str, key_type: str = "str"):
    """``(keys, sizes)`` of a key sample file; ``sizes`` is None when no line
    carries a size."""
    keys, sizes, sized = [], [], False
    for no, line in enumerate(read_lines(path), 1):
        if not line:
            continue
        key, tab, size = line.partition("\t")
        keys.append(_parse_line(key, key_type, path, no))
        if tab:
            sized = True
            try:
                sizes.append(int(size))
            except ValueError:
                raise PresplitError(f"{path}:{no}: size {size!r} is not an integer") from None
        else:
            sizes.append(len(encode_point(keys[-1])))
    if not keys:
        raise PresplitError(f"{path}: the key sample is empty")
    return keys, (sizes if sized else None)


def splits_text(points) -> str:
    """A SPLITS file's text for ``points``."""
    return "".join(format_point(p) + "\n" for p in check_points(points))


def _key_type_of(points, default: str) -> str:
    return type(points[0]).__name__ if points else default


def points_json(points, algorithm: str, key_type: str = "str", extra: dict | None = None) -> str:
    """The JSON document for a plan (see the module docstring)."""
    points = check_points(points)
    doc = {
        "algorithm": algorithm,
        "regions": len(points) + 1,
        "key_type": _key_type_of(points, key_type),
        "split_points": [to_string_binary(p) if isinstance(p, bytes) else p for p in points],
        "split_keys_hex": [encode_point(p).hex() for p in points],
    }
    if extra:
        doc.update(extra)
    return json.dumps(doc, indent=2, ensure_ascii=False)


def points_from_json(text: str) -> list:
    """Typed points of a document written by ``points_json``."""
    try:
        doc = json.loads(text)
        kind, raw = doc["key_type"], doc["split_points"]
    except (ValueError, KeyError, TypeError) as e:
        raise PresplitError(f"not a split-plan JSON document: {e}") from None
    points = [from_string_binary(p) if kind == "bytes" else p for p in raw]
    return check_points(points)
