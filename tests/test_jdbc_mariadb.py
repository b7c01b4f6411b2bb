"""JDBC sources and targets on a real MariaDB server (Debian's mariadb-server, started by the
test in a temporary folder, no service), with MariaDB's own driver (libmariadb-java), through
both ``jdbc:mariadb:`` and ``jdbc:mysql:`` URLs, no driver named: a ``jdbc:mysql:`` URL gets
MariaDB's driver when MySQL's is not on the classpath, and the ledger says which.  The JDBC
matrix: Derby, PostgreSQL, MariaDB.

Runs on a classic session and over Spark Connect (``any_spark``; there sparkmark's own
connection is PyMySQL in this process)."""
from __future__ import annotations

import itertools
import json
import os

import pytest

from sparkmark import Job
from sparkmark.core.options import ENABLE

EN = {"job_bookmark_option": ENABLE}
MARIADB_DRIVER = "org.mariadb.jdbc.Driver"
_counter = itertools.count()


@pytest.fixture(scope="module")
def spark(any_spark):
    """The classic session, then a Spark Connect session."""
    return any_spark


@pytest.fixture(params=["mariadb", "mysql"])
def db(request, mariadb, spark):
    from sparkmark.devtools.mariadb import JAR
    if JAR not in (spark.conf.get("spark.jars", "") or ""):
        pytest.skip("the test Spark session started before the MariaDB driver was installed")
    name = f"m{os.getpid()}_{next(_counter)}"
    url = mariadb.create_database(name, scheme=request.param)
    return mariadb, name, url, {}


def test_bookmarked_read_primary_key_default_and_write(spark, db, state_url, clock):
    server, name, url, props = db
    server.sql("CREATE TABLE emp (empno INT PRIMARY KEY, ename VARCHAR(20))", name)
    server.sql("INSERT INTO emp VALUES (1, 'a'), (2, 'b')", name)
    job = Job(spark, state=state_url, clock=clock).init("emp", EN)
    df = job.read.jdbc(url, "emp", transformation_ctx="emp", properties=props)
    assert sorted(r.empno for r in df.collect()) == [1, 2]
    assert job.write_jdbc(df, url, "emp_copy", properties=props) == 2
    job.commit()
    server.sql("INSERT INTO emp VALUES (3, 'c')", name)
    clock.advance(60_000)
    job = Job(spark, state=state_url, clock=clock).init("emp", EN)
    df = job.read.jdbc(url, "emp", transformation_ctx="emp", properties=props)
    assert [r.empno for r in df.collect()] == [3]
    job.write_jdbc(df, url, "emp_copy", properties=props)
    job.commit()
    assert server.sql("SELECT COUNT(*), COUNT(DISTINCT empno) FROM emp_copy", name).split() == [
        "3", "3"]
    runs = job.store.list_runs(job_name="emp")
    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert "password=sm" not in str(runs)
    for run in runs:  # which driver read and wrote: MariaDB's, the only one installed
        assert json.loads(run["config"])["sources"]["emp"]["driver"] == MARIADB_DRIVER
        assert [o["properties"]["driver"] for o in json.loads(run["outputs"])] == [MARIADB_DRIVER]

    # a run that fails after staging its rows: nothing reaches the target, the bookmark stays
    server.sql("INSERT INTO emp VALUES (4, 'd')", name)
    clock.advance(60_000)
    with pytest.raises(ValueError):
        with Job(spark, state=state_url, clock=clock).run("emp", EN) as bad:
            df = bad.read.jdbc(url, "emp", transformation_ctx="emp", properties=props)
            bad.write_jdbc(df, url, "emp_copy", properties=props)
            raise ValueError("after the write")
    assert server.sql("SELECT COUNT(*) FROM emp_copy", name).split() == ["3"]
    assert server.sql("SELECT COUNT(*) FROM emp_copy__sm_stage", name).split() == ["0"]
    clock.advance(60_000)
    job = Job(spark, state=state_url, clock=clock).init("emp", EN)
    df = job.read.jdbc(url, "emp", transformation_ctx="emp", properties=props)
    assert [r.empno for r in df.collect()] == [4]
    job.write_jdbc(df, url, "emp_copy", properties=props)
    job.commit()
    assert server.sql("SELECT COUNT(*), COUNT(DISTINCT empno) FROM emp_copy", name).split() == [
        "4", "4"]
