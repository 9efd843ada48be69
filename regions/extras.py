"""Optional dependencies: which extra of pyproject.toml installs each, and the
one way to say that one is missing.

The core (``lsm``, ``regions``, ``regions.tablestore``) needs only the
project's ``dependencies``; a tool that needs an optional module says so in
one line that names the extra to install, in the README's form (an editable
install of the checkout)::

    >>> missing("pyarrow", "Parquet")
    "Parquet needs pyarrow: pip install -e '.[transfer]'"

``require(module, what)`` imports a module or raises ``MissingExtra`` with
that line; ``guard(prog, what)`` wraps a command's ``main`` so that an
optional module missing anywhere in the run ends it with ``PROG: error:
LINE`` on stderr (exit status 1) instead of a traceback.
tests/test_setup_entrypoints.py checks ``OPTIONAL`` against pyproject.toml.
"""
from __future__ import annotations

import functools
import importlib
import sys

#: Each optional module the package imports: (the extra that installs it,
#: what it is, when its name does not say).
OPTIONAL = {
    "tablestore": ("server", "the official Tablestore SDK"),
    "prometheus_client": ("server", None),
    "tqdm": ("transfer", None),
    "pyarrow": ("transfer", None),
    "matplotlib": ("plot", None),
    "tantivy": ("search", "the full-text search engine"),
    "usearch": ("search", "the vector index"),
    "numpy": ("search", None),
    "rjieba": ("search", "Chinese word segmentation"),
}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``pip install -e '.[extra]'``."""
    return f"pip install -e '.[{extra}]'"


def missing(module: str, what: str) -> str:
    """One line: ``WHAT needs MODULE: pip install -e '.[EXTRA]'``."""
    extra, about = OPTIONAL[module]
    name = f"{module} ({about})" if about else module
    return f"{what} needs {name}: {install_hint(extra)}"


class MissingExtra(ModuleNotFoundError):
    """An optional module is not installed; ``str()`` is ``missing()``'s line.
    A ModuleNotFoundError, so that ``except ImportError`` still catches it."""


def require(module: str, what: str):
    """Import ``module`` (a key of ``OPTIONAL``) or raise MissingExtra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise MissingExtra(missing(module, what), name=module) from None


def guard(prog: str, what: str):
    """Decorate a command's ``main``: a missing optional module, whether
    ``require()`` said so or a plain import found it missing, becomes one
    line ``PROG: error: ...`` naming the extra and exit status 1."""
    def decorate(main):
        @functools.wraps(main)
        def run(*args, **kwargs):
            try:
                return main(*args, **kwargs)
            except ModuleNotFoundError as e:
                top = (e.name or "").partition(".")[0]
                if not isinstance(e, MissingExtra) and top not in OPTIONAL:
                    raise
                line = str(e) if isinstance(e, MissingExtra) else missing(top, what)
                print(f"{prog}: error: {line}", file=sys.stderr)
                return 1
        return run
    return decorate
