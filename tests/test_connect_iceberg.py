"""Spark Connect with Iceberg: a real Spark Connect server whose classpath has the Iceberg runtime
of its Spark line (from Maven Central, ``make jars``), Iceberg's SQL extensions and a Hadoop
catalog; the client is a remote session in this process.  A bookmarked job reads an Iceberg
source incrementally and writes an Iceberg target exactly once, run after run; a run that fails
after its write leaves nothing visible, and the next run writes its rows once.

Runs on Spark 3.5 (the server is the ``spark-connect_2.12`` module of the jar set) and on Spark
4.1 (pyspark ships the server), in the Iceberg pytest process (``make test-iceberg``); skipped
elsewhere, failed under SPARKMARK_REQUIRE_ICEBERG=1 when the jars are missing."""
from __future__ import annotations

import itertools
import os

import pytest

from sparkmark import Bookmarks, Job
from sparkmark.core.options import ENABLE

from conftest import iceberg_jar_paths

_CONNECT_ENV = "SPARK_CONNECT_MODE_ENABLED"
_counter = itertools.count()


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """A Connect server with Iceberg (catalog ``cx``) and a remote session to it."""
    jars = iceberg_jar_paths()
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    from sparkmark.devtools.cluster import start_connect
    from sparkmark.devtools.iceberg import iceberg_session_conf
    from sparkmark.engine.spark import jdbc_jars
    conf = iceberg_session_conf(str(tmp_path_factory.mktemp("connect-ice-wh")), catalog="cx",
                                jars=jars)
    conf.pop("spark.jars")
    server = start_connect(conf=conf, jars=jdbc_jars() + jars)
    had = _CONNECT_ENV in os.environ
    try:
        session = RemoteSparkSession.builder.remote(server.url).getOrCreate()
        os.environ[_CONNECT_ENV] = "1"  # pyspark.sql.functions builds Connect columns meanwhile
        session.sql("CREATE NAMESPACE IF NOT EXISTS cx.db")
        yield session
        session.stop()
    finally:
        if not had:
            os.environ.pop(_CONNECT_ENV, None)
        server.stop()


def _tables(spark) -> tuple[str, str]:
    n = f"{os.getpid()}_{next(_counter)}"
    src, tgt = f"cx.db.src{n}", f"cx.db.tgt{n}"
    spark.sql(f"CREATE TABLE {src} (id BIGINT, v STRING) USING iceberg")
    spark.sql(f"CREATE TABLE {tgt} (id BIGINT, v STRING, sm_run_id STRING, "
              "sm_snapshot_ts TIMESTAMP) USING iceberg")
    return src, tgt


def _insert(spark, table: str, *ids: int) -> None:
    spark.sql(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, 'v{i}')" for i in ids))


def _run(spark, state, clock, src, tgt, *, fail_after_write=False):
    job = Job(spark, state=state, clock=clock)
    job.init("connect_ice", {"job_bookmark_option": ENABLE})
    try:
        df = job.read.table(src, transformation_ctx="src")
        n = job.write(df, tgt, format="iceberg", transformation_ctx="sink")
        if fail_after_write:
            raise RuntimeError("the job failed after its write")
    except BaseException as e:
        job.fail(e)
        raise
    job.commit()
    clock.advance(60_000)
    return n, job.run_id


def test_an_iceberg_source_and_target_over_spark_connect_are_exactly_once(
        remote, sqlite_url, clock):
    from sparkmark.engine.compat import is_connect
    assert is_connect(remote)
    src, tgt = _tables(remote)
    _insert(remote, src, 1, 2, 3)
    n1, run1 = _run(remote, sqlite_url, clock, src, tgt)
    _insert(remote, src, 4, 5)
    # a run that fails after its write publishes nothing; its rows come with the next run
    with pytest.raises(RuntimeError, match="failed after its write"):
        _run(remote, sqlite_url, clock, src, tgt, fail_after_write=True)
    assert sorted(r[0] for r in remote.sql(f"SELECT id FROM {tgt}").collect()) == [1, 2, 3]
    n3, run3 = _run(remote, sqlite_url, clock, src, tgt)
    n4, _ = _run(remote, sqlite_url, clock, src, tgt)  # nothing new: nothing written
    assert (n1, n3, n4) == (3, 2, 0)
    rows = remote.sql(f"SELECT id, sm_run_id FROM {tgt}").collect()
    assert sorted((r[0], r[1]) for r in rows) == [
        (1, run1), (2, run1), (3, run1), (4, run3), (5, run3)]
    ledger = Job(None, state=sqlite_url).store.list_runs(job_name="connect_ice")
    assert [r["status"] for r in ledger] == ["SUCCEEDED", "FAILED", "SUCCEEDED", "EMPTY"]
    element = Bookmarks(sqlite_url).get("connect_ice")["JobBookmark"]["src"]
    newest = remote.sql(f"SELECT snapshot_id FROM {src}.refs WHERE name = 'main'").collect()
    assert element == {"table": src, "snapshot_id": newest[0][0]}
