"""Leveled compaction (LevelDB's scheme): what to compact, and writing outputs.

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
reports the measured figure.  Outputs are cut at ``target_file_bytes``, never
between two entries of one user key, so a key never spans two tables of a
level.
"""
import os

from . import filenames
from ._iter import LevelIterator, MergingIterator
from .sstable import TableBuilder
from .version import FileMeta

__all__ = ["Compaction", "pick_compaction", "range_compactions", "write_tables"]


class Compaction:
    """Inputs of one compaction: ``inputs[0]`` from ``level``, ``inputs[1]``
    from ``output_level`` (empty when a last-level view is rewritten)."""
    __slots__ = ("level", "output_level", "inputs", "reason")

    def __init__(self, level, output_level, inputs0, inputs1, reason):
        self.level = level
        self.output_level = output_level
        self.inputs = (list(inputs0), list(inputs1))
        self.reason = reason

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
    """The most urgent compaction of ``version``, or None.

    ``pointers`` maps level -> the largest user key compacted last time
    (round-robin through each level); it is updated.
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
        pointers[best_level] = pick.largest_user
        return _expand(version, best_level, [pick], best_level + 1, f"L{best_level} size")
    for level, f in version.files():
        if f.is_view:
            return _expand(version, level, [f], min(level + 1, last), "rewrite view")
    return None


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


def write_tables(db, stream, cut: bool, level: int):
    """Drain ``stream`` (a CompactionStream) into new table files.

    Returns a list of FileMeta.  When ``cut``, outputs are cut at
    ``target_file_bytes`` between user keys.  On error every output written
    so far is removed and the error re-raised, so nothing half-built stays.
    """
    options, fs = db.options, db.fs
    target = options.target_file_bytes if cut else 0
    if options.compression and level < options.compression_min_level:
        options = options.copy(compression=False)
    outputs, written = [], []
    builder = f = None
    try:
        while stream.valid():
            number = db.versions.new_file_number()
            db.pending_outputs.add(number)
            path = os.path.join(db.path, filenames.table_name(number))
            written.append((number, path))
            f = fs.open_append(path)
            builder = TableBuilder(f, options)
            stream.fill(builder, target)
            if builder.num_entries:
                props = builder.finish()
                f.sync()
                f.close()
                outputs.append(FileMeta(number, props["size"], props["num_entries"],
                                        props["smallest"], props["largest"]))
            else:
                builder.abandon()
                f.close()
                fs.remove_if_exists(path)
                db.pending_outputs.discard(number)
            builder = None
        return outputs
    except BaseException:
        if builder is not None:
            try:
                builder.abandon()
                f.close()
            except Exception:
                pass
        for n, p in written:
            fs.remove_if_exists(p)
            db.pending_outputs.discard(n)
        raise
