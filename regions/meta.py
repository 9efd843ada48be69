"""Meta: the server's catalogue of tables, regions, split parents and split
procedures in flight (HBase's ``hbase:meta`` plus its procedure store).

On-disk format: one file ``META`` in the server directory, UTF-8 JSON,
replaced whole by ``fs.write_atomic`` (temp file, fsync, rename, directory
fsync), so a reader sees the old or the new document, never a mix::

    {
      "format": 3,                      # never renumber; 1 (no checksum) and 2 (no
                                        # split history) are still read
      "checksum": 1234567,              # zlib.crc32 of this document without the field,
                                        # written as here (formats 2 and 3)
      "epoch": 17,                      # +1 on every write
      "next_region_id": 9,              # region ids are never reused
      "tables": {
        "<name>": {
          "attributes": {...},          # the caller's JSON object (Tablestore schema)
          "regions": [                  # sorted by start key, contiguous
            {"id": 3, "start": "<hex>", "end": "<hex>", "state": "OPEN"}
          ],                            # "" = unbounded; state OPEN or SPLITTING
          "splits": [                   # the table's last SPLIT_HISTORY splits, oldest
            {"parent": 2, "daughters": [3, 4], "split_key": "<hex>",   # first (format 3;
             "time": 1717236219.123, "duration_seconds": 0.052}      # absent: none)
          ]
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

A split's history entry is written by the split's point-of-no-return write
(``MetaDoc.record_split``, called by regions/procedure.py), so it costs no
write of its own and a split that meta records always has its entry:
``time`` is the wall-clock time of that write (seconds since the epoch),
``duration_seconds`` the time from the split's start to it.

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

__all__ = ["Meta", "RegionRecord", "FORMAT", "SPLIT_HISTORY", "check_layout", "region_dir_name"]

FORMAT = 3
_READ_FORMATS = (1, 2, 3)               # 1: no checksum; 2: no split history
_UNCHECKED_FORMAT = 1                   # written before META had a checksum
#: Splits kept per table in meta (older ones are dropped as new ones come).
SPLIT_HISTORY = 50
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
        self.tables = {}        # name -> {"attributes": dict, "regions": [RegionRecord],
                                #          "splits": [split, ...] (may be absent: none)}
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

    def record_split(self, table: str, parent: int, daughters, split_key: bytes, time: float,
                     duration_seconds: float) -> None:
        """Append a split to the table's history, keeping the last ``SPLIT_HISTORY``."""
        history = self.tables[table].setdefault("splits", [])
        history.append({"parent": parent, "daughters": list(daughters), "split_key": split_key,
                        "time": round(time, 3), "duration_seconds": round(duration_seconds, 6)})
        del history[:-SPLIT_HISTORY]

    def split_history(self, table: str) -> list:
        """The table's recorded splits, oldest first (``split_key`` as bytes)."""
        return self.tables[table].get("splits", [])

    def to_bytes(self) -> bytes:
        doc = {
            "format": FORMAT,
            "epoch": self.epoch,
            "next_region_id": self.next_region_id,
            "tables": {name: {"attributes": t["attributes"],
                              "regions": [r.to_json() for r in t["regions"]],
                              "splits": [dict(s, split_key=s["split_key"].hex())
                                         for s in t.get("splits", ())]}
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
            if d.get("format") not in _READ_FORMATS:
                raise MetaCorruptionError(f"{where}: unknown format {d.get('format')!r}")
            if d["format"] != _UNCHECKED_FORMAT and d.pop("checksum", None) != _checksum(d):
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
                m.tables[name] = {"attributes": t["attributes"], "regions": regions,
                                  "splits": [_split_from_json(x) for x in t.get("splits", ())]}
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


def _split_from_json(x) -> dict:
    daughters = [int(i) for i in x["daughters"]]
    if len(daughters) != 2:
        raise ValueError(f"a split history entry without two daughters: {x!r}")
    return {"parent": int(x["parent"]), "daughters": daughters,
            "split_key": bytes.fromhex(x["split_key"]), "time": float(x["time"]),
            "duration_seconds": float(x["duration_seconds"])}


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
