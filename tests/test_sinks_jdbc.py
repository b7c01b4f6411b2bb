"""Exactly-once JDBC targets on a real PostgreSQL server and on Derby.

The PostgreSQL tests run twice (``any_spark``): on a classic session (sparkmark's own statements
through the JDBC driver in the driver JVM) and over Spark Connect (through pg8000 in this
process; the staging table is still written by Spark's JDBC writer on the Connect server)."""
from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from sparkmark import Job
from sparkmark.core.errors import SinkError
from sparkmark.core.options import ENABLE

EN = {"job_bookmark_option": ENABLE}


@pytest.fixture(scope="module")
def spark(any_spark):
    """The classic session, then a Spark Connect session."""
    return any_spark


def rows(url, sql):
    engine = sa.create_engine(url)
    with engine.connect() as c:
        out = c.execute(sa.text(sql)).all()
    engine.dispose()
    return out


def test_pg_publish_only_at_commit_and_failed_runs_vanish(spark, sqlite_url, clock, pg_target):
    sa_url, jdbc, props = pg_target
    df = spark.createDataFrame([(i, f"n{i}") for i in range(5)], "k INT, name STRING")
    job = Job(spark, state=sqlite_url, clock=clock).init("j", EN)
    assert job.write_jdbc(df, jdbc, "orders_out", properties=props) == 5
    assert rows(sa_url, "SELECT count(*) FROM orders_out")[0][0] == 0  # readers see nothing
    assert rows(sa_url, "SELECT count(*) FROM orders_out__sm_stage")[0][0] == 5
    job.commit()
    assert rows(sa_url, "SELECT count(*), min(sm_run_id) FROM orders_out")[0] == (5, job.run_id)
    assert rows(sa_url, "SELECT count(*) FROM orders_out__sm_stage")[0][0] == 0

    with pytest.raises(ValueError):
        with Job(spark, state=sqlite_url, clock=clock).run("j", EN) as bad:
            bad.write_jdbc(df, jdbc, "orders_out", properties=props)
            raise ValueError("after the write")
    assert rows(sa_url, "SELECT count(*) FROM orders_out")[0][0] == 5
    assert rows(sa_url, "SELECT count(*) FROM orders_out__sm_stage")[0][0] == 0


def test_pg_roll_forward_and_credentials_never_in_ledger(spark, sqlite_url, clock, pg_target):
    sa_url, jdbc, props = pg_target
    props = {**props, "password": "not-needed-but-secret"}
    job = Job(spark, state=sqlite_url, clock=clock).init("j", EN)
    job.write_jdbc(spark.range(4), jdbc, "t", properties=props)
    job.store.commit_run("j", job.run_id, start_version=job.start_version, new_state={},
                         status="SUCCEEDED", now=clock(),
                         fields={"outputs": job.store.get_run(job.run_id)["outputs"],
                                 "publish_state": "pending"})
    # crash between the state commit and the publish: the object is simply dropped
    assert "not-needed-but-secret" not in json.dumps(job.store.get_run(job.run_id))
    assert rows(sa_url, "SELECT count(*) FROM t")[0][0] == 0
    nxt = Job(spark, state=sqlite_url, clock=clock).init("j", EN)  # trust auth: no password
    assert rows(sa_url, "SELECT count(*) FROM t")[0][0] == 4
    nxt.write_jdbc(spark.range(4, 6), jdbc, "t", properties=props)
    nxt.commit()
    assert sorted(r[0] for r in rows(sa_url, "SELECT id FROM t")) == list(range(6))


def test_pg_incompatible_target_is_a_clear_error(spark, sqlite_url, clock, pg_target):
    sa_url, jdbc, props = pg_target
    engine = sa.create_engine(sa_url)
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE narrow (id BIGINT)"))
    engine.dispose()
    job = Job(spark, state=sqlite_url, clock=clock).init("j", EN)
    with pytest.raises(SinkError, match="has no column"):
        job.write_jdbc(spark.range(2), jdbc, "narrow", properties=props)
    job.fail("bad target")
    assert rows(sa_url, "SELECT count(*) FROM narrow")[0][0] == 0


def test_derby_target(classic_spark, sqlite_url, clock, tmp_path, monkeypatch):
    spark = classic_spark  # embedded Derby lives in the driver JVM: classic sessions only
    # may run while the module's Connect session is up: build classic columns
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    jdbc = f"jdbc:derby:{tmp_path}/derbydb;create=true"
    job = Job(spark, state=sqlite_url, clock=clock).init("d", EN)
    job.write_jdbc(spark.range(3), jdbc, "OUT1")
    job.commit()
    back = spark.read.jdbc(jdbc, "OUT1")
    assert sorted(r.ID if "ID" in back.columns else r.id for r in back.collect()) == [0, 1, 2]
