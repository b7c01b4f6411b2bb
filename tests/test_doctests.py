"""The examples in sparkmark's docstrings run and say what they show (``>>>`` lines).

Every module of the package is imported and its doctests run with a live local Spark session
as ``spark``.  Left out: ``sparkmark.glue`` (its modules need a Glue script's set-up, see
tests/test_glue*.py) and ``sparkmark.integrations`` (Airflow and
Dagster live in their own venvs: tests/test_airflow*.py, tests/test_dagster*.py).  Examples that
need a database, a listing or a run are written as plain ``Example::`` text, not as ``>>>``.
"""
from __future__ import annotations

import doctest
import importlib
import os
import pkgutil

import pytest

import sparkmark

LEFT_OUT = ("sparkmark.glue", "sparkmark.integrations")


def _modules(path: list[str], prefix: str) -> list[str]:
    """The modules under ``path``, found without importing any: ``pkgutil.walk_packages``
    imports each package, and importing ``sparkmark.glue`` sets ``PYSPARK_SUBMIT_ARGS`` for a
    Glue script's local Spark (its ``--jars`` then replace the test session's ``spark.jars``,
    and the s3a suites lost their connector)."""
    found = []
    for info in pkgutil.iter_modules(path, prefix):
        if info.name.startswith(LEFT_OUT):
            continue
        found.append(info.name)
        if info.ispkg:
            found += _modules([os.path.join(path[0], info.name.rsplit(".", 1)[1])],
                              info.name + ".")
    return found


MODULES = sorted(_modules(list(sparkmark.__path__), "sparkmark."))
#: how many examples the package had when this test was written: fewer means some stopped
#: being collected (a module renamed away, a docstring turned into text)
AT_LEAST = 120


def _run(name: str, spark) -> doctest.TestResults:
    module = importlib.import_module(name)
    return doctest.testmod(module, extraglobs={"spark": spark}, report=True,
                           optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_each_module_run(name, spark):
    result = _run(name, spark)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed " \
                               "(the report is in the captured stdout)"


def test_the_examples_are_collected():
    finder = doctest.DocTestFinder()
    found = sum(len(t.examples) for name in MODULES
                for t in finder.find(importlib.import_module(name)))
    assert found >= AT_LEAST, (found, MODULES)
