"""``GET /metrics``: the data API client's numbers in Prometheus' text format.

A ``prometheus_client`` collector reads ``OTSClient.metrics()`` at every
scrape (the one source the console and library users read too) and turns it
into metric families; nothing is counted twice and nothing is written by
hand in the exposition format.  Names follow Prometheus' conventions:

==========================================  =========  ======================
name                                        type       labels
==========================================  =========  ======================
regions_api_requests_total                  counter    api
regions_api_errors_total                    counter    api, code
regions_api_request_duration_seconds        histogram  api
regions_region_reads_total / _writes_total  counter    table, region
regions_region_stored_bytes                 gauge      table, region
regions_region_memtable_bytes               gauge      table, region
regions_region_store_files                  gauge      table, region, level
regions_region_flushes_total                counter    table, region
regions_region_flushed_bytes_total          counter    table, region
regions_region_compactions_total            counter    table, region
regions_region_compacted_bytes_total        counter    table, region
regions_region_wal_appends_total            counter    table, region
regions_region_wal_fsyncs_total             counter    table, region
regions_table_regions                       gauge      table
regions_table_info (always 1)               gauge      table, kind, base
regions_index_feed_backlog                  gauge      table
regions_index_feed_oldest_pending_seconds   gauge      table
regions_search_index_info (always 1)        gauge      table, index, phase
regions_search_index_documents              gauge      table, index
regions_search_index_storage_bytes          gauge      table, index
regions_search_index_sync_backlog           gauge      table, index
regions_search_index_sync_lag_seconds       gauge      table, index
regions_stream_info (always 1)              gauge      table, stream_id
regions_stream_shards / _open_shards        gauge      table
regions_splits_started_total / _finished_total / _rolled_back_total   counter
regions_split_duration_seconds              histogram
regions_block_cache_hits_total / _misses_total                        counter
regions_block_cache_usage_bytes / _capacity_bytes                     gauge
regions_uptime_seconds                      gauge
==========================================  =========  ======================

A region's counters start at zero when its store opens (server start, or a
split creating it); the ``region`` label is the region id, never reused.

Every table of the region server has its series, secondary indexes and their
helper tables too; ``regions_table_info`` tells them apart: ``kind`` is
``table``, ``global_index``, ``local_index``, ``feed`` (a table's change
feed), ``refs`` (an index's base row -> index row map), ``search`` (a search
index's record), ``stream`` (a table's stream log) or ``internal`` (left
by a dropped index), and ``base`` the data table an index or helper serves
(``""`` for a data table), so ``sum by (base)`` of a join gives what a table
costs with its indexes.  Per data table with a global or search index, the
change feed's entries not yet applied (the indexes' lag in rows) and the age
of the oldest of them (0 when none is pending).

Per search index (``index`` its name, ``table`` its data table): its sync
phase (``FULL`` while it loads the table's rows, then ``INCR``), documents,
the bytes of its engine's files (no series for an in-memory server), and its
sync lag: the table's change-feed backlog and the age of its oldest entry
(the feed is shared by the table's global and search indexes, so each index
of a table shows the same two values).  Query latency is the data API's:
every request through the wire, ``Search``, ``ParallelScan`` and
``ComputeSplits`` too, is timed in ``regions_api_request_duration_seconds``
under its API name (per API, not per index).  Per table with a stream: its
id, its shards (one per region, closed ones kept until their records expire)
and those still open.

``prometheus_client`` is an optional dependency (the ``server`` extra);
this module imports it only when first used, and without it a scrape raises
``regions.extras.MissingExtra`` (the console answers 503 with its line).
"""
from __future__ import annotations

import time

from regions.extras import require
from regions.otsserver.console import index_catalogue, table_kinds

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_REGION_COUNTERS = (("reads", "reads", "Client reads served by the region"),
                    ("writes", "writes", "Client writes served by the region"),
                    ("flushes", "flushes", "Memtable flushes of the region's store"),
                    ("flushed_bytes", "bytes_flushed", "Bytes written by flushes"),
                    ("compactions", "compactions", "Compactions of the region's store"),
                    ("compacted_bytes", "bytes_compacted", "Bytes written by compactions"),
                    ("wal_appends", "wal_appends", "WAL records appended"),
                    ("wal_fsyncs", "wal_fsyncs", "WAL fsyncs (group commits of sync writes)"))
_REGION_GAUGES = (("stored_bytes", "size_bytes", "Bytes of the region's table files"),
                  ("memtable_bytes", "memtable_bytes", "Bytes in the region's memtables"))


def _buckets(h):
    """A regions.metrics histogram -> prometheus_client's cumulative buckets."""
    out, total = [], 0
    for bound, n in zip(list(h["buckets"]) + [float("inf")], h["counts"]):
        total += n
        out.append(("+Inf" if bound == float("inf") else repr(float(bound)), total))
    return out


class ClientCollector:
    """A prometheus_client collector over ``client.metrics()``."""

    def __init__(self, client):
        self.client = client

    def collect(self):
        from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                            HistogramMetricFamily)
        m = self.client.metrics()
        api, server = m["api"], m["server"]

        requests = CounterMetricFamily("regions_api_requests", "Requests per API",
                                       labels=["api"])
        for name, n in sorted(api["requests"].items()):
            requests.add_metric([name], n)
        yield requests
        errors = CounterMetricFamily("regions_api_errors", "Failed requests per API and error code",
                                     labels=["api", "code"])
        for name, codes in sorted(api["errors"].items()):
            for code, n in sorted(codes.items()):
                errors.add_metric([name, code], n)
        yield errors
        latency = HistogramMetricFamily("regions_api_request_duration_seconds",
                                        "Time to serve a request in the data API", labels=["api"])
        for name, h in sorted(api["latency"].items()):
            latency.add_metric([name], _buckets(h), h["sum"])
        yield latency

        counters = {key: CounterMetricFamily("regions_region_" + name, doc,
                                             labels=["table", "region"])
                    for name, key, doc in _REGION_COUNTERS}
        gauges = {key: GaugeMetricFamily("regions_region_" + name, doc, labels=["table", "region"])
                  for name, key, doc in _REGION_GAUGES}
        files = GaugeMetricFamily("regions_region_store_files", "Table files per LSM level",
                                  labels=["table", "region", "level"])
        count = GaugeMetricFamily("regions_table_regions", "Regions of the table",
                                  labels=["table"])
        for table, regs in server["tables"].items():
            count.add_metric([table], len(regs))
            for r in regs:
                labels = [table, str(r["region_id"])]
                for key, fam in counters.items():
                    fam.add_metric(labels, r[key])
                for key, fam in gauges.items():
                    fam.add_metric(labels, r[key])
                for level, n in enumerate(r["files_per_level"]):
                    files.add_metric(labels + [str(level)], n)
        yield from counters.values()
        yield from gauges.values()
        yield files
        yield count
        yield from _index_families(self.client, m)

        splits = server["splits"]
        for name, doc in (("started", "Splits started"), ("finished", "Splits finished"),
                          ("rolled_back", "Splits rolled back")):
            yield CounterMetricFamily("regions_splits_" + name, doc, value=splits[name])
        duration = HistogramMetricFamily("regions_split_duration_seconds",
                                         "Duration of splits (finished or rolled back)")
        duration.add_metric([], _buckets(splits["duration"]), splits["duration"]["sum"])
        yield duration
        cache = server["block_cache"]
        yield CounterMetricFamily("regions_block_cache_hits", "Block cache hits",
                                  value=cache["hits"])
        yield CounterMetricFamily("regions_block_cache_misses", "Block cache misses",
                                  value=cache["misses"])
        yield GaugeMetricFamily("regions_block_cache_usage_bytes", "Bytes in the block cache",
                                value=cache["usage"])
        yield GaugeMetricFamily("regions_block_cache_capacity_bytes", "Block cache budget",
                                value=cache["capacity"])
        yield GaugeMetricFamily("regions_uptime_seconds", "Seconds since the server opened",
                                value=server["uptime_seconds"])


def _index_families(client, m):
    """regions_table_info and the change feeds' gauges (module docstring)."""
    from prometheus_client.core import GaugeMetricFamily
    catalogue = index_catalogue(client)
    info = GaugeMetricFamily("regions_table_info", "Each table of the region server: what it is "
                             "(kind) and the data table it serves (base)",
                             labels=["table", "kind", "base"])
    for name, (kind, base) in sorted(table_kinds(m["tables"], m["server"]["tables"],
                                                 catalogue).items()):
        info.add_metric([name, kind, base], 1)
    yield info
    backlog = GaugeMetricFamily("regions_index_feed_backlog", "Change-feed entries of the table "
                                "not yet applied to its global and search indexes",
                                labels=["table"])
    oldest = GaugeMetricFamily("regions_index_feed_oldest_pending_seconds", "Age of the oldest "
                               "change-feed entry not yet applied (0: none)", labels=["table"])
    now = time.time()
    for base, feed in sorted(catalogue["feeds"].items()):
        if feed["backlog"] is not None:       # None: local indexes only, nothing lags
            backlog.add_metric([base], feed["backlog"])
            oldest.add_metric([base], max(0.0, now - feed["oldest_pending"])
                              if feed["oldest_pending"] is not None else 0.0)
    yield backlog
    yield oldest
    yield from _search_families(catalogue, now)


def _search_families(catalogue, now):
    """The search indexes' and the streams' gauges (module docstring)."""
    from prometheus_client.core import GaugeMetricFamily
    labels = ["table", "index"]
    info = GaugeMetricFamily("regions_search_index_info", "Each search index: its data table "
                             "and sync phase (FULL: loading the table's rows, INCR: in step)",
                             labels=labels + ["phase"])
    docs = GaugeMetricFamily("regions_search_index_documents", "Documents in the search index",
                             labels=labels)
    size = GaugeMetricFamily("regions_search_index_storage_bytes", "Bytes of the search "
                             "index's engine files", labels=labels)
    backlog = GaugeMetricFamily("regions_search_index_sync_backlog", "Change-feed entries of "
                                "the table not yet applied to its indexes", labels=labels)
    lag = GaugeMetricFamily("regions_search_index_sync_lag_seconds", "Age of the oldest "
                            "change-feed entry not yet applied to the index (0: none)",
                            labels=labels)
    for base, searches in sorted(catalogue["searches"].items()):
        feed = catalogue["feeds"].get(base) or {}
        for s in searches:
            key = [base, s["name"]]
            info.add_metric(key + [str(s["phase"])], 1)
            if s["documents"] is not None:
                docs.add_metric(key, s["documents"])
            if s["storage_bytes"] is not None:
                size.add_metric(key, s["storage_bytes"])
            if feed.get("backlog") is not None:
                backlog.add_metric(key, feed["backlog"])
                lag.add_metric(key, max(0.0, now - feed["oldest_pending"])
                               if feed["oldest_pending"] is not None else 0.0)
    yield from (info, docs, size, backlog, lag)
    info = GaugeMetricFamily("regions_stream_info", "Each table's stream (its id)",
                             labels=["table", "stream_id"])
    shards = GaugeMetricFamily("regions_stream_shards", "Shards of the table's stream (one per "
                               "region; closed ones kept until their records expire)",
                               labels=["table"])
    open_shards = GaugeMetricFamily("regions_stream_open_shards", "Shards of the table's stream "
                                    "still open (its regions')", labels=["table"])
    for base, stream in sorted(catalogue["streams"].items()):
        info.add_metric([base, str(stream["stream_id"])], 1)
        shards.add_metric([base], stream["shards"])
        open_shards.add_metric([base], stream["open_shards"])
    yield from (info, shards, open_shards)


def exposition(client) -> bytes:
    """The text of one scrape of ``client``; MissingExtra without
    prometheus_client."""
    prometheus_client = require("prometheus_client", "/metrics")
    registry = prometheus_client.CollectorRegistry(auto_describe=False)
    registry.register(ClientCollector(client))
    return prometheus_client.generate_latest(registry)
