"""One conformance check for every internal iterator kind.

``check_iterator(make_iter, model_items)`` drives a fresh iterator from
``make_iter()`` forward, backward, through seeks and seek_for_prevs at every
model key and between keys, and through direction changes, comparing each
position with ``model_items``: the sorted list of ``(ikey, value)`` the
iterator must yield (internal-key order, lsm/dbformat.py).  Used for block,
table, bounded-view, memtable, merging and DB iterators.
"""
import bisect
import random

from lsm.dbformat import internal_sort_key, make_internal_key, parse_internal_key, MAX_SEQ

__all__ = ["check_iterator", "probe_keys"]


def drain(it):
    """Every (key, value) of iterator ``it`` from its first entry."""
    it.seek_to_first()
    got = []
    while it.valid():
        got.append((it.key(), it.value()))
        it.next()
    return got


def _pos(it):
    return (it.key(), it.value()) if it.valid() else None


def probe_keys(model_items, rng):
    """Seek targets: every model key, its neighbours in tag order, keys
    between and beyond the user keys (including prefixes and extensions)."""
    probes = []
    users = sorted({parse_internal_key(k)[0] for k, _ in model_items})
    for k, _ in model_items:
        uk, seq, kind = parse_internal_key(k)
        probes.append(k)
        if seq < MAX_SEQ:
            probes.append(make_internal_key(uk, seq + 1, kind))
        if seq > 0:
            probes.append(make_internal_key(uk, seq - 1, kind))
    for uk in users:
        probes.append(make_internal_key(uk, MAX_SEQ, 1))
        probes.append(make_internal_key(uk, 0, 0))
        probes.append(make_internal_key(uk + b"\x00", MAX_SEQ, 1))
        if uk:
            probes.append(make_internal_key(uk[:-1], 5, 1))
    probes.append(make_internal_key(b"", MAX_SEQ, 1))
    probes.append(make_internal_key(b"\xff" * 12, 0, 0))
    for _ in range(20):
        probes.append(make_internal_key(rng.randbytes(rng.randint(0, 6)), rng.randint(0, 100), 1))
    return probes


def check_iterator(make_iter, model_items, *, seed=0, max_probes=400):
    """Assert that iterators from ``make_iter()`` behave like ``model_items``."""
    rng = random.Random(seed)
    model = list(model_items)
    sort_keys = [internal_sort_key(k) for k, _ in model]
    assert sort_keys == sorted(sort_keys), "the model must be sorted"
    n = len(model)

    it = make_iter()
    assert not it.valid(), "a new iterator must not be valid before a seek"

    # Forward.
    it.seek_to_first()
    got = []
    while it.valid():
        got.append((it.key(), it.value()))
        it.next()
    assert got == model, "forward scan differs from the model"

    # Backward.
    it.seek_to_last()
    got = []
    while it.valid():
        got.append((it.key(), it.value()))
        it.prev()
    assert got == model[::-1], "backward scan differs from the model"

    probes = probe_keys(model, rng)
    if len(probes) > max_probes:
        probes = rng.sample(probes, max_probes)
    check_seeks_and_walks(it, model, sort_keys, probes, internal_sort_key, rng,
                          walks=min(60, 4 * n + 4), max_steps=12)


def check_seeks_and_walks(it, want, sort_keys, probes, sort_key, rng, *, walks, max_steps):
    """``seek`` and ``seek_for_prev`` at every probe, then ``walks`` random
    walks (seek, then next/prev at random, up to ``max_steps``), each position
    checked against ``want`` (the expected ``(key, value)`` in order).

    ``sort_keys[i]`` orders ``want[i]`` and ``sort_key(probe)`` orders a probe
    the same way: internal-key order for internal iterators, plain bytes for
    the DB iterator.  Works for any iterator with seek/seek_for_prev/next/
    prev/valid/key/value.
    """
    n = len(want)
    for target in probes:
        tk = sort_key(target)
        i = bisect.bisect_left(sort_keys, tk)          # first >= target
        it.seek(target)
        assert _pos(it) == (want[i] if i < n else None), f"seek({target!r})"
        j = bisect.bisect_right(sort_keys, tk) - 1      # last <= target
        it.seek_for_prev(target)
        assert _pos(it) == (want[j] if j >= 0 else None), f"seek_for_prev({target!r})"
    for _ in range(walks if n else 0):
        target = rng.choice(probes)
        i = bisect.bisect_left(sort_keys, sort_key(target))
        it.seek(target)
        for _ in range(rng.randint(1, max_steps)):
            if not 0 <= i < n:
                assert not it.valid()
                break
            assert _pos(it) == want[i]
            if rng.random() < 0.5:
                it.next()
                i += 1
            else:
                it.prev()
                i -= 1
            assert _pos(it) == (want[i] if 0 <= i < n else None), f"walk from {target!r}"
