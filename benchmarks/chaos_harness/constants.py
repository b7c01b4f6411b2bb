"""The fault-schedule harness's names and settings: the job and step kinds, the tables and the
pipeline the jobs use, and the timeouts (two of them from the environment).

    from chaos_harness.constants import KINDS, JOB_KINDS
    assert "kill" in KINDS and "files" in JOB_KINDS
"""
from __future__ import annotations

import os
from pathlib import Path

#: the repository (``benchmarks/..``)
ROOT = Path(__file__).resolve().parents[2]
#: the script the workers and the checker are started as (``--worker``)
CHAOS_SCRIPT = ROOT / "benchmarks" / "chaos.py"

JOB = "chaos-job"
KINDS = ("run", "kill", "store_down", "racing", "clock", "input", "reset_kill")
#: drawn only for the ``s3files`` job: its SeaweedFS server stopped during a run
S3_KINDS = ("s3_down",)
ALL_KINDS = KINDS + S3_KINDS
#: never drawn at random (the seeds draw what they drew before): the state store's answer to
#: the run's commit lost on its way back (a TCP proxy between the workers and PostgreSQL,
#: :class:`sparkmark.devtools.netfault.CutProxy`), optionally followed by an outage; in
#: replays (``--replay``) and tests/test_chaos.py.  Not for the pipeline job.
LOST_KINDS = ("lost_answer",)
#: the job kinds a schedule runs: JSON files -> parquet files, a PostgreSQL table -> another,
#: JSON files -> an Iceberg table (Spark 3.5 with the Iceberg jars only), or a three-module
#: sparkmark Pipeline (JSON files -> A -> B -> C, parquet; not a default: ~3x a files run)
#: or the files job on S3 (``s3files``: JSON input and parquet target in a SeaweedFS bucket)
JOB_KINDS = ("files", "jdbc", "iceberg", "pipeline", "s3files")
#: what a run draws from unless ``--jobs`` says otherwise (any Spark)
DEFAULT_JOBS = ("files", "jdbc")
#: the iceberg job's target: a Hadoop catalog ``local`` whose warehouse is the schedule's folder
ICEBERG_TABLE = "local.db.chaos_target"
ICEBERG_DDL = (f"CREATE TABLE IF NOT EXISTS {ICEBERG_TABLE} (id STRING, v BIGINT, "
               "_rescued_data STRING, sm_run_id STRING, sm_snapshot_ts TIMESTAMP) USING iceberg "
               "TBLPROPERTIES ('write.wap.enabled'='true')")
SOURCE_TABLE, TARGET_TABLE = "chaos_src", "chaos_target"
STAGE_TABLE = TARGET_TABLE + "__sm_stage"
#: the longest random delay before a ``reset_kill`` lands (the CLI takes ~5-15 s here: Python and
#: Spark start, then the listing, the store transaction and the removal)
RESET_MAX_DELAY = float(os.environ.get("SPARKMARK_CHAOS_RESET_MAX_DELAY", "15"))
TERMINAL = {"SUCCEEDED", "EMPTY", "FAILED", "ROLLED_BACK"}
#: the pipeline job: a sparkmark Pipeline of three modules, each a job "chaos.<id>"
#: (1 = A: the JSON files -> parquet; 2 = B: A's rows by load stamp -> parquet; 3 = C: B's)
PIPELINE = "chaos"
PIPELINE_MODULES = {1: "A", 2: "B", 3: "C"}
#: the pipeline's first window starts here and a window may span it all (one run catches up)
PIPELINE_PRIMORDIAL = "2000-01-01"
PIPELINE_MAX_DAYS = 20000
#: how long one worker may take before the harness calls it hung (seconds)
WORKER_TIMEOUT = float(os.environ.get("SPARKMARK_CHAOS_WORKER_TIMEOUT", "240"))
