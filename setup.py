"""Build the Cython extensions in ext/.

Sources mirror the package path (ext/lsm/_x.pyx builds lsm._x) so that a
.pyx finds its .pxd by the module's full dotted name.  Every module here is
required: a failed compile fails the install rather than leaving a silent
pure-Python fallback behind.
"""
import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def extensions():
    # EXT_ONLY=lsm._block,lsm._iter builds just those (handy while several
    # modules are being edited at once); the default builds everything.
    only = {m for m in os.environ.get("EXT_ONLY", "").split(",") if m}
    mods = []
    for pyx in sorted(glob.glob(os.path.join("ext", "**", "*.pyx"), recursive=True)):
        rel = os.path.relpath(pyx, "ext")
        name = os.path.splitext(rel)[0].replace(os.sep, ".")
        if only and name not in only:
            continue
        # zlib: the WAL's CRC (lsm._record) is zlib's crc32, as in lsm/wal.py.
        mods.append(Extension(name, [pyx], extra_compile_args=["-O3"], libraries=["z"]))
    return cythonize(
        mods,
        include_path=["ext"],
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    )


setup(ext_modules=extensions())
