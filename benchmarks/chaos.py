"""Fault schedules: random sequences of crashes, store outages, racing drivers, clock jumps,
late input and killed resets over one bookmarked job per schedule, each followed by recovery and
a check against a model.

    python benchmarks/chaos.py --schedules 20 --seed 1          # 20 schedules of 5 steps
    python benchmarks/chaos.py --schedules 6 --steps 4 --seed 11 --jobs files,jdbc
    python benchmarks/chaos.py --seed 7 --jobs jdbc --replay '[{"kind": "kill", ...}]'
    python benchmarks/chaos.py --jobs pipeline --schedules 3 --steps 4 --seed 3
    .venv35/bin/python benchmarks/chaos.py --jobs files,iceberg --schedules 4 --steps 4
    python benchmarks/chaos.py --jobs s3files --schedules 3 --steps 4 --seed 1

Each schedule runs one job, its kind drawn from the schedule's seed among ``--jobs``:
``files`` (JSON files -> parquet files on local disk) or ``jdbc`` (a PostgreSQL source table
read by a monotonically increasing key -> a PostgreSQL table through the exactly-once JDBC sink,
staged in ``chaos_target__sm_stage``), or, on Spark 3.5 with the Iceberg jars only, ``iceberg``
(JSON files -> the Iceberg table ``local.db.chaos_target`` in a Hadoop catalog whose warehouse is
the schedule's own folder, written by write-audit-publish; the catalog and the jars are in a
``spark-defaults.conf`` under the schedule's SPARK_CONF_DIR, which the workers, the checker and
the CLI's ``bookmark reset --remove-output`` read as a user's would), or ``pipeline`` (a
three-module :class:`sparkmark.Pipeline` ``chaos``: module 1 = A reads the JSON files through a
bookmarked source, 2 = B reads A's parquet target by load stamp with ``ctx.window``, 3 = C reads
B's the same way, each writing parquet to ``target/<A|B|C>``; every module run is its own job
``chaos.<id>``; see :func:`build_pipeline`), or ``s3files`` (the ``files`` job with its JSON
input and parquet target in a SeaweedFS bucket, ``s3a://<bucket>/input`` and ``.../target``:
one SeaweedFS server per chaos run, a fresh bucket per schedule, input PUT into the bucket; the
s3a jars, endpoint, credentials and path-style access reach the workers and the CLI through a
``spark-defaults.conf`` under the schedule's SPARK_CONF_DIR; the checker reads the target's
parquet objects through the S3 API (boto3 + pyarrow, :func:`read_s3_ids`) and lists the bucket
for staged objects, :func:`s3_staged_keys`; needs the s3a jars and ``weed``).  The state is in a real
PostgreSQL server (started once per chaos run; a fresh database and fresh folders per
schedule); the jdbc job's data is on a second server, so ``store_down`` is a pure state-store
outage.  A schedule is K steps drawn with
``random.Random(seed + i)``; before each step new input arrives (files, or rows in one
transaction each; unique record ids).  The step kinds:

* ``run``: the job runs to completion in a child process;
* ``kill``: the job's process group gets SIGKILL at a random moment of a random phase (read,
  write, between write and commit, inside commit: benchmarks/crash.py's markers);
* ``store_down``: the state store's PostgreSQL is stopped (``-m immediate``) at a random moment
  of the run and started again; the run must fail cleanly or succeed, never half-commit;
* ``racing``: two drivers start the job at the same instant; exactly one may run, the other
  must be refused with ``ConcurrentRunError``;
* ``clock``: the run's clock is real time jumped forward or back by minutes;
* ``input``: new input arrives while the run is in progress (from a thread);
* ``lost_answer`` (never drawn at random; replays and tests only): the workers reach the store
  through a TCP proxy (:class:`sparkmark.devtools.netfault.CutProxy`) that passes the run's
  commit to PostgreSQL and drops its answer, then refuses connections for ``down_s`` s (0 or
  0.5-3); the run must complete (it reads its outcome again) or fail saying the outcome is
  unknown, its row SUCCEEDED either way, its output published by it or by the next run;
* ``reset_kill``: ``sparkmark bookmark reset JOB --remove-output`` (the CLI) gets SIGKILL at a
  random moment, or right after its store transaction (see :meth:`Schedule.reset_kill` for what
  the model expects then); the schedule goes on;
* ``s3_down`` (``s3files`` only, so other jobs' seeds draw what they drew before): the SeaweedFS
  server is stopped (``stop_server()``) at a random moment of a random phase (crash.py's
  ``S3_PHASES`` markers) and started again after 0.2-3 s; the run must complete, fail cleanly
  (FAILED, bookmark version and the target's records as before) or fail after its state commit
  (``failed-after-commit``: SUCCEEDED, publish pending, rolled forward by the next run); see
  :meth:`Schedule.s3_down`.  Measured, ``--jobs s3files --schedules 3 --steps 4 --seed 1
  --no-shrink``: 0 violations, s3_down 3 (3 failed cleanly), store_down 1, kill 1, racing 1,
  clock 2, run 2, input 1, reset_kill 1; 171 records, 512.8 s; a replay with s3_down in phases
  commit and between: one completed first, one failed after its commit and was published by
  recovery, 0 violations, 170.0 s (docs/reliability.md, "The files job on S3").

For the pipeline the same kinds apply, per module: ``kill`` and ``store_down`` also draw the
module (A, B or C) whose phase marker (``B:before-write``, ...) they wait for; ``racing``
expects one driver refused, by ``p.run()`` or at a module's init (its dependants then SKIPPED),
and neither failing otherwise; ``clock`` jumps by seconds, not minutes (a pipeline's windows
end at its snapshot, so a forward jump stalls the modules until real time passes it: the
recovery waits for that); ``reset_kill`` is ``sparkmark rollback FILE --since 2000-01-01
--module ...`` (the CLI on a pipeline file written per schedule) over the modules that made
progress, downstream ones included (see :meth:`Schedule.rollback_kill`).  The pipeline's check,
:func:`pipeline_problems`, per module: every record once in its target, every ledger row
terminal (SKIPPED counts) and none 'removing', every SUCCEEDED run's ``records_written`` equal
to its rows in the target and no rows of other runs, the windows of its SUCCEEDED/EMPTY runs
contiguous from the primordial start to the last recovery snapshot, A's file bookmark covering
every input file (``BandState.covers``), nothing staged; plus the last run EMPTY and every
module run whose commit returned still SUCCEEDED/EMPTY (or rolled back).  Measured on the
shared 2-core machine, ``--jobs pipeline --schedules 3 --steps 4 --no-shrink``: ``--seed 7``
0 violations, 12 faults (store_down 3, run 3, racing 3, kill 2, clock 1), 445 s; ``--seed 3``
(all seven kinds: kill 4, input 2, run 2, store_down, racing, clock, reset_kill 1 each) 0
violations, 485 s (docs/reliability.md, "The pipeline job").

After each schedule the job runs to completion twice (recovery); then every input record id
must be in the target exactly once (a reset's rolled-back records read again), the last run
must be EMPTY, no staging output (folder or table rows) may be left, every ledger row must be
terminal (none RUNNING) and none still 'removing', the SUCCEEDED rows' records_written must add
up to the records in the target, and a run whose ``commit()`` returned must be SUCCEEDED/EMPTY
(or ROLLED_BACK by a later reset).  For the iceberg job the target is read through Iceberg (the
current snapshot, in a checker process), and "nothing staged left" means, from the
``snapshots`` and ``history`` metadata tables against the ledger: no staged snapshot of a
committed run unpublished, no snapshot of an uncommitted run published, every SUCCEEDED run
with records published (``publish_state`` done), every rolled-back published run removed by a
``sparkmark.sinks.rollback-of`` commit; unpublished snapshots of runs that did not commit are allowed
and counted (``iceberg_unpublished_uncommitted``).  A failing schedule is shrunk (steps removed one at a time
while it still fails) and printed as a one-line ``--replay`` command.  Prints a table; writes
benchmarks/results/chaos.json (``faults`` and ``jobs`` per kind, outcomes, ``reset_states``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from crash import ICEBERG_PHASES, PHASES, S3_PHASES, Trial  # noqa: E402  (crash.py: markers)

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
        "from chaos import build_pipeline\n"
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
        f" s.summary['sparkmark.core.run-id'], s.summary['added-records'],"
        f" s.summary['sparkmark.sinks.rollback-of'], coalesce(h.is_current_ancestor, false) "
        f"FROM {t}.snapshots s LEFT JOIN {t}.history h ON s.snapshot_id = h.snapshot_id"
    ).collect()
    keys = ("snapshot_id", "operation", "wap_id", "published_wap_id", "run_id", "added",
            "rollback_of", "ancestor")
    snaps = [dict(zip(keys, r)) for r in rows]
    for x in snaps:
        x["added"] = int(x["added"] or 0)
        x["ancestor"] = bool(x["ancestor"])
    print("ICEBERG " + json.dumps({"ids": ids, "snapshots": snaps}), flush=True)


def iceberg_problems(snaps: list[dict], rows: list[dict]) -> tuple[list[str], int]:
    """What the Iceberg target's snapshots say against the ledger (pure): a staged snapshot of
    a committed (SUCCEEDED/EMPTY) run with rows still unpublished; a published snapshot of a
    run that is not SUCCEEDED (or ROLLED_BACK: published, then removed); a SUCCEEDED run that
    wrote rows but has no published snapshot, or is still ``pending``; a ROLLED_BACK run whose
    published rows no ``sparkmark.sinks.rollback-of`` commit in the ancestry removed.  Returns the
    problems and the number of unpublished snapshots of runs that did not commit (allowed:
    Iceberg's ``expire_snapshots`` drops them, docs/tables.md; an EMPTY run's row-less staged
    snapshot is not counted).

    Example: ``iceberg_problems([], [])  # ([], 0)``
    """
    problems: list[str] = []
    status = {r["run_id"]: r for r in rows}
    picked = {s["published_wap_id"] for s in snaps if s["ancestor"] and s["published_wap_id"]}
    rolled = {s["rollback_of"] for s in snaps if s["ancestor"] and s["rollback_of"]}
    published_runs: set[str] = set()
    allowed = 0
    for s in snaps:
        if not s["wap_id"]:
            continue  # the table's creation, a cherry-pick, a rollback's delete
        run = status.get(s["run_id"]) or {}
        st = run.get("status")
        if s["ancestor"] or s["wap_id"] in picked:
            published_runs.add(s["run_id"])
            if st not in ("SUCCEEDED", "ROLLED_BACK"):
                problems.append(f"iceberg: snapshot {s['snapshot_id']} of run {s['run_id']} "
                                f"({st}) is published: an uncommitted run's rows are visible")
            elif st == "ROLLED_BACK" and s["added"] and s["run_id"] not in rolled:
                problems.append(f"iceberg: run {s['run_id']} is ROLLED_BACK but no rollback "
                                "commit in the ancestry removed its published rows")
        elif st in ("SUCCEEDED", "EMPTY") and s["added"]:
            problems.append(f"iceberg: staged snapshot {s['snapshot_id']} of committed run "
                            f"{s['run_id']} ({st}, {s['added']} rows) left unpublished")
        elif st not in ("SUCCEEDED", "EMPTY"):
            allowed += 1  # (an EMPTY run's staged snapshot has no rows: never published)
    for r in rows:
        if r["status"] != "SUCCEEDED":
            continue
        if r["publish_state"] not in (None, "done"):
            problems.append(f"iceberg: SUCCEEDED run {r['run_id']} still "
                            f"publish_state={r['publish_state']!r} after recovery")
        if (r["records_written"] or 0) and r["run_id"] not in published_runs:
            problems.append(f"iceberg: SUCCEEDED run {r['run_id']} wrote "
                            f"{r['records_written']} records but no snapshot of it is published")
    return problems, allowed


def iceberg_unavailable() -> str | None:
    """Why the iceberg job kind cannot run in this Python (None when it can)."""
    from sparkmark.devtools.iceberg import iceberg_jars
    try:
        iceberg_jars(fetch=False)
    except LookupError as e:  # no runtime for this Spark line: .venv35 or .venv41 have one
        return f"--jobs iceberg: {e}: run chaos.py with .venv35/bin/python or .venv41/bin/python"
    except FileNotFoundError as e:
        return f"--jobs iceberg: {e}"
    return None


def write_spark_defaults(conf_dir: Path, warehouse: Path) -> None:
    """``spark-defaults.conf`` with the Iceberg jars and the Hadoop catalog ``local`` on
    ``warehouse``: how a user hands the catalog to the CLI (``bookmark reset --remove-output``)
    and to a script started with plain ``python`` (SPARK_CONF_DIR)."""
    from crash import iceberg_conf
    conf_dir.mkdir(parents=True, exist_ok=True)
    conf = iceberg_conf(str(warehouse))
    (conf_dir / "spark-defaults.conf").write_text(
        "".join(f"{k} {v}\n" for k, v in sorted(conf.items())))


# ---------------------------------------------------------------------------- schedules
def draw_step(rng: random.Random, kind: str | None = None, job: str = "files") -> dict:
    """One step with all its random choices, so that a schedule replays from its JSON.
    The iceberg job's ``commit`` phase is wider (its publish is a cherry-pick in Spark SQL);
    every job draws the same kinds and phases from the same rng."""
    kind = kind or rng.choice(ALL_KINDS if job == "s3files" else KINDS)
    phases = (ICEBERG_PHASES if job == "iceberg" else S3_PHASES if job == "s3files"
              else PHASES)
    step: dict = {"kind": kind, "seed": rng.randrange(1 << 30)}
    if kind == "kill":
        step["phase"] = rng.choice(list(phases))
        step["delay"] = round(rng.uniform(0, phases[step["phase"]][1]), 3)
    elif kind in ("store_down", "s3_down"):
        step["phase"] = rng.choice(list(phases))
        step["delay"] = round(rng.uniform(0, phases[step["phase"]][1]), 3)
        step["down_s"] = round(rng.uniform(0.2, 3.0), 2)
    elif kind == "lost_answer":
        step["down_s"] = rng.choice([0.0, round(rng.uniform(0.5, 3.0), 2)])
    elif kind == "clock":
        step["offset_min"] = rng.choice([-1, 1]) * rng.randint(1, 30)
        if job == "pipeline":
            # seconds: a pipeline's windows end at its (jumped) snapshot, so a forward jump
            # stalls the modules (NO_PROGRESS) until real time passes it; the recovery waits
            step["offset_s"] = step.pop("offset_min")
    if job == "pipeline" and kind in ("kill", "store_down"):
        step["module"] = rng.choice(sorted(PIPELINE_MODULES.values()))  # which module's phase
    elif kind == "input":
        step["bursts"] = [round(rng.uniform(0, 3.0), 2) for _ in range(rng.randint(1, 3))]
    elif kind == "reset_kill":
        # "start": a random moment from the CLI's start (mostly before its store transaction);
        # "removal": right after the transaction recorded the intent (runs 'removing'), while
        # the output is being deleted
        step["phase"] = rng.choice(["start", "removal"])
        step["delay"] = round(rng.uniform(0, RESET_MAX_DELAY) if step["phase"] == "start"
                              else rng.uniform(0, 0.3), 3)
    return step


def draw_schedule(seed: int, steps: int, job: str = "files") -> list[dict]:
    rng = random.Random(seed)
    return [draw_step(rng, job=job) for _ in range(steps)]


def draw_job(seed: int, jobs: tuple[str, ...] | list[str]) -> str:
    """The job kind of schedule ``seed`` (its own rng: the steps drawn do not change)."""
    return random.Random(f"job-{seed}").choice(list(jobs))


class Inputs:
    """New input files with unique record ids (thread-safe; temporary files are hidden)."""

    def __init__(self, folder: Path | None):
        self.folder, self.files, self.expected = folder, 0, []
        self.lock = threading.Lock()

    def add(self, rng: random.Random, most: int = 3) -> int:
        n = rng.randint(0, most)
        for _ in range(n):
            with self.lock:
                self.files += 1
                rel = f"part={self.files % 3}/orders-{self.files:05d}.json"
                recs = []
                for _ in range(rng.randint(1, 20)):
                    rid = f"r{len(self.expected):06d}"
                    self.expected.append(rid)
                    recs.append(json.dumps({"id": rid, "v": len(self.expected)}))
            self.store(rel, "\n".join(recs) + "\n")
        return n

    def store(self, rel: str, text: str) -> None:
        """Write one input file under a hidden name, then rename it into place."""
        assert self.folder is not None
        name = self.folder / rel
        name.parent.mkdir(parents=True, exist_ok=True)
        tmp = name.parent / f".{name.name}.tmp"  # hidden: a listing never sees it
        tmp.write_text(text)
        os.replace(tmp, name)


class S3Inputs(Inputs):
    """New input objects PUT into the schedule's bucket under ``input/`` (one PUT each: an
    object is visible whole or not at all, so no temporary name is needed)."""

    def __init__(self, bucket):
        super().__init__(None)
        self.bucket = bucket

    def store(self, rel: str, text: str) -> None:
        self.bucket.put(f"input/{rel}", text)


def write_s3_spark_defaults(conf_dir: Path, server) -> None:
    """``spark-defaults.conf`` with the s3a jars and the SeaweedFS endpoint, credentials and
    path-style access: how a user hands them to a script started with plain ``python`` and to
    the CLI (SPARK_CONF_DIR)."""
    from sparkmark.devtools.s3 import s3a_jars, s3a_session_conf
    from sparkmark.engine.spark import jdbc_jars
    conf = {**s3a_session_conf(jars=s3a_jars(fetch=False)), **server.spark_conf()}
    conf["spark.jars"] = ",".join(jdbc_jars() + s3a_jars(fetch=False))
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "spark-defaults.conf").write_text(
        "".join(f"{k} {v}\n" for k, v in sorted(conf.items())))


def s3files_unavailable() -> str | None:
    """Why the ``s3files`` job cannot run here (no s3a jars or no ``weed``), or None."""
    from sparkmark.devtools.s3 import s3a_jars, weed_binary
    try:
        s3a_jars(fetch=False)
        weed_binary()
    except FileNotFoundError as e:
        return f"--jobs s3files: {e}"
    return None


class SourceTable:
    """New rows in the PostgreSQL source table, with a monotonically increasing key ``k`` and
    unique record ids; each batch (the files' counterpart) is one committed transaction, and
    batches commit in key order (one lock), so a key bookmark never skips a row."""

    def __init__(self, sa_url: str):
        import sqlalchemy as sa
        self.engine = sa.create_engine(sa_url)
        self.files, self.expected = 0, []
        self.lock = threading.Lock()
        with self.engine.begin() as c:
            c.execute(sa.text(f"CREATE TABLE {SOURCE_TABLE} (k BIGINT PRIMARY KEY, "
                              "id TEXT NOT NULL, v BIGINT NOT NULL)"))

    def add(self, rng: random.Random, most: int = 3) -> int:
        import sqlalchemy as sa
        n = rng.randint(0, most)
        for _ in range(n):
            with self.lock:
                self.files += 1
                rows = []
                for _ in range(rng.randint(1, 20)):
                    rid = f"r{len(self.expected):06d}"
                    self.expected.append(rid)
                    rows.append({"k": len(self.expected), "id": rid, "v": len(self.expected)})
                with self.engine.begin() as c:
                    c.execute(sa.text(f"INSERT INTO {SOURCE_TABLE} (k, id, v) "
                                      "VALUES (:k, :id, :v)"), rows)
        return n


class Schedule:
    """Runs one schedule's steps against a fresh database and folders (and, for the JDBC job,
    a fresh database on the data server: the state store's outages do not touch it)."""

    def __init__(self, pg, db: str, workdir: Path, log=print, job: str = "files",
                 data_pg=None, s3=None, proxy: bool = False):
        self.pg, self.log, self.job, self.s3 = pg, log, job, s3
        self.state = pg.create_database(db)
        # the workers reach the store through a CutProxy when a step loses answers (the
        # checks and the CLI go straight to it)
        self.proxy = None
        worker_state = self.state
        if proxy:
            from sparkmark.devtools.netfault import CutProxy
            self.proxy = CutProxy("127.0.0.1", pg.port)
            worker_state = self.state.replace(f":{pg.port}/", f":{self.proxy.port}/")
        self.input, self.target = workdir / "input", workdir / "target"
        self.input.mkdir(parents=True)
        self.workdir = workdir
        self.data_sa = self.data_jdbc = None
        self.bucket = None
        if job == "s3files":  # a fresh bucket per schedule on the run's one SeaweedFS server
            from sparkmark.devtools.s3 import Bucket
            self.bucket = Bucket(s3, db.replace("_", "-"))
            self.inputs = S3Inputs(self.bucket)
        elif job == "jdbc":
            self.data_sa = data_pg.create_database(db + "_data")
            self.data_jdbc = f"jdbc:postgresql://127.0.0.1:{data_pg.port}/{db}_data"
            self.inputs: Inputs | SourceTable = SourceTable(self.data_sa)
        else:
            self.inputs = Inputs(self.input)
        self.pipeline_file = workdir / "pipeline.py"
        if job == "pipeline":  # what ``sparkmark rollback`` loads
            write_pipeline_file(self.pipeline_file, self.state, self.input, self.target)
        self.clock_until = 0.0                 # pipeline: real time a forward jump stalls until
        self.pipeline_bookmark: dict = {}      # pipeline: module A's bookmark after recovery
        src, dst = ((self.bucket.url("input"), self.bucket.url("target")) if self.bucket
                    else (str(self.input), str(self.target)))
        self.base = [sys.executable, __file__, "--state", worker_state, "--input", src,
                     "--target", dst, "--job", job] + (
                         ["--data-jdbc", self.data_jdbc] if self.data_jdbc else [])
        self.reset_seen = 0                    # committed runs a reset may have rolled back
        self.reset_states: Counter = Counter()  # what each reset_kill left
        self.env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), SPARKMARK_LEASE_SECONDS="30")
        self.env.pop("SPARKMARK_CHAOS_CLOCK_MS", None)
        if job == "iceberg":
            # the catalog (a fresh warehouse folder) and the jars in spark-defaults.conf: the
            # workers, the checker and the CLI's reset all find the table the way a user's would
            write_spark_defaults(workdir / "spark-conf", workdir / "warehouse")
            self.env["SPARK_CONF_DIR"] = str(workdir / "spark-conf")
            # spark-submit arguments in the harness's environment (importing sparkmark.glue
            # sets some for bare SparkContext() scripts) would replace those jars: drop them
            self.env.pop("PYSPARK_SUBMIT_ARGS", None)
        if job == "s3files":  # the s3a jars and settings, as a user passes them
            write_s3_spark_defaults(workdir / "spark-conf", s3)
            self.env["SPARK_CONF_DIR"] = str(workdir / "spark-conf")
            self.env.pop("PYSPARK_SUBMIT_ARGS", None)
        self.statuses: Counter = Counter()     # the ledger's statuses after recovery
        self.iceberg_unpublished = 0           # unpublished snapshots of uncommitted runs
        self.outcomes: Counter = Counter()     # (kind, outcome) -> count
        self.committed: list[str] = []         # run ids whose commit() returned
        self.problems: list[str] = []
        self.errors: list[str] = []

    # -- workers
    def start(self, extra_env: dict | None = None, gate: str | None = None) -> Trial:
        cmd = self.base + ["--worker"] + (["--gate", gate] if gate else [])
        return Trial(cmd, dict(self.env, **(extra_env or {})))

    def finish(self, t: Trial, kind: str) -> str:
        try:
            t.proc.wait(WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:
            t.kill()
            t.proc.wait(30)
            self.problems.append(f"{kind}: a worker hung for {WORKER_TIMEOUT:.0f} s; last "
                                 f"lines {t.lines[-3:]}")
            return "hung"
        time.sleep(0.05)
        for line in t.lines:
            if line.startswith("RUN ") and "done" in t.seen and self.job != "pipeline":
                self.committed.append(line[4:])
            elif line.startswith("COMMITTED "):  # a pipeline's module run that committed
                self.committed.append(line[10:])
        if "done" in t.seen:
            return "completed"
        if any(x.startswith("REFUSED") for x in t.seen):
            return "refused"
        err = next((x for x in t.lines if x.startswith("ERROR ")), None)
        if err:
            self.errors.append(f"{kind}: {err[6:]}")
            return "failed"
        return "killed" if t.proc.returncode in (-9, 137) else "failed"

    def s3_down(self, s: dict) -> str:
        """Stop SeaweedFS ``delay`` s after the step's phase marker, start it again after
        ``down_s`` s.  The model: the run completes, or it fails cleanly (FAILED, the bookmark
        version and the target's records as before), or it failed after its store commit
        (SUCCEEDED, publish not done: recovery rolls the publish forward); never a FAILED run
        with records published or the bookmark moved."""
        before_bm = bookmark_of(self.state)
        before_ids = Counter(read_target_ids(self))
        t, outcome = self.outage(s, self.s3.stop_server, self.s3.start, "s3_down")
        run = next((x[4:] for x in t.lines if x.startswith("RUN ")), None)
        row = next((r for r in self.ledger() if r["run_id"] == run), None)
        if outcome != "failed" or row is None:
            return outcome
        after_ids = Counter(read_target_ids(self))
        if row["status"] == "FAILED":
            if bookmark_of(self.state) != before_bm or after_ids != before_ids:
                self.problems.append(
                    f"s3_down: run {run} FAILED but the bookmark moved "
                    f"({before_bm and before_bm['Version']} -> "
                    f"{(bookmark_of(self.state) or {}).get('Version')}) or the target changed "
                    f"({sum(before_ids.values())} -> {sum(after_ids.values())} records)")
            return "failed"
        if row["status"] in ("SUCCEEDED", "EMPTY"):
            if row["publish_state"] not in (None, "done", "pending"):
                self.problems.append(f"s3_down: run {run} {row['status']} with publish_state "
                                     f"{row['publish_state']!r}")
            return "failed-after-commit"
        self.problems.append(f"s3_down: run {run} ended {row['status']} (expected FAILED, or "
                             "SUCCEEDED/EMPTY after its commit)")
        return "failed"

    def lost_answer(self, s: dict) -> str:
        """The run's commit reaches the store, its answer does not (then ``down_s`` s of
        outage through the proxy).  The model: the run completes (it read the outcome again)
        or fails saying the outcome is unknown; either way its row is SUCCEEDED (the commit
        landed) and its output is published by the run or by the next one (checked with the
        rest after recovery); a run that never got to commit is ``missed``."""
        if self.proxy is None or self.job == "pipeline":
            raise ValueError("lost_answer needs the schedule's proxy and a single job")
        cuts = self.proxy.cuts
        self.proxy.cut_after(b"COMMIT", s["down_s"],
                             following=b"INSERT INTO sm_bookmark_versions")
        t = self.start()
        outcome = self.finish(t, "lost_answer")
        self.proxy.disarm()
        self.proxy.wait_accepting()  # the outage ends with the step, as store_down's does
        if self.proxy.cuts == cuts:
            return "missed"
        run = next((x[4:] for x in t.lines if x.startswith("RUN ")), None)
        row = next((r for r in self.ledger() if r["run_id"] == run), None)
        if row is None or row["status"] not in ("SUCCEEDED", "EMPTY"):
            self.problems.append(f"lost_answer: run {run}'s commit landed but its row is "
                                 f"{row and row['status']}")
        if outcome == "completed" and row is not None and row["publish_state"] not in (
                None, "done"):
            self.problems.append(f"lost_answer: run {run} completed but its publish is "
                                 f"{row['publish_state']!r}")
        return outcome

    def outage(self, s: dict, stop, start, kind: str) -> tuple[Trial, str]:
        """Run the job, stop a server ``delay`` s after the step's phase marker, start it again
        after ``down_s`` s; the worker and its outcome."""
        t = self.start()
        if t.wait_for(self.marker(s)):
            time.sleep(s["delay"])
        stop()
        time.sleep(s["down_s"])
        start()
        return t, self.finish(t, kind)

    def marker(self, s: dict, phase: str | None = None) -> str:
        """The worker's line that opens ``phase`` (a pipeline's: of the step's module)."""
        m = PHASES[phase or s["phase"]][0]
        return f"{s.get('module', 'A')}:{m}" if self.job == "pipeline" else m

    def step(self, s: dict) -> None:
        rng = random.Random(s["seed"])
        self.inputs.add(rng)
        kind = s["kind"]
        if kind == "run":
            outcome = self.finish(self.start(), kind)
        elif kind == "kill":
            t = self.start()
            if t.wait_for(self.marker(s)):
                time.sleep(s["delay"])
            t.kill()
            outcome = self.finish(t, kind)
        elif kind == "store_down":
            _, outcome = self.outage(s, self.pg.stop_server, self.pg.start_server, kind)
        elif kind == "racing":
            gate = str(self.workdir / f"gate-{s['seed']}")
            ts = [self.start(gate=gate) for _ in range(2)]
            for t in ts:
                t.wait_for("ready")
            Path(gate).touch()
            outs = sorted(self.finish(t, kind) for t in ts)
            ran = sum(any(x.startswith("RUN ") for x in t.seen) for t in ts)
            if self.job == "pipeline":
                # each module is its own job: the loser is refused by p.run() (a module is
                # active) or at a module's init (then its dependants are SKIPPED); it may not
                # fail in any other way
                if "refused" not in outs or any(o not in ("completed", "refused")
                                                for o in outs):
                    self.problems.append(f"racing pipeline drivers: outcomes {outs}; expected "
                                         "one refused (at the run or at a module), neither "
                                         "failed")
            elif ran != 1 or "refused" not in outs:
                self.problems.append(f"racing: {ran} of 2 drivers ran (outcomes {outs}); "
                                     f"expected exactly one, the other refused (a driver "
                                     f"that fails otherwise is a wrong answer too)")
            outcome = "+".join(outs)
        elif kind == "clock":
            if "offset_s" in s:  # the pipeline: seconds (see draw_step)
                env = {"SPARKMARK_CHAOS_CLOCK_MS": str(s["offset_s"] * 1000)}
                self.clock_until = max(self.clock_until, time.time() + s["offset_s"] + 1)
            else:
                env = {"SPARKMARK_CHAOS_CLOCK_MS": str(s["offset_min"] * 60_000)}
            outcome = self.finish(self.start(env), kind)
        elif kind == "s3_down":
            outcome = self.s3_down(s)
        elif kind == "input":
            t = self.start()

            def arrive() -> None:
                t.wait_for(self.marker(s, "read"))
                for delay in s["bursts"]:
                    time.sleep(delay)
                    self.inputs.add(rng, most=2)

            th = threading.Thread(target=arrive)
            th.start()
            outcome = self.finish(t, kind)
            th.join()
        elif kind == "lost_answer":
            outcome = self.lost_answer(s)
        elif kind == "reset_kill" and self.job == "pipeline":
            outcome = self.rollback_kill(s)
        elif kind == "reset_kill":
            outcome = self.reset_kill(s)
        else:
            raise ValueError(f"unknown step kind {kind!r}")
        self.outcomes[(kind, outcome)] += 1
        self.log(f"    {kind:<10} -> {outcome}")

    def reset_kill(self, s: dict) -> str:
        """``sparkmark bookmark reset JOB --remove-output`` (the CLI, its own process group),
        SIGKILLed after ``delay`` seconds unless it ended first.  The model:

        * completed: the bookmark is empty (a new ``reset`` version), every run that was
          SUCCEEDED/EMPTY is ROLLED_BACK with its output removed (``publish_state`` removed) and
          the target holds no record;
        * killed or failed: the state is one of the two sides of the reset's one store
          transaction: either nothing changed (same bookmark version, the same runs
          SUCCEEDED/EMPTY) or the bookmark is reset and all those runs are ROLLED_BACK (output
          removed or still ``removing``: a repeat or the job's next run finishes it);
        * either way, after recovery every source record is in the target exactly once (the
          records of the rolled-back runs are read again: reset = start over).
        """
        before_rows = {r["run_id"]: r for r in self.ledger()}
        before_bm = bookmark_of(self.state)
        self.reset_seen = len(self.committed)  # these may be ROLLED_BACK from now on
        # through sh: the CLI's error line (stderr) reaches the harness with its stdout
        cmd = ["sh", "-c", 'exec "$0" "$@" 2>&1', sys.executable, "-c",
               "from sparkmark.ops.cli import main; main()", "--state", self.state, "bookmark",
               "reset", JOB, "--remove-output"]
        outcome = self.killed_cli(cmd, s, "reset", "")
        if outcome == "hung":
            return outcome
        done = {r: x for r, x in before_rows.items() if x["status"] in ("SUCCEEDED", "EMPTY")}
        after_rows = {r["run_id"]: r for r in self.ledger()}
        after_bm = bookmark_of(self.state)
        # what the kill left: the reset not begun, or begun with its removal open or finished
        publish = {after_rows[r]["publish_state"] for r in done}
        statuses = {after_rows[r]["status"] for r in done}
        rolled = bool(done) and statuses == {"ROLLED_BACK"}
        self.reset_states[outcome + ": " + (
            "nothing to roll back" if not done else
            "reset, removal finished" if rolled and publish == {"removed"} else
            "reset, removal open" if rolled else
            "unchanged" if after_bm == before_bm and all(
                after_rows[r]["status"] == x["status"] for r, x in done.items()) else
            "half a reset")] += 1
        if before_bm is None:  # no job yet: the reset must refuse and change nothing
            if outcome == "completed" or after_rows != before_rows:
                self.problems.append(f"reset_kill before any run: {outcome}, ledger "
                                     f"{len(before_rows)} -> {len(after_rows)} rows")
            return "no-job" if outcome == "failed" else outcome
        changed_bm = after_bm != before_bm
        if outcome == "completed":
            left = len(read_target_ids(self))
            bad = [(r, after_rows[r]["status"], after_rows[r]["publish_state"]) for r in done
                   if (after_rows[r]["status"], after_rows[r]["publish_state"])
                   != ("ROLLED_BACK", "removed")]
            if after_bm["JobBookmark"] or not changed_bm or bad or left:
                self.problems.append(
                    f"reset_kill completed but: bookmark {after_bm['JobBookmark']!r} "
                    f"(changed: {changed_bm}), runs not rolled back/removed {bad[:3]}, "
                    f"{left} records left in the target")
        elif done and not rolled and any(after_rows[r]["status"] != x["status"]
                                         for r, x in done.items()):
            self.problems.append(f"reset_kill {outcome}: half a reset, run statuses "
                                 f"{sorted(statuses)} (before: all SUCCEEDED/EMPTY)")
        elif rolled and (after_bm["JobBookmark"] or not changed_bm):
            self.problems.append(f"reset_kill {outcome}: runs ROLLED_BACK but the bookmark is "
                                 f"{after_bm['JobBookmark']!r} (changed: {changed_bm})")
        elif done and not rolled and changed_bm:
            self.problems.append(f"reset_kill {outcome}: the bookmark changed "
                                 f"({before_bm['Version']} -> {after_bm['Version']}) but no "
                                 "run was rolled back")
        return outcome

    def rollback_kill(self, s: dict) -> str:
        """The pipeline's reset: ``sparkmark rollback FILE --module ... --since 2000-01-01``
        (the CLI; the modules that made progress, downstream ones included: rolling back A
        alone would let B load A's reloaded rows twice), SIGKILLed after ``delay`` seconds
        unless it ended first.  The model, as for :meth:`reset_kill`: the rollback is one store
        transaction (every run from the primordial cut ROLLED_BACK and the modules' bookmarks
        rewound) then the removal of those runs' files; so after a kill either nothing changed
        or all of those runs are ROLLED_BACK (removal open or finished); completed: all of them
        ROLLED_BACK and removed, the modules' targets empty and A's bookmark empty."""
        from sparkmark.planning.windows import parse_time
        primordial = parse_time(PIPELINE_PRIMORDIAL, "UTC", what="primordial")
        before = pipeline_ledger_rows(self.state)
        cut = rollback_set(before, primordial)
        modules = sorted({r["module_id"] for r in before if r["run_id"] in cut})
        self.reset_seen = len(self.committed)  # these may be ROLLED_BACK from now on
        cmd = ["sh", "-c", 'exec "$0" "$@" 2>&1', sys.executable, "-c",
               "from sparkmark.ops.cli import main; main()", "--state", self.state, "rollback",
               str(self.pipeline_file), "--since", PIPELINE_PRIMORDIAL]
        for m in modules or sorted(PIPELINE_MODULES):
            cmd += ["--module", str(m)]
        outcome = self.killed_cli(cmd, s, "rollback",
                                  f" (pipeline rollback of modules {modules})")
        if outcome == "hung":
            return outcome
        after = {r["run_id"]: r for r in pipeline_ledger_rows(self.state)}
        statuses = {after[r]["status"] for r in cut}
        publish = {after[r]["publish_state"] for r in cut}
        rolled = bool(cut) and statuses == {"ROLLED_BACK"}
        unchanged = all(after[r]["status"] == "SUCCEEDED" or after[r]["status"] == "EMPTY"
                        for r in cut)
        self.reset_states[outcome + ": " + (
            "nothing to roll back" if not cut else
            "reset, removal finished" if rolled and "removing" not in publish else
            "reset, removal open" if rolled else
            "unchanged" if unchanged else "half a reset")] += 1
        if not cut:  # nothing committed: the CLI must refuse and change nothing
            if outcome == "completed" or any(
                    after.get(r["run_id"], {}).get("status") != r["status"] for r in before):
                self.problems.append(f"pipeline rollback with nothing to roll back: {outcome}")
            return "no-job" if outcome == "failed" else outcome
        if not rolled and not unchanged:
            self.problems.append(f"reset_kill {outcome}: half a rollback, run statuses "
                                 f"{sorted(statuses)} (before: all SUCCEEDED/EMPTY)")
        if outcome == "completed":
            left = {m: len(read_id_runs(self.target / PIPELINE_MODULES[m])) for m in modules}
            bm = bookmark_of(self.state, f"{PIPELINE}.1")
            if not rolled or "removing" in publish or any(left.values()) or (
                    1 in modules and bm and bm["JobBookmark"]):
                self.problems.append(
                    f"pipeline rollback completed but: statuses {sorted(statuses)}, publish "
                    f"{sorted(map(str, publish))}, rows left per module {left}, A's bookmark "
                    f"{bm and bm['JobBookmark']!r}")
        return outcome

    def killed_cli(self, cmd: list[str], s: dict, what: str, label: str) -> str:
        """Run the CLI ``cmd`` (a reset or a rollback), SIGKILL it after ``s["delay"]`` seconds
        (from the start of its removal when ``s["phase"] == "removal"``) unless it ended first;
        returns ``completed``, ``killed``, ``failed`` (its error line kept) or ``hung``."""
        t0 = time.time()
        t = Trial(cmd, self.env)
        if s.get("phase") == "removal":
            self.wait_for_removing(t)
        try:
            t.proc.wait(s["delay"])
        except subprocess.TimeoutExpired:
            t.kill()
        try:
            t.proc.wait(WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:
            t.kill()
            t.proc.wait(30)
            self.problems.append(f"reset_kill: the {what} hung")
            return "hung"
        time.sleep(0.05)
        rc = t.proc.returncode
        outcome = ("completed" if rc == 0 else "killed" if rc in (-9, 137) else "failed")
        self.log(f"    reset_kill{label}: exit {rc} after {time.time() - t0:.1f} s "
                 f"(delay {s['delay']} s)")
        if outcome == "failed":
            err = next((x for x in t.lines if x.startswith("error")), None)
            self.errors.append(f"reset_kill: exit {rc}: {err or t.lines[-1:]}")
        return outcome

    def wait_for_removing(self, t: Trial, timeout: float = 120) -> bool:
        """Poll the ledger until a run of the job is 'removing' (the reset's transaction
        committed) or the CLI ended."""
        import sqlalchemy as sa
        engine = sa.create_engine(self.state)
        q = sa.text("SELECT COUNT(*) FROM sm_runs WHERE (job_name = :j OR pipeline = :p) "
                    "AND publish_state = 'removing'")
        end = time.time() + timeout
        try:
            while time.time() < end and t.proc.poll() is None:
                try:
                    with engine.connect() as c:
                        if c.execute(q, {"j": JOB, "p": PIPELINE}).scalar():
                            return True
                except Exception:  # noqa: BLE001 - no tables yet
                    pass
                time.sleep(0.01)
            return False
        finally:
            engine.dispose()

    def iceberg_state(self) -> dict:
        """The Iceberg target read by a checker process (Spark with the schedule's catalog):
        ``ids`` of the current snapshot and ``snapshots`` (see :func:`verify_iceberg`)."""
        t = Trial(self.base + ["--worker", "--verify"], self.env)
        try:
            t.proc.wait(WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:
            t.kill()
            t.proc.wait(30)
        time.sleep(0.05)
        out = [json.loads(x[8:]) for x in t.lines if x.startswith("ICEBERG ")]
        if not out:
            raise RuntimeError(f"the Iceberg checker failed (exit {t.proc.returncode}): "
                               f"{t.lines[-3:]}")
        return out[0]

    def ledger(self) -> list[dict]:
        try:
            return ledger_rows(self.state)
        except Exception as e:  # noqa: BLE001 - no run yet: the store has no tables
            if "sm_runs" in str(e):
                return []
            raise

    # -- recovery and the model
    def recover_and_check(self) -> list[str]:
        if self.clock_until > time.time():  # a pipeline's forward clock jump: wait it out
            time.sleep(self.clock_until - time.time())
        results = []
        for i in range(2):
            t = self.start()
            self.finish(t, "recovery")
            res = [json.loads(x[7:]) for x in t.lines if x.startswith("RESULT ")]
            if not res:
                self.problems.append(f"recovery run {i + 1} did not complete: {t.lines[-3:]}")
                return self.problems
            results.append(res[0])
        if results[-1]["status"] != "EMPTY" or results[-1]["records_written"]:
            self.problems.append(f"the last recovery run found new input: {results[-1]}")
        if self.job == "pipeline":
            return self.check_pipeline(results[-1]["snapshot_ts"])
        if self.job == "iceberg":  # one checker process: the ids and the snapshots
            ice = self.iceberg_state()
            ids = ice["ids"]
        else:
            ids = read_target_ids(self)
        counts = Counter(ids)
        expected = set(self.inputs.expected)
        dupes = sorted(r for r, c in counts.items() if c > 1)
        missing = sorted(expected - set(counts))
        unexpected = sorted(set(counts) - expected)
        for what, got in (("duplicated", dupes), ("missing", missing),
                          ("unexpected", unexpected)):
            if got:
                self.problems.append(f"{len(got)} record ids {what} in the target: {got[:5]}")
        if self.job == "iceberg":
            found, self.iceberg_unpublished = iceberg_problems(ice["snapshots"],
                                                               ledger_rows(self.state))
            self.problems.extend(found)
        if (self.target / "_sparkmark_staging").exists():
            self.problems.append("staging output left in the target (_sparkmark_staging)")
        if self.bucket is not None:
            left = s3_staged_keys(self.bucket)
            if left:
                self.problems.append(f"{len(left)} staged objects left in the bucket: {left[:3]}")
        staged = staged_rows(self)
        if staged:
            self.problems.append(f"{staged} rows left in the staging table {STAGE_TABLE}")
        rows = ledger_rows(self.state)
        bad = [(r["run_id"], r["status"]) for r in rows if r["status"] not in TERMINAL]
        if bad:
            self.problems.append(f"ledger rows not terminal after recovery: {bad}")
        removing = [r["run_id"] for r in rows if r["publish_state"] == "removing"]
        if removing:
            self.problems.append(f"rolled-back runs still 'removing' after recovery: {removing}")
        written = sum(r["records_written"] or 0 for r in rows if r["status"] == "SUCCEEDED")
        if written != len(counts):
            self.problems.append(f"records_written over SUCCEEDED rows is {written}, the target "
                                 f"holds {len(counts)} distinct ids")
        self.check_committed(rows)
        self.records = len(expected)
        self.statuses = Counter(r["status"] for r in rows)
        return self.problems

    def check_committed(self, rows: list[dict]) -> None:
        """Every run whose ``commit()`` returned is SUCCEEDED/EMPTY in the ledger, or
        ROLLED_BACK by a reset drawn after it."""
        status = {r["run_id"]: r["status"] for r in rows}
        lost = [(r, status.get(r)) for i, r in enumerate(self.committed)
                if status.get(r) not in ("SUCCEEDED", "EMPTY")
                and not (i < self.reset_seen and status.get(r) == "ROLLED_BACK")]
        if lost:
            self.problems.append(f"commit() returned but the ledger says otherwise: {lost}")

    def check_pipeline(self, last_snapshot: int) -> list[str]:
        """The pipeline's model check (see :func:`pipeline_problems`), after recovery."""
        from sparkmark.planning.windows import parse_time
        rows = pipeline_ledger_rows(self.state)
        targets = {m: read_id_runs(self.target / n) for m, n in PIPELINE_MODULES.items()}
        staged = [n for n in PIPELINE_MODULES.values()
                  if (self.target / n / "_sparkmark_staging").exists()]
        bookmarks = {m: (bookmark_of(self.state, f"{PIPELINE}.{m}") or {}).get("JobBookmark")
                     for m in PIPELINE_MODULES}
        self.pipeline_bookmark = bookmarks[1] or {}
        files = sorted(("file:" + str(p), p.stat().st_mtime_ns // 1_000_000)
                       for p in self.input.rglob("*.json"))
        self.problems.extend(pipeline_problems(
            self.inputs.expected, targets, rows, bookmarks, files,
            last_snapshot=last_snapshot,
            primordial_ts=parse_time(PIPELINE_PRIMORDIAL, "UTC", what="primordial"),
            staged=staged))
        self.check_committed(rows)
        self.records = len(self.inputs.expected)
        self.statuses = Counter(r["status"] for r in rows)
        return self.problems


def read_ids(target: Path) -> list[str]:
    """The record ids in a parquet target, with multiplicity (pyarrow skips ``_``/``.`` names:
    the staging folder and markers)."""
    import pyarrow.dataset as ds
    if not target.is_dir() or not any(not n.startswith(("_", ".")) for n in os.listdir(target)):
        return []
    return ds.dataset(str(target), format="parquet").to_table(columns=["id"])["id"].to_pylist()


def read_s3_ids(bucket, prefix: str = "target/") -> list[str]:
    """The record ids in a parquet target in a bucket, read through the S3 API (boto3 lists,
    pyarrow reads each object); keys under a ``_``/``.`` name (staging, markers) are skipped,
    as a parquet reader skips them."""
    import io

    import pyarrow.parquet as pq
    ids: list[str] = []
    for key in bucket.keys(prefix):
        rel = key[len(prefix):]
        if key.endswith("/") or any(p.startswith(("_", ".")) for p in rel.split("/")):
            continue
        ids.extend(pq.read_table(io.BytesIO(_get_settled(bucket, key)),
                                 columns=["id"])["id"].to_pylist())
    return ids


def _get_settled(bucket, key: str, attempts: int = 20) -> bytes:
    """``bucket.get(key)``, asked again while the server answers a 5xx: right after SeaweedFS
    starts again its S3 gateway answers before its volume server has loaded the volumes
    (``InternalError`` on GetObject for ~a second; seen once in CI).  The harness reads what
    is in the bucket; it does not judge the server's warm-up."""
    from botocore.exceptions import ClientError
    for attempt in range(attempts):
        try:
            return bucket.get(key)
        except ClientError as e:
            status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
            if status < 500 or attempt == attempts - 1:
                raise
            time.sleep(0.25)
    raise AssertionError("unreachable")


def s3_staged_keys(bucket, prefix: str = "target/") -> list[str]:
    """Objects left under the target's staging prefix (``_sparkmark_staging/``) or Hadoop's
    ``_temporary/`` (empty "directory" keys ending in ``/``, which SeaweedFS keeps after
    deletes, hold nothing and are not counted)."""
    return [k for k in bucket.keys(prefix) if not k.endswith("/")
            and ("/_sparkmark_staging/" in k or "/_temporary/" in k)]


def read_target_ids(sch: "Schedule") -> list[str]:
    """The record ids in the schedule's target (files, the PostgreSQL table, the parquet
    objects in the bucket, or the Iceberg table's current snapshot, read through Iceberg by a
    checker process)."""
    if sch.bucket is not None:
        return read_s3_ids(sch.bucket)
    if sch.job == "iceberg":
        return sch.iceberg_state()["ids"]
    if sch.job != "jdbc":
        return read_ids(sch.target)
    return _table_ids(sch.data_sa, TARGET_TABLE)


def read_id_runs(target: Path) -> list[tuple[str, str]]:
    """``(id, sm_run_id)`` of every row in a pipeline module's parquet target."""
    import pyarrow.dataset as ds
    if not target.is_dir() or not any(not n.startswith(("_", ".")) for n in os.listdir(target)):
        return []
    t = ds.dataset(str(target), format="parquet").to_table(columns=["id", "sm_run_id"])
    return list(zip(t["id"].to_pylist(), t["sm_run_id"].to_pylist()))


def pipeline_ledger_rows(state_url: str) -> list[dict]:
    """The pipeline's module runs (all three jobs), oldest first."""
    import sqlalchemy as sa
    engine = sa.create_engine(state_url)
    try:
        with engine.connect() as c:
            if not sa.inspect(c).has_table("sm_runs"):
                return []
            q = sa.text("SELECT run_id, job_name, module_id, status, records_written, "
                        "publish_state, from_ts, until_ts, run_number FROM sm_runs "
                        "WHERE pipeline = :p ORDER BY run_start_ts")
            return [dict(r._mapping) for r in c.execute(q, {"p": PIPELINE})]
    finally:
        engine.dispose()


def rollback_set(rows: list[dict], since_ts: int) -> set[str]:
    """The module runs ``rollback --since`` undoes (``planning.windows.rollback_cut`` per
    module: from the first SUCCEEDED/EMPTY run whose window ends after ``since_ts``)."""
    out: set[str] = set()
    for m in PIPELINE_MODULES:
        done = sorted((r for r in rows if r["module_id"] == m
                       and r["status"] in ("SUCCEEDED", "EMPTY")
                       and r["from_ts"] is not None and r["until_ts"] is not None),
                      key=lambda r: r["run_number"])
        hit = next((i for i, r in enumerate(done) if r["until_ts"] > since_ts), None)
        if hit is not None:
            out |= {r["run_id"] for r in done[hit:]}
    return out


def pipeline_problems(expected: list[str], targets: dict[int, list[tuple[str, str]]],
                      rows: list[dict], bookmarks: dict[int, dict | None],
                      files: list[tuple[str, int]],
                      *, last_snapshot: int, primordial_ts: int,
                      staged: list[str] = ()) -> list[str]:
    """The pipeline job's model check after recovery (pure).

    ``expected``: every input record id; ``targets``: module id -> ``(id, sm_run_id)`` rows of
    its target; ``rows``: the module runs of the ledger; ``bookmarks``: module id -> its
    ``JobBookmark``; ``files``: the input files ``(path, mtime ms)``; ``last_snapshot``: the
    snapshot of the last recovery run.  Per module: every input record exactly once in its
    target; every ledger row terminal and none still 'removing'; every SUCCEEDED run's
    ``records_written`` equal to its rows in the target, no rows of a run that is not
    SUCCEEDED, and the SUCCEEDED runs adding up to the input; the windows of its
    SUCCEEDED/EMPTY runs contiguous from the primordial start to the last snapshot (a module's
    "bookmark": where its next window starts); A's file bookmark naming its source and covering
    every input file; nothing staged.

    Example: ``pipeline_problems([], {}, [], {}, [], last_snapshot=1, primordial_ts=0)  # []``
    """
    problems: list[str] = []
    want = set(expected)
    for n in staged:
        problems.append(f"pipeline: staging output left in module {n}'s target")
    for m, name in PIPELINE_MODULES.items():
        got = targets.get(m, [])
        counts = Counter(i for i, _ in got)
        for what, ids in (("duplicated", sorted(i for i, c in counts.items() if c > 1)),
                          ("missing", sorted(want - set(counts))),
                          ("unexpected", sorted(set(counts) - want))):
            if ids:
                problems.append(f"pipeline: {len(ids)} record ids {what} in module {name}'s "
                                f"target: {ids[:5]}")
        mine = [r for r in rows if r["module_id"] == m]
        bad = [(r["run_id"], r["status"]) for r in mine
               if r["status"] not in TERMINAL | {"SKIPPED"}]
        if bad:
            problems.append(f"pipeline: module {name} ledger rows not terminal: {bad}")
        removing = [r["run_id"] for r in mine if r["publish_state"] == "removing"]
        if removing:
            problems.append(f"pipeline: module {name} runs still 'removing': {removing}")
        per_run = Counter(run for _, run in got)
        status = {r["run_id"]: r for r in mine}
        for run, c in sorted(per_run.items(), key=lambda x: str(x[0])):
            st = status.get(run, {}).get("status")
            if st != "SUCCEEDED":
                problems.append(f"pipeline: {c} rows of run {run} ({st}) in module {name}'s "
                                "target")
        for r in mine:
            if r["status"] == "SUCCEEDED" and (r["records_written"] or 0) != per_run[r["run_id"]]:
                problems.append(f"pipeline: module {name} run {r['run_id']} says "
                                f"records_written={r['records_written']}, its target holds "
                                f"{per_run[r['run_id']]} of its rows")
        written = sum(r["records_written"] or 0 for r in mine if r["status"] == "SUCCEEDED")
        if written != len(want):
            problems.append(f"pipeline: module {name}'s SUCCEEDED runs wrote {written} records, "
                            f"the input has {len(want)}")
        done = sorted((r for r in mine if r["status"] in ("SUCCEEDED", "EMPTY")),
                      key=lambda r: r["run_number"])
        edge = primordial_ts
        for r in done:
            if r["from_ts"] != edge:
                problems.append(f"pipeline: module {name} run {r['run_id']} window starts at "
                                f"{r['from_ts']}, the model says {edge} (gap or overlap)")
            edge = r["until_ts"]
        if edge != last_snapshot:
            problems.append(f"pipeline: module {name}'s windows end at {edge}, the last "
                            f"recovery run's snapshot is {last_snapshot}")
    problems.extend(file_bookmark_problems(bookmarks.get(1), files))
    return problems


def file_bookmark_problems(bookmark: dict | None, files: list[tuple[str, int]]) -> list[str]:
    """Module A's bookmark against the model: its source ``src`` covers every input file
    (``(fully qualified path, mtime ms)``) by the file source's own rule (``BandState.covers``:
    mtime <= ``low``, or the file's path hash with that mtime in ``files``); a file it does not
    cover would be read again by the next run."""
    from sparkmark.planning.bands import BandState
    from sparkmark.planning.listing import FileEntry
    if not files:
        return []
    element = (bookmark or {}).get("src")
    if element is None:
        return [f"pipeline: module A's bookmark {bookmark!r} has no entry for its source 'src' "
                f"after reading {len(files)} files"]
    state = BandState.from_element(element)
    missed = [p for p, mtime in files if state is None or not state.covers(FileEntry(mtime, p))]
    if missed:
        return [f"pipeline: module A's bookmark does not cover {len(missed)} of {len(files)} "
                f"input files: {missed[:3]}"]
    return []


def _table_ids(sa_url: str, table: str) -> list[str]:
    import sqlalchemy as sa
    engine = sa.create_engine(sa_url)
    try:
        with engine.connect() as c:
            if not sa.inspect(c).has_table(table):
                return []
            return [r[0] for r in c.execute(sa.text(f"SELECT id FROM {table}"))]
    finally:
        engine.dispose()


def staged_rows(sch: "Schedule") -> int:
    """Rows left in the JDBC sink's staging table (0 for the files job)."""
    return len(_table_ids(sch.data_sa, STAGE_TABLE)) if sch.job == "jdbc" else 0


def bookmark_of(state_url: str, job: str = JOB) -> dict | None:
    """The job's current bookmark entry (``Version``, ``JobBookmark``, ...), None before the
    job's first run."""
    from sparkmark.core.errors import UnknownJobError
    from sparkmark.state.store import open_store
    store = open_store(state_url)
    try:
        entry = store.bookmark_entry(job)
        return {"Version": entry["Version"], "JobBookmark": entry["JobBookmark"]}
    except UnknownJobError:
        return None
    finally:
        store.engine.dispose()


def ledger_rows(state_url: str) -> list[dict]:
    import sqlalchemy as sa
    engine = sa.create_engine(state_url)
    try:
        with engine.connect() as c:
            q = sa.text("SELECT run_id, status, records_written, publish_state FROM sm_runs "
                        "WHERE job_name = :j ORDER BY run_start_ts")
            return [dict(r._mapping) for r in c.execute(q, {"j": JOB})]
    finally:
        engine.dispose()


# ---------------------------------------------------------------------------- the harness
_db_counter = [0]


def run_schedule(pg, steps: list[dict], seed: int, log=print, job: str = "files",
                 data_pg=None, s3=None) -> Schedule:
    _db_counter[0] += 1
    with tempfile.TemporaryDirectory(prefix="sparkmark-chaos-") as d:
        sch = Schedule(pg, f"chaos_{os.getpid()}_{_db_counter[0]}", Path(d), log=log, job=job,
                       data_pg=data_pg, s3=s3,
                       proxy=any(s["kind"] in LOST_KINDS for s in steps))
        try:
            for s in steps:
                sch.step(s)
            sch.recover_and_check()
        finally:
            if sch.proxy is not None:
                sch.proxy.close()
        if job == "jdbc":
            sch.inputs.engine.dispose()
    return sch


def shrink(pg, steps: list[dict], seed: int, log=print, budget: int = 8, job: str = "files",
           data_pg=None, s3=None) -> list[dict]:
    """Greedy: drop one step at a time while the schedule still fails (at most ``budget``
    tries: every try is a whole schedule)."""
    i, tries = 0, 0
    while i < len(steps) and tries < budget and len(steps) > 1:
        trial = steps[:i] + steps[i + 1:]
        tries += 1
        log(f"  shrinking: without step {i + 1} ({steps[i]['kind']})")
        if run_schedule(pg, trial, seed, log=lambda *_: None, job=job,
                        data_pg=data_pg, s3=s3).problems:
            steps = trial
        else:
            i += 1
    return steps


def replay_command(seed: int, steps: list[dict], job: str = "files") -> str:
    return (f"python benchmarks/chaos.py --seed {seed} --jobs {job} "
            f"--replay '{json.dumps(steps, separators=(',', ':'))}'")


def run_chaos(schedules: int, seed: int, steps: int = 5, *, replay: list[dict] | None = None,
              force_kinds: bool = False, do_shrink: bool = True, shrink_budget: int = 4,
              jobs: tuple[str, ...] | list[str] = DEFAULT_JOBS, log=print) -> dict:
    """Run the schedules; returns the report (also what chaos.json holds).

    ``jobs``: the job kinds to draw from (each schedule runs one, drawn from its seed).
    ``force_kinds``: the first steps of the run, across schedules, are one of each kind (so a
    small run injects every fault); the rest are drawn at random."""
    from sparkmark.devtools.postgres import start_postgres

    started = time.time()
    faults: Counter = Counter()
    job_counts: Counter = Counter()
    outcomes: Counter = Counter()
    ledger: Counter = Counter()
    reset_states: Counter = Counter()
    per_job: dict[str, Counter] = {}
    iceberg_unpublished = 0
    violations: list[dict] = []
    plans = []
    if replay is not None:
        plans.append((seed, draw_job(seed, jobs), replay))
    else:
        forced = list(KINDS) if force_kinds else []
        for i in range(schedules):
            job = draw_job(seed + i, jobs)
            plan = draw_schedule(seed + i, steps, job)
            rng = random.Random(seed + i)
            for j in range(len(plan)):
                if forced:
                    plan[j] = draw_step(rng, forced.pop(0), job)
            plans.append((seed + i, job, plan))
    if any(job == "iceberg" for _, job, _ in plans):
        why = iceberg_unavailable()
        if why:
            raise SystemExit(why)
    if any(job == "s3files" for _, job, _ in plans):
        why = s3files_unavailable()
        if why:
            raise SystemExit(why)
    records = 0
    pg = start_postgres()
    data_pg = s3 = None
    try:
        if any(job == "s3files" for _, job, _ in plans):
            # one SeaweedFS server per chaos run (a bucket per schedule); ``s3_down`` stops it
            from sparkmark.devtools.s3 import start_seaweedfs
            s3 = start_seaweedfs(tempfile.mkdtemp(prefix="sparkmark-chaos-weed-"))
        if any(job == "jdbc" for _, job, _ in plans):
            # source and target data on a second server: ``store_down`` stops only the store
            data_pg = start_postgres()
        for n, (s, job, plan) in enumerate(plans, 1):
            log(f"schedule {n}/{len(plans)} seed={s} job={job}: {[p['kind'] for p in plan]}")
            t0 = time.time()
            sch = run_schedule(pg, plan, s, log=log, job=job, data_pg=data_pg, s3=s3)
            log(f"  {time.time() - t0:.0f} s, {getattr(sch, 'records', 0)} records")
            job_counts[job] += 1
            for p in plan:
                faults[p["kind"]] += 1
                per_job.setdefault(job, Counter())[p["kind"]] += 1
            iceberg_unpublished += sch.iceberg_unpublished
            outcomes.update(sch.outcomes)
            reset_states.update(sch.reset_states)
            ledger.update(sch.statuses)
            records += getattr(sch, "records", 0)
            if sch.problems:
                log(f"  VIOLATION: {sch.problems}")
                short = shrink(pg, plan, s, log=log, budget=shrink_budget, job=job,
                               data_pg=data_pg, s3=s3) if do_shrink else plan
                v = {"seed": s, "job": job, "schedule": plan, "problems": sch.problems,
                     "shortest": short, "replay": replay_command(s, short, job),
                     "errors": sch.errors}
                violations.append(v)
                log(f"  reproduce: {v['replay']}")
            elif sch.errors:
                log(f"  (clean failures: {sch.errors})")
    finally:
        pg.stop()
        if data_pg is not None:
            data_pg.stop()
        if s3 is not None:
            s3.stop()
            shutil.rmtree(s3.data_dir, ignore_errors=True)
    table = {}
    for (kind, outcome), c in outcomes.items():
        table.setdefault(kind, Counter())[outcome] += c
    return {"schedules": len(plans), "steps": steps, "seed": seed, "faults": dict(faults),
            "jobs": dict(job_counts),
            "faults_per_job": {j: dict(c) for j, c in sorted(per_job.items())},
            # unpublished staged snapshots of runs that did not commit (allowed, not an error)
            "iceberg_unpublished_uncommitted": iceberg_unpublished,
            "outcomes": {k: dict(v) for k, v in sorted(table.items())},
            "reset_states": dict(reset_states),
            "ledger_statuses": dict(ledger), "source_records": records,
            "violations": violations, "elapsed_s": round(time.time() - started, 1)}


def print_table(report: dict) -> None:
    cols = ("completed", "failed", "killed", "refused", "hung")
    print(f"{'fault':<11}{'injected':>9}" + "".join(f"{c:>10}" for c in cols) + "  other")
    for kind in ALL_KINDS:
        outs = Counter()
        other = Counter()
        for o, c in report["outcomes"].get(kind, {}).items():
            for part in o.split("+"):
                (outs if part in cols else other)[part] += c
        print(f"{kind:<11}{report['faults'].get(kind, 0):>9}"
              + "".join(f"{outs[c]:>10}" for c in cols) + f"  {dict(other) or ''}")
    if report["reset_states"]:
        print(f"reset_kill left: {report['reset_states']}")
    for job, kinds in report.get("faults_per_job", {}).items():
        print(f"  {job}: {kinds}")
    print(f"schedules={report['schedules']} jobs={report['jobs']} "
          f"source_records={report['source_records']} "
          f"ledger={report['ledger_statuses']} violations={len(report['violations'])} "
          f"elapsed_s={report['elapsed_s']}")


def parse_jobs(text: str) -> tuple[str, ...]:
    jobs = tuple(j.strip() for j in text.split(",") if j.strip())
    unknown = [j for j in jobs if j not in JOB_KINDS]
    if not jobs or unknown:
        raise SystemExit(f"--jobs: give some of {', '.join(JOB_KINDS)}, not {text!r}")
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schedules", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--replay", help="run one schedule: a JSON list of steps")
    ap.add_argument("--jobs", default=",".join(DEFAULT_JOBS),
                    help="job kinds to draw from, comma-separated (files, jdbc, iceberg, "
                         "pipeline, s3files; iceberg needs Spark 3.5 and the Iceberg jars, "
                         "s3files the s3a jars and SeaweedFS's weed)")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--shrink-budget", type=int, default=4,
                    help="most schedules re-run to shrink one failing schedule")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "chaos.json"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--job", default="files", help=argparse.SUPPRESS)
    for hidden in ("--state", "--input", "--target", "--gate", "--data-jdbc"):
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    jobs = parse_jobs(a.jobs)
    if "iceberg" in jobs:
        why = iceberg_unavailable()
        if why:
            raise SystemExit(f"chaos.py: {why}")
    if "s3files" in jobs:
        why = s3files_unavailable()
        if why:
            raise SystemExit(f"chaos.py: {why}")
    report = run_chaos(a.schedules, a.seed, a.steps,
                       replay=json.loads(a.replay) if a.replay else None,
                       do_shrink=not a.no_shrink, shrink_budget=a.shrink_budget,
                       jobs=jobs)
    print_table(report)
    for v in report["violations"]:
        print(f"VIOLATION seed={v['seed']}: {v['problems']}")
        print(f"  shortest failing schedule: {v['replay']}")
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(report, indent=2))
    print(f"wrote {a.json}")
    sys.exit(1 if report["violations"] else 0)


if __name__ == "__main__":
    main()
