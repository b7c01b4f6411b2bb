"""A chaos run: the schedules drawn (or one replayed), the servers they need started once (the
state store's PostgreSQL, the jdbc job's data server, SeaweedFS for ``s3files``), each schedule
run, a failing one shrunk, and the report that ``benchmarks/chaos.py`` prints and writes to
``benchmarks/results/chaos.json``.

    from chaos_harness.runner import run_chaos
    report = run_chaos(2, seed=4242, steps=3, jobs=("files",), do_shrink=False)
    assert report["violations"] == []
"""
from __future__ import annotations

import random
import shutil
import tempfile
import time
from collections import Counter

from chaos_harness.constants import DEFAULT_JOBS, KINDS
from chaos_harness.draw import draw_job, draw_schedule, draw_step
from chaos_harness.environment import iceberg_unavailable, s3files_unavailable
from chaos_harness.shrink import replay_command, run_schedule, shrink


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
