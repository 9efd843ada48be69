"""C never imports its caller: no Cython module in ext/ imports at function level.

A function-level import is how a C module reached back into the Python module
that imports it (lsm.fs from _fileio, lsm.batch from _record, writes.py from
tablestore/_writes), a cycle the import graph does not show.  What C needs of a
caller is handed in at construction, or lives in a lower module it imports at
load time (lsm/errors.py's storage_error, lsm/arguments.py's checks)."""
import pathlib
import re

EXT = pathlib.Path(__file__).resolve().parent.parent / "ext"
_NESTED_IMPORT = re.compile(r"^\s+(from\s+[\w.]+\s+import\s+\w|import\s+[\w.]+\s*(as\s+\w+\s*)?$)")


def test_no_cython_module_imports_inside_a_function():
    found = [f"{path.relative_to(EXT)}:{n}: {line.strip()}"
             for path in sorted(EXT.rglob("*.pyx"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if _NESTED_IMPORT.match(line) and "cimport" not in line]
    assert not found, "\n".join(found)
