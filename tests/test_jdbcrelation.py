"""Spark's JDBC relation built on sparkmark's own connection (``sources/jdbcrelation.py``, issue
26) against Spark's own ``spark.read.jdbc`` of the same table, predicates and properties: the
same schema (every PostgreSQL type below, ``customSchema``, ``preferTimestampNTZ``), the same
rows, the same partitions and the same scan in the plan; on PostgreSQL (a real server) and on
Apache Derby (embedded, another dialect). Where it cannot be built it returns ``None`` and the
read falls back to Spark's own (checked: the fallback cases and a job's read)."""
from __future__ import annotations

import itertools
import json
import os
import re

import pytest
import sqlalchemy as sa

from sparkmark import Job
from sparkmark.engine.jdbc import JdbcConnection
from sparkmark.core.options import ENABLE
from sparkmark.sources import jdbc as jdbc_source
from sparkmark.sources import jdbcrelation
from sparkmark.sources.jdbcrelation import load_on, usable

from conftest import DERBY_DRIVER, need_derby, pg_jdbc_database

_counter = itertools.count()
PG_DRIVER = "org.postgresql.Driver"


@pytest.fixture
def pg(spark, pg_server):
    """(SQLAlchemy engine, JDBC URL) of a fresh PostgreSQL database with table ``wide``."""
    engine, url = pg_jdbc_database(spark, pg_server, "rel", [
        "CREATE TABLE wide (id bigint PRIMARY KEY, s smallint, i integer, "
        "n numeric(10,2), nu numeric, r real, d double precision, b boolean, "
        "t text, v varchar(20), ch char(3), dt date, ts timestamp, tz timestamptz, "
        "by bytea, u uuid, j json, arr integer[], \"Mixed Case\" text)",
        "INSERT INTO wide SELECT g, g % 100, g * 7, g / 3.0, g * 1.5, g / 7.0, g / 9.0, "
        "g % 2 = 0, 'text ' || g, 'v' || g, 'c' || (g % 10), DATE '2024-01-01' + g, "
        "TIMESTAMP '2024-01-01' + g * INTERVAL '1 minute', "
        "TIMESTAMPTZ '2024-01-01 00:00+02' + g * INTERVAL '1 hour', "
        "decode(lpad(to_hex(g), 8, '0'), 'hex'), md5(g::text)::uuid, "
        "json_build_object('g', g), ARRAY[g, g + 1], CASE WHEN g % 5 = 0 THEN NULL "
        "ELSE 'm' || g END FROM generate_series(1, 60) g"])
    yield engine, url
    engine.dispose()


def _rows(df) -> list[tuple]:
    return sorted((tuple(str(v) for v in r) for r in df.collect()))


def _scan(df) -> str:
    """The physical plan's scan, without the expression ids that differ between two reads."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return re.sub(r"#\d+L?", "#", plan)


def _same(ours, theirs) -> None:
    assert ours is not None
    assert ours.schema == theirs.schema
    assert ours.rdd.getNumPartitions() == theirs.rdd.getNumPartitions()
    assert _scan(ours) == _scan(theirs)
    assert _rows(ours) == _rows(theirs)


def _both(spark, url, dbtable, predicates, props, driver=PG_DRIVER):
    with JdbcConnection(spark, url, props, driver) as conn:
        ours = load_on(spark, conn.java_connection, url, dbtable, predicates, props)
    kw = {"predicates": predicates} if predicates else {}
    theirs = spark.read.jdbc(url, dbtable, properties=props, **kw)
    return ours, theirs


@pytest.mark.parametrize("dbtable", [
    "wide",
    "(SELECT * FROM wide WHERE id > 10 AND id <= 50) sm_range",
])
def test_the_relation_on_our_connection_is_sparks_read(spark, pg, dbtable):
    _, url = pg
    props = {"driver": PG_DRIVER, "fetchsize": "10000"}
    ours, theirs = _both(spark, url, dbtable, None, props)
    _same(ours, theirs)
    assert len(ours.collect()) == (60 if dbtable == "wide" else 40)
    fields = {f.name: f.dataType.simpleString() for f in ours.schema.fields}
    assert fields["n"] == "decimal(10,2)" and fields["arr"] == "array<int>", fields


def test_predicates_make_the_same_partitions(spark, pg):
    _, url = pg
    preds = ["id <= 20", "id > 20 AND id <= 40", "id > 40"]
    ours, theirs = _both(spark, url, "wide", preds, {"driver": PG_DRIVER})
    _same(ours, theirs)
    assert ours.rdd.getNumPartitions() == 3
    assert [len(p) for p in ours.rdd.glom().collect()] == [20, 20, 20]


@pytest.mark.parametrize("extra", [
    {"customSchema": "id DECIMAL(38, 0), t STRING, s LONG"},
    {"preferTimestampNTZ": "true"},
    {"customSchema": "ID string"},  # matched by Spark's resolver, case-insensitively
    {"customSchema": "nope INT"},  # a name that is no column: Spark ignores it, so do we
])
def test_reader_options_shape_the_schema_as_in_sparks_read(spark, pg, extra):
    _, url = pg
    ours, theirs = _both(spark, url, "wide", None, {"driver": PG_DRIVER, **extra})
    _same(ours, theirs)
    if "preferTimestampNTZ" in extra:
        assert ours.schema["ts"].dataType.simpleString() == "timestamp_ntz"
    elif "nope" not in extra["customSchema"]:
        assert ours.schema[0].dataType.simpleString() in ("decimal(38,0)", "string")


def test_derby_another_dialect_reads_the_same(spark):
    need_derby(spark)
    url = f"jdbc:derby:memory:rel{os.getpid()}_{next(_counter)}"
    conn = spark._jvm.java.sql.DriverManager.getConnection(url + ";create=true")
    st = conn.createStatement()
    st.execute("CREATE TABLE T (ID BIGINT PRIMARY KEY, NAME VARCHAR(20), AMT DECIMAL(9,3), "
               "TS TIMESTAMP)")
    for i in range(1, 13):
        st.execute(f"INSERT INTO T VALUES ({i}, 'n{i}', {i}.125, "
                   f"TIMESTAMP('2024-01-0{1 + i % 9} 10:00:00'))")
    st.close()
    try:
        props = {"driver": DERBY_DRIVER}
        for dbtable, preds in (("T", None), ("(SELECT * FROM T WHERE ID > 4) sm_range", None),
                               ("T", ["ID <= 6", "ID > 6"])):
            ours, theirs = _both(spark, url, dbtable, preds, props, DERBY_DRIVER)
            _same(ours, theirs)
    finally:
        conn.close()


def test_where_it_cannot_be_built_it_returns_none(spark, pg):
    _, url = pg
    props = {"driver": PG_DRIVER}
    assert not usable(spark, None, props)  # no JVM connection (a Python driver's)
    with JdbcConnection(spark, url, props, PG_DRIVER) as conn:
        jconn = conn.java_connection
        assert usable(spark, jconn, props)
        # Spark would connect through Kerberos: its own read resolves the schema
        assert load_on(spark, jconn, url, "wide", None, {**props, "principal": "x@Y"}) is None
        assert load_on(spark, jconn, url, "wide", None,
                       {**props, "connectionProvider": "basic"}) is None
        # a table that is not there: None, and Spark's own read then names the error
        assert load_on(spark, jconn, url, "no_such_table", None, props) is None
    assert conn.java_connection is None  # closed: nothing to build on
    with pytest.raises(Exception, match="no_such_table"):
        spark.read.jdbc(url, "no_such_table", properties=props).collect()


def test_a_jobs_read_builds_on_its_connection_and_reads_the_new_rows(spark, pg, tmp_path,
                                                                     monkeypatch):
    engine, url = pg
    built: list[object] = []
    original = jdbcrelation.load_on

    def spy(*a, **k):
        df = original(*a, **k)
        built.append(df)
        return df
    monkeypatch.setattr(jdbc_source, "load_on", spy)
    state = f"sqlite:///{tmp_path}/state.db"

    def run() -> list[int]:
        job = Job(spark, state=state)
        job.init("rel_job", {"job_bookmark_option": ENABLE})
        ids = sorted(r.id for r in job.read.jdbc(url, table="wide",
                                                 transformation_ctx="src").collect())
        job.commit()
        return ids

    assert run() == list(range(1, 61))
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO wide (id, t) SELECT g, 'late' FROM "
                          "generate_series(61, 64) g"))
    assert run() == [61, 62, 63, 64]
    assert run() == []
    assert len(built) == 3 and all(df is not None for df in built)
    info = json.loads(Job(None, state=state).store.list_runs(job_name="rel_job")[-1]["config"])
    assert info["sources"]["src"]["lower"] == [64] and info["sources"]["src"]["upper"] == [64]


def test_a_jobs_read_falls_back_to_sparks_own_read(spark, pg, tmp_path, monkeypatch):
    engine, url = pg
    monkeypatch.setattr(jdbc_source, "load_on", lambda *a, **k: None)
    state = f"sqlite:///{tmp_path}/state.db"
    job = Job(spark, state=state)
    job.init("rel_job2", {"job_bookmark_option": ENABLE})
    df = job.read.jdbc(url, table="wide", transformation_ctx="src",
                       options={"rowsPerPartition": "25"})
    assert df.rdd.getNumPartitions() > 1
    assert sorted(r.id for r in df.collect()) == list(range(1, 61))
    job.commit()


def test_connection_properties_cross_to_the_jvm_as_given(spark, pg):
    """The connection's properties go to the JVM as one text (``encode_rows``): a value with a
    backslash, a TAB and a literal ``\\N`` arrives as given (PostgreSQL shows the TAB, a
    non-printable, as ``\\x09`` in ``application_name``)."""
    _, url = pg
    name = "sm\\x\ty \\N"
    with JdbcConnection(spark, url, {"ApplicationName": name}, PG_DRIVER) as conn:
        assert conn.query("SHOW application_name", 1) == [["sm\\x\\x09y \\N"]]


def test_without_the_jvm_helper_the_read_is_sparks_own(spark, pg, monkeypatch):
    _, url = pg
    monkeypatch.setattr(jdbcrelation, "helper", lambda *a: None)
    with JdbcConnection(spark, url, {}, PG_DRIVER) as conn:
        assert load_on(spark, conn.java_connection, url, "wide", None,
                       {"driver": PG_DRIVER}) is None


@pytest.mark.parametrize("closer", ["helper's thread", "in the call"])
def test_the_runs_connection_ends_when_the_read_is_built(spark, pg, closer):
    """The run's connection is closed when the ``with`` block ends: by the JVM helper's daemon
    thread (``closeLater``, so the run does not wait for PgJDBC's close), or in the call where
    there is no helper.  Either way the server's session is gone soon after and the Java
    connection reports itself closed."""
    import time

    engine, url = pg
    name = f"sm-close-{next(_counter)}"
    sessions = sa.text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :n")
    with JdbcConnection(spark, url, {"ApplicationName": name}, PG_DRIVER) as conn:
        if closer == "in the call":
            conn._link._helper = None
        jconn = conn.java_connection
        with engine.connect() as c:
            assert c.execute(sessions, {"n": name}).scalar() == 1
    deadline = time.monotonic() + 10
    while True:
        with engine.connect() as c:
            left = c.execute(sessions, {"n": name}).scalar()
        if (left == 0 and jconn.isClosed()) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert left == 0 and jconn.isClosed()
