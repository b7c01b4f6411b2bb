"""Benchmark: incremental JDBC reads stay cheap as the table grows.

On a throwaway real PostgreSQL server, for each table size N (rows loaded with generate_series on
the server, not through Spark) it measures:

- full: a bookmark-disabled read of the whole table (materialised with Spark's ``noop`` sink,
  so every row crosses JDBC), partitioned on the key like any large read;
- incremental: an enabled run after K new rows were inserted (upper-bound query, ranged read of
  the K rows, commit to the state store) — the median of ``--repeats`` runs.

- peer: the same K rows read by plain Spark with the same predicate
  (``id > a AND id <= b``), the same partitions and the same noop sink, against a whole
  sparkmark run (``Job.init``, the upper-bound query, the ranged read, ``commit``); the two are
  measured alternately (each first in every other trial), ``--peer-trials`` each (201: a single
  read varies by +-20 % on this 2-CPU machine, and the median of 41 trials moved the ratio by
  +-0.05 from one run to the next), best and median, and a bootstrap 95 % interval of the
  median ratio. The table grows by K rows a trial.

Before the first size, ``--warmup`` (100) untimed runs on a small table (each after K new rows:
an enabled run and a plain predicate read of them, and every tenth a bookmark-disabled read of
the whole table) warm the JVM's JDBC read path: right after start, reads of 10,000 rows took
0.10-0.11 s, sparkmark's and plain Spark's alike, and fell to 0.05 s over the first ~100, so a
size measured first measured that warm-up (full / incremental 13.0 at 1M with 3 warm-up runs).

Goals: incremental(N largest) / incremental(N smallest) <= 1.5, full / incremental >= 20, and
sparkmark / plain predicate read <= 1.10 (median).

    .venv/bin/python benchmarks/jdbc.py                      # N = 1M and 10M, K = 10k
    .venv/bin/python benchmarks/jdbc.py --sizes 100000,1000000 --repeats 3 --peer-trials 21
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

import sqlalchemy as sa

from sparkmark import Job
from sparkmark.devtools.postgres import start_postgres
from sparkmark.engine.spark import local_session

RESULTS = Path(__file__).parent / "results" / "jdbc.json"


def _load(engine, table: str, first: int, last: int) -> None:
    with engine.begin() as c:
        c.execute(sa.text(
            f"INSERT INTO {table} SELECT g, md5(g::text), (g % 100000) / 100.0, "
            f"TIMESTAMP '2024-01-01' + g * INTERVAL '1 second' "
            f"FROM generate_series(CAST(:a AS bigint), CAST(:b AS bigint)) g"),
            {"a": first, "b": last})


def _read(spark, state, url, table, option):
    t0 = time.perf_counter()  # the whole run: init (lease, ledger row), read, commit
    job = Job(spark, state=state)
    job.init(f"bench_{table}", {"job_bookmark_option": option})
    df = job.read.jdbc(url, table=table, transformation_ctx="src")
    df.write.format("noop").mode("overwrite").save()
    job.commit()
    elapsed = time.perf_counter() - t0
    run = job.store.list_runs(job_name=f"bench_{table}")[-1]
    info = json.loads(run["config"])["sources"]["src"]
    return elapsed, info


def _median_ratio_ci(ours: list[float], plain: list[float], resamples: int = 2000
                     ) -> list[float]:
    """A percentile bootstrap 95 % interval of median(ours) / median(plain), resampling whole
    trials (a sparkmark run with the plain read next to it); seeded, so a results file can be
    recomputed."""
    import random
    rng = random.Random(26)
    n = len(ours)
    ratios = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(statistics.median(ours[i] for i in idx) /
                      statistics.median(plain[i] for i in idx))
    ratios.sort()
    return [round(ratios[int(0.025 * resamples)], 3), round(ratios[int(0.975 * resamples) - 1], 3)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--new-rows", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--peer-trials", type=int, default=201)
    ap.add_argument("--warmup", type=int, default=100,
                    help="untimed runs on a small table first (the JVM's JDBC path warms up)")
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args(argv)
    for flag, value in (("--repeats", a.repeats), ("--peer-trials", a.peer_trials),
                        ("--new-rows", a.new_rows)):
        if value < 1:
            ap.error(f"{flag} must be a positive number, not {value}")
    if a.warmup < 0:
        ap.error(f"--warmup must not be negative, not {a.warmup}")
    sizes = [int(s) for s in a.sizes.split(",")]
    k = a.new_rows

    load_start = list(os.getloadavg())
    server = start_postgres()
    spark = local_session("sparkmark-bench-jdbc")
    spark_version = spark.version
    versions: dict[str, str | None] = {}
    state = f"sqlite:///{tempfile.mkdtemp(prefix='sm-bench-')}/state.db"
    rows = []
    try:
        engine = sa.create_engine(server.create_database("bench"))
        url = f"jdbc:postgresql://127.0.0.1:{server.port}/bench?user=postgres"
        with engine.connect() as c:
            versions["postgresql"] = c.execute(sa.text("SHOW server_version")).scalar()
        try:
            versions["pgjdbc"] = str(spark._jvm.org.postgresql.util.DriverInfo.DRIVER_VERSION)
        except Exception:  # noqa: BLE001 - the figure is informative only
            versions["pgjdbc"] = None
        with engine.begin() as c:  # warm up the JVM and the JDBC path before measuring
            c.execute(sa.text("CREATE TABLE warmup (id bigint PRIMARY KEY, payload text, "
                              "amount numeric(10,2), created timestamp)"))
        _load(engine, "warmup", 1, 20_000)
        for option in ("job-bookmark-disable", "job-bookmark-enable", "job-bookmark-enable"):
            _read(spark, state, url, "warmup", option)
        t0, top = time.perf_counter(), 20_000
        for i in range(a.warmup):  # what each size then measures, on the small table
            _load(engine, "warmup", top + 1, top + k)
            spark.read.jdbc(url, "warmup", predicates=[f"id > {top} AND id <= {top + k}"],
                            properties={"driver": "org.postgresql.Driver"}) \
                .write.format("noop").mode("overwrite").save()
            top += k
            _read(spark, state, url, "warmup", "job-bookmark-enable")
            if i % 10 == 9:
                _read(spark, state, url, "warmup", "job-bookmark-disable")
        if a.warmup:
            print(f"warm-up: {a.warmup} runs in {time.perf_counter() - t0:.1f}s", flush=True)
        for n in sizes:
            table = f"orders_{n}"
            t0 = time.perf_counter()
            with engine.begin() as c:
                c.execute(sa.text(f"CREATE TABLE {table} (id bigint PRIMARY KEY, payload text, "
                                  "amount numeric(10,2), created timestamp)"))
            _load(engine, table, 1, n)
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.execute(sa.text(f"VACUUM ANALYZE {table}"))
            load_s = time.perf_counter() - t0
            print(f"N={n:,}: loaded in {load_s:.1f}s", flush=True)

            full_s, full_info = _read(spark, state, url, table, "job-bookmark-disable")
            print(f"  full read {full_s:.2f}s ({full_info['partitions']} partitions)", flush=True)
            first_s, _ = _read(spark, state, url, table, "job-bookmark-enable")  # sets bookmark
            print(f"  first enabled run {first_s:.2f}s", flush=True)
            inc, top = [], n
            for _ in range(a.repeats):
                _load(engine, table, top + 1, top + k)
                top += k
                s, info = _read(spark, state, url, table, "job-bookmark-enable")
                assert info["lower"] == [top - k] and info["upper"] == [top], info
                inc.append(s)
            # the peer: plain Spark reading the same kind of range, alternating with sparkmark
            # The first reader of freshly inserted rows pays PostgreSQL's hint bits, so the
            # two peers take turns at being first (plain first in odd trials).
            ours, plain = [], []
            for i in range(a.peer_trials):
                _load(engine, table, top + 1, top + k)
                lo, top = top, top + k

                def plain_read(table: str = table, lo: int = lo, top: int = top,
                               plain: list = plain) -> None:
                    t1 = time.perf_counter()
                    spark.read.jdbc(url, table, predicates=[f"id > {lo} AND id <= {top}"],
                                    properties={"driver": "org.postgresql.Driver"}) \
                        .write.format("noop").mode("overwrite").save()
                    plain.append(time.perf_counter() - t1)
                if i % 2:
                    plain_read()
                s, info = _read(spark, state, url, table, "job-bookmark-enable")
                assert info["lower"] == [lo] and info["upper"] == [top] and \
                    info["partitions"] == 1, info
                ours.append(s)
                if not i % 2:
                    plain_read()
            peer = {"sparkmark_best_s": round(min(ours), 4),
                    "sparkmark_median_s": round(statistics.median(ours), 4),
                    "plain_best_s": round(min(plain), 4),
                    "plain_median_s": round(statistics.median(plain), 4),
                    "ratio_best": round(min(ours) / min(plain), 2),
                    "ratio_median": round(statistics.median(ours) / statistics.median(plain),
                                          2),
                    # each sparkmark run against the plain read next to it: steadier between
                    # runs of the benchmark than the ratio of the two medians
                    "ratio_paired_median": round(statistics.median(
                        o / p for o, p in zip(ours, plain)), 2),
                    "ratio_median_ci95": _median_ratio_ci(ours, plain),
                    "trials": len(ours),
                    # every trial, in order (plain read first in odd trials)
                    "sparkmark_runs_s": [round(x, 4) for x in ours],
                    "plain_runs_s": [round(x, 4) for x in plain]}
            print(f"  sparkmark vs plain predicate read (K={k:,}, {len(ours)} trials): median "
                  f"{peer['sparkmark_median_s']:.3f}s vs {peer['plain_median_s']:.3f}s = "
                  f"{peer['ratio_median']} (95 % interval {peer['ratio_median_ci95']}, best "
                  f"{peer['ratio_best']}, median of paired trials "
                  f"{peer['ratio_paired_median']})", flush=True)
            med = statistics.median(inc)
            print(f"  incremental (K={k:,}) median {med:.3f}s of {[round(x, 3) for x in inc]}",
                  flush=True)
            rows.append({"N": n, "K": k, "load_s": round(load_s, 2), "full_s": round(full_s, 3),
                         "full_partitions": full_info["partitions"],
                         "first_enabled_s": round(first_s, 3),
                         "incremental_s": round(med, 3),
                         "incremental_runs_s": [round(x, 3) for x in inc],
                         "full_over_incremental": round(full_s / med, 1),
                         "peer": peer})
    finally:
        spark.stop()
        server.stop()

    small, large = rows[0], rows[-1]
    summary = {
        "incremental_ratio_large_over_small": round(large["incremental_s"] /
                                                    small["incremental_s"], 2),
        "goal_ratio_max": 1.5,
        "full_over_incremental_min": min(r["full_over_incremental"] for r in rows),
        "goal_speedup_min": 20,
        "sparkmark_over_plain_median": [r["peer"]["ratio_median"] for r in rows],
        "sparkmark_over_plain_paired_median": [r["peer"]["ratio_paired_median"] for r in rows],
        "goal_over_plain_max": 1.10,
    }
    result = {"benchmark": "jdbc incremental read on PostgreSQL", "rows": rows,
              "summary": summary,
              "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                          "platform": platform.platform(), "load_avg_start": load_start,
                          "load_avg": list(os.getloadavg()), "warmup_runs": a.warmup,
                          "spark": spark_version, **versions},
              "note": "full = bookmark-disabled read of every row (noop sink); incremental = "
                      "median enabled run after K new rows, including Job init/commit on a "
                      "SQLite state store"}
    print()
    print(f"{'N':>12} {'K':>8} {'full s':>9} {'parts':>6} {'incr s':>8} {'full/incr':>10}")
    for r in rows:
        print(f"{r['N']:>12,} {r['K']:>8,} {r['full_s']:>9.2f} {r['full_partitions']:>6} "
              f"{r['incremental_s']:>8.3f} {r['full_over_incremental']:>10.1f}")
    print(f"incremental(N={large['N']:,}) / incremental(N={small['N']:,}) = "
          f"{summary['incremental_ratio_large_over_small']} (goal <= 1.5); "
          f"full/incremental >= {summary['full_over_incremental_min']} (goal >= 20)")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
