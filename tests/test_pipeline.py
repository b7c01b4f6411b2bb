"""End-to-end pipelines on real Spark, real files and real state stores (SQLite + PostgreSQL).

Bronze generates one row per hour of its window; silver and gold read the layer below inside
their own window.  So after any sequence of runs, rollbacks and reloads, "every hour exactly
once up to the module's until" is checkable on the targets.
"""
from __future__ import annotations

import json
import os
import textwrap

import pytest

from sparkmark import Job, Pipeline
from sparkmark.core.errors import ConcurrentRunError, PipelineError
from sparkmark.state.ledger import ledger_rows
from sparkmark.lifecycle.pipeline import load_pipeline_file
from sparkmark.planning.windows import DAY_MS, parse_time
from sparkmark.state import open_store

H = 3_600_000
DAY0 = parse_time("2024-03-01")          # primordial date


def hours(a: int, b: int) -> list[int]:
    return list(range(a // H, b // H))


def build(spark, tmp_path, state, clock, *, max_days=60, fail=None, timezone="UTC",
          primordial="2024-03-01"):
    """bronze(1001) -> silver(2001) -> gold(3001); 1002 independent bronze.
    ``fail``: a set of module ids that raise while it contains them."""
    from pyspark.sql import functions as F
    fail = fail if fail is not None else set()
    p = Pipeline("pl", spark, state=state, primordial_date=primordial,
                 max_days_to_load=max_days, timezone=timezone, clock=clock)
    root = str(tmp_path / "data")

    def check(mid):
        if mid in fail:
            raise RuntimeError(f"boom in {mid}")

    @p.module(id=1001, name="Bronze_Events", layer="bronze", target=f"{root}/bronze")
    def bronze(ctx):
        check(1001)
        return (ctx.spark.range(ctx.from_ts // H, ctx.until_ts // H)
                .select(F.col("id").alias("hour"),
                        F.timestamp_millis(F.col("id") * H).alias("ts")))

    @p.module(id=1002, name="Bronze_Other", layer="bronze", target=f"{root}/other")
    def other(ctx):
        check(1002)
        return ctx.spark.range(1).select(F.lit(ctx.from_ts).alias("from_ts"))

    @p.module(id=2001, name="Silver_Events", layer="silver", target=f"{root}/silver",
              depends_on=[1001])
    def silver(ctx):
        check(2001)
        return ctx.window(ctx.spark.read.parquet(f"{root}/bronze"), "ts").select("hour", "ts")

    @p.module(id=3001, name="Gold_Daily", layer="gold", target=f"{root}/gold",
              depends_on=[2001])
    def gold(ctx):
        check(3001)
        df = ctx.window(ctx.spark.read.parquet(f"{root}/silver"), "ts")
        return df.groupBy(F.to_date("ts").alias("day")).agg(F.count("*").alias("n"),
                                                          F.min("hour").alias("first_hour"))
    p.root = root
    return p


def target_hours(spark, path):
    if not os.path.exists(path):
        return []
    return sorted(r.hour for r in spark.read.parquet(path).select("hour").collect())


def snapshot_state(p):
    """Everything a bad command must not change: ledger rows, bookmark versions, files."""
    rows = sorted((r["run_id"], r["status"], r["publish_state"]) for r in
                  p.store.list_runs(pipeline=p.name))
    versions = {m: p.store.job_row(p.job_name(m)) for m in p.modules}
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(p.root) for f in fs)
    return rows, versions, files


# ---------------------------------------------------------------------- failure gating
def test_failing_upstream_skips_dependents_others_go_on(spark, tmp_path, state_url, clock):
    clock.now = DAY0 + 2 * DAY_MS
    fail = {1001}
    p = build(spark, tmp_path, state_url, clock, fail=fail)
    s = p.run()
    assert s.failed and s.exit_code == 1
    assert {r.module_id: r.status for r in s.results} == {
        1001: "FAILED", 1002: "SUCCEEDED", 2001: "SKIPPED", 3001: "SKIPPED"}
    by_mod = {r["module_id"]: r for r in ledger_rows(p.store, pipeline="pl")}
    assert "boom in 1001" in by_mod[1001]["error"]
    assert "dependency 1001 failed" in by_mod[2001]["error"]
    assert "dependency 2001 failed" in by_mod[3001]["error"]
    assert all(by_mod[m]["pipeline_run_id"] == s.run_id for m in by_mod)
    assert not os.path.exists(f"{p.root}/bronze") or target_hours(spark, f"{p.root}/bronze") == []

    # the upstream's latest attempt failed: running silver alone is still SKIPPED
    clock.advance(H)
    s2 = p.run(modules=[2001])
    assert [(r.module_id, r.status) for r in s2.results] == [(2001, "SKIPPED")]
    assert not s2.failed

    # fixed: everything catches up from the primordial date, no gap
    fail.clear()
    clock.advance(H)
    s3 = p.run()
    assert {r.module_id: r.status for r in s3.results} == {
        1001: "SUCCEEDED", 1002: "SUCCEEDED", 2001: "SUCCEEDED", 3001: "SUCCEEDED"}
    expected = hours(DAY0, clock.now)
    assert target_hours(spark, f"{p.root}/bronze") == expected
    assert target_hours(spark, f"{p.root}/silver") == expected
    rows = spark.read.parquet(f"{p.root}/silver").select("sm_run_id", "sm_pipeline_run_id") \
        .distinct().collect()
    silver_run = [r for r in s3.results if r.module_id == 2001][0].run_id
    assert [(r.sm_run_id, r.sm_pipeline_run_id) for r in rows] == [(silver_run, s3.run_id)]


# ---------------------------------------------------------------------- backfill in chunks
def test_multi_chunk_backfill_then_empty(spark, tmp_path, sqlite_url, clock):
    clock.now = DAY0 + 7 * DAY_MS + 5 * H          # 7 days and 5 hours to load, 3 days a run
    p = build(spark, tmp_path, sqlite_url, clock, max_days=3)
    windows = []
    for _ in range(3):
        s = p.run(layers="bronze,silver")
        r = {x.module_id: x for x in s.results}
        assert set(r) == {1001, 1002, 2001}
        assert r[2001].from_ts == r[1001].from_ts and r[2001].until_ts == r[1001].until_ts
        windows.append((r[1001].from_ts, r[1001].until_ts))
    assert windows == [(DAY0, DAY0 + 3 * DAY_MS), (DAY0 + 3 * DAY_MS, DAY0 + 6 * DAY_MS),
                       (DAY0 + 6 * DAY_MS, clock.now)]
    assert target_hours(spark, f"{p.root}/bronze") == hours(DAY0, clock.now)
    assert target_hours(spark, f"{p.root}/silver") == hours(DAY0, clock.now)

    # nothing new: EMPTY without progress (from == until), no module call, nothing written
    s = p.run(modules=[1001, 2001])
    assert [(x.module_id, x.status, x.from_ts, x.until_ts) for x in s.results] == [
        (1001, "EMPTY", clock.now, clock.now), (2001, "EMPTY", clock.now, clock.now)]

    # gold was never run: it starts at the primordial date and is capped by silver's progress
    clock.advance(2 * H)
    s = p.run(layers="gold")
    (g,) = s.results
    assert (g.module_id, g.status, g.from_ts, g.until_ts) == (3001, "SUCCEEDED", DAY0,
                                                             DAY0 + 3 * DAY_MS)
    # a window with no rows: EMPTY *with* progress
    clock.advance(H)
    p.modules[1001] = p.modules[1001].__class__(
        **{**p.modules[1001].__dict__, "fn": lambda ctx: ctx.spark.range(0).selectExpr(
            "id as hour", "timestamp_millis(id) as ts")})
    s = p.run(modules=[1001])
    (b,) = s.results
    assert b.status == "EMPTY" and b.until_ts == clock.now > b.from_ts and b.records_written == 0
    row = [r for r in ledger_rows(p.store, pipeline="pl", module=1001)][-1]
    assert row["status"] == "EMPTY" and row["until_ts"] == clock.now
    cfg = json.loads(row["config"])
    assert cfg["pipeline"]["max_days_to_load"] == 3 and cfg["pipeline"]["target"].endswith("bronze")


# ---------------------------------------------------------------------- rollback and reload
def test_rollback_then_reload_exactly_once(spark, tmp_path, state_url, clock):
    p = build(spark, tmp_path, state_url, clock, max_days=2)
    for day in (2, 4, 5):                               # three snapshots as time passes
        clock.now = DAY0 + day * DAY_MS
        assert not p.run().failed
    full = hours(DAY0, clock.now)
    assert target_hours(spark, f"{p.root}/silver") == full
    before = snapshot_state(p)

    # dry run: shows the plan, changes nothing
    plan = p.rollback(modules=[2001, 3001], since="2024-03-04", dry_run=True)
    assert plan.dry_run and {m.module_id: m.cut_ts for m in plan.modules} == {
        2001: DAY0 + 2 * DAY_MS, 3001: DAY0 + 2 * DAY_MS}
    assert len(plan.run_ids) == 4 and all(m.files for m in plan.modules)
    assert "would roll back 4 run(s)" in str(plan)
    assert snapshot_state(p) == before

    plan = p.rollback(modules=["2001", 3001], since="2024-03-04")
    assert not plan.dry_run
    statuses = {r["run_id"]: r["status"] for r in p.store.list_runs(pipeline="pl")}
    assert all(statuses[r] == "ROLLED_BACK" for r in plan.run_ids)
    assert sum(s == "ROLLED_BACK" for s in statuses.values()) == 4
    # the rolled-back output is gone; what is left ends exactly at the cut
    assert target_hours(spark, f"{p.root}/silver") == hours(DAY0, DAY0 + 2 * DAY_MS)
    assert target_hours(spark, f"{p.root}/bronze") == full            # not rolled back
    assert all(not os.path.exists(f) for m in plan.modules for f in m.files)

    # the next run reloads from the cut: no gap, no duplicate
    clock.advance(H)
    s = p.run()
    r = {x.module_id: x for x in s.results}
    assert r[2001].from_ts == DAY0 + 2 * DAY_MS and r[3001].from_ts == DAY0 + 2 * DAY_MS
    s = p.run()
    full = hours(DAY0, clock.now)
    assert target_hours(spark, f"{p.root}/bronze") == full
    assert target_hours(spark, f"{p.root}/silver") == full
    gold = spark.read.parquet(f"{p.root}/gold").groupBy().sum("n").collect()[0][0]
    assert gold == len(full)

    # rollback by pipeline run id
    last_silver = ledger_rows(p.store, pipeline="pl", module=2001)[-1]
    plan = p.rollback(modules=[2001], run_id=s.run_id)
    assert plan.run_ids == [last_silver["run_id"]]
    assert plan.warnings and "3001" in plan.warnings[0]
    clock.advance(H)
    p.run()
    assert target_hours(spark, f"{p.root}/silver") == hours(DAY0, clock.now)


def test_bookmarked_source_inside_module_commits_and_rewinds(spark, tmp_path, sqlite_url,
                                                             clock):
    """A bookmarked source used through ctx.job commits with the module's output, and a
    rollback rewinds it so the reload reads the same input again, exactly once."""
    inbox = tmp_path / "inbox.txt"
    inbox.write_text("")
    clock.now = DAY0
    p = Pipeline("src", spark, state=sqlite_url, primordial_date="2024-03-01", clock=clock)

    def read_lines(job, ctx):           # a minimal source on the public RunContext seam
        bm = job.bookmark(ctx)
        pos = (bm.previous or {}).get("pos", 0)
        lines = inbox.read_text().splitlines()
        new = lines[pos:]
        job.record_read(ctx, {"pos": len(lines)}, {"new_input": bool(new), "records": len(new)})
        return spark.createDataFrame([(x,) for x in new], "v string")

    @p.module(id=1, name="Lines", layer="bronze", target=str(tmp_path / "lines"))
    def lines(ctx):
        return read_lines(ctx.job, "inbox")

    written = []
    for batch in (["a", "b"], ["c"], ["d", "e"]):
        with inbox.open("a") as f:
            f.write("".join(x + "\n" for x in batch))
        clock.advance(DAY_MS)
        s = p.run()
        written.append(s.results[0].records_written)
    assert written == [2, 1, 2]
    row = ledger_rows(p.store, pipeline="src")[-1]
    assert row["records_read"] == 2
    assert p.store.bookmark_entry("src.1")["JobBookmark"] == {"inbox": {"pos": 5}}

    def values():
        return sorted(r.v for r in spark.read.parquet(str(tmp_path / "lines")).collect())
    assert values() == list("abcde")
    first_until = ledger_rows(p.store, pipeline="src")[0]["until_ts"]
    p.rollback([1], since=first_until + 1)           # rolls back runs 2 and 3
    assert values() == ["a", "b"]
    assert p.store.bookmark_entry("src.1")["JobBookmark"] == {"inbox": {"pos": 2}}
    clock.advance(H)
    s = p.run()
    assert s.results[0].records_written == 3
    assert values() == list("abcde")


# ---------------------------------------------------------------------- selection
def test_layer_and_module_selection(spark, tmp_path, sqlite_url, clock):
    clock.now = DAY0 + DAY_MS
    p = build(spark, tmp_path, sqlite_url, clock)
    s = p.run(layers=["bronze"])
    assert sorted(r.module_id for r in s.results) == [1001, 1002]
    s = p.run(layers="gold", modules="2001")       # union, run in dependency order
    assert [r.module_id for r in s.results] == [2001, 3001]
    assert [r.status for r in s.results] == ["SUCCEEDED", "SUCCEEDED"]
    assert {r["module_id"] for r in ledger_rows(p.store, pipeline="pl")} == {1001, 1002, 2001,
                                                                             3001}
    with pytest.raises(PipelineError, match="unknown layer.*platinum"):
        p.run(layers="platinum")


# ---------------------------------------------------------------------- bad input, no change
def test_bad_input_changes_nothing(spark, tmp_path, state_url, clock):
    clock.now = DAY0 + 2 * DAY_MS
    p = build(spark, tmp_path, state_url, clock)
    p.run()
    before = snapshot_state(p)
    cases = [
        (lambda: p.run(modules=[9999]), PipelineError, "unknown module id.*9999"),
        (lambda: p.run(modules=["abc"]), PipelineError, "bad module id 'abc'"),
        (lambda: p.rollback([9999], since="2024-03-01"), PipelineError,
         "unknown module id.*9999"),
        (lambda: p.rollback([2001], since="2030-01-01"), PipelineError,
         "at or after the end of its data.*for module 2001"),
        (lambda: p.rollback([2001], since="2024-13-45"), PipelineError, "bad --since date"),
        (lambda: p.rollback([2001]), PipelineError, "exactly one of --since"),
        (lambda: p.rollback([2001], since="2024-03-01", run_id="x"), PipelineError,
         "exactly one of --since"),
        (lambda: p.rollback([2001], run_id="nope"), PipelineError, "run nope made no"),
        (lambda: p.rollback([], since="2024-03-01"), PipelineError, "at least one module"),
    ]
    for call, err, pattern in cases:
        with pytest.raises(err, match=pattern):
            call()
        assert snapshot_state(p) == before, pattern

    # a rollback (or a run) while a module's run is active
    job = Job(spark, state=p.store, clock=clock)
    job.init(p.job_name(3001), {"job_bookmark_option": "job-bookmark-enable"})
    try:
        active = snapshot_state(p)
        with pytest.raises(ConcurrentRunError, match="active run.*Nothing was changed"):
            p.rollback([2001], since="2024-03-01")
        with pytest.raises(ConcurrentRunError, match="active run"):
            p.run()
        assert snapshot_state(p) == active
    finally:
        job.fail("test over")


def test_definition_errors_refused_before_anything_runs(spark, tmp_path, sqlite_url, clock):
    p = Pipeline("bad", spark, state=sqlite_url, clock=clock)
    ran = []

    @p.module(id=1, name="A", layer="bronze", target=str(tmp_path / "a"), depends_on=[2])
    def a(ctx):
        ran.append(1)
        return ctx.spark.range(1)

    @p.module(id=2, name="B", layer="silver", target=str(tmp_path / "b"), depends_on=[1])
    def b(ctx):
        ran.append(2)
        return ctx.spark.range(1)

    @p.module(id=3, name="C", layer="gold", target=str(tmp_path / "c"), depends_on=[77])
    def c(ctx):
        ran.append(3)
        return ctx.spark.range(1)

    with pytest.raises(PipelineError, match="unknown dependency id.*3 -> 77"):
        p.run()
    del p.modules[3]
    with pytest.raises(PipelineError, match="dependency cycle: (1 -> 2 -> 1|2 -> 1 -> 2)"):
        p.run()
    assert ran == [] and open_store(sqlite_url).list_runs() == []
    with pytest.raises(PipelineError, match="module id 1 is defined twice"):
        p.module(id=1, name="again", layer="bronze", target="x")
    with pytest.raises(PipelineError, match="unknown format"):
        p.module(id=9, name="x", layer="bronze", target="x", format="xlsx")
    with pytest.raises(PipelineError, match="max_days_to_load"):
        Pipeline("x", spark, state=sqlite_url, max_days_to_load=0)
    with pytest.raises(PipelineError, match="unknown timezone"):
        Pipeline("x", spark, state=sqlite_url, timezone="Nowhere/Land")
    with pytest.raises(PipelineError, match="bad primordial_date"):
        Pipeline("x", spark, state=sqlite_url, primordial_date="31/12/2020")


def test_module_returning_garbage_is_failed_not_fatal(spark, tmp_path, sqlite_url, clock):
    clock.now = DAY0 + DAY_MS
    p = Pipeline("g", spark, state=sqlite_url, primordial_date="2024-03-01", clock=clock)

    @p.module(id=1, name="None", layer="bronze", target=str(tmp_path / "n"))
    def none(ctx):
        return None

    @p.module(id=2, name="Ok", layer="bronze", target=str(tmp_path / "ok"))
    def ok(ctx):
        return ctx.spark.range(3)

    s = p.run()
    assert {r.module_id: r.status for r in s.results} == {1: "FAILED", 2: "SUCCEEDED"}
    assert "return a Spark DataFrame" in s.results[0].error
    assert "FAILED" in str(s)


# ---------------------------------------------------------------------- pipeline files
def test_load_pipeline_file(spark, tmp_path, sqlite_url, monkeypatch):
    monkeypatch.setenv("SPARKMARK_STATE", sqlite_url)
    good = tmp_path / "good.py"
    good.write_text(textwrap.dedent(f"""
        from sparkmark import Pipeline
        from sparkmark.engine.spark import local_session
        spark = local_session()
        p = Pipeline("filepl", spark, primordial_date="2024-03-01", max_days_to_load=400)
        alias = p

        @p.module(id=1, name="One", layer="bronze", target={str(tmp_path / 'one')!r})
        def one(ctx):
            return ctx.spark.range(2)
    """))
    p = load_pipeline_file(good)
    assert p.name == "filepl" and list(p.modules) == [1]
    assert not p.run().failed

    none = tmp_path / "none.py"
    none.write_text("x = 1\n")
    two = tmp_path / "two.py"
    two.write_text(textwrap.dedent("""
        from sparkmark import Pipeline
        from sparkmark.engine.spark import local_session
        a = Pipeline("a", local_session())
        b = Pipeline("b", local_session())
    """))
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('nope')\n")
    for path, pattern in [(none, "defines no Pipeline"), (two, "defines several pipelines"),
                          (broken, "failed to load: RuntimeError: nope"),
                          (tmp_path / "missing.py", "does not exist")]:
        with pytest.raises(PipelineError, match=pattern):
            load_pipeline_file(path)


def test_a_run_that_overlaps_another_skips_the_module_it_moved(spark, tmp_path, sqlite_url,
                                                               clock):
    """Two p.run() of one pipeline overlapping: the second starts after the first's bronze
    committed and before its silver began (here from the first run's progress callback).
    The second runs silver over the window; the first's silver, planned before that, finds its
    module moved and is SKIPPED with nothing written. Silver holds every hour once (before the
    fix both silver runs committed the same window and silver held bronze's hours twice)."""
    p = build(spark, tmp_path, sqlite_url, clock)
    clock.now = DAY0 + DAY_MS
    other = build(spark, tmp_path, sqlite_url, clock)   # another process's Pipeline object
    started = []

    def progress(k, n, module, window, result):
        if module.id == 1001 and result is not None and not started:
            started.append(other.run(modules=[1001, 2001]))

    first = p.run(modules=[1001, 2001], progress=progress)
    second = started[0]
    by_id = {r.module_id: r for r in first.results}
    assert by_id[1001].status == "SUCCEEDED"
    assert by_id[2001].status == "SKIPPED" and "another run of pipeline pl moved module 2001" \
        in by_id[2001].error and "nothing was written" in by_id[2001].error
    assert {r.module_id: r.status for r in second.results} == {1001: "EMPTY", 2001: "SUCCEEDED"}
    expected = hours(DAY0, DAY0 + DAY_MS)
    assert target_hours(spark, f"{p.root}/silver") == expected
    assert target_hours(spark, f"{p.root}/bronze") == expected
    again = p.run(modules=[1001, 2001])             # and the next run goes on as usual
    assert [r.status for r in again.results] == ["EMPTY", "EMPTY"]
