"""Benchmark: what schemaEvolution costs a JSON read (not a test).

N new JSON files (default 200 files of 500 rows) read by a bookmarked source and counted, best
of ``--repeat`` warm runs each, in one local Spark session: Spark's own ``mode=FAILFAST`` (one
pass: the count) against the default ``schemaEvolution=rescue`` with nothing known (a first
run: schema inference over the new files, then the count, which also delivers the
rescued/malformed counts), each timed up to and including its commit; then both again with a
``schema`` given, as every run after the first has a known schema: ``rescue`` then makes no
inference pass, and its one pass parses every line (with its keys) where ``FAILFAST``'s count
may skip the values.  Each run has its own state store, so every run reads the same new
files.  Prints a table and writes benchmarks/results/drift.json (dated).

    .venv/bin/python benchmarks/drift.py --files 200 --rows 500 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from sparkmark import Job
    from sparkmark.engine.spark import local_session
    spark = local_session("sparkmark-bench-drift")
    root = tempfile.mkdtemp(prefix="sm-drift-")
    try:
        t0 = int(time.time() * 1000) - 3_600_000
        for i in range(args.files):
            p = f"{root}/in/f{i:05d}.json"
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.writelines(json.dumps({"id": i * args.rows + j, "amount": j * 1.5,
                                         "note": "x" * 20}) + "\n" for j in range(args.rows))
            os.utime(p, ns=((t0 + i) * 1_000_000,) * 2)
        best: dict[str, float] = {}
        for rnd in range(args.repeat + 1):  # the first round warms the JVM up
            schema = {"schema": "id BIGINT, amount DOUBLE, note STRING"}
            for i, (name, opts) in enumerate((
                    ("FAILFAST", {"mode": "FAILFAST"}), ("rescue", {}),
                    ("FAILFAST, schema given", {"mode": "FAILFAST", **schema}),
                    ("rescue, schema given", schema))):
                job = Job(spark, state=f"sqlite:///{root}/{i}-{rnd}.db").init(
                    "drift", {"job_bookmark_option": "job-bookmark-enable"})
                start = time.perf_counter()
                n = job.read.files(f"{root}/in", transformation_ctx="src", options=opts).count()
                job.commit()
                took = time.perf_counter() - start
                assert n == args.files * args.rows
                best[name] = min(best.get(name, took), took)
        for name, took in best.items():
            print(f"{name:>22}: {took:6.2f} s  ({args.files} files, "
                  f"{args.files * args.rows} rows)")
        ratios = {"rescue / FAILFAST": round(best["rescue"] / best["FAILFAST"], 2),
                  "rescue / FAILFAST, schema given": round(
                      best["rescue, schema given"] / best["FAILFAST, schema given"], 2)}
        print(ratios, f"load average: {os.getloadavg()}")
        import pyspark
        out = {"files": args.files, "rows": args.rows, "repeat": args.repeat,
               "best_s": {k: round(v, 3) for k, v in best.items()}, "ratios": ratios,
               "machine": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "cores": os.cpu_count(), "load_average_end": os.getloadavg(),
                           "pyspark": pyspark.__version__}}
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                               "drift.json"), "w") as fh:
            json.dump(out, fh, indent=1)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
