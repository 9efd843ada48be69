"""How keys and load would spread over pre-split regions.

Why: split points are only as good as the keys that arrive. ``evaluate``
routes a key stream (in arrival order) to regions by a bisect over the split
points, exactly as the region server routes rows, and reports per region the
share of keys and of bytes, the skew, the empty regions, and the hot spot of
the last 10% of writes (a monotonic key sends them all to one region, however
well the keyspace was cut). ``workload`` generates the streams the issue
names; ``bar_chart`` and ``plot`` draw the spread.

Cost: O(K log N) for K keys and N regions; 100k keys take well under a
second. Nothing here is shared or mutated after it is returned.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections import Counter
from dataclasses import dataclass, field

from regions import extras

from .algorithms import SplitAlgorithm, _key_type, check_points, encode_point
from .errors import PresplitError

__all__ = ["WORKLOADS", "RegionStat", "Report", "workload", "evaluate", "show",
           "summary_line", "render_table", "bar_chart", "plot"]

WORKLOADS = ("uniform", "sequential", "timestamp", "zipf")
TAIL = 0.10  # the share of the most recent writes the hot-spot figure looks at
CELL = 24    # widest point shown in the terminal table


@dataclass(frozen=True)
class RegionStat:
    """One region ``[start, end)`` (``None`` = unbounded) and what it got."""
    start: object
    end: object
    keys: int
    bytes: int
    key_share: float
    byte_share: float
    tail_writes: int


@dataclass(frozen=True)
class Report:
    """The evaluation of one plan against one key stream.

    The keys are partition-key values, one per write: ``total_keys`` counts
    the writes, ``distinct_keys`` the different values among them (a value
    is never split over two regions), ``total_bytes`` the key bytes, or the
    row bytes when ``evaluate`` was given sizes or a value size
    (``bytes_of``).
    """
    regions: list = field(repr=False)
    total_keys: int
    total_bytes: int
    distinct_keys: int
    key_skew: float        # busiest region's keys / mean keys per region
    byte_skew: float       # the same for bytes
    empty_regions: list    # indexes of regions that got no key
    tail_hot_region: int   # busiest region among the last 10% of writes
    tail_hot_share: float  # share of those writes it took
    increasing_share: float  # share of consecutive arrivals that increased
    top_key: object
    top_key_share: float
    bytes_of: str = "key"  # "key": bytes of the keys; "row": of the rows (given sizes, values)

    def as_dict(self) -> dict:
        """JSON-ready summary (points rendered by the caller's ``show``)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("regions", "top_key")}


def workload(algorithm: SplitAlgorithm, kind: str, count: int = 100_000, seed: int = 0,
             zipf_s: float = 1.1, zipf_values: int = 1000, start: int = 0):
    """A list of ``count`` keys from ``algorithm``'s keyspace, in arrival order.

    - ``uniform``: independent uniformly random keys (``random_key``).
    - ``sequential``: ids ``start, start+1, ...`` (auto-increment, order numbers).
    - ``timestamp``: millisecond timestamps from 2023-11-14, a few ms apart.
    - ``zipf``: ``zipf_values`` random keys drawn with weight ``1/rank**s``.
    Deterministic for a given seed.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise PresplitError(f"workload key count must be a positive int, got {count!r}")
    rng = random.Random(seed)
    if kind == "uniform":
        return [algorithm.random_key(rng) for _ in range(count)]
    if kind == "sequential":
        return [algorithm.key_for(start + i) for i in range(count)]
    if kind == "timestamp":
        t = 1_700_000_000_000 + start
        out = []
        for _ in range(count):
            t += rng.randrange(1, 5)
            out.append(algorithm.key_for(t))
        return out
    if kind == "zipf":
        if zipf_values < 1 or zipf_s <= 0:
            raise PresplitError("zipf needs at least one value and an exponent above 0")
        hot = [algorithm.random_key(rng) for _ in range(zipf_values)]
        cum = list(itertools.accumulate(1.0 / (r ** zipf_s) for r in range(1, zipf_values + 1)))
        return rng.choices(hot, cum_weights=cum, k=count)
    raise PresplitError(f"unknown workload {kind!r}: choose one of {', '.join(WORKLOADS)}")


def _check_types(points, keys) -> None:
    if not keys:
        raise PresplitError("no keys to evaluate")
    kinds = {_key_type(k) for k in keys[:1000]}
    if len(kinds) > 1:
        raise PresplitError(f"the keys mix types: {', '.join(sorted(kinds))}")
    if points and _key_type(points[0]) not in kinds:
        raise PresplitError(f"the keys are {kinds.pop()} but the split points are "
                            f"{_key_type(points[0])}: use --key-type to match them")


def evaluate(points, keys, sizes=None, value_size: int = 0) -> Report:
    """Route ``keys`` (arrival order) over the regions that ``points`` make.

    ``sizes``: bytes per key (default: the key's encoded length), plus
    ``value_size`` bytes for each row.
    """
    points = check_points(points)
    keys = list(keys)
    _check_types(points, keys)
    given_sizes = sizes
    if sizes is None:
        sizes = [len(encode_point(k)) for k in keys]
    elif len(sizes) != len(keys):
        raise PresplitError(f"{len(sizes)} sizes for {len(keys)} keys")
    n = len(points) + 1
    counts, nbytes = [0] * n, [0] * n
    where = bisect.bisect_right
    routed = [where(points, k) for k in keys]
    for r, s in zip(routed, sizes):
        counts[r] += 1
        nbytes[r] += s + value_size
    tail_from = len(keys) - max(1, int(len(keys) * TAIL))
    tail = Counter(routed[tail_from:])
    tail_counts = [tail.get(i, 0) for i in range(n)]
    hot_region, hot_writes = tail.most_common(1)[0]
    total, total_bytes = len(keys), sum(nbytes)
    freq = Counter(keys)
    top_key, top_count = freq.most_common(1)[0]
    increasing = sum(1 for a, b in zip(keys, keys[1:]) if b > a)
    bounds = [None] + points + [None]
    regions = [RegionStat(bounds[i], bounds[i + 1], counts[i], nbytes[i],
                          counts[i] / total, nbytes[i] / total_bytes if total_bytes else 0.0,
                          tail_counts[i]) for i in range(n)]
    return Report(
        regions=regions, total_keys=total, total_bytes=total_bytes, distinct_keys=len(freq),
        key_skew=max(counts) * n / total,
        byte_skew=max(nbytes) * n / total_bytes if total_bytes else 0.0,
        empty_regions=[i for i, c in enumerate(counts) if c == 0],
        tail_hot_region=hot_region, tail_hot_share=hot_writes / (total - tail_from),
        increasing_share=increasing / (total - 1) if total > 1 else 0.0,
        top_key=top_key, top_key_share=top_count / total,
        bytes_of="key" if given_sizes is None and not value_size else "row")


def show(point) -> str:
    """A point for people; ``*`` for the table's open ends."""
    if point is None:
        return "*"
    if isinstance(point, bytes):
        from .formats import to_string_binary
        return to_string_binary(point)
    return str(point)


def _cell(point) -> str:
    text = show(point)
    return text if len(text) <= CELL else text[:CELL - 3] + "..."


def summary_line(report: Report) -> str:
    """What was counted: writes, distinct partition-key values, key (or row) bytes."""
    return (f"keys: {report.total_keys}  distinct partition-key values: {report.distinct_keys}  "
            f"{report.bytes_of} bytes: {report.total_bytes}")


def render_table(report: Report) -> str:
    """The per-region table and the summary lines, plain text (long points
    are cut to ``CELL`` characters; the JSON output has them whole)."""
    w = max(8, *(len(_cell(r.start)) for r in report.regions))
    lines = [f"{'region':>6}  {'start':<{w}}  {'end':<{w}}  {'keys':>8}  {'key%':>6}  "
             f"{'bytes%':>6}  {'tail%':>6}"]
    tail_total = sum(r.tail_writes for r in report.regions) or 1
    for i, r in enumerate(report.regions):
        lines.append(f"{i:>6}  {_cell(r.start):<{w}}  {_cell(r.end):<{w}}  {r.keys:>8}  "
                     f"{100 * r.key_share:>5.1f}%  {100 * r.byte_share:>5.1f}%  "
                     f"{100 * (r.tail_writes / tail_total):>5.1f}%")
    lines += [
        summary_line(report),
        f"skew (busiest / mean): keys {report.key_skew:.2f}x, bytes {report.byte_skew:.2f}x",
        f"empty regions: {len(report.empty_regions)} of {len(report.regions)}",
        f"last {int(TAIL * 100)}% of writes: {100 * report.tail_hot_share:.1f}% hit region "
        f"{report.tail_hot_region}",
    ]
    return "\n".join(lines)


def bar_chart(report: Report, width: int = 50) -> str:
    """Key share per region as a bar of ``#`` (scaled to the busiest region)."""
    peak = max(r.key_share for r in report.regions) or 1.0
    lines = []
    for i, r in enumerate(report.regions):
        bar = "#" * round(width * r.key_share / peak)
        lines.append(f"{i:>4} |{bar:<{width}}| {100 * r.key_share:5.1f}%")
    return "\n".join(lines)


def plot(report: Report, path: str, title: str = "keys per region") -> None:
    """Draw key and byte shares per region to ``path`` (PNG, SVG, ...).

    matplotlib is an optional extra (``pip install -e '.[plot]'``);
    imported here so the planner runs without it.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PresplitError(extras.missing("matplotlib", "--plot")) from None
    idx = range(len(report.regions))
    fig, ax = plt.subplots(figsize=(max(6, len(report.regions) * 0.4), 4))
    ax.bar([i - 0.2 for i in idx], [100 * r.key_share for r in report.regions], 0.4, label="keys")
    ax.bar([i + 0.2 for i in idx], [100 * r.byte_share for r in report.regions], 0.4, label="bytes")
    ax.axhline(100 / len(report.regions), color="gray", linestyle="--", label="even")
    ax.set_xlabel("region")
    ax.set_ylabel("share (%)")
    ax.set_title(title)
    ax.legend()
    try:
        fig.savefig(path)
    except OSError as e:
        raise PresplitError(f"cannot write plot {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
