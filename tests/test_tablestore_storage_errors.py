"""A region whose disk filled up answers writes with the service's closest
error, the cause in its message, embedded and over the wire; reads go on;
writes resume by themselves once space is back, and an SDK's default retry
policy rides through the refusal as it does against the service."""
import errno
import logging
import threading
import time

import pytest

import regions
from lsm.errors import ClosedError, CorruptionError, ReadOnlyError, StorageError
from lsm.faultfs import FaultInjectionFS
from lsm.fs import OSFileSystem
from regions.otsserver.auth import Authenticator
from regions.otsserver.http import OTSServer
from regions.otsserver.protocol import TablestoreService
from regions.tablestore import OTSClient, errors as ots_errors
import regions.tablestore as emb

ts = pytest.importorskip("tablestore")
logging.getLogger("tablestore").setLevel(logging.CRITICAL)

KEY_ID, SECRET, INSTANCE = "ak", "sk", "inst"
ENOSPC = StorageError(errno.ENOSPC, "append failed: No space left on device", "x")


def test_storage_failures_map_to_the_services_closest_errors():
    degraded = ots_errors.storage_error(ReadOnlyError("refused", cause=ENOSPC, retryable=True))
    assert (degraded.http_status, degraded.code) == (503, "OTSPartitionUnavailable")
    assert degraded.message.startswith("The partition is not available: No space left on device")
    raw = ots_errors.storage_error(ENOSPC)                 # the write that found the disk full
    assert (raw.code, raw.message) == (degraded.code, degraded.message)
    emfile = ots_errors.storage_error(StorageError(errno.EMFILE, "open for append failed: x", "p"))
    assert "Too many open files" in emfile.message and emfile.http_status == 503
    stopped = ots_errors.storage_error(StorageError(errno.EACCES, "open for append failed: x", "p"))
    assert (stopped.http_status, stopped.code) == (500, "OTSInternalServerError")
    assert "Permission denied" in stopped.message
    bad = ots_errors.storage_error(ReadOnlyError("r", cause=CorruptionError("crc"), retryable=False))
    assert bad.http_status == 500 and "corrupt" in bad.message
    assert ots_errors.storage_error(ValueError("x")) is None
    assert ots_errors.storage_error(ClosedError("DB is closed")) is None


@pytest.fixture(params=["embedded", "wire"])
def api(request, tmp_path):
    """(client, lib, fs): the embedded client or the SDK through the wire
    (no retries), over a store on a disk whose capacity the test sets."""
    fs = FaultInjectionFS(OSFileSystem())
    client = OTSClient(str(tmp_path / "data"), server_options=regions.ServerOptions(
        fs=fs, lsm_options=regions.ServerOptions().lsm_options, memtable_bytes=1 << 20))
    meta = emb.TableMeta("t", [("k", "INTEGER")])
    client.create_table(meta, emb.TableOptions(), emb.ReservedThroughput(emb.CapacityUnit(0, 0)))
    if request.param == "embedded":
        yield client, emb, fs, None
        client.close()
        return
    srv = OTSServer("127.0.0.1", 0, TablestoreService(client),
                    Authenticator(INSTANCE, {KEY_ID: SECRET})).start()
    yield ts.OTSClient(srv.endpoint, KEY_ID, SECRET, INSTANCE, retry_policy=ts.NoRetryPolicy()), ts, fs, srv
    srv.stop()


def _put(c, lib, k):
    c.put_row("t", lib.Row([("k", k)], [("v", "x" * 100)]))


def test_a_full_disk_answers_writes_503_with_the_cause_serves_reads_and_resumes(api):
    c, lib, fs, srv = api
    for k in range(20):
        _put(c, lib, k)
    fs.capacity = fs.used() + 500
    refused = []
    acked = list(range(20))
    for k in range(20, 60):
        try:
            _put(c, lib, k)
            acked.append(k)
        except lib.OTSServiceError as e:
            refused.append(e)
    assert refused and len(acked) < 60
    e = refused[-1]
    assert (e.get_http_status(), e.get_error_code()) == (503, "OTSPartitionUnavailable")
    assert "No space left on device" in e.get_error_message()
    _, row, _ = c.get_row("t", [("k", 3)])
    assert row.attribute_columns[0][1] == "x" * 100               # reads go on
    fs.capacity = None
    deadline = time.monotonic() + 5
    while True:
        try:
            _put(c, lib, 1000)
            break
        except lib.OTSServiceError:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    _, _, rows, _ = c.get_range("t", "FORWARD", [("k", lib.INF_MIN)], [("k", lib.INF_MAX)])
    keys = [r.primary_key[0][1] for r in rows]
    assert keys == sorted(set(keys)) and set(acked) | {1000} <= set(keys)


def test_the_sdks_default_retry_policy_rides_through_a_disk_that_empties(tmp_path):
    fs = FaultInjectionFS(OSFileSystem())
    client = OTSClient(str(tmp_path / "data"), server_options=regions.ServerOptions(fs=fs))
    client.create_table(emb.TableMeta("t", [("k", "INTEGER")]), emb.TableOptions(),
                        emb.ReservedThroughput(emb.CapacityUnit(0, 0)))
    srv = OTSServer("127.0.0.1", 0, TablestoreService(client),
                    Authenticator(INSTANCE, {KEY_ID: SECRET})).start()
    try:
        sdk = ts.OTSClient(srv.endpoint, KEY_ID, SECRET, INSTANCE)      # DefaultRetryPolicy
        fs.capacity = fs.used()
        with pytest.raises(emb.OTSServiceError):
            _put(client, emb, 1)
        threading.Timer(0.3, setattr, (fs, "capacity", None)).start()
        t0 = time.monotonic()
        _put(sdk, ts, 2)                   # refused (503, retried), then accepted
        assert time.monotonic() - t0 >= 0.2
        _, row, _ = sdk.get_row("t", [("k", 2)])
        assert row is not None
    finally:
        srv.stop()


def test_search_and_stream_calls_answer_a_storage_failure_as_the_service(monkeypatch):
    """The search and stream methods, like the data API, raise the SDK's
    OTSServiceError with the cause (not lsm's StorageError)."""
    from regions.tablestore.search import Engine
    client = OTSClient(None)
    try:
        client.create_table(emb.TableMeta("t", [("k", "INTEGER")]), emb.TableOptions(),
                            emb.ReservedThroughput(emb.CapacityUnit(0, 0)))
        client.create_search_index("t", "idx", ts.SearchIndexMeta(
            [ts.FieldSchema("n", ts.FieldType.LONG)]))

        def full(*args, **kwargs):
            raise ENOSPC
        monkeypatch.setattr(Engine, "search", full)
        with pytest.raises(ots_errors.OTSServiceError) as e:
            client.search("t", "idx", ts.SearchQuery(ts.MatchAllQuery()))
        assert e.value.code == "OTSPartitionUnavailable" and "No space" in e.value.message
        monkeypatch.setattr(OTSClient, "_base_schema", full)
        with pytest.raises(ots_errors.OTSServiceError) as e:
            client.list_stream("t")
        assert e.value.code == "OTSPartitionUnavailable"
    finally:
        client.close()
