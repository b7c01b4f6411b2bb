"""The pipeline kind of the simulation: a two-module :class:`sparkmark.Pipeline` over the
simulated world, its operator's rollback and its model checks.

Module 1 (bronze) reads the bookmarked input files (``ctx.job.read.files``) into the file
target ``sim://lake/bronze``; module 2 (silver) reads bronze's target folder and keeps the rows
loaded in its window (``ctx.window``: by the load stamp ``sm_snapshot_ts``) into
``sim://lake/silver``.  Every driver runs ``p.run()`` (both modules, in order, under one
snapshot), as a user's scheduled job does.

    from chaos_harness.sim.run import run_schedule
    run_schedule(seed=3, workdir="/tmp/sim", job="pipeline").problems   # [] when it held
"""
from __future__ import annotations

from typing import Any

from sparkmark import Pipeline
from sparkmark.core.errors import PipelineError
from sparkmark.planning.windows import parse_time

from chaos_harness.sim.run import (IN, KINDS, JobKind, SimStore, World, check_committed,
                                   check_target, ledger)

NAME = "sim"
BRONZE, SILVER = 1, 2
BRONZE_OUT, SILVER_OUT = "sim://lake/bronze", "sim://lake/silver"
JOBS = {BRONZE: f"{NAME}.{BRONZE}", SILVER: f"{NAME}.{SILVER}"}
OUTS = {BRONZE: BRONZE_OUT, SILVER: SILVER_OUT}
PRIMORDIAL = "2023-11-01"  # before the simulated epoch (2023-11-14): the first window's start
#: what silver reads of bronze's target (a user gives the schema: the folder may be empty)
UPSTREAM_SCHEMA = "id BIGINT, v STRING, sm_snapshot_ts TIMESTAMP"


def build(world: World) -> Pipeline:
    """The pipeline as a user writes it, on its own store connection and the world's clock."""
    p = Pipeline(NAME, world.spark, state=SimStore(world.state_url),  # type: ignore[attr-defined]
                 primordial_date=PRIMORDIAL, clock=world.clock)

    @p.module(id=BRONZE, name="bronze", layer="bronze", target=BRONZE_OUT, format="json")
    def bronze(ctx: Any) -> Any:
        return ctx.job.read.files(IN, format="json", transformation_ctx="src",
                                  options={"mode": "FAILFAST",
                                           "boundedFiles": world.bounded})  # type: ignore

    @p.module(id=SILVER, name="silver", layer="silver", target=SILVER_OUT, format="json",
              depends_on=[BRONZE])
    def silver(ctx: Any) -> Any:
        upstream = ctx.spark.read.format("json").schema(UPSTREAM_SCHEMA).load(BRONZE_OUT)
        return ctx.window(upstream).select("id", "v")

    return p


def pipeline_job(world: World) -> None:
    """One scheduled run: ``p.run()`` (a module's failure is in the summary and the ledger;
    a refused run, e.g. a live run of the other driver, raises)."""
    summary = build(world).run()
    world.note("summary: " + " ".join(f"{r.module_id}={r.status}" for r in summary.results))


def operator_rollback(world: World) -> None:
    """An operator's ``p.rollback(modules=[...], run_id=R)``: R a pipeline run whose silver run
    counted, the modules silver alone or both (bronze alone would leave silver rows of bronze
    runs undone, which bronze then loads again: the operator's error, not the product's).
    A refused rollback (a module made no run in R) changes nothing."""
    runs = ledger(world)
    done = sorted({r["pipeline_run_id"] for r in runs if r["job_name"] == JOBS[SILVER]
                   and r["status"] in ("SUCCEEDED", "EMPTY")})
    if not done:
        world.note("operator: nothing to roll back")
        return
    run_id = world.rng.choice(done)
    modules = world.rng.choice([[SILVER], [BRONZE, SILVER]])
    world.note(f"operator: rollback modules={modules} run_id={run_id[:8]}")
    try:
        plan = build(world).rollback(modules=modules, run_id=run_id)
    except PipelineError as e:
        world.note(f"operator: refused ({str(e)[:80]})")
        return
    world.note(f"operator: rolled back {len(plan.run_ids)} run(s)")


def recovered(world: World) -> bool:
    """The last pipeline run found nothing new: both its module runs EMPTY."""
    last = ledger(world)[-2:]
    return len(last) == 2 and all(r["status"] == "EMPTY" for r in last) and \
        last[0]["pipeline_run_id"] == last[1]["pipeline_run_id"]


def check(world: World) -> list[str]:
    """Per module, its target and its ledger rows as the files kind checks them
    (:func:`~chaos_harness.sim.run.check_target`: every input record exactly once in bronze
    *and* in silver, with the same allowances for files appended to or vanished; nothing
    staged; no RUNNING row; SUCCEEDED = published; records_written = rows), plus: the
    windows of each module's counted runs (SUCCEEDED/EMPTY) contiguous from the primordial
    start, and no committed module run undone but by the operator's rollback."""
    runs = ledger(world)
    problems: list[str] = []
    for mid, job in JOBS.items():
        mine = [r for r in runs if r["job_name"] == job]
        problems += check_target(world, OUTS[mid], mine)
        at = parse_time(PRIMORDIAL, "UTC")
        for r in mine:
            if r["status"] not in ("SUCCEEDED", "EMPTY"):
                continue
            if r["from_ts"] != at:
                problems.append(f"module {mid} run {r['run_id'][:8]} window starts at "
                                f"{r['from_ts']}, not at {at} where the last one ended")
            at = r["until_ts"]
    return problems + check_committed(world, runs)


KIND = JobKind("pipeline", pipeline_job, {"operator_rollback": operator_rollback}, recovered,
               check, (IN, BRONZE_OUT, SILVER_OUT), race_delay=200)
KINDS[KIND.name] = KIND


def overlapping_runs(workdir: str) -> list[str]:
    """A directed scenario (no scheduler, no faults): ``p.run()`` B starts while run A is
    between its two modules (bronze committed, silver not begun: no module holds a lease, so
    B's gate lets it in), and runs both modules; then A's silver runs the window A planned
    before B.  Returns the model's problems (silver's rows of A's bronze run twice, and two
    counted silver windows overlapping, while the product lets both commit)."""
    from chaos_harness.sim import engine as sim_engine
    from chaos_harness.sim.run import LEASE_MS, add_input, simulated

    world = World(1, workdir)
    world.job = "pipeline"  # type: ignore[attr-defined]
    world.file_seq = world.record_seq = 0  # type: ignore[attr-defined]
    world.vanished, world.changed, world.committed = set(), {}, set()  # type: ignore
    world.bounded = 1000  # type: ignore[attr-defined]
    world.state_url = f"sqlite:///{workdir}/overlap.db"  # type: ignore[attr-defined]
    with simulated(world):
        world.spark = sim_engine.SimSpark(world)  # type: ignore[attr-defined]
        world.store = SimStore(world.state_url)  # type: ignore[attr-defined]
        world.dirs.update(KIND.dirs)
        try:
            add_input(world, 2)
            world.now += LEASE_MS
            build(world).run()
            add_input(world, 2)
            world.now += LEASE_MS

            def between(k: int, _n: int, _m: Any, _w: Any, result: Any) -> None:
                if k == 2 and result is None and not world.trace.count("B ran"):
                    world.now += 60_000
                    build(world).run()
                    world.note("B ran")
            build(world).run(progress=between)
            world.now += LEASE_MS
            build(world).run()
            return check(world)
        finally:
            world.close()
            world.store.engine.dispose()  # type: ignore[attr-defined]
