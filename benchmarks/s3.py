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
   copies every object once more;
4. ``fileDiscovery=events`` (``events``): N objects put before the bucket notifies an SQS
   queue (moto delivers the notifications), a first run that lists them all (a backfill),
   then per trial 100 new objects: a whole event run (receive, one HEAD per object, read,
   state commit, message deletes; no backfill) ÷ plain Spark reading the same 100 objects
   by path with the same explicit schema, both counted; the order of the two alternates per
   trial, after one untimed warm-up round.  LIST (and HEAD, GET, SQS) requests of each event
   run are counted at the server; the time the N puts took is recorded
   (``--events-objects 10000 100000`` measures several N, one bucket each).
Prints a table and writes benchmarks/results/s3.json (with the load average and versions);
the cases not measured are kept from the file as it was.
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
CASES = ("incremental", "flat", "list_requests", "publish", "events")
EV_SCHEMA = "id long, v long"


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


def put_objects(bucket, keys: list[str], via: str = "http") -> None:
    """Put ``keys`` (a JSON line each): through the S3 API (``http``, 8 at a time, one
    PutObject each, so the bucket's notifications go out), or (``backend``) straight into the
    in-process moto server's store, no request and no notification: for N too large to put
    over HTTP in the time at hand (about 130-250 puts a second here)."""
    if via == "backend":
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends
        store = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
        for k in keys:
            store.put_object(bucket.name, k, line(len(k)).encode(), disable_notification=True)
        return
    client = bucket._client
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: client.put_object(Bucket=bucket.name, Key=k,
                                                  Body=line(len(k)).encode()), keys))


def _requests_by_kind(log: list[tuple[str, str, str]]) -> dict[str, int]:
    """LIST, HEAD, GET (objects) and SQS requests among ``log``'s (method, path, query)."""
    from sparkmark.devtools.s3 import is_list_request
    out = {"LIST": 0, "HEAD": 0, "GET": 0, "PUT": 0, "SQS": 0, "other": 0}
    for method, path, query in log:
        if is_list_request(method, path, query):
            out["LIST"] += 1
        elif method == "HEAD":
            out["HEAD"] += 1
        elif method in ("GET", "PUT"):
            out[method] += 1
        elif method == "POST" and (path in ("", "/") or path.split("/")[1].isdigit()):
            out["SQS"] += 1  # SQS's JSON or query protocol (``/`` or ``/<account>/<queue>``)
        else:
            out["other"] += 1
    return out


def events(spark, server, bucket, n: int, repeat: int, state: str, *, new_per_run: int = 100,
           seed: str = "http", reader: dict | None = None) -> dict:
    """Case 4: ``fileDiscovery=events`` at ``n`` objects, ``new_per_run`` new per trial."""
    from sparkmark import Job

    def name(i: int) -> str:
        return f"ev/o{i:07d}.json"

    job_name = f"ev{n}"
    # the run's SQS client takes the driver's AWS credentials (moto takes any)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        os.environ.setdefault(k, server.arrow_env()[k])
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    put_objects(bucket, [name(i) for i in range(n)], seed)
    put_s = time.perf_counter() - t0
    # the bucket notifies from now on: the N objects are there before (an existing bucket
    # that gets notifications); the first run lists them, the queue holds S3's test event
    queue = server.create_queue(f"{bucket.name}-q", visibility_s=60)
    bucket.notify(queue, prefix="ev/")
    opts = {"fileDiscovery": "events", "queueUrl": queue, "backfillInterval": "1 day",
            "schema": EV_SCHEMA, **(reader or {})}
    clock = [int(time.time() * 1000) + 2000]

    def job() -> Job:
        return Job(spark, state=state, clock=lambda: clock[0]).init(job_name, EN)

    def source_info(j) -> dict:
        return json.loads(j.store.list_runs(job_name=job_name)[-1]["config"])["sources"]["src"]

    # the first run: a backfill listing of the N objects, planned and committed; set-up, not
    # measured against anything, so the N objects are not read (no action on the DataFrame)
    t0 = time.perf_counter()
    first = job()
    first.read.files(bucket.url("ev"), format="json", transformation_ctx="src", options=opts)
    first.commit()
    first_s = time.perf_counter() - t0
    info = source_info(first)
    assert info["backfill"] is True and info["listing"] == "full", info
    assert info["files"] == n, info
    first_lists = info.get("list_requests")

    per_run: list[dict] = []
    plain_requests: list[dict] = []

    def run_ours(new: list[str]) -> float:
        at = len(server.log)
        t0 = time.perf_counter()
        j = job()
        got = j.read.files(bucket.url("ev"), format="json", transformation_ctx="src",
                           options=opts).count()
        j.commit()
        took = time.perf_counter() - t0
        assert got == len(new), (got, len(new))
        info = source_info(j)
        assert info["backfill"] is False and info["listing"] == "events", info
        assert info["events_taken"] == len(new), info
        per_run.append({**_requests_by_kind(server.log[at:]), "events": info["events"],
                        "messages": info["messages"],
                        "messages_to_delete": info["messages_to_delete"]})
        return took

    def run_plain(new: list[str]) -> float:
        at = len(server.log)
        t0 = time.perf_counter()
        got = spark.read.schema(EV_SCHEMA).json([bucket.url(k) for k in new]).count()
        took = time.perf_counter() - t0
        assert got == len(new), (got, len(new))
        plain_requests.append(_requests_by_kind(server.log[at:]))
        return took

    base = n
    ours: list[float] = []
    plain: list[float] = []
    put_new: list[float] = []
    for trial in range(repeat + 1):  # trial 0: a warm-up round, not counted
        new = [name(base + i) for i in range(new_per_run)]
        base += len(new)
        t0 = time.perf_counter()
        put_objects(bucket, new)  # over HTTP: moto sends one message per put
        put_new.append(time.perf_counter() - t0)
        clock[0] = int(time.time() * 1000) + 2000  # the new objects are stamped before T
        if trial % 2 == 0:
            a = run_ours(new)
            b = run_plain(new)
        else:
            b = run_plain(new)
            a = run_ours(new)
        if trial == 0:
            per_run.clear()
            plain_requests.clear()
            continue
        ours.append(a)
        plain.append(b)
    timed = per_run  # the counted trials' requests
    lists = sorted({r["LIST"] for r in timed})
    return {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": "python " + " ".join(sys.argv),
            "objects": n, "new_per_run": new_per_run, "repeat": repeat, "warmup_rounds": 1,
            "order": "alternating per trial (even: sparkmark first)",
            "reader": {"format": "json", "schema": EV_SCHEMA,
                       "sparkmark_options": {k: v for k, v in opts.items() if k != "queueUrl"},
                       "plain": f"spark.read.schema({EV_SCHEMA!r}).json(paths).count()"},
            "seeded_via": seed, "put_objects_s": round(put_s, 2),
            "puts_per_s": round(n / put_s) if put_s else None,
            "put_new_median_s": round(statistics.median(put_new), 3),
            "first_run_s": round(first_s, 2), "first_run_listing_lists": first_lists,
            "first_run": "backfill listing of the N objects, plan, commit (not read: set-up)",
            "event_run_server_lists": lists[0] if len(lists) == 1 else lists,
            "event_run_requests": timed[-1] if timed else None,
            "plain_requests": plain_requests[-1] if plain_requests else None,
            "sparkmark_s": [round(x, 3) for x in ours], "plain_s": [round(x, 3) for x in plain],
            "sparkmark_best_s": round(min(ours), 3),
            "sparkmark_median_s": round(statistics.median(ours), 3),
            "plain_best_s": round(min(plain), 3), "plain_median_s": round(statistics.median(plain), 3),
            "ratio_best": round(min(ours) / min(plain), 2),
            "ratio_median": round(statistics.median(ours) / statistics.median(plain), 2),
            "load_avg_start": list(load_start), "load_avg_end": list(os.getloadavg())}


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
    ap.add_argument("--events-objects", type=int, nargs="+", default=[10_000],
                    help="objects already in the bucket for the events case (one bucket each)")
    ap.add_argument("--events-new", type=int, default=100, help="new objects per event run")
    ap.add_argument("--events-reader", choices=("spark", "rescue"), default="spark",
                    help="spark: mode=PERMISSIVE, Spark's own JSON handling as the plain peer "
                         "has it; rescue: sparkmark's JSON default schemaEvolution=rescue (an "
                         "inference pass over the paths first)")
    ap.add_argument("--events-seed", choices=("http", "backend"), default="http",
                    help="how the N objects already there are put: PutObject requests, or "
                         "straight into moto's in-process store (large N)")
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
        if "events" in a.cases:
            reader = {"mode": "PERMISSIVE"} if a.events_reader == "spark" else {}
            measured = [events(spark, server, Bucket(server, f"bench-ev{n}"), n, a.repeat,
                               state, new_per_run=a.events_new, seed=a.events_seed,
                               reader=reader) for n in a.events_objects]
            for e in measured:
                e["sparkmark_reader"] = a.events_reader
            # the figures at other N or with the other reader stay (each entry has its own
            # date, command and load)
            others = [e for e in old.get("events") or [] if isinstance(e, dict) and not (
                e.get("objects") in a.events_objects
                and e.get("sparkmark_reader") == a.events_reader)]
            result["events"] = sorted(others + measured,
                                      key=lambda e: (e.get("sparkmark_reader", ""), e["objects"]))
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
    for ev in result.get("events") or []:
        print(f"fileDiscovery=events ({ev.get('sparkmark_reader')} reader), {ev['objects']} "
              f"objects ({ev['puts_per_s']} puts/s, {ev['seeded_via']}), {ev['new_per_run']} new "
              f"per run (best of {ev['repeat']} / median, alternating order):")
        print(f"  sparkmark event run {ev['sparkmark_best_s']} s / {ev['sparkmark_median_s']} s   "
              f"plain Spark by path {ev['plain_best_s']} s / {ev['plain_median_s']} s   ratio "
              f"{ev['ratio_best']} / {ev['ratio_median']}")
        print(f"  server requests per event run: {ev['event_run_requests']} (LIST in every "
              f"counted run: {ev['event_run_server_lists']}); plain Spark: "
              f"{ev['plain_requests']}; first (backfill) run {ev['first_run_s']} s")
    print(f"load average {result['load_avg']}")
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(result, indent=2))
    print(f"wrote {a.json}")
    spark.stop()
    server.stop()


if __name__ == "__main__":
    main()
