"""The operator's web console and ``/metrics``, served by ``regions-server``
on the wire API's port for ``GET`` requests (the wire API stays on POST).

Pages (server-rendered HTML, no JavaScript; each has a JSON twin with
``?format=json``):

- ``/``: overview: instance, data directory, uptime, durability mode,
  requests and errors per second over the last minute, block cache, split
  counters, and every table with its row-key schema, region count, stored
  and memtable bytes, and its last split; each data table followed by its
  secondary indexes, then its search indexes (marked; a table with a stream
  tagged), and the helper tables (change feeds, refs, search index records,
  stream logs) folded apart as internal.
- ``/tables/<name>``: schema and options (an index: whose index, its
  columns and sync phase; a base table: its secondary indexes, its search
  indexes (sync phase, lag, documents, size), its change feed's backlog and
  its stream (id, shards)), the split policy in words,
  regions in key order (start/end keys as typed partition-key values, state,
  stored bytes, store files per level, memtable bytes, reads/writes per
  second, split threshold, split blocker with its hot key), bars of region
  sizes and write rates, and the table's last splits (kept in meta: they
  survive a restart).
- ``/tables/<name>/rows``: a read-only row browser: GetRange with typed
  start/end keys (``start.<pk column>``, ``end.<pk column>``; empty, INF_MIN
  or INF_MAX), ``direction``, ``limit``, ``columns`` (comma-separated), a link
  to the next page; or GetRow with ``get=1`` and ``pk.<pk column>``.
  Key values are typed as text: INTEGER in decimal, BINARY in hex.  The rows
  are a grid, one line each: the key columns, the page's attribute columns,
  the row's last write.
- ``/metrics``: Prometheus' text format (``regions.otsserver.metrics``);
  without ``prometheus_client``, 503 and the line naming its extra.
- ``/static/<file>``: the stylesheet, shipped in the package
  (``console_static/``).

For people the pages write sizes in KiB/MiB/GiB (``regions.reports.human_bytes``),
times in UTC with how long ago (``utc_text``, ``ago_text``), and keys and
values on one line, cut with an ellipsis (the whole value is the title);
the JSON twins keep bytes, seconds since the epoch and cell timestamps in ms.

Every number comes from ``OTSClient.metrics()`` (regions.metrics), and what
is known of secondary and search indexes and streams from ``index_catalogue``
(the client's index catalogue); the console only formats.  Every value shown is user data
and escaped.

Access: when the server listens on a loopback address everything is open to
requests naming a loopback host (``Host``, checked by the HTTP front end for
every route: ``regions.otsserver.hosts``, the DNS-rebinding defence);
otherwise every GET needs HTTP basic auth with one of the server's access key
id / secret pairs (401 otherwise).  ``/static/`` serves only the names of the
files shipped; any other name, '..', an encoded NUL or slash, is a 404.

Thread-safety: ``handle`` may be called from many threads; a sampler thread
reads the region counters every ``SAMPLE_SECONDS`` so that per-region rates
exist before anyone opens a page.  ``close()`` stops it.
"""
from __future__ import annotations

import base64
import datetime
import hmac
import html
import json
import threading
import time
from importlib import resources
from typing import NamedTuple
from urllib.parse import parse_qs, quote, urlencode, urlsplit, unquote

from regions.extras import MissingExtra
from regions.meta import SPLIT_HISTORY
from regions.reports import human_bytes
from regions.tablestore import pkcodec
from regions.tablestore.indexes import FEED_SUFFIX, REFS_SUFFIX
from regions.tablestore.search import SEARCH_INFIX
from regions.tablestore.streams import LOG_SUFFIX
from regions.tablestore.errors import OTSClientError, OTSServiceError
from regions.tablestore.metadata import INF_MAX, INF_MIN, Direction

SAMPLE_SECONDS = 2.0
#: Pages that show the server's numbers (/metrics, the overview, a table) are
#: rendered at most once per this many seconds (per page and format): a scrape
#: every 100 ms costs one rendering a second.  The row browser is never cached.
RENDER_SECONDS = 1.0
CUT_CHARS = 200          # longer strings are cut (their length is shown)
CUT_BYTES = 64           # longer binaries are cut
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
STATIC = "console_static"
_STATIC_TYPES = {".css": "text/css; charset=utf-8", ".png": "image/png"}
HTML = "text/html; charset=utf-8"
JSON = "application/json; charset=utf-8"
TEXT = "text/plain; charset=utf-8"


class Reply(NamedTuple):
    status: int
    content_type: str
    body: bytes
    headers: tuple = ()


class _Fail(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def static_names() -> frozenset:
    """The names of the files shipped in ``regions/otsserver/console_static``:
    the only names ``/static/`` serves, so no path ever reaches the file system."""
    return frozenset(p.name for p in resources.files("regions.otsserver").joinpath(STATIC).iterdir()
                     if p.name.endswith(tuple(_STATIC_TYPES)))


def static_file(name: str) -> bytes:
    """A file shipped in ``regions/otsserver/console_static`` (package data)."""
    return resources.files("regions.otsserver").joinpath(STATIC, name).read_bytes()


# -- typed values -------------------------------------------------------------
def typed(value) -> dict:
    """A key or column value as ``{"type", "value"}``; strings and binaries
    longer than the cut carry ``"length"`` and ``"cut": True``.  BINARY
    values are hex."""
    if value is INF_MIN or value is INF_MAX:
        return {"type": "INF_MIN" if value is INF_MIN else "INF_MAX", "value": None}
    if isinstance(value, bool):
        return {"type": "BOOLEAN", "value": value}
    if isinstance(value, int):
        return {"type": "INTEGER", "value": value}
    if isinstance(value, float):
        return {"type": "DOUBLE", "value": value}
    if isinstance(value, (bytes, bytearray)):
        out = {"type": "BINARY", "value": bytes(value[:CUT_BYTES]).hex()}
        if len(value) > CUT_BYTES:
            out.update(length=len(value), cut=True)
        return out
    s = str(value)
    out = {"type": "STRING", "value": s[:CUT_CHARS]}
    if len(s) > CUT_CHARS:
        out.update(length=len(s), cut=True)
    return out


def boundary(key: bytes, end: bool) -> dict:
    """A region boundary (row-key bytes) as a typed partition-key value."""
    if not key:
        return typed(INF_MAX if end else INF_MIN)
    return typed(pkcodec.decode_partition_value(key))


def parse_key_value(text: str, pk_type: str, default):
    """A key value from form text (the inverse of ``pkcodec.value_text``)."""
    text = text.strip() if pk_type != pkcodec.STRING else text
    if text == "":
        return default
    if text == "INF_MIN":
        return INF_MIN
    if text == "INF_MAX":
        return INF_MAX
    try:
        if pk_type == pkcodec.INTEGER:
            return int(text)
        if pk_type == pkcodec.BINARY:
            return bytearray.fromhex(text)
    except ValueError:
        raise _Fail(400, "%r is not a valid %s value" % (text, pk_type)) from None
    return text


# -- secondary indexes ---------------------------------------------------------
def index_catalogue(client, feeds: bool = True) -> dict:
    """The secondary and search indexes and the streams of ``client``'s
    tables, as the console and ``/metrics`` show them
    (``OTSClient.index_catalogue``; see ``indexes.Indexer.catalogue`` for
    its shape)."""
    catalogue = getattr(client, "index_catalogue", None)
    out = catalogue(feeds) if catalogue is not None else {"index_of": {}, "indexes": {},
                                                           "feeds": {}}
    out.setdefault("searches", {})      # base table -> its search indexes
    out.setdefault("streams", {})       # base table -> its stream
    return out


def table_kinds(tables, server_tables, catalogue) -> dict:
    """``{name: (kind, base)}`` of every region-server table: kind ``table``
    (base ``""``), ``global_index`` or ``local_index`` (base: its data
    table), ``feed`` (a data table's change feed), ``refs`` (an index's
    base row -> index row map; base: the index's data table), ``search`` (a
    search index's record, ``<table>.search.<index>``; its documents are in
    the engine's files), ``stream`` (a table's stream log, ``<table>.stream``)
    or ``internal`` (a helper table left without its owner, deleted at the
    next open).
    ``tables``: the Tablestore tables (``OTSClient.metrics()["tables"]``)."""
    index_of = catalogue["index_of"]
    types = {i["name"]: i["type"] for v in catalogue["indexes"].values() for i in v}
    searches = {base + SEARCH_INFIX + s["name"]: base
                for base, v in catalogue.get("searches", {}).items() for s in v}
    streams = catalogue.get("streams", {})
    fed = set(catalogue["indexes"]) | set(searches.values()) | set(streams)
    kinds = {}
    for name in server_tables:
        owner = name[:-len(FEED_SUFFIX)]
        if name in index_of:
            kinds[name] = (types.get(name, "global") + "_index", index_of[name])
        elif name in tables:
            kinds[name] = ("table", "")
        elif name.endswith(FEED_SUFFIX) and owner in fed:
            kinds[name] = ("feed", owner)
        elif name.endswith(REFS_SUFFIX) and name[:-len(REFS_SUFFIX)] in index_of:
            kinds[name] = ("refs", index_of[name[:-len(REFS_SUFFIX)]])
        elif name in searches:
            kinds[name] = ("search", searches[name])
        elif name.endswith(LOG_SUFFIX) and name[:-len(LOG_SUFFIX)] in streams:
            kinds[name] = ("stream", name[:-len(LOG_SUFFIX)])
        else:
            kinds[name] = ("internal", "")
    return kinds


# -- HTML helpers -------------------------------------------------------------
def e(value) -> str:
    return html.escape(str(value), quote=True)


def typed_text(t: dict) -> str:
    """Plain text of a typed value (``"a063"``, ``42``, hex, ``INF_MIN``), as
    ``show`` displays it."""
    kind = t["type"]
    if kind in ("INF_MIN", "INF_MAX"):
        return kind
    text = '"%s"' % t["value"] if kind == "STRING" else str(t["value"])
    if t.get("cut"):
        text += "\u2026 (%d %s)" % (t["length"], "bytes" if kind == "BINARY" else "chars")
    return text


def show(t: dict) -> str:
    """HTML of a typed value; its title is its type and whole text (a cell
    that cuts it with an ellipsis still shows it on hover)."""
    kind = t["type"]
    if kind in ("INF_MIN", "INF_MAX"):
        return '<span class="inf">%s</span>' % kind
    text = e(t["value"]) if kind != "STRING" else "&quot;%s&quot;" % e(t["value"])
    if t.get("cut"):
        unit = "bytes" if kind == "BINARY" else "chars"
        text += '<span class="cut">&hellip; (%d %s)</span>' % (t["length"], unit)
    return '<span class="v %s" title="%s">%s</span>' % (kind.lower(),
                                                       e(kind + " " + typed_text(t)), text)


def clip(inner: str) -> str:
    """A cell's content on one line, cut with an ellipsis where it would wrap."""
    return '<div class="k">%s</div>' % inner


def rate(x) -> str:
    return "&ndash;" if x is None else "%.1f" % x


def bar(value, top, cls) -> str:
    pct = 0.0 if not top or not value else max(0.5, 100.0 * value / top)
    return '<div class="bar %s"><span style="width:%.1f%%"></span></div>' % (cls, pct)


# -- times for people -----------------------------------------------------------
_SPANS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))


def span_text(seconds, parts: int = 2) -> str:
    """A length of time in its ``parts`` largest units: ``12 s``,
    ``3 min 12 s``, ``2 h 5 min``, ``4 d 3 h`` (``parts=1``: ``3 min``)."""
    rest, out = max(0, int(seconds)), []
    for unit, size in _SPANS:
        if rest >= size or (unit == "s" and not out):
            n, rest = divmod(rest, size)
            out.append("%d %s" % (n, unit))
        elif out:
            break           # "2 h 5 min", never "2 h 0 min 5 s"
        if len(out) == parts:
            break
    return " ".join(out)


def ago_text(seconds) -> str:
    """``just now``, ``12 s ago``, ``3 min ago``, ``2 h ago``, ``4 d ago``."""
    return "just now" if seconds < 1 else span_text(seconds, 1) + " ago"


def utc_text(epoch: float) -> str:
    """``2025-06-01 06:03:39`` (UTC) of seconds since the epoch."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc) \
        .strftime("%Y-%m-%d %H:%M:%S")


def utc_iso(epoch: float) -> str:
    """ISO 8601 of seconds since the epoch, in UTC, to the millisecond."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc) \
        .isoformat(timespec="milliseconds")


def duration_text(seconds: float) -> str:
    """``52 ms``, ``1.25 s``, ``3 min 12 s``."""
    if seconds < 1:
        return "%d ms" % round(seconds * 1000) if seconds >= 0.0005 else "<1 ms"
    return "%.3g s" % seconds if seconds < 60 else span_text(seconds)


def when(epoch: float, now: float) -> str:
    """HTML of a moment: its UTC time (the column says UTC), and how long ago."""
    return '<time datetime="%s">%s</time> <span class="ago">%s</span>' % (
        utc_iso(epoch), utc_text(epoch), ago_text(now - epoch))


def table_html(headers, rows, cls="", columns=None) -> str:
    """A table; ``columns``: a CSS class per column (``num`` right-aligns)."""
    columns = columns or ("",) * len(headers)
    attr = ['' if not c else ' class="%s"' % c for c in columns]
    out = ['<table class="%s"><thead><tr>' % cls]
    out += ["<th%s>%s</th>" % (a, e(h)) for a, h in zip(attr, headers)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join("<td%s>%s</td>" % (a, c) for a, c in zip(attr, row)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def page(title: str, body: str, crumbs=()) -> bytes:
    nav = ' &rsaquo; '.join(['<a href="/">overview</a>'] +
                            ['<a href="%s">%s</a>' % (e(href), e(text)) for href, text in crumbs])
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>"
            "<link rel=\"stylesheet\" href=\"/static/console.css\"></head><body>"
            "<header><b>regions-server</b> <nav>%s</nav></header><main><h1>%s</h1>%s</main>"
            "</body></html>\n" % (e(title), nav, e(title), body)).encode("utf-8")


def _json_default(o):
    if isinstance(o, (bytes, bytearray)):
        return bytes(o).hex()
    return str(o)


class Console:
    """The console of one data API client (module docstring)."""

    def __init__(self, client, instance: str, keys, open_access: bool,
                 sample_seconds: float = SAMPLE_SECONDS, render_seconds: float = RENDER_SECONDS,
                 clock=time.monotonic):
        self.client = client
        self.instance = instance
        self.keys = dict(keys)
        self.open_access = open_access
        self._render_seconds = render_seconds
        self._clock = clock
        self._rendered = {}             # (path, as_json) -> (time, Reply)
        self._rendered_lock = threading.Lock()
        self._static_names = static_names()
        self._stop = threading.Event()
        self._sampler = None
        if sample_seconds:
            self._sampler = threading.Thread(target=self._sample, args=(sample_seconds,),
                                             name="console-sampler", daemon=True)
            self._sampler.start()

    def _sample(self, every):
        while not self._stop.wait(every):
            try:
                self.client.metrics()
            except Exception:       # the store closed under us: stop sampling
                return

    def close(self):
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()

    # -- entry point ----------------------------------------------------------
    def handle(self, target: str, headers) -> Reply:
        if not self.open_access and not self._authorized(headers.get("authorization", "")):
            return Reply(401, HTML, page("Authentication required",
                                         "<p>Log in with the server's access key id and secret.</p>"),
                         (("WWW-Authenticate", 'Basic realm="regions-server", charset="UTF-8"'),))
        url = urlsplit(target)
        path = unquote(url.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        as_json = query.pop("format", "html") == "json"
        if path.endswith("/rows") or path.startswith("/static/"):
            return self._render(path, query, as_json)
        key, now = (path, as_json), self._clock()
        with self._rendered_lock:
            hit = self._rendered.get(key)
        if hit is not None and now - hit[0] < self._render_seconds:
            return hit[1]
        reply = self._render(path, query, as_json)
        if reply.status == 200:
            with self._rendered_lock:
                if len(self._rendered) > 256:     # table names come from requests
                    self._rendered.clear()
                self._rendered[key] = (now, reply)
        return reply

    def _render(self, path, query, as_json) -> Reply:
        try:
            if path == "/metrics":
                from regions.otsserver.metrics import CONTENT_TYPE, exposition
                try:
                    return Reply(200, CONTENT_TYPE, exposition(self.client))
                except MissingExtra as missing:     # a scraper's error, not a traceback
                    return Reply(503, TEXT, b"%s\n" % str(missing).encode())
            if path.startswith("/static/"):
                return self._static(path[len("/static/"):])
            if path in ("/", "/index.html"):
                data, render = self.overview(), self._overview_html
            else:
                parts = path.strip("/").split("/")
                if parts[0] != "tables" or len(parts) not in (2, 3) or \
                        (len(parts) == 3 and parts[2] != "rows"):
                    raise _Fail(404, "No page at %s" % path)
                if len(parts) == 2:
                    data, render = self.table(parts[1]), self._table_html
                else:
                    data, render = self.rows(parts[1], query), self._rows_html
        except _Fail as f:
            if as_json:
                return Reply(f.status, JSON, json.dumps({"error": f.message}).encode())
            return Reply(f.status, HTML, page("Error %d" % f.status, "<p class=\"error\">%s</p>"
                                              % e(f.message)))
        if as_json:
            return Reply(200, JSON, json.dumps(data, default=_json_default, indent=1).encode())
        return Reply(200, HTML, render(data))

    def _authorized(self, header: str) -> bool:
        scheme, _, cred = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            key_id, sep, secret = base64.b64decode(cred.strip(), validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        expected = self.keys.get(key_id)
        return bool(sep) and expected is not None and \
            hmac.compare_digest(expected.encode(), secret.encode())

    def _static(self, name):
        if name not in self._static_names:     # '..', '/', NUL, a long name: not one of ours
            raise _Fail(404, "No static file %s" % name[:CUT_CHARS])
        return Reply(200, _STATIC_TYPES[name[name.rfind("."):]], static_file(name),
                     (("Cache-Control", "max-age=300"),))

    # -- data of the pages ------------------------------------------------------
    def _metrics(self):
        return self.client.metrics()

    def overview(self) -> dict:
        m = self._metrics()
        server, api = m["server"], m["api"]
        splits = server["splits"]
        cat = index_catalogue(self.client, feeds=False)
        kinds = table_kinds(m["tables"], server["tables"], cat)
        keys = {name: t["primary_key"] for name, t in m["tables"].items()}
        order = []                  # each data table, then its indexes (readable or not yet)
        for name in m["tables"]:
            if name not in cat["index_of"]:
                order.append(name)
                for index in cat["indexes"].get(name, ()):
                    if index["name"] in server["tables"]:
                        order.append(index["name"])
                        keys[index["name"]] = index["primary_key"]
        order += [n for n in m["tables"] if n not in order]     # an index whose base went
        tables = []
        for name in order:
            kind, base = kinds.get(name, ("table", ""))
            tables.append({"name": name, "primary_key": keys[name],
                           **_totals(server["tables"].get(name, [])),
                           "last_split": next((s["time"] for s in splits["recent"]
                                               if s["table"] == name), None),
                           "index_of": base or None,
                           "index_type": kind[:-len("_index")] if base else None,
                           "indexes": [i["name"] for i in cat["indexes"].get(name, ())],
                           "search_indexes": [_shown_search(s)
                                              for s in cat["searches"].get(name, ())],
                           "stream": cat["streams"].get(name)})
        internal = [{"name": name, "kind": kind, "of": _owner(name, kind, base), "base": base,
                     **_totals(server["tables"][name])}
                    for name, (kind, base) in kinds.items()
                    if kind in ("feed", "refs", "search", "stream", "internal")]
        return {"instance": self.instance, "data_directory": server["path"],
                "started_at": server["opened_at"], "uptime_seconds": server["uptime_seconds"],
                "durability": "sync" if server["sync"] else "async",
                "requests_per_second": api["requests_per_second"],
                "errors_per_second": api["errors_per_second"],
                "requests_total": sum(api["requests"].values()),
                "errors_total": sum(sum(c.values()) for c in api["errors"].values()),
                "block_cache": server["block_cache"],
                "splits": {k: splits[k] for k in ("started", "finished", "rolled_back")},
                "tables": tables, "internal_tables": internal}

    def table(self, name: str) -> dict:
        m = self._metrics()
        cat = index_catalogue(self.client, feeds=True)
        base = cat["index_of"].get(name)
        index = next((i for i in cat["indexes"].get(base, ()) if i["name"] == name), None)
        schema = m["tables"].get(name)
        if schema is None and index is not None:      # an index still loading its base data
            schema = {"primary_key": index["primary_key"], **index["options"],
                      "reserved_read_cu": 0, "reserved_write_cu": 0}
        regs = m["server"]["tables"].get(name)
        if schema is None or regs is None:
            raise _Fail(404, "No table %s" % name)
        regions = []
        for r in regs:
            regions.append({
                "region_id": r["region_id"], "start": boundary(r["start_key"], False),
                "end": boundary(r["end_key"], True), "state": r["state"],
                "stored_bytes": r["size_bytes"], "key_count": r["key_count"],
                "files_per_level": r["files_per_level"], "memtable_bytes": r["memtable_bytes"],
                "reads": r["reads"], "writes": r["writes"],
                "reads_per_second": r["reads_per_second"],
                "writes_per_second": r["writes_per_second"],
                "split_threshold": r["split_threshold"], "split_blocker": r["split_blocker"],
                "hot_key": boundary(r["split_blocker_key"], False)
                if r["split_blocker_key"] else None})
        splits = [{"parent": s["parent"], "daughters": s["daughters"],
                   "split_key": boundary(s["split_key"], False),
                   "time": s["time"], "time_utc": utc_iso(s["time"]),
                   "duration_seconds": s["duration_seconds"]}
                  for s in m["server"]["splits"]["recent"] if s["table"] == name]
        if index is not None:
            index = {**_shown(index), "refs_table": name + REFS_SUFFIX}
        indexes = [{**_shown(i), **_totals(m["server"]["tables"].get(i["name"], []))}
                   for i in cat["indexes"].get(name, ())]
        feed = cat["feeds"].get(name)
        if feed is not None:
            feed = {**feed, **_totals(m["server"]["tables"].get(feed["table"], []))}
        now = time.time()
        searches = [{**_shown_search(s), **_search_lag(feed, now)}
                    for s in cat["searches"].get(name, ())]
        stream = cat["streams"].get(name)
        if stream is not None:
            log = name + LOG_SUFFIX
            stream = {**stream, "table": log, **_totals(m["server"]["tables"].get(log, []))}
        return {"name": name, **schema, "split_policy": m["server"]["split_policy"],
                "index_of": base, "index": index, "indexes": indexes, "feed": feed,
                "search_indexes": searches, "stream": stream,
                "regions": regions, "recent_splits": splits}

    def _schema(self, name):
        """([(pk name, pk type)], the base table of an index or None) of the
        table or index table (404 if none)."""
        cat = index_catalogue(self.client, feeds=False)
        base = cat["index_of"].get(name)
        for index in cat["indexes"].get(base, ()):
            if index["name"] == name:     # describe_table refuses an index's name
                return [tuple(c) for c in index["primary_key"]], base
        try:
            desc = self.client.describe_table(name)
        except (OTSServiceError, OTSClientError):
            raise _Fail(404, "No table %s" % name) from None
        return [(c[0], c[1]) for c in desc.table_meta.schema_of_primary_key], None

    def rows(self, name: str, q: dict) -> dict:
        pk, base = self._schema(name)
        columns = [c.strip() for c in q.get("columns", "").split(",") if c.strip()] or None
        try:
            if q.get("get"):
                key = [(n, parse_key_value(q.get("pk." + n, ""), t, None)) for n, t in pk]
                missing = [n for n, v in key if v is None]
                if missing:
                    raise _Fail(400, "GetRow needs every primary key column: %s"
                                % ", ".join(missing))
                _, row, _ = self.client.get_row(name, key, columns_to_get=columns)
                return {"table": name, "index_of": base, "mode": "GetRow",
                        "primary_key": self._pk_typed(key), "columns_to_get": columns,
                        "rows": [self._row(row)] if row is not None else [], "next_start": None}
            direction = q.get("direction", "FORWARD").upper()
            if direction not in ("FORWARD", "BACKWARD"):
                raise _Fail(400, "direction must be FORWARD or BACKWARD")
            lo, hi = (INF_MIN, INF_MAX) if direction == "FORWARD" else (INF_MAX, INF_MIN)
            start = [(n, parse_key_value(q.get("start." + n, ""), t, lo)) for n, t in pk]
            end = [(n, parse_key_value(q.get("end." + n, ""), t, hi)) for n, t in pk]
            try:
                limit = int(q.get("limit") or DEFAULT_LIMIT)
            except ValueError:
                raise _Fail(400, "limit must be an integer") from None
            if not 1 <= limit <= MAX_LIMIT:
                raise _Fail(400, "limit must be between 1 and %d" % MAX_LIMIT)
            _, next_start, rows, _ = self.client.get_range(
                name, Direction.FORWARD if direction == "FORWARD" else Direction.BACKWARD,
                start, end, columns_to_get=columns, limit=limit)
        except (OTSServiceError, OTSClientError) as err:
            raise _Fail(400, getattr(err, "message", str(err))) from None
        return {"table": name, "index_of": base, "mode": "GetRange", "direction": direction,
                "limit": limit, "columns_to_get": columns, "start": self._pk_typed(start),
                "end": self._pk_typed(end), "rows": [self._row(r) for r in rows],
                "next_start": self._pk_typed(next_start) if next_start else None,
                "next_query": self._next_query(q, next_start) if next_start else None}

    @staticmethod
    def _pk_typed(key):
        return [[n, typed(v)] for n, v in key]

    @staticmethod
    def _row(row):
        return {"primary_key": [[n, typed(v)] for n, v in row.primary_key],
                "attributes": [[c[0], typed(c[1])] + ([c[2]] if len(c) > 2 else [])
                               for c in (row.attribute_columns or ())]}

    @staticmethod
    def _next_query(q, next_start):
        keep = {k: v for k, v in q.items() if not k.startswith("start.")}
        keep.update({"start." + n: pkcodec.value_text(v) for n, v in next_start})
        return urlencode(keep)

    # -- HTML ---------------------------------------------------------------------
    def _overview_html(self, d) -> bytes:
        now = time.time()
        cache = d["block_cache"]
        facts = [("Instance", e(d["instance"])),
                 ("Data directory", '<span class="mono">%s</span>' % e(d["data_directory"])),
                 ("Uptime", "%s (since %s UTC)" % (span_text(d["uptime_seconds"]),
                                                   utc_text(d["started_at"]))),
                 ("Durability", "sync (WAL fsynced per write)" if d["durability"] == "sync"
                  else "async (WAL handed to the OS per write; survives kill -9)"),
                 ("Requests / s (last minute)", "%.2f" % d["requests_per_second"]),
                 ("Errors / s (last minute)", "%.2f" % d["errors_per_second"]),
                 ("Requests / errors since start", "%d / %d" % (d["requests_total"],
                                                                 d["errors_total"])),
                 ("Block cache", "%s used of %s, %d hits, %d misses" % (
                     human_bytes(cache["usage"]), human_bytes(cache["capacity"]),
                     cache["hits"], cache["misses"])),
                 ("Splits since start", "%(started)d started, %(finished)d finished, "
                  "%(rolled_back)d rolled back" % d["splits"])]
        body = _facts(facts)
        rows, pending = [], []      # a table's search indexes follow its secondary indexes
        for t in d["tables"]:
            if not t["index_of"]:
                rows += pending
                pending = [_search_row(t["name"], s) for s in t.get("search_indexes", ())]
            link = _table_link(t["name"], t["index_of"], t["index_type"])
            if t.get("stream"):
                link += " " + _stream_tag(t["stream"])
            rows.append((link, _pk_text(t["primary_key"]), str(t["regions"]),
                         human_bytes(t["stored_bytes"]), human_bytes(t["memtable_bytes"]),
                         when(t["last_split"], now) if t["last_split"] is not None else "never"))
        rows += pending
        body += "<h2>Tables</h2>" + (table_html(
            ("Table", "Primary key", "Regions", "Stored", "Memtable", "Last split (UTC)"), rows,
            "tables", ("", "", "num", "num", "num", "")) if rows else "<p>No tables.</p>")
        internal = d["internal_tables"]
        if internal:
            rows = [('<span class="mono">%s</span>' % e(t["name"]), _helper_text(t),
                     str(t["regions"]), human_bytes(t["stored_bytes"]),
                     human_bytes(t["memtable_bytes"])) for t in internal]
            body += ('<details class="internal"><summary>Internal tables (%d): the change feeds '
                     'and refs that keep the secondary indexes in step (and the search indexes\' '
                     'records, the streams\' logs), not tables of the data '
                     'API</summary>%s</details>' % (len(internal), table_html(
                         ("Table", "Holds", "Regions", "Stored", "Memtable"), rows, "internal",
                         ("", "", "num", "num", "num"))))
        body += '<p class="links"><a href="/?format=json">JSON</a> &middot; ' \
                '<a href="/metrics">Prometheus metrics</a></p>'
        return page("Overview", body)

    def _table_html(self, d) -> bytes:
        now = time.time()
        name = d["name"]
        q = quote(name, safe="")
        policy = d["split_policy"]
        index = d["index"]
        if index is not None:
            facts = _index_facts(d["index_of"], index)
        else:
            facts = [("Primary key", _pk_text(d["primary_key"])),
                     ("Defined columns", e(", ".join("%s %s" % tuple(c)
                                                     for c in d["defined_columns"])) or "&ndash;")]
        facts += [("Time to live", "forever" if d["time_to_live"] == -1
                   else "%s (%d s)" % (span_text(d["time_to_live"]), d["time_to_live"])),
                  ("Max versions", str(d["max_versions"]))]
        if index is None:
            facts.append(("Reserved CU (read / write)", "%d / %d" % (d["reserved_read_cu"],
                                                                     d["reserved_write_cu"])))
        facts += [("Split policy", '<span class="policy" title="%s">%s</span>' % (
                     e("%s(%s)" % (policy["class"], ", ".join(
                         "%s=%s" % kv for kv in sorted(policy["parameters"].items())))),
                     e(policy["description"])))]
        body = _facts(facts)
        body += '<p class="links"><a id="browse" href="/tables/%s/rows">Browse rows</a> &middot; ' \
                '<a href="/tables/%s?format=json">JSON</a></p>' % (q, q)
        if d["indexes"]:
            body += _indexes_html(d["indexes"])
        if d["search_indexes"]:
            body += _searches_html(d["search_indexes"], now)
        if d["feed"] is not None and (d["indexes"] or d["search_indexes"]):
            body += _feed_html(d["feed"], any(i["type"] == "global" for i in d["indexes"]),
                               bool(d["search_indexes"]), now)
        if d["stream"] is not None:
            body += _stream_html(d["stream"])
        regs = d["regions"]
        top_size = max((r["stored_bytes"] + r["memtable_bytes"] for r in regs), default=0)
        top_rate = max((r["writes_per_second"] or 0 for r in regs), default=0)
        rows = []
        for r in regs:
            blocker = "&ndash;"
            if r["split_blocker"]:
                reason = r["split_blocker"].split("cannot split: ", 1)[-1].split(":")[0]
                blocker = '<span class="blocker" title="%s">%s</span>' % (
                    e(r["split_blocker"]), e(reason))
                if r["hot_key"]:
                    blocker += " " + show(r["hot_key"])
            rows.append((str(r["region_id"]), clip(show(r["start"])), clip(show(r["end"])),
                         e(r["state"]), human_bytes(r["stored_bytes"]),
                         " ".join("L%d:%d" % (i, n) for i, n in enumerate(r["files_per_level"]) if n)
                         or "&ndash;",
                         human_bytes(r["memtable_bytes"]), rate(r["reads_per_second"]),
                         rate(r["writes_per_second"]),
                         human_bytes(r["split_threshold"]) if r["split_threshold"] is not None
                         else "never", clip(blocker),
                         bar(r["stored_bytes"] + r["memtable_bytes"], top_size, "size"),
                         bar(r["writes_per_second"], top_rate, "writes")))
        body += "<h2>Regions (%d)</h2>" % len(regs) + table_html(
            ("Id", "Start", "End", "State", "Stored", "Files", "Memtable", "Reads/s", "Writes/s",
             "Splits at", "Split blocker", "Size", "Write rate"), rows, "regions",
            ("num", "key", "key", "", "num", "", "num", "num", "num", "num", "key wide", "", ""))
        splits = [(when(s["time"], now), str(s["parent"]),
                   " + ".join(str(x) for x in s["daughters"]), clip(show(s["split_key"])),
                   duration_text(s["duration_seconds"]))
                  for s in d["recent_splits"]]
        body += "<h2>Splits</h2>" + (
            '<p class="note">The table\'s last %d splits, newest first (kept in meta: they '
            'survive a restart).</p>' % SPLIT_HISTORY + table_html(
                ("Time (UTC)", "Parent", "Daughters", "Split key", "Duration"), splits, "splits",
                ("", "num", "", "key", "num"))
            if splits else "<p>No split yet.</p>")
        return page(("Index " if index is not None else "Table ") + name, body,
                    _crumbs(name, d["index_of"]))

    def _rows_html(self, d) -> bytes:
        now = time.time()
        name = d["table"]
        q = quote(name, safe="")
        pk_names = [c[0] for c in d.get("start") or d.get("primary_key")]
        form = ['<div class="forms"><form class="range" method="get" action="/tables/%s/rows">'
                % q]
        for label, prefix, key in (("Start (inclusive)", "start.", d.get("start")),
                                   ("End (exclusive)", "end.", d.get("end"))):
            form.append("<fieldset><legend>%s</legend>" % label)
            for i, n in enumerate(pk_names):
                val = ""
                if key and d["mode"] == "GetRange":
                    t = key[i][1]
                    val = t["type"] if t["value"] is None else str(t["value"])
                form.append('<label>%s <input name="%s" value="%s"></label>'
                            % (e(n), e(prefix + n), e(val)))
            form.append("</fieldset>")
        fwd = d.get("direction", "FORWARD") == "FORWARD"
        form.append('<fieldset><legend>Range</legend><label>Direction <select name="direction">'
                    '<option%s>FORWARD</option><option%s>BACKWARD</option></select></label>'
                    % ("" if not fwd else " selected", " selected" if not fwd else ""))
        form.append('<label>Limit <input name="limit" class="short" value="%s"></label>'
                    % e(d.get("limit", DEFAULT_LIMIT)))
        form.append('<label>Columns <input name="columns" value="%s"></label>'
                    % e(",".join(d["columns_to_get"] or ())))
        form.append('<button id="range-go" type="submit">GetRange</button></fieldset></form>')
        form.append('<form class="getrow" method="get" action="/tables/%s/rows">'
                    '<input type="hidden" name="get" value="1"><fieldset><legend>GetRow</legend>'
                    % q)
        for n in pk_names:
            form.append('<label>%s <input name="%s"></label>' % (e(n), e("pk." + n)))
        form.append('<button id="getrow-go" type="submit">GetRow</button></fieldset></form></div>')
        body = "".join(form)
        columns = {}                # name -> [the row's values of it] (versions, newest first)
        by_row = []
        for row in d["rows"]:
            by_row.append({})
            for a in row["attributes"]:
                by_row[-1].setdefault(a[0], []).append(show(a[1]))
                columns.setdefault(a[0], None)
        attr_names = list(columns)  # every attribute column of the page, in order of appearance
        out = []
        for row, values in zip(d["rows"], by_row):
            cells = [clip(show(v)) for _n, v in row["primary_key"]]
            cells += [clip(" ".join(values.get(col, ()))) for col in attr_names]
            written = max((a[2] for a in row["attributes"] if len(a) > 2), default=None)
            cells.append(when(written / 1000.0, now) if written is not None else "&ndash;")
            out.append(cells)
        n = len(out)
        body += "<h2>%s: %d row%s</h2>" % (e(d["mode"]), n, "" if n == 1 else "s")
        if d.get("next_query"):
            body += '<p class="pager"><a id="next-page" href="/tables/%s/rows?%s">Next page ' \
                    '&rsaquo;</a> from %s</p>' % (q, e(d["next_query"]), ", ".join(
                        "%s = %s" % (e(k), show(v)) for k, v in d["next_start"]))
        body += '<div class="scroll">%s</div>' % table_html(
            pk_names + attr_names + ["Last write (UTC)"], out, "rows",
            ["key pk"] * len(pk_names) + ["key"] * len(attr_names) + [""]) if out else \
            "<p>No rows.</p>"
        if d.get("index_of"):
            body = '<p class="note">An index of <a href="/tables/%s">%s</a>: written only by ' \
                   'its base table.</p>' % (quote(d["index_of"], safe=""), e(d["index_of"])) + body
        return page("Rows of " + name, body,
                    _crumbs(name, d.get("index_of")) + (("/tables/%s/rows" % q, "rows"),))


def _totals(regs) -> dict:
    """Regions, stored and memtable bytes and keys (entries, tombstones
    included: about the rows) of a table's region dicts."""
    return {"regions": len(regs), "stored_bytes": sum(r["size_bytes"] for r in regs),
            "memtable_bytes": sum(r["memtable_bytes"] for r in regs),
            "key_count": sum(r["key_count"] for r in regs)}


def _shown(index) -> dict:
    """An index of ``index_catalogue`` as a page shows it (its table's
    options are the page's own)."""
    return {k: v for k, v in index.items() if k != "options"}


def _owner(name, kind, base=None):
    """What a helper table serves: a feed its data table, a refs table its
    index, a search index's record or a stream's log their data table."""
    if kind in ("search", "stream"):
        return base
    suffix = {"feed": FEED_SUFFIX, "refs": REFS_SUFFIX}.get(kind)
    return name[:-len(suffix)] if suffix else None


def _shown_search(search) -> dict:
    """A search index of ``index_catalogue`` as the pages show it."""
    return {k: search.get(k) for k in ("name", "phase", "time_to_live", "fields", "documents",
                                       "storage_bytes")}


def _search_lag(feed, now) -> dict:
    """A search index's lag: its table's change feed's entries not yet
    applied (``backlog``) and the age of the oldest (``lag_seconds``, 0 when
    none is pending); None without a feed state."""
    if feed is None or feed["backlog"] is None:
        return {"backlog": None, "lag_seconds": None}
    oldest = feed["oldest_pending"]
    return {"backlog": feed["backlog"],
            "lag_seconds": max(0.0, now - oldest) if oldest is not None else 0.0}


_PHASES = {"ISP_FULL": "ISP_FULL: loading the table's rows", "ISP_INCR": "ISP_INCR: in step"}


def _table_link(name, base=None, index_type=None) -> str:
    """A table's link; an index's is marked as one, under its base table."""
    link = '<a class="table-link" href="/tables/%s">%s</a>' % (quote(name, safe=""), e(name))
    if not base:
        return link
    return '<span class="sub" title="%s">&#8627;</span> %s <span class="tag">%s index</span>' % (
        e("index of " + base), link, e(index_type))


def _crumbs(name, base):
    """The breadcrumbs of a table's page: an index's go through its base table."""
    crumbs = (("/tables/" + quote(base, safe=""), base),) if base else ()
    return crumbs + (("/tables/" + quote(name, safe=""), name),)


def _helper_text(t) -> str:
    if t["kind"] == "feed":
        return "change feed of %s" % _table_link(t["of"])
    if t["kind"] == "refs":
        return "refs of index %s (base row &rarr; index row)" % _table_link(t["of"])
    if t["kind"] == "search":
        return "record of search index %s of %s (its documents: the engine's files)" % (
            e(t["name"].split(SEARCH_INFIX, 1)[1]), _table_link(t["of"]))
    if t["kind"] == "stream":
        return "stream log of %s (its records)" % _table_link(t["of"])
    return "left by a dropped index (deleted at the next open)"


def _index_columns(index) -> str:
    """The declared index columns, then (dimmed) the base key's columns the
    index's primary key adds; the whole key with types is the title."""
    rest = [c[0] for c in index["primary_key"][len(index["columns"]):]]
    text = e(", ".join(index["columns"]))
    if rest:
        text += ' <span class="auto">+ %s</span>' % e(", ".join(rest))
    return '<span title="%s">%s</span>' % (
        e("primary key: " + ", ".join("%s %s" % tuple(c) for c in index["primary_key"])), text)


def _index_facts(base, index):
    how = ("kept in step by each write of %s, before the write returns" if index["type"] ==
           "local" else "kept in step from the change feed of %s, in the background")
    return [("Index of", '%s: a %s index, %s' % (_table_link(base), e(index["type"]),
                                                 how % e(base))),
            ("Index columns", _index_columns(index)),
            ("Primary key", _pk_text(index["primary_key"])),
            ("Attribute columns", e(", ".join(index["attributes"])) or "&ndash;"),
            ("Sync phase", e(_PHASES.get(index["phase"], index["phase"])))]


def _indexes_html(indexes) -> str:
    """A base table's secondary indexes."""
    rows = [(_table_link(i["name"]), e(i["type"]), clip(_index_columns(i)),
             clip(e(", ".join(i["attributes"])) or "&ndash;"),
             e(_PHASES.get(i["phase"], i["phase"])), "{:,}".format(i["key_count"]),
             human_bytes(i["stored_bytes"]), human_bytes(i["memtable_bytes"]), str(i["regions"]))
            for i in indexes]
    return "<h2>Secondary indexes (%d)</h2>" % len(indexes) + table_html(
        ("Index", "Type", "Index columns", "Attribute columns", "Sync phase", "Entries (≈ rows)",
         "Stored",
         "Memtable", "Regions"), rows, "indexes",
        ("", "", "key", "key", "", "num", "num", "num", "num"))


_SEARCH_PHASES = {"FULL": "FULL: loading the table's rows", "INCR": "INCR: in step"}


def _search_anchor(name) -> str:
    return "search-" + name


def _fields_text(fields) -> str:
    """A search index's fields, ``name TYPE, ...`` (all of them the title)."""
    text = e(", ".join("%s %s" % tuple(f) for f in fields))
    return '<span title="%s">%s</span>' % (text, text) if text else "&ndash;"


def _search_row(base, s):
    """A search index's line under its table on the overview (the columns
    of a table's: its fields for a key, its engine's files for stored)."""
    link = '<a class="search-link" href="/tables/%s#%s">%s</a>' % (
        quote(base, safe=""), e(quote(_search_anchor(s["name"]), safe="")), e(s["name"]))
    return ('<span class="sub" title="%s">&#8627;</span> %s <span class="tag">search index'
            '</span>' % (e("search index of " + base), link), clip(_fields_text(s["fields"])),
            "&ndash;", human_bytes(s["storage_bytes"]) if s["storage_bytes"] is not None
            else "&ndash;", "&ndash;", "&ndash;")


def _stream_tag(stream) -> str:
    return '<span class="tag stream" title="%s">stream</span>' % e(
        "stream %s: %d shard%s (%d open), records kept %d h" % (
            stream["stream_id"], stream["shards"], "" if stream["shards"] == 1 else "s",
            stream["open_shards"], stream["expiration_hours"]))


def _lag_text(backlog, seconds) -> str:
    if backlog is None:
        return "&ndash;"
    if backlog == 0:
        return "none"
    return "%s entr%s, oldest %s" % ("{:,}".format(backlog), "y" if backlog == 1 else "ies",
                                    ago_text(seconds))


def _searches_html(searches, now) -> str:
    """A base table's search indexes: phase, lag (its change feed's), size."""
    rows = [('<span class="mono" id="%s">%s</span>' % (e(_search_anchor(s["name"])),
                                                        e(s["name"])),
             e(_SEARCH_PHASES.get(s["phase"], s["phase"])), clip(_fields_text(s["fields"])),
             "forever" if s["time_to_live"] in (None, -1) else span_text(s["time_to_live"]),
             _lag_text(s["backlog"], s["lag_seconds"]),
             "{:,}".format(s["documents"]) if s["documents"] is not None else "&ndash;",
             human_bytes(s["storage_bytes"]) if s["storage_bytes"] is not None else "in memory")
            for s in searches]
    return "<h2>Search indexes (%d)</h2>" % len(searches) + table_html(
        ("Search index", "Sync phase", "Fields", "Time to live", "Lag (feed entries pending)",
         "Documents", "Size"), rows, "searches", ("", "", "key", "", "", "num", "num"))


def _feed_html(feed, has_global, has_search, now) -> str:
    """How far behind a base table's change feed is: the lag of its global
    and search indexes (the writers apply local indexes and the stream)."""
    who = ("global and search indexes" if has_global else "search indexes") if has_search \
        else "global indexes"
    where = '<span class="mono">%s</span>, %s in %d region%s' % (
        e(feed["table"]), human_bytes(feed["stored_bytes"] + feed["memtable_bytes"]),
        feed["regions"], "" if feed["regions"] == 1 else "s")
    if feed["backlog"] is None:
        lag = "local indexes only: each write updates them before it returns"
    elif feed["backlog"] == 0:
        lag = "<b>nothing pending</b>: the %s hold every write" % who
    else:
        lag = "<b>%s entr%s pending</b>: the %s' lag in rows, the oldest written " \
              "%s" % ("{:,}".format(feed["backlog"]), "y" if feed["backlog"] == 1 else "ies",
                      who, ago_text(now - feed["oldest_pending"]))
    return '<p class="feed" id="feed">Change feed %s: %s.</p>' % (where, lag)


def _stream_html(stream) -> str:
    """A table's stream: its id, shards (one per region) and log."""
    row = ('<span class="mono">%s</span>' % e(stream["stream_id"]),
           "%d h" % stream["expiration_hours"], str(stream["shards"]), str(stream["open_shards"]),
           '<span class="mono">%s</span>' % e(stream["table"]),
           human_bytes(stream["stored_bytes"] + stream["memtable_bytes"]))
    return ('<h2 id="stream">Stream</h2><p class="note">A shard per region: a split closes its '
            'region\'s shard and opens one per daughter.</p>' + table_html(
                ("Stream ID", "Records kept", "Shards", "Open shards", "Log", "Log size"), [row],
                "stream", ("", "num", "num", "num", "", "num")))


def _facts(facts) -> str:
    return '<dl class="facts">%s</dl>' % "".join("<dt>%s</dt><dd>%s</dd>" % (e(k), v)
                                                  for k, v in facts)


def _pk_text(primary_key) -> str:
    return ", ".join("%s %s" % (e(c[0]), e(" ".join(c[1:]))) for c in primary_key)
