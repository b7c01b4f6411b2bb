"""Fault schedules: random sequences of crashes, store outages, racing drivers, clock jumps,
late input and killed resets over one bookmarked job per schedule, each followed by recovery and
a check against a model.

    python benchmarks/chaos.py --schedules 20 --seed 1          # 20 schedules of 5 steps
    python benchmarks/chaos.py --schedules 6 --steps 4 --seed 11 --jobs files,jdbc
    python benchmarks/chaos.py --seed 7 --jobs jdbc --replay '[{"kind": "kill", ...}]'
    python benchmarks/chaos.py --jobs pipeline --schedules 3 --steps 4 --seed 3
    .venv35/bin/python benchmarks/chaos.py --jobs files,iceberg --schedules 4 --steps 4
    python benchmarks/chaos.py --jobs s3files --schedules 3 --steps 4 --seed 1
    python benchmarks/chaos.py --simulate --schedules 1000 --seed 1   # no JVM: chaos_harness/sim
    python benchmarks/chaos.py --simulate --jobs pipeline --schedules 100   # (kinds: files, pipeline)

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
``sparkmark.rollback-of`` commit; unpublished snapshots of runs that did not commit are allowed
and counted (``iceberg_unpublished_uncommitted``).  A failing schedule is shrunk (steps removed one at a time
while it still fails) and printed as a one-line ``--replay`` command.  Prints a table; writes
benchmarks/results/chaos.json (``faults`` and ``jobs`` per kind, outcomes, ``reset_states``).

The pieces live in ``benchmarks/chaos_harness/``: ``draw`` (the steps drawn from a seed, the
new input), ``workers`` (the jobs run in the child processes, ``--worker``), ``schedule``
(:class:`Schedule`: the steps injected, the recovery and the check), ``checks`` (the pure model
checks), ``readers`` (targets, ledger and bookmarks read without Spark), ``environment`` (the
jars and ``spark-defaults.conf`` of the iceberg and s3files jobs), ``shrink`` (one schedule run
from scratch, a failing one shrunk), ``runner`` (:func:`run_chaos`) and ``constants``.  This
script is the benchmark's command line (the table and the JSON) and the workers' entry point.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

# the harness's names tests and docs use, importable from here as before
from chaos_harness.checks import iceberg_problems, pipeline_problems  # noqa: E402
from chaos_harness.constants import ALL_KINDS, DEFAULT_JOBS, JOB_KINDS, KINDS  # noqa: E402
from chaos_harness.draw import draw_step  # noqa: E402
from chaos_harness.environment import iceberg_unavailable, s3files_unavailable  # noqa: E402
from chaos_harness.runner import run_chaos  # noqa: E402
from chaos_harness.workers import worker  # noqa: E402

__all__ = ["KINDS", "draw_step", "iceberg_problems", "main", "pipeline_problems", "run_chaos",
           "s3files_unavailable"]


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
                         "s3files the s3a jars and SeaweedFS's weed); with --simulate: "
                         "files, pipeline (default both, drawn per schedule from its seed)")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--shrink-budget", type=int, default=4,
                    help="most schedules re-run to shrink one failing schedule")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "chaos.json"))
    ap.add_argument("--simulate", action="store_true",
                    help="the deterministic simulation: the real sparkmark code over a "
                         "simulated engine, file system and clock, in this process (no JVM); "
                         "--replay then takes a simulated schedule's JSON")
    ap.add_argument("--sweep", action="store_true",
                    help="with --simulate: one fault at every I/O point of a clean run")
    ap.add_argument("--planted", action="store_true",
                    help="with --simulate: check that every planted bug is caught")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--job", default="files", help=argparse.SUPPRESS)
    for hidden in ("--state", "--input", "--target", "--gate", "--data-jdbc"):
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.simulate:
        from chaos_harness.sim.cli import main as simulate_main
        a.schedules_given = "--schedules" in sys.argv
        a.json_given = any(x.startswith("--json") for x in sys.argv)
        a.jobs_given = any(x.startswith("--jobs") for x in sys.argv)
        sys.exit(simulate_main(a))
    if a.worker:
        return worker(a)
    from sparkmark.devtools.jvmcache import enable, fast_start
    enable()       # the driver JVMs it starts load Spark's classes from the tests' archive,
    fast_start()   # with the client compiler: as the test suites' drivers do
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
