"""The per-table bloom filter over user keys (grammar: ext/lsm/_bloom.pyx).

One filter per table, whole (not per 2 KiB of data as in LevelDB's filter
block): tables are a few MiB, so a filter is a few KiB and is kept in memory
by the open ``Table``.  A miss costs one mmh3 hash and k bit tests and no
block read.  Building is fed by ``TableBuildCore``, which collects one
16-byte ``key_digest`` per distinct user key as entries are added.
"""
from ._bloom import MAX_PROBES, build, key_digest, may_contain, num_probes

__all__ = ["FILTER_BLOCK_NAME", "MAX_PROBES", "build", "build_from_keys", "key_digest",
           "may_contain", "num_probes"]

#: Metaindex name of the filter block.  Never change: a reader finds the
#: filter by it, and a new hash or probe scheme needs a new name.
FILTER_BLOCK_NAME = b"filter.mmh3"


def build_from_keys(user_keys, bits_per_key: int) -> bytes:
    """A filter over an iterable of user keys (for tools and tests)."""
    return build(b"".join(key_digest(k) for k in user_keys), bits_per_key)
