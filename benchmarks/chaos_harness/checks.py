"""The model checks (pure): what the targets, the ledger and the bookmarks must show after a
schedule's recovery for the Iceberg job (:func:`iceberg_problems`) and the pipeline job
(:func:`pipeline_problems`, :func:`file_bookmark_problems`), and which module runs a pipeline
rollback undoes (:func:`rollback_set`).  tests/test_chaos_checkers.py feeds them hand-made
broken states.

    from chaos_harness.checks import iceberg_problems
    problems, unpublished = iceberg_problems(snapshots, ledger_rows)  # ([], 0) when clean
"""
from __future__ import annotations

from collections import Counter

from chaos_harness.constants import PIPELINE_MODULES, TERMINAL


def iceberg_problems(snaps: list[dict], rows: list[dict]) -> tuple[list[str], int]:
    """What the Iceberg target's snapshots say against the ledger (pure): a staged snapshot of
    a committed (SUCCEEDED/EMPTY) run with rows still unpublished; a published snapshot of a
    run that is not SUCCEEDED (or ROLLED_BACK: published, then removed); a SUCCEEDED run that
    wrote rows but has no published snapshot, or is still ``pending``; a ROLLED_BACK run whose
    published rows no ``sparkmark.rollback-of`` commit in the ancestry removed.  Returns the
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
