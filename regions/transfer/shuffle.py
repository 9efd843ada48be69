"""A uniform shuffle of a stream in bounded memory (the guide: shuffle the
input so that concurrent writes spread over the partitions).

``shuffled(items, memory_items)`` yields every item once, in a uniformly
random order, holding at most about ``memory_items`` items in memory: a
stream that fits is shuffled in memory; a larger one is dealt at random into
``PILES`` temporary files (pickled, in chunks), and each pile is then
shuffled the same way, recursively if it is still too large.  Each item
lands in a pile independently and each pile is shuffled uniformly, so every
order is equally likely.  Disk: one copy of the stream per level (one level
up to ``PILES * memory_items`` items).  Items must pickle.  Not thread-safe.
"""

from __future__ import annotations

import os
import pickle
import random
import tempfile

__all__ = ["PILES", "shuffled"]

PILES = 16
_CHUNK = 1024  # items pickled together: one pickle call per chunk, not per item


def shuffled(items, memory_items: int, rng: random.Random | None = None, tmpdir=None):
    """``items`` in random order (see the module docstring)."""
    rng = rng or random.Random()
    it = iter(items)
    head = []
    for x in it:
        head.append(x)
        if len(head) > memory_items:
            break
    else:
        rng.shuffle(head)
        yield from head
        return
    with tempfile.TemporaryDirectory(prefix="shuffle-", dir=tmpdir) as d:
        piles = [open(os.path.join(d, str(i)), "w+b") for i in range(PILES)]
        try:
            counts = _deal(head, it, piles, rng)
            del head
            for f, count in zip(piles, counts):
                f.seek(0)
                yield from shuffled(_unpickle(f), memory_items, rng, d) if count else ()
                f.close()
        finally:
            for f in piles:
                f.close()


def _deal(head, rest, piles, rng):
    pending = [[] for _ in piles]
    counts = [0] * len(piles)

    def put(x):
        i = rng.randrange(len(piles))
        pending[i].append(x)
        counts[i] += 1
        if len(pending[i]) >= _CHUNK:
            pickle.dump(pending[i], piles[i], pickle.HIGHEST_PROTOCOL)
            pending[i] = []

    for x in head:
        put(x)
    for x in rest:
        put(x)
    for f, chunk in zip(piles, pending):
        if chunk:
            pickle.dump(chunk, f, pickle.HIGHEST_PROTOCOL)
    return counts


def _unpickle(f):
    while True:
        try:
            chunk = pickle.load(f)
        except EOFError:
            return
        yield from chunk
