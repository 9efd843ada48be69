"""Block cache and table cache: LRU by charge / by count, thread safety."""
import threading

import pytest

from lsm.cache import BlockCache, TableCache, new_owner_id
from lsm.errors import ClosedError


def test_block_cache_evicts_least_recently_used_by_charge():
    c = BlockCache(100)
    c.insert((1, 0), "a", 40)
    c.insert((1, 1), "b", 40)
    assert c.get((1, 0)) == "a"          # now (1, 1) is the LRU entry
    c.insert((2, 0), "c", 40)
    assert c.get((1, 1)) is None
    assert c.get((1, 0)) == "a" and c.get((2, 0)) == "c"
    assert c.usage == 80
    s = c.stats()
    assert (s["hits"], s["misses"], s["entries"]) == (3, 1, 2)


def test_block_cache_replace_oversize_and_zero_capacity():
    c = BlockCache(100)
    c.insert((1, 0), "a", 30)
    c.insert((1, 0), "b", 50)
    assert c.get((1, 0)) == "b" and c.usage == 50
    c.insert((1, 1), "huge", 101)        # bigger than the cache: not kept, nothing evicted
    assert c.get((1, 1)) is None and c.get((1, 0)) == "b"
    z = BlockCache(0)
    z.insert((1, 0), "a", 1)
    assert z.get((1, 0)) is None and z.usage == 0
    with pytest.raises(ValueError):
        BlockCache(-1)
    with pytest.raises(ValueError):
        c.insert((1, 2), "x", -5)


def test_block_cache_erase_prefix_drops_one_owner():
    c = BlockCache(1000)
    a, b = new_owner_id(), new_owner_id()
    assert a != b
    for i in range(5):
        c.insert((a, i), i, 10)
        c.insert((b, i), i, 10)
    assert c.erase_prefix(a) == 5
    assert all(c.get((a, i)) is None for i in range(5))
    assert all(c.get((b, i)) == i for i in range(5))
    assert c.usage == 50 and c.erase_prefix(a) == 0
    c.erase((b, 0))
    assert c.usage == 40 and len(c) == 4


def test_block_cache_is_consistent_under_threads():
    c = BlockCache(5000)

    def work(t):
        for i in range(3000):
            k = (t % 3, i % 400)
            if c.get(k) is None:
                c.insert(k, i, 7 + i % 13)
            if i % 500 == 0:
                c.erase_prefix(t % 3)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert c.usage <= 5000
    a = c.audit()
    assert a["usage"] == c.usage and a["owner_keys"] == a["ring_live"] == len(c)
    assert a["ring_dead"] == a["dead_count"]


def test_block_cache_gives_a_referenced_entry_a_second_chance_and_sheds_dead_shells():
    c = BlockCache(100)
    for i in range(4):
        c.insert((1, i), i, 25)              # full
    assert c.get((1, 0)) == 0 and c.get((1, 2)) == 2
    c.insert((2, 0), "x", 50)                # evicts the unreferenced oldest: (1, 1), (1, 3)
    assert [c.get((1, i)) for i in range(4)] == [0, None, 2, None]
    assert c.usage == 100 and len(c) == 3
    c.insert((2, 1), "y", 25)                # (2, 0), not read since, goes (as in LRU)
    assert c.get((2, 0)) is None and c.get((2, 1)) == "y" and c.usage == 75
    assert c.get((1, 0)) == 0 and c.get((1, 2)) == 2
    for i in range(25):                      # erased entries leave shells, shed in bulk
        c.insert((3, i), i, 1)
    assert c.usage == 100 and c.erase_prefix(3) == 25 and c.erase_prefix(2) == 1
    a = c.audit()
    assert a["ring_dead"] <= a["ring_live"] + 1 and a["usage"] == c.usage
    assert a["ring_dead"] == a["dead_count"] and a["owner_keys"] == len(c)


class FakeTable:
    def __init__(self, path):
        self.path = path
        self.closed = False

    def close(self):
        assert not self.closed, "closed twice"
        self.closed = True


def test_table_cache_bounds_open_tables_and_forgets_the_lru():
    opened = []

    def open_fn(path):
        opened.append(FakeTable(path))
        return opened[-1]

    tc = TableCache(open_fn, 2)
    a = tc.get("a")
    assert tc.get("a") is a and len(opened) == 1
    assert tc.peek("a") is a and tc.peek("b") is None
    b = tc.get("b")
    tc.get("a")                          # b is now least recently used
    tc.get("c")
    assert tc.peek("b") is None and tc.peek("a") is a and len(tc) == 2
    assert not b.closed                  # forgotten, not closed: a reader may hold it
    assert tc.get("b") is not b          # reopened; a is now evicted
    assert tc.peek("a") is None and not a.closed
    tc.evict("c")
    assert tc.peek("c") is None and len(tc) == 1
    tc.evict("missing")                  # no-op
    tc.close()
    assert len(tc) == 0 and not any(t.closed for t in opened)
    with pytest.raises(ClosedError):
        tc.get("a")


def test_table_cache_passes_extra_arguments_to_open_fn():
    seen = []
    tc = TableCache(lambda key, meta: seen.append((key, meta)) or FakeTable(key), 2)
    t = tc.get(7, "meta of 7")
    assert seen == [(7, "meta of 7")] and tc.get(7, "ignored on a hit") is t and len(seen) == 1


def test_table_cache_rejects_bad_arguments():
    with pytest.raises(TypeError):
        TableCache("not callable", 3)
    with pytest.raises(ValueError):
        TableCache(FakeTable, 0)


def test_table_cache_under_threads_keeps_at_most_capacity():
    opened = []
    lock = threading.Lock()

    def open_fn(path):
        t = FakeTable(path)
        with lock:
            opened.append(t)
        return t

    tc = TableCache(open_fn, 4)

    def work(n):
        for i in range(500):
            t = tc.get(f"p{(i * 7 + n) % 6}")
            assert not t.closed

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(tc) <= 4
    # Only the losers of an open race are closed, never a cached table.
    assert not any(tc.peek(f"p{i}") is not None and tc.peek(f"p{i}").closed for i in range(6))
    tc.close()


def test_block_cache_keys_past_the_packed_range_still_work_and_never_collide():
    """(owner, offset) pairs are packed into one int inside when they fit
    (owner < 2**23, offset < 2**40); the others stay pairs.  Neither kind
    may alias the other, and erase_prefix finds both."""
    c = BlockCache(1 << 20)
    big_owner, big_off = 1 << 23, 1 << 40
    pairs = [(1, 0), (1, big_off), (big_owner, 0), (big_owner, big_off), (0, (1 << 40) - 1),
             ((1 << 23) - 1, 5), (2, 1 << 17)]
    for i, k in enumerate(pairs):
        c.insert(k, i, 10)
    assert [c.get(k) for k in pairs] == list(range(len(pairs)))
    # what the packed int of (1, 0) would alias if packing ignored the limits
    assert c.get((0, 1 << 40)) is None and c.get((1 << 22, 0)) is None
    assert c.erase_prefix(1) == 2 and c.erase_prefix(big_owner) == 2
    assert [c.get(k) for k in pairs] == [None, None, None, None, 4, 5, 6]
    c.erase((2, 1 << 17))
    assert c.get((2, 1 << 17)) is None and len(c) == 2
    assert c.audit()["owner_keys"] == 2 and c.usage == 20
