"""``RegionServer.check()``: the server's invariants, verified (HBase's hbck).

Meta and the in-memory layout agree; every table's regions are sorted,
contiguous, non-overlapping and cover the key space; no split is half done;
every region is open, its table files exist, and every file a region refers
to in another directory belongs to a split parent still in meta; no region
directory is orphaned or missing.  The check reads the server through its
split host (procedure.py) and waits for splits in progress to finish.
"""
import os

from . import _region
from .errors import InvariantError
from .meta import check_layout, region_dir_name

__all__ = ["check_server"]


def check_server(host) -> None:
    """Raise ``InvariantError`` naming every broken invariant (module docstring)."""
    problems = []
    tables = sorted(host.tables(), key=lambda t: t.name)
    locks = [t.split_lock for t in tables]
    for lk in locks:
        lk.acquire()
    try:
        with host.lock:
            doc = host.meta_doc()
            if set(doc.tables) != {t.name for t in tables}:
                problems.append(f"meta tables {sorted(doc.tables)} != open tables "
                                f"{[t.name for t in tables]}")
            if doc.procedures:
                problems.append(f"split procedures left in meta: {doc.procedures}")
            for t in tables:
                problems += _check_table(host, t, doc)
            wanted = {region_dir_name(i) for i in doc.region_ids()}
            present = set(host.fs.listdir(host.regions_root))
            if present - wanted:
                problems.append(f"orphan region directories: {sorted(present - wanted)}")
            if wanted - present:
                problems.append(f"missing region directories: {sorted(wanted - present)}")
    finally:
        for lk in locks:
            lk.release()
    if problems:
        raise InvariantError("; ".join(problems))


def _check_table(host, t, doc):
    problems = []
    rec = doc.tables.get(t.name)
    starts, regs = t.layout
    try:
        check_layout(t.name, regs)
    except ValueError as e:
        problems.append(str(e))
    if rec is not None:
        mine = [(r.id, r.start, r.end) for r in regs]
        theirs = [(r.id, r.start, r.end) for r in rec["regions"]]
        if mine != theirs:
            problems.append(f"table {t.name!r}: layout {mine} != meta {theirs}")
    if starts != [r.start for r in regs]:
        problems.append(f"table {t.name!r}: routing keys do not match the regions")
    parent_dirs = [os.path.realpath(host.region_dir(p["id"])) + os.sep
                   for p in doc.parents if p["table"] == t.name]
    for r in regs:
        if r.state is not _region.OPEN:
            problems.append(f"region {r.id} of {t.name!r} is {r.state}")
            continue
        for level, path, lo, hi in r.db.live_tables():
            # A compaction may replace the version and delete its inputs
            # meanwhile: a file is missing only if it is still live after.
            if not host.fs.exists(path) and path in {p for _lv, p, _lo, _hi in r.db.live_tables()}:
                problems.append(f"region {r.id} of {t.name!r}: table file {path} is missing")
        for path in r.db.external_files():
            real = os.path.realpath(path)
            if not any(real.startswith(d) for d in parent_dirs):
                problems.append(f"region {r.id} of {t.name!r} refers to {path}, "
                                "which is not a file of a split parent in meta")
    return problems
