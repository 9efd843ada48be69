"""The operator's web console and ``/metrics``, served by ``regions-server``
on the wire API's port for ``GET`` requests (the wire API stays on POST).

Pages (server-rendered HTML, no JavaScript; each has a JSON twin with
``?format=json``):

- ``/``: overview: instance, data directory, uptime, durability mode,
  requests and errors per second over the last minute, block cache, split
  counters, and every table with its row-key schema, region count, stored
  and memtable bytes.
- ``/tables/<name>``: schema and options, the split policy, regions in key
  order (start/end keys as typed partition-key values, state, stored bytes,
  store files per level, memtable bytes, reads/writes per second, split
  threshold, split blocker with its hot key), bars of region sizes and write
  rates, and the table's recent splits.
- ``/tables/<name>/rows``: a read-only row browser: GetRange with typed
  start/end keys (``start.<pk column>``, ``end.<pk column>``; empty, INF_MIN
  or INF_MAX), ``direction``, ``limit``, ``columns`` (comma-separated), a link
  to the next page; or GetRow with ``get=1`` and ``pk.<pk column>``.
  Key values are typed as text: INTEGER in decimal, BINARY in hex.
- ``/metrics``: Prometheus' text format (``regions.otsserver.metrics``).
- ``/static/<file>``: the stylesheet, shipped in the package
  (``console_static/``).

Every number comes from ``OTSClient.metrics()`` (regions.metrics); the
console only formats.  Every value shown is user data and escaped.

Access: when the server listens on a loopback address everything is open;
otherwise every GET needs HTTP basic auth with one of the server's access key
id / secret pairs (401 otherwise).

Thread-safety: ``handle`` may be called from many threads; a sampler thread
reads the region counters every ``SAMPLE_SECONDS`` so that per-region rates
exist before anyone opens a page.  ``close()`` stops it.
"""
from __future__ import annotations

import base64
import datetime
import hmac
import html
import ipaddress
import json
import threading
import time
from importlib import resources
from typing import NamedTuple
from urllib.parse import parse_qs, quote, urlencode, urlsplit, unquote

from regions.tablestore import pkcodec
from regions.tablestore.errors import OTSClientError, OTSServiceError
from regions.tablestore.metadata import INF_MAX, INF_MIN, Direction

SAMPLE_SECONDS = 2.0
#: Pages that show the server's numbers (/metrics, the overview, a table) are
#: rendered at most once per this many seconds (per page and format): a scrape
#: every 100 ms costs one rendering a second.  The row browser is never cached.
RENDER_SECONDS = 1.0
CUT_CHARS = 200          # longer strings are cut (their length is shown)
CUT_BYTES = 64           # longer binaries are cut
DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
STATIC = "console_static"
_STATIC_TYPES = {".css": "text/css; charset=utf-8", ".png": "image/png"}
HTML = "text/html; charset=utf-8"
JSON = "application/json; charset=utf-8"


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


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


# -- HTML helpers -------------------------------------------------------------
def e(value) -> str:
    return html.escape(str(value), quote=True)


def show(t: dict) -> str:
    """HTML of a typed value."""
    kind = t["type"]
    if kind in ("INF_MIN", "INF_MAX"):
        return '<span class="inf">%s</span>' % kind
    text = e(t["value"]) if kind != "STRING" else "&quot;%s&quot;" % e(t["value"])
    if t.get("cut"):
        unit = "bytes" if kind == "BINARY" else "chars"
        text += '<span class="cut">&hellip; (%d %s)</span>' % (t["length"], unit)
    return '<span class="v %s" title="%s">%s</span>' % (kind.lower(), kind, text)


def human_bytes(n) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024
    return str(n)


def rate(x) -> str:
    return "&ndash;" if x is None else "%.1f" % x


def bar(value, top, cls) -> str:
    pct = 0.0 if not top or not value else max(0.5, 100.0 * value / top)
    return '<div class="bar %s"><span style="width:%.1f%%"></span></div>' % (cls, pct)


def table_html(headers, rows, cls="") -> str:
    out = ['<table class="%s"><thead><tr>' % cls]
    out += ["<th>%s</th>" % e(h) for h in headers]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join("<td>%s</td>" % c for c in row) + "</tr>")
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
                return Reply(200, CONTENT_TYPE, exposition(self.client))
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
        ext = name[name.rfind("."):] if "." in name else ""
        if "/" in name or name.startswith(".") or ext not in _STATIC_TYPES:
            raise _Fail(404, "No static file %s" % name)
        try:
            return Reply(200, _STATIC_TYPES[ext], static_file(name),
                         (("Cache-Control", "max-age=300"),))
        except (FileNotFoundError, IsADirectoryError):
            raise _Fail(404, "No static file %s" % name) from None

    # -- data of the pages ------------------------------------------------------
    def _metrics(self):
        return self.client.metrics()

    def overview(self) -> dict:
        m = self._metrics()
        server, api = m["server"], m["api"]
        tables = []
        for name, schema in m["tables"].items():
            regs = server["tables"].get(name, [])
            tables.append({"name": name, "primary_key": schema["primary_key"],
                           "regions": len(regs),
                           "stored_bytes": sum(r["size_bytes"] for r in regs),
                           "memtable_bytes": sum(r["memtable_bytes"] for r in regs)})
        splits = server["splits"]
        return {"instance": self.instance, "data_directory": server["path"],
                "uptime_seconds": server["uptime_seconds"],
                "durability": "sync" if server["sync"] else "async",
                "requests_per_second": api["requests_per_second"],
                "errors_per_second": api["errors_per_second"],
                "requests_total": sum(api["requests"].values()),
                "errors_total": sum(sum(c.values()) for c in api["errors"].values()),
                "block_cache": server["block_cache"],
                "splits": {k: splits[k] for k in ("started", "finished", "rolled_back")},
                "tables": tables}

    def table(self, name: str) -> dict:
        m = self._metrics()
        schema = m["tables"].get(name)
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
                   "time": datetime.datetime.fromtimestamp(s["time"], datetime.timezone.utc)
                   .isoformat(timespec="seconds"),
                   "duration_seconds": s["duration_seconds"]}
                  for s in m["server"]["splits"]["recent"] if s["table"] == name]
        return {"name": name, **schema, "split_policy": m["server"]["split_policy"],
                "regions": regions, "recent_splits": splits}

    def _schema(self, name):
        """[(pk name, pk type)] of the table (404 if none)."""
        try:
            desc = self.client.describe_table(name)
        except (OTSServiceError, OTSClientError):
            raise _Fail(404, "No table %s" % name) from None
        return [(c[0], c[1]) for c in desc.table_meta.schema_of_primary_key]

    def rows(self, name: str, q: dict) -> dict:
        pk = self._schema(name)
        columns = [c.strip() for c in q.get("columns", "").split(",") if c.strip()] or None
        try:
            if q.get("get"):
                key = [(n, parse_key_value(q.get("pk." + n, ""), t, None)) for n, t in pk]
                missing = [n for n, v in key if v is None]
                if missing:
                    raise _Fail(400, "GetRow needs every primary key column: %s"
                                % ", ".join(missing))
                _, row, _ = self.client.get_row(name, key, columns_to_get=columns)
                return {"table": name, "mode": "GetRow", "primary_key": self._pk_typed(key),
                        "columns_to_get": columns,
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
        return {"table": name, "mode": "GetRange", "direction": direction, "limit": limit,
                "columns_to_get": columns, "start": self._pk_typed(start),
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
        facts = [("Instance", e(d["instance"])), ("Data directory", e(d["data_directory"])),
                 ("Uptime", "%d s" % d["uptime_seconds"]),
                 ("Durability", "sync (WAL fsynced per write)" if d["durability"] == "sync"
                  else "async (WAL handed to the OS per write; survives kill -9)"),
                 ("Requests / s (last minute)", "%.2f" % d["requests_per_second"]),
                 ("Errors / s (last minute)", "%.2f" % d["errors_per_second"]),
                 ("Requests / errors since start", "%d / %d" % (d["requests_total"],
                                                                 d["errors_total"])),
                 ("Block cache", "%s of %s, %d hits, %d misses" % (
                     human_bytes(d["block_cache"]["usage"]),
                     human_bytes(d["block_cache"]["capacity"]),
                     d["block_cache"]["hits"], d["block_cache"]["misses"])),
                 ("Splits", "%(started)d started, %(finished)d finished, %(rolled_back)d rolled back"
                  % d["splits"])]
        body = '<dl class="facts">%s</dl>' % "".join(
            "<dt>%s</dt><dd>%s</dd>" % (e(k), v) for k, v in facts)
        rows = [('<a class="table-link" href="/tables/%s">%s</a>' % (quote(t["name"], safe=""),
                                                                   e(t["name"])),
                 ", ".join("%s %s" % (e(c[0]), e(" ".join(c[1:]))) for c in t["primary_key"]),
                 str(t["regions"]), human_bytes(t["stored_bytes"]),
                 human_bytes(t["memtable_bytes"]))
                for t in d["tables"]]
        body += "<h2>Tables</h2>" + table_html(
            ("Table", "Primary key", "Regions", "Stored", "Memtable"), rows, "tables") \
            if rows else "<h2>Tables</h2><p>No tables.</p>"
        body += '<p class="links"><a href="/?format=json">JSON</a> &middot; ' \
                '<a href="/metrics">Prometheus metrics</a></p>'
        return page("Overview", body)

    def _table_html(self, d) -> bytes:
        name = d["name"]
        q = quote(name, safe="")
        pk = ", ".join("%s %s" % (e(c[0]), e(" ".join(c[1:]))) for c in d["primary_key"])
        facts = [("Primary key", pk),
                 ("Defined columns", e(", ".join("%s %s" % tuple(c) for c in d["defined_columns"]))
                  or "&ndash;"),
                 ("Time to live", "forever" if d["time_to_live"] == -1
                  else "%d s" % d["time_to_live"]),
                 ("Max versions", str(d["max_versions"])),
                 ("Reserved CU (read / write)", "%d / %d" % (d["reserved_read_cu"],
                                                             d["reserved_write_cu"])),
                 ("Split policy", e(d["split_policy"]))]
        body = '<dl class="facts">%s</dl>' % "".join(
            "<dt>%s</dt><dd>%s</dd>" % (e(k), v) for k, v in facts)
        body += '<p class="links"><a id="browse" href="/tables/%s/rows">Browse rows</a> &middot; ' \
                '<a href="/tables/%s?format=json">JSON</a></p>' % (q, q)
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
            rows.append((str(r["region_id"]), show(r["start"]), show(r["end"]), e(r["state"]),
                         human_bytes(r["stored_bytes"]),
                         " ".join("L%d:%d" % (i, n) for i, n in enumerate(r["files_per_level"]) if n)
                         or "&ndash;",
                         human_bytes(r["memtable_bytes"]), rate(r["reads_per_second"]),
                         rate(r["writes_per_second"]),
                         human_bytes(r["split_threshold"]) if r["split_threshold"] is not None
                         else "never", blocker,
                         bar(r["stored_bytes"] + r["memtable_bytes"], top_size, "size"),
                         bar(r["writes_per_second"], top_rate, "writes")))
        body += "<h2>Regions (%d)</h2>" % len(regs) + table_html(
            ("Id", "Start", "End", "State", "Stored", "Files", "Memtable", "Reads/s", "Writes/s",
             "Splits at", "Split blocker", "Size", "Write rate"), rows, "regions")
        splits = [(str(s["parent"]), ", ".join(str(x) for x in s["daughters"]),
                   show(s["split_key"]), e(s["time"]), "%.3f s" % s["duration_seconds"])
                  for s in d["recent_splits"]]
        body += "<h2>Recent splits</h2>" + (table_html(
            ("Parent", "Daughters", "Split key", "Time (UTC)", "Duration"), splits, "splits")
            if splits else "<p>No split since the server started.</p>")
        return page("Table " + name, body, (("/tables/" + q, name),))

    def _rows_html(self, d) -> bytes:
        name = d["table"]
        q = quote(name, safe="")
        pk_names = [c[0] for c in d.get("start") or d.get("primary_key")]
        form = ['<form class="range" method="get" action="/tables/%s/rows">' % q]
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
        form.append('<label>Direction <select name="direction"><option%s>FORWARD</option>'
                    '<option%s>BACKWARD</option></select></label>'
                    % ("" if not fwd else " selected", " selected" if not fwd else ""))
        form.append('<label>Limit <input name="limit" size="5" value="%s"></label>'
                    % e(d.get("limit", DEFAULT_LIMIT)))
        form.append('<label>Columns <input name="columns" value="%s"></label>'
                    % e(",".join(d["columns_to_get"] or ())))
        form.append('<button id="range-go" type="submit">GetRange</button></form>')
        form.append('<form class="getrow" method="get" action="/tables/%s/rows">'
                    '<input type="hidden" name="get" value="1"><fieldset><legend>GetRow</legend>'
                    % q)
        for n in pk_names:
            form.append('<label>%s <input name="%s"></label>' % (e(n), e("pk." + n)))
        form.append('<button id="getrow-go" type="submit">GetRow</button></fieldset></form>')
        body = "".join(form)
        out = []
        for row in d["rows"]:
            keys = "".join("<div>%s = %s</div>" % (e(n), show(v)) for n, v in row["primary_key"])
            attrs = "".join("<div>%s = %s</div>" % (e(a[0]), show(a[1]))
                            for a in row["attributes"]) or "&ndash;"
            out.append((keys, attrs))
        body += "<h2>%s: %d row%s</h2>" % (e(d["mode"]), len(out), "" if len(out) == 1 else "s")
        body += table_html(("Primary key", "Attributes"), out, "rows") if out else \
            "<p>No rows.</p>"
        if d.get("next_query"):
            body += '<p><a id="next-page" href="/tables/%s/rows?%s">Next page &rsaquo;</a> ' \
                    '(next start key: %s)</p>' % (q, e(d["next_query"]), ", ".join(
                        "%s = %s" % (e(n), show(v)) for n, v in d["next_start"]))
        return page("Rows of " + name, body, (("/tables/" + q, name), ("/tables/%s/rows" % q,
                                                                        "rows")))
