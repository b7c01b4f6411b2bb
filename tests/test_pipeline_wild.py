"""Pipelines in the wild (issue 17): late rows, rollbacks that reload, targets that stay exactly
once, compaction, nullability, cut rules, skipped exit codes, small things.

Real Spark, real files, real state stores; only the clock is fake.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
from datetime import timedelta

import pytest

from sparkmark import Job, Pipeline
from sparkmark.core.errors import PipelineError
from sparkmark.state.ledger import ledger_rows
from sparkmark.lifecycle.pipeline import ModuleContext
from sparkmark.planning.windows import DAY_MS, parse_time

H = 3_600_000
DAY0 = parse_time("2024-03-01")
EN = {"job_bookmark_option": "job-bookmark-enable"}


def hours(a: int, b: int) -> list[int]:
    return list(range(a // H, b // H))


def target_hours(spark, path):
    if not glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True):
        return []
    return sorted(r.hour for r in spark.read.parquet(path).select("hour").collect())


def hourly(p, mid, name, target, depends_on=(), **kw):
    """A bronze-like module: one row per hour of its window."""
    from pyspark.sql import functions as F

    @p.module(id=mid, name=name, layer="bronze", target=target, depends_on=depends_on, **kw)
    def fn(ctx):
        return (ctx.spark.range(ctx.from_ts // H, ctx.until_ts // H)
                .select(F.col("id").alias("hour"),
                        F.timestamp_millis(F.col("id") * H).alias("ts")))
    return fn


def state_of(p):
    return sorted((r["run_id"], r["status"], r["publish_state"])
                  for r in p.store.list_runs(pipeline=p.name))


# ---------------------------------------------------------------------- 1. late rows
def _land(folder, name, event_hours, mtime_ms):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        for h in event_hours:
            f.write(json.dumps({"hour": h, "event_ms": h * H}) + "\n")
    os.utime(path, (mtime_ms / 1000, mtime_ms / 1000))


def test_late_rows_reach_silver_exactly_once_with_the_stamp_window(spark, tmp_path, state_url,
                                                                   clock):
    """Bronze reads new files with bookmarks; silver windows bronze on its load stamp.  A file of
    yesterday's events that lands today still reaches silver, once; rows bronze wrote earlier in
    the same pipeline run reach silver in that run."""
    landing = str(tmp_path / "landing")
    os.makedirs(landing)
    root = str(tmp_path / "data")
    p = Pipeline("late", spark, state=state_url, primordial_date="2024-03-01",
                 max_days_to_load=5, clock=clock)

    @p.module(id=1, name="Bronze", layer="bronze", target=f"{root}/bronze")
    def bronze(ctx):
        return ctx.job.read.files(landing, format="json", transformation_ctx="landing")

    @p.module(id=2, name="Silver", layer="silver", target=f"{root}/silver", depends_on=[1])
    def silver(ctx):
        return ctx.window(ctx.spark.read.parquet(f"{root}/bronze")).select("hour", "event_ms")

    day = DAY_MS // H
    clock.now = DAY0 + DAY_MS + H
    _land(landing, "d0.json", range(0, day), DAY0 + DAY_MS)
    s = p.run()
    assert [r.status for r in s.results] == ["SUCCEEDED", "SUCCEEDED"]
    assert [r.records_written for r in s.results] == [24, 24]     # same run: no waiting

    clock.now = DAY0 + 2 * DAY_MS + H
    _land(landing, "d1.json", range(day, 2 * day), DAY0 + 2 * DAY_MS)
    _land(landing, "d0-late.json", range(0, day), DAY0 + 2 * DAY_MS)   # late: yesterday's events
    s = p.run()
    assert [r.records_written for r in s.results] == [48, 48]
    clock.now = DAY0 + 3 * DAY_MS + H
    s = p.run()                                                        # nothing new anywhere
    assert [r.records_written for r in s.results] == [0, 0]

    b = sorted(r.hour for r in spark.read.parquet(f"{root}/bronze").collect())
    sv = sorted(r.hour for r in spark.read.parquet(f"{root}/silver").collect())
    assert len(b) == 72 and sv == b                               # every bronze row, once

    # rollback + reload on the stamp window stays exactly once
    p.rollback([2], since="2024-03-02")
    s = p.run()
    sv = sorted(r.hour for r in spark.read.parquet(f"{root}/silver").collect())
    assert sv == b


def test_window_lookback_and_epoch_ms_without_df(spark):
    ctx = ModuleContext(spark, DAY0 + DAY_MS, DAY0 + 2 * DAY_MS, "r", DAY0 + 3 * DAY_MS, None,
                        None, "p", "UTC")
    df = spark.range(DAY0 // H, DAY0 // H + 72).selectExpr("id as hour", "id * 3600000 as ts_ms",
                                       "timestamp_millis(id * 3600000) as ts")
    # epoch-ms column without df: say so explicitly
    got = sorted(r.hour for r in df.where(ctx.in_window("ts_ms", epoch_ms=True)).collect())
    assert got == hours(DAY0 + DAY_MS, DAY0 + 2 * DAY_MS)
    got = sorted(r.hour for r in ctx.window(df, "ts", lookback=timedelta(hours=6)).collect())
    assert got == hours(DAY0 + DAY_MS - 6 * H, DAY0 + 2 * DAY_MS)
    got = sorted(r.hour for r in ctx.window(df, "ts_ms", lookback="1 day").collect())
    assert got == hours(DAY0, DAY0 + 2 * DAY_MS)
    with pytest.raises(PipelineError, match="lookback"):
        ctx.window(df, "ts", lookback="a while")
    with pytest.raises(PipelineError, match="sm_snapshot_ts"):
        ctx.window(df)                  # not an upstream target: no stamp to window on


# ---------------------------------------------------------------------- 2. rollback reloads
def test_rollback_without_primordial_date_reloads_from_the_cut(spark, tmp_path, sqlite_url,
                                                               clock):
    root = str(tmp_path / "data")
    p = Pipeline("nop", spark, state=sqlite_url, max_days_to_load=2, clock=clock)
    hourly(p, 1, "Bronze", f"{root}/bronze")
    start = DAY0 + 10 * DAY_MS
    clock.now = start + 5 * H
    for _ in range(4):
        assert not p.run().failed
        clock.advance(DAY_MS)
    first_from = start - 2 * DAY_MS
    assert target_hours(spark, f"{root}/bronze") == hours(first_from, clock.now - DAY_MS)
    plan = p.rollback([1], since="2024-01-01", dry_run=True)
    assert plan.modules[0].cut_ts == first_from
    promised = plan.modules[0].reload_from_ts
    assert promised == first_from
    p.rollback([1], since="2024-01-01")
    assert target_hours(spark, f"{root}/bronze") == []
    clock.advance(3 * DAY_MS)                    # the default start has moved on meanwhile
    s = p.run()
    assert s.results[0].from_ts == promised      # the plan said so, and it happens
    for _ in range(10):
        s = p.run()
        if s.results[0].status == "EMPTY" and s.results[0].from_ts == clock.now:
            break
    assert target_hours(spark, f"{root}/bronze") == hours(first_from, clock.now)


# ---------------------------------------------------------------------- 3. target ownership
def test_second_job_on_a_target_is_refused_unless_it_takes_over(spark, tmp_path, sqlite_url,
                                                                 clock):
    root = str(tmp_path / "data")
    clock.now = DAY0 + 2 * DAY_MS
    p = Pipeline("own", spark, state=sqlite_url, primordial_date="2024-03-01", clock=clock)
    hourly(p, 1001, "Bronze", f"{root}/bronze")
    assert not p.run().failed
    assert target_hours(spark, f"{root}/bronze") == hours(DAY0, clock.now)

    # renumbered onto the same target: refused before anything runs
    clock.advance(DAY_MS)
    p2 = Pipeline("own", spark, state=sqlite_url, primordial_date="2024-03-01", clock=clock)
    hourly(p2, 1005, "Bronze", f"{root}/bronze")
    before = state_of(p2)
    with pytest.raises(PipelineError, match=r"belongs to job 'own\.1001'.*take_over_from"):
        p2.run()
    assert state_of(p2) == before
    assert target_hours(spark, f"{root}/bronze") == hours(DAY0, DAY0 + 2 * DAY_MS)

    # explicitly taken over: the window carries over, no duplicate, no gap
    p3 = Pipeline("own", spark, state=sqlite_url, primordial_date="2024-03-01", clock=clock)
    hourly(p3, 1005, "Bronze", f"{root}/bronze", take_over_from=1001)
    s = p3.run()
    assert s.results[0].from_ts == DAY0 + 2 * DAY_MS
    assert target_hours(spark, f"{root}/bronze") == hours(DAY0, clock.now)
    # and now the old job is the one refused
    clock.advance(H)
    with pytest.raises(PipelineError, match=r"belongs to job 'own\.1005'"):
        p.run()
    with pytest.raises(PipelineError, match="take_over_from"):
        p3.module(id=7, name="x", layer="bronze", target="y", take_over_from="bad name!")


def test_a_rollback_of_the_taking_over_module_gives_the_target_back(spark, tmp_path,
                                                                     state_url, clock):
    """1001 writes a target, 1005 takes it over; rolling back every run of 1005 gives the
    target back to 1001 (its rows are the only committed writes left), which goes on from
    where it ended and refuses 1005's old declaration no more.  On SQLite and PostgreSQL, with
    the owner found from the indexed target key (schema 5)."""
    root = str(tmp_path / "data")
    clock.now = DAY0 + DAY_MS
    p = Pipeline("back", spark, state=state_url, primordial_date="2024-03-01", clock=clock)
    hourly(p, 1001, "Bronze", f"{root}/bronze")
    assert not p.run().failed
    clock.advance(6 * H)
    p2 = Pipeline("back", spark, state=state_url, primordial_date="2024-03-01", clock=clock)
    hourly(p2, 1005, "Bronze", f"{root}/bronze", take_over_from=1001)
    s = p2.run()
    assert s.results[0].from_ts == DAY0 + DAY_MS and not s.failed
    clock.advance(H)
    with pytest.raises(PipelineError, match=r"belongs to job 'back\.1005'"):
        p.run()
    plan = p2.rollback(modules=[1005], since="2024-03-01")
    assert len(plan.run_ids) == 1
    assert target_hours(spark, f"{root}/bronze") == hours(DAY0, DAY0 + DAY_MS)
    s = p.run()                         # 1001 owns its target again and goes on from its end
    assert not s.failed and s.results[0].from_ts == DAY0 + DAY_MS
    assert target_hours(spark, f"{root}/bronze") == hours(DAY0, clock.now)
    p4 = Pipeline("back", spark, state=state_url, primordial_date="2024-03-01", clock=clock)
    hourly(p4, 1006, "Bronze", f"{root}/bronze")   # a third job is refused: 1001 owns it
    with pytest.raises(PipelineError, match=r"belongs to job 'back\.1001'"):
        p4.run()


# ---------------------------------------------------------------------- 4. compaction
def _compact(spark, target):
    tmp = target + "_compacting"
    spark.read.parquet(target).coalesce(1).write.parquet(tmp)
    for f in glob.glob(os.path.join(target, "sm-*")):
        os.remove(f)
    (part,) = glob.glob(os.path.join(tmp, "part-*.parquet"))
    shutil.move(part, os.path.join(target, "part-compacted.parquet"))
    shutil.rmtree(tmp)


def test_rollback_after_compaction_never_leaves_rows_behind(spark, tmp_path, state_url, clock):
    root = str(tmp_path / "data")
    p = Pipeline("cmp", spark, state=state_url, primordial_date="2024-03-01",
                 max_days_to_load=1, clock=clock)
    hourly(p, 1, "Bronze", f"{root}/bronze")
    clock.now = DAY0 + 4 * DAY_MS
    for _ in range(4):
        p.run()
    full = hours(DAY0, clock.now)
    assert target_hours(spark, f"{root}/bronze") == full
    _compact(spark, f"{root}/bronze")
    assert target_hours(spark, f"{root}/bronze") == full
    before = state_of(p)
    with pytest.raises(PipelineError, match="rewritten.*sm_run_id"):
        p.rollback([1], since="2024-03-03", dry_run=True)
    with pytest.raises(PipelineError, match="rewritten.*sm_run_id"):
        p.rollback([1], since="2024-03-03")
    assert state_of(p) == before                        # nothing marked ROLLED_BACK
    assert "ROLLED_BACK" not in {s for _, s, _ in state_of(p)}
    # the user removes those runs' rows themselves (as the error says): now it goes through
    runs = [r["run_id"] for r in p.store.list_runs(pipeline="cmp")][2:]
    from pyspark.sql import functions as F
    kept = spark.read.parquet(f"{root}/bronze").where(~F.col("sm_run_id").isin(runs))
    kept.coalesce(1).write.parquet(f"{root}/kept")
    shutil.rmtree(f"{root}/bronze")
    shutil.move(f"{root}/kept", f"{root}/bronze")
    plan = p.rollback([1], since="2024-03-03")
    assert sorted(plan.run_ids) == sorted(runs)
    p.run()
    p.run()
    assert target_hours(spark, f"{root}/bronze") == full


# ---------------------------------------------------------------------- 5. nullability
def test_nested_columns_do_not_wedge_a_module(spark, tmp_path, sqlite_url, clock):
    from pyspark.sql import functions as F
    root = str(tmp_path / "data")
    p = Pipeline("nul", spark, state=sqlite_url, primordial_date="2024-03-01", clock=clock)

    @p.module(id=1, name="Nested", layer="silver", target=f"{root}/nested")
    def nested(ctx):
        return (ctx.spark.range(4).groupBy((F.col("id") % 2).alias("k"))
                .agg(F.collect_list("id").alias("ids"))
                .withColumn("arr", F.array(F.col("k"), F.lit(1)))
                .withColumn("st", F.struct(F.col("k").alias("a"), F.lit("x").alias("b"))))

    for day in (1, 2, 3):
        clock.now = DAY0 + day * DAY_MS
        s = p.run()
        assert s.results[0].status == "SUCCEEDED", s.results[0].error
    assert spark.read.parquet(f"{root}/nested").count() == 6


def test_job_write_compares_types_modulo_nullability(spark, tmp_path, sqlite_url, clock):
    from pyspark.sql import functions as F
    from sparkmark.core.errors import SinkError
    target = str(tmp_path / "t")
    for _i in range(2):
        job = Job(spark, state=sqlite_url, clock=clock).init("nn", EN)
        job.write(spark.range(2).select(F.array("id").alias("a"),
                                        F.struct(F.col("id").alias("x")).alias("s")),
                  target, transformation_ctx="out")
        job.commit()
    assert spark.read.parquet(target).count() == 4
    job = Job(spark, state=sqlite_url, clock=clock).init("nn", EN)
    with pytest.raises(SinkError, match="incompatible schema"):   # a real clash still is one
        job.write(spark.range(2).select(F.array(F.col("id").cast("string")).alias("a"),
                                        F.struct(F.col("id").alias("x")).alias("s")),
                  target, transformation_ctx="out")
    job.fail("test")


# ---------------------------------------------------------------------- 6. cut rule
def test_since_on_a_boundary_cuts_there(spark, tmp_path, sqlite_url, clock):
    root = str(tmp_path / "data")
    p = Pipeline("cut", spark, state=sqlite_url, primordial_date="2024-03-01",
                 max_days_to_load=1, clock=clock)
    hourly(p, 1, "Bronze", f"{root}/bronze")
    clock.now = DAY0 + 5 * DAY_MS
    for _ in range(5):
        p.run()
    plan = p.rollback([1], since="2024-03-05", dry_run=True)
    assert plan.modules[0].cut_ts == parse_time("2024-03-05") and len(plan.run_ids) == 1
    before = state_of(p)
    with pytest.raises(PipelineError, match="at or after the end of its data.*nothing"):
        p.rollback([1], since="2024-03-06")
    assert state_of(p) == before


# ---------------------------------------------------------------------- 7. skipped exit code
def test_skipped_by_a_failed_dependency_is_not_ok(spark, tmp_path, sqlite_url, clock):
    root = str(tmp_path / "data")
    p = Pipeline("skp", spark, state=sqlite_url, primordial_date="2024-03-01", clock=clock)
    broken = {"on": True}

    @p.module(id=1, name="Bronze", layer="bronze", target=f"{root}/b")
    def b(ctx):
        if broken["on"]:
            raise RuntimeError("bronze broke")
        return ctx.spark.range(1)

    @p.module(id=2, name="Silver", layer="silver", target=f"{root}/s", depends_on=[1])
    def s(ctx):
        return ctx.spark.range(1)

    clock.now = DAY0 + DAY_MS
    p.run()
    clock.advance(H)
    summary = p.run(layers="silver")
    assert [r.status for r in summary.results] == ["SKIPPED"]
    assert not summary.failed and summary.skipped and summary.exit_code == 1
    assert "SKIPPED" in str(summary).splitlines()[0]
    broken["on"] = False
    clock.advance(H)
    assert p.run().exit_code == 0


# ---------------------------------------------------------------------- 8. local days
def test_chunks_follow_local_midnight_across_dst(spark, tmp_path, sqlite_url, clock):
    tz = "America/New_York"
    root = str(tmp_path / "data")
    p = Pipeline("dst", spark, state=sqlite_url, max_days_to_load=3, timezone=tz, clock=clock)
    hourly(p, 1, "Bronze", f"{root}/bronze")
    clock.now = parse_time("2024-03-12T15:00", tz)          # DST began 2024-03-10
    windows = []
    for _ in range(2):
        r = p.run().results[0]
        windows.append((r.from_ts, r.until_ts))
    assert windows[0][0] == parse_time("2024-03-09", tz)     # default start: local midnight
    assert windows[0][1] == parse_time("2024-03-12", tz)     # 3 local days (71 hours)
    assert windows[1] == (parse_time("2024-03-12", tz), clock.now)


# ---------------------------------------------------------------------- 9. smaller ones
def test_smaller_ones(spark, tmp_path, sqlite_url, clock):
    with pytest.raises(PipelineError, match="primordial_date.*seconds"):
        Pipeline("x", spark, state=sqlite_url, primordial_date=1710043200)
    root = str(tmp_path / "data")
    p = Pipeline("small", spark, state=sqlite_url, primordial_date="2024-03-01", clock=clock)
    hourly(p, 1, "Bronze", f"{root}/b")

    @p.module(id=2, name="Bad", layer="bronze", target=f"{root}/bad")
    def bad(ctx):
        return ctx.spark.range(3).selectExpr("raise_error('nope') as x")

    clock.now = DAY0 + DAY_MS
    s = p.run()
    failed = [r for r in s.results if r.module_id == 2][0]
    assert failed.status == "FAILED"
    row = [r for r in ledger_rows(p.store, pipeline="small") if r["module_id"] == 2][0]
    assert failed.records_written == row["records_written"] == 0
    assert s.rows[1]["records_written"] == 0
    p.rollback([1], run_id=s.run_id)
    with pytest.raises(PipelineError, match="already rolled back"):
        p.rollback([1], run_id=s.run_id)
