"""The doctests of the engine's modules (lsm only: nothing here imports regions),
collected as tests of the suite; the same as ``pytest --doctest-modules lsm``."""
import doctest
import importlib
import pkgutil

import pytest

import lsm

MODULES = ["lsm"] + sorted(m.name for m in pkgutil.iter_modules(lsm.__path__, "lsm."))


@pytest.mark.parametrize("name", MODULES)
def test_doctests_pass(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_engine_has_doctests():
    attempted = sum(doctest.testmod(importlib.import_module(n)).attempted for n in MODULES)
    assert attempted >= 8
