"""In-memory stand-ins for lsm.fs's AppendFile and ReadFile, for tests of the
formats (WAL, tables) that need no file system."""
from lsm.errors import CorruptionError


class MemAppendFile:
    """The AppendFile interface over a bytearray (``data``), optionally
    starting with existing bytes."""

    def __init__(self, data: bytes = b""):
        self.data = bytearray(data)
        self.size = len(data)
        self.closed = False

    def append(self, data):
        self.data += data
        self.size += len(data)

    def sync(self):
        pass

    def close(self):
        self.closed = True


class MemReadFile:
    """The ReadFile interface over bytes, counting reads."""

    def __init__(self, data):
        self.data = bytes(data)
        self.reads = 0
        self.closed = False

    def read(self, offset, n):
        if offset < 0 or offset + n > len(self.data):
            raise CorruptionError(f"short read at {offset}+{n}")
        self.reads += 1
        return self.data[offset:offset + n]

    @property
    def size(self):
        return len(self.data)

    def close(self):
        self.closed = True
