"""The C floor keeps the Python's plan: each package has one C face, and C never
imports its caller; the data API reaches the engine only through regions.

* A package cimports another only through that package's face, and only the
  layer below it: regions through lsm/_api.pxd, regions.tablestore and
  regions.otsserver through regions/_api.pxd (which passes on what they need
  of lsm).  Within a package, modules cimport each other freely.
* No Cython module in ext/ imports at function level.  That is how a C module
  reached back into the Python module that imports it (lsm.fs from _fileio,
  lsm.batch from the batch's C module, writes.py from tablestore/_writes), a
  cycle the import graph does not show.  What C needs of a caller is handed in at
  construction, or lives in a lower module it imports at load time
  (lsm/errors.py's storage_error, lsm/arguments.py's checks).
* regions uses no private module of lsm and nothing of its record format
  (kinds, a batch's operations): the store's C paths come through lsm's face,
  and a write is handed to lsm as ``(key, value)`` pairs (``DB.write_pairs``,
  from C ``write_pairs`` of lsm/_api.pxd), no WriteBatch made: a write
  spanning regions is cut into parts by regions, pair by pair.
* The data API (regions.tablestore, regions.otsserver) hands the region
  server pairs too, and names nothing of lsm's batch or record kinds."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXT = ROOT / "ext"
_NESTED_IMPORT = re.compile(r"^\s+(from\s+[\w.]+\s+import\s+\w|import\s+[\w.]+\s*(as\s+\w+\s*)?$)")
_CIMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+cimport\b|cimport\s+([\w.]+))")

#: package -> the faces it may cimport from other packages.
FACES = {"lsm": set(), "regions": {"lsm._api"},
         "regions.tablestore": {"regions._api"}, "regions.otsserver": {"regions._api"}}


def _sources():
    return sorted(p for p in EXT.rglob("*") if p.suffix in (".pyx", ".pxd"))


def test_a_package_cimports_another_only_through_its_face():
    crossings = []
    for path in _sources():
        rel = path.relative_to(EXT)
        package = ".".join(rel.parent.parts)
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = _CIMPORT.match(line)
            if not m:
                continue
            module = m.group(1) or m.group(2)
            if module.split(".")[0] not in ("lsm", "regions"):
                continue                  # cpython, libc, cython
            if module.rsplit(".", 1)[0] == package or module in FACES[package]:
                continue
            crossings.append(f"{rel}:{n}: {line.strip()}")
    assert not crossings, "\n".join(crossings)


def test_no_cython_module_imports_inside_a_function():
    found = [f"{path.relative_to(EXT)}:{n}: {line.strip()}"
             for path in _sources() if path.suffix == ".pyx"
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if _NESTED_IMPORT.match(line) and "cimport" not in line]
    assert not found, "\n".join(found)


_IMPORTS_LSM = re.compile(r"^\s*(import\s+lsm\b|from\s+lsm\b[\w.]*\s+c?import\b)")


def test_the_data_api_imports_nothing_of_lsm():
    """regions.tablestore, Python and C, takes what it needs of the engine from
    regions (regions.errors, regions.PUREPYTHON, regions/_api.pxd)."""
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in sorted((ROOT / "regions" / "tablestore").glob("*.py"))
             + sorted((EXT / "regions" / "tablestore").glob("*.p*"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if _IMPORTS_LSM.match(line)]
    assert not found, "\n".join(found)


#: What regions may not use of lsm: its private modules (the C paths, reached
#: through lsm/_api.pxd and the store's bound methods) and the record format
#: (the kinds, the batch's operations: a batch is lsm's to split and apply).
#: Docs may name them (``...``): the path that runs is shown where it runs.
_LSM_INTERNALS = re.compile(r"\blsm\.(_\w+|batch|dbformat|wal)\b")
_QUOTED = re.compile(r"``.*?``")


def test_regions_reaches_lsm_only_through_its_public_modules_and_face():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in sorted((ROOT / "regions").glob("*.py"))
             + sorted((EXT / "regions").glob("*.p*"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if _LSM_INTERNALS.search(_QUOTED.sub("", line)) and not _CIMPORT.match(line)]
    assert not found, "\n".join(found)


def _lines(paths):
    for path in paths:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            yield f"{path.relative_to(ROOT)}:{n}: {line.strip()}", line


def _kind_names():
    """The names of lsm's record kinds (lsm/dbformat.py's ``KIND_*``), read
    from its source: what only lsm may name."""
    text = (ROOT / "lsm" / "dbformat.py").read_text()
    return sorted(set(re.findall(r"^(KIND_\w+)\s*=", text, re.M)))


def test_the_data_api_names_nothing_of_lsms_batch_or_kinds():
    """regions.tablestore and regions.otsserver (Python and C, code and docs)
    write ``(key, value)`` pairs: no WriteBatch, no lsm record kind, no
    batch's ``.PUT``/``.DELETE``."""
    kinds = _kind_names()
    assert kinds, "lsm/dbformat.py names its kinds KIND_*"
    named = re.compile(r"\bWriteBatch\b|\b[Bb]atch\.(PUT|DELETE)\b|\b(%s)\b" % "|".join(kinds))
    paths = [p for d in ("tablestore", "otsserver")
             for p in sorted((ROOT / "regions" / d).rglob("*.py"))
             + sorted((EXT / "regions" / d).glob("*.p*")) if p.suffix in (".py", ".pyx", ".pxd")]
    found = [where for where, line in _lines(paths) if named.search(line)]
    assert not found, "\n".join(found)


_NAMES_BATCH = re.compile(r"\bWriteBatch\b|\bof_ops\b|\b[Bb]atch\.ops\b")


def test_regions_makes_no_batch_outside_lsms_face():
    """regions (its own modules, Python and C) hands lsm pairs: it names no
    WriteBatch (so builds none) and reads no batch's operations, and names
    no record kind; docs may (``...``)."""
    kinds = re.compile(r"\b(%s)\b" % "|".join(_kind_names()))
    paths = sorted((ROOT / "regions").glob("*.py")) + sorted((EXT / "regions").glob("*.p*"))
    found = [where for where, line in _lines(paths)
             for code in (_QUOTED.sub("", line),)
             if _NAMES_BATCH.search(code) or kinds.search(code)]
    assert not found, "\n".join(found)
