"""The runner of the vendor's test suite (regions.otsserver.vendor_suite), on a
tiny fake "SDK source": CI has no network to fetch the real one, whose result
is recorded in docs/otsserver.md."""
import textwrap

from regions.otsserver import vendor_suite

BASE = '''
import os, time, unittest
from tablestore import OTSClient, TableMeta, TableOptions, ReservedThroughput, CapacityUnit

class APITestBase(unittest.TestCase):
    def setUp(self):
        self.client_test = OTSClient(os.environ["OTS_TEST_ENDPOINT"],
                                     os.environ["OTS_TEST_ACCESS_KEY_ID"],
                                     os.environ["OTS_TEST_ACCESS_KEY_SECRET"],
                                     os.environ["OTS_TEST_INSTANCE"])
        time.sleep(30)          # a cloud wait: capped by the runner

    def wait_for_partition_load(self, table_name):
        time.sleep(60)          # patched out by the runner
'''

TESTS = '''
import tablestore
from tablestore import Row, TableMeta, TableOptions, ReservedThroughput, CapacityUnit
from tests.lib.api_test_base import APITestBase

class RowOpTest(APITestBase):
    def test_put_and_get(self):
        self.client_test.create_table(TableMeta("t", [("pk", "INTEGER")]), TableOptions(),
                                      ReservedThroughput(CapacityUnit(0, 0)))
        self.wait_for_partition_load("t")
        self.client_test.put_row("t", Row([("pk", 1)], [("v", "x")]))
        assert self.client_test.get_row("t", [("pk", 1)])[1].attribute_columns[0][1] == "x"

    def test_fails_on_purpose(self):
        assert 1 == 2, "deliberate failure"

    def test_installed_sdk(self):
        assert "site-packages" in tablestore.__file__, tablestore.__file__

    def test_create_search_index(self):
        raise AssertionError("excluded: never runs")
'''

EXAMPLE = '''
import os
from tablestore import OTSClient
c = OTSClient(os.environ["OTS_TEST_ENDPOINT"], os.environ["OTS_TEST_ACCESS_KEY_ID"],
              os.environ["OTS_TEST_ACCESS_KEY_SECRET"], os.environ["OTS_TEST_INSTANCE"])
print(c.list_table())
'''


def _fake_source(root):
    (root / "tests" / "lib").mkdir(parents=True)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "lib" / "__init__.py").write_text("")
    (root / "tests" / "lib" / "api_test_base.py").write_text(textwrap.dedent(BASE))
    (root / "tests" / "row_op_test.py").write_text(textwrap.dedent(TESTS))
    (root / "examples").mkdir()
    (root / "examples" / "put_row.py").write_text(textwrap.dedent(EXAMPLE))
    # The repository's own package would shadow the installed SDK: never copied.
    (root / "tablestore").mkdir()
    (root / "tablestore" / "__init__.py").write_text("raise ImportError('shadowed')\n")
    return root


def test_runner_reports_passes_failures_and_exclusions(tmp_path, capsys, monkeypatch):
    src = _fake_source(tmp_path / "sdk")
    monkeypatch.setattr(vendor_suite, "EXCLUDED", {"create_search_index": "left out on purpose"})
    status = vendor_suite.main([str(src), "--module", "row_op_test", "--example", "put_row"])
    out = capsys.readouterr().out
    assert status == 1
    assert "row_op_test" in out and "2 passed" in out and "1 failed" in out
    assert "1 excluded" in out
    assert "FAILED RowOpTest.test_fails_on_purpose: AssertionError: deliberate failure" in out
    assert "examples/put_row.py                      passed" in out
    assert "vendor suite: 1 failed" in out


def test_runner_exit_status_is_zero_when_all_pass(tmp_path, capsys):
    src = _fake_source(tmp_path / "sdk")
    status = vendor_suite.main([str(src), "--module", "row_op_test", "-k", "test_put_and_get"])
    out = capsys.readouterr().out
    assert status == 0 and "1 passed" in out and "vendor suite: all passed" in out


def test_naming_only_an_example_runs_no_module(tmp_path, capsys):
    src = _fake_source(tmp_path / "sdk")
    status = vendor_suite.main([str(src), "--example", "put_row"])
    out = capsys.readouterr().out
    assert status == 0, out     # row_op_test, which fails on purpose, did not run
    assert "row_op_test" not in out
    assert "examples/put_row.py                      passed" in out


SEARCH_TESTS = '''
import time
import tablestore as ts
from tests.lib.api_test_base import APITestBase

class SearchIndexTest(APITestBase):
    def test_the_shortened_sleep_still_leaves_the_index_in_sync(self):
        c = self.client_test
        c.create_table(ts.TableMeta("s", [("pk", "INTEGER")]), ts.TableOptions(),
                       ts.ReservedThroughput(ts.CapacityUnit(0, 0)))
        c.create_search_index("s", "idx", ts.SearchIndexMeta([
            ts.FieldSchema("v", ts.FieldType.LONG)]))
        for i in range(300):
            c.put_row("s", ts.Row([("pk", i)], [("v", i)]))
        started = time.monotonic()
        time.sleep(100)                 # the cloud's index build: shortened by the runner
        assert time.monotonic() - started < 60
        found = c.search("s", "idx", ts.SearchQuery(ts.MatchAllQuery(), limit=0,
                                                   get_total_count=True))
        assert found.total_count == 300, found.total_count
'''


def test_a_sleep_waits_for_the_servers_search_indexes_then_returns(tmp_path, capsys):
    src = _fake_source(tmp_path / "sdk")
    (src / "tests" / "search_index_test.py").write_text(textwrap.dedent(SEARCH_TESTS))
    status = vendor_suite.main([str(src), "--module", "search_index_test"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "search_index_test" in out and "1 passed" in out
