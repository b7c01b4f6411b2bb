"""Median overhead of Job.init + Job.commit (no Spark work) on SQLite and PostgreSQL.

    python benchmarks/lifecycle.py [--runs 50]

Goals: <= 50 ms on SQLite, <= 100 ms on PostgreSQL.  Prints a table and writes
benchmarks/results/lifecycle.json.  The peer is Glue's own bookmark service, which cannot run
here; we report absolute figures against the goals instead.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparkmark import Job  # noqa: E402
from sparkmark.devtools.postgres import start_postgres  # noqa: E402

GOALS_MS = {"sqlite": 50.0, "postgresql": 100.0}


def measure(url: str, runs: int) -> list[float]:
    args = {"job_bookmark_option": "job-bookmark-enable"}
    Job(None, state=url).init("warmup", args).commit()
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        job = Job(None, state=url).init("bench", args)
        job.bookmark("src")
        job.record_read("src", {"low": i, "high": i + 1, "files": [["h" * 16, i]] * 20},
                        {"new_input": True})
        job.commit()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    a = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as d:
        results["sqlite"] = measure(f"sqlite:///{d}/state.db", a.runs)
    pg = start_postgres()
    try:
        results["postgresql"] = measure(pg.create_database("bench"), a.runs)
    finally:
        pg.stop()
    rows = []
    print(f"{'backend':<12}{'runs':>6}{'median ms':>12}{'p90 ms':>10}{'goal ms':>10}  verdict")
    for name, t in results.items():
        med = statistics.median(t)
        p90 = statistics.quantiles(t, n=10)[-1]
        ok = med <= GOALS_MS[name]
        rows.append({"backend": name, "runs": len(t), "median_ms": round(med, 2),
                     "p90_ms": round(p90, 2), "goal_ms": GOALS_MS[name], "meets_goal": ok})
        print(f"{name:<12}{len(t):>6}{med:>12.2f}{p90:>10.2f}{GOALS_MS[name]:>10.0f}  "
              f"{'ok' if ok else 'MISSED'}")
    out = Path(__file__).parent / "results" / "lifecycle.json"
    out.write_text(json.dumps({"benchmark": "init+commit overhead", "results": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
