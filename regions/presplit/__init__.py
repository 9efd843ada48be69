"""Pre-split planning: split points for a keyspace, and how keys would spread.

Modules (one concept each):

- ``algorithms``: ``SplitAlgorithm`` and the split algorithms (hex, decimal,
  alphabet, uniform, integer, hash-prefix, salt, sample, explicit,
  interpolate), HBase's ``bytes_split``, ``encode_points`` for the raw layer.
- ``formats``: HBase SPLITS files, key sample files, the JSON plan.
- ``evaluator``: workloads, ``evaluate`` (per-region shares, skew, tail hot
  spot), the terminal table and bar chart, ``plot``.
- ``advisor``: findings about the key design, with the fix.
- ``cli``: the ``regions-presplit`` script (``python -m regions.presplit``).

Typed points (str/int/bytes) go to the Tablestore layer's
``create_table(..., split_points=...)``; ``encode_points`` gives the bytes the
raw region layer's ``create_table(name, split_keys=...)`` takes.
"""

from .advisor import Finding, advise
from .algorithms import (AlphabetSplit, DecimalSplit, ExplicitSplit, HashPrefixSplit, HexSplit,
                         IntegerSplit, InterpolateSplit, SaltSplit, SampleSplit,
                         SmallAlphabetWarning, SplitAlgorithm, UniformSplit, bytes_split,
                         check_points, encode_point, encode_points)
from .errors import PresplitError
from .evaluator import Report, RegionStat, bar_chart, evaluate, render_table, workload
from .formats import (points_from_json, points_json, read_sample_file, read_splits_file,
                      splits_text)

__all__ = [
    "PresplitError", "SmallAlphabetWarning", "SplitAlgorithm", "AlphabetSplit", "HexSplit",
    "DecimalSplit", "UniformSplit", "IntegerSplit", "HashPrefixSplit", "SaltSplit",
    "SampleSplit", "ExplicitSplit", "InterpolateSplit", "bytes_split", "check_points",
    "encode_point", "encode_points", "Report", "RegionStat", "workload", "evaluate",
    "render_table", "bar_chart", "Finding", "advise", "points_json", "points_from_json",
    "read_splits_file", "read_sample_file", "splits_text",
]
