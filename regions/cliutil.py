"""What every command line of the project shares: errors of one line, and
argparse ``type=`` functions that name the bad value and what is allowed.

    from regions import cliutil

    p = cliutil.Parser(prog="regions-x")
    p.add_argument("--port", type=cliutil.port)              # 0-65535
    p.add_argument("--workers", type=cliutil.positive_int)   # 1 or more
    p.add_argument("--batch", type=cliutil.int_in(1, 200))
    p.add_argument("--seed", type=cliutil.non_negative_int)
    p.add_argument("--seconds", type=cliutil.positive_float)
    p.add_argument("--max-body", type=cliutil.byte_size)     # 8192, 64KiB, 5MiB
    p.add_argument("--data", type=cliutil.store_dir)         # a store, or where one can go
    p.add_argument("--dir", type=cliutil.existing_dir)
    p.add_argument("--instance", type=cliutil.word("an instance name"))
    args = p.parse_args(argv)      # bad input: "regions-x: error: argument --port: 99999
                                   # is not a port (0-65535)" on stderr, exit status 2
    ...
    except SomeError as e:
        return cliutil.fail("regions-x", e)      # the same one line; returns 2

Tracebacks are for bugs: an expected failure is one line on stderr,
``PROG: error: MESSAGE``, and a non-zero exit status.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

from regions.options import parse_bytes

__all__ = ["Parser", "fail", "one_line", "os_error", "int_in", "float_in", "port",
           "positive_int", "non_negative_int", "positive_float", "non_negative_float",
           "byte_size", "word", "existing_dir", "input_file", "output_file",
           "store_dir"]


def one_line(message) -> str:
    """``message`` (any object) as one line: its lines joined with ``; ``."""
    return "; ".join(ln.strip() for ln in str(message).splitlines() if ln.strip())


def fail(prog: str, message, status: int = 2) -> int:
    """Print ``PROG: error: MESSAGE`` (one line) on stderr; return ``status``."""
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)
    return status


def os_error(e: OSError) -> str:
    """An OSError without its ``[Errno N]``: ``what: path``."""
    if not e.strerror:
        return str(e)
    return f"{e.strerror}: {e.filename}" if e.filename is not None else e.strerror


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, ``PROG: error: MESSAGE``
    (exit status 2), without the usage block (``--help`` shows it)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def _bad(text: str, what: str, allowed: str) -> argparse.ArgumentTypeError:
    shown = text if text.strip() == text and text else repr(text)
    return argparse.ArgumentTypeError(f"{shown} is not {what} ({allowed})")


def int_in(low: int, high: int | None = None, what: str = "an integer"):
    """A ``type=``: an int in ``[low, high]`` (``high`` None: no upper bound)."""
    allowed = f"{low}-{high}" if high is not None else f"{low} or more"

    def convert(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise _bad(text, what, allowed) from None
        if value < low or (high is not None and value > high):
            raise _bad(text, what, allowed)
        return value
    return convert


def float_in(low: float, high: float | None = None, what: str = "a number",
             low_inclusive: bool = False):
    """A ``type=``: a finite float above ``low`` (or at it, ``low_inclusive``),
    at most ``high`` (None: no upper bound)."""
    allowed = f"{low:g} or more" if low_inclusive else f"greater than {low:g}"
    if high is not None:
        allowed += f", at most {high:g}"

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _bad(text, what, allowed) from None
        if not math.isfinite(value) or value < low or (value == low and not low_inclusive) \
                or (high is not None and value > high):
            raise _bad(text, what, allowed)
        return value
    return convert


port = int_in(0, 65535, "a port")
positive_int = int_in(1, what="a positive integer")
non_negative_int = int_in(0, what="a non-negative integer")
positive_float = float_in(0, what="a positive number")
non_negative_float = float_in(0, what="a non-negative number", low_inclusive=True)


def byte_size(text: str) -> int:
    """A ``type=``: a positive number of bytes, ``8192`` or with a binary
    unit as ``-D`` takes them (regions.options.parse_bytes): ``64KiB``,
    ``5MiB``, ``1GiB`` (or K, M, G)."""
    try:
        size = parse_bytes(text)
    except ValueError:
        size = 0
    if size < 1:
        raise _bad(text, "a byte size", "1 or more, e.g. 8192, 64KiB, 5MiB")
    return size


def word(what: str):
    """A ``type=``: non-empty text without spaces or control characters
    (a name, a key), ``what`` naming it in the error."""
    def convert(text: str) -> str:
        if not text or not text.isprintable() or any(c.isspace() for c in text):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} (not empty, no spaces)")
        return text
    return convert


def existing_dir(text: str) -> str:
    """A ``type=``: a directory that exists."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(_not_a_dir(text))
    return text


def _not_a_dir(text: str) -> str:
    if not text:
        return "an empty path is not a directory"
    if os.path.exists(text):
        return f"{text} is a file, not a directory"
    return f"{text}: no such directory"


def input_file(text: str) -> str:
    """A ``type=``: a file that exists and can be read (a regular file, or a
    pipe such as bash's ``<(zcat keys.gz)``; not a directory)."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text or repr(text)}: no such file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: cannot read it")
    return text


def output_file(text: str) -> str:
    """A ``type=``: a file that can be written: not a directory, in a
    directory that exists and can be written in."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path is not a file")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text}: {_not_a_dir(folder)}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: cannot write in {folder}")
    return text


def store_dir(text: str) -> str:
    """A ``type=``: where a store is or can be made: a directory, or a new
    one under a directory one can write in (an empty path, which would be
    the working directory, and a file are refused).  Whether a store is
    there is the opener's question (``RegionServer.exists``)."""
    if os.path.isdir(text):
        return text
    if not text or os.path.exists(text):
        raise argparse.ArgumentTypeError(_not_a_dir(text))
    parent = os.path.dirname(os.path.abspath(text))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"{text}: {_not_a_dir(parent)}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: cannot make a directory in {parent}")
    return text
