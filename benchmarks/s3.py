"""S3 figures on a local S3 API server (moto, in process), side by side with plain Spark.

    python benchmarks/s3.py                       # 10,000 objects, 1,000 partitions, 100 MB
    python benchmarks/s3.py --objects 2000 --partitions 200 --mb 20 --repeat 3   # quicker
    python benchmarks/s3.py --cases incremental flat    # some cases; the others' figures are
                                                        # kept from the previous results file

Four measurements, in one run:
1. an incremental run over N objects in one flat prefix with 1% new (listing, band planning,
   read, state commit) ÷ plain Spark reading the same new objects by path
   (``spark.read.json(paths).count()``): best of R and median, interleaved;
1b. the same with time-stamped names (``events-20241105T101500-0000001.json``) and
   ``incrementalListing=true, lexicalFileNames=true``: the root is listed from the greatest name
   seen on (S3's StartAfter), so the listing depends on the new objects only (``flat``);
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
CASES = ("incremental", "flat", "list_requests", "publish")


def put_many(bucket, keys: list[str], body_of) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: bucket.put(k, body_of(k)), keys))


def line(i: int) -> str:
    return json.dumps({"id": i, "v": i * 2}) + "\n"


T0 = dt.datetime(2024, 11, 5, 10, 15, 0)


def stamped(i: int) -> str:
    """A Firehose-like time-stamped object name: names grow with ``i``."""
    return f"flat/events-{T0 + dt.timedelta(seconds=15 * i):%Y%m%dT%H%M%S}-{i:07d}.json"


def incremental(spark, server, bucket, n: int, repeat: int, state: str, *,
                by_name: bool = False) -> dict:
    """Case 1 (``inc/o000123.json``, default options) or, with ``by_name``, case 1b
    (time-stamped names, ``lexicalFileNames=true``)."""
    from sparkmark import Job
    name, prefix, job_name = ((stamped, "flat", "flat") if by_name else
                              (lambda i: f"inc/o{i:06d}.json", "inc", "inc"))
    opts = ({"incrementalListing": "true", "lexicalFileNames": "true",
             "fullListingInterval": "1000"} if by_name else {})
    put_many(bucket, [name(i) for i in range(n)], lambda k: line(len(k)))
    clock = [int(time.time() * 1000) + 2000]
    job = Job(spark, state=state, clock=lambda: clock[0]).init(job_name, EN)
    job.read.files(bucket.url(prefix), transformation_ctx="src", options=opts).count()
    job.commit()
    ours, plain, base = [], [], n
    lists: dict = {}
    for _ in range(repeat):
        new = [name(base + i) for i in range(max(1, n // 100))]
        base += len(new)
        put_many(bucket, new, lambda k: line(len(k)))
        clock[0] = int(time.time() * 1000) + 2000
        before = server.requests("LIST")
        t0 = time.perf_counter()
        job = Job(spark, state=state, clock=lambda: clock[0]).init(job_name, EN)
        got = job.read.files(bucket.url(prefix), transformation_ctx="src", options=opts).count()
        job.commit()
        ours.append(time.perf_counter() - t0)
        ours_lists = server.requests("LIST") - before
        assert got == len(new), (got, len(new))
        before = server.requests("LIST")
        t0 = time.perf_counter()
        assert spark.read.json([bucket.url(k) for k in new]).count() == len(new)
        plain.append(time.perf_counter() - t0)
        info = json.loads(job.store.list_runs(job_name=job_name)[-1]["config"])
        src = next((v for v in _dicts(info) if "list_requests" in v), {})
        lists = {"listing": src.get("listing"), "listing_lists": src.get("list_requests"),
                 "listed": src.get("listed"), "server_lists": ours_lists,
                 "plain_server_lists": server.requests("LIST") - before}
    return {"objects": n, "new_per_run": max(1, n // 100), "repeat": repeat, **lists,
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
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES,
                    help="the measurements to make; the others are kept from --json")
    a = ap.parse_args()

    import tempfile

    import pyspark

    from sparkmark.devtools.s3 import Bucket, s3a_session_conf, start_moto
    from sparkmark.engine.spark import local_session
    server = start_moto()
    spark = local_session("bench-s3", extra_conf={**s3a_session_conf(), **server.spark_conf()})
    old = json.loads(Path(a.json).read_text()) if Path(a.json).exists() else {}
    kept = [c for c in CASES if c not in a.cases and c in old]
    result: dict = {c: old[c] for c in kept}
    if kept:  # figures kept from an earlier run: say so, with the load each was measured at
        before = old.get("kept_from_earlier_run") or {}
        result["kept_from_earlier_run"] = {
            "cases": kept, "load_avg": {c: (before["load_avg"].get(c) if c in before.get(
                "cases", ()) and isinstance(before.get("load_avg"), dict) else old.get("load_avg"))
                for c in kept}}
    result.update({"server": "moto (in process)", "spark": pyspark.__version__,
                   "python": sys.version.split()[0], "cases_measured": a.cases})
    with tempfile.TemporaryDirectory() as d:
        state = f"sqlite:///{d}/state.db"
        if "incremental" in a.cases:
            result["incremental"] = incremental(spark, server, Bucket(server, "bench-inc"),
                                                a.objects, a.repeat, state)
        if "flat" in a.cases:
            result["flat"] = incremental(spark, server, Bucket(server, "bench-flat"),
                                         a.objects, a.repeat, state, by_name=True)
        if "list_requests" in a.cases:
            result["list_requests"] = list_requests(spark, server, Bucket(server, "bench-daily"),
                                                    a.partitions, state)
        if "publish" in a.cases:
            result["publish"] = [publish_cost(spark, Bucket(server, "bench-pub"), mb, state)
                                 for mb in a.mb]
    result["load_avg"] = os.getloadavg()
    for case, label in (("incremental", "incremental"),
                        ("flat", "incremental, time-stamped names, lexicalFileNames=true")):
        inc = result.get(case)
        if inc is None:
            continue
        print(f"{label}, {inc['objects']} objects, {inc['new_per_run']} new per run "
              f"(best of {inc['repeat']} / median):")
        print(f"  sparkmark {inc['sparkmark_best_s']} s / {inc['sparkmark_median_s']} s   plain "
              f"Spark by path {inc['plain_best_s']} s / {inc['plain_median_s']} s   ratio "
              f"{inc['ratio_best']} / {inc['ratio_median']}")
        if "listing" in inc:
            print(f"  listing {inc['listing']}: {inc['listing_lists']} LIST, {inc['listed']} "
                  f"objects listed (whole run, server: {inc['server_lists']} LIST; plain Spark "
                  f"{inc['plain_server_lists']})")
    lists = result.get("list_requests")
    if lists:
        print(f"LIST requests, {lists['partitions']} daily partitions: full listing "
              f"{lists['full_listing_lists']} (whole run, server: {lists['full_server_lists']}); "
              f"incremental ({lists['lexical_mode']}) {lists['lexical_listing_lists']} (whole "
              f"run, server: {lists['lexical_server_lists']})")
    for p in result.get("publish") or []:
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
