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
- ``hot-key``: one key takes more than a region's fair share. Fix: splice
  a column into it, or salt it at random; a hash prefix cannot help (one
  value, one prefix).
- ``empty-regions``: regions whose keyspace never occurs (HBASE-7223: byte
  interpolation over hex keys). Fix: the algorithm of the keys' alphabet,
  the keys' own length or range, or split on a sample; behind a moving
  front, the monotonic fix.
- ``skew``: the busiest region holds over 1.5x the mean. Fix: sample splits.

A fix never recommends the algorithm in use (``advise(..., algorithm=)``):
"use the decimal algorithm" to someone splitting decimal keys with it
teaches nothing. Fixes name an algorithm as ``algorithm NAME`` or "the NAME
algorithm", and a key transform by its ``regions.keys`` function.

Pure functions over their arguments; thread-safe.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from .evaluator import TAIL, Report, show

__all__ = ["Finding", "advise", "SKEW_LIMIT"]

SKEW_LIMIT = 1.5          # busiest region over mean, as the acceptance bar
FRONT_FACTOR = 2.0        # recent writes' hot region vs its share of all keys
MONOTONIC_SHARE = 0.9     # or: consecutive arrivals that increase the key
FEW_VALUES_PER_REGION = 4
SAMPLE_FIX = "split on a sample of the real keys (algorithm sample, --sample FILE)"


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    fix: str

    def __str__(self):
        return f"[{self.code}] {self.message}\n    fix: {self.fix}"


def _transform(what: str, helper: str, algorithm: str | None, in_use: str | None) -> str:
    """One key transform as a fix: the ``regions.keys`` helper and the split
    algorithm made for its keys, unless that algorithm is already in use (the
    plan expects such keys; the keys evaluated lack it)."""
    if algorithm is None:
        return f"{what} ({helper})"
    if algorithm == in_use:
        return f"{what} ({helper}: the {in_use} plan expects such keys, these lack it)"
    return f"{what} ({helper}, algorithm {algorithm})"


def _spread_fix(in_use) -> str:
    """The fix for a moving front: transforms that spread the keys."""
    hashed = _transform("put a hash prefix in front of the key", "keys.hash_prefix",
                        "hash-prefix", in_use)
    salted = _transform("salt it", "keys.salt", "salt", in_use)
    return f"{hashed}, {salted}, or {_transform('reverse it', 'keys.reverse_number', None, in_use)}"


def _alphabet(keys):
    """``(algorithm, its options, what the keys are)`` for string-like keys
    whose characters name a split algorithm; None for other keys."""
    sample = [k.decode("latin-1") if isinstance(k, bytes) else k
              for k in keys[:10_000] if isinstance(k, (str, bytes))]
    if not sample:
        return None
    chars = set("".join(sample))
    length = max(map(len, sample))
    if chars <= set(string.digits):
        return "decimal", f"--length {length}", "decimal digits"
    if chars <= set("0123456789abcdef"):
        return "hex", f"--length {length}", "lowercase hex"
    if chars <= set("0123456789ABCDEF"):
        return "hex", f"--upper --length {length}", "uppercase hex"
    if isinstance(keys[0], bytes) and not all(" " <= c <= "~" for c in chars):
        return "uniform", f"--length {length}", "raw bytes"
    return ("alphabet", f"--alphabet {''.join(sorted(chars))!r} --length {length}",
            f"text over {len(chars)} characters")


def _options(algorithm) -> str | None:
    """The keyspace options of a fixed-width algorithm, as ``_alphabet`` gives them."""
    name, length = getattr(algorithm, "name", None), getattr(algorithm, "length", None)
    if name in ("decimal", "uniform"):
        return f"--length {length}"
    if name == "hex":
        return ("--upper " if "F" in algorithm.alphabet else "") + f"--length {length}"
    if name == "alphabet":
        return f"--alphabet {algorithm.alphabet!r} --length {length}"
    return None


def _keyspace_fix(keys, algorithm, in_use) -> str:
    """Why whole regions of the keyspace get no key, and the split that fits."""
    lo, hi = min(keys), max(keys)
    reason, fixes = f"the keys run only from {show(lo)} to {show(hi)}", []
    helper = {"hash-prefix": "keys.hash_prefix", "salt": "keys.salt"}.get(in_use)
    if helper:  # the plan's keys start with a prefix these keys lack
        fixes.append(f"make the keys with {helper}, as the {in_use} plan expects")
    found = _alphabet(keys)
    if found and found[0] != in_use:
        name, options, what = found
        reason = f"the keys are {what}"
        fixes.append(f"use the {name} algorithm ({name} {options})")
    elif found and _options(algorithm) not in (None, found[1]):
        fixes.append(f"set {found[1]} to match them")
    elif in_use == "integer":
        fixes.append(f"set --low {lo} --high {hi} to their range")
    if in_use == "sample":
        reason = f"the sample does not cover these keys ({show(lo)} to {show(hi)})"
        fixes.append("take the sample from the keys that will really arrive")
    else:
        fixes.append(SAMPLE_FIX)
    return f"{reason}: " + ", or ".join(fixes)


def advise(report: Report, keys=(), algorithm=None) -> list[Finding]:
    """Findings for one evaluation, most urgent first; empty when all is well.

    ``algorithm``: the ``SplitAlgorithm`` (or the name of the algorithm) that
    made the points; no fix recommends it.
    """
    keys = list(keys)
    in_use = getattr(algorithm, "name", algorithm)
    n = len(report.regions)
    out = []
    front = report.regions[report.tail_hot_region].key_share
    moving = (report.tail_hot_share > FRONT_FACTOR * front
              or report.increasing_share >= MONOTONIC_SHARE)
    monotonic = n > 1 and report.tail_hot_share > 0.5 and moving
    if monotonic:
        out.append(Finding(
            "monotonic",
            f"the last {int(TAIL * 100)}% of writes send {100 * report.tail_hot_share:.0f}% to "
            f"region {report.tail_hot_region}, which holds {100 * front:.0f}% of all keys "
            f"({100 * report.increasing_share:.0f}% of writes increase the key): new keys "
            "arrive at a moving front, which pre-splitting cannot spread",
            _spread_fix(in_use)))
    if n > 1 and report.distinct_keys < FEW_VALUES_PER_REGION * n:
        out.append(Finding(
            "few-values",
            f"only {report.distinct_keys} distinct partition-key values for {n} regions: "
            "rows of one value can never be split apart",
            "splice the partition key with a column that has many values "
            "(keys.splice, with zero-padded integers and a connector below every character)"))
    if n > 1 and report.top_key_share > 1.0 / n:
        salt = "algorithm salt; " if in_use != "salt" else ""
        out.append(Finding(
            "hot-key",
            f"one key ({report.top_key!r}) takes {100 * report.top_key_share:.1f}% of writes, "
            f"more than a region's fair share ({100 / n:.1f}%)",
            "splice a column with many values into the partition key (keys.splice), or salt "
            f"each write at random (keys.salt with rng=..., {salt}a read then probes every "
            "salt); a hash prefix cannot split one value"))
    if report.empty_regions:
        fix = _keyspace_fix(keys, algorithm, in_use) if keys else SAMPLE_FIX
        if monotonic:
            fix = ("the keys arrive in order and have reached only part of the keyspace so far; "
                   "the [monotonic] fix spreads them over every region (keys.hash_prefix)")
        out.append(Finding(
            "empty-regions",
            f"{len(report.empty_regions)} of {n} regions get no key: their keyspace never occurs",
            fix))
    if report.key_skew > SKEW_LIMIT and not out:
        fix = (SAMPLE_FIX + " for equal counts per region" if in_use != "sample" else
               "take the sample from the keys that will really arrive, or spread them: "
               + _spread_fix(in_use))
        out.append(Finding(
            "skew", f"the busiest region holds {report.key_skew:.2f}x the mean", fix))
    return out
