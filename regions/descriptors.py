"""The server's file-descriptor budget, from the process's RLIMIT_NOFILE.

What a region costs, measured: its lsm store holds three descriptors while
open (its LOCK, its WAL and its manifest) and one more while a flush or a
compaction writes a table or a manifest is replaced: ``PER_STORE`` = 4.  An
open table holds none (it is mapped, and its descriptor closed at once:
lsm/fs.py); the tables open at once are bounded server-wide by one shared
table cache (``ServerOptions.max_open_tables``; ``lsm.cache.TableCache``'s
``shared``), which bounds the mappings (``vm.max_map_count``) and the memory
of their indexes, not descriptors.

At start the soft limit is raised to the hard one, as databases do
(``raise_nofile_limit``).  Of that limit, ``reserve`` descriptors are kept
for what is not a region: the listening socket and its connections, log
files, the meta and server LOCK, the search indexes' files
(``ServerOptions.descriptor_reserve``; 0 picks a quarter of the limit,
at least 64 and at most 4096).  The rest, divided by ``PER_STORE``, is how
many region stores the server may hold open.  A table created pre-split, or
a split, that would pass it is refused before any file is created
(``DescriptorBudgetError``), instead of failing half-way with EMFILE.

Thread-safety: ``DescriptorBudget`` is immutable; the caller counts its
stores under its own lock.
"""
import logging

from .errors import DescriptorBudgetError

__all__ = ["DescriptorBudget", "DescriptorBudgetError", "PER_STORE", "raise_nofile_limit"]

log = logging.getLogger("regions")

#: Descriptors one region's store may hold: LOCK, WAL, manifest, and one
#: for a table being written or a manifest being replaced.
PER_STORE = 4


def raise_nofile_limit():
    """Raise RLIMIT_NOFILE's soft limit to its hard one (capped at 1<<20,
    as an unlimited hard limit would make the budget meaningless); returns
    the soft limit in force, or None where there are no such limits."""
    try:
        import resource
    except ImportError:         # not POSIX
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard if hard != resource.RLIM_INFINITY else 1 << 20, 1 << 20)
    if soft == resource.RLIM_INFINITY or soft >= want:
        return min(soft, 1 << 20) if soft != resource.RLIM_INFINITY else 1 << 20
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        log.info("raised the open-file limit (RLIMIT_NOFILE) from %d to %d", soft, want)
        return want
    except (ValueError, OSError):
        return soft


class DescriptorBudget:
    """How many region stores fit in ``limit`` descriptors less ``reserve``
    (see the module doc); ``limit`` None: no limit known, no check."""

    def __init__(self, limit, reserve=0):
        self.limit = limit
        if limit is None:
            self.reserve, self.stores = 0, None
            return
        self.reserve = reserve or min(4096, max(64, limit // 4))
        self.stores = max(0, (limit - self.reserve) // PER_STORE)

    def check(self, open_stores: int, more: int, what: str) -> None:
        """Raise ``DescriptorBudgetError`` if ``more`` stores beside
        ``open_stores`` would pass the budget; ``what``: the operation, for
        the message."""
        if self.stores is None or open_stores + more <= self.stores:
            return
        raise DescriptorBudgetError(
            f"{what} needs {more} more region store{'s' if more != 1 else ''} ({PER_STORE} file "
            f"descriptors each) beside the {open_stores} open; the budget is {self.stores} stores: "
            f"RLIMIT_NOFILE {self.limit} less {self.reserve} kept for connections and logs. "
            f"Raise the limit (ulimit -n) or use fewer regions")

    def __repr__(self):
        return f"DescriptorBudget(limit={self.limit}, reserve={self.reserve}, stores={self.stores})"
