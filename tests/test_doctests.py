"""The examples in sparkmark's docstrings run and say what they show (``>>>`` lines).

Every module of the package is imported and its doctests run with a live local Spark session
as ``spark``.  Left out: ``sparkmark.glue`` (it refuses to import where AWS Glue's own
``awsglue`` is not shadowed, see tests/test_glue*.py) and ``sparkmark.integrations`` (Airflow and
Dagster live in their own venvs: tests/test_airflow*.py, tests/test_dagster*.py).  Examples that
need a database, a listing or a run are written as plain ``Example::`` text, not as ``>>>``.
"""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import sparkmark

LEFT_OUT = ("sparkmark.glue", "sparkmark.integrations")
MODULES = sorted(m.name for m in pkgutil.walk_packages(sparkmark.__path__, "sparkmark.")
                 if not m.name.startswith(LEFT_OUT))
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


def test_the_examples_are_collected(spark):
    attempted = sum(_run(name, spark).attempted for name in MODULES)
    assert attempted >= AT_LEAST, (attempted, MODULES)
