"""Gets from several threads while a writer puts, deletes, flushes and
compacts (issue 34 part 3), with the gets' GIL handover on (a get searches
the tables with the GIL released once a second reader thread is about:
lsm/_read.pyx, "Two reader threads"; off by default) and off: every answer must still be one the writer wrote for that key, never
older than the last write that returned before the get began, never torn,
never absent."""
import random
import sys
import threading

import pytest

import lsm
from lsm import _read
from lsm._blockcache import reclaim_stats
from conftest import tiny_options

KEYS = [b"k%05d" % i for i in range(1500)]


@pytest.fixture(params=[True, False], ids=["handover", "gil-held"])
def handover(request):
    was = _read.set_handover(request.param)
    yield request.param and _read.set_handover(request.param)
    _read.set_handover(was)


def _value(k, i):
    # Long enough to span a block's restart interval, and checkable whole.
    return k + b"=%d=" % i + bytes([i % 251]) * (i % 97)


def _run(db, write, writes, flush_every, compact_every, read, reads, seeds):
    """``write(rnd)`` ``writes`` times to ``db``, flushing and compacting every so
    many writes, beside a reader a seed calling ``read(rnd, seed, n)`` until
    the writes are done and it has read ``reads`` times, with a short switch
    interval (the GIL changes hands often); returns the threads' errors."""
    errors, stop = [], threading.Event()

    def writer():
        rnd = random.Random(len(seeds))
        try:
            for n in range(writes):
                write(rnd)
                if n % flush_every == 0:
                    db.flush()
                if n % compact_every == 0:
                    db.compact_range()
        except Exception as e:   # pragma: no cover - reported by the caller
            errors.append(e)
        finally:
            stop.set()

    def reader(seed):
        rnd = random.Random(seed)
        n = 0
        try:
            while not stop.is_set() or n < reads:
                read(rnd, seed, n)
                n += 1
        except Exception as e:   # pragma: no cover
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=writer)] + [
            threading.Thread(target=reader, args=(s,)) for s in seeds]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    return errors


def _check(k, v, floor, ceiling):
    """``v`` is the value of a write of ``k`` numbered within [floor, ceiling]."""
    assert v is not None, (k, floor)
    key, i, tail = v.split(b"=", 2)
    i = int(i)
    assert key == k and v == _value(k, i), (k, v)
    assert floor <= i <= ceiling, (k, i, floor, ceiling)


@pytest.mark.parametrize("compressed", [False, True], ids=["mapped", "cached"])
def test_gets_from_two_threads_see_every_returned_write_under_flushes_and_compactions(dbpath, compressed,
                                                                                      handover):
    """Two readers (get, and one of them multi_get now and then) beside a
    writer of numbered values that forces flushes and compactions, with the
    background compactions on and a small block cache (blocks evicted under
    the searches).  A reader notes the number of the key's last returned
    write before its get and the writer's count after it: the value read
    lies between.  Tables are replaced under the readers (versions swapped,
    files closed); no search reads freed memory, and all is let go after."""
    opts = tiny_options(max_open_files=5000, block_cache_bytes=4096, background=True,
                        l0_slowdown_trigger=8, l0_stop_trigger=16,
                        compression=compressed, compression_min_level=0)
    db = lsm.DB.open(dbpath, opts)
    done = [0] * len(KEYS)           # per key: the number of its last write that returned
    for j, k in enumerate(KEYS):
        db.put(k, _value(k, j + 1))
        done[j] = j + 1
    db.flush()
    counter = [len(KEYS)]

    def write(rnd):
        j = rnd.randrange(len(KEYS))
        i = counter[0] = counter[0] + 1
        db.put(KEYS[j], _value(KEYS[j], i))
        done[j] = i

    def read(rnd, seed, n):
        if seed == 1 and n % 50 == 0:
            js = rnd.sample(range(len(KEYS)), 10)
            floors = [done[j] for j in js]
            got = db.multi_get([KEYS[j] for j in js])
            ceiling = counter[0]
            for j, f, v in zip(js, floors, got):
                _check(KEYS[j], v, f, ceiling)
        else:
            j = rnd.randrange(len(KEYS))
            floor = done[j]
            v = db.get(KEYS[j])
            _check(KEYS[j], v, floor, counter[0])

    before = _read.handover_stats()["released"]
    assert _run(db, write, 6000, 997, 2503, read, 3000, (1, 2)) == []
    assert db.stats()["compactions"] > 0
    # With the handover on (where CPython's GIL state can be read), the
    # readers' gets did search without the GIL; the last search to leave
    # let go of every block and mapping kept for them.
    assert (_read.handover_stats()["released"] > before) == bool(handover)
    assert reclaim_stats()[:2] == ((0, 0), (0, 0))
    assert [db.get(k) for k in KEYS] == [_value(k, i) for k, i in zip(KEYS, done)]
    db.close()


def test_gets_from_two_threads_see_deletes_and_rewrites_once_returned(dbpath, handover):
    """A writer deletes and rewrites keys, flushing and compacting; two
    readers check that a key whose delete returned (and was not rewritten
    since) reads None, and one whose rewrite returned reads that value or a
    later one, while the tables change under the searches."""
    opts = tiny_options(max_open_files=5000, background=True, l0_slowdown_trigger=8,
                        l0_stop_trigger=16)
    db = lsm.DB.open(dbpath, opts)
    keys = KEYS[:600]
    state = {}                        # key -> (number, alive) of its last write that returned
    for j, k in enumerate(keys):
        db.put(k, _value(k, j + 1))
        state[k] = (j + 1, True)
    started = {k: i for k, (i, _alive) in state.items()}   # key -> its last write begun
    db.flush()
    counter = [len(keys)]

    def write(rnd):
        k = rnd.choice(keys)
        i = counter[0] = counter[0] + 1
        started[k] = i
        if rnd.random() < 0.3:
            db.delete(k)
            state[k] = (i, False)
        else:
            db.put(k, _value(k, i))
            state[k] = (i, True)

    def read(rnd, seed, n):
        k = rnd.choice(keys)
        floor, alive = state[k]
        v = db.get(k)
        if started[k] == floor:       # no write of k began meanwhile: exactly the last one
            assert v == (_value(k, floor) if alive else None), (k, v, floor, alive)
        elif v is not None:           # the last one or a later one (a delete may read None)
            _check(k, v, floor if alive else floor + 1, counter[0])

    assert _run(db, write, 4000, 701, 1999, read, 2000, (3, 4)) == []
    assert [db.get(k) for k in keys] == [_value(k, i) if alive else None
                                         for k, (i, alive) in ((k, state[k]) for k in keys)]
    db.close()
