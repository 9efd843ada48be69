"""Design advisor: the key patterns the HBase and Tablestore guides warn about.

Why: an evaluation shows numbers; the advisor says what they mean and what to
change. Each rule reads a ``Report`` (and the keys, for their characters)
and yields a ``Finding`` with the fix the guides give:

- ``monotonic``: the last writes pile on one region far beyond its share of
  all keys, i.e. new keys arrive at a moving front (auto-increment ids,
  timestamps, Tablestore's OrderNumber), or nearly every write increases
  the key. A hot key is not a front: its
  region is as busy in the tail as overall.
  Fix: a hash prefix (``keys.hash_prefix``), salting, or a reversed key.
- ``few-values``: the partition key has too few distinct values to spread
  over the regions, and one value can never be split (Tablestore: the
  partition key is the smallest unit; SellerID in the student-card table).
  Fix: splice it with a column that has many values (``keys.splice``).
- ``hot-key``: one key takes more than a region's fair share.
- ``empty-regions``: regions whose keyspace never occurs (HBASE-7223: byte
  interpolation over hex keys). Fix: the algorithm of the keys' alphabet, or
  split on a sample.
- ``skew``: the busiest region holds over 1.5x the mean. Fix: sample splits.

Pure functions over their arguments; thread-safe.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from .evaluator import TAIL, Report

__all__ = ["Finding", "advise", "SKEW_LIMIT"]

SKEW_LIMIT = 1.5          # busiest region over mean, as the acceptance bar
FRONT_FACTOR = 2.0        # recent writes' hot region vs its share of all keys
MONOTONIC_SHARE = 0.9     # or: consecutive arrivals that increase the key
FEW_VALUES_PER_REGION = 4


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    fix: str

    def __str__(self):
        return f"[{self.code}] {self.message}\n    fix: {self.fix}"


def _alphabet_hint(keys) -> str:
    sample = [k.decode("latin-1") if isinstance(k, bytes) else k
              for k in keys[:10_000] if isinstance(k, (str, bytes))]
    if not sample:
        return "split on a sample of real keys (--sample FILE)"
    chars = set("".join(sample))
    if chars <= set(string.digits):
        return "the keys are decimal digits: use the decimal algorithm (or --sample)"
    if chars <= set("0123456789abcdef"):
        return "the keys are lowercase hex: use the hex algorithm (or --sample)"
    return (f"the keys use {len(chars)} characters: use the alphabet algorithm with "
            f"--alphabet {''.join(sorted(chars))!r} (or --sample)")


def advise(report: Report, keys=()) -> list[Finding]:
    """Findings for one evaluation, most urgent first; empty when all is well."""
    keys = list(keys)
    n = len(report.regions)
    out = []
    front = report.regions[report.tail_hot_region].key_share
    moving = (report.tail_hot_share > FRONT_FACTOR * front
              or report.increasing_share >= MONOTONIC_SHARE)
    if n > 1 and report.tail_hot_share > 0.5 and moving:
        out.append(Finding(
            "monotonic",
            f"the last {int(TAIL * 100)}% of writes send {100 * report.tail_hot_share:.0f}% to "
            f"region {report.tail_hot_region}, which holds {100 * front:.0f}% of all keys "
            f"({100 * report.increasing_share:.0f}% of writes increase the key): new keys "
            "arrive at a moving front, which pre-splitting cannot spread",
            "put a hash prefix in front of the key (keys.hash_prefix, algorithm hash-prefix), "
            "salt it (keys.salt, algorithm salt), or reverse it (keys.reverse_number)"))
    if n > 1 and report.distinct_keys < FEW_VALUES_PER_REGION * n:
        out.append(Finding(
            "few-values",
            f"only {report.distinct_keys} distinct partition-key values for {n} regions: "
            "rows of one value can never be split apart",
            "splice the partition key with a column that has many values "
            "(keys.splice, with zero-padded integers and a connector below every character)"))
    if n > 1 and report.top_key_share > 1.0 / n:
        out.append(Finding(
            "hot-key",
            f"one key ({report.top_key!r}) takes {100 * report.top_key_share:.1f}% of writes, "
            f"more than a region's fair share ({100 / n:.1f}%)",
            "splice a second column into the partition key or hash-prefix it"))
    if report.empty_regions:
        out.append(Finding(
            "empty-regions",
            f"{len(report.empty_regions)} of {n} regions get no key: their keyspace never occurs",
            _alphabet_hint(keys)))
    if report.key_skew > SKEW_LIMIT and not out:
        out.append(Finding(
            "skew",
            f"the busiest region holds {report.key_skew:.2f}x the mean",
            "split on a sample of real keys (--sample FILE) for equal counts per region"))
    return out
