"""A regions-server with the console for tests: small regions so that a few
hundred rows split a table, rows written through the official SDK, GETs."""
import base64
import http.client
import logging
import time
import urllib.parse

import tablestore as ts
from tablestore.auth import RequestContext, SignV2
from tablestore.credentials import Credentials
from tablestore.protocol import OTSProtocol

import regions
from regions.otsserver.cli import make_server

INSTANCE, KEY_ID, SECRET = "console", "console_key_id", "console_secret"
#: Regions split above 24 KiB of table files; memtables flush at 8 KiB.
SPLIT_OPTIONS = dict(memtable_bytes=8192, split_policy="constant", max_region_bytes=24 << 10,
                     split_jitter=0.0, maintenance_interval=0.02)
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def start(tmp_path, host="127.0.0.1", **options):
    opts = regions.ServerOptions(**{**SPLIT_OPTIONS, **options})
    return make_server(str(tmp_path / "data"), host, 0, INSTANCE, KEY_ID, SECRET,
                       server_options=opts).start()


def sdk(srv, secret=SECRET):
    host, port = srv.server_address[:2]
    if host == "0.0.0.0":
        host = "127.0.0.1"
    return ts.OTSClient("http://%s:%d" % (host, port), KEY_ID, secret, INSTANCE,
                        retry_policy=ts.NoRetryPolicy())


def post_signed(srv, api, body):
    """(status, body) of a POST of ``body`` to ``api``, signed as the SDK signs it."""
    proto = OTSProtocol(INSTANCE, "utf8", logging.getLogger("consoleserver"))
    headers = proto._make_request_headers(body, "/" + api, SignV2("utf8"),
                                          RequestContext(Credentials(KEY_ID, SECRET)))
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=30)
    try:
        conn.request("POST", "/" + api, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def get(srv, path, auth=None, host_header=None):
    """(status, headers dict with lower-case names, body bytes) of one GET
    (``host_header``: the Host it names; by default the server's address)."""
    host, port = srv.server_address[:2]
    conn = http.client.HTTPConnection("127.0.0.1" if host == "0.0.0.0" else host, port, timeout=30)
    headers = {} if host_header is None else {"Host": host_header}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(
            ("%s:%s" % auth).encode()).decode()
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def create_events(srv, name="events", split_at=("m",), indexed=False, index_split_at=None):
    """``create_table`` through the server's own client (the SDK 6.4.8
    create_table has no split points; the wire's CreateTable with partitions
    would do the same)."""
    create_table(srv.service.client, name, split_at, indexed, index_split_at)


def create_table(client, name="events", split_at=("m",), indexed=False, index_split_at=None):
    """A table (pk STRING, n INTEGER) of an embedded client, pre-split at
    partition keys ``split_at``.  With ``indexed``: defined columns v STRING
    and n2 INTEGER, and two indexes: ``<name>_by_n2`` (global: n2, attribute
    v; pre-split at ``index_split_at``) and ``<name>_local`` (local: pk, n2)."""
    import regions.tablestore as emb
    defined = [("v", "STRING"), ("n2", "INTEGER")] if indexed else []
    indexes = [emb.SecondaryIndexMeta(name + "_by_n2", ["n2"], ["v"],
                                      split_points=index_split_at),
               emb.SecondaryIndexMeta(name + "_local", ["pk", "n2"], [],
                                      emb.SecondaryIndexType.LOCAL_INDEX)] if indexed else None
    meta = emb.TableMeta(name, [("pk", "STRING"), ("n", "INTEGER")], defined_columns=defined)
    client.create_table(meta, emb.TableOptions(), emb.ReservedThroughput(emb.CapacityUnit(0, 0)),
                        secondary_indexes=indexes, split_points=list(split_at))


def create_docs(client, name="docs", split_at=("m",), stream=True, search=True, keywords=()):
    """A table (pk STRING) pre-split at ``split_at``, with a stream (records
    kept 24 h) and a search index ``<name>_idx`` (title TEXT, n LONG); n is a
    defined column (a secondary index may use it); ``keywords``: more
    fields, KEYWORD."""
    import regions.tablestore as emb
    from regions.tablestore.streams import StreamSpecification
    from tablestore.metadata import FieldSchema, FieldType, SearchIndexMeta
    client.create_table(emb.TableMeta(name, [("pk", "STRING")],
                                      defined_columns=[("n", "INTEGER")]), emb.TableOptions(),
                        emb.ReservedThroughput(emb.CapacityUnit(0, 0)),
                        split_points=list(split_at),
                        stream_spec=StreamSpecification(True, 24) if stream else None)
    if search:
        client.create_search_index(name, name + "_idx", SearchIndexMeta(
            [FieldSchema("title", FieldType.TEXT), FieldSchema("n", FieldType.LONG)] +
            [FieldSchema(k, FieldType.KEYWORD) for k in keywords]))


def put_rows(client, name, keys, value_bytes=200, hostile=False):
    """Write rows ``(pk, n)`` in batches of 100 through BatchWriteRow."""
    keys = list(keys)
    for i in range(0, len(keys), 100):
        req = ts.BatchWriteRowRequest()
        items = []
        for pk, n in keys[i:i + 100]:
            attrs = [("v", (HOSTILE if hostile else "x") * (value_bytes // (len(HOSTILE) if hostile
                                                                            else 1) or 1)),
                     ("n2", n)]
            items.append(ts.PutRowItem(ts.Row([("pk", pk), ("n", n)], attrs),
                                       ts.Condition(ts.RowExistenceExpectation.IGNORE)))
        req.add(ts.TableInBatchWriteRowItem(name, items))
        client.batch_write_row(req)


def wait_for(check, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def rows_url(table, **params):
    return "/tables/%s/rows?%s" % (table, urllib.parse.urlencode(params))
