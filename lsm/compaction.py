"""Leveled compaction (LevelDB's scheme): what to compact (pure queries of a version).

Shape of the tree: L0 holds flushed memtables (overlapping, newest first);
L1.. are sorted runs of non-overlapping tables, L1 targets
``Options.level1_bytes`` and each deeper level ``level_multiplier`` times
more.  A compaction merges some tables of level L with the tables of L+1 they
overlap and writes the result to L+1:

* L0 -> L1 when L0 holds ``l0_compaction_trigger`` tables: all of L0 (its
  tables overlap each other) plus the L1 tables in their key range;
* Ln -> Ln+1 when Ln exceeds its target: one table of Ln, chosen round-robin
  through the key space, plus its overlap in Ln+1;
* views (bounded views of another store's tables, left by a region split)
  are compacted as soon as nothing else is due, so the parent's files can be
  deleted; a view in the last level is rewritten in place.

Write amplification: each byte is rewritten about ``level_multiplier`` times
per level it descends through (LevelDB's ~10 per level); ``DB.stats()``
reports the measured figure.  Outputs (written by lsm/builder.py) are cut at
``target_file_bytes``, never between two entries of one user key, so a key
never spans two tables of a level.  Running a compaction: lsm/background.py.
"""
from ._iter import LevelIterator, MergingIterator

__all__ = ["Compaction", "pick_compaction", "idle_compaction", "pacing_limit", "range_compactions", "input_iterator"]


class Compaction:
    """Inputs of one compaction: ``inputs[0]`` from ``level``, ``inputs[1]``
    from ``output_level`` (empty when a last-level view is rewritten).

    ``pointer``: ``(level, user key)`` when the choice was round-robin
    through a level; the caller that runs the compaction stores it in its
    pointers (``advance_pointer``) so the next pick starts after it.
    """
    __slots__ = ("level", "output_level", "inputs", "reason", "pointer")

    def __init__(self, level, output_level, inputs0, inputs1, reason, pointer=None):
        self.level = level
        self.output_level = output_level
        self.inputs = (list(inputs0), list(inputs1))
        self.reason = reason
        self.pointer = pointer

    def advance_pointer(self, pointers: dict) -> None:
        """Record in ``pointers`` (level -> user key) that this compaction ran."""
        if self.pointer is not None:
            level, key = self.pointer
            pointers[level] = key

    def all_inputs(self):
        return [(self.level, f) for f in self.inputs[0]] + [(self.output_level, f) for f in self.inputs[1]]

    def user_range(self):
        files = self.inputs[0] + self.inputs[1]
        return min(f.smallest_user for f in files), max(f.largest_user for f in files)

    def __repr__(self):
        return (f"Compaction({self.reason}: L{self.level} {[f.number for f in self.inputs[0]]} -> "
                f"L{self.output_level} {[f.number for f in self.inputs[1]]})")


def max_bytes_for_level(options, level: int) -> int:
    return options.level1_bytes * options.level_multiplier ** (level - 1)


def _expand(version, level, files, output_level, reason):
    lo = min(f.smallest_user for f in files)
    hi = max(f.largest_user for f in files)
    if level == 0:
        # L0 tables overlap each other: take every one in the range (a newer
        # table left behind would be older than its data in L1).
        files = version.overlapping(0, None, None)
        lo = min(f.smallest_user for f in files)
        hi = max(f.largest_user for f in files)
    if output_level == level:
        return Compaction(level, output_level, files, [], reason)
    return Compaction(level, output_level, files, version.overlapping(output_level, lo, hi), reason)


def pick_compaction(version, options, pointers: dict):
    """The most urgent compaction of ``version``, or None.  A pure query.

    ``pointers`` maps level -> the largest user key compacted last time
    (round-robin through each level); it is only read: the caller advances
    it with ``Compaction.advance_pointer`` when it runs the compaction.
    """
    last = options.num_levels - 1
    best_level, best_score = None, 1.0
    if version.levels[0]:
        score = len(version.levels[0]) / options.l0_compaction_trigger
        if score >= best_score:
            best_level, best_score = 0, score
    for level in range(1, last):
        score = version.level_bytes(level) / max_bytes_for_level(options, level)
        if score > best_score:
            best_level, best_score = level, score
    if best_level == 0:
        return _expand(version, 0, version.levels[0], 1, "L0 trigger")
    if best_level is not None:
        files = version.levels[best_level]
        ptr = pointers.get(best_level)
        pick = next((f for f in files if ptr is None or f.largest_user > ptr), files[0])
        c = _expand(version, best_level, [pick], best_level + 1, f"L{best_level} size")
        c.pointer = (best_level, pick.largest_user)
        return c
    for level, f in version.files():
        if f.is_view:
            return _expand(version, level, [f], min(level + 1, last), "rewrite view")
    return None


def idle_compaction(version):
    """L0 pushed into L1 once writes have stopped (``Options.l0_idle_seconds``),
    or None when L0 is empty: a read of a range (a row of the data API) has
    no bloom filter to skip a table with, so each L0 table below the
    trigger costs every such read one more table search, for as long as no
    write brings L0 to its trigger (LevelDB compacts a table that reads
    search in vain: its seek compaction).  A pure query."""
    if not version.levels[0]:
        return None
    return _expand(version, 0, version.levels[0], 1, "L0 idle")


def pacing_limit(c: Compaction, version, options):
    """Bytes of input a second to pace automatic compaction ``c`` to, or
    None when it is urgent (``Options.compaction_throughput_lower`` says
    which are).  A pure query."""
    lower, higher = options.compaction_throughput_lower, options.compaction_throughput_higher
    if not lower or c.level == 0 or not c.reason.endswith(("size", "view")):
        return None
    pressure = 0.0                      # a view's rewrite
    if c.reason.endswith("size"):       # a level over its target: 1x-2x -> 0-1
        pressure = version.level_bytes(c.level) / max_bytes_for_level(options, c.level) - 1.0
    if pressure >= 1.0:
        return None
    return lower + max(0, higher - lower) * max(0.0, pressure)


def range_compactions(version, options, lo, hi):
    """The compactions that push every table meeting [lo, hi] (user keys,
    inclusive, None = open) down to the deepest level holding any of them,
    and then rewrite any views left there.  Computed one step at a time by
    the caller (each step changes the version)."""
    deepest = max((lv for lv in range(options.num_levels) if version.overlapping(lv, lo, hi)), default=None)
    if deepest is None:
        return None
    # L0 tables are ordered by number: never rewrite one in place, push it down.
    deepest = max(deepest, 1)
    for level in range(0, deepest):
        files = version.overlapping(level, lo, hi)
        if files:
            return _expand(version, level, files, level + 1, "manual")
    views = [f for f in version.overlapping(deepest, lo, hi) if f.is_view]
    if views:
        return _expand(version, deepest, views, deepest, "manual view rewrite")
    return None


def input_iterator(c: Compaction, open_iter):
    """A merging iterator over the inputs of ``c``; ``open_iter(meta)`` opens one table."""
    children = []
    if c.level == 0:
        children.extend(open_iter(f) for f in c.inputs[0])
    elif c.inputs[0]:
        children.append(_level_iter(c.inputs[0], open_iter))
    if c.inputs[1]:
        children.append(_level_iter(c.inputs[1], open_iter))
    return children[0] if len(children) == 1 else MergingIterator(children)


def _level_iter(files, open_iter):
    return LevelIterator([f.largest for f in files], lambda i: open_iter(files[i]))
