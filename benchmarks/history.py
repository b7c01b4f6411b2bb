"""Benchmark: a run's state-store cost does not grow with the ledger (not a test).

A store that has run a job every five minutes for a year holds ~100,000 ledger rows.  For each
history size H (rows of this job, as many again of other jobs writing other targets; synthetic
rows inserted directly, SUCCEEDED and published, each naming its target in ``outputs``), on a
SQLite file and on a throwaway PostgreSQL server, it measures, median of ``--repeat``:

- ``init + commit``: ``Job(None).init`` (lease, ledger row, the runs left to publish) and
  ``commit`` (bookmark version, ledger row): the store traffic of every run;
- ``shared-target check``: ``store.jobs_writing(target)``, which every write asks (the other
  jobs that wrote its target; part of recording the staged output since schema 3).

The peer is the same store at H = 0: ``ratio`` = cost at H / cost at 0 (goal: ~1, flat).
Before schema 3 both lookups scanned (the job's runs, every run's outputs): measured here at
H = 50,000 on SQLite, 21 ms and 34 ms a run.

    .venv/bin/python benchmarks/history.py --sizes 0,10000,100000 --repeat 200
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

RESULTS = Path(__file__).parent / "results" / "history.json"
JOB = "bench_history"
EN = {"job_bookmark_option": "job-bookmark-enable"}


def fill(url: str, n: int) -> None:
    """``n`` finished runs of ``JOB`` and ``n`` of 50 other jobs, each with outputs."""
    from sparkmark import Job
    from sparkmark.state import open_store
    from sparkmark.state.schema import runs
    Job(None, state=url).init(JOB, EN).commit()  # the job's row (a store has none without it)
    store = open_store(url)
    for job in range(2):
        name = JOB if job == 0 else None
        for start in range(0, n, 10_000):
            batch = []
            for i in range(start, min(n, start + 10_000)):
                who = name or f"other_{i % 50}"
                batch.append({
                    "run_id": f"{job:04x}{i:028x}", "job_name": who, "run_number": i,
                    "attempt": 0, "status": "SUCCEEDED", "bookmark_option": EN[
                        "job_bookmark_option"], "start_version": 0, "end_version": 0,
                    "run_start_ts": i, "run_end_ts": i + 1, "snapshot_ts": i, "host": "h",
                    "pid": 1, "publish_state": "done",
                    "outputs": json.dumps([{"kind": "files", "target": f"file:/out/{who}",
                                            "staging": f"file:/out/{who}/_s/{i}"}])})
            with store.tx("fill") as conn:
                conn.execute(runs.insert(), batch)


def measure(url: str, repeat: int) -> dict:
    from sparkmark import Job
    from sparkmark.state import open_store
    store = open_store(url)
    Job(None, state=url).init(JOB, EN).commit()  # warm: the compiled statements
    runs_ms, check_ms = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        Job(None, state=url).init(JOB, EN).commit()
        t1 = time.perf_counter()
        store.jobs_writing(f"file:/out/{JOB}", besides=JOB)
        t2 = time.perf_counter()
        runs_ms.append((t1 - t0) * 1e3)
        check_ms.append((t2 - t1) * 1e3)
    return {"init_commit_ms": round(statistics.median(runs_ms), 3),
            "shared_target_check_ms": round(statistics.median(check_ms), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0,10000,100000", help="history sizes H")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--json", default=str(RESULTS))
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]
    load_start = list(os.getloadavg())
    rows = []
    server = None
    try:
        for backend in a.backends.split(","):
            for n in sizes:
                if backend == "sqlite":
                    url = f"sqlite:///{tempfile.mkdtemp(prefix='sm-hist-')}/state.db"
                else:
                    if server is None:
                        from sparkmark.devtools.postgres import start_postgres
                        server = start_postgres()
                    url = server.create_database(f"hist{n}")
                t0 = time.perf_counter()
                fill(url, n)
                got = measure(url, a.repeat)
                rows.append({"backend": backend, "history": n, **got,
                             "fill_s": round(time.perf_counter() - t0, 1)})
                print(f"{backend:<10} H={n:>7,}  init+commit {got['init_commit_ms']:7.3f} ms  "
                      f"shared-target check {got['shared_target_check_ms']:7.3f} ms", flush=True)
    finally:
        if server is not None:
            server.stop()
    for r in rows:
        base = next(b for b in rows if b["backend"] == r["backend"] and b["history"] == sizes[0])
        r["ratio"] = {k: round(r[k] / base[k], 2) for k in ("init_commit_ms",
                                                            "shared_target_check_ms")}
    print(f"\n{'backend':<10} {'H':>8} {'init+commit ms':>15} {'ratio':>6} "
          f"{'target check ms':>16} {'ratio':>6}")
    for r in rows:
        print(f"{r['backend']:<10} {r['history']:>8,} {r['init_commit_ms']:>15.3f} "
              f"{r['ratio']['init_commit_ms']:>6} {r['shared_target_check_ms']:>16.3f} "
              f"{r['ratio']['shared_target_check_ms']:>6}")
    from sparkmark.state.schema import SCHEMA_VERSION
    result = {"benchmark": "state-store cost per run vs ledger history", "args": vars(a),
              "rows": rows, "schema_version": SCHEMA_VERSION,
              "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                          "platform": platform.platform(), "load_average_start": load_start,
                          "load_average_end": list(os.getloadavg())},
              "note": "peer = the same store at the smallest history; synthetic finished runs "
                      "(published, with outputs) of this job and as many of 50 other jobs"}
    out = Path(a.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
