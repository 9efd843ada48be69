"""One file-descriptor budget for the whole server, from RLIMIT_NOFILE
(regions/descriptors.py), and one table cache shared by its regions."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import regions
from lsm.cache import SharedTables, TableCache
from regions.descriptors import PER_STORE, DescriptorBudget
from regions.errors import DescriptorBudgetError


def test_the_budget_is_the_limit_less_the_reserve_in_stores():
    b = DescriptorBudget(1024)
    assert (b.reserve, b.stores) == (256, (1024 - 256) // PER_STORE)
    assert DescriptorBudget(1 << 20).reserve == 4096 and DescriptorBudget(200).reserve == 64
    b.check(100, b.stores - 100, "x")
    with pytest.raises(DescriptorBudgetError, match=r"creating t needs 200 more region stores .* "
                                                    r"beside the 100 open; the budget is 192 stores: "
                                                    r"RLIMIT_NOFILE 1024 less 256"):
        b.check(100, 200, "creating t")
    DescriptorBudget(None).check(10 ** 6, 10 ** 6, "no limit known")


def _child(code, soft, hard):
    """Run ``code`` in a child whose RLIMIT_NOFILE is (soft, hard); its last
    stdout line, parsed as JSON."""
    prog = textwrap.dedent(f"""
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_NOFILE, ({soft}, {hard}))
        import regions
        """) + textwrap.dedent(code)
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_presplit_past_the_budget_is_refused_before_any_file_is_made(tmp_path):
    got = _child(f"""
        path = {str(tmp_path)!r}
        s = regions.RegionServer.open(path)
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        try:
            s.create_table("big", split_keys=[b"%03d" % i for i in range(1, 200)])
            refused = None
        except regions.errors.DescriptorBudgetError as e:
            refused = str(e)
        import os
        dirs = len(os.listdir(path + "/regions"))
        s.create_table("small", split_keys=[b"%03d" % i for i in range(1, 20)])
        for i in range(200):
            s.put("small", b"%03d" % (i % 20), b"v")
        n = s._descriptors.stores - len(s.regions("small"))
        s.create_table("rest", split_keys=[b"%04d" % i for i in range(1, n)])
        try:
            s.split_region("small", s.regions("small")[0].region_id, b"000x")
            split = None
        except regions.errors.DescriptorBudgetError as e:
            split = str(e)
        print(json.dumps([soft, refused, dirs, split, len(s.regions("small"))]))
        s.close()
        """, 256, 512)
    soft, refused, dirs, split, small = got
    assert soft == 512                              # raised to the hard limit at start
    assert refused.startswith("creating table 'big' with 200 regions needs 200 more region stores")
    assert "RLIMIT_NOFILE 512 less 128" in refused and "ulimit -n" in refused
    assert dirs == 0                                # nothing made
    assert split.startswith("splitting region") and small == 20


def test_regions_share_one_table_cache_bounded_across_them(tmp_path):
    opts = regions.ServerOptions(max_open_tables=5, background_workers=0, split_policy="disabled")
    with regions.RegionServer.open(str(tmp_path), opts) as s:
        s.create_table("t", split_keys=[b"%02d" % i for i in range(1, 8)])
        for rnd in range(3):
            for i in range(8):
                s.put("t", b"%02d-%d" % (i, rnd), b"v%d" % rnd)
            s.flush_all()
        for _ in range(2):
            assert len(list(s.scan("t"))) == 24
        assert len(s._shared_tables) <= 5
        assert sum(len(r.db._tables) for r in s.table_layout("t")[1]) <= 5


def test_a_shared_budget_forgets_the_least_recently_used_table_of_any_cache():
    shared = SharedTables(3)
    opened = []
    caches = [TableCache(lambda k, c=c: opened.append((c, k)) or object(), 100, shared) for c in "ab"]
    a, b = caches
    a.get(1), a.get(2), b.get(1)
    a.get(1)                        # a1 is now the most recent
    b.get(2)                        # over 3: a2 goes
    assert (len(a), len(b), len(shared)) == (1, 2, 3)
    a.get(2)
    assert opened[-1] == ("a", 2)   # reopened
    b.close()
    assert len(shared) == 2


def test_a_rolled_back_splits_retries_wait_for_the_resource_within_their_bound():
    """procedure._until_done: a step failing for a resource that comes back
    (ENOSPC here) is retried until it succeeds, within its deadline when one
    is given; a failure that is not retryable, or the server closing, ends it."""
    import errno
    from lsm.errors import StorageError
    from regions.procedure import _until_done
    calls = []

    def flaky(until):
        def fn():
            calls.append(1)
            if len(calls) < until:
                raise StorageError(errno.ENOSPC, "append failed: No space left on device", "x")
            return "done"
        return fn
    assert _until_done(flaky(6), "step", lambda: False, first=0.001, most=0.002) == "done"
    assert len(calls) == 6
    calls.clear()
    with pytest.raises(StorageError):                      # a deadline, when given
        _until_done(flaky(10_000), "step", lambda: False, seconds=0.02, first=0.001, most=0.002)
    calls.clear()
    with pytest.raises(StorageError):                      # the server closing
        _until_done(flaky(10_000), "step", lambda: len(calls) > 3, first=0.001, most=0.002)
    assert len(calls) == 4
    with pytest.raises(ValueError):                        # not a resource: at once

        def broken():
            raise ValueError("a bug")
        _until_done(broken, "step", lambda: False)
