"""How sparkmark reads a JDBC URL for its Python drivers over Spark Connect (pure)."""
from __future__ import annotations

import sys

import pytest

from sparkmark.core.errors import SourceError
from sparkmark.engine.jdbc import parse_jdbc_url, python_link


@pytest.mark.parametrize("url, kind, hosts, database, params", [
    ("jdbc:postgresql://db.internal:5433/hr?user=etl&password=p%26w",
     "postgresql", (("db.internal", 5433),), "hr", {"user": "etl", "password": "p&w"}),
    ("jdbc:postgresql://a,b:6000/hr", "postgresql", (("a", 5432), ("b", 6000)), "hr", {}),
    ("jdbc:postgresql://[::1]:5432/x", "postgresql", (("::1", 5432),), "x", {}),
    ("jdbc:postgresql:hr", "postgresql", (("localhost", 5432),), "hr", {}),
    ("jdbc:postgresql://db/", "postgresql", (("db", 5432),), None, {}),
    ("jdbc:mysql://etl:s%40cret@db/shop?useSSL=true", "mysql", (("db", 3306),), "shop",
     {"useSSL": "true", "user": "etl", "password": "s@cret"}),
    ("JDBC:MariaDB://db:3307/shop", "mysql", (("db", 3307),), "shop", {}),
])
def test_urls_are_split_into_host_port_database_and_parameters(url, kind, hosts, database,
                                                               params):
    u = parse_jdbc_url(url)
    assert (u.kind, u.hosts, u.database, u.params) == (kind, hosts, database, params)


@pytest.mark.parametrize("url, match", [
    ("jdbc:derby:/tmp/db;create=true", r"PostgreSQL .*MySQL/MariaDB .*classic Spark session"),
    ("jdbc:sqlserver://db:1433;password=hunter2", r"jdbc:sqlserver://db:1433;password=\*\*\*"),
    ("jdbc:mysql:loadbalance://a,b/db", "load balancing, replication"),
    ("jdbc:mysql://db:notaport/x", "cannot read the host"),
])
def test_urls_the_python_drivers_cannot_serve_are_one_clear_error(url, match):
    with pytest.raises(SourceError, match=match) as e:
        parse_jdbc_url(url)
    assert "hunter2" not in str(e.value)


@pytest.mark.parametrize("url, package", [("jdbc:postgresql://127.0.0.1:1/x", "pg8000"),
                                          ("jdbc:mariadb://127.0.0.1:1/x", "pymysql")])
def test_a_missing_python_driver_names_the_package_and_the_extra(url, package, monkeypatch):
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)  # as if it were not installed
    with pytest.raises(SourceError, match=rf"needs the Python package {package} .*"
                                          r"pip install 'sparkmark\[connect\]'"):
        python_link(url, {})


def test_an_unknown_sslmode_is_named_before_connecting():
    with pytest.raises(SourceError, match="sslmode 'sometimes' is not one of"):
        python_link("jdbc:postgresql://127.0.0.1:1/x?sslmode=sometimes", {})
