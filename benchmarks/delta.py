"""Benchmark: Delta Lake tables with sparkmark against plain Spark (not a test).

    PYTHONPATH=src .venv41/bin/python benchmarks/delta.py     # 1,000,000 rows, 1% new, 5 trials
    PYTHONPATH=src .venv41/bin/python benchmarks/delta.py --rows 100000 \\
        --write-rows 10000 --repeat 3 --warmup 1                        # quicker

Spark 4.1 with delta-spark 4.4 (or Spark 3.5 with delta-spark 3.3: .venv35; ``make jars``),
Delta tables by path in a temporary folder, a SQLite state store (sparkmark's embedded
default).  In one run:

1. read: a source table ``delta.`<tmp>/src``` of ``--rows`` rows, with the change data feed
   on (``delta.enableChangeDataFeed``: the plain peer needs it; sparkmark's append read does
   not use it).  Before each trial ``--new-pct`` % new rows are appended (one new version,
   outside the timing) and counted once through the change feed (untimed: it checks the
   range and makes neither timed peer the first reader of the new commit).  Then, in
   alternating order:
   - sparkmark: a whole run — ``Job(...).init`` (lease, ledger row), ``job.read.table(...,
     format="delta")`` (``DESCRIBE HISTORY ... LIMIT 1``, that version's checksum file, the
     range's commit files from ``_delta_log``, then the data files those commits added, by name), the
     rows consumed by Spark's ``noop`` sink, ``job.commit()`` (the bookmark moves to the new
     version);
   - plain: the peer a user would write for "the rows appended between two versions":
     Delta's change data feed, ``readChangeFeed`` with ``startingVersion``/``endingVersion``
     = the same range, ``_change_type = 'insert'``, the three change columns dropped, the
     same ``noop`` sink (Delta has no plain appends-only range reader; a time-travel diff of
     two versions, ``EXCEPT``, would read the whole table twice);
   - full: plain Spark reading the whole table (its latest version), the same sink.
   Goal: sparkmark / plain <= 1.1.  full / sparkmark is what the bookmark saves.
2. write, for each ``--write-rows`` size: fresh rows each trial, into a Delta table by path
   (created with the two stamp columns); sparkmark: a whole run (init, ``job.write(df,
   target, format="delta")`` — the table's version and columns, the ledger's staged output,
   the append with ``txnAppId``/``txnVersion``/``userMetadata``, the commit found in the log
   — and ``job.commit()``) against plain ``df.selectExpr("*", <sm_run_id, sm_snapshot_ts as
   literals>).write.format("delta").mode("append").save(target)`` of the same number of rows
   into the same table.  Goal: sparkmark / plain <= 1.1.

``--snapshot-partitions N`` sets ``spark.databricks.delta.snapshotPartitions`` (Delta's default
50, the tasks of Delta's snapshot state reconstruction; at 2, one small busy run's sparkmark
read fell from 6.2-6.8 s to 2.9 s and its 10,000-row write from 7 s to 3 s, ratios still ~4).
Seen on 2 busy cores: one standalone ``DESCRIBE DETAIL`` of the source after an append took
14-19 s, and ``job.read.table`` after it 1 s, while the plain change-feed read took 0.3 s:
sparkmark's metadata statements, not its data read, are most of a run here.

Every figure is best of ``--repeat`` and median, after ``--warmup`` (2) untimed trials of each
peer; the peers alternate order.  Prints a table and writes benchmarks/results/delta.json with
the Spark, delta-spark, Java and SQLite versions, the args and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tablebench import machine, noop, ratio, report_load, report_read_write, rows, stats  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "delta.json"
EN = {"job_bookmark_option": "job-bookmark-enable"}
COLS = "id BIGINT, v STRING, amount DOUBLE, created TIMESTAMP"
STAMPS = "sm_run_id STRING, sm_snapshot_ts TIMESTAMP"
CHANGE_COLS = ("_change_type", "_commit_version", "_commit_timestamp")


# ---------------------------------------------------------------------- data

def sql_name(path: str) -> str:
    return f"delta.`{path}`"


def version(spark, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY {sql_name(path)} LIMIT 1").collect()[0]["version"])


def delta_version(jars: list[str]) -> str:
    """delta-spark's version, from its jar's name (the venvs have the jars, not the package)."""
    for j in jars:
        m = re.search(r"delta-spark_[0-9._]+-([0-9][^/]*)\.jar$", j)
        if m:
            return m.group(1)
    return "unknown"


# ---------------------------------------------------------------------- the peers
def sm_read(spark, state: str, src: str) -> tuple[float, dict]:
    """A whole sparkmark run reading ``src`` incrementally; seconds and the source's info."""
    from sparkmark import Job
    t0 = time.perf_counter()
    job = Job(spark, state=state)
    job.init("bench_delta_read", EN)
    df = job.read.table(src, transformation_ctx="src", format="delta")
    noop(df)
    job.commit()
    elapsed = time.perf_counter() - t0
    run = job.store.list_runs(job_name="bench_delta_read", last=1)[-1]
    return elapsed, json.loads(run["config"])["sources"]["src"]


def changes(spark, path: str, first: int, last: int):
    """The rows appended in versions ``first..last``, as plain Spark reads them: Delta's change
    data feed, inserts only, without the change columns."""
    return (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", str(first)).option("endingVersion", str(last))
            .load(path).where("_change_type = 'insert'").drop(*CHANGE_COLS))


def plain_range(spark, path: str, after: int, through: int) -> float:
    t0 = time.perf_counter()
    noop(changes(spark, path, after + 1, through))
    return time.perf_counter() - t0


def plain_full(spark, path: str) -> float:
    t0 = time.perf_counter()
    noop(spark.read.format("delta").load(path))
    return time.perf_counter() - t0


def sm_write(spark, state: str, tgt: str, df, job_name: str) -> tuple[float, int]:
    from sparkmark import Job
    t0 = time.perf_counter()
    job = Job(spark, state=state)
    job.init(job_name, EN)
    n = job.write(df, tgt, format="delta", transformation_ctx="sink")
    job.commit()
    return time.perf_counter() - t0, n


def plain_write(tgt: str, df) -> float:
    """The plain peer: ``df`` (unstamped, as sparkmark's) gets the stamp columns as literals in
    one ``selectExpr`` (as sparkmark's stamp does), then one Delta append; both timed."""
    t0 = time.perf_counter()
    (df.selectExpr("*", f"'{uuid.uuid4().hex}' AS sm_run_id",
                   f"timestamp_millis({int(time.time() * 1000)}L) AS sm_snapshot_ts")
     .write.format("delta").mode("append").save(tgt))
    return time.perf_counter() - t0


# ---------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="source table size")
    ap.add_argument("--new-pct", type=float, default=1.0, help="new rows per run, %% of --rows")
    ap.add_argument("--write-rows", default="10000,1000000", help="write sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=5, help="timed trials per peer")
    ap.add_argument("--warmup", type=int, default=2,
                    help="untimed trials of every peer first (the JVM compiles the hot paths)")
    ap.add_argument("--snapshot-partitions", type=int, default=None,
                    help="spark.databricks.delta.snapshotPartitions (default: Delta's, 50): "
                         "the partitions of Delta's snapshot state reconstruction, which "
                         "DESCRIBE DETAIL forces after each new version")
    ap.add_argument("--json", default=None,
                    help="where to write the results (default benchmarks/results/delta.json)")
    a = ap.parse_args(argv)
    new = max(1, int(a.rows * a.new_pct / 100))
    sizes = [int(s) for s in a.write_rows.split(",") if s.strip()]
    load_start = list(os.getloadavg())

    import pyspark

    import sparkmark
    from sparkmark.devtools.delta import delta_jars, delta_session_conf
    from sparkmark.engine.spark import local_session
    try:
        jars = delta_jars(fetch=False)
    except (LookupError, FileNotFoundError) as e:  # no delta-spark for this Spark line
        sys.exit(f"{e} (make jars)")
    work = Path(tempfile.mkdtemp(prefix="sm-bench-delta-"))
    conf = delta_session_conf(jars=jars)
    conf["spark.sql.warehouse.dir"] = str(work / "spark-wh")
    if a.snapshot_partitions:
        conf["spark.databricks.delta.snapshotPartitions"] = str(a.snapshot_partitions)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = local_session("sparkmark-bench-delta", extra_conf=conf)
    state = f"sqlite:///{work}/state.db"
    java = spark.sparkContext._jvm.System.getProperty("java.version")
    src_path = str(work / "src")
    src = sql_name(src_path)
    result: dict = {}
    try:
        # ------------------------------------------------------------ read
        t0 = time.perf_counter()
        spark.sql(f"CREATE TABLE {src} ({COLS}) USING delta "
                  "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
        rows(spark, 0, a.rows).write.format("delta").mode("append").save(src_path)
        top = a.rows
        load_s = time.perf_counter() - t0
        first_s, info = sm_read(spark, state, src)  # the first run: whole table, sets bookmark
        assert info["read"] == "as_of", info
        print(f"source {src}: {a.rows:,} rows loaded in {load_s:.1f}s; first sparkmark run "
              f"(whole table) {first_s:.2f}s", flush=True)

        def increment() -> tuple[int, int]:
            """Append the next ``new`` rows (one version); then read them once through the
            change feed, untimed: the range holds exactly them, and neither timed peer is
            the first reader of the new commit."""
            nonlocal top
            before = version(spark, src_path)
            rows(spark, top, new).write.format("delta").mode("append").save(src_path)
            top += new
            after = version(spark, src_path)
            assert after == before + 1, (before, after)
            got = changes(spark, src_path, before + 1, after).count()
            assert got == new, (got, new)
            return before, after

        def checked_read(lo: int, hi: int) -> float:
            s, info = sm_read(spark, state, src)
            assert (info["from_version"], info["to_version"], info["read"]) == \
                (lo, hi, "appends"), info
            return s

        for _ in range(a.warmup):
            lo, hi = increment()
            checked_read(lo, hi)
            plain_range(spark, src_path, lo, hi)
            plain_full(spark, src_path)
        ours, plain, full = [], [], []
        for i in range(a.repeat):
            lo, hi = increment()
            if i % 2:
                plain.append(plain_range(spark, src_path, lo, hi))
            ours.append(checked_read(lo, hi))
            if not i % 2:
                plain.append(plain_range(spark, src_path, lo, hi))
            full.append(plain_full(spark, src_path))
            print(f"  read trial {i + 1}: sparkmark {ours[-1]:.3f}s plain {plain[-1]:.3f}s "
                  f"full {full[-1]:.3f}s  load {os.getloadavg()[0]:.2f}", flush=True)
        read = {"table_rows": a.rows, "new_rows_per_run": new, "table_rows_at_end": top,
                "load_s": round(load_s, 2), "first_run_s": round(first_s, 3),
                "plain_peer": "change data feed (readChangeFeed, startingVersion/"
                              "endingVersion), _change_type = 'insert', change columns dropped",
                "sparkmark": stats(ours), "plain_range": stats(plain), "full_scan": stats(full)}
        read["sparkmark_over_plain"] = ratio(read["sparkmark"], read["plain_range"])
        read["full_over_sparkmark"] = ratio(read["full_scan"], read["sparkmark"])
        result["read"] = read

        # ------------------------------------------------------------ write
        writes = []
        base = 10 ** 12  # the written ids never meet the source's
        for n in sizes:
            tgt = str(work / f"target_{n}")
            spark.sql(f"CREATE TABLE {sql_name(tgt)} ({COLS}, {STAMPS}) USING delta")
            job_name = f"bench_delta_write_{n}"
            ours, plain = [], []
            warm = max(1, a.warmup)
            for i in range(a.repeat + warm):  # the first `warm` trials are the warm-up
                df_sm, df_plain = rows(spark, base, n), rows(spark, base + n, n)
                base += 2 * n
                timed = i >= warm
                for peer in (("sm", "plain") if i % 2 else ("plain", "sm")):
                    if peer == "sm":
                        s, got = sm_write(spark, state, tgt, df_sm, job_name)
                        assert got == n, (got, n)
                        if timed:
                            ours.append(s)
                    else:
                        s = plain_write(tgt, df_plain)
                        if timed:
                            plain.append(s)
                if timed:
                    print(f"  write {n:,} trial {i - warm + 1}: sparkmark {ours[-1]:.3f}s "
                          f"plain {plain[-1]:.3f}s  load {os.getloadavg()[0]:.2f}", flush=True)
            w = {"rows": n, "sparkmark": stats(ours), "plain_append": stats(plain)}
            w["sparkmark_over_plain"] = ratio(w["sparkmark"], w["plain_append"])
            trials = a.repeat + warm
            total = spark.read.format("delta").load(tgt).count()
            assert total == 2 * n * trials, (total, n)  # each run's rows once
            stamped = spark.read.format("delta").load(tgt).where("sm_run_id IS NULL").count()
            assert stamped == 0, stamped
            w["target_rows_checked"] = total
            w["target_versions"] = version(spark, tgt) + 1
            writes.append(w)
        result["write"] = writes
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    result = {
        "benchmark": "Delta Lake incremental read and exactly-once write, sparkmark vs plain "
                     "Spark",
        "command": " ".join(["PYTHONPATH=src", sys.executable, *sys.argv]),
        "args": vars(a),
        "goals": {"read_sparkmark_over_plain_max": 1.1, "write_sparkmark_over_plain_max": 1.1},
        **result,
        "machine": machine(load_start),
        "versions": {"python": sys.version.split()[0], "spark": pyspark.__version__,
                     "delta_spark": delta_version(jars), "java": java,
                     "sparkmark": sparkmark.__version__, "sqlite": sqlite3.sqlite_version},
        "note": "whole runs each side: sparkmark = Job() + init + read/write + commit on a "
                "SQLite state store; plain = the same version-range read through the change "
                "data feed (or full scan, or append of the same number of rows and columns) "
                "with the same noop sink. Best of N and median after --warmup untimed "
                "trials; the peers alternate order; every trial reads or writes new rows.",
    }
    report(result)
    out = Path(a.json) if a.json else RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")
    return 0


def report(r: dict) -> None:
    report_read_write(r, 1.1, "plain change-feed range")
    report_load(r)


if __name__ == "__main__":
    sys.exit(main())
