"""The per-file audit: how fast ``sparkmark files`` answers, and whether the store stays bounded.

    python benchmarks/audit.py [--runs 1000] [--files-per-run 100] [--hours-between 1]

One job on a SQLite store commits ``--runs`` runs through the real commit path (``Job.init``,
``record_files`` as a file source calls it, ``Job.commit``: the state, the ledger row and the
audit rows in one transaction), ``--hours-between`` apart on an injected clock, with the
default retention (30 days). No Spark: the audit is store work (a file source's Spark read is
the same with or without it). It prints, every 10% of the runs, the store's file size and the
audit's row count, then times "which run read this file" after the last run:
``sparkmark files JOB --path NAME --format json`` as a whole process (what a user waits for)
and ``Bookmarks.files`` in process, over the ``files`` rows kept (10,000 or more by default:
30 days x 24 runs x 100 files is 72,000). Writes benchmarks/results/audit.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

ARGS = {"job_bookmark_option": "job-bookmark-enable"}
HOUR = 3_600_000


class _Clock:
    """The injected clock: the runs are hours apart, the benchmark takes seconds."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--files-per-run", type=int, default=100)
    ap.add_argument("--hours-between", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "audit.json"))
    a = ap.parse_args()
    from sparkmark import Bookmarks, Job
    from sparkmark.core.run import FileRead
    work = Path(tempfile.mkdtemp(prefix="sm-audit-"))
    db = work / "state.db"
    url = f"sqlite:///{db}"
    clock = _Clock()
    growth = []
    t0 = time.perf_counter()
    for i in range(a.runs):
        job = Job(None, state=url, clock=clock).init("audit", ARGS)
        job.record_files("src", [FileRead(f"s3a://lake/in/dt={i // 24:05d}/f{i:05d}-{k:04d}.json",
                                          1000 + k, clock.now - 60_000)
                                 for k in range(a.files_per_run)])
        job.commit()
        clock.advance(int(a.hours_between * HOUR))
        if (i + 1) % max(1, a.runs // 10) == 0:
            rows = len(Bookmarks(url).files("audit"))
            growth.append({"runs": i + 1, "store_bytes": db.stat().st_size, "audit_rows": rows})
            print(f"after {i + 1:5d} runs: store {db.stat().st_size / 1e6:7.2f} MB, "
                  f"audit rows {rows:7d}")
    commit_s = time.perf_counter() - t0
    kept = growth[-1]["audit_rows"]
    target = f"f{a.runs - 50:05d}-0007.json"
    cli = str(Path(sys.executable).with_name("sparkmark"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    whole: list[float] = []
    for _ in range(a.repeat):
        s = time.perf_counter()
        res = subprocess.run([cli, "--state", url, "files", "audit", "--path", target,
                              "--format", "json"], capture_output=True, text=True, env=env)
        whole.append(time.perf_counter() - s)
        assert res.returncode == 0, res.stderr
        assert len(json.loads(res.stdout)) == 1, res.stdout
    inproc: list[float] = []
    bm = Bookmarks(url)
    for _ in range(a.repeat):
        s = time.perf_counter()
        assert len(bm.files("audit", path=target)) == 1
        inproc.append(time.perf_counter() - s)
    result = {
        "runs": a.runs, "files_per_run": a.files_per_run, "hours_between": a.hours_between,
        "retention_days": 30, "audit_rows_kept": kept, "growth": growth,
        "commit_s_per_run": round(commit_s / a.runs, 4),
        "cli_which_run_best_s": round(min(whole), 3),
        "cli_which_run_median_s": round(statistics.median(whole), 3),
        "in_process_best_ms": round(min(inproc) * 1000, 2),
        "in_process_median_ms": round(statistics.median(inproc) * 1000, 2),
        "python": sys.version.split()[0], "load_avg": list(os.getloadavg())}
    print(f"'sparkmark files audit --path {target}' over {kept} audit rows: best "
          f"{min(whole):.3f} s, median {statistics.median(whole):.3f} s (the whole process); "
          f"Bookmarks.files in process: {min(inproc) * 1000:.1f} ms")
    print(f"commit with {a.files_per_run} audit rows: {commit_s / a.runs * 1000:.1f} ms per run"
          f" (with the run's init); load average {os.getloadavg()}")
    Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
