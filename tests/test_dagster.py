"""sparkmark[dagster] end to end: real Dagster (materialize on an ephemeral instance), real
local Spark, real files under tmp_path, real SQLite and PostgreSQL state stores, and a real
Dagster Pipes subprocess.  Only the clock is faked (in-process runs).

Dagster is an extra: without it this module is skipped, unless SPARKMARK_REQUIRE_SCHEDULER=1
(``make test-dagster``), where a missing Dagster is an error.
"""
from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

if os.environ.get("SPARKMARK_REQUIRE_SCHEDULER") == "1":
    import dagster as dg  # a missing Dagster fails the run here, it is not skipped
else:
    dg = pytest.importorskip("dagster")

from sparkmark import Job, Pipeline  # noqa: E402
from sparkmark.integrations.dagster import (CHECK_NAME, SparkmarkResource,  # noqa: E402
                                            ledger_metadata, materialize_job_result,
                                            module_asset_key, report_to_pipes,
                                            sparkmark_pipeline_assets, status_check_spec)
from sparkmark.state.ledger import ledger_rows  # noqa: E402

MIN = 60_000
H = 60 * MIN
ENABLE = {"job_bookmark_option": "job-bookmark-enable"}


def land(folder, name, ids, mtime_ms=None):
    """A JSON-lines file of orders; ``mtime_ms`` sets its modification time."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        for i in ids:
            f.write(json.dumps({"id": i, "amount": i * 10}) + "\n")
    if mtime_ms is not None:
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


def meta(result, node):
    """The metadata values (plain Python) of the node's only materialization."""
    mats = result.asset_materializations_for_node(node)
    assert len(mats) == 1, mats
    return {k: getattr(v, "value", getattr(v, "text", getattr(v, "data", v)))
            for k, v in mats[0].metadata.items()}


def checks(result):
    return {(e.asset_key.to_user_string(), e.check_name): e for e in
            result.get_asset_check_evaluations()}


def materialized(result):
    return sorted(e.asset_key.to_user_string() for e in
                  result.get_asset_materialization_events())


# ---------------------------------------------------------------------- a plain Job as an asset
def orders_asset(spark, clock, src, out, *, fail=False):
    @dg.asset(check_specs=[status_check_spec("orders")])
    def orders(sparkmark: SparkmarkResource) -> dg.MaterializeResult:
        with sparkmark.job(spark, clock=clock).run("orders", ENABLE) as job:
            df = job.read.files(src, format="json", transformation_ctx="orders_src")
            if fail:
                raise RuntimeError("boom: bad orders")
            job.write(df, out, format="parquet", transformation_ctx="orders_sink")
        return materialize_job_result(job, check_name=CHECK_NAME)
    return orders


def test_job_asset_reads_only_new_files_on_each_materialize(spark, tmp_path, state_url, clock):
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    land(src, "a.json", [1, 2], clock.now - 30 * MIN)
    land(src, "b.json", [3], clock.now - 25 * MIN)
    resource = SparkmarkResource(state=state_url)
    instance = dg.DagsterInstance.ephemeral()
    asset = orders_asset(spark, clock, src, out)

    r1 = dg.materialize([asset], resources={"sparkmark": resource}, instance=instance)
    assert r1.success
    m1 = meta(r1, "orders")
    assert (m1["status"], m1["job_name"], m1["files_read"], m1["records_written"]) == \
        ("SUCCEEDED", "orders", 2, 3)
    assert (m1["run_number"], m1["attempt"], m1["bookmark_option"]) == \
        (1, 0, "job-bookmark-enable")
    assert m1["end_version"] > m1["start_version"]
    assert m1["sources"]["orders_src"]["files"] == 2 and m1["new_input"] is True
    assert m1["snapshot"] == clock.now / 1000
    assert checks(r1)[("orders", CHECK_NAME)].passed

    clock.advance(H)
    land(src, "c.json", [4, 5], clock.now - 30 * MIN)
    r2 = dg.materialize([asset], resources={"sparkmark": resource}, instance=instance)
    m2 = meta(r2, "orders")
    assert (m2["files_read"], m2["records_written"], m2["run_number"]) == (1, 2, 2)
    assert m2["start_version"] == m1["end_version"] and m2["end_version"] > m2["start_version"]
    assert sorted(r.id for r in spark.read.parquet(out).collect()) == [1, 2, 3, 4, 5]

    clock.advance(H)  # nothing new: EMPTY is a materialization too (the asset is up to date)
    m3 = meta(dg.materialize([asset], resources={"sparkmark": resource}, instance=instance),
              "orders")
    assert (m3["status"], m3["files_read"], m3["new_input"]) == ("EMPTY", 0, False)

    rows = resource.ledger(job="orders")
    assert [(r["run_id"], r["status"]) for r in rows] == [
        (m1["run_id"], "SUCCEEDED"), (m2["run_id"], "SUCCEEDED"), (m3["run_id"], "EMPTY")]
    latest = instance.get_latest_materialization_event(dg.AssetKey("orders"))
    assert latest.asset_materialization.metadata["run_id"].text == m3["run_id"]
    assert resource.bookmarks().get("orders")["Version"] == m3["end_version"]


def test_failed_job_run_fails_the_asset_and_stays_on_record(spark, tmp_path, state_url, clock):
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    land(src, "a.json", [1], clock.now - 30 * MIN)
    resource = SparkmarkResource(state=state_url)
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([orders_asset(spark, clock, src, out, fail=True)],
                            resources={"sparkmark": resource}, instance=instance,
                            raise_on_error=False)
    assert not result.success
    failure = result.get_step_failure_events()[0]
    assert "boom: bad orders" in failure.event_specific_data.error.to_string()
    assert instance.get_latest_materialization_event(dg.AssetKey("orders")) is None
    (row,) = resource.ledger(job="orders")
    assert row["status"] == "FAILED" and "boom: bad orders" in row["error"]
    assert not os.path.exists(out)  # nothing published

    # a FAILED ledger row given to materialize_job_result raises, with the ledger metadata
    with pytest.raises(dg.Failure) as e:
        materialize_job_result(row)
    assert e.value.metadata["status"].text == "FAILED"
    assert "boom: bad orders" in e.value.metadata["error"].text
    assert row["run_id"] in e.value.description


def test_ledger_metadata_types_and_sources(sqlite_url, clock):
    job = Job(None, state=sqlite_url, clock=clock)
    with pytest.raises(RuntimeError):
        with job.run("nightly", ENABLE):
            raise RuntimeError("no spark needed to fail")
    (row,) = ledger_rows(sqlite_url, job="nightly")
    md = ledger_metadata(row)
    assert isinstance(md["run_id"], dg.TextMetadataValue) and md["run_id"].text == job.run_id
    assert isinstance(md["attempt"], dg.IntMetadataValue) and md["attempt"].value == 0
    assert isinstance(md["run_start"], dg.TimestampMetadataValue)
    assert md["run_start"].value == clock.now / 1000
    assert md["status"].text == "FAILED" and "no spark needed" in md["error"].text
    assert "files_read" not in md and "sources" not in md  # nothing was read
    fake = dict(row, config=json.dumps({"sources": {
        "a": {"files": 3, "bytes": 10, "listing": "full", "new_input": True, "sample": ["x"]},
        "b": {"source": "jdbc", "table": "emp", "mode": "incremental", "new_input": False}}}))
    md = ledger_metadata(fake)
    assert md["files_read"].value == 3 and md["new_input"].value is True
    assert md["sources"].data == {"a": {"files": 3, "bytes": 10, "listing": "full",
                                        "new_input": True},
                                  "b": {"source": "jdbc", "table": "emp",
                                        "mode": "incremental", "new_input": False}}


# ---------------------------------------------------------------------- pipelines
def shop(spark, tmp_path, state, clock, fail=()):
    """bronze 1001 (bookmarked files) -> silver 2001 -> gold 3001; 1002 independent."""
    from pyspark.sql import functions as F
    p = Pipeline("shop", spark, state=state, primordial_date="2023-11-13", max_days_to_load=5,
                 clock=clock)
    root, landing = str(tmp_path / "data"), str(tmp_path / "landing")

    def check(mid):
        if mid in fail:
            raise RuntimeError(f"boom in {mid}")

    @p.module(id=1001, name="Bronze_Orders", layer="bronze", target=f"{root}/bronze")
    def bronze(ctx):
        check(1001)
        return ctx.job.read.files(landing, format="json", transformation_ctx="landing")

    @p.module(id=1002, name="Bronze_Calendar", layer="bronze", target=f"{root}/calendar")
    def calendar(ctx):
        check(1002)
        return ctx.spark.range(1).select(F.lit(ctx.from_ts).alias("from_ts"))

    @p.module(id=2001, name="Silver_Orders", layer="silver", target=f"{root}/silver",
              depends_on=[1001])
    def silver(ctx):
        check(2001)
        return ctx.window(ctx.spark.read.parquet(f"{root}/bronze")).select("id", "amount")

    @p.module(id=3001, name="Gold Totals", layer="gold", target=f"{root}/gold",
              depends_on=[2001])
    def gold(ctx):
        check(3001)
        return ctx.window(ctx.spark.read.parquet(f"{root}/silver")).agg(
            F.sum("amount").alias("total"))
    p.landing = landing
    return p


def statuses(p, pipeline_run_id=None):
    rows = ledger_rows(p.store, pipeline=p.name)
    if pipeline_run_id is None:
        pipeline_run_id = rows[-1]["pipeline_run_id"]
    return {r["module_id"]: r["status"] for r in rows if r["pipeline_run_id"] == pipeline_run_id}


def test_pipeline_specs_deps_groups_and_checks(spark, tmp_path, sqlite_url, clock):
    p = shop(spark, tmp_path, sqlite_url, clock)
    assets = sparkmark_pipeline_assets(p, key_prefix="shop", group_by="layer")
    keys = {k.to_user_string() for k in assets.keys}
    assert keys == {"shop/Bronze_Orders", "shop/Bronze_Calendar", "shop/Silver_Orders",
                    "shop/Gold_Totals"}
    gold = module_asset_key(p, 3001, "shop")
    assert gold == dg.AssetKey(["shop", "Gold_Totals"])
    assert assets.asset_deps[gold] == {dg.AssetKey(["shop", "Silver_Orders"])}
    assert assets.group_names_by_key[gold] == "gold"
    assert assets.can_subset
    assert {c.name for c in assets.check_specs} == {CHECK_NAME}
    assert len(list(assets.check_specs)) == 4
    by_pipeline = sparkmark_pipeline_assets(p)
    assert set(by_pipeline.group_names_by_key.values()) == {"shop"}
    with pytest.raises(ValueError, match="group_by"):
        sparkmark_pipeline_assets(p, group_by="team")


def test_pipeline_assets_second_run_reads_only_new_files(spark, tmp_path, state_url, clock):
    p = shop(spark, tmp_path, state_url, clock)
    land(p.landing, "o1.json", [1, 2, 3], clock.now - 30 * MIN)
    assets = sparkmark_pipeline_assets(p)
    instance = dg.DagsterInstance.ephemeral()
    r1 = dg.materialize([assets], instance=instance)
    assert r1.success
    assert materialized(r1) == ["Bronze_Calendar", "Bronze_Orders", "Gold_Totals",
                                "Silver_Orders"]
    by_key = {e.asset_key.to_user_string(): e.materialization.metadata
              for e in r1.get_asset_materialization_events()}
    bronze = by_key["Bronze_Orders"]
    assert (bronze["status"].text, bronze["files_read"].value,
            bronze["records_written"].value) == ("SUCCEEDED", 1, 3)
    assert bronze["module_id"].value == 1001 and bronze["pipeline"].text == "shop"
    assert by_key["Silver_Orders"]["records_written"].value == 3
    assert by_key["Silver_Orders"]["until"].value == clock.now / 1000
    assert all(e.passed for e in checks(r1).values()) and len(checks(r1)) == 4

    clock.advance(H)
    land(p.landing, "o2.json", [4], clock.now - 30 * MIN)
    r2 = dg.materialize([assets], instance=instance)
    by_key = {e.asset_key.to_user_string(): e.materialization.metadata
              for e in r2.get_asset_materialization_events()}
    assert by_key["Bronze_Orders"]["files_read"].value == 1
    assert by_key["Bronze_Orders"]["records_written"].value == 1
    assert by_key["Silver_Orders"]["records_written"].value == 1  # only the new row
    assert by_key["Silver_Orders"]["from"].value == (clock.now - H) / 1000
    assert by_key["Bronze_Calendar"]["status"].text == "SUCCEEDED"
    rows = ledger_rows(p.store, pipeline="shop")
    assert len(rows) == 8
    assert {r["run_id"] for r in rows[4:]} == {m["run_id"].text for m in by_key.values()}


def test_failed_module_fails_its_check_skips_dependents_and_fails_the_run(
        spark, tmp_path, state_url, clock):
    p = shop(spark, tmp_path, state_url, clock, fail={1001})
    land(p.landing, "o1.json", [1], clock.now - 30 * MIN)
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([sparkmark_pipeline_assets(p)], instance=instance,
                            raise_on_error=False)
    assert not result.success
    assert materialized(result) == ["Bronze_Calendar"]  # the independent module goes on
    found = checks(result)
    assert {k[0]: e.passed for k, e in found.items()} == {
        "Bronze_Orders": False, "Silver_Orders": False, "Gold_Totals": False,
        "Bronze_Calendar": True}
    bad = found[("Bronze_Orders", CHECK_NAME)]
    assert bad.severity == dg.AssetCheckSeverity.ERROR
    assert "FAILED" in bad.description and "boom in 1001" in bad.description
    assert "SKIPPED" in found[("Silver_Orders", CHECK_NAME)].description
    error = result.get_step_failure_events()[0].event_specific_data.error.to_string()
    assert "1001 (Bronze_Orders) FAILED" in error and "2001 (Silver_Orders) SKIPPED" in error
    assert statuses(p) == {1001: "FAILED", 1002: "SUCCEEDED", 2001: "SKIPPED",
                           3001: "SKIPPED"}
    assert instance.get_latest_materialization_event(dg.AssetKey("Bronze_Orders")) is None


def test_subset_selection_runs_only_the_selected_modules(spark, tmp_path, state_url, clock):
    p = shop(spark, tmp_path, state_url, clock)
    land(p.landing, "o1.json", [1, 2], clock.now - 30 * MIN)
    assets = sparkmark_pipeline_assets(p)
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([assets], instance=instance,
                            selection=["Bronze_Orders", "Silver_Orders"])
    assert result.success
    assert materialized(result) == ["Bronze_Orders", "Silver_Orders"]
    assert set(checks(result)) == {("Bronze_Orders", CHECK_NAME), ("Silver_Orders", CHECK_NAME)}
    assert statuses(p) == {1001: "SUCCEEDED", 2001: "SUCCEEDED"}
    assert not os.path.exists(os.path.join(str(tmp_path), "data", "gold"))
    one = {e.materialization.metadata["pipeline_run_id"].text
           for e in result.get_asset_materialization_events()}
    assert len(one) == 1  # one pipeline run, one snapshot

    clock.advance(H)
    result = dg.materialize([assets], instance=instance, selection=["Gold_Totals"])
    assert materialized(result) == ["Gold_Totals"] and statuses(p) == {3001: "SUCCEEDED"}
    gold = result.get_asset_materialization_events()[0].materialization.metadata
    assert gold["records_written"].value == 1


def test_pipeline_from_file(spark, tmp_path, sqlite_url, clock, monkeypatch):
    monkeypatch.setenv("SPARKMARK_STATE", sqlite_url)
    path = tmp_path / "pipe.py"
    path.write_text(textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        from sparkmark import Pipeline
        p = Pipeline("filed", SparkSession.builder.getOrCreate(), max_days_to_load=2)

        @p.module(id=1, name="Bronze_One", layer="bronze", target={str(tmp_path / 'one')!r})
        def one(ctx):
            return ctx.spark.range(2)
    """))
    assets = sparkmark_pipeline_assets(str(path))
    result = dg.materialize([assets], instance=dg.DagsterInstance.ephemeral())
    assert materialized(result) == ["Bronze_One"]
    (row,) = SparkmarkResource().ledger(pipeline="filed")  # the default store: SPARKMARK_STATE
    assert (row["status"], row["records_written"]) == ("SUCCEEDED", 2)


# ---------------------------------------------------------------------- Pipes
PIPES_SCRIPT = """
import sys
from sparkmark import Job
from sparkmark.integrations.dagster_pipes import report_to_pipes

state, src, out, mode = sys.argv[1:5]
ENABLE = {"job_bookmark_option": "job-bookmark-enable"}
if mode == "fail":  # fails before Spark is needed: reported, then the process fails
    job = Job(None, state=state)
    try:
        with job.run("pipes_orders", ENABLE):
            raise RuntimeError("boom in the pipes process")
    finally:
        report_to_pipes(job, check_name="sparkmark_status")
from sparkmark.engine.spark import local_session
spark = local_session("sparkmark-pipes-test", cores=1)
with Job(spark, state=state).run("pipes_orders", ENABLE) as job:
    job.write(job.read.files(src, format="json", transformation_ctx="src"), out,
              transformation_ctx="sink")
print("reported:", report_to_pipes(job, check_name="sparkmark_status"))
spark.stop()
"""


def test_report_to_pipes_is_a_no_op_outside_pipes(monkeypatch, sqlite_url, clock):
    monkeypatch.delenv("DAGSTER_PIPES_CONTEXT", raising=False)
    monkeypatch.delenv("DAGSTER_PIPES_MESSAGES", raising=False)
    assert report_to_pipes({"run_id": "r", "status": "SUCCEEDED"}) is False


def test_pipes_subprocess_end_to_end(tmp_path, sqlite_url):
    script = tmp_path / "job.py"
    script.write_text(PIPES_SCRIPT)
    src, out = str(tmp_path / "in"), str(tmp_path / "out")
    land(src, "a.json", [1, 2])
    land(src, "b.json", [3])

    def make(mode):
        @dg.asset(name="pipes_orders", check_specs=[status_check_spec("pipes_orders")])
        def pipes_orders(context,
                         pipes: dg.PipesSubprocessClient) -> dg.MaterializeResult:
            return pipes.run(context=context,
                             command=[sys.executable, str(script), sqlite_url, src, out, mode]
                             ).get_materialize_result()
        return pipes_orders

    instance = dg.DagsterInstance.ephemeral()
    resources = {"pipes": dg.PipesSubprocessClient(cwd=str(tmp_path))}
    r1 = dg.materialize([make("ok")], instance=instance, resources=resources)
    m1 = meta(r1, "pipes_orders")
    assert (m1["status"], m1["files_read"], m1["records_written"], m1["run_number"]) == \
        ("SUCCEEDED", 2, 3, 1)
    assert checks(r1)[("pipes_orders", CHECK_NAME)].passed

    land(src, "c.json", [4])
    r2 = dg.materialize([make("ok")], instance=instance, resources=resources)
    m2 = meta(r2, "pipes_orders")
    assert (m2["files_read"], m2["records_written"], m2["run_number"]) == (1, 1, 2)
    assert m2["start_version"] == m1["end_version"]

    r3 = dg.materialize([make("fail")], instance=instance, resources=resources,
                        raise_on_error=False)
    assert not r3.success
    logs = [e.user_message for e in instance.all_logs(r3.run_id)]
    assert any("boom in the pipes process" in m and "FAILED" in m for m in logs), logs
    rows = ledger_rows(sqlite_url, job="pipes_orders")
    assert [r["status"] for r in rows] == ["SUCCEEDED", "SUCCEEDED", "FAILED"]
    assert [r["run_id"] for r in rows[:2]] == [m1["run_id"], m2["run_id"]]
    latest = instance.get_latest_materialization_event(dg.AssetKey("pipes_orders"))
    assert latest.asset_materialization.metadata["run_id"].text == m2["run_id"]


# ---------------------------------------------------------------------- packaging
def test_import_sparkmark_does_not_import_dagster_and_the_module_needs_it():
    import subprocess
    code = ("import sys, sparkmark, sparkmark.integrations\n"
            "from sparkmark import Job, Pipeline, Bookmarks\n"
            "import sparkmark.state.ledger, sparkmark.ops.cli\n"
            "assert not [m for m in sys.modules if m.startswith(('dagster', 'sparkmark.integr"
            "ations.dagster'))], sorted(sys.modules)\n"
            "sys.modules['dagster'] = None  # as if the extra were not installed\n"
            "try:\n"
            "    import sparkmark.integrations.dagster\n"
            "except ImportError as e:\n"
            "    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "refused: sparkmark.integrations.dagster needs Dagster: pip install " \
           "'sparkmark[dagster]'" in out.stdout
