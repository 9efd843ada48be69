"""The pytest plugin users load (regions/pytest_plugin.py): a small example
project of application code on the official SDK, tested with ots_client and
ots_server, run by pytest itself (pytester) and its outcomes checked."""
import importlib
import os
import tomllib

import pytest
# Imported before pytester's in-process runs, which forget the modules they
# import: the SDK pulls in numpy, which cannot be loaded twice in a process.
import tablestore  # noqa: F401
import regions.otsserver.cli  # noqa: F401
import regions.tablestore as emb

pytest_plugins = ["pytester"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = "regions.pytest_plugin"
# Load the plugin by -p whether or not the package is installed: blocking the
# entry point's name keeps an installed copy from registering it a second time.
LOAD = ("-p", "no:lsm_regions", "-p", PLUGIN, "-p", "no:cacheprovider")

# Application code as a user writes it, on the official SDK; ``api`` lets the
# same code build its requests with the embedded API's classes (the embedded
# OTSClient takes regions.tablestore's TableMeta, Row..., not the SDK's).
APP = '''
import tablestore

def create_stock_table(client, api=tablestore):
    client.create_table(api.TableMeta("stock", [("sku", "STRING")]), api.TableOptions(),
                        api.ReservedThroughput(api.CapacityUnit(0, 0)))

def add(client, sku, qty, api=tablestore):
    client.update_row("stock", api.Row([("sku", sku)], {"increment": [("qty", qty)]}),
                      api.Condition(api.RowExistenceExpectation.IGNORE))

def quantity(client, sku):
    _, row, _ = client.get_row("stock", [("sku", sku)], max_version=1)
    return 0 if row is None else dict((c[0], c[1]) for c in row.attribute_columns)["qty"]
'''

TESTS = '''
import regions.tablestore as embedded
import inventory

def test_embedded(ots_client):
    inventory.create_stock_table(ots_client, api=embedded)
    inventory.add(ots_client, "apple", 3, api=embedded)
    inventory.add(ots_client, "apple", 4, api=embedded)
    assert inventory.quantity(ots_client, "apple") == 7

def test_embedded_is_fresh(ots_client):
    assert ots_client.list_table() == ()

def test_over_the_wire(ots_server):
    client = ots_server.client()
    inventory.create_stock_table(client)
    inventory.add(client, "pear", 2)
    assert inventory.quantity(client, "pear") == 2
    assert ots_server.endpoint.startswith("http://127.0.0.1:")

def test_tables_were_dropped_after_the_last_test(ots_server):
    assert ots_server.client().list_table() == ()
'''

FAILING = '''
import regions.tablestore as embedded
import inventory

def test_broken_stock(ots_client):
    inventory.create_stock_table(ots_client, api=embedded)
    inventory.add(ots_client, "plum", 1, api=embedded)
    assert inventory.quantity(ots_client, "plum") == 2

ENDPOINTS = []

def test_broken_server(ots_server):
    ENDPOINTS.append(ots_server.endpoint)
    client = ots_server.client()
    inventory.create_stock_table(client)
    inventory.add(client, "fig", 5)
    assert inventory.quantity(client, "fig") == 6

def test_server_after_a_failure(ots_server):
    assert ots_server.client().list_table() == ()
    assert ots_server.endpoint == ENDPOINTS[0]      # restarted where it was
'''


@pytest.fixture
def project(pytester):
    pytester.makepyfile(inventory=APP, test_inventory=TESTS)
    return pytester


def kept_paths(result):
    """nodeid -> path of the lines under the plugin's 'kept' heading."""
    lines = result.outlines
    heads = [i for i, line in enumerate(lines) if "data of failed tests kept" in line]
    if not heads:
        return {}
    out = {}
    for line in lines[heads[0] + 1:]:
        if not line.startswith("test_") or ": " not in line:
            break
        nodeid, path = line.rsplit(": ", 1)
        out[nodeid] = path
    return out


def test_fixtures_serve_application_code_through_the_official_sdk(project):
    result = project.runpytest(*LOAD)
    result.assert_outcomes(passed=4)
    assert kept_paths(result) == {}


def test_keep_data_keeps_the_directory_of_a_failed_test_only(project):
    project.makepyfile(test_failing=FAILING)
    result = project.runpytest(*LOAD, "--keep-data")
    result.assert_outcomes(passed=5, failed=2)
    kept = kept_paths(result)
    assert sorted(kept) == ["test_failing.py::test_broken_server", "test_failing.py::test_broken_stock"]
    for nodeid, table_rows in (("test_failing.py::test_broken_stock", ("plum", 1)),
                               ("test_failing.py::test_broken_server", ("fig", 5))):
        with emb.OTSClient(kept[nodeid]) as client:       # the failed test's data, reopened
            assert client.list_table() == ("stock",)
            _, row, _ = client.get_row("stock", [("sku", table_rows[0])], max_version=1)
            assert row.attribute_columns[0][:2] == ("qty", table_rows[1])
    # the passing tests' directories are gone: only the kept ones remain
    base = os.path.dirname(kept["test_failing.py::test_broken_stock"])
    assert sorted(os.listdir(base)) == sorted(os.path.basename(p) for p in kept.values())


def test_the_marker_keeps_one_test_and_without_it_nothing_is_kept(project):
    project.makepyfile(test_marked='''
import pytest
import regions.tablestore as embedded
import inventory

@pytest.mark.keep_data
def test_marked(ots_client):
    inventory.create_stock_table(ots_client, api=embedded)
    assert False

def test_unmarked(ots_client):
    assert False
''')
    result = project.runpytest(*LOAD, "test_marked.py")
    result.assert_outcomes(failed=2)
    kept = kept_paths(result)
    assert list(kept) == ["test_marked.py::test_marked"]
    assert "META" in os.listdir(kept["test_marked.py::test_marked"])


def test_the_declared_entry_point_loads_the_plugin_without_p(project, tmp_path_factory, monkeypatch):
    """pyproject.toml declares pytest11 = regions.pytest_plugin, and an
    installation that carries that declaration gets the fixtures with no -p."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        declared = tomllib.load(f)["project"]["entry-points"]["pytest11"]
    assert declared == {"lsm_regions": PLUGIN}
    plugin = importlib.import_module(declared["lsm_regions"])
    assert callable(plugin.ots_client) and callable(plugin.ots_server)
    site = tmp_path_factory.mktemp("site")
    dist = site / "lsm_regions_under_test-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lsm-regions-under-test\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    monkeypatch.syspath_prepend(str(site))
    result = project.runpytest("-p", "no:cacheprovider", "-k", "embedded")
    result.assert_outcomes(passed=2)


def test_fixture_names_do_not_collide_with_the_projects_own():
    here = os.path.dirname(os.path.abspath(__file__))
    for name in os.listdir(here):
        if name.endswith(".py") and name != os.path.basename(__file__):
            with open(os.path.join(here, name)) as f:
                text = f.read()
            assert "def ots_client(" not in text and "def ots_server(" not in text, name
