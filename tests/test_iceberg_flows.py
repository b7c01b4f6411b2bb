"""Iceberg tables in pipelines and in the Glue layer (Spark 3.5 and 4.1, real Iceberg tables in a
Hadoop catalog under tmp or on an ``s3a://`` warehouse on the moto S3 server, a real SQLite
state store).

- a pipeline whose modules write to Iceberg tables (``@p.module(format="iceberg",
  target="local.db.t")``): bronze reads a bookmarked Iceberg source, silver windows bronze's
  table on its load stamp; every source row reaches each target exactly once over several runs,
  and a pipeline rollback removes a module's run from its table as one Iceberg ``delete``
  commit, the next run reloading it once;
- the Glue layer: ``create_dynamic_frame.from_catalog`` and ``write_dynamic_frame.from_catalog``
  on Iceberg tables named in ``SPARKMARK_GLUE_CATALOG`` or found in the Spark catalog
  (``Provider: iceberg``), bookmarked and exactly once;
- bad input (a path as an Iceberg module target, ``partition_by``, an Iceberg mapping entry
  without a table, write options) is one clear error that changes nothing.

Needs the Iceberg runtime of the Spark line (3.5 or 4.1); runs in the Iceberg pytest process (``make
test-iceberg``), skips elsewhere unless SPARKMARK_REQUIRE_ICEBERG=1.
"""
from __future__ import annotations

import itertools
import json
import os

import pytest

from sparkmark import Bookmarks, Pipeline
from sparkmark.core.errors import ConfigError, PipelineError
from sparkmark.planning.windows import DAY_MS, parse_time

# importing sparkmark.glue sets PYSPARK_SUBMIT_ARGS (for a Glue script's bare SparkContext())
# when nothing configures Spark; later tests of this process start Spark subprocesses (crash
# trials, fault schedules) that must not inherit it
_SUBMIT_ARGS = os.environ.get("PYSPARK_SUBMIT_ARGS")
import sparkmark.glue  # noqa: E402,F401

if _SUBMIT_ARGS is None:
    os.environ.pop("PYSPARK_SUBMIT_ARGS", None)

H = 3_600_000
DAY0 = parse_time("2024-03-01")
_counter = itertools.count()


def _name(prefix, catalog="local"):
    return f"{catalog}.db.{prefix}{os.getpid()}_{next(_counter)}"


def _ids(spark, table):
    return sorted(r[0] for r in spark.sql(f"SELECT id FROM {table}").collect())


def _operations(spark, table):
    return [r[0] for r in spark.sql(f"SELECT operation FROM {table}.snapshots "
                                    "ORDER BY committed_at").collect()]


def _current(spark, table):
    rows = spark.sql(f"SELECT snapshot_id FROM {table}.refs WHERE name = 'main'").collect()
    return rows[0][0] if rows else None


STAMPS = "sm_run_id STRING, sm_snapshot_ts TIMESTAMP, sm_pipeline_run_id STRING"


# ---------------------------------------------------------------------- pipelines
def _pipeline(spark, state, clock, src, bronze, silver):
    from pyspark.sql import functions as F
    p = Pipeline("icepl", spark, state=state, primordial_date="2024-03-01", clock=clock)

    @p.module(id=1001, name="Bronze_Orders", layer="bronze", target=bronze, format="iceberg")
    def bronze_mod(ctx):
        return ctx.job.read.table(src, transformation_ctx="orders")

    @p.module(id=2001, name="Silver_Orders", layer="silver", target=silver, format="iceberg",
              depends_on=[1001])
    def silver_mod(ctx):
        return (ctx.window(ctx.spark.table(bronze))
                .select("id", (F.col("v") * 10).alias("v10")))

    return p


def test_pipeline_modules_write_iceberg_tables_exactly_once_and_roll_back(ice, sqlite_url,
                                                                          clock, ice_catalog):
    src, bronze, silver = (_name(p, ice_catalog) for p in ("psrc", "pbronze", "psilver"))
    ice.sql(f"CREATE TABLE {src} (id BIGINT, v BIGINT) USING iceberg")
    ice.sql(f"CREATE TABLE {bronze} (id BIGINT, v BIGINT, {STAMPS}) USING iceberg")
    ice.sql(f"CREATE TABLE {silver} (id BIGINT, v10 BIGINT, {STAMPS}) USING iceberg")
    p = _pipeline(ice, sqlite_url, clock, src, bronze, silver)
    expected: list[int] = []
    runs = []
    for day, ids in ((1, (1, 2, 3)), (2, (4, 5)), (3, ())):
        if ids:
            ice.sql(f"INSERT INTO {src} VALUES " + ", ".join(f"({i}, {i})" for i in ids))
            expected += ids
        clock.now = DAY0 + day * DAY_MS
        s = p.run()
        assert not s.failed, s.rows()
        runs.append(s)
        assert _ids(ice, bronze) == expected and _ids(ice, silver) == expected
    assert [r.status for r in runs[-1].results] == ["EMPTY", "EMPTY"]
    assert sorted(r[0] for r in ice.sql(f"SELECT v10 FROM {silver}").collect()) == \
        [10 * i for i in expected]
    # each module run is one stamped Iceberg snapshot of its target
    summaries = ice.sql(f"SELECT s.summary FROM {silver}.snapshots s JOIN {silver}.history h "
                        "ON s.snapshot_id = h.snapshot_id WHERE h.is_current_ancestor "
                        "AND s.operation = 'append'").collect()
    assert len(summaries) == 2         # (the EMPTY run staged an empty snapshot, unpublished)
    assert all(s[0]["sparkmark.job"] == "icepl.2001" for s in summaries)

    # roll back silver's second run: its rows leave the table in one delete commit
    second = runs[1].run_id
    plan = p.rollback(modules=[2001], run_id=second, dry_run=True)
    assert plan.dry_run and _ids(ice, silver) == expected
    before = _current(ice, silver)
    p.rollback(modules=[2001], run_id=second)
    assert _ids(ice, silver) == [1, 2, 3]
    assert _operations(ice, silver)[-1] == "delete" and _current(ice, silver) != before
    assert _ids(ice, bronze) == expected                       # bronze was not rolled back
    # the next run reloads silver's window from the cut: 4 and 5 once
    clock.advance(H)
    s = p.run()
    assert not s.failed, s.rows()
    assert _ids(ice, silver) == expected and _ids(ice, bronze) == expected


def test_pipeline_iceberg_module_bad_input_is_one_clear_error(ice, sqlite_url, clock):
    p = Pipeline("icebad", ice, state=sqlite_url, primordial_date="2024-03-01", clock=clock)
    with pytest.raises(PipelineError, match="must be a table name such as catalog.db.table"):
        p.module(id=1, name="B", layer="bronze", target="/data/bronze", format="iceberg")
    with pytest.raises(PipelineError, match="partition_by does not apply to an Iceberg"):
        p.module(id=1, name="B", layer="bronze", target="local.db.x", format="iceberg",
                 partition_by="day")
    with pytest.raises(PipelineError, match="unknown format 'hudi'.*iceberg, delta"):
        p.module(id=1, name="B", layer="bronze", target="local.db.x", format="hudi")
    assert p.modules == {}

    # a target table without the stamp columns: the module fails with the ALTER TABLE to run,
    # the table does not move, and the module's window stays where it was
    src, tgt = _name("bsrc"), _name("btgt")
    ice.sql(f"CREATE TABLE {src} (id BIGINT, v BIGINT) USING iceberg")
    ice.sql(f"CREATE TABLE {tgt} (id BIGINT, v BIGINT) USING iceberg")
    ice.sql(f"INSERT INTO {src} VALUES (1, 1)")

    @p.module(id=1, name="B", layer="bronze", target=tgt, format="iceberg")
    def b(ctx):
        return ctx.job.read.table(src, transformation_ctx="s")

    clock.now = DAY0 + DAY_MS
    s = p.run()
    assert s.failed
    assert "ALTER TABLE" in s.results[0].error and "sm_pipeline_run_id" in s.results[0].error
    assert _current(ice, tgt) is None and _ids(ice, tgt) == []
    assert Bookmarks(sqlite_url).get("icebad.1")["Version"] == 0


# ---------------------------------------------------------------------- the Glue layer
@pytest.fixture
def glue(ice):
    from sparkmark.glue.context import GlueContext
    return GlueContext(ice.sparkContext)


def _glue_run(glue, state, clock, job_name, src_table, tgt_table, option="job-bookmark-enable"):
    from sparkmark.glue.job import Job
    from sparkmark.glue.utils import getResolvedOptions
    args = getResolvedOptions(["script.py", "--JOB_NAME", job_name, "--job-bookmark-option",
                               option], ["JOB_NAME"])
    job = Job(glue, state=state, clock=clock)
    job.init(args["JOB_NAME"], args)
    try:
        frame = glue.create_dynamic_frame.from_catalog(database="db", table_name=src_table,
                                                       transformation_ctx="src")
        glue.write_dynamic_frame.from_catalog(frame=frame, database="db", table_name=tgt_table,
                                              transformation_ctx="sink")
    except BaseException as e:       # as Glue does when the script raises: the run fails
        job.sparkmark_job.fail(e)
        raise
    job.commit()
    clock.advance(60_000)
    return job.run_id


def test_glue_from_catalog_reads_and_writes_iceberg_tables_exactly_once(
        ice, glue, sqlite_url, clock, tmp_path, monkeypatch, ice_catalog):
    src, tgt = _name("gsrc", ice_catalog), _name("gtgt", ice_catalog)
    ice.sql(f"CREATE TABLE {src} (id BIGINT, v STRING) USING iceberg")
    ice.sql(f"CREATE TABLE {tgt} (id BIGINT, v STRING) USING iceberg")  # Glue: no stamps
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"db.orders": {"format": "iceberg", "table": src},
                                   "db.orders_out": {"format": "iceberg", "table": tgt}}))
    monkeypatch.setenv("SPARKMARK_GLUE_CATALOG", str(catalog))
    ice.sql(f"INSERT INTO {src} VALUES (1, 'a'), (2, 'b')")
    _glue_run(glue, sqlite_url, clock, "gice", "orders", "orders_out")
    assert _ids(ice, tgt) == [1, 2]
    ice.sql(f"INSERT INTO {src} VALUES (3, 'c')")
    r2 = _glue_run(glue, sqlite_url, clock, "gice", "orders", "orders_out")
    assert _ids(ice, tgt) == [1, 2, 3]                 # the bookmark: only the new row
    published = _current(ice, tgt)
    _glue_run(glue, sqlite_url, clock, "gice", "orders", "orders_out")
    assert _ids(ice, tgt) == [1, 2, 3] and _current(ice, tgt) == published
    summary = ice.sql(f"SELECT summary FROM {tgt}.snapshots "
                      f"WHERE snapshot_id = {published}").collect()[0][0]
    assert summary["sparkmark.run-id"] == r2 and summary["sparkmark.ctx"] == "sink"
    element = Bookmarks(sqlite_url).get("gice")["JobBookmark"]["src"]
    assert element == {"table": src, "snapshot_id": _current(ice, src)}

    # bad input: one clear error, nothing committed
    version = Bookmarks(sqlite_url).get("gice")["Version"]
    catalog.write_text(json.dumps({"db.orders": {"format": "iceberg", "table": src},
                                   "db.broken": {"format": "iceberg", "path": "/x"}}))
    with pytest.raises(ConfigError, match="unknown key.*'path'.*Iceberg table"):
        _glue_run(glue, sqlite_url, clock, "gice", "orders", "broken")
    from sparkmark.glue.job import Job
    job = Job(glue, state=sqlite_url, clock=clock)
    job.init("gice", {"job_bookmark_option": "job-bookmark-enable"})
    catalog.write_text(json.dumps({"db.orders_out": {"format": "iceberg", "table": tgt}}))
    from sparkmark.glue.dynamicframe import DynamicFrame
    frame = DynamicFrame.fromDF(ice.createDataFrame([(9, "z")], "id BIGINT, v STRING"), glue,
                                "f")
    with pytest.raises(ConfigError, match="do not apply to Iceberg table db.orders_out"):
        glue.write_dynamic_frame.from_catalog(frame=frame, database="db",
                                              table_name="orders_out",
                                              additional_options={"partitionKeys": ["v"]})
    job.sparkmark_job.fail(RuntimeError("test over"))
    assert Bookmarks(sqlite_url).get("gice")["Version"] == version
    assert _ids(ice, tgt) == [1, 2, 3]


def test_glue_finds_iceberg_tables_in_the_spark_catalog(ice, glue, sqlite_url, clock,
                                                        monkeypatch):
    from sparkmark.glue.catalog import lookup
    monkeypatch.delenv("SPARKMARK_GLUE_CATALOG", raising=False)
    src, tgt = _name("csrc"), _name("ctgt")
    ice.sql(f"CREATE TABLE {src} (id BIGINT, v STRING) USING iceberg")
    ice.sql(f"CREATE TABLE {tgt} (id BIGINT, v STRING) USING iceberg")
    ice.sql(f"INSERT INTO {src} VALUES (7, 'x')")
    previous = ice.catalog.currentCatalog()
    ice.catalog.setCurrentCatalog("local")       # as Glue's Iceberg set-up does for its catalog
    try:
        table = lookup(ice, "db", src.split(".")[-1])
        assert table.kind == "iceberg" and table.table == "db." + src.split(".")[-1]
        _glue_run(glue, sqlite_url, clock, "gcat", src.split(".")[-1], tgt.split(".")[-1])
        _glue_run(glue, sqlite_url, clock, "gcat", src.split(".")[-1], tgt.split(".")[-1])
    finally:
        ice.catalog.setCurrentCatalog(previous)
    assert _ids(ice, tgt) == [7]
