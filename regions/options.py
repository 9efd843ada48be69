"""Every tunable of the region server, in one place, each with its reason."""
from dataclasses import dataclass, fields, replace
from typing import Iterable, Optional, Union

from .policy import POLICY_NAMES, SplitPolicy, check_int

__all__ = ["ServerOptions", "parse_bytes"]


@dataclass
class ServerOptions:
    # -- memory -----------------------------------------------------------
    #: Memtable bytes of one region's lsm store before it flushes.  HBase's
    #: 128 MiB flush size scaled to this machine: with many regions the global
    #: budget below is what really bounds memory.
    memtable_bytes: int = 8 << 20
    #: Sum of all regions' memtable bytes the server tolerates; above it the
    #: background worker flushes the largest memtable (HBase's global memstore
    #: limit), so a hundred mostly idle regions do not hold 100 memtables.
    global_memtable_bytes: int = 256 << 20

    # -- splitting --------------------------------------------------------
    #: When regions split: a ``SplitPolicy`` instance, or one of the names
    #: "stepping" (HBase 2.x default), "increasing", "constant", "disabled",
    #: built with the thresholds below.
    split_policy: Union[str, SplitPolicy] = "stepping"
    #: Upper bound of a region's file bytes (HBase ``hbase.hregion.max.filesize``
    #: 10 GiB, scaled down ~20x for a single Python process).
    max_region_bytes: int = 512 << 20
    #: First split threshold of a table with one region; 0 means
    #: 2 x ``memtable_bytes`` (HBase's rule: split after two flushes).
    initial_region_bytes: int = 0
    #: Relative spread of each region's maximum (HBase's 0.25), so regions
    #: growing in step do not all split at once.
    split_jitter: float = 0.25
    #: Most regions the server hosts before auto-split stops (HBase's
    #: ``regionSplitLimit``, 1000): each region costs a memtable, a WAL and
    #: open files.
    max_regions: int = 1000

    # -- descriptors and open tables (regions/descriptors.py) ------------
    #: File descriptors kept out of the regions' budget for connections,
    #: logs and search indexes.  0: a quarter of RLIMIT_NOFILE (at least
    #: 64, at most 4096).  A pre-split or split that would leave fewer is
    #: refused before any file is made.
    descriptor_reserve: int = 0
    #: Tables open at once across all regions (one shared table cache:
    #: each costs a mapping and its index, not a descriptor).  0: the
    #: descriptor budget's size (RLIMIT_NOFILE less the reserve), at most
    #: 32768, half the default ``vm.max_map_count``.
    max_open_tables: int = 0

    # -- background work --------------------------------------------------
    #: Threads that run splits (a split of one table never blocks another's).
    #: 0 runs no background thread at all: tests then call ``maintain()``.
    background_workers: int = 1
    #: Seconds between two passes of the maintenance scan (split checks,
    #: memtable budget, garbage collection of split parents).
    maintenance_interval: float = 0.05
    #: Seconds an operation waits for a region in transition (a split) before
    #: ``RegionBusyError``.  Splits take milliseconds; this only fires when
    #: something is badly wrong, so it is generous.
    busy_wait_seconds: float = 60.0

    # -- storage ----------------------------------------------------------
    #: Default durability of writes, passed to every region's store (see
    #: lsm.Options.sync).  Meta is always written with fsync.
    sync: bool = False
    #: Base ``lsm.Options`` for region stores (block size, compression, ...);
    #: ``memtable_bytes``, ``sync``, ``fs`` and the compaction filter are
    #: always set by the server.  None: lsm's defaults.
    lsm_options: Optional[object] = None
    #: The file-system interface (``lsm.fs.OSFileSystem`` when None); used for
    #: meta and handed to every region's store.
    fs: object = None

    def copy(self, **changes) -> "ServerOptions":
        return replace(self, **changes)

    @classmethod
    def from_settings(cls, settings: Iterable[str], **base) -> "ServerOptions":
        """Options from ``NAME=VALUE`` strings (``regions-server -D``), over
        ``base``: any field but ``lsm_options`` and ``fs``; ``*_bytes`` take
        a KiB/MiB/GiB suffix, booleans true/false.  ValueError names the
        setting that is wrong; the result is validated."""
        settable = {f.name: f for f in fields(cls) if f.name not in ("lsm_options", "fs")}
        values = dict(base)
        for setting in settings:
            name, eq, text = setting.partition("=")
            name, text = name.strip(), text.strip()
            if not eq or name not in settable:
                raise ValueError(f"server option {setting!r}: expected NAME=VALUE with NAME one of "
                                 f"{', '.join(sorted(settable))}")
            try:
                values[name] = _parse_setting(name, settable[name].default, text)
            except ValueError:
                raise ValueError(f"server option {name}: cannot read {text!r} as "
                                 f"{_setting_kind(name, settable[name].default)}") from None
        options = cls(**values)
        options.validate()
        return options

    def initial_bytes(self) -> int:
        return self.initial_region_bytes or 2 * self.memtable_bytes

    def make_policy(self) -> SplitPolicy:
        """The split policy these options describe."""
        p = self.split_policy
        if isinstance(p, SplitPolicy):
            return p
        cls = POLICY_NAMES[p]
        if p == "disabled":
            return cls()
        if p == "constant":
            return cls(self.max_region_bytes, self.split_jitter)
        return cls(self.max_region_bytes, self.initial_bytes(), self.split_jitter)

    def validate(self) -> None:
        """Raise TypeError/ValueError naming the first bad field."""
        for name, minimum in (("memtable_bytes", 1), ("global_memtable_bytes", 1),
                              ("max_region_bytes", 1), ("max_regions", 1),
                              ("initial_region_bytes", 0), ("background_workers", 0),
                              ("descriptor_reserve", 0), ("max_open_tables", 0)):
            check_int(f"ServerOptions.{name}", getattr(self, name), minimum)
        for name in ("maintenance_interval", "busy_wait_seconds"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"ServerOptions.{name} must be a number, got {type(v).__name__}")
            if v <= 0:
                raise ValueError(f"ServerOptions.{name} must be > 0, got {v}")
        if not isinstance(self.split_policy, (str, SplitPolicy)):
            raise TypeError("ServerOptions.split_policy must be a policy name or a SplitPolicy, "
                            f"got {type(self.split_policy).__name__}")
        if isinstance(self.split_policy, str) and self.split_policy not in POLICY_NAMES:
            raise ValueError(f"ServerOptions.split_policy: unknown policy {self.split_policy!r} "
                             f"(known: {', '.join(sorted(POLICY_NAMES))})")
        if not isinstance(self.sync, bool):
            raise TypeError(f"ServerOptions.sync must be a bool, got {type(self.sync).__name__}")
        self.make_policy()  # jitter range and threshold checks


_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
_BYTE_SUFFIXES = {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "K": 1 << 10, "M": 1 << 20,
                  "G": 1 << 30}


def parse_bytes(text: str) -> int:
    """A byte count as ``-D`` and the command lines take it: decimal digits,
    optionally with a binary unit, ``8192``, ``64KiB``, ``5MiB``, ``1GiB`` (or
    K, M, G; any case).  ValueError for anything else (a sign, a fraction,
    another unit); whether 0 is allowed is the caller's question."""
    number, unit = text.strip(), 1
    for suffix, size in _BYTE_SUFFIXES.items():
        if number.upper().endswith(suffix):
            number, unit = number[:-len(suffix)].strip(), size
            break
    if not number.isdecimal():
        raise ValueError(f"{text!r} is not a byte count (e.g. 8192, 64KiB, 5MiB)")
    return int(number) * unit


def _setting_kind(name, default) -> str:
    if isinstance(default, bool):
        return "true or false"
    if name.endswith("_bytes"):
        return "a byte count (e.g. 8192 or 8KiB)"
    return {int: "an integer", float: "a number"}.get(type(default), "a name")


def _parse_setting(name, default, text):
    if isinstance(default, bool):
        if text.lower() not in _BOOLS:
            raise ValueError(text)
        return _BOOLS[text.lower()]
    if isinstance(default, int):
        return parse_bytes(text) if name.endswith("_bytes") else int(text)
    if isinstance(default, float):
        return float(text)
    return text
