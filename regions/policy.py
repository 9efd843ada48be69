"""Split policies: *when* a region splits (HBase's RegionSplitPolicy family).

A policy looks only at sizes: the bytes of a region's table files (the
memtable is not counted, as in HBase's ``HStore.getSize()``) and the number
of regions its table has on this server.  *Where* a region splits is the
region's business (middle key, then the table's split-point adjuster).

The formulas are HBase's, scaled to this machine (2 cores, one Python
process, an engine far slower than HBase's on a server):

==================================  ==================  ============
setting                             HBase default       ours
==================================  ==================  ============
max region size (``max_filesize``)  10 GiB              512 MiB
memstore flush size                 128 MiB             8 MiB
initial size (2 x flush size)       256 MiB             16 MiB
jitter                              0.25                0.25
==================================  ==================  ============

Worked example (``IncreasingToUpperBoundSplitPolicy``, defaults, no jitter):
the threshold is ``min(max, initial * c**3)`` for ``c`` regions of the table,
so a table's first region splits at 16 MiB; with 2 regions each splits at
``16 * 8 = 128 MiB``; with 3 at ``16 * 27 = 432 MiB``; from 4 on at the
512 MiB cap (``16 * 64 = 1 GiB`` is capped).  ``SteppingSplitPolicy`` (the
default, as in HBase 2.x) uses 16 MiB while the table has one region and
512 MiB afterwards.

Jitter: each region draws ``rate = (u - 0.5) * jitter`` once (``u`` uniform
in [0, 1), seeded by the region id so runs are reproducible), and its
maximum becomes ``max * (1 + rate)``: with jitter 0.25 a 512 MiB maximum
lands between 448 and 576 MiB, so sibling regions that grow at the same rate
do not all split at the same moment (a split storm).

Policies are immutable and thread-safe.
"""
import random

__all__ = [
    "SplitPolicy", "ConstantSizeSplitPolicy", "IncreasingToUpperBoundSplitPolicy",
    "SteppingSplitPolicy", "DisabledSplitPolicy", "jitter_rate", "POLICY_NAMES",
]


def jitter_rate(region_id: int, jitter: float) -> float:
    """The region's jitter rate in ``[-jitter/2, +jitter/2)``, stable per region id."""
    if jitter == 0:
        return 0.0
    return (random.Random(region_id).random() - 0.5) * jitter


def check_int(name, value, minimum=1):
    """TypeError/ValueError naming ``name`` unless ``value`` is an int >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


class SplitPolicy:
    """Base class: ``should_split(size, region_count, rate)`` decides; subclasses
    define ``threshold(region_count, rate)`` in bytes (None: never)."""

    name = "abstract"

    def threshold(self, region_count: int, rate: float = 0.0):
        raise NotImplementedError

    def should_split(self, size: int, region_count: int, rate: float = 0.0) -> bool:
        """True when a region of ``size`` file bytes, in a table of
        ``region_count`` regions on this server, should split (HBase's
        ``isExceedSize``: strictly greater than the threshold)."""
        t = self.threshold(region_count, rate)
        return t is not None and size > t

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in sorted(vars(self).items()))
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self), tuple(sorted(vars(self).items()))))


class ConstantSizeSplitPolicy(SplitPolicy):
    """Split when a region's files exceed ``max_bytes`` (jittered)."""

    name = "constant"

    def __init__(self, max_bytes: int = 512 << 20, jitter: float = 0.25):
        check_int("max_bytes", max_bytes)
        if isinstance(jitter, bool) or not isinstance(jitter, (int, float)):
            raise TypeError(f"jitter must be a number, got {type(jitter).__name__}")
        if not 0 <= jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), got {jitter}")
        self.max_bytes = max_bytes
        self.jitter = float(jitter)

    def desired_max(self, rate: float = 0.0) -> int:
        """HBase's ``desiredMaxFileSize += desiredMaxFileSize * jitterRate``."""
        return int(self.max_bytes * (1.0 + rate))

    def threshold(self, region_count, rate=0.0):
        return self.desired_max(rate)


class IncreasingToUpperBoundSplitPolicy(ConstantSizeSplitPolicy):
    """Split early while a table has few regions: ``min(max, initial * c**3)``.

    ``c`` is the number of regions of the table on this server; HBase uses the
    upper bound alone when ``c == 0`` or ``c > 100`` (overflow guard), and so
    do we.
    """

    name = "increasing"

    def __init__(self, max_bytes: int = 512 << 20, initial_bytes: int = 16 << 20,
                 jitter: float = 0.25):
        super().__init__(max_bytes, jitter)
        check_int("initial_bytes", initial_bytes)
        self.initial_bytes = initial_bytes

    def threshold(self, region_count, rate=0.0):
        upper = self.desired_max(rate)
        if region_count <= 0 or region_count > 100:
            return upper
        return min(upper, self.initial_bytes * region_count ** 3)


class SteppingSplitPolicy(IncreasingToUpperBoundSplitPolicy):
    """HBase 2.x's default: ``initial`` while the table has one region, then ``max``."""

    name = "stepping"

    def threshold(self, region_count, rate=0.0):
        if region_count == 1:
            return self.initial_bytes
        return self.desired_max(rate)


class DisabledSplitPolicy(SplitPolicy):
    """Never split automatically.

    Unlike HBase's ``DisabledRegionSplitPolicy`` an operator's explicit
    ``split_region`` still works: it is a deliberate act, not growth.
    """

    name = "disabled"

    def threshold(self, region_count, rate=0.0):
        return None


#: Names accepted by ``ServerOptions.split_policy``.
POLICY_NAMES = {cls.name: cls for cls in (ConstantSizeSplitPolicy,
                                          IncreasingToUpperBoundSplitPolicy,
                                          SteppingSplitPolicy, DisabledSplitPolicy)}
