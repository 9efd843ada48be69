"""A tiny in-memory stand-in for regions.RegionServer (the interface only).

Used by the fast unit tests of pure Tablestore logic; the integration tests
run against the real RegionServer.  Not thread-safe beyond the GIL.
"""
from collections import namedtuple

from sortedcontainers import SortedDict

RegionInfo = namedtuple("RegionInfo", "start_key end_key")


class FakeServer:
    def __init__(self):
        self.tables = {}

    @classmethod
    def open(cls, path=None, options=None):
        return cls()

    def create_table(self, name, split_keys=None, attributes=None):
        if name in self.tables:
            raise KeyError(name)
        self.tables[name] = {"data": SortedDict(), "splits": list(split_keys or []),
                             "attrs": dict(attributes or {}), "config": {}}

    def table_attributes(self, name):
        return dict(self.tables[name]["attrs"])

    def set_table_attributes(self, name, attributes):
        self.tables[name]["attrs"] = dict(attributes)

    def delete_table(self, name):
        del self.tables[name]

    def list_tables(self):
        return sorted(self.tables)

    def regions(self, name):
        bounds = [b""] + self.tables[name]["splits"] + [b""]
        return [RegionInfo(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]

    def configure_table(self, name, split_boundary=None, compaction_filter_factory=None,
                        prefix_extractor=None):
        self.tables[name]["config"] = {"split_boundary": split_boundary,
                                       "compaction_filter_factory": compaction_filter_factory,
                                       "prefix_extractor": prefix_extractor}

    def put(self, table, key, value):
        self.tables[table]["data"][bytes(key)] = bytes(value)

    def get(self, table, key):
        return self.tables[table]["data"].get(key)

    def delete(self, table, key):
        self.tables[table]["data"].pop(key, None)

    def write(self, table, pairs):
        data = self.tables[table]["data"]
        for key, value in pairs:
            if value is not None:
                data[key] = value
            else:
                data.pop(key, None)

    def read_range(self, table, start, end):
        return list(self.scan(table, start, end))

    def scan(self, table, start=None, end=None, reverse=False):
        data = self.tables[table]["data"]
        keys = list(data.irange(start, end, inclusive=(True, False), reverse=reverse))
        for k in keys:
            yield k, data[k]

    def compact(self, table):
        """Run the configured compaction filter over all entries (test helper)."""
        factory = self.tables[table]["config"].get("compaction_filter_factory")
        data = self.tables[table]["data"]
        if factory is None:
            return
        f = factory()
        for key in [k for k in list(data) if f(k, data[k])]:
            del data[key]

    def close(self):
        pass


def open_client(path, **server_options):
    """An OTSClient on the real RegionServer when it exists, else on the fake."""
    import regions
    from regions.tablestore import OTSClient
    if hasattr(regions, "RegionServer"):
        opts = None
        if server_options:
            opts = regions.ServerOptions(**server_options)
        return OTSClient(str(path), server_options=opts)
    return OTSClient(str(path), server=FakeServer())
