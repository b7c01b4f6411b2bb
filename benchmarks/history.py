"""Benchmark: a run's state-store cost does not grow with the ledger (not a test).

A store that has run a job every five minutes for a year holds ~100,000 ledger rows.  For each
history size H (rows of this job, as many again of other jobs writing other targets; synthetic
rows inserted directly, SUCCEEDED and published, each naming its target in ``outputs``), on a
SQLite file and on a throwaway PostgreSQL server, it measures, median of ``--repeat``:

- ``init + commit``: ``Job(None).init`` (lease, ledger row, the runs left to publish) and
  ``commit`` (bookmark version, ledger row): the store traffic of every run;
- ``shared-target check``: ``store.jobs_writing(target)``, which every write asks (the other
  jobs that wrote its target; part of recording the staged output since schema 3).

The peer is the same store at H = 0: ``ratio`` = cost at H / cost at 0 (goal: ~1, flat).
Before schema 3 both lookups scanned (the job's runs, every run's outputs): measured here at
H = 50,000 on SQLite, 21 ms and 34 ms a run.

``--parts pipeline``: a pipeline's ledger of a year of hourly runs of 10 modules (87,600 module
runs, as ``Pipeline.run`` writes them: config, window, target key; some failed attempts, four
rollbacks of a day on three modules with their re-runs, and one module that took its target
over from a retired one), one bookmark version per committed run and one audited file per
run, seeded directly.  On it, and on an empty ledger of the same pipeline:

- ``pipeline run``: ``run_pipeline`` (what ``Pipeline.run`` does) with every window empty, so
  that no module calls Spark: the gating, the removals left, each module's window start, the
  target ownership check, and per module a job run's init and commit with its ledger row --
  all the store work of a run except the staged-output bookkeeping of a write (the
  ``shared-target check`` above), its wall time and this process's CPU time (on
  PostgreSQL the client's share only); ``ratio`` = at 87,600 / empty (goal <= 1.2);
  ``planning`` is the part before the first module runs, and ``full-scan ownership`` what
  the ownership check cost when it read every committed run's config (the code before
  schema 5, kept here to compare);
- the read-only commands as a user runs them (``sparkmark ...`` in a new process, default
  options; goal <= 1 s each): ``report``, ``report --pipeline``, ``report --format html``,
  ``bookmark history`` of one module, ``files`` of one module, and ``sparkmark --help`` as
  the floor (the process start and imports every command pays); each also on the empty
  store after its runs above (``empty s``), as the peer.

    .venv/bin/python benchmarks/history.py --sizes 0,10000,100000 --repeat 200
    .venv/bin/python benchmarks/history.py --parts pipeline --repeat 20
    .venv/bin/python benchmarks/history.py --parts spark --spark-repeat 3

``--parts spark``: ``Pipeline.run()`` itself on local Spark (each module writes one row of its
hour), on an empty ledger and on the year's (SQLite), the two taking turns.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

RESULTS = Path(__file__).parent / "results" / "history.json"
JOB = "bench_history"
EN = {"job_bookmark_option": "job-bookmark-enable"}


def fill(url: str, n: int) -> None:
    """``n`` finished runs of ``JOB`` and ``n`` of 50 other jobs, each with outputs."""
    from sparkmark import Job
    from sparkmark.state import open_store
    from sparkmark.state.schema import runs
    Job(None, state=url).init(JOB, EN).commit()  # the job's row (a store has none without it)
    store = open_store(url)
    for job in range(2):
        name = JOB if job == 0 else None
        for start in range(0, n, 10_000):
            batch = []
            for i in range(start, min(n, start + 10_000)):
                who = name or f"other_{i % 50}"
                batch.append({
                    "run_id": f"{job:04x}{i:028x}", "job_name": who, "run_number": i,
                    "attempt": 0, "status": "SUCCEEDED", "bookmark_option": EN[
                        "job_bookmark_option"], "start_version": 0, "end_version": 0,
                    "run_start_ts": i, "run_end_ts": i + 1, "snapshot_ts": i, "host": "h",
                    "pid": 1, "publish_state": "done",
                    "outputs": json.dumps([{"kind": "files", "target": f"file:/out/{who}",
                                            "staging": f"file:/out/{who}/_s/{i}"}])})
            with store.tx("fill") as conn:
                conn.execute(runs.insert(), batch)


def measure(url: str, repeat: int) -> dict:
    from sparkmark import Job
    from sparkmark.state import open_store
    store = open_store(url)
    Job(None, state=url).init(JOB, EN).commit()  # warm: the compiled statements
    runs_ms, check_ms = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        Job(None, state=url).init(JOB, EN).commit()
        t1 = time.perf_counter()
        store.jobs_writing(f"file:/out/{JOB}", besides=JOB)
        t2 = time.perf_counter()
        runs_ms.append((t1 - t0) * 1e3)
        check_ms.append((t2 - t1) * 1e3)
    return {"init_commit_ms": round(statistics.median(runs_ms), 3),
            "shared_target_check_ms": round(statistics.median(check_ms), 3)}


# ---------------------------------------------------------------------- pipeline ledger
PIPELINE = "bench_pipe"
HOUR = 3_600_000
T0 = 1_700_000_000_000 // HOUR * HOUR
MODULES = 10
RETIRED = 99           # module 9 took its target over from module 99 after RETIRED_HOURS
RETIRED_HOURS = 100
ROLLED_MODULES = (1, 4, 7)   # each rolled back a day, four times in the year, then re-run
TARGETS = {"root": "/data"}  # where the modules' targets are (--spark: a temporary folder)


def bench_modules():
    """The pipeline's 10 modules (bronze 0-3, silver 4-7 on bronze, gold 8-9 on silver)."""
    from sparkmark.lifecycle.pipeline.declaring import Module
    out = {}
    for m in range(MODULES):
        layer = "bronze" if m < 4 else "silver" if m < 8 else "gold"
        deps = () if m < 4 else (m - 4,) if m < 8 else (m - 4, m - 3)
        out[m] = Module(m, f"module_{m}", layer, f"{TARGETS['root']}/{PIPELINE}/t{m}", deps, "parquet",
                        lambda ctx: None,
                        take_over_from=f"{PIPELINE}.{RETIRED}" if m == 9 else None)
    return out


def _pipeline_row(m: int, n: int, attempt: int, status: str, h: int, start: int,
                  publish: str | None, tof: str | None, target_m: int) -> dict:
    from sparkmark.planning.windows import target_key
    target = f"{TARGETS['root']}/{PIPELINE}/t{target_m}"
    config = {"pipeline": {"name": PIPELINE, "timezone": "UTC", "max_days_to_load": 5,
                           "primordial_date": None, "target": target, "format": "parquet",
                           "take_over_from": tof, "depends_on": [], "action": "run",
                           "blocked_by": [], "primordial_ts": T0},
              "sources": {"src": {"files": 1, "late_files": 0, "bytes": 123_456}}}
    job = f"{PIPELINE}.{m}"
    return {"run_id": f"{m:04x}{start:020x}{attempt:08x}", "job_name": job,
            "pipeline": PIPELINE, "pipeline_run_id": f"{start // HOUR:032x}", "module_id": m,
            "module_name": f"module_{m}", "layer": "bronze", "run_number": n,
            "attempt": attempt, "status": status,
            "error": "ValueError: boom" if status == "FAILED" else None,
            "bookmark_option": EN["job_bookmark_option"], "start_version": n - 1,
            "end_version": n if status in ("SUCCEEDED", "EMPTY", "ROLLED_BACK") else None,
            "run_start_ts": start, "run_end_ts": start + 40_000, "from_ts": T0 + h * HOUR,
            "until_ts": T0 + (h + 1) * HOUR, "snapshot_ts": start, "records_read": 100,
            "records_written": 100, "config": json.dumps(config),
            "outputs": json.dumps([{"kind": "files", "target": "file:" + target,
                                    "format": "parquet"}]),
            "publish_state": publish, "host": "h", "pid": 1,
            "target_key": target_key(PIPELINE, target), "take_over_from": tof}


def pipeline_ledger(hours: int) -> tuple[list[dict], dict[str, int]]:
    """The seeded ledger rows and each job's committed-run count."""
    rows: list[dict] = []
    counts: dict[str, int] = {}
    rollback_hours = {hours * k // 5 for k in range(1, 5)}
    for m in [RETIRED, *range(MODULES)]:
        job = f"{PIPELINE}.{m}"
        n = 0
        first, last = (0, RETIRED_HOURS) if m == RETIRED else \
            (RETIRED_HOURS, hours) if m == 9 else (0, hours)
        tof = f"{PIPELINE}.{RETIRED}" if m == 9 else None
        target_m = 9 if m == RETIRED else m
        for h in range(first, last):
            start = T0 + (h + 1) * HOUR + m % 100
            if h % 211 == 3:  # a failed attempt, then the retry that succeeded
                rows.append(_pipeline_row(m, n + 1, 0, "FAILED", h, start - 600_000, None,
                                          tof, target_m))
            n += 1
            rows.append(_pipeline_row(m, n, 1 if h % 211 == 3 else 0,
                                      "EMPTY" if h % 97 == 5 else "SUCCEEDED", h, start,
                                      "done", tof, target_m))
            if m in ROLLED_MODULES and h in rollback_hours:
                for r in rows[-24:]:   # the day's runs rolled back (output removed) ...
                    if r["status"] in ("SUCCEEDED", "EMPTY"):
                        r["status"], r["publish_state"] = "ROLLED_BACK", "removed"
                for k in range(24):    # ... and run again
                    n += 1
                    rows.append(_pipeline_row(m, n, 0, "SUCCEEDED", h - 23 + k,
                                              start + 1_800_000 + k * 1000, "done", tof,
                                              target_m))
        counts[job] = n
    return rows, counts


def fill_pipeline(url: str, hours: int) -> int:
    """Seed the pipeline's ledger, versions, jobs and file audit; returns the ledger rows."""
    from sparkmark.state import open_store
    from sparkmark.state.schema import files, jobs, runs, versions
    from sparkmark.planning.bands import path_hash
    store = open_store(url)
    rows, counts = pipeline_ledger(hours)
    with store.tx("fill") as conn:
        conn.execute(jobs.insert(), [
            {"job_name": job, "current_version": n, "run_number": n, "attempt": 0,
             "last_run_id": None, "created_ts": T0} for job, n in counts.items()])
        for i in range(0, len(rows), 10_000):
            conn.execute(runs.insert(), rows[i:i + 10_000])
        batch = []
        for r in rows:
            if r["end_version"] is None or r["status"] == "FAILED":
                continue
            batch.append({"job_name": r["job_name"], "version": r["run_number"],
                          "kind": "commit", "run_id": r["run_id"], "previous_run_id": None,
                          "source_run_id": None, "run_number": r["run_number"],
                          "attempt": r["attempt"], "created_ts": r["run_end_ts"],
                          "state": json.dumps({"src": {"low": r["from_ts"],
                                                       "high": r["until_ts"]}})})
            if len(batch) == 10_000:
                conn.execute(versions.insert(), batch)
                batch = []
        if batch:
            conn.execute(versions.insert(), batch)
        batch = []
        for r in rows:
            if r["status"] == "FAILED":
                continue
            path = f"file:/in/{r['job_name']}/{r['from_ts']}.json"
            batch.append({"job_name": r["job_name"], "ctx": "src", "path": path,
                          "path_hash": path_hash(path), "run_id": r["run_id"], "size": 1234,
                          "mtime": r["from_ts"], "kind": "new", "read_ts": r["run_end_ts"]})
            if len(batch) == 10_000:
                conn.execute(files.insert(), batch)
                batch = []
        if batch:
            conn.execute(files.insert(), batch)
    if url.startswith("postgresql"):
        # VACUUM too: a store a year old has been vacuumed long ago; without it autovacuum
        # works through the seeded rows while the runs below are timed, on this store only
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.exec_driver_sql("VACUUM ANALYZE")
    return len(rows)


def full_scan_owners(store, pipeline: str, targets: list[str]) -> list:
    """The ownership check before schema 5 (kept to compare with): every committed run of the
    pipeline read once, its config parsed, then each module's target's owner."""
    from sparkmark.planning.windows import (PROGRESS_STATUSES, TargetWrite, normalize_target,
                                            target_owner)
    writes = []
    for r in store.list_runs(pipeline=pipeline, statuses=PROGRESS_STATUSES,
                             columns=("run_start_ts", "run_number", "job_name", "status",
                                      "config")):
        cfg = json.loads(r.get("config") or "{}").get("pipeline") or {}
        if cfg.get("target"):
            writes.append(TargetWrite((r["run_start_ts"], r["run_number"]), r["job_name"],
                                      normalize_target(cfg["target"]),
                                      cfg.get("take_over_from")))
    return [target_owner(writes, t) for t in targets]


def measure_pipelines(urls: dict[str, str], repeat: int, snapshot: int) -> dict[str, dict]:
    """Per store (label -> URL), median ms of a pipeline run with empty windows, of its
    planning, and of the old full scan of the ownership check; the stores take turns, so
    that a change in the machine's load falls on each alike."""
    from sparkmark.lifecycle.pipeline.running import check_idle, finish_removals, run_pipeline
    from sparkmark.lifecycle.pipeline.windows import (check_ownership, module_progress,
                                                      target_owner_in)
    from sparkmark.state import open_store
    modules = bench_modules()
    clock = lambda: snapshot  # noqa: E731 - every window ends where it starts: no Spark
    stores = {label: open_store(url) for label, url in urls.items()}
    times: dict[str, dict[str, list[float]]] = {
        label: {"run": [], "cpu": [], "plan": [], "scan": []} for label in urls}

    def run(store):
        return run_pipeline(None, store, clock, modules, pipeline=PIPELINE, timezone="UTC",
                            max_days_to_load=5, primordial_date=snapshot)
    for store in stores.values():
        got = run(store)  # warm: the compiled statements (and the audit's retention)
        assert not got.failed and {r.status for r in got.results} == {"EMPTY"}, str(got)
    for i in range(repeat):
        # the order alternates: neither store always runs right after the other
        for label, store in (list(stores.items()) if i % 2 == 0 else
                             list(reversed(stores.items()))):
            t0, c0 = time.perf_counter(), time.process_time()
            run(store)
            t1, c1 = time.perf_counter(), time.process_time()
            check_idle(store, clock, PIPELINE, modules, "run the pipeline")
            finish_removals(None, store, PIPELINE)
            module_progress(store, PIPELINE, modules)
            check_ownership(store, PIPELINE, modules, modules)
            t2 = time.perf_counter()
            times[label]["run"].append((t1 - t0) * 1e3)
            times[label]["cpu"].append((c1 - c0) * 1e3)
            times[label]["plan"].append((t2 - t1) * 1e3)
            if i % 10 == 0:
                old = full_scan_owners(store, PIPELINE, [m.target for m in modules.values()])
                assert old == [target_owner_in(store, PIPELINE, m.target)
                               for m in modules.values()], old
                times[label]["scan"].append((time.perf_counter() - t2) * 1e3)
    return {label: {"pipeline_run_ms": round(statistics.median(t["run"]), 2),
                    "pipeline_run_cpu_ms": round(statistics.median(t["cpu"]), 2),
                    "planning_ms": round(statistics.median(t["plan"]), 2),
                    "full_scan_ownership_ms": round(statistics.median(t["scan"]), 2)}
            for label, t in times.items()}


COMMANDS = {
    "--help (floor)": ["--help"],
    "report": ["report"],
    "report --pipeline": ["report", "--pipeline", PIPELINE],
    "report --format html": ["report", "--format", "html", "--output", "{tmp}/r.html"],
    "bookmark history": ["bookmark", "history", f"{PIPELINE}.4"],
    "files": ["files", f"{PIPELINE}.4"],
}


def measure_commands(url: str, repeat: int) -> dict:
    """Median seconds of each read-only command in a new process, as a user runs it: wall
    time (``s``) and the process's CPU time, user + system (``cpu_s``: what the command costs,
    less sensitive to the machine's load than the wall time)."""
    import resource
    import subprocess
    tmp = tempfile.mkdtemp(prefix="sm-hist-cmd-")
    env = dict(os.environ, SPARKMARK_STATE=url, PYTHONPATH=str(ROOT / "src"), COLUMNS="200")
    out = {}
    for name, args in COMMANDS.items():
        argv = [sys.executable, "-c", "from sparkmark.ops.cli import main; main()",
                *[a.format(tmp=tmp) for a in args]]
        times, cpu = [], []
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            res = subprocess.run(argv, env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if res.returncode != 0:
                raise SystemExit(f"{name}: exit {res.returncode}\n{res.stderr[-2000:]}")
        out[name] = {"s": round(statistics.median(times), 3),
                     "cpu_s": round(statistics.median(cpu), 3),
                     "output_lines": len(res.stdout.splitlines())}
    return out


def run_spark_part(a) -> list[dict]:
    """``Pipeline.run()`` itself on local Spark, each module writing one row: on an empty
    ledger and on the year's (SQLite), the stores taking turns; median seconds."""
    from pyspark.sql import functions as F

    from sparkmark import Pipeline
    from sparkmark.engine.spark import local_session
    spark = local_session("bench-history")
    TARGETS["root"] = tempfile.mkdtemp(prefix="sm-hist-out-")
    urls = {"empty": f"sqlite:///{tempfile.mkdtemp(prefix='sm-hist-')}/state.db",
            "year": f"sqlite:///{tempfile.mkdtemp(prefix='sm-hist-')}/state.db"}
    counts = {"empty": 0, "year": fill_pipeline(urls["year"], a.hours)}
    now = {"ts": T0 + a.hours * HOUR}
    pipes = {}
    for label, url in urls.items():
        p = Pipeline(PIPELINE, spark, state=url, primordial_date=now["ts"] - HOUR,
                     max_days_to_load=5, clock=lambda: now["ts"])
        for m in bench_modules().values():
            def fn(ctx):
                return ctx.spark.range(1).select(F.lit(ctx.from_ts).alias("from_ts"))
            p.module(id=m.id, name=m.name, layer=m.layer, target=m.target,
                     depends_on=list(m.depends_on), format="parquet",
                     take_over_from=RETIRED if m.id == 9 else None)(fn)
        pipes[label] = p
    times: dict[str, list[float]] = {label: [] for label in urls}
    for i in range(a.spark_repeat + 1):
        now["ts"] += HOUR
        for label, p in pipes.items():
            t0 = time.perf_counter()
            s = p.run()
            took = time.perf_counter() - t0
            assert not s.failed and all(r.records_written == 1 for r in s.results), str(s)
            if i:  # the first: Spark's warm-up
                times[label].append(took)
    out = [{"ledger": label, "ledger_rows": counts[label],
            "p_run_s": round(statistics.median(t), 2)} for label, t in times.items()]
    for r in out:
        r["ratio"] = round(r["p_run_s"] / out[0]["p_run_s"], 2)
        print(f"spark p.run() {r['ledger']:<6} rows={r['ledger_rows']:>7,} "
              f"{r['p_run_s']:6.2f} s  ratio {r['ratio']}", flush=True)
    spark.stop()
    return out


def run_pipeline_part(a, server_box: list) -> list[dict]:
    rows = []
    hours = a.hours
    snapshot = T0 + hours * HOUR
    for backend in a.backends.split(","):
        urls, counts, fills = {}, {}, {}
        for label in ("empty", "year"):
            if backend == "sqlite":
                urls[label] = f"sqlite:///{tempfile.mkdtemp(prefix='sm-hist-')}/state.db"
            else:
                if not server_box:
                    from sparkmark.devtools.postgres import start_postgres
                    server_box.append(start_postgres())
                urls[label] = server_box[0].create_database(f"pipe_{label}")
            t0 = time.perf_counter()
            counts[label] = fill_pipeline(urls[label], hours) if label == "year" else 0
            fills[label] = round(time.perf_counter() - t0, 1)
        # the commands first: on the store as seeded (the runs below apply the audit's
        # retention, and add runs)
        commands = {"year": measure_commands(urls["year"], a.command_repeat)}
        got = measure_pipelines(urls, a.repeat, snapshot)
        # the peer of each command: the same on the small store the runs above left
        commands["empty"] = measure_commands(urls["empty"], a.command_repeat)
        for label in urls:
            row = {"backend": backend, "ledger": label, "ledger_rows": counts[label],
                   **got[label], "fill_s": fills[label], "commands_s": commands[label]}
            rows.append(row)
            print(f"{backend:<10} {label:<6} rows={counts[label]:>7,}  pipeline run "
                  f"{row['pipeline_run_ms']:8.2f} ms (cpu {row['pipeline_run_cpu_ms']:.2f})  "
                  f"planning {row['planning_ms']:7.2f} ms  "
                  f"full-scan ownership {row['full_scan_ownership_ms']:9.2f} ms", flush=True)
    for r in rows:
        base = next(b for b in rows if b["backend"] == r["backend"] and b["ledger"] == "empty")
        r["ratio"] = {k: round(r[k] / base[k], 2) for k in ("pipeline_run_ms",
                                                            "pipeline_run_cpu_ms",
                                                            "planning_ms")}
    print(f"\n{'backend':<10} {'ledger':<6} {'rows':>7} {'run ms':>8} {'ratio':>6} "
          f"{'cpu ms':>7} {'ratio':>6} {'planning ms':>11} {'ratio':>6} "
          f"{'full-scan ownership ms':>22}")
    for r in rows:
        print(f"{r['backend']:<10} {r['ledger']:<6} {r['ledger_rows']:>7,} "
              f"{r['pipeline_run_ms']:>8.2f} {r['ratio']['pipeline_run_ms']:>6} "
              f"{r['pipeline_run_cpu_ms']:>7.2f} {r['ratio']['pipeline_run_cpu_ms']:>6} "
              f"{r['planning_ms']:>11.2f} {r['ratio']['planning_ms']:>6} "
              f"{r['full_scan_ownership_ms']:>22.2f}")
    print(f"\n{'backend':<10} {'command (new process, default options)':<40} {'year s':>7} "
          f"{'cpu s':>6} {'lines':>6} {'empty s':>8} {'cpu s':>6}")
    for r in rows:
        if r["ledger"] != "year":
            continue
        peer = next(b for b in rows if b["backend"] == r["backend"] and b["ledger"] == "empty")
        for name, c in r["commands_s"].items():
            e = peer["commands_s"][name]
            print(f"{r['backend']:<10} {name:<40} {c['s']:>7.3f} {c['cpu_s']:>6.3f} "
                  f"{c['output_lines']:>6} {e['s']:>8.3f} {e['cpu_s']:>6.3f}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0,10000,100000", help="history sizes H")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--json", default=str(RESULTS))
    ap.add_argument("--parts", default="job,pipeline",
                    help="job: init+commit vs history; pipeline: a year of a pipeline; spark: "
                         "Pipeline.run() on local Spark on it (SQLite)")
    ap.add_argument("--hours", type=int, default=8760,
                    help="pipeline: hours of hourly runs of 10 modules (8760: a year)")
    ap.add_argument("--command-repeat", type=int, default=3,
                    help="pipeline: runs of each command (median)")
    ap.add_argument("--spark-repeat", type=int, default=3,
                    help="spark: measured Pipeline.run() calls on each ledger")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]
    parts = a.parts.split(",")
    load_start = list(os.getloadavg())
    rows: list[dict] = []
    pipeline_rows: list[dict] = []
    spark_rows: list[dict] = []
    server = None
    server_box: list = []
    try:
        for backend in (a.backends.split(",") if "job" in parts else []):
            for n in sizes:
                if backend == "sqlite":
                    url = f"sqlite:///{tempfile.mkdtemp(prefix='sm-hist-')}/state.db"
                else:
                    if server is None:
                        from sparkmark.devtools.postgres import start_postgres
                        server = start_postgres()
                    url = server.create_database(f"hist{n}")
                t0 = time.perf_counter()
                fill(url, n)
                got = measure(url, a.repeat)
                rows.append({"backend": backend, "history": n, **got,
                             "fill_s": round(time.perf_counter() - t0, 1)})
                print(f"{backend:<10} H={n:>7,}  init+commit {got['init_commit_ms']:7.3f} ms  "
                      f"shared-target check {got['shared_target_check_ms']:7.3f} ms", flush=True)
        if "pipeline" in parts:
            pipeline_rows = run_pipeline_part(a, server_box)
        spark_rows = run_spark_part(a) if "spark" in parts else []
    finally:
        if server is not None:
            server.stop()
        for srv in server_box:
            srv.stop()
    for r in rows:
        base = next(b for b in rows if b["backend"] == r["backend"] and b["history"] == sizes[0])
        r["ratio"] = {k: round(r[k] / base[k], 2) for k in ("init_commit_ms",
                                                            "shared_target_check_ms")}
    if rows:
        print(f"\n{'backend':<10} {'H':>8} {'init+commit ms':>15} {'ratio':>6} "
              f"{'target check ms':>16} {'ratio':>6}")
    for r in rows:
        print(f"{r['backend']:<10} {r['history']:>8,} {r['init_commit_ms']:>15.3f} "
              f"{r['ratio']['init_commit_ms']:>6} {r['shared_target_check_ms']:>16.3f} "
              f"{r['ratio']['shared_target_check_ms']:>6}")
    from sparkmark.state.schema import SCHEMA_VERSION
    out = Path(a.json)
    old = json.loads(out.read_text()) if out.exists() else {}
    result = {"benchmark": "state-store cost per run vs ledger history", "args": vars(a),
              "rows": rows or old.get("rows", []), "schema_version": SCHEMA_VERSION,
              "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                          "platform": platform.platform(), "load_average_start": load_start,
                          "load_average_end": list(os.getloadavg())},
              "note": "peer = the same store at the smallest history; synthetic finished runs "
                      "(published, with outputs) of this job and as many of 50 other jobs",
              "pipeline": {
                  "rows": pipeline_rows or old.get("pipeline", {}).get("rows", []),
                  "spark_p_run": spark_rows or old.get("pipeline", {}).get("spark_p_run", []),
                  "note": "a year of hourly runs of 10 modules seeded (failed attempts, 12 "
                          "rollbacks of a day, a taken-over target); pipeline_run_ms: "
                          "run_pipeline with empty windows (no Spark), ratio = year / empty; "
                          "pipeline_run_cpu_ms: this process's CPU time of it (the client's "
                          "share on PostgreSQL); "
                          "full_scan_ownership_ms: the ownership check as it was before "
                          "schema 5 (every committed run's config parsed); commands_s: each "
                          "read-only command in a new process, default options, median (on "
                          "the empty store: after its measured runs): s wall, cpu_s the "
                          "process's user + system time; the two stores' pipeline runs take "
                          "turns in alternating order; PostgreSQL stores VACUUM ANALYZEd after "
                          "the seed"}}
    for key, value in old.items():  # earlier comparisons (before_schema_3, ...) stay
        if key.startswith("before_") and key not in result:
            result[key] = value
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
