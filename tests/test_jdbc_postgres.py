"""JDBC source bookmarks on a real PostgreSQL server (the ``pg_server`` fixture, which logs every
statement): the range is pushed down as a WHERE clause (seen in the server's own log), compound
and quoted keys, timestamptz keys, schema-qualified tables, date partitions.

Every test runs twice (``any_spark``): on a classic session, where sparkmark reads keys and bounds
through the JDBC driver in the driver JVM, and over Spark Connect, where it reads them with a
Python driver (pg8000) and Spark's JDBC source runs on the Connect server."""
from __future__ import annotations

import itertools
import json
import os
import re

import pytest
import sqlalchemy as sa

from sparkmark import Bookmarks, Job
from sparkmark.core.errors import ConfigError
from sparkmark.core.options import ENABLE

_counter = itertools.count()
PG_JAR = "/usr/share/java/postgresql.jar"


@pytest.fixture(scope="module")
def spark(any_spark):
    """The classic session, then a Spark Connect session."""
    return any_spark


@pytest.fixture
def pg_jdbc(spark, pg_server):
    """(SQLAlchemy engine, JDBC URL) of a fresh database; needs the PostgreSQL JDBC driver."""
    if PG_JAR not in (spark.conf.get("spark.jars", "") or ""):
        msg = (f"PostgreSQL JDBC driver not on Spark's classpath ({PG_JAR}): install the Debian "
               "package libpostgresql-jdbc-java")
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI installs it: these tests must run there
        pytest.skip(msg)
    name = f"jdbc{os.getpid()}_{next(_counter)}"
    engine = sa.create_engine(pg_server.create_database(name))
    yield engine, f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}?user=postgres"
    engine.dispose()


class Log:
    """The server's statement log (log_statement=all) from a point on."""

    def __init__(self, pg_server):
        self.path = pg_server.root / "log"
        self.start = self.path.stat().st_size

    def new(self) -> str:
        with open(self.path, encoding="utf-8", errors="replace") as f:
            f.seek(self.start)
            return f.read()


def _run(spark, state, clock, url, table, **kw):
    job = Job(spark, state=state, clock=clock)
    job.init("pg_job", {"job_bookmark_option": ENABLE})
    try:
        df = job.read.jdbc(url, table=table, transformation_ctx="src", **kw)
        rows = sorted(tuple(r) for r in df.collect())
    except BaseException as e:
        job.fail(e)
        raise
    job.commit()
    clock.advance(60_000)
    info = json.loads(Job(None, state=state).store.list_runs(job_name="pg_job")[-1]["config"])
    return rows, df, info["sources"]["src"]


def partitions(df) -> int:
    """How many partitions ``df`` has (``df.rdd`` does not exist over Spark Connect)."""
    from pyspark.sql import functions as F
    return df.select(F.spark_partition_id().alias("p")).distinct().count()


def _sql(engine, *stmts, rows=None):
    with engine.begin() as c:
        for s in stmts:
            c.execute(sa.text(s), rows) if rows is not None else c.execute(sa.text(s))


def test_range_is_pushed_down_to_postgres(spark, pg_server, pg_jdbc, state_url, clock):
    engine, url = pg_jdbc
    _sql(engine, "CREATE TABLE orders (id bigint PRIMARY KEY, item text)",
         "INSERT INTO orders SELECT g, 'item' || g FROM generate_series(1, 1000) g")
    rows, _, info = _run(spark, state_url, clock, url, "orders")
    assert [r[0] for r in rows] == list(range(1, 1001))
    _sql(engine, "INSERT INTO orders SELECT g, 'item' || g FROM generate_series(1001, 1010) g")
    log = Log(pg_server)
    rows, _, info = _run(spark, state_url, clock, url, "orders")
    assert [r[0] for r in rows] == list(range(1001, 1011))
    text = log.new()
    # the upper bound is read once, with an ORDER BY ... FETCH on the key
    uppers = re.findall(r'SELECT "id" FROM "public"\."orders" WHERE .*ORDER BY "id" DESC', text)
    assert len(uppers) == 1
    # the rows are read with the range as a WHERE clause the server evaluates
    reads = [line for line in text.splitlines()
             if 'FROM (SELECT * FROM "public"."orders" WHERE' in line and "1=0" not in line]
    assert reads and all('("id" > 1000 AND "id" <= 1010)' in line for line in reads)
    # and never the whole table
    assert not re.search(r'FROM "public"\."orders"\s*($|WHERE 1=0)', text, re.M)
    assert info["lower"] == [1000] and info["upper"] == [1010]


def test_compound_quoted_keys_and_schema_qualified_table(spark, pg_jdbc, sqlite_url, clock):
    engine, url = pg_jdbc
    _sql(engine, 'CREATE SCHEMA "Sales"',
         'CREATE TABLE "Sales"."Order Lines" ("Tenant" text, seq int, v int, '
         'PRIMARY KEY ("Tenant", seq))')
    ins = 'INSERT INTO "Sales"."Order Lines" VALUES (:t, :s, :v)'
    data = [("a'b", 1, 1), ("a'b", 2, 2), ("b?{x}%s%%", 1, 3)]
    _sql(engine, ins, rows=[dict(t=t, s=s, v=v) for t, s, v in data])
    rows, _, _ = _run(spark, sqlite_url, clock, url, "Sales.Order Lines")
    assert sorted(r[2] for r in rows) == [1, 2, 3]
    el = Bookmarks(sqlite_url).get("pg_job")["JobBookmark"]["src"]
    assert el["table"] == "Sales.Order Lines" and el["keys"] == ["Tenant", "seq"]
    assert el["last"] == ["b?{x}%s%%", 1]
    more = [("b?{x}%s%%", 2, 4), ("c'--", 0, 5), ("a'b", 3, 6)]  # the last one is behind: skipped
    _sql(engine, ins, rows=[dict(t=t, s=s, v=v) for t, s, v in more])
    rows, _, _ = _run(spark, sqlite_url, clock, url, "sales.order lines")  # case-insensitive
    assert sorted(r[2] for r in rows) == [4, 5]
    assert Bookmarks(sqlite_url).get("pg_job")["JobBookmark"]["src"]["last"] == ["c'--", 0]


def test_timestamptz_and_desc_keys(spark, pg_jdbc, sqlite_url, clock):
    engine, url = pg_jdbc
    _sql(engine, "CREATE TABLE ev (at timestamptz NOT NULL, v int)",
         "INSERT INTO ev VALUES ('2024-05-01 12:00:00.5+02', 1), ('2024-05-01 09:00:00+00', 2)")
    rows, _, _ = _run(spark, sqlite_url, clock, url, "ev", bookmark_keys=["at"], sort_order="desc")
    assert sorted(r[1] for r in rows) == [1, 2]
    el = Bookmarks(sqlite_url).get("pg_job")["JobBookmark"]["src"]
    assert el["key_types"] == ["timestamptz"] and el["sort_order"] == "desc"
    _sql(engine, "INSERT INTO ev VALUES ('2024-05-01 08:59:59.999999+00', 3), "
                 "('2024-05-01 11:00:00+02', 4)")  # 4 equals the bookmark: already read
    rows, _, _ = _run(spark, sqlite_url, clock, url, "ev", bookmark_keys=["at"], sort_order="desc")
    assert [r[1] for r in rows] == [3]


def test_date_key_partitions_seen_by_the_server(spark, pg_server, pg_jdbc, sqlite_url, clock):
    engine, url = pg_jdbc
    _sql(engine, "CREATE TABLE daily (day date PRIMARY KEY, v int)",
         "INSERT INTO daily SELECT DATE '2024-01-01' + g, g FROM generate_series(0, 99) g")
    log = Log(pg_server)
    rows, df, info = _run(spark, sqlite_url, clock, url, "daily", options={"numPartitions": 4})
    assert sorted(r[1] for r in rows) == list(range(100))
    assert partitions(df) == 4 and info["partitions"] == 4
    assert info["partition_bounds"] == ["2024-01-26", "2024-02-20", "2024-03-16"]
    text = log.new()
    for b in info["partition_bounds"]:
        assert f"\"day\" >= CAST('{b}' AS DATE)" in text


def test_missing_key_and_no_primary_key_are_errors_before_reading(spark, pg_server, pg_jdbc,
                                                                 sqlite_url, clock):
    engine, url = pg_jdbc
    _sql(engine, "CREATE TABLE heap (v int)", "INSERT INTO heap VALUES (1)")
    log = Log(pg_server)
    with pytest.raises(ConfigError, match="no primary key"):
        _run(spark, sqlite_url, clock, url, "heap")
    with pytest.raises(ConfigError, match="'w' does not exist"):
        _run(spark, sqlite_url, clock, url, "heap", bookmark_keys=["w"])
    assert 'FROM "public"."heap"' not in log.new()  # no data was read
    rows, _, _ = _run(spark, sqlite_url, clock, url, "heap", bookmark_keys=["V"])
    assert rows == [(1,)]


@pytest.mark.skipif("connect" not in os.environ.get("SPARKMARK_TEST_SESSIONS", "connect"),
                    reason="SPARKMARK_TEST_SESSIONS has no Connect session")
def test_a_job_moved_between_classic_and_connect_keeps_its_bookmark(
        classic_spark, connect_spark, pg_server, sqlite_url, clock, monkeypatch):
    """Keys read through the JVM's JDBC driver and through pg8000 are the same bookmark: a job
    that moves to Spark Connect (or back) reads nothing twice and finds nothing new."""
    name = f"move{os.getpid()}_{next(_counter)}"
    engine = sa.create_engine(pg_server.create_database(name))
    url = f"jdbc:postgresql://127.0.0.1:{pg_server.port}/{name}?user=postgres"
    _sql(engine, "CREATE TABLE ev (at timestamptz, amount numeric(9,2), v int, "
                 "PRIMARY KEY (at, amount))",
         "INSERT INTO ev VALUES ('2024-05-01 12:00:00.5+02', 12.50, 1), "
         "('2024-05-01 09:00:00+00', 3.10, 2)")

    def run(connect: bool):
        if connect:
            monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
        else:
            monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
        return _run(connect_spark if connect else classic_spark, sqlite_url, clock, url, "ev")

    rows, _, info = run(connect=False)
    assert sorted(r[2] for r in rows) == [1, 2]
    rows, _, info = run(connect=True)
    assert rows == [] and info["new_input"] is False  # the same key, written another way
    _sql(engine, "INSERT INTO ev VALUES ('2024-05-01 10:00:00.5+00', 12.51, 3)")
    rows, _, info = run(connect=True)
    assert [r[2] for r in rows] == [3]
    rows, _, info = run(connect=False)
    assert rows == [] and info["new_input"] is False
    engine.dispose()


def test_jvm_helper_reads_metadata_as_the_value_by_value_path_does(spark, pg_jdbc):
    """The JVM-side helper (one py4j round trip per metadata read, issue 26) returns exactly
    what reading each value through py4j returns, for names with TAB, LF, backslash, a
    literal \\N, commas and non-BMP characters, NULL values and no rows."""
    from sparkmark.engine.compat import is_connect
    from sparkmark.engine.jdbc import JdbcConnection
    from sparkmark.engine.jdbc.jvmlink import _jvm_helper
    if is_connect(spark):
        pytest.skip("the helper runs in the driver JVM of classic sessions")
    assert _jvm_helper(spark) is not None  # the class file ships with the package
    engine, url = pg_jdbc
    odd = ['k\tey', 'a\nb', 'back\\slash', '\\N', 'x,y', 'é🙂']
    cols = ", ".join(f'"{c}" int' for c in odd)
    with engine.begin() as c:
        c.execute(sa.text('CREATE SCHEMA "s\\c"'))
        c.execute(sa.text(f'CREATE TABLE "s\\c"."t\tab" ({cols}, v text, '
                          f'PRIMARY KEY ("{odd[1]}", "{odd[0]}"))'))
        c.execute(sa.text('INSERT INTO "s\\c"."t\tab" VALUES (1, 2, 3, 4, 5, 6, NULL)'))
        c.execute(sa.text("CREATE TABLE empty_t (id int)"))
    seen = []
    for helper in (True, False):
        with JdbcConnection(spark, url, {}, "org.postgresql.Driver") as conn:
            link = conn._link
            if not helper:
                link._helper = None
            seen.append((
                link.table_columns("s\\c", "t\tab"), link.table_columns(None, "empty_t"),
                link.table_columns(None, "no_such_table"),
                link.primary_key(None, "s\\c", "t\tab"), link.primary_key(None, None, "empty_t"),
                conn.query(f'SELECT "{odd[3]}", v, \'a\tb\\\\c\' FROM "s\\c"."t\tab"'),
                conn.query('SELECT v FROM "s\\c"."t\tab"', 1),
                conn.query("SELECT id FROM empty_t", 1)))
    assert seen[0] == seen[1]
    table_cols, _, none, pk, _, row, null_row, no_row = seen[0]
    assert [c[0] for c in next(iter(table_cols.values()))] == odd + ["v"]
    assert none == {} and pk == [odd[1], odd[0]]
    assert row == [["4", None, "a\tb\\\\c"]] and null_row == [[None]] and no_row == []
