"""Benchmark: py4j answer latency by answer size, with and without ``sparkmark.engine.jvm.quick_acks``.

py4j's Java side writes an answer of more than 8 KB in two sends with Nagle's algorithm on, and
Linux delays the ACK of the first on an interactive connection, so every such answer waits up
to 40 ms, whatever its size.  Every py4j call sparkmark makes with a larger answer (an Iceberg
table's metadata, a directory listing's statuses, a wide schema) paid it once.  This script
measures a static Java call returning N characters (``StringUtils.repeat``), best and median of
``--repeat`` calls, in two fresh processes: plain py4j, and after ``quick_acks(spark)``.

    .venv/bin/python benchmarks/py4j_answers.py    # a table; results/py4j_answers.json
    .venv/bin/python benchmarks/py4j_answers.py --sizes 1000,100000 --repeat 50
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "py4j_answers.json"


def child(sizes: list[int], repeat: int, quick: bool) -> dict:
    sys.path.insert(0, str(ROOT / "src"))
    from sparkmark.engine.jvm import java_class, quick_acks
    from sparkmark.engine.spark import local_session
    spark = local_session("py4j-bench", cores=1)
    on = quick_acks(spark) if quick else False
    utils = java_class(spark, "org.apache.commons.lang3.StringUtils")
    utils.repeat("x", 100)  # warm-up: the method lookup
    out = {}
    for n in sizes:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            text = utils.repeat("x", n)
            times.append(time.perf_counter() - t0)
            assert len(text) == n
        out[str(n)] = {"best_ms": round(1000 * min(times), 3),
                       "median_ms": round(1000 * statistics.median(times), 3)}
    import pyspark
    spark.stop()
    return {"quick_acks": on, "answers": out, "spark": pyspark.__version__}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,8000,10000,65536,1000000")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--child", choices=["plain", "quick"], help=argparse.SUPPRESS)
    ap.add_argument("--json", default=str(RESULTS))
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.child:
        print(json.dumps(child(sizes, a.repeat, a.child == "quick")))
        return
    load = list(os.getloadavg())
    runs = {}
    for mode in ("plain", "quick"):
        p = subprocess.run([sys.executable, __file__, "--child", mode, "--sizes", a.sizes,
                            "--repeat", str(a.repeat)], capture_output=True, text=True,
                           check=True)
        runs[mode] = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"{'answer chars':>14} {'plain best/median ms':>24} {'quick_acks best/median ms':>28}")
    rows = []
    for n in sizes:
        pl, qu = runs["plain"]["answers"][str(n)], runs["quick"]["answers"][str(n)]
        print(f"{n:>14,} {pl['best_ms']:>11.2f} / {pl['median_ms']:<10.2f}"
              f"{qu['best_ms']:>14.2f} / {qu['median_ms']:<10.2f}")
        rows.append({"chars": n, "plain": pl, "quick_acks": qu})
    report = {"benchmark": "py4j answer latency by size, plain vs quick_acks",
              "command": "python benchmarks/py4j_answers.py " + " ".join(sys.argv[1:]),
              "repeat": a.repeat, "rows": rows, "quick_acks_on": runs["quick"]["quick_acks"],
              "load_avg_start": load, "load_avg_end": list(os.getloadavg()),
              "versions": {"python": platform.python_version(), "spark": runs["plain"]["spark"],
                           "kernel": platform.release()}}
    Path(a.json).write_text(json.dumps(report, indent=1) + "\n")
    print(f"load average {load} -> {report['load_avg_end']}; saved {a.json}")


if __name__ == "__main__":
    main()
