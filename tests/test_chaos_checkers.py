"""Negative controls for the fault-schedule checkers (benchmarks/chaos_harness/checks.py):
hand-made snapshot, ledger and target rows that break one rule each must be reported, and a
clean set must not.  Without these a checker that never fires would pass every schedule.

Pure functions only (no Spark, no server): ``iceberg_problems`` (the Iceberg target's
snapshots against the ledger) and ``pipeline_problems`` (the pipeline job's three targets,
windows, bookmark and ledger against the model).
"""
from __future__ import annotations

from conftest import load_chaos

checks = load_chaos("checks")


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
    assert checks.iceberg_problems(CLEAN_SNAPS, CLEAN_ROWS) == ([], 1)


def test_iceberg_unpublished_snapshot_of_committed_run_is_a_violation():
    snaps = [snap(1, "a", False)] + CLEAN_SNAPS[1:]
    problems, _ = checks.iceberg_problems(snaps, CLEAN_ROWS)
    assert any("staged snapshot 1 of committed run a" in p and "unpublished" in p
               for p in problems), problems


def test_iceberg_published_snapshot_of_uncommitted_run_is_a_violation():
    snaps = [CLEAN_SNAPS[0], snap(2, "f", True)] + CLEAN_SNAPS[2:]
    problems, allowed = checks.iceberg_problems(snaps, CLEAN_ROWS)
    assert any("snapshot 2 of run f (FAILED) is published" in p for p in problems), problems
    assert allowed == 0
    # a RUNNING run (no commit yet) too
    rows = CLEAN_ROWS[:1] + [run("f", "RUNNING", 0, None)] + CLEAN_ROWS[2:]
    problems, _ = checks.iceberg_problems(snaps, rows)
    assert any("run f (RUNNING) is published" in p for p in problems), problems


def test_iceberg_succeeded_run_with_records_not_published_is_a_violation():
    # no snapshot of run s at all
    rows = CLEAN_ROWS + [run("s", "SUCCEEDED", 5)]
    problems, _ = checks.iceberg_problems(CLEAN_SNAPS, rows)
    assert any("SUCCEEDED run s wrote 5 records but no snapshot" in p for p in problems), \
        problems
    # its publish left pending after recovery
    rows = CLEAN_ROWS + [run("s", "SUCCEEDED", 5, "pending")]
    problems, _ = checks.iceberg_problems(CLEAN_SNAPS + [snap(9, "s", True, added=5)], rows)
    assert problems == ["iceberg: SUCCEEDED run s still publish_state='pending' after "
                        "recovery"], problems


def test_iceberg_rolled_back_published_run_not_removed_is_a_violation():
    snaps = CLEAN_SNAPS[:3]  # no rollback-of commit in the ancestry
    problems, _ = checks.iceberg_problems(snaps, CLEAN_ROWS)
    assert any("run r is ROLLED_BACK but no rollback commit" in p for p in problems), problems
    # a rollback commit that is not in the current ancestry does not count either
    off = snaps + [snap(4, None, False, added=0, rollback_of="r", wap=False)]
    problems, _ = checks.iceberg_problems(off, CLEAN_ROWS)
    assert any("run r is ROLLED_BACK but no rollback commit" in p for p in problems), problems


# ---------------------------------------------------------------------------- pipeline
P0, S1, S2 = 1_000, 5_000, 9_000  # the primordial start and two pipeline snapshots
IDS = ["r000000", "r000001", "r000002"]
FILE = ("file:/in/part=1/orders-00001.json", 4_000)


def mrun(m, n, run_id, status, written, frm, until, publish="done"):
    return {"run_id": run_id, "job_name": f"chaos.{m}", "module_id": m, "status": status,
            "records_written": written, "publish_state": publish, "from_ts": frm,
            "until_ts": until, "run_number": n}


def clean_pipeline():
    """Two pipeline runs: the first loads the three records through A, B and C; the second
    finds nothing new (EMPTY); a killed attempt of B in between left a FAILED row; A's
    bookmark covers the one input file (mtime <= low)."""
    rows = []
    for m in (1, 2, 3):
        rows.append(mrun(m, 1, f"m{m}a", "SUCCEEDED", 3, P0, S1))
        rows.append(mrun(m, 2, f"m{m}b", "EMPTY", 0, S1, S2))
    rows.append(mrun(2, 2, "m2x", "FAILED", 0, S1, S2, publish=None))
    targets = {m: [(i, f"m{m}a") for i in IDS] for m in (1, 2, 3)}
    bookmarks = {1: {"src": {"kind": "files", "v": 1, "low": 4_000, "high": 4_000,
                             "listing_ts": S2, "band": 60_000, "files": {}}},
                 2: {}, 3: {}}
    return targets, rows, bookmarks


def check(targets, rows, bookmarks, files=(FILE,), staged=()):
    return checks.pipeline_problems(IDS, targets, rows, bookmarks, list(files),
                                   last_snapshot=S2, primordial_ts=P0, staged=list(staged))


def test_pipeline_clean_set_has_no_violation():
    assert check(*clean_pipeline()) == []


def test_pipeline_duplicated_record_in_a_module_target_is_a_violation():
    targets, rows, bookmarks = clean_pipeline()
    targets[2].append(("r000001", "m2a"))
    problems = check(targets, rows, bookmarks)
    assert any("1 record ids duplicated in module B's target" in p for p in problems), problems
    # and the run's count no longer agrees with its rows
    assert any("run m2a says records_written=3, its target holds 4" in p for p in problems)


def test_pipeline_missing_record_and_rows_of_a_failed_run_are_violations():
    targets, rows, bookmarks = clean_pipeline()
    targets[3] = [(i, "m3a") for i in IDS[:2]] + [("r000002", "m2x")]
    problems = check(targets, rows, bookmarks)
    assert any("1 rows of run m2x (None) in module C's target" in p for p in problems), problems
    assert any("run m3a says records_written=3, its target holds 2" in p for p in problems)


def test_pipeline_window_that_differs_from_the_model_is_a_violation():
    targets, rows, bookmarks = clean_pipeline()
    # module C's second window starts after the first one ended (a gap: rows stamped in
    # between would never reach C)
    rows = [dict(r, from_ts=S1 + 1) if r["run_id"] == "m3b" else r for r in rows]
    problems = check(targets, rows, bookmarks)
    assert problems == [f"pipeline: module C run m3b window starts at {S1 + 1}, the model says "
                        f"{S1} (gap or overlap)"], problems
    # module B's windows stop short of the last snapshot
    _, rows, _ = clean_pipeline()
    rows = [dict(r, until_ts=S2 - 1) if r["run_id"] == "m2b" else r for r in rows]
    problems = check(targets, rows, bookmarks)
    assert problems == [f"pipeline: module B's windows end at {S2 - 1}, the last recovery "
                        f"run's snapshot is {S2}"], problems


def test_pipeline_file_bookmark_that_differs_from_the_model_is_a_violation():
    targets, rows, bookmarks = clean_pipeline()
    # a second input file newer than the band's low and not in its files: not covered
    newer = ("file:/in/part=2/orders-00002.json", 4_500)
    problems = check(targets, rows, bookmarks, files=(FILE, newer))
    assert problems == ["pipeline: module A's bookmark does not cover 1 of 2 input files: "
                        "['file:/in/part=2/orders-00002.json']"], problems
    # no bookmark entry for the source at all
    problems = check(targets, rows, {**bookmarks, 1: {}})
    assert any("has no entry for its source 'src'" in p for p in problems), problems
    # covered through the band's files (path hash -> mtime), the file source's own rule
    from sparkmark.planning.bands import path_hash
    src = dict(bookmarks[1]["src"], files={path_hash(newer[0]): newer[1]})
    assert check(targets, rows, {1: {"src": src}, 2: {}, 3: {}},
                 files=(FILE, newer)) == []


def test_pipeline_ledger_not_terminal_or_staged_left_is_a_violation():
    targets, rows, bookmarks = clean_pipeline()
    rows = rows + [mrun(1, 3, "m1z", "RUNNING", 0, S2, S2, publish=None)]
    rows = [dict(r, publish_state="removing") if r["run_id"] == "m2x" else r for r in rows]
    problems = check(targets, rows, bookmarks, staged=["A"])
    assert "pipeline: staging output left in module A's target" in problems
    assert any("module A ledger rows not terminal: [('m1z', 'RUNNING')]" in p
               for p in problems), problems
    assert any("module B runs still 'removing': ['m2x']" in p for p in problems), problems
