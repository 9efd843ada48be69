"""Where the written rows went: the planner's per-region table, and a hot region.

``Spread`` keeps the partition-key value of each written row (a uniform
reservoir sample of at most ``SAMPLE`` rows, kept in write order), then
routes them over the table's partitions as they are after the load (auto-
splits included) with the planner's ``evaluate`` and prints its table
(regions.presplit.evaluator): one implementation of "how keys spread over
regions" for the planner and the loader.  A region with more than ``HOT``
times its even share of the rows is flagged.  ``add`` is called under the
caller's lock.
"""

from __future__ import annotations

import random

from regions.presplit import PresplitError, evaluate, render_table
from regions.presplit.evaluator import show

__all__ = ["SAMPLE", "HOT", "Spread", "SpreadReport"]

SAMPLE = 200_000
HOT = 2.0


class SpreadReport:
    def __init__(self, report=None, sampled=False, error=None):
        self.report, self.sampled, self.error = report, sampled, error

    def hot_regions(self) -> list[int]:
        if self.report is None or len(self.report.regions) < 2:
            return []
        even = 1 / len(self.report.regions)
        return [i for i, r in enumerate(self.report.regions) if r.key_share > HOT * even]

    def text(self) -> str:
        if self.error:
            return f"spread over the regions: not available ({self.error})"
        r = self.report
        n = len(r.regions)
        head = (f"spread of the written rows over {n} region{'s' if n > 1 else ''}"
                + (f" (a sample of {r.total_keys})" if self.sampled else "") + ":")
        lines = [head, render_table(r)]
        for i in self.hot_regions():
            reg = r.regions[i]
            lines.append(f"HOT region {i} [{show(reg.start)}, {show(reg.end)}): "
                         f"{100 * reg.key_share:.1f}% of the rows, over {HOT:g}x an even share "
                         f"({100 / len(r.regions):.1f}%)")
        return "\n".join(lines)


class Spread:
    def __init__(self, seed=None, sample=SAMPLE):
        self._rng = random.Random(seed)
        self._sample, self._kept, self._seen = sample, [], 0

    def add(self, partition_value) -> None:
        if isinstance(partition_value, bytearray):  # BINARY, as the SDK holds it
            partition_value = bytes(partition_value)
        n = self._seen
        self._seen += 1
        if n < self._sample:
            self._kept.append((n, partition_value))
        else:
            j = self._rng.randrange(n + 1)
            if j < self._sample:
                self._kept[j] = (n, partition_value)

    def report(self, target, table) -> SpreadReport:
        if not self._kept:
            return SpreadReport(error="no rows were written")
        keys = [k for _, k in sorted(self._kept, key=lambda t: t[0])]
        try:
            points = target.split_points(table)
            return SpreadReport(evaluate(points, keys), sampled=self._seen > self._sample)
        except (PresplitError, Exception) as e:  # noqa: BLE001 - the load is done; say why not
            return SpreadReport(error=str(e) or type(e).__name__)
