"""A table's schema and options, and the form in which they are stored.

A Tablestore table is stored as a region-server table whose attributes
(``RegionServer.table_attributes``, kept in the region meta) hold this
record under the key ``ATTRIBUTE``, beside the reserved throughput and the
creation time::

    {"tablestore": {"format": 1,
                    "names": ["uid", "oid"], "types": ["INTEGER", "STRING"],
                    "auto_incr": null, "ttl": -1, "max_versions": 1,
                    "deviation": 86400, "allow_update": true,
                    "defined": [["name", "STRING"]],
                    "indexes": [{"name": "by_name", "type": "global",
                                 "columns": ["name"], "attributes": []}]},
     "reserved": [0, 0], "created": 1764000000}

The serialisation is explicit and versioned: ``Schema.to_json`` writes every
field by name with ``format``; ``Schema.from_json`` reads exactly the fields of
the format it finds and refuses an unknown format or field, so renaming an
attribute of the class cannot silently change what is stored or read.  Stores
written before the format number existed carry the fields of format 1 without
it, and read as format 1.  Format 2 adds ``indexes``, the table's secondary
indexes (indexes.py, ``IndexDef.to_json``); a record without indexes is still
written as format 1, so a store without indexes stays readable by the
versions before them.  Format 3 adds ``update_full_row`` (the table option,
set at CreateTable only), written only when it is true.
"""
from .errors import service_error

__all__ = ["Schema", "ATTRIBUTE", "FORMAT", "table_attributes"]

ATTRIBUTE = "tablestore"  # the key of the schema record in the table's attributes
FORMAT = 3

_REQUIRED = object()
# Format 1's fields, in the order the record lists them, with their defaults.
_FIELDS_1 = (("names", _REQUIRED), ("types", _REQUIRED), ("auto_incr", None), ("ttl", -1),
             ("max_versions", 1), ("deviation", 86400), ("allow_update", True), ("defined", ()))
_FIELDS = {1: _FIELDS_1, 2: _FIELDS_1 + (("indexes", ()),),
           3: _FIELDS_1 + (("indexes", ()), ("update_full_row", False))}


class Schema:
    """A table's primary key (``names``, ``types``, the ``auto_incr`` column's
    index or None), its options (``ttl`` in seconds or -1, ``max_versions``,
    the version ``deviation`` in seconds, ``allow_update``, ``update_full_row``)
    and its defined columns (``(name, type)`` pairs) and its secondary
    ``indexes`` (their stored records, indexes.IndexDef.to_json)."""

    __slots__ = ("names", "types", "auto_incr", "ttl", "max_versions", "deviation",
                 "allow_update", "defined", "indexes", "update_full_row")

    def __init__(self, names, types, auto_incr, ttl=-1, max_versions=1, deviation=86400,
                 allow_update=True, defined=(), indexes=(), update_full_row=False):
        self.names, self.types, self.auto_incr = list(names), list(types), auto_incr
        self.ttl, self.max_versions, self.deviation = ttl, max_versions, deviation
        self.allow_update, self.defined = allow_update, [tuple(d) for d in defined]
        self.indexes = [dict(i) for i in indexes]
        self.update_full_row = bool(update_full_row)

    def partition(self) -> "Schema":
        """The schema of the partition key alone (the first primary-key column)."""
        return Schema(self.names[:1], self.types[:1], None)

    def _replace(self, **changes) -> "Schema":
        fields = {name: getattr(self, name) for name, _ in _FIELDS[FORMAT]}
        fields.update(changes)
        return Schema(**fields)

    def with_options(self, ttl=None, max_versions=None, deviation=None, allow_update=None) -> "Schema":
        """A copy with the given table options changed (None: unchanged), as UpdateTable does."""
        changed = {"ttl": ttl, "max_versions": max_versions, "deviation": deviation,
                   "allow_update": allow_update}
        return self._replace(**{k: v for k, v in changed.items() if v is not None})

    def with_defined(self, defined) -> "Schema":
        """A copy whose predefined columns are ``defined``."""
        return self._replace(defined=defined)

    def with_indexes(self, indexes) -> "Schema":
        """A copy listing ``indexes`` (stored index records) instead."""
        return self._replace(indexes=indexes)

    def to_json(self) -> dict:
        """The stored record: format 3 with update_full_row, else 2 with indexes,
        else 1."""
        fmt = 3 if self.update_full_row else 2 if self.indexes else 1
        record = {"format": fmt, "names": list(self.names),
                  "types": list(self.types), "auto_incr": self.auto_incr, "ttl": self.ttl,
                  "max_versions": self.max_versions, "deviation": self.deviation,
                  "allow_update": self.allow_update, "defined": [list(d) for d in self.defined]}
        if fmt >= 2:
            record["indexes"] = [dict(i) for i in self.indexes]
        if fmt >= 3:
            record["update_full_row"] = True
        return record

    @classmethod
    def from_json(cls, data: dict, table: str = "?") -> "Schema":
        """Read a stored record; an unknown format or field, or a missing one,
        is an OTSServiceError naming it and ``table`` (the store was written
        by a newer version, or damaged)."""
        def bad(problem):
            return service_error("schema_record", table=table, problem=problem)

        fmt = data.get("format", 1)
        if fmt not in _FIELDS:
            raise bad("format %r, and this version reads formats 1 to %d" % (fmt, FORMAT))
        unknown = sorted(set(data) - {name for name, _ in _FIELDS[fmt]} - {"format"})
        if unknown:
            raise bad("unknown fields %s in format %d" % (", ".join(unknown), fmt))
        fields = {}
        for name, default in _FIELDS[fmt]:
            if name in data:
                fields[name] = data[name]
            elif default is _REQUIRED:
                raise bad("no field %r in format %d" % (name, fmt))
            else:
                fields[name] = default
        return cls(**fields)

    def __eq__(self, other):
        return isinstance(other, Schema) and self.to_json() == other.to_json()

    def __repr__(self):
        return "Schema(%r)" % (self.to_json(),)


def table_attributes(schema: Schema, reserved, created: int) -> dict:
    """The attributes a new table is stored with (see the module docstring)."""
    return {ATTRIBUTE: schema.to_json(), "reserved": list(reserved), "created": created}
