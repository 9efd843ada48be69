"""pytest fixtures for testing applications that use Tablestore, on this project.

Installed with the package, this plugin loads itself (the ``pytest11`` entry
point ``lsm_regions`` in pyproject.toml); from a source tree, load it with
``-p regions.pytest_plugin``.  docs/workflow.md has an example.

Fixtures
--------
``ots_client``
    An embedded ``regions.tablestore.OTSClient`` in memory, fresh for each
    test and closed after it: the Tablestore API without a server.
``ots_server``
    A ``regions-server`` on a free loopback port, started once for the
    session in a thread of the test process (in memory), whose tables are
    dropped after each test.  Attributes: ``endpoint``, ``access_key_id``,
    ``access_key_secret``, ``instance_name``, ``data_dir`` (None in memory),
    ``embedded`` (the ``regions.tablestore.OTSClient`` behind it) and
    ``client(**kw)``, an official-SDK ``tablestore.OTSClient`` pointed at
    it (keywords go to the SDK; ``retry_policy`` defaults to
    ``NoRetryPolicy()`` so that a failing call fails at once).  Needs the SDK
    (the ``server`` extra).

Keeping the data of a failed test
---------------------------------
``--keep-data`` (every test) or the marker ``@pytest.mark.keep_data`` (one
test) puts the fixtures' data on disk in pytest's temporary directory
(``tmp_path_factory``: the last three runs are kept) instead of in memory.
A test that passes has its directory removed; a test that fails keeps it,
with the store closed cleanly, and the run ends with its path (open it with
``OTSClient(path)`` or ``regions-server --data PATH``).  For ``ots_server``
the server then restarts on a fresh directory at the same endpoint; it runs
on disk for the whole session when ``--keep-data`` is given or any collected
test has the marker.
"""
import shutil

import pytest

__all__ = ["ots_client", "ots_server", "OTSServerHandle"]

_MARKER = "keep_data"
_KEPT = pytest.StashKey()       # config -> [(nodeid, path)] of kept data directories
_REPORTS = pytest.StashKey()    # item -> {phase: TestReport}


def pytest_addoption(parser):
    parser.getgroup("lsm-regions").addoption(
        "--keep-data", action="store_true", default=False,
        help="keep the data directory of a failed test that uses ots_client or ots_server "
             "(its path is printed at the end)")


def pytest_configure(config):
    config.addinivalue_line("markers", _MARKER + ": keep this test's ots_client/ots_server data "
                            "directory if it fails (as --keep-data does for every test)")
    config.stash[_KEPT] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


def pytest_terminal_summary(terminalreporter, config):
    kept = config.stash.get(_KEPT, [])
    if kept:
        terminalreporter.write_sep("-", "lsm-regions: data of failed tests kept")
        for nodeid, path in kept:
            terminalreporter.write_line(f"{nodeid}: {path}")


def _failed(item) -> bool:
    return any(r.failed for r in item.stash.get(_REPORTS, {}).values())


def _keeps(item) -> bool:
    return item.config.getoption("keep_data") or item.get_closest_marker(_MARKER) is not None


def _settle(request, path) -> bool:
    """After a test: keep ``path`` if the test failed (and say so at the end),
    else remove it.  Returns whether it was kept."""
    if _failed(request.node):
        request.config.stash[_KEPT].append((request.node.nodeid, str(path)))
        return True
    shutil.rmtree(path, ignore_errors=True)
    return False


@pytest.fixture
def ots_client(request, tmp_path_factory):
    """An embedded ``regions.tablestore.OTSClient`` in memory, fresh for this test."""
    from regions.tablestore import OTSClient
    from regions.tablestore.client import MEMORY
    path = tmp_path_factory.mktemp("ots_client") if _keeps(request.node) else None
    client = OTSClient(MEMORY if path is None else str(path))
    yield client
    client.close()
    if path is not None:
        _settle(request, path)


class OTSServerHandle:
    """A running ``regions-server`` (see the module doc); ``ots_server`` is one."""

    def __init__(self, tmp_path_factory, on_disk: bool,
                 access_key_id="test_access_key_id", access_key_secret="test_access_key_secret",
                 instance_name="test"):
        self.access_key_id = access_key_id
        self.access_key_secret = access_key_secret
        self.instance_name = instance_name
        self._tmp = tmp_path_factory
        self._on_disk = on_disk
        self._server = None
        self.data_dir = None
        self._start(port=0)

    def _start(self, port: int) -> None:
        from regions.otsserver.cli import make_server
        self.data_dir = self._tmp.mktemp("ots_server") if self._on_disk else None
        self._server = make_server(None if self.data_dir is None else str(self.data_dir),
                                   "127.0.0.1", port, self.instance_name, self.access_key_id,
                                   self.access_key_secret, console=False).start()

    @property
    def endpoint(self) -> str:
        return self._server.endpoint

    def client(self, **kw):
        """An official-SDK ``tablestore.OTSClient`` pointed at this server."""
        import tablestore
        kw.setdefault("retry_policy", tablestore.NoRetryPolicy())
        return tablestore.OTSClient(self.endpoint, self.access_key_id, self.access_key_secret,
                                    self.instance_name, **kw)

    @property
    def embedded(self):
        """The ``regions.tablestore.OTSClient`` the server serves (same process):
        for tests that look behind the wire."""
        return self._server.service.client

    def drop_tables(self) -> None:
        """Delete every table (the fixture does it after each test)."""
        for name in self.embedded.list_table():
            self.embedded.delete_table(name)

    def restart(self) -> None:
        """Stop (closing the store), then serve a fresh store at the same
        endpoint; on disk, the old data directory stays where it was."""
        port = self._server.server_address[1]
        self.stop()
        self._start(port)

    def stop(self) -> None:
        self._server.stop()

    def __repr__(self):
        where = "in memory" if self.data_dir is None else f"data in {self.data_dir}"
        return f"<ots_server {self.endpoint} instance {self.instance_name!r}, {where}>"


@pytest.fixture(scope="session")
def _ots_server_session(request, tmp_path_factory):
    on_disk = request.config.getoption("keep_data") or any(
        item.get_closest_marker(_MARKER) is not None for item in request.session.items)
    handle = OTSServerHandle(tmp_path_factory, on_disk)
    yield handle
    handle.stop()
    if handle.data_dir is not None:     # the last one; kept ones are earlier directories
        shutil.rmtree(handle.data_dir, ignore_errors=True)


@pytest.fixture
def ots_server(request, _ots_server_session):
    """The session's ``regions-server`` (an ``OTSServerHandle``), with no tables at the start of the test."""
    handle = _ots_server_session
    yield handle
    if handle.data_dir is not None and _keeps(request.node) and _failed(request.node):
        _settle(request, handle.data_dir)
        handle.restart()
    else:
        handle.drop_tables()
