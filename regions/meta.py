"""Meta: the server's catalogue of tables, regions, split parents and split
procedures in flight (HBase's ``hbase:meta`` plus its procedure store).

On-disk format: one file ``META`` in the server directory, UTF-8 JSON,
replaced whole by ``fs.write_atomic`` (temp file, fsync, rename, directory
fsync), so a reader sees the old or the new document, never a mix::

    {
      "format": 2,                      # never renumber; 1 (no checksum) is still read
      "checksum": 1234567,              # zlib.crc32 of this document without the field,
                                        # written as here (format 2 only)
      "epoch": 17,                      # +1 on every write
      "next_region_id": 9,              # region ids are never reused
      "tables": {
        "<name>": {
          "attributes": {...},          # the caller's JSON object (Tablestore schema)
          "regions": [                  # sorted by start key, contiguous
            {"id": 3, "start": "<hex>", "end": "<hex>", "state": "OPEN"}
          ]                             # "" = unbounded; state OPEN or SPLITTING
        }
      },
      "parents": [                      # split parents kept until no daughter
        {"table": "<name>", "id": 2, "daughters": [3, 4]}   # refers to their files
      ],
      "procedures": [                   # splits in flight
        {"kind": "split", "table": "<name>", "parent": 2, "split_key": "<hex>",
         "daughters": [3, 4], "step": "prepared" | "meta_updated"}
      ]
    }

A region's store lives in ``regions/r<id>`` under the server directory.

Thread-safety: ``Meta`` is not locked; the server serialises ``update`` calls
under its own lock.  ``update`` is copy-on-write: the change is applied to a
copy, written, and only then becomes ``doc``; a failed write leaves both the
file and ``doc`` as they were.
"""
import copy
import json
import os
import zlib

from .errors import MetaCorruptionError

__all__ = ["Meta", "RegionRecord", "FORMAT", "check_layout", "region_dir_name"]

FORMAT = 2
_UNCHECKED_FORMAT = 1                   # written before META had a checksum
META_FILE = "META"
OPEN, SPLITTING = "OPEN", "SPLITTING"     # a region record's persisted state
STATES = (OPEN, SPLITTING)
STEPS = ("prepared", "meta_updated")


def region_dir_name(region_id: int) -> str:
    """The one place that names a region's directory."""
    return f"r{region_id}"


class RegionRecord:
    """One region as meta records it: ``[start, end)``, ``b""`` = unbounded."""

    __slots__ = ("id", "start", "end", "state")

    def __init__(self, id, start, end, state=OPEN):
        self.id, self.start, self.end, self.state = id, start, end, state

    def to_json(self):
        return {"id": self.id, "start": self.start.hex(), "end": self.end.hex(), "state": self.state}

    @classmethod
    def from_json(cls, d):
        return cls(d["id"], bytes.fromhex(d["start"]), bytes.fromhex(d["end"]), d["state"])

    def __repr__(self):
        return f"RegionRecord({self.id}, {self.start!r}, {self.end!r}, {self.state})"


def check_layout(table: str, regions) -> None:
    """Raise ``ValueError`` unless ``regions`` (records or infos with ``start``/
    ``end``) are sorted, contiguous, non-overlapping and cover the key space."""
    if not regions:
        raise ValueError(f"table {table!r} has no regions")
    if regions[0].start != b"":
        raise ValueError(f"table {table!r}: first region starts at {regions[0].start!r}, not b''")
    if regions[-1].end != b"":
        raise ValueError(f"table {table!r}: last region ends at {regions[-1].end!r}, not b''")
    for a, b in zip(regions, regions[1:]):
        if a.end == b"" or a.end != b.start:
            raise ValueError(f"table {table!r}: region ending at {a.end!r} is followed by "
                             f"one starting at {b.start!r} (gap or overlap)")
    for r in regions:
        if r.end and r.start >= r.end:
            raise ValueError(f"table {table!r}: empty region [{r.start!r}, {r.end!r})")


class MetaDoc:
    """The parsed meta document (plain data; see the module docstring)."""

    def __init__(self):
        self.epoch = 0
        self.next_region_id = 1
        self.tables = {}        # name -> {"attributes": dict, "regions": [RegionRecord]}
        self.parents = []       # [{"table", "id", "daughters"}]
        self.procedures = []    # [{"kind", "table", "parent", "split_key": bytes, "daughters", "step"}]

    def allocate_id(self) -> int:
        rid = self.next_region_id
        self.next_region_id += 1
        return rid

    def region_ids(self) -> set:
        """Ids whose directories meta still needs (regions, parents, procedures)."""
        ids = {r.id for t in self.tables.values() for r in t["regions"]}
        ids.update(p["id"] for p in self.parents)
        for proc in self.procedures:
            ids.add(proc["parent"])
            ids.update(proc["daughters"])
        return ids

    def to_bytes(self) -> bytes:
        doc = {
            "format": FORMAT,
            "epoch": self.epoch,
            "next_region_id": self.next_region_id,
            "tables": {name: {"attributes": t["attributes"],
                              "regions": [r.to_json() for r in t["regions"]]}
                       for name, t in self.tables.items()},
            "parents": self.parents,
            "procedures": [dict(p, split_key=p["split_key"].hex()) for p in self.procedures],
        }
        doc["checksum"] = _checksum(doc)
        return _dump(doc)

    @classmethod
    def from_bytes(cls, data: bytes, where: str = "META") -> "MetaDoc":
        try:
            d = json.loads(data.decode())
            if d.get("format") not in (FORMAT, _UNCHECKED_FORMAT):
                raise MetaCorruptionError(f"{where}: unknown format {d.get('format')!r}")
            if d["format"] == FORMAT and d.pop("checksum", None) != _checksum(d):
                raise MetaCorruptionError(f"{where}: checksum mismatch")
            m = cls()
            m.epoch = int(d["epoch"])
            m.next_region_id = int(d["next_region_id"])
            for name, t in d["tables"].items():
                regions = [RegionRecord.from_json(r) for r in t["regions"]]
                check_layout(name, regions)
                if not isinstance(t["attributes"], dict):
                    raise ValueError(f"table {name!r}: attributes are not an object")
                if any(r.state not in STATES for r in regions):
                    raise ValueError(f"table {name!r}: unknown region state")
                m.tables[name] = {"attributes": t["attributes"], "regions": regions}
            m.parents = [{"table": p["table"], "id": int(p["id"]),
                          "daughters": [int(x) for x in p["daughters"]]} for p in d["parents"]]
            for p in d["procedures"]:
                if p["kind"] != "split" or p["step"] not in STEPS:
                    raise ValueError(f"unknown procedure {p!r}")
                m.procedures.append(dict(p, split_key=bytes.fromhex(p["split_key"])))
            if m.region_ids() and max(m.region_ids()) >= m.next_region_id:
                raise ValueError("a region id is >= next_region_id")
        except MetaCorruptionError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
            raise MetaCorruptionError(f"{where}: {e}") from e
        return m

    def clone(self) -> "MetaDoc":
        return copy.deepcopy(self)


def _dump(doc: dict) -> bytes:
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def _checksum(doc: dict) -> int:
    """The checksum of a document (without its "checksum" field): a flipped
    digit of a region id or a letter of a table name is still valid JSON."""
    return zlib.crc32(_dump(doc))


class Meta:
    """The meta file of one server directory and its current document."""

    def __init__(self, fs, root: str, doc: MetaDoc):
        self._fs = fs
        self.path = os.path.join(root, META_FILE)
        self.doc = doc

    @classmethod
    def open(cls, fs, root: str) -> "Meta":
        """Load ``root/META``, or start an empty (unsaved) document if absent."""
        path = os.path.join(root, META_FILE)
        if not fs.exists(path):
            return cls(fs, root, MetaDoc())
        return cls(fs, root, MetaDoc.from_bytes(fs.read_all(path), path))

    def update(self, change) -> None:
        """Apply ``change(doc)`` to a copy, persist it atomically, then adopt it."""
        new = self.doc.clone()
        change(new)
        new.epoch += 1
        self._fs.write_atomic(self.path, new.to_bytes())
        self.doc = new
