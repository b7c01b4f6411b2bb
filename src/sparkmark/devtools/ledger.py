"""Synthetic ledger rows for the HTML report's size and speed checks (tests and benchmarks).

    from sparkmark.devtools.ledger import synthetic_runs
    with store.tx("seed") as conn:
        conn.execute(runs_table.insert(), synthetic_runs(10_000))
"""
from __future__ import annotations

import json
from typing import Any

STATUSES = ("SUCCEEDED", "EMPTY", "FAILED", "SKIPPED", "ROLLED_BACK")


def synthetic_runs(n: int, t0: int = 1_700_000_000_000) -> list[dict[str, Any]]:
    """``n`` module runs of one pipeline ``big`` (8 modules, hourly windows, every status), as
    rows for ``sm_runs``.  Example: ``len(synthetic_runs(16))`` is 16."""
    rows = []
    for i in range(n):
        mod = i % 8
        status = STATUSES[i % 37 % 5]
        start = t0 + (i // 8) * 3_600_000 + mod * 60_000
        rows.append(dict(run_id=f"{i:032x}", job_name=f"big.{mod}", pipeline="big",
                         pipeline_run_id=f"{i // 8:032x}", module_id=1000 + mod,
                         module_name=f"module_{mod}", layer="bronze", run_number=i // 8 + 1,
                         attempt=0, status=status,
                         error="SomeError: " + "x" * 200 if status == "FAILED" else None,
                         bookmark_option="job-bookmark-enable", start_version=0,
                         end_version=i // 8, run_start_ts=start, run_end_ts=start + 45_000,
                         from_ts=t0 + (i // 8) * 3_600_000,
                         until_ts=t0 + (i // 8 + 1) * 3_600_000, snapshot_ts=start,
                         records_read=i, records_written=i,
                         config=json.dumps({"sources": {"s": {"files": 3, "late_files": 0}}})))
    return rows
