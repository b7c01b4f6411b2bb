"""The workers: what runs inside the child processes the harness starts and kills
(``python benchmarks/chaos.py --worker ...``): the files, jdbc and iceberg job, the three-module
pipeline job, and the Iceberg checker (``--verify``).  Each prints phase markers (crash.py's
``before-read`` ... ``in-commit``) and ``RUN``/``REFUSED``/``ERROR``/``RESULT`` lines the harness
reads.

    from chaos_harness.workers import build_pipeline
    p = build_pipeline(spark, state_url, "/data/input", "/data/target")  # modules A -> B -> C
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from chaos_harness.constants import (ICEBERG_DDL, ICEBERG_TABLE, JOB, PIPELINE,
                                     PIPELINE_MAX_DAYS, PIPELINE_PRIMORDIAL, ROOT,
                                     SOURCE_TABLE, TARGET_TABLE)


# ---------------------------------------------------------------------------- the job
def worker(a: argparse.Namespace) -> None:
    from sparkmark import ConcurrentRunError, Job
    from sparkmark.core.clock import system_clock
    from sparkmark.engine.spark import local_session

    def mark(m: str) -> None:
        print(m, flush=True)

    offset = int(os.environ.get("SPARKMARK_CHAOS_CLOCK_MS") or 0)
    spark = local_session("chaos-worker", cores=1)  # iceberg: the catalog from SPARK_CONF_DIR
    if a.verify:
        return verify_iceberg(spark)
    if a.job == "pipeline":
        return pipeline_worker(a, spark, mark, offset)
    if a.job == "iceberg":  # the user's own setup, before the run (and before any kill)
        create_iceberg_table(spark)
    mark("ready")
    if a.gate:  # racing drivers: both wait here until the harness opens the gate
        end = time.time() + 120
        while not os.path.exists(a.gate) and time.time() < end:
            time.sleep(0.005)
    job = Job(spark, state=a.state,
              clock=(lambda: system_clock() + offset) if offset else None)
    try:
        job.init(JOB, ["--job-bookmark-option", "job-bookmark-enable"])
    except ConcurrentRunError as e:
        mark("REFUSED " + str(e).splitlines()[0][:300])
        sys.exit(3)
    except Exception as e:  # noqa: BLE001 - reported to the harness
        mark(f"ERROR init {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
        sys.exit(2)
    mark("RUN " + str(job.run_id))
    try:
        mark("before-read")
        if a.job == "jdbc":
            props = {"user": "postgres"}
            df = job.read.jdbc(a.data_jdbc, SOURCE_TABLE, transformation_ctx="src",
                               bookmark_keys=["k"], properties=props)
            mark("before-write")
            job.write_jdbc(df, a.data_jdbc, TARGET_TABLE, properties=props,
                           transformation_ctx="sink")
        elif a.job == "iceberg":
            df = job.read.files(a.input, format="json", transformation_ctx="src",
                                options={"schema": "id STRING, v LONG"})
            mark("before-write")
            job.write(df, ICEBERG_TABLE, format="iceberg", transformation_ctx="sink")
        else:
            df = job.read.files(a.input, format="json", transformation_ctx="src",
                                options={"schema": "id STRING, v LONG"})
            mark("before-write")
            job.write(df, a.target, format="parquet", transformation_ctx="sink")
        mark("before-commit")
        mark("in-commit")
        job.commit()
        mark("done")
    except Exception as e:  # noqa: BLE001 - reported to the harness
        text = str(e).splitlines()[0][:300] if str(e) else ""
        mark(f"ERROR run {type(e).__name__}: {text}")
        try:
            job.fail(e)
        except Exception:  # noqa: BLE001 - the store may be down: the lease is taken over later
            pass
        sys.exit(2)
    try:
        last = job.store.get_run(job.run_id)
        print("RESULT " + json.dumps({"status": last["status"],
                                      "records_written": last["records_written"]}), flush=True)
    except Exception as e:  # noqa: BLE001 - committed; only the report failed
        mark(f"ERROR report {type(e).__name__}")


# ---------------------------------------------------------------------------- the pipeline job
def build_pipeline(spark, state: str | None, input: str, target: str, clock=None,
                   mark=None):
    """The pipeline job: module 1 (A, bronze) reads the JSON input files through a bookmarked
    source; module 2 (B, silver) reads A's parquet target by load stamp (``ctx.window``: the
    rows A loaded in B's window); module 3 (C, gold) reads B's the same way.  Each writes
    parquet to ``target/<A|B|C>``.  ``mark(text)`` prints the phase markers
    ``<A|B|C>:before-read``, ``:before-write``, ``:before-commit``, ``:in-commit`` (the job's
    ``write`` and ``commit`` wrapped on the module's own Job, as the files job prints them)."""
    from sparkmark import Pipeline
    from sparkmark.lifecycle.pipeline import SNAPSHOT_COL

    p = Pipeline(PIPELINE, spark, state=state, primordial_date=PIPELINE_PRIMORDIAL,
                 max_days_to_load=PIPELINE_MAX_DAYS, clock=clock)
    say = mark or (lambda m: None)

    def instrument(ctx, name: str) -> None:
        job = ctx.job
        write, commit = job.write, job.commit

        def marked_write(*args, **kw):
            say(f"{name}:before-write")
            return write(*args, **kw)

        def marked_commit(*args, **kw):
            say(f"{name}:before-commit")
            say(f"{name}:in-commit")
            return commit(*args, **kw)

        job.write, job.commit = marked_write, marked_commit
        say(f"{name}:before-read")

    def upstream(ctx, name: str):
        folder = Path(target) / name
        schema = f"id STRING, v BIGINT, {SNAPSHOT_COL} TIMESTAMP"
        if folder.is_dir() and any(not n.startswith(("_", ".")) for n in os.listdir(folder)):
            df = ctx.spark.read.schema(schema).parquet(str(folder))
        else:  # nothing published upstream yet
            df = ctx.spark.createDataFrame([], schema)
        return ctx.window(df).select("id", "v")

    @p.module(id=1, name="A_files", layer="bronze", target=str(Path(target) / "A"))
    def module_a(ctx):
        instrument(ctx, "A")
        return ctx.job.read.files(input, format="json", transformation_ctx="src",
                                  options={"schema": "id STRING, v LONG"}).select("id", "v")

    @p.module(id=2, name="B_from_A", layer="silver", target=str(Path(target) / "B"),
              depends_on=[1])
    def module_b(ctx):
        instrument(ctx, "B")
        return upstream(ctx, "A")

    @p.module(id=3, name="C_from_B", layer="gold", target=str(Path(target) / "C"),
              depends_on=[2])
    def module_c(ctx):
        instrument(ctx, "C")
        return upstream(ctx, "B")

    return p


def write_pipeline_file(path: Path, state: str, input: Path, target: Path) -> None:
    """The pipeline as a file for ``sparkmark rollback FILE`` (the CLI loads it as a user's)."""
    path.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
        "from chaos_harness.workers import build_pipeline\n"
        "from sparkmark.engine.spark import local_session\n"
        f"p = build_pipeline(local_session('chaos-rollback', cores=1), {state!r}, "
        f"{str(input)!r}, {str(target)!r})\n")


def pipeline_worker(a: argparse.Namespace, spark, mark, offset: int) -> None:
    """One pipeline run (``p.run()``, all three modules) with the chaos markers.  Prints
    ``COMMITTED <module run id>`` for each module run that committed (SUCCEEDED/EMPTY),
    ``REFUSED`` when the run or one module was refused by another driver's lease, ``done``
    when every module committed, and ``RESULT`` (the summary) at the end."""
    from sparkmark import ConcurrentRunError
    from sparkmark.core.clock import system_clock

    p = build_pipeline(spark, a.state, a.input, a.target,
                       clock=(lambda: system_clock() + offset) if offset else None, mark=mark)
    mark("ready")
    if a.gate:
        end = time.time() + 120
        while not os.path.exists(a.gate) and time.time() < end:
            time.sleep(0.005)
    mark("RUN pipeline")
    try:
        summary = p.run()
    except ConcurrentRunError as e:
        mark("REFUSED " + str(e).splitlines()[0][:300])
        sys.exit(3)
    except Exception as e:  # noqa: BLE001 - reported to the harness (the store may be down)
        mark(f"ERROR run {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
        sys.exit(2)
    refused = failed = False
    for r in summary.results:
        if r.status in ("SUCCEEDED", "EMPTY") and r.run_id:
            mark(f"COMMITTED {r.run_id}")
        elif r.status == "FAILED" and r.run_id is None and "active run" in (r.error or ""):
            refused = True
            mark(f"REFUSED module {r.module_id}: {(r.error or '').splitlines()[0][:200]}")
        elif r.status == "FAILED":
            failed = True
            mark(f"ERROR module {r.module_id}: {(r.error or '').splitlines()[0][:300]}")
    res = {"status": "EMPTY" if all(r.status == "EMPTY" for r in summary.results) else
           "+".join(sorted({_status(r.status) for r in summary.results})),
           "records_written": sum(r.records_written or 0 for r in summary.results),
           "snapshot_ts": summary.snapshot_ts,
           "modules": {r.module_id: _status(r.status) for r in summary.results}}
    if not refused and not failed and all(r.status in ("SUCCEEDED", "EMPTY", "SKIPPED")
                                          for r in summary.results):
        mark("done")
    print("RESULT " + json.dumps(res), flush=True)
    sys.exit(3 if refused else 2 if failed else 0)


def _status(value) -> str:
    return str(getattr(value, "value", value))


def create_iceberg_table(spark) -> None:
    """The iceberg job's target table, created once (two racing drivers may both try: the
    Hadoop catalog lets one commit win; the other finds the table)."""
    for attempt in range(3):
        try:
            spark.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
            spark.sql(ICEBERG_DDL)
            return
        except Exception:  # noqa: BLE001 - lost the race to create it: look again
            try:
                if spark.table(ICEBERG_TABLE).columns:
                    return
            except Exception:  # noqa: BLE001
                if attempt == 2:
                    raise
                time.sleep(0.5)


def verify_iceberg(spark) -> None:
    """Print the iceberg target as the checker needs it: the record ids of the table's current
    snapshot (with multiplicity) and every snapshot with its sparkmark summary and whether it is
    an ancestor of the current one (the ``snapshots`` and ``history`` metadata tables)."""
    try:
        has_table = bool(spark.table(ICEBERG_TABLE).columns)
    except Exception:  # noqa: BLE001 - no run created it yet
        has_table = False
    if not has_table:
        print("ICEBERG " + json.dumps({"ids": [], "snapshots": []}), flush=True)
        return
    ids = [r.id for r in spark.table(ICEBERG_TABLE).select("id").collect()]
    t = ICEBERG_TABLE
    rows = spark.sql(
        f"SELECT s.snapshot_id, s.operation, s.summary['wap.id'], s.summary['published-wap-id'],"
        f" s.summary['sparkmark.run-id'], s.summary['added-records'],"
        f" s.summary['sparkmark.rollback-of'], coalesce(h.is_current_ancestor, false) "
        f"FROM {t}.snapshots s LEFT JOIN {t}.history h ON s.snapshot_id = h.snapshot_id"
    ).collect()
    keys = ("snapshot_id", "operation", "wap_id", "published_wap_id", "run_id", "added",
            "rollback_of", "ancestor")
    snaps = [dict(zip(keys, r)) for r in rows]
    for x in snaps:
        x["added"] = int(x["added"] or 0)
        x["ancestor"] = bool(x["ancestor"])
    print("ICEBERG " + json.dumps({"ids": ids, "snapshots": snaps}), flush=True)
