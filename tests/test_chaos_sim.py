"""The deterministic simulation of the run protocol (benchmarks/chaos_harness/sim/): the real
``Job`` over a simulated engine, file system and clock, the real state store on SQLite.

- seeded schedules with kills, store outages, lost COMMIT answers, file-system errors, files
  appearing and vanishing, clock jumps, racing drivers and operator resets end with no model
  violation;
- the same seed gives the same trace (hashed);
- each planted bug (a product mutation applied in memory) fails the replay of a schedule that
  catches it, and the same schedule passes without the bug;
- every model check fires on a broken end state (a checker that never fires passes anything).

The simulated engine is the one sanctioned exception to the real-parts-only rule: it runs
beside the real-JVM harness (benchmarks/chaos.py), never instead of it.
"""
from __future__ import annotations

import json
import logging

import pytest
from conftest import load_chaos

load_chaos()  # puts benchmarks/ on sys.path
sim_cli = load_chaos("sim.cli")
sim_run = load_chaos("sim.run")
planted = load_chaos("sim.planted")

#: schedules found by ``chaos.py --simulate --planted --seed 1`` (shrunk): each catches its bug
CATCHES = {
    "publish_before_commit": json.dumps({"seed": 1000000, "keep": [1],
                                         "planted": "publish_before_commit"}),
    "skip_recovery": json.dumps({"seed": 1000002, "keep": [2, 3, 4, 6, 11, 12],
                                 "planted": "skip_recovery"}),
    "no_lost_answer_fix": json.dumps({"seed": 1000219, "keep": [1, 2, 3],
                                      "planted": "no_lost_answer_fix"}),
    "no_lease_or_version_check": json.dumps({"seed": 1000229, "keep": [1, 2, 3, 4],
                                             "planted": "no_lease_or_version_check"}),
    "low_watermark_off_by_one": json.dumps({"seed": 1000000, "keep": [1],
                                            "planted": "low_watermark_off_by_one"}),
    "removed_before_delete": json.dumps({"seed": 1000088, "keep": [2, 3, 4, 5, 6, 7, 8, 9, 10],
                                         "planted": "removed_before_delete"}),
}


@pytest.fixture(autouse=True)
def _quiet():
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


def test_seeded_schedules_hold_the_model():
    rep = sim_cli.simulate(60, 424242, progress=False)
    assert rep["violations"] == []
    assert rep["schedules"] == 60
    for kind in ("kill", "outage", "fs_error", "racing_driver", "operator_reset"):
        assert rep["faults"].get(kind, 0) > 0, (kind, rep["faults"])


def test_same_seed_same_trace():
    a = sim_cli.simulate(3, 77, progress=False)
    b = sim_cli.simulate(3, 77, progress=False)
    assert a["trace_hash"] == b["trace_hash"]
    assert a["faults"] == b["faults"]
    c = sim_cli.simulate(3, 78, progress=False)
    assert c["trace_hash"] != a["trace_hash"]


@pytest.mark.parametrize("bug", sorted(planted.PLANTED))
def test_each_planted_bug_is_caught(bug):
    replay = CATCHES[bug]
    assert sim_cli.replay(replay).problems, f"{bug} not caught by {replay}"
    clean = dict(json.loads(replay))
    clean.pop("planted")
    assert sim_cli.replay(json.dumps(clean)).problems == []


def test_the_model_checks_fire(tmp_path):
    """A clean schedule, then its end state broken one way at a time."""
    r = sim_run.run_schedule(5, str(tmp_path), sim_run.Options(faults_on=False), keep_trace=True)
    assert r.problems == []
    world = sim_run.World(1, str(tmp_path))
    world.files["sim://lake/in/a.json"] = sim_run.SimFile(({"id": 1},), 0)
    world.files["sim://lake/out/_sparkmark_staging/x/0/p.json"] = sim_run.SimFile((), 0)
    world.vanished = set()
    world.changed = {}
    world.committed = {"0" * 32}
    world.store = sim_run.SimStore(f"sqlite:///{tmp_path}/s.db")
    try:
        problems = sim_run.check(world)
    finally:
        world.store.engine.dispose()
    assert any("record 1 is in the target 0 times" in p for p in problems)
    assert any("staged output left" in p for p in problems)
    assert any("committed run 00000000 is now None" in p for p in problems)


def test_zombie_staging_is_swept():
    """A finding of the simulation, fixed: a run stalled past its lease went on writing its
    staging after the racer's takeover discarded it, then died; its files stayed under
    ``_sparkmark_staging``. The next publish to the target now sweeps the staging of runs the
    ledger has discarded (failed before the fix: 'staged output left')."""
    assert sim_cli.replay(json.dumps({"seed": 1000148, "keep": [1, 2, 3, 4, 5, 6]})).problems == []


def test_register_scheme_serves_only_its_scheme():
    from sparkmark.engine.fs import ArrowFS, file_system, register_scheme
    made = []
    register_scheme("simtest", lambda path: made.append(path) or "FS")
    try:
        assert file_system(None, "SIMTEST://b/x") == "FS" and made == ["SIMTEST://b/x"]
        assert isinstance(file_system(None, "/tmp"), ArrowFS)
    finally:
        register_scheme("simtest", None)
    assert isinstance(file_system(None, "file:/tmp"), ArrowFS)
