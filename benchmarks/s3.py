"""S3 figures on a local S3 API server (moto, in process), side by side with plain Spark.

    python benchmarks/s3.py                       # 10,000 objects, 1,000 partitions, 100 MB
    python benchmarks/s3.py --objects 2000 --partitions 200 --mb 20 --repeat 3   # quicker

Three measurements, in one run:
1. an incremental run over N objects with 1% new (listing, band planning, read, state commit)
   ÷ plain Spark reading the same new objects by path (``spark.read.json(paths).count()``):
   best of R and median, interleaved;
2. LIST requests for P daily ``dt=`` partitions: a full listing, then an incremental run with
   new objects in the newest partition and in a new one (lexical listing), counted by the
   server and by S3A (the ledger's ``list_requests``);
3. publish ÷ write for M MB of parquet output: S3 has no rename, so publishing a staged run
   copies every object once more.
Prints a table and writes benchmarks/results/s3.json (with the load average and versions).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

EN = {"job_bookmark_option": "job-bookmark-enable"}


def put_many(bucket, keys: list[str], body_of) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: bucket.put(k, body_of(k)), keys))


def line(i: int) -> str:
    return json.dumps({"id": i, "v": i * 2}) + "\n"


def incremental(spark, server, bucket, n: int, repeat: int, state: str) -> dict:
    from sparkmark import Job
    put_many(bucket, [f"inc/o{i:06d}.json" for i in range(n)], lambda k: line(int(k[5:11])))
    clock = [int(time.time() * 1000) + 2000]
    job = Job(spark, state=state, clock=lambda: clock[0]).init("inc", EN)
    job.read.files(bucket.url("inc"), transformation_ctx="src").count()
    job.commit()
    ours, plain, base = [], [], n
    for _ in range(repeat):
        new = [f"inc/o{base + i:06d}.json" for i in range(max(1, n // 100))]
        base += len(new)
        put_many(bucket, new, lambda k: line(int(k[5:11])))
        clock[0] = int(time.time() * 1000) + 2000
        t0 = time.perf_counter()
        job = Job(spark, state=state, clock=lambda: clock[0]).init("inc", EN)
        got = job.read.files(bucket.url("inc"), transformation_ctx="src").count()
        job.commit()
        ours.append(time.perf_counter() - t0)
        assert got == len(new), (got, len(new))
        t0 = time.perf_counter()
        assert spark.read.json([bucket.url(k) for k in new]).count() == len(new)
        plain.append(time.perf_counter() - t0)
    return {"objects": n, "new_per_run": max(1, n // 100), "repeat": repeat,
            "sparkmark_best_s": round(min(ours), 3),
            "sparkmark_median_s": round(statistics.median(ours), 3),
            "plain_best_s": round(min(plain), 3), "plain_median_s": round(statistics.median(plain), 3),
            "ratio_best": round(min(ours) / min(plain), 2),
            "ratio_median": round(statistics.median(ours) / statistics.median(plain), 2)}


def list_requests(spark, server, bucket, partitions: int, state: str) -> dict:
    from sparkmark import Job
    days = [(dt.date(2020, 1, 1) + dt.timedelta(days=i)).isoformat()
            for i in range(partitions + 1)]
    new_day = days.pop()
    put_many(bucket, [f"daily/dt={d}/a.json" for d in days], lambda k: line(1))
    opts = {"incrementalListing": "true", "fullListingInterval": "1000"}
    clock = [int(time.time() * 1000) + 2000]
    out = {}
    for phase in ("full", "lexical"):
        if phase == "lexical":
            put_many(bucket, [f"daily/dt={days[-1]}/b.json", f"daily/dt={new_day}/a.json"],
                     lambda k: line(2))
            clock[0] = int(time.time() * 1000) + 2000
        before = server.requests("LIST")
        job = Job(spark, state=state, clock=lambda: clock[0]).init("daily", EN)
        job.read.files(bucket.url("daily"), transformation_ctx="src", options=opts).count()
        job.commit()
        info = json.loads(job.store.list_runs(job_name="daily")[-1]["config"])
        text = json.dumps(info)
        out[f"{phase}_server_lists"] = server.requests("LIST") - before
        src = next((v for v in _dicts(info) if "list_requests" in v), {})
        out[f"{phase}_listing_lists"] = src.get("list_requests")
        out[f"{phase}_mode"] = "lexical" if '"lexical"' in text else "full"
    out["partitions"] = partitions
    return out


def _dicts(x):
    if isinstance(x, dict):
        yield x
        for v in x.values():
            yield from _dicts(v)
    elif isinstance(x, list):
        for v in x:
            yield from _dicts(v)


def publish_cost(spark, bucket, mb: int, state: str) -> dict:
    from pyspark.sql import functions as F

    from sparkmark import Job
    rows = mb * 1024 * 1024 // 120  # ~120 bytes of parquet per row of random strings
    df = spark.range(rows).select("id", F.sha2(F.col("id").cast("string"), 256).alias("a"),
                                  F.sha2((F.col("id") * 7).cast("string"), 256).alias("b"))
    job = Job(spark, state=state).init(f"pub{mb}", EN)
    t0 = time.perf_counter()
    job.write(df.repartition(4), bucket.url(f"pub{mb}"), transformation_ctx="sink")
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    job.commit()  # state transaction, then publish: a copy of every staged object on S3
    commit_s = time.perf_counter() - t0
    size = sum(o["Size"] for page in bucket._client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket.name, Prefix=f"pub{mb}/") for o in page.get("Contents", []))
    return {"mb_requested": mb, "bytes_published": size, "write_s": round(write_s, 2),
            "commit_and_publish_s": round(commit_s, 2),
            "publish_over_write": round(commit_s / write_s, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--objects", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=1_000)
    ap.add_argument("--mb", type=int, nargs="+", default=[100])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "s3.json"))
    a = ap.parse_args()

    import tempfile

    import pyspark

    from sparkmark.devtools.s3 import Bucket, s3a_session_conf, start_moto
    from sparkmark.spark import local_session
    server = start_moto()
    spark = local_session("bench-s3", extra_conf={**s3a_session_conf(), **server.spark_conf()})
    with tempfile.TemporaryDirectory() as d:
        state = f"sqlite:///{d}/state.db"
        inc = incremental(spark, server, Bucket(server, "bench-inc"), a.objects, a.repeat, state)
        lists = list_requests(spark, server, Bucket(server, "bench-daily"), a.partitions, state)
        pubs = [publish_cost(spark, Bucket(server, "bench-pub"), mb, state) for mb in a.mb]
    result = {"server": "moto (in process)", "spark": pyspark.__version__,
              "python": sys.version.split()[0], "load_avg": os.getloadavg(),
              "incremental": inc, "list_requests": lists, "publish": pubs}
    print(f"incremental, {inc['objects']} objects, {inc['new_per_run']} new per run "
          f"(best of {inc['repeat']} / median):")
    print(f"  sparkmark {inc['sparkmark_best_s']} s / {inc['sparkmark_median_s']} s   plain Spark "
          f"by path {inc['plain_best_s']} s / {inc['plain_median_s']} s   ratio "
          f"{inc['ratio_best']} / {inc['ratio_median']}")
    print(f"LIST requests, {lists['partitions']} daily partitions: full listing "
          f"{lists['full_listing_lists']} (whole run, server: {lists['full_server_lists']}); "
          f"incremental ({lists['lexical_mode']}) {lists['lexical_listing_lists']} (whole run, "
          f"server: {lists['lexical_server_lists']})")
    for p in pubs:
        print(f"publish, {p['bytes_published'] / 1e6:.0f} MB: write {p['write_s']} s, commit + "
              f"publish (copy) {p['commit_and_publish_s']} s: publish/write "
              f"{p['publish_over_write']}")
    print(f"load average {result['load_avg']}")
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(result, indent=2))
    print(f"wrote {a.json}")
    spark.stop()
    server.stop()


if __name__ == "__main__":
    main()
