"""How many run commits one PostgreSQL state store sustains with N concurrent jobs.

    python benchmarks/store.py [--jobs 1,8,32] [--seconds 10] [--lease-ms 3000]

Each of N driver *processes* runs its own job in a loop for ``--seconds``: ``Job.init`` (take
the lease, open the ledger row), ``Job.commit`` (state, version and ledger row in one
transaction) — the store traffic of a real run without the Spark work (Job(None)), so the store
is the only shared resource.  Every running job also heartbeats its lease (every lease/3).
Prints a table and writes benchmarks/results/store.json.  The server is the throwaway
PostgreSQL of ``sparkmark.devtools.postgres`` (fsync off, on the benchmark machine).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

ARGS = {"job_bookmark_option": "job-bookmark-enable"}


def _driver(url: str, name: str, seconds: float, lease_ms: int, barrier, out) -> None:
    from sparkmark import Job
    Job(None, state=url, lease_ms=lease_ms).init(name, ARGS).commit()  # warm the pool
    barrier.wait()
    lat: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        Job(None, state=url, lease_ms=lease_ms).init(name, ARGS).commit()
        lat.append((time.perf_counter() - t0) * 1000)
    out.put(lat)


def measure(url: str, n: int, seconds: float, lease_ms: int) -> dict:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(n + 1), ctx.Queue()
    procs = [ctx.Process(target=_driver, args=(url, f"job-{n}-{i}", seconds, lease_ms,
                                               barrier, out)) for i in range(n)]
    for p in procs:
        p.start()
    barrier.wait(timeout=300)
    t0 = time.perf_counter()
    lats = [out.get(timeout=seconds + 300) for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join(60)
    all_lat = sorted(x for lat in lats for x in lat)
    commits = len(all_lat)
    return {"jobs": n, "seconds": round(wall, 2), "commits": commits,
            "commits_per_s": round(commits / wall, 1),
            "median_ms": round(statistics.median(all_lat), 1),
            "p95_ms": round(all_lat[int(0.95 * (len(all_lat) - 1))], 1),
            "max_ms": round(all_lat[-1], 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default="1,8,32")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--lease-ms", type=int, default=3000)
    ap.add_argument("--url", help="an existing PostgreSQL SQLAlchemy URL (default: a throwaway "
                                  "server)")
    a = ap.parse_args()
    from sparkmark.devtools.postgres import start_postgres
    pg = None if a.url else start_postgres()
    rows = []
    try:
        for n in [int(x) for x in a.jobs.split(",")]:
            url = a.url or pg.create_database(f"store_bench_{n}")
            rows.append(measure(url, n, a.seconds, a.lease_ms))
            print(rows[-1], flush=True)
    finally:
        if pg is not None:
            pg.stop()
    import os
    head = f"{'jobs':>5}{'commits':>9}{'commits/s':>11}{'median ms':>11}{'p95 ms':>9}{'max ms':>9}"
    print(head)
    for r in rows:
        print(f"{r['jobs']:>5}{r['commits']:>9}{r['commits_per_s']:>11}{r['median_ms']:>11}"
              f"{r['p95_ms']:>9}{r['max_ms']:>9}")
    res = {"benchmark": "store", "backend": "postgresql", "lease_ms": a.lease_ms,
           "cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 1),
           "rows": rows}
    print(f"machine: {os.cpu_count()} cpus, load average {res['load_average_1m']} (1 min)")
    out = ROOT / "benchmarks" / "results" / "store.json"
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
