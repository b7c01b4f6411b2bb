"""Negative controls for the fault-schedule checkers of benchmarks/chaos.py: hand-made
snapshot, ledger and target rows that break one rule each must be reported, and a clean set
must not.  Without these a checker that never fires would pass every schedule.

Pure functions only (no Spark, no server): ``iceberg_problems`` (the Iceberg target's
snapshots against the ledger).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("chaos", ROOT / "benchmarks" / "chaos.py")
chaos = importlib.util.module_from_spec(spec)
spec.loader.exec_module(chaos)


# ---------------------------------------------------------------------------- iceberg
def run(run_id, status, written=3, publish="done"):
    return {"run_id": run_id, "status": status, "records_written": written,
            "publish_state": publish}


def snap(i, run_id, ancestor, added=3, picked=None, rollback_of=None, wap=True):
    return {"snapshot_id": i, "operation": "append" if wap else "delete",
            "wap_id": f"{run_id}-w" if wap and run_id else None, "published_wap_id": picked,
            "run_id": run_id, "added": added, "rollback_of": rollback_of,
            "ancestor": ancestor}


#: a clean history: a committed run published, a failed run's staged snapshot unpublished
#: (allowed, counted), a run published then rolled back by a ``sparkmark.rollback-of`` commit
CLEAN_SNAPS = [snap(1, "a", True), snap(2, "f", False),
               snap(3, "r", True), snap(4, None, True, added=0, rollback_of="r", wap=False)]
CLEAN_ROWS = [run("a", "SUCCEEDED"), run("f", "FAILED", 0, None),
              run("r", "ROLLED_BACK", 3, "removed")]


def test_iceberg_clean_set_has_no_violation():
    assert chaos.iceberg_problems(CLEAN_SNAPS, CLEAN_ROWS) == ([], 1)


def test_iceberg_unpublished_snapshot_of_committed_run_is_a_violation():
    snaps = [snap(1, "a", False)] + CLEAN_SNAPS[1:]
    problems, _ = chaos.iceberg_problems(snaps, CLEAN_ROWS)
    assert any("staged snapshot 1 of committed run a" in p and "unpublished" in p
               for p in problems), problems


def test_iceberg_published_snapshot_of_uncommitted_run_is_a_violation():
    snaps = [CLEAN_SNAPS[0], snap(2, "f", True)] + CLEAN_SNAPS[2:]
    problems, allowed = chaos.iceberg_problems(snaps, CLEAN_ROWS)
    assert any("snapshot 2 of run f (FAILED) is published" in p for p in problems), problems
    assert allowed == 0
    # a RUNNING run (no commit yet) too
    rows = CLEAN_ROWS[:1] + [run("f", "RUNNING", 0, None)] + CLEAN_ROWS[2:]
    problems, _ = chaos.iceberg_problems(snaps, rows)
    assert any("run f (RUNNING) is published" in p for p in problems), problems


def test_iceberg_succeeded_run_with_records_not_published_is_a_violation():
    # no snapshot of run s at all
    rows = CLEAN_ROWS + [run("s", "SUCCEEDED", 5)]
    problems, _ = chaos.iceberg_problems(CLEAN_SNAPS, rows)
    assert any("SUCCEEDED run s wrote 5 records but no snapshot" in p for p in problems), \
        problems
    # its publish left pending after recovery
    rows = CLEAN_ROWS + [run("s", "SUCCEEDED", 5, "pending")]
    problems, _ = chaos.iceberg_problems(CLEAN_SNAPS + [snap(9, "s", True, added=5)], rows)
    assert problems == ["iceberg: SUCCEEDED run s still publish_state='pending' after "
                        "recovery"], problems


def test_iceberg_rolled_back_published_run_not_removed_is_a_violation():
    snaps = CLEAN_SNAPS[:3]  # no rollback-of commit in the ancestry
    problems, _ = chaos.iceberg_problems(snaps, CLEAN_ROWS)
    assert any("run r is ROLLED_BACK but no rollback commit" in p for p in problems), problems
    # a rollback commit that is not in the current ancestry does not count either
    off = snaps + [snap(4, None, False, added=0, rollback_of="r", wap=False)]
    problems, _ = chaos.iceberg_problems(off, CLEAN_ROWS)
    assert any("run r is ROLLED_BACK but no rollback commit" in p for p in problems), problems
