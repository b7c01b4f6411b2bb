"""Overwatch's ETL modules (ids, names, targets, dependencies from its ETL page) on synthetic data.

    sparkmark run examples/overwatch/pipeline.py
    sparkmark run examples/overwatch/pipeline.py --layers silver,gold
    sparkmark report --pipeline overwatch --last 10
    sparkmark rollback examples/overwatch/pipeline.py --module 2011 --module 3003 --since 2024-05-01

Modules without dependencies generate synthetic events (a few per hour of their window);
every other module reads its dependencies' targets inside its own window and derives from them,
so the time windows, dependency caps and rollbacks behave exactly as they would on real data.
Targets go to ``$OVERWATCH_DATA`` (default: ``examples/overwatch/data``).
"""
from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import functions as F

from sparkmark import Pipeline
from sparkmark.engine.spark import local_session

# Module ID | Module Name | Target Table Name | Module ID Dependencies  (Overwatch ETL page)
MODULES = [
    (1001, "Bronze_Jobs_Snapshot", "jobs_snapshot_bronze", []),
    (1002, "Bronze_Clusters_Snapshot", "clusters_snapshot_bronze", []),
    (1003, "Bronze_Pools", "pools_snapshot_bronze", []),
    (1004, "Bronze_AuditLogs", "audit_log_bronze", []),
    (1005, "Bronze_ClusterEventLogs", "cluster_events_bronze", [1004]),
    (1006, "Bronze_SparkEventLogs", "spark_events_bronze", [1004]),
    (2003, "Silver_SPARK_Executors", "spark_executors_silver", [1006]),
    (2005, "Silver_SPARK_Executions", "spark_executions_silver", [1006]),
    (2006, "Silver_SPARK_Jobs", "spark_jobs_silver", [1006]),
    (2007, "Silver_SPARK_Stages", "spark_stages_silver", [1006]),
    (2008, "Silver_SPARK_Tasks", "spark_tasks_silver", [1006]),
    (2010, "Silver_JobsStatus", "job_status_silver", [1004]),
    (2011, "Silver_JobsRuns", "jobrun_silver", [1004, 2010, 2014]),
    (2014, "Silver_ClusterSpec", "cluster_spec_silver", [1004]),
    (2016, "Silver_AccountLogins", "accountlogin", [1004]),
    (2017, "Silver_ModifiedAccounts", "account_mods_silver", [1004]),
    (2018, "Silver_Notebooks", "notebook_silver", [1004]),
    (3001, "Gold_Cluster", "cluster_gold", [2014]),
    (3002, "Gold_Job", "job_gold", [2010]),
    (3003, "Gold_JobRun", "jobrun_gold", [2011]),
    (3004, "Gold_Notebook", "notebook_gold", [2018]),
    (3005, "Gold_ClusterStateFact", "clusterstatefact_gold", [1005, 2014]),
    (3007, "Gold_AccountMod", "account_mods_gold", [2017]),
    (3008, "Gold_AccountLogin", "account_login_gold", [2016]),
    (3010, "Gold_SparkJob", "sparkjob_gold", [2006]),
    (3011, "Gold_SparkStage", "sparkstage_gold", [2007]),
    (3012, "Gold_SparkTask", "sparktask_gold", [2008]),
    (3013, "Gold_SparkExecution", "sparkexecution_gold", [2005]),
    (3014, "Gold_SparkExecutor", "sparkexecutor_gold", [2003]),
    (3015, "Gold_jobRunCostPotentialFact", "jobruncostpotentialfact_gold",
     [3001, 3003, 3005, 3010, 3012]),
]

HOUR_MS = 3_600_000
DATA = Path(os.environ.get("OVERWATCH_DATA", Path(__file__).resolve().parent / "data"))
TARGETS = {mid: str(DATA / table) for mid, _, table, _ in MODULES}

spark = local_session("sparkmark-overwatch-example")
pipeline = Pipeline("overwatch", spark, primordial_date=os.environ.get("OVERWATCH_PRIMORDIAL"),
                    max_days_to_load=int(os.environ.get("OVERWATCH_MAX_DAYS", "7")),
                    timezone=os.environ.get("OVERWATCH_TIMEZONE", "UTC"))


def _generate(ctx):
    """Synthetic source events: 3 per hour of the window, stable for a given hour."""
    hours = ctx.spark.range(ctx.from_ts // HOUR_MS, -(-ctx.until_ts // HOUR_MS))
    events = hours.select(F.explode(F.array(*[F.col("id") * HOUR_MS + k * 1_200_000
                                              for k in range(3)])).alias("ms"))
    return (events.select(F.timestamp_millis("ms").alias("event_ts"),
                          (F.abs(F.hash("ms", F.lit(ctx.module.id))) % 50).alias("entity_id"))
            .where(ctx.in_window("event_ts")))


def _derive(ctx, deps):
    """Read the rows every dependency loaded in this module's window (its load stamp, so late
    events are not missed)."""
    parts = [ctx.window(ctx.spark.read.parquet(TARGETS[d]))
             .select("event_ts", "entity_id") for d in deps]
    df = parts[0]
    for part in parts[1:]:
        df = df.unionByName(part)
    if ctx.module.layer == "gold":
        return (df.groupBy(F.date_trunc("hour", "event_ts").alias("event_ts"))
                .agg(F.count("*").alias("events"), F.countDistinct("entity_id").alias("entities"),
                     F.min("entity_id").alias("entity_id")))
    return df.withColumn("source_module", F.lit(deps[0]))


def _register(mid, name, deps):
    layer = name.split("_", 1)[0].lower()

    @pipeline.module(id=mid, name=name, layer=layer, target=TARGETS[mid], depends_on=deps)
    def module(ctx):
        return _derive(ctx, deps) if deps else _generate(ctx)

    return module


for _mid, _name, _table, _deps in MODULES:
    _register(_mid, _name, _deps)


if __name__ == "__main__":
    print(pipeline.run())
