"""Over Spark Connect (a real Connect server, no py4j in this process): pipelines with a
rollback, the Glue layer, and the clear refusal of JDBC databases sparkmark has no Python driver
for (PostgreSQL and MySQL/MariaDB work: tests/test_jdbc_postgres.py, tests/test_sinks_jdbc.py
and tests/test_jdbc_mariadb.py run over Connect too; the Glue layer's JDBC path is tested here).

The file-source and file-sink suites run over Connect too (tests/test_files.py and
tests/test_sinks.py, through the ``any_spark`` fixture)."""
from __future__ import annotations

import os

import pytest

from sparkmark import Job
from sparkmark.core.errors import SinkError, SourceError
from sparkmark.engine.fs import ArrowFS, file_system, is_connect

EN = {"job_bookmark_option": "job-bookmark-enable"}
MIN = 60_000


@pytest.fixture(scope="module")
def spark(connect_spark):
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    try:
        yield connect_spark
    finally:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def test_the_session_type_picks_the_file_system(spark, classic_spark, tmp_path):
    assert is_connect(spark) and not is_connect(classic_spark)
    assert isinstance(file_system(spark, str(tmp_path)), ArrowFS)
    assert not isinstance(file_system(classic_spark, str(tmp_path)), ArrowFS)


def test_pipeline_with_rollback_over_connect(spark, tmp_path, sqlite_url, clock):
    from test_pipeline import DAY0, build, hours, target_hours

    from sparkmark.planning.windows import DAY_MS
    p = build(spark, tmp_path, sqlite_url, clock, max_days=2)
    for day in (2, 4):
        clock.now = DAY0 + day * DAY_MS
        assert not p.run().failed
    assert target_hours(spark, f"{p.root}/silver") == hours(DAY0, DAY0 + 4 * DAY_MS)
    plan = p.rollback(modules=[2001, 3001], since="2024-03-04")
    assert len(plan.run_ids) == 2 and all(m.files for m in plan.modules)
    assert all(not os.path.exists(f) for m in plan.modules for f in m.files)  # deleted via pyarrow
    assert target_hours(spark, f"{p.root}/silver") == hours(DAY0, DAY0 + 2 * DAY_MS)
    s = p.run()                                  # reload from the cut, exactly once
    assert not s.failed
    assert target_hours(spark, f"{p.root}/silver") == hours(DAY0, DAY0 + 4 * DAY_MS)


def test_glue_layer_over_connect(spark, tmp_path, sqlite_url, clock):
    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.job import Job as GlueJob
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for i in range(3):
        f = src / f"f{i}.csv"
        f.write_text(f"id,v\n{i},x{i}\n")
        t = (clock.now - (40 - i) * MIN) / 1000
        os.utime(f, (t, t))
    glue = GlueContext(spark)
    assert glue.spark_session is spark and glue.sparkContext is None
    job = GlueJob(glue, state=sqlite_url, clock=clock)
    job.init("glue-connect", EN)
    frame = glue.create_dynamic_frame.from_options(
        "file", {"paths": [str(src)]}, format="csv", format_options={"withHeader": True},
        transformation_ctx="src")
    assert sorted(r.id for r in frame.toDF().collect()) == ["0", "1", "2"]
    glue.write_dynamic_frame.from_options(frame=frame, connection_type="file",
                                          connection_options={"path": str(out)},
                                          format="parquet", transformation_ctx="sink")
    job.commit()
    assert sorted(r.id for r in spark.read.parquet(str(out)).collect()) == ["0", "1", "2"]
    job.init("glue-connect", EN)
    frame = glue.create_dynamic_frame.from_options(
        "file", {"paths": [str(src)]}, format="csv", format_options={"withHeader": True},
        transformation_ctx="src")
    assert frame.toDF().count() == 0          # the bookmark moved, over Connect
    job.commit()


def test_jdbc_without_a_python_driver_is_one_clear_error_and_changes_nothing(
        spark, sqlite_url, clock, tmp_path):
    derby = f"jdbc:derby:{tmp_path}/db;create=true"
    job = Job(spark, state=sqlite_url, clock=clock).init("jdbc-connect", EN)
    with pytest.raises(SourceError, match=r"over Spark Connect .*PostgreSQL .*MySQL/MariaDB"
                                          r".*classic Spark session"):
        job.read.jdbc(derby, "orders", transformation_ctx="src")
    with pytest.raises(SinkError, match=r"over Spark Connect .*PostgreSQL .*MySQL/MariaDB"):
        job.write_jdbc(spark.range(3), derby, "t", transformation_ctx="sink")
    with pytest.raises(SourceError, match=r"load balancing, replication"):
        job.read.jdbc("jdbc:mysql:loadbalance://a,b/db", "orders", transformation_ctx="src")
    version = job.store.current_version("jdbc-connect").version
    job.fail("test over")
    assert job.store.list_runs(job_name="jdbc-connect")[-1]["status"] == "FAILED"
    assert job.store.current_version("jdbc-connect").version == version  # no state moved
    assert not os.path.exists(tmp_path / "db")  # nothing touched the database


def test_unreachable_database_over_connect_names_the_python_side(spark, sqlite_url, clock):
    from sparkmark.devtools.cluster import free_port
    url = f"jdbc:postgresql://127.0.0.1:{free_port()}/db?user=etl&password=hunter2"
    job = Job(spark, state=sqlite_url, clock=clock).init("jdbc-down", EN)
    with pytest.raises(SourceError, match="cannot connect to .*reachable from this Python "
                                          "process") as e:
        job.read.jdbc(url, "orders", transformation_ctx="src")
    assert "hunter2" not in str(e.value)
    with pytest.raises(SinkError, match="cannot connect to"):
        job.write_jdbc(spark.range(3), url, "t", transformation_ctx="sink")
    job.fail("test over")


def test_glue_jdbc_source_and_target_over_connect(spark, sqlite_url, clock, pg_target):
    import sqlalchemy as sa

    from sparkmark.glue.context import GlueContext
    from sparkmark.glue.job import Job as GlueJob
    sa_url, jdbc, props = pg_target
    engine = sa.create_engine(sa_url)
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE emp (empno int PRIMARY KEY, ename text)"))
        c.execute(sa.text("INSERT INTO emp VALUES (10, 'ann'), (30, 'bo'), (20, 'cy')"))
    glue = GlueContext(spark)
    opts = {"url": jdbc, "dbtable": "emp", **props}

    def run() -> int:
        job = GlueJob(glue, state=sqlite_url, clock=clock)
        job.init("glue-pg", EN)
        f = glue.create_dynamic_frame.from_options("postgresql", opts, transformation_ctx="emp")
        n = f.count()
        glue.write_dynamic_frame.from_options(
            frame=f, connection_type="postgresql",
            connection_options={**opts, "dbtable": "emp_copy"})
        job.commit()
        clock.advance(MIN)
        return n

    assert run() == 3
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO emp VALUES (40, 'di')"))
    assert run() == 1                              # the bookmark moved, over Connect
    with engine.connect() as c:
        got = c.execute(sa.text("SELECT empno FROM emp_copy ORDER BY empno")).scalars().all()
    engine.dispose()
    assert got == [10, 20, 30, 40]
